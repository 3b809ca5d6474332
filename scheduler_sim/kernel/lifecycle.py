"""Job life-cycle on the platform: start (placement, power), end, kill (requeue or end), and the run times.

A job is queued (``JobSubmit``), started by a policy decision that :meth:`JobLifecycle.apply` validates, then
ends at its scheduled end (completion, or a kill at its requested wall time under a policy that kills), is killed
by a node going down (requeued from scratch keeping its submit time, or ended, per ``on_failure``), or is cut at
the run horizon. Every attempt is recorded with its nodes and per-node rack-input power for exact attribution.
"""

from __future__ import annotations

import bisect
import math
import time
from typing import TYPE_CHECKING

import numpy as np

from ..policies import PolicyError, SchedulerView
from ..policies.replay import Replay
from .core import EventKind
from .events import JobEnd, JobPower
from .jobdata import JobOutcome
from .sharing import share_power, slot_table_of

if TYPE_CHECKING:  # typing only: what the service uses of the platform (kernel.platform)
    from .platform import LifecyclePlatform

__all__ = ["JobLifecycle"]


class JobLifecycle:
    """Start, end and kill jobs on one platform.

    Parameters
    ----------
    sim : LifecyclePlatform
        The platform (its state, job data, policy, placement and power chain).
    """

    def __init__(self, sim: LifecyclePlatform) -> None:
        self.sim = sim
        self._idle_W = None if sim.system.partitioned else float(sim.jobdata.idle_node_power_W)  # every node's [W]
        self._whole = not (sim.system.partitioned or sim.system.shares)  # whole nodes of one pool: no slot table

    def run_duration(self, j: int) -> tuple[float, int]:
        """Simulated run time of job ``j`` [s] and its outcome if it runs to that time."""
        jobs = self.sim.jobdata
        rt = float(jobs.runtime[j])
        if self.sim.policy.kills_at_walltime and jobs.has_limit[j] and rt > jobs.estimate[j]:
            return float(jobs.estimate[j]), JobOutcome.KILLED_WALLTIME
        return rt, JobOutcome.COMPLETED

    def prefill_duration(self, j: int) -> tuple[float, int]:
        """Time a carried-in (prefilled) job still runs after ``t0`` [s], and its outcome when it gets there.

        Carried-in jobs obey the same wall-time rule as every other job (:meth:`run_duration`): under a policy
        that kills at the requested time, a job whose recorded end lies past ``recorded start + requested time``
        is killed at that limit (``KILLED_WALLTIME``), even though the site let it run on. The duration is
        ``<= 0`` when the limit fell at or before ``t0``: the job is then recorded as killed at its limit and
        never occupies the window's nodes.
        """
        jobs, t0 = self.sim.jobdata, self.sim.t0
        end = float(jobs.recorded_end[j])
        if self.sim.policy.kills_at_walltime and jobs.has_limit[j]:
            limit_end = float(jobs.recorded_start[j] + jobs.estimate[j])
            if end > limit_end:
                return limit_end - t0, JobOutcome.KILLED_WALLTIME
        return end - t0, JobOutcome.COMPLETED

    def _node_shares(self, nodes: np.ndarray, p_node_W: float) -> tuple[np.ndarray, np.ndarray]:
        """Rack-input power of ``nodes`` now, all at DC power ``p_node_W`` [W], and its sum per CDU [W]
        (:meth:`power.PowerChain.node_it_input_w_at`: exact when the conversion stages are affine, the default;
        with an I^2R term it is evaluated now from the whole machine).
        """
        sysm = self.sim.system
        shares = self.sim.chain.node_it_input_w_at(self.sim.state.node_dc, nodes, p_node_W)
        return shares, np.bincount(sysm.node_cdu[nodes], weights=shares, minlength=sysm.n_cdus)

    def _share(self, j: int, p_node_W: float | None, nodes: np.ndarray, now: float) -> None:
        """Power by share on a sharing partition (:func:`~scheduler_sim.kernel.sharing.share_power`)."""
        share_power(j, p_node_W, nodes, now, self.sim.system, self.sim.jobdata, self.sim.state, self.sim.chain)

    def start(self, j: int, now: float, duration: float) -> None:
        """Start job ``j`` at ``now`` [s] for ``duration`` [s] on nodes chosen by the placement."""
        sim, st, jobs = self.sim, self.sim.state, self.sim.jobdata
        led = st.ledger
        order = sim.placement.node_order(st.node_dc, st.cooling)
        if not self._whole:  # a job runs on the nodes (slots) of its partition
            p = sim.system.partitions[int(jobs.partition[j])]
            nodes = st.alloc.allocate(j, int(jobs.slots[j]), order, p.first_node, p.first_node + p.n_nodes)
        else:
            nodes = st.alloc.allocate(j, int(jobs.nodes[j]), order)
        st.job_nodes[j] = nodes
        prof = jobs.profiles.get(j) if jobs.profiles else None
        led.cur_node_power[j] = prof[1][0] if prof is not None else jobs.node_power_W[j]
        tbl = None if self._whole else slot_table_of(j, sim.system, jobs, st.alloc)
        if tbl is None:
            st.node_dc[nodes] = led.cur_node_power[j]
        led.begin_attempt(j, now)
        if prof is not None:
            for k in range(1, prof[0].size):
                if prof[0][k] < duration:
                    st.env.schedule(now + prof[0][k], EventKind.JOB_POWER, JobPower(j, k, now))
        if tbl is None:
            shares, cdu_W = self._node_shares(nodes, led.cur_node_power[j])
            led.set_power(j, shares, cdu_W)
            st.attempt_shares[j] = shares
        else:  # a shared node: power by share, the co-tenants re-charged
            self._share(j, led.cur_node_power[j], nodes, now)
        st.start[j] = now if not st.prefilled[j] else jobs.recorded_start[j]
        st.running_since[j] = now
        st.running[j] = None
        end = now + duration
        st.scheduled_end[j] = end
        st.env.schedule(end, EventKind.JOB_END, JobEnd(j, end))
        st.step.touch(nodes)

    def set_job_power(self, j: int, p_node_W: float) -> None:
        """Change a running job's node DC power [W] (telemetry sample) and its attributed rack-input power."""
        sim, st = self.sim, self.sim.state
        nodes = st.job_nodes[j]
        if slot_table_of(j, sim.system, sim.jobdata, st.alloc) is not None:
            self._share(j, p_node_W, nodes, st.env.now)
            return
        st.ledger.cur_node_power[j] = p_node_W
        st.node_dc[nodes] = p_node_W
        shares, cdu_W = self._node_shares(nodes, p_node_W)
        st.ledger.set_power(j, shares, cdu_W)
        st.step.touch(nodes)

    def finish(self, j: int, now: float, outcome: int) -> None:
        """End job ``j``'s attempt at ``now`` [s] with ``outcome``; free its nodes and record the attempt."""
        sim, st = self.sim, self.sim.state
        led = st.ledger
        tbl = None if self._whole else slot_table_of(j, sim.system, sim.jobdata, st.alloc)
        varying = j in sim.jobdata.profiles or tbl is not None  # a tenant's power changes with its co-tenants
        pol = sim.policies[int(sim.jobdata.partition[j])]
        if pol.wants_job_ended():  # a view per job end only for a policy that reads it
            pol.job_ended(j, sim.view(int(sim.jobdata.partition[j])))
        led.accrue_job(j, now, st.job_nodes[j].size, varying)  # per-CDU energy: read for a varying job only
        nodes = st.job_nodes.pop(j)
        run = now - st.running_since[j]
        if varying:
            if run > 0:  # per-CDU power of a varying job: its mean over the attempt
                led.job_cdu_it_W[j] = led.job_cdu_E[j] / run
            led.job_cdu_E[j] = 0.0
        st.alloc.release(j, nodes)
        st.node_dc[nodes] = self._idle_W if self._idle_W is not None else sim.jobdata.idle_node_W[nodes]
        if tbl is not None:  # the co-tenants of its nodes, re-charged without it
            self._share(j, None, nodes, now)
        st.end[j] = now
        st.outcome[j] = outcome
        del st.running[j]
        # per-node rack-input power of this attempt (its mean when the power varied), for exact attribution
        shares = st.attempt_shares.pop(j)
        if varying and run > 0 and shares.sum() > 0:
            shares = shares * ((led.energy_it[j] - led.attempt_it0[j]) / run / shares.sum())
        sim.attempts.append((j, st.running_since[j], now, nodes, shares))
        st.step.touch(nodes)
        st.jobs_left -= 1

    def kill(self, j: int, now: float) -> None:
        """Kill a job whose node went down: end it, or requeue it (``on_failure``), counting what was lost."""
        sim, st = self.sim, self.sim.state
        led = st.ledger
        dt = now - st.running_since[j]
        tbl = slot_table_of(j, sim.system, sim.jobdata, st.alloc)
        st.lost_node_s[j] += (st.job_nodes[j].size if tbl is None else sim.jobdata.slots[j] / tbl.S) * dt
        self.finish(j, now, JobOutcome.KILLED_NODE_DOWN)
        led.lost_energy_dc[j] += led.energy_dc[j] - led.attempt_energy0[j]
        if sim.config.on_failure == "requeue":
            st.jobs_left += 1
            st.n_requeues[j] += 1
            st.start[j] = st.end[j] = np.nan
            st.outcome[j] = JobOutcome.NOT_RUN
            st.prefilled[j] = False
            submit = sim.jobdata.submit
            key = (submit[j], j)
            pos = bisect.bisect_left([(submit[q], q) for q in st.queue], key)
            st.queue.insert(pos, j)

    def cut_at_horizon(self, t: float) -> None:
        """End every running job at the horizon ``t`` [s] (outcome ``CUT_AT_HORIZON``, energy counted up to ``t``)."""
        cut = list(self.sim.state.running)
        for j in cut:
            self.finish(j, t, JobOutcome.CUT_AT_HORIZON)
        self.sim.info["stopped_at_horizon_s"] = float(t)
        self.sim.info["jobs_cut_at_horizon"] = len(cut)

    def prefill(self) -> None:
        """Place the jobs running at ``t0`` first (:func:`_prefill`)."""
        _prefill(self)

    def free_nodes(self, j: int) -> int:
        """Nodes idle and up now where job ``j`` may run (its partition's; free slots of a sharing partition)."""
        sim = self.sim
        if not sim.system.partitioned and not sim.system.shares:
            return sim.state.alloc.n_free
        p = sim.system.partitions[int(sim.jobdata.partition[j])]
        return sim.state.alloc.n_free_in(p.first_node, p.first_node + p.n_nodes)

    def scheduling_pass(self, t: float) -> None:
        """The scheduling pass of timestamp ``t`` [s]: the policy decides on its view, :meth:`apply` starts the jobs.

        On a partitioned system each batch partition with queued jobs has its own pass, in partition order, with its
        own policy copy (its own reservations: Slurm's per-partition backfill) on the view of that partition; the
        jobs one partition starts are started before the next partition's view is taken (so the power budget they
        use is seen). Counts the pass, the longest queue, the policy's wall time, replayed jobs started after their
        recorded start, and whether the power budget held back a job that fitted in nodes.
        """
        sim = self.sim
        st = sim.state
        c = st.counters
        c.n_passes += 1
        c.max_queue = max(c.max_queue, len(st.queue))
        if not sim.system.partitioned and not sim.system.shares:
            self._pass_one(t, sim.policy, None)
            return
        queued = set(int(k) for k in sim.jobdata.partition[st.queue])
        binding = False
        log: dict[int, float] = {}
        for p in sim.system.partitions:
            pol = sim.policies[p.index]
            if pol is None or p.index not in queued:
                continue
            binding |= self._pass_one(t, pol, p.index, log)
        if sim.config.record_reservations:
            sim.reservation_log.append((t, log))
        c.cap_binding = binding

    def _pass_one(self, t: float, policy, part: int | None, log: dict | None = None) -> bool:
        """One policy's pass on the view of ``part`` (None: the whole platform); returns whether the power budget
        held a job back. ``log`` (a partitioned system) collects the reservations instead of the reservation log.
        """
        sim = self.sim
        st = sim.state
        c = st.counters
        tp = time.perf_counter()
        view = sim.view(part)
        decisions = policy.schedule(view)
        c.pass_time_s += time.perf_counter() - tp
        if log is not None:
            log.update(getattr(policy, "reservations", {}))
        elif sim.config.record_reservations:
            sim.reservation_log.append((t, dict(getattr(policy, "reservations", {}))))
        if decisions:
            self.apply(decisions, t, view, part)
            if isinstance(policy, Replay):
                rs = sim.jobdata.recorded_start
                c.n_late_replay += sum(1 for j in decisions if math.isfinite(rs[j]) and rs[j] < t)
        wake = policy.next_pass_s(view)  # a policy holding jobs until a known time (#15 ramp limit)
        if wake is not None:
            st.env.schedule(max(wake, t), EventKind.WAKEUP, None)
        binding = False
        left = bool(st.queue) if part is None else bool(np.any(sim.jobdata.partition[st.queue] == part))
        if view.power_W is not None and left:
            binding = sim.governor.binding(st, view.power_W, view.power_headroom_W, decisions)
            c.cap_binding = binding
            c.cap_bound_passes += int(binding)
        return binding

    def apply(self, decisions: list[int], now: float, view: SchedulerView, part: int | None = None) -> None:
        """Start the jobs a policy decided on at ``now`` [s], after checking the decision.

        Parameters
        ----------
        decisions : list[int]
            Job indices to start, in order.
        now : float
            Current time [s].
        view : SchedulerView
            The view the policy decided on (its job powers and power headroom).
        part : int | None
            The partition the view is of (its jobs only, its free nodes); None: the whole platform.

        Raises
        ------
        PolicyError
            If a job is started twice, is not queued, or the jobs do not fit in the free nodes or under the power
            budget.
        """
        sim, st = self.sim, self.sim.state
        name = sim.policy.name
        queued = set(view.queue) if part is not None else set(st.queue)
        need = 0
        power = 0.0
        if len(set(decisions)) != len(decisions):
            raise PolicyError(f"policy {name!r} started a job twice at t={now}")
        for j in decisions:
            if j not in queued:
                raise PolicyError(f"policy {name!r} started job index {j} which is not queued at t={now}")
            need += int(sim.jobdata.slots[j])
            if view.power_W is not None:
                power += float(view.power_W[j])
        free = view.free_nodes if part is not None else st.alloc.n_free
        if need > free:
            raise PolicyError(f"policy {name!r} asked for {need} nodes (slots) at t={now} but only "
                              f"{free} are free" + (f" in partition {sim.system.partitions[part].name!r}"
                                                     if part is not None else ""))
        if power > view.power_headroom_W + 1e-6:
            raise PolicyError(f"policy {name!r} would exceed the facility power budget at t={now}: "
                              f"+{power:.0f} W with {view.power_headroom_W:.0f} W of headroom")
        started = set(decisions)
        st.queue = [j for j in st.queue if j not in started]
        for j in decisions:
            duration, outcome = self.run_duration(j)
            st.outcome_if_ends[j] = outcome
            self.start(j, now, duration)


def _prefill(lc: JobLifecycle) -> None:
    """Place the jobs running at ``t0`` first, in recorded-start order, for their remaining recorded time (the
    :class:`JobLifecycle` ``lc``'s :meth:`JobLifecycle.prefill`).

    A job whose wall-time limit fell at or before ``t0`` is recorded as killed there; one that no longer fits
    (the machine is smaller than the site's) is queued instead. Both counts go to the run's info.
    """
    sim, st, jobs = lc.sim, lc.sim.state, lc.sim.jobdata
    pre = np.flatnonzero(st.prefilled)
    pre = pre[np.argsort(jobs.recorded_start[pre], kind="stable")]
    n_pre_failed = n_pre_past_limit = 0
    for j in pre:
        duration, outcome = lc.prefill_duration(int(j))
        if duration <= 0:  # its limit fell at or before t0: killed there, never on the window's nodes
            n_pre_past_limit += 1
            st.start[j] = jobs.recorded_start[j]
            st.end[j] = sim.t0 + duration
            st.outcome[j] = outcome
            st.jobs_left -= 1
            continue
        if jobs.slots[j] > lc.free_nodes(int(j)):
            n_pre_failed += 1  # the machine is smaller than the site's; queue it instead
            st.prefilled[j] = False
            continue
        st.outcome_if_ends[j] = outcome
        lc.start(int(j), sim.t0, duration)
    sim.info["prefill_queued_for_lack_of_nodes"] = n_pre_failed
    sim.info["prefill_killed_at_walltime_by_window_start"] = n_pre_past_limit
