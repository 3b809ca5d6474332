"""Serving engine against hand-computed values on a toy deployment.

Toy deployment: 1e9 parameters x 2 B (W = 2e9 B), 1 layer, attention width 1 (4 FLOP per attention position),
KV 2 B per token (2 x 1 layer x 1 head x 1 dim x 1 B), GPU 4e12 FLOP/s and 1e12 B/s, efficiencies 1, no step
overhead, no all-reduce, idle 100 W, max 300 W, k_c = k_m = 0.5, block size 4 tokens. Step formulas
(scheduler_sim.serving.roofline): F = 2e9 n + 4 A, B = 2e9 + 2 (R + n), t = max(F / 4e12, B / 1e12),
P = 100 + 200 min(1, 0.5 F / (4e12 t) + 0.5 B / (1e12 t)).
"""

import numpy as np
import pytest

from jobs.requests import make_request_table
from power import NodePowerParams
from scheduler_sim.serving.engine import BatchLimits, ServingEngine
from scheduler_sim.serving.hardware import Deployment, GPUSpec, ModelSpec, RooflineConstants
from scheduler_sim.serving.profile import build_power


def toy(blocks: int | None = None, replicas: int = 1) -> Deployment:
    model = ModelSpec(name="toy", parameters=1e9, layers=1, hidden_size=1, attention_heads=1, kv_heads=1,
                      head_dim=1, bytes_per_parameter=2, bytes_per_kv_element=1)
    # capacity: hbm - weights = blocks x 4 tokens x 2 B
    hbm = 2e9 + (blocks if blocks is not None else 10**6) * 8
    gpu = GPUSpec(name="toy", peak_flops=4e12, hbm_bandwidth_B_s=1e12, hbm_capacity_B=hbm, idle_power_W=100,
                  max_power_W=300, link_bandwidth_B_s=1e9)
    c = RooflineConstants(eta_compute=1, eta_memory=1, step_overhead_s=0, allreduce_latency_s=0, k_compute=0.5,
                          k_memory=0.5)
    return Deployment(name="toy", model=model, gpu=gpu, replicas=replicas, tensor_parallel=1,
                      gpu_memory_utilization=1.0, block_size=4, constants=c)


def step(n, A, R):
    """Hand formula of the module docstring: (time, power)."""
    F = 2e9 * n + 4 * A
    B = 2e9 + 2 * (R + n)
    t = max(F / 4e12, B / 1e12)
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
