"""Cooling-only mode: a measured power series drives the plant; leading zero rows are reported and skipped;
energies, PUE and WUE follow their definitions; `hpctwin cooling` writes an HDF5 file with units."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from cooling_fmu.standalone import load_power_series
from cooling_fmu.weather import Weather
from scheduler_sim.app.cli import main
from scheduler_sim.app.cooling import run_cooling_standalone

pytestmark = pytest.mark.fmu


@pytest.fixture
def series(tmp_path):
    # 10 leading zero rows, then one day of 15-min samples alternating 1.0 / 1.4 MW (kW in the file)
    t = 1_700_000_000 + 900 * np.arange(10 + 96)
    kw = np.concatenate([np.zeros(10), np.where(np.arange(96) % 2, 1400.0, 1000.0)])
    path = tmp_path / "power.csv"
    path.write_text("timestamp_secs,measured_kW\n" + "\n".join(f"{a},{b:g}" for a, b in zip(t, kw)) + "\n")
    return path


def test_power_series_report(series):
    t, P, rep = load_power_series(series)
    assert rep.n_rows == 106 and rep.leading_zero_rows == 10 and rep.zero_rows == 10 and rep.interval_s == 900
    assert P[11] == 1.4e6  # kW -> W


def test_standalone_energies_pue_wue(series, tmp_path, fmu_cache):
    out = tmp_path / "c.h5"
    s = run_cooling_standalone(series, out, plant="theta", step_s=15.0, weather=Weather.constant(285.0),
                               cache_dir=fmu_cache)
    # IT energy: 48 x 900 s x 1.0 MW + 48 x 900 s x 1.4 MW = 103.68 GJ (zero rows skipped)
    assert s["E_it_J"] == pytest.approx(48 * 900 * 2.4e6, rel=1e-12)
    assert s["leading_zero_rows_skipped"] == 10
    assert s["PUE"] == pytest.approx(1 + s["E_cooling_J"] / s["E_it_J"]) and s["PUE"] > 1.0
    # make-up water from the saturated-exit-air balance: at a 12 C wet-bulb 60-85 % of the heat leaves as latent
    # heat (h_fg ~ 2.44 MJ/kg), make-up = evaporation x COC / (COC - 1)
    ratio = s["water_makeup_kg"] / (s["E_it_J"] / 2.44e6 * 4 / 3)
    assert 0.6 < ratio < 0.85, ratio
    # every component is in the summary and they add up to the cooling energy
    parts = s["E_pump_sec_J"] + s["E_pump_fac_J"] + s["E_pump_tower_J"] + s["E_fan_J"] + s["E_chiller_elec_J"]
    assert parts == pytest.approx(s["E_cooling_J"], rel=1e-12)
    assert s["WUE_L_per_kWh"] == pytest.approx(s["water_makeup_kg"] / 0.997 / (s["E_it_J"] / 3.6e6))
    with h5py.File(out) as f:
        assert f["timeseries/facility/P_cooling"].attrs["units"] == "W"
        assert f["timeseries/cdu/T_sec_sup"].shape == (96, 6)
        p_cool = f["timeseries/facility/P_cooling"][()]
        assert p_cool.mean() * 86400 == pytest.approx(s["E_cooling_J"], rel=1e-9)  # exact averages


def test_cli_cooling(series, tmp_path, capsys):
    out = tmp_path / "cli.h5"
    assert main(["cooling", str(series), "--plant", "theta", "--wet-bulb", "12", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "10 leading rows of 0 kW" in text and "PUE" in text and "WUE" in text and out.is_file()
    assert "tower cells: staged by the supervisory controller (as hpctwin run)" in text


def _mean_series(path, name):
    with h5py.File(path) as f:
        return f[f"timeseries/facility/{name}"][()]


def test_standalone_with_a_system_counts_its_facility_stages(series, tmp_path, fmu_cache):
    # the Theta-like plant and system (liquid_fraction 1): the racks' heat is the same, and with the system the air
    # side's heat (CRAH coil + its fans + the chilled water's power) goes through the towers too (plant v5, issue 22
    # item 4), so the towers reject that much more and move more air for it. Both runs stage their cells with the
    # supervisory controller; fan energy at one cell rule: test_more_heat_costs_more_cooling_at_one_cell_rule
    base = run_cooling_standalone(series, tmp_path / "a.h5", plant="theta", step_s=15.0,
                                  weather=Weather.constant(285.0), cache_dir=fmu_cache)
    s = run_cooling_standalone(series, tmp_path / "b.h5", plant="theta", step_s=15.0,
                               weather=Weather.constant(285.0), cache_dir=fmu_cache, system="theta")
    air_side_J = s["E_air_heat_J"] + s["E_air_fan_J"] + s["E_air_chiller_J"]
    assert s["E_tower_rejected_J"] - base["E_tower_rejected_J"] == pytest.approx(air_side_J, rel=1e-4)  # 2.7e-5: heat stored
    # the bank's air fraction for the extra 0.8 % of heat (0.36920 vs 0.36793; it does not depend on the stage)
    y_a, y_b = _mean_series(tmp_path / "a.h5", "y_fan").mean(), _mean_series(tmp_path / "b.h5", "y_fan").mean()
    assert 1.001 < y_b / y_a < 1.01, (y_a, y_b)
    over = ("E_transformer_loss_J", "E_switchgear_loss_J", "E_ups_loss_J", "E_pdu_loss_J", "E_air_fan_J",
            "E_air_chiller_J", "E_lighting_J")
    assert s["E_pdu_loss_J"] == 0.0 and all(s[k] > 0 for k in over if k != "E_pdu_loss_J")
    assert s["E_facility_J"] == pytest.approx(s["E_it_J"] + s["E_cooling_J"] + sum(s[k] for k in over), rel=1e-14)
    assert s["PUE"] == pytest.approx(s["E_facility_J"] / s["E_it_J"], rel=1e-14)
    # wet-bulb 285 K > 280.15 K economiser limit: the air side runs on the chiller; lighting 3 kW for one day
    assert s["E_air_chiller_J"] > 0
    assert s["E_lighting_J"] == pytest.approx(3000.0 * 86400, rel=1e-12)
    with h5py.File(tmp_path / "b.h5") as f:
        assert "left out: pdu" in f.attrs["pue_counts"]
        assert f["timeseries/facility/P_transformer_loss_W"].shape == (96,)
    with h5py.File(tmp_path / "a.h5") as f:
        assert f.attrs["pue_counts"] == "liquid plant only"
    # the stager's command reaches the plant: the cells running are whole numbers between 1 and the bank's 4, and
    # every stage change the stager counted is a change of the cells running (one sample = 4 steps of 15 s)
    for r in (base, s):
        assert r["tower_cells_held"] == 0 and 1 <= r["tower_cells_min"] <= r["tower_cells_max"] <= 4
        assert r["tower_cells_min"] == int(r["tower_cells_min"]) and r["tower_cells_max"] == int(r["tower_cells_max"])
        assert (r["tower_cell_switches"] == 0) == (r["tower_cells_min"] == r["tower_cells_max"])


def test_more_heat_costs_more_cooling_at_one_cell_rule(series, tmp_path, fmu_cache):
    # The stager's deadband (stage up when the filtered speed at n cells exceeds 0.5, down when n - 1 cells would
    # run below 0.3) lets this day run at 3 or at 4 of the 4 cells: measured (session 10) the filtered speed at 3
    # cells peaked at 0.49897 without the system (no stage-up) and 0.50031 with it (one stage-up at 2,940 s), so
    # the staged runs compare 3 cells with 4, and 4 cells move the same air for (3/4)^2 of the fan power (54.09 vs
    # 31.70 kWh). At one cell rule more heat costs more: fans, cooling energy and the plant's PUE all rise.
    runs = {}
    for cells in (3, 4):
        for system in (None, "theta"):
            runs[cells, system] = run_cooling_standalone(
                series, tmp_path / f"{cells}{system}.h5", plant="theta", step_s=15.0, weather=Weather.constant(285.0),
                cache_dir=fmu_cache, system=system, cells=cells)
            n_on = _mean_series(tmp_path / f"{cells}{system}.h5", "n_cells_on")
            assert np.all(n_on == cells) and runs[cells, system]["tower_cell_switches"] == 0
    for cells in (3, 4):
        base, s = runs[cells, None], runs[cells, "theta"]
        assert s["E_tower_rejected_J"] > base["E_tower_rejected_J"]
        assert s["E_fan_J"] > base["E_fan_J"] and s["E_cooling_J"] > base["E_cooling_J"]
        assert s["PUE_liquid_plant"] > base["PUE"]
        # the pumps follow the heat (dp control, variable tower water), never less
        pumps = [r["E_pump_sec_J"] + r["E_pump_fac_J"] + r["E_pump_tower_J"] for r in (base, s)]
        assert pumps[1] >= pumps[0]
    # fan law (P = n P_cell s^3, air = n s / N): the same heat needs the same air whatever the cells, so one more
    # cell gives (3/4)^2 of the power while every fan stays above its 0.2 minimum speed (lowest speed here 0.27)
    three, four = runs[3, None], runs[4, None]
    y3, y4 = _mean_series(tmp_path / "3None.h5", "y_fan"), _mean_series(tmp_path / "4None.h5", "y_fan")
    assert np.max(np.abs(y4 - y3)) < 1e-9
    assert four["E_fan_J"] / three["E_fan_J"] == pytest.approx(9 / 16, rel=1e-9)  # 0.5624999999999997


def test_cells_outside_the_bank_are_refused(series, tmp_path):
    for bad in (0, 5, 2.5):
        with pytest.raises(ValueError, match=r"plant theta: cells = .*expected a whole number of tower cells in 1\.\.4"):
            run_cooling_standalone(series, tmp_path / "x.h5", plant="theta", cells=bad)
    assert not (tmp_path / "x.h5").exists()


def test_cli_cooling_prints_its_tower_cells(series, tmp_path, capsys):
    assert main(["cooling", str(series), "--plant", "theta", "--wet-bulb", "12", "--cells", "4",
                 "--out", str(tmp_path / "c4.h5")]) == 0
    assert "tower cells: 4 of 4 (standby 1) held throughout (--cells)" in capsys.readouterr().out
    assert main(["cooling", str(series), "--plant", "theta", "--wet-bulb", "12", "--cells", "9",
                 "--out", str(tmp_path / "c9.h5")]) == 2
    assert "cells = 9; expected a whole number of tower cells in 1..4" in capsys.readouterr().err


def test_cli_design_day(tmp_path, capsys):
    out = tmp_path / "dd.h5"
    assert main(["cooling", "--design-day", "--system", "theta", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    # Theta at full load: 4,392 KNL nodes at 262 W DC through the chain = 1.315 MW; Chicago's design day is
    # August 4 (highest daily mean wet-bulb of the TMY3 year, tests/unit/test_headroom.py)
    assert "full-load IT 1.315 MW, design day 08-04" in text and "above set point + 1 K" in text
    with h5py.File(out) as f:
        assert f["timeseries/facility/P_it_W"][()] == pytest.approx(1.315e6, rel=1e-3)
    assert main(["cooling", "--design-day"]) == 2  # needs --system
    assert "--design-day needs --system" in capsys.readouterr().err
