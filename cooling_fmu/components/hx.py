"""Heat exchangers: counterflow plate heat exchanger, effectiveness-NTU (CDU plate HX and the IHX).

Relation: ``C_min = cp min(m_1, m_2)``, ``C_r = C_min / C_max``, ``NTU = UA / C_min``,
``eps = (1 - exp(-NTU (1 - C_r))) / (1 - C_r exp(-NTU (1 - C_r)))`` (``NTU / (1 + NTU)`` when ``C_r -> 1``),
``Q = eps C_min (T_hot,in - T_cold,in)``: Incropera & DeWitt, Fundamentals of Heat and Mass Transfer, 6th ed.,
Table 11.3 (counterflow). :func:`counterflow_eps` (numpy) and :func:`counterflow_equations` (Modelica) are the
same arithmetic.
"""

from __future__ import annotations

import numpy as np

__all__ = ["CR_BALANCED", "counterflow_eps", "counterflow_equations"]

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
        Mass flows of the two streams [kg/s] (> 0), broadcastable.
    m2_kg_s : float | np.ndarray
        Mass flows of the two streams [kg/s] (> 0), broadcastable.

    Returns
    -------
    tuple of (ndarray, ndarray)
        ``(eps, C_min)``: effectiveness in (0, 1) and ``C_min`` [W/K].
    """
    mmin, mmax = np.minimum(m1_kg_s, m2_kg_s), np.maximum(m1_kg_s, m2_kg_s)
    C_min = cp_J_kgK * mmin
    C_r = mmin / mmax
    ntu = UA_W_K / C_min
    Z = np.exp(-ntu * (1.0 - C_r))
    with np.errstate(invalid="ignore", divide="ignore"):  # np.where evaluates both branches; the balanced one is used
        eps = np.where(C_r < CR_BALANCED, (1.0 - Z) / (1.0 - C_r * Z), ntu / (1.0 + ntu))
    return eps, C_min


def counterflow_equations(eps: str, C_min: str, C_r: str, Z: str, UA: str, cp: str, m1: str, m2: str) -> list[str]:
    """Modelica equations of :func:`counterflow_eps` (variables ``eps``, ``C_min``, ``C_r``, ``Z`` declared by the
    caller; every name may carry an index such as ``eps_hx[i]``).

    Parameters
    ----------
    eps : str
        Names of the effectiveness, smaller capacity rate, ratio and ``exp(-NTU (1 - C_r))``.
    C_min : str
        Names of the effectiveness, smaller capacity rate, ratio and ``exp(-NTU (1 - C_r))``.
    C_r : str
        Names of the effectiveness, smaller capacity rate, ratio and ``exp(-NTU (1 - C_r))``.
    Z : str
        Names of the effectiveness, smaller capacity rate, ratio and ``exp(-NTU (1 - C_r))``.
    UA : str
        Names of the conductance, specific heat and the two mass flows.
    cp : str
        Names of the conductance, specific heat and the two mass flows.
    m1 : str
        Names of the conductance, specific heat and the two mass flows.
    m2 : str
        Names of the conductance, specific heat and the two mass flows.

    Returns
    -------
    list of str
        Four equations (no indentation, each ending in ``;``).
    """
    return [f"{C_min} = {cp} * min({m1}, {m2});",
            f"{C_r} = min({m1}, {m2}) / max({m1}, {m2});",
            f"{Z} = exp(-({UA} / {C_min}) * (1.0 - {C_r}));",
            f"{eps} = noEvent(if {C_r} < {CR_BALANCED} then (1.0 - {Z}) / (1.0 - {C_r} * {Z}) else ({UA} / {C_min}) "
            f"/ (1.0 + {UA} / {C_min}));"]
