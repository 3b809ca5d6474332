"""The report's headroom block is the run's own (the newcomer's finding of session 7: the report lost the run's
calendar, so its chiller-free months read 1970-07 and split at the wrong hours while the run said 2022-07)."""

from __future__ import annotations

import html
import re

import pytest

from scheduler_sim.app.cli import main


@pytest.mark.fmu
def test_report_headroom_months_are_the_runs(tmp_path, capsys):
    out = tmp_path / "run.h5"
    assert main(["run", "--start-day", "181", "--days", "0.25", "--quiet", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    run_line = next(ln.strip() for ln in printed.splitlines() if ln.strip().startswith("chiller-free"))
    assert "(2022-07 " in run_line  # day 181 of the Theta 2022 trace
    assert main(["report", str(out), "--out", str(tmp_path / "rep")]) == 0
    page = html.unescape((tmp_path / "rep" / "report.html").read_text())
    shown = re.search(r"chiller-free[^\n<]*", page).group(0).strip()
    assert shown == run_line and "1970-" not in page
