"""Figures of one run and of a sweep (matplotlib, Agg). SI in, plot units out: MW / kW, MWh, degC, hours, dates.

Every function takes the data it draws and returns a :class:`matplotlib.figure.Figure`; long series are averaged
into at most ``MAX_BINS`` bins (energy-preserving means, PUE as a ratio of binned energies, never a mean of
ratios).
"""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.dates as mdates  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

__all__ = ["MAX_BINS", "TimeAxis", "power_stack", "pue_weather", "cdu_heatmap", "utilisation_queue",
           "occupancy_gantt", "wait_vs_size", "energy_breakdown", "pareto"]

#: Largest number of time bins drawn.
MAX_BINS = 1500
K0 = 273.15

#: Component -> (label, colour) for the stacked facility power.
COMPONENTS = {
    "P_node_dc_W": ("node DC (compute)", "#4C72B0"),
    "P_rack_overhead_W": ("rack overhead (switches, controllers)", "#8C8C8C"),
    "P_sivoc_loss_W": ("VRM / SIVOC loss", "#DD8452"),
    "P_rectifier_loss_W": ("rectifier loss", "#C44E52"),
    "P_cdu_pump_W": ("CDU pumps", "#55A868"),
    "P_facility_pump_W": ("facility pumps", "#64B5CD"),
    "P_tower_fan_W": ("cooling-tower fans", "#8172B3"),
    "P_chiller_W": ("chiller", "#937860"),
}


class TimeAxis:
    """Simulation times [s] -> plot x values: dates (UTC) when the trace has an origin, else days.

    Parameters
    ----------
    time_s : ndarray, shape (n,)
        Interval starts [s].
    origin_unix_s : float
        Unix time of simulation time 0 (NaN: no calendar).
    """

    def __init__(self, time_s: np.ndarray, origin_unix_s: float) -> None:
        self.time_s = np.asarray(time_s, dtype=float)
        self.dt = float(self.time_s[1] - self.time_s[0]) if self.time_s.size > 1 else 60.0
        self.dated = bool(np.isfinite(origin_unix_s))
        self.origin = float(origin_unix_s)
        need = max(1, math.ceil(self.time_s.size / MAX_BINS))  # intervals per bin, rounded up to a readable width
        nice = [w for w in (60, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800)
                if w % self.dt == 0 and w / self.dt >= need]
        self.per = int(nice[0] / self.dt) if nice else need

    def x(self, t_s: np.ndarray) -> np.ndarray:
        """Plot coordinate of times ``t_s`` [s]."""
        t_s = np.asarray(t_s, dtype=float)
        if self.dated:
            return mdates.date2num(pd.to_datetime(self.origin + t_s, unit="s").to_pydatetime())
        return t_s / 86400.0

    def label(self) -> str:
        """Axis label."""
        return "date (UTC)" if self.dated else "days since trace origin"

    def format(self, ax) -> None:
        """Date ticks (or day numbers) on ``ax``."""
        ax.set_xlabel(self.label())
        if self.dated:
            loc = mdates.AutoDateLocator(minticks=4, maxticks=9)
            ax.xaxis.set_major_locator(loc)
            ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(loc))

    def binned(self, y: np.ndarray, how: str = "mean") -> np.ndarray:
        """Average (or ``max``) ``y`` (n, ...) over bins of ``per`` intervals."""
        y = np.asarray(y, dtype=float)
        n = y.shape[0]
        nb = math.ceil(n / self.per)
        pad = nb * self.per - n
        if pad:
            y = np.concatenate([y, np.repeat(y[-1:], pad, axis=0)])
        y = y.reshape((nb, self.per) + y.shape[1:])
        return y.max(axis=1) if how == "max" else y.mean(axis=1)

    def bin_x(self) -> np.ndarray:
        """Plot x of bin starts, shape (n_bins + 1,) (edges)."""
        nb = math.ceil(self.time_s.size / self.per)
        return self.x(self.time_s[0] + np.arange(nb + 1) * self.per * self.dt)

    def bin_width_text(self) -> str:
        """Human-readable bin width."""
        s = self.per * self.dt
        return f"{s / 3600:g} h" if s >= 3600 else f"{s / 60:g} min"


def _step(ax, xe, y, **kw):
    kw.setdefault("baseline", 0 if kw.get("fill") else None)
    ax.stairs(y, xe, **kw)


def power_stack(ts: dict[str, np.ndarray], tax: TimeAxis):
    """Facility power stacked by component: all of it (MW) and the losses + cooling alone (kW)."""
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(11, 6.6), sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    xe = tax.bin_x()
    x = np.repeat(xe, 2)[1:-1]
    names = [k for k in COMPONENTS if k in ts and np.any(np.asarray(ts[k]) != 0)]
    for ax, keys, scale, unit in ((a1, names, 1e-6, "MW"),
                                  (a2, [k for k in names if k not in ("P_node_dc_W", "P_rack_overhead_W")], 1e-3, "kW")):
        base = np.zeros(xe.size - 1)
        for k in keys:
            y = tax.binned(ts[k]) * scale
            lab, col = COMPONENTS[k]
            ax.fill_between(x, np.repeat(base, 2), np.repeat(base + y, 2), color=col, label=lab, lw=0)
            base = base + y
        ax.set_ylabel(f"power [{unit}]")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    a1.set_title(f"Facility power by component (stacked; {tax.bin_width_text()} averages); total = facility power")
    a2.set_title("Conversion losses and cooling only (stacked)", fontsize=10)
    a1.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9, frameon=False)
    a2.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9, frameon=False)
    tax.format(a2)
    fig.tight_layout()
    return fig


def pue_weather(ts: dict[str, np.ndarray], T_wb_K: np.ndarray | None, tax: TimeAxis, pue_run: float):
    """PUE per bin (energy ratio) and cumulative, with the outdoor wet-bulb temperature (degC)."""
    fig, ax = plt.subplots(figsize=(11, 4.2))
    xe = tax.bin_x()
    fac = tax.binned(ts["P_facility_W"])
    it = tax.binned(ts["P_it_W"])
    with np.errstate(invalid="ignore", divide="ignore"):
        pue = fac / it
    _step(ax, xe, pue, color="#C44E52", lw=1.2, label=f"PUE per {tax.bin_width_text()} (energy ratio)")
    cum = tax.binned(ts["PUE_cumulative"], how="mean")
    ax.plot(0.5 * (xe[1:] + xe[:-1]), cum, color="k", lw=1.5, ls="--", label="cumulative PUE since run start")
    ax.axhline(pue_run, color="grey", lw=0.8, ls=":", label=f"run PUE {pue_run:.4f}")
    ax.set_ylabel("PUE = facility energy / IT energy")
    fin = pue[np.isfinite(pue)]
    if fin.size:
        lo, hi = np.percentile(fin, [0.5, 99.5])
        pad = max(hi - lo, 1e-4) * 0.25
        ax.set_ylim(max(1.0, lo - pad), hi + pad * 2.5)
    ax.grid(alpha=0.3)
    lines, labels = ax.get_legend_handles_labels()
    if T_wb_K is not None:
        a2 = ax.twinx()
        _step(a2, xe, tax.binned(T_wb_K) - K0, color="#4C72B0", lw=0.9, alpha=0.8, label="outdoor wet-bulb")
        a2.set_ylabel("wet-bulb temperature [degC]", color="#4C72B0")
        a2.tick_params(axis="y", colors="#4C72B0")
        l2, lb2 = a2.get_legend_handles_labels()
        lines, labels = lines + l2, labels + lb2
    ax.legend(lines, labels, loc="upper left", fontsize=9, ncol=2)
    ax.set_title("PUE over time, with the weather the cooling towers see")
    tax.format(ax)
    fig.tight_layout()
    return fig


def cdu_heatmap(Q_W: np.ndarray, T_sup_K: np.ndarray | None, tax: TimeAxis, T_limit_K: float):
    """Heat delivered to each CDU (kW) and CDU supply temperature (degC) as time x CDU maps."""
    n_p = 2 if T_sup_K is not None else 1
    fig, axes = plt.subplots(n_p, 1, figsize=(11, 2.2 + 1.9 * n_p), sharex=True, squeeze=False)
    xe = tax.bin_x()
    n_cdu = Q_W.shape[1]
    ext = (xe[0], xe[-1], n_cdu - 0.5, -0.5)
    im = axes[0, 0].imshow(tax.binned(Q_W).T / 1e3, aspect="auto", extent=ext, cmap="viridis", interpolation="nearest")
    fig.colorbar(im, ax=axes[0, 0], label="heat to CDU [kW]", pad=0.01)
    axes[0, 0].set_title(f"Heat delivered by the racks to each CDU ({tax.bin_width_text()} averages)")
    if T_sup_K is not None:
        Tb = tax.binned(T_sup_K, how="max").T - K0
        im2 = axes[1, 0].imshow(Tb, aspect="auto", extent=ext, cmap="inferno", interpolation="nearest")
        cb = fig.colorbar(im2, ax=axes[1, 0], label="supply temperature [degC]", pad=0.01)
        if Tb.min() <= T_limit_K - K0 <= Tb.max():
            cb.ax.axhline(T_limit_K - K0, color="cyan", lw=2)
        axes[1, 0].set_title(f"CDU supply temperature to the racks (bin maximum; limit {T_limit_K - K0:.1f} degC)")
    for ax in axes[:, 0]:
        ax.set_ylabel("CDU")
        ax.set_yticks(range(n_cdu))
    tax.format(axes[-1, 0])
    fig.tight_layout()
    return fig


def utilisation_queue(fac: dict[str, np.ndarray], n_nodes: int, tax: TimeAxis):
    """Node utilisation (%) and queue length (jobs) over time."""
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(11, 5), sharex=True)
    xe = tax.bin_x()
    _step(a1, xe, tax.binned(fac["busy_nodes"]) / n_nodes * 100, color="#4C72B0", fill=True, alpha=0.6)
    a1.set_ylabel("utilisation [%]\n(busy nodes / all nodes)")
    a1.set_ylim(0, 100)
    a1.grid(alpha=0.3)
    a1.set_title(f"Utilisation and queue ({tax.bin_width_text()} averages; {n_nodes:,} nodes)")
    _step(a2, xe, tax.binned(fac["queued_jobs"]), color="#DD8452", label="queued jobs")
    _step(a2, xe, tax.binned(fac["running_jobs"]), color="#55A868", label="running jobs")
    a2.set_ylabel("jobs")
    a2.set_ylim(bottom=0)
    a2.grid(alpha=0.3)
    a2.legend(loc="upper left", fontsize=9)
    tax.format(a2)
    fig.tight_layout()
    return fig


def _first_fit(starts, ends, sizes, n_nodes):
    """Visual node ranges for jobs in start order: lowest free contiguous ranges (split when fragmented)."""
    free = [(0, n_nodes)]  # sorted list of free [lo, hi)
    active: list[tuple[float, list[tuple[int, int]]]] = []
    out = []
    for s, e, k in zip(starts, ends, sizes):
        still = []
        for (end, segs) in active:  # release jobs ended by s
            if end <= s:
                free.extend(segs)
            else:
                still.append((end, segs))
        active = still
        free.sort()
        merged = []
        for lo, hi in free:
            if merged and merged[-1][1] == lo:
                merged[-1] = (merged[-1][0], hi)
            else:
                merged.append((lo, hi))
        free = merged
        need, segs, rest = int(k), [], []
        fit = next((i for i, (lo, hi) in enumerate(free) if hi - lo >= need), None)
        if fit is not None:
            lo, hi = free[fit]
            segs = [(lo, lo + need)]
            free = free[:fit] + ([(lo + need, hi)] if lo + need < hi else []) + free[fit + 1:]
        else:
            for lo, hi in free:
                if need <= 0:
                    rest.append((lo, hi))
                    continue
                take = min(need, hi - lo)
                segs.append((lo, lo + take))
                if lo + take < hi:
                    rest.append((lo + take, hi))
                need -= take
            free = rest
        active.append((e, segs))
        out.append(segs)
    return out


def occupancy_gantt(jobs: pd.DataFrame, n_nodes: int, t0_s: float, t1_s: float, tax: TimeAxis,
                    pue_eff: np.ndarray | None = None):
    """Node occupancy in ``[t0_s, t1_s)`` drawn as job blocks (height = nodes), packed by start time.

    The run file holds each job's node count, not its node ids: blocks are placed first-fit in start order (lowest
    free node range; split when the free nodes are fragmented), so the picture is exact in the number of busy nodes
    at every instant but not in which nodes.
    """
    st = jobs["sim_start_s"].to_numpy(float)
    en = jobs["sim_end_s"].to_numpy(float)
    run_from = np.maximum(st, tax.time_s[0])
    sel = np.isfinite(st) & (en > t0_s) & (run_from < t1_s) & (en > run_from)
    order = np.flatnonzero(sel)
    order = order[np.lexsort((order, run_from[order]))]
    # pack every job that overlaps the window in start order, including those started before it
    segs = _first_fit(run_from[order], en[order], jobs["nodes"].to_numpy()[order], n_nodes)
    fig, ax = plt.subplots(figsize=(11, 5))
    cmap = plt.get_cmap("tab20")
    for i, (j, sg) in enumerate(zip(order, segs)):
        a, b = tax.x(np.array([max(run_from[j], t0_s), min(en[j], t1_s)]))
        for lo, hi in sg:
            ax.add_patch(plt.Rectangle((a, lo), b - a, hi - lo, facecolor=cmap(i % 20), edgecolor="white", lw=0.3))
        if sg and (hi := sg[0][1] - sg[0][0]) > n_nodes * 0.06 and (b - a) > (tax.x(np.array([t1_s]))[0] - tax.x(np.array([t0_s]))[0]) * 0.08:
            ax.text(a + (b - a) / 2, sg[0][0] + hi / 2, f"{int(jobs['job_id'].iloc[j])}", ha="center", va="center",
                    fontsize=7, color="black")
    xa, xb = tax.x(np.array([t0_s, t1_s]))
    ax.set_xlim(xa, xb)
    ax.set_ylim(0, n_nodes)
    ax.set_ylabel("nodes (visual packing by start time, not node ids)")
    ax.set_title(f"Node occupancy by job, {(t1_s - t0_s) / 86400:g} days ({len(order)} jobs; label = job id; "
                 "white = idle)")
    tax.format(ax)
    fig.tight_layout()
    return fig


def wait_vs_size(jobs: pd.DataFrame):
    """Wait time (h) against job size (nodes), coloured by run time (h); prefilled jobs excluded."""
    j = jobs.loc[~jobs["prefilled"].to_numpy(bool) & jobs["wait_s"].notna()]
    fig, ax = plt.subplots(figsize=(8, 5))
    wait_h = j["wait_s"].to_numpy(float) / 3600
    rng = np.random.default_rng(0)
    x = j["nodes"].to_numpy(float) * np.exp(rng.normal(0, 0.03, len(j)))  # jitter: many jobs share a size
    sc = ax.scatter(x, wait_h, c=j["run_s"].to_numpy(float) / 3600, s=9, cmap="viridis", alpha=0.7,
                    norm=matplotlib.colors.LogNorm(vmin=max(1 / 60, np.nanmin(j["run_s"]) / 3600 + 1e-9)))
    fig.colorbar(sc, ax=ax, label="run time [h] (log)")
    ax.set_xscale("log")
    ax.set_yscale("symlog", linthresh=1.0)
    nodes = j["nodes"].to_numpy(float)
    if len(j):
        edges = 2.0 ** np.arange(np.floor(np.log2(nodes.min())), np.ceil(np.log2(nodes.max())) + 1.001)
        which = np.digitize(nodes, edges) - 1
        med = np.array([np.median(wait_h[which == i]) if np.any(which == i) else np.nan for i in range(edges.size - 1)])
        ax.stairs(med, edges, color="k", lw=2, baseline=None, label="median wait per size class (powers of 2)")
    ax.set_xlabel("job size [nodes] (log; jittered)")
    ax.set_ylabel("wait time [h] (linear below 1 h, log above)")
    ax.set_title(f"Wait time vs job size ({len(j):,} jobs submitted in the window)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(loc="upper left", fontsize=9)
    fig.tight_layout()
    return fig


def energy_breakdown(att_totals: dict[str, float], job_pue: np.ndarray, job_E_it: np.ndarray,
                     pseudo_pue: float, pue_run: float):
    """Run energy by component (MWh) and the distribution of the jobs' effective PUE (weighted by IT energy)."""
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 4.6), gridspec_kw={"width_ratios": [1.2, 1]})
    keys = [("E_node_dc_J", "P_node_dc_W"), ("E_rack_overhead_J", "P_rack_overhead_W"),
            ("E_sivoc_loss_J", "P_sivoc_loss_W"), ("E_rectifier_loss_J", "P_rectifier_loss_W"),
            ("E_cdu_pump_J", "P_cdu_pump_W"), ("E_facility_pump_J", "P_facility_pump_W"),
            ("E_tower_fan_J", "P_tower_fan_W"), ("E_chiller_J", "P_chiller_W")]
    keys = [(e, p) for e, p in keys if att_totals.get(e, 0.0) > 0]
    vals = np.array([att_totals[e] for e, _ in keys]) / 3.6e9
    tot = att_totals["E_facility_J"] / 3.6e9
    y = np.arange(len(keys))[::-1]
    a1.barh(y, vals, color=[COMPONENTS[p][1] for _, p in keys])
    a1.set_xscale("log")
    for yi, v in zip(y, vals):
        a1.text(v * 1.08, yi, f"{v:,.1f} MWh ({v / tot * 100:.2f} %)", va="center", fontsize=9)
    a1.set_yticks(y, [COMPONENTS[p][0] for _, p in keys])
    a1.set_xlim(vals.min() * 0.5, vals.max() * 12)
    a1.set_xlabel("energy over the run [MWh] (log scale)")
    a1.set_title(f"Where the {tot:,.1f} MWh of facility energy went")
    ok = np.isfinite(job_pue) & (job_E_it > 0)
    if ok.any():
        a2.hist(job_pue[ok], bins=40, weights=job_E_it[ok] / 3.6e9, color="#4C72B0", alpha=0.8)
    a2.axvline(pue_run, color="k", ls="--", label=f"run PUE {pue_run:.4f}")
    if np.isfinite(pseudo_pue) and pseudo_pue > 0:
        a2.axvline(pseudo_pue, color="#C44E52", ls=":", label=f"idle nodes {pseudo_pue:.4f}")
    a2.set_xlabel("effective PUE of the job = (IT + attributed cooling) / IT")
    a2.set_ylabel("IT energy of the jobs [MWh]")
    a2.set_title("Effective PUE of the jobs\n(cooling attributed by heat share)", fontsize=11)
    a2.legend(fontsize=9)
    a2.grid(alpha=0.3)
    fig.tight_layout()
    return fig


#: Metric -> (axis label, scale) for sweep plots.
METRIC_UNITS = {
    "_s": ("h", 1 / 3600), "_J": ("MWh", 1 / 3.6e9), "_W": ("MW", 1e-6),
}


def _metric_label(m: str) -> tuple[str, float]:
    for suf, (unit, sc) in METRIC_UNITS.items():
        if m.endswith(suf):
            return f"{m[: -len(suf)].replace('_', ' ')} [{unit}]", sc
    return m.replace("_", " "), 1.0


def pareto(names: list[str], x: np.ndarray, y: np.ndarray, mx: str, my: str):
    """Scenarios in the (mx, my) plane, both to be minimised; the non-dominated ones joined as the Pareto front."""
    lx, sx = _metric_label(mx)
    ly, sy = _metric_label(my)
    X, Y = np.asarray(x, float) * sx, np.asarray(y, float) * sy
    ok = np.isfinite(X) & np.isfinite(Y)
    front = np.array([ok[i] and not np.any(ok & (X <= X[i]) & (Y <= Y[i]) & ((X < X[i]) | (Y < Y[i])))
                      for i in range(len(X))], dtype=bool)
    fig, ax = plt.subplots(figsize=(7.5, 5))
    ax.scatter(X[ok & ~front], Y[ok & ~front], c="#8C8C8C", s=40, label="dominated")
    f = np.flatnonzero(front)
    f = f[np.argsort(X[f])]
    ax.plot(X[f], Y[f], "o-", color="#C44E52", ms=7, label="Pareto front (lower is better on both)")
    for i in np.flatnonzero(ok):
        ax.annotate(names[i], (X[i], Y[i]), textcoords="offset points", xytext=(5, 4), fontsize=8)
    ax.set_xlabel(lx)
    ax.set_ylabel(ly)
    ax.set_title(f"Scenarios: {ly.split(' [')[0]} vs {lx.split(' [')[0]}")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=9)
    fig.tight_layout()
    return fig
