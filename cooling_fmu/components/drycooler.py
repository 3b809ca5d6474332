"""Dry cooler (closed-circuit air-cooled coil with variable-speed fans): the water-saving alternative to towers.

Relations
---------
* Crossflow coil, both streams unmixed, effectiveness-NTU (Incropera & DeWitt, Fundamentals of Heat and Mass
  Transfer, 6th ed., Table 11.3, eq. 11.33; EnergyPlus' FluidCooler:SingleSpeed models the same coil the same
  way, "a cross flow heat exchanger (both streams unmixed)", Input-Output Reference):
  ``eps = 1 - exp((1 / C_r) NTU^0.22 (exp(-C_r NTU^0.78) - 1))``, ``C_r = C_min / C_max``, ``NTU = UA / C_min``;
  the heat ``Q = eps C_min (T_w,in - T_air)``: the air side sees the DRY-bulb (or, with adiabatic pads, the
  pre-cooled dry-bulb :func:`coil_air_k`); the coil itself evaporates no water.
* Air flow and conductance: ``m_air = y m_air,nominal``; the air-side film dominates, ``UA = UA_nominal
  y^n_UA`` (ASSUMPTION: n_UA = 0.6, a finned-coil air-side coefficient ~ velocity^0.6; e.g. the Colburn j-factor
  correlations of Kays & London, Compact Heat Exchangers, for plate-fin surfaces at Re 500-5000).
* Fan power by the affinity law, ``P = P_nominal y^3``.
* In the plant (``heat_rejection = "dry" | "hybrid"``, :mod:`cooling_fmu.modelica`) the bank is ``n`` staged units:
  air = fan speed x design air per running unit, ``y = n_on s / n`` (:func:`cooling_fmu.components.tower.
  fan_speed`), fan power ``n_on P_unit s^3`` (:func:`cooling_fmu.components.tower.fan_power_W`, from the design
  point :data:`SPECIFIC_FAN_POWER_W_PER_W`), and the heat of the bank is :func:`dry_cooler` at the bank's air
  ``y`` (ASSUMPTION, as for the towers: water through every coil, so the bank's heat depends on its total air).

:class:`DryCoolerParams` gathers the numbers; :func:`dry_cooler` (numpy) and :func:`dry_cooler_equations`
(Modelica) are the same arithmetic.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._mo import Fragment, lit, reals

__all__ = ["CP_AIR_J_KGK", "DryCoolerParams", "FanCoilParams", "H_FG_J_KG", "SPECIFIC_FAN_POWER_W_PER_W",
           "coil_air_k", "coil_air_expr", "crossflow_unmixed_eps", "dry_cooler", "dry_cooler_equations",
           "dry_fan_fraction", "fan_coil_equations", "fan_coil_rates", "pad_evaporation_expr",
           "pad_evaporation_kg_s", "size_ua_nominal"]

#: Specific heat of dry air near 300 K [J/(kg K)] (Incropera & DeWitt, Table A.4: 1,007 J/(kg K) at 300 K).
CP_AIR_J_KGK = 1007.0


@dataclass(frozen=True)
class FanCoilParams:
    """A finned air-water coil with a variable-speed fan (dry cooler or CRAH), SI.

    Attributes
    ----------
    UA_nominal_W_K : float
        Conductance at full fan speed [W/K] (ASSUMPTION per site: size it from the design dry-bulb or room load).
    m_air_nominal_kg_s : float
        Air flow at full fan speed [kg/s].
    P_fan_nominal_W : float
        Fan power at full speed [W].
    n_UA : float
        Exponent of the conductance in the air flow (ASSUMPTION 0.6, module docstring).
    cp_water_J_kgK : float
        Specific heat of the water [J/(kg K)].
    """

    UA_nominal_W_K: float
    m_air_nominal_kg_s: float
    P_fan_nominal_W: float
    n_UA: float = 0.6
    cp_water_J_kgK: float = 4186.0


#: A dry-cooler bank (the closed-circuit coil of this module).
DryCoolerParams = FanCoilParams


def fan_coil_rates(p: FanCoilParams, y_fan: float | np.ndarray, m_w_kg_s: float | np.ndarray) -> tuple:
    """Capacity rates, conductance and fan power of a fan coil at fan speed ``y``.

    ``C_w = m_w cp_w``, ``C_a = y m_air,nominal cp_air``, ``UA = UA_nominal y^n_UA``, ``P = P_nominal y^3``
    (module docstring).

    Parameters
    ----------
    p : FanCoilParams
        The coil.
    y_fan : float | np.ndarray
        Fan speed fraction (0 < y <= 1).
    m_w_kg_s : float | np.ndarray
        Water flow [kg/s].

    Returns
    -------
    tuple
        ``(C_w, C_a, C_min, C_max, UA, P_fan)`` [W/K, W/K, W/K, W/K, W/K, W].
    """
    C_w = m_w_kg_s * p.cp_water_J_kgK
    C_a = y_fan * p.m_air_nominal_kg_s * CP_AIR_J_KGK
    return C_w, C_a, np.minimum(C_w, C_a), np.maximum(C_w, C_a), p.UA_nominal_W_K * y_fan**p.n_UA, \
        p.P_fan_nominal_W * y_fan**3


def fan_coil_equations(p: FanCoilParams, y: str, m_w: str, t: str) -> Fragment:
    """Declarations and equations of :func:`fan_coil_rates` (``C_w_<t>``, ``C_a_<t>``, ``C_min_<t>``,
    ``C_max_<t>``, ``UA_<t>``, ``P_fan_<t>``).

    Parameters
    ----------
    p : FanCoilParams
        The coil (literals).
    y : str
        Name of the fan speed.
    m_w : str
        Name of the water flow.
    t : str
        Suffix of the six rates' names.

    Returns
    -------
    Fragment
        The coil's capacity rates, conductance and fan power.
    """
    decl = reals(t, C_w="W/K", C_a="W/K", C_min="W/K", C_max="W/K", UA="W/K", P_fan="W")
    eq = [f"  C_w_{t} = {m_w} * {lit(p.cp_water_J_kgK)};",
          f"  C_a_{t} = {y} * {lit(p.m_air_nominal_kg_s)} * {lit(CP_AIR_J_KGK)};",
          f"  C_min_{t} = min(C_w_{t}, C_a_{t});",
          f"  C_max_{t} = max(C_w_{t}, C_a_{t});",
          f"  UA_{t} = {lit(p.UA_nominal_W_K)} * {y} ^ {lit(p.n_UA)};",
          f"  P_fan_{t} = {lit(p.P_fan_nominal_W)} * {y} ^ 3;"]
    return Fragment(decl, eq)


def crossflow_unmixed_eps(NTU: float | np.ndarray, C_r: float | np.ndarray):
    """Crossflow effectiveness with both streams unmixed (Incropera & DeWitt Table 11.3).

    Parameters
    ----------
    NTU : float | np.ndarray
        Number of transfer units (> 0).
    C_r : float | np.ndarray
        Capacity-rate ratio (0 < C_r <= 1).

    Returns
    -------
    float or ndarray
        Effectiveness.
    """
    return 1.0 - np.exp((1.0 / C_r) * NTU**0.22 * (np.exp(-C_r * NTU**0.78) - 1.0))


def dry_cooler(p: DryCoolerParams, y_fan: float | np.ndarray, m_w_kg_s: float | np.ndarray,
               T_w_in_K: float | np.ndarray, T_db_K: float | np.ndarray) -> tuple:
    """Heat rejected and fan power of a dry cooler.

    Parameters
    ----------
    p : DryCoolerParams
        The bank.
    y_fan : float | np.ndarray
        Fan speed fraction (0 < y <= 1).
    m_w_kg_s : float | np.ndarray
        Water flow [kg/s].
    T_w_in_K : float | np.ndarray
        Water entering [K].
    T_db_K : float | np.ndarray
        Outdoor dry-bulb [K].

    Returns
    -------
    tuple
        ``(Q_W, T_w_out_K, P_fan_W)``.
    """
    C_w, C_a, C_min, C_max, UA, P = fan_coil_rates(p, y_fan, m_w_kg_s)
    eps = crossflow_unmixed_eps(UA / C_min, C_min / C_max)
    Q = eps * C_min * (T_w_in_K - T_db_K)
    return Q, T_w_in_K - Q / C_w, P


def dry_cooler_equations(p: DryCoolerParams, y: str, m_w: str, T_in: str, T_db: str, tag: str = "dc"
                         ) -> Fragment:
    """Declarations and equations of :func:`dry_cooler` (outputs ``Q_<tag>``, ``T_out_<tag>``, ``P_fan_<tag>``).

    Parameters
    ----------
    p : DryCoolerParams
        The bank (written in as literals).
    y : str
        Name of the fan speed.
    m_w : str
        Name of the water flow.
    T_in : str
        Name of the entering water.
    T_db : str
        Name of the dry-bulb.
    tag : str
        Suffix of ``Q_``, ``T_out_``, ``NTU_``, ``eps_`` and the coil's rates.

    Returns
    -------
    Fragment
        The crossflow coil against the dry-bulb on top of :func:`fan_coil_equations`.
    """
    t = tag
    decl, eq = fan_coil_equations(p, y, m_w, t)
    decl += reals(t, NTU="1", eps="1", Q="W", T_out="K")
    eq += [f"  NTU_{t} = UA_{t} / C_min_{t};",
           f"  eps_{t} = 1.0 - exp((1.0 / (C_min_{t} / C_max_{t})) * NTU_{t} ^ 0.22 * (exp(-(C_min_{t} / C_max_{t}) "
           f"* NTU_{t} ^ 0.78) - 1.0));",
           f"  Q_{t} = eps_{t} * C_min_{t} * ({T_in} - {T_db});",
           f"  T_out_{t} = {T_in} - Q_{t} / C_w_{t};"]
    return Fragment(decl, eq)


# ------------------------------------------------------------------------------------------------------------------
# the dry-cooler bank in the plant (heat_rejection = "dry" | "hybrid", issue 22 item 6)
# ------------------------------------------------------------------------------------------------------------------
#: Fan power per heat rejected at the design point [W/W]: 0.0105, EnergyPlus' autosizing of a fluid cooler's fan
#: ("We assume the nominal fan power is 0.0105 times the design load", src/EnergyPlus/FluidCoolers.cc, the
#: FluidCooler:SingleSpeed / TwoSpeed sizing). A modelling default, not a manufacturer rating (none could be opened
#: here): a site should replace it with its selection's fan power.
SPECIFIC_FAN_POWER_W_PER_W = 0.0105

#: Latent heat of vaporisation of water at 20 C [J/kg] (Incropera & DeWitt, 6th ed., Table A.6: 2,454 kJ/kg at
#: 293 K), for the water the adiabatic pads evaporate.
H_FG_J_KG = 2.454e6


def coil_air_k(T_db_K: float | np.ndarray, T_wb_K: float | np.ndarray, eps_pad: float, T_db_on_K: float):
    """Air entering the coil: the dry-bulb, or adiabatically pre-cooled by wetted pads above the switch-over.

    Direct evaporative cooling of the air ahead of the coil (the "adiabatic" or hybrid dry cooler): the pads bring
    the air towards its wet-bulb along a line of constant wet-bulb, ``T_coil = T_db - eps_pad (T_db - T_wb)``
    (saturation effectiveness, ASHRAE Handbook HVAC Systems and Equipment 2020 ch. 41 "Evaporative air-cooling
    equipment"; not opened here, so ``eps_pad`` is ASSUMPTION per plant). The pads are wetted only when the dry-bulb
    is above ``T_db_on_K`` (the switch-over: dry below it, as adiabatic coolers are run to save water).

    Parameters
    ----------
    T_db_K : float | np.ndarray
        Outdoor dry-bulb [K].
    T_wb_K : float | np.ndarray
        Outdoor wet-bulb [K] (<= dry-bulb).
    eps_pad : float
        Pad saturation effectiveness in [0, 1]; 0 = a dry cooler without pads.
    T_db_on_K : float
        Dry-bulb above which the pads are wetted [K].

    Returns
    -------
    float or ndarray
        Air temperature entering the coil [K], between the wet-bulb and the dry-bulb.
    """
    wet = np.asarray(T_db_K) > T_db_on_K
    T = np.where(wet, T_db_K - eps_pad * (np.asarray(T_db_K) - T_wb_K), T_db_K)
    return float(T) if np.ndim(T) == 0 else T


def coil_air_expr(T_db: str, T_wb: str, eps_pad: float, T_db_on_K: float) -> str:
    """Modelica expression of :func:`coil_air_k`.

    Parameters
    ----------
    T_db : str
        Name of the dry-bulb.
    T_wb : str
        Name of the wet-bulb.
    eps_pad : float
        Pad effectiveness (a literal).
    T_db_on_K : float
        Switch-over dry-bulb [K] (a literal).

    Returns
    -------
    str
        ``noEvent(if T_db > on then T_db - eps (T_db - T_wb) else T_db)``.
    """
    return (f"noEvent(if {T_db} > {lit(T_db_on_K)} then {T_db} - {lit(eps_pad)} * ({T_db} - {T_wb}) "
            f"else {T_db})")


def pad_evaporation_kg_s(m_air_kg_s: float | np.ndarray, T_db_K: float | np.ndarray,
                         T_coil_K: float | np.ndarray):
    """Water the pads evaporate: the sensible heat the air gives up becomes latent heat,
    ``m_evap = m_air cp_air (T_db - T_coil) / h_fg`` (adiabatic saturation, ASHRAE Handbook Fundamentals 2017
    ch. 1; the humid-air specific heat is taken as dry air's, :data:`CP_AIR_J_KGK`, ASSUMPTION: < 2 % on the
    evaporation at humidity ratios below 0.02).

    Parameters
    ----------
    m_air_kg_s : float | np.ndarray
        Air through the pads and coil [kg/s].
    T_db_K : float | np.ndarray
        Outdoor dry-bulb [K].
    T_coil_K : float | np.ndarray
        Air leaving the pads [K] (:func:`coil_air_k`; equal to the dry-bulb when the pads are dry).

    Returns
    -------
    float or ndarray
        Evaporation [kg/s] (>= 0; 0 when the pads are dry).
    """
    return m_air_kg_s * CP_AIR_J_KGK * (T_db_K - T_coil_K) / H_FG_J_KG


def pad_evaporation_expr(m_air: str, T_db: str, T_coil: str) -> str:
    """Modelica expression of :func:`pad_evaporation_kg_s`.

    Parameters
    ----------
    m_air : str
        Name of the air flow.
    T_db : str
        Name of the dry-bulb.
    T_coil : str
        Name of the air entering the coil.

    Returns
    -------
    str
        ``m_air cp_air (T_db - T_coil) / h_fg``.
    """
    return f"{m_air} * {lit(CP_AIR_J_KGK)} * ({T_db} - {T_coil}) / {lit(H_FG_J_KG)}"


def dry_fan_fraction(p: DryCoolerParams, m_w_kg_s: float | np.ndarray, T_w_in_K: float | np.ndarray,
                     T_air_K: float | np.ndarray, Q_W: float | np.ndarray, y_lo: float,
                     ytol: float = 0.0) -> np.ndarray:
    """Inverse of :func:`dry_cooler` in the air: the bank air-flow fraction in ``[y_lo, 1]`` at which it rejects
    ``Q`` (vectorised bisection; the heat rises with the air at fixed water and temperatures).

    Parameters
    ----------
    p : DryCoolerParams
        The bank (air and conductance of the whole bank at full fans).
    m_w_kg_s : float | np.ndarray
        Water flow [kg/s] (all arguments broadcast together).
    T_w_in_K : float | np.ndarray
        Water entering [K].
    T_air_K : float | np.ndarray
        Air entering the coil [K].
    Q_W : float | np.ndarray
        Heat to reject [W].
    y_lo : float
        Smallest air-flow fraction (one unit at its minimum speed).
    ytol : float
        Bracket width at which the bisection stops; 0: to adjacent doubles.

    Returns
    -------
    ndarray
        The air-flow fraction; 0 where ``y_lo`` already rejects ``Q``, ``inf`` where full air does not.
    """
    shape = np.broadcast(m_w_kg_s, T_w_in_K, T_air_K, Q_W).shape
    m, T_in, T_a, Q = (np.broadcast_to(np.asarray(v, dtype=float), shape) for v in (m_w_kg_s, T_w_in_K, T_air_K, Q_W))

    def q_at(y):
        return dry_cooler(p, y, m, T_in, T_a)[0]

    lo, hi = np.full(shape, float(y_lo)), np.ones(shape)
    q_lo, q_hi = q_at(lo), q_at(hi)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if np.all((mid == lo) | (mid == hi) | (hi - lo <= ytol)):
            break
        below = q_at(mid) < Q
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    y = 0.5 * (lo + hi)
    return np.where(q_lo >= Q, 0.0, np.where(q_hi < Q, np.inf, y))


def size_ua_nominal(Q_design_W: float, m_w_kg_s: float, m_air_kg_s: float, T_w_in_K: float, T_air_K: float,
                    n_UA: float = 0.6, cp_water_J_kgK: float = 4186.0) -> float:
    """Bank conductance at full fans that rejects ``Q_design_W`` at the design point (inverse of the crossflow
    effectiveness in NTU, by bisection).

    Parameters
    ----------
    Q_design_W : float
        Heat to reject at design [W] (> 0).
    m_w_kg_s : float
        Design water flow [kg/s].
    m_air_kg_s : float
        Bank air flow at full fans [kg/s].
    T_w_in_K : float
        Design water entering [K].
    T_air_K : float
        Design air entering [K] (the design dry-bulb; below ``T_w_in_K``).
    n_UA : float
        Conductance exponent in the air flow (unused at full fans; kept so the caller's bank is complete).
    cp_water_J_kgK : float
        Specific heat of the water [J/(kg K)].

    Returns
    -------
    float
        ``UA_nominal`` [W/K].

    Raises
    ------
    ValueError
        If the design heat needs an effectiveness the crossflow coil cannot reach at any NTU (more air, more water
        or a warmer entering water is needed); the message gives the required and the largest effectiveness.
    """
    p = DryCoolerParams(UA_nominal_W_K=1.0, m_air_nominal_kg_s=m_air_kg_s, P_fan_nominal_W=0.0, n_UA=n_UA,
                        cp_water_J_kgK=cp_water_J_kgK)
    C_w, C_a, C_min, C_max, _, _ = fan_coil_rates(p, 1.0, m_w_kg_s)
    need = Q_design_W / (C_min * (T_w_in_K - T_air_K)) if T_w_in_K > T_air_K else np.inf
    top = float(crossflow_unmixed_eps(200.0, C_min / C_max))
    if not need < 0.999 * top:
        raise ValueError(f"dry cooler: the design heat needs effectiveness {need:.3f}, the coil reaches at most "
                         f"{top:.3f} (C_r {C_min / C_max:.2f}): give it more air or water flow, or a warmer water")
    lo, hi = 0.0, 200.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if crossflow_unmixed_eps(mid, C_min / C_max) < need else (lo, mid)
    return 0.5 * (lo + hi) * C_min
