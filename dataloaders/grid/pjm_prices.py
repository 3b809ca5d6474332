"""PJM real-time hourly LMP as processed by HewlettPackard/sustain-cluster (``Datetime``, ``Price (USD/MWh)``).

The timestamps are UTC hour starts without a zone suffix, although that repository's README calls them local time
(checked against PJM Data Miner 2 in ../shared/data/README.md: each year runs from Jan 1 05:00 UTC, local midnight
EST). Negative prices are legal and kept; prices outside ``price_range`` (default -1,000 to 10,000 USD/MWh,
:data:`dataloaders.grid.series.PRICE_RANGE_PER_MWH`) are rejected with their line. Values are converted to
USD / J (USD/MWh / 3.6e9).
"""

from __future__ import annotations

from pathlib import Path

from .series import J_PER_MWH, PRICE_RANGE_PER_MWH, GridSeries, GridSignalError, read_rows, regularise

__all__ = ["load", "TIME_COLUMN", "VALUE_COLUMN"]

TIME_COLUMN = "Datetime"
VALUE_COLUMN = "Price (USD/MWh)"


def load(path: Path, *, kind: str = "price", basis: str = "", strict: bool = False,
         price_range: tuple[float, float] = PRICE_RANGE_PER_MWH) -> GridSeries:
    """Read a PJM price file.

    Parameters
    ----------
    path : Path
        The CSV (or ``.csv.gz``).
    kind : str
        Must be ``"price"``.
    basis : str
        Ignored (prices have no basis).
    strict : bool
        Stop at the first bad record.
    price_range : tuple[float, float]
        Valid prices [USD/MWh], closed; a record outside is rejected with its line (default
        :data:`dataloaders.grid.series.PRICE_RANGE_PER_MWH`, -1,000 to 10,000).

    Returns
    -------
    GridSeries
        Hourly, USD / J.

    Raises
    ------
    GridSignalError
        Missing column, wrong kind or (strict) a bad record (file, line, field named).
    """
    if kind != "price":
        raise GridSignalError(str(path), "a PJM price file gives prices, not carbon intensity")
    t, v, ln, issues, rows = read_rows(Path(path), TIME_COLUMN, VALUE_COLUMN, scale=1.0 / J_PER_MWH, strict=strict,
                                       expected_value="a finite price in USD/MWh",
                                       bounds=tuple(price_range), unit="USD/MWh")
    t0, values, gaps = regularise(Path(path), t, v, ln, issues, strict=strict, time_col=TIME_COLUMN)
    return GridSeries(kind="price", t0_unix_s=t0, step_s=3600.0, values=values, unit="USD/MWh", currency="USD",
                      source=str(path), issues=issues, gaps=gaps, records_read=rows)
