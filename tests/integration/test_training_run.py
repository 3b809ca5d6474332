"""Training jobs in a run (issue 24 item 1): a [[workload]] table becomes a gang job whose node power is the
step function of its checkpoint / failure timeline at the exact iteration mean; per-job energy is that integral by
hand, the energy closes to 1e-9, runs are deterministic, and the 30-day 4,096-GPU job takes seconds.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from jobs.table import empty_job_table
from jobs.training import TrainingConstants
from power import PowerChain, load_system, node_power_w
from scheduler_sim.app.config import ConfigError, load_config
from scheduler_sim.app.workload_config import WorkloadConfig
from scheduler_sim.app.workloads import merge_jobs, training_jobs
from scheduler_sim.kernel.simulation import Simulation, SimulationConfig


@pytest.fixture(scope="module")
def h100():
    return load_system("h100_4k")


def _w(**kw):
    base = dict(family="training", name="t", model="llama-3-8b", train_hours=48.0, failure_rate_per_gpu_h=2e-3,
                checkpoint_interval_s=3600.0, layout=dict(tp=8, pp=1, dp=8, micro_batches=16, zero_stage=1))
    base.update(kw)
    return WorkloadConfig(**base)


def test_training_job_energy_is_its_power_step_function_by_hand(h100):
    tj = training_jobs([_w()], h100, seed=3)
    r = tj.reports[0]
    assert r["nodes"] == 8 and r["n_failures"] >= 1 and r["n_checkpoints"] >= 40
    jobs = merge_jobs(empty_job_table(), tj)
    res = Simulation(jobs, h100, "fcfs", SimulationConfig(window_start_s=0.0, window_s=5 * 86400.0),
                     workload_power_profiles=tj.power_series).run()
    j = res.jobs.iloc[0]
    assert j.sim_end_s - j.sim_start_s == pytest.approx(r["wall_s"], rel=1e-12)
    ps = tj.power_series
    dur = np.diff(np.append(ps["t_offset_s"].to_numpy(), r["wall_s"]))
    assert j.energy_dc_J == pytest.approx(8 * float(np.dot(dur, ps["node_power_W"])), rel=1e-9)
    # training segments at the exact iteration mean of the phase profile
    prof = tj.profiles[int(j.job_id)]
    assert prof.mean_W == pytest.approx(float(np.dot(prof.durations_s, prof.power_W)) / prof.period_s, rel=1e-12)
    assert ps["node_power_W"].iloc[0] == prof.mean_W
    t = res.totals
    assert (res.jobs["energy_it_J"].sum() + t["E_idle_node_it_J"]) == pytest.approx(t["E_it_J"], rel=1e-9)
    again = training_jobs([_w()], h100, seed=3)
    assert again.power_series.equals(tj.power_series)
    assert not training_jobs([_w()], h100, seed=4).power_series.equals(tj.power_series)


def test_thirty_days_of_a_4096_gpu_job_take_seconds(h100):
    w = _w(model="llama-3-70b", train_hours=648.0, failure_rate_per_gpu_h=1.97e-5, checkpoint_interval_s=1800.0,
           layout=dict(tp=8, pp=4, dp=128, micro_batches=32, schedule="interleaved", virtual_stages=5))
    tj = training_jobs([w], h100, seed=0)
    res = Simulation(merge_jobs(empty_job_table(), tj), h100, "fcfs",
                     SimulationConfig(window_start_s=0.0, window_s=30 * 86400.0), workload_power_profiles=tj.power_series).run()
    r = tj.reports[0]
    assert r["gpus"] == 4096 and r["iterations"] > 2e5        # ~300,000 iterations, none of them an event
    assert res.info["events"] < 4000                          # one per checkpoint edge and failure, not per iteration
    assert 0.9 < r["ettr"] < 1.0


def test_workload_table_is_validated(tmp_path):
    p = tmp_path / "w.toml"
    p.write_text('system = "h100_4k"\ntrace = { enabled = false }\n[[workload]]\nfamily = "training"\n'
                 'layout = { tp = 8, dp = 8 }\nbogus = 1\n')
    with pytest.raises(ConfigError, match="bogus"):
        load_config(p)
    p.write_text('system = "h100_4k"\ntrace = { enabled = false }\n[[workload]]\nfamily = "training"\n'
                 'layout = { tp = 8, dp = 8 }\n')
    cfg = load_config(p)
    assert cfg.workload[0].model == "llama-3-70b" and '"workload"' in cfg.to_json()
    assert '"workload"' not in cfg.model_copy(update={"workload": []}).to_json()  # runs without it: same JSON


def test_infeasible_layout_is_refused_naming_the_table(h100):
    w = _w(model="llama-3-405b", layout=dict(tp=8, pp=1, dp=8, zero_stage=0, recompute="none"))
    with pytest.raises(ValueError, match=r"\[\[workload\]\] 0 \('t'\): llama-3-405b .* GB per GPU needed > 80.0 GB"):
        training_jobs([w], h100, seed=0)
    with pytest.raises(ValueError, match="do not fill whole nodes"):
        training_jobs([_w(layout=dict(tp=4, pp=1, dp=3))], h100, seed=0)


def test_training_family_table_draws_jobs_into_the_run(h100):
    w = WorkloadConfig(family="training_family", name="moe", kind="moe", jobs=3, per_day=4.0, gpus=[256, 512],
                       train_hours_median=2.0, gpu="h100-sxm")
    tj = training_jobs([w], h100, seed=11)
    assert len(tj.jobs) == 3 and set(tj.jobs["nodes"]) <= {32, 64}
    assert all(r["model"] == "mixtral-8x7b" for r in tj.reports)
    res = Simulation(merge_jobs(empty_job_table(), tj), h100, "easy",
                     SimulationConfig(window_start_s=0.0, window_s=10 * 86400.0), workload_power_profiles=tj.power_series).run()
    t = res.totals
    assert (res.jobs["energy_it_J"].sum() + t["E_idle_node_it_J"]) == pytest.approx(t["E_it_J"], rel=1e-9)
    assert training_jobs([w], h100, seed=11).jobs.equals(tj.jobs)


def _one_day_and_node_it(tj, h100):
    """A day of FCFS on ``h100`` with the training jobs ``tj``; the run, the idle node's IT input [W] and the IT
    input per node-DC watt (the chain's slope), as :func:`fast_facility_series` takes them."""
    res = Simulation(merge_jobs(empty_job_table(), tj), h100, "fcfs", SimulationConfig(window_start_s=0.0, window_s=86400.0),
                     workload_power_profiles=tj.power_series).run()
    chain = PowerChain(h100)
    p0 = np.full(h100.n_nodes, float(node_power_w(0.0, 0.0, h100.node)))
    slope = float((chain.node_it_input_w(p0 + 1.0) - chain.node_it_input_w(p0)).mean())
    return res, float(chain.node_it_input_w(p0).mean()), slope


def test_fast_facility_series_shows_checkpoints_and_the_iteration_swing(h100):
    from scheduler_sim.analysis.grid_dynamics import fast_facility_series
    w = _w(train_hours=3.0, failure_rate_per_gpu_h=0.0, checkpoint_interval_s=1800.0, storage_bandwidth_GB_s=5.0,
           layout=dict(tp=8, pp=4, dp=2, micro_batches=8, zero_stage=1))
    tj = training_jobs([w], h100, seed=0)
    res, idle_it, slope = _one_day_and_node_it(tj, h100)
    prof = tj.profiles[int(res.jobs.iloc[0].job_id)]
    t0, plain, _ = fast_facility_series(res, idle_node_it_W=idle_it, it_per_dc=slope, dt_s=0.5)
    t0, fast, _ = fast_facility_series(res, idle_node_it_W=idle_it, it_per_dc=slope, dt_s=0.5, stepped={0: (
        tj.power_series["t_offset_s"].to_numpy(), tj.power_series["node_power_W"].to_numpy(), prof)})
    # energy kept up to the incomplete last iteration of each of the 6 training segments
    assert abs(fast.sum() - plain.sum()) * 0.5 < 6 * prof.period_s * 64 * slope * max(prof.power_W)
    # a checkpoint write (14 B x 8.03e9 / 5 GB/s = 22.5 s at the checkpoint power) shows as a dip at 1800 s
    write = 14 * 8.03e9 / 5e9
    k = int((1800.0 + write / 2) / 0.5)
    ck_W = float(tj.power_series["node_power_W"].iloc[1])
    assert ck_W < prof.mean_W and tj.reports[0]["checkpoint_write_s"] == pytest.approx(write, rel=1e-3)
    # the 60 s interval [1800, 1860) already holds the write at its mean (write s at ck_W, the rest training at the
    # iteration mean): the 0.5 s series adds the shape inside the interval only, ck_W minus that interval mean
    wr = float(tj.reports[0]["checkpoint_write_s"])
    inside = (wr * ck_W + (60.0 - wr) * prof.mean_W) / 60.0
    assert fast[k] - plain[k] == pytest.approx(8 * slope * (ck_W - inside), rel=1e-6)
    # during training the 0.5 s series swings with the iteration; its largest 1 s ramp follows the closed form
    from power.ramps import max_ramp
    seg = fast[int(100 / 0.5):int(1700 / 0.5)]
    assert max_ramp(seg, 0.5, 1.0)[0] == pytest.approx(8 * slope * prof.max_ramp_W(1.0), rel=0.05)


def test_fast_facility_series_counts_a_restart_once(h100):
    """A failure's detection + restart (720 s at restart power) spans whole 60 s output intervals, which already
    hold it at its mean: inside them the fine series equals the interval series (no iteration swing, nothing added),
    it stays above the idle machine's power, and its energy equals the interval series' to the partial iterations.
    Before the fix the dip was subtracted a second time there: the 1 s facility power of the 4,096-GPU study went
    to -0.93 MW for 8,773 s."""
    from scheduler_sim.analysis.grid_dynamics import fast_facility_series
    w = _w(train_hours=6.0, failure_rate_per_gpu_h=2e-3, checkpoint_interval_s=1800.0, detect_s=120.0,
           restart_s=600.0, layout=dict(tp=8, pp=4, dp=2, micro_batches=8, zero_stage=1))
    tj = training_jobs([w], h100, seed=0)
    assert tj.reports[0]["n_failures"] >= 1
    res, idle_it, slope = _one_day_and_node_it(tj, h100)
    prof = tj.profiles[int(res.jobs.iloc[0].job_id)]
    ps = tj.power_series
    t0, plain, _ = fast_facility_series(res, idle_node_it_W=idle_it, it_per_dc=slope, dt_s=1.0)
    t0, fast, _ = fast_facility_series(res, idle_node_it_W=idle_it, it_per_dc=slope, dt_s=1.0, stepped={0: (
        ps["t_offset_s"].to_numpy(), ps["node_power_W"].to_numpy(), prof)})
    restart_W = float(node_power_w(h100.default_cpu_util, TrainingConstants().util_restart, h100.node))
    seg = np.flatnonzero(np.isclose(ps["node_power_W"].to_numpy(), restart_W))
    assert seg.size >= 1
    a = float(ps["t_offset_s"].iloc[seg[0]])
    whole = slice(int(math.ceil(a / 60.0) * 60) + 60, int(math.ceil(a / 60.0) * 60) + 600)  # inside the 720 s
    assert np.allclose(fast[whole], plain[whole], rtol=1e-12, atol=1e-6)
    assert fast.min() > 0.5 * plain.min()
    n_seg = int((ps["node_power_W"].to_numpy() == prof.mean_W).sum())
    assert abs(fast.sum() - plain.sum()) < n_seg * prof.period_s * 64 * slope * max(prof.power_W)


def test_trace_jobs_of_a_queue_are_mapped_to_training_jobs(h100):
    from tests.conftest import make_jobs
    trace = make_jobs([(1, 0, 64, 36000, 40000), (2, 100, 32, 7200, 8000), (3, 200, 4, 600, 900)])
    trace["queue"] = ["train", "train", "debug"]
    trace["account"] = ["a", "b", "c"]
    w = WorkloadConfig(family="training_trace", name="mapped", model="llama-3-8b", trace_queue="train",
                       min_nodes=8, failure_rate_per_gpu_h=1e-4)
    tj = training_jobs([w], h100, seed=2, trace_jobs=trace)
    assert sorted(tj.replaced) == [1, 2] and sorted(tj.jobs["job_id"]) == [1, 2]
    j = tj.jobs.set_index("job_id")
    assert j.loc[1, "nodes"] == 64 and j.loc[2, "account"] == "b" and j.loc[1, "submit_time_s"] == 0.0
    # useful time = recorded run time x expected ETTR, so the realised wall time is near the recorded one
    r = {x["job_id"]: x for x in tj.reports}
    assert r[1]["wall_s"] == pytest.approx(36000, rel=0.1) and r[1]["useful_s"] < 36000
    merged = merge_jobs(trace, tj)
    assert sorted(merged["job_id"]) == [1, 2, 3] and merged.set_index("job_id").loc[3, "queue"] == "debug"
    assert np.isnan(merged.set_index("job_id").loc[3, "node_power_set_W"])
    res = Simulation(merged, h100, "easy", SimulationConfig(window_start_s=0.0, window_s=2 * 86400.0),
                     workload_power_profiles=tj.power_series).run()
    t = res.totals
    assert (res.jobs["energy_it_J"].sum() + t["E_idle_node_it_J"]) == pytest.approx(t["E_it_J"], rel=1e-9)
    with pytest.raises(ValueError, match="needs a batch trace"):
        training_jobs([w], h100, seed=2)


def test_training_report_is_written_to_workload_and_passes_the_schema(tmp_path):
    import h5py

    from scheduler_sim.app.config import RunConfig
    from scheduler_sim.app.runner import run_one
    from scheduler_sim.io.schema import validate_file

    w = dict(family="training", name="t", model="llama-3-8b", train_hours=2.0, failure_rate_per_gpu_h=2e-3,
             checkpoint_interval_s=900.0, layout=dict(tp=8, pp=1, dp=8, micro_batches=16, zero_stage=1))
    cfg = RunConfig.model_validate({
        "name": "train", "system": "h100_4k", "seed": 0, "output": {"progress": False}, "cooling": {"model": "fast"},
        "trace": {"enabled": False, "window_start_days": 0.0, "window_days": 0.25}, "scheduler": {"policy": "fcfs"},
        "workload": [w]})
    out = tmp_path / "train.h5"
    run_one(cfg, out)
    assert validate_file(out) == []
    tj = training_jobs([WorkloadConfig(**w)], load_system("h100_4k"), seed=0)
    rep = tj.reports[0]
    with h5py.File(out, "r") as f:
        t = {k: v[()] for k, v in f["workload/training"].items()}
        ids = f["jobs/job_id"][()]
        e_it = f["attribution/jobs/E_it_J"][()][ids == rep["job_id"]][0]
        e_f = f["attribution/jobs/E_facility_J"][()][ids == rep["job_id"]][0]
        assert f["workload/rl/name"].shape == (0,)
    assert t["job_id"].tolist() == [rep["job_id"]] and t["model"][0].decode() == "llama-3-8b"
    for k in ("t_iter_s", "mfu", "P_node_mean_W", "ettr", "n_checkpoints", "n_failures", "lost_work_s",
              "young_daly_s", "wall_s"):
        assert t[k][0] == pytest.approx(rep[k], rel=1e-12), k
    assert t["goodput_iter_per_s"][0] == pytest.approx(rep["useful_s"] / rep["t_iter_s"] / rep["wall_s"], rel=1e-12)
    assert t["E_it_J"][0] == e_it and t["PUE_effective"][0] == pytest.approx(e_f / e_it, rel=1e-12)
    assert t["J_per_iteration_it"][0] == pytest.approx(e_it / rep["iterations"], rel=1e-12)
    # the GPU part of the iteration-mean node power: idle + mean load x (max - idle), loads 1 / 0.15 / 0.25
    assert 70.0 < t["P_gpu_mean_W"][0] <= 700.0 and t["memory_B"][0] == pytest.approx(rep["memory_B"])
