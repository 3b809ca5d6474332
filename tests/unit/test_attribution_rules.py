"""Attribution rules on a hand-built run whose shares can be computed on paper."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from scheduler_sim.attribution import attribute
from scheduler_sim.compare import decompose, log_mean


def _hand_run():
    # 2 CDUs, 3 intervals of 60 s. job 0: [30, 150) s, 100 W in CDU 0; job 1: [0, 60) s, 200 W in CDU 1.
    # Idle nodes: 50 W in each CDU all the time.  Heat per interval (W): CDU0 100, 150, 100; CDU1 250, 50, 50.
    Q = np.array([[100.0, 250.0], [150.0, 50.0], [100.0, 50.0]])
    it = Q.sum(axis=1)
    fac = {"P_it_W": it, "P_node_dc_W": 0.8 * it, "P_sivoc_loss_W": 0.15 * it, "P_rectifier_loss_W": 0.05 * it,
           "P_rack_overhead_W": 0.0 * it, "P_pump_fac": np.full(3, 6.0), "P_fan_tower": np.zeros(3),
           "P_cooling_W": np.full(3, 26.0), "T_wb_K": np.full(3, 290.0)}
    cdu = {"Q_flow_W": Q, "P_pump_sec": np.full((3, 2), 10.0), "T_sec_sup": np.array([[300.0, 301.0]] * 3)}
    jobs = pd.DataFrame({"job_id": [7, 8], "sim_start_s": [30.0, 0.0], "sim_end_s": [150.0, 60.0], "nodes": [1, 1],
                         "node_power_W": [80.0, 160.0], "energy_dc_J": [9600.0, 9600.0]})
    E_it = float(it.sum() * 60)  # 42000 J
    totals = {"E_it_J": E_it, "E_cdu_heat_J": E_it, "E_node_dc_J": 0.8 * E_it, "E_sivoc_loss_J": 0.15 * E_it,
              "E_rectifier_loss_J": 0.05 * E_it, "E_rack_overhead_J": 0.0, "E_cooling_J": 26.0 * 180,
              "E_facility_J": E_it + 26.0 * 180, "E_idle_node_it_J": 18000.0, "E_idle_node_dc_J": 14400.0,
              "E_partition_node_it_J": 0.0, "E_partition_node_dc_J": 0.0, "duration_s": 180.0}
    return SimpleNamespace(jobs=jobs, time_s=np.array([0.0, 60.0, 120.0]), facility=fac, cdu=cdu,
                           rack={"P_in_W": Q}, totals=totals, job_cdu_it_W=np.array([[100.0, 0.0], [0.0, 200.0]]))


def test_shares_by_hand():
    att = attribute(_hand_run(), None, T_supply_limit_K=300.4)
    J = att.jobs
    # IT: job 0 runs 120 s at 100 W, job 1 60 s at 200 W
    assert J["E_it_J"] == pytest.approx([12000.0, 12000.0], rel=1e-12)
    # CDU pumps (600 J per CDU per interval) by CDU heat share:
    # job 0: 3000/6000*600 + 6000/9000*600 + 3000/6000*600 = 1000; job 1: 12000/15000*600 = 480
    assert J["E_cdu_pump_J"] == pytest.approx([1000.0, 480.0], rel=1e-12)
    # facility pump (360 J per interval) by facility heat share:
    # job 0: 3000/21000*360 + 6000/12000*360 + 3000/9000*360 = 351.43; job 1: 12000/21000*360 = 205.71
    assert J["E_facility_pump_J"] == pytest.approx([360 / 7 + 180 + 120, 1440 / 7], rel=1e-12)
    # idle = remainder: pumps 3600 - 1480 = 2120 J, IT 42000 - 24000 = 18000 J (= E_idle_node_it_J)
    assert att.pseudo["E_cdu_pump_J"][0] == pytest.approx(2120.0, rel=1e-12)
    assert att.pseudo["E_it_J"][0] == pytest.approx(18000.0, rel=1e-12)
    assert att.totals["closure_rel_error"] < 1e-12
    assert J["PUE_effective"][1] == pytest.approx((12000 + 480 + 1440 / 7) / 12000, rel=1e-12)
    # conversion split without a system: the job's IT - DC (12000 - 9600) in facility proportions 0.15 : 0.05
    assert J["E_sivoc_loss_J"][0] == pytest.approx(2400 * 0.75, rel=1e-12)
    # supply above limit + 0.5 K tolerance (300.9 K) only in CDU 1 (301.0 K), for 3 intervals
    assert list(att.cdu["time_above_limit_s"]) == [0.0, 180.0]
    # 301.0 K is within the tolerance of a 300.5 K limit: not an excursion
    assert list(attribute(_hand_run(), None, T_supply_limit_K=300.5).cdu["time_above_limit_s"]) == [0.0, 0.0]
    for k in ("E_it_J", "E_cdu_pump_J", "E_facility_pump_J", "E_cooling_J", "E_facility_J", "E_sivoc_loss_J"):
        assert J[k].sum() + att.pseudo[k].sum() == pytest.approx(att.totals[k], rel=1e-12)


def test_partition_takes_its_share_of_the_remainder():
    run = _hand_run()
    run.totals.update(E_idle_node_it_J=13500.0, E_partition_node_it_J=4500.0)
    att = attribute(run, None)
    assert att.pseudo["E_it_J"] == pytest.approx([13500.0, 4500.0], rel=1e-12)
    assert att.pseudo["E_cdu_pump_J"] == pytest.approx([2120 * 0.75, 2120 * 0.25], rel=1e-12)


def test_decomposition_is_exact_and_signed():
    A = {"E_compute_J": 100.0, "E_loss_J": 15.0, "E_heat_J": 115.0, "E_cooling_J": 2.0, "E_it_J": 115.0}
    B = {"E_compute_J": 110.0, "E_loss_J": 16.0, "E_heat_J": 126.0, "E_cooling_J": 2.6, "E_it_J": 126.0}
    e, p = decompose(A, B)
    assert e.sum() == pytest.approx((126 + 2.6) - (115 + 2.0), rel=1e-12)  # facility = IT + cooling
    assert p.sum() == pytest.approx(2.6 / 126 - 2 / 115, rel=1e-12)
    # more heat -> more cooling; more cooling per joule of heat (2.6/126 > 2/115) -> positive efficiency term
    assert e["cooling: heat load"] == pytest.approx(log_mean(2.0, 2.6) * np.log(126 / 115), rel=1e-12)
    assert e["cooling: plant efficiency"] > 0
    # more IT dilutes PUE: the compute and loss links lower it
    assert p["scheduling -> compute"] < 0 and p["conversion losses"] < 0
    e0, p0 = decompose(A, A)
    assert (e0 == 0).all() and (p0 == 0).all()
