"""The fast plant's error against a reference plant on a window of the run (issue #22 item 9,
:mod:`scheduler_sim.analysis.fast_check`): the window, the warm-up and the figures, with known errors."""

from types import SimpleNamespace

import numpy as np
import pytest

from cooling_fmu.params import load_plant_params
from cooling_fmu.quasisteady import QuasiSteadyPlant
from scheduler_sim.analysis.fast_check import fast_check_lines, fast_plant_check


class _Offset:
    """A plant whose CDU supply temperatures read ``dT`` higher and whose cooling power reads ``k`` times more."""

    def __init__(self, plant, dT, k, above_W=None):
        self.p, self.dT, self.k, self.above_W = plant, dT, k, above_W
        self.output_names, self.P_cooling_index = plant.output_names, plant.P_cooling_index
        self.cols = [i for i, n in enumerate(plant.output_names) if n.startswith("T_sec_sup")]
        self.calls = []

    def initialize(self, heat, twb):
        return self.p.initialize(heat, twb)

    def run(self, heat, twb):
        self.calls.append(heat.shape[0])
        out = self.p.run(heat, twb).copy()
        hot = 1.0 if self.above_W is None else (heat.sum(axis=1) > self.above_W)[:, None]
        out[:, self.cols] += self.dT * hot
        out[:, self.P_cooling_index] *= self.k
        return out


def _result(n_cdu, n=24 * 60, peak=900, high=None):
    t = np.arange(n) * 60.0
    heat = np.full((n, n_cdu), 1.0e5)
    a = peak - 30 if high is None else high
    heat[a:a + 60] = 1.6e5  # one hour of high load
    T = np.full((n, n_cdu), 300.0)
    T[peak, 1] = 302.0  # the fast run's hottest interval
    return SimpleNamespace(time_s=t, cdu={"Q_flow_W": heat, "T_sec_sup": T}, facility={"T_wb_K": np.full(n, 290.0)})


def test_same_plant_gives_zero_error_and_a_known_offset_is_measured_exactly():
    params = load_plant_params("theta")
    res = _result(params.n_cdu)
    fast = lambda: QuasiSteadyPlant(params, step_s=15.0)  # noqa: E731
    zero = fast_plant_check(res, fast, fast, 15.0, window_h=6.0, warmup_h=2.0)
    assert zero["peak_supply_error_K"] == 0.0 and zero["supply_error_max_K"] == 0.0
    assert zero["cooling_energy_ratio"] == 0.0
    # window: 6 h centred on interval 900 (15 h), i.e. 12 h .. 18 h; warm-up of 2 h stepped, not compared
    assert zero["window_start_s"] == 720 * 60.0 and zero["window_end_s"] == 1080 * 60.0 and zero["window_h"] == 6.0
    ref = _Offset(fast(), dT=-0.75, k=2.0)  # the reference runs 0.75 K colder and draws twice the power
    c = fast_plant_check(res, lambda: ref, fast, 15.0, window_h=6.0, warmup_h=2.0)
    assert ref.calls == [(8 * 60) * 4]  # 8 h (2 h warm-up + 6 h) of 15 s steps from 60 s intervals
    assert c["peak_supply_error_K"] == pytest.approx(0.75, abs=1e-9)
    assert c["supply_error_max_K"] == pytest.approx(0.75, abs=1e-9)
    assert c["supply_error_mean_K"] == pytest.approx(0.75, abs=1e-9)
    assert c["cooling_energy_ratio"] == pytest.approx(-0.5, rel=1e-12)
    assert c["peak_cooling_fmu_W"] == pytest.approx(2 * c["peak_cooling_fast_W"], rel=1e-12)
    lines = fast_check_lines(c)
    assert len(lines) == 2 and "(+0.75 K)" in lines[0] and "max 0.75 K" in lines[0]
    # the heat rises inside the supply peak's window: one window only
    assert [w["reason"] for w in c["windows"]] == ["its peak supply"] and "worst of 1 checked" in lines[0]


def test_the_steepest_heat_rise_gets_its_own_window_and_the_worse_window_is_reported():
    """A fast plant that holds its set point peaks anywhere; the FMU overshoots where the heat rises. Here the
    fast run's hottest interval is at 15 h and the heat rises at 3 h 20 min (row 200): two windows. The reference
    reads 1.5 K colder only while the heat is high, so only the rise's window shows the error, and it is reported."""
    params = load_plant_params("theta")
    res = _result(params.n_cdu, peak=900, high=200)
    fast = lambda: QuasiSteadyPlant(params, step_s=15.0)  # noqa: E731
    ref = lambda: _Offset(fast(), dT=-1.5, k=1.0, above_W=1.3e5 * params.n_cdu)  # noqa: E731
    c = fast_plant_check(res, ref, fast, 15.0, window_h=6.0, warmup_h=2.0)
    # windows: 6 h centred on row 900 (12 h .. 18 h), and on the end of the steepest 30-min rise, row 200 (the
    # first k with total[k + 30] - total[k] at its maximum is k = 170): rows 20 .. 380
    assert [(w["reason"], w["start_s"]) for w in c["windows"]] == [("its peak supply", 720 * 60.0),
                                                                    ("the steepest rise of its heat", 20 * 60.0)]
    assert [w["supply_error_max_K"] for w in c["windows"]] == [0.0, pytest.approx(1.5, abs=1e-9)]
    assert c["windows"][0]["peak_supply_error_K"] == 0.0 and c["windows"][1]["peak_supply_error_K"] > 0.1
    assert c["window_reason"] == "the steepest rise of its heat" and c["window_start_s"] == 20 * 60.0
    assert c["supply_error_max_K"] == pytest.approx(1.5, abs=1e-9)
    assert "the steepest rise of its heat; worst of 2 checked" in fast_check_lines(c)[0]


def test_window_is_clipped_to_the_run_and_a_run_without_supply_has_no_check():
    params = load_plant_params("theta")
    res = _result(params.n_cdu, n=300, peak=10)
    fast = lambda: QuasiSteadyPlant(params, step_s=15.0)  # noqa: E731
    c = fast_plant_check(res, fast, fast, 15.0, window_h=6.0)
    assert c["window_start_s"] == 0.0 and c["window_h"] == 5.0  # the whole 5 h run
    assert fast_plant_check(SimpleNamespace(time_s=np.arange(3.0), cdu={}, facility={}), None, None, 15.0) is None
    assert fast_check_lines(None) == []
    assert fast_check_lines({"method": "not measured: no FMU"}) == ["  fast plant vs FMU     not measured: no FMU"]
    with pytest.raises(ValueError, match="whole multiple"):
        fast_plant_check(res, fast, fast, 25.0)
