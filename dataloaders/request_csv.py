"""Request-trace loaders (LLM serving): shared machinery and the generic CSV loader with a column mapping.

Request loaders are :class:`~dataloaders.registry.BaseLoader` plugins like the batch loaders, registered in the
same registry, but their :class:`~dataloaders.report.LoadResult` carries the canonical *request* table
(:mod:`jobs.requests`) in its ``jobs`` field, and their class attribute ``table_kind`` is ``"requests"``.

Every request loader:

* reports each bad record (line, field, what was found, what is expected) and leaves it out (``strict=True``:
  raises :class:`~dataloaders.report.TraceError` for the first one instead);
* rejects the minority of a trace that mixes Unix epochs and offsets (as the SWF loader does), and keeps the
  calendar date of a trace whose times are all epochs;
* normalises the time origin to the first arrival (``arrival_time_s[0] == 0``), keeps the absolute origin as
  ``attrs["time_origin_unix_s"]`` when the trace has absolute times, and writes both into the report's notes;
* raises :class:`~dataloaders.report.TraceError` when the trace yields no request.
"""

from __future__ import annotations

import csv
import io
import os
import re
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from dataloaders._common import MAX_TIME_S, read_bytes
from dataloaders.fields import RecordField, parse_record
from dataloaders.registry import BaseLoader
from dataloaders.report import Issue, LoadReport, LoadResult, TraceError
from dataloaders.swf import EPOCH_THRESHOLD_S
from jobs.requests import make_request_table

__all__ = ["BaseRequestLoader", "RequestCSVLoader", "open_text", "parse_datetimes", "TIME_UNITS_S"]

#: Seconds per unit for numeric time columns.
TIME_UNITS_S: dict[str, float] = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}


def open_text(path: str | os.PathLike[str], report: LoadReport | None = None) -> io.TextIOBase:
    """Open a text trace.

    Gzip is detected from the content (whatever the suffix), UTF-8 (BOM tolerated), and Latin-1 when the file is
    not valid UTF-8, so one stray byte costs at most its record, never the whole trace.

    Parameters
    ----------
    path : str | os.PathLike[str]
        The trace file.
    report : LoadReport | None
        Gets a note when the Latin-1 fallback is used.

    Returns
    -------
    io.StringIO
        The decoded text (``newline=""`` semantics for the csv module).

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.

    Notes
    -----
    Raised by the functions it calls, not by its own body:

    - ``TraceError``: If the gzip stream is corrupt.
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"{p}: trace file not found")
    data, enc = read_bytes(p)
    if enc != "utf-8" and report is not None:
        report.notes.append("the file is not valid UTF-8: read as Latin-1 (a stray byte can only spoil its record)")
    return io.StringIO(data.decode(enc), newline="")


#: Zone-less date-time with 0-9 fractional-second digits (Azure LLM traces write 7).
_DT = re.compile(r"^(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?$")


def parse_datetimes(texts: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Parse zone-less date-time text with any number (0-9) of fractional-second digits, read as UTC.

    Parameters
    ----------
    texts : list[str]
        List of str, length n: E.g. ``"2023-11-16 18:15:46.6805900"``.

    Returns
    -------
    seconds : ndarray of int64, shape (n,)
        Whole Unix seconds (0 where invalid).
    fraction : ndarray of float64, shape (n,)
        Fractional second in [0, 1) (exact to the digits given, 0 where invalid).
    ok : ndarray of bool, shape (n,)
        Whether the text was a valid date-time.
    """
    n = len(texts)
    whole = []
    frac = np.zeros(n)
    ok = np.zeros(n, dtype=bool)
    for i, t in enumerate(texts):
        m = _DT.match(t.strip())
        if m is None:
            whole.append("NaT")
            continue
        whole.append(m.group(1).replace("T", " "))
        d = m.group(2)
        frac[i] = int(d) / 10 ** len(d) if d else 0.0
        ok[i] = True
    ts = pd.to_datetime(pd.Series(whole, dtype=object), format="%Y-%m-%d %H:%M:%S", errors="coerce")
    bad = ts.isna().to_numpy()
    ok &= ~bad
    secs = np.where(ok, ts.to_numpy("datetime64[s]").astype("int64", copy=False), 0)
    return secs.astype(np.int64), np.where(ok, frac, 0.0), ok


class BaseRequestLoader(BaseLoader):
    """Base of the request-trace loaders: record checks, origin normalisation, the empty-trace error."""

    table_kind: ClassVar[str] = "requests"

    def _record(self, report: LoadReport, line: int, field: str, found: Any, expected: str, reason: str,
                strict: bool) -> None:
        """Reject one record (or raise in strict mode)."""
        issue = Issue(line=line, job_id=None, field=field, found=str(found)[:80], expected=expected,
                      action="rejected", reason=reason)
        if strict:
            raise TraceError(report.source, f"bad record ({reason})", line=line, field=field,
                             expected=expected, found=str(found)[:80])
        report.issues.append(issue)
        report.rejected += 1

    @staticmethod
    def _int_tokens(value: Any) -> int | None:
        """Token count from text or number: an integer in [1, 2**31] (``'12'``, ``12``, ``12.0``), else None.

        The upper bound keeps counts inside int64 arithmetic (``1e300`` is rejected, never cast).
        """
        try:
            x = float(value)
        except (TypeError, ValueError, OverflowError):
            return None
        if not np.isfinite(x) or x < 1 or x > 2.0**31 or x != int(x):
            return None
        return int(x)

    def _finish(self, report: LoadReport, t_s: list[float], prompt: list[int], output: list[int],
                prefix: list[tuple[int, ...]] | None, origin_unix_s: float, origin_text: str | list[str],
                lines: list[int] | None = None, strict: bool = False, time_field: str = "arrival") -> LoadResult:
        """Check the time origins, shift times so the first arrival is 0, note the origin, build the table.

        Time origins (as the SWF loader does for submit times, :data:`dataloaders.swf.EPOCH_THRESHOLD_S`): a time
        whose absolute value (``origin_unix_s + t`` when the trace has absolute times, else the trace's own
        clock) is above 1e8 s (1973) is a Unix epoch, else an offset. A trace mixing both has no single origin:
        the minority is rejected record by record (reason ``arrival_time_mixed_origin``; on a tie the epochs),
        so one stray epoch among offsets cannot stretch the run over 50 years. Times above 1e10 s (year 2286)
        are rejected (``time_out_of_range``). When every time is an epoch and the trace gave no origin, the
        first arrival becomes the origin, so the run keeps the trace's calendar date (weather).

        Parameters
        ----------
        report : LoadReport
            The load's report (issues and counts updated here).
        t_s : list[float]
            List of float, length n: Arrival times [s] relative to ``origin_unix_s`` (or the trace's own clock when it
            is NaN).
        prompt : list[int]
            Length n: prompt token counts (each in [1, 2**31]).
        output : list[int]
            Length n: output token counts (each in [1, 2**31]).
        prefix : list[tuple[int, ...]] | None
            List of tuple of int, length n, or None: Prompt block ids.
        origin_unix_s : float
            Unix time of the trace's time 0, NaN when the trace has no absolute time.
        origin_text : str | list[str]
            Str or list of str: How the first arrival is written in the file (one text per request, or one for the
            first).
        lines : list[int] | None
            List of int, length n: Line of each request, for rejections.
        strict : bool
            Raise :class:`TraceError` for the first rejection.
        time_field : str
            Name of the time field, for rejections.

        Returns
        -------
        LoadResult

        Raises
        ------
        TraceError
            No request left (message with the counts), or a rejection in strict mode.
        """
        t = np.asarray(t_s, dtype=np.float64)
        keep = np.ones(t.size, dtype=bool)
        if t.size:
            base = origin_unix_s if np.isfinite(origin_unix_s) else 0.0
            absolute = t + base
            ln = lines if lines is not None else [None] * t.size
            huge = absolute > MAX_TIME_S
            for k in np.flatnonzero(huge):
                self._record(report, ln[k], time_field, f"{absolute[k]:.10g} s",
                             f"a time below {MAX_TIME_S:.0e} s (year 2286)", "time_out_of_range", strict)
            keep &= ~huge
            epoch = keep & (absolute > EPOCH_THRESHOLD_S)
            n_e, n = int(epoch.sum()), int(keep.sum())
            if 0 < n_e < n:
                minority = epoch if n_e <= n - n_e else keep & ~epoch
                want = ("Unix epochs like the other records" if n_e > n - n_e
                        else f"offsets below {EPOCH_THRESHOLD_S:.0e} s like the other records")
                for k in np.flatnonzero(minority):
                    self._record(report, ln[k], time_field, f"{absolute[k]:.10g} s", want, "arrival_time_mixed_origin",
                                 strict)
                keep &= ~minority
                report.notes.append(f"arrival times mix Unix epochs ({n_e}) and offsets ({n - n_e}): the "
                                    f"{int(minority.sum())} {'epoch' if n_e <= n - n_e else 'offset'} record(s) "
                                    "were rejected")
            if keep.any() and epoch[keep].all() and not np.isfinite(origin_unix_s):
                origin_unix_s = 0.0
                report.notes.append(f"arrival times are Unix epochs (> {EPOCH_THRESHOLD_S:.0e} s): the first "
                                    "arrival is the time origin, so the run keeps the trace's calendar date")
        if not keep.all():
            idx = np.flatnonzero(keep)
            t = t[idx]
            prompt = [prompt[k] for k in idx]
            output = [output[k] for k in idx]
            prefix = None if prefix is None else [prefix[k] for k in idx]
            if not isinstance(origin_text, str):
                origin_text = [origin_text[k] for k in idx]
        if not t.size:
            raise TraceError(report.source, report.no_records_message("requests"), expected=">= 1 valid request")
        if not isinstance(origin_text, str):
            origin_text = origin_text[int(np.argmin(t))]
        shift = float(t.min())
        if np.any(np.diff(t) < 0):
            report.notes.append("arrival times are not sorted in the file; the table is sorted by arrival "
                                "(stable), request_id follows the sorted order")
        origin = origin_unix_s + shift if np.isfinite(origin_unix_s) else float("nan")
        if np.isfinite(origin):
            report.notes.append(f"time origin = first arrival {origin_text} (Unix {origin:.7f} s); "
                                f"arrival_time_s is relative to it")
        else:
            report.notes.append(f"relative timestamps; time origin = first arrival (trace clock {shift:g} s "
                                f"subtracted); no absolute time (time_origin_unix_s = NaN)")
        same = int(np.count_nonzero(np.diff(np.sort(t)) == 0))
        if same:
            report.notes.append(f"{same} request(s) arrive at exactly the same time as the previous one")
        df = make_request_table(t - shift, prompt, output, prefix, time_origin_unix_s=origin, time_shift_s=shift)
        report.accepted = len(df)
        report.header["time_origin_unix_s"] = origin
        report.header["time_shift_s"] = shift
        return LoadResult(df, report)


def _block_list(text: str) -> tuple[int, ...] | None:
    """``"1 2 3"`` or ``"1;2;3"`` -> block ids; None when a token is not an integer."""
    try:
        return tuple(int(b) for b in text.replace(";", " ").split())
    except ValueError:
        return None


def _request_fields(idx: dict[str, int], arrival: str, prompt: str, output: str, prefix: str, time_unit: str
                    ) -> tuple[RecordField, ...]:
    """The fields of a request CSV row ((arrival time [s] or NaN, row)), named by the column mapping.

    Parameters
    ----------
    idx : dict[str, int]
        Role (``arrival``, ``prompt``, ``output``, ``prefix``) -> column index.
    arrival : str
        Column name of the arrival time (the report's field name).
    prompt : str
        Column name of the prompt tokens.
    output : str
        Column name of the output tokens.
    prefix : str
        Column name of the prompt block ids, ``""`` for none.
    time_unit : str
        Unit of the arrival column (in the report's expected text).

    Returns
    -------
    tuple of RecordField
        In the order they are checked (engine: :func:`dataloaders.fields.parse_record`).
    """
    fields = [
        RecordField("time", arrival, lambda rec: rec[0], lambda t: t if np.isfinite(t) else None,
                    f"a time ({time_unit})", "bad_time", "s", found=lambda rec: rec[1][idx["arrival"]]),
        RecordField("prompt", prompt, lambda rec: rec[1][idx["prompt"]], BaseRequestLoader._int_tokens,
                    "an integer in [1, 2**31]", "bad_prompt_tokens", "tokens"),
        RecordField("output", output, lambda rec: rec[1][idx["output"]], BaseRequestLoader._int_tokens,
                    "an integer in [1, 2**31]", "bad_output_tokens", "tokens"),
    ]
    if prefix:
        fields.append(RecordField("prefix", prefix, lambda rec: rec[1][idx["prefix"]], _block_list,
                                  "integers separated by spaces or ';'", "bad_prefix_ids", "block ids"))
    return tuple(fields)


class RequestCSVLoader(BaseRequestLoader):
    """Generic request CSV with a column mapping (header row required).

    Options of :meth:`load`: ``arrival`` (column of arrival times, required), ``prompt`` and ``output`` (token
    count columns, required), ``prefix`` (optional column of block ids separated by spaces or ``;``),
    ``time_unit`` (``"s"``, ``"ms"``, ``"us"``, ``"ns"`` for numbers, or ``"datetime"`` for ISO-like text without
    a zone, read as UTC, any number of fractional digits), ``delimiter`` (default ``,``), ``strict``.
    """

    name: ClassVar[str] = "request_csv"
    description: ClassVar[str] = "LLM request trace as CSV with a column mapping (arrival, prompt, output tokens)"
    suffixes: ClassVar[tuple[str, ...]] = ()

    def load(self, path: str | os.PathLike[str], *, arrival: str = "", prompt: str = "", output: str = "",
             prefix: str = "", time_unit: str = "s", delimiter: str = ",", strict: bool = False,
             **options: Any) -> LoadResult:
        """Read a request CSV.

        Parameters
        ----------
        path : str | os.PathLike[str]
            The CSV file (``.gz`` allowed).
        arrival : str
            Column name of the arrival time.
        prompt : str
            Column name of the prompt tokens.
        output : str
            Column name of the output tokens.
        prefix : str
            Column of prompt block ids (``"1 2 3"`` or ``"1;2;3"``), '' for none.
        time_unit : str
            One of {"s", "ms", "us", "ns", "datetime"}: Unit of the arrival column.
        delimiter : str
            Field separator.
        strict : bool
            Raise on the first bad record instead of rejecting it.
        **options : Any
            Options meant for other loaders (e.g. ``max_nodes``) are ignored.

        Returns
        -------
        LoadResult
            ``jobs`` holds the request table (:mod:`jobs.requests`).

        Raises
        ------
        TraceError
            Missing mapping or column (line 1), bad record in strict mode, or no request at all.

        Notes
        -----
        Raised by the functions it calls, not by its own body:

        - ``FileNotFoundError``: If the file does not exist.
        """
        if not (arrival and prompt and output):
            raise TraceError(str(path), "the request_csv loader needs the column mapping options arrival=, "
                                        "prompt= and output=", expected="three column names")
        if time_unit not in TIME_UNITS_S and time_unit != "datetime":
            raise TraceError(str(path), "unknown time unit", field="time_unit", found=time_unit,
                             expected=f"one of {sorted(TIME_UNITS_S)} or 'datetime'")
        report = LoadReport(source=str(path), loader=self.name)
        reader = None
        try:
            with open_text(path, report) as fh:
                reader = csv.reader(fh, delimiter=delimiter)
                header = next(reader, None)
                if header is None:
                    raise TraceError(str(path), "empty file", line=1, expected="a header row")
                header = [h.strip() for h in header]
                cols = {"arrival": arrival, "prompt": prompt, "output": output}
                if prefix:
                    cols["prefix"] = prefix
                idx = {}
                for role, name in cols.items():
                    if name not in header:
                        raise TraceError(str(path), f"column {name!r} ({role}) not in the header", line=1,
                                         field=name, found=",".join(header)[:80], expected=f"a column named {name!r}")
                    idx[role] = header.index(name)
                rows = [(i, r) for i, r in enumerate(reader, start=2) if r and any(x.strip() for x in r)]
        except csv.Error as exc:  # e.g. a field beyond the csv module's field size limit, a NUL byte
            raise TraceError(str(path), f"not readable as CSV: {exc}", line=getattr(reader, "line_num", None),
                             expected="comma-separated text") from None
        report.records_read = len(rows)
        t_raw: list[Any] = []
        keep_rows = []
        for line, r in rows:
            if len(r) < len(header):
                self._record(report, line, "", delimiter.join(r), f"{len(header)} fields", "wrong_field_count",
                             strict)
                continue
            keep_rows.append((line, r))
            t_raw.append(r[idx["arrival"]].strip())
        if time_unit == "datetime":
            secs, fracs, ok = parse_datetimes(t_raw)
            t_vals = [(s - secs[ok][0]) + f if k else float("nan") for s, f, k in zip(secs, fracs, ok)] if ok.any() \
                else [float("nan")] * len(t_raw)
            origin = float(secs[ok][0]) if ok.any() else float("nan")
        else:
            t_vals = []
            for x in t_raw:
                try:
                    t_vals.append(float(x) * TIME_UNITS_S[time_unit])
                except ValueError:
                    t_vals.append(float("nan"))
            origin = float("nan")
        T, P, O, X, L = [], [], [], [], []
        fields = _request_fields(idx, arrival, prompt, output, prefix, time_unit)
        for (line, r), tv in zip(keep_rows, t_vals):
            v = parse_record((tv, r), fields, lambda field, found, expected, reason, line=line:
                             self._record(report, line, field, found, expected, reason, strict))
            if v is None:
                continue
            T.append(tv)
            P.append(v["prompt"])
            O.append(v["output"])
            X.append(v.get("prefix", ()))
            L.append(line)
        return self._finish(report, T, P, O, X, origin, "(first valid row)", lines=L, strict=strict,
                            time_field=arrival)
