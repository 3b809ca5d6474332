"""Issue #12 kind 5: memory held per job, and sizes from configuration checked before allocation."""

from __future__ import annotations

import gc
import tracemalloc

import numpy as np
import pytest

from power.system import System
from scheduler_sim.allocator import NodeAllocator
from scheduler_sim.simulation import Simulation
from tests.conftest import make_jobs, tiny_system_spec


def test_allocated_node_list_is_its_own_array():
    # a slice of np.flatnonzero(...) would be a view keeping all 4096 free-node indices alive (32 KiB)
    alloc = NodeAllocator(4096)
    nodes = alloc.allocate(0, 3)
    assert nodes.base is None and nodes.nbytes == 24 and nodes.tolist() == [0, 1, 2]
    order = np.arange(4096)[::-1].copy()
    nodes = alloc.allocate(1, 2, order)
    assert nodes.base is None and nodes.tolist() == [4094, 4095]


def _held_bytes(system: System, n_jobs: int) -> int:
    """Bytes still allocated (tracemalloc) once a run of ``n_jobs`` 1-3-node jobs is over, its result held."""
    jobs = make_jobs([(i + 1, 10.0 * i, 1 + i % 3, 50.0, 100.0) for i in range(n_jobs)])
    gc.collect()
    tracemalloc.start()
    try:
        sim = Simulation(jobs, system, "fcfs", backfill="easy", window_start_s=0.0, window_s=1e9)
        res = sim.run()
        gc.collect()
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert res.info["complete"] and int((res.jobs["outcome"] == 1).sum()) == n_jobs
    return held


def test_memory_held_per_job_does_not_scale_with_the_machine():
    """The slope of held memory over 1,000 -> 3,000 jobs on a 4,096-node machine stays under 2 KiB per job.

    Per job the run keeps ~30 numbers (~250 B), its row of the result table and its allocation rows, and its own
    node list (1-3 nodes, 24 B at most). Before the fix each job's node list was a view pinning the whole
    free-node array (~4,096 x 8 B = 32 KiB): 33,830 B per job measured, against 951 B after."""
    system = System.from_spec(tiny_system_spec(n_nodes=4096, n_cdus=2, racks_per_cdu=2), source="tiny4096")
    per_job = (_held_bytes(system, 3000) - _held_bytes(system, 1000)) / 2000
    assert 0 < per_job < 2048
