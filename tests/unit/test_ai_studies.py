"""The issue-24 study scripts' building blocks: the 4,096-GPU training scenario and its closed-form spectrum,
and the 512-GPU RL scenarios (sizes as documented)."""

from __future__ import annotations

import math

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
