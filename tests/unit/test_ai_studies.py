"""The issue-24 study scripts' building blocks: the 4,096-GPU training scenario and its closed-form spectrum,
and the 512-GPU RL scenarios (sizes as documented)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from experiments import rl_sync_async, training_4k


def test_training_study_scenario_and_spectrum():
    cfg = training_4k.config("x", 1800.0)
    assert cfg.workload[0].layout.tp * cfg.workload[0].layout.pp * cfg.workload[0].layout.dp == 4096
    rows, s = training_4k.spectrum_rows(cfg, n_harmonics=3)
    plain, floor = s["plain"], s[f"floor {training_4k.FLOOR_UTIL:g}"]
    assert plain["period_s"] == floor["period_s"] and len(rows) == 6
    # a floor narrows the swing and the 1 s ramp and costs energy
    assert floor["swing_MW"] < plain["swing_MW"] and floor["ramp_1s_MW"] < plain["ramp_1s_MW"]
    assert floor["energy_cost_pct"] > 0 and plain["energy_cost_pct"] == 0
    # harmonic k at k / t_iter; amplitude 2 |c_k| <= V / (pi k) with V <= 2 S the total variation over a period
    for r in rows:
        S = plain["swing_MW"] if r["profile"] == "plain" else floor["swing_MW"]
        assert r["f_Hz"] == pytest.approx(r["harmonic"] / plain["period_s"], rel=1e-12)
        assert 0 < r["amplitude_MW"] <= 2 * S / (math.pi * r["harmonic"]) * (1 + 1e-9)


def test_rl_study_sizes():
    c = rl_sync_async.config("async k=2", "async", 2, 0)
    bg, rl = c.workload
    gpus = rl.rl.rollout_replicas * rl.rl.rollout_tp + rl.layout.tp * rl.layout.pp * rl.layout.dp
    assert gpus == 512 and rl.rl.prompts * rl.rl.group == 2048 and rl.rl.staleness == 2
    assert rl.rl.steps == rl_sync_async.STEPS and rl.family == "rl" and c.system == "h100_4k"
    # the background pre-training job fills the other 448 nodes of the 512-node cluster
    assert bg.layout.tp * bg.layout.pp * bg.layout.dp == 4096 - 512
    assert c.trace.window_days * 24 > rl_sync_async.RL_START_H


def test_training_study_battery_rows_on_hand_made_steps():
    """Steps down at t = 300 s in 1,200 s of 1 s bins (a restart dip). 10 -> 4 MW without a battery: the grid sees
    the 6 MW step (1 s ramp 6 MW; the 60 s means around it differ by up to 6 MW > 5 MW/min: minutes over the limit).
    4 -> 2 MW with a 4 MW / 1 MWh battery: the grid is held to the limit (1 s ramp <= 5/60 MW, none over it) and the
    battery's energy balance closes; a 2 MW step alone is within 5 MW/min (no minute over it without a battery)."""
    x = np.full(1200, 10e6)
    x[300:] = 4e6
    r0 = training_4k.battery_rows(x, 1.0, 7.654)[0]
    assert r0["battery_MW"] == 0.0 and r0["ramp_1s_MW"] == pytest.approx(6.0, rel=1e-12)
    assert r0["minutes_over_limit"] >= 1 and r0["battery_loss_MWh"] == 0.0
    assert r0["grid_min_MW"] == pytest.approx(4.0, rel=1e-12)
    y = np.full(1200, 4e6)
    y[300:] = 2e6
    rows = {r["battery_MW"]: r for r in training_4k.battery_rows(y, 1.0, 7.654)}
    assert rows[0.0]["ramp_1s_MW"] == pytest.approx(2.0, rel=1e-12) and rows[0.0]["minutes_over_limit"] == 0
    big = rows[4.0]
    assert big["ramp_1s_MW"] <= 5.0 / 60.0 * (1 + 1e-9) and big["minutes_over_limit"] == 0
    assert big["battery_loss_MWh"] > 0 and abs(big["balance_residual_J"]) < 1e-3
