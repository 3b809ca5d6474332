"""Property tests (hypothesis) over random small workloads, for every order x backfill strategy and replay.

Invariants checked on every run (pybatsim's ValidatingMachine idea, applied to the run's own records):
no node is used by two jobs at once; no job starts before its submission; every accepted job ends exactly once;
no job runs past its requested time under a walltime-killing policy; EASY never delays the queue head's
reservation (FCFS order); conservative backfill never delays any reservation (any order); energy is conserved.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler_sim.kernel.simulation import JobOutcome, Simulation, SimulationConfig
from power.system import System
from tests.conftest import make_jobs, tiny_system_spec

N_NODES = 4
TINY = System.from_spec(tiny_system_spec(n_nodes=N_NODES), source="tiny")


@st.composite
def workloads(draw, allow_missing_limit=False, with_recorded_starts=False):
    n = draw(st.integers(1, 18))
    rows = []
    for i in range(n):
        submit = draw(st.integers(0, 300))
        nodes = draw(st.integers(1, N_NODES))
        runtime = draw(st.integers(0, 150))
        req = runtime + draw(st.integers(-40, 60))  # sometimes shorter than the run time: killed
        req = float(max(req, 1))
        if allow_missing_limit and draw(st.booleans()):
            req = float("nan")
        row = (i + 1, submit, nodes, runtime, req)
        if with_recorded_starts:
            row += (submit + draw(st.integers(0, 200)),)
        rows.append(row)
    return rows


def check_invariants(sim: Simulation, res, system) -> None:
    jobs = res.jobs
    al = res.allocations
    # no node double-booked: per node, attempts sorted by start never overlap
    for node in range(system.n_nodes):
        on = (al["node_first"] <= node) & (node < al["node_first"] + al["node_count"])
        iv = sorted(zip(al["start_s"][on], al["end_s"][on]))
        for (a0, b0), (a1, b1) in zip(iv, iv[1:]):
            assert b0 <= a1, f"node {node} double-booked: [{a0},{b0}) and [{a1},{b1})"
    # busy nodes never exceed the machine
    assert np.all(res.facility["busy_nodes"] <= system.n_nodes + 1e-9)
    # no job starts before it is submitted; every job ends exactly once, after it starts
    assert np.all(jobs["sim_start_s"] >= jobs["submit_time_s"])
    assert np.all(jobs["sim_end_s"] >= jobs["sim_start_s"])
    assert set(jobs["outcome"]) <= {JobOutcome.COMPLETED, JobOutcome.KILLED_WALLTIME}
    attempts = {(j, s) for j, s in zip(al["job_id"], al["start_s"])}
    assert len(attempts) == len(jobs)  # one attempt per job (no failures here)
    # walltime: a killing policy never lets a job run past its requested time
    if sim.policy.kills_at_walltime:
        req = jobs["requested_walltime_s"].to_numpy()
        lim = np.isfinite(req)
        assert np.all(jobs["run_s"].to_numpy()[lim] <= req[lim] + 1e-9)
        killed = jobs["outcome"] == JobOutcome.KILLED_WALLTIME
        assert np.all(jobs.loc[killed, "runtime_s"] > jobs.loc[killed, "requested_walltime_s"])
    # energy conservation, exact accounting paths vs the step integral
    t = res.totals
    assert jobs["energy_dc_J"].sum() + t["E_idle_node_dc_J"] == pytest.approx(t["E_node_dc_J"], rel=1e-9)
    assert jobs["energy_it_J"].sum() + t["E_idle_node_it_J"] == pytest.approx(t["E_it_J"], rel=1e-9)


def reservations_never_delayed(sim: Simulation, res) -> None:
    first: dict[int, float] = {}
    last: dict[int, float] = {}
    for _, r in sim.reservation_log:
        for j, t in r.items():
            first.setdefault(j, t)
            assert t <= last.get(j, math.inf) + 1e-9, f"reservation of job index {j} moved later"
            last[j] = t
    start = res.jobs["sim_start_s"].to_numpy()
    for j, t in first.items():
        assert start[j] <= t + 1e-9, f"job index {j} started at {start[j]} after its reservation {t}"


COMBOS = [(o, b) for o in ("fcfs", "sjf", "ljf", "largest", "priority")
          for b in ("none", "easy", "easy-bestfit", "conservative", "firstfit")]
FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("order,backfill", COMBOS)
@FAST
@given(rows=workloads(allow_missing_limit=True))
def test_invariants_every_policy(order, backfill, rows):
    tiny_system = TINY
    sim = Simulation(make_jobs(rows), tiny_system, order,
                     SimulationConfig(backfill=backfill, window_start_s=0.0, window_s=1e6, default_walltime_s=100.0))
    check_invariants(sim, sim.run(), tiny_system)


@FAST
@given(rows=workloads(with_recorded_starts=True))
def test_invariants_replay(rows):
    tiny_system = TINY
    sim = Simulation(make_jobs(rows), tiny_system, "replay", SimulationConfig(window_start_s=0.0, window_s=1e6))
    res = sim.run()
    check_invariants(sim, res, tiny_system)
    # replay runs recorded run times, never kills
    assert np.all(res.jobs["run_s"] == res.jobs["runtime_s"])


@settings(max_examples=60, deadline=None)
@given(rows=workloads())
def test_easy_never_delays_the_head_reservation(rows):
    tiny_system = TINY
    sim = Simulation(make_jobs(rows), tiny_system, "fcfs",
                     SimulationConfig(backfill="easy", window_start_s=0.0, window_s=1e6, record_reservations=True))
    res = sim.run()
    reservations_never_delayed(sim, res)


@pytest.mark.parametrize("order", ["fcfs", "sjf", "priority"])
@settings(max_examples=40, deadline=None)
@given(rows=workloads())
def test_conservative_never_delays_any_reservation(order, rows):
    tiny_system = TINY
    sim = Simulation(make_jobs(rows), tiny_system, order,
                     SimulationConfig(backfill="conservative", window_start_s=0.0, window_s=1e6, record_reservations=True))
    res = sim.run()
    reservations_never_delayed(sim, res)


@settings(max_examples=30, deadline=None)
@given(rows=workloads(allow_missing_limit=True), seed=st.integers(0, 2**31 - 1))
def test_same_inputs_same_schedule(rows, seed):
    tiny_system = TINY
    a = Simulation(make_jobs(rows), tiny_system, "priority",
                   SimulationConfig(backfill="easy", window_start_s=0.0, window_s=1e6)).run()
    b = Simulation(make_jobs(rows), tiny_system, "priority",
                   SimulationConfig(backfill="easy", window_start_s=0.0, window_s=1e6)).run()
    assert np.array_equal(a.jobs["sim_start_s"].to_numpy(), b.jobs["sim_start_s"].to_numpy())
    assert a.totals == b.totals
