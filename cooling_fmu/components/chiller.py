"""Chillers with real part load: EnergyPlus ``Chiller:Electric:EIR`` curves of a published reference chiller.

Relations (each written once: :func:`eir_chiller` is the numpy relation, :func:`eir_chiller_equations` its Modelica
fragment from the same numbers)
---------------------------------------------------------------------------------------------------------------
EnergyPlus Engineering Reference, "Electric Chiller Model Based on Condenser Entering Temperature"
(``Chiller:Electric:EIR``), with ``x`` the leaving chilled-water and ``y`` the entering condenser-water temperature
in degC, each clamped to the curve's range as EnergyPlus clamps the inputs of a ``Curve:Biquadratic`` (Input-Output
Reference, Curve:Biquadratic, "Minimum / Maximum Value of x / y")::

    CAPFT(x, y)  = a1 + b1 x + c1 x^2 + d1 y + e1 y^2 + f1 x y             (capacity, function of temperature)
    EIRFT(x, y)  = a2 + b2 x + c2 x^2 + d2 y + e2 y^2 + f2 x y             (EIR, function of temperature)
    EIRFPLR(p)   = a3 + b3 p + c3 p^2                                       (EIR, function of part-load ratio)
    cap          = Q_ref CAPFT                      Q = min(Q_load, cap)    PLR = Q / cap
    P            = cap / COP_ref EIRFT EIRFPLR(max(PLR, PLR_min)) min(PLR / PLR_min, 1)    (cycling below PLR_min)
    Q_cond       = Q + P                            (compressor motor efficiency 1: hermetic, as the reference)

The reference chiller (:data:`REFERENCE_CHILLERS`) is a record of the EnergyPlus chiller data set (DataSets/
Chillers.idf) as tabulated by the Modelica Buildings Library (``Buildings.Fluid.Chillers.Data.ElectricEIR``, LBNL;
the copy opened here: repository longlevan/ThermoCodeLib, ``Modelica/Buildings/Fluid/Chillers/Data/ElectricEIR/
ElectricEIRChiller_McQuay_WSC_471kW_5_89COP_Vanes.mo`` and ``..._Carrier_19XR_742kW_5_42COP_VSD.mo``). Its curves are
normalised at its reference point, so a plant's chiller of another size uses them with its own reference capacity
(ASSUMPTION: the same machine type scaled, as EnergyPlus autosizing does).

Auxiliaries: the chiller's own water pumps, as electrical power per W of the heat they move at the ASHRAE 90.1
Appendix G baseline pump powers (chilled water 22 W/gpm at a 12 F (6.67 K) rise, condenser water 19 W/gpm at a
10 F (5.56 K) rise; ASHRAE 90.1-2019 G3.1.3.10 / G3.1.3.11; ASSUMPTION: the standard could not be opened here, the
figures are the widely quoted baseline values), flows following the load (variable speed; ASSUMPTION).

The trim chiller of the liquid plant (:func:`trim_chiller`) sits on the facility water after the IHX (its evaporator
on the facility loop, whose pumps move it: no own chilled-water pump) and rejects its condenser heat into the tower
water (basin), so the towers, their pumps and fans carry it (issue 22 item 4). Its condenser-water pump is counted in
its power; all of that pump's power is taken as heat into the condenser water (ASSUMPTION: its motor losses, about
10 % of 1.3 % of the condenser heat, are not split off).
"""

from __future__ import annotations

import numpy as np

from ..chiller_records import REFERENCE_CHILLERS, EIRChiller, reference_chiller
from ..params import PlantParams
from ._mo import Fragment, lit

__all__ = ["CHW_PUMP_W_PER_W", "COND_PUMP_W_PER_W", "EIRChiller", "REFERENCE_CHILLERS", "biquadratic",
           "chiller_setpoint_K", "eir_chiller", "eir_chiller_equations", "reference_chiller", "trim_chiller",
           "trim_chiller_equations"]

_GPM_M3_S = 3.785411784e-3 / 60.0  # US gallon per minute in m3/s
_CP, _RHO = 4186.0, 997.0
#: Chilled-water pump electrical power per W of evaporator heat: 22 W/gpm at a 12 F rise (ASHRAE 90.1 Appendix G
#: baseline; module docstring).
CHW_PUMP_W_PER_W = 22.0 / (_GPM_M3_S * _RHO * _CP * 12.0 / 1.8)
#: Condenser-water pump electrical power per W of condenser heat: 19 W/gpm at a 10 F rise (same source).
COND_PUMP_W_PER_W = 19.0 / (_GPM_M3_S * _RHO * _CP * 10.0 / 1.8)


def biquadratic(c: tuple, x: float | np.ndarray, y: float | np.ndarray):
    """EnergyPlus ``Curve:Biquadratic`` ``c0 + c1 x + c2 x^2 + c3 y + c4 y^2 + c5 x y``.

    Parameters
    ----------
    c : tuple
        The 6 coefficients.
    x : float | np.ndarray
        First input (leaving chilled water, degC, for the chiller curves), already clamped.
    y : float | np.ndarray
        Second input (entering condenser water, degC), already clamped.

    Returns
    -------
    float or ndarray
        The curve value.
    """
    return c[0] + c[1] * x + c[2] * x * x + c[3] * y + c[4] * y * y + c[5] * x * y


def eir_chiller(ref: EIRChiller, Q_ref_W: float | np.ndarray, Q_load_W: float | np.ndarray,
                T_lchw_K: float | np.ndarray, T_ecw_K: float | np.ndarray):
    """Heat removed, compressor power and available capacity of an EIR chiller (module docstring).

    Parameters
    ----------
    ref : EIRChiller
        Reference chiller (its curves).
    Q_ref_W : float | np.ndarray
        This chiller's reference capacity [W] (> 0).
    Q_load_W : float | np.ndarray
        Heat asked of it [W] (>= 0).
    T_lchw_K : float | np.ndarray
        Leaving chilled-water temperature [K].
    T_ecw_K : float | np.ndarray
        Entering condenser-water temperature [K].

    Returns
    -------
    tuple
        ``(Q_W, P_W, cap_W)``: heat removed, compressor electrical power, available capacity (float or ndarray).
    """
    x = np.clip(T_lchw_K, ref.T_lchw_min_K, ref.T_lchw_max_K) - 273.15
    y = np.clip(T_ecw_K, ref.T_ecw_min_K, ref.T_ecw_max_K) - 273.15
    cap = Q_ref_W * np.maximum(1e-6, biquadratic(ref.capft, x, y))
    Q = np.minimum(np.maximum(Q_load_W, 0.0), cap)
    plr = Q / cap
    p = np.maximum(plr, ref.PLR_min)
    a = ref.eirfplr
    P = cap / ref.COP_ref * biquadratic(ref.eirft, x, y) * (a[0] + a[1] * p + a[2] * p * p) * np.minimum(
        plr / ref.PLR_min, 1.0)
    if np.ndim(P) == 0:
        return float(Q), float(P), float(cap)
    return Q, P, cap


def _bq_expr(c, x: str, y: str) -> str:
    return (f"({lit(c[0])} + {lit(c[1])} * {x} + {lit(c[2])} * {x} * {x} + {lit(c[3])} * {y} + {lit(c[4])} * {y} * {y}"
            f" + {lit(c[5])} * {x} * {y})")


def eir_chiller_equations(ref: EIRChiller, Q_ref_W: float, Q_load: str, T_lchw: str, T_ecw: str, tag: str
                          ) -> Fragment:
    """Declarations and equations of :func:`eir_chiller` (outputs ``Q_<tag>``, ``P_<tag>``, ``cap_<tag>``).

    Parameters
    ----------
    ref : EIRChiller
        Reference chiller (curves written in as literals).
    Q_ref_W : float
        Reference capacity [W].
    Q_load : str
        Expression of the heat asked [W].
    T_lchw : str
        Expression of the leaving chilled-water temperature [K].
    T_ecw : str
        Expression of the entering condenser-water temperature [K].
    tag : str
        Suffix of ``x_``, ``y_``, ``cap_``, ``Q_``, ``plr_`` and ``P_``.

    Returns
    -------
    Fragment
        The curves CAPFT, EIRFT and EIRFPLR at the clamped temperatures and the part-load ratio.
    """
    t = tag
    decl = [f'  Real x_{t}(unit="degC") "Leaving chilled water, clamped to the curve range";',
            f'  Real y_{t}(unit="degC") "Entering condenser water, clamped to the curve range";',
            f'  Real cap_{t}(unit="W") "Available capacity";', f'  Real Q_{t}(unit="W") "Heat removed";',
            f'  Real plr_{t}(unit="1") "Part-load ratio";', f'  Real P_{t}(unit="W") "Compressor power";']
    xe = f"x_{t}"
    ye = f"y_{t}"
    a = ref.eirfplr
    pe = f"max(plr_{t}, {lit(ref.PLR_min)})"
    eq = [f"  x_{t} = min({lit(ref.T_lchw_max_K)}, max({lit(ref.T_lchw_min_K)}, {T_lchw})) - 273.15;",
          f"  y_{t} = min({lit(ref.T_ecw_max_K)}, max({lit(ref.T_ecw_min_K)}, {T_ecw})) - 273.15;",
          f"  cap_{t} = {lit(Q_ref_W)} * max(1e-6, {_bq_expr(ref.capft, xe, ye)});",
          f"  Q_{t} = min(max({Q_load}, 0.0), cap_{t});",
          f"  plr_{t} = Q_{t} / cap_{t};",
          f"  P_{t} = cap_{t} / {lit(ref.COP_ref)} * {_bq_expr(ref.eirft, xe, ye)} * ({lit(a[0])} + {lit(a[1])} * {pe}"
          f" + {lit(a[2])} * {pe} * {pe}) * min(plr_{t} / {lit(ref.PLR_min)}, 1.0);"]
    return Fragment(decl, eq)


def chiller_setpoint_K(params: PlantParams) -> float:
    """Leaving-water set point of the trim chiller, ``T_fac_sup_set + dT_deadband`` [K].

    Parameters
    ----------
    params : PlantParams
        Plant description.

    Returns
    -------
    float
        Set point [K].
    """
    return params.tower.T_fac_sup_set_K + params.chiller.dT_deadband_K


def trim_chiller(params: PlantParams, m_fac_kg_s: float | np.ndarray, T_in_K: float | np.ndarray,
                 T_wb_K: float | np.ndarray, T_cond_in_K: float | np.ndarray):
    """Heat removed, electrical power, COP and condenser heat of the trim chiller for water entering at ``T_in``.

    ``Q_load = on m cp (T_in - T_set)`` with ``on = enabled and T_wb > T_wb_switch`` (economiser below), the EIR
    chiller (:func:`eir_chiller`, reference ``chiller.reference`` at capacity ``chiller.Q_flow_max_W``) leaving at
    ``T_set`` with condenser water entering at ``T_cond_in`` (the tower basin); electrical power = compressor +
    condenser-water pump ``COND_PUMP_W_PER_W (Q + P_comp)``; condenser heat into the tower water = ``Q + P``.

    Parameters
    ----------
    params : PlantParams
        Plant description (``chiller``, ``tower.T_fac_sup_set_K``, ``cp_water_J_kgK``).
    m_fac_kg_s : float | np.ndarray
        Facility flow [kg/s].
    T_in_K : float | np.ndarray
        Entering (facility) water [K].
    T_wb_K : float | np.ndarray
        Wet-bulb [K] (broadcastable).
    T_cond_in_K : float | np.ndarray
        Condenser water entering (tower basin) [K].

    Returns
    -------
    tuple
        ``(Q_W, P_W, COP, Q_cond_W)``; ``COP = Q / P`` (1 where nothing runs).
    """
    ch, cp = params.chiller, params.cp_water_J_kgK
    T_set = chiller_setpoint_K(params)
    on = np.where(np.asarray(T_wb_K) > ch.T_wb_switch_K, 1.0 if ch.enabled else 0.0, 0.0)
    ref = reference_chiller(ch.reference)
    Q_ref = max(ch.Q_flow_max_W, 1.0)
    load = on * np.maximum(0.0, m_fac_kg_s * cp * (T_in_K - T_set))
    Q, P_comp, _ = eir_chiller(ref, Q_ref, load, T_set, T_cond_in_K)
    P = P_comp * (1.0 + COND_PUMP_W_PER_W) + COND_PUMP_W_PER_W * Q
    cop = np.where(P > 0.0, Q / np.where(P > 0.0, P, 1.0), 1.0)
    if np.ndim(Q) == 0 and np.ndim(T_cond_in_K) == 0 and np.ndim(m_fac_kg_s) == 0:
        return float(Q), float(P), float(cop), float(Q + P)
    return Q, P, cop, Q + P


def trim_chiller_equations(params: PlantParams, T_cond_in: str = "T_cw_basin") -> Fragment:
    """Modelica declarations and equations of :func:`trim_chiller` (names of the shipped model's variables:
    ``m_flow_fac``, ``T_ihx_out``, ``T_wb``, ``cp``, parameters ``have_chiller``, ``T_wb_switch``,
    ``T_chiller_set``; outputs ``Q_flow_chiller``, ``P_chiller``, ``COP_chiller``, ``Q_flow_chiller_cond``,
    ``T_chiller_out``).

    Parameters
    ----------
    params : PlantParams
        Plant description (reference chiller and capacity, written in as literals).
    T_cond_in : str
        Name of the condenser water entering.

    Returns
    -------
    Fragment
        The reference chiller on the facility water after the IHX, its condenser pump counted.
    """
    ch = params.chiller
    decl, eq = eir_chiller_equations(reference_chiller(ch.reference), max(ch.Q_flow_max_W, 1.0),
                                     "noEvent(if T_wb > T_wb_switch then have_chiller else 0.0) * max(0.0, "
                                     "m_flow_fac * cp * (T_ihx_out - T_chiller_set))", "T_chiller_set", T_cond_in, "ch")
    k = lit(COND_PUMP_W_PER_W)
    eq += ["  Q_flow_chiller = Q_ch;",
           "  T_chiller_out = T_ihx_out - Q_flow_chiller / (m_flow_fac * cp);",
           f"  P_chiller = P_ch * (1.0 + {k}) + {k} * Q_ch;",
           "  COP_chiller = noEvent(if P_chiller > 0.0 then Q_flow_chiller / P_chiller else 1.0);",
           "  Q_flow_chiller_cond = Q_flow_chiller + P_chiller;"]
    return Fragment(decl, eq)
