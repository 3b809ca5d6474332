"""The MPI sweep: `mpiexec -n 2 hpctwin sweep` gives the same files as one process, and failures are recorded."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pytest

from tests.integration.test_output_hdf5 import h5_content

MPIEXEC = Path(sys.executable).parent / "mpiexec"

STUDY = """
name = "mini"
[base]
system = "theta"
trace = { window_start_days = 181.0, window_days = 1.0 }
cooling = { step_s = 15.0, T_wb_C = 24.0 }
output = { interval_s = 60.0, progress = false }
[axes]
"scheduler.policy" = ["fcfs", "easy"]
"cooling.weather" = ["tmy3", "constant"]
"""


def _sweep(study: Path, out: Path, ranks: int, expect: int = 0) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "mpi4py", "-m", "scheduler_sim", "sweep", str(study), "--out", str(out)]
    if ranks > 1:
        if not MPIEXEC.exists():
            pytest.skip(f"no mpiexec next to {sys.executable} (install the 'mpi' or 'dev' extra)")
        cmd = [str(MPIEXEC), "-n", str(ranks)] + cmd
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode == expect, r.stdout + r.stderr
    return r


@pytest.mark.mpi
@pytest.mark.fmu
def test_two_ranks_equal_one_rank(tmp_path):
    study = tmp_path / "study.toml"
    study.write_text(STUDY)
    _sweep(study, tmp_path / "one", 1)
    r2 = _sweep(study, tmp_path / "two", 2)
    assert "on 2 rank(s)" in r2.stdout
    names = sorted(p.name for p in (tmp_path / "one").glob("*.h5"))
    assert names == ["000_fcfs_tmy3.h5", "001_fcfs_constant.h5", "002_easy_tmy3.h5", "003_easy_constant.h5",
                     "summary.h5"]
    for name in names:
        if name == "summary.h5":
            continue
        a, b = h5_content(tmp_path / "one" / name), h5_content(tmp_path / "two" / name)
        a.pop("/"), b.pop("/")  # root attrs hold the git sha etc., identical here; compare datasets strictly
        assert a == b, name
    with h5py.File(tmp_path / "two" / "summary.h5") as f:
        status = [s.decode() for s in f["scenarios/status"][()]]
        assert status == ["done"] * 4
        pue = f["scenarios/PUE"][()]
        assert np.all(pue > 1.0)
        # a constant 24 degC wet-bulb is hotter than Golden's July weather: the towers cannot hold the 24 C
        # setpoint, the trim chiller holds 24.5 C instead, and cooling power rises, for both policies
        for hot, mild in ((1, 0), (3, 2)):
            t_hot = f[f"runs/{f['scenarios/name'][hot].decode()}/timeseries/facility/T_fac_sup"][()].mean()
            t_mild = f[f"runs/{f['scenarios/name'][mild].decode()}/timeseries/facility/T_fac_sup"][()].mean()
            assert t_hot > t_mild + 0.3
            p_hot = f[f"runs/{f['scenarios/name'][hot].decode()}/timeseries/facility/P_cooling_W"][()].mean()
            p_mild = f[f"runs/{f['scenarios/name'][mild].decode()}/timeseries/facility/P_cooling_W"][()].mean()
            # (x1.6 measured: pumps with static heads and constant-flow tower pumps are a weather-independent base)
            assert p_hot > 1.3 * p_mild
        # the external link opens the run file
        assert f["runs/002_easy_tmy3/summary"].attrs["PUE"] == pytest.approx(pue[2])
    with h5py.File(tmp_path / "one" / "summary.h5") as f1, h5py.File(tmp_path / "two" / "summary.h5") as f2:
        for k in f1["scenarios"]:
            if k != "error":
                a, b = f1["scenarios"][k][()], f2["scenarios"][k][()]
                assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), k


@pytest.mark.mpi
def test_failed_scenario_is_recorded_and_sweep_goes_on(tmp_path):
    study = tmp_path / "study.toml"
    study.write_text(STUDY.replace('["fcfs", "easy"]', '["fcfs"]').replace('"cooling.weather" = ["tmy3", "constant"]',
                                                                        '"trace.path" = ["missing.swf", ""]\n'
                                                                        '"cooling.enabled" = [false]'))
    r = _sweep(study, tmp_path / "out", 2, expect=1)  # exit status 1: a scenario failed
    assert "1 scenario(s) failed" in r.stderr
    with h5py.File(tmp_path / "out" / "summary.h5") as f:
        status = [s.decode() for s in f["scenarios/status"][()]]
        assert status == ["failed", "done"]
        assert "missing.swf" in f["scenarios/error"][0].decode()
        assert "000_missing.swf" not in f["runs"]


# ---------------------------------------------------------------- work queue, resume (no FMU: fast)
FAST = """
name = "fast"
[base]
system = "theta"
trace = { window_start_days = 181.0, window_days = 1.0 }
cooling = { enabled = false }
output = { interval_s = 60.0, progress = false }
[axes]
"scheduler.policy" = ["fcfs", "easy", "sjf"]
"trace.window_days" = [0.25, 1.5]
"""


def _content(folder: Path) -> dict:
    out = {}
    for p in sorted(folder.glob("*.h5")):
        c = h5_content(p)
        c.pop("/")  # root attrs of run files hold the git sha; equal here, datasets are compared strictly
        out[p.name] = c
    return out


@pytest.mark.mpi
def test_three_ranks_equal_one_rank_with_a_work_queue(tmp_path):
    study = tmp_path / "study.toml"
    study.write_text(FAST)
    r1 = _sweep(study, tmp_path / "one", 1)
    r3 = _sweep(study, tmp_path / "three", 3)
    assert "6 to run on 3 rank(s)" in r3.stdout and "ETA" in r3.stdout
    a, b = _content(tmp_path / "one"), _content(tmp_path / "three")
    assert list(a) == list(b) and len(a) == 7
    for name in a:
        assert a[name] == b[name], name
    with h5py.File(tmp_path / "three" / "summary.h5") as f:
        timing = json.loads(f.attrs["sweep_timing_json"])
        assert timing["ranks"] == 3 and sum(timing["scenarios_per_rank"]) == 6
        assert [s.decode() for s in f["scenarios/status"][()]] == ["done"] * 6
    assert "1 scenario(s) failed" not in r1.stderr


@pytest.mark.mpi
def test_failed_scenario_with_traceback_and_three_ranks(tmp_path):
    study = tmp_path / "study.toml"
    study.write_text(FAST.replace('"trace.window_days" = [0.25, 1.5]', '"trace.path" = ["", "missing.swf"]'))
    r = _sweep(study, tmp_path / "out", 3, expect=1)
    assert "3 scenario(s) failed" in r.stderr
    with h5py.File(tmp_path / "out" / "summary.h5") as f:
        status = [s.decode() for s in f["scenarios/status"][()]]
        assert status == ["done", "failed"] * 3
        err = f["scenarios/error"][1].decode()
        assert "missing.swf" in err and "Traceback" in err
        assert sorted(f["runs"]) == ["000_fcfs_", "002_easy_", "004_sjf_"]


@pytest.mark.mpi
def test_killed_sweep_resumes_to_the_same_summary(tmp_path):
    study = tmp_path / "study.toml"
    study.write_text(FAST)
    out = tmp_path / "killed"
    cmd = [sys.executable, "-m", "mpi4py", "-m", "scheduler_sim", "sweep", str(study), "--out", str(out)]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not list(out.glob("0*.h5")) and time.monotonic() < deadline and p.poll() is None:
            time.sleep(0.02)
        os.killpg(p.pid, signal.SIGKILL)
    finally:
        p.wait(timeout=30)
    assert p.returncode == -signal.SIGKILL, "the sweep finished before it could be killed"
    first = sorted(out.glob("0*.h5"))
    assert 1 <= len(first) < 6 and not (out / "summary.h5").exists()
    # an earlier file whose configuration no longer matches the study is rerun, not trusted
    stale = out / "005_sjf_1.5.h5"
    shutil.copy(first[0], stale)
    r = _sweep(study, out, 2)
    assert f"{len(first)} done earlier, {6 - len(first)} to run" in r.stdout
    _sweep(study, tmp_path / "whole", 1)
    a, b = _content(out), _content(tmp_path / "whole")
    assert list(a) == list(b)
    for name in a:
        assert a[name] == b[name], name
    # restarting a finished sweep runs nothing and writes the same summary
    r = _sweep(study, out, 1)
    assert "6 done earlier, 0 to run" in r.stdout
    assert _content(out)["summary.h5"] == b["summary.h5"]
