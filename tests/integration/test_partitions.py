"""Partitions: a system of two node types, jobs mapped to partitions by the trace's names, and per-partition EASY
backfill (hand-computed), node power of each node type, and a one-partition system unchanged.
"""

from __future__ import annotations

import numpy as np
import pytest

from power.node import node_power_w
from power.nodetypes import available_node_types, load_node_type
from power.system import System, SystemFileError, load_system
from scheduler_sim.kernel.simulation import Simulation, SimulationConfig
from tests.conftest import make_jobs, tiny_system_spec

CPU_NODE = {"name": "cpu-test", "cpu_idle_W": 100.0, "cpu_max_W": 300.0, "cpus_per_node": 1}
GPU_NODE = {"name": "gpu-test", "cpu_idle_W": 50.0, "cpu_max_W": 100.0, "cpus_per_node": 1,
            "gpu_idle_W": 50.0, "gpu_max_W": 500.0, "gpus_per_node": 2}


def two_partition_spec() -> dict:
    """cpu: 4 nodes on 2 racks (2 per rack); gpu: 2 nodes on 1 rack; one CDU with 3 rack positions."""
    spec = tiny_system_spec()
    spec["topology"] = {"n_cdus": 1, "rack_positions_per_cdu": 3}
    del spec["node"]
    spec["partition"] = [
        {"name": "cpu", "node": CPU_NODE, "nodes": 4, "nodes_per_rack": 2, "rack_limit_kW": 1.0,
         "trace_names": ["batch"]},
        {"name": "gpu", "node": GPU_NODE, "nodes": 2, "nodes_per_rack": 2, "default_gpu_util": 1.0},
    ]
    return spec


def _jobs(rows):
    """(id, submit, nodes, runtime, requested, queue) -> job table."""
    df = make_jobs([r[:5] for r in rows])
    df["queue"] = [r[5] for r in rows]
    return df


# id, submit, nodes, runtime, requested, queue
ROWS = [
    (1, 0, 3, 100, 100, "cpu"),    # A
    (2, 1, 2, 50, 50, "batch"),    # B: "batch" is a trace name of cpu
    (3, 2, 1, 50, 50, "cpu"),      # C
    (4, 0, 2, 200, 200, "gpu"),    # D
    (5, 60, 1, 10, 10, "gpu"),     # E
    (6, 61, 1, 30, 30, ""),        # F: no name -> the default partition (cpu, the first)
    (7, 5, 1, 500, 500, "gpu"),    # G
]


def test_per_partition_easy_hand_schedule():
    # cpu (nodes 0-3):  t=0 A starts (1 free). t=1 B (2) is cpu's head: shadow = A's end 100, extra 1.
    #   t=2 C (1 node, ends 52 <= 100) backfills. t=52 C ends. t=61 F (1 node, ends 91 <= 100) backfills.
    #   t=100 A ends, B starts (ends 150).
    # gpu (nodes 4-5):  t=0 D takes both nodes. t=5 G (1) is gpu's head: shadow = D's end 200.
    #   t=60 E (1 node) cannot start: gpu has no free node, although cpu has one (a single pool of 6 nodes
    #   would start it at 60). t=200 D ends; G and E start.
    sysm = System.from_spec(two_partition_spec(), source="two")
    sim = Simulation(_jobs(ROWS), sysm, "easy",
                     SimulationConfig(window_start_s=0.0, window_s=1e6, step_s=10.0, interval_s=10.0, record_reservations=True),
                     plant=None)
    res = sim.run()
    j = res.jobs.set_index("job_id")
    assert j["sim_start_s"].to_dict() == {1: 0, 2: 100, 3: 2, 4: 0, 5: 200, 6: 61, 7: 200}
    assert j["partition"].to_dict() == {1: "cpu", 2: "cpu", 3: "cpu", 4: "gpu", 5: "gpu", 6: "cpu", 7: "gpu"}
    # each job ran on nodes of its partition
    runs = res.allocations
    for jid, first, count in zip(runs["job_id"], runs["node_first"], runs["node_count"]):
        lo, hi = (0, 4) if j.loc[jid, "partition"] == "cpu" else (4, 6)
        assert lo <= first and first + count <= hi
    # one log entry per pass holds both partitions' reservations: at t=61 (F backfills) B at 100 and G at 200
    log = dict(sim.reservation_log)
    idx = {int(jid): k for k, jid in enumerate(sim.jobdata.frame["job_id"])}
    assert log[61.0] == {idx[2]: 100.0, idx[7]: 200.0}
    mapping = {(r["partition"], r["rule"]): r["jobs"] for r in res.info["partition_mapping"]}
    assert mapping == {("cpu", "by queue"): 3, ("cpu", "default"): 1, ("gpu", "by queue"): 3}


def test_single_pool_schedule_differs():
    # the same jobs on a one-partition 6-node machine (one pool, one EASY reservation):
    # t=0 A (3) and D (2) start, 1 free. t=1 B (2) head: shadow 100 (A ends, 4 free), extra 2.
    # t=2 C (1, ends 52) backfills. t=52 C ends, 1 free: G (1 node, ends 552 > 100) uses one of the 2 extra nodes
    # and backfills at 52 (in the partitioned run it waits for a gpu node until 200).
    # t=100 A ends, 3 free: B (2) and E (1, queued at 60) start; F waits. t=110 E ends, F starts.
    spec = tiny_system_spec(n_nodes=6)
    sysm = System.from_spec(spec, source="one")
    res = Simulation(_jobs(ROWS), sysm, "easy",
                     SimulationConfig(window_start_s=0.0, window_s=1e6, step_s=10.0, interval_s=10.0), plant=None).run()
    j = res.jobs.set_index("job_id")
    assert j["sim_start_s"].to_dict() == {1: 0, 2: 100, 3: 2, 4: 0, 5: 100, 6: 110, 7: 52}
    assert "partition" not in res.jobs.columns  # a one-partition system's outputs are unchanged


def test_node_power_by_node_type():
    sysm = System.from_spec(two_partition_spec(), source="two")
    sim = Simulation(_jobs(ROWS), sysm, "easy",
                     SimulationConfig(window_start_s=0.0, window_s=1e6, step_s=10.0, interval_s=10.0), plant=None)
    jd = sim.jobdata
    by_id = dict(zip(jd.frame["job_id"], jd.node_power_W))
    # cpu jobs: default_cpu_util 1.0 (system) -> 300 W; gpu jobs: cpu 1.0 -> 100 W, 2 GPUs at util 1.0 -> 2 x 500 W
    assert by_id[1] == 300.0 and by_id[4] == 100.0 + 1000.0
    assert jd.idle_node_W.tolist() == [100.0] * 4 + [150.0] * 2
    res = sim.run()
    # last interval [690, 700): only G runs (gpu, 1,100 W); 4 idle cpu nodes x 100 W + 1 idle gpu node 150 W
    assert res.time_s[-1] == 690.0
    assert res.facility["P_node_dc_W"][-1] == pytest.approx(4 * 100.0 + 1100.0 + 150.0)
    # busy nodes per partition, mean over [0, 10): cpu A (3 nodes) + C (1 node from t=2: 0.8); gpu D (2 nodes)
    assert res.partition["busy_nodes"][0].tolist() == pytest.approx([3.8, 2.0])
    # IT energy per partition adds up to the run's IT energy (exact step sums of the racks)
    assert res.partitions["E_it_J"].sum() == pytest.approx(res.totals["E_it_J"], rel=1e-12)
    # cpu jobs: A 3 x 100 s + B 2 x 50 + C 50 + F 30 = 480 node-s over 4 nodes x 700 s
    assert res.partitions["utilisation"][0] == pytest.approx(480.0 / (4 * 700.0))
    assert res.partitions["cdu_partitions"].tolist() == ["cpu+gpu"]


def test_partitioned_topology_and_errors():
    sysm = System.from_spec(two_partition_spec(), source="two")
    assert sysm.n_nodes == 6 and sysm.n_racks == 3
    assert sysm.node_rack.tolist() == [0, 0, 1, 1, 2, 2]
    assert sysm.node_partition.tolist() == [0, 0, 0, 0, 1, 1]
    assert sysm.partition("gpu").first_node == 4 and sysm.partition("gpu").cdus == (0,)
    assert sysm.partition("cpu").rack_limit_W == 1000.0 and sysm.partition("cpu").default
    bad = two_partition_spec()
    bad["partition"][1]["nodes"] = 3  # 2 racks -> 4 racks for 3 positions
    with pytest.raises(SystemFileError, match="fill 4 racks but the topology has 3"):
        System.from_spec(bad, source="bad")
    bad = two_partition_spec()
    bad["partition"][0]["node_type"] = "no-such-node"
    del bad["partition"][0]["node"]
    with pytest.raises(SystemFileError, match="unknown node type 'no-such-node'"):
        System.from_spec(bad, source="bad")


def test_legacy_system_is_one_partition():
    for name in ("theta", "frontier"):
        s = load_system(name)
        assert len(s.partitions) == 1 and not s.partitioned
        p = s.partitions[0]
        assert (p.first_node, p.n_nodes, p.n_racks) == (0, s.n_nodes, s.n_racks)
        assert p.node == s.node


def test_catalogue_node_types():
    names = available_node_types()
    for n in ("mi250x-4gpu", "h100-sxm-8gpu", "gh200-4", "epyc-7763-2s", "b200-8gpu", "a100-4gpu-epyc"):
        assert n in names
    # the Frontier node of the catalogue is the Frontier system file's node (RAPS figures)
    fr = load_system("frontier").node
    nt = load_node_type("mi250x-4gpu").power_params()
    assert nt == fr
    # DGX H100 at full load: 2 x 350 + 8 x 700 + 160 + 8 x 25 + 8 x 12 + 2800 = 9,556 W DC
    h = load_node_type("h100-sxm-8gpu")
    assert float(node_power_w(1.0, 1.0, h)) == pytest.approx(9556.0)
    assert load_node_type("epyc-7763-2s").gpus_per_node == 0
    assert load_node_type("epyc-7763-2s").cores_per_node == 128


def test_serving_gpu_loader_ignores_node_tables():
    from scheduler_sim.serving.hardware import load_gpu

    assert load_gpu("h100-sxm").max_power_W == 700.0
    with pytest.raises(ValueError, match="cpu-node entry of the hardware catalogue, not a GPU"):
        load_gpu("epyc-7763-2s")
    assert np.isfinite(load_gpu("b200").peak_flops)


# ------------------------------------------------------------------ a partitioned system file through `hpctwin run`
HET_PARTS = '''
[topology]
n_cdus = 6
rack_positions_per_cdu = 4
missing_rack_positions = []

[[partition]]
name = "knl"
nodes = 3660
nodes_per_rack = 183
[partition.node]
name = "knl-7230"
cpu_idle_W = 60.0
cpu_max_W = 215.0
cpus_per_node = 1
mem_W = 24.0

[[partition]]
name = "gpu"
node_type = "h100-sxm-8gpu"
nodes = {gpu_nodes}
nodes_per_rack = 16
kind = "{gpu_kind}"
'''


def het_system(tmp_path, gpu_kind="batch", gpu_nodes=64):
    """theta.toml with its [topology]/[node] replaced by a KNL partition (20 racks) and an H100 partition (4 racks)."""
    from power.system import SYSTEMS_DIR

    s = (SYSTEMS_DIR / "theta.toml").read_text()
    a, b = s.index("[topology]"), s.index("[sivoc]")
    s = s[:a] + HET_PARTS.format(gpu_kind=gpu_kind, gpu_nodes=gpu_nodes) + s[b:]
    p = tmp_path / f"het_{gpu_kind}.toml"
    p.write_text(s.replace('name = "theta"', 'name = "theta-het"', 1))
    return p


def test_partitioned_run_writes_partition_outputs(tmp_path):
    import h5py

    from scheduler_sim.app.config import load_config
    from scheduler_sim.app.runner import run_one
    from scheduler_sim.io.schema import check_file

    cfg = load_config(None).with_overrides({"system": str(het_system(tmp_path)), "trace.window_days": 1.0,
                                             "cooling.model": "off", "output.progress": False})
    out = run_one(cfg, tmp_path / "het.h5")
    assert check_file(out.path) is None
    with h5py.File(out.path) as f:
        names = [x.decode() for x in f["/partitions/name"][:]]
        assert names == ["knl", "gpu"]
        assert set(x.decode() for x in f["/jobs/partition"][:]) == {"knl"}  # the Theta SWF has no queue: default
        assert f["/timeseries/partition/P_it_W"].shape[1] == 2
        # no job on the gpu partition: its 64 nodes idle all along (DGX H100 idle DC 2 x 100 + 8 x 70 + 160 + 200
        # + 96 + 2800 = 4,016 W per node), and its IT energy is the racks' input: positive
        assert f["/partitions/idle_node_W"][1] == pytest.approx(4016.0)
        assert f["/partitions/jobs"][1] == 0 and f["/partitions/E_it_J"][1] > 0
    assert "partition knl: " in out.load_summary


def test_serving_needs_a_serving_partition_on_a_partitioned_system(tmp_path):
    from scheduler_sim.app.config import load_config
    from scheduler_sim.app.runner import run_one

    base = load_config("experiments/llm_serving_azure_conv.toml")
    cfg = base.with_overrides({"system": str(het_system(tmp_path)), "cooling.model": "off",
                               "serving.duration_s": 120.0})
    with pytest.raises(ValueError, match='none of kind .serving.: \\[serving\\] now runs on a partition; add'):
        run_one(cfg, None)
    # with a serving partition (4 DGX H100 nodes: the deployment's 8 GPUs take the first one), it runs there
    cfg = base.with_overrides({"system": str(het_system(tmp_path, "serving", 64)), "cooling.model": "off",
                               "serving.duration_s": 120.0})
    out = run_one(cfg, None)
    assert out.summary["serving_requests"] > 0
    assert out.summary["partition_knl_jobs"] == 0.0


def test_shipped_perlmutter_example_runs_on_its_partitions(tmp_path):
    # the shipped heterogeneous example (#23 item 8) for half a day with the fast plant: every Theta job (no
    # queue field) goes to the default partition cpu, the [[workload]] training jobs to the gpu partition
    from scheduler_sim.app.config import load_config
    from scheduler_sim.app.runner import run_one

    s = load_system("perlmutter")
    assert [(p.name, p.n_nodes, p.node_type) for p in s.partitions] == [
        ("cpu", 3072, "epyc-7763-2s"), ("gpu", 1536, "a100-4gpu-epyc")]
    assert [p.n_racks for p in s.partitions] == [12, 12] and s.n_cdus == 6
    cfg = load_config("experiments/perlmutter_cpu_gpu.toml").with_overrides(
        {"trace.window_days": 0.5, "cooling.model": "fast"})
    out = run_one(cfg, tmp_path / "p.h5", headroom=True)
    assert out.summary["partition_gpu_jobs"] > 0 and out.summary["partition_cpu_jobs"] > 0
    assert "partition cpu: " in out.load_summary and "by default" in out.load_summary
    assert "partition gpu: " in out.load_summary and "by partition" in out.load_summary
    import h5py

    with h5py.File(tmp_path / "p.h5") as f:
        part = f["jobs/partition"][()].astype(str)
        ids = f["jobs/job_id"][()]
    from scheduler_sim.app.workloads import TRAINING_JOB_ID0

    assert set(part[ids >= TRAINING_JOB_ID0]) == {"gpu"} and set(part[ids < TRAINING_JOB_ID0]) == {"cpu"}
    assert any(line.strip().startswith("plant, design day") for line in out.headroom)


def test_alea_machines_line_that_is_not_a_cluster_is_skipped_and_noted(tmp_path):
    # a header line and a line without a name are not clusters: skipped, and the load report says which (it was a
    # silent skip); the good lines still map partitions 1 / 2 (ids counted from 1) to cpu / gpu
    from dataloaders.registry import load_trace

    rows = [" ".join(str(x) for x in [k, k, -1, 100, 1, -1, -1, 1, 100, -1, 1, -1, -1, -1, -1, part, -1, -1])
            for k, part in ((1, 1), (2, 2))]
    swf = tmp_path / "two.swf"
    swf.write_text("; MaxNodes: 6\n; MaxProcs: 6\n" + "\n".join(rows) + "\n")
    (tmp_path / "two.swf.machines").write_text("id name nodes\n0\tcpu\t4\t1\t1\t1024\n\n7\n1\tgpu\t2\t1\t1\t1024\n")
    r = load_trace(swf, cores_per_node=1)
    assert r.jobs.sort_values("job_id")["partition"].tolist() == ["cpu", "gpu"]
    note = next(n for n in r.report.notes if "skipped (not a cluster)" in n)
    assert note == ("2 line(s) of two.swf.machines skipped (not a cluster): line 1: id = 'id', expected an integer "
                    "cluster id; line 4: name = '(absent)', expected a cluster name after the id")


def test_alea_machines_file_maps_swf_partitions(tmp_path):
    # SWF field 16 (partition) 1 / 2 and an Alea machines file (0-based ids) beside the trace: jobs map to the
    # clusters' names, which are the system's partitions; the load report says how
    from dataloaders.registry import load_trace

    rows = []
    for k, (sub, n, part) in enumerate([(0, 2, 1), (1, 1, 2), (2, 2, 1), (3, 2, 2)], start=1):
        f = [k, sub, -1, 100, n, -1, -1, n, 100, -1, 1, -1, -1, -1, -1, part, -1, -1]
        rows.append(" ".join(str(x) for x in f))
    swf = tmp_path / "two.swf"
    swf.write_text("; MaxNodes: 6\n; MaxProcs: 6\n" + "\n".join(rows) + "\n")
    (tmp_path / "two.swf.machines").write_text("0\tcpu\t4\t1\t1\t1024\n1\tgpu\t2\t1\t1\t1024\n")
    r = load_trace(swf, cores_per_node=1)
    assert r.jobs.sort_values("job_id")["partition"].tolist() == ["cpu", "gpu", "cpu", "gpu"]
    assert any("two.swf.machines" in n and "1 -> cpu, 2 -> gpu" in n for n in r.report.notes)
    sysm = System.from_spec(two_partition_spec(), source="two")
    res = Simulation(r.jobs, sysm, "easy", SimulationConfig(window_start_s=0.0, window_s=1e6, step_s=10.0, interval_s=10.0),
                     plant=None).run()
    j = res.jobs.set_index("job_id")
    assert j["partition"].to_dict() == {1: "cpu", 2: "gpu", 3: "cpu", 4: "gpu"}
    # cpu: jobs 1 and 3 (2 nodes each) fit together at once; gpu: jobs 2 (1 node) and 4 (2 nodes) -> 4 waits
    assert j["sim_start_s"].to_dict() == {1: 0.0, 2: 1.0, 3: 2.0, 4: 101.0}
    mapping = {(m["partition"], m["rule"]): m["jobs"] for m in res.info["partition_mapping"]}
    assert mapping == {("cpu", "by partition"): 2, ("gpu", "by partition"): 2}


def test_workload_table_runs_in_its_partition_on_that_node_type():
    # a [[workload]] table with partition = "gpu": its one training job (tp 2 x dp 2 = 4 GPUs = 2 gpu-test nodes of 2
    # GPUs) runs on the gpu partition's nodes 4-5, beside a trace job on cpu; its node power is the gpu-test node
    # model at the system's default CPU load (1.0) and each phase's GPU load: 50 + 1.0 x 50 + 2 x (50 + u x 450) W
    from jobs.training import TrainingConstants
    from scheduler_sim.app.workload_config import WorkloadConfig
    from scheduler_sim.app.workloads import merge_jobs, training_jobs

    sysm = System.from_spec(two_partition_spec(), source="two")
    small = dict(name="small", layers=4, hidden=512, ffn_hidden=2048, heads=8, kv_heads=8, vocab=32000, seq_len=1024)
    w = dict(family="training", name="t", model=small, gpu="h100-sxm", train_hours=1.0, failure_rate_per_gpu_h=0.0,
             layout=dict(tp=2, dp=2, micro_batches=4))
    tj = training_jobs([WorkloadConfig(**w, partition="gpu")], sysm, seed=1)
    c = TrainingConstants()
    assert tj.jobs["partition"].tolist() == ["gpu"] and tj.reports[0]["nodes"] == 2
    jid = int(tj.jobs.job_id[0])
    # compute, bubble, exposed-communication phases: 100 + 2 x (50 + u x 450) W at u = 1.0, 0.15, 0.25
    assert tj.profiles[jid].power_W == pytest.approx((100 + 2 * (50 + c.util_compute * 450),
                                                      100 + 2 * (50 + c.util_bubble * 450),
                                                      100 + 2 * (50 + c.util_comm * 450)), rel=1e-12)
    assert tj.profiles[jid].power_W[0] == pytest.approx(1100.0)
    jobs = merge_jobs(_jobs([(1, 0, 4, 100, 100, "cpu")]), tj)
    res = Simulation(jobs, sysm, "easy", SimulationConfig(window_start_s=0.0, window_s=1e6, step_s=10.0, interval_s=10.0),
                     plant=None, workload_power_profiles=tj.power_series).run()
    j = res.jobs.set_index("job_id")
    assert j["partition"].to_dict() == {1: "cpu", jid: "gpu"}
    assert j["sim_start_s"].to_dict() == {1: 0.0, jid: 0.0}   # both start at once: each in its own partition
    runs = {int(a): (int(b), int(n)) for a, b, n in zip(res.allocations["job_id"], res.allocations["node_first"],
                                                           res.allocations["node_count"])}
    assert runs == {1: (0, 4), jid: (4, 2)}
    ps = tj.power_series
    dur = np.diff(np.append(ps["t_offset_s"].to_numpy(), tj.reports[0]["wall_s"]))
    assert j.loc[jid, "energy_dc_J"] == pytest.approx(2 * float(np.dot(dur, ps["node_power_W"])), rel=1e-9)
    mapping = {(r["partition"], r["rule"]): r["jobs"] for r in res.info["partition_mapping"]}
    assert mapping == {("cpu", "by queue"): 1, ("gpu", "by partition"): 1}
    # without partition the job goes where its queue "training" maps: the default partition cpu, whose nodes have
    # no GPU; a partition that is not a batch partition of the system is refused, naming the batch partitions
    with pytest.raises(ValueError, match=r"partition 'cpu'.*no GPU"):
        training_jobs([WorkloadConfig(**w)], sysm, seed=1)
    with pytest.raises(ValueError, match=r"partition 'gpus' is not a batch partition.*did you mean 'gpu'\?.*cpu, gpu"):
        training_jobs([WorkloadConfig(**w, partition="gpus")], sysm, seed=1)


def test_sacct_partitions_map_jobs_with_the_mapping_reported(tmp_path):
    # sacct's Partition field is the job's queue: "regular" is a trace name of cpu, "gpu" the gpu partition's own
    # name, "debug" maps nowhere -> the default (cpu); the run's mapping and its load-report lines say so
    from dataloaders.registry import load_trace
    from scheduler_sim.app.runner import partition_mapping_lines

    head = "JobID|JobIDRaw|User|Account|Partition|Submit|Start|End|Elapsed|Timelimit|NNodes|NodeList|State"
    rows = [head]
    for i, (part, n) in enumerate([("regular", 2), ("gpu", 1), ("debug", 1), ("gpu", 2)], start=1):
        t = f"2023-03-01T10:0{i}:00"
        rows.append(f"{i}|{i}|u|a|{part}|{t}|{t}|2023-03-01T11:00:00|00:55:00|01:00:00|{n}|nid0{i}|COMPLETED")
    p = tmp_path / "jobs.sacct"
    p.write_text("\n".join(rows) + "\n")
    r = load_trace(p, format="sacct")
    spec = two_partition_spec()
    spec["partition"][0]["trace_names"] = ["regular"]
    sysm = System.from_spec(spec, source="two")
    res = Simulation(r.jobs, sysm, "easy", SimulationConfig(window_start_s=r.jobs["submit_time_s"].min(),
                                                            window_s=1e6, step_s=10.0, interval_s=10.0),
                     plant=None).run()
    j = res.jobs.set_index("job_id")
    assert j["partition"].to_dict() == {1: "cpu", 2: "gpu", 3: "cpu", 4: "gpu"}
    lines = [s.strip() for s in partition_mapping_lines(res.info)]
    assert any(s.startswith("partition cpu: 1 job(s) by queue") and "regular" in s for s in lines)
    assert any(s.startswith("partition gpu: 2 job(s) by queue") for s in lines)
    assert any(s.startswith("partition cpu: 1 job(s) by default") and "debug" in s for s in lines)
