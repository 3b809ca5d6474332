"""Extreme workload family: very long contexts and arrival bursts (stress cases for planning).

* Long context: prompts log-normal with median ``prompt_median`` (default 32,768) and p99 131,072 tokens (Llama 3
  and most 2024-25 frontier models serve 128K contexts), outputs as the inference family.
* Burst: the arrival rate is multiplied by ``burst_multiplier`` (default 10) on ``[burst_start_s, burst_start_s +
  burst_s)``: a Poisson process of the base rate plus one of ``(k - 1) x rate`` inside the window (superposition of
  Poisson processes). ASSUMPTION: a step burst (launch-day or retry storms), not a fitted shape.
"""

from __future__ import annotations

import numpy as np

from ..requests import make_request_table, poisson_arrivals
from .inference import InferenceFamily, lognormal_from_median_p99

__all__ = ["extreme_family"]


def extreme_family(rng: np.random.Generator, *, duration_s: float = 3600.0, rate_per_s: float = 1.0,
                   burst_multiplier: float = 10.0, burst_start_s: float = 1200.0, burst_s: float = 300.0,
                   prompt_median: float = 32768.0, prompt_p99: float = 131072.0, output_median: float = 250.0,
                   output_p99: float = 2000.0, ttft_s: float = 10.0, tpot_s: float = 0.1) -> InferenceFamily:
    """Long-context requests with a step burst (module docstring).

    Parameters
    ----------
    rng : np.random.Generator
    duration_s : float
        Horizon [s].
    rate_per_s : float
        Base rate [1/s].
    burst_multiplier : float
        Rate factor inside the burst (>= 1).
    burst_start_s : float
        Burst window [s].
    burst_s : float
        Burst window [s].
    prompt_median : float
        Lengths [tokens].
    prompt_p99 : float
        Lengths [tokens].
    output_median : float
        Lengths [tokens].
    output_p99 : float
        Lengths [tokens].
    ttft_s : float
        SLO [s] (looser for long prompts).
    tpot_s : float
        SLO [s] (looser for long prompts).

    Returns
    -------
    InferenceFamily

    Raises
    ------
    ValueError
        If the multiplier is below 1 or the window is empty.
    """
    if not (burst_multiplier >= 1 and burst_s > 0):
        raise ValueError("extreme family: burst_multiplier must be >= 1 and burst_s > 0")
    t = poisson_arrivals(rng, rate_per_s, duration_s)
    if burst_multiplier > 1:
        b = burst_start_s + poisson_arrivals(rng, (burst_multiplier - 1) * rate_per_s, burst_s)
        t = np.sort(np.concatenate([t, b[b < duration_s]]))
    n = t.size
    p = lognormal_from_median_p99(rng, prompt_median, prompt_p99, n)
    o = lognormal_from_median_p99(rng, output_median, output_p99, n)
    return InferenceFamily(make_request_table(t, p, o), {"ttft_s": ttft_s, "tpot_s": tpot_s},
                           {"burst_multiplier": burst_multiplier, "burst_start_s": burst_start_s, "burst_s": burst_s})
