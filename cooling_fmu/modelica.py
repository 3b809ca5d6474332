"""The flat Modelica plant model: generated from a :class:`~cooling_fmu.params.PlantParams`.

This module also mirrors its equations in numpy and solves its steady state.

The generated model is ONE flat model (arrays + for-loops, ``Real`` with ``unit=`` attributes, no Modelica
Standard Library, every switch wrapped in ``noEvent``) because rumoca 0.9.13 silently drops component modifiers and
connections and never fires events (rumoca 0.9.13 defects: docs/cooling.md). :func:`plant_equations` is the
same set of equations in numpy, line by line; the tests check the FMU against it at arbitrary states, so a silent
code-generation defect cannot hide.

Physics, per CDU ``i`` (``cp`` specific heat of water, SI throughout)
--------------------------------------------------------------------
* Secondary pump, speed follows the CDU load with a floor (constant rack temperature rise at part load):
  ``y_sec = clip(Q_CDU / Q_nominal, y_pump_sec_min, 1)``, ``m_sec = y_sec m_sec_nominal``,
  ``P_pump_sec = P_pump_sec_nominal y_sec^3`` (affinity laws for a fixed system curve).
* Facility-side valve: integral controller with anti-windup (tracking) on the secondary supply temperature::

      e_valve  = (T_sec_sup - T_sec_sup_set) / valve_dT_span
      y_valve  = clip(I_valve, y_valve_min, 1),    m_fac_cdu = y_valve m_fac_nominal
      der(I_valve) = e_valve / valve_Ti + (y_valve - I_valve) / valve_Ti

  (no proportional part: ``T_sec_sup`` is algebraic in the valve opening, so a P-term would create an algebraic
  loop, which rumoca 0.9.13 does not solve).
* Plate heat exchanger, counterflow effectiveness-NTU (Incropera & DeWitt, Fundamentals of Heat and Mass Transfer,
  6th ed., Table 11.3): ``C_min = cp min(m_sec, m_fac)``, ``C_r = C_min / C_max``, ``NTU = UA / C_min``,
  ``eps = (1 - exp(-NTU (1 - C_r))) / (1 - C_r exp(-NTU (1 - C_r)))`` (``NTU / (1 + NTU)`` when ``C_r -> 1``),
  ``Q_hx = eps C_min (T_sec - T_fac_sup)``.
* Secondary loop: one well-mixed volume at the CDU return temperature ``T_sec`` (state):
  ``m_water_sec cp der(T_sec) = Q_CDU - Q_hx``; supply to the racks ``T_sec_sup = T_sec - Q_hx / (m_sec cp)``.

Facility loop and towers
------------------------
* Total flow ``m_fac = sum(m_fac_cdu)``, ``w = m_fac / (n m_fac_nominal)``; pump ``P_pump_fac = P_nominal w^3``.
* Two well-mixed volumes (pipe and basin thermal mass): return ``T_fac_ret`` and basin/supply ``T_fac_sup``::

      m_water_ret cp der(T_fac_ret) = sum(Q_hx) - m_fac cp (T_fac_ret - T_fac_sup)
      m_water_sup cp der(T_fac_sup) = m_fac cp (T_chiller_out - T_fac_sup)

* Tower bank, Merkel characteristic in effectiveness form (ASHRAE Handbook HVAC Systems and Equipment 2020,
  ch. 40: ``KaV/L = c (L/G)^-n``, n ~ 0.6; EnergyPlus Engineering Reference, "Cooling towers", eps-NTU form):
  ``NTU_tower = NTU_nominal (y_fan / w)^n_merkel``, ``eps_tower = 1 - exp(-NTU_tower)``,
  ``Q_tower = eps_tower m_fac cp (T_fac_ret - T_wb)``, ``T_tower_out = T_fac_ret - Q_tower / (m_fac cp)``.
* Fan controller: PI on the basin temperature with back-calculation anti-windup (Astrom & Hagglund, Advanced PID
  Control, 2006, sec. 3.5)::

      e_fan = (T_fac_sup - T_fac_sup_set) / fan_dT_span,  u = fan_k_p e_fan + I_fan
      y_fan = clip(u, y_fan_min / n_cells, 1),  der(I_fan) = e_fan / fan_Ti + (y_fan - u) / fan_Ti

  ``y_fan`` is the bank's air-flow fraction. Staging: as many cells as possible run, all at the same speed, none
  below ``y_fan_min`` (ASHRAE 90.1-2019 sec. 6.5.5.2.2, multicell heat rejection):
  ``n_cells_on = max(1, #{k in 1..n_cells : y_fan n_cells >= k y_fan_min})``, speed ``s = y_fan n_cells /
  n_cells_on``, ``P_fan = n_cells_on P_fan_cell s^3`` (fan affinity law). Hotter wet-bulb -> larger ``y_fan``.
* Trim chiller (optional) after the towers, allowed when ``T_wb > T_wb_switch`` (economiser below):
  ``Q_chiller = min(Q_max, max(0, m_fac cp (T_tower_out - T_chiller_set)))``, ``T_chiller_set = T_fac_sup_set +
  dT_deadband``; ``COP = min(COP_max, eta_carnot T_chiller_set / max(dT_lift_min, T_wb + dT_cond -
  T_chiller_set))``, ``P_chiller = Q_chiller / COP``; its condenser is evaporatively cooled (its heat leaves with
  the tower water use).
* Water use (Cooling Technology Institute rule "evaporation ~ 0.00085 x flow [gpm] x range [F]", i.e. ~85 % of the
  heat leaves as latent heat; mass balance of dissolved solids, e.g. SPX "Cooling Tower Fundamentals", 2nd ed.,
  ch. 5): ``m_evap = f_latent (Q_tower + Q_chiller + P_chiller) / h_fg``, ``m_drift = drift_fraction m_fac``,
  ``m_blowdown = max(0, m_evap / (COC - 1) - m_drift)``, ``m_makeup = m_evap + m_drift + m_blowdown``.
* ``P_cooling = sum(P_pump_sec) + P_pump_fac + P_fan + P_chiller``. Running integrals (J, kg): ``E_heat_in``,
  ``E_tower_out``, ``E_chiller_out`` (heat removed by the chiller), ``E_cooling_out``, ``E_fan_out``,
  ``M_makeup_out``. ``E_stored = cp (m_water_sec sum(T_sec - T_ref) + m_water_ret (T_fac_ret - T_ref) + m_water_sup
  (T_fac_sup - T_ref))``. The FMU integrates states and totals with the same update, so ``E_heat_in - E_tower_out -
  E_chiller_out - (E_stored - E_stored(0))`` closes to round-off whatever the integration error.
"""

from __future__ import annotations

import numpy as np

from .params import PlantParams

__all__ = [
    "GENERATOR_VERSION",
    "STATE_NAMES",
    "analytic_steady_state",
    "generate_plant_modelica",
    "model_name_for",
    "plant_equations",
    "state_vector",
]

#: Bump when the generated source changes meaning (the FMU cache key also hashes the source text itself).
GENERATOR_VERSION = "2"

#: Names of the state groups in FMU order: per-CDU ``T_sec[n]``, ``I_valve[n]``, then scalars.
STATE_NAMES = ("T_sec", "I_valve", "T_fac_sup", "T_fac_ret", "I_fan")

#: ``C_r`` above which the counterflow effectiveness uses its ``C_r = 1`` limit (avoids 0/0).
CR_BALANCED = 0.9999


def model_name_for(params: PlantParams) -> str:
    """Return the Modelica model name used for a plant.

    Parameters
    ----------
    params : PlantParams
        Plant description.

    Returns
    -------
    str
        ``"CoolingPlant_<name>_<n_cdu>"``, a valid Modelica identifier.
    """
    return f"CoolingPlant_{params.name}_{params.n_cdu}"


def _r(x: float) -> str:
    """Format a float as an exact Modelica real literal."""
    return repr(float(x))


def generate_plant_modelica(params: PlantParams) -> str:
    """Generate one flat Modelica model of the cooling plant.

    Parameters
    ----------
    params : PlantParams
        Plant description (SI units).

    Returns
    -------
    str
        Modelica source of model :func:`model_name_for` ``(params)``. Inputs ``Q_flow_CDU[n]`` (W), ``T_wb`` (K);
        states ``T_sec[n]`` (K), ``I_valve[n]`` (1), ``T_fac_sup``, ``T_fac_ret`` (K), ``I_fan`` (1) and the
        running totals; outputs as in ``maps/hpctwin_plant.yaml``. The physics is in the module docstring.

    Notes
    -----
    Initial states are the ``start`` values (``initial="exact"``), settable through ``fmi2SetReal`` before
    ``fmi2ExitInitializationMode``: rumoca 0.9.13 ignores ``initial equation`` sections.
    """
    n = params.n_cdu
    c, f, t, ch = params.cdu, params.facility, params.tower, params.chiller
    T0 = _r(params.T_ref_K)
    name = model_name_for(params)
    N = t.n_cells
    stages = " + ".join(f"noEvent(if y_fan * {N}.0 >= {k}.0 * y_fan_min then 1.0 else 0.0)" for k in range(1, N + 1))
    T_ch_set = t.T_fac_sup_set_K + ch.dT_deadband_K
    src = f"""model {name} "{params.description} (generated by hpctwin cooling_fmu, generator v{GENERATOR_VERSION})"
  // ---- parameters (SI) ----
  parameter Real cp(unit="J/(kg.K)") = {_r(params.cp_water_J_kgK)} "Specific heat of water";
  parameter Real T_ref(unit="K") = {T0} "Reference temperature of E_stored";
  parameter Real Q_flow_CDU_nominal(unit="W") = {_r(c.Q_flow_nominal_W)} "Design heat per CDU (secondary pump at full speed)";
  parameter Real m_flow_sec_nominal(unit="kg/s") = {_r(c.m_flow_sec_nominal_kg_s)} "Secondary flow per CDU at full pump speed";
  parameter Real m_flow_fac_nominal(unit="kg/s") = {_r(c.m_flow_fac_nominal_kg_s)} "Facility flow per CDU HX, valve open";
  parameter Real m_water_sec(unit="kg") = {_r(c.m_water_sec_kg)} "Water mass of one secondary loop";
  parameter Real UA_hx(unit="W/K") = {_r(c.UA_hx_W_K)} "Conductance of one CDU plate heat exchanger";
  parameter Real P_pump_sec_nominal(unit="W") = {_r(c.P_pump_sec_nominal_W)} "Secondary pump power at full flow";
  parameter Real y_pump_sec_min(unit="1") = {_r(c.y_pump_sec_min)} "Minimum secondary flow fraction";
  parameter Real y_valve_min(unit="1") = {_r(c.y_valve_min)} "Minimum facility valve opening";
  parameter Real T_sec_sup_set(unit="K") = {_r(c.T_sec_sup_set_K)} "Secondary supply temperature setpoint";
  parameter Real valve_Ti(unit="s") = {_r(c.valve_Ti_s)} "Valve controller integral time";
  parameter Real valve_dT_span(unit="K") = {_r(c.valve_dT_span_K)} "Valve controller error span";
  parameter Real m_flow_fac_design(unit="kg/s") = {_r(params.m_flow_fac_design_kg_s)} "Facility flow, all valves open";
  parameter Real m_water_sup(unit="kg") = {_r(f.m_water_sup_kg)} "Water mass of basins and supply piping";
  parameter Real m_water_ret(unit="kg") = {_r(f.m_water_ret_kg)} "Water mass of return piping";
  parameter Real P_pump_fac_nominal(unit="W") = {_r(f.P_pump_nominal_W)} "Facility pump power at full flow";
  parameter Real NTU_tower_nominal(unit="1") = {_r(t.NTU_nominal)} "Tower Merkel number at full air and design water flow";
  parameter Real n_merkel(unit="1") = {_r(t.n_merkel)} "Exponent of the tower characteristic";
  parameter Real P_fan_cell_nominal(unit="W") = {_r(t.P_fan_cell_nominal_W)} "Fan power of one cell at full speed";
  parameter Real y_fan_min(unit="1") = {_r(t.y_fan_min)} "Minimum speed of a running fan";
  parameter Real y_fan_floor(unit="1") = {_r(params.y_fan_floor)} "Minimum bank air-flow fraction (one cell at minimum speed)";
  parameter Real T_fac_sup_set(unit="K") = {_r(t.T_fac_sup_set_K)} "Facility supply (basin) temperature setpoint";
  parameter Real fan_k_p(unit="1") = {_r(t.fan_k_p)} "Fan controller proportional gain";
  parameter Real fan_Ti(unit="s") = {_r(t.fan_Ti_s)} "Fan controller integral time (= anti-windup tracking time)";
  parameter Real fan_dT_span(unit="K") = {_r(t.fan_dT_span_K)} "Fan controller error span";
  parameter Real h_fg(unit="J/kg") = {_r(t.h_fg_J_kg)} "Latent heat of vaporisation";
  parameter Real f_latent(unit="1") = {_r(t.f_latent)} "Fraction of rejected heat leaving as latent heat";
  parameter Real coc(unit="1") = {_r(t.cycles_of_concentration)} "Cycles of concentration";
  parameter Real drift_fraction(unit="1") = {_r(t.drift_fraction)} "Drift as a fraction of circulating flow";
  parameter Real have_chiller(unit="1") = {_r(1.0 if ch.enabled else 0.0)} "1 if the plant has a trim chiller";
  parameter Real Q_flow_chiller_max(unit="W") = {_r(ch.Q_flow_max_W)} "Chiller capacity";
  parameter Real T_wb_switch(unit="K") = {_r(ch.T_wb_switch_K)} "Wet-bulb above which the chiller may run";
  parameter Real T_chiller_set(unit="K") = {_r(T_ch_set)} "Chiller leaving-water setpoint";
  parameter Real eta_carnot(unit="1") = {_r(ch.eta_carnot)} "Chiller fraction of Carnot COP";
  parameter Real COP_max(unit="1") = {_r(ch.COP_max)} "Chiller maximum COP";
  parameter Real dT_lift_min(unit="K") = {_r(ch.dT_lift_min_K)} "Chiller minimum lift";
  parameter Real dT_cond(unit="K") = {_r(ch.dT_cond_K)} "Condensing temperature above wet-bulb";
  // ---- inputs ----
  input Real Q_flow_CDU[{n}](each unit="W", each start=0.0) "Heat from racks into each CDU secondary loop (>= 0)";
  input Real T_wb(unit="K", start={T0}) "Outdoor wet-bulb temperature";
  // ---- states (start values = initial state, set before exitInitializationMode) ----
  Real T_sec[{n}](each unit="K", each start={T0}) "Secondary loop mixed temperature = CDU return temperature";
  Real I_valve[{n}](each unit="1", each start=1.0) "Valve controller integrator";
  Real T_basin(unit="K", start={T0}) "Basin and supply piping mixed temperature = facility supply temperature";
  Real T_pipe_ret(unit="K", start={T0}) "Return piping mixed temperature = facility return temperature";
  Real I_fan(unit="1", start=1.0) "Fan controller integrator";
  Real E_heat(unit="J", start=0.0) "Heat received from racks since initialization";
  Real E_tower(unit="J", start=0.0) "Heat rejected by the towers since initialization";
  Real E_chiller(unit="J", start=0.0) "Heat removed by the chiller since initialization";
  Real E_cooling(unit="J", start=0.0) "Cooling electrical energy since initialization";
  Real E_fan(unit="J", start=0.0) "Fan electrical energy since initialization";
  Real M_makeup(unit="kg", start=0.0) "Make-up water since initialization";
  // ---- algebraic variables ----
  Real y_sec[{n}](each unit="1") "Secondary pump speed fraction";
  Real C_min[{n}](each unit="W/K") "Smaller heat-capacity rate of each HX";
  Real C_r[{n}](each unit="1") "Heat-capacity rate ratio of each HX";
  Real Z_hx[{n}](each unit="1") "exp(-NTU (1 - C_r)) of each HX";
  Real eps_hx[{n}](each unit="1") "Effectiveness of each HX";
  Real e_valve[{n}](each unit="1") "Normalised valve controller error";
  Real w_fac(unit="1") "Facility flow fraction of design";
  Real e_fan(unit="1") "Normalised fan controller error";
  Real u_fan(unit="1") "Unsaturated fan controller output";
  Real s_fan(unit="1") "Speed of each running fan";
  Real NTU_tower(unit="1") "Tower Merkel number";
  Real eps_tower(unit="1") "Tower effectiveness";
  Real T_chiller_out(unit="K") "Water temperature after the chiller";
  Real COP_chiller(unit="1") "Chiller COP";
  // ---- outputs ----
  output Real T_sec_sup[{n}](each unit="K") "CDU supply temperature to racks";
  output Real T_sec_ret[{n}](each unit="K") "CDU return temperature from racks";
  output Real m_flow_sec[{n}](each unit="kg/s") "Secondary mass flow of each CDU";
  output Real m_flow_fac_cdu[{n}](each unit="kg/s") "Facility mass flow through each CDU HX";
  output Real y_valve[{n}](each unit="1") "Facility valve opening of each CDU";
  output Real Q_flow_hx[{n}](each unit="W") "Heat through each CDU HX, secondary to facility (> 0 when cooling)";
  output Real P_pump_sec[{n}](each unit="W") "Secondary pump electrical power";
  output Real T_fac_sup(unit="K") "Facility supply temperature (basin)";
  output Real T_fac_ret(unit="K") "Facility return temperature (tower entering water)";
  output Real T_tower_out(unit="K") "Tower leaving water temperature";
  output Real m_flow_fac(unit="kg/s") "Total facility mass flow";
  output Real P_pump_fac(unit="W") "Facility pump electrical power";
  output Real y_fan(unit="1") "Tower bank air-flow fraction";
  output Real n_cells_on(unit="1") "Tower cells with the fan running";
  output Real P_fan_tower(unit="W") "Tower fan electrical power";
  output Real Q_flow_tower(unit="W") "Heat rejected by the towers (> 0 when cooling)";
  output Real Q_flow_chiller(unit="W") "Heat removed from the facility water by the chiller";
  output Real P_chiller(unit="W") "Chiller electrical power";
  output Real P_cooling(unit="W") "Total cooling electrical power (pumps + fans + chiller)";
  output Real m_flow_evap(unit="kg/s") "Tower evaporation";
  output Real m_flow_drift(unit="kg/s") "Tower drift";
  output Real m_flow_blowdown(unit="kg/s") "Tower blowdown";
  output Real m_flow_makeup(unit="kg/s") "Tower make-up water";
  output Real E_stored(unit="J") "Thermal energy stored in the water relative to T_ref";
  output Real E_heat_in(unit="J") "Heat received from racks since initialization";
  output Real E_tower_out(unit="J") "Heat rejected by the towers since initialization";
  output Real E_chiller_out(unit="J") "Heat removed by the chiller since initialization";
  output Real E_cooling_out(unit="J") "Cooling electrical energy since initialization";
  output Real E_fan_out(unit="J") "Tower fan electrical energy since initialization";
  output Real M_makeup_out(unit="kg") "Make-up water since initialization";
equation
  for i in 1:{n} loop
    y_sec[i] = min(1.0, max(y_pump_sec_min, Q_flow_CDU[i] / Q_flow_CDU_nominal));
    m_flow_sec[i] = y_sec[i] * m_flow_sec_nominal;
    y_valve[i] = min(1.0, max(y_valve_min, I_valve[i]));
    m_flow_fac_cdu[i] = y_valve[i] * m_flow_fac_nominal;
    C_min[i] = cp * min(m_flow_sec[i], m_flow_fac_cdu[i]);
    C_r[i] = min(m_flow_sec[i], m_flow_fac_cdu[i]) / max(m_flow_sec[i], m_flow_fac_cdu[i]);
    Z_hx[i] = exp(-(UA_hx / C_min[i]) * (1.0 - C_r[i]));
    eps_hx[i] = noEvent(if C_r[i] < {CR_BALANCED} then (1.0 - Z_hx[i]) / (1.0 - C_r[i] * Z_hx[i]) else (UA_hx / C_min[i]) / (1.0 + UA_hx / C_min[i]));
    Q_flow_hx[i] = eps_hx[i] * C_min[i] * (T_sec[i] - T_basin);
    m_water_sec * cp * der(T_sec[i]) = Q_flow_CDU[i] - Q_flow_hx[i];
    T_sec_ret[i] = T_sec[i];
    T_sec_sup[i] = T_sec[i] - Q_flow_hx[i] / (m_flow_sec[i] * cp);
    e_valve[i] = (T_sec_sup[i] - T_sec_sup_set) / valve_dT_span;
    der(I_valve[i]) = e_valve[i] / valve_Ti + (y_valve[i] - I_valve[i]) / valve_Ti;
    P_pump_sec[i] = P_pump_sec_nominal * y_sec[i] ^ 3;
  end for;
  m_flow_fac = sum(m_flow_fac_cdu);
  w_fac = m_flow_fac / m_flow_fac_design;
  P_pump_fac = P_pump_fac_nominal * w_fac ^ 3;
  e_fan = (T_basin - T_fac_sup_set) / fan_dT_span;
  u_fan = fan_k_p * e_fan + I_fan;
  y_fan = min(1.0, max(y_fan_floor, u_fan));
  der(I_fan) = e_fan / fan_Ti + (y_fan - u_fan) / fan_Ti;
  n_cells_on = max(1.0, {stages});
  s_fan = y_fan * {N}.0 / n_cells_on;
  P_fan_tower = n_cells_on * P_fan_cell_nominal * s_fan ^ 3;
  NTU_tower = NTU_tower_nominal * (y_fan / w_fac) ^ n_merkel;
  eps_tower = 1.0 - exp(-NTU_tower);
  Q_flow_tower = eps_tower * m_flow_fac * cp * (T_pipe_ret - T_wb);
  T_tower_out = T_pipe_ret - Q_flow_tower / (m_flow_fac * cp);
  Q_flow_chiller = noEvent(if T_wb > T_wb_switch then have_chiller else 0.0) * min(Q_flow_chiller_max, max(0.0, m_flow_fac * cp * (T_tower_out - T_chiller_set)));
  T_chiller_out = T_tower_out - Q_flow_chiller / (m_flow_fac * cp);
  COP_chiller = min(COP_max, eta_carnot * T_chiller_set / max(dT_lift_min, T_wb + dT_cond - T_chiller_set));
  P_chiller = Q_flow_chiller / COP_chiller;
  m_water_ret * cp * der(T_pipe_ret) = sum(Q_flow_hx) - m_flow_fac * cp * (T_pipe_ret - T_basin);
  m_water_sup * cp * der(T_basin) = m_flow_fac * cp * (T_chiller_out - T_basin);
  T_fac_sup = T_basin;
  T_fac_ret = T_pipe_ret;
  m_flow_evap = f_latent * (Q_flow_tower + Q_flow_chiller + P_chiller) / h_fg;
  m_flow_drift = drift_fraction * m_flow_fac;
  m_flow_blowdown = max(0.0, m_flow_evap / (coc - 1.0) - m_flow_drift);
  m_flow_makeup = m_flow_evap + m_flow_drift + m_flow_blowdown;
  P_cooling = sum(P_pump_sec) + P_pump_fac + P_fan_tower + P_chiller;
  E_stored = cp * (m_water_sec * (sum(T_sec) - {n}.0 * T_ref) + m_water_ret * (T_pipe_ret - T_ref) + m_water_sup * (T_basin - T_ref));
  der(E_heat) = sum(Q_flow_CDU);
  der(E_tower) = Q_flow_tower;
  der(E_chiller) = Q_flow_chiller;
  der(E_cooling) = P_cooling;
  der(E_fan) = P_fan_tower;
  der(M_makeup) = m_flow_makeup;
  E_heat_in = E_heat;
  E_tower_out = E_tower;
  E_chiller_out = E_chiller;
  E_cooling_out = E_cooling;
  E_fan_out = E_fan;
  M_makeup_out = M_makeup;
end {name};
"""
    return src


# ---------------------------------------------------------------------------------------------------------------
# numpy mirror of the model equations
# ---------------------------------------------------------------------------------------------------------------
def _hx_eps(params: PlantParams, m_sec: np.ndarray, m_fac: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Counterflow effectiveness and C_min [W/K] of the CDU heat exchangers (same formula as the model)."""
    cp, UA = params.cp_water_J_kgK, params.cdu.UA_hx_W_K
    mmin, mmax = np.minimum(m_sec, m_fac), np.maximum(m_sec, m_fac)
    C_min = cp * mmin
    C_r = mmin / mmax
    ntu = UA / C_min
    Z = np.exp(-ntu * (1.0 - C_r))
    with np.errstate(invalid="ignore", divide="ignore"):  # np.where evaluates both branches; the balanced one is used
        eps = np.where(C_r < CR_BALANCED, (1.0 - Z) / (1.0 - C_r * Z), ntu / (1.0 + ntu))
    return eps, C_min


def _n_cells_on(params: PlantParams, y_fan: float) -> float:
    N, s_min = params.tower.n_cells, params.tower.y_fan_min
    return max(1.0, float(sum(1.0 for k in range(1, N + 1) if y_fan * N >= k * s_min)))


def _chiller(params: PlantParams, m_fac: float, T_tower_out: float, T_wb: float) -> tuple[float, float, float]:
    """(Q_flow_chiller [W], P_chiller [W], COP) of the trim chiller."""
    ch, t, cp = params.chiller, params.tower, params.cp_water_J_kgK
    T_set = t.T_fac_sup_set_K + ch.dT_deadband_K
    on = (1.0 if ch.enabled else 0.0) if T_wb > ch.T_wb_switch_K else 0.0
    Q = on * min(ch.Q_flow_max_W, max(0.0, m_fac * cp * (T_tower_out - T_set)))
    cop = min(ch.COP_max, ch.eta_carnot * T_set / max(ch.dT_lift_min_K, T_wb + ch.dT_cond_K - T_set))
    return Q, Q / cop, cop


def state_vector(params: PlantParams, T_sec, I_valve, T_fac_sup: float, T_fac_ret: float, I_fan: float) -> np.ndarray:
    """Pack the plant state in FMU order.

    Parameters
    ----------
    params : PlantParams
        Plant description.
    T_sec, I_valve : array_like, shape (n_cdu,) or scalar
        Secondary temperatures [K] and valve integrators [1].
    T_fac_sup, T_fac_ret : float
        Facility supply (basin) and return temperatures [K].
    I_fan : float
        Fan integrator [1].

    Returns
    -------
    ndarray, shape (2 n_cdu + 3,)
        ``[T_sec[1..n], I_valve[1..n], T_fac_sup, T_fac_ret, I_fan]``.
    """
    n = params.n_cdu
    return np.concatenate([np.broadcast_to(np.asarray(T_sec, float), (n,)),
                           np.broadcast_to(np.asarray(I_valve, float), (n,)), [T_fac_sup, T_fac_ret, I_fan]])


def plant_equations(params: PlantParams, x: np.ndarray, heat_w: np.ndarray, T_wb_K: float) -> dict[str, object]:
    """Evaluate the model's equations (numpy mirror of the generated Modelica) at one state and input.

    Parameters
    ----------
    params : PlantParams
        Plant description.
    x : ndarray, shape (2 n_cdu + 3,)
        State in the order of :func:`state_vector` [K, 1, K, K, 1].
    heat_w : ndarray, shape (n_cdu,)
        Heat into each CDU [W].
    T_wb_K : float
        Wet-bulb temperature [K].

    Returns
    -------
    dict
        Every output of the model by name (per-CDU ones as ndarray, shape (n_cdu,)), except the running totals;
        plus ``"der"``: ndarray, shape (2 n_cdu + 3,), the state derivatives [K/s, 1/s].
    """
    n = params.n_cdu
    c, f, t = params.cdu, params.facility, params.tower
    cp = params.cp_water_J_kgK
    q = np.asarray(heat_w, dtype=float)
    T_sec, I_valve = x[:n], x[n:2 * n]
    T_fs, T_fr, I_fan = float(x[2 * n]), float(x[2 * n + 1]), float(x[2 * n + 2])
    y_sec = np.minimum(1.0, np.maximum(c.y_pump_sec_min, q / c.Q_flow_nominal_W))
    m_sec = y_sec * c.m_flow_sec_nominal_kg_s
    y_valve = np.minimum(1.0, np.maximum(c.y_valve_min, I_valve))
    m_fac_cdu = y_valve * c.m_flow_fac_nominal_kg_s
    eps, C_min = _hx_eps(params, m_sec, m_fac_cdu)
    Q_hx = eps * C_min * (T_sec - T_fs)
    T_sup = T_sec - Q_hx / (m_sec * cp)
    e_valve = (T_sup - c.T_sec_sup_set_K) / c.valve_dT_span_K
    m_fac = float(np.sum(m_fac_cdu))
    w = m_fac / params.m_flow_fac_design_kg_s
    e_fan = (T_fs - t.T_fac_sup_set_K) / t.fan_dT_span_K
    u_fan = t.fan_k_p * e_fan + I_fan
    y_fan = min(1.0, max(params.y_fan_floor, u_fan))
    n_on = _n_cells_on(params, y_fan)
    s = y_fan * t.n_cells / n_on
    P_fan = n_on * t.P_fan_cell_nominal_W * s**3
    eps_t = 1.0 - np.exp(-t.NTU_nominal * (y_fan / w) ** t.n_merkel)
    Q_tower = float(eps_t * m_fac * cp * (T_fr - T_wb_K))
    T_tw = T_fr - Q_tower / (m_fac * cp)
    Q_ch, P_ch, _ = _chiller(params, m_fac, T_tw, T_wb_K)
    T_ch_out = T_tw - Q_ch / (m_fac * cp)
    P_sec = c.P_pump_sec_nominal_W * y_sec**3
    P_fac = f.P_pump_nominal_W * w**3
    evap = t.f_latent * (Q_tower + Q_ch + P_ch) / t.h_fg_J_kg
    drift = t.drift_fraction * m_fac
    blow = max(0.0, evap / (t.cycles_of_concentration - 1.0) - drift)
    der = np.concatenate([
        (q - Q_hx) / (c.m_water_sec_kg * cp),
        e_valve / c.valve_Ti_s + (y_valve - I_valve) / c.valve_Ti_s,
        [m_fac * cp * (T_ch_out - T_fs) / (f.m_water_sup_kg * cp),
         (float(np.sum(Q_hx)) - m_fac * cp * (T_fr - T_fs)) / (f.m_water_ret_kg * cp),
         e_fan / t.fan_Ti_s + (y_fan - u_fan) / t.fan_Ti_s],
    ])
    T_ref = params.T_ref_K
    return {
        "T_sec_sup": T_sup, "T_sec_ret": T_sec.copy(), "m_flow_sec": m_sec, "m_flow_fac_cdu": m_fac_cdu,
        "y_valve": y_valve, "Q_flow_hx": Q_hx, "P_pump_sec": P_sec,
        "T_fac_sup": T_fs, "T_fac_ret": T_fr, "T_tower_out": T_tw, "m_flow_fac": m_fac, "P_pump_fac": P_fac,
        "y_fan": y_fan, "n_cells_on": n_on, "P_fan_tower": P_fan, "Q_flow_tower": Q_tower,
        "Q_flow_chiller": Q_ch, "P_chiller": P_ch, "P_cooling": float(np.sum(P_sec) + P_fac + P_fan + P_ch),
        "m_flow_evap": evap, "m_flow_drift": drift, "m_flow_blowdown": blow, "m_flow_makeup": evap + drift + blow,
        "E_stored": cp * (c.m_water_sec_kg * float(np.sum(T_sec - T_ref)) + f.m_water_ret_kg * (T_fr - T_ref)
                          + f.m_water_sup_kg * (T_fs - T_ref)),
        "der": der,
    }


# ---------------------------------------------------------------------------------------------------------------
# steady state
# ---------------------------------------------------------------------------------------------------------------
def _bisect(fun, lo: float, hi: float, n_iter: int = 200) -> float:
    """Root of an increasing scalar function on [lo, hi] by bisection to machine precision."""
    flo = fun(lo)
    for _ in range(n_iter):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if (fun(mid) > 0) == (flo > 0):
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def _valves_at(params: PlantParams, q: np.ndarray, T_fs: float) -> tuple[np.ndarray, np.ndarray]:
    """Steady valve openings and secondary temperatures for a facility supply temperature.

    Solves ``T_sec_sup(y) = T_sec_sup_set`` per CDU (``T_sec_sup`` decreases with the opening ``y``); a CDU whose
    setpoint is out of reach sits at the valve limit. Returns (y_valve, T_sec).
    """
    c, cp = params.cdu, params.cp_water_J_kgK
    m_sec = np.minimum(1.0, np.maximum(c.y_pump_sec_min, q / c.Q_flow_nominal_W)) * c.m_flow_sec_nominal_kg_s

    def t_sup(y):
        eps, C_min = _hx_eps(params, m_sec, y * c.m_flow_fac_nominal_kg_s)
        T_sec = T_fs + q / (eps * C_min)
        return T_sec - q / (m_sec * cp), T_sec

    f_lo = t_sup(np.full_like(q, c.y_valve_min))[0] - c.T_sec_sup_set_K
    f_hi = t_sup(np.ones_like(q))[0] - c.T_sec_sup_set_K
    lo, hi = np.full_like(q, c.y_valve_min), np.ones_like(q)
    for _ in range(200):  # vectorised bisection on the decreasing function f(y)
        mid = 0.5 * (lo + hi)
        fm = t_sup(mid)[0] - c.T_sec_sup_set_K
        lo, hi = np.where(fm > 0, mid, lo), np.where(fm > 0, hi, mid)
    y = np.where(f_lo <= 0, c.y_valve_min, np.where(f_hi >= 0, 1.0, 0.5 * (lo + hi)))
    return y, t_sup(y)[1]


def analytic_steady_state(params: PlantParams, heat_w: np.ndarray, T_wb_K: float) -> dict[str, object]:
    """Steady state of the generated plant model for a constant load and wet-bulb.

    Derivation (every ``der(.) = 0``):

    1. Secondary loop: ``Q_hx,i = Q_i``; so ``T_sec,i = T_fac_sup + Q_i / (eps_i C_min,i)`` and
       ``T_sec_sup,i = T_sec,i - Q_i / (m_sec,i cp)``. The valve integrator is at rest when ``T_sec_sup,i`` is at
       its setpoint (``y`` found by bisection of this monotone relation) or when the valve is saturated at a limit
       (then ``I = y + e``: the tracking term balances the error, ``valve_Ti`` being both times).
    2. Facility loop: ``Q_tower + Q_chiller = sum(Q_i)`` and ``T_fac_ret = T_fac_sup + sum(Q_i) / (m_fac cp)``.
    3. Fan controller at rest either with ``T_fac_sup = T_fac_sup_set`` (regime A: the air flow solves
       ``eps_tower(y_fan) = (T_ret - T_set) / (T_ret - T_wb)``, i.e. ``y_fan = w (-ln(1 - eps) / NTU_nominal)^(1/n)``
       in closed form) or saturated at the floor (regime B, cold / idle) or at full air flow (regime C, hot). In B
       and C ``T_fac_sup`` solves the scalar fixed point ``T_fac_sup = T_chiller_out(T_fac_sup)`` (bisection), and
       the integrator sits at ``I = y - k_p e + e``.

    Parameters
    ----------
    params : PlantParams
        Plant description.
    heat_w : ndarray, shape (n_cdu,)
        Constant heat into each CDU [W], >= 0.
    T_wb_K : float
        Constant wet-bulb temperature [K].

    Returns
    -------
    dict
        Every output of :func:`plant_equations` at the steady state, plus ``"x"``: ndarray, shape (2 n_cdu + 3,),
        the steady state (:func:`state_vector` order), and ``"regime"``: ``"setpoint"``, ``"fan_floor"`` or
        ``"fan_full"``.

    Raises
    ------
    ValueError
        If ``heat_w`` has the wrong shape or contains negative or non-finite values.
    """
    q = np.asarray(heat_w, dtype=float)
    if q.shape != (params.n_cdu,):
        raise ValueError(f"heat_w must have shape ({params.n_cdu},), got {q.shape}")
    if not np.all(np.isfinite(q)) or np.any(q < 0):
        raise ValueError("heat_w must be finite and >= 0")
    c, t, cp = params.cdu, params.tower, params.cp_water_J_kgK
    T_wb = float(T_wb_K)
    Q = float(q.sum())
    y_floor = params.y_fan_floor

    def loop(T_fs: float, y_fan: float):
        y_v, T_sec = _valves_at(params, q, T_fs)
        m = float(np.sum(y_v)) * c.m_flow_fac_nominal_kg_s
        T_ret = T_fs + Q / (m * cp)
        eps_t = 1.0 - np.exp(-t.NTU_nominal * (y_fan / (m / params.m_flow_fac_design_kg_s)) ** t.n_merkel)
        T_tw = T_ret - eps_t * (T_ret - T_wb)
        Q_ch = _chiller(params, m, T_tw, T_wb)[0]
        return y_v, T_sec, m, T_ret, T_tw - Q_ch / (m * cp)

    T_set = t.T_fac_sup_set_K
    y_v, T_sec, m, T_ret, _ = loop(T_set, 1.0)
    if Q == 0.0:  # no heat: the water settles at the wet-bulb; fans idle if that is below the setpoint
        y_req = 0.0 if T_wb <= T_set else np.inf
    elif T_ret <= T_wb:
        y_req = np.inf
    else:
        eps_req = (T_ret - T_set) / (T_ret - T_wb)
        y_req = np.inf if eps_req >= 1.0 else (
            (m / params.m_flow_fac_design_kg_s) * (-np.log1p(-eps_req) / t.NTU_nominal) ** (1.0 / t.n_merkel))
    if y_floor <= y_req <= 1.0:
        regime, y_fan, T_fs, I_fan = "setpoint", float(y_req), T_set, float(y_req)
    else:
        regime, y_fan = ("fan_floor", y_floor) if y_req < y_floor else ("fan_full", 1.0)
        T_fs = _bisect(lambda T: T - loop(T, y_fan)[4], T_wb - 50.0, T_wb + 150.0)
        y_v, T_sec, m, T_ret, _ = loop(T_fs, y_fan)
        e = (T_fs - T_set) / t.fan_dT_span_K
        I_fan = y_fan - t.fan_k_p * e + e
    # valve integrators: at the setpoint I = y; saturated I = y + e (tracking time = integral time)
    m_sec = np.minimum(1.0, np.maximum(c.y_pump_sec_min, q / c.Q_flow_nominal_W)) * c.m_flow_sec_nominal_kg_s
    e_v = (T_sec - q / (m_sec * cp) - c.T_sec_sup_set_K) / c.valve_dT_span_K
    sat = (y_v <= c.y_valve_min) | (y_v >= 1.0)
    I_valve = np.where(sat, y_v + e_v, y_v)
    x = state_vector(params, T_sec, I_valve, T_fs, T_ret, I_fan)
    out = plant_equations(params, x, q, T_wb)
    out["x"] = x
    out["regime"] = regime
    return out
