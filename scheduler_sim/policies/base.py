"""The decision interface between the platform and a scheduling policy (after Batsim's decision/platform split).

A policy receives a read-only :class:`SchedulerView` of the platform at one timestamp and returns *decisions*: the
job indices to start now, in order. It never changes the platform itself; the platform
(:class:`scheduler_sim.kernel.simulation.Simulation`) validates each decision (the job is queued and fits in the free
nodes) and raises :class:`PolicyError` otherwise. See docs/decision_interface.md.
"""

from __future__ import annotations

import abc
import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

__all__ = ["BasePolicy", "PolicyError", "SchedulerView"]


class PolicyError(RuntimeError):
    """A policy returned a decision the platform cannot carry out (job not queued, not enough free nodes)."""


def _read_only(a: np.ndarray | None) -> np.ndarray | None:
    """A read-only view of ``a`` (the platform's array is not copied and stays writeable for the platform).

    ``a`` itself when it already is a read-only view (made once by the platform and passed to every view: a new
    view of it would protect nothing more).
    """
    if a is None:
        return None
    if type(a) is np.ndarray and a.base is not None and not a.flags.writeable:
        return a
    v = np.asarray(a).view()
    v.flags.writeable = False
    return v


@dataclass(frozen=True)
class SchedulerView:
    """What a policy may see at one scheduling pass; immutable.

    The view cannot change the platform: ``queue`` and ``running`` are tuples and every array is a read-only
    numpy view (writing into it raises ``ValueError: assignment destination is read-only``); the fields cannot be
    reassigned (frozen dataclass). A policy acts only through the decisions it returns.

    Attributes
    ----------
    now_s : float
        Current simulated time [s].
    queue : tuple of int
        Indices of queued jobs in arrival order (submit time, then trace order).
    free_nodes : int
        Nodes idle and up now.
    nodes : ndarray of int64, shape (n_jobs,)
        Nodes requested by every job.
    estimate_s : ndarray of float64, shape (n_jobs,)
        Run-time estimate of every job [s]: the requested wall time, or the configured default when the trace
        has none (never 0 for a missing value).
    submit_s : ndarray of float64, shape (n_jobs,)
        Submission time of every job [s].
    recorded_start_s : ndarray of float64, shape (n_jobs,)
        Recorded start time of every job in the trace [s] (NaN when unknown); used by replay.
    running : tuple of int
        Indices of running jobs.
    start_s : ndarray of float64, shape (n_jobs,)
        Simulated start time of every job [s] (NaN when not started).
    n_nodes : int
        Nodes of the batch pool (for size factors).
    account_id, queue_id : ndarray of int64, shape (n_jobs,), or None
        Integer codes of each job's account and queue (0 = unknown), for fair-share and QoS.
    power_W : ndarray of float64, shape (n_jobs,), or None
        Predicted increase of facility power if the job starts now [W] (IT with losses, plus the cooling
        estimate), when a facility power cap is active; None without a cap.
    power_headroom_W : float
        Facility power budget minus the predicted facility power now [W] (``inf`` without a cap). A start that
        would exceed it is refused by the platform.
    availability_fn : callable() -> (times, free, headroom), or None
        The platform's known future availability (:func:`scheduler_sim.kernel.availability.known_availability`: running
        jobs' expected ends, downtime and drain ends, future downtimes, power-budget steps); read it through
        :meth:`availability`. None (a view built by hand): running jobs' expected ends only.
    availability_grows : bool
        True when the platform knows that the free nodes can only grow from now on if no job starts (no known
        downtime ahead, no node down, no power budget): a job that fits in ``free_nodes`` now then fits for its
        whole run, so EASY can start such jobs without building the availability profile. Default False.
    lookahead : object or None
        The platform's fork/rollout service (:class:`scheduler_sim.kernel.lookahead.Lookahead`: ``snapshot()``
        gives a frozen copy of the platform to roll candidate policies out of), for policies that look ahead (the
        twin); None in a view built by hand. A policy reaches the platform only through it, never directly.
    """

    now_s: float
    queue: tuple[int, ...]
    free_nodes: int
    nodes: np.ndarray
    estimate_s: np.ndarray
    submit_s: np.ndarray
    recorded_start_s: np.ndarray
    running: tuple[int, ...]
    start_s: np.ndarray
    n_nodes: int = 0
    account_id: np.ndarray | None = None
    queue_id: np.ndarray | None = None
    power_W: np.ndarray | None = None
    power_headroom_W: float = float("inf")
    availability_fn: Callable[[], tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None
    availability_grows: bool = False
    lookahead: Any = None

    def availability(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Free nodes and facility power headroom from now on if no new job starts (computed once per view).

        Returns
        -------
        times : ndarray of float64, shape (k,)
            Increasing breakpoints [s], ``times[0] == now_s``.
        free : ndarray of int64, shape (k,)
            Nodes free on ``[times[i], times[i+1])`` (the last value for ever).
        headroom : ndarray of float64, shape (k,)
            Facility power budget left on the same steps [W] (``inf`` without a budget).
        """
        cached = self.__dict__.get("_availability")
        if cached is None:
            if self.availability_fn is not None:
                cached = self.availability_fn()
            else:  # running jobs' expected ends only (past its estimate: just after now)
                soon = math.nextafter(self.now_s, math.inf)
                ends = np.array([max(self.expected_end_s(j), soon) for j in self.running], dtype=float)
                n = np.array([int(self.nodes[j]) for j in self.running], dtype=np.int64)
                p = (np.array([float(self.power_W[j]) for j in self.running]) if self.power_W is not None
                     else np.zeros(len(self.running)))
                times = np.unique(np.concatenate(([self.now_s], ends)))
                o = np.argsort(ends, kind="stable")
                idx = np.searchsorted(ends[o], times, side="right")
                free = self.free_nodes + np.concatenate(([0], np.cumsum(n[o])))[idx]
                head = self.power_headroom_W + np.concatenate(([0.0], np.cumsum(p[o])))[idx]
                cached = (times, free.astype(np.int64), head)
            object.__setattr__(self, "_availability", cached)
        return cached

    def __post_init__(self) -> None:
        """Freeze what the platform passed in: tuples for the job lists, read-only views for the arrays."""
        object.__setattr__(self, "queue", tuple(self.queue))
        object.__setattr__(self, "running", tuple(self.running))
        for name in _ARRAY_FIELDS:
            a = getattr(self, name)
            if not (type(a) is np.ndarray and a.base is not None and not a.flags.writeable):  # else frozen once
                object.__setattr__(self, name, _read_only(a))

    @classmethod
    def of_frozen(cls, **fields: Any) -> "SchedulerView":
        """The view of ``fields`` as the constructor makes it, without its copies when they are already frozen.

        The platform passes ``queue`` and ``running`` as tuples and every array as a read-only view made once per
        run (:func:`scheduler_sim.kernel.view.scheduler_view`), so the view is filled in directly (about 1 us
        instead of 15-40 us for the constructor's checks, at every scheduling pass: issue #26). A list, or an
        array that is still writeable, takes the constructor, so the view is as immutable either way.

        Parameters
        ----------
        **fields : Any
            The fields of :class:`SchedulerView` (those not given take their defaults).

        Returns
        -------
        SchedulerView
            The view.
        """
        if type(fields["queue"]) is not tuple or type(fields["running"]) is not tuple:
            return cls(**fields)
        for name in _ARRAY_FIELDS:
            a = fields.get(name)
            if a is not None and (type(a) is not np.ndarray or a.base is None or a.flags.writeable):
                return cls(**fields)
        v = object.__new__(cls)
        v.__dict__.update(_DEFAULTS)
        v.__dict__.update(fields)
        return v

    def fits(self, job: int, free_nodes: int, headroom_W: float) -> bool:
        """Whether ``job`` fits in ``free_nodes`` nodes and ``headroom_W`` of facility power budget."""
        if int(self.nodes[job]) > free_nodes:
            return False
        return self.power_W is None or float(self.power_W[job]) <= headroom_W

    def expected_end_s(self, job: int) -> float:
        """Expected end of a running job [s]: start + estimate, never earlier than now.

        A job without a wall-time limit may outlive its estimate; it is then expected to end "any moment now".
        """
        return max(self.now_s, float(self.start_s[job] + self.estimate_s[job]))


#: Array fields of :class:`SchedulerView` (frozen as read-only views).
_ARRAY_FIELDS = ("nodes", "estimate_s", "submit_s", "recorded_start_s", "start_s", "account_id", "queue_id", "power_W")
#: Defaults of :class:`SchedulerView`'s fields (for :meth:`SchedulerView.of_frozen`).
_DEFAULTS = {f.name: f.default for f in dataclasses.fields(SchedulerView) if f.default is not dataclasses.MISSING}


class BasePolicy(abc.ABC):
    """A scheduling policy: turns a :class:`SchedulerView` into the list of jobs to start now.

    Class attributes
    ----------------
    name : str
        Registry name used in configs and on the command line.
    description : str
        One line for ``hpctwin list policies``.
    kills_at_walltime : bool
        Whether the platform kills a job when it reaches its requested wall time under this policy
        (True for every policy that schedules on requested times; False for a faithful replay).
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    kills_at_walltime: ClassVar[bool] = True

    #: Reservations made in the last pass: job index -> reserved start time [s] (for validation and reports).
    reservations: dict[int, float]

    def run_info(self) -> dict:
        """Entries the platform adds to the run's ``info`` (written to ``/provenance`` info_json) at the end.

        Returns
        -------
        dict
            JSON-serialisable entries; the default has none.
        """
        return {}

    def bind(self, queue_names: list[str], account_names: list[str]) -> None:
        """Called once before the run with the names behind ``view.queue_id`` / ``view.account_id`` codes."""

    def job_ended(self, job: int, view: SchedulerView) -> None:
        """Called when a running job ends (completes or is killed), before the next scheduling pass."""

    def wants_job_ended(self) -> bool:
        """Whether :meth:`job_ended` does anything: the platform builds a view per job end only then.

        Returns
        -------
        bool
            True when a subclass overrides :meth:`job_ended` (the base method does nothing).
        """
        return type(self).job_ended is not BasePolicy.job_ended

    def wakeup_time(self, job: int, view: SchedulerView) -> float | None:
        """Return a time [s] at which the platform must run a scheduling pass for this newly queued job, or None.

        Called once when a job enters the queue. The default asks for nothing.
        """
        return None

    def wants_wakeup_time(self) -> bool:
        """Whether :meth:`wakeup_time` can ask for anything: the platform builds a view per submission only then.

        Returns
        -------
        bool
            True when a subclass overrides :meth:`wakeup_time` (the base method always returns None).
        """
        return type(self).wakeup_time is not BasePolicy.wakeup_time

    def next_pass_s(self, view: SchedulerView) -> float | None:
        """Return a time [s] at which the platform must run another scheduling pass, or None (the default).

        Called after every pass; a policy that holds jobs back until a known time (the ramp-rate limit of
        :class:`scheduler_sim.policies.grid_events.GridDynamicsPolicy`) asks for the pass here.
        """
        return None

    @abc.abstractmethod
    def schedule(self, view: SchedulerView) -> list[int]:
        """Return the queued jobs to start now, in the order they must be started.

        Parameters
        ----------
        view : SchedulerView
            The platform at this timestamp.

        Returns
        -------
        list of int
            Job indices, each in ``view.queue``; their total nodes must not exceed ``view.free_nodes``.
        """
