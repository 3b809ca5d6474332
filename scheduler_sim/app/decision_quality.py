"""Error to decision quality: the twin with wrong knowledge, and heuristics against a hindsight optimum.

1. Noisy twin. :class:`NoisyTwinPolicy` is the twin in the loop (:mod:`scheduler_sim.app.twin`) whose rollouts see
   a perturbed future: at each decision the fork's job data gets ``runtime x exp(sigma z)`` (log-normal runtime-
   estimate error, ``z ~ N(0, 1)`` per job, for every job not started yet) and every future submission moves by
   ``N(0, jitter_s^2)`` (never before now), in the fork's job data and in its pending events. The main run keeps
   the true runtimes and arrivals: only the decisions change. Running jobs keep their true scheduled ends. The
   draws are seeded per decision (``SeedSequence([seed, decision index])``), so a run is reproducible.
   :func:`error_study` runs the twin at each error size and reports the realised objective
   ``J = w_wait W + w_energy E_facility`` of the *main* run against the error-free twin's.

2. Hindsight optimum. :func:`hindsight_optimum` finds the smallest total wait of a small instance (<= 10 jobs)
   with everything known (submit times, sizes, true runtimes) by exhaustive search over job orders with the serial
   schedule-generation scheme (each job, in list order, at the earliest time >= its submission at which its nodes
   are free for its whole run, given the jobs placed before it). For a regular objective such as total wait the
   schedules so generated include an optimal one (Kolisch, "Serial and parallel resource-constrained project
   scheduling methods revisited", EJOR 90 (1996)). Depth-first search with the bound "partial wait >= best"
   prunes it. :func:`heuristic_gaps` runs heuristic policies through the platform on the same instance and
   reports each one's gap to the optimum.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..policies.base import SchedulerView
from .twin import TwinPolicy

if TYPE_CHECKING:
    from ..kernel.lookahead import Snapshot
    from .config import RunConfig

__all__ = ["NoisyTwinPolicy", "perturb_fork", "hindsight_optimum", "serial_schedule", "heuristic_gaps",
           "error_study"]


def perturb_fork(snapshot: Snapshot, rng: np.random.Generator, runtime_sigma: float, jitter_s: float) -> None:
    """Give a snapshot's rollouts wrong knowledge of the future (in place; the main platform is untouched).

    Parameters
    ----------
    snapshot : Snapshot
        A snapshot (:meth:`scheduler_sim.kernel.lookahead.Lookahead.snapshot`) at its decision time.
    rng : np.random.Generator
        Source of the errors: one normal per job for the runtime, then one per job for the arrival.
    runtime_sigma : float
        Log-normal sigma of the runtime error (0: exact runtimes).
    jitter_s : float
        Standard deviation of the arrival error [s] (0: exact arrivals).
    """
    k = snapshot.knowledge()
    n = len(k.runtime_s)
    z_run, z_arr = rng.standard_normal(n), rng.standard_normal(n)
    snapshot.revise(runtime_s=k.runtime_s * np.exp(runtime_sigma * z_run) if runtime_sigma > 0 else None,
                    submit_s=k.submit_s + jitter_s * z_arr if jitter_s > 0 else None)


class NoisyTwinPolicy(TwinPolicy):
    """The twin whose rollouts know the future with errors (module docstring).

    Parameters
    ----------
    runtime_sigma : float
        Log-normal sigma of the rollouts' runtime error (>= 0).
    jitter_s : float
        Standard deviation of the rollouts' arrival error [s] (>= 0).
    seed : int
        Seed of the errors.
    **kw
        :class:`~scheduler_sim.app.twin.TwinPolicy` options (pool, horizon_s, period_s, objective, ...).

    Raises
    ------
    ValueError
        If an error size is negative or not finite.
    """

    name = "twin-noisy"
    description = "twin whose rollouts see runtime and arrival errors"

    def __init__(self, runtime_sigma: float = 0.0, jitter_s: float = 0.0, seed: int = 0, **kw) -> None:
        if not (math.isfinite(runtime_sigma) and runtime_sigma >= 0 and math.isfinite(jitter_s) and jitter_s >= 0):
            raise ValueError(f"error sizes must be finite and >= 0 (runtime_sigma {runtime_sigma}, jitter_s "
                             f"{jitter_s})")
        super().__init__(**kw)
        self.runtime_sigma, self.jitter_s, self.seed = float(runtime_sigma), float(jitter_s), int(seed)

    def snapshot(self, view: SchedulerView) -> Snapshot:
        """The decision's snapshot with the rollouts' knowledge perturbed (module docstring).

        Parameters
        ----------
        view : SchedulerView
            The view of this pass.

        Returns
        -------
        Snapshot
            A frozen copy of the platform now whose job knowledge carries the errors.
        """
        snap = view.lookahead.snapshot()
        rng = np.random.default_rng(np.random.SeedSequence([self.seed, len(self.decisions)]))
        perturb_fork(snap, rng, self.runtime_sigma, self.jitter_s)
        return snap


# ------------------------------------------------------------------------------------ hindsight optimum

def serial_schedule(order: Sequence[int], submit: np.ndarray, nodes: np.ndarray, run_s: np.ndarray, n_nodes: int) -> np.ndarray:
    """Start times of the serial schedule-generation scheme for one job order.

    Parameters
    ----------
    order : Sequence[int]
        Job indices, each once.
    submit : np.ndarray
        Submission (release) times [s], shape (n,).
    nodes : np.ndarray
        Nodes of each job, shape (n,), each <= ``n_nodes``.
    run_s : np.ndarray
        True run times [s], shape (n,).
    n_nodes : int
        Machine size.

    Returns
    -------
    np.ndarray
        Start times [s], shape (n,) (NaN for jobs not in ``order``).
    """
    start = np.full(len(submit), np.nan)
    placed: list[tuple[float, float, int]] = []  # (start, end, nodes)
    for j in order:
        start[j] = _earliest(placed, float(submit[j]), float(run_s[j]), int(nodes[j]), n_nodes)
        placed.append((start[j], start[j] + float(run_s[j]), int(nodes[j])))
    return start


def _earliest(placed, release: float, dur: float, need: int, n_nodes: int) -> float:
    """Earliest t >= release with ``need`` nodes free over [t, t + dur) given the placed intervals."""
    cands = sorted({release} | {e for _, e, _ in placed if e > release})
    for t in cands:
        te = t + dur
        pts = [t] + [s for s, _, _ in placed if t < s < te]
        if all(sum(k for s, e, k in placed if s <= p < e) + need <= n_nodes for p in pts):
            return t
    return cands[-1]  # unreachable: after the last end the machine is empty


def hindsight_optimum(submit: np.ndarray, nodes: np.ndarray, run_s: np.ndarray, n_nodes: int,
                      max_jobs: int = 10) -> tuple[float, list[int]]:
    """The smallest total wait of an instance, by exhaustive search (module docstring).

    Parameters
    ----------
    submit : np.ndarray
        Submission times [s], shape (n,).
    nodes : np.ndarray
        Nodes per job, shape (n,).
    run_s : np.ndarray
        True run times [s], shape (n,).
    n_nodes : int
        Machine size.
    max_jobs : int
        Largest instance accepted.

    Returns
    -------
    tuple[float, list[int]]
        The optimal total wait [job-seconds] and one order that attains it.

    Raises
    ------
    ValueError
        If the instance has more than ``max_jobs`` jobs or a job larger than the machine.
    """
    submit, nodes, run_s = (np.asarray(x, float) for x in (submit, nodes, run_s))
    n = len(submit)
    if n > max_jobs:
        raise ValueError(f"hindsight optimum: {n} jobs, more than the {max_jobs} an exhaustive search takes")
    if n and nodes.max() > n_nodes:
        raise ValueError(f"hindsight optimum: a job needs {int(nodes.max())} nodes, the machine has {n_nodes}")
    fcfs = list(np.argsort(submit, kind="stable"))
    s0 = serial_schedule(fcfs, submit, nodes, run_s, n_nodes)
    best = [float(np.sum(s0 - submit)), fcfs]

    def dfs(placed, order, rest, cost):
        if cost >= best[0]:
            return
        if not rest:
            best[0], best[1] = cost, list(order)
            return
        seen = set()
        for j in sorted(rest, key=lambda j: (submit[j], run_s[j])):
            key = (submit[j], nodes[j], run_s[j])
            if key in seen:  # identical jobs: one branch is enough
                continue
            seen.add(key)
            t = _earliest(placed, float(submit[j]), float(run_s[j]), int(nodes[j]), n_nodes)
            placed.append((t, t + float(run_s[j]), int(nodes[j])))
            order.append(j)
            rest.remove(j)
            dfs(placed, order, rest, cost + t - float(submit[j]))
            rest.add(j)
            order.pop()
            placed.pop()

    dfs([], [], set(range(n)), 0.0)
    return best[0], [int(j) for j in best[1]]


def _tiny_system(n_nodes: int):
    from power.system import System

    return System.from_spec({
        "name": "tiny", "description": "hindsight-optimum instance", "cores_per_node": 1, "cooling_plant": "theta",
        "liquid_fraction": 1.0, "default_cpu_util": 1.0, "default_gpu_util": 0.0,
        "topology": {"n_cdus": 1, "rack_positions_per_cdu": 1, "nodes_per_rack": n_nodes,
                     "missing_rack_positions": [], "n_nodes": n_nodes},
        "node": {"cpu_idle_W": 100.0, "cpu_max_W": 300.0, "cpus_per_node": 1},
        "sivoc": {"P_fixed_W": 0.0, "eta": 1.0, "k_per_W": 0.0},
        "rectifier": {"P_fixed_W": 0.0, "eta": 1.0, "k_per_W": 0.0, "nodes_per_rectifier": 1},
        "rack_overhead": {"P_W": 0.0, "side": "dc"}, "cdu": {"P_own_W": 0.0}}, source="decision_quality")


def heuristic_gaps(submit: np.ndarray, nodes: np.ndarray, run_s: np.ndarray, n_nodes: int,
                   policies: tuple[str, ...] = ("fcfs", "fcfs+easy", "fcfs+conservative", "sjf", "sjf+easy", "ljf+easy"),
                   ) -> dict[str, dict[str, float]]:
    """Each heuristic's total wait on the platform, and its gap to the hindsight optimum.

    The jobs request exactly their run times (so estimates are exact and nobody is killed), on a machine of
    ``n_nodes`` identical nodes, cooling off.

    Parameters
    ----------
    submit : np.ndarray
        Submission times [s], shape (n,), n <= 10.
    nodes : np.ndarray
        Nodes per job, shape (n,).
    run_s : np.ndarray
        Run times [s], shape (n,), > 0.
    n_nodes : int
        Machine size.
    policies : tuple[str, ...]
        ``order`` or ``order+backfill`` names.

    Returns
    -------
    dict[str, dict[str, float]]
        ``{"optimum": {"wait_s": W*}, policy: {"wait_s": W, "gap": W / W* - 1 (0 when both are 0)}}``.
    """
    from ..kernel.simulation import Simulation

    opt, _ = hindsight_optimum(submit, nodes, run_s, n_nodes)
    n = len(submit)
    jobs = pd.DataFrame({"job_id": np.arange(n, dtype=np.int64), "submit_time_s": np.asarray(submit, float),
                         "requested_walltime_s": np.asarray(run_s, float), "nodes": np.asarray(nodes, np.int64),
                         "runtime_s": np.asarray(run_s, float), "start_time_s": np.nan, "end_time_s": np.nan,
                         "user": "", "account": "", "queue": "", "status": np.int8(1), "cpu_util": np.nan,
                         "gpu_util": np.nan})
    system = _tiny_system(n_nodes)
    out: dict[str, dict[str, float]] = {"optimum": {"wait_s": opt}}
    span = float(np.max(submit) - min(0.0, float(np.min(submit)))) + 1.0
    for p in policies:
        order, _, backfill = p.partition("+")
        res = Simulation(copy.deepcopy(jobs), system, order, backfill=backfill or None, window_start_s=0.0,
                         window_s=span, step_s=1.0, interval_s=1.0).run()
        W = float(np.sum(res.jobs["wait_s"]))
        out[p] = {"wait_s": W, "gap": (W / opt - 1.0) if opt > 0 else (0.0 if W == 0 else math.inf)}
    return out


# ------------------------------------------------------------------------------------ error study

def error_study(cfg: RunConfig, errors: list[tuple[float, float]], seeds: tuple[int, ...] = (0, 1, 2),
                echo: Callable[[str], None] | None = None) -> list[dict[str, float]]:
    """Realised objective of the twin against the size of its knowledge error.

    Parameters
    ----------
    cfg : RunConfig
        The run (``scheduler.twin`` gives pool, horizon, period and weights; the plant is turned off).
    errors : list[tuple[float, float]]
        ``(runtime_sigma, jitter_s)`` pairs; ``(0, 0)`` is added first when absent (the reference).
    seeds : tuple[int, ...]
        Error seeds per size (their results are averaged; the error-free twin runs once).
    echo : Callable[[str], None] | None
        Printer of one line per result.

    Returns
    -------
    list[dict[str, float]]
        Per error size: ``runtime_sigma``, ``jitter_s``, ``J`` (mean over seeds), ``J_min``, ``J_max``,
        ``degradation`` (J / J(0, 0) - 1), ``mean_wait_s``, ``E_facility_J``, ``wall_s``.
    """
    from dataloaders.registry import load_trace
    from power import load_system

    from ..kernel.simulation import Simulation
    from .runner import _draw_job_power, simulation_config, trace_cores_per_node
    from .twin import Objective

    cfg = cfg.with_overrides({"cooling.model": "off", "output.progress": False})
    system = load_system(cfg.system)
    cpn, _ = trace_cores_per_node(cfg, system)
    loaded = load_trace(cfg.trace.resolved_path(), format=cfg.trace.format or None, max_nodes=system.n_nodes,
                        cores_per_node=cpn, strict=cfg.trace.strict)
    jobs, _ = _draw_job_power(cfg, loaded.jobs, system)
    t = cfg.scheduler.twin
    obj = Objective(t.w_wait_per_s, t.w_energy_per_J)
    if (0.0, 0.0) not in errors:
        errors = [(0.0, 0.0), *errors]
    out = []
    for sig, jit in errors:
        Js, waits, Es, t0 = [], [], [], time.perf_counter()
        for seed in (seeds if (sig or jit) else seeds[:1]):
            pol = NoisyTwinPolicy(sig, jit, seed, pool=list(t.pool), horizon_s=t.horizon_s, period_s=t.period_s,
                                  objective=obj)
            res = Simulation(jobs, system, pol, simulation_config(cfg, system)).run()
            W = float(np.sum(res.jobs["wait_s"]))
            E = float(res.summary["E_it_J"]) * (1.0 + cfg.scheduler.cooling_estimate)
            Js.append(obj.w_wait_per_s * W + obj.w_energy_per_J * E)
            waits.append(float(res.summary["mean_wait_s"]))
            Es.append(E)
        row = {"runtime_sigma": sig, "jitter_s": jit, "J": float(np.mean(Js)), "J_min": float(np.min(Js)),
               "J_max": float(np.max(Js)), "mean_wait_s": float(np.mean(waits)), "E_facility_J": float(np.mean(Es)),
               "wall_s": time.perf_counter() - t0}
        out.append(row)
    ref = out[0]["J"]
    for r in out:
        r["degradation"] = r["J"] / ref - 1.0 if ref else float("nan")
        if echo:
            echo(f"  runtime sigma {r['runtime_sigma']:4.2f}  arrival jitter {r['jitter_s']:6.0f} s  J {r['J']:10.2f} "
                 f"({r['J_min']:.2f} .. {r['J_max']:.2f})  degradation {100 * r['degradation']:+6.2f} %  mean wait "
                 f"{r['mean_wait_s'] / 3600:6.2f} h  ({r['wall_s']:.1f} s)")
    return out
