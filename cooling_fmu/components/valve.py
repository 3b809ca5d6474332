"""Control valves: a CDU's facility-side valve under integral control, and the differential-pressure reset.

Relations
---------
* Opening (:func:`valve_opening`): ``y = clip(I, y_min, 1)``, flow ``m = y m_nominal`` (linear valve with an
  ideal pressure-independent characteristic).
* Integrator with anti-windup tracking (Astrom & Hagglund, Advanced PID Control, 2006, sec. 3.5), tracking time
  equal to the integral time (:func:`integrator_rate`): ``dI/dt = e / Ti + (y - I) / Ti``.
* Load feed-forward (:func:`feedforward_opening`): ``u = I + k_ff Q / Q_nominal``, ``y = clip(u, y_min, 1)``, the
  integrator tracking ``y - u`` (the feed-forward input ``u_ff`` with gain ``k_ff`` of the Modelica Standard
  Library's ``Modelica.Blocks.Continuous.LimPID``, version 4.0, added to the controller output before the limiter,
  with the same back-calculation anti-windup). ``k_ff = 0``: integral control alone (the plants before issue 22
  item 8).
* Normalised control error (:func:`control_error`): ``e = (T - T_set) / dT_span``, the input of both controllers
  (CDU valves on the secondary supply, tower fans on the facility supply); the integrator's rest point
  (:func:`integrator_at_rest`): ``I = y - k_p e + e`` (``u = k_p e + I = y + e``; ``k_p = 0`` for the valves), which
  the steady state takes for a saturated controller.
* Differential-pressure set-point reset (ASHRAE 90.1 sec. 6.5.4; Guideline 36 trim-and-respond) by the neediest
  valve (:func:`reset_factor`): ``r = max(r_min, max_i y_i)``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["control_error", "control_error_expr", "feedforward_opening", "feedforward_opening_expr",
           "integrator_at_rest", "integrator_rate", "integrator_rate_expr", "max_chain_expr", "reset_factor",
           "reset_factor_expr", "valve_opening", "valve_opening_expr"]


def feedforward_opening(Q_W: float | np.ndarray, Q_nominal_W: float, k_ff: float):
    """Feed-forward part of a CDU valve's opening from the CDU's heat: ``k_ff Q / Q_nominal`` (module docstring).

    Parameters
    ----------
    Q_W : float | np.ndarray
        Heat into the CDU [W], any shape.
    Q_nominal_W : float
        Design heat per CDU [W] (> 0).
    k_ff : float
        Feed-forward gain [1] (0 = none).

    Returns
    -------
    float or ndarray
        Opening added to the integrator state before the limiter [1], shape of ``Q_W``.
    """
    return k_ff * (np.asarray(Q_W, dtype=float) / Q_nominal_W)


def feedforward_opening_expr(Q: str, Q_nominal: str, k_ff: str) -> str:
    """Modelica expression of :func:`feedforward_opening`.

    Parameters
    ----------
    Q : str
        Name of the heat.
    Q_nominal : str
        Name of the design heat.
    k_ff : str
        Name of the gain.

    Returns
    -------
    str
        The expression.
    """
    return f"{k_ff} * ({Q} / {Q_nominal})"


def control_error(T_K: float | np.ndarray, T_set_K: float, dT_span_K: float):
    """Normalised control error of a temperature controller: ``(T - T_set) / dT_span``.

    Parameters
    ----------
    T_K : float | np.ndarray
        Controlled temperature [K], any shape.
    T_set_K : float
        Set point [K].
    dT_span_K : float
        Error span [K] (> 0): the error that moves the output by 1.

    Returns
    -------
    float or ndarray
        Error [1], shape of ``T_K`` (> 0 when too warm).
    """
    return (T_K - T_set_K) / dT_span_K


def control_error_expr(T: str, T_set: str, dT_span: str) -> str:
    """Modelica expression of :func:`control_error`.

    Parameters
    ----------
    T : str
        Name of the controlled temperature.
    T_set : str
        Name of the set point.
    dT_span : str
        Name of the error span.

    Returns
    -------
    str
        The expression.
    """
    return f"({T} - {T_set}) / {dT_span}"


def integrator_at_rest(y: float | np.ndarray, e: float | np.ndarray, k_p: float = 0.0):
    """Integrator state at which :func:`integrator_rate` is zero: ``I = y - k_p e + e``.

    With the controller output ``u = k_p e + I`` (``k_p = 0``: integral control) the rate ``e / Ti + (y - u) / Ti``
    vanishes at ``u = y + e``: unsaturated (``y = u``) only at ``e = 0``, saturated with the tracking term balancing
    the error.

    Parameters
    ----------
    y : float | np.ndarray
        Saturated output [1].
    e : float | np.ndarray
        Normalised control error [1].
    k_p : float
        Proportional gain [1].

    Returns
    -------
    float or ndarray
        Integrator state [1].
    """
    return y - k_p * e + e

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
    return f"max({r_min}, {max_chain_expr(y, n)})"


def max_chain_expr(y: str, n: int) -> str:
    """The largest of ``y[1..n]`` as nested binary ``max``: ``max(...max(y[1], y[2])..., y[n])``.

    The generator writes it in :func:`reset_factor_expr`; :mod:`cooling_fmu.replicate` finds and rewrites the same
    text when it changes the number of CDUs, so both take it from here.

    Parameters
    ----------
    y : str
        Name of the array.
    n : int
        Its length (>= 1; ``n = 1`` gives ``y[1]``).

    Returns
    -------
    str
        The expression.
    """
    m = f"{y}[1]"
    for i in range(2, n + 1):
        m = f"max({m}, {y}[{i}])"
    return m
