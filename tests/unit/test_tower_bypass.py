"""Unit tests: tower bypass (cold-weather freeze protection) in the numpy mirror and the analytic steady state.

Hand numbers: the bypass holds the tower leaving water at ``tower.T_leaving_min_K`` (278.15 K by default, SPX
"Operating cooling towers in freezing weather": cold water at or above 40 F); the heat rejected then follows from
the IHX at that basin temperature, the bypass fraction from the energy balance.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from cooling_fmu.components import tower
from cooling_fmu.modelica import analytic_steady_state, plant_equations, tower_bypass_fraction
from cooling_fmu.params import PlantParamsError, load_plant_params


def test_default_minimum_and_validation(tmp_path):
    p = load_plant_params("theta")
    assert p.tower.T_leaving_min_K == 278.15  # documented default: 5 C
    text = (load_plant_params.__globals__["PLANTS_DIR"] / "theta.toml").read_text()
    for value in ("273.0", "300.0"):  # at/below freezing; above the 297.15 K facility supply setpoint
        bad = tmp_path / f"bad{value}.toml"
        bad.write_text(text.replace("T_leaving_min_K = 278.15 ", f"T_leaving_min_K = {value} "))
        with pytest.raises(PlantParamsError) as exc:
            load_plant_params(bad)
        assert str(bad) in str(exc.value) and "T_leaving_min_K" in str(exc.value)


def test_steady_state_with_bypass_matches_hand_computation():
    # plant v5: at 5 % load and -15 C (Chicago January extreme) the Braun tower at one fan's minimum speed over-cools:
    # the tower bypass holds the basin at T_min and the IHX bypass holds the facility supply at set point - 0.25 K
    p = load_plant_params("theta")
    cp, T_min, T_wb = p.cp_water_J_kgK, 278.15, 258.15
    q = 0.05 * p.cdu.Q_flow_nominal_W * np.linspace(0.7, 1.3, p.n_cdu)
    ss = analytic_steady_state(p, q, T_wb)
    assert ss["regime"] == "fan_floor"
    assert ss["y_fan"] == pytest.approx(0.2 / 4)  # one cell at its 20 % minimum speed
    # plant v5: the pumps' shaft work enters the water. By hand (the arithmetic of test_cooling_params): every CDU
    # pump at its 0.3 floor, 1,834.07 W x 0.1635; the facility pump at w = 0.2 (valves at 0.2), its set point reset
    # to 0.3: 25,516.5 W x 0.2 (0.09 / 3 + 2 / 3 x 0.04); the tower pumps at their 0.5 floor: 15,309.9 W x 0.25
    sh_fac_loop = 6 * 6.4 / 997 * 200e3 / 0.70 * 0.1635 + 63.6 / 997 * 300e3 / 0.75 * 0.2 * (0.03 + 0.08 / 3)
    sh_cw = 63.6 / 997 * 180e3 / 0.75 * 0.25
    assert sh_fac_loop == pytest.approx(2088.41, abs=0.01) and sh_cw == pytest.approx(3827.48, abs=0.01)
    m_fac, m_cw = 6 * 0.2 * 10.6, 0.5 * 63.6
    assert ss["m_flow_fac"] == pytest.approx(m_fac, rel=1e-12) and ss["m_flow_cw"] == pytest.approx(m_cw, rel=1e-12)
    # the tower bypass holds the cells' leaving water at T_min; the tower pumps' heat then warms the basin above
    # it by sh_cw / (m_cw cp) = 3,827.48 / (31.8 x 4186) = 0.0288 K
    assert ss["T_tower_out"] == pytest.approx(T_min, abs=1e-9)
    assert ss["T_cw_sup"] == pytest.approx(T_min + sh_cw / (m_cw * cp), abs=1e-9)
    assert ss["T_cw_sup"] - T_min == pytest.approx(0.0288, abs=1e-4)
    assert ss["T_fac_sup"] == pytest.approx(p.tower.T_fac_sup_set_K - 0.25, abs=1e-9)
    Q = float(q.sum())
    assert ss["Q_flow_chiller"] == 0.0
    assert ss["Q_flow_tower"] == pytest.approx(Q + sh_fac_loop + sh_cw, rel=1e-9)
    assert ss["Q_flow_ihx"] == pytest.approx(Q + sh_fac_loop, rel=1e-9)
    Q_ihx = Q + sh_fac_loop
    assert ss["T_fac_ret"] == pytest.approx(ss["T_fac_sup"] + Q_ihx / (m_fac * cp), rel=1e-12)
    assert ss["T_cw_ret"] == pytest.approx(ss["T_cw_sup"] + Q_ihx / (m_cw * cp), rel=1e-12)
    # IHX by hand (Incropera eq. 11.29a): with the whole flow it would pass more than Q; the bypass passes Q
    C_min, C_max = cp * min(m_fac, m_cw), cp * max(m_fac, m_cw)
    ntu, cr = p.tower_loop.UA_ihx_W_K / C_min, C_min / C_max
    z = math.exp(-ntu * (1 - cr))
    eps_i = (1 - z) / (1 - cr * z) if cr < 0.999999 else ntu / (1 + ntu)
    assert eps_i * C_min * (ss["T_fac_ret"] - ss["T_cw_sup"]) > Q_ihx
    # tower bypass fraction from the energy balance: cells with the whole flow would reject Q_cells (Braun)
    c, n = tower.braun_coefficients(p.tower.NTU_nominal, p.tower.n_merkel, p.tower.LG_nominal)
    Q_cells = tower.braun_effectiveness(c, n, m_cw, ss["y_fan"] * p.m_air_nominal_kg_s, ss["T_cw_ret"], T_wb,
                                        p.tower.p_atm_Pa, cp)[0]
    b = tower_bypass_fraction(Q_cells, ss["Q_flow_tower"])
    assert b == pytest.approx(1 - (Q_ihx + sh_cw) / Q_cells, rel=1e-9) and 0.0 < b < 1.0
    for k in ("T_fac_sup", "T_fac_ret", "T_cw_sup", "T_cw_ret", "T_tower_out"):
        assert ss[k] >= T_min - 1e-9
    assert np.all(ss["T_sec_sup"] >= T_min)
    assert 0.0 <= ss["m_flow_evap"] < (Q_ihx + sh_cw) / 2.45e6
    np.testing.assert_allclose(plant_equations(p, ss["x"], q, T_wb)["der"], 0.0, atol=1e-9)


def test_idle_cold_plant_holds_both_bypass_minimums():
    # no rack heat at -10 C. Plant v5: the pumps' shaft work is heat (2,088.41 W into the facility loop, 3,827.48 W
    # into the basin, by hand in the test above), so the plant is not at rest at the minimum: the tower bypass
    # holds the cells' leaving water at T_min, the tower pumps warm the basin 0.0288 K above it, and the IHX bypass
    # holds the facility supply at its set point - 0.25 K (not at the tower water's 5 C)
    p = load_plant_params("theta")
    cp, T_min = p.cp_water_J_kgK, 278.15
    ss = analytic_steady_state(p, np.zeros(6), 263.15)
    sh_fac_loop = 6 * 6.4 / 997 * 200e3 / 0.70 * 0.1635 + 63.6 / 997 * 300e3 / 0.75 * 0.2 * (0.03 + 0.08 / 3)
    sh_cw = 63.6 / 997 * 180e3 / 0.75 * 0.25
    m_fac, m_cw = 6 * 0.2 * 10.6, 0.5 * 63.6
    assert ss["regime"] == "fan_floor"
    assert ss["T_tower_out"] == pytest.approx(T_min, abs=1e-9)
    assert ss["T_cw_sup"] == pytest.approx(T_min + sh_cw / (m_cw * cp), abs=1e-9)
    assert ss["T_cw_ret"] == pytest.approx(ss["T_cw_sup"] + sh_fac_loop / (m_cw * cp), abs=1e-9)
    assert ss["T_fac_sup"] == pytest.approx(p.tower.T_fac_sup_set_K - p.tower_loop.ihx_bypass_below_set_K, abs=1e-9)
    assert ss["T_fac_ret"] == pytest.approx(ss["T_fac_sup"] + sh_fac_loop / (m_fac * cp), abs=1e-9)
    assert ss["Q_flow_ihx"] == pytest.approx(sh_fac_loop, rel=1e-9)
    assert ss["Q_flow_tower"] == pytest.approx(sh_fac_loop + sh_cw, rel=1e-9)
    np.testing.assert_allclose(ss["der"], 0.0, atol=1e-12)


def test_bypass_inactive_when_tower_leaves_above_minimum():
    # mild weather: cells leave above the minimum, the valve is closed and the result is the plain Braun tower
    p = load_plant_params("theta")
    q = 0.7 * p.cdu.Q_flow_nominal_W * np.ones(6)
    ss = analytic_steady_state(p, q, 283.15)
    c, n = tower.braun_coefficients(p.tower.NTU_nominal, p.tower.n_merkel, p.tower.LG_nominal)
    Q_cells = tower.braun_effectiveness(c, n, ss["m_flow_cw"], ss["y_fan"] * p.m_air_nominal_kg_s, ss["T_cw_ret"],
                                        283.15, p.tower.p_atm_Pa, p.cp_water_J_kgK)[0]
    assert ss["T_tower_out"] > 278.15 + 5
    assert ss["Q_flow_tower"] == pytest.approx(Q_cells, rel=1e-12)
    assert tower_bypass_fraction(Q_cells, ss["Q_flow_tower"]) == pytest.approx(0.0, abs=1e-12)


def test_mirror_bypass_limits_leaving_water_from_any_state():
    p = load_plant_params("theta")
    base = analytic_steady_state(p, 0.5 * p.cdu.Q_flow_nominal_W * np.ones(6), 258.15)
    x = base["x"].copy()
    for T_cw in (270.0, 276.0, 278.15, 280.0, 290.0):  # basin below, at and above the minimum
        x[-1] = T_cw
        out = plant_equations(p, x, 0.5 * p.cdu.Q_flow_nominal_W * np.ones(6), 248.15)
        # the valve mixes cell and bypass water: never below min(T_cw_ret, T_min), never above T_cw_ret (cooling)
        assert out["T_tower_out"] >= min(out["T_cw_ret"], 278.15) - 1e-12
        assert out["T_tower_out"] <= max(out["T_cw_ret"], 278.15)
        # heat rejected = water-side enthalpy drop across tower + bypass
        assert out["Q_flow_tower"] == pytest.approx(
            out["m_flow_cw"] * p.cp_water_J_kgK * (out["T_cw_ret"] - out["T_tower_out"]), rel=1e-9, abs=1e-6)
