"""The pure parts of the #15 studies: the battery sweep of the ramp study and the study configurations."""

import numpy as np

from experiments import grid_demand_response as dr
from experiments import grid_ramps_battery as rb


def test_battery_sweep_meets_the_limit_with_a_large_battery():
    # 2 h at 1 s: a 6 MW step up and down every 20 min on 15 MW (the 5 MW/min limit is broken at each edge)
    t = np.arange(7200)
    load = 15e6 + 6e6 * ((t // 1200) % 2)
    rows = rb.battery_sweep(load.astype(float), 1.0)
    assert [r["battery_MW"] for r in rows] == list(rb.BATTERY_MW)
    assert rows[0]["minutes_over_limit"] == 5  # the 5 edges, each in one pair of consecutive minutes
    assert rows[0]["ramp_1s_MW"] == 6.0
    big = rows[-1]  # 16 MW / 4 MWh: each edge needs at most 6 MW for 72 s
    assert big["minutes_over_limit"] == 0 and big["ramp_1s_MW"] <= 5.0 / 60 * (1 + 1e-9)
    for r in rows[1:]:
        assert abs(r["balance_residual_J"]) < 1e-9 * 3.6e9 * 16
        assert r["battery_loss_MWh"] > 0


def test_study_configs_validate(tmp_path):
    c = rb.config("x", tmp_path / "t.swf", True, True)
    assert c.grid.ramp_limit_MW_per_min == rb.RAMP_MW_PER_MIN and c.grid.power_profile.floor_W == rb.FLOOR_W
    d = dr.config("y", tmp_path / "t.swf", {"start_day": 0.5, "duration_h": 0.5, "reduction_fraction": 0.1,
                                             "reference_MW": 17.0})
    assert d.grid.event[0].reduction_fraction == 0.1 and d.serving.offset_s == dr.SERVING_START_S
    assert dr.config("z", tmp_path / "t.swf", None).grid is None
