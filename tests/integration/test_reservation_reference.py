"""EASY and conservative backfill against a slow, deliberately simple reference schedule builder (issue #12).

The reference below shares no code with the simulator. It steps through integer seconds, keeps the machine as a
list of node owners, and answers every scheduling question by brute force over per-second arrays:

* node ``i`` is available at second ``u`` when no downtime window ``[a, b)`` covers it and it holds no job then;
  a running job holds its nodes until start + requested time, or until a (non-drain) maintenance takes one of
  its nodes, whichever comes first (the job is killed there);
* facility power at ``u`` = every node idle + each running job's extra power until that end; the budget in force
  at ``u`` is the last cap step at or before ``u``;
* a start of ``n`` nodes, ``p`` W, ``d`` s at ``s`` is feasible when, with the reservations already made in this
  pass, at least ``n`` nodes are available at every second of ``[s, s + d)``, the power left at ``s`` is at
  least ``p``, and the power left at every reservation start inside ``(s, s + d)`` stays >= 0 with it (a
  budget is only checked when a job starts; running jobs are never stopped);
* EASY: jobs in queue order start while feasible now; the first that is not gets a reservation at its earliest
  feasible second; every later job (largest first for best fit) starts now if feasible now;
* conservative: jobs holding a reservation from the previous pass are re-placed first in order of it, then the
  others in queue order, each at its earliest feasible second; those placed now start.

Passes happen at the simulator's event times (submissions, job ends as scheduled, downtime starts and ends, cap
steps), after every event of that second, when the queue is not empty and a node is free. Jobs are allocated the
lowest-index free nodes; a job killed by a maintenance goes back to the queue with its submit time.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from power.system import System
from scheduler_sim.kernel.simulation import Simulation, SimulationConfig
from tests.conftest import make_jobs, tiny_system_spec

N_NODES = 4
P_IDLE, P_BUSY = 100, 300  # W per node (tiny system, lossless chain, cpu_util 1)


def lossless_system() -> System:
    spec = tiny_system_spec(N_NODES)
    spec["sivoc"] = {"P_fixed_W": 0.0, "eta": 1.0, "k_per_W": 0.0}
    spec["rectifier"] = {"P_fixed_W": 0.0, "eta": 1.0, "k_per_W": 0.0, "nodes_per_rectifier": 1}
    return System.from_spec(spec, source="test")


SYSTEM = lossless_system()


def reference_starts(jobs, downtimes, caps, backfill):
    """Start time of every job (last attempt) under ``backfill`` (module docstring). ``jobs``: (submit, n, run,
    wall) tuples; ``downtimes``: (a, b, nodes, drain); ``caps``: (t, W)."""
    J = len(jobs)
    horizon = max([s for s, *_ in jobs] + [b for _, b, _, _ in downtimes] + [t for t, _ in caps]) \
        + 2 * sum(w for *_, w in jobs) + 10
    owner = [-1] * N_NODES
    start = [None] * J
    end = [None] * J  # scheduled end of the running attempt
    queue: list[int] = []
    done = [False] * J
    events = {s for s, *_ in jobs} | {x for a, b, _, _ in downtimes for x in (a, b)} | {t for t, _ in caps if t > 0}
    previous: dict[int, float] = {}

    def down(i, u):
        return any(a <= u < b and i in nodes for a, b, nodes, _ in downtimes)

    def cap_at(u):
        c = math.inf
        for t, w in sorted(caps):
            if t <= u:
                c = w
        return c

    def power(j):
        return jobs[j][1] * (P_BUSY - P_IDLE)

    def schedule(now):
        running = sorted({o for o in owner if o >= 0})
        held_until = {}
        for j in running:
            e = start[j] + jobs[j][3]
            for a, b, nodes, drain in downtimes:
                if not drain and a > now and any(owner[i] == j for i in nodes):
                    e = min(e, a)
            held_until[j] = e
        T = horizon - now
        free = [sum(1 for i in range(N_NODES) if not down(i, now + u)
                    and not (owner[i] >= 0 and now + u < held_until[owner[i]])) for u in range(T)]
        left = [cap_at(now + u) - N_NODES * P_IDLE - sum(power(j) for j in running if now + u < held_until[j])
                for u in range(T)]
        res_starts: list[int] = []

        def feasible(s, n, p, d):
            if s + d > T or min(free[s:s + d]) < n or left[s] < p:
                return False
            return all(left[r] - p >= 0 for r in res_starts if s < r < s + d)

        def earliest(j):
            n, p, d = jobs[j][1], power(j), jobs[j][3]
            for s in range(T):
                if feasible(s, n, p, d):
                    return s
            return math.inf

        def reserve(j, s):
            for u in range(s, min(s + jobs[j][3], T)):
                free[u] -= jobs[j][1]
                left[u] -= power(j)
            res_starts.append(s)

        out, reservations = [], {}
        if backfill in ("easy", "easy-bestfit"):
            i = 0
            while i < len(queue) and earliest(queue[i]) == 0:
                reserve(queue[i], 0)
                out.append(queue[i])
                i += 1
            if i < len(queue):
                s = earliest(queue[i])
                if s < math.inf:
                    reserve(queue[i], s)
                rest = queue[i + 1:]
                if backfill == "easy-bestfit":
                    rest = sorted(rest, key=lambda j: -jobs[j][1])
                for j in rest:
                    if earliest(j) == 0:
                        reserve(j, 0)
                        out.append(j)
        else:
            rank = {j: k for k, j in enumerate(queue)}
            held = sorted((j for j in queue if j in previous), key=lambda j: (previous[j], rank[j]))
            for j in held + [j for j in queue if j not in previous]:
                s = earliest(j)
                reservations[j] = now + s
                if s < math.inf:
                    reserve(j, s)
                if s == 0:
                    out.append(j)
        previous.clear()
        previous.update(reservations)
        return sorted(out, key=queue.index)

    for now in range(horizon + 1):
        if all(done):
            break
        if now not in events:
            continue
        for j in range(J):  # ends (completion or wall-time kill)
            if j in owner and end[j] == now:
                owner = [-1 if o == j else o for o in owner]
                done[j] = True
        for a, b, nodes, drain in downtimes:  # maintenance starts: kill and requeue
            if a == now and not drain:
                for j in sorted({owner[i] for i in nodes if owner[i] >= 0}):
                    owner = [-1 if o == j else o for o in owner]
                    start[j] = end[j] = None
                    queue.append(j)
        for j in range(J):
            if jobs[j][0] == now:
                queue.append(j)
        queue.sort(key=lambda j: (jobs[j][0], j))
        n_free = sum(1 for i in range(N_NODES) if owner[i] == -1 and not down(i, now))
        if queue and n_free > 0:
            for j in schedule(now):
                got = [i for i in range(N_NODES) if owner[i] == -1 and not down(i, now)][:jobs[j][1]]
                assert len(got) == jobs[j][1]
                for i in got:
                    owner[i] = j
                start[j] = now
                end[j] = now + min(jobs[j][2], jobs[j][3])
                events.add(end[j])
                queue.remove(j)
    return start


@st.composite
def scenarios(draw):
    n_jobs = draw(st.integers(1, 6))
    jobs = []
    for _ in range(n_jobs):
        wall = draw(st.sampled_from([10, 20, 30, 50]))  # few values: many tied ends
        jobs.append((draw(st.sampled_from([0, 0, 5, 10, 20, 30])), draw(st.integers(1, N_NODES)),
                     draw(st.integers(1, wall + 10)), wall))
    downtimes = []
    for _ in range(draw(st.integers(0, 2))):
        a = draw(st.sampled_from([0, 5, 10, 20, 40]))
        nodes = draw(st.sets(st.integers(0, N_NODES - 1), min_size=1, max_size=N_NODES))
        downtimes.append((a, a + draw(st.sampled_from([10, 20, 40])), sorted(nodes), draw(st.booleans())))
    caps = []
    if draw(st.booleans()):
        idle = N_NODES * P_IDLE
        for t in sorted(draw(st.sets(st.sampled_from([0, 10, 20, 30]), min_size=1, max_size=2))):
            caps.append((t, idle + (P_BUSY - P_IDLE) * draw(st.integers(1, N_NODES))))
        caps.append((40, math.inf))  # every job fits in the end (none is rejected)
    return jobs, downtimes, caps


def simulated_starts(jobs, downtimes, caps, backfill):
    rows = [(k + 1, s, n, r, w) for k, (s, n, r, w) in enumerate(jobs)]
    sim = Simulation(make_jobs(rows), SYSTEM, "fcfs",
                     SimulationConfig(backfill=backfill, window_start_s=0.0, window_s=1e6,
                                      downtimes=[(float(a), float(b), np.array(nd), dr) for a, b, nd, dr in downtimes],
                                      power_cap=[(float(t), float(w)) for t, w in caps], cooling_estimate=0.0, step_s=1.0,
                                      interval_s=1.0))
    return sim.run().jobs["sim_start_s"].tolist()


def test_lossless_power_is_exact():
    # the reference adds integer watts: the simulator's job power must be exactly nodes x 200 W
    sim = Simulation(make_jobs([(1, 0, 3, 10, 10)]), SYSTEM, "fcfs",
                     SimulationConfig(backfill="easy", window_start_s=0.0, window_s=1e6, power_cap=[(0.0, 5000.0)],
                                      cooling_estimate=0.0))
    assert sim.jobdata.marginal_it_W[0] == 3 * (P_BUSY - P_IDLE)


HAND = [  # (jobs, downtimes, caps, backfill, starts) worked by hand, to check the reference itself
    # the downtime-reservation field case: head reserved at the downtime end, the long job after it
    ([(1, 4, 100, 100), (2, 2, 10000, 10000)], [(0, 3600, [2, 3], False)], [], "easy", [3600, 3700]),
    # the easy-tie field case on 4 nodes: 1 (1 node) and 2 (2 nodes) end at 100; head 3 (2 nodes) at 10 with 1
    # free; extra at 100 = 4 - 2 = 2, so job 4 (1 node, 300 s) backfills at 10
    ([(0, 1, 100, 100), (0, 2, 100, 100), (10, 2, 50, 500), (10, 1, 300, 300)], [], [], "easy", [0, 0, 100, 10]),
    # conservative: 4 (1 node, 300 s) would overlap 3's window [100, 600) on 4 nodes -> reserved at 600; 3 ends
    # early (runs 50 s), so at its end, 150, job 4 starts
    ([(0, 1, 100, 100), (0, 2, 100, 100), (10, 4, 50, 500), (10, 1, 300, 300)], [], [], "conservative",
     [0, 0, 100, 150]),
]


@pytest.mark.parametrize("jobs,downtimes,caps,backfill,starts", HAND)
def test_reference_on_hand_cases(jobs, downtimes, caps, backfill, starts):
    assert reference_starts(jobs, downtimes, caps, backfill) == starts
    assert simulated_starts(jobs, downtimes, caps, backfill) == starts


@pytest.mark.parametrize("backfill", ["easy", "easy-bestfit", "conservative"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=scenarios())
def test_backfill_matches_the_reference(backfill, case):
    jobs, downtimes, caps = case
    assert simulated_starts(jobs, downtimes, caps, backfill) == reference_starts(jobs, downtimes, caps, backfill)
