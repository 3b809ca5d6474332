"""Trace fields as data: what a format's column holds, what is bad in it, what the loader does, what it says.

Every loader checks its fields the same way: find the values that break a rule, report one issue per record
(``rejected``, ``repaired``, ``flagged``), then either drop the records or replace the values. The rules of a
format are rows of a table (:class:`FieldRule`, :class:`RejectRule`) and one engine applies them
(:func:`apply_repairs`, :func:`apply_rejections`), so that the checks a format makes are read in one place, next
to the text its load report prints, and a new format writes a table, not a loop.

Per-record formats (JSON lines, CSV rows read one by one: the request traces) name their fields with
:class:`RecordField` (where the value is, its parser, the report's text); :func:`parse_record` parses one record
and rejects it at its first bad field.

Formats whose records are text columns (sacct) or JSON / CSV objects (Batsim, Alibaba) name their fields with
:class:`TextField` (header names tried in order, unit, parser: Slurm durations, energies with unit suffixes,
plain numbers), read by :func:`read_text_fields`, and their checks with :class:`Check` rows (reject, repair or flag,
over any parsed field, with the fill a repair writes), applied in table order by :func:`apply_checks`.

The issue collectors (:class:`dataloaders._common.Issues` and the SWF loader's own) take the masks; the report's
counts and strict mode stay in :func:`dataloaders._common.finish_load`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pandas as pd

__all__ = ["Check", "FieldRule", "FrameColumns", "IssueSink", "RejectRule", "TextField", "apply_checks", "apply_rejections",
           "apply_repairs", "number_or_nan", "parse_record", "read_text_fields", "RecordField"]


class IssueSink(Protocol):
    """What the engine reports to: an ``add_mask`` as :meth:`dataloaders._common.Issues.add_mask`."""

    def add_mask(self, mask: np.ndarray, lines: np.ndarray, ids: np.ndarray | None, field: str, found: Any,
                 expected: str, action: str, reason: str) -> Any:
        """Add one issue per True entry of ``mask`` (see :meth:`dataloaders._common.Issues.add_mask`)."""


def _report(issues: IssueSink, bad: np.ndarray, lines: np.ndarray, ids: np.ndarray | None, field: str,
            found: Any, expected: str, action: str, reason: str) -> None:
    """The one place a table row's issues are reported (nothing to do when no row is bad)."""
    if bad.any():
        issues.add_mask(bad, lines, ids, field, found, expected, action, reason)


@dataclass(frozen=True)
class FieldRule:
    """One value field of a trace: its column, its missing marker, what is bad in it and how it is repaired.

    Attributes
    ----------
    column : int
        Column of the value matrix (e.g. the SWF field index, 0-based).
    field : str
        Name in the load report (the format's own field name).
    unit : str
        Unit of the values as the file holds them (``"s"``, ``"-"``); documentation of the table.
    bad : Callable[[np.ndarray], np.ndarray]
        Values -> bool mask of the bad ones (the missing marker is excluded by the engine).
    expected : str
        What a valid value looks like (the report's ``expected`` text).
    reason : str
        Machine-readable reason of the repair.
    fill : float
        Value a bad or missing entry is set to (the repair rule), e.g. NaN.
    missing : float or None
        The format's "missing" marker (SWF: -1); None when the field has none.
    missing_reason : str or None
        When set, every missing value is also reported (``flagged``) under this reason ...
    missing_expected : str
        ... with this ``expected`` text.
    action : str
        What the loader does to a bad value, ``"repaired"`` by default.
    """

    column: int
    field: str
    unit: str
    bad: Callable[[np.ndarray], np.ndarray]
    expected: str
    reason: str
    fill: float = float("nan")
    missing: float | None = None
    missing_reason: str | None = None
    missing_expected: str = ""
    action: str = "repaired"


@dataclass(frozen=True)
class RejectRule:
    """A check that makes a record unusable: the bad mask, the field and value shown, the report's text.

    Attributes
    ----------
    field : str
        Name in the load report.
    bad : Callable[[Any], np.ndarray]
        The loader's values -> bool mask of the records to reject.
    found : Callable[[Any], Any]
        The loader's values -> the value shown per record (an array, a scalar or a function of the row).
    expected : str
        What a valid value looks like.
    reason : str
        Machine-readable reason.
    hide_id : bool
        Report no job id (the id itself is what is wrong).
    """

    field: str
    bad: Callable[[Any], np.ndarray]
    found: Callable[[Any], Any]
    expected: str
    reason: str
    hide_id: bool = False


def apply_repairs(v: np.ndarray, rules: Sequence[FieldRule], lines: np.ndarray, ids: np.ndarray | None,
                  issues: IssueSink) -> dict[int, np.ndarray]:
    """Check and repair value fields, one :class:`FieldRule` after another, in table order.

    Parameters
    ----------
    v : np.ndarray
        Shape (n_records, n_fields): the values as the file holds them (not modified).
    rules : Sequence[FieldRule]
        The fields to check, in the order their issues are reported.
    lines : np.ndarray
        Shape (n_records,), int: line / record numbers.
    ids : np.ndarray | None
        Shape (n_records,): job ids.
    issues : IssueSink
        Where the issues go: first the missing values of a rule (``flagged``, when it has ``missing_reason``),
        then its bad values (``action``).

    Returns
    -------
    dict of int -> ndarray, shape (n_records,)
        Per rule's column, a repaired copy: bad and missing values set to the rule's ``fill``.
    """
    out: dict[int, np.ndarray] = {}
    for r in rules:
        x = v[:, r.column].copy()
        miss = x == r.missing if r.missing is not None else np.zeros(len(x), dtype=bool)
        if r.missing_reason is not None:
            _report(issues, miss, lines, ids, r.field, x, r.missing_expected, "flagged", r.missing_reason)
        bad = r.bad(x) & ~miss
        _report(issues, bad, lines, ids, r.field, x, r.expected, r.action, r.reason)
        x[bad | miss] = r.fill
        out[r.column] = x
    return out


def apply_rejections(values: Any, rules: Sequence[RejectRule], ok: np.ndarray, lines: np.ndarray,
                     ids: np.ndarray | None, issues: IssueSink) -> np.ndarray:
    """Reject the records that break a :class:`RejectRule`, one rule after another (a record is rejected once).

    Parameters
    ----------
    values : Any
        What the rules' ``bad`` and ``found`` read (the loader's value matrix).
    rules : Sequence[RejectRule]
        In the order they are checked.
    ok : np.ndarray
        Shape (n_records,), bool: records still usable before these rules (not modified).
    lines : np.ndarray
        Shape (n_records,), int: line / record numbers.
    ids : np.ndarray | None
        Shape (n_records,): job ids.
    issues : IssueSink
        Where each rejection goes (``rejected``).

    Returns
    -------
    ndarray of bool, shape (n_records,)
        ``ok`` minus the records rejected here.
    """
    ok = ok.copy()
    for r in rules:
        bad = ok & r.bad(values)
        if bad.any():
            rid = np.full(len(ok), np.nan) if r.hide_id or ids is None else ids
            _report(issues, bad, lines, rid, r.field, r.found(values), r.expected, "rejected", r.reason)
        ok &= ~bad
    return ok


@dataclass(frozen=True)
class Check:
    """One row of a format's check table: a rule over the parsed fields and what breaking it does.

    Attributes
    ----------
    field : str
        Name in the load report (the format's own field name).
    bad : Callable[[dict], np.ndarray]
        Parsed fields (name -> array of shape (n_records,)) -> bool mask of the records that break the rule.
        Only records still accepted are reported.
    found : Callable[[dict], Any] or str
        Parsed fields -> the value shown per record (an array, a list or a scalar), or one text for all.
    expected : str
        What a valid value looks like (the report's ``expected`` text); ``{name}`` is replaced by
        ``values[name]`` (a load option such as ``max_nodes`` or ``timezone``), ``{{`` and ``}}`` are braces.
    reason : str
        Machine-readable reason.
    action : str
        ``"rejected"`` (the record is dropped), ``"repaired"`` or ``"flagged"`` (kept).
    fill : tuple of (str, float) or None
        For a repair: the parsed field set, and the value it is set to, on the records reported.
    hide_id : bool
        Report no job id (the id itself is what is wrong, or is not known yet).
    when : Callable[[dict], bool] or None
        The rule applies only when this is true (e.g. the file has the column).
    """

    field: str
    bad: Callable[[dict[str, Any]], np.ndarray]
    found: Callable[[dict[str, Any]], Any] | str
    expected: str
    reason: str
    action: str = "rejected"
    fill: tuple[str, float] | None = None
    hide_id: bool = False
    when: Callable[[dict[str, Any]], bool] | None = None


def apply_checks(values: dict[str, Any], checks: Sequence[Check], ok: np.ndarray, lines: np.ndarray,
                 ids: np.ndarray | None, issues: IssueSink) -> np.ndarray:
    """Apply a check table in order: report every accepted record that breaks a row, then reject or repair it.

    Parameters
    ----------
    values : dict[str, Any]
        Parsed fields, name -> array of shape (n_records,); a repair's ``fill`` writes into it (in place).
    checks : Sequence[Check]
        In the order they are checked (a record is rejected once: later rows see only the records kept).
    ok : np.ndarray
        Shape (n_records,), bool: records still usable before these rows (not modified).
    lines : np.ndarray
        Shape (n_records,), int: line / record numbers.
    ids : np.ndarray | None
        Shape (n_records,): job ids (None when not known).
    issues : IssueSink
        Where the issues go.

    Returns
    -------
    ndarray of bool, shape (n_records,)
        ``ok`` minus the records rejected here.
    """
    ok = ok.copy()
    for c in checks:
        if c.when is not None and not c.when(values):
            continue
        bad = ok & c.bad(values)
        if bad.any():
            found = c.found if isinstance(c.found, str) else c.found(values)
            _report(issues, bad, lines, None if c.hide_id else ids, c.field, found, c.expected.format_map(values),
                    c.action, c.reason)
        if c.action == "rejected":
            ok &= ~bad
        elif c.fill is not None:
            values[c.fill[0]][bad] = c.fill[1]
    return ok


@dataclass(frozen=True)
class TextField:
    """One field of a text-column format: the header names that hold it, its unit, how its text is parsed.

    Attributes
    ----------
    name : str
        Key of the parsed values (``values[name]``; ``values[name + "_bad"]`` the unparsable texts,
        ``values[name + "_text"]`` the stripped text read, or None when no column holds the field).
    columns : tuple of str
        Header names tried in order (case-insensitive); the first the file has is read.
    unit : str
        Unit of the parsed values (``"s"``, ``"J"``, ``"-"``).
    parse : Callable[[pandas.Series, str], tuple[np.ndarray, np.ndarray]]
        (stripped text column, the header name read) -> (float values in ``unit``, bool mask of unparsable texts).
    missing : float
        Value of every record when no column holds the field (NaN by default).
    """

    name: str
    columns: tuple[str, ...]
    unit: str
    parse: Callable[[Any, str], tuple[np.ndarray, np.ndarray]]
    missing: float = float("nan")


class TextColumns(Protocol):
    """What :func:`read_text_fields` reads from: stripped text columns by case-insensitive name."""

    def has(self, name: str) -> bool:
        """Whether the file has the column ``name``."""

    def get(self, name: str) -> Any:
        """Column ``name`` (a pandas Series of stripped text), or None."""


def read_text_fields(cols: TextColumns, fields: Sequence[TextField], n: int) -> dict[str, Any]:
    """Parse a table of :class:`TextField` rows.

    Parameters
    ----------
    cols : TextColumns
        The file's text columns (e.g. the sacct loader's ``_Columns``).
    fields : Sequence[TextField]
        The fields to read.
    n : int
        Number of records (the length of a field no column holds).

    Returns
    -------
    dict
        ``name`` -> float array, shape (n,); ``name + "_bad"`` -> bool array, shape (n,); ``name + "_text"`` ->
        the text read (a Series) or None; ``name + "_column"`` -> the header name read or None.
    """
    out: dict[str, Any] = {}
    for f in fields:
        col = next((c for c in f.columns if cols.has(c)), None)
        if col is None:
            out[f.name], out[f.name + "_bad"] = np.full(n, f.missing), np.zeros(n, dtype=bool)
            out[f.name + "_text"] = None
        else:
            text = cols.get(col)
            out[f.name], out[f.name + "_bad"] = f.parse(text, col)
            out[f.name + "_text"] = text
        out[f.name + "_column"] = col
    return out


class FrameColumns:
    """:class:`TextColumns` over a table of text (CSV records): exact column names, values stripped.

    Parameters
    ----------
    df : pd.DataFrame
        The records, one column per field, values as text (object dtype).
    """

    def __init__(self, df: pd.DataFrame) -> None:
        self.df = df

    def has(self, name: str) -> bool:
        """Whether the table has the column ``name``.

        Parameters
        ----------
        name : str
            Column name (exact).

        Returns
        -------
        bool
            True when the column exists.
        """
        return name in self.df

    def get(self, name: str) -> pd.Series | None:
        """Column ``name`` as stripped text, or None.

        Parameters
        ----------
        name : str
            Column name (exact).

        Returns
        -------
        pandas.Series or None
            The stripped text of every record.
        """
        return self.df[name].astype(str).str.strip() if name in self.df else None


def number_or_nan(text: pd.Series, column: str) -> tuple[np.ndarray, np.ndarray]:
    """Parser of plain numbers: empty or non-numeric text -> NaN (the checks decide what a NaN means).

    Parameters
    ----------
    text : pd.Series
        Stripped text, shape (n,).
    column : str
        The header name read (unused: one rule for every column).

    Returns
    -------
    values : ndarray of float, shape (n,)
        The numbers (``inf`` / ``-inf`` as written).
    bad : ndarray of bool, shape (n,)
        Non-empty texts that are not numbers.
    """
    vals = pd.to_numeric(text.replace("", np.nan), errors="coerce").to_numpy(float)
    return vals, np.isnan(vals) & text.ne("").to_numpy()


@dataclass(frozen=True)
class RecordField:
    """One field of a per-record format: where its value is, how it is parsed, what a bad value says.

    Attributes
    ----------
    name : str
        Key of the parsed value.
    field : str
        Name in the load report.
    get : Callable[[Any], Any]
        Record -> the value as the file holds it.
    parse : Callable[[Any], Any]
        That value -> the parsed value, or None when it is bad (the record is then rejected).
    expected : str
        What a valid value looks like.
    reason : str
        Machine-readable reason of the rejection.
    unit : str
        Unit of the parsed value (documentation of the table).
    found : Callable[[Any], Any] or None
        Record -> the value shown in the report; None: the value ``get`` returns.
    """

    name: str
    field: str
    get: Callable[[Any], Any]
    parse: Callable[[Any], Any]
    expected: str
    reason: str
    unit: str = "-"
    found: Callable[[Any], Any] | None = None


def parse_record(rec: Any, fields: Sequence[RecordField],
                 reject: Callable[[str, Any, str, str], None]) -> dict[str, Any] | None:
    """Parse one record field by field; reject it at its first bad field.

    Parameters
    ----------
    rec : Any
        The record (a JSON object, a CSV row, ...), as the fields' ``get`` read it.
    fields : Sequence[RecordField]
        In the order they are checked.
    reject : Callable[[str, Any, str, str], None]
        Called once for a bad record with (field, value found, expected, reason); it reports the rejection (or
        raises, in strict mode).

    Returns
    -------
    dict[str, Any] or None
        Field name -> parsed value; None when the record was rejected.
    """
    out: dict[str, Any] = {}
    for f in fields:
        raw = f.get(rec)
        val = f.parse(raw)
        if val is None:
            reject(f.field, raw if f.found is None else f.found(rec), f.expected, f.reason)
            return None
        out[f.name] = val
    return out
