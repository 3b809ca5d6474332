"""Study (#15, 5b): demand response on the serving + batch co-located case.

The Frontier-like system runs one synthetic Frontier day (:mod:`experiments.frontier_workload`, seed 1, offered
load 0.85) under EASY backfill with the cooling FMU and Knoxville weather, and serves the Azure LLM conversation
hour (Llama 3 70B, 2 replicas x TP4 on H100, 2 nodes) from 12:00 to 13:00. A demand-response event asks the site
to cut facility power during 12:15-12:45 by a fraction of the baseline's mean facility power over that window
(the reference a utility would set from the site's baseline). The facility meets it by delaying flexible batch
jobs (:class:`scheduler_sim.policies.grid_events.GridDynamicsPolicy`: look-ahead from the window start, then the
power budget during the event); running jobs are never paused and the serving partition is not throttled (no
serving lever is modelled), so its SLO can only change through the facility, i.e. not at all.

Phase 1 (rank 0): the baseline without event, which fixes the reference. Phase 2: one run per reduction, spread
over the MPI ranks; rank 0 writes ``summary.csv`` and the figure.

Run::

    .venv/bin/python -m experiments.grid_demand_response --out out/grid_dr
    .venv/bin/mpiexec -n 2 .venv/bin/python -m mpi4py -m experiments.grid_demand_response --out out/grid_dr
"""

from __future__ import annotations

import sys
from pathlib import Path

import h5py
import numpy as np
import pandas as pd

from experiments.frontier_workload import frontier_jobs, write_swf
from scheduler_sim.analysis.grid_dynamics import series_mean
from scheduler_sim.app.config import RunConfig
from scheduler_sim.app.runner import run_one
from experiments.common import gather_rows, my_share, save_figure, start_study, write_csv

__all__ = ["EVENT_START_S", "EVENT_H", "REDUCTIONS", "config", "main"]

SERVING_START_S = 12 * 3600.0
EVENT_START_S = SERVING_START_S + 15 * 60.0
EVENT_H = 0.5
REDUCTIONS = (0.05, 0.10, 0.20, 0.30)
#: Hours before the event over which the curtailment that the look-ahead causes ahead of it is measured.
PRE_H = 6.0


def config(name: str, trace: Path, event: dict | None) -> RunConfig:
    """One run of the study: the Frontier day, the serving hour at noon, and optionally one event.

    Parameters
    ----------
    name : str
        Run name.
    trace : Path
        The synthetic Frontier SWF.
    event : dict | None
        A ``[[grid.event]]`` table, or None for the baseline.

    Returns
    -------
    RunConfig
        The validated configuration.
    """
    d = {
        "name": name, "system": "frontier", "seed": 0,
        "trace": {"path": str(trace), "window_start_days": 0.0, "window_days": 1.0},
        "cooling": {"enabled": True, "weather": "file"}, "output": {"progress": False},
        "serving": {"deployment": "llama3-70b_h100_tp4x2", "offset_s": SERVING_START_S},
    }
    if event is not None:
        d["grid"] = {"event": [event]}
    return RunConfig.model_validate(d)


def _facility(path: Path) -> tuple[np.ndarray, np.ndarray]:
    with h5py.File(path) as f:
        return f["timeseries/time_s"][()], f["timeseries/facility/P_facility_W"][()]


def _event_slo(path: Path, a0: float, a1: float) -> float:
    """SLO attainment of the serving requests arriving in ``[a0, a1)`` (simulation time) of a run file."""
    with h5py.File(path) as f:
        arr = f["serving/requests/arrival_time_s"][()] + SERVING_START_S
        ok = f["serving/requests/slo_met"][()].astype(bool)
    sel = (arr >= a0) & (arr < a1)
    return float(ok[sel].mean()) if sel.any() else float("nan")


def main(argv: list[str] | None = None) -> int:
    """Run the baseline and the reductions; write ``summary.csv`` and ``demand_response.png/svg``.

    Parameters
    ----------
    argv : list[str] | None
        Command-line arguments (None: ``sys.argv``).

    Returns
    -------
    int
        Exit status.
    """
    out, comm, rank, size = start_study("Demand response on the serving + batch co-located Frontier day.", "out/grid_dr", argv)
    trace = out / "frontier_day.swf"
    a0, a1 = EVENT_START_S, EVENT_START_S + EVENT_H * 3600
    if rank == 0:
        write_swf(frontier_jobs(1.0, seed=1, load=0.85), trace)
        r = run_one(config("baseline", trace, None), out / "baseline.h5")
        t, P = _facility(r.path)
        ref = series_mean(t, float(t[1] - t[0]), P, a0, a1)
        print(f"baseline: mean facility power over the event window {ref / 1e6:.3f} MW", flush=True)
        base = (r.summary, ref)
    else:
        base = None
    if comm is not None:
        base = comm.bcast(base, root=0)
    base_summary, ref = base
    mine = []
    for i, f in my_share(REDUCTIONS, rank, size):
        ev = {"start_day": a0 / 86400.0, "duration_h": EVENT_H, "reduction_fraction": f, "reference_MW": ref / 1e6,
              "label": f"cut{round(100 * f)}"}
        r = run_one(config(f"cut{round(100 * f)}", trace, ev), out / f"cut{round(100 * f)}.h5")
        with h5py.File(r.path) as h:
            e = {k: h[f"grid/events/{k}"][0] for k in ("cap_W", "max_W", "mean_W", "floor_W", "committed_W", "met",
                                                       "feasible", "jobs_delayed", "serving_slo_attainment")}
            e["verdict"] = h["grid/events/verdict"][0].decode()
        mine.append((i, f, r.summary, e))
        print(f"[rank {rank}] cut {100 * f:.0f} %: {e['verdict']}", flush=True)
    rows = gather_rows(comm, mine)
    if rows is None:
        return 0
    rows = sorted(rows, key=lambda x: x[0])
    tb, Pb = _facility(out / "baseline.h5")
    dt = float(tb[1] - tb[0])
    p0 = a0 - PRE_H * 3600  # the hours before the event, where the look-ahead already holds jobs back
    pre_b = series_mean(tb, dt, Pb, p0, a0)
    table = [{"case": "baseline", "reduction": 0.0, "cap_MW": np.nan, "max_MW": np.nan,
              "mean_MW": series_mean(tb, dt, Pb, a0, a1) / 1e6, "met": np.nan, "curtailed_MWh": 0.0,
              "curtailed_before_MWh": 0.0,
              "jobs_delayed": 0, "mean_wait_h": base_summary["mean_wait_s"] / 3600,
              "E_facility_MWh": base_summary["E_facility_J"] / 3.6e9,
              "slo_attainment": base_summary["serving_slo_attainment"],
              "slo_attainment_event": _event_slo(out / "baseline.h5", a0, a1),
              "J_per_token_facility": base_summary["serving_J_per_token_facility"], "verdict": ""}]
    for i, f, s, e in rows:
        t, P = _facility(out / f"cut{round(100 * f)}.h5")
        mean = series_mean(t, dt, P, a0, a1)
        table.append({"case": f"cut{round(100 * f)}", "reduction": f, "cap_MW": e["cap_W"] / 1e6,
                      "max_MW": e["max_W"] / 1e6, "mean_MW": mean / 1e6, "met": bool(e["met"]),
                      "curtailed_MWh": (ref - mean) * (a1 - a0) / 3.6e9,
                      "curtailed_before_MWh": (pre_b - series_mean(t, dt, P, p0, a0)) * (a0 - p0) / 3.6e9,
                      "jobs_delayed": int(e["jobs_delayed"]),
                      "mean_wait_h": s["mean_wait_s"] / 3600, "E_facility_MWh": s["E_facility_J"] / 3.6e9,
                      "slo_attainment": s["serving_slo_attainment"],
                      "slo_attainment_event": float(e["serving_slo_attainment"]),
                      "J_per_token_facility": s["serving_J_per_token_facility"], "verdict": e["verdict"]})
    table = pd.DataFrame(table)
    write_csv(table, out / "summary.csv")
    with pd.option_context("display.width", 200, "display.max_colwidth", 60):
        print(table.drop(columns=["verdict"]).to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    for _, row in table.iterrows():
        if row["verdict"]:
            print(f"{row['case']}: {row['verdict']}")
    for p in plot(table, out):
        print(f"figure  -> {p}")
    return 0


def plot(table: pd.DataFrame, out: Path) -> list[Path]:
    """Facility power around the event per case (60 s averages), and curtailment against the wait it costs.

    Parameters
    ----------
    table : pd.DataFrame
        The study table (``summary.csv``).
    out : Path
        Folder of the run files and the figure.

    Returns
    -------
    list[Path]
        The PNG and SVG files.
    """
    import matplotlib  # heavy: imported only when the figure is drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(13, 4.5), gridspec_kw={"width_ratios": [1.6, 1]})
    a0, a1 = EVENT_START_S, EVENT_START_S + EVENT_H * 3600
    for k, row in table.iterrows():
        t, P = _facility(out / f"{row['case']}.h5")
        sel = (t >= a0 - 3 * 3600) & (t < a1 + 3 * 3600)
        line, = ax.plot((t[sel] - a0) / 3600, P[sel] / 1e6, lw=1.2 if k else 2.0,
                        color="black" if not k else None, label=row["case"])
        if np.isfinite(row["cap_MW"]):
            ax.hlines(row["cap_MW"], 0, (a1 - a0) / 3600, colors=line.get_color(), linestyles="--", lw=1)
    ax.axvspan(0, (a1 - a0) / 3600, color="0.9", zorder=0, label="event")
    ax.axvspan((12 * 3600 - a0) / 3600, (13 * 3600 - a0) / 3600, color="tab:green", alpha=0.08, zorder=0,
               label="serving hour")
    ax.set_xlabel("hours from the event start (12:15)")
    ax.set_ylabel("facility power [MW] (60 s averages)")
    ax.set_title("Facility power around the event; dashed: caps", fontsize=10)
    ax.legend(fontsize=7, ncol=2)
    cuts = table.iloc[1:]
    x = np.arange(len(cuts))
    ax2.bar(x - 0.3, cuts["curtailed_MWh"], 0.3, color="tab:blue", label="energy curtailed in the event [MWh]")
    ax2.bar(x, cuts["curtailed_before_MWh"], 0.3, color="tab:cyan",
            label=f"... in the {PRE_H:g} h before it [MWh]")
    ax2.set_xticks(x, [f"{100 * r:.0f} %" for r in cuts["reduction"]])
    ax2.set_xlabel("requested reduction (of the baseline's event-window mean)")
    ax2.set_ylabel("MWh")
    ax3 = ax2.twinx()
    ax3.bar(x + 0.3, cuts["mean_wait_h"] - table["mean_wait_h"].iloc[0], 0.3, color="tab:orange",
            label="mean wait added [h]")
    ax3.set_ylabel("mean wait added, whole day [h]")
    for xi, (_, r) in zip(x, cuts.iterrows()):
        ax2.annotate("met" if r["met"] else "NOT met", (xi - 0.3, r["curtailed_MWh"]), xytext=(0, 3),
                     textcoords="offset points", ha="center", fontsize=8)
    h1, l1 = ax2.get_legend_handles_labels()
    h2, l2 = ax3.get_legend_handles_labels()
    ax2.legend(h1 + h2, l1 + l2, fontsize=7, loc="upper left")
    ax2.set_title("Curtailment and its cost to batch users", fontsize=10)
    fig.suptitle("Demand response on the Frontier-like day with the LLM-serving hour (serving SLO attainment "
                 f"{100 * table['slo_attainment'].min():.1f}-{100 * table['slo_attainment'].max():.1f} % over the "
                 "cases)")
    fig.tight_layout()
    return save_figure(fig, out, "demand_response")


if __name__ == "__main__":
    sys.exit(main())
