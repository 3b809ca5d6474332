"""Outdoor wet-bulb temperature for the cooling towers, from an NREL TMY3 file or a constant.

The cooling tower sees the WET-bulb temperature. It is computed here with psychrolib (SI) from dry-bulb, dew point
and station pressure (or from relative humidity where the dew point is missing); dry-bulb is never used as wet-bulb.

TMY3 layout (NREL, "Users Manual for TMY3 Data Sets", NREL/TP-581-43156, 2008): row 1 is station metadata
(USAF id, name, state, UTC offset, latitude, longitude, elevation in m), row 2 the column names, then 8,760 hourly
rows. Stamps are local standard time and HOUR-ENDING: the row stamped ``H:00`` holds values for the hour ending at H
(``1:00`` is the hour 00:00-01:00; the last row of a day is written ``24:00`` or ``24:00:00``). Months come from
different source years; they are mapped onto one typical (non-leap) year starting Jan 1 00:00, and
``time_s = ((day_of_year - 1) * 24 + H) * 3600`` is the hour-ending stamp in seconds since the start of that year
(3,600 s for the first row, 31,536,000 s for the last). Missing values are ``-9900``: they are reported in the
:class:`WeatherReport` (and logged), then linearly interpolated in time, never silently.
"""

from __future__ import annotations

import csv
import gzip
import io
import logging
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd
import psychrolib

__all__ = ["YEAR_S", "Weather", "WeatherReport", "default_weather", "load_epw", "load_tmy3", "wet_bulb_K"]

log = logging.getLogger(__name__)

#: Length of the typical (non-leap) year [s]: 8,760 h.
YEAR_S = 8760 * 3600.0
#: Missing-value sentinel of TMY3 files.
MISSING = -9900.0
ZERO_C_K = 273.15
DATA_DIR = Path(__file__).resolve().parent / "data"
DEFAULT_TMY3 = DATA_DIR / "724666TY.csv.gz"

_COLS = {"Dry-bulb (C)": "T_db_C", "Dew-point (C)": "T_dp_C", "RHum (%)": "RH_pct", "Pressure (mbar)": "p_mbar"}
_CUM_DAYS = np.cumsum([0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])


@dataclass
class WeatherReport:
    """What was found and repaired while loading a weather file.

    Attributes
    ----------
    path : str
        File read.
    station_id, station_name : str
        From the metadata row.
    elevation_m : float
        Station elevation [m] (metadata row).
    n_rows : int
        Data rows (8,760 for a TMY3 year).
    source_years : dict of int to int
        Rows per source year (TMY months come from different years).
    missing : dict of str to int
        ``-9900`` cells per used column (``Dry-bulb (C)``, ``Dew-point (C)``, ``RHum (%)``, ``Pressure (mbar)``).
    missing_rows : dict of str to list of int
        Data-row numbers (0-based, after the two header rows) of the missing cells, per column.
    hour_formats : dict of str to int
        Count of time stamps per format (``"H:MM"``, ``"24:00:00"``, ...).
    dewpoint_clipped : int
        Rows whose dew point exceeded the dry-bulb and was clipped to it.
    wet_bulb_from_rh : int
        Rows whose wet-bulb came from relative humidity because the dew point was missing.
    notes : list of str
        Human-readable notes.
    """

    path: str
    station_id: str = ""
    station_name: str = ""
    elevation_m: float = float("nan")
    n_rows: int = 0
    source_years: dict[int, int] = field(default_factory=dict)
    missing: dict[str, int] = field(default_factory=dict)
    missing_rows: dict[str, list[int]] = field(default_factory=dict)
    hour_formats: dict[str, int] = field(default_factory=dict)
    dewpoint_clipped: int = 0
    wet_bulb_from_rh: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def n_missing(self) -> int:
        """int: total missing cells in the used columns."""
        return sum(self.missing.values())


def _read_text(path: Path) -> str:
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return raw.decode("utf-8-sig", errors="replace")


def wet_bulb_K(T_db_K: np.ndarray, T_dp_K: np.ndarray, p_Pa: np.ndarray) -> np.ndarray:
    """Wet-bulb temperature from dry-bulb, dew point and pressure (psychrolib, SI).

    Parameters
    ----------
    T_db_K : ndarray, shape (n,)
        Dry-bulb temperature [K].
    T_dp_K : ndarray, shape (n,)
        Dew-point temperature [K], <= dry-bulb.
    p_Pa : ndarray, shape (n,) or float
        Station (not sea-level) pressure [Pa].

    Returns
    -------
    ndarray, shape (n,)
        Thermodynamic wet-bulb temperature [K] (ASHRAE Handbook Fundamentals 2017, ch. 1, eq. 33 and 35, as
        implemented by psychrolib ``GetTWetBulbFromTDewPoint``).

    Raises
    ------
    ValueError
        If a dew point exceeds its dry-bulb (psychrolib's check).
    """
    psychrolib.SetUnitSystem(psychrolib.SI)
    tdb = np.atleast_1d(np.asarray(T_db_K, dtype=float)) - ZERO_C_K
    tdp = np.atleast_1d(np.asarray(T_dp_K, dtype=float)) - ZERO_C_K
    p = np.broadcast_to(np.asarray(p_Pa, dtype=float), tdb.shape)
    out = np.array([psychrolib.GetTWetBulbFromTDewPoint(a, b, c) for a, b, c in zip(tdb, tdp, p)])
    return out + ZERO_C_K


def load_tmy3(path: str | Path) -> tuple[pd.DataFrame, WeatherReport]:
    """Load an NREL TMY3 CSV (plain or gzip) and compute the wet-bulb temperature.

    Parameters
    ----------
    path : str or pathlib.Path
        TMY3 file (layout in the module docstring).

    Returns
    -------
    df : pandas.DataFrame
        One row per hour, columns ``time_s`` (hour-ending stamp, s since Jan 1 00:00 of the typical year),
        ``month``, ``day``, ``hour`` (1-24, hour ending), ``source_year``, ``T_db_K``, ``T_dp_K``, ``RH``
        (fraction), ``p_Pa`` (station pressure), ``T_wb_K``.
    report : WeatherReport
        Missing cells, formats, source years and repairs.

    Raises
    ------
    ValueError
        If a required column is absent, a time stamp or date cannot be parsed, the rows are not one hourly
        non-leap year in order, or a column is entirely missing.
    """
    path = Path(path)
    text = _read_text(path)
    lines = text.splitlines()
    if len(lines) < 3:
        raise ValueError(f"{path}: too short for a TMY3 file")
    meta = next(csv.reader([lines[0]]))
    report = WeatherReport(path=str(path))
    report.station_id = meta[0].strip() if meta else ""
    report.station_name = meta[1].strip() if len(meta) > 1 else ""
    try:
        report.elevation_m = float(meta[6])
    except (IndexError, ValueError):
        report.notes.append("metadata row has no elevation")
    df_raw = pd.read_csv(io.StringIO("\n".join(lines[1:])), dtype=str, keep_default_na=False)
    df_raw.columns = [c.strip() for c in df_raw.columns]
    date_col, time_col = df_raw.columns[0], df_raw.columns[1]
    needed = [c for c in _COLS if c not in df_raw.columns]
    if needed:
        raise ValueError(f"{path}: missing columns {needed}")
    n = len(df_raw)
    report.n_rows = n

    # ---- dates and hour-ending stamps --------------------------------------------------------------------------
    try:
        mdy = df_raw[date_col].str.strip().str.split("/", expand=True).astype(int)
        hours = df_raw[time_col].str.strip().str.split(":", expand=True)[0].astype(int)
    except (ValueError, KeyError) as exc:
        raise ValueError(f"{path}: cannot parse date / time columns: {exc}") from exc
    stamps = df_raw[time_col].str.strip()
    fmt = stamps.str.replace(r"^\d{1,2}", "H", regex=True).str.replace(r"\d{2}", "MM", n=1, regex=True)
    fmt = fmt.str.replace(r"\d{2}", "SS", n=1, regex=True)
    fmt = np.where(stamps.str.startswith("24:"), stamps, fmt)
    report.hour_formats = {str(k): int(v) for k, v in pd.Series(fmt).value_counts().items()}
    month, day, year = mdy[0].to_numpy(), mdy[1].to_numpy(), mdy[2].to_numpy()
    report.source_years = {int(k): int(v) for k, v in pd.Series(year).value_counts().sort_index().items()}
    if np.any((month < 1) | (month > 12)) or np.any((hours < 1) | (hours > 24)):
        raise ValueError(f"{path}: month or hour out of range (hours must be 1-24, hour ending)")
    if np.any((month == 2) & (day == 29)):
        raise ValueError(f"{path}: Feb 29 present; a TMY3 typical year has 365 days")
    doy = _CUM_DAYS[month - 1] + day
    time_s = ((doy - 1) * 24 + hours.to_numpy()) * 3600.0
    if n != 8760 or np.any(np.diff(time_s) != 3600.0):
        bad = np.nonzero(np.diff(time_s) != 3600.0)[0]
        raise ValueError(
            f"{path}: expected 8,760 consecutive hourly rows of one typical year, got {n} rows"
            + (f"; first gap after data row {bad[0]}" if bad.size else "")
        )

    # ---- values, -9900 = missing: report, then interpolate -------------------------------------------------------
    vals: dict[str, np.ndarray] = {}
    for col, short in _COLS.items():
        v = pd.to_numeric(df_raw[col], errors="coerce").to_numpy(dtype=float)
        miss = (v == MISSING) | ~np.isfinite(v)
        report.missing[col] = int(miss.sum())
        report.missing_rows[col] = np.nonzero(miss)[0].tolist()
        if miss.all():
            raise ValueError(f"{path}: column {col!r} is entirely missing (-9900)")
        if miss.any():
            report.notes.append(f"{col}: {int(miss.sum())} missing (-9900) cells linearly interpolated")
            v = v.copy()
            v[miss] = np.interp(time_s[miss], time_s[~miss], v[~miss], period=YEAR_S)
        vals[short] = v
    dp_missing = np.asarray(report.missing_rows["Dew-point (C)"], dtype=int)
    if report.n_missing:
        log.warning("%s: %d missing (-9900) cells interpolated: %s", path.name, report.n_missing, report.missing)

    T_db = vals["T_db_C"] + ZERO_C_K
    T_dp = vals["T_dp_C"] + ZERO_C_K
    RH = np.clip(vals["RH_pct"] / 100.0, 0.0, 1.0)
    p = vals["p_mbar"] * 100.0
    over = T_dp > T_db
    report.dewpoint_clipped = int(over.sum())
    if over.any():
        report.notes.append(f"{int(over.sum())} rows with dew point above dry-bulb clipped to the dry-bulb")
        T_dp = np.minimum(T_dp, T_db)
    T_wb = wet_bulb_K(T_db, T_dp, p)
    rh_ok = np.isin(dp_missing, report.missing_rows["RHum (%)"], invert=True)
    use_rh = dp_missing[rh_ok]
    if use_rh.size:
        psychrolib.SetUnitSystem(psychrolib.SI)
        T_wb[use_rh] = [
            psychrolib.GetTWetBulbFromRelHum(T_db[i] - ZERO_C_K, RH[i], p[i]) + ZERO_C_K for i in use_rh
        ]
        report.wet_bulb_from_rh = int(use_rh.size)
        report.notes.append(f"{use_rh.size} rows: dew point missing, wet-bulb computed from relative humidity")

    df = pd.DataFrame(
        {
            "time_s": time_s,
            "month": month,
            "day": day,
            "hour": hours.to_numpy(),
            "source_year": year,
            "T_db_K": T_db,
            "T_dp_K": T_dp,
            "RH": RH,
            "p_Pa": p,
            "T_wb_K": T_wb,
        }
    )
    return df, report


#: EnergyPlus EPW missing-value codes (EnergyPlus Auxiliary Programs, "Weather Converter", EPW data dictionary).
EPW_MISSING = {"T_db_C": 99.9, "T_dp_C": 99.9, "RH_pct": 999.0, "p_Pa": 999999.0}


def load_epw(path: str | Path) -> tuple[pd.DataFrame, WeatherReport]:
    """Load an EnergyPlus EPW weather file (plain or gzip) and compute the wet-bulb temperature.

    EPW layout (EnergyPlus Auxiliary Programs, "Weather Converter Program", EPW format): 8 header lines (LOCATION
    with the elevation in field 10, DESIGN CONDITIONS, ..., DATA PERIODS), then hourly rows ``year, month, day,
    hour (1-24, hour ending), minute, source flags, dry-bulb C, dew point C, RH %, station pressure Pa, ...``.
    Missing values (99.9 C, 999 %, 999999 Pa) are reported and interpolated in time; a leap-year file's Feb 29 rows
    are dropped (reported) so the data map onto the 8,760-h typical year like TMY3; source years are reported.

    Parameters
    ----------
    path : str or pathlib.Path
        EPW file.

    Returns
    -------
    df : pandas.DataFrame
        As :func:`load_tmy3`.
    report : WeatherReport
        Missing cells, dropped rows, source years.

    Raises
    ------
    ValueError
        If the file is not 8,760 (or 8,784 with Feb 29) hourly rows in order, or a column is entirely missing.
    """
    path = Path(path)
    lines = _read_text(path).splitlines()
    if len(lines) < 9 or not lines[0].upper().startswith("LOCATION"):
        raise ValueError(f"{path}: not an EPW file (first line must start with LOCATION)")
    loc = next(csv.reader([lines[0]]))
    report = WeatherReport(path=str(path))
    report.station_name = loc[1].strip() if len(loc) > 1 else ""
    report.station_id = loc[5].strip() if len(loc) > 5 else ""
    try:
        report.elevation_m = float(loc[9])
    except (IndexError, ValueError):
        report.notes.append("LOCATION line has no elevation")
    rows = list(csv.reader(lines[8:]))
    rows = [r for r in rows if len(r) >= 10]
    a = np.array([[float(r[i]) for i in (0, 1, 2, 3, 6, 7, 8, 9)] for r in rows])
    year, month, day, hour = (a[:, i].astype(int) for i in range(4))
    leap = (month == 2) & (day == 29)
    if leap.any():
        report.notes.append(f"{int(leap.sum())} Feb 29 rows dropped (typical year has 365 days)")
        a, year, month, day, hour = a[~leap], year[~leap], month[~leap], day[~leap], hour[~leap]
    report.n_rows = len(a)
    report.source_years = {int(k): int(v) for k, v in pd.Series(year).value_counts().sort_index().items()}
    if len(report.source_years) > 1:
        report.notes.append(f"rows from {len(report.source_years)} source years (typical-year file)")
    report.hour_formats = {"H (1-24)": len(a)}
    time_s = ((_CUM_DAYS[month - 1] + day - 1) * 24 + hour) * 3600.0
    if len(a) != 8760 or np.any(np.diff(time_s) != 3600.0):
        raise ValueError(f"{path}: expected 8,760 consecutive hourly rows, got {len(a)}")
    vals = {}
    for j, (short, col) in enumerate((("T_db_C", "Dry-bulb (C)"), ("T_dp_C", "Dew-point (C)"),
                                      ("RH_pct", "RHum (%)"), ("p_Pa", "Pressure (Pa)")), start=4):
        v = a[:, j].copy()
        miss = v >= EPW_MISSING[short]
        report.missing[col] = int(miss.sum())
        report.missing_rows[col] = np.nonzero(miss)[0].tolist()
        if miss.all():
            raise ValueError(f"{path}: column {col!r} is entirely missing")
        if miss.any():
            report.notes.append(f"{col}: {int(miss.sum())} missing cells linearly interpolated")
            v[miss] = np.interp(time_s[miss], time_s[~miss], v[~miss], period=YEAR_S)
        vals[short] = v
    if report.n_missing:
        log.warning("%s: %d missing cells interpolated: %s", path.name, report.n_missing, report.missing)
    T_db, T_dp = vals["T_db_C"] + ZERO_C_K, vals["T_dp_C"] + ZERO_C_K
    over = T_dp > T_db
    report.dewpoint_clipped = int(over.sum())
    T_dp = np.minimum(T_dp, T_db)
    T_wb = wet_bulb_K(T_db, T_dp, vals["p_Pa"])
    df = pd.DataFrame({"time_s": time_s, "month": month, "day": day, "hour": hour, "source_year": year,
                       "T_db_K": T_db, "T_dp_K": T_dp, "RH": np.clip(vals["RH_pct"] / 100.0, 0, 1),
                       "p_Pa": vals["p_Pa"], "T_wb_K": T_wb})
    return df, report


class Weather:
    """Wet-bulb temperature as a function of simulation time.

    Parameters
    ----------
    time_s : ndarray, shape (n,)
        Increasing sample times within one period [s] (TMY3: hour-ending stamps 3,600 ... 31,536,000 s).
    T_wb_K : ndarray, shape (n,)
        Wet-bulb temperature at ``time_s`` [K].
    offset_s : float, optional
        Added to the simulation time before lookup, so that simulation time 0 falls on a chosen moment of the
        typical year (see :meth:`offset_for`).
    period_s : float, optional
        Period of the series [s]; default one 8,760-h year.
    report : WeatherReport, optional
        Loading report, kept for provenance.

    Raises
    ------
    ValueError
        If shapes differ, values are not finite, or times are not increasing.
    """

    def __init__(
        self,
        time_s: np.ndarray,
        T_wb_K: np.ndarray,
        offset_s: float = 0.0,
        period_s: float = YEAR_S,
        report: WeatherReport | None = None,
    ):
        t = np.asarray(time_s, dtype=float)
        v = np.asarray(T_wb_K, dtype=float)
        if t.shape != v.shape or t.ndim != 1 or t.size == 0:
            raise ValueError("time_s and T_wb_K must be 1-D arrays of equal, non-zero length")
        if not (np.all(np.isfinite(t)) and np.all(np.isfinite(v))) or np.any(np.diff(t) <= 0):
            raise ValueError("time_s must be finite and increasing, T_wb_K finite")
        self._t, self._v = t, v
        self.offset_s = float(offset_s)
        self.period_s = float(period_s)
        self.report = report

    @classmethod
    def constant(cls, T_wb_K: float) -> Weather:
        """Constant wet-bulb (the fallback when no weather file is used).

        Parameters
        ----------
        T_wb_K : float
            Wet-bulb temperature [K].

        Returns
        -------
        Weather
            A weather whose :meth:`wet_bulb_K` returns ``T_wb_K`` at every time.
        """
        return cls(np.array([0.0]), np.array([float(T_wb_K)]), period_s=YEAR_S)

    @classmethod
    def from_tmy3(cls, path: str | Path, offset_s: float = 0.0) -> Weather:
        """Weather from a TMY3 file (see :func:`load_tmy3`).

        Parameters
        ----------
        path : str or pathlib.Path
            TMY3 CSV, plain or gzip.
        offset_s : float, optional
            Start offset into the typical year [s].

        Returns
        -------
        Weather
            Periodic over the 8,760-h year.
        """
        df, report = load_tmy3(path)
        return cls(df["time_s"].to_numpy(), df["T_wb_K"].to_numpy(), offset_s=offset_s, report=report)

    @classmethod
    def from_epw(cls, path: str | Path, offset_s: float = 0.0) -> Weather:
        """Weather from an EnergyPlus EPW file (see :func:`load_epw`).

        Parameters
        ----------
        path : str or pathlib.Path
            EPW file, plain or gzip.
        offset_s : float, optional
            Start offset into the year [s].

        Returns
        -------
        Weather
            Periodic over the 8,760-h year.
        """
        df, report = load_epw(path)
        return cls(df["time_s"].to_numpy(), df["T_wb_K"].to_numpy(), offset_s=offset_s, report=report)

    @staticmethod
    def offset_for(day_of_year: int, hour: float = 0.0) -> float:
        """Offset that puts simulation time 0 at a given moment of the typical year.

        Parameters
        ----------
        day_of_year : int
            1 = Jan 1, ..., 365 = Dec 31.
        hour : float, optional
            Local standard time of day [h], 0 <= hour < 24.

        Returns
        -------
        float
            ``((day_of_year - 1) * 24 + hour) * 3600`` [s].

        Raises
        ------
        ValueError
            If out of range.
        """
        if not (1 <= day_of_year <= 365 and 0 <= hour < 24):
            raise ValueError("day_of_year must be in 1..365 and hour in [0, 24)")
        return ((day_of_year - 1) * 24 + hour) * 3600.0

    def with_offset(self, offset_s: float) -> Weather:
        """Same series with another start offset.

        Parameters
        ----------
        offset_s : float
            Start offset [s].

        Returns
        -------
        Weather
            A new object sharing the data.
        """
        return Weather(self._t, self._v, offset_s=offset_s, period_s=self.period_s, report=self.report)

    def wet_bulb_K(self, t_s: np.ndarray | float) -> np.ndarray:
        """Wet-bulb temperature at simulation times (linear interpolation, periodic).

        Parameters
        ----------
        t_s : ndarray or float
            Simulation time [s], any shape.

        Returns
        -------
        ndarray
            Wet-bulb temperature [K], same shape as ``t_s``.
        """
        t = np.asarray(t_s, dtype=float)
        if self._t.size == 1:
            return np.full(t.shape, self._v[0])
        return np.interp(t + self.offset_s, self._t, self._v, period=self.period_s)


@lru_cache(maxsize=1)
def _default() -> Weather:
    return Weather.from_tmy3(DEFAULT_TMY3)


def default_weather(offset_s: float = 0.0) -> Weather:
    """Shipped NREL Golden, CO TMY3 weather (``cooling_fmu/data/724666TY.csv.gz``, see ATTRIBUTION.md).

    Parameters
    ----------
    offset_s : float, optional
        Start offset into the typical year [s].

    Returns
    -------
    Weather
        Periodic hourly wet-bulb (parsed once per process).
    """
    return _default().with_offset(offset_s)
