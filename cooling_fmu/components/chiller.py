"""Trim chiller on the facility water after the IHX (economiser switch-over by wet-bulb).

Relations: ``Q = on min(Q_max, max(0, m cp (T_in - T_set)))`` with ``on = enabled and T_wb > T_wb_switch``;
``COP = min(COP_max, eta_carnot T_set / max(dT_lift_min, T_wb + dT_cond - T_set))`` (a Carnot fraction;
ASSUMPTION: no part-load or reference curve yet), ``P = Q / COP`` (:func:`trim_chiller` / :func:`trim_chiller_equations`).
"""

from __future__ import annotations

import numpy as np

from ..params import PlantParams

__all__ = ["chiller_setpoint_K", "trim_chiller", "trim_chiller_equations"]


def chiller_setpoint_K(params: PlantParams) -> float:
    """Leaving-water set point of the trim chiller, ``T_fac_sup_set + dT_deadband`` [K].

    Parameters
    ----------
    params : PlantParams
        Plant description.

    Returns
    -------
    float
        Set point [K].
    """
    return params.tower.T_fac_sup_set_K + params.chiller.dT_deadband_K


def trim_chiller(params: PlantParams, m_fac_kg_s: float | np.ndarray, T_in_K: float | np.ndarray, T_wb_K: float | np.ndarray):
    """Heat removed, electrical power and COP of the trim chiller for water entering at ``T_in``.

    Parameters
    ----------
    params : PlantParams
        Plant description (``chiller``, ``tower.T_fac_sup_set_K``, ``cp_water_J_kgK``).
    m_fac_kg_s : float | np.ndarray
        Facility flow [kg/s].
    T_in_K : float | np.ndarray
        Entering water [K].
    T_wb_K : float | np.ndarray
        Wet-bulb [K] (broadcastable).

    Returns
    -------
    tuple
        ``(Q_W, P_W, COP)``.
    """
    ch, cp = params.chiller, params.cp_water_J_kgK
    T_set = chiller_setpoint_K(params)
    on = np.where(np.asarray(T_wb_K) > ch.T_wb_switch_K, 1.0 if ch.enabled else 0.0, 0.0)
    Q = on * np.minimum(ch.Q_flow_max_W, np.maximum(0.0, m_fac_kg_s * cp * (T_in_K - T_set)))
    cop = np.minimum(ch.COP_max, ch.eta_carnot * T_set / np.maximum(ch.dT_lift_min_K, T_wb_K + ch.dT_cond_K - T_set))
    if np.ndim(Q) == 0 and np.ndim(cop) == 0:
        return float(Q), float(Q / cop), float(cop)
    return Q, Q / cop, cop


def trim_chiller_equations() -> list[str]:
    """Modelica equations of :func:`trim_chiller` (names of the shipped model's parameters and variables).

    Returns
    -------
    list of str
        Four equations (indented two spaces).
    """
    return ["  Q_flow_chiller = noEvent(if T_wb > T_wb_switch then have_chiller else 0.0) * min(Q_flow_chiller_max, "
            "max(0.0, m_flow_fac * cp * (T_ihx_out - T_chiller_set)));",
            "  T_chiller_out = T_ihx_out - Q_flow_chiller / (m_flow_fac * cp);",
            "  COP_chiller = min(COP_max, eta_carnot * T_chiller_set / max(dT_lift_min, T_wb + dT_cond - "
            "T_chiller_set));",
            "  P_chiller = Q_flow_chiller / COP_chiller;"]
