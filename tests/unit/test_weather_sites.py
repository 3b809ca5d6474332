"""Site weather (issue 11 item 5), leap years and out-of-range values (issue 12), the wet-bulb cache (issue 16).

Expected values come from: the shared data README (site statistics, file hashes), the field case
``leap-year-weather`` (288.04 K on 1 July at noon in every year, not 286.56 K), hand-built files with known bad
cells, and an independent ASHRAE wet-bulb bisection (tests/unit/test_cooling_weather.py).
"""

from __future__ import annotations

import datetime as dt
import gzip
import hashlib
from pathlib import Path

import numpy as np
import pytest

from cooling_fmu.weather import (
    DATA_DIR,
    DEFAULT_TMY3,
    SITES,
    YEAR_S,
    Weather,
    WeatherFileError,
    load_epw,
    load_tmy3,
    load_weather,
    resolve_weather_file,
)

from test_cooling_weather import _ashrae_wet_bulb_C  # noqa: E402  (tests/unit is on sys.path under pytest)

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"
CHICAGO = DATA_DIR / SITES["chicago"][0]
KNOXVILLE = DATA_DIR / SITES["knoxville"][0]


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HPCTWIN_WEATHER_CACHE_DIR", str(tmp_path / "wx-cache"))


def _utc(y, mo, d, h):
    return dt.datetime(y, mo, d, h, tzinfo=dt.timezone.utc).timestamp()


# ---------------------------------------------------------------------------------------------- shipped sites
def test_shipped_site_files_are_the_public_files_unchanged():
    # SHA-256 of the uncompressed EPW files in ../shared/data/weather (copied unchanged from NREL TMY3 copies).
    want = {CHICAGO: "1ec2938273fe83359552e12c1d276515ad95d3ef7ad027f45b133f2172d659c1",
            KNOXVILLE: "8aa535d4471e03e428caf3aa62935699df7d0640838ce53b1e660a8c015f60ce"}
    for path, sha in want.items():
        assert hashlib.sha256(gzip.decompress(path.read_bytes())).hexdigest() == sha
    attribution = (DATA_DIR / "ATTRIBUTION.md").read_text()
    for path in want:
        assert path.name in attribution


@pytest.mark.parametrize("site, utc, elev, tmin, tmean, tmax, pmin, pmax", [
    # shared/data/README.md "weather/" table: UTC offset, elevation, dry-bulb min / mean / max, pressure range
    ("chicago", -6.0, 201.0, -22.8, 10.0, 35.0, 96_200, 101_800),
    ("knoxville", -5.0, 293.0, -14.4, 14.5, 38.3, 95_300, 100_000),
])
def test_site_epw_header_and_statistics(site, utc, elev, tmin, tmean, tmax, pmin, pmax):
    df, rep = load_weather(resolve_weather_file(site))
    assert rep.format == "EPW" and rep.n_rows == 8760
    assert rep.utc_offset_h == utc and rep.elevation_m == elev
    T = df["T_db_K"].to_numpy() - 273.15
    assert T.min() == pytest.approx(tmin, abs=1e-9) and T.max() == pytest.approx(tmax, abs=1e-9)
    assert T.mean() == pytest.approx(tmean, abs=0.06)  # README rounds to 0.1 C
    assert df["p_Pa"].min() == pmin and df["p_Pa"].max() == pmax
    assert rep.n_missing == 0 and rep.dewpoint_clipped == 0
    assert len(rep.source_years) >= 8  # months from many source years (README: 1976-2005)


def test_site_wet_bulb_matches_independent_ashrae_bisection():
    df, _ = load_weather(CHICAGO)
    rows = (2500, 4500, 4800, 6500)  # mid April, early July, mid July (humid), late September
    for i in rows:  # above freezing: the bisection uses saturation over liquid water (psychrolib: ice below 0 C)
        r = df.iloc[i]
        assert r.T_wb_K > 274.0
        want = _ashrae_wet_bulb_C(r.T_db_K - 273.15, r.T_dp_K - 273.15, r.p_Pa) + 273.15
        assert r.T_wb_K == pytest.approx(want, abs=5e-3)


def test_systems_name_their_site_weather():
    from power import load_system

    assert load_system("theta").site_weather == "chicago"
    assert "Argonne" in load_system("theta").site_name
    assert load_system("frontier").site_weather == "knoxville"
    assert "Oak Ridge" in load_system("frontier").site_name


def test_resolve_weather_file_names_the_sites(tmp_path):
    assert resolve_weather_file("Chicago") == CHICAGO
    with pytest.raises(FileNotFoundError, match="golden, knoxville|chicago, golden, knoxville"):
        resolve_weather_file("atlantis")
    f = tmp_path / "w.epw"
    f.write_bytes(gzip.decompress(KNOXVILLE.read_bytes()))
    assert resolve_weather_file("w.epw", tmp_path) == f


# --------------------------------------------------------------------------- precedence: --weather, config, site
def test_weather_precedence_cli_then_config_then_site(tmp_path):
    from power import load_system
    from scheduler_sim.app.config import RunConfig
    from scheduler_sim.app.runner import build_weather, weather_source

    theta = load_system("theta")
    cfg = RunConfig()
    assert weather_source(cfg, theta)[:2] == ("chicago", "system site")
    assert weather_source(cfg.with_overrides({"cooling.weather_path": "knoxville"}), theta)[:2] == \
        ("knoxville", "cooling.weather_path")
    assert weather_source(cfg.with_overrides({"cooling.weather": "constant"}), theta)[0] == "constant"
    # a system without [site] falls back to Golden
    tiny = SHARED / "cases" / "field-2" / "leap-year-weather" / "tiny1.toml"
    if tiny.is_file():
        assert weather_source(cfg, load_system(tiny))[:2] == ("golden", "default")
    # the UTC offset comes from the file header (Chicago: -6), not Golden's -7
    origin = _utc(2022, 7, 1, 18)  # 12:00 CST
    wb, path, desc = build_weather(cfg, origin, theta)
    assert path == CHICAGO and "UTC-6" in desc and "file header" in desc
    df, _ = load_weather(CHICAGO)
    noon = df[(df.month == 7) & (df.day == 1) & (df.hour == 12)].T_wb_K.iloc[0]
    assert wb(np.array([0.0]))[0] == noon
    # an explicit cooling.utc_offset_h wins over the header: -7 shifts the lookup one hour earlier (11:00)
    wb7, _, desc7 = build_weather(cfg.with_overrides({"cooling.utc_offset_h": -7.0}), origin, theta)
    assert wb7(np.array([0.0]))[0] == df[(df.month == 7) & (df.day == 1) & (df.hour == 11)].T_wb_K.iloc[0]
    assert "cooling.utc_offset_h" in desc7


def test_config_keeps_bare_site_names_and_resolves_files(tmp_path):
    from scheduler_sim.app.config import load_config

    (tmp_path / "a.toml").write_text('[cooling]\nweather_path = "knoxville"\n')
    (tmp_path / "b.toml").write_text('[cooling]\nweather = "tmy3"\nweather_path = "w/site.epw"\n')
    assert load_config(tmp_path / "a.toml").cooling.weather_path == "knoxville"
    assert load_config(tmp_path / "b.toml").cooling.weather_path == str((tmp_path / "w" / "site.epw").resolve())


# ------------------------------------------------------------------------------------------------- leap years
@pytest.fixture(scope="module")
def golden_df():
    return load_tmy3(DEFAULT_TMY3)[0]


def _row(df, m, d, h):
    return df[(df.month == m) & (df.day == d) & (df.hour == h)].T_wb_K.iloc[0]


def test_leap_year_case_july_first(golden_df):
    # field-2/leap-year-weather: SWF UnixStartTime 1688238000 (2023) and 1719860400 (2024) are 1 July 19:00 UTC,
    # 12:00 MST at Golden (UTC-7). Right answer: 288.04 K both years (the 2024 run got 2 July's 286.56 K).
    w = Weather.from_file(DEFAULT_TMY3)
    want = _row(golden_df, 7, 1, 12)
    assert want == pytest.approx(288.04, abs=0.005)
    for origin in (1688238000.0, 1719860400.0):
        assert w.at_calendar(origin, -7.0).wet_bulb_K(0.0) == want
    assert w.with_offset(w.at_calendar(1719860400.0, -7.0).offset_s).wet_bulb_K(0.0) == pytest.approx(286.56,
                                                                                                         abs=0.01)


def _local(y, mo, d, h, utc_offset_h=-7.0):
    """Unix time of local standard time y-mo-d h:00 at a UTC offset."""
    return (dt.datetime(y, mo, d, h) - dt.timedelta(hours=utc_offset_h)).replace(tzinfo=dt.timezone.utc).timestamp()


@pytest.mark.parametrize("y", [2023, 2024, 2100, 2000])  # common, leap, common century, leap century
def test_every_year_maps_a_date_to_the_same_weather_hour(golden_df, y):
    w = Weather.from_file(DEFAULT_TMY3)
    for m, d, h in ((1, 1, 5), (2, 28, 12), (7, 1, 12), (12, 31, 12), (12, 31, 23)):
        assert w.at_calendar(_local(y, m, d, h), -7.0).wet_bulb_K(0.0) == _row(golden_df, m, d, h), (y, m, d, h)
    # 1 March 00:00 is the hour-ending stamp "28 Feb 24:00" of the typical year, in every year
    assert w.at_calendar(_local(y, 3, 1, 0), -7.0).wet_bulb_K(0.0) == _row(golden_df, 2, 28, 24)
    # a simulation started on 1 Jan reaches 31 Dec noon, and the next 1 Jan noon, at the same weather hours
    w0 = w.at_calendar(_local(y, 1, 1, 0), -7.0)
    t_dec31_noon = (dt.datetime(y, 12, 31, 12) - dt.datetime(y, 1, 1)).total_seconds()
    assert w0.wet_bulb_K(t_dec31_noon) == _row(golden_df, 12, 31, 12)
    assert w0.wet_bulb_K(t_dec31_noon + 86400.0) == _row(golden_df, 1, 1, 12)


def test_feb_29_repeats_feb_28(golden_df):
    w = Weather.from_file(DEFAULT_TMY3).at_calendar(_local(2024, 1, 1, 0), -7.0)  # t = 0: 2024-01-01 00:00 MST
    feb28 = (31 + 27) * 86400.0
    hours = np.arange(0, 24 * 3600, 900.0) + 450.0
    np.testing.assert_array_equal(w.wet_bulb_K(feb28 + 86400.0 + hours), w.wet_bulb_K(feb28 + hours))
    # the one jump: 29 Feb 00:00 takes 28 Feb 00:00's value (stamp Feb 27 24:00), just before it Feb 28 24:00's
    assert w.wet_bulb_K(feb28 + 86400.0) == _row(golden_df, 2, 27, 24)
    assert w.wet_bulb_K(feb28 + 86400.0 - 1e-6) == pytest.approx(_row(golden_df, 2, 28, 24), abs=1e-6)
    # 1 March 2024 00:30 = 1 March 00:30 of the typical year; linear between the stamps
    mar1 = feb28 + 2 * 86400.0
    assert w.wet_bulb_K(mar1 + 1800.0) == pytest.approx(0.5 * (_row(golden_df, 2, 28, 24) + _row(golden_df, 3, 1, 1)))


def test_runner_uses_trace_calendar_for_leap_case():
    case = SHARED / "cases" / "field-2" / "leap-year-weather"
    if not case.is_dir():
        pytest.skip("field-2 cases not present")
    from dataloaders.registry import load_trace
    from power import load_system
    from scheduler_sim.app.config import RunConfig
    from scheduler_sim.app.runner import build_weather

    system = load_system(case / "tiny1.toml")
    cfg = RunConfig(system=str(case / "tiny1.toml"))
    vals = []
    for y in (2023, 2024):
        jobs = load_trace(case / f"july1_{y}.swf", max_nodes=1, cores_per_node=1).jobs
        wb, path, desc = build_weather(cfg, float(jobs.attrs["time_origin_unix_s"]), system)
        assert path == DEFAULT_TMY3 and "UTC-7" in desc
        vals.append(float(wb(np.array([7.5]))[0]))
    assert vals[0] == vals[1] == pytest.approx(288.04, abs=0.01)


# -------------------------------------------------------------------------------------------- bad values
def _tmy3_with(tmp_path, col, value, rows=range(4300, 4400)):
    lines = gzip.decompress(DEFAULT_TMY3.read_bytes()).decode().splitlines()
    names = [c.strip() for c in lines[1].split(",")]
    data = [r.split(",") for r in lines[2:]]
    for i in rows:
        data[i][names.index(col)] = value
    p = tmp_path / f"bad_{col.split()[0]}.csv"
    p.write_text("\n".join(lines[:2] + [",".join(r) for r in data]) + "\n")
    return p


@pytest.mark.parametrize("col, value", [("Pressure (mbar)", "0"), ("RHum (%)", "101"), ("RHum (%)", "-3"),
                                        ("Dry-bulb (C)", "75"), ("Dew-point (C)", "-120")])
def test_tmy3_impossible_values_name_file_column_and_first_line(tmp_path, col, value):
    # field-2/weather-out-of-range: make.py sets rows 4300-4399 (0-based data rows) -> first bad line 4303
    p = _tmy3_with(tmp_path, col, value)
    with pytest.raises(WeatherFileError) as exc:
        load_weather(p)
    msg = str(exc.value)
    assert str(p) in msg and repr(col) in msg and "line 4303" in msg and "100 row(s)" in msg


def test_missing_code_is_not_out_of_range(tmp_path):
    df, rep = load_weather(_tmy3_with(tmp_path, "Pressure (mbar)", "-9900", rows=[4300]))
    assert rep.missing["Pressure (mbar)"] == 1 and np.all(df["p_Pa"] > 70_000)


def _epw_lines():
    return gzip.decompress(CHICAGO.read_bytes()).decode().splitlines()


@pytest.mark.parametrize("field, value, column", [(9, "0", "Pressure (Pa)"), (8, "130", "RHum (%)"),
                                                  (6, "-95", "Dry-bulb (C)")])
def test_epw_impossible_values(tmp_path, field, value, column):
    lines = _epw_lines()
    r = lines[8 + 100].split(",")  # data row 100 = file line 109
    r[field] = value
    lines[8 + 100] = ",".join(r)
    p = tmp_path / "bad.epw"
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(WeatherFileError, match=rf"bad.epw: column '{column[:3]}.*line 109 \(data row 100\)"):
        load_weather(p)


def test_epw_dew_point_far_above_dry_bulb_rejected_rounding_clipped(tmp_path):
    lines = _epw_lines()
    r = lines[8 + 10].split(",")
    r[7] = f"{float(r[6]) + 5:.1f}"
    lines[8 + 10] = ",".join(r)
    p = tmp_path / "dp.epw"
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(WeatherFileError, match="dp.epw: column 'Dew-point'.*line 19"):
        load_weather(p)
    r[7] = f"{float(r[6]) + 0.3:.1f}"
    lines[8 + 10] = ",".join(r)
    p.write_text("\n".join(lines) + "\n")
    df, rep = load_weather(p)
    assert rep.dewpoint_clipped == 1 and df["T_dp_K"].iloc[10] == df["T_db_K"].iloc[10]


def test_epw_short_or_text_row_named(tmp_path):
    lines = _epw_lines()
    lines[8 + 5] = "1990,1,1,6"
    p = tmp_path / "short.epw"
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(WeatherFileError, match="short.epw: line 14: 4 fields"):
        load_weather(p)


# -------------------------------------------------------------------------------------------- wet-bulb cache
def test_cache_entry_named_by_file_hash_and_bit_identical(tmp_path):
    df0, rep0 = load_epw(KNOXVILLE)
    df1, rep1 = load_weather(KNOXVILLE)  # builds the entry
    sha = hashlib.sha256(KNOXVILLE.read_bytes()).hexdigest()
    entries = list((tmp_path / "wx-cache").glob("*.npz"))
    assert [e.name for e in entries] == [f"wetbulb-v2-{sha}.npz"]
    df2, rep2 = load_weather(KNOXVILLE)  # from the entry
    for c in ("time_s", "T_db_K", "T_dp_K", "p_Pa", "T_wb_K"):
        np.testing.assert_array_equal(df2[c].to_numpy(), df0[c].to_numpy())
    assert rep2.utc_offset_h == -5.0 and rep2.sha256 == sha and rep2.source_years == rep0.source_years


def test_corrupt_or_tampered_cache_entry_is_rebuilt(tmp_path, caplog):
    df0, _ = load_weather(CHICAGO)
    entry = next((tmp_path / "wx-cache").glob("*.npz"))
    good = entry.read_bytes()
    # 1) truncated file
    entry.write_bytes(good[: len(good) // 2])
    with caplog.at_level("WARNING"):
        df1, _ = load_weather(CHICAGO)
    assert "rebuilding" in caplog.text
    np.testing.assert_array_equal(df1["T_wb_K"], df0["T_wb_K"])
    # 2) a well-formed entry whose wet-bulb was changed without fixing the checksum
    with np.load(entry, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["T_wb_K"] = arrays["T_wb_K"] + 1.0
    with open(entry, "wb") as fh:
        np.savez(fh, **arrays)
    caplog.clear()
    with caplog.at_level("WARNING"):
        df2, _ = load_weather(CHICAGO)
    assert "checksum" in caplog.text
    np.testing.assert_array_equal(df2["T_wb_K"], df0["T_wb_K"])
    # the rebuilt entry is good again
    with np.load(entry, allow_pickle=False) as z:
        np.testing.assert_array_equal(z["T_wb_K"], df0["T_wb_K"])


def test_periodic_table_bit_identical_to_numpy_period():
    df, _ = load_tmy3(DEFAULT_TMY3)
    rng = np.random.default_rng(7)
    t = np.concatenate([rng.uniform(-YEAR_S, 5 * YEAR_S, 50_000), np.arange(0.0, 3 * 86400.0, 7.5),
                        [0.0, 3600.0, YEAR_S, YEAR_S - 1e-7]])
    w = Weather(df["time_s"].to_numpy(), df["T_wb_K"].to_numpy(), offset_s=15_638_400.0)
    ref = np.interp(t + 15_638_400.0, df["time_s"].to_numpy(), df["T_wb_K"].to_numpy(), period=YEAR_S)
    np.testing.assert_array_equal(w.wet_bulb_K(t), ref)
    # a calendar in a common year with no leap day in reach changes nothing either (2022 origin, 300 days)
    wc = w.at_calendar(_utc(2022, 1, 1, 7), -7.0)
    tt = np.arange(0.0, 300 * 86400.0, 15.0) + 7.5
    ref2 = np.interp(tt + wc.offset_s, df["time_s"].to_numpy(), df["T_wb_K"].to_numpy(), period=YEAR_S)
    np.testing.assert_array_equal(wc.wet_bulb_K(tt), ref2)
