"""The grid-signal series type and the CSV reading every grid loader shares (timestamps, values, gaps, duplicates)."""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import io
import math
from pathlib import Path

import numpy as np

from dataloaders.report import Issue, TraceError
from jobs.memory import check_allocation
from jobs.textfiles import InputFileError, read_input

__all__ = ["GridSeries", "GridSignalError", "open_text", "read_rows", "regularise", "check_bounds", "MAX_ROWS",
           "CARBON_RANGE_G_PER_KWH", "PRICE_RANGE_PER_MWH"]

#: Most rows a grid file may have (ten years of 5-minute data); checked before allocation.
MAX_ROWS = 10 * 366 * 24 * 12

#: Physically possible carbon intensity [gCO2eq/kWh]: no grid emits less than nothing, and the dirtiest
#: generation (lignite, ~1,100-1,200 g/kWh life cycle, IPCC AR5 WG3 Annex III table A.III.2) stays well below
#: 2,000; a record outside is rejected (reported with its line), never used.
CARBON_RANGE_G_PER_KWH = (0.0, 2000.0)
#: Default plausible electricity price [currency/MWh]. Negative prices are real (PJM, ERCOT, CAISO), but every US
#: market caps its offers well inside this range (ERCOT's system-wide offer cap is 5,000 USD/MWh since 2023, PJM's
#: energy offer cap 1,000-2,000 USD/MWh; ASSUMPTION: the bound is deliberately wider than any of them). A record
#: outside is rejected with its line unless ``grid.price_range_per_MWh`` widens the range.
PRICE_RANGE_PER_MWH = (-1000.0, 10000.0)

#: Joules per kWh and per MWh (edge-unit conversion).
J_PER_KWH = 3.6e6
J_PER_MWH = 3.6e9


class GridSignalError(TraceError):
    """A grid-signal file cannot be used; the message names the file, line, field, what was found and expected."""


def open_text(path: Path) -> io.StringIO:
    """Open a grid-signal file as UTF-8 text through the one input opener (:func:`jobs.textfiles.read_input`).

    Decompression (gzip, bzip2, xz, zip; by content) is bounded, a UTF-8 BOM is dropped, UTF-16 / UTF-32 and lines
    over 1 MiB are refused.

    Parameters
    ----------
    path : Path
        The file (a missing one is a ``FileNotFoundError``).

    Returns
    -------
    io.StringIO
        The text (``newline=""`` for the csv module).

    Raises
    ------
    GridSignalError
        If the opener refuses the file, or it is not UTF-8 (the message names the file and line).
    """
    try:
        data = read_input(path, "grid-signal file")
    except InputFileError as exc:
        raise GridSignalError(exc.path, exc.reason) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise GridSignalError(str(path), f"not UTF-8 text (byte {exc.start}: {data[exc.start:exc.start + 1]!r}); "
                                         "save it as UTF-8", line=line) from None
    return io.StringIO(text, newline="")


@dataclasses.dataclass
class GridSeries:
    """A grid signal on a regular grid of Unix (UTC) times.

    Attributes
    ----------
    kind : {"carbon", "price"}
        Carbon intensity or electricity price.
    t0_unix_s : float
        Start of step 0 [Unix s, UTC].
    step_s : float
        Step length [s] (3600 for the hourly formats).
    values : ndarray of float64, shape (n,)
        Value on each step, in SI: carbon [kg CO2eq / J], price [currency / J]; NaN where the file gives none
        (a gap or a rejected record).
    unit : str
        Unit of the file's values (``gCO2eq/kWh``, ``USD/MWh``), for reports.
    basis : str
        Carbon: ``direct`` or ``lca``; price: ``""``.
    currency : str
        Price: the currency (``USD``); carbon: ``""``.
    source : str
        The file read.
    issues : list of dataloaders.report.Issue
        Rejected records and duplicates, with line and field.
    gaps : list of (float, float)
        Missing ranges ``[start, end)`` [Unix s] inside the file's span (records absent or rejected).
    records_read : int
        Data rows read.
    """

    kind: str
    t0_unix_s: float
    step_s: float
    values: np.ndarray
    unit: str
    basis: str = ""
    currency: str = ""
    source: str = ""
    issues: list[Issue] = dataclasses.field(default_factory=list)
    gaps: list[tuple[float, float]] = dataclasses.field(default_factory=list)
    records_read: int = 0

    @property
    def t_end_unix_s(self) -> float:
        """End of the last step [Unix s]."""
        return self.t0_unix_s + self.values.size * self.step_s

    def to_file_units(self, v):
        """SI values -> the file's unit (g/kWh for carbon, currency/MWh for price)."""
        return np.asarray(v, dtype=float) * (J_PER_KWH * 1e3 if self.kind == "carbon" else J_PER_MWH)

    def describe(self) -> str:
        """One line: source, span, step, mean in file units, gaps and rejected records."""
        v = self.values[np.isfinite(self.values)]
        mean = float(self.to_file_units(v.mean())) if v.size else float("nan")
        t0 = dt.datetime.fromtimestamp(self.t0_unix_s, dt.timezone.utc).strftime("%Y-%m-%d %H:%M")
        t1 = dt.datetime.fromtimestamp(self.t_end_unix_s, dt.timezone.utc).strftime("%Y-%m-%d %H:%M")
        what = f"{self.kind}{' (' + self.basis + ')' if self.basis else ''}"
        gap_h = sum(b - a for a, b in self.gaps) / 3600.0
        return (f"{what} {Path(self.source).name}: {t0} .. {t1} UTC, {self.values.size} steps of {self.step_s:g} s, "
                f"mean {mean:.2f} {self.unit}; {len(self.gaps)} gap(s) ({gap_h:g} h), "
                f"{sum(i.action == 'rejected' for i in self.issues)} record(s) rejected")


def _parse_time(text: str) -> float:
    """``YYYY-MM-DD HH:MM:SS`` (UTC, no zone) or ISO 8601 with an offset -> Unix seconds."""
    t = dt.datetime.fromisoformat(text.strip())
    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.timezone.utc)
    return t.timestamp()


def read_rows(path: Path, time_col: str, value_col: str, *, scale: float, strict: bool,
              expected_value: str, bounds: tuple[float, float] | None = None, unit: str = ""
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[Issue], int]:
    """Read a CSV file's time and value columns.

    Parameters
    ----------
    path : Path
        The file.
    time_col : str
        Header name of the UTC timestamp.
    value_col : str
        Header name of the value.
    scale : float
        Factor from the file's unit to SI (e.g. g/kWh -> kg/J: 1e-3 / 3.6e6).
    strict : bool
        Raise at the first unreadable record.
    expected_value : str
        What a valid value looks like, for messages.
    bounds : tuple[float, float] | None
        Closed range ``[lo, hi]`` of a valid value in the FILE's unit; a record outside is rejected
        (``out_of_range``, with its line) like an unreadable one. None: any finite value.
    unit : str
        The file's unit, for messages.

    Returns
    -------
    t_unix_s, values_SI : ndarray, shape (m,)
        The readable records, in file order.
    lines : ndarray of int64, shape (m,)
        1-based line of each record.
    issues : list of Issue
        One per rejected record (line, field, found, expected).
    rows : int
        Data rows read.

    Raises
    ------
    GridSignalError
        If a column is missing, the file is empty or too long, or (strict) a record is unreadable.
    """
    issues: list[Issue] = []
    ts: list[float] = []
    vs: list[float] = []
    ln: list[int] = []
    rows = 0
    with open_text(path) as fh:
        rd = csv.reader(fh)
        try:
            header = next(rd)
        except StopIteration:
            raise GridSignalError(str(path), "empty file", line=1) from None
        for col in (time_col, value_col):
            if col not in header:
                raise GridSignalError(str(path), "column missing from the header", line=1, field=col,
                                      found=",".join(header)[:80], expected=f"a column {col!r}")
        it, iv = header.index(time_col), header.index(value_col)
        for line_no, rec in enumerate(rd, start=2):
            if not rec or all(not c.strip() for c in rec):
                continue
            rows += 1
            if rows > MAX_ROWS:
                raise GridSignalError(str(path), f"more than {MAX_ROWS} rows", line=line_no)
            try:
                t = _parse_time(rec[it])
            except (ValueError, IndexError):
                iss = Issue(line_no, None, time_col, (rec[it] if it < len(rec) else "")[:80],
                            "a UTC time YYYY-MM-DD HH:MM:SS", "rejected", "bad_time")
                if strict:
                    raise GridSignalError(str(path), "unreadable time", line=line_no, field=time_col,
                                          found=iss.found, expected=iss.expected) from None
                issues.append(iss)
                continue
            raw = rec[iv] if iv < len(rec) else ""
            try:
                v = float(raw)
            except ValueError:
                v = math.nan
            if not math.isfinite(v):  # unreadable or not finite: the record is reported, never used
                iss = Issue(line_no, None, value_col, raw[:80], expected_value, "rejected", "bad_value")
                if strict:
                    raise GridSignalError(str(path), "unreadable value", line=line_no, field=value_col,
                                          found=raw[:80], expected=expected_value)
                issues.append(iss)
                continue
            if bounds is not None and not bounds[0] <= v <= bounds[1]:
                iss = Issue(line_no, None, value_col, raw[:80], f"a value in [{bounds[0]:g}, {bounds[1]:g}] {unit}",
                            "rejected", "out_of_range")
                if strict:
                    raise GridSignalError(str(path), "value out of range", line=line_no, field=value_col,
                                          found=raw[:80], expected=iss.expected)
                issues.append(iss)
                continue
            ts.append(t)
            vs.append(v * scale)
            ln.append(line_no)
    if not ts:
        first = f"; first: {issues[0].describe()}" if issues else ""
        raise GridSignalError(str(path), f"no readable record ({rows} data rows, {len(issues)} rejected{first})",
                              field=value_col)
    return np.array(ts), np.array(vs), np.array(ln, dtype=np.int64), issues, rows


def check_bounds(series: GridSeries, bounds: tuple[float, float], *, strict: bool = False) -> GridSeries:
    """Reject the steps of an already loaded series whose value is outside ``bounds`` (file units); in place.

    For series from loaders that cannot check records as they read them (plugins): the step becomes NaN (the
    fallback holds there) and an :class:`Issue` names its time, since the line is not known.

    Parameters
    ----------
    series : GridSeries
        The series (SI values).
    bounds : tuple[float, float]
        Closed valid range in the file's unit (g/kWh, currency/MWh).
    strict : bool
        Raise at the first value outside instead.

    Returns
    -------
    GridSeries
        The same object.

    Raises
    ------
    GridSignalError
        If ``strict`` and a value is outside.
    """
    v = series.to_file_units(series.values)
    bad = np.isfinite(v) & ((v < bounds[0]) | (v > bounds[1]))
    for k in np.flatnonzero(bad):
        when = dt.datetime.fromtimestamp(series.t0_unix_s + k * series.step_s, dt.timezone.utc)
        iss = Issue(None, None, f"value at {when:%Y-%m-%d %H:%M:%S} UTC", f"{v[k]:g}",
                    f"a value in [{bounds[0]:g}, {bounds[1]:g}] {series.unit}", "rejected", "out_of_range")
        if strict:
            raise GridSignalError(series.source, "value out of range", field=iss.field, found=iss.found,
                                  expected=iss.expected)
        series.issues.append(iss)
    if bad.any():
        series.values = np.where(bad, np.nan, series.values)
        t0 = series.t0_unix_s
        series.gaps = sorted(series.gaps + [(t0 + k * series.step_s, t0 + (k + 1) * series.step_s)
                                            for k in np.flatnonzero(bad)])
    return series


def regularise(path: Path, t: np.ndarray, v: np.ndarray, lines: np.ndarray, issues: list[Issue], *, strict: bool,
               time_col: str, step_s: float = 3600.0) -> tuple[float, np.ndarray, list[tuple[float, float]]]:
    """Place records on a regular grid of ``step_s`` from the first time; NaN where none; report duplicates.

    Records whose times are not on the grid are rejected (``off_grid``); a second record for the same step keeps
    the first and is reported (``duplicate_time``), as for traces. ``issues`` is extended in place.

    Parameters
    ----------
    path : Path
        The file (for messages).
    t : np.ndarray
        Record times [Unix s].
    v : np.ndarray
        Record values (SI).
    lines : np.ndarray
        1-based line of each record.
    issues : list[Issue]
        The load's issues, extended in place.
    strict : bool
        Raise at the first duplicate or off-grid record.
    time_col : str
        Name of the time column (for messages).
    step_s : float
        Grid step [s].

    Returns
    -------
    t0 : float
        Start of step 0 [Unix s].
    values : ndarray, shape (n,)
        NaN where no record.
    gaps : list of (float, float)
        Missing ranges ``[start, end)`` [Unix s].

    Raises
    ------
    GridSignalError
        If (strict) a duplicate or off-grid record is found, or the span is too long.
    """
    t0 = float(np.min(t))
    k_f = (t - t0) / step_s
    k = np.rint(k_f).astype(np.int64)
    n = int(k.max()) + 1
    if n > MAX_ROWS:
        raise GridSignalError(str(path), f"the records span {n} steps of {step_s:g} s; at most {MAX_ROWS}")
    check_allocation(9 * n, f"{path}: a grid series of {n} steps of {step_s:g} s",
                     lambda m: GridSignalError(str(path), m.split(": ", 1)[1]))
    values = np.full(n, np.nan)
    seen = np.zeros(n, dtype=bool)
    for i in range(t.size):
        when = dt.datetime.fromtimestamp(t[i], dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
        if abs(k_f[i] - k[i]) > 1e-9:
            iss = Issue(int(lines[i]), None, time_col, when, f"a time on the {step_s:g} s grid", "rejected",
                        "off_grid")
        elif seen[k[i]]:
            iss = Issue(int(lines[i]), None, time_col, when, "one record per step (the first is kept)", "rejected",
                        "duplicate_time")
        else:
            seen[k[i]] = True
            values[k[i]] = v[i]
            continue
        if strict:
            raise GridSignalError(str(path), iss.reason.replace("_", " "), line=iss.line, field=time_col, found=when,
                                  expected=iss.expected)
        issues.append(iss)
    gaps: list[tuple[float, float]] = []
    miss = ~np.isfinite(values)
    if miss.any():
        d = np.diff(np.concatenate(([0], miss.astype(np.int8), [0])))
        for a, b in zip(np.flatnonzero(d == 1), np.flatnonzero(d == -1)):
            gaps.append((t0 + a * step_s, t0 + b * step_s))
    return t0, values, gaps
