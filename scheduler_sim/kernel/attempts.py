"""The run's attempts (every start of a job until its end or kill), held compactly until the result is built.

Each attempt is ``(job index, start [s], end [s], nodes, per-node rack-input power [W])``, appended at its end by the
job life-cycle and turned into the allocation runs of the result (:func:`scheduler_sim.kernel.results.allocation_runs`).
A list of those tuples held two small numpy arrays and a tuple per attempt, about 600 bytes for the 9 nodes of a
mean job of ``benchmarks/bench_million.py``'s trace: 120 MiB more at the end of 200,000 jobs, 0.6 GB at a million
(issue #26, the end-of-run memory). :class:`AttemptLog` keeps the last :data:`CHUNK_ATTEMPTS` attempts as tuples
and packs every full chunk into flat arrays (job, start and end, node count, nodes as int32, shares as float64):
about 40 + 12 bytes a node per attempt, the same values bit for bit.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

__all__ = ["AttemptLog", "CHUNK_ATTEMPTS"]

#: Attempts kept as tuples before they are packed into arrays (the packing costs ~1 us an attempt, in C).
CHUNK_ATTEMPTS = 4096


class AttemptLog:
    """Append-only log of attempts; iterates (and slices) as the ``(j, start_s, end_s, nodes, shares_W)`` tuples it
    was given (nodes int64, shares float64: the values appended, bit for bit).

    A fork starts with an empty log of its own (:meth:`scheduler_sim.kernel.simulation.Simulation.fork`).
    """

    def __init__(self) -> None:
        self._recent: list[tuple] = []
        self._chunks: list[tuple[np.ndarray, ...]] = []  # (job, start, end, lens, nodes int32, shares) per chunk
        self._n_packed = 0

    def append(self, attempt: tuple) -> None:
        """Add one attempt ``(j, start_s, end_s, nodes, shares_W)``: ``nodes`` shape (k,) int, ``shares_W`` (k,) [W]."""
        self._recent.append(attempt)
        if len(self._recent) >= CHUNK_ATTEMPTS:
            self._pack()

    def _pack(self) -> None:
        """Pack the recent tuples into one chunk of flat arrays."""
        rec, self._recent = self._recent, []
        if not rec:
            return
        n = len(rec)
        job = np.fromiter((x[0] for x in rec), dtype=np.int64, count=n)
        a = np.fromiter((x[1] for x in rec), dtype=float, count=n)
        b = np.fromiter((x[2] for x in rec), dtype=float, count=n)
        lens = np.fromiter((len(x[3]) for x in rec), dtype=np.int64, count=n)
        nodes = np.concatenate([np.asarray(x[3], dtype=np.int64) for x in rec]).astype(np.int32)
        shares = np.concatenate([np.asarray(x[4], dtype=float) for x in rec])
        self._chunks.append((job, a, b, lens, nodes, shares))
        self._n_packed += n

    def __len__(self) -> int:
        return self._n_packed + len(self._recent)

    def arrays(self) -> Iterator[tuple[np.ndarray, ...]]:
        """The attempts in order as chunks of flat arrays (the recent ones packed first).

        Yields
        ------
        tuple of ndarray
            ``(job int64 (m,), start_s (m,), end_s (m,), n_nodes int64 (m,), nodes int64 (sum n_nodes,),
            shares_W (sum n_nodes,))`` of m consecutive attempts, each attempt's nodes and shares in the order
            appended.
        """
        self._pack()
        for job, a, b, lens, nodes, shares in self._chunks:
            yield job, a, b, lens, nodes.astype(np.int64), shares

    def __iter__(self) -> Iterator[tuple]:
        for job, a, b, lens, nodes, shares in self.arrays():
            ends = np.cumsum(lens)
            for i in range(job.size):
                s0 = int(ends[i] - lens[i])
                yield int(job[i]), float(a[i]), float(b[i]), nodes[s0:int(ends[i])], shares[s0:int(ends[i])]

    def __getitem__(self, key: slice) -> list[tuple]:
        """The attempts of a slice, as tuples (a list)."""
        return list(self)[key]
