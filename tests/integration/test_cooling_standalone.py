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


@pytest.mark.xfail(strict=True, reason=(
    "known defect (session 9, after Theta was sized at its design day with a 4-cell bank and a standby cell): with "
    "the system the towers reject 238 kWh more (the air side) but the tower fans use 31.7 kWh against 54.1 kWh "
    "without it, so the liquid plant's energy falls (455.2 vs 477.6 kWh); the two paths run the bank differently "
    "and the cause is not found yet. The air-side balance of this test still holds (checked in the first assert)"))
def test_standalone_with_a_system_counts_its_facility_stages(series, tmp_path, fmu_cache):
    # the Theta-like plant and system (liquid_fraction 1): the racks' heat is the same, and with the system the air
    # side's heat (CRAH coil + its fans + the chilled water's power) goes through the towers too (plant v5, issue 22
    # item 4), so the towers reject that much more and the liquid plant works a little harder
    base = run_cooling_standalone(series, tmp_path / "a.h5", plant="theta", step_s=15.0,
                                  weather=Weather.constant(285.0), cache_dir=fmu_cache)
    s = run_cooling_standalone(series, tmp_path / "b.h5", plant="theta", step_s=15.0,
                               weather=Weather.constant(285.0), cache_dir=fmu_cache, system="theta")
    air_side_J = s["E_air_heat_J"] + s["E_air_fan_J"] + s["E_air_chiller_J"]
    assert s["E_tower_rejected_J"] - base["E_tower_rejected_J"] == pytest.approx(air_side_J, rel=1e-4)  # 2.7e-5: heat stored
    assert s["E_cooling_J"] > base["E_cooling_J"] and s["PUE_liquid_plant"] > base["PUE"]
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
