"""N+1 checks (issue 22 item 8b): one tower cell or one pump out at design heat and the site's design wet-bulb.

Can the plant still reject its design heat while holding its set points?

Each case is the plant's analytic steady state (:func:`cooling_fmu.modelica.analytic_steady_state`) at design
heat (every CDU at ``cdu.Q_flow_nominal_W``) and the design wet-bulb (the 0.4 % value of
:func:`cooling_fmu.weather.design_conditions`), on a copy of the plant with one unit out:

* one tower cell out: ``N - 1`` cells; the bank's full air flow falls to ``(N - 1) / N`` of nominal, so the Merkel
  number at full air becomes ``NTU_nominal ((N - 1) / N)^n`` and ``L/G`` rises by ``N / (N - 1)``; the water is
  spread over the remaining cells;
* one facility (or tower-water) pump out of ``N`` identical pumps: the group's flow at full speed falls to ``(N - 1)
  / N`` of design (ASSUMPTION, conservative: the remaining pumps are not run out on their curves beyond their duty
  point); a single-pump loop has no standby and fails.

A case passes when the facility supply stays within :data:`TOLERANCE_K` of its set point and every CDU's secondary
supply within :data:`TOLERANCE_K` of its own.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .modelica import analytic_steady_state
from .sizing import SIZING_XTOL_K
from .params import PlantParams

__all__ = ["TOLERANCE_K", "RedundancyCase", "chiller_free_hours_by_month", "n_plus_one"]

#: Allowed excursion of a supply temperature above its set point at the design point [K] (ASSUMPTION).
TOLERANCE_K = 0.5


@dataclass(frozen=True)
class RedundancyCase:
    """One N+1 case at the design point.

    Attributes
    ----------
    name : str
        ``"all units"``, ``"one tower cell out"``, ``"one facility pump out"``, ``"one tower pump out"``.
    ok : bool
        Set points held within :data:`TOLERANCE_K`.
    T_fac_sup_K : float
        Steady facility supply [K] (NaN if the loop stops).
    T_sec_sup_max_K : float
        Warmest CDU secondary supply [K] (NaN if the loop stops).
    y_fan : float
        Bank air-flow fraction at the steady state (1 = every remaining cell at full speed).
    note : str
        Why it fails, or the regime.
    """

    name: str
    ok: bool
    T_fac_sup_K: float
    T_sec_sup_max_K: float
    y_fan: float
    note: str


def _case(name: str, p: PlantParams, T_wb_K: float, heat_W: np.ndarray | None = None) -> RedundancyCase:
    heat = np.full(p.n_cdu, p.cdu.Q_flow_nominal_W) if heat_W is None else heat_W
    out = analytic_steady_state(p, heat, T_wb_K, xtol_K=SIZING_XTOL_K)
    T_fs, T_ss = float(out["T_fac_sup"]), float(np.max(out["T_sec_sup"]))
    ok = T_fs <= p.tower.T_fac_sup_set_K + TOLERANCE_K and T_ss <= p.cdu.T_sec_sup_set_K + TOLERANCE_K
    return RedundancyCase(name, ok, T_fs, T_ss, float(out["y_fan"]), str(out["regime"]))


def _pump_out(p: PlantParams, loop: str) -> PlantParams | None:
    sec = getattr(p, loop)
    N = sec.pump.n_pumps
    if N == 1:
        return None
    pump = sec.pump.model_copy(update={"n_pumps": N - 1})
    f = (N - 1) / N
    if loop == "facility":
        return p.model_copy(update={"facility": sec.model_copy(update={"pump": pump}),
                                    "cdu": p.cdu.model_copy(update={"m_flow_fac_nominal_kg_s":
                                                                    p.cdu.m_flow_fac_nominal_kg_s * f})})
    return p.model_copy(update={"tower_loop": sec.model_copy(update={
        "pump": pump, "m_flow_nominal_kg_s": sec.m_flow_nominal_kg_s * f})})


def n_plus_one(params: PlantParams, T_wb_design_K: float, heat_W: np.ndarray | None = None) -> list[RedundancyCase]:
    """The N+1 cases of a plant at design heat and the design wet-bulb (module docstring).

    Parameters
    ----------
    params : PlantParams
        The plant.
    T_wb_design_K : float
        Design wet-bulb [K] (e.g. ``design_conditions(epw).wet_bulb_K``).
    heat_W : np.ndarray | None
        Heat per CDU [W], shape (n_cdu,); None: the design heat, every CDU at ``cdu.Q_flow_nominal_W`` (a run's
        headroom passes its machine's full-load heat, :func:`scheduler_sim.analysis.headroom.full_load_heat_w`).

    Returns
    -------
    list of RedundancyCase
        All units running, one tower cell out, one facility pump out, one tower pump out.
    """
    t = params.tower
    cases = [_case("all units", params, T_wb_design_K, heat_W)]
    N = t.n_cells
    if N == 1:
        cases.append(RedundancyCase("one tower cell out", False, float("nan"), float("nan"), 0.0,
                                    "a single cell: no standby"))
    else:
        f = (N - 1) / N
        t1 = t.model_copy(update={"n_cells": N - 1, "NTU_nominal": t.NTU_nominal * f ** t.n_merkel,
                                  "LG_nominal": t.LG_nominal / f})
        cases.append(_case("one tower cell out", params.model_copy(update={"tower": t1}), T_wb_design_K, heat_W))
    for loop, name in (("facility", "one facility pump out"), ("tower_loop", "one tower pump out")):
        p1 = _pump_out(params, loop)
        if p1 is None:
            cases.append(RedundancyCase(name, False, float("nan"), float("nan"), 0.0, "a single pump: no standby"))
        else:
            cases.append(_case(name, p1, T_wb_design_K, heat_W))
    return cases


def chiller_free_hours_by_month(time_s: np.ndarray, Q_flow_chiller_W: np.ndarray, origin_unix_s: float,
                                interval_s: float) -> dict[str, tuple[float, float]]:
    """Hours with the chiller off (economiser / free cooling only) per calendar month (UTC).

    Parameters
    ----------
    time_s : np.ndarray
        Start of each output interval [s since ``origin_unix_s``], shape (k,).
    Q_flow_chiller_W : np.ndarray
        Mean chiller heat of each interval [W], shape (k,); an interval counts as chiller-free below 1 W.
    origin_unix_s : float
        Unix time of ``time_s = 0`` [s, UTC].
    interval_s : float
        Length of an interval [s].

    Returns
    -------
    dict of str to tuple of (float, float)
        ``"YYYY-MM" -> (chiller-free hours, simulated hours)``, in time order.
    """
    import datetime as _dt

    out: dict[str, list[float]] = {}
    for t, q in zip(np.asarray(time_s, dtype=float), np.asarray(Q_flow_chiller_W, dtype=float)):
        key = _dt.datetime.fromtimestamp(origin_unix_s + t, _dt.timezone.utc).strftime("%Y-%m")
        row = out.setdefault(key, [0.0, 0.0])
        row[1] += interval_s / 3600.0
        if q < 1.0:
            row[0] += interval_s / 3600.0
    return {k: (v[0], v[1]) for k, v in out.items()}
