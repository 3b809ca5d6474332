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
from matplotlib.collections import PolyCollection  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from .catalogue import column_unit  # noqa: E402

__all__ = ["MAX_BINS", "TimeAxis", "power_stack", "pue_weather", "cdu_heatmap", "utilisation_queue",
           "occupancy_allocations", "occupancy_packed", "job_colours", "wait_vs_size", "energy_breakdown", "pareto"]

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
    "P_tower_pump_W": ("tower-water pumps", "#2F4B7C"),
    "P_tower_fan_W": ("cooling-tower fans", "#8172B3"),
    "P_chiller_W": ("chiller", "#937860"),
    "P_air_fan_W": ("air-handler / CRAH fans", "#DA8BC3"),
    "P_air_chiller_W": ("chilled water for air", "#A0522D"),
    "P_transformer_loss_W": ("transformer loss", "#CCB974"),
    "P_switchgear_loss_W": ("switchgear / busway loss", "#B8860B"),
    "P_ups_loss_W": ("UPS loss", "#17BECF"),
    "P_pdu_loss_W": ("PDU loss", "#7F7F7F"),
    "P_lighting_W": ("lighting and building controls", "#BCBD22"),
}


class TimeAxis:
    """Simulation times [s] -> plot x values: dates (UTC) when the trace has an origin, else days.

    Parameters
    ----------
    time_s : np.ndarray
        Shape (n,).
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
        """Date ticks (or day numbers) on ``ax``, chosen from the shown span only.

        Every panel and every figure of a report uses the same rule, so ticks agree between them: spans over
        120 days tick months (``Jan``), over 2 days tick days (``Jul 02``, every n-th day for up to ~9 ticks),
        spans over 9 hours tick hours (``Jul 02 06:00``), shorter spans tick minutes (``18:30``, the start date in
        the axis label). The year is in the axis label.
        """
        if not self.dated:
            ax.set_xlabel(self.label())
            return
        lo, hi = ax.get_xlim()
        span = hi - lo  # days (matplotlib date numbers)
        if span > 120:
            loc, fmt = mdates.MonthLocator(interval=max(1, math.ceil(span / 30.4 / 9))), "%b"
        elif span > 2:
            loc, fmt = mdates.DayLocator(interval=max(1, math.ceil(span / 9))), "%b %d"
        elif span * 24 > 9:
            step_h = next(h for h in (2, 3, 6, 12, 24) if span * 24 / h <= 9)
            loc, fmt = mdates.HourLocator(interval=step_h), "%b %d %H:%M"
        else:  # up to 9 hours (a serving hour): minutes, so a short run still gets ~5-9 ticks
            step_m = next((m for m in (1, 2, 5, 10, 15, 20, 30, 60) if span * 1440 / m <= 9), 60)
            loc = (mdates.MinuteLocator(byminute=range(0, 60, step_m)) if step_m < 60 else
                   mdates.HourLocator(interval=1))
            fmt = "%H:%M"
        ax.xaxis.set_major_locator(loc)
        ax.xaxis.set_major_formatter(mdates.DateFormatter(fmt))
        start = mdates.num2date(max(lo, float(self.x(self.time_s[:1])[0]) if self.time_s.size else lo))
        ax.set_xlabel(f"time (UTC), from {start:%Y-%m-%d %H:%M}" if fmt == "%H:%M" else f"date (UTC), {start.year}")

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
    a2.set_title("Conversion losses, cooling and facility overheads only (stacked)", fontsize=10)
    a1.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9, frameon=False)
    a2.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9, frameon=False)
    tax.format(a2)
    fig.tight_layout()
    return fig


def pue_weather(ts: dict[str, np.ndarray], T_wb_K: np.ndarray | None, tax: TimeAxis, pue_run: float):
    """PUE per bin (energy ratio) and cumulative, with the outdoor wet-bulb temperature (degC)."""
    fig, ax = plt.subplots(figsize=(11, 4.2))
    xe = tax.bin_x()
    if not np.isfinite(pue_run) and not np.any(np.isfinite(np.asarray(ts.get("PUE_cumulative", [np.nan]),
                                                                        dtype=float))):
        ax.text(0.5, 0.5, "PUE n/a: no cooling plant was modelled in this run (cooling off),\nso the facility "
                          "overheads and PUE are not defined", ha="center", va="center", transform=ax.transAxes,
                fontsize=12)
        ax.set_yticks([])
        ax.set_title("PUE over time: not defined for this run")
        ax.set_xlim(xe[0], xe[-1])
        tax.format(ax)
        fig.tight_layout()
        return fig
    fac = tax.binned(ts["P_facility_W"])
    it = tax.binned(ts["P_it_W"])
    with np.errstate(invalid="ignore", divide="ignore"):
        pue = fac / it
    _step(ax, xe, pue, color="#C44E52", lw=1.2, label=f"PUE per {tax.bin_width_text()} (energy ratio)")
    cum = tax.binned(ts["PUE_cumulative"], how="mean")
    ax.plot(0.5 * (xe[1:] + xe[:-1]), cum, color="k", lw=1.5, ls="--", label="cumulative PUE since run start")
    ax.axhline(pue_run, color="grey", lw=0.8, ls=":", label=f"run PUE {pue_run:.4f}")
    ax.set_ylabel("PUE = facility energy / IT energy [-]")
    ax.ticklabel_format(axis="y", useOffset=False)  # a short run's PUE spans 1e-4: no "+1.068" offset
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


def cdu_heatmap(Q_W: np.ndarray, T_sup_K: np.ndarray | None, tax: TimeAxis, T_limit_K: float,
                margin_K: float = 0.5, w_class: str = ""):
    """Heat delivered to each CDU (kW) and, as time x CDU maps, the share of each time bin the CDU supply spends
    above the plant's limit + margin (%), so a run a few intervals over its set point does not look all over it.

    Parameters
    ----------
    Q_W : np.ndarray
        Heat to each CDU [W], shape (n_intervals, n_cdus).
    T_sup_K : np.ndarray | None
        Shape (n_intervals, n_cdus): CDU supply temperature, interval averages [K]; None: the heat map alone.
    tax : TimeAxis
        The time axis.
    T_limit_K : float
        Supply limit: the plant's set point [K] (scheduler_sim.analysis.limits).
    margin_K : float
        An interval counts as above only beyond ``T_limit_K + margin_K``.
    w_class : str
        ASHRAE class of the limit, for the title.

    Returns
    -------
    matplotlib.figure.Figure
        The figure.
    """
    from ..limits import hours_above

    n_p = 2 if T_sup_K is not None else 1
    fig, axes = plt.subplots(n_p, 1, figsize=(11, 2.2 + 1.9 * n_p), sharex=True, squeeze=False)
    xe = tax.bin_x()
    n_cdu = Q_W.shape[1]
    ext = (xe[0], xe[-1], n_cdu - 0.5, -0.5)
    im = axes[0, 0].imshow(tax.binned(Q_W).T / 1e3, aspect="auto", extent=ext, cmap="viridis", interpolation="nearest")
    fig.colorbar(im, ax=axes[0, 0], label="heat to CDU [kW]", pad=0.01)
    axes[0, 0].set_title(f"Heat delivered by the racks to each CDU ({tax.bin_width_text()} averages)")
    if T_sup_K is not None:
        T = np.asarray(T_sup_K, dtype=float)
        above = (T > T_limit_K + margin_K).astype(float)
        _, any_h = hours_above(T, T_limit_K, margin_K, tax.dt)
        im2 = axes[1, 0].imshow(100 * tax.binned(above).T, aspect="auto", extent=ext, cmap="Reds", vmin=0, vmax=100,
                                interpolation="nearest")
        fig.colorbar(im2, ax=axes[1, 0], label="time above limit [%]", pad=0.01)
        cls = f" ({w_class})" if w_class else ""
        axes[1, 0].set_title(f"CDU supply above {T_limit_K - K0:.1f} degC{cls} + {margin_K:g} K: {any_h:.2f} h "
                             f"(any CDU); peak {np.nanmax(T) - K0:.2f} degC")
    for ax in axes[:, 0]:
        ax.set_ylabel("CDU")
        # every CDU labelled while they fit (~8 per panel); then every n-th (25 CDUs on the Frontier-like system)
        step = max(1, math.ceil(n_cdu / 8))
        ax.set_yticks(range(0, n_cdu, step))
    tax.format(axes[-1, 0])
    fig.tight_layout()
    return fig


def utilisation_queue(fac: dict[str, np.ndarray], n_nodes: int, tax: TimeAxis, serving_nodes: int = 0):
    """Node utilisation (%) and queue length (jobs) over time.

    Parameters
    ----------
    fac : dict[str, np.ndarray]
        Each shape (n,): ``/timeseries/facility``: ``busy_nodes``, ``queued_jobs``, ``running_jobs``.
    n_nodes : int
        Nodes of the system.
    tax : TimeAxis
        The time axis.
    serving_nodes : int
        Nodes reserved for a serving partition: drawn busy, stacked on the batch nodes (``busy_nodes`` counts
        batch jobs only).

    Returns
    -------
    matplotlib.figure.Figure
        The figure.
    """
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(11, 5), sharex=True)
    xe = tax.bin_x()
    batch = tax.binned(fac["busy_nodes"]) / n_nodes * 100
    _step(a1, xe, batch, color="#4C72B0", fill=True, alpha=0.6, label="batch jobs")
    if serving_nodes:
        serv = np.full(batch.size, serving_nodes / n_nodes * 100)
        a1.stairs(batch + serv, xe, baseline=batch, fill=True, color="#55A868", alpha=0.6,
                  label=f"serving partition ({serving_nodes:,} nodes)")
        a1.legend(loc="upper left", fontsize=9)
    top = float(np.nanmax(batch + (serving_nodes / n_nodes * 100 if serving_nodes else 0.0))) if batch.size else 0.0
    a1.set_ylabel("utilisation [%]\n(busy nodes / all nodes)")
    # a small partition on a large system (2 of 9,472 nodes) would be invisible on 0-100 %: zoom, and say so
    a1.set_ylim(0, 100 if top > 20 or top == 0 else top * 1.3)
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


def job_colours(job_ids: np.ndarray) -> np.ndarray:
    """A stable RGBA colour per job id, shape (n, 4): the same job has the same colour in every figure and window.

    Hue, saturation and value from a splitmix64 hash of the id (a plain golden-ratio hue gives near-equal hues to
    ids that differ by a Fibonacci number, e.g. 13 apart, which are often neighbours in the occupancy view).
    """
    with np.errstate(over="ignore"):
        z = np.asarray(job_ids).astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    hue = (z >> np.uint64(40)).astype(float) / 2.0 ** 24
    sat = 0.3 + 0.45 * (z & np.uint64(0xFF)).astype(float) / 255.0
    val = 0.62 + 0.33 * ((z >> np.uint64(8)) & np.uint64(0xFF)).astype(float) / 255.0
    rgb = matplotlib.colors.hsv_to_rgb(np.column_stack([hue, sat, val]))
    return np.column_stack([rgb, np.ones(len(rgb))])


def _blocks(labels: np.ndarray) -> list[tuple[int, int, int]]:
    """Runs of equal values in ``labels``: (value, first index, end index)."""
    labels = np.asarray(labels)
    if labels.size == 0:
        return []
    cut = np.concatenate(([0], np.flatnonzero(np.diff(labels)) + 1, [labels.size]))
    return [(int(labels[a]), int(a), int(b)) for a, b in zip(cut[:-1], cut[1:])]


def _allocation_facts(jobs: pd.DataFrame | None, jid: np.ndarray, en: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per allocation run: the job's wait before it first started [h] (NaN: unknown or prefilled), and whether the
    run is an attempt ended by a failure (an earlier attempt of a requeued job, or killed by a node going down).
    """
    wait_h = np.full(jid.size, np.nan)
    failed = np.zeros(jid.size, dtype=bool)
    if jobs is None or not len(jobs):
        return wait_h, failed
    jj = jobs.set_index("job_id")
    idx = jj.index.get_indexer(jid)
    ok = idx >= 0
    if "wait_s" in jj:
        w = jj["wait_s"].to_numpy(float)
        if "prefilled" in jj:
            w = np.where(jj["prefilled"].to_numpy(bool), np.nan, w)
        wait_h[ok] = w[idx[ok]] / 3600.0
    if "sim_end_s" in jj:
        final_end = jj["sim_end_s"].to_numpy(float)[idx[ok]]
        outcome = jj["outcome"].to_numpy(int)[idx[ok]] if "outcome" in jj else np.zeros(ok.sum(), int)
        failed[ok] = (en[ok] < final_end - 1e-6) | (outcome == 3)
    return wait_h, failed


def _allocation_faces(color_by: str, jid: np.ndarray, wait_h: np.ndarray):
    """Face colours (n, 4) of the allocation rectangles and the colour scale (None when coloured by job)."""
    if color_by == "job":
        return job_colours(jid), None
    cmap = plt.get_cmap("viridis")
    fin = wait_h[np.isfinite(wait_h)]
    vmax = max(1.0, float(np.nanmax(fin)) if fin.size else 1.0)
    norm = matplotlib.colors.LogNorm(vmin=1 / 60, vmax=vmax)
    face = cmap(norm(np.clip(np.nan_to_num(wait_h, nan=1 / 60), 1 / 60, None)))
    face[~np.isfinite(wait_h)] = matplotlib.colors.to_rgba("#C8C8C8")
    return face, matplotlib.cm.ScalarMappable(norm=norm, cmap=cmap)


def occupancy_allocations(alloc: dict[str, np.ndarray], n_nodes: int, t0_s: float, t1_s: float, tax: TimeAxis, *,
                          jobs: pd.DataFrame | None = None, node_rack: np.ndarray | None = None,
                          node_cdu: np.ndarray | None = None, color_by: str = "job",
                          run_span_s: tuple[float, float] | None = None, down_nodes_max: float = 0.0) -> plt.Figure:
    """Node occupancy in ``[t0_s, t1_s)`` from the run file's ``/allocations``: node index x time.

    One rectangle per allocation run (``job_id``, ``start_s``, ``end_s``, ``node_first``, ``node_count``), clipped
    to the window: node ``i`` covers ``[i, i + 1)`` on the y axis (node 0 at the top), the x extent is the run's
    time span. The rectangles are one :class:`~matplotlib.collections.PolyCollection` with gid ``"allocations"``
    (its ``job_ids`` attribute holds the job of each rectangle), so the drawing can be checked from the figure data.

    Parameters
    ----------
    alloc : dict[str, np.ndarray]
        The ``/allocations`` columns.
    n_nodes : int
        Nodes of the system (y range).
    t0_s : float
        Start of the window [s, simulation time].
    t1_s : float
        End of the window [s, simulation time].
    tax : TimeAxis
        Time -> x.
    jobs : pd.DataFrame | None
        ``/jobs`` (``job_id``, ``wait_s``, ``prefilled``, ``sim_end_s``, ``outcome``): wait colours and the
        attempts ended by a node failure (hatched).
    node_rack : np.ndarray | None
        Rack of each node (``power.System``): rack boundaries (dotted). Without it and ``node_cdu`` the y axis is
        the plain node index.
    node_cdu : np.ndarray | None
        CDU of each node: CDU boundaries (solid) and "CDU k" tick labels.
    color_by : str
        ``"job"``: a stable colour per job id; ``"wait"``: the job's wait before it first started (log scale).
    run_span_s : tuple[float, float] | None
        Simulated span of the run: window time outside it is shaded.
    down_nodes_max : float
        Largest interval-mean number of down nodes in the window (the file records the count, not which nodes);
        noted in the legend if > 0.

    Returns
    -------
    matplotlib.figure.Figure
        The occupancy figure.

    Raises
    ------
    ValueError
        If ``color_by`` is neither "job" nor "wait".
    """
    if color_by not in ("job", "wait"):
        raise ValueError(f"color_by must be 'job' or 'wait', not {color_by!r}")
    jid = np.asarray(alloc["job_id"], dtype=np.int64)
    st = np.asarray(alloc["start_s"], dtype=float)
    en = np.asarray(alloc["end_s"], dtype=float)
    nf = np.asarray(alloc["node_first"], dtype=np.int64)
    nc = np.asarray(alloc["node_count"], dtype=np.int64)
    sel = (en > t0_s) & (st < t1_s) & (en > st)
    jid, st, en, nf, nc = jid[sel], st[sel], en[sel], nf[sel], nc[sel]
    a_s, b_s = np.maximum(st, t0_s), np.minimum(en, t1_s)
    xa, xb = tax.x(np.array([t0_s, t1_s]))
    x0 = tax.x(a_s) if a_s.size else np.zeros(0)
    x1 = tax.x(b_s) if b_s.size else np.zeros(0)
    y0, y1 = nf.astype(float), (nf + nc).astype(float)
    verts = np.stack([np.column_stack([x0, y0]), np.column_stack([x1, y0]), np.column_stack([x1, y1]),
                      np.column_stack([x0, y1])], axis=1)

    has_cdu = node_cdu is not None and len(node_cdu) == n_nodes
    fig, ax = plt.subplots(figsize=(12, 6.4 if has_cdu else 5.6))
    wait_h, failed = _allocation_facts(jobs, jid, en)
    face, sm = _allocation_faces(color_by, jid, wait_h)
    lw = 0.4 if jid.size <= 1500 else 0.0
    coll = PolyCollection(verts, facecolors=face, edgecolors=(0.1, 0.1, 0.1, 0.45), linewidths=lw,
                          gid="allocations")
    coll.job_ids = jid
    ax.add_collection(coll)
    if failed.any():
        hatch = PolyCollection(verts[failed], facecolors="none", edgecolors="#B00000", linewidths=0.6,
                               hatch="////", gid="failed_attempts")
        ax.add_collection(hatch)

    # job ids on the large blocks (the largest rectangle of each job)
    span_x, span_y = xb - xa, float(n_nodes)
    if jid.size:
        area = (x1 - x0) / span_x * nc / span_y
        order = np.lexsort((-area, jid))
        first = order[np.concatenate(([True], jid[order][1:] != jid[order][:-1]))]
        for r in first:
            if nc[r] >= 0.05 * span_y and (x1[r] - x0[r]) >= 0.07 * span_x:
                lum = float(np.dot(face[r, :3], [0.299, 0.587, 0.114]))
                ax.text(0.5 * (x0[r] + x1[r]), 0.5 * (y0[r] + y1[r]), f"{jid[r]}", ha="center", va="center",
                        fontsize=7, color="black" if lum > 0.5 else "white", clip_on=True)

    # outside the simulated span
    if run_span_s is not None:
        ra, rb = tax.x(np.array(run_span_s, dtype=float))
        for lo, hi in ((xa, min(ra, xb)), (max(rb, xa), xb)):
            if hi > lo:
                ax.axvspan(lo, hi, color="#E0E0E0", zorder=0.5, lw=0)
                ax.text(0.5 * (lo + hi), n_nodes / 2, "outside the run", rotation=90, ha="center", va="center",
                        fontsize=8, color="#666666")

    ax.set_xlim(xa, xb)
    ax.set_ylim(n_nodes, 0)  # node 0 at the top
    handles = [Patch(facecolor="white", edgecolor="#999999", label="idle (no job)")]
    if failed.any():
        handles.append(Patch(facecolor="white", edgecolor="#B00000", hatch="////",
                             label="attempt ended by a node failure"))
    if has_cdu:
        cdus = _blocks(node_cdu)
        for _, lo, _hi in cdus[1:]:
            ax.axhline(lo, color="#202020", lw=1.1, zorder=3)
        if node_rack is not None and len(node_rack) == n_nodes:
            racks = _blocks(node_rack)
            cdu_edges = {lo for _, lo, _ in cdus}
            for _, lo, _hi in racks[1:]:
                if lo not in cdu_edges:
                    ax.axhline(lo, color="#505050", lw=0.5, ls=(0, (2, 3)), alpha=0.7, zorder=3)
            handles.append(plt.Line2D([], [], color="#404040", lw=0.5, ls=(0, (2, 3)),
                                      label=f"rack boundary ({len(racks)} racks)"))
        handles.insert(1, plt.Line2D([], [], color="#202020", lw=1.1, label=f"CDU boundary ({len(cdus)} CDUs)"))
        ax.set_yticks([0.5 * (lo + hi) for _, lo, hi in cdus], [f"CDU {k}" for k, _, _ in cdus],
                      fontsize=9 if len(cdus) <= 12 else 7)
        ax.tick_params(axis="y", length=0)
        ax.set_ylabel("nodes, grouped by CDU")
        ra = ax.secondary_yaxis("right")
        edges = [lo for _, lo, _ in cdus] + [n_nodes]
        ra.set_yticks(edges if len(edges) <= 14 else edges[:: math.ceil(len(edges) / 12)])
        ra.set_ylabel("node index (first node of each CDU)")
        ra.tick_params(labelsize=8)
    else:
        ax.set_ylabel("node index")
    if down_nodes_max > 0:  # the file has the count of down nodes, not which ones
        handles.append(Patch(facecolor="white", edgecolor="none",
                             label=f"down nodes: up to {down_nodes_max:.3g} (interval mean; which nodes is not "
                                   "recorded: drawn as idle)"))
    if sm is not None:
        cb = fig.colorbar(sm, ax=ax, pad=0.07, fraction=0.035)
        cb.set_label("job wait from submission to first start (log; < 1 min shown as 1 min)")
        ticks = [(1 / 60, "1 min"), (10 / 60, "10 min"), (1, "1 h"), (6, "6 h"), (24, "1 d"), (72, "3 d"),
                 (168, "1 wk"), (720, "30 d")]
        ticks = [(v, t) for v, t in ticks if v <= sm.norm.vmax * 1.0001]
        cb.set_ticks([v for v, _ in ticks], labels=[t for _, t in ticks])
        cb.minorticks_off()
        handles.append(Patch(facecolor="#C8C8C8", label="running when the simulation started (wait unknown)"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(0.0, -0.09), fontsize=8, frameon=False,
              ncol=len(handles) if len(handles) <= 4 else 3)
    days = (t1_s - t0_s) / 86400
    span = f"{days:g} days" if days >= 1 else f"{days * 24:.3g} h"
    n_jobs = int(np.unique(jid).size)
    colour_text = "colour = job (stable per job id)" if color_by == "job" else "colour = wait time"
    ax.set_title(f"Node occupancy, {span}: {n_jobs:,} jobs on {len(jid):,} "
                 f"node ranges ({colour_text}; label = job id)")
    tax.format(ax)
    ax.set_xlabel(ax.get_xlabel(), labelpad=2)
    fig.tight_layout()
    return fig


def occupancy_packed(jobs: pd.DataFrame, n_nodes: int, t0_s: float, t1_s: float, tax: TimeAxis,
                    pue_eff: np.ndarray | None = None):
    """Fallback for run files without ``/allocations``: job blocks (height = nodes) packed by start time.

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
        span = tax.x(np.array([t1_s]))[0] - tax.x(np.array([t0_s]))[0]
        if sg and (hi := sg[0][1] - sg[0][0]) > n_nodes * 0.06 and (b - a) > span * 0.08:
            ax.text(a + (b - a) / 2, sg[0][0] + hi / 2, f"{int(jobs['job_id'].iloc[j])}", ha="center", va="center",
                    fontsize=7, color="black")
    xa, xb = tax.x(np.array([t0_s, t1_s]))
    ax.set_xlim(xa, xb)
    ax.set_ylim(0, n_nodes)
    ax.set_ylabel("nodes (visual packing, NOT node ids)")
    ax.set_title(f"Node occupancy by job, {(t1_s - t0_s) / 86400:g} days ({len(order)} jobs; label = job id; "
                 "white = idle)")
    ax.text(0.5, 0.5, "APPROXIMATE: this file has no /allocations (node ids);\nblocks are packed first-fit by "
            "start time, so only the busy-node count is exact", transform=ax.transAxes, ha="center", va="center",
            fontsize=10, color="#8B0000", zorder=5,
            bbox={"boxstyle": "round", "facecolor": "#FFF4C0", "edgecolor": "#8B0000", "alpha": 0.9})
    tax.format(ax)
    fig.tight_layout()
    return fig


def wait_vs_size(jobs: pd.DataFrame):
    """Wait time (h) against job size (nodes), coloured by run time (h); prefilled jobs excluded."""
    j = jobs.loc[~jobs["prefilled"].to_numpy(bool) & jobs["wait_s"].notna()]
    fig, ax = plt.subplots(figsize=(8, 5))
    if len(j) == 0:  # e.g. a serving-only run, or a run where no job started
        ax.text(0.5, 0.5, "no batch job started in this run", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return fig
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
    ax.xaxis.set_major_locator(matplotlib.ticker.LogLocator(base=2))  # node counts: powers of 2, written plainly
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:,.0f}"))
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
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
    ok = np.isfinite(job_pue) & (job_E_it > 0)
    cooled = np.isfinite(pue_run)
    if ok.any() and cooled:
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 4.6), gridspec_kw={"width_ratios": [1.2, 1]})
    else:  # no job with IT energy (a serving-only run), or no plant: the energy bars alone, no empty panel
        fig, a1 = plt.subplots(figsize=(9, 4.6))
        a2 = None
    keys = [("E_node_dc_J", "P_node_dc_W"), ("E_rack_overhead_J", "P_rack_overhead_W"),
            ("E_sivoc_loss_J", "P_sivoc_loss_W"), ("E_rectifier_loss_J", "P_rectifier_loss_W"),
            ("E_cdu_pump_J", "P_cdu_pump_W"), ("E_facility_pump_J", "P_facility_pump_W"),
            ("E_tower_pump_J", "P_tower_pump_W"), ("E_tower_fan_J", "P_tower_fan_W"), ("E_chiller_J", "P_chiller_W"),
            ("E_air_fan_J", "P_air_fan_W"),
            ("E_air_chiller_J", "P_air_chiller_W"), ("E_transformer_loss_J", "P_transformer_loss_W"),
            ("E_switchgear_loss_J", "P_switchgear_loss_W"), ("E_ups_loss_J", "P_ups_loss_W"),
            ("E_pdu_loss_J", "P_pdu_loss_W"), ("E_lighting_J", "P_lighting_W")]
    keys = [(e, p) for e, p in keys if att_totals.get(e, 0.0) > 0]
    vals = np.array([att_totals[e] for e, _ in keys]) / 3.6e9
    tot = att_totals["E_facility_J"] / 3.6e9
    y = np.arange(len(keys))[::-1]
    a1.barh(y, vals, color=[COMPONENTS[p][1] for _, p in keys])
    vmax = float(vals.max()) if vals.size else 1.0
    for yi, v in zip(y, vals):  # linear bars: a small component looks small; its value is written beside it
        a1.text(v + vmax * 0.01, yi, f"{_energy_text(v)} ({v / tot * 100:.2f} %)", va="center", fontsize=9)
    a1.set_yticks(y, [COMPONENTS[p][0] for _, p in keys])
    a1.set_xlim(0, vmax * 1.45)
    a1.set_xlabel("energy over the run [MWh] (linear scale)")
    a1.set_title(f"Where the {_energy_text(tot)} of facility energy went" if cooled else
                 f"Where the {_energy_text(tot)} of IT energy went (facility not modelled)")
    if a2 is None:
        fig.tight_layout()
        return fig
    if ok.any():
        a2.hist(job_pue[ok], bins=40, weights=job_E_it[ok] / 3.6e9, color="#4C72B0", alpha=0.8)
    a2.axvline(pue_run, color="k", ls="--", label=f"run PUE {pue_run:.4f}")
    if np.isfinite(pseudo_pue) and pseudo_pue > 0:
        a2.axvline(pseudo_pue, color="#C44E52", ls=":", label=f"idle nodes {pseudo_pue:.4f}")
    a2.xaxis.set_major_locator(MaxNLocator(nbins=5))  # readable ticks on a narrow PUE range
    a2.ticklabel_format(axis="x", useOffset=False)
    a2.set_xlabel("effective PUE of the job [-]\n= (IT + attributed cooling and overheads) / IT")
    a2.set_ylabel("IT energy of the jobs [MWh]")
    a2.set_title("Effective PUE of the jobs\n(cooling attributed by heat share)", fontsize=11)
    a2.legend(fontsize=9)
    a2.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def _energy_text(mwh: float) -> str:
    """An energy [MWh] written with enough digits for any run length (a serving hour is 0.02 MWh, not 0.0)."""
    return f"{mwh:,.1f} MWh" if abs(mwh) >= 10 else (f"{mwh:,.3f} MWh" if abs(mwh) >= 0.1 else
                                                      f"{mwh * 1e3:,.2f} kWh")


def _metric_label(m: str, values=()) -> tuple[str, float]:
    """Axis label ("name [unit]") and scale from SI of a summary metric (the schema's table, via report/catalogue.py);
    a duration's unit is chosen by the largest of ``values`` [s].
    """
    d = column_unit(m, values)
    return f"{d.label} [{d.unit or '-'}]", d.scale  # [-]: a dimensionless ratio


def _front(X: np.ndarray, Y: np.ndarray, members: np.ndarray) -> np.ndarray:
    """Indices of the non-dominated points among ``members`` (both coordinates minimised), sorted by X."""
    m = np.flatnonzero(members)
    keep = [i for i in m if not np.any((X[m] <= X[i]) & (Y[m] <= Y[i]) & ((X[m] < X[i]) | (Y[m] < Y[i])))]
    keep = np.array(keep, dtype=int)
    return keep[np.argsort(X[keep], kind="stable")] if keep.size else keep


def pareto(names: list[str], x: np.ndarray, y: np.ndarray, mx: str, my: str,
           groups: list[str] | None = None) -> plt.Figure:
    """Scenarios in the (mx, my) plane, both minimised, with one Pareto front per condition.

    Parameters
    ----------
    names : list[str]
        Scenario names (annotations).
    x : np.ndarray
        Shape (n,). Values of metric ``mx`` in SI (converted for the axis).
    y : np.ndarray
        Shape (n,). Values of metric ``my`` in SI.
    mx : str
        Key of the x metric in the sweep summary.
    my : str
        Key of the y metric.
    groups : list[str] | None
        The condition of each scenario (e.g. its weather). Conditions are not decisions: a scenario is compared
        only with scenarios under the same condition, so each condition gets its own front. None: one front.

    Returns
    -------
    matplotlib.figure.Figure
        The scatter with its fronts.
    """
    lx, sx = _metric_label(mx, x)
    ly, sy = _metric_label(my, y)
    X, Y = np.asarray(x, float) * sx, np.asarray(y, float) * sy
    ok = np.isfinite(X) & np.isfinite(Y)
    groups = list(groups) if groups is not None else [""] * len(X)
    labels = list(dict.fromkeys(g for g, o in zip(groups, ok) if o))
    colours = ["#C44E52", "#4C72B0", "#55A868", "#8172B2", "#CCB974", "#64B5CD", "#DD8452", "#937860"]
    markers = ["o", "s", "^", "D", "v", "P", "X", "*"]
    fig, ax = plt.subplots(figsize=(7.5, 5))
    g_arr = np.array(groups, dtype=object)
    for k, g in enumerate(labels):
        members = ok & (g_arr == g)
        f = _front(X, Y, members)
        dominated = members.copy()
        dominated[f] = False
        col, mk = colours[k % len(colours)], markers[k % len(markers)]
        tag = f" ({g})" if g else ""
        ax.scatter(X[dominated], Y[dominated], facecolors="none", edgecolors=col, marker=mk, s=40,
                   label=f"dominated{tag}")
        ax.plot(X[f], Y[f], marker=mk, ls="-", color=col, ms=7, label=f"Pareto front{tag}")
    if ok.any():  # labels of points near the right or top edge go to their left / below: none runs off the plot
        x_lo, x_hi = float(X[ok].min()), float(X[ok].max())
        y_lo, y_hi = float(Y[ok].min()), float(Y[ok].max())
        for i in np.flatnonzero(ok):
            right = x_hi > x_lo and (X[i] - x_lo) / (x_hi - x_lo) > 0.6
            top = y_hi > y_lo and (Y[i] - y_lo) / (y_hi - y_lo) > 0.85
            ax.annotate(names[i], (X[i], Y[i]), textcoords="offset points", xytext=(-5 if right else 5, -4 if top else 4),
                        ha="right" if right else "left", va="top" if top else "bottom", fontsize=8)
    ax.set_xlabel(lx)
    ax.set_ylabel(ly)
    what = " (one front per condition: lower is better on both)" if len(labels) > 1 else " (lower is better on both)"
    ax.set_title(f"Scenarios: {ly.split(' [')[0]} vs {lx.split(' [')[0]}" + what, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def measured_vs_model(jobs: pd.DataFrame) -> tuple[plt.Figure, str]:
    """Measured per-node job power (telemetry) against the utilisation model, and the energy both give.

    Parameters
    ----------
    jobs : pd.DataFrame
        Run-file job table with ``node_power_W`` (what the run used: measured where the trace had it),
        ``node_power_model_W`` (the model's figure), ``measured_node_power_W`` (NaN where the trace had none),
        ``nodes`` and ``run_s``.

    Returns
    -------
    (matplotlib.figure.Figure, str)
        The figure and its caption (with the energy totals both ways, in MWh).
    """
    meas = np.asarray(jobs["measured_node_power_W"], dtype=float) if "measured_node_power_W" in jobs else \
        np.asarray(jobs["node_power_W"], dtype=float)
    used = np.asarray(jobs["node_power_W"], dtype=float)
    model = np.asarray(jobs["node_power_model_W"], dtype=float)
    node_h = np.asarray(jobs["nodes"], dtype=float) * np.nan_to_num(np.asarray(jobs["run_s"], dtype=float)) / 3600
    has = np.isfinite(meas)
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 4.3))
    sc = a1.scatter(model[has], used[has], s=np.clip(node_h[has] / max(node_h.max(), 1e-9) * 200, 4, 200),
                    c=np.log10(np.maximum(node_h[has], 1e-3)), cmap="viridis", alpha=0.7)
    lim = [0, float(np.nanmax(np.r_[model[has], used[has], 1.0])) * 1.05]
    a1.plot(lim, lim, "k--", lw=1, label="measured = model")
    a1.set_xlim(lim)
    a1.set_ylim(lim)
    a1.set_xlabel("node DC power from the utilisation model [W]")
    a1.set_ylabel("measured node DC power [W] (mean over the job)")
    a1.set_title("Per job: measured vs modelled node power")
    a1.legend(loc="upper left", fontsize=8)
    fig.colorbar(sc, ax=a1, label="log10 node-hours of the job (marker size too)")
    e_used = float(np.nansum(used * node_h)) / 1e3  # W x node-hours = Wh; / 1e3 = kWh
    e_model = float(np.nansum(model * node_h)) / 1e3
    a2.bar([0, 1], [e_model / 1e3, e_used / 1e3], color=["tab:gray", "tab:blue"])
    a2.set_xticks([0, 1], ["utilisation model", "measured (used by the run)"])
    a2.set_ylabel("node DC energy of the jobs [MWh]")
    d = (e_used - e_model) / e_model * 100 if e_model > 0 else float("nan")
    a2.set_title(f"Job energy: measured {d:+.1f} % vs the model")
    fig.tight_layout()
    cap = (f"The run used measured job power for {int(has.sum())} of {len(has)} jobs (the rest: the model). "
           f"Node DC energy of the jobs: {e_used / 1e3:,.3f} MWh measured vs {e_model / 1e3:,.3f} MWh modelled "
           f"({d:+.1f} %).")
    return fig, cap


# --- serving partition (issue #28 item 2) -------------------------------------------------------------------------

def _cdf(ax, v: np.ndarray, scale: float, unit: str, slo: float | None, colour: str, name: str) -> None:
    """Empirical CDF of ``v`` [s] (finite values) in ``unit`` with its p50 / p90 / p99 and the SLO line."""
    v = np.sort(np.asarray(v, dtype=float)[np.isfinite(v)]) * scale
    if v.size == 0:
        ax.text(0.5, 0.5, f"no {name} (no request produced two tokens)", ha="center", va="center",
                transform=ax.transAxes)
        ax.set_axis_off()
        return
    ax.plot(v, np.arange(1, v.size + 1) / v.size, lw=1.5, color=colour, label=f"{name} ({v.size:,} requests)")
    for p, ls in ((50, ":"), (90, "--"), (99, "-.")):
        q = float(np.percentile(v, p))
        ax.axvline(q, color="grey", ls=ls, lw=0.8, label=f"p{p} = {q:.3g} {unit}")
    if slo is not None and np.isfinite(slo):
        share = float(np.mean(v <= slo * scale)) * 100
        ax.axvline(slo * scale, color="#B00020", lw=1.4, label=f"SLO {slo * scale:g} {unit} ({share:.1f} % within)")
    ax.set_xlabel(f"{name} [{unit}]")
    ax.set_ylabel("fraction of requests (CDF) [-]")
    ax.set_ylim(0, 1.02)
    if v[0] > 0 and v[-1] / v[0] > 30:
        ax.set_xscale("log")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, loc="lower right")


def serving_latency(req: dict[str, np.ndarray], ttft_slo_s: float, tpot_slo_s: float):
    """TTFT and TPOT distributions (CDFs) of the completed requests against their SLOs, and end-to-end latency.

    Parameters
    ----------
    req : dict[str, np.ndarray]
        ``/serving/requests`` columns, each shape (n_requests,): ``ttft_s``, ``tpot_s``, ``e2e_s`` [s] and
        ``status`` (1 completed).
    ttft_slo_s : float
        The run's TTFT SLO [s] (``/serving@ttft_slo_s``).
    tpot_slo_s : float
        The run's TPOT SLO [s] (``/serving@tpot_slo_s``).

    Returns
    -------
    matplotlib.figure.Figure
        Three panels: TTFT [s], TPOT [ms], end-to-end [s].
    """
    done = np.asarray(req["status"]) == 1
    fig, axs = plt.subplots(1, 3, figsize=(12, 4.0))
    _cdf(axs[0], np.asarray(req["ttft_s"])[done], 1.0, "s", ttft_slo_s, "#4C72B0", "TTFT")
    _cdf(axs[1], np.asarray(req["tpot_s"])[done], 1e3, "ms", tpot_slo_s, "#DD8452", "TPOT")
    _cdf(axs[2], np.asarray(req["e2e_s"])[done], 1.0, "s", None, "#55A868", "end-to-end latency")
    fig.suptitle(f"Serving latency of the {int(done.sum()):,} completed requests (of {done.size:,}), against the "
                 f"SLOs", fontsize=11)
    fig.tight_layout()
    return fig


def _bins(t0: float, t1: float, max_bins: int = 120) -> float:
    """A readable bin width [s] giving at most ``max_bins`` bins over ``[t0, t1]``."""
    span = max(t1 - t0, 1.0)
    for w in (1, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 604800):
        if span / w <= max_bins:
            return float(w)
    return float(math.ceil(span / max_bins / 86400.0) * 86400.0)


def _width_text(w: float) -> str:
    return f"{w / 3600:g} h" if w >= 3600 else (f"{w / 60:g} min" if w >= 60 else f"{w:g} s")


def serving_throughput(req: dict[str, np.ndarray], n_gpus: int, origin_unix_s: float, offset_s: float = 0.0):
    """Goodput (SLO-met requests finished per second) and output tokens per second per GPU over time.

    Tokens are spread evenly over each request's decode, from its first token to its last, so a bin counts the
    tokens produced in it (not the tokens of the requests that finished in it).

    Parameters
    ----------
    req : dict[str, np.ndarray]
        ``/serving/requests``, each shape (n_requests,): ``finish_s``, ``first_token_s`` [s, trace time],
        ``output_tokens``, ``status``, ``slo_met``.
    n_gpus : int
        GPUs of the deployment (replicas x tensor-parallel degree).
    origin_unix_s : float
        Unix time of time 0 of the axis (the run's ``time_origin_unix_s``, so the dates agree with the run's other
        figures; NaN: days).
    offset_s : float
        Simulation time of request-trace time 0 [s] (``trace.window_start_days`` x 86400 + ``serving.offset_s``):
        request times + ``offset_s`` = simulation time.

    Returns
    -------
    matplotlib.figure.Figure
        Two panels sharing a time axis.
    """
    done = np.asarray(req["status"]) == 1
    fin = np.asarray(req["finish_s"], dtype=float)[done] + offset_s
    first = np.asarray(req["first_token_s"], dtype=float)[done] + offset_s
    out = np.asarray(req["output_tokens"], dtype=float)[done]
    met = np.asarray(req["slo_met"]).astype(bool)[done]
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(11, 5.4), sharex=True)
    if fin.size == 0:
        a1.text(0.5, 0.5, "no request completed", ha="center", va="center", transform=a1.transAxes)
        return fig
    t0, t1 = float(np.nanmin(first)), float(np.nanmax(fin))
    w = _bins(t0, t1)
    edges = t0 + np.arange(math.ceil((t1 - t0) / w) + 1 + (1 if (t1 - t0) % w == 0 else 0)) * w
    good = np.histogram(fin[met], edges)[0] / w
    allc = np.histogram(fin, edges)[0] / w
    # tokens produced before each edge: the first token at first_token_s, the others evenly up to finish_s
    dur = np.maximum(fin - first, 1e-9)
    produced = np.array([np.sum((e >= first) + np.clip((e - first) / dur, 0.0, 1.0) * (out - 1)) for e in edges])
    tok = np.diff(produced) / w / max(n_gpus, 1)
    tax = TimeAxis(edges[:-1], origin_unix_s)
    xe = tax.x(edges)
    _step(a1, xe, allc, color="#8C8C8C", lw=1.0, label="completed requests")
    _step(a1, xe, good, color="#55A868", lw=1.4, label="goodput: completed within both SLOs")
    a1.set_ylabel("requests per second [req/s]")
    a1.set_ylim(bottom=0)
    a1.grid(alpha=0.3)
    a1.legend(fontsize=8, loc="upper left")
    a1.set_title(f"Goodput and token throughput ({_width_text(w)} bins; {fin.size:,} completed requests, "
                 f"{met.mean() * 100:.1f} % within the SLOs)", fontsize=10)
    _step(a2, xe, tok, color="#4C72B0", lw=1.2, label=f"output tokens per second per GPU ({n_gpus} GPUs)")
    a2.set_ylabel("tokens/s per GPU [tokens/s]")
    a2.set_ylim(bottom=0)
    a2.grid(alpha=0.3)
    a2.legend(fontsize=8, loc="upper left")
    if tax.dated:
        tax.format(a2)
    else:
        a2.set_xlabel("days since the trace origin")
    fig.tight_layout()
    return fig


def serving_power(t_s: np.ndarray, P_gpu_W: np.ndarray, roles: list[str], tp: int, P_node_W: np.ndarray,
                  tax: TimeAxis, gpu_max_W: float | None = None):
    """GPU power of each replica, labelled by its phase (prefill, decode, or both), and the partition's node power.

    Parameters
    ----------
    t_s : np.ndarray
        Shape (n_rows,): profile row starts [s, simulation time] (``/serving/power/time_s``).
    P_gpu_W : np.ndarray
        Shape (n_rows, n_replicas): power of each GPU of each replica [W].
    roles : list[str]
        Length n_replicas:
        Phase each replica serves: ``prefill``, ``decode`` or ``prefill + decode`` (colocated).
    tp : int
        GPUs per replica (tensor-parallel degree).
    P_node_W : np.ndarray
        Shape (n_rows, n_nodes): DC power of each partition node [W].
    tax : TimeAxis
        The run's time axis (sim time -> dates).
    gpu_max_W : float | None
        The GPU's power limit [W], drawn as a line.

    Returns
    -------
    matplotlib.figure.Figure
        Two panels sharing a time axis.
    """
    t_s = np.asarray(t_s, dtype=float)
    P_gpu_W = np.asarray(P_gpu_W, dtype=float).reshape(t_s.size, -1)
    n_rows = t_s.size
    w = _bins(float(t_s[0]), float(t_s[-1]), max_bins=400)
    dt = float(np.median(np.diff(t_s))) if n_rows > 1 else w
    per = max(1, int(round(w / dt)))
    nb = math.ceil(n_rows / per)

    def binned(y):
        y = np.asarray(y, dtype=float)
        pad = nb * per - y.shape[0]
        if pad:
            y = np.concatenate([y, np.repeat(y[-1:], pad, axis=0)])
        return y.reshape((nb, per) + y.shape[1:]).mean(axis=1)

    edges = t_s[0] + np.arange(nb + 1) * per * dt
    xe = tax.x(edges)
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(11, 5.6), sharex=True)
    shades = {"prefill": plt.get_cmap("Reds"), "decode": plt.get_cmap("Blues"), "prefill + decode": plt.get_cmap("Greens")}
    Pg = binned(P_gpu_W)
    for r in range(Pg.shape[1]):
        role = roles[r] if r < len(roles) else "prefill + decode"
        same = [i for i in range(Pg.shape[1]) if (roles[i] if i < len(roles) else "prefill + decode") == role]
        shade = 0.85 - 0.45 * same.index(r) / max(len(same) - 1, 1)  # a hue per phase, a shade per replica
        _step(a1, xe, Pg[:, r], lw=0.9, color=shades[role](shade), alpha=0.9,
              label=f"replica {r} ({role}; each of its {tp} GPUs): mean {np.mean(P_gpu_W[:, r]):,.0f} W")
    if gpu_max_W:
        a1.axhline(gpu_max_W, color="#B00020", ls=":", lw=1, label=f"GPU power limit {gpu_max_W:,.0f} W")
    a1.set_ylabel("GPU power [W]")
    a1.set_ylim(bottom=0)
    a1.grid(alpha=0.3)
    a1.legend(fontsize=7, loc="lower left", ncol=2 if Pg.shape[1] > 3 else 1)
    a1.set_title(f"Serving power per replica and phase ({_width_text(per * dt)} averages)", fontsize=10)
    Pn = binned(np.asarray(P_node_W, dtype=float).reshape(n_rows, -1).sum(axis=1)) / 1e3
    _step(a2, xe, Pn, color="k", lw=1.0, label=f"partition node DC power ({np.shape(P_node_W)[-1]} nodes)")
    a2.set_ylabel("node DC power [kW]")
    a2.set_ylim(bottom=0)
    a2.grid(alpha=0.3)
    a2.legend(fontsize=8, loc="lower left")
    tax.format(a2)
    fig.tight_layout()
    return fig


def layout_problems(fig: "matplotlib.figure.Figure") -> dict[str, list[str]]:
    """Texts that run off a figure and panels that draw nothing: what the report's browser test asserts is empty.

    A text (title, label, tick label, legend entry, annotation) overflows when its rendered extent leaves the
    figure's canvas by more than one pixel: in the saved PNG it is cut off. A panel is empty when it is visible and
    holds no data artist (line with points, collection, image, patch, stairs) and no text note.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        A drawn figure (as saved: no ``bbox_inches="tight"``).

    Returns
    -------
    dict[str, list[str]]
        ``overflow``: the overflowing texts (first 60 characters each) and tick labels written over one another;
        ``empty``: titles (or positions) of the empty panels.
    """
    from matplotlib.text import Text

    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    W, H = fig.bbox.width, fig.bbox.height
    over = []
    ticks, drawn, overlap = set(), [], []
    axes_all = list(fig.axes) + [c for ax in fig.axes for c in getattr(ax, "child_axes", [])]
    for ax in axes_all:
        for axis in (ax.xaxis, ax.yaxis):
            for tk in axis.get_major_ticks() + axis.get_minor_ticks():
                ticks.update((tk.label1, tk.label2))
            if not ax.get_visible() or not ax.axison:
                continue
            labels = [lb for tk in axis._update_ticks() for lb in (tk.label1, tk.label2)  # the ticks drawn
                      if lb.get_visible() and lb.get_text().strip()]
            drawn += labels
            boxes = [lb.get_window_extent(r) for lb in labels]
            for i in range(len(boxes) - 1):  # neighbouring tick labels written over each other
                for j in range(i + 1, len(boxes)):
                    a, b = boxes[i], boxes[j]
                    if min(a.x1, b.x1) - max(a.x0, b.x0) > 1 and min(a.y1, b.y1) - max(a.y0, b.y0) > 1:
                        overlap.append(f"{labels[i].get_text()[:20]} / {labels[j].get_text()[:20]}")
    for t in [x for x in fig.findobj(Text) if x not in ticks] + drawn:
        txt = t.get_text()
        if not txt.strip() or not t.get_visible() or t.axes is not None and not t.axes.get_visible():
            continue
        if t.axes is not None and t in t.axes.texts and t.get_clip_on():
            continue  # a data label clipped at its axes on purpose (job ids on occupancy blocks)
        bb = t.get_window_extent(r)
        if bb.width == 0 and bb.height == 0:
            continue
        if bb.x0 < -1 or bb.y0 < -1 or bb.x1 > W + 1 or bb.y1 > H + 1:
            over.append(txt.replace("\n", " ")[:60])
    empty = []
    for i, ax in enumerate(fig.axes):
        if not ax.get_visible() or not ax.axison and not ax.texts:
            continue
        if ax.get_label() == "<colorbar>" or hasattr(ax, "_colorbar"):
            continue
        has = (any(len(np.atleast_1d(ln.get_xdata())) for ln in ax.lines) or ax.collections or ax.images
               or ax.patches or ax.texts or ax.containers)
        if not has and ax.get_legend() is None:
            empty.append(ax.get_title() or f"panel {i}")
    return {"overflow": over + [f"overlapping tick labels {o}" for o in overlap], "empty": empty}


# --- A vs B (issue #28 item 6) ------------------------------------------------------------------------------------

def _waterfall(ax, start: float, links: list[tuple[str, float]], end: float, unit: str, fmt: str, a_lab: str,
               b_lab: str) -> None:
    """One waterfall on ``ax``: A's bar, one floating bar per link (green: lowers, red: raises), B's bar."""
    names = [a_lab] + [n for n, _ in links] + [b_lab]
    x = np.arange(len(names))
    ax.bar(x[0], start, color="#8C8C8C", width=0.6)
    level = start
    vals = [start]
    for i, (_, d) in enumerate(links, start=1):
        ax.bar(x[i], d, bottom=level, color="#C44E52" if d > 0 else "#55A868", width=0.6)
        ax.plot([x[i - 1] + 0.3, x[i] - 0.3], [level, level], color="k", lw=0.6)
        level += d
        vals.append(d)
    ax.plot([x[-2] + 0.3, x[-1] - 0.3], [level, level], color="k", lw=0.6)
    ax.bar(x[-1], end, color="#4C72B0", width=0.6)
    vals.append(end)
    levels = [start] + [start + sum(d for _, d in links[:i + 1]) for i in range(len(links))]
    # a value label sits above its bar's upper edge (a falling link's upper edge is the level before it)
    tops = [start] + [max(levels[i], levels[i + 1]) for i in range(len(links))] + [end]
    lo_all = min(levels + [end])
    hi_all = max(levels + [end])
    span = max(hi_all - lo_all, abs(hi_all) * 1e-6, 1e-12)
    # zoom on the changes (the totals are large, the links small), and say so in the label
    lo = lo_all - 0.6 * span
    ax.set_ylim(max(lo, 0.0) if lo_all > 0 else lo, hi_all + 0.35 * span)
    for xi, v, t in zip(x, vals, tops):
        txt = format(v, fmt) if xi in (0, len(names) - 1) else format(v, "+" + fmt.lstrip("+"))
        ax.annotate(txt, (xi, t), xytext=(0, 3), textcoords="offset points", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(x, names, rotation=20, ha="right", fontsize=8)
    ax.set_ylabel(f"[{unit}] (axis zoomed on the change)")
    ax.ticklabel_format(axis="y", useOffset=False, style="plain")
    ax.grid(alpha=0.3, axis="y")


def compare_waterfall(cmp: object, a_lab: str = "A", b_lab: str = "B"):
    """Waterfall of :func:`scheduler_sim.analysis.compare.compare`: from A's total to B's, link by link.

    Parameters
    ----------
    cmp : object
        The :class:`~scheduler_sim.analysis.compare.Comparison`: ``totals`` (``E_facility_J``, ``PUE``), ``energy``
        and ``pue`` per link (:data:`~scheduler_sim.analysis.compare.LINKS`), ``grid`` per signal (``GRID_LINKS``).
    a_lab : str
        Name of run A (first bar).
    b_lab : str
        Name of run B (last bar).

    Returns
    -------
    matplotlib.figure.Figure
        Facility energy [MWh], PUE [-] (when both runs modelled a plant) and one panel per grid signal.
    """
    from ..compare import GRID_LINKS, LINKS

    t = cmp.totals
    panels = [("facility energy", t.loc["E_facility_J", "A"] / 3.6e9, [(k, cmp.energy[k] / 3.6e9) for k in LINKS],
               t.loc["E_facility_J", "B"] / 3.6e9, "MWh", ",.3f")]
    if np.isfinite(t.loc["PUE", "A"]) and np.isfinite(t.loc["PUE", "B"]):
        panels.append(("PUE", t.loc["PUE", "A"], [(k, cmp.pue[k]) for k in LINKS], t.loc["PUE", "B"], "-", ".5f"))
    for kind, g in cmp.grid.items():
        panels.append(("CO2 (facility)" if kind == "carbon" else "energy cost (facility)", g["A"],
                       [(k, float(g["links"][k])) for k in GRID_LINKS], g["B"], g["unit"], ",.2f"))
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels) + 1, 4.8), squeeze=False)
    for ax, (title, a, links, b, unit, fmt) in zip(axes[0], panels):
        _waterfall(ax, float(a), links, float(b), unit, fmt, a_lab, b_lab)
        ax.set_title(f"{title}: {a_lab} -> {b_lab}, by link (causal order)", fontsize=10)
    fig.tight_layout()
    return fig


def compare_series(sa: dict, sb: dict, a_lab: str = "A", b_lab: str = "B"):
    """A's and B's facility power and PUE over time, overlaid (each on its own dates when the runs differ).

    Parameters
    ----------
    sa : dict
        Run A: ``time_s`` (n,) [s], ``origin`` (Unix time of 0, NaN: none), ``P_facility_W`` (n,) [W],
        ``P_it_W`` (n,) [W].
    sb : dict
        Run B, the same keys.
    a_lab : str
        Name of run A (legend).
    b_lab : str
        Name of run B (legend).

    Returns
    -------
    matplotlib.figure.Figure
        Two panels: facility power [MW] and PUE per bin [-].
    """
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(11, 5.8), sharex=True)
    same_origin = np.isfinite(sa["origin"]) and np.isfinite(sb["origin"])
    tax = None
    for s, lab, col in ((sa, a_lab, "#8C8C8C"), (sb, b_lab, "#4C72B0")):
        origin = s["origin"] if same_origin else float("nan")
        tax = TimeAxis(s["time_s"], origin)
        xe = tax.bin_x()
        fac, it = tax.binned(s["P_facility_W"]), tax.binned(s["P_it_W"])
        _step(a1, xe, fac / 1e6, color=col, lw=1.1, label=f"{lab} facility ({tax.bin_width_text()} averages)")
        with np.errstate(invalid="ignore", divide="ignore"):
            pue = fac / it
        if np.any(np.isfinite(pue)):
            _step(a2, xe, pue, color=col, lw=1.1, label=f"{lab} PUE")
    a1.set_ylabel("facility power [MW]")
    a1.grid(alpha=0.3)
    a1.legend(fontsize=8, loc="upper left")
    a1.set_title(f"{a_lab} and {b_lab} over time", fontsize=10)
    a2.set_ylabel("PUE [-]")
    a2.ticklabel_format(axis="y", useOffset=False)
    a2.grid(alpha=0.3)
    if a2.get_legend_handles_labels()[0]:
        a2.legend(fontsize=8, loc="upper left")
    else:
        a2.text(0.5, 0.5, "PUE n/a: no cooling plant modelled in either run", ha="center", va="center",
                transform=a2.transAxes)
    tax.format(a2)
    fig.tight_layout()
    return fig
