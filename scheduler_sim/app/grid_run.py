"""Glue between a run's ``[grid]`` dynamic keys and the simulation (#15): events and the ramp limit around the
policy, periodic profiles on the job table, and the ``/grid`` outputs after the run.

Nothing here runs when the section is absent or sets none of the dynamic keys (:meth:`dynamics_enabled`), so
such runs are unchanged.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from power.battery import Battery
from power.ramps import PeriodicProfile

from ..analysis.grid_dynamics import EventReport, event_reports, fast_facility_series, ramp_report
from ..io.grid_group import write_grid_group
from ..policies.base import BasePolicy
from ..policies.grid_events import GridDynamicsPolicy, GridEvent, merge_event_caps
from ..policies.registry import make_policy

if TYPE_CHECKING:
    from ..kernel.config import SimulationConfig
    from ..kernel.simulation import Simulation, SimulationResult
    from ..serving.run import ServingOutput
    from .config import RunConfig

__all__ = ["enabled", "resolve_events", "apply_power_profiles", "wrap_policy", "grid_outputs", "format_grid_summary"]

DAY_S = 86400.0
#: Keep at most this many battery / grid-draw samples in the file (the series is decimated by whole bins beyond).
MAX_SERIES = 2_000_000


def enabled(cfg) -> bool:
    """Whether the run has a ``[grid]`` section with a dynamic key."""
    return cfg.grid is not None and cfg.grid.dynamics_enabled()


def resolve_events(cfg: RunConfig, design_peak_W: float) -> list[GridEvent]:
    """The configured events in simulation time and W.

    Parameters
    ----------
    cfg : RunConfig
        The run.
    design_peak_W : float
        Default reference of ``reduction_fraction`` [W].

    Returns
    -------
    list of GridEvent
        Sorted by start.
    """
    out = []
    for i, e in enumerate(cfg.grid.event if cfg.grid is not None else []):
        a = e.start_day * DAY_S
        b = a + e.duration_h * 3600.0
        if e.cap_MW is not None:
            out.append(GridEvent(a, b, e.cap_MW * 1e6, label=e.label or f"event{i}"))
        else:
            ref = e.reference_MW * 1e6 if e.reference_MW is not None else design_peak_W
            out.append(GridEvent(a, b, (1.0 - e.reduction_fraction) * ref, e.reduction_fraction, ref,
                                 label=e.label or f"event{i}"))
    return sorted(out, key=lambda ev: ev.start_s)


def apply_power_profiles(cfg: RunConfig, jobs: pd.DataFrame) -> pd.DataFrame:
    """Give the jobs that match ``[grid.power_profile]`` a fixed mean node power (column ``node_power_set_W``).

    The kernel carries each profiled job at the profile's mean node power (``duty high + (1 - duty) low``, with
    the floor applied); the periodic swing around it is added by the resampling after the run.

    Parameters
    ----------
    cfg : RunConfig
        The run.
    jobs : pd.DataFrame
        Canonical job table.

    Returns
    -------
    pandas.DataFrame
        ``jobs`` unchanged without a profile, else a copy with ``node_power_set_W`` (NaN for other jobs).
    """
    pp = cfg.grid.power_profile if cfg.grid is not None else None
    if pp is None or len(jobs) == 0:
        return jobs
    prof = _profile(cfg)
    match = jobs["nodes"].to_numpy() >= pp.min_nodes
    if pp.queue:
        match &= jobs["queue"].astype(str).to_numpy() == pp.queue
    out = jobs.copy()
    out["node_power_set_W"] = np.where(match, prof.mean_W, np.nan)
    out.attrs = dict(jobs.attrs)
    return out


def _profile(cfg) -> PeriodicProfile:
    pp = cfg.grid.power_profile
    return PeriodicProfile(pp.period_s, pp.duty, pp.low_W, pp.high_W, pp.floor_W)


def wrap_policy(cfg: RunConfig, policy: BasePolicy | str, sim_cfg: SimulationConfig,
                events: list[GridEvent]) -> tuple[BasePolicy | str, SimulationConfig]:
    """The policy and kernel options of a run with events or a ramp limit.

    Parameters
    ----------
    cfg : RunConfig
        The run.
    policy : BasePolicy | str
        The configured policy (a name is instantiated with the options' ``backfill`` and ``policy_params``).
    sim_cfg : SimulationConfig
        The kernel options of the run (:func:`scheduler_sim.app.runner.simulation_config`).
    events : list[GridEvent]
        From :func:`resolve_events`.

    Returns
    -------
    tuple
        ``(policy, sim_cfg)``: unchanged without events and ramp limit; else the wrapped policy and the options with
        the events' caps folded into the power budget (:func:`merge_event_caps`).
    """
    ramp = cfg.grid.ramp_limit_MW_per_min if cfg.grid is not None else None
    if not events and ramp is None:
        return policy, sim_cfg
    if isinstance(policy, str):
        policy = make_policy(policy, sim_cfg.backfill, **(sim_cfg.policy_params or {}))
    wrapped = GridDynamicsPolicy(policy, events, ramp_W_per_s=ramp * 1e6 / 60.0 if ramp is not None else None)
    cap = merge_event_caps(list(sim_cfg.power_cap), events, float(sim_cfg.window_start_s), need_power=ramp is not None)
    return wrapped, dataclasses.replace(sim_cfg, power_cap=tuple(cap))


def _decimate(x: np.ndarray) -> tuple[np.ndarray, int]:
    k = max(1, -(-x.size // MAX_SERIES))
    n = x.size // k
    return (x[:n * k].reshape(n, k).mean(axis=1) if k > 1 else x), k


def grid_outputs(cfg: RunConfig, result: SimulationResult, sim: Simulation, events: list[GridEvent], *,
                 serving: ServingOutput | None = None, serving_offset_s: float = 0.0,
                 baseline: SimulationResult | None = None,
                 training: object | None = None) -> tuple[dict[str, float], dict, list]:
    """Analyse a finished run's grid dynamics (:mod:`scheduler_sim.analysis.grid_dynamics`).

    Parameters
    ----------
    cfg : RunConfig
        The run.
    result : SimulationResult
        Its result.
    sim : Simulation
        The platform that produced it (power chain, idle node power, the policy).
    events : list[GridEvent]
        The run's events.
    serving : ServingOutput | None
        The co-located serving partition (after :func:`finish_serving`: requests carry ``slo_met``).
    serving_offset_s : float
        Simulation time of the request trace's time 0 [s].
    baseline : SimulationResult | None
        The same run without events (for the energy curtailed).
    training : object | None
        Training jobs of the run (:class:`scheduler_sim.app.workloads.TrainingJobs`): their checkpoint / restart
        steps and iteration swing go into the resampled facility power.

    Returns
    -------
    tuple
        ``(summary entries, /grid content for write_grid_group, list of EventReport)``.
    """
    g = cfg.grid
    n = sim.system.n_nodes
    p0 = np.full(n, sim.jobdata.idle_node_power_W)
    idle_it = float(sim.chain.node_it_input_w(p0).mean())
    slope = float((sim.chain.node_it_input_w(p0 + 1.0) - sim.chain.node_it_input_w(p0)).mean())
    summary: dict[str, float] = {}
    content: dict[str, dict] = {}
    profiles = {}
    if g.power_profile is not None and "node_power_set_W" in result.jobs.columns:
        prof = _profile(cfg)
        for j in np.flatnonzero(np.isfinite(result.jobs["node_power_set_W"].to_numpy(float))):
            profiles[int(j)] = prof
    stepped = {}
    if training is not None and len(training.jobs):  # training jobs of [[workload]] (#24): segments + iteration swing
        row = {int(x): i for i, x in enumerate(result.jobs["job_id"].to_numpy())}
        for jid, grp in training.power_series.groupby("job_id", sort=True):
            if int(jid) in row:
                stepped[row[int(jid)]] = (grp["t_offset_s"].to_numpy(float), grp["node_power_W"].to_numpy(float),
                                          training.profiles[int(jid)])
    ramp = g.ramp_limit_MW_per_min * 1e6 / 60.0 if g.ramp_limit_MW_per_min is not None else None
    t_first, fast, shaping = fast_facility_series(result, idle_node_it_W=idle_it, it_per_dc=slope, profiles=profiles,
                                                  dt_s=g.resample_s, shape_ramp_W_per_s=ramp, stepped=stepped)
    held = getattr(sim.policy, "held_dr", set())
    reports = event_reports(result, events, idle_node_it_W=idle_it, held_jobs=held, baseline=baseline,
                            serving_requests=serving.requests if serving is not None else None,
                            serving_offset_s=serving_offset_s, fast=(t_first, g.resample_s, fast))
    if reports:
        cols = {
            "start_s": ("s", "Event start (simulation time)"), "end_s": ("s", "Event end"),
            "cap_W": ("W", "Facility power cap during the event"),
            "target_fraction": ("1", "Requested reduction as a fraction of reference_W (NaN: a cap was given)"),
            "reference_W": ("W", "Reference of target_fraction"),
            "max_W": ("W", "Largest output-interval average of facility power during the event"),
            "mean_W": ("W", "Exact mean facility power over the event"),
            "floor_W": ("W", "Non-deferrable facility power (no batch job running), largest over the event"),
            "committed_W": ("W", "Facility-scope power of batch jobs running at the event start (not paused)"),
            "met": ("1", "1 when max_W <= cap_W"), "feasible": ("1", "0 when floor_W alone exceeds cap_W"),
            "jobs_delayed": ("1", "Jobs held back by the event look-ahead, submitted before its end"),
            "energy_curtailed_J": ("J", "Baseline facility energy minus this run's over the event (NaN: no baseline)"),
            "serving_requests": ("1", "Serving requests arriving during the event"),
            "serving_slo_attainment": ("1", "SLO attainment of those requests"),
        }
        ds = {k: (np.array([getattr(r, k) for r in reports], dtype=float), u, d) for k, (u, d) in cols.items()}
        ds["label"] = (np.array([r.label for r in reports], dtype=object), "", "Event name")
        ds["verdict"] = (np.array([r.verdict for r in reports], dtype=object), "", "met / infeasible / not met, why")
        content["events"] = {"attrs": {"resolution_s": float(result.time_s[1] - result.time_s[0])
                                       if len(result.time_s) > 1 else float("nan"),
                                       "pausing": "none: running jobs are never paused; flexible jobs are delayed"},
                             "datasets": ds}
        summary["grid_events"] = float(len(reports))
        summary["grid_events_met"] = float(sum(r.met for r in reports))
        summary["grid_events_infeasible"] = float(sum(not r.feasible for r in reports))
    info = sim.policy.run_info() if isinstance(sim.policy, GridDynamicsPolicy) else {}
    for k in ("grid_jobs_delayed_by_events", "grid_jobs_delayed_by_ramp", "grid_start_ramp_violations"):
        if k in info:
            summary[k] = float(info[k])

    # fast dynamics: the resampled facility power, ramps, battery
    bat = None
    if g.battery is not None:
        b = g.battery
        bat = Battery(b.capacity_kWh * 3.6e6, b.power_kW * 1e3, b.round_trip_efficiency, b.soc_min, b.soc_max,
                      b.soc_initial, b.soc_initial, b.restore_time_s)
    periods = (g.power_profile.period_s,) if g.power_profile is not None else ()
    rr = ramp_report(fast, g.resample_s, ramp_W_per_s=ramp, battery=bat, periods_s=periods)
    windows = sorted(rr["ramp_W"])
    for D in windows:
        summary[f"grid_ramp_{D:g}s_W"] = rr["ramp_W"][D]
        if bat is not None:
            summary[f"grid_ramp_{D:g}s_with_battery_W"] = rr["ramp_grid_W"][D]
    for T in periods:
        summary["grid_amplitude_at_period_W"] = rr["amplitude_W"][T]
        summary["grid_amplitude_at_period_max_W"] = rr["amplitude_max_W"][T]
        if bat is not None:
            summary["grid_amplitude_at_period_with_battery_W"] = rr["amplitude_grid_W"][T]
            summary["grid_amplitude_at_period_max_with_battery_W"] = rr["amplitude_max_grid_W"][T]
    if ramp is not None:
        summary["grid_ramp_limit_W_per_s"] = ramp
        summary["grid_ramp_violations"] = float(rr["violations_facility"])
        summary["grid_soft_start_deficit_J"] = shaping["E_soft_start_deficit_J"]
        summary["grid_ramp_down_filler_J"] = shaping["E_ramp_down_filler_J"]
        if bat is not None:
            summary["grid_ramp_violations_with_battery"] = float(rr["violation_window_start_s"].size)
    fast_dec, k = _decimate(fast)
    rattrs = {"resample_s": g.resample_s, "t_first_s": t_first, "decimation": float(k),
              "ramp_limit_W_per_s": ramp if ramp is not None else float("nan"),
              "violations_without_battery": float(rr["violations_facility"]),
              "E_soft_start_deficit_J": shaping["E_soft_start_deficit_J"],
              "E_ramp_down_filler_J": shaping["E_ramp_down_filler_J"],
              "shaping": "with a ramp limit, each job start ramps in and each end ramps down at the limit (soft start, "
                         "filler load); the simulation's energies do not include the deficit and the filler",
              "definition": "ramp over D = largest change between consecutive D-averages of facility power; a "
                            "violation is a pair of consecutive 60 s means of the grid draw differing by more "
                            "than 60 s x the limit"}
    rds = {
        "window_s": (np.array(windows, dtype=float), "s", "Ramp windows D"),
        "ramp_W": (np.array([rr["ramp_W"][D] for D in windows]), "W", "Facility ramp over D"),
        "ramp_grid_W": (np.array([rr["ramp_grid_W"][D] for D in windows]), "W", "Grid-draw ramp over D (battery)"),
        "P_facility_W": (fast_dec, "W", "Facility power resampled (bin resample_s x decimation)"),
        "violation_time_s": (t_first + rr["violation_window_start_s"], "s",
                             "Start of each 60 s window of the grid draw that broke the ramp limit"),
    }
    if isinstance(sim.policy, GridDynamicsPolicy) and sim.policy.start_ramp_violations:
        v = np.array(sim.policy.start_ramp_violations, dtype=float)
        rds["start_violation_time_s"] = (v[:, 0], "s", "Job starts whose own step exceeded one minute of ramp")
        rds["start_violation_W"] = (v[:, 2], "W", "Their predicted facility step")
    if periods:
        rds["period_s"] = (np.array(periods, dtype=float), "s", "Training periods of the job profiles")
        rds["amplitude_W"] = (np.array([rr["amplitude_W"][T] for T in periods]), "W",
                              "Amplitude of facility power at each period (Fourier component, whole series)")
        rds["amplitude_max_W"] = (np.array([rr["amplitude_max_W"][T] for T in periods]), "W",
                                  "Largest amplitude at each period in windows of ~15 min (whole periods)")
        rattrs.update({"profile_low_W": g.power_profile.low_W, "profile_high_W": g.power_profile.high_W,
                       "profile_duty": g.power_profile.duty, "profile_floor_W": g.power_profile.floor_W,
                       "profiled_jobs": float(len(profiles))})
    content["ramps"] = {"attrs": rattrs, "datasets": rds}
    bres = rr["battery"]
    if bres is not None:
        gd, _ = _decimate(bres.grid_W)
        bd, _ = _decimate(bres.battery_W)
        soc = bres.soc_J[::k]
        content["battery"] = {
            "attrs": {"capacity_J": bat.capacity_J, "power_W": bat.power_W,
                      "round_trip_efficiency": bat.round_trip_efficiency, "E_in_J": bres.E_in_J,
                      "E_out_J": bres.E_out_J, "E_loss_J": bres.E_loss_J,
                      "soc_start_J": float(bres.soc_J[0]), "soc_end_J": float(bres.soc_J[-1]),
                      "balance_residual_J": bres.balance_residual_J(), "decimation": float(k)},
            "datasets": {"P_grid_W": (gd, "W", "Utility draw = facility power - battery power"),
                         "P_battery_W": (bd, "W", "Battery terminal power (> 0 discharging)"),
                         "soc_J": (soc, "J", "State of charge at bin edges (every decimation-th edge)")}}
        summary["battery_E_loss_J"] = bres.E_loss_J
        summary["battery_soc_min_J"] = float(bres.soc_J.min())
        summary["battery_soc_max_J"] = float(bres.soc_J.max())
    return summary, content, reports


def writer(content: dict):
    """A callable for :func:`scheduler_sim.io.hdf5.write_run`'s ``extra_groups`` that writes ``/grid``.

    Parameters
    ----------
    content : dict
        From :func:`grid_outputs`.

    Returns
    -------
    callable(h5py.File)
    """
    return lambda f: write_grid_group(f, content)


def format_grid_summary(summary: dict[str, float], reports: list[EventReport]) -> str:
    """Lines for the run summary: each event's verdict and the ramps.

    Parameters
    ----------
    summary : dict[str, float]
        The summary entries of :func:`grid_outputs`.
    reports : list[EventReport]
        The events.

    Returns
    -------
    str
        One line per event and one for the ramps ('' when there is nothing to say).
    """
    lines = []
    for r in reports:
        lines.append(f"grid    event {r.label}: cap {r.cap_W / 1e6:.3f} MW, reached max {r.max_W / 1e6:.3f} MW / mean "
                     f"{r.mean_W / 1e6:.3f} MW, {r.jobs_delayed} jobs delayed: {r.verdict}")
    ramps = [(k, v) for k, v in summary.items() if k.startswith("grid_ramp_") and k.endswith("s_W")]
    if ramps:
        lines.append("grid    facility ramp " + ", ".join(
            f"{k[len('grid_ramp_'):-2]} {v / 1e6:.3f} MW" for k, v in ramps if math.isfinite(v)))
    if "grid_ramp_violations" in summary:
        s = f"grid    ramp limit {summary['grid_ramp_limit_W_per_s'] * 60 / 1e6:g} MW/min: " \
            f"{int(summary['grid_ramp_violations'])} minute(s) over it"
        if "grid_ramp_violations_with_battery" in summary:
            s += f", {int(summary['grid_ramp_violations_with_battery'])} with the battery"
        lines.append(s)
    return "\n".join(lines)
