"""Field faults round 3 (issue #21), grid kinds: values without bounds (kind 6), the price rule at negative prices
and the fallback taken for a forecast (kind 6), the typical-year calendar across leap years (kind 10) and data
warnings under --quiet (kind 15).

Each test writes the smallest input of its kind itself (the field cases in ../shared/cases/field-3 are the same
shapes); the expected values are hand-computed from the inputs.
"""

from __future__ import annotations

import calendar
import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from dataloaders.grid import GridSignalError, load_grid_series
from power.grid import StepSignal
from scheduler_sim.analysis.grid import signal_in_sim_time
from tests.conftest import TINY4_TOML as TINY4, write_tiny4  # the tiny 4-node machine (tests/conftest.py)

ROOT = Path(__file__).resolve().parents[2]
EM_HEAD = ("Datetime (UTC),Country,Zone Name,Zone Id,Carbon Intensity gCO₂eq/kWh (direct),"
           "Carbon Intensity gCO₂eq/kWh (LCA),Low Carbon Percentage,Renewable Percentage,Data Source,"
           "Data Estimated,Data Estimation Method\n")
G_PER_KWH = 1e-3 / 3.6e6  # g/kWh -> kg/J
PER_MWH = 1.0 / 3.6e9  # USD/MWh -> USD/J



def _hours(year: int, month: int, day: int, n: int):
    t0 = dt.datetime(year, month, day, tzinfo=dt.timezone.utc)
    return [(t0 + dt.timedelta(hours=h)).strftime("%Y-%m-%d %H:%M:%S") for h in range(n)]


def _em_file(path: Path, stamps, values) -> Path:
    path.write_text(EM_HEAD + "".join(f"{t},USA,X,US-X,{v},{v},0,0,x,false,\n" for t, v in zip(stamps, values)),
                    encoding="utf-8")
    return path


def _price_file(path: Path, stamps, values) -> Path:
    path.write_text("Datetime,Price (USD/MWh)\n" + "".join(f"{t},{v}\n" for t, v in zip(stamps, values)))
    return path


# ---------------------------------------------------------------- kind 6: grid values without bounds

def test_grid_values_outside_physical_range_are_rejected_with_their_line(tmp_path):
    stamps = _hours(2022, 1, 1, 6)
    p = _em_file(tmp_path / "c.csv", stamps, [400, -400, 2000, 2000.5, 0, 1e6])
    s = load_grid_series(p, "carbon")
    rej = [i for i in s.issues if i.action == "rejected"]
    assert [i.line for i in rej] == [3, 5, 7]  # -400, 2000.5, 1e6; 0 and 2000 are the closed bounds
    assert all(i.reason == "out_of_range" for i in rej)
    v = s.to_file_units(s.values)
    assert v[0] == pytest.approx(400) and np.isnan(v[1]) and v[2] == pytest.approx(2000)
    assert np.isnan(v[3]) and v[4] == 0.0 and s.values.size == 5  # the last (rejected) hour is not in the span
    with pytest.raises(GridSignalError, match=r"line 3.*out of range|out of range.*line 3"):
        load_grid_series(p, "carbon", strict=True)


def test_price_outside_market_range_is_refused_unless_the_range_is_widened(tmp_path):
    stamps = _hours(2022, 1, 1, 4)
    p = _price_file(tmp_path / "p.csv", stamps, [-20.0, -99999.0, 10000.0, 10000.01])
    s = load_grid_series(p, "price")
    assert [(i.line, i.reason) for i in s.issues] == [(3, "out_of_range"), (5, "out_of_range")]
    assert s.to_file_units(s.values[0]) == pytest.approx(-20.0)  # negative prices inside the range are kept
    wide = load_grid_series(p, "price", price_range=(-1e5, 1e5))
    assert not wide.issues and wide.to_file_units(wide.values[1]) == pytest.approx(-99999.0)


def test_grid_value_range_is_checked_in_a_run_and_reported(tmp_path):
    sysf = tmp_path / "tiny4.toml"
    sysf.write_text(TINY4)
    (tmp_path / "two.swf").write_text("1 0 0 3600 4 -1 -1 4 3600 -1 1 1 1 -1 1 -1 -1 -1\n")
    _em_file(tmp_path / "neg.csv", _hours(2022, 1, 1, 48), [-400] * 24 + [400] * 24)
    out = tmp_path / "o.h5"
    r = subprocess.run([sys.executable, "-m", "scheduler_sim", "run", "--system", str(sysf), "--trace",
                        str(tmp_path / "two.swf"), "--start-day", "0", "--days", "1", "--no-cooling", "--carbon",
                        str(tmp_path / "neg.csv"), "--out", str(out)], capture_output=True, text=True, cwd=ROOT)
    assert "24 carbon record(s) rejected" in r.stderr and "line 2" in r.stderr, r.stderr
    with h5py.File(out) as f:  # never -400: the run's day (Jan 1, no trace calendar) takes the fallback
        assert float(f["summary"].attrs["grid_carbon_mean_g_per_kWh"]) > 0
    _em_file(tmp_path / "all.csv", _hours(2022, 1, 1, 4), [-400] * 4)  # nothing left: refused, with the reason
    r = subprocess.run([sys.executable, "-m", "scheduler_sim", "run", "--system", str(sysf), "--trace",
                        str(tmp_path / "two.swf"), "--start-day", "0", "--days", "1", "--no-cooling", "--carbon",
                        str(tmp_path / "all.csv"), "--out", str(tmp_path / "x.h5")], capture_output=True, text=True,
                       cwd=ROOT)
    assert r.returncode == 2 and "line 2" in r.stderr and "out_of_range" in r.stderr, r.stderr


# ---------------------------------------------------------------- kind 6: the price-aware rule

def _view(now, est):
    from types import SimpleNamespace

    return SimpleNamespace(now_s=float(now), estimate_s=np.array([float(est)]), queue_id=None)


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_price_rule_gain_is_relative_to_the_absolute_price_at_either_sign(sign):
    from scheduler_sim.policies.carbon import CarbonAwarePolicy

    v = sign * np.array([20.0, 20.0, 19.5 if sign > 0 else 20.5] + [20.0] * 21) * PER_MWH
    sig = StepSignal(np.arange(25) * 3600.0, v, 20.0 * PER_MWH, "price")
    pol = CarbonAwarePolicy(sig, kind="price", min_gain=0.05)
    assert not pol.holds(0, _view(0.0, 3600.0))  # 2.5 % cheaper is below 5 % at +20 and at -20
    pol2 = CarbonAwarePolicy(sig, kind="price", min_gain=0.02)
    assert pol2.holds(0, _view(0.0, 3600.0))  # and above 2 % at both signs
    assert pol2.best_start(0, _view(0.0, 3600.0), 0.0)[0] == 7200.0


def test_price_rule_near_zero_uses_the_absolute_threshold():
    from scheduler_sim.policies.carbon import CarbonAwarePolicy

    sig = StepSignal(np.arange(4) * 3600.0, np.array([0.2, 0.2, -0.2]) * PER_MWH, 0.0, "price")
    pol = CarbonAwarePolicy(sig, kind="price")  # near_zero 10 USD/MWh, absolute threshold 0.5 USD/MWh
    assert pol.near_zero == pytest.approx(10 * PER_MWH) and pol.min_gain_abs == pytest.approx(0.5 * PER_MWH)
    assert not pol.holds(0, _view(0.0, 3600.0))  # 0.4 USD/MWh cheaper: below 0.5 (relatively it would be 200 %)
    sig2 = StepSignal(np.arange(4) * 3600.0, np.array([0.2, 0.2, -0.4]) * PER_MWH, 0.0, "price")
    assert CarbonAwarePolicy(sig2, kind="price").holds(0, _view(0.0, 3600.0))  # 0.6 > 0.5


def test_price_rule_negative_prices_in_a_run_start_at_once(tmp_path):
    write_tiny4(tmp_path)
    (tmp_path / "one.swf").write_text("1 0 0 3600 4 -1 -1 4 3600 -1 1 1 1 -1 1 -1 -1 -1\n")
    stamps = _hours(2022, 1, 1, 48)
    for name, p_flat, p_dip in (("neg", -20.0, -20.5), ("pos", 20.0, 19.5)):
        _price_file(tmp_path / f"{name}.csv", stamps, [p_dip if h == 2 else p_flat for h in range(48)])
        (tmp_path / f"{name}.toml").write_text(
            f'name = "{name}"\nsystem = "tiny4.toml"\n[trace]\npath = "one.swf"\nwindow_start_days = 0.0\n'
            f'window_days = 1.0\n[scheduler]\npolicy = "price-aware"\n[cooling]\nenabled = false\n[output]\n'
            f'progress = false\n[grid]\nprice = "{name}.csv"\nutc_offset_h = 0.0\n')
        out = tmp_path / f"{name}.h5"
        subprocess.run([sys.executable, "-m", "scheduler_sim", "run", str(tmp_path / f"{name}.toml"), "--out",
                        str(out)], capture_output=True, text=True, cwd=ROOT, check=True)
        with h5py.File(out) as f:
            assert float(f["jobs/sim_start_s"][0]) == 0.0, name


# ---------------------------------------------------------------- kind 6: the fallback is not a forecast

def test_fallback_after_the_series_end_is_not_a_forecast():
    from scheduler_sim.policies.carbon import CarbonAwarePolicy

    # 48 h of 500 g/kWh, then the 100 g/kWh fallback: a 4 h job ready at 40 h must not wait for the fallback
    sig = StepSignal(np.arange(49) * 3600.0, np.full(48, 500.0) * G_PER_KWH, 100.0 * G_PER_KWH, "carbon")
    pol = CarbonAwarePolicy(sig)
    assert not pol.holds(0, _view(40 * 3600.0, 4 * 3600.0))
    # a gap inside the series is not a forecast either
    v = np.full(48, 500.0)
    v[44:48] = np.nan
    gap = CarbonAwarePolicy(StepSignal(np.arange(49) * 3600.0, v * G_PER_KWH, 100.0 * G_PER_KWH, "carbon"))
    assert not gap.holds(0, _view(40 * 3600.0, 4 * 3600.0))
    # known lower values still are: 300 g/kWh from 44 h on, inside the series
    v = np.full(60, 500.0)
    v[44:] = 300.0
    known = CarbonAwarePolicy(StepSignal(np.arange(61) * 3600.0, v * G_PER_KWH, 100.0 * G_PER_KWH, "carbon"))
    assert known.holds(0, _view(40 * 3600.0, 4 * 3600.0))
    assert known.best_start(0, _view(40 * 3600.0, 4 * 3600.0), 40 * 3600.0)[0] == 44 * 3600.0


def test_fallback_is_not_a_forecast_in_a_run(tmp_path):
    write_tiny4(tmp_path)
    (tmp_path / "late.swf").write_text("1 144000 0 14400 4 -1 -1 4 14400 -1 1 1 1 -1 1 -1 -1 -1\n")
    _em_file(tmp_path / "flat.csv", _hours(2022, 1, 1, 48), [500] * 48)
    (tmp_path / "end.toml").write_text(
        'name = "end"\nsystem = "tiny4.toml"\n[trace]\npath = "late.swf"\nwindow_start_days = 0.0\n'
        'window_days = 2.0\n[scheduler]\npolicy = "carbon-aware"\n[cooling]\nenabled = false\n[output]\n'
        'progress = false\n[grid]\ncarbon = "flat.csv"\ncarbon_fallback_g_per_kWh = 100.0\nutc_offset_h = 0.0\n')
    out = tmp_path / "end.h5"
    subprocess.run([sys.executable, "-m", "scheduler_sim", "run", str(tmp_path / "end.toml"), "--out", str(out)],
                   capture_output=True, text=True, cwd=ROOT, check=True)
    with h5py.File(out) as f:
        assert float(f["jobs/sim_start_s"][0]) == 144000.0


# ---------------------------------------------------------------- kind 10: calendar across leap years

def _series(year: int, n_days: int):
    """Hourly carbon series of ``year`` from Jan 1: value = 1000 + hour index [g/kWh] (an hour's own label)."""
    from dataloaders.grid import GridSeries

    n = n_days * 24
    return GridSeries("carbon", float(calendar.timegm((year, 1, 1, 0, 0, 0))), 3600.0,
                      (1000.0 + np.arange(n)) * G_PER_KWH, "gCO2eq/kWh", "lca")


def _read(series, when: dt.datetime) -> float:
    """Value the typical-year signal gives at UTC ``when`` (trace origin = that instant)."""
    origin = when.replace(tzinfo=dt.timezone.utc).timestamp()
    sig, _ = signal_in_sim_time(series, 0.0, origin, calendar="typical-year")
    return float(sig.value_at(0.0)[0]) / G_PER_KWH - 1000.0  # the hour index of the series that was read


def _hour_index(year: int, month: int, day: int, hour: int) -> int:
    return int((dt.datetime(year, month, day, hour) - dt.datetime(year, 1, 1)).total_seconds() // 3600)


@pytest.mark.parametrize("when", [dt.datetime(2025, 1, 10, 0), dt.datetime(2023, 1, 10, 0),
                                  dt.datetime(2024, 3, 1, 0), dt.datetime(2025, 12, 31, 23),
                                  dt.datetime(2028, 7, 4, 13), dt.datetime(2021, 6, 30, 5)])
def test_typical_year_calendar_maps_month_day_hour_in_every_year(when):
    s = _series(2022, 365)
    assert _read(s, when) == _hour_index(2022, when.month, when.day, when.hour)


def test_typical_year_calendar_leap_day_reads_28_february_and_a_leap_series_keeps_dates():
    assert _read(_series(2022, 365), dt.datetime(2024, 2, 29, 7)) == _hour_index(2022, 2, 28, 7)
    leap = _series(2024, 366)  # a leap series year: 1 March 2025 is 1 March 2024, not 29 February
    assert _read(leap, dt.datetime(2025, 3, 1, 0)) == _hour_index(2024, 3, 1, 0)
    assert _read(leap, dt.datetime(2025, 12, 31, 23)) == _hour_index(2024, 12, 31, 23)
    # a run that starts in one year and goes on into the next keeps the mapping (same signal, later time)
    origin = dt.datetime(2023, 12, 31, 0, tzinfo=dt.timezone.utc).timestamp()
    sig, _ = signal_in_sim_time(_series(2022, 365), 0.0, origin, calendar="typical-year")
    t = (dt.datetime(2024, 3, 1, 0, tzinfo=dt.timezone.utc).timestamp() - origin)
    assert float(sig.value_at(t)[0]) / G_PER_KWH - 1000.0 == _hour_index(2022, 3, 1, 0)


def test_typical_year_calendar_uses_the_weather_mapping_function():
    import inspect

    import scheduler_sim.analysis.grid as g

    assert "typical_year_s" in inspect.getsource(g._by_month_day_hour)
    import cooling_fmu.weather as w

    # wet-bulb and dry-bulb read through one lookup, and that lookup maps times with typical_year_s
    assert "self._lookup(" in inspect.getsource(w.Weather.wet_bulb_K)
    assert "self._lookup(" in inspect.getsource(w.Weather.dry_bulb_K)
    assert "typical_year_s(" in inspect.getsource(w.Weather._lookup)


def test_typical_year_calendar_in_a_run_2025_reads_2022_same_date(tmp_path):
    write_tiny4(tmp_path)
    (tmp_path / "y.swf").write_text("1 1736467200 0 3600 4 -1 -1 4 3600 -1 1 1 1 -1 1 -1 -1 -1\n")  # 2025-01-10
    _em_file(tmp_path / "em.csv", _hours(2022, 1, 1, 744), [1000 + h for h in range(744)])
    (tmp_path / "y.toml").write_text(
        'name = "y"\nsystem = "tiny4.toml"\n[trace]\npath = "y.swf"\nwindow_start_days = 0.0\nwindow_days = 1.0\n'
        '[scheduler]\npolicy = "fcfs"\n[cooling]\nenabled = false\n[output]\nprogress = false\n[grid]\n'
        'carbon = "em.csv"\ncalendar = "typical-year"\n')
    out = tmp_path / "y.h5"
    subprocess.run([sys.executable, "-m", "scheduler_sim", "run", str(tmp_path / "y.toml"), "--out", str(out)],
                   capture_output=True, text=True, cwd=ROOT, check=True)
    with h5py.File(out) as f:
        assert float(f["summary"].attrs["grid_carbon_mean_g_per_kWh"]) == pytest.approx(1216.0)


# ---------------------------------------------------------------- kind 15: --quiet hides data warnings

def test_quiet_still_prints_data_warnings(tmp_path):
    write_tiny4(tmp_path)
    (tmp_path / "two.swf").write_text("1 0 0 3600 4 -1 -1 4 3600 -1 1 1 1 -1 1 -1 -1 -1\n")
    stamps = _hours(2022, 1, 1, 48)
    rows = list(zip(stamps, [400] * 48))
    rows.insert(4, (stamps[3], 9999))  # a duplicate hour (and out of range)
    rows.insert(7, (stamps[5], 400))  # a plain duplicate hour
    _em_file(tmp_path / "dup.csv", [r[0] for r in rows], [r[1] for r in rows])
    out = tmp_path / "q.h5"
    r = subprocess.run([sys.executable, "-m", "scheduler_sim", "run", "--system", str(tmp_path / "tiny4.toml"),
                        "--trace", str(tmp_path / "two.swf"), "--start-day", "0", "--days", "1", "--no-cooling",
                        "--carbon", str(tmp_path / "dup.csv"), "--quiet", "--out", str(out)],
                       capture_output=True, text=True, cwd=ROOT, env={**os.environ, "COLUMNS": "200"})
    assert r.returncode == 0, r.stderr
    assert "2 carbon record(s) rejected" in r.stderr, r.stderr
    assert "line 6" in r.stderr and "line 9" in r.stderr
    with h5py.File(out) as f:
        info = json.loads(f["provenance"].attrs["info_json"])
    assert any("2 carbon record(s) rejected" in w for w in info["warnings"])


def test_grid_value_bounds_apply_to_the_constant_fallbacks_too():
    from scheduler_sim.app.config import ConfigError, RunConfig
    from scheduler_sim.app.grid import build_grid_signals

    with pytest.raises((ConfigError, ValueError), match="carbon_fallback_g_per_kWh"):
        RunConfig.model_validate({"name": "x", "grid": {"carbon_fallback_g_per_kWh": 2500.0}})
    cfg = RunConfig.model_validate({"name": "x", "grid": {"price_fallback_per_MWh": -5000.0},
                                    "cooling": {"enabled": False}})
    with pytest.raises(GridSignalError, match=r"-5000 USD/MWh is outside.*\[-1000, 10000\]"):
        build_grid_signals(cfg, float("nan"), 0.0)
    wide = cfg.with_overrides({"grid.price_range_per_MWh": [-1e4, 1e4]})
    assert "price" in build_grid_signals(wide, float("nan"), 0.0).signals
