"""Plant v5 towers wired into the plant (issue 22 item 2): the air the running fans move, Braun's effectiveness
with that air, towers sized at the site's design wet-bulb, supervisory cell staging in the FMU and the fast plant."""

from __future__ import annotations

import math

import numpy as np
import pytest

from cooling_fmu.components import tower
from cooling_fmu.components.moist_air import sat_air
from cooling_fmu.components.pump import pump_shaft_heat_W
from cooling_fmu.components.staging import CellStager
from cooling_fmu.modelica import analytic_steady_state, plant_equations, state_vector
from cooling_fmu.params import load_plant_params
from cooling_fmu.quasisteady import QuasiSteadyPlant
from cooling_fmu.sizing import design_cells, design_tower_heat_w, size_tower_ntu
from cooling_fmu.supervisory import StagedPlant
from cooling_fmu.weather import Weather, design_conditions, resolve_weather_file
from power.sizing import design_air_side_heat_w
from power.system import load_system

SIZED = [("frontier", "knoxville"), ("frontier257", "knoxville"), ("theta", "chicago"), ("esif", "golden"),
         ("seth", "golden")]


def test_air_used_is_the_air_the_fans_move_and_leaves_no_warmer_than_the_water():
    # v4 used max(fan air, Q / dh_max): 1.1-7.4 x the fan air. Now the air is the fans' and eps_a < 1 keeps the
    # leaving air's enthalpy below saturation at the entering water, at any state
    p = load_plant_params("frontier")
    t = p.tower
    rng = np.random.default_rng(7)
    for _ in range(300):
        x = state_vector(p, rng.uniform(290, 330, p.n_cdu), rng.uniform(0, 1.2, p.n_cdu), rng.uniform(280, 310),
                         rng.uniform(285, 320), rng.uniform(-0.3, 1.3), rng.uniform(276, 312))
        q = rng.uniform(0, 1.3 * p.cdu.Q_flow_nominal_W, p.n_cdu)
        T_wb = rng.uniform(250, 302)
        n_cmd = float(rng.integers(0, t.n_cells + 1))
        o = plant_equations(p, x, q, T_wb, n_cells_cmd=n_cmd)
        s = o["y_fan"] * t.n_cells / o["n_cells_on"]
        assert t.y_fan_min - 1e-12 <= s <= 1.0 + 1e-12
        assert o["m_flow_air"] == pytest.approx(o["y_fan"] * p.m_air_nominal_kg_s, rel=1e-15)
        h_in = sat_air(T_wb, t.p_atm_Pa)[1]
        h_w = sat_air(max(o["T_cw_ret"], T_wb), t.p_atm_Pa)[1]
        assert o["Q_flow_tower"] <= o["m_flow_air"] * (h_w - h_in) * (1 + 1e-12) + 1e-9
        assert o["Q_flow_tower"] >= -1e-6 and o["m_flow_air"] > 0.0  # (round-off of a zero-heat balance: -6.5e-9 W)


def test_fan_speed_and_commanded_cells_hand_values():
    # 8 cells, demand 0.3 of the bank: 4 cells run at 0.6; 1 cell cannot exceed full speed; 8 cells at 0.3 each
    assert tower.fan_speed(0.3, 4.0, 8, 0.2) == pytest.approx((0.6, 0.3))
    assert tower.fan_speed(0.3, 1.0, 8, 0.2) == pytest.approx((1.0, 0.125))
    assert tower.fan_speed(0.01, 8.0, 8, 0.2) == pytest.approx((0.2, 0.2))  # floor of 8 running fans
    assert tower.cells_in_service(0.0, 0.3, 8, 0.2) == 8.0  # algebraic: as many cells as possible
    assert tower.cells_in_service(3.0, 0.3, 8, 0.2) == 3.0
    assert tower.cells_in_service(12.0, 0.3, 8, 0.2) == 8.0
    # the stager's starting stage: the most cells at or above s_add = 0.3 (ASHRAE 90.1 sec. 6.5.5.2.2), at least the
    # cells that can move the air: 0.3 x 8 = 2.4 -> 8 cells at 0.3; 0.1 x 8 = 0.8 -> 2 at 0.4 (3 would run at 0.27)
    st = CellStager(8)
    assert [st.initial_stage(y) for y in (0.3, 0.1, 0.0, 1.0, 0.03)] == [8, 2, 1, 8, 1]


def test_braun_coefficient_does_not_change_when_a_cell_is_taken_out():
    # identical cells: one cell out scales KaV/L by ((N-1)/N)^n and L/G by N/(N-1) (cooling_fmu.redundancy); Braun's
    # c = NTU LG^n must stay (c is a property of a cell's fill)
    c, n = tower.braun_coefficients(2.139, 0.6, 1.2)
    f = 7 / 8
    c1, n1 = tower.braun_coefficients(2.139 * f**0.6, 0.6, 1.2 / f)
    assert c1 == pytest.approx(c, rel=1e-14) and n == n1 == -0.6
    assert c == pytest.approx(2.139 * 1.2**0.6, rel=1e-15)


@pytest.mark.parametrize("name,site", SIZED)
def test_towers_sized_at_the_site_design_wet_bulb_for_all_the_heat_they_reject(name, site):
    # the rating point: design tower-water flow, full fans, the site's 0.4 % wet-bulb, the design approach, and ALL
    # the heat the towers reject at design (session 6 sized for the rack heat alone: theta left at 3.23 K)
    p = load_plant_params(name)
    t = p.tower
    dc = design_conditions(resolve_weather_file(site))
    assert t.T_wb_design_K == pytest.approx(dc.wet_bulb_K, abs=0.006)
    rack = p.n_cdu * p.cdu.Q_flow_nominal_W
    # the air side's design heat is the system's (CRAH coils, fans, chilled water at the IT power of the design heat)
    system = load_system("frontier" if name == "frontier257" else name)  # the benchmark has Frontier's towers
    assert t.Q_air_side_design_W == pytest.approx(design_air_side_heat_w(system, rack, t.T_wb_design_K),
                                                  rel=1e-5, abs=1e-6)
    ss = analytic_steady_state(design_cells(p), np.full(p.n_cdu, p.cdu.Q_flow_nominal_W), t.T_wb_design_K,
                               Q_air_side_W=t.Q_air_side_design_W)
    # the towers reject rack + every pump's shaft work + the air side + the trim chiller's power (its condenser heat
    # is its load, taken from the facility water and so already in the rack and pump heat, plus its power)
    heat_in = rack + ss["Q_flow_pump_heat"] + ss["P_chiller"] + t.Q_air_side_design_W
    assert ss["Q_flow_tower"] == pytest.approx(heat_in, rel=1e-9)
    assert ss["Q_flow_tower"] > rack * 1.01  # pumps alone are 1.4-3.4 % of the rack heat of these plants
    # the design cells (n_cells - n_cells_standby; frontier: 7 of 8, N+1) carry the rating point: their NTU and L/G
    # are the bank's scaled by r^n and 1/r, r = 7/8 (cooling_fmu.sizing.design_cells)
    r = (t.n_cells - t.n_cells_standby) / t.n_cells
    ntu = tower.size_ntu_nominal(t.n_merkel, t.LG_nominal / r, heat_in, p.tower_loop.m_flow_nominal_kg_s,
                                 t.T_wb_design_K, t.approach_design_K, t.p_atm_Pa, p.cp_water_J_kgK)
    assert t.NTU_nominal * r ** t.n_merkel == pytest.approx(ntu, rel=1e-4)  # the TOML keeps 4 decimals


def test_size_tower_ntu_is_the_fixed_point_of_the_design_heat():
    # esif (no chiller): one pass from the old rack-heat size reaches the TOML's value; the fixed point's heat is
    # the steady state's tower heat at design (rack 1.2 MW + pumps + 156.6 kW of air side = 1.3726 MW)
    p = load_plant_params("esif")
    ntu, Q = size_tower_ntu(p)
    assert ntu == pytest.approx(p.tower.NTU_nominal, rel=1e-4)
    assert Q == pytest.approx(1.3726e6, rel=1e-4)
    assert Q == pytest.approx(design_tower_heat_w(p), rel=1e-9)
    with pytest.raises(ValueError, match="T_wb_design_K is not stated"):
        size_tower_ntu(p.model_copy(update={"tower": p.tower.model_copy(update={"T_wb_design_K": None})}))


@pytest.mark.parametrize("name", ["frontier", "theta", "esif"])
def test_approach_at_design_is_the_sized_approach_and_at_least_2_K(name):
    # at design heat (with the air side's design heat) and the design wet-bulb: frontier and theta run with full
    # fans and the design water flow (valves open), i.e. at the rating point itself: the approach is the sized 3 K
    # (frontier: with its standby cell out, the 7 design cells of the N+1 sizing; every cell running the fans slow
    # down and the approach is the set point's, checked >= 2 K too)
    p = load_plant_params(name)
    t, cp = p.tower, p.cp_water_J_kgK
    if t.n_cells_standby:
        every = analytic_steady_state(p, np.full(p.n_cdu, p.cdu.Q_flow_nominal_W), t.T_wb_design_K,
                                      Q_air_side_W=t.Q_air_side_design_W)
        if p.chiller.enabled:
            # theta (session 9): the trim chiller holds its 24.5 C set point with every cell at full fans, the 4th
            # cell taking load off the chiller (sized for the 3 design cells); a third more air than the rating
            # point leaves the water 1.62 K above the wet-bulb (the 2 K bound is the selection's, checked below at
            # the sized point)
            assert every["regime"] == "fan_full" and every["T_fac_sup"] == pytest.approx(
                t.T_fac_sup_set_K + p.chiller.dT_deadband_K, abs=1e-6)
            assert every["T_tower_out"] - t.T_wb_design_K == pytest.approx(1.62, abs=0.01)
        else:
            assert every["regime"] == "setpoint" and every["T_tower_out"] - t.T_wb_design_K >= 2.0
        p = design_cells(p)
    ss = analytic_steady_state(p, np.full(p.n_cdu, p.cdu.Q_flow_nominal_W), t.T_wb_design_K,
                               Q_air_side_W=t.Q_air_side_design_W)
    appr = ss["T_tower_out"] - t.T_wb_design_K
    assert appr >= 2.0
    at_rating = ss["regime"] == "fan_full" and ss["m_flow_cw"] == pytest.approx(p.tower_loop.m_flow_nominal_kg_s)
    if t.n_cells_standby and not p.chiller.enabled:
        # the IHX is sized to put this point at the set point with fans just full (4-digit UA); the CDU valves then
        # sit at their design opening (~85 %), the tower water follows the facility flow (577 of 675 kg/s), so the
        # tower leaves closer to the wet-bulb than at its 675 kg/s rating: 2.22 K, not 3 K
        assert ss["y_fan"] > 0.999 and ss["T_fac_sup"] == pytest.approx(t.T_fac_sup_set_K, abs=1e-5)
        assert ss["m_flow_cw"] < 0.9 * p.tower_loop.m_flow_nominal_kg_s and 2.0 < appr < t.approach_design_K
        return
    assert at_rating == (name == "theta")
    if at_rating:
        assert appr == pytest.approx(t.approach_design_K, abs=0.03)
    # half the heat at the same wet-bulb
    half = analytic_steady_state(p, np.full(p.n_cdu, 0.5 * p.cdu.Q_flow_nominal_W), t.T_wb_design_K,
                                 Q_air_side_W=0.5 * t.Q_air_side_design_W)
    if half["regime"] == "fan_full":
        # fans still full (theta: the set point is below T_wb + approach, the trim chiller runs): the tower sees
        # less range at full air, so it leaves closer to the wet-bulb (CTI / ASHRAE ch. 40 performance curves:
        # approach rises with range)
        assert half["T_tower_out"] - t.T_wb_design_K < appr
    else:
        # the fans hold the facility supply at its set point (esif, frontier): the approach is then not a property
        # of the tower but of the set point, the IHX and the load. By hand: facility return = set + Q_fac / C_fac,
        # basin = return - Q_ihx / (eps C_min) (Incropera Table 11.3, counterflow), leaving water = basin - tower
        # pumps' heat / C_cw; less heat needs a smaller IHX difference, so the basin may be warmer than at design
        # and the fans slow down (approach 4.4 K on esif at half load, 2.4 K at full)
        assert half["regime"] == "setpoint" and half["T_fac_sup"] == pytest.approx(t.T_fac_sup_set_K, abs=1e-9)
        m_f, m_c = half["m_flow_fac"], half["m_flow_cw"]
        Q_ihx = half["Q_flow_ihx"]
        C_f, C_c = m_f * cp, m_c * cp
        C_min, C_max = min(C_f, C_c), max(C_f, C_c)
        ntu, cr = p.tower_loop.UA_ihx_W_K / C_min, C_min / C_max
        z = math.exp(-ntu * (1 - cr))
        eps = (1 - z) / (1 - cr * z) if cr < 0.999999 else ntu / (1 + ntu)
        T_ret = t.T_fac_sup_set_K + Q_ihx / C_f
        assert half["T_fac_ret"] == pytest.approx(T_ret, abs=1e-9)
        T_basin = T_ret - Q_ihx / (eps * C_min)
        assert half["T_cw_sup"] == pytest.approx(T_basin, abs=1e-6)
        tl = p.tower_loop
        P_shaft_cw = pump_shaft_heat_W(tl.pump, tl.m_flow_nominal_kg_s, p.rho_water_kg_m3, m_c / tl.m_flow_nominal_kg_s)
        assert half["T_tower_out"] == pytest.approx(T_basin - P_shaft_cw / C_c, abs=1e-6)


def _july_week(p, step_s=60.0):
    """Knoxville from 1 July, 7 days; IT load 70 % +/- 10 % changing every 10 min (seeded)."""
    w = Weather.from_file(resolve_weather_file("knoxville"))
    n = int(7 * 86400 / step_s)
    T_wb = np.asarray(w.wet_bulb_K(step_s * np.arange(n) + Weather.offset_for(182)), dtype=float)
    rng = np.random.default_rng(3)
    level = 0.7 + 0.1 * rng.uniform(-1, 1, n // 10 + 1)
    q = np.repeat(level, 10)[:n, None] * p.cdu.Q_flow_nominal_W * np.ones((1, p.n_cdu))
    return q, T_wb


def test_fast_plant_staging_switches_at_most_six_times_a_day_on_a_knoxville_july_week(tmp_path):
    p = load_plant_params("frontier")
    q, T_wb = _july_week(p)
    plant = StagedPlant(QuasiSteadyPlant(p, step_s=60.0, cache_dir=tmp_path))
    plant.initialize(q[0], float(T_wb[0]))
    out = plant.run(q, T_wb)
    n_on = out[:, plant.index("n_cells_on")]
    switches = int(np.count_nonzero(np.diff(n_on) != 0))
    assert switches == len(plant.switch_times_s)
    assert switches / 7.0 <= 6.0
    # the running cells move the air the fans are asked for (the fast plant adds a cell where they could not)
    y = out[:, plant.index("y_fan")]
    assert np.all(out[:, plant.index("m_flow_air")] <= y * p.m_air_nominal_kg_s * (1 + 1e-12))
    assert np.all(y >= out[:, plant.index("y_fan_demand")] - 1e-12)


def test_stager_hysteresis_holds_the_stage_inside_its_deadband():
    st = CellStager(8, tau_filter_s=1e-9, t_min_stage_s=900.0)
    st.n_on = 4
    # speed 0.3 on 4 cells: at or above s_drop 0.25, and a fifth cell would run at 0.24 < s_add 0.3: no change, ever
    for k in range(200):
        assert st.update(60.0 * k, 0.3 * 4 / 8) == 4


@pytest.mark.parametrize("T_wb", [263.15, 293.15])
def test_cdu_supply_stays_within_2_K_of_set_point_on_a_30_to_90_percent_step(fmu_cache, T_wb):
    # issue 22 target: Frontier-like plant, IT 30 % -> 90 % at once; winter (-10 C, IHX bypass and fans at their
    # floor before the step) and a mild 20 C; the stager commands the cells (FMU input n_cells_cmd)
    from cooling_fmu.plant import CoolingPlant

    p = load_plant_params("frontier")
    with CoolingPlant(p, step_s=15.0, cache_dir=fmu_cache) as fmu:
        plant = StagedPlant(fmu)
        q30 = np.full(p.n_cdu, 0.3 * p.cdu.Q_flow_nominal_W)
        plant.initialize(q30, T_wb)
        plant.run(np.tile(q30, (240, 1)), np.full(240, T_wb))  # 1 h at 30 %
        n = 4 * 3600 // 15
        out = plant.run(np.tile(3 * q30, (n, 1)), np.full(n, T_wb))
        sup = out[:, [plant.index(f"T_sec_sup[{i}]") for i in range(1, p.n_cdu + 1)]]
        T_fs = out[:, plant.index("T_fac_sup")]
    assert sup.max() <= p.cdu.T_sec_sup_set_K + 2.0
    assert abs(T_fs[-1] - p.tower.T_fac_sup_set_K) < 0.5  # settled at its set point again


def test_theta_cdu_stepping_from_its_valve_floor_holds_its_supply_within_half_a_kelvin(fmu_cache):
    # found on the main job (session 10): one Theta CDU stepped from 92 to 197 kW (a large job starting) with its
    # valve at the 0.2 floor; without a load feed-forward and with a 240 s integral time the valve integrated open
    # over ~10 min and the supply peaked at 30.68 C (11.95 h above set point + 0.5 K in 30 days). With Frontier's
    # load feed-forward (0.85 = the design opening; the 240 s integral time kept) this step peaks 0.24 K over (4.11 K
    # before; 0.18 K with Frontier's 120 s too, which halves the plant's stability limit)
    from cooling_fmu.plant import CoolingPlant

    p = load_plant_params("theta")
    assert p.cdu.valve_k_ff == 0.85 and p.cdu.valve_Ti_s == 240.0
    q0 = np.array([92.2e3, 150e3, 150e3, 150e3, 92.2e3, 150e3])
    q1 = q0.copy()
    q1[4] = 196.7e3
    with CoolingPlant(p, step_s=15.0, cache_dir=fmu_cache) as fmu:
        plant = StagedPlant(fmu)
        plant.initialize(q0, 293.15)
        plant.run(np.tile(q0, (480, 1)), np.full(480, 293.15))  # 2 h: the CDU's valve at its floor
        assert plant.run(np.tile(q0, (1, 1)), np.full(1, 293.15))[0, plant.index("y_valve[5]")] == pytest.approx(0.2)
        out = plant.run(np.tile(q1, (240, 1)), np.full(240, 293.15))
    sup = out[:, plant.index("T_sec_sup[5]")]
    assert sup.max() - p.cdu.T_sec_sup_set_K < 0.5
    assert abs(sup[-1] - p.cdu.T_sec_sup_set_K) < 0.05  # back at its set point within the hour


def test_load_following_cdu_pumps_without_the_valve_feedforward_overshoot_the_step(fmu_cache):
    # issue 22 item 8: the same 30 -> 90 % step with the valve's load feed-forward off (valve_k_ff = 0): at 30 %
    # the pumps run at their 0.345 minimum, the loop water sits 9.6 K above the supply and the valve at 0.24; when
    # the flow follows the heat at once that water reaches the racks before the valve has opened: 5.35 K over the
    # set point in the first 15 s step (the shipped plant, feed-forward 0.85: ~0.6 K, the test above)
    from cooling_fmu.plant import CoolingPlant

    p = load_plant_params("frontier")
    p = p.model_copy(update={"cdu": p.cdu.model_copy(update={"valve_k_ff": 0.0})})
    with CoolingPlant(p, step_s=15.0, cache_dir=fmu_cache) as fmu:
        plant = StagedPlant(fmu)
        q30 = np.full(p.n_cdu, 0.3 * p.cdu.Q_flow_nominal_W)
        plant.initialize(q30, 293.15)
        plant.run(np.tile(q30, (120, 1)), np.full(120, 293.15))
        out = plant.run(np.tile(3 * q30, (40, 1)), np.full(40, 293.15))
        sup = out[:, [plant.index(f"T_sec_sup[{i}]") for i in range(1, p.n_cdu + 1)]]
    assert sup.max() - p.cdu.T_sec_sup_set_K > 5.0
    assert int(np.argmax(sup.max(axis=1))) == 0  # at once: the first step after the jump
