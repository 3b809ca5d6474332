"""Field faults round 3 (issue #21) kind 5: missing weather is never invented silently.

EPW missing-value codes (EnergyPlus Auxiliary Programs, Weather Converter, EPW data dictionary): dry-bulb and dew
point 99.9 C, relative humidity 999 %, station pressure 999999 Pa; TMY3: -9900. Gaps up to 6 h are linearly
interpolated and reported on every run (from the cache too, under --quiet) and in the run file; longer gaps are
refused with the file, the first line and the field unless cooling.accept_weather_gaps accepts them.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from cooling_fmu.weather import DATA_DIR, MAX_INTERPOLATED_GAP_H, WeatherFileError, load_weather

from conftest import SHARED_DATA

ROOT = Path(__file__).resolve().parents[2]
CHICAGO_EPW = DATA_DIR / "USA_IL_Chicago-OHare.Intl.AP.725300_TMY3.epw.gz"


def _epw_with_gap(tmp_path: Path, first_row: int, hours: int, fields=(6,), name="gap.epw") -> Path:
    """The shipped Chicago EPW with the missing code in ``fields`` for ``hours`` data rows from ``first_row``."""
    codes = {6: "99.9", 7: "99.9", 8: "999", 9: "999999"}
    lines = gzip.open(CHICAGO_EPW, "rt", encoding="utf-8", newline="").read().splitlines(keepends=True)
    for i in range(8 + first_row, 8 + first_row + hours):
        end = lines[i][len(lines[i].rstrip("\r\n")):]
        f = lines[i].rstrip("\r\n").split(",")
        for k in fields:
            f[k] = codes[k]
        lines[i] = ",".join(f) + end
    p = tmp_path / name
    p.write_text("".join(lines), encoding="utf-8", newline="")
    return p


@pytest.fixture
def wx_cache(tmp_path, monkeypatch):
    d = tmp_path / "wxcache"
    monkeypatch.setenv("HPCTWIN_WEATHER_CACHE_DIR", str(d))
    return d


def test_weather_gap_up_to_limit_is_interpolated_and_reported_from_the_cache_too(tmp_path, wx_cache):
    p = _epw_with_gap(tmp_path, 4000, 3)
    df0, _ = load_weather(CHICAGO_EPW, cache=False)
    for _ in range(2):  # first parse, then from the cache entry
        df, rep = load_weather(p)
        assert rep.missing["Dry-bulb (C)"] == 3 and rep.gaps == [["Dry-bulb (C)", 4009, 3]]  # line = 8 + row + 1
        w = rep.data_warnings()
        assert len(w) == 1 and "3 missing hour(s) in 1 gap(s), longest 3 h from line 4009" in w[0]
        t = df0["T_db_K"].to_numpy()
        expect = np.interp([4000, 4001, 4002], [3999, 4003], [t[3999], t[4003]])
        np.testing.assert_allclose(df["T_db_K"].to_numpy()[4000:4003], expect, rtol=0, atol=1e-9)
    assert len(list(wx_cache.glob("*.npz"))) == 1


def test_weather_gap_longer_than_limit_is_refused_with_file_line_and_field(tmp_path, wx_cache):
    p = _epw_with_gap(tmp_path, 5000, MAX_INTERPOLATED_GAP_H + 1, fields=(9,))
    with pytest.raises(WeatherFileError) as e:
        load_weather(p)
    msg = str(e.value)
    assert str(p) in msg and "'Pressure (Pa)'" in msg and "7 consecutive missing hours from line 5009" in msg
    df, rep = load_weather(p, accept_long_gaps=True)  # the documented flag; still reported
    assert rep.longest_gap == ["Pressure (Pa)", 5009, 7] and rep.data_warnings()
    with pytest.raises(WeatherFileError):  # an accepted file in the cache is refused again without the flag
        load_weather(p)


def test_weather_gap_wrapping_the_year_is_one_gap(tmp_path, wx_cache):
    lines = gzip.open(CHICAGO_EPW, "rt", encoding="utf-8", newline="").read().splitlines(keepends=True)
    for i in list(range(8, 12)) + list(range(len(lines) - 4, len(lines))):  # 4 h at each end: 8 h across New Year
        f = lines[i].rstrip("\r\n").split(",")
        f[7] = "99.9"
        lines[i] = ",".join(f) + lines[i][len(lines[i].rstrip("\r\n")):]
    p = tmp_path / "wrap.epw"
    p.write_text("".join(lines), encoding="utf-8", newline="")
    with pytest.raises(WeatherFileError, match="8 consecutive missing hours"):
        load_weather(p)


def test_weather_gaps_tmy3_missing_code_counts_too(tmp_path, wx_cache):
    src = DATA_DIR / "724666TY.csv.gz"
    lines = gzip.open(src, "rt", encoding="utf-8", newline="").read().splitlines(keepends=True)
    head = [c.strip() for c in lines[1].split(",")]
    j = head.index("Dry-bulb (C)")
    for i in range(2 + 100, 2 + 110):  # 10 h
        f = lines[i].rstrip("\r\n").split(",")
        f[j] = "-9900"
        lines[i] = ",".join(f) + lines[i][len(lines[i].rstrip("\r\n")):]
    p = tmp_path / "gap.csv"
    p.write_text("".join(lines), encoding="utf-8", newline="")
    with pytest.raises(WeatherFileError, match=r"'Dry-bulb \(C\)': 10 consecutive missing hours from line 103"):
        load_weather(p)


def _shipped_weather():
    files = sorted(DATA_DIR.glob("*.epw.gz")) + sorted(DATA_DIR.glob("*.csv.gz"))
    if SHARED_DATA.is_dir():
        files += sorted((SHARED_DATA / "weather").glob("*.epw")) + [SHARED_DATA / "weather" / "724666TY.csv"]
    return files


@pytest.mark.parametrize("path", _shipped_weather(), ids=lambda p: p.name)
def test_weather_gaps_shipped_files_stay_within_the_limit(path):
    _, rep = load_weather(path, cache=False)  # would raise on a gap over the limit
    assert all(g[2] <= MAX_INTERPOLATED_GAP_H for g in rep.gaps)


from tests.conftest import TINY4_TOML as TINY4  # noqa: E402 - the tiny 4-node machine


def test_weather_gaps_reported_on_every_run_under_quiet_and_in_the_file(tmp_path):
    (tmp_path / "tiny4.toml").write_text(TINY4)
    (tmp_path / "jul.swf").write_text("1 0 0 3600 4 -1 -1 4 3600 -1 1 1 1 -1 1 -1 -1 -1\n")
    p = _epw_with_gap(tmp_path, 4400, 5, fields=(6, 7))
    env = {**os.environ, "HPCTWIN_WEATHER_CACHE_DIR": str(tmp_path / "wxc")}
    for k in range(2):  # the second run reads the parsed weather from the cache
        out = tmp_path / f"r{k}.h5"
        r = subprocess.run([sys.executable, "-m", "scheduler_sim", "run", "--system", str(tmp_path / "tiny4.toml"),
                            "--trace", str(tmp_path / "jul.swf"), "--start-day", "0", "--days", "0.1", "--weather",
                            str(p), "--cooling", "fast", "--quiet", "--out", str(out)],
                           capture_output=True, text=True, cwd=ROOT, env=env)
        assert r.returncode == 0, r.stderr
        assert "Dry-bulb (C): 5 missing hour(s) in 1 gap(s), longest 5 h from line 4409" in r.stderr, r.stderr
        assert "Dew-point (C): 5 missing hour(s)" in r.stderr
        with h5py.File(out) as f:
            info = json.loads(f["provenance"].attrs["info_json"])
        assert info["weather_gaps"]["gaps"] == [["Dry-bulb (C)", 4409, 5], ["Dew-point (C)", 4409, 5]]
        assert sum("missing hour(s)" in w for w in info["warnings"]) == 2
    assert list((tmp_path / "wxc").glob("*.npz"))
    long = _epw_with_gap(tmp_path, 4400, 30, name="long.epw")
    r = subprocess.run([sys.executable, "-m", "scheduler_sim", "run", "--system", str(tmp_path / "tiny4.toml"),
                        "--trace", str(tmp_path / "jul.swf"), "--start-day", "0", "--days", "0.1", "--weather",
                        str(long), "--cooling", "fast", "--quiet", "--out", str(tmp_path / "x.h5")],
                       capture_output=True, text=True, cwd=ROOT, env=env)
    assert r.returncode == 2 and "30 consecutive missing hours from line 4409" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
