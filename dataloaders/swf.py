"""Standard Workload Format (SWF) v2.2 loader: Parallel Workloads Archive traces -> canonical job table.

An SWF file has one job per line, 18 whitespace-separated numeric fields, ``-1`` meaning "missing" in any field, and
header comments starting with ``;`` (``; MaxJobs: 527371``). This loader reads plain or gzip-compressed files (by
content, whatever the suffix), parses the numbers vectorised with numpy (a per-line slow path only runs for lines
that fail the fast path, so every rejection still carries its line number) and returns :class:`LoadResult`.

Field -> canonical column (:data:`jobs.table.JOB_COLUMNS`)
----------------------------------------------------------
===========================  ====================================================================================
``job_id``                   field 1 (job number); must be an integer >= 0, else the line is rejected
``submit_time_s``            field 2 relative to the time origin (see below); -1 -> line rejected
``requested_walltime_s``     field 9; -1 -> NaN (never 0); 0 or negative -> NaN, repaired
``nodes``                    ceil(processors / cores_per_node); processors = field 5 (allocated) when > 0, else
                             field 8 (requested); neither -> line rejected. ``report.notes`` says how many
                             came from each field.
``runtime_s``                field 4; -1 -> NaN (flagged); 0 is legal and kept
``start_time_s``             submit + field 3 (wait) when the wait is known, else NaN
``end_time_s``               start + run time when both are known, else NaN
``user`` / ``account``       fields 12 / 13 as text; ``""`` when -1
``queue``                    field 15 as text; ``""`` when -1
``status``                   field 11: 0 failed, 1 completed, 5 cancelled, -1 unknown (other codes -> unknown,
                             repaired); 2/3/4 see partial executions below
``cpu_util``                 field 6 (average CPU time per processor, s) / run time, clipped to [0, 1] (clipping is
                             reported as a repair); NaN when either is missing or the run time is 0
``gpu_util``                 NaN (SWF has no GPU field)
===========================  ====================================================================================

Two extra columns follow the canonical ones: ``procs`` (int64, the processor count used for ``nodes``) and
``source_line`` (int64, 1-based line of the record in the decompressed file).

Time origin
-----------
If the header gives ``UnixStartTime`` > 0, it is the origin. Otherwise, if the submit times look like Unix epochs
(smallest submit > 1e8 s, i.e. after 1973), the origin is the first (smallest) submit time. Submit times that are
epochs are made relative to the origin. ``jobs.attrs["time_origin_unix_s"]`` holds the origin (NaN when the trace
gives no absolute time).

Partial executions (status 2, 3, 4)
-----------------------------------
SWF v2.2 writes a checkpointed or swapped job as one summary line (status 0/1/5, totals) followed by one line per
part (status 2 "will be continued", 3 "last part, completed", 4 "last part, failed") with the same job number.
Choice made here: the summary line is kept and its part lines are *folded* (counted, reported as ``folded``,
not rejected; no information the canonical table holds is lost). Parts without a summary line are folded into one
synthetic job: fields of the first part (by line), run time = sum of the parts' run times, start = first part's
start, end = start + that run time, status from the last part (3 -> completed, 4 -> failed, only 2 -> unknown),
reported as ``repaired`` (reason ``partial_execution_without_summary``).

Order of checks
---------------
1. lines with a field count other than 18, or non-numeric / non-finite text -> rejected;
2. job id, submit time, processor count unusable -> rejected;
3. partial-execution lines folded (above);
4. a job id seen on an earlier valid line -> rejected (``duplicate_job_id``);
5. ``nodes > max_nodes`` -> rejected (``larger_than_machine``); the load continues;
6. value repairs / flags on the accepted rows; sort by (submit, job id), stable.

References
----------
D. Feitelson, Parallel Workloads Archive, "The Standard Workload Format", version 2.2,
https://www.cs.huji.ac.il/labs/parallel/workload/swf.html
"""

from __future__ import annotations

import io
import itertools
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dataloaders._common import finish_load
from dataloaders.fields import FieldRule, RecordField, RejectRule, apply_rejections, apply_repairs, parse_record
from dataloaders.registry import BaseLoader
from dataloaders.report import Issue, LoadReport, LoadResult
from jobs.table import JobStatus

__all__ = ["EPOCH_THRESHOLD_S", "SWF_FIELDS", "SWFLoader", "TEXT_FIELDS", "parse_swf_header", "read_swf",
           "read_swf_header", "swf_cores_per_node"]

#: The 18 SWF v2.2 fields, in file order (names used in issues and notes).
SWF_FIELDS: tuple[str, ...] = (
    "job_number",
    "submit_time",
    "wait_time",
    "run_time",
    "allocated_processors",
    "average_cpu_time",
    "used_memory",
    "requested_processors",
    "requested_time",
    "requested_memory",
    "status",
    "user_id",
    "group_id",
    "executable",
    "queue",
    "partition",
    "preceding_job",
    "think_time",
)
_N = len(SWF_FIELDS)
(
    _JOB,
    _SUBMIT,
    _WAIT,
    _RUN,
    _ALLOC,
    _CPU,
    _MEM,
    _REQP,
    _REQT,
    _REQM,
    _STATUS,
    _USER,
    _GROUP,
    _EXE,
    _QUEUE,
    _PART,
    _PREC,
    _THINK,
) = range(_N)

#: Identifier fields that may hold text (user, group, executable, queue, partition; fields 12-16): kept as text.
TEXT_FIELDS: tuple[str, ...] = ("user_id", "group_id", "executable", "queue", "partition")
_TEXT_COLS = (_USER, _GROUP, _EXE, _QUEUE, _PART)
_TEXT_USE = {_USER: "user name", _GROUP: "account (group) name", _QUEUE: "queue name", _PART: "partition name"}

#: Submit times above this (s) are taken as absolute Unix epochs (1e8 s is 1973-03-03).
EPOCH_THRESHOLD_S = 1e8
#: Largest job number kept exactly (float64 holds every integer up to 2**53).
_MAX_EXACT_INT = float(2**53)
#: Largest processor count accepted (int64 node counts, and no machine has more).
_MAX_PROCS = float(2**31)
#: Largest time accepted in any time field [s] (~317 years).
_MAX_TIME_S = 1e10

_HEADER_NUMERIC = ("UnixStartTime", "MaxNodes", "MaxProcs", "MaxJobs", "MaxRecords", "TimeZone", "MaxQueues",
                   "MaxPartitions")
_PARTIAL_STATUS = (2, 3, 4)
_MAX_FOUND = 80


def parse_swf_header(comment_lines: list[str]) -> dict[str, Any]:
    """Parse SWF header comments (``; Key: value``) into a dict.

    Parameters
    ----------
    comment_lines : list[str]
        List of str: Lines starting with ``;`` (leading whitespace allowed).

    Returns
    -------
    dict
        Key -> value. ``UnixStartTime``, ``MaxNodes``, ``MaxProcs``, ``MaxJobs``, ``MaxRecords``, ``TimeZone``,
        ``MaxQueues`` and ``MaxPartitions`` are ints (or floats when fractional) when they parse as numbers;
        other keys keep their text. A key that occurs several times (``Note``, ``Queue``) keeps the first value;
        continuation lines without a key are ignored.
    """
    header: dict[str, Any] = {}
    for raw in comment_lines:
        body = raw.strip().lstrip(";").strip()
        key, sep, value = body.partition(":")
        key = key.strip()
        if not sep or not key or " " in key:
            continue
        value = value.strip()
        if key in _HEADER_NUMERIC:
            try:
                num = float(value.split()[0])
            except (ValueError, IndexError):
                header.setdefault(key, value)
                continue
            header.setdefault(key, int(num) if num.is_integer() else num)
        else:
            header.setdefault(key, value)
    return header


#: Most bytes :func:`read_swf_header` reads looking for the header (a header is a few kB).
_HEADER_PEEK_BYTES = 1 << 20


def read_swf_header(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Parse only the header comments of an SWF file (plain or gzip), without reading the jobs.

    Reads lines until the first data line (or 1 MiB), so it is cheap on a million-job trace. A missing file is a
    ``FileNotFoundError``; a corrupt compressed stream or UTF-16 / UTF-32 text a ``TraceError``
    (:func:`dataloaders._common.trace_bytes_head`).

    Parameters
    ----------
    path : str | os.PathLike[str]
        SWF file.

    Returns
    -------
    dict
        As :func:`parse_swf_header` (empty when the file has no header).
    """
    from dataloaders._common import trace_bytes_head

    p = Path(path)
    comments: list[str] = []
    for line in trace_bytes_head(p, _HEADER_PEEK_BYTES).splitlines():
        s = line.decode("latin-1").strip()
        if s.startswith(";"):
            comments.append(s)
        elif s:
            break
    return parse_swf_header(comments)


def swf_cores_per_node(header: dict[str, Any], system_procs_per_node: int, system_nodes: int) -> tuple[int, str]:
    """Processors per node for an SWF trace when the run does not give it: the header first, then the system.

    Rules, in order (the run's own ``trace.cores_per_node`` / ``--cores-per-node`` always wins and is not
    handled here):

    1. Header ``MaxProcs`` and ``MaxNodes`` both positive integers with ``MaxProcs > MaxNodes`` and an integer
       ratio: the ratio (the header says each node has that many processors).
    2. ``MaxProcs == MaxNodes``: the header cannot tell processors from nodes. If it equals the system's
       processor count ``system_nodes x system_procs_per_node`` (with more than one per node), the log counts
       processors and the header's "nodes" are processors: the system's value (the HPC2N "Seth" log: MaxProcs =
       MaxNodes = 240 = 120 nodes x 2). Else one processor per node (theta_2022.swf: 4360 = 4360, jobs of
       128 / 256 / 640 nodes on the 4,392-node machine).
    3. No usable header sizes: the system's ``trace_procs_per_node`` (``system_procs_per_node``).

    Parameters
    ----------
    header : dict[str, Any]
        From :func:`read_swf_header` / :func:`parse_swf_header`.
    system_procs_per_node : int
        The system's processors per node as its logs count them (``power.System.trace_procs_per_node``), >= 1.
    system_nodes : int
        The system's node count, >= 1.

    Returns
    -------
    cores_per_node : int
        >= 1.
    reason : str
        Where the value came from, for the load report.
    """
    mp, mn = header.get("MaxProcs"), header.get("MaxNodes")
    ok = all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in (mp, mn))
    if ok and mp > mn and mp % mn == 0:
        return mp // mn, f"SWF header MaxProcs / MaxNodes = {mp} / {mn}"
    if ok and mp == mn:
        if system_procs_per_node > 1 and mp == system_nodes * system_procs_per_node:
            return system_procs_per_node, (f"system ({system_nodes} nodes x {system_procs_per_node}): the header's "
                                           f"MaxProcs = MaxNodes = {mp} counts the system's processors")
        return 1, f"SWF header MaxProcs = MaxNodes = {mp} (one processor per node)"
    why = "no MaxProcs / MaxNodes in the SWF header" if not ok else (
        f"header MaxProcs / MaxNodes = {mp} / {mn} is not a whole number")
    return system_procs_per_node, f"system description ({why})"


def _read_bytes(path: Path) -> bytes:
    from dataloaders._common import trace_bytes  # the one input opener (bounded decompression, encodings, lines)

    return trace_bytes(path)


def _fmt(x: float) -> str:
    if math.isnan(x):
        return "nan"
    return str(int(x)) if float(x).is_integer() else repr(float(x))


#: The fields of an Alea ``.machines`` line (whitespace-separated ``id name nodes cpus_per_node speed ram``) that the
#: partition names need, in the order they are checked (engine: :func:`dataloaders.fields.parse_record`).
_MACHINE_FIELDS = (
    RecordField("id", "id", lambda f: f[0], lambda x: x if x.lstrip("-").isdigit() else None, "an integer cluster id",
                "bad_machine_id"),
    RecordField("name", "name", lambda f: f[1] if len(f) > 1 else "(absent)", lambda x: None if x == "(absent)" else x,
                "a cluster name after the id", "machine_name_missing"),
)


def _machine_names(path: Path, part: np.ndarray, report: LoadReport) -> np.ndarray:
    """SWF partition ids (field 16, as text) -> cluster names of an Alea ``.machines`` file beside the trace.

    The Alea simulator's machine file (``<trace>.machines``, e.g. ``hpc2n.swf.machines``; ``.gz`` stripped) has one
    cluster per line: ``id name nodes cpus_per_node speed ram`` (whitespace-separated). Ids are matched as they are;
    when some id has no machine but every id minus one has (SWF partitions counted from 1, the machine file from
    0), that shift is used. Either way the load report says how the ids were mapped; without a machine file the ids are kept.
    A non-blank line that is not a cluster (no integer id, no name: :data:`_MACHINE_FIELDS`) is skipped and noted.
    """
    base = str(path)[:-3] if str(path).endswith(".gz") else str(path)
    mfile = Path(base + ".machines")
    if not mfile.is_file():
        return part
    names, skipped = {}, []
    for no, line in enumerate(mfile.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
        f = line.split()
        if not f:
            continue
        v = parse_record(f, _MACHINE_FIELDS, lambda field, found, expected, reason, no=no:
                         skipped.append(f"line {no}: {field} = {found!r}, expected {expected}"))
        if v is not None:
            names[v["id"]] = v["name"]
    if skipped:
        report.notes.append(f"{len(skipped)} line(s) of {mfile.name} skipped (not a cluster): " + "; ".join(skipped[:3]))
    ids = sorted({x for x in part if x != ""})
    shift = 0
    if not all(x in names for x in ids) and all(x.isdigit() and str(int(x) - 1) in names for x in ids):
        shift = 1
    mapped = {x: names.get(str(int(x) - shift) if x.isdigit() else x, x) for x in ids}
    report.notes.append(f"partition (field 16) -> cluster of {mfile.name} (Alea machines file"
                        + (", ids counted from 1 against its 0-based ids" if shift else "") + "): "
                        + ", ".join(f"{k} -> {v}" for k, v in mapped.items()))
    return np.array([mapped.get(x, x) if x != "" else "" for x in part], dtype=object)


def _id_text(values: np.ndarray) -> np.ndarray:
    """Ids as text: integral -> '123', fractional -> '1.5', negative (missing) or NaN (text, filled later) -> ''."""
    codes, uniq = pd.factorize(values, sort=False, use_na_sentinel=False)  # ids repeat: format each distinct value once
    if len(uniq) < len(values):
        return _id_text(np.asarray(uniq, dtype=np.float64))[codes]
    out = np.full(values.shape, "", dtype=object)
    ok = values >= 0
    integral = ok & (values == np.floor(values))
    out[integral] = values[integral].astype(np.int64).astype(str)
    frac = ok & ~integral
    if frac.any():
        out[frac] = [repr(float(v)) for v in values[frac]]
    return out


class _Issues:
    """Collects issues while the loader works on arrays."""

    def __init__(self) -> None:
        self.items: list[Issue] = []

    def add(self, line, job_id, field, found, expected, action, reason) -> None:  # noqa: ANN001, D102
        jid = None if job_id is None or not np.isfinite(job_id) else int(job_id)
        self.items.append(Issue(None if line is None else int(line), jid, field, str(found)[:_MAX_FOUND],
                                expected, action, reason))

    def add_mask(self, mask, lines, ids, field, found, expected, action, reason) -> None:  # noqa: ANN001, D102
        # found: one value for all rows, a per-row array / list, or a function of the row index (built only for
        # the rows in the mask, so a million-row load does not format a million strings)
        for k in np.flatnonzero(mask):
            if callable(found):
                f = found(k)
            else:
                f = found[k] if isinstance(found, (np.ndarray, list)) else found
            self.add(lines[k], ids[k], field, f if isinstance(f, str) else _fmt(float(f)), expected, action, reason)


def _parse_lines(data: list[str], line_no: np.ndarray, issues: _Issues
                 ) -> tuple[np.ndarray, np.ndarray, dict[int, dict[int, str]], int]:
    """Per-line path: parse the lines the block scanner (:func:`_scan_block`) cannot prove clean.

    ``data`` holds stripped, non-blank, non-comment lines. Every rejection carries its line number, field and found
    text. Two tolerated departures from the 18 numeric fields of SWF v2.2:

    - text in an identifier field (user, group, executable, queue, partition: fields 12-16, see
      :data:`TEXT_FIELDS`) is kept as text (the value matrix holds NaN there);
    - tokens after the 18th (site columns such as a node list or a resource string, common in the Parallel
      Workloads Archive family) are ignored; the caller notes how many records had them.

    Parameters
    ----------
    data : list[str]
        The lines to parse, stripped, non-blank, non-comment.
    line_no : np.ndarray
        Shape (len(data),), int: their 1-based line numbers.
    issues : _Issues
        Where each rejection goes.

    Returns
    -------
    values : ndarray of float64, shape (n_ok, 18)
        Parsed rows.
    lines : ndarray of int64, shape (n_ok,)
        Their 1-based line numbers.
    texts : dict
        Field index -> {line number -> text} for identifier fields holding text.
    n_extra : int
        Number of accepted-so-far rows that had more than 18 tokens.
    """
    toks = [s.split() for s in data]
    nf = np.fromiter(map(len, toks), dtype=np.int64, count=len(toks))
    well = nf >= _N
    for k in np.flatnonzero(~well):
        first = toks[k][0] if toks[k] else ""
        jid = float(first) if first.isascii() and first.lstrip("-").isdigit() else None
        issues.add(line_no[k], jid, "", data[k], f"{_N} whitespace-separated fields, found {nf[k]}", "rejected",
                   "wrong_field_count")
    good_idx = np.flatnonzero(well)
    extra = nf[good_idx] > _N
    rows = [toks[k][:_N] for k in good_idx]
    texts: dict[int, dict[int, str]] = {}
    try:
        values = np.array(rows, dtype=np.float64).reshape(len(rows), _N)
        bad = ~np.isfinite(values).all(axis=1)
    except ValueError:
        # slow path: find the offending lines one by one; identifier fields may hold text
        values = np.full((len(rows), _N), np.nan)
        bad = np.zeros(len(rows), dtype=bool)
        for r, tk in enumerate(rows):
            row = values[r]
            for c, t in enumerate(tk):
                try:
                    row[c] = float(t)
                except ValueError:
                    if c in _TEXT_COLS:
                        texts.setdefault(c, {})[int(line_no[good_idx[r]])] = t
                    else:
                        bad[r] = True
                        break
        if texts:
            finite = np.isfinite(values)
            for c in _TEXT_COLS:  # a text identifier leaves NaN in its column; any other NaN / inf is bad
                is_text = np.isin(line_no[good_idx], list(texts.get(c, {}))) if c in texts else np.zeros(
                    len(rows), dtype=bool)
                finite[:, c] |= is_text
            bad |= ~finite.all(axis=1)
        else:
            bad |= ~np.isfinite(values).all(axis=1)
    for r in np.flatnonzero(bad):
        tk = rows[r]
        ln = int(line_no[good_idx[r]])
        col = next((c for c, t in enumerate(tk) if not _is_finite_number(t)
                    and not (c in texts and ln in texts[c])), 0)
        first = tk[0]
        jid = float(first) if first.isascii() and first.lstrip("-").isdigit() else None
        issues.add(ln, jid, SWF_FIELDS[col], tk[col], "a finite number (-1 when missing)",
                   "rejected", "non_numeric")
        for c in texts:
            texts[c].pop(ln, None)
    keep = ~bad
    return values[keep], line_no[good_idx[keep]], texts, int((extra & keep).sum())


# ---- block scanner: proves lines clean with numpy so that the C parser of pandas can read them ---------------
#: Bytes of text handed to the block scanner at a time (whole lines; memory use of the scan is ~15x this).
_BLOCK_BYTES = 1 << 21
#: Longest token the fast path takes: <= 15 characters means <= 15 digits, which pandas' C parser (int64, or
#: float64 via one correctly rounded division by a power of ten) reads to exactly the value float() gives.
_MAX_FAST_TOKEN = 15
_C_NL, _C_SP, _C_CR, _C_DIG, _C_MINUS, _C_DOT, _C_OTHER = range(7)
_BYTE_CLASS = np.full(256, _C_OTHER, dtype=np.uint8)
_BYTE_CLASS[ord("\n")] = _C_NL
_BYTE_CLASS[[ord(" "), ord("\t")]] = _C_SP
_BYTE_CLASS[ord("\r")] = _C_CR
_BYTE_CLASS[ord("0"):ord("9") + 1] = _C_DIG
_BYTE_CLASS[ord("-")] = _C_MINUS
_BYTE_CLASS[ord(".")] = _C_DOT


def _scan_block(block: bytes) -> tuple[np.ndarray, np.ndarray]:
    r"""Classify the lines of ``block`` (whole lines, split at b"\n").

    A line is *clean* when it holds exactly 18 tokens separated by spaces / tabs (a CR only right before the
    line end), each token a plain decimal number the C parser of pandas reads to the value ``float()`` gives:
    ``[-]digits[.digits]`` with at least one digit, at most 15 characters, a minus only in front of a digit 1-9
    (so ``-0`` keeps its sign on the per-line path). Anything else (comments, letters, exponents, other
    whitespace, non-ASCII bytes, a wrong field count) is left to the per-line path.

    Parameters
    ----------
    block : bytes
        Whole lines of the file, without the newline that ends the last one.

    Returns
    -------
    clean : ndarray of bool, shape (n_lines,)
        Lines for the fast path.
    blank : ndarray of bool, shape (n_lines,)
        Lines holding only spaces, tabs and a final CR (skipped, as ``str.strip()`` would leave nothing).
    """
    a = np.frombuffer(block, dtype=np.uint8)
    n = len(a)
    c = _BYTE_CLASS[a]
    line_id = np.cumsum(c == _C_NL, dtype=np.int64)
    n_lines = (int(line_id[-1]) if n else 0) + 1
    tok = c >= _C_DIG
    prev = np.zeros(n, dtype=bool)
    prev[1:] = tok[:-1]
    nxt = np.zeros(n, dtype=bool)
    nxt[:-1] = tok[1:]
    starts = np.flatnonzero(tok & ~prev)
    ends = np.flatnonzero(tok & ~nxt) + 1
    t_line = line_id[starts]
    n_tok = np.bincount(t_line, minlength=n_lines)
    bad = np.zeros(n_lines, dtype=bool)
    bad[line_id[c == _C_OTHER]] = True
    after = np.empty(n, dtype=np.uint8)  # byte after each byte (NUL past the end)
    after[:-1] = a[1:]
    if n:
        after[-1] = 0
    cr = np.flatnonzero(c == _C_CR)
    bad[line_id[cr[(after[cr] != ord("\n")) & (cr != n - 1)]]] = True
    mi = np.flatnonzero(c == _C_MINUS)
    bad[line_id[mi[prev[mi] | (after[mi] < ord("1")) | (after[mi] > ord("9"))]]] = True
    t_len = ends - starts
    dots = np.flatnonzero(c == _C_DOT)
    n_dot = np.bincount(np.searchsorted(starts, dots, side="right") - 1, minlength=len(starts))
    n_dig = t_len - n_dot - (a[starts] == ord("-"))
    bad[t_line[(t_len > _MAX_FAST_TOKEN) | (n_dot > 1) | (n_dig < 1)]] = True
    clean = ~bad & (n_tok == _N)
    blank = ~bad & (n_tok == 0)
    return clean, blank


def _read_fast(lines: list[bytes]) -> np.ndarray | None:
    """Parse clean lines with the C parser of pandas; None if it does not give 18 numeric columns per line."""
    if not lines:
        return np.empty((0, _N))
    try:
        df = pd.read_csv(io.BytesIO(b"\n".join(lines)), sep=r"\s+", header=None, names=list(range(_N)),
                         engine="c", na_filter=False, quoting=3, skip_blank_lines=False)
    except (ValueError, pd.errors.ParserError):  # pragma: no cover - the scanner only passes clean lines
        return None
    if len(df) != len(lines) or not all(dt.kind in "iuf" for dt in df.dtypes):  # pragma: no cover
        return None
    return df.to_numpy(dtype=np.float64)


def _parse_text(raw: bytes, issues: _Issues
                ) -> tuple[list[str], np.ndarray, np.ndarray, int, dict[int, dict[int, str]], int]:
    """Split a decoded-as-bytes SWF file into header comments and parsed data rows.

    Returns (comment lines, values shape (n_ok, 18) float64 in file order, their 1-based line numbers, number
    of data records read, text identifiers and count of rows with extra columns as in :func:`_parse_lines`).
    Equivalent to reading the text line by line with :func:`_parse_lines`, but clean
    lines go through pandas block by block; only the others are decoded and parsed one by one.
    """
    enc = "utf-8"
    if not raw.isascii():
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            enc = "latin-1"
    comments: list[str] = []
    slow: list[str] = []
    slow_line: list[int] = []
    # one row per line at most; np.empty does not touch the pages of rows never written
    values = np.empty((raw.count(b"\n") + 1, _N))
    fast_line: list[np.ndarray] = []
    n_fast = 0
    pos, first_line, n = 0, 1, len(raw)
    while pos < n or (pos == 0 and n == 0):
        end = raw.find(b"\n", pos + _BLOCK_BYTES)
        end = n if end < 0 else end + 1
        block = raw[pos:end]
        seg = block.split(b"\n")
        if block.endswith(b"\n"):
            seg.pop()  # the empty piece after the last newline belongs to the next block
        clean, blank = _scan_block(block)
        clean, blank = clean[:len(seg)], blank[:len(seg)]
        vals = _read_fast(list(itertools.compress(seg, clean)))
        if vals is None:  # pragma: no cover - defensive: the per-line path takes the whole block
            clean[:] = False
        else:
            values[n_fast:n_fast + len(vals)] = vals
            fast_line.append(first_line + np.flatnonzero(clean))
            n_fast += len(vals)
        for k in np.flatnonzero(~clean & ~blank):
            s = seg[k].decode(enc).strip()
            if not s:
                continue
            if s[0] == ";":
                comments.append(s)
            else:
                slow.append(s)
                slow_line.append(first_line + int(k))
        first_line += block.count(b"\n")
        pos = end
        if n == 0:
            break
    v_slow, l_slow, texts, n_extra = _parse_lines(slow, np.asarray(slow_line, dtype=np.int64), issues)
    lines = np.concatenate(fast_line + [l_slow]).astype(np.int64, copy=False)
    if len(l_slow):
        values = np.concatenate([values[:n_fast], v_slow])
        o = np.argsort(lines, kind="stable")
        values, lines = values[o], lines[o]
    else:
        values = values[:n_fast]
    return comments, values, lines, n_fast + len(slow), texts, n_extra


def _is_finite_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def _fold_orphan_parts(v: np.ndarray, lines: np.ndarray, issues: _Issues) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """Build one synthetic row per job id that has partial lines but no summary line.

    Returns the synthetic rows, their line numbers and the indices (into v) of all part rows used.
    """
    order = np.lexsort((lines, v[:, _JOB]))
    rows, row_lines, used = [], [], []
    ids = v[order, _JOB]
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    ends = np.r_[starts[1:], len(ids)]
    for a, b in zip(starts, ends):
        idx = order[a:b]  # sorted by line within the job
        parts = v[idx]
        row = parts[0].copy()
        rt = parts[:, _RUN]
        row[_RUN] = rt.sum() if (rt >= 0).all() else -1.0
        cpu = parts[:, _CPU]
        row[_CPU] = cpu.sum() if (cpu >= 0).all() else -1.0
        last = int(parts[-1, _STATUS])
        row[_STATUS] = {3: 1, 4: 0}.get(last, -1)
        rows.append(row)
        row_lines.append(lines[idx[0]])
        used.extend(idx.tolist())
        issues.add(lines[idx[0]], row[_JOB], "status",
                   f"{len(idx)} partial-execution line(s) (status {','.join(str(int(s)) for s in parts[:, _STATUS])})"
                   " and no summary line", "a summary line with status 0/1/5", "repaired",
                   "partial_execution_without_summary")
        for k in idx[1:]:
            issues.add(lines[k], v[k, _JOB], "status", _fmt(v[k, _STATUS]),
                       f"part of job folded into line {lines[idx[0]]}", "folded", "partial_execution_line")
    return np.array(rows).reshape(-1, _N), np.array(row_lines, dtype=np.int64), used


def _procs_text(v: np.ndarray) -> Callable[[int], str]:
    return lambda k: f"allocated={_fmt(v[k, _ALLOC])}, requested={_fmt(v[k, _REQP])}"


#: Checks that make an SWF record unusable, in the order they are made (a record is rejected by the first it breaks).
_SWF_REJECTS: tuple[RejectRule, ...] = (
    RejectRule("job_number", lambda v: (v[:, _JOB] < 0) | (v[:, _JOB] != np.floor(v[:, _JOB])), lambda v: v[:, _JOB],
               "an integer >= 0", "bad_job_id", hide_id=True),
    RejectRule("submit_time", lambda v: v[:, _SUBMIT] < 0, lambda v: v[:, _SUBMIT], "a time >= 0 s",
               "submit_time_missing"),
    RejectRule("allocated_processors", lambda v: ~(v[:, _ALLOC] > 0) & ~(v[:, _REQP] > 0), _procs_text,
               "allocated or requested processors > 0", "processors_missing"),
    # values no trace can hold (overflow the canonical dtypes, or years of run time)
    RejectRule("job_number", lambda v: v[:, _JOB] > _MAX_EXACT_INT, lambda v: v[:, _JOB],
               f"an integer <= {_MAX_EXACT_INT:.0f} (exact in float64)", "job_id_out_of_range", hide_id=True),
    RejectRule("allocated_processors", lambda v: (v[:, _ALLOC] > _MAX_PROCS) | (v[:, _REQP] > _MAX_PROCS),
               _procs_text, f"at most {_MAX_PROCS:.0f} processors", "processors_out_of_range"),
    *(RejectRule(SWF_FIELDS[c], lambda v, c=c: v[:, c] > _MAX_TIME_S, lambda v, c=c: v[:, c],
                 f"a time below {_MAX_TIME_S:.0e} s (317 years)", "time_out_of_range")
      for c in (_SUBMIT, _WAIT, _RUN, _REQT)),
)

#: Value fields checked and repaired on the accepted records, in report order (-1 is SWF's "missing" marker).
_SWF_REPAIRS: tuple[FieldRule, ...] = (
    FieldRule(_WAIT, "wait_time", "s", lambda x: x < 0, "a time >= 0 s or -1", "negative_wait", missing=-1.0),
    FieldRule(_RUN, "run_time", "s", lambda x: x < 0, "a time >= 0 s or -1", "negative_runtime", missing=-1.0,
              missing_reason="runtime_missing", missing_expected="a time >= 0 s (kept as NaN)"),
    FieldRule(_REQT, "requested_time", "s", lambda x: x <= 0, "a time > 0 s or -1 (set to NaN)",
              "requested_time_not_positive", missing=-1.0),
    FieldRule(_STATUS, "status", "-", lambda x: ~np.isin(x, [s.value for s in JobStatus]),
              "one of -1, 0, 1, 5 (set to -1 unknown)", "unknown_status", fill=float(JobStatus.UNKNOWN.value)),
    FieldRule(_CPU, "average_cpu_time", "s", lambda x: x < 0, "a time >= 0 s or -1", "negative_cpu_time",
              missing=-1.0),
)


def _reject_unusable(v: np.ndarray, lines: np.ndarray, issues: _Issues) -> np.ndarray:
    """Mask of the records that pass :data:`_SWF_REJECTS` and share one kind of submit time (epochs or offsets)."""
    ok = apply_rejections(v, _SWF_REJECTS, np.ones(len(v), dtype=bool), lines, v[:, _JOB], issues)
    # submit times must all be epochs or all offsets: a file mixing both has no single time origin
    epoch = ok & (v[:, _SUBMIT] > EPOCH_THRESHOLD_S)
    n_epoch, n_ok = int(epoch.sum()), int(ok.sum())
    if 0 < n_epoch < n_ok:
        minority = epoch if n_epoch <= n_ok - n_epoch else (ok & ~epoch)
        issues.add_mask(minority, lines, v[:, _JOB], "submit_time", v[:, _SUBMIT],
                        "Unix epochs like the other records" if n_epoch > n_ok - n_epoch
                        else f"offsets below {EPOCH_THRESHOLD_S:.0e} s like the other records",
                        "rejected", "submit_time_mixed_origin")
        ok &= ~minority
    return ok


def _fold_partials(v: np.ndarray, lines: np.ndarray, issues: _Issues, report: LoadReport
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Partial executions (status 2/3/4): fold part lines into their summary line (or a synthetic one)."""
    status = v[:, _STATUS]
    partial = np.isin(status, _PARTIAL_STATUS)
    n_folded_parts = 0
    if partial.any():
        summary_ids = set(v[~partial, _JOB].tolist())
        has_summary = partial & np.isin(v[:, _JOB], list(summary_ids))
        issues.add_mask(has_summary, lines, v[:, _JOB], "status", status,
                        "summary line (status 0/1/5) kept, part lines folded into it", "folded",
                        "partial_execution_line")
        orphan = partial & ~has_summary
        n_folded_parts = int(has_summary.sum())
        keep = ~partial
        if orphan.any():
            o_idx = np.flatnonzero(orphan)
            rows, row_lines, used = _fold_orphan_parts(v[o_idx], lines[o_idx], issues)
            n_folded_parts += len(used) - len(rows)
            v = np.vstack([v[keep], rows])
            lines = np.r_[lines[keep], row_lines]
        else:
            v, lines = v[keep], lines[keep]
        report.notes.append(
            f"{int(partial.sum())} partial-execution line(s) (status 2/3/4): summary lines kept, part lines folded"
        )
        # back to file order for the duplicate check
        o = np.argsort(lines, kind="stable")
        v, lines = v[o], lines[o]
    report.folded = n_folded_parts
    return v, lines


def _drop_duplicates(v: np.ndarray, lines: np.ndarray, issues: _Issues) -> tuple[np.ndarray, np.ndarray]:
    """Keep the first valid occurrence of every job number in file order; reject the others."""
    jid = v[:, _JOB]
    dup = pd.Series(jid).duplicated(keep="first").to_numpy()
    if dup.any():
        first_line = pd.Series(lines, index=jid)[~dup]
        first_line = first_line[~first_line.index.duplicated()]
        for k in np.flatnonzero(dup):
            issues.add(lines[k], jid[k], "job_number", _fmt(jid[k]),
                       f"a unique job number (first seen on line {int(first_line[jid[k]])}, kept)", "rejected",
                       "duplicate_job_id")
        v, lines = v[~dup], lines[~dup]
    return v, lines


def _nodes(v: np.ndarray, lines: np.ndarray, issues: _Issues, report: LoadReport, header: dict, cores_per_node: int,
           max_nodes: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Processors -> nodes; rejects jobs larger than ``max_nodes``. Returns (v, lines, procs, nodes)."""
    jid = v[:, _JOB]
    alloc, reqp = v[:, _ALLOC], v[:, _REQP]
    from_alloc = alloc > 0
    procs = np.where(from_alloc, alloc, reqp)
    frac_procs = procs != np.floor(procs)
    issues.add_mask(frac_procs, lines, jid, "allocated_processors", procs, "an integer (rounded up)", "repaired",
                    "fractional_processors")
    procs = np.ceil(procs)
    nodes = np.ceil(procs / cores_per_node).astype(np.int64)
    if max_nodes is not None:
        too_big = nodes > max_nodes
        issues.add_mask(too_big, lines, jid, "allocated_processors",
                        lambda k: f"{int(procs[k])} processors = {nodes[k]} nodes",
                        f"<= {max_nodes} nodes (max_nodes)", "rejected", "larger_than_machine")
        keep = ~too_big
        v, lines, procs, nodes, from_alloc = v[keep], lines[keep], procs[keep], nodes[keep], from_alloc[keep]
    else:
        hdr_size = {k: header[k] for k in ("MaxNodes", "MaxProcs") if k in header}
        if hdr_size:
            sizes = ", ".join(f"{k} {x}" for k, x in hdr_size.items())
            report.notes.append(
                f"max_nodes not given: job sizes not checked (header {sizes}"
                f"; largest job {int(procs.max()) if len(procs) else 0} processors)"
            )
    report.notes.append(
        f"nodes = ceil(processors / {cores_per_node}); processors from allocated_processors (field 5) for "
        f"{int(from_alloc.sum())} job(s), from requested_processors (field 8) for {int((~from_alloc).sum())}"
    )
    return v, lines, procs, nodes


def _cpu_util(cpu: np.ndarray, run: np.ndarray, lines: np.ndarray, jid: np.ndarray, issues: _Issues) -> np.ndarray:
    """CPU time per processor / run time, clipped to [0, 1] (clipping reported); NaN when either is unknown."""
    util = np.full(len(cpu), np.nan)
    ok = np.isfinite(cpu) & (run > 0)
    util[ok] = cpu[ok] / run[ok]
    over = ok & (util > 1)
    issues.add_mask(over, lines, jid, "average_cpu_time",
                    lambda k: f"{_fmt(cpu[k])} s CPU per processor over {_fmt(run[k])} s run",
                    "<= run time (cpu_util clipped to 1)", "repaired", "cpu_util_clipped")
    return np.clip(util, 0.0, 1.0)


def _time_origin(submit: np.ndarray, header: dict, report: LoadReport) -> tuple[np.ndarray, float]:
    """(submit times relative to the origin, origin [Unix s] or NaN); the report says where the origin came from."""
    hdr_origin = header.get("UnixStartTime")
    hdr_origin = float(hdr_origin) if isinstance(hdr_origin, (int, float)) else float("nan")
    looks_epoch = len(submit) > 0 and float(submit.min()) > EPOCH_THRESHOLD_S
    if np.isfinite(hdr_origin) and hdr_origin > 0:
        origin = hdr_origin
        if looks_epoch:
            submit = submit - origin
            report.notes.append(f"submit times are Unix epochs; made relative to header UnixStartTime {origin:.0f}")
        elif not len(submit):
            report.notes.append(f"time origin = header UnixStartTime {origin:.0f} (no accepted record)")
        else:
            report.notes.append(f"time origin = header UnixStartTime {origin:.0f} (submit times are offsets)")
        if looks_epoch and (submit < 0).any():
            report.notes.append(f"{int((submit < 0).sum())} submit time(s) before the header UnixStartTime")
    elif looks_epoch:
        origin = float(submit.min())
        submit = submit - origin
        report.notes.append(
            f"submit times are Unix epochs (> {EPOCH_THRESHOLD_S:.0e} s); origin = first submit {origin:.0f}"
            + (" (header UnixStartTime is 0)" if hdr_origin == 0 else "")
        )
    else:
        origin = float("nan")
        if len(submit):
            report.notes.append("no absolute time origin (submit times are offsets, no header UnixStartTime > 0)")
    return submit, origin


def _file_notes(v: np.ndarray, submit: np.ndarray, run: np.ndarray, req: np.ndarray, st: np.ndarray, header: dict,
                report: LoadReport) -> None:
    """Notes on the file as a whole: order, missing values, run times, status codes, header counts."""
    running_max = np.maximum.accumulate(submit) if len(submit) else submit
    n_unsorted = int((submit[1:] < running_max[:-1]).sum()) if len(submit) > 1 else 0
    if n_unsorted:
        report.notes.append(f"{n_unsorted} record(s) out of submit-time order in the file; sorted by submit, job id")
    missing = {SWF_FIELDS[c]: int((v[:, c] == -1).sum()) for c in (_WAIT, _RUN, _ALLOC, _CPU, _REQP, _REQT,
                                                                     _STATUS, _USER, _GROUP, _QUEUE)}
    missing = {k: n for k, n in missing.items() if n}
    if missing:
        listed = ", ".join(f"{k} {n}" for k, n in missing.items())
        report.notes.append(f"missing (-1) values in accepted jobs: {listed}")
    n_zero = int((run == 0).sum())
    if n_zero:
        report.notes.append(f"{n_zero} job(s) with run time 0 (legal, kept)")
    longer = np.isfinite(run) & np.isfinite(req) & (run > req)
    if longer.any():
        report.notes.append(f"{int(longer.sum())} job(s) ran longer than requested ({100 * longer.mean():.1f}%)")
    if len(st) and (st == JobStatus.FAILED.value).all():
        report.notes.append("every job has status 0 (failed); the converter may have used 0 for 'unknown'")
    for key, actual, what in (("MaxJobs", len(v), "jobs were loaded"),
                              ("MaxRecords", report.records_read, "records were read")):
        if key in header and isinstance(header[key], (int, float)) and header[key] != actual:
            report.notes.append(f"header {key} = {header[key]} but {actual} {what}")


def _identifiers(v: np.ndarray, lines: np.ndarray, texts: dict[int, dict[int, str]], report: LoadReport
                 ) -> dict[int, np.ndarray]:
    """Identifier fields 12-16 as text; text held in the file is kept (user, group, queue, partition)."""
    ident = {c: _id_text(v[:, c]) for c in (_USER, _GROUP, _QUEUE, _PART)}
    for c, by_line in texts.items():
        n_txt = int(np.isin(lines, list(by_line)).sum()) if by_line else 0
        if not n_txt:
            continue
        used = f"kept as the {_TEXT_USE[c]}" if c in ident else "ignored (not used)"
        report.notes.append(f"{n_txt} accepted record(s) hold text in {SWF_FIELDS[c]} (field {c + 1}): {used}")
        if c in ident:
            col = ident[c]
            for k in np.flatnonzero(np.isin(lines, list(by_line))):
                col[k] = by_line[int(lines[k])]
    return ident


def read_swf(
    path: str | os.PathLike[str],
    *,
    cores_per_node: int = 1,
    max_nodes: int | None = None,
    strict: bool = False,
) -> LoadResult:
    """Read a Standard Workload Format v2.2 trace (plain or gzip) into the canonical job table.

    The checks are the tables :data:`_SWF_REJECTS` and :data:`_SWF_REPAIRS` (applied by :mod:`dataloaders.fields`)
    and the steps below, in the order of the module docstring; counts and strict mode are
    :func:`dataloaders._common.finish_load`'s.

    Parameters
    ----------
    path : str | os.PathLike[str]
        SWF file; gzip is detected from the content, not the suffix.
    cores_per_node : int
        Processors per node; nodes = ceil(processors / cores_per_node). Default 1 (SWF processors are nodes).
    max_nodes : int | None
        Machine size in nodes; a job needing more is rejected (``larger_than_machine``) and the load continues.
        None (default): no check (the header's ``MaxNodes`` is only reported, since header units vary by log).
    strict : bool
        Raise :class:`TraceError` for the first record that would be repaired or rejected (default False).
        Flagged (missing) values and folded partial-execution lines do not raise.

    Returns
    -------
    LoadResult
        ``jobs``: shape (n_jobs, 15), canonical columns plus ``procs`` and ``source_line``, sorted by
        (submit_time_s, job_id); ``attrs`` holds ``time_origin_unix_s`` (Unix s, NaN if none), ``source``,
        ``loader`` and ``swf_header``. ``report``: counts, issues and notes (see the module docstring).

    Raises
    ------
    ValueError
        If ``cores_per_node`` < 1 or ``max_nodes`` < 1.

    Notes
    -----
    The steps below raise ``FileNotFoundError`` if ``path`` does not exist, and :class:`TraceError` if the file
    yields zero jobs, the gzip data is corrupt, or (``strict=True``) a record is repaired or rejected; the message
    names the file, line, field and what was expected.
    """
    if int(cores_per_node) != cores_per_node or cores_per_node < 1:
        raise ValueError(f"cores_per_node must be an integer >= 1, got {cores_per_node!r}")
    if max_nodes is not None and (int(max_nodes) != max_nodes or max_nodes < 1):
        raise ValueError(f"max_nodes must be an integer >= 1 or None, got {max_nodes!r}")
    p = Path(path)
    src = str(p)
    raw = _read_bytes(p)
    report = LoadReport(source=src, loader="swf")
    issues = _Issues()

    # split header / data and parse, keeping 1-based line numbers
    comments, v, lines, report.records_read, texts, n_extra = _parse_text(raw, issues)
    del raw
    header = parse_swf_header(comments)
    report.header = header
    if n_extra:
        report.notes.append(f"{n_extra} record(s) with site columns after the {_N} standard fields (e.g. node "
                            "list, queue name, resource string): the 18 standard fields are read, the extra "
                            "columns are ignored")
    valid = _reject_unusable(v, lines, issues)
    if not valid.all():  # (a copy of the value matrix only when something was rejected)
        v, lines = v[valid], lines[valid]
    v, lines = _fold_partials(v, lines, issues, report)
    v, lines = _drop_duplicates(v, lines, issues)
    v, lines, procs, nodes = _nodes(v, lines, issues, report, header, cores_per_node, max_nodes)
    jid = v[:, _JOB]
    fixed = apply_repairs(v, _SWF_REPAIRS, lines, jid, issues)
    wait, run, req, st, cpu = (fixed[c] for c in (_WAIT, _RUN, _REQT, _STATUS, _CPU))
    util = _cpu_util(cpu, run, lines, jid, issues)
    submit, origin = _time_origin(v[:, _SUBMIT].copy(), header, report)
    start = submit + wait
    _file_notes(v, submit, run, req, st, header, report)
    ident = _identifiers(v, lines, texts, report)
    df = pd.DataFrame(
        {
            "job_id": jid.astype(np.int64),
            "submit_time_s": submit,
            "requested_walltime_s": req,
            "nodes": nodes,
            "runtime_s": run,
            "start_time_s": start,
            "end_time_s": start + run,
            "user": ident[_USER],
            "account": ident[_GROUP],
            "queue": ident[_QUEUE],
            "status": st.astype(np.int8),
            "cpu_util": util,
            "gpu_util": np.full(len(v), np.nan),
            "procs": procs.astype(np.int64),
            "source_line": lines.astype(np.int64),
        }
    )
    part = ident[_PART]
    if (part != "").any():  # field 16 given: an extra column, cluster names from an Alea .machines file beside it
        df["partition"] = _machine_names(p, part, report)
    # the table holds copies: free the value matrix and the per-column arrays before sorting / validating
    del v, submit, wait, run, req, st, cpu, util, start, procs, nodes, jid, lines, fixed
    return finish_load(df, report, issues, strict=strict, origin=origin, attrs={"swf_header": dict(header)})


class SWFLoader(BaseLoader):
    """Loader for Standard Workload Format v2.2 traces (``.swf``, ``.swf.gz``); see :func:`read_swf`.

    Attributes
    ----------
    name : str
        ``"swf"``.
    description : str
        One-line description.
    suffixes : tuple of str
        ``(".swf",)``.
    """

    name = "swf"
    description = "Standard Workload Format v2.2 (Parallel Workloads Archive), plain or gzip"
    suffixes = (".swf",)

    def load(
        self,
        path: str | os.PathLike[str],
        *,
        cores_per_node: int = 1,
        max_nodes: int | None = None,
        strict: bool = False,
    ) -> LoadResult:
        """Read an SWF trace; see :func:`read_swf` for the full contract.

        Parameters
        ----------
        path : str | os.PathLike[str]
            SWF file, plain or gzip.
        cores_per_node : int
            Processors per node, default 1.
        max_nodes : int | None
            Machine size in nodes; larger jobs are rejected. Default None (no check).
        strict : bool
            Raise on the first repaired or rejected record, default False.

        Returns
        -------
        LoadResult
            Job table and load report.

        Notes
        -----
        Raised by the functions it calls, not by its own body:

        - ``TraceError``: Zero jobs, corrupt gzip, or a strict-mode violation.
        - ``ValueError``: Invalid ``cores_per_node`` / ``max_nodes``.
        - ``FileNotFoundError``: If ``path`` does not exist.
        """
        return read_swf(path, cores_per_node=cores_per_node, max_nodes=max_nodes, strict=strict)
