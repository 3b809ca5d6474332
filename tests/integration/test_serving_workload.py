"""Inference families drive the serving engine (issue 24 item 3): ``[serving] workload = "<name>"`` serves the
requests of a ``[[workload]] family = "inference"`` table instead of a request trace, with the table's SLOs; the
requests are the family's draws for the run's seed, and a misnamed or unserved table is refused.
"""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from jobs.families.inference import inference_family
from scheduler_sim.app.config import RunConfig
from scheduler_sim.app.runner import run_one
from scheduler_sim.io.schema import validate_file

INF = dict(family="inference", name="chat",
           inference=dict(arrival="gamma", rate_per_s=2.0, cv=2.0, duration_s=60.0, prompt_median=400.0,
                          prompt_p99=3000.0, output_median=120.0, output_p99=800.0, ttft_s=0.5, tpot_s=0.04))


def _cfg(**serving):
    return {"name": "inf", "system": "frontier", "seed": 7, "output": {"progress": False},
            "cooling": {"model": "fast"}, "trace": {"enabled": False, "window_start_days": 0.0},
            "serving": {"deployment": "llama3-70b_h100_tp4x2", **serving}, "workload": [INF]}


def test_serving_serves_the_inference_family_requests(tmp_path):
    cfg = RunConfig.model_validate(_cfg(workload="chat"))
    out = tmp_path / "inf.h5"
    r = run_one(cfg, out)
    assert validate_file(out) == []
    expect = inference_family(np.random.default_rng([7, 24, 0, 2 * 10**6]), duration_s=60.0, arrival="gamma",
                              rate_per_s=2.0, cv=2.0, prompt_median=400.0, prompt_p99=3000.0, output_median=120.0,
                              output_p99=800.0, ttft_s=0.5, tpot_s=0.04).requests
    with h5py.File(out, "r") as f:
        req = {k: f["serving/requests"][k][()] for k in ("arrival_time_s", "prompt_tokens", "output_tokens")}
        assert f["serving"].attrs["ttft_slo_s"] == 0.5 and f["serving"].attrs["tpot_slo_s"] == 0.04
        assert f["serving"].attrs["trace"] == "[[workload]] chat"
    assert np.array_equal(req["arrival_time_s"], expect["arrival_time_s"].to_numpy(float))
    assert np.array_equal(req["prompt_tokens"], expect["prompt_tokens"].to_numpy())
    assert np.array_equal(req["output_tokens"], expect["output_tokens"].to_numpy())
    assert r.summary["serving_requests"] == len(expect) > 60               # ~2 per s for 60 s
    assert np.isfinite(r.summary["serving_J_per_token_facility"]) and np.isfinite(r.summary["PUE"])


def test_inference_table_must_be_served_by_name():
    with pytest.raises(ValueError, match="names no \\[\\[workload\\]\\] table of family 'inference'"):
        RunConfig.model_validate(_cfg(workload="other"))
    with pytest.raises(ValueError, match="served by no \\[serving\\] section: set \\[serving\\] workload = 'chat'"):
        RunConfig.model_validate(_cfg())
    # a config without the key keeps its JSON (the key is left out at its default)
    d = _cfg()
    d.pop("workload")
    assert '"workload"' not in RunConfig.model_validate(d).to_json()


def test_extreme_family_is_served_with_its_burst_and_long_prompts():
    from jobs.families.extreme import extreme_family
    ext = dict(family="extreme", name="burst",
               extreme=dict(duration_s=300.0, rate_per_s=0.2, burst_multiplier=6.0, burst_start_s=100.0,
                            burst_s=60.0, prompt_median=8192.0, prompt_p99=65536.0, ttft_s=8.0, tpot_s=0.1))
    d = _cfg(workload="burst")
    d["workload"] = [ext]
    r = run_one(RunConfig.model_validate(d), None)
    expect = extreme_family(np.random.default_rng([7, 24, 0, 2 * 10**6]), duration_s=300.0, rate_per_s=0.2,
                            burst_multiplier=6.0, burst_start_s=100.0, burst_s=60.0, prompt_median=8192.0,
                            prompt_p99=65536.0, ttft_s=8.0, tpot_s=0.1).requests
    t = expect["arrival_time_s"].to_numpy(float)
    inside = ((t >= 100) & (t < 160)).sum() / 60.0
    outside = ((t < 100) | (t >= 160)).sum() / 240.0
    assert inside > 2.5 * outside                                   # the burst: 6x the base rate on [100, 160) s
    assert r.summary["serving_requests"] == len(expect)
    assert np.median(expect["prompt_tokens"]) > 4000                # long contexts (median 8,192 drawn)
