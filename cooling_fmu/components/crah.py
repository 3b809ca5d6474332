"""CRAH (computer-room air handler): a chilled-water coil cooling the data hall's air, with a variable-speed fan.

Relations
---------
* Dry coil (sensible only: the coil surface stays above the room dew point at the supply temperatures used,
  ASSUMPTION to be checked with the dew-point hours), counterflow effectiveness-NTU from the capacity rates
  (:func:`~cooling_fmu.components.hx.counterflow_eps_rates`, the two streams' own specific heats): ``Q = eps C_min
  (T_air,in - T_chw,in)``.
* Capacity rates, air-side conductance ``UA = UA_nominal y^n_UA`` and fan power: the fan-coil relation of
  :func:`~cooling_fmu.components.drycooler.fan_coil_rates` (ASSUMPTION n_UA = 0.6).
* Fan power ``P = P_nominal y^3``; the fan's whole power ends in the room air it moves (the motor sits in the
  air stream), so the coil removes ``Q_IT,air + P_fan`` at steady state.
"""

from __future__ import annotations

import numpy as np

from .drycooler import FanCoilParams, fan_coil_equations, fan_coil_rates
from ._mo import Fragment, reals
from .hx import counterflow_eps_rates, counterflow_rate_equations

__all__ = ["CRAHParams", "crah", "crah_equations"]

#: A CRAH bank: a chilled-water fan coil (:class:`~cooling_fmu.components.drycooler.FanCoilParams`).
CRAHParams = FanCoilParams


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
        Chilled-water flow [kg/s].
    T_air_in_K : float | np.ndarray
        Return air [K].
    T_chw_in_K : float | np.ndarray
        Chilled water entering [K].

    Returns
    -------
    tuple
        ``(Q_W, T_air_out_K, T_chw_out_K, P_fan_W)``.
    """
    C_w, C_a, C_min, C_max, UA, P = fan_coil_rates(p, y_fan, m_chw_kg_s)
    eps = counterflow_eps_rates(UA, C_min, C_min / C_max)
    Q = eps * C_min * (T_air_in_K - T_chw_in_K)
    return Q, T_air_in_K - Q / C_a, T_chw_in_K + Q / C_w, P


def crah_equations(p: CRAHParams, y: str, m_chw: str, T_air_in: str, T_chw_in: str, tag: str = "crah"
                   ) -> Fragment:
    """Declarations and equations of :func:`crah` (outputs ``Q_<tag>``, ``T_air_out_<tag>``, ``T_chw_out_<tag>``,
    ``P_fan_<tag>``).

    Parameters
    ----------
    p : CRAHParams
        The bank (literals).
    y : str
        Name of the fan speed.
    m_chw : str
        Name of the chilled-water flow.
    T_air_in : str
        Name of the return air.
    T_chw_in : str
        Name of the chilled water entering.
    tag : str
        Suffix of ``Q_``, ``T_air_out_``, ``T_chw_out_``, ``eps_``, ``Z_`` and the coil's rates.

    Returns
    -------
    Fragment
        The counterflow coil between room air and chilled water on top of :func:`~.drycooler.fan_coil_equations`.
    """
    t = tag
    decl, eq = fan_coil_equations(p, y, m_chw, t)
    decl += reals(t, Z="1", eps="1", Q="W", T_air_out="K", T_chw_out="K")
    eq += ["  " + e for e in counterflow_rate_equations(f"eps_{t}", f"Z_{t}", f"UA_{t}", f"C_min_{t}",
                                                        f"(C_min_{t} / C_max_{t})")]
    eq += [f"  Q_{t} = eps_{t} * C_min_{t} * ({T_air_in} - {T_chw_in});",
           f"  T_air_out_{t} = {T_air_in} - Q_{t} / C_a_{t};",
           f"  T_chw_out_{t} = {T_chw_in} + Q_{t} / C_w_{t};"]
    return Fragment(decl, eq)
