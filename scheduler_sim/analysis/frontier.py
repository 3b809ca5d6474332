"""Pareto frontiers of a sweep: the non-dominated set, its knee and its hypervolume, for two or three metrics.

Metrics (:data:`FRONTIER_METRICS`)
----------------------------------
Each axis is one headline metric of the sweep summary (``summary.h5`` ``/scenarios``), or one derived from them,
with a fixed *sense* (minimised or maximised). The table (name, sense, source, shown unit):

=======================  =====  ================================================================  ========
name                     sense  source (SI keys of ``/scenarios``)                                shown in
=======================  =====  ================================================================  ========
wait                     min    ``mean_wait_s``                                                   h
bounded_slowdown         min    ``mean_bounded_slowdown`` (tau = 10 s)                            1
energy                   min    ``E_facility_J`` (extensive)                                      MWh
PUE                      min    ``PUE``                                                           1
peak_power               min    ``peak_P_facility_W``                                             MW
cost                     min    ``grid_cost`` (extensive; currency of the price series)           currency
CO2                      min    ``grid_co2_t`` (extensive)                                        t
water                    min    ``water_makeup_kg`` (extensive)                                   m3
utilisation              max    ``utilisation``                                                   %
slo_goodput              max    ``serving_goodput_req_s``                                         req/s
slo_attainment           max    ``serving_slo_attainment``                                        %
tokens_per_s_per_gpu     max    ``serving_tokens_per_s_per_gpu``                                  tok/s
tokens_per_s_per_user    max    ``serving_tokens_per_s_per_user``                                 tok/s
energy_per_token         min    ``serving_J_per_token_facility``                                  J
tokens_per_MWh           max    ``serving_output_tokens / E_facility_J x 3.6e9``                  tok/MWh
cost_per_Mtoken          min    ``grid_cost / serving_output_tokens x 1e6``                       currency
=======================  =====  ================================================================  ========

Any other numeric ``/scenarios`` key is accepted as ``KEY:min`` or ``KEY:max`` (its sense must be stated);
a table name may be given by its source key too (``mean_wait_s`` is ``wait``).

Spans. A scenario's span is its batch window (``trace.window_days``) or, for a serving-only run, its serving
window (``serving_span_s``). Extensive metrics (energy, cost, CO2, water) grow with the span, so scenarios of
different spans are not comparable: :func:`frontier_table` refuses them unless ``per_day`` divides every
extensive metric by the span in days.

Non-dominated set. After turning every maximised metric into a minimised one (negation), point ``p`` is
dominated when another point ``q`` is ``<=`` on every axis and ``<`` on one. Equal points dominate neither
each other: both stay on the front. Scenarios with a NaN on an axis (failed, or metric absent) are left out
and counted.

Knee. On axes normalised over the front (``(f - min) / (max - min)`` per minimised axis; an axis with no spread
is 0), the knee is the front point with the largest distance below the hyperplane ``sum(f) = 1`` through the
per-axis extremes, i.e. the smallest sum of normalised objectives (ties: the first scenario). In 2-D this is
exactly the point farthest from the line between the two extreme points of the front (Das, "On characterizing
the knee of the Pareto curve", Struct. Optim. 18 (1999); Deb & Gupta 2011). In 3-D the hyperplane through
the unit points stands in for the plane through the three extremes (which may be degenerate).

Hypervolume. The volume of objective space (minimised form) dominated by the front and bounded by the
reference point ``r`` (Zitzler & Thiele 1998): exact in 2-D (a sweep over the front sorted by the first axis) and
in 3-D (slices along the third axis, each an exact 2-D hypervolume times the slice thickness). Points not
strictly better than ``r`` on every axis contribute nothing. The default reference is the nadir of all finite
points plus 10 % of each axis' range (1 % of |nadir|, or 1, where the range is 0), stated in every output.
Units: the product of the axes' shown units.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path

import h5py
import numpy as np

__all__ = ["FrontierMetric", "FRONTIER_METRICS", "resolve_metric", "nondominated", "knee_index", "hypervolume",
           "default_reference", "SweepPoints", "load_sweep_points", "Frontier", "frontier_table", "frontier_csv",
           "frontier_plot", "SpanMismatchError", "serving_default_axes"]


@dataclass(frozen=True)
class FrontierMetric:
    """One axis of a frontier.

    Attributes
    ----------
    name : str
        Name on the command line.
    sense : str
        ``"min"`` or ``"max"``.
    keys : tuple of str
        The ``/scenarios`` keys it is computed from (one for a plain metric).
    label : str
        Human name.
    unit : str
        Shown unit.
    scale : float
        Factor from SI to the shown unit.
    extensive : bool
        True if it grows with the simulated span (divided by days under ``per_day``).
    formula : str
        ``""`` for a plain key; ``"ratio"`` for keys[0] / keys[1] x ``factor``.
    factor : float
        Factor of a ratio.
    """

    name: str
    sense: str
    keys: tuple[str, ...]
    label: str
    unit: str
    scale: float = 1.0
    extensive: bool = False
    formula: str = ""
    factor: float = 1.0

    def values(self, cols: dict[str, np.ndarray], n: int) -> np.ndarray:
        """The metric in SI for ``n`` scenarios (NaN where a key is missing): ndarray, shape (n,)."""
        got = [np.asarray(cols[k], float) if k in cols else np.full(n, np.nan) for k in self.keys]
        if self.formula == "ratio":
            with np.errstate(divide="ignore", invalid="ignore"):
                v = got[0] / got[1] * self.factor
            return np.where(np.isfinite(v), v, np.nan)
        return got[0]

    def axis_label(self, per_day: bool = False) -> str:
        """Axis title with the unit and the sense, e.g. ``facility energy [MWh/day] (lower is better)``."""
        unit = self.unit + ("/day" if per_day and self.extensive else "")
        better = "lower" if self.sense == "min" else "higher"
        return f"{self.label}{f' [{unit}]' if unit else ''} ({better} is better)"


_MWh = 1 / 3.6e9
FRONTIER_METRICS: dict[str, FrontierMetric] = {m.name: m for m in (
    FrontierMetric("wait", "min", ("mean_wait_s",), "mean wait", "h", 1 / 3600),
    FrontierMetric("bounded_slowdown", "min", ("mean_bounded_slowdown",), "mean bounded slowdown", ""),
    FrontierMetric("energy", "min", ("E_facility_J",), "facility energy", "MWh", _MWh, extensive=True),
    FrontierMetric("PUE", "min", ("PUE",), "PUE", ""),
    FrontierMetric("peak_power", "min", ("peak_P_facility_W",), "peak facility power", "MW", 1e-6),
    FrontierMetric("cost", "min", ("grid_cost",), "energy cost", "currency", extensive=True),
    FrontierMetric("CO2", "min", ("grid_co2_t",), "CO2", "t", extensive=True),
    FrontierMetric("water", "min", ("water_makeup_kg",), "make-up water", "m3", 1 / 997.0, extensive=True),
    FrontierMetric("utilisation", "max", ("utilisation",), "utilisation", "%", 100.0),
    FrontierMetric("slo_goodput", "max", ("serving_goodput_req_s",), "SLO goodput", "req/s"),
    FrontierMetric("slo_attainment", "max", ("serving_slo_attainment",), "SLO attainment", "%", 100.0),
    FrontierMetric("tokens_per_s_per_gpu", "max", ("serving_tokens_per_s_per_gpu",), "tokens/s per GPU", "tok/s"),
    FrontierMetric("tokens_per_s_per_user", "max", ("serving_tokens_per_s_per_user",), "tokens/s per user",
                   "tok/s"),
    FrontierMetric("energy_per_token", "min", ("serving_J_per_token_facility",), "facility energy per token", "J"),
    FrontierMetric("tokens_per_MWh", "max", ("serving_output_tokens", "E_facility_J"), "output tokens per MWh",
                   "tok/MWh", formula="ratio", factor=3.6e9),
    FrontierMetric("cost_per_Mtoken", "min", ("grid_cost", "serving_output_tokens"), "cost per million tokens",
                   "currency", formula="ratio", factor=1e6),
)}


def resolve_metric(spec: str, available: set[str] | None = None) -> FrontierMetric:
    """The :class:`FrontierMetric` of a command-line name.

    Parameters
    ----------
    spec : str
        A name of :data:`FRONTIER_METRICS`, its source key (``mean_wait_s``), or ``KEY:min`` / ``KEY:max`` for any
        other ``/scenarios`` key.
    available : set[str] | None
        The sweep's ``/scenarios`` keys, to check a ``KEY:sense`` metric against (None: not checked).

    Returns
    -------
    FrontierMetric
        The axis.

    Raises
    ------
    ValueError
        If the name is unknown, a raw key has no sense, or the key is not in the sweep.
    """
    if spec in FRONTIER_METRICS:
        return FRONTIER_METRICS[spec]
    for m in FRONTIER_METRICS.values():
        if m.formula == "" and m.keys[0] == spec:
            return m
    key, _, sense = spec.rpartition(":")
    if key and sense in ("min", "max"):
        if available is not None and key not in available:
            raise ValueError(f"metric {key!r} is not in the sweep summary (has {', '.join(sorted(available))})")
        return FrontierMetric(key, sense, (key,), key.replace("_", " "), "")
    raise ValueError(f"unknown frontier metric {spec!r}: expected one of {', '.join(FRONTIER_METRICS)}, or "
                     f"KEY:min / KEY:max for another summary key")


def _as_min(F: np.ndarray, senses: list[str]) -> np.ndarray:
    sign = np.array([1.0 if s == "min" else -1.0 for s in senses])
    return np.asarray(F, float) * sign


def nondominated(F: np.ndarray, senses: list[str]) -> np.ndarray:
    """Mask of the non-dominated rows of ``F``.

    Parameters
    ----------
    F : np.ndarray
        Metric values, shape (n, d), one row per scenario (any unit; NaN rows are never on the front).
    senses : list[str]
        ``"min"`` or ``"max"`` per column (length d).

    Returns
    -------
    ndarray of bool, shape (n,)
        True where no other finite row is at least as good on every column and better on one.
    """
    G = _as_min(F, senses)
    ok = np.all(np.isfinite(G), axis=1)
    out = np.zeros(len(G), dtype=bool)
    idx = np.flatnonzero(ok)
    for i in idx:
        P = G[idx]
        dom = np.all(P <= G[i], axis=1) & np.any(P < G[i], axis=1)
        out[i] = not dom.any()
    return out


def knee_index(F: np.ndarray, senses: list[str], front: np.ndarray) -> int:
    """Index of the knee of the front (method in the module docstring), or -1 for an empty front.

    Parameters
    ----------
    F : np.ndarray
        Metric values, shape (n, d).
    senses : list[str]
        Sense of each column.
    front : np.ndarray
        The non-dominated mask, bool, shape (n,) (:func:`nondominated`).

    Returns
    -------
    int
        Row of ``F``: the front point with the smallest sum of normalised minimised objectives (first on ties).
    """
    idx = np.flatnonzero(front)
    if idx.size == 0:
        return -1
    G = _as_min(F, senses)[idx]
    lo, hi = G.min(axis=0), G.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    N = (G - lo) / span
    s = N.sum(axis=1)
    return int(idx[int(np.argmin(s))])


def _hv2(P: np.ndarray, r: np.ndarray) -> float:
    """Exact 2-D hypervolume of points P (n, 2), minimised, against r (2,)."""
    P = P[np.all(P < r, axis=1)]
    if not len(P):
        return 0.0
    P = P[np.lexsort((P[:, 1], P[:, 0]))]
    hv, best_y = 0.0, r[1]
    for x, y in P:
        if y < best_y:
            hv += (r[0] - x) * (best_y - y)
            best_y = y
    return float(hv)


def hypervolume(F: np.ndarray, senses: list[str], ref: np.ndarray) -> float:
    """Exact hypervolume of a set of points against a reference point, in 2 or 3 dimensions.

    Parameters
    ----------
    F : np.ndarray
        Points, shape (n, d) with d in {2, 3} (usually the front; dominated points add nothing). NaN rows are
        ignored.
    senses : list[str]
        Sense of each column.
    ref : np.ndarray
        Reference point in the same units and senses as ``F`` (a maximised axis' reference is its *lowest*
        acceptable value).

    Returns
    -------
    float
        The dominated volume, in the product of the columns' units.

    Raises
    ------
    ValueError
        If d is not 2 or 3, or the reference point has the wrong length or is not finite.
    """
    F = np.asarray(F, float)
    d = F.shape[1] if F.ndim == 2 else 0
    ref = np.asarray(ref, float)
    if d not in (2, 3) or ref.shape != (d,) or not np.all(np.isfinite(ref)):
        raise ValueError(f"hypervolume: needs 2 or 3 metrics and a finite reference point of the same length "
                         f"(got {d} metric(s), reference {ref.tolist()})")
    G = _as_min(F, senses)
    r = _as_min(ref[None, :], senses)[0]
    G = G[np.all(np.isfinite(G), axis=1)]
    if d == 2:
        return _hv2(G, r)
    G = G[np.all(G < r, axis=1)]
    if not len(G):
        return 0.0
    zs = np.unique(G[:, 2])
    hv = 0.0
    for k, z in enumerate(zs):
        z_next = zs[k + 1] if k + 1 < len(zs) else r[2]
        hv += _hv2(G[G[:, 2] <= z][:, :2], r[:2]) * (z_next - z)
    return float(hv)


def default_reference(F: np.ndarray, senses: list[str]) -> np.ndarray:
    """The default hypervolume reference: the nadir of the finite points, pushed 10 % of the range further.

    Parameters
    ----------
    F : np.ndarray
        Every scenario's values, shape (n, d) (NaN rows ignored).
    senses : list[str]
        Sense of each column.

    Returns
    -------
    ndarray, shape (d,)
        In the units and senses of ``F`` (NaN if no row is finite). Where an axis has no range, the push is
        1 % of |nadir| (1 if the nadir is 0).
    """
    G = _as_min(F, senses)
    G = G[np.all(np.isfinite(G), axis=1)]
    if not len(G):
        return np.full(np.shape(F)[1], np.nan)
    nadir, ideal = G.max(axis=0), G.min(axis=0)
    rng = nadir - ideal
    push = np.where(rng > 0, 0.1 * rng, np.where(nadir != 0, 0.01 * np.abs(nadir), 1.0))
    return _as_min((nadir + push)[None, :], senses)[0]


class SpanMismatchError(ValueError):
    """Scenarios of different spans compared without ``per_day``."""


@dataclass
class SweepPoints:
    """The finished scenarios of a sweep summary.

    Attributes
    ----------
    path : Path
        The summary file.
    names : list of str
        Scenario names (status ``done`` only), shape (n,).
    cols : dict of str to ndarray
        Every numeric ``/scenarios`` column, each shape (n,), SI.
    span_s : ndarray, shape (n,)
        Each scenario's span [s] (module docstring).
    serving : bool
        True if the sweep has serving metrics.
    n_not_done : int
        Scenarios left out because they did not finish.
    """

    path: Path
    names: list[str]
    cols: dict[str, np.ndarray]
    span_s: np.ndarray
    serving: bool
    n_not_done: int = 0


def _span_of(config_json: str, serving_span: float) -> float:
    try:
        cfg = json.loads(config_json)
    except (TypeError, ValueError):
        return float("nan")
    if cfg.get("trace", {}).get("enabled", True):
        return float(cfg.get("trace", {}).get("window_days", float("nan"))) * 86400.0
    return float(serving_span)


def load_sweep_points(path: str | Path) -> SweepPoints:
    """Read the finished scenarios of a sweep (``SWEEP_DIR`` or its ``summary.h5``).

    Parameters
    ----------
    path : str | Path
        A sweep folder (holding ``summary.h5``) or the summary file itself.

    Returns
    -------
    SweepPoints
        Scenarios with status ``done``.

    Raises
    ------
    ValueError
        If the file is not a sweep summary (the path and what is missing are named).
    """
    p = Path(path)
    if p.is_dir():
        p = p / "summary.h5"
    if not p.is_file():
        raise ValueError(f"{p}: no sweep summary here (run `hpctwin sweep` first)")
    with h5py.File(p, "r") as f:
        if "scenarios" not in f or "name" not in f["scenarios"]:
            raise ValueError(f"{p}: not a sweep summary (no /scenarios/name)")
        g = f["scenarios"]
        dec = lambda a: [x.decode() if isinstance(x, bytes) else str(x) for x in a]  # noqa: E731
        names = dec(g["name"][()])
        status = dec(g["status"][()]) if "status" in g else ["done"] * len(names)
        cfgs = dec(g["config_json"][()]) if "config_json" in g else ["{}"] * len(names)
        cols = {k: np.asarray(g[k][()], float) for k in g if isinstance(g[k], h5py.Dataset) and g[k].dtype.kind == "f"
                and g[k].shape == (len(names),)}
    keep = np.array([s == "done" for s in status], dtype=bool)
    serv = cols.get("serving_span_s", np.full(len(names), np.nan))
    span = np.array([_span_of(c, s) for c, s in zip(cfgs, serv)])
    return SweepPoints(p, [n for n, k in zip(names, keep) if k], {k: v[keep] for k, v in cols.items()}, span[keep],
                       any(k.startswith("serving_") for k in cols), int((~keep).sum()))


def condition_groups(points: SweepPoints, labels: dict[str, str]) -> list[tuple[str, SweepPoints]]:
    """The scenarios of ``points`` split by condition, sorted by label (one group ``("", points)`` when all share
    one).

    Parameters
    ----------
    points : SweepPoints
        The finished scenarios.
    labels : dict[str, str]
        Scenario name -> condition label (``scheduler_sim.analysis.report.sweep_conditions`` of the summary's
        study file and configurations).

    Returns
    -------
    list of (str, SweepPoints)
        (label, its scenarios); a condition decides nothing, so each gets its own front.
    """
    lab = [labels.get(n, "") for n in points.names]
    distinct = sorted(set(lab))
    if len(distinct) <= 1:
        return [("", points)]
    return [(d, _subset(points, np.array([x == d for x in lab], dtype=bool))) for d in distinct]


def serving_default_axes() -> tuple[str, str, str]:
    """The field's standard serving view: (x, y, colour) = tokens/s per user, tokens/s per GPU, energy per token."""
    return "tokens_per_s_per_user", "tokens_per_s_per_gpu", "energy_per_token"


@dataclass
class Frontier:
    """A computed frontier.

    Attributes
    ----------
    metrics : list of FrontierMetric
        The axes (2 or 3).
    names : list of str
        Scenario names, shape (n,).
    F : ndarray, shape (n, d)
        Values in shown units (per day for extensive metrics when ``per_day``).
    front : ndarray of bool, shape (n,)
        Non-dominated mask.
    knee : int
        Row of the knee (-1 if none).
    ref : ndarray, shape (d,)
        Hypervolume reference point (shown units).
    hv : float
        Hypervolume (product of the shown units).
    per_day : bool
        Whether extensive metrics were divided by the span in days.
    n_left_out : int
        Finished scenarios left out for a NaN on an axis.
    colour : ndarray or None
        Optional colour metric per scenario (shown units), shape (n,).
    colour_metric : FrontierMetric or None
        Its metric.
    notes : list of str
        What the reader must know (spans, left-out scenarios).
    """

    metrics: list[FrontierMetric]
    names: list[str]
    F: np.ndarray
    front: np.ndarray
    knee: int
    ref: np.ndarray
    hv: float
    per_day: bool
    n_left_out: int = 0
    colour: np.ndarray | None = None
    colour_metric: FrontierMetric | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def senses(self) -> list[str]:
        """Sense of each axis."""
        return [m.sense for m in self.metrics]

    def format(self) -> str:
        """The terminal table: every scenario, front membership and knee marked, then the hypervolume line."""
        heads = [m.name + (f" [{m.unit}{'/day' if self.per_day and m.extensive else ''}]" if m.unit else "")
                 for m in self.metrics]
        w = max([8] + [len(n) for n in self.names])
        lines = [f"{'scenario':{w}s}  {'front':5s}  " + "  ".join(f"{h:>18s}" for h in heads)]
        order = sorted(range(len(self.names)), key=lambda i: (not self.front[i], self.F[i, 0]))
        for i in order:
            mark = "knee" if i == self.knee else ("yes" if self.front[i] else "")
            lines.append(f"{self.names[i]:{w}s}  {mark:5s}  " + "  ".join(f"{v:18.6g}" for v in self.F[i]))
        units = " x ".join(
            (m.unit or "1") + ("/day" if self.per_day and m.extensive else "") for m in self.metrics)
        lines.append(f"front {int(self.front.sum())} of {len(self.names)} scenario(s); knee "
                     f"{self.names[self.knee] if self.knee >= 0 else '-'}; hypervolume {self.hv:.6g} [{units}] "
                     f"against reference ({', '.join(f'{v:.6g}' for v in self.ref)})")
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)


def frontier_table(points: SweepPoints, metric_names: list[str], *, per_day: bool = False,
                   ref: list[float] | None = None, colour: str | None = None) -> Frontier:
    """The frontier of a sweep in 2 or 3 metrics.

    Parameters
    ----------
    points : SweepPoints
        The sweep (:func:`load_sweep_points`).
    metric_names : list[str]
        2 or 3 metric names (:func:`resolve_metric`).
    per_day : bool
        Divide extensive metrics by each scenario's span in days (then spans may differ).
    ref : list[float] | None
        Hypervolume reference in shown units (None: :func:`default_reference`).
    colour : str | None
        A metric shown as colour in the plot (not part of the front).

    Returns
    -------
    Frontier
        The computed frontier.

    Raises
    ------
    SpanMismatchError
        If the scenarios' spans differ and ``per_day`` is false (the spans are listed).
    ValueError
        If there are not 2 or 3 metrics, a metric is unknown, the reference has the wrong length, or no scenario has
        finite values on every axis.
    """
    if len(metric_names) not in (2, 3):
        raise ValueError(f"a frontier needs 2 or 3 metrics, got {len(metric_names)}")
    avail = set(points.cols)
    mets = [resolve_metric(m, avail) for m in metric_names]
    n = len(points.names)
    spans = points.span_s
    notes = []
    if n and not per_day:
        finite = spans[np.isfinite(spans)]
        if finite.size and (finite.max() - finite.min()) > 1e-9 * max(finite.max(), 1.0):
            uniq = sorted({round(float(s) / 86400.0, 6) for s in finite})
            raise SpanMismatchError(
                f"{points.path}: scenarios of different spans ({', '.join(f'{u:g}' for u in uniq)} days) cannot be "
                f"compared on totals; give --per-day to divide energy, cost, CO2 and water by each span in days")
    days = spans / 86400.0

    def shown(m: FrontierMetric) -> np.ndarray:
        v = m.values(points.cols, n) * m.scale
        if per_day and m.extensive:
            v = v / days
        return v

    F = np.column_stack([shown(m) for m in mets]) if n else np.zeros((0, len(mets)))
    ok = np.all(np.isfinite(F), axis=1)
    if not ok.any():
        missing = [m.name for m in mets if not np.isfinite(m.values(points.cols, n)).any()]
        raise ValueError(f"{points.path}: no finished scenario has finite values for "
                         f"{', '.join(missing) or ', '.join(m.name for m in mets)} (has "
                         f"{', '.join(sorted(avail))})")
    if (~ok).any():
        notes.append(f"{int((~ok).sum())} finished scenario(s) left out: NaN on an axis "
                     f"({', '.join(nm for nm, o in zip(points.names, ok) if not o)})")
    if points.n_not_done:
        notes.append(f"{points.n_not_done} scenario(s) not finished (failed): not shown")
    names = [nm for nm, o in zip(points.names, ok) if o]
    F = F[ok]
    senses = [m.sense for m in mets]
    front = nondominated(F, senses)
    k = knee_index(F, senses, front)
    if ref is None:
        r = default_reference(F, senses)
        notes.append("hypervolume reference: nadir + 10 % of each axis' range (default)")
    else:
        r = np.asarray(ref, float)
        if r.shape != (len(mets),):
            raise ValueError(f"--ref needs {len(mets)} values (one per metric), got {len(ref)}")
    hv = hypervolume(F[front], senses, r)
    cm = resolve_metric(colour, avail) if colour else None
    cv = None
    if cm is not None:
        cv = cm.values(points.cols, n) * cm.scale
        if per_day and cm.extensive:
            cv = cv / days
        cv = cv[ok]
    if per_day:
        notes.append("extensive metrics (energy, cost, CO2, water) divided by each scenario's span in days")
    return Frontier(mets, names, F, front, k, r, hv, per_day, int((~ok).sum()), cv, cm, notes)


def frontier_csv(fr: Frontier, path: str | Path) -> Path:
    """Write the frontier as CSV: one row per front scenario (sorted by the first axis), then nothing else.

    Columns: ``scenario``, one per metric (``<name>_<unit>``, shown units), ``knee`` (1 on the knee row).
    The file is written atomically.

    Parameters
    ----------
    fr : Frontier
        The frontier.
    path : str | Path
        Output file.

    Returns
    -------
    Path
        The file written.
    """
    from ..io.hdf5 import atomic_write_bytes

    def col(m: FrontierMetric) -> str:
        unit = (m.unit + ("_per_day" if fr.per_day and m.extensive else "")).replace("/", "_per_")
        return m.name + (f"_{unit}" if unit else "")

    rows = [",".join(["scenario", *(col(m) for m in fr.metrics), "knee"])]
    idx = np.flatnonzero(fr.front)
    for i in idx[np.argsort(fr.F[idx, 0], kind="stable")]:
        rows.append(",".join([fr.names[i], *(repr(float(v)) for v in fr.F[i]), "1" if i == fr.knee else "0"]))
    return atomic_write_bytes(Path(path), ("\n".join(rows) + "\n").encode("utf-8"), what="frontier CSV")


def _inside_offsets(ax, X: np.ndarray, Y: np.ndarray) -> list[tuple[float, float, str, str]]:
    """Label offsets (points) and alignment that keep each label inside the axes: labels right of points in the
    left half, left of them in the right half; above in the lower half, below in the upper half.
    """
    x0, x1 = ax.get_xlim()
    y0, y1 = ax.get_ylim()
    out = []
    for x, y in zip(X, Y):
        fx = (x - x0) / (x1 - x0) if x1 > x0 else 0.5
        fy = (y - y0) / (y1 - y0) if y1 > y0 else 0.5
        dx, ha = (5.0, "left") if fx < 0.5 else (-5.0, "right")
        dy, va = (4.0, "bottom") if fy < 0.5 else (-4.0, "top")
        out.append((dx, dy, ha, va))
    return out


def frontier_plot(fr: Frontier, path: str | Path | None = None):
    """The frontier as a figure: front points filled (knee ringed), dominated points grey, labels inside the axes.

    With 3 metrics the third is the colour of the points (its values listed in the colour bar); with a colour
    metric (serving: energy per token) the same. The front of 2 metrics is joined by a step line.

    Parameters
    ----------
    fr : Frontier
        The frontier.
    path : str | Path | None
        If given, the figure is saved there (PNG or SVG by suffix) and closed.

    Returns
    -------
    matplotlib.figure.Figure
        The figure (closed if saved).
    """
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    mx, my = fr.metrics[0], fr.metrics[1]
    X, Y = fr.F[:, 0], fr.F[:, 1]
    C, cm = (fr.F[:, 2], fr.metrics[2]) if len(fr.metrics) == 3 else (fr.colour, fr.colour_metric)
    fig, ax = plt.subplots(figsize=(7.5, 5.2))
    dom = ~fr.front
    ax.scatter(X[dom], Y[dom], color="0.75", edgecolors="0.55", s=36, label="dominated", zorder=2)
    f = np.flatnonzero(fr.front)
    f = f[np.argsort(X[f], kind="stable")]
    if C is not None and np.isfinite(C[f]).any():
        sc = ax.scatter(X[f], Y[f], c=C[f], cmap="viridis", s=60, edgecolors="k", zorder=3, label="non-dominated")
        fig.colorbar(sc, ax=ax, label=cm.axis_label(fr.per_day) if cm else "")
    else:
        ax.scatter(X[f], Y[f], color="#C44E52", s=60, edgecolors="k", zorder=3, label="non-dominated")
    if len(fr.metrics) == 2 and len(f) > 1:
        where = "post" if (mx.sense == "min") == (my.sense == "min") else "pre"
        ax.step(X[f], Y[f], where=where, color="#C44E52", lw=1, alpha=0.7, zorder=1)
    if fr.knee >= 0:
        ax.scatter([X[fr.knee]], [Y[fr.knee]], s=220, facecolors="none", edgecolors="#DD8452", linewidths=2,
                   zorder=4, label="knee")
    ax.set_xlabel(mx.axis_label(fr.per_day))
    ax.set_ylabel(my.axis_label(fr.per_day))
    ax.margins(0.12)
    fig.canvas.draw()  # fixes the limits the label placement reads
    disp = ax.transData.transform(np.column_stack([X, Y])) * 72.0 / fig.dpi  # points
    used: list[tuple[float, float]] = []
    order = sorted(range(len(X)), key=lambda i: (not fr.front[i], i))  # front labels first, nearest the points
    offs = _inside_offsets(ax, X, Y)
    for i in order:
        dx, dy, ha, va = offs[i]
        step = 9.0 if dy > 0 else -9.0
        while any(abs(disp[i, 0] + dx - ux) < 60 and abs(disp[i, 1] + dy - uy) < 8.5 for ux, uy in used):
            dy += step  # stack labels of nearby points instead of printing them over each other
        used.append((disp[i, 0] + dx, disp[i, 1] + dy))
        ax.annotate(fr.names[i], (X[i], Y[i]), textcoords="offset points", xytext=(dx, dy), ha=ha, va=va,
                    fontsize=7, color="0.2" if fr.front[i] else "0.55", annotation_clip=True,
                    arrowprops={"arrowstyle": "-", "color": "0.8", "lw": 0.5} if abs(dy) > 10 else None)
    ax.set_title(f"Frontier: {int(fr.front.sum())} of {len(fr.names)} non-dominated; hypervolume {fr.hv:.4g}",
                 fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
        plt.close(fig)
    return fig


@dataclass
class ReportFrontier:
    """What a sweep report shows of the frontier (:func:`sweep_frontier`).

    Attributes
    ----------
    frontier : Frontier
        The computed frontier.
    figure : matplotlib.figure.Figure
        Its plot (open; the report saves and closes it).
    csv : Path
        The CSV written beside the report.
    caption : str
        Figure caption (axes, knee, hypervolume and reference, any span warning).
    header : tuple of str
        Table header.
    rows : list of tuple
        One row per front scenario.
    """

    frontier: Frontier
    figure: object
    csv: Path
    caption: str
    header: tuple[str, ...]
    rows: list[tuple]


def _subset(pts: SweepPoints, keep: np.ndarray) -> SweepPoints:
    """The scenarios of ``pts`` where ``keep`` (bool, shape (n,)) holds."""
    return replace(pts, names=[n for n, k in zip(pts.names, keep) if k],
                    cols={k: v[keep] for k, v in pts.cols.items()}, span_s=pts.span_s[keep])


def sweep_frontier(summary: str | Path, out_dir: str | Path,
                   conditions: dict[str, str] | None = None, points: SweepPoints | None = None) -> list[ReportFrontier]:
    """The sweep report's frontiers: default axes (batch: wait vs facility energy; serving: tokens/s per user vs
    tokens/s per GPU, energy per token as colour), a CSV in ``out_dir``, the figure and a table, one per condition.

    A condition (weather, trace, growth: an axis that is not a decision) gets its own front: a scenario is only
    compared with scenarios under the same condition, as in the report's Pareto plots. Scenarios of different spans
    are shown per day, and the caption warns (the ``frontier`` command refuses them unless ``--per-day``).

    Parameters
    ----------
    summary : str | Path
        The sweep's ``summary.h5``.
    out_dir : str | Path
        The report folder. One condition: ``frontier.csv``; several: ``frontier_<k>.csv`` for the k-th condition
        in sorted order.
    conditions : dict[str, str] | None
        Condition label per scenario name (``scheduler_sim.analysis.report.sweep_conditions``); None or all labels
        equal: one front.
    points : SweepPoints | None
        The points to draw (an ensemble's scenario means,
        :func:`scheduler_sim.analysis.report.sweep_table.ensemble_mean_points`); None: every finished scenario of
        ``summary``.

    Returns
    -------
    list of ReportFrontier
        One per condition with at least one finished scenario that has both default metrics; empty if none has.
    """
    pts = load_sweep_points(summary) if points is None else points
    labels = [(conditions or {}).get(n, "") for n in pts.names]
    distinct = sorted(set(labels))
    out = []
    for k, label in enumerate(distinct):
        sub = pts if len(distinct) == 1 else _subset(pts, np.array([lb == label for lb in labels], dtype=bool))
        csv_name = "frontier.csv" if len(distinct) == 1 else f"frontier_{k}.csv"
        rf = _one_frontier(sub, Path(out_dir) / csv_name, label if len(distinct) > 1 else "")
        if rf is not None:
            out.append(rf)
    return out


def _one_frontier(pts: SweepPoints, csv_path: Path, condition: str) -> ReportFrontier | None:
    """One report frontier of ``pts`` (see :func:`sweep_frontier`); None when no scenario has both metrics."""
    x, y, c = serving_default_axes() if pts.serving else ("wait", "energy", None)
    warn = ""
    try:
        try:
            fr = frontier_table(pts, [x, y], colour=c)
        except SpanMismatchError as exc:
            fr = frontier_table(pts, [x, y], colour=c, per_day=True)
            warn = f" Warning: {str(exc).split(': ', 1)[-1].split(';')[0]}: shown per day."
    except ValueError:
        return None
    csv = frontier_csv(fr, csv_path)
    fig = frontier_plot(fr)
    if condition:
        fig.axes[0].set_title(condition, fontsize=10)
    knee = fr.names[fr.knee] if fr.knee >= 0 else "-"
    cond = (f" Condition {condition}: this condition has its own front (a condition is not a decision)."
            if condition else "")
    caption = (f"{fr.metrics[1].axis_label(fr.per_day)} against {fr.metrics[0].axis_label(fr.per_day)}: "
               f"{int(fr.front.sum())} of {len(fr.names)} scenario(s) non-dominated (filled; dominated in grey); knee "
               f"{knee} (ringed: smallest sum of objectives normalised over the front); hypervolume {fr.hv:.4g} "
               f"against the reference ({', '.join(f'{v:.4g}' for v in fr.ref)}), the nadir + 10 % of each range. "
               f"The front is in {csv.name}.{cond}{warn}")
    header = ("scenario", *(m.axis_label(fr.per_day).split(" (")[0] for m in fr.metrics), "knee")
    idx = np.flatnonzero(fr.front)
    rows = [(fr.names[i], *(f"{v:.6g}" for v in fr.F[i]), "knee" if i == fr.knee else "")
            for i in idx[np.argsort(fr.F[idx, 0], kind="stable")]]
    return ReportFrontier(fr, fig, csv, caption, header, rows)
