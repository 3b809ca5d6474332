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
