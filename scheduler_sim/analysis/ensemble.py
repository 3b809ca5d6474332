"""Ensemble statistics: bands, the probability that one scenario beats another, sensitivity indices, and the
"does not matter" rule.

Bands. For each scenario and headline metric over its members: the mean, the standard deviation (ddof = 1), and the
5 % and 95 % quantiles (``numpy.quantile``, linear interpolation: the "5-95 % band"). Failed members (NaN) are left
out and counted.

Ranking robustness. Members share their inputs across scenarios (common random numbers,
:mod:`scheduler_sim.app.uncertainty`), so A and B are compared member by member: ``P(A beats B)`` = the share of
members (finite in both) where A is better than B on the metric, ties counting one half; better is lower unless the
metric is maximised (:data:`scheduler_sim.analysis.frontier.FRONTIER_METRICS` sense; e.g. utilisation).

Sensitivity. From the same members: RBD-FAST first-order indices (Tarantola et al. 2006; Plischke 2010) and the
moment-independent delta indices (Borgonovo 2007; Plischke, Borgonovo & Smith 2013) with SALib, on the design's
unit-cube coordinates. From an opt-in Saltelli design (``design = "saltelli"``, N (2D + 2) runs): Sobol first-order
S1 and total ST indices (Saltelli 2002; Saltelli et al. 2010) with ``SALib.analyze.sobol``. An index of a metric
without variance (every member equal) is NaN, not 0.

Does not matter. Scenarios A and B under the same condition (same weather, seed ...: the sweep's condition axes)
differ by a decision. On a metric, the choice *does not matter here* when ``|mean_A - mean_B|`` is smaller than
the larger of the two band half-widths ``(p95 - p5) / 2`` (the decision moves the metric by less than the inputs'
uncertainty does) *and* the member-by-member differences ``A_k - B_k`` (common inputs) change sign within their
5-95 % band. A pair within the spread whose paired differences keep one sign is reported as a change "by less than
the ensemble spread but in the same direction". The sweep summary then says, per metric and condition, e.g.
"policy choice does not change PUE here", with the numbers (S-RAPS, arXiv 2508.20016, reported exactly this at low
load on Adastra).
"""

from __future__ import annotations

import contextlib
import io
import warnings
from dataclasses import dataclass

import numpy as np

__all__ = ["Band", "band", "beats_matrix", "does_not_matter", "sensitivity_from_members", "sobol_indices",
           "HEADLINE", "sense_of"]

#: The metrics printed on the terminal and checked by the "does not matter" rule (every metric gets a band).
HEADLINE = ("PUE", "E_facility_J", "mean_wait_s", "mean_bounded_slowdown", "peak_P_facility_W", "water_makeup_kg",
            "utilisation", "E_cooling_J")


def sense_of(metric: str) -> str:
    """``"max"`` for a metric maximised in :data:`scheduler_sim.analysis.frontier.FRONTIER_METRICS`, else ``"min"``."""
    from .frontier import FRONTIER_METRICS

    for m in FRONTIER_METRICS.values():
        if m.formula == "" and m.keys[0] == metric:
            return m.sense
    return "min"


@dataclass(frozen=True)
class Band:
    """An ensemble band of one metric.

    Attributes
    ----------
    mean, std, p05, p95 : float
        Mean, standard deviation (ddof = 1), 5 % and 95 % quantiles of the finite members (NaN if none).
    n : int
        Finite members.
    """

    mean: float
    std: float
    p05: float
    p95: float
    n: int

    @property
    def half_width(self) -> float:
        """Half of the 5-95 % band, ``(p95 - p05) / 2``."""
        return 0.5 * (self.p95 - self.p05)


def band(values: np.ndarray) -> Band:
    """The :class:`Band` of one metric's member values (shape (n_members,); NaN members left out)."""
    v = np.asarray(values, float)
    v = v[np.isfinite(v)]
    if not v.size:
        return Band(np.nan, np.nan, np.nan, np.nan, 0)
    q05, q95 = np.quantile(v, [0.05, 0.95])
    return Band(float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else 0.0, float(q05), float(q95), int(v.size))


def beats_matrix(values: np.ndarray, sense: str = "min") -> np.ndarray:
    """``P[a, b]`` = the share of members where scenario a beats scenario b on one metric (ties count 1/2).

    Parameters
    ----------
    values : np.ndarray
        Shape (n_scenarios, n_members): the metric of member k of each scenario (NaN: failed, left out of the
        pairs that involve it).
    sense : str
        ``"min"`` (lower is better) or ``"max"``.

    Returns
    -------
    np.ndarray
        Shape (n_scenarios, n_scenarios); the diagonal is NaN, and ``P[a, b] + P[b, a] = 1`` where defined.
    """
    V = np.asarray(values, float)
    if sense == "max":
        V = -V
    n = V.shape[0]
    P = np.full((n, n), np.nan)
    for a in range(n):
        for b in range(n):
            if a == b:
                continue
            ok = np.isfinite(V[a]) & np.isfinite(V[b])
            if ok.any():
                P[a, b] = float(np.mean((V[a, ok] < V[b, ok]) + 0.5 * (V[a, ok] == V[b, ok])))
    return P


def does_not_matter(names: list[str], groups: list[str], bands: dict[str, list[Band]],
                    choice: str = "policy choice", values: dict[str, np.ndarray] | None = None) -> list[str]:
    """The "does not matter" lines of an ensemble sweep (rule in the module docstring), one per metric and condition.

    Parameters
    ----------
    names : list[str]
        Scenario names.
    groups : list[str]
        Each scenario's condition label ("" when the study has no condition axis).
    bands : dict[str, list[Band]]
        Metric -> one band per scenario.
    choice : str
        What differs between scenarios of a condition (the decision axes), e.g. "policy choice".
    values : dict[str, np.ndarray] | None
        Metric -> member values, shape (n_scenarios, n_members), for the paired check: a pair whose means lie
        within the spread but whose member-by-member differences all keep one sign (the 5-95 % band of
        ``A_k - B_k`` excludes 0) *does* matter, and the line says so.

    Returns
    -------
    list[str]
        For each metric and condition with at least two scenarios: either "<choice> does not change <metric> here
        (<condition>): means differ by at most D, within the ensemble 5-95 % half-width H" or "<choice> changes
        <metric> (<condition>): ..." naming the pair that differs most.
    """
    out = []
    for m, bs in bands.items():
        for g in dict.fromkeys(groups):
            idx = [i for i, gi in enumerate(groups) if gi == g and np.isfinite(bs[i].mean)]
            if len(idx) < 2:
                continue
            pairs = [(abs(bs[i].mean - bs[j].mean), max(bs[i].half_width, bs[j].half_width), i, j)
                     for k, i in enumerate(idx) for j in idx[k + 1:]]
            d, h, i, j = max(pairs, key=lambda p: (p[0] - p[1], p[0]))
            where = f" ({g})" if g else ""
            consistent = [p for p in pairs if p[0] < p[1] and values is not None and _one_sign(values[m], p[2], p[3])]
            label, f = _shown(m)
            if all(p[0] < p[1] for p in pairs) and consistent:
                _, h2, i2, j2 = consistent[0]
                dk = values[m][i2] - values[m][j2]
                lo, hi = np.nanquantile(dk, [0.05, 0.95])
                out.append(f"{choice} changes {label}{where} by less than the ensemble spread ({f(h2)}) but in the "
                           f"same direction in the members: {names[i2]} - {names[j2]} between {f(lo)} and {f(hi)} "
                           f"(5-95 %)")
            elif all(p[0] < p[1] for p in pairs):
                dmax = max(p[0] for p in pairs)
                out.append(f"{choice} does not change {label} here{where}: means differ by at most {f(dmax)}, within "
                           f"the ensemble 5-95 % half-width ({f(h)})")
            else:
                out.append(f"{choice} changes {label}{where}: {names[i]} vs {names[j]} differ by {f(d)}, more than the "
                           f"ensemble 5-95 % half-width {f(h)}")
    return out


def sensitivity_from_members(U: np.ndarray, y: np.ndarray, names: list[str], seed: int = 0,
                             delta: bool = True) -> dict[str, np.ndarray]:
    """RBD-FAST first-order and (optionally) delta indices of one metric from the members of an LHS / Sobol design.

    Parameters
    ----------
    U : np.ndarray
        Shape (n_members, D): the members' unit-cube coordinates of the varied parameters.
    y : np.ndarray
        Shape (n_members,): the metric (NaN members left out).
    names : list[str]
        The D parameter names.
    seed : int
        Seed of the delta method's bootstrap.
    delta : bool
        Also compute the delta indices (SALib's kernel estimates: seconds per metric with 10 bootstrap samples,
        so an ensemble asks for them with ``[uncertainty] delta = true``).

    Returns
    -------
    dict[str, np.ndarray]
        ``rbd_fast_S1``, and with ``delta`` also ``delta``, ``delta_S1`` (each shape (D,)); NaN when the metric has
        no variance or fewer than 8 finite members.
    """
    from SALib.analyze import delta as sa_delta
    from SALib.analyze import rbd_fast

    D = len(names)
    y = np.asarray(y, float)
    ok = np.isfinite(y)
    nan = {k: np.full(D, np.nan) for k in (("rbd_fast_S1", "delta", "delta_S1") if delta else ("rbd_fast_S1",))}
    if D == 0 or ok.sum() < 8 or np.ptp(y[ok]) <= 1e-12 * max(abs(float(np.mean(y[ok]))), 1e-300):
        return nan
    problem = {"num_vars": D, "names": list(names), "bounds": [[0.0, 1.0]] * D}
    X, Y = np.asarray(U, float)[ok], y[ok]
    out = dict(nan)
    try:
        r = rbd_fast.analyze(problem, X, Y, M=min(10, max(1, (len(Y) - 1) // 2 - 1)), print_to_console=False,
                             seed=seed)
        out["rbd_fast_S1"] = np.asarray(r["S1"], float)
    except (ValueError, ZeroDivisionError, IndexError):
        pass
    if not delta:
        return out
    try:
        # SALib >= 1.5 prints notes on its bin merges to stdout and as warnings: kept off the sweep's output
        # SALib's delta draws part of its resampling from numpy's global generator whatever its ``seed`` (seen
        # with SALib 1.5: the same members gave delta 0.45-0.57 by the process's earlier draws), so the global
        # state is seeded here and given back: the indices depend on the members and ``seed`` only
        state = np.random.get_state()
        try:
            np.random.seed(seed)
            with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
                warnings.simplefilter("ignore")
                r = sa_delta.analyze(problem, X, Y, num_resamples=10, print_to_console=False, seed=seed)
        finally:
            np.random.set_state(state)
        d = r["delta"] if "delta" in r else r["delta_balanced"]  # SALib < 1.5 / >= 1.5 (balanced bins)
        out["delta"], out["delta_S1"] = np.asarray(d, float), np.asarray(r["S1"], float)
    except (ValueError, ZeroDivisionError, IndexError, KeyError, np.linalg.LinAlgError):
        pass
    return out


def sobol_indices(y: np.ndarray, names: list[str], seed: int = 0) -> dict[str, np.ndarray]:
    """Sobol first-order and total indices of one metric from a Saltelli design (N (2D + 2) members, SALib order).

    Parameters
    ----------
    y : np.ndarray
        Shape (N (2D + 2),): the metric of the members in the order of ``SALib.sample.sobol.sample`` with
        second-order terms.
    names : list[str]
        The D parameter names.
    seed : int
        Seed of SALib's bootstrap confidence intervals.

    Returns
    -------
    dict[str, np.ndarray]
        ``sobol_S1``, ``sobol_ST``, ``sobol_S1_conf``, ``sobol_ST_conf`` (each shape (D,)); NaN when a member
        failed or the metric has no variance.
    """
    from SALib.analyze import sobol as sa_sobol

    D = len(names)
    y = np.asarray(y, float)
    nan = {k: np.full(D, np.nan) for k in ("sobol_S1", "sobol_ST", "sobol_S1_conf", "sobol_ST_conf")}
    if not np.all(np.isfinite(y)) or np.ptp(y) <= 1e-12 * max(abs(float(np.mean(y))), 1e-300):
        return nan
    problem = {"num_vars": D, "names": list(names), "bounds": [[0.0, 1.0]] * D}
    r = sa_sobol.analyze(problem, y, calc_second_order=True, print_to_console=False, seed=seed)
    return {"sobol_S1": np.asarray(r["S1"], float), "sobol_ST": np.asarray(r["ST"], float),
            "sobol_S1_conf": np.asarray(r["S1_conf"], float), "sobol_ST_conf": np.asarray(r["ST_conf"], float)}


def _one_sign(V: np.ndarray, a: int, b: int) -> bool:
    """True when the 5-95 % band of the paired member differences ``V[a] - V[b]`` excludes 0."""
    d = np.asarray(V[a], float) - np.asarray(V[b], float)
    d = d[np.isfinite(d)]
    if d.size < 2:
        return False
    lo, hi = np.quantile(d, [0.05, 0.95])
    return bool(lo > 0 or hi < 0)


def _shown(metric: str):
    """(human label, formatter in the shown unit) of a metric, e.g. ("facility energy", 1.2e10 -> "3.333 MWh")."""
    from .report.catalogue import describe

    d = describe(metric)
    unit = f" {d.unit}" if d.unit else ""
    return d.label, lambda v: f"{v * d.scale:.4g}{unit}"
