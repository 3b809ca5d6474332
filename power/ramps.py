"""Fast facility power dynamics: exact bin averages of step functions and periodic job profiles, ramp statistics
and the spectral amplitude at a training period.

Facility power between scheduler events is a step function; a synchronous training job adds a periodic square
wave on top (compute phase at ``high_W``, communication phase at ``low_W`` per node, duty = compute share of the
period). Neither is sampled: every bin average below is the exact integral of the step function or of the square
wave over the bin divided by its length (the square wave through its closed-form antiderivative), so a 1 s
series of a week costs ~6e5 values, not one event per phase change.

Ramp statistic (issue #15): the ramp over a window of length ``D`` is the largest change between consecutive
``D``-averages of facility power, ``max_i |mean(P on [t0+(i+1)D, t0+(i+2)D)) - mean(P on [t0+iD, t0+(i+1)D))|``
[W], over the complete windows of the span (an incomplete last window is left out).

SI units: s, W, J.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["PeriodicProfile", "PhaseProfile", "step_bin_means", "kink_bin_means", "ramped_steps", "windowed_amplitude",
           "square_wave_integral", "add_periodic_bins", "window_means", "max_ramp", "ramp_statistics",
           "fundamental_amplitude"]


@dataclass(frozen=True)
class PeriodicProfile:
    """A job's periodic node power: ``high_W`` for ``duty * period_s`` from each period's start, else ``low_W``.

    The period starts when the job starts (the phases of a synchronous data-parallel step: compute, then the
    all-reduce communication phase). With a GPU power floor ``floor_W`` the low phase is raised to it
    (``max(low_W, floor_W)``): the mitigation that keeps power up in communication phases at the cost of energy.

    Attributes
    ----------
    period_s : float
        Period [s] (> 0).
    duty : float
        Share of the period at high power, in [0, 1].
    low_W, high_W : float
        Node DC power in the two phases [W], 0 <= low_W <= high_W.
    floor_W : float
        Node power floor [W] (0 = none).

    Raises
    ------
    ValueError
        If a field is out of range.
    """

    period_s: float
    duty: float
    low_W: float
    high_W: float
    floor_W: float = 0.0

    def __post_init__(self) -> None:
        """Check the fields."""
        if not (self.period_s > 0 and math.isfinite(self.period_s)):
            raise ValueError(f"power profile period_s must be a finite number > 0, got {self.period_s!r}")
        if not (0.0 <= self.duty <= 1.0):
            raise ValueError(f"power profile duty must be in [0, 1], got {self.duty!r}")
        if not (0.0 <= self.low_W <= self.high_W):
            raise ValueError(f"power profile needs 0 <= low_W <= high_W, got low_W={self.low_W!r}, "
                             f"high_W={self.high_W!r}")
        if not (self.floor_W >= 0.0):
            raise ValueError(f"power profile floor_W must be >= 0, got {self.floor_W!r}")

    @property
    def low_eff_W(self) -> float:
        """Low-phase node power after the floor [W]: ``min(max(low_W, floor_W), high_W)``."""
        return min(max(self.low_W, self.floor_W), self.high_W)

    @property
    def mean_W(self) -> float:
        """Mean node power over a period [W]: ``duty * high_W + (1 - duty) * low_eff_W``."""
        return self.duty * self.high_W + (1.0 - self.duty) * self.low_eff_W

    def integral(self, tau_s: np.ndarray) -> np.ndarray:
        """Energy per node from the period start over ``[0, tau]`` [J]: :func:`square_wave_integral`.

        Parameters
        ----------
        tau_s : np.ndarray
            Times since the job start [s] (>= 0).

        Returns
        -------
        ndarray of float64
            Same shape as ``tau_s``.
        """
        return square_wave_integral(tau_s, self)


@dataclass(frozen=True)
class PhaseProfile:
    """A periodic step function of any number of phases: ``power_W[i]`` for ``durations_s[i]``, in order, from
    each period's start (a training iteration: compute, pipeline bubble, exposed communication; issue #24).

    Everything is closed form: the integral over ``[0, tau]`` (:meth:`integral`), the complex Fourier coefficient
    of harmonic ``k`` (:meth:`fourier`), and the largest change between consecutive ``D``-means
    (:meth:`max_ramp_W`). The two-phase :class:`PeriodicProfile` is the case ``(duty T, (1 - duty) T)``.

    Attributes
    ----------
    durations_s : tuple of float
        Phase lengths [s] (>= 0, sum > 0).
    power_W : tuple of float
        Phase powers [W] (>= 0).

    Raises
    ------
    ValueError
        If the lengths and powers differ in number, a value is negative or the period is not > 0.
    """

    durations_s: tuple
    power_W: tuple

    def __post_init__(self) -> None:
        """Check the phases."""
        d = np.asarray(self.durations_s, dtype=float)
        p = np.asarray(self.power_W, dtype=float)
        if d.shape != p.shape or d.ndim != 1 or d.size == 0:
            raise ValueError(f"phase profile: {d.size} durations and {p.size} powers; expected as many, >= 1")
        if np.any(d < 0) or not np.isfinite(d).all() or not d.sum() > 0 or np.any(p < 0) or not np.isfinite(p).all():
            raise ValueError(f"phase profile: durations must be >= 0 with a sum > 0 and powers >= 0, got "
                             f"{list(d)} s and {list(p)} W")

    @property
    def period_s(self) -> float:
        """Period [s], the sum of the phase lengths."""
        return float(np.sum(self.durations_s))

    @property
    def mean_W(self) -> float:
        """Exact mean over a period [W]: ``sum(P_i d_i) / T``."""
        return float(np.dot(self.durations_s, self.power_W)) / self.period_s

    def integral(self, tau_s: np.ndarray) -> np.ndarray:
        """Energy from the period start over ``[0, tau]`` [J]: whole periods times ``T mean``, plus the partial
        period through the cumulative phase energies.

        Parameters
        ----------
        tau_s : np.ndarray
            Times since the start [s] (>= 0), any shape.

        Returns
        -------
        ndarray of float64
            Same shape as ``tau_s``.
        """
        d = np.asarray(self.durations_s, dtype=float)
        p = np.asarray(self.power_W, dtype=float)
        T = self.period_s
        edges = np.concatenate(([0.0], np.cumsum(d)))
        cum = np.concatenate(([0.0], np.cumsum(d * p)))
        tau = np.asarray(tau_s, dtype=float)
        k = np.floor(tau / T)
        r = np.clip(tau - k * T, 0.0, T)
        i = np.clip(np.searchsorted(edges, r, side="right") - 1, 0, d.size - 1)
        return k * cum[-1] + cum[i] + (r - edges[i]) * p[i]

    def fourier(self, k: int) -> complex:
        """Complex Fourier coefficient ``c_k = (1/T) int_0^T P(t) exp(-2 pi i k t / T) dt`` [W] (closed form).

        For a phase ``[a, b)`` at ``P``: ``P (exp(-i w a) - exp(-i w b)) / (i w T)``, ``w = 2 pi k / T``; the
        amplitude of harmonic ``k >= 1`` of the real signal is ``2 |c_k|``.

        Parameters
        ----------
        k : int
            Harmonic (0 gives the mean).

        Returns
        -------
        complex
        """
        if k == 0:
            return complex(self.mean_W)
        d = np.asarray(self.durations_s, dtype=float)
        p = np.asarray(self.power_W, dtype=float)
        T = self.period_s
        a = np.concatenate(([0.0], np.cumsum(d)[:-1]))
        b = a + d
        w = 2.0 * math.pi * k / T
        return complex(np.sum(p * (np.exp(-1j * w * a) - np.exp(-1j * w * b))) / (1j * w * T))

    def max_ramp_W(self, window_s: float) -> float:
        """Largest change between consecutive ``window_s``-means of the periodic signal, over every phase of the
        window grid (closed form) [W].

        ``g(t) = (W(t + 2D) - 2 W(t + D) + W(t)) / D`` is piecewise linear in ``t`` with kinks where ``t``,
        ``t + D`` or ``t + 2D`` crosses a phase edge, so its extremes over one period are at those points.

        Parameters
        ----------
        window_s : float
            ``D`` [s] (> 0).

        Returns
        -------
        float
            ``max_t |g(t)|`` [W].
        """
        D = float(window_s)
        T = self.period_s
        edges = np.concatenate(([0.0], np.cumsum(self.durations_s)))[:-1]
        cand = np.concatenate([(edges - s) % T for s in (0.0, D, 2.0 * D)])
        g = (self.integral(cand + 2 * D) - 2.0 * self.integral(cand + D) + self.integral(cand)) / D
        return float(np.max(np.abs(g)))


def step_bin_means(edges_s: np.ndarray, deltas_W: np.ndarray, t0_s: float, dt_s: float, n: int) -> np.ndarray:
    """Exact bin averages of a step function given as jumps: ``f(t) = sum(deltas_W[i] for edges_s[i] <= t)``.

    Parameters
    ----------
    edges_s : np.ndarray
        Times of the jumps [s], float64 of shape (m,), any order.
    deltas_W : np.ndarray
        Jump sizes [W], shape (m,).
    t0_s : float
        Start of the first bin [s].
    dt_s : float
        Bin length [s].
    n : int
        Number of bins.

    Returns
    -------
    ndarray of float64, shape (n,)
        Mean of ``f`` over ``[t0 + k dt, t0 + (k + 1) dt)`` [W].
    """
    e = np.asarray(edges_s, dtype=float) - t0_s  # times from the first bin (keeps the products small)
    d = np.asarray(deltas_W, dtype=float)
    grid = dt_s * np.arange(n + 1)
    t0_s = 0.0
    # integral of f from t0 to each grid point: sum_i d_i * max(0, t - max(e_i, t0)), plus f(t0) * (t - t0)
    before = e <= t0_s
    out = np.full(n, float(d[before].sum()))
    late = ~before
    if late.any():
        e2, d2 = e[late], d[late]
        o = np.argsort(e2, kind="stable")
        e2, d2 = e2[o], d2[o]
        cd = np.concatenate(([0.0], np.cumsum(d2)))
        ced = np.concatenate(([0.0], np.cumsum(d2 * e2)))
        idx = np.searchsorted(e2, grid, side="right")  # jumps at or before each grid point
        integ = cd[idx] * grid - ced[idx]  # sum over active jumps of d_i (t - e_i)
        out += np.diff(integ) / dt_s
    return out


def kink_bin_means(edges_s: np.ndarray, slopes_W_per_s: np.ndarray, t0_s: float, dt_s: float, n: int) -> np.ndarray:
    """Exact bin averages of a piecewise-linear function given as slope changes: ``f(t) = sum c_i (t - e_i)_+``.

    Parameters
    ----------
    edges_s : np.ndarray
        Times of the slope changes [s], shape (m,), any order.
    slopes_W_per_s : np.ndarray
        Slope changes ``c_i`` [W/s], shape (m,).
    t0_s : float
        Start of the first bin [s].
    dt_s : float
        Bin length [s].
    n : int
        Number of bins.

    Returns
    -------
    ndarray of float64, shape (n,)
        Mean of ``f`` over each bin [W]: ``(F(b) - F(a)) / dt`` with ``F(t) = sum c_i (t - e_i)_+^2 / 2``.
    """
    e = np.asarray(edges_s, dtype=float) - t0_s
    c = np.asarray(slopes_W_per_s, dtype=float)
    grid = dt_s * np.arange(n + 1)
    if e.size == 0:
        return np.zeros(n)
    o = np.argsort(e, kind="stable")
    e, c = e[o], c[o]
    c0 = np.concatenate(([0.0], np.cumsum(c)))
    c1 = np.concatenate(([0.0], np.cumsum(c * e)))
    c2 = np.concatenate(([0.0], np.cumsum(c * e * e)))
    idx = np.searchsorted(e, grid, side="right")
    F = 0.5 * (c0[idx] * grid * grid - 2.0 * c1[idx] * grid + c2[idx])
    return np.diff(F) / dt_s


def ramped_steps(start_s: np.ndarray, end_s: np.ndarray, power_W: np.ndarray, ramp_W_per_s: float
                 ) -> tuple[np.ndarray, np.ndarray, float, float]:
    """Slope changes of jobs whose power ramps in at ``ramp_W_per_s`` after their start (soft start) and ramps
    down at the same rate after their end (the nodes held at a decaying filler load), instead of stepping.

    A job of power ``m`` ramps for ``T = m / r`` (or its whole run when shorter, reaching ``r * run``). Start:
    slope ``+r`` at ``s``, ``-r`` at ``s + T``; end: ``-r`` at ``e``, ``+r`` at ``e + T``. Assumption: the job's
    run time is unchanged by its soft start (its work in the ramp is not modelled).

    Parameters
    ----------
    start_s : np.ndarray
        Job (attempt) starts [s], shape (k,).
    end_s : np.ndarray
        Their ends [s], shape (k,).
    power_W : np.ndarray
        Their power above idle [W] (> 0 are ramped; others are left out).
    ramp_W_per_s : float
        Ramp rate [W/s] (> 0).

    Returns
    -------
    tuple of (ndarray, ndarray, float, float)
        Slope-change times and slopes for :func:`kink_bin_means`, the energy the soft starts did not draw
        (``sum m T - r T^2 / 2``) and the energy the ramp-downs added (``sum L^2 / (2 r)``, ``L = r T`` the level
        reached) [J].
    """
    s = np.asarray(start_s, float)
    e = np.asarray(end_s, float)
    m = np.asarray(power_W, float)
    ok = m > 0
    s, e, m = s[ok], e[ok], m[ok]
    r = float(ramp_W_per_s)
    T = np.minimum(m / r, np.maximum(e - s, 0.0))
    L = r * T
    deficit = float((m * T - 0.5 * r * T * T).sum())  # m^2 / (2 r) for a full ramp; m run - r run^2 / 2 if shorter
    filler = float((L * L / (2 * r)).sum())
    times = np.concatenate([s, s + T, e, e + T])
    slopes = np.concatenate([np.full(s.size, r), np.full(s.size, -r), np.full(s.size, -r), np.full(s.size, r)])
    return times, slopes, deficit, filler


def windowed_amplitude(x_W: np.ndarray, dt_s: float, period_s: float, window_s: float) -> np.ndarray:
    """:func:`fundamental_amplitude` in consecutive windows of ``window_s`` (whole periods each) [W].

    Over a long series the phases of jobs that started at different times cancel; the amplitude within a window
    of a few minutes is what a utility or a generator sees.

    Parameters
    ----------
    x_W : np.ndarray
        Bin means [W], shape (n,).
    dt_s : float
        Bin [s].
    period_s : float
        Period [s].
    window_s : float
        Window [s], a whole multiple of ``period_s`` and of ``dt_s``.

    Returns
    -------
    ndarray of float64, shape (n // (window_s / dt_s),)
        Amplitude in each complete window [W].

    Raises
    ------
    ValueError
        If the window is not a whole number of periods and of bins.
    """
    m = window_s / dt_s
    kp = window_s / period_s
    if abs(m - round(m)) > 1e-9 * m or abs(kp - round(kp)) > 1e-9 * kp or round(m) < 2:
        raise ValueError(f"window {window_s} s must hold whole periods ({period_s} s) and whole bins ({dt_s} s)")
    m = int(round(m))
    k = x_W.size // m
    if k == 0:
        return np.zeros(0)
    X = np.asarray(x_W[:k * m], dtype=float).reshape(k, m)
    X = X - X.mean(axis=1, keepdims=True)
    ph = np.exp(-2j * math.pi * np.arange(m) * dt_s / period_s)
    return 2.0 / m * np.abs(X @ ph)


def square_wave_integral(tau_s: np.ndarray, prof: PeriodicProfile) -> np.ndarray:
    """Integral of the profile's node power from its period start over ``[0, tau]`` [J] (closed form).

    ``W(tau) = floor(tau/T) (d T high + (1-d) T low) + min(r, d T) high + max(r - d T, 0) low``, ``r = tau mod T``.

    Parameters
    ----------
    tau_s : np.ndarray
        Times since the job start [s] (>= 0), float64 of any shape.
    prof : PeriodicProfile
        The profile (the floor applied to the low phase).

    Returns
    -------
    ndarray of float64
        Energy per node [J], same shape as ``tau_s``.
    """
    T, d = prof.period_s, prof.duty
    hi, lo = prof.high_W, prof.low_eff_W
    tau = np.asarray(tau_s, dtype=float)
    k = np.floor(tau / T)
    r = tau - k * T
    return k * (d * T * hi + (1.0 - d) * T * lo) + np.minimum(r, d * T) * hi + np.maximum(r - d * T, 0.0) * lo


def add_periodic_bins(out_W: np.ndarray, t0_s: float, dt_s: float, start_s: float, end_s: float,
                      prof: "PeriodicProfile | PhaseProfile", scale: float) -> None:
    """Add ``scale * (profile - its mean)`` on ``[start_s, end_s)`` to the bin means ``out_W`` (in place, exact).

    The zero-mean part only: the simulation already carries the job at its mean power (``prof.mean_W``), so the
    interval energies of the run are unchanged except for the incomplete last period of each job.

    Parameters
    ----------
    out_W : np.ndarray
        Bin means [W] of bins ``[t0 + k dt, t0 + (k+1) dt)``, float64 of shape (n,); changed in place.
    t0_s : float
        First bin start [s].
    dt_s : float
        Bin length [s].
    start_s : float
        Start of the job's run [s].
    end_s : float
        End of the job's run [s].
    prof : PeriodicProfile | PhaseProfile
        Its profile (anything with ``integral(tau)`` and ``mean_W``).
    scale : float
        Watts of facility power per watt of node DC power of one node, times the job's node count (e.g.
        ``nodes * dP_rack_input / dP_dc``).
    """
    n = out_W.size
    a = max(start_s, t0_s)
    b = min(end_s, t0_s + n * dt_s)
    if not (b > a):
        return
    k0 = int(math.floor((a - t0_s) / dt_s))
    k1 = min(int(math.ceil((b - t0_s) / dt_s)), n)
    edges = t0_s + dt_s * np.arange(k0, k1 + 1)
    edges = np.clip(edges, a, b)
    W = prof.integral(edges - start_s) - prof.mean_W * (edges - start_s)
    out_W[k0:k1] += scale * np.diff(W) / dt_s


def window_means(x_W: np.ndarray, dt_s: float, window_s: float) -> np.ndarray:
    """Means of consecutive complete windows of ``window_s`` of a uniformly binned series (bin means ``x_W``).

    Parameters
    ----------
    x_W : np.ndarray
        Bin means [W], float64 of shape (n,).
    dt_s : float
        Bin length [s].
    window_s : float
        Window length [s]; must be a whole multiple of ``dt_s``.

    Returns
    -------
    ndarray of float64, shape (n // m,)
        ``m = window_s / dt_s``; an incomplete last window is left out.

    Raises
    ------
    ValueError
        If ``window_s`` is not a whole multiple (>= 1) of ``dt_s``.
    """
    ratio = window_s / dt_s
    m = int(round(ratio))
    if m < 1 or abs(ratio - m) > 1e-9 * max(1.0, ratio):
        raise ValueError(f"ramp window {window_s} s is not a whole multiple of the bin {dt_s} s")
    k = x_W.size // m
    return x_W[:k * m].reshape(k, m).mean(axis=1)


def max_ramp(x_W: np.ndarray, dt_s: float, window_s: float) -> tuple[float, int]:
    """Largest change between consecutive ``window_s``-means (module docstring) [W] and the index of the later window.

    Parameters
    ----------
    x_W : np.ndarray
        Bin means [W], float64 of shape (n,).
    dt_s : float
        Bin length [s].
    window_s : float
        Window ``D`` [s], a whole multiple of ``dt_s``.

    Returns
    -------
    tuple of (float, int)
        ``(ramp_W, i)``; ``(nan, -1)`` when fewer than two complete windows fit.
    """
    m = window_means(x_W, dt_s, window_s)
    if m.size < 2:
        return float("nan"), -1
    d = np.abs(np.diff(m))
    i = int(np.argmax(d))
    return float(d[i]), i + 1


def ramp_statistics(x_W: np.ndarray, dt_s: float, windows_s: tuple[float, ...] = (1.0, 60.0, 900.0)
                    ) -> dict[float, float]:
    """:func:`max_ramp` for each window [W] (NaN where a window is shorter than the bin or does not fit twice).

    Parameters
    ----------
    x_W : np.ndarray
        Bin means [W], float64 of shape (n,).
    dt_s : float
        Bin length [s].
    windows_s : tuple[float, ...]
        Windows ``D`` [s] (default 1 s, 1 min, 15 min: issue #15).

    Returns
    -------
    dict of float -> float
        Window [s] -> ramp [W].
    """
    out = {}
    for D in windows_s:
        try:
            out[D] = max_ramp(x_W, dt_s, D)[0]
        except ValueError:  # window not a multiple of the bin
            out[D] = float("nan")
    return out


def fundamental_amplitude(x_W: np.ndarray, dt_s: float, period_s: float) -> float:
    """Amplitude of the Fourier component of a binned series at frequency ``1 / period_s`` [W].

    ``A = (2 / N) |sum_k x_k exp(-2 pi i k dt / T)|`` over the whole periods in the series (the series is cut to
    ``floor(N dt / T) * T``, to the nearest bin, so a stationary component is not leaked in). For a square wave
    of swing ``S`` and duty ``d`` sampled finely this tends to ``(2 S / pi) sin(pi d)`` (its Fourier series), and
    bin averaging of width ``dt`` multiplies it by ``sinc(dt / T)``.

    Parameters
    ----------
    x_W : np.ndarray
        Bin means [W], float64 of shape (n,).
    dt_s : float
        Bin length [s].
    period_s : float
        Period [s] (>= 2 dt for a meaningful value).

    Returns
    -------
    float
        Amplitude [W]; NaN when the series is shorter than one period.
    """
    n_per = math.floor(x_W.size * dt_s / period_s)
    if n_per < 1:
        return float("nan")
    N = int(round(n_per * period_s / dt_s))
    x = np.asarray(x_W[:N], dtype=float)
    x = x - x.mean()
    ph = np.exp(-2j * math.pi * np.arange(N) * dt_s / period_s)
    return float(2.0 / N * abs(np.dot(x, ph)))
