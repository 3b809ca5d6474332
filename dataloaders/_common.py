"""Helpers shared by the trace loaders: reading text, collecting issues, unit parsing, finishing a load.

Not a public API: loaders import these so that every format reports problems, sorts, applies strict mode and
checks the canonical table the same way as the SWF loader (:mod:`dataloaders.swf`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dataloaders.report import Issue, LoadReport, LoadResult, TraceError
from jobs.table import validate_job_table
from jobs.textfiles import MAX_LINE_BYTES, InputFileError, read_input, read_input_head

__all__ = [
    "MAX_COUNT",
    "MAX_EXACT_INT",
    "MAX_TIME_S",
    "MEASURED_POWER_COLUMN",
    "Issues",
    "check_common_options",
    "count_or_zero",
    "finish_load",
    "local_times_to_epoch",
    "read_bytes",
    "read_text",
    "trace_bytes",
    "trace_bytes_head",
]

#: Largest node / processor / GPU count any loader accepts (int64 counts; no machine has more). Larger values
#: (``res: 1e300``) are rejected as out of range instead of overflowing the cast to int64.
MAX_COUNT = float(2**31)
#: Largest time accepted in a trace's time fields [s] (~317 years; the SWF loader's limit).
MAX_TIME_S = 1e10
#: Largest integer id kept exactly (float64 holds every integer up to 2**53).
MAX_EXACT_INT = 2**53

#: Extra column with the measured mean DC power per node of a job over its run [W]; NaN when unknown.
MEASURED_POWER_COLUMN = "measured_node_power_W"

_MAX_FOUND = 80


def read_text(path: Path, max_line_bytes: int | None = MAX_LINE_BYTES) -> str:
    """Read a text trace through the one input opener: decompressed (gzip, bzip2, xz, zip; told by the content)
    with a bound on its size, UTF-8 BOM stripped, UTF-16 / UTF-32 refused, lines bounded; latin-1 fallback.

    Parameters
    ----------
    path : Path
        The trace file.
    max_line_bytes : int | None
        Longest line accepted [bytes] (:data:`jobs.textfiles.MAX_LINE_BYTES`); None for JSON, which has no lines.

    Returns
    -------
    str
        The decoded text, without a leading byte-order mark.

    Notes
    -----
    Raised by the functions it calls, not by its own body:

    - ``FileNotFoundError``: If ``path`` does not exist.
    - ``TraceError``: If the compressed stream is corrupt, the content is too large
      (:func:`jobs.textfiles.read_input`), the text is UTF-16 / UTF-32, or a line is too long; the message names the
      file.
    """
    raw = trace_bytes(path, max_line_bytes)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def trace_bytes(path: str | Path, max_line_bytes: int | None = MAX_LINE_BYTES, what: str = "trace") -> bytes:
    """The decompressed bytes of a trace from :func:`jobs.textfiles.read_input`, its refusals as :class:`TraceError`
    (a missing file is a ``FileNotFoundError`` naming it).

    Parameters
    ----------
    path : str | Path
        The trace file.
    max_line_bytes : int | None
        Longest line accepted [bytes]; None for formats without lines.
    what : str
        What the file is, for messages.

    Returns
    -------
    bytes
        The content, UTF-8 byte-order mark stripped.

    Raises
    ------
    TraceError
        As :func:`jobs.textfiles.read_input` (corrupt stream, too large, UTF-16 / UTF-32, line too long).
    """
    try:
        return read_input(path, what, max_line_bytes=max_line_bytes)
    except InputFileError as exc:
        raise TraceError(exc.path, exc.reason) from None


def trace_bytes_head(path: str | Path, nbytes: int) -> bytes:
    """The first ``nbytes`` decompressed bytes of a trace (:func:`jobs.textfiles.read_input_head`), for header
    peeks and format guesses; refusals as :class:`TraceError` (a missing file is a ``FileNotFoundError``).

    Parameters
    ----------
    path : str | Path
        The trace file.
    nbytes : int
        Bytes wanted.

    Returns
    -------
    bytes
        Up to ``nbytes`` bytes, UTF-8 byte-order mark stripped.

    Raises
    ------
    TraceError
        If the compressed stream is corrupt or the text is UTF-16 / UTF-32.
    """
    try:
        return read_input_head(path, nbytes, "trace")
    except InputFileError as exc:
        raise TraceError(exc.path, exc.reason) from None


def read_bytes(path: Path) -> tuple[bytes, str]:
    """Read a text trace as bytes, for loaders that parse without building one big string.

    Same rules as :func:`read_text`: ``read_text(path) == data.decode(encoding)`` for the returned pair.

    Parameters
    ----------
    path : Path
        The trace file.

    Returns
    -------
    data : bytes
        The (decompressed) content, without a leading UTF-8 byte-order mark.
    encoding : {"utf-8", "latin-1"}
        ``"utf-8"`` when the whole content is valid UTF-8, else ``"latin-1"``.

    Notes
    -----
    Raised by the functions it calls, not by its own body:

    - ``FileNotFoundError``: If ``path`` does not exist.
    - ``TraceError``: As :func:`read_text`.
    """
    body = trace_bytes(path)
    if not body.isascii():
        try:
            body.decode("utf-8")
        except UnicodeDecodeError:
            return body, "latin-1"
    return body, "utf-8"


def count_or_zero(x: np.ndarray) -> np.ndarray:
    """Counts (nodes, processors) as int64, rounded up; 0 where the value is unusable.

    Parameters
    ----------
    x : np.ndarray
        Shape (n,), float: Counts as read (NaN for missing).

    Returns
    -------
    ndarray of int64, shape (n,)
        ``ceil(x)`` where ``x`` is finite and in ``[1, MAX_COUNT]``, else 0 (the loaders reject rows with 0, naming
        the value found). Never overflows: values outside the range are not cast.
    """
    x = np.asarray(x, dtype=np.float64)
    good = np.isfinite(x) & (x >= 1) & (x <= MAX_COUNT)
    out = np.zeros(x.shape, dtype=np.int64)
    out[good] = np.ceil(x[good]).astype(np.int64)
    return out


def check_common_options(cores_per_node: Any, max_nodes: Any) -> None:
    """Validate the options every loader accepts.

    Parameters
    ----------
    cores_per_node : Any
        Int: Processors per node, >= 1.
    max_nodes : Any
        Int or None: Machine size in nodes, >= 1, or None.

    Raises
    ------
    ValueError
        If either value is out of range.
    """
    if isinstance(cores_per_node, bool) or int(cores_per_node) != cores_per_node or cores_per_node < 1:
        raise ValueError(f"cores_per_node must be an integer >= 1, got {cores_per_node!r}")
    if max_nodes is not None and (int(max_nodes) != max_nodes or max_nodes < 1):
        raise ValueError(f"max_nodes must be an integer >= 1 or None, got {max_nodes!r}")


def _fmt(x: Any) -> str:
    if isinstance(x, str):
        return x
    try:
        f = float(x)
    except (TypeError, ValueError):
        return str(x)
    if math.isnan(f):
        return "nan"
    return str(int(f)) if f.is_integer() and abs(f) < 1e16 else repr(f)


class Issues:
    """Collects :class:`Issue` records while a loader works on arrays.

    Attributes
    ----------
    items : list of Issue
        Issues in the order added.
    """

    def __init__(self) -> None:
        self.items: list[Issue] = []

    def add(self, line: Any, job_id: Any, field: str, found: Any, expected: str, action: str, reason: str) -> None:
        """Add one issue.

        Parameters
        ----------
        line : Any
            Int or None: 1-based line (or record number for non-line formats).
        job_id : Any
            Int or None: Job id when known.
        field : str
            Field concerned.
        found : Any
            Object: What the file holds (shown truncated to 80 characters).
        expected : str
            What a valid value looks like.
        action : str
            One of {"rejected", "repaired", "flagged", "folded"}: What the loader did.
        reason : str
            Machine-readable category.
        """
        jid = None
        if job_id is not None:
            try:
                f = float(job_id)
                jid = int(f) if math.isfinite(f) else None
            except (TypeError, ValueError):
                jid = None
        ln = None if line is None or (isinstance(line, float) and math.isnan(line)) else int(line)
        self.items.append(Issue(ln, jid, field, _fmt(found)[:_MAX_FOUND], expected, action, reason))  # type: ignore[arg-type]

    def add_mask(self, mask: np.ndarray, lines: np.ndarray, ids: np.ndarray | None, field: str, found: Any,
                 expected: str, action: str, reason: str) -> int:
        """Add one issue per True entry of ``mask``.

        Parameters
        ----------
        mask : np.ndarray
            Shape (n,), bool: Rows concerned.
        lines : np.ndarray
            Shape (n,): Line / record numbers.
        ids : np.ndarray | None
            Shape (n,), or None: Job ids (None when unknown).
        field : str
            Field concerned.
        found : Any
            Shape (n,), or scalar: Values found, per row or one for all.
        expected : str
            As in :meth:`add`.
        action : str
            As in :meth:`add`.
        reason : str
            As in :meth:`add`.

        Returns
        -------
        int
            Number of issues added.
        """
        idx = np.flatnonzero(np.asarray(mask, dtype=bool))
        if not len(idx):
            return 0
        per_row = isinstance(found, (np.ndarray, list, pd.Series))
        if isinstance(found, pd.Series):  # only the rows concerned are converted (a column may have millions)
            fv = found.iloc[idx].to_numpy(dtype=object)
        else:
            fv = np.asarray(found, dtype=object)[idx] if per_row else None
        for j, k in enumerate(idx):
            self.add(lines[k], None if ids is None else ids[k], field, fv[j] if per_row else found, expected,
                     action, reason)
        return len(idx)


#: ``YYYY-MM-DDTHH:MM:SS`` with every field in range (ASCII digits): the times :func:`local_times_to_epoch` converts
#: in one pyarrow pass; every other text goes through the general per-distinct-value path.
_ISO_PLAIN = (r"[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])"
              r"T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]")
#: Unix seconds that datetime64[ns] holds (years 1678-2261): inside it pandas and pyarrow read the same instant.
_NS_SAFE_S = 9.2e9


def _iso_plain_to_epoch(values: pd.Series, tz: str) -> tuple[np.ndarray, np.ndarray] | None:
    """(Unix seconds, done mask) for the plain ISO local times of an Arrow string column; None for other columns.

    A row is done when its stripped text matches :data:`_ISO_PLAIN`, pyarrow parses it (not e.g. February 30),
    the local time exists and is unambiguous in ``tz`` and the instant is within :data:`_NS_SAFE_S`: for those
    rows the general path of :func:`local_times_to_epoch` gives the same value and reports nothing.
    """
    if not isinstance(values.array, pd.arrays.ArrowStringArray):
        return None
    import pyarrow as pa
    import pyarrow.compute as pc

    v = values.str.strip()
    cand = v.str.fullmatch(_ISO_PLAIN).to_numpy(dtype=bool)
    out = np.full(len(values), np.nan)
    done = np.zeros(len(values), dtype=bool)
    if not cand.any():
        return out, done
    txt = pa.array(v[cand].array)
    ts = pc.strptime(txt, format="%Y-%m-%dT%H:%M:%S", unit="s", error_is_null=True)
    # pyarrow rolls a day past the month's end over (February 30 -> March 2): such rows go to the general path
    same_day = pc.equal(pc.day(ts), pc.cast(pc.utf8_slice_codeunits(txt, 8, 10), pa.int64()))
    parsed = pc.fill_null(same_day, False).to_numpy(zero_copy_only=False)
    naive = ts.cast(pa.int64()).fill_null(0).to_numpy().astype("datetime64[s]")
    loc = pd.DatetimeIndex(naive).tz_localize(tz, ambiguous="NaT", nonexistent="NaT")
    sec = loc.as_unit("s").asi8.astype(np.float64)
    ok = parsed & ~np.asarray(pd.isna(loc)) & (np.abs(sec) <= _NS_SAFE_S)
    idx = np.flatnonzero(cand)[ok]
    out[idx] = sec[ok]
    done[idx] = True
    return out, done


def local_times_to_epoch(values: pd.Series, tz: str, field: str, lines: np.ndarray, ids: np.ndarray | None,
                         issues: Issues, *, fmt: str | None = None,
                         missing: tuple[str, ...] = ("", "Unknown", "None", "N/A")) -> np.ndarray:
    """Convert local wall-clock text times (ISO 8601, no zone) or Unix epochs to Unix seconds.

    Parameters
    ----------
    values : pd.Series
        Shape (n,), str: Times as text: ``2023-03-26T02:30:00`` (local time in ``tz``), an ISO time with an explicit
        offset, or
        all-digit Unix seconds (``SLURM_TIME_FORMAT=%s``).
    tz : str
        IANA time zone of the local times (e.g. ``"Europe/Rome"``, ``"UTC"``).
    field : str
        Field name, for issues.
    lines : np.ndarray
        Shape (n,), int: Line numbers, for issues.
    ids : np.ndarray | None
        Shape (n,), or None: Job ids, for issues.
    issues : Issues
        Where unparseable values (``flagged``, set to NaN) and DST-ambiguous (first occurrence used) or
        non-existent (moved forward by the gap) local times (``repaired``: ``dst_ambiguous_time``,
        ``dst_nonexistent_time``) are reported.
    fmt : str | None
        strptime format of the local times (default ISO ``%Y-%m-%dT%H:%M:%S`` with a fallback to mixed ISO).
    missing : tuple[str, ...]
        Tuple of str: Texts that mean "no time" (NaN, not an issue).

    Returns
    -------
    ndarray of float64, shape (n,)
        Unix seconds; NaN where missing or unparseable.
    """
    fast = _iso_plain_to_epoch(values, tz) if fmt is None and len(values) else None
    if fast is None:
        return _times_general(values, tz, field, lines, ids, issues, fmt=fmt, missing=missing)
    out, done = fast
    if not done.all():  # the rest in file order, so issues come out as the general path alone reports them
        rest = ~done
        out[rest] = _times_general(values[rest].reset_index(drop=True), tz, field, np.asarray(lines)[rest],
                                   None if ids is None else np.asarray(ids)[rest], issues, fmt=fmt, missing=missing)
    return out


def _times_general(values: pd.Series, tz: str, field: str, lines: np.ndarray, ids: np.ndarray | None,
                   issues: Issues, *, fmt: str | None, missing: tuple[str, ...]) -> np.ndarray:
    """:func:`local_times_to_epoch` for any text, vectorised over the distinct values."""
    codes, uniq = pd.factorize(values.astype(str).str.strip(), sort=False)
    u = pd.Series(uniq, dtype=object)
    # The regular expressions run on the pyarrow strings (RE2) when every distinct value is ASCII: there they
    # match exactly what Python's re matches (no newline can occur in a field); else on the Python strings.
    ua = pd.Series(uniq)
    if not (isinstance(ua.array, pd.arrays.ArrowStringArray) and ua.str.isascii().all()):
        ua = u
    out_u = np.full(len(u), np.nan)
    is_missing = ua.isin(missing).to_numpy()
    is_epoch = ua.str.fullmatch(r"\d{9,11}(?:\.\d*)?").to_numpy(dtype=bool)
    out_u[is_epoch] = u[is_epoch].astype(float).to_numpy()
    rest = ~is_missing & ~is_epoch
    bad_u = np.zeros(len(u), dtype=bool)
    amb_u = np.zeros(len(u), dtype=bool)
    gap_u = np.zeros(len(u), dtype=bool)
    if rest.any():
        txt = u[rest]
        has_zone = ua[rest].str.contains(r"(?:Z|[+-]\d\d:?\d\d)$", regex=True).to_numpy(dtype=bool)
        vals = np.full(len(txt), np.nan)
        if (~has_zone).any():
            t = txt[~has_zone]
            dt = pd.to_datetime(t, format=fmt or "%Y-%m-%dT%H:%M:%S", errors="coerce")
            if dt.isna().any():
                retry = dt.isna() & t.str.len().gt(0)
                dt2 = pd.to_datetime(t[retry], format="ISO8601", errors="coerce")
                dt = dt.where(~retry, dt2)
            loc = pd.DatetimeIndex(dt).tz_localize(tz, ambiguous="NaT", nonexistent="NaT")
            odd = loc.isna() & ~pd.isna(dt)
            gap_sub = np.zeros(len(t), dtype=bool)
            if odd.any():
                # DST, as Python's zoneinfo reads a wall time with fold=0: an ambiguous (autumn) time is its first
                # occurrence, the DST reading; a non-existent (spring) time is read with the offset in force
                # before the change, i.e. moved forward by the gap (02:30 in a 1 h gap -> 03:30); both reported
                loc, gap_sub = _dst_fold0(pd.DatetimeIndex(dt), loc, np.asarray(odd), tz)
            # microseconds: pandas may parse at second resolution, and year 3024 does not fit int64 nanoseconds
            us = loc.as_unit("us").asi8.astype(np.float64)
            us[pd.isna(loc)] = np.nan
            v = us / 1e6
            sub = np.flatnonzero(~has_zone)
            vals[sub] = v
            amb = np.zeros(len(txt), dtype=bool)
            amb[sub] = np.asarray(odd) & ~gap_sub
            gap = np.zeros(len(txt), dtype=bool)
            gap[sub] = gap_sub
            amb_u = np.zeros(len(u), dtype=bool)
            amb_u[np.flatnonzero(rest)] = amb
            gap_u = np.zeros(len(u), dtype=bool)
            gap_u[np.flatnonzero(rest)] = gap
        if has_zone.any():
            dtz = pd.to_datetime(txt[has_zone], format="ISO8601", errors="coerce", utc=True)
            us = pd.DatetimeIndex(dtz).as_unit("us").asi8.astype(np.float64)
            us[pd.isna(dtz)] = np.nan
            vals[np.flatnonzero(has_zone)] = us / 1e6
        vals[np.abs(vals) > MAX_TIME_S] = np.nan  # e.g. year 3024: no trace time, reported as a bad time
        out_u[np.flatnonzero(rest)] = vals
        bad_u = rest & np.isnan(out_u)
    out = out_u[codes] if len(u) else np.full(len(values), np.nan)
    if bad_u.any():
        bad = bad_u[codes]
        issues.add_mask(bad, lines, ids, field, values, f"a local ISO time YYYY-MM-DDTHH:MM:SS ({tz}) "
                        "or Unix seconds (set to NaN)", "repaired", "bad_time")
    if amb_u.any():
        amb = amb_u[codes]
        issues.add_mask(amb, lines, ids, field, values,
                        f"an unambiguous local time in {tz} (DST change: the hour happens twice; its first "
                        "occurrence, fold=0, was used)", "repaired", "dst_ambiguous_time")
    if gap_u.any():
        gap = gap_u[codes]
        issues.add_mask(gap, lines, ids, field, values,
                        f"a local time that exists in {tz} (DST change: the hour is skipped; moved forward by the "
                        "gap, fold=0)", "repaired", "dst_nonexistent_time")
    return out


def _dst_fold0(naive: pd.DatetimeIndex, loc: pd.DatetimeIndex, odd: np.ndarray, tz: str):
    """Localise the DST-ambiguous and non-existent wall times ``naive[odd]`` as Python's ``fold=0`` does.

    Parameters
    ----------
    naive : pd.DatetimeIndex
        Wall-clock times without zone, shape (n,).
    loc : pd.DatetimeIndex
        ``naive`` localised in ``tz`` with NaT where ambiguous or non-existent, shape (n,).
    odd : np.ndarray
        Bool, shape (n,): the rows to localise (NaT in ``loc``, a time in ``naive``).
    tz : str
        IANA zone.

    Returns
    -------
    loc : pandas.DatetimeIndex, shape (n,)
        ``loc`` with the odd rows filled: an ambiguous time at its first occurrence (the DST reading); a
        non-existent time with the UTC offset in force just before the change, which moves it forward by the gap
        (``datetime(..., fold=0, tzinfo=ZoneInfo(tz))``; PEP 495).
    gap : ndarray of bool, shape (n,)
        The odd rows that were non-existent (the others were ambiguous).
    """
    idx = np.flatnonzero(odd)
    sub = naive[idx]
    # non-existent times: NaT when localised with ambiguous="NaT" but non-existent ones shifted to the change
    shifted = sub.tz_localize(tz, ambiguous="NaT", nonexistent="shift_forward")
    gap = ~np.asarray(pd.isna(shifted))
    fixed = sub.tz_localize(tz, ambiguous=np.ones(len(sub), dtype=bool), nonexistent="shift_forward")
    if gap.any():
        before = shifted[gap] - pd.Timedelta(1, "s")  # an instant just before the change, in the old offset
        off = before.tz_localize(None) - before.tz_convert("UTC").tz_localize(None)
        utc = (sub[gap] - off).tz_localize("UTC").tz_convert(fixed.tz)
        fixed = fixed.to_series().reset_index(drop=True)
        fixed[np.flatnonzero(gap)] = utc
        fixed = pd.DatetimeIndex(fixed)
    out = loc.to_series().reset_index(drop=True)
    out[idx] = fixed
    gap_full = np.zeros(len(naive), dtype=bool)
    gap_full[idx[gap]] = True
    return pd.DatetimeIndex(out), gap_full


def finish_load(df: pd.DataFrame, report: LoadReport, issues: Issues, *, strict: bool, origin: float,
                attrs: dict[str, Any] | None = None, profiles: pd.DataFrame | None = None,
                line_column: str = "source_line") -> LoadResult:
    """Sort, count, apply strict mode, check the canonical table and build the :class:`LoadResult`.

    Parameters
    ----------
    df : pd.DataFrame
        Shape (n_jobs, >= 13): Accepted jobs with the canonical columns and ``line_column``.
    report : LoadReport
        Report with ``source``, ``loader``, ``records_read``, ``folded`` and notes already set.
    issues : Issues
        Every issue of the load (exactly one ``rejected`` issue per rejected record).
    strict : bool
        Raise for the first repaired or rejected record.
    origin : float
        Time origin [Unix s], NaN when the trace has no absolute time.
    attrs : dict[str, Any] | None
        Extra ``df.attrs`` entries.
    profiles : pd.DataFrame | None
        Power time-series side table (see :class:`dataloaders.report.LoadResult`).
    line_column : str
        Column holding each row's line / record number.

    Returns
    -------
    LoadResult
        Sorted job table (submit time, job id), report, profiles.

    Raises
    ------
    TraceError
        Strict-mode violation, or zero jobs.
    """
    src = report.source
    sub, jid = df["submit_time_s"].to_numpy(), df["job_id"].to_numpy()
    ds, dj = np.diff(sub), np.diff(jid)
    if len(df) and bool(np.all((ds > 0) | ((ds == 0) & (dj >= 0)))) and not np.isnan(sub[-1]):
        df = df.reset_index(drop=True)  # already in (submit, job id) order, no NaN: the stable sort is the identity
    else:
        df = df.sort_values(["submit_time_s", "job_id"], kind="stable").reset_index(drop=True)
    df.attrs = {"time_origin_unix_s": float(origin), "source": src, "loader": report.loader, **(attrs or {})}
    report.issues = sorted(issues.items, key=lambda i: (i.line if i.line is not None else -1))
    report.accepted = len(df)
    report.rejected = sum(1 for i in report.issues if i.action == "rejected")
    # distinct repaired lines that belong to an accepted record (no set of every accepted line: millions of jobs)
    repaired_lines = np.array(sorted({i.line for i in report.issues if i.action == "repaired" and i.line is not None}),
                              dtype=np.int64)
    report.repaired = (int(np.isin(repaired_lines, df[line_column].to_numpy()).sum())
                       if line_column in df and len(repaired_lines) else 0)
    problem = report.unusable(strict)
    if problem is not None:
        raise TraceError(report.source, **problem)
    if profiles is not None:
        profiles = profiles[profiles["job_id"].isin(df["job_id"])].reset_index(drop=True)
    return LoadResult(validate_job_table(df), report, profiles)


def reject_duplicates(ids: np.ndarray, lines: np.ndarray, issues: Issues, keep: str = "first") -> np.ndarray:
    """Reject repeated job ids, keeping the ``keep`` occurrence in file order.

    Parameters
    ----------
    ids : np.ndarray
        Shape (n,), int64: Job ids in file order.
    lines : np.ndarray
        Shape (n,), int: Line / record numbers.
    issues : Issues
        Where each dropped occurrence is reported (``rejected``, ``duplicate_job_id``).
    keep : str
        One of {"first", "last"}: Which occurrence is kept.

    Returns
    -------
    ndarray of bool, shape (n,)
        True for the rows kept.
    """
    s = pd.Series(ids)
    dup = s.duplicated(keep=keep).to_numpy()
    if dup.any():
        kept_line = pd.Series(lines[~dup], index=ids[~dup])
        for k in np.flatnonzero(dup):
            issues.add(lines[k], ids[k], "job_id", ids[k],
                       f"a unique job id (the {keep} occurrence, line {int(kept_line[ids[k]])}, is kept)",
                       "rejected", "duplicate_job_id")
    return ~dup
