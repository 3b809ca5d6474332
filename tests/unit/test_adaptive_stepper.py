"""AdaptiveStepper (cooling_fmu.coupling) on a plant whose steps are exact, so every expected value is analytic.

The test plant is one first-order lag per CDU, ``dT/dt = (q/C - (T - T_wb)) / tau`` ... reduced to its closed form:
``T(t + h) = T_inf + (T(t) - T_inf) exp(-h / tau)`` with ``T_inf = T_wb + q_sum / G``, cooling power ``P = k (T -
T_wb)`` and its running total ``E``, integrated in closed form too. A long step of ``n`` communication steps is
then exactly ``n`` short ones, so the adaptive and the fixed stepping must agree to rounding, and the number of
plant calls follows the documented schedule (``n_fine`` single steps after a change, then 1, 2, 4 ... steps).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from cooling_fmu.coupling import AdaptiveStepper, HeldStepPlant, PlantError, StepAverager

TAU, G, K, STEP = 300.0, 2.0e4, 50.0, 15.0


class ExactLag:
    """A HeldStepPlant with closed-form steps: outputs ``P_cooling`` [W], ``E_cooling_out`` [J], ``T`` [K]."""

    output_names = ["P_cooling", "E_cooling_out", "T"]
    output_units = ["W", "J", "K"]
    P_cooling_index = 0

    def __init__(self, max_held_steps: int = 16, fail_on_held_call: int | None = None):
        self.max_held_steps = max_held_steps
        self.fail_on_held_call = fail_on_held_call
        self.held_calls = 0
        self.run_calls = 0

    def _advance(self, q_sum: float, T_wb: float, h: float) -> None:
        T_inf = T_wb + q_sum / G
        d0 = self.T - T_inf
        a = math.exp(-h / TAU)
        # E += int_0^h K (T(s) - T_wb) ds with T(s) = T_inf + d0 exp(-s / tau)
        self.E += K * ((T_inf - T_wb) * h + d0 * TAU * (1.0 - a))
        self.T = T_inf + d0 * a
        self.t += h

    def _y(self, T_wb: float) -> np.ndarray:
        return np.array([K * (self.T - T_wb), self.E, self.T])

    def initialize(self, heat_w, T_wb_K):
        self.T, self.E, self.t = float(T_wb_K), 0.0, 0.0
        return self._y(float(T_wb_K))

    def run(self, heat_w, T_wb_K):
        self.run_calls += 1
        out = np.empty((len(T_wb_K), 3))
        for j, (q, tw) in enumerate(zip(np.asarray(heat_w), np.asarray(T_wb_K))):
            self._advance(float(q.sum()), float(tw), STEP)
            out[j] = self._y(float(tw))
        return out

    def advance_held(self, heat_w, T_wb_K, n_steps):
        self.held_calls += 1
        if self.fail_on_held_call == self.held_calls:
            raise PlantError("test failure", np.zeros((0, 3)))
        assert 1 <= n_steps <= self.max_held_steps
        self._advance(float(np.sum(heat_w)), float(T_wb_K), n_steps * STEP)
        return self._y(float(T_wb_K))


def _blocks():
    """Three constant-heat runs (40, 3 and 25 steps) with a constant wet-bulb: the kernel's broadcast blocks."""
    return [np.full((40, 2), 1.0e5), np.full((3, 2), 3.0e5), np.full((25, 2), 2.0e5)]


def _drive(plant, blocks, T_wb=290.0):
    plant.initialize(blocks[0][0], T_wb)
    return np.concatenate([plant.run(b, np.full(len(b), T_wb)) for b in blocks])


def test_exact_plant_gives_the_fixed_step_result_with_the_documented_call_schedule():
    ref = _drive(ExactLag(), _blocks())
    inner = ExactLag(max_held_steps=16)
    st = AdaptiveStepper(inner, n_fine=4)
    assert isinstance(inner, HeldStepPlant)
    out = _drive(st, _blocks())
    assert out.shape == ref.shape == (68, 3)
    # every long step ends exactly where 1 + 2 + ... single steps would: the totals agree to rounding everywhere the
    # plant itself reported (the ends of long steps and every fine step)
    assert out[-1, 1] == pytest.approx(ref[-1, 1], rel=1e-12)
    assert out[-1, 2] == pytest.approx(ref[-1, 2], rel=1e-12)
    # call schedule by hand. Run of 40: 4 fine (one run() call), then 1, 2, 4, 8, 16 and the last 5 -> 6 more calls.
    # Run of 3: 3 fine. Run of 25: 4 fine, then 1, 2, 4, 8 and the last 6 (16 capped by the run) -> 5 more.
    assert st.calls == (4 + 6) + 3 + (4 + 5)
    assert st.steps == 68
    assert inner.held_calls == (6 - 1) + (5 - 1)  # long steps of 2+ steps; the 1-step ones go through run()


def test_interpolated_totals_give_the_long_step_average_on_each_of_its_steps():
    inner = ExactLag(max_held_steps=16)
    st = AdaptiveStepper(inner, n_fine=4)
    blocks = _blocks()[:1]
    out = _drive(st, blocks)
    avg = StepAverager(st.output_names, STEP)
    avg.start(np.array([K * 0.0, 0.0, 290.0]))
    e = out[:, 1].copy()
    avg.apply(out)
    # steps 11..18 are the long step of 8 (after 4 fine, then 1, 2, 4): one constant power, its energy / (8 * 15 s)
    long8 = slice(4 + 1 + 2 + 4, 4 + 1 + 2 + 4 + 8)
    p = out[long8, 0]
    assert np.ptp(p) < 1e-9 * p[0]
    assert p[0] == pytest.approx((e[long8.stop - 1] - e[long8.start - 1]) / (8 * STEP), rel=1e-12)
    # the summed step averages give the plant's own total
    assert (out[:, 0].sum() * STEP) == pytest.approx(e[-1], rel=1e-12)


def test_plant_without_long_steps_is_stepped_one_step_at_a_time():
    class Plain(ExactLag):
        advance_held = None

    st = AdaptiveStepper(Plain(), n_fine=4)
    assert st.max_held == 1
    ref = _drive(ExactLag(), _blocks())
    np.testing.assert_array_equal(_drive(st, _blocks()), ref)


def test_cap_below_the_plant_limit_and_bad_arguments():
    assert AdaptiveStepper(ExactLag(max_held_steps=46), max_held=16).max_held == 16
    assert AdaptiveStepper(ExactLag(max_held_steps=8), max_held=16).max_held == 8
    with pytest.raises(ValueError, match="n_fine"):
        AdaptiveStepper(ExactLag(), n_fine=0)
    with pytest.raises(ValueError, match="growth"):
        AdaptiveStepper(ExactLag(), growth=1)


def test_failure_in_a_long_step_keeps_the_steps_completed_before_it():
    inner = ExactLag(max_held_steps=16, fail_on_held_call=2)  # the long step of 4 (after 4 fine, 1, then 2)
    st = AdaptiveStepper(inner, n_fine=4)
    st.initialize(np.full(2, 1e5), 290.0)
    with pytest.raises(PlantError) as ei:
        st.run(np.full((40, 2), 1e5), np.full(40, 290.0))
    assert ei.value.completed_outputs.shape == (4 + 1 + 2, 3)
    ref = _drive(ExactLag(), [np.full((7, 2), 1e5)])
    np.testing.assert_allclose(ei.value.completed_outputs[-1], ref[-1], rtol=1e-12)
