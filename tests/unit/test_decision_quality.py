"""Error to decision quality: hindsight optimum by exhaustive search, heuristic gaps, the twin with wrong knowledge."""

import itertools

import numpy as np
import pytest

from scheduler_sim.app.decision_quality import (NoisyTwinPolicy, heuristic_gaps, hindsight_optimum, perturb_fork,
                                                serial_schedule)


def test_optimum_of_a_hand_instance():
    # 2 nodes; A (2 nodes, 10 s), B and C (1 node, 1 s each), all at t = 0.
    # FCFS A, B, C: A 0-10, B and C at 10 -> total wait 20. Optimal: B, C at 0, A at 1 -> total wait 1.
    W, order = hindsight_optimum([0, 0, 0], [2, 1, 1], [10, 1, 1], 2)
    assert W == 1.0 and order[-1] == 0
    g = heuristic_gaps(np.array([0.0, 0, 0]), np.array([2, 1, 1]), np.array([10.0, 1, 1]), 2,
                       policies=("fcfs", "sjf"))
    assert g["fcfs"]["wait_s"] == 20.0 and g["fcfs"]["gap"] == 19.0
    assert g["sjf"]["wait_s"] == 1.0 and g["sjf"]["gap"] == 0.0


def _instance(seed, n=6, n_nodes=4):
    rng = np.random.default_rng(seed)
    return (np.sort(rng.integers(0, 20, n)).astype(float), rng.integers(1, n_nodes + 1, n),
            rng.integers(1, 15, n).astype(float))


@pytest.mark.parametrize("seed", range(4))
def test_search_equals_brute_force_over_every_order(seed):
    sub, nodes, run = _instance(seed)
    brute = min(float(np.sum(serial_schedule(p, sub, nodes, run, 4) - sub)) for p in itertools.permutations(range(6)))
    assert hindsight_optimum(sub, nodes, run, 4)[0] == brute


@pytest.mark.parametrize("seed", range(4))
def test_serial_schedule_in_arrival_order_is_conservative_backfill(seed):
    """With exact estimates, conservative backfilling places each job, in arrival order, at its earliest slot."""
    sub, nodes, run = _instance(seed, n=7)
    sgs = float(np.sum(serial_schedule(list(np.argsort(sub, kind="stable")), sub, nodes, run, 4) - sub))
    g = heuristic_gaps(sub, nodes, run, 4, policies=("fcfs+conservative",))
    assert g["fcfs+conservative"]["wait_s"] == sgs
    assert g["fcfs+conservative"]["gap"] >= 0.0


def test_every_heuristic_is_at_or_above_the_optimum():
    sub, nodes, run = _instance(11, n=8)
    g = heuristic_gaps(sub, nodes, run, 4)
    assert all(v["gap"] >= 0.0 for k, v in g.items() if k != "optimum")


def test_too_large_instances_are_refused():
    with pytest.raises(ValueError, match="11 jobs, more than the 10"):
        hindsight_optimum(np.zeros(11), np.ones(11), np.ones(11), 2)


def _theta_sim(policy, days=1.0):
    from dataloaders.registry import load_trace
    from power import load_system
    from scheduler_sim.app.config import RunConfig
    from scheduler_sim.app.runner import _draw_job_power, simulation_config
    from scheduler_sim.kernel.simulation import Simulation

    cfg = RunConfig.model_validate({"trace": {"window_start_days": 190.0, "window_days": days},
                                    "cooling": {"model": "off"}, "output": {"progress": False}})
    system = load_system("theta")
    jobs, _ = _draw_job_power(cfg, load_trace(cfg.trace.resolved_path(), max_nodes=system.n_nodes,
                                              cores_per_node=1).jobs, system)
    return Simulation(jobs, system, policy, simulation_config(cfg, system))


def test_twin_without_error_decides_as_the_twin():
    from scheduler_sim.app.twin import TwinPolicy
    a = _theta_sim(TwinPolicy(period_s=3 * 3600.0)).run()
    b = _theta_sim(NoisyTwinPolicy(0.0, 0.0, seed=1, period_s=3 * 3600.0)).run()
    assert [d[2] for d in a.info["twin_decisions"]] == [d[2] for d in b.info["twin_decisions"]]
    assert a.summary["mean_wait_s"] == b.summary["mean_wait_s"]


def test_perturbed_fork_sees_wrong_runtimes_and_arrivals_but_the_main_run_does_not():
    sim = _theta_sim("easy")
    seen = {}

    class Probe(NoisyTwinPolicy):
        def snapshot(self, view):
            snap = view.lookahead.snapshot()
            perturb_fork(snap, np.random.default_rng(0), 0.5, 3600.0)
            base = snap._fork
            seen["fork"], seen["main"], seen["now"] = base.jobdata, sim.jobdata, view.now_s
            seen["heap"] = [e for e in base.state.env._heap if e[1] == 3]
            return super().snapshot(view)

    sim.policy = Probe(0.5, 3600.0, seed=0, period_s=1e9)
    truth = sim.jobdata.runtime.copy()
    sim.run()
    f, m = seen["fork"], seen["main"]
    assert np.array_equal(m.runtime, truth)  # the main run keeps the true runtimes
    pending = ~np.isclose(f.runtime, truth)
    assert pending.sum() > 10
    ratio = f.runtime[pending] / truth[pending]
    assert np.std(np.log(ratio)) == pytest.approx(0.5, rel=0.3)  # log-normal sigma 0.5
    assert all(t >= seen["now"] and t == f.submit[p.job] for t, _, _, p in seen["heap"])
