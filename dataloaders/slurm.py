r"""Slurm ``sacct`` loader: ``sacct -P`` (or ``-p``) pipe-delimited accounting output -> canonical job table.

Typical command (any column order; ``-X`` optional; ``--noheader`` needs ``columns=``)::

    sacct -a -P -S 2024-01-01 -E 2024-02-01 \
        -o JobID,JobIDRaw,User,Account,Partition,Submit,Start,End,Elapsed,Timelimit,NNodes,NCPUS,NodeList,State,\\
TotalCPU,ConsumedEnergyRaw

Fields read (names as printed in the header, case-insensitive) -> canonical column
-------------------------------------------------------------------------------
==========================  ==========================================================================================
``JobIDRaw`` / ``JobID``    ``job_id``: the numeric id before any ``.step``; array (``123_4``) or heterogeneous
                            (``123+0``) ids without ``JobIDRaw`` get a new id above the largest numeric one
                            (repaired, ``non_numeric_job_id``); the text id is kept in ``trace_job_id``
step lines                  ``123.batch``, ``123.extern``, ``123.0``, ``123.interactive``: folded into job 123 (their
                            energy is used, see below); a step whose job line is absent is rejected
``Submit``                  ``submit_time_s``: local ISO time ``YYYY-MM-DDTHH:MM:SS`` in ``timezone`` (or Unix s with
                            ``SLURM_TIME_FORMAT=%s``), made relative to the first submit; missing -> rejected
``Start`` / ``End``         ``start_time_s`` / ``end_time_s``; ``Unknown`` / ``None`` -> NaN (pending / running)
``ElapsedRaw`` / ``Elapsed`` ``runtime_s`` [s]: ``[D-]HH:MM:SS`` or ``MM:SS[.mmm]``; NaN unless the job has both a start
                            and an end (a pending job's ``00:00:00`` is not a run time of 0)
``TimelimitRaw`` [min] /    ``requested_walltime_s`` [s]: Slurm time syntax (``M``, ``M:S``, ``H:M:S``, ``D-H``,
``Timelimit``               ``D-H:M``, ``D-H:M:S``); ``UNLIMITED``, ``Partition_Limit``, ``INVALID`` -> NaN (flagged)
``NNodes`` / ``NodeList``   ``nodes``: ``NNodes``; when absent or 0, the count of the compressed host list
                            (``nid[001-004,007]`` = 5); neither -> rejected
``User``, ``Account``,      ``user``, ``account``, ``queue``
``Partition``
``State``                   ``status``: COMPLETED -> 1; CANCELLED (also ``CANCELLED by 123``) -> 5; FAILED, TIMEOUT,
                            NODE_FAIL, OUT_OF_MEMORY, BOOT_FAIL, DEADLINE, PREEMPTED -> 0; PENDING, RUNNING,
                            REQUEUED, RESIZING, SUSPENDED, REVOKED -> -1; other text -> -1 (repaired). The first
                            word is kept in ``state``.
``TotalCPU`` + ``NCPUS``    ``cpu_util`` = TotalCPU / (NCPUS x run time), clipped to 1 (repaired); NaN otherwise
``ConsumedEnergyRaw`` [J]   ``measured_node_power_W`` = energy / nodes / run time [W]. The job line's value, else
(or ``ConsumedEnergy``      the largest of its steps' (the ``.extern`` step spans the allocation; steps are not
with K/M/G suffixes)        summed, they overlap). NaN when absent, 0 or the run time is 0.
==========================  ==========================================================================================

Extra columns: ``measured_node_power_W``, ``trace_job_id``, ``state``, ``node_list`` (text, ``""`` when absent) and
``source_line`` (1-based line of the job's record).

Other quirks handled: UTF-8 BOM, gzip, CRLF line ends, a trailing ``|`` on every line (``sacct -p``), lines with
the wrong number of fields (a ``|`` inside JobName, a truncated last line) rejected with their line number,
repeated job ids (requeued jobs listed by ``sacct -D``): the last record is kept, earlier ones rejected.

References
----------
SchedMD, "sacct" manual page (Slurm 23.x), https://slurm.schedmd.com/sacct.html ; job state codes:
https://slurm.schedmd.com/job_state_codes.html ; host list syntax: ``scontrol show hostnames``.
"""

from __future__ import annotations

import io
import itertools
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dataloaders._common import (
    MAX_COUNT,
    MEASURED_POWER_COLUMN,
    Issues,
    check_common_options,
    finish_load,
    local_times_to_epoch,
    read_bytes,
    reject_duplicates,
)
from dataloaders.fields import Check, TextField, apply_checks, read_text_fields
from dataloaders.registry import BaseLoader
from dataloaders.report import LoadReport, LoadResult, TraceError
from jobs.table import JobStatus

__all__ = ["SacctLoader", "count_hostlist", "expand_hostlist", "parse_slurm_duration", "read_sacct"]

_STATE_STATUS: dict[str, int] = {
    "COMPLETED": JobStatus.COMPLETED, "CANCELLED": JobStatus.CANCELLED,
    "FAILED": JobStatus.FAILED, "TIMEOUT": JobStatus.FAILED, "NODE_FAIL": JobStatus.FAILED,
    "OUT_OF_MEMORY": JobStatus.FAILED, "BOOT_FAIL": JobStatus.FAILED, "DEADLINE": JobStatus.FAILED,
    "PREEMPTED": JobStatus.FAILED,
    "PENDING": JobStatus.UNKNOWN, "RUNNING": JobStatus.UNKNOWN, "REQUEUED": JobStatus.UNKNOWN,
    "RESIZING": JobStatus.UNKNOWN, "SUSPENDED": JobStatus.UNKNOWN, "REVOKED": JobStatus.UNKNOWN,
}
_NO_LIMIT = ("UNLIMITED", "PARTITION_LIMIT", "INVALID", "NONE", "")
_ENERGY_SUFFIX = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
_CHUNK_LINES = 250_000


def parse_slurm_duration(text: str, *, bare_unit_s: float = 60.0) -> float:
    """Parse one Slurm duration to seconds.

    Parameters
    ----------
    text : str
        ``M``, ``M:S``, ``H:M:S``, ``D-H``, ``D-H:M``, ``D-H:M:S``; seconds may carry a fraction (``05:03.250``).
    bare_unit_s : float
        Unit of a lone number (Slurm time limits: minutes, 60 s, the default).

    Returns
    -------
    float
        Seconds; NaN for ``UNLIMITED``, ``Partition_Limit``, ``INVALID``, ``None`` or ``""``.

    Raises
    ------
    ValueError
        If the text is none of these forms.
    """
    t = text.strip()
    if t.upper() in _NO_LIMIT:
        return float("nan")
    days = 0.0
    if "-" in t:
        d, _, t = t.partition("-")
        if not d.isdigit():
            raise ValueError(f"bad Slurm duration {text!r}")
        days = float(d)
        parts = t.split(":")
        if not 1 <= len(parts) <= 3:
            raise ValueError(f"bad Slurm duration {text!r}")
        mult = (3600.0, 60.0, 1.0)
    else:
        parts = t.split(":")
        if len(parts) == 1:
            mult = (bare_unit_s,)
        elif len(parts) == 2:
            mult = (60.0, 1.0)
        elif len(parts) == 3:
            mult = (3600.0, 60.0, 1.0)
        else:
            raise ValueError(f"bad Slurm duration {text!r}")
    total = days * 86400.0
    for p, m in zip(parts, mult):
        if not p or not p.replace(".", "", 1).isdigit():
            raise ValueError(f"bad Slurm duration {text!r}")
        total += float(p) * m
    return total


#: ``[D-]HH:MM:SS`` in ASCII digits: the form sacct prints for Elapsed / Timelimit, parsed without Python calls.
#: At most 9 digits per part keeps every term and partial sum an integer below 2**53 (exact).
_HMS = r"^(?:([0-9]{1,9})-)?([0-9]{1,9}):([0-9]{1,9}):([0-9]{1,9})$"


def _durations(col: pd.Series, *, bare_unit_s: float) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised over unique values: (seconds, bad mask).

    Unique values of the form ``[D-]HH:MM:SS`` (ASCII digits) are converted with array arithmetic; every other
    value goes through :func:`parse_slurm_duration`. Both give the same float: the parts are integers, so
    ``days x 86400 + h x 3600 + m x 60 + s`` is exact in either order (each part has at most 9 digits, so every
    term and partial sum is an integer below 2**53).
    """
    codes, uniq = pd.factorize(col, sort=False)
    vals = np.empty(len(uniq))
    bad_u = np.zeros(len(uniq), dtype=bool)
    todo = np.ones(len(uniq), dtype=bool)
    if len(uniq):
        parts = pd.Series(np.asarray(uniq, dtype=object)).str.extract(_HMS)
        ok = parts[1].notna().to_numpy()
        if ok.any():
            num = parts[ok].fillna("0").astype(np.float64).to_numpy()
            vals[ok] = num[:, 0] * 86400.0 + num[:, 1] * 3600.0 + num[:, 2] * 60.0 + num[:, 3]
            todo = ~ok
    for k in np.flatnonzero(todo):
        u = uniq[k]
        try:
            vals[k] = parse_slurm_duration(u, bare_unit_s=bare_unit_s)
        except ValueError:
            vals[k] = np.nan
            bad_u[k] = True
    if len(uniq) == 0:
        return np.full(len(col), np.nan), np.zeros(len(col), dtype=bool)
    return vals[codes], bad_u[codes]


def _split_top(text: str) -> list[str]:
    out, depth, cur = [], 0, []
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise ValueError(f"unbalanced ']' in host list {text!r}")
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if depth != 0:
        raise ValueError(f"unbalanced '[' in host list {text!r}")
    out.append("".join(cur))
    return [s for s in out if s]


_BRACKET = re.compile(r"\[([^\[\]]*)\]")


def _expand_item(item: str) -> list[str]:
    m = _BRACKET.search(item)
    if m is None:
        if "[" in item or "]" in item:
            raise ValueError(f"bad host list item {item!r}")
        return [item]
    head, tail = item[: m.start()], item[m.end():]
    out: list[str] = []
    for rng in m.group(1).split(","):
        lo, sep, hi = rng.partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise ValueError(f"bad range {rng!r} in host list item {item!r}")
        if not sep:
            nums = [lo]
        else:
            a, b = int(lo), int(hi)
            if b < a:
                raise ValueError(f"descending range {rng!r} in host list item {item!r}")
            if b - a > 10_000_000:
                raise ValueError(f"range {rng!r} too large in host list item {item!r}")
            width = len(lo)
            nums = [str(n).zfill(width) for n in range(a, b + 1)]
        for n in nums:
            out.extend(head + n + t for t in _expand_item(tail))
    return out


def expand_hostlist(text: str) -> list[str]:
    """Expand a Slurm compressed host list into host names.

    Parameters
    ----------
    text : str
        E.g. ``"nid[001-004,007],login1"`` or ``"rack[1-2]n[01-02]"`` (several bracket groups multiply).
        ``""`` and ``"None assigned"`` give an empty list.

    Returns
    -------
    list of str
        Host names in order, zero padding kept (``nid001 ... nid004, nid007, login1``).

    Notes
    -----
    Raised by the functions it calls, not by its own body:

    - ``ValueError``: Unbalanced brackets, a non-numeric or descending range.
    """
    t = text.strip()
    if not t or t.lower().startswith("none"):
        return []
    out: list[str] = []
    for item in _split_top(t):
        out.extend(_expand_item(item))
    return out


def count_hostlist(text: str) -> int:
    """Count the hosts of a Slurm compressed host list without building the names.

    Parameters
    ----------
    text : str
        As for :func:`expand_hostlist`.

    Returns
    -------
    int
        Number of hosts (``"nid[001-004,007]"`` -> 5).

    Raises
    ------
    ValueError
        As for :func:`expand_hostlist`.
    """
    t = text.strip()
    if not t or t.lower().startswith("none"):
        return 0
    total = 0
    for item in _split_top(t):
        n = 1
        rest = item
        for m in _BRACKET.finditer(item):
            k = 0
            for rng in m.group(1).split(","):
                lo, sep, hi = rng.partition("-")
                if not lo.isdigit() or (sep and not hi.isdigit()):
                    raise ValueError(f"bad range {rng!r} in host list item {item!r}")
                if sep and int(hi) < int(lo):
                    raise ValueError(f"descending range {rng!r} in host list item {item!r}")
                k += (int(hi) - int(lo) + 1) if sep else 1
            n *= k
        rest = _BRACKET.sub("", item)
        if "[" in rest or "]" in rest:
            raise ValueError(f"bad host list item {item!r}")
        total += n
    return total


def _energy_joule(col: pd.Series, raw: bool) -> np.ndarray:
    """Energies [J] of a stripped text column: plain decimals cast in one pass, other distinct texts one by one."""
    plain = col.str.fullmatch(r"[0-9]{1,15}(?:\.[0-9]{0,15})?").to_numpy(dtype=bool)
    out = np.full(len(col), np.nan)
    if plain.any():  # a plain decimal: what float(t) gives (both correctly rounded), < 1e15 and >= 0
        out[plain] = col[plain].astype(np.float64).to_numpy()
    rest = ~plain & col.ne("").to_numpy(dtype=bool)
    if rest.any():
        out[rest] = _energy_joule_text(col[rest], raw)
    return out


def _energy_joule_text(col: pd.Series, raw: bool) -> np.ndarray:
    codes, uniq = pd.factorize(col, sort=False)
    vals = np.full(len(uniq), np.nan)
    for k, u in enumerate(uniq):
        t = u.strip()
        if not t:
            continue
        mult = 1.0
        if not raw and t[-1:].upper() in _ENERGY_SUFFIX and not t[-1:].isdigit():
            mult = _ENERGY_SUFFIX[t[-1].upper()]
            t = t[:-1]
        try:
            v = float(t) * mult
        except ValueError:
            continue
        # Slurm prints 18446744073709551614 (NO_VAL64) when no energy plugin answered
        vals[k] = v if 0 <= v < 1.8e19 else np.nan
    return vals[codes] if len(uniq) else np.full(len(col), np.nan)


def _read_rows(text: str, src: str, columns: list[str] | None, delimiter: str, issues: Issues
               ) -> tuple[pd.DataFrame, int]:
    """Split lines, reject wrong field counts, parse the rest (chunked) into a string DataFrame.

    The reference (per-line) implementation; :func:`_read_rows_bytes` gives the same result without splitting
    the whole text into Python strings and is used unless the delimiter is unusual.
    """
    lines = text.split("\n")
    header: list[str] | None = list(columns) if columns is not None else None
    header_line = 0
    first_data = 0
    if header is None:
        for i, ln in enumerate(lines):
            if ln.strip():
                header = ln.rstrip("\r").split(delimiter)
                header_line = i + 1
                first_data = i + 1
                break
        if header is None:
            raise TraceError(src, "empty file: no sacct header line", line=1, expected="a header such as "
                             "'JobID|Submit|Start|End|...' (sacct -P)")
        _check_header(header, src, header_line, delimiter)
    header, trailing, n_sep = _normalise_header(header)
    body = lines[first_data:]
    line_no_all = np.arange(first_data + 1, first_data + 1 + len(body), dtype=np.int64)
    body = [s[:-1] if s.endswith("\r") else s for s in body]
    nonblank = np.fromiter((bool(s.strip()) for s in body), dtype=bool, count=len(body))
    seps = np.fromiter((s.count(delimiter) for s in body), dtype=np.int64, count=len(body))
    good = nonblank & (seps == n_sep)
    bad = nonblank & ~good
    for k in np.flatnonzero(bad):
        issues.add(line_no_all[k], None, "", body[k], f"{n_sep + 1} '{delimiter}'-separated fields "
                   f"(found {seps[k] + 1}; a '{delimiter}' inside a field or a truncated line)", "rejected",
                   "wrong_field_count")
    n_read = int(nonblank.sum())
    idx = np.flatnonzero(good)
    names = header + ([" trailing"] if trailing else [])
    frames = []
    for a in range(0, len(idx), _CHUNK_LINES):
        chunk = idx[a:a + _CHUNK_LINES]
        buf = io.StringIO("\n".join(body[k] for k in chunk))
        part = pd.read_csv(buf, sep=delimiter, header=None, names=names, dtype=str, keep_default_na=False,
                           na_filter=False, quoting=3, engine="c", lineterminator="\n")
        if len(part) != len(chunk):
            raise TraceError(src, f"lines {int(line_no_all[chunk[0]])}-{int(line_no_all[chunk[-1]])} did not split "
                             "into one record per line", expected="one record per line")
        if trailing:
            part = part.drop(columns=[" trailing"])
        frames.append(part)
    df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame({h: pd.Series([], dtype=str)
                                                                          for h in header})
    df["__line"] = line_no_all[idx]
    return df, n_read


#: Bytes of text classified with numpy at a time (whole lines).
_BLOCK_BYTES = 1 << 22
# Python's str.isspace() over ASCII: what str.strip() removes
_ASCII_SPACE = np.zeros(256, dtype=bool)
_ASCII_SPACE[[9, 10, 11, 12, 13, 28, 29, 30, 31, 32]] = True


def _header_from_bytes(data: bytes, enc: str, src: str, delimiter: str) -> tuple[list[str], int, int]:
    """First non-blank line as the header: (fields, 1-based header line, byte offset of the next line)."""
    pos, line = 0, 0
    while pos <= len(data):
        nl = data.find(b"\n", pos)
        end = len(data) if nl < 0 else nl
        line += 1
        ln = data[pos:end].decode(enc)
        if ln.strip():
            return ln.rstrip("\r").split(delimiter), line, end + 1
        if nl < 0:
            break
        pos = nl + 1
    raise TraceError(src, "empty file: no sacct header line", line=1, expected="a header such as "
                     "'JobID|Submit|Start|End|...' (sacct -P)")


def _read_arrow(buf: bytes, names: list[str], delimiter: str) -> pd.DataFrame | None:
    r"""Split lines that each hold exactly ``len(names) - 1`` delimiters with the pyarrow CSV reader.

    Only for buffers the pandas C parser (``quoting=3``, ``lineterminator="\n"``) reads the same way: UTF-8, no
    CR, no NUL, no leading byte-order mark (the caller checks). Returns None when pyarrow is missing or fails.
    """
    if len(set(names)) != len(names):  # pandas rejects repeated names: let it say so
        return None
    try:
        import pyarrow as pa
        import pyarrow.csv as pacsv
    except ImportError:  # pragma: no cover - pandas' string dtype already needs pyarrow here
        return None
    keys = [f"c{k}" for k in range(len(names))]  # header names may repeat or be empty
    try:
        tbl = pacsv.read_csv(
            io.BytesIO(buf),
            read_options=pacsv.ReadOptions(column_names=keys, block_size=1 << 24),
            parse_options=pacsv.ParseOptions(delimiter=delimiter, quote_char=False, escape_char=False,
                                             newlines_in_values=False, ignore_empty_lines=False),
            convert_options=pacsv.ConvertOptions(column_types={k: pa.large_string() for k in keys},
                                                 strings_can_be_null=False, quoted_strings_can_be_null=False,
                                                 null_values=[]))
    except (pa.ArrowInvalid, ValueError):  # pragma: no cover - the lines were checked
        return None
    df = tbl.to_pandas()
    if not all(dt == "str" for dt in df.dtypes):  # pragma: no cover - pandas without the str dtype
        return None
    df.columns = names
    return df


def _read_rows_bytes(data: bytes, enc: str, src: str, columns: list[str] | None, delimiter: str, issues: Issues
                     ) -> tuple[pd.DataFrame, int]:
    """:func:`_read_rows` on the undecoded bytes (``data.decode(enc)`` is the text), block by block.

    Field counts and blank lines are found with numpy per block of whole lines; only rejected lines and lines
    whose blankness depends on non-ASCII characters are decoded one by one. The accepted lines go to the C
    parser of pandas in the same chunks of ``_CHUNK_LINES`` lines as :func:`_read_rows`.
    """
    if columns is not None:
        header, first_data, pos = list(columns), 0, 0
    else:
        header, first_data, pos = _header_from_bytes(data, enc, src, delimiter)
        _check_header(header, src, first_data, delimiter)
    header, trailing, n_sep = _normalise_header(header)
    names = header + ([" trailing"] if trailing else [])
    dbyte = delimiter.encode(enc)[0]
    frames: list[pd.DataFrame] = []
    line_nos: list[np.ndarray] = []
    pending: list[bytes] = []
    pending_no: list[np.ndarray] = []
    n_pending = 0
    n_read = 0

    def parse(chunk: list[bytes], no: np.ndarray) -> None:
        buf = b"\n".join(chunk)
        part = None
        if enc == "utf-8" and b"\r" not in buf and b"\x00" not in buf and not buf.startswith(b"\xef\xbb\xbf"):
            part = _read_arrow(buf, names, delimiter)
        if part is None or len(part) != len(chunk):
            src_buf = io.BytesIO(buf) if enc == "utf-8" else io.StringIO(buf.decode(enc))
            part = pd.read_csv(src_buf, sep=delimiter, header=None, names=names, dtype=str, keep_default_na=False,
                               na_filter=False, quoting=3, engine="c", lineterminator="\n")
        if len(part) != len(chunk):
            raise TraceError(src, f"lines {int(no[0])}-{int(no[-1])} did not split into one record per line",
                             expected="one record per line")
        if trailing:
            part = part.drop(columns=[" trailing"])
        frames.append(part)
        line_nos.append(no)

    n, first_line = len(data), first_data + 1
    if pos > n:  # the header was the last line, without a newline: no body at all
        pos = n + 1
    while pos <= n:
        end = data.find(b"\n", min(pos + _BLOCK_BYTES, n))
        end = n if end < 0 else end
        block = data[pos:end]  # whole lines, without the newline that ends the last one
        seg = block.split(b"\n")
        a = np.frombuffer(block, dtype=np.uint8)
        nl = np.flatnonzero(a == 10)
        starts = np.r_[0, nl + 1]
        ends = np.r_[nl, len(a)]
        nseg = len(seg)
        empty = ends == starts
        at = np.minimum(starts, max(len(a) - 1, 0))  # reduceat needs valid indices; empty lines fixed below

        def per_line(flag: np.ndarray, how: Any) -> np.ndarray:
            if not len(a):
                return np.zeros(nseg, dtype=np.intp)
            r = how.reduceat(flag, at, dtype=np.intp) if how is np.add else how.reduceat(flag, at)
            r[empty] = 0
            return r

        cr = ~empty & (a[np.maximum(ends - 1, 0)] == 13) if len(a) else np.zeros(nseg, dtype=bool)
        seps = per_line(a == dbyte, np.add)
        solid = per_line(~_ASCII_SPACE[a] & (a < 128), np.logical_or).astype(bool)
        nonblank = solid.copy()
        unsure = (np.flatnonzero(~solid & per_line(a >= 128, np.logical_or).astype(bool)) if not block.isascii()
                  else np.zeros(0, dtype=np.int64))
        for k in unsure:
            t = seg[k].decode(enc)
            nonblank[k] = bool((t[:-1] if t.endswith("\r") else t).strip())
        good = nonblank & (seps == n_sep)
        for k in np.flatnonzero(nonblank & ~good):
            t = seg[k].decode(enc)
            t = t[:-1] if t.endswith("\r") else t
            issues.add(first_line + k, None, "", t, f"{n_sep + 1} '{delimiter}'-separated fields "
                       f"(found {seps[k] + 1}; a '{delimiter}' inside a field or a truncated line)", "rejected",
                       "wrong_field_count")
        n_read += int(nonblank.sum())
        g = np.flatnonzero(good)
        if cr[g].any():
            pending.extend(seg[k][:-1] if cr[k] else seg[k] for k in g.tolist())
        else:
            pending.extend(itertools.compress(seg, good))
        pending_no.append(first_line + g)
        n_pending += len(g)
        while n_pending >= _CHUNK_LINES or (end >= n and n_pending):
            no = np.concatenate(pending_no)
            take = min(_CHUNK_LINES, n_pending)
            parse(pending[:take], no[:take])
            del pending[:take]
            pending_no = [no[take:]]
            n_pending -= take
        first_line += nseg
        pos = end + 1
    df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame({h: pd.Series([], dtype=str)
                                                                          for h in header})
    df["__line"] = np.concatenate(line_nos) if line_nos else np.zeros(0, dtype=np.int64)
    return df, n_read


def _read_rows_fast(data: bytes, enc: str, src: str, columns: list[str] | None, delimiter: str, issues: Issues
                    ) -> tuple[pd.DataFrame, int] | None:
    r""":func:`_read_rows_bytes` in one pyarrow CSV pass, for the common case; None when the case is not common.

    Used when the text is UTF-8 with no CR, NUL or empty line after the header, has at least two columns with
    distinct names and a one-byte ASCII delimiter: there pyarrow's reader (no quoting, serial, so that it knows
    each rejected row's physical line) splits exactly as the pandas C parser does, and every line that pyarrow
    cannot split into ``len(names)`` fields is either blank (only white space: not a record) or a line with the
    wrong number of fields, reported as :func:`_read_rows_bytes` reports it.
    """
    if columns is not None:
        header, first_data, pos = list(columns), 0, 0
    else:
        header, first_data, pos = _header_from_bytes(data, enc, src, delimiter)
        _check_header(header, src, first_data, delimiter)
    header, trailing, n_sep = _normalise_header(header)
    names = header + ([" trailing"] if trailing else [])
    if (enc != "utf-8" or len(names) < 2 or len(set(names)) != len(names) or len(delimiter.encode(enc)) != 1
            or pos >= len(data) or data.startswith(b"\n", pos) or data.find(b"\n\n", pos) >= 0
            or data.find(b"\r", pos) >= 0 or data.find(b"\x00", pos) >= 0):
        return None
    try:
        import pyarrow as pa
        import pyarrow.csv as pacsv
    except ImportError:  # pragma: no cover - pandas' string dtype already needs pyarrow here
        return None
    rejected: list[tuple[int, str, int]] = []

    def on_invalid(row: Any) -> str:
        rejected.append((row.number, row.text, row.actual_columns))
        return "skip"

    keys = [f"c{k}" for k in range(len(names))]
    try:
        tbl = pacsv.read_csv(
            pa.BufferReader(pa.py_buffer(data).slice(pos)),  # the body, without copying it
            read_options=pacsv.ReadOptions(column_names=keys, block_size=1 << 24, use_threads=False),
            parse_options=pacsv.ParseOptions(delimiter=delimiter, quote_char=False, escape_char=False,
                                             newlines_in_values=False, ignore_empty_lines=False,
                                             invalid_row_handler=on_invalid),
            convert_options=pacsv.ConvertOptions(column_types={k: pa.large_string() for k in keys},
                                                 strings_can_be_null=False, quoted_strings_can_be_null=False,
                                                 null_values=[]))
    except (pa.ArrowInvalid, ValueError):  # pragma: no cover - fall back to the block reader
        return None
    if any(r[0] is None for r in rejected):  # pragma: no cover - pyarrow did not number a row
        return None
    rejected.sort()
    n_lines = tbl.num_rows + len(rejected)
    skip = np.zeros(n_lines, dtype=bool)
    n_read = tbl.num_rows
    for number, text, n_fields in rejected:
        skip[number - 1] = True
        if not text.strip():
            continue  # blank: not a record
        n_read += 1
        issues.add(first_data + number, None, "", text, f"{n_sep + 1} '{delimiter}'-separated fields "
                   f"(found {n_fields}; a '{delimiter}' inside a field or a truncated line)", "rejected",
                   "wrong_field_count")
    df = tbl.to_pandas()
    if not all(dt == "str" for dt in df.dtypes):  # pragma: no cover - pandas without the str dtype
        return None
    df.columns = names
    if trailing:
        df = df.drop(columns=[" trailing"])
    df["__line"] = first_data + 1 + np.flatnonzero(~skip)
    return df, n_read


def _shared_objects(c: pd.Series) -> np.ndarray:
    """``c.to_numpy(dtype=object)`` with one Python string per distinct value.

    Users, partitions and states repeat: a million-row column then holds a few hundred string objects, not a
    million.
    """
    codes, uniq = pd.factorize(c, sort=False)
    if len(codes) and (codes < 0).any():  # pragma: no cover - the readers give no missing text
        return c.to_numpy(dtype=object)
    return np.asarray(uniq, dtype=object)[codes] if len(codes) else c.to_numpy(dtype=object)


def _check_header(header: list[str], src: str, line: int, delimiter: str) -> None:
    """Raise a TraceError unless the header names JobID (or JobIDRaw)."""
    if not any(h.strip().lower() in ("jobid", "jobidraw") for h in header):
        raise TraceError(src, "the first line is not a sacct -P header", line=line, field="JobID",
                         found=delimiter.join(header)[:80],
                         expected="a header naming JobID (or pass columns= for --noheader output)")


def _normalise_header(header: list[str]) -> tuple[list[str], bool, int]:
    """Strip the column names; drop the empty name a trailing delimiter makes (``sacct -p``).

    Parameters
    ----------
    header : list[str]
        The column names as the header line (or ``columns=``) gives them.

    Returns
    -------
    header : list of str
        The stripped names, without the trailing empty one.
    trailing : bool
        Whether every line ends with the delimiter.
    n_sep : int
        Delimiters per well-formed line.
    """
    header = [h.strip() for h in header]
    trailing = bool(header) and header[-1] == ""
    if trailing:
        header = header[:-1]
    return header, trailing, len(header) - 1 + (1 if trailing else 0)


# ---- the sacct fields and checks as data (engine: dataloaders.fields) -------------------------------------------


def _number(text: pd.Series, column: str) -> tuple[np.ndarray, np.ndarray]:
    """Plain numbers: (float values, mask of non-empty texts that are not numbers)."""
    vals = pd.to_numeric(text, errors="coerce").to_numpy(dtype=float)
    return vals, np.isnan(vals) & text.ne("").to_numpy()


def _seconds(bare_unit_s: float) -> Any:
    """Parser of Slurm durations whose lone number is ``bare_unit_s`` seconds (see :func:`parse_slurm_duration`)."""
    return lambda text, column: _durations(text, bare_unit_s=bare_unit_s)


def _elapsed(text: pd.Series, column: str) -> tuple[np.ndarray, np.ndarray]:
    """``ElapsedRaw`` is a number of seconds; ``Elapsed`` is ``[D-]HH:MM:SS``."""
    return _number(text, column) if column.lower() == "elapsedraw" else _durations(text, bare_unit_s=1.0)


def _joule(text: pd.Series, column: str) -> tuple[np.ndarray, np.ndarray]:
    """``ConsumedEnergyRaw`` in J; ``ConsumedEnergy`` with K/M/G/T suffixes; unparsable -> NaN (not reported)."""
    return _energy_joule(text, column.lower() == "consumedenergyraw"), np.zeros(len(text), dtype=bool)


#: name, sacct columns tried in order, unit of the parsed value, parser
_ENERGY_FIELD = TextField("energy", ("ConsumedEnergyRaw", "ConsumedEnergy"), "J", _joule)
_NNODES_FIELD = TextField("nnodes", ("NNodes",), "-", _number)
_ELAPSED_FIELD = TextField("elapsed", ("ElapsedRaw", "Elapsed"), "s", _elapsed)
_TIMELIMIT_FIELD = TextField("timelimit", ("TimelimitRaw", "Timelimit"), "s", _seconds(60.0))
_CPU_FIELDS = (TextField("total_cpu", ("TotalCPU",), "s", _seconds(1.0)), TextField("ncpus", ("NCPUS",), "-", _number))

_STATE_EXPECTED = "a Slurm job state (COMPLETED, CANCELLED, FAILED, TIMEOUT, ...; set to unknown)"
_SUBMIT_CHECKS = (
    Check("Submit", lambda v: np.isnan(v["submit"]), lambda v: v["submit_text"],
          "a local ISO time YYYY-MM-DDTHH:MM:SS ({timezone}) or Unix seconds", "submit_time_missing"),
)
_NODE_CHECKS = (
    Check("NNodes", lambda v: v["nodes"] == 0, lambda v: v["nnodes_text"] if v["nnodes_text"] is not None
          else "(no column)", f"NNodes in [1, {MAX_COUNT:.0f}] or a non-empty NodeList", "nodes_missing"),
    Check("NNodes", lambda v: v["nodes"] > v["max_nodes"], lambda v: v["nodes"], "<= {max_nodes} nodes (max_nodes)",
          "larger_than_machine", when=lambda v: v["max_nodes"] is not None),
)
_ELAPSED_CHECKS = (
    Check("Elapsed", lambda v: v["elapsed_bad"], lambda v: v["elapsed_text"], "[D-]HH:MM:SS (set to NaN)",
          "bad_elapsed", "repaired", when=lambda v: v["elapsed_text"] is not None),
)
_RUNTIME_CHECKS = (
    Check("End", lambda v: v["runtime"] < 0, lambda v: v["end"] - v["start"], "End >= Start (run time set to NaN)",
          "end_before_start", "repaired"),
)
_TIMELIMIT_CHECKS = (
    Check("Timelimit", lambda v: v["timelimit_bad"], lambda v: v["timelimit_text"],
          "Slurm time (M, H:M:S, D-H:M:S) or UNLIMITED (set to NaN)", "bad_timelimit", "repaired",
          when=lambda v: v["timelimit_text"] is not None),
    Check("Timelimit", lambda v: v["timelimit"] <= 0, lambda v: v["timelimit"], "a limit > 0 (set to NaN)",
          "timelimit_not_positive", "repaired"),
)
_STATE_CHECKS = (
    Check("State", lambda v: v["unknown"], lambda v: v["state_text"], _STATE_EXPECTED, "unknown_state", "repaired"),
)
_CPU_CHECKS = (
    Check("TotalCPU", lambda v: v["cpu_ok"] & (v["cpu_util"] > 1.0 + 1e-9), lambda v: v["total_cpu_text"],
          "<= NCPUS x Elapsed (cpu_util clipped to 1)", "cpu_util_clipped", "repaired"),
)


def read_sacct(
    path: str | os.PathLike[str],
    *,
    timezone: str = "UTC",
    columns: list[str] | None = None,
    delimiter: str = "|",
    cores_per_node: int = 1,
    max_nodes: int | None = None,
    strict: bool = False,
) -> LoadResult:
    """Read Slurm ``sacct -P`` output into the canonical job table (see the module docstring for the fields).

    Parameters
    ----------
    path : str | os.PathLike[str]
        sacct output, plain or gzip.
    timezone : str
        IANA zone of the Submit/Start/End local times (sacct prints the local time of the machine that ran
        it), default ``"UTC"``. DST: a repeated (autumn) local time is read as its first occurrence and a skipped
        (spring) one is moved forward by the gap, as ``fold=0`` (PEP 495); both are repaired and reported
        (``dst_ambiguous_time``, ``dst_nonexistent_time``). ``hpctwin run --timezone`` / ``trace.timezone``.
    columns : list[str] | None
        List of str: Column names for output without a header line (``sacct --noheader``).
    delimiter : str
        Field separator (``sacct --delimiter``), default ``"|"``.
    cores_per_node : int
        Accepted for a uniform loader interface; unused (sacct gives nodes).
    max_nodes : int | None
        Machine size in nodes; larger jobs are rejected (``larger_than_machine``).
    strict : bool
        Raise for the first repaired or rejected record.

    Returns
    -------
    LoadResult
        ``jobs`` shape (n_jobs, 18): canonical columns + ``measured_node_power_W``, ``trace_job_id``, ``state``,
        ``node_list``, ``source_line``; ``attrs["time_origin_unix_s"]`` = first submit [Unix s]. ``profiles`` None.

    Raises
    ------
    ValueError
        Bad ``cores_per_node`` / ``max_nodes`` / unknown ``timezone``.

    Notes
    -----
    The steps raise ``FileNotFoundError`` if ``path`` does not exist, and :class:`TraceError` for no header, no
    JobID/Submit column, zero jobs, or a strict-mode violation (message names file, line, field and what was
    expected).

    References
    ----------
    SchedMD, sacct(1), https://slurm.schedmd.com/sacct.html
    """
    check_common_options(cores_per_node, max_nodes)
    try:
        pd.Timestamp("2020-01-01").tz_localize(timezone)
    except Exception as exc:  # noqa: BLE001 - pytz/zoneinfo raise different types
        raise ValueError(f"unknown time zone {timezone!r}: {exc}") from exc
    p = Path(path)
    src = str(p)
    issues = Issues()
    report = LoadReport(source=src, loader="sacct")
    raw, report.records_read = _read_sacct_rows(p, src, columns, delimiter, issues)
    c = _Columns(raw)
    del raw
    lines, base, energy, shown, jid, kept = _fold_steps_and_ids(c, src, issues, report)
    if not kept.all():
        lines, base, energy, shown, jid = (_sel(x, kept) for x in (lines, base, energy, shown, jid))
        c.rows = np.flatnonzero(kept)
    n_jobs = len(jid)
    submit, start, end, ok = _times(c, timezone, lines, jid, issues)
    nodes, node_list, ok = _node_counts(c, ok, lines, jid, issues, report, max_nodes)
    runtime = _runtime(c, start, end, ok, lines, jid, issues, report)
    limit = _time_limit(c, ok, lines, jid, issues, report)
    status, state_word = _state(c, ok, lines, jid, issues, n_jobs)
    cpu_util = _cpu_util(c, ok, runtime, lines, jid, issues)
    power = np.full(n_jobs, np.nan)
    okp = np.isfinite(energy) & (energy > 0) & (runtime > 0)
    power[okp] = energy[okp] / nodes[okp].clip(1) / runtime[okp]
    if okp.any():
        report.notes.append(f"measured_node_power_W from ConsumedEnergy for {int(okp.sum())} job(s)")
    origin, s_rel = _origin(submit, ok, timezone, report)
    user, account, queue = (c.text(name, n_jobs) for name in ("User", "Account", "Partition"))
    trace_job_id = shown.to_numpy(dtype=object)
    c.raw = c.raw.iloc[:0]  # the text table is no longer needed: free it before the job table is built
    del shown, base
    try:
        import pyarrow as pa

        pa.default_memory_pool().release_unused()
    except ImportError:  # pragma: no cover - pandas' string dtype already needs pyarrow here
        pass
    out = pd.DataFrame({
        "job_id": jid,
        "submit_time_s": s_rel,
        "requested_walltime_s": limit,
        "nodes": nodes,
        "runtime_s": runtime,
        "start_time_s": start - origin,
        "end_time_s": end - origin,
        "user": user,
        "account": account,
        "queue": queue,
        "status": status,
        "cpu_util": cpu_util,
        "gpu_util": np.full(n_jobs, np.nan),
        MEASURED_POWER_COLUMN: power,
        "trace_job_id": trace_job_id,
        "state": state_word,
        "node_list": node_list,
        "source_line": lines.astype(np.int64),
    })
    if not ok.all():
        out = out[ok]
    return finish_load(out, report, issues, strict=strict, origin=origin, attrs={"timezone": timezone})


def _read_sacct_rows(p: Path, src: str, columns: list[str] | None, delimiter: str, issues: Issues
                     ) -> tuple[pd.DataFrame, int]:
    """The file's records as a string table (``__line`` = line number) and the count of non-blank records read.

    The one-pass pyarrow reader when the case is common, else the block reader (one-byte delimiter), else the
    per-line reference reader.
    """
    data, enc = read_bytes(p)
    simple = len(delimiter) == 1 and delimiter.isascii() and not delimiter.isspace()
    fast = _read_rows_fast(data, enc, src, columns, delimiter, issues) if simple else None
    if fast is not None:
        return fast
    if simple:
        return _read_rows_bytes(data, enc, src, columns, delimiter, issues)
    return _read_rows(data.decode(enc), src, columns, delimiter, issues)


class _Columns:
    """The raw sacct columns by case-insensitive name, restricted to the kept job records (``rows``)."""

    def __init__(self, raw: pd.DataFrame) -> None:
        self.raw = raw
        self.cols = {c.lower(): c for c in raw.columns if c != "__line"}
        self.rows: np.ndarray | None = None  # positions in raw of the job records kept, when not all of them are

    def has(self, name: str) -> bool:
        """Whether the file has the column ``name`` (any case)."""
        return name.lower() in self.cols

    def raw_text(self, name: str) -> pd.Series:
        """The kept records of column ``name``, as the file holds them (one column copied at a time)."""
        col = self.raw[self.cols[name.lower()]]
        return col if self.rows is None else col.take(self.rows).reset_index(drop=True)

    def get(self, name: str) -> pd.Series | None:
        """Column ``name`` of the kept records, stripped; None when the file has no such column."""
        return self.raw_text(name).str.strip() if self.has(name) else None

    def text(self, name: str, n: int) -> np.ndarray:
        """Column ``name`` as shared string objects; ``""`` for every record when absent."""
        col = self.get(name)
        return np.full(n, "", dtype=object) if col is None else _shared_objects(col)


def _sel(x: Any, kept: np.ndarray) -> Any:
    return x[kept] if isinstance(x, np.ndarray) else x[kept].reset_index(drop=True)


def _fold_steps_and_ids(c: _Columns, src: str, issues: Issues, report: LoadReport
                        ) -> tuple[np.ndarray, pd.Series, np.ndarray, pd.Series, np.ndarray, np.ndarray]:
    """Fold step lines into their job; job ids (text ids renumbered, repeats rejected).

    Returns (lines, base id text, energy [J], shown JobID, job id, kept mask of the repeated ids) over the job
    records; ``c.raw`` is cut to the job records.
    """
    idcol = c.get("JobIDRaw") if c.has("jobidraw") else c.get("JobID")
    if idcol is None:
        raise TraceError(src, "no JobID / JobIDRaw column", field="JobID", expected="a JobID column (sacct -o JobID)",
                         found=",".join(c.raw.columns[:-1]))
    if not c.has("Submit"):
        raise TraceError(src, "no Submit column", field="Submit", expected="a Submit column (sacct -o Submit)",
                         found=",".join(c.raw.columns[:-1]))
    shown_id = c.get("JobID") if c.has("jobid") else idcol
    lines = c.raw["__line"].to_numpy()
    base = idcol.str.replace(r"(?s)\..*", "", n=1, regex=True)  # the id before any '.step' (vectorised split)
    is_step = idcol.str.contains(".", regex=False).to_numpy()
    # integer keys when every id is a canonical decimal (no leading zero: equal keys <=> equal texts), else codes
    canonical = bool(base.str.fullmatch(r"(?:0|[1-9][0-9]{0,14})").all())
    key = base.astype(np.int64).to_numpy() if canonical else pd.factorize(base, sort=False)[0]
    energy = _energy(c)
    step_has_job = np.zeros(len(c.raw), dtype=bool)
    step_has_job[is_step] = np.isin(key[is_step], key[~is_step])
    orphan = is_step & ~step_has_job
    issues.add_mask(orphan, lines, None, "JobID", idcol, "a step (.batch/.extern/.N) of a job listed "
                    "in the file", "rejected", "step_without_job")
    del idcol
    # the largest step energy per job id (NaN when none is finite): a group-by on the integer keys
    step_energy = (pd.Series(energy[step_has_job]).groupby(key[step_has_job]).max()
                   if step_has_job.any() else pd.Series(dtype=float))
    n_steps = int(step_has_job.sum())
    report.folded = n_steps
    if n_steps:
        report.notes.append(f"{n_steps} job-step line(s) (.batch/.extern/.N) folded into their job")
    keep = ~is_step
    job_rows = np.flatnonzero(keep)
    # the job records, column by column, each full column freed as soon as it is copied (lower peak memory)
    c.raw = pd.DataFrame({k: c.raw.pop(k).iloc[job_rows].reset_index(drop=True) for k in list(c.raw.columns)})
    lines, key, energy = lines[keep], key[keep], energy[keep]
    base = base[keep].reset_index(drop=True)
    shown = shown_id[keep].reset_index(drop=True)
    if len(step_energy):
        se = step_energy.reindex(key).to_numpy(dtype=float)
        energy = np.where(np.isfinite(energy) & (energy > 0), energy, se)
    jid = _job_ids(base, key, canonical, lines, issues)
    kept = reject_duplicates(jid, lines, issues, keep="last")
    if not kept.all():
        report.notes.append(f"{int((~kept).sum())} repeated job id record(s) (requeued jobs?): last record kept")
    return lines, base, energy, shown, jid, kept


def _energy(c: _Columns) -> np.ndarray:
    """Energy of every record [J]: the :data:`_ENERGY_FIELD` row of the field table; NaN when absent."""
    return read_text_fields(c, (_ENERGY_FIELD,), len(c.raw))["energy"]


def _job_ids(base: pd.Series, key: np.ndarray, canonical: bool, lines: np.ndarray, issues: Issues) -> np.ndarray:
    """Numeric job ids (at most 15 digits: exact in float64 and int64); text ids get new ids above the largest."""
    if canonical:
        numeric = np.ones(len(base), dtype=bool)
        jid = key.astype(np.int64)
    else:
        numeric = base.str.fullmatch(r"\d{1,15}").to_numpy(dtype=bool)
        jid = np.full(len(base), -1, dtype=np.int64)
        jid[numeric] = base[numeric].astype(np.int64).to_numpy()
    if (~numeric).any():
        start_id = int(jid[numeric].max()) + 1 if numeric.any() else 1
        codes, _ = pd.factorize(base[~numeric])
        jid[~numeric] = start_id + codes
        issues.add_mask(~numeric, lines, None, "JobID", base,
                        f"a numeric id (add JobIDRaw to the sacct columns); new ids from {start_id} assigned, text "
                        "kept in trace_job_id", "repaired", "non_numeric_job_id")
    return jid


def _times(c: _Columns, timezone: str, lines: np.ndarray, jid: np.ndarray, issues: Issues
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(submit, start, end) [Unix s] and the mask of records with a submit time (a missing one is rejected)."""
    n_jobs = len(jid)
    submit = local_times_to_epoch(c.raw_text("Submit"), timezone, "Submit", lines, jid, issues)
    # a bad time was already reported as 'repaired'; a missing submit makes the record unusable
    issues.items = [i for i in issues.items if not (i.field == "Submit" and i.reason == "bad_time")]
    ok = apply_checks({"submit": submit, "submit_text": c.raw_text("Submit"), "timezone": timezone}, _SUBMIT_CHECKS,
                      np.ones(n_jobs, dtype=bool), lines, jid, issues)
    start, end = (local_times_to_epoch(c.raw_text(name), timezone, name, lines, jid, issues) if c.has(name)
                  else np.full(n_jobs, np.nan) for name in ("Start", "End"))
    return submit, start, end, ok


def _node_counts(c: _Columns, ok: np.ndarray, lines: np.ndarray, jid: np.ndarray, issues: Issues,
                 report: LoadReport, max_nodes: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Nodes from NNodes, else counted from NodeList; (nodes, node list text, ok minus the rejected records)."""
    n_jobs = len(jid)
    v = read_text_fields(c, (_NNODES_FIELD,), n_jobs)
    nn_num = v["nnodes"]
    nodes = np.zeros(n_jobs, dtype=np.int64)
    good_nn = np.isfinite(nn_num) & (nn_num >= 1) & (nn_num == np.floor(nn_num)) & (nn_num <= MAX_COUNT)
    nodes[good_nn] = nn_num[good_nn].astype(np.int64)
    nl_col = c.get("NodeList")
    node_list = np.full(n_jobs, "", dtype=object)
    if nl_col is not None:
        node_list = _shared_objects(nl_col)
        _count_node_lists(node_list, nodes, ok & (nodes < 1), lines, jid, issues, report)
    v.update(nodes=nodes, max_nodes=max_nodes)
    ok = apply_checks(v, _NODE_CHECKS, ok & (nodes != -1), lines, jid, issues)  # -1: a bad NodeList, reported
    return nodes, node_list, ok


def _count_node_lists(node_list: np.ndarray, nodes: np.ndarray, need: np.ndarray, lines: np.ndarray,
                      jid: np.ndarray, issues: Issues, report: LoadReport) -> None:
    """Fill ``nodes`` (in place) from the host lists of the records in ``need``; -1 for a bad host list."""
    if not need.any():
        return
    for k in np.flatnonzero(need):
        try:
            cnt = count_hostlist(node_list[k])
            if cnt > MAX_COUNT:
                raise ValueError(f"{cnt} hosts, more than {MAX_COUNT:.0f}")
            nodes[k] = cnt
        except ValueError as exc:
            issues.add(lines[k], jid[k], "NodeList", node_list[k], f"a Slurm host list ({exc})", "rejected",
                       "bad_node_list")
            nodes[k] = -1
    got = need & (nodes >= 1)
    if got.any():
        report.notes.append(f"nodes counted from NodeList for {int(got.sum())} job(s) (NNodes absent or 0)")


def _runtime(c: _Columns, start: np.ndarray, end: np.ndarray, ok: np.ndarray, lines: np.ndarray, jid: np.ndarray,
             issues: Issues, report: LoadReport) -> np.ndarray:
    """Run time [s]: Elapsed(Raw) for jobs with a start and an end, else End - Start; NaN for the others."""
    v = read_text_fields(c, (_ELAPSED_FIELD,), len(jid))
    apply_checks(v, _ELAPSED_CHECKS, ok, lines, jid, issues)
    elapsed = v["elapsed"]
    finished = np.isfinite(start) & np.isfinite(end)
    runtime = np.where(finished, elapsed, np.nan)
    if not np.isfinite(elapsed).any() or v["elapsed_text"] is None:
        runtime = np.where(finished, end - start, np.nan)
    fill = finished & np.isnan(runtime)
    runtime[fill] = (end - start)[fill]
    v.update(runtime=runtime, start=start, end=end)
    apply_checks(v, _RUNTIME_CHECKS, ok, lines, jid, issues)
    runtime[runtime < 0] = np.nan
    not_run = ok & ~finished
    if not_run.any():
        report.notes.append(f"{int(not_run.sum())} job(s) without both Start and End (pending / running): "
                            "run time NaN")
    return runtime


def _time_limit(c: _Columns, ok: np.ndarray, lines: np.ndarray, jid: np.ndarray, issues: Issues,
                report: LoadReport) -> np.ndarray:
    """Requested walltime [s] from TimelimitRaw / Timelimit (bare numbers are minutes); NaN when unlimited or bad."""
    v = read_text_fields(c, (_TIMELIMIT_FIELD,), len(jid))
    limit = v["timelimit"]
    apply_checks(v, _TIMELIMIT_CHECKS[:1], ok, lines, jid, issues)
    if v["timelimit_text"] is not None:
        unlimited = ok & np.isnan(limit) & ~v["timelimit_bad"]
        if unlimited.any():
            report.notes.append(f"{int(unlimited.sum())} job(s) with no time limit (UNLIMITED / Partition_Limit): "
                                "requested walltime NaN")
    apply_checks(v, _TIMELIMIT_CHECKS[1:], ok, lines, jid, issues)
    limit[limit <= 0] = np.nan
    return limit


def _state(c: _Columns, ok: np.ndarray, lines: np.ndarray, jid: np.ndarray, issues: Issues, n_jobs: int
           ) -> tuple[np.ndarray, np.ndarray]:
    """(status code per :data:`_STATE_STATUS`, the state's first word); unknown words -> unknown (repaired)."""
    st_col = c.get("State")
    if st_col is None:
        return np.full(n_jobs, JobStatus.UNKNOWN, dtype=np.int8), np.full(n_jobs, "", dtype=object)
    word = st_col.str.replace(r"(?s) .*", "", n=1, regex=True).str.upper().str.rstrip("+")  # first word
    status = word.map(_STATE_STATUS)
    apply_checks({"unknown": status.isna().to_numpy(), "state_text": st_col}, _STATE_CHECKS, ok, lines, jid, issues)
    return status.fillna(JobStatus.UNKNOWN).to_numpy(dtype=np.int8), _shared_objects(word)


def _cpu_util(c: _Columns, ok: np.ndarray, runtime: np.ndarray, lines: np.ndarray, jid: np.ndarray,
              issues: Issues) -> np.ndarray:
    """TotalCPU / (NCPUS x run time), clipped to 1 (repaired); NaN without both columns or a run time."""
    cpu_util = np.full(len(jid), np.nan)
    if not (c.has("TotalCPU") and c.has("NCPUS")):
        return cpu_util
    v = read_text_fields(c, _CPU_FIELDS, len(jid))
    tcpu, ncpu = v["total_cpu"], v["ncpus"]
    okc = np.isfinite(tcpu) & (ncpu > 0) & (runtime > 0)
    cpu_util[okc] = tcpu[okc] / (ncpu[okc] * runtime[okc])
    v.update(cpu_util=cpu_util, cpu_ok=okc)
    apply_checks(v, _CPU_CHECKS, ok, lines, jid, issues)
    return np.clip(cpu_util, 0.0, 1.0)


def _origin(submit: np.ndarray, ok: np.ndarray, timezone: str, report: LoadReport) -> tuple[float, np.ndarray]:
    """(origin = first accepted submit [Unix s], submit times relative to it); notes on zone and order."""
    origin = float(np.nanmin(submit[ok])) if ok.any() else float("nan")
    report.notes.append(f"local times read in time zone {timezone}; origin = first submit {origin:.0f} (Unix s)")
    s_rel = submit - origin
    running_max = np.maximum.accumulate(s_rel[ok]) if ok.any() else s_rel[ok]
    n_uns = int((s_rel[ok][1:] < running_max[:-1]).sum()) if ok.sum() > 1 else 0
    if n_uns:
        report.notes.append(f"{n_uns} record(s) out of submit-time order; sorted by submit, job id")
    return origin, s_rel


class SacctLoader(BaseLoader):
    """Loader for Slurm ``sacct -P`` output (``.sacct``, ``.psv``); see :func:`read_sacct`.

    Attributes
    ----------
    name : str
        ``"sacct"``.
    description : str
        One-line description.
    suffixes : tuple of str
        ``(".sacct", ".psv")``.
    """

    name = "sacct"
    description = "Slurm sacct -P pipe-delimited accounting output (steps folded, local times in a given zone)"
    suffixes = (".sacct", ".psv")

    def load(self, path: str | os.PathLike[str], **options: Any) -> LoadResult:
        """Read sacct output; options as for :func:`read_sacct`.

        Parameters
        ----------
        path : str | os.PathLike[str]
            sacct output file.
        **options : Any
            ``timezone``, ``columns``, ``delimiter``, ``cores_per_node``, ``max_nodes``, ``strict``.

        Returns
        -------
        LoadResult
            Job table and load report.

        Notes
        -----
        Raised by the functions it calls, not by its own body:

        - ``TraceError``: See :func:`read_sacct`.
        """
        return read_sacct(path, **options)
