"""What one serving run produced, and its assembly from the run's state: the request table, power segments, counts.

Per request (trace time [s]): ``ttft_s = first_token_s - arrival_time_s``, ``e2e_s = finish_s - arrival_time_s``,
``tpot_s = (finish_s - first_token_s) / (output_tokens - 1)`` (NaN for one-token outputs). A replica's busy
segment draws the energy-averaged power of its steps, ``sum P_k dt_k / sum dt_k`` [W per GPU]. Summary metrics over
the table (percentiles, SLO, goodput, energy per token) are in :mod:`scheduler_sim.serving.metrics`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .hardware import Deployment
from .limits import BatchLimits
from .state import Replica, RequestState, RequestStatus
from .stepcost import Bulk

__all__ = ["ServingResult", "record_segment", "assemble"]


@dataclass
class ServingResult:
    """What one serving run produced.

    Attributes
    ----------
    requests : pandas.DataFrame
        One row per request: the request table columns plus ``replica``, ``first_token_s``, ``finish_s`` (trace
        time [s]), ``ttft_s = first_token_s - arrival_time_s``, ``e2e_s = finish_s - arrival_time_s``,
        ``tpot_s = (finish_s - first_token_s) / (output_tokens - 1)`` (NaN for one-token outputs),
        ``preemptions``, ``status`` (:class:`RequestStatus`), ``cached_prompt_tokens`` (prompt tokens whose prefill
        the prefix cache skipped, at the request's last prefill), ``recompute_cached_tokens`` (of those, the tokens
        in blocks the request itself wrote before it was preempted: saved recomputation, not a prefix hit),
        ``decode_replica`` (= ``replica`` unless
        disaggregated) and ``kv_transfer_s`` (end of the KV transfer - end of the prefill, link queueing included;
        NaN without transfer). When disaggregated, ``first_token_s`` is the end of the KV transfer.
    segments : list of (ndarray, ndarray, ndarray)
        Per replica: busy intervals ``(t_start_s, t_end_s, P_gpu_W)``, each GPU of the replica drawing the
        (energy-averaged) power ``P_gpu_W`` over the interval; outside them the GPUs are idle.
    deployment : Deployment
    limits : BatchLimits
    router : str
    info : dict
        Counts: ``events``, ``prefill_steps``, ``decode_steps``, ``decode_runs``, ``preemptions``, ``wall_time_s``,
        ``events_per_s``, ``t_end_s`` (last completion, trace time), ``prefix_hit_tokens`` (cached prompt tokens in blocks
        written by *other* requests), ``recompute_cached_tokens`` (cached prompt tokens in the request's own blocks,
        reused when it is recomputed after a preemption), ``prefix_evictions``,
        ``kv_transfers``, ``kv_transfer_bytes``, ``kv_transfer_time_s`` (sum of link-busy times),
        ``kv_transfer_energy_J``.
    transfers : dict of ndarray
        KV transfers (disaggregated deployments): ``t_start_s``, ``t_end_s``, ``src`` and ``dst`` replica,
        ``bytes``, ``P_W`` (link power of the replica pair during the transfer, tp x ``kv_link_power_W``).
    """

    requests: pd.DataFrame
    segments: list
    deployment: Deployment
    limits: BatchLimits
    router: str
    info: dict = field(default_factory=dict)
    transfers: dict = field(default_factory=dict)


def record_segment(rep: Replica, b: Bulk) -> None:
    """Append the busy segment of a finished step (or run) to its replica: start, end, energy-averaged power.

    Parameters
    ----------
    rep : Replica
    b : Bulk
        The step(s) just ended; only its first ``b.m`` steps ran.
    """
    m, t0 = b.m, b.t_start
    rep.seg_t0.append(t0)
    if m == 1:                         # one step: the same product and quotient in Python floats
        t1 = float(b.ends[0])
        span = t1 - t0
        P0 = float(b.P[0])
        rep.seg_t1.append(t1)
        rep.seg_P.append(P0 * span / span if span > 0 else P0)
        return
    ends = b.ends
    dt = np.empty(m)                   # np.diff(ends[:m], prepend=t0), without its concatenation
    dt[0] = ends[0] - t0
    np.subtract(ends[1:m], ends[:m - 1], out=dt[1:])
    t1 = float(ends[m - 1])
    span = t1 - t0
    rep.seg_t1.append(t1)
    rep.seg_P.append(float(np.dot(b.P[:m], dt)) / span if span > 0 else float(b.P[0]))


def assemble(requests: pd.DataFrame, st: RequestState, replicas: list[Replica], dep: Deployment,
             limits: BatchLimits, router: str, info: dict, link_P: float, disaggregated: bool) -> ServingResult:
    """Build the :class:`ServingResult` of a finished run.

    Parameters
    ----------
    requests : pd.DataFrame
        The request table served.
    st : RequestState
        The run's per-request arrays.
    replicas : list[Replica]
    dep : Deployment
    limits : BatchLimits
    router : str
    info : dict
        Counters and timings gathered by the engine; the outcome counts are added to a copy.
    link_P : float
        Power of a replica pair's KV links during a transfer [W].
    disaggregated : bool
        Whether prefill and decode ran on separate replicas.

    Returns
    -------
    ServingResult
    """
    df = requests.copy()
    df["replica"] = st.rep
    df["first_token_s"] = st.first
    df["finish_s"] = st.fin
    df["ttft_s"] = st.first - st.arr
    df["e2e_s"] = st.fin - st.arr
    with np.errstate(invalid="ignore", divide="ignore"):
        df["tpot_s"] = np.where(st.out > 1, (st.fin - st.first) / (st.out - 1), np.nan)
    df["preemptions"] = st.npre
    df["status"] = st.status
    df["cached_prompt_tokens"] = st.hit
    df["recompute_cached_tokens"] = st.own
    df["decode_replica"] = np.where(st.drep >= 0, st.drep, st.rep) if disaggregated else st.rep
    df["kv_transfer_s"] = st.x_t1 - st.x_ready
    segs = [(np.asarray(rp.seg_t0), np.asarray(rp.seg_t1), np.asarray(rp.seg_P)) for rp in replicas]
    x = np.isfinite(st.x_t1)
    dur = st.x_t1[x] - st.x_t0[x]
    transfers = {"t_start_s": st.x_t0[x], "t_end_s": st.x_t1[x], "src": st.rep[x], "dst": st.drep[x],
                 "bytes": st.prm[x] * dep.model.kv_bytes_per_token, "P_W": np.full(dur.size, link_P)}
    info = dict(info)
    info.update({"kv_blocks_per_replica": dep.kv_blocks_per_replica,
                 "requests_rejected": int(np.count_nonzero(st.status == RequestStatus.REJECTED)),
                 "prefix_hit_tokens": int((st.hit - st.own).sum()),
                 "recompute_cached_tokens": int(st.own.sum()),
                 "kv_transfers": int(dur.size), "kv_transfer_bytes": float(transfers["bytes"].sum()),
                 "kv_transfer_time_s": float(dur.sum()),
                 "kv_transfer_energy_J": float(link_P * dur.sum())})
    return ServingResult(df, segs, dep, limits, router, info, transfers)
