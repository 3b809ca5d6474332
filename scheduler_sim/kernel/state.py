"""Everything that changes while the platform runs, in one object: :class:`PlatformState`.

A fork of the platform (:meth:`scheduler_sim.kernel.simulation.Simulation.fork`) is one :func:`copy.deepcopy` of
the state, by construction: the clock and pending events, the queue, running jobs with their nodes and scheduled
ends, the node allocator, node power, the energy ledger and every per-job and per-attempt record are fields of
this object and of nothing else. Inputs that never change during a run (the job data,
:class:`scheduler_sim.kernel.jobdata.JobTable`; the system and its power chain) are shared; outputs (series,
allocation runs, the run's info) are the simulation's own and start empty in a fork.

The value of the power step function (heat per CDU, power totals, scheduler counts, rack input) is one vector
whose columns are named by :class:`StateLayout`, never by hard-coded offsets.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .allocator import NodeAllocator
from .core import Environment
from .jobdata import JobOutcome, JobTable
from .ledger import EnergyLedger

__all__ = ["POWER_SERIES", "SCHEDULER_SERIES", "StateLayout", "StepValue", "CoolingReadout", "LoopCounters",
           "PlatformState"]

#: Names of the power series carried by the step integrator (facility totals) [W].
POWER_SERIES = ("P_node_dc_W", "P_sivoc_loss_W", "P_rectifier_loss_W", "P_rack_overhead_W", "P_it_W")
#: Names of the scheduler-state series (time averages over each step) [1].
SCHEDULER_SERIES = ("busy_nodes", "running_jobs", "queued_jobs", "down_nodes")


@dataclass(frozen=True)
class StateLayout:
    """Columns of the step-function vector: CDU heat, :data:`POWER_SERIES`, :data:`SCHEDULER_SERIES`, rack input.

    Parameters
    ----------
    n_cdus : int
        CDUs of the system (heat columns ``0 .. n_cdus - 1``, [W]).
    n_racks : int
        Racks of the system (rack-input columns after the scheduler counts, [W]).
    n_parts : int
        Partitions whose busy nodes are carried (columns after the rack input, [1]); 0 on a one-partition system,
        whose vector is then exactly the one of a system without partitions.
    """

    n_cdus: int
    n_racks: int
    n_parts: int = 0

    def power(self, name: str) -> int:
        """Column of a power series of :data:`POWER_SERIES` (``"P_it_W"`` -> ``n_cdus + 4``)."""
        return self.n_cdus + POWER_SERIES.index(name)

    @property
    def it(self) -> int:
        """Column of the IT (rack input) power ``P_it_W`` [W]."""
        return self.n_cdus + 4

    @property
    def counts(self) -> int:
        """First column of the scheduler counts (:data:`SCHEDULER_SERIES`)."""
        return self.n_cdus + len(POWER_SERIES)

    @property
    def rack(self) -> int:
        """First rack-input column."""
        return self.counts + len(SCHEDULER_SERIES)

    @property
    def part_busy(self) -> int:
        """First column of the busy nodes per partition."""
        return self.rack + self.n_racks

    @property
    def size(self) -> int:
        """Length of the vector."""
        return self.rack + self.n_racks + self.n_parts


@dataclass
class StepValue:
    """The power step function's value after the current timestamp, recomputed only when power changed.

    Attributes
    ----------
    vec : ndarray, shape (layout.size,)
        The value (see :class:`StateLayout`): W for powers, counts for the scheduler series.
    dirty : bool
        Node power changed since ``vec`` was computed.
    idle_dc_W, idle_it_W : float
        DC and rack-input power of the idle (unallocated) nodes [W].
    part_dc_W, part_it_W : float
        DC and rack-input power of a co-located partition [W].
    touched : list of ndarray
        Node index arrays whose power or owner changed since ``vec`` was computed (:meth:`touch`); the step
        function updates only those nodes and the sums by difference (:mod:`scheduler_sim.kernel.stepfunction`).
    diff : object or None
        The step function's running sums and the node states they were taken at (its ``_Sums``); None until the
        first exact evaluation. Part of the state, so a fork goes on from the same sums.
    """

    vec: np.ndarray
    dirty: bool = True
    idle_dc_W: float = 0.0
    idle_it_W: float = 0.0
    part_dc_W: float = 0.0
    part_it_W: float = 0.0
    touched: list = field(default_factory=list)
    diff: object = None

    def touch(self, nodes: np.ndarray) -> None:
        """Note that the power or the owner of ``nodes`` changed (after the change is made).

        Parameters
        ----------
        nodes : np.ndarray
            Node indices, shape (k,) (int): the array is kept until the next evaluation, so it must not be
            changed in place afterwards.
        """
        self.touched.append(nodes)
        self.dirty = True


@dataclass
class CoolingReadout:
    """What the last cooling step tells the scheduler (written by the cooling coupler, read by the cap governor
    and placement).

    Attributes
    ----------
    plant_state : ndarray or None
        The plant's outputs at the end of its last step (SI, columns as the plant's ``output_names``); None before
        the first step and in a fork (a fork has no plant).
    last_it_W : float
        IT power of the last step [W].
    last_overhead_W : float
        Facility power beyond IT in the last step (liquid plant plus the facility overheads) [W].
    last_step_heat : ndarray, shape (n_cdus,)
        Heat per CDU of the last step [W].
    """

    plant_state: np.ndarray | None
    last_it_W: float
    last_overhead_W: float
    last_step_heat: np.ndarray


@dataclass
class LoopCounters:
    """Counters of the event loop (reported in the run's info).

    Attributes
    ----------
    t_last : float
        Time up to which the step function has been integrated [s].
    required : int
        Events the run must reach even when every job is done (a partition's power changes).
    n_events, n_passes, n_late_replay, cap_bound_passes, max_queue, drained_kills : int
        Events handled, scheduling passes, replayed jobs started after their recorded start, passes where the
        power budget held back a job that fitted in nodes, longest queue at a pass, jobs killed by a node down.
    cap_bound_s : float
        Time during which the power budget held a job back [s].
    pass_time_s : float
        Wall time spent in the policy's passes [s] (volatile).
    cap_binding : bool
        The budget held a job back at the last pass.
    """

    t_last: float
    required: int = 0
    n_events: int = 0
    n_passes: int = 0
    n_late_replay: int = 0
    cap_bound_passes: int = 0
    max_queue: int = 0
    drained_kills: int = 0
    cap_bound_s: float = 0.0
    pass_time_s: float = 0.0
    cap_binding: bool = False


@dataclass
class PlatformState:
    """All mutable state of a run (per-job arrays have shape ``(n_jobs,)``; times in s, energies in J).

    Attributes
    ----------
    env : Environment
        Clock and pending events.
    alloc : NodeAllocator
        Node owners, down counts.
    node_dc : ndarray, shape (n_nodes,)
        DC power of every node now [W].
    queue : list of int
        Queued job indices, in queue order.
    running : dict of int -> None
        Running job indices (insertion-ordered set).
    job_nodes : dict of int -> ndarray
        Nodes of each running job (each its own array, never a view).
    start, end : ndarray of float
        Simulated start / end (NaN until set; a prefilled job's start is its recorded start).
    outcome : ndarray of int8
        :class:`~scheduler_sim.kernel.jobdata.JobOutcome` codes.
    outcome_if_ends : ndarray of int8
        Outcome of a running job if it reaches its scheduled end.
    scheduled_end : ndarray of float
        End of the running attempt (a stale end event does not match it).
    prefilled : ndarray of bool
        Placed at the window start (cleared when such a job is queued instead, or requeued).
    running_since : ndarray of float
        Start of the current attempt.
    lost_node_s : ndarray of float
        Node-seconds lost to kills by node failures [node s].
    n_requeues : ndarray of int64
        Times a job was requeued after a failure.
    attempt_shares : dict of int -> ndarray
        Rack-input power of each node of a running attempt [W].
    jobs_left : int
        Jobs not yet ended (or rejected).
    ledger : EnergyLedger
        Per-job power and energy, idle and partition energy.
    step : StepValue
        The power step function's current value.
    cooling : CoolingReadout
        The last cooling step's figures.
    counters : LoopCounters
        Event-loop counters.
    """

    env: Environment
    alloc: NodeAllocator
    node_dc: np.ndarray
    queue: list
    running: dict
    job_nodes: dict
    start: np.ndarray
    end: np.ndarray
    outcome: np.ndarray
    outcome_if_ends: np.ndarray
    scheduled_end: np.ndarray
    prefilled: np.ndarray
    running_since: np.ndarray
    lost_node_s: np.ndarray
    n_requeues: np.ndarray
    attempt_shares: dict
    jobs_left: int
    ledger: EnergyLedger
    step: StepValue
    cooling: CoolingReadout
    counters: LoopCounters = field(default_factory=lambda: LoopCounters(0.0))

    @classmethod
    def initial(cls, jobs: JobTable, n_nodes: int, layout: StateLayout, t0: float) -> "PlatformState":
        """The state at the window start ``t0`` [s]: no event, every node idle and free, every job not run.

        Parameters
        ----------
        jobs : JobTable
            The run's jobs.
        n_nodes : int
            Nodes of the system.
        layout : StateLayout
            Columns of the step-function vector.
        t0 : float
            Window start [s].

        Returns
        -------
        PlatformState
            A fresh state.
        """
        n = jobs.n
        return cls(
            env=Environment(t0), alloc=NodeAllocator(n_nodes), node_dc=jobs.idle_node_W.copy(),
            queue=[], running={}, job_nodes={}, start=np.full(n, np.nan), end=np.full(n, np.nan),
            outcome=np.zeros(n, dtype=np.int8), outcome_if_ends=np.full(n, JobOutcome.COMPLETED, dtype=np.int8),
            scheduled_end=np.full(n, np.nan), prefilled=jobs.prefilled.copy(), running_since=np.full(n, np.nan),
            lost_node_s=np.zeros(n), n_requeues=np.zeros(n, dtype=np.int64), attempt_shares={}, jobs_left=n,
            ledger=EnergyLedger.empty(jobs.node_power_W, layout.n_cdus), step=StepValue(np.zeros(layout.size)),
            cooling=CoolingReadout(None, 0.0, 0.0, np.zeros(layout.n_cdus)), counters=LoopCounters(t0))
