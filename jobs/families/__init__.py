"""Seeded parametric workload families (issue #24 item 3): training, inference, mixed and extreme.

Each generator takes a ``numpy.random.Generator`` (seed it from the run) and documented parameters, and returns
concrete workloads: training job specs (the keys of a ``[[workload]] family = "training"`` table) or request
tables (:mod:`jobs.requests`). Distributions and their sources are in each module's docstring.

* :func:`jobs.families.training.training_family`: dense, MoE and long-context pre-training jobs;
* :func:`jobs.families.inference.inference_family`: Poisson, Gamma-renewal or MMPP arrivals, log-normal prompt and
  output lengths from a median and a p99, an SLO;
* :func:`jobs.families.mixed.mixed_family`: training, batch and inference work in shares of a GPU-hour budget;
* :func:`jobs.families.extreme.extreme_family`: very long contexts and burst multipliers.
"""

from .extreme import extreme_family
from .inference import InferenceFamily, inference_family, lognormal_from_median_p99
from .mixed import MixedFamily, mixed_family
from .training import auto_layout, training_family

from jobs.registry import Registry

__all__ = ["FAMILIES", "training_family", "auto_layout", "inference_family", "InferenceFamily",
           "lognormal_from_median_p99", "mixed_family", "MixedFamily", "extreme_family"]

#: The workload families by name (``hpctwin list families``): each a generator ``f(rng, ...)`` of its module.
FAMILIES: Registry = Registry("workload family")
FAMILIES.register("training", training_family,
                  "dense, MoE and long-context pre-training gang jobs (run config: [[workload]] family = "
                  "\"training_family\")")
FAMILIES.register("inference", inference_family,
                  "LLM requests: Poisson, Gamma-renewal or MMPP arrivals, log-normal prompt and output lengths")
FAMILIES.register("mixed", mixed_family, "GPU-hour shares of training jobs, batch jobs and an inference request "
                  "stream (run config: [[workload]] family = \"mixed\")")
FAMILIES.register("extreme", extreme_family, "very long contexts and burst multipliers (stress cases)")
