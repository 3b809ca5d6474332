"""Heat exchangers: counterflow plate heat exchanger, effectiveness-NTU (CDU plate HX and the IHX).

Relation: ``C_min = cp min(m_1, m_2)``, ``C_r = C_min / C_max``, ``NTU = UA / C_min``,
``eps = (1 - exp(-NTU (1 - C_r))) / (1 - C_r exp(-NTU (1 - C_r)))`` (``NTU / (1 + NTU)`` when ``C_r -> 1``),
``Q = eps C_min (T_hot,in - T_cold,in)``: Incropera & DeWitt, Fundamentals of Heat and Mass Transfer, 6th ed.,
Table 11.3 (counterflow). :func:`counterflow_eps` (numpy) and :func:`counterflow_equations` (Modelica) are the
same arithmetic.
"""

from __future__ import annotations

import numpy as np

__all__ = ["CR_BALANCED", "counterflow_eps", "counterflow_eps_rates", "counterflow_equations", "counterflow_rate_equations"]

#: ``C_r`` above which the counterflow effectiveness uses its ``C_r = 1`` limit (avoids 0/0).
CR_BALANCED = 0.9999


def counterflow_eps(UA_W_K: float, cp_J_kgK: float, m1_kg_s: float | np.ndarray, m2_kg_s: float | np.ndarray):
    """Counterflow effectiveness and the smaller heat-capacity rate.

    Parameters
    ----------
    UA_W_K : float
        Conductance [W/K] (> 0).
    cp_J_kgK : float
        Specific heat of both streams [J/(kg K)].
    m1_kg_s : float | np.ndarray
        Mass flow of the first stream [kg/s] (> 0).
    m2_kg_s : float | np.ndarray
        Mass flow of the second stream [kg/s] (> 0), broadcastable with ``m1_kg_s``.

    Returns
    -------
    tuple of (ndarray, ndarray)
        ``(eps, C_min)``: effectiveness in (0, 1) and ``C_min`` [W/K].
    """
    mmin, mmax = np.minimum(m1_kg_s, m2_kg_s), np.maximum(m1_kg_s, m2_kg_s)
    C_min = cp_J_kgK * mmin
    return counterflow_eps_rates(UA_W_K, C_min, mmin / mmax), C_min


def counterflow_eps_rates(UA_W_K: float | np.ndarray, C_min_W_K: float | np.ndarray,
                          C_r: float | np.ndarray) -> np.ndarray:
    """Counterflow effectiveness from the capacity rates (streams of different specific heats, e.g. a coil).

    Parameters
    ----------
    UA_W_K : float | np.ndarray
        Conductance [W/K] (> 0).
    C_min_W_K : float | np.ndarray
        Smaller heat-capacity rate [W/K] (> 0).
    C_r : float | np.ndarray
        ``C_min / C_max`` in (0, 1].

    Returns
    -------
    ndarray
        Effectiveness (module docstring; the ``C_r -> 1`` limit above :data:`CR_BALANCED`).
    """
    ntu = UA_W_K / C_min_W_K
    Z = np.exp(-ntu * (1.0 - C_r))
    with np.errstate(invalid="ignore", divide="ignore"):  # np.where evaluates both branches; the balanced one is used
        return np.where(C_r < CR_BALANCED, (1.0 - Z) / (1.0 - C_r * Z), ntu / (1.0 + ntu))


def counterflow_equations(eps: str, C_min: str, C_r: str, Z: str, UA: str, cp: str, m1: str, m2: str) -> list[str]:
    """Modelica equations of :func:`counterflow_eps` (variables ``eps``, ``C_min``, ``C_r``, ``Z`` declared by the
    caller; every name may carry an index such as ``eps_hx[i]``).

    Parameters
    ----------
    eps : str
        Name of the effectiveness.
    C_min : str
        Name of the smaller capacity rate.
    C_r : str
        Name of the ratio.
    Z : str
        Name of the ``exp(-NTU (1 - C_r))``.
    UA : str
        Name of the conductance.
    cp : str
        Name of the specific heat.
    m1 : str
        Name of the first stream's mass flow.
    m2 : str
        Name of the second stream's mass flow.

    Returns
    -------
    list of str
        Four equations (no indentation, each ending in ``;``).
    """
    return [f"{C_min} = {cp} * min({m1}, {m2});",
            f"{C_r} = min({m1}, {m2}) / max({m1}, {m2});"] + counterflow_rate_equations(eps, Z, UA, C_min, C_r)


def counterflow_rate_equations(eps: str, Z: str, UA: str, C_min: str, C_r: str) -> list[str]:
    """Modelica equations of :func:`counterflow_eps_rates` (``eps`` and ``Z`` declared by the caller).

    Parameters
    ----------
    eps : str
        Name of the effectiveness.
    Z : str
        Name of ``exp(-NTU (1 - C_r))``.
    UA : str
        Name (or expression) of the conductance.
    C_min : str
        Name of the smaller capacity rate.
    C_r : str
        Name (or expression) of the capacity-rate ratio.

    Returns
    -------
    list of str
        Two equations (no indentation).
    """
    return [f"{Z} = exp(-({UA} / {C_min}) * (1.0 - {C_r}));",
            f"{eps} = noEvent(if {C_r} < {CR_BALANCED} then (1.0 - {Z}) / (1.0 - {C_r} * {Z}) else ({UA} / {C_min}) "
            f"/ (1.0 + {UA} / {C_min}));"]
