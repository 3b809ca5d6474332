"""The decision interface: a policy's view cannot change the platform; policies are registered by name."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from scheduler_sim.policies import registry
from scheduler_sim.policies import BasePolicy, SchedulerView, make_policy, policy_catalogue, register_policy


def _view(queue, nodes, start):
    n = len(nodes)
    return SchedulerView(now_s=10.0, queue=queue, free_nodes=4, nodes=nodes, estimate_s=np.full(n, 100.0),
                         submit_s=np.zeros(n), recorded_start_s=np.full(n, np.nan), running=[0], start_s=start)


def test_view_is_immutable_and_reads_the_live_state():
    queue, nodes, start = [1, 2], np.array([2, 1, 3]), np.array([0.0, np.nan, np.nan])
    v = _view(queue, nodes, start)
    assert v.queue == (1, 2) and isinstance(v.queue, tuple) and v.running == (0,)
    with pytest.raises(ValueError, match="read-only"):
        v.nodes[0] = 5
    with pytest.raises(ValueError, match="read-only"):
        v.start_s[1] = 3.0
    with pytest.raises(AttributeError):
        v.queue.append(0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        v.free_nodes = 100
    queue.append(0)  # the platform's own list and arrays stay its own: unchanged view, writeable arrays
    start[1] = 12.0
    assert v.queue == (1, 2) and v.start_s[1] == 12.0 and start.flags.writeable


def test_a_policy_that_writes_into_the_view_fails_loudly():
    class Cheater(BasePolicy):
        name = "cheater"

        def schedule(self, view):
            view.nodes[view.queue[0]] = 0  # pretend the job needs no node
            return [view.queue[0]]

    v = _view([2], np.array([2, 1, 3]), np.full(3, np.nan))
    with pytest.raises(ValueError, match="read-only"):
        Cheater().schedule(v)
    assert v.nodes[2] == 3


def test_registered_policy_is_made_by_name_and_listed(monkeypatch):
    monkeypatch.setattr(registry.POLICIES, "_entries", dict(registry.POLICIES._entries))  # the test's policy does not leak
    @register_policy("test-noop", "starts nothing (test)")
    def _noop(backfill=None, **params):
        class Noop(BasePolicy):
            name = "test-noop"

            def schedule(self, view):
                return []

        return Noop()

    p = make_policy("TEST-NOOP")
    assert p.name == "test-noop" and p.schedule(_view([0], np.array([1]), np.full(1, np.nan))) == []
    assert ("test-noop", "starts nothing (test)") in policy_catalogue()
    with pytest.raises(ValueError, match="already registered"):
        register_policy("test-noop", "again")(_noop)
    with pytest.raises(ValueError, match="already registered"):
        register_policy("fcfs", "clash with an order")(_noop)
