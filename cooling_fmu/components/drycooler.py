"""Dry cooler (closed-circuit air-cooled coil with variable-speed fans): the water-saving alternative to towers.

Relations
---------
* Crossflow coil, both streams unmixed, effectiveness-NTU (Incropera & DeWitt, Fundamentals of Heat and Mass
  Transfer, 6th ed., Table 11.3, eq. 11.33): ``eps = 1 - exp((1 / C_r) NTU^0.22 (exp(-C_r NTU^0.78) - 1))``,
  ``C_r = C_min / C_max``, ``NTU = UA / C_min``; the heat ``Q = eps C_min (T_w,in - T_db)``: the air side sees the
  DRY-bulb, no water is evaporated.
* Air flow and conductance: ``m_air = y m_air,nominal``; the air-side film dominates, ``UA = UA_nominal
  y^n_UA`` (ASSUMPTION: n_UA = 0.6, a finned-coil air-side coefficient ~ velocity^0.6; e.g. the Colburn j-factor
  correlations of Kays & London, Compact Heat Exchangers, for plate-fin surfaces at Re 500-5000).
* Fan power by the affinity law, ``P = P_nominal y^3``.

:class:`DryCoolerParams` gathers the numbers; :func:`dry_cooler` (numpy) and :func:`dry_cooler_equations`
(Modelica) are the same arithmetic.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._mo import Fragment, lit, reals

__all__ = ["CP_AIR_J_KGK", "DryCoolerParams", "FanCoilParams", "crossflow_unmixed_eps", "dry_cooler", "dry_cooler_equations",
           "fan_coil_equations", "fan_coil_rates"]

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
