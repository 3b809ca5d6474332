"""Hand-computed schedules for every order and backfill strategy on a 4-node machine.

Each case is worked out by hand in its comments (times in s). Rows are (id, submit, nodes, runtime, requested).
"""

from __future__ import annotations

import numpy as np
import pytest

from scheduler_sim.kernel.simulation import JobOutcome, Simulation, SimulationConfig
from tests.conftest import make_jobs
from tests.integration.test_schedules import EIGHT

NAN = float("nan")


def run(rows, system, policy, backfill=None, **kw):
    jobs = kw.pop("jobs", None)
    if jobs is None:
        jobs = make_jobs(rows)
    kw = {"window_start_s": 0.0, "window_s": 1e6, **kw}
    sim = Simulation(jobs, system, policy, SimulationConfig(backfill=backfill, **kw))
    res = sim.run()
    return res, res.jobs.set_index("job_id")


# R holds 2 nodes until 100; A (3 nodes) is the head with shadow 100 and 1 extra node; B (4 nodes) is second;
# C (1 node, 200 s) arrives at 5.
PROTECT = [(1, 0, 2, 100, 100), (2, 1, 3, 50, 50), (3, 2, 4, 50, 50), (4, 5, 1, 200, 200)]


def test_easy_protects_only_the_head(tiny_system):
    # EASY: C backfills at 5 on the extra node (5+200 > 100 but 1 <= extra 1). A starts at 100 (R ends).
    # B needs 4 nodes: A ends 150 but C holds one node until 205 -> B starts 205: B was delayed by C.
    _, j = run(PROTECT, tiny_system, "fcfs", "easy")
    assert j["sim_start_s"].to_dict() == {1: 0, 2: 100, 3: 205, 4: 5}


def test_conservative_protects_every_reservation(tiny_system):
    # Conservative: A reserved [100,150) (3 nodes), B reserved [150,200) (4 nodes). C (1 node, 200 s) cannot
    # start at 5, 100 or 150 without overlapping B's window -> reserved at 200. Nobody is delayed.
    res, j = run(PROTECT, tiny_system, "fcfs", "conservative")
    assert j["sim_start_s"].to_dict() == {1: 0, 2: 100, 3: 150, 4: 200}


def test_conservative_reservations_logged(tiny_system):
    sim = Simulation(make_jobs(PROTECT), tiny_system, "fcfs",
                     SimulationConfig(backfill="conservative", window_start_s=0.0, window_s=1e6, record_reservations=True))
    sim.run()
    first: dict[int, float] = {}
    for _, r in sim.reservation_log:
        for k, v in r.items():
            first.setdefault(k, v)
    # job index 0 = R reserved for now (0), 1 = A at 100, 2 = B at 150, 3 = C at 200, each on its first pass,
    # and no reservation ever moved
    assert first == {0: 0.0, 1: 100.0, 2: 150.0, 3: 200.0}
    assert all(r[k] == first[k] for _, r in sim.reservation_log for k in r)


def test_conservative_on_the_eight_job_case(tiny_system):
    # Worked in full in the module's notes: J2 ends early at 150 (est 160), so J4, J5, J7 reserved for 160 start
    # at 150; J6 (3 nodes) gets 180, J8 backfills at 170 into [170,180) on 2 nodes; J5 killed at 150+200.
    _, j = run(EIGHT, tiny_system, "conservative")
    assert j["sim_start_s"].to_dict() == {1: 0, 2: 100, 3: 10, 4: 150, 5: 150, 6: 180, 7: 150, 8: 170}
    assert j.loc[5, "sim_end_s"] == 350 and j.loc[5, "outcome"] == JobOutcome.KILLED_WALLTIME


# R holds all 4 nodes until 100; L (2 nodes, 300 s), S (2 nodes, 10 s), M (2 nodes, 50 s) queue behind it.
ORDERS = [(1, 0, 4, 100, 100), (2, 1, 2, 300, 300), (3, 2, 2, 10, 10), (4, 3, 2, 50, 50)]


def test_sjf(tiny_system):
    # at 100: S (10) and M (50) start; S ends 110 -> L starts 110.
    _, j = run(ORDERS, tiny_system, "sjf")
    assert j["sim_start_s"].to_dict() == {1: 0, 2: 110, 3: 100, 4: 100}


def test_ljf(tiny_system):
    # at 100: L (300) and M (50) start; M ends 150 -> S starts 150.
    _, j = run(ORDERS, tiny_system, "ljf")
    assert j["sim_start_s"].to_dict() == {1: 0, 2: 100, 3: 150, 4: 100}


def test_largest_first_without_backfill_blocks(tiny_system):
    # R (4 nodes) until 100; Y (1), Z (2), X (3) queue in that order, 10 s each.
    # Largest first at 100: X (3) starts; Z (2) does not fit in 1 node and blocks Y (no backfill).
    # X ends 110: Z and Y start.
    rows = [(1, 0, 4, 100, 100), (2, 1, 1, 10, 10), (3, 2, 2, 10, 10), (4, 3, 3, 10, 10)]
    _, j = run(rows, tiny_system, "largest")
    assert j["sim_start_s"].to_dict() == {1: 0, 2: 110, 3: 110, 4: 100}
    # with first-fit backfill Y takes the spare node at 100
    _, j = run(rows, tiny_system, "largest", "firstfit")
    assert j["sim_start_s"].to_dict() == {1: 0, 2: 100, 3: 110, 4: 100}


def test_easy_bestfit_prefers_the_candidate_that_fills_the_nodes(tiny_system):
    # R (2 nodes) until 100; H (4 nodes) head, shadow 100, extra 0. At 5 two short candidates are queued:
    # P (1 node, 50 s) then Q (2 nodes, 50 s). First-fit takes P (then Q no longer fits); best-fit takes Q.
    rows = [(1, 0, 2, 100, 100), (2, 1, 4, 10, 10), (3, 5, 1, 50, 50), (4, 5, 2, 50, 50)]
    _, j = run(rows, tiny_system, "fcfs", "easy")
    assert j.loc[3, "sim_start_s"] == 5 and j.loc[4, "sim_start_s"] == 110
    _, j = run(rows, tiny_system, "fcfs", "easy-bestfit")
    assert j.loc[4, "sim_start_s"] == 5 and j.loc[3, "sim_start_s"] == 110


def _acct_jobs(rows, accounts):
    jobs = make_jobs(rows)
    jobs["account"] = accounts
    return jobs


def test_priority_fair_share_beats_age(tiny_system):
    # Account a used the whole machine 0-1000. Ja (account a, submitted 10) and Jb (account b, submitted 20)
    # both need all 4 nodes. Fair-share F_a = 2^(-1/0.5) = 0.25, F_b = 2^0 = 1: with w_fairshare = 1000 and
    # w_age = 1000 (ages 990 and 980 s of a 7-day max age: ~0.0016), Jb goes first at 1000, Ja at 1010.
    rows = [(1, 0, 4, 1000, 1000), (2, 10, 4, 10, 10), (3, 20, 4, 10, 10)]
    jobs = _acct_jobs(rows, ["a", "a", "b"])
    _, j = run(rows, tiny_system, "priority", jobs=jobs)
    assert j.loc[3, "sim_start_s"] == 1000 and j.loc[2, "sim_start_s"] == 1010
    # age only: the older Ja goes first
    _, j = run(rows, tiny_system, "priority", jobs=_acct_jobs(rows, ["a", "a", "b"]),
               policy_params={"w_fairshare": 0.0, "w_size": 0.0})
    assert j.loc[2, "sim_start_s"] == 1000 and j.loc[3, "sim_start_s"] == 1010


def test_priority_qos_weights(tiny_system):
    # same sizes and accounts; queue "high" has QoS weight 1 -> its job goes first despite arriving later.
    rows = [(1, 0, 4, 100, 100), (2, 10, 4, 10, 10), (3, 20, 4, 10, 10)]
    jobs = make_jobs(rows)
    jobs["queue"] = ["low", "low", "high"]
    _, j = run(rows, tiny_system, "priority", jobs=jobs,
               policy_params={"w_qos": 10_000.0, "qos_weights": {"high": 1.0, "low": 0.0}})
    assert j.loc[3, "sim_start_s"] == 100 and j.loc[2, "sim_start_s"] == 110


@pytest.mark.parametrize("policy,backfill", [("fcfs", "conservative"), ("sjf", "easy"), ("priority", "easy")])
def test_missing_requested_time_and_zero_runtime(tiny_system, policy, backfill):
    # J1 has no requested time: estimate = default 1000 s (never 0), not killed, runs its 300 s.
    # J2 runtime 0 starts and ends at its submit time 5 (1 node free).
    rows = [(1, 0, 3, 300, NAN), (2, 5, 1, 0, 10)]
    res, j = run(rows, tiny_system, policy, backfill, default_walltime_s=1000.0)
    assert j.loc[1, "sim_end_s"] == 300 and j.loc[1, "outcome"] == JobOutcome.COMPLETED
    assert j.loc[2, "sim_start_s"] == 5 and j.loc[2, "sim_end_s"] == 5


@pytest.mark.parametrize("policy,backfill", [("fcfs", "conservative"), ("largest", "easy"), ("priority", "none")])
def test_job_larger_than_machine_is_rejected_and_run_continues(tiny_system, policy, backfill):
    res, j = run([(1, 0, 5, 10, 10), (2, 0, 4, 10, 10)], tiny_system, policy, backfill)
    assert list(j.index) == [2] and res.info["jobs_excluded_larger_than_machine"] == 1


def test_identical_jobs_around_a_power_off_have_equal_runtime_and_energy(tiny_system):
    # J1 0-100, all nodes switched off (down) 200-300, J2 identical at 500-600.
    rows = [(1, 0, 2, 100, 100), (2, 500, 2, 100, 100)]
    res, j = run(rows, tiny_system, "conservative", downtimes=[(200.0, 300.0, np.arange(4))])
    assert j.loc[1, "run_s"] == j.loc[2, "run_s"] == 100
    assert j.loc[1, "energy_dc_J"] == j.loc[2, "energy_dc_J"] == pytest.approx(2 * 300.0 * 100)
    assert j.loc[1, "energy_it_J"] == pytest.approx(j.loc[2, "energy_it_J"], rel=1e-15)


def test_power_cap_delays_a_start_and_reports_binding(tiny_system):
    # Node power 100 W idle, 300 W busy; IT per node = ((P + 10)/0.9 + 20/2)/0.95, so starting a 2-node job
    # adds 2 x (300 - 100)/(0.9 x 0.95) = 467.84 W of IT, x (1 + 0.05 cooling estimate) = 491.2 W facility.
    # Idle facility: 4 x ((100+10)/0.9 + 10)/0.95 x 1.05 = 584.56 W. Cap 1,100 W: one 2-node job fits
    # (584.56 + 491.23 = 1,075.8 W), a second does not (1,567 W).
    rows = [(1, 0, 2, 100, 100), (2, 0, 2, 100, 100)]
    res, j = run(rows, tiny_system, "fcfs", "easy", power_cap=[(0.0, 1100.0)])
    assert j.loc[1, "sim_start_s"] == 0 and j.loc[2, "sim_start_s"] == 100
    assert res.info["power_cap_bound_s"] == pytest.approx(100.0)
    # without the cap both start at 0
    res, j = run(rows, tiny_system, "fcfs", "easy")
    assert j.loc[2, "sim_start_s"] == 0
    # a budget schedule: the cap is lifted at 50 s -> J2 starts at 50
    res, j = run(rows, tiny_system, "fcfs", "easy", power_cap=[(0.0, 1100.0), (50.0, 1e9)])
    assert j.loc[2, "sim_start_s"] == 50 and res.info["power_cap_bound_s"] == pytest.approx(50.0)


def test_spread_and_pack_placement():
    # 8 nodes, 4 CDUs of 2 nodes. Four 1-node jobs: lowest index puts them on CDUs 0,0,1,1; spread (least heat
    # first, no plant) puts one per CDU; pack fills the most loaded CDU first (0, 0, then 1, 1).
    from power.system import System
    from tests.conftest import tiny_system_spec
    sysm = System.from_spec(tiny_system_spec(n_nodes=8, n_cdus=4), source="tiny8")
    rows = [(i, 0, 1, 100, 100) for i in range(1, 5)]
    for placement, expect in (("lowest", [2, 2, 0, 0]), ("spread", [1, 1, 1, 1]), ("pack", [2, 2, 0, 0])):
        res, j = run(rows, sysm, "fcfs", placement=placement)
        occupied = np.bincount(sysm.node_cdu[res.allocations["node_first"]], minlength=4)
        assert occupied.tolist() == expect, placement


def test_job_that_no_budget_admits_is_rejected_not_left_blocking(tiny_system):
    # Idle facility power 584.56 W (see the cap test above); a 4-node job adds 2 x 491.23 = 982.5 W -> needs
    # 1,567 W. Under a 1,100 W cap for the whole run it can never start: it is rejected (outcome 4) instead of
    # holding the queue head for ever, and the 2-node jobs behind it run.
    rows = [(1, 0, 4, 100, 100), (2, 1, 2, 100, 100), (3, 2, 2, 100, 100)]
    res, j = run(rows, tiny_system, "fcfs", "easy", power_cap=[(0.0, 1100.0)])
    assert j.loc[1, "outcome"] == JobOutcome.REJECTED_POWER_CAP and np.isnan(j.loc[1, "sim_start_s"])
    assert j.loc[2, "sim_start_s"] == 1 and j.loc[3, "sim_start_s"] == 101
    assert res.summary["jobs_rejected_power_cap"] == 1 and res.summary["jobs_not_run"] == 0
    # with a budget that rises later the same job only waits for it
    res, j = run(rows, tiny_system, "fcfs", "easy", power_cap=[(0.0, 1100.0), (500.0, 2000.0)])
    assert j.loc[1, "sim_start_s"] >= 500 and res.summary["jobs_rejected_power_cap"] == 0


def test_run_stops_at_the_horizon_when_nodes_never_return(tiny_system):
    # all nodes down from 10 s for a year: J2 can never start; the run stops at window end + max_drain
    rows = [(1, 0, 1, 5, 5), (2, 20, 1, 5, 5)]
    res, j = run(rows, tiny_system, "fcfs", "easy", downtimes=[(10.0, 3.2e7, np.arange(4))], max_drain_s=3600.0)
    assert res.info["stopped_at_horizon_s"] >= 1e6 + 3600.0 - 1e-6
    assert res.info["jobs_not_run"] == 1 and j.loc[1, "sim_end_s"] == 5


def test_downtime_in_force_at_the_window_start_is_applied_before_the_prefill(tiny_system):
    # nodes 0-1 down from before t0 = 1000 until 1500; J1 was running at t0 on 2 nodes: it is prefilled on nodes
    # 2-3 (not on the down nodes, and not killed at t0).
    rows = [(1, 800, 2, 400, 600, 900)]
    res, j = run(rows, tiny_system, "fcfs", "easy", window_start_s=1000.0, window_s=100.0,
                 downtimes=[(500.0, 1500.0, np.array([0, 1]))])
    assert bool(j.loc[1, "prefilled"]) and j.loc[1, "sim_end_s"] == 1300 and j.loc[1, "requeues"] == 0
    assert set(res.allocations["node_first"]) == {2}
