"""Workload families (issue 24 item 3): seeded, with the documented distributions.

Checks: log-normal lengths hit their median and p99; Gamma gaps have the asked coefficient of variation; the
MMPP's long-run rate is (r0 d0 + r1 d1) / (d0 + d1); the burst multiplies the rate in its window; training jobs
get memory-feasible layouts of the asked size and kind; same seed -> same workload.
"""

from __future__ import annotations

import numpy as np
import pytest

from jobs.families import (auto_layout, extreme_family, inference_family, lognormal_from_median_p99, mixed_family,
                           training_family)
from jobs.training import SHIPPED_MODELS, TrainingGPU, memory_use

H100 = TrainingGPU("h100-sxm", 989.4e12, 80e9, 450e9, 50e9, 8, 70.0, 700.0)


def test_lognormal_lengths_have_their_median_and_p99():
    x = lognormal_from_median_p99(np.random.default_rng(0), 500.0, 5000.0, 400_000)
    assert np.median(x) == pytest.approx(500, rel=0.01)
    assert np.quantile(x, 0.99) == pytest.approx(5000, rel=0.03)
    with pytest.raises(ValueError):
        lognormal_from_median_p99(np.random.default_rng(0), 500.0, 100.0, 3)


def test_arrival_families_rates_and_burstiness():
    d = 20_000.0
    g = inference_family(np.random.default_rng(1), arrival="gamma", rate_per_s=5.0, cv=3.0, duration_s=d)
    gaps = np.diff(g.requests["arrival_time_s"].to_numpy())
    assert gaps.mean() == pytest.approx(0.2, rel=0.05) and gaps.std() / gaps.mean() == pytest.approx(3.0, rel=0.1)
    m = inference_family(np.random.default_rng(2), arrival="mmpp", mmpp_rates_per_s=(2.0, 20.0),
                         mmpp_dwell_s=(300.0, 60.0), duration_s=200_000.0)
    assert len(m.requests) / 200_000.0 == pytest.approx((2 * 300 + 20 * 60) / 360, rel=0.05)
    p = inference_family(np.random.default_rng(3), duration_s=d, rate_per_s=5.0)
    assert len(p.requests) / d == pytest.approx(5.0, rel=0.03) and p.slo == {"ttft_s": 1.0, "tpot_s": 0.05}
    r = inference_family(np.random.default_rng(0), arrival="replay", replay=p.requests, speedup=2.0, duration_s=d)
    assert r.requests["arrival_time_s"].max() < d and len(r.requests) == len(p.requests)
    with pytest.raises(ValueError, match="unknown arrival family"):
        inference_family(np.random.default_rng(0), arrival="weibull")


def test_extreme_burst_multiplies_the_rate_in_its_window():
    e = extreme_family(np.random.default_rng(4), duration_s=40_000.0, rate_per_s=1.0, burst_multiplier=10.0,
                       burst_start_s=10_000.0, burst_s=5_000.0)
    t = e.requests["arrival_time_s"].to_numpy()
    inside = ((t >= 10_000) & (t < 15_000)).sum() / 5_000.0
    outside = ((t < 10_000) | (t >= 15_000)).sum() / 35_000.0
    assert inside / outside == pytest.approx(10.0, rel=0.08)
    assert np.median(e.requests["prompt_tokens"]) == pytest.approx(32768, rel=0.05)


@pytest.mark.parametrize("kind", ["dense", "moe", "long-context"])
def test_training_family_layouts_fit_and_are_seeded(kind):
    a = training_family(np.random.default_rng(5), H100, kind=kind, jobs=6, gpus=(512, 1024))
    b = training_family(np.random.default_rng(5), H100, kind=kind, jobs=6, gpus=(512, 1024))
    assert [(x["model"], x["layout"], x["train_hours"]) for x in a] == [(x["model"], x["layout"], x["train_hours"])
                                                                        for x in b]
    for j in a:
        lay, m = j["layout"], j["model"]
        assert lay.n_gpus in (512, 1024) and memory_use(m, lay, H100).feasible
        assert (m.experts > 1) == (kind == "moe") and (m.seq_len > 8192) == (kind in ("long-context", "moe"))
    assert a[0]["submit_day"] == 0.0 and all(np.diff([x["submit_day"] for x in a]) >= 0)


def test_auto_layout_picks_the_shallowest_pipeline_that_fits():
    lay = auto_layout(SHIPPED_MODELS["llama-3-405b"], 4096, H100)
    assert lay.tp == 8 and lay.pp > 1 and lay.n_gpus == 4096
    shallower = lay.pp // 2
    from jobs.training import ParallelLayout
    for rc in ("selective", "full"):
        assert not memory_use(SHIPPED_MODELS["llama-3-405b"], ParallelLayout(
            tp=8, pp=shallower, dp=4096 // (8 * shallower), micro_batches=4 * shallower, recompute=rc), H100).feasible


def test_mixed_family_splits_the_gpu_hours_in_its_shares():
    # 512 nodes x 8 GPUs for 7 days = 688,128 GPU-hours: 60 % training, 30 % inference, 10 % batch
    budget = 4096 * 7 * 24.0
    m = mixed_family(np.random.default_rng(6), H100, gpu_hours=budget, share_training=0.6, share_inference=0.3,
                     share_batch=0.1, duration_s=7 * 86400.0, rate_per_s=4.0,
                     training={"gpus": (512, 1024), "train_hours_median": 48.0})
    gh_t = sum(j["layout"].n_gpus * j["train_hours"] for j in m.training)
    gh_b = float((m.batch["nodes"] * m.batch["runtime_s"]).sum()) * 8 / 3600.0
    assert gh_t == pytest.approx(0.6 * budget, rel=1e-12) and gh_b == pytest.approx(0.1 * budget, rel=1e-12)
    assert m.gpu_hours == pytest.approx({"training": 0.6 * budget, "batch": 0.1 * budget,
                                         "inference": 0.3 * budget}, rel=1e-12)
    # the serving partition holds 0.3 x 4096 = 1,228.8 GPUs for the whole horizon
    assert m.inference_gpus == pytest.approx(0.3 * 4096, rel=1e-12)
    assert len(m.inference.requests) / (7 * 86400.0) == pytest.approx(4.0, rel=0.01)
    assert all(j["train_hours"] > 0 and memory_use(j["model"], j["layout"], H100).feasible for j in m.training)
    assert m.batch["nodes"].isin([1, 2, 4, 8, 16, 32]).all() and m.batch["gpu_util"].between(0.2, 1.0).all()
    assert (m.batch["runtime_s"] > 0).all() and m.batch["job_id"].is_unique
    # same seed -> same workload
    again = mixed_family(np.random.default_rng(6), H100, gpu_hours=budget, share_training=0.6, share_inference=0.3,
                         share_batch=0.1, duration_s=7 * 86400.0, rate_per_s=4.0,
                         training={"gpus": (512, 1024), "train_hours_median": 48.0})
    assert again.batch.equals(m.batch) and [j["train_hours"] for j in again.training] == [
        j["train_hours"] for j in m.training]


def test_mixed_family_refuses_shares_that_do_not_sum_to_one():
    with pytest.raises(ValueError, match=r"must be 1, got 0.6 \+ 0.3 \+ 0.2"):
        mixed_family(np.random.default_rng(0), H100, gpu_hours=1e4, share_training=0.6, share_inference=0.3,
                     share_batch=0.2)
    with pytest.raises(ValueError, match="share_batch must be >= 0"):
        mixed_family(np.random.default_rng(0), H100, gpu_hours=1e4, share_training=1.0, share_inference=0.5,
                     share_batch=-0.5)
    only = mixed_family(np.random.default_rng(0), H100, gpu_hours=1e4, share_training=0.0, share_inference=0.0,
                        share_batch=1.0, duration_s=86400.0)
    assert only.training == [] and len(only.inference.requests) == 0 and only.inference_gpus == 0.0
    assert float((only.batch["nodes"] * only.batch["runtime_s"]).sum()) * 8 / 3600.0 == pytest.approx(1e4, rel=1e-12)
