"""Opening the window: what is in force at ``t0`` and every event known in advance.

At the window start ``t0`` the platform reserves a co-located partition's nodes (with the power row in force),
takes out the nodes of downtimes and failures in force, places the jobs running at ``t0`` (prefill, before any
queued job), and then schedules every event known in advance: submissions in submit order, a scheduling pass at
each change of the power budget, downtime and failure windows, and the partition's power changes. The order of
these calls fixes the events' sequence numbers, hence the order of same-time events of the same kind.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .allocator import FREE
from .config import SimulationConfig
from .core import EventKind
from .events import JobSubmit, NodeDown, NodeUp, PowerChange
from .jobdata import NodePowerProfile
from .recorder import StepIntegrator

if TYPE_CHECKING:  # typing only: what the service uses of the platform (kernel.platform)
    from .platform import WindowPlatform

__all__ = ["run_horizon", "batch_failures", "batch_pool", "open_window"]


def run_horizon(t0: float, step_s: float, ratio: int, t_s: float) -> float:
    """The run horizon: ``t_s`` rounded up to a whole output interval (integer step count from ``t0``) [s].

    The run never goes past it: running jobs are cut there (``CUT_AT_HORIZON``), and since it lies on an interval
    boundary no idle padding is added after it, so energy stops exactly there.

    Parameters
    ----------
    t0 : float
        Window start [s].
    step_s : float
        Cooling step [s].
    ratio : int
        Cooling steps per output interval.
    t_s : float
        The time to round up [s].

    Returns
    -------
    float
        The horizon [s].
    """
    steps = StepIntegrator(t0, step_s, 0, lambda k, block: None)
    return steps.boundary(steps.first_boundary_at_or_after(t_s, ratio))


def batch_failures(cfg: SimulationConfig, partition: NodePowerProfile | None, n_nodes: int,
                   info: dict) -> np.ndarray:
    """The configured node failures on batch nodes (a partition's own engine does not model failures).

    Parameters
    ----------
    cfg : SimulationConfig
        The run's options (``failures``, ``downtimes``).
    partition : NodePowerProfile | None
        The co-located partition, if any.
    n_nodes : int
        Nodes of the machine.
    info : dict
        The run's info (``failures_on_partition_ignored`` is added with a partition and failures).

    Returns
    -------
    np.ndarray
        Shape (k, 3): ``(t_down_s, t_up_s, node)`` rows on batch nodes.

    Raises
    ------
    ValueError
        For a partition node outside the machine, or a downtime covering partition nodes.
    """
    failures = cfg.failures
    if partition is None:
        return failures
    if partition.nodes.max() >= n_nodes:
        raise ValueError(f"partition node {int(partition.nodes.max())} outside 0..{n_nodes - 1}")
    pn = set(partition.nodes.tolist())
    for _, _, nodes, _ in cfg.downtimes:
        if pn.intersection(nodes.tolist()):
            raise ValueError("a downtime covers nodes of the co-located partition; its engine does not model "
                             "down nodes: give downtimes for batch nodes only")
    if len(failures):  # the partition's own engine does not see failures: sample them on batch nodes
        keep = ~np.isin(failures[:, 2].astype(np.int64), partition.nodes)
        info["failures_on_partition_ignored"] = int((~keep).sum())
        failures = failures[keep]
    return failures


def batch_pool(cfg: SimulationConfig, n_nodes: int, partition: NodePowerProfile | None) -> int:
    """The schedulable pool of batch jobs [nodes]: ``cfg.pool_nodes``, else every node not in the partition.

    Parameters
    ----------
    cfg : SimulationConfig
        The run's options.
    n_nodes : int
        Nodes of the system.
    partition : NodePowerProfile | None
        The co-located partition, if any (its nodes are not batch nodes).

    Returns
    -------
    int
        Pool size [nodes].

    Raises
    ------
    ValueError
        If ``cfg.pool_nodes`` is more than the batch nodes.
    """
    n_batch = n_nodes - (partition.nodes.size if partition is not None else 0)
    if cfg.pool_nodes is None:
        return n_batch
    if cfg.pool_nodes > n_batch:
        raise ValueError(f"pool_nodes = {cfg.pool_nodes} is more than the {n_batch} batch nodes of the system")
    return int(cfg.pool_nodes)


def _reserve_partition(sim: WindowPlatform) -> None:
    """Reserve the partition's nodes, schedule its power changes (events the run must reach), set the row in force
    at ``t0``.
    """
    st, part = sim.state, sim.partition
    st.alloc.reserve(part.nodes)
    for i, t in enumerate(part.t_s):
        if t >= sim.t0:
            st.env.schedule(float(t), EventKind.POWER_CHANGE, PowerChange(i))
            st.counters.required += 1
    before = np.flatnonzero(part.t_s < sim.t0)
    if before.size:  # the row in force at t0
        st.node_dc[part.nodes] = part.P_W[before[-1]]


def _outages_at_start(sim: WindowPlatform) -> None:
    """Take out the nodes of downtimes and failures in force at ``t0`` (a failure's return is scheduled)."""
    st, t0 = sim.state, sim.t0
    for a_, b_, nodes_, drain_ in sim.config.downtimes:
        if a_ < t0 < b_:
            st.alloc.set_down(nodes_)
    for t_down, t_up, node in sim.failures:
        if t_down < t0 < t_up:
            nd = np.array([int(node)])
            st.alloc.set_down(nd)
            st.env.schedule(t_up, EventKind.NODE_UP, NodeUp(nd))


def _future_outages(sim: WindowPlatform) -> None:
    """Schedule the downtime and failure windows that start after ``t0`` (and the ends of those in force)."""
    env, t0 = sim.state.env, sim.t0
    for a, b, nodes, drain in sim.config.downtimes:
        if b <= t0:
            continue
        if a >= t0:  # (windows in force at t0 were applied before the prefill)
            env.schedule(a, EventKind.NODE_DOWN, NodeDown(nodes, drain))
        env.schedule(b, EventKind.NODE_UP, NodeUp(nodes))
    for t_down, t_up, node in sim.failures:
        if t_up > t0 and t_down >= t0:  # (failures in force at t0 were applied before the prefill)
            nd = np.array([int(node)])
            env.schedule(t_down, EventKind.NODE_DOWN, NodeDown(nd, False))
            env.schedule(t_up, EventKind.NODE_UP, NodeUp(nd))


def open_window(sim: WindowPlatform) -> None:
    """Set up the window start of ``sim`` (a fresh state): partition, outages in force, prefill, future events.

    Parameters
    ----------
    sim : WindowPlatform
        The platform, its state fresh at ``t0``.
    """
    st, jobs, t0 = sim.state, sim.jobdata, sim.t0
    if sim.partition is not None:
        _reserve_partition(sim)
    if sim.config.pool_nodes is not None:  # the batch nodes beyond the pool: out of it for the whole run
        batch = np.flatnonzero(st.alloc.owner == FREE)
        if batch.size > sim.config.pool_nodes:
            st.alloc.exclude(batch[int(sim.config.pool_nodes):])
    _outages_at_start(sim)
    sim.lifecycle.prefill()
    for j in np.lexsort((np.arange(jobs.n), jobs.submit)):
        if not st.prefilled[j]:
            st.env.schedule(max(jobs.submit[j], t0), EventKind.JOB_SUBMIT, JobSubmit(int(j)))
    for t_cap, _ in sim.config.power_cap:
        if t_cap > t0:
            st.env.schedule(t_cap, EventKind.WAKEUP, None)  # a pass when the budget changes
    _future_outages(sim)
