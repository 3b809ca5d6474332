"""RL post-training pipeline (issue 24 item 2): rollout on the serving engine, reward pool, trainer.

Checks by construction and by hand: async with staleness bound 0 is the synchronous barrier (same step ends to
1e-9); the staleness of every trained sample is within the bound; async is faster than sync and more so with a
looser bound (published anchors: 1.72x one-step-off on Qwen3-4B GRPO, vllm-project/vime #358; AReaL 2.57x); a
sync step = rollout + reward tail + train + weight broadcast; pool energies are the integrals of their power
step functions; partial rollouts carry unfinished samples with staleness > 0.
"""

from __future__ import annotations

import numpy as np
import pytest

from jobs.training import SHIPPED_MODELS, ParallelLayout, TrainingGPU
from scheduler_sim.serving.hardware import Deployment, load_gpu, load_model
from scheduler_sim.serving.rl import RLConfig, run_rl

G = TrainingGPU("h100-sxm", 989.4e12, 80e9, 450e9, 50e9, 8, 70.0, 700.0)
DEP = Deployment(name="roll", model=load_model("llama-3-8b"), gpu=load_gpu("h100-sxm"), replicas=4, tensor_parallel=1)


def _cfg(**kw):
    base = dict(rollout=DEP, trainer_model=SHIPPED_MODELS["llama-3-8b"], trainer_layout=ParallelLayout(tp=8, pp=1, dp=1),
                trainer_gpu=G, steps=4, prompts=16, group=4, reward_workers=16, seed=3)
    base.update(kw)
    return RLConfig(**base)


@pytest.fixture(scope="module")
def sync():
    return run_rl(_cfg())


def test_async_with_bound_zero_is_the_sync_barrier(sync):
    a0 = run_rl(_cfg(mode="async", staleness=0))
    assert np.allclose(a0.step_end_s, sync.step_end_s, rtol=1e-9, atol=0)
    assert a0.staleness_histogram() == {0: 4 * 64} == sync.staleness_histogram()


def test_async_is_faster_and_staleness_is_bounded(sync):
    a1 = run_rl(_cfg(mode="async", staleness=1))
    a2 = run_rl(_cfg(mode="async", staleness=2))
    assert sync.makespan_s > a1.makespan_s > a2.makespan_s
    assert a1.staleness.max() <= 1 and a2.staleness.max() <= 2 and a1.staleness.size == 256
    assert a1.samples_per_s > sync.samples_per_s
    assert a1.idle_fraction["trainer"] < sync.idle_fraction["trainer"]


def test_sync_step_is_rollout_reward_train_and_broadcast(sync):
    t = np.diff(np.concatenate(([0.0], sync.step_end_s)))
    bcast = 2 * SHIPPED_MODELS["llama-3-8b"].params / 50e9
    roll_reward = t - np.asarray(sync.info["t_train_s"]) - bcast
    assert np.all(roll_reward > 0)
    # the trainer runs exactly its training time each step; busy = sum of them
    assert sync.busy_s["trainer"] == pytest.approx(sum(sync.info["t_train_s"]), rel=1e-12)


def test_pool_energy_is_the_integral_of_its_power(sync):
    for k, (t, P) in sync.power.items():
        E = float(np.dot(np.diff(np.append(t, sync.makespan_s)), P))
        assert sync.energy_J[k] == pytest.approx(E, rel=1e-12)
    # trainer: 8 GPUs idle at 70 W outside training; above idle only while training
    t, P = sync.power["trainer"]
    assert P[0] == pytest.approx(8 * 70.0) and P.max() > 8 * 400
    assert sync.energy_per_sample_J == pytest.approx(sum(sync.energy_J.values()) / 256, rel=1e-12)


def test_partial_rollouts_carry_long_samples():
    p = run_rl(_cfg(partial_segment=512, steps=5))
    h = p.staleness_histogram()
    assert max(h) >= 1 and sum(h.values()) == p.samples_trained.sum()
    assert p.samples_trained.sum() < 5 * 64 + 1          # some samples are still unfinished at the end
    # each step's rollout is at most 512 tokens per sample, so the steps are shorter than unsegmented ones
    full = run_rl(_cfg(steps=5))
    assert p.mean_step_s < full.mean_step_s


def test_reward_model_on_gpus_scores_by_forward_flops():
    rm = SHIPPED_MODELS["llama-3-8b"]
    r = run_rl(_cfg(reward_model=rm, reward_gpus=4, steps=2))
    # reward pool: 4 GPUs idle at 70 W, each scoring at 700 W; busy time = sum of 2 N_rm tokens / (peak eta)
    t, P = r.power["reward"]
    assert P[0] == pytest.approx(4 * 70.0) and P.max() <= 4 * 700.0 + 1e-6
    T = r.makespan_s
    assert r.energy_J["reward"] == pytest.approx(4 * 70.0 * T + 630.0 * 4 * r.busy_s["reward"], rel=1e-9)
    # an 8B reward model scores a ~1,000-token sample in 2 x 8e9 x 1e3 / (989.4e12 x 0.62) = 26 ms
    assert 0 < r.busy_s["reward"] * 4 / 128 < 0.2 and r.staleness_histogram() == {0: 128}
    with pytest.raises(ValueError, match="reward_gpus"):
        _cfg(reward_model=rm)
