"""GPU serving power and step time fitted to ML.ENERGY v3.0 H100 measurements (issue 11 item 8, issue 24 item 4),
and server fans of air-cooled servers.

Expected values: the measured rows of tests/data/mlenergy_v3_h100_llama-3.3-70b_lm-arena-chat.csv (source in its
README), the constants written in scheduler_sim/serving/data/gpus/h100-sxm.toml, and fan energy worked by hand
from ``fan_share / (1 - fan_share)``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from scheduler_sim.serving.calibrate import (decode_step, fit_power, fit_step_time, read_measurements,
                                             steady_state_step)
from scheduler_sim.serving.hardware import Deployment, RooflineConstants, ServerCooling, load_gpu, load_model
from scheduler_sim.serving.roofline import StepModel

ROOT = Path(__file__).resolve().parents[2]
TABLE = ROOT / "tests" / "data" / "mlenergy_v3_h100_llama-3.3-70b_lm-arena-chat.csv"


def _dep(gpu=None, **kw) -> Deployment:
    return Deployment(name="t", model=load_model("llama-3-70b"), gpu=gpu or load_gpu("h100-sxm"), tensor_parallel=4,
                      **kw)


@pytest.fixture(scope="module")
def rows():
    return read_measurements(TABLE)


def test_table_is_the_published_h100_rows(rows):
    assert len(rows) == 11 and {r["gpu_model"] for r in rows} == {"H100"}
    b8 = rows[0]
    # ML.ENERGY leaderboard: max_num_seqs 8 -> 1,787.39 W over 4 GPUs (446.8 W each), median ITL 16.87 ms
    assert b8["max_num_seqs"] == "8" and b8["avg_power_watts"] / 4 == pytest.approx(446.85, abs=0.01)


def test_fit_reproduces_the_shipped_constants_and_every_row(rows):
    fit = fit_power(_dep(), rows)
    gpu = load_gpu("h100-sxm")
    assert (fit.p_active, fit.k_compute, fit.k_memory) == pytest.approx((gpu.p_active, gpu.k_compute, gpu.k_memory),
                                                                        abs=6e-5)
    assert fit.max_rel_error < 0.02
    # the step model's own power with the shipped constants equals the fit on every row
    sm = StepModel(_dep())
    for r, pf in zip(rows, fit.P_fit_W):
        a_c, a_m, _ = steady_state_step(sm, r["avg_batch_size"], r["avg_output_len"])
        assert sm.P_idle + sm.P_range * min(1.0, sm.p_active + sm.k_c * a_c + sm.k_m * a_m) == pytest.approx(pf,
                                                                                                             rel=2e-4)


def test_former_constants_were_low_at_small_batch(rows):
    # issue 11: decode power at small batch was 12-24 % low with the V100-calibrated defaults
    old_gpu = load_gpu("h100-sxm").model_copy(update={"p_active": 0.0, "k_compute": None, "k_memory": None})
    sm_old = StepModel(_dep(old_gpu))
    for r in rows[:2]:  # batch 8 and 16
        a_c, a_m, _ = steady_state_step(sm_old, r["avg_batch_size"], r["avg_output_len"])
        p_old = sm_old.P_idle + sm_old.P_range * min(1.0, sm_old.k_c * a_c + sm_old.k_m * a_m)
        meas = r["avg_power_watts"] / 4
        assert -0.24 < p_old / meas - 1 < -0.12


def test_phase_powers_are_plausible():
    sm = StepModel(_dep())
    _, p_prefill = sm.prefill(2048)
    _, p_decode1 = sm.decode([1000])
    # prefill is compute-bound near the 700 W board limit; a lone decode stream sits far above the 70 W idle
    assert 600.0 < p_prefill <= 700.0
    assert 420.0 < p_decode1 < 470.0 and p_decode1 < p_prefill


def test_deployment_constants_win_over_the_gpu_fit():
    sm = StepModel(_dep(constants=RooflineConstants(k_compute=1.0)))
    assert sm.k_c == 1.0 and sm.k_m == pytest.approx(load_gpu("h100-sxm").k_memory)
    assert StepModel(_dep()).k_c == pytest.approx(1.0506)
    a100 = Deployment(name="a", model=load_model("llama-3-8b"), gpu=load_gpu("a100-sxm-80gb"))
    assert StepModel(a100).k_c == 1.57 and StepModel(a100).p_active == 0.0  # no fit: RooflineConstants


def test_server_fan_factor():
    assert ServerCooling().fan_factor == 0.0                     # liquid-cooled: no server fans
    air = ServerCooling(cooling="air", fan_share=0.12)
    assert air.fan_factor == pytest.approx(0.12 / 0.88)
    with pytest.raises(ValueError):
        ServerCooling(cooling="air", fan_share=0.6)


def test_step_time_fit_reproduces_the_shipped_constants(rows):
    sf = fit_step_time(_dep(), rows)
    c = RooflineConstants()
    assert (sf.step_overhead_s, sf.seq_overhead_s) == pytest.approx((c.step_overhead_s, c.seq_overhead_s), rel=2e-3)
    # the decode step follows the measured median inter-token latency within 10 % on every row (8-768 seqs)
    assert max(abs(sf.itl_fit_s / sf.itl_meas_s - 1)) < 0.10


def test_energy_per_output_token_within_25_percent_on_every_row(rows):
    # issue 24 target: GPU energy per output token within 25 % of ML.ENERGY over max_num_seqs 8-768. The energy
    # uses the mean step (prefill included), which was not fitted: only the median ITL and the power were.
    sm = StepModel(_dep())
    ratios = []
    for r in rows:
        a_c, a_m, t = steady_state_step(sm, r["avg_batch_size"], r["avg_output_len"])
        p = sm.P_idle + sm.P_range * min(1.0, sm.p_active + sm.k_c * a_c + sm.k_m * a_m)
        ratios.append(4 * p * t / r["avg_batch_size"] / float(r["energy_per_token_joules"]))
    assert len(ratios) == 11 and min(ratios) > 0.75 and max(ratios) < 1.25
    # before issue 24 the step grew too slowly with the batch: ratio 0.56-0.64 at 192-768; now within 16 %
    assert min(ratios[6:]) > 0.84


def test_step_terms_have_their_physical_form():
    # Llama 3 70B on 4 x H100 with the shipped constants, at 256 sequences of 1,000 cached tokens:
    m, g, c = load_model("llama-3-70b"), load_gpu("h100-sxm"), RooflineConstants()
    sm = StepModel(_dep())
    B, L = 256, 1000
    t = decode_step(sm, B, 2 * (L - 200), 200)
    t_lin = max(2 * m.parameters * B / (4 * g.peak_flops * c.eta_compute),
                m.weight_bytes / (4 * g.hbm_bandwidth_B_s * c.eta_memory))
    t_attn = max(4 * m.layers * m.attention_width * B * (L + 1) / (4 * g.peak_flops * c.eta_compute),
                 m.kv_bytes_per_token * B * (L + 1) / (4 * g.hbm_bandwidth_B_s * c.eta_memory))
    t_ar = 2 * m.layers * (c.allreduce_latency_s + 2 * 3 / 4 * B * m.hidden_size * 2 / g.link_bandwidth_B_s)
    assert t == pytest.approx(t_lin + t_attn + t_ar + c.step_overhead_s + B * c.seq_overhead_s, rel=1e-12)
    # attention reads every sequence's KV: doubling the context adds exactly the extra KV bytes / bandwidth
    dt = decode_step(sm, B, 2 * (2 * L - 200), 200) - t
    assert dt == pytest.approx(m.kv_bytes_per_token * B * L / (4 * g.hbm_bandwidth_B_s * c.eta_memory), rel=1e-9)
    # the per-sequence cost is the same on one GPU as on four (a host / engine cost), for another model too
    one = StepModel(Deployment(name="o", model=load_model("llama-3-8b"), gpu=g, tensor_parallel=1))
    assert one.c_seq == sm.c_seq == c.seq_overhead_s
    assert (decode_step(one, 2 * B, 400, 200) - decode_step(one, B, 400, 200)
            > B * c.seq_overhead_s)
