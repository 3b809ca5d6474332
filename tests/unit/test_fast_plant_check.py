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

    def __init__(self, plant, dT, k):
        self.p, self.dT, self.k = plant, dT, k
        self.output_names, self.P_cooling_index = plant.output_names, plant.P_cooling_index
        self.cols = [i for i, n in enumerate(plant.output_names) if n.startswith("T_sec_sup")]
        self.calls = []

    def initialize(self, heat, twb):
        return self.p.initialize(heat, twb)

    def run(self, heat, twb):
        self.calls.append(heat.shape[0])
        out = self.p.run(heat, twb).copy()
        out[:, self.cols] += self.dT
        out[:, self.P_cooling_index] *= self.k
        return out


def _result(n_cdu, n=24 * 60, peak=900):
    t = np.arange(n) * 60.0
    heat = np.full((n, n_cdu), 1.0e5)
    heat[peak - 30:peak + 30] = 1.6e5  # one hour of high load
    T = np.full((n, n_cdu), 300.0)
    T[peak, 1] = 302.0  # the fast run's hottest interval
    return SimpleNamespace(time_s=t, cdu={"Q_flow_W": heat, "T_sec_sup": T}, facility={"T_wb_K": np.full(n, 290.0)})


def test_same_plant_gives_zero_error_and_a_known_offset_is_measured_exactly():
    params = load_plant_params("theta")
    res = _result(params.n_cdu)
    fast = lambda: QuasiSteadyPlant(params, step_s=15.0)  # noqa: E731
    zero = fast_plant_check(res, fast(), fast(), 15.0, window_h=6.0, warmup_h=2.0)
    assert zero["peak_supply_error_K"] == 0.0 and zero["supply_error_max_K"] == 0.0
    assert zero["cooling_energy_ratio"] == 0.0
    # window: 6 h centred on interval 900 (15 h), i.e. 12 h .. 18 h; warm-up of 2 h stepped, not compared
    assert zero["window_start_s"] == 720 * 60.0 and zero["window_end_s"] == 1080 * 60.0 and zero["window_h"] == 6.0
    ref = _Offset(fast(), dT=-0.75, k=2.0)  # the reference runs 0.75 K colder and draws twice the power
    c = fast_plant_check(res, ref, fast(), 15.0, window_h=6.0, warmup_h=2.0)
    assert ref.calls == [(8 * 60) * 4]  # 8 h (2 h warm-up + 6 h) of 15 s steps from 60 s intervals
    assert c["peak_supply_error_K"] == pytest.approx(0.75, abs=1e-9)
    assert c["supply_error_max_K"] == pytest.approx(0.75, abs=1e-9)
    assert c["supply_error_mean_K"] == pytest.approx(0.75, abs=1e-9)
    assert c["cooling_energy_ratio"] == pytest.approx(-0.5, rel=1e-12)
    assert c["peak_cooling_fmu_W"] == pytest.approx(2 * c["peak_cooling_fast_W"], rel=1e-12)
    lines = fast_check_lines(c)
    assert len(lines) == 2 and "(+0.75 K)" in lines[0] and "max 0.75 K" in lines[0]


def test_window_is_clipped_to_the_run_and_a_run_without_supply_has_no_check():
    params = load_plant_params("theta")
    res = _result(params.n_cdu, n=300, peak=10)
    fast = lambda: QuasiSteadyPlant(params, step_s=15.0)  # noqa: E731
    c = fast_plant_check(res, fast(), fast(), 15.0, window_h=6.0)
    assert c["window_start_s"] == 0.0 and c["window_h"] == 5.0  # the whole 5 h run
    assert fast_plant_check(SimpleNamespace(time_s=np.arange(3.0), cdu={}, facility={}), None, None, 15.0) is None
    assert fast_check_lines(None) == []
    assert fast_check_lines({"method": "not measured: no FMU"}) == ["  fast plant vs FMU     not measured: no FMU"]
    with pytest.raises(ValueError, match="whole multiple"):
        fast_plant_check(res, fast(), fast(), 25.0)
