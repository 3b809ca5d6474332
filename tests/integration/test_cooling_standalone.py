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
    # make-up water ~ 0.85 Q / h_fg x COC / (COC - 1) at steady heat rejection = IT heat
    assert s["water_makeup_kg"] == pytest.approx(0.85 * s["E_it_J"] / 2.44e6 * 4 / 3, rel=0.02)
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
