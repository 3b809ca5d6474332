"""Monthly table of a run longer than a month (issue #28 item 7): energy, PUE, WUE, cost, CO2 and peak power by month.

Months are calendar months (UTC) of the run's dates when the file has a time origin, else 30-day blocks from the
run start. Every figure is summed over the output intervals that start in the month: energies are interval powers
x the interval length, PUE is the ratio of the month's facility and IT energies (The Green Grid, energy-weighted),
WUE the month's make-up water [L] / IT energy [kWh], peak power the largest interval average. Cost and CO2 are
the sums of ``/grid/timeseries`` (facility scope) when the run has a grid signal.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["MonthlyTable", "monthly_table", "MIN_SPAN_S"]

#: A run gets a monthly table when it is longer than this [s] (31 days).
MIN_SPAN_S = 31 * 86400.0


@dataclass
class MonthlyTable:
    """The monthly table.

    Attributes
    ----------
    header : tuple of str
        Column titles with units.
    rows : list of tuple of str
        One per month, formatted.
    values : pandas.DataFrame
        The same in SI (index: month label): ``E_facility_J``, ``E_it_J``, ``PUE``, ``WUE_L_per_kWh``,
        ``peak_P_facility_W``, ``days`` and, with a grid signal, ``cost``, ``co2_kg``.
    """

    header: tuple[str, ...]
    rows: list[tuple[str, ...]]
    values: pd.DataFrame


def _grid_column(grid_ts: dict[str, np.ndarray] | None, prefix: str) -> np.ndarray | None:
    """The facility-scope column of ``/grid/timeseries`` starting with ``prefix`` (``co2_kg``, ``cost``)."""
    if not grid_ts:
        return None
    names = sorted(k for k in grid_ts if k.startswith(prefix))
    pick = next((k for k in names if "facility" in k), names[0] if names else None)
    return np.asarray(grid_ts[pick], dtype=float) if pick else None


def monthly_table(time_s: np.ndarray, origin_unix_s: float, P_facility_W: np.ndarray, P_it_W: np.ndarray,
                  m_flow_makeup_kg_s: np.ndarray | None = None, grid_ts: dict[str, np.ndarray] | None = None,
                  currency: str = "", force: bool = False) -> MonthlyTable | None:
    """Group a run's interval series by month.

    Parameters
    ----------
    time_s : np.ndarray
        Shape (n,): interval starts [s, simulation time], equally spaced.
    origin_unix_s : float
        Unix time of simulation time 0 (NaN: 30-day blocks).
    P_facility_W : np.ndarray
        Shape (n,): interval-average facility power [W].
    P_it_W : np.ndarray
        Shape (n,): interval-average IT power [W].
    m_flow_makeup_kg_s : np.ndarray | None
        Shape (n,): tower make-up water [kg/s] (1 kg = 1 L).
    grid_ts : dict[str, np.ndarray] | None
        ``/grid/timeseries`` columns, each (n,): ``cost*`` [currency], ``co2_kg*`` [kg] per interval.
    currency : str
        Currency of the cost column.
    force : bool
        Build the table even for a run shorter than :data:`MIN_SPAN_S`.

    Returns
    -------
    MonthlyTable | None
        None when the run is not longer than a month (and not ``force``) or has fewer than 2 intervals.
    """
    t = np.asarray(time_s, dtype=float)
    if t.size < 2:
        return None
    dt = float(t[1] - t[0])
    if not force and t[-1] + dt - t[0] <= MIN_SPAN_S:
        return None
    if np.isfinite(origin_unix_s):
        when = pd.to_datetime(origin_unix_s + t, unit="s", utc=True)
        key = np.asarray(when.strftime("%Y-%m"))
    else:
        key = np.asarray([f"days {int(b) * 30}-{int(b) * 30 + 30}" for b in (t - t[0]) // (30 * 86400.0)])
    df = pd.DataFrame({"month": key, "E_facility_J": np.asarray(P_facility_W, float) * dt,
                       "E_it_J": np.asarray(P_it_W, float) * dt, "P": np.asarray(P_facility_W, float),
                       "n": 1})
    if m_flow_makeup_kg_s is not None:
        df["water_kg"] = np.asarray(m_flow_makeup_kg_s, float) * dt
    cost, co2 = _grid_column(grid_ts, "cost"), _grid_column(grid_ts, "co2_kg")
    if cost is not None and cost.size == t.size:
        df["cost"] = cost
    if co2 is not None and co2.size == t.size:
        df["co2_kg"] = co2
    g = df.groupby("month", sort=False)
    v = pd.DataFrame({"days": g["n"].sum() * dt / 86400.0, "E_facility_J": g["E_facility_J"].sum(),
                      "E_it_J": g["E_it_J"].sum(), "peak_P_facility_W": g["P"].max()})
    with np.errstate(invalid="ignore", divide="ignore"):
        v["PUE"] = v["E_facility_J"] / v["E_it_J"]
        if "water_kg" in df:
            v["WUE_L_per_kWh"] = g["water_kg"].sum() / (v["E_it_J"] / 3.6e6)
    for c in ("cost", "co2_kg"):
        if c in df:
            v[c] = g[c].sum()
    header = ["month", "days", "facility energy [MWh]", "IT energy [MWh]", "PUE [-]", "peak facility power [MW]"]
    if "WUE_L_per_kWh" in v:
        header.append("WUE [L/kWh]")
    if "cost" in v:
        header.append(f"energy cost [{currency or 'currency'}]")
    if "co2_kg" in v:
        header.append("CO2 [t]")
    rows = []
    for m, r in v.iterrows():
        row = [str(m), f"{r['days']:.1f}", f"{r['E_facility_J'] / 3.6e9:,.1f}", f"{r['E_it_J'] / 3.6e9:,.1f}",
               f"{r['PUE']:.4f}" if np.isfinite(r["PUE"]) else "n/a", f"{r['peak_P_facility_W'] / 1e6:,.3f}"]
        if "WUE_L_per_kWh" in v:
            row.append(f"{r['WUE_L_per_kWh']:.3f}" if np.isfinite(r["WUE_L_per_kWh"]) else "n/a")
        if "cost" in v:
            row.append(f"{r['cost']:,.0f}")
        if "co2_kg" in v:
            row.append(f"{r['co2_kg'] / 1e3:,.1f}")
        rows.append(tuple(row))
    return MonthlyTable(tuple(header), rows, v)
