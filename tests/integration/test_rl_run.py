"""RL post-training through the facility chain (issue 24 items 2 and 5): a ``[[workload]] family = "rl"`` table
becomes one gang job (every pool: they start together, on a busy machine too) whose node power is the pools' power
binned energy-exactly; the job's energy equals that integral by hand, the pools' GPU energy is carried to the
kernel unchanged, the run's energy closes, the pipeline gets an effective PUE from the attribution, and
``/workload`` in the HDF5 file passes the schema.
"""

from __future__ import annotations

import h5py
import numpy as np
import pandas as pd
import pytest

from jobs.table import empty_job_table
from power import load_system, node_power_w
from scheduler_sim.app.config import ConfigError, RunConfig
from scheduler_sim.app.rl_workload import bin_step_function
from scheduler_sim.app.runner import run_one
from scheduler_sim.app.workload_config import WorkloadConfig
from scheduler_sim.app.workloads import merge_jobs, training_jobs
from scheduler_sim.io.schema import validate_file
from scheduler_sim.kernel.simulation import Simulation, SimulationConfig

RL = dict(family="rl", name="grpo", model="llama-3-8b", gpu="h100-sxm",
          layout=dict(tp=8, pp=1, dp=2, zero_stage=1),
          rl=dict(rollout_replicas=12, rollout_tp=1, steps=2, prompts=16, group=4, reward_workers=32,
                  max_output=4096))


@pytest.fixture(scope="module")
def h100():
    return load_system("h100_4k")


def test_bin_step_function_keeps_the_energy_by_hand():
    t = np.array([0.0, 0.25, 1.5, 2.0])
    P = np.array([100.0, 300.0, 50.0, 0.0])
    tb, Pb = bin_step_function(t, P, 2.5, 1.0)
    # bins [0,1): 0.25*100 + 0.75*300 = 250; [1,2): 0.5*300 + 0.5*50 = 175; [2,2.5): 0
    assert tb.tolist() == [0.0, 1.0, 2.0] and Pb.tolist() == [250.0, 175.0, 0.0]
    assert float(np.dot(np.diff(np.append(tb, 2.5)), Pb)) == pytest.approx(25 + 375 + 25, rel=1e-15)


def test_rl_pools_become_one_gang_job_whose_energy_is_the_pool_power(h100):
    tj = training_jobs([WorkloadConfig(**RL)], h100, seed=5)
    rep, res = tj.rl[0], tj.rl_results[0]
    assert len(tj.jobs) == 1 and rep["rollout_nodes"] == 2 and rep["trainer_nodes"] == 2 and rep["nodes"] == 4
    assert int(tj.jobs["nodes"].iloc[0]) == 4 and int(tj.jobs["job_id"].iloc[0]) == rep["job_id"]
    jobs = merge_jobs(empty_job_table(), tj)
    sim = Simulation(jobs, h100, "fcfs", SimulationConfig(window_start_s=0.0, window_s=3600.0),
                     workload_power_profiles=tj.power_series).run()
    node = h100.node
    base = float(node_power_w(h100.default_cpu_util, 0.0, node)) - 8 * node.gpu_idle_W
    T = res.makespan_s
    E_pool = {k: float(np.dot(np.diff(np.append(t, T)), P)) for k, (t, P) in res.power.items()}
    job = sim.jobs.set_index("job_id").loc[rep["job_id"]]
    assert job.sim_start_s == 0.0
    assert job.sim_end_s - job.sim_start_s == pytest.approx(T, rel=1e-12)
    # 4 nodes: non-GPU part + rollout GPUs + 4 idle GPU slots (12 GPUs on 2 nodes) + reward above idle + trainer GPUs
    assert job.energy_dc_J == pytest.approx(4 * base * T + E_pool["rollout"] + E_pool["reward"]
                                            + 4 * node.gpu_idle_W * T + E_pool["trainer"], rel=1e-9)
    t = sim.totals
    assert sim.jobs["energy_it_J"].sum() + t["E_idle_node_it_J"] == pytest.approx(t["E_it_J"], rel=1e-9)
    # deterministic with the seed, different with another
    again = training_jobs([WorkloadConfig(**RL)], h100, seed=5)
    assert again.power_series.equals(tj.power_series)
    assert not training_jobs([WorkloadConfig(**RL)], h100, seed=6).power_series.equals(tj.power_series)


def test_rl_pools_co_start_on_a_busy_machine(h100):
    """510 of the 512 nodes are busy for 2 h; the pipeline (2 rollout + 2 trainer nodes) is submitted at 0. As two
    jobs (before), FCFS and EASY both ran the 2-node rollout job at 0-98 s on the 2 free nodes and the trainer after
    it, 98-196 s: the pools never overlapped, which the pipeline's power and timing never modelled. As one gang job
    every pool waits and all start at 2 h, on 4 nodes, for the pipeline's makespan."""
    tj = training_jobs([WorkloadConfig(**RL)], h100, seed=5)
    busy = empty_job_table()
    busy = pd.concat([busy, pd.DataFrame([{"job_id": 1, "submit_time_s": 0.0, "requested_walltime_s": 7200.0,
                                           "nodes": 510, "runtime_s": 7200.0, "start_time_s": np.nan,
                                           "end_time_s": np.nan, "user": "u", "account": "a", "queue": "q",
                                           "status": 1, "cpu_util": 0.5, "gpu_util": 0.5}])], ignore_index=True)
    jobs = merge_jobs(busy, tj)
    for policy in ("fcfs", "easy"):
        sim = Simulation(jobs, h100, policy, SimulationConfig(window_start_s=0.0, window_s=4 * 3600.0),
                         workload_power_profiles=tj.power_series).run()
        by_id = sim.jobs.set_index("job_id")
        rl = by_id.loc[tj.rl[0]["job_id"]]
        assert by_id.loc[1].sim_start_s == 0.0
        assert rl.sim_start_s == 7200.0 and rl.nodes == 4, policy
        assert rl.sim_end_s - rl.sim_start_s == pytest.approx(tj.rl_results[0].makespan_s, rel=1e-12)


def test_rl_run_reports_pue_and_writes_a_valid_workload_group(tmp_path):
    cfg = RunConfig.model_validate({
        "name": "rl", "system": "h100_4k", "seed": 0, "output": {"progress": False},
        "cooling": {"model": "fast"}, "trace": {"enabled": False, "window_start_days": 0.0, "window_days": 0.05},
        "scheduler": {"policy": "fcfs"}, "workload": [RL]})
    out = tmp_path / "rl.h5"
    lines = []
    r = run_one(cfg, out, echo=lines.append)
    assert validate_file(out) == []
    with h5py.File(out, "r") as f:
        rl = {k: v[()] for k, v in f["workload/rl"].items()}
        aj = {k: f["attribution/jobs"][k][()] for k in ("E_it_J", "E_facility_J")}
        ids = f["jobs/job_id"][()]
        assert f["workload/training/job_id"].shape == (0,)
        assert f["workload/rl_power/grpo/step_end_s"].shape == (2,)
    sel = ids == rl["job_id"][0]
    assert sel.sum() == 1 and rl["nodes"][0] == 4
    assert rl["E_it_J"][0] == pytest.approx(aj["E_it_J"][sel].sum(), rel=1e-12)
    assert rl["PUE_effective"][0] == pytest.approx(aj["E_facility_J"][sel].sum() / aj["E_it_J"][sel].sum(),
                                                   rel=1e-12)
    # a liquid-cooled facility's effective PUE: above 1, well below an air-cooled room's
    assert 1.0 < rl["PUE_effective"][0] < 1.5
    assert rl["J_per_sample_facility"][0] == pytest.approx(rl["E_facility_J"][0] / rl["samples_trained"][0])
    assert any(line.startswith("rl grpo: sync, 2 steps") and "PUE" in line and "waited" not in line for line in lines)
    assert rl["wait_s"][0] == 0.0 and rl["start_s"][0] == 0.0
    assert np.isfinite(r.summary["PUE"])


def test_rl_table_needs_a_layout_and_the_rl_family():
    with pytest.raises(ValueError, match="family 'rl' needs a layout"):
        WorkloadConfig(family="rl", name="x")
    with pytest.raises(ValueError, match="an rl table belongs to family 'rl'"):
        WorkloadConfig(family="training", layout=dict(tp=8, dp=1), rl={})
    with pytest.raises((ConfigError, ValueError), match="rollout_replicas"):
        WorkloadConfig(family="rl", layout=dict(tp=8, dp=1), rl={"rollout_replicas": 0})


def test_rl_rollout_model_must_be_a_serving_model(h100):
    w = WorkloadConfig(**{**RL, "model": "mixtral-8x7b", "layout": dict(tp=8, pp=1, dp=2, ep=2)})
    with pytest.raises(ValueError, match=r"\[\[workload\]\] 0 \('grpo'\): rollout model 'mixtral-8x7b' is not a "
                                         r"serving model"):
        training_jobs([w], h100, seed=0)
    too_big = WorkloadConfig(**{**RL, "rl": {**RL["rl"], "rollout_replicas": 4096}})
    with pytest.raises(ValueError, match=r"rollout \(512 nodes\) \+ trainer \(2 nodes\) exceed the 512 nodes"):
        training_jobs([too_big], h100, seed=0)
