"""The flat Modelica plant model: generated from a :class:`~cooling_fmu.params.PlantParams`.

This module also mirrors its equations in numpy and solves its steady state.

The generated model is ONE flat model (arrays + for-loops, ``Real`` with ``unit=`` attributes, no Modelica
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
* Tower bank, Merkel characteristic in effectiveness form (ASHRAE Handbook HVAC Systems and Equipment 2020,
  ch. 40: ``KaV/L = c (L/G)^-n``, n ~ 0.6; EnergyPlus Engineering Reference, "Cooling towers", eps-NTU form):
  ``NTU_tower = NTU_nominal (y_fan / w_cw)^n_merkel``, ``eps_tower = 1 - exp(-NTU_tower)``,
  ``Q_cells = eps_tower m_cw cp (T_cw_ret - T_wb)``, ``T_cells_out = T_cw_ret - Q_cells / (m_cw cp)``; basin
  (state) ``m_water_basin cp der(T_cw_sup) = m_cw cp (T_tower_out - T_cw_sup)``.
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
      y_fan = clip(u, y_fan_min / n_cells, 1),  der(I_fan) = e_fan / fan_Ti + (y_fan - u) / fan_Ti

  ``y_fan`` is the bank's air-flow fraction. Staging: as many cells as possible run, all at the same speed, none
  below ``y_fan_min`` (ASHRAE 90.1-2019 sec. 6.5.5.2.2, multicell heat rejection):
  ``n_cells_on = max(1, #{k in 1..n_cells : y_fan n_cells >= k y_fan_min})``, speed ``s = y_fan n_cells /
  n_cells_on``, ``P_fan = n_cells_on P_fan_cell s^3`` (fan affinity law). Hotter wet-bulb -> larger ``y_fan``.
* Trim chiller (optional) on the facility water after the IHX, allowed when ``T_wb > T_wb_switch`` (economiser
  below): ``Q_chiller = min(Q_max, max(0, m_fac cp (T_ihx_out - T_chiller_set)))``, ``T_chiller_set =
  T_fac_sup_set + dT_deadband``; ``COP = min(COP_max, eta_carnot T_chiller_set / max(dT_lift_min, T_wb + dT_cond -
  T_chiller_set))``, ``P_chiller = Q_chiller / COP``; its condenser heat goes to the tower air (water balance).

Water from the air-side energy balance (saturated exit air)
----------------------------------------------------------
The bank moves ``m_air = y_fan m_cw_nominal / LG_nominal`` of air. Entering air has the enthalpy of saturated air
at the wet-bulb, ``h_in = h_s(T_wb)`` (the adiabatic-saturation property of the wet-bulb, ASHRAE Handbook
Fundamentals 2017 ch. 1), and, for want of a dry-bulb input, the humidity ratio ``W_in = W_s(T_wb)``. The air
takes up the rejected heat and leaves saturated (the saturated-exit-air method of EnergyPlus' cooling-tower
evaporation, Engineering Reference "Cooling tower evaporation: saturated exit"): ``h_out = h_in + Q_air / m_air``
with ``Q_air = Q_tower + Q_chiller + P_chiller``, ``T_air_out`` solves ``h_s(T) = h_out`` (five Newton steps from
the chord between ``T_wb`` and ``T_hi``, unrolled), and ``m_evap = m_air (W_s(T_air_out) - W_in)`` (zero when no
heat is rejected). Air cannot leave warmer than the water entering the tower, ``T_hi = max(T_cw_ret, T_wb + 1 K)``;
the water-side Merkel effectiveness above ignores the air's heat capacity, so at low fan speed it can reject more
heat than the fan's air could carry. The balance then uses the least air flow that can carry it, ``m_air =
max(y_fan m_cw_nominal / LG_nominal, Q_air / (h_s(T_hi) - h_in))`` (natural draft and the spray zone in a real
tower; documented as a limit of the model). Saturation
pressure, humidity ratio and enthalpy are those of psychrolib / ASHRAE Fundamentals 2017 ch. 1 eqs. 5, 6, 20, 30
(over ice at or below the triple point). Hotter, more humid weather puts more of the heat into evaporation, so WUE
moves with the weather. In dry air the true ``W_in`` is lower and the evaporation larger by ``m_air cp_air
(T_db - T_wb) / h_fg`` at most: the model is low in the driest hours (documented in docs/cooling.md).
Drift ``m_drift = drift_fraction m_cw``; blowdown from the cycles of concentration (mass balance of dissolved
solids, SPX "Cooling Tower Fundamentals", 2nd ed., ch. 5) ``m_blowdown = max(0, m_evap / (COC - 1) - m_drift)``;
``m_makeup = m_evap + m_drift + m_blowdown``.

Totals
------
``P_cooling = sum(P_pump_sec) + P_pump_fac + P_pump_tower + P_fan + P_chiller``. Running integrals (J, kg):
``E_heat_in``, ``E_tower_out``, ``E_chiller_out`` (heat removed by the chiller), ``E_cooling_out``, ``E_fan_out``,
``E_pump_sec_out[i]``, ``E_pump_fac_out``, ``E_pump_tower_out``, ``E_chiller_elec_out`` (electrical energy of
each component, so step averages of every component are exact), ``M_makeup_out``. ``E_stored = cp (m_water_sec
sum(T_sec - T_ref) + m_water_ret (T_fac_ret - T_ref) + m_water_sup (T_fac_sup - T_ref) + m_water_basin (T_cw_sup -
T_ref))``. The FMU integrates states and totals with the same update, so ``E_heat_in - E_tower_out -
E_chiller_out - (E_stored - E_stored(0))`` closes to round-off whatever the integration error.
"""

from __future__ import annotations

import numpy as np

from .params import PlantParams

__all__ = [
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
]

#: Bump when the generated source changes meaning (the FMU cache key also hashes the source text itself).
GENERATOR_VERSION = "4"

#: Names of the state groups in FMU order: per-CDU ``T_sec[n]``, ``I_valve[n]``, then scalars.
STATE_NAMES = ("T_sec", "I_valve", "T_fac_sup", "T_fac_ret", "I_fan", "T_cw_sup")

#: ``C_r`` above which the counterflow effectiveness uses its ``C_r = 1`` limit (avoids 0/0).
CR_BALANCED = 0.9999

#: Motor part-load efficiency relative to full load, ``eta_motor(L) / eta_motor(1)``, against the motor load
#: fraction ``L`` (rows, :data:`MOTOR_PLR`) for motors of rated input power :data:`MOTOR_SIZES_W` (columns): U.S. DOE
#: (2014), "Determining Electric Motor Load and Efficiency" (Motor Challenge fact sheet, Fig. 1), as digitised in the
#: Modelica Buildings Library (``Buildings.Fluid.Movers.BaseClasses.Characteristics.motorEfficiencyCurve``, table
#: ``tab``; LBNL, lbl-srg/modelica-buildings). Above 1 (and for motors above 70 kW) the ratio is 1.
MOTOR_PLR = (0.0, 0.1, 0.2, 0.3, 0.4, 0.6, 0.8, 1.0)
MOTOR_SIZES_W = (700.0, 2500.0, 7500.0, 15000.0, 35000.0, 70000.0)
MOTOR_REL_EFF = (
    (0.0, 0.0, 0.0, 0.0, 0.0, 0.0),
    (0.319836509737628, 0.329886760993909, 0.458027464511497, 0.576112127457564, 0.643957112752703, 0.724359122802955),
    (0.551721742352314, 0.613279531297038, 0.752726767477942, 0.843179028784475, 0.903480536322164, 0.962525762452817),
    (0.716480140443274, 0.804199438688888, 0.886622050343885, 0.936873306625292, 0.956973809137855, 0.987124562906699),
    (0.816999745270129, 0.922527383461084, 0.950165574415858, 0.980316328184702, 1.0, 1.0),
    (0.906409929833499, 1.0, 1.0, 1.0, 1.0, 1.0),
    (0.956863812148299, 1.0, 1.0, 1.0, 1.0, 1.0),
    (1.0, 1.0, 1.0, 1.0, 1.0, 1.0),
)
#: Full-load motor efficiency [-]. ASSUMPTION: NEMA Premium 4-pole motors of 7.5-75 kW are 91.7-95.4 % efficient
#: (NEMA MG 1 Table 12-12); 0.93 is used for every pump motor.
ETA_MOTOR_FULL = 0.93
#: Variable-frequency drive efficiency [-], held constant. ASSUMPTION: PWM drives are ~96-97 % efficient near full
#: load (U.S. DOE Motor Systems Tip Sheet #11, "Adjustable Speed Drive Part-Load Efficiency"); the drive's own
#: drop at light load is not modelled (the motor's is).
ETA_VFD = 0.97
#: Smallest motor load fraction used in the efficiency table (the table is 0 at 0: avoids 0/0 at zero flow).
X_MOTOR_MIN = 0.02

#: Newton steps used to find the saturated exit-air temperature (unrolled in the model).
NEWTON_STEPS = 5

# psychrolib SI saturation-pressure coefficients (ASHRAE Handbook Fundamentals 2017 ch. 1 eqs. 5 and 6)
_PW_LIQ = (-5.8002206e03, 1.3914993, -4.8640239e-02, 4.1764768e-05, -1.4452093e-08, 0.0, 6.5459673)
_PW_ICE = (-5.6745359e03, 6.3925247, -9.677843e-03, 6.2215701e-07, 2.0747825e-09, -9.484024e-13, 4.1635019)
_T_TRIPLE = 273.16
_T0C = 273.15


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


# ---------------------------------------------------------------------------------------------------------------
# component laws shared by the generator and the numpy mirror
# ---------------------------------------------------------------------------------------------------------------
def motor_rel_curve(P_rated_W: float) -> np.ndarray:
    """Part-load motor efficiency relative to full load at the points :data:`MOTOR_PLR`, for one motor size.

    Linear interpolation of :data:`MOTOR_REL_EFF` in the rated motor input power, clipped to the table's 0.7-70 kW
    (the Modelica Buildings Library interpolates the same table with a smooth monotone spline; the two differ by at
    most a few 0.1 % between the tabulated sizes).

    Parameters
    ----------
    P_rated_W : float
        Rated input power of the motor [W] (> 0).

    Returns
    -------
    ndarray, shape (8,)
        ``eta_motor(L) / eta_motor(1)`` at ``L`` = :data:`MOTOR_PLR` (0 at L = 0, 1 at L = 1).
    """
    tab = np.asarray(MOTOR_REL_EFF)
    return np.array([np.interp(P_rated_W, MOTOR_SIZES_W, row) for row in tab])


def _rel_eff(x, curve: np.ndarray):
    """Piecewise-linear interpolation of a :func:`motor_rel_curve` at load fraction(s) ``x`` (flat above 1), as a
    sum of clipped ramps: the same arithmetic the generated model uses.
    """
    xs = np.asarray(MOTOR_PLR)
    out = curve[0] + 0.0 * np.asarray(x, dtype=float)
    for k in range(len(xs) - 1):
        dx = xs[k + 1] - xs[k]
        out = out + (curve[k + 1] - curve[k]) / dx * np.minimum(np.maximum(x - xs[k], 0.0), dx)
    return out


def _rel_eff_expr(x: str, curve: np.ndarray) -> str:
    xs = MOTOR_PLR
    terms = [_c(curve[0])]
    for k in range(len(xs) - 1):
        dx = xs[k + 1] - xs[k]
        slope = (curve[k + 1] - curve[k]) / dx
        if slope != 0.0:
            terms.append(f"{_c(slope)} * min(max({x} - {_c(xs[k])}, 0.0), {_c(dx)})")
    return "(" + " + ".join(terms) + ")"


def pump_rated_motor_W(pump, m_nominal_kg_s: float, rho_kg_m3: float) -> float:
    """Rated input power of ONE pump motor [W]: the nominal shaft power of the pump group shared by its
    ``n_pumps`` identical pumps, divided by :data:`ETA_MOTOR_FULL` (the motor sized to the pump's duty point).

    Parameters
    ----------
    pump : cooling_fmu.params.PumpParams
        Heads, efficiency and number of pumps.
    m_nominal_kg_s : float
        Mass flow of the whole group at ``w = 1`` [kg/s].
    rho_kg_m3 : float
        Water density [kg/m3].

    Returns
    -------
    float
        Rated motor input power of one pump [W].
    """
    return _shaft_nominal_W(pump, m_nominal_kg_s, rho_kg_m3) / pump.n_pumps / ETA_MOTOR_FULL


def motor_drive_efficiency(x, P_rated_W: float):
    """Motor x drive efficiency of one pump at motor load fraction ``x``.

    ``ETA_MOTOR_FULL * rel(max(x, X_MOTOR_MIN)) * ETA_VFD`` with ``rel`` the U.S. DOE (2014) part-load curve of a
    motor of this size (:data:`MOTOR_REL_EFF`, :func:`motor_rel_curve`).

    Parameters
    ----------
    x : float or ndarray
        Shaft power of the pump as a fraction of its motor's rating, > 0.
    P_rated_W : float
        Rated motor input power [W] (selects the size column of the table).

    Returns
    -------
    float or ndarray
        Dimensionless efficiency; ``0.93 x 0.97 = 0.9021`` at and above ``x = 1`` for every size.
    """
    return ETA_MOTOR_FULL * ETA_VFD * _rel_eff(np.maximum(x, X_MOTOR_MIN), motor_rel_curve(P_rated_W))


def pumps_running(pump, w):
    """Number of identical pumps running at group flow fraction ``w``: ``ceil(w n_pumps)``, at least 1, written as
    ``1 + #{k in 1..n_pumps-1 : w n_pumps > k}`` (the form of the generated model).

    Parameters
    ----------
    pump : cooling_fmu.params.PumpParams
        Pump group (``n_pumps``).
    w : float or ndarray
        Flow fraction of the group, in (0, 1].

    Returns
    -------
    float or ndarray
        Pumps running (a whole number, as float).
    """
    N = pump.n_pumps
    n = 1.0 + 0.0 * np.asarray(w, dtype=float)
    for k in range(1, N):
        n = n + np.where(np.asarray(w) * N > k, 1.0, 0.0)
    return n if np.ndim(w) else float(n)


def _shaft_nominal_W(pump, m_nominal_kg_s: float, rho: float) -> float:
    """Nominal shaft power [W] of a pump group: ``V_nom (dp_static + dp_friction) / eta_pump``."""
    return m_nominal_kg_s / rho * (pump.dp_static_Pa + pump.dp_friction_Pa) / pump.eta_pump


def pump_power_W(pump, m_nominal_kg_s: float, rho_kg_m3: float, w, r=1.0):
    """Electrical power of a pump group at flow fraction ``w`` (law in the module docstring).

    Parameters
    ----------
    pump : cooling_fmu.params.PumpParams
        Static and friction head, hydraulic efficiency, number of identical staged pumps.
    m_nominal_kg_s : float
        Mass flow of the group at ``w = 1`` [kg/s].
    rho_kg_m3 : float
        Water density [kg/m3].
    w : float or ndarray
        Flow fraction, in (0, 1].
    r : float or ndarray, optional
        Reset factor of the static head (differential-pressure set-point reset), in (0, 1]; 1 = no reset.

    Returns
    -------
    float or ndarray
        ``P_shaft,nom x / eta_md(x N / n_on)`` with ``x = w (s r^2 + (1 - s) w^2)``, ``N = n_pumps``, ``n_on`` =
        :func:`pumps_running` [W].
    """
    s = pump.static_fraction
    x = w * (s * r * r + (1.0 - s) * w * w)
    xp = x * pump.n_pumps / pumps_running(pump, w)
    eta = motor_drive_efficiency(xp, pump_rated_motor_W(pump, m_nominal_kg_s, rho_kg_m3))
    return _shaft_nominal_W(pump, m_nominal_kg_s, rho_kg_m3) * x / eta


def _pump_power_expr(pump, m_nominal_kg_s: float, rho: float, w: str, x: str, P_shaft: str) -> str:
    """Modelica expression of :func:`pump_power_W` for flow fraction variable ``w`` and shaft-load variable ``x``."""
    N = pump.n_pumps
    n_on = " + ".join(["1.0"] + [f"noEvent(if {w} * {N}.0 > {k}.0 then 1.0 else 0.0)" for k in range(1, N)])
    xp = f"max({_c(X_MOTOR_MIN)}, {x} * {N}.0 / ({n_on}))"
    curve = motor_rel_curve(pump_rated_motor_W(pump, m_nominal_kg_s, rho))
    return f"{P_shaft} * {x} / ({_c(ETA_MOTOR_FULL * ETA_VFD)} * {_rel_eff_expr(xp, curve)})"


def _lnpws(T, c):
    return c[0] / T + c[1] + c[2] * T + c[3] * T**2 + c[4] * T**3 + c[5] * T**4 + c[6] * np.log(T)


def _dlnpws(T, c):
    return -c[0] / T**2 + c[2] + 2 * c[3] * T + 3 * c[4] * T**2 + 4 * c[5] * T**3 + c[6] / T


def sat_air(T_K, p_Pa: float):
    """Saturated moist air at temperature ``T_K`` and pressure ``p_Pa`` (psychrolib SI formulae).

    Parameters
    ----------
    T_K : float or ndarray
        Temperature [K].
    p_Pa : float
        Atmospheric pressure [Pa].

    Returns
    -------
    tuple
        ``(W_s, h_s, dh_s/dT)``: humidity ratio [kg/kg dry air], enthalpy [J/kg dry air] (ASHRAE Fundamentals
        2017 ch. 1 eqs. 5/6, 20, 30; over ice at or below 273.16 K), and its temperature derivative [J/(kg K)].
    """
    T = np.asarray(T_K, dtype=float)
    ice = T <= _T_TRIPLE
    pws = np.exp(np.where(ice, _lnpws(T, _PW_ICE), _lnpws(T, _PW_LIQ)))
    dpws = pws * np.where(ice, _dlnpws(T, _PW_ICE), _dlnpws(T, _PW_LIQ))
    W = 0.621945 * pws / (p_Pa - pws)
    dW = 0.621945 * p_Pa * dpws / (p_Pa - pws) ** 2
    t = T - _T0C
    h = 1006.0 * t + W * (2501000.0 + 1860.0 * t)
    dh = 1006.0 + dW * (2501000.0 + 1860.0 * t) + 1860.0 * W
    if np.ndim(T_K) == 0:
        return float(W), float(h), float(dh)
    return W, h, dh


def _c(x: float) -> str:
    """A Modelica literal in parentheses (so a negative constant never follows a binary operator)."""
    return f"({_r(x)})"


def _poly_expr(T: str, c) -> str:
    return (f"{_c(c[0])} / {T} + {_c(c[1])} + {_c(c[2])} * {T} + {_c(c[3])} * {T}^2 + {_c(c[4])} * {T}^3 + "
            f"{_c(c[5])} * {T}^4 + {_c(c[6])} * log({T})")


def _dpoly_expr(T: str, c) -> str:
    return (f"{_c(-c[0])} / {T}^2 + {_c(c[2])} + 2.0 * {_c(c[3])} * {T} + 3.0 * {_c(c[4])} * {T}^2 + 4.0 * "
            f"{_c(c[5])} * {T}^3 + {_c(c[6])} / {T}")


def _sat_air_equations(T: str, tag: str) -> tuple[list[str], list[str]]:
    """Declarations and equations of saturated air at temperature variable ``T``: ``pw_<tag>``, ``W_<tag>``,
    ``h_<tag>``, ``dh_<tag>`` (the :func:`sat_air` formulae).
    """
    decl = [f'  Real pw_{tag}(unit="Pa") "Saturation pressure at {T}";',
            f'  Real dpw_{tag}(unit="Pa/K") "Its temperature derivative";',
            f'  Real W_{tag}(unit="1") "Humidity ratio of saturated air at {T}";',
            f'  Real h_{tag}(unit="J/kg") "Enthalpy of saturated air at {T}";',
            f'  Real dh_{tag}(unit="J/(kg.K)") "Its temperature derivative";']
    eq = [f"  pw_{tag} = exp(noEvent(if {T} <= {_r(_T_TRIPLE)} then {_poly_expr(T, _PW_ICE)} else "
          f"{_poly_expr(T, _PW_LIQ)}));",
          f"  dpw_{tag} = pw_{tag} * noEvent(if {T} <= {_r(_T_TRIPLE)} then {_dpoly_expr(T, _PW_ICE)} else "
          f"{_dpoly_expr(T, _PW_LIQ)});",
          f"  W_{tag} = 0.621945 * pw_{tag} / (p_atm - pw_{tag});",
          f"  h_{tag} = 1006.0 * ({T} - {_r(_T0C)}) + W_{tag} * (2501000.0 + 1860.0 * ({T} - {_r(_T0C)}));",
          f"  dh_{tag} = 1006.0 + 0.621945 * p_atm * dpw_{tag} / (p_atm - pw_{tag})^2 * (2501000.0 + 1860.0 * "
          f"({T} - {_r(_T0C)})) + 1860.0 * W_{tag};"]
    return decl, eq


def _exit_air(params: PlantParams, T_wb: float, T_w_in: float, m_air_fan: float, Q_air: float
              ) -> tuple[float, float, float, float]:
    """(m_air [kg/s], T_air_out [K], W_in, W_out) of the saturated-exit-air balance (same steps as the model)."""
    P = params.tower.p_atm_Pa
    W_in, h_in, _ = sat_air(T_wb, P)
    T_hi = max(T_w_in, T_wb + 1.0)
    h_hi = sat_air(T_hi, P)[1]
    dh_max = h_hi - h_in
    Q = max(0.0, Q_air)
    m_air = max(m_air_fan, Q / dh_max)
    dh = Q / m_air
    T = T_wb + (T_hi - T_wb) * dh / dh_max
    for _ in range(NEWTON_STEPS):
        _, h, d = sat_air(T, P)
        T = T - (h - h_in - dh) / d
    W_out = sat_air(T, P)[0]
    return m_air, T, W_in, W_out


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
    T0 = _r(params.T_ref_K)
    name = model_name_for(params)
    N = t.n_cells
    stages = " + ".join(f"noEvent(if y_fan * {N}.0 >= {k}.0 * y_fan_min then 1.0 else 0.0)" for k in range(1, N + 1))
    T_ch_set = t.T_fac_sup_set_K + ch.dT_deadband_K
    psy_decl, psy_eq = _sat_air_equations("T_wb", "wb")
    d_hi, e_hi = _sat_air_equations("T_air_hi", "hi")
    psy_decl += d_hi
    psy_eq += e_hi
    newton = ["  T_ao0 = T_wb + (T_air_hi - T_wb) * dh_air / dh_air_max;"]
    for k in range(NEWTON_STEPS + 1):
        d, e = _sat_air_equations(f"T_ao{k}", f"ao{k}")
        psy_decl += [f'  Real T_ao{k}(unit="K") "Newton iterate {k} of the exit-air temperature";'] + d
        psy_eq += e
        if k < NEWTON_STEPS:
            newton.append(f"  T_ao{k + 1} = T_ao{k} - (h_ao{k} - h_wb - dh_air) / dh_ao{k};")
    y_max = "y_valve[1]"
    for i in range(2, n + 1):  # max over the CDU valves, nested (no array reduction needed from the compiler)
        y_max = f"max({y_max}, y_valve[{i}])"
    K = NEWTON_STEPS
    decl_psy = "\n".join(psy_decl)
    eq_psy = "\n".join(psy_eq + newton)
    src = f"""model {name} "{params.description} (generated by hpctwin cooling_fmu, generator v{GENERATOR_VERSION})"
  // ---- parameters (SI) ----
  parameter Real cp(unit="J/(kg.K)") = {_r(params.cp_water_J_kgK)} "Specific heat of water";
  parameter Real T_ref(unit="K") = {T0} "Reference temperature of E_stored";
  parameter Real Q_flow_CDU_nominal(unit="W") = {_r(c.Q_flow_nominal_W)} "Design heat per CDU";
  parameter Real m_flow_sec_nominal(unit="kg/s") = {_r(c.m_flow_sec_nominal_kg_s)} "Secondary flow per CDU at full pump speed";
  parameter Real m_flow_fac_nominal(unit="kg/s") = {_r(c.m_flow_fac_nominal_kg_s)} "Facility flow per CDU HX, valve open";
  parameter Real m_water_sec(unit="kg") = {_r(c.m_water_sec_kg)} "Water mass of one secondary loop";
  parameter Real UA_hx(unit="W/K") = {_r(c.UA_hx_W_K)} "Conductance of one CDU plate heat exchanger";
  parameter Real y_sec_floor(unit="1") = {_r(params.y_sec_floor)} "Smallest secondary flow fraction (1 = constant flow)";
  parameter Real P_shaft_sec_nominal(unit="W") = {_r(_shaft_nominal_W(c.pump, c.m_flow_sec_nominal_kg_s, rho))} "Secondary pump shaft power at nominal flow";
  parameter Real s_sec(unit="1") = {_r(c.pump.static_fraction)} "Static share of the secondary pump head";
  parameter Real y_valve_min(unit="1") = {_r(c.y_valve_min)} "Minimum facility valve opening";
  parameter Real T_sec_sup_set(unit="K") = {_r(c.T_sec_sup_set_K)} "Secondary supply temperature setpoint";
  parameter Real valve_Ti(unit="s") = {_r(c.valve_Ti_s)} "Valve controller integral time";
  parameter Real valve_dT_span(unit="K") = {_r(c.valve_dT_span_K)} "Valve controller error span";
  parameter Real m_flow_fac_design(unit="kg/s") = {_r(params.m_flow_fac_design_kg_s)} "Facility flow, all valves open";
  parameter Real m_water_sup(unit="kg") = {_r(f.m_water_sup_kg)} "Water mass of the facility supply piping";
  parameter Real m_water_ret(unit="kg") = {_r(f.m_water_ret_kg)} "Water mass of the facility return piping";
  parameter Real P_shaft_fac_nominal(unit="W") = {_r(_shaft_nominal_W(f.pump, params.m_flow_fac_design_kg_s, rho))} "Facility pump shaft power at design flow";
  parameter Real s_fac(unit="1") = {_r(f.pump.static_fraction)} "Static share of the facility pump head";
  parameter Real dp_reset_min(unit="1") = {_r(f.dp_reset_min if f.dp_reset else 1.0)} "Floor of the set-point reset factor (1 = no reset)";
  parameter Real m_flow_cw_nominal(unit="kg/s") = {_r(tl.m_flow_nominal_kg_s)} "Tower-water flow at full pump speed";
  parameter Real w_cw_min(unit="1") = {_r(tl.w_flow_min)} "Smallest tower-water flow fraction";
  parameter Real UA_ihx(unit="W/K") = {_r(tl.UA_ihx_W_K)} "Conductance of the intermediate heat exchanger";
  parameter Real m_water_basin(unit="kg") = {_r(tl.m_water_basin_kg)} "Water mass of the tower basins and tower-water piping";
  parameter Real P_shaft_cw_nominal(unit="W") = {_r(_shaft_nominal_W(tl.pump, tl.m_flow_nominal_kg_s, rho))} "Tower pump shaft power at nominal flow";
  parameter Real s_cw(unit="1") = {_r(tl.pump.static_fraction)} "Static share of the tower pump head";
  parameter Real NTU_tower_nominal(unit="1") = {_r(t.NTU_nominal)} "Tower Merkel number at full air and nominal water flow";
  parameter Real n_merkel(unit="1") = {_r(t.n_merkel)} "Exponent of the tower characteristic";
  parameter Real m_air_nominal(unit="kg/s") = {_r(params.m_air_nominal_kg_s)} "Tower air flow at full fan speed";
  parameter Real p_atm(unit="Pa") = {_r(t.p_atm_Pa)} "Site atmospheric pressure";
  parameter Real P_fan_cell_nominal(unit="W") = {_r(t.P_fan_cell_nominal_W)} "Fan power of one cell at full speed";
  parameter Real y_fan_min(unit="1") = {_r(t.y_fan_min)} "Minimum speed of a running fan";
  parameter Real y_fan_floor(unit="1") = {_r(params.y_fan_floor)} "Minimum bank air-flow fraction (one cell at minimum speed)";
  parameter Real T_fac_sup_set(unit="K") = {_r(t.T_fac_sup_set_K)} "Facility supply temperature setpoint";
  parameter Real fan_k_p(unit="1") = {_r(t.fan_k_p)} "Fan controller proportional gain";
  parameter Real fan_Ti(unit="s") = {_r(t.fan_Ti_s)} "Fan controller integral time (= anti-windup tracking time)";
  parameter Real fan_dT_span(unit="K") = {_r(t.fan_dT_span_K)} "Fan controller error span";
  parameter Real T_tower_min(unit="K") = {_r(t.T_leaving_min_K)} "Minimum tower leaving water held by the tower bypass";
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
  Real M_makeup(unit="kg", start=0.0) "Make-up water since initialization";
  // ---- algebraic variables ----
  Real y_sec[{n}](each unit="1") "Secondary pump flow fraction";
  Real x_sec[{n}](each unit="1") "Secondary pump shaft-load fraction";
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
  Real T_ihx_out(unit="K") "Facility water leaving the IHX";
  Real e_fan(unit="1") "Normalised fan controller error";
  Real u_fan(unit="1") "Unsaturated fan controller output";
  Real s_fan(unit="1") "Speed of each running fan";
  Real NTU_tower(unit="1") "Tower Merkel number";
  Real eps_tower(unit="1") "Tower effectiveness";
  Real Q_flow_cells(unit="W") "Heat the tower cells would reject with no bypass";
  Real T_cells_out(unit="K") "Tower cell leaving water with no bypass";
  Real T_chiller_out(unit="K") "Water temperature after the chiller";
  Real COP_chiller(unit="1") "Chiller COP";
  Real dh_air(unit="J/kg") "Enthalpy rise of the tower air";
  Real Q_air(unit="W") "Heat given to the tower air (towers + chiller condenser, >= 0)";
  Real T_air_hi(unit="K") "Highest exit-air temperature: the tower entering water (at least T_wb + 1 K)";
  Real dh_air_max(unit="J/kg") "Enthalpy rise of air leaving saturated at T_air_hi";
{decl_psy}
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
  output Real y_fan(unit="1") "Tower bank air-flow fraction";
  output Real n_cells_on(unit="1") "Tower cells with the fan running";
  output Real P_fan_tower(unit="W") "Tower fan electrical power";
  output Real Q_flow_tower(unit="W") "Heat rejected by the towers (> 0 when cooling)";
  output Real Q_flow_chiller(unit="W") "Heat removed from the facility water by the chiller";
  output Real P_chiller(unit="W") "Chiller electrical power";
  output Real P_cooling(unit="W") "Total cooling electrical power (pumps + fans + chiller)";
  output Real m_flow_air(unit="kg/s") "Tower air flow of the evaporation balance (fan air flow, at least what carries the heat)";
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
equation
  for i in 1:{n} loop
    y_sec[i] = min(1.0, max(y_sec_floor, Q_flow_CDU[i] / Q_flow_CDU_nominal));
    m_flow_sec[i] = y_sec[i] * m_flow_sec_nominal;
    y_valve[i] = min(1.0, max(y_valve_min, I_valve[i]));
    m_flow_fac_cdu[i] = y_valve[i] * m_flow_fac_nominal;
    C_min[i] = cp * min(m_flow_sec[i], m_flow_fac_cdu[i]);
    C_r[i] = min(m_flow_sec[i], m_flow_fac_cdu[i]) / max(m_flow_sec[i], m_flow_fac_cdu[i]);
    Z_hx[i] = exp(-(UA_hx / C_min[i]) * (1.0 - C_r[i]));
    eps_hx[i] = noEvent(if C_r[i] < {CR_BALANCED} then (1.0 - Z_hx[i]) / (1.0 - C_r[i] * Z_hx[i]) else (UA_hx / C_min[i]) / (1.0 + UA_hx / C_min[i]));
    Q_flow_hx[i] = eps_hx[i] * C_min[i] * (T_sec[i] - T_pipe_sup);
    m_water_sec * cp * der(T_sec[i]) = Q_flow_CDU[i] - Q_flow_hx[i];
    T_sec_ret[i] = T_sec[i];
    T_sec_sup[i] = T_sec[i] - Q_flow_hx[i] / (m_flow_sec[i] * cp);
    e_valve[i] = (T_sec_sup[i] - T_sec_sup_set) / valve_dT_span;
    der(I_valve[i]) = e_valve[i] / valve_Ti + (y_valve[i] - I_valve[i]) / valve_Ti;
    x_sec[i] = y_sec[i] * (s_sec + (1.0 - s_sec) * y_sec[i] * y_sec[i]);
    P_pump_sec[i] = {_pump_power_expr(c.pump, c.m_flow_sec_nominal_kg_s, rho, "y_sec[i]", "x_sec[i]", "P_shaft_sec_nominal")};
    der(E_psec[i]) = P_pump_sec[i];
    E_pump_sec_out[i] = E_psec[i];
  end for;
  m_flow_fac = sum(m_flow_fac_cdu);
  w_fac = m_flow_fac / m_flow_fac_design;
  r_dp = max(dp_reset_min, {y_max});
  x_fac = w_fac * (s_fac * r_dp * r_dp + (1.0 - s_fac) * w_fac * w_fac);
  P_pump_fac = {_pump_power_expr(f.pump, params.m_flow_fac_design_kg_s, rho, "w_fac", "x_fac", "P_shaft_fac_nominal")};
  w_cw = max(w_cw_min, w_fac);
  m_flow_cw = w_cw * m_flow_cw_nominal;
  x_cw = w_cw * (s_cw + (1.0 - s_cw) * w_cw * w_cw);
  P_pump_tower = {_pump_power_expr(tl.pump, tl.m_flow_nominal_kg_s, rho, "w_cw", "x_cw", "P_shaft_cw_nominal")};
  C_min_ihx = cp * min(m_flow_fac, m_flow_cw);
  C_r_ihx = min(m_flow_fac, m_flow_cw) / max(m_flow_fac, m_flow_cw);
  Z_ihx = exp(-(UA_ihx / C_min_ihx) * (1.0 - C_r_ihx));
  eps_ihx = noEvent(if C_r_ihx < {CR_BALANCED} then (1.0 - Z_ihx) / (1.0 - C_r_ihx * Z_ihx) else (UA_ihx / C_min_ihx) / (1.0 + UA_ihx / C_min_ihx));
  Q_flow_ihx = eps_ihx * C_min_ihx * (T_pipe_ret - T_cw_basin);
  T_ihx_out = T_pipe_ret - Q_flow_ihx / (m_flow_fac * cp);
  T_cw_sup = T_cw_basin;
  T_cw_ret = T_cw_basin + Q_flow_ihx / (m_flow_cw * cp);
  e_fan = (T_pipe_sup - T_fac_sup_set) / fan_dT_span;
  u_fan = fan_k_p * e_fan + I_fan;
  y_fan = min(1.0, max(y_fan_floor, u_fan));
  der(I_fan) = e_fan / fan_Ti + (y_fan - u_fan) / fan_Ti;
  n_cells_on = max(1.0, {stages});
  s_fan = y_fan * {N}.0 / n_cells_on;
  P_fan_tower = n_cells_on * P_fan_cell_nominal * s_fan ^ 3;
  NTU_tower = NTU_tower_nominal * (y_fan / w_cw) ^ n_merkel;
  eps_tower = 1.0 - exp(-NTU_tower);
  Q_flow_cells = eps_tower * m_flow_cw * cp * (T_cw_ret - T_wb);
  T_cells_out = T_cw_ret - Q_flow_cells / (m_flow_cw * cp);
  T_tower_out = max(T_cells_out, min(T_cw_ret, T_tower_min));
  Q_flow_tower = Q_flow_cells - m_flow_cw * cp * (T_tower_out - T_cells_out);
  m_water_basin * cp * der(T_cw_basin) = m_flow_cw * cp * (T_tower_out - T_cw_basin);
  Q_flow_chiller = noEvent(if T_wb > T_wb_switch then have_chiller else 0.0) * min(Q_flow_chiller_max, max(0.0, m_flow_fac * cp * (T_ihx_out - T_chiller_set)));
  T_chiller_out = T_ihx_out - Q_flow_chiller / (m_flow_fac * cp);
  COP_chiller = min(COP_max, eta_carnot * T_chiller_set / max(dT_lift_min, T_wb + dT_cond - T_chiller_set));
  P_chiller = Q_flow_chiller / COP_chiller;
  m_water_ret * cp * der(T_pipe_ret) = sum(Q_flow_hx) - m_flow_fac * cp * (T_pipe_ret - T_pipe_sup);
  m_water_sup * cp * der(T_pipe_sup) = m_flow_fac * cp * (T_chiller_out - T_pipe_sup);
  T_fac_sup = T_pipe_sup;
  T_fac_ret = T_pipe_ret;
  Q_air = max(0.0, Q_flow_tower + Q_flow_chiller + P_chiller);
  T_air_hi = max(T_cw_ret, T_wb + 1.0);
  dh_air_max = h_hi - h_wb;
  m_flow_air = max(y_fan * m_air_nominal, Q_air / dh_air_max);
  dh_air = Q_air / m_flow_air;
{eq_psy}
  T_air_out = T_ao{K};
  m_flow_evap = m_flow_air * (W_ao{K} - W_wb);
  m_flow_drift = drift_fraction * m_flow_cw;
  m_flow_blowdown = max(0.0, m_flow_evap / (coc - 1.0) - m_flow_drift);
  m_flow_makeup = m_flow_evap + m_flow_drift + m_flow_blowdown;
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


# ---------------------------------------------------------------------------------------------------------------
# numpy mirror of the model equations
# ---------------------------------------------------------------------------------------------------------------
def _counterflow_eps(UA: float, cp: float, m1, m2):
    """Counterflow effectiveness and C_min [W/K] (same formula as the model)."""
    mmin, mmax = np.minimum(m1, m2), np.maximum(m1, m2)
    C_min = cp * mmin
    C_r = mmin / mmax
    ntu = UA / C_min
    Z = np.exp(-ntu * (1.0 - C_r))
    with np.errstate(invalid="ignore", divide="ignore"):  # np.where evaluates both branches; the balanced one is used
        eps = np.where(C_r < CR_BALANCED, (1.0 - Z) / (1.0 - C_r * Z), ntu / (1.0 + ntu))
    return eps, C_min


def _hx_eps(params: PlantParams, m_sec: np.ndarray, m_fac: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Counterflow effectiveness and C_min [W/K] of the CDU heat exchangers (same formula as the model)."""
    return _counterflow_eps(params.cdu.UA_hx_W_K, params.cp_water_J_kgK, m_sec, m_fac)


def _ihx_eps(params: PlantParams, m_fac: float, m_cw: float) -> tuple[float, float]:
    eps, C_min = _counterflow_eps(params.tower_loop.UA_ihx_W_K, params.cp_water_J_kgK, m_fac, m_cw)
    return float(eps), float(C_min)


def _n_cells_on(params: PlantParams, y_fan: float) -> float:
    N, s_min = params.tower.n_cells, params.tower.y_fan_min
    return max(1.0, float(sum(1.0 for k in range(1, N + 1) if y_fan * N >= k * s_min)))


def _chiller(params: PlantParams, m_fac: float, T_in: float, T_wb: float) -> tuple[float, float, float]:
    """(Q_flow_chiller [W], P_chiller [W], COP) of the trim chiller for water entering at ``T_in``."""
    ch, t, cp = params.chiller, params.tower, params.cp_water_J_kgK
    T_set = t.T_fac_sup_set_K + ch.dT_deadband_K
    on = (1.0 if ch.enabled else 0.0) if T_wb > ch.T_wb_switch_K else 0.0
    Q = on * min(ch.Q_flow_max_W, max(0.0, m_fac * cp * (T_in - T_set)))
    cop = min(ch.COP_max, ch.eta_carnot * T_set / max(ch.dT_lift_min_K, T_wb + ch.dT_cond_K - T_set))
    return Q, Q / cop, cop


def _tower_bypass(params: PlantParams, Q_cells: float, T_cw_ret: float, m_cw: float) -> tuple[float, float]:
    """(Q_flow_tower [W], T_tower_out [K]) behind the ideal tower bypass valve (same formula as the model).

    The three-way valve sends part of the tower water straight to the basin so that the mixed leaving water is
    ``T_tower_out = max(T_cells_out, min(T_cw_ret, T_tower_min))`` (ASHRAE Handbook HVAC Systems and Equipment 2020
    ch. 40, cold-weather capacity control: fans to minimum, then bypass to the basin); the heat rejected is
    ``Q_cells - m_cw cp (T_tower_out - T_cells_out)``, bit-identical to ``Q_cells`` when the valve is closed.
    """
    cp = params.cp_water_J_kgK
    T_cells = T_cw_ret - Q_cells / (m_cw * cp)
    T_out = max(T_cells, min(T_cw_ret, params.tower.T_leaving_min_K))
    return Q_cells - m_cw * cp * (T_out - T_cells), T_out


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


def _w_cw(params: PlantParams, w_fac: float) -> float:
    return max(params.tower_loop.w_flow_min, w_fac)


def state_vector(params: PlantParams, T_sec, I_valve, T_fac_sup: float, T_fac_ret: float, I_fan: float,
                 T_cw_sup: float) -> np.ndarray:
    """Pack the plant state in FMU order.

    Parameters
    ----------
    params : PlantParams
        Plant description.
    T_sec, I_valve : array_like, shape (n_cdu,) or scalar
        Secondary temperatures [K] and valve integrators [1].
    T_fac_sup, T_fac_ret : float
        Facility supply and return temperatures [K].
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


def plant_equations(params: PlantParams, x: np.ndarray, heat_w: np.ndarray, T_wb_K: float) -> dict[str, object]:
    """Evaluate the model's equations (numpy mirror of the generated Modelica) at one state and input.

    Parameters
    ----------
    params : PlantParams
        Plant description.
    x : ndarray, shape (2 n_cdu + 4,)
        State in the order of :func:`state_vector` [K, 1, K, K, 1, K].
    heat_w : ndarray, shape (n_cdu,)
        Heat into each CDU [W].
    T_wb_K : float
        Wet-bulb temperature [K].

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
    y_sec = np.minimum(1.0, np.maximum(params.y_sec_floor, q / c.Q_flow_nominal_W))
    m_sec = y_sec * c.m_flow_sec_nominal_kg_s
    y_valve = np.minimum(1.0, np.maximum(c.y_valve_min, I_valve))
    m_fac_cdu = y_valve * c.m_flow_fac_nominal_kg_s
    eps, C_min = _hx_eps(params, m_sec, m_fac_cdu)
    Q_hx = eps * C_min * (T_sec - T_fs)
    T_sup = T_sec - Q_hx / (m_sec * cp)
    e_valve = (T_sup - c.T_sec_sup_set_K) / c.valve_dT_span_K
    m_fac = float(np.sum(m_fac_cdu))
    w = m_fac / params.m_flow_fac_design_kg_s
    w_cw = _w_cw(params, w)
    m_cw = w_cw * tl.m_flow_nominal_kg_s
    eps_i, Cmin_i = _ihx_eps(params, m_fac, m_cw)
    Q_ihx = eps_i * Cmin_i * (T_fr - T_cw)
    T_ihx_out = T_fr - Q_ihx / (m_fac * cp)
    T_cw_ret = T_cw + Q_ihx / (m_cw * cp)
    e_fan = (T_fs - t.T_fac_sup_set_K) / t.fan_dT_span_K
    u_fan = t.fan_k_p * e_fan + I_fan
    y_fan = min(1.0, max(params.y_fan_floor, u_fan))
    n_on = _n_cells_on(params, y_fan)
    s = y_fan * t.n_cells / n_on
    P_fan = n_on * t.P_fan_cell_nominal_W * s**3
    eps_t = 1.0 - np.exp(-t.NTU_nominal * (y_fan / w_cw) ** t.n_merkel)
    Q_tower, T_tw = _tower_bypass(params, float(eps_t * m_cw * cp * (T_cw_ret - T_wb_K)), T_cw_ret, m_cw)
    Q_ch, P_ch, _ = _chiller(params, m_fac, T_ihx_out, T_wb_K)
    T_ch_out = T_ihx_out - Q_ch / (m_fac * cp)
    P_sec = pump_power_W(c.pump, c.m_flow_sec_nominal_kg_s, rho, y_sec)
    r_dp = max(f.dp_reset_min if f.dp_reset else 1.0, float(np.max(y_valve)))
    P_fac = float(pump_power_W(f.pump, params.m_flow_fac_design_kg_s, rho, w, r_dp))
    P_cw = float(pump_power_W(tl.pump, tl.m_flow_nominal_kg_s, rho, w_cw))
    m_air, T_ao, W_in, W_out = _exit_air(params, T_wb_K, T_cw_ret, y_fan * params.m_air_nominal_kg_s,
                                         Q_tower + Q_ch + P_ch)
    evap = m_air * (W_out - W_in)
    drift = t.drift_fraction * m_cw
    blow = max(0.0, evap / (t.cycles_of_concentration - 1.0) - drift)
    der = np.concatenate([
        (q - Q_hx) / (c.m_water_sec_kg * cp),
        e_valve / c.valve_Ti_s + (y_valve - I_valve) / c.valve_Ti_s,
        [m_fac * cp * (T_ch_out - T_fs) / (f.m_water_sup_kg * cp),
         (float(np.sum(Q_hx)) - m_fac * cp * (T_fr - T_fs)) / (f.m_water_ret_kg * cp),
         e_fan / t.fan_Ti_s + (y_fan - u_fan) / t.fan_Ti_s,
         m_cw * cp * (T_tw - T_cw) / (tl.m_water_basin_kg * cp)],
    ])
    T_ref = params.T_ref_K
    return {
        "T_sec_sup": T_sup, "T_sec_ret": T_sec.copy(), "m_flow_sec": m_sec, "m_flow_fac_cdu": m_fac_cdu,
        "y_valve": y_valve, "Q_flow_hx": Q_hx, "P_pump_sec": P_sec,
        "T_fac_sup": T_fs, "T_fac_ret": T_fr, "T_cw_sup": T_cw, "T_cw_ret": T_cw_ret, "T_tower_out": T_tw,
        "m_flow_fac": m_fac, "m_flow_cw": m_cw, "Q_flow_ihx": Q_ihx, "P_pump_fac": P_fac, "P_pump_tower": P_cw,
        "y_fan": y_fan, "n_cells_on": n_on, "P_fan_tower": P_fan, "Q_flow_tower": Q_tower,
        "Q_flow_chiller": Q_ch, "P_chiller": P_ch,
        "P_cooling": float(np.sum(P_sec) + P_fac + P_cw + P_fan + P_ch),
        "m_flow_air": m_air, "T_air_out": T_ao,
        "m_flow_evap": evap, "m_flow_drift": drift, "m_flow_blowdown": blow, "m_flow_makeup": evap + drift + blow,
        "E_stored": cp * (c.m_water_sec_kg * float(np.sum(T_sec - T_ref)) + f.m_water_ret_kg * (T_fr - T_ref)
                          + f.m_water_sup_kg * (T_fs - T_ref) + tl.m_water_basin_kg * (T_cw - T_ref)),
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
    m_sec = np.minimum(1.0, np.maximum(params.y_sec_floor, q / c.Q_flow_nominal_W)) * c.m_flow_sec_nominal_kg_s

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
    2. Facility loop: ``Q_ihx + Q_chiller = sum(Q_i)``, ``T_fac_ret = T_fac_sup + sum(Q_i) / (m_fac cp)``.
    3. Tower loop: the basin at rest means ``T_tower_out = T_cw_sup`` and ``Q_tower = Q_ihx``. With the IHX
       ``Q_ihx = eps_i C_i (T_fac_ret - T_cw_sup)`` and the tower ``Q_ihx = eps_t C_cw (T_cw_sup + Q_ihx / C_cw -
       T_wb)``: ``T_cw_sup = T_wb + Q_ihx (1 - eps_t) / (eps_t C_cw)`` and ``Q_ihx = eps_i C_i (T_fac_ret - T_wb)
       / (1 + eps_i C_i (1 - eps_t) / (eps_t C_cw))`` in closed form.
    4. Fan controller at rest either with ``T_fac_sup = T_fac_sup_set`` (regime A: ``Q_ihx = sum(Q_i)``, then
       ``T_cw_sup = T_fac_ret - Q_ihx / (eps_i C_i)`` and the air flow solves ``eps_tower(y_fan) = Q_ihx / (C_cw
       (T_cw_ret - T_wb))``, i.e. ``y_fan = w_cw (-ln(1 - eps) / NTU_nominal)^(1/n)`` in closed form) or saturated
       at the floor (regime B, cold / idle) or at full air flow (regime C, hot). In B and C ``T_fac_sup`` solves
       the scalar fixed point ``T_fac_sup = T_chiller_out(T_fac_sup)`` (bisection), and the integrator sits at
       ``I = y - k_p e + e``.
    5. Tower bypass (cold weather): if the basin of step 3 would sit below ``T_tower_min`` the valve holds it
       there, ``T_cw_sup = T_tower_out = T_tower_min`` and ``Q_tower = Q_ihx = eps_i C_i (T_fac_ret -
       T_tower_min)``; the bypass fraction is ``1 - Q_tower / Q_cells`` (:func:`tower_bypass_fraction`). With no
       heat the water settles at ``max(T_wb, T_tower_min)``.

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
    c, t, tl, cp = params.cdu, params.tower, params.tower_loop, params.cp_water_J_kgK
    T_wb = float(T_wb_K)
    Q = float(q.sum())
    y_floor = params.y_fan_floor

    def flows(y_v):
        m = float(np.sum(y_v)) * c.m_flow_fac_nominal_kg_s
        w_cw = _w_cw(params, m / params.m_flow_fac_design_kg_s)
        return m, w_cw, w_cw * tl.m_flow_nominal_kg_s

    def loop(T_fs: float, y_fan: float):
        y_v, T_sec = _valves_at(params, q, T_fs)
        m, w_cw, m_cw = flows(y_v)
        T_ret = T_fs + Q / (m * cp)
        eps_t = 1.0 - np.exp(-t.NTU_nominal * (y_fan / w_cw) ** t.n_merkel)
        eps_i, C_i = _ihx_eps(params, m, m_cw)
        C_cw = m_cw * cp
        a = eps_i * C_i * (T_ret - T_wb) / (1.0 + eps_i * C_i * (1.0 - eps_t) / (eps_t * C_cw))
        T_cw = T_wb + a * (1.0 - eps_t) / (eps_t * C_cw)
        if T_cw < T_min:  # bypass open: basin at the minimum, heat from the IHX at that basin temperature
            T_cw = T_min
            a = eps_i * C_i * (T_ret - T_min)
        T_ihx = T_ret - a / (m * cp)
        Q_ch = _chiller(params, m, T_ihx, T_wb)[0]
        return y_v, T_sec, m, T_ret, T_cw, T_ihx - Q_ch / (m * cp)

    T_set, T_min = t.T_fac_sup_set_K, t.T_leaving_min_K
    y_v, T_sec = _valves_at(params, q, T_set)
    m, w_cw, m_cw = flows(y_v)
    T_ret = T_set + Q / (m * cp)
    eps_i, C_i = _ihx_eps(params, m, m_cw)
    T_cw = T_ret - Q / (eps_i * C_i)
    T_cw_ret = T_cw + Q / (m_cw * cp)
    if Q == 0.0:  # no heat: the water settles at the wet-bulb; fans idle if that is below the setpoint
        y_req = 0.0 if T_wb <= T_set else np.inf
    elif T_cw_ret <= T_wb:
        y_req = np.inf
    else:
        eps_req = Q / (m_cw * cp * (T_cw_ret - T_wb))
        y_req = np.inf if eps_req >= 1.0 else w_cw * (-np.log1p(-eps_req) / t.NTU_nominal) ** (1.0 / t.n_merkel)
    if y_floor <= y_req <= 1.0:
        regime, y_fan, T_fs, I_fan = "setpoint", float(y_req), T_set, float(y_req)
        if Q == 0.0:
            T_cw = max(T_wb, T_min)
    else:
        regime, y_fan = ("fan_floor", y_floor) if y_req < y_floor else ("fan_full", 1.0)
        T_fs = _bisect(lambda T: T - loop(T, y_fan)[5], T_wb - 50.0, T_wb + 150.0)
        y_v, T_sec, m, T_ret, T_cw, _ = loop(T_fs, y_fan)
        e = (T_fs - T_set) / t.fan_dT_span_K
        I_fan = y_fan - t.fan_k_p * e + e
    # valve integrators: at the setpoint I = y; saturated I = y + e (tracking time = integral time)
    m_sec = np.minimum(1.0, np.maximum(params.y_sec_floor, q / c.Q_flow_nominal_W)) * c.m_flow_sec_nominal_kg_s
    e_v = (T_sec - q / (m_sec * cp) - c.T_sec_sup_set_K) / c.valve_dT_span_K
    sat = (y_v <= c.y_valve_min) | (y_v >= 1.0)
    I_valve = np.where(sat, y_v + e_v, y_v)
    x = state_vector(params, T_sec, I_valve, T_fs, T_ret, I_fan, T_cw)
    out = plant_equations(params, x, q, T_wb)
    out["x"] = x
    out["regime"] = regime
    return out
