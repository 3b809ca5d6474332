"""Issue #12 kind 5: memory held per job, and sizes from configuration checked before allocation."""

from __future__ import annotations

import gc
import tracemalloc

import numpy as np
import pytest

from power.system import System
from scheduler_sim.kernel.allocator import NodeAllocator
from scheduler_sim.kernel.simulation import Simulation, SimulationConfig
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
        sim = Simulation(jobs, system, "fcfs", SimulationConfig(backfill="easy", window_start_s=0.0, window_s=1e9))
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


def _write_config(tmp_path, body: str):
    swf = tmp_path / "one.swf"
    swf.write_text("; MaxNodes: 4392\n1 0 0 100 1 -1 -1 1 200 -1 1 1 1 -1 1 -1 -1 -1\n")
    cfg = tmp_path / "run.toml"
    cfg.write_text(f'name = "t"\nsystem = "theta"\n[trace]\npath = "{swf}"\nwindow_start_days = 0\n'
                   f'window_days = 1\n[cooling]\nenabled = false\n[output]\nprogress = false\n' + body)
    return cfg


@pytest.mark.parametrize("nodes,part", [("0-99999999999", "'0-99999999999'"), ("4392,0-3", "'4392'"),
                                        ("0-2,4000-99999999999999999999", "'4000-99999999999999999999'")])
def test_downtime_range_is_checked_against_the_machine_before_expansion(tmp_path, capsys, nodes, part):
    """downtime-range (issue #12): a range past the machine (Theta: nodes 0..4391) is one line naming the field
    and the part, exit 2, and nothing is expanded (the range ends are checked; a 1e11-node set took 9 GB)."""
    from scheduler_sim.app.cli import main

    cfg = _write_config(tmp_path, f'[[scheduler.downtime]]\nstart_day = 0\nhours = 1\nnodes = "{nodes}"\n')
    tracemalloc.start()
    try:
        assert main(["run", str(cfg), "--out", str(tmp_path / "o.h5"), "--quiet"]) == 2
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "scheduler.downtime[0].nodes" in err[0] and part in err[0] and "0..4391" in err[0]
    assert peak < 200e6 and not (tmp_path / "o.h5").exists()


def test_downtime_nodes_expand_overlapping_ranges_once():
    from scheduler_sim.app.config import DowntimeConfig

    d = DowntimeConfig(start_day=0, hours=1, nodes="0-3, 2-5,9,9,0-0")
    got = d.node_indices(10)
    assert got.dtype == np.int64 and got.tolist() == [0, 1, 2, 3, 4, 5, 9]
    with pytest.raises(ValueError, match="'10'"):
        DowntimeConfig(start_day=0, hours=1, nodes="0-3,10").node_indices(10)
    with pytest.raises(ValueError, match="cannot read '5-2'"):
        DowntimeConfig(start_day=0, hours=1, nodes="5-2").node_indices(10)


def test_system_size_is_bounded_before_allocation():
    """A system file's node count is checked (power.system.MAX_NODES) before per-node arrays are built."""
    from power.system import MAX_NODES, System

    spec = tiny_system_spec()
    spec["topology"] = {"n_cdus": 1, "rack_positions_per_cdu": 1, "nodes_per_rack": 10**12,
                        "missing_rack_positions": [], "n_nodes": 10**12}
    with pytest.raises(ValueError, match=str(MAX_NODES)):
        System.from_spec(spec, source="huge")
    spec["topology"] = {"n_cdus": 10**6, "rack_positions_per_cdu": 10**6, "nodes_per_rack": 1,
                        "missing_rack_positions": [], "n_nodes": 1}
    with pytest.raises(ValueError, match="rack positions"):
        System.from_spec(spec, source="huge")


def test_output_interval_count_is_bounded(tmp_path, capsys):
    from scheduler_sim.app.cli import main

    cfg = _write_config(tmp_path, "")
    # 7000 days is inside the longest run (20 years, jobs.memory.MAX_SPAN_S, checked first): the interval count
    # 7000 x 86400 / 0.1 = 6.05e9 is what refuses it
    assert main(["run", str(cfg), "--days", "7000", "--step", "0.1", "--interval", "0.1", "--quiet",
                 "--out", str(tmp_path / "o.h5")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "output intervals" in err[0] and "6.05e+09" in err[0]


def test_config_that_is_not_utf8_names_the_file(tmp_path, capsys):
    """config-not-utf8 (issue #12): the error names the file and says it is not UTF-8 text."""
    from scheduler_sim.app.cli import main

    cfg = tmp_path / "binary.toml"
    cfg.write_bytes(b'name = "ok"\n# caf\xe9 in Latin-1\n')
    assert main(["run", str(cfg)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"hpctwin run: error: {cfg}: configuration file is not UTF-8 text (line 2, byte 17: "
                   f"b'\\xe9'); save it as UTF-8"]


def test_system_and_plant_files_that_are_not_utf8_name_the_file(tmp_path):
    from cooling_fmu.params import PlantParamsError, load_plant_params
    from power.system import SystemFileError, load_system

    bad = tmp_path / "latin1.toml"
    bad.write_bytes(b'name = "x"\n# \xe9t\xe9\n')
    with pytest.raises(SystemFileError, match=r"latin1\.toml: system file is not UTF-8 text \(line 2, byte 13: "):
        load_system(str(bad))
    with pytest.raises(PlantParamsError, match=r"latin1\.toml: plant description is not UTF-8 text \(line 2"):
        load_plant_params(bad)
