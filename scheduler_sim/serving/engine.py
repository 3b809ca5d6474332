"""Event-driven LLM serving engine: router -> replicas with vLLM-style continuous batching and a paged KV cache.

Per replica (one engine instance on ``tensor_parallel`` GPUs), the scheduler follows vLLM's (v0) iteration-level
scheduling (Kwon et al., SOSP 2023; Yu et al., Orca, OSDI 2022):

* Without chunked prefill, a step is either a *prefill* step (waiting requests admitted first-come first-served
  while the running sequences stay below ``max_num_seqs``, the prompt tokens of the step below
  ``max_num_batched_tokens`` -- a single longer prompt is admitted alone -- and free KV blocks hold the prompt) or a
  *decode* step of every running sequence. Prefill has priority; no prefill is scheduled in a step that needed a
  preemption.
* With chunked prefill (Agrawal et al., Sarathi-Serve, OSDI 2024), every step decodes all running sequences and
  fills the rest of the token budget ``max_num_batched_tokens`` with prompt chunks, first-come first-served.
* The KV cache is paged: a sequence holds ``ceil(cached tokens / block_size)`` blocks. When a decode step needs a
  block and none is free, the most recently admitted running sequence is preempted: its blocks are freed and it
  goes back to the head of the waiting queue, to be *recomputed* later (its prompt plus the tokens generated so
  far are prefilled again; vLLM's recompute preemption). A request whose prompt plus output can never fit in the
  replica's cache is rejected at arrival (``status = REJECTED``).

Bulk decode. Between two changes of batch composition (arrival admitted, completion, preemption) decode steps are
deterministic, so the engine plans the whole run of ``m`` steps at once: ``m`` = min(fewest remaining output tokens,
steps until the KV cache runs out of blocks), step times and powers are computed as numpy arrays, and one event is
scheduled at the end of the run. An arrival routed to a replica whose waiting queue was empty truncates its run at
the first step boundary at or after the arrival (the step in flight finishes; the scheduler then reconsiders the
batch), exactly as a per-step simulation would. Events processed: arrivals, ends of prefill / mixed steps and ends
of decode runs.

Same-time order: the end of a step is processed before an arrival at the same instant (the arrival joins the queue
just after the step boundary). Every choice is deterministic (FCFS order, lowest replica index on router ties).

Routers: ``round_robin``; ``least_outstanding_tokens`` (fewest remaining prompt + output tokens, decode progress of
the run in flight counted up to the arrival); ``prefix_affinity`` (with prefix caching, the replica caching the
longest leading run of the request's prefix blocks; otherwise requests whose first prefix block id was seen before
go to the same replica, others to the least loaded; without prefix ids it is least-outstanding-tokens). Affinity is
balanced against load, as production cache-aware routers do (SGLang's router switches to the shortest queue when
the imbalance passes ``balance_abs_threshold``; vLLM production-stack's prefix-aware router likewise): the
affinity replica is used unless its *queue* (requests routed to it and not yet finished there: waiting, in
prefill, decoding) is longer than the shortest queue of the pool by more than ``affinity_slack`` requests; then
the request goes to the least-loaded replica (shortest queue, ties by fewest outstanding tokens, then lowest
index). The affinity map is not moved by such a fallback.

Prefix caching (``BatchLimits.prefix_caching``): a prefix block id covers ``prefix_block_tokens`` prompt tokens
(``bpp`` KV blocks). After a prefill the request's full prompt blocks are cached; cached blocks pinned by running
requests are shared, unpinned ones stay cached until evicted least recently used (a request unpins its blocks tail
first) when a step needs KV blocks. An admitted prompt whose ``k`` leading blocks are cached (``k T <= prompt - 1``)
is prefilled as ``prompt - k T`` new tokens on ``k T`` cached ones.

Disaggregation (``Deployment.disaggregation``): replicas ``0 .. P-1`` only prefill; at the end of a prefill the
request's KV is sent (FIFO on the sender's links) to the least-loaded decode replica; at the end of the transfer the
prefill replica frees the blocks, the first token counts as delivered and the request joins the decode replica's
queue, from which it enters the batch without a prefill step (admitted FCFS while seats and KV blocks allow).
"""

from __future__ import annotations

import heapq
import math
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .hardware import Deployment
from .roofline import StepModel

__all__ = ["BatchLimits", "ServingEngine", "ServingResult", "RequestStatus", "ROUTERS", "DEFAULT_AFFINITY_SLACK"]

ROUTERS = ("round_robin", "least_outstanding_tokens", "prefix_affinity")
#: Default of ``affinity_slack`` [requests]: the affinity replica is kept while its queue is at most this many
#: requests longer than the shortest one. The prefix cache saves at most the prefill of the shared blocks, about
#: one queued prefill step; two requests of slack keep cache hits under light load and spread a burst that
#: shares one prefix (all requests on one replica while the other idles is the failure this bounds).
DEFAULT_AFFINITY_SLACK = 2


class RequestStatus:
    """Outcome codes of a request (column ``status`` of the result table)."""

    NOT_DONE = 0
    """Still running when the simulation stopped (should not happen)."""
    COMPLETED = 1
    """All output tokens generated."""
    REJECTED = 2
    """Prompt + output can never fit in the replica's KV cache."""


@dataclass(frozen=True)
class BatchLimits:
    """Continuous-batching limits of each replica (vLLM scheduler settings).

    Attributes
    ----------
    max_num_seqs : int
        Sequences in a batch at most (vLLM ``max_num_seqs``, default 256).
    max_num_batched_tokens : int
        Tokens per step at most (vLLM ``max_num_batched_tokens``); with chunked prefill it is the step's token
        budget (decode tokens + prompt chunks).
    chunked_prefill : bool
        Mix prompt chunks into decode steps (Sarathi-Serve) instead of separate prefill steps.
    prefix_caching : bool
        Keep the KV blocks of prompt prefixes (identified by the request's ``prefix_block_ids``) after use and skip
        their prefill when a later prompt starts with them (vLLM automatic prefix caching; not with chunked
        prefill).
    prefix_block_tokens : int
        Tokens per prefix block id (Mooncake ``hash_ids``: 512); a multiple of the deployment's ``block_size``.
    """

    max_num_seqs: int = 256
    max_num_batched_tokens: int = 8192
    chunked_prefill: bool = False
    prefix_caching: bool = False
    prefix_block_tokens: int = 512

    def __post_init__(self) -> None:
        if self.max_num_seqs < 1 or self.max_num_batched_tokens < 1:
            raise ValueError(f"batch limits must be >= 1: max_num_seqs={self.max_num_seqs}, "
                             f"max_num_batched_tokens={self.max_num_batched_tokens}")
        if self.chunked_prefill and self.max_num_batched_tokens <= self.max_num_seqs:
            raise ValueError("with chunked prefill max_num_batched_tokens must exceed max_num_seqs")
        if self.prefix_caching and self.chunked_prefill:
            raise ValueError("prefix caching is not modelled with chunked prefill")
        if self.prefix_block_tokens < 1:
            raise ValueError(f"prefix_block_tokens must be >= 1, got {self.prefix_block_tokens}")


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


class _Replica:
    __slots__ = ("idx", "waiting", "running", "prefilling", "free", "outstanding", "busy", "version", "bulk",
                 "seg_t0", "seg_t1", "seg_P", "ref", "lru", "writer", "link_free", "n_open")

    def __init__(self, idx: int, blocks: int) -> None:
        self.idx = idx
        self.waiting: deque[int] = deque()
        self.running: list[int] = []
        self.prefilling: list[int] = []
        self.free = blocks
        self.outstanding = 0
        self.busy = False
        self.version = 0
        self.bulk = None
        self.seg_t0: list[float] = []
        self.seg_t1: list[float] = []
        self.seg_P: list[float] = []
        self.ref: dict[int, int] = {}            # prefix block id -> requests pinning it (cached, in use)
        self.writer: dict[int, int] = {}         # cached prefix block id -> request whose prefill wrote it
        self.lru: OrderedDict[int, None] = OrderedDict()  # cached prefix blocks in use by none, oldest first
        self.link_free = 0.0                     # time the replica's KV-transfer links are free again
        self.n_open = 0                          # requests routed here and not finished here (the router's queue)


class _Bulk:
    __slots__ = ("kind", "t_start", "ends", "P", "m", "seqs", "chunks")

    def __init__(self, kind, t_start, ends, P, seqs, chunks=()):
        self.kind = kind
        self.t_start = t_start
        self.ends = ends
        self.P = P
        self.m = len(ends)
        self.seqs = seqs
        self.chunks = chunks


class ServingEngine:
    """Replay a request table on a deployment.

    Parameters
    ----------
    deployment : Deployment
        Model x GPU x replicas x tensor-parallel degree.
    limits : BatchLimits
        Per-replica batching limits.
    router : {"round_robin", "least_outstanding_tokens", "prefix_affinity"}
        Request router.
    affinity_slack : int
        ``prefix_affinity`` only: the affinity replica is used unless its queue is longer than the shortest queue
        by more than this many requests (>= 0; default :data:`DEFAULT_AFFINITY_SLACK`). A very large value gives
        pure affinity.

    Raises
    ------
    ValueError
        For an unknown router, a negative slack, or a model that does not fit on a replica.
    """

    def __init__(self, deployment: Deployment, limits: BatchLimits = BatchLimits(),
                 router: str = "least_outstanding_tokens", affinity_slack: int = DEFAULT_AFFINITY_SLACK) -> None:
        if router not in ROUTERS:
            raise ValueError(f"unknown router {router!r}; expected one of {', '.join(ROUTERS)}")
        if not affinity_slack >= 0:
            raise ValueError(f"affinity_slack must be >= 0 requests, got {affinity_slack!r}")
        self.affinity_slack = affinity_slack
        self.dep = deployment
        self.limits = limits
        self.router = router
        self.model = StepModel(deployment)
        self.blocks = deployment.kv_blocks_per_replica
        self.B = deployment.block_size
        d = deployment.disaggregation
        self.P = d.prefill_replicas if d is not None else 0   # 0: no separate prefill pool
        if self.P and limits.chunked_prefill:
            raise ValueError("chunked prefill is not modelled with prefill/decode disaggregation")
        self.cache_on = limits.prefix_caching
        self.T = limits.prefix_block_tokens
        if self.cache_on and self.T % self.B:
            raise ValueError(f"prefix_block_tokens ({self.T}) must be a multiple of the KV block size ({self.B})")
        self.bpp = self.T // self.B              # KV blocks per prefix block
        self.xfer_per_tok = deployment.kv_transfer_s
        self.xfer_lat = d.kv_link_latency_s if d is not None else 0.0
        self.link_P = d.kv_link_power_W * deployment.tensor_parallel if d is not None else 0.0

    # ------------------------------------------------------------------ run
    def run(self, requests: pd.DataFrame) -> ServingResult:
        """Serve every request of the table (times in trace seconds) and return per-request results and power.

        Parameters
        ----------
        requests : pandas.DataFrame
            Canonical request table (:mod:`jobs.requests`), sorted by arrival.

        Returns
        -------
        ServingResult

        Raises
        ------
        ValueError
            If the table is empty.
        """
        wall0 = time.perf_counter()
        n = len(requests)
        if n == 0:
            raise ValueError("the request table is empty: nothing to serve")
        self.arr = requests["arrival_time_s"].to_numpy(float)
        self.prm = requests["prompt_tokens"].to_numpy(np.int64)
        self.out = requests["output_tokens"].to_numpy(np.int64)
        self.gen = np.zeros(n, dtype=np.int64)
        self.need = self.prm.copy()          # tokens to prefill (prompt, or prompt + generated after preemption)
        self.done = np.zeros(n, dtype=np.int64)
        self.nblk = np.zeros(n, dtype=np.int64)
        self.first = np.full(n, np.nan)
        self.fin = np.full(n, np.nan)
        self.rep = np.full(n, -1, dtype=np.int64)
        self.npre = np.zeros(n, dtype=np.int64)
        self.status = np.zeros(n, dtype=np.int8)
        prefixes = requests["prefix_block_ids"].to_numpy(object) if "prefix_block_ids" in requests else None
        self.ids = prefixes
        self.ready = np.zeros(n, dtype=bool)     # KV cache received from a prefill replica, waiting to decode
        self.shared = np.zeros(n, dtype=np.int64)  # context tokens held in (pinned) prefix-cache blocks
        self.pins: list = [()] * n               # prefix block ids a request pins
        self.pend: dict[int, tuple] = {}         # prefix block ids a request's prefill in flight will cache
        self.hit = np.zeros(n, dtype=np.int64)   # prompt tokens the prefix cache skipped (last prefill)
        self.own = np.zeros(n, dtype=np.int64)   # of those, in blocks the request itself wrote before a preemption
        self.drep = np.full(n, -1, dtype=np.int64)
        self.x_t0 = np.full(n, np.nan)
        self.x_t1 = np.full(n, np.nan)
        self.x_ready = np.full(n, np.nan)
        R = [_Replica(r, self.blocks) for r in range(self.dep.replicas)]
        self.R = R
        self.heap: list = []
        self.seq = 0
        self.counts = {"prefill_steps": 0, "decode_steps": 0, "decode_runs": 0, "preemptions": 0, "mixed_steps": 0,
                       "prefix_evictions": 0}
        if self.router == "prefix_affinity":
            self.counts["affinity_fallbacks"] = 0
        self.open_at = np.full(n, -1, dtype=np.int64)   # replica whose queue counts request i (-1: none)
        affinity: dict[int, int] = {}
        pool = list(range(self.P)) if self.P else list(range(len(R)))
        cap_tokens = self.blocks * self.B
        n_events = 0
        rr = 0
        i = 0
        heap = self.heap
        arr = self.arr
        while i < n or heap:
            if heap and (i >= n or heap[0][0] <= arr[i]):
                t, _, r, version = heapq.heappop(heap)
                n_events += 1
                if r < 0:                        # end of a KV transfer of request `version`
                    self._kv_arrived(version, t)
                    continue
                rep = R[r]
                if version != rep.version:
                    continue
                self._commit(rep, t)
                self._start_next(rep, t)
                continue
            t = float(arr[i])
            n_events += 1
            # route
            if self.router == "round_robin":
                r = pool[rr % len(pool)]
                rr += 1
            else:
                loads = [self._load(R[x], t) for x in pool]
                r = pool[int(np.argmin(loads))]
                if self.router == "prefix_affinity" and prefixes is not None and len(prefixes[i]):
                    best = 0
                    if self.cache_on:            # the replica caching the longest leading run of the blocks
                        for x in pool:
                            k = self._cached_run(R[x], prefixes[i], len(prefixes[i]))
                            if k > best:
                                best, r = k, x
                    key = int(prefixes[i][0])
                    r = affinity.setdefault(key, r) if best == 0 else r
                    q_min = min(R[x].n_open for x in pool)
                    if R[r].n_open > q_min + self.affinity_slack:   # affinity replica overloaded: least loaded
                        r = min(pool, key=lambda x: (R[x].n_open, loads[pool.index(x)], x))
                        self.counts["affinity_fallbacks"] += 1
            self.rep[i] = r
            rep = R[r]
            if self.prm[i] + self.out[i] > cap_tokens:
                self.status[i] = RequestStatus.REJECTED
                i += 1
                continue
            rep.outstanding += int(self.prm[i] + self.out[i])
            rep.n_open += 1
            self.open_at[i] = r
            self._enqueue(rep, i, t)
            i += 1

        t_end = float(np.nanmax(self.fin)) if np.isfinite(self.fin).any() else float(arr[-1])
        wall = time.perf_counter() - wall0
        df = requests.copy()
        df["replica"] = self.rep
        df["first_token_s"] = self.first
        df["finish_s"] = self.fin
        df["ttft_s"] = self.first - self.arr
        df["e2e_s"] = self.fin - self.arr
        with np.errstate(invalid="ignore", divide="ignore"):
            df["tpot_s"] = np.where(self.out > 1, (self.fin - self.first) / (self.out - 1), np.nan)
        df["preemptions"] = self.npre
        df["status"] = self.status
        df["cached_prompt_tokens"] = self.hit
        df["recompute_cached_tokens"] = self.own
        df["decode_replica"] = np.where(self.drep >= 0, self.drep, self.rep) if self.P else self.rep
        df["kv_transfer_s"] = self.x_t1 - self.x_ready
        segs = [(np.asarray(rp.seg_t0), np.asarray(rp.seg_t1), np.asarray(rp.seg_P)) for rp in R]
        x = np.isfinite(self.x_t1)
        dur = self.x_t1[x] - self.x_t0[x]
        transfers = {"t_start_s": self.x_t0[x], "t_end_s": self.x_t1[x], "src": self.rep[x], "dst": self.drep[x],
                     "bytes": self.prm[x] * self.dep.model.kv_bytes_per_token, "P_W": np.full(dur.size, self.link_P)}
        info = dict(self.counts)
        info.update({"events": n_events, "wall_time_s": wall, "events_per_s": n_events / max(wall, 1e-9),
                     "t_end_s": t_end, "kv_blocks_per_replica": self.blocks,
                     "requests_rejected": int(np.count_nonzero(self.status == RequestStatus.REJECTED)),
                     "prefix_hit_tokens": int((self.hit - self.own).sum()),
                     "recompute_cached_tokens": int(self.own.sum()),
                     "kv_transfers": int(dur.size), "kv_transfer_bytes": float(transfers["bytes"].sum()),
                     "kv_transfer_time_s": float(dur.sum()),
                     "kv_transfer_energy_J": float(self.link_P * dur.sum())})
        return ServingResult(df, segs, self.dep, self.limits, self.router, info, transfers)

    # ------------------------------------------------------------------ helpers
    def _push(self, t: float, rep: _Replica) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (t, self.seq, rep.idx, rep.version))

    def _load(self, rep: _Replica, t: float) -> float:
        """Outstanding tokens of a replica at time t (decode progress of the run in flight included)."""
        b = rep.bulk
        if b is not None and b.kind == "decode":
            k = int(np.searchsorted(b.ends[:b.m], t, side="right"))
            return rep.outstanding - k * len(b.seqs)
        return rep.outstanding

    def _enqueue(self, rep: _Replica, i: int, t: float) -> None:
        """Put request i at the tail of a replica's waiting queue at t (its outstanding tokens already counted)."""
        was_empty = not rep.waiting
        rep.waiting.append(i)
        if not rep.busy:
            self._start_next(rep, t)
        elif was_empty and rep.bulk is not None and rep.bulk.kind == "decode" and rep.bulk.m > 1:
            b = rep.bulk
            j = int(np.searchsorted(b.ends[:b.m], t, side="left"))
            if j + 1 < b.m:
                b.m = j + 1
                rep.version += 1
                self._push(float(b.ends[j]), rep)

    def _cached_run(self, rep: _Replica, ids, k_max: int) -> int:
        """Number of leading prefix blocks of ``ids`` (at most k_max) the replica holds in its prefix cache."""
        k = 0
        ref, lru = rep.ref, rep.lru
        while k < k_max and (ids[k] in ref or ids[k] in lru):
            k += 1
        return k

    def _release(self, rep: _Replica, i: int) -> None:
        """Free request i's own KV blocks and unpin its prefix blocks (they stay cached, most recently used)."""
        rep.free += int(self.nblk[i])
        self.nblk[i] = 0
        if self.pins[i]:
            ref, lru = rep.ref, rep.lru
            for h in reversed(self.pins[i]):  # the prefix's tail becomes least recently used (as vLLM)
                c = ref[h] - 1
                if c:
                    ref[h] = c
                else:
                    del ref[h]
                    lru[h] = None
            self.pins[i] = ()
            self.shared[i] = 0

    def _evict(self, rep: _Replica) -> None:
        """Evict least recently used unpinned prefix blocks until no free-block count is negative."""
        while rep.free < 0 and rep.lru:
            h, _ = rep.lru.popitem(last=False)
            rep.writer.pop(h, None)
            rep.free += self.bpp
            self.counts["prefix_evictions"] += 1

    def _close(self, i: int) -> None:
        """Request i leaves the router's queue of the replica it was routed to (finished, or prefill sent on)."""
        r = int(self.open_at[i])
        if r >= 0:
            self.R[r].n_open -= 1
            self.open_at[i] = -1

    def _finish(self, rep: _Replica, i: int, t: float) -> None:
        self.fin[i] = t
        self.status[i] = RequestStatus.COMPLETED
        self._close(i)
        self._release(rep, i)

    def _send(self, rep: _Replica, i: int, t: float) -> None:
        """Disaggregation: request i's prefill ended at t on prefill replica rep; send its KV to a decode replica."""
        R = self.R
        self._close(i)
        dst = min(range(self.P, len(R)), key=lambda x: (self._load(R[x], t), x))
        left = int(self.out[i] - self.gen[i])
        rep.outstanding -= left
        R[dst].outstanding += left
        t0 = max(t, rep.link_free)
        t1 = t0 + float(self.prm[i]) * self.xfer_per_tok + self.xfer_lat
        rep.link_free = t1
        self.drep[i] = dst
        self.x_ready[i], self.x_t0[i], self.x_t1[i] = t, t0, t1
        self.seq += 1
        heapq.heappush(self.heap, (t1, self.seq, -1, i))

    def _kv_arrived(self, i: int, t: float) -> None:
        """End of request i's KV transfer: free it on the prefill replica, queue it on its decode replica."""
        src = self.R[int(self.rep[i])]
        self._release(src, i)
        if math.isnan(self.first[i]):
            self.first[i] = t
        self.ready[i] = True
        self._enqueue(self.R[int(self.drep[i])], i, t)
        if not src.busy and src.waiting:
            self._start_next(src, t)

    def _admit_ready(self, rep: _Replica) -> None:
        """Decode replica: move requests whose KV cache arrived from the head of the queue into the batch."""
        B = self.B
        while rep.waiting and self.ready[rep.waiting[0]] and len(rep.running) < self.limits.max_num_seqs:
            i = rep.waiting[0]
            blk = -(-int(self.prm[i] + self.gen[i] - 1) // B)
            if blk > rep.free + len(rep.lru) * self.bpp:
                return
            rep.waiting.popleft()
            rep.free -= blk
            self._evict(rep)
            self.nblk[i] = blk
            self.ready[i] = False
            rep.running.append(i)

    def _preempt(self, rep: _Replica) -> None:
        v = rep.running.pop()
        self._release(rep, v)
        self.need[v] = self.prm[v] + self.gen[v]
        self.done[v] = 0
        rep.outstanding += int(self.need[v])
        self.npre[v] += 1
        self.counts["preemptions"] += 1
        rep.waiting.appendleft(v)

    def _commit(self, rep: _Replica, t: float) -> None:
        """Apply the effects of the step(s) just ended at t."""
        b = rep.bulk
        rep.bulk = None
        rep.busy = False
        m = b.m
        ends = b.ends[:m]
        dt = np.diff(ends, prepend=b.t_start)
        span = float(ends[-1] - b.t_start)
        rep.seg_t0.append(b.t_start)
        rep.seg_t1.append(float(ends[-1]))
        rep.seg_P.append(float(np.dot(b.P[:m], dt)) / span if span > 0 else float(b.P[0]))
        B = self.B
        gen, nblk, prm = self.gen, self.nblk, self.prm
        if len(b.seqs):
            s = b.seqs
            gen[s] += m
            newb = -((-(prm[s] + gen[s] - 1 - self.shared[s])) // B)   # ceil(own cached tokens / B)
            rep.free -= int((newb - nblk[s]).sum())
            nblk[s] = newb
            if rep.free < 0:
                self._evict(rep)
            rep.outstanding -= m * len(s)
            done = s[gen[s] >= self.out[s]]
            if done.size:
                ds = set(done.tolist())
                rep.running = [x for x in rep.running if x not in ds]
                for x in done.tolist():
                    self._finish(rep, x, t)
        if b.kind == "decode":
            self.counts["decode_steps"] += m
            return
        for (i, q) in b.chunks:
            self.done[i] += q
            rep.outstanding -= q
            if self.done[i] >= self.need[i]:
                gen[i] += 1
                rep.outstanding -= 1
                if i in self.pend:
                    self._cache_insert(rep, i)
                send = self.P and rep.idx < self.P and gen[i] < self.out[i]
                if math.isnan(self.first[i]) and not send:
                    self.first[i] = t
                if self.limits.chunked_prefill:
                    rep.prefilling.remove(i)
                if gen[i] >= self.out[i]:
                    self._finish(rep, i, t)
                elif send:
                    self._send(rep, i, t)
                else:
                    rep.running.append(i)

    def _cache_insert(self, rep: _Replica, i: int) -> None:
        """After request i's prefill: cache the prefix blocks it computed (blocks reserved at admission)."""
        new = self.pend.pop(i)
        ref, lru = rep.ref, rep.lru
        for h in new:
            if h in ref:                         # cached meanwhile by a request prefilled in the same step
                ref[h] += 1
                rep.free += self.bpp
            elif h in lru:
                del lru[h]
                ref[h] = 1
                rep.free += self.bpp
            else:
                ref[h] = 1
                rep.writer[h] = i                # written by this request's prefill
        self.pins[i] = self.pins[i] + new

    def _start_next(self, rep: _Replica, t: float) -> None:
        """Plan the next step (or run of decode steps) of a replica that has just become free at t."""
        lim = self.limits
        B = self.B
        preempted = False
        if lim.chunked_prefill:
            self._plan_chunked(rep, t)
            return
        while True:
            if rep.waiting and not (preempted and rep.running):
                if self.P and self.ready[rep.waiting[0]]:
                    self._admit_ready(rep)
                adm, tokens, attn, kv_read = [], 0, 0.0, 0.0
                while rep.waiting:
                    i = rep.waiting[0]
                    if self.ready[i] or len(rep.running) + len(adm) >= lim.max_num_seqs:
                        break
                    need = int(self.need[i])
                    c0 = nfull = 0
                    ids = self.ids[i] if self.cache_on and self.ids is not None else ()
                    if len(ids):
                        T = self.T
                        c0 = self._cached_run(rep, ids, min(len(ids), (int(self.prm[i]) - 1) // T)) * T
                        nfull = max(c0 // T, min(len(ids), int(self.prm[i]) // T))
                    q = need - c0
                    if adm and tokens + q > lim.max_num_batched_tokens:
                        break
                    own = -(-(need - nfull * self.T) // B)
                    blk = own + (nfull - c0 // self.T) * self.bpp
                    if c0:
                        k = c0 // self.T
                        in_lru = sum(1 for h in ids[:k] if h in rep.lru)
                        if blk > rep.free + (len(rep.lru) - in_lru) * self.bpp:
                            break
                        for h in ids[:k]:        # pin the cached blocks
                            if h in rep.lru:
                                del rep.lru[h]
                                rep.ref[h] = 1
                            else:
                                rep.ref[h] += 1
                        self.pins[i] = tuple(ids[:k])
                    elif blk > rep.free + len(rep.lru) * self.bpp:
                        break
                    if nfull > c0 // self.T:
                        self.pend[i] = tuple(ids[c0 // self.T:nfull])
                    rep.waiting.popleft()
                    rep.free -= blk
                    self._evict(rep)
                    self.nblk[i] = own
                    self.shared[i] = nfull * self.T
                    self.hit[i] = c0
                    # blocks this request wrote itself before it was preempted are recomputation saved, not a
                    # prefix hit (only blocks written by other requests are hits; vLLM counts them apart likewise)
                    self.own[i] = sum(1 for h in ids[:c0 // self.T] if rep.writer.get(h) == i) * self.T if c0 else 0
                    self.done[i] = c0            # cached tokens count as computed
                    rep.outstanding -= c0
                    adm.append((i, q))
                    tokens += q
                    attn += q * c0 + q * (q + 1) / 2.0
                    kv_read += c0
                if adm:
                    dt, P = self.model.cost(float(tokens), attn, kv_read, float(len(adm)))
                    self.counts["prefill_steps"] += 1
                    self._begin(rep, _Bulk("prefill", t, np.array([t + float(dt)]), np.array([float(P)]),
                                           np.zeros(0, dtype=np.int64), adm))
                    return
            if not rep.running:
                return  # idle
            s = np.asarray(rep.running, dtype=np.int64)
            L = self.prm[s] + self.gen[s] - 1
            nseq = s.size
            o = np.sort((-L) % B)
            avail = rep.free + len(rep.lru) * self.bpp
            k_fail = (avail // nseq) * B + int(o[avail % nseq])
            if k_fail == 0:
                self._preempt(rep)
                preempted = True
                continue
            m = int(min(int((self.out[s] - self.gen[s]).min()), k_fail))
            self._decode_run(rep, t, s, L, m)
            return

    def _decode_run(self, rep: _Replica, t: float, s: np.ndarray, L: np.ndarray, m: int) -> None:
        nseq = s.size
        ks = np.arange(m, dtype=float)
        Ls = float(L.sum())
        dt, P = self.model.cost(float(nseq), Ls + nseq + nseq * ks, Ls + nseq * ks, float(nseq))
        ends = t + np.cumsum(dt)
        self.counts["decode_runs"] += 1
        self._begin(rep, _Bulk("decode", t, ends, np.asarray(P, dtype=float), s))

    def _begin(self, rep: _Replica, b: _Bulk) -> None:
        rep.bulk = b
        rep.busy = True
        rep.version += 1
        self._push(float(b.ends[b.m - 1]), rep)

    def _plan_chunked(self, rep: _Replica, t: float) -> None:
        """Chunked prefill: decode every running sequence and fill the token budget with prompt chunks."""
        lim = self.limits
        B = self.B
        while rep.running:
            s = np.asarray(rep.running, dtype=np.int64)
            L = self.prm[s] + self.gen[s] - 1
            if int(np.count_nonzero(L % B == 0)) <= rep.free:
                break
            self._preempt(rep)
        budget = lim.max_num_batched_tokens - len(rep.running)
        need_dec = int(np.count_nonzero((self.prm[rep.running] + self.gen[rep.running] - 1) % B == 0)) \
            if rep.running else 0
        free = rep.free - need_dec
        chunks = []
        for i in list(rep.prefilling) + list(rep.waiting):
            if budget <= 0:
                break
            new = i not in rep.prefilling
            if new and len(rep.running) + len(rep.prefilling) >= lim.max_num_seqs:
                break
            q = int(min(self.need[i] - self.done[i], budget))
            blk = -(-(int(self.done[i]) + q) // B) - int(self.nblk[i])
            if blk > free:
                break
            free -= blk
            self.nblk[i] += blk
            chunks.append((i, q))
            budget -= q
            if new:
                rep.waiting.popleft()
                rep.prefilling.append(i)
        if not chunks:
            if not rep.running:
                return
            s = np.asarray(rep.running, dtype=np.int64)
            L = self.prm[s] + self.gen[s] - 1
            o = np.sort((-L) % B)
            k_fail = (rep.free // s.size) * B + int(o[rep.free % s.size])
            m = int(min(int((self.out[s] - self.gen[s]).min()), k_fail))
            self._decode_run(rep, t, s, L, m)
            return
        rep.free = free + need_dec  # decode blocks are charged at commit
        s = np.asarray(rep.running, dtype=np.int64)
        L = self.prm[s] + self.gen[s] - 1
        n_tok = s.size + sum(q for _, q in chunks)
        attn = float(L.sum() + s.size) + sum(q * int(self.done[i]) + q * (q + 1) / 2.0 for i, q in chunks)
        kv = float(L.sum()) + sum(float(self.done[i]) for i, _ in chunks)
        dt, P = self.model.cost(float(n_tok), attn, kv, float(s.size + len(chunks)))
        self.counts["mixed_steps"] += 1
        self._begin(rep, _Bulk("mixed", t, np.array([t + float(dt)]), np.array([float(P)]), s, chunks))
