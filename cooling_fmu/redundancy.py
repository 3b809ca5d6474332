"""N+1 checks (issue 22 item 8b): one tower cell, one dry-cooler unit or one pump out at design heat and the site's
design day.

Can the plant still reject its design heat while holding its set points?

Each case is the plant's analytic steady state (:func:`cooling_fmu.modelica.analytic_steady_state`) at design
heat (every CDU at ``cdu.Q_flow_nominal_W``), the air side's design heat ``tower.Q_air_side_design_W`` (part of
what the towers reject at design, :func:`cooling_fmu.sizing.design_tower_heat_w`) and the design day (the 0.4 %
values of :func:`cooling_fmu.weather.design_conditions`: the wet-bulb for towers; the dry-bulb with its mean
coincident wet-bulb for a dry or hybrid bank), on a copy of the plant with one unit out:

* one tower cell out: ``N - 1`` cells; the bank's full air flow falls to ``(N - 1) / N`` of nominal, so the Merkel
  number at full air becomes ``NTU_nominal ((N - 1) / N)^n`` and ``L/G`` rises by ``N / (N - 1)``; the water is
  spread over the remaining cells;
* one dry-cooler unit out (``heat_rejection = "dry"`` or ``"hybrid"``): ``N - 1`` identical units, so the bank's
  conductance ``UA_nominal`` and air ``m_air_nominal`` fall to ``(N - 1) / N`` (the water spread over the rest);
* one facility (or tower-water) pump out of ``N`` identical duty pumps: with a standby pump (``pump.n_pumps_standby
  >= 1``) the standby starts and the group moves its design flow again, so the plant is the one with every unit
  running; without one the group's flow at full speed falls to ``(N - 1) / N`` of design (ASSUMPTION,
  conservative: the remaining pumps are not run out on their curves beyond their duty point); a single-pump loop
  without standby fails.

A case passes when the facility supply stays within :data:`TOLERANCE_K` of its set point and every CDU's secondary
supply within :data:`TOLERANCE_K` of its own. This is the one N+1 path of the project: the run's headroom, ``hpctwin
cooling --design-day`` and ``hpctwin site check`` (towers and dry banks) all call :func:`n_plus_one`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .modelica import analytic_steady_state
from .sizing import SIZING_XTOL_K
from .params import PlantParams

__all__ = ["TOLERANCE_K", "RedundancyCase", "chiller_free_hours_by_month", "n_plus_one", "unit_out"]

#: Allowed excursion of a supply temperature above its set point at the design point [K] (ASSUMPTION).
TOLERANCE_K = 0.5


@dataclass(frozen=True)
class RedundancyCase:
    """One N+1 case at the design point.

    Attributes
    ----------
    name : str
        ``"all units"``, ``"one tower cell out"`` (``"one dry-cooler unit out"`` for a dry or hybrid bank), ``"one
        facility pump out"``, ``"one tower pump out"``.
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


def _case(name: str, p: PlantParams, T_wb_K: float, heat_W: np.ndarray | None = None,
          T_db_K: float | None = None, note: str = "") -> RedundancyCase:
    heat = np.full(p.n_cdu, p.cdu.Q_flow_nominal_W) if heat_W is None else heat_W
    out = analytic_steady_state(p, heat, T_wb_K, T_db_K=T_db_K, Q_air_side_W=p.tower.Q_air_side_design_W,
                                xtol_K=SIZING_XTOL_K)
    T_fs, T_ss = float(out["T_fac_sup"]), float(np.max(out["T_sec_sup"]))
    ok = T_fs <= p.tower.T_fac_sup_set_K + TOLERANCE_K and T_ss <= p.cdu.T_sec_sup_set_K + TOLERANCE_K
    return RedundancyCase(name, ok, T_fs, T_ss, float(out["y_fan"]), note or str(out["regime"]))


def _pump_out(p: PlantParams, loop: str) -> PlantParams | None:
    """The plant with one duty pump of ``loop`` out and no standby to replace it (None: a single pump)."""
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


def unit_out(params: PlantParams) -> PlantParams | None:
    """The plant with one tower cell or one dry-cooler unit out (module docstring).

    Parameters
    ----------
    params : PlantParams
        The plant.

    Returns
    -------
    PlantParams or None
        A copy with ``N - 1`` cells (Merkel number and ``L/G`` of the smaller bank) or ``N - 1`` dry-cooler units
        (conductance and air x ``(N - 1) / N``); None for a bank of one unit (no standby).
    """
    t = params.tower
    N = t.n_cells
    if N == 1:
        return None
    f = (N - 1) / N
    if params.heat_rejection != "towers":
        dc = params.dry_cooler
        return params.model_copy(update={
            "tower": t.model_copy(update={"n_cells": N - 1}),
            "dry_cooler": dc.model_copy(update={"UA_nominal_W_K": dc.UA_nominal_W_K * f,
                                                "m_air_nominal_kg_s": dc.m_air_nominal_kg_s * f})})
    return params.model_copy(update={"tower": t.model_copy(update={
        "n_cells": N - 1, "NTU_nominal": t.NTU_nominal * f ** t.n_merkel, "LG_nominal": t.LG_nominal / f})})


def n_plus_one(params: PlantParams, T_wb_design_K: float, heat_W: np.ndarray | None = None,
               T_db_design_K: float | None = None) -> list[RedundancyCase]:
    """The N+1 cases of a plant at design heat and the design day (module docstring).

    Parameters
    ----------
    params : PlantParams
        The plant.
    T_wb_design_K : float
        Design wet-bulb [K] (towers: ``design_conditions(epw).wet_bulb_K``; a dry or hybrid bank: the mean
        coincident wet-bulb of the design dry-bulb, ``mcwb_K``, the air its pads see).
    heat_W : np.ndarray | None
        Heat per CDU [W], shape (n_cdu,); None: the design heat, every CDU at ``cdu.Q_flow_nominal_W`` (a run's
        headroom passes its machine's full-load heat, :func:`scheduler_sim.analysis.headroom.full_load_heat_w`).
    T_db_design_K : float | None
        Design dry-bulb [K] (``dry_bulb_K`` of the design conditions) for a dry or hybrid bank; None: saturated air
        (towers do not use it).

    Returns
    -------
    list of RedundancyCase
        All units running, one tower cell (or dry-cooler unit) out, one facility pump out, one tower pump out.
    """
    dry = params.heat_rejection != "towers"
    cases = [_case("all units", params, T_wb_design_K, heat_W, T_db_design_K)]
    unit = "one dry-cooler unit out" if dry else "one tower cell out"
    p1 = unit_out(params)
    if p1 is None:
        cases.append(RedundancyCase(unit, False, float("nan"), float("nan"), 0.0,
                                    f"a single {'unit' if dry else 'cell'}: no standby"))
    else:
        cases.append(_case(unit, p1, T_wb_design_K, heat_W, T_db_design_K))
    for loop, name in (("facility", "one facility pump out"), ("tower_loop", "one tower pump out")):
        pump = getattr(params, loop).pump
        if pump.n_pumps_standby >= 1:  # the standby starts: the group moves its design flow again
            c = cases[0]
            cases.append(RedundancyCase(name, c.ok, c.T_fac_sup_K, c.T_sec_sup_max_K, c.y_fan,
                                        f"the standby pump starts ({pump.n_pumps} duty + {pump.n_pumps_standby} "
                                        f"standby): {c.note}"))
            continue
        p1 = _pump_out(params, loop)
        if p1 is None:
            cases.append(RedundancyCase(name, False, float("nan"), float("nan"), 0.0, "a single pump: no standby"))
        else:
            cases.append(_case(name, p1, T_wb_design_K, heat_W, T_db_design_K))
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
