"""The platform: jobs on nodes, driven by events, feeding the power chain and the cooling plant.

One :class:`Simulation` replays a job table on a :class:`power.System` under one policy:

* the event kernel (:mod:`scheduler_sim.core`) orders submissions, ends, walltime kills and node changes;
* the policy (:mod:`scheduler_sim.policies`) decides which queued jobs start at each timestamp;
* node DC power is a step function that changes only at events; the power chain (:class:`power.PowerChain`) turns
  it into SIVOC / rectifier losses, IT input power and heat per CDU at each change;
* :class:`scheduler_sim.recorder.StepIntegrator` averages that step function exactly over each cooling
  communication step, and the cooling plant (an FMU) is stepped lazily with that average, zero-order hold, as
  simulated time passes step boundaries; the plant state is thus always known up to the last whole step;
* whole steps are averaged into output intervals for the HDF5 time series.

Window and warm-up
------------------
Only jobs submitted in ``[t0, t1)`` (the configured window) are simulated, plus the jobs the trace shows *running*
at ``t0`` (placed first, at ``t0``, for their remaining recorded time: "prefill") and the jobs the trace shows
*waiting* at ``t0`` (queued at ``t0`` with their recorded submit time kept). The run then goes on until the last job
ends, and is padded with idle time to a whole output interval.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .allocator import NodeAllocator
from .core import Environment, EventKind
from .policies import PolicyError, SchedulerView, make_policy
from .recorder import IntervalReducer, StepIntegrator

__all__ = ["Simulation", "SimulationResult", "JobOutcome", "SCHEDULER_SERIES", "POWER_SERIES"]

DAY_S = 86400.0

#: Names of the power series carried by the step integrator (facility totals) [W].
POWER_SERIES = ("P_node_dc_W", "P_sivoc_loss_W", "P_rectifier_loss_W", "P_rack_overhead_W", "P_it_W")
#: Names of the scheduler-state series (time averages over each step) [1].
SCHEDULER_SERIES = ("busy_nodes", "running_jobs", "queued_jobs", "down_nodes")


class JobOutcome:
    """Simulated outcome codes of a job (column ``outcome`` of the result table)."""

    NOT_RUN = 0
    """Never started (should not happen at the end of a run; reported if it does)."""
    COMPLETED = 1
    """Ran its full (recorded) run time."""
    KILLED_WALLTIME = 2
    """Killed on reaching its requested wall time (it ran longer than requested in the trace)."""
    KILLED_NODE_DOWN = 3
    """Killed because one of its nodes went down."""


@dataclass
class SimulationResult:
    """Everything one run produced, in SI units.

    Attributes
    ----------
    jobs : pandas.DataFrame
        Canonical job columns of the simulated jobs plus results: ``sim_start_s``, ``sim_end_s``, ``wait_s``,
        ``turnaround_s``, ``bounded_slowdown``, ``outcome`` (:class:`JobOutcome`), ``prefilled``,
        ``node_power_W`` (DC power per node while running), ``energy_dc_J`` (node DC energy of the job),
        ``energy_it_J`` (the job's rack-input energy: its nodes' share of SIVOC and rectifier losses included).
    time_s : ndarray, shape (n_intervals,)
        Start of each output interval [s] (simulation time; ``t0`` is the window start).
    facility : dict of str -> ndarray (n_intervals,)
        Interval-average facility series (W, K, dimensionless), see docs/output_schema.md.
    cdu : dict of str -> ndarray (n_intervals, n_cdus)
        Interval-average per-CDU series.
    totals : dict of str -> float
        Energies [J] integrated exactly over the whole run (from the step averages, not the output intervals).
    summary : dict of str -> float
        Headline metrics (see :mod:`scheduler_sim.metrics`).
    info : dict
        Counts and notes: excluded jobs, delayed replays, prefill size, idle energy, wall time ...
    units : dict of str -> str
        Units of series whose name carries no unit suffix (the cooling plant's outputs).
    """

    jobs: pd.DataFrame
    time_s: np.ndarray
    facility: dict[str, np.ndarray]
    cdu: dict[str, np.ndarray]
    totals: dict[str, float]
    summary: dict[str, float]
    info: dict = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)


class Simulation:
    """Event-driven replay of a job table on a system, with power chain and cooling plant.

    Parameters
    ----------
    jobs : pandas.DataFrame
        Canonical job table (:mod:`jobs.table`); times relative to the trace origin [s].
    system : power.System
        Platform description (nodes, racks, CDUs, power parameters).
    policy : str
        Policy name (:data:`scheduler_sim.policies.POLICIES`).
    window_start_s, window_s : float
        Window ``[window_start_s, window_start_s + window_s)`` of submissions to simulate [s].
    plant : object or None
        A cooling plant with ``initialize(heat_w, T_wb_K)``, ``run(heat_w (m, n_cdu), T_wb_K (m,)) -> (m, n_out)``,
        ``output_names``, ``output_units``; None disables cooling (cooling power is then not modelled).
    wet_bulb_K : callable(ndarray t_s) -> ndarray
        Wet-bulb temperature [K] at simulation times ``t_s`` (only used with a plant).
    step_s : float
        Cooling communication step [s].
    interval_s : float
        Output interval [s], a whole multiple of ``step_s``.
    default_walltime_s : float
        Estimate for jobs without a requested time [s].
    progress : bool
        Show a tqdm progress bar over simulated time.
    downtimes : list of (start_s, end_s, node indices)
        Nodes out of service during ``[start_s, end_s)`` (maintenance, drain). A job running on a node that goes
        down is killed (outcome ``KILLED_NODE_DOWN``); down nodes are never allocated and draw idle power.

    Raises
    ------
    ValueError
        For an unknown policy, an interval that is not a whole number of steps, or an empty window.
    """

    def __init__(self, jobs: pd.DataFrame, system, policy: str = "easy", *, window_start_s: float = 0.0,
                 window_s: float = 30 * DAY_S, plant=None, wet_bulb_K=None, step_s: float = 15.0,
                 interval_s: float = 60.0, default_walltime_s: float = DAY_S, progress: bool = False,
                 downtimes: list[tuple[float, float, np.ndarray]] = ()) -> None:
        from power import PowerChain, node_power_w

        self.system = system
        self.policy = make_policy(policy)
        self.chain = PowerChain(system)
        self.plant = plant
        self.wet_bulb_K = wet_bulb_K
        self.step_s = float(step_s)
        ratio = interval_s / step_s
        if abs(ratio - round(ratio)) > 1e-9 or round(ratio) < 1:
            raise ValueError(f"interval_s={interval_s} must be a whole multiple of step_s={step_s}")
        self.ratio = int(round(ratio))
        self.interval_s = float(interval_s)
        self.progress = progress
        self.t0 = float(window_start_s)
        self.t1 = float(window_start_s + window_s)
        self.default_walltime_s = float(default_walltime_s)
        self.info: dict = {}
        self.downtimes = []
        for (a, b, nodes) in downtimes:
            nodes = np.unique(np.asarray(nodes, dtype=np.int64))
            if not (b > a):
                raise ValueError(f"downtime end {b} s must be after its start {a} s")
            if nodes.size == 0 or nodes.min() < 0 or nodes.max() >= system.n_nodes:
                raise ValueError(f"downtime nodes must lie in 0..{system.n_nodes - 1}")
            self.downtimes.append((float(a), float(b), nodes))
        self._node_power_w = node_power_w
        self._prepare_jobs(jobs)

    # ------------------------------------------------------------------ job preparation
    def _prepare_jobs(self, table: pd.DataFrame) -> None:
        t0, t1 = self.t0, self.t1
        sub = table["submit_time_s"].to_numpy(float)
        rs = table["start_time_s"].to_numpy(float)
        re_ = table["end_time_s"].to_numpy(float)
        in_window = (sub >= t0) & (sub < t1)
        running_at_t0 = (sub < t0) & (rs < t0) & (re_ > t0)
        waiting_at_t0 = (sub < t0) & ~(rs < t0) & ~(re_ <= t0) & ~np.isnan(rs)
        keep = in_window | running_at_t0 | waiting_at_t0
        df = table.loc[keep].reset_index(drop=True)
        prefilled = running_at_t0[keep]
        n_nodes = self.system.n_nodes

        bad_runtime = df["runtime_s"].isna().to_numpy()
        too_big = (df["nodes"].to_numpy() > n_nodes)
        excluded = bad_runtime | too_big
        self.info["jobs_in_window"] = int(in_window.sum())
        self.info["jobs_prefilled"] = int((prefilled & ~excluded).sum())
        self.info["jobs_carried_in_queue"] = int(waiting_at_t0[keep].sum())
        self.info["jobs_excluded_unknown_runtime"] = int(bad_runtime.sum())
        self.info["jobs_excluded_larger_than_machine"] = int((too_big & ~bad_runtime).sum())
        self.info["excluded_job_ids"] = [int(x) for x in df.loc[excluded, "job_id"].to_numpy()[:50]]
        df = df.loc[~excluded].reset_index(drop=True)
        prefilled = prefilled[~excluded]
        if len(df) == 0:
            raise ValueError(f"no job to simulate in the window [{t0 / DAY_S:g}, {t1 / DAY_S:g}) days of the trace")
        self.jobs = df
        n = len(df)
        self.n_jobs = n
        self.nodes = df["nodes"].to_numpy(np.int64)
        self.submit = df["submit_time_s"].to_numpy(float)
        req = df["requested_walltime_s"].to_numpy(float)
        self.has_limit = np.isfinite(req)
        self.estimate = np.where(self.has_limit, req, self.default_walltime_s)
        self.runtime = df["runtime_s"].to_numpy(float)
        self.recorded_start = df["start_time_s"].to_numpy(float)
        self.recorded_end = df["end_time_s"].to_numpy(float)
        self.prefilled = prefilled
        self.info["jobs_without_requested_time"] = int((~self.has_limit).sum())
        cpu = df["cpu_util"].to_numpy(float)
        gpu = df["gpu_util"].to_numpy(float)
        cpu = np.where(np.isnan(cpu), self.system.default_cpu_util, cpu)
        gpu = np.where(np.isnan(gpu), self.system.default_gpu_util, gpu)
        self.cpu_util, self.gpu_util = cpu, gpu
        self.job_node_power = self._node_power_w(cpu, gpu, self.system.node)  # (n_jobs,) W per node
        self.idle_node_power = float(self._node_power_w(0.0, 0.0, self.system.node))

        self.start = np.full(n, np.nan)
        self.end = np.full(n, np.nan)
        self.outcome = np.zeros(n, dtype=np.int8)
        self._outcome_if_ends = np.full(n, JobOutcome.COMPLETED, dtype=np.int8)
        self._scheduled_end = np.full(n, np.nan)
        self.job_nodes: list[np.ndarray | None] = [None] * n

    # ------------------------------------------------------------------ helpers
    def _view(self) -> SchedulerView:
        return SchedulerView(
            now_s=self.env.now, queue=self.queue, free_nodes=self.alloc.n_free, nodes=self.nodes,
            estimate_s=self.estimate, submit_s=self.submit, recorded_start_s=self.recorded_start,
            running=list(self.running), start_s=self.start,
        )

    def _start(self, j: int, now: float, duration: float) -> None:
        nodes = self.alloc.allocate(j, int(self.nodes[j]))
        self.job_nodes[j] = nodes
        self.node_dc[nodes] = self.job_node_power[j]
        # rack-input power attributed to the job's nodes (power.PowerChain.node_it_input_w: exact when the
        # conversion stages are affine, the default; with an I^2R term it is evaluated at the job's start)
        self.job_it_power[j] = float(self.chain.node_it_input_w(self.node_dc)[nodes].sum())
        if not self.prefilled[j]:
            self.start[j] = now
        else:
            self.start[j] = self.recorded_start[j]
        self._running_since[j] = now
        self.running[j] = None
        end = now + duration
        self._scheduled_end[j] = end
        self.env.schedule(end, EventKind.JOB_END, (j, end))
        self._power_dirty = True

    def _finish(self, j: int, now: float, outcome: int) -> None:
        nodes = self.job_nodes[j]
        self.alloc.release(j, nodes)
        self.node_dc[nodes] = self.idle_node_power
        dt = now - self._running_since[j]
        self.energy_dc[j] += self.job_node_power[j] * nodes.size * dt
        self.energy_it[j] += self.job_it_power[j] * dt
        self.end[j] = now
        self.outcome[j] = outcome
        del self.running[j]
        self._power_dirty = True

    def _run_duration(self, j: int) -> tuple[float, int]:
        """Simulated run time of job ``j`` [s] and its outcome if it runs to that time."""
        rt = float(self.runtime[j])
        if self.policy.kills_at_walltime and self.has_limit[j] and rt > self.estimate[j]:
            return float(self.estimate[j]), JobOutcome.KILLED_WALLTIME
        return rt, JobOutcome.COMPLETED

    def _state_vector(self) -> np.ndarray:
        """The step-function value after this timestamp: CDU heat, power totals, scheduler counts."""
        v = self._vec
        nc = self.system.n_cdus
        if self._power_dirty:
            st = self.chain.evaluate(self.node_dc)
            v[:nc] = st.cdu_heat_W
            v[nc:nc + 5] = (st.node_dc_W, st.sivoc_loss_W, st.rectifier_loss_W, st.rack_overhead_W, st.it_input_W)
            idle = self.alloc.owner < 0
            self._idle_dc_W = float(self.node_dc[idle].sum())
            self._idle_it_W = float(self.chain.node_it_input_w(self.node_dc)[idle].sum())
            self._power_dirty = False
        v[nc + 5] = float(np.count_nonzero(self.alloc.owner >= 0))
        v[nc + 6] = len(self.running)
        v[nc + 7] = len(self.queue)
        v[nc + 8] = float(np.count_nonzero(self.alloc.down))
        return v

    # ------------------------------------------------------------------ cooling coupling
    def _emit(self, k0: int, block: np.ndarray) -> None:
        """Receive completed cooling steps ``k0..k0+m-1`` (averages of the state vector) and step the plant."""
        m = block.shape[0]
        nc = self.system.n_cdus
        self._step_sums += block.sum(axis=0) * self.step_s
        if self.plant is not None:
            t_mid = self.t0 + (np.arange(k0, k0 + m) + 0.5) * self.step_s
            twb = np.asarray(self.wet_bulb_K(t_mid), dtype=float)
            heat = np.ascontiguousarray(block[:, :nc])
            if not self._plant_ready:
                init = self.plant.initialize(heat[0], float(twb[0]))
                self._plant_ready = True
                self._avg_pairs = _average_pairs(self.plant.output_names)
                self._last_totals = {e: float(init[ie]) for _, _, e, ie in self._avg_pairs}
            out = self.plant.run(heat, twb)
            # Power outputs sampled at the end of a step are replaced by their exact step averages where the
            # plant integrates them itself (a running energy total E_x: P_avg = dE / step).
            for name, ip, e, ie in self._avg_pairs:
                tot = out[:, ie]
                prev = np.concatenate(([self._last_totals[e]], tot[:-1]))
                out[:, ip] = (tot - prev) / self.step_s
                self._last_totals[e] = float(tot[-1])
            self.plant_state = out[-1]
            self._plant_sums += out.sum(axis=0) * self.step_s
            rows = np.concatenate([block, twb[:, None], out], axis=1)
        else:
            rows = block
        self.reducer.push(rows)
        if self._pbar is not None:
            self._pbar.update(m * self.step_s / 3600.0)

    # ------------------------------------------------------------------ main loop
    def run(self) -> SimulationResult:
        """Run the simulation to the end of the last job and return its results.

        Raises
        ------
        PolicyError
            If the policy returns a job that is not queued or does not fit.
        """
        wall0 = time.perf_counter()
        sysm = self.system
        n = self.n_jobs
        self.env = Environment(self.t0)
        self.alloc = NodeAllocator(sysm.n_nodes)
        self.node_dc = np.full(sysm.n_nodes, self.idle_node_power)
        self.queue: list[int] = []
        self.running: dict[int, None] = {}
        self._running_since = np.full(n, np.nan)
        self.energy_dc = np.zeros(n)
        self.energy_it = np.zeros(n)
        self.job_it_power = np.zeros(n)
        self._power_dirty = True
        nc = sysm.n_cdus
        n_state = nc + len(POWER_SERIES) + len(SCHEDULER_SERIES)
        self._vec = np.zeros(n_state)
        self._step_sums = np.zeros(n_state)
        n_plant = len(self.plant.output_names) if self.plant is not None else 0
        self._plant_sums = np.zeros(n_plant)
        self._plant_ready = False
        self.plant_state = None
        n_cols = n_state + (1 + n_plant if self.plant is not None else 0)
        self.reducer = IntervalReducer(self.ratio, n_cols)
        integ = StepIntegrator(self.t0, self.step_s, n_state, self._emit)
        self._pbar = None
        if self.progress:
            from tqdm import tqdm
            self._pbar = tqdm(total=(self.t1 - self.t0) / 3600.0, unit="h", desc="simulated", leave=False,
                              bar_format="{l_bar}{bar}| {n:.0f}/{total:.0f} h sim [{elapsed}<{remaining}]")

        # prefill: jobs running at t0, placed first in recorded-start order
        pre = np.flatnonzero(self.prefilled)
        pre = pre[np.argsort(self.recorded_start[pre], kind="stable")]
        n_pre_failed = 0
        for j in pre:
            if self.nodes[j] > self.alloc.n_free:
                n_pre_failed += 1  # the machine is smaller than the site's; queue it instead
                self.prefilled[j] = False
                self.env.schedule(self.t0, EventKind.JOB_SUBMIT, j)
                continue
            self._start(int(j), self.t0, float(self.recorded_end[j] - self.t0))
        self.info["prefill_queued_for_lack_of_nodes"] = n_pre_failed
        order = np.lexsort((np.arange(n), self.submit))
        for j in order:
            if not self.prefilled[j]:
                self.env.schedule(max(self.submit[j], self.t0), EventKind.JOB_SUBMIT, int(j))

        for a, b, nodes in self.downtimes:
            self.env.schedule(max(a, self.t0), EventKind.NODE_DOWN, nodes)
            self.env.schedule(max(b, self.t0), EventKind.NODE_UP, nodes)
        idle_energy_dc = 0.0
        idle_energy_it = 0.0
        t_last = self.t0
        n_events = 0
        n_passes = 0
        n_late_replay = 0
        env = self.env
        while len(env):
            t = env.peek_time()
            # integrate the step function up to t (this may step the cooling plant)
            integ.set(self._state_vector())
            integ.advance(t)
            idle_energy_dc += self._idle_dc_W * (t - t_last)
            idle_energy_it += self._idle_it_W * (t - t_last)
            t_last = t
            batch = env.pop_batch()
            n_events += len(batch)
            for kind, payload in batch:
                if kind is EventKind.JOB_END:
                    j, t_end = payload
                    if j in self.running and t_end == self._scheduled_end[j]:  # else stale (job was killed)
                        self._finish(j, t, int(self._outcome_if_ends[j]))
                elif kind is EventKind.JOB_SUBMIT:
                    self.queue.append(payload)
                    wt = self.policy.wakeup_time(payload, self._view())
                    if wt is not None:
                        env.schedule(wt, EventKind.WAKEUP, None)
                elif kind is EventKind.NODE_DOWN:
                    for j in self.alloc.set_down(payload):
                        self._finish(int(j), t, JobOutcome.KILLED_NODE_DOWN)
                elif kind is EventKind.NODE_UP:
                    self.alloc.set_up(payload)
            # one scheduling pass per timestamp, after every event of that timestamp
            if self.queue and self.alloc.n_free > 0:
                n_passes += 1
                decisions = self.policy.schedule(self._view())
                if decisions:
                    self._apply(decisions, t)
                    if self.policy.name == "replay":
                        n_late_replay += sum(1 for j in decisions
                                             if math.isfinite(self.recorded_start[j]) and self.recorded_start[j] < t)

        # pad with idle time to a whole output interval (at least one)
        t_end = env.now
        n_int = max(1, math.ceil((t_end - self.t0) / self.interval_s - 1e-12))
        t_final = self.t0 + n_int * self.interval_s
        integ.set(self._state_vector())
        integ.advance(t_final)
        idle_energy_dc += self._idle_dc_W * (t_final - t_last)
        idle_energy_it += self._idle_it_W * (t_final - t_last)
        if self._pbar is not None:
            self._pbar.close()

        not_run = np.isnan(self.start)
        self.info.update({
            "events": n_events, "scheduling_passes": n_passes, "replay_started_late": n_late_replay,
            "jobs_not_run": int(not_run.sum()), "t_end_s": t_end, "t_final_s": t_final,
            "cooling_steps": integ.steps_done, "wall_time_s": time.perf_counter() - wall0,
        })
        return self._result(idle_energy_dc, idle_energy_it)

    def _apply(self, decisions: list[int], now: float) -> None:
        queued = set(self.queue)
        need = 0
        for j in decisions:
            if j not in queued:
                raise PolicyError(f"policy {self.policy.name!r} started job index {j} which is not queued at t={now}")
            need += int(self.nodes[j])
        if need > self.alloc.n_free:
            raise PolicyError(f"policy {self.policy.name!r} asked for {need} nodes at t={now} but only "
                              f"{self.alloc.n_free} are free")
        started = set(decisions)
        self.queue = [j for j in self.queue if j not in started]
        for j in decisions:
            duration, outcome = self._run_duration(j)
            self._outcome_if_ends[j] = outcome
            self._start(j, now, duration)

    # ------------------------------------------------------------------ results
    def _result(self, idle_energy_dc: float, idle_energy_it: float) -> SimulationResult:
        from . import metrics

        sysm = self.system
        nc = sysm.n_cdus
        rows = self.reducer.finish()
        n_int = rows.shape[0]
        time_s = self.t0 + np.arange(n_int) * self.interval_s
        facility: dict[str, np.ndarray] = {}
        cdu: dict[str, np.ndarray] = {"Q_flow_W": rows[:, :nc]}
        units: dict[str, str] = {}
        for i, name in enumerate(POWER_SERIES):
            facility[name] = rows[:, nc + i]
        off = nc + len(POWER_SERIES)
        for i, name in enumerate(SCHEDULER_SERIES):
            facility[name] = rows[:, off + i]
        s = self._step_sums
        totals = {
            "E_node_dc_J": float(s[nc + 0]), "E_sivoc_loss_J": float(s[nc + 1]),
            "E_rectifier_loss_J": float(s[nc + 2]), "E_rack_overhead_J": float(s[nc + 3]),
            "E_it_J": float(s[nc + 4]), "E_cdu_heat_J": float(s[:nc].sum()),
            "E_idle_node_dc_J": idle_energy_dc, "E_idle_node_it_J": idle_energy_it,
            "duration_s": float(self.info["t_final_s"] - self.t0),
        }
        if self.plant is not None:
            off2 = off + len(SCHEDULER_SERIES)
            facility["T_wb_K"] = rows[:, off2]
            for i, name in enumerate(self.plant.output_names):
                base = _cdu_series_name(name)
                units[base or name] = self.plant.output_units[i]
                if base is None and i != self.plant.P_cooling_index:  # that one is P_cooling_W below
                    facility[name] = rows[:, off2 + 1 + i]
            for base, idx in _group_cdu_columns(self.plant.output_names).items():
                cdu[base] = rows[:, [off2 + 1 + i for i in idx]]
            pi = self.plant.P_cooling_index
            totals["E_cooling_J"] = float(self._plant_sums[pi])
            facility["P_cooling_W"] = rows[:, off2 + 1 + pi]
        else:
            totals["E_cooling_J"] = 0.0
            facility["P_cooling_W"] = np.zeros(n_int)
        facility["P_facility_W"] = facility["P_it_W"] + facility["P_cooling_W"]
        with np.errstate(invalid="ignore", divide="ignore"):
            facility["PUE"] = facility["P_facility_W"] / facility["P_it_W"]
        totals["E_facility_J"] = totals["E_it_J"] + totals["E_cooling_J"]

        jobs = self.jobs.copy()
        jobs["sim_start_s"] = self.start
        jobs["sim_end_s"] = self.end
        jobs["outcome"] = self.outcome
        jobs["prefilled"] = self.prefilled
        jobs["node_power_W"] = self.job_node_power
        jobs["energy_dc_J"] = self.energy_dc
        jobs["energy_it_J"] = self.energy_it
        jobs = metrics.add_job_metrics(jobs)
        summary = metrics.summarize(jobs, totals, facility, n_nodes=sysm.n_nodes, t0=self.t0,
                                    cooling=self.plant is not None)
        return SimulationResult(jobs=jobs, time_s=time_s, facility=facility, cdu=cdu, totals=totals,
                                summary=summary, info=dict(self.info), units=units)


#: Plant power outputs and the running energy totals the plant integrates them into (when it has them).
_AVERAGED_BY_TOTAL = {"P_cooling": "E_cooling_out", "Q_flow_tower": "E_tower_out", "Q_flow_chiller": "E_chiller_out",
                      "P_fan_tower": "E_fan_out", "m_flow_makeup": "M_makeup_out"}


def _average_pairs(names: list[str]) -> list[tuple[str, int, str, int]]:
    """(power name, its index, total name, its index) for each power output whose running total exists."""
    return [(p, names.index(p), e, names.index(e)) for p, e in _AVERAGED_BY_TOTAL.items()
            if p in names and e in names]


def _cdu_series_name(name: str) -> str | None:
    """``'T_supply_K[3]'`` -> ``'T_supply_K'``; plant-level names -> None."""
    return name.split("[", 1)[0] if name.endswith("]") and "[" in name else None


def _group_cdu_columns(names: list[str]) -> dict[str, list[int]]:
    groups: dict[str, list[tuple[int, int]]] = {}
    for i, nm in enumerate(names):
        base = _cdu_series_name(nm)
        if base is not None:
            idx = int(nm[nm.index("[") + 1:-1])
            groups.setdefault(base, []).append((idx, i))
    return {b: [i for _, i in sorted(v)] for b, v in groups.items()}
