"""Units from the schema's one table (issue #28 item 1) and supply limits from the plant (item 3).

The run-kind tests run the CLI (a 1-day Frontier batch window on the fast plant, the serving hour, a theta
cooling-only quarter day), then render every summary metric and the report; they fail on any ``/summary`` key the
schema's SUMMARY_METRICS does not declare.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from cooling_fmu.params import load_plant_params
from scheduler_sim.analysis.limits import ashrae_class, hours_above, supply_limit_of_plant
from scheduler_sim.analysis.report.catalogue import describe, format_value, format_with_unit, is_declared
from scheduler_sim.io.schema import SUMMARY_METRICS, duration_unit

ROOT = Path(__file__).resolve().parents[2]

#: The shown unit of each kind (a duration: one of four by its magnitude).
KIND_UNITS = {"duration": {"s", "min", "h", "days"}, "energy": {"MWh", "kWh", "J"}, "power": {"MW", "kW"},
              "ratio": {"", "%", "% of IT", "relative"}, "count": {""},
              "rate": {"req/s", "tokens/s", "events/s", "jobs/day", "MW/min"}}


# ------------------------------------------------------------------------------------------- the formatting rule
@pytest.mark.parametrize("seconds, text", [(0.0857, "0.0857 s"), (0.0251, "0.0251 s"), (11.2, "11.2 s"),
                                           (300.0, "5.00 min"), (5400.0, "90.00 min"), (7200.0, "2.00 h"),
                                           (9000.0, "2.50 h"), (3 * 86400.0, "3.00 days")])
def test_duration_is_shown_in_the_unit_its_magnitude_picks(seconds, text):
    assert format_with_unit("mean_wait_s", seconds) == text
    assert format_with_unit("serving_ttft_p50_s", seconds) == text


def test_rates_per_second_are_never_converted_as_durations():
    # the old _SUFFIX fallback showed goodput 5.49 req/s as "0.002 h"
    assert format_with_unit("serving_goodput_req_s", 5.49) == "5.490 req/s"
    assert format_with_unit("serving_tokens_per_s_per_gpu", 145.7) == "145.7 tokens/s"
    assert describe("serving_tokens_per_s").kind == "rate"


def test_energy_power_ratio_scales_from_si():
    assert format_with_unit("E_it_J", 3.6e9) == "1.000 MWh"
    assert format_with_unit("mean_P_it_W", 2.5e6) == "2.5000 MW"
    assert format_with_unit("utilisation", 0.4567) == "45.7 %"
    assert format_with_unit("water_makeup_kg", 997.0 * 12) == "12.0 m3"
    assert format_with_unit("PUE", float("nan")) == "n/a"


def test_undeclared_key_is_flagged_not_guessed():
    assert not is_declared("made_up_metric_s")
    d = describe("made_up_metric_s", 7200.0)
    assert d.unit == "(undeclared)" and d.scale == 1.0  # shown in SI, not turned into 2 h by its suffix
    assert format_value("made_up_metric_s", 7200.0) == "7,200"


def test_duration_unit_boundaries():
    assert duration_unit(119.9)[0] == "s" and duration_unit(120.0)[0] == "min"
    assert duration_unit(7199.0)[0] == "min" and duration_unit(7200.0)[0] == "h"
    assert duration_unit(72 * 3600.0)[0] == "days" and duration_unit(float("nan"))[0] == "s"


def test_every_declared_metric_has_a_kind_and_a_unit_of_its_kind():
    for m in SUMMARY_METRICS:
        shown = describe(m.key.replace("{", "").replace("}", ""), 1.0)
        if m.kind in KIND_UNITS:
            assert shown.unit in KIND_UNITS[m.kind], m.key


# ----------------------------------------------------------------------------------------------- limits
@pytest.mark.parametrize("T_K, cls", [(290.15, "W17"), (297.15, "W27"), (300.15, "W27"), (300.16, "W32"),
                                      (305.15, "W32"), (313.15, "W40"), (318.15, "W45"), (320.0, "W+")])
def test_ashrae_class_is_the_lowest_class_at_or_above_the_set_point(T_K, cls):
    assert ashrae_class(T_K) == cls


def test_limit_comes_from_the_plant_set_point():
    fr = supply_limit_of_plant(load_plant_params("frontier"), "frontier")
    th = supply_limit_of_plant(load_plant_params("theta"), "theta")
    es = supply_limit_of_plant(load_plant_params("esif"), "esif")
    assert (fr.T_limit_K, fr.w_class) == (305.15, "W32")
    assert (th.T_limit_K, th.w_class) == (300.15, "W27")
    assert (es.T_limit_K, es.w_class) == (297.15, "W27")


def test_hours_above_a_small_series_by_hand():
    # threshold 300.15 + 0.5 = 300.65 K; CDU 0 above in intervals 1 and 2, CDU 1 in interval 0; 900 s intervals
    T = np.array([[300.0, 301.0], [300.7, 300.6], [301.2, 299.0], [300.65, 300.65]])
    per, any_h = hours_above(T, 300.15, 0.5, 900.0)
    np.testing.assert_allclose(per, [0.5, 0.25])
    assert any_h == 0.75  # intervals 0, 1, 2 (300.65 is not strictly above)


# --------------------------------------------------------------------------------------- every run kind
def _cli(*args: str, cwd: Path) -> str:
    p = subprocess.run([sys.executable, "-m", "scheduler_sim", *args], cwd=cwd, capture_output=True, text=True,
                       timeout=900)
    assert p.returncode in (0, 1), p.stderr[-2000:]
    return p.stdout


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("units")
    out = {"batch": _cli("run", "--system", "frontier", "--days", "1", "--cooling", "fast", "--out",
                         str(d / "batch.h5"), cwd=ROOT),
           "serving": _cli("run", "experiments/llm_serving_azure_conv.toml", "--out", str(d / "serving.h5"),
                           cwd=ROOT),
           "cooling": _cli("cooling", "--design-day", "--system", "theta", "--days", "0.25", "--out",
                           str(d / "cooling.h5"), cwd=ROOT)}
    return d, out


def _summary(path: Path) -> dict[str, float]:
    with h5py.File(path, "r") as f:
        return {k: float(v) for k, v in f["summary"].attrs.items()}


@pytest.mark.parametrize("kind", ["batch", "serving", "cooling"])
def test_every_summary_metric_of_each_run_kind_is_declared_and_in_its_kind_unit(runs, kind):
    d, _ = runs
    s = _summary(d / f"{kind}.h5")
    undeclared = sorted(k for k in s if not is_declared(k))
    assert not undeclared, f"{kind}: /summary keys missing from schema.SUMMARY_METRICS: {undeclared}"
    for k, v in s.items():
        m = describe(k, v)
        assert m.unit in KIND_UNITS.get(m.kind, {m.unit}), (k, m.kind, m.unit)
        format_value(k, v)  # renders
    if kind == "serving":
        assert describe("serving_goodput_req_s", s["serving_goodput_req_s"]).unit == "req/s"
        assert describe("serving_ttft_p50_s", s["serving_ttft_p50_s"]).unit == "s"  # 0.09 s, not "0.000 h"
        assert float(format_value("serving_ttft_p50_s", s["serving_ttft_p50_s"])) == pytest.approx(
            s["serving_ttft_p50_s"], rel=5e-3)


def test_reports_show_units_and_the_plant_limit(runs):
    from scheduler_sim.analysis.report import make_report

    d, out = runs
    html = {k: make_report(d / f"{k}.h5", d / f"{k}_report").read_text() for k in ("batch", "serving", "cooling")}
    for k, h in html.items():
        assert "(undeclared)" not in h, k
    assert "req/s" in html["serving"] and "tokens/s" in html["serving"]
    assert "0.000 h" not in html["serving"]
    # Frontier-like plant: 32 degC (W32), not a literal 27 degC
    assert "32.0 degC (W32) + 0.5 K" in html["batch"] and "27.0 degC" not in html["batch"]
    with h5py.File(d / "batch.h5", "r") as f:
        assert f["attribution"].attrs["T_supply_limit_K"] == 305.15
    assert "27.0 degC (W27" in html["cooling"]  # the Theta plant's own set point
    # the terminal summary gives the peak and the hours above the plant's limit
    line = next(x for x in out["batch"].splitlines() if x.strip().startswith("CDU supply"))
    assert "limit 32.0 degC (W32" in line and "h above" in line
    with h5py.File(d / "batch.h5", "r") as f:
        T = f["timeseries/cdu/T_sec_sup"][()]
        t = f["timeseries/time_s"][()]
    _, any_h = hours_above(T, 305.15, 0.5, float(t[1] - t[0]))
    assert f"peak {T.max() - 273.15:.2f} degC" in line and f"{any_h:.2f} h above (any CDU)" in line
