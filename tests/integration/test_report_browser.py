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
        # layout of each figure as drawn (texts off the canvas, tick labels over each other, empty panels) and the
        # share of its pixels that are not background, measured on the decoded image in the browser
        layout = page.eval_on_selector_all("figure", """els => els.map(e => {
            const img = e.querySelector('img'); const c = document.createElement('canvas');
            c.width = img.naturalWidth; c.height = img.naturalHeight; const g = c.getContext('2d');
            g.drawImage(img, 0, 0); const d = g.getImageData(0, 0, c.width, c.height).data; let ink = 0;
            for (let i = 0; i < d.length; i += 16) { if (d[i] < 235 || d[i+1] < 235 || d[i+2] < 235) ink++; }
            return [e.dataset.figure, e.dataset.overflow || '', e.dataset.empty || '', ink / (d.length / 16)];
        })""")
        tables = page.eval_on_selector_all("table", "els => els.map(t => Array.from(t.rows).map("
                                                    "r => Array.from(r.cells).map(c => c.textContent)))")
        headings = page.eval_on_selector_all("h2", "els => els.map(e => e.textContent)")
        title = page.title()
        if screenshot is not None:
            page.screenshot(path=str(screenshot), full_page=False)
        browser.close()
    return {"errors": errors, "failed": failed, "images": images, "figures": figures, "title": title,
            "layout": layout, "tables": tables, "headings": headings}


def _check(info: dict, min_figures: int) -> None:
    assert info["errors"] == [], info["errors"]
    assert info["failed"] == [], info["failed"]
    assert len(info["figures"]) >= min_figures
    assert all(w > 0 and h > 0 for w, h, _ in info["images"]), "an image did not decode"
    for name, cap in info["figures"]:
        assert cap.strip(), f"figure {name} has no caption"
        assert UNIT.search(cap), f"caption of {name} names no unit: {cap!r}"
    for name, overflow, empty, ink in info["layout"]:
        assert overflow == "", f"figure {name}: text off the figure or over other text: {overflow}"
        assert empty == "", f"figure {name}: empty panel(s): {empty}"
        assert ink > 0.01, f"figure {name} is blank ({ink:.4f} of its pixels drawn)"


def _metric_rows(info: dict) -> dict[str, tuple[str, str]]:
    """The headline-metric tables' rows: label -> (value, unit)."""
    rows = {}
    for t in info["tables"]:
        if t and t[0][:4] == ["metric", "value", "unit", "definition"]:
            rows.update({r[0]: (r[1], r[2]) for r in t[1:]})
    return rows


def _check_units(info: dict) -> dict[str, tuple[str, str]]:
    """Every headline metric is declared: no ``(undeclared)`` unit; the dimensionless ones are the schema's."""
    from scheduler_sim.io.schema import SUMMARY_METRICS

    unitless = {m.label for m in SUMMARY_METRICS if m.shown == ""}
    rows = _metric_rows(info)
    assert rows, "no headline metric table"
    for label, (value, unit) in rows.items():
        assert unit != "(undeclared)", f"metric {label!r} has no declared unit"
        if not unit and value != "n/a":
            assert label in unitless or label.split(" (")[0] in unitless, f"metric {label!r} = {value} is shown without a unit"
    return rows


@pytest.fixture(scope="module")
def run_h5(tmp_path_factory):
    d = tmp_path_factory.mktemp("browser")
    out = d / "run.h5"
    assert main(["run", "--days", "1", "--quiet", "--out", str(out)]) == 0
    return out


def _cdu_header(info: dict) -> str:
    return next(t[0][4] for t in info["tables"] if t and t[0][:2] == ["CDU", "heat [MWh]"])


def test_run_report_opens_in_chromium(run_h5, tmp_path):
    """A 1-day batch run (Theta, W27 plant): every figure laid out, every metric with its unit, the plant's limit."""
    assert main(["report", str(run_h5), "--out", str(tmp_path / "rep")]) == 0
    info = open_report(tmp_path / "rep" / "report.html")
    _check(info, min_figures=7)
    assert "hpctwin" in info["title"]
    rows = _check_units(info)
    assert rows["facility energy"][1] == "MWh" and rows["mean wait"][1] in ("min", "h", "days")
    assert "27.0 degC (W27)" in _cdu_header(info)  # Theta's plant set point
    assert "Jobs with the largest facility energy" in info["headings"]
    assert "By month" not in info["headings"]  # a run of days has no monthly table


@pytest.fixture(scope="module")
def serving_h5(tmp_path_factory):
    """The Azure conversation hour on the Frontier-like system (W32 plant), serving only."""
    out = tmp_path_factory.mktemp("browser_serving") / "serving.h5"
    assert main(["run", "experiments/llm_serving_azure_conv.toml", "--quiet", "--out", str(out)]) == 0
    return out


def test_serving_hour_report_in_chromium(serving_h5, tmp_path):
    """A 1-hour serving run: latency against the SLOs, goodput, power per replica; no empty batch sections; the
    serving metrics in their own units (not hours); the supply limit of the Frontier-like plant, 32 degC."""
    assert main(["report", str(serving_h5), "--out", str(tmp_path / "rep")]) == 0
    info = open_report(tmp_path / "rep" / "report.html")
    _check(info, min_figures=6)
    names = [n for n, _ in info["figures"]]
    assert {"serving_latency", "serving_throughput", "serving_power"} <= set(names)
    assert not {"occupancy", "wait_vs_size", "utilisation_queue"} & set(names)  # no batch job: left out, not empty
    assert "Jobs with the largest facility energy" not in info["headings"]
    rows = _check_units(info)
    assert rows["TTFT (p50)"][1] in ("s", "ms") and rows["TTFT (p50)"][1] != "h"
    assert rows["goodput"][1] == "req/s" and 5.0 < float(rows["goodput"][0]) < 6.0  # 5.46 req/s (docs/serving.md)
    assert rows["tokens per second per GPU"][1] == "tokens/s"
    assert "mean wait" not in rows  # the schedule group of a run without batch jobs
    assert "32.0 degC (W32)" in _cdu_header(info)
    caps = dict(info["figures"])
    assert "TTFT 1 s" in caps["serving_latency"] and "TPOT 50 ms" in caps["serving_latency"]


def test_thirty_day_report_in_chromium(tmp_path):
    """A 30-day batch run (fast plant): figures laid out at a month's length, and the monthly table."""
    out = tmp_path / "m30.h5"
    assert main(["run", "--days", "30", "--cooling", "fast", "--quiet", "--out", str(out)]) == 0
    assert main(["report", str(out), "--out", str(tmp_path / "rep")]) == 0
    info = open_report(tmp_path / "rep" / "report.html")
    _check(info, min_figures=7)
    _check_units(info)
    assert "By month" in info["headings"]
    month = next(t for t in info["tables"] if t and t[0][0] == "month")
    assert len(month) >= 3 and [r[0] for r in month[1:3]] == ["2022-07", "2022-08"]  # window from day 181: July
    import h5py

    with h5py.File(out) as f:
        t = f["timeseries/time_s"][()]
    span_days = t.size * float(t[1] - t[0]) / 86400.0
    assert span_days > 31
    assert abs(sum(float(r[1]) for r in month[1:]) - span_days) < 0.1 * len(month)  # the months tile the run


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


def _numbers(text: str) -> list[float]:
    return [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?", text.replace(",", ""))]


def test_ensemble_bands_beside_the_headline_in_chromium(tmp_path, capsys):
    """Issue 28 item 9b: with an ensemble the sweep report's headline gives each scenario's mean and 5-95 % band of
    its members, and a member's own run report shows its scenario's band beside each headline figure; the numbers
    are recomputed here from the members' rows of /scenarios (numpy mean and linear quantiles)."""
    import h5py
    import numpy as np

    study = tmp_path / "ens.toml"
    study.write_text('name = "ens"\n[base]\nsystem = "theta"\n'
                     'trace = { window_start_days = 181.0, window_days = 0.5 }\n'
                     'cooling = { step_s = 15.0, T_wb_C = 24.0, weather = "constant" }\noutput = { progress = false }\n'
                     '[axes]\n"scheduler.policy" = ["fcfs", "easy"]\n'
                     '[uncertainty]\nmembers = 4\nseed = 7\nmember_files = "full"\n[uncertainty.parameters]\n'
                     'node_power_scale = { dist = "uniform", low = 0.9, high = 1.1 }\n'
                     'wet_bulb_offset_K = { dist = "uniform", low = -2.0, high = 2.0 }\n')
    assert main(["sweep", str(study), "--out", str(tmp_path / "sw")]) == 0
    out = capsys.readouterr().out
    # the terminal: the band table, and the front of the scenarios' means (members are not decisions)
    assert "PUE mean (5 % .. 95 %)" in out and "frontier of the ensemble means (4 members)" in out
    front = out[out.index("frontier of the ensemble means"):]
    assert "000_fcfs " in front and "_m00" not in front
    with h5py.File(tmp_path / "sw" / "summary.h5") as f:
        names = [x.decode() for x in f["scenarios/name"][()]]
        pue = f["scenarios/PUE"][()]
    mine = np.array([pue[i] for i, n in enumerate(names) if n.startswith("000_fcfs_m")])
    assert mine.size == 4 and np.ptp(mine) > 1e-4  # the members differ
    want = (mine.mean(), np.quantile(mine, 0.05), np.quantile(mine, 0.95))

    assert main(["report", str(tmp_path / "sw" / "summary.h5"), "--out", str(tmp_path / "srep")]) == 0
    info = open_report(tmp_path / "srep" / "report.html")
    assert info["errors"] == [] and info["failed"] == []
    assert info["headings"][:2] == ["Headline", "Members"]
    head = info["tables"][0]
    col = [i for i, h in enumerate(head[0]) if h.startswith("PUE")]
    assert col and "mean (5 % .. 95 %)" in head[0][col[0]]
    row = next(r for r in head[1:] if r[0] == "000_fcfs")
    assert row[1] == "4 members"
    got = _numbers(row[col[0]])
    assert len(got) == 3 and np.allclose(got, want, rtol=5e-4), (row[col[0]], want)
    assert len(info["tables"][1]) == 1 + 8  # the members' own table: 2 scenarios x 4 members
    front = (tmp_path / "srep" / "frontier.csv").read_text().splitlines()[1:]
    assert front and all(r.split(",")[0] in ("000_fcfs", "001_easy") for r in front)  # the means, no member
    assert any("Frontier of the ensemble means (4 members)" in cap for _, cap in info["figures"])

    member = tmp_path / "sw" / "000_fcfs_m002.h5"
    assert main(["report", str(member), "--out", str(tmp_path / "mrep")]) == 0
    minfo = open_report(tmp_path / "mrep" / "report.html")
    assert minfo["errors"] == []
    h = minfo["tables"][0]
    assert h[0][2] == "ensemble 000_fcfs: mean (5 % .. 95 %) of 4 members"
    pue_row = next(r for r in h[1:] if r[0].startswith("PUE"))
    assert _numbers(pue_row[1])[0] == pytest.approx(mine[2], rel=5e-4)  # this member's own PUE
    assert np.allclose(_numbers(pue_row[2]), want, rtol=5e-4)
    assert all(len(r) == 3 for r in h[1:])
