"""Control valves: a CDU's facility-side valve under integral control, and the differential-pressure reset.

Relations
---------
* Opening (:func:`valve_opening`): ``y = clip(I, y_min, 1)``, flow ``m = y m_nominal`` (linear valve with an
  ideal pressure-independent characteristic).
* Integrator with anti-windup tracking (Astrom & Hagglund, Advanced PID Control, 2006, sec. 3.5), tracking time
  equal to the integral time (:func:`integrator_rate`): ``dI/dt = e / Ti + (y - I) / Ti``.
* Differential-pressure set-point reset (ASHRAE 90.1 sec. 6.5.4; Guideline 36 trim-and-respond) by the neediest
  valve (:func:`reset_factor`): ``r = max(r_min, max_i y_i)``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["integrator_rate", "integrator_rate_expr", "reset_factor", "reset_factor_expr", "valve_opening",
           "valve_opening_expr"]


def valve_opening(I: float | np.ndarray, y_min: float):
    """Valve opening from its integrator: ``clip(I, y_min, 1)``.

    Parameters
    ----------
    I : float | np.ndarray
        Integrator state [1].
    y_min : float
        Minimum opening [1].

    Returns
    -------
    float or ndarray
        Opening in ``[y_min, 1]``.
    """
    return np.minimum(1.0, np.maximum(y_min, I))


def valve_opening_expr(I: str, y_min: str) -> str:
    """Modelica expression of :func:`valve_opening`.

    Parameters
    ----------
    I : str
        Name of the integrator.
    y_min : str
        Name of the minimum opening.

    Returns
    -------
    str
        The expression.
    """
    return f"min(1.0, max({y_min}, {I}))"


def integrator_rate(e: float | np.ndarray, y: float | np.ndarray, I: float | np.ndarray, Ti_s: float):
    """Rate of an integrator with back-calculation anti-windup, tracking time = integral time.

    Parameters
    ----------
    e : float | np.ndarray
        Normalised control error [1].
    y : float | np.ndarray
        Saturated output [1].
    I : float | np.ndarray
        Integrator state [1].
    Ti_s : float
        Integral time [s].

    Returns
    -------
    float or ndarray
        ``e / Ti + (y - I) / Ti`` [1/s].
    """
    return e / Ti_s + (y - I) / Ti_s


def integrator_rate_expr(e: str, y: str, I: str, Ti: str) -> str:
    """Modelica expression of :func:`integrator_rate`.

    Parameters
    ----------
    e : str
        Name of the error.
    y : str
        Name of the output.
    I : str
        Name of the integrator.
    Ti : str
        Name of the integral time.

    Returns
    -------
    str
        The expression.
    """
    return f"{e} / {Ti} + ({y} - {I}) / {Ti}"


def reset_factor(y_valves: np.ndarray, r_min: float):
    """Differential-pressure reset factor from the neediest valve: ``max(r_min, max_i y_i)``.

    Parameters
    ----------
    y_valves : np.ndarray
        Valve openings; the maximum is over the last axis.
    r_min : float
        Floor of the factor (1 = no reset).

    Returns
    -------
    float or ndarray
        Factor in ``[r_min, 1]``, shape ``y_valves.shape[:-1]``.
    """
    return np.maximum(r_min, np.max(np.asarray(y_valves), axis=-1))


def reset_factor_expr(y: str, n: int, r_min: str) -> str:
    """Modelica expression of :func:`reset_factor` over ``y[1..n]`` (nested ``max``, no array reduction needed).

    Parameters
    ----------
    y : str
        Name of the valve array.
    n : int
        Its length.
    r_min : str
        Name of the floor.

    Returns
    -------
    str
        The expression.
    """
    m = f"{y}[1]"
    for i in range(2, n + 1):
        m = f"max({m}, {y}[{i}])"
    return f"max({r_min}, {m})"
