"""Seeded parametric workload families (issue #24 item 3): training, inference, mixed and extreme.

Each generator takes a ``numpy.random.Generator`` (seed it from the run) and documented parameters, and returns
concrete workloads: training job specs (the keys of a ``[[workload]] family = "training"`` table) or request
tables (:mod:`jobs.requests`). Distributions and their sources are in each module's docstring.

* :func:`jobs.families.training.training_family`: dense, MoE and long-context pre-training jobs;
* :func:`jobs.families.inference.inference_family`: Poisson, Gamma-renewal or MMPP arrivals, log-normal prompt and
  output lengths from a median and a p99, an SLO;
* :func:`jobs.families.mixed.mixed_family`: shares of both;
* :func:`jobs.families.extreme.extreme_family`: very long contexts and burst multipliers.
"""

from .extreme import extreme_family
from .inference import InferenceFamily, inference_family, lognormal_from_median_p99
from .mixed import mixed_family
from .training import auto_layout, training_family

__all__ = ["training_family", "auto_layout", "inference_family", "InferenceFamily", "lognormal_from_median_p99",
           "mixed_family", "extreme_family"]
