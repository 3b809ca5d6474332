"""Adaptive plant stepping (issue 16 item 2) against a 0.25 s fixed-step reference, on a week of the main job.

The main job's load (ALCF Theta 2022, EASY, from day 181) for 7 days (no drain after the window), on the Theta-like
system and its 6-CDU plant (the smallest shipped plant that carries the main job; the 0.25 s reference is 2.42
million FMU steps, under half a minute with the FMU's C loop), Chicago weather. The reference is the same FMU at a
0.25 s communication step (one Heun sub-step each, heat resolved to the trace's whole seconds). Target (issue 16):
relative error in the liquid plant's cooling energy <= 1e-4. With the FMU's Heun sub-steps (build.install_integrator)
measured: fixed 15 s 2.1e-6, adaptive with 60 s long steps 1.6e-6, 240 s 5.3e-6 (docs/cooling.md; forward Euler
gave 3.9e-5, 2.0e-4, 7.1e-4 on this plant). The test holds the default to 1e-5 and every scheme to the target,
and PUE to 1e-5.
"""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from scheduler_sim.app.config import RunConfig

pytestmark = [pytest.mark.fmu, pytest.mark.slow]


def _week(tmp_path, name, **cooling):
    ov = {"trace.window_start_days": 181.0, "trace.window_days": 7.0, "output.max_drain_days": 1e-6,
          "output.progress": False, "output.interval_s": 60.0}
    ov.update({f"cooling.{k}": v for k, v in cooling.items()})
    cfg = RunConfig().with_overrides(ov)
    out = tmp_path / f"{name}.h5"
    from scheduler_sim.app import runner

    built, orig = [], runner.build_plant
    runner.build_plant = lambda *a, **k: built.append(orig(*a, **k)) or built[-1]
    try:
        r = runner.run_one(cfg, out, progress=False)
    finally:
        runner.build_plant = orig
    with h5py.File(out, "r") as f:
        p = f["timeseries/facility/P_cooling_W"][...]
        t = f["timeseries/time_s"][...]
        r.T_sec_sup_peak_K = np.max(f["timeseries/cdu/T_sec_sup"][...], axis=0)  # per CDU, over the week
    r.plant_calls = getattr(built[-1], "calls", None) or r.info["cooling_steps"]  # one per step when fixed
    return r, p, t


def test_week_of_the_main_job_within_1e_4_of_a_quarter_second_reference(tmp_path):
    ref, p_ref, t_ref = _week(tmp_path, "ref", step_s=0.25, stepping="fixed")
    fixed, p_fix, t_fix = _week(tmp_path, "fixed", step_s=15.0, stepping="fixed")
    ada, p_ada, t_ada = _week(tmp_path, "adaptive", step_s=15.0, stepping="adaptive")  # long steps <= 240 s
    a60, _, _ = _week(tmp_path, "a60", step_s=15.0, stepping="adaptive", max_step_s=60.0)
    E_ref = ref.summary["E_cooling_J"]
    assert E_ref > 1e10  # ~14 GJ: a plant that did its work

    def err(r):
        return abs(r.summary["E_cooling_J"] - E_ref) / E_ref

    assert err(fixed) <= 1e-5  # the default scheme, 2.1e-6 measured (forward Euler: 3.9e-5)
    assert err(a60) <= 1e-4 and err(ada) <= 1e-4  # the opt-in schemes meet the target too
    # under the plant's 60 s cell stager a long step ends on each of its sample instants (AdaptiveStepper._to_sample:
    # the stager decides at the instants and on the outputs of a fixed step), so the 240 s cap takes the 60 s plan
    assert ada.summary["E_cooling_J"] == a60.summary["E_cooling_J"] and ada.plant_calls == a60.plant_calls
    for r in (fixed, a60, ada):
        assert abs(r.summary["PUE"] - ref.summary["PUE"]) / ref.summary["PUE"] <= 1e-5
    # the adaptive scheme is no free lunch: it differs from the fixed 15 s run (long steps were taken) ...
    assert ada.summary["E_cooling_J"] != fixed.summary["E_cooling_J"]
    # ... on the same output grid: same whole number of 15 s steps, same interval times
    # (the run ends on the first whole 60 s interval after window + drain: 7 days and one interval of 4 steps)
    assert ada.info["cooling_steps"] == fixed.info["cooling_steps"] == 7 * 86400 // 15 + 4
    assert ref.info["cooling_steps"] == (7 * 86400 // 15 + 4) * 60
    np.testing.assert_array_equal(t_ada, t_fix)
    np.testing.assert_array_equal(t_ada, t_ref)
    # and its interval series integrate to its energy total (the long steps' energy spread exactly over the grid)
    for r, p in ((ada, p_ada), (fixed, p_fix), (ref, p_ref)):
        assert p.sum() * 60.0 == pytest.approx(r.summary["E_cooling_J"], rel=1e-12)
    # the facility overheads follow the same grid: PUE within the same tolerance of the reference
    assert abs(ada.summary["PUE"] - ref.summary["PUE"]) / ref.summary["PUE"] <= 1e-4
    # issue 26 item 2 on plant v5: >= 3x fewer plant evaluations than fixed 15 s (measured 5,911 vs 40,324 calls),
    # every CDU's supply peak within 0.2 K of the reference's (measured 0.192 K; fixed 15 s 0.191 K: the 15 s
    # step-average heat, not the long steps) and within 0.01 K of fixed 15 s
    assert fixed.plant_calls == fixed.info["cooling_steps"] and ada.plant_calls * 3 <= fixed.plant_calls
    assert np.max(np.abs(ada.T_sec_sup_peak_K - ref.T_sec_sup_peak_K)) <= 0.2
    assert np.max(np.abs(ada.T_sec_sup_peak_K - fixed.T_sec_sup_peak_K)) <= 0.01
