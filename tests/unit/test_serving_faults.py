"""Field cases, round 2 (issue 12, kinds 3 and 4): request-trace time origins, the prefix-affinity router balanced
against load, runs that serve nothing, and the size check of the serving power profile.

Toy deployment as in test_serving_engine.py: a decode step of a few sequences takes ~2 ms, so a request with 100
output tokens runs > 0.2 s and none of the 8 requests below (arrivals 10 ms apart) ends before the last arrives:
the router's queues only grow while they are routed.
"""

from __future__ import annotations

import numpy as np
import pytest

from dataloaders.registry import load_trace
from dataloaders.report import TraceError
from jobs.requests import make_request_table
from scheduler_sim.serving.engine import DEFAULT_AFFINITY_SLACK, BatchLimits, ServingEngine

from test_serving_engine import toy


# ---- request loaders: mixed time origins, all-epoch traces ------------------------------------------------------
def test_request_csv_mixed_origins_reject_the_minority(tmp_path):
    p = tmp_path / "b10.csv"
    p.write_text("t,p,o\n0,8,2\n1,8,2\n1700000000,8,2\n")
    df, rep = load_trace(p, format="request_csv", arrival="t", prompt="p", output="o")
    assert (rep.records_read, rep.accepted, rep.rejected) == (3, 2, 1)
    (bad,) = rep.issues
    assert (bad.line, bad.field, bad.reason) == (4, "t", "arrival_time_mixed_origin")
    assert df["arrival_time_s"].tolist() == [0.0, 1.0]
    assert np.isnan(df.attrs["time_origin_unix_s"])
    with pytest.raises(TraceError, match=r"b10.csv, line 4.*'t'"):
        load_trace(p, format="request_csv", arrival="t", prompt="p", output="o", strict=True)


def test_request_csv_all_epochs_keep_the_calendar_date(tmp_path):
    p = tmp_path / "e.csv"
    p.write_text("t,p,o\n1700000010,8,2\n1700000000,8,2\n9,8,2\n1e300,8,2\n")   # one offset, one absurd time
    df, rep = load_trace(p, format="request_csv", arrival="t", prompt="p", output="o")
    assert {(i.line, i.reason) for i in rep.issues} == {(4, "arrival_time_mixed_origin"), (5, "time_out_of_range")}
    assert df["arrival_time_s"].tolist() == [0.0, 10.0]
    assert df.attrs["time_origin_unix_s"] == 1700000000.0          # 2023-11-14 22:13:20 UTC: weather date kept


def test_mooncake_and_azure_detect_mixed_origins(tmp_path):
    m = tmp_path / "m.jsonl"
    m.write_text('{"timestamp": 0, "input_length": 8, "output_length": 2}\n'
                 '{"timestamp": 1700000000000, "input_length": 8, "output_length": 2}\n'
                 '{"timestamp": 20, "input_length": 8, "output_length": 2}\n')
    df, rep = load_trace(m)
    assert [(i.line, i.reason) for i in rep.issues] == [(2, "arrival_time_mixed_origin")]
    assert df["arrival_time_s"].tolist() == [0.0, 0.02]
    a = tmp_path / "a.csv"
    a.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n"
                 "1970-01-01 00:00:05,10,10\n2023-11-16 18:15:50.0000000,10,1e300\n"
                 "2023-11-16 18:15:56.0000000,10,10\n")
    df, rep = load_trace(a, format="azure_llm")
    assert sorted((i.line, i.reason) for i in rep.issues) == [(3, "arrival_time_mixed_origin"),
                                                               (4, "bad_generated_tokens")]
    assert df["arrival_time_s"].tolist() == pytest.approx([0.0, 9.31941])   # 18:15:56 - 18:15:46.68059
    assert df.attrs["time_origin_unix_s"] == pytest.approx(1700158546.68059)


# ---- router: prefix affinity balanced against load --------------------------------------------------------------
def _burst():
    """8 requests 10 ms apart sharing prefix block 0 (the field case's shape on the toy deployment)."""
    t = [0.01 * k for k in range(8)]
    return make_request_table(t, [20] * 8, [100] * 8, [(0, 100 + k) for k in range(8)])


@pytest.mark.parametrize("slack, replicas", [
    # queue lengths (r0, r1) at each arrival, affinity replica r0: a request leaves r0 when q0 > q1 + slack
    (0, [0, 1, 0, 1, 0, 1, 0, 1]),     # (0,0)->r0 (1,0)->r1 (1,1)->r0 (2,1)->r1 ...
    (2, [0, 0, 0, 1, 0, 1, 0, 1]),     # r0 until q0 = 3 > 0 + 2; then (3,1)->r0 (4,1)->r1 (4,2)->r0 (5,2)->r1
    (100, [0] * 8),                    # pure affinity: what the field case saw
])
def test_prefix_affinity_falls_back_to_the_least_loaded_replica(slack, replicas):
    eng = ServingEngine(toy(replicas=2), BatchLimits(prefix_caching=True, prefix_block_tokens=8), "prefix_affinity",
                        affinity_slack=slack)
    res = eng.run(_burst())
    assert res.requests["replica"].tolist() == replicas
    assert res.requests["finish_s"].min() > 0.07                   # the premise: nobody left a queue meanwhile
    assert res.info["affinity_fallbacks"] == sum(r == 1 for r in replicas)


def test_default_slack_and_router_table_in_the_config(tmp_path):
    from scheduler_sim.config import load_config

    assert DEFAULT_AFFINITY_SLACK == 2
    c = tmp_path / "c.toml"
    c.write_text('[trace]\nenabled = false\n[serving]\ndeployment = "llama3-70b_h100_tp4x2"\n'
                 '[serving.router]\nname = "prefix_affinity"\naffinity_slack = 5\n')
    sv = load_config(c).serving
    assert (sv.router_name(), sv.affinity_slack()) == ("prefix_affinity", 5)
    c.write_text('[trace]\nenabled = false\n[serving]\ndeployment = "llama3-70b_h100_tp4x2"\nrouter = "round_robin"\n')
    sv = load_config(c).serving
    assert (sv.router_name(), sv.affinity_slack()) == ("round_robin", 2)
    assert sv.deployment == "llama3-70b_h100_tp4x2"                 # a shipped name, not made a path
    with pytest.raises(ValueError, match="affinity_slack"):
        ServingEngine(toy(replicas=2), BatchLimits(), "prefix_affinity", affinity_slack=-1)


def test_shipped_deployment_by_name():
    from scheduler_sim.serving.hardware import load_deployment, resolve_deployment

    assert resolve_deployment("llama3-70b_h100_tp4x2").name == "llama3-70b_h100_tp4x2.toml"
    assert load_deployment("llama3-70b_h100_tp4x2").replicas == 2
    with pytest.raises(ValueError, match="shipped: .*llama3-70b_h100_tp4x2"):
        resolve_deployment("no-such-deployment")


# ---- a run that serves nothing, and a profile too large to hold -------------------------------------------------
def test_every_request_rejected_is_an_error(tmp_path):
    from power.system import System
    from scheduler_sim.config import ServingConfig
    from scheduler_sim.serving.run import prepare_serving

    from conftest import tiny_system_spec

    spec = tiny_system_spec(n_nodes=2)
    spec["node"].update({"gpu_idle_W": 100.0, "gpu_max_W": 300.0, "gpus_per_node": 1})
    system = System.from_spec(spec, source="tiny")
    dep = tmp_path / "dep.toml"
    (tmp_path / "m.toml").write_text('name = "toy"\nparameters = 1e9\nlayers = 1\nhidden_size = 1\n'
                                     'attention_heads = 1\nkv_heads = 1\nhead_dim = 1\nbytes_per_parameter = 2\n'
                                     'bytes_per_kv_element = 1\n')
    # HBM 2e9 + 80 B: 10 blocks x 4 tokens of KV; a 100-token prompt can never fit
    (tmp_path / "g.toml").write_text('name = "toy"\npeak_flops = 4e12\nhbm_bandwidth_B_s = 1e12\n'
                                     'hbm_capacity_B = 2000000080.0\nidle_power_W = 100.0\nmax_power_W = 300.0\n'
                                     'link_bandwidth_B_s = 1e9\n')
    dep.write_text('model = "m.toml"\ngpu = "g.toml"\nreplicas = 1\ntensor_parallel = 1\n'
                   'gpu_memory_utilization = 1.0\nblock_size = 4\n')
    tr = tmp_path / "r.csv"
    tr.write_text("t,p,o\n0,100,2\n1,100,2\n")
    sc = ServingConfig(deployment=str(dep), trace=str(tr), format="request_csv",
                       loader_options={"arrival": "t", "prompt": "p", "output": "o"})
    with pytest.raises(ValueError, match=r"r.csv: every one of the 2 request\(s\) was rejected.*40 tokens"):
        prepare_serving(sc, system, sim_offset_s=0.0)


def test_power_profile_size_is_checked_before_allocation():
    from power import NodePowerParams
    from scheduler_sim.serving.profile import build_power

    res = ServingEngine(toy(), BatchLimits()).run(make_request_table([0.0], [8], [2]))
    node = NodePowerParams(cpu_idle_W=10, cpu_max_W=20, cpus_per_node=1, gpu_idle_W=100, gpu_max_W=300,
                           gpus_per_node=1)
    with pytest.raises(ValueError, match=r"1,700,000,000 rows of 1 s .*GiB.*serving.merge_s"):
        build_power(res, node=node, t_end_s=1.7e9)


def test_a_stray_non_utf8_byte_costs_one_request_not_the_trace(tmp_path):
    p = tmp_path / "r.csv"
    p.write_bytes(b"t,p,o\n0,8,2\n1,8\xe9,2\n2,8,2\n")
    df, rep = load_trace(p, format="request_csv", arrival="t", prompt="p", output="o")
    assert (rep.records_read, rep.accepted, rep.rejected) == (3, 2, 1)
    assert [(i.line, i.field, i.found) for i in rep.issues] == [(3, "p", "8\xe9")]
    assert df["arrival_time_s"].tolist() == [0.0, 2.0]
    assert any("not valid UTF-8" in n for n in rep.notes)
