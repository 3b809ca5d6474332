"""What a run did on the grid's fast time scales (#15): demand-response events, ramps, the battery.

* :func:`event_reports` -- per demand-response event: the cap, the facility power reached (the maximum and the
  exact mean of the interval-average series over the event), the non-deferrable floor, the power of batch jobs
  that were already running, energy curtailed against a baseline run, jobs delayed, serving SLO during the event,
  and a verdict (``met``, ``infeasible``, ``not met``) that says why.
* :func:`fast_facility_series` -- facility power resampled on a fine uniform grid (1 s by default): the run's
  interval averages, plus the exact intra-interval steps of job starts and ends, plus each profiled job's
  periodic compute / communication swing (:mod:`power.ramps`). This is the documented resampling of issue #15:
  the cooling plant and the facility overheads are slow (thermal inertia, seconds to minutes), so only the IT
  part (rack input) carries intra-interval structure; every interval's mean equals the run's interval average
  (up to the incomplete last period of a profiled job inside it).
* :func:`ramp_report` -- ramp statistics (D = 1 s, 1 min, 15 min), amplitude at each training period, the
  facility ramp-rate limit and its violations, with and without the battery (:mod:`power.battery`).

SI units (s, W, J).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from power.battery import Battery, dispatch_ramp_limited
from power.ramps import (PeriodicProfile, add_periodic_bins, fundamental_amplitude, kink_bin_means, ramp_statistics,
                         ramped_steps, step_bin_means, windowed_amplitude)

from ..kernel.simulation import SimulationResult
from ..policies.grid_events import GridEvent

__all__ = ["EventReport", "event_reports", "fast_facility_series", "ramp_report", "series_mean"]


def series_mean(time_s: np.ndarray, interval_s: float, values: np.ndarray, a: float, b: float) -> float:
    """Exact mean over ``[a, b)`` of the step function of interval averages ``values`` starting at ``time_s``.

    Parameters
    ----------
    time_s : np.ndarray
        Interval starts [s], shape (n,).
    interval_s : float
        Interval length [s].
    values : np.ndarray
        Interval averages, shape (n,).
    a : float
        Window start [s].
    b : float
        Window end [s], ``b > a``; the part outside the series counts as missing (mean over the covered part).

    Returns
    -------
    float
        The mean; NaN when the window does not meet the series.
    """
    lo = np.clip(time_s, a, b)
    hi = np.clip(time_s + interval_s, a, b)
    w = hi - lo
    tot = float(w.sum())
    return float((w * values).sum() / tot) if tot > 0 else float("nan")


@dataclass
class EventReport:
    """One demand-response event's outcome (fields in SI units; see :func:`event_reports`)."""

    label: str
    start_s: float
    end_s: float
    cap_W: float
    target_fraction: float
    reference_W: float
    max_W: float
    mean_W: float
    floor_W: float
    committed_W: float
    met: bool
    feasible: bool
    verdict: str
    jobs_delayed: int
    energy_curtailed_J: float
    baseline_mean_W: float
    serving_requests: int
    serving_slo_attainment: float
    serving_slo_attainment_baseline: float


def _batch_marginal(result, idle_node_it_W: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Batch jobs' rack-input power above idle, per allocation run: (start_s, end_s, marginal_W)."""
    al = result.allocations
    if not al or len(al.get("start_s", [])) == 0:
        return np.zeros(0), np.zeros(0), np.zeros(0)
    m = np.asarray(al["it_power_W"], float) - np.asarray(al["node_count"], float) * idle_node_it_W
    return np.asarray(al["start_s"], float), np.asarray(al["end_s"], float), m


def event_reports(result: SimulationResult, events: list[GridEvent], *, idle_node_it_W: float,
                  held_jobs: set[int] | None = None, baseline: SimulationResult | None = None,
                  serving_requests: pd.DataFrame | None = None,
                  serving_offset_s: float = 0.0, fast: tuple[float, float, np.ndarray] | None = None
                  ) -> list[EventReport]:
    """Report every demand-response event of a run.

    The non-deferrable floor is the facility power the run would have had with no batch job running, estimated
    per output interval as ``P_facility - (P_facility / P_it) * (batch rack-input power above idle)`` and taken
    at its maximum over the event (the facility-to-IT ratio of the interval stands for the cooling and
    electrical overheads the batch power carried). ``committed_W`` is the same facility-scope power of the batch
    jobs that had started before the event and were still running at its start (the wrapper never pauses a
    running job). Verdict:

    * ``met``: the largest bin mean of facility power during the event (bins of ``fast`` lying inside it, else
      the output intervals that overlap it) is at most the cap (+1e-6 relative);
    * ``infeasible``: the floor alone exceeds the cap (no schedule of the batch work could meet it);
    * ``not met``: feasible, but the power of running jobs (``committed_W``) or a prediction error of the
      cooling ratio / power model pushed the facility over the cap.

    Parameters
    ----------
    result : SimulationResult
        The run.
    events : list[GridEvent]
        Its events.
    idle_node_it_W : float
        Rack-input power of one idle node [W].
    held_jobs : set[int] | None
        Job indices the wrapper held back at least once for an event.
    baseline : SimulationResult | None
        The same run without events (for the energy curtailed and the baseline SLO); None gives NaN.
    serving_requests : pd.DataFrame | None
        The serving partition's requests with ``arrival_time_s`` and ``slo_met`` (:func:`add_slo`).
    serving_offset_s : float
        Simulation time of the request trace's time 0 [s].
    fast : tuple[float, float, np.ndarray] | None
        ``(t_first_s, dt_s, bin means W)``: the resampled facility power (:func:`fast_facility_series`) for the
        maximum and the mean; None uses the
        output intervals.

    Returns
    -------
    list of EventReport
    """
    t = np.asarray(result.time_s, float)
    dt = float(result.time_s[1] - result.time_s[0]) if len(t) > 1 else float("nan")
    P = np.asarray(result.facility["P_facility_W"], float) if "P_facility_W" in result.facility else \
        np.asarray(result.facility["P_it_W"], float)
    it = np.asarray(result.facility["P_it_W"], float)
    ratio = np.where(it > 0, P / np.where(it > 0, it, 1.0), 1.0)
    s, e, m = _batch_marginal(result, idle_node_it_W)
    batch_int = step_bin_means(np.r_[s, e], np.r_[m, -m], float(t[0]), dt, len(t)) if len(t) else np.zeros(0)
    floor = P - ratio * batch_int
    jobs = result.jobs
    out = []
    for ev in events:
        a, b = ev.start_s, ev.end_s
        inside = (t < b) & (t + dt > a)
        if fast is not None and fast[2].size:
            tf = fast[0] + fast[1] * np.arange(fast[2].size)
            sel = (tf >= a) & (tf + fast[1] <= b)
            if not sel.any():
                sel = (tf < b) & (tf + fast[1] > a)
            mx = float(fast[2][sel].max()) if sel.any() else float("nan")
            mean = series_mean(tf, fast[1], fast[2], a, b)
        else:
            mx = float(P[inside].max()) if inside.any() else float("nan")
            mean = series_mean(t, dt, P, a, b)
        fl = float(floor[inside].max()) if inside.any() else float("nan")
        ki = int(np.searchsorted(t, a, side="right") - 1)
        r_at = float(ratio[min(max(ki, 0), len(t) - 1)]) if len(t) else 1.0
        committed = float(m[(s < a) & (e > a)].sum()) * r_at
        met = bool(mx <= ev.cap_W * (1 + 1e-6))
        feasible = bool(not (fl > ev.cap_W * (1 + 1e-6)))
        if met:
            verdict = "met"
        elif not feasible:
            verdict = (f"infeasible: the non-deferrable load (idle nodes, co-located serving, cooling and "
                       f"electrical overheads) reached {fl / 1e6:.3f} MW, above the cap {ev.cap_W / 1e6:.3f} MW")
        elif fl + committed > ev.cap_W:
            verdict = (f"not met: batch jobs already running at the event start drew {committed / 1e6:.3f} MW and "
                       f"are not paused; with the floor {fl / 1e6:.3f} MW they exceed the cap "
                       f"{ev.cap_W / 1e6:.3f} MW")
        else:
            verdict = (f"not met: facility power reached {mx / 1e6:.3f} MW against the cap {ev.cap_W / 1e6:.3f} MW "
                       f"although the floor and running jobs fit: the platform's prediction (cooling ratio, power "
                       f"model) was low")
        delayed = 0
        if held_jobs:
            idx = np.fromiter(held_jobs, dtype=np.int64)
            sub = jobs["submit_time_s"].to_numpy(float)[idx]
            st = jobs["sim_start_s"].to_numpy(float)[idx]
            delayed = int(((sub < b) & ~(st < a - 0.0)).sum())  # submitted before the end, not started before it
        base_mean = float("nan")
        curtailed = float("nan")
        if baseline is not None:
            bP = np.asarray(baseline.facility["P_facility_W"], float) if "P_facility_W" in baseline.facility else \
                np.asarray(baseline.facility["P_it_W"], float)
            base_mean = series_mean(np.asarray(baseline.time_s, float), dt, bP, a, b)
            curtailed = (base_mean - mean) * (b - a)
        n_req = 0
        att = float("nan")
        if serving_requests is not None and len(serving_requests):
            arr = serving_requests["arrival_time_s"].to_numpy(float) + serving_offset_s
            sel = (arr >= a) & (arr < b)
            n_req = int(sel.sum())
            if n_req:
                att = float(serving_requests["slo_met"].to_numpy(bool)[sel].mean())
        out.append(EventReport(ev.label, a, b, ev.cap_W, ev.target_fraction, ev.reference_W, mx, mean, fl, committed,
                               met, feasible, verdict, delayed, curtailed, base_mean, n_req, att, float("nan")))
    return out


def fast_facility_series(result: SimulationResult, *, idle_node_it_W: float, it_per_dc: float,
                         profiles: dict[int, PeriodicProfile] | None = None, dt_s: float = 1.0,
                         shape_ramp_W_per_s: float | None = None, stepped: dict | None = None
                         ) -> tuple[float, np.ndarray, dict[str, float]]:
    """Facility power on a uniform fine grid (module docstring: the documented resampling).

    ``P(k) = P_interval + (B(k) - B_interval) + sum_j n_j * it_per_dc * (w_j(t) - mean_j)`` where ``B`` is the
    batch jobs' rack-input power above idle (exact step function from the allocation table, averaged exactly over
    each fine bin and over each output interval) and ``w_j`` the periodic node power of a profiled job.

    Parameters
    ----------
    result : SimulationResult
        The run (its interval length must be a whole multiple of ``dt_s``).
    idle_node_it_W : float
        Rack-input power of an idle node [W].
    it_per_dc : float
        Marginal rack-input watts per node DC watt (SIVOC and rectifier slope, :class:`power.chain.PowerChain`).
    profiles : dict[int, PeriodicProfile] | None
        Job index (row of ``result.jobs``) -> its profile.
    dt_s : float
        Fine bin [s].
    shape_ramp_W_per_s : float | None
        With a facility ramp-rate limit: every job start ramps in and every end ramps down at this rate instead
        of stepping (:func:`power.ramps.ramped_steps`: soft start, filler load after the end), one ramp per run
        attempt of a job; a profiled job's swing begins after its soft start; None keeps steps.
    stepped : dict | None
        Job index -> ``(t_offset_s, node_power_W, PhaseProfile)``: a job whose node power is a step function
        (a training job's checkpoint and restart segments, issue #24) with the periodic iteration swing during
        the segments at the profile's mean. The interval series already holds the step function's exact mean
        over each output interval, so only its shape inside each interval is added (the step function's bin
        means minus their interval mean), and the zero-mean swing per training segment (the iteration phase
        restarts with each segment).

    Returns
    -------
    tuple of (float, ndarray, dict)
        Start time of the first bin [s], the bin means [W] of shape (n_intervals * interval_s / dt_s,), and
        ``{"E_soft_start_deficit_J", "E_ramp_down_filler_J"}`` (0 without shaping).

    Raises
    ------
    ValueError
        If the output interval is not a whole multiple of ``dt_s``, or the grid would exceed 1e8 bins.
    """
    t = np.asarray(result.time_s, float)
    extra = {"E_soft_start_deficit_J": 0.0, "E_ramp_down_filler_J": 0.0}
    if len(t) < 1:
        return 0.0, np.zeros(0), extra
    interval = float(t[1] - t[0]) if len(t) > 1 else float(result.totals.get("duration_s", dt_s))
    ratio = interval / dt_s
    r = int(round(ratio))
    if r < 1 or abs(ratio - r) > 1e-9 * ratio:
        raise ValueError(f"the output interval {interval} s is not a whole multiple of the resampling bin {dt_s} s")
    n = len(t) * r
    if n > 100_000_000:
        raise ValueError(f"resampling {len(t)} intervals at {dt_s} s gives {n} bins (> 1e8): use a longer bin")
    P = np.asarray(result.facility["P_facility_W"], float) if "P_facility_W" in result.facility else \
        np.asarray(result.facility["P_it_W"], float)
    s, e, m = _batch_marginal(result, idle_node_it_W)
    edges, deltas = np.r_[s, e], np.r_[m, -m]
    fine = step_bin_means(edges, deltas, float(t[0]), dt_s, n)
    coarse = fine.reshape(len(t), r).mean(axis=1)  # exact interval means of the same step function
    out = np.repeat(P, r) + fine - np.repeat(coarse, r)
    soft = {}  # job id -> (start, ramp time) of its soft start, to begin its periodic swing after it
    if shape_ramp_W_per_s is not None and s.size:
        # one ramp per run attempt of a job (its allocation rows, one per CDU run, share job id and start)
        att = pd.DataFrame({"job": np.asarray(result.allocations["job_id"]), "s": s, "e": e, "m": m})
        att = att.groupby(["job", "s", "e"], sort=True, as_index=False)["m"].sum()
        sa, ea, ma = att["s"].to_numpy(float), att["e"].to_numpy(float), att["m"].to_numpy(float)
        kt, kc, extra["E_soft_start_deficit_J"], extra["E_ramp_down_filler_J"] = ramped_steps(sa, ea, ma,
                                                                                              shape_ramp_W_per_s)
        pos = ma > 0  # the ramped attempts: their steps are replaced by the ramps (at or below idle: steps kept)
        out += kink_bin_means(kt, kc, float(t[0]), dt_s, n) - step_bin_means(
            np.r_[sa[pos], ea[pos]], np.r_[ma[pos], -ma[pos]], float(t[0]), dt_s, n)
        for jid, s0, e0, m0 in zip(att["job"], sa, ea, ma):
            soft[(jid, s0)] = min(max(m0, 0.0) / shape_ramp_W_per_s, e0 - s0)
    if profiles:
        jobs = result.jobs
        st = jobs["sim_start_s"].to_numpy(float)
        en = jobs["sim_end_s"].to_numpy(float)
        nn = jobs["nodes"].to_numpy(float)
        ids = jobs["job_id"].to_numpy()
        for j, prof in profiles.items():
            if math.isfinite(st[j]) and math.isfinite(en[j]):
                s0 = st[j] + soft.get((ids[j], st[j]), 0.0)  # the swing starts after a soft start
                add_periodic_bins(out, float(t[0]), dt_s, s0, en[j], prof, nn[j] * it_per_dc)
    if stepped:
        jobs = result.jobs
        st = jobs["sim_start_s"].to_numpy(float)
        en = jobs["sim_end_s"].to_numpy(float)
        nn = jobs["nodes"].to_numpy(float)
        for j, (off, pw, prof) in stepped.items():
            if not (math.isfinite(st[j]) and math.isfinite(en[j]) and en[j] > st[j]):
                continue
            a = st[j] + np.asarray(off, float)
            keep = a < en[j]
            a, p = a[keep], np.asarray(pw, float)[keep]
            b = np.append(a[1:], en[j])
            mean = float(np.dot(b - a, p)) / (en[j] - st[j])
            scale = nn[j] * it_per_dc
            d = np.diff(np.concatenate(([mean], p, [mean])))
            # the interval series P already holds the job's real step function averaged over each output interval
            # (the kernel integrates the job's power series exactly): add only its shape inside each interval, the
            # step function minus its interval mean, or every dip longer than a bin would be counted twice (a
            # 12-min restart drove the 1 s facility power below zero)
            step = scale * step_bin_means(np.append(a, en[j]), d, float(t[0]), dt_s, n)
            out += step - np.repeat(step.reshape(len(t), r).mean(axis=1), r)
            for s0, e0, p0 in zip(a, b, p):
                if p0 == prof.mean_W and e0 > s0:
                    add_periodic_bins(out, float(t[0]), dt_s, float(s0), float(e0), prof, scale)
    return float(t[0]), out, extra


def ramp_report(fast_W: np.ndarray, dt_s: float, *, ramp_W_per_s: float | None, battery: Battery | None,
                periods_s: tuple[float, ...] = (), windows_s: tuple[float, ...] = (1.0, 60.0, 900.0)) -> dict:
    """Ramp statistics of the facility and of the grid draw with the battery, and the ramp-limit violations.

    A ramp-limit violation is a pair of consecutive 60 s means (the limit is quoted per minute) of the grid draw
    that differ by more than ``60 * ramp_W_per_s``; without a battery the grid draw is the facility power.

    Parameters
    ----------
    fast_W : np.ndarray
        Facility power bin means [W] (:func:`fast_facility_series`), shape (n,).
    dt_s : float
        Bin [s].
    ramp_W_per_s : float | None
        Facility ramp-rate limit [W/s] (None: no limit; the battery then only smooths toward its set point).
    battery : Battery | None
        The battery.
    periods_s : tuple[float, ...]
        Training periods for the spectral amplitude [s].
    windows_s : tuple[float, ...]
        Ramp windows [s].

    Returns
    -------
    dict
        ``ramp_W`` and ``ramp_grid_W`` (window -> W), ``amplitude_W`` and ``amplitude_grid_W`` (period -> W, over
        the whole series), ``amplitude_max_W`` and ``amplitude_max_grid_W`` (the largest in windows of ~15 min),
        ``violation_window_start_s`` (offsets of the later 60 s window from the series start, grid draw),
        ``violations_facility`` (count without a battery), ``battery`` (:class:`power.battery.BatteryResult` or
        None), ``grid_W`` (the grid draw).
    """
    out: dict = {"ramp_W": ramp_statistics(fast_W, dt_s, windows_s)}
    grid = fast_W
    bres = None
    if battery is not None:
        bres = dispatch_ramp_limited(fast_W, dt_s, ramp_W_per_s if ramp_W_per_s else math.inf, battery)
        grid = bres.grid_W
    out["battery"] = bres
    out["grid_W"] = grid
    out["ramp_grid_W"] = ramp_statistics(grid, dt_s, windows_s)
    out["amplitude_W"] = {T: fundamental_amplitude(fast_W, dt_s, T) for T in periods_s}
    out["amplitude_grid_W"] = {T: fundamental_amplitude(grid, dt_s, T) for T in periods_s}

    def amax(x: np.ndarray, T: float) -> float:  # largest amplitude in ~15 min windows of whole periods
        w = max(1, math.floor(900.0 / T)) * T
        try:
            a = windowed_amplitude(x, dt_s, T, w)
        except ValueError:  # the period is not a whole number of bins
            return float("nan")
        return float(a.max()) if a.size else float("nan")

    out["amplitude_max_W"] = {T: amax(fast_W, T) for T in periods_s}
    out["amplitude_max_grid_W"] = {T: amax(grid, T) for T in periods_s}

    def viol(x: np.ndarray) -> np.ndarray:
        if not ramp_W_per_s or 60.0 % dt_s > 1e-9 * 60.0:
            return np.zeros(0)
        r = int(round(60.0 / dt_s))
        k = x.size // r
        mm = x[:k * r].reshape(k, r).mean(axis=1)
        return (np.flatnonzero(np.abs(np.diff(mm)) > 60.0 * ramp_W_per_s * (1 + 1e-9)) + 1) * 60.0

    out["violation_window_start_s"] = viol(grid)
    out["violations_facility"] = int(viol(fast_W).size)
    return out
