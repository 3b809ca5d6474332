"""Mixed workload family: training, inference and batch work on one facility, in given shares of its GPU-hours.

A planner states how a facility's GPU-hours split ("60 % pre-training, 30 % serving, 10 % batch"); the family turns
that into concrete work for a horizon of ``duration_s`` and a budget of ``gpu_hours``:

* **training** (``share_training``): jobs of :func:`jobs.families.training.training_family` (its kind, sizes, model
  and layout rules and distributions), in submission order, until their useful GPU-hours (GPUs x useful training
  hours) reach ``share_training x gpu_hours``; the last job's training time is cut so that the sum equals it
  exactly. (The wall time adds failures and checkpoints on top: the share is of useful work, the quantity a
  planner budgets.)
* **batch** (``share_batch``): gang jobs of the canonical job table, Poisson submissions of ``batch_per_day``
  per day from ``start_day``, nodes uniform from ``batch_nodes``, run time log-normal with median
  ``batch_hours_median`` and ``batch_sigma``, GPU utilisation uniform on ``batch_gpu_util`` (ASSUMPTIONS: the
  shape of HPC batch traces, many small short jobs; Patel et al., "Job Characteristics on Large-Scale Systems",
  SC20, and Kokolis et al., arXiv 2410.21680, report log-normal-like run times and power-of-two sizes), until
  their GPU-hours (nodes x GPUs per node x run hours) reach ``share_batch x gpu_hours``; the last job's run time
  is cut so that the sum equals it exactly;
* **inference** (``share_inference``): a request stream of :func:`jobs.families.inference.inference_family`
  (``rate_per_s`` and the ``inference`` keywords) over ``duration_s``, served by a serving partition whose GPUs
  should be ``share_inference x gpu_hours / duration_h`` (:attr:`MixedFamily.inference_gpus`): a deployment serves
  requests on GPUs it holds for the whole horizon, so its GPU-hours are its GPUs x the horizon, whatever the load.

The three shares are >= 0 and sum to 1 (to 1e-9). Every draw comes from the given generator, in the order
training, batch, inference.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..table import empty_job_table, validate_job_table
from ..training import TrainingGPU
from .inference import InferenceFamily, inference_family
from .training import training_family

__all__ = ["MixedFamily", "mixed_family", "BATCH_JOB_ID0"]

#: Job ids of the mixed family's batch jobs start here (far above trace ids, below the training jobs' 9e9).
BATCH_JOB_ID0 = 8_000_000_000


@dataclass
class MixedFamily:
    """Output of :func:`mixed_family`.

    Attributes
    ----------
    training : list of dict
        Training job specs (the keys of :func:`jobs.families.training.training_family`'s dicts).
    batch : pandas.DataFrame
        Canonical job table of the batch jobs (``job_id`` from :data:`BATCH_JOB_ID0`).
    inference : InferenceFamily
        The request stream.
    inference_gpus : float
        GPUs the serving partition should hold for the inference share [1].
    gpu_hours : dict
        Realised GPU-hours per part: ``training``, ``batch``, ``inference`` (= ``inference_gpus x duration_h``) [h].
    """

    training: list
    batch: pd.DataFrame
    inference: InferenceFamily
    inference_gpus: float
    gpu_hours: dict = field(default_factory=dict)


def _batch_jobs(rng: np.random.Generator, target_gpu_h: float, gpus_per_node: int, per_day: float,
                start_day: float, nodes: tuple, hours_median: float, sigma: float,
                gpu_util: tuple) -> pd.DataFrame:
    """Batch jobs until their GPU-hours reach ``target_gpu_h`` (module docstring), the last one cut."""
    rows, total, t, k = [], 0.0, start_day * 86400.0, 0
    while total < target_gpu_h * (1 - 1e-12):
        n = int(rng.choice(nodes))
        h = float(hours_median * math.exp(sigma * rng.standard_normal()))
        u = float(rng.uniform(gpu_util[0], gpu_util[1]))
        h = min(h, (target_gpu_h - total) / (n * gpus_per_node))
        total += n * gpus_per_node * h
        rows.append({"job_id": BATCH_JOB_ID0 + k, "submit_time_s": t, "requested_walltime_s": h * 3600.0,
                     "nodes": n, "runtime_s": h * 3600.0, "start_time_s": np.nan, "end_time_s": np.nan,
                     "user": "batch", "account": "mixed", "queue": "batch", "status": 1, "cpu_util": np.nan,
                     "gpu_util": u})
        t += float(rng.exponential(86400.0 / per_day))
        k += 1
    return validate_job_table(pd.DataFrame(rows)) if rows else empty_job_table()


def mixed_family(rng: np.random.Generator, gpu: TrainingGPU, *, gpu_hours: float, share_training: float = 0.6,
                 share_inference: float = 0.3, share_batch: float = 0.1, duration_s: float = 7 * 86400.0,
                 rate_per_s: float = 5.0, start_day: float = 0.0, training: dict | None = None,
                 batch_per_day: float = 50.0, batch_nodes: tuple = (1, 2, 4, 8, 16, 32),
                 batch_hours_median: float = 2.0, batch_sigma: float = 1.0, batch_gpu_util: tuple = (0.2, 1.0),
                 inference: dict | None = None) -> MixedFamily:
    """Training jobs, batch jobs and an inference request stream in shares of ``gpu_hours`` (module docstring).

    Parameters
    ----------
    rng : np.random.Generator
    gpu : TrainingGPU
        The GPU type (layouts of the training jobs; GPUs per node of the batch jobs).
    gpu_hours : float
        The facility's GPU-hour budget over the horizon [h] (> 0).
    share_training : float
        Share of ``gpu_hours`` in useful training (>= 0).
    share_inference : float
        Share held by the serving partition (>= 0).
    share_batch : float
        Share in batch jobs (>= 0); the three sum to 1.
    duration_s : float
        Horizon [s] (> 0): the inference stream's length and the serving partition's time.
    rate_per_s : float
        Inference arrival rate [1/s] (> 0; ignored when ``share_inference`` is 0).
    start_day : float
        First training and batch submission [day].
    training : dict | None
        Keywords of :func:`jobs.families.training.training_family` (``kind``, ``per_day``, ``gpus``,
        ``train_hours_median``, ``sigma``); ``jobs`` and ``start_day`` are set here.
    batch_per_day : float
        Batch submission rate [1/day] (> 0).
    batch_nodes : tuple
        Batch job sizes drawn uniformly [nodes].
    batch_hours_median : float
        Median batch run time [h] (> 0).
    batch_sigma : float
        Log-normal sigma of the batch run time (>= 0).
    batch_gpu_util : tuple
        ``(low, high)`` of the uniform batch GPU utilisation, within [0, 1].
    inference : dict | None
        Keywords of :func:`jobs.families.inference.inference_family` (``duration_s`` and ``rate_per_s`` are set
        here).

    Returns
    -------
    MixedFamily

    Raises
    ------
    ValueError
        If a share is negative, the shares do not sum to 1 (1e-9), or the budget, horizon, rates or batch
        parameters are out of range (the message names the parameter and its value).
    """
    shares = {"share_training": share_training, "share_inference": share_inference, "share_batch": share_batch}
    for k, v in shares.items():
        if not v >= 0:
            raise ValueError(f"mixed family: {k} must be >= 0, got {v!r}")
    if abs(sum(shares.values()) - 1.0) > 1e-9:
        raise ValueError(f"mixed family: share_training + share_inference + share_batch must be 1, got "
                         f"{share_training!r} + {share_inference!r} + {share_batch!r} = {sum(shares.values())!r}")
    if not (gpu_hours > 0 and duration_s > 0 and batch_per_day > 0 and batch_hours_median > 0
            and batch_sigma >= 0 and 0 <= batch_gpu_util[0] <= batch_gpu_util[1] <= 1 and len(batch_nodes) > 0):
        raise ValueError(f"mixed family: need gpu_hours > 0 ({gpu_hours!r}), duration_s > 0 ({duration_s!r}), "
                         f"batch_per_day > 0, batch_hours_median > 0, batch_sigma >= 0, 0 <= batch_gpu_util low "
                         f"<= high <= 1 ({batch_gpu_util!r}) and batch_nodes non-empty")
    # training: draw enough jobs (doubling the draw until their useful GPU-hours reach the target), keep a prefix
    target_t = share_training * gpu_hours
    tj: list[dict] = []
    if target_t > 0:
        seed = int(rng.integers(2**63))
        n = 4
        while True:
            drawn = training_family(np.random.default_rng(seed), gpu, jobs=n, start_day=start_day,
                                    **(training or {}))
            gh = np.cumsum([j["layout"].n_gpus * j["train_hours"] for j in drawn])
            if gh[-1] >= target_t:
                break
            n *= 2
        last = int(np.searchsorted(gh, target_t * (1 - 1e-12)))
        tj = drawn[:last + 1]
        before = float(gh[last - 1]) if last > 0 else 0.0
        tj[-1] = {**tj[-1], "train_hours": (target_t - before) / tj[-1]["layout"].n_gpus}
    target_b = share_batch * gpu_hours
    batch = (_batch_jobs(rng, target_b, gpu.gpus_per_node, batch_per_day, start_day, tuple(batch_nodes),
                         batch_hours_median, batch_sigma, tuple(batch_gpu_util)) if target_b > 0
             else empty_job_table())
    kw = dict(inference or {})
    kw.update(duration_s=duration_s, rate_per_s=rate_per_s)
    inf = inference_family(rng, **kw)
    if share_inference == 0:
        inf.requests = inf.requests.iloc[:0]
    duration_h = duration_s / 3600.0
    inference_gpus = share_inference * gpu_hours / duration_h
    inf.params.update({"family": "mixed", "gpu_hours": gpu_hours, "share_training": share_training,
                       "share_inference": share_inference, "share_batch": share_batch,
                       "inference_gpus": inference_gpus})
    realised = {"training": float(sum(j["layout"].n_gpus * j["train_hours"] for j in tj)),
                "batch": float((batch["nodes"] * batch["runtime_s"]).sum() * gpu.gpus_per_node / 3600.0),
                "inference": inference_gpus * duration_h}
    return MixedFamily(tj, batch, inf, inference_gpus, realised)
