"""The mixed family in a run (issue 24 item 3): ``[[workload]] family = "mixed"`` splits a GPU-hour budget into
training jobs, batch jobs and a request stream for ``[serving]``; the run's jobs carry exactly the training and
batch shares of the budget (useful training GPU-hours; batch node-hours x 8), the serving partition is checked
against the inference share, the requests are the family's draw for the run's seed, and the energy closes.
"""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from power import load_system
from scheduler_sim.app.config import RunConfig
from scheduler_sim.app.runner import run_one
from scheduler_sim.app.workload_config import WorkloadConfig
from scheduler_sim.app.workloads import inference_requests, training_jobs
from scheduler_sim.io.schema import validate_file

# 1,024 GPU-hours over 1 h: training 1/2 (512 GPU-h), inference 8 / 1024 (the 8 GPUs of llama3-70b_h100_tp4x2 for
# the hour), batch the rest, 0.4921875 (504 GPU-h); binary fractions, so the shares are exact
MIX = dict(family="mixed", name="mix", gpus=[512], train_hours_median=2.0, failure_rate_per_gpu_h=0.0,
           mixed=dict(gpu_hours=1024.0, share_training=0.5, share_inference=0.0078125, share_batch=0.4921875,
                      duration_s=3600.0, rate_per_s=1.0, batch_nodes=[1, 2, 4], batch_hours_median=0.5,
                      batch_per_day=2000.0),
           inference=dict(prompt_median=400.0, prompt_p99=3000.0, output_median=120.0, output_p99=800.0))


def _cfg():
    return {"name": "mix", "system": "h100_4k", "seed": 3, "output": {"progress": False},
            "cooling": {"model": "fast"}, "trace": {"enabled": False, "window_start_days": 0.0, "window_days": 0.1},
            "scheduler": {"policy": "easy"},
            "serving": {"deployment": "llama3-70b_h100_tp4x2", "workload": "mix", "first_node": 510},
            "workload": [MIX]}


def test_mixed_table_makes_training_and_batch_jobs_in_their_shares():
    h100 = load_system("h100_4k")
    tj = training_jobs([WorkloadConfig(**MIX)], h100, seed=3)
    rep = {r["job_id"]: r for r in tj.reports}
    train = tj.jobs[tj.jobs["job_id"].isin(list(rep))]
    batch = tj.jobs[tj.jobs["queue"] == "batch"]
    assert len(train) + len(batch) == len(tj.jobs) and len(train) >= 1 and len(batch) > 20
    useful_gpu_h = sum(r["useful_s"] * r["gpus"] for r in tj.reports) / 3600.0
    assert useful_gpu_h == pytest.approx(512.0, rel=1e-9)
    assert float((batch["nodes"] * batch["runtime_s"]).sum()) * 8 / 3600.0 == pytest.approx(504.0, rel=1e-12)
    assert batch["node_power_set_W"].isna().all() and batch["gpu_util"].between(0.2, 1.0).all()
    name, fam = inference_requests([WorkloadConfig(**MIX)], "mix", 3, h100)
    assert name == "mix" and fam.params["inference_gpus"] == pytest.approx(8.0, rel=1e-12)


def test_mixed_run_serves_its_requests_and_closes_the_energy(tmp_path):
    lines = []
    out = tmp_path / "mix.h5"
    r = run_one(RunConfig.model_validate(_cfg()), out, echo=lines.append)
    assert validate_file(out) == []
    note = [s for s in lines if s.startswith("mixed   mix:")]
    assert note and "asks for 8.0 GPUs" in note[0] and "holds 8" in note[0] and "off by" not in note[0]
    _, fam = inference_requests([WorkloadConfig(**MIX)], "mix", 3, load_system("h100_4k"))
    with h5py.File(out, "r") as f:
        arr = f["serving/requests/arrival_time_s"][()]
        q = f["jobs/queue"][()].astype(str)
        e_jobs = f["attribution/jobs/E_it_J"][()]
    assert np.array_equal(arr, fam.requests["arrival_time_s"].to_numpy(float)) and arr.size > 3000
    assert (q == "batch").sum() > 20 and (q == "training").sum() >= 1
    assert np.all(e_jobs >= 0) and np.isfinite(r.summary["PUE"])


def test_mixed_shares_must_sum_to_one_and_a_served_share_needs_serving():
    with pytest.raises(ValueError, match=r"must be 1, got 0.5 \+ 0.3 \+ 0.3 = 1.1"):
        WorkloadConfig(family="mixed", mixed=dict(share_training=0.5, share_inference=0.3, share_batch=0.3))
    d = _cfg()
    d.pop("serving")
    with pytest.raises(ValueError, match="served by no \\[serving\\] section: set \\[serving\\] workload = 'mix'"):
        RunConfig.model_validate(d)
    d["workload"] = [{**MIX, "mixed": {**MIX["mixed"], "share_inference": 0.0, "share_batch": 0.5}}]
    RunConfig.model_validate(d)                   # no inference share: nothing to serve
    with pytest.raises(ValueError, match="a mixed table belongs to family 'mixed'"):
        WorkloadConfig(family="inference", mixed={})
