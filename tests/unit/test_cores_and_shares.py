"""Cores per node (CLI / config, then the SWF header, then the system) and GPU-sharing pods' node shares.

Issue 12, kind 3: ``--system seth`` on the HPC2N trace doubled every job's nodes; the header-less theta_2022 trace
counts nodes; Alibaba pods of 0.25 and 8 GPUs each took one whole Frontier node at 1,665 W.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from dataloaders.swf import read_swf, read_swf_header, swf_cores_per_node
from power import load_system, node_power_w
from scheduler_sim.config import RunConfig
from scheduler_sim.runner import trace_cores_per_node

DATA = Path(__file__).resolve().parents[2] / "experiments" / "data"


@pytest.mark.parametrize("header, sys_ppn, sys_nodes, expected", [
    ({"MaxProcs": 32, "MaxNodes": 8}, 1, 100, 4),        # the header says 4 processors per node
    ({"MaxProcs": 240, "MaxNodes": 240}, 2, 120, 2),     # HPC2N on Seth: 240 = 120 nodes x 2 -> processors
    ({"MaxProcs": 4360, "MaxNodes": 4360}, 1, 4392, 1),  # theta_2022: the log counts nodes
    ({"MaxProcs": 4360, "MaxNodes": 4360}, 64, 9472, 1),  # same trace on Frontier: 4360 != 9472 x 64
    ({}, 2, 120, 2),                                     # no header: the system
    ({"MaxProcs": 10, "MaxNodes": 4}, 3, 100, 3),        # ratio 2.5 is not a count: the system
])
def test_swf_cores_per_node_rules(header, sys_ppn, sys_nodes, expected):
    assert swf_cores_per_node(header, sys_ppn, sys_nodes)[0] == expected


def test_run_takes_cli_then_header_then_system(tmp_path):
    hpc2n = str(DATA / "hpc2n.swf.gz")
    seth, theta = load_system("seth"), load_system("theta")
    assert theta.trace_procs_per_node == 1 and theta.cores_per_node == 64 and seth.trace_procs_per_node == 2
    cfg = RunConfig().with_overrides({"system": "seth", "trace.path": hpc2n})
    assert trace_cores_per_node(cfg, seth)[0] == 2
    assert trace_cores_per_node(cfg.with_overrides({"trace.cores_per_node": 3}), seth) == (
        3, "the run configuration (trace.cores_per_node / --cores-per-node)")
    assert trace_cores_per_node(RunConfig(), theta)[0] == 1        # embedded theta_2022.swf.gz, header 4360/4360
    # theta_2022 without its header on Theta: the system's trace_procs_per_node = 1, not its 64 cores
    body = b"".join(x for x in gzip.open(DATA / "theta_2022.swf.gz").readlines()[:50]
                    if not x.startswith(b";"))
    bare = tmp_path / "theta_noheader.swf"
    bare.write_bytes(body)
    assert read_swf_header(bare) == {}
    cpn, why = trace_cores_per_node(RunConfig().with_overrides({"trace.path": str(bare)}), theta)
    assert cpn == 1 and "no MaxProcs / MaxNodes" in why
    # and the load: HPC2N job 1 asks for 2 processors -> 1 Seth node, not 2
    df, _ = read_swf(hpc2n, cores_per_node=trace_cores_per_node(cfg, seth)[0])
    j = df.set_index("job_id")
    assert (j["nodes"] == np.ceil(j["procs"] / 2)).all() and j["nodes"].max() <= 120


def test_cli_run_accepts_cores_per_node():
    from scheduler_sim.cli import build_parser

    a = build_parser().parse_args(["run", "--cores-per-node", "2"])
    assert a.cores_per_node == 2


# ---- GPU-sharing pods on Frontier ----------------------------------------------------------------------------
def test_alibaba_shares_on_frontier_by_hand(tmp_path):
    from dataloaders.alibaba import read_alibaba_pods
    from jobs.shares import apply_node_shares

    p = tmp_path / "pods.csv"
    p.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
                 "scheduled_time\n"
                 "openb-pod-0001,4000,8192,0,0,,BE,Succeeded,10,3610,10\n"
                 "openb-pod-0002,8000,16384,1,250,,LS,Succeeded,10,3610,10\n"
                 "openb-pod-0003,64000,262144,8,1000,,LS,Succeeded,10,3610,10\n")
    fr = load_system("frontier")                                  # 4 GPUs, 64 cores, defaults 0.5 / 0.5
    jobs, notes = apply_node_shares(read_alibaba_pods(p).jobs, gpus_per_node=fr.node.gpus_per_node,
                                    cores_per_node=fr.cores_per_node, default_cpu_util=fr.default_cpu_util,
                                    default_gpu_util=fr.default_gpu_util)
    # nodes = max(1, ceil(gpus / 4), ceil(cpus / 64)); shares per node: cpu 4/64, 8/64, 64/128; gpu 0, 0.25/4, 8/8
    assert jobs["nodes"].tolist() == [1, 1, 2]
    assert jobs["cpu_util"].tolist() == [0.5 * 4 / 64, 0.5 * 8 / 64, 0.5 * 64 / 128]
    assert jobs["gpu_util"].tolist() == [0.0, 0.5 * 0.25 / 4, 0.5 * 8 / 8]
    # node DC power: idle 626.26 W (90 + 4 x 88 + 74.26 + 4 x 20 + 30) + share x util x (max - idle)
    # pod 1: + 0.03125 x 190                          = 632.1975 W
    # pod 2: + 0.0625 x 190 + 4 x 0.03125 x 472       = 697.135 W
    # pod 3: + 0.25 x 190 + 4 x 0.5 x 472 (per node)  = 1617.76 W on each of its 2 nodes
    P = node_power_w(jobs["cpu_util"].to_numpy(), jobs["gpu_util"].to_numpy(), fr.node)
    assert P == pytest.approx([632.1975, 697.135, 1617.76], abs=1e-9)
    assert any("1 span several nodes" in n for n in notes)
    # before: every pod one node at the default 0.5 / 0.5 -> 1665.26 W
    assert float(node_power_w(0.5, 0.5, fr.node)) == pytest.approx(1665.26)


def test_shares_on_a_cpu_only_system_ignore_gpus_with_a_note():
    from conftest import make_jobs

    from jobs.shares import apply_node_shares

    jobs = make_jobs([(1, 0, 1, 10, 100), (2, 0, 1, 10, 100)])
    jobs["gpus"] = [2.0, 0.0]
    jobs["cpus"] = [130.0, np.nan]
    out, notes = apply_node_shares(jobs, gpus_per_node=0, cores_per_node=64, default_cpu_util=0.8,
                                   default_gpu_util=0.0)
    assert out["nodes"].tolist() == [3, 1]                         # ceil(130 / 64); unknown cores: one node
    assert out["cpu_util"].tolist() == pytest.approx([0.8 * 130 / 192, 0.8])
    assert out["gpu_util"].tolist() == [0.0, 0.0]
    assert any("ask for GPUs but the system's nodes have none" in n for n in notes)
    assert any("without a core count" in n for n in notes)
