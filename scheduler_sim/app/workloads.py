"""Generated workloads of a run (``[[workload]]``, issue #24): training jobs as gang jobs of the batch scheduler.

Each ``family = "training"`` table becomes ``count`` jobs (a ``family = "training_family"`` table first draws its
jobs: :func:`jobs.families.training.training_family`) (:func:`training_jobs`): nodes = GPUs of the layout /
GPUs per node of the system; run time = the wall time of a realised checkpoint / failure timeline
(:func:`jobs.training.resilience_timeline`, seeded from the run's seed and the table's index); requested time =
the run time (the job never hits its walltime); node power = a step function with one value per timeline segment
(training at the exact iteration mean, checkpoint writes, detection and restart), given to the kernel as the job's
power series, so the kernel integrates it exactly and per-job energy, attribution and the energy closure hold as
for any job. The iteration-scale swing (compute, bubble, exposed communication) is a
:class:`power.ramps.PhaseProfile` per job (:attr:`TrainingJobs.profiles`), zero-mean around that iteration mean,
for the fast facility series and its spectrum (closed form, never one event per iteration).

A ``family = "rl"`` table becomes one gang job holding its RL pipeline's rollout and trainer pools, so that they
start together (:mod:`scheduler_sim.app.rl_workload`), with a flat iteration profile (their 1 s power series carries the pools'
swing). A ``family = "inference"`` or ``"extreme"`` table makes no job: it gives ``[serving]`` its requests
(:func:`inference_requests`). A ``family = "mixed"`` table (:func:`mixed_workload`) makes training jobs (as a
``training_family`` table's) and batch jobs (canonical rows, the trace's node power model at their drawn GPU
utilisation) in its shares of the GPU-hours, and gives ``[serving]`` its requests.

Phase node power: the system's node model (:func:`power.node_power_w`) at the system's default CPU load and the
phase's GPU load (:class:`jobs.training.TrainingConstants`): ``util_compute`` in the compute phase,
``util_bubble`` in the bubble, ``util_comm`` in exposed communication, ``util_checkpoint`` while writing,
``util_restart`` while detecting and restarting.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from jobs.families.extreme import extreme_family
from jobs.families.inference import InferenceFamily, inference_family
from jobs.families.mixed import MixedFamily, mixed_family
from jobs.families.training import auto_layout, training_family
from jobs.table import validate_job_table
from jobs.training import (SHIPPED_MODELS, IterationTime, ParallelLayout, Resilience, Timeline, TrainingConstants,
                           TrainingGPU, TrainingModel, expected_ettr, iteration_time, resilience_timeline,
                           young_daly_interval_s)
from power import System, node_power_w
from power.system import Partition
from power.ramps import PhaseProfile

from ..analysis.attribution import Attribution
from ..kernel.partitions import map_partitions
from ..serving.hardware import load_gpu
from .rl_workload import rl_pipeline_jobs
from .workload_config import ExtremeTableConfig, InferenceTableConfig, MixedTableConfig, WorkloadConfig

__all__ = ["TrainingJobs", "training_gpu", "training_jobs", "workload_partition", "merge_jobs", "finish_training",
           "inference_requests", "mixed_workload", "TRAINING_JOB_ID0",
           "DEFAULT_NETWORK_B_S"]

#: Job ids of generated training jobs start here (far above trace ids).
TRAINING_JOB_ID0 = 9_000_000_000
#: Network bandwidth per GPU when the GPU type's catalogue entry has none [B/s]: one 400 Gb/s NIC per GPU
#: (NVIDIA DGX H100: 8 x ConnectX-7 400 Gb/s for 8 GPUs).
DEFAULT_NETWORK_B_S = 50e9


def training_gpu(name: str, system: System, partition: Partition | None = None) -> TrainingGPU:
    """The catalogue GPU type ``name`` as a :class:`jobs.training.TrainingGPU` on ``system``'s nodes.

    Parameters
    ----------
    name : str
        Shipped GPU name or TOML path (:func:`scheduler_sim.serving.hardware.load_gpu`).
    system : System
        Gives the GPUs per node.
    partition : Partition | None
        The partition whose nodes run the jobs (its node type gives the GPUs per node); None = the system's node.

    Returns
    -------
    TrainingGPU

    Raises
    ------
    ValueError
        If the system's nodes have no GPU or the GPU type is unknown.
    """
    g = load_gpu(name)
    node = system.node if partition is None else partition.node
    gpn = node.gpus_per_node
    if gpn < 1:
        where = "" if partition is None or not system.partitioned else f" partition {partition.name!r}"
        raise ValueError(f"[[workload]] training on system {system.name!r}{where}: its nodes have no GPU "
                         f"(gpus_per_node = 0)")
    net = g.network_bandwidth_B_s if g.network_bandwidth_B_s is not None else DEFAULT_NETWORK_B_S
    return TrainingGPU(g.name, g.peak_flops, g.hbm_capacity_B, g.link_bandwidth_B_s, net, gpn, g.idle_power_W,
                       g.max_power_W)


@dataclass
class TrainingJobs:
    """Training jobs generated for a run.

    Attributes
    ----------
    jobs : pandas.DataFrame
        Canonical job rows (:mod:`jobs.table`) with ``node_power_set_W`` (the iteration mean).
    power_series : pandas.DataFrame
        ``job_id``, ``t_offset_s`` [s], ``node_power_W`` [W]: the step function of each job's node power.
    profiles : dict of int -> PhaseProfile
        Iteration-scale node power per job id.
    reports : list of dict
        Per job: iteration breakdown, MFU, timeline counts, ETTR, Young/Daly interval.
    replaced : list of int
        Trace job ids replaced by training jobs (``family = "training_trace"``).
    rl : list of dict
        Per RL pipeline (``family = "rl"``, :mod:`scheduler_sim.app.rl_workload`): its report (step time,
        samples/s, idle per pool, pool energies, job ids; after the run also the attributed IT and facility
        energy, effective PUE and energy per sample).
    rl_results : list of scheduler_sim.serving.rl.RLResult
        The pipelines' results, in the order of ``rl``.
    """

    jobs: pd.DataFrame
    power_series: pd.DataFrame
    profiles: dict = field(default_factory=dict)
    reports: list = field(default_factory=list)
    replaced: list = field(default_factory=list)
    rl: list = field(default_factory=list)
    rl_results: list = field(default_factory=list)


def _model(w: WorkloadConfig, where: str) -> TrainingModel:
    if isinstance(w.model, str):
        if w.model not in SHIPPED_MODELS:
            raise ValueError(f"{where}: model {w.model!r} unknown; shipped: {', '.join(sorted(SHIPPED_MODELS))} "
                             "(or give an inline table)")
        return SHIPPED_MODELS[w.model]
    return TrainingModel(**w.model.model_dump())


def workload_partition(w: WorkloadConfig, system: System, where: str, row: pd.Series | None = None) -> Partition:
    """The batch partition a ``[[workload]]`` table's jobs run in.

    ``w.partition`` when given; else the partition the trace mapping (:func:`scheduler_sim.kernel.partitions.
    map_partitions`) gives the job's queue (``"training"``, or a mapped trace job's own row), which is the default
    partition unless a partition lists that name in its ``trace_names``.

    Parameters
    ----------
    w : WorkloadConfig
        The table.
    system : System
        The platform.
    where : str
        The table, for messages.
    row : pd.Series | None
        A trace job a ``training_trace`` table maps (its partition columns are read).

    Returns
    -------
    Partition

    Raises
    ------
    ValueError
        If the system has no batch partition of that name (the message lists its batch partitions).
    """
    batch = [p for p in system.partitions if p.kind == "batch"]
    if w.partition:
        hit = next((p for p in batch if p.name == w.partition), None)
        if hit is None:
            close = difflib.get_close_matches(w.partition, [p.name for p in batch], n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ValueError(f"{where}: partition {w.partition!r} is not a batch partition of system "
                             f"{system.name!r}{hint} (batch partitions: {', '.join(p.name for p in batch)})")
        return hit
    df = pd.DataFrame([row]) if row is not None else pd.DataFrame({"queue": ["training"]})
    return system.partitions[int(map_partitions(df, system, {})[0])]


def _trace_training_todo(i: int, where: str, w, system, trace_jobs: pd.DataFrame | None, todo: list,
                         replaced: list[int]) -> None:
    """A ``family = "training_trace"`` table's trace jobs as training jobs (appended to ``todo``; ids to ``replaced``).

    Raises ValueError (naming the table) without a batch trace, or for a trace job no layout fits.
    """
    if trace_jobs is None or len(trace_jobs) == 0:
        raise ValueError(f"{where}: family 'training_trace' needs a batch trace (trace.enabled = true)")
    model = _model(w, where)
    tq = trace_jobs["queue"].astype(str).to_numpy()
    sel = np.flatnonzero((tq == w.trace_queue) & (trace_jobs["nodes"].to_numpy() >= w.min_nodes)
                         & np.isfinite(trace_jobs["runtime_s"].to_numpy(float)))
    for r in sel:
        row = trace_jobs.iloc[int(r)]
        part = workload_partition(w, system, where, row)
        gpu = training_gpu(w.gpu, system, part)
        n = int(row["nodes"]) * gpu.gpus_per_node
        try:
            lay = auto_layout(model, n, gpu)
        except ValueError as exc:
            raise ValueError(f"{where}: trace job {int(row['job_id'])} ({int(row['nodes'])} nodes): "
                             f"{exc}") from None
        wk = w.model_copy(update={"count": 1, "name": f"{w.name}-{int(row['job_id'])}"})
        todo.append((i, f"{where} trace job {int(row['job_id'])}", wk, model, lay,
                     float(row["submit_time_s"]) / 86400.0, row, part))
        replaced.append(int(row["job_id"]))


def mixed_workload(w: WorkloadConfig, index: int, seed: int, system: System, where: str) -> MixedFamily:
    """Draw a ``family = "mixed"`` table's work (:func:`jobs.families.mixed.mixed_family`).

    Drawn from ``default_rng([seed, 24, index, 4 * 10**6])``, so the training side (:func:`training_jobs`) and the
    serving side (:func:`inference_requests`) see the same draw. The budget ``gpu_hours = 0`` means the GPUs of the
    table's partition (the system's nodes on a one-partition system) x ``duration_s``.

    Parameters
    ----------
    w : WorkloadConfig
        The table.
    index : int
        Its index among the run's tables.
    seed : int
        The run's seed.
    system : System
        The platform.
    where : str
        The table, for messages.

    Returns
    -------
    MixedFamily

    Raises
    ------
    ValueError
        If the family refuses its parameters (the message names the table).
    """
    m = w.mixed if w.mixed is not None else MixedTableConfig()
    part = workload_partition(w, system, where)
    gpu = training_gpu(w.gpu, system, part)
    budget = m.gpu_hours or part.n_nodes * gpu.gpus_per_node * m.duration_s / 3600.0
    inf = (w.inference if w.inference is not None else InferenceTableConfig()).model_dump(
        exclude={"duration_s", "rate_per_s"})
    inf["mmpp_rates_per_s"], inf["mmpp_dwell_s"] = tuple(inf["mmpp_rates_per_s"]), tuple(inf["mmpp_dwell_s"])
    try:
        return mixed_family(np.random.default_rng([seed, 24, index, 4 * 10**6]), gpu, gpu_hours=budget,
                            share_training=m.share_training, share_inference=m.share_inference,
                            share_batch=m.share_batch, duration_s=m.duration_s, rate_per_s=m.rate_per_s,
                            start_day=w.submit_day,
                            training={"kind": w.kind, "per_day": w.per_day, "gpus": tuple(w.gpus),
                                      "train_hours_median": w.train_hours_median, "sigma": w.sigma},
                            batch_per_day=m.batch_per_day, batch_nodes=tuple(m.batch_nodes),
                            batch_hours_median=m.batch_hours_median, batch_sigma=m.batch_sigma,
                            batch_gpu_util=tuple(m.batch_gpu_util), inference=inf)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None


def _mixed_todo(i: int, where: str, w: WorkloadConfig, system: System, seed: int, todo: list,
                batch: list[pd.DataFrame]) -> None:
    """A ``family = "mixed"`` table's training jobs (appended to ``todo``) and batch jobs (a table appended to
    ``batch``: ids offset by ``i x 10**7`` per table, the partition's default CPU load, account = the table's name).
    """
    part = workload_partition(w, system, where)
    mix = mixed_workload(w, i, seed, system, where)
    for k, d in enumerate(mix.training):
        wk = w.model_copy(update={"count": 1, "train_hours": d["train_hours"], "name": f"{w.name}{k}"})
        todo.append((i, f"{where} training job {k}", wk, d["model"], d["layout"], d["submit_day"], None, part))
    if len(mix.batch):
        b = mix.batch.copy()
        b["job_id"] = b["job_id"] + i * 10**7
        b["cpu_util"] = part.default_cpu_util if system.partitioned else system.default_cpu_util
        b["account"] = w.name
        if system.partitioned:
            b["partition"] = part.name
        batch.append(b)


def _job_rows(rows: list[dict], batch: list[pd.DataFrame]) -> pd.DataFrame:
    """Validated job rows (training, RL) with their ``node_power_set_W``, then the batch jobs (NaN: the node power
    model at their GPU utilisation, like trace jobs).
    """
    jobs = None
    if rows:
        jobs = pd.DataFrame(rows)
        setp = jobs.pop("node_power_set_W")
        jobs = validate_job_table(jobs)
        jobs["node_power_set_W"] = setp.to_numpy()
    if batch:
        b = pd.concat(batch, ignore_index=True)
        b["node_power_set_W"] = np.nan
        jobs = b if jobs is None else pd.concat([jobs, b], ignore_index=True)
    return jobs


def training_jobs(workloads: list[WorkloadConfig], system: System, seed: int,
                  const: TrainingConstants = TrainingConstants(), trace_jobs: pd.DataFrame | None = None
                  ) -> TrainingJobs:
    """Generate the training jobs of a run's ``[[workload]]`` tables (module docstring).

    Parameters
    ----------
    workloads : list[WorkloadConfig]
        The run's tables (other families are skipped).
    system : System
        The platform (node power model, GPUs per node, node count).
    seed : int
        The run's seed; job ``k`` of table ``i`` draws its failures from ``default_rng([seed, 24, i, k, n])``
        (``n`` = jobs generated before it), a family its jobs from ``default_rng([seed, 24, i, 10**6])``.
    const : TrainingConstants
        Efficiency and phase-load constants.
    trace_jobs : pd.DataFrame | None
        The trace's job table, for ``family = "training_trace"`` tables (the job-type mapping of
        :class:`scheduler_sim.app.workload_config.WorkloadConfig`).

    Returns
    -------
    TrainingJobs

    Raises
    ------
    ValueError
        A layout that does not fill whole nodes, needs more nodes than the system has, or does not fit in memory
        (the message names the table, gives the reason and the numbers).
    """
    rows, series, profiles, reports = [], [], {}, []
    jid = TRAINING_JOB_ID0
    todo = []                              # (table index, where, config, model, layout, submit day, trace row, part.)
    replaced: list[int] = []
    batch: list[pd.DataFrame] = []          # batch jobs of mixed tables
    for i, w in enumerate(workloads):
        where = f"[[workload]] {i} ({w.name!r})"
        if w.family == "mixed":
            _mixed_todo(i, where, w, system, seed, todo, batch)
        if w.family == "training":
            todo.append((i, where, w, _model(w, where), ParallelLayout(**w.layout.model_dump()), w.submit_day, None,
                         workload_partition(w, system, where)))
        elif w.family == "training_trace":
            _trace_training_todo(i, where, w, system, trace_jobs, todo, replaced)
        elif w.family == "training_family":
            part = workload_partition(w, system, where)
            gpu = training_gpu(w.gpu, system, part)
            try:
                drawn = training_family(np.random.default_rng([seed, 24, i, 10**6]), gpu, kind=w.kind, jobs=w.jobs,
                                        per_day=w.per_day, start_day=w.submit_day, gpus=tuple(w.gpus),
                                        train_hours_median=w.train_hours_median, sigma=w.sigma)
            except ValueError as exc:
                raise ValueError(f"{where}: {exc}") from None
            for k, d in enumerate(drawn):
                wk = w.model_copy(update={"count": 1, "train_hours": d["train_hours"], "name": f"{w.name}{k}"})
                todo.append((i, f"{where} job {k}", wk, d["model"], d["layout"], d["submit_day"], None, part))
    for i, where, w, model, lay, submit_day, trow, part in todo:
        gpu = training_gpu(w.gpu, system, part)
        cpu = part.default_cpu_util if system.partitioned else system.default_cpu_util

        def node_W(u: float, node=part.node, cpu=cpu) -> float:
            return float(node_power_w(cpu, u, node))

        if lay.n_gpus % gpu.gpus_per_node:
            raise ValueError(f"{where}: {lay.n_gpus} GPUs (tp x pp x dp) do not fill whole nodes of "
                             f"{gpu.gpus_per_node} GPUs")
        nodes = lay.n_gpus // gpu.gpus_per_node
        if nodes > part.n_nodes:
            what = f"partition {part.name!r} of system {system.name!r}" if system.partitioned else \
                f"system {system.name!r}"
            raise ValueError(f"{where}: {nodes} nodes needed, {what} has {part.n_nodes}")
        try:
            it: IterationTime = iteration_time(model, lay, gpu, const)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
        write_s = const.bytes_per_checkpoint_param * model.params / (w.storage_bandwidth_GB_s * 1e9)
        lam = lay.n_gpus * w.failure_rate_per_gpu_h / 3600.0
        mtbf = 1.0 / lam if lam > 0 else math.inf
        yd = young_daly_interval_s(write_s, mtbf)
        tau = yd if w.checkpoint_interval_s == "young-daly" else float(w.checkpoint_interval_s)
        if not (tau > 0 and math.isfinite(tau)):
            raise ValueError(f"{where}: checkpoint interval {tau!r} s is not a finite number > 0")
        res = Resilience(tau, write_s, w.failure_rate_per_gpu_h, w.detect_s, w.restart_s)
        d, _ = it.phases()
        P = (node_W(const.util_compute), node_W(const.util_bubble), node_W(const.util_comm))
        prof = PhaseProfile(tuple(float(x) for x in d), P)
        u_mean = float(np.dot(d, (const.util_compute, const.util_bubble, const.util_comm))) / float(d.sum())
        gpu_mean_W = part.node.gpu_idle_W + u_mean * (part.node.gpu_max_W - part.node.gpu_idle_W)  # its partition
        for k in range(w.count):
            rng = np.random.default_rng([seed, 24, i, k, len(rows)])
            useful = w.train_hours * 3600.0
            this_id, user, acct, queue = jid, "", w.name, "training"
            if trow is not None:  # a mapped trace job: its id, owner and queue; expected wall = recorded run time
                this_id, user, acct, queue = (int(trow["job_id"]), str(trow["user"]), str(trow["account"]),
                                              str(trow["queue"]))
                useful = float(trow["runtime_s"]) * expected_ettr(res, lay.n_gpus)
            tl: Timeline = resilience_timeline(useful, res, lay.n_gpus, rng)
            submit = submit_day * 86400.0 + k * w.spacing_h * 3600.0
            rows.append({"job_id": this_id, "submit_time_s": submit, "requested_walltime_s": tl.wall_s,
                         "nodes": nodes, "runtime_s": tl.wall_s, "start_time_s": np.nan, "end_time_s": np.nan,
                         "user": user, "account": acct, "queue": queue, "status": 1,
                         "cpu_util": cpu, "gpu_util": np.nan, "node_power_set_W": prof.mean_W,
                         **({"partition": part.name} if system.partitioned else {})})
            pw = tl.node_power(prof.mean_W, node_W(const.util_checkpoint), node_W(const.util_restart))
            keep = np.r_[True, np.diff(pw) != 0]           # merge equal neighbours (train followed by lost)
            series.append(pd.DataFrame({"job_id": this_id, "t_offset_s": tl.t_offset_s[keep],
                                        "node_power_W": pw[keep]}))
            profiles[this_id] = prof
            reports.append({"job_id": this_id, "name": f"{w.name}-{k}" if trow is None else w.name,
                            "model": model.name, "gpus": lay.n_gpus, "partition": part.name,
                            "nodes": nodes, "t_iter_s": it.t_iter_s, "mfu": it.mfu,
                            "bubble_fraction": it.bubble_fraction, "t_compute_s": it.t_compute_s,
                            "exposed_comm_s": it.exposed_tp_s + it.exposed_pp_s + it.exposed_ep_s + it.exposed_dp_s,
                            "memory_GB": it.memory.total_B / 1e9, "tokens_per_iter": it.tokens,
                            "P_node_mean_W": prof.mean_W, "P_node_compute_W": P[0], "P_node_low_W": min(P),
                            "checkpoint_interval_s": tau, "young_daly_s": yd, "checkpoint_write_s": write_s,
                            "wall_s": tl.wall_s, "useful_s": tl.useful_s, "ettr": tl.ettr,
                            "n_failures": tl.n_failures, "n_checkpoints": tl.n_checkpoints,
                            "lost_work_s": tl.lost_work_s, "down_s": tl.down_s,
                            "iterations": tl.useful_s / it.t_iter_s, "memory_B": it.memory.total_B,
                            "P_gpu_mean_W": gpu_mean_W, "ettr_expected": expected_ettr(res, lay.n_gpus),
                            "goodput_iter_per_s": tl.useful_s / it.t_iter_s / tl.wall_s})
            jid += trow is None
    rl_reports, rl_results = [], []
    for i, w in enumerate(workloads):  # RL pipelines (every pool in one gang job: they start together)
        if w.family != "rl":
            continue
        where = f"[[workload]] {i} ({w.name!r})"
        gpu = training_gpu(w.gpu, system)
        r_rows, r_series, rep, res = rl_pipeline_jobs(w, where, i, seed, system, _model(w, where), gpu, jid)
        jid += len(r_rows)
        rows += r_rows
        series += r_series
        for rr in r_rows:  # a flat iteration profile: the 1 s series carries the pools' power
            profiles[rr["job_id"]] = PhaseProfile((1.0,), (rr["node_power_set_W"],))
        rl_reports.append(rep)
        rl_results.append(res)
    if not rows and not batch:
        return TrainingJobs(pd.DataFrame(), pd.DataFrame(columns=["job_id", "t_offset_s", "node_power_W"]),
                            replaced=replaced)
    return TrainingJobs(_job_rows(rows, batch), pd.concat(series or [pd.DataFrame(
        columns=["job_id", "t_offset_s", "node_power_W"])], ignore_index=True), profiles, reports, replaced, rl_reports,
                        rl_results)


def merge_jobs(trace_jobs: pd.DataFrame, tj: TrainingJobs) -> pd.DataFrame:
    """The trace's job table with the training jobs appended (sorted by submission, stable); trace jobs a
    ``training_trace`` table mapped are replaced by their training jobs.

    Parameters
    ----------
    trace_jobs : pd.DataFrame
        Canonical job table of the trace (may be empty).
    tj : TrainingJobs
        From :func:`training_jobs`.

    Returns
    -------
    pandas.DataFrame
        Trace jobs keep ``node_power_set_W`` NaN (their own power model); the attrs of ``trace_jobs`` are kept.

    Raises
    ------
    ValueError
        If a trace job id collides with a generated one.
    """
    if len(tj.jobs) == 0:
        return trace_jobs
    a = trace_jobs.loc[~trace_jobs["job_id"].isin(tj.replaced)] if len(trace_jobs) else trace_jobs
    if len(a) and a["job_id"].isin(tj.jobs["job_id"]).any():
        raise ValueError(f"trace job ids collide with the generated training jobs' ids (>= {TRAINING_JOB_ID0})")
    a = a.copy()
    if "node_power_set_W" not in a.columns:
        a["node_power_set_W"] = np.nan
    out = pd.concat([a, tj.jobs], ignore_index=True) if len(a) else tj.jobs.copy()
    out = out.sort_values("submit_time_s", kind="stable").reset_index(drop=True)
    out.attrs = dict(trace_jobs.attrs)
    return out


def finish_training(reports: list[dict], jobs: pd.DataFrame, attribution: Attribution | None) -> None:
    """Add each training job's attributed energies to its report, in place (``/workload/training``).

    Adds ``E_it_J`` and ``E_facility_J`` (the job's ``/attribution/jobs`` energies), ``PUE_effective`` (their
    ratio), ``J_per_iteration_it`` and ``J_per_iteration_facility`` (per useful iteration).

    Parameters
    ----------
    reports : list[dict]
        :attr:`TrainingJobs.reports`.
    jobs : pd.DataFrame
        The run's job table (``job_id``), aligned with the attribution.
    attribution : Attribution | None
        The run's attribution (None: the energies are NaN).
    """
    row = {int(x): i for i, x in enumerate(jobs["job_id"].to_numpy())}
    for rep in reports:
        i = row.get(int(rep["job_id"]))
        if attribution is not None and i is not None:
            e_it = float(attribution.jobs["E_it_J"][i])
            e_f = float(attribution.jobs["E_facility_J"][i])
        else:
            e_it = e_f = math.nan
        n = rep["iterations"] if rep["iterations"] > 0 else math.nan
        rep.update({"E_it_J": e_it, "E_facility_J": e_f, "PUE_effective": e_f / e_it if e_it > 0 else math.nan,
                    "J_per_iteration_it": e_it / n, "J_per_iteration_facility": e_f / n})


def inference_requests(workloads: list[WorkloadConfig], name: str, seed: int,
                       system: System | None = None) -> tuple[str, InferenceFamily]:
    """The requests of the ``[[workload]]`` table ``name`` of family ``inference`` or ``extreme`` (``[serving]
    workload``).

    Drawn by :func:`jobs.families.inference.inference_family` or :func:`jobs.families.extreme.extreme_family` from
    ``default_rng([seed, 24, i, 2 * 10**6])`` (``i`` the table's index), so a run's requests depend on its seed and
    the table only; a ``mixed`` table's are its :func:`mixed_workload` draw's.

    Parameters
    ----------
    workloads : list[WorkloadConfig]
        The run's tables.
    name : str
        The table's name.
    seed : int
        The run's seed.
    system : System | None
        The platform (needed by a ``mixed`` table: its GPU-hour budget and GPU type).

    Returns
    -------
    tuple[str, InferenceFamily]
        The table's name and its requests, SLOs and parameters.

    Raises
    ------
    ValueError
        If no such table has that name, or the family refuses its parameters or draws no request (the message
        names the table).
    """
    for i, w in enumerate(workloads):
        if w.family not in ("inference", "extreme", "mixed") or w.name != name:
            continue
        rng = np.random.default_rng([seed, 24, i, 2 * 10**6])
        try:
            if w.family == "mixed":
                if system is None:
                    raise ValueError("a mixed table needs the system (its GPU-hour budget)")
                p = w.mixed if w.mixed is not None else MixedTableConfig()
                fam = mixed_workload(w, i, seed, system, f"[[workload]] {i} ({name!r})").inference
            elif w.family == "inference":
                p = w.inference if w.inference is not None else InferenceTableConfig()
                fam = inference_family(rng, duration_s=p.duration_s, arrival=p.arrival, rate_per_s=p.rate_per_s,
                                       cv=p.cv, mmpp_rates_per_s=tuple(p.mmpp_rates_per_s),
                                       mmpp_dwell_s=tuple(p.mmpp_dwell_s), prompt_median=p.prompt_median,
                                       prompt_p99=p.prompt_p99, output_median=p.output_median,
                                       output_p99=p.output_p99, max_tokens=p.max_tokens, ttft_s=p.ttft_s,
                                       tpot_s=p.tpot_s)
            else:
                p = w.extreme if w.extreme is not None else ExtremeTableConfig()
                fam = extreme_family(rng, **p.model_dump())
        except ValueError as exc:
            raise ValueError(f"[[workload]] {i} ({name!r}): {exc}") from None
        if len(fam.requests) == 0:
            raise ValueError(f"[[workload]] {i} ({name!r}): no request arrives in {p.duration_s:g} s at "
                             f"{p.rate_per_s:g} per s")
        return name, fam
    raise ValueError(f"no [[workload]] table of family 'inference', 'extreme' or 'mixed' is named {name!r}")
