"""EASY without the availability profile while the free nodes only grow (issue #16 item 8): the same starts and the
same head reservation as with the profile, and the vectorised running-job-ends availability equals a by-hand
step function."""

from __future__ import annotations

import math

import numpy as np

from scheduler_sim.kernel.availability import known_availability
from scheduler_sim.policies.backfill import backfill_easy
from scheduler_sim.policies.base import SchedulerView


def _view(rng: np.random.Generator, grows: bool) -> SchedulerView:
    n = 60
    nodes = rng.integers(1, 9, n).astype(np.int64)
    est = rng.choice([60.0, 600.0, 3600.0, 7200.0], n)
    start = np.full(n, np.nan)
    running = tuple(int(j) for j in rng.choice(n, 12, replace=False))
    start[list(running)] = rng.choice([0.0, 100.0, 500.0], len(running))
    queue = tuple(j for j in range(n) if j not in running)
    return SchedulerView(now_s=1000.0, queue=queue, free_nodes=int(rng.integers(0, 16)), nodes=nodes,
                         estimate_s=est, submit_s=np.zeros(n), recorded_start_s=np.full(n, np.nan),
                         running=running, start_s=start, n_nodes=64, availability_grows=grows)


def test_lazy_easy_equals_profile_easy():
    for seed in range(300):
        res = []
        for grows in (False, True):
            v = _view(np.random.default_rng(seed), grows)
            order = list(v.queue)
            np.random.default_rng(seed + 1).shuffle(order)
            reservations: dict = {}
            res.append((backfill_easy(v, order, reservations), reservations))
        assert res[0] == res[1], seed


def test_hand_schedule_starts_fitting_head_then_backfills():
    # 10 nodes free, job 0 (6 nodes) ends at 1600; queue: 4 nodes x 600 s (fits, ends at 1600 too), 15 nodes (the
    # head: at 1600 all 16 nodes are free, 1 spare), 2 x 1 h (past the shadow time on 2 > 1 spare nodes: no),
    # 2 x 60 s (ends at 1060, before the shadow time: yes)
    nodes = np.array([6, 4, 15, 2, 2], dtype=np.int64)
    est = np.array([600.0, 600.0, 600.0, 3600.0, 60.0])
    start = np.array([1000.0, np.nan, np.nan, np.nan, np.nan])
    v = SchedulerView(now_s=1000.0, queue=(1, 2, 3, 4), free_nodes=10, nodes=nodes, estimate_s=est,
                      submit_s=np.zeros(5), recorded_start_s=np.full(5, np.nan), running=(0,), start_s=start,
                      n_nodes=16, availability_grows=True)
    r: dict = {}
    assert backfill_easy(v, [1, 2, 3, 4], r) == [1, 4] and r == {2: 1600.0}


def test_job_ends_availability_by_hand():
    start = np.array([0.0, 0.0, 50.0, 0.0])
    est = np.array([100.0, 100.0, 100.0, 10.0])  # ends 100, 100, 150 and 10 (past: "just after now")
    nodes = np.array([2, 3, 4, 5], dtype=np.int64)
    t, f, h = known_availability(20.0, np.full(16, -1), np.zeros(16, dtype=np.int64), [0, 1, 2, 3], start, est, [],
                                 None, 0.0, [], nodes, 2)
    assert t.tolist() == [20.0, math.nextafter(20.0, math.inf), 100.0, 150.0]
    assert f.tolist() == [2, 7, 12, 16] and f.dtype == np.int64 and np.isinf(h).all()
