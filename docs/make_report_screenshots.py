"""Screenshots of the three kinds of HTML report for docs/img (issue #13: keep a screenshot of each report page).

Runs the main job for 3 days, a 2 x 2 sweep of half-day windows and a cooling-only day, writes their reports, opens
each in headless Chromium (Debian's ``/usr/bin/chromium`` driven by Playwright) and saves the first screen of each
as ``docs/img/report_run.png``, ``report_sweep.png`` and ``report_cooling.png``::

    .venv/bin/python docs/make_report_screenshots.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scheduler_sim.app.cli import main  # noqa: E402
from tests.conftest import write_power_series, write_weather_study  # noqa: E402
from tests.integration.test_report_browser import open_report  # noqa: E402

IMG = ROOT / "docs" / "img"


def _shoot(html: Path, name: str) -> None:
    info = open_report(html, screenshot=IMG / name)
    if info["errors"] or info["failed"]:
        raise SystemExit(f"{html}: browser errors {info['errors']} / failed requests {info['failed']}")
    print(f"wrote {IMG / name} ({len(info['figures'])} figures)")


def run() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        assert main(["run", "--days", "3", "--quiet", "--out", str(d / "run.h5")]) == 0
        assert main(["report", str(d / "run.h5"), "--out", str(d / "rep")]) == 0
        _shoot(d / "rep" / "report.html", "report_run.png")
        study = write_weather_study(d / "study.toml", "screens")
        assert main(["sweep", str(study), "--out", str(d / "sw")]) == 0
        assert main(["report", str(d / "sw" / "summary.h5"), "--out", str(d / "srep")]) == 0
        _shoot(d / "srep" / "report.html", "report_sweep.png")
        write_power_series(d / "p.csv")
        assert main(["cooling", str(d / "p.csv"), "--plant", "theta", "--wet-bulb", "12", "--out",
                     str(d / "c.h5")]) == 0
        assert main(["report", str(d / "c.h5"), "--out", str(d / "crep")]) == 0
        _shoot(d / "crep" / "report.html", "report_cooling.png")


if __name__ == "__main__":
    run()
