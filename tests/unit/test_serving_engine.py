"""Serving engine against hand-computed values on a toy deployment.

Toy deployment: 1e9 parameters x 2 B (W = 2e9 B), 1 layer, attention width 1 (4 FLOP per attention position),
KV 2 B per token (2 x 1 layer x 1 head x 1 dim x 1 B), GPU 4e12 FLOP/s and 1e12 B/s, efficiencies 1, no step
overhead (per step and per sequence), no all-reduce, idle 100 W, max 300 W, k_c = k_m = 0.5, block size 4 tokens.
Step formulas (scheduler_sim.serving.roofline): F = 2e9 n + 4 A, B = 2e9 + 2 (R + n), GEMM phase then attention
phase t = max(2e9 n / 4e12, 2e9 / 1e12) + max(4 A / 4e12, 2 (R + n) / 1e12),
P = 100 + 200 min(1, 0.5 F / (4e12 t) + 0.5 B / (1e12 t)).
"""

import numpy as np
import pytest

from jobs.requests import make_request_table
from power import NodePowerParams
from scheduler_sim.serving.engine import BatchLimits, ServingEngine
from scheduler_sim.serving.hardware import Deployment, Disaggregation, GPUSpec, ModelSpec, RooflineConstants
from scheduler_sim.serving.profile import build_power


def toy(blocks: int | None = None, replicas: int = 1, disaggregation: Disaggregation | None = None) -> Deployment:
    model = ModelSpec(name="toy", parameters=1e9, layers=1, hidden_size=1, attention_heads=1, kv_heads=1,
                      head_dim=1, bytes_per_parameter=2, bytes_per_kv_element=1)
    # capacity: hbm - weights = blocks x 4 tokens x 2 B
    hbm = 2e9 + (blocks if blocks is not None else 10**6) * 8
    gpu = GPUSpec(name="toy", peak_flops=4e12, hbm_bandwidth_B_s=1e12, hbm_capacity_B=hbm, idle_power_W=100,
                  max_power_W=300, link_bandwidth_B_s=1e9)
    c = RooflineConstants(eta_compute=1, eta_memory=1, step_overhead_s=0, seq_overhead_s=0, allreduce_latency_s=0,
                          k_compute=0.5, k_memory=0.5)
    return Deployment(name="toy", model=model, gpu=gpu, replicas=replicas, tensor_parallel=1,
                      gpu_memory_utilization=1.0, block_size=4, constants=c, disaggregation=disaggregation)


def step(n, A, R):
    """Hand formula of the module docstring: (time, power)."""
    F = 2e9 * n + 4 * A
    B = 2e9 + 2 * (R + n)
    t = max(2e9 * n / 4e12, 2e9 / 1e12) + max(4 * A / 4e12, 2 * (R + n) / 1e12)
    return t, 100 + 200 * min(1.0, 0.5 * F / (4e12 * t) + 0.5 * B / (1e12 * t))


def prefill(*qs):
    return step(sum(qs), sum(q * (q + 1) / 2 for q in qs), 0)


def decode(*L):
    return step(len(L), sum(L) + len(L), sum(L))


def test_single_request_ttft_tpot_and_energy():
    req = make_request_table([0.5], [8], [3])
    res = ServingEngine(toy()).run(req)
    r = res.requests.iloc[0]
    tp, Pp = prefill(8)                 # F = 1.6e10 + 144 -> 4 ms compute bound
    t0, P0 = decode(8)                  # cached 8 tokens -> memory bound, 2e9 + 18 B
    t1, P1 = decode(9)
    assert r.ttft_s == pytest.approx(tp, rel=1e-12)          # no queueing: TTFT = prefill time
    assert r.tpot_s == pytest.approx((t0 + t1) / 2, rel=1e-12)
    assert r.e2e_s == pytest.approx(tp + t0 + t1, rel=1e-12)
    assert tp == pytest.approx(4e-3) and t0 == pytest.approx(2e-3)
    # power by phase: prefill 100 + 200 (0.5 x 1 + 0.5 x 0.5) = 250 W; decode 100 + 200 (0.5 x 0.25 + 0.5) = 225 W
    assert Pp == pytest.approx(250, rel=1e-6) and P0 == pytest.approx(225, rel=1e-6)
    # energy per token = integrated GPU power / generated tokens
    E = Pp * tp + P0 * t0 + P1 * t1
    (a, b, P), = res.segments
    assert np.dot(P, b - a) == pytest.approx(E, rel=1e-12)
    node = NodePowerParams(cpu_idle_W=10, cpu_max_W=20, cpus_per_node=1, gpu_idle_W=50, gpu_max_W=60,
                           gpus_per_node=1, mem_W=5)
    pw = build_power(res, node=node, merge_s=1.0)
    # bin [0, 1): 0.5 s idle before the arrival + busy steps + idle rest; then one idle row
    busy = tp + t0 + t1
    assert pw.P_gpu_W[0, 0] == pytest.approx(100 * (1 - busy) + E, rel=1e-12)
    assert pw.P_gpu_W[-1, 0] == 100.0
    # node = CPU idle 10 + memory 5 + GPU
    assert pw.P_node_W[:, 0] == pytest.approx(15 + pw.P_gpu_W[:, 0])
    assert pw.gpu_energy_J(3.0) == pytest.approx(E + 100 * (3.0 - busy), rel=1e-12)
    assert (E / 3) == pytest.approx((250 * 4e-3 + 225 * 4e-3) / 3, rel=1e-6)


def test_idle_periods_draw_idle_power():
    req = make_request_table([0.0, 5.0], [4, 4], [1, 1])
    res = ServingEngine(toy()).run(req)
    node = NodePowerParams(cpu_idle_W=10, cpu_max_W=20, cpus_per_node=1, gpu_idle_W=50, gpu_max_W=60,
                           gpus_per_node=2, mem_W=5)
    pw = build_power(res, node=node, merge_s=1.0)
    # bins [1, 5) hold no step: merged into one idle row at t = 1 s, 100 W per GPU
    assert pw.t_s.tolist()[:3] == [0.0, 1.0, 5.0]
    assert pw.P_gpu_W[1, 0] == 100.0
    # two GPU slots on the node, one used by the replica, the other at the deployment GPU's idle 100 W
    assert pw.P_node_W[1, 0] == pytest.approx(15 + 100 + 100)


def test_second_request_joins_a_running_batch():
    # A: prompt 4, 10 tokens at t=0; B: prompt 4, 2 tokens, arrives during A's 2nd decode step
    tpA, _ = prefill(4)                                  # 2.000...e-3 s
    d0, _ = decode(4)
    tB = tpA + d0 + 0.5e-3
    req = make_request_table([0.0, tB], [4, 4], [10, 2])
    res = ServingEngine(toy()).run(req)
    A, B = res.requests.iloc[0], res.requests.iloc[1]
    d1, _ = decode(5)
    boundary = tpA + d0 + d1                             # A's step in flight finishes, then B is prefilled alone
    tpB, _ = prefill(4)
    assert B.ttft_s == pytest.approx(boundary + tpB - tB, rel=1e-12)
    # then one joint decode step finishes B (2 tokens): lengths A 6, B 4
    dj, _ = decode(6, 4)
    assert B.finish_s == pytest.approx(boundary + tpB + dj, rel=1e-12)
    assert B.tpot_s == pytest.approx(dj, rel=1e-12)
    # A: 9 decode steps in all: 2 alone, 1 joint, 6 alone (lengths 7..12), plus B's prefill in between
    rest = sum(decode(L)[0] for L in range(7, 13))
    assert A.finish_s == pytest.approx(boundary + tpB + dj + rest, rel=1e-12)
    assert res.info["prefill_steps"] == 2


def test_kv_cache_full_preemption_and_recompute():
    # 3 blocks of 4 tokens; A and B (prompt 4, 6 tokens each) arrive together
    req = make_request_table([0.0, 0.0], [4, 4], [6, 6])
    res = ServingEngine(toy(blocks=3)).run(req)
    A, B = res.requests.iloc[0], res.requests.iloc[1]
    t_p, _ = prefill(4, 4)          # both admitted: 1 block each, 1 free
    # both have 4 cached tokens and need a 2nd block at once: B (last admitted) is preempted, A runs alone
    tA = t_p + sum(decode(L)[0] for L in range(4, 9))   # 5 steps, A holds ceil(9/4) = 3 blocks at the end
    assert A.finish_s == pytest.approx(tA, rel=1e-12)
    assert (A.preemptions, B.preemptions) == (0, 1)
    # B recomputes prompt + 1 generated token = 5 tokens, then decodes 4 more (lengths 5..8)
    t_r, _ = prefill(5)
    tB = tA + t_r + sum(decode(L)[0] for L in range(5, 9))
    assert B.finish_s == pytest.approx(tB, rel=1e-12)
    assert B.first_token_s == pytest.approx(t_p, rel=1e-12)   # the first token was produced before preemption
    assert res.info["preemptions"] == 1


def test_request_that_can_never_fit_is_rejected():
    req = make_request_table([0.0, 1.0], [10, 2], [10, 2])
    res = ServingEngine(toy(blocks=3)).run(req)
    assert res.requests["status"].tolist() == [2, 1]


def test_bulk_decode_equals_stepwise_and_routers_are_deterministic():
    rng = np.random.default_rng(7)
    n = 200
    req = make_request_table(np.sort(rng.uniform(0, 20, n)), rng.integers(1, 300, n), rng.integers(1, 60, n))
    a = ServingEngine(toy(blocks=400, replicas=2), BatchLimits(max_num_seqs=8), "round_robin").run(req)
    b = ServingEngine(toy(blocks=400, replicas=2), BatchLimits(max_num_seqs=8), "round_robin").run(req)
    np.testing.assert_array_equal(a.requests["finish_s"], b.requests["finish_s"])
    assert (a.requests["status"] == 1).all()
    assert a.requests["replica"].tolist()[:4] == [0, 1, 0, 1]
    c = ServingEngine(toy(blocks=400, replicas=2), BatchLimits(max_num_batched_tokens=64, max_num_seqs=8,
                                                                chunked_prefill=True)).run(req)
    assert (c.requests["status"] == 1).all()
    assert c.info["mixed_steps"] > 0


# ---------------------------------------------------------------- prefill/decode disaggregation
# 1 prefill + 1 decode replica (tp 1); link 1e9 B/s, 1 ms latency, 10 W. KV of an 8-token prompt: 8 x 2 B = 16 B,
# transfer = 16 / 1e9 + 1e-3 = 1.000016e-3 s.
LINK = Disaggregation(prefill_replicas=1, kv_link_bandwidth_B_s=1e9, kv_link_latency_s=1e-3, kv_link_power_W=10)


def test_disaggregated_request_ttft_includes_transfer_and_tpot_is_decode_step():
    req = make_request_table([0.5], [8], [2])
    res = ServingEngine(toy(replicas=2, disaggregation=LINK)).run(req)
    r = res.requests.iloc[0]
    tp, Pp = prefill(8)                                  # 4 ms, 250 W on the prefill replica
    x = 16 / 1e9 + 1e-3
    td, Pd = decode(8)                                   # 2.000000018 ms, 225 W on the decode replica
    assert x == pytest.approx(1.000016e-3, rel=1e-12)
    assert r.ttft_s == pytest.approx(tp + x, rel=1e-12)  # TTFT = prefill + KV transfer
    assert r.tpot_s == pytest.approx(td, rel=1e-12)      # TPOT = one decode step (2 tokens)
    assert (r.replica, r.decode_replica) == (0, 1)
    assert r.kv_transfer_s == pytest.approx(x, rel=1e-12)
    i = res.info
    assert i["kv_transfers"] == 1 and i["kv_transfer_bytes"] == 16.0
    assert i["kv_transfer_time_s"] == pytest.approx(x, rel=1e-12)
    assert i["kv_transfer_energy_J"] == pytest.approx(10 * x, rel=1e-12)   # 10.00016 mJ
    # prefill replica draws prefill power only, decode replica decode power only
    (a0, b0, P0), (a1, b1, P1) = res.segments
    assert P0.tolist() == pytest.approx([Pp]) and P1.tolist() == pytest.approx([Pd])
    assert a1[0] == pytest.approx(0.5 + tp + x, rel=1e-12)
    # node power (1 GPU per node: replica r on node r) = 15 W baseline + GPU + half the link energy each
    node = NodePowerParams(cpu_idle_W=10, cpu_max_W=20, cpus_per_node=1, gpu_idle_W=50, gpu_max_W=60,
                           gpus_per_node=1, mem_W=5)
    pw = build_power(res, node=node, merge_s=1.0)
    assert pw.P_link_W[0].tolist() == pytest.approx([5 * x, 5 * x], rel=1e-9)
    assert pw.P_node_W[0, 0] == pytest.approx(15 + 100 * (1 - tp) + Pp * tp + 5 * x, rel=1e-12)
    assert pw.P_node_W[0, 1] == pytest.approx(15 + 100 * (1 - td) + Pd * td + 5 * x, rel=1e-12)
    assert pw.link_energy_J(2.0) == pytest.approx(10 * x, rel=1e-9)


def test_disaggregated_transfers_from_one_prefill_replica_are_serialised():
    # two requests at t = 0: A prefilled 0-4 ms, B 4-8 ms; with 10 ms link latency B's transfer waits for A's
    slow = Disaggregation(prefill_replicas=1, kv_link_bandwidth_B_s=1e9, kv_link_latency_s=10e-3, kv_link_power_W=10)
    req = make_request_table([0.0, 0.0], [8, 8], [2, 2])
    res = ServingEngine(toy(replicas=2, disaggregation=slow)).run(req)
    tp, _ = prefill(8)
    x = 16 / 1e9 + 10e-3
    assert res.requests["ttft_s"].tolist() == pytest.approx([tp + x, tp + 2 * x], rel=1e-12)
    assert res.requests["kv_transfer_s"].tolist() == pytest.approx([x, 2 * x - tp], rel=1e-12)
    assert res.requests["decode_replica"].tolist() == [1, 1]
    with pytest.raises(ValueError, match="decode replica"):
        toy(replicas=1, disaggregation=LINK)


# ---------------------------------------------------------------- prefix caching
# prefix blocks of 8 tokens (2 KV blocks of 4).
CACHE = BatchLimits(prefix_caching=True, prefix_block_tokens=8)


def test_prefix_cache_hit_prefills_only_the_uncached_suffix():
    # A: 20 tokens, blocks (1, 2, 3) (the 3rd partial); B (later) shares blocks 1, 2 -> 16 cached, 4 prefilled
    req = make_request_table([0.0, 1.0], [20, 20], [2, 2], [(1, 2, 3), (1, 2, 9)])
    res = ServingEngine(toy(), CACHE).run(req)
    A, B = res.requests.iloc[0], res.requests.iloc[1]
    tA, _ = prefill(20)                                  # F = 4e10 + 840 -> 10 ms
    tB, _ = step(4, 4 * 16 + 4 * 5 / 2, 16)             # 4 new tokens on 16 cached: F = 8e9 + 296 -> 2.000000074 ms
    assert A.ttft_s == pytest.approx(tA, rel=1e-12) and tA == pytest.approx(1e-2)
    assert B.ttft_s == pytest.approx(tB, rel=1e-12) and tB == pytest.approx(2.000000074e-3, rel=1e-12)
    assert (A.cached_prompt_tokens, B.cached_prompt_tokens) == (0, 16)
    assert res.info["prefix_hit_tokens"] == 16
    # without prefix caching B pays the whole prompt
    nc = ServingEngine(toy()).run(req).requests.iloc[1]
    assert nc.ttft_s == pytest.approx(tA, rel=1e-12)


def test_prefix_cache_evicts_least_recently_used_blocks():
    # 6 KV blocks. A (17 tokens, out 1) caches prefix blocks 1, 2 (4 KV blocks) and frees its own block: free 2.
    # B (9 tokens, blocks 4, 5) needs prefix block 4 (2 KV blocks) + 1 own block = 3 > 2 free: evicts the least
    # recently used cached block -- 2, the tail of A's prefix. C (17 tokens, blocks 1, 2, 3) then hits block 1
    # only: 8 cached tokens, 9 prefilled.
    req = make_request_table([0.0, 1.0, 2.0], [17, 9, 17], [1, 1, 1], [(1, 2, 3), (4, 5), (1, 2, 3)])
    res = ServingEngine(toy(blocks=6), CACHE).run(req)
    C = res.requests.iloc[2]
    assert res.requests["cached_prompt_tokens"].tolist() == [0, 0, 8]
    assert C.ttft_s == pytest.approx(step(9, 9 * 8 + 9 * 10 / 2, 8)[0], rel=1e-12)
    assert res.info["prefix_evictions"] == 2            # block 2 for B, then block 4 for C
    assert (res.requests["status"] == 1).all()


def test_prefix_affinity_router_sends_to_the_replica_holding_the_prefix():
    # A fills replica 0's cache; C (a long decode) also lands on replica 0 (tie -> lowest index), so at B's
    # arrival replica 1 is the least loaded, but B goes to replica 0, which holds its prefix blocks 1, 2.
    req = make_request_table([0.0, 1.0, 1.01], [20, 8, 20], [2, 100, 2], [(1, 2, 3), (7,), (1, 2, 9)])
    res = ServingEngine(toy(replicas=2), CACHE, "prefix_affinity").run(req)
    assert res.requests["replica"].tolist() == [0, 0, 0]
    assert res.requests["cached_prompt_tokens"].tolist() == [0, 0, 16]
    lot = ServingEngine(toy(replicas=2), CACHE, "least_outstanding_tokens").run(req)
    assert lot.requests["replica"].tolist() == [0, 0, 1]
    assert lot.requests["cached_prompt_tokens"].tolist() == [0, 0, 0]


def test_recompute_after_preemption_is_not_counted_as_a_prefix_hit():
    # Field case prefix-hit-after-preemption: two 16-token prompts sharing nothing (blocks (1, 2) and (3, 4)), 24
    # output tokens each, 12 KV blocks of 4 tokens. Each prefill caches its 2 prefix blocks (4 KV blocks); both
    # decode until they need 2 x ceil(39 / 4) = 20 > 12 (or 14) blocks: B (admitted last) is preempted and its
    # prefix blocks become unpinned (LRU). Its recompute may reuse at most (16 - 1) // 8 = 1 leading block, its own
    # block 3, still cached: 8 tokens skipped, but written by B itself -- recompute saved, not a prefix hit.
    req = make_request_table([0.0, 0.001], [16, 16], [24, 24], [(1, 2), (3, 4)])
    for blocks in (12, 14):
        res = ServingEngine(toy(blocks=blocks), CACHE).run(req)
        A, B = res.requests.iloc[0], res.requests.iloc[1]
        assert (A.preemptions, B.preemptions) == (0, 1)
        assert (A.cached_prompt_tokens, B.cached_prompt_tokens) == (0, 8)    # the physics: 8 tokens not prefilled
        assert res.info["prefix_hit_tokens"] == 0                           # was 8: B's own block counted as a hit
        assert (A.recompute_cached_tokens, B.recompute_cached_tokens) == (0, 8)
        assert res.info["recompute_cached_tokens"] == 8
    # a block written by another request still counts as a hit for a request that is recomputed
    req = make_request_table([0.0, 0.001], [16, 16], [24, 24], [(1, 2), (1, 4)])
    res = ServingEngine(toy(blocks=12), CACHE).run(req)
    B = res.requests.iloc[1]
    assert B.preemptions == 1 and B.cached_prompt_tokens == 8 and B.recompute_cached_tokens == 0
    assert res.info["prefix_hit_tokens"] == 8 and res.info["recompute_cached_tokens"] == 0


def test_step_cost_fast_paths_equal_the_array_cost_bit_for_bit(monkeypatch):
    # the engine's fast paths (issue #26) must give exactly StepModel.cost's values: one step in Python floats,
    # decode runs step by step in Python floats (short) or with numpy and hoisted terms (long)
    from pathlib import Path

    import scheduler_sim.serving.roofline as roofline
    from scheduler_sim.serving.hardware import load_deployment

    root = Path(__file__).resolve().parents[2]
    for dep in (toy(), load_deployment(root / "experiments/serving/llama3-70b_h100_tp4x2.toml")):
        sm = roofline.StepModel(dep)
        for args in ((1.0, 1.0, 0.0, 1.0), (8192.0, 3.3e7, 1.2e5, 17.0), (300.0, 4.5e4 + 0.5, 999.0, 300.0)):
            t, P = sm.cost(*args)
            assert sm.cost1(*args) == (float(t), float(P))
        for py_steps in (0, 10 ** 6):  # the numpy path, then the Python path, for every case
            monkeypatch.setattr(roofline, "_PY_STEPS", py_steps)
            for nseq, Ls, m in ((1, 0.0, 1), (7, 777.0, 3), (200, 123456.0, 25), (96, 2.5e5, 60)):
                ks = np.arange(m, dtype=float)
                t, P = sm.cost(float(nseq), Ls + nseq + nseq * ks, Ls + nseq * ks, float(nseq))
                t2, P2 = sm.decode_steps(nseq, Ls, m)
                assert np.array_equal(t, t2) and np.array_equal(P, P2), (py_steps, nseq, Ls, m)
