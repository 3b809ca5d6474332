"""Node allocator: which node runs which job, and which nodes are down.

State lives in numpy arrays (``owner`` per node, ``down`` per node); allocation picks the lowest-index free,
up nodes (first fit). Invariants, checked on every call: a node has at most one owner; a down node is never
allocated. A sharing partition's nodes (:meth:`NodeAllocator.share`) are allocated by slot in its
:class:`~scheduler_sim.kernel.sharing.SlotTable`, which holds their tenants; ``owner`` then gives a shared node's
lowest tenant (so busy-node counts and down-node kills see it).
"""

from __future__ import annotations

import heapq

import numpy as np

from .sharing import SlotTable

__all__ = ["NodeAllocator", "AllocationError"]

FREE = -1
#: Owner code of nodes reserved for a partition the batch scheduler does not manage (e.g. LLM serving).
RESERVED = -2
#: Owner code of nodes outside the schedulable pool (``SimulationConfig.pool_nodes``): idle, never allocated.
OUT_OF_POOL = -3
#: Largest job (nodes) allocated from, or released into, the heap of free nodes (:func:`_pop_lowest`); a larger one
#: takes the array scan and the heap is rebuilt from the free mask when next needed.
HEAP_MAX_NODES = 256


class AllocationError(RuntimeError):
    """A request that would break an allocator invariant (double booking, a down node, too few nodes)."""


class NodeAllocator:
    """Track node ownership and availability.

    Parameters
    ----------
    n_nodes : int
        Number of nodes in the system (>= 1).

    Raises
    ------
    ValueError
        If ``n_nodes < 1``.

    Attributes
    ----------
    owner : ndarray of int64, shape (n_nodes,)
        Job index running on each node, or -1 when idle.
    down : ndarray of bool, shape (n_nodes,)
        True while a node is down (failed, drained or in maintenance).
    """

    def __init__(self, n_nodes: int) -> None:
        if n_nodes < 1:
            raise ValueError(f"n_nodes must be >= 1, got {n_nodes}")
        self.n_nodes = int(n_nodes)
        self.owner = np.full(self.n_nodes, FREE, dtype=np.int64)
        self.down = np.zeros(self.n_nodes, dtype=bool)
        self._down_count = np.zeros(self.n_nodes, dtype=np.int64)
        self._n_free = self.n_nodes  # idle and up
        self._n_busy = 0  # running a batch job (owner >= 0), kept with every change of owner
        self._n_down = 0  # down now, recounted at every set_down / set_up
        self._free = np.ones(self.n_nodes, dtype=bool)  # idle and up: (owner == FREE) & ~down, kept per change
        self._heap: list | None = None  # the free nodes as a heap (:func:`_pop_lowest`); None: rebuilt when needed
        self._n_out = 0  # out of the schedulable pool (OUT_OF_POOL), set once by exclude()
        self.shared: dict[int, SlotTable] = {}  # first node of a sharing partition -> its slots

    def share(self, lo: int, n: int, slots: int) -> SlotTable:
        """Make nodes ``lo .. lo + n - 1`` a sharing partition of ``slots`` slots per node; return its table.

        Parameters
        ----------
        lo : int
            First node of the partition.
        n : int
            Its node count.
        slots : int
            Slots per node (>= 2).

        Returns
        -------
        SlotTable
            The partition's slots (``allocate`` / ``release`` / ``n_free_in`` on ``lo .. lo + n - 1`` count them).
        """
        self.shared[int(lo)] = t = SlotTable(lo, n, slots)
        return t

    def _set_shared(self, t: SlotTable, nodes: np.ndarray) -> None:
        """Refresh the node-level state of shared ``nodes`` from their tenants (owner, free and busy counts)."""
        was_busy = self.owner[nodes] >= 0
        self.owner[nodes] = t.representative(nodes)
        self._heap = None
        busy = self.owner[nodes] >= 0
        free = ~busy & ~self.down[nodes]
        self._n_free += int(np.count_nonzero(free)) - int(np.count_nonzero(self._free[nodes]))
        self._free[nodes] = free
        self._n_busy += int(np.count_nonzero(busy)) - int(np.count_nonzero(was_busy))

    def table_of(self, job: int) -> SlotTable | None:
        """The slot table holding ``job``'s slots, or None (a whole-node job)."""
        for t in self.shared.values():
            if t.holds(job):
                return t
        return None

    @property
    def has_free(self) -> bool:
        """True when a node is idle and up, or a sharing partition has a free slot (a pass may start a job)."""
        return self._n_free > 0 or any(t.free_slots(_avail(self, t)) > 0 for t in self.shared.values())

    @property
    def n_free(self) -> int:
        """Number of nodes that are idle and up (allocatable now)."""
        return self._n_free

    @property
    def n_busy(self) -> int:
        """Number of nodes running a batch job (a counter kept by :meth:`allocate` / :meth:`release`, O(1))."""
        return self._n_busy

    @property
    def n_down(self) -> int:
        """Number of nodes down now (a counter recounted by :meth:`set_down` / :meth:`set_up`, O(1))."""
        return self._n_down

    def reserve(self, nodes: np.ndarray) -> None:
        """Take idle nodes out of the batch pool for good (a partition managed elsewhere, e.g. serving).

        Parameters
        ----------
        nodes : np.ndarray
            Node indices, shape (k,), each idle (down nodes may be reserved; they stay down).

        Raises
        ------
        AllocationError
            If a node is already busy or reserved.
        """
        nodes = np.asarray(nodes, dtype=np.int64)
        if np.any(self.owner[nodes] != FREE):
            raise AllocationError("cannot reserve nodes that are busy or already reserved")
        self._n_free -= int(np.count_nonzero(~self.down[nodes]))
        self.owner[nodes] = RESERVED
        self._heap = None
        self._free[nodes] = False

    def exclude(self, nodes: np.ndarray) -> None:
        """Take idle nodes out of the schedulable pool for good; they stay idle (idle power) and are never allocated.

        Parameters
        ----------
        nodes : np.ndarray
            Node indices, shape (k,), each idle and in the pool.

        Raises
        ------
        AllocationError
            If a node is busy, reserved or already out of the pool.
        """
        nodes = np.asarray(nodes, dtype=np.int64)
        if np.any(self.owner[nodes] != FREE):
            raise AllocationError("cannot take nodes out of the pool that are busy, reserved or already out")
        self._n_free -= int(np.count_nonzero(~self.down[nodes]))
        self.owner[nodes] = OUT_OF_POOL
        self._heap = None
        self._free[nodes] = False
        self._n_out += int(nodes.size)

    def idle_mask(self) -> np.ndarray:
        """Nodes running no job and not reserved: free, down, or out of the pool (all draw idle power), shape (n_nodes,)."""
        if self._n_out:
            return (self.owner == FREE) | (self.owner == OUT_OF_POOL)
        return self.owner == FREE

    @property
    def down_count(self) -> np.ndarray:
        """Number of down windows holding each node down now, shape (n_nodes,) (read-only view)."""
        v = self._down_count.view()
        v.flags.writeable = False
        return v

    @property
    def n_up(self) -> int:
        """Number of nodes not down."""
        return self.n_nodes - self._n_down

    def n_free_in(self, lo: int, hi: int) -> int:
        """Number of idle, up nodes among ``lo .. hi - 1`` (a partition's range), O(hi - lo); free slots of a
        sharing partition.
        """
        t = _table(self, lo, hi)
        if t is not None:
            return t.free_slots(_avail(self, t))
        if lo == 0 and hi == self.n_nodes:
            return self._n_free
        return int(np.count_nonzero(self._free[lo:hi]))

    def allocate(self, job: int, n: int, order: np.ndarray | None = None, lo: int = 0,
                 hi: int | None = None) -> np.ndarray:
        """Give ``n`` idle, up nodes of ``lo .. hi - 1`` to ``job`` (lowest indices first, or first in ``order``).

        Parameters
        ----------
        job : int
            Job index (>= 0).
        n : int
            Number of nodes (>= 1).
        order : np.ndarray | None
            Preference order of all nodes (a permutation of int64, shape (n_nodes,)); None means ascending index.
        lo : int
            First node to choose from (a partition's range); default 0.
        hi : int | None
            One past the last node to choose from; None: every node.

        Returns
        -------
        ndarray of int64, shape (n,)
            The allocated node indices, ascending: an array of its own (``base is None``), never a view of a larger
            array, so holding it costs ``8 n`` bytes.

        Raises
        ------
        AllocationError
            If fewer than ``n`` nodes are free.
        """
        hi = self.n_nodes if hi is None else int(hi)
        if lo != 0 or hi != self.n_nodes or self.shared:
            return _allocate_in(self, job, n, order, int(lo), hi)
        if n > self._n_free:
            raise AllocationError(f"job {job} asks for {n} nodes but only {self._n_free} are free")
        if order is None and n <= HEAP_MAX_NODES:
            free = _pop_lowest(self, n)
        elif order is None:
            # a copy: a slice would be a view pinning the whole free-node array (n_nodes x 8 bytes) for as long as
            # the job's node list is kept (issue #12, million-jobs-memory)
            free = np.flatnonzero(self._free)[:n].copy()
            self._heap = None
        else:
            free = np.sort(order[np.flatnonzero(self._free[order])[:n]])
            self._heap = None
        self.owner[free] = job
        self._free[free] = False
        self._n_free -= n
        self._n_busy += n
        return free

    def release(self, job: int, nodes: np.ndarray) -> None:
        """Return ``nodes`` held by ``job`` to the pool.

        Parameters
        ----------
        job : int
            Job index that holds the nodes (a job on a sharing partition releases its slots; ``nodes`` is then
            unused).
        nodes : np.ndarray
            Node indices, shape (k,), all owned by ``job``.

        Raises
        ------
        AllocationError
            If any of the nodes is not owned by ``job``.
        """
        t = self.table_of(job) if self.shared else None
        if t is not None:
            self._set_shared(t, t.release(job))
            return
        if (self.owner[nodes] != job).any():
            raise AllocationError(f"job {job} releases nodes it does not own")
        self.owner[nodes] = FREE
        if self._n_down == 0:  # no node down: every released node is free (two numpy calls fewer per job end)
            self._free[nodes] = True
            self._n_free += len(nodes)
            _push_free(self, nodes)
        else:
            self._heap = None
            up = ~self.down[nodes]
            self._free[nodes] = up
            self._n_free += int(np.count_nonzero(up))
        self._n_busy -= len(nodes)

    def set_down(self, nodes: np.ndarray) -> np.ndarray:
        """Mark nodes down; return the indices of the jobs running on them (the caller kills or lets them finish).

        Nodes already down stay down; a down count per node lets overlapping windows (a failure during a
        maintenance) nest: a node is up again only when every window that took it down has ended.
        """
        nodes = np.asarray(nodes, dtype=np.int64)
        newly = nodes[self._down_count[nodes] == 0]
        self._down_count[nodes] += 1
        self._heap = None
        self._n_free -= int(np.count_nonzero(self.owner[newly] == FREE))
        self.down[newly] = True
        self._free[newly] = False
        self._n_down = int(np.count_nonzero(self.down))
        jobs = self.owner[nodes]
        hit = [jobs[jobs >= 0]]
        for t in self.shared.values():  # every tenant of a shared node
            mine = nodes[(nodes >= t.lo) & (nodes < t.lo + t.n)]
            if mine.size:
                hit.append(t.tenants(mine))
        return np.unique(np.concatenate(hit))

    def set_up(self, nodes: np.ndarray) -> None:
        """Return nodes to service (idle nodes become allocatable)."""
        nodes = np.asarray(nodes, dtype=np.int64)
        if np.any(self._down_count[nodes] == 0):
            raise AllocationError("set_up on a node that is not down")
        self._down_count[nodes] -= 1
        self._heap = None
        back = nodes[self._down_count[nodes] == 0]
        self.down[back] = False
        self._free[back] = self.owner[back] == FREE
        self._n_down = int(np.count_nonzero(self.down))
        self._n_free += int(np.count_nonzero(self.owner[back] == FREE))


def _table(alloc: NodeAllocator, lo: int, hi: int) -> SlotTable | None:
    """The slot table of ``alloc``'s sharing partition ``lo .. hi - 1``, or None (a function of the allocator: the
    class stays under the kernel's size limit).
    """
    t = alloc.shared.get(int(lo)) if alloc.shared else None
    return t if t is not None and t.lo + t.n == hi else None


def _avail(alloc: NodeAllocator, t: SlotTable) -> np.ndarray:
    """Nodes of ``alloc``'s sharing partition ``t`` that are up and in the pool, shape (t.n,)."""
    o = alloc.owner[t.lo:t.lo + t.n]
    return ~alloc.down[t.lo:t.lo + t.n] & (o >= FREE)


def _allocate_in(alloc: NodeAllocator, job: int, n: int, order: np.ndarray | None, lo: int, hi: int) -> np.ndarray:
    """:meth:`NodeAllocator.allocate` of ``alloc`` restricted to the nodes ``lo .. hi - 1`` (``n`` slots on a sharing
    partition); raises its AllocationError when too few are free (a function of the allocator: the class stays under
    the kernel's size limit).
    """
    t = _table(alloc, lo, hi)
    if t is not None:
        rank = np.arange(t.n) if order is None else np.argsort(order[(order >= lo) & (order < hi)] - lo)
        try:
            nodes = t.allocate(job, n, _avail(alloc, t), rank)
        except ValueError as exc:
            raise AllocationError(str(exc)) from None
        alloc._set_shared(t, nodes)
        return nodes
    if order is None:
        free = lo + np.flatnonzero(alloc._free[lo:hi])[:n]
    else:
        inside = order[(order >= lo) & (order < hi)]
        free = np.sort(inside[np.flatnonzero(alloc._free[inside])[:n]])
    if free.size < n:
        raise AllocationError(f"job {job} asks for {n} nodes of {lo}..{hi - 1} but only {free.size} are free")
    alloc.owner[free] = job
    alloc._heap = None
    alloc._free[free] = False
    alloc._n_free -= n
    alloc._n_busy += n
    return free


def _pop_lowest(alloc: NodeAllocator, n: int) -> np.ndarray:
    """The ``n`` lowest-index free nodes of ``alloc``, taken from its heap of free nodes (built from the free mask
    when it is None): the nodes ``np.flatnonzero(free)[:n]`` gives, ascending, without a scan of every node (the
    million-job run allocates ~1 M times on 4,392 nodes; issue #26). The caller marks them owned.
    """
    h = alloc._heap
    if h is None:
        h = alloc._heap = np.flatnonzero(alloc._free).tolist()  # ascending: already a heap
    pop = heapq.heappop
    return np.array([pop(h) for _ in range(n)], dtype=np.int64)


def _push_free(alloc: NodeAllocator, nodes: np.ndarray) -> None:
    """Give released ``nodes`` back to ``alloc``'s heap of free nodes (or drop the heap for a large job)."""
    h = alloc._heap
    if h is None:
        return
    if len(nodes) > HEAP_MAX_NODES:
        alloc._heap = None
        return
    push = heapq.heappush
    for i in nodes.tolist():
        push(h, i)
