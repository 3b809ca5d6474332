"""Grid signals: loaders (gaps, duplicates, UTC quirks), exact step-function integration, attribution closure,
calendar alignment and the codecarbon fallback."""

from __future__ import annotations

import calendar
import gzip
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from dataloaders.grid import GridSignalError, load_grid_series, shipped_grid_file
from dataloaders.grid.fallback import carbon_factor_g_per_kwh
from power.grid import StepSignal, integrate_steps, interval_means, straddling_intervals
from scheduler_sim.analysis.grid import grid_attribution, signal_in_sim_time

EM_HEAD = ("Datetime (UTC),Country,Zone Name,Zone Id,Carbon Intensity gCO₂eq/kWh (direct),"
           "Carbon Intensity gCO₂eq/kWh (LCA),Low Carbon Percentage,Renewable Percentage,Data Source,Data Estimated,"
           "Data Estimation Method\n")
G_KWH = 1e-3 / 3.6e6  # kg/J per g/kWh


def _em_row(t: str, direct: str, lca: str) -> str:
    return f"{t},USA,PJM,US-MIDA-PJM,{direct},{lca},40,5,pjm.com,false,\n"


def test_electricitymaps_gap_duplicate_and_bad_value_reported_with_line_and_field(tmp_path):
    p = tmp_path / "em.csv"
    p.write_text(EM_HEAD + _em_row("2022-01-01 00:00:00", "300", "400")
                 + _em_row("2022-01-01 01:00:00", "310", "410")
                 + _em_row("2022-01-01 01:00:00", "999", "999")      # line 4: duplicate of 01:00
                 + _em_row("2022-01-01 02:00:00", "320", "n/a")      # line 5: bad LCA value -> gap
                 + _em_row("2022-01-01 04:00:00", "340", "440"),     # 03:00 absent -> gap
                 encoding="utf-8")
    s = load_grid_series(p, "carbon", basis="lca")
    assert s.t0_unix_s == calendar.timegm((2022, 1, 1, 0, 0, 0))
    np.testing.assert_allclose(s.values[[0, 1, 4]] / G_KWH, [400, 410, 440], rtol=1e-12)
    assert np.isnan(s.values[2]) and np.isnan(s.values[3])
    t0 = s.t0_unix_s
    assert s.gaps == [(t0 + 2 * 3600, t0 + 4 * 3600)]
    by = {i.reason: i for i in s.issues}
    assert by["duplicate_time"].line == 4 and by["duplicate_time"].field == "Datetime (UTC)"
    assert by["bad_value"].line == 5 and by["bad_value"].field.endswith("(LCA)") and by["bad_value"].found == "n/a"
    # the direct column of the same file has no bad value on line 5
    d = load_grid_series(p, "carbon", basis="direct")
    assert d.values[2] / G_KWH == pytest.approx(320)
    with pytest.raises(GridSignalError, match=r"line 4.*duplicate"):
        load_grid_series(p, "carbon", basis="direct", strict=True)


def test_pjm_prices_are_utc_hour_starts_and_eia930_has_no_direct_basis(tmp_path):
    p = tmp_path / "prices.csv.gz"
    with gzip.open(p, "wt", encoding="utf-8") as fh:
        fh.write("Datetime,Price (USD/MWh)\n2022-01-01 05:00:00,19.182225\n2022-01-01 06:00:00,-20.66\n")
    s = load_grid_series(p, "price")
    assert s.t0_unix_s == calendar.timegm((2022, 1, 1, 5, 0, 0))  # local midnight EST, read as UTC
    np.testing.assert_allclose(s.values * 3.6e9, [19.182225, -20.66], rtol=1e-12)  # negative prices kept
    e = tmp_path / "eia.csv"
    e.write_text("timestamp,WND,SUN,WAT,OIL,NG,COL,NUC,OTH,avg_CI\n"
                 "2022-01-01 00:00:00+00:00,1,1,1,0,1,1,1,1,341.4337498507268\n"
                 "2022-01-01 01:00:00+00:00,,,,,,,,,\n", encoding="utf-8")
    s = load_grid_series(e, "carbon")
    assert s.values[0] / G_KWH == pytest.approx(341.4337498507268, rel=1e-12)
    assert s.values.size == 1 and s.issues[0].line == 3 and s.issues[0].field == "avg_CI"
    with pytest.raises(GridSignalError, match="life-cycle"):
        load_grid_series(e, "carbon", basis="direct")
    with pytest.raises(GridSignalError, match="gives a carbon series, not price"):
        load_grid_series(e, "price")


def test_shipped_pjm_2022_carbon_means_match_the_data_readme():
    # ../shared/data/README.md: PJM 2022 direct mean 355.0, LCA mean 424.5 gCO2eq/kWh, none estimated, 8,760 rows
    p = shipped_grid_file("pjm-carbon-2022")
    lca = load_grid_series(p, "carbon", basis="lca")
    direct = load_grid_series(p, "carbon", basis="direct")
    assert lca.values.size == 8760 and not lca.gaps and not lca.issues
    assert np.mean(lca.values) / G_KWH == pytest.approx(424.5, abs=0.05)
    assert np.mean(direct.values) / G_KWH == pytest.approx(355.0, abs=0.05)


def test_codecarbon_fallback_factors():
    # codecarbon global_energy_mix.json USA carbon_intensity 369.473; usa_emissions.json illinois 811.318 lbs/MWh
    assert carbon_factor_g_per_kwh("usa")[0] == 369.473
    assert carbon_factor_g_per_kwh("Illinois")[0] == pytest.approx(811.318 * 0.45359237, rel=1e-15)
    with pytest.raises(ValueError, match="ISO3"):
        carbon_factor_g_per_kwh("Atlantis")


def test_step_products_integrated_exactly_by_hand():
    # signal: 1 on [0, 3600), gap on [3600, 7200) -> fallback 5, fallback outside too
    s = StepSignal(np.array([0.0, 3600.0, 7200.0]), np.array([1.0, np.nan]), 5.0)
    # power 1 W on [-100, 100), 2 W on [100, 3700), 3 W on [3700, 8000)
    total, E, Efb = integrate_steps(np.array([-100.0, 100.0, 3700.0, 8000.0]), np.array([1.0, 2.0, 3.0]), s)
    # pieces: 100*1*5 + 100*1*1 + 3500*2*1 + 100*2*5 + 3500*3*5 + 800*3*5
    assert total == pytest.approx(500 + 100 + 7000 + 1000 + 52500 + 12000, rel=1e-12, abs=0)
    assert E == pytest.approx(200 + 7200 + 12900, rel=1e-12)
    assert Efb == pytest.approx(100 + 200 + 12900, rel=1e-12)
    # interval means over 1,800 s intervals from -1,800 s: 5, 1, 1, 5, 5, 5; one half-interval straddle case
    m, fb = interval_means(s, -1800.0, 1800.0, 6)
    np.testing.assert_allclose(m, [5, 1, 1, 5, 5, 5], rtol=0, atol=1e-12)
    np.testing.assert_allclose(fb, [1, 0, 0, 1, 1, 1], rtol=0, atol=1e-12)
    m, fb = interval_means(s, -900.0, 1800.0, 3)   # [-900, 900): 900*5 + 900*1 over 1800 -> 3
    np.testing.assert_allclose(m, [3.0, 1.0, (900 * 1 + 900 * 5) / 1800], rtol=1e-12)
    np.testing.assert_allclose(fb, [0.5, 0.0, 0.5], rtol=1e-12)
    assert straddling_intervals(s, -900.0, 1800.0, 3) == 2
    assert straddling_intervals(s, 0.0, 1800.0, 4) == 0
    # a price-like signal with negative values: cost of a hand-built power and price series to 1e-9
    price = StepSignal(np.array([0.0, 3600.0, 7200.0, 10800.0]), np.array([30.0, -20.66, 4392.12]) / 3.6e9, 0.0)
    cost, _, _ = integrate_steps(np.array([0.0, 1800.0, 9000.0, 10800.0]), np.array([1e6, 2e6, 0.5e6]), price)
    hand = (1e6 * 1800 * 30 + 2e6 * 1800 * 30 + 2e6 * 3600 * -20.66 + 2e6 * 1800 * 4392.12
            + 0.5e6 * 1800 * 4392.12) / 3.6e9
    assert cost == pytest.approx(hand, rel=1e-9, abs=0)


def test_integral_of_signal_equals_refined_sum():
    s = StepSignal(np.array([0.0, 10.0, 25.0]), np.array([2.0, np.nan]), 7.0)
    # [-5, 30): 5*7 + 10*2 + 15*7 + 5*7
    assert s.integral(np.array([-5.0]), np.array([30.0]))[0] == pytest.approx(35 + 20 + 105 + 35, rel=1e-14)
    assert s.integral(np.array([3.0]), np.array([3.0]))[0] == 0.0


def _fake_run(n=4, dt=60.0):
    """Two CDUs, two jobs, hand-chosen facility components; heat = IT (liquid fraction 1)."""
    t = np.arange(n) * dt
    jobs = pd.DataFrame({"job_id": [1, 2], "sim_start_s": [0.0, 30.0], "sim_end_s": [120.0, 240.0],
                         "nodes": [1, 1], "node_power_W": [900.0, 450.0], "energy_dc_J": [0.0, 0.0],
                         "account": ["a", "b"]})
    P_jc = np.array([[1000.0, 0.0], [0.0, 500.0]])
    idle = 100.0  # per CDU
    it_jobs = np.zeros((n, 2))
    for j, (a, b) in enumerate([(0, 120), (30, 240)]):
        for k in range(n):
            o = max(0.0, min(b, t[k] + dt) - max(a, t[k]))
            it_jobs[k] += P_jc[j] * o / dt
    Q = it_jobs + idle
    P_it = Q.sum(axis=1)
    pump = np.full((n, 2), 10.0)
    fac = {"P_it_W": P_it, "P_cooling_W": pump.sum(axis=1) + 30.0, "P_pump_fac": np.full(n, 30.0),
           "P_transformer_loss_W": 0.01 * P_it, "P_lighting_W": np.full(n, 50.0), "T_wb_K": np.full(n, 290.0)}
    fac["P_facility_W"] = P_it + fac["P_cooling_W"] + fac["P_transformer_loss_W"] + fac["P_lighting_W"]
    return SimpleNamespace(jobs=jobs, time_s=t, facility=fac, cdu={"Q_flow_W": Q, "P_pump_sec": pump},
                           totals={"E_it_J": float(P_it.sum() * dt), "E_cdu_heat_J": float(Q.sum() * dt),
                                   "duration_s": n * dt}, job_cdu_it_W=P_jc, allocations={})


def test_grid_attribution_closes_and_matches_hand_values():
    r = _fake_run()
    w = np.array([1.0, 2.0, 3.0, 4.0])  # one signal step per 60 s interval
    sig = StepSignal(np.arange(5) * 60.0, w, 0.0)
    g = grid_attribution(r, {"price": sig})
    T = g.totals
    # facility total by hand: sum_k w_k P_fac,k dt
    assert T["cost_facility"] == pytest.approx(float(np.sum(w * r.facility["P_facility_W"]) * 60), rel=1e-12)
    # job 1 IT: 1000 W for 60 s in interval 0 (w 1) and 60 s in interval 1 (w 2)
    assert g.jobs["cost_it"][0] == pytest.approx(1000 * 60 * 1 + 1000 * 60 * 2, rel=1e-12)
    # job 2 IT: 500 W for 30 s (w 1) then 60 s each at w 2, 3, 4
    assert g.jobs["cost_it"][1] == pytest.approx(500 * (30 * 1 + 60 * 2 + 60 * 3 + 60 * 4), rel=1e-12)
    # job 1 CDU pump share in interval 0: its heat 1000*60 of CDU 0 heat (1000+100)*60, pump 10 W * 60 s * w 1
    k0 = 1000 / 1100 * 10 * 60 * 1
    k1 = 1000 / 1100 * 10 * 60 * 2
    # plant (30 W) by share of facility heat; transformer loss 1 % of IT by IT share; lighting 50 W by IT share
    Pit0, Pit1 = r.facility["P_it_W"][0], r.facility["P_it_W"][1]
    plant = 1000 / Pit0 * 30 * 60 * 1 + 1000 / Pit1 * 30 * 60 * 2
    assert g.jobs["cost_cooling"][0] == pytest.approx(k0 + k1 + plant, rel=1e-12)
    assert g.jobs["cost_electrical_loss"][0] == pytest.approx(0.01 * 1000 * 60 * (1 + 2), rel=1e-12)
    light = 1000 / Pit0 * 50 * 60 * 1 + 1000 / Pit1 * 50 * 60 * 2
    assert g.jobs["cost_lighting"][0] == pytest.approx(light, rel=1e-12)
    # closure: jobs + idle = facility total, per group; accounts and CDUs sum to it too
    for grp in ("it", "cooling", "electrical_loss", "lighting", "facility"):
        assert g.jobs[f"cost_{grp}"].sum() + g.pseudo[f"cost_{grp}"][0] == pytest.approx(T[f"cost_{grp}"], rel=1e-12)
    assert g.accounts["cost_facility"].sum() == pytest.approx(T["cost_facility"], rel=1e-12)
    assert list(g.accounts["account"]) == ["a", "b", "(idle)"]
    assert g.cdu["cost_facility"].sum() == pytest.approx(T["cost_facility"], rel=1e-12)
    assert g.timeseries["cost"].sum() == pytest.approx(T["cost_facility"], rel=1e-12)
    # intervals align with the signal: the interval-level IT of the jobs equals the event-level integral
    assert T["cost_it_jobs_interval_rel_error"] < 1e-12 and T["price_straddling_intervals"] == 0


def test_calendar_alignment_absolute_and_typical_year():
    t0 = calendar.timegm((2022, 1, 1, 0, 0, 0))
    v = (np.arange(8760) + 1.0)
    series = SimpleNamespace(kind="carbon", t0_unix_s=float(t0), step_s=3600.0, values=v)
    origin = calendar.timegm((2022, 7, 1, 7, 14, 14))  # trace origin at 07:14:14 UTC
    sig, how = signal_in_sim_time(series, -1.0, origin, calendar="absolute")
    hour = (origin - t0) // 3600  # the 07:00 hour of July 1st
    assert sig.value_at(0.0)[0] == v[hour] and sig.value_at(45 * 60 + 46)[0] == v[hour + 1]
    assert sig.value_at(-(origin - t0) - 1.0)[0] == -1.0  # before the series: fallback
    # typical year: a 2023 run reads the 2022 series at the same month / day / hour
    origin23 = calendar.timegm((2023, 3, 5, 12, 0, 0))
    sig, how = signal_in_sim_time(series, -1.0, origin23, calendar="typical-year")
    k = (calendar.timegm((2022, 3, 5, 12, 0, 0)) - t0) // 3600
    assert sig.value_at(0.0)[0] == v[k] and "2023" in how
    # ... and continues from 2022-01-01 after New Year's Eve 2023
    to_2024 = calendar.timegm((2024, 1, 1, 0, 30, 0)) - origin23
    assert sig.value_at(float(to_2024))[0] == v[0]
    # no trace calendar: time 0 is Jan 1 00:00 local standard time (UTC-6 -> 06:00 UTC)
    sig, _ = signal_in_sim_time(series, -1.0, float("nan"), utc_offset_h=-6.0)
    assert sig.value_at(0.0)[0] == v[6]


def test_run_inputs_gap_uses_the_fallback_and_says_so(tmp_path):
    from dataloaders.grid.series import GridSignalError as GSE
    from scheduler_sim.app.config import RunConfig
    from scheduler_sim.app.grid import build_grid_signals

    p = tmp_path / "em.csv"
    p.write_text(EM_HEAD + _em_row("2022-01-01 00:00:00", "300", "400") + _em_row("2022-01-01 02:00:00", "320", "420"),
                 encoding="utf-8")
    origin = float(calendar.timegm((2022, 1, 1, 0, 0, 0)))
    cfg = RunConfig().with_overrides({"grid.carbon": str(p), "grid.carbon_fallback_g_per_kWh": 100.0,
                                      "trace.window_start_days": 0.0})
    g = build_grid_signals(cfg, origin, None)
    sig = g.signals["carbon"]
    # hour 1 is a gap: the constant 100 g/kWh holds there; hours 0 and 2 are the file's
    np.testing.assert_allclose(sig.value_at(np.array([10.0, 3700.0, 7300.0])) / G_KWH, [400, 100, 420], rtol=1e-12)
    assert g.attrs["carbon_gaps_h"] == 1.0 and g.attrs["carbon_fallback_from"] == "grid.carbon_fallback_g_per_kWh"
    assert any("1 gap(s) (1 h)" in n for n in g.notes)
    # a price file with a gap and no constant for it is refused, naming the missing key
    q = tmp_path / "pr.csv"
    q.write_text("Datetime,Price (USD/MWh)\n2022-01-01 00:00:00,10\n2022-01-01 02:00:00,12\n", encoding="utf-8")
    with pytest.raises(GSE, match="price_fallback_per_MWh"):
        build_grid_signals(cfg.with_overrides({"grid.price": str(q)}), origin, None)
    # no carbon / price key: no signal is asked for (a run then writes no /grid)
    assert not RunConfig().with_overrides({"grid.calendar": "absolute"}).grid.signals_enabled()
