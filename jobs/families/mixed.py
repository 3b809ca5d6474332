"""Mixed workload family: training jobs and inference requests on one facility, in given shares.

``share_training`` of the job budget ``jobs`` goes to :func:`jobs.families.training.training_family` (rounded),
and the inference rate is ``(1 - share_training) x rate_per_s`` (:func:`jobs.families.inference.inference_family`).
The shares are the planner's input (ASSUMPTION: no public figure for a facility's split).
"""

from __future__ import annotations

import numpy as np

from ..training import TrainingGPU
from .inference import InferenceFamily, inference_family
from .training import training_family

__all__ = ["mixed_family"]


def mixed_family(rng: np.random.Generator, gpu: TrainingGPU, *, share_training: float = 0.5, jobs: int = 4,
                 rate_per_s: float = 10.0, training: dict | None = None,
                 inference: dict | None = None) -> tuple[list[dict], InferenceFamily]:
    """Training jobs and inference requests in shares (module docstring).

    Parameters
    ----------
    rng : np.random.Generator
    gpu : TrainingGPU
    share_training : float
        In [0, 1].
    jobs : int
        Training-job budget.
    rate_per_s : float
        Inference rate budget [1/s].
    training : dict | None
        Extra keywords of :func:`jobs.families.training.training_family`.
    inference : dict | None
        Extra keywords of :func:`jobs.families.inference.inference_family`.

    Returns
    -------
    tuple
        ``(training job specs, InferenceFamily)``.

    Raises
    ------
    ValueError
        If the share is outside [0, 1].
    """
    if not 0.0 <= share_training <= 1.0:
        raise ValueError(f"share_training must be in [0, 1], got {share_training!r}")
    tj = training_family(rng, gpu, jobs=int(round(share_training * jobs)), **(training or {}))
    inf = inference_family(rng, rate_per_s=max((1.0 - share_training) * rate_per_s, 1e-9), **(inference or {}))
    return tj, inf
