"""Sharing nodes (issue #23 item 2): jobs that ask for part of a node share the nodes of a ``share = true``
partition, scheduled by slot with per-partition EASY, with power by share and exact energy attribution; a
whole-node partition beside it stays exclusive.
"""

from __future__ import annotations

import numpy as np
import pytest

from power.system import System, SystemFileError
from scheduler_sim.kernel.sharing import SlotTable, node_power_by_share
from scheduler_sim.kernel.simulation import Simulation, SimulationConfig
from tests.conftest import make_jobs
from tests.integration.test_partitions import two_partition_spec


def shared_spec(slots: int = 4) -> dict:
    """cpu: 4 whole-node nodes; gpu: 2 nodes of 2 GPUs (idle 150 W, max 1,100 W), shared, ``slots`` per node."""
    spec = two_partition_spec()
    spec["partition"][1].update(share=True, share_slots=slots)
    return spec


def _jobs(rows):
    """(id, submit, nodes, runtime, requested, queue, gpus, cpu_util, gpu_util) -> job table."""
    df = make_jobs([r[:5] for r in rows])
    df["queue"] = [r[5] for r in rows]
    df["gpus"] = [r[6] for r in rows]
    df["cpu_util"] = [r[7] for r in rows]
    df["gpu_util"] = [r[8] for r in rows]
    return df


# id, submit, nodes, runtime, requested, queue, gpus, cpu_util, gpu_util (already share x utilisation)
ROWS = [
    (1, 0, 1, 100, 100, "gpu", 1.0, 0.5, 0.5),   # H1: half a node (1 of 2 GPUs) = 2 slots
    (2, 0, 1, 100, 100, "gpu", 1.0, 0.5, 0.5),   # H2
    (3, 0, 1, 50, 50, "gpu", 1.0, 0.5, 0.5),     # H3
    (4, 0, 1, 60, 60, "gpu", 1.0, 0.5, 0.5),     # H4
    (5, 1, 1, 30, 30, "gpu", np.nan, 1.0, 1.0),  # W: a whole node (no share given) = 4 slots
    (6, 2, 1, 5, 5, "gpu", 1.0, 0.5, 0.5),       # Q1: half a node, 5 s
    (7, 3, 1, 20, 20, "gpu", 0.5, 0.25, 0.25),   # Q2: a quarter of a node = 1 slot, 20 s
    (8, 0, 2, 40, 40, "cpu", np.nan, 1.0, 0.0),  # C: 2 whole cpu nodes
    (9, 1, 2, 10, 10, "cpu", np.nan, 1.0, 0.0),  # D: 2 whole cpu nodes
]


def _run(rows=ROWS, **cfg):
    sysm = System.from_spec(shared_spec(), source="shared")
    sim = Simulation(_jobs(rows), sysm, "easy",
                     SimulationConfig(window_start_s=0.0, window_s=1e6, step_s=10.0, interval_s=10.0,
                                      record_reservations=True, **cfg), plant=None)
    return sim, sim.run()


def test_shared_partition_easy_hand_schedule():
    # gpu: 2 nodes x 4 slots = 8 slots. t=0 H1-H4 (2 slots each) start together: H1, H2 on node 4 (best fit puts
    #   H2 beside H1), H3, H4 on node 5. t=1 W (4 slots) is the head: 0 free; H3 ends at 50 (+2), H4 at 60 (+2):
    #   shadow 60, extra 0. t=50 H3 ends, 2 slots free: Q1 (2 slots, ends 55 <= 60) backfills; Q2 (1 slot) does
    #   not fit beside it. t=55 Q1 ends: Q2 (1 slot, ends 75 > 60, no extra slot at 60) must not backfill.
    #   t=60 H4 ends: node 5 is empty, W starts there alone (to 90). Q2 (head, shadow 90) starts at 90.
    # cpu (4 whole nodes): C (2) at 0, D (2) at 1: exclusive, as before.
    sim, res = _run()
    j = res.jobs.set_index("job_id")
    assert j["sim_start_s"].to_dict() == {1: 0, 2: 0, 3: 0, 4: 0, 5: 60, 6: 50, 7: 90, 8: 0, 9: 1}
    idx = {int(jid): k for k, jid in enumerate(sim.jobdata.frame["job_id"])}
    assert sim.jobdata.slots[[idx[i] for i in range(1, 10)]].tolist() == [2, 2, 2, 2, 4, 2, 1, 2, 2]
    log = dict(sim.reservation_log)
    assert log[1.0][idx[5]] == 60.0  # W's shadow time, in slots
    assert log[55.0][idx[5]] == 60.0 and idx[7] not in log[55.0]  # Q2 held behind W's reservation
    runs = res.allocations
    on = {int(a): (int(f), int(c)) for a, f, c in zip(runs["job_id"], runs["node_first"], runs["node_count"])}
    assert on[1] == on[2] == (4, 1) and on[3] == on[4] == (5, 1)
    assert on[5] == (5, 1) and on[6] == (5, 1) and on[7] == (5, 1)
    assert on[8] == (0, 2) and on[9] == (2, 2)  # whole cpu nodes, one job each
    assert res.info["share_jobs_split"] == 0


def test_power_by_share_and_energy_closure():
    # gpu node: 1 CPU 50-100 W, 2 GPUs 50-500 W: idle 150 W, max 1,100 W. A half-node job at cpu 0.5, gpu 0.5
    # draws 50 + 25 + 2 x (50 + 225) = 625 W alone: dynamic 475 W. Two on a node: 150 + 2 x 475 = 1,100 W (the
    # cap, just reached); each is charged 75 + 475 = 550 W. Interval [0, 10): nodes 4 and 5 at 1,100 W each;
    # cpu C on 2 nodes at 300 W + D from t=1 on 2 nodes (300 W for 9 s, idle 100 W for 1 s).
    sim, res = _run()
    dc0 = res.facility["P_node_dc_W"][0]
    assert dc0 == pytest.approx(2 * 1100.0 + 2 * 300.0 + 2 * (0.9 * 300.0 + 0.1 * 100.0), rel=1e-12)
    j = res.jobs.set_index("job_id")
    # H1 shares node 4 with H2 for its whole 100 s: 550 W x 100 s
    assert j.loc[1, "energy_dc_J"] == pytest.approx(550.0 * 100.0, rel=1e-12)
    # Q1 (50-55) shares node 5 with H4 (2 slots each): 550 W x 5 s
    assert j.loc[6, "energy_dc_J"] == pytest.approx(550.0 * 5.0, rel=1e-12)
    # H4 (0-60): with H3 to 50 (550 W), alone 50-55 except Q1 (550 W), alone 55-60: the whole node, 625 W
    assert j.loc[4, "energy_dc_J"] == pytest.approx(550.0 * 55.0 + 625.0 * 5.0, rel=1e-12)
    # W alone on node 5 (60-90), a whole node at cpu 1, gpu 1: 1,100 W
    assert j.loc[5, "energy_dc_J"] == pytest.approx(1100.0 * 30.0, rel=1e-12)
    # Q2 (1 slot, cpu 0.25, gpu 0.25: 50 + 12.5 + 2 x (50 + 112.5) = 387.5 W alone) alone on node 5 (90-110)
    assert j.loc[7, "energy_dc_J"] == pytest.approx(387.5 * 20.0, rel=1e-12)
    t = res.totals
    assert res.jobs["energy_dc_J"].sum() + t["E_idle_node_dc_J"] == pytest.approx(t["E_node_dc_J"], rel=1e-9)
    assert res.jobs["energy_it_J"].sum() + t["E_idle_node_it_J"] == pytest.approx(t["E_it_J"], rel=1e-9)
    al = res.allocations
    assert (al["it_power_W"] * (al["end_s"] - al["start_s"])).sum() == pytest.approx(
        res.jobs["energy_it_J"].sum(), rel=1e-9)
    # the attribution (an independent integration of the allocation runs) closes on the shared run too
    from scheduler_sim.analysis.attribution import attribute
    att = attribute(res, sim.system)
    assert att.totals["closure_rel_error"] < 1e-9
    assert att.jobs["E_node_dc_J"] == pytest.approx(res.jobs["energy_dc_J"].to_numpy(), rel=1e-12)
    assert att.jobs["E_it_J"] == pytest.approx(res.jobs["energy_it_J"].to_numpy(), rel=1e-12)
    # per partition: the gpu partition's node-hours count shares (2 of 4 slots = half a node)
    parts = res.partitions
    # slot-seconds / 4 slots per node: H1, H2 2 x 100, H3 2 x 50, H4 2 x 60, W 4 x 30, Q1 2 x 5, Q2 1 x 20
    gpu_node_s = (2 * 100 + 2 * 100 + 2 * 50 + 2 * 60 + 4 * 30 + 2 * 5 + 1 * 20) / 4.0
    assert parts["node_hours"][1] * 3600.0 == pytest.approx(gpu_node_s, rel=1e-12)
    assert res.jobs.set_index("job_id")["node_share"].loc[[1, 5, 7, 8]].tolist() == [0.5, 1.0, 0.25, 2.0]


def test_cap_at_node_maximum():
    # two tenants whose dynamic powers add to more than the node's room (max - idle): the node draws its maximum
    # and the tenants share the capped dynamic power in proportion to their own
    t = SlotTable(lo=4, n=1, slots=4)
    t.allocate(10, 2, np.array([True]), np.array([0]))
    t.allocate(11, 2, np.array([True]), np.array([0]))
    t.dyn_W = {10: 600.0, 11: 900.0}
    dc, ch = node_power_by_share(t, np.array([4]), np.array([150.0]), 1100.0)
    assert dc.tolist() == [1100.0]
    # room 950 W split 600 : 900 -> 380 and 570 W, plus half of the idle 150 W each
    assert ch[10][1].tolist() == pytest.approx([75.0 + 380.0]) and ch[11][1].tolist() == pytest.approx([75.0 + 570.0])


def test_slot_placement_best_fit_then_split():
    # 3 nodes x 4 slots: a 3-slot job takes node 0; a 2-slot job goes to node 1 (node 0 has only 1 free slot);
    # a 1-slot job goes to the fullest node with room: node 0; a 4-slot job takes the empty node 2; a 2-slot job
    # then fits only on node 1 (2 free); no slot is left for a 1-slot job
    t = SlotTable(lo=0, n=3, slots=4)
    av, rk = np.ones(3, dtype=bool), np.arange(3)
    assert t.allocate(1, 3, av, rk).tolist() == [0]
    assert t.allocate(2, 2, av, rk).tolist() == [1]
    assert t.allocate(3, 1, av, rk).tolist() == [0]
    assert t.allocate(4, 4, av, rk).tolist() == [2]
    assert t.allocate(5, 2, av, rk).tolist() == [1]
    with pytest.raises(ValueError, match="only 0 are free"):
        t.allocate(6, 1, av, rk)
    t.release(1)  # node 0: 3 free; node 1: 0 free; a 4-slot job has no whole node: split over node 0 and ...
    t.release(5)  # ... node 1 (2 free): 3 + 1
    assert t.allocate(7, 4, av, rk).tolist() == [0, 1] and t.n_split == 1


def test_whole_node_partition_unchanged_by_a_sharing_neighbour():
    # the cpu jobs alone give the same schedule and energy with or without the gpu partition sharing
    cpu_rows = [r for r in ROWS if r[5] == "cpu"]
    a = _run(cpu_rows)[1].jobs
    spec = two_partition_spec()
    sysm = System.from_spec(spec, source="two")
    b = Simulation(_jobs(cpu_rows), sysm, "easy",
                   SimulationConfig(window_start_s=0.0, window_s=1e6, step_s=10.0, interval_s=10.0), plant=None).run().jobs
    assert a["sim_start_s"].tolist() == b["sim_start_s"].tolist()
    assert a["energy_it_J"].tolist() == b["energy_it_J"].tolist()


def test_share_on_a_serving_partition_refused():
    spec = shared_spec()
    spec["partition"][1]["kind"] = "serving"
    with pytest.raises(SystemFileError, match="share = true needs kind = 'batch'"):
        System.from_spec(spec, source="bad.toml")


def test_alibaba_fractional_gpu_pods_share_a_node(tmp_path):
    # Alibaba pods (qos in the queue column, the GPU model in gpu_spec) on cpu (whole nodes) + gpu (shared, 4
    # slots per 2-GPU node, trace name V100): the GPU model maps the GPU pods to gpu although their qos does not
    # map; shares (jobs.shares, with the gpu node type: 2 GPUs, 1 core; 0.25 core each) 0.5 GPU -> 1/4 node = 1
    # slot, 1 GPU -> 2 slots. The three GPU pods start together on node 4 (best fit: 1 + 2 + 1 = 4 slots), node 5 stays idle; the
    # CPU-only pod (no GPU model -> the default, cpu) gets a whole cpu node.
    from dataloaders.alibaba import read_alibaba_pods
    from scheduler_sim.app.config import RunConfig
    from scheduler_sim.app.runner import _apply_shares

    p = tmp_path / "pods.csv"
    p.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
                 "scheduled_time\n"
                 "pod-1,250,1024,1,500,V100,BE,Succeeded,0,100,0\n"
                 "pod-2,250,1024,1,1000,V100|P100,LS,Succeeded,0,100,0\n"
                 "pod-3,250,1024,1,500,V100,LS,Succeeded,0,100,0\n"
                 "pod-4,1000,1024,0,0,,BE,Succeeded,0,100,0\n")
    spec = shared_spec()
    spec["partition"][1]["trace_names"] = ["V100"]
    sysm = System.from_spec(spec, source="shared")
    jobs, notes = _apply_shares(read_alibaba_pods(p).jobs, RunConfig(), sysm)
    assert any("partition gpu shares its nodes" in n for n in notes)
    sim = Simulation(jobs, sysm, "easy", SimulationConfig(window_start_s=0.0, window_s=1e6, step_s=10.0,
                                                          interval_s=10.0), plant=None)
    res = sim.run()
    j = res.jobs.set_index("trace_job_id")
    assert j["partition"].to_dict() == {"pod-1": "gpu", "pod-2": "gpu", "pod-3": "gpu", "pod-4": "cpu"}
    assert j["node_share"].to_dict() == {"pod-1": 0.25, "pod-2": 0.5, "pod-3": 0.25, "pod-4": 1.0}
    assert (j["sim_start_s"] == 0.0).all()
    runs = res.allocations
    on = dict(zip(runs["job_id"], runs["node_first"]))
    assert [on[int(j.loc[f"pod-{k}", "job_id"])] for k in (1, 2, 3, 4)] == [4, 4, 4, 0]
    mapping = {(r["partition"], r["rule"]): r["jobs"] for r in res.info["partition_mapping"]}
    assert mapping == {("gpu", "by gpu_spec"): 3, ("cpu", "default"): 1}
    # power by share: the gpu partition's defaults are cpu 1.0, gpu 1.0, so a pod runs at share x 1.0 (jobs.shares):
    # pod-1, pod-3: cpu 0.25, gpu 0.25 -> dynamic 0.25 x 50 + 2 x 0.25 x 450 = 237.5 W; pod-2: cpu 0.25, gpu 0.5
    # -> 12.5 + 450 = 462.5 W. Node 4: 150 + 937.5 = 1,087.5 W (under the 1,100 W cap); node 5 idle 150 W;
    # pod-4 on node 0 at 300 W and 3 idle cpu nodes at 100 W
    assert res.facility["P_node_dc_W"][0] == pytest.approx(1087.5 + 150.0 + 300.0 + 3 * 100.0, rel=1e-12)
    # each pod pays its slots' part of the idle 150 W (1 : 2 : 1 of 4 occupied slots) and its own dynamic power
    assert j.loc["pod-2", "energy_dc_J"] == pytest.approx((75.0 + 462.5) * 100.0, rel=1e-12)
    assert j.loc["pod-1", "energy_dc_J"] == pytest.approx((37.5 + 237.5) * 100.0, rel=1e-12)


def test_node_down_kills_every_tenant_and_energy_still_closes():
    # a maintenance of node 4 over [30, 40): both tenants there (H1, H2, half a node each, to 100) are killed at 30
    # and requeued; the tenants of node 5 run on. Every job still ends, no slot is left held, and the energy closes.
    sim, res = _run(downtimes=[(30.0, 40.0, np.array([4]))], on_failure="requeue")
    j = res.jobs.set_index("job_id")
    assert j["requeues"].to_dict() == {1: 1, 2: 1, 3: 0, 4: 0, 5: 0, 6: 0, 7: 0, 8: 0, 9: 0}
    assert j["lost_node_s"].loc[[1, 2]].tolist() == [0.5 * 30.0, 0.5 * 30.0]  # half a node for 30 s each
    assert (j["outcome"] == 1).all()  # every job completed in the end
    assert j["sim_start_s"].loc[[1, 2]].tolist() == [40.0, 40.0]  # restarted together when node 4 is back
    tbl = sim.state.alloc.shared[4]
    assert not tbl.held and (tbl.used == 0).all()
    t = res.totals
    assert res.jobs["energy_dc_J"].sum() + t["E_idle_node_dc_J"] == pytest.approx(t["E_node_dc_J"], rel=1e-9)
    assert res.jobs["energy_it_J"].sum() + t["E_idle_node_it_J"] == pytest.approx(t["E_it_J"], rel=1e-9)


def test_one_sharing_partition_four_half_node_jobs_start_together():
    # a system of one [[partition]] (2 gpu nodes, 4 slots each, shared): four half-node jobs (to 100, 100, 50, 50)
    # start together at 0 on the 2 nodes; the whole-node job (submitted at 1) waits for the two that end at 50
    # (same node, best fit) and starts at 50
    from tests.integration.test_partitions import GPU_NODE
    from tests.conftest import tiny_system_spec

    spec = tiny_system_spec()
    spec["topology"] = {"n_cdus": 1, "rack_positions_per_cdu": 1}
    del spec["node"]
    spec["partition"] = [{"name": "gpu", "node": GPU_NODE, "nodes": 2, "nodes_per_rack": 2, "share": True,
                          "share_slots": 4}]
    sysm = System.from_spec(spec, source="one-shared")
    assert not sysm.partitioned and sysm.shares
    rows = [(1, 0, 1, 100, 100, "", 1.0, 0.5, 0.5), (2, 0, 1, 100, 100, "", 1.0, 0.5, 0.5),
            (3, 0, 1, 50, 50, "", 1.0, 0.5, 0.5), (4, 0, 1, 50, 50, "", 1.0, 0.5, 0.5),
            (5, 1, 1, 30, 30, "", np.nan, 1.0, 1.0)]
    res = Simulation(_jobs(rows), sysm, "easy", SimulationConfig(window_start_s=0.0, window_s=1e6, step_s=10.0,
                                                                 interval_s=10.0), plant=None).run()
    j = res.jobs.set_index("job_id")
    assert j["sim_start_s"].to_dict() == {1: 0, 2: 0, 3: 0, 4: 0, 5: 50}
    assert "partition" not in res.jobs.columns and j["node_share"].tolist() == [0.5] * 4 + [1.0]
    t = res.totals
    assert res.jobs["energy_it_J"].sum() + t["E_idle_node_it_J"] == pytest.approx(t["E_it_J"], rel=1e-9)
