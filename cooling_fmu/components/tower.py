"""Evaporative cooling-tower bank: Merkel effectiveness, fan staging and power, cold-weather bypass, exit air and
water use.

Relations (numpy function / Modelica fragment from the same numbers)
--------------------------------------------------------------------
* Merkel characteristic in effectiveness form (ASHRAE Handbook HVAC Systems and Equipment 2020 ch. 40: ``KaV/L =
  c (L/G)^-n``, n ~ 0.6; EnergyPlus Engineering Reference, "Cooling towers"): ``NTU = NTU_nominal (y_fan /
  w_cw)^n``, ``eps = 1 - exp(-NTU)`` (:func:`merkel_effectiveness` / :func:`merkel_effectiveness_expr`), and its
  inverse, the bank air-flow fraction that reaches a required effectiveness, ``y_fan = w_cw (-ln(1 - eps) /
  NTU_nominal)^(1/n)`` (:func:`fan_fraction_for_effectiveness`; infinite where ``eps >= 1``).
* Staging (ASHRAE 90.1-2019 sec. 6.5.5.2.2, multicell heat rejection: as many cells as possible, none below the
  minimum speed): ``n_on = max(1, #{k in 1..N : y_fan N >= k y_min})`` (:func:`cells_running`); speed ``s = y_fan
  N / n_on``; fan power by the affinity law ``P = n_on P_cell s^3`` (:func:`fan_power_W`).
* Tower bypass (ASHRAE Handbook HVAC Systems and Equipment 2020 ch. 40, cold-weather capacity control; SPX,
  "Operating cooling towers in freezing weather"): ``T_out = max(T_cells_out, min(T_in, T_min))``, ``Q = Q_cells -
  m cp (T_out - T_cells_out)`` (:func:`bypass`).
* Saturated exit air (EnergyPlus Engineering Reference, cooling-tower evaporation, "saturated exit"):
  :func:`exit_air` / :func:`exit_air_fragment`, five unrolled Newton steps on ``h_s(T) = h_in + Q / m_air``.
* Water (SPX "Cooling Tower Fundamentals", 2nd ed., ch. 5): ``m_drift = f_drift m_cw``, ``m_blowdown = max(0,
  m_evap / (COC - 1) - m_drift)``, ``m_makeup = m_evap + m_drift + m_blowdown`` (:func:`water_use`).
"""

from __future__ import annotations

import numpy as np

from .moist_air import sat_air, sat_air_equations

__all__ = ["NEWTON_STEPS", "bypass", "bypass_equations", "cells_running", "cells_running_expr", "exit_air",
           "exit_air_fragment", "fan_fraction_for_effectiveness", "fan_power_W", "fan_power_expr",
           "merkel_effectiveness", "merkel_effectiveness_expr", "water_use", "water_use_equations"]

#: Newton steps used to find the saturated exit-air temperature (unrolled in the model).
NEWTON_STEPS = 5


def merkel_effectiveness(NTU_nominal: float, n_merkel: float, y_fan: float | np.ndarray, w_cw: float | np.ndarray):
    """Tower effectiveness ``1 - exp(-NTU_nominal (y_fan / w_cw)^n)``.

    Parameters
    ----------
    NTU_nominal : float
        Merkel number at full air flow and nominal water flow.
    n_merkel : float
        Exponent of the characteristic.
    y_fan : float | np.ndarray
        Bank air-flow fraction and tower-water flow fraction.
    w_cw : float | np.ndarray
        Bank air-flow fraction and tower-water flow fraction.

    Returns
    -------
    float or ndarray
        Effectiveness in [0, 1).
    """
    return 1.0 - np.exp(-NTU_nominal * (y_fan / w_cw) ** n_merkel)


def merkel_effectiveness_expr(NTU_nominal: str, n_merkel: str, y_fan: str, w_cw: str) -> tuple[str, str]:
    """Modelica right-hand sides of the tower NTU and effectiveness (:func:`merkel_effectiveness`).

    Parameters
    ----------
    NTU_nominal : str
        Names of the parameters and variables.
    n_merkel : str
        Names of the parameters and variables.
    y_fan : str
        Names of the parameters and variables.
    w_cw : str
        Names of the parameters and variables.

    Returns
    -------
    tuple of (str, str)
        ``(NTU expression, eps expression in terms of a variable named NTU_tower)``.
    """
    return f"{NTU_nominal} * ({y_fan} / {w_cw}) ^ {n_merkel}", "1.0 - exp(-NTU_tower)"


def fan_fraction_for_effectiveness(NTU_nominal: float, n_merkel: float, eps: float | np.ndarray, w_cw: float | np.ndarray):
    """Bank air-flow fraction at which the tower reaches effectiveness ``eps`` (inverse of
    :func:`merkel_effectiveness`): ``w_cw (-ln(1 - eps) / NTU_nominal)^(1/n)``; ``inf`` where ``eps >= 1``.

    Parameters
    ----------
    NTU_nominal : float
        Tower characteristic.
    n_merkel : float
        Tower characteristic.
    eps : float | np.ndarray
        Required effectiveness and tower-water flow fraction.
    w_cw : float | np.ndarray
        Required effectiveness and tower-water flow fraction.

    Returns
    -------
    float or ndarray
        Air-flow fraction (may exceed 1 or be ``inf``: out of reach).
    """
    eps = np.asarray(eps, dtype=float)
    ok = eps < 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        y = np.where(ok, w_cw * (-np.log1p(-np.where(ok, eps, 0.0)) / NTU_nominal) ** (1.0 / n_merkel), np.inf)
    return float(y) if y.ndim == 0 else y


def cells_running(y_fan: float | np.ndarray, n_cells: int, y_fan_min: float):
    """Cells with the fan running: ``max(1, #{k in 1..N : y_fan N >= k y_min})``.

    Parameters
    ----------
    y_fan : float | np.ndarray
        Bank air-flow fraction.
    n_cells : int
        Cells in the bank.
    y_fan_min : float
        Minimum speed of a running fan.

    Returns
    -------
    float or ndarray
        Cells on (whole number as float), shape of ``y_fan``.
    """
    y = np.asarray(y_fan, dtype=float)
    k = np.arange(1, n_cells + 1)
    n = np.maximum(1.0, np.sum(y[..., None] * n_cells >= k * y_fan_min, axis=-1).astype(float))
    return float(n) if n.ndim == 0 else n


def cells_running_expr(y_fan: str, n_cells: int, y_fan_min: str) -> str:
    """Modelica expression of :func:`cells_running` (``noEvent`` switches).

    Parameters
    ----------
    y_fan : str
        Name of the bank air-flow fraction.
    n_cells : int
        Cells in the bank.
    y_fan_min : str
        Name of the minimum speed.

    Returns
    -------
    str
        The expression.
    """
    stages = " + ".join(f"noEvent(if {y_fan} * {n_cells}.0 >= {k}.0 * {y_fan_min} then 1.0 else 0.0)"
                        for k in range(1, n_cells + 1))
    return f"max(1.0, {stages})"


def fan_power_W(y_fan: float | np.ndarray, n_on: float | np.ndarray, n_cells: int, P_fan_cell_W: float):
    """Fan power of the bank: ``n_on P_cell s^3`` with the speed ``s = y_fan N / n_on`` (affinity law).

    Parameters
    ----------
    y_fan : float | np.ndarray
        Bank air-flow fraction and cells running (:func:`cells_running`).
    n_on : float | np.ndarray
        Bank air-flow fraction and cells running (:func:`cells_running`).
    n_cells : int
        Cells in the bank.
    P_fan_cell_W : float
        Fan power of one cell at full speed [W].

    Returns
    -------
    float or ndarray
        Electrical fan power [W].
    """
    s = y_fan * n_cells / n_on
    return n_on * P_fan_cell_W * s**3


def fan_power_expr(n_on: str, P_cell: str, s: str) -> str:
    """Modelica expression of :func:`fan_power_W` given the speed variable ``s``.

    Parameters
    ----------
    n_on : str
        Names of the cells running, the cell fan power and the speed.
    P_cell : str
        Names of the cells running, the cell fan power and the speed.
    s : str
        Names of the cells running, the cell fan power and the speed.

    Returns
    -------
    str
        The expression.
    """
    return f"{n_on} * {P_cell} * {s} ^ 3"


def bypass(Q_cells_W: float | np.ndarray, T_in_K: float | np.ndarray, m_cw_kg_s: float | np.ndarray,
           cp_J_kgK: float, T_min_K: float) -> tuple:
    """Ideal three-way tower bypass holding the leaving water at or above ``T_min``.

    Parameters
    ----------
    Q_cells_W : float | np.ndarray
        Heat the cells would reject with the whole flow [W].
    T_in_K : float | np.ndarray
        Water entering the tower [K].
    m_cw_kg_s : float | np.ndarray
        Tower-water flow [kg/s].
    cp_J_kgK : float
        Specific heat of water.
    T_min_K : float
        Minimum leaving water [K].

    Returns
    -------
    tuple
        ``(Q_tower_W, T_out_K)``: heat rejected behind the valve and the mixed leaving water
        (``Q_tower == Q_cells`` bit for bit when the valve is closed).
    """
    T_cells = T_in_K - Q_cells_W / (m_cw_kg_s * cp_J_kgK)
    T_out = np.maximum(T_cells, np.minimum(T_in_K, T_min_K))
    Q = Q_cells_W - m_cw_kg_s * cp_J_kgK * (T_out - T_cells)
    if np.ndim(Q) == 0:
        return float(Q), float(T_out)
    return Q, T_out


def bypass_equations(Q: str, T_out: str, Q_cells: str, T_cells: str, T_in: str, m: str, cp: str, T_min: str
                     ) -> list[str]:
    """Modelica equations of :func:`bypass` (``T_cells`` is declared by the caller).

    Parameters
    ----------
    Q : str
        Names of the heat rejected, leaving water, cell heat, cell leaving water, entering water, flow, specific
        heat and minimum.
    T_out : str
        Names of the heat rejected, leaving water, cell heat, cell leaving water, entering water, flow, specific
        heat and minimum.
    Q_cells : str
        Names of the heat rejected, leaving water, cell heat, cell leaving water, entering water, flow, specific
        heat and minimum.
    T_cells : str
        Names of the heat rejected, leaving water, cell heat, cell leaving water, entering water, flow, specific
        heat and minimum.
    T_in : str
        Names of the heat rejected, leaving water, cell heat, cell leaving water, entering water, flow, specific
        heat and minimum.
    m : str
        Names of the heat rejected, leaving water, cell heat, cell leaving water, entering water, flow, specific
        heat and minimum.
    cp : str
        Names of the heat rejected, leaving water, cell heat, cell leaving water, entering water, flow, specific
        heat and minimum.
    T_min : str
        Names of the heat rejected, leaving water, cell heat, cell leaving water, entering water, flow, specific
        heat and minimum.

    Returns
    -------
    list of str
        Three equations.
    """
    return [f"{T_cells} = {T_in} - {Q_cells} / ({m} * {cp});",
            f"{T_out} = max({T_cells}, min({T_in}, {T_min}));",
            f"{Q} = {Q_cells} - {m} * {cp} * ({T_out} - {T_cells});"]


def exit_air(p_atm_Pa: float, T_wb_K: float, T_w_in_K: float, m_air_fan_kg_s: float, Q_air_W: float
             ) -> tuple[float, float, float, float]:
    """Saturated-exit-air balance of the tower air (same steps as :func:`exit_air_fragment`).

    Entering air is saturated at the wet-bulb; it takes up ``Q_air`` and leaves saturated at ``T_air_out`` (five
    Newton steps from the chord between ``T_wb`` and ``T_hi = max(T_w_in, T_wb + 1 K)``). The air flow used is
    ``max(m_air_fan, Q_air / (h_s(T_hi) - h_in))``.

    Parameters
    ----------
    p_atm_Pa : float
        Site pressure [Pa].
    T_wb_K : float
        Wet-bulb and water entering the tower [K].
    T_w_in_K : float
        Wet-bulb and water entering the tower [K].
    m_air_fan_kg_s : float
        Air the fans move [kg/s].
    Q_air_W : float
        Heat given to the air [W] (clipped at 0).

    Returns
    -------
    tuple of float
        ``(m_air [kg/s], T_air_out [K], W_in, W_out)``.
    """
    W_in, h_in, _ = sat_air(T_wb_K, p_atm_Pa)
    T_hi = max(T_w_in_K, T_wb_K + 1.0)
    h_hi = sat_air(T_hi, p_atm_Pa)[1]
    dh_max = h_hi - h_in
    Q = max(0.0, Q_air_W)
    m_air = max(m_air_fan_kg_s, Q / dh_max)
    dh = Q / m_air
    T = T_wb_K + (T_hi - T_wb_K) * dh / dh_max
    for _ in range(NEWTON_STEPS):
        _, h, d = sat_air(T, p_atm_Pa)
        T = T - (h - h_in - dh) / d
    W_out = sat_air(T, p_atm_Pa)[0]
    return m_air, T, W_in, W_out


def exit_air_fragment(m_air_fan: str) -> tuple[list[str], list[str]]:
    """Declarations and equations of :func:`exit_air` in the flat model.

    Uses the model's ``T_wb``, ``T_cw_ret``, ``Q_air``, ``p_atm``; defines ``T_air_hi``, ``dh_air_max``,
    ``m_flow_air``, ``dh_air``, ``T_air_out`` and ``m_flow_evap`` (the last three are declared by the caller as
    outputs / algebraics; this function declares the psychrometric intermediates).

    Parameters
    ----------
    m_air_fan : str
        Modelica expression of the air the fans move [kg/s].

    Returns
    -------
    tuple of (list of str, list of str)
        Declarations and equations (indented two spaces).
    """
    decl, eq = sat_air_equations("T_wb", "wb")
    d_hi, e_hi = sat_air_equations("T_air_hi", "hi")
    decl += d_hi
    eq += e_hi
    newton = ["  T_ao0 = T_wb + (T_air_hi - T_wb) * dh_air / dh_air_max;"]
    for k in range(NEWTON_STEPS + 1):
        d, e = sat_air_equations(f"T_ao{k}", f"ao{k}")
        decl += [f'  Real T_ao{k}(unit="K") "Newton iterate {k} of the exit-air temperature";'] + d
        eq += e
        if k < NEWTON_STEPS:
            newton.append(f"  T_ao{k + 1} = T_ao{k} - (h_ao{k} - h_wb - dh_air) / dh_ao{k};")
    K = NEWTON_STEPS
    eq = (["  T_air_hi = max(T_cw_ret, T_wb + 1.0);",
           "  dh_air_max = h_hi - h_wb;",
           f"  m_flow_air = max({m_air_fan}, Q_air / dh_air_max);",
           "  dh_air = Q_air / m_flow_air;"] + eq + newton
          + [f"  T_air_out = T_ao{K};", f"  m_flow_evap = m_flow_air * (W_ao{K} - W_wb);"])
    return decl, eq


def water_use(m_evap_kg_s: float | np.ndarray, m_cw_kg_s: float | np.ndarray, drift_fraction: float,
              cycles_of_concentration: float) -> tuple:
    """Drift, blowdown and make-up of an open tower.

    Parameters
    ----------
    m_evap_kg_s : float | np.ndarray
        Evaporation and circulating tower-water flow [kg/s].
    m_cw_kg_s : float | np.ndarray
        Evaporation and circulating tower-water flow [kg/s].
    drift_fraction : float
        Drift as a fraction of the circulating flow.
    cycles_of_concentration : float
        Cycles of concentration (> 1).

    Returns
    -------
    tuple
        ``(m_drift, m_blowdown, m_makeup)`` [kg/s].
    """
    drift = drift_fraction * m_cw_kg_s
    blow = np.maximum(0.0, m_evap_kg_s / (cycles_of_concentration - 1.0) - drift)
    if np.ndim(blow) == 0:
        blow = float(blow)
    return drift, blow, m_evap_kg_s + drift + blow


def water_use_equations() -> list[str]:
    """Modelica equations of :func:`water_use` (names of the shipped model's outputs and parameters).

    Returns
    -------
    list of str
        Three equations (indented two spaces).
    """
    return ["  m_flow_drift = drift_fraction * m_flow_cw;",
            "  m_flow_blowdown = max(0.0, m_flow_evap / (coc - 1.0) - m_flow_drift);",
            "  m_flow_makeup = m_flow_evap + m_flow_drift + m_flow_blowdown;"]

