"""Unit tests: TMY3 loading, wet-bulb psychrometrics, periodic interpolation."""

from __future__ import annotations

import gzip
import math

import numpy as np
import pytest

from cooling_fmu.weather import DEFAULT_TMY3, YEAR_S, Weather, default_weather, load_tmy3, wet_bulb_K


def _ashrae_wet_bulb_C(t_db: float, t_dp: float, p: float) -> float:
    """Independent hand implementation: ASHRAE Fundamentals 2017 ch. 1, eqs. 5-6 (Hyland-Wexler p_ws over
    water), 22 (humidity ratio), 33 (W from wet-bulb, above freezing); bisection on t_wb."""

    def p_ws(t: float) -> float:
        T = t + 273.15
        c = (-5.8002206e3, 1.3914993, -4.8640239e-2, 4.1764768e-5, -1.4452093e-8, 6.5459673)
        return math.exp(c[0] / T + c[1] + c[2] * T + c[3] * T**2 + c[4] * T**3 + c[5] * math.log(T))

    w = 0.621945 * p_ws(t_dp) / (p - p_ws(t_dp))

    def w_from_wb(t_wb: float) -> float:
        ws = 0.621945 * p_ws(t_wb) / (p - p_ws(t_wb))
        return ((2501 - 2.326 * t_wb) * ws - 1.006 * (t_db - t_wb)) / (2501 + 1.86 * t_db - 4.186 * t_wb)

    lo, hi = t_dp, t_db
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if w_from_wb(mid) < w else (lo, mid)
    return 0.5 * (lo + hi)


def test_wet_bulb_hand_psychrometric_point():
    # 30 C dry-bulb, 20 C dew point, 101,325 Pa: psychrolib 22.94 C; independent ASHRAE eq. 33 bisection agrees.
    # (A psychrometric chart read gives ~22.9-23 C; the brief's "~22.6 C" is not what the ASHRAE equations give.)
    twb = wet_bulb_K(np.array([303.15]), np.array([293.15]), 101325.0)[0] - 273.15
    assert twb == pytest.approx(22.939, abs=2e-3)
    assert twb == pytest.approx(_ashrae_wet_bulb_C(30.0, 20.0, 101325.0), abs=5e-3)
    assert 20.0 < twb < 30.0


@pytest.fixture(scope="module")
def golden():
    return load_tmy3(DEFAULT_TMY3)


def test_tmy3_layout_and_time_axis(golden):
    df, rep = golden
    assert len(df) == 8760 and rep.n_rows == 8760
    assert rep.elevation_m == 1829.0 and rep.station_id == "724666"
    # hour-ending stamps: first row "1/1/1999,1:00" -> 3,600 s; last "12/31/1996,24:00:00" -> 8,760 h
    assert df.time_s.iloc[0] == 3600.0 and df.time_s.iloc[-1] == YEAR_S
    assert np.all(np.diff(df.time_s) == 3600.0)
    assert rep.hour_formats == {"H:MM": 8395, "24:00:00": 365}
    # months from mixed source years
    assert len(rep.source_years) == 7 and sum(rep.source_years.values()) == 8760
    assert rep.n_missing == 0
    # station pressure at 1,829 m (~806 mbar), not sea level
    assert 79_000 < df.p_Pa.median() < 83_000


def test_wet_bulb_between_dew_point_and_dry_bulb(golden):
    df, _ = golden
    assert np.all(df.T_wb_K <= df.T_db_K + 1e-9)
    assert np.all(df.T_wb_K >= df.T_dp_K - 1e-9)
    # never dry-bulb as wet-bulb: Golden is dry, so the depression is large on average
    assert (df.T_db_K - df.T_wb_K).mean() > 3.0


def test_missing_cells_are_reported_and_interpolated(tmp_path, caplog):
    lines = gzip.decompress(DEFAULT_TMY3.read_bytes()).decode().splitlines()
    header = lines[1].split(",")
    i_db, i_p = header.index("Dry-bulb (C)"), header.index("Pressure (mbar)")
    rows = [r.split(",") for r in lines[2:]]
    before, after = float(rows[99][i_db]), float(rows[101][i_db])
    rows[100][i_db] = "-9900"
    rows[5000][i_p] = "-9900"
    rows[5001][i_p] = "-9900"
    path = tmp_path / "gaps.csv"
    path.write_text("\n".join(lines[:2] + [",".join(r) for r in rows]) + "\n")
    with caplog.at_level("WARNING"):
        df, rep = load_tmy3(path)
    assert rep.missing["Dry-bulb (C)"] == 1 and rep.missing_rows["Dry-bulb (C)"] == [100]
    assert rep.missing["Pressure (mbar)"] == 2 and rep.missing_rows["Pressure (mbar)"] == [5000, 5001]
    assert rep.n_missing == 3 and any("interpolated" in n for n in rep.notes)
    # reported by the report (every run prints it, from the cache too), not by a log line at first parse only
    w = rep.data_warnings()
    assert len(w) == 2 and "Dry-bulb (C): 1 missing hour(s) in 1 gap(s), longest 1 h from line 103" in w[0]
    # linear interpolation between the neighbours (hourly grid -> midpoint)
    assert df.T_db_K.iloc[100] == pytest.approx(0.5 * (before + after) + 273.15)
    assert np.all(np.isfinite(df.T_wb_K)) and df.p_Pa.min() > 70_000


def test_weather_interpolation_periodic_and_offset(golden):
    df, _ = golden
    w = default_weather()
    # exact at the hour-ending stamps
    assert w.wet_bulb_K(np.array([3600.0, 7200.0])) == pytest.approx(df.T_wb_K.iloc[:2].to_numpy())
    # linear between them
    assert w.wet_bulb_K(5400.0) == pytest.approx(df.T_wb_K.iloc[:2].mean())
    # periodic over the 8,760-h year
    assert w.wet_bulb_K(3600.0 + YEAR_S) == pytest.approx(df.T_wb_K.iloc[0])
    # offset: simulation t = 0 at July 15 00:00 -> day 196, stamp (195 x 24) h = hour ending 00:00 on July 15
    off = Weather.offset_for(196, 0.0)
    assert off == 195 * 24 * 3600.0
    row = df.index[(df.month == 7) & (df.day == 15) & (df.hour == 12)][0]
    assert default_weather(off).wet_bulb_K(12 * 3600.0) == pytest.approx(df.T_wb_K.iloc[row])


def test_constant_weather():
    w = Weather.constant(290.0)
    t = np.linspace(0, 3 * YEAR_S, 7)
    assert np.all(w.wet_bulb_K(t) == 290.0) and w.wet_bulb_K(t).shape == (7,)


def _write_epw(path, df, year_of_row, leap=False, missing=()):
    """An EPW file carrying the TMY3 data (wet-bulb must come out identical)."""
    head = ["LOCATION,Golden,CO,USA,TMY3,724666,39.74,-105.18,-7.0,1829.0"] + [f"HEADER {i}" for i in range(7)]
    rows = []
    for k, r in enumerate(df.itertuples()):
        T_db, T_dp = r.T_db_K - 273.15, r.T_dp_K - 273.15
        if k in missing:
            T_dp = 99.9
        rows.append(f"{year_of_row(r.month)},{r.month},{r.day},{r.hour},60,?,{T_db:.10f},{T_dp:.10f},"
                    f"{r.RH * 100:.6f},{r.p_Pa:.6f},0")
        if leap and r.month == 2 and r.day == 28 and r.hour == 24:
            rows += [f"2000,2,29,{h},60,?,1.0,-5.0,50,80000,0" for h in range(1, 25)]
    path.write_text("\n".join(head + rows) + "\n")


def test_epw_loader_matches_tmy3_and_reports_quirks(tmp_path):
    from cooling_fmu.weather import DEFAULT_TMY3, load_epw, load_tmy3

    df, _ = load_tmy3(DEFAULT_TMY3)
    path = tmp_path / "golden.epw"
    _write_epw(path, df, lambda m: 1990 + m % 3, leap=True, missing=(5000,))
    got, rep = load_epw(path)
    assert rep.n_rows == 8760 and rep.elevation_m == 1829.0 and len(rep.source_years) == 3
    assert rep.missing["Dew-point (C)"] == 1 and rep.missing_rows["Dew-point (C)"] == [5000]
    assert any("Feb 29" in n for n in rep.notes)
    np.testing.assert_array_equal(got["time_s"], df["time_s"])
    ok = np.ones(8760, bool)
    ok[5000] = False
    np.testing.assert_allclose(got["T_wb_K"][ok], df["T_wb_K"][ok], atol=1e-6)
    assert abs(got["T_wb_K"][5000] - df["T_wb_K"][5000]) < 1.0  # interpolated dew point, reported


def test_epw_rejects_non_epw(tmp_path):
    from cooling_fmu.weather import load_epw

    p = tmp_path / "x.epw"
    p.write_text("not,an,epw\n")
    with pytest.raises(ValueError, match="LOCATION"):
        load_epw(p)
