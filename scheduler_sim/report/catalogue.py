"""Human names, units and one-line definitions of the headline metrics (``/summary``) for reports.

Every key a run writes into ``/summary`` is in SI (J, s, W, kg). A report shows it under a human name, in a
planner's unit, with its definition, grouped as schedule / energy / cooling / water / grid. A key missing from
:data:`METRICS` is still shown, in the group ``other``, with a unit derived from its suffix (``_J`` -> MWh, ``_W``
-> MW, ``_s`` -> h, ``_kg`` -> t), so that no value is ever shown under a raw key whose suffix contradicts its unit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["Metric", "METRICS", "GROUPS", "describe", "format_value", "grouped_rows"]


@dataclass(frozen=True)
class Metric:
    """How a ``/summary`` key is shown.

    Attributes
    ----------
    group : str
        One of :data:`GROUPS`.
    label : str
        Human name.
    unit : str
        Unit shown ("" for a ratio or a count).
    scale : float
        Factor from the SI value to the shown unit (e.g. 1/3.6e9 for J -> MWh).
    definition : str
        One line: what the number is.
    fmt : str
        Format spec of the shown value.
    """

    group: str
    label: str
    unit: str
    scale: float
    definition: str
    fmt: str = ",.3f"


GROUPS = ("schedule", "energy", "cooling", "water", "grid", "other")

_MWh = 1 / 3.6e9
_h = 1 / 3600.0
_MW = 1e-6

METRICS: dict[str, Metric] = {
    # schedule
    "jobs_simulated": Metric("schedule", "jobs simulated", "", 1, "jobs submitted in the window or carried into it",
                             ",.0f"),
    "jobs_completed": Metric("schedule", "jobs completed", "", 1, "jobs that ended within their requested time",
                             ",.0f"),
    "jobs_killed_walltime": Metric("schedule", "jobs killed at walltime", "", 1,
                                   "jobs ended by the scheduler at their requested time", ",.0f"),
    "jobs_not_run": Metric("schedule", "jobs never started", "", 1, "jobs still queued when the run stopped", ",.0f"),
    "jobs_cut_at_horizon": Metric("schedule", "jobs cut at the horizon", "", 1,
                                  "jobs still running at window end + max_drain_days, ended there", ",.0f"),
    "jobs_rejected_power_cap": Metric("schedule", "jobs above every power budget", "", 1,
                                      "jobs no power budget could admit (rejected)", ",.0f"),
    "utilisation": Metric("schedule", "utilisation", "%", 100, "busy node-seconds / (nodes x simulated span)", ".1f"),
    "utilisation_measured": Metric("schedule", "utilisation (measured span)", "%", 100,
                                   "as utilisation, warm-up and drain excluded", ".1f"),
    "mean_wait_s": Metric("schedule", "mean wait", "h", _h, "mean of start - max(submit, window start)", ",.2f"),
    "median_wait_s": Metric("schedule", "median wait", "h", _h, "median of start - max(submit, window start)",
                            ",.2f"),
    "mean_wait_before_window_s": Metric("schedule", "mean wait before the window", "h", _h,
                                        "mean of window start - submit, for jobs queued before the window", ",.2f"),
    "mean_turnaround_s": Metric("schedule", "mean turnaround", "h", _h, "mean of end - submit", ",.2f"),
    "mean_bounded_slowdown": Metric("schedule", "mean bounded slowdown", "", 1,
                                    "mean of max(1, turnaround / max(run time, 10 s))", ",.2f"),
    "awrt_s": Metric("schedule", "average weighted response time", "h", _h,
                     "sum(nodes x run x turnaround) / sum(nodes x run)", ",.2f"),
    "makespan_s": Metric("schedule", "makespan", "days", 1 / 86400, "last end - first submit", ",.2f"),
    "duration_s": Metric("schedule", "simulated span", "days", 1 / 86400, "length of the simulated run", ",.2f"),
    "throughput_jobs_per_day": Metric("schedule", "throughput", "jobs/day", 1,
                                      "jobs ended per simulated day", ",.1f"),
    # energy
    "E_node_dc_J": Metric("energy", "node DC energy", "MWh", _MWh, "energy the node components draw (DC side)"),
    "E_loss_J": Metric("energy", "conversion losses", "MWh", _MWh, "SIVOC/VRM + rectifier losses inside IT"),
    "loss_fraction": Metric("energy", "conversion losses share", "% of IT", 100, "conversion losses / IT energy",
                            ".2f"),
    "E_it_J": Metric("energy", "IT energy", "MWh", _MWh, "energy into the racks (node DC + conversion + overhead)"),
    "E_facility_J": Metric("energy", "facility energy", "MWh", _MWh, "IT energy + every modelled overhead"),
    "mean_P_it_W": Metric("energy", "mean IT power", "MW", _MW, "IT energy / simulated span", ",.4f"),
    "mean_P_facility_W": Metric("energy", "mean facility power", "MW", _MW, "facility energy / simulated span",
                                ",.4f"),
    "peak_P_facility_W": Metric("energy", "peak facility power", "MW", _MW, "largest output-interval average",
                                ",.4f"),
    "peak_P_facility_measured_W": Metric("energy", "peak facility power (measured span)", "MW", _MW,
                                         "as peak facility power, warm-up and drain excluded", ",.4f"),
    "PUE": Metric("energy", "PUE", "", 1, "facility energy / IT energy (The Green Grid, energy-weighted)", ".4f"),
    "ITUE": Metric("energy", "ITUE", "", 1, "IT energy / component energy (node DC + rack overhead)", ".4f"),
    "TUE": Metric("energy", "TUE", "", 1, "ITUE x PUE = facility energy / component energy", ".4f"),
    "EDP_Js": Metric("energy", "energy-delay product", "MWh h", _MWh * _h, "facility energy x makespan", ",.4g"),
    "ED2P_Js2": Metric("energy", "energy-delay-squared product", "MWh h^2", _MWh * _h * _h,
                       "facility energy x makespan^2", ",.4g"),
    # cooling
    "E_cooling_J": Metric("cooling", "cooling energy", "MWh", _MWh,
                          "pumps, tower fans and chiller of the modelled plant"),
    "E_cdu_pump_J": Metric("cooling", "CDU pumps", "MWh", _MWh, "secondary-loop pumps of the CDUs"),
    "E_facility_pump_J": Metric("cooling", "facility pumps", "MWh", _MWh, "facility (hot-water) loop pumps"),
    "E_tower_pump_J": Metric("cooling", "tower-water pumps", "MWh", _MWh, "condenser-water (tower loop) pumps"),
    "E_tower_fan_J": Metric("cooling", "cooling-tower fans", "MWh", _MWh, "fans of the cooling towers"),
    "E_chiller_J": Metric("cooling", "trim chiller", "MWh", _MWh, "electric input of the trim chiller"),
    "E_sivoc_loss_J": Metric("energy", "SIVOC / VRM losses", "MWh", _MWh, "node DC-DC conversion losses"),
    "E_rectifier_loss_J": Metric("energy", "rectifier losses", "MWh", _MWh, "rack AC-DC conversion losses"),
    "E_rack_overhead_J": Metric("energy", "rack overhead", "MWh", _MWh, "cabinet controllers and other rack loads"),
    "closure_rel_error": Metric("energy", "attribution closure error", "relative", 1,
                                "|sum of shares - total| / total, independent check", ".1e"),
    "E_fan_J": Metric("cooling", "cooling-tower fans", "MWh", _MWh, "fans of the cooling towers (cooling-only mode)"),
    "fan_share_of_cooling": Metric("cooling", "tower-fan share of cooling", "%", 100,
                                   "tower-fan energy / cooling energy", ".1f"),
    "power_scale": Metric("other", "power scale factor", "", 1, "factor applied to the measured power series", "g"),
    "leading_zero_rows_skipped": Metric("other", "leading zero rows skipped", "", 1,
                                        "rows of 0 kW before the series starts, left out", ",.0f"),
    # water
    "water_makeup_kg": Metric("water", "tower make-up water", "m3", 1 / 997.0,
                              "evaporation + drift + blowdown replaced (997 kg/m3)", ",.1f"),
    "WUE_L_per_kWh": Metric("water", "WUE", "L/kWh", 1, "make-up water [L] / IT energy [kWh] (The Green Grid)",
                            ".3f"),
}

_SUFFIX = (("_J", "MWh", _MWh), ("_W", "MW", _MW), ("_s", "h", _h), ("_kg", "t", 1e-3))


def describe(key: str) -> Metric:
    """The :class:`Metric` of a ``/summary`` key; an unknown key gets group ``other`` and a unit from its suffix."""
    if key in METRICS:
        return METRICS[key]
    for suf, unit, sc in _SUFFIX:
        if key.endswith(suf):
            return Metric("other", key[: -len(suf)].replace("_", " "), unit, sc, f"({key}, converted from SI)")
    return Metric("other", key.replace("_", " "), "", 1.0, f"({key})", ",.5g")


def format_value(key: str, value: float) -> str:
    """The value of ``key`` in its shown unit (``n/a`` for NaN / infinite values: e.g. PUE without a plant)."""
    m = describe(key)
    try:
        v = float(value)
    except (TypeError, ValueError):
        return str(value)
    if not math.isfinite(v):
        return "n/a"
    return format(v * m.scale, m.fmt)


def grouped_rows(summary: dict[str, float]) -> list[tuple[str, list[tuple[str, str, str, str]]]]:
    """Rows of the report's metric table: [(group, [(label, value, unit, definition), ...]), ...] in GROUPS order.

    Keys follow the order of :data:`METRICS` inside a group, then unknown keys alphabetically.
    """
    order = {k: i for i, k in enumerate(METRICS)}
    by: dict[str, list] = {g: [] for g in GROUPS}
    for k in sorted(summary, key=lambda k: (order.get(k, len(order)), k)):
        m = describe(k)
        by.setdefault(m.group, []).append((m.label, format_value(k, summary[k]), m.unit, m.definition))
    return [(g, rows) for g, rows in by.items() if rows]
