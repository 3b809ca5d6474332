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

from ..policies import SchedulerView
from .availability import known_availability
from .config import SimulationConfig
from .jobdata import JobTable
from .powercap import PowerCapGovernor
from .state import PlatformState

__all__ = ["scheduler_view"]


def scheduler_view(st: PlatformState, jobs: JobTable, gov: PowerCapGovernor, cfg: SimulationConfig) -> SchedulerView:
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

    Returns
    -------
    SchedulerView
        Immutable; ``power_W`` is None and the headroom infinite without a budget.
    """
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
    running = list(st.running)
    return SchedulerView(
        now_s=now, queue=tuple(st.queue), free_nodes=st.alloc.n_free, nodes=jobs.nodes,
        estimate_s=jobs.estimate, submit_s=jobs.submit, recorded_start_s=jobs.recorded_start,
        running=tuple(running), start_s=st.start, n_nodes=jobs.n_pool,
        account_id=jobs.account_id, queue_id=jobs.queue_id, power_W=power, power_headroom_W=headroom,
        availability_fn=lambda: known_availability(
            now, st.alloc.owner, st.alloc.down_count, running, st.start, jobs.estimate,
            list(cfg.downtimes), power, facility_W, list(cfg.power_cap), jobs.nodes, st.alloc.n_free),
    )
