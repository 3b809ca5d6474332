"""The power step function by difference (issue #26 item 1) against its exact evaluation from every node, at every
evaluation: on a real trace (Theta 2022, the embedded trace, 14 days), on a partitioned system with a sharing
partition (power by share, co-tenants re-charged), and with a co-located partition whose power changes (serving).

Within 1e-12 (relative, per column) for the power columns, and for the idle and partition powers (relative to the
value, or to the machine's total DC or IT power when it is smaller: every node may be busy); the counts, the busy
nodes per partition and (with tables) the idle DC and rack-input powers are equal; the sums restart from an exact
evaluation after ``RESUM_EVERY`` evaluations or ``RESUM_NODES`` node updates by difference.
"""

from __future__ import annotations

import numpy as np
import pytest

from scheduler_sim.app.cli import main
from scheduler_sim.kernel import stepfunction as sfm
from scheduler_sim.kernel.jobdata import NodePowerProfile
from scheduler_sim.kernel.simulation import Simulation, SimulationConfig
from tests.conftest import make_jobs

TOL = 1e-12


def _compare_every_evaluation(monkeypatch, tables_exact: bool = True) -> dict:
    """Patch StepFunction.value: after each evaluation, compare the state's value with :meth:`exact`."""
    original = sfm.StepFunction.value
    seen = {"n": 0, "diff": 0, "max_rel": 0.0, "max_rel_idle": 0.0}

    def value(self, st):
        dirty = st.step.dirty
        by_diff = dirty and st.step.diff is not None and st.step.diff.n_diff < self.resum_every
        v = original(self, st)
        if not dirty:
            return v
        ref = self.exact(st)
        lay = self.layout
        counts = slice(lay.counts, lay.rack)
        assert np.array_equal(v[counts], ref.vec[counts])
        assert np.array_equal(v[lay.part_busy:], ref.vec[lay.part_busy:])
        power = np.r_[0:lay.counts, lay.rack:lay.part_busy]
        scale = np.maximum(np.abs(ref.vec[power]), 1e-300)
        rel = float(np.max(np.abs(v[power] - ref.vec[power]) / scale))
        assert rel <= TOL, rel
        got = (st.step.idle_dc_W, st.step.idle_it_W, st.step.part_dc_W, st.step.part_it_W)
        want = (ref.idle_dc_W, ref.idle_it_W, ref.part_dc_W, ref.part_it_W)
        if tables_exact and self._idle_share_W is not None and not self._direct:
            assert got[:2] == want[:2]  # integer counts by class: the exact evaluation's values bit for bit
        # an idle or partition sum may be 0 (every node busy): relative to the machine's total power then
        total = (ref.vec[lay.power("P_node_dc_W")], ref.vec[lay.it]) * 2
        rel_idle = max(abs(g - w) / max(abs(w), m) for g, w, m in zip(got, want, total))
        assert rel_idle <= TOL, (got, want)
        seen["n"] += 1
        seen["diff"] += int(by_diff and bool(st.step.diff) and st.step.diff.n_diff > 0)
        seen["max_rel"] = max(seen["max_rel"], rel)
        seen["max_rel_idle"] = max(seen["max_rel_idle"], rel_idle)
        return v

    monkeypatch.setattr(sfm.StepFunction, "value", value)
    return seen


def test_difference_within_1e12_of_exact_on_theta_2022_month(monkeypatch, tmp_path):
    """14 days of Theta 2022 (EASY, no cooling): at every evaluation the value by difference is within 1e-12 of
    the exact one (the idle powers bit for bit), most evaluations are by difference, and the drift is real but
    small (the exact re-sum every 256 keeps it so)."""
    monkeypatch.setattr(sfm, "DIFF_MAX_NODES", 10**9)  # Theta's jobs take >= 128 nodes: by difference whatever the size
    seen = _compare_every_evaluation(monkeypatch)
    rc = main(["run", "--days", "14", "--no-cooling", "--quiet", "--out", str(tmp_path / "m.h5")])
    assert rc in (0, None)
    assert seen["n"] > 500 and seen["diff"] > 0.6 * seen["n"]
    assert 0.0 < seen["max_rel"] <= TOL
    print(f"theta 14 d: {seen['n']} evaluations, {seen['diff']} by difference, max rel {seen['max_rel']:.2e}")


def _counters_of_a_run(monkeypatch) -> list:
    """(evaluations by difference, node updates) since the last exact evaluation, after each evaluation of a
    700-job EASY run on Theta with jobs of 1-39 nodes."""
    from power import load_system

    rng = np.random.default_rng(8)
    jobs = make_jobs([(i + 1, float(20 * i), int(rng.integers(1, 40)), float(rng.integers(60, 3000)), 4000.0)
                      for i in range(700)])
    sim = Simulation(jobs, load_system("theta"), "fcfs", SimulationConfig(backfill="easy", window_start_s=0.0,
                                                                           window_s=1e9))
    seen = []
    original = sfm.StepFunction.value

    def value(self, st):
        v = original(self, st)
        seen.append((st.step.diff.n_diff, st.step.diff.n_nodes))
        return v

    monkeypatch.setattr(sfm.StepFunction, "value", value)
    assert sim.run().info["complete"]
    return seen


def test_resum_after_256_evaluations_or_1024_node_updates(monkeypatch):
    """The sums restart from an exact evaluation (both counters back to 0) before either bound is passed; with
    the node bound lifted the evaluation bound is reached exactly; ``resum_every=0`` keeps no sums."""
    seen = _counters_of_a_run(monkeypatch)
    n_diff, n_nodes = zip(*seen)
    assert max(n_diff) <= sfm.RESUM_EVERY and max(n_nodes) <= sfm.RESUM_NODES
    assert max(n_nodes) > sfm.RESUM_NODES - sfm.DIFF_MAX_NODES  # the node bound is what restarts them here
    assert n_diff.count(0) >= len(n_diff) * 20 // sfm.RESUM_NODES
    monkeypatch.setattr(sfm, "RESUM_NODES", 10**9)
    n_diff = [a for a, _ in _counters_of_a_run(monkeypatch)]
    assert max(n_diff) == sfm.RESUM_EVERY and n_diff.count(0) >= len(n_diff) // (sfm.RESUM_EVERY + 1)
    sim = Simulation(make_jobs([(1, 0.0, 1, 60.0, 120.0)]), __import__("power").load_system("theta"), "fcfs",
                     SimulationConfig(window_start_s=0.0, window_s=1e9))
    assert not sfm.StepFunction(sim.chain, sim.layout, None, resum_every=0)._by_diff


def _big_shared_spec() -> dict:
    """cpu: 40 whole nodes (4 per rack); gpu: 16 nodes of 2 GPUs, shared by 4 slots each (4 per rack); 2 CDUs."""
    from tests.integration.test_shared_nodes import shared_spec

    spec = shared_spec(4)
    spec["topology"] = {"n_cdus": 2, "rack_positions_per_cdu": 7}
    spec["partition"][0].update(nodes=40, nodes_per_rack=4)
    spec["partition"][1].update(nodes=16, nodes_per_rack=4)
    return spec


def test_difference_on_partitions_and_shared_nodes(monkeypatch):
    """A cpu partition of whole nodes beside a gpu partition whose nodes are shared by slot (power by share): at
    every evaluation the sums by difference (no tables: two node types) are within 1e-12 of the exact ones and the
    busy nodes per partition are equal. Every evaluation may go by difference here (DIFF_MAX_NODES unbounded)."""
    from power.system import System

    monkeypatch.setattr(sfm, "DIFF_MAX_NODES", 10**9)
    rng = np.random.default_rng(4)
    n = 400
    rows = make_jobs([(i + 1, float(rng.integers(0, 20000)), int(rng.integers(1, 12)),
                       float(rng.integers(30, 2000)), 2500.0) for i in range(n)])
    gpu = rng.random(n) < 0.5
    rows["queue"] = np.where(gpu, "gpu", "cpu")
    rows["gpus"] = np.where(gpu, rng.choice([0.5, 1.0, 2.0], n), np.nan)
    rows["nodes"] = np.where(gpu, 1, rows["nodes"])
    rows["cpu_util"] = rng.uniform(0.1, 1.0, n)
    rows["gpu_util"] = np.where(gpu, rng.uniform(0.1, 1.0, n), 0.0)
    sysm = System.from_spec(_big_shared_spec(), source="big-shared")
    assert sysm.partitioned and sysm.shares
    seen = _compare_every_evaluation(monkeypatch)
    sim = Simulation(rows, sysm, "easy", SimulationConfig(window_start_s=0.0, window_s=1e6, step_s=10.0,
                                                         interval_s=10.0), plant=None)
    assert sim.stepfn._idle_share_W is None and sim.stepfn._by_diff
    res = sim.run()
    assert res.info["complete"]
    assert seen["n"] > 400 and seen["diff"] > 0.9 * seen["n"]
    assert seen["max_rel"] <= TOL and seen["max_rel_idle"] <= TOL


def test_difference_with_a_colocated_partition(monkeypatch):
    """A co-located partition of 64 Theta nodes whose power changes every 10 min (a serving engine's profile):
    its DC and rack-input powers and the idle powers by difference stay within 1e-12 of the exact sums."""
    from power import load_system

    monkeypatch.setattr(sfm, "DIFF_MAX_NODES", 10**9)
    rng = np.random.default_rng(9)
    jobs = make_jobs([(i + 1, float(30 * i), int(rng.integers(1, 300)), float(rng.integers(60, 3000)), 4000.0)
                      for i in range(300)])
    nodes = np.arange(4000, 4064)
    t = np.arange(0.0, 12000.0, 600.0)
    part = NodePowerProfile(nodes=nodes, t_s=t, P_W=rng.uniform(100.0, 250.0, (t.size, nodes.size)),
                            label="serving")
    seen = _compare_every_evaluation(monkeypatch)
    sim = Simulation(jobs, load_system("theta"), "fcfs", SimulationConfig(backfill="easy", window_start_s=0.0,
                                                                           window_s=1e9), partition=part)
    assert sim.stepfn._in_part is not None
    assert sim.run().info["complete"]
    assert seen["n"] > 300 and seen["diff"] > 0.75 * seen["n"]
    assert 0.0 < seen["max_rel_idle"] <= TOL


def test_negative_power_is_refused_by_difference():
    """A touched node whose power went negative stops the evaluation with the chain's message."""
    from power import load_system

    sim = Simulation(make_jobs([(1, 0.0, 2, 60.0, 120.0)]), load_system("theta"), "fcfs",
                     SimulationConfig(window_start_s=0.0, window_s=1e9))
    from scheduler_sim.kernel.state import PlatformState

    st = PlatformState.initial(sim.jobdata, sim.system.n_nodes, sim.layout, sim.t0)
    sim.stepfn.value(st)
    st.node_dc[7] = -1.0
    st.step.touch(np.array([7]))
    with pytest.raises(ValueError, match=">= 0 W"):
        sim.stepfn.value(st)
