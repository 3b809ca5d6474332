"""The job data of a run: what the trace says about each simulated job, fixed once the window is chosen.

:func:`build_job_table` selects the jobs of the window (plus the jobs carried in at its start), excludes the ones
that cannot be simulated (unknown run time, larger than the machine) and derives everything the event loop reads
but never writes: sizes, submit times, estimates, run times, node power, fair-share codes and the marginal
rack-input power of starting each job. The result, a :class:`JobTable`, is immutable (a frozen dataclass whose
arrays are read-only), so a fork of the platform (:meth:`scheduler_sim.kernel.simulation.Simulation.fork`) shares it
instead of copying it. What changes during a run lives in :class:`scheduler_sim.kernel.state.PlatformState`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
import pandas as pd

from power import PowerChain, System, node_power_w

from .config import DAY_S
from .partitions import map_partitions
from .sharing import job_slots

__all__ = ["JobOutcome", "NodePowerProfile", "JobTable", "build_job_table"]




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


@dataclass(frozen=True)
class JobTable:
    """Immutable per-job inputs of one run (``n`` simulated jobs, index ``j`` = row of :attr:`frame`).

    Every array has shape ``(n,)`` and is read-only (a write raises ``ValueError``), so forks share it safely.

    Attributes
    ----------
    frame : pandas.DataFrame
        Canonical job columns (:mod:`jobs.table`) of the simulated jobs, in simulation order.
    n : int
        Number of simulated jobs.
    nodes : ndarray of int64
        Nodes each job asks for.
    submit : ndarray of float
        Submit time [s] (trace time).
    has_limit : ndarray of bool
        The job has a requested wall time.
    estimate : ndarray of float
        Requested wall time, else the configured default [s] (what the scheduler plans with).
    runtime : ndarray of float
        Recorded run time [s].
    recorded_start, recorded_end : ndarray of float
        Start and end recorded in the trace [s] (NaN when unknown).
    prefilled : ndarray of bool
        Running at the window start in the trace (placed first, "prefill"); the run's own copy lives in the state.
    cpu_util, gpu_util : ndarray of float
        Utilisation in [0, 1] (the system's defaults where the trace has none).
    node_power_W : ndarray of float
        DC power per node while the job runs [W]: the measured mean where used, else the utilisation model.
    node_power_model_W : ndarray of float
        DC power per node from the utilisation model (:func:`power.node_power_w`) [W].
    profiles : dict of int -> (ndarray, ndarray)
        Measured node-power time series of a job: offsets from its start [s] and node power [W].
    account_id, queue_id : ndarray of int64
        Fair-share entity and queue (QoS) codes (factorised names, sorted).
    account_names, queue_names : tuple of str
        Names of those codes.
    marginal_it_W : ndarray of float
        Rack-input power a start adds over idle nodes: ``nodes * dP_in/dP_dc * (node_power - idle)`` [W].
    idle_node_power_W : float
        DC power of an idle node [W].
    idle_it_all_W : float
        Rack-input (IT) power of the whole machine idle [W].
    n_pool : int
        Nodes the batch scheduler manages (the machine minus a co-located partition).
    partition : ndarray of int64
        Partition of each job (index into ``System.partitions``; all 0 on a one-partition system).
    pools : ndarray of int64, shape (n_partitions,)
        Nodes the batch scheduler manages in each partition (0 for a serving partition).
    idle_node_W : ndarray of float, shape (n_nodes,)
        DC power of each node when idle [W] (its partition's node type).
    slots : ndarray of int64
        What each job asks of its partition in the scheduler's unit: ``nodes`` on a whole-node partition, slots on
        a sharing one (:func:`~scheduler_sim.kernel.sharing.job_slots`); None: ``nodes``.
    """

    frame: pd.DataFrame
    n: int
    nodes: np.ndarray
    submit: np.ndarray
    has_limit: np.ndarray
    estimate: np.ndarray
    runtime: np.ndarray
    recorded_start: np.ndarray
    recorded_end: np.ndarray
    prefilled: np.ndarray
    cpu_util: np.ndarray
    gpu_util: np.ndarray
    node_power_W: np.ndarray
    node_power_model_W: np.ndarray
    profiles: dict
    account_id: np.ndarray
    queue_id: np.ndarray
    account_names: tuple
    queue_names: tuple
    marginal_it_W: np.ndarray
    idle_node_power_W: float
    idle_it_all_W: float
    n_pool: int
    partition: np.ndarray = None
    pools: np.ndarray = None
    idle_node_W: np.ndarray = None
    slots: np.ndarray = None

    def __post_init__(self) -> None:
        if self.slots is None and self.nodes is not None:
            object.__setattr__(self, "slots", self.nodes)
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, np.ndarray):
                v.setflags(write=False)

    def __deepcopy__(self, memo: dict) -> "JobTable":
        """A deep copy is the table itself: it is immutable."""
        return self


def _select(table: pd.DataFrame, t0: float, t1: float, pools: np.ndarray, system: System, has_partition: bool,
            info: dict) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """Rows of the window (submitted in ``[t0, t1)``, running or waiting at ``t0``) that can be simulated.

    Returns the rows, their prefilled flags and their partitions (:func:`~scheduler_sim.kernel.partitions.
    map_partitions`; a job larger than its partition's pool ``pools[p]`` is excluded); counts go to ``info``.
    Raises ValueError when no job is left and there is no co-located partition.
    """
    sub = table["submit_time_s"].to_numpy(float)
    rs = table["start_time_s"].to_numpy(float)
    re_ = table["end_time_s"].to_numpy(float)
    in_window = (sub >= t0) & (sub < t1)
    running_at_t0 = (sub < t0) & (rs < t0) & (re_ > t0)
    waiting_at_t0 = (sub < t0) & ~(rs < t0) & ~(re_ <= t0) & ~np.isnan(rs)
    keep = in_window | running_at_t0 | waiting_at_t0
    df = table.loc[keep].reset_index(drop=True)
    prefilled = running_at_t0[keep]
    bad_runtime = df["runtime_s"].isna().to_numpy()
    part = map_partitions(df, system, info)
    too_big = (df["nodes"].to_numpy() > pools[part])
    excluded = bad_runtime | too_big
    info["jobs_in_window"] = int(in_window.sum())
    info["jobs_prefilled"] = int((prefilled & ~excluded).sum())
    info["jobs_carried_in_queue"] = int(waiting_at_t0[keep].sum())
    info["jobs_excluded_unknown_runtime"] = int(bad_runtime.sum())
    info["jobs_excluded_larger_than_machine"] = int((too_big & ~bad_runtime).sum())
    info["excluded_job_ids"] = [int(x) for x in df.loc[excluded, "job_id"].to_numpy()[:50]]
    df = df.loc[~excluded].reset_index(drop=True)
    prefilled = prefilled[~excluded]
    if len(df) == 0 and not has_partition:  # with a partition, a run without batch jobs is legal
        raise ValueError(f"no job to simulate in the window [{t0 / DAY_S:g}, {t1 / DAY_S:g}) days of the trace")
    return df, prefilled, part[~excluded]


def _measured_power(df: pd.DataFrame, model_W: np.ndarray, info: dict) -> np.ndarray:
    """Node power with the trace's ``measured_node_power_W`` where finite and >= 0 [W]; counts go to ``info``.

    Raises ValueError when the trace has no ``measured_node_power_W`` column.
    """
    if "measured_node_power_W" not in df.columns:
        raise ValueError("use_measured_power is set but the trace has no measured_node_power_W column")
    meas = df["measured_node_power_W"].to_numpy(float)
    ok = np.isfinite(meas) & (meas >= 0)
    info["jobs_power_measured"] = int(ok.sum())
    info["jobs_power_modelled"] = int((~ok).sum())
    return np.where(ok, meas, model_W)


def _power_profiles(df: pd.DataFrame, pt: pd.DataFrame, info: dict) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Per-job measured power series (offsets [s], node power [W]), keyed by job index; samples with a negative
    or non-finite power or a negative offset are skipped, repeated offsets keep their first sample.
    """
    profiles: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    idx = pd.Series(np.arange(len(df)), index=df["job_id"].to_numpy())
    pt = pt.loc[pt["job_id"].isin(idx.index) & np.isfinite(pt["node_power_W"]) & (pt["node_power_W"] >= 0)
                & (pt["t_offset_s"] >= 0)]
    for jid, g in pt.sort_values(["job_id", "t_offset_s"], kind="stable").groupby("job_id", sort=True):
        off = g["t_offset_s"].to_numpy(float)
        keep = np.r_[True, np.diff(off) > 0]
        profiles[int(idx[jid])] = (off[keep], g["node_power_W"].to_numpy(float)[keep])
    info["jobs_power_time_series"] = len(profiles)
    return profiles


def _share_codes(df: pd.DataFrame, share_entity: str) -> tuple[np.ndarray, list, np.ndarray, list]:
    """Integer codes (and sorted names) of the fair-share entity (account, else user, else '' -> unknown; or the
    user) and of the queue (QoS).
    """
    if share_entity == "user":
        acct = df["user"].astype(str)
    else:
        acct = df["account"].astype(str).where(df["account"].astype(str) != "", df["user"].astype(str))
    a_codes, a_names = pd.factorize(acct.where(acct != "", "\0unknown"), sort=True)
    q_codes, q_names = pd.factorize(df["queue"].astype(str), sort=True)
    return a_codes.astype(np.int64), list(a_names), q_codes.astype(np.int64), list(q_names)


def build_job_table(table: pd.DataFrame, system: System, chain: PowerChain, *, t0: float, t1: float, n_pool: int,
                    has_partition: bool, default_walltime_s: float, use_measured_power: bool,
                    profiles_table: pd.DataFrame | None, share_entity: str, info: dict,
                    pools: np.ndarray | None = None) -> JobTable:
    """The immutable job data of a run over the window ``[t0, t1)``.

    Parameters
    ----------
    table : pd.DataFrame
        Canonical job table (:mod:`jobs.table`); times relative to the trace origin [s].
    system : System
        The platform (node power parameters, default utilisations).
    chain : PowerChain
        The system's power chain (rack-input power of a node's DC power).
    t0 : float
        Window start [s].
    t1 : float
        Window end [s].
    n_pool : int
        Nodes the batch scheduler manages; larger jobs are excluded (reported in ``info``).
    has_partition : bool
        A co-located partition runs, so an empty job table is legal.
    default_walltime_s : float
        Estimate of jobs without a requested time [s].
    use_measured_power : bool
        Use the trace's ``measured_node_power_W`` where finite.
    profiles_table : pd.DataFrame | None
        Measured node-power series (``job_id``, ``t_offset_s`` [s], ``node_power_W`` [W]); None for none.
    share_entity : str
        "account" or "user": who fair-share usage is charged to.
    info : dict
        The run's info; the selection and power counts are added to it.
    pools : np.ndarray | None
        Nodes the batch scheduler manages in each partition of ``system``, shape (n_partitions,); None:
        ``[n_pool]`` (one partition).

    Returns
    -------
    JobTable
        The table, its arrays read-only.

    Notes
    -----
    Raises ValueError (from the selection) when no job is left to simulate and no partition runs, or when measured
    power is asked for and the trace has none.
    """
    pools = np.array([n_pool] if pools is None else pools, dtype=np.int64)
    df, prefilled, part = _select(table, t0, t1, pools, system, has_partition, info)
    req = df["requested_walltime_s"].to_numpy(float)
    has_limit = np.isfinite(req)
    info["jobs_without_requested_time"] = int((~has_limit).sum())
    cpu, gpu, model_W = _model_power(df, part, system)
    if "node_power_set_W" in df.columns:  # a job's fixed mean node power (periodic profiles of #15)
        setp = df["node_power_set_W"].to_numpy(float)
        model_W = np.where(np.isfinite(setp), setp, model_W)
    power_W = _measured_power(df, model_W, info) if use_measured_power else model_W.copy()
    profiles = {}
    if profiles_table is not None and len(profiles_table):
        profiles = _power_profiles(df, profiles_table, info)
    idle_W = float(node_power_w(0.0, 0.0, system.node))
    account_id, account_names, queue_id, queue_names = _share_codes(df, share_entity)
    nodes = df["nodes"].to_numpy(np.int64)
    if system.partitioned:
        idle_node = np.concatenate([np.full(p.n_nodes, float(node_power_w(0.0, 0.0, p.node)))
                                    for p in system.partitions])
        marginal = _marginal_by_partition(chain, system, idle_node, nodes, part, power_W)
    else:
        idle_node = np.full(system.n_nodes, idle_W)
        # marginal rack-input power of starting a job (per-node affine chain: slope a = dP_in / dP_dc)
        slope = (chain.node_it_input_w(idle_node + 1.0) - chain.node_it_input_w(idle_node)).mean()
        marginal = nodes * slope * (power_W - idle_W)
    return JobTable(
        frame=df, n=len(df), nodes=nodes, submit=df["submit_time_s"].to_numpy(float), has_limit=has_limit,
        estimate=np.where(has_limit, req, float(default_walltime_s)), runtime=df["runtime_s"].to_numpy(float),
        recorded_start=df["start_time_s"].to_numpy(float), recorded_end=df["end_time_s"].to_numpy(float),
        prefilled=np.asarray(prefilled, dtype=bool), cpu_util=cpu, gpu_util=gpu, node_power_W=power_W,
        node_power_model_W=model_W, profiles=profiles, account_id=account_id, queue_id=queue_id,
        account_names=tuple(account_names), queue_names=tuple(queue_names),
        marginal_it_W=marginal, idle_node_power_W=idle_W,
        idle_it_all_W=float(chain.evaluate(idle_node).it_input_W), n_pool=int(n_pool), partition=part,
        pools=pools, idle_node_W=idle_node, slots=job_slots(df, part, system) if system.shares else None)


def _model_power(df: pd.DataFrame, part: np.ndarray, system: System) -> tuple[np.ndarray, ...]:
    """CPU and GPU utilisation of each job (its partition's defaults where the trace has none) and its node DC
    power from the utilisation model of its partition's node type [W]; arrays of shape (n_jobs,).
    """
    cpu = df["cpu_util"].to_numpy(float)
    gpu = df["gpu_util"].to_numpy(float)
    if not system.partitioned:
        cpu = np.where(np.isnan(cpu), system.default_cpu_util, cpu)
        gpu = np.where(np.isnan(gpu), system.default_gpu_util, gpu)
        return cpu, gpu, node_power_w(cpu, gpu, system.node)
    cpu, gpu = cpu.copy(), gpu.copy()
    model_W = np.zeros(len(df))
    for p in system.partitions:
        m = part == p.index
        cpu[m] = np.where(np.isnan(cpu[m]), p.default_cpu_util, cpu[m])
        gpu[m] = np.where(np.isnan(gpu[m]), p.default_gpu_util, gpu[m])
        model_W[m] = node_power_w(cpu[m], gpu[m], p.node)
    return cpu, gpu, model_W


def _marginal_by_partition(chain: PowerChain, system: System, idle_node: np.ndarray, nodes: np.ndarray,
                           part: np.ndarray, power_W: np.ndarray) -> np.ndarray:
    """Rack-input power a start adds over idle nodes, each job with the chain slope and idle power of its
    partition: ``nodes * dP_in/dP_dc * (node_power - idle)`` [W], shape (n_jobs,).
    """
    d = chain.node_it_input_w(idle_node + 1.0) - chain.node_it_input_w(idle_node)
    slope = np.array([d[p.first_node:p.first_node + p.n_nodes].mean() for p in system.partitions])
    idle = np.array([idle_node[p.first_node] for p in system.partitions])
    return nodes * slope[part] * (power_W - idle[part])
