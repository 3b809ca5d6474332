"""Grid signals as step functions of simulation time, and their exact integration against power step functions.

A grid signal (carbon intensity [kg CO2eq / J], price [currency / J]) is piecewise constant: ``v[i]`` on
``[b[i], b[i+1])`` [s of simulation time]. Where the source has no value (a gap, or outside its span) the constant
``fallback`` holds, and every integral also reports how much of it used the fallback.

Exactness: the integral of a product of two step functions is the sum over the common refinement of their
breakpoints of (length x value x value); :func:`interval_means` and :func:`integrate_steps` compute exactly that
(no sampling). A run's facility power is recorded as a step function on its output intervals (each value the
exact average of the event-level power over the interval, :mod:`scheduler_sim.kernel.recorder`), so the cost of
the run is exact for that step function; it equals the integral against the event-level power whenever every
output interval lies inside one signal step (:func:`straddling_intervals` counts those that do not).
"""

from __future__ import annotations

import dataclasses

import numpy as np

__all__ = ["StepSignal", "interval_means", "integrate_steps", "straddling_intervals"]


@dataclasses.dataclass(frozen=True)
class StepSignal:
    """A piecewise-constant signal of simulation time with a constant fallback.

    Attributes
    ----------
    edges_s : ndarray of float64, shape (n + 1,)
        Increasing step boundaries [s]; step ``i`` is ``[edges_s[i], edges_s[i+1])``.
    values : ndarray of float64, shape (n,)
        Value per step (SI per J); NaN where the source has none (the fallback is used there).
    fallback : float
        Value used in NaN steps and outside ``[edges_s[0], edges_s[-1])``.
    kind : str
        ``"carbon"`` or ``"price"`` (labels only).
    """

    edges_s: np.ndarray
    values: np.ndarray
    fallback: float
    kind: str = ""

    def __post_init__(self) -> None:
        """Check shapes and order.

        Raises
        ------
        ValueError
            If ``edges_s`` is not one longer than ``values``, not strictly increasing, or the fallback is not finite.
        """
        e = np.asarray(self.edges_s, dtype=float)
        v = np.asarray(self.values, dtype=float)
        if e.ndim != 1 or v.ndim != 1 or e.size != v.size + 1:
            raise ValueError(f"edges_s must have one more entry than values, got {e.shape} and {v.shape}")
        if e.size > 1 and not np.all(np.diff(e) > 0):
            raise ValueError("edges_s must be strictly increasing")
        if not np.isfinite(self.fallback):
            raise ValueError(f"fallback must be finite, got {self.fallback}")
        object.__setattr__(self, "edges_s", e)
        object.__setattr__(self, "values", v)

    @classmethod
    def constant(cls, value: float, kind: str = "") -> "StepSignal":
        """A signal equal to ``value`` everywhere (only the fallback)."""
        return cls(np.zeros(1), np.zeros(0), float(value), kind)

    def _refined(self, a: float, b: float):
        """Pieces of ``[a, b)``: (starts, ends, value, used_fallback) over the signal's steps and its outside."""
        e = self.edges_s
        inner = e[(e > a) & (e < b)]
        cuts = np.concatenate(([a], inner, [b]))
        s, t = cuts[:-1], cuts[1:]
        mid = 0.5 * (s + t)
        i = np.searchsorted(e, mid, side="right") - 1
        inside = (i >= 0) & (i < self.values.size)
        v = np.where(inside, self.values[np.clip(i, 0, max(self.values.size - 1, 0))] if self.values.size
                     else np.nan, np.nan)
        fb = ~np.isfinite(v)
        return s, t, np.where(fb, self.fallback, v), fb

    def value_at(self, t_s: np.ndarray | float) -> np.ndarray:
        """Value in force at times ``t_s`` (steps are closed on the left) [SI per J]."""
        t = np.atleast_1d(np.asarray(t_s, dtype=float))
        i = np.searchsorted(self.edges_s, t, side="right") - 1
        ok = (i >= 0) & (i < self.values.size)
        v = np.full(t.shape, np.nan)
        if self.values.size:
            v[ok] = self.values[i[ok]]
        return np.where(np.isfinite(v), v, self.fallback)

    def integral(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Exact integral of the signal over ``[a, b)`` for arrays of bounds (0 where ``b <= a``) [SI per J x s].

        From the cumulative integral at the step edges, which is linear between edges (fallback slope outside).
        """
        e = self.edges_s
        v = np.where(np.isfinite(self.values), self.values, self.fallback)
        F = np.concatenate(([0.0], np.cumsum(v * np.diff(e))))

        def at(t):
            t = np.asarray(t, dtype=float)
            return np.where(t < e[0], (t - e[0]) * self.fallback,
                            np.where(t > e[-1], F[-1] + (t - e[-1]) * self.fallback, np.interp(t, e, F)))

        a = np.asarray(a, dtype=float)
        b = np.asarray(b, dtype=float)
        ok = np.isfinite(a) & np.isfinite(b) & (b > a)
        return np.where(ok, at(np.where(ok, b, 0.0)) - at(np.where(ok, a, 0.0)), 0.0)

    def mean_over(self, a: float, b: float) -> float:
        """Exact mean of the signal over ``[a, b)`` (``b > a``) [SI per J]; its value at ``a`` when ``b <= a``."""
        if not b > a:
            return float(self.value_at(a)[0])
        s, t, v, _ = self._refined(a, b)
        return float(np.sum((t - s) * v) / (b - a))


def interval_means(sig: StepSignal, t0_s: float, dt_s: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact means of ``sig`` over ``n`` intervals ``[t0 + k dt, t0 + (k+1) dt)``, and the fallback share of each.

    Parameters
    ----------
    sig : StepSignal
        The signal.
    t0_s : float
        Start of interval 0 [s].
    dt_s : float
        Interval length [s] (> 0).
    n : int
        Number of intervals (>= 0).

    Returns
    -------
    mean : ndarray, shape (n,)
        ``(1/dt) * integral of sig over interval k``.
    fallback_share : ndarray, shape (n,)
        Fraction of each interval's time under the fallback value, in [0, 1].

    Raises
    ------
    ValueError
        If ``dt_s <= 0`` or ``n < 0``.
    """
    if not dt_s > 0 or n < 0:
        raise ValueError(f"need dt_s > 0 and n >= 0, got {dt_s}, {n}")
    if n == 0:
        return np.zeros(0), np.zeros(0)
    edges = t0_s + np.arange(n + 1) * dt_s  # t0 + k dt from the integer count (no drift)
    a, b = float(edges[0]), float(edges[-1])
    # common refinement of the interval edges and the signal edges: each piece lies in one interval and one step
    cuts = np.unique(np.concatenate((edges, sig.edges_s[(sig.edges_s > a) & (sig.edges_s < b)])))
    ps, pt = cuts[:-1], cuts[1:]
    pmid = 0.5 * (ps + pt)
    pv = sig.value_at(pmid)
    j = np.searchsorted(sig.edges_s, pmid, side="right") - 1
    inside = (j >= 0) & (j < sig.values.size)
    raw = np.full(pmid.shape, np.nan)
    if sig.values.size:
        raw[inside] = sig.values[j[inside]]
    pfb = ~np.isfinite(raw)
    k = np.clip(np.searchsorted(edges, pmid, side="right") - 1, 0, n - 1)
    w = pt - ps
    mean = np.bincount(k, weights=w * pv, minlength=n) / dt_s
    share = np.bincount(k, weights=w * pfb, minlength=n) / dt_s
    return mean, share


def integrate_steps(t_edges_s: np.ndarray, power_W: np.ndarray, sig: StepSignal) -> tuple[float, float, float]:
    """Exact integral of (power step function) x (signal step function) [SI: kg or currency].

    Parameters
    ----------
    t_edges_s : np.ndarray
        Increasing boundaries of the power steps [s], shape (m + 1,).
    power_W : np.ndarray
        Power on each step [W], shape (m,).
    sig : StepSignal
        The signal.

    Returns
    -------
    total : float
        ``sum over pieces of P x s x length`` [kg or currency].
    energy_J : float
        ``integral of P`` [J].
    energy_fallback_J : float
        Energy drawn while the signal was at its fallback [J].

    Raises
    ------
    ValueError
        If the shapes do not match or the edges do not increase.
    """
    e = np.asarray(t_edges_s, dtype=float)
    p = np.asarray(power_W, dtype=float)
    if e.ndim != 1 or e.size != p.size + 1 or (e.size > 1 and not np.all(np.diff(e) > 0)):
        raise ValueError("t_edges_s must be increasing and one longer than power_W")
    if p.size == 0:
        return 0.0, 0.0, 0.0
    cuts = np.unique(np.concatenate((e, sig.edges_s[(sig.edges_s > e[0]) & (sig.edges_s < e[-1])])))
    ps, pt = cuts[:-1], cuts[1:]
    mid = 0.5 * (ps + pt)
    k = np.searchsorted(e, mid, side="right") - 1
    P = p[k]
    v = sig.value_at(mid)
    j = np.searchsorted(sig.edges_s, mid, side="right") - 1
    inside = (j >= 0) & (j < sig.values.size)
    raw = np.full(mid.shape, np.nan)
    if sig.values.size:
        raw[inside] = sig.values[j[inside]]
    w = pt - ps
    E = P * w
    return float(np.sum(E * v)), float(np.sum(E)), float(np.sum(E[~np.isfinite(raw)]))


def straddling_intervals(sig: StepSignal, t0_s: float, dt_s: float, n: int) -> int:
    """Number of output intervals that contain a signal step boundary strictly inside them.

    In those intervals the recorded power (an interval average) is multiplied by the signal's interval mean, so
    the run's cost there is exact only if power is constant within the interval; elsewhere it is exact for any
    event-level power. Zero when the interval divides the signal step and the run starts on a step boundary.
    """
    if n <= 0:
        return 0
    e = sig.edges_s
    inner = e[(e > t0_s) & (e < t0_s + n * dt_s)]
    if inner.size == 0:
        return 0
    off = (inner - t0_s) / dt_s
    on_edge = np.abs(off - np.rint(off)) <= 1e-9 * np.maximum(1.0, np.abs(off))
    return int(np.unique(np.floor(off[~on_edge])).size)
