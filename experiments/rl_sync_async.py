"""Study (#24, item 5): synchronous against asynchronous RL post-training on 512 H100 GPUs, through the facility.

Pipeline (:mod:`scheduler_sim.serving.rl`, as a ``[[workload]] family = "rl"`` table: :mod:`scheduler_sim.app.rl_workload`):
Llama 3 8B policy. Rollout pool: 384 GPUs = 384 replicas of one GPU (vLLM-style engine, max_num_seqs 256, the
fitted H100 step and power model); trainer: 128 GPUs (TP 8, DP 16, ZeRO 1, selective recompute, sequences packed to
8,192 tokens); reward: 512 CPU sandbox workers on the rollout nodes' hosts (median 2 s, p99 20 s per sample). Each
step: 256 prompts x 8 samples (GRPO groups), prompts log-normal median 300 / p99 2,000 tokens, outputs median 500 /
p99 5,000, capped at 16,384. ``STEPS`` RL steps per scenario; the same draws in every scenario.

Facility: the one-type H100 cluster ``power/systems/h100_4k.toml`` (512 nodes, the Frontier-like plant, Knoxville
weather, the cooling FMU). The RL pools take 64 nodes; the other 448 nodes run a Llama 3 70B pre-training job
(3,584 GPUs, TP 8, PP 4, DP 112; no failures, so the facility load is the same in every scenario; a checkpoint
every 30 min) from t = 0, so the plant is warm and loaded when the RL pipeline is submitted at ``RL_START_H``.
Each scenario is one facility run; the RL pipeline's one gang job (every pool) gets its IT and facility energy from
the run's attribution (``/attribution/jobs``), hence the pipeline's effective PUE and energy per
sample at facility scope (``/workload/rl`` of each run's HDF5 file).

Scenarios (spread over the MPI ranks): ``sync``; ``async`` with staleness bound k = 1, 2, 4; ``sync`` with partial
rollouts of 1,024 tokens per step.

Run::

    .venv/bin/mpiexec -n 2 .venv/bin/python -m mpi4py -m experiments.rl_sync_async --out out/rl_sync_async
"""

from __future__ import annotations

import sys
import time

import h5py
import numpy as np
import pandas as pd

from experiments.common import gather_dicts, gather_rows, my_share, save_figure, start_study
from scheduler_sim.app.config import RunConfig
from scheduler_sim.app.runner import run_one

__all__ = ["SCENARIOS", "STEPS", "RL_START_H", "config", "main"]

STEPS = 8
RL_START_H = 1.0
WINDOW_H = 1.75
SCENARIOS = {"sync": ("sync", 0, 0), "async k=1": ("async", 1, 0), "async k=2": ("async", 2, 0),
             "async k=4": ("async", 4, 0), "sync partial 1024": ("sync", 0, 1024)}


def config(name: str, mode: str, k: int, partial: int) -> RunConfig:
    """One scenario: the RL pipeline beside the background pre-training job on the H100 cluster.

    Parameters
    ----------
    name : str
        Scenario name (the run name is derived from it).
    mode : str
        "sync" or "async".
    k : int
        Staleness bound.
    partial : int
        Partial-rollout segment [tokens] (0 = off).

    Returns
    -------
    RunConfig
    """
    rl = {"family": "rl", "name": "rl", "model": "llama-3-8b", "gpu": "h100-sxm", "submit_day": RL_START_H / 24,
          "layout": {"tp": 8, "pp": 1, "dp": 16, "zero_stage": 1, "recompute": "selective"},
          "rl": {"rollout_replicas": 384, "rollout_tp": 1, "max_num_seqs": 256, "steps": STEPS, "prompts": 256,
                 "group": 8, "reward_workers": 512, "mode": mode, "staleness": max(k, 1) if mode == "async" else 1,
                 "partial_segment": partial}}
    bg = {"family": "training", "name": "pretrain-70b", "model": "llama-3-70b", "gpu": "h100-sxm",
          "train_hours": 2.0, "failure_rate_per_gpu_h": 0.0, "checkpoint_interval_s": 1800.0,
          "layout": {"tp": 8, "pp": 4, "dp": 112, "micro_batches": 32, "schedule": "interleaved",
                     "virtual_stages": 5}}
    return RunConfig.model_validate({
        "name": "rl-" + name.replace(" ", "-").replace("=", ""), "system": "h100_4k", "seed": 0,
        "trace": {"enabled": False, "window_start_days": 0.0, "window_days": WINDOW_H / 24},
        "scheduler": {"policy": "fcfs"}, "output": {"progress": False}, "workload": [bg, rl]})


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
        cfg = config(name, mode, k, part)
        path = out / f"{cfg.name}.h5"
        res = run_one(cfg, path)
        wall = time.perf_counter() - t0
        with h5py.File(path, "r") as f:
            r = {c: v[0] for c, v in ((c, f["workload/rl"][c][()]) for c in f["workload/rl"])}
            grp = f["workload/rl_power/rl"]
            series[name] = {pool: (grp[f"{pool}_t_s"][()].tolist(), grp[f"{pool}_P_W"][()].tolist())
                            for pool in ("rollout", "trainer", "reward")}
            job = int(f["workload/rl/job_id"][0])
        T = float(r["makespan_s"])
        mine.append({"scenario": name, "steps": STEPS, "mean_step_s": float(r["mean_step_s"]),
                     "samples_per_s": float(r["samples_per_s"]), "idle_rollout": float(r["idle_rollout"]),
                     "idle_reward": float(r["idle_reward"]), "idle_trainer": float(r["idle_trainer"]),
                     "P_rollout_gpu_kW": float(r["E_rollout_gpu_J"]) / T / 1e3,
                     "P_trainer_gpu_kW": float(r["E_trainer_gpu_J"]) / T / 1e3,
                     "P_reward_kW": float(r["E_reward_J"]) / T / 1e3, "P_it_kW": float(r["E_it_J"]) / T / 1e3,
                     "kJ_per_sample_gpu": float(r["J_per_sample_gpu"]) / 1e3,
                     "kJ_per_sample_it": float(r["J_per_sample_it"]) / 1e3,
                     "kJ_per_sample_facility": float(r["J_per_sample_facility"]) / 1e3,
                     "PUE_rl": float(r["PUE_effective"]), "PUE_facility": float(res.summary["PUE"]),
                     "staleness_mean": float(r["staleness_mean"]), "staleness_max": int(r["staleness_max"]),
                     "samples": int(r["samples_trained"]), "wait_s": float(r["wait_s"]),
                     "rl_job": job, "wall_s": wall})
        print(f"[rank {rank}] {name}: step {mine[-1]['mean_step_s']:.1f} s, {mine[-1]['samples_per_s']:.2f} samples/s, "
              f"PUE {mine[-1]['PUE_rl']:.4f}, {wall:.1f} s", flush=True)
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
