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

import math

import numpy as np

from ._mo import Fragment
from .roots import illinois
from .moist_air import inlet_air, inlet_air_equations, sat_air, sat_air_enthalpy, sat_air_equations

__all__ = ["BRAUN_ITERATIONS", "NEWTON_STEPS", "braun_coefficients", "braun_effectiveness", "braun_equations",
           "braun_fan_fraction", "bypass", "cells_in_service", "cells_in_service_expr", "fan_speed",
           "fan_speed_equations", "size_braun_c", "size_ntu_nominal", "bypass_equations", "cells_running",
           "cells_running_expr", "exit_air",
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
        Bank air-flow fraction.
    w_cw : float | np.ndarray
        Tower-water flow fraction.

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
        Name of the Merkel number at full air and nominal water flow.
    n_merkel : str
        Name of the exponent of the characteristic.
    y_fan : str
        Name of the bank air-flow fraction.
    w_cw : str
        Name of the tower-water flow fraction.

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
        Merkel number at full air flow and nominal water flow.
    n_merkel : float
        Exponent of the characteristic.
    eps : float | np.ndarray
        Required effectiveness.
    w_cw : float | np.ndarray
        Tower-water flow fraction.

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
        Cells in the bank: one ``noEvent`` stage each.
    y_fan_min : str
        Name of the minimum speed.

    Returns
    -------
    str
        ``max(1, number of stages reached)``.
    """
    stages = " + ".join(f"noEvent(if {y_fan} * {n_cells}.0 >= {k}.0 * {y_fan_min} then 1.0 else 0.0)"
                        for k in range(1, n_cells + 1))
    return f"max(1.0, {stages})"


def fan_power_W(y_fan: float | np.ndarray, n_on: float | np.ndarray, n_cells: int, P_fan_cell_W: float):
    """Fan power of the bank: ``n_on P_cell s^3`` with the speed ``s = y_fan N / n_on`` (affinity law).

    Parameters
    ----------
    y_fan : float | np.ndarray
        Bank air-flow fraction.
    n_on : float | np.ndarray
        Cells running (:func:`cells_running`).
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
        Name of the cells running.
    P_cell : str
        Name of the cell fan power.
    s : str
        Name of the speed.

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
        Name of the heat rejected.
    T_out : str
        Name of the leaving water.
    Q_cells : str
        Name of the cell heat.
    T_cells : str
        Name of the cell leaving water.
    T_in : str
        Name of the entering water.
    m : str
        Name of the flow.
    cp : str
        Name of the specific heat.
    T_min : str
        Name of the minimum.

    Returns
    -------
    list of str
        Three equations.
    """
    return [f"{T_cells} = {T_in} - {Q_cells} / ({m} * {cp});",
            f"{T_out} = max({T_cells}, min({T_in}, {T_min}));",
            f"{Q} = {Q_cells} - {m} * {cp} * ({T_out} - {T_cells});"]


def exit_air(p_atm_Pa: float, T_wb_K: float | np.ndarray, T_w_in_K: float | np.ndarray,
             m_air_fan_kg_s: float | np.ndarray, Q_air_W: float | np.ndarray,
             T_db_K: float | np.ndarray | None = None) -> tuple:
    """Saturated-exit-air balance of the tower air (same steps as :func:`exit_air_fragment`; vectorised).

    Entering air has the humidity ratio and enthalpy of the outdoor dry-bulb and wet-bulb
    (:func:`~cooling_fmu.components.moist_air.inlet_air`; saturated at the wet-bulb when no dry-bulb is given); it
    takes up ``Q_air`` and leaves saturated at ``T_air_out`` (five Newton steps from the chord between ``T_wb`` and
    ``T_hi = max(T_w_in, T_wb + 1 K)``, ``dh_max = max(h_s(T_hi) - h_in, (h_s(T_hi) - h_s(T_wb)) / 2)``, the second
    term only for impossibly dry input pairs). The air flow used is the air the fans move, ``m_air_fan`` (plant v5;
    v4 used ``max(m_air_fan, Q_air / (h_s(T_hi) - h_in))``). Evaporation ``m_air (W_out - W_in)``: dry air takes up
    more water than saturated air for the same heat (it is cooled sensibly as it evaporates water), so WUE moves with
    the dry-bulb.

    Parameters
    ----------
    p_atm_Pa : float
        Site pressure [Pa].
    T_wb_K : float | np.ndarray
        Wet-bulb [K].
    T_w_in_K : float | np.ndarray
        Water entering the tower [K].
    m_air_fan_kg_s : float | np.ndarray
        Air the fans move [kg/s].
    Q_air_W : float | np.ndarray
        Heat given to the air [W] (clipped at 0).
    T_db_K : float | np.ndarray | None
        Outdoor dry-bulb [K]; None: saturated outdoor air (``T_db = T_wb``).

    Returns
    -------
    tuple
        ``(m_air [kg/s], T_air_out [K], W_in, W_out)`` (floats for scalar inputs).
    """
    W_in, h_in = inlet_air(T_wb_K if T_db_K is None else T_db_K, T_wb_K, p_atm_Pa)
    T_hi = np.maximum(T_w_in_K, np.asarray(T_wb_K, dtype=float) + 1.0)
    h_hi = sat_air(T_hi, p_atm_Pa)[1]
    # real outdoor air has h_in <~ h_s(T_wb); a dry-bulb / wet-bulb pair drier than possible (psychrolib's 1e-7
    # humidity floor) could make it exceed h_s(T_hi): the rise is held at half the saturated one at least
    dh_max = np.maximum(h_hi - h_in, 0.5 * (h_hi - sat_air(T_wb_K, p_atm_Pa)[1]))
    Q = np.maximum(0.0, Q_air_W)
    m_air = m_air_fan_kg_s  # plant v5: the air the fans move (Braun's eps_a < 1 keeps the exit air below T_hi)
    dh = Q / m_air
    T = T_wb_K + (T_hi - T_wb_K) * dh / dh_max
    for _ in range(NEWTON_STEPS):
        _, h, d = sat_air(T, p_atm_Pa)
        T = T - (h - h_in - dh) / d
    W_out = sat_air(T, p_atm_Pa)[0]
    if np.ndim(m_air) == 0 and np.ndim(T) == 0:
        return float(m_air), float(T), float(W_in), float(W_out)
    return m_air, T, W_in, W_out


def exit_air_fragment(m_air_fan: str, T_w_in: str = "T_cw_ret") -> Fragment:
    """Declarations and equations of :func:`exit_air` in the flat model.

    Uses the model's ``T_wb``, ``T_db`` (outdoor dry-bulb), ``T_cw_ret``, ``Q_air``, ``p_atm``; defines
    ``T_air_hi``, ``dh_air_max``, ``m_flow_air``, ``dh_air``, ``T_air_out`` and ``m_flow_evap`` (the last three are
    declared by the caller as outputs / algebraics; this function declares the psychrometric intermediates).

    Parameters
    ----------
    m_air_fan : str
        Modelica expression of the air the fans move [kg/s].
    T_w_in : str
        Name of the water entering the tower cells [K].

    Returns
    -------
    Fragment
        The saturated-exit-air balance: leaving air by five unrolled Newton steps, evaporation.
    """
    decl, eq = sat_air_equations("T_wb", "wb")
    d_in, e_in = inlet_air_equations("T_db", "T_wb", "W_wb", "in")
    decl += d_in
    eq += e_in
    d_hi, e_hi = sat_air_equations("T_air_hi", "hi")
    decl += d_hi
    eq += e_hi
    newton = ["  T_ao0 = T_wb + (T_air_hi - T_wb) * dh_air / dh_air_max;"]
    for k in range(NEWTON_STEPS + 1):
        d, e = sat_air_equations(f"T_ao{k}", f"ao{k}")
        decl += [f'  Real T_ao{k}(unit="K") "Newton iterate {k} of the exit-air temperature";'] + d
        eq += e
        if k < NEWTON_STEPS:
            newton.append(f"  T_ao{k + 1} = T_ao{k} - (h_ao{k} - h_in - dh_air) / dh_ao{k};")
    K = NEWTON_STEPS
    eq = ([f"  T_air_hi = max({T_w_in}, T_wb + 1.0);",
           "  dh_air_max = max(h_hi - h_in, 0.5 * (h_hi - h_wb));",
           f"  m_flow_air = {m_air_fan};",
           "  dh_air = Q_air / m_flow_air;"] + eq + newton
          + [f"  T_air_out = T_ao{K};", f"  m_flow_evap = m_flow_air * (W_ao{K} - W_in);"])
    return Fragment(decl, eq)


def water_use(m_evap_kg_s: float | np.ndarray, m_cw_kg_s: float | np.ndarray, drift_fraction: float,
              cycles_of_concentration: float) -> tuple:
    """Drift, blowdown and make-up of an open tower.

    Parameters
    ----------
    m_evap_kg_s : float | np.ndarray
        Evaporation [kg/s].
    m_cw_kg_s : float | np.ndarray
        Circulating tower-water flow [kg/s].
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


# ------------------------------------------------------------------------------------------------------------------
# plant v5 tower: heat and mass transfer with the air the fans move (Braun's effectiveness-NTU)
# ------------------------------------------------------------------------------------------------------------------
#: Fixed-point updates of the saturation slope ``c_s`` with the leaving water (unrolled in the model).
BRAUN_ITERATIONS = 3
#: ``m*`` above which the Braun effectiveness uses its ``m* = 1`` limit ``NTU / (1 + NTU)`` (avoids 0/0).
MSTAR_BALANCED = 0.9999


def braun_effectiveness(c_braun: float, n_braun: float, m_w_kg_s: float | np.ndarray, m_a_kg_s: float | np.ndarray,
                        T_w_in_K: float | np.ndarray, T_wb_K: float | np.ndarray, p_atm_Pa: float,
                        cp_w_J_kgK: float) -> tuple:
    """Counterflow cooling tower by Braun's effectiveness-NTU model, with the air the fans actually move.

    Braun, Klein & Mitchell (1989), "Effectiveness models for cooling towers and cooling coils", ASHRAE
    Transactions 95(2), eqs. for the counterflow tower (the model behind EnergyPlus' cooling-tower UA method and
    Modelica Buildings' ``CoolingTowers`` effectiveness): ``NTU = c (m_w / m_a)^(1 + n)``, saturation slope
    ``c_s = (h_s(T_w,in) - h_s(T_w,out)) / (T_w,in - T_w,out)`` (Braun's chord between entering and leaving water,
    found by :data:`BRAUN_ITERATIONS` fixed-point updates from the chord to the wet-bulb), ``m* = m_a c_s / (m_w
    c_pw)``, air-side effectiveness
    ``eps_a = (1 - exp(-NTU (1 - m*))) / (1 - m* exp(-NTU (1 - m*)))`` (``NTU / (1 + NTU)`` at ``m* = 1``;
    evaluated as ``(1 - Z) / (m* - Z)`` with ``Z = exp(-NTU (m* - 1))`` when ``m* > 1``, the same value without the
    exponential's overflow at very small water flows) and
    ``Q = eps_a m_a (h_s(T_w,in) - h_a,in)`` with ``h_a,in = h_s(T_wb)`` (the wet-bulb lies on the air's
    adiabatic-saturation line). Since ``eps_a <= 1`` the leaving air's enthalpy never exceeds that of saturated
    air at the entering water: the heat is carried by the air the fans move (no ``max(fan air, Q / dh_max)``).

    Parameters
    ----------
    c_braun : float
        Coefficient ``c`` of the NTU correlation (sized by :func:`size_braun_c`).
    n_braun : float
        Exponent ``n`` (Braun: about -0.4 .. -0.8 with the ``1 + n`` form). Braun's NTU is air side, ``KaV/G =
        (KaV/L) (L/G)``, so ASHRAE ch. 40's ``KaV/L ~ (L/G)^-n_merkel`` gives ``1 + n = 1 - n_merkel``, i.e.
        ``n = -n_merkel`` (:func:`braun_coefficients`; -0.6 for the shipped plants).
    m_w_kg_s : float | np.ndarray
        Water flow through the running cells [kg/s] (> 0).
    m_a_kg_s : float | np.ndarray
        Air the fans move [kg/s] (> 0).
    T_w_in_K : float | np.ndarray
        Water entering the tower [K].
    T_wb_K : float | np.ndarray
        Outdoor wet-bulb [K].
    p_atm_Pa : float
        Site pressure [Pa].
    cp_w_J_kgK : float
        Specific heat of water [J/(kg K)].

    Returns
    -------
    tuple
        ``(Q_W, eps_a, NTU, m_star)``; ``Q`` is 0 where the water is not warmer than the wet-bulb.
    """
    Q, eps, ntu, ms = _braun(c_braun, n_braun, m_w_kg_s, m_a_kg_s, T_w_in_K, T_wb_K, p_atm_Pa, cp_w_J_kgK,
                             sat_air_enthalpy(T_w_in_K, p_atm_Pa), sat_air_enthalpy(T_wb_K, p_atm_Pa))
    if np.ndim(Q) == 0:
        return float(Q), float(eps), float(ntu), float(ms)
    return Q, eps, ntu, ms


def _braun(c_braun, n_braun, m_w_kg_s, m_a_kg_s, T_w_in_K, T_wb_K, p_atm_Pa, cp_w_J_kgK, h_w, h_a) -> tuple:
    """:func:`braun_effectiveness` with the saturated enthalpies of the entering water (``h_w``) and of the
    wet-bulb (``h_a``) given [J/kg dry air]: the fan solve computes them once, not once per trial air flow.
    """
    warm = np.asarray(T_w_in_K) > T_wb_K
    ntu = c_braun * (m_w_kg_s / m_a_kg_s) ** (1.0 + n_braun)
    T_out = T_wb_K  # first chord: entering water to wet-bulb; then entering to leaving water
    for _ in range(BRAUN_ITERATIONS + 1):
        h_o = sat_air_enthalpy(T_out, p_atm_Pa)
        c_s = np.maximum(h_w - h_o, 1e-6 * 1006.0) / np.maximum(T_w_in_K - T_out, 1e-6)
        ms = m_a_kg_s * c_s / (m_w_kg_s * cp_w_J_kgK)
        # Z = exp(-NTU |1 - m*|) <= 1: for m* > 1 (little water) the counterflow form (1 - e) / (1 - m* e) with
        # e = exp(NTU (m* - 1)) is rewritten as (1 - Z) / (m* - Z), the same value without e's overflow
        Z = np.exp(-ntu * np.abs(1.0 - ms))
        with np.errstate(invalid="ignore", divide="ignore"):
            eps = np.where(np.abs(1.0 - ms) > 1.0 - MSTAR_BALANCED,
                           (1.0 - Z) / np.where(ms < 1.0, 1.0 - ms * Z, ms - Z), ntu / (1.0 + ntu))
        Q = np.where(warm, eps * m_a_kg_s * (h_w - h_a), 0.0)
        T_out = T_w_in_K - Q / (m_w_kg_s * cp_w_J_kgK)
    return Q, eps, ntu, ms


def braun_equations() -> Fragment:
    """Declarations and equations of :func:`braun_effectiveness` in a flat model.

    Reads ``c_braun``, ``n_braun``, ``m_w_tower``, ``m_a_tower``, ``T_w_in``, ``T_wb``, ``p_atm``, ``cp``; defines
    ``Q_braun``, ``eps_braun``, ``NTU_braun`` and the intermediates of the unrolled ``c_s`` updates.

    Returns
    -------
    Fragment
        Braun's air-side effectiveness with the saturation-enthalpy slope ``c_s`` updated in unrolled steps.
    """
    dw, ew = sat_air_equations("T_w_in", "bw")
    da, ea = sat_air_equations("T_wb", "ba")
    decl = dw + da + ['  Real NTU_braun(unit="1");', '  Real eps_braun(unit="1");', '  Real Q_braun(unit="W");']
    eq = ew + ea + ["  NTU_braun = c_braun * (m_w_tower / m_a_tower) ^ (1.0 + n_braun);",
                    "  T_bo0 = T_wb;"]
    K = BRAUN_ITERATIONS
    for k in range(K + 1):
        d, e = sat_air_equations(f"T_bo{k}", f"bo{k}")
        decl += [f'  Real T_bo{k}(unit="K");', f'  Real c_s{k}(unit="J/(kg.K)");', f'  Real ms{k}(unit="1");',
                 f'  Real Zb{k}(unit="1");', f'  Real eps_b{k}(unit="1");', f'  Real Q_b{k}(unit="W");'] + d
        eq += e + [
            f"  c_s{k} = max(h_bw - h_bo{k}, 1006.0e-6) / max(T_w_in - T_bo{k}, 1.0e-6);",
            f"  ms{k} = m_a_tower * c_s{k} / (m_w_tower * cp);",
            f"  Zb{k} = exp(-NTU_braun * abs(1.0 - ms{k}));",
            f"  eps_b{k} = noEvent(if abs(1.0 - ms{k}) > {1.0 - MSTAR_BALANCED!r} then (1.0 - Zb{k}) / "
            f"(if ms{k} < 1.0 then 1.0 - ms{k} * Zb{k} else ms{k} - Zb{k}) else NTU_braun / (1.0 + NTU_braun));",
            f"  Q_b{k} = noEvent(if T_w_in > T_wb then eps_b{k} * m_a_tower * (h_bw - h_ba) else 0.0);"]
        if k < K:
            eq.append(f"  T_bo{k + 1} = T_w_in - Q_b{k} / (m_w_tower * cp);")
    eq += [f"  eps_braun = eps_b{K};", f"  Q_braun = Q_b{K};"]
    return Fragment(decl, eq)


def size_braun_c(n_braun: float, Q_design_W: float, m_w_kg_s: float, m_a_kg_s: float, T_wb_design_K: float,
                 approach_K: float, p_atm_Pa: float, cp_w_J_kgK: float) -> float:
    """Coefficient ``c`` with which the tower rejects ``Q_design`` at the design wet-bulb and approach.

    At design the leaving water is ``T_wb + approach`` and the entering water ``T_wb + approach + range`` with
    ``range = Q / (m_w cp)``, so Braun's saturation slope ``c_s`` is the chord between them; the required air-side
    effectiveness ``eps = Q / (m_a (h_s(T_w,in) - h_s(T_wb)))``
    inverts the counterflow eps-NTU relation in closed form, ``NTU = ln((1 - m* eps) / (1 - eps)) / (1 - m*)``
    (``eps / (1 - eps)`` at ``m* = 1``), and ``c = NTU / (m_w / m_a)^(1 + n)``.

    Parameters
    ----------
    n_braun : float
        Exponent of the NTU correlation.
    Q_design_W : float
        Design heat [W] (> 0).
    m_w_kg_s : float
        Design water flow [kg/s].
    m_a_kg_s : float
        Design air flow, all cells at full speed [kg/s].
    T_wb_design_K : float
        Design wet-bulb [K] (:func:`cooling_fmu.weather.design_conditions`).
    approach_K : float
        Design approach [K] (> 0).
    p_atm_Pa : float
        Site pressure [Pa].
    cp_w_J_kgK : float
        Specific heat of water.

    Returns
    -------
    float
        ``c``.

    Raises
    ------
    ValueError
        If the design cannot be met by any tower with this air flow (required effectiveness >= 1).
    """
    T_in = T_wb_design_K + approach_K + Q_design_W / (m_w_kg_s * cp_w_J_kgK)
    h_w = sat_air(T_in, p_atm_Pa)[1]
    h_a = sat_air(T_wb_design_K, p_atm_Pa)[1]
    eps = Q_design_W / (m_a_kg_s * (h_w - h_a))
    if not 0.0 < eps < 1.0:
        raise ValueError(f"tower sizing: required air-side effectiveness {eps:.3f} is not below 1: the design air flow "
                         f"{m_a_kg_s:.0f} kg/s cannot carry {Q_design_W / 1e6:.2f} MW at a {approach_K:g} K approach")
    T_out = T_wb_design_K + approach_K
    ms = m_a_kg_s * (h_w - sat_air(T_out, p_atm_Pa)[1]) / (T_in - T_out) / (m_w_kg_s * cp_w_J_kgK)
    ntu = eps / (1.0 - eps) if abs(1.0 - ms) <= 1.0 - MSTAR_BALANCED else math.log((1.0 - ms * eps) / (1.0 - eps)) / (
        1.0 - ms)
    return ntu / (m_w_kg_s / m_a_kg_s) ** (1.0 + n_braun)


# ------------------------------------------------------------------------------------------------------------------
# plant v5 wiring: Braun's coefficients from the plant description, the air the running cells move, the inverse
# ------------------------------------------------------------------------------------------------------------------
def braun_coefficients(NTU_nominal: float, n_merkel: float, LG_nominal: float) -> tuple[float, float]:
    """Braun's ``(c, n)`` of the bank from its Merkel rating (the plant description's ``tower`` numbers).

    ``NTU_nominal`` is the water-side Merkel number ``KaV/L`` at full air and nominal water flow and ``KaV/L =
    NTU_nominal ((G/G_0) / (L/L_0))^n_merkel`` (ASHRAE Handbook HVAC Systems and Equipment 2020 ch. 40). Braun's
    air-side number is ``KaV/G = (KaV/L) (L/G)`` with ``L/G = LG_nominal (L/L_0) / (G/G_0)``, which gives
    ``KaV/G = c (m_w / m_a)^(1 + n)`` with ``c = NTU_nominal LG_nominal^n_merkel`` and ``n = -n_merkel``. Removing
    a cell (``NTU_nominal ((N-1)/N)^n``, ``LG_nominal N/(N-1)``, :mod:`cooling_fmu.redundancy`) leaves ``c`` unchanged,
    as it should for identical cells.

    Parameters
    ----------
    NTU_nominal : float
        Merkel number ``KaV/L`` at full air and nominal water flow.
    n_merkel : float
        Exponent of ``KaV/L ~ (L/G)^-n``.
    LG_nominal : float
        Water-to-air ratio at full fans and nominal water flow.

    Returns
    -------
    tuple of float
        ``(c, n)`` for :func:`braun_effectiveness`.
    """
    return NTU_nominal * LG_nominal ** n_merkel, -n_merkel


def size_ntu_nominal(n_merkel: float, LG_nominal: float, Q_design_W: float, m_w_kg_s: float, T_wb_design_K: float,
                     approach_K: float, p_atm_Pa: float, cp_w_J_kgK: float) -> float:
    """``NTU_nominal`` of a bank that rejects ``Q_design`` at the design wet-bulb and approach with full fans.

    :func:`size_braun_c` with the air ``m_w / LG_nominal``, converted back by :func:`braun_coefficients`.

    Parameters
    ----------
    n_merkel : float
        Exponent of the Merkel characteristic.
    LG_nominal : float
        Water-to-air ratio at full fans and nominal water flow.
    Q_design_W : float
        Design heat [W].
    m_w_kg_s : float
        Design tower-water flow [kg/s].
    T_wb_design_K : float
        Design wet-bulb [K] (:func:`cooling_fmu.weather.design_conditions`).
    approach_K : float
        Design approach [K] (leaving water minus the design wet-bulb).
    p_atm_Pa : float
        Site pressure [Pa] (saturation enthalpies).
    cp_w_J_kgK : float
        Specific heat of water [J/(kg K)].

    Returns
    -------
    float
        ``NTU_nominal`` (``KaV/L`` at full air and the design water flow).
    """
    c = size_braun_c(-n_merkel, Q_design_W, m_w_kg_s, m_w_kg_s / LG_nominal, T_wb_design_K, approach_K, p_atm_Pa,
                     cp_w_J_kgK)
    return c / LG_nominal ** n_merkel


def cells_in_service(n_cmd: float, y_demand: float | np.ndarray, n_cells: int, y_fan_min: float):
    """Cells running: the supervisory command ``n_cmd`` (clipped to ``1..N``) when it is at least 0.5, else the
    algebraic "as many cells as possible" rule :func:`cells_running` (ASHRAE 90.1-2019 sec. 6.5.5.2.2).

    Parameters
    ----------
    n_cmd : float
        Command of the supervisory stager (:class:`~cooling_fmu.components.staging.CellStager`); 0 = none.
    y_demand : float | np.ndarray
        Bank air-flow demand of the fan controller.
    n_cells : int
        Cells in the bank (the command's upper bound).
    y_fan_min : float
        Minimum speed of a running fan (for the algebraic rule).

    Returns
    -------
    float or ndarray
        Cells on, the shape of ``y_demand``.
    """
    auto = cells_running(y_demand, n_cells, y_fan_min)
    if n_cmd >= 0.5:
        return np.minimum(float(n_cells), np.maximum(1.0, n_cmd)) + 0.0 * np.asarray(auto)
    return auto


def cells_in_service_expr(n_cmd: str, y_demand: str, n_cells: int, y_fan_min: str) -> str:
    """Modelica expression of :func:`cells_in_service`.

    Parameters
    ----------
    n_cmd : str
        Name of the command input.
    y_demand : str
        Name of the demand.
    n_cells : int
        Cells in the bank (the command is clipped to 1..n_cells).
    y_fan_min : str
        Name of the minimum speed of the algebraic rule.

    Returns
    -------
    str
        The command where it is given, else :func:`cells_running_expr`.
    """
    return (f"noEvent(if {n_cmd} >= 0.5 then min({n_cells}.0, max(1.0, {n_cmd})) else "
            f"{cells_running_expr(y_demand, n_cells, y_fan_min)})")


def fan_speed(y_demand: float | np.ndarray, n_on: float | np.ndarray, n_cells: int, y_fan_min: float) -> tuple:
    """Speed of the running fans and the air they move: ``s = clip(y N / n_on, y_min, 1)``, ``y_air = n_on s / N``.

    Air flow = fan speed x design air flow per running cell (fan law ``V ~ speed``; no natural draft through idle
    cells). With the algebraic staging ``y_air == y_demand``.

    Parameters
    ----------
    y_demand : float | np.ndarray
        Bank air-flow demand (0..1).
    n_on : float | np.ndarray
        Cells running.
    n_cells : int
        Cells in the bank.
    y_fan_min : float
        Minimum speed of a running fan.

    Returns
    -------
    tuple
        ``(s, y_air)``.
    """
    s = np.minimum(1.0, np.maximum(y_fan_min, y_demand * n_cells / n_on))
    y_air = n_on * s / n_cells
    if np.ndim(s) == 0:
        return float(s), float(y_air)
    return s, y_air


def fan_speed_equations(s: str, y_air: str, y_demand: str, n_on: str, n_cells: int, y_fan_min: str) -> list[str]:
    """Modelica equations of :func:`fan_speed`.

    Parameters
    ----------
    s : str
        Name of the speed.
    y_air : str
        Name of the air-flow fraction moved.
    y_demand : str
        Name of the demand.
    n_on : str
        Name of the cells running.
    n_cells : int
        Cells in the bank.
    y_fan_min : str
        Name of the minimum speed.

    Returns
    -------
    list of str
        Two equations.
    """
    return [f"{s} = min(1.0, max({y_fan_min}, {y_demand} * {n_cells}.0 / {n_on}));",
            f"{y_air} = {n_on} * {s} / {n_cells}.0;"]


def braun_fan_fraction(c_braun: float, n_braun: float, m_w_kg_s: float | np.ndarray, m_a_full_kg_s: float,
                       T_w_in_K: float | np.ndarray, T_wb_K: float | np.ndarray, p_atm_Pa: float, cp_w_J_kgK: float,
                       Q_W: float | np.ndarray, y_lo: float, ytol: float = 0.0) -> np.ndarray:
    """Inverse of :func:`braun_effectiveness` in the air: the bank air-flow fraction ``y`` in ``[y_lo, 1]`` at which
    the tower rejects ``Q`` (vectorised; ``Q`` rises with the air).

    With ``ytol = 0`` (the steady states, the FMU's initial state) a bisection down to adjacent doubles. With
    ``ytol > 0`` (the fast plant's every step, :mod:`cooling_fmu.quasisteady`) the Illinois variant of regula falsi
    (Dowell & Jarratt 1971, BIT 11: superlinear, the bracket kept), stopped when the bracket is narrower than
    ``ytol`` or the heat is met to 1e-15 relative: about 6-10 tower evaluations instead of about 54, for a ``y``
    within ``ytol`` of the bisection's (the fan power moves by about 3 ``ytol`` relative, the cube law). Rows
    leave the iteration once converged; every row is solved as if alone (the result does not depend on the batch).

    Parameters
    ----------
    c_braun : float
        Braun's coefficient ``c`` (:func:`braun_coefficients`).
    n_braun : float
        Braun's exponent ``n``.
    m_w_kg_s : float | np.ndarray
        Water flow [kg/s].
    m_a_full_kg_s : float
        Air of the bank at full fans [kg/s].
    T_w_in_K : float | np.ndarray
        Entering water [K].
    T_wb_K : float | np.ndarray
        Wet-bulb [K].
    p_atm_Pa : float
        Site pressure [Pa].
    cp_w_J_kgK : float
        Specific heat of water.
    Q_W : float | np.ndarray
        Required heat [W].
    y_lo : float
        Smallest air-flow fraction (the fan floor).
    ytol : float
        Tolerance on ``y`` [-] (>= 0); 0: bisection to adjacent doubles.

    Returns
    -------
    ndarray
        ``y``; ``0.0`` where even ``y_lo`` rejects more than ``Q``, ``inf`` where full fans reject less.
    """
    shape = np.broadcast(m_w_kg_s, T_w_in_K, T_wb_K, Q_W).shape
    m_wat, T_in, T_wb, Q = (np.broadcast_to(np.asarray(v, dtype=float), shape) for v in (m_w_kg_s, T_w_in_K, T_wb_K,
                                                                                       Q_W))
    h_w, h_a = sat_air_enthalpy(T_in, p_atm_Pa), sat_air_enthalpy(T_wb, p_atm_Pa)  # independent of the air

    def q_at(y, r=slice(None)):
        return np.asarray(_braun(c_braun, n_braun, m_wat[r], y * m_a_full_kg_s, T_in[r], T_wb[r], p_atm_Pa,
                                 cp_w_J_kgK, h_w[r], h_a[r])[0])

    lo, hi = np.full(shape, float(y_lo)), np.ones(shape)
    q_lo, q_hi = q_at(lo), q_at(hi)
    if ytol > 0.0:
        y = illinois(q_at, Q, lo.ravel(), hi.ravel(), q_lo.ravel() - Q.ravel(), q_hi.ravel() - Q.ravel(), ytol)
        y = y.reshape(shape)
        return np.where(q_lo >= Q, 0.0, np.where(q_hi < Q, np.inf, y))
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if np.all((mid == lo) | (mid == hi)):
            break
        up = q_at(mid) < Q
        lo, hi = np.where(up, mid, lo), np.where(up, hi, mid)
    y = 0.5 * (lo + hi)
    return np.where(q_lo >= Q, 0.0, np.where(q_hi < Q, np.inf, y))
