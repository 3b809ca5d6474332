"""Demand-response events and the ramp-rate limit on starts (#15, items 3b and 3c), on hand-built schedules.

Tiny system (tests/conftest.py): 4 nodes, 100 W idle / 300 W busy. Rack input of a node at DC power P:
((P + 10)/0.9 + 20/2)/0.95, so every node idle = 4 x 139.181 = 556.725 W of IT (no facility overheads: facility
power = IT), and a busy node adds 200/(0.9 x 0.95) = 233.918 W of IT. The platform predicts facility power as
IT x 1.05 (cooling estimate), so a 1-node job's predicted step is 245.614 W and a 2-node job's 491.228 W.
"""

from __future__ import annotations

import numpy as np
import pytest

from scheduler_sim.analysis.grid_dynamics import event_reports, fast_facility_series
from scheduler_sim.kernel.simulation import Simulation, SimulationConfig
from scheduler_sim.policies.grid_events import GridDynamicsPolicy, GridEvent, merge_event_caps
from scheduler_sim.policies.registry import make_policy
from tests.conftest import make_jobs

IDLE_IT = 4 * ((100 + 10) / 0.9 + 10) / 0.95
NODE_IT = 200 / (0.9 * 0.95)
STEP1 = NODE_IT * 1.05


def _run(rows, system, events=(), ramp=None, wrap=True):
    inner = make_policy("fcfs", "easy")
    pol = GridDynamicsPolicy(inner, list(events), ramp_W_per_s=ramp) if wrap else inner
    sim = Simulation(make_jobs(rows), system, pol,
                     SimulationConfig(window_start_s=0.0, window_s=1e6, interval_s=60.0, step_s=15.0,
                                      power_cap=merge_event_caps([], list(events), 0.0, need_power=ramp is not None)))
    res = sim.run()
    idle_node = float(sim.chain.node_it_input_w(np.full(4, sim.jobdata.idle_node_power_W)).mean())
    fast = fast_facility_series(res, idle_node_it_W=idle_node, it_per_dc=1 / (0.9 * 0.95), dt_s=1.0)
    reps = event_reports(res, list(events), idle_node_it_W=idle_node, held_jobs=getattr(pol, "held_dr", set()),
                         fast=(fast[0], 1.0, fast[1]))
    return res, res.jobs.set_index("job_id"), reps


# J1, J2: 2 nodes for 1000 s, J3: 1 node for 100 s, all submitted at 0; event [500, 800) s capped at 1,100 W.
DR_ROWS = [(1, 0, 2, 1000, 1000), (2, 0, 2, 1000, 1000), (3, 0, 1, 100, 100)]


def test_event_is_met_when_feasible(tiny_system):
    ev = GridEvent(500.0, 800.0, 1100.0, label="peak")
    res, j, (rep,) = _run(DR_ROWS, tiny_system, [ev])
    # look-ahead at t=0: J1 fits the event (556.725 x 1.05 + 491.228 = 1075.8 <= 1100); J2 would not -> held to
    # the event end; J3 ends before the event -> starts at 0 on the node J2 leaves free
    assert j.loc[1, "sim_start_s"] == 0 and j.loc[3, "sim_start_s"] == 0
    assert j.loc[2, "sim_start_s"] == 800
    assert rep.met and rep.feasible and rep.verdict == "met"
    assert rep.max_W == pytest.approx(IDLE_IT + 2 * NODE_IT, rel=1e-9)  # 1,024.561 W: idle + J1
    assert rep.mean_W == pytest.approx(IDLE_IT + 2 * NODE_IT, rel=1e-9)
    assert rep.floor_W == pytest.approx(IDLE_IT, rel=1e-9)
    assert rep.jobs_delayed == 1


def test_without_look_ahead_the_running_jobs_break_the_cap(tiny_system):
    # the same budget schedule but the plain policy: J1 and J2 start at 0 and run through the event
    ev = GridEvent(500.0, 800.0, 1100.0, label="peak")
    res, j, (rep,) = _run(DR_ROWS, tiny_system, [ev], wrap=False)
    assert j.loc[2, "sim_start_s"] == 0
    assert not rep.met and rep.feasible
    assert rep.max_W == pytest.approx(IDLE_IT + 4 * NODE_IT, rel=1e-9)
    assert rep.committed_W == pytest.approx(4 * NODE_IT, rel=1e-9)
    assert rep.verdict.startswith("not met: batch jobs already running")


def test_infeasible_event_is_reported(tiny_system):
    # a 500 W cap is below the idle machine (556.725 W): no schedule meets it
    ev = GridEvent(500.0, 800.0, 500.0, label="deep")
    res, j, (rep,) = _run(DR_ROWS, tiny_system, [ev])
    assert not rep.met and not rep.feasible
    assert rep.verdict.startswith("infeasible")
    assert rep.floor_W == pytest.approx(IDLE_IT, rel=1e-9)
    # nothing runs during the event: J1 and J2 (1000 s) are held until it ends, J3 (100 s) runs before it
    assert j.loc[3, "sim_start_s"] == 0
    assert j.loc[1, "sim_start_s"] >= 800 and j.loc[2, "sim_start_s"] >= 800
    assert rep.max_W == pytest.approx(IDLE_IT, rel=1e-9)


def test_ramp_limit_staggers_starts(tiny_system):
    # four 1-node jobs at 0; limit 10 W/s over 60 s = 600 W bucket. Two fit at 0 (491.2 W), the third waits
    # until the bucket holds 245.614 W again: t3 = (3 x 245.614 - 600)/10; the fourth another 24.561 s later.
    rows = [(k, 0, 1, 1000, 1000) for k in (1, 2, 3, 4)]
    res, j, _ = _run(rows, tiny_system, ramp=10.0)
    assert j.loc[1, "sim_start_s"] == 0 and j.loc[2, "sim_start_s"] == 0
    assert j.loc[3, "sim_start_s"] == pytest.approx((3 * STEP1 - 600) / 10, rel=1e-9)
    assert j.loc[4, "sim_start_s"] == pytest.approx((4 * STEP1 - 600) / 10, rel=1e-9)
    assert res.info["grid_jobs_delayed_by_ramp"] == 2 and res.info["grid_start_ramp_violations"] == 0
    _, j0, _ = _run(rows, tiny_system)  # no limit: all at 0
    assert (j0["sim_start_s"] == 0).all()


def test_start_larger_than_a_window_is_a_recorded_violation(tiny_system):
    # limit 1 W/s: a minute allows 60 W, less than one job's 245.614 W step. The first starts on the full bucket
    # (a violation); the second waits until the bucket is full again: (60 + 245.614 - 60)/1 s later
    rows = [(1, 0, 1, 1000, 1000), (2, 0, 1, 1000, 1000)]
    res, j, _ = _run(rows, tiny_system, ramp=1.0)
    assert j.loc[1, "sim_start_s"] == 0
    assert j.loc[2, "sim_start_s"] == pytest.approx(STEP1, rel=1e-9)
    assert res.info["grid_start_ramp_violations"] == 2


def test_merge_event_caps():
    base = [(0.0, 2000.0), (1000.0, 3000.0)]
    ev = [GridEvent(500.0, 1500.0, 2500.0), GridEvent(1200.0, 1300.0, 1000.0)]
    assert merge_event_caps(base, ev, 0.0) == [(0.0, 2000.0), (1000.0, 2500.0), (1200.0, 1000.0), (1300.0, 2500.0),
                                               (1500.0, 3000.0)]
    assert merge_event_caps([], [], 0.0) == []
    assert merge_event_caps([], [], 0.0, need_power=True) == [(0.0, float("inf"))]
    assert merge_event_caps([], [GridEvent(10.0, 20.0, 5.0)], 0.0) == [(0.0, float("inf")), (10.0, 5.0),
                                                                         (20.0, float("inf"))]


def test_soft_start_and_ramp_down_in_the_resampled_power(tiny_system):
    # one 2-node job (467.836 W of IT above idle, one allocation row per node run) for 300 s, starts and ends
    # shaped at 2 W/s: the 1 s series never steps by more than 2 W, and the filler after the end is m^2 / (2 r)
    res, j, _ = _run([(1, 0, 2, 300, 300)], tiny_system)
    sim_idle = IDLE_IT / 4
    t0, fast, extra = fast_facility_series(res, idle_node_it_W=sim_idle, it_per_dc=1 / (0.9 * 0.95), dt_s=1.0,
                                           shape_ramp_W_per_s=2.0)
    m = 2 * NODE_IT
    assert np.max(np.abs(np.diff(fast))) <= 2.0 * (1 + 1e-9)
    assert extra["E_ramp_down_filler_J"] == pytest.approx(m * m / 4.0, rel=1e-9)
    assert extra["E_soft_start_deficit_J"] == pytest.approx(m * m / 4.0, rel=1e-9)
    assert fast[100] == pytest.approx(IDLE_IT + 2.0 * 100.5, rel=1e-9)  # mid-ramp: idle + r x 100.5 s
    assert fast[299] == pytest.approx(IDLE_IT + m, rel=1e-9)
