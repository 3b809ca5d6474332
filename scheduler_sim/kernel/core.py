"""The event kernel: a heap of timestamped events and the simulation clock.

The kernel is deliberately small (in the spirit of SimPy's ``Environment``): it knows time, a heap and a
sequence counter, nothing about jobs or power. The platform (:mod:`scheduler_sim.kernel.simulation`) gives events their
meaning.

Order of events
---------------
The heap is ordered by the key ``(time_s, priority, seq)``:

* ``time_s`` -- simulated time in seconds (float).
* ``priority`` -- an :class:`EventKind` value; at equal times lower values are handled first. The fixed order is
  ``JOB_END`` (completions and walltime kills) < ``NODE_DOWN`` < ``NODE_UP`` < ``JOB_SUBMIT`` < ``WAKEUP`` <
  ``POWER_CHANGE`` < ``JOB_POWER``.
  Every event of one timestamp is handled before the single scheduling pass of that timestamp, so a job ending at
  ``t`` frees its nodes for a job starting at ``t`` (DESIGN.md, EASY pitfalls: "completions are processed before
  the scheduling pass at the same timestamp").
* ``seq`` -- insertion counter of this :class:`Environment` (never class-level), so equal ``(time, priority)``
  events keep insertion order and runs are deterministic.

Life-cycle of an event: it *is going to happen* once pushed with :meth:`Environment.schedule`; it *has happened*
when :meth:`Environment.pop_batch` returns it. Events are never cancelled; a handler that finds its event stale
(e.g. the end of a job already killed) ignores it.
"""

from __future__ import annotations

import enum
import heapq
import itertools
import math

__all__ = ["EventKind", "Environment"]


class EventKind(enum.IntEnum):
    """Kinds of events; the integer value is the tie-break priority at equal timestamps (lower first)."""

    JOB_END = 0
    """A running job completes, or is killed at its requested wall time. Payload: job index."""
    NODE_DOWN = 1
    """Nodes go down (failure or maintenance); a job on them is killed. Payload: node index array."""
    NODE_UP = 2
    """Nodes return to service. Payload: node index array."""
    JOB_SUBMIT = 3
    """A job enters the queue. Payload: job index."""
    WAKEUP = 4
    """A policy asked to be woken at this time (e.g. replay at a recorded start). Payload: None."""
    POWER_CHANGE = 5
    """The power of a reserved partition changes (e.g. an LLM-serving partition). Payload: profile row index."""
    JOB_POWER = 6
    """A running job's measured node power changes (telemetry time series). Payload: (job, sample, attempt start)."""


#: The kinds by value: the heap holds plain ints (cheap to compare), turned back into their kind by a lookup (an
#: ``EventKind(k)`` call costs ~0.5 us per event).
_KINDS = tuple(EventKind)


class Environment:
    """Simulation clock and event heap.

    Parameters
    ----------
    start_s : float
        Initial simulated time [s].

    Attributes
    ----------
    now : float
        Current simulated time [s]; never decreases.
    """

    def __init__(self, start_s: float = 0.0) -> None:
        self.now: float = float(start_s)
        self._heap: list[tuple[float, int, int, object]] = []
        self._seq = itertools.count()

    def __len__(self) -> int:
        return len(self._heap)

    def _next_seq(self) -> int:
        """The next sequence number, without consuming it."""
        n = next(self._seq)
        self._seq = itertools.count(n)
        return n

    def fork(self) -> "Environment":
        """An independent copy: same clock and pending events; later pushes to either do not affect the other.

        Pending events keep their sequence numbers and the copy's counter continues from the original's, so the
        copy pops events in exactly the order the original would.
        """
        new = Environment(self.now)
        new._heap = list(self._heap)  # entries are immutable tuples; payloads are never mutated
        new._seq = itertools.count(self._next_seq())
        return new

    def __deepcopy__(self, memo: dict) -> "Environment":
        """Deep copy = :meth:`fork` (heap entries are immutable tuples whose payloads are never mutated)."""
        return self.fork()

    def __getstate__(self) -> dict:
        return {"now": self.now, "heap": self._heap, "seq": self._next_seq()}

    def __setstate__(self, state: dict) -> None:
        self.now = state["now"]
        self._heap = state["heap"]
        self._seq = itertools.count(state["seq"])

    def schedule(self, time_s: float, kind: EventKind, payload: object = None) -> None:
        """Push an event.

        Parameters
        ----------
        time_s : float
            When the event happens [s]; must be finite and >= :attr:`now`.
        kind : EventKind
            Kind, which also fixes its order among events of the same time.
        payload : object
            Kind-specific data (see :class:`EventKind`).

        Raises
        ------
        ValueError
            If ``time_s`` is NaN/infinite or lies in the past.
        """
        if not math.isfinite(time_s):
            raise ValueError(f"event time must be finite, got {time_s!r} for {kind.name}")
        if time_s < self.now:
            raise ValueError(f"cannot schedule {kind.name} at t={time_s} s before now={self.now} s")
        heapq.heappush(self._heap, (float(time_s), int(kind), next(self._seq), payload))

    def pending(self, kind: EventKind) -> int:
        """Number of pending events of ``kind``."""
        k = int(kind)
        return sum(1 for e in self._heap if e[1] == k)

    def peek_time(self) -> float:
        """Return the time of the next event [s], or ``inf`` when the heap is empty."""
        return self._heap[0][0] if self._heap else math.inf

    def pop_batch(self) -> list[tuple[EventKind, object]]:
        """Advance :attr:`now` to the next event time and pop every event of that time, in heap order.

        Returns
        -------
        list of (EventKind, payload)
            All events with ``time == now``, ordered by (priority, seq). Empty if the heap is empty.
        """
        if not self._heap:
            return []
        t = self._heap[0][0]
        self.now = t
        out = []
        heap = self._heap
        pop, kinds = heapq.heappop, _KINDS
        while heap and heap[0][0] == t:
            _, kind, _, payload = pop(heap)
            out.append((kinds[kind], payload))
        return out
