"""The Alibaba node list (openb_node_list_gpu_node.csv) beside a pod list: the trace's machine by GPU model, pods
mapped to partitions by it, the mapping reported, and the run header's trace-vs-system line (issue #23)."""

from __future__ import annotations

import gzip

import pytest

from dataloaders.alibaba import find_node_list, read_alibaba_nodes, read_alibaba_pods
from dataloaders.report import TraceError
from power.system import System
from scheduler_sim.app.config import RunConfig
from scheduler_sim.app.runner import trace_vs_system
from scheduler_sim.kernel.partitions import map_partitions
from tests.integration.test_shared_nodes import shared_spec

NODES = ("sn,cpu_milli,memory_mib,gpu,model\n"
         "openb-node-0001,96000,786432,8,V100M32\n"
         "openb-node-0002,96000,786432,8,V100M32\n"
         "openb-node-0003,64000,262144,2,P100\n"
         "openb-node-0004,96000,393216,0,\n"
         "openb-node-0005,96000,786432,x,V100M32\n"       # line 6: GPU count not a number -> skipped
         "openb-node-0001,96000,786432,8,V100M32\n")      # line 7: repeated sn -> skipped
PODS = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
        "scheduled_time\n"
        "openb-pod-0001,8000,1024,1,1000,V100M32|P100,LS,Succeeded,0,100,0\n"   # first listed model: V100M32
        "openb-pod-0002,4000,1024,1,500,T4|P100,BE,Succeeded,0,100,0\n"         # T4 has no node: P100
        "openb-pod-0003,2000,1024,0,0,,BE,Succeeded,0,100,0\n"                  # CPU-only: cpu
        "openb-pod-0004,4000,1024,1,1000,,LS,Succeeded,0,100,0\n"               # GPU, no model named: unmapped
        "openb-pod-0005,4000,1024,2,1000,T4,LS,Succeeded,0,100,0\n")            # GPU, model not in the list


def _files(tmp_path, node_name="openb_node_list_gpu_node.csv"):
    pods = tmp_path / "openb_pod_list_default.csv"
    pods.write_text(PODS)
    (tmp_path / node_name).write_text(NODES)
    return pods


def test_node_list_maps_pods_to_gpu_model_partitions_with_the_mapping_reported(tmp_path):
    pods = _files(tmp_path)
    res = read_alibaba_pods(pods)
    j = res.jobs.set_index("trace_job_id")
    assert j["partition"].to_dict() == {"openb-pod-0001": "V100M32", "openb-pod-0002": "P100",
                                        "openb-pod-0003": "cpu", "openb-pod-0004": "", "openb-pod-0005": ""}
    notes = res.report.notes
    assert ("openb_node_list_gpu_node.csv line 6: field gpu: expected a whole number of GPUs in [0, 2147483648), "
            "found 'x'; node skipped") in notes
    assert ("openb_node_list_gpu_node.csv line 7: field sn: expected each node once, found "
            "'openb-node-0001 (repeated)'; node skipped") in notes
    assert ("node list openb_node_list_gpu_node.csv: 4 node(s) read, 2 skipped; V100M32: 2 node(s) x 8 GPU(s); "
            "P100: 1 node(s) x 2 GPU(s); cpu: 1 node(s) x 0 GPU(s)") in notes
    assert ("pod -> trace partition by openb_node_list_gpu_node.csv (first gpu_spec model with nodes; CPU-only pods "
            "-> cpu): V100M32 1 pod(s), P100 1 pod(s), cpu 1 pod(s); 2 GPU pod(s) name no model of the node list "
            "(partition left to queue / gpu_spec)") in notes
    assert res.report.header["node_list"] == {"file": "openb_node_list_gpu_node.csv",
                                              "nodes": {"V100M32": 2, "P100": 1, "cpu": 1},
                                              "gpus_per_node": {"V100M32": [8], "P100": [2], "cpu": [0]}}
    # the pod records are untouched by the node list: 5 read, 5 accepted
    assert (res.report.records_read, res.report.accepted, res.report.rejected) == (5, 5, 0)
    # the run's mapping onto a system whose gpu partition lists both models: pods 1, 2 by partition -> gpu; pod 3
    # by partition -> cpu (the partition's own name); pods 4, 5 (no model) fall to the default, cpu
    spec = shared_spec()
    spec["partition"][1]["trace_names"] = ["V100M32", "P100"]
    sysm = System.from_spec(spec, source="shared")
    info = {}
    idx = map_partitions(res.jobs, sysm, info)
    names = [sysm.partitions[k].name for k in idx]
    assert dict(zip(res.jobs["trace_job_id"], names)) == {"openb-pod-0001": "gpu", "openb-pod-0002": "gpu",
                                                          "openb-pod-0003": "cpu", "openb-pod-0004": "cpu",
                                                          "openb-pod-0005": "cpu"}
    rows = {(r["partition"], r["rule"]): (r["jobs"], r["trace_names"]) for r in info["partition_mapping"]}
    assert rows == {("cpu", "by partition"): (1, ["cpu"]), ("cpu", "default"): (2, ["LS"]),
                    ("gpu", "by partition"): (2, ["P100", "V100M32"])}


def test_bad_node_row_raises_in_strict_mode_naming_file_line_and_field(tmp_path):
    pods = _files(tmp_path)
    with pytest.raises(TraceError) as e:
        read_alibaba_pods(pods, strict=True)
    msg = str(e.value)
    assert "openb_node_list_gpu_node.csv" in msg and "line 6" in msg and "gpu" in msg
    bad = tmp_path / "bad.csv"
    bad.write_text("sn,cpu_milli,memory_mib,model\nn1,1,1,V100\n")
    with pytest.raises(TraceError) as e:
        read_alibaba_nodes(bad)
    assert "missing column(s) ['gpu']" in str(e.value) and "bad.csv" in str(e.value)


def test_node_list_found_beside_the_pod_list_by_its_names(tmp_path):
    pods = tmp_path / "openb_pod_list_gpuspec10.csv"
    pods.write_text(PODS)
    assert find_node_list(pods) is None
    assert "partition" not in read_alibaba_pods(pods).jobs.columns     # no node list: nothing changes
    (tmp_path / "openb_node_list_gpu_node.csv").write_text(NODES)
    assert find_node_list(pods) == tmp_path / "openb_node_list_gpu_node.csv"
    (tmp_path / "openb_node_list_gpuspec10.csv").write_text(NODES)      # the pod file's own node list wins
    assert find_node_list(pods) == tmp_path / "openb_node_list_gpuspec10.csv"
    other = tmp_path / "other"
    other.mkdir()
    (other / "pods.csv").write_text(PODS)
    (other / "nodes.csv").write_text("unrelated\n")                    # only pod_list -> node_list is tried
    assert find_node_list(other / "pods.csv") is None
    (other / "openb_node_list_gpu_node.csv.gz").write_bytes(gzip.compress(NODES.encode()))
    assert read_alibaba_pods(other / "pods.csv").report.header["node_list"]["nodes"] == {"V100M32": 2, "P100": 1,
                                                                                        "cpu": 1}


def test_run_header_compares_node_list_models_with_the_system_partitions(tmp_path):
    res = read_alibaba_pods(_files(tmp_path))
    spec = shared_spec()
    spec["partition"][1]["trace_names"] = ["V100M32", "P100"]
    sysm = System.from_spec(spec, source="shared")
    line = trace_vs_system(RunConfig(), sysm, res, 1, sysm.n_nodes)
    # trace: 2 V100M32 + 1 P100 -> gpu (2 nodes in the system), 1 CPU node -> cpu (4 in the system); 4 vs 6 in all
    assert line == (f"machine trace 4 nodes (Alibaba node list openb_node_list_gpu_node.csv) vs system "
                    f"{sysm.name!r} 6 nodes: differs (by partition: 'cpu' trace 1 nodes (cpu 1) vs 4: differs; 'gpu' "
                    f"trace 3 nodes (V100M32 2, P100 1) vs 2: differs); pool 6 nodes (the whole system), job sizes "
                    f"as in the trace (no scaling); --nodes N sets the pool")
