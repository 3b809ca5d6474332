"""EIA-930 hourly fuel mix with average carbon intensity (HewlettPackard/dc-rl ``{BA}_NG_&_avgCI.csv``).

Columns used: ``timestamp`` (ISO 8601 with ``+00:00``, hour start) and ``avg_CI`` (gCO2eq/kWh): the
generation-weighted LIFE-CYCLE intensity of what the balancing authority generates, imports ignored (reproduced by
IPCC-style life-cycle medians, ../shared/data/README.md). There is no direct (combustion-only) column, so
``basis = "direct"`` is refused. Empty rows (e.g. PJM on the 2022 DST day) are rejected and become gaps.
"""

from __future__ import annotations

from pathlib import Path

from .series import CARBON_RANGE_G_PER_KWH, J_PER_KWH, GridSeries, GridSignalError, read_rows, regularise

__all__ = ["load", "TIME_COLUMN", "VALUE_COLUMN"]

TIME_COLUMN = "timestamp"
VALUE_COLUMN = "avg_CI"


def load(path: Path, *, kind: str = "carbon", basis: str = "lca", strict: bool = False) -> GridSeries:
    """Read an EIA-930 fuel-mix file's average intensity.

    Parameters
    ----------
    path : Path
        The CSV (or ``.csv.gz``).
    kind : str
        Must be ``"carbon"``.
    basis : str
        Must be ``"lca"``.
    strict : bool
        Stop at the first bad record.

    Returns
    -------
    GridSeries
        Hourly, kg CO2eq / J, basis ``lca``.

    Raises
    ------
    GridSignalError
        ``basis = "direct"``, a missing column or (strict) a bad record (file, line, field named).
    """
    if basis != "lca":
        raise GridSignalError(str(path), "EIA-930 avg_CI is a life-cycle intensity; there is no direct column",
                              field=VALUE_COLUMN, expected="basis = 'lca'")
    t, v, ln, issues, rows = read_rows(Path(path), TIME_COLUMN, VALUE_COLUMN, scale=1e-3 / J_PER_KWH, strict=strict,
                                       expected_value="a finite intensity in gCO2eq/kWh",
                                       bounds=CARBON_RANGE_G_PER_KWH, unit="gCO2eq/kWh")
    t0, values, gaps = regularise(Path(path), t, v, ln, issues, strict=strict, time_col=TIME_COLUMN)
    return GridSeries(kind="carbon", t0_unix_s=t0, step_s=3600.0, values=values, unit="gCO2eq/kWh", basis="lca",
                      source=str(path), issues=issues, gaps=gaps, records_read=rows)
