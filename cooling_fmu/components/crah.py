"""CRAH (computer-room air handler): a chilled-water coil cooling the data hall's air, with a variable-speed fan.

Relations
---------
* Dry coil (sensible only: the coil surface stays above the room dew point at the supply temperatures used,
  ASSUMPTION to be checked with the dew-point hours), counterflow effectiveness-NTU (:mod:`.hx`,
  :func:`~cooling_fmu.components.hx.counterflow_eps` with the two streams' own specific heats): ``Q = eps C_min
  (T_air,in - T_chw,in)``.
* Air-side conductance falls with the air flow, ``UA = UA_nominal y^n_UA`` (ASSUMPTION n_UA = 0.6, as
  :mod:`.drycooler`).
* Fan power ``P = P_nominal y^3``; the fan's whole power ends in the room air it moves (the motor sits in the
  air stream), so the coil removes ``Q_IT,air + P_fan`` at steady state.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._mo import lit
from .drycooler import CP_AIR_J_KGK

__all__ = ["CRAHParams", "crah", "crah_equations", "counterflow_eps_two_fluids"]


@dataclass(frozen=True)
class CRAHParams:
    """A CRAH bank (SI).

    Attributes
    ----------
    UA_nominal_W_K : float
        Coil conductance at full fan speed [W/K].
    m_air_nominal_kg_s : float
        Air flow at full fan speed [kg/s].
    P_fan_nominal_W : float
        Fan power at full speed [W].
    n_UA : float
        Exponent of the conductance in the air flow (ASSUMPTION 0.6).
    cp_water_J_kgK : float
        Specific heat of the chilled water [J/(kg K)].
    """

    UA_nominal_W_K: float
    m_air_nominal_kg_s: float
    P_fan_nominal_W: float
    n_UA: float = 0.6
    cp_water_J_kgK: float = 4186.0


def counterflow_eps_two_fluids(NTU: float | np.ndarray, C_r: float | np.ndarray):
    """Counterflow effectiveness (Incropera & DeWitt Table 11.3), ``C_r < 1`` (the balanced limit is not needed
    for an air-water coil).

    Parameters
    ----------
    NTU : float | np.ndarray
        Number of transfer units and capacity-rate ratio (0 <= C_r < 1).
    C_r : float | np.ndarray
        Number of transfer units and capacity-rate ratio (0 <= C_r < 1).

    Returns
    -------
    float or ndarray
        Effectiveness.
    """
    Z = np.exp(-NTU * (1.0 - C_r))
    return (1.0 - Z) / (1.0 - C_r * Z)


def crah(p: CRAHParams, y_fan: float | np.ndarray, m_chw_kg_s: float | np.ndarray, T_air_in_K: float | np.ndarray,
         T_chw_in_K: float | np.ndarray) -> tuple:
    """Heat removed from the room air, leaving temperatures and fan power of a CRAH.

    Parameters
    ----------
    p : CRAHParams
        The bank.
    y_fan : float | np.ndarray
        Fan speed fraction (0 < y <= 1).
    m_chw_kg_s : float | np.ndarray
        Chilled-water flow [kg/s], return air [K], chilled water entering [K].
    T_air_in_K : float | np.ndarray
        Chilled-water flow [kg/s], return air [K], chilled water entering [K].
    T_chw_in_K : float | np.ndarray
        Chilled-water flow [kg/s], return air [K], chilled water entering [K].

    Returns
    -------
    tuple
        ``(Q_W, T_air_out_K, T_chw_out_K, P_fan_W)``.
    """
    C_w = m_chw_kg_s * p.cp_water_J_kgK
    C_a = y_fan * p.m_air_nominal_kg_s * CP_AIR_J_KGK
    C_min, C_max = np.minimum(C_w, C_a), np.maximum(C_w, C_a)
    eps = counterflow_eps_two_fluids(p.UA_nominal_W_K * y_fan**p.n_UA / C_min, C_min / C_max)
    Q = eps * C_min * (T_air_in_K - T_chw_in_K)
    return Q, T_air_in_K - Q / C_a, T_chw_in_K + Q / C_w, p.P_fan_nominal_W * y_fan**3


def crah_equations(p: CRAHParams, y: str, m_chw: str, T_air_in: str, T_chw_in: str, tag: str = "crah"
                   ) -> tuple[list[str], list[str]]:
    """Declarations and equations of :func:`crah` (outputs ``Q_<tag>``, ``T_air_out_<tag>``, ``T_chw_out_<tag>``,
    ``P_fan_<tag>``).

    Parameters
    ----------
    p : CRAHParams
        The bank (literals).
    y : str
        Names of the fan speed, chilled-water flow, return air and chilled water entering.
    m_chw : str
        Names of the fan speed, chilled-water flow, return air and chilled water entering.
    T_air_in : str
        Names of the fan speed, chilled-water flow, return air and chilled water entering.
    T_chw_in : str
        Names of the fan speed, chilled-water flow, return air and chilled water entering.
    tag : str
        Suffix of the declared variables.

    Returns
    -------
    tuple of (list of str, list of str)
        Declarations and equations (indented two spaces).
    """
    t = tag
    decl = [f'  Real C_w_{t}(unit="W/K");', f'  Real C_a_{t}(unit="W/K");', f'  Real C_min_{t}(unit="W/K");',
            f'  Real C_max_{t}(unit="W/K");', f'  Real Z_{t}(unit="1");', f'  Real eps_{t}(unit="1");',
            f'  Real Q_{t}(unit="W");', f'  Real T_air_out_{t}(unit="K");', f'  Real T_chw_out_{t}(unit="K");',
            f'  Real P_fan_{t}(unit="W");']
    eq = [f"  C_w_{t} = {m_chw} * {lit(p.cp_water_J_kgK)};",
          f"  C_a_{t} = {y} * {lit(p.m_air_nominal_kg_s)} * {lit(CP_AIR_J_KGK)};",
          f"  C_min_{t} = min(C_w_{t}, C_a_{t});",
          f"  C_max_{t} = max(C_w_{t}, C_a_{t});",
          f"  Z_{t} = exp(-({lit(p.UA_nominal_W_K)} * {y} ^ {lit(p.n_UA)} / C_min_{t}) * (1.0 - C_min_{t} / C_max_{t}));",
          f"  eps_{t} = (1.0 - Z_{t}) / (1.0 - C_min_{t} / C_max_{t} * Z_{t});",
          f"  Q_{t} = eps_{t} * C_min_{t} * ({T_air_in} - {T_chw_in});",
          f"  T_air_out_{t} = {T_air_in} - Q_{t} / C_a_{t};",
          f"  T_chw_out_{t} = {T_chw_in} + Q_{t} / C_w_{t};",
          f"  P_fan_{t} = {lit(p.P_fan_nominal_W)} * {y} ^ 3;"]
    return decl, eq
