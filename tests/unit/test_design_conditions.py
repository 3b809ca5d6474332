"""Unit tests: annual design conditions (ASHRAE Fundamentals ch. 14 definition) from the shipped EPW files."""

from __future__ import annotations

import csv
import gzip
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cooling_fmu.weather import DATA_DIR, SITES, DesignConditions, Weather, design_conditions, load_weather

SHIPPED_EPW = [DATA_DIR / SITES[s][0] for s in ("chicago", "knoxville")]
SHARED = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "weather"


def _epw_dry_bulb_C(path: Path) -> np.ndarray:
    """Independent read: EPW data rows after 8 header lines, dry-bulb is field 7 (index 6)."""
    raw = path.read_bytes()
    text = (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode()
    rows = list(csv.reader(text.splitlines()[8:]))
    return np.array([float(r[6]) for r in rows])


def test_exceedance_order_statistic_on_a_hand_series():
    # 1..1000 K: 0.4 % of 1000 h = 4 h may lie above -> the 5th largest, 996; mean coincident at 996 +/- 0.5 K is
    # the other column at that single hour.
    v = np.arange(1.0, 1001.0)
    dc = design_conditions(pd.DataFrame({"T_db_K": v, "T_wb_K": v[::-1].copy()}), percent=0.4)
    assert dc.dry_bulb_K == 996.0 and dc.wet_bulb_K == 996.0
    assert dc.mcwb_K == 5.0 and dc.mcdb_K == 5.0
    assert dc.coldest_dry_bulb_K == 1.0 and dc.hours == 1000


@pytest.mark.parametrize("path", SHIPPED_EPW, ids=lambda p: p.name[:20])
def test_design_conditions_match_hand_quantile_of_shipped_epw(path):
    dc = design_conditions(path)
    assert isinstance(dc, DesignConditions) and dc.hours == 8760
    tdb = _epw_dry_bulb_C(path) + 273.15
    # hand: 0.4 % of 8,760 h = 35.04 h -> at most 35 hours strictly above, the 36th largest value
    s = np.sort(tdb)[::-1]
    assert dc.dry_bulb_K == pytest.approx(s[35], abs=1e-9)
    assert (tdb > dc.dry_bulb_K + 1e-9).sum() <= 35 < (tdb >= dc.dry_bulb_K - 1e-9).sum()
    assert dc.coldest_dry_bulb_K == pytest.approx(tdb.min(), abs=1e-9)
    df, _ = load_weather(path)
    wb = df["T_wb_K"].to_numpy()
    assert dc.wet_bulb_K == pytest.approx(np.sort(wb)[::-1][35], abs=1e-12)
    assert (wb > dc.wet_bulb_K).sum() <= 35 < (wb >= dc.wet_bulb_K).sum()
    band = np.abs(wb - dc.wet_bulb_K) <= 0.5 + 1e-9
    assert dc.mcdb_K == pytest.approx(df["T_db_K"].to_numpy()[band].mean(), abs=1e-12)
    # physics: wet-bulb <= coincident dry-bulb; design dry-bulb above its coincident wet-bulb
    assert dc.wet_bulb_K <= dc.mcdb_K and dc.mcwb_K < dc.dry_bulb_K
    assert path.name in dc.source and "ASHRAE" in dc.source and "ch. 14" in dc.source


def test_design_conditions_of_shipped_sites_are_plausible():
    # Knoxville TMY3: summer design wet-bulb ~24-26 C, dry-bulb 0.4 % ~33-35 C (ASHRAE 2009 station 723260 lists
    # 0.4 % DB 33.9 C; TMY3 is a typical year, so only a band is asserted); Chicago colder in winter.
    knox = design_conditions(SHIPPED_EPW[1])
    chi = design_conditions(SHIPPED_EPW[0])
    assert 296.0 < knox.wet_bulb_K < 300.0 and 304.0 < knox.dry_bulb_K < 309.0
    assert chi.coldest_dry_bulb_K < knox.coldest_dry_bulb_K < 273.15


def test_design_conditions_accepts_loader_tuple_weather_and_percent():
    path = SHIPPED_EPW[1]
    a = design_conditions(path)
    assert design_conditions(load_weather(path)) == a
    assert design_conditions(Weather.from_file(path)) == a
    b = design_conditions(path, percent=2.0)
    assert b.wet_bulb_K <= a.wet_bulb_K and b.dry_bulb_K <= a.dry_bulb_K and b.percent == 2.0
    with pytest.raises(ValueError, match="percent"):
        design_conditions(path, percent=0.0)
    with pytest.raises(ValueError, match="no weather file"):
        design_conditions(Weather.constant(290.0))
    with pytest.raises(ValueError, match="T_wb_K"):
        design_conditions(pd.DataFrame({"T_db_K": [300.0]}))


@pytest.mark.skipif(not (SHARED / "FIN_Helsinki.029740_IWEC.epw").exists(), reason="shared weather not present")
def test_helsinki_coldest_hour_is_the_file_minimum():
    path = SHARED / "FIN_Helsinki.029740_IWEC.epw"
    dc = design_conditions(path)
    assert dc.coldest_dry_bulb_K == pytest.approx(_epw_dry_bulb_C(path).min() + 273.15, abs=1e-9)
    assert dc.coldest_dry_bulb_K < 263.15 and dc.wet_bulb_K < 295.0
