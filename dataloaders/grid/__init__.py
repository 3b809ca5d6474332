"""Grid signals: hourly carbon intensity and electricity price series, one loader per file format.

A grid signal is a step function of time: value ``v[i]`` holds on ``[t0 + i * step, t0 + (i + 1) * step)`` (Unix
seconds, UTC). Loaders read one file format each and return a :class:`GridSeries` on a regular grid; hours the file
does not give (a gap, or a record rejected as unreadable) are NaN there and the user of the series puts the
constant fallback in their place (:mod:`dataloaders.grid.fallback`), saying so.

Every record a loader rejects is reported with file, line and field (:class:`dataloaders.report.Issue`), as for
traces; with ``strict=True`` the first one is a :class:`dataloaders.report.TraceError` instead. Duplicated
timestamps keep the first record and report the others (``duplicate_time``); gaps are reported as ranges. Values
outside their physical or market range are rejected the same way (``out_of_range``): carbon intensity in [0, 2,000]
gCO2eq/kWh always, prices in [-1,000, 10,000] currency/MWh unless ``price_range`` (``grid.price_range_per_MWh``)
widens it.

Built-in formats (``format=`` names; :func:`guess_grid_format` recognises them by their header line):

=================  =================================================================================================
``electricitymaps`` Electricity Maps hourly CSV (``Datetime (UTC)``, ``Carbon Intensity gCO₂eq/kWh (direct)`` /
                   ``(LCA)``); carbon, basis ``direct`` or ``lca``
``pjm_prices``     PJM real-time hourly LMP as processed by HewlettPackard/sustain-cluster (``Datetime``,
                   ``Price (USD/MWh)``; UTC without zone suffix); price
``eia930``         EIA-930 fuel mix with ``avg_CI`` (HewlettPackard/dc-rl; ISO 8601 UTC timestamps); carbon,
                   life-cycle basis only
=================  =================================================================================================

Plugins: a package may add a format through the ``hpctwin.grid_loaders`` entry-point group (a callable
``load(path, kind, basis, strict) -> GridSeries``), as trace loaders do (:mod:`dataloaders.registry`).
"""

from __future__ import annotations

import importlib
import importlib.metadata
from pathlib import Path
from typing import Callable

from .series import (CARBON_RANGE_G_PER_KWH, PRICE_RANGE_PER_MWH, GridSeries, GridSignalError, check_bounds, read_rows,
                     regularise)

__all__ = ["GridSeries", "GridSignalError", "GRID_FORMATS", "available_grid_loaders", "guess_grid_format",
           "load_grid_series", "read_rows", "regularise", "shipped_grid_file"]

#: Entry-point group scanned for third-party grid-signal loaders.
ENTRY_POINT_GROUP = "hpctwin.grid_loaders"

#: Built-in formats: name -> ("module:function", kinds it can give, header text that identifies it).
GRID_FORMATS: dict[str, tuple[str, tuple[str, ...], str]] = {
    "electricitymaps": ("dataloaders.grid.electricitymaps:load", ("carbon",), "Datetime (UTC)"),
    "pjm_prices": ("dataloaders.grid.pjm_prices:load", ("price",), "Price (USD/MWh)"),
    "eia930": ("dataloaders.grid.eia930:load", ("carbon",), "avg_CI"),
}


def _plugins() -> dict[str, importlib.metadata.EntryPoint]:
    try:
        return {ep.name.lower(): ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}
    except Exception:  # noqa: BLE001 - broken metadata must not stop the built-in loaders
        return {}


def available_grid_loaders() -> dict[str, str]:
    """Name -> one-line description of every grid-signal format (built-in, then plugins)."""
    out = {n: f"{'/'.join(k)} series; header names {h!r}" for n, (_, k, h) in GRID_FORMATS.items()}
    for n in _plugins():
        out.setdefault(n, "plugin (hpctwin.grid_loaders)")
    return out


def _header_line(path: Path) -> str:
    from .series import open_text

    with open_text(path) as fh:
        return fh.readline()


def guess_grid_format(path: str | Path) -> str:
    """The built-in format whose header text appears in the file's first line.

    Parameters
    ----------
    path : str | Path
        The file (``.gz`` read transparently).

    Returns
    -------
    str
        The format name (a key of :data:`GRID_FORMATS`).

    Raises
    ------
    GridSignalError
        If the file cannot be read or no built-in format matches (the message lists the formats).
    """
    p = Path(path)
    try:
        head = _header_line(p)
    except OSError as exc:
        raise GridSignalError(str(p), f"cannot read the file ({exc.strerror or exc})") from None
    for name, (_, _, marker) in GRID_FORMATS.items():
        if marker in head:
            return name
    raise GridSignalError(str(p), "the header line names no known grid-signal format", line=1,
                          expected=f"one of {', '.join(GRID_FORMATS)} (set the format explicitly for a plugin)",
                          found=head.strip()[:80])


def _loader(name: str) -> Callable[..., GridSeries]:
    key = name.lower()
    if key in GRID_FORMATS:
        mod, fn = GRID_FORMATS[key][0].split(":")
        return getattr(importlib.import_module(mod), fn)
    eps = _plugins()
    if key in eps:
        return eps[key].load()
    raise ValueError(f"unknown grid-signal format {name!r}; known: {', '.join(available_grid_loaders())}")


def load_grid_series(path: str | Path, kind: str, *, format: str = "", basis: str = "lca",  # noqa: A002
                     strict: bool = False, price_range: tuple[float, float] = PRICE_RANGE_PER_MWH) -> GridSeries:
    """Read a carbon-intensity or price file into a :class:`GridSeries`.

    Parameters
    ----------
    path : str | Path
        The file (``.gz`` is read transparently).
    kind : str
        What the series must hold: ``"carbon"`` or ``"price"``.
    format : str
        Loader name; ``""`` guesses it from the header (:func:`guess_grid_format`).
    basis : str
        Carbon only: ``"direct"`` (combustion only) or ``"lca"`` (life-cycle) intensity.
    strict : bool
        Stop at the first rejected record or duplicate instead of reporting it.
    price_range : tuple[float, float]
        Price only: valid prices [currency/MWh], closed (default -1,000 to 10,000). Carbon intensities are always
        checked against [0, 2,000] gCO2eq/kWh (:data:`dataloaders.grid.series.CARBON_RANGE_G_PER_KWH`). A record
        outside is rejected with its line (built-in formats) or, for a plugin, its step is rejected by time.

    Returns
    -------
    GridSeries

    Raises
    ------
    GridSignalError
        If the file is unreadable, of another kind, or (strict) has a bad record; the message names the file, the
        line and the field. An unknown format name raises ValueError (from the registry lookup).
    """
    p = Path(path)
    if not p.is_file():
        raise GridSignalError(str(p), "grid-signal file not found")
    fmt = format or guess_grid_format(p)
    if fmt in GRID_FORMATS and kind not in GRID_FORMATS[fmt][1]:
        raise GridSignalError(str(p), f"format {fmt!r} gives a {'/'.join(GRID_FORMATS[fmt][1])} series, not {kind}")
    bounds = tuple(price_range) if kind == "price" else CARBON_RANGE_G_PER_KWH
    if not (len(bounds) == 2 and bounds[0] < bounds[1]):
        raise GridSignalError(str(p), f"price range {bounds!r} is not [low, high] with low < high",
                              field="grid.price_range_per_MWh")
    if fmt == "pjm_prices":
        return _loader(fmt)(p, kind=kind, basis=basis, strict=strict, price_range=bounds)
    series = _loader(fmt)(p, kind=kind, basis=basis, strict=strict)
    if fmt in GRID_FORMATS:  # the built-in carbon loaders check [0, 2000] g/kWh record by record, with the line
        return series
    return check_bounds(series, bounds, strict=strict)


def shipped_grid_file(name: str) -> Path:
    """Path of a grid file shipped in ``dataloaders/data/grid`` (see its ATTRIBUTION.md), e.g. ``pjm-carbon-2022``.

    Parameters
    ----------
    name : str
        ``pjm-carbon-2022`` (Electricity Maps US-MIDA-PJM 2022), ``fi-carbon-2022`` (Electricity Maps FI 2022) or
        ``pjm-price-2022`` (PJM real-time LMP, DOM zone, 2022).

    Returns
    -------
    Path
        The file.

    Raises
    ------
    ValueError
        If the name is not shipped.
    """
    files = {"pjm-carbon-2022": "US-MIDA-PJM_2022_hourly.csv.gz", "fi-carbon-2022": "FI_2022_hourly.csv.gz",
             "pjm-price-2022": "US-MIDA-PJM_electricity_prices_2022.csv.gz"}
    if name.lower() not in files:
        raise ValueError(f"no shipped grid file {name!r}; shipped: {', '.join(files)}")
    return Path(__file__).resolve().parent.parent / "data" / "grid" / files[name.lower()]
