"""The flat Modelica plant model: generated from a :class:`~cooling_fmu.params.PlantParams`.

This module also mirrors its equations in numpy and solves its steady state.

Every relation lives once, in the component library :mod:`cooling_fmu.components`: its numpy function serves
:func:`plant_equations`, :func:`steady_states` and the fast plant, and its Modelica fragment (generated from the same
numbers) is inlined here. The generated model is ONE flat model (arrays + for-loops, ``Real`` with ``unit=`` attributes, no Modelica
Standard Library, every switch wrapped in ``noEvent``) because rumoca 0.9.13 silently drops component modifiers and
connections and never fires events (rumoca 0.9.13 defects: docs/cooling.md). :func:`plant_equations` is the
same set of equations in numpy, line by line; the tests check the FMU against it at arbitrary states, so a silent
code-generation defect cannot hide.

Topology: racks -> CDU secondary loops -> CDU plate heat exchangers -> facility (hot-water) loop -> intermediate
plate heat exchanger (IHX) -> [optional trim chiller] -> facility supply; on the other side of the IHX the open
tower-water loop: basin -> tower pumps -> IHX -> tower cells -> basin.

Pumps (every pump: CDU secondary, facility, tower water)
------------------------------------------------------
At flow fraction ``w`` the pump works against a system curve with a static term, ``dp(w) = dp_static +
dp_friction w^2`` (the affinity law with a static head; e.g. ASHRAE Handbook HVAC Systems and Equipment 2020
ch. 44 "Centrifugal pumps", system curves). Hydraulic power ``V_nom w dp(w)``, shaft power at a constant pump
efficiency: ``P_shaft = P_shaft,nom x`` with the shaft load fraction ``x = w (s + (1 - s) w^2)``, ``s = dp_static /
(dp_static + dp_friction)``, ``P_shaft,nom = V_nom (dp_static + dp_friction) / eta_pump``. This is exactly
EnergyPlus' ``Pump:VariableSpeed`` part-load curve ``FracFullLoadPower = C1 + C2 PLR + C3 PLR^2 + C4 PLR^3`` with
``C1 = 0, C2 = s, C3 = 0, C4 = 1 - s`` (EnergyPlus Input-Output Reference, Pump:VariableSpeed).

Staging: a group of ``N = n_pumps`` identical pumps in parallel; ``n_on = ceil(w N)`` run (at least one), all at
the same speed (ASHRAE 90.1 sec. 6.5.4, variable-flow hydronic systems). Each running pump carries ``x N / n_on``
of its own rating. Motor and drive: ``eta_md = ETA_MOTOR_FULL rel(x N / n_on) ETA_VFD`` with ``rel`` the motor
part-load efficiency relative to full load of U.S. DOE (2014) "Determining Electric Motor Load and Efficiency"
(Fig. 1, as tabulated in the Modelica Buildings Library's ``motorEfficiencyCurve``; :data:`MOTOR_REL_EFF`),
interpolated for the motor's rated input power, piecewise linear in the load; the drive is held at
``ETA_VFD``. Electrical power ``P = P_shaft,nom x / eta_md`` (:func:`pump_power_W`). So the power does not follow
a cube law: a static head keeps it up at low flow, and small motors lose efficiency as their load falls.

* CDU secondary pump, ``pump_control = "constant_flow"``: ``y_sec = 1`` at every load (fixed speed); ``"dp"``
  (differential pressure held at the racks, ``dp_static`` = the set point): ``y_sec = clip(Q_CDU / Q_nominal,
  y_pump_sec_min, 1)``. ``m_sec = y_sec m_sec_nominal``.
* Facility pump: flow fraction ``w_fac = m_fac / (n m_fac_nominal)`` set by the CDU valves. With
  ``facility.dp_reset`` the differential-pressure set point (the static term) is reset down until the neediest
  valve is fully open: ``dp(w) = dp_static r^2 + dp_friction w^2``, ``r = max(dp_reset_min, max_i y_valve_i)``, so
  ``x = w (s r^2 + (1 - s) w^2)`` (ASHRAE 90.1 sec. 6.5.4 hydronic variable flow; the trim-and-respond reset of
  ASHRAE Guideline 36; its effect is what the Appendix G "VSD DP Reset" pump curve of 90.1 represents).
* Tower pumps: ``w_cw = max(w_flow_min, w_fac)`` (``w_flow_min = 1``: constant flow; ASHRAE 90.1-2013 sec.
  6.5.5.4 asks towers to take 50 % of their design flow per cell), ``m_cw = w_cw m_cw_nominal``.

Per CDU ``i`` (``cp`` specific heat of water, SI throughout)
--------------------------------------------------------
* Facility-side valve: integral controller with anti-windup (tracking) on the secondary supply temperature::

      e_valve  = (T_sec_sup - T_sec_sup_set) / valve_dT_span
      y_valve  = clip(I_valve, y_valve_min, 1),    m_fac_cdu = y_valve m_fac_nominal
      der(I_valve) = e_valve / valve_Ti + (y_valve - I_valve) / valve_Ti

  (no proportional part: ``T_sec_sup`` is algebraic in the valve opening, so a P-term would create an algebraic
  loop, which rumoca 0.9.13 does not solve).
* Plate heat exchangers (CDU and IHX), counterflow effectiveness-NTU (Incropera & DeWitt, Fundamentals of Heat
  and Mass Transfer, 6th ed., Table 11.3): ``C_min = cp min(m_1, m_2)``, ``C_r = C_min / C_max``, ``NTU = UA /
  C_min``, ``eps = (1 - exp(-NTU (1 - C_r))) / (1 - C_r exp(-NTU (1 - C_r)))`` (``NTU / (1 + NTU)`` when
  ``C_r -> 1``), ``Q = eps C_min (T_hot,in - T_cold,in)``.
* Secondary loop: one well-mixed volume at the CDU return temperature ``T_sec`` (state):
  ``m_water_sec cp der(T_sec) = Q_CDU - Q_hx``; supply to the racks ``T_sec_sup = T_sec - Q_hx / (m_sec cp)``.

Facility loop, IHX, tower-water loop and towers
-----------------------------------------------
* Two well-mixed facility volumes: return ``T_fac_ret`` and supply ``T_fac_sup`` (after the IHX and chiller)::

      m_water_ret cp der(T_fac_ret) = sum(Q_hx) - m_fac cp (T_fac_ret - T_fac_sup)
      m_water_sup cp der(T_fac_sup) = m_fac cp (T_chiller_out - T_fac_sup)

* IHX between the facility return ``T_fac_ret`` (hot in) and the tower basin ``T_cw_sup`` (cold in):
  ``Q_ihx = eps_ihx C_min (T_fac_ret - T_cw_sup)``; facility water leaves at ``T_ihx_out = T_fac_ret - Q_ihx /
  (m_fac cp)``, tower water at ``T_cw_ret = T_cw_sup + Q_ihx / (m_cw cp)`` to the tower cells.
* Tower bank (plant v5), Braun, Klein & Mitchell (1989) counterflow effectiveness-NTU with the air the running
  fans move (:func:`~cooling_fmu.components.tower.braun_effectiveness`): ``m_a = y_fan m_air_nominal`` with
  ``y_fan = n_cells_on s_fan / n_cells`` (fan speed x design air per running cell, no natural draft through idle
  cells; the water is spread over the running cells), ``NTU = c (m_cw / m_a)^(1 + n)`` with ``c = NTU_nominal
  LG_nominal^n_merkel``, ``n = -n_merkel`` (:func:`~cooling_fmu.components.tower.braun_coefficients`),
  ``Q_cells = eps_a m_a (h_s(T_cw_ret) - h_s(T_wb))``, ``T_cells_out = T_cw_ret - Q_cells / (m_cw cp)``; basin
  (state) ``m_water_basin cp der(T_cw_sup) = m_cw cp (T_tower_out - T_cw_sup)``. ``NTU_nominal`` of the shipped
  plants is sized at the site's 0.4 % design wet-bulb and a 3 K approach (``tower.T_wb_design_K``,
  ``tower.approach_design_K``).
* IHX bypass (winter, plant v5): the same ideal three-way relation as the tower bypass
  (:func:`~cooling_fmu.components.tower.bypass`) on the facility side of the IHX holds the facility water leaving
  it at or above ``T_fac_sup_set - tower_loop.ihx_bypass_below_set_K``: ``Q_ihx = Q_ihx,full - m_fac cp (T_ihx_out
  - T_ihx_plates_out)``; the tower water receives ``Q_ihx``.
* Tower bypass (cold-weather capacity control, ASHRAE Handbook HVAC Systems and Equipment 2020 ch. 40 "Cooling
  towers": fans to minimum, then water bypassed to the basin; SPX "Operating cooling towers in freezing weather":
  cold water at or above 40 F): an ideal three-way valve (algebraic, no state) holds the leaving water at or above
  ``T_tower_min = tower.T_leaving_min_K``: ``T_tower_out = max(T_cells_out, min(T_cw_ret, T_tower_min))``,
  ``Q_tower = Q_cells - m_cw cp (T_tower_out - T_cells_out)`` (= ``Q_cells`` exactly when the valve is closed). The
  bypass fraction follows from the energy balance, ``1 - Q_tower / Q_cells`` (cell effectiveness taken at the whole
  flow; the cold water inside the cells is not resolved). The fan controller meanwhile sits at its floor.
* Fan controller: PI on the facility supply temperature with back-calculation anti-windup (Astrom & Hagglund,
  Advanced PID Control, 2006, sec. 3.5)::

      e_fan = (T_fac_sup - T_fac_sup_set) / fan_dT_span,  u = fan_k_p e_fan + I_fan
      y_fan_demand = clip(u, y_fan_min / n_cells, 1),  der(I_fan) = e_fan / fan_Ti + (y_fan - u) / fan_Ti

  Staging: the input ``n_cells_cmd`` (the supervisory :class:`~cooling_fmu.components.staging.CellStager`, run
  by :class:`cooling_fmu.supervisory.StagedPlant` at the communication step) or, when it is 0, as many cells as
  possible, none below ``y_fan_min`` (ASHRAE 90.1-2019 sec. 6.5.5.2.2): ``n_cells_on``; speed ``s_fan =
  clip(y_fan_demand n_cells / n_cells_on, y_fan_min, 1)``, air moved ``y_fan = n_cells_on s_fan / n_cells`` (the
  anti-windup tracks it), ``P_fan = n_cells_on P_fan_cell s_fan^3`` (fan affinity law).
* Trim chiller (optional) on the facility water after the IHX, allowed when ``T_wb > T_wb_switch`` (economiser
  below): load ``max(0, m_fac cp (T_ihx_out - T_chiller_set))``, ``T_chiller_set = T_fac_sup_set + dT_deadband``,
  removed up to its available capacity by the EnergyPlus ``Chiller:Electric:EIR`` curves of a reference chiller
  (CAPFT, EIRFT biquadratic in leaving chilled water and entering condenser water = the tower basin, EIRFPLR,
  cycling below the minimum part-load ratio; :mod:`cooling_fmu.components.chiller`), its condenser-water pump
  counted in ``P_chiller``; its condenser heat ``Q_chiller + P_chiller`` goes into the tower water (the basin), so
  the towers, their pumps and fans carry it.
* Heat paths (plant v5, issue 22 item 4): every pump's shaft work ``P_shaft,nom x`` enters the water it moves (CDU
  pumps the secondary loop, facility pumps the return volume, tower pumps the basin); the motor and drive losses
  ``P - P_shaft`` go to the room air (:func:`~cooling_fmu.components.pump.pump_shaft_heat_W`). The air side's heat
  (CRAH coils, their chilled water through the chiller or the economiser, the chiller's and pumps' power; input
  ``Q_flow_air_side``, computed by :mod:`power.facility`) and the trim chiller's condenser heat join the tower
  entering water (condensers and the economiser IHX in parallel on the tower water, returns mixed before the cells:
  ``T_tower_in = T_cw_ret + (Q_cond + Q_air_side) / (m_cw cp)``); the tower pumps' heat enters the basin.

Water from the air-side energy balance (saturated exit air)
----------------------------------------------------------
The bank moves ``m_air = y_fan m_cw_nominal / LG_nominal`` of air. Entering air has the humidity ratio and
enthalpy of the outdoor dry-bulb ``T_db`` (input) and wet-bulb (ASHRAE Handbook Fundamentals 2017 ch. 1 eqs. 33 /
35 and 30, psychrolib's ``GetHumRatioFromTWetBulb`` / ``GetMoistAirEnthalpy``;
:func:`~cooling_fmu.components.moist_air.inlet_air`; ``T_db = T_wb`` is saturated air). The air takes up the
rejected heat and leaves saturated (the saturated-exit-air method of EnergyPlus' cooling-tower
evaporation, Engineering Reference "Cooling tower evaporation: saturated exit"): ``h_out = h_in + Q_air / m_air``
with ``Q_air = Q_tower`` (everything the towers reject, the chiller's condenser heat included), ``T_air_out`` solves ``h_s(T) = h_out`` (five Newton steps from
the chord between ``T_wb`` and ``T_hi``, unrolled), and ``m_evap = m_air (W_s(T_air_out) - W_in)`` (zero when no
heat is rejected). The air is the air the fans move, ``m_air = y_fan m_cw_nominal / LG_nominal`` (plant v5; v4 used
``max(fan air, Q_air / (h_s(T_hi) - h_in))``, 1.1-7.4 x the fan air); Braun's ``eps_a < 1`` keeps the tower's
leaving air below saturation at the entering water (natural draft and the spray zone are not modelled). Saturation
pressure, humidity ratio and enthalpy are those of psychrolib / ASHRAE Fundamentals 2017 ch. 1 eqs. 5, 6, 20, 30
(over ice at or below the triple point). Hotter, more humid weather puts more of the heat into evaporation, so WUE
moves with the weather; dry air (a large wet-bulb depression) takes up about ``m_air cp_air (T_db - T_wb) / h_fg``
more water for the same heat, as it is cooled sensibly while it evaporates water.
Drift ``m_drift = drift_fraction m_cw``; blowdown from the cycles of concentration (mass balance of dissolved
solids, SPX "Cooling Tower Fundamentals", 2nd ed., ch. 5) ``m_blowdown = max(0, m_evap / (COC - 1) - m_drift)``;
``m_makeup = m_evap + m_drift + m_blowdown``.

Totals
------
``P_cooling = sum(P_pump_sec) + P_pump_fac + P_pump_tower + P_fan + P_chiller``. Running integrals (J, kg):
``E_heat_in``, ``E_tower_out``, ``E_chiller_out`` (heat removed by the chiller), ``E_cooling_out``, ``E_fan_out``,
``E_pump_sec_out[i]``, ``E_pump_fac_out``, ``E_pump_tower_out``, ``E_chiller_elec_out`` (electrical energy of
each component, so step averages of every component are exact), ``M_makeup_out``. ``E_pump_heat_out`` (pump shaft heat into the water), ``E_air_side_in``. ``E_stored = cp (m_water_sec
sum(T_sec - T_ref) + m_water_ret (T_fac_ret - T_ref) + m_water_sup (T_fac_sup - T_ref) + m_water_basin (T_cw_sup -
T_ref))``. The FMU integrates states and totals with the same update, so ``E_heat_in + E_pump_heat_out +
E_chiller_elec_out + E_air_side_in - E_tower_out - (E_stored - E_stored(0))`` closes to round-off whatever the
integration error.
"""


from __future__ import annotations

import numpy as np

from .components import chiller, drycooler, hx, pipe, pump, roots, tower, valve
from .components.hx import CR_BALANCED
from .components.moist_air import sat_air
from .components.pump import (ETA_MOTOR_FULL, ETA_VFD, MOTOR_PLR, MOTOR_REL_EFF, MOTOR_SIZES_W, motor_drive_efficiency,
                              motor_rel_curve, pump_power_W, pump_rated_motor_W, pumps_running)
from .components.tower import NEWTON_STEPS
from .components._mo import real
from .params import PlantParams

__all__ = [
    "CR_BALANCED",
    "GENERATOR_VERSION",
    "ETA_MOTOR_FULL",
    "ETA_VFD",
    "MOTOR_PLR",
    "MOTOR_REL_EFF",
    "MOTOR_SIZES_W",
    "NEWTON_STEPS",
    "STATE_NAMES",
    "analytic_steady_state",
    "generate_plant_modelica",
    "motor_drive_efficiency",
    "motor_rel_curve",
    "pump_rated_motor_W",
    "pumps_running",
    "model_name_for",
    "plant_equations",
    "pump_power_W",
    "sat_air",
    "state_vector",
    "steady_states",
    "tower_bypass_fraction",
]

#: Bump when the generated source changes meaning (the FMU cache key also hashes the source text itself).
GENERATOR_VERSION = "5"

#: Names of the state groups in FMU order: per-CDU ``T_sec[n]``, ``I_valve[n]``, then scalars.
STATE_NAMES = ("T_sec", "I_valve", "T_fac_sup", "T_fac_ret", "I_fan", "T_cw_sup")


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
        states ``T_sec[n]`` (K), ``I_valve[n]`` (1), ``T_pipe_sup``, ``T_pipe_ret``, ``T_cw_basin`` (K),
        ``I_fan`` (1) and the running totals; outputs as in ``maps/hpctwin_plant.yaml``. The physics is in the
        module docstring.

    Notes
    -----
    Initial states are the ``start`` values (``initial="exact"``), settable through ``fmi2SetReal`` before
    ``fmi2ExitInitializationMode``: rumoca 0.9.13 ignores ``initial equation`` sections.
    """
    n = params.n_cdu
    c, f, tl, t, ch = params.cdu, params.facility, params.tower_loop, params.tower, params.chiller
    rho = params.rho_water_kg_m3
    T0 = real(params.T_ref_K)
    name = model_name_for(params)
    N = t.n_cells
    T_ch_set = chiller.chiller_setpoint_K(params)
    air_decl, air_eq = tower.exit_air_fragment("y_fan * m_air_nominal", "T_tower_in")
    decl_psy = "\n".join(air_decl)
    eq_psy = "\n".join(air_eq)
    hx_eq = "\n    ".join(hx.counterflow_equations("eps_hx[i]", "C_min[i]", "C_r[i]", "Z_hx[i]", "UA_hx", "cp",
                                                    "m_flow_sec[i]", "m_flow_fac_cdu[i]"))
    ihx_eq = "\n  ".join(hx.counterflow_equations("eps_ihx", "C_min_ihx", "C_r_ihx", "Z_ihx", "UA_ihx", "cp",
                                                  "m_flow_fac", "m_flow_cw"))
    c_braun, n_braun = tower.braun_coefficients(t.NTU_nominal, t.n_merkel, t.LG_nominal)
    braun_decl, braun_eq = tower.braun_equations()
    decl_psy += "\n" + "\n".join(braun_decl)
    eq_braun = "\n".join(braun_eq + ["  Q_flow_cells = Q_braun;"])
    m_air_nom, drift = params.m_air_nominal_kg_s, t.drift_fraction
    if params.heat_rejection != "towers":  # the dry-cooler bank in place of the cells (issue 22 item 6)
        decl_psy, eq_psy, eq_braun = _dry_cooler_text(params)
        m_air_nom, drift = params.dry_cooler.m_air_nominal_kg_s, 0.0
    fan_eq = "\n  ".join(tower.fan_speed_equations("s_fan", "y_fan", "y_fan_demand", "n_cells_on", N, "y_fan_min"))
    byp_eq = "\n  ".join(tower.bypass_equations("Q_flow_tower", "T_tower_out", "Q_flow_cells", "T_cells_out",
                                                "T_tower_in", "m_flow_cw", "cp", "T_tower_min"))
    ihx_byp_eq = "\n  ".join(tower.bypass_equations("Q_flow_ihx", "T_ihx_out", "Q_flow_ihx_full", "T_ihx_hx_out",
                                                    "T_pipe_ret", "m_flow_fac", "cp", "T_ihx_min"))
    ch_decl, ch_eq = chiller.trim_chiller_equations(params, "T_cw_basin")
    decl_ch = "\n".join(ch_decl)
    ch_eq = "\n".join(ch_eq)
    water_eq = "\n".join(tower.water_use_equations())
    # the valve's load feed-forward (issue 22 item 8) is written only where it is on, so plants without it keep
    # their Modelica text (and FMU) byte for byte
    if c.valve_k_ff > 0.0:
        ff_decl = (f'\n  parameter Real valve_k_ff(unit="1") = {real(c.valve_k_ff)} '
                   '"Load feed-forward gain of the facility valve";')
        u_valve = ("(I_valve[i] + " + valve.feedforward_opening_expr("Q_flow_CDU[i]", "Q_flow_CDU_nominal",
                                                                    "valve_k_ff") + ")")
    else:
        ff_decl, u_valve = "", "I_valve[i]"
    src = f"""model {name} "{params.description} (generated by hpctwin cooling_fmu, generator v{GENERATOR_VERSION})"
  // ---- parameters (SI) ----
  parameter Real cp(unit="J/(kg.K)") = {real(params.cp_water_J_kgK)} "Specific heat of water";
  parameter Real T_ref(unit="K") = {T0} "Reference temperature of E_stored";
  parameter Real Q_flow_CDU_nominal(unit="W") = {real(c.Q_flow_nominal_W)} "Design heat per CDU";
  parameter Real m_flow_sec_nominal(unit="kg/s") = {real(c.m_flow_sec_nominal_kg_s)} "Secondary flow per CDU at full pump speed";
  parameter Real m_flow_fac_nominal(unit="kg/s") = {real(c.m_flow_fac_nominal_kg_s)} "Facility flow per CDU HX, valve open";
  parameter Real m_water_sec(unit="kg") = {real(c.m_water_sec_kg)} "Water mass of one secondary loop";
  parameter Real UA_hx(unit="W/K") = {real(c.UA_hx_W_K)} "Conductance of one CDU plate heat exchanger";
  parameter Real y_sec_floor(unit="1") = {real(params.y_sec_floor)} "Smallest secondary flow fraction (1 = constant flow)";
  parameter Real P_shaft_sec_nominal(unit="W") = {real(pump.shaft_nominal_W(c.pump, c.m_flow_sec_nominal_kg_s, rho))} "Secondary pump shaft power at nominal flow";
  parameter Real s_sec(unit="1") = {real(c.pump.static_fraction)} "Static share of the secondary pump head";
  parameter Real y_valve_min(unit="1") = {real(c.y_valve_min)} "Minimum facility valve opening";{ff_decl}
  parameter Real T_sec_sup_set(unit="K") = {real(c.T_sec_sup_set_K)} "Secondary supply temperature setpoint";
  parameter Real valve_Ti(unit="s") = {real(c.valve_Ti_s)} "Valve controller integral time";
  parameter Real valve_dT_span(unit="K") = {real(c.valve_dT_span_K)} "Valve controller error span";
  parameter Real m_flow_fac_design(unit="kg/s") = {real(params.m_flow_fac_design_kg_s)} "Facility flow, all valves open";
  parameter Real m_water_sup(unit="kg") = {real(f.m_water_sup_kg)} "Water mass of the facility supply piping";
  parameter Real m_water_ret(unit="kg") = {real(f.m_water_ret_kg)} "Water mass of the facility return piping";
  parameter Real P_shaft_fac_nominal(unit="W") = {real(pump.shaft_nominal_W(f.pump, params.m_flow_fac_design_kg_s, rho))} "Facility pump shaft power at design flow";
  parameter Real s_fac(unit="1") = {real(f.pump.static_fraction)} "Static share of the facility pump head";
  parameter Real dp_reset_min(unit="1") = {real(f.dp_reset_min if f.dp_reset else 1.0)} "Floor of the set-point reset factor (1 = no reset)";
  parameter Real m_flow_cw_nominal(unit="kg/s") = {real(tl.m_flow_nominal_kg_s)} "Tower-water flow at full pump speed";
  parameter Real w_cw_min(unit="1") = {real(tl.w_flow_min)} "Smallest tower-water flow fraction";
  parameter Real UA_ihx(unit="W/K") = {real(tl.UA_ihx_W_K)} "Conductance of the intermediate heat exchanger";
  parameter Real m_water_basin(unit="kg") = {real(tl.m_water_basin_kg)} "Water mass of the tower basins and tower-water piping";
  parameter Real P_shaft_cw_nominal(unit="W") = {real(pump.shaft_nominal_W(tl.pump, tl.m_flow_nominal_kg_s, rho))} "Tower pump shaft power at nominal flow";
  parameter Real s_cw(unit="1") = {real(tl.pump.static_fraction)} "Static share of the tower pump head";
  parameter Real c_braun(unit="1") = {real(c_braun)} "Braun NTU coefficient of the tower (NTU_nominal LG_nominal^n_merkel)";
  parameter Real n_braun(unit="1") = {real(n_braun)} "Braun NTU exponent (-n_merkel)";
  parameter Real m_air_nominal(unit="kg/s") = {real(m_air_nom)} "Tower air flow at full fan speed";
  parameter Real p_atm(unit="Pa") = {real(t.p_atm_Pa)} "Site atmospheric pressure";
  parameter Real P_fan_cell_nominal(unit="W") = {real(t.P_fan_cell_nominal_W)} "Fan power of one cell at full speed";
  parameter Real y_fan_min(unit="1") = {real(t.y_fan_min)} "Minimum speed of a running fan";
  parameter Real y_fan_floor(unit="1") = {real(params.y_fan_floor)} "Minimum bank air-flow fraction (one cell at minimum speed)";
  parameter Real T_fac_sup_set(unit="K") = {real(t.T_fac_sup_set_K)} "Facility supply temperature setpoint";
  parameter Real fan_k_p(unit="1") = {real(t.fan_k_p)} "Fan controller proportional gain";
  parameter Real fan_Ti(unit="s") = {real(t.fan_Ti_s)} "Fan controller integral time (= anti-windup tracking time)";
  parameter Real fan_dT_span(unit="K") = {real(t.fan_dT_span_K)} "Fan controller error span";
  parameter Real T_tower_min(unit="K") = {real(t.T_leaving_min_K)} "Minimum tower leaving water held by the tower bypass";
  parameter Real T_ihx_min(unit="K") = {real(params.T_ihx_bypass_K)} "Facility supply held by the IHX bypass (0 = none)";
  parameter Real coc(unit="1") = {real(t.cycles_of_concentration)} "Cycles of concentration";
  parameter Real drift_fraction(unit="1") = {real(drift)} "Drift as a fraction of circulating flow";
  parameter Real have_chiller(unit="1") = {real(1.0 if ch.enabled else 0.0)} "1 if the plant has a trim chiller";
  parameter Real T_wb_switch(unit="K") = {real(ch.T_wb_switch_K)} "Wet-bulb above which the chiller may run";
  parameter Real T_chiller_set(unit="K") = {real(T_ch_set)} "Chiller leaving-water setpoint";
  // ---- inputs ----
  input Real Q_flow_CDU[{n}](each unit="W", each start=0.0) "Heat from racks into each CDU secondary loop (>= 0)";
  input Real T_wb(unit="K", start={T0}) "Outdoor wet-bulb temperature";
  input Real T_db(unit="K", start={T0}) "Outdoor dry-bulb temperature (set it to T_wb for saturated air)";
  input Real Q_flow_air_side(unit="W", start=0.0) "Heat of the air side (CRAH coils, their chiller and pumps) into the tower water (>= 0)";
  input Real n_cells_cmd(unit="1", start=0.0) "Tower cells commanded by the supervisory stager (0 = as many as possible)";
  // ---- states (start values = initial state, set before exitInitializationMode) ----
  Real T_sec[{n}](each unit="K", each start={T0}) "Secondary loop mixed temperature = CDU return temperature";
  Real I_valve[{n}](each unit="1", each start=1.0) "Valve controller integrator";
  Real T_pipe_sup(unit="K", start={T0}) "Facility supply piping mixed temperature = facility supply temperature";
  Real T_pipe_ret(unit="K", start={T0}) "Return piping mixed temperature = facility return temperature";
  Real I_fan(unit="1", start=1.0) "Fan controller integrator";
  Real T_cw_basin(unit="K", start={T0}) "Tower basin mixed temperature = tower-water supply temperature";
  Real E_heat(unit="J", start=0.0) "Heat received from racks since initialization";
  Real E_tower(unit="J", start=0.0) "Heat rejected by the towers since initialization";
  Real E_chiller(unit="J", start=0.0) "Heat removed by the chiller since initialization";
  Real E_cooling(unit="J", start=0.0) "Cooling electrical energy since initialization";
  Real E_fan(unit="J", start=0.0) "Fan electrical energy since initialization";
  Real E_psec[{n}](each unit="J", each start=0.0) "Secondary pump electrical energy since initialization";
  Real E_pfac(unit="J", start=0.0) "Facility pump electrical energy since initialization";
  Real E_pcw(unit="J", start=0.0) "Tower pump electrical energy since initialization";
  Real E_chel(unit="J", start=0.0) "Chiller electrical energy since initialization";
  Real E_pheat(unit="J", start=0.0) "Pump shaft heat into the water since initialization";
  Real E_airin(unit="J", start=0.0) "Air-side heat into the tower water since initialization";
  Real M_makeup(unit="kg", start=0.0) "Make-up water since initialization";
  // ---- algebraic variables ----
  Real y_sec[{n}](each unit="1") "Secondary pump flow fraction";
  Real x_sec[{n}](each unit="1") "Secondary pump shaft-load fraction";
  Real Q_pump_sec[{n}](each unit="W") "Secondary pump shaft heat into the secondary water";
  Real Q_pump_fac(unit="W") "Facility pump shaft heat into the facility water";
  Real Q_pump_cw(unit="W") "Tower pump shaft heat into the tower water";
  Real Q_flow_chiller_cond(unit="W") "Chiller condenser heat into the tower water";
  Real T_tower_in(unit="K") "Tower entering water: IHX leaving water plus the condenser and air-side heat";
  Real C_min[{n}](each unit="W/K") "Smaller heat-capacity rate of each HX";
  Real C_r[{n}](each unit="1") "Heat-capacity rate ratio of each HX";
  Real Z_hx[{n}](each unit="1") "exp(-NTU (1 - C_r)) of each HX";
  Real eps_hx[{n}](each unit="1") "Effectiveness of each HX";
  Real e_valve[{n}](each unit="1") "Normalised valve controller error";
  Real w_fac(unit="1") "Facility flow fraction of design";
  Real x_fac(unit="1") "Facility pump shaft-load fraction";
  Real r_dp(unit="1") "Reset factor of the facility differential-pressure set point";
  Real w_cw(unit="1") "Tower-water flow fraction";
  Real x_cw(unit="1") "Tower pump shaft-load fraction";
  Real C_min_ihx(unit="W/K") "Smaller heat-capacity rate of the IHX";
  Real C_r_ihx(unit="1") "Heat-capacity rate ratio of the IHX";
  Real Z_ihx(unit="1") "exp(-NTU (1 - C_r)) of the IHX";
  Real eps_ihx(unit="1") "Effectiveness of the IHX";
  Real T_ihx_out(unit="K") "Facility water after the IHX and its bypass (mixed)";
  Real Q_flow_ihx_full(unit="W") "Heat the IHX would pass with the whole facility flow";
  Real T_ihx_hx_out(unit="K") "Facility water leaving the IHX plates with the whole flow";
  Real e_fan(unit="1") "Normalised fan controller error";
  Real u_fan(unit="1") "Unsaturated fan controller output";
  Real s_fan(unit="1") "Speed of each running fan";
  Real m_w_tower(unit="kg/s") "Water through the running tower cells";
  Real m_a_tower(unit="kg/s") "Air the running tower fans move";
  Real T_w_in(unit="K") "Water entering the tower cells";
  Real Q_flow_cells(unit="W") "Heat the tower cells would reject with no bypass";
  Real T_cells_out(unit="K") "Tower cell leaving water with no bypass";
  Real T_chiller_out(unit="K") "Water temperature after the chiller";
  Real COP_chiller(unit="1") "Chiller COP";
  Real dh_air(unit="J/kg") "Enthalpy rise of the tower air";
  Real Q_air(unit="W") "Heat given to the tower air (everything the towers reject, chiller condenser included; >= 0)";
  Real T_air_hi(unit="K") "Highest exit-air temperature: the tower entering water (at least T_wb + 1 K)";
  Real dh_air_max(unit="J/kg") "Enthalpy rise of air leaving saturated at T_air_hi";
{decl_psy}
{decl_ch}
  // ---- outputs ----
  output Real T_sec_sup[{n}](each unit="K") "CDU supply temperature to racks";
  output Real T_sec_ret[{n}](each unit="K") "CDU return temperature from racks";
  output Real m_flow_sec[{n}](each unit="kg/s") "Secondary mass flow of each CDU";
  output Real m_flow_fac_cdu[{n}](each unit="kg/s") "Facility mass flow through each CDU HX";
  output Real y_valve[{n}](each unit="1") "Facility valve opening of each CDU";
  output Real Q_flow_hx[{n}](each unit="W") "Heat through each CDU HX, secondary to facility (> 0 when cooling)";
  output Real P_pump_sec[{n}](each unit="W") "Secondary pump electrical power";
  output Real E_pump_sec_out[{n}](each unit="J") "Secondary pump electrical energy since initialization";
  output Real T_fac_sup(unit="K") "Facility supply temperature";
  output Real T_fac_ret(unit="K") "Facility return temperature (IHX entering water)";
  output Real T_cw_sup(unit="K") "Tower-water supply temperature (basin, IHX entering)";
  output Real T_cw_ret(unit="K") "Tower-water return temperature (IHX leaving, tower entering)";
  output Real T_tower_out(unit="K") "Tower leaving water temperature";
  output Real m_flow_fac(unit="kg/s") "Total facility mass flow";
  output Real m_flow_cw(unit="kg/s") "Tower-water mass flow";
  output Real Q_flow_ihx(unit="W") "Heat through the intermediate heat exchanger";
  output Real P_pump_fac(unit="W") "Facility pump electrical power";
  output Real P_pump_tower(unit="W") "Tower-water pump electrical power";
  output Real y_fan(unit="1") "Tower bank air-flow fraction the running fans move";
  output Real y_fan_demand(unit="1") "Tower bank air-flow demand of the fan controller";
  output Real n_cells_on(unit="1") "Tower cells with the fan running";
  output Real P_fan_tower(unit="W") "Tower fan electrical power";
  output Real Q_flow_tower(unit="W") "Heat rejected by the towers (> 0 when cooling)";
  output Real Q_flow_chiller(unit="W") "Heat removed from the facility water by the chiller";
  output Real P_chiller(unit="W") "Chiller electrical power";
  output Real P_cooling(unit="W") "Total cooling electrical power (pumps + fans + chiller)";
  output Real Q_flow_pump_heat(unit="W") "Pump shaft work dissipated in the water (CDU, facility and tower pumps)";
  output Real m_flow_air(unit="kg/s") "Tower air flow: the air the running fans move";
  output Real T_air_out(unit="K") "Saturated tower exit-air temperature";
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
  output Real E_pump_fac_out(unit="J") "Facility pump electrical energy since initialization";
  output Real E_pump_tower_out(unit="J") "Tower pump electrical energy since initialization";
  output Real E_chiller_elec_out(unit="J") "Chiller electrical energy since initialization";
  output Real M_makeup_out(unit="kg") "Make-up water since initialization";
  output Real E_pump_heat_out(unit="J") "Pump shaft heat into the water since initialization";
  output Real E_air_side_in(unit="J") "Air-side heat into the tower water since initialization";
equation
  for i in 1:{n} loop
    y_sec[i] = {pump.secondary_flow_expr("Q_flow_CDU[i]", "Q_flow_CDU_nominal", "y_sec_floor")};
    m_flow_sec[i] = y_sec[i] * m_flow_sec_nominal;
    y_valve[i] = {valve.valve_opening_expr(u_valve, "y_valve_min")};
    m_flow_fac_cdu[i] = y_valve[i] * m_flow_fac_nominal;
    {hx_eq}
    Q_flow_hx[i] = eps_hx[i] * C_min[i] * (T_sec[i] - T_pipe_sup);
    m_water_sec * cp * der(T_sec[i]) = Q_flow_CDU[i] + Q_pump_sec[i] - Q_flow_hx[i];
    T_sec_ret[i] = T_sec[i];
    T_sec_sup[i] = T_sec[i] - Q_flow_hx[i] / (m_flow_sec[i] * cp);
    e_valve[i] = {valve.control_error_expr("T_sec_sup[i]", "T_sec_sup_set", "valve_dT_span")};
    der(I_valve[i]) = {valve.integrator_rate_expr("e_valve[i]", "y_valve[i]", u_valve, "valve_Ti")};
    x_sec[i] = {pump.shaft_load_expr("y_sec[i]", "s_sec")};
    Q_pump_sec[i] = {pump.shaft_heat_expr("P_shaft_sec_nominal", "x_sec[i]")};
    P_pump_sec[i] = {pump.pump_power_expr(c.pump, c.m_flow_sec_nominal_kg_s, rho, "y_sec[i]", "x_sec[i]", "P_shaft_sec_nominal")};
    der(E_psec[i]) = P_pump_sec[i];
    E_pump_sec_out[i] = E_psec[i];
  end for;
  m_flow_fac = sum(m_flow_fac_cdu);
  w_fac = m_flow_fac / m_flow_fac_design;
  r_dp = {valve.reset_factor_expr("y_valve", n, "dp_reset_min")};
  x_fac = {pump.shaft_load_expr("w_fac", "s_fac", "r_dp")};
  Q_pump_fac = {pump.shaft_heat_expr("P_shaft_fac_nominal", "x_fac")};
  P_pump_fac = {pump.pump_power_expr(f.pump, params.m_flow_fac_design_kg_s, rho, "w_fac", "x_fac", "P_shaft_fac_nominal")};
  w_cw = {pipe.tower_water_fraction_expr("w_fac", "w_cw_min")};
  m_flow_cw = w_cw * m_flow_cw_nominal;
  x_cw = {pump.shaft_load_expr("w_cw", "s_cw")};
  Q_pump_cw = {pump.shaft_heat_expr("P_shaft_cw_nominal", "x_cw")};
  P_pump_tower = {pump.pump_power_expr(tl.pump, tl.m_flow_nominal_kg_s, rho, "w_cw", "x_cw", "P_shaft_cw_nominal")};
  {ihx_eq}
  Q_flow_ihx_full = eps_ihx * C_min_ihx * (T_pipe_ret - T_cw_basin);
  {ihx_byp_eq}
  T_cw_sup = T_cw_basin;
  T_cw_ret = T_cw_basin + Q_flow_ihx / (m_flow_cw * cp);
  e_fan = {valve.control_error_expr("T_pipe_sup", "T_fac_sup_set", "fan_dT_span")};
  u_fan = fan_k_p * e_fan + I_fan;
  y_fan_demand = {valve.valve_opening_expr("u_fan", "y_fan_floor")};
  n_cells_on = {tower.cells_in_service_expr("n_cells_cmd", "y_fan_demand", N, "y_fan_min")};
  {fan_eq}
  der(I_fan) = {valve.integrator_rate_expr("e_fan", "y_fan", "u_fan", "fan_Ti")};
  P_fan_tower = {tower.fan_power_expr("n_cells_on", "P_fan_cell_nominal", "s_fan")};
  T_tower_in = T_cw_ret + (Q_flow_chiller_cond + Q_flow_air_side) / (m_flow_cw * cp);
  m_w_tower = m_flow_cw;
  m_a_tower = y_fan * m_air_nominal;
  T_w_in = T_tower_in;
{eq_braun}
  {byp_eq}
  m_water_basin * cp * der(T_cw_basin) = m_flow_cw * cp * (T_tower_out - T_cw_basin) + Q_pump_cw;
{ch_eq}
  m_water_ret * cp * der(T_pipe_ret) = sum(Q_flow_hx) + Q_pump_fac - m_flow_fac * cp * (T_pipe_ret - T_pipe_sup);
  m_water_sup * cp * der(T_pipe_sup) = m_flow_fac * cp * (T_chiller_out - T_pipe_sup);
  T_fac_sup = T_pipe_sup;
  T_fac_ret = T_pipe_ret;
  Q_air = max(0.0, Q_flow_tower);
  Q_flow_pump_heat = sum(Q_pump_sec) + Q_pump_fac + Q_pump_cw;
{eq_psy}
{water_eq}
  P_cooling = sum(P_pump_sec) + P_pump_fac + P_pump_tower + P_fan_tower + P_chiller;
  E_stored = cp * (m_water_sec * (sum(T_sec) - {n}.0 * T_ref) + m_water_ret * (T_pipe_ret - T_ref) + m_water_sup * (T_pipe_sup - T_ref) + m_water_basin * (T_cw_basin - T_ref));
  der(E_heat) = sum(Q_flow_CDU);
  der(E_tower) = Q_flow_tower;
  der(E_chiller) = Q_flow_chiller;
  der(E_cooling) = P_cooling;
  der(E_fan) = P_fan_tower;
  der(E_pfac) = P_pump_fac;
  der(E_pcw) = P_pump_tower;
  der(E_chel) = P_chiller;
  der(M_makeup) = m_flow_makeup;
  der(E_pheat) = Q_flow_pump_heat;
  E_pump_heat_out = E_pheat;
  der(E_airin) = Q_flow_air_side;
  E_air_side_in = E_airin;
  E_heat_in = E_heat;
  E_tower_out = E_tower;
  E_chiller_out = E_chiller;
  E_cooling_out = E_cooling;
  E_fan_out = E_fan;
  E_pump_fac_out = E_pfac;
  E_pump_tower_out = E_pcw;
  E_chiller_elec_out = E_chel;
  M_makeup_out = M_makeup;
end {name};
"""
    return src



def dry_bank(params: PlantParams) -> drycooler.DryCoolerParams:
    """The dry-cooler bank of a ``heat_rejection = "dry" | "hybrid"`` plant as the component's parameters.

    Parameters
    ----------
    params : PlantParams
        Plant description with a ``[dry_cooler]`` section.

    Returns
    -------
    DryCoolerParams
        The whole bank at full fans (conductance, air, fan power ``n_cells P_fan_cell_nominal``).
    """
    d, t = params.dry_cooler, params.tower
    return drycooler.DryCoolerParams(UA_nominal_W_K=d.UA_nominal_W_K, m_air_nominal_kg_s=d.m_air_nominal_kg_s,
                                     P_fan_nominal_W=t.n_cells * t.P_fan_cell_nominal_W, n_UA=d.n_UA,
                                     cp_water_J_kgK=params.cp_water_J_kgK)


def coil_air_temperature_k(params: PlantParams, T_wb_K: float | np.ndarray,
                           T_db_K: float | np.ndarray | None) -> float | np.ndarray:
    """Air the heat-rejection bank works against: the wet-bulb for towers, the (pre-cooled) dry-bulb otherwise.

    Parameters
    ----------
    params : PlantParams
        Plant description.
    T_wb_K : float | np.ndarray
        Wet-bulb [K].
    T_db_K : float | np.ndarray | None
        Dry-bulb [K]; None: saturated air (``T_db = T_wb``).

    Returns
    -------
    float or ndarray
        ``T_wb`` (towers) or :func:`~cooling_fmu.components.drycooler.coil_air_k` (dry, hybrid) [K].
    """
    if params.heat_rejection == "towers":
        return T_wb_K
    d = params.dry_cooler
    return drycooler.coil_air_k(T_wb_K if T_db_K is None else T_db_K, T_wb_K, d.eps_pad, d.T_db_pad_on_K)


def rejected_heat_w(params: PlantParams, y_fan: float | np.ndarray, m_cw_kg_s: float | np.ndarray,
                    T_tin_K: float | np.ndarray, T_wb_K: float | np.ndarray,
                    T_db_K: float | np.ndarray | None = None) -> float | np.ndarray:
    """Heat the bank rejects with bank air fraction ``y_fan``: Braun's towers or the dry-cooler coil.

    Parameters
    ----------
    params : PlantParams
        Plant description.
    y_fan : float | np.ndarray
        Bank air-flow fraction (all arguments broadcast together).
    m_cw_kg_s : float | np.ndarray
        Water through the bank [kg/s].
    T_tin_K : float | np.ndarray
        Water entering the bank [K].
    T_wb_K : float | np.ndarray
        Wet-bulb [K].
    T_db_K : float | np.ndarray | None
        Dry-bulb [K] (dry and hybrid banks); None: ``T_wb``.

    Returns
    -------
    float or ndarray
        Heat [W] (:func:`~cooling_fmu.components.tower.braun_effectiveness` or
        :func:`~cooling_fmu.components.drycooler.dry_cooler`).
    """
    if params.heat_rejection == "towers":
        t = params.tower
        c_b, n_b = tower.braun_coefficients(t.NTU_nominal, t.n_merkel, t.LG_nominal)
        return tower.braun_effectiveness(c_b, n_b, m_cw_kg_s, y_fan * params.m_air_nominal_kg_s, T_tin_K, T_wb_K,
                                         t.p_atm_Pa, params.cp_water_J_kgK)[0]
    return drycooler.dry_cooler(dry_bank(params), y_fan, m_cw_kg_s, T_tin_K,
                                coil_air_temperature_k(params, T_wb_K, T_db_K))[0]


def _dry_cooler_text(params: PlantParams) -> tuple[str, str, str]:
    """Declarations, air-side equations and heat equations of the dry-cooler bank (generator, dry / hybrid).

    The bank's air ``y_fan m_air_nominal`` and its heat by :func:`~cooling_fmu.components.drycooler.
    dry_cooler_equations` against the coil air :func:`~cooling_fmu.components.drycooler.coil_air_expr`; the air
    warms sensibly (``T_air_out = T_coil + Q / (m_air cp_air)``), the pads evaporate
    :func:`~cooling_fmu.components.drycooler.pad_evaporation_expr` (0 when dry).
    """
    d = params.dry_cooler
    decl, eq = drycooler.dry_cooler_equations(dry_bank(params), "y_fan", "m_w_tower", "T_w_in", "T_air_coil")
    decl = list(decl) + ['  Real T_air_coil(unit="K") "Air entering the dry-cooler coil (after the pads)";']
    air = [f"  T_air_coil = {drycooler.coil_air_expr('T_db', 'T_wb', d.eps_pad, d.T_db_pad_on_K)};",
           "  T_air_hi = T_tower_in;",
           f"  dh_air_max = {real(drycooler.CP_AIR_J_KGK)} * (T_tower_in - T_air_coil);",
           "  m_flow_air = y_fan * m_air_nominal;",
           "  dh_air = Q_air / m_flow_air;",
           f"  T_air_out = T_air_coil + dh_air / {real(drycooler.CP_AIR_J_KGK)};",
           f"  m_flow_evap = {drycooler.pad_evaporation_expr('m_flow_air', 'T_db', 'T_air_coil')};"]
    return "\n".join(decl), "\n".join(air), "\n".join(eq + ["  Q_flow_cells = Q_dc;"])




# ---------------------------------------------------------------------------------------------------------------
# numpy mirror of the model equations
# ---------------------------------------------------------------------------------------------------------------
def tower_bypass_fraction(Q_flow_cells_W: float, Q_flow_tower_W: float) -> float:
    """Fraction of the tower water sent through the bypass to the basin, from the energy balance.

    With the cells' effectiveness unchanged, the tower cells reject ``(1 - b) Q_cells``, so
    ``b = 1 - Q_tower / Q_cells`` (0 when the cells reject no heat).

    Parameters
    ----------
    Q_flow_cells_W : float
        Heat the tower cells would reject with the whole tower-water flow [W].
    Q_flow_tower_W : float
        Heat rejected behind the bypass [W].

    Returns
    -------
    float
        Bypass fraction in [0, 1].
    """
    if Q_flow_cells_W <= 0.0:
        return 0.0
    return float(min(1.0, max(0.0, 1.0 - Q_flow_tower_W / Q_flow_cells_W)))




def state_vector(params: PlantParams, T_sec: float | np.ndarray, I_valve: float | np.ndarray, T_fac_sup: float,
                 T_fac_ret: float, I_fan: float, T_cw_sup: float) -> np.ndarray:
    """Pack the plant state in FMU order.

    Parameters
    ----------
    params : PlantParams
        Plant description.
    T_sec : float | np.ndarray
        Secondary (loop) temperatures [K], shape (n_cdu,) or scalar.
    I_valve : float | np.ndarray
        Valve integrators [1], shape (n_cdu,) or scalar.
    T_fac_sup : float
        Facility supply temperature [K].
    T_fac_ret : float
        Facility return temperature [K].
    I_fan : float
        Fan integrator [1].
    T_cw_sup : float
        Tower basin (tower-water supply) temperature [K].

    Returns
    -------
    ndarray, shape (2 n_cdu + 4,)
        ``[T_sec[1..n], I_valve[1..n], T_fac_sup, T_fac_ret, I_fan, T_cw_sup]``.
    """
    n = params.n_cdu
    return np.concatenate([np.broadcast_to(np.asarray(T_sec, float), (n,)),
                           np.broadcast_to(np.asarray(I_valve, float), (n,)),
                           [T_fac_sup, T_fac_ret, I_fan, T_cw_sup]])




def plant_equations(params: PlantParams, x: np.ndarray, heat_w: np.ndarray, T_wb_K: float,
                    T_db_K: float | None = None, Q_air_side_W: float = 0.0,
                    n_cells_cmd: float = 0.0) -> dict[str, object]:
    """Evaluate the model's equations (numpy mirror of the generated Modelica) at one state and input.

    Every relation is the component library's numpy function (:mod:`cooling_fmu.components`) whose Modelica
    fragment the generator inlines.

    Parameters
    ----------
    params : PlantParams
        Plant description.
    x : np.ndarray
        State in the order of :func:`state_vector` [K, 1, K, K, 1, K], shape (2 n_cdu + 4,).
    heat_w : np.ndarray
        Heat into each CDU [W], shape (n_cdu,).
    T_wb_K : float
        Wet-bulb temperature [K].
    T_db_K : float | None
        Dry-bulb temperature [K] (the FMU input ``T_db``); None: saturated air, ``T_db = T_wb``.
    Q_air_side_W : float
        Heat of the air side into the tower water [W] (the FMU input ``Q_flow_air_side``).
    n_cells_cmd : float
        Input ``n_cells_cmd``: tower cells commanded by the supervisory stager; 0 (default) = the algebraic
        "as many cells as possible" rule.

    Returns
    -------
    dict
        Every output of the model by name (per-CDU ones as ndarray, shape (n_cdu,)), except the running totals;
        plus ``"der"``: ndarray, shape (2 n_cdu + 4,), the state derivatives [K/s, 1/s].
    """
    n = params.n_cdu
    c, f, tl, t = params.cdu, params.facility, params.tower_loop, params.tower
    cp, rho = params.cp_water_J_kgK, params.rho_water_kg_m3
    q = np.asarray(heat_w, dtype=float)
    T_sec, I_valve = x[:n], x[n:2 * n]
    T_fs, T_fr, I_fan, T_cw = (float(x[2 * n]), float(x[2 * n + 1]), float(x[2 * n + 2]), float(x[2 * n + 3]))
    y_sec = pump.secondary_flow_fraction(q, c.Q_flow_nominal_W, params.y_sec_floor)
    m_sec = y_sec * c.m_flow_sec_nominal_kg_s
    u_valve = I_valve + valve.feedforward_opening(q, c.Q_flow_nominal_W, c.valve_k_ff)
    y_valve = valve.valve_opening(u_valve, c.y_valve_min)
    m_fac_cdu = y_valve * c.m_flow_fac_nominal_kg_s
    eps, C_min = hx.counterflow_eps(c.UA_hx_W_K, cp, m_sec, m_fac_cdu)
    Q_hx = eps * C_min * (T_sec - T_fs)
    T_sup = pipe.leaving_temperature(T_sec, Q_hx, m_sec, cp)
    Q_p_sec = pump.pump_shaft_heat_W(c.pump, c.m_flow_sec_nominal_kg_s, rho, y_sec)
    e_valve = valve.control_error(T_sup, c.T_sec_sup_set_K, c.valve_dT_span_K)
    m_fac = float(np.sum(m_fac_cdu))
    w = m_fac / params.m_flow_fac_design_kg_s
    w_cw = pipe.tower_water_fraction(w, tl.w_flow_min)
    m_cw = w_cw * tl.m_flow_nominal_kg_s
    eps_i, Cmin_i = (float(v) for v in hx.counterflow_eps(tl.UA_ihx_W_K, cp, m_fac, m_cw))
    Q_ihx, T_ihx_out = tower.bypass(eps_i * Cmin_i * (T_fr - T_cw), T_fr, m_fac, cp, params.T_ihx_bypass_K)
    T_cw_ret = pipe.leaving_temperature(T_cw, -Q_ihx, m_cw, cp)
    e_fan = valve.control_error(T_fs, t.T_fac_sup_set_K, t.fan_dT_span_K)
    u_fan = t.fan_k_p * e_fan + I_fan
    y_dem = float(valve.valve_opening(u_fan, params.y_fan_floor))  # the controllers' one limiter
    n_on = float(tower.cells_in_service(n_cells_cmd, y_dem, t.n_cells, t.y_fan_min))
    _, y_fan = tower.fan_speed(y_dem, n_on, t.n_cells, t.y_fan_min)
    P_fan = tower.fan_power_W(y_fan, n_on, t.n_cells, t.P_fan_cell_nominal_W)
    Q_ch, P_ch, _, Q_cond = chiller.trim_chiller(params, m_fac, T_ihx_out, T_wb_K, T_cw)
    T_tin = pipe.leaving_temperature(T_cw_ret, -(Q_cond + Q_air_side_W), m_cw, cp)
    Q_cells = float(rejected_heat_w(params, y_fan, m_cw, T_tin, T_wb_K, T_db_K))
    Q_tower, T_tw = tower.bypass(Q_cells, T_tin, m_cw, cp, t.T_leaving_min_K)
    T_ch_out = pipe.leaving_temperature(T_ihx_out, Q_ch, m_fac, cp)
    P_sec = pump.pump_power_W(c.pump, c.m_flow_sec_nominal_kg_s, rho, y_sec)
    r_dp = float(valve.reset_factor(y_valve, f.dp_reset_min if f.dp_reset else 1.0))
    P_fac = float(pump.pump_power_W(f.pump, params.m_flow_fac_design_kg_s, rho, w, r_dp))
    P_cw = float(pump.pump_power_W(tl.pump, tl.m_flow_nominal_kg_s, rho, w_cw))
    Q_p_fac = float(pump.pump_shaft_heat_W(f.pump, params.m_flow_fac_design_kg_s, rho, w, r_dp))
    Q_p_cw = float(pump.pump_shaft_heat_W(tl.pump, tl.m_flow_nominal_kg_s, rho, w_cw))
    if params.heat_rejection == "towers":
        m_air, T_ao, W_in, W_out = tower.exit_air(t.p_atm_Pa, T_wb_K, T_tin, y_fan * params.m_air_nominal_kg_s,
                                                  Q_tower, T_db_K)
        evap = m_air * (W_out - W_in)
        drift_fraction = t.drift_fraction
    else:  # dry cooler: sensible air, the pads' evaporation (0 when dry), no drift
        m_air = y_fan * params.dry_cooler.m_air_nominal_kg_s
        T_coil = coil_air_temperature_k(params, T_wb_K, T_db_K)
        T_ao = T_coil + max(0.0, Q_tower) / (m_air * drycooler.CP_AIR_J_KGK)
        evap = float(drycooler.pad_evaporation_kg_s(m_air, T_wb_K if T_db_K is None else T_db_K, T_coil))
        drift_fraction = 0.0
    drift, blow, makeup = tower.water_use(evap, m_cw, drift_fraction, t.cycles_of_concentration)
    der = np.concatenate([
        (q + Q_p_sec - Q_hx) / (c.m_water_sec_kg * cp),
        valve.integrator_rate(e_valve, y_valve, u_valve, c.valve_Ti_s),
        [m_fac * cp * (T_ch_out - T_fs) / (f.m_water_sup_kg * cp),
         (float(np.sum(Q_hx)) + Q_p_fac - m_fac * cp * (T_fr - T_fs)) / (f.m_water_ret_kg * cp),
         valve.integrator_rate(e_fan, y_fan, u_fan, t.fan_Ti_s),
         (m_cw * cp * (T_tw - T_cw) + Q_p_cw) / (tl.m_water_basin_kg * cp)],
    ])
    return {
        "T_sec_sup": T_sup, "T_sec_ret": T_sec.copy(), "m_flow_sec": m_sec, "m_flow_fac_cdu": m_fac_cdu,
        "y_valve": y_valve, "Q_flow_hx": Q_hx, "P_pump_sec": P_sec,
        "T_fac_sup": T_fs, "T_fac_ret": T_fr, "T_cw_sup": T_cw, "T_cw_ret": T_cw_ret, "T_tower_out": T_tw,
        "m_flow_fac": m_fac, "m_flow_cw": m_cw, "Q_flow_ihx": Q_ihx, "P_pump_fac": P_fac, "P_pump_tower": P_cw,
        "y_fan": y_fan, "y_fan_demand": y_dem, "n_cells_on": n_on, "P_fan_tower": P_fan, "Q_flow_tower": Q_tower,
        "Q_flow_chiller": Q_ch, "P_chiller": P_ch,
        "P_cooling": float(np.sum(P_sec) + P_fac + P_cw + P_fan + P_ch),
        "Q_flow_pump_heat": float(np.sum(Q_p_sec)) + Q_p_fac + Q_p_cw,
        "m_flow_air": m_air, "T_air_out": T_ao,
        "m_flow_evap": evap, "m_flow_drift": drift, "m_flow_blowdown": blow, "m_flow_makeup": makeup,
        "E_stored": pipe.stored_energy_J(cp, params.T_ref_K,
                                         (c.m_water_sec_kg, f.m_water_ret_kg, f.m_water_sup_kg, tl.m_water_basin_kg),
                                         (T_sec, T_fr, T_fs, T_cw)),
        "der": der,
    }



# ---------------------------------------------------------------------------------------------------------------
# steady state (one vectorised derivation: analytic_steady_state is it at one point, the fast plant's table on a grid)
# ---------------------------------------------------------------------------------------------------------------
def _bisect(fun, lo: np.ndarray, hi: np.ndarray, n_iter: int = 200, xtol: float = 0.0) -> np.ndarray:
    """Roots of a monotone function on ``[lo, hi]`` elementwise, by bisection to machine precision.

    An element stops moving once its midpoint equals an end (the interval is two adjacent doubles), or, with
    ``xtol > 0``, once its interval is at most ``xtol`` wide (the sizing questions, which need 1e-6 K, not 1e-14).
    """
    lo, hi = np.array(lo, dtype=float), np.array(hi, dtype=float)
    flo = fun(lo) > 0
    for _ in range(n_iter):
        mid = 0.5 * (lo + hi)
        done = (mid == lo) | (mid == hi) | (hi - lo <= xtol)
        if done.all():
            break
        move_lo = (fun(mid) > 0) == flo
        lo, hi = np.where(~done & move_lo, mid, lo), np.where(~done & ~move_lo, mid, hi)
    return 0.5 * (lo + hi)


def cdu_loop_heat_W(params: PlantParams, q: np.ndarray) -> np.ndarray:
    """Heat each CDU's plate heat exchanger passes at steady state: rack heat plus the secondary pump's shaft work.

    Parameters
    ----------
    params : PlantParams
        Plant description.
    q : np.ndarray
        Rack heat into each CDU [W], any shape.

    Returns
    -------
    ndarray
        ``q + P_shaft,sec(y_sec(q))`` [W] (:func:`~cooling_fmu.components.pump.pump_shaft_heat_W`), same shape.
    """
    c = params.cdu
    y_sec = pump.secondary_flow_fraction(q, c.Q_flow_nominal_W, params.y_sec_floor)
    return q + pump.pump_shaft_heat_W(c.pump, c.m_flow_sec_nominal_kg_s, params.rho_water_kg_m3, y_sec)


def _root(fun, lo: np.ndarray, hi: np.ndarray, n_iter: int = 100) -> np.ndarray:
    """Roots of a monotone function bracketed by ``[lo, hi]`` elementwise, by the Illinois variant of regula falsi
    (Dowell & Jarratt 1971: superlinear, keeps the bracket), to a bracket of a few ulps or an exact zero.

    Used where each evaluation is costly (the tower's Braun relation inside the fixed point of regimes B / C);
    an element without a sign change returns the end with the smaller residual.
    """
    a, b = np.array(lo, dtype=float), np.array(hi, dtype=float)
    fa, fb = fun(a), fun(b)
    side = np.zeros(a.shape)
    best = np.where(np.abs(fa) <= np.abs(fb), a, b)
    done = (fa == 0) | (fb == 0) | (np.sign(fa) == np.sign(fb)) | (a == b)
    for _ in range(n_iter):
        if done.all():
            break
        with np.errstate(invalid="ignore", divide="ignore"):
            c = (a * fb - b * fa) / (fb - fa)
        mid = 0.5 * (a + b)
        c = np.where(np.isfinite(c) & (c > np.minimum(a, b)) & (c < np.maximum(a, b)), c, mid)
        fc = fun(c)
        like_b = np.sign(fc) == np.sign(fb)
        upd = ~done
        fa_new = np.where(like_b & (side == -1), 0.5 * fa, fa)
        fb_new = np.where(~like_b & (side == 1), 0.5 * fb, fb)
        a, fa = np.where(upd & ~like_b, c, a), np.where(upd & ~like_b, fc, np.where(upd, fa_new, fa))
        b, fb = np.where(upd & like_b, c, b), np.where(upd & like_b, fc, np.where(upd, fb_new, fb))
        side = np.where(upd, np.where(like_b, -1, 1), side)
        best = np.where(upd, c, best)
        done |= (fc == 0) | (np.abs(b - a) <= 4e-16 * np.maximum(np.abs(a), np.abs(b)))
    return best


def secondary_supply_K(params: PlantParams, q: np.ndarray, T_fs: np.ndarray) -> np.ndarray:
    """Steady CDU secondary supply temperature with each valve at its steady opening (:func:`_valves_at`).

    The one supply relation the sizing uses (the pump's shaft heat included, :func:`cdu_loop_heat_W`).

    Parameters
    ----------
    params : PlantParams
        Plant description.
    q : np.ndarray
        Rack heat into each CDU [W], any shape broadcastable with ``T_fs``.
    T_fs : np.ndarray
        Facility supply temperature [K].

    Returns
    -------
    ndarray
        Secondary supply temperature [K], the broadcast shape.
    """
    return _valves_at(params, q, T_fs, supply=True)[1]


def _valves_at(params: PlantParams, q: np.ndarray, T_fs, supply: bool = False,
               ytol: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Steady valve openings and secondary temperatures for a facility supply temperature.

    Solves ``T_sec_sup(y) = T_sec_sup_set`` per CDU (``T_sec_sup`` decreases with the opening ``y``) by a
    vectorised bisection; a CDU whose setpoint is out of reach sits at the valve limit. ``q`` (rack heat; the pump's
    shaft heat is added, :func:`cdu_loop_heat_W`) and ``T_fs`` are broadcast together (any shape). Returns
    (y_valve, T_sec), or (y_valve, T_sec_sup) with ``supply``. With ``ytol > 0`` the opening is found by Illinois
    regula falsi (:func:`~cooling_fmu.components.roots.illinois`) on the same bracket to ``ytol``, in about a fifth of
    the evaluations (the fast plant's rows between regimes); 0 keeps the bisection to adjacent doubles, whose
    result the steady state and the FMU's initial state depend on bit for bit.
    """
    c, cp = params.cdu, params.cp_water_J_kgK
    m_sec = pump.secondary_flow_fraction(q, c.Q_flow_nominal_W, params.y_sec_floor) * c.m_flow_sec_nominal_kg_s
    qh = cdu_loop_heat_W(params, q)

    shape = np.broadcast(q, T_fs).shape
    qf, mf = np.broadcast_to(qh, shape).ravel(), np.broadcast_to(m_sec, shape).ravel()
    Tf = np.broadcast_to(np.asarray(T_fs, dtype=float), shape).ravel()
    every = np.arange(qf.size)

    def t_sup_rows(y, r):  # (T_sec_sup, T_sec) of the flat elements r at openings y: the one relation
        eps, C_min = hx.counterflow_eps(c.UA_hx_W_K, cp, mf[r], y * c.m_flow_fac_nominal_kg_s)
        T_sec = Tf[r] + qf[r] / (eps * C_min)
        return T_sec - qf[r] / (mf[r] * cp), T_sec

    def t_sup(y):
        sup, sec = t_sup_rows(np.broadcast_to(y, shape).ravel(), every)
        return sup.reshape(shape), sec.reshape(shape)

    f_lo = t_sup(np.full(shape, c.y_valve_min))[0] - c.T_sec_sup_set_K
    f_hi = t_sup(np.ones(shape))[0] - c.T_sec_sup_set_K
    lo, hi = np.full(shape, c.y_valve_min), np.ones(shape)
    if ytol > 0.0:  # set - T_sec_sup(y) rises with y: a root where it is < 0 at the floor and >= 0 fully open
        y = roots.illinois(lambda y, r: c.T_sec_sup_set_K - t_sup_rows(y, r)[0], np.zeros(qf.size), lo.ravel(),
                           hi.ravel(), -f_lo.ravel(), -f_hi.ravel(), ytol).reshape(shape)
        y = np.where(f_lo <= 0, c.y_valve_min, np.where(f_hi >= 0, 1.0, y))
        return y, t_sup(y)[0 if supply else 1]
    for _ in range(200):  # vectorised bisection on the decreasing function f(y), to adjacent doubles
        mid = 0.5 * (lo + hi)
        if np.all((mid == lo) | (mid == hi)):  # every interval is two adjacent doubles: no element moves again
            break
        fm = t_sup(mid)[0] - c.T_sec_sup_set_K
        lo, hi = np.where(fm > 0, mid, lo), np.where(fm > 0, hi, mid)
    y = np.where(f_lo <= 0, c.y_valve_min, np.where(f_hi >= 0, 1.0, 0.5 * (lo + hi)))
    return y, t_sup(y)[0 if supply else 1]


def facility_flows(params: PlantParams, y_valve: np.ndarray) -> tuple:
    """Facility and tower-water flows and the shaft heat of their pumps, from the CDU valve openings.

    Parameters
    ----------
    params : PlantParams
        Plant description.
    y_valve : np.ndarray
        Valve openings, shape (..., n_cdu).

    Returns
    -------
    tuple of ndarray
        ``(m_fac [kg/s], w_cw [1], m_cw [kg/s], Q_pump_fac [W], Q_pump_cw [W])``, shape (...,): the facility pumps
        with their differential-pressure reset and the tower pumps put their shaft work into the water they move
        (:func:`~cooling_fmu.components.pump.pump_shaft_heat_W`).
    """
    c, f, tl, rho = params.cdu, params.facility, params.tower_loop, params.rho_water_kg_m3
    m = y_valve.sum(axis=-1) * c.m_flow_fac_nominal_kg_s
    w = m / params.m_flow_fac_design_kg_s
    w_cw = pipe.tower_water_fraction(w, tl.w_flow_min)
    r_dp = valve.reset_factor(y_valve, f.dp_reset_min if f.dp_reset else 1.0)
    return (m, w_cw, w_cw * tl.m_flow_nominal_kg_s, pump.pump_shaft_heat_W(f.pump, params.m_flow_fac_design_kg_s,
                                                                             rho, w, r_dp),
            pump.pump_shaft_heat_W(tl.pump, tl.m_flow_nominal_kg_s, rho, w_cw))


def setpoint_tower_side(params: PlantParams, Q_fac_W: np.ndarray, m_fac_kg_s: np.ndarray, w_cw: np.ndarray,
                        T_wb_K: np.ndarray, Q_extra_W: np.ndarray, Q_inlet_W: np.ndarray, ytol: float = 0.0,
                        T_db_K: np.ndarray | None = None) -> tuple:
    """Tower side at rest with the facility supply at its set point (regime A of :func:`steady_states`).

    The IHX carries the facility heat ``Q_fac`` (CDU heat exchangers + facility pump heat); the towers reject it
    plus the tower pumps' heat (``Q_extra``, into the basin) and the heat joining the tower entering water
    (``Q_inlet``: the air side's): ``T_fac_ret = T_set + Q_fac / (m_fac cp)``, ``T_cw_sup = T_fac_ret - Q_fac /
    (eps_i C_i)``, ``T_cw_ret = T_cw_sup + Q_fac / C_cw``, ``T_tower_in = T_cw_ret + Q_inlet / C_cw``, and the air flow
    solves ``Q_Braun(y_fan, T_tower_in) = Q_fac + Q_extra + Q_inlet`` (:func:`~cooling_fmu.components.tower
    .braun_fan_fraction`). Used by
    the steady state and the fast plant (one derivation).

    Parameters
    ----------
    params : PlantParams
        Plant description.
    Q_fac_W : np.ndarray
        Facility heat [W] (all arguments broadcast together).
    m_fac_kg_s : np.ndarray
        Facility flow [kg/s].
    w_cw : np.ndarray
        Tower-water flow fraction.
    T_wb_K : np.ndarray
        Wet-bulb [K].
    Q_extra_W : np.ndarray
        Heat into the basin besides the IHX (tower pumps) [W].
    Q_inlet_W : np.ndarray
        Heat joining the tower entering water (air side) [W].
    ytol : float
        Tolerance of the fan solve on the air-flow fraction (:func:`~cooling_fmu.components.tower
        .braun_fan_fraction`): 0 (the steady states) bisects to adjacent doubles; the fast plant gives
        :data:`cooling_fmu.quasisteady.FAN_YTOL`.
    T_db_K : np.ndarray | None
        Dry-bulb [K] for a dry or hybrid bank (:func:`coil_air_temperature_k`; the fan solve is then
        :func:`~cooling_fmu.components.drycooler.dry_fan_fraction`); None: ``T_wb``; unused by towers.

    Returns
    -------
    tuple of ndarray
        ``(T_fac_ret, T_cw_sup, T_cw_ret, y_req)``; ``y_req`` is ``inf`` where no air flow suffices and 0 where no
        heat is rejected and the wet-bulb is at or below the set point.
    """
    t, tl, cp = params.tower, params.tower_loop, params.cp_water_J_kgK
    m_cw = w_cw * tl.m_flow_nominal_kg_s
    T_ret = t.T_fac_sup_set_K + Q_fac_W / (m_fac_kg_s * cp)
    eps_i, C_i = hx.counterflow_eps(tl.UA_ihx_W_K, cp, m_fac_kg_s, m_cw)
    T_cw = T_ret - Q_fac_W / (eps_i * C_i)
    T_cw_ret = T_cw + Q_fac_W / (m_cw * cp)
    Q_rej = Q_fac_W + Q_extra_W + Q_inlet_W
    T_tin = T_cw_ret + Q_inlet_W / (m_cw * cp)
    if params.heat_rejection == "towers":
        c_b, n_b = tower.braun_coefficients(t.NTU_nominal, t.n_merkel, t.LG_nominal)
        y_req = np.asarray(tower.braun_fan_fraction(c_b, n_b, m_cw, params.m_air_nominal_kg_s, T_tin, T_wb_K,
                                                    t.p_atm_Pa, cp, Q_rej, params.y_fan_floor, ytol), dtype=float)
        T_air = T_wb_K
    else:
        T_air = coil_air_temperature_k(params, T_wb_K, T_db_K)
        y_req = drycooler.dry_fan_fraction(dry_bank(params), m_cw, T_tin, T_air, Q_rej, params.y_fan_floor, ytol)
    y_req = np.where(T_tin <= T_air, np.inf, y_req)
    y_req = np.where(Q_rej == 0.0, np.where(T_air <= t.T_fac_sup_set_K, 0.0, np.inf), y_req)
    return T_ret, T_cw, T_cw_ret, y_req


def _basin_balance(params: PlantParams, T_b: np.ndarray, eps_C_ihx: np.ndarray, T_ret: np.ndarray, m: np.ndarray,
                   m_cw: np.ndarray, Qp_cw: np.ndarray, Qa: np.ndarray, Tw: np.ndarray, y_fan: np.ndarray,
                   T_db: np.ndarray | None) -> np.ndarray:
    """:func:`tower_side_at_fan`'s basin balance at basin temperature ``T_b`` [K]: the bank's heat at ``y_fan``
    (:func:`rejected_heat_w`) minus everything the tower water takes up (the IHX behind its bypass, with
    ``eps_C_ihx`` = its effectiveness x C_min [W/K]; the trim chiller's condenser heat; the inlet heat ``Qa``; the
    tower pumps' heat ``Qp_cw``) [W], elementwise. The one expression of the balance, for bisection and regula falsi.
    """
    cp = params.cp_water_J_kgK
    q_ihx, T_ihx = tower.bypass(eps_C_ihx * (T_ret - T_b), T_ret, m, cp, params.T_ihx_bypass_K)
    _, _, _, Q_cond = chiller.trim_chiller(params, m, T_ihx, Tw, T_b)
    T_tin = T_b + (q_ihx + Q_cond + Qa) / (m_cw * cp)
    return rejected_heat_w(params, y_fan, m_cw, T_tin, Tw, T_db) - q_ihx - Q_cond - Qa - Qp_cw


def _basin_by_regula_falsi(params: PlantParams, lo: np.ndarray, hi: np.ndarray, xtol_K: float, *arrays) -> np.ndarray:
    """:func:`tower_side_at_fan`'s basin balance solved by :func:`~cooling_fmu.components.roots.illinois` on the
    rows still open (the balance rises with the basin temperature); rows without a sign change fall back to
    bisection. ``arrays`` = ``(T_ret, m_fac, m_cw, Qp_cw, Q_inlet, T_wb, y_fan, T_db or None)``, broadcast to the
    bracket's shape; returns the basin temperature [K], that shape.
    """
    shape = np.broadcast_shapes(np.shape(lo), np.shape(hi), *(np.shape(a) for a in arrays if a is not None))
    flat = [None if a is None else np.broadcast_to(np.asarray(a, dtype=float), shape).ravel() for a in arrays]
    T_ret, m, m_cw, Qp, Qa, Tw, y, T_db = flat

    def balance(T_b, r):  # tower_side_at_fan's balance, on rows r
        e_i, C_i = hx.counterflow_eps(params.tower_loop.UA_ihx_W_K, params.cp_water_J_kgK, m[r], m_cw[r])
        return _basin_balance(params, T_b, e_i * C_i, T_ret[r], m[r], m_cw[r], Qp[r], Qa[r], Tw[r], y[r],
                              None if T_db is None else T_db[r])

    a = np.broadcast_to(np.asarray(lo, dtype=float), shape).ravel().copy()
    b = np.broadcast_to(np.asarray(hi, dtype=float), shape).ravel().copy()
    every = np.arange(a.size)
    f_a, f_b = balance(a, every), balance(b, every)
    # a trim chiller far above its range (a basin near the bracket's top, 100 K above the return) takes so much
    # power that its condenser heat outruns the towers and the balance turns negative again: the bracket's top has
    # the wrong sign. Halve from the top as the bisection does (its lower end moves while the balance is <= 0), until
    # the top is positive: the bracket then holds the root the bisection finds, in a few halvings instead of the
    # ~40 of a bisection to 1e-9 K over the 150 K bracket
    for _ in range(60):
        wrong = np.flatnonzero((f_a < 0.0) & (f_b < 0.0))
        if wrong.size == 0:
            break
        mid = 0.5 * (a[wrong] + b[wrong])
        f_m = balance(mid, wrong)
        up = f_m > 0.0
        b[wrong[up]], f_b[wrong[up]] = mid[up], f_m[up]
        a[wrong[~up]], f_a[wrong[~up]] = mid[~up], f_m[~up]
    T = roots.illinois(balance, np.zeros(a.size), a, b, f_a, f_b, xtol_K)
    odd = np.flatnonzero(~((f_a < 0.0) & (f_b >= 0.0)))
    if odd.size:  # no sign change on the bracket (not expected): bisection's answer, as without regula falsi
        T[odd] = _bisect(lambda x: balance(x, odd), a[odd], b[odd], xtol=xtol_K)
    return T.reshape(shape)


def tower_side_at_fan(params: PlantParams, Q_fac_W: np.ndarray, m_fac_kg_s: np.ndarray, m_cw_kg_s: np.ndarray,
                      Qp_cw_W: np.ndarray, Q_inlet_W: np.ndarray, T_wb_K: np.ndarray, T_fac_sup_K: np.ndarray,
                      y_fan: np.ndarray, xtol_K: float = 0.0, T_db_K: np.ndarray | None = None,
                      regula_falsi: bool = False) -> tuple:
    """Tower side at rest for a given facility supply and fan air-flow fraction (regimes B / C of
    :func:`steady_states`, and the fast plant's chiller regime: one derivation).

    ``T_fac_ret = T_fac_sup + Q_fac / (m_fac cp)``; the IHX (behind its bypass, :func:`~cooling_fmu.components.tower
    .bypass`) and the trim chiller (:func:`~cooling_fmu.components.chiller.trim_chiller`, its condenser heat into the
    tower water) at the basin temperature ``T_cw_sup`` that balances the basin: the bank's heat at ``y_fan``
    (:func:`rejected_heat_w`: Braun's towers or the dry cooler) = IHX heat + condenser heat + ``Q_inlet`` + tower
    pumps' heat, found by bisection on a bracket that always changes sign (far below the wet-bulb the towers heat
    the water, far above they reject more than anything brings in); with the tower bypass open the leaving water
    sits at the minimum and the basin above it by the tower pumps' heat.

    Parameters
    ----------
    params : PlantParams
        Plant description.
    Q_fac_W : np.ndarray
        Facility heat [W] (CDU heat exchangers + facility pump heat), shape (k,) (every argument broadcast together).
    m_fac_kg_s : np.ndarray
        Facility flow [kg/s].
    m_cw_kg_s : np.ndarray
        Tower-water flow [kg/s].
    Qp_cw_W : np.ndarray
        Tower pumps' heat into the basin [W].
    Q_inlet_W : np.ndarray
        Heat joining the tower entering water (the air side's) [W].
    T_wb_K : np.ndarray
        Wet-bulb [K].
    T_fac_sup_K : np.ndarray
        Facility supply [K].
    y_fan : np.ndarray
        Fan air-flow fraction [1].
    xtol_K : float
        Bisection width [K]; 0: to adjacent doubles.
    T_db_K : np.ndarray | None
        Dry-bulb [K] for a dry or hybrid bank (its heat is :func:`rejected_heat_w` against
        :func:`coil_air_temperature_k`); None: ``T_wb``; towers do not use it.
    regula_falsi : bool
        With ``xtol_K > 0``: find the basin by Illinois regula falsi (:func:`~cooling_fmu.components.roots
        .illinois`) on the same bracket, evaluating only the rows still open, instead of bisection: the same root
        to ``xtol_K`` in about a quarter of the balance evaluations (the fast plant's chiller regime). False keeps
        the bisection, whose result the steady state, the FMU's initial state and the sizing depend on bit for bit.

    Returns
    -------
    tuple of ndarray
        ``(T_fac_ret, T_cw_sup, T_ihx_out, Q_chiller, T_chiller_out)`` [K, K, K, W, K], each shape (k,).
    """
    t, tl, cp = params.tower, params.tower_loop, params.cp_water_J_kgK
    T_min, T_lo = t.T_leaving_min_K, params.T_ihx_bypass_K
    m, m_cw, Qp_cw, Qa, Tw = m_fac_kg_s, m_cw_kg_s, Qp_cw_W, Q_inlet_W, T_wb_K
    Ta = coil_air_temperature_k(params, Tw, T_db_K)  # the wet-bulb for towers
    T_ret = T_fac_sup_K + Q_fac_W / (m * cp)
    eps_i, C_i = hx.counterflow_eps(tl.UA_ihx_W_K, cp, m, m_cw)
    C_cw = m_cw * cp

    def ihx(T_b):  # IHX heat and facility leaving water behind the IHX bypass, basin at T_b
        return tower.bypass(eps_i * C_i * (T_ret - T_b), T_ret, m, cp, T_lo)

    def basin_balance(T_b):
        return _basin_balance(params, T_b, eps_i * C_i, T_ret, m, m_cw, Qp_cw, Qa, Tw, y_fan, T_db_K)

    lo, hi = np.minimum(Ta, T_min) - 30.0, np.maximum(T_ret, Ta) + 100.0
    if regula_falsi and xtol_K > 0.0:
        T_cw = _basin_by_regula_falsi(params, lo, hi, xtol_K, T_ret, m, m_cw, Qp_cw, Qa, Tw, y_fan, T_db_K)
    else:
        T_cw = _bisect(basin_balance, lo, hi, xtol=xtol_K)
    T_cw = np.where(T_cw - Qp_cw / C_cw < T_min, T_min + Qp_cw / C_cw, T_cw)
    _, T_ihx = ihx(T_cw)
    Q_ch = chiller.trim_chiller(params, m, T_ihx, Tw, T_cw)[0]
    return T_ret, T_cw, T_ihx, Q_ch, pipe.leaving_temperature(T_ihx, Q_ch, m, cp)


def steady_states(params: PlantParams, heat_w: np.ndarray, T_wb_K: np.ndarray,
                  Q_air_side_W: np.ndarray | float = 0.0, xtol_K: float = 0.0,
                  T_db_K: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Steady states of the generated plant model at ``k`` points of constant load and wet-bulb (vectorised).

    Derivation (every ``der(.) = 0``), written once with arrays:

    1. Secondary loop: ``Q_hx,i = Q_i + Q_pump,i`` (rack heat plus the pump's shaft work, :func:`cdu_loop_heat_W`);
       so ``T_sec,i = T_fac_sup + Q_hx,i / (eps_i C_min,i)`` and ``T_sec_sup,i = T_sec,i - Q_hx,i / (m_sec,i cp)``.
       The valve integrator is at rest when ``T_sec_sup,i`` is at its setpoint (``y`` found by bisection of this
       monotone relation) or when the valve is saturated at a limit (then ``I = y + e``: the tracking term balances
       the error, ``valve_Ti`` being both times).
    2. Facility loop: ``Q_ihx + Q_chiller = sum(Q_hx,i) + Q_pump,fac``, ``T_fac_ret = T_fac_sup + (sum(Q_hx,i) +
       Q_pump,fac) / (m_fac cp)`` (:func:`facility_flows`).
    3. Tower loop: the basin at rest means ``m_cw cp (T_tower_out - T_cw_sup) + Q_pump,cw + Q_cond + Q_air_side =
       0``: the towers reject the IHX heat, the tower pumps' heat, the trim chiller's condenser heat ``Q_cond =
       Q_chiller + P_chiller`` and the air side's heat (issue 22 item 4). The chiller's load and COP depend on the basin (its condenser water), so
       ``T_cw_sup`` is found by bisection of that balance (with the tower bypass of step 5 inside it).
    4. Fan controller at rest either with ``T_fac_sup = T_fac_sup_set`` (regime A: the chiller is off there, the
       tower side in closed form, :func:`setpoint_tower_side`) or saturated at the floor (regime B, cold / idle)
       or at full air flow (regime C, hot). In B and C ``T_fac_sup`` solves the scalar fixed point ``T_fac_sup =
       T_chiller_out(T_fac_sup)`` (bisection on ``[T_wb - 50, T_wb + 150]``), and the integrator sits at ``I = y -
       k_p e + e``.
    5. Tower bypass (cold weather): ``T_tower_out = max(T_cells_out, min(T_cw_ret, T_tower_min))``
       (:func:`~cooling_fmu.components.tower.bypass`).

    Parameters
    ----------
    params : PlantParams
        Plant description.
    heat_w : np.ndarray
        Constant heat into each CDU [W], >= 0, shape (k, n_cdu).
    T_wb_K : np.ndarray
        Constant wet-bulb temperature [K], shape (k,).
    Q_air_side_W : np.ndarray | float
        Constant heat of the air side into the tower water [W], shape (k,) or scalar.
    xtol_K : float
        Width [K] at which the basin and facility-supply bisections stop; 0 (default): to adjacent doubles (the
        FMU's initial state); the sizing and N+1 questions pass 1e-6 K, about 4x fewer tower evaluations.
    T_db_K : np.ndarray | None
        Constant dry-bulb [K], shape (k,), for a dry or hybrid bank (the coil works against it,
        :func:`coil_air_temperature_k`); None: saturated air (``T_db = T_wb``). Towers do not use it.

    Returns
    -------
    tuple of (ndarray, ndarray)
        ``(x, regime)``: the states, shape (k, 2 n_cdu + 4) (:func:`state_vector` order), and the regime of each
        point, shape (k,), ``"setpoint"``, ``"fan_floor"`` or ``"fan_full"``.
    """
    q = np.asarray(heat_w, dtype=float)
    T_wb = np.asarray(T_wb_K, dtype=float)
    c, t, cp = params.cdu, params.tower, params.cp_water_J_kgK
    Q_hx = cdu_loop_heat_W(params, q)
    Q_cdu = Q_hx.sum(axis=-1)
    Q_air = np.broadcast_to(np.asarray(Q_air_side_W, dtype=float), Q_cdu.shape)
    y_floor = params.y_fan_floor
    T_set, T_min = t.T_fac_sup_set_K, t.T_leaving_min_K
    T_db = None if T_db_K is None else np.broadcast_to(np.asarray(T_db_K, dtype=float), T_wb.shape)
    T_air = np.asarray(coil_air_temperature_k(params, T_wb, T_db), dtype=float)  # the wet-bulb for towers

    def loop(rows, T_fs, y_fan):
        y_v, T_sec = _valves_at(params, q[rows], T_fs[:, None])
        m, w_cw, m_cw, Qp_fac, Qp_cw = facility_flows(params, y_v)
        T_ret, T_cw, _, _, T_out = tower_side_at_fan(params, Q_cdu[rows] + Qp_fac, m, m_cw, Qp_cw, Q_air[rows],
                                                     T_wb[rows], T_fs, y_fan, xtol_K,
                                                     None if T_db is None else T_db[rows])
        return y_v, T_sec, T_ret, T_cw, T_out

    # regime A (facility supply at its setpoint), in closed form
    y_v, T_sec = _valves_at(params, q, np.full(q.shape[:-1] + (1,), T_set))
    m, w_cw, m_cw, Qp_fac, Qp_cw = facility_flows(params, y_v)
    T_ret, T_cw, _, y_req = setpoint_tower_side(params, Q_cdu + Qp_fac, m, w_cw, T_wb, Qp_cw, Q_air, T_db_K=T_db)
    setpoint = (y_floor <= y_req) & (y_req <= 1.0)
    regime = np.where(setpoint, "setpoint", np.where(y_req < y_floor, "fan_floor", "fan_full"))
    y_fan = np.where(setpoint, y_req, np.where(y_req < y_floor, y_floor, 1.0))
    T_fs = np.full(Q_cdu.shape, T_set)
    I_fan = np.where(setpoint, y_req, 0.0)
    T_cw = np.where(setpoint & (Q_cdu + Qp_fac + Qp_cw + Q_air == 0.0), np.maximum(T_air, T_min), T_cw)
    rows = np.flatnonzero(~setpoint)
    if rows.size:  # regimes B / C: T_fs = T_chiller_out(T_fs)
        yf = y_fan[rows]
        T_fs[rows] = _bisect(lambda T: T - loop(rows, T, yf)[4], T_air[rows] - 50.0, T_air[rows] + 150.0,
                             xtol=xtol_K)
        # the fixed point can have a second root away from the physical one: on the wrong side of the set point (a
        # large trim chiller running flat out while the IHX hands its condenser heat back from the basin: Theta's
        # 1 MW chiller at 16 kW and a 19 C wet-bulb gave 31.6 C "at the fan floor"), or a runaway far above the
        # wet-bulb (178 C for a generated 1 MW towers plant at 1.16 MW and 25.4 C). The fan controller rests at its
        # floor only at or below the set point and at full air only at or above it, and a facility supply more than
        # 50 K above the wet-bulb is no plant's; a row whose root lies outside that side is solved again inside it
        # when the side holds a root (rows with a unique root keep their answer bit for bit)
        floor = yf < 1.0
        lo_s = np.where(floor, T_air[rows] - 50.0, T_set)
        hi_s = np.where(floor, T_set, np.maximum(T_set, T_air[rows] + 50.0))
        outside = (T_fs[rows] < lo_s) | (T_fs[rows] > hi_s)
        if outside.any():
            g_lo = lo_s - loop(rows, lo_s, yf)[4]
            g_hi = hi_s - loop(rows, hi_s, yf)[4]
            wrong = np.flatnonzero(outside & ((g_lo > 0) != (g_hi > 0)))
            if wrong.size:
                r = rows[wrong]
                T_fs[r] = _bisect(lambda T: T - loop(r, T, yf[wrong])[4], lo_s[wrong], hi_s[wrong], xtol=xtol_K)
        # without heat every facility temperature the IHX bypass holds is at rest: take the water at the basin,
        # max(T_wb, T_tower_min), where that is a rest point (as plant v4 without the IHX bypass)
        T0 = np.maximum(T_air[rows], T_min)
        idle = (Q_cdu[rows] + Q_air[rows] == 0.0) & (np.abs(T0 - loop(rows, T0, yf)[4]) < 1e-9)
        T_fs[rows] = np.where(idle, T0, T_fs[rows])
        y_v[rows], T_sec[rows], T_ret[rows], T_cw[rows], _ = loop(rows, T_fs[rows], yf)
        e = valve.control_error(T_fs[rows], T_set, t.fan_dT_span_K)
        I_fan[rows] = valve.integrator_at_rest(yf, e, t.fan_k_p)
    # valve integrators: at the setpoint u = y; saturated u = y + e (tracking time = integral time); I = u - the
    # load feed-forward
    m_sec = pump.secondary_flow_fraction(q, c.Q_flow_nominal_W, params.y_sec_floor) * c.m_flow_sec_nominal_kg_s
    e_v = valve.control_error(pipe.leaving_temperature(T_sec, Q_hx, m_sec, cp), c.T_sec_sup_set_K, c.valve_dT_span_K)
    sat = (y_v <= c.y_valve_min) | (y_v >= 1.0)
    I_valve = (np.where(sat, valve.integrator_at_rest(y_v, e_v), y_v)
               - valve.feedforward_opening(q, c.Q_flow_nominal_W, c.valve_k_ff))
    x = np.concatenate([T_sec, I_valve, np.stack([T_fs, T_ret, I_fan, T_cw], axis=-1)], axis=-1)
    return x, regime


def analytic_steady_state(params: PlantParams, heat_w: np.ndarray, T_wb_K: float,
                          T_db_K: float | None = None, Q_air_side_W: float = 0.0,
                          xtol_K: float = 0.0) -> dict[str, object]:
    """Steady state of the generated plant model for a constant load and wet-bulb (:func:`steady_states` at one
    point, its outputs from :func:`plant_equations`).

    Parameters
    ----------
    params : PlantParams
        Plant description.
    heat_w : np.ndarray
        Constant heat into each CDU [W], >= 0, shape (n_cdu,).
    T_wb_K : float
        Constant wet-bulb temperature [K].
    T_db_K : float | None
        Constant dry-bulb temperature [K] (the towers' evaporation depends on it, a dry or hybrid bank's heat
        too); None: saturated air.
    Q_air_side_W : float
        Constant heat of the air side into the tower water [W].
    xtol_K : float
        Bisection width [K] (:func:`steady_states`); 0: to adjacent doubles.

    Returns
    -------
    dict
        Every output of :func:`plant_equations` at the steady state, plus ``"x"``: ndarray, shape (2 n_cdu + 4,),
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
    x, regime = steady_states(params, q[None, :], np.array([float(T_wb_K)]), np.array([float(Q_air_side_W)]),
                              xtol_K=xtol_K, T_db_K=None if T_db_K is None else np.array([float(T_db_K)]))
    out = plant_equations(params, x[0], q, float(T_wb_K), T_db_K, float(Q_air_side_W))
    out["x"] = x[0]
    out["regime"] = str(regime[0])
    return out
