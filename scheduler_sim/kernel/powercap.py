"""The facility power-cap governor: the budget in force, the predicted facility power, and what it admits.

A job is never started if the predicted facility power (IT with the losses of every node, plus the cooling ratio x
IT) would exceed the budget in force; running jobs are never stopped. The cooling ratio is the facility power
beyond IT per IT watt of the plant's last step (liquid plant plus :mod:`power.facility` overheads), else the
configured estimate. A queued job that no budget still to come could admit, even on an idle machine, is rejected
(``REJECTED_POWER_CAP``) so that it does not hold the head of the queue for ever.
"""

from __future__ import annotations

import math

import numpy as np

from power import PowerChain

from .jobdata import JobOutcome, JobTable
from .state import PlatformState, StateLayout

__all__ = ["PowerCapGovernor"]


class PowerCapGovernor:
    """Budget schedule, prediction and admission of the facility power cap.

    Parameters
    ----------
    schedule : list[tuple[float, float]]
        ``(t_s, cap_W)`` budget schedule, sorted by time: from ``t_s`` [s] on, the budget is ``cap_W`` [W] (``inf`` = none).
    cooling_estimate : float
        Overhead power per IT watt used before the plant reports [1].
    jobs : JobTable
        The run's jobs (marginal rack-input power of starting each, idle IT power of the machine).
    chain : PowerChain
        The power chain (IT power of the node power now).
    layout : StateLayout
        Columns of the step-function vector.
    """

    def __init__(self, schedule: list[tuple[float, float]], cooling_estimate: float, jobs: JobTable,
                 chain: PowerChain, layout: StateLayout) -> None:
        self.schedule = schedule
        self.cooling_estimate = float(cooling_estimate)
        self.jobs = jobs
        self.chain = chain
        self.layout = layout

    @property
    def active(self) -> bool:
        """A budget is set at some time of the run."""
        return bool(self.schedule)

    def cap_at(self, now: float) -> float:
        """Facility power budget in force at ``now`` [W] (inf when none)."""
        cap = math.inf
        for t, w in self.schedule:
            if t <= now:
                cap = w
            else:
                break
        return cap

    def cooling_ratio(self, state: PlatformState) -> float:
        """Overhead power per IT watt for the prediction: (facility - IT) / IT of the plant's last step, else the
        configured estimate [1].
        """
        c = state.cooling
        if c.plant_state is not None and c.last_it_W > 0:
            return c.last_overhead_W / c.last_it_W
        return self.cooling_estimate

    def predicted_facility_W(self, state: PlatformState) -> float:
        """Predicted facility power now [W]: IT (rack input, from the power chain) x (1 + cooling ratio)."""
        if state.step.dirty:
            it = float(self.chain.evaluate(state.node_dc).it_input_W)
        else:
            it = float(state.step.vec[self.layout.it])
        return it * (1.0 + self.cooling_ratio(state))

    def job_power_W(self, state: PlatformState) -> np.ndarray:
        """Facility power each job would add by starting now [W], shape (n_jobs,)."""
        return self.jobs.marginal_it_W * (1.0 + self.cooling_ratio(state))

    def reject_beyond_cap(self, state: PlatformState, info: dict) -> None:
        """Take out of the queue the jobs that no budget still to come could ever admit, even on an idle machine.

        Their outcome becomes ``REJECTED_POWER_CAP``; the count is added to ``info["jobs_rejected_power_cap"]``.
        """
        now = state.env.now
        best_cap = max([w for t, w in self.schedule if t > now] + [self.cap_at(now)])
        if not math.isfinite(best_cap):
            return
        ratio = self.cooling_ratio(state)
        floor_W = self.jobs.idle_it_all_W * (1.0 + ratio)
        need = self.jobs.marginal_it_W * (1.0 + ratio)
        out = [j for j in state.queue if floor_W + need[j] > best_cap]
        if out:
            gone = set(out)
            state.queue = [j for j in state.queue if j not in gone]
            for j in out:
                state.outcome[j] = JobOutcome.REJECTED_POWER_CAP
                state.jobs_left -= 1
            info["jobs_rejected_power_cap"] = info.get("jobs_rejected_power_cap", 0) + len(out)

    def binding(self, state: PlatformState, power_W: np.ndarray, headroom_W: float, decisions: list[int]) -> bool:
        """The budget holds back a queued job that fits in the free nodes (after this pass's ``decisions``).

        Parameters
        ----------
        state : PlatformState
            The platform after the pass.
        power_W : np.ndarray
            Shape (n_jobs,): facility power each job would add [W] (the view's).
        headroom_W : float
            Headroom under the budget before the pass [W].
        decisions : list[int]
            Jobs the pass started.

        Returns
        -------
        bool
            True when a queued job fits in nodes but not in power.
        """
        head = headroom_W - sum(float(power_W[j]) for j in decisions)
        free = state.alloc.n_free
        nodes = self.jobs.nodes
        return any(nodes[j] <= free and power_W[j] > head for j in state.queue)
