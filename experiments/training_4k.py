"""Study (#24, item 5): a 4,096-GPU training job on the one-type H100 cluster: goodput against the checkpoint
interval, the facility's power spectrum and 1 s ramps from the closed-form Fourier series, a GPU power floor.

Workload: Llama 3 70B pre-training (:data:`jobs.training.SHIPPED_MODELS`) on all 512 nodes of
``power/systems/h100_4k.toml`` (4,096 H100; TP 8, PP 4, DP 128, 32 micro-batches, interleaved 1F1B with 5 chunks,
ZeRO 1, selective recompute), ``TRAIN_H`` hours of useful training, failures at the Llama 3 rate (1.97e-5 per
GPU-hour), detection 120 s + restart 600 s, checkpoints of 14 B per parameter at 2 TB/s. The Frontier-like cooling
FMU and the Knoxville weather, ``WINDOW_DAYS`` days from January 1.

Sweep (spread over the MPI ranks, one run each): checkpoint interval in ``INTERVALS_S`` plus the Young/Daly
optimum. Per run: ETTR (useful / wall), failures, lost work, energy per useful iteration, PUE.

Spectrum (rank 0, closed form, no run needed): the iteration's node power is a periodic step function
(:class:`power.ramps.PhaseProfile`: compute, bubble, exposed DP communication); the job's rack-input swing is
``nodes x dP_rack/dP_dc x`` the node swing; its harmonics ``2 |c_k|`` at ``k / t_iter`` and its largest 1 s ramp
(:meth:`PhaseProfile.max_ramp_W`) come from the closed form, for the plain profile and with a GPU power floor
(bubble and communication phases held at ``FLOOR_UTIL`` of the GPU range; the energy it costs is reported).

Mitigations (one more run, ``young-daly+grid``: the Young/Daly scenario with a ``[grid.battery]``, so that the run
writes its resampled 1 s facility power ``/grid/ramps/P_facility_W``, which carries the job's iteration shape in
closed form): that series through :func:`power.battery.dispatch_ramp_limited` for battery ratings ``BATTERY_MW``
(``BATTERY_HOURS`` of energy, 85 % round trip) at the grid study's limit ``RAMP_MW_PER_MIN``
(docs/study_ramps_battery.md): 1 s / 60 s ramps of the grid draw, the amplitude at the iteration period, minutes
over the limit, battery losses; beside the closed-form GPU floor above.

Run::

    .venv/bin/mpiexec -n 2 .venv/bin/python -m mpi4py -m experiments.training_4k --out out/training_4k
"""

from __future__ import annotations

import sys
import time

import h5py
import numpy as np
import pandas as pd

from experiments.common import gather_dicts, gather_rows, my_share, save_figure, start_study
from jobs.training import TrainingConstants
from power import PowerChain, load_system, node_power_w
from power.battery import Battery
from power.ramps import PhaseProfile
from scheduler_sim.analysis.grid_dynamics import ramp_report
from scheduler_sim.app.config import RunConfig
from scheduler_sim.app.runner import run_one
from scheduler_sim.app.workloads import training_jobs

__all__ = ["INTERVALS_S", "BATTERY_MW", "config", "spectrum_rows", "battery_rows", "main"]

INTERVALS_S = (60.0, 300.0, 900.0, 1800.0, 3600.0, 7200.0)
TRAIN_H = 150.0
WINDOW_DAYS = 7.0
FLOOR_UTIL = 0.6
RAMP_MW_PER_MIN = 5.0
BATTERY_MW = (0.0, 0.5, 1.0, 2.0, 4.0)
BATTERY_HOURS = 0.25
LAYOUT = {"tp": 8, "pp": 4, "dp": 128, "micro_batches": 32, "schedule": "interleaved", "virtual_stages": 5,
          "zero_stage": 1, "recompute": "selective"}


def config(name: str, interval: float | str, grid: bool = False) -> RunConfig:
    """One scenario of the sweep.

    Parameters
    ----------
    name : str
        Run name.
    interval : float | str
        Checkpoint interval [s] or "young-daly".
    grid : bool
        Add a ``[grid.battery]`` (1 MW / 0.25 MWh), so that the run writes its 1 s facility power
        (``/grid/ramps``).

    Returns
    -------
    RunConfig
    """
    extra = {"grid": {"resample_s": 1.0, "battery": {"capacity_kWh": 250.0, "power_kW": 1000.0}}} if grid else {}
    return RunConfig.model_validate({
        "name": name, "system": "h100_4k", "seed": 0, **extra,
        "trace": {"enabled": False, "window_start_days": 0.0, "window_days": WINDOW_DAYS},
        "scheduler": {"policy": "fcfs"}, "output": {"progress": False},
        "workload": [{"family": "training", "name": "llama3-70b", "model": "llama-3-70b", "gpu": "h100-sxm",
                      "train_hours": TRAIN_H, "layout": LAYOUT, "checkpoint_interval_s": interval}]})


def spectrum_rows(cfg: RunConfig, n_harmonics: int = 8) -> tuple[list[dict], dict]:
    """Closed-form harmonics and 1 s ramps of the job's rack-input power, plain and with a GPU power floor.

    Parameters
    ----------
    cfg : RunConfig
        A scenario (its workload's layout and the system).
    n_harmonics : int
        Harmonics listed.

    Returns
    -------
    tuple
        ``(rows, summary)``: one row per (profile, harmonic) and per-profile ramp / energy figures.
    """
    system = load_system(cfg.system)
    tj = training_jobs(cfg.workload, system, cfg.seed)
    rep = tj.reports[0]
    prof = next(iter(tj.profiles.values()))
    chain = PowerChain(system)
    p0 = np.full(system.n_nodes, float(node_power_w(0.0, 0.0, system.node)))
    slope = float((chain.node_it_input_w(p0 + 1.0) - chain.node_it_input_w(p0)).mean())
    scale = rep["nodes"] * slope
    c = TrainingConstants()
    floor_W = float(node_power_w(system.default_cpu_util, FLOOR_UTIL, system.node))
    floored = PhaseProfile(prof.durations_s, (prof.power_W[0], max(prof.power_W[1], floor_W),
                                              max(prof.power_W[2], floor_W)))
    rows, summ = [], {}
    for label, p in (("plain", prof), (f"floor {FLOOR_UTIL:g}", floored)):
        for k in range(1, n_harmonics + 1):
            rows.append({"profile": label, "harmonic": k, "f_Hz": k / p.period_s,
                         "amplitude_MW": 2 * abs(p.fourier(k)) * scale / 1e6})
        summ[label] = {"period_s": p.period_s, "mean_MW": p.mean_W * scale / 1e6,
                       "swing_MW": (max(p.power_W) - min(p.power_W)) * scale / 1e6,
                       "ramp_1s_MW": p.max_ramp_W(1.0) * scale / 1e6,
                       "energy_cost_pct": 100 * (p.mean_W / prof.mean_W - 1)}
    summ["compute_util"] = c.util_compute
    return rows, summ


def battery_rows(fast_W: np.ndarray, dt_s: float, period_s: float) -> list[dict]:
    """Ramp figures of the facility's resampled power with each battery rating of ``BATTERY_MW``.

    Parameters
    ----------
    fast_W : np.ndarray
        Facility power bin means [W], shape (n,).
    dt_s : float
        Bin [s].
    period_s : float
        The job's iteration period [s] (passed to the ramp report).

    Returns
    -------
    list of dict
        One row per rating: battery MW / MWh, 1 s and 60 s ramps of the grid draw [MW], its lowest value [MW],
        minutes over ``RAMP_MW_PER_MIN``, battery losses [MWh] and the battery's energy-balance residual [J]. (The
        amplitude at the iteration period is not listed: its projection over the run came out ~0, likely because
        every checkpoint write and restart shifts the iteration phase; the closed-form lines are in :func:`spectrum_rows`.)
    """
    rows = []
    for mw in BATTERY_MW:
        bat = Battery(mw * 1e6 * BATTERY_HOURS * 3600, mw * 1e6) if mw > 0 else None
        rr = ramp_report(fast_W, dt_s, ramp_W_per_s=RAMP_MW_PER_MIN * 1e6 / 60.0, battery=bat,
                         periods_s=(period_s,))
        b = rr["battery"]
        rows.append({"battery_MW": mw, "battery_MWh": mw * BATTERY_HOURS,
                     "ramp_1s_MW": rr["ramp_grid_W"][1.0] / 1e6, "ramp_60s_MW": rr["ramp_grid_W"][60.0] / 1e6,
                     "grid_min_MW": float(np.min(rr["grid_W"])) / 1e6,
                     "minutes_over_limit": int(rr["violation_window_start_s"].size),
                     "battery_loss_MWh": b.E_loss_J / 3.6e9 if b is not None else 0.0,
                     "balance_residual_J": b.balance_residual_J() if b is not None else 0.0})
    return rows


def main(argv: list[str] | None = None) -> int:
    """Run the sweep and write ``goodput.csv``, ``spectrum.csv`` and ``training_4k.png/svg``.

    Parameters
    ----------
    argv : list[str] | None
        Command-line arguments (None: ``sys.argv``).

    Returns
    -------
    int
        Exit status.
    """
    out, comm, rank, size = start_study("4,096-GPU training job: goodput vs checkpoint interval, spectrum.",
                                        "out/training_4k", argv)
    scen = [(f"ckpt{int(x)}", x) for x in INTERVALS_S] + [("young-daly", "young-daly"),
                                                         ("young-daly+grid", "young-daly")]
    mine, mitig = [], {}
    system = load_system("h100_4k")
    for _, (name, iv) in my_share(scen, rank, size):
        cfg = config(name, iv, grid=name.endswith("+grid"))
        t0 = time.perf_counter()
        r = run_one(cfg, out / f"{name}.h5")
        wall = time.perf_counter() - t0
        rep = training_jobs(cfg.workload, system, cfg.seed).reports[0]
        if name.endswith("+grid"):  # the mitigations on the run's 1 s facility power
            with h5py.File(r.path) as f:
                g = f["grid/ramps"]
                fast = g["P_facility_W"][()]
                dt = float(g.attrs["resample_s"] * g.attrs["decimation"])
            mitig[name] = {"dt_s": dt, "rows": battery_rows(fast, dt, rep["t_iter_s"])}
            print(f"[rank {rank}] {name}: battery sweep on {fast.size:,} bins of {dt:g} s, {wall:.1f} s", flush=True)
            continue
        with h5py.File(r.path) as f:
            e_job = float(f["jobs/energy_it_J"][0])
            ts = f["timeseries/facility"]
            p_fac = ts["P_facility_W"][()]
            t_ret = ts["T_fac_ret"][()]
            p_mech = ts["P_mechanical_W"][()]
        mine.append({"scenario": name, "interval_s": rep["checkpoint_interval_s"], "young_daly_s": rep["young_daly_s"],
                     "ettr": rep["ettr"], "failures": rep["n_failures"], "lost_work_h": rep["lost_work_s"] / 3600,
                     "down_h": rep["down_s"] / 3600, "checkpoints": rep["n_checkpoints"],
                     "wall_h": rep["wall_s"] / 3600, "iterations": rep["iterations"],
                     "job_IT_MWh": e_job / 3.6e9, "kWh_per_iteration": e_job / 3.6e6 / rep["iterations"],
                     "PUE": r.summary.get("PUE", float("nan")),
                     "P_facility_min_MW": float(np.nanmin(p_fac)) / 1e6, "P_facility_max_MW": float(np.nanmax(p_fac)) / 1e6,
                     "P_mechanical_range_kW": float(np.nanmax(p_mech) - np.nanmin(p_mech)) / 1e3,
                     "T_fac_ret_range_K": float(np.nanmax(t_ret) - np.nanmin(t_ret)), "run_wall_s": wall})
        print(f"[rank {rank}] {name}: ETTR {rep['ettr']:.4f}, {rep['n_failures']} failures, PUE "
              f"{r.summary.get('PUE', float('nan')):.4f}, {wall:.1f} s", flush=True)
    rows = gather_rows(comm, mine)
    allmit = gather_dicts(comm, mitig)
    if rows is None:
        return 0
    table = pd.DataFrame(rows).sort_values("interval_s").reset_index(drop=True)
    table.to_csv(out / "goodput.csv", index=False)
    for name, m in allmit.items():
        bt = pd.DataFrame(m["rows"])
        bt.to_csv(out / "mitigation.csv", index=False)
        print(f"{name}: facility power at {m['dt_s']:g} s, limit {RAMP_MW_PER_MIN:g} MW/min, battery "
              f"{BATTERY_HOURS:g} h of energy")
        with pd.option_context("display.width", 250):
            print(bt.to_string(index=False, float_format=lambda x: f"{x:.4g}"))
    spec, summ = spectrum_rows(config("spectrum", 1800.0))
    sp = pd.DataFrame(spec)
    sp.to_csv(out / "spectrum.csv", index=False)
    with pd.option_context("display.width", 250):
        print(table.to_string(index=False, float_format=lambda x: f"{x:.4g}"))
        print(sp.to_string(index=False, float_format=lambda x: f"{x:.4g}"))
    for k, v in summ.items():
        if isinstance(v, dict):
            print(f"{k}: " + ", ".join(f"{a} {b:.4g}" for a, b in v.items()))
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    ax[0].semilogx(table["interval_s"], table["ettr"], "o-")
    yd = float(table["young_daly_s"].iloc[0])
    ax[0].axvline(yd, color="grey", ls="--", label=f"Young/Daly {yd:.0f} s")
    ax[0].set_xlabel("checkpoint interval [s]")
    ax[0].set_ylabel("effective training time ratio")
    ax[0].legend()
    for label, g in sp.groupby("profile", sort=False):
        ax[1].stem(g["f_Hz"], g["amplitude_MW"], label=label, linefmt="-" if label == "plain" else ":",
                   markerfmt="o" if label == "plain" else "s")
    ax[1].axvspan(0.1, 20, color="orange", alpha=0.08, label="0.1-20 Hz utility band")
    ax[1].set_xscale("log")
    ax[1].set_xlabel("frequency [Hz]")
    ax[1].set_ylabel("harmonic amplitude, rack input [MW]")
    ax[1].legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, out, "training_4k")
    return 0


if __name__ == "__main__":
    sys.exit(main())
