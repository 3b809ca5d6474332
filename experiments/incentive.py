"""Study (d): two-phase energy incentive in the style of Fugaku points.

Phase 1 replays a period of a real trace (HPC2N "Seth", which records users; its group field holds one value, so
fair-share and bonuses are charged to users) and scores every user by the energy
behaviour of their jobs. Phase 2 schedules the next period with multi-factor priority (age, size, fair-share) plus
an additive bonus that rewards the users with the best phase-1 score. Variants of the score:

* ``avg_power``: energy per node-second of the user's jobs, ``sum E_j / sum(nodes_j run_j)`` [W per node];
* ``edp``: mean over the user's jobs of ``(E_j / nodes_j) * run_j`` [J s per node] (energy-delay product);
* ``ed2p``: mean of ``(E_j / nodes_j) * run_j^2`` [J s^2 per node];

with ``E_j`` the job's IT energy (rack input, conversion losses included). Users are ranked by score (lower is
better) and get ``bonus = w_bonus * (1 - rank / (n_users - 1))`` priority points (the best ``w_bonus``, the
worst 0); users absent from phase 1 get 0. The baseline is phase 2 without bonus.

What this measures: how a points scheme redistributes waiting between efficient and inefficient users. Users'
jobs do not change their power in response (there is no behaviour model), so total energy barely moves; say so
when quoting results.

References
----------
RIKEN R-CCS, "Fugaku point" energy-saving incentive (2022-2023 operation reports): accounts earn points for
energy-efficient use, which raise their scheduling priority.

Run (one process, or spread the phase-2 variants over ranks)::

    .venv/bin/python -m experiments.incentive --out out/incentive
    .venv/bin/mpiexec -n 2 .venv/bin/python -m mpi4py -m experiments.incentive --out out/incentive
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import h5py
import numpy as np
import pandas as pd

from scheduler_sim.app.config import RunConfig
from scheduler_sim.io.hdf5 import SCHEMA_VERSION, atomic_h5, read_jobs
from scheduler_sim.io.schema import SchemaWriter
from scheduler_sim.app.runner import run_one
from experiments.common import save_figure, world, write_csv

__all__ = ["VARIANTS", "user_scores", "bonus_from_scores", "phase_config", "main"]

VARIANTS = ("avg_power", "edp", "ed2p")
TRACE = Path(__file__).resolve().parent / "data" / "hpc2n.swf.gz"


def phase_config(name: str, start_day: float, days: float, policy: str, backfill: str,
                 bonus: dict[str, float] | None = None, cooling: bool = True) -> RunConfig:
    """The run configuration of one phase on the Seth-like system and the embedded HPC2N trace."""
    return RunConfig.model_validate({
        "name": name, "system": "seth",
        "trace": {"path": str(TRACE), "window_start_days": start_day, "window_days": days, "cores_per_node": 2},
        "scheduler": {"policy": policy, "backfill": backfill,
                      "priority": {"account_bonus": bonus or {}, "fairshare_by": "user"}},
        "cooling": {"enabled": cooling}, "output": {"progress": False, "warmup_days": 1.0},
    })


def user_scores(jobs: pd.DataFrame, variant: str) -> pd.Series:
    """Score per user from a phase-1 job table (lower is better); see the module docstring for the formulas.

    Parameters
    ----------
    jobs : pd.DataFrame
        Run-file job table (``user``, ``nodes``, ``run_s``, ``energy_it_J``).
    variant : str
        "avg_power", "edp" or "ed2p".

    Returns
    -------
    pandas.Series
        Score indexed by user name; users whose jobs all ran 0 s are left out.

    Raises
    ------
    ValueError
        For an unknown variant.
    """
    j = jobs.loc[(jobs["run_s"] > 0) & (jobs["user"].astype(str) != "")].copy()
    e_node = j["energy_it_J"] / j["nodes"]
    if variant == "avg_power":
        g = j.assign(node_s=j["nodes"] * j["run_s"]).groupby("user")
        return g["energy_it_J"].sum() / g["node_s"].sum()
    if variant == "edp":
        return (e_node * j["run_s"]).groupby(j["user"]).mean()
    if variant == "ed2p":
        return (e_node * j["run_s"] ** 2).groupby(j["user"]).mean()
    raise ValueError(f"unknown variant {variant!r}; known: {', '.join(VARIANTS)}")


def bonus_from_scores(scores: pd.Series, w_bonus: float) -> dict[str, float]:
    """Rank users by score (ascending, ties by name) and give ``w_bonus * (1 - rank / (n - 1))`` points."""
    s = scores.sort_index().sort_values(kind="stable")
    n = len(s)
    if n == 1:
        return {str(s.index[0]): float(w_bonus)}
    return {str(u): float(w_bonus * (1.0 - r / (n - 1))) for r, u in enumerate(s.index)}


def _half_waits(jobs: pd.DataFrame, scores: pd.Series) -> tuple[float, float]:
    """Mean wait [s] of phase-2 jobs of the better-scored half of users and of the worse half."""
    ranked = scores.sort_index().sort_values(kind="stable").index.astype(str)
    good = set(ranked[: len(ranked) // 2])
    j = jobs.loc[~jobs["prefilled"].astype(bool) & jobs["user"].astype(str).isin(ranked)]
    in_good = j["user"].astype(str).isin(good)
    return float(j.loc[in_good, "wait_s"].mean()), float(j.loc[~in_good, "wait_s"].mean())


def main(argv: list[str] | None = None) -> int:
    """Run both phases and the variants; write run files, ``summary.h5``, ``incentive.csv`` and the figure."""
    ap = argparse.ArgumentParser(description="Two-phase energy incentive study (Fugaku points style) on HPC2N.")
    ap.add_argument("--out", default="out/incentive", help="output folder")
    ap.add_argument("--phase-days", type=float, default=28.0, help="length of each phase [days]")
    ap.add_argument("--w-bonus", type=float, default=1000.0, help="priority points of the best-scored user")
    ap.add_argument("--no-cooling", action="store_true", help="run without the cooling FMU")
    a = ap.parse_args(argv)
    comm, rank, size = world()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    d = a.phase_days
    cool = not a.no_cooling
    if rank == 0:
        print(f"phase 1: replay of HPC2N days 0-{d:g} on the Seth-like system", flush=True)
        r1 = run_one(phase_config("phase1-replay", 0.0, d, "replay", "", cooling=cool), out / "phase1-replay.h5")
        jobs1 = read_jobs(r1.path)
        scores = {v: user_scores(jobs1, v) for v in VARIANTS}
        payload = {v: s.to_dict() for v, s in scores.items()}
    else:
        payload = None
    if comm is not None:
        payload = comm.bcast(payload, root=0)
    scores = {v: pd.Series(payload[v], dtype=float) for v in VARIANTS}
    cases = [("baseline", {})] + [(v, bonus_from_scores(scores[v], a.w_bonus)) for v in VARIANTS]
    mine = []
    for i, (label, bonus) in enumerate(cases):
        if i % size != rank:
            continue
        cfg = phase_config(f"phase2-{label}", d, d, "priority", "easy", bonus, cooling=cool)
        r = run_one(cfg, out / f"phase2-{label}.h5")
        jobs2 = read_jobs(r.path)
        halves = {v: _half_waits(jobs2, scores[v]) for v in VARIANTS}
        mine.append((i, label, r.summary, halves))
        print(f"[rank {rank}] phase 2 {label}: mean wait {r.summary['mean_wait_s'] / 3600:.2f} h", flush=True)
    rows = comm.gather(mine, root=0) if comm is not None else [mine]
    if rank != 0:
        return 0
    rows = sorted((x for part in rows for x in part), key=lambda x: x[0])
    table = pd.DataFrame([{
        "case": label, "mean_wait_h": s["mean_wait_s"] / 3600, "mean_bounded_slowdown": s["mean_bounded_slowdown"],
        "E_facility_MWh": s["E_facility_J"] / 3.6e9, "PUE": s["PUE"],
        **{f"wait_good_half_h[{v}]": h[v][0] / 3600 for v in VARIANTS},
        **{f"wait_bad_half_h[{v}]": h[v][1] / 3600 for v in VARIANTS},
    } for _, label, s, h in rows])
    write_csv(table, out / "incentive.csv")
    with atomic_h5(out / "summary.h5") as f:
        w = SchemaWriter(f, "incentive-study")
        w.attrs("/", {"schema_version": SCHEMA_VERSION, "kind": "incentive-study",
                      "scores_json": json.dumps(payload, sort_keys=True)})
        w.group("/cases")
        for col in table.columns:
            data = (table[col].to_numpy() if col != "case"
                    else np.array(table[col].astype(str).tolist(), dtype=h5py.string_dtype("utf-8")))
            w.dataset(f"/cases/{col}", data)
    print(table.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    for p in plot(table, out):
        print(f"figure  -> {p}")
    return 0


def plot(table: pd.DataFrame, out: Path) -> list[Path]:
    """Mean wait of the better and worse half of users (by each variant's own score), per phase-2 case."""
    import matplotlib  # heavy: matplotlib is imported only when the plot is drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 4), sharey=True)
    x = np.arange(len(table))
    for ax, v in zip(axes, VARIANTS):
        ax.bar(x - 0.2, table[f"wait_good_half_h[{v}]"], 0.4, label="better-scored half of users", color="tab:green")
        ax.bar(x + 0.2, table[f"wait_bad_half_h[{v}]"], 0.4, label="worse-scored half", color="tab:red")
        ax.set_xticks(x, table["case"], rotation=20)
        ax.set_title(f"users split by {v} score (phase 1)", fontsize=10)
    axes[0].set_ylabel("mean wait in phase 2 [h]")
    axes[0].legend(fontsize=8)
    fig.suptitle("Energy-incentive priorities (HPC2N, Seth-like): who waits, by phase-2 bonus scheme")
    fig.tight_layout()
    return save_figure(fig, out, "incentive")


if __name__ == "__main__":
    sys.exit(main())
