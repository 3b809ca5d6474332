"""The kernel's state split (issue #14): a fork deep-copies PlatformState by construction, the job data is
immutable, and SimulationConfig is the one validated options object (keywords are its compatibility path)."""

from __future__ import annotations

import copy
from dataclasses import fields

import numpy as np
import pytest

from scheduler_sim.kernel.config import SimulationConfig
from scheduler_sim.kernel.simulation import Simulation
from scheduler_sim.kernel.state import PlatformState
from scheduler_sim.policies import BasePolicy, make_policy
from tests.conftest import make_jobs

# two 2-node jobs on the 4-node tiny system, a third queued behind them (FCFS, no backfill)
ROWS = [(1, 0, 2, 100, 100), (2, 0, 2, 200, 200), (3, 10, 4, 50, 50)]


class _ForkOnce(BasePolicy):
    """FCFS that forks the platform at its first pass with a queue, keeping the fork and the main state."""

    name = "fork-once"

    def __init__(self) -> None:
        self.inner = make_policy("fcfs", "none")
        self.fork = None

    def schedule(self, view):
        if self.fork is None and view.now_s >= 10.0:
            self.fork = view.lookahead.snapshot()._fork.fork(copy.deepcopy(self.inner))
            self.sim = view.lookahead._platform  # the test reads the live platform to compare (no policy does)
            self.main_state = self.sim.state
        return self.inner.schedule(view)


def _mutable(v) -> bool:
    return not isinstance(v, (int, float, bool, str, type(None)))


def test_fork_copies_every_mutable_field_of_the_state(tiny_system):
    probe = _ForkOnce()
    res = Simulation(make_jobs(ROWS), tiny_system, probe, window_start_s=0.0, window_s=1e6).run()
    f, m = probe.fork.state, probe.main_state
    # every mutable field (and every field of its nested records) is the fork's own object
    for fld in fields(PlatformState):
        a, b = getattr(f, fld.name), getattr(m, fld.name)
        if _mutable(a):
            assert a is not b, fld.name
    for nested in ("ledger", "step", "counters", "cooling"):
        for k, v in vars(getattr(f, nested)).items():
            if isinstance(v, np.ndarray):
                assert v is not vars(getattr(m, nested))[k], (nested, k)
    # the job data is shared, read-only
    assert probe.fork.jobdata is probe.sim.jobdata
    with pytest.raises(ValueError):
        probe.fork.jobdata.nodes[0] = 1
    # no pass at 10 s (no free node); the first pass with a queue is at 100 s, when job 1 ends: the fork holds job 2
    # (index 1) running and job 3 (index 2) queued. Running it on does not touch the main run, whose schedule is
    # 1, 2 at 0 s and 3 at 200 s (when both 2-node jobs have ended)
    assert f.env.now == 100.0 and f.queue == [2] and list(f.running) == [1]
    score = probe.fork.rollout(1000.0)
    assert score["started"] == 1.0  # job 3, at 200 s
    assert probe.fork.state.start[2] == 200.0
    assert list(res.jobs["sim_start_s"]) == [0.0, 0.0, 200.0]


def test_config_object_and_keywords_are_the_same_run(tiny_system):
    kw = dict(window_start_s=0.0, window_s=1e6, step_s=15.0, interval_s=60.0)
    a = Simulation(make_jobs(ROWS), tiny_system, "fcfs", **kw).run()
    b = Simulation(make_jobs(ROWS), tiny_system, "fcfs", SimulationConfig(**kw)).run()
    assert a.totals == b.totals
    np.testing.assert_array_equal(a.jobs["sim_start_s"], b.jobs["sim_start_s"])
    with pytest.raises(TypeError, match="not both"):
        Simulation(make_jobs(ROWS), tiny_system, "fcfs", SimulationConfig(**kw), window_s=5.0)


@pytest.mark.parametrize("kw, msg", [
    ({"interval_s": 50.0}, "whole multiple"),
    ({"placement": "random"}, "placement"),
    ({"power_cap": [(0.0, 0.0)]}, "> 0 W"),
    ({"downtimes": [(10.0, 5.0, [0])]}, "after its start"),
    ({"max_drain_s": 0.0}, "max_drain_s"),
])
def test_config_rejects_bad_options(kw, msg):
    with pytest.raises(ValueError, match=msg):
        SimulationConfig(**kw)


def test_config_normalises_schedules():
    c = SimulationConfig(power_cap=[(100.0, 5e6), (0.0, 6e6)], downtimes=[(0, 10, [3, 1, 3])])
    assert c.power_cap == ((0.0, 6e6), (100.0, 5e6))  # sorted by time
    (a, b, nodes, drain), = c.downtimes
    assert (a, b, drain) == (0.0, 10.0, False) and nodes.tolist() == [1, 3]  # unique, sorted
    with pytest.raises(ValueError, match="0..3"):
        SimulationConfig(downtimes=[(0, 10, [4])]).check_against(4)
