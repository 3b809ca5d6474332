"""The step function's idle rack-input power counted by idle-share class (issue #26 item 1) against the direct sum
over the idle nodes, at every power change of a real trace (a week of Theta 2022, the embedded trace), and the
exact vector and idle DC power bit for bit those of the whole-machine evaluation (the vector by difference within
1e-12 of it)."""

import numpy as np

from power import load_system
from scheduler_sim.app.cli import main
from scheduler_sim.kernel import stepfunction as sfm
from scheduler_sim.kernel.simulation import Simulation, SimulationConfig
from tests.conftest import make_jobs


def _compare_every_change(monkeypatch):
    """Patch StepFunction.value to compare each dirty evaluation with the reference (no tables) one."""
    original = sfm.StepFunction.value
    seen = {"n": 0, "max_rel": 0.0, "idle_counts": set()}
    refs = {}

    def value(self, st):
        if not st.step.dirty or self._idle_share_W is None:
            return original(self, st)
        ref = refs.setdefault(id(self), sfm.StepFunction(self.chain, self.layout, None))
        v = original(self, st).copy()
        got = (st.step.idle_dc_W, st.step.idle_it_W)
        exact, direct = self.exact(st), ref.exact(st)
        w = direct.vec
        want = (direct.idle_dc_W, direct.idle_it_W)
        assert np.array_equal(exact.vec, w)  # CDU heat, power totals, counts, rack input: bit for bit (exact)
        assert np.allclose(v, w, rtol=1e-12, atol=0.0)  # by difference (kernel.stepfunction)
        assert got == (exact.idle_dc_W, exact.idle_it_W)  # counts by difference: the tables' values bit for bit
        assert got[0] == want[0]  # idle DC power: bit for bit (the table of np.full(k, idle).sum())
        rel = abs(got[1] - want[1]) / want[1] if want[1] else abs(got[1])
        assert rel <= 1e-15, (got, want)
        seen["n"] += 1
        seen["max_rel"] = max(seen["max_rel"], rel)
        seen["idle_counts"].add(int(np.count_nonzero(st.alloc.idle_mask())))
        return v

    monkeypatch.setattr(sfm.StepFunction, "value", value)
    return seen


def test_idle_share_classes_match_direct_sums_on_a_theta_week(monkeypatch, tmp_path):
    """Theta has two idle shares (4,320 nodes at 61.92 W, the 72 nodes of partial rectifier groups at 69.61 W):
    at every power change of the first week of Theta 2022 the counted idle rack-input power is within 1e-15
    (relative) of ``node_it_input_w(node_dc)[idle].sum()``, and everything else is bit for bit."""
    seen = _compare_every_change(monkeypatch)
    rc = main(["run", "--days", "7", "--no-cooling", "--quiet", "--out", str(tmp_path / "w.h5")])
    assert rc in (0, None)
    assert seen["n"] > 350 and len(seen["idle_counts"]) > 50 and 0.0 < seen["max_rel"]
    sf = sfm.StepFunction(*_theta_chain_layout())
    assert sf._minor is not None and sf._minor[0].size == 72 and sf._minor[2].size == 2


def _theta_chain_layout():
    sim = Simulation(make_jobs([(1, 0.0, 1, 60.0, 120.0)]), load_system("theta"), "fcfs",
                     SimulationConfig(window_start_s=0.0, window_s=1e9))
    return sim.chain, sim.layout, None, sim.jobdata.idle_node_power_W


def test_one_idle_share_is_bit_for_bit_on_frontier(monkeypatch):
    """Frontier's nodes all share one idle share: the tabled idle rack-input power is the direct sum bit for bit
    (k equal values summed pairwise), at every power change of a 200-job run."""
    rng = np.random.default_rng(5)
    jobs = make_jobs([(i + 1, float(40 * i), int(rng.integers(1, 3000)), float(rng.integers(60, 5000)), 6000.0)
                      for i in range(200)])
    sim = Simulation(jobs, load_system("frontier"), "fcfs", SimulationConfig(backfill="easy", window_start_s=0.0,
                                                                              window_s=1e9))
    assert sim.stepfn._minor is None and np.unique(sim.stepfn._idle_share_W).size == 1
    seen = _compare_every_change(monkeypatch)
    assert sim.run().info["complete"]
    assert seen["n"] > 150 and seen["max_rel"] == 0.0


def test_evaluate_into_is_evaluate_bit_for_bit():
    """:meth:`PowerChain.evaluate_into` writes the values of :meth:`PowerChain.evaluate` (Theta and Frontier, random
    node powers including zeros), and refuses a negative power and a non-affine chain with the same errors."""
    import pytest

    from power import PowerChain

    rng = np.random.default_rng(3)
    for name in ("theta", "frontier"):
        s = load_system(name)
        ch = PowerChain(s)
        for _ in range(20):
            p = rng.uniform(0.0, 600.0, s.n_nodes)
            p[rng.random(s.n_nodes) < 0.1] = 0.0
            r = ch.evaluate(p)
            cdu, tot, rack = np.empty(s.n_cdus), np.empty(5), np.empty(s.n_racks)
            ch.evaluate_into(p, cdu, tot, rack)
            assert np.array_equal(cdu, r.cdu_heat_W) and np.array_equal(rack, r.rack_input_W)
            assert tot.tolist() == [r.node_dc_W, r.sivoc_loss_W, r.rectifier_loss_W, r.rack_overhead_W, r.it_input_W]
        p[5] = -1.0
        with pytest.raises(ValueError, match=">= 0 W"):
            ch.evaluate_into(p, cdu, tot, rack)
        with pytest.raises(ValueError, match="affine path"):
            PowerChain(s, allow_affine=False).evaluate_into(np.zeros(s.n_nodes), cdu, tot, rack)
