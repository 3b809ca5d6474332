"""Human names, units and one-line definitions of the headline metrics (``/summary``), for reports and the terminal.

Every key a run writes into ``/summary`` is in SI (J, s, W, kg). Its unit, kind, shown unit, human name and
definition are declared once, in the output schema's table :data:`scheduler_sim.io.schema.SUMMARY_METRICS`; this
module formats from it. A duration is shown in s, min, h or days by its magnitude
(:func:`scheduler_sim.io.schema.duration_unit`); a rate (per second) is shown as it is. A key the table does not
declare is shown in the group ``other``, in its stored SI value with the unit ``(undeclared)``: never converted by
guesswork from its name (tests/unit/test_report_units.py fails on any such key a run writes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...io.schema import SHOWN_UNITS, SUMMARY_METRICS, duration_unit, summary_metric
from ..units import IP_SHOWN, unit_system

__all__ = ["Shown", "GROUPS", "describe", "format_value", "format_with_unit", "grouped_rows", "column_unit",
           "is_declared"]


@dataclass(frozen=True)
class Shown:
    """How one ``/summary`` value is shown.

    Attributes
    ----------
    group : str
        One of :data:`GROUPS`.
    label : str
        Human name.
    unit : str
        Shown unit ("" for a ratio or a count; ``(undeclared)`` for a key the schema table does not declare).
    scale : float
        Factor from the SI value to the shown unit.
    definition : str
        One line: what the number is.
    fmt : str
        Format spec of the shown value.
    kind : str
        The metric's kind (:data:`scheduler_sim.io.schema.METRIC_KINDS`), ``undeclared`` for an unknown key.
    """

    group: str
    label: str
    unit: str
    scale: float
    definition: str
    fmt: str = ",.3f"
    kind: str = "undeclared"


GROUPS = ("schedule", "energy", "cooling", "water", "grid", "serving", "partition", "other")


def is_declared(key: str) -> bool:
    """True when the schema's :data:`~scheduler_sim.io.schema.SUMMARY_METRICS` declares ``key``."""
    return summary_metric(key) is not None


def _finite(value) -> float | None:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def describe(key: str, value: float | None = None) -> Shown:
    """How ``key`` is shown; a duration's unit depends on ``value`` (its magnitude), seconds when None.

    Parameters
    ----------
    key : str
        A ``/summary`` (or ``/attribution/totals``) key.
    value : float | None
        The SI value (a duration's unit is chosen by its magnitude).

    Returns
    -------
    Shown
        Group, label, shown unit, scale, definition, format and kind; an undeclared key gets the group ``other``,
        the unit ``(undeclared)`` and scale 1.
    """
    m = summary_metric(key)
    if m is None:
        return Shown("other", key.replace("_", " "), "(undeclared)", 1.0, f"({key}: not in the schema's table)",
                     ",.5g")
    label = m.label
    if "{" in m.key:  # name the part the key decides: "TTFT percentile (p50)", a partition's name
        i = m.key.index("{")
        tail = m.key[m.key.index("}") + 1:]
        part = key[i:len(key) - len(tail)] if tail else key[i:]
        label = f"{label} ({part})"
    if m.kind == "duration":
        v = _finite(value)
        unit, fmt = duration_unit(v if v is not None else 0.0)
        return Shown(m.group, label, unit, SHOWN_UNITS[unit][1], m.definition, fmt, m.kind)
    unit, scale = m.shown, SHOWN_UNITS[m.shown][1]
    if unit in IP_SHOWN and unit_system() == "ip":  # US customary units at the edge (scheduler_sim.analysis.units)
        unit, factor = IP_SHOWN[unit]
        scale *= factor
    return Shown(m.group, label, unit, scale, m.definition, m.fmt, m.kind)


def column_unit(key: str, values: object) -> Shown:
    """How a column of values of one key is shown in one unit (a duration: by the column's largest magnitude).

    Parameters
    ----------
    key : str
        The ``/summary`` key of the column.
    values : object
        A sequence of float: the SI values.

    Returns
    -------
    Shown
        As :func:`describe`, the unit chosen for the whole column.
    """
    finite = [abs(v) for v in (_finite(x) for x in values) if v is not None]
    return describe(key, max(finite) if finite else None)


def format_value(key: str, value: float, shown: Shown | None = None) -> str:
    """The value of ``key`` in its shown unit (``n/a`` for NaN / infinite values: e.g. PUE without a plant).

    Parameters
    ----------
    key : str
        The ``/summary`` key.
    value : float
        The SI value.
    shown : Shown | None
        The unit to use (a table column's, :func:`column_unit`); None: :func:`describe` of this value.

    Returns
    -------
    str
        The formatted number (no unit).
    """
    v = _finite(value)
    if v is None:
        try:
            float(value)
        except (TypeError, ValueError):
            return str(value)
        return "n/a"
    m = shown or describe(key, v)
    return format(v * m.scale, m.fmt)


def format_with_unit(key: str, value: float) -> str:
    """``"<value> <unit>"`` of a ``/summary`` key, for the terminal (``n/a`` alone for a NaN)."""
    m = describe(key, value)
    text = format_value(key, value, m)
    return text if text == "n/a" or not m.unit else f"{text} {m.unit}"


def grouped_rows(summary: dict[str, float]) -> list[tuple[str, list[tuple[str, str, str, str]]]]:
    """Rows of the report's metric table: [(group, [(label, value, unit, definition), ...]), ...] in GROUPS order.

    Keys follow the order of the schema table inside a group, then undeclared keys alphabetically.
    """
    order = {m.key: i for i, m in enumerate(SUMMARY_METRICS)}

    def rank(k: str) -> tuple[int, str]:
        m = summary_metric(k)
        return (order[m.key] if m is not None else len(order), k)

    by: dict[str, list] = {g: [] for g in GROUPS}
    for k in sorted(summary, key=rank):
        m = describe(k, summary[k])
        by.setdefault(m.group, []).append((m.label, format_value(k, summary[k], m), m.unit, m.definition))
    return [(g, rows) for g, rows in by.items() if rows]
