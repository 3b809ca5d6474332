"""Report views of issue #28: layout check, short-run time axes, the compare waterfall, the monthly table, the sweep
headline table and the export of a table (hand-computed values)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import h5py
import numpy as np
import pandas as pd
import pytest

from scheduler_sim.analysis.report import figures as F
from scheduler_sim.analysis.compare import LINKS
from scheduler_sim.analysis.monthly import monthly_table
from scheduler_sim.analysis.report.sweep_table import headline_table, span_warning

import matplotlib.pyplot as plt

JAN_1_2022 = 1640995200.0  # 2022-01-01 00:00 UTC


def test_layout_check_finds_text_off_the_canvas_and_empty_panels():
    fig, (a, b) = plt.subplots(1, 2, figsize=(6, 3))
    a.plot([0, 1], [0, 1])
    fig.text(1.05, 0.5, "off the right edge")
    lay = F.layout_problems(fig)
    assert lay["overflow"] == ["off the right edge"]
    assert lay["empty"] == ["panel 1"]  # b draws nothing
    plt.close(fig)


def test_layout_check_finds_overlapping_tick_labels():
    fig, ax = plt.subplots(figsize=(3, 1.2))
    ax.imshow(np.zeros((2, 25)).T, aspect="auto")
    ax.set_yticks(range(25))
    lay = F.layout_problems(fig)
    assert any(o.startswith("overlapping tick labels") for o in lay["overflow"])
    plt.close(fig)


def test_one_hour_axis_ticks_minutes_with_the_date_in_the_label():
    t = np.arange(0, 3600, 60.0)
    tax = F.TimeAxis(t, JAN_1_2022 + 18 * 3600)
    fig, ax = plt.subplots()
    ax.plot(tax.x(t), np.ones_like(t))
    tax.format(ax)
    fig.canvas.draw()
    labels = [x.get_text() for x in ax.get_xticklabels() if x.get_text()]
    assert 4 <= len(labels) <= 10 and all(len(s) == 5 and s[2] == ":" for s in labels)  # "18:10"
    assert ax.get_xlabel() == "time (UTC), from 2022-01-01 18:00"
    plt.close(fig)


def test_pue_axis_of_a_short_run_has_no_offset():
    n = 60
    ts = {"P_facility_W": np.full(n, 1.0679e6) + np.linspace(0, 10, n), "P_it_W": np.full(n, 1.0e6),
          "PUE_cumulative": np.full(n, 1.0679)}
    fig = F.pue_weather(ts, None, F.TimeAxis(np.arange(n) * 60.0, JAN_1_2022), 1.0679)
    fig.canvas.draw()
    assert fig.axes[0].yaxis.get_offset_text().get_text() == ""
    assert all(t.get_text().startswith("1.06") for t in fig.axes[0].get_yticklabels() if t.get_text())
    plt.close(fig)


def test_compare_waterfall_walks_from_a_to_b_by_link():
    mwh = 3.6e9
    links = pd.Series([2.0 * mwh, -0.5 * mwh, 0.3 * mwh, -0.1 * mwh], index=list(LINKS))
    totals = pd.DataFrame({"A": [100 * mwh, float("nan")], "B": [101.7 * mwh, float("nan")]},
                          index=["E_facility_J", "PUE"])
    cmp = SimpleNamespace(totals=totals, energy=links, pue=links * np.nan, grid={})
    fig = F.compare_waterfall(cmp)
    ax = fig.axes[0]
    bars = [p for p in ax.patches]
    assert len(bars) == 6  # A, four links, B
    assert bars[0].get_height() == pytest.approx(100.0) and bars[-1].get_height() == pytest.approx(101.7)
    # each link bar starts where the previous one ended: 100 -> 102 -> 101.5 -> 101.8 -> 101.7
    starts = [b.get_y() for b in bars[1:5]]
    assert starts == pytest.approx([100.0, 102.0, 101.5, 101.8])
    assert bars[4].get_y() + bars[4].get_height() == pytest.approx(101.7)
    assert len(fig.axes) == 1  # no PUE panel when neither run has a PUE
    plt.close(fig)


def test_monthly_table_splits_calendar_months():
    dt = 3600.0
    t = np.arange(0, 62 * 86400, dt)  # 2022-01-01 .. 2022-03-04
    P_it = np.full(t.size, 1.0e6)
    P_fac = np.where(t < 31 * 86400, 1.05e6, 1.10e6)
    mk = np.full(t.size, 0.5)  # 0.5 kg/s make-up water
    mt = monthly_table(t, JAN_1_2022, P_fac, P_it, mk)
    v = mt.values
    assert list(v.index) == ["2022-01", "2022-02", "2022-03"]
    assert list(v["days"]) == pytest.approx([31, 28, 3])
    assert v.loc["2022-01", "E_facility_J"] == pytest.approx(1.05e6 * 31 * 86400)
    assert v.loc["2022-02", "PUE"] == pytest.approx(1.10)
    assert v.loc["2022-02", "peak_P_facility_W"] == pytest.approx(1.10e6)
    # WUE: 0.5 L/s over 1 MW of IT = 0.5 L per 1000 kJ... = 1800 L/h / 1000 kWh/h = 1.8 L/kWh
    assert v.loc["2022-03", "WUE_L_per_kWh"] == pytest.approx(1.8)
    assert mt.rows[0][:2] == ("2022-01", "31.0")
    assert monthly_table(t[:24 * 20], JAN_1_2022, P_fac[:480], P_it[:480]) is None  # 20 days: no table


def _summary(path, spans_days=(1, 1, 1)):
    names = ["a", "b", "c"]
    with h5py.File(path, "w") as f:
        f.attrs["kind"] = "sweep-summary"
        g = f.create_group("scenarios")
        g["name"] = np.array(names, dtype=h5py.string_dtype())
        g["status"] = np.array(["done"] * 3, dtype=h5py.string_dtype())
        g["config_json"] = np.array([json.dumps({"trace": {"enabled": True, "window_days": d}}) for d in spans_days],
                                    dtype=h5py.string_dtype())
        g["PUE"] = np.array([1.05, 1.06, 1.07])
        g["E_facility_J"] = np.array([3.6e9, 7.2e9, 10.8e9])  # 1, 2, 3 MWh
        g["peak_P_facility_W"] = np.array([1.5e6, 2.0e6, 2.5e6])
        g["mean_wait_s"] = np.array([3600.0, 7200.0, 1800.0])
        g["grid_co2_t"] = np.array([0.4, 0.5, 0.6])
        g["water_makeup_kg"] = np.array([1000.0, 2000.0, 3000.0])
        g["grid_cost"] = np.full(3, np.nan)  # no price signal: column left out
    return path


def test_sweep_headline_table_has_peak_power_co2_and_water(tmp_path):
    tab = headline_table(_summary(tmp_path / "summary.h5"))
    assert tab.header == ("scenario", "status", "PUE", "facility energy [MWh]", "peak facility power [MW]",
                          "mean wait [h]", "CO2 (facility) [t CO2eq]", "tower make-up water [m3]")
    assert tab.rows[1][:6] == ("b", "done", "1.0600", "2.000", "2.0000", "2.00")
    assert tab.rows[2][-1] == "3.0"  # 3000 kg = 3 m3
    assert tab.warnings == []
    text = tab.format()
    assert text.splitlines()[0].startswith("scenario") and "peak facility power [MW]" in text


def test_sweep_table_warns_when_spans_differ(tmp_path):
    tab = headline_table(_summary(tmp_path / "summary.h5", spans_days=(1, 1, 2)))
    assert len(tab.warnings) == 1 and "1 day: a, b; 2 days: c" in tab.warnings[0]
    assert span_warning(["x"], [json.dumps({"trace": {"window_days": 7}})]) is None


def test_training_table_lists_the_workload_jobs_only():
    from scheduler_sim.analysis.report import _training_rows

    jobs = pd.DataFrame({"job_id": [1, 2, 3], "queue": ["default", "training", "default"],
                         "account": ["a", "llama-70b", "llama-8b"], "nodes": [4, 512, 64],
                         "run_s": [3600.0, 36000.0, 7200.0], "wait_s": [0.0, 1800.0, 60.0],
                         "energy_dc_J": [1e9, 3.6e12, 7.2e11]})
    res = SimpleNamespace(jobs=jobs, config_json=json.dumps({"workload": [{"name": "llama-8b"}]}))
    rows = _training_rows(res)
    # job 2 by its queue, job 3 by its account (a workload name), not job 1
    assert rows == [(2, "llama-70b", 512, "10.00", "0.50", "1,000.000"), (3, "llama-8b", 64, "2.00", "0.02", "200.000")]
    assert _training_rows(SimpleNamespace(jobs=jobs.iloc[:1], config_json="{}")) == []


def test_sweep_answer_gives_one_frontier_per_condition(tmp_path):
    """Scenarios under different weather are not compared with each other at the terminal either."""
    from pathlib import Path

    from scheduler_sim.app.commands import print_sweep_answer

    p = Path(tmp_path / "summary.h5")
    names = ["fcfs_tmy3", "easy_tmy3", "fcfs_const", "easy_const"]
    weather = ["tmy3", "tmy3", "constant", "constant"]
    with h5py.File(p, "w") as f:
        f.attrs["kind"] = "sweep-summary"
        f.attrs["study_file"] = '[axes]\n"scheduler.policy" = ["fcfs", "easy"]\n"cooling.weather" = ["tmy3", "constant"]\n'
        g = f.create_group("scenarios")
        g["name"] = np.array(names, dtype=h5py.string_dtype())
        g["status"] = np.array(["done"] * 4, dtype=h5py.string_dtype())
        g["config_json"] = np.array([json.dumps({"trace": {"enabled": True, "window_days": 1},
                                                 "cooling": {"weather": w}}) for w in weather],
                                    dtype=h5py.string_dtype())
        g["mean_wait_s"] = np.array([7200.0, 3600.0, 7200.0, 3600.0])
        g["E_facility_J"] = np.array([3.6e9, 7.2e9, 1.8e9, 1.8e9])
        g["PUE"] = np.array([1.05, 1.05, 1.04, 1.04])
    lines: list[str] = []
    print_sweep_answer(p, echo=lines.append)
    heads = [ln for ln in lines if ln.startswith("frontier")]
    assert len(heads) == 2 and "under weather=constant" in heads[0] and "under weather=tmy3" in heads[1]
    # under constant weather easy dominates fcfs (same energy, less wait); under tmy3 both are on the front
    text = "\n".join(lines)
    assert "front 1 of 2 scenario(s); knee easy_const" in text and "front 2 of 2 scenario(s)" in text
