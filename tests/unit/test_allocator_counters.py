"""The allocator's O(1) counters (busy and down nodes, read at every event) against a recount of its arrays."""

import numpy as np

from scheduler_sim.kernel.allocator import NodeAllocator


def test_busy_and_down_counters_equal_a_recount_after_every_operation():
    """500 random allocate / release / set_down / set_up / reserve calls on 64 nodes: after each one n_busy is
    count(owner >= 0), n_down count(down), n_up 64 - n_down and n_free count(owner == FREE and not down)."""
    rng = np.random.default_rng(3)
    a = NodeAllocator(64)
    a.reserve(np.array([60, 61]))
    running: dict[int, np.ndarray] = {}
    windows: list[np.ndarray] = []
    job = 0
    for _ in range(500):
        op = rng.integers(4)
        if op == 0 and a.n_free > 0:
            order = rng.permutation(64).astype(np.int64) if rng.random() < 0.5 else None  # placement order or first fit
            running[job] = a.allocate(job, int(rng.integers(1, a.n_free + 1)), order)
            job += 1
        elif op == 1 and running:
            j = list(running)[int(rng.integers(len(running)))]
            a.release(j, running.pop(j))
        elif op == 2:
            nodes = np.unique(rng.integers(0, 64, size=int(rng.integers(1, 6))))
            a.set_down(nodes)
            windows.append(nodes)
        elif op == 3 and windows:
            a.set_up(windows.pop(int(rng.integers(len(windows)))))
        assert a.n_busy == np.count_nonzero(a.owner >= 0)
        assert a.n_down == np.count_nonzero(a.down) == np.count_nonzero(a.down_count > 0)
        assert a.n_up == 64 - a.n_down
        assert a.n_free == np.count_nonzero((a.owner == -1) & ~a.down) == np.count_nonzero(a._free)
        assert np.array_equal(a._free, (a.owner == -1) & ~a.down)
    assert job > 50 and a.n_down > 0  # the sequence exercised allocations and downtimes (fixed seed)


def test_first_fit_from_the_free_node_heap_equals_the_lowest_free_nodes_of_the_mask():
    """First fit (no placement order) takes nodes from a heap of free nodes (issue #26): over 3,000 random
    allocations (small jobs from the heap, jobs above HEAP_MAX_NODES by the scan), releases, downtimes and a
    reservation on 600 nodes, every allocation is exactly the lowest free nodes of the mask at that moment,
    ascending, and an array of its own."""
    from scheduler_sim.kernel.allocator import HEAP_MAX_NODES

    rng = np.random.default_rng(11)
    a = NodeAllocator(600)
    running: dict[int, np.ndarray] = {}
    windows: list[np.ndarray] = []
    job = heap_allocs = big = 0
    for step in range(3000):
        op = rng.integers(5)
        if step == 1500:
            a.reserve(np.flatnonzero((a.owner == -1) & ~a.down)[-3:])
        if op <= 1 and a.n_free > 0:
            n = int(rng.integers(1, min(a.n_free, 20) + 1)) if rng.random() < 0.95 else a.n_free
            want = np.flatnonzero(a._free)[:n]
            got = a.allocate(job, n)
            assert np.array_equal(got, want) and got.base is None and got.dtype == np.int64
            heap_allocs += n <= HEAP_MAX_NODES
            big += n > HEAP_MAX_NODES
            running[job] = got
            job += 1
        elif op == 2 and running:
            j = list(running)[int(rng.integers(len(running)))]
            a.release(j, running.pop(j))
        elif op == 3 and rng.random() < 0.2:
            nodes = np.unique(rng.integers(0, 600, size=int(rng.integers(1, 6))))
            a.set_down(nodes)
            windows.append(nodes)
        elif op == 4 and windows:
            a.set_up(windows.pop(int(rng.integers(len(windows)))))
        assert np.array_equal(a._free, (a.owner == -1) & ~a.down)
    assert heap_allocs > 500 and big > 0 and windows  # both paths and downtimes exercised (fixed seed)
