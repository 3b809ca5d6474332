"""Training workload family: dense, MoE and long-context pre-training jobs with a layout rule.

Distributions (ASSUMPTIONS unless a source is named; every draw from the given generator):

* submissions: a Poisson process of ``per_day`` jobs per day (the first at ``start_day``);
* size: GPUs drawn uniformly from ``gpus`` (default 512, 1,024, 2,048, 4,096: powers of two, as large jobs are
  requested; Meta's RSC clusters run jobs from one to thousands of GPUs with most GPU-hours in the largest,
  Kokolis et al., arXiv 2410.21680, HPCA 2025);
* model: uniformly from the kind's shipped models (:data:`jobs.training.SHIPPED_MODELS`): dense = Llama 3 8B / 70B
  / 405B, MoE = Mixtral 8x7B, long-context = a dense model at 32,768 or 131,072 tokens (Llama 3's long-context
  stage reached 128K, arXiv 2407.21783, section 3.4.2);
* useful training time: log-normal with median ``train_hours_median`` and ``sigma`` (default 24 h, 1.0);
* layout (:func:`auto_layout`): TP 8 (one node), the smallest pipeline depth in 1, 2, 4, 8, 16 whose memory fits
  (ZeRO 1, selective recompute, else full recompute; full recompute only for long context), 1F1B with ``4 pp``
  micro-batches (bubble ``(pp-1)/(5 pp-1)`` < 20 %), the rest data parallel, experts spread over data-parallel
  ranks (``ep`` = the largest divisor of the experts that divides dp).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..training import SHIPPED_MODELS, InfeasibleLayout, ParallelLayout, TrainingGPU, TrainingModel, memory_use

__all__ = ["training_family", "auto_layout", "KINDS"]

KINDS = {"dense": ("llama-3-8b", "llama-3-70b", "llama-3-405b"), "moe": ("mixtral-8x7b",),
         "long-context": ("llama-3-8b", "llama-3-70b")}


def auto_layout(model: TrainingModel, n_gpus: int, gpu: TrainingGPU) -> ParallelLayout:
    """The layout rule of the module docstring.

    Parameters
    ----------
    model : TrainingModel
    n_gpus : int
        GPUs of the job (a multiple of ``8 x pp``).
    gpu : TrainingGPU

    Returns
    -------
    ParallelLayout

    Raises
    ------
    InfeasibleLayout
        If no pipeline depth up to 16 fits in memory on ``n_gpus`` GPUs.
    """
    tp = min(8, gpu.gpus_per_node)
    rcs = ("full",) if model.seq_len > 8192 else ("selective", "full")
    for pp in (1, 2, 4, 8, 16):
        if n_gpus % (tp * pp) or pp > model.layers:
            continue
        dp = n_gpus // (tp * pp)
        ep = max(e for e in range(1, model.experts + 1) if model.experts % e == 0 and dp % e == 0)
        for rc in rcs:
            lay = ParallelLayout(tp=tp, pp=pp, dp=dp, ep=ep, micro_batches=4 * pp, recompute=rc, zero_stage=1)
            if memory_use(model, lay, gpu).feasible:
                return lay
    raise InfeasibleLayout(f"{model.name}: no pipeline depth up to 16 fits on {n_gpus} x {gpu.name}")


def training_family(rng: np.random.Generator, gpu: TrainingGPU, *, kind: str = "dense", jobs: int = 4,
                    per_day: float = 2.0, start_day: float = 0.0, gpus: tuple = (512, 1024, 2048, 4096),
                    train_hours_median: float = 24.0, sigma: float = 1.0) -> list[dict]:
    """Draw ``jobs`` training jobs of one kind (module docstring for the distributions).

    Parameters
    ----------
    rng : np.random.Generator
    gpu : TrainingGPU
        The GPU type (memory feasibility of the layout).
    kind : str
        ``"dense"``, ``"moe"`` or ``"long-context"``.
    jobs : int
        Number of jobs.
    per_day : float
        Submission rate [1/day].
    start_day : float
        First submission [day].
    gpus : tuple
        Allowed GPU counts.
    train_hours_median : float
        Median useful training time [h].
    sigma : float
        Log-normal sigma of the training time.

    Returns
    -------
    list of dict
        One dict per job: ``model`` (a :class:`jobs.training.TrainingModel`), ``layout``
        (:class:`jobs.training.ParallelLayout`), ``submit_day``, ``train_hours``, ``kind``.

    Raises
    ------
    ValueError
        Unknown kind or invalid rates.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown training kind {kind!r}; expected one of {', '.join(KINDS)}")
    if not (per_day > 0 and jobs >= 0 and train_hours_median > 0 and sigma >= 0):
        raise ValueError("training family: per_day and train_hours_median must be > 0, jobs and sigma >= 0")
    t = start_day + np.concatenate(([0.0], np.cumsum(rng.exponential(1.0 / per_day, max(jobs - 1, 0)))))
    out = []
    for k in range(jobs):
        name = KINDS[kind][int(rng.integers(len(KINDS[kind])))]
        m = SHIPPED_MODELS[name]
        if kind == "long-context":
            m = dataclasses.replace(m, name=f"{name}-long", seq_len=int(rng.choice([32768, 131072])))
        n = int(rng.choice(gpus))
        hours = float(train_hours_median * np.exp(sigma * rng.standard_normal()))
        out.append({"model": m, "layout": auto_layout(m, n, gpu), "submit_day": float(t[k]), "train_hours": hours,
                    "kind": kind})
    return out
