"""The twin with cooling in its horizon (issue #25 item 5): rollouts carry the quasi-steady plant.

Reference: the main run itself. A rollout of the active policy reproduces the main run's schedule inside its
horizon (tests/integration/test_twin.py), so with the run's own fast plant and wet-bulb, on the run's 15 s step,
its cooling and facility energy must be the main run's over the same interval (the main run's series integrated
over ``[t, t + H]``); the plant's running totals are trapezoidal where the rollout sums steady powers, and the
interval edges are cut inside 60 s output intervals, hence the 1e-5 bound (measured 1.9e-6).
"""

from __future__ import annotations

import numpy as np
import pytest

from cooling_fmu.params import load_plant_params
from cooling_fmu.quasisteady import QuasiSteadyPlant
from power import load_system
from scheduler_sim.app.config import RunConfig
from scheduler_sim.app.runner import _draw_job_power, build_weather, run_one, simulation_config
from scheduler_sim.kernel.lookahead import RolloutCooling
from scheduler_sim.kernel.simulation import Simulation
from scheduler_sim.policies import BasePolicy, make_policy

pytestmark = [pytest.mark.slow]

H = 6 * 3600.0


class _Probe(BasePolicy):
    """EASY that, at its first pass after ``t_probe``, rolls EASY out of a snapshot with the given cooling."""

    name = "probe"

    def __init__(self, t_probe: float, cooling: list[RolloutCooling]) -> None:
        self.inner, self.t_probe, self.cooling, self.scores = make_policy("easy"), t_probe, cooling, None

    def bind(self, queue_names, account_names):
        self.inner.bind(queue_names, account_names)

    def job_ended(self, job, view):
        self.inner.job_ended(job, view)

    def schedule(self, view):
        if self.scores is None and view.now_s >= self.t_probe:
            self.t = view.now_s
            snap = view.lookahead.snapshot()
            self.scores = [snap.rollout(self.inner, self.t + H, c) for c in self.cooling]
        return self.inner.schedule(view)


def _integral(res, name: str, a: float, b: float) -> float:
    """Energy of the interval-average series ``name`` over [a, b] [J] (60 s intervals starting at time_s)."""
    lo = res.time_s
    hi = lo + (lo[1] - lo[0])
    return float((res.facility[name] * np.clip(np.minimum(hi, b) - np.maximum(lo, a), 0.0, None)).sum())


def test_rollout_with_the_fast_plant_gives_the_main_runs_cooling_energy():
    cfg = RunConfig.model_validate({"trace": {"window_start_days": 181.0, "window_days": 1.0},
                                    "cooling": {"model": "fast"}, "output": {"progress": False}})
    system = load_system("theta")
    from dataloaders.registry import load_trace

    loaded = load_trace(cfg.trace.resolved_path(), max_nodes=system.n_nodes, cores_per_node=1)
    jobs, _ = _draw_job_power(cfg, loaded.jobs, system)
    wb = build_weather(cfg, float(jobs.attrs["time_origin_unix_s"]), system)[0]
    params = load_plant_params(system.cooling_plant)
    probe = _Probe(181.3 * 86400.0, [RolloutCooling(QuasiSteadyPlant(params, step_s=15.0), wb, 15.0),
                                     RolloutCooling(QuasiSteadyPlant(params, step_s=300.0), wb, 300.0), None])
    res = Simulation(jobs, system, probe, simulation_config(cfg, system), plant=QuasiSteadyPlant(params, step_s=15.0),
                     wet_bulb_K=wb).run()
    fine, coarse, frozen = probe.scores
    a, b = probe.t, probe.t + H
    e_it, e_fac = _integral(res, "P_it_W", a, b), _integral(res, "P_facility_W", a, b)
    assert fine["started"] > 5 and e_fac - e_it > 1e8  # a loaded machine, ~0.2 MWh of cooling and overheads
    assert fine["E_it_J"] == pytest.approx(e_it, rel=1e-5)
    # plant v5: the run's plant takes the air side's heat into the tower water (issue 22 item 4), and so does the
    # rollout (kernel/lookahead.py cooled_energy); without it the rollout was 1.1e-3 low
    rel = fine["E_cooling_J"] / (e_fac - e_it) - 1.0
    print(f"rollout vs run, cooling + overheads: {rel:+.2e}")
    assert fine["E_cooling_J"] == pytest.approx(e_fac - e_it, rel=1e-5)
    assert fine["E_facility_J"] == pytest.approx(e_fac, rel=1e-4)
    # the default 300 s rollout step: the steady plant on 5-minute averages
    assert coarse["E_cooling_J"] == pytest.approx(e_fac - e_it, rel=3e-3)
    # the frozen ratio (the plant's last step) is what the twin saw before: not the horizon's cooling
    assert frozen["E_facility_J"] != pytest.approx(e_fac, rel=1e-5)


def test_run_with_twin_cooling_fast_scores_cooled_rollouts(tmp_path):
    ov = {"trace.window_start_days": 181.0, "trace.window_days": 1.0, "cooling.model": "fast",
          "scheduler.policy": "twin", "scheduler.twin.period_s": 21600.0, "output.progress": False,
          "output.max_drain_days": 0.5}
    frozen = run_one(RunConfig().with_overrides(ov), None, progress=False)
    cfg = RunConfig().with_overrides({**ov, "scheduler.twin.cooling": "fast"})
    cooled = run_one(cfg, tmp_path / "twin.h5", progress=False)
    df, dc = frozen.info["twin_decisions"], cooled.info["twin_decisions"]
    assert len(dc) == len(df) >= 4 and dc[0][0] == df[0][0]
    # the first decision sees the same state: the cooled scores differ from the frozen ones by the energy term only
    assert all(abs(jc - jf) > 0 for jc, jf in zip(dc[0][3], df[0][3]))
    assert '"cooling": "fast"' in cfg.to_json() and '"plant_step_s"' in cfg.to_json()
    assert '"plant_step_s"' not in RunConfig().with_overrides(ov).to_json()  # defaults: JSON as before
