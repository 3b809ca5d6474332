"""Pipes and loops: well-mixed water volumes, stream temperature change, tower-water flow rule, stored energy.

Relations
---------
* A stream giving up heat ``Q`` leaves at ``T_out = T_in - Q / (m cp)`` (:func:`leaving_temperature`).
* A well-mixed volume of mass ``M``: ``M cp dT/dt = Q_in - m cp (T - T_in)`` (lumped loop: each loop's pipes,
  headers and exchanger hold-up as one volume; the transport delay is not resolved).
* Tower-water pumps follow the facility flow down to a floor (ASHRAE 90.1-2013 sec. 6.5.5.4: towers take 50 % of
  their design flow per cell): ``w_cw = max(w_min, w_fac)`` (:func:`tower_water_fraction`).
* Stored energy relative to ``T_ref``: ``E = cp sum_k M_k (T_k - T_ref)`` (:func:`stored_energy_J`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["leaving_temperature", "stored_energy_J", "tower_water_fraction", "tower_water_fraction_expr"]


def leaving_temperature(T_in_K: float | np.ndarray, Q_W: float | np.ndarray, m_kg_s: float | np.ndarray, cp_J_kgK: float):
    """Temperature of a stream after giving up heat ``Q``: ``T_in - Q / (m cp)``.

    Parameters
    ----------
    T_in_K : float | np.ndarray
        Entering temperature [K].
    Q_W : float | np.ndarray
        Heat given up [W] (negative = taken up).
    m_kg_s : float | np.ndarray
        Mass flow [kg/s] (> 0).
    cp_J_kgK : float
        Specific heat [J/(kg K)].

    Returns
    -------
    float or ndarray
        Leaving temperature [K].
    """
    return T_in_K - Q_W / (m_kg_s * cp_J_kgK)


def tower_water_fraction(w_fac: float | np.ndarray, w_min: float):
    """Tower-water flow fraction following the facility flow: ``max(w_min, w_fac)``.

    Parameters
    ----------
    w_fac : float | np.ndarray
        Facility flow fraction of design.
    w_min : float
        Floor of the tower-water flow fraction (1 = constant flow).

    Returns
    -------
    float or ndarray
        Tower-water flow fraction.
    """
    w = np.maximum(w_min, w_fac)
    return float(w) if np.ndim(w) == 0 else w


def tower_water_fraction_expr(w_fac: str, w_min: str) -> str:
    """Modelica expression of :func:`tower_water_fraction`.

    Parameters
    ----------
    w_fac : str
        Name of the facility flow fraction.
    w_min : str
        Name of the floor.

    Returns
    -------
    str
        The expression.
    """
    return f"max({w_min}, {w_fac})"


def stored_energy_J(cp_J_kgK: float, T_ref_K: float, masses_kg: tuple, temperatures_K: tuple) -> float:
    """Thermal energy stored in water volumes relative to ``T_ref``: ``cp sum M_k (T_k - T_ref)``.

    Parameters
    ----------
    cp_J_kgK : float
        Specific heat [J/(kg K)].
    T_ref_K : float
        Reference temperature [K].
    masses_kg : tuple
        Masses of the volumes [kg].
    temperatures_K : tuple
        Their temperatures [K] (a mass may go with an array of temperatures of equal volumes).

    Returns
    -------
    float
        Stored energy [J].
    """
    return cp_J_kgK * sum(M * float(np.sum(np.asarray(T) - T_ref_K)) for M, T in zip(masses_kg, temperatures_K))
