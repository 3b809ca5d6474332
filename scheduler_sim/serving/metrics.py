"""Serving metrics: latency percentiles, SLO attainment, goodput, throughput, energy per token at three scopes.

Definitions (per request, trace time; ``N`` = requests, ``T`` = serving span = last completion - first arrival):

* ``ttft_s`` (time to first token) = first token - arrival, includes queueing and the prefill step;
* ``tpot_s`` (time per output token) = (finish - first token) / (output_tokens - 1); NaN for one-token outputs;
* ``e2e_s`` = finish - arrival;
* ``slo_met`` = completed and ``ttft_s <= ttft_slo_s`` and (``tpot_s <= tpot_slo_s`` or one-token output);
* SLO attainment = mean of ``slo_met``; goodput = SLO-met requests / T [1/s] (DistServe's definition: Zhong et
  al., OSDI 2024);
* tokens/s per GPU = generated tokens / (T x GPUs); tokens/s per user = mean over requests of 1 / ``tpot_s`` (the
  decode speed one user sees);
* energy per generated token at three scopes: GPU (deployment GPUs only), IT (partition nodes' rack-input
  energy: GPUs + CPU / memory / NIC baseline + VRM and rectifier losses, from the facility simulation), facility
  (IT x the run's energy-weighted PUE, i.e. the partition's IT energy plus its pro-rata share of cooling energy);
  all three over the same span (the facility simulation's run, idle tail included);
* SLO-met requests per kJ of facility energy.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["add_slo", "summarize_serving"]


def add_slo(requests: pd.DataFrame, ttft_slo_s: float, tpot_slo_s: float) -> pd.DataFrame:
    """Return a copy of the result table with a boolean ``slo_met`` column (definition in the module docstring)."""
    out = requests.copy()
    tp = out["tpot_s"].to_numpy(float)
    ok = (out["status"].to_numpy() == 1) & (out["ttft_s"].to_numpy(float) <= ttft_slo_s) & \
        (np.isnan(tp) | (tp <= tpot_slo_s))
    out["slo_met"] = ok
    return out


def summarize_serving(requests: pd.DataFrame, n_gpus: int, energies_J: dict[str, float]) -> dict[str, float]:
    """Headline serving metrics.

    Parameters
    ----------
    requests : pd.DataFrame
        Output of :func:`add_slo`.
    n_gpus : int
        GPUs of the deployment.
    energies_J : dict[str, float]
        Energies in J: ``E_gpu_J``, ``E_it_J``, ``E_facility_J`` of the partition over the accounting span (NaN allowed, e.g.
        facility energy without a cooling plant).

    Returns
    -------
    dict of str -> float
        ``requests``, ``completed``, ``rejected``, ``preemptions``, ``ttft_p50_s`` ... ``e2e_p99_s``,
        ``slo_attainment``, ``goodput_req_s``, ``output_tokens``, ``span_s``, ``tokens_per_s``,
        ``tokens_per_s_per_gpu``, ``tokens_per_s_per_user``, the three energies, ``J_per_token_gpu``,
        ``J_per_token_it``, ``J_per_token_facility``, ``slo_met_per_kJ_facility``.
    """
    done = requests["status"].to_numpy() == 1
    tok = float(requests.loc[done, "output_tokens"].sum())
    span = float(np.nanmax(requests["finish_s"].to_numpy(float)) - requests["arrival_time_s"].min()) \
        if done.any() else float("nan")
    s: dict[str, float] = {
        "requests": float(len(requests)), "completed": float(done.sum()),
        "rejected": float(np.count_nonzero(requests["status"].to_numpy() == 2)),
        "preemptions": float(requests["preemptions"].sum()),
    }
    for col in ("ttft_s", "tpot_s", "e2e_s"):
        v = requests[col].to_numpy(float)
        v = v[np.isfinite(v)]
        for p in (50, 90, 99):
            s[f"{col[:-2]}_p{p}_s"] = float(np.percentile(v, p)) if v.size else float("nan")
    met = int(requests["slo_met"].sum())
    tp = requests["tpot_s"].to_numpy(float)
    tp = tp[np.isfinite(tp) & (tp > 0)]
    s.update({
        "slo_attainment": met / len(requests), "slo_met": float(met),
        "goodput_req_s": met / span if span > 0 else float("nan"),
        "output_tokens": tok, "span_s": span,
        "tokens_per_s": tok / span if span > 0 else float("nan"),
        "tokens_per_s_per_gpu": tok / span / n_gpus if span > 0 else float("nan"),
        "tokens_per_s_per_user": float(np.mean(1.0 / tp)) if tp.size else float("nan"),
    })
    for scope in ("gpu", "it", "facility"):
        E = float(energies_J.get(f"E_{scope}_J", float("nan")))
        s[f"E_{scope}_J"] = E
        s[f"J_per_token_{scope}"] = E / tok if tok > 0 else float("nan")
    Ef = s["E_facility_J"]
    s["slo_met_per_kJ_facility"] = met / (Ef / 1e3) if Ef > 0 else float("nan")
    return s
