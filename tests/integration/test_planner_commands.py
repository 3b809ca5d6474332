"""Planner commands of issue #28: export (CSV / Parquet, units in the column names, checked first), compare --plot,
argument checks before the heavy imports with "did you mean", report on a sweep folder."""

from __future__ import annotations

import csv
import subprocess
import sys

import h5py
import numpy as np
import pytest

from scheduler_sim.app.cli import main
from tests.conftest import TINY4_TOML as TINY4
from tests.unit.test_inputs_bounded import SWF


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """Two no-cooling runs of the tiny 4-node system, FCFS and SJF on the same two jobs."""
    d = tmp_path_factory.mktemp("planner")
    (d / "tiny4.toml").write_text(TINY4)
    (d / "two.swf").write_bytes(SWF)
    out = []
    for pol in ("fcfs", "sjf"):
        p = d / f"{pol}.h5"
        assert main(["run", "--system", str(d / "tiny4.toml"), "--trace", str(d / "two.swf"), "--start-day", "0",
                     "--days", "1", "--no-cooling", "--quiet", "--policy", pol, "--out", str(p)]) == 0
        out.append(p)
    return out


def test_export_jobs_csv_has_units_in_the_column_names(two_runs, tmp_path, capsys):
    out = tmp_path / "jobs.csv"
    assert main(["export", str(two_runs[0]), "--table", "jobs", "--out", str(out)]) == 0
    rows = list(csv.reader(out.open()))
    head = rows[0]
    assert "wait_s [s]" in head and "energy_dc_J [J]" in head and "nodes" in head  # nodes: units "1", bare
    with h5py.File(two_runs[0]) as f:
        wait = f["jobs/wait_s"][()]
        n = f["jobs/job_id"].shape[0]
    assert len(rows) == n + 1
    col = head.index("wait_s [s]")
    assert [float(r[col]) for r in rows[1:]] == pytest.approx(list(wait))
    assert f"(jobs: {n} rows x {len(head)} columns, csv)" in capsys.readouterr().out


def test_export_timeseries_parquet_round_trips(two_runs, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    out = tmp_path / "ts.parquet"
    assert main(["export", str(two_runs[0]), "--table", "timeseries", "--format", "parquet", "--out", str(out)]) == 0
    tab = pq.read_table(out).to_pandas()
    with h5py.File(two_runs[0]) as f:
        t = f["timeseries/time_s"][()]
        p = f["timeseries/facility/P_it_W"][()]
    assert list(tab["time_s [s]"]) == list(t)
    assert np.array_equal(tab["P_it_W [W]"].to_numpy(), p)


def test_export_refuses_a_tampered_file_before_reading_it(two_runs, tmp_path, capsys):
    bad = tmp_path / "bad.h5"
    bad.write_bytes(two_runs[0].read_bytes())
    with h5py.File(bad, "r+") as f:
        f["jobs/wait_s"][0] = f["jobs/wait_s"][0] + 1.0  # content no longer matches content_sha256
    assert main(["export", str(bad), "--out", str(tmp_path / "x.csv")]) == 2
    assert "content_sha256" in capsys.readouterr().err
    assert not (tmp_path / "x.csv").exists()


def test_export_names_the_tables_a_file_has(two_runs, tmp_path, capsys):
    assert main(["export", str(two_runs[0]), "--table", "requests", "--out", str(tmp_path / "r.csv")]) == 2
    err = capsys.readouterr().err
    assert "no table 'requests'" in err and "jobs" in err and "timeseries" in err


def test_compare_plot_writes_waterfall_and_overlay(two_runs, tmp_path):
    assert main(["compare", str(two_runs[0]), str(two_runs[1]), "--plot", str(tmp_path / "cmp")]) == 0
    for name in ("compare_waterfall", "compare_series"):
        assert (tmp_path / "cmp" / f"{name}.png").stat().st_size > 1000
    html = (tmp_path / "cmp" / "report.html").read_text()
    assert "scheduling -&gt; compute" in html and 'data-overflow=""' in html


@pytest.mark.parametrize("argv, message", [
    (["run", "--system", "frontiier"], "did you mean 'frontier'"),
    (["run", "--weather", "knoxvile"], "did you mean 'knoxville'"),
    (["report", "no_such_run.h5"], "no_such_run.h5: no such file"),
    (["export", "no_such_run.h5"], "no_such_run.h5: no such file"),
])
def test_argument_errors_come_before_heavy_imports(argv, message, tmp_path):
    r = subprocess.run([sys.executable, "-m", "scheduler_sim", *argv], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 2 and message in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert "numpy" not in r.stderr
    # its time is measured by benchmarks/bench_startup.py (speed goals live in benchmarks, not in tests)


def test_report_on_a_folder_without_summary_says_so(tmp_path, capsys):
    assert main(["report", str(tmp_path)]) == 2
    assert "without summary.h5" in capsys.readouterr().err


def _pty_run(argv, cwd, timeout_s=300):
    """Run ``argv`` on a pseudo-terminal; return (exit status, everything it wrote)."""
    import os
    import pty
    import select

    pid, fd = pty.fork()
    if pid == 0:  # the child: the command, its stdout and stderr on the terminal
        os.chdir(cwd)
        os.execv(argv[0], argv)
    out = b""
    while True:
        try:
            ready, _, _ = select.select([fd], [], [], timeout_s)
            chunk = os.read(fd, 65536) if ready else b""
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), out.decode("utf-8", "replace")


def test_live_dashboard_is_drawn_on_a_terminal_and_erased(two_runs, tmp_path):
    d = two_runs[0].parent
    argv = [sys.executable, "-m", "scheduler_sim", "run", "--system", str(d / "tiny4.toml"), "--trace",
            str(d / "two.swf"), "--start-day", "0", "--days", "1", "--cooling", "fast", "--live", "--out",
            str(tmp_path / "live.h5")]
    code, out = _pty_run(argv, tmp_path)
    assert code == 0, out[-2000:]
    assert "hpctwin live: tiny4-two" in out and "queued" in out and "PUE now" in out  # the dashboard was drawn
    assert "\x1b[2K" in out  # ... and erased (rich's transient live clears its lines)
    assert " h simulated [" not in out and "min simulated [" not in out  # one observer draws: no progress bar too
    last = out.rsplit("hpctwin live", 1)[1]
    assert "summary (" in last and "wrote " in last  # the summary comes after the dashboard, not under it
    assert (tmp_path / "live.h5").is_file()


def test_live_without_a_terminal_runs_and_says_so(two_runs, tmp_path):
    d = two_runs[0].parent
    r = subprocess.run([sys.executable, "-m", "scheduler_sim", "run", "--system", str(d / "tiny4.toml"), "--trace",
                        str(d / "two.swf"), "--start-day", "0", "--days", "1", "--no-cooling", "--live", "--out",
                        str(tmp_path / "nolive.h5")], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "--live needs a terminal" in r.stderr and "hpctwin live" not in r.stdout + r.stderr
    assert (tmp_path / "nolive.h5").is_file()


def test_quiet_and_live_exclude_each_other(capsys):
    assert main(["run", "--quiet", "--live"]) == 2
    assert "--quiet and --live exclude each other" in capsys.readouterr().err


def test_training_run_report_shows_the_workload_table(tmp_path):
    """A run with a [[workload]] training job (h100_4k, fast plant): the report's training table is read from
    /workload/training (iteration time, MFU, iteration power, checkpoints, ETTR), and export writes it."""
    from scheduler_sim.app.config import RunConfig
    from scheduler_sim.app.runner import run_one

    w = dict(family="training", name="t", model="llama-3-8b", train_hours=2.0, failure_rate_per_gpu_h=2e-3,
             checkpoint_interval_s=900.0, layout=dict(tp=8, pp=1, dp=8, micro_batches=16, zero_stage=1))
    cfg = RunConfig.model_validate({
        "name": "train", "system": "h100_4k", "seed": 0, "output": {"progress": False}, "cooling": {"model": "fast"},
        "trace": {"enabled": False, "window_start_days": 0.0, "window_days": 0.25}, "scheduler": {"policy": "fcfs"},
        "workload": [w]})
    out = tmp_path / "train.h5"
    run_one(cfg, out)
    with h5py.File(out) as f:
        t_iter = float(f["workload/training/t_iter_s"][0])
        mfu = float(f["workload/training/mfu"][0])
    assert main(["report", str(out), "--out", str(tmp_path / "rep")]) == 0
    html = (tmp_path / "rep" / "report.html").read_text()
    sec = html[html.index("<h2>Training jobs</h2>"):]
    sec = sec[:sec.index("</table>")]
    assert "From /workload/training" in sec and "llama-3-8b" in sec
    assert f">{t_iter:.3f}<" in sec and f">{100 * mfu:.1f}<" in sec
    assert "RL post-training" not in html  # /workload/rl is empty: left out
    assert main(["export", str(out), "--table", "training", "--out", str(tmp_path / "t.csv")]) == 0
    head = next(csv.reader((tmp_path / "t.csv").open()))
    assert "t_iter_s [s]" in head and "mfu" in head
