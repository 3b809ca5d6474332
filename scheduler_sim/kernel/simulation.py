"""The platform: jobs on nodes, driven by events, feeding the power chain and the cooling plant.

One :class:`Simulation` replays a job table on a :class:`power.System` under one policy:

* the event kernel (:mod:`scheduler_sim.kernel.core`) orders submissions, ends, walltime kills and node changes;
* the policy (:mod:`scheduler_sim.policies`) decides which queued jobs start at each timestamp;
* node DC power is a step function that changes only at events; the power chain (:class:`power.PowerChain`) turns
  it into SIVOC / rectifier losses, IT input power and heat per CDU at each change;
* :class:`scheduler_sim.kernel.recorder.StepIntegrator` averages that step function exactly over each cooling
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

import bisect
import copy
import math
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from cooling_fmu.coupling import Plant, PlantError, StepAverager, cdu_series_name, group_cdu_columns, supply_rise_K_per_W
from power import PowerChain, node_power_w

from ..policies import BasePolicy, PolicyError, SchedulerView, make_policy
from ..policies.replay import Replay
from . import metrics
from .allocator import FREE, NodeAllocator
from .availability import known_availability
from .core import Environment, EventKind
from .progress import RunProgress
from .recorder import IntervalReducer, StepIntegrator

__all__ = ["Simulation", "SimulationResult", "JobOutcome", "NodePowerProfile", "SCHEDULER_SERIES", "POWER_SERIES"]

DAY_S = 86400.0

#: Names of the power series carried by the step integrator (facility totals) [W].
POWER_SERIES = ("P_node_dc_W", "P_sivoc_loss_W", "P_rectifier_loss_W", "P_rack_overhead_W", "P_it_W")
#: Names of the scheduler-state series (time averages over each step) [1].
SCHEDULER_SERIES = ("busy_nodes", "running_jobs", "queued_jobs", "down_nodes")


class _PlantFailed(RuntimeError):
    """The cooling plant failed a step at ``t_s``; the run stops and keeps what was completed."""

    def __init__(self, cause: Exception, t_s: float) -> None:
        super().__init__(f"cooling plant failed at t = {t_s:.0f} s: {cause}")
        self.cause = cause
        self.t_s = t_s


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
    REJECTED_POWER_CAP = 4
    """Never started: even on an otherwise idle machine it would exceed every facility power budget still to come."""
    CUT_AT_HORIZON = 5
    """Still running at the run horizon (window end + ``max_drain_s``): ended there, its energy counted up to it."""


@dataclass(frozen=True)
class NodePowerProfile:
    """Piecewise-constant DC power of a partition of nodes that the batch scheduler does not manage.

    Used for co-location: e.g. an LLM-serving partition simulated by its own engine, whose node power then flows
    through the same conversion losses, CDU heat and cooling plant as the batch jobs.

    Attributes
    ----------
    nodes : ndarray of int64, shape (m,)
        Node indices of the partition (unique, within the system); they are never given to batch jobs.
    t_s : ndarray of float64, shape (k,)
        Times at which the partition's power changes [s] (strictly increasing, simulation time).
    P_W : ndarray of float64, shape (k, m)
        DC power of each partition node from ``t_s[i]`` until ``t_s[i+1]`` (the last row holds to the end) [W].
        Before ``t_s[0]`` the nodes draw idle power.
    label : str
        Name of the partition (reported).
    """

    nodes: np.ndarray
    t_s: np.ndarray
    P_W: np.ndarray
    label: str = "partition"

    def __post_init__(self) -> None:
        nodes = np.asarray(self.nodes, dtype=np.int64)
        t = np.asarray(self.t_s, dtype=float)
        P = np.asarray(self.P_W, dtype=float)
        if nodes.ndim != 1 or nodes.size == 0 or np.unique(nodes).size != nodes.size:
            raise ValueError("NodePowerProfile.nodes must be a non-empty 1-D array of unique node indices")
        if t.ndim != 1 or t.size == 0 or np.any(np.diff(t) <= 0) or not np.all(np.isfinite(t)):
            raise ValueError("NodePowerProfile.t_s must be a non-empty, finite, strictly increasing 1-D array")
        if P.shape != (t.size, nodes.size) or not np.all(np.isfinite(P)) or np.any(P < 0):
            raise ValueError(f"NodePowerProfile.P_W must have shape {(t.size, nodes.size)} with finite values >= 0")
        object.__setattr__(self, "nodes", nodes)
        object.__setattr__(self, "t_s", t)
        object.__setattr__(self, "P_W", P)


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
        Headline metrics (see :mod:`scheduler_sim.kernel.metrics`).
    info : dict
        Counts and notes: excluded jobs, delayed replays, prefill size, idle energy, wall time ...
    units : dict of str -> str
        Units of series whose name carries no unit suffix (the cooling plant's outputs).
    rack : dict of str -> ndarray (n_intervals, n_racks)
        Interval-average per-rack series (``P_in_W``: rack input power).
    job_cdu_it_W : ndarray, shape (n_jobs, n_cdus)
        Rack-input power of each job in each CDU while it runs [W] (rows sum to the job's IT power), for
        attributing CDU heat and cooling energy to jobs.
    allocations : dict of str -> ndarray (n_runs,)
        Every run attempt of every job as runs of consecutive nodes within one CDU: ``job_id``, ``start_s``,
        ``end_s``, ``node_first``, ``node_count``, ``cdu``, ``it_power_W`` (rack-input power of those nodes during
        the attempt; its mean when the job's power varied). A job on nodes 0-3 and 8 has two rows per attempt.
        Node occupancy (Gantt charts, double-booking checks) and attribution are exact from this table.
    """

    jobs: pd.DataFrame
    time_s: np.ndarray
    facility: dict[str, np.ndarray]
    cdu: dict[str, np.ndarray]
    totals: dict[str, float]
    summary: dict[str, float]
    info: dict = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)
    rack: dict[str, np.ndarray] = field(default_factory=dict)
    job_cdu_it_W: np.ndarray | None = None
    allocations: dict[str, np.ndarray] = field(default_factory=dict)


class Simulation:
    """Event-driven replay of a job table on a system, with power chain and cooling plant.

    Parameters
    ----------
    jobs : pandas.DataFrame
        Canonical job table (:mod:`jobs.table`); times relative to the trace origin [s].
    system : power.System
        Platform description (nodes, racks, CDUs, power parameters).
    window_start_s, window_s : float
        Window ``[window_start_s, window_start_s + window_s)`` of submissions to simulate [s].
    plant : cooling_fmu.coupling.Plant or None
        The cooling plant (the :class:`~cooling_fmu.coupling.Plant` protocol); None disables cooling (cooling power
        is then not modelled). A :class:`~cooling_fmu.coupling.PlantError` from a step stops the run with the
        completed steps kept (``info["complete"] = False``).
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
        Nodes out of service during ``[start_s, end_s)`` (maintenance). A 4th element ``True`` makes it a
        *drain*: running jobs finish, but no job starts on those nodes. Otherwise a job running on a node that
        goes down is killed (outcome ``KILLED_NODE_DOWN``). Down nodes are never allocated and draw idle power.
    policy : str or BasePolicy
        Policy name (``replay``, an order such as ``fcfs`` / ``sjf`` / ``priority``, or a shorthand ``easy`` /
        ``conservative``; see :func:`scheduler_sim.policies.make_policy`) or a policy instance.
    backfill : str or None
        Backfill strategy for an order policy (``none``, ``easy``, ``easy-bestfit``, ``conservative``,
        ``firstfit``).
    policy_params : dict or None
        Parameters of the order (e.g. multi-factor priority weights).
    power_cap : list of (t_s, cap_W)
        Facility power budget schedule: from ``t_s`` on, the budget is ``cap_W`` [W] (``inf`` = none). A job is
        never started if the predicted facility power (IT with losses of every node, plus
        ``cooling_estimate`` x IT) would exceed the budget in force. Running jobs are never stopped.
    cooling_estimate : float
        Cooling power per watt of IT power used for the cap prediction, before the plant reports (then the
        plant's last step ratio is used).
    placement : {"lowest", "spread", "pack"}
        Node choice: lowest free indices; ``spread`` takes nodes from the CDU with the largest margin first
        (plant's CDU supply temperature below its highest, else the least heat) to even out heat; ``pack`` from
        the most loaded CDU first (concentrates heat).
    failures : ndarray of shape (k, 3) or None
        Node failures ``(t_down_s, t_up_s, node)``; see :func:`scheduler_sim.kernel.faults.sample_failures`.
    on_failure : {"requeue", "end"}
        What happens to a job killed by a node failure: back to the queue (restarting from scratch, keeping its
        submit time), or ended (outcome ``KILLED_NODE_DOWN``). Lost node-seconds and energy are reported.
    max_drain_s : float
        The run stops at the horizon ``window end + max_drain_s`` [s] (rounded up to a whole output interval) even
        if jobs remain: jobs still running there end there with outcome ``CUT_AT_HORIZON`` (their energy, and the
        run's, stops there; counted in ``info["jobs_cut_at_horizon"]`` and the summary), queued jobs are reported
        as never started, and ``info["stopped_at_horizon_s"]`` is set.
    job_power_profiles : pandas.DataFrame or None
        Measured node-power time series of jobs (columns ``job_id``, ``t_offset_s`` [s from the job's start],
        ``node_power_W`` [W per node]), used with ``use_measured_power``: a profiled job's nodes follow its samples
        (each holds until the next; the first holds from the start), so its energy is the integral of the series.
    share_entity : {"account", "user"}
        Who fair-share usage and account bonuses are charged to: the account (else the user when the trace has
        no account), or the user.
    warmup_s : float
        Warm-up excluded from ``utilisation_measured`` (measured over ``[t0 + warmup_s, window end)``, so the
        drain after the last submission is excluded too) [s].
    record_reservations : bool
        Keep the policy's reservations after every pass in :attr:`reservation_log` (for validation).
    partition : NodePowerProfile or None
        Nodes reserved for a co-located partition with its own power profile (e.g. LLM serving).
    on_implausible : {"warn", "stop"}
        What happens when a plant output leaves its physical bounds (liquid water between freezing and boiling,
        positive approach temperatures; :mod:`cooling_fmu.plausibility`): ``warn`` finishes the run, records every
        bound left in ``info["plant_out_of_bounds"]`` and adds a warning (the CLI then exits 1); ``stop`` ends the
        run after the first step out of bounds, like a plant failure (partial results, ``complete`` False).
    use_measured_power : bool
        Use the job table's ``measured_node_power_W`` column (per-node mean DC power from telemetry) where it is
        finite, instead of the utilisation model; counts are reported in ``info``.

    Raises
    ------
    ValueError
        For an unknown policy, an interval that is not a whole number of steps, or an empty window.
    """

    def __init__(self, jobs: pd.DataFrame, system, policy="easy", *, backfill: str | None = None,
                 policy_params: dict | None = None, window_start_s: float = 0.0,
                 window_s: float = 30 * DAY_S, plant: Plant | None = None, wet_bulb_K=None, step_s: float = 15.0,
                 interval_s: float = 60.0, default_walltime_s: float = DAY_S, progress: bool = False,
                 downtimes: list[tuple] = (),
                 partition: NodePowerProfile | None = None, use_measured_power: bool = False,
                 power_cap: list[tuple[float, float]] = (), cooling_estimate: float = 0.05,
                 placement: str = "lowest", failures: np.ndarray | None = None,
                 on_failure: str = "requeue", record_reservations: bool = False,
                 warmup_s: float = 0.0, share_entity: str = "account",
                 job_power_profiles: pd.DataFrame | None = None, max_drain_s: float = 365 * DAY_S,
                 on_implausible: str = "warn") -> None:
        self.system = system
        self.policy = policy if isinstance(policy, BasePolicy) else make_policy(policy, backfill,
                                                                                 **(policy_params or {}))
        self.chain = PowerChain(system)
        from power.facility import FacilityOverheads

        self.overheads = FacilityOverheads(system.facility, system.liquid_fraction)
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
        for d in downtimes:
            a, b, nodes = d[:3]
            drain = bool(d[3]) if len(d) > 3 else False
            nodes = np.unique(np.asarray(nodes, dtype=np.int64))
            if not (b > a):
                raise ValueError(f"downtime end {b} s must be after its start {a} s")
            if nodes.size == 0 or nodes.min() < 0 or nodes.max() >= system.n_nodes:
                raise ValueError(f"downtime nodes must lie in 0..{system.n_nodes - 1}")
            self.downtimes.append((float(a), float(b), nodes, drain))
        if placement not in ("lowest", "spread", "pack"):
            raise ValueError(f"placement must be 'lowest', 'spread' or 'pack', got {placement!r}")
        if on_implausible not in ("warn", "stop"):
            raise ValueError(f"on_implausible must be 'warn' or 'stop', got {on_implausible!r}")
        self.on_implausible = on_implausible
        if on_failure not in ("requeue", "end"):
            raise ValueError(f"on_failure must be 'requeue' or 'end', got {on_failure!r}")
        self.placement = placement
        self.on_failure = on_failure
        self.failures = np.zeros((0, 3)) if failures is None else np.asarray(failures, dtype=float).reshape(-1, 3)
        cap = sorted((float(t), float(w)) for t, w in power_cap)
        if any(not (w > 0) for _, w in cap):
            raise ValueError("power_cap values must be > 0 W")
        self.power_cap = cap
        self.cooling_estimate = float(cooling_estimate)
        self.record_reservations = bool(record_reservations)
        if not max_drain_s > 0:
            raise ValueError(f"max_drain_s must be > 0, got {max_drain_s}")
        self.horizon_s = self._horizon(self.t1 + float(max_drain_s))
        self.warmup_s = float(warmup_s)
        self.reservation_log: list[tuple[float, dict[int, float]]] = []
        self._node_power_w = node_power_w
        if share_entity not in ("account", "user"):
            raise ValueError(f"share_entity must be 'account' or 'user', got {share_entity!r}")
        self.share_entity = share_entity
        self.partition = partition
        self.use_measured_power = bool(use_measured_power)
        self._profiles_table = job_power_profiles if use_measured_power else None
        if partition is not None and partition.nodes.max() >= system.n_nodes:
            raise ValueError(f"partition node {int(partition.nodes.max())} outside 0..{system.n_nodes - 1}")
        if partition is not None:
            pn = set(partition.nodes.tolist())
            for a_, b_, nodes_, _ in self.downtimes:
                if pn.intersection(nodes_.tolist()):
                    raise ValueError("a downtime covers nodes of the co-located partition; its engine does not model "
                                     "down nodes: give downtimes for batch nodes only")
            if len(self.failures):  # the partition's own engine does not see failures: sample them on batch nodes
                keep = ~np.isin(self.failures[:, 2].astype(np.int64), partition.nodes)
                self.info["failures_on_partition_ignored"] = int((~keep).sum())
                self.failures = self.failures[keep]
        self._prepare_jobs(jobs)
        self.policy.attach(self)  # a policy that looks ahead (the twin in the loop) forks this platform

    def _horizon(self, t_s: float) -> float:
        """The run horizon: ``t_s`` rounded up to a whole output interval (integer step count from ``t0``) [s].

        The run never goes past it: running jobs are cut there (``CUT_AT_HORIZON``), and since it lies on an
        interval boundary no idle padding is added after it, so energy stops exactly there.
        """
        steps = StepIntegrator(self.t0, self.step_s, 0, lambda k, block: None)
        return steps.boundary(steps.first_boundary_at_or_after(t_s, self.ratio))

    def _cut_at_horizon(self, t: float) -> None:
        """End every running job at the horizon ``t`` (outcome ``CUT_AT_HORIZON``, energy counted up to ``t``)."""
        cut = list(self.running)
        for j in cut:
            self._finish(j, t, JobOutcome.CUT_AT_HORIZON)
        self.info["stopped_at_horizon_s"] = float(t)
        self.info["jobs_cut_at_horizon"] = len(cut)

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
        n_nodes = self.system.n_nodes - (self.partition.nodes.size if self.partition is not None else 0)

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
        if len(df) == 0 and self.partition is None:  # with a partition, a run without batch jobs is legal
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
        if "node_power_set_W" in df.columns:  # a job's fixed mean node power (periodic profiles of #15)
            setp = df["node_power_set_W"].to_numpy(float)
            self.job_node_power = np.where(np.isfinite(setp), setp, self.job_node_power)
        self.job_node_power_model = self.job_node_power.copy()
        if self.use_measured_power:
            if "measured_node_power_W" not in df.columns:
                raise ValueError("use_measured_power is set but the trace has no measured_node_power_W column")
            meas = df["measured_node_power_W"].to_numpy(float)
            ok = np.isfinite(meas) & (meas >= 0)
            self.job_node_power = np.where(ok, meas, self.job_node_power)
            self.info["jobs_power_measured"] = int(ok.sum())
            self.info["jobs_power_modelled"] = int((~ok).sum())
        self.profiles: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        if self._profiles_table is not None and len(self._profiles_table):
            pt = self._profiles_table
            idx = pd.Series(np.arange(len(df)), index=df["job_id"].to_numpy())
            pt = pt.loc[pt["job_id"].isin(idx.index) & np.isfinite(pt["node_power_W"]) & (pt["node_power_W"] >= 0)
                        & (pt["t_offset_s"] >= 0)]
            for jid, g in pt.sort_values(["job_id", "t_offset_s"], kind="stable").groupby("job_id", sort=True):
                off = g["t_offset_s"].to_numpy(float)
                keep = np.r_[True, np.diff(off) > 0]
                self.profiles[int(idx[jid])] = (off[keep], g["node_power_W"].to_numpy(float)[keep])
            self.info["jobs_power_time_series"] = len(self.profiles)
        self.idle_node_power = float(self._node_power_w(0.0, 0.0, self.system.node))

        self._n_pool = int(n_nodes)
        # integer codes for fair-share (account, else user, else group '') and QoS (queue); 0 = unknown
        if self.share_entity == "user":
            acct = df["user"].astype(str)
        else:
            acct = df["account"].astype(str).where(df["account"].astype(str) != "", df["user"].astype(str))
        self.account_id = pd.factorize(acct.where(acct != "", "\0unknown"), sort=True)[0].astype(np.int64)
        self.queue_id = pd.factorize(df["queue"].astype(str), sort=True)[0].astype(np.int64)
        self.account_names = list(pd.factorize(acct.where(acct != "", "\0unknown"), sort=True)[1])
        self.queue_names = list(pd.factorize(df["queue"].astype(str), sort=True)[1])
        self.policy.bind(self.queue_names, self.account_names)
        # marginal rack-input power of starting a job (per-node affine chain: slope a = dP_in / dP_dc)
        p0 = np.full(self.system.n_nodes, self.idle_node_power)
        slope = (self.chain.node_it_input_w(p0 + 1.0) - self.chain.node_it_input_w(p0)).mean()
        self._job_marginal_it = self.nodes * slope * (self.job_node_power - self.idle_node_power)
        self._idle_it_all_W = float(self.chain.evaluate(p0).it_input_W)  # every node idle
        self.start = np.full(n, np.nan)
        self.end = np.full(n, np.nan)
        self.outcome = np.zeros(n, dtype=np.int8)
        self._outcome_if_ends = np.full(n, JobOutcome.COMPLETED, dtype=np.int8)
        self._scheduled_end = np.full(n, np.nan)
        # inputs shared by forks (see fork): read-only, so nothing can change them behind a fork's back
        for name in self._FORK_SHARED:
            arr = getattr(self, name, None)
            if isinstance(arr, np.ndarray):
                arr.setflags(write=False)

    # ------------------------------------------------------------------ helpers
    def _view(self) -> SchedulerView:
        headroom = math.inf
        power = None
        cap = self._cap_now()
        facility_W = math.nan
        if self.power_cap:  # a budget now or later: reservations need each job's power
            power = self._job_marginal_it * (1.0 + self._cooling_ratio())
            facility_W = self._predicted_facility_W()
            if math.isfinite(cap):
                headroom = cap - facility_W
        running = list(self.running)
        now = self.env.now
        return SchedulerView(
            now_s=now, queue=tuple(self.queue), free_nodes=self.alloc.n_free, nodes=self.nodes,
            estimate_s=self.estimate, submit_s=self.submit, recorded_start_s=self.recorded_start,
            running=tuple(running), start_s=self.start, n_nodes=self._n_pool,
            account_id=self.account_id, queue_id=self.queue_id, power_W=power, power_headroom_W=headroom,
            availability_fn=lambda: known_availability(
                now, self.alloc.owner, self.alloc.down_count, running, self.start, self.estimate,
                self.downtimes, power, facility_W, self.power_cap, self.nodes, self.alloc.n_free),
        )

    # ------------------------------------------------------------------ facility power cap
    def _cap_now(self) -> float:
        """Facility power budget in force now [W] (inf when none)."""
        cap = math.inf
        for t, w in self.power_cap:
            if t <= self.env.now:
                cap = w
            else:
                break
        return cap

    def _reject_beyond_cap(self) -> None:
        """Take out of the queue the jobs that no budget still to come could ever admit, even on an idle machine.

        Such a job would otherwise hold the head of the queue (and its reservation) for ever. Its outcome is
        ``REJECTED_POWER_CAP``; the count is reported as ``jobs_rejected_power_cap``.
        """
        now = self.env.now
        best_cap = max([w for t, w in self.power_cap if t > now] + [self._cap_now()])
        if not math.isfinite(best_cap):
            return
        ratio = self._cooling_ratio()
        floor_W = self._idle_it_all_W * (1.0 + ratio)
        need = self._job_marginal_it * (1.0 + ratio)
        out = [j for j in self.queue if floor_W + need[j] > best_cap]
        if out:
            gone = set(out)
            self.queue = [j for j in self.queue if j not in gone]
            for j in out:
                self.outcome[j] = JobOutcome.REJECTED_POWER_CAP
                self._jobs_left -= 1
            self.info["jobs_rejected_power_cap"] = self.info.get("jobs_rejected_power_cap", 0) + len(out)

    def _cooling_ratio(self) -> float:
        """Overhead power per IT watt for the cap prediction: (facility - IT) / IT of the plant's last step (liquid
        plant plus the facility overheads of :mod:`power.facility`), else the configured estimate.
        """
        if self.plant_state is not None and self._last_it_W > 0:
            return self._last_overhead_W / self._last_it_W
        return self.cooling_estimate

    def _predicted_facility_W(self) -> float:
        """Predicted facility power now [W]: IT (rack input, from the power chain) x (1 + cooling ratio)."""
        it = float(self.chain.evaluate(self.node_dc).it_input_W) if self._power_dirty else self._vec_it()
        return it * (1.0 + self._cooling_ratio())

    def _vec_it(self) -> float:
        return float(self._vec[self.system.n_cdus + 4])

    # ------------------------------------------------------------------ placement
    def _node_order(self) -> np.ndarray | None:
        """Preferred node order for the next allocation (None = lowest index first)."""
        if self.placement == "lowest":
            return None
        sysm = self.system
        nc = sysm.n_cdus
        heat_now = np.bincount(sysm.node_cdu, weights=self.chain.node_it_input_w(self.node_dc), minlength=nc)
        if self.plant_state is not None and self._i_T_sec_sup is not None and self._dT_per_W is not None:
            # margin: the plant's last CDU supply temperature, plus the rise the heat added since then will cause
            # (secondary loop: dT = dQ / (m_flow cp)); higher score = cooler = more margin
            T_pred = self.plant_state[self._i_T_sec_sup] + (heat_now - self._last_step_heat) * self._dT_per_W
            score = -T_pred
        else:
            score = -heat_now / np.bincount(sysm.node_cdu, minlength=nc)  # least heat per node first
        if self.placement == "pack":
            score = -score
        rank = np.empty(nc, dtype=np.int64)
        rank[np.argsort(-score, kind="stable")] = np.arange(nc)
        return np.lexsort((np.arange(self.system.n_nodes), rank[self.system.node_cdu]))

    def _start(self, j: int, now: float, duration: float) -> None:
        nodes = self.alloc.allocate(j, int(self.nodes[j]), self._node_order())
        self.job_nodes[j] = nodes
        prof = self.profiles.get(j)
        self._cur_node_power[j] = prof[1][0] if prof is not None else self.job_node_power[j]
        self.node_dc[nodes] = self._cur_node_power[j]
        self._power_since[j] = now
        self._attempt_energy0[j] = self.energy_dc[j]
        self._attempt_it0[j] = self.energy_it[j]
        if prof is not None:
            for k in range(1, prof[0].size):
                if prof[0][k] < duration:
                    self.env.schedule(now + prof[0][k], EventKind.JOB_POWER, (j, k, now))
        # rack-input power attributed to the job's nodes (power.PowerChain.node_it_input_w: exact when the
        # conversion stages are affine, the default; with an I^2R term it is evaluated at the job's start)
        shares = self.chain.node_it_input_w(self.node_dc)[nodes]
        self.job_it_power[j] = float(shares.sum())
        self.job_cdu_it_W[j] = np.bincount(self.system.node_cdu[nodes], weights=shares, minlength=self.system.n_cdus)
        self._attempt_shares[j] = shares
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

    def _accrue_job(self, j: int, now: float) -> None:
        """Add job ``j``'s energy since its last power change (its power is constant in between)."""
        dt = now - self._power_since[j]
        self.energy_dc[j] += self._cur_node_power[j] * self.job_nodes[j].size * dt
        self.energy_it[j] += self.job_it_power[j] * dt
        self._job_cdu_E[j] += self.job_cdu_it_W[j] * dt
        self._power_since[j] = now

    def _set_job_power(self, j: int, p_node_W: float) -> None:
        """Change a running job's node DC power (telemetry sample) and its attributed rack-input power."""
        nodes = self.job_nodes[j]
        self._cur_node_power[j] = p_node_W
        self.node_dc[nodes] = p_node_W
        shares = self.chain.node_it_input_w(self.node_dc)[nodes]
        self.job_it_power[j] = float(shares.sum())
        self.job_cdu_it_W[j] = np.bincount(self.system.node_cdu[nodes], weights=shares, minlength=self.system.n_cdus)
        self._power_dirty = True

    def _finish(self, j: int, now: float, outcome: int) -> None:
        self.policy.job_ended(j, self._view())
        self._accrue_job(j, now)
        nodes = self.job_nodes.pop(j)
        run = now - self._running_since[j]
        if j in self.profiles and run > 0:  # per-CDU power of a varying job: its mean over the attempt
            self.job_cdu_it_W[j] = self._job_cdu_E[j] / run
        self._job_cdu_E[j] = 0.0
        self.alloc.release(j, nodes)
        self.node_dc[nodes] = self.idle_node_power
        self.end[j] = now
        self.outcome[j] = outcome
        del self.running[j]
        # per-node rack-input power of this attempt (its mean when the power varied), for exact attribution
        shares = self._attempt_shares.pop(j)
        if j in self.profiles and run > 0 and shares.sum() > 0:
            shares = shares * ((self.energy_it[j] - self._attempt_it0[j]) / run / shares.sum())
        self._attempts.append((j, self._running_since[j], now, nodes, shares))
        self._power_dirty = True
        self._jobs_left -= 1

    def _kill(self, j: int, now: float) -> None:
        """Kill a job whose node went down: end it, or requeue it (``on_failure``), counting what was lost."""
        nodes = self.job_nodes[j]
        dt = now - self._running_since[j]
        self.lost_node_s[j] += nodes.size * dt
        self._finish(j, now, JobOutcome.KILLED_NODE_DOWN)
        self.lost_energy_dc[j] += self.energy_dc[j] - self._attempt_energy0[j]
        if self.on_failure == "requeue":
            self._jobs_left += 1
            self.n_requeues[j] += 1
            self.start[j] = self.end[j] = np.nan
            self.outcome[j] = JobOutcome.NOT_RUN
            self.prefilled[j] = False
            key = (self.submit[j], j)
            pos = bisect.bisect_left([(self.submit[q], q) for q in self.queue], key)
            self.queue.insert(pos, j)

    def _prefill_duration(self, j: int) -> tuple[float, int]:
        """Time a carried-in (prefilled) job still runs after ``t0`` [s], and its outcome when it gets there.

        Carried-in jobs obey the same wall-time rule as every other job (:meth:`_run_duration`): under a policy
        that kills at the requested time, a job whose recorded end lies past ``recorded start + requested time``
        is killed at that limit (``KILLED_WALLTIME``), even though the site let it run on. The duration is
        ``<= 0`` when the limit fell at or before ``t0``: the job is then recorded as killed at its limit and
        never occupies the window's nodes.
        """
        end = float(self.recorded_end[j])
        if self.policy.kills_at_walltime and self.has_limit[j]:
            limit_end = float(self.recorded_start[j] + self.estimate[j])
            if end > limit_end:
                return limit_end - self.t0, JobOutcome.KILLED_WALLTIME
        return end - self.t0, JobOutcome.COMPLETED

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
            v[self._o_rack:] = st.rack_input_W
            idle = self.alloc.owner == FREE
            shares = self.chain.node_it_input_w(self.node_dc)
            self._idle_dc_W = float(self.node_dc[idle].sum())
            self._idle_it_W = float(shares[idle].sum())
            if self.partition is not None:
                self._part_dc_W = float(self.node_dc[self.partition.nodes].sum())
                self._part_it_W = float(shares[self.partition.nodes].sum())
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
        failure = None
        if self.plant is not None:
            t_mid = self.t0 + (np.arange(k0, k0 + m) + 0.5) * self.step_s
            twb = np.asarray(self.wet_bulb_K(t_mid), dtype=float)
            heat = np.ascontiguousarray(block[:, :nc])
            if not self._plant_ready:
                init = self.plant.initialize(heat[0], float(twb[0]))
                self._plant_ready = True
                self._averager = StepAverager(self.plant.output_names, self.step_s)
                self._averager.start(init)
            try:
                out = self.plant.run(heat, twb)
            except PlantError as exc:  # keep the steps the plant completed, then stop the run (marked partial)
                done = exc.completed_outputs
                if done.shape[0] == 0:
                    raise _PlantFailed(exc, self.t0 + k0 * self.step_s) from exc
                failure = _PlantFailed(exc, self.t0 + (k0 + done.shape[0]) * self.step_s)
                m = done.shape[0]
                out = np.array(done, dtype=float)
                block, twb = block[:m], twb[:m]
            # Power outputs sampled at the end of a step are replaced by their exact step averages where the
            # plant integrates them itself (a running energy total E_x: P_avg = dE / step).
            self._averager.apply(out)
            if self._guard is not None:  # physical bounds of the plant's outputs (cooling_fmu.plausibility)
                t_end = self.t0 + (np.arange(k0, k0 + m) + 1.0) * self.step_s
                bad = self._guard.check(t_end, out, twb)
                if bad is not None and self.on_implausible == "stop" and failure is None:
                    v = min(self._guard.violations.values(), key=lambda v: v.t_s)
                    failure = _PlantFailed(RuntimeError(v.message()), float(t_end[bad]))
                    m = bad + 1  # keep the step that left the bounds; the run stops after it
                    out, block, twb = out[:m], block[:m], twb[:m]
            self.plant_state = out[-1]
            self._plant_sums += out.sum(axis=0) * self.step_s
            p_liq = out[:, self.plant.P_cooling_index]
            rows = [block, twb[:, None], out]
        else:
            p_liq, twb = np.zeros(block.shape[0]), None
            rows = [block]
        if self._n_ovh:
            ovh = self.overheads.evaluate(block[:, nc + 4], p_liq, twb)
            cols = np.stack([ovh[k] for k in self.overheads.SERIES], axis=1)
            self._ovh_sums += cols.sum(axis=0) * self.step_s
            rows.append(cols)
            extra = cols[-1].sum() - cols[-1, self._i_q_air]  # facility overhead beyond the liquid plant [W]
        else:
            extra = 0.0
        self._last_overhead_W = float(p_liq[-1]) + float(extra)
        rows = np.concatenate(rows, axis=1) if len(rows) > 1 else rows[0]
        self._step_sums += block.sum(axis=0) * self.step_s
        self._last_step_heat = block[-1, :nc].copy()
        self._last_it_W = float(block[-1, nc + 4])
        self._steps_emitted = k0 + m
        self.reducer.push(rows)
        if self._pbar is not None:
            self._pbar.update((k0 + m) * self.step_s / 3600.0, self._jobs_left)
        if failure is not None:
            raise failure

    # ------------------------------------------------------------------ main loop
    def run(self) -> SimulationResult:
        """Run the simulation until every job has ended (and the partition profile is over); return its results.

        Raises
        ------
        PolicyError
            If the policy returns a job that is not queued or does not fit (nodes or power budget).
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
        self.job_cdu_it_W = np.zeros((n, sysm.n_cdus))
        self._job_cdu_E = np.zeros((n, sysm.n_cdus))
        self._cur_node_power = self.job_node_power.copy()
        self._power_since = np.full(n, np.nan)
        self._attempt_energy0 = np.zeros(n)
        self._attempt_it0 = np.zeros(n)
        self._attempt_shares: dict[int, np.ndarray] = {}  # running jobs only (popped when they end)
        self.job_nodes: dict[int, np.ndarray] = {}  # running jobs only: each its own array (never a view)
        self.lost_node_s = np.zeros(n)
        self.lost_energy_dc = np.zeros(n)
        self.n_requeues = np.zeros(n, dtype=np.int64)
        self._attempts: list[tuple[int, float, float, np.ndarray]] = []
        self._jobs_left = n
        self._part_energy = [0.0, 0.0]
        self._part_dc_W = self._part_it_W = 0.0
        self._power_dirty = True
        self._last_it_W = 0.0
        nc = sysm.n_cdus
        self._o_rack = nc + len(POWER_SERIES) + len(SCHEDULER_SERIES)
        n_state = self._o_rack + sysm.n_racks
        self._vec = np.zeros(n_state)
        self._step_sums = np.zeros(n_state)
        n_plant = len(self.plant.output_names) if self.plant is not None else 0
        self._plant_sums = np.zeros(n_plant)
        self._plant_ready = False
        self.plant_state = None
        self._guard = None
        if self.plant is not None:
            from cooling_fmu.plausibility import OutputGuard

            self._guard = OutputGuard(list(self.plant.output_names), list(self.plant.output_units))
        self._i_T_sec_sup = None
        self._dT_per_W = None
        self._last_step_heat = np.zeros(nc)
        if self.plant is not None:
            self._dT_per_W = supply_rise_K_per_W(self.plant)
            idx = group_cdu_columns(self.plant.output_names).get("T_sec_sup")
            self._i_T_sec_sup = np.array(idx) if idx and len(idx) == nc else None
        from power.facility import SERIES as _OVH_SERIES

        # cooling off means the facility is not modelled: no overhead is counted then
        self._n_ovh = (len(_OVH_SERIES) if self.plant is not None and (self.overheads.active
                                                                      or sysm.liquid_fraction != 1.0) else 0)
        self._i_q_air = _OVH_SERIES.index("Q_air_W")
        self._ovh_sums = np.zeros(self._n_ovh)
        self._last_overhead_W = 0.0
        n_cols = n_state + (1 + n_plant if self.plant is not None else 0) + self._n_ovh
        self.reducer = IntervalReducer(self.ratio, n_cols)
        integ = StepIntegrator(self.t0, self.step_s, n_state, self._emit)
        self._pbar = RunProgress((self.t1 - self.t0) / 3600.0) if self.progress else None

        required = 0  # events the run must reach even when every job is done (the partition's profile)
        if self.partition is not None:
            self.alloc.reserve(self.partition.nodes)
            for i, t in enumerate(self.partition.t_s):
                if t >= self.t0:
                    self.env.schedule(float(t), EventKind.POWER_CHANGE, i)
                    required += 1
            before = np.flatnonzero(self.partition.t_s < self.t0)
            if before.size:  # the row in force at t0
                self.node_dc[self.partition.nodes] = self.partition.P_W[before[-1]]
        # downtimes already in force at t0 take their nodes out before the prefill places running jobs
        for a_, b_, nodes_, drain_ in self.downtimes:
            if a_ < self.t0 < b_:
                self.alloc.set_down(nodes_)
        for t_down, t_up, node in self.failures:
            if t_down < self.t0 < t_up:
                nd = np.array([int(node)])
                self.alloc.set_down(nd)
                self.env.schedule(t_up, EventKind.NODE_UP, nd)
        # prefill: jobs running at t0, placed first in recorded-start order
        pre = np.flatnonzero(self.prefilled)
        pre = pre[np.argsort(self.recorded_start[pre], kind="stable")]
        n_pre_failed = n_pre_past_limit = 0
        for j in pre:
            duration, outcome = self._prefill_duration(int(j))
            if duration <= 0:  # its limit fell at or before t0: killed there, never on the window's nodes
                n_pre_past_limit += 1
                self.start[j] = self.recorded_start[j]
                self.end[j] = self.t0 + duration
                self.outcome[j] = outcome
                self._jobs_left -= 1
                continue
            if self.nodes[j] > self.alloc.n_free:
                n_pre_failed += 1  # the machine is smaller than the site's; queue it instead
                self.prefilled[j] = False
                continue
            self._outcome_if_ends[j] = outcome
            self._start(int(j), self.t0, duration)
        self.info["prefill_queued_for_lack_of_nodes"] = n_pre_failed
        self.info["prefill_killed_at_walltime_by_window_start"] = n_pre_past_limit
        order = np.lexsort((np.arange(n), self.submit))
        for j in order:
            if not self.prefilled[j]:
                self.env.schedule(max(self.submit[j], self.t0), EventKind.JOB_SUBMIT, int(j))

        for t_cap, _ in self.power_cap:
            if t_cap > self.t0:
                self.env.schedule(t_cap, EventKind.WAKEUP, None)  # a pass when the budget changes
        for a, b, nodes, drain in self.downtimes:
            if b <= self.t0:
                continue
            if a >= self.t0:  # (windows in force at t0 were applied above)
                self.env.schedule(a, EventKind.NODE_DOWN, (nodes, drain))
            self.env.schedule(b, EventKind.NODE_UP, nodes)
        for t_down, t_up, node in self.failures:
            if t_up > self.t0 and t_down >= self.t0:  # (failures in force at t0 were applied before the prefill)
                nd = np.array([int(node)])
                self.env.schedule(t_down, EventKind.NODE_DOWN, (nd, False))
                self.env.schedule(t_up, EventKind.NODE_UP, nd)
        self._steps_emitted = 0
        failure: _PlantFailed | None = None
        try:
            self._loop(integ, required)
        except _PlantFailed as exc:
            failure = exc
        (t_last, idle_energy_dc, idle_energy_it, n_events, n_passes, n_late_replay, cap_bound_s, cap_bound_passes,
         pass_time_s, max_queue, drained_kills) = self._loop_state
        if failure is not None:
            # Partial results: everything up to the last whole output interval the plant completed is kept.
            n_int = self._steps_emitted // self.ratio
            if n_int == 0:
                raise RuntimeError(f"{failure}; the run stopped before its first whole output interval "
                                   f"({self.interval_s:g} s), so there is nothing to write") from failure
            t_final = integ.boundary(n_int * self.ratio)
            self.info.update({"complete": False, "failure": str(failure), "failed_at_s": failure.t_s})
            if self._pbar is not None:
                self._pbar.close()
            self.info.update({
                "events": n_events, "scheduling_passes": n_passes, "jobs_not_run": int(np.isnan(self.start).sum()),
                "t_end_s": failure.t_s, "t_final_s": t_final, "cooling_steps": self._steps_emitted,
                "wall_time_s": time.perf_counter() - wall0, "policy": self.policy.name,
            })
            return self._result(idle_energy_dc, idle_energy_it)
        self.info["complete"] = True
        # pad with idle time to a whole output interval (at least one); the end is an integer count of steps
        t_end = max(t_last, self.t0)
        t_final = integ.boundary(max(self.ratio, integ.first_boundary_at_or_after(t_end, self.ratio)))
        integ.set(self._state_vector())
        integ.advance(t_final)
        idle_energy_dc += self._idle_dc_W * (t_final - t_last)
        idle_energy_it += self._idle_it_W * (t_final - t_last)
        self._part_energy[0] += self._part_dc_W * (t_final - t_last)
        self._part_energy[1] += self._part_it_W * (t_final - t_last)
        if self._pbar is not None:
            self._pbar.close()

        not_run = np.isnan(self.start) & (self.outcome != JobOutcome.REJECTED_POWER_CAP)
        self.info.update({
            "events": n_events, "scheduling_passes": n_passes, "replay_started_late": n_late_replay,
            "jobs_not_run": int(not_run.sum()), "t_end_s": t_end, "t_final_s": t_final,
            "cooling_steps": integ.steps_done, "wall_time_s": time.perf_counter() - wall0,
            "policy": self.policy.name, "placement": self.placement,
            "scheduling_time_s": pass_time_s, "max_queue_length": max_queue,
            "jobs_killed_by_node_down": int(drained_kills), "requeues": int(self.n_requeues.sum()),
            "lost_node_s": float(self.lost_node_s.sum()), "lost_energy_dc_J": float(self.lost_energy_dc.sum()),
            "power_cap_bound_s": cap_bound_s, "power_cap_bound_passes": cap_bound_passes,
        })
        return self._result(idle_energy_dc, idle_energy_it)

    def _loop(self, integ: StepIntegrator, required: int, until_s: float = math.inf) -> None:
        """The event loop (see :meth:`run`); its counters are left in ``self._loop_state`` even if it stops early.

        ``until_s`` stops it before the first event later than ``until_s`` (events at ``until_s`` are handled);
        the default runs to the end. Used by :meth:`rollout`.
        """
        env = self.env
        idle_energy_dc = idle_energy_it = 0.0
        t_last = self.t0
        n_events = n_passes = n_late_replay = cap_bound_passes = max_queue = drained_kills = 0
        cap_bound_s = pass_time_s = 0.0
        cap_binding = False
        is_replay = isinstance(self.policy, Replay)

        def save() -> None:
            self._loop_state = (t_last, idle_energy_dc, idle_energy_it, n_events, n_passes, n_late_replay,
                                cap_bound_s, cap_bound_passes, pass_time_s, max_queue, drained_kills)

        save()
        while len(env) and (self._jobs_left > 0 or required > 0) and env.peek_time() <= until_s:
            t = min(env.peek_time(), self.horizon_s)  # nothing happens past the horizon
            # integrate the step function up to t (this may step the cooling plant)
            integ.set(self._state_vector())
            integ.advance(t)
            idle_energy_dc += self._idle_dc_W * (t - t_last)
            idle_energy_it += self._idle_it_W * (t - t_last)
            self._part_energy[0] += self._part_dc_W * (t - t_last)
            self._part_energy[1] += self._part_it_W * (t - t_last)
            if cap_binding:
                cap_bound_s += t - t_last
            t_last = t
            if env.peek_time() > t:  # the horizon comes before the next event: cut what still runs
                self._cut_at_horizon(t)
                save()
                break
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
                    nodes, drain = payload
                    hit = self.alloc.set_down(nodes)
                    self._power_dirty = True
                    if not drain:
                        for j in hit:
                            self._kill(int(j), t)
                            drained_kills += 1
                elif kind is EventKind.NODE_UP:
                    self.alloc.set_up(payload)
                    self._power_dirty = True
                elif kind is EventKind.POWER_CHANGE:
                    self.node_dc[self.partition.nodes] = self.partition.P_W[payload]
                    self._power_dirty = True
                    required -= 1
                elif kind is EventKind.JOB_POWER:
                    j, k, attempt = payload
                    if j in self.running and self._running_since[j] == attempt:  # else the job ended or restarted
                        self._accrue_job(j, t)
                        self._set_job_power(j, float(self.profiles[j][1][k]))
            # one scheduling pass per timestamp, after every event of that timestamp
            cap_binding = False
            if self.queue and self.power_cap:
                self._reject_beyond_cap()
            if t >= self.horizon_s and (self._jobs_left > 0 or required > 0):
                self._cut_at_horizon(t)
                save()
                break
            if self.queue and self.alloc.n_free > 0:
                n_passes += 1
                max_queue = max(max_queue, len(self.queue))
                tp = time.perf_counter()
                view = self._view()
                decisions = self.policy.schedule(view)
                pass_time_s += time.perf_counter() - tp
                if self.record_reservations:
                    self.reservation_log.append((t, dict(getattr(self.policy, "reservations", {}))))
                if decisions:
                    self._apply(decisions, t, view)
                    if is_replay:
                        n_late_replay += sum(1 for j in decisions
                                             if math.isfinite(self.recorded_start[j]) and self.recorded_start[j] < t)
                wake = self.policy.next_pass_s(view)  # a policy holding jobs until a known time (#15 ramp limit)
                if wake is not None:
                    env.schedule(max(wake, t), EventKind.WAKEUP, None)
                if view.power_W is not None and self.queue:
                    head = view.power_headroom_W - sum(float(view.power_W[j]) for j in decisions)
                    free = self.alloc.n_free
                    cap_binding = any(self.nodes[j] <= free and view.power_W[j] > head for j in self.queue)
                    cap_bound_passes += int(cap_binding)
            save()

    # ------------------------------------------------------------------ forks (twin in the loop)
    #: Inputs fixed once the job table is prepared (never written by the event loop; the per-job arrays among them
    #: are read-only, so a write would raise): a fork shares them instead of copying them.
    _FORK_SHARED = ("system", "chain", "nodes", "submit", "has_limit", "estimate", "runtime", "recorded_start",
                    "recorded_end", "cpu_util", "gpu_util", "job_node_power", "job_node_power_model", "profiles",
                    "account_id", "queue_id", "account_names", "queue_names", "_job_marginal_it", "downtimes",
                    "failures", "power_cap", "partition", "_profiles_table", "_node_power_w")
    #: State a fork does not carry (outputs, the plant, the progress bar, the job table, the policy), with the
    #: value the fork starts from.
    _FORK_NOT_CARRIED = {"plant": None, "plant_state": None, "wet_bulb_K": None, "reducer": None, "_pbar": None,
                         "jobs": None, "info": dict, "_attempts": list, "reservation_log": list, "policy": None,
                         "progress": False, "record_reservations": False, "_guard": None}

    def fork(self, policy: BasePolicy | None) -> "Simulation":
        """An independent copy of the platform now (call it from inside a run, e.g. from a policy's ``schedule``).

        The copy is a deep copy *by construction*: every attribute is deep-copied (:func:`copy.deepcopy`) except
        the immutable inputs listed in :attr:`_FORK_SHARED` (job sizes, submit times, estimates, run times, power,
        the system and its power chain), which are shared, and the outputs listed in :attr:`_FORK_NOT_CARRIED`,
        which start empty. So the clock and pending events (hence every future submission, end, node change), the
        queue, running jobs with their scheduled ends, node allocator, node power and all per-job and per-attempt
        accounting are the fork's own, including state added later: nothing a rollout does can write into the
        main run. It runs ``policy`` (None: set it before :meth:`rollout`). It has no cooling plant: the cooling
        FMU cannot be forked (rumoca's FMUs do not declare ``canGetAndSetFMUstate``), so a fork's facility power
        is its IT power x (1 + the cooling ratio now: the plant's last step ratio, else ``cooling_estimate``);
        ``spread`` / ``pack`` placement then rank CDUs by heat instead of plant temperatures. Output series,
        reservations log, progress bar and the job table are not carried, so a fork pickles small (it can be sent
        to another MPI rank).
        """
        shared = {name: self.__dict__[name] for name in self._FORK_SHARED if name in self.__dict__}
        memo = {id(v): v for v in shared.values()}
        state = {k: v for k, v in self.__dict__.items()
                 if k not in self._FORK_NOT_CARRIED and k not in shared}
        for v in state.values():  # speed only: a list / dict of plain scalars (the queue, running jobs) is copied
            if type(v) in (list, dict) and _all_scalars(v):  # flat, which is what deepcopy would give for it
                memo[id(v)] = type(v)(v)
        ratio = self._cooling_ratio()
        new = object.__new__(Simulation)
        new.__dict__.update(shared)
        new.__dict__.update(copy.deepcopy(state, memo))
        for k, v in self._FORK_NOT_CARRIED.items():
            setattr(new, k, v() if callable(v) else v)
        new.cooling_estimate = ratio
        new.policy = policy
        return new

    def __getstate__(self) -> dict:
        """Pickle support (a fork sent to another MPI rank): the power chain is rebuilt from the system."""
        state = dict(self.__dict__)
        state.pop("chain", None)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.chain = PowerChain(self.system)

    def rollout(self, until_s: float) -> dict[str, float]:
        """Run this fork (see :meth:`fork`) from now to ``until_s`` and score the interval ``[now, until_s]``.

        The fork first makes the scheduling pass of the current timestamp under its own policy, then handles every
        event up to ``until_s``, exactly as :meth:`run` would.

        Returns
        -------
        dict
            ``wait_s``: job-seconds of waiting accrued in the interval by every job submitted before ``until_s``
            and not started before now (a job still queued at ``until_s`` counts until then) [s];
            ``E_it_J``: IT energy (rack input) over the interval [J]; ``E_facility_J``: ``E_it_J`` x (1 + cooling
            ratio at the fork) [J]; ``started``: jobs started in the interval [1].
        """
        t = self.env.now
        if not until_s > t:
            raise ValueError(f"rollout end {until_s} s must be after now = {t} s")
        waiting = np.flatnonzero(np.isnan(self.start) & (self.submit < until_s))
        blocks: list[np.ndarray] = []
        integ = StepIntegrator(t, until_s - t, self._vec.size, lambda k0, block: blocks.append(block))
        end = integ.boundary(1)
        self.env.schedule(t, EventKind.WAKEUP, None)  # the pass of this timestamp, under this fork's policy
        required = sum(1 for e in self.env._heap if e[1] == EventKind.POWER_CHANGE)
        self._loop(integ, required, end)
        integ.set(self._state_vector())
        integ.advance(end)
        started = self.start[waiting]
        stop = np.where(np.isnan(started), end, np.minimum(started, end))
        wait = float(np.clip(stop - np.maximum(self.submit[waiting], t), 0.0, None).sum())
        e_it = float(blocks[0][0, self.system.n_cdus + 4]) * (end - t)
        return {"wait_s": wait, "E_it_J": e_it, "E_facility_J": e_it * (1.0 + self.cooling_estimate),
                "started": float(np.count_nonzero(~np.isnan(started)))}

    def _apply(self, decisions: list[int], now: float, view: SchedulerView) -> None:
        queued = set(self.queue)
        need = 0
        power = 0.0
        if len(set(decisions)) != len(decisions):
            raise PolicyError(f"policy {self.policy.name!r} started a job twice at t={now}")
        for j in decisions:
            if j not in queued:
                raise PolicyError(f"policy {self.policy.name!r} started job index {j} which is not queued at t={now}")
            need += int(self.nodes[j])
            if view.power_W is not None:
                power += float(view.power_W[j])
        if need > self.alloc.n_free:
            raise PolicyError(f"policy {self.policy.name!r} asked for {need} nodes at t={now} but only "
                              f"{self.alloc.n_free} are free")
        if power > view.power_headroom_W + 1e-6:
            raise PolicyError(f"policy {self.policy.name!r} would exceed the facility power budget at t={now}: "
                              f"+{power:.0f} W with {view.power_headroom_W:.0f} W of headroom")
        started = set(decisions)
        self.queue = [j for j in self.queue if j not in started]
        for j in decisions:
            duration, outcome = self._run_duration(j)
            self._outcome_if_ends[j] = outcome
            self._start(j, now, duration)

    # ------------------------------------------------------------------ results
    def _result(self, idle_energy_dc: float, idle_energy_it: float) -> SimulationResult:
        self.info.update(self.policy.run_info())
        sysm = self.system
        nc = sysm.n_cdus
        rows = self.reducer.finish()
        n_int = rows.shape[0]
        time_s = self.t0 + (np.arange(n_int) * self.ratio) * self.step_s  # step boundaries, integer counts
        facility: dict[str, np.ndarray] = {}
        cdu: dict[str, np.ndarray] = {"Q_flow_W": rows[:, :nc]}
        units: dict[str, str] = {}
        for i, name in enumerate(POWER_SERIES):
            facility[name] = rows[:, nc + i]
        off = nc + len(POWER_SERIES)
        for i, name in enumerate(SCHEDULER_SERIES):
            facility[name] = rows[:, off + i]
        rack = {"P_in_W": rows[:, self._o_rack:self._o_rack + sysm.n_racks]}
        s = self._step_sums
        totals = {
            "E_node_dc_J": float(s[nc + 0]), "E_sivoc_loss_J": float(s[nc + 1]),
            "E_rectifier_loss_J": float(s[nc + 2]), "E_rack_overhead_J": float(s[nc + 3]),
            "E_it_J": float(s[nc + 4]), "E_cdu_heat_J": float(s[:nc].sum()),
            "E_idle_node_dc_J": idle_energy_dc, "E_idle_node_it_J": idle_energy_it,
            "E_partition_node_dc_J": self._part_energy[0], "E_partition_node_it_J": self._part_energy[1],
            "duration_s": float(self.info["t_final_s"] - self.t0),
        }
        if self.plant is not None:
            off2 = self._o_rack + sysm.n_racks
            facility["T_wb_K"] = rows[:, off2]
            for i, name in enumerate(self.plant.output_names):
                base = cdu_series_name(name)
                units[base or name] = self.plant.output_units[i]
                if base is None and i != self.plant.P_cooling_index:  # that one is P_cooling_W below
                    facility[name] = rows[:, off2 + 1 + i]
            for base, idx in group_cdu_columns(self.plant.output_names).items():
                cdu[base] = rows[:, [off2 + 1 + i for i in idx]]
            pi = self.plant.P_cooling_index
            totals["E_cooling_J"] = float(self._plant_sums[pi])
            facility["P_cooling_W"] = rows[:, off2 + 1 + pi]
        else:
            totals["E_cooling_J"] = 0.0
            facility["P_cooling_W"] = np.zeros(n_int)
        _add_facility_overheads(self, facility, totals, rows)

        jobs = self.jobs.copy()
        jobs["sim_start_s"] = self.start
        jobs["sim_end_s"] = self.end
        jobs["outcome"] = self.outcome
        jobs["prefilled"] = self.prefilled
        jobs["node_power_W"] = self.job_node_power
        if self.use_measured_power:  # for the report's measured-vs-model comparison
            jobs["node_power_model_W"] = self.job_node_power_model
        jobs["energy_dc_J"] = self.energy_dc
        jobs["energy_it_J"] = self.energy_it
        jobs["requeues"] = self.n_requeues
        jobs["lost_node_s"] = self.lost_node_s
        jobs["lost_energy_dc_J"] = self.lost_energy_dc
        jobs = metrics.add_job_metrics(jobs, window_start_s=self.t0)
        allocations = _allocation_runs(self._attempts, jobs["job_id"].to_numpy(), self.system.node_cdu)
        summary = metrics.summarize(jobs, totals, facility, n_nodes=sysm.n_nodes, t0=self.t0, time_s=time_s,
                                    measure=(self.t0 + self.warmup_s, self.t1),
                                    cooling=self.plant is not None)
        warnings = []
        if "T_fac_sup" in facility and len(facility["T_fac_sup"]):
            cold = facility["T_fac_sup"] < 275.15
            if cold.any():
                warnings.append(f"facility supply water below 2 degC in {int(cold.sum())} output interval(s) (min "
                                f"{facility['T_fac_sup'].min() - 273.15:.1f} degC): the plant model has no tower bypass "
                                f"or freeze protection, so results there are outside its validity")
        if "m_flow_makeup" in facility and len(facility["m_flow_makeup"]) and facility["m_flow_makeup"].min() < 0:
            warnings.append(f"negative tower make-up water in {int((facility['m_flow_makeup'] < 0).sum())} interval(s):"
                            f" the towers were adding heat to colder water (outside the model's validity)")
        if self._guard is not None and self._guard.violations:
            self.info["plant_out_of_bounds"] = [v.to_dict() for v in self._guard.violations.values()]
            warnings += [v.message() for v in self._guard.violations.values()]
        absent = getattr(getattr(self.policy, "order", None), "bonus_accounts_absent", [])
        if absent:
            self.info["bonus_accounts_absent"] = absent
        if self.power_cap and min(w for _, w in self.power_cap) < self._idle_it_all_W:
            warnings.append(f"a facility power budget ({min(w for _, w in self.power_cap) / 1e6:.3f} MW) is below the "
                            f"IT power of the idle machine ({self._idle_it_all_W / 1e6:.3f} MW)")
        if warnings:
            self.info["warnings"] = warnings
        if self.power_cap:  # how long the budget was binding, and how long facility power stood above it
            caps = np.full(len(time_s), math.inf)
            for t_c, w in self.power_cap:
                caps[time_s >= t_c] = w
            over = facility["P_facility_W"] > caps
            summary["power_cap_exceeded_s"] = float(over.sum()) * self.interval_s
            summary["power_cap_bound_s"] = float(self.info.get("power_cap_bound_s", 0.0))
        summary["jobs_rejected_power_cap"] = float(self.info.get("jobs_rejected_power_cap", 0))
        summary["jobs_cut_at_horizon"] = float(np.count_nonzero(self.outcome == JobOutcome.CUT_AT_HORIZON))
        summary["jobs_not_run"] = float(np.count_nonzero(np.isnan(self.start)
                                                         & (self.outcome != JobOutcome.REJECTED_POWER_CAP)))
        return SimulationResult(jobs=jobs, time_s=time_s, facility=facility, cdu=cdu, totals=totals,
                                summary=summary, info=dict(self.info), units=units, rack=rack,
                                job_cdu_it_W=self.job_cdu_it_W, allocations=allocations)


def _add_facility_overheads(sim: "Simulation", facility: dict, totals: dict, rows: np.ndarray) -> None:
    """Facility series and totals beyond IT and the liquid plant (:mod:`power.facility`), and the metrics.

    Adds ``P_<stage>_W`` series and ``E_<stage>_J`` totals, ``P_electrical_loss_W`` (transformer + switchgear + UPS
    + PDU), ``P_air_side_W`` (CRAH fans + chilled water for air), ``P_mechanical_W`` (liquid plant ``P_cooling_W``
    + air side), ``P_facility_W`` = IT + mechanical + electrical + lighting, the interval ``PUE`` and the partial
    PUEs ``pPUE_mechanical`` / ``pPUE_electrical`` (The Green Grid: (IT + the zone's overhead) / IT). With every
    stage absent and all heat to liquid, ``P_facility_W`` = ``P_it_W + P_cooling_W`` exactly (bit for bit). Without
    a cooling plant the facility is not modelled: no overhead is counted and the PUEs are NaN.
    """
    from power.facility import SERIES

    n_int = rows.shape[0]
    for i, name in enumerate(SERIES):
        key = "E_air_heat_J" if name == "Q_air_W" else "E" + name[1:-2] + "_J"
        if sim._n_ovh:
            facility[name] = rows[:, rows.shape[1] - sim._n_ovh + i]
            totals[key] = float(sim._ovh_sums[i])
        else:
            facility[name] = np.zeros(n_int)
            totals[key] = 0.0
    f, t = facility, totals
    f["P_electrical_loss_W"] = (f["P_transformer_loss_W"] + f["P_switchgear_loss_W"] + f["P_ups_loss_W"]
                                + f["P_pdu_loss_W"])
    f["P_air_side_W"] = f["P_air_fan_W"] + f["P_air_chiller_W"]
    f["P_mechanical_W"] = f["P_cooling_W"] + f["P_air_side_W"]
    f["P_facility_W"] = f["P_it_W"] + f["P_mechanical_W"] + f["P_electrical_loss_W"] + f["P_lighting_W"]
    t["E_electrical_loss_J"] = (t["E_transformer_loss_J"] + t["E_switchgear_loss_J"] + t["E_ups_loss_J"]
                                + t["E_pdu_loss_J"])
    t["E_air_side_J"] = t["E_air_fan_J"] + t["E_air_chiller_J"]
    t["E_mechanical_J"] = t["E_cooling_J"] + t["E_air_side_J"]
    t["E_facility_J"] = t["E_it_J"] + t["E_mechanical_J"] + t["E_electrical_loss_J"] + t["E_lighting_J"]
    with np.errstate(invalid="ignore", divide="ignore"):
        if sim.plant is not None:
            f["PUE"] = f["P_facility_W"] / f["P_it_W"]
            f["pPUE_mechanical"] = (f["P_it_W"] + f["P_mechanical_W"]) / f["P_it_W"]
            f["pPUE_electrical"] = (f["P_it_W"] + f["P_electrical_loss_W"]) / f["P_it_W"]
        else:  # cooling off: the facility is not modelled (no overhead counted), PUE undefined, never 1.0
            for k in ("PUE", "pPUE_mechanical", "pPUE_electrical"):
                f[k] = np.full(n_int, np.nan)
    sim.info["facility_stages_counted"] = sim.system.facility.present()
    sim.info["facility_stages_absent"] = sim.system.facility.absent()
    sim.info["liquid_fraction"] = float(sim.system.liquid_fraction)


_SCALARS = (int, float, bool, str, type(None), np.integer, np.floating)


def _all_scalars(container: list | dict) -> bool:
    """True when every element (and every key of a dict) is an immutable scalar, so a flat copy is a deep copy."""
    vals = container.values() if isinstance(container, dict) else container
    if not all(isinstance(x, _SCALARS) for x in vals):
        return False
    return not isinstance(container, dict) or all(isinstance(k, _SCALARS) for k in container)


def _allocation_runs(attempts: list, job_ids: np.ndarray, node_cdu: np.ndarray) -> dict[str, np.ndarray]:
    """Rows of consecutive-node runs within one CDU (see SimulationResult).

    From the (job index, start, end, nodes, per-node IT power) attempts of the run.
    """
    cols: dict[str, list] = {k: [] for k in ("job_id", "start_s", "end_s", "node_first", "node_count", "cdu",
                                             "it_power_W")}
    for j, a, b, nodes, shares in attempts:
        order = np.argsort(nodes)
        nodes, shares = nodes[order], np.asarray(shares, dtype=float)[order]
        cdu = node_cdu[nodes]
        breaks = np.flatnonzero((np.diff(nodes) != 1) | (np.diff(cdu) != 0)) + 1
        firsts = np.concatenate(([0], breaks))
        counts = np.diff(np.concatenate((firsts, [nodes.size])))
        k = firsts.size
        cols["job_id"] += [int(job_ids[j])] * k
        cols["start_s"] += [float(a)] * k
        cols["end_s"] += [float(b)] * k
        cols["node_first"] += nodes[firsts].tolist()
        cols["node_count"] += counts.tolist()
        cols["cdu"] += cdu[firsts].tolist()
        cols["it_power_W"] += np.add.reduceat(shares, firsts).tolist() if nodes.size else []
    dt = {"job_id": np.int64, "start_s": float, "end_s": float, "node_first": np.int64, "node_count": np.int64,
          "cdu": np.int64, "it_power_W": float}
    return {k: np.asarray(v, dtype=dt[k]) for k, v in cols.items()}
