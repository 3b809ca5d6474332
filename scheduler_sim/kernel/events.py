"""Typed events of the platform and their handlers, one handler per :class:`~scheduler_sim.kernel.core.EventKind`.

Each event's payload is a small immutable record (a :class:`typing.NamedTuple`, cheap to create and to order in
the heap); :class:`EventHandlers` maps each kind to the one method that gives it its meaning. Every event of a
timestamp is handled, in the kernel's fixed order (:mod:`scheduler_sim.kernel.core`), before that timestamp's
single scheduling pass. Events are never cancelled: a handler that finds its event stale (the end of an attempt
that was killed, a power sample of a job that restarted) ignores it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from .core import EventKind

if TYPE_CHECKING:  # typing only: what the service uses of the platform (kernel.platform)
    from .platform import EventPlatform

__all__ = ["JobEnd", "JobSubmit", "NodeDown", "NodeUp", "PowerChange", "JobPower", "EventHandlers"]


class JobEnd(NamedTuple):
    """A running attempt ends (completion or wall-time kill) at ``t_end_s`` [s]; stale when the job was killed."""

    job: int
    t_end_s: float


class JobSubmit(NamedTuple):
    """A job enters the queue."""

    job: int


class NodeDown(NamedTuple):
    """Nodes go down; ``drain`` lets running jobs finish (no new start), otherwise they are killed."""

    nodes: np.ndarray
    drain: bool


class NodeUp(NamedTuple):
    """Nodes return to service."""

    nodes: np.ndarray


class PowerChange(NamedTuple):
    """The co-located partition's power moves to row ``row`` of its profile."""

    row: int


class JobPower(NamedTuple):
    """Sample ``sample`` of a running job's measured power starts; stale unless the attempt began at
    ``attempt_start_s`` [s].
    """

    job: int
    sample: int
    attempt_start_s: float


class EventHandlers:
    """The handlers of one platform (a :class:`~scheduler_sim.kernel.simulation.Simulation`).

    Parameters
    ----------
    sim : EventPlatform
        The platform whose state the handlers change.
    """

    def __init__(self, sim: EventPlatform) -> None:
        self.sim = sim
        self.table = {EventKind.JOB_END: self.job_end, EventKind.JOB_SUBMIT: self.job_submit,
                      EventKind.NODE_DOWN: self.node_down, EventKind.NODE_UP: self.node_up,
                      EventKind.WAKEUP: self.wakeup, EventKind.POWER_CHANGE: self.power_change,
                      EventKind.JOB_POWER: self.job_power}

    def handle(self, batch: list, t: float) -> None:
        """Handle the events of timestamp ``t`` [s] (``(kind, payload)`` pairs, in heap order)."""
        table = self.table
        for kind, payload in batch:
            table[kind](payload, t)

    def job_end(self, ev: JobEnd, t: float) -> None:
        """End the attempt with the outcome fixed at its start, unless the event is stale."""
        st = self.sim.state
        j = ev.job
        if j in st.running and ev.t_end_s == st.scheduled_end[j]:  # else stale (job was killed)
            self.sim.lifecycle.finish(j, t, int(st.outcome_if_ends[j]))

    def job_submit(self, ev: JobSubmit, t: float) -> None:
        """Queue the job; a policy may ask to be woken later for it (e.g. replay at its recorded start)."""
        sim = self.sim
        sim.state.queue.append(ev.job)
        pol = sim.policies[int(sim.jobdata.partition[ev.job])]
        if not pol.wants_wakeup_time():  # a view per submission only for a policy that can ask
            return
        wt = pol.wakeup_time(ev.job, sim.view(int(sim.jobdata.partition[ev.job])))
        if wt is not None:
            sim.state.env.schedule(wt, EventKind.WAKEUP, None)

    def node_down(self, ev: NodeDown, t: float) -> None:
        """Take nodes out of service; kill (or, draining, keep) the jobs on them."""
        st = self.sim.state
        hit = st.alloc.set_down(ev.nodes)
        st.step.dirty = True
        if not ev.drain:
            for j in hit:
                self.sim.lifecycle.kill(int(j), t)
                st.counters.drained_kills += 1

    def node_up(self, ev: NodeUp, t: float) -> None:
        """Return nodes to service."""
        st = self.sim.state
        st.alloc.set_up(ev.nodes)
        st.step.dirty = True

    def wakeup(self, ev: None, t: float) -> None:
        """Nothing: a wake-up only makes sure a scheduling pass happens at ``t``."""

    def power_change(self, ev: PowerChange, t: float) -> None:
        """Set the partition's node power to its profile row."""
        st = self.sim.state
        part = self.sim.partition
        st.node_dc[part.nodes] = part.P_W[ev.row]
        st.step.touch(part.nodes)
        st.counters.required -= 1

    def job_power(self, ev: JobPower, t: float) -> None:
        """Move a running job to its next measured power sample, unless it ended or restarted since."""
        sim = self.sim
        st = sim.state
        j = ev.job
        if j in st.running and st.running_since[j] == ev.attempt_start_s:  # else the job ended or restarted
            st.ledger.accrue_job(j, t, st.job_nodes[j].size)
            sim.lifecycle.set_job_power(j, float(sim.jobdata.profiles[j][1][ev.sample]))
