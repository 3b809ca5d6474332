"""Unit tests: plant descriptions, generated Modelica, analytic steady state (exact numbers, arithmetic in comments)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from cooling_fmu.modelica import analytic_steady_state, generate_plant_modelica, model_name_for
from cooling_fmu.params import PlantParamsError, load_plant_params, plant_names


def test_shipped_plants_load():
    assert {"theta", "frontier"} <= set(plant_names())
    theta, frontier = load_plant_params("theta"), load_plant_params("frontier")
    assert theta.n_cdu == 6 and frontier.n_cdu == 25
    # Theta: 6 x 266.7 kW = 1.6002 MW design IT heat (4,392 nodes x ~350 W = 1.537 MW, rounded up)
    assert theta.n_cdu * theta.cdu.Q_flow_nominal_W == pytest.approx(1.6e6, rel=1e-3)
    # Frontier: 25 x 1.128 MW = 28.2 MW (RAPS full load)
    assert frontier.n_cdu * frontier.cdu.Q_flow_nominal_W == pytest.approx(28.2e6, rel=1e-9)


def test_validation_error_names_file_and_field(tmp_path):
    text = (load_plant_params.__globals__["PLANTS_DIR"] / "theta.toml").read_text()
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace("y_valve_min = 0.2 ", "y_valve_min = 1.5 "))
    with pytest.raises(PlantParamsError) as exc:
        load_plant_params(bad)
    assert str(bad) in str(exc.value) and "cdu.y_valve_min" in str(exc.value)
    missing = tmp_path / "missing.toml"
    no_ntu = re.sub(r"(?m)^NTU_nominal = .*$", "", text)
    assert no_ntu != text  # the line was there and is gone
    missing.write_text(no_ntu)
    with pytest.raises(PlantParamsError, match=r"tower\.NTU_nominal"):
        load_plant_params(missing)
    with pytest.raises(PlantParamsError, match="not found"):
        load_plant_params(tmp_path / "nope.toml")


def test_params_are_frozen():
    p = load_plant_params("theta")
    with pytest.raises(Exception):
        p.n_cdu = 7  # type: ignore[misc]


def test_generated_modelica_is_flat_and_sized():
    p = load_plant_params("theta")
    src = generate_plant_modelica(p)
    name = model_name_for(p)
    assert src.startswith(f"model {name}") and src.rstrip().endswith(f"end {name};")
    assert "connect(" not in src and "import" not in src and "Modelica." not in src
    assert "input Real Q_flow_CDU[6]" in src and "input Real T_wb(" in src
    assert "for i in 1:6 loop" in src


def test_analytic_steady_state_hand_numbers():
    p = load_plant_params("theta")
    cp = 4186.0
    # idle plant (no rack heat) at 15 C wet-bulb, every actuator at its floor. Plant v5: the pumps' shaft work
    # enters the water (it is the only heat), and the IHX bypass holds the facility water at its set point -
    # 0.25 K (tower_loop.ihx_bypass_below_set_K) instead of letting it fall towards the wet-bulb
    ss = analytic_steady_state(p, np.zeros(6), 288.15)
    assert ss["regime"] == "fan_floor"
    # shaft work by hand, P_shaft,nom x (x the load fractions derived below): secondary 6.4 / 997 x 200 kPa / 0.70
    # = 1,834.07 W at x = 0.1635 (x 6 CDUs); facility 63.6 / 997 x 300 kPa / 0.75 = 25,516.5 W at x = 0.011333;
    # tower water 63.6 / 997 x 180 kPa / 0.75 = 15,309.9 W at x = 0.25
    sh_sec = 6.4 / 997 * 200e3 / 0.70 * 0.3 * (0.5 + 0.5 * 0.09)
    sh_fac = 63.6 / 997 * 300e3 / 0.75 * 0.2 * (0.09 / 3 + 2 / 3 * 0.04)
    sh_cw = 63.6 / 997 * 180e3 / 0.75 * 0.5 * (1 / 3 + 2 / 3 * 0.25)
    assert 6 * sh_sec + sh_fac == pytest.approx(2088.41, abs=0.01) and sh_cw == pytest.approx(3827.48, abs=0.01)
    assert ss["Q_flow_pump_heat"] == pytest.approx(6 * sh_sec + sh_fac + sh_cw, rel=1e-12)
    assert ss["Q_flow_ihx"] == pytest.approx(6 * sh_sec + sh_fac, rel=1e-9)  # the facility loop's heat
    assert ss["Q_flow_tower"] == pytest.approx(6 * sh_sec + sh_fac + sh_cw, rel=1e-9)  # the towers reject it all
    m_sec, m_fac, m_cw = 0.3 * 6.4, 6 * 0.2 * 10.6, 0.5 * 63.6
    assert ss["m_flow_fac"] == pytest.approx(m_fac, rel=1e-12) and ss["m_flow_cw"] == pytest.approx(m_cw, rel=1e-12)
    assert ss["T_fac_sup"] == pytest.approx(297.15 - 0.25, abs=1e-9)
    assert ss["T_fac_ret"] - ss["T_fac_sup"] == pytest.approx((6 * sh_sec + sh_fac) / (m_fac * cp), rel=1e-9)
    np.testing.assert_allclose(ss["T_sec_ret"] - ss["T_sec_sup"], sh_sec / (m_sec * cp), rtol=1e-9)
    assert ss["T_cw_ret"] - ss["T_cw_sup"] == pytest.approx((6 * sh_sec + sh_fac) / (m_cw * cp), rel=1e-9)
    # tower pumps' heat into the basin: the cells leave that much below it
    assert ss["T_cw_sup"] - ss["T_tower_out"] == pytest.approx(sh_cw / (m_cw * cp), rel=1e-9)
    assert 288.15 < ss["T_tower_out"] < 288.15 + 1.0  # 5.9 kW on a bank at its floor: just above the wet-bulb
    # pumps by hand: P = P_shaft,nom x / (0.93 x 0.97 x rel), rel = U.S. DOE (2014) motor part-load efficiency
    # relative to full load, interpolated by hand between the tabulated sizes and load points (Modelica Buildings
    # motorEfficiencyCurve table: 700 W row 0.1 / 0.2 = 0.319837 / 0.551722, 2.5 kW 0.329887 / 0.613280, 7.5 kW
    # 0.458027 / 0.752727 and 0.950166 at 0.4, 15 kW 0.576112 / 0.843179 and 0.980316 at 0.4; 1 from 0.6 up)
    # secondary: dp control at its 0.3 floor, s = 100 / 200 kPa: x = 0.3 (0.5 + 0.5 x 0.09) = 0.1635; one pump of
    # 1,834.07 W shaft, motor 1,972.1 W: t = (1972.1 - 700) / 1800 = 0.70672 between the 700 W and 2.5 kW columns
    x = 0.3 * (0.5 + 0.5 * 0.09)
    shaft = 6.4 / 997 * 200e3 / 0.70
    t = (shaft / 0.93 - 700.0) / 1800.0
    r1, r2 = 0.319837 + t * (0.329887 - 0.319837), 0.551722 + t * (0.613280 - 0.551722)
    rel = r1 + (x - 0.1) / 0.1 * (r2 - r1)
    np.testing.assert_allclose(ss["P_pump_sec"], shaft * x / (0.9021 * rel), rtol=2e-6)
    assert ss["P_pump_sec"][0] == pytest.approx(668.4, abs=0.5)  # (Bernier & Bourret's curve gave 604 W)
    # facility: valves at 0.2, s = 100 / 300 kPa, set point reset to its floor r = 0.3: x = 0.2 (1/3 x 0.09 + 2/3 x
    # 0.04) = 0.01133; one of two pumps runs (0.2 x 2 < 1) at 2 x = 0.0227 of its rating; motor 13.72 kW:
    # t = (13,720 - 7,500) / 7,500 between the 7.5 and 15 kW columns
    x = 0.2 * (0.09 / 3 + 2 / 3 * 0.04)
    shaft = 63.6 / 997 * 300e3 / 0.75
    t = (shaft / 2 / 0.93 - 7500.0) / 7500.0
    r1, r2 = 0.458027 + t * (0.576112 - 0.458027), 0.752727 + t * (0.843179 - 0.752727)
    rel = r1 * (2 * x) / 0.1  # the table is 0 at 0 load and r1 at 0.1: linear in between
    assert ss["P_pump_fac"] == pytest.approx(shaft * x / (0.9021 * rel), rel=2e-6)
    # tower pumps: variable flow held at the 50 % turndown (ASHRAE 90.1-2013 6.5.5.4); x = 0.5 (1/3 + 2/3 x 0.25) =
    # 0.25; one of two pumps at 0.5 of its rating: rel halfway between the 0.4 and 0.6 points of the 8.23 kW motor
    shaft = 63.6 / 997 * 180e3 / 0.75
    t = (shaft / 2 / 0.93 - 7500.0) / 7500.0
    rel = 0.5 * (0.950166 + t * (0.980316 - 0.950166) + 1.0)
    assert ss["P_pump_tower"] == pytest.approx(shaft * 0.25 / (0.9021 * rel), rel=2e-6)
    assert ss["P_pump_tower"] == pytest.approx(4344.0, abs=2.0)  # constant flow gave 17.02 kW
    assert ss["P_fan_tower"] == pytest.approx(6250.0 * 0.2**3, rel=1e-12)  # one cell at 20 % speed: 50 W
    # 70 % load at 10 C wet-bulb: fans hold the 24 C setpoint, valves hold the 27 C secondary supply
    q = np.full(6, 0.7 * 266.7e3)
    ss = analytic_steady_state(p, q, 283.15)
    assert ss["regime"] == "setpoint"
    assert ss["T_fac_sup"] == pytest.approx(297.15, abs=1e-12)
    np.testing.assert_allclose(ss["T_sec_sup"], 300.15, atol=1e-9)
    # secondary flow 0.7 x 6.4 = 4.48 kg/s, its pump at x = 0.7 (0.5 + 0.5 x 0.49) = 0.5215 puts 1,834.07 x 0.5215
    # = 956.47 W of shaft work into the loop -> return = 27 C + (186.69e3 + 956.47) / (4.48 x 4186) = 27 + 10.006 K
    sh_sec = 6.4 / 997 * 200e3 / 0.70 * 0.7 * (0.5 + 0.5 * 0.49)
    assert sh_sec == pytest.approx(956.47, abs=0.01)
    np.testing.assert_allclose(ss["T_sec_ret"] - 300.15, (186.69e3 + sh_sec) / (4.48 * 4186), rtol=1e-9)
    # facility pump at the steady flow fraction w = m_fac / 63.6, its set point reset to r = max(0.3, max valve):
    # x = w (r^2 / 3 + 2 / 3 w^2); tower pumps at their 50 % floor (w < 0.5): 3,827.48 W as at idle
    w, r = ss["m_flow_fac"] / 63.6, max(0.3, float(np.max(ss["y_valve"])))
    sh_fac = 63.6 / 997 * 300e3 / 0.75 * w * (r * r / 3 + 2 / 3 * w * w)
    assert w < 0.5 and ss["Q_flow_pump_heat"] == pytest.approx(6 * sh_sec + sh_fac + sh_cw, rel=1e-12)
    # facility return = supply + (rack + CDU pumps + facility pump heat) / (m_fac cp); the towers reject everything,
    # the tower pumps' heat too
    Q_fac = q.sum() + 6 * sh_sec + sh_fac
    assert ss["T_fac_ret"] - 297.15 == pytest.approx(Q_fac / (ss["m_flow_fac"] * cp), rel=1e-12)
    assert ss["Q_flow_ihx"] == pytest.approx(Q_fac, rel=1e-9)
    Q_rej = Q_fac + sh_cw
    assert ss["Q_flow_tower"] == pytest.approx(Q_rej, rel=1e-9) and ss["Q_flow_chiller"] == 0.0
    # water from the saturated-exit-air balance (psychrolib): the air enters with h_s(T_wb), W_s(T_wb), takes up
    # the heat and leaves saturated; evaporation = m_air (W_out - W_in); blowdown E / (4 - 1) - drift
    import psychrolib as psy
    psy.SetUnitSystem(psy.SI)
    P = 99000.0
    W_in, h_in = psy.GetSatHumRatio(10.0, P), psy.GetSatAirEnthalpy(10.0, P)
    m_air = ss["m_flow_air"]
    assert m_air >= ss["y_fan"] * 63.6 / 1.2 * (1 - 1e-12)
    T_out = ss["T_air_out"] - 273.15
    assert psy.GetSatAirEnthalpy(T_out, P) == pytest.approx(h_in + Q_rej / m_air, rel=1e-9)
    evap = m_air * (psy.GetSatHumRatio(T_out, P) - W_in)
    assert ss["m_flow_evap"] == pytest.approx(evap, rel=1e-9)
    drift = 5e-5 * ss["m_flow_cw"]
    assert ss["m_flow_blowdown"] == pytest.approx(evap / 3.0 - drift, rel=1e-9)
    assert ss["m_flow_makeup"] == pytest.approx(evap * 4.0 / 3.0, rel=1e-9)  # = E COC / (COC - 1)
    # every state derivative vanishes at the solution
    np.testing.assert_allclose(ss["der"], 0.0, atol=1e-12)


@pytest.mark.parametrize("load", [0.0, 0.2, 0.7, 1.0, 1.3])
@pytest.mark.parametrize("T_wb_C", [-10.0, 5.0, 15.0, 20.0, 26.0])
@pytest.mark.parametrize("name", ["theta", "frontier", "esif"])
def test_steady_state_is_a_fixed_point(name, load, T_wb_C):
    p = load_plant_params(name)
    q = load * p.cdu.Q_flow_nominal_W * np.linspace(0.6, 1.4, p.n_cdu)
    ss = analytic_steady_state(p, q, 273.15 + T_wb_C)
    # K/s and 1/s: a residual of 1e-12 K/s is 3e-5 K per year
    np.testing.assert_allclose(ss["der"], 0.0, atol=1e-12)
    # plant v5 heat paths: the towers reject the racks' heat, every pump's shaft work and the trim chiller's
    # condenser heat (its load plus its electrical input), all of it
    heat_in = q.sum() + ss["Q_flow_pump_heat"] + ss["P_chiller"]
    assert ss["Q_flow_tower"] == pytest.approx(heat_in, rel=1e-9, abs=1e-6)


def test_analytic_steady_state_rejects_bad_heat():
    p = load_plant_params("theta")
    with pytest.raises(ValueError):
        analytic_steady_state(p, np.zeros(5), 290.0)
    with pytest.raises(ValueError):
        analytic_steady_state(p, np.array([-1.0, 0, 0, 0, 0, 0]), 290.0)
