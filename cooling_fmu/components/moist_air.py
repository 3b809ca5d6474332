"""Saturated moist air (psychrolib SI formulae; ASHRAE Handbook Fundamentals 2017 ch. 1 eqs. 5/6, 20, 30).

:func:`sat_air` (numpy) and :func:`sat_air_equations` (Modelica) are the same arithmetic: saturation pressure
over liquid water above the triple point and over ice at or below it (Hyland-Wexler), humidity ratio
``W_s = 0.621945 p_ws / (p - p_ws)``, enthalpy ``h = 1006 t + W (2,501,000 + 1860 t)`` (J/kg dry air, ``t`` in C)
and its temperature derivative (for the Newton steps of the exit-air temperature).

Outdoor (entering) air from dry-bulb and wet-bulb, :func:`inlet_air` / :func:`inlet_air_equations`: the humidity
ratio of ASHRAE Fundamentals 2017 ch. 1 eqs. 33 / 35 (psychrolib ``GetHumRatioFromTWetBulb``: over water at or above
0 C, over ice below) and the moist-air enthalpy eq. 30 (``GetMoistAirEnthalpy``). With ``T_db = T_wb`` it is the
saturated air of :func:`sat_air`.
"""

from __future__ import annotations

import numpy as np

from ._mo import Fragment, lit, real

__all__ = ["inlet_air", "inlet_air_equations", "sat_air", "sat_air_enthalpy", "sat_air_equations"]

# psychrolib SI saturation-pressure coefficients (ASHRAE Handbook Fundamentals 2017 ch. 1 eqs. 5 and 6)
_PW_LIQ = (-5.8002206e03, 1.3914993, -4.8640239e-02, 4.1764768e-05, -1.4452093e-08, 0.0, 6.5459673)
_PW_ICE = (-5.6745359e03, 6.3925247, -9.677843e-03, 6.2215701e-07, 2.0747825e-09, -9.484024e-13, 4.1635019)
_T_TRIPLE = 273.16
_T0C = 273.15


def _lnpws(T, c):
    return c[0] / T + c[1] + c[2] * T + c[3] * T**2 + c[4] * T**3 + c[5] * T**4 + c[6] * np.log(T)


def _dlnpws(T, c):
    return -c[0] / T**2 + c[2] + 2 * c[3] * T + 3 * c[4] * T**2 + 4 * c[5] * T**3 + c[6] / T


def sat_air(T_K: float | np.ndarray, p_Pa: float):
    """Saturated moist air at temperature ``T_K`` and pressure ``p_Pa`` (psychrolib SI formulae).

    Parameters
    ----------
    T_K : float | np.ndarray
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
    if not ice.any():  # one branch where every temperature needs the same one (np.where picks the same values)
        pws = np.exp(_lnpws(T, _PW_LIQ))
        dpws = pws * _dlnpws(T, _PW_LIQ)
    elif ice.all():
        pws = np.exp(_lnpws(T, _PW_ICE))
        dpws = pws * _dlnpws(T, _PW_ICE)
    else:
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


def sat_air_enthalpy(T_K: np.ndarray, p_Pa: float) -> np.ndarray:
    """Enthalpy of saturated air [J/kg dry air] only: :func:`sat_air`'s ``h_s``, bit for bit, with fewer operations.

    The same arithmetic as :func:`sat_air` (ASHRAE Handbook Fundamentals 2017 ch. 1 eqs. 5/6, 20, 30), without the
    derivative and evaluating only the saturation-pressure branch a temperature needs (over ice at or below 273.16
    K, over liquid water above): the hot loop of the Braun tower's fan solve
    (:func:`cooling_fmu.components.tower.braun_fan_fraction`) calls it tens of times per plant step.

    Parameters
    ----------
    T_K : np.ndarray
        Temperature [K], any shape.
    p_Pa : float
        Atmospheric pressure [Pa].

    Returns
    -------
    ndarray
        ``h_s`` [J/kg dry air], the shape of ``T_K`` (a float for a scalar).
    """
    T = np.asarray(T_K, dtype=float)
    ice = T <= _T_TRIPLE
    if not ice.any():
        pws = np.exp(_lnpws(T, _PW_LIQ))
    elif ice.all():
        pws = np.exp(_lnpws(T, _PW_ICE))
    else:
        pws = np.exp(np.where(ice, _lnpws(T, _PW_ICE), _lnpws(T, _PW_LIQ)))
    W = 0.621945 * pws / (p_Pa - pws)
    t = T - _T0C
    h = 1006.0 * t + W * (2501000.0 + 1860.0 * t)
    return float(h) if np.ndim(T_K) == 0 else h


def _poly_expr(T: str, c) -> str:
    return (f"{lit(c[0])} / {T} + {lit(c[1])} + {lit(c[2])} * {T} + {lit(c[3])} * {T}^2 + {lit(c[4])} * {T}^3 + "
            f"{lit(c[5])} * {T}^4 + {lit(c[6])} * log({T})")


def _dpoly_expr(T: str, c) -> str:
    return (f"{lit(-c[0])} / {T}^2 + {lit(c[2])} + 2.0 * {lit(c[3])} * {T} + 3.0 * {lit(c[4])} * {T}^2 + 4.0 * "
            f"{lit(c[5])} * {T}^3 + {lit(c[6])} / {T}")


def sat_air_equations(T: str, tag: str, p_atm: str = "p_atm") -> Fragment:
    """Declarations and equations of saturated air at temperature variable ``T`` (the :func:`sat_air` formulae).

    Parameters
    ----------
    T : str
        Name of the temperature variable [K].
    tag : str
        Suffix of the declared variables ``pw_<tag>``, ``dpw_<tag>``, ``W_<tag>``, ``h_<tag>``, ``dh_<tag>``.
    p_atm : str
        Name of the pressure parameter [Pa].

    Returns
    -------
    Fragment
        Saturation pressure (over ice at or below the triple point), humidity ratio, enthalpy and derivatives.
    """
    decl = [f'  Real pw_{tag}(unit="Pa") "Saturation pressure at {T}";',
            f'  Real dpw_{tag}(unit="Pa/K") "Its temperature derivative";',
            f'  Real W_{tag}(unit="1") "Humidity ratio of saturated air at {T}";',
            f'  Real h_{tag}(unit="J/kg") "Enthalpy of saturated air at {T}";',
            f'  Real dh_{tag}(unit="J/(kg.K)") "Its temperature derivative";']
    eq = [f"  pw_{tag} = exp(noEvent(if {T} <= {real(_T_TRIPLE)} then {_poly_expr(T, _PW_ICE)} else "
          f"{_poly_expr(T, _PW_LIQ)}));",
          f"  dpw_{tag} = pw_{tag} * noEvent(if {T} <= {real(_T_TRIPLE)} then {_dpoly_expr(T, _PW_ICE)} else "
          f"{_dpoly_expr(T, _PW_LIQ)});",
          f"  W_{tag} = 0.621945 * pw_{tag} / ({p_atm} - pw_{tag});",
          f"  h_{tag} = 1006.0 * ({T} - {real(_T0C)}) + W_{tag} * (2501000.0 + 1860.0 * ({T} - {real(_T0C)}));",
          f"  dh_{tag} = 1006.0 + 0.621945 * {p_atm} * dpw_{tag} / ({p_atm} - pw_{tag})^2 * (2501000.0 + 1860.0 * "
          f"({T} - {real(_T0C)})) + 1860.0 * W_{tag};"]
    return Fragment(decl, eq)


def inlet_air(T_db_K: float | np.ndarray, T_wb_K: float | np.ndarray, p_Pa: float):
    """Humidity ratio and enthalpy of outdoor air from its dry-bulb and wet-bulb (psychrolib formulae).

    Parameters
    ----------
    T_db_K : float | np.ndarray
        Dry-bulb [K] (>= the wet-bulb; a smaller value is taken as the wet-bulb: saturated air).
    T_wb_K : float | np.ndarray
        Wet-bulb [K].
    p_Pa : float
        Atmospheric pressure [Pa].

    Returns
    -------
    tuple
        ``(W, h)``: humidity ratio [kg/kg dry air] (at least 1e-7, psychrolib's floor) and enthalpy [J/kg dry air]
        (ASHRAE Fundamentals 2017 ch. 1 eqs. 33 / 35 and 30).
    """
    tw = np.asarray(T_wb_K, dtype=float) - _T0C
    td = np.maximum(np.asarray(T_db_K, dtype=float) - _T0C, tw)
    Ws = sat_air(T_wb_K, p_Pa)[0]
    W = np.where(tw >= 0.0,
                 ((2501.0 - 2.326 * tw) * Ws - 1.006 * (td - tw)) / (2501.0 + 1.86 * td - 4.186 * tw),
                 ((2830.0 - 0.24 * tw) * Ws - 1.006 * (td - tw)) / (2830.0 + 1.86 * td - 2.1 * tw))
    W = np.maximum(W, 1e-7)
    h = 1006.0 * td + W * (2501000.0 + 1860.0 * td)
    if np.ndim(T_db_K) == 0 and np.ndim(T_wb_K) == 0:
        return float(W), float(h)
    return W, h


def inlet_air_equations(T_db: str, T_wb: str, W_s: str, tag: str) -> Fragment:
    """Declarations and equations of :func:`inlet_air` (``W_<tag>``, ``h_<tag>``).

    Parameters
    ----------
    T_db : str
        Name of the dry-bulb [K].
    T_wb : str
        Name of the wet-bulb [K].
    W_s : str
        Name of the saturated humidity ratio at the wet-bulb (from :func:`sat_air_equations`).
    tag : str
        Suffix of ``tw_``, ``td_``, ``W_`` and ``h_``.

    Returns
    -------
    Fragment
        Humidity ratio and enthalpy of the entering air (ASHRAE Fundamentals 2017 ch. 1 eqs. 33 / 35, 30).
    """
    t0 = real(_T0C)
    decl = [f'  Real tw_{tag}(unit="degC") "Wet-bulb";', f'  Real td_{tag}(unit="degC") "Dry-bulb (at least the wet-bulb)";',
            f'  Real W_{tag}(unit="1") "Humidity ratio of the entering air";',
            f'  Real h_{tag}(unit="J/kg") "Enthalpy of the entering air";']
    eq = [f"  tw_{tag} = {T_wb} - {t0};",
          f"  td_{tag} = max({T_db} - {t0}, tw_{tag});",
          f"  W_{tag} = max(1e-7, noEvent(if tw_{tag} >= 0.0 then ((2501.0 - 2.326 * tw_{tag}) * {W_s} - 1.006 * "
          f"(td_{tag} - tw_{tag})) / (2501.0 + 1.86 * td_{tag} - 4.186 * tw_{tag}) else ((2830.0 - 0.24 * tw_{tag}) * "
          f"{W_s} - 1.006 * (td_{tag} - tw_{tag})) / (2830.0 + 1.86 * td_{tag} - 2.1 * tw_{tag})));",
          f"  h_{tag} = 1006.0 * td_{tag} + W_{tag} * (2501000.0 + 1860.0 * td_{tag});"]
    return Fragment(decl, eq)
