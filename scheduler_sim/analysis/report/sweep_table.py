"""The headline table of a sweep: each scenario's key metrics, for the terminal and the sweep report (issue #28).

One row per scenario of ``summary.h5 /scenarios`` with the columns of :data:`HEADLINE` the sweep has (a column is
left out when no scenario has a finite value in it), each in one shown unit (the schema's table,
:func:`scheduler_sim.analysis.report.catalogue.column_unit`), and a warning when the scenarios simulate different
spans (totals such as energy, cost, CO2 and water are then not comparable: ``hpctwin frontier --per-day``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import h5py
import numpy as np

from .catalogue import column_unit, format_value

__all__ = ["HEADLINE", "HeadlineTable", "headline_table", "span_warning", "ensemble_bands", "band_text",
           "ensemble_mean_points"]

#: Candidate columns, in order: facility, schedule, money and carbon, water, serving.
HEADLINE = ("PUE", "E_facility_J", "peak_P_facility_W", "mean_wait_s", "mean_bounded_slowdown", "utilisation",
            "grid_cost", "grid_co2_t", "water_makeup_kg", "WUE_L_per_kWh", "serving_goodput_req_s",
            "serving_ttft_p99_s", "serving_tokens_per_s_per_gpu", "serving_J_per_token_facility")


@dataclass
class HeadlineTable:
    """The headline table of one sweep.

    Attributes
    ----------
    keys : list of str
        ``/scenarios`` columns shown.
    header : tuple of str
        ``scenario``, ``status``, then ``"<label> [<unit>]"`` per key.
    rows : list of tuple of str
        One per scenario, values formatted in the column's unit.
    warnings : list of str
        Span mismatch and the like, one line each.
    """

    keys: list[str]
    header: tuple[str, ...]
    rows: list[tuple[str, ...]]
    warnings: list[str] = field(default_factory=list)

    def format(self) -> str:
        """Fixed-width text for the terminal: the header, a rule, one line per scenario, then the warnings."""
        cols = list(zip(self.header, *self.rows)) if self.rows else [(h,) for h in self.header]
        widths = [max(len(str(c)) for c in col) for col in cols]
        def line(cells) -> str:
            return "  ".join(f"{c:<{w}s}" if i < 2 else f"{c:>{w}s}" for i, (c, w) in enumerate(zip(cells, widths)))
        out = [line(self.header), "  ".join("-" * w for w in widths)] + [line(r) for r in self.rows]
        return "\n".join(out + [f"WARNING: {w}" for w in self.warnings])


def _dec(a) -> list[str]:
    return [x.decode() if isinstance(x, bytes) else str(x) for x in a]


def span_warning(names: list[str], configs: list[str], serving_span_s: np.ndarray | None = None) -> str | None:
    """A warning naming the spans when scenarios simulate different spans (else None).

    Parameters
    ----------
    names : list[str]
        Scenario names.
    configs : list[str]
        Each scenario's resolved configuration (JSON): ``trace.window_days`` is its span, a serving-only scenario
        (``trace.enabled = false``) uses ``serving_span_s``.
    serving_span_s : np.ndarray | None
        Shape (n,): ``serving_span_s`` of each scenario [s].

    Returns
    -------
    str | None
        One line, e.g. ``"scenarios span different times (1 day: a, b; 2 days: c): ..."``.
    """
    from ..frontier import _span_of

    serv = serving_span_s if serving_span_s is not None else np.full(len(names), np.nan)
    spans = [_span_of(c, s) for c, s in zip(configs, serv)]
    by: dict[float, list[str]] = {}
    for n, s in zip(names, spans):
        if np.isfinite(s):
            by.setdefault(round(s / 86400.0, 6), []).append(n)
    if len(by) <= 1:
        return None
    parts = "; ".join(f"{d:g} day{'s' if d != 1 else ''}: {', '.join(v[:4])}{' ...' if len(v) > 4 else ''}"
                      for d, v in sorted(by.items()))
    return (f"scenarios simulate different spans ({parts}): energy, cost, CO2 and water are totals over each span and "
            f"not comparable as they are (hpctwin frontier --per-day divides them by the span)")


def headline_table(summary: str | Path, members: bool = False) -> HeadlineTable:
    """Read a sweep's ``summary.h5`` and build its headline table.

    When the sweep ran an ensemble (``/ensemble``, :mod:`scheduler_sim.app.ensemble_run`), one row per study
    scenario with each figure as ``mean (5 % .. 95 %)`` over its members (:func:`band_text`), unless ``members``.

    Parameters
    ----------
    summary : str | Path
        The sweep summary file, or the sweep folder holding it.
    members : bool
        With an ensemble, the table of every member (one row per member run) instead of the bands.

    Returns
    -------
    HeadlineTable
        Columns of :data:`HEADLINE` that have a finite value in some scenario.

    Raises
    ------
    ValueError
        If the file is not a sweep summary (no ``/scenarios/name``).
    """
    p = Path(summary)
    if p.is_dir():
        p = p / "summary.h5"
    if not members:
        bands = ensemble_bands(p)
        if bands is not None:
            return _band_table(p, bands)
    with h5py.File(p, "r") as f:
        if "scenarios" not in f or "name" not in f["scenarios"]:
            raise ValueError(f"{p}: not a sweep summary (no /scenarios/name)")
        g = f["scenarios"]
        names = _dec(g["name"][()])
        status = _dec(g["status"][()]) if "status" in g else ["done"] * len(names)
        configs = _dec(g["config_json"][()]) if "config_json" in g else ["{}"] * len(names)
        metrics = {k: np.asarray(g[k][()], float) for k in g
                   if isinstance(g[k], h5py.Dataset) and g[k].dtype.kind == "f" and g[k].shape == (len(names),)}
    keys = [k for k in HEADLINE if k in metrics and np.any(np.isfinite(metrics[k]))]
    shown = {k: column_unit(k, metrics[k]) for k in keys}
    for k in ("grid_cost",):  # the currency is in the configuration, not in the unit table
        if k in shown:
            cur = _currency(configs)
            if cur:
                shown[k] = type(shown[k])(**{**shown[k].__dict__, "unit": cur})
    head = tuple(f"{d.label} [{d.unit}]" if d.unit else d.label for d in shown.values())
    rows = [(n, s, *(format_value(k, metrics[k][i], shown[k]) for k in keys))
            for i, (n, s) in enumerate(zip(names, status))]
    warn = span_warning(names, configs, metrics.get("serving_span_s"))
    return HeadlineTable(keys, ("scenario", "status", *head), rows, [warn] if warn else [])


def _currency(configs: list[str]) -> str:
    """The grid price's currency of the first configuration that names one ("" when none does)."""
    for c in configs:
        try:
            grid = json.loads(c).get("grid") or {}
            cur = grid.get("currency") or (grid.get("price") or {}).get("currency")
        except (TypeError, ValueError, AttributeError):
            continue
        if cur:
            return str(cur)
    return ""


@dataclass
class EnsembleBands:
    """The bands of an ensemble sweep's ``summary.h5 /ensemble``.

    Attributes
    ----------
    scenarios : list of str
        Study scenarios (before expansion into members).
    members : int
        Members per scenario that ran (``n_runs``).
    n_failed : int
        Members that failed.
    stats : dict of str to dict of str to ndarray
        Metric -> ``mean`` / ``p05`` / ``p95`` / ``std`` -> shape (n_scenarios,).
    """

    scenarios: list[str]
    members: int
    n_failed: int
    stats: dict[str, dict[str, np.ndarray]]

    def of(self, scenario: str, metric: str) -> tuple[float, float, float] | None:
        """``(mean, p05, p95)`` of ``metric`` for ``scenario``, or None when the ensemble has no such band."""
        if scenario not in self.scenarios or metric not in self.stats:
            return None
        i, st = self.scenarios.index(scenario), self.stats[metric]
        return float(st["mean"][i]), float(st["p05"][i]), float(st["p95"][i])


def ensemble_bands(summary: str | Path) -> EnsembleBands | None:
    """The ensemble bands of a sweep summary, or None when the sweep ran no ensemble.

    Parameters
    ----------
    summary : str | Path
        ``summary.h5`` of a sweep.

    Returns
    -------
    EnsembleBands or None
        From ``/ensemble/band/<metric>__mean|p05|p95|std``.
    """
    with h5py.File(summary, "r") as f:
        if "ensemble" not in f or "band" not in f["ensemble"]:
            return None
        g = f["ensemble"]
        names = _dec(g["scenario"][()])
        stats: dict[str, dict[str, np.ndarray]] = {}
        for key in g["band"]:
            metric, _, stat = key.rpartition("__")
            stats.setdefault(metric, {})[stat] = np.asarray(g["band"][key][()], float)
        return EnsembleBands(names, int(g.attrs.get("n_runs", g.attrs.get("members", 0))),
                             int(g.attrs.get("n_failed", 0)), stats)


def band_text(metric: str, mean: float, p05: float, p95: float, shown: object = None) -> str:
    """``"mean (p05 .. p95)"`` in the metric's shown unit (the headline figure beside its 5-95 % band).

    Parameters
    ----------
    metric : str
        ``/summary`` key.
    mean : float
        Mean over the members [SI unit].
    p05 : float
        5 % quantile [SI unit].
    p95 : float
        95 % quantile [SI unit].
    shown : object
        The column's unit (:func:`~scheduler_sim.analysis.report.catalogue.column_unit`); None: the metric's own.

    Returns
    -------
    str
        E.g. ``"1.044 (1.039 .. 1.05)"``.
    """
    if shown is None:
        shown = column_unit(metric, np.array([mean, p05, p95]))
    return (f"{format_value(metric, mean, shown)} ({format_value(metric, p05, shown)} .. "
            f"{format_value(metric, p95, shown)})")


def _band_table(p: Path, bands: EnsembleBands) -> HeadlineTable:
    """The headline table of an ensemble: a row per study scenario, each figure with its 5-95 % band."""
    keys = [k for k in HEADLINE if k in bands.stats and np.any(np.isfinite(bands.stats[k].get("mean", np.nan)))]
    shown = {k: column_unit(k, bands.stats[k]["mean"]) for k in keys}
    head = tuple((f"{d.label} [{d.unit}]" if d.unit else d.label) + " mean (5 % .. 95 %)" for d in shown.values())
    rows = [(n, f"{bands.members} members", *(band_text(k, *bands.of(n, k), shown[k]) for k in keys))
            for n in bands.scenarios]
    warn = [f"{bands.n_failed} member(s) failed: their bands leave them out"] if bands.n_failed else []
    return HeadlineTable(keys, ("scenario", "ensemble", *head), rows, warn)


def ensemble_mean_points(summary: str | Path, pts: object, cond: dict[str, str]) -> tuple:
    """With an ensemble (``/ensemble``), the study scenarios at their members' means in place of the members (a
    front over members would set one draw of the inputs against another); without one, the arguments unchanged.

    Parameters
    ----------
    summary : str | Path
        ``summary.h5`` of the sweep.
    pts : object
        The sweep's points, a :class:`scheduler_sim.analysis.frontier.SweepPoints`
        (:func:`scheduler_sim.analysis.frontier.load_sweep_points`).
    cond : dict[str, str]
        Condition label per scenario name of ``pts``.

    Returns
    -------
    tuple
        ``(points, conditions, note)``: the points of the study scenarios (metric = ``/ensemble/band`` mean, span of
        the scenario's member 0), their conditions (those of member 0), and ``" of the ensemble means (N
        members)"``; or ``(pts, cond, "")``.
    """
    from ..frontier import SweepPoints

    bands = ensemble_bands(summary)
    if bands is None:
        return pts, cond, ""
    first = {n: i for i, n in enumerate(pts.names)}
    rows = [first.get(f"{s}_m000") for s in bands.scenarios]
    span = np.array([pts.span_s[i] if i is not None else np.nan for i in rows], dtype=float)
    cols = {m: np.asarray(st["mean"], float) for m, st in bands.stats.items() if "mean" in st}
    names = list(bands.scenarios)
    return (SweepPoints(pts.path, names, cols, span, pts.serving),
            {s: cond.get(f"{s}_m000", "") for s in names}, f" of the ensemble means ({bands.members} members)")
