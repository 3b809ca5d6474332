"""The twin in the scheduling loop: an adaptive policy that forks the platform.

It rolls out candidate policies over a horizon and applies the best one until its next decision.

Decision cycle
--------------
At the first scheduling pass at or after each decision time (every ``period_s`` of simulated time), the
:class:`TwinPolicy`:

1. takes a snapshot of the platform through the fork/rollout service on its view (``view.lookahead``,
   :mod:`scheduler_sim.kernel.lookahead`; the twin never holds the platform): queue, running jobs with their
   scheduled ends, node allocator, node power, pending events (so every future submission, end and node change
   inside the horizon is known exactly: the trace is the forecast), and a copy of each candidate policy's state;
2. rolls every candidate out of the snapshot from now to ``now + horizon_s``
   (:meth:`~scheduler_sim.kernel.lookahead.Snapshot.rollout`), serially, or spread over MPI ranks
   (:class:`RolloutPool`: rank 0 runs the main simulation and its share of rollouts; the other ranks only roll
   out);
3. scores each rollout with the objective below and applies the lowest score (the first candidate on ties) to
   every pass until the next decision.

Objective (dimensionless)::

    J = w_wait [1/s] * W [s] + w_energy [1/J] * E_facility [J]

* ``W``: job-seconds of waiting accrued inside the horizon by every job queued now or submitted inside it (a job
  still queued at the horizon counts until the horizon end, so a policy cannot hide waits by pushing them out);
* ``E_facility``: facility energy over the horizon. Default (``[scheduler.twin] cooling = "frozen"``): IT energy
  (rack input, from the power chain) x (1 + r), with ``r`` the cooling power per IT watt of the plant's last step
  (or ``scheduler.cooling_estimate`` before the plant reports / without a plant). With ``cooling = "fast"`` the
  rollouts carry the quasi-steady plant (:class:`cooling_fmu.quasisteady.QuasiSteadyPlant` of the run's plant) and
  the run's wet-bulb: IT + the plant's cooling power + the facility overheads on every ``plant_step_s`` of the
  horizon (:class:`~scheduler_sim.kernel.lookahead.RolloutCooling`), so the weather ahead and the plant's part-load
  behaviour enter the decision.
Defaults: ``w_wait = 1/3600 1/s`` (one point per job-hour of waiting), ``w_energy = 1/3.6e9 1/J`` (one point per
MWh). With a fixed workload a policy that starts more work inside the horizon also uses more energy inside it, so
the energy term slightly favours holding work back; keep ``w_energy`` small unless the study is about energy.

What a rollout approximates
---------------------------
The cooling FMU is not forked: rumoca 0.9.13 FMUs do not declare ``canGetAndSetFMUstate`` (checked in the built
FMU's modelDescription.xml), so the plant state cannot be saved and restored. Rollouts therefore run the power
chain with the cooling ratio frozen at the fork, or (``cooling = "fast"``) with the quasi-steady plant, whose state
is its inputs (no lag in rollouts). Candidates' internal state (conservative reservations,
fair-share usage) is copied from the twin's candidates, which all see every job end but only the active one makes
passes, so an inactive candidate's reservations may be stale when it is chosen. Everything else in a rollout is
the same event loop as the main run, so a rollout of the active policy reproduces the main run's starts until
the next decision (tested).

Rollout cost
------------
A candidate's pass costs time with the queue it orders: EASY's backfill scans it, conservative backfill reserves
every queued job on an availability profile that grows with each reservation (quadratic in the queue). With
thousands of queued jobs a decision took seconds to minutes (docs/decisions.md, section 6). So a rollout's copy of
each ``order+backfill`` candidate considers only the first ``rollout_queue_limit`` jobs of its order in each pass
(:attr:`scheduler_sim.policies.OrderedPolicy.max_jobs`, as Slurm's backfill bounds itself with
``bf_max_job_test``): a job further down neither starts nor holds a reservation in the rollout. Below the limit a
rollout is exactly the unbounded one; above it the rollout is an approximation of the candidate, the same for every
candidate, and the main run's passes are never bounded. ``rollout_queue_limit = None`` rolls the whole queue out.

Decision latency (wall time per decision, including forking, pickling and gathering) is kept in
``info["twin_latency_s"]`` (volatile, not written to the datasets); the decisions themselves (time, queue length,
chosen candidate, scores) are deterministic and kept in ``info["twin_decisions"]``.
"""

from __future__ import annotations

import copy
import math
import pickle
import time
from collections.abc import Sequence
from dataclasses import dataclass

from ..kernel.lookahead import RolloutCooling
from ..policies import make_policy, register_policy
from ..policies.base import BasePolicy, SchedulerView
from ..policies.registry import OrderedPolicy

__all__ = ["TwinPolicy", "Objective", "RolloutPool", "serve_rollouts", "stop_rollout_workers", "make_candidate",
           "DEFAULT_POOL", "DEFAULT_ROLLOUT_QUEUE_LIMIT", "bounded_candidate"]

#: Candidate policies of the default pool (``order+backfill``).
DEFAULT_POOL = ("fcfs+easy", "sjf+easy", "priority+easy", "fcfs+conservative")

#: Default of ``rollout_queue_limit`` [jobs]: a rollout's pass considers the first 100 jobs of its candidate's order,
#: the default depth of Slurm's main scheduling pass (``SchedulerParameters=default_queue_depth``, 100; its backfill
#: pass goes to ``bf_max_job_test``, 500); see "Rollout cost" in the module docstring.
DEFAULT_ROLLOUT_QUEUE_LIMIT = 100

_TAG_TASK, _TAG_RESULT, _TAG_STOP = 71, 72, 73


@dataclass(frozen=True)
class Objective:
    """``J = w_wait_per_s * wait_s + w_energy_per_J * E_facility_J`` (dimensionless; lower is better).

    Attributes
    ----------
    w_wait_per_s : float
        Weight of waiting [1/s] (per job-second of waiting accrued in the horizon).
    w_energy_per_J : float
        Weight of facility energy over the horizon [1/J].
    """

    w_wait_per_s: float = 1.0 / 3600.0
    w_energy_per_J: float = 1.0 / 3.6e9

    def __call__(self, score: dict[str, float]) -> float:
        """The objective of one rollout's score (``wait_s`` [s], ``E_facility_J`` [J])."""
        return self.w_wait_per_s * score["wait_s"] + self.w_energy_per_J * score["E_facility_J"]


def make_candidate(spec: str, priority_params: dict | None = None) -> BasePolicy:
    """A pool member from ``"order+backfill"`` (e.g. ``sjf+easy``) or a policy name (``easy``, ``fcfs``).

    Parameters
    ----------
    spec : str
        ``"order+backfill"`` or a policy name.
    priority_params : dict | None
        Multi-factor priority weights, used when the order is ``priority``.

    Returns
    -------
    BasePolicy
        The candidate.

    Raises
    ------
    ValueError
        For an unknown name, replay (it ignores decisions) or the twin itself.
    """
    order, _, backfill = spec.partition("+")
    if order.lower() in ("replay", "twin"):
        raise ValueError(f"twin pool member {spec!r}: replay and twin cannot be candidates")
    params = (priority_params or {}) if order.lower() == "priority" else {}
    return make_policy(order, backfill or None, **params)


def _roll(snap, candidate: BasePolicy, until_s: float, cooling=None) -> dict[str, float]:
    return snap.rollout(candidate, until_s, cooling)


def bounded_candidate(candidate: BasePolicy, limit: int | None) -> BasePolicy:
    """The copy of a candidate a rollout runs: its passes consider the first ``limit`` jobs of its order.

    Parameters
    ----------
    candidate : BasePolicy
        A pool member. Only :class:`~scheduler_sim.policies.OrderedPolicy` candidates (every ``order+backfill``
        name) can be bounded; another policy is returned unchanged.
    limit : int | None
        Jobs a pass considers (:attr:`OrderedPolicy.max_jobs`); None: the whole queue.

    Returns
    -------
    BasePolicy
        A shallow copy with ``max_jobs`` set (the rollout deep-copies it again), or ``candidate`` itself.
    """
    if limit is None or not isinstance(candidate, OrderedPolicy):
        return candidate
    c = copy.copy(candidate)
    c.max_jobs = int(limit)
    return c


class RolloutPool:
    """Runs the rollouts of one decision: serially, or over the ranks of an MPI communicator.

    With a communicator of size > 1, rank 0 (the caller) sends the snapshot (pickled once) and the candidates to
    every other rank, which must be in :func:`serve_rollouts`; candidate ``i`` is rolled out on rank ``i % size``
    (rank 0 included), and rank 0 gathers the scores. Call :func:`stop_rollout_workers` at the end. The rollout
    cooling (``cooling``, a :class:`~scheduler_sim.kernel.lookahead.RolloutCooling`: its plant table is large)
    goes to each worker once, with its first task.
    """

    def __init__(self, comm=None, cooling=None) -> None:
        self.comm = comm if comm is not None and comm.Get_size() > 1 else None
        self.cooling = cooling
        self._cooling_sent = False

    @property
    def size(self) -> int:
        """Ranks that roll out (1 when serial)."""
        return 1 if self.comm is None else self.comm.Get_size()

    def evaluate(self, base, candidates: list[BasePolicy], until_s: float) -> list[dict[str, float]]:
        """Scores of every candidate rolled out from the snapshot ``base`` to ``until_s``, in candidate order."""
        if self.comm is None:
            return [_roll(base, c, until_s, self.cooling) for c in candidates]
        comm, size = self.comm, self.comm.Get_size()
        cooling = self.cooling if not self._cooling_sent else None
        self._cooling_sent = True
        blob = pickle.dumps((base, candidates, until_s, cooling, self.cooling is not None),
                            protocol=pickle.HIGHEST_PROTOCOL)
        busy = [r for r in range(1, size) if any(i % size == r for i in range(len(candidates)))]
        reqs = [comm.isend(blob, dest=r, tag=_TAG_TASK) for r in busy]
        out: list[dict | None] = [None] * len(candidates)
        for i in range(0, len(candidates), size):
            out[i] = _roll(base, candidates[i], until_s, self.cooling)
        for r in reqs:
            r.wait()
        for _ in busy:
            part = _poll_recv(comm, _TAG_RESULT)
            for i, sc in part:
                out[i] = sc
        return out  # type: ignore[return-value]


def _poll_recv(comm, tag: int, source: int | None = None, sleep_s: float = 2e-4):
    """Receive a pickled message, polling with short sleeps (a blocking MPICH receive spins a core)."""
    from mpi4py import MPI  # optional at import time: importing mpi4py.MPI initialises MPI (only MPI runs need it)

    src = MPI.ANY_SOURCE if source is None else source
    while not comm.Iprobe(source=src, tag=tag):
        time.sleep(sleep_s)
    return comm.recv(source=src, tag=tag)


def serve_rollouts(comm) -> int:
    """Worker ranks of a twin run: roll out the candidates rank 0 sends until it says stop; returns rollouts done."""
    from mpi4py import MPI  # optional at import time: importing mpi4py.MPI initialises MPI (only MPI runs need it)

    rank, size = comm.Get_rank(), comm.Get_size()
    n = 0
    st = MPI.Status()
    cooling = None  # the rollout cooling, sent once with the first task that has one
    while True:
        while not comm.Iprobe(source=0, tag=MPI.ANY_TAG, status=st):
            time.sleep(1e-3)
        msg = comm.recv(source=0, tag=st.Get_tag())
        if st.Get_tag() == _TAG_STOP:
            return n
        base, candidates, until_s, new_cooling, cooled = pickle.loads(msg)
        cooling = new_cooling if new_cooling is not None else cooling
        res = [(i, _roll(base, candidates[i], until_s, cooling if cooled else None))
               for i in range(rank, len(candidates), size)]
        n += len(res)
        comm.send(res, dest=0, tag=_TAG_RESULT)


def stop_rollout_workers(comm) -> None:
    """Tell every worker rank in :func:`serve_rollouts` to return (called by rank 0 at the end of the run)."""
    if comm is None:
        return
    for r in range(1, comm.Get_size()):
        comm.send(None, dest=r, tag=_TAG_STOP)


class TwinPolicy(BasePolicy):
    """Adaptive policy: every ``period_s`` of simulated time, roll out a pool of policies and apply the best.

    Parameters
    ----------
    pool : Sequence[str | BasePolicy]
        Candidates (``"order+backfill"`` names or instances). All must kill jobs at their requested wall time.
    horizon_s : float
        Rollout horizon [s] (> 0).
    period_s : float
        Simulated time between decisions [s] (> 0); a decision happens at the first pass at or after it.
    objective : Objective
        Weights of the score (see module docstring).
    comm : object | None
        An mpi4py communicator: spread rollouts over its ranks (the other ranks run :func:`serve_rollouts`); None
        rolls out serially.
    priority_params : dict | None
        Multi-factor priority weights for a ``priority`` candidate.
    cooling : RolloutCooling | None
        Cooling in the rollouts' horizon (:class:`~scheduler_sim.kernel.lookahead.RolloutCooling`: the
        quasi-steady plant and the run's wet-bulb); None: the cooling ratio frozen at the decision.
    rollout_queue_limit : int | None
        Jobs of its order a rollout's pass considers (>= 1; module docstring, "Rollout cost"); None: all.

    Raises
    ------
    ValueError
        For a horizon or period not finite and > 0, an empty pool, a candidate that does not kill at wall time
        (replay), or a rollout queue limit that is not an integer >= 1.
    """

    name = "twin"
    description = "twin in the loop: roll out a pool of policies over a horizon every period, apply the best"

    def __init__(self, pool: Sequence[str | BasePolicy] = DEFAULT_POOL, horizon_s: float = 6 * 3600.0,
                 period_s: float = 3600.0, objective: Objective = Objective(), comm: object | None = None,
                 priority_params: dict | None = None, cooling: RolloutCooling | None = None,
                 rollout_queue_limit: int | None = DEFAULT_ROLLOUT_QUEUE_LIMIT) -> None:
        if not (math.isfinite(horizon_s) and horizon_s > 0 and math.isfinite(period_s) and period_s > 0):
            raise ValueError(f"twin horizon_s ({horizon_s}) and period_s ({period_s}) must be finite and > 0")
        if rollout_queue_limit is not None and not (int(rollout_queue_limit) == rollout_queue_limit
                                                    and rollout_queue_limit >= 1):
            raise ValueError(f"twin rollout_queue_limit must be an integer >= 1 or None, got {rollout_queue_limit!r}")
        self.rollout_queue_limit = None if rollout_queue_limit is None else int(rollout_queue_limit)
        if len(pool) == 0:
            raise ValueError("twin pool must name at least one policy")
        self.candidates = [p if isinstance(p, BasePolicy) else make_candidate(p, priority_params) for p in pool]
        if not all(c.kills_at_walltime for c in self.candidates):
            raise ValueError("twin pool members must kill jobs at their requested wall time (no replay)")
        self.horizon_s = float(horizon_s)
        self.period_s = float(period_s)
        self.objective = objective
        self.cooling = cooling
        self.pool = RolloutPool(comm, cooling)
        self.active = 0
        self.next_decision_s = -math.inf
        self.decisions: list[tuple[float, int, int, list[float]]] = []
        self.latency_s: list[float] = []

    # -- platform hooks
    def run_info(self) -> dict:
        """The pool, the decisions (time, queue length, chosen candidate, scores) and their wall-time latencies."""
        return {"twin_pool": [c.name for c in self.candidates], "twin_decisions": self.decisions,
                "twin_latency_s": self.latency_s}

    def bind(self, queue_names: list[str], account_names: list[str]) -> None:
        """Pass the queue / account names to every candidate."""
        for c in self.candidates:
            c.bind(queue_names, account_names)

    def job_ended(self, job: int, view: SchedulerView) -> None:
        """Forward a job end to every candidate (they all keep their state current)."""
        for c in self.candidates:
            c.job_ended(job, view)

    def wakeup_time(self, job: int, view: SchedulerView) -> float | None:
        """The active candidate's wake-up time for a newly queued job."""
        return self.candidates[self.active].wakeup_time(job, view)

    @property
    def reservations(self) -> dict[int, float]:
        """The active candidate's reservations."""
        return getattr(self.candidates[self.active], "reservations", {})

    @reservations.setter
    def reservations(self, value) -> None:  # BasePolicy may assign it; the candidates own theirs
        pass

    # -- decisions
    def schedule(self, view: SchedulerView) -> list[int]:
        """Decide (if due and the view offers the look-ahead service), then let the active candidate make this
        pass.
        """
        if view.now_s >= self.next_decision_s and view.lookahead is not None:
            self.decide(view)
            self.next_decision_s = view.now_s + self.period_s
        return self.candidates[self.active].schedule(view)

    def decide(self, view: SchedulerView) -> int:
        """Roll out every candidate from a snapshot of the platform now (``view.lookahead``) and make the best
        one active.

        Parameters
        ----------
        view : SchedulerView
            The view of this pass; ``view.lookahead`` must be set.

        Returns
        -------
        int
            The chosen candidate.
        """
        tw = time.perf_counter()
        now_s, queue_length = view.now_s, len(view.queue)
        base = self.snapshot(view)
        cands = [bounded_candidate(c, self.rollout_queue_limit) for c in self.candidates]
        scores = self.pool.evaluate(base, cands, now_s + self.horizon_s)
        J = [self.objective(s) for s in scores]
        best = min(range(len(J)), key=lambda i: (J[i], i))
        self.active = best
        self.latency_s.append(time.perf_counter() - tw)
        self.decisions.append((now_s, queue_length, best, J))
        return best

    def snapshot(self, view: SchedulerView):
        """The snapshot the rollouts of this decision start from (:meth:`Lookahead.snapshot`); subclasses revise
        its knowledge (:class:`scheduler_sim.app.decision_quality.NoisyTwinPolicy`).

        Parameters
        ----------
        view : SchedulerView
            The view of this pass.

        Returns
        -------
        Snapshot
            A frozen copy of the platform now.
        """
        return view.lookahead.snapshot()


@register_policy("twin", "twin in the loop: rolls out a pool of policies over a horizon every period and applies "
                         "the best ([scheduler.twin])")
def _twin_policy(backfill: str | None = None, **params) -> TwinPolicy:
    """``make_policy("twin")``: the default twin (pool, horizon and period of :class:`TwinPolicy`)."""
    if backfill not in (None, "none"):
        raise ValueError("twin chooses among its pool's policies; it takes no backfill (see [scheduler.twin])")
    return TwinPolicy(priority_params=params or None)


def twin_from_config(cfg, comm=None, priority_params: dict | None = None, cooling=None) -> TwinPolicy:
    """The twin policy of a run configuration (``[scheduler.twin]``); ``cooling`` is the rollout cooling the runner
    built for ``cooling = "fast"`` (:func:`scheduler_sim.app.runner.rollout_cooling`).
    """
    t = cfg.scheduler.twin
    return TwinPolicy(pool=list(t.pool), horizon_s=t.horizon_s, period_s=t.period_s,
                      objective=Objective(t.w_wait_per_s, t.w_energy_per_J), comm=comm,
                      priority_params=priority_params, cooling=cooling,
                      rollout_queue_limit=t.rollout_queue_limit or None)
