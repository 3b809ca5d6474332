"""Constant fallback carbon intensity per region: codecarbon's annual factors (shipped extract).

``dataloaders/data/grid/codecarbon_factors.json`` holds, unchanged, ``carbon_intensity`` (gCO2/kWh) per ISO3
country from codecarbon's ``global_energy_mix.json`` and ``emissions`` (lbs CO2/MWh) per US state from its
``2016/usa_emissions.json`` (mlco2/codecarbon @ b05965e, MIT). A US state's factor is converted with
1 lb = 0.45359237 kg: lbs/MWh x 0.45359237 = g/kWh. These are annual averages (no hourly shape) and codecarbon
does not say whether they are direct or life-cycle; they are used only where a series has a gap, and the run
says so.
"""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["carbon_factor_g_per_kwh", "LB_KG"]

#: Kilograms per avoirdupois pound (exact, international yard and pound agreement, 1959).
LB_KG = 0.45359237


def _table() -> dict:
    p = Path(__file__).resolve().parent.parent / "data" / "grid" / "codecarbon_factors.json"
    return json.loads(p.read_text(encoding="utf-8"))


def carbon_factor_g_per_kwh(region: str) -> tuple[float, str]:
    """The codecarbon annual carbon intensity of ``region`` [gCO2/kWh] and a description of where it came from.

    Parameters
    ----------
    region : str
        An ISO3 country code (``USA``, ``FIN``) or a US state name (``illinois``, ``tennessee``), any case.

    Returns
    -------
    (float, str)
        Intensity [g/kWh] and e.g. ``"codecarbon global_energy_mix.json USA (2023)"``.

    Raises
    ------
    ValueError
        If the region is in neither table (the message says what is accepted).
    """
    t = _table()
    key = region.strip()
    c = t["countries"].get(key.upper())
    if c is not None:
        return float(c["carbon_intensity_g_per_kWh"]), f"codecarbon global_energy_mix.json {key.upper()} ({c['year']})"
    s = t["us_states_lbs_per_MWh"].get(key.lower())
    if s is not None:
        return float(s) * LB_KG, f"codecarbon 2016/usa_emissions.json {key.lower()} ({s:g} lbs/MWh)"
    raise ValueError(f"no codecarbon factor for region {region!r}: give an ISO3 country code (e.g. USA, FIN) or a "
                     f"US state name (e.g. illinois)")
