"""The HTML report opened in a real headless browser (issue #13, item 5).

Debian's Chromium (``/usr/bin/chromium``, installed by ``.ci/run``) driven by Playwright from PyPI (Playwright's own
browser download cannot be reached here). For a run report, a sweep report and a cooling-only report: the page
loads with no console error and no failed request, every image is decoded (natural width > 0), every figure has
a caption, and every caption or axis text names its units. Skipped, with the reason, when Chromium or
Playwright is missing (developer machines without them); CI installs both.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from scheduler_sim.app.cli import main
from tests.conftest import write_power_series, write_weather_study

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
playwright_sync = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (dev extra)")
if not Path(CHROMIUM).exists():
    pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium; .ci/run does)", allow_module_level=True)

pytestmark = pytest.mark.fmu

ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
UNIT = re.compile(r"\[[^\]]+\]|\b(?:MW|kW|MWh|degC|W)\b")


def open_report(html: Path, screenshot: Path | None = None) -> dict:
    """Open ``html`` in headless Chromium; return console errors, failed requests, images and captions."""
    with playwright_sync.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors, failed = [], []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("requestfailed", lambda r: failed.append(r.url[:80]))
        page.goto(html.as_uri(), wait_until="load")
        images = page.eval_on_selector_all("img", "els => els.map(e => [e.naturalWidth, e.naturalHeight, e.alt])")
        figures = page.eval_on_selector_all(
            "figure", "els => els.map(e => [e.dataset.figure, (e.querySelector('figcaption')||{}).textContent||''])")
        title = page.title()
        if screenshot is not None:
            page.screenshot(path=str(screenshot), full_page=False)
        browser.close()
    return {"errors": errors, "failed": failed, "images": images, "figures": figures, "title": title}


def _check(info: dict, min_figures: int) -> None:
    assert info["errors"] == [], info["errors"]
    assert info["failed"] == [], info["failed"]
    assert len(info["figures"]) >= min_figures
    assert all(w > 0 and h > 0 for w, h, _ in info["images"]), "an image did not decode"
    for name, cap in info["figures"]:
        assert cap.strip(), f"figure {name} has no caption"
        assert UNIT.search(cap), f"caption of {name} names no unit: {cap!r}"


@pytest.fixture(scope="module")
def run_h5(tmp_path_factory):
    d = tmp_path_factory.mktemp("browser")
    out = d / "run.h5"
    assert main(["run", "--days", "1", "--quiet", "--out", str(out)]) == 0
    return out


def test_run_report_opens_in_chromium(run_h5, tmp_path):
    assert main(["report", str(run_h5), "--out", str(tmp_path / "rep")]) == 0
    info = open_report(tmp_path / "rep" / "report.html")
    _check(info, min_figures=7)
    assert "hpctwin" in info["title"]


def test_cooling_only_report_opens_in_chromium(tmp_path):
    series = write_power_series(tmp_path / "power.csv")
    assert main(["cooling", str(series), "--plant", "theta", "--wet-bulb", "12", "--out", str(tmp_path / "c.h5")]) == 0
    assert main(["report", str(tmp_path / "c.h5"), "--out", str(tmp_path / "crep")]) == 0
    _check(open_report(tmp_path / "crep" / "report.html"), min_figures=2)


def test_sweep_report_opens_in_chromium(tmp_path):
    study = write_weather_study(tmp_path / "study.toml", "br")
    assert main(["sweep", str(study), "--out", str(tmp_path / "sw")]) == 0
    assert main(["report", str(tmp_path / "sw" / "summary.h5"), "--out", str(tmp_path / "srep")]) == 0
    info = open_report(tmp_path / "srep" / "report.html")
    _check(info, min_figures=2)
    assert all("own front" in cap for _, cap in info["figures"])  # one Pareto front per weather condition
