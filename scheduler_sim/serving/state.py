"""State the serving engine's parts share during one run: per-request arrays, replicas, outcome codes.

The engine (:mod:`scheduler_sim.serving.engine`) builds one :class:`RequestState` per run and one :class:`Replica`
per engine instance; the batcher (:mod:`.batcher`), the KV-cache manager (:mod:`.kvcache`) and the result assembly
(:mod:`.result`) read and update them in place. Indices ``i`` are request rows (arrival order), token counts are
integers, times are trace seconds [s].
"""

from __future__ import annotations

from collections import OrderedDict, deque

import numpy as np
import pandas as pd

__all__ = ["RequestStatus", "Replica", "RequestState"]


class RequestStatus:
    """Outcome codes of a request (column ``status`` of the result table)."""

    NOT_DONE = 0
    """Still running when the simulation stopped (should not happen)."""
    COMPLETED = 1
    """All output tokens generated."""
    REJECTED = 2
    """Prompt + output can never fit in the replica's KV cache."""


class Replica:
    """One engine instance: its queues, its KV blocks and prefix cache, its busy segments and router counters.

    Parameters
    ----------
    idx : int
        Replica index in the deployment (0-based).
    blocks : int
        KV blocks of the replica (:attr:`scheduler_sim.serving.hardware.Deployment.kv_blocks_per_replica`).
    """

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


class RequestState:
    """Per-request arrays of one serving run (shape ``(n,)`` each, row ``i`` = request ``i`` of the table).

    Parameters
    ----------
    requests : pd.DataFrame
        Canonical request table (:mod:`jobs.requests`), sorted by arrival, non-empty.

    Attributes
    ----------
    arr, prm, out : ndarray
        Arrival time [s], prompt and output tokens.
    gen, need, done, nblk : ndarray of int64
        Generated tokens; tokens to prefill (prompt, or prompt + generated after a preemption); of those, tokens
        already computed; KV blocks the request holds itself.
    first, fin : ndarray of float
        Time of the first token and of the finish [s] (NaN until then).
    rep, drep, npre, status, open_at : ndarray
        Replica routed to, decode replica (disaggregation), preemptions, :class:`RequestStatus`, replica whose
        router queue counts the request (-1: none).
    ids : ndarray of object or None
        Prefix block ids per request (None when the table has no such column).
    ready, shared, pins, pend, hit, own : various
        KV received from a prefill replica; context tokens in pinned prefix-cache blocks; prefix block ids pinned;
        prefix block ids a prefill in flight will cache; prompt tokens the cache skipped (last prefill); of those,
        tokens in blocks the request itself wrote before a preemption.
    x_ready, x_t0, x_t1 : ndarray of float
        KV transfer: end of the prefill, start and end of the transfer [s] (NaN without transfer).
    """

    def __init__(self, requests: pd.DataFrame) -> None:
        n = len(requests)
        self.arr = requests["arrival_time_s"].to_numpy(float)
        self.prm = requests["prompt_tokens"].to_numpy(np.int64)
        self.out = requests["output_tokens"].to_numpy(np.int64)
        self.gen = np.zeros(n, dtype=np.int64)
        self.need = self.prm.copy()
        self.done = np.zeros(n, dtype=np.int64)
        self.nblk = np.zeros(n, dtype=np.int64)
        self.first = np.full(n, np.nan)
        self.fin = np.full(n, np.nan)
        self.rep = np.full(n, -1, dtype=np.int64)
        self.npre = np.zeros(n, dtype=np.int64)
        self.status = np.zeros(n, dtype=np.int8)
        self.ids = requests["prefix_block_ids"].to_numpy(object) if "prefix_block_ids" in requests else None
        self.ready = np.zeros(n, dtype=bool)
        self.shared = np.zeros(n, dtype=np.int64)
        self.pins: list = [()] * n
        self.pend: dict[int, tuple] = {}
        self.hit = np.zeros(n, dtype=np.int64)
        self.own = np.zeros(n, dtype=np.int64)
        self.drep = np.full(n, -1, dtype=np.int64)
        self.x_t0 = np.full(n, np.nan)
        self.x_t1 = np.full(n, np.nan)
        self.x_ready = np.full(n, np.nan)
        self.open_at = np.full(n, -1, dtype=np.int64)
