"""Electricity Maps hourly carbon-intensity CSV (the free 2021-2023 portal exports; ODbL).

Columns used: ``Datetime (UTC)`` (hour START, ``YYYY-MM-DD HH:MM:SS``, UTC without zone) and
``Carbon Intensity gCO₂eq/kWh (direct)`` or ``Carbon Intensity gCO₂eq/kWh (LCA)``: consumption-based (flow-traced,
imports included) intensity; direct = combustion only, LCA = life cycle (Electricity Maps methodology,
https://www.electricitymaps.com/methodology). Values are converted to kg CO2eq / J (g/kWh x 1e-3 / 3.6e6).
"""

from __future__ import annotations

from pathlib import Path

from .series import CARBON_RANGE_G_PER_KWH, J_PER_KWH, GridSeries, GridSignalError, read_rows, regularise

__all__ = ["load", "TIME_COLUMN", "VALUE_COLUMNS"]

TIME_COLUMN = "Datetime (UTC)"
#: basis -> column
VALUE_COLUMNS = {"direct": "Carbon Intensity gCO₂eq/kWh (direct)", "lca": "Carbon Intensity gCO₂eq/kWh (LCA)"}


def load(path: Path, *, kind: str = "carbon", basis: str = "lca", strict: bool = False) -> GridSeries:
    """Read an Electricity Maps hourly file.

    Parameters
    ----------
    path : Path
        The CSV (or ``.csv.gz``).
    kind : str
        Must be ``"carbon"``.
    basis : str
        Which intensity column: ``"direct"`` or ``"lca"``.
    strict : bool
        Stop at the first bad record.

    Returns
    -------
    GridSeries
        Hourly, kg CO2eq / J.

    Raises
    ------
    GridSignalError
        Unknown basis, missing column, or (strict) a bad record (file, line, field named).
    """
    if basis not in VALUE_COLUMNS:
        raise GridSignalError(str(path), f"unknown carbon basis {basis!r}", expected="'direct' or 'lca'")
    col = VALUE_COLUMNS[basis]
    t, v, ln, issues, rows = read_rows(Path(path), TIME_COLUMN, col, scale=1e-3 / J_PER_KWH, strict=strict,
                                       expected_value="a finite intensity in gCO2eq/kWh",
                                       bounds=CARBON_RANGE_G_PER_KWH, unit="gCO2eq/kWh")
    t0, values, gaps = regularise(Path(path), t, v, ln, issues, strict=strict, time_col=TIME_COLUMN)
    return GridSeries(kind="carbon", t0_unix_s=t0, step_s=3600.0, values=values, unit="gCO2eq/kWh", basis=basis,
                      source=str(path), issues=issues, gaps=gaps, records_read=rows)
