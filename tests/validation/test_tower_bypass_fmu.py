"""Validation: the tower bypass in the compiled FMU (rumoca 0.9.13) against the numpy mirror, the analytic steady
state and a January run of the shipped Theta trace (Chicago weather)."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from cooling_fmu.modelica import analytic_steady_state, plant_equations, state_vector
from cooling_fmu.plant import CoolingPlant
from scheduler_sim.app.cli import main

pytestmark = pytest.mark.fmu

T_MIN = 278.15  # tower.T_leaving_min_K of the shipped plants (5 C)


@pytest.fixture(scope="module")
def theta(fmu_cache):
    with CoolingPlant("theta", step_s=15.0, cache_dir=fmu_cache) as plant:
        yield plant


def test_fmu_equals_mirror_with_bypass_active(theta):
    p = theta.params
    rng = np.random.default_rng(7)
    active = 0
    for _ in range(8):
        x = state_vector(p, rng.uniform(285, 310, 6), rng.uniform(0.0, 1.0, 6), rng.uniform(278, 285),
                         rng.uniform(280, 290), rng.uniform(-0.5, 0.5), rng.uniform(272, 282))
        q = rng.uniform(0, 0.4 * p.cdu.Q_flow_nominal_W, 6)
        T_wb = rng.uniform(245, 265)  # -28 .. -8 C
        ref = plant_equations(p, x, q, T_wb)
        theta.reset()
        y = theta.initialize(q, T_wb, initial_state=x)
        for key in ("T_tower_out", "T_cw_ret", "Q_flow_tower", "m_flow_evap", "P_fan_tower", "T_fac_sup"):
            assert y[theta.index(key)] == pytest.approx(ref[key], rel=1e-12, abs=1e-9), key
        active += ref["T_tower_out"] in (T_MIN, ref["T_cw_ret"])  # valve holding the minimum, or all water bypassed
    assert active == 3  # plant v5 (Braun, air-limited at low fan speed): 3 of the 8 draws have the valve open


def test_cold_part_load_holds_the_minimum_and_settles_at_analytic(theta):
    p = theta.params
    T_wb = 258.15  # -15 C
    q_hi = 0.05 * p.cdu.Q_flow_nominal_W * np.linspace(0.7, 1.3, 6)  # plant v5: the bypass holds at 5 % load
    q_lo = 0.1 * q_hi
    theta.reset()
    theta.initialize(q_hi, T_wb, steady=True)
    heat = np.vstack([np.tile(q_hi, (240, 1)), np.tile(q_lo, (960, 1)), np.tile(q_hi, (1680, 1))])  # 12 h at 15 s
    out = theta.run(heat, np.full(len(heat), T_wb))
    names = ["T_tower_out", "T_cw_sup", "T_cw_ret", "T_fac_sup", "T_fac_ret"] + [f"T_sec_sup[{i}]" for i in
                                                                                  range(1, 7)]
    for name in names:
        assert out[:, theta.index(name)].min() >= T_MIN - 1e-6, name
    ss = analytic_steady_state(p, q_hi, T_wb)
    # plant v5: the bypass holds the leaving water at the minimum; the tower pumps' shaft heat (into the water since
    # plant v5) puts the reported leaving temperature 0.01 K above it
    assert ss["T_tower_out"] == pytest.approx(T_MIN, abs=0.02)
    for key in ("T_tower_out", "T_cw_sup", "T_fac_sup", "T_fac_ret", "Q_flow_tower"):
        # plant v5: the FMU is 1.4e-4 from the analytic rest point at the end of the window (pump heat, staging)
        assert out[-1, theta.index(key)] == pytest.approx(ss[key], rel=5e-4, abs=1e-4), key


def test_january_theta_window_has_no_freezing_water(tmp_path, capsys):
    out = tmp_path / "jan.h5"
    assert main(["run", "--start-day", "0", "--days", "3", "--quiet", "--out", str(out)]) == 0
    text = capsys.readouterr()
    assert "below 2 degC" not in text.out + text.err
    with h5py.File(out) as f:
        wb = f["timeseries/facility/T_wb_K"][...]
        assert wb.min() < 263.15  # the window really is a freezing one
        for name in ("T_tower_out", "T_cw_sup", "T_cw_ret", "T_fac_sup", "T_fac_ret"):
            assert f[f"timeseries/facility/{name}"][...].min() >= T_MIN - 1e-6, name
        assert f["timeseries/cdu/T_sec_sup"][...].min() >= T_MIN - 1e-6
