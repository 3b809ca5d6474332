"""Facility energy cost and emissions of a run, integrated over its power step function and the grid signals'
steps, and attributed to jobs, accounts, CDUs and intervals (the ``/grid`` group of a run file).

Integration (exact for the recorded step function, :mod:`power.grid`): the run's facility power is a step function
on its output intervals (each value the exact average of the event-level power), the signal a step function on its
own steps (hours). With ``w_k`` the exact mean of the signal over interval ``k`` (:func:`power.grid.interval_means`),
the run's emissions (or cost) are ``C = sum_k w_k P_facility,k dt``, which is the exact integral of
``P_facility(t) s(t)`` for the recorded step function. It equals the integral against the event-level power in
every interval that lies inside one signal step; ``straddling_intervals`` counts the others (zero when the output
interval divides an hour and the window starts on the hour).

Attribution uses the rules of :mod:`scheduler_sim.analysis.attribution` with every interval's energy weighted by
``w_k``: a job's IT energy in interval ``k`` (``P_jc o_jk``), its share of CDU pump, plant and air-side power (by
heat / IT share in the interval) and of the electrical-chain losses and lighting (by IT share), so a job that runs
in a low-carbon hour is charged that hour's intensity for its IT *and* its overheads. The pseudo-consumer ``idle``
(idle nodes, a co-located partition) takes the remainder, so jobs + idle = facility total exactly.

Groups per consumer (SI: kg CO2eq, currency units): ``it`` (rack input: node DC + SIVOC / rectifier losses + rack
overhead), ``cooling`` (liquid plant + air side), ``electrical_loss`` (transformer, switchgear, UPS, PDU),
``lighting``, ``facility`` (their sum).
"""

from __future__ import annotations

import calendar as _cal
import dataclasses
import datetime as dt
import math

import numpy as np
import pandas as pd

from power.grid import StepSignal, interval_means, straddling_intervals

from .attribution import _OVERHEAD, _consumers, _cooling_components, _overlaps, _row_sums, _safe_div, _weighted

__all__ = ["GridAttribution", "GROUPS", "KINDS", "signal_in_sim_time", "grid_attribution", "grid_summary",
           "YEAR_S"]

#: Consumer groups, in the order written.
GROUPS = ("it", "cooling", "electrical_loss", "lighting", "facility")
#: Signal kind -> dataset prefix and total-unit label.
KINDS = {"carbon": ("co2", "kg"), "price": ("cost", "")}
#: A non-leap year [s] (typical-year calendar tiling).
YEAR_S = 365 * 86400.0

_ELEC = ("E_transformer_loss_J", "E_switchgear_loss_J", "E_ups_loss_J", "E_pdu_loss_J")
_AIR = ("E_air_fan_J", "E_air_chiller_J")


def _jan1_utc(year: int) -> float:
    return float(_cal.timegm((year, 1, 1, 0, 0, 0)))


def signal_in_sim_time(series: object, fallback_SI: float, origin_unix_s: float, *, calendar: str = "absolute",
                       utc_offset_h: float = 0.0, run_start_s: float = 0.0) -> tuple[StepSignal, str]:
    """Place a :class:`dataloaders.grid.GridSeries` on the simulation time axis.

    Parameters
    ----------
    series : object
        The loaded file (a :class:`dataloaders.grid.GridSeries`), or None for the constant ``fallback_SI``.
    fallback_SI : float
        Constant used in gaps and outside the series [SI per J].
    origin_unix_s : float
        Unix time of simulation time 0 (NaN: the trace has no calendar; then simulation time 0 is January 1st,
        00:00 local standard time of the series' first year, i.e. ``- utc_offset_h`` hours in UTC).
    calendar : str
        ``"absolute"`` or ``"typical-year"``. ``absolute``: a simulation time ``t`` reads the series at Unix time
        ``origin + t`` (same year needed).
        ``typical-year``: the series' year stands for any year: every UTC time of the run is mapped to the same
        month, day and hour of the series' first year (:func:`cooling_fmu.weather.typical_year_s`, the mapping
        the weather uses: 29 February of a leap run year reads 28 February; a leap series year's 29 February is
        read by no other year), from the year before the run's start year to three years after it. Without a
        trace calendar the series' year is repeated every 365 days from its January 1st, as the weather is.
    utc_offset_h : float
        Site's local standard time minus UTC [h] (EPW LOCATION line); used only without a calendar origin.
    run_start_s : float
        Simulation time of the window start (selects the run's year).

    Returns
    -------
    (StepSignal, str)
        The signal and a one-line description of the alignment.

    Raises
    ------
    ValueError
        If ``calendar`` is unknown.
    """
    if series is None:
        return StepSignal.constant(fallback_SI), "constant"
    if calendar not in ("absolute", "typical-year"):
        raise ValueError(f"grid.calendar must be 'absolute' or 'typical-year', got {calendar!r}")
    y_sig = dt.datetime.fromtimestamp(series.t0_unix_s, dt.timezone.utc).year
    if not math.isfinite(origin_unix_s):
        origin = _jan1_utc(y_sig) - utc_offset_h * 3600.0
        how = f"no trace calendar: simulation time 0 = {y_sig}-01-01 00:00 local (UTC{utc_offset_h:+g} h)"
        calendar = "typical-year"
    else:
        origin = origin_unix_s
        y_run = dt.datetime.fromtimestamp(origin + run_start_s, dt.timezone.utc).year
        how = (f"absolute UTC (trace origin {dt.datetime.fromtimestamp(origin, dt.timezone.utc):%Y-%m-%d %H:%M:%S})"
               if calendar == "absolute" else f"typical year: run year {y_run} read as {y_sig} by month, day and hour")
        if calendar == "typical-year":
            return _by_month_day_hour(series, fallback_SI, origin, y_run, y_sig), how
    n = series.values.size
    base = series.t0_unix_s - origin + np.arange(n + 1) * series.step_s
    values = series.values
    if calendar == "typical-year":  # no trace calendar
        # repeat every 365 days: one copy before and two after (a run may start late in the year and run long)
        per = int(round(YEAR_S / series.step_s))
        v = np.full(per, np.nan)
        k0 = int(round((series.t0_unix_s - _jan1_utc(y_sig)) / series.step_s))
        idx = np.arange(n) + k0
        keep = (idx >= 0) & (idx < per)
        v[idx[keep]] = values[keep]
        start = _jan1_utc(y_sig) - origin
        reps = 4
        values = np.tile(v, reps)
        base = start - YEAR_S + np.arange(values.size + 1) * series.step_s
    return StepSignal(base, values, float(fallback_SI), series.kind), how


def _by_month_day_hour(series: object, fallback_SI: float, origin: float, y_run: int, y_sig: int) -> StepSignal:
    """The series read at the same month, day and hour of its year ``y_sig`` for every step of the years
    ``y_run - 1 .. y_run + 2`` (UTC), in simulation time (origin ``origin``); NaN where the series has no value.
    """
    from cooling_fmu.weather import typical_year_s

    step = float(series.step_s)
    y0 = y_run - 1
    u0, u1 = _jan1_utc(y0), _jan1_utc(y_run + 3)
    n = int(round((u1 - u0) / step))
    starts = u0 + np.arange(n) * step
    s_typ = typical_year_s(starts - u0, y0)  # seconds into the non-leap typical year (month, day, time of day)
    if _cal.isleap(y_sig):  # the same date in a leap series year: after 28 February, one day later
        s_typ = s_typ + 86400.0 * (s_typ >= 59 * 86400.0)
    k_f = (_jan1_utc(y_sig) + s_typ - series.t0_unix_s) / step
    k = np.rint(k_f).astype(np.int64)
    ok = (k >= 0) & (k < series.values.size) & (np.abs(k_f - k) < 1e-9)
    values = np.full(n, np.nan)
    values[ok] = series.values[k[ok]]
    return StepSignal(u0 - origin + np.arange(n + 1) * step, values, float(fallback_SI), series.kind)


@dataclasses.dataclass
class GridAttribution:
    """Cost and emissions of one run (SI: kg CO2eq, currency units; J for energies).

    Attributes
    ----------
    jobs : dict of str -> ndarray, shape (n_jobs,)
        ``<prefix>_<group>`` per job (prefix ``co2_kg`` / ``cost``; groups :data:`GROUPS`), aligned with ``/jobs``.
    pseudo : dict of str -> ndarray, shape (1,)
        The same for ``idle`` (every node outside a job, a co-located partition, fixed loads): the remainder.
    accounts : dict of str -> ndarray, shape (n_accounts + 1,)
        ``account`` names (the last row ``(idle)``) and ``<prefix>_facility`` per account.
    cdu : dict of str -> ndarray, shape (n_cdus,)
        ``<prefix>_it``, ``<prefix>_cooling`` (its pumps and heat share of the plant and air side),
        ``<prefix>_overhead`` (IT share of electrical losses and lighting), ``<prefix>_facility``.
    timeseries : dict of str -> ndarray, shape (n_intervals,)
        Signal interval means (``carbon_intensity_kg_per_J``, ``price_per_J``), their fallback share, and
        ``<prefix>`` per interval (``w_k P_facility,k dt``).
    totals : dict of str -> float
        Facility totals per group, ``E_facility_J``, energy-weighted mean signal (``carbon_mean_kg_per_J``,
        ``price_mean_per_J``), energy under the fallback, closure errors (jobs + idle vs total; sum of CDUs vs total).
    attrs : dict
        Sources, basis, currency, calendar alignment, fallback values and how they were chosen, straddling intervals.
    """

    jobs: dict[str, np.ndarray]
    pseudo: dict[str, np.ndarray]
    accounts: dict[str, np.ndarray]
    cdu: dict[str, np.ndarray]
    timeseries: dict[str, np.ndarray]
    totals: dict[str, float]
    attrs: dict = dataclasses.field(default_factory=dict)


def _prefix(kind: str) -> str:
    return "co2_kg" if kind == "carbon" else "cost"


def grid_attribution(result: object, signals: dict[str, StepSignal], attrs: dict | None = None) -> GridAttribution:
    """Cost and emissions of a run, per job, account, CDU and interval (rules: module docstring).

    Parameters
    ----------
    result : object
        A SimulationResult or a namespace with the same attributes. As for
        :func:`scheduler_sim.analysis.attribution.attribute`: ``jobs``, ``time_s``, ``facility``, ``cdu``,
        ``totals``, ``job_cdu_it_W``, optional ``allocations``.
    signals : dict[str, StepSignal]
        ``"carbon"`` and / or ``"price"`` -> :class:`power.grid.StepSignal` in simulation time [kg/J, currency/J].
    attrs : dict | None
        Extra attributes to record (sources, units, fallbacks).

    Returns
    -------
    GridAttribution

    Raises
    ------
    ValueError
        If the result has no per-job per-CDU power, no interval, or ``signals`` is empty.
    """
    if not signals:
        raise ValueError("grid_attribution needs at least one signal (carbon or price)")
    if result.job_cdu_it_W is None:
        raise ValueError("grid attribution needs the per-job per-CDU IT power (job_cdu_it_W)")
    time_s = np.asarray(result.time_s, dtype=float)
    n = time_s.size
    if n < 1:
        raise ValueError("grid attribution needs at least one output interval")
    tot = {k: float(v) for k, v in result.totals.items()}
    dtk = float(time_s[1] - time_s[0]) if n > 1 else float(tot["duration_s"])
    t0 = float(time_s[0])
    fac, cdu = result.facility, result.cdu
    Q = np.asarray(cdu["Q_flow_W"], dtype=float)
    n_cdus = Q.shape[1]
    jobs = result.jobs
    owner, P_jc, a, b = _consumers(result, t0, n_cdus)
    ka, kb, wa, wb = _overlaps(a, b, t0, dtk, n)
    P_j = _row_sums(P_jc)  # a OneCdu when every consumer is a run of nodes in one CDU
    E_it_tot = tot["E_it_J"]
    lf = tot["E_cdu_heat_J"] / E_it_tot if E_it_tot > 0 else 1.0
    pump, plant = _cooling_components(fac, cdu, n, n_cdus)
    H = Q * dtk
    H_fac = H.sum(axis=1)
    zeros = np.zeros(n)
    P_it = np.asarray(fac["P_it_W"], dtype=float)
    over = {k: np.asarray(fac.get(v, zeros), dtype=float) for k, v in _OVERHEAD.items()}
    P_cool = np.asarray(fac.get("P_cooling_W", zeros), dtype=float)
    P_fac = np.asarray(fac["P_facility_W"], dtype=float) if "P_facility_W" in fac else P_it + P_cool
    series_P = {"it": P_it, "cooling": P_cool + over["E_air_fan_J"] + over["E_air_chiller_J"],
                "electrical_loss": sum(over[k] for k in _ELEC), "lighting": over["E_lighting_J"]}
    series_P["facility"] = P_fac

    def per_owner(x: np.ndarray) -> np.ndarray:
        if owner is None:
            return x
        acc = np.zeros(len(jobs))
        np.add.at(acc, owner, x)
        return acc

    J: dict[str, np.ndarray] = {}
    pseudo: dict[str, np.ndarray] = {}
    accounts: dict[str, np.ndarray] = {}
    C: dict[str, np.ndarray] = {}
    ts: dict[str, np.ndarray] = {}
    T: dict[str, float] = {"E_facility_J": float(P_fac.sum() * dtk)}
    info = dict(attrs or {})
    acct = (jobs["account"].astype(str).to_numpy() if "account" in jobs.columns else np.full(len(jobs), ""))
    names = sorted(set(acct.tolist()))
    accounts["account"] = np.array(names + ["(idle)"], dtype=object)
    # per-CDU IT power per interval: the CDU's heat over the liquid fraction (as in the attribution)
    it_cdu = H / lf if lf > 0 else H
    it_share_cdu = _safe_div(it_cdu / dtk, P_it[:, None])
    heat_share = _safe_div(H, H_fac[:, None])
    for kind, sig in signals.items():
        p = _prefix(kind)
        w, fb_share = interval_means(sig, t0, dtk, n)
        ts["carbon_intensity_kg_per_J" if kind == "carbon" else "price_per_J"] = w
        ts[f"{kind}_fallback_share"] = fb_share
        ones = w[:, None]
        g = {"it": per_owner(_weighted(P_jc, np.broadcast_to(ones, (n, n_cdus)), ka, kb, wa, wb, dtk))}
        cool = lf * _weighted(P_jc, ones * _safe_div(pump * dtk, H), ka, kb, wa, wb, dtk)
        for comp in plant.values():
            cool = cool + lf * _weighted(P_j, (w * _safe_div(comp * dtk, H_fac))[:, None], ka, kb, wa, wb, dtk)
        sh = {k: _weighted(P_j, (w * _safe_div(v, P_it))[:, None], ka, kb, wa, wb, dtk) for k, v in over.items()}
        g["cooling"] = per_owner(cool + sh["E_air_fan_J"] + sh["E_air_chiller_J"])
        g["electrical_loss"] = per_owner(sum(sh[k] for k in _ELEC))
        g["lighting"] = per_owner(sh["E_lighting_J"])
        g["facility"] = g["it"] + g["cooling"] + g["electrical_loss"] + g["lighting"]
        for grp in GROUPS:
            total = float(np.sum(w * series_P[grp]) * dtk)
            T[f"{p}_{grp}"] = total
            J[f"{p}_{grp}"] = g[grp]
            pseudo[f"{p}_{grp}"] = np.array([total - float(np.sum(g[grp]))])
        ts[p] = w * P_fac * dtk
        T[f"{kind}_mean_per_J"] = T[f"{p}_facility"] / T["E_facility_J"] if T["E_facility_J"] > 0 else float("nan")
        T[f"E_{kind}_fallback_J"] = float(np.sum(fb_share * P_fac) * dtk)
        T[f"{kind}_straddling_intervals"] = float(straddling_intervals(sig, t0, dtk, n))
        # independent check at event level: a job's IT power is constant while it runs, so its IT emissions are
        # exactly P_j * integral of the signal over its run; the interval-level figure above differs from it only
        # in intervals that straddle a signal step (a job starting or ending inside one)
        exact_it = per_owner(P_j[:, 0] * sig.integral(a, b))
        T[f"{p}_it_jobs_event_level"] = float(np.sum(exact_it))
        T[f"{p}_it_jobs_interval_rel_error"] = (abs(float(np.sum(g["it"])) - float(np.sum(exact_it)))
                                                / max(abs(float(np.sum(exact_it))), 1e-300))
        gross = float(np.sum(np.abs(g["facility"])) + abs(pseudo[f"{p}_facility"][0]))
        T[f"{p}_closure_rel_error"] = (abs(float(np.sum(g["facility"]) + pseudo[f"{p}_facility"][0])
                                           - T[f"{p}_facility"]) / max(gross, 1e-300))
        s = pd.Series(g["facility"]).groupby(acct).sum()
        accounts[f"{p}_facility"] = np.concatenate([s.reindex(names).to_numpy(float), pseudo[f"{p}_facility"]])
        # per CDU: its IT energy, its pumps and heat share of the plant and air side, its IT share of the
        # electrical losses and lighting
        C[f"{p}_it"] = (w[:, None] * it_cdu).sum(axis=0)
        plant_sum = sum(plant.values()) + over["E_air_fan_J"] + over["E_air_chiller_J"]
        C[f"{p}_cooling"] = (w[:, None] * (pump * dtk + heat_share * (plant_sum * dtk)[:, None])).sum(axis=0)
        el_light = series_P["electrical_loss"] + series_P["lighting"]
        C[f"{p}_overhead"] = (w[:, None] * it_share_cdu * (el_light * dtk)[:, None]).sum(axis=0)
        C[f"{p}_facility"] = C[f"{p}_it"] + C[f"{p}_cooling"] + C[f"{p}_overhead"]
        T[f"{p}_cdu_closure_rel_error"] = (abs(float(C[f"{p}_facility"].sum()) - T[f"{p}_facility"])
                                           / max(abs(T[f"{p}_facility"]), 1e-300))
    info["interval_s"] = dtk
    return GridAttribution(jobs=J, pseudo={"name": np.array(["idle"], dtype=object), **pseudo}, accounts=accounts,
                           cdu=C, timeseries=ts, totals=T, attrs=info)


def grid_summary(g: GridAttribution) -> dict[str, float]:
    """Headline figures for the run summary (edge units: kg CO2eq -> t, currency; g/kWh, currency/MWh).

    Parameters
    ----------
    g : GridAttribution
        The run's cost and emissions.

    Returns
    -------
    dict
        ``grid_co2_t``, ``grid_carbon_mean_g_per_kWh``, ``grid_carbon_fallback_fraction``, and the ``price``
        equivalents ``grid_cost``, ``grid_price_mean_per_MWh``, ``grid_price_fallback_fraction`` for the signals
        present.
    """
    T = g.totals
    E = T["E_facility_J"]
    out: dict[str, float] = {}
    if "co2_kg_facility" in T:
        out["grid_co2_t"] = T["co2_kg_facility"] / 1e3
        out["grid_carbon_mean_g_per_kWh"] = T["carbon_mean_per_J"] * 3.6e9
        out["grid_carbon_fallback_fraction"] = T["E_carbon_fallback_J"] / E if E > 0 else 0.0
    if "cost_facility" in T:
        out["grid_cost"] = T["cost_facility"]
        out["grid_price_mean_per_MWh"] = T["price_mean_per_J"] * 3.6e9
        out["grid_price_fallback_fraction"] = T["E_price_fallback_J"] / E if E > 0 else 0.0
    return out
