"""Study (#15, 5c): facility ramps of a training-heavy workload, a ramp-rate limit on starts, a GPU power floor and
a facility battery.

Workload: two synthetic Frontier days (:mod:`experiments.frontier_workload`, seed 2, offered load 0.9) on the
Frontier-like system under EASY backfill with the cooling FMU. Every job of at least ``MIN_NODES`` nodes is a
synchronous training job (most of the node-hours): its nodes draw ``HIGH_W`` in the compute phase (75 % of a
``PERIOD_S`` step) and ``LOW_W`` in the communication phase (ASSUMPTIONS, in the range of MI250X nodes: 4 x 560 W
GPUs near TBP while computing, near idle while waiting on the all-reduce, plus ~400 W of CPU, memory, NIC).
Checkpoint dips are not modelled.

Scenarios (one simulation each, spread over the MPI ranks):

* ``plain``: no mitigation;
* ``ramp``: the ramp-rate limit ``RAMP_MW_PER_MIN`` enforced on job starts (staggered starts) and, in the 1 s
  facility power, every start ramping in and every end ramping down at the limit (soft start, filler load);
* ``floor``: a GPU power floor: the communication phase held at ``FLOOR_W`` per node;
* ``floor+ramp``: both.

For each scenario the resampled 1 s facility power (``/grid/ramps/P_facility_W``) is then run through
:func:`power.battery.dispatch_ramp_limited` for battery ratings ``BATTERY_MW`` (energy = power x
``BATTERY_HOURS``, 85 % round trip): the ramp statistics (D = 1 s, 1 min, 15 min), the amplitude at the training
period, and the minutes whose grid draw broke the limit (consecutive 60 s means more than the limit apart). The
battery controller limits every 1 s step (sufficient for the per-minute limit, so the power it needs is an upper
bound for a controller that tracks minute means only).

Run::

    .venv/bin/python -m experiments.grid_ramps_battery --out out/grid_ramps
    .venv/bin/mpiexec -n 2 .venv/bin/python -m mpi4py -m experiments.grid_ramps_battery --out out/grid_ramps
"""

from __future__ import annotations

import sys
from pathlib import Path

import h5py
import numpy as np
import pandas as pd

from experiments.frontier_workload import frontier_jobs, write_swf
from power.battery import Battery
from scheduler_sim.analysis.grid_dynamics import ramp_report
from scheduler_sim.app.config import RunConfig
from scheduler_sim.app.runner import run_one
from experiments.common import gather_rows, my_share, save_figure, start_study, write_csv

__all__ = ["SCENARIOS", "BATTERY_MW", "config", "main"]

PERIOD_S = 10.0
DUTY = 0.75
HIGH_W = 2700.0
LOW_W = 900.0
FLOOR_W = 2100.0
MIN_NODES = 256
RAMP_MW_PER_MIN = 5.0
BATTERY_MW = (0.0, 1.0, 2.0, 4.0, 8.0, 16.0)
BATTERY_HOURS = 0.25
SCENARIOS = {"plain": (False, False), "ramp": (True, False), "floor": (False, True), "floor+ramp": (True, True)}


def config(name: str, trace: Path, ramp: bool, floor: bool) -> RunConfig:
    """One scenario: the two synthetic days with the training profile, the ramp limit and / or the floor.

    Parameters
    ----------
    name : str
        Run name.
    trace : Path
        The synthetic SWF.
    ramp : bool
        Enforce the ramp-rate limit on starts.
    floor : bool
        Hold the communication phase at ``FLOOR_W``.

    Returns
    -------
    RunConfig
        The validated configuration.
    """
    grid = {"power_profile": {"period_s": PERIOD_S, "duty": DUTY, "low_W": LOW_W, "high_W": HIGH_W,
                              "floor_W": FLOOR_W if floor else 0.0, "min_nodes": MIN_NODES}}
    if ramp:
        grid["ramp_limit_MW_per_min"] = RAMP_MW_PER_MIN
    return RunConfig.model_validate({
        "name": name, "system": "frontier", "seed": 0,
        "trace": {"path": str(trace), "window_start_days": 0.0, "window_days": 2.0},
        "cooling": {"enabled": True, "weather": "file"}, "output": {"progress": False}, "grid": grid,
    })


def battery_sweep(fast: np.ndarray, dt: float) -> list[dict]:
    """Ramp figures of one facility series for every battery rating of ``BATTERY_MW``.

    Parameters
    ----------
    fast : np.ndarray
        Facility power bin means [W].
    dt : float
        Bin [s].

    Returns
    -------
    list[dict]
        One row per rating.
    """
    rows = []
    r = RAMP_MW_PER_MIN * 1e6 / 60.0
    for mw in BATTERY_MW:
        bat = Battery(mw * 1e6 * BATTERY_HOURS * 3600, mw * 1e6) if mw > 0 else None
        rr = ramp_report(fast, dt, ramp_W_per_s=r, battery=bat, periods_s=(PERIOD_S,))
        b = rr["battery"]
        rows.append({"battery_MW": mw, "battery_MWh": mw * BATTERY_HOURS,
                     "ramp_1s_MW": rr["ramp_grid_W"][1.0] / 1e6, "ramp_60s_MW": rr["ramp_grid_W"][60.0] / 1e6,
                     "ramp_900s_MW": rr["ramp_grid_W"][900.0] / 1e6,
                     "amplitude_MW": rr["amplitude_grid_W"][PERIOD_S] / 1e6,
                     "amplitude_15min_max_MW": rr["amplitude_max_grid_W"][PERIOD_S] / 1e6,
                     "minutes_over_limit": int(rr["violation_window_start_s"].size),
                     "battery_loss_MWh": b.E_loss_J / 3.6e9 if b is not None else 0.0,
                     "balance_residual_J": b.balance_residual_J() if b is not None else 0.0})
    return rows


def main(argv: list[str] | None = None) -> int:
    """Run the scenarios and the battery sweep; write ``summary.csv`` and ``ramps_battery.png/svg``.

    Parameters
    ----------
    argv : list[str] | None
        Command-line arguments (None: ``sys.argv``).

    Returns
    -------
    int
        Exit status.
    """
    out, comm, rank, size = start_study("Ramps, ramp limit, GPU floor and battery on a training-heavy workload.",
                                        "out/grid_ramps", argv)
    trace = out / "frontier_2days.swf"
    if rank == 0:
        jobs = frontier_jobs(2.0, seed=2, load=0.9)
        write_swf(jobs, trace)
        nh = jobs["nodes"] * jobs["run_s"].astype(float)
        share = float(nh[jobs["nodes"] >= MIN_NODES].sum() / nh.sum())
        print(f"workload: {len(nh)} jobs, {100 * share:.1f} % of node-hours in jobs of >= {MIN_NODES} nodes "
              f"(training profile)", flush=True)
    if comm is not None:
        comm.Barrier()
    mine = []
    for _, (name, (ramp, floor)) in my_share(list(SCENARIOS.items()), rank, size):
        r = run_one(config(name, trace, ramp, floor), out / f"{name}.h5")
        with h5py.File(r.path) as f:
            g = f["grid/ramps"]
            fast = g["P_facility_W"][()]
            dt = float(g.attrs["resample_s"] * g.attrs["decimation"])
        for row in battery_sweep(fast, dt):
            mine.append({"scenario": name, "mean_wait_h": r.summary["mean_wait_s"] / 3600,
                         "E_facility_MWh": r.summary["E_facility_J"] / 3.6e9,
                         "start_violations": r.summary.get("grid_start_ramp_violations", float("nan")),
                         "soft_start_deficit_MWh": r.summary.get("grid_soft_start_deficit_J", 0.0) / 3.6e9,
                         "ramp_down_filler_MWh": r.summary.get("grid_ramp_down_filler_J", 0.0) / 3.6e9, **row})
        print(f"[rank {rank}] {name}: mean wait {r.summary['mean_wait_s'] / 3600:.2f} h", flush=True)
    rows = gather_rows(comm, mine)
    if rows is None:
        return 0
    order = list(SCENARIOS)
    table = pd.DataFrame(rows)
    table["k"] = table["scenario"].map(order.index)
    table = table.sort_values(["k", "battery_MW"]).drop(columns="k").reset_index(drop=True)
    write_csv(table, out / "summary.csv")
    with pd.option_context("display.width", 250):
        print(table.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    for p in plot(table, out):
        print(f"figure  -> {p}")
    return 0


def plot(table: pd.DataFrame, out: Path) -> list[Path]:
    """Minutes over the limit and ramps against battery power per scenario, and a zoom on the 1 s facility power.

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

    fig, axes = plt.subplots(1, 3, figsize=(16, 4.5))
    for name, g in table.groupby("scenario", sort=False):
        axes[0].plot(g["battery_MW"], g["minutes_over_limit"], "o-", label=name)
        axes[1].plot(g["battery_MW"], g["ramp_1s_MW"], "o-", label=f"{name}: 1 s")
        axes[1].plot(g["battery_MW"], g["ramp_60s_MW"], "s--", color=axes[1].lines[-1].get_color(),
                     label=f"{name}: 1 min")
    axes[0].set_xlabel(f"battery power [MW] (energy = power x {BATTERY_HOURS:g} h)")
    axes[0].set_ylabel(f"minutes with grid ramp > {RAMP_MW_PER_MIN:g} MW/min")
    axes[0].set_yscale("symlog", linthresh=1)
    axes[0].legend(fontsize=8)
    axes[0].set_title("Ramp limit met vs battery size", fontsize=10)
    axes[1].set_xlabel("battery power [MW]")
    axes[1].set_ylabel("largest change of consecutive D-averages [MW]")
    axes[1].legend(fontsize=7, ncol=2)
    axes[1].set_title("Ramp statistic of the grid draw", fontsize=10)
    with h5py.File(out / "plain.h5") as f:
        g = f["grid/ramps"]
        fast = g["P_facility_W"][()]
        dt = float(g.attrs["resample_s"] * g.attrs["decimation"])
    with h5py.File(out / "floor.h5") as f:
        fast_fl = f["grid/ramps/P_facility_W"][()]
    k = int(np.argmax(np.abs(np.diff(fast))))  # the largest 1 s step
    lo, hi = max(0, k - 120), min(fast.size, k + 240)
    x = (np.arange(lo, hi) - k) * dt
    axes[2].plot(x, fast[lo:hi] / 1e6, lw=0.8, label="plain")
    kf = int(np.argmax(np.abs(np.diff(fast_fl))))
    lof, hif = max(0, kf - 120), min(fast_fl.size, kf + 240)
    axes[2].plot((np.arange(lof, hif) - kf) * dt, fast_fl[lof:hif] / 1e6, lw=0.8, label="GPU floor")
    axes[2].set_xlabel("s from the largest 1 s step of each run")
    axes[2].set_ylabel("facility power [MW] (1 s means)")
    axes[2].legend(fontsize=8)
    axes[2].set_title(f"Training oscillation ({PERIOD_S:g} s period) and a large start", fontsize=10)
    fig.suptitle("Ramps of a training-heavy synthetic Frontier workload: ramp limit on starts, GPU floor, battery")
    fig.tight_layout()
    return save_figure(fig, out, "ramps_battery")


if __name__ == "__main__":
    sys.exit(main())
