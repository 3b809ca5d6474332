"""Pumps: system curve with a static head, staging of identical pumps, motor and drive efficiency, shaft heat.

Relations (each written once; the numpy function and the Modelica fragment come from the same numbers)
------------------------------------------------------------------------------------------------------
* Secondary (CDU) pump flow fraction, :func:`secondary_flow_fraction` / :func:`secondary_flow_expr`:
  ``y_sec = clip(Q / Q_nominal, y_floor, 1)`` (``y_floor = 1``: constant flow; else the dp-controlled pump follows
  the rack valves down to ``y_pump_sec_min``).
* Shaft-load fraction on a system curve ``dp(w) = dp_static r^2 + dp_friction w^2`` (affinity law with a static
  head, ASHRAE Handbook HVAC Systems and Equipment 2020 ch. 44; ``r`` the differential-pressure reset factor):
  ``x = w (s r^2 + (1 - s) w^2)``, ``s = dp_static / (dp_static + dp_friction)`` (:func:`shaft_load_fraction`);
  EnergyPlus ``Pump:VariableSpeed`` part-load curve with ``C1 = 0, C2 = s, C3 = 0, C4 = 1 - s``.
* Staging (:func:`pumps_running`): ``ceil(w N)`` of ``N`` identical pumps run at one speed (ASHRAE 90.1 sec. 6.5.4).
* Motor x drive efficiency (:func:`motor_drive_efficiency`): ``ETA_MOTOR_FULL rel(x N / n_on) ETA_VFD`` with
  ``rel`` the U.S. DOE (2014) "Determining Electric Motor Load and Efficiency" Fig. 1 part-load curve, as
  tabulated in the Modelica Buildings Library (``motorEfficiencyCurve``), interpolated for the motor size.
* Electrical power (:func:`pump_power_W`): ``P = P_shaft,nom x / eta_md``.
* Heat paths (:func:`pump_heat_split_W`): the shaft power ends in the water the pump moves (fluid friction; the
  hydraulic work is dissipated in the loop), the motor and drive losses ``P - P_shaft`` in the room air (Modelica
  Buildings ``Buildings.Fluid.Movers``: ``heat flow = shaft power dissipated into the medium``, motor heat to the
  environment unless ``motorCooledByFluid``).
"""

from __future__ import annotations

import numpy as np

from ..params import PumpParams
from ._mo import lit

__all__ = ["ETA_MOTOR_FULL", "ETA_VFD", "MOTOR_PLR", "MOTOR_REL_EFF", "MOTOR_SIZES_W", "X_MOTOR_MIN",
           "motor_drive_efficiency", "motor_rel_curve", "pump_heat_split_W", "pump_power_W", "pump_power_expr",
           "pump_rated_motor_W", "pump_shaft_heat_W", "pumps_running", "pumps_running_expr", "secondary_flow_expr",
           "secondary_flow_fraction", "shaft_heat_expr", "shaft_load_expr", "shaft_load_fraction", "shaft_nominal_W"]

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


def secondary_flow_fraction(Q_W: float | np.ndarray, Q_nominal_W: float, y_floor: float):
    """Flow fraction of a CDU secondary pump: ``clip(Q / Q_nominal, y_floor, 1)``.

    Parameters
    ----------
    Q_W : float | np.ndarray
        Heat into the CDU [W], any shape.
    Q_nominal_W : float
        Design heat per CDU [W] (> 0).
    y_floor : float
        Smallest flow fraction (1 = constant flow).

    Returns
    -------
    float or ndarray
        Flow fraction in ``[y_floor, 1]``, shape of ``Q_W``.
    """
    return np.minimum(1.0, np.maximum(y_floor, Q_W / Q_nominal_W))


def secondary_flow_expr(Q: str, Q_nominal: str, y_floor: str) -> str:
    """Modelica expression of :func:`secondary_flow_fraction` (names of the variables / parameters).

    Parameters
    ----------
    Q : str
        Name of the heat.
    Q_nominal : str
        Name of the design heat.
    y_floor : str
        Name of the floor.

    Returns
    -------
    str
        The expression.
    """
    return f"min(1.0, max({y_floor}, {Q} / {Q_nominal}))"


def shaft_load_fraction(w: float | np.ndarray, s: float, r: float | np.ndarray=1.0):
    """Shaft-load fraction ``x = w (s r^2 + (1 - s) w^2)`` of a pump on a system curve with a static head.

    Parameters
    ----------
    w : float | np.ndarray
        Flow fraction of the group, in (0, 1].
    s : float
        Static share of the nominal head, ``dp_static / (dp_static + dp_friction)``.
    r : float | np.ndarray
        Reset factor of the static head (differential-pressure set-point reset), in (0, 1]; 1 = no reset.

    Returns
    -------
    float or ndarray
        Shaft power as a fraction of the nominal shaft power.
    """
    return w * (s * r * r + (1.0 - s) * w * w)


def shaft_load_expr(w: str, s: str, r: str | None = None) -> str:
    """Modelica expression of :func:`shaft_load_fraction`.

    Parameters
    ----------
    w : str
        Name of the flow fraction.
    s : str
        Name of the static share.
    r : str | None
        Name of the reset factor; None = no reset (``r = 1``).

    Returns
    -------
    str
        The expression.
    """
    if r is None:
        return f"{w} * ({s} + (1.0 - {s}) * {w} * {w})"
    return f"{w} * ({s} * {r} * {r} + (1.0 - {s}) * {w} * {w})"


def shaft_nominal_W(pump: PumpParams, m_nominal_kg_s: float, rho_kg_m3: float) -> float:
    """Nominal shaft power of a pump group, ``V_nom (dp_static + dp_friction) / eta_pump`` [W].

    Parameters
    ----------
    pump : PumpParams
        Heads and hydraulic efficiency.
    m_nominal_kg_s : float
        Mass flow of the whole group at ``w = 1`` [kg/s].
    rho_kg_m3 : float
        Water density [kg/m3].

    Returns
    -------
    float
        Shaft power [W].
    """
    return m_nominal_kg_s / rho_kg_m3 * (pump.dp_static_Pa + pump.dp_friction_Pa) / pump.eta_pump


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
    sum of clipped ramps: the same arithmetic as :func:`_rel_eff_expr`.
    """
    xs = np.asarray(MOTOR_PLR)
    out = curve[0] + 0.0 * np.asarray(x, dtype=float)
    for k in range(len(xs) - 1):
        dx = xs[k + 1] - xs[k]
        out = out + (curve[k + 1] - curve[k]) / dx * np.minimum(np.maximum(x - xs[k], 0.0), dx)
    return out


def _rel_eff_expr(x: str, curve: np.ndarray) -> str:
    xs = MOTOR_PLR
    terms = [lit(curve[0])]
    for k in range(len(xs) - 1):
        dx = xs[k + 1] - xs[k]
        slope = (curve[k + 1] - curve[k]) / dx
        if slope != 0.0:
            terms.append(f"{lit(slope)} * min(max({x} - {lit(xs[k])}, 0.0), {lit(dx)})")
    return "(" + " + ".join(terms) + ")"


def pump_rated_motor_W(pump: PumpParams, m_nominal_kg_s: float, rho_kg_m3: float) -> float:
    """Rated input power of ONE pump motor [W]: the group's nominal shaft power shared by its ``n_pumps`` pumps,
    divided by :data:`ETA_MOTOR_FULL` (the motor sized to the pump's duty point).

    Parameters
    ----------
    pump : PumpParams
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
    return shaft_nominal_W(pump, m_nominal_kg_s, rho_kg_m3) / pump.n_pumps / ETA_MOTOR_FULL


def motor_drive_efficiency(x: float | np.ndarray, P_rated_W: float):
    """Motor x drive efficiency of one pump at motor load fraction ``x``.

    ``ETA_MOTOR_FULL * rel(max(x, X_MOTOR_MIN)) * ETA_VFD`` with ``rel`` the U.S. DOE (2014) part-load curve of a
    motor of this size (:data:`MOTOR_REL_EFF`, :func:`motor_rel_curve`).

    Parameters
    ----------
    x : float | np.ndarray
        Shaft power of the pump as a fraction of its motor's rating, > 0.
    P_rated_W : float
        Rated motor input power [W] (selects the size column of the table).

    Returns
    -------
    float or ndarray
        Dimensionless efficiency; ``0.93 x 0.97 = 0.9021`` at and above ``x = 1`` for every size.
    """
    return ETA_MOTOR_FULL * ETA_VFD * _rel_eff(np.maximum(x, X_MOTOR_MIN), motor_rel_curve(P_rated_W))


def pumps_running(pump: PumpParams, w: float | np.ndarray):
    """Number of identical pumps running at group flow fraction ``w``: ``ceil(w n_pumps)``, at least 1, written as
    ``1 + #{k in 1..n_pumps-1 : w n_pumps > k}`` (the form of :func:`pumps_running_expr`).

    Parameters
    ----------
    pump : PumpParams
        Pump group (``n_pumps``).
    w : float | np.ndarray
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


def pumps_running_expr(N: int, w: str) -> str:
    """Modelica expression of :func:`pumps_running` (``noEvent`` switches: rumoca 0.9.13 fires no events).

    Parameters
    ----------
    N : int
        Pumps in the group.
    w : str
        Name of the flow fraction.

    Returns
    -------
    str
        The expression.
    """
    return " + ".join(["1.0"] + [f"noEvent(if {w} * {N}.0 > {k}.0 then 1.0 else 0.0)" for k in range(1, N)])


def pump_power_W(pump: PumpParams, m_nominal_kg_s: float, rho_kg_m3: float, w: float | np.ndarray, r: float | np.ndarray=1.0):
    """Electrical power of a pump group at flow fraction ``w`` (module docstring).

    Parameters
    ----------
    pump : PumpParams
        Static and friction head, hydraulic efficiency, number of identical staged pumps.
    m_nominal_kg_s : float
        Mass flow of the group at ``w = 1`` [kg/s].
    rho_kg_m3 : float
        Water density [kg/m3].
    w : float | np.ndarray
        Flow fraction, in (0, 1].
    r : float | np.ndarray
        Reset factor of the static head (differential-pressure set-point reset), in (0, 1]; 1 = no reset.

    Returns
    -------
    float or ndarray
        ``P_shaft,nom x / eta_md(x N / n_on)`` with ``x`` = :func:`shaft_load_fraction`, ``N = n_pumps``, ``n_on``
        = :func:`pumps_running` [W].
    """
    x = shaft_load_fraction(w, pump.static_fraction, r)
    xp = x * pump.n_pumps / pumps_running(pump, w)
    eta = motor_drive_efficiency(xp, pump_rated_motor_W(pump, m_nominal_kg_s, rho_kg_m3))
    return shaft_nominal_W(pump, m_nominal_kg_s, rho_kg_m3) * x / eta


def pump_power_expr(pump: PumpParams, m_nominal_kg_s: float, rho_kg_m3: float, w: str, x: str, P_shaft: str) -> str:
    """Modelica expression of :func:`pump_power_W` for flow-fraction variable ``w`` and shaft-load variable ``x``.

    Parameters
    ----------
    pump : PumpParams
        Pump group (its size selects the motor curve, written in as literals).
    m_nominal_kg_s : float
        Mass flow of the group at ``w = 1`` [kg/s].
    rho_kg_m3 : float
        Water density [kg/m3].
    w : str
        Name of the flow fraction.
    x : str
        Name of the shaft-load fraction.
    P_shaft : str
        Name of the nominal shaft power parameter.

    Returns
    -------
    str
        The expression.
    """
    N = pump.n_pumps
    xp = f"max({lit(X_MOTOR_MIN)}, {x} * {N}.0 / ({pumps_running_expr(N, w)}))"
    curve = motor_rel_curve(pump_rated_motor_W(pump, m_nominal_kg_s, rho_kg_m3))
    return f"{P_shaft} * {x} / ({lit(ETA_MOTOR_FULL * ETA_VFD)} * {_rel_eff_expr(xp, curve)})"


def pump_heat_split_W(P_elec_W: float | np.ndarray, P_shaft_nominal_W: float, x: float | np.ndarray):
    """Split a pump's electrical power into the heat it puts into its water and the heat it gives the room air.

    The shaft power ``P_shaft,nom x`` is dissipated in the loop the pump drives (hydraulic work lost to friction,
    pump losses into the fluid); the motor and drive losses ``P - P_shaft`` go to the room (Modelica Buildings
    ``Buildings.Fluid.Movers``, ``motorCooledByFluid = false``).

    Parameters
    ----------
    P_elec_W : float | np.ndarray
        Electrical power [W] (:func:`pump_power_W`).
    P_shaft_nominal_W : float
        Nominal shaft power of the group [W] (:func:`shaft_nominal_W`).
    x : float | np.ndarray
        Shaft-load fraction (:func:`shaft_load_fraction`).

    Returns
    -------
    tuple of (float or ndarray, float or ndarray)
        ``(Q_to_water_W, Q_to_air_W)``; their sum is ``P_elec_W``.
    """
    Q_water = P_shaft_nominal_W * x
    return Q_water, P_elec_W - Q_water


def pump_shaft_heat_W(pump: PumpParams, m_nominal_kg_s: float, rho_kg_m3: float, w: float | np.ndarray,
                      r: float | np.ndarray = 1.0):
    """Heat a pump group puts into the water it moves: its shaft power ``P_shaft,nom x`` (:func:`pump_heat_split_W`).

    Parameters
    ----------
    pump : PumpParams
        Pump group.
    m_nominal_kg_s : float
        Mass flow of the group at ``w = 1`` [kg/s].
    rho_kg_m3 : float
        Water density [kg/m3].
    w : float | np.ndarray
        Flow fraction, in (0, 1].
    r : float | np.ndarray
        Reset factor of the static head; 1 = no reset.

    Returns
    -------
    float or ndarray
        Shaft power dissipated in the loop [W]; the rest of :func:`pump_power_W` (motor and drive losses) goes to
        the room air.
    """
    P_shaft_nominal = shaft_nominal_W(pump, m_nominal_kg_s, rho_kg_m3)
    return pump_heat_split_W(0.0, P_shaft_nominal, shaft_load_fraction(w, pump.static_fraction, r))[0]


def shaft_heat_expr(P_shaft: str, x: str) -> str:
    """Modelica expression of :func:`pump_shaft_heat_W` for a nominal shaft power and a shaft-load variable.

    Parameters
    ----------
    P_shaft : str
        Name of the nominal shaft power parameter.
    x : str
        Name of the shaft-load fraction.

    Returns
    -------
    str
        The expression.
    """
    return f"{P_shaft} * {x}"
