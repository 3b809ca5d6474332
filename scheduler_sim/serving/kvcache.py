"""Paged KV cache and prefix cache of the serving replicas (vLLM's block manager and automatic prefix caching).

A sequence holds ``ceil(own cached tokens / block_size)`` blocks (Kwon et al., SOSP 2023). With prefix caching a
prefix block id covers ``prefix_block_tokens`` prompt tokens (``bpp`` KV blocks); cached blocks pinned by running
requests are shared, unpinned ones stay cached (least recently used first out) until a step needs their room. Free
counts are in KV blocks; a replica's ``free`` may go negative for an instant, and :meth:`KVCache.evict` brings it
back by evicting unpinned prefix blocks. See the module docstring of :mod:`scheduler_sim.serving.engine`.
"""

from __future__ import annotations

import numpy as np

from .state import Replica, RequestState

__all__ = ["KVCache"]


class KVCache:
    """Block accounting of every replica of one run.

    Parameters
    ----------
    st : RequestState
        The run's per-request arrays (updated in place: ``nblk``, ``pins``, ``pend``, ``shared``, ``hit``, ``own``).
    block_size : int
        Tokens per KV block.
    prefix_block_tokens : int
        Tokens per prefix block id (a multiple of ``block_size`` when prefix caching is on).
    prefix_caching : bool
        Whether prompts look up and fill the prefix cache.
    counts : dict
        The run's counters; ``prefix_evictions`` is incremented here.
    """

    def __init__(self, st: RequestState, block_size: int, prefix_block_tokens: int, prefix_caching: bool,
                 counts: dict) -> None:
        self.st = st
        self.B = block_size
        self.T = prefix_block_tokens
        self.bpp = self.T // self.B              # KV blocks per prefix block
        self.cache_on = prefix_caching
        self.counts = counts

    def cached_run(self, rep: Replica, ids: tuple, k_max: int) -> int:
        """Number of leading prefix blocks of ``ids`` (at most ``k_max``) the replica holds in its prefix cache.

        Parameters
        ----------
        rep : Replica
        ids : tuple
            Prefix block ids of a prompt (int each).
        k_max : int
            Most blocks to count.

        Returns
        -------
        int
        """
        k = 0
        ref, lru = rep.ref, rep.lru
        while k < k_max and (ids[k] in ref or ids[k] in lru):
            k += 1
        return k

    def lookup(self, rep: Replica, i: int) -> tuple[int, int]:
        """Cached leading tokens of request i's prompt on a replica, and the full prefix blocks of its prompt.

        Parameters
        ----------
        rep : Replica
        i : int
            Request row.

        Returns
        -------
        c0 : int
            Prompt tokens already in the replica's prefix cache (whole prefix blocks, at most prompt - 1) [tokens].
        nfull : int
            Prefix blocks the prompt fills completely (those it will cache after its prefill).
        """
        st = self.st
        ids = st.ids[i] if self.cache_on and st.ids is not None else ()
        if not len(ids):
            return 0, 0
        T = self.T
        c0 = self.cached_run(rep, ids, min(len(ids), (int(st.prm[i]) - 1) // T)) * T
        return c0, max(c0 // T, min(len(ids), int(st.prm[i]) // T))

    def reserve_prompt(self, rep: Replica, i: int, c0: int, nfull: int) -> bool:
        """Reserve the KV blocks of request i's prefill (``c0`` cached tokens) and pin its cached prefix blocks.

        Parameters
        ----------
        rep : Replica
        i : int
            Request row; ``need[i]`` tokens are to be prefilled.
        c0 : int
            Cached prompt tokens, as returned by :meth:`lookup`.
        nfull : int
            Full prefix blocks of the prompt, as returned by :meth:`lookup`.

        Returns
        -------
        bool
            False (nothing changed) when the free blocks plus evictable prefix blocks cannot hold the prompt.
        """
        st, T, bpp = self.st, self.T, self.bpp
        need = int(st.need[i])
        ids = st.ids[i] if self.cache_on and st.ids is not None else ()
        own = -(-(need - nfull * T) // self.B)
        blk = own + (nfull - c0 // T) * bpp
        if c0:
            k = c0 // T
            in_lru = sum(1 for h in ids[:k] if h in rep.lru)
            if blk > rep.free + (len(rep.lru) - in_lru) * bpp:
                return False
            for h in ids[:k]:        # pin the cached blocks
                if h in rep.lru:
                    del rep.lru[h]
                    rep.ref[h] = 1
                else:
                    rep.ref[h] += 1
            st.pins[i] = tuple(ids[:k])
        elif blk > rep.free + len(rep.lru) * bpp:
            return False
        if nfull > c0 // T:
            st.pend[i] = tuple(ids[c0 // T:nfull])
        rep.free -= blk
        self.evict(rep)
        st.nblk[i] = own
        st.shared[i] = nfull * T
        st.hit[i] = c0
        # blocks this request wrote itself before it was preempted are recomputation saved, not a
        # prefix hit (only blocks written by other requests are hits; vLLM counts them apart likewise)
        st.own[i] = sum(1 for h in ids[:c0 // T] if rep.writer.get(h) == i) * T if c0 else 0
        return True

    def reserve_transferred(self, rep: Replica, i: int) -> bool:
        """Decode replica ``rep``: take request ``i``'s transferred KV blocks (prompt + first token); False: no room."""
        st = self.st
        blk = -(-int(st.prm[i] + st.gen[i] - 1) // self.B)
        if blk > rep.free + len(rep.lru) * self.bpp:
            return False
        rep.free -= blk
        self.evict(rep)
        st.nblk[i] = blk
        return True

    def decode_capacity(self, rep: Replica, L: np.ndarray, enough: int | None = None) -> int:
        """Decode steps the running sequences can take before one needs a block and none is left.

        The capacity is ``(avail // nseq) B + o[avail % nseq]`` with ``o`` the sorted steps each sequence has
        before its next block boundary (``(-L) mod B``), ``avail`` the free plus evictable blocks. With ``enough``
        (the caller needs at most that many steps, >= 1), when the lower bound ``(avail // nseq) B`` already
        reaches it the sort is skipped and ``enough`` returned: ``min(capacity, enough)`` is the same either way.

        Parameters
        ----------
        rep : Replica
        L : np.ndarray
            int64, shape (nseq,): cached tokens of each running sequence.
        enough : int | None
            Steps the caller will take at most (None: the exact capacity).

        Returns
        -------
        int
            0 when the next step already needs a preemption; with ``enough``, possibly ``enough`` in place of a
            larger capacity.
        """
        nseq = L.size
        avail = rep.free + len(rep.lru) * self.bpp
        base = (avail // nseq) * self.B
        if enough is not None and base >= enough >= 1:
            return enough
        o = np.sort((-L) % self.B)
        return base + int(o[avail % nseq])

    def step_blocks(self, L: np.ndarray) -> int:
        """New KV blocks one decode step of sequences with ``L`` cached tokens needs (those on a block boundary).

        Parameters
        ----------
        L : np.ndarray
            int64: cached tokens of each sequence.

        Returns
        -------
        int
        """
        return int(np.count_nonzero(L % self.B == 0))

    def grow(self, rep: Replica, s: np.ndarray, gen: np.ndarray | None = None, L: np.ndarray | None = None) -> None:
        """Charge the blocks of sequences ``s`` after their decode steps (``gen`` already advanced).

        Parameters
        ----------
        rep : Replica
        s : np.ndarray
            Request rows (int64).
        gen : np.ndarray | None
            ``st.gen[s]``, when the caller has it (int64, shape of ``s``); None reads it.
        L : np.ndarray | None
            Cached tokens of each sequence now, ``prm[s] + gen[s] - 1``, when the caller has them (then ``gen`` is
            not used).
        """
        st = self.st
        if L is None:
            L = st.prm[s] + (st.gen[s] if gen is None else gen) - 1
        own = L - st.shared[s] if self.cache_on else L  # without prefix caching no context is shared (0)
        newb = -((-own) // self.B)                 # ceil(own cached tokens / B)
        rep.free -= int((newb - st.nblk[s]).sum())
        st.nblk[s] = newb
        if rep.free < 0:
            self.evict(rep)

    def release(self, rep: Replica, i: int) -> None:
        """Free request ``i``'s own KV blocks on ``rep``; unpin its prefix blocks (cached, most recently used)."""
        st = self.st
        rep.free += int(st.nblk[i])
        st.nblk[i] = 0
        if st.pins[i]:
            ref, lru = rep.ref, rep.lru
            for h in reversed(st.pins[i]):  # the prefix's tail becomes least recently used (as vLLM)
                c = ref[h] - 1
                if c:
                    ref[h] = c
                else:
                    del ref[h]
                    lru[h] = None
            st.pins[i] = ()
            st.shared[i] = 0

    def evict(self, rep: Replica) -> None:
        """Evict least recently used unpinned prefix blocks until no free-block count is negative.

        Parameters
        ----------
        rep : Replica
        """
        while rep.free < 0 and rep.lru:
            h, _ = rep.lru.popitem(last=False)
            rep.writer.pop(h, None)
            rep.free += self.bpp
            self.counts["prefix_evictions"] += 1

    def cache_insert(self, rep: Replica, i: int) -> None:
        """After request ``i``'s prefill on ``rep``: cache the prefix blocks it computed (reserved at admission)."""
        st = self.st
        new = st.pend.pop(i)
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
        st.pins[i] = st.pins[i] + new
