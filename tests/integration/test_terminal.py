"""The commands a planner types, run under a real pseudo-terminal (issue #13, item 1).

CI has no terminal attached, so without these tests the progress path (tqdm drawing on a TTY) never runs there.
Each command runs in a child process whose stdin, stdout and stderr are the slave side of a pty with 80
columns; the test reads the master side to the end. A command passes when it exits 0, prints no traceback,
writes its file, and (for ``run``) draws its progress bar, including the drain phase past the window.
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import sys
import termios
from pathlib import Path

import pytest

from tests.conftest import write_power_series

pytestmark = pytest.mark.fmu

HPCTWIN = [sys.executable, "-m", "scheduler_sim"]


def run_in_pty(argv: list[str], cwd: Path, env: dict | None = None, cols: int = 80,
               timeout_s: float = 600.0) -> tuple[int, str]:
    """Run ``argv`` with a pty as its terminal; return (exit status, everything it drew)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24 if cols else 0, cols, 0, 0))  # 0: no size at all
    import subprocess

    full_env = dict(os.environ, **(env or {}))
    full_env.pop("CI", None)
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, cwd=cwd, env=full_env,
                            close_fds=True, start_new_session=True)
    os.close(slave)
    out = bytearray()
    try:
        while True:
            ready, _, _ = select.select([master], [], [], timeout_s)
            if not ready:
                proc.kill()
                raise AssertionError(f"{argv} drew nothing for {timeout_s} s")
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
    finally:
        os.close(master)
    return proc.wait(timeout=60), out.decode("utf-8", errors="replace")


@pytest.fixture(scope="module")
def term_env(tmp_path_factory):
    cache = tmp_path_factory.mktemp("cache")
    # every update redraws, so the drain phase past the window is drawn deterministically
    return {"HPCTWIN_CACHE_DIR": str(cache), "COLUMNS": "80", "HPCTWIN_PROGRESS_MININTERVAL": "0"}


@pytest.fixture(scope="module")
def run_file(tmp_path_factory, term_env):
    work = tmp_path_factory.mktemp("term-run")
    out = work / "run.h5"
    rc, text = run_in_pty(HPCTWIN + ["run", "--days", "2", "--out", str(out)], work, term_env)
    return rc, text, out


def test_run_in_a_terminal_draws_progress_past_the_window_and_finishes(run_file):
    rc, text, out = run_file
    assert rc == 0, text[-3000:]
    assert "Traceback" not in text and "TypeError" not in text
    assert out.is_file()
    assert "48/48 h simulated" in text      # the window phase was drawn on the terminal, to its end
    assert "draining the queue" in text and "jobs ended" in text  # then the drain phase
    assert "PUE" in text and f"wrote {out}" in text


def test_report_in_a_terminal(run_file, tmp_path, term_env):
    rc0, _, out = run_file
    assert rc0 == 0
    rc, text = run_in_pty(HPCTWIN + ["report", str(out), "--out", str(tmp_path / "rep")], tmp_path, term_env)
    assert rc == 0, text[-3000:]
    assert "Traceback" not in text
    assert (tmp_path / "rep" / "report.html").is_file()
    assert "report: saved energy_breakdown" in text  # the report shows what it is doing while it draws


def test_sweep_in_a_terminal(tmp_path, term_env):
    study = tmp_path / "study.toml"
    study.write_text(
        'name = "term"\n[base]\nsystem = "theta"\n'
        'trace = { window_start_days = 181.0, window_days = 0.5 }\ncooling = { enabled = false }\n'
        '[axes]\n"scheduler.policy" = ["fcfs", "easy"]\n')
    rc, text = run_in_pty(HPCTWIN + ["sweep", str(study), "--out", str(tmp_path / "sw")], tmp_path, term_env)
    assert rc == 0, text[-3000:]
    assert "Traceback" not in text
    assert (tmp_path / "sw" / "summary.h5").is_file()


def test_cooling_in_a_terminal(tmp_path, term_env):
    series = write_power_series(tmp_path / "power.csv")
    out = tmp_path / "c.h5"
    rc, text = run_in_pty(HPCTWIN + ["cooling", str(series), "--plant", "theta", "--wet-bulb", "12",
                                     "--out", str(out)], tmp_path, term_env)
    assert rc == 0, text[-3000:]
    assert "Traceback" not in text and "PUE" in text
    assert out.is_file()


def test_run_on_a_terminal_that_reports_no_width_still_draws_its_bar(tmp_path, term_env):
    # a pseudo-terminal opened without a size (``script`` from a process without a terminal) reports 0 columns;
    # tqdm's dynamic width then draws nothing at all (seen by last session's newcomer): the bar falls back to 80
    env = {k: v for k, v in term_env.items() if k != "COLUMNS"}
    out = tmp_path / "run.h5"
    rc, text = run_in_pty(HPCTWIN + ["run", "--days", "0.5", "--cooling", "off", "--out", str(out)], tmp_path, env,
                          cols=0)
    assert rc == 0, text[-3000:]
    assert "12/12 h simulated" in text and "|" in text.split("12/12 h simulated")[0][-80:]
