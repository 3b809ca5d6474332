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

The engine is the event loop and the router; its parts are the batcher / scheduler (:mod:`.batcher`), the KV-cache
manager (:mod:`.kvcache`), the step-cost model (:mod:`.stepcost`) and the result assembly (:mod:`.result`), over the
run's shared state (:mod:`.state`).
"""

from __future__ import annotations

import heapq
import math
import time

import numpy as np
import pandas as pd

from .batcher import Batcher
from .hardware import Deployment
from .kvcache import KVCache
from .limits import BatchLimits
from .result import ServingResult, assemble
from .state import Replica, RequestState, RequestStatus
from .stepcost import StepCost

__all__ = ["BatchLimits", "ServingEngine", "ServingResult", "RequestStatus", "ROUTERS", "DEFAULT_AFFINITY_SLACK"]

ROUTERS = ("round_robin", "least_outstanding_tokens", "prefix_affinity")
#: Default of ``affinity_slack`` [requests]: the affinity replica is kept while its queue is at most this many
#: requests longer than the shortest one. The prefix cache saves at most the prefill of the shared blocks, about
#: one queued prefill step; two requests of slack keep cache hits under light load and spread a burst that
#: shares one prefix (all requests on one replica while the other idles is the failure this bounds).
DEFAULT_AFFINITY_SLACK = 2


class ServingEngine:
    """Replay a request table on a deployment.

    Parameters
    ----------
    deployment : Deployment
        Model x GPU x replicas x tensor-parallel degree.
    limits : BatchLimits
        Per-replica batching limits.
    router : str
        Request router: ``"round_robin"``, ``"least_outstanding_tokens"`` or ``"prefix_affinity"``.
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
        self.cost = StepCost(deployment)
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
        requests : pd.DataFrame
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
        st = self.st = RequestState(requests)
        R = self.R = [Replica(r, self.blocks) for r in range(self.dep.replicas)]
        self.heap: list = []
        self.seq = 0
        self.counts = {"prefill_steps": 0, "decode_steps": 0, "decode_runs": 0, "preemptions": 0, "mixed_steps": 0,
                       "prefix_evictions": 0}
        if self.router == "prefix_affinity":
            self.counts["affinity_fallbacks"] = 0
        self.kv = KVCache(st, self.B, self.T, self.cache_on, self.counts)
        self.batcher = Batcher(st, self.kv, self.cost, self.limits, self.P, self.counts, self._push, self._finish,
                               self._send)
        self._affinity: dict[int, int] = {}
        self._pool = list(range(self.P)) if self.P else list(range(len(R)))
        self._rr = 0
        cap_tokens = self.blocks * self.B
        n_events = 0
        i = 0
        heap = self.heap
        arr = st.arr
        while i < n or heap:
            n_events += 1
            if heap and (i >= n or heap[0][0] <= arr[i]):
                self._pop()
                continue
            t = float(arr[i])
            r = self._route(i, t)
            st.rep[i] = r
            if st.prm[i] + st.out[i] > cap_tokens:
                st.status[i] = RequestStatus.REJECTED
            else:
                rep = R[r]
                rep.outstanding += int(st.prm[i] + st.out[i])
                rep.n_open += 1
                st.open_at[i] = r
                self.batcher.enqueue(rep, i, t)
            i += 1
        t_end = float(np.nanmax(st.fin)) if np.isfinite(st.fin).any() else float(arr[-1])
        wall = time.perf_counter() - wall0
        info = dict(self.counts)
        info.update({"events": n_events, "wall_time_s": wall, "events_per_s": n_events / max(wall, 1e-9),
                     "t_end_s": t_end})
        return assemble(requests, st, R, self.dep, self.limits, self.router, info, self.link_P, bool(self.P))

    def _pop(self) -> None:
        """Process the earliest event of the heap: the end of a replica's plan, or of a KV transfer."""
        t, _, r, version = heapq.heappop(self.heap)
        if r < 0:                        # end of a KV transfer of request `version`
            self._kv_arrived(version, t)
            return
        rep = self.R[r]
        if version != rep.version:
            return
        self.batcher.commit(rep, t)
        self.batcher.start_next(rep, t)

    def _route(self, i: int, t: float) -> int:
        """The replica request i, arriving at t, is routed to (module docstring, "Routers")."""
        pool, R = self._pool, self.R
        if self.router == "round_robin":
            r = pool[self._rr % len(pool)]
            self._rr += 1
            return r
        load = self.batcher.load
        loads = [load(R[x], t) for x in pool]
        r = pool[min(range(len(loads)), key=loads.__getitem__)]  # the first smallest, as np.argmin (int loads)
        prefixes = self.st.ids
        if self.router == "prefix_affinity" and prefixes is not None and len(prefixes[i]):
            best = 0
            if self.cache_on:            # the replica caching the longest leading run of the blocks
                for x in pool:
                    k = self.kv.cached_run(R[x], prefixes[i], len(prefixes[i]))
                    if k > best:
                        best, r = k, x
            key = int(prefixes[i][0])
            r = self._affinity.setdefault(key, r) if best == 0 else r
            q_min = min(R[x].n_open for x in pool)
            if R[r].n_open > q_min + self.affinity_slack:   # affinity replica overloaded: least loaded
                r = min(pool, key=lambda x: (R[x].n_open, loads[pool.index(x)], x))
                self.counts["affinity_fallbacks"] += 1
        return r

    # ------------------------------------------------------------------ helpers
    def _push(self, t: float, rep: Replica) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (t, self.seq, rep.idx, rep.version))

    def _close(self, i: int) -> None:
        """Request i leaves the router's queue of the replica it was routed to (finished, or prefill sent on)."""
        r = int(self.st.open_at[i])
        if r >= 0:
            self.R[r].n_open -= 1
            self.st.open_at[i] = -1

    def _finish(self, rep: Replica, i: int, t: float) -> None:
        """Request i completed on ``rep`` at t: record it, leave the router's queue, free its blocks."""
        self.st.fin[i] = t
        self.st.status[i] = RequestStatus.COMPLETED
        self._close(i)
        self.kv.release(rep, i)

    def _send(self, rep: Replica, i: int, t: float) -> None:
        """Disaggregation: request i's prefill ended at t on prefill replica rep; send its KV to a decode replica."""
        R, st = self.R, self.st
        self._close(i)
        dst = min(range(self.P, len(R)), key=lambda x: (self.batcher.load(R[x], t), x))
        left = int(st.out[i] - st.gen[i])
        rep.outstanding -= left
        R[dst].outstanding += left
        t0 = max(t, rep.link_free)
        t1 = t0 + float(st.prm[i]) * self.xfer_per_tok + self.xfer_lat
        rep.link_free = t1
        st.drep[i] = dst
        st.x_ready[i], st.x_t0[i], st.x_t1[i] = t, t0, t1
        self.seq += 1
        heapq.heappush(self.heap, (t1, self.seq, -1, i))

    def _kv_arrived(self, i: int, t: float) -> None:
        """End of request i's KV transfer: free it on the prefill replica, queue it on its decode replica."""
        st = self.st
        src = self.R[int(st.rep[i])]
        self.kv.release(src, i)
        if math.isnan(st.first[i]):
            st.first[i] = t
        st.ready[i] = True
        self.batcher.enqueue(self.R[int(st.drep[i])], i, t)
        if not src.busy and src.waiting:
            self.batcher.start_next(src, t)
