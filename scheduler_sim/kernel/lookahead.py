"""The fork/rollout service: what a look-ahead policy (the twin) gets on its view instead of the platform.

A policy decides on the immutable :class:`~scheduler_sim.policies.SchedulerView`; a policy that looks ahead finds
``view.lookahead``, a :class:`Lookahead`, whose only operation is :meth:`Lookahead.snapshot`: a frozen copy of the
platform now (:class:`Snapshot`). A snapshot rolls a candidate policy out over a horizon and returns its score, each
rollout from the same state; its job knowledge can be revised first (what the rollouts believe about runtimes and
arrivals), and it pickles (to roll out on another MPI rank). The policy never holds the
:class:`~scheduler_sim.kernel.simulation.Simulation`: the live platform stays private to the service, and nothing a
snapshot does writes into it (every mutable part is copied, :meth:`Simulation.fork`).

Cooling in the horizon
----------------------
By default a rollout's facility energy is IT x (1 + r), with ``r`` the cooling ratio at the snapshot (the plant's
last step, or the configured estimate): the cooling FMU cannot be forked (rumoca's FMUs do not declare
``canGetAndSetFMUstate``). With a :class:`RolloutCooling` (a quasi-steady plant, :class:`cooling_fmu.quasisteady.
QuasiSteadyPlant`, and the run's wet-bulb), the rollout averages the power step function over steps of
``RolloutCooling.step_s`` (the horizon cut into whole steps), evaluates the plant's steady state and the facility
overheads (:class:`power.facility.FacilityOverheads`) on every step, and scores the facility energy as

    E_facility = sum_k (P_it_k + P_cooling_k + P_overhead_k) dt

with ``P_overhead`` the facility overheads beyond the liquid plant (the coupler's definition,
:class:`scheduler_sim.kernel.coupler.CoolingCoupler`). The weather of the horizon and the plant's part-load
behaviour then enter the decision. As in the run (the coupler), a plant that takes the air side's heat into its
towers (``uses_air_side_heat``) gets it on every step (:meth:`power.facility.FacilityOverheads.air_side_rejected_W`
of the step's IT power and wet-bulb). The plant's lag (``cooling.fast_tau_s``) is not applied in rollouts, nor the
dry-bulb (it changes the plant's evaporation only, not its power).
"""

from __future__ import annotations

import copy
import dataclasses
import heapq
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import numpy as np

from .core import EventKind

if TYPE_CHECKING:
    from power.facility import FacilityOverheads

    from ..policies import BasePolicy
    from .platform import ForkPlatform
    from .state import StateLayout

__all__ = ["Lookahead", "Snapshot", "RolloutCooling", "JobKnowledge", "rollout_score", "cooled_energy"]


@dataclass(frozen=True)
class RolloutCooling:
    """The cooling a rollout sees (module docstring).

    Attributes
    ----------
    plant : object
        A plant with ``steady_outputs(heat_W (m, n_cdu), T_wb_K (m,)) -> (m, n_outputs)`` and
        ``P_cooling_index`` (:class:`cooling_fmu.quasisteady.QuasiSteadyPlant`); its state is not touched.
    wet_bulb_K : callable
        Wet-bulb temperature [K] at simulation times [s], ``ndarray -> ndarray``.
    step_s : float
        Rollout cooling step [s] (> 0): the horizon is cut into ``ceil(horizon / step_s)`` equal steps.
    """

    plant: object
    wet_bulb_K: Callable[[np.ndarray], np.ndarray]
    step_s: float = 300.0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.step_s) and self.step_s > 0):
            raise ValueError(f"rollout cooling step_s must be finite and > 0, got {self.step_s}")


@dataclass(frozen=True)
class JobKnowledge:
    """What a snapshot's rollouts know about the jobs (read-only arrays, shape (n_jobs,)).

    Attributes
    ----------
    now_s : float
        Time of the snapshot [s].
    runtime_s : ndarray
        Runtime each job will have [s] (the trace: the future is known exactly unless revised).
    submit_s : ndarray
        Submission time of each job [s].
    pending : ndarray of bool
        Jobs not started at the snapshot (queued or still to be submitted).
    """

    now_s: float
    runtime_s: np.ndarray
    submit_s: np.ndarray
    pending: np.ndarray


def _ro(a: np.ndarray) -> np.ndarray:
    v = np.asarray(a).view()
    v.flags.writeable = False
    return v


class Snapshot:
    """A frozen copy of the platform at one decision time; roll candidate policies out of it.

    Made by :meth:`Lookahead.snapshot`. Every :meth:`rollout` starts from the same state (the snapshot itself is
    never advanced). Pickles (the copy of the platform state and the policy-free fork), for MPI rollouts.

    Parameters
    ----------
    fork : ForkPlatform
        A fork of the platform without a policy (:meth:`Simulation.fork`); owned by the snapshot.
    """

    def __init__(self, fork: ForkPlatform) -> None:
        self._fork = fork

    @property
    def now_s(self) -> float:
        """float: time of the snapshot [s]."""
        return float(self._fork.state.env.now)

    def knowledge(self) -> JobKnowledge:
        """What the rollouts know now (read-only arrays; see :class:`JobKnowledge`).

        Returns
        -------
        JobKnowledge
            Runtimes, submissions and the pending mask.
        """
        jd, st = self._fork.jobdata, self._fork.state
        return JobKnowledge(self.now_s, _ro(jd.runtime), _ro(jd.submit), _ro(np.isnan(st.start)))

    def revise(self, runtime_s: np.ndarray | None = None, submit_s: np.ndarray | None = None) -> None:
        """Give the rollouts other knowledge of the future (the main run is untouched).

        Parameters
        ----------
        runtime_s : np.ndarray | None
            New runtime of every job [s], shape (n_jobs,); only pending jobs' values are used (a running job keeps
            its scheduled end). None keeps the runtimes.
        submit_s : np.ndarray | None
            New submission time of every job [s], shape (n_jobs,); only jobs still to be submitted (submission after
            now) move, never before now; their pending submission events move with them. None keeps them.

        Raises
        ------
        ValueError
            If an array has the wrong shape or a value that is not finite / runtime not positive.
        """
        f = self._fork
        st, jd = f.state, f.jobdata
        now, n = float(st.env.now), len(jd.runtime)
        pending = np.isnan(st.start)
        runtime, submit = jd.runtime, jd.submit
        if runtime_s is not None:
            r = np.asarray(runtime_s, dtype=float)
            if r.shape != (n,) or not np.all(np.isfinite(r[pending]) & (r[pending] > 0)):
                raise ValueError(f"revise: runtime_s must be shape ({n},), finite and > 0 for pending jobs")
            runtime = np.where(pending, r, jd.runtime)
        if submit_s is not None:
            s = np.asarray(submit_s, dtype=float)
            if s.shape != (n,) or not np.all(np.isfinite(s[pending])):
                raise ValueError(f"revise: submit_s must be shape ({n},) and finite for pending jobs")
            future = pending & (jd.submit > now)
            submit = np.where(future, np.maximum(now, s), jd.submit)
            heap = []
            for t, kind, seq, payload in st.env._heap:
                if kind == int(EventKind.JOB_SUBMIT) and t > now:
                    t = float(submit[payload.job])
                heap.append((t, kind, seq, payload))
            heapq.heapify(heap)
            st.env._heap = heap
        if runtime_s is not None or submit_s is not None:
            f.replace_jobdata(dataclasses.replace(jd, runtime=np.asarray(runtime, float),
                                                  submit=np.asarray(submit, float)))

    def rollout(self, policy: "BasePolicy", until_s: float, cooling: RolloutCooling | None = None) -> dict[str, float]:
        """Roll a copy of ``policy`` out from the snapshot to ``until_s`` and score it.

        Parameters
        ----------
        policy : BasePolicy
            The candidate (deep-copied: its state is not changed).
        until_s : float
            End of the horizon [s], after :attr:`now_s`.
        cooling : RolloutCooling | None
            Cooling in the horizon (module docstring); None: the ratio at the snapshot.

        Returns
        -------
        dict
            ``wait_s`` [s], ``E_it_J`` [J], ``E_facility_J`` [J], ``started`` [1]
            (:meth:`Simulation.rollout`); with ``cooling`` also ``E_cooling_J`` [J] (plant and overheads).
        """
        return self._fork.fork(copy.deepcopy(policy)).rollout(until_s, cooling)

    def __getstate__(self) -> dict:
        """Pickle support: the fork pickles itself (:meth:`Simulation.__getstate__`)."""
        return {"_fork": self._fork}

    def __setstate__(self, state: dict) -> None:
        self._fork = state["_fork"]


class Lookahead:
    """The service on the view of a look-ahead policy (``view.lookahead``): snapshots of the platform now.

    Parameters
    ----------
    platform : ForkPlatform
        The platform (kept private: a policy reaches it only through :meth:`snapshot`).
    """

    __slots__ = ("_platform",)

    def __init__(self, platform: ForkPlatform) -> None:
        self._platform = platform

    def snapshot(self) -> Snapshot:
        """A frozen copy of the platform now (call it from a policy's ``schedule``).

        Returns
        -------
        Snapshot
            Independent of the platform (one deep copy of its state, :meth:`Simulation.fork`).
        """
        return Snapshot(self._platform.fork(None))


def rollout_score(fork: ForkPlatform, waiting: np.ndarray, t: float, end: float, blocks: list[np.ndarray],
                  cooling: RolloutCooling | None) -> dict[str, float]:
    """The score of a finished rollout (:meth:`Simulation.rollout`) over ``[t, end]``.

    Parameters
    ----------
    fork : ForkPlatform
        The fork after its rollout.
    waiting : np.ndarray
        Indices of the jobs submitted before ``end`` and not started at ``t``.
    t : float
        Start of the rollout [s].
    end : float
        End of the rollout [s].
    blocks : list[np.ndarray]
        The step averages the rollout emitted, in order (one step without ``cooling``; else
        ``ceil((end - t) / cooling.step_s)`` equal steps).
    cooling : RolloutCooling | None
        Cooling in the horizon (module docstring); None: the cooling ratio at the fork.

    Returns
    -------
    dict
        ``wait_s``: job-seconds of waiting accrued in the interval by every job of ``waiting`` (a job still queued
        at ``end`` counts until then) [s]; ``E_it_J``: IT energy (rack input) over the interval [J];
        ``E_facility_J``: ``E_it_J`` x (1 + cooling ratio at the fork) [J], or with ``cooling`` IT +
        ``E_cooling_J`` (the plant's steady cooling power and the facility overheads beyond it, on each step) [J];
        ``started``: jobs started in the interval [1].
    """
    st, jobs = fork.state, fork.jobdata
    started = st.start[waiting]
    stop = np.where(np.isnan(started), end, np.minimum(started, end))
    wait = float(np.clip(stop - np.maximum(jobs.submit[waiting], t), 0.0, None).sum())
    n_started = float(np.count_nonzero(~np.isnan(started)))
    if cooling is None:
        e_it = float(blocks[0][0, fork.layout.it]) * (end - t)
        return {"wait_s": wait, "E_it_J": e_it, "E_facility_J": e_it * (1.0 + fork.governor.cooling_estimate),
                "started": n_started}
    from power.sizing import facility_overheads

    n_steps = max(1, math.ceil((end - t) / cooling.step_s - 1e-9))
    over = facility_overheads(fork.system)
    modelled = over.active or fork.system.liquid_fraction != 1.0  # as the coupler counts them
    e_it, e_cool = cooled_energy(np.concatenate(blocks)[:n_steps], t, (end - t) / n_steps, cooling, fork.layout,
                                 over if modelled else None)
    return {"wait_s": wait, "E_it_J": e_it, "E_facility_J": e_it + e_cool, "E_cooling_J": e_cool,
            "started": n_started}


def cooled_energy(blocks: np.ndarray, t0: float, dt: float, cooling: RolloutCooling, layout: StateLayout,
                  overheads: FacilityOverheads | None) -> tuple[float, float]:
    """IT and cooling energy of a rollout's step averages (module docstring).

    Parameters
    ----------
    blocks : np.ndarray
        Shape (n, layout.size): averages of the power step function over ``n`` steps of ``dt`` from ``t0``.
    t0 : float
        Start of the first step [s].
    dt : float
        Step [s].
    cooling : RolloutCooling
        Plant and wet-bulb.
    layout : StateLayout
        Columns of the step function (``n_cdus`` heat columns first, ``it`` the IT input).
    overheads : FacilityOverheads | None
        The facility's overheads (:func:`power.sizing.facility_overheads`), or None when none is modelled.

    Returns
    -------
    tuple[float, float]
        ``(E_it_J, E_cooling_J)`` [J]: IT input energy, and plant plus facility overheads beyond it.
    """
    n = blocks.shape[0]
    t_mid = t0 + (np.arange(n) + 0.5) * dt
    twb = np.asarray(cooling.wet_bulb_K(t_mid), dtype=float)
    heat = np.ascontiguousarray(blocks[:, :layout.n_cdus])
    p_it = blocks[:, layout.it]
    # CRAH coil -> chilled water -> towers, as the run's plant
    kw = {} if overheads is None else overheads.air_side_inputs(cooling.plant, p_it, twb)
    out = cooling.plant.steady_outputs(heat, twb, **kw)
    p_liq = out[:, cooling.plant.P_cooling_index]
    extra = np.zeros(n)
    if overheads is not None:
        from power.facility import SERIES as OVERHEAD_SERIES

        cols = overheads.evaluate_columns(p_it, p_liq, twb)
        extra = cols.sum(axis=1) - cols[:, OVERHEAD_SERIES.index("Q_air_W")]
    return float(p_it.sum() * dt), float((p_liq + extra).sum() * dt)
