"""Study (#24, item 5): synchronous against asynchronous RL post-training on 512 H100 GPUs.

Pipeline (:mod:`scheduler_sim.serving.rl`): Llama 3 8B policy. Rollout pool: 384 GPUs = 384 replicas of one GPU
(vLLM-style engine, max_num_seqs 256, the fitted H100 step and power model); trainer: 128 GPUs (TP 8, DP 16, ZeRO
1, selective recompute, sequences packed to 8,192 tokens); reward: 512 CPU sandbox workers (median 2 s, p99 20 s
per sample). Each step: 256 prompts x 8 samples (GRPO groups), prompts log-normal median 300 / p99 2,000 tokens,
outputs median 500 / p99 5,000, capped at 16,384. ``STEPS`` RL steps per scenario; the same draws in every
scenario.

Scenarios (spread over the MPI ranks): ``sync``; ``async`` with staleness bound k = 1, 2, 4; ``sync`` with partial
rollouts of 1,024 tokens per step. Outputs: mean step time, samples/s, idle fraction per pool, staleness
histogram, mean power per pool, GPU + reward-CPU energy per trained sample, and the facility PUE of the
one-type H100 cluster as a multiplier (the RL pools' mean IT power through the facility chain of
``power/systems/h100_4k.toml`` is not run here: see the docs page).

Run::

    .venv/bin/mpiexec -n 2 .venv/bin/python -m mpi4py -m experiments.rl_sync_async --out out/rl_sync_async
"""

from __future__ import annotations

import sys
import time

import numpy as np
import pandas as pd

from experiments.common import gather_dicts, gather_rows, my_share, save_figure, start_study
from jobs.training import SHIPPED_MODELS, ParallelLayout, TrainingGPU
from scheduler_sim.serving.hardware import Deployment, load_gpu, load_model
from scheduler_sim.serving.rl import RLConfig, run_rl

__all__ = ["SCENARIOS", "STEPS", "config", "main"]

STEPS = 8
SCENARIOS = {"sync": ("sync", 0, 0), "async k=1": ("async", 1, 0), "async k=2": ("async", 2, 0),
             "async k=4": ("async", 4, 0), "sync partial 1024": ("sync", 0, 1024)}


def config(mode: str, k: int, partial: int) -> RLConfig:
    """One scenario.

    Parameters
    ----------
    mode : str
        "sync" or "async".
    k : int
        Staleness bound.
    partial : int
        Partial-rollout segment [tokens] (0 = off).

    Returns
    -------
    RLConfig
    """
    g = load_gpu("h100-sxm")
    tg = TrainingGPU(g.name, g.peak_flops, g.hbm_capacity_B, g.link_bandwidth_B_s, g.network_bandwidth_B_s or 50e9,
                     8, g.idle_power_W, g.max_power_W)
    dep = Deployment(name="rollout", model=load_model("llama-3-8b"), gpu=g, replicas=384, tensor_parallel=1)
    return RLConfig(rollout=dep, trainer_model=SHIPPED_MODELS["llama-3-8b"],
                    trainer_layout=ParallelLayout(tp=8, pp=1, dp=16), trainer_gpu=tg, steps=STEPS, prompts=256,
                    group=8, reward_workers=512, reward_idle_W=0.0, mode=mode, staleness=k, partial_segment=partial,
                    seed=0)


def main(argv: list[str] | None = None) -> int:
    """Run the scenarios; write ``summary.csv`` and ``rl_sync_async.png/svg``.

    Parameters
    ----------
    argv : list[str] | None
        Command-line arguments (None: ``sys.argv``).

    Returns
    -------
    int
        Exit status.
    """
    out, comm, rank, size = start_study("Sync vs async RL post-training on 512 GPUs.", "out/rl_sync_async", argv)
    mine, series = [], {}
    for _, (name, (mode, k, part)) in my_share(list(SCENARIOS.items()), rank, size):
        t0 = time.perf_counter()
        r = run_rl(config(mode, k, part))
        wall = time.perf_counter() - t0
        idle = r.idle_fraction
        T = r.makespan_s
        mine.append({"scenario": name, "steps": STEPS, "mean_step_s": r.mean_step_s, "samples_per_s": r.samples_per_s,
                     "idle_rollout": idle["rollout"], "idle_reward": idle["reward"], "idle_trainer": idle["trainer"],
                     "P_rollout_kW": r.energy_J["rollout"] / T / 1e3, "P_trainer_kW": r.energy_J["trainer"] / T / 1e3,
                     "P_reward_kW": r.energy_J["reward"] / T / 1e3, "kJ_per_sample": r.energy_per_sample_J / 1e3,
                     "staleness": str(r.staleness_histogram()), "samples": int(r.samples_trained.sum()),
                     "wall_s": wall})
        series[name] = {k2: (t.tolist(), P.tolist()) for k2, (t, P) in r.power.items()}
        print(f"[rank {rank}] {name}: step {r.mean_step_s:.1f} s, {r.samples_per_s:.2f} samples/s, {wall:.1f} s",
              flush=True)
    rows = gather_rows(comm, mine)
    allser = gather_dicts(comm, series)
    if rows is None:
        return 0
    order = list(SCENARIOS)
    table = pd.DataFrame(rows)
    table["k"] = table["scenario"].map(order.index)
    table = table.sort_values("k").drop(columns="k").reset_index(drop=True)
    base = float(table.loc[table["scenario"] == "sync", "samples_per_s"].iloc[0])
    table["speedup_vs_sync"] = table["samples_per_s"] / base
    table.to_csv(out / "summary.csv", index=False)
    with pd.option_context("display.width", 250, "display.max_colwidth", 60):
        print(table.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(1, 2, figsize=(12, 4), sharey=True)
    for axis, name in zip(ax, ("sync", "async k=2")):
        for pool, (t, P) in allser[name].items():
            axis.step(np.asarray(t) / 60, np.asarray(P) / 1e3, where="post", label=pool)
        axis.set_title(name)
        axis.set_xlabel("time [min]")
    ax[0].set_ylabel("pool power [kW] (GPUs; reward CPUs above idle)")
    ax[0].legend()
    fig.tight_layout()
    save_figure(fig, out, "rl_sync_async")
    return 0


if __name__ == "__main__":
    sys.exit(main())
