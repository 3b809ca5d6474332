"""The step function's idle-power tables (:class:`scheduler_sim.kernel.stepfunction.StepFunction`) give the same
float64 values as the direct sums over the idle nodes on a run of the Theta machine: bit for bit for the idle DC
power and the exact step vector (the vector by difference within 1e-12 of it), within 1e-15 (relative) for the idle
rack-input power counted by idle-share class."""

import numpy as np

from power import load_system
from scheduler_sim.kernel.allocator import FREE
from scheduler_sim.kernel.stepfunction import StepFunction
from scheduler_sim.kernel.simulation import Simulation, SimulationConfig
from tests.conftest import make_jobs


def _jobs(n: int = 300):
    rng = np.random.default_rng(11)
    return make_jobs([(i + 1, float(30 * i), int(rng.integers(1, 900)), float(rng.integers(60, 4000)),
                       4000.0) for i in range(n)])


def test_tables_equal_direct_sums_at_every_power_change():
    """At every step-function evaluation of an EASY run (300 jobs, 1-899 nodes, Theta: two distinct idle-share
    values), the tabled idle DC power is ``node_dc[idle].sum()`` bit for bit, the idle rack-input power counted by
    class is ``node_it_input_w(node_dc)[idle].sum()`` within 1e-15 (relative), and every idle node draws the idle
    power (the tables' premise)."""
    sim = Simulation(_jobs(), load_system("theta"), "fcfs", SimulationConfig(backfill="easy", window_start_s=0.0, window_s=1e9))
    fast = sim.stepfn
    assert fast._idle_share_W is not None and np.unique(fast._idle_share_W).size == 2
    slow = StepFunction(sim.chain, sim.layout, None)
    checked = []
    original = fast.value

    def value(st):
        dirty = st.step.dirty
        v = original(st).copy()
        if dirty:
            idle = st.alloc.owner == FREE
            assert np.all(st.node_dc[idle] == sim.jobdata.idle_node_power_W)
            got = (st.step.idle_dc_W, st.step.idle_it_W)
            ref, direct = fast.exact(st), slow.exact(st)  # exact with the tables, exact with direct sums
            assert np.array_equal(ref.vec, direct.vec)  # the tables change nothing in the vector
            assert np.allclose(v, ref.vec, rtol=1e-12, atol=0.0)  # by difference (kernel.stepfunction)
            assert got == (ref.idle_dc_W, ref.idle_it_W)  # counts by difference: the tables' values bit for bit
            assert direct.idle_dc_W == got[0] == float(st.node_dc[idle].sum())
            direct_it = float(sim.chain.node_it_input_w(st.node_dc)[idle].sum())
            assert direct.idle_it_W == direct_it
            assert abs(got[1] - direct_it) <= 1e-15 * direct_it
            checked.append(int(idle.sum()))
        return v

    fast.value = value
    res = sim.run()
    assert res.info["complete"] and len(checked) > 300 and len(set(checked)) > 50
