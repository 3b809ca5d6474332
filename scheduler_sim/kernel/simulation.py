"""The platform: jobs on nodes, driven by events, feeding the power chain and the cooling plant.

One :class:`Simulation` replays a job table on a :class:`power.System` under one policy:

* the event kernel (:mod:`scheduler_sim.kernel.core`) orders submissions, ends, walltime kills and node changes;
  each kind has one handler (:mod:`scheduler_sim.kernel.events`);
* the policy (:mod:`scheduler_sim.policies`) decides which queued jobs start at each timestamp; the job life-cycle
  (:mod:`scheduler_sim.kernel.lifecycle`) checks and applies its decisions, with the node choice of
  :mod:`scheduler_sim.kernel.placement` and the facility power budget of :mod:`scheduler_sim.kernel.powercap`;
* node DC power is a step function that changes only at events; the power chain (:class:`power.PowerChain`) turns
  it into SIVOC / rectifier losses, IT input power and heat per CDU at each change, and the energy ledger
  (:mod:`scheduler_sim.kernel.ledger`) integrates it exactly per job;
* :class:`scheduler_sim.kernel.recorder.StepIntegrator` averages that step function exactly over each cooling
  communication step, and the cooling coupler (:mod:`scheduler_sim.kernel.coupler`) steps the plant (the
  :class:`cooling_fmu.coupling.Plant` protocol) lazily with that average, zero-order hold, as simulated time passes
  step boundaries; the plant state is thus always known up to the last whole step;
* whole steps are averaged into output intervals, and :mod:`scheduler_sim.kernel.results` builds the result.

All mutable state is one :class:`~scheduler_sim.kernel.state.PlatformState`; the job data is an immutable
:class:`~scheduler_sim.kernel.jobdata.JobTable`; the options are a validated
:class:`~scheduler_sim.kernel.config.SimulationConfig`.

Window and warm-up
------------------
Only jobs submitted in ``[t0, t1)`` (the configured window) are simulated, plus the jobs the trace shows *running*
at ``t0`` (placed first, at ``t0``, for their remaining recorded time: "prefill") and the jobs the trace shows
*waiting* at ``t0`` (queued at ``t0`` with their recorded submit time kept). The run then goes on until the last job
ends, and is padded with idle time to a whole output interval.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import time
from collections.abc import Sequence
from typing import Callable

import numpy as np
import pandas as pd

from cooling_fmu.coupling import Plant, cdu_supply_columns, supply_rise_K_per_W
from power import PowerChain, System

from ..policies import BasePolicy, SchedulerView, make_policy
from .config import DAY_S, SimulationConfig
from .core import EventKind
from .coupler import CoolingCoupler, PlantStopped
from .events import EventHandlers
from .jobdata import JobOutcome, JobTable, NodePowerProfile, build_job_table
from .partitions import each_policy, partition_policies, partition_pools
from .lifecycle import JobLifecycle
from .lookahead import Lookahead, RolloutCooling, rollout_score
from .window import batch_failures, batch_pool, open_window, run_horizon
from .placement import Placement
from .powercap import OverheadForecast, PowerCapGovernor
from .progress import RunHooks, RunObserver
from .recorder import StepIntegrator
from .stepfunction import StepFunction
from .view import frozen_job_arrays, scheduler_view
from .attempts import AttemptLog
from .results import SimulationResult, finish_completed, finish_stopped
from .state import POWER_SERIES, SCHEDULER_SERIES, LoopCounters, PlatformState, StateLayout

__all__ = ["Simulation", "SimulationConfig", "SimulationResult", "JobOutcome", "NodePowerProfile", "SCHEDULER_SERIES",
           "POWER_SERIES", "DAY_S"]


def _profiles(measured: pd.DataFrame | None, generated: pd.DataFrame | None) -> pd.DataFrame | None:
    """Measured and generated power series of jobs in one table (None when neither is given)."""
    parts = [p for p in (measured, generated) if p is not None and len(p)]
    if not parts:
        return measured if measured is not None else None
    if len(parts) == 1:
        return parts[0]
    return pd.concat([p[["job_id", "t_offset_s", "node_power_W"]] for p in parts], ignore_index=True)


class Simulation:
    """Event-driven replay of a job table on a system, with power chain and cooling plant.

    Parameters
    ----------
    jobs : pd.DataFrame
        Canonical job table (:mod:`jobs.table`); times relative to the trace origin [s].
    system : System
        Platform description (nodes, racks, CDUs, power parameters).
    policy : str | BasePolicy
        Policy name (``replay``, an order such as ``fcfs`` / ``sjf`` / ``priority``, or a shorthand ``easy`` /
        ``conservative``; see :func:`scheduler_sim.policies.make_policy`, with ``config.backfill`` and
        ``config.policy_params``) or a policy instance.
    config : SimulationConfig | None
        The run's validated options (window, steps, outages, power budget, placement ...). None: the defaults.
    plant : Plant | None
        The cooling plant (the :class:`~cooling_fmu.coupling.Plant` protocol); None disables cooling (cooling power
        is then not modelled). A :class:`~cooling_fmu.coupling.PlantError` from a step stops the run with the
        completed steps kept (``info["complete"] = False``).
    wet_bulb_K : Callable[[np.ndarray], np.ndarray] | None
        Wet-bulb temperature [K] at simulation times ``t_s`` [s] (only used with a plant).
    dry_bulb_K : Callable[[np.ndarray], np.ndarray] | None
        Dry-bulb temperature [K] at simulation times (the tower evaporation of a plant that takes it,
        ``plant.uses_dry_bulb``); None: the plant takes saturated air (``T_db = T_wb``).
    partition : NodePowerProfile | None
        Nodes reserved for a co-located partition with its own power profile (e.g. LLM serving).
    job_power_profiles : pd.DataFrame | None
        Measured node-power series of jobs (``job_id``, ``t_offset_s`` [s from its start], ``node_power_W`` [W]),
        with ``config.use_measured_power``: each sample holds until the next; the job's energy is their integral.
    workload_power_profiles : pd.DataFrame | None
        Same columns, for generated jobs (training, #24); used whatever ``config.use_measured_power`` says.
    observers : Sequence[RunObserver]
        Told how each run goes (:class:`~scheduler_sim.kernel.progress.RunObserver`: ``hpctwin run --live``'s
        dashboard); ``config.progress`` adds the progress bar. A fork has none.

    Notes
    -----
    Raises ValueError (from :class:`SimulationConfig`, :func:`~scheduler_sim.policies.make_policy` and the job
    table) for an unknown policy, an invalid option, a downtime or partition node outside the machine, a downtime
    on the partition, a pool larger than the batch nodes, or an empty window.
    """

    def __init__(self, jobs: pd.DataFrame, system: System, policy: str | BasePolicy = "easy",
                 config: SimulationConfig | None = None, *, plant: Plant | None = None,
                 wet_bulb_K: Callable[[np.ndarray], np.ndarray] | None = None,
                 dry_bulb_K: Callable[[np.ndarray], np.ndarray] | None = None,
                 partition: NodePowerProfile | None = None, job_power_profiles: pd.DataFrame | None = None,
                 workload_power_profiles: pd.DataFrame | None = None, observers: Sequence[RunObserver] = ()) -> None:
        cfg = config if config is not None else SimulationConfig()
        self.system = system
        self.policy = policy if isinstance(policy, BasePolicy) else make_policy(policy, cfg.backfill,
                                                                                 **(cfg.policy_params or {}))
        cfg.check_against(system.n_nodes)
        self.config = cfg
        self.chain = PowerChain(system)
        self.plant = plant
        self.wet_bulb_K = wet_bulb_K
        self.dry_bulb_K = dry_bulb_K
        self.partition = partition
        self.observers = tuple(observers)
        self.step_s = cfg.step_s
        self.ratio = cfg.steps_per_interval
        self.interval_s = cfg.interval_s
        self.t0 = cfg.window_start_s
        self.t1 = cfg.window_end_s
        self.info: dict = {}
        self.failures = batch_failures(cfg, partition, system.n_nodes, self.info)
        self.horizon_s = run_horizon(self.t0, self.step_s, self.ratio, self.t1 + cfg.max_drain_s)
        self.reservation_log: list[tuple[float, dict[int, float]]] = []
        self.attempts = AttemptLog()  # compact (kernel.attempts)
        self.layout = StateLayout(system.n_cdus, system.n_racks, len(system.partitions) if system.partitioned else 0)
        self.jobdata: JobTable = build_job_table(
            jobs, system, self.chain, t0=self.t0, t1=self.t1, n_pool=batch_pool(cfg, system.n_nodes, partition),
            has_partition=partition is not None, default_walltime_s=cfg.default_walltime_s,
            use_measured_power=cfg.use_measured_power,
            profiles_table=_profiles(job_power_profiles if cfg.use_measured_power else None,
                                     workload_power_profiles), share_entity=cfg.share_entity, info=self.info,
            pools=partition_pools(system, partition))
        self.policies = partition_policies(self.policy, system)  # per batch partition (kernel.partitions)
        each_policy(self.policies, lambda p: p.bind(list(self.jobdata.queue_names), list(self.jobdata.account_names)))
        self.state: PlatformState | None = None
        self.coupler: CoolingCoupler | None = None
        self._wire(cfg.cooling_estimate)  # a policy that looks ahead (the twin) finds view.lookahead: no policy
        # holds the platform (kernel.lookahead)

    def _wire(self, cooling_estimate: float) -> None:
        """Build the services that act on the state: placement, power-cap governor, job life-cycle, handlers."""
        plant = self.plant
        self.placement = Placement(
            self.config.placement, self.system, self.chain,
            cdu_supply_columns(plant.output_names, self.system.n_cdus) if plant is not None else None,
            supply_rise_K_per_W(plant) if plant is not None else None)
        self.governor = PowerCapGovernor(list(self.config.power_cap), cooling_estimate, self.jobdata, self.chain,
                                         self.layout, OverheadForecast.of_run(self))
        self.lifecycle = JobLifecycle(self)
        self._frozen = frozen_job_arrays(self.jobdata)  # read-only job arrays for every view, made once
        self.stepfn = StepFunction(self.chain, self.layout, self.partition,  # tables: one idle power for all nodes
                                   None if self.system.partitioned else self.jobdata.idle_node_power_W)
        self.handlers = EventHandlers(self)
        self._lookahead = Lookahead(self)  # the fork/rollout service on every view (kernel.lookahead)

    @property
    def plant_state(self) -> np.ndarray | None:
        """The plant's outputs at the end of its last step (SI, columns as ``plant.output_names``), or None."""
        return self.state.cooling.plant_state if self.state is not None else None

    @property
    def start(self) -> np.ndarray | None:
        """Simulated start of every job [s] (NaN when not started); None before :meth:`run`."""
        return self.state.start if self.state is not None else None

    # ------------------------------------------------------------------ the policy's view
    def view(self, part: int | None = None) -> SchedulerView:
        """The view a policy decides on now (:func:`~scheduler_sim.kernel.view.scheduler_view`); of partition ``part``."""
        p = (self.system.partitions[part] if part is not None and (self.system.partitioned or self.system.shares)
             else None)
        return scheduler_view(self.state, self.jobdata, self.governor, self.config, self._frozen, p, self._lookahead)

    # ------------------------------------------------------------------ the step function
    def _advance(self, integ: StepIntegrator, t: float) -> None:
        """Integrate the step function up to ``t`` [s] (this may step the cooling plant) and the background energy."""
        st = self.state
        integ.set(self.stepfn.value(st))  # the step function after this timestamp (kernel.stepfunction)
        integ.advance(t)
        c, sv = st.counters, st.step
        dt = t - c.t_last
        st.ledger.accrue_background(dt, sv.idle_dc_W, sv.idle_it_W, sv.part_dc_W, sv.part_it_W)
        if c.cap_binding:
            c.cap_bound_s += dt
        c.t_last = t

    # ------------------------------------------------------------------ main loop
    def run(self) -> SimulationResult:
        """Run the simulation until every job has ended (and the partition profile is over); return its results.

        Returns
        -------
        SimulationResult
            Series, totals, job table and summary (``info["complete"]`` False when the plant stopped the run).

        Notes
        -----
        Raises :class:`~scheduler_sim.policies.PolicyError` if the policy returns a job that is not queued or does
        not fit (nodes or power budget), and RuntimeError if the plant failed before the first whole output
        interval (nothing to keep).
        """
        wall0 = time.perf_counter()
        cfg = self.config
        self.state = st = PlatformState.initial(self.jobdata, self.system.n_nodes, self.layout, self.t0)
        for p in self.system.partitions:  # a sharing partition's nodes are allocated by slot
            if p.share:
                st.alloc.share(p.first_node, p.n_nodes, p.share_slots)
        pbar = RunHooks.for_run(self.observers, cfg.progress, (self.t1 - self.t0) / 3600.0, st, self.plant)
        self.coupler = CoolingCoupler(self.plant, self.wet_bulb_K, self.system, self.layout, self.t0, self.step_s,
                                      self.ratio, cfg.on_implausible, pbar, dry_bulb_K=self.dry_bulb_K)
        self.coupler.bind(st.cooling, lambda: self.state.jobs_left)
        integ = StepIntegrator(self.t0, self.step_s, self.layout.size, self.coupler.emit,  # one plant call per
                               fold=True)  # advance, adaptive too (its plan cuts runs at heat changes)
        open_window(self)
        try:
            self._loop(integ)
        except PlantStopped as failure:
            return finish_stopped(self, failure, integ, wall0, pbar)
        return finish_completed(self, integ, wall0, pbar)

    def _loop(self, integ: StepIntegrator, until_s: float = math.inf) -> None:
        """The event loop (see :meth:`run`); its counters stay in the state's ``counters`` even if it stops early.

        ``until_s`` stops it before the first event later than ``until_s`` (events at ``until_s`` are handled);
        the default runs to the end. Used by :meth:`rollout`.
        """
        st = self.state
        env, c = st.env, st.counters
        while len(env) and (st.jobs_left > 0 or c.required > 0) and env.peek_time() <= until_s:
            t = min(env.peek_time(), self.horizon_s)  # nothing happens past the horizon
            self._advance(integ, t)
            if env.peek_time() > t:  # the horizon comes before the next event: cut what still runs
                self.lifecycle.cut_at_horizon(t)
                break
            batch = env.pop_batch()
            c.n_events += len(batch)
            self.handlers.handle(batch, t)
            # one scheduling pass per timestamp, after every event of that timestamp
            c.cap_binding = False
            if st.queue and self.governor.active:
                self.governor.reject_beyond_cap(st, self.info)
            if t >= self.horizon_s and (st.jobs_left > 0 or c.required > 0):
                self.lifecycle.cut_at_horizon(t)
                break
            if st.queue and st.alloc.has_free:
                self.lifecycle.scheduling_pass(t)

    # ------------------------------------------------------------------ forks (twin in the loop)
    #: Inputs shared by a fork (never written during a run): the system and its power chain, the job data, the
    #: layout, the partition and the failures, and the run's fixed times.
    _FORK_SHARED = ("system", "chain", "jobdata", "layout", "partition", "failures", "t0", "t1", "step_s", "ratio",
                    "interval_s", "horizon_s")

    def fork(self, policy: BasePolicy | None) -> "Simulation":
        """An independent copy of the platform now (call it from inside a run, e.g. from a policy's ``schedule``).

        The copy is one deep copy of the :class:`~scheduler_sim.kernel.state.PlatformState`, which holds every
        mutable part of the platform *by construction*: the clock and pending events (hence every future
        submission, end, node change), the queue, running jobs with their scheduled ends, node allocator, node
        power and all per-job and per-attempt accounting are the fork's own, so nothing a rollout does can write
        into the main run. The immutable inputs (:attr:`_FORK_SHARED`: the job data, the system and its power
        chain ...) are shared. It runs ``policy`` (None: set it before :meth:`rollout`). It has no cooling plant:
        the cooling FMU cannot be forked (rumoca's FMUs do not declare ``canGetAndSetFMUstate``), so a fork's
        facility power is its IT power x (1 + the cooling ratio now: the plant's last step ratio, else
        ``cooling_estimate``); ``spread`` / ``pack`` placement then rank CDUs by heat instead of plant
        temperatures. Output series, reservations log, progress bar and the job table's outputs are not carried,
        so a fork pickles small (it can be sent to another MPI rank).

        Parameters
        ----------
        policy : BasePolicy | None
            The fork's policy.

        Returns
        -------
        Simulation
            The fork.
        """
        ratio = self.governor.cooling_ratio(self.state)
        new = object.__new__(Simulation)
        for name in self._FORK_SHARED:
            setattr(new, name, getattr(self, name))
        new.config = dataclasses.replace(self.config, progress=False, record_reservations=False)
        new.plant = new.wet_bulb_K = new.dry_bulb_K = new.coupler = None
        new.observers = ()
        new.policy, new.policies = policy, partition_policies(policy, new.system)
        new.info, new.reservation_log, new.attempts = {}, [], AttemptLog()
        new.state = copy.deepcopy(self.state)
        new.state.cooling.plant_state = None
        new._wire(ratio)
        return new

    def replace_jobdata(self, jobdata: JobTable) -> None:
        """Give this fork other job data (same jobs; :meth:`Snapshot.revise`) and rebuild its services."""
        self.jobdata = jobdata
        self._wire(self.governor.cooling_estimate)

    def __getstate__(self) -> dict:
        """Pickle support (a fork sent to another MPI rank): the power chain and the services are rebuilt."""
        state = {k: v for k, v in self.__dict__.items()
                 if k not in ("chain", "placement", "governor", "lifecycle", "handlers", "stepfn", "_frozen",
                              "_lookahead", "observers")}
        state["_cooling_estimate"] = self.governor.cooling_estimate
        return state

    def __setstate__(self, state: dict) -> None:
        estimate = state.pop("_cooling_estimate")
        self.__dict__.update(state)
        self.observers = ()
        self.chain = PowerChain(self.system)
        self._wire(estimate)

    def rollout(self, until_s: float, cooling: RolloutCooling | None = None) -> dict[str, float]:
        """Run this fork (see :meth:`fork`) from now to ``until_s`` and score the interval ``[now, until_s]``.

        The fork first makes the scheduling pass of the current timestamp under its own policy, then handles every
        event up to ``until_s``, exactly as :meth:`run` would.

        Parameters
        ----------
        until_s : float
            End of the rollout [s], after now.
        cooling : RolloutCooling | None
            Cooling in the horizon: the step function on ``ceil((until_s - now) / cooling.step_s)`` equal steps,
            facility energy IT + plant + overheads on each; None: IT x (1 + the cooling ratio at the fork).

        Returns
        -------
        dict
            The score (:func:`~scheduler_sim.kernel.lookahead.rollout_score`): ``wait_s`` [s], ``E_it_J`` [J],
            ``E_facility_J`` [J], ``started`` [1], with ``cooling`` also ``E_cooling_J`` [J].

        Raises
        ------
        ValueError
            If ``until_s`` is not after now.
        """
        st, jobs = self.state, self.jobdata
        self.policies = partition_policies(self.policy, self.system)  # the fork's policy may be set after the fork
        t = st.env.now
        if not until_s > t:
            raise ValueError(f"rollout end {until_s} s must be after now = {t} s")
        waiting = np.flatnonzero(np.isnan(st.start) & (jobs.submit < until_s))
        blocks: list[np.ndarray] = []
        n_steps = 1 if cooling is None else max(1, math.ceil((until_s - t) / cooling.step_s - 1e-9))
        dt = (until_s - t) / n_steps
        # copies: a run of whole steps arrives as a broadcast view of the integrator's value, which changes later
        integ = StepIntegrator(t, dt, self.layout.size, lambda k0, block: blocks.append(np.array(block)))
        end = integ.boundary(n_steps)
        st.env.schedule(t, EventKind.WAKEUP, None)  # the pass of this timestamp, under this fork's policy
        st.counters = LoopCounters(t_last=t, required=st.env.pending(EventKind.POWER_CHANGE))
        self._loop(integ, end)
        integ.set(self.stepfn.value(st))
        integ.advance(end)
        return rollout_score(self, waiting, t, end, blocks, cooling)
