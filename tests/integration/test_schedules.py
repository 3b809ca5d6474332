"""Hand-computed schedules for replay, FCFS and EASY on a 4-node machine, and exact energy accounting.

The eight-job case (times in s, nodes, runtime, requested) is worked by hand in the comments; it contains a job
ending at the exact time another starts on its nodes (J1 ends / J2 starts at 100; J4 and J8 end / J6 starts at
180), backfills that end exactly at the shadow time (J3, J8), and a job that outlives its requested time (J5,
killed at 150 + 200 = 350).
"""

from __future__ import annotations


import numpy as np
import pytest

from scheduler_sim.kernel.simulation import JobOutcome, Simulation, SimulationConfig
from tests.conftest import make_jobs

NAN = float("nan")

# id, submit, nodes, runtime, requested
EIGHT = [
    (1, 0, 2, 100, 100),
    (2, 0, 4, 50, 60),
    (3, 10, 2, 80, 90),
    (4, 20, 1, 30, 30),
    (5, 110, 1, 500, 200),
    (6, 120, 3, 40, 40),
    (7, 130, 1, 20, 25),
    (8, 140, 2, 10, 10),
]


def _run(rows, system, policy, **kw):
    sim = Simulation(make_jobs(rows), system, policy,
                     SimulationConfig(window_start_s=0.0, window_s=1e6, step_s=15.0, interval_s=60.0, **kw), plant=None)
    res = sim.run()
    j = res.jobs.set_index("job_id")
    return res, j


def test_easy_hand_schedule(tiny_system):
    # t=0:   J1 starts (2 free left); J2 (4) is head, shadow = J1's requested end 100, extra 0.
    # t=10:  J3 (2 nodes, 10+90=100 <= 100) backfills; ends at 90.
    # t=20:  J4 (1) no free node.
    # t=90:  J3 ends; J4: 90+30=120 > 100 and 1 > extra 0 -> waits.
    # t=100: J1 ends, J2 starts (same timestamp: the end is processed first); J2 ends 150.
    # t=150: J4, J5 start (free 4 -> 2); head J6 needs 3: shadow = J4's end 180, extra 0;
    #        J7: 150+25=175 <= 180 -> backfill, ends 170. J8 (2) > free 1.
    # t=170: J7 ends, free 2; J6 still head (shadow 180); J8: 170+10=180 <= 180 -> backfill, ends 180.
    # t=180: J4 and J8 end, J6 starts on the 3 free nodes, ends 220.
    # t=350: J5 killed at its requested time (150 + 200).
    res, j = _run(EIGHT, tiny_system, "easy")
    assert j["sim_start_s"].to_dict() == {1: 0, 2: 100, 3: 10, 4: 150, 5: 150, 6: 180, 7: 150, 8: 170}
    assert j["sim_end_s"].to_dict() == {1: 100, 2: 150, 3: 90, 4: 180, 5: 350, 6: 220, 7: 170, 8: 180}
    assert j.loc[5, "outcome"] == JobOutcome.KILLED_WALLTIME
    assert (j.drop(index=5)["outcome"] == JobOutcome.COMPLETED).all()
    # wait = start - submit; bounded slowdown for J3: turnaround 80 / run 80 = 1
    assert j.loc[6, "wait_s"] == 60 and j.loc[8, "wait_s"] == 30
    assert j.loc[2, "bounded_slowdown"] == pytest.approx(150 / 50)
    assert j.loc[8, "bounded_slowdown"] == pytest.approx(40 / 10)
    assert res.summary["makespan_s"] == 350


def test_fcfs_hand_schedule(tiny_system):
    # FCFS: J1 0-100; J2 (4) waits for J1: 100-150; J3 150-230; J4 150-180; J5 150-350 (killed);
    # J6 (3) needs 3 free: at 180 only 1 -> at 230 (J3 ends) 3 free -> 230-270;
    # J7, J8 behind J6: at 270 free 3 -> J7 270-290, J8 270-280.
    res, j = _run(EIGHT, tiny_system, "fcfs")
    assert j["sim_start_s"].to_dict() == {1: 0, 2: 100, 3: 150, 4: 150, 5: 150, 6: 230, 7: 270, 8: 270}
    assert j["sim_end_s"].to_dict() == {1: 100, 2: 150, 3: 230, 4: 180, 5: 350, 6: 270, 7: 290, 8: 280}


def test_replay_uses_recorded_starts_and_runtimes(tiny_system):
    # recorded starts; J2 runs 500 s past its 200 s request: replay does not kill.
    rows = [(1, 0, 2, 100, 100, 5), (2, 0, 2, 500, 200, 50), (3, 10, 2, 40, 50, 105)]
    res, j = _run(rows, tiny_system, "replay")
    assert j["sim_start_s"].to_dict() == {1: 5, 2: 50, 3: 105}
    assert j["sim_end_s"].to_dict() == {1: 105, 2: 550, 3: 145}
    assert res.info["replay_started_late"] == 0


def test_replay_late_when_machine_is_smaller(tiny_system):
    # the site ran J1 and J2 side by side on 6 nodes; our 4-node machine must delay J2 until J1 ends at 100.
    rows = [(1, 0, 3, 100, 100, 0), (2, 0, 3, 100, 100, 0)]
    res, j = _run(rows, tiny_system, "replay")
    assert j.loc[2, "sim_start_s"] == 100
    assert res.info["replay_started_late"] == 1


def test_missing_requested_time_is_not_zero(tiny_system):
    # J1 has no requested time: estimate = default_walltime_s (1000 s), never 0, and it is not killed.
    # J2 (head, 4 nodes) gets shadow 0 + 1000; J3 (1 node, 10+100 <= 1000) backfills at 10.
    rows = [(1, 0, 2, 300, NAN), (2, 5, 4, 10, 10), (3, 10, 1, 100, 100)]
    res, j = _run(rows, tiny_system, "easy", default_walltime_s=1000.0)
    assert j["sim_start_s"].to_dict() == {1: 0, 2: 300, 3: 10}
    assert j.loc[1, "outcome"] == JobOutcome.COMPLETED and j.loc[1, "sim_end_s"] == 300
    assert res.info["jobs_without_requested_time"] == 1


def test_zero_runtime_job_and_job_larger_than_machine(tiny_system):
    rows = [(1, 0, 2, 0, 10), (2, 0, 9, 10, 10), (3, 0, 4, 10, 10)]
    res, j = _run(rows, tiny_system, "easy")
    assert 2 not in j.index  # larger than the 4-node machine: excluded and reported
    assert res.info["jobs_excluded_larger_than_machine"] == 1
    assert j.loc[1, "sim_start_s"] == 0 and j.loc[1, "sim_end_s"] == 0
    assert j.loc[3, "sim_start_s"] == 0 and j.loc[3, "sim_end_s"] == 10


@pytest.mark.parametrize("policy", ["easy", "fcfs", "replay"])
def test_energy_conservation(tiny_system, policy):
    """Sum of job DC energies + idle DC energy = integrated node DC power (1e-9 relative), and by hand."""
    rows = [r + (r[1] + 3 * r[0],) for r in EIGHT]  # recorded starts for replay
    res, j = _run(rows, tiny_system, policy)
    tot = res.totals
    e_jobs = j["energy_dc_J"].sum()
    assert (e_jobs + tot["E_idle_node_dc_J"]) == pytest.approx(tot["E_node_dc_J"], rel=1e-9)
    assert (j["energy_it_J"].sum() + tot["E_idle_node_it_J"]) == pytest.approx(tot["E_it_J"], rel=1e-9)
    # by hand: busy node-seconds x 300 W + idle node-seconds x 100 W (default cpu_util 1.0 -> 300 W)
    busy = float((j["run_s"] * j["nodes"]).sum())
    total_node_s = 4 * tot["duration_s"]
    assert tot["E_node_dc_J"] == pytest.approx(300.0 * busy + 100.0 * (total_node_s - busy), rel=1e-12)
    # the loss chain per node: SIVOC in = (P + 10)/0.9; rectifier in = (sum of 2 SIVOC inputs + 20)/0.95
    def node_in(p):
        return ((p + 10.0) / 0.9 + 20.0 / 2) / 0.95
    assert tot["E_it_J"] == pytest.approx(node_in(300.0) * busy + node_in(100.0) * (total_node_s - busy), rel=1e-12)


def test_easy_busy_nodes_series_matches_schedule(tiny_system):
    # Interval averages of busy nodes, by hand, for the EASY schedule (60 s intervals):
    # [0,60): J1 2 nodes all along + J3 2 nodes from 10 -> 2 + 2*50/60
    res, j = _run(EIGHT, tiny_system, "easy")
    busy = res.facility["busy_nodes"]
    assert busy[0] == pytest.approx(2 + 2 * 50 / 60)
    # node-seconds over the whole run equal the sum over jobs
    assert busy.sum() * 60.0 == pytest.approx(float((j["run_s"] * j["nodes"]).sum()))
    assert res.summary["utilisation"] == pytest.approx(float((j["run_s"] * j["nodes"]).sum()) / (4 * 360.0))


def test_down_nodes_kill_running_job_and_are_never_allocated(tiny_system):
    # Nodes 0-1 down during [50, 150). J1 (2 nodes, on nodes 0-1 from 0) is killed at 50.
    # J2 (3 nodes) submitted at 60: only nodes 2-3 are up -> waits until 150, runs 150-160.
    rows = [(1, 0, 2, 100, 100), (2, 60, 3, 10, 10)]
    sim = Simulation(make_jobs(rows), tiny_system, "easy",
                     SimulationConfig(window_start_s=0.0, window_s=1e6, downtimes=[(50.0, 150.0, np.array([0, 1]))],
                                      on_failure="end"))
    res = sim.run()
    j = res.jobs.set_index("job_id")
    assert j.loc[1, "sim_end_s"] == 50 and j.loc[1, "outcome"] == JobOutcome.KILLED_NODE_DOWN
    assert j.loc[2, "sim_start_s"] == 150 and j.loc[2, "sim_end_s"] == 160
    # down nodes counted in the series: interval [60,120) fully down 2 nodes
    assert res.facility["down_nodes"][1] == pytest.approx(2.0)
    assert j.loc[1, "energy_dc_J"] == pytest.approx(2 * 300.0 * 50)


def test_prefill_places_running_jobs_first(tiny_system):
    # Window opens at t0 = 1000. J1 was running (recorded 900-1100): prefilled at 1000 for its remaining 100 s.
    # J2 (4 nodes) submitted at 1000 must wait for J1's end at 1100 under FCFS.
    rows = [(1, 800, 2, 200, 300, 900), (2, 1000, 4, 10, 10, 1000)]
    sim = Simulation(make_jobs(rows), tiny_system, "fcfs", SimulationConfig(window_start_s=1000.0, window_s=1000.0))
    res = sim.run()
    j = res.jobs.set_index("job_id")
    assert bool(j.loc[1, "prefilled"]) and j.loc[1, "sim_end_s"] == 1100
    assert j.loc[2, "sim_start_s"] == 1100
    assert res.info["jobs_prefilled"] == 1
    # the prefilled job's energy counts only its time inside the run (1000-1100)
    assert j.loc[1, "energy_dc_J"] == pytest.approx(2 * 300.0 * 100)


def test_partition_power_profile_and_energy_split(tiny_system):
    # Nodes 2-3 belong to a partition (e.g. serving) with its own power: 200 W each from t=0, 250 W from t=100.
    # Batch J1 (2 nodes, 0-60 s) runs on nodes 0-1; J2 (3 nodes) can never fit the 2-node batch pool: excluded.
    from scheduler_sim.kernel.simulation import NodePowerProfile, SimulationConfig
    prof = NodePowerProfile(nodes=np.array([2, 3]), t_s=np.array([0.0, 100.0]),
                            P_W=np.array([[200.0, 200.0], [250.0, 250.0]]), label="serving")
    rows = [(1, 0, 2, 60, 60), (2, 0, 3, 10, 10)]
    sim = Simulation(make_jobs(rows), tiny_system, "easy", SimulationConfig(window_start_s=0.0, window_s=1e6), partition=prof)
    res = sim.run()
    t = res.totals
    assert res.info["jobs_excluded_larger_than_machine"] == 1
    # run lasts to the last partition change (100 s) padded to 120 s
    assert t["duration_s"] == 120.0
    # partition: 2 x 200 W x 100 s + 2 x 250 W x 20 s = 50,000 J
    assert t["E_partition_node_dc_J"] == pytest.approx(50_000.0)
    # batch job 2 x 300 W x 60 s = 36,000 J; idle nodes 0-1 after 60 s: 2 x 100 W x 60 s = 12,000 J
    assert res.jobs["energy_dc_J"].sum() == pytest.approx(36_000.0)
    assert t["E_idle_node_dc_J"] == pytest.approx(12_000.0)
    assert t["E_node_dc_J"] == pytest.approx(50_000.0 + 36_000.0 + 12_000.0, rel=1e-12)
    assert (res.jobs["energy_it_J"].sum() + t["E_idle_node_it_J"] + t["E_partition_node_it_J"]
            == pytest.approx(t["E_it_J"], rel=1e-12))
    # per-job per-CDU IT power sums to the job's IT power (1 CDU here)
    assert res.job_cdu_it_W[:, 0] * 60.0 == pytest.approx(res.jobs["energy_it_J"].to_numpy())


def test_measured_power_replaces_the_model(tiny_system):
    jobs = make_jobs([(1, 0, 2, 100, 100), (2, 0, 2, 100, 100)])
    jobs["measured_node_power_W"] = [250.0, float("nan")]
    res = Simulation(jobs, tiny_system, "easy", SimulationConfig(window_start_s=0.0, window_s=1e6, use_measured_power=True)).run()
    j = res.jobs.set_index("job_id")
    assert j.loc[1, "energy_dc_J"] == pytest.approx(2 * 250.0 * 100)   # telemetry
    assert j.loc[2, "energy_dc_J"] == pytest.approx(2 * 300.0 * 100)   # model (no telemetry)
    assert res.info["jobs_power_measured"] == 1 and res.info["jobs_power_modelled"] == 1


def test_node_down_requeues_job_and_counts_the_loss(tiny_system):
    # Same as above with requeue: J1 is killed at 50 (lost 2 nodes x 50 s) and requeued with its submit time 0;
    # the pass at 50 restarts it at once on the free nodes 2-3, from scratch: 50-150.
    # J2 (3 nodes, submit 60) waits until 150 (nodes 0-1 back up, J1 ended): 150-160.
    rows = [(1, 0, 2, 100, 100), (2, 60, 3, 10, 10)]
    sim = Simulation(make_jobs(rows), tiny_system, "easy",
                     SimulationConfig(window_start_s=0.0, window_s=1e6, downtimes=[(50.0, 150.0, np.array([0, 1]))],
                                      on_failure="requeue"))
    res = sim.run()
    j = res.jobs.set_index("job_id")
    assert j.loc[1, "sim_start_s"] == 50 and j.loc[1, "sim_end_s"] == 150
    assert j.loc[1, "requeues"] == 1 and j.loc[1, "outcome"] == JobOutcome.COMPLETED
    assert j.loc[1, "lost_node_s"] == pytest.approx(100.0)
    assert j.loc[1, "lost_energy_dc_J"] == pytest.approx(2 * 300.0 * 50)
    # the job's energy covers both attempts: 2 x 300 W x (50 + 100) s
    assert j.loc[1, "energy_dc_J"] == pytest.approx(2 * 300.0 * 150)
    assert j.loc[2, "sim_start_s"] == 150
    assert res.info["lost_node_s"] == pytest.approx(100.0)


def test_drain_lets_running_jobs_finish(tiny_system):
    # Drain nodes 0-1 over [50, 150): J1 on them keeps running to 100; J2 (2 nodes, submit 60) gets nodes 2-3.
    # J3 (4 nodes, submit 70) must wait for the drain to end at 150.
    rows = [(1, 0, 2, 100, 100), (2, 60, 2, 10, 10), (3, 70, 4, 10, 10)]
    sim = Simulation(make_jobs(rows), tiny_system, "easy",
                     SimulationConfig(window_start_s=0.0, window_s=1e6, downtimes=[(50.0, 150.0, np.array([0, 1]), True)]))
    res = sim.run()
    j = res.jobs.set_index("job_id")
    assert j.loc[1, "sim_end_s"] == 100 and j.loc[1, "outcome"] == JobOutcome.COMPLETED
    assert j.loc[2, "sim_start_s"] == 60
    assert j.loc[3, "sim_start_s"] == 150


def test_running_job_that_does_not_fit_at_window_start_is_queued_once(tiny_system):
    # Regression (found by an adversarial test): J1 and J2 were both running at the window start t0 = 1000 on
    # the site's bigger machine (3 + 3 nodes); J1 is prefilled, J2 does not fit and must be queued ONCE, not
    # twice. It starts when J1 ends at 1100 and runs its full recorded run time (it is restarted, not resumed).
    rows = [(1, 0, 3, 1100, 2000, 0), (2, 0, 3, 1500, 2000, 0), (3, 1000, 1, 10, 10, 1000)]
    sim = Simulation(make_jobs(rows), tiny_system, "replay", SimulationConfig(window_start_s=1000.0, window_s=1000.0))
    res = sim.run()
    j = res.jobs.set_index("job_id")
    assert res.info["prefill_queued_for_lack_of_nodes"] == 1
    assert len(res.allocations["job_id"][res.allocations["job_id"] == 2]) == 1  # one attempt on one node run
    assert j.loc[2, "sim_start_s"] == 1100 and res.info["jobs_not_run"] == 0
    t = res.totals
    assert res.jobs["energy_dc_J"].sum() + t["E_idle_node_dc_J"] == pytest.approx(t["E_node_dc_J"], rel=1e-12)


def test_measured_power_time_series_is_integrated_exactly(tiny_system):
    # J1 (2 nodes, 0-100 s) has a telemetry series: 200 W/node from 0, 280 W from 30 s, 120 W from 70 s, and a
    # sample at 150 s after its end (ignored). Energy = 2 x (200 x 30 + 280 x 40 + 120 x 30) = 41,600 J.
    # J2 (no series) keeps the model's 300 W.
    import pandas as pd
    jobs = make_jobs([(1, 0, 2, 100, 100), (2, 0, 2, 100, 100)])
    jobs["measured_node_power_W"] = [208.0, float("nan")]
    prof = pd.DataFrame({"job_id": [1, 1, 1, 1], "t_offset_s": [0.0, 30.0, 70.0, 150.0],
                         "node_power_W": [200.0, 280.0, 120.0, 999.0]})
    res = Simulation(jobs, tiny_system, "easy", SimulationConfig(window_start_s=0.0, window_s=1e6, use_measured_power=True),
                     job_power_profiles=prof).run()
    j = res.jobs.set_index("job_id")
    assert j.loc[1, "energy_dc_J"] == pytest.approx(41_600.0)
    assert j.loc[2, "energy_dc_J"] == pytest.approx(2 * 300.0 * 100)
    assert j.loc[1, "node_power_model_W"] == pytest.approx(300.0)  # kept for the measured-vs-model comparison
    t = res.totals
    assert res.jobs["energy_dc_J"].sum() + t["E_idle_node_dc_J"] == pytest.approx(t["E_node_dc_J"], rel=1e-12)
    assert res.jobs["energy_it_J"].sum() + t["E_idle_node_it_J"] == pytest.approx(t["E_it_J"], rel=1e-12)
    # the per-CDU power of the varying job is its mean over the run: x 100 s = its IT energy
    assert res.job_cdu_it_W[0].sum() * 100.0 == pytest.approx(j.loc[1, "energy_it_J"], rel=1e-12)
    assert res.info["jobs_power_time_series"] == 1
    # the facility series sees the steps: interval [0,60) averages (200x30 + 280x30)/60 = 240 W/node on 2 nodes
    assert res.facility["P_node_dc_W"][0] == pytest.approx(2 * 240.0 + 2 * 300.0 + 0.0)


def test_attribution_counts_every_attempt_of_a_requeued_job(tiny_system):
    # Regression (adversarial review): attribution used only the last attempt, so the energy of attempts killed
    # by a failure went to "idle". With the per-run allocation table every attempt is attributed exactly.
    from scheduler_sim.analysis.attribution import attribute
    rows = [(1, 0, 2, 100, 100), (2, 60, 3, 10, 10)]
    sim = Simulation(make_jobs(rows), tiny_system, "easy",
                     SimulationConfig(window_start_s=0.0, window_s=1e6, downtimes=[(50.0, 150.0, np.array([0, 1]))],
                                      on_failure="requeue"))
    res = sim.run()
    att = attribute(res, tiny_system)
    assert att.jobs["E_it_J"] == pytest.approx(res.jobs["energy_it_J"].to_numpy(), rel=1e-12)
    assert att.totals["closure_rel_error"] < 1e-12
    # the allocation runs carry each attempt's rack-input power: their energies sum to the jobs' IT energy
    al = res.allocations
    assert (al["it_power_W"] * (al["end_s"] - al["start_s"])).sum() == pytest.approx(res.jobs["energy_it_J"].sum())
