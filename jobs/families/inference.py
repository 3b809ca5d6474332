"""Inference workload family: arrivals, prompt and output lengths, SLO.

* Arrivals (:mod:`jobs.requests`): ``"poisson"``; ``"gamma"`` renewal with gap coefficient of variation ``cv``
  (bursty for ``cv > 1``; AlpaServe, Li et al., OSDI 2023, fits Gamma processes to production traces);
  ``"mmpp"`` two-state Markov-modulated Poisson (a quiet and a burst state; Fischer and Meier-Hellstern,
  Performance Evaluation 18(2), 1993); ``"replay"`` of a given request table, time-scaled by ``speedup``.
* Lengths: independent log-normals given by a median and a 99th percentile, ``sigma = ln(p99 / median) / z99``,
  ``z99 = 2.3263``, rounded and clipped to ``[1, max_tokens]``. Defaults: prompts median 1,000, p99 8,000
  (ASSUMPTION in the range of the Azure LLM inference traces 2023, conversation and code, Patel et al., Splitwise,
  ISCA 2024); outputs median 250, p99 2,000 (same source's range). Output lengths of RL rollouts use median 500,
  p99 5,000 (see :mod:`jobs.rl`).
* SLO: TTFT and TPOT bounds (defaults 1 s and 50 ms, the serving path's defaults, docs/serving.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..requests import gamma_arrivals, make_request_table, mmpp_arrivals, poisson_arrivals

__all__ = ["InferenceFamily", "inference_family", "lognormal_from_median_p99", "Z99"]

#: Standard normal 99th percentile.
Z99 = 2.3263478740408408


def lognormal_from_median_p99(rng: np.random.Generator, median: float, p99: float, n: int,
                              max_tokens: int = 131072) -> np.ndarray:
    """Integer draws of a log-normal with the given median and 99th percentile, clipped to ``[1, max_tokens]``.

    Parameters
    ----------
    rng : np.random.Generator
    median : float
        Median (> 0).
    p99 : float
        99th percentile (>= median).
    n : int
        Draws.
    max_tokens : int
        Upper clip.

    Returns
    -------
    ndarray of int64, shape (n,)

    Raises
    ------
    ValueError
        If ``median <= 0`` or ``p99 < median``.
    """
    if not (median > 0 and p99 >= median):
        raise ValueError(f"log-normal lengths need 0 < median <= p99, got median={median!r}, p99={p99!r}")
    sigma = math.log(p99 / median) / Z99
    x = np.exp(math.log(median) + sigma * rng.standard_normal(n))
    return np.clip(np.rint(x), 1, max_tokens).astype(np.int64)


@dataclass
class InferenceFamily:
    """Output of :func:`inference_family`.

    Attributes
    ----------
    requests : pandas.DataFrame
        Canonical request table.
    slo : dict
        ``ttft_s`` and ``tpot_s`` bounds [s].
    params : dict
        The parameters used (for provenance).
    """

    requests: pd.DataFrame
    slo: dict
    params: dict = field(default_factory=dict)


def inference_family(rng: np.random.Generator, *, duration_s: float = 3600.0, arrival: str = "poisson",
                     rate_per_s: float = 5.0, cv: float = 2.0, mmpp_rates_per_s: tuple = (2.0, 20.0),
                     mmpp_dwell_s: tuple = (300.0, 60.0), replay: pd.DataFrame | None = None, speedup: float = 1.0,
                     prompt_median: float = 1000.0, prompt_p99: float = 8000.0, output_median: float = 250.0,
                     output_p99: float = 2000.0, max_tokens: int = 131072, ttft_s: float = 1.0,
                     tpot_s: float = 0.05) -> InferenceFamily:
    """Generate an inference workload (module docstring for the distributions).

    Parameters
    ----------
    rng : np.random.Generator
    duration_s : float
        Horizon [s].
    arrival : str
        ``"poisson"``, ``"gamma"``, ``"mmpp"`` or ``"replay"``.
    rate_per_s : float
        Mean rate (Poisson, Gamma) [1/s].
    cv : float
        Gamma gap coefficient of variation.
    mmpp_rates_per_s : tuple
        MMPP state rates [1/s].
    mmpp_dwell_s : tuple
        MMPP mean dwell times [s].
    replay : pd.DataFrame | None
        Request table to replay (``"replay"``); its own lengths are kept.
    speedup : float
        Replay time compression (> 0): arrival times divided by it.
    prompt_median : float
        Length distributions [tokens].
    prompt_p99 : float
        Length distributions [tokens].
    output_median : float
        Length distributions [tokens].
    output_p99 : float
        Length distributions [tokens].
    max_tokens : int
        Length clip [tokens].
    ttft_s : float
        SLO [s].
    tpot_s : float
        SLO [s].

    Returns
    -------
    InferenceFamily

    Raises
    ------
    ValueError
        Unknown arrival family, a replay without a table, or invalid parameters.
    """
    params = dict(arrival=arrival, duration_s=duration_s, rate_per_s=rate_per_s, cv=cv, prompt_median=prompt_median,
                  prompt_p99=prompt_p99, output_median=output_median, output_p99=output_p99)
    slo = {"ttft_s": ttft_s, "tpot_s": tpot_s}
    if arrival == "replay":
        if replay is None or not speedup > 0:
            raise ValueError("arrival 'replay' needs a request table and speedup > 0")
        t = replay["arrival_time_s"].to_numpy(float) / speedup
        keep = t < duration_s
        req = make_request_table(t[keep], replay["prompt_tokens"].to_numpy()[keep],
                                 replay["output_tokens"].to_numpy()[keep])
        return InferenceFamily(req, slo, params)
    if arrival == "poisson":
        t = poisson_arrivals(rng, rate_per_s, duration_s)
    elif arrival == "gamma":
        t = gamma_arrivals(rng, rate_per_s, cv, duration_s)
    elif arrival == "mmpp":
        t = mmpp_arrivals(rng, tuple(mmpp_rates_per_s), tuple(mmpp_dwell_s), duration_s)
    else:
        raise ValueError(f"unknown arrival family {arrival!r}; expected poisson, gamma, mmpp or replay")
    n = t.size
    p = lognormal_from_median_p99(rng, prompt_median, prompt_p99, n, max_tokens)
    o = lognormal_from_median_p99(rng, output_median, output_p99, n, max_tokens)
    return InferenceFamily(make_request_table(t, p, o), slo, params)
