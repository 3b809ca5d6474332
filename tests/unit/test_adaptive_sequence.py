"""AdaptiveStepper's plant steps in one plant call (issue 26 item 2): ``advance_held_sequence`` makes the same plant
steps (fine steps and long steps, each run's heat) as one plant call per fine block and one ``advance_held`` call per
long step, so the outputs are bit-identical to the per-call loop, the call schedule is the documented one, and a
failure keeps the steps completed before it.

Two plants: the exact first-order lag of ``test_adaptive_stepper.py`` (closed-form steps), and the Theta plant's FMU
under its supervisory stager (a varying wet-bulb, dry-bulb and air-side heat, so the long steps' means and the
stager's decisions are exercised)."""

from __future__ import annotations

import numpy as np
import pytest

from cooling_fmu.coupling import AdaptiveStepper, PlantError

from tests.unit.test_adaptive_stepper import ExactLag, _blocks, _drive


class ExactLagSequence(ExactLag):
    """ExactLag with the sequence call: one plain step or one ``advance_held`` per long step, failing as asked."""

    held_sequence_available = True

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.sequence_calls = 0

    def advance_held_sequence(self, heat_w, T_wb_K, n_steps):
        self.sequence_calls += 1
        ys = []
        heat = np.broadcast_to(heat_w, (len(T_wb_K), np.shape(heat_w)[-1]))
        for h, tw, n in zip(heat, T_wb_K, n_steps):
            try:
                ys.append(self.run(h[None, :], np.array([tw]))[0] if n == 1
                          else self.advance_held(h, float(tw), int(n)))
            except PlantError as exc:
                exc.held_outputs = np.array(ys).reshape(len(ys), 3)
                raise
        return np.array(ys)


def test_sequence_gives_the_per_call_outputs_bit_for_bit_and_the_same_schedule():
    ref_plant, seq_plant = ExactLag(max_held_steps=16), ExactLagSequence(max_held_steps=16)
    ref_st, seq_st = AdaptiveStepper(ref_plant, n_fine=4), AdaptiveStepper(seq_plant, n_fine=4)
    ref, out = _drive(ref_st, _blocks()), _drive(seq_st, _blocks())
    np.testing.assert_array_equal(out, ref)
    # the schedule of test_adaptive_stepper: run of 40: 4 fine + 1, 2, 4, 8, 16, 5; run of 3: 3 fine; run of 25:
    # 4 fine + 1, 2, 4, 8, 6 -> the same 21 plant steps, in one sequence call per AdaptiveStepper.run call (3 blocks)
    assert seq_st.calls == ref_st.calls == (4 + 6) + 3 + (4 + 5)
    assert seq_st.steps == ref_st.steps == 68
    assert seq_plant.held_calls == ref_plant.held_calls == (6 - 1) + (5 - 1)
    assert seq_plant.sequence_calls == 3


def test_folded_kernel_blocks_give_the_unfolded_calls_outputs_bit_for_bit():
    # the kernel hands an adaptive plant the step in progress and the run after it in ONE call (StepIntegrator
    # fold=True, as for a fixed-step plant): the plan cuts runs at every heat change, so it is the plan of one call
    # per part, and the outputs and plant steps are those of the unfolded calls
    first1, run1 = np.full((1, 2), 1.5e5), np.full((40, 2), 1.0e5)
    first2, run2 = np.full((1, 2), 2.2e5), np.full((25, 2), 2.0e5)
    unfolded = [first1, run1, first2, run2]
    folded = [np.concatenate([first1, run1]), np.concatenate([first2, run2])]
    a, b = ExactLagSequence(max_held_steps=16), ExactLagSequence(max_held_steps=16)
    sa, sb = AdaptiveStepper(a, n_fine=4), AdaptiveStepper(b, n_fine=4)
    np.testing.assert_array_equal(_drive(sb, folded), _drive(sa, unfolded))
    # run of 1: 1 fine; run of 40: 4 fine + 1, 2, 4, 8, 16, 5; run of 1; run of 25: 4 fine + 1, 2, 4, 8, 6
    assert sa.calls == sb.calls == 1 + (4 + 6) + 1 + (4 + 5) and sa.steps == sb.steps == 67
    assert a.held_calls == b.held_calls == (6 - 1) + (5 - 1)
    assert (a.sequence_calls, b.sequence_calls) == (4, 2)


def test_failure_inside_a_sequence_keeps_the_steps_completed_before_it():
    # the long step of 4 fails (after 4 fine steps and the long steps of 1 and 2): 7 steps completed, as per call
    for plant in (ExactLag(max_held_steps=16, fail_on_held_call=2),
                  ExactLagSequence(max_held_steps=16, fail_on_held_call=2)):
        st = AdaptiveStepper(plant, n_fine=4)
        st.initialize(np.full(2, 1e5), 290.0)
        with pytest.raises(PlantError) as ei:
            st.run(np.full((40, 2), 1e5), np.full(40, 290.0))
        assert ei.value.completed_outputs.shape == (4 + 1 + 2, 3)
        assert st.steps == 7 and st.calls == 4 + 2
    ref = _drive(ExactLag(), [np.full((7, 2), 1e5)])
    np.testing.assert_allclose(ei.value.completed_outputs[-1], ref[-1], rtol=1e-12)


@pytest.mark.fmu
def test_fmu_long_steps_in_one_call_equal_one_call_per_long_step_bit_for_bit(fmu_cache):
    from cooling_fmu.params import load_plant_params
    from cooling_fmu.plant import CoolingPlant
    from cooling_fmu.supervisory import StagedPlant

    class PerCall(StagedPlant):  # the loop of one advance_held call per long step (before)
        held_sequence_available = False

    p = load_plant_params("theta")
    q0 = np.full(p.n_cdu, 0.3 * p.cdu.Q_flow_nominal_W)
    blocks = [3, 40, 7, 961, 2, 300, 13]
    rng = np.random.default_rng(11)
    heats = [np.tile(q0 * rng.uniform(0.5, 3.0, p.n_cdu), (n, 1)) for n in blocks]
    res = []
    with CoolingPlant(p, step_s=15.0, cache_dir=fmu_cache) as a, CoolingPlant(p, step_s=15.0, cache_dir=fmu_cache) as b:
        for staged in (StagedPlant(a), PerCall(b)):
            assert staged.held_sequence_available == (type(staged) is StagedPlant)  # the path each one takes
            st = AdaptiveStepper(staged, n_fine=4, max_held=16)
            outs, k = [st.initialize(q0, 290.0)[None, :]], 0
            for q in heats:
                n = q.shape[0]
                tw = 289.0 + 8.0 * np.sin(np.arange(k, k + n) / 400.0)  # the wet-bulb moves inside long steps
                outs.append(st.run(q, tw, T_db_K=tw + 6.0, Q_air_side_W=np.full(n, 5e3)))
                k += n
            res.append((np.concatenate(outs), st.calls, list(staged.switch_times_s), staged.stager.n_on))
    (ya, ca, swa, na), (yb, cb, swb, nb) = res
    assert ya.shape == (1 + sum(blocks), len(a.output_names))
    np.testing.assert_array_equal(ya, yb)
    assert ca == cb < sum(blocks) / 3  # the same plant steps, over 3x fewer than fixed 15 s
    assert swa == swb and na == nb
    assert len(swa) >= 1  # the stager switched during long steps


@pytest.mark.fmu
def test_fmu_failure_in_a_sequence_reports_the_long_steps_completed_before_it(fmu_cache, monkeypatch):
    from cooling_fmu.adapter import FMUError
    from cooling_fmu.params import load_plant_params
    from cooling_fmu.plant import CoolingPlant, PlantStepError, advance_held_sequence
    from cooling_fmu.supervisory import StagedPlant

    p = load_plant_params("theta")
    q0 = np.full(p.n_cdu, 0.3 * p.cdu.Q_flow_nominal_W)
    with CoolingPlant(p, step_s=15.0, cache_dir=fmu_cache) as a:
        staged = StagedPlant(a)
        staged.initialize(q0, 290.0)
        ok = advance_held_sequence(a, q0, np.full(2, 290.0), np.array([2, 4]), staged)  # 6 steps
        assert ok.shape == (2, len(a.output_names)) and a.time_s == 6 * 15.0
        real = a._stepper.held_staged

        def fails_at_second_row(u, t0_s, k0, n_steps, step_s, out, schedule, to_si):
            done, _ = real(u[:1], t0_s, k0, n_steps[:1], step_s, out[:1], schedule, to_si)
            return done, FMUError("fmi2DoStep", 3, t0_s + (k0 + int(n_steps[0])) * step_s, {}, [])

        monkeypatch.setattr(a._stepper, "held_staged", fails_at_second_row)
        with pytest.raises(PlantStepError) as ei:
            advance_held_sequence(a, q0, np.full(3, 290.0), np.array([8, 16, 16]), staged)
        assert ei.value.completed_outputs.shape == (0, len(a.output_names))
        assert ei.value.held_outputs.shape == (1, len(a.output_names))  # the long step of 8 completed
        assert a.time_s == (6 + 8) * 15.0  # the plant stays after it
        assert ei.value.time_s == (6 + 8) * 15.0
        with pytest.raises(ValueError, match="n_steps must be in 1"):
            advance_held_sequence(a, q0, np.full(1, 290.0), np.array([a.max_held_steps + 1]), staged)


class _Recording:
    """Mix-in for the exact lag: a generated plant's switch (``own_model``, ``params.chiller``) and a 4-step stager's
    ``sample_steps`` / ``steps_done``; every plant step is recorded as (first step, steps, wet-bulbs given)."""

    own_model = True
    params = type("P", (), {"chiller": type("C", (), {"enabled": True, "T_wb_switch_K": 291.15})()})()
    sample_steps = 4

    def initialize(self, heat_w, T_wb_K):
        self.steps_done, self.plan = 0, []
        return super().initialize(heat_w, T_wb_K)

    def run(self, heat_w, T_wb_K):
        for tw in np.asarray(T_wb_K):
            self.plan.append((self.steps_done, 1, float(tw)))
            self.steps_done += 1
        return super().run(heat_w, T_wb_K)

    def advance_held(self, heat_w, T_wb_K, n_steps):
        self.plan.append((self.steps_done, int(n_steps), float(T_wb_K)))
        self.steps_done += int(n_steps)
        return super().advance_held(heat_w, T_wb_K, n_steps)


class _RecordingLag(_Recording, ExactLag):
    pass


class _RecordingLagSequence(_Recording, ExactLagSequence):
    pass


@pytest.mark.parametrize("cls", [_RecordingLag, _RecordingLagSequence])
def test_long_steps_end_on_the_stager_samples_and_never_straddle_the_chiller_switch(cls):
    """A long step covers no sample instant of the stager (every 4 steps) and no crossing of the trim chiller's
    wet-bulb switch (291.15 K); a crossing restarts the fine steps, as a heat change does."""
    plant = cls(max_held_steps=16)
    st = AdaptiveStepper(plant, n_fine=4)
    tw = np.concatenate([np.linspace(290.0, 291.0, 30), np.linspace(291.3, 292.0, 38)])  # crosses at row 30
    st.initialize(np.full(2, 1e5), 290.0)
    st.run(np.full((68, 2), 1e5), tw)
    assert sum(n for _, n, _ in plant.plan) == 68
    longs = [(k, n) for k, n, _ in plant.plan if n > 1]
    assert longs and all(k // 4 == (k + n - 1) // 4 for k, n in longs)  # inside one sample period each
    assert all(not (k < 30 < k + n) for k, n in longs)  # none across the switch
    assert [(k, n) for k, n, _ in plant.plan if 30 <= k < 34] == [(30, 1), (31, 1), (32, 1), (33, 1)]  # fine again
    # without a stager or a switch (a site plant), the long steps grow to the cap as before: 4 fine, 1, 2, 4, 8, 16
    free = ExactLag(max_held_steps=16)
    st2 = AdaptiveStepper(free, n_fine=4)
    st2.initialize(np.full(2, 1e5), 290.0)
    st2.run(np.full((35, 2), 1e5), tw[:35])
    assert st2.calls == 4 + 5 and free.held_calls == 4


@pytest.mark.fmu
def test_fmu_adaptive_under_its_stager_across_the_chiller_switch_is_the_fixed_step_run(fmu_cache):
    """One hour after a 30 -> 80 % heat step, the wet-bulb rising 290 -> 296 K across the chiller's 291.15 K switch,
    the Theta plant under its stager: adaptive within 1e-4 of fixed 15 s in cooling energy and 1e-3 in fan energy.
    Long steps across the switch and over the stager's samples gave -2.5e-2 and +1.15e-1 (the chiller enabled for a
    whole long step by its mean wet-bulb; cells added up to 240 s late)."""
    from cooling_fmu.params import load_plant_params
    from cooling_fmu.plant import CoolingPlant
    from cooling_fmu.supervisory import StagedPlant

    p = load_plant_params("theta")
    q = p.cdu.Q_flow_nominal_W
    tw = np.linspace(290.0, 296.0, 240)
    ends = []
    for adaptive in (False, True):
        with CoolingPlant(p, step_s=15.0, cache_dir=fmu_cache) as plant:
            st = StagedPlant(plant)
            st = AdaptiveStepper(st, max_held=16) if adaptive else st
            st.initialize(np.full(6, 0.3 * q), 290.0)
            out = st.run(np.full((240, 6), 0.8 * q), tw)
            ends.append(dict(zip(plant.output_names, out[-1])))
    (fx, ad) = ends
    assert fx["P_chiller"] > 0.0  # the chiller was enabled on the way
    assert abs(ad["E_cooling_out"] / fx["E_cooling_out"] - 1.0) < 1e-4
    assert abs(ad["E_fan_out"] / fx["E_fan_out"] - 1.0) < 1e-3
