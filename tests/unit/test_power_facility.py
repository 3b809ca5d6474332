"""Facility overheads (power/facility.py): efficiency points against their sources, a hand-computed chain, the
energy balance with every stage in it, and stages left out."""

from __future__ import annotations

import math

import numpy as np
import pytest

from power import FacilityOverheads, FacilitySpec, load_system
from power.facility import CFM_PER_M3_S, SERIES, AirSideSpec, TransformerSpec, UpsSpec
from power.system import SystemFileError


def test_transformer_efficiency_at_half_load_is_the_doe_figure():
    # DOE 10 CFR 431.196(a)(2): 2,500 kVA liquid-immersed three-phase distribution transformer, 99.53 % at 50 %
    # of rated load (the standard's test point). frontier.toml and theta.toml both carry that unit.
    for name in ("frontier", "theta"):
        t = load_system(name).facility.transformer
        assert t.rated_VA == 2.5e6
        assert t.efficiency(0.5) == pytest.approx(0.9953, abs=5e-6)
        # load loss / no-load loss = 14, the ratio of the EU 548/2014 Tier-1 maxima for 2,500 kVA (22,000 / 1,575)
        assert t.load_loss_W / t.no_load_loss_W == pytest.approx(14.0, rel=1e-3)
        assert t.load_loss_W / t.no_load_loss_W == pytest.approx(22000 / 1575, rel=5e-3)


def test_transformer_loss_by_hand():
    t = TransformerSpec(rated_VA=1e6, count=1, no_load_loss_W=1000.0, load_loss_W=8000.0, power_factor=1.0,
                        source="test")
    # 50 % load: out 500 kW, loss 1000 + 8000 / 4 = 3000 W
    assert t.efficiency(0.5) == pytest.approx(500e3 / 503e3, rel=1e-15)
    with pytest.raises(ValueError, match="load_fraction"):
        t.efficiency(0.0)


def test_ups_efficiency_points_are_the_cited_curve():
    # the bundled curve: 94.5 / 96 / 96.5 % at 25 / 50 / 100 % load (double-conversion data-sheet range,
    # ../shared/notes/published-facility-figures.md); the three-term model goes through the three points exactly
    ups = load_system("frontier").facility.ups
    assert ups.efficiency_points == [(0.25, 0.945), (0.5, 0.96), (1.0, 0.965)]
    for x, eta in ups.efficiency_points:
        assert ups.efficiency(x) == pytest.approx(eta, abs=1e-12)
    # below 25 % it falls (no-load loss): 10 % load < 94 %, the lower end of the published 25-100 % range
    assert ups.efficiency(0.1) < 0.94
    c0, c1, c2 = ups.loss_coefficients()
    assert c0 > 0  # a UPS loses power at no load
    # hand check of the fit: loss/R at x = 0.5 is 0.5 (1/0.96 - 1)
    assert c0 + c1 * 0.5 + c2 * 0.25 == pytest.approx(0.5 * (1 / 0.96 - 1), rel=1e-12)


def test_ups_curve_that_would_give_a_negative_loss_is_refused():
    with pytest.raises(ValueError, match="negative loss"):
        UpsSpec(share=1.0, rated_W=1e6, efficiency_points=[[0.25, 0.99], [0.5, 0.95], [1.0, 0.90]], source="x")


def test_air_side_fan_power_per_watt_by_hand():
    a = AirSideSpec(fan_W_per_cfm=0.5, delta_T_K=11.1, chiller_cop=6.28, source="x")
    # 1 W of heat at 11.1 K needs 1 / (1.2 x 1006 x 11.1) m3/s of air = 158.2 cfm per kW
    flow_cfm_per_W = CFM_PER_M3_S / (1.2 * 1006.0 * 11.1)
    assert flow_cfm_per_W * 1e3 == pytest.approx(158.2, abs=0.1)
    assert a.fan_W_per_W == pytest.approx(0.5 * flow_cfm_per_W, rel=1e-15)


def _full_spec() -> FacilitySpec:
    return FacilitySpec.model_validate({
        "transformer": {"rated_VA": 1e6, "count": 2, "no_load_loss_W": 500.0, "load_loss_W": 4000.0,
                        "power_factor": 0.8, "source": "t"},
        "switchgear": {"no_load_fraction": 0.001, "full_load_loss_fraction": 0.02, "rated_W": 2e6, "source": "t"},
        "ups": {"share": 0.5, "rated_W": 1e6, "efficiency_points": [[0.25, 0.9], [0.5, 0.95], [1.0, 0.96]],
                "source": "t"},
        "pdu": {"eta": 0.98, "source": "t"},
        "air_side": {"fan_W_per_cfm": 0.5, "delta_T_K": 10.0, "chiller_cop": 5.0, "economiser_wb_max_K": 280.0,
                     "source": "t"},
        "lighting": {"W_per_m2": 10.0, "floor_area_m2": 100.0, "source": "t"},
    })


def test_chain_by_hand_and_energy_balance():
    sp = _full_spec()
    o = FacilityOverheads(sp, liquid_fraction=0.9)
    P_it = np.array([1.0e6, 1.0e6])
    P_liq = np.array([20e3, 20e3])
    r = o.evaluate(P_it, P_liq, T_wb_K=np.array([285.0, 275.0]))  # chiller on, then economiser
    # by hand, step by step (module docstring)
    pdu_in = 1e6 / 0.98
    assert r["P_pdu_loss_W"][0] == pytest.approx(pdu_in - 1e6, rel=1e-14)
    c0, c1, c2 = sp.ups.loss_coefficients()
    x = 0.5 * pdu_in / 1e6
    L_ups = 1e6 * (c0 + c1 * x + c2 * x * x)
    assert r["P_ups_loss_W"][0] == pytest.approx(L_ups, rel=1e-14)
    q_air = 0.1 * 1e6 + (pdu_in - 1e6) + L_ups + 1000.0
    assert r["Q_air_W"][0] == pytest.approx(q_air, rel=1e-14)
    fan = sp.air_side.fan_W_per_W * q_air
    chw = _eir_by_hand(q_air + fan, 285.0 + 4.0, 5.0)  # no design load: every load is the chiller's full load
    assert r["P_air_fan_W"][0] == pytest.approx(fan, rel=1e-14)
    assert r["P_air_chiller_W"][0] == pytest.approx(chw, rel=1e-12)
    # wet-bulb 275 K <= 280 K: economiser, only the chilled- and condenser-water pumps (22 / 19 W/gpm)
    L1 = r["Q_air_W"][1] + r["P_air_fan_W"][1]
    assert r["P_air_chiller_W"][1] == pytest.approx(L1 * (0.012532 + 0.012988), rel=1e-4)
    sw_out = pdu_in + L_ups + 20e3 + fan + chw + 1000.0
    L_sw = 2e6 * (0.001 + 0.02 * (sw_out / 2e6) ** 2)  # no-load + I^2 R at rating 2 MW
    assert r["P_switchgear_loss_W"][0] == pytest.approx(L_sw, rel=1e-14)
    S = (sw_out + L_sw) / (0.8 * 2)
    assert r["P_transformer_loss_W"][0] == pytest.approx(2 * (500 + 4000 * (S / 1e6) ** 2), rel=1e-14)
    # energy balance: utility input = IT + liquid plant + every overhead, computed forward through the chain
    for k in range(2):
        out_k = pdu_in + r["P_ups_loss_W"][k] + 20e3 + r["P_air_fan_W"][k] + r["P_air_chiller_W"][k] + 1000.0
        utility_in = out_k + 2e6 * (0.001 + 0.02 * (out_k / 2e6) ** 2) + r["P_transformer_loss_W"][k]
        parts = 1e6 + 20e3 + sum(r[s][k] for s in SERIES if s != "Q_air_W")
        assert parts == pytest.approx(utility_in, rel=1e-14)


def test_absent_stages_give_zeros_and_are_listed():
    o = FacilityOverheads(FacilitySpec(), liquid_fraction=1.0)
    assert not o.active
    r = o.evaluate(np.array([5e6]), np.array([1e5]))
    assert all(r[s][0] == 0.0 for s in SERIES)
    sp = FacilitySpec.model_validate({"lighting": {"W_per_m2": 5.0, "floor_area_m2": 10.0, "source": "x"}})
    assert sp.present() == ["lighting"]
    assert sp.absent() == ["transformer", "switchgear", "ups", "pdu", "air_side"]
    assert "pdu: left out" in FacilityOverheads(sp).describe()


def test_heat_to_air_without_an_air_side_is_not_removed_but_reported():
    o = FacilityOverheads(FacilitySpec(), liquid_fraction=0.9)
    r = o.evaluate(np.array([1e6]), np.array([0.0]))
    assert r["Q_air_W"][0] == pytest.approx(1e5, rel=1e-14)
    assert r["P_air_fan_W"][0] == 0.0 and r["P_air_chiller_W"][0] == 0.0
    assert "not counted" in o.describe()


def test_bad_facility_table_names_file_and_field(tmp_path):
    p = tmp_path / "bad.toml"
    src = (load_system("theta").source)
    text = open(src).read().replace("full_load_loss_fraction = 0.010", "full_load_loss_fraction = -1")
    p.write_text(text)
    with pytest.raises(SystemFileError, match=r"bad.toml: field 'facility.switchgear.full_load_loss_fraction'"):
        load_system(p)


def test_switchgear_loss_is_no_load_plus_i2r_not_linear():
    from power.facility import SwitchgearSpec

    sw = SwitchgearSpec(no_load_fraction=0.0005, full_load_loss_fraction=0.01, rated_W=10e6, source="t")
    P = np.array([0.0, 2.5e6, 5e6, 10e6])
    L = sw.loss_W(P)
    np.testing.assert_allclose(L, [5e3, 5e3 + 6.25e3, 5e3 + 25e3, 5e3 + 100e3], rtol=1e-14)
    # quadratic: the loss of the resistive part at half load is a quarter of that at full load
    assert (L[2] - L[0]) / (L[3] - L[0]) == pytest.approx(0.25, rel=1e-14)
    # the linear form is refused with a pointer to the new one
    with pytest.raises(ValueError, match="no-load"):
        SwitchgearSpec.model_validate({"loss_fraction": 0.005, "source": "t"})


def test_switchgear_and_transformer_ratings_from_the_system():
    from power import PowerChain
    from power.node import node_power_w

    from power.sizing import sized_facility

    for name, n_expected in (("theta", 2), ("frontier", 14), ("esif", 2)):
        s = load_system(name)
        assert s.facility.transformer.count is None  # the files leave the count to the system
        f = sized_facility(s)
        peak_it = float(PowerChain(s).evaluate(np.full(s.n_nodes, float(node_power_w(1.0, 1.0, s.node)))).it_input_W)
        assert f.design_load_W == pytest.approx(1.10 * peak_it, rel=1e-14)  # design_overhead_fraction 0.10
        t = f.transformer
        n = int(np.ceil(f.design_load_W / (t.power_factor * t.rated_VA))) + 1  # N+1
        assert t.count == n == n_expected, name
        assert f.switchgear.rated_W == f.design_load_W
    # a count given in the file is kept
    sp = _full_spec().sized(1e6)
    assert sp.transformer.count == 2 and sp.switchgear.rated_W == 2e6 and sp.design_load_W == pytest.approx(1.1e6)


def test_switchgear_i2r_energy_balance_closes_in_a_run():
    from scheduler_sim.app.config import RunConfig
    from scheduler_sim.app.runner import run_one

    cfg = RunConfig.model_validate({"name": "bal", "system": "theta", "trace": {"window_start_days": 181.0,
                                    "window_days": 0.25}, "cooling": {"model": "fast"},
                                    "output": {"progress": False}})
    r = run_one(cfg, None)
    T = r.summary
    parts = (T["E_it_J"] + T["E_cooling_J"] + T["E_electrical_loss_J"] + T["E_air_side_J"]
             + T["E_lighting_J"])
    assert parts == pytest.approx(T["E_facility_J"], rel=1e-12)


def test_frontier_liquid_fraction_is_the_raps_figure():
    # ExaDigiT/RAPS: ~94.5 % of Frontier's rack heat to liquid, ~5.5 % to air
    assert load_system("frontier").liquid_fraction == 0.945
    assert math.isclose(1 - load_system("frontier").liquid_fraction, 0.055, rel_tol=1e-12)


def test_summary_says_what_the_pue_counts():
    from scheduler_sim.app.runner import format_summary, pue_category

    full = {"facility_stages_counted": ["transformer", "switchgear", "ups", "air_side", "lighting"],
            "facility_stages_absent": ["pdu"]}
    assert pue_category(full) == ("category 3 (IT at rack input, facility at utility input); counted: liquid plant, "
                                  "transformer, switchgear, ups, air_side, lighting; left out: pdu")
    none = {"facility_stages_counted": [], "facility_stages_absent": ["transformer", "switchgear", "ups", "pdu",
                                                                      "air_side", "lighting"]}
    assert pue_category(none).startswith("category-3 IT point, facility total short of the utility input")
    keys = ("jobs_simulated", "jobs_completed", "jobs_killed_walltime", "duration_s", "makespan_s", "utilisation",
            "mean_wait_s", "median_wait_s", "mean_bounded_slowdown", "E_it_J", "E_node_dc_J", "loss_fraction",
            "E_cooling_J", "E_facility_J", "mean_P_facility_W", "peak_P_facility_W", "PUE", "ITUE", "TUE")
    s = {k: 1.0 for k in keys} | {"pPUE_mechanical": 1.0123, "pPUE_electrical": 1.0145}
    text = format_summary(s, full)
    assert "pPUE mech. / elec.    1.0123 / 1.0145" in text
    assert "PUE counts            category 3" in text


def _eir_by_hand(L: float, T_ecw_K: float, cop_ref: float, Q_ref: float | None = None) -> float:
    """Air-side chilled-water power written out: EnergyPlus Chiller:Electric:EIR with the McQuay WSC 471 kW record's
    coefficients (EnergyPlus DataSets/Chillers.idf), leaving water at its 8.89 C reference, plus the pumps."""
    x, y = 8.89, T_ecw_K - 273.15
    capft = 2.521130e-01 + 1.324053e-02 * x - 8.637329e-03 * x * x + 8.581056e-02 * y - 4.261176e-03 * y * y + \
        8.661899e-03 * x * y
    eirft = 4.475238e-01 - 2.588210e-02 * x - 1.459053e-03 * x * x + 4.342595e-02 * y - 1.000651e-03 * y * y + \
        1.920106e-03 * x * y
    cap = (L if Q_ref is None else Q_ref) * capft  # no capacity given: the load itself is the rating
    Q = min(L, cap)
    plr = Q / cap
    eirfplr = 2.778889e-01 + 2.338363e-01 * plr + 4.883748e-01 * plr * plr
    P = cap / cop_ref * eirft * eirfplr * L / Q  # a load beyond the capacity: more of the same machines
    k_chw = 22.0 / (3.785411784e-3 / 60 * 997.0 * 4186.0 * 12 / 1.8)
    k_cond = 19.0 / (3.785411784e-3 / 60 * 997.0 * 4186.0 * 10 / 1.8)
    return P + k_chw * L + k_cond * (L + P)


def test_air_side_chiller_follows_the_reference_eir_curves():
    a = AirSideSpec(fan_W_per_cfm=0.5, delta_T_K=11.1, chiller_cop=6.28, economiser_wb_max_K=280.15,
                    condenser_approach_K=4.0, source="test")
    L = np.array([1e5])
    # the hand-written EIR form with the record's curves: full load (no capacity) and part load (2x capacity)
    for wb in (290.15, 295.15):
        assert a.chilled_water_W(L, np.array([wb]), None)[0] == pytest.approx(_eir_by_hand(1e5, wb + 4.0, 6.28),
                                                                             rel=1e-12)
        assert a.chilled_water_W(L, np.array([wb]), 2e5)[0] == pytest.approx(
            _eir_by_hand(1e5, wb + 4.0, 6.28, 2e5), rel=1e-12)
    # at full load hotter condenser water -> more power (lift: EIRFT rises up to 30 C condenser water; at part load
    # the record's CAPFT, largest near 19 C, can outweigh it); at or below the economiser limit the pumps only
    wb = np.linspace(281.0, 298.0, 18)
    P = a.chilled_water_W(np.full(18, 1e5), wb, None)
    assert np.all(np.diff(P[:-2]) > 0) and P[-1] == P[-2] == P[-3]  # clamped at the curve's 26.67 C (wb 22.67 C)
    assert a.chilled_water_W(L, np.array([280.15]), 2e5)[0] == pytest.approx(1e5 * (0.012532 + 0.012988), rel=1e-4)
    with pytest.raises(ValueError, match="unknown reference chiller"):
        AirSideSpec(fan_W_per_cfm=0.5, delta_T_K=11.1, chiller_cop=6.28, chiller_reference="x", source="t")
    # the whole air side's heat goes to the towers: coil load + chiller + pumps
    fo = FacilityOverheads(FacilitySpec(air_side=a), liquid_fraction=0.9)
    out = fo.evaluate(np.array([1e6]), np.array([0.0]), np.array([297.15]))
    rej = fo.air_side_rejected_W(np.array([1e6]), np.array([297.15]))
    assert rej[0] == pytest.approx(out["Q_air_W"][0] + out["P_air_fan_W"][0] + out["P_air_chiller_W"][0], rel=1e-14)



def test_air_side_economiser_block_skips_the_curves_and_equals_the_mixed_block_bit_for_bit():
    # a block wholly at or below the economiser limit is answered without the EIR curves (issue 26 item 2): the
    # same bits as those rows inside a block that needs the curves, and the pumps alone (22 / 19 W/gpm)
    a = AirSideSpec(fan_W_per_cfm=0.5, delta_T_K=11.1, chiller_cop=6.28, economiser_wb_max_K=280.15,
                    condenser_approach_K=4.0, source="test")
    L = np.linspace(5e4, 2e5, 7)
    cold = np.linspace(270.0, 280.15, 7)
    mixed = a.chilled_water_W(np.append(L, 1e5), np.append(cold, 295.15), 2e5)
    alone = a.chilled_water_W(L, cold, 2e5)
    np.testing.assert_array_equal(alone, mixed[:7])
    k_chw = 22.0 / (3.785411784e-3 / 60 * 997.0 * 4186.0 * 12 / 1.8)
    k_cond = 19.0 / (3.785411784e-3 / 60 * 997.0 * 4186.0 * 10 / 1.8)
    np.testing.assert_allclose(alone, (k_chw + k_cond) * L, rtol=1e-14)
    assert mixed[7] == pytest.approx(_eir_by_hand(1e5, 299.15, 6.28, 2e5), rel=1e-12)
    # the reference record at a COP is built once per (record, COP): another COP is another record
    b = AirSideSpec(fan_W_per_cfm=0.5, delta_T_K=11.1, chiller_cop=3.14, economiser_wb_max_K=280.15,
                    condenser_approach_K=4.0, source="test")
    assert b.chilled_water_W(np.array([1e5]), np.array([295.15]), 2e5)[0] == pytest.approx(
        _eir_by_hand(1e5, 299.15, 3.14, 2e5), rel=1e-12)
