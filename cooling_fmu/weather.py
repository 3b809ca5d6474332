"""Outdoor wet-bulb temperature for the cooling towers, from a site's typical-year weather file or a constant.

The cooling tower sees the WET-bulb temperature. It is computed here with psychrolib (SI) from dry-bulb, dew point
and station pressure (or from relative humidity where the dew point is missing); dry-bulb is never used as wet-bulb.

Files
-----
Two layouts are read, told apart by their first line (:func:`load_weather`):

* NREL TMY3 CSV (NREL, "Users Manual for TMY3 Data Sets", NREL/TP-581-43156, 2008): row 1 is station metadata
  (USAF id, name, state, UTC offset, latitude, longitude, elevation in m), row 2 the column names, then 8,760
  hourly rows. Missing values are ``-9900``.
* EnergyPlus EPW (EnergyPlus "Auxiliary Programs", Weather Converter, EPW data dictionary): 8 header lines, the
  first ``LOCATION,city,state,country,source,WMO,lat,lon,UTC offset,elevation``, then hourly rows ``year, month,
  day, hour (1-24), minute, flags, dry-bulb C, dew point C, RH %, station pressure Pa, ...``. Missing values are
  99.9 C, 999 % and 999999 Pa.

Both are local STANDARD time all year and HOUR-ENDING: the row stamped hour ``H`` holds the values of the hour
ending at H. Months come from different source years; they are mapped onto one typical (non-leap) year starting
Jan 1 00:00, and ``time_s = ((day_of_year - 1) * 24 + H) * 3600`` is the hour-ending stamp in seconds since the
start of that year (3,600 s for the first row, 31,536,000 s for the last). Missing values are counted per field
and per gap in the :class:`WeatherReport` (kept in the cache entry, so a run from the cache reports them too),
then linearly interpolated in time, never silently: gaps up to :data:`MAX_INTERPOLATED_GAP_H` (6 h) are
interpolated, a longer gap is refused with the file, its first line and the field unless the caller accepts it
(``cooling.accept_weather_gaps``). Every run prints :meth:`WeatherReport.data_warnings` (also under ``--quiet``)
and writes them to the run file (``/provenance`` ``info_json`` ``warnings`` and ``weather_gaps``).

Physically impossible values are rejected at load (:class:`WeatherFileError`, naming the file, the column, the
first bad line and the allowed range; :data:`PHYSICAL_BOUNDS`).

Shipped sites
-------------
``cooling_fmu/data`` holds three NREL TMY3 years (see ``ATTRIBUTION.md``), named by :data:`SITES`: ``golden``
(NREL Golden, CO, the default), ``chicago`` (Chicago O'Hare, for the Theta-like system at Argonne) and
``knoxville`` (Knoxville McGhee Tyson, for the Frontier-like system at Oak Ridge).

Calendar: leap years
--------------------
A typical year is indexed by month, day and hour, so every calendar year maps each date to the same weather hour
(:meth:`Weather.at_calendar`). 29 February has no row in a typical year; it repeats 28 February's weather (the
rule EnergyPlus applies when a leap-year run period meets a weather file without 29 February), so the weather
jumps once, at 29 February 00:00, from the value of 28 February 24:00 back to that of 28 February 00:00. Between
hours the interpolation stays linear.

Wet-bulb cache
--------------
Parsing a file and computing 8,760 wet-bulb values takes about 0.7 s. :func:`load_weather` keeps the result in a
``.npz`` file (no pickle) named by the SHA-256 of the weather file's bytes, with a SHA-256 checksum of its own
content that is verified before use; a corrupt or foreign entry is rebuilt. The folder is
``$HPCTWIN_WEATHER_CACHE_DIR`` if set, else ``<root>/weather`` with ``<root>`` = ``$HPCTWIN_CACHE_DIR`` or the user
cache folder (platformdirs; :mod:`jobs.cachedirs`). A cache folder that belongs to another user or that
others can write is not used (the series is computed again, with a warning): a checksum stored beside the data
proves nothing where anyone can write.
"""

from __future__ import annotations

import calendar
import csv
import datetime as _dt
import hashlib
import io
import json
import logging
import os
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd
import psychrolib

from jobs.textfiles import InputFileError, max_input_bytes, read_input

__all__ = ["PHYSICAL_BOUNDS", "SITES", "YEAR_S", "DesignConditions", "Weather", "WeatherFileError", "WeatherReport",
           "default_weather", "design_conditions", "load_epw", "load_tmy3", "load_weather", "resolve_weather_file",
           "typical_year_s", "weather_cache_dir", "wet_bulb_K"]

log = logging.getLogger(__name__)

#: Length of the typical (non-leap) year [s]: 8,760 h.
YEAR_S = 8760 * 3600.0
DAY_S = 86400.0
#: Missing-value sentinel of TMY3 files.
MISSING = -9900.0
ZERO_C_K = 273.15
DATA_DIR = Path(__file__).resolve().parent / "data"
DEFAULT_TMY3 = DATA_DIR / "724666TY.csv.gz"

#: Shipped typical-year files by site name: (file in ``cooling_fmu/data``, station label). See ATTRIBUTION.md.
SITES: dict[str, tuple[str, str]] = {
    "golden": ("724666TY.csv.gz", "NREL Golden, CO (TMY3 724666)"),
    "chicago": ("USA_IL_Chicago-OHare.Intl.AP.725300_TMY3.epw.gz", "Chicago O'Hare, IL (TMY3 725300)"),
    "knoxville": ("USA_TN_Knoxville-McGhee.Tyson.AP.723260_TMY3.epw.gz", "Knoxville McGhee Tyson, TN (TMY3 723260)"),
}

#: Physically possible ranges of the used weather quantities, inclusive (SI or the file's unit as named).
#: Sources: WMO World Weather and Climate Extremes Archive: lowest air temperature -89.2 C (Vostok, 1983), highest
#: 56.7 C (Death Valley, 1913), highest sea-level pressure 1,083.8 hPa (Agata, 1968); the highest weather stations
#: (about 5,000-6,000 m) see about 500 hPa and the summit of Everest about 337 hPa, so 300 hPa is a safe floor;
#: highest recorded dew point 35 C (Dhahran, 2003). Relative humidity is 0-100 % by definition.
PHYSICAL_BOUNDS: dict[str, tuple[float, float, str]] = {
    "T_db_C": (-90.0, 60.0, "degC"),
    "T_dp_C": (-95.0, 40.0, "degC"),
    "RH_pct": (0.0, 100.0, "%"),
    "p_Pa": (30_000.0, 110_000.0, "Pa"),
}
#: A dew point above the dry-bulb by at most this much is rounding in the file (0.1 C steps) and is clipped to the
#: dry-bulb (reported); more is physically impossible and rejected [K].
DEWPOINT_ROUNDING_K = 1.0

#: Version of the parser / wet-bulb computation; part of every cache key.
CACHE_VERSION = "2"  # 2: the report lists the missing-value gaps

#: Longest run of consecutive missing hours in one field that is linearly interpolated [h]. Longer gaps are
#: refused (file, first line, field) unless the caller accepts them (``cooling.accept_weather_gaps``,
#: ``--accept-weather-gaps``). ASSUMPTION: 6 h keeps an interpolated gap within a quarter of the diurnal cycle, over
#: which a straight line between two observations stays close to the day's course; longer gaps call for a filled
#: source (the EnergyPlus Weather Converter fills them from nearby stations or design data, not by a line).
MAX_INTERPOLATED_GAP_H = 6

_COLS = {"Dry-bulb (C)": "T_db_C", "Dew-point (C)": "T_dp_C", "RHum (%)": "RH_pct", "Pressure (mbar)": "p_mbar"}
_CUM_DAYS = np.cumsum([0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])


#: Largest decompressed weather file read [bytes] (64 MiB; a typical-year EPW or TMY3 file is about 1.7 MB).
_MAX_WEATHER_BYTES = 64 << 20

class WeatherFileError(ValueError):
    """A weather file cannot be used: unreadable layout, or a physically impossible value.

    The message names the file, the column and the first bad line (1-based line number in the file).
    """


@dataclass
class WeatherReport:
    """What was found and repaired while loading a weather file.

    Attributes
    ----------
    path : str
        File read.
    format : str
        ``"TMY3"`` (NREL CSV) or ``"EPW"`` (EnergyPlus).
    station_id, station_name : str
        From the metadata row / LOCATION line.
    elevation_m : float
        Station elevation [m].
    utc_offset_h : float
        Hours from UTC to the file's local standard time (metadata row / LOCATION line); NaN if absent.
    latitude_deg, longitude_deg : float
        Station position [degrees, north / east positive]; NaN if absent.
    sha256 : str
        SHA-256 of the file's bytes as stored (before any gunzip).
    n_rows : int
        Data rows (8,760 for a typical year).
    source_years : dict of int to int
        Rows per source year (typical-year months come from different years).
    missing : dict of str to int
        Missing cells per used column.
    missing_rows : dict of str to list of int
        Data-row numbers (0-based, after the header rows) of the missing cells, per column.
    hour_formats : dict of str to int
        Count of time stamps per format (``"H:MM"``, ``"24:00:00"``, ...).
    gaps : list of list
        Runs of consecutive missing hours, ``[column, first line (1-based, in the file), hours]``, in file order (a
        run that wraps from Dec 31 to Jan 1 is one gap, named by its first line in December).
    dewpoint_clipped : int
        Rows whose dew point exceeded the dry-bulb by at most :data:`DEWPOINT_ROUNDING_K` and was clipped to it.
    wet_bulb_from_rh : int
        Rows whose wet-bulb came from relative humidity because the dew point was missing.
    notes : list of str
        Human-readable notes.
    """

    path: str
    format: str = ""
    station_id: str = ""
    station_name: str = ""
    elevation_m: float = float("nan")
    utc_offset_h: float = float("nan")
    latitude_deg: float = float("nan")
    longitude_deg: float = float("nan")
    sha256: str = ""
    n_rows: int = 0
    source_years: dict[int, int] = field(default_factory=dict)
    missing: dict[str, int] = field(default_factory=dict)
    missing_rows: dict[str, list[int]] = field(default_factory=dict)
    hour_formats: dict[str, int] = field(default_factory=dict)
    gaps: list[list] = field(default_factory=list)
    dewpoint_clipped: int = 0
    wet_bulb_from_rh: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def n_missing(self) -> int:
        """int: total missing cells in the used columns."""
        return sum(self.missing.values())

    @property
    def longest_gap(self) -> list | None:
        """``[column, first line, hours]`` of the longest missing run, or None when nothing is missing."""
        return max(self.gaps, key=lambda g: (g[2], -g[1])) if self.gaps else None

    def data_warnings(self) -> list[str]:
        """One line per column with missing cells: how many, in how many gaps, the longest and where, and what
        was done (linear interpolation in time). Printed by every run (from the cache too, under ``--quiet``).
        """
        out = []
        name = Path(self.path).name
        for col, n in sorted(self.missing.items()):  # sorted: the same order from a first parse and the cache
            if not n:
                continue
            g = [x for x in self.gaps if x[0] == col]
            lg = max(g, key=lambda x: x[2]) if g else [col, 0, 0]
            out.append(f"weather {name}: {col}: {n} missing hour(s) in {len(g)} gap(s), longest {lg[2]} h from line "
                       f"{lg[1]}, linearly interpolated in time (gaps up to {MAX_INTERPOLATED_GAP_H} h are "
                       f"interpolated; longer ones need cooling.accept_weather_gaps)")
        return out

    def check_gaps(self, accept_long_gaps: bool = False) -> None:
        """Refuse a gap longer than :data:`MAX_INTERPOLATED_GAP_H` unless it is accepted.

        Parameters
        ----------
        accept_long_gaps : bool
            Interpolate longer gaps too (they are still reported by :meth:`data_warnings`).

        Raises
        ------
        WeatherFileError
            Naming the file, the field, the first line of the longest gap and its length.
        """
        long = [g for g in self.gaps if g[2] > MAX_INTERPOLATED_GAP_H]
        if long and not accept_long_gaps:
            col, line, hours = max(long, key=lambda g: (g[2], -g[1]))
            raise WeatherFileError(
                f"{self.path}: column {col!r}: {hours} consecutive missing hours from line {line} (the longest of "
                f"{len(long)} gap(s) over {MAX_INTERPOLATED_GAP_H} h); a line through them would be invented "
                f"weather. Fill them from another source, or accept the interpolation with "
                f"cooling.accept_weather_gaps = true (--accept-weather-gaps)")

    def to_json(self) -> str:
        """The report as one JSON string (for the cache and for provenance)."""
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> WeatherReport:  # noqa: DOC502
        """Inverse of :meth:`to_json`.

        Parameters
        ----------
        text : str
            JSON written by :meth:`to_json`.

        Returns
        -------
        WeatherReport
            The report.

        Raises
        ------
        ValueError
            If the text is not JSON (``json.JSONDecodeError``) or a field has the wrong form.
        TypeError
            If a field is missing or unknown (the dataclass constructor).
        KeyError
            If ``source_years`` is missing.
        """
        d = json.loads(text)
        d["source_years"] = {int(k): int(v) for k, v in d["source_years"].items()}
        return cls(**d)


def _read_text(path: Path) -> str:
    """The weather file's text through the one input opener (:func:`jobs.textfiles.read_input`: bounded
    decompression, UTF-8 BOM dropped, UTF-16 / UTF-32 and over-long lines refused); undecodable bytes replaced.

    Parameters
    ----------
    path : Path
        The EPW or TMY3 file.

    Returns
    -------
    str
        Its text.

    Raises
    ------
    WeatherFileError
        If the opener refuses the file (the message names it).
    """
    try:
        raw = read_input(path, "weather file", max_bytes=min(_MAX_WEATHER_BYTES, max_input_bytes()))
    except InputFileError as exc:
        raise WeatherFileError(str(exc)) from None
    return raw.decode("utf-8", errors="replace")


def _float(x: str) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        return float("nan")


def _gap_runs(column: str, miss: np.ndarray, lines: np.ndarray) -> list[list]:
    """Runs of consecutive True in ``miss`` (periodic: a run ending the year joins one starting it) as
    ``[column, first line, length]``.
    """
    if not miss.any():
        return []
    d = np.diff(np.concatenate(([0], miss.astype(np.int8), [0])))
    starts, ends = np.flatnonzero(d == 1), np.flatnonzero(d == -1)
    runs = [[column, int(lines[a]), int(b - a)] for a, b in zip(starts, ends)]
    if len(runs) > 1 and miss[0] and miss[-1]:  # wraps from Dec 31 to Jan 1
        first = runs.pop(0)
        runs[-1][2] += first[2]
    return runs


def _fill_missing(path: Path, column: str, v: np.ndarray, miss: np.ndarray, time_s: np.ndarray,
                  lines: np.ndarray, report: WeatherReport, code: str = "") -> np.ndarray:
    """Record a column's missing cells in the report and fill them by periodic linear interpolation in time.

    The one missing-value rule of :func:`load_tmy3` and :func:`load_epw`: the count, the rows and the gap runs go
    into ``report`` (gaps are judged later by :meth:`WeatherReport.check_gaps`), a column with no value at all is
    refused, and the other missing cells are interpolated over the periodic typical year (a note says how many).

    Parameters
    ----------
    path : Path
        The weather file (for the message).
    column : str
        The file's column name.
    v : np.ndarray
        Shape (n,). The column's values in the file's unit; not modified.
    miss : np.ndarray
        Shape (n,), bool. True where the cell is missing.
    time_s : np.ndarray
        Shape (n,). Hour stamps of the rows [s since Jan 1 00:00].
    lines : np.ndarray
        Shape (n,). File line of each row (for the gap runs).
    report : WeatherReport
        Updated in place (``missing``, ``missing_rows``, ``gaps``, ``notes``).
    code : str
        The file format's missing-value code as said in the messages (e.g. ``" (-9900)"``), or "".

    Returns
    -------
    np.ndarray
        Shape (n,). ``v`` itself when nothing is missing, else a copy with the missing cells interpolated.

    Raises
    ------
    WeatherFileError
        If every cell of the column is missing.
    """
    report.missing[column] = int(miss.sum())
    report.missing_rows[column] = np.nonzero(miss)[0].tolist()
    report.gaps += _gap_runs(column, miss, lines)
    if miss.all():
        raise WeatherFileError(f"{path}: column {column!r} is entirely missing{code}")
    if miss.any():
        report.notes.append(f"{column}: {int(miss.sum())} missing{code} cells linearly interpolated")
        v = v.copy()
        v[miss] = np.interp(time_s[miss], time_s[~miss], v[~miss], period=YEAR_S)
    return v


def _check_physical(path: Path, column: str, v: np.ndarray, ok_mask: np.ndarray, key: str, lines: np.ndarray,
                    scale: float = 1.0, file_unit: str = "") -> None:
    """Reject values outside :data:`PHYSICAL_BOUNDS` (``v * scale`` in the bound's unit) among non-missing cells.

    Parameters
    ----------
    path : Path
        The weather file (for the message).
    column : str
        The file's column name.
    v : np.ndarray
        Shape (n,). The column's values in the file's unit.
    ok_mask : np.ndarray
        Shape (n,), bool. True where the cell is not missing.
    key : str
        Key of :data:`PHYSICAL_BOUNDS`.
    lines : np.ndarray
        Shape (n,). File line of each value (1-based).
    scale : float
        Factor from the file's unit to the bound's unit.
    file_unit : str
        The file's unit, for the message ("" : the bound's).

    Raises
    ------
    WeatherFileError
        Naming the file, the column, the first bad line, its value, the range and how many rows are bad.
    """
    lo, hi, unit = PHYSICAL_BOUNDS[key]
    w = v * scale
    bad = ok_mask & ~((w >= lo) & (w <= hi))
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        lo_f, hi_f = lo / scale, hi / scale
        raise WeatherFileError(
            f"{path}: column {column!r}: value {v[k]:g} at line {int(lines[k])} (data row {k}) is outside the "
            f"physically possible range {lo_f:g} to {hi_f:g} {file_unit or unit}"
            + (f" ({lo:g} to {hi:g} {unit})" if scale != 1.0 else "") + f"; {int(bad.sum())} row(s) out "
            f"of range. Fix or remove these values (missing values must use the file format's missing code).")


def _check_dewpoint(path: Path, T_db: np.ndarray, T_dp: np.ndarray, lines: np.ndarray, report: WeatherReport
                    ) -> np.ndarray:
    """Clip a dew point above the dry-bulb by <= DEWPOINT_ROUNDING_K (reported); reject larger excesses."""
    over = T_dp - T_db
    bad = over > DEWPOINT_ROUNDING_K
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise WeatherFileError(
            f"{path}: column 'Dew-point': dew point {T_dp[k] - ZERO_C_K:.2f} C at line {int(lines[k])} (data row {k}) "
            f"is above the dry-bulb {T_db[k] - ZERO_C_K:.2f} C by more than {DEWPOINT_ROUNDING_K:g} K, which is "
            f"physically impossible; {int(bad.sum())} row(s) affected")
    clip = over > 0
    report.dewpoint_clipped = int(clip.sum())
    if clip.any():
        report.notes.append(f"{int(clip.sum())} rows with dew point above dry-bulb (rounding) clipped to the dry-bulb")
    return np.minimum(T_dp, T_db)


def wet_bulb_K(T_db_K: np.ndarray, T_dp_K: np.ndarray, p_Pa: np.ndarray) -> np.ndarray:  # noqa: DOC502
    """Wet-bulb temperature from dry-bulb, dew point and pressure (psychrolib, SI).

    Parameters
    ----------
    T_db_K : np.ndarray
        Shape (n,). Dry-bulb temperature [K].
    T_dp_K : np.ndarray
        Shape (n,). Dew-point temperature [K], <= dry-bulb.
    p_Pa : np.ndarray
        Shape (n,), or a float for every point. Station (not sea-level) pressure [Pa].

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


def load_tmy3(path: str | Path, *, text: str | None = None,
             accept_long_gaps: bool = False) -> tuple[pd.DataFrame, WeatherReport]:
    """Load an NREL TMY3 CSV (plain or gzip) and compute the wet-bulb temperature.

    Parameters
    ----------
    path : str | Path
        TMY3 file (layout in the module docstring); named in every message.
    text : str | None
        The file's decoded text, if already read (then ``path`` is only used in messages).
    accept_long_gaps : bool
        Interpolate gaps longer than :data:`MAX_INTERPOLATED_GAP_H` instead of refusing the file.

    Returns
    -------
    df : pandas.DataFrame
        One row per hour, columns ``time_s`` (hour-ending stamp, s since Jan 1 00:00 of the typical year),
        ``month``, ``day``, ``hour`` (1-24, hour ending), ``source_year``, ``T_db_K``, ``T_dp_K``, ``RH``
        (fraction), ``p_Pa`` (station pressure), ``T_wb_K``.
    report : WeatherReport
        Missing cells, formats, source years, station metadata (UTC offset, elevation) and repairs.

    Raises
    ------
    WeatherFileError
        If a required column is absent, a time stamp or date cannot be parsed, the rows are not one hourly
        non-leap year in order, a column is entirely missing, a gap is longer than :data:`MAX_INTERPOLATED_GAP_H`
        (not accepted), or a value is physically impossible (file, column and first bad line named).
    """
    path = Path(path)
    if text is None:
        text = _read_text(path)
    lines = text.splitlines()
    if len(lines) < 3:
        raise WeatherFileError(f"{path}: too short for a TMY3 file")
    meta = next(csv.reader([lines[0]]))
    report = WeatherReport(path=str(path), format="TMY3")
    report.station_id = meta[0].strip() if meta else ""
    report.station_name = meta[1].strip() if len(meta) > 1 else ""
    try:
        report.elevation_m = float(meta[6])
    except (IndexError, ValueError):
        report.notes.append("metadata row has no elevation")
    report.utc_offset_h = _float(meta[3]) if len(meta) > 3 else float("nan")
    report.latitude_deg = _float(meta[4]) if len(meta) > 4 else float("nan")
    report.longitude_deg = _float(meta[5]) if len(meta) > 5 else float("nan")
    try:
        df_raw = pd.read_csv(io.StringIO("\n".join(lines[1:])), dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise WeatherFileError(f"{path}: not a TMY3 table after the metadata row ({type(exc).__name__}: "
                               f"{str(exc).strip().splitlines()[0] if str(exc).strip() else ''})") from None
    df_raw.columns = [c.strip() for c in df_raw.columns]
    if len(df_raw.columns) < 2:
        raise WeatherFileError(f"{path}: not a TMY3 table: {len(df_raw.columns)} column(s) after the metadata row")
    date_col, time_col = df_raw.columns[0], df_raw.columns[1]
    needed = [c for c in _COLS if c not in df_raw.columns]
    if needed:
        raise WeatherFileError(f"{path}: missing columns {needed}")
    n = len(df_raw)
    report.n_rows = n
    line_no = np.arange(n) + 3  # 1-based file line of each data row (metadata + names rows first)

    # ---- dates and hour-ending stamps --------------------------------------------------------------------------
    try:
        mdy = df_raw[date_col].str.strip().str.split("/", expand=True).astype(int)
        hours = df_raw[time_col].str.strip().str.split(":", expand=True)[0].astype(int)
    except (ValueError, KeyError) as exc:
        raise WeatherFileError(f"{path}: cannot parse date / time columns: {exc}") from exc
    stamps = df_raw[time_col].str.strip()
    fmt = stamps.str.replace(r"^\d{1,2}", "H", regex=True).str.replace(r"\d{2}", "MM", n=1, regex=True)
    fmt = fmt.str.replace(r"\d{2}", "SS", n=1, regex=True)
    fmt = np.where(stamps.str.startswith("24:"), stamps, fmt)
    report.hour_formats = {str(k): int(v) for k, v in pd.Series(fmt).value_counts().items()}
    month, day, year = mdy[0].to_numpy(), mdy[1].to_numpy(), mdy[2].to_numpy()
    report.source_years = {int(k): int(v) for k, v in pd.Series(year).value_counts().sort_index().items()}
    bad = (month < 1) | (month > 12) | (hours.to_numpy() < 1) | (hours.to_numpy() > 24)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise WeatherFileError(f"{path}: line {line_no[k]}: month or hour out of range (month 1-12, hour 1-24, "
                               f"hour ending)")
    if np.any((month == 2) & (day == 29)):
        raise WeatherFileError(f"{path}: Feb 29 present; a TMY3 typical year has 365 days")
    doy = _CUM_DAYS[month - 1] + day
    time_s = ((doy - 1) * 24 + hours.to_numpy()) * 3600.0
    if n != 8760 or np.any(np.diff(time_s) != 3600.0):
        bad = np.nonzero(np.diff(time_s) != 3600.0)[0]
        raise WeatherFileError(
            f"{path}: expected 8,760 consecutive hourly rows of one typical year, got {n} rows"
            + (f"; first gap after line {line_no[bad[0]]}" if bad.size else "")
        )

    # ---- values, -9900 = missing: report, check the rest, then interpolate --------------------------------------
    vals: dict[str, np.ndarray] = {}
    bound = {"T_db_C": ("T_db_C", 1.0), "T_dp_C": ("T_dp_C", 1.0), "RH_pct": ("RH_pct", 1.0),
             "p_mbar": ("p_Pa", 100.0)}
    for col, short in _COLS.items():
        v = pd.to_numeric(df_raw[col], errors="coerce").to_numpy(dtype=float)
        unparsable = ~np.isfinite(v) & (df_raw[col].str.strip() != "")
        if unparsable.any():
            k = int(np.flatnonzero(unparsable)[0])
            raise WeatherFileError(f"{path}: column {col!r}: {df_raw[col].iloc[k]!r} at line {line_no[k]} is not a "
                                   f"number")
        miss = (v == MISSING) | ~np.isfinite(v)
        _check_physical(path, col, v, ~miss, bound[short][0], line_no, scale=bound[short][1],
                        file_unit="mbar" if short == "p_mbar" else "")
        vals[short] = _fill_missing(path, col, v, miss, time_s, line_no, report, " (-9900)")
    report.check_gaps(accept_long_gaps)  # before any check on interpolated values: the gap is the cause
    dp_missing = np.asarray(report.missing_rows["Dew-point (C)"], dtype=int)

    T_db = vals["T_db_C"] + ZERO_C_K
    T_dp = vals["T_dp_C"] + ZERO_C_K
    RH = np.clip(vals["RH_pct"] / 100.0, 0.0, 1.0)
    p = vals["p_mbar"] * 100.0
    T_dp = _check_dewpoint(path, T_db, T_dp, line_no, report)
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


def load_epw(path: str | Path, *, text: str | None = None,
             accept_long_gaps: bool = False) -> tuple[pd.DataFrame, WeatherReport]:
    """Load an EnergyPlus EPW weather file (plain or gzip) and compute the wet-bulb temperature.

    EPW layout (EnergyPlus Auxiliary Programs, "Weather Converter Program", EPW format): 8 header lines (LOCATION
    with the UTC offset in field 8 and the elevation in field 9, 0-based, DESIGN CONDITIONS, ..., DATA PERIODS),
    then hourly rows ``year, month, day, hour (1-24, hour ending), minute, source flags, dry-bulb C, dew point C,
    RH %, station pressure Pa, ...``. Missing values (99.9 C, 999 %, 999999 Pa) are reported and interpolated in
    time; a leap-year file's Feb 29 rows are dropped (reported) so the data map onto the 8,760-h typical year like
    TMY3; source years are reported.

    Parameters
    ----------
    path : str | Path
        EPW file; named in every message.
    text : str | None
        The file's decoded text, if already read.
    accept_long_gaps : bool
        Interpolate gaps longer than :data:`MAX_INTERPOLATED_GAP_H` instead of refusing the file.

    Returns
    -------
    df : pandas.DataFrame
        As :func:`load_tmy3`.
    report : WeatherReport
        Missing cells, dropped rows, source years, UTC offset and elevation.

    Raises
    ------
    WeatherFileError
        If the file is not 8,760 (or 8,784 with Feb 29) hourly rows in order, a row is short or not numeric, a
        column is entirely missing, a gap is longer than :data:`MAX_INTERPOLATED_GAP_H` (not accepted), or a value
        is physically impossible (file, column and first bad line named).
    """
    path = Path(path)
    lines = (_read_text(path) if text is None else text).splitlines()
    if len(lines) < 9 or not lines[0].upper().startswith("LOCATION"):
        raise WeatherFileError(f"{path}: not an EPW file (first line must start with LOCATION)")
    loc = next(csv.reader([lines[0]]))
    report = WeatherReport(path=str(path), format="EPW")
    report.station_name = ", ".join(x.strip() for x in loc[1:3] if x.strip()) if len(loc) > 2 else ""
    report.station_id = loc[5].strip() if len(loc) > 5 else ""
    report.latitude_deg = _float(loc[6]) if len(loc) > 6 else float("nan")
    report.longitude_deg = _float(loc[7]) if len(loc) > 7 else float("nan")
    report.utc_offset_h = _float(loc[8]) if len(loc) > 8 else float("nan")
    try:
        report.elevation_m = float(loc[9])
    except (IndexError, ValueError):
        report.notes.append("LOCATION line has no elevation")
    rows, line_list = [], []
    for k, line in enumerate(lines[8:], start=9):
        if not line.strip():
            continue
        r = next(csv.reader([line]))
        if len(r) < 10:
            raise WeatherFileError(f"{path}: line {k}: {len(r)} fields, an EPW data row needs at least 10")
        rows.append(r)
        line_list.append(k)
    names = ("year", "month", "day", "hour", "", "", "Dry-bulb (C)", "Dew-point (C)", "RHum (%)", "Pressure (Pa)")
    a = np.empty((len(rows), 8))
    for i, r in enumerate(rows):
        for j, f in enumerate((0, 1, 2, 3, 6, 7, 8, 9)):
            try:
                a[i, j] = float(r[f])
            except ValueError:
                raise WeatherFileError(f"{path}: line {line_list[i]}: field {f} ({names[f]}) {r[f]!r} is not a "
                                       f"number") from None
    line_no = np.asarray(line_list, dtype=np.int64)
    year, month, day, hour = (a[:, i].astype(int) for i in range(4))
    bad = (month < 1) | (month > 12) | (day < 1) | (day > 31) | (hour < 1) | (hour > 24)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise WeatherFileError(f"{path}: line {line_no[k]}: month, day or hour out of range (month 1-12, day 1-31, "
                               f"hour 1-24, hour ending)")
    leap = (month == 2) & (day == 29)
    if leap.any():
        report.notes.append(f"{int(leap.sum())} Feb 29 rows dropped (typical year has 365 days)")
        keep = ~leap
        a, year, month, day, hour, line_no = a[keep], year[keep], month[keep], day[keep], hour[keep], line_no[keep]
    report.n_rows = len(a)
    report.source_years = {int(k): int(v) for k, v in pd.Series(year).value_counts().sort_index().items()}
    if len(report.source_years) > 1:
        report.notes.append(f"rows from {len(report.source_years)} source years (typical-year file)")
    report.hour_formats = {"H (1-24)": len(a)}
    time_s = ((_CUM_DAYS[month - 1] + day - 1) * 24 + hour) * 3600.0
    if len(a) != 8760 or np.any(np.diff(time_s) != 3600.0):
        gap = np.flatnonzero(np.diff(time_s) != 3600.0)
        raise WeatherFileError(f"{path}: expected 8,760 consecutive hourly rows, got {len(a)}"
                               + (f"; first gap after line {line_no[gap[0]]}" if gap.size else ""))
    vals = {}
    for j, (short, col) in enumerate((("T_db_C", "Dry-bulb (C)"), ("T_dp_C", "Dew-point (C)"),
                                      ("RH_pct", "RHum (%)"), ("p_Pa", "Pressure (Pa)")), start=4):
        v = a[:, j].copy()
        miss = v >= EPW_MISSING[short]
        _check_physical(path, col, v, ~miss, short, line_no)
        vals[short] = _fill_missing(path, col, v, miss, time_s, line_no, report)
    report.check_gaps(accept_long_gaps)  # before any check on interpolated values: the gap is the cause
    T_db, T_dp = vals["T_db_C"] + ZERO_C_K, vals["T_dp_C"] + ZERO_C_K
    T_dp = _check_dewpoint(path, T_db, T_dp, line_no, report)
    T_wb = wet_bulb_K(T_db, T_dp, vals["p_Pa"])
    df = pd.DataFrame({"time_s": time_s, "month": month, "day": day, "hour": hour, "source_year": year,
                       "T_db_K": T_db, "T_dp_K": T_dp, "RH": np.clip(vals["RH_pct"] / 100.0, 0, 1),
                       "p_Pa": vals["p_Pa"], "T_wb_K": T_wb})
    return df, report


def resolve_weather_file(spec: str | Path, base_dir: str | Path | None = None) -> Path:
    """The weather file named by a site name or a path.

    Parameters
    ----------
    spec : str | Path
        A shipped site name (a key of :data:`SITES`, e.g. ``"chicago"``), or the path of an EPW or TMY3 file.
    base_dir : str | Path | None
        Folder a relative path is resolved against (e.g. the system description's folder); default the
        working directory.

    Returns
    -------
    pathlib.Path
        An existing file.

    Raises
    ------
    FileNotFoundError
        If ``spec`` is neither a site name nor an existing file (the message lists the site names).
    """
    s = str(spec).strip()
    if s.lower() in SITES:
        return DATA_DIR / SITES[s.lower()][0]
    p = Path(s).expanduser()
    if not p.is_absolute() and base_dir is not None:
        p = Path(base_dir) / p
    if not p.is_file():
        raise FileNotFoundError(f"no weather file {s!r} ({p}); give an EPW or TMY3 file or a shipped site: "
                                f"{', '.join(sorted(SITES))}")
    return p


def weather_cache_dir() -> Path:
    """Folder of the wet-bulb cache.

    Returns
    -------
    pathlib.Path
        ``$HPCTWIN_WEATHER_CACHE_DIR`` if set, else ``<root>/weather``
        (:func:`jobs.cachedirs.cache_root`: ``$HPCTWIN_CACHE_DIR`` or the platform's user cache folder).
    """
    env = os.environ.get("HPCTWIN_WEATHER_CACHE_DIR")
    if env:
        return Path(env)
    from jobs.cachedirs import cache_root

    return cache_root() / "weather"


_CACHE_COLS = ("time_s", "month", "day", "hour", "source_year", "T_db_K", "T_dp_K", "RH", "p_Pa", "T_wb_K")


def _payload_digest(arrays: dict[str, np.ndarray], report_json: str, source_sha: str) -> str:
    h = hashlib.sha256(f"{CACHE_VERSION}\0{source_sha}\0".encode())
    for c in _CACHE_COLS:
        a = np.ascontiguousarray(arrays[c])
        h.update(f"{c}\0{a.dtype.str}\0{a.shape}\0".encode())
        h.update(a.tobytes())
    h.update(report_json.encode())
    return h.hexdigest()


def _cache_read(entry: Path, source_sha: str) -> tuple[pd.DataFrame, WeatherReport] | None:
    from jobs.cachedirs import CacheTrustError, read_entry

    try:  # read once, through a descriptor checked for owner and mode; these bytes are verified and parsed
        data = read_entry(entry, "weather cache entry")
    except FileNotFoundError:
        return None
    except (CacheTrustError, OSError) as exc:
        log.warning("weather cache entry %s not used (%s); rebuilding it", entry, exc)
        return None
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            arrays = {c: z[c] for c in _CACHE_COLS}
            report_json = str(z["report_json"])
            stored_src, stored_sum = str(z["source_sha256"]), str(z["checksum"])
    except FileNotFoundError:
        return None
    except Exception as exc:  # corrupt, truncated or foreign: rebuilt by the caller
        log.warning("weather cache entry %s unreadable (%s); rebuilding it", entry, exc)
        return None
    if stored_src != source_sha or _payload_digest(arrays, report_json, source_sha) != stored_sum:
        log.warning("weather cache entry %s fails its checksum; rebuilding it", entry)
        return None
    return pd.DataFrame({c: arrays[c] for c in _CACHE_COLS}), WeatherReport.from_json(report_json)


def _cache_write(entry: Path, df: pd.DataFrame, report: WeatherReport, source_sha: str) -> None:
    arrays = {c: df[c].to_numpy() for c in _CACHE_COLS}
    report_json = report.to_json()
    digest = _payload_digest(arrays, report_json, source_sha)
    from jobs.cachedirs import write_entry

    buf = io.BytesIO()
    np.savez(buf, **arrays, report_json=np.array(report_json), source_sha256=np.array(source_sha),
             checksum=np.array(digest))
    try:  # the one writer: a private temporary of random name in the (checked) cache folder, then os.replace
        write_entry(entry, buf.getvalue())
    except OSError as exc:  # a read-only or full cache folder must not stop a run
        log.warning("weather cache not written (%s): %s", entry, exc)


def load_weather(path: str | Path, *, cache: bool = True,  # noqa: DOC502
                 accept_long_gaps: bool = False) -> tuple[pd.DataFrame, WeatherReport]:
    """Load an EPW or TMY3 weather file (told apart by the first line), with the wet-bulb series cached.

    Parameters
    ----------
    path : str | Path
        EPW (first line ``LOCATION,...``) or NREL TMY3 CSV, plain or gzip.
    cache : bool
        Use the wet-bulb cache (module docstring): the entry is named by the SHA-256 of the file's bytes and its
        own checksum is verified before use; a bad entry is rebuilt.
    accept_long_gaps : bool
        Interpolate gaps longer than :data:`MAX_INTERPOLATED_GAP_H` instead of refusing the file
        (:meth:`WeatherReport.check_gaps`, applied to a cached report too).

    Returns
    -------
    df : pandas.DataFrame
        As :func:`load_tmy3`.
    report : WeatherReport
        With :attr:`WeatherReport.sha256` set.

    Raises
    ------
    WeatherFileError
        As :func:`load_tmy3` / :func:`load_epw`, or a gap longer than :data:`MAX_INTERPOLATED_GAP_H` that is not
        accepted.
    OSError
        If the file cannot be read.
    """
    path = Path(path)
    sha = hashlib.sha256()
    with open(path, "rb") as fh:  # the cache key: SHA-256 of the file as stored (compressed or not), streamed
        for block in iter(lambda: fh.read(1 << 20), b""):
            sha.update(block)
    sha = sha.hexdigest()
    entry = weather_cache_dir() / f"wetbulb-v{CACHE_VERSION}-{sha}.npz" if cache else None
    if entry is not None:
        from jobs.cachedirs import CacheTrustError, private_dir

        try:
            entry = private_dir(entry.parent, "weather cache folder") / entry.name  # whole path checked, resolved
        except CacheTrustError as exc:  # unverifiable: not used (data only, so the run goes on without it)
            log.warning("%s", exc)
            entry = None
        except OSError as exc:  # a read-only or full cache folder must not stop a run
            log.warning("weather cache not used (%s): %s", entry.parent, exc)
            entry = None
    if entry is not None:
        hit = _cache_read(entry, sha)
        if hit is not None:
            df, report = hit
            report.path = str(path)
            report.check_gaps(accept_long_gaps)
            return df, report
    text = _read_text(path)
    first = text[:64].lstrip().upper()
    df, report = (load_epw if first.startswith("LOCATION") else load_tmy3)(path, text=text,
                                                                          accept_long_gaps=accept_long_gaps)
    report.sha256 = sha
    if entry is not None:
        _cache_write(entry, df, report, sha)
    return df, report


def _leap_day_starts(year0: int, n_years: int) -> np.ndarray:
    """Starts of 29 February [s from Jan 1 00:00 of ``year0``] for the leap years ``year0 .. year0+n_years-1``."""
    y0 = _dt.datetime(year0, 1, 1)
    return np.array([(_dt.datetime(y, 2, 29) - y0).total_seconds()
                     for y in range(year0, year0 + n_years) if calendar.isleap(y)], dtype=float)


def typical_year_s(s_s: np.ndarray, year0: int, leap_starts: np.ndarray | None = None) -> np.ndarray:
    """Map times on the calendar to the typical (non-leap) year by month, day and time of day.

    The one calendar mapping of the project: the weather (:meth:`Weather.wet_bulb_K` after
    :meth:`Weather.at_calendar`) and the grid series with ``grid.calendar = "typical-year"``
    (:func:`scheduler_sim.analysis.grid.signal_in_sim_time`) both use it. Every calendar year maps a date and hour
    to the same second of the typical year; 29 February repeats 28 February (module docstring, "Calendar: leap
    years").

    Parameters
    ----------
    s_s : np.ndarray
        Times [s] counted from Jan 1 00:00 of the calendar year ``year0`` (in whatever clock the caller uses: local
        standard time for the weather, UTC for the grid), any shape, >= 0 (earlier times are not leap-corrected).
    year0 : int
        Calendar year of ``s_s = 0``.
    leap_starts : np.ndarray | None
        Starts of 29 February [s from Jan 1 00:00 of ``year0``] covering ``s_s`` (:func:`_leap_day_starts`), if
        the caller keeps the table; None builds it.

    Returns
    -------
    np.ndarray
        Seconds from Jan 1 00:00 of the typical year, in ``[0, 365 days)``, same shape as ``s_s``.
    """
    s = np.asarray(s_s, dtype=float)
    if leap_starts is None:
        n_years = int(max(float(s.max()) if s.size else 0.0, 0.0) // (365 * DAY_S)) + 2
        leap_starts = _leap_day_starts(int(year0), n_years)
    k = np.searchsorted(leap_starts, s, side="right")
    if k.any():
        s = s - DAY_S * k
    return s % YEAR_S


class Weather:
    """Wet-bulb (and, from a file, dry-bulb) temperature as a function of simulation time.

    The series is periodic. Its periodic interpolation table (the sorted stamps with one wrapped point at each
    end, exactly what ``numpy.interp(..., period=...)`` builds on every call) is built once here, so a lookup is
    one ``numpy.interp`` over the table and gives bit-identical values.

    Parameters
    ----------
    time_s : np.ndarray
        Increasing sample times within one period [s], shape (n,) (typical year: hour-ending stamps 3,600 ...
        31,536,000 s).
    T_wb_K : np.ndarray
        Wet-bulb temperature at ``time_s`` [K], shape (n,).
    offset_s : float
        Added to the simulation time before lookup, so that simulation time 0 falls on a chosen moment of the
        typical year (see :meth:`offset_for`, :meth:`at_calendar`).
    period_s : float
        Period of the series [s]; default one 8,760-h year.
    report : WeatherReport | None
        Loading report, kept for provenance (site, UTC offset, file hash).
    leap_year0 : int | None
        Calendar year whose Jan 1 00:00 (local standard time) is ``offset_s = 0``; set by :meth:`at_calendar`.
        With it, 29 February of every leap year repeats 28 February (module docstring). None: no calendar.
    T_db_K : np.ndarray | None
        Dry-bulb temperature at ``time_s`` [K], shape (n,) (the tower evaporation uses it, issue 22 item 6); None: not known
        (:meth:`dry_bulb_K` then returns None).

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
        leap_year0: int | None = None,
        T_db_K: np.ndarray | None = None,
    ):
        t = np.asarray(time_s, dtype=float)
        v = np.asarray(T_wb_K, dtype=float)
        if t.shape != v.shape or t.ndim != 1 or t.size == 0:
            raise ValueError("time_s and T_wb_K must be 1-D arrays of equal, non-zero length")
        if not (np.all(np.isfinite(t)) and np.all(np.isfinite(v))) or np.any(np.diff(t) <= 0):
            raise ValueError("time_s must be finite and increasing, T_wb_K finite")
        db = None if T_db_K is None else np.asarray(T_db_K, dtype=float)
        if db is not None and (db.shape != t.shape or not np.all(np.isfinite(db))):
            raise ValueError("T_db_K must be finite and of the shape of time_s")
        self._t, self._v, self._db = t, v, db
        self.offset_s = float(offset_s)
        self.period_s = float(abs(period_s))
        if self.period_s == 0:
            raise ValueError("period_s must be non-zero")
        self.report = report
        # periodic table, as numpy.interp(period=...) builds it (numpy/lib/function_base.py, interp)
        xp = t % self.period_s
        order = np.argsort(xp)
        xp, fp = xp[order], v[order]
        self._xp = np.concatenate((xp[-1:] - self.period_s, xp, xp[0:1] + self.period_s))
        self._fp = np.concatenate((fp[-1:], fp, fp[0:1]))
        self._fp_db = None if db is None else np.concatenate((db[order][-1:], db[order], db[order][0:1]))
        self.leap_year0 = None if leap_year0 is None else int(leap_year0)
        self._leap_starts = np.empty(0)
        self._leap_until_s = -np.inf
        if self.leap_year0 is not None:
            self._extend_leap_table(0.0)

    def _extend_leap_table(self, s_max: float) -> None:
        years = max(8, int(s_max // (365 * DAY_S)) + 2)
        self._leap_starts = _leap_day_starts(self.leap_year0, years)
        self._leap_until_s = (_dt.datetime(self.leap_year0 + years, 1, 1)
                              - _dt.datetime(self.leap_year0, 1, 1)).total_seconds()

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
    def _from_frame(cls, df: pd.DataFrame, report: WeatherReport, offset_s: float) -> Weather:
        """The series of a loader's frame (:func:`load_weather`, :func:`load_tmy3`, :func:`load_epw`): wet-bulb and
        dry-bulb on the hour stamps, with the loader's report.
        """
        return cls(df["time_s"].to_numpy(), df["T_wb_K"].to_numpy(), offset_s=offset_s, report=report,
                   T_db_K=df["T_db_K"].to_numpy())

    @classmethod
    def from_file(cls, path: str | Path, offset_s: float = 0.0, *, cache: bool = True,  # noqa: DOC502
                  accept_long_gaps: bool = False) -> Weather:
        """Weather from an EPW or TMY3 file (see :func:`load_weather`).

        Parameters
        ----------
        path : str | Path
            EPW or TMY3 CSV, plain or gzip.
        offset_s : float
            Start offset into the typical year [s].
        cache : bool
            Use the wet-bulb cache.
        accept_long_gaps : bool
            Interpolate missing-value gaps longer than :data:`MAX_INTERPOLATED_GAP_H` instead of refusing them.

        Returns
        -------
        Weather
            Periodic over the 8,760-h year; :attr:`report` carries the site, UTC offset, file hash and gaps.

        Raises
        ------
        WeatherFileError
            As :func:`load_weather`.
        """
        df, report = load_weather(path, cache=cache, accept_long_gaps=accept_long_gaps)
        return cls._from_frame(df, report, offset_s)

    @classmethod
    def from_tmy3(cls, path: str | Path, offset_s: float = 0.0) -> Weather:
        """Weather from a TMY3 file (see :func:`load_tmy3`), not cached.

        Parameters
        ----------
        path : str | Path
            TMY3 CSV, plain or gzip.
        offset_s : float
            Start offset into the typical year [s].

        Returns
        -------
        Weather
            Periodic over the 8,760-h year.
        """
        df, report = load_tmy3(path)
        return cls._from_frame(df, report, offset_s)

    @classmethod
    def from_epw(cls, path: str | Path, offset_s: float = 0.0) -> Weather:
        """Weather from an EnergyPlus EPW file (see :func:`load_epw`), not cached.

        Parameters
        ----------
        path : str | Path
            EPW file, plain or gzip.
        offset_s : float
            Start offset into the year [s].

        Returns
        -------
        Weather
            Periodic over the 8,760-h year.
        """
        df, report = load_epw(path)
        return cls._from_frame(df, report, offset_s)

    @staticmethod
    def offset_for(day_of_year: int, hour: float = 0.0) -> float:
        """Offset that puts simulation time 0 at a given moment of the typical year.

        Parameters
        ----------
        day_of_year : int
            1 = Jan 1, ..., 365 = Dec 31.
        hour : float
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
        """Same series with another start offset (and no calendar).

        Parameters
        ----------
        offset_s : float
            Start offset [s].

        Returns
        -------
        Weather
            A new object sharing the data.
        """
        return Weather(self._t, self._v, offset_s=offset_s, period_s=self.period_s, report=self.report,
                       T_db_K=self._db)

    def at_calendar(self, origin_unix_s: float, utc_offset_h: float) -> Weather:
        """Same series, aligned to the calendar: simulation time 0 is the Unix time ``origin_unix_s``.

        A simulation time ``t`` is looked up at the local standard time ``origin + t + utc_offset_h`` (hours),
        mapped to the typical year by month, day and time of day: every calendar year maps a date to the same
        weather hour, and 29 February repeats 28 February (module docstring).

        Parameters
        ----------
        origin_unix_s : float
            Unix time [s, UTC] of simulation time 0 (a trace's ``time_origin_unix_s``); must be finite.
        utc_offset_h : float
            Hours from UTC to the weather file's local standard time (e.g. -6 for Chicago).

        Returns
        -------
        Weather
            A new object sharing the data, with ``offset_s`` = seconds from Jan 1 00:00 local of the origin's year.

        Raises
        ------
        ValueError
            If the origin or the offset is not finite, or the offset is outside [-14, 14] h.
        """
        if not (np.isfinite(origin_unix_s) and np.isfinite(utc_offset_h)) or abs(utc_offset_h) > 14:
            raise ValueError(f"calendar origin {origin_unix_s!r} and UTC offset {utc_offset_h!r} h must be finite, "
                             f"the offset within [-14, 14] h")
        local = (_dt.datetime.fromtimestamp(origin_unix_s, _dt.timezone.utc)
                 + _dt.timedelta(hours=float(utc_offset_h)))
        offset = (local - local.replace(month=1, day=1, hour=0, minute=0, second=0, microsecond=0)).total_seconds()
        return Weather(self._t, self._v, offset_s=offset, period_s=self.period_s, report=self.report,
                       leap_year0=local.year, T_db_K=self._db)

    def wet_bulb_K(self, t_s: np.ndarray | float) -> np.ndarray:
        """Wet-bulb temperature at simulation times (linear interpolation, periodic).

        Parameters
        ----------
        t_s : np.ndarray | float
            Simulation time [s], any shape.

        Returns
        -------
        ndarray
            Wet-bulb temperature [K], same shape as ``t_s``.
        """
        return self._lookup(t_s, self._v, self._fp)

    @property
    def has_dry_bulb(self) -> bool:
        """bool: True when the series has a dry-bulb (from a weather file)."""
        return self._db is not None

    def dry_bulb_K(self, t_s: np.ndarray | float) -> np.ndarray | None:
        """Dry-bulb temperature at simulation times (the same interpolation and calendar as :meth:`wet_bulb_K`).

        Parameters
        ----------
        t_s : np.ndarray | float
            Simulation time [s], any shape.

        Returns
        -------
        ndarray or None
            Dry-bulb temperature [K], same shape as ``t_s``; None when the series has no dry-bulb (a constant
            wet-bulb): the plant then takes saturated air.
        """
        if self._db is None:
            return None
        return self._lookup(t_s, self._db, self._fp_db)

    def _lookup(self, t_s, v: np.ndarray, fp: np.ndarray) -> np.ndarray:
        t = np.asarray(t_s, dtype=float)
        if self._t.size == 1:
            return np.full(t.shape, v[0])
        s = t + self.offset_s
        if self.leap_year0 is not None and s.size:
            if s.max() >= self._leap_until_s:
                self._extend_leap_table(float(s.max()))
            s = typical_year_s(s, self.leap_year0, self._leap_starts)  # month / day / hour, 29 Feb = 28 Feb
        return np.interp(s % self.period_s, self._xp, fp)


@lru_cache(maxsize=1)
def _default() -> Weather:
    return Weather.from_tmy3(DEFAULT_TMY3)


def default_weather(offset_s: float = 0.0) -> Weather:
    """Shipped NREL Golden, CO TMY3 weather (``cooling_fmu/data/724666TY.csv.gz``, see ATTRIBUTION.md).

    Parameters
    ----------
    offset_s : float
        Start offset into the typical year [s].

    Returns
    -------
    Weather
        Periodic hourly wet-bulb (parsed once per process).
    """
    return _default().with_offset(offset_s)


#: Half-width of the band around a design value whose hours are averaged into a mean coincident value [K].
#: ASSUMPTION: ASHRAE Handbook Fundamentals (2021) ch. 14 defines the mean coincident value as the mean of the
#: coincident variable over the hours at the design value (from the joint frequency matrix); with 0.1 K file
#: resolution a +/-0.5 K band is used here (and widened in 0.5 K steps if it holds no hour).
COINCIDENT_BAND_K = 0.5


@dataclass(frozen=True)
class DesignConditions:
    """Annual cooling and evaporation design conditions of one weather file (ASHRAE Fundamentals ch. 14).

    Attributes
    ----------
    wet_bulb_K : float
        Evaporation design wet-bulb: exceeded in ``percent`` % of the year's hours [K] (tower sizing).
    mcdb_K : float
        Mean coincident dry-bulb at that wet-bulb [K].
    dry_bulb_K : float
        Cooling design dry-bulb: exceeded in ``percent`` % of the hours [K] (dry-cooler sizing).
    mcwb_K : float
        Mean coincident wet-bulb at that dry-bulb [K].
    coldest_dry_bulb_K : float
        The year's minimum hourly dry-bulb [K] (winter control).
    hours : int
        Hours in the file.
    percent : float
        Annual exceedance percentage used (0.4, 1.0 or 2.0 in ASHRAE's tables).
    source : str
        The file and the method, for run headers and reports.
    """

    wet_bulb_K: float
    mcdb_K: float
    dry_bulb_K: float
    mcwb_K: float
    coldest_dry_bulb_K: float
    hours: int
    percent: float = 0.4
    source: str = ""


def _exceeded_value(x: np.ndarray, percent: float) -> float:
    """The order statistic exceeded by at most ``floor(percent/100 * n)`` of the ``n`` values.

    Sorted descending ``s``, the value is ``s[k]`` with ``k = floor(percent / 100 * n)``: at most ``k`` values lie
    strictly above it and more than ``k`` at or above it (ASHRAE's "exceeded in p % of the hours").
    """
    s = np.sort(np.asarray(x, dtype=float))[::-1]
    k = min(int(np.floor(percent / 100.0 * s.size)), s.size - 1)
    return float(s[k])


def _coincident_mean(primary: np.ndarray, other: np.ndarray, at: float) -> float:
    band = COINCIDENT_BAND_K
    while True:
        sel = np.abs(primary - at) <= band + 1e-9
        if sel.any():
            return float(other[sel].mean())
        band += 0.5  # pragma: no cover - the design value is itself a sample, so the first band holds it


def design_conditions(weather: str | Path | tuple[pd.DataFrame, WeatherReport] | pd.DataFrame | Weather,
                      percent: float = 0.4) -> DesignConditions:
    """Annual design-day conditions from an hourly weather year (ASHRAE Handbook Fundamentals ch. 14 definition).

    The design wet-bulb (evaporation) and dry-bulb (cooling) are the hourly values exceeded in ``percent`` % of
    the year's hours (ASHRAE Handbook Fundamentals, ch. 14 "Climatic design information": 0.4 %, 1 % and 2 %
    annual values); exactly, the order statistic ``s[floor(percent/100 * n)]`` of the values sorted descending,
    so at most that many hours lie strictly above it (0.4 % of 8,760 h: 35 h). The mean coincident dry-bulb
    (MCDB) and wet-bulb (MCWB) average the other variable over the hours within :data:`COINCIDENT_BAND_K` of the
    design value (ASSUMPTION on the band width, see there).

    Parameters
    ----------
    weather : str | Path | tuple[pd.DataFrame, WeatherReport] | pd.DataFrame | Weather
        A weather file (EPW or TMY3, read by :func:`load_weather`), what :func:`load_weather` /
        :func:`load_epw` / :func:`load_tmy3` return, their DataFrame (columns ``T_db_K`` and ``T_wb_K``), or a
        :class:`Weather` loaded from a file (re-read from :attr:`WeatherReport.path`, since it keeps only the
        wet-bulb).
    percent : float
        Annual exceedance percentage, 0 < percent < 100; default 0.4.

    Returns
    -------
    DesignConditions
        Temperatures in K; ``source`` names the file and the method.

    Raises
    ------
    ValueError
        If ``percent`` is outside (0, 100), a :class:`Weather` has no file behind it (constant wet-bulb), or the
        data has no ``T_db_K`` / ``T_wb_K`` column or a non-finite value in them; for a path, the
        :class:`WeatherFileError` (a ValueError) of :func:`load_weather`.
    """
    if not (0.0 < float(percent) < 100.0):
        raise ValueError(f"design_conditions: percent must be in (0, 100), got {percent!r}")
    name = "<DataFrame>"
    if isinstance(weather, Weather):
        if weather.report is None or not weather.report.path:
            raise ValueError("design_conditions: this Weather has no weather file behind it (constant wet-bulb); "
                             "pass the EPW/TMY3 path instead")
        weather = weather.report.path
    if isinstance(weather, (str, Path)):
        weather = load_weather(weather)
    if isinstance(weather, tuple):
        df, report = weather
        name = Path(report.path).name if report.path else name
    else:
        df = weather
    for col in ("T_db_K", "T_wb_K"):
        if col not in getattr(df, "columns", ()):
            raise ValueError(f"design_conditions: {name}: no column {col!r} (expected what load_weather returns)")
    T_db = df["T_db_K"].to_numpy(dtype=float)
    T_wb = df["T_wb_K"].to_numpy(dtype=float)
    if T_db.size == 0 or not (np.all(np.isfinite(T_db)) and np.all(np.isfinite(T_wb))):
        raise ValueError(f"design_conditions: {name}: T_db_K / T_wb_K empty or not finite")
    wb = _exceeded_value(T_wb, percent)
    db = _exceeded_value(T_db, percent)
    p = float(percent)
    return DesignConditions(
        wet_bulb_K=wb, mcdb_K=_coincident_mean(T_wb, T_db, wb), dry_bulb_K=db,
        mcwb_K=_coincident_mean(T_db, T_wb, db), coldest_dry_bulb_K=float(T_db.min()), hours=int(T_db.size),
        percent=p,
        source=(f"{name}: {p:g} % annual design conditions (ASHRAE Handbook Fundamentals ch. 14 definition: hourly "
                f"value exceeded in {p:g} % of {T_db.size} h = order statistic {int(np.floor(p / 100 * T_db.size))} "
                f"from the top; mean coincident values over +/-{COINCIDENT_BAND_K:g} K)"))
