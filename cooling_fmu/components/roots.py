"""Bracketed root finding shared by the component relations and the steady state (a solver, not a relation).

:func:`illinois` is used by the tower fan solve (:func:`cooling_fmu.components.tower.braun_fan_fraction`) and the
fast plant's basin balance (:func:`cooling_fmu.modelica.tower_side_at_fan` with ``regula_falsi=True``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["illinois"]


def illinois(q_at: Callable, Q: np.ndarray, lo: np.ndarray, hi: np.ndarray, f_lo: np.ndarray, f_hi: np.ndarray,
              ytol: float) -> np.ndarray:
    """Roots of ``q_at(y) - Q`` bracketed by ``[lo, hi]`` (``f_lo < 0 <= f_hi`` where a root is), by Illinois
    regula falsi on the rows still open; flat arrays of shape (k,).

    The Illinois variant of regula falsi (Dowell & Jarratt, "A modified regula falsi method for computing the root
    of an equation", BIT 11, 1971): the secant through the bracket's ends, and the value at an end kept twice in a
    row halved, so both ends close in (superlinear, order ~1.44) and the bracket is never lost. A trial point
    outside the open bracket (round-off at a tiny bracket) is replaced by the midpoint.

    Parameters
    ----------
    q_at : Callable
        ``q_at(y, rows)``: the function at trial points ``y`` of the rows ``rows`` (an index array into the flat
        arrays), shape of ``rows``.
    Q : np.ndarray
        Target values, shape (k,) (0 for a root of ``q_at`` itself).
    lo : np.ndarray
        Lower bracket end, shape (k,).
    hi : np.ndarray
        Upper bracket end, shape (k,).
    f_lo : np.ndarray
        ``q_at - Q`` at ``lo`` (< 0 where a root is), shape (k,).
    f_hi : np.ndarray
        ``q_at - Q`` at ``hi`` (>= 0 where a root is), shape (k,).
    ytol : float
        A row stops once its bracket is at most ``ytol`` wide (or ``|q_at - Q| <= 1e-15 |Q|``); at most 100
        iterations.

    Returns
    -------
    ndarray, shape (k,)
        The last trial point of each row; rows without a sign change return their bracket's midpoint (the caller
        replaces them).
    """
    Qf = np.asarray(Q, dtype=float).ravel()
    y = 0.5 * (lo + hi)
    open_ = np.flatnonzero((f_lo < 0.0) & (f_hi >= 0.0))
    side = np.zeros(lo.size, dtype=np.int8)  # the end kept last time: -1 lo, +1 hi (halve its value when kept twice)
    lo, hi, f_lo, f_hi = lo.copy(), hi.copy(), f_lo.copy(), f_hi.copy()
    for _ in range(100):
        if open_.size == 0:
            break
        a, b, fa, fb = lo[open_], hi[open_], f_lo[open_], f_hi[open_]
        x = b - fb * (b - a) / (fb - fa)
        x = np.where((x > a) & (x < b), x, 0.5 * (a + b))  # round-off at a tiny bracket: bisect
        fx = q_at(x, open_) - Qf[open_]
        y[open_] = x
        neg = fx < 0.0
        s = side[open_]
        # x replaces lo where q(x) < Q; the end kept (hi) has its value halved when it was kept the last time too
        lo[open_] = np.where(neg, x, a)
        f_lo[open_] = np.where(neg, fx, np.where(s == -1, 0.5 * fa, fa))
        hi[open_] = np.where(neg, b, x)
        f_hi[open_] = np.where(neg, np.where(s == 1, 0.5 * fb, fb), fx)
        side[open_] = np.where(neg, 1, -1)
        done = (np.abs(fx) <= 1e-15 * np.abs(Qf[open_])) | (hi[open_] - lo[open_] <= ytol)
        open_ = open_[~done]
    return y
