"""Iteration-level scheduler of a serving replica: continuous batching, preemption, chunked prefill, bulk decode.

vLLM's (v0) scheduling (Kwon et al., SOSP 2023; Yu et al., Orca, OSDI 2022), without chunked prefill: a step is a
*prefill* step (waiting requests admitted first-come first-served while the running sequences stay below
``max_num_seqs``, the step's prompt tokens below ``max_num_batched_tokens`` -- a single longer prompt is admitted
alone -- and the KV cache holds the prompt) or a *decode* step of every running sequence; prefill has priority, and
no prefill is scheduled in a step that needed a preemption. With chunked prefill (Agrawal et al., Sarathi-Serve,
OSDI 2024) every step decodes all running sequences and fills the rest of the token budget with prompt chunks. A
decode step that needs a KV block when none is free preempts the most recently admitted sequence, which is
recomputed later (vLLM's recompute preemption). Between two changes of batch composition the decode steps are
planned as one run (:meth:`Batcher.start_next`); an arrival to an empty waiting queue truncates the run at the first
step boundary at or after it (:meth:`Batcher.enqueue`).

The batcher owns the replicas' queues and the step plans; KV blocks are the :class:`~.kvcache.KVCache`'s, step
times and powers the :class:`~.stepcost.StepCost`'s. What a finished request or a prefill to be sent to a decode
replica means for the router is the engine's, reached through the ``finish`` and ``send`` callables.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from .kvcache import KVCache
from .limits import BatchLimits
from .result import record_segment
from .state import Replica, RequestState
from .stepcost import Bulk, StepCost

__all__ = ["Batcher"]


class Batcher:
    """Plan and commit the steps of every replica of one run.

    Parameters
    ----------
    st : RequestState
        The run's per-request arrays (updated in place).
    kv : KVCache
    cost : StepCost
    limits : BatchLimits
    prefill_replicas : int
        Replicas ``0 .. P-1`` only prefill (disaggregation); 0 when every replica does both.
    counts : dict
        The run's counters (``prefill_steps``, ``decode_steps``, ``decode_runs``, ``mixed_steps``,
        ``preemptions``).
    push : Callable
        ``(t, replica) -> None``: schedule the end of a replica's current plan at a time [s].
    finish : Callable
        ``(replica, i, t) -> None``: request i completed on the replica at t.
    send : Callable
        ``(replica, i, t) -> None``: request i's prefill ended at t on a prefill replica: send its KV cache on.
    """

    def __init__(self, st: RequestState, kv: KVCache, cost: StepCost, limits: BatchLimits, prefill_replicas: int,
                 counts: dict, push: Callable, finish: Callable, send: Callable) -> None:
        self.st, self.kv, self.cost, self.limits = st, kv, cost, limits
        self.P = prefill_replicas
        self.counts = counts
        self.push, self.finish, self.send = push, finish, send
        self.B = kv.B

    def load(self, rep: Replica, t: float) -> float:
        """Outstanding tokens of a replica at time t (decode progress of the run in flight included).

        Parameters
        ----------
        rep : Replica
        t : float
            Time [s].

        Returns
        -------
        float
            Prompt + output tokens not yet processed [tokens].
        """
        b = rep.bulk
        if b is not None and b.kind == "decode":
            k = int(np.searchsorted(b.ends[:b.m], t, side="right"))
            return rep.outstanding - k * len(b.seqs)
        return rep.outstanding

    def enqueue(self, rep: Replica, i: int, t: float) -> None:
        """Put request i at the tail of a replica's waiting queue at t (its outstanding tokens already counted).

        Parameters
        ----------
        rep : Replica
        i : int
            Request row.
        t : float
            Time [s].
        """
        was_empty = not rep.waiting
        rep.waiting.append(i)
        if not rep.busy:
            self.start_next(rep, t)
        elif was_empty and rep.bulk is not None and rep.bulk.kind == "decode" and rep.bulk.m > 1:
            b = rep.bulk
            j = int(np.searchsorted(b.ends[:b.m], t, side="left"))
            if j + 1 < b.m:
                b.m = j + 1
                rep.version += 1
                self.push(float(b.ends[j]), rep)

    def admit_ready(self, rep: Replica) -> None:
        """Decode replica: move requests whose KV cache arrived from the head of the queue into the batch.

        Parameters
        ----------
        rep : Replica
        """
        st = self.st
        while rep.waiting and st.ready[rep.waiting[0]] and len(rep.running) < self.limits.max_num_seqs:
            i = rep.waiting[0]
            if not self.kv.reserve_transferred(rep, i):
                return
            rep.waiting.popleft()
            st.ready[i] = False
            rep.running.append(i)

    def preempt(self, rep: Replica) -> None:
        """Preempt the most recently admitted running sequence: free its blocks, requeue it at the head.

        Parameters
        ----------
        rep : Replica
        """
        st = self.st
        v = rep.running.pop()
        self.kv.release(rep, v)
        st.need[v] = st.prm[v] + st.gen[v]
        st.done[v] = 0
        rep.outstanding += int(st.need[v])
        st.npre[v] += 1
        self.counts["preemptions"] += 1
        rep.waiting.appendleft(v)

    def commit(self, rep: Replica, t: float) -> None:
        """Apply the effects of the step(s) of ``rep`` just ended at ``t`` [s]: tokens, blocks, finishes, sends."""
        b = rep.bulk
        rep.bulk = None
        rep.busy = False
        m = b.m
        record_segment(rep, b)
        st = self.st
        gen = st.gen
        s = b.seqs
        if s.size:
            if b.g is not None:            # a decode run planned with its counts (_decode_run): no gather
                gen[s] = b.g + m
                self.kv.grow(rep, s, L=b.L + m)
                done = s[b.left <= m] if m >= b.lmin else None  # none finishes before its fewest tokens left
            else:
                g = gen[s]                 # one gather: the advanced counts serve the blocks and the finishes
                g += m
                gen[s] = g
                self.kv.grow(rep, s, g)
                done = s[g >= st.out[s]]
            rep.outstanding -= m * s.size
            if done is not None and done.size:
                ds = set(done.tolist())
                rep.running = [x for x in rep.running if x not in ds]
                for x in done.tolist():
                    self.finish(rep, x, t)
        if b.kind == "decode":
            self.counts["decode_steps"] += m
            return
        for (i, q) in b.chunks:
            self._prefilled(rep, i, q, t)

    def _prefilled(self, rep: Replica, i: int, q: int, t: float) -> None:
        """Request i computed ``q`` more prompt tokens in the step ended at t."""
        st = self.st
        gen = st.gen
        st.done[i] += q
        rep.outstanding -= q
        if st.done[i] < st.need[i]:
            return
        gen[i] += 1
        rep.outstanding -= 1
        if i in st.pend:
            self.kv.cache_insert(rep, i)
        send = self.P and rep.idx < self.P and gen[i] < st.out[i]
        if math.isnan(st.first[i]) and not send:
            st.first[i] = t
        if self.limits.chunked_prefill:
            rep.prefilling.remove(i)
        if gen[i] >= st.out[i]:
            self.finish(rep, i, t)
        elif send:
            self.send(rep, i, t)
        else:
            rep.running.append(i)

    def start_next(self, rep: Replica, t: float) -> None:
        """Plan the next step (or run of decode steps) of replica ``rep``, just become free at ``t`` [s]."""
        if self.limits.chunked_prefill:
            self._plan_chunked(rep, t)
            return
        preempted = False
        while True:
            if rep.waiting and not (preempted and rep.running):
                if self.P and self.st.ready[rep.waiting[0]]:
                    self.admit_ready(rep)
                if self._plan_prefill(rep, t):
                    return
            if not rep.running:
                return  # idle
            s = np.asarray(rep.running, dtype=np.int64)
            st = self.st
            g = st.gen[s]
            L = st.prm[s] + g - 1
            left = st.out[s] - g
            lmin = int(left.min())
            k_fail = self.kv.decode_capacity(rep, L, lmin)
            if k_fail == 0:
                self.preempt(rep)
                preempted = True
                continue
            self._decode_run(rep, t, s, L, k_fail, g, left, lmin)
            return

    def _plan_prefill(self, rep: Replica, t: float) -> bool:
        """Admit waiting requests FCFS into a prefill step from t; False when none could be admitted."""
        lim, st, kv = self.limits, self.st, self.kv
        adm, tokens, attn, kv_read = [], 0, 0.0, 0.0
        while rep.waiting:
            i = rep.waiting[0]
            if st.ready[i] or len(rep.running) + len(adm) >= lim.max_num_seqs:
                break
            c0, nfull = kv.lookup(rep, i)
            q = int(st.need[i]) - c0
            if adm and tokens + q > lim.max_num_batched_tokens:
                break
            if not kv.reserve_prompt(rep, i, c0, nfull):
                break
            rep.waiting.popleft()
            st.done[i] = c0            # cached tokens count as computed
            rep.outstanding -= c0
            adm.append((i, q))
            tokens += q
            attn += q * c0 + q * (q + 1) / 2.0
            kv_read += c0
        if not adm:
            return False
        self.counts["prefill_steps"] += 1
        self._begin(rep, self.cost.prefill(t, adm, tokens, attn, kv_read))
        return True

    def _decode_run(self, rep: Replica, t: float, s: np.ndarray, L: np.ndarray, k_fail: int,
                    g: np.ndarray | None = None, left: np.ndarray | None = None, lmin: int | None = None) -> None:
        """Plan the decode run of sequences ``s`` from t: until the first finishes or the KV cache runs out.

        ``g`` (``gen[s]`` now, when the caller has it) and the tokens left are kept on the plan, so its commit
        needs no gather of the per-request arrays (they do not change while the run is in flight); ``left``
        (``out[s] - g``) and ``lmin`` (its minimum) when the caller has them too. The plan keeps ``lmin``: a run
        cut shorter than it finishes no sequence, and its commit looks for none.
        """
        if left is None:
            left = self.st.out[s] - (self.st.gen[s] if g is None else g)
        if lmin is None:
            lmin = int(left.min())
        m = int(min(lmin, k_fail))
        self.counts["decode_runs"] += 1
        b = self.cost.decode_run(t, s, L, m)
        if g is not None:
            b.g, b.L, b.left, b.lmin = g, L, left, lmin
        self._begin(rep, b)

    def _begin(self, rep: Replica, b: Bulk) -> None:
        rep.bulk = b
        rep.busy = True
        rep.version += 1
        self.push(float(b.ends[b.m - 1]), rep)

    def _plan_chunked(self, rep: Replica, t: float) -> None:
        """Chunked prefill: decode every running sequence and fill the token budget with prompt chunks."""
        lim, st, kv, B = self.limits, self.st, self.kv, self.B
        while rep.running:
            s = np.asarray(rep.running, dtype=np.int64)
            L = st.prm[s] + st.gen[s] - 1
            if kv.step_blocks(L) <= rep.free:
                break
            self.preempt(rep)
        budget = lim.max_num_batched_tokens - len(rep.running)
        need_dec = kv.step_blocks(st.prm[rep.running] + st.gen[rep.running] - 1) if rep.running else 0
        free = rep.free - need_dec
        chunks = []
        for i in list(rep.prefilling) + list(rep.waiting):
            if budget <= 0:
                break
            new = i not in rep.prefilling
            if new and len(rep.running) + len(rep.prefilling) >= lim.max_num_seqs:
                break
            q = int(min(st.need[i] - st.done[i], budget))
            blk = -(-(int(st.done[i]) + q) // B) - int(st.nblk[i])
            if blk > free:
                break
            free -= blk
            st.nblk[i] += blk
            chunks.append((i, q))
            budget -= q
            if new:
                rep.waiting.popleft()
                rep.prefilling.append(i)
        s = np.asarray(rep.running, dtype=np.int64)
        L = st.prm[s] + st.gen[s] - 1
        if not chunks:
            if rep.running:
                self._decode_run(rep, t, s, L, kv.decode_capacity(rep, L))
            return
        rep.free = free + need_dec  # decode blocks are charged at commit
        self.counts["mixed_steps"] += 1
        self._begin(rep, self.cost.mixed(t, s, L, chunks, st.done))
