"""What a loader did to a trace: counts, per-record issues, file-level notes, and the strict-mode error.

Every loader returns a :class:`LoadResult`: the canonical job table (:mod:`jobs.table`) and a :class:`LoadReport`
that says, record by record, what was repaired or rejected and why. ``LoadReport.to_dict()`` is meant for the run
provenance written beside the results; ``LoadReport.summary()`` is meant for a human.

Actions on a record
-------------------
``rejected``
    The record is not in the job table (bad line, job larger than the machine, duplicate id, ...).
``repaired``
    The record is in the table but a value was changed (e.g. a CPU utilisation clipped to 1).
``flagged``
    The record is in the table unchanged, but a value the simulator needs is missing (e.g. run time -1 -> NaN).
    Missing values are legal in the canonical table, so ``strict=True`` does not raise on them.
``folded``
    The record was merged into another one (SWF partial-execution lines); no information the table holds is lost.

With ``strict=True`` a loader raises :class:`TraceError` for the first ``repaired`` or ``rejected`` record.
"""

from __future__ import annotations

import collections
import dataclasses
import re
from typing import Any, Literal, NamedTuple

import pandas as pd

__all__ = ["ACTIONS", "Issue", "LoadReport", "LoadResult", "TraceError"]

#: Date-time text (``2024-11-15 16:57:50``, ``2024-11-15T16:57:50.123``) found where a number was expected.
_DATETIME_TEXT = re.compile(r"^\s*\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?\s*$")
#: Share of the records rejected from which a load's summary gives the reasons and hints up front.
MANY_REJECTED = 0.5

#: The actions a loader may take on one record, see the module docstring.
ACTIONS: tuple[str, ...] = ("rejected", "repaired", "flagged", "folded")

Action = Literal["rejected", "repaired", "flagged", "folded"]


class TraceError(ValueError):
    """A trace cannot be loaded, or (``strict=True``) a record would have been repaired or rejected.

    Parameters
    ----------
    path : str
        The trace file.
    message : str
        What is wrong.
    line : int | None
        1-based line number in the (decompressed) file, None (the default) when the problem concerns the whole
        file.
    field : str
        Field name (e.g. ``"run_time"``), ``""`` (the default) when not about one field.
    expected : str
        What a valid value looks like (default ``""``).
    found : str
        What the file holds (default ``""``).

    Attributes
    ----------
    path, line, field, expected, found
        As given, so callers can act on them without parsing the message.
    """

    def __init__(
        self,
        path: str,
        message: str,
        line: int | None = None,
        field: str = "",
        expected: str = "",
        found: str = "",
    ) -> None:
        self.path = str(path)
        self.line = line
        self.field = field
        self.expected = expected
        self.found = found
        where = f"{self.path}, line {line}" if line is not None else self.path
        parts = [f"{where}: {message}"]
        if field:
            parts.append(f"field {field!r}")
        if found:
            parts.append(f"found {found!r}")
        if expected:
            parts.append(f"expected {expected}")
        super().__init__("; ".join(parts))


@dataclasses.dataclass(frozen=True)
class Issue:
    """One action a loader took on one record.

    Attributes
    ----------
    line : int or None
        1-based line number in the (decompressed) file; None for a record synthesised from several lines.
    job_id : int or None
        Job id of the record when it could be read, else None.
    field : str
        Name of the field concerned (loader-specific, e.g. ``"allocated_processors"``), ``""`` for the whole line.
    found : str
        What the file holds (truncated to 80 characters).
    expected : str
        What a valid value looks like.
    action : {"rejected", "repaired", "flagged", "folded"}
        What the loader did, see the module docstring.
    reason : str
        Short machine-readable category used for counting, e.g. ``"wrong_field_count"``.
    """

    line: int | None
    job_id: int | None
    field: str
    found: str
    expected: str
    action: Action
    reason: str

    def describe(self) -> str:
        """Return one human-readable line for this issue.

        Returns
        -------
        str
            E.g. ``"line 12 (job 7): run_time = '-1', expected >= 0 -> flagged [runtime_missing]"``.
        """
        where = f"line {self.line}" if self.line is not None else "(no line)"
        if self.job_id is not None:
            where += f" (job {self.job_id})"
        what = f"{self.field} = {self.found!r}" if self.field else repr(self.found)
        return f"{where}: {what}, expected {self.expected} -> {self.action} [{self.reason}]"


@dataclasses.dataclass
class LoadReport:
    """Counts and issues of one trace load.

    ``records_read == accepted + rejected + folded`` always holds. ``repaired`` counts accepted records with at
    least one ``repaired`` issue (one record may carry several issues).

    Attributes
    ----------
    source : str
        Path of the trace file.
    loader : str
        Registry name of the loader (e.g. ``"swf"``).
    records_read : int
        Data records (non-blank, non-comment lines) read.
    accepted : int
        Rows in the returned job table.
    repaired : int
        Accepted rows with at least one repaired value.
    rejected : int
        Records left out of the table.
    folded : int
        Records merged into another record (e.g. SWF partial-execution lines).
    issues : list of Issue
        Every per-record action, in line order.
    notes : list of str
        File-level observations (header claims vs. actual counts, time origin, sort order, ...).
    header : dict
        Header fields the loader parsed (format-specific; for SWF e.g. ``{"MaxJobs": 527371}``).
    """

    source: str
    loader: str
    records_read: int = 0
    accepted: int = 0
    repaired: int = 0
    rejected: int = 0
    folded: int = 0
    issues: list[Issue] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)
    header: dict[str, Any] = dataclasses.field(default_factory=dict)

    def counts_by_reason(self) -> dict[tuple[str, str], int]:
        """Count issues by (action, reason).

        Returns
        -------
        dict
            ``{(action, reason): count}``, ordered by action (rejected, repaired, flagged, folded), then by count
            (largest first).
        """
        c = collections.Counter((i.action, i.reason) for i in self.issues)
        order = {a: k for k, a in enumerate(ACTIONS)}
        return dict(sorted(c.items(), key=lambda kv: (order[kv[0][0]], -kv[1], kv[0][1])))

    def first_error(self) -> Issue | None:
        """Return the first (lowest line) ``repaired`` or ``rejected`` issue, the one strict mode raises for.

        Returns
        -------
        Issue or None
            None when the load needed no repair and rejected nothing.
        """
        bad = [i for i in self.issues if i.action in ("repaired", "rejected")]
        if not bad:
            return None
        return min(bad, key=lambda i: (i.line if i.line is not None else -1))

    def unusable(self, strict: bool) -> dict[str, Any] | None:
        """Why this load is unusable, as :class:`TraceError` keyword arguments, or None; every loader raises
        ``TraceError(report.source, **problem)`` with it once the counts are final.

        Parameters
        ----------
        strict : bool
            Also report the first repaired or rejected record (:meth:`first_error`).

        Returns
        -------
        dict or None
            ``message`` (and for strict mode ``line``, ``field``, ``expected``, ``found``), in this order of
            precedence: ``records_read != accepted + rejected + folded`` (a loader bug: a record read but never
            accounted for); under ``strict`` the first repaired / rejected record; zero accepted jobs (with the
            load summary). None when the load is usable.
        """
        if self.records_read != self.accepted + self.rejected + self.folded:
            return {"message": f"internal count mismatch (loader bug, please report): {self.records_read} "
                               f"record(s) read != accepted {self.accepted} + rejected {self.rejected} + "
                               f"folded {self.folded}"}
        first = self.first_error() if strict else None
        if first is not None:
            return {"message": f"strict mode: record {first.action} ({first.reason})", "line": first.line,
                    "field": first.field, "expected": first.expected, "found": first.found}
        if self.accepted == 0:
            return {"message": f"{self.no_records_message('jobs')}\n{self.summary()}"}
        return None

    def top_reasons(self, n: int = 3) -> list[str]:
        """The ``n`` most common rejection reasons, each with its count and its first record's line, field, value.

        Parameters
        ----------
        n : int
            How many reasons.

        Returns
        -------
        list of str
            E.g. ``"bad_time x3 (first: line 2, gmt_create = '2024-11-15 16:57:50', expected a time (s))"``,
            most common first (ties: the reason met first).
        """
        rej = [i for i in self.issues if i.action == "rejected"]
        count = collections.Counter(i.reason for i in rej)
        first: dict[str, Issue] = {}
        for i in sorted(rej, key=lambda i: (i.line if i.line is not None else 1 << 62)):
            first.setdefault(i.reason, i)
        out = []
        for reason, k in sorted(count.items(), key=lambda kv: (-kv[1], first[kv[0]].line or 0))[:n]:
            ex = first[reason]
            where = f"line {ex.line}" if ex.line is not None else "no line"
            what = f"{ex.field} = {ex.found!r}" if ex.field else repr(ex.found)
            out.append(f"{reason} x{k} (first: {where}, {what}, expected {ex.expected})")
        return out

    def hints(self) -> list[str]:
        """What to change when records are rejected for a reason an option fixes.

        Returns
        -------
        list of str
            ``--map time_unit=datetime`` when a time field holds date-time text (request CSVs); ``--format`` when
            the rejected lines of a whitespace format hold commas (a CSV given as SWF); empty when none applies.
        """
        rej = [i for i in self.issues if i.action == "rejected"]
        out = []
        dt = next((i for i in rej if _DATETIME_TEXT.match(i.found or "")), None)
        if dt is not None:
            fix = ("--map time_unit=datetime" if self.loader == "request_csv"
                   else "the loader's time option (--map time_unit=datetime for request_csv)")
            out.append(f"{dt.field or 'a time field'} holds date-time text ({dt.found!r}, line {dt.line}) where a "
                       f"number was expected: give {fix}")
        if self.loader == "swf" and sum(1 for i in rej if "," in (i.found or "")) > len(rej) // 2 > 0:
            out.append("the rejected lines hold commas: this looks like a CSV, not SWF; give --format (hpctwin list "
                       "loaders)")
        return out

    def no_records_message(self, what: str = "jobs") -> str:
        """One line for a load that kept nothing: the counts, the most common reasons, and a hint when one applies.

        Parameters
        ----------
        what : str
            What the trace should have yielded (``jobs``, ``requests``).

        Returns
        -------
        str
            E.g. ``"the trace yields zero requests (3 record(s) read, 3 rejected); most common reasons: bad_time x3
            (first: line 2, gmt_create = '2024-11-15 16:57:50', expected a time (s)); hint: ..."``.
        """
        msg = f"the trace yields zero {what} ({self.records_read} record(s) read, {self.rejected} rejected)"
        reasons = self.top_reasons()
        if reasons:
            msg += "; most common reasons: " + "; ".join(reasons)
        for h in self.hints():
            msg += f"; hint: {h}"
        return msg

    def summary(self, max_examples: int = 3) -> str:
        """Return a human-readable summary: counts, notes, counts by reason with the first few examples.

        Parameters
        ----------
        max_examples : int
            Examples (with line numbers) shown per (action, reason), default 3.

        Returns
        -------
        str
            Several lines of text, no trailing newline.
        """
        lines = [
            f"{self.loader} load of {self.source}",
            f"  records read {self.records_read}: accepted {self.accepted} (repaired {self.repaired}), "
            f"rejected {self.rejected}, folded {self.folded}",
        ]
        for note in self.notes:
            lines.append(f"  note: {note}")
        by_reason = self.counts_by_reason()
        if by_reason:
            lines.append("  issues by reason:")
        for (action, reason), n in by_reason.items():
            lines.append(f"    {action:8s} {n:7d}  {reason}")
            examples = [i for i in self.issues if i.action == action and i.reason == reason][:max_examples]
            for ex in examples:
                lines.append(f"        e.g. {ex.describe()}")
        if self.records_read and self.rejected >= MANY_REJECTED * self.records_read:
            lines.append(f"  most records were rejected ({self.rejected} of {self.records_read}); most common "
                         f"reasons: {'; '.join(self.top_reasons())}")
        for h in self.hints():
            lines.append(f"  hint: {h}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """Return the report as plain JSON-serialisable Python objects, for run provenance.

        Returns
        -------
        dict
            Keys ``source, loader, records_read, accepted, repaired, rejected, folded, counts_by_reason`` (a dict
            ``"action:reason" -> count``), ``notes``, ``header`` and ``issues`` (list of dicts with the
            :class:`Issue` fields).
        """
        return {
            "source": self.source,
            "loader": self.loader,
            "records_read": int(self.records_read),
            "accepted": int(self.accepted),
            "repaired": int(self.repaired),
            "rejected": int(self.rejected),
            "folded": int(self.folded),
            "counts_by_reason": {f"{a}:{r}": int(n) for (a, r), n in self.counts_by_reason().items()},
            "notes": list(self.notes),
            "header": dict(self.header),
            "issues": [dataclasses.asdict(i) for i in self.issues],
        }


class _LoadResultBase(NamedTuple):
    jobs: pd.DataFrame
    report: LoadReport


class LoadResult(_LoadResultBase):
    """A loaded trace: the canonical job table and the report of what the loader did (+ optional power profiles).

    Unpacks as ``jobs, report = result`` (a 2-tuple, as before); ``profiles`` is an attribute, not a tuple item.

    Parameters
    ----------
    jobs : pandas.DataFrame
        The job table.
    report : LoadReport
        The load report.
    profiles : pandas.DataFrame, optional
        Measured power time series, see Attributes. None when the trace has none.

    Attributes
    ----------
    jobs : pandas.DataFrame
        Shape (n_jobs, >= 13), the canonical job table (:data:`jobs.table.JOB_COLUMNS`), sorted by submit time
        then job id, ``attrs["time_origin_unix_s"]`` set (NaN when the trace gives no absolute time). Loaders of
        traces with power telemetry add ``measured_node_power_W`` (float64, mean DC power per node over the run, W,
        NaN when unknown).
    report : LoadReport
        Counts, issues and notes.
    profiles : pandas.DataFrame or None
        Long table, shape (n_samples, 3): ``job_id`` (int64), ``t_offset_s`` (float64, s after the job's start,
        the sample's start), ``node_power_W`` (float64, mean DC power per node of the job over the sample, W);
        sorted by job id then offset; only jobs present in ``jobs``. None when the trace has no time series.
    """

    def __new__(cls, jobs: pd.DataFrame, report: LoadReport, profiles: pd.DataFrame | None = None) -> LoadResult:
        """Build the result; see the class docstring."""
        self = super().__new__(cls, jobs, report)
        self.profiles = profiles
        return self
