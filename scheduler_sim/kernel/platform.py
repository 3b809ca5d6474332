"""What each kernel service may use of the platform it serves: one narrow protocol per service (issue #27 item 2).

The :class:`~scheduler_sim.kernel.simulation.Simulation` builds its services (event handlers, job life-cycle,
window opening, result assembly, look-ahead) and hands each of them itself; each service names the platform it
takes by the protocol below, not by the ``Simulation`` class, so no service module imports the simulation (the
import circle of the kernel is gone, typing included) and the members a service reaches are declared here.
``tests/unit/test_kernel_size.py`` checks that every ``platform.member`` a service module uses is declared in its
protocol, so a new reach into the platform is a visible change of this file.

========================  =====================================  ==============================================
service                   module                                 protocol
========================  =====================================  ==============================================
event handlers            :mod:`.events`                         :class:`EventPlatform`
job life-cycle            :mod:`.lifecycle`                      :class:`LifecyclePlatform`
window opening            :mod:`.window`                         :class:`WindowPlatform`
result assembly           :mod:`.results`                        :class:`ResultPlatform`
look-ahead (fork/rollout) :mod:`.lookahead`                      :class:`ForkPlatform`
========================  =====================================  ==============================================

Members are the platform's attributes as :class:`~scheduler_sim.kernel.simulation.Simulation` documents them
(SI units: times [s] from the trace origin).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # annotations only; none of these modules imports a service
    import numpy as np

    from cooling_fmu.coupling import Plant
    from power import PowerChain, System

    from ..policies import BasePolicy, SchedulerView
    from .attempts import AttemptLog
    from .config import SimulationConfig
    from .coupler import CoolingCoupler
    from .jobdata import JobTable, NodePowerProfile
    from .placement import Placement
    from .powercap import PowerCapGovernor
    from .state import PlatformState, StateLayout
    from .stepfunction import StepFunction

__all__ = ["LifecycleActions", "EventPlatform", "WindowPlatform", "LifecyclePlatform", "ResultPlatform",
           "ForkPlatform"]


class LifecycleActions(Protocol):
    """The job life-cycle's actions that the event handlers and the window opening call."""

    def finish(self, j: int, now: float, outcome: int) -> None:
        """End job ``j`` at ``now`` [s] with a :class:`~scheduler_sim.kernel.jobdata.JobOutcome` code."""

    def kill(self, j: int, now: float) -> None:
        """Kill job ``j`` at ``now`` [s] (requeue or end)."""

    def set_job_power(self, j: int, p_node_W: float) -> None:
        """Set running job ``j``'s node power [W]."""

    def prefill(self) -> None:
        """Place the jobs running at the window start."""


class EventPlatform(Protocol):
    """What the event handlers (:class:`~scheduler_sim.kernel.events.EventHandlers`) use."""

    state: PlatformState
    jobdata: JobTable
    partition: NodePowerProfile | None
    policies: list
    lifecycle: LifecycleActions

    def view(self, part: int | None = None) -> SchedulerView:
        """The view a policy decides on now (of partition ``part``)."""


class WindowPlatform(Protocol):
    """What the window opening (:func:`~scheduler_sim.kernel.window.open_window`) uses."""

    config: SimulationConfig
    t0: float
    state: PlatformState
    partition: NodePowerProfile | None
    failures: np.ndarray
    lifecycle: LifecycleActions
    jobdata: JobTable


class LifecyclePlatform(Protocol):
    """What the job life-cycle (:class:`~scheduler_sim.kernel.lifecycle.JobLifecycle`) uses."""

    state: PlatformState
    jobdata: JobTable
    system: System
    config: SimulationConfig
    chain: PowerChain
    placement: Placement
    governor: PowerCapGovernor
    policy: BasePolicy | None
    policies: list
    info: dict
    t0: float
    reservation_log: list
    attempts: AttemptLog

    def view(self, part: int | None = None) -> SchedulerView:
        """The view a policy decides on now (of partition ``part``)."""


class ResultPlatform(Protocol):
    """What the result assembly (:mod:`~scheduler_sim.kernel.results`) reads of a finished (or stopped) run."""

    state: PlatformState
    jobdata: JobTable
    system: System
    config: SimulationConfig
    layout: StateLayout
    coupler: CoolingCoupler | None
    plant: Plant | None
    governor: PowerCapGovernor
    stepfn: StepFunction
    policy: BasePolicy | None
    info: dict
    attempts: AttemptLog
    t0: float
    t1: float
    step_s: float
    ratio: int
    interval_s: float


class ForkPlatform(Protocol):
    """What the look-ahead service (:mod:`~scheduler_sim.kernel.lookahead`) uses of the platform and its forks."""

    state: PlatformState
    jobdata: JobTable
    system: System
    layout: StateLayout
    governor: PowerCapGovernor

    def fork(self, policy: BasePolicy | None) -> ForkPlatform:
        """An independent copy of the platform now, running ``policy``."""

    def rollout(self, until_s: float, cooling: object = None) -> dict[str, float]:
        """Run the fork to ``until_s`` [s] and score the interval."""

    def replace_jobdata(self, jobdata: JobTable) -> None:
        """Give the fork other job data (revised runtimes / submissions) and rebuild its services."""
