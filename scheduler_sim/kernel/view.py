"""The view a policy decides on: :func:`scheduler_view` builds an immutable
:class:`~scheduler_sim.policies.SchedulerView` of the platform state now.

The view holds read-only arrays and a tuple queue, so a policy cannot write into the platform (Batsim's split of
decisions and platform; docs/decision_interface.md). With a power budget set at some time of the run, it carries
each job's facility power and the headroom under the budget in force, for reservations and admission; its
``availability_fn`` gives the known future availability of nodes and power lazily
(:func:`~scheduler_sim.kernel.availability.known_availability`).
"""

from __future__ import annotations

import math

import numpy as np

from ..policies import SchedulerView
from ..policies.base import _read_only
from .availability import known_availability
from power.system import Partition

from .config import SimulationConfig
from .jobdata import JobTable
from .powercap import PowerCapGovernor
from .state import PlatformState

__all__ = ["scheduler_view"]


#: The job-table arrays every view carries (view field -> JobTable field).
_JOB_FIELDS = (("nodes", "nodes"), ("estimate_s", "estimate"), ("submit_s", "submit"),
               ("recorded_start_s", "recorded_start"), ("account_id", "account_id"), ("queue_id", "queue_id"))


def frozen_job_arrays(jobs: JobTable) -> dict[str, np.ndarray]:
    """Read-only views of the job table's arrays a :class:`SchedulerView` carries, made once per run.

    Parameters
    ----------
    jobs : JobTable
        The run's jobs.

    Returns
    -------
    dict
        View field name -> read-only view (no copy) of the job table's array.
    """
    out = {}
    for name, attr in _JOB_FIELDS:
        v = np.asarray(getattr(jobs, attr)).view()
        v.flags.writeable = False
        out[name] = v
    return out


def _frozen_start(st: PlatformState, fz: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``fz`` with ``start_s``: a read-only view of ``st.start``, made once per state (a fork has its own array)."""
    ro = fz.get("start_s")
    if ro is None or ro.base is not st.start:
        ro = st.start.view()
        ro.flags.writeable = False
        fz["start_s"] = ro
    return fz


def scheduler_view(st: PlatformState, jobs: JobTable, gov: PowerCapGovernor, cfg: SimulationConfig,
                   frozen: dict[str, np.ndarray] | None = None, part: Partition | None = None,
                   lookahead: object | None = None) -> SchedulerView:
    """The policy's view of the platform now.

    Parameters
    ----------
    st : PlatformState
        The platform state.
    jobs : JobTable
        The run's jobs.
    gov : PowerCapGovernor
        The power-cap governor (job powers [W], budget and predicted facility power [W]).
    cfg : SimulationConfig
        The run's options (downtimes and budget schedule, for the known availability).
    frozen : dict[str, np.ndarray] | None
        :func:`frozen_job_arrays` of ``jobs``, made once per run (None: made here).
    part : Partition | None
        One partition of a partitioned system: the view then holds its queued and running jobs, its free nodes and
        pool, and the availability of its nodes alone (the others are marked reserved, -2); the power headroom
        stays the facility's. None: the whole platform.
    lookahead : object | None
        The platform's fork/rollout service (:class:`~scheduler_sim.kernel.lookahead.Lookahead`), carried as
        ``view.lookahead``; None: the view offers none.

    Returns
    -------
    SchedulerView
        Immutable; ``power_W`` is None and the headroom infinite without a budget.
    """
    if part is not None:
        return _partition_view(st, jobs, gov, cfg, frozen, part, lookahead)
    now = st.env.now
    headroom = math.inf
    power = None
    cap = gov.cap_at(now)
    facility_W = math.nan
    if gov.active:  # a budget now or later: reservations need each job's power
        power = gov.job_power_W(st)
        facility_W = gov.predicted_facility_W(st)
        if math.isfinite(cap):
            headroom = cap - facility_W
    running = tuple(st.running)
    # the condition under which known_availability is running-job ends only (free nodes only grow); a node down
    # now always has a down count > 0, and a down count > 0 always means down (allocator)
    grows = (power is None and st.alloc.n_down == 0
             and not any(b > now for _, b, _, _ in cfg.downtimes))
    fz = _frozen_start(st, frozen if frozen is not None else frozen_job_arrays(jobs))
    return SchedulerView.of_frozen(
        now_s=now, queue=tuple(st.queue), free_nodes=st.alloc.n_free, running=running,
        n_nodes=jobs.n_pool, power_W=_read_only(power), power_headroom_W=headroom, **fz,
        availability_fn=lambda: known_availability(
            now, st.alloc.owner, st.alloc.down_count, list(running), st.start, jobs.estimate,
            list(cfg.downtimes), power, facility_W, list(cfg.power_cap), jobs.nodes, st.alloc.n_free),
        availability_grows=grows, lookahead=lookahead,
    )


def _partition_view(st: PlatformState, jobs: JobTable, gov: PowerCapGovernor, cfg: SimulationConfig,
                    frozen: dict[str, np.ndarray] | None, part: Partition,
                    lookahead: object | None = None) -> SchedulerView:
    """:func:`scheduler_view` of one partition (see its ``part`` parameter)."""
    now = st.env.now
    lo, hi, k = part.first_node, part.first_node + part.n_nodes, part.index
    power, headroom, facility_W = None, math.inf, math.nan
    if gov.active:
        power = gov.job_power_W(st)
        facility_W = gov.predicted_facility_W(st)
        cap = gov.cap_at(now)
        if math.isfinite(cap):
            headroom = cap - facility_W
    pj = jobs.partition
    queue = tuple(j for j in st.queue if pj[j] == k)
    running = tuple(j for j in st.running if pj[j] == k)
    n_free = st.alloc.n_free_in(lo, hi)
    fz = _frozen_start(st, frozen if frozen is not None else frozen_job_arrays(jobs))
    if part.share:
        return _slot_view(st, jobs, cfg, fz, part, queue, running, n_free, (power, headroom, facility_W), lookahead)
    down = st.alloc.down_count

    def availability() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        owner = np.full(st.alloc.n_nodes, -2, dtype=np.int64)  # other partitions' nodes: never free here
        owner[lo:hi] = st.alloc.owner[lo:hi]
        dc = np.zeros_like(down)
        dc[lo:hi] = down[lo:hi]
        return known_availability(now, owner, dc, list(running), st.start, jobs.estimate, list(cfg.downtimes),
                                  power, facility_W, list(cfg.power_cap), jobs.nodes, n_free)

    grows = (power is None and not down[lo:hi].any()
             and not any(b > now and np.any((np.asarray(nd) >= lo) & (np.asarray(nd) < hi))
                         for _, b, nd, _ in cfg.downtimes))
    return SchedulerView(now_s=now, queue=queue, free_nodes=n_free, running=running,
                         n_nodes=int(jobs.pools[k]), power_W=power, power_headroom_W=headroom, **fz,
                         availability_fn=availability, availability_grows=grows, lookahead=lookahead)


def _slot_view(st: PlatformState, jobs: JobTable, cfg: SimulationConfig, fz: dict[str, np.ndarray],
               part: Partition, queue: tuple, running: tuple, n_free: int, pw: tuple,
               lookahead: object | None) -> SchedulerView:
    """The view of a sharing partition (``share = true``), counted in slots (:mod:`~scheduler_sim.kernel.sharing`).

    Its ``nodes`` are each job's slots (``JobTable.slots``), ``free_nodes`` the free slots of its up nodes,
    ``n_nodes`` the slots of its pool, and the known availability that of every slot: each slot is a node of
    :func:`known_availability` (its owner the job holding it, the down count and downtimes of its node), so
    EASY's shadow time and extra slots are exact for the slot pool.
    """
    now = st.env.now
    lo, n = part.first_node, part.n_nodes
    tbl = st.alloc.shared[lo]
    S = tbl.S
    power, headroom, facility_W = pw
    node_owner = st.alloc.owner[lo:lo + n]
    owner = np.where(np.repeat(node_owner < -1, S), -2, tbl.owner)  # reserved / out-of-pool nodes: never free
    down = np.repeat(st.alloc.down_count[lo:lo + n], S)
    spread = np.arange(S)

    def slots_of(nd: object) -> np.ndarray:
        nd = np.asarray(nd, dtype=np.int64)
        nd = nd[(nd >= lo) & (nd < lo + n)] - lo
        return (nd[:, None] * S + spread).ravel()

    def availability() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        windows = [(a, b, slots_of(nd), dr) for a, b, nd, dr in cfg.downtimes]
        return known_availability(now, owner, down, list(running), st.start, jobs.estimate, windows, power,
                                  facility_W, list(cfg.power_cap), jobs.slots, n_free)

    grows = (power is None and not down.any()
             and not any(b > now and slots_of(nd).size for _, b, nd, _ in cfg.downtimes))
    sl = np.asarray(jobs.slots).view()
    sl.flags.writeable = False
    return SchedulerView(now_s=now, queue=queue, free_nodes=n_free, running=running,
                         n_nodes=int(jobs.pools[part.index]) * S, power_W=power, power_headroom_W=headroom,
                         **dict(fz, nodes=sl), availability_fn=availability, availability_grows=grows,
                         lookahead=lookahead)
