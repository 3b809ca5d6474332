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
    "P_tower_pump_W": ("tower-water pumps", "#4C72B0"),
    "P_tower_fan_W": ("cooling-tower fans", "#8172B3"),
    "P_chiller_W": ("chiller", "#937860"),
    "P_air_fan_W": ("air-handler / CRAH fans", "#DA8BC3"),
    "P_air_chiller_W": ("chilled water for air", "#A0522D"),
    "P_transformer_loss_W": ("transformer loss", "#CCB974"),
    "P_switchgear_loss_W": ("switchgear / busway loss", "#B8860B"),
    "P_ups_loss_W": ("UPS loss", "#E377C2"),
    "P_pdu_loss_W": ("PDU loss", "#7F7F7F"),
    "P_lighting_W": ("lighting and building controls", "#BCBD22"),
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
        """Date ticks (or day numbers) on ``ax``, chosen from the shown span only.

        Every panel and every figure of a report uses the same rule, so ticks agree between them: spans over
        120 days tick months (``Jan``), over 2 days tick days (``Jul 02``, every n-th day for up to ~9 ticks),
        shorter spans tick hours (``Jul 02 06:00``). The year is in the axis label.
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
        else:
            step_h = next(h for h in (1, 2, 3, 6, 12, 24) if span * 24 / h <= 9)
            loc, fmt = mdates.HourLocator(interval=step_h), "%b %d %H:%M"
        ax.xaxis.set_major_locator(loc)
        ax.xaxis.set_major_formatter(mdates.DateFormatter(fmt))
        year = mdates.num2date(lo).year
        ax.set_xlabel(f"date (UTC), {year}")

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
                          run_span_s: tuple[float, float] | None = None, down_nodes_max: float = 0.0):
    """Node occupancy in ``[t0_s, t1_s)`` from the run file's ``/allocations``: node index x time.

    One rectangle per allocation run (``job_id``, ``start_s``, ``end_s``, ``node_first``, ``node_count``), clipped
    to the window: node ``i`` covers ``[i, i + 1)`` on the y axis (node 0 at the top), the x extent is the run's
    time span. The rectangles are one :class:`~matplotlib.collections.PolyCollection` with gid ``"allocations"``
    (its ``job_ids`` attribute holds the job of each rectangle), so the drawing can be checked from the figure data.

    Parameters
    ----------
    alloc : dict of str -> ndarray
        The ``/allocations`` columns.
    n_nodes : int
        Nodes of the system (y range).
    t0_s, t1_s : float
        Window [s, simulation time].
    tax : TimeAxis
        Time -> x.
    jobs : DataFrame or None
        ``/jobs`` (``job_id``, ``wait_s``, ``prefilled``, ``sim_end_s``, ``outcome``): wait colours and the
        attempts ended by a node failure (hatched).
    node_rack, node_cdu : ndarray or None
        Rack and CDU of each node (``power.System``): CDU boundaries (solid), rack boundaries (dotted) and
        "CDU k" tick labels. Without them the y axis is the plain node index.
    color_by : {"job", "wait"}
        ``job``: a stable colour per job id; ``wait``: the job's wait before it first started (log scale).
    run_span_s : (float, float) or None
        Simulated span of the run: window time outside it is shaded.
    down_nodes_max : float
        Largest interval-mean number of down nodes in the window (the file records the count, not which nodes);
        noted in the legend if > 0.
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
        a1.text(v + vmax * 0.01, yi, f"{v:,.1f} MWh ({v / tot * 100:.2f} %)", va="center", fontsize=9)
    a1.set_yticks(y, [COMPONENTS[p][0] for _, p in keys])
    a1.set_xlim(0, vmax * 1.45)
    a1.set_xlabel("energy over the run [MWh] (linear scale)")
    cooled = np.isfinite(pue_run)
    a1.set_title(f"Where the {tot:,.1f} MWh of facility energy went" if cooled else
                 f"Where the {tot:,.1f} MWh of IT energy went (facility not modelled)")
    ok = np.isfinite(job_pue) & (job_E_it > 0)
    if not cooled:
        a2.text(0.5, 0.5, "effective PUE n/a:\nno cooling plant was modelled", ha="center", va="center",
                transform=a2.transAxes, fontsize=12)
        a2.set_axis_off()
        fig.tight_layout()
        return fig
    if ok.any():
        a2.hist(job_pue[ok], bins=40, weights=job_E_it[ok] / 3.6e9, color="#4C72B0", alpha=0.8)
    a2.axvline(pue_run, color="k", ls="--", label=f"run PUE {pue_run:.4f}")
    if np.isfinite(pseudo_pue) and pseudo_pue > 0:
        a2.axvline(pseudo_pue, color="#C44E52", ls=":", label=f"idle nodes {pseudo_pue:.4f}")
    a2.xaxis.set_major_locator(MaxNLocator(nbins=5))  # readable ticks on a narrow PUE range
    a2.ticklabel_format(axis="x", useOffset=False)
    a2.set_xlabel("effective PUE of the job = (IT + attributed cooling and overheads) / IT")
    a2.set_ylabel("IT energy of the jobs [MWh]")
    a2.set_title("Effective PUE of the jobs\n(cooling attributed by heat share)", fontsize=11)
    a2.legend(fontsize=9)
    a2.grid(alpha=0.3)
    fig.tight_layout()
    return fig


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


def pareto(names: list[str], x: np.ndarray, y: np.ndarray, mx: str, my: str, groups: list[str] | None = None):
    """Scenarios in the (mx, my) plane, both minimised, with one Pareto front per condition.

    Parameters
    ----------
    names : list of str
        Scenario names (annotations).
    x, y : ndarray, shape (n,)
        Metric values in SI (``mx``, ``my`` keys of the sweep summary; converted for the axes).
    mx, my : str
        Metric keys.
    groups : list of str or None
        The condition of each scenario (e.g. its weather). Conditions are not decisions: a scenario is compared
        only with scenarios under the same condition, so each condition gets its own front. None: one front.
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
    for i in np.flatnonzero(ok):
        ax.annotate(names[i], (X[i], Y[i]), textcoords="offset points", xytext=(5, 4), fontsize=8)
    ax.set_xlabel(lx)
    ax.set_ylabel(ly)
    what = " (one front per condition: lower is better on both)" if len(labels) > 1 else " (lower is better on both)"
    ax.set_title(f"Scenarios: {ly.split(' [')[0]} vs {lx.split(' [')[0]}" + what, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def measured_vs_model(jobs):
    """Measured per-node job power (telemetry) against the utilisation model, and the energy both give.

    Parameters
    ----------
    jobs : pandas.DataFrame
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
