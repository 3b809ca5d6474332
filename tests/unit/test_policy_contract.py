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


def test_view_filled_from_frozen_fields_equals_the_constructed_view_and_is_as_immutable():
    """SchedulerView.of_frozen (the kernel's per-pass view, issue #26): with tuples and read-only views it is filled
    in directly and equals the constructor's view field by field (defaults included) and stays immutable; with a
    list or a writeable array it takes the constructor, which freezes them."""
    nodes, start = np.array([2, 1, 3]), np.array([0.0, np.nan, np.nan])
    ref = _view([1, 2], nodes, start)
    kw = dict(now_s=10.0, queue=(1, 2), free_nodes=4, nodes=ref.nodes, estimate_s=ref.estimate_s,
              submit_s=ref.submit_s, recorded_start_s=ref.recorded_start_s, running=(0,), start_s=ref.start_s)
    fast = SchedulerView.of_frozen(**kw)
    for f in dataclasses.fields(SchedulerView):
        assert getattr(fast, f.name) is getattr(ref, f.name) or getattr(fast, f.name) == getattr(ref, f.name), f.name
    with pytest.raises(ValueError, match="read-only"):
        fast.start_s[0] = 1.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.free_nodes = 100
    start[1] = 12.0  # a view of the live state
    assert fast.start_s[1] == 12.0
    slow = SchedulerView.of_frozen(**dict(kw, queue=[1, 2], start_s=start))  # a list and a writeable array
    assert slow.queue == (1, 2) and isinstance(slow.queue, tuple) and not slow.start_s.flags.writeable
    assert start.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        slow.start_s[0] = 1.0


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
