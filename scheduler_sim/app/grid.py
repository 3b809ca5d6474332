"""Grid signals of a run from its configuration: load the files, choose the fallbacks, place them in simulation
time (:mod:`dataloaders.grid`, :mod:`scheduler_sim.analysis.grid`).
"""

from __future__ import annotations

import math
from pathlib import Path

from dataloaders.grid import GridSignalError, load_grid_series, shipped_grid_file
from dataloaders.grid.fallback import carbon_factor_g_per_kwh
from power.grid import StepSignal

from ..analysis.grid import signal_in_sim_time
from .config import DAY_S, CarbonPolicyConfig, GridConfig, RunConfig

__all__ = ["GridInputs", "build_grid_signals", "carbon_policy_params", "grid_file", "grid_from_flags"]

#: Policies that need a grid signal -> which one.
SIGNAL_POLICIES = {"carbon-aware": "carbon", "price-aware": "price"}


class GridInputs:
    """The run's grid signals in simulation time and what to record about them.

    Attributes
    ----------
    signals : dict of str -> power.grid.StepSignal
        ``carbon`` (always, possibly the constant fallback) and ``price`` (when a file or constant is given).
    attrs : dict
        Sources, units, basis, currency, calendar alignment, fallbacks (written as ``/grid`` attributes).
    notes : list of str
        Lines the run prints (loads, gaps, fallbacks).
    files : dict of str -> Path
        Files read, by role (``grid_carbon``, ``grid_price``).
    warnings : list of str
        Data warnings (rejected records, with the first lines): printed by every run, also under ``--quiet``,
        and written to the run file.
    """

    def __init__(self) -> None:
        self.signals: dict[str, StepSignal] = {}
        self.attrs: dict = {}
        self.notes: list[str] = []
        self.files: dict[str, Path] = {}
        self.warnings: list[str] = []

    def report_rejected(self, series) -> None:
        """Add a data warning for a series' rejected records (count by reason, the first three with their line)."""
        rej = [i for i in series.issues if i.action == "rejected"]
        if not rej:
            return
        by = {}
        for i in rej:
            by[i.reason] = by.get(i.reason, 0) + 1
        why = ", ".join(f"{n} {r}" for r, n in sorted(by.items()))
        first = "; ".join(i.describe() for i in rej[:3])
        self.warnings.append(f"grid: {series.source}: {len(rej)} {series.kind} record(s) rejected ({why}), the "
                             f"fallback holds there: {first}{' ...' if len(rej) > 3 else ''}")


def grid_file(spec: str) -> Path:
    """The file a ``grid.carbon`` / ``grid.price`` value names: a shipped series name (a bare word) or a path.

    Parameters
    ----------
    spec : str
        ``pjm-carbon-2022`` or a file path.

    Returns
    -------
    Path
        The file (a bare word that names no shipped series gives the ValueError of
        :func:`dataloaders.grid.shipped_grid_file`).
    """
    if spec and "/" not in spec and "\\" not in spec and "." not in spec:
        return shipped_grid_file(spec)
    return Path(spec)


def build_grid_signals(cfg: RunConfig, origin_unix_s: float, utc_offset_h: float | None) -> GridInputs:
    """Load the ``[grid]`` files and fallbacks and place them in simulation time.

    Parameters
    ----------
    cfg : RunConfig
        The run (``cfg.grid`` must be set; an empty section gives the constant carbon fallback only).
    origin_unix_s : float
        Unix time of simulation time 0 (NaN when the trace has no calendar).
    utc_offset_h : float | None
        Site UTC offset [h] from the weather file header (used when the trace has no calendar).

    Returns
    -------
    GridInputs

    Raises
    ------
    GridSignalError
        If a file is unusable (file, line and field named), or a price file has gaps and no
        ``price_fallback_per_MWh``; the fallback region's lookup raises ValueError when it is unknown.
    """
    g = cfg.grid or GridConfig()
    out = GridInputs()
    off = g.utc_offset_h if g.utc_offset_h is not None else (utc_offset_h if utc_offset_h is not None else 0.0)
    start = cfg.trace.window_start_days * DAY_S
    if g.carbon_fallback_g_per_kWh is not None:
        fb_g, fb_how = float(g.carbon_fallback_g_per_kWh), "grid.carbon_fallback_g_per_kWh"
    else:
        fb_g, fb_how = carbon_factor_g_per_kwh(g.carbon_region)
    series = None
    if g.carbon and g.carbon != "constant":
        path = grid_file(g.carbon)
        series = load_grid_series(path, "carbon", format=g.carbon_format, basis=g.carbon_basis, strict=g.strict)
        out.files["grid_carbon"] = path
        out.notes.append(series.describe())
        out.notes += [f"  {i.describe()}" for i in series.issues[:3]]
        out.report_rejected(series)
    sig, how = signal_in_sim_time(series, fb_g * 1e-3 / 3.6e6, origin_unix_s, calendar=g.calendar,
                                  utc_offset_h=off, run_start_s=start)
    out.signals["carbon"] = StepSignal(sig.edges_s, sig.values, sig.fallback, "carbon")
    out.attrs.update({"carbon_source": Path(series.source).name if series else "constant",
                      "carbon_basis": g.carbon_basis if series else "unspecified (codecarbon annual factor)",
                      "carbon_unit_in_file": "gCO2eq/kWh", "carbon_alignment": how,
                      "carbon_fallback_g_per_kWh": fb_g, "carbon_fallback_from": fb_how,
                      "carbon_gaps_h": sum(b - a for a, b in series.gaps) / 3600.0 if series else 0.0,
                      "carbon_rejected_records": sum(i.action == "rejected" for i in series.issues) if series else 0})
    where = "gaps and outside the series" if series else "the whole run"
    out.notes.append(f"carbon fallback {fb_g:.1f} gCO2eq/kWh from {fb_how} ({where})")
    pseries = None
    if g.price:
        path = grid_file(g.price)
        pseries = load_grid_series(path, "price", format=g.price_format, strict=g.strict,
                                   price_range=g.price_range_per_MWh)
        out.files["grid_price"] = path
        out.notes.append(pseries.describe())
        out.notes += [f"  {i.describe()}" for i in pseries.issues[:3]]
        out.report_rejected(pseries)
    if pseries is not None or g.price_fallback_per_MWh is not None:
        pfb = g.price_fallback_per_MWh
        lo, hi = g.price_range_per_MWh
        if pfb is not None and not lo <= pfb <= hi:
            raise GridSignalError("grid.price_fallback_per_MWh", f"constant price {pfb:g} {g.currency}/MWh is outside "
                                  f"the valid range", expected=f"a price in [{lo:g}, {hi:g}] (grid.price_range_per_MWh)")
        if pfb is None:
            if pseries.gaps:
                a, b = pseries.gaps[0]
                raise GridSignalError(str(pseries.source), f"{len(pseries.gaps)} gap(s) in the price series (first "
                                      f"from Unix {a:.0f} s for {(b - a) / 3600:g} h) and no constant for them",
                                      field="grid.price_fallback_per_MWh", expected="a constant price [currency/MWh]")
            pfb = float("nan")
        psig, phow = signal_in_sim_time(pseries, (pfb if math.isfinite(pfb) else 0.0) / 3.6e9, origin_unix_s,
                                        calendar=g.calendar, utc_offset_h=off, run_start_s=start)
        out.signals["price"] = StepSignal(psig.edges_s, psig.values, psig.fallback, "price")
        out.attrs.update({"price_source": Path(pseries.source).name if pseries else "constant", "currency": g.currency,
                          "price_alignment": phow, "price_fallback_per_MWh": pfb,
                          "price_gaps_h": sum(b - a for a, b in pseries.gaps) / 3600.0 if pseries else 0.0})
        if not math.isfinite(pfb):
            out.notes.append("price: no constant fallback; the run must stay inside the price series (checked "
                             "after the run)")
        else:
            out.notes.append(f"price fallback {pfb:g} {g.currency}/MWh (grid.price_fallback_per_MWh)")
    out.attrs["calendar"] = g.calendar
    return out


def carbon_policy_params(cfg: RunConfig, grid: GridInputs) -> dict:
    """Keyword arguments of the carbon- / price-aware policy factory (SI: s) from ``[scheduler.carbon]``.

    Parameters
    ----------
    cfg : RunConfig
        The run (its ``scheduler.policy`` and ``scheduler.carbon``).
    grid : GridInputs
        The run's signals.

    Returns
    -------
    dict
        ``signal``, ``slack_s``, ``slack_by_queue`` [s], ``max_estimate_s``, ``min_gain``, ``near_zero``,
        ``min_gain_abs`` [SI per J].

    Raises
    ------
    ValueError
        If the policy needs a price signal and the run has none.
    """
    kind = SIGNAL_POLICIES[cfg.scheduler.policy]
    if kind not in grid.signals:
        raise ValueError(f"policy {cfg.scheduler.policy!r} needs a {kind} signal: set grid.{kind} (or "
                         f"grid.price_fallback_per_MWh) or give --{kind} FILE")
    c: CarbonPolicyConfig = cfg.scheduler.carbon
    if kind == "price":
        near, gabs = c.near_zero_price_per_MWh / 3.6e9, c.min_gain_abs_price_per_MWh / 3.6e9
    else:
        near, gabs = c.near_zero_carbon_g_per_kWh * 1e-3 / 3.6e6, c.min_gain_abs_carbon_g_per_kWh * 1e-3 / 3.6e6
    return dict(signal=grid.signals[kind], slack_s=c.slack_h * 3600.0,
                slack_by_queue={k: v * 3600.0 for k, v in c.slack_by_queue.items()},
                max_estimate_s=c.max_estimate_h * 3600.0, min_gain=c.min_gain, near_zero=near, min_gain_abs=gabs)


def grid_from_flags(carbon: str | None, price: str | None) -> dict:
    """Configuration overrides for ``hpctwin run --carbon FILE --price FILE`` (files made absolute)."""
    ov: dict = {}
    for key, val in (("grid.carbon", carbon), ("grid.price", price)):
        if val is not None:
            p = Path(val)
            ov[key] = str(p.resolve()) if p.exists() else val
    return ov
