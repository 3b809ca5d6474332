"""What-ifs as overrides (issue #23 item 5) and the schedulable pool / trace-vs-system header (item 7).

Hand-computed on a 4-node lossless system (idle 100 W, every job at u = 0.5: 203 W per node) and a 4-job SWF.
"""

import h5py
import numpy as np
import pytest

from scheduler_sim.app.cli import main
from scheduler_sim.app.config import ConfigError, RunConfig
from scheduler_sim.app.overrides import apply_sets, parse_value, resolve_key, toml_dumps

TINY4 = """name = "tiny4"
description = "4 lossless nodes, 1 rack, 1 CDU"
cores_per_node = 1
cooling_plant = "seth"
liquid_fraction = 1.0
default_cpu_util = 0.5
default_gpu_util = 0.0
[topology]
n_cdus = 1
rack_positions_per_cdu = 1
nodes_per_rack = 4
missing_rack_positions = []
n_nodes = 4
[node]
cpu_idle_W = 100.0
cpu_max_W = 306.0
cpus_per_node = 1
gpus_per_node = 0
[sivoc]
P_fixed_W = 0.0
eta = 1.0
k_per_W = 0.0
[rectifier]
P_fixed_W = 0.0
eta = 1.0
k_per_W = 0.0
nodes_per_rectifier = 4
[rack_overhead]
P_W = 0.0
side = "ac"
"""

# job, submit, nodes, run time = requested time [s]
JOBS = [(1, 0, 2, 100), (2, 10, 1, 50), (3, 20, 3, 50), (4, 30, 1, 10)]


def _swf(path, jobs=JOBS, header=""):
    path.write_text(header + "".join(f"{j} {s} 0 {r} {n} -1 -1 {n} {r} -1 1 1 1 -1 1 -1 -1 -1\n"
                                     for j, s, n, r in jobs))


def _run(tmp_path, *extra, name="r", quiet=True):
    (tmp_path / "tiny4.toml").write_text(TINY4)
    if not (tmp_path / "p.swf").exists():
        _swf(tmp_path / "p.swf")
    out = tmp_path / f"{name}.h5"
    rc = main(["run", "--system", str(tmp_path / "tiny4.toml"), "--trace", str(tmp_path / "p.swf"), "--start-day",
               "0", "--days", "1", "--no-cooling", *(["--quiet"] if quiet else []), "--set",
               "power.job_power_spread=none", "--out", str(out), *extra])
    return rc, out


def _jobs(out):
    with h5py.File(out) as f:
        return (dict(zip(f["jobs/job_id"][()].tolist(), f["jobs/sim_start_s"][()].tolist())),
                {k: float(f["totals"].attrs[k]) for k in ("E_node_dc_J", "E_idle_node_dc_J")},
                {k: f["jobs"][k][()] for k in ("job_id", "nodes", "submit_time_s")})


def test_pool_size_sets_the_schedulable_nodes_and_rejects_larger_jobs(tmp_path, capsys):
    # whole machine (4 nodes), FCFS + EASY: 1 at 0 (2 nodes), 2 at 10 (1 node), 3 (3 nodes) reserved for t = 100
    # (after job 1), 4 (1 node, 10 s) backfilled at 30 into the free node (ends 40 < 100).
    rc, out = _run(tmp_path, name="all")
    assert rc == 0
    starts, E, _ = _jobs(out)
    assert starts == {1: 0.0, 2: 10.0, 3: 100.0, 4: 30.0}
    # run to 150 s (job 3 ends), padded to the 60 s interval: 180 s; busy node-s 200 + 50 + 150 + 10 = 410
    assert E["E_node_dc_J"] == pytest.approx(4 * 100 * 180 + 103 * 410, rel=1e-12)   # 114,230 J
    # --nodes 2: job 3 (3 nodes) is rejected at load; job 1 takes the whole pool, job 2 waits until 100 and job 4
    # cannot backfill (no free pool node): both start at 100. Nodes 2, 3 exist, idle, out of the pool.
    capsys.readouterr()
    rc, out = _run(tmp_path, "--nodes", "2", name="pool2")
    assert rc == 0
    assert "1 job record(s) rejected" in capsys.readouterr().err  # rejected at load, and said so
    starts, E, _ = _jobs(out)
    assert starts == {1: 0.0, 2: 100.0, 4: 100.0}
    # 4 nodes x 100 W x 180 s + 103 W x (200 + 50 + 10) node-s; idle node-s 720 - 260 = 460 (out-of-pool included)
    assert E["E_node_dc_J"] == pytest.approx(72000 + 103 * 260, rel=1e-12)          # 98,780 J
    assert E["E_idle_node_dc_J"] == pytest.approx(100 * 460, rel=1e-12)
    with h5py.File(out) as f:
        assert '"pool_nodes": 2' in f.attrs["config_json"]
    # a pool larger than the machine is refused, one line, exit 2
    rc, _ = _run(tmp_path, "--nodes", "5", name="pool5")
    assert rc == 2 and "pool_nodes = 5" in capsys.readouterr().err


def test_trace_machine_against_the_system_in_the_run_header(tmp_path, capsys):
    _swf(tmp_path / "p.swf", header="; MaxNodes: 6\n; MaxProcs: 6\n")
    rc, _ = _run(tmp_path, "--nodes", "3", quiet=False)
    assert rc == 0
    out = capsys.readouterr().out
    assert ("machine trace 6 nodes (SWF header MaxNodes) vs system 'tiny4' 4 nodes: differs; pool 3 nodes "
            "(scheduler.pool_nodes / --nodes), job sizes as in the trace (no scaling); --nodes N sets the pool") in out


def test_trace_machine_from_sacct_node_names(tmp_path, capsys):
    (tmp_path / "tiny4.toml").write_text(TINY4)
    p = tmp_path / "n.sacct"
    p.write_text("JobID|Submit|Start|End|NNodes|NodeList|State|Timelimit\n"
                 "1|2022-01-01T00:00:00|2022-01-01T00:00:00|2022-01-01T00:10:00|2|nid[001-002]|COMPLETED|01:00:00\n"
                 "2|2022-01-01T00:01:00|2022-01-01T00:01:00|2022-01-01T00:10:00|3|nid[002,005-006]|COMPLETED|"
                 "01:00:00\n")
    assert main(["run", "--system", str(tmp_path / "tiny4.toml"), "--trace", str(p), "--start-day", "0", "--days",
                 "1", "--no-cooling", "--out", str(tmp_path / "n.h5")]) == 0
    # hosts nid001, nid002, nid005, nid006: 4 distinct names = the system's 4 nodes
    assert ("machine trace 4 nodes (distinct NodeList host names) vs system 'tiny4' 4 nodes: same; pool 4 nodes "
            "(the whole system)") in capsys.readouterr().out


def test_set_overrides_config_system_and_plant_keys_with_relative_forms(tmp_path, capsys):
    cfg = RunConfig()
    assert parse_value("+20%", 10.0) == pytest.approx(12.0) and parse_value("-10%", 200) == 180
    assert parse_value("x1.5", 3) == 5 and parse_value("x1.5", 3.0) == 4.5   # integers round half away from 0
    assert parse_value("+5", 1.0) == 5 and parse_value("fcfs") == "fcfs" and parse_value("true") is True
    c = apply_sets(cfg, ["scheduler.policy=fcfs", "trace.window_days=x0.5", "seed=7", "cooling.T_wb_C=-10%"])
    assert (c.scheduler.policy, c.trace.window_days, c.seed, c.cooling.T_wb_C) == ("fcfs", 15.0, 7, 13.5)
    assert c.overrides == ["scheduler.policy=fcfs", "trace.window_days=x0.5", "seed=7", "cooling.T_wb_C=-10%"]
    # a misspelt key: "did you mean", naming the valid keys of its section
    with pytest.raises(ConfigError, match=r"did you mean 'scheduler.policy'.*valid keys under 'scheduler.'"):
        apply_sets(cfg, ["scheduler.polcy=fcfs"])
    with pytest.raises(ConfigError, match=r"did you mean 'plant.tower.n_cells'"):
        apply_sets(cfg, ["plant.tower.n_cell=5"])
    assert resolve_key("system.node.cpu_idle_W", cfg) == ("system", "node.cpu_idle_W")
    with pytest.raises(ConfigError, match=r"relative value needs a number"):
        apply_sets(cfg, ["scheduler.policy=+20%"])
    # system key: tiny4's idle power -10 % = 90 W, through a derived, content-addressed system file
    (tmp_path / "tiny4.toml").write_text(TINY4)
    _swf(tmp_path / "p.swf")
    rc, out = _run(tmp_path, "--set", "system.node.cpu_idle_W=-10%", "--set", "system.node.cpu_max_W=x1", name="s")
    assert rc == 0
    with h5py.File(out) as f:
        sysfile = f.attrs["config_json"]
    import json

    from power import load_system

    derived = json.loads(sysfile)["system"]
    s = load_system(derived)
    assert s.node.cpu_idle_W == 90.0 and s.node.cpu_max_W == 306.0 and "+set-" in derived
    starts, E, _ = _jobs(out)
    # busy node power 90 + 0.5 (306 - 90) = 198 W: 4 x 90 x 180 + 108 x 410 node-s
    assert E["E_node_dc_J"] == pytest.approx(4 * 90 * 180 + 108 * 410, rel=1e-12)
    # system.nodes: whole racks; Theta +20 %: 4392 x 1.2 = 5270.4 nodes on 6 x 4 = 24 racks -> round(219.6) = 220
    # nodes per rack -> 5280 nodes, still 6 CDUs
    s = load_system(apply_sets(cfg, ["system.nodes=+20%"]).system)
    assert (s.n_nodes, s.n_cdus) == (5280, 6)
    # plant key: the derived plant description has 5 tower cells, the rest as shipped
    from cooling_fmu.params import load_plant_params

    c = apply_sets(cfg, ["plant.tower.n_cells=5"])
    assert load_plant_params(c.cooling.plant).tower.n_cells == 5
    assert load_plant_params(c.cooling.plant).cdu == load_plant_params("theta").cdu


def test_sweep_axes_take_the_same_keys(tmp_path):
    from scheduler_sim.app.sweep import load_study

    (tmp_path / "tiny4.toml").write_text(TINY4)
    (tmp_path / "study.toml").write_text('name = "s"\n[base]\nsystem = "tiny4.toml"\n[axes]\n'
                                         '"system.node.cpu_idle_W" = [100.0, "-20%"]\n"seed" = [1]\n')
    _, sc = load_study(tmp_path / "study.toml", sets=["trace.window_days=2"])
    from power import load_system

    assert [load_system(s.config.system).node.cpu_idle_W for s in sc] == [100.0, 80.0]
    assert all(s.config.trace.window_days == 2.0 and s.config.seed == 1 for s in sc)
    assert [s.config.overrides for s in sc] == [["trace.window_days=2"]] * 2   # axes recorded by the name


def test_workload_growth_arrival_rate_and_job_size(tmp_path):
    # arrival rate x 2: submits 0, 10, 20, 30 -> 0, 5, 10, 15 (compressed towards the window start, day 0)
    (tmp_path / "tiny4.toml").write_text(TINY4)
    _swf(tmp_path / "p.swf", jobs=[(1, 0, 1, 100), (2, 10, 1, 100), (3, 20, 1, 100), (4, 30, 1, 100)])
    rc, out = _run(tmp_path, "--set", "trace.arrival_rate_factor=2", name="a")
    assert rc == 0
    starts, _, cols = _jobs(out)
    np.testing.assert_array_equal(cols["submit_time_s"], [0.0, 5.0, 10.0, 15.0])
    assert starts == {1: 0.0, 2: 5.0, 3: 10.0, 4: 15.0}
    # job size x 1.5 on 1-node jobs: 1.5 -> 1 or 2 at random (P = 0.5), seeded: the same for the same seed
    rc, out = _run(tmp_path, "--set", "trace.job_size_factor=1.5", "--set", "seed=3", name="g1")
    rc2, out2 = _run(tmp_path, "--set", "trace.job_size_factor=1.5", "--set", "seed=3", name="g2")
    n1, n2 = _jobs(out)[2]["nodes"], _jobs(out2)[2]["nodes"]
    np.testing.assert_array_equal(n1, n2)
    u = np.random.default_rng([3, 23]).random(4)          # the documented draw: nodes = 1 + (u < 0.5)
    np.testing.assert_array_equal(n1, 1 + (u < 0.5))
    # x 10 is capped at the 4-node machine
    rc, out = _run(tmp_path, "--set", "trace.job_size_factor=10", name="g3")
    np.testing.assert_array_equal(_jobs(out)[2]["nodes"], [4, 4, 4, 4])


def test_toml_writer_round_trips():
    import tomllib

    d = {"a": 1, "b": {"c": [1.5, float("inf")], "d": {"e": "x\"y", "f": True}}, "g": [[0.25, 0.9], [1.0, 0.95]],
         "h": [{"k": 1}]}
    assert tomllib.loads(toml_dumps(d)) == d


def test_partition_keys_resize_a_partition_and_relay_its_racks_and_cdus(tmp_path):
    from cooling_fmu.params import load_plant_params
    from power import load_system

    cfg = RunConfig(system="perlmutter")
    assert resolve_key("partition.gpu.nodes", cfg) == ("partition", "gpu.nodes")
    assert resolve_key("system.partition.cpu.rack_limit_kW", cfg) == ("partition", "cpu.rack_limit_kW")
    # +20 % GPU nodes: 1536 x 1.2 = 1843.2 -> 1843 nodes at 128 per rack = ceil(14.4) = 15 racks (was 12); 12 + 15 =
    # 27 racks on 4 positions per CDU: the 24 positions of 6 CDUs are full, 3 racks go to a 7th CDU (position 27 empty)
    c = apply_sets(cfg, ["partition.gpu.nodes=+20%"])
    s = load_system(c.system)
    gpu = s.partition("gpu")
    assert (gpu.n_nodes, gpu.n_racks, gpu.cdus, s.n_cdus, s.n_nodes) == (1843, 15, (3, 4, 5, 6), 7, 3072 + 1843)
    assert load_plant_params(c.cooling.plant).n_cdu == 7                       # the plant follows, CDU as shipped
    assert load_plant_params(c.cooling.plant).cdu == load_plant_params("perlmutter").cdu
    assert c.overrides == ["partition.gpu.nodes=+20%"]
    # fewer racks: CPU 3072 -> 2000 nodes at 256 per rack = 8 racks (was 12): 4 positions of CDU 2 left empty,
    # still 6 CDUs and the plant as shipped
    c = apply_sets(cfg, ["partition.cpu.nodes=2000"])
    s = load_system(c.system)
    assert (s.partition("cpu").n_racks, s.n_cdus, s.n_racks, c.cooling.plant) == (8, 6, 20, "")
    # denser racks, same node count: nodes_per_rack 256 -> 384 = 8 racks again
    s = load_system(apply_sets(cfg, ["partition.cpu.nodes_per_rack=x1.5"]).system)
    assert (s.partition("cpu").n_nodes, s.partition("cpu").n_racks) == (3072, 8)
    # any field of the table, given in the file or not
    s = load_system(apply_sets(cfg, ["partition.gpu.default_gpu_util=0.9"]).system)
    assert s.partition("gpu").default_gpu_util == 0.9 and s.partition("cpu").default_gpu_util == 0.5
    # a misspelt partition or key: "did you mean"
    with pytest.raises(ConfigError, match=r"no partition 'gpux'; did you mean 'gpu'\?.*partitions: cpu, gpu"):
        apply_sets(cfg, ["partition.gpux.nodes=+20%"])
    with pytest.raises(ConfigError, match=r"did you mean .*'partition.gpu.nodes'"):
        apply_sets(cfg, ["partition.gpu.nodez=10"])
    with pytest.raises(ConfigError, match=r"has no \[\[partition\]\] tables.*system.nodes"):
        apply_sets(RunConfig(), ["partition.compute.nodes=10"])
    with pytest.raises(ConfigError, match=r"integers >= 1"):
        apply_sets(cfg, ["partition.gpu.nodes=0.5"])


def test_partition_set_on_a_site_keeps_its_plant_beside_the_system_file(tmp_path):
    # a site's system file names its plant by a path relative to itself (hpctwin site new); the derived system file
    # lives in the cache, so the path is made absolute, and the derived plant (7 CDUs) is built from that plant
    from cooling_fmu.params import PLANTS_DIR, load_plant_params
    from power import load_system
    from power.system import SYSTEMS_DIR

    text = (SYSTEMS_DIR / "perlmutter.toml").read_text().replace('cooling_plant = "perlmutter"',
                                                                 'cooling_plant = "pm_plant.toml"')
    (tmp_path / "pm.toml").write_text(text)
    (tmp_path / "pm_plant.toml").write_text((PLANTS_DIR / "perlmutter.toml").read_text())
    c = apply_sets(RunConfig(system=str(tmp_path / "pm.toml")), ["partition.gpu.nodes=+20%"])
    s = load_system(c.system)
    assert s.cooling_plant == str((tmp_path / "pm_plant.toml").resolve()) and s.n_cdus == 7
    assert load_plant_params(c.cooling.plant).n_cdu == 7 and "pm_plant+set-" in c.cooling.plant
