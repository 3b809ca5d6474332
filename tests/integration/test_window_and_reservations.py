"""Backfill reservations and run-window edges (issue #12, kinds 1 and 2): hand-computed schedules and energies.

Rows are (id, submit, nodes, runtime, requested[, recorded start]) as in :func:`tests.conftest.make_jobs`. The
tiny system: idle 100 W, busy 300 W per node (cpu_util 1); a lossless variant is used where energies are summed by
hand. Each expected number is worked out in the comment above its assert.
"""

from __future__ import annotations

import numpy as np
import pytest

from power.system import System
from scheduler_sim.policies import SchedulerView
from scheduler_sim.policies.backfill import shadow_time
from scheduler_sim.kernel.recorder import StepIntegrator
from scheduler_sim.kernel.simulation import JobOutcome, Simulation, SimulationConfig
from tests.conftest import make_jobs, tiny_system_spec

DAY = 86400.0
RESERVING = ["easy", "easy-bestfit", "conservative"]


def system(n_nodes: int = 4, lossless: bool = False) -> System:
    spec = tiny_system_spec(n_nodes)
    if lossless:
        spec["sivoc"] = {"P_fixed_W": 0.0, "eta": 1.0, "k_per_W": 0.0}
        spec["rectifier"] = {"P_fixed_W": 0.0, "eta": 1.0, "k_per_W": 0.0, "nodes_per_rectifier": 1}
    return System.from_spec(spec, source="test")


def run(rows, sysm, backfill="easy", **kw):
    kw = {"window_start_s": 0.0, "window_s": 1e6, **kw}
    res = Simulation(make_jobs(rows), sysm, "fcfs", SimulationConfig(backfill=backfill, **kw)).run()
    return res, res.jobs.set_index("job_id")


# ---------------------------------------------------------------- tied ends (field case easy-tie)
# 9 nodes. Jobs 1 (1 node) and 2 (5 nodes) run 0..100 (requested 100). At 10 job 3 (4 nodes, 500 s requested)
# is the head with 3 nodes free: at the shadow time 100 both running jobs have ended, so 9 nodes are free and
# extra = 9 - 4 = 5. Job 4 (3 nodes, 300 s) fits the 3 free nodes and 3 <= 5: it backfills at 10. Job 3 at 100.
TIE_A = [(1, 0, 1, 100, 100), (2, 0, 5, 100, 100), (3, 10, 4, 50, 500), (4, 10, 3, 300, 300)]
TIE_B = [(1, 0, 5, 100, 100), (2, 0, 1, 100, 100), (3, 10, 4, 50, 500), (4, 10, 3, 300, 300)]  # ids swapped


@pytest.mark.parametrize("rows", [TIE_A, TIE_B], ids=["a", "b"])
@pytest.mark.parametrize("backfill", ["easy", "easy-bestfit"])
def test_easy_counts_every_tied_end(rows, backfill):
    _, j = run(rows, system(9), backfill)
    assert j["sim_start_s"].to_dict() == {1: 0, 2: 0, 3: 100, 4: 10}


@pytest.mark.parametrize("running", [[0, 1], [1, 0]])
def test_shadow_time_ties_whatever_the_order(running):
    # running jobs 0 (1 node) and 1 (5 nodes) both end at 100; 3 free, head needs 4: shadow 100, extra 3+1+5-4 = 5
    v = SchedulerView(now_s=10.0, queue=[2], free_nodes=3, nodes=np.array([1, 5, 4]),
                      estimate_s=np.array([100.0, 100.0, 500.0]), submit_s=np.zeros(3),
                      recorded_start_s=np.full(3, np.nan), running=running, start_s=np.array([0.0, 0.0, np.nan]))
    assert shadow_time(v, 4) == (100.0, 5)


# ---------------------------------------------------------------- known future availability
# 4 nodes; nodes 2-3 down on [0, 3600). Job 1 (4 nodes, 100 s) at 1 cannot start before 3600: it is reserved at
# the downtime end. Job 2 (2 nodes, 10,000 s) at 2 fits now but would hold 2 nodes at 3600: it may not backfill;
# it starts when job 1 ends, 3700.
HEAD_AND_LONG = [(1, 1, 4, 100, 100), (2, 2, 2, 10000, 10000)]


@pytest.mark.parametrize("backfill", RESERVING)
def test_downtime_end_gives_the_head_a_reservation(backfill):
    _, j = run(HEAD_AND_LONG, system(), backfill, downtimes=[(0.0, 3600.0, np.array([2, 3]))])
    assert j["sim_start_s"].to_dict() == {1: 3600, 2: 3700}


@pytest.mark.parametrize("backfill", RESERVING)
def test_drain_end_gives_the_head_a_reservation(backfill):
    # Job 1 (2 nodes, 500 s) runs 0..500 on nodes 0-1; nodes 0-1 are drained on [100, 3600): job 1 finishes, but
    # its nodes are back only at 3600. Head 2 (4 nodes) at 1: the old shadow (job 1's end, 500) was wrong; it is
    # 3600. Job 3 (2 nodes, 10,000 s) at 2 fits nodes 2-3 now but would hold them at 3600: it waits for the head
    # (3600..3700) and starts at 3700.
    rows = [(1, 0, 2, 500, 500), (2, 1, 4, 100, 100), (3, 2, 2, 10000, 10000)]
    _, j = run(rows, system(), backfill, downtimes=[(100.0, 3600.0, np.array([0, 1]), True)])
    assert j["sim_start_s"].to_dict() == {1: 0, 2: 3600, 3: 3700}


@pytest.mark.parametrize("backfill", RESERVING)
def test_power_cap_step_gives_the_head_a_reservation(backfill):
    # Tiny system: a busy node adds 200 W DC = 200 / (0.9 x 0.95) = 233.92 W of IT, x 1.05 (cooling estimate) =
    # 245.61 W of facility power; the idle machine draws 4 x (110 / 0.9) = 488.89 W into the SIVOCs, two rectifiers
    # (2 x 122.22 + 20) / 0.95 = 278.36 W each: 556.73 W IT, 584.56 W facility.
    # Budget 953 W on [0, 1000) leaves 368.4 W: one busy node (245.6), not two (491.2). From 1000: 1200 W leaves
    # 615.4 W: two nodes, not three (736.8).
    # Head 1 (2 nodes, 100 s) at 0 can start only at 1000 (budget step). Job 2 (1 node, 5000 s) at 1 fits nodes
    # and power now, but running at 1000 it would leave 615.4 - 245.6 = 369.8 W < 491.2 W for the head: it may
    # not start. The head runs 1000..1100; job 2 starts at 1100 (at 1000 both together need 736.8 W > 615.4 W).
    rows = [(1, 0, 2, 100, 100), (2, 1, 1, 5000, 5000)]
    _, j = run(rows, system(), backfill, power_cap=[(0.0, 953.0), (1000.0, 1200.0)])
    assert j["sim_start_s"].to_dict() == {1: 1000, 2: 1100}


@pytest.mark.parametrize("backfill", RESERVING)
def test_future_maintenance_is_not_overbooked(backfill):
    # Nodes 0-3 all down on [200, 300) (maintenance, known in advance). Job 1 (4 nodes, 50 s) at 0 fits before it.
    # Job 2 (4 nodes, 500 s) at 0 cannot run through the maintenance: earliest 300. Job 3 (1 node, 100 s) at 0
    # fits [50, 150) before the maintenance and before job 2: it backfills at 50.
    rows = [(1, 0, 4, 50, 50), (2, 0, 4, 500, 500), (3, 0, 1, 100, 100)]
    _, j = run(rows, system(), backfill, downtimes=[(200.0, 300.0, np.arange(4))])
    assert j["sim_start_s"].to_dict() == {1: 0, 2: 300, 3: 50}
    assert (j["outcome"] == JobOutcome.COMPLETED).all()


# ---------------------------------------------------------------- carried-in jobs (field case prefill-over-limit)
def test_carried_in_job_killed_at_its_limit_at_the_window_start():
    # Job 1 ran 0..200,000 in the trace but requested 86,400 s: under the wall-time rule it is killed at 86,400,
    # which is the window start. Job 2, submitted in the window at 90,000, is killed at 90,000 + 86,400 = 176,400.
    rows = [(1, 0, 2, 200000, 86400, 0.0), (2, 90000, 2, 200000, 86400)]
    res, j = run(rows, system(), "easy", window_start_s=DAY, window_s=DAY)
    assert j.loc[1, "outcome"] == JobOutcome.KILLED_WALLTIME and j.loc[1, "sim_end_s"] == DAY
    assert j.loc[1, "energy_dc_J"] == 0.0
    assert j.loc[2, "outcome"] == JobOutcome.KILLED_WALLTIME and j.loc[2, "sim_end_s"] == 176400
    assert res.summary["jobs_completed"] == 0 and res.summary["jobs_killed_walltime"] == 2


@pytest.mark.parametrize("backfill", ["none", "easy", "conservative"])
def test_carried_in_job_obeys_walltime(backfill):
    # Window from 43,200: job 1 (started at 0, requested 86,400) is running; it is killed at 86,400, not at its
    # recorded 200,000. Its energy in the window: 2 nodes x 300 W x 43,200 s = 25,920,000 J.
    rows = [(1, 0, 2, 200000, 86400, 0.0)]
    _, j = run(rows, system(), backfill, window_start_s=DAY / 2, window_s=DAY)
    assert j.loc[1, "sim_end_s"] == DAY and j.loc[1, "outcome"] == JobOutcome.KILLED_WALLTIME
    assert j.loc[1, "energy_dc_J"] == pytest.approx(25_920_000.0, rel=1e-12)


def test_replay_keeps_the_recorded_end_of_carried_in_jobs():
    # replay never kills at the requested time: the carried-in job ends at its recorded 200,000
    rows = [(1, 0, 2, 200000, 86400, 0.0)]
    res = Simulation(make_jobs(rows), system(), "replay", SimulationConfig(window_start_s=DAY / 2, window_s=DAY)).run()
    assert res.jobs["sim_end_s"].iloc[0] == 200000 and res.jobs["outcome"].iloc[0] == JobOutcome.COMPLETED


# ---------------------------------------------------------------- the horizon (field case drain-running-job)
def test_horizon_cuts_running_jobs_and_energy_stops_there():
    # Job 1 (1 node, no limit, 1e7 s) at 0; window 1 day, max drain 10 days: horizon 11 days = 950,400 s.
    # It is cut there. Energy (lossless): busy node 300 W + 3 idle nodes x 100 W = 600 W x 950,400 s.
    rows = [(1, 0, 1, 1e7, np.nan)]
    res, j = run(rows, system(lossless=True), "easy", window_s=DAY, max_drain_s=10 * DAY)
    assert j.loc[1, "sim_end_s"] == 950400 and j.loc[1, "outcome"] == JobOutcome.CUT_AT_HORIZON
    assert j.loc[1, "energy_dc_J"] == pytest.approx(300 * 950400, rel=1e-12)
    assert res.totals["duration_s"] == 950400
    assert res.totals["E_node_dc_J"] == pytest.approx(600 * 950400, rel=1e-12)
    assert res.summary["jobs_cut_at_horizon"] == 1 and res.summary["jobs_completed"] == 0
    assert res.info["stopped_at_horizon_s"] == 950400


def test_horizon_rounded_up_to_a_whole_interval():
    # max drain 1 day + 30 s with 60 s intervals: the horizon 2 days + 30 s is rounded up to 2 days + 60 s.
    rows = [(1, 0, 1, 1e7, np.nan)]
    res, j = run(rows, system(lossless=True), "easy", window_s=DAY, max_drain_s=DAY + 30)
    assert j.loc[1, "sim_end_s"] == 2 * DAY + 60 and res.totals["duration_s"] == 2 * DAY + 60
    assert res.totals["E_node_dc_J"] == pytest.approx(600 * (2 * DAY + 60), rel=1e-12)


# ---------------------------------------------------------------- step and interval boundaries
@pytest.mark.parametrize("step,interval,duration", [(0.1, 0.3, 20.1), (0.7, 2.1, 21.0), (0.3, 0.9, 20.7),
                                                    (15.0, 60.0, 60.0), (0.1, 0.1, 20.0), (1.1, 3.3, 23.1)])
def test_last_interval_integrated(step, interval, duration):
    # 4 lossless nodes, one job (1 node) on [10, 20): idle 400 W on [0, 10), 600 W on [10, 20), 400 W after.
    # The run ends on the first whole interval at or after 20 s (hand: ceil(20 / interval) x interval).
    rows = [(1, 10, 1, 10, 10)]
    res, _ = run(rows, system(lossless=True), "easy", step_s=step, interval_s=interval)
    expect = 400 * 10 + 600 * 10 + 400 * (duration - 20)  # e.g. 0.1 / 0.3: 4000 + 6000 + 40 = 10,040 J
    assert res.totals["duration_s"] == pytest.approx(duration, abs=1e-9)
    assert res.totals["E_it_J"] == pytest.approx(expect, rel=1e-9)
    closes = res.totals["E_idle_node_it_J"] + res.jobs["energy_it_J"].sum()
    assert res.totals["E_it_J"] == pytest.approx(closes, rel=1e-9)
    assert res.info["cooling_steps"] == round(duration / step)
    assert len(res.time_s) == round(duration / interval)


def test_integrator_completes_the_step_ending_at_a_boundary():
    # 0.1 s steps: advancing to boundary(201) = 201 x 0.1 must complete exactly 201 steps of value 1
    got = []
    integ = StepIntegrator(0.0, 0.1, 1, lambda k, b: got.append(b.copy()))
    integ.set(np.ones(1))
    integ.advance(integ.boundary(201))
    assert integ.steps_done == 201 and sum(b.shape[0] for b in got) == 201
    assert integ.first_boundary_at_or_after(20.0, 3) == 201  # 67 intervals of 3 steps: 20.1 >= 20


# ---------------------------------------------------------------- wait before the window
def test_wait_before_the_window_is_kept_apart():
    # Window from 1000. Job 1 (4 nodes) runs 0..2000 (prefilled). Job 2 (2 nodes, 100 s) was submitted at 500 and
    # is still queued at 1000 (recorded start 2000); it starts at 2000 when job 1 ends.
    # Window wait = 2000 - max(500, 1000) = 1000; before the window = 1000 - 500 = 500; turnaround = 2100 - 1000.
    rows = [(1, 0, 4, 2000, 2000, 0.0), (2, 500, 2, 100, 100, 2000.0)]
    res, j = run(rows, system(), "easy", window_start_s=1000.0, window_s=DAY)
    assert j.loc[2, "sim_start_s"] == 2000
    assert j.loc[2, "wait_s"] == 1000 and j.loc[2, "wait_before_window_s"] == 500
    assert j.loc[2, "turnaround_s"] == 1100
    assert j.loc[1, "wait_s"] == 0 and j.loc[1, "wait_before_window_s"] == 0  # prefilled: started at submit
    assert res.summary["mean_wait_s"] == 1000 and res.summary["mean_wait_before_window_s"] == 500
