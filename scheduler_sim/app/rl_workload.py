"""RL post-training pipelines as workloads of a run (``[[workload]] family = "rl"``, issue #24 items 2 and 5).

A pipeline (:func:`scheduler_sim.serving.rl.run_rl`: rollout on the serving engine, a reward pool, the trainer) is
simulated first; its pools then enter the facility like any other work, as ONE gang job of the batch scheduler (a
gang of gangs): ``n_roll + n_train`` nodes, where

* the rollout pool takes ``n_roll = ceil(replicas x tp / gpus_per_node)`` nodes and the reward sandboxes run on the
  host CPUs of those nodes (ASSUMPTION: verl and OpenRLHF run rule-based and sandboxed rewards as processes beside
  the rollout workers; a separate CPU partition would be another gang);
* the trainer takes ``n_train = tp x pp x dp / gpus_per_node`` nodes.

The pipeline was simulated with every pool present from its time 0: a rollout pool without its trainer (or a
trainer without rollouts) has nothing to do, so the pools must start together. One job makes that hold by
construction: the scheduler places and starts all ``n_roll + n_train`` nodes at once or none, whatever the policy
and however busy the machine, and a node failure kills the whole pipeline (as it does a verl / OpenRLHF job: the
pools share one Ray job). Two jobs did not: on a busy machine the smaller rollout job backfilled hours before its
trainer (tests/integration/test_rl_run.py::test_rl_pools_co_start_on_a_busy_machine).

Node power of the job = the node's non-GPU power at the system's default CPU load (``power.node_power_w`` at GPU
load 0, minus the idle GPUs) + (rollout GPU power + idle power of the GPU slots the rollout pool leaves empty +
reward power above idle + trainer GPU power) / ``(n_roll + n_train)``: the pools' total spread evenly over the job's
nodes. With affine conversion stages (the default) a node's rack-input power is affine in its DC power, so the job's
IT power and energy equal those of the two pools on their own nodes exactly; what the even spread leaves out is
the split of that power between the CDUs of the job's nodes (a few CDUs for a pipeline of tens of nodes) and, with
an ``I^2 R`` conversion term, a second-order loss difference.

The step function (thousands of engine segments) is given to the kernel as its exact mean over bins of ``merge_s``
(default 1 s; energy-exact: the bin means integrate to the pools' energy to rounding), so the kernel, the
conversion chain, the CDU heat, the plant and the facility see it like any job's power, and per-job energy,
attribution (``/attribution/jobs``) and the energy closure hold. After the run, :func:`finish_rl` adds the job's
attributed IT and facility energies to the pipeline's report: energy per trained sample at IT and facility scope
and the pipeline's effective PUE (``E_facility / E_it`` of its job, the attribution's rule). Per-pool power stays at
GPU scope in ``/workload/rl_power``.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from jobs.training import ParallelLayout, TrainingGPU, TrainingModel
from power import System, node_power_w

from ..analysis.attribution import Attribution
from ..serving.hardware import Deployment, load_gpu, load_model
from ..serving.rl import RLConfig, RLResult, run_rl
from .workload_config import RLTableConfig, WorkloadConfig

__all__ = ["bin_step_function", "rl_pipeline_jobs", "finish_rl"]


def bin_step_function(t_s: np.ndarray, P_W: np.ndarray, T_s: float, dt_s: float) -> tuple[np.ndarray, np.ndarray]:
    """Energy-exact means of a step function over bins of ``dt_s`` from 0 to ``T_s`` (the last bin may be shorter).

    Parameters
    ----------
    t_s : np.ndarray
        Start of each step [s], shape (k,), non-decreasing, ``t_s[0] = 0``.
    P_W : np.ndarray
        Shape (k,): the value from ``t_s[i]`` to ``t_s[i+1]`` (the last to ``T_s``) [W].
    T_s : float
        End [s] (> 0).
    dt_s : float
        Bin width [s] (> 0).

    Returns
    -------
    tuple of (ndarray, ndarray)
        Bin starts [s] and bin means [W], equal consecutive means merged; ``sum(mean x length)`` equals the step
        function's integral over ``[0, T_s]``.
    """
    t = np.asarray(t_s, dtype=float)
    P = np.asarray(P_W, dtype=float)
    n = max(1, math.ceil(T_s / dt_s - 1e-9))
    edges = np.minimum(np.arange(n + 1, dtype=float) * dt_s, T_s)
    tt = np.append(np.clip(t, 0.0, T_s), T_s)
    E = np.concatenate([[0.0], np.cumsum(np.diff(tt) * P)])           # cumulative energy at the step starts / end
    Ee = np.interp(edges, tt, E)
    mean = np.diff(Ee) / np.diff(edges)
    keep = np.r_[True, np.diff(mean) != 0]
    return edges[:-1][keep], mean[keep]


def rl_pipeline_jobs(w: WorkloadConfig, where: str, index: int, seed: int, system: System,
                     trainer_model: TrainingModel, gpu: TrainingGPU, first_id: int
                     ) -> tuple[list[dict], list[pd.DataFrame], dict, RLResult]:
    """Simulate one ``family = "rl"`` table's pipeline and make its one gang job (module docstring).

    Parameters
    ----------
    w : WorkloadConfig
        The table (``rl`` sub-table, ``model``, ``gpu``, ``layout``, ``submit_day``, ``name``).
    where : str
        The table's name in messages.
    index : int
        The table's index (seeds the pipeline's draws with the run seed).
    seed : int
        The run's seed.
    system : System
        The platform.
    trainer_model : TrainingModel
        The trainer's model (``w.model`` resolved).
    gpu : TrainingGPU
        The GPU type on the system's nodes.
    first_id : int
        Job id of the pipeline's job.

    Returns
    -------
    tuple
        ``(rows, series, report, result)``: one job row in a list (canonical columns plus ``node_power_set_W``),
        its power series in a list (``job_id``, ``t_offset_s``, ``node_power_W``), the pipeline's report (dict) and the
        :class:`scheduler_sim.serving.rl.RLResult`.

    Raises
    ------
    ValueError
        A serving model unknown to the catalogue, a trainer layout that does not fill whole nodes or does not fit,
        pools larger than the system, or a rollout request that never fits a replica (the message names the table).
    """
    r = w.rl if w.rl is not None else RLTableConfig()
    gpn = gpu.gpus_per_node
    node = system.node
    try:
        serving_model = load_model(w.model if isinstance(w.model, str) else "")
    except (ValueError, FileNotFoundError, OSError) as exc:
        raise ValueError(f"{where}: rollout model {w.model!r} is not a serving model of the catalogue "
                         f"(scheduler_sim/serving/data/models): {exc}") from None
    lay = ParallelLayout(**w.layout.model_dump())
    if lay.n_gpus % gpn:
        raise ValueError(f"{where}: trainer layout of {lay.n_gpus} GPUs (tp x pp x dp) does not fill whole nodes of "
                         f"{gpn} GPUs")
    n_roll_gpu = r.rollout_replicas * r.rollout_tp
    n_roll = -(-n_roll_gpu // gpn)
    n_train = lay.n_gpus // gpn
    if n_roll + n_train > system.n_nodes:
        raise ValueError(f"{where}: rollout ({n_roll} nodes) + trainer ({n_train} nodes) exceed the "
                         f"{system.n_nodes} nodes of system {system.name!r}")
    dep = Deployment(name=f"{w.name}-rollout", model=serving_model, gpu=load_gpu(w.gpu),
                     replicas=r.rollout_replicas, tensor_parallel=r.rollout_tp)
    cfg = RLConfig(rollout=dep, trainer_model=trainer_model, trainer_layout=lay, trainer_gpu=gpu, steps=r.steps,
                   prompts=r.prompts, group=r.group, prompt_median=r.prompt_median, prompt_p99=r.prompt_p99,
                   output_median=r.output_median, output_p99=r.output_p99, max_output=r.max_output,
                   reward_workers=r.reward_workers, reward_median_s=r.reward_median_s, reward_p99_s=r.reward_p99_s,
                   reward_worker_W=r.reward_worker_W, reward_idle_W=0.0, mode=r.mode, staleness=r.staleness,
                   partial_segment=r.partial_segment, max_num_seqs=r.max_num_seqs,
                   seed=int(np.random.default_rng([seed, 24, index, 3 * 10**6]).integers(2**31)))
    try:
        res = run_rl(cfg)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None
    T = res.makespan_s
    cpu = system.default_cpu_util
    base = float(node_power_w(cpu, 0.0, node)) - gpn * node.gpu_idle_W   # non-GPU DC power of a node [W]
    empty = (n_roll * gpn - n_roll_gpu) * node.gpu_idle_W                 # GPU slots the rollout pool leaves idle
    # all pools on one job: merge the step functions on the union of their breakpoints, then spread over the nodes
    tu = np.union1d(np.union1d(res.power["rollout"][0], res.power["reward"][0]), res.power["trainer"][0])
    P_all = np.full(tu.size, float(empty))
    for pool in ("rollout", "reward", "trainer"):
        tp, Pp = res.power[pool]
        P_all += Pp[np.searchsorted(tp, tu, side="right") - 1]
    nodes = n_roll + n_train
    tb, Pb = bin_step_function(tu, P_all, T, r.merge_s)
    Pn = base + Pb / nodes
    E_node = float(np.dot(np.diff(np.append(tb, T)), Pn))
    submit = w.submit_day * 86400.0
    rows = [{"job_id": first_id, "submit_time_s": submit, "requested_walltime_s": T, "nodes": nodes,
             "runtime_s": T, "start_time_s": np.nan, "end_time_s": np.nan, "user": "", "account": w.name,
             "queue": "rl", "status": 1, "cpu_util": cpu, "gpu_util": np.nan, "node_power_set_W": E_node / T}]
    series = [pd.DataFrame({"job_id": first_id, "t_offset_s": tb, "node_power_W": Pn})]
    idle = res.idle_fraction
    st = res.staleness
    report = {"name": w.name, "mode": r.mode, "staleness_bound": r.staleness, "partial_segment": r.partial_segment,
              "steps": r.steps, "samples_trained": int(res.samples_trained.sum()), "makespan_s": T,
              "mean_step_s": res.mean_step_s, "samples_per_s": res.samples_per_s,
              "idle_rollout": idle["rollout"], "idle_reward": idle["reward"], "idle_trainer": idle["trainer"],
              "staleness_mean": float(st.mean()) if st.size else 0.0,
              "staleness_max": int(st.max()) if st.size else 0,
              "E_rollout_gpu_J": res.energy_J["rollout"], "E_trainer_gpu_J": res.energy_J["trainer"],
              "E_reward_J": res.energy_J["reward"], "J_per_sample_gpu": res.energy_per_sample_J,
              "job_id": first_id, "nodes": nodes, "rollout_nodes": n_roll,
              "trainer_nodes": n_train, "rollout_gpus": n_roll_gpu, "trainer_gpus": lay.n_gpus,
              "model": trainer_model.name}
    return rows, series, report, res


def finish_rl(reports: list[dict], jobs: pd.DataFrame, attribution: Attribution | None) -> None:
    """Add the attributed energies of each pipeline's job to its report, in place.

    Adds ``E_it_J``, ``E_facility_J`` (the job's ``/attribution/jobs`` energies), ``PUE_effective`` (their ratio),
    ``J_per_sample_it``, ``J_per_sample_facility``, ``start_s`` (the job's start, simulation time) and
    ``wait_s`` (the job's ``wait_s``: how long the pipeline's gang waited for all its nodes at once).

    Parameters
    ----------
    reports : list[dict]
        From :func:`rl_pipeline_jobs`.
    jobs : pd.DataFrame
        The run's job table after the simulation (``job_id``, ``sim_start_s``).
    attribution : Attribution | None
        The run's attribution (None: the energies are NaN).
    """
    ids = jobs["job_id"].to_numpy()
    row = {int(x): i for i, x in enumerate(ids)}
    col = "sim_start_s" if "sim_start_s" in jobs.columns else "start_time_s"
    start = jobs[col].to_numpy(float) if col in jobs.columns else np.full(len(ids), np.nan)
    wait = jobs["wait_s"].to_numpy(float) if "wait_s" in jobs.columns else np.full(len(ids), np.nan)
    for rep in reports:
        a = row.get(rep["job_id"])
        if attribution is not None and a is not None:
            e_it = float(attribution.jobs["E_it_J"][a])
            e_f = float(attribution.jobs["E_facility_J"][a])
        else:
            e_it = e_f = math.nan
        n = max(rep["samples_trained"], 1)
        rep.update({"E_it_J": e_it, "E_facility_J": e_f, "PUE_effective": e_f / e_it if e_it > 0 else math.nan,
                    "J_per_sample_it": e_it / n, "J_per_sample_facility": e_f / n,
                    "start_s": float(start[a]) if a is not None else math.nan,
                    "wait_s": float(wait[a]) if a is not None else math.nan})
