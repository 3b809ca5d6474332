"""Energy counters of a job that fails, is requeued and runs again with measured power (issue #27 mutant 3)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from scheduler_sim.kernel.simulation import JobOutcome, Simulation, SimulationConfig
from tests.conftest import make_jobs

# tiny system (tests/conftest.py): SIVOC (P + 10) / 0.9, rectifier (L + 20) / 0.95, 2 nodes per rectifier, no
# overhead. A node's rack-input share is a P + b, a = 1 / (0.9 x 0.95), b = 10 / (0.9 x 0.95) + 20 / (0.95 x 2).
A = 1.0 / (0.9 * 0.95)
B = 10.0 / (0.9 * 0.95) + 20.0 / (0.95 * 2)


def test_requeued_job_second_run_with_measured_power_counts_each_attempt_hand_computed(tiny_system):
    # J1 (2 nodes, 100 s) has a telemetry series: 200 W/node from 0 s, 280 W from 30 s, 120 W from 70 s.
    # Nodes 0-1 go down at 50 s: attempt 1 (0-50 s on nodes 0-1) used 2 x (200 x 30 + 280 x 20) = 23,200 J DC,
    # all lost. Requeued, it restarts at 50 s on nodes 2-3 from the start of its series (the stale 70 s sample
    # of attempt 1 must not apply): attempt 2 (50-150 s) uses 2 x (200 x 30 + 280 x 40 + 120 x 30) = 41,600 J.
    jobs = make_jobs([(1, 0, 2, 100, 100)])
    jobs["measured_node_power_W"] = [208.0]
    prof = pd.DataFrame({"job_id": [1, 1, 1], "t_offset_s": [0.0, 30.0, 70.0],
                         "node_power_W": [200.0, 280.0, 120.0]})
    res = Simulation(jobs, tiny_system, "easy",
                     SimulationConfig(window_start_s=0.0, window_s=1e6, use_measured_power=True,
                                      downtimes=[(50.0, 1000.0, np.array([0, 1]))], on_failure="requeue"),
                     job_power_profiles=prof).run()
    j = res.jobs.set_index("job_id")
    assert j.loc[1, "requeues"] == 1 and j.loc[1, "outcome"] == JobOutcome.COMPLETED
    assert j.loc[1, "sim_start_s"] == 50 and j.loc[1, "sim_end_s"] == 150
    assert j.loc[1, "lost_energy_dc_J"] == pytest.approx(23_200.0, rel=1e-12)
    assert j.loc[1, "energy_dc_J"] == pytest.approx(23_200.0 + 41_600.0, rel=1e-12)
    e_it_1 = A * 23_200.0 + 2 * B * 50.0
    e_it_2 = A * 41_600.0 + 2 * B * 100.0
    assert j.loc[1, "energy_it_J"] == pytest.approx(e_it_1 + e_it_2, rel=1e-12)
    # each attempt's allocation row carries its own mean rack-input power (not the job's running total)
    al = res.allocations
    rows = np.flatnonzero(al["job_id"] == 1)
    e_rows = sorted(float(al["it_power_W"][i] * (al["end_s"][i] - al["start_s"][i])) for i in rows)
    assert e_rows == pytest.approx(sorted([e_it_1, e_it_2]), rel=1e-12)
    # the per-CDU power of the varying job is the mean over its last attempt only: x 100 s = attempt 2's energy
    assert res.job_cdu_it_W[0].sum() * 100.0 == pytest.approx(e_it_2, rel=1e-12)


def test_job_failing_twice_with_measured_power_loses_each_attempt_once_hand_computed(tiny_system):
    # Unplanned failures this time (a known downtime would keep EASY from starting it): nodes 0-1 fail at 50 s,
    # node 2 at 70 s (back at 120 s): attempt 1 loses 23,200 J as above; attempt 2 (50-70 s on nodes 2-3, 200 W/node) loses
    # 2 x 200 x 20 = 8,000 J more; attempt 3 (120-220 s on nodes 2-3) runs the whole series, 41,600 J.
    # Lost energy counts each failed attempt once: 23,200 + 8,000 = 31,200 J.
    jobs = make_jobs([(1, 0, 2, 100, 100)])
    jobs["measured_node_power_W"] = [208.0]
    prof = pd.DataFrame({"job_id": [1, 1, 1], "t_offset_s": [0.0, 30.0, 70.0],
                         "node_power_W": [200.0, 280.0, 120.0]})
    res = Simulation(jobs, tiny_system, "easy",
                     SimulationConfig(window_start_s=0.0, window_s=1e6, use_measured_power=True, on_failure="requeue",
                                      failures=np.array([[50.0, 1000.0, 0], [50.0, 1000.0, 1], [70.0, 120.0, 2]])),
                     job_power_profiles=prof).run()
    j = res.jobs.set_index("job_id")
    assert j.loc[1, "requeues"] == 2 and j.loc[1, "outcome"] == JobOutcome.COMPLETED
    assert j.loc[1, "sim_start_s"] == 120 and j.loc[1, "sim_end_s"] == 220
    assert j.loc[1, "lost_energy_dc_J"] == pytest.approx(23_200.0 + 8_000.0, rel=1e-12)
    assert j.loc[1, "energy_dc_J"] == pytest.approx(23_200.0 + 8_000.0 + 41_600.0, rel=1e-12)
    assert j.loc[1, "lost_node_s"] == pytest.approx(2 * 50.0 + 2 * 20.0)
    e_it = A * (23_200.0 + 8_000.0 + 41_600.0) + 2 * B * (50.0 + 20.0 + 100.0)
    assert j.loc[1, "energy_it_J"] == pytest.approx(e_it, rel=1e-12)
