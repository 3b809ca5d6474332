"""The HDF5 output schema, written once: a declarative table of every group, dataset and attribute hpctwin writes.

Every writer goes through :class:`SchemaWriter`, which refuses a path the table does not declare and takes the
unit and ``long_name`` of a dataset from the table; :func:`validate_file` checks a file against the table (unknown
paths, wrong dtype, shape or unit, missing required entries); docs/output_schema.md is generated from the table and
the prose of docs/output_schema.in.md by ``python -m scheduler_sim.io.schema_doc``.

An :class:`Entry` names one object by its HDF5 path. ``{name}`` in a path stands for one path component (a column,
a series or a metric whose name the run decides: a plant output, a loader's extra column). An attribute is written
``<object path>@<attribute name>`` (``/@schema_version`` is a root attribute). Shapes are tuples of dimension names
(``n_jobs``, ``n_intervals``, ``n_cdus`` ...) or integers; one file gives each name one size, which the validator
checks across datasets. An empty dataset (size 0) passes any dtype class: the columns of an empty table keep
pandas' default dtype (a serving-only run's ``/metrics/by_size/group`` is float64). A dataset's ``units`` and
``long_name`` attributes are implied by its entry and not listed separately.

The tables per file kind (root attribute ``kind``; a file without it is a run file): :data:`RUN`,
:data:`SWEEP_SUMMARY`, :data:`COOLING_STANDALONE` and :data:`INCENTIVE_STUDY`, collected in :data:`TABLES`.
"""

from __future__ import annotations

import re
import weakref
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import h5py
import numpy as np

from jobs.table import JOB_COLUMNS

__all__ = ["Entry", "SchemaError", "SchemaWriter", "chunk_rows", "TABLES", "KIND_VERSIONS", "RUN", "RUN_SUMMARY", "SWEEP_SUMMARY",
           "track_sources", "untrack_sources", "COOLING_STANDALONE", "INCENTIVE_STUDY", "unit_of", "lookup",
           "validate_file", "shape_conflicts",
           "check_file", "SCHEMA_VERSION", "DTYPES", "file_kind", "Metric", "METRIC_KINDS", "SHOWN_UNITS",
           "SUMMARY_METRICS", "summary_metric", "duration_unit"]

#: Version of the run file schema (root attribute ``schema_version``); a minor version adds, never changes.
SCHEMA_VERSION = "1.2"


class SchemaError(ValueError):
    """A file, or a write, that does not follow the output schema (the message names the file and the path)."""


def unit_of(name: str) -> str:
    """Unit of a quantity from its name suffix (``_W`` -> W, ``_J`` -> J, ``_K`` -> K, ``_s`` -> s, ...).

    Parameters
    ----------
    name : str
        Quantity name, e.g. ``P_it_W``.

    Returns
    -------
    str
        The SI unit, ``"1"`` (dimensionless) when the name has no unit suffix.
    """
    for suffix, unit in (("_W", "W"), ("_J", "J"), ("_K", "K"), ("_s", "s"), ("_kg_s", "kg/s"), ("_Pa", "Pa"),
                         ("_m3_s", "m3/s"), ("_kg", "kg"), ("_m3", "m3")):
        if name.endswith(suffix):
            return unit
    return "1"


#: dtype classes of the table: name -> (test on a numpy dtype, meaning).
DTYPES = {
    "float64": (lambda d: d == np.float64, "IEEE float64"),
    "float": (lambda d: d.kind == "f", "float64, or float32 where the table says a series may be stored so"),
    "int": (lambda d: d.kind in "iu", "integer (any width)"),
    "bool": (lambda d: d.kind == "b", "boolean"),
    "number": (lambda d: d.kind in "iufb", "integer, float or boolean"),
    "str": (lambda d: d.kind in "OSU", "UTF-8 text"),
    "group": (None, "HDF5 group"),
    "link": (None, "HDF5 external link"),
}


@dataclass(frozen=True)
class Entry:
    """One declared group, dataset, attribute or link of an output file.

    Parameters
    ----------
    path : str
        HDF5 path; ``{name}`` matches one path component; ``<object>@<attribute>`` for an attribute.
    dtype : str
        A key of :data:`DTYPES`.
    shape : tuple of (str or int), or None
        Dimension names or sizes of a dataset (``()`` a scalar attribute); None: any shape.
    unit : str or None
        The ``units`` attribute a dataset carries (SI; ``"1"`` dimensionless; ``""`` text); for an attribute the
        unit of its value (documentation only). None: the writer gives the unit (plant outputs, loader columns).
    description : str
        What it holds, with any formula; written as the dataset's ``long_name`` when ``long_name`` is True.
    since : str
        Schema version that added it.
    required : bool
        Every file of this kind has it (for a ``{name}`` pattern: at least one match).
    long_name : bool
        Write ``description`` as the dataset's ``long_name`` attribute.
    has_units : bool
        The dataset carries a ``units`` attribute (text tables of the sweep summary do not).
    """

    path: str
    dtype: str
    shape: tuple | None = None
    unit: str | None = None
    description: str = ""
    since: str = "1.0"
    required: bool = False
    long_name: bool = False
    has_units: bool = True

    def __post_init__(self) -> None:
        if self.dtype not in DTYPES:
            raise ValueError(f"schema entry {self.path}: unknown dtype class {self.dtype!r}")

    @property
    def kind(self) -> str:
        """``attribute``, ``group``, ``link`` or ``dataset``."""
        if "@" in self.path:
            return "attribute"
        return self.dtype if self.dtype in ("group", "link") else "dataset"

    @property
    def is_pattern(self) -> bool:
        """True when the path holds a ``{name}`` placeholder."""
        return "{" in self.path

    @cached_property
    def regex(self) -> re.Pattern:
        """Compiled regular expression of the path (a placeholder matches one component)."""
        parts = re.split(r"(\{[^}]*\})", self.path)
        return re.compile("".join("[^/@]+" if p.startswith("{") else re.escape(p) for p in parts) + r"\Z")


def _ds(path, dtype, shape, unit, description, **kw) -> Entry:
    return Entry(path, dtype, tuple(shape), unit, description, **kw)


def _attr(path, dtype, description, unit=None, shape=(), **kw) -> Entry:
    return Entry(path, dtype, shape, unit, description, **kw)


def _group(path, description, **kw) -> Entry:
    return Entry(path, "group", None, None, description, **kw)


# ------------------------------------------------------------------------------------------ /summary metrics
#: Kinds of a headline metric: how a report or the terminal shows it (see :func:`Metric` and docs/output_schema.md).
METRIC_KINDS = ("duration", "rate", "energy", "power", "temperature", "ratio", "count", "mass", "volume",
                "money", "intensity", "product")

#: Shown units: name -> (SI unit of the stored value, factor from the SI value to the shown unit).
SHOWN_UNITS: dict[str, tuple[str, float]] = {
    "": ("1", 1.0), "%": ("1", 100.0), "% of IT": ("1", 100.0), "relative": ("1", 1.0),
    "s": ("s", 1.0), "min": ("s", 1 / 60.0), "h": ("s", 1 / 3600.0), "days": ("s", 1 / 86400.0),
    "ms": ("s", 1e3), "J": ("J", 1.0), "kJ": ("J", 1e-3), "kWh": ("J", 1 / 3.6e6), "MWh": ("J", 1 / 3.6e9),
    "W": ("W", 1.0), "kW": ("W", 1e-3), "MW": ("W", 1e-6), "MW/min": ("W/s", 60e-6), "kg": ("kg", 1.0),
    "t": ("kg", 1e-3), "t CO2eq": ("t", 1.0), "m3": ("kg", 1 / 997.0), "degC": ("K", 1.0), "K": ("K", 1.0),
    "req/s": ("1/s", 1.0), "tokens/s": ("1/s", 1.0), "events/s": ("1/s", 1.0), "jobs/day": ("1/day", 1.0),
    "L/kWh": ("L/kWh", 1.0), "g/kWh": ("g/kWh", 1.0), "per MWh": ("currency/MWh", 1.0),
    "currency": ("currency", 1.0), "per kJ": ("1/kJ", 1.0), "MWh h": ("J s", 1 / 3.6e9 / 3600.0),
    "MWh h^2": ("J s2", 1 / 3.6e9 / 3600.0 ** 2),
}


@dataclass(frozen=True)
class Metric:
    """One headline metric of ``/summary``: its stored SI unit, kind, shown unit, human name and definition.

    The single declaration of a summary key's unit: the schema doc, the report (scheduler_sim.analysis.report) and
    the terminal summary (``hpctwin run``) all read it from :data:`SUMMARY_METRICS`.

    Parameters
    ----------
    key : str
        The ``/summary`` attribute name; ``{name}`` stands for one part the run decides (a partition name, a
        ramp duration).
    group : str
        Report group: schedule, energy, cooling, water, grid, serving, partition, other.
    label : str
        Human name.
    unit : str
        SI unit of the stored value (``"1"`` dimensionless).
    kind : str
        One of :data:`METRIC_KINDS`. A ``duration`` is shown in s, min, h or days by its magnitude
        (:func:`duration_unit`); a ``rate`` (per second) is never converted as a duration.
    shown : str or None
        Shown unit (a key of :data:`SHOWN_UNITS`); None for a duration (chosen by magnitude).
    definition : str
        One line: what the number is.
    fmt : str
        Format spec of the shown value (a duration uses :func:`duration_unit`'s).
    """

    key: str
    group: str
    label: str
    unit: str
    kind: str
    shown: str | None
    definition: str
    fmt: str = ",.3f"

    def __post_init__(self) -> None:
        if self.kind not in METRIC_KINDS:
            raise ValueError(f"summary metric {self.key}: unknown kind {self.kind!r}")
        if self.shown is None and self.kind != "duration":
            raise ValueError(f"summary metric {self.key}: only a duration may leave its shown unit to its magnitude")
        if self.shown is not None and SHOWN_UNITS[self.shown][0] != self.unit:
            raise ValueError(f"summary metric {self.key}: shown unit {self.shown!r} is not a unit of {self.unit!r}")

    @cached_property
    def regex(self) -> re.Pattern:
        """Compiled regular expression of the key (a ``{name}`` placeholder matches any text)."""
        parts = re.split(r"(\{[^}]*\})", self.key)
        return re.compile("".join(".+?" if p.startswith("{") else re.escape(p) for p in parts) + r"\Z")


def duration_unit(max_abs_s: float) -> tuple[str, str]:
    """Shown unit and format of a duration, chosen by its magnitude (the report's and the terminal's one rule).

    Below 120 s: seconds (``.3g``, so 0.0123 s keeps three digits); below 2 h: minutes; below 72 h: hours; else
    days (``,.2f`` for minutes, hours and days).

    Parameters
    ----------
    max_abs_s : float
        The largest magnitude to show in one unit [s] (one value, or the largest of a table column).

    Returns
    -------
    tuple of (str, str)
        Shown unit (``s``, ``min``, ``h`` or ``days``) and format spec.
    """
    v = abs(max_abs_s) if np.isfinite(max_abs_s) else 0.0
    if v < 120.0:
        return "s", ".3g"
    if v < 7200.0:
        return "min", ",.2f"
    if v < 72 * 3600.0:
        return "h", ",.2f"
    return "days", ",.2f"


def _M(key, group, label, unit, kind, shown, definition, fmt=",.3f") -> Metric:
    return Metric(key, group, label, unit, kind, shown, definition, fmt)


_CNT = ",.0f"
#: Every key a run writes into ``/summary`` and ``/attribution/totals`` (and a cooling-only file's summary), in
#: report order.
SUMMARY_METRICS: tuple[Metric, ...] = (
    # schedule
    _M("jobs_simulated", "schedule", "jobs simulated", "1", "count", "", "jobs submitted in the window or carried "
       "into it", _CNT),
    _M("jobs_completed", "schedule", "jobs completed", "1", "count", "", "jobs that ended within their requested "
       "time", _CNT),
    _M("jobs_killed_walltime", "schedule", "jobs killed at walltime", "1", "count", "", "jobs ended by the "
       "scheduler at their requested time", _CNT),
    _M("jobs_not_run", "schedule", "jobs never started", "1", "count", "", "jobs still queued when the run stopped",
       _CNT),
    _M("jobs_cut_at_horizon", "schedule", "jobs cut at the horizon", "1", "count", "", "jobs still running at "
       "window end + max_drain_days, ended there", _CNT),
    _M("jobs_rejected_power_cap", "schedule", "jobs above every power budget", "1", "count", "", "jobs no power "
       "budget could admit (rejected)", _CNT),
    _M("utilisation", "schedule", "utilisation", "1", "ratio", "%", "busy node-seconds / (nodes x simulated span)",
       ".1f"),
    _M("utilisation_measured", "schedule", "utilisation (measured span)", "1", "ratio", "%", "as utilisation, "
       "warm-up and drain excluded", ".1f"),
    _M("mean_wait_s", "schedule", "mean wait", "s", "duration", None, "mean of start - max(submit, window start)"),
    _M("median_wait_s", "schedule", "median wait", "s", "duration", None, "median of start - max(submit, window "
       "start)"),
    _M("mean_wait_before_window_s", "schedule", "mean wait before the window", "s", "duration", None, "mean of "
       "window start - submit, for jobs queued before the window"),
    _M("mean_turnaround_s", "schedule", "mean turnaround", "s", "duration", None, "mean of end - submit"),
    _M("mean_bounded_slowdown", "schedule", "mean bounded slowdown", "1", "ratio", "", "mean of max(1, turnaround "
       "/ max(run time, 10 s))", ",.2f"),
    _M("awrt_s", "schedule", "average weighted response time", "s", "duration", None, "sum(nodes x run x "
       "turnaround) / sum(nodes x run)"),
    _M("makespan_s", "schedule", "makespan", "s", "duration", None, "last end - first submit"),
    _M("duration_s", "schedule", "simulated span", "s", "duration", None, "length of the simulated run"),
    _M("throughput_jobs_per_day", "schedule", "throughput", "1/day", "rate", "jobs/day", "jobs ended per simulated "
       "day", ",.1f"),
    # energy
    _M("E_node_dc_J", "energy", "node DC energy", "J", "energy", "MWh", "energy the node components draw (DC side)"),
    _M("E_loss_J", "energy", "conversion losses", "J", "energy", "MWh", "SIVOC/VRM + rectifier losses inside IT"),
    _M("loss_fraction", "energy", "conversion losses share", "1", "ratio", "% of IT", "conversion losses / IT "
       "energy", ".2f"),
    _M("E_it_J", "energy", "IT energy", "J", "energy", "MWh", "energy into the racks (node DC + conversion + "
       "overhead)"),
    _M("E_facility_J", "energy", "facility energy", "J", "energy", "MWh", "IT energy + every modelled overhead"),
    _M("E_mechanical_J", "energy", "mechanical energy", "J", "energy", "MWh", "liquid plant + air side"),
    _M("E_air_side_J", "cooling", "air side", "J", "energy", "MWh", "CRAH fans + chilled water for the heat that "
       "goes to air"),
    _M("E_electrical_loss_J", "energy", "electrical chain losses", "J", "energy", "MWh", "transformer + "
       "switchgear + UPS + PDU losses (the stages counted)"),
    _M("E_lighting_J", "energy", "lighting and controls", "J", "energy", "MWh", "lighting and building controls"),
    _M("mean_P_it_W", "energy", "mean IT power", "W", "power", "MW", "IT energy / simulated span", ",.4f"),
    _M("mean_P_facility_W", "energy", "mean facility power", "W", "power", "MW", "facility energy / simulated "
       "span", ",.4f"),
    _M("peak_P_facility_W", "energy", "peak facility power", "W", "power", "MW", "largest output-interval average",
       ",.4f"),
    _M("peak_P_facility_measured_W", "energy", "peak facility power (measured span)", "W", "power", "MW", "as peak "
       "facility power, warm-up and drain excluded", ",.4f"),
    _M("PUE", "energy", "PUE", "1", "ratio", "", "facility energy / IT energy (The Green Grid, energy-weighted)",
       ".4f"),
    _M("pPUE_mechanical", "energy", "partial PUE, mechanical", "1", "ratio", "", "(IT + mechanical energy) / IT "
       "energy", ".4f"),
    _M("pPUE_electrical", "energy", "partial PUE, electrical", "1", "ratio", "", "(IT + electrical loss) / IT "
       "energy", ".4f"),
    _M("PUE_liquid_plant", "cooling", "PUE of the liquid plant alone", "1", "ratio", "", "(IT + liquid cooling "
       "energy) / IT energy", ".4f"),
    _M("ITUE", "energy", "ITUE", "1", "ratio", "", "IT energy / component energy (node DC + rack overhead)", ".4f"),
    _M("TUE", "energy", "TUE", "1", "ratio", "", "ITUE x PUE = facility energy / component energy", ".4f"),
    _M("EDP_Js", "energy", "energy-delay product", "J s", "product", "MWh h", "facility energy x makespan", ",.4g"),
    _M("ED2P_Js2", "energy", "energy-delay-squared product", "J s2", "product", "MWh h^2", "facility energy x "
       "makespan^2", ",.4g"),
    # cooling
    _M("E_cooling_J", "cooling", "cooling energy", "J", "energy", "MWh", "pumps, tower fans and chiller of the "
       "modelled plant"),
    _M("E_cdu_pump_J", "cooling", "CDU pumps", "J", "energy", "MWh", "secondary-loop pumps of the CDUs"),
    _M("E_facility_pump_J", "cooling", "facility pumps", "J", "energy", "MWh", "facility (hot-water) loop pumps"),
    _M("E_tower_pump_J", "cooling", "tower-water pumps", "J", "energy", "MWh", "condenser-water (tower loop) pumps"),
    _M("E_tower_fan_J", "cooling", "cooling-tower fans", "J", "energy", "MWh", "fans of the cooling towers"),
    _M("E_chiller_J", "cooling", "trim chiller", "J", "energy", "MWh", "electric input of the trim chiller"),
    _M("E_sivoc_loss_J", "energy", "SIVOC / VRM losses", "J", "energy", "MWh", "node DC-DC conversion losses"),
    _M("E_rectifier_loss_J", "energy", "rectifier losses", "J", "energy", "MWh", "rack AC-DC conversion losses"),
    _M("E_rack_overhead_J", "energy", "rack overhead", "J", "energy", "MWh", "cabinet controllers and other rack "
       "loads"),
    _M("E_transformer_loss_J", "energy", "transformer losses", "J", "energy", "MWh", "medium-voltage transformer "
       "no-load + load loss"),
    _M("E_switchgear_loss_J", "energy", "switchgear losses", "J", "energy", "MWh", "switchgear, busway and cabling "
       "loss"),
    _M("E_ups_loss_J", "energy", "UPS losses", "J", "energy", "MWh", "UPS loss on the share of IT on UPS"),
    _M("E_pdu_loss_J", "energy", "PDU losses", "J", "energy", "MWh", "power distribution unit loss"),
    _M("E_air_fan_J", "cooling", "air-handler fans", "J", "energy", "MWh", "CRAH fans for the heat that goes to air"),
    _M("E_air_chiller_J", "cooling", "chilled water for air", "J", "energy", "MWh", "chilled-water power for the "
       "air side"),
    _M("decomposition_rel_error", "energy", "decomposition closure error", "1", "ratio", "relative", "|sum of the "
       "facility parts - facility| / facility", ".1e"),
    _M("closure_rel_error", "energy", "attribution closure error", "1", "ratio", "relative", "|sum of shares - "
       "total| / total, independent check", ".1e"),
    _M("E_fan_J", "cooling", "cooling-tower fans", "J", "energy", "MWh", "fans of the cooling towers (cooling-only "
       "mode)"),
    _M("fan_share_of_cooling", "cooling", "tower-fan share of cooling", "1", "ratio", "%", "tower-fan energy / "
       "cooling energy", ".1f"),
    _M("E_air_heat_J", "cooling", "heat to room air", "J", "energy", "MWh", "heat the air side removes (heat, not "
       "power; cooling-only mode)"),
    _M("E_chiller_elec_J", "cooling", "trim chiller", "J", "energy", "MWh", "electric input of the trim chiller "
       "(cooling-only mode)"),
    _M("E_tower_rejected_J", "cooling", "heat rejected by the towers", "J", "energy", "MWh", "heat the cooling "
       "towers reject: racks' heat, pumps' shaft work, chiller and air side (heat, not power; cooling-only mode)"),
    _M("E_pump_fac_J", "cooling", "facility pumps", "J", "energy", "MWh", "facility (hot-water) loop pumps "
       "(cooling-only mode)"),
    _M("E_pump_sec_J", "cooling", "CDU pumps", "J", "energy", "MWh", "secondary-loop pumps of the CDUs "
       "(cooling-only mode)"),
    _M("E_pump_tower_J", "cooling", "tower-water pumps", "J", "energy", "MWh", "condenser-water pumps (cooling-only "
       "mode)"),
    _M("pPUE_mech", "cooling", "partial PUE, mechanical", "1", "ratio", "", "(IT + mechanical energy) / IT energy "
       "(cooling-only mode)", ".4f"),
    _M("power_scale", "other", "power scale factor", "1", "ratio", "", "factor applied to the measured power "
       "series", "g"),
    _M("leading_zero_rows_skipped", "other", "leading zero rows skipped", "1", "count", "", "rows of 0 kW before "
       "the series starts, left out", _CNT),
    _M("tower_cells_held", "cooling", "tower cells held", "1", "count", "", "tower cells run throughout (hpctwin "
       "cooling --cells); 0: staged by the supervisory controller (cooling-only mode)", _CNT),
    _M("tower_cell_switches", "cooling", "tower cell stage changes", "1", "count", "", "changes of the supervisory "
       "stager's command (cooling-only mode)", _CNT),
    _M("tower_cells_min", "cooling", "fewest tower cells running", "1", "count", "", "fewest cells with the fan "
       "running in any step (cooling-only mode)", _CNT),
    _M("tower_cells_max", "cooling", "most tower cells running", "1", "count", "", "most cells with the fan running "
       "in any step (cooling-only mode)", _CNT),
    _M("tower_cells_mean", "cooling", "mean tower cells running", "1", "count", "", "time average of the cells "
       "with the fan running (cooling-only mode)", ".2f"),
    # water
    _M("water_makeup_kg", "water", "tower make-up water", "kg", "volume", "m3", "evaporation + drift + blowdown "
       "replaced (997 kg/m3)", ",.1f"),
    _M("WUE_L_per_kWh", "water", "WUE", "L/kWh", "intensity", "L/kWh", "make-up water [L] / IT energy [kWh] (The "
       "Green Grid)", ".3f"),
    # grid: cost and CO2 (scheduler_sim.analysis.grid)
    _M("grid_co2_t", "grid", "CO2 (facility)", "t", "mass", "t CO2eq", "facility energy x carbon intensity, per "
       "interval", ",.2f"),
    _M("grid_carbon_mean_g_per_kWh", "grid", "mean carbon intensity", "g/kWh", "intensity", "g/kWh", "CO2 / "
       "facility energy (energy-weighted)", ".1f"),
    _M("grid_carbon_fallback_fraction", "grid", "carbon fallback share", "1", "ratio", "%", "share of the energy "
       "priced at the constant fallback", ".2f"),
    _M("grid_cost", "grid", "energy cost (facility)", "currency", "money", "currency", "facility energy x price, "
       "per interval", ",.0f"),
    _M("grid_price_mean_per_MWh", "grid", "mean price", "currency/MWh", "intensity", "per MWh", "cost / facility "
       "energy (energy-weighted)", ".2f"),
    _M("grid_price_fallback_fraction", "grid", "price fallback share", "1", "ratio", "%", "share of the energy "
       "at the constant fallback price", ".2f"),
    # grid: events, ramps, battery (scheduler_sim.app.grid_run)
    _M("grid_events", "grid", "grid events", "1", "count", "", "demand-response events in the run", _CNT),
    _M("grid_events_met", "grid", "grid events met", "1", "count", "", "events whose target the facility met", _CNT),
    _M("grid_events_infeasible", "grid", "grid events infeasible", "1", "count", "", "events no schedule could "
       "meet", _CNT),
    _M("grid_jobs_delayed_by_events", "grid", "jobs delayed by events", "1", "count", "", "jobs held back by an "
       "event", _CNT),
    _M("grid_jobs_delayed_by_ramp", "grid", "jobs delayed by the ramp limit", "1", "count", "", "jobs held back by "
       "the ramp limit", _CNT),
    _M("grid_start_ramp_violations", "grid", "start ramp violations", "1", "count", "", "job starts that broke "
       "the ramp limit", _CNT),
    _M("grid_ramp_{D}s_with_battery_W", "grid", "largest ramp with the battery", "W", "power", "MW", "largest "
       "facility power change over D s, grid side of the battery", ",.4f"),
    _M("grid_ramp_{D}s_W", "grid", "largest ramp", "W", "power", "MW", "largest facility power change over D s",
       ",.4f"),
    _M("grid_amplitude_at_period_with_battery_W", "grid", "amplitude at the period, with battery", "W", "power",
       "MW", "spectral amplitude of the grid-side power at the given period", ",.4f"),
    _M("grid_amplitude_at_period_max_with_battery_W", "grid", "largest amplitude at the period, with battery", "W",
       "power", "MW", "largest windowed amplitude, grid side", ",.4f"),
    _M("grid_amplitude_at_period_W", "grid", "amplitude at the period", "W", "power", "MW", "spectral amplitude of "
       "the facility power at the given period", ",.4f"),
    _M("grid_amplitude_at_period_max_W", "grid", "largest amplitude at the period", "W", "power", "MW", "largest "
       "windowed amplitude of the facility power", ",.4f"),
    _M("grid_ramp_limit_W_per_s", "grid", "ramp limit", "W/s", "rate", "MW/min", "configured facility ramp "
       "limit", ",.3f"),
    _M("grid_ramp_violations_with_battery", "grid", "ramp violations with the battery", "1", "count", "", "minutes "
       "over the ramp limit, grid side", _CNT),
    _M("grid_ramp_violations", "grid", "ramp violations", "1", "count", "", "minutes over the ramp limit", _CNT),
    _M("grid_soft_start_deficit_J", "grid", "soft-start energy deficit", "J", "energy", "MWh", "energy not drawn "
       "while jobs ramp up softly"),
    _M("grid_ramp_down_filler_J", "grid", "ramp-down filler energy", "J", "energy", "MWh", "energy of filler load "
       "while jobs ramp down"),
    _M("battery_E_loss_J", "grid", "battery losses", "J", "energy", "MWh", "round-trip loss of the battery"),
    _M("battery_soc_min_J", "grid", "battery lowest charge", "J", "energy", "MWh", "lowest state of charge"),
    _M("battery_soc_max_J", "grid", "battery highest charge", "J", "energy", "MWh", "highest state of charge"),
    # serving partition (scheduler_sim.serving.metrics.summarize_serving, finish_serving)
    _M("serving_requests", "serving", "requests", "1", "count", "", "requests in the trace", _CNT),
    _M("serving_completed", "serving", "requests completed", "1", "count", "", "requests that finished", _CNT),
    _M("serving_rejected", "serving", "requests rejected", "1", "count", "", "requests the engine refused", _CNT),
    _M("serving_preemptions", "serving", "preemptions", "1", "count", "", "KV-cache preemptions", _CNT),
    _M("serving_output_tokens", "serving", "output tokens", "1", "count", "", "output tokens generated", _CNT),
    _M("serving_slo_met", "serving", "requests within the SLOs", "1", "count", "", "completed requests within both "
       "TTFT and TPOT SLOs", _CNT),
    _M("serving_recompute_cached_tokens", "serving", "recomputed cached tokens", "1", "count", "", "tokens "
       "recomputed after a preemption", _CNT),
    _M("serving_ttft_{percentile}_s", "serving", "TTFT", "s", "duration", None, "time to first token, the "
       "percentile in the key"),
    _M("serving_tpot_{percentile}_s", "serving", "TPOT", "s", "duration", None, "time per output token after "
       "the first, the percentile in the key"),
    _M("serving_e2e_{percentile}_s", "serving", "end-to-end latency", "s", "duration", None, "finish - arrival, "
       "the percentile in the key"),
    _M("serving_span_s", "serving", "serving span", "s", "duration", None, "first arrival to last finish"),
    _M("serving_slo_attainment", "serving", "SLO attainment", "1", "ratio", "%", "completed requests within both "
       "TTFT and TPOT SLOs / requests", ".1f"),
    _M("serving_goodput_req_s", "serving", "goodput", "1/s", "rate", "req/s", "SLO-met requests per second of "
       "span", ",.3f"),
    _M("serving_tokens_per_s", "serving", "output tokens per second", "1/s", "rate", "tokens/s", "output tokens / "
       "span", ",.1f"),
    _M("serving_tokens_per_s_per_gpu", "serving", "tokens per second per GPU", "1/s", "rate", "tokens/s", "output "
       "tokens / span / GPUs", ",.1f"),
    _M("serving_tokens_per_s_per_user", "serving", "tokens per second per user", "1/s", "rate", "tokens/s", "mean "
       "decode rate a request sees", ",.1f"),
    _M("serving_J_per_token_{scope}", "serving", "energy per output token", "J", "energy", "J", "scope energy "
       "(gpu, it, facility) / output tokens", ",.3f"),
    _M("serving_slo_met_per_kJ_facility", "serving", "SLO-met requests per kJ (facility)", "1/kJ", "intensity",
       "per kJ", "SLO-met requests / facility energy [kJ]", ",.3f"),
    _M("serving_PUE_run", "serving", "PUE of the run", "1", "ratio", "", "the facility PUE the partition's energy "
       "is scaled by", ".4f"),
    _M("serving_E_{scope}_J", "serving", "serving energy", "J", "energy", "kWh", "energy of the scope in the key "
       "(gpu, it, facility, kv_transfer, server_fan, partition_node_dc)", ",.3f"),
    _M("serving_kv_transfers", "serving", "KV transfers", "1", "count", "", "prefill-to-decode KV-cache transfers",
       _CNT),
    _M("serving_prefix_hit_tokens", "serving", "prefix-cache hit tokens", "1", "count", "", "prompt tokens served "
       "from the prefix cache", _CNT),
    _M("serving_engine_wall_time_s", "serving", "engine wall time", "s", "duration", None, "wall time the serving "
       "engine took (volatile)"),
    _M("serving_engine_events", "serving", "engine events", "1", "count", "", "events the serving engine handled",
       _CNT),
    _M("serving_engine_events_per_s", "serving", "engine events per wall second", "1/s", "rate", "events/s",
       "engine events / engine wall time", ",.0f"),
    # partitions (scheduler_sim.kernel.metrics, a partitioned system)
    _M("partition_{name}_jobs", "partition", "jobs of the partition", "1", "count", "", "jobs the partition ran",
       _CNT),
    _M("partition_{name}_utilisation", "partition", "utilisation of the partition", "1", "ratio", "%", "busy "
       "node-seconds / (partition nodes x span)", ".1f"),
    _M("partition_{name}_mean_wait_s", "partition", "mean wait in the partition", "s", "duration", None, "mean "
       "wait of the partition's jobs"),
    _M("partition_{name}_E_it_J", "partition", "IT energy of the partition", "J", "energy", "MWh", "rack-input "
       "energy of the partition's nodes"),
    _M("partition_{name}_peak_it_W", "partition", "peak IT power of the partition", "W", "power", "MW", "largest "
       "interval IT power", ",.4f"),
    _M("partition_{name}_peak_rack_W", "partition", "peak rack power of the partition", "W", "power", "kW",
       "largest interval power of one rack", ",.1f"),
)
_METRIC_BY_KEY = {m.key: m for m in SUMMARY_METRICS if "{" not in m.key}
_METRIC_PATTERNS = [m for m in SUMMARY_METRICS if "{" in m.key]


def summary_metric(key: str) -> Metric | None:
    """The declaration of a ``/summary`` key (exact key first, then the patterns in table order); None: undeclared.

    Parameters
    ----------
    key : str
        A ``/summary`` attribute name.

    Returns
    -------
    Metric or None
        Its :class:`Metric`, None when :data:`SUMMARY_METRICS` does not declare it.
    """
    if key in _METRIC_BY_KEY:
        return _METRIC_BY_KEY[key]
    return next((m for m in _METRIC_PATTERNS if m.regex.match(key)), None)


# ------------------------------------------------------------------------------------------------- run files
#: long_name of the facility series written by the kernel (``/timeseries/facility/<name>``), in order.
FACILITY_SERIES = {
    "P_node_dc_W": "Node component (DC) power, all nodes",
    "P_sivoc_loss_W": "VRM/SIVOC conversion loss, all nodes",
    "P_rectifier_loss_W": "Rectifier conversion loss, all racks",
    "P_rack_overhead_W": "Rack overhead devices (switches), all racks",
    "P_it_W": "IT power: rack input incl. conversion losses",
    "P_cooling_W": "Liquid cooling plant electrical power (pumps + fans + chiller)",
    "P_transformer_loss_W": "Medium-voltage transformer loss (no-load + load loss)",
    "P_switchgear_loss_W": "Switchgear, busway and cabling loss",
    "P_ups_loss_W": "UPS loss (on the share of the IT load that sits on UPS)",
    "P_pdu_loss_W": "PDU loss",
    "P_electrical_loss_W": "Electrical chain loss = transformer + switchgear + UPS + PDU",
    "Q_air_W": "Heat to room air: (1 - liquid_fraction) x IT + UPS and PDU loss + lighting (heat, not power)",
    "P_air_fan_W": "Air-handler / CRAH fan power for the heat that goes to air (not IT fans: those are IT)",
    "P_air_chiller_W": "Chilled-water power for the air side (0 while the economiser carries it)",
    "P_air_side_W": "Air side = CRAH fans + chilled water for air",
    "P_lighting_W": "Lighting and building controls (constant)",
    "P_mechanical_W": "Mechanical overhead = liquid plant P_cooling_W + air side",
    "P_facility_W": "Facility power = IT + mechanical + electrical-chain loss + lighting",
    "pPUE_mechanical": "Interval partial PUE of the mechanical plant = (IT + mechanical) / IT",
    "pPUE_electrical": "Interval partial PUE of the electrical chain = (IT + electrical loss) / IT",
    "PUE": "Interval PUE = interval facility energy / interval IT energy",
    "T_wb_K": "Outdoor wet-bulb temperature",
    "busy_nodes": "Time-averaged number of nodes running a job",
    "running_jobs": "Time-averaged number of running jobs",
    "queued_jobs": "Time-averaged number of queued jobs",
    "down_nodes": "Time-averaged number of down nodes",
}
#: Facility series every run file has (cooling on or off).
_FACILITY_REQUIRED = ("P_node_dc_W", "P_sivoc_loss_W", "P_rectifier_loss_W", "P_rack_overhead_W", "P_it_W",
                      "busy_nodes", "running_jobs", "queued_jobs")

#: long_name of the simulated per-job results (``/jobs/<column>``).
JOB_RESULTS = {
    "sim_start_s": "Simulated start time",
    "sim_end_s": "Simulated end time",
    "outcome": "Simulated outcome: 1 completed, 2 killed at requested wall time, 3 killed by node down, 0 not run",
    "prefilled": "Running when the window opened; placed first at the window start",
    "node_power_W": "DC power of each of the job's nodes while it runs (mean of the telemetry series if measured)",
    "node_power_model_W": "Node DC power the utilisation model gives for the job (written when measured power is used)",
    "energy_dc_J": "Node DC energy of the job = node_power_W * nodes * run_s",
    "energy_it_J": ("Rack-input energy of the job: its nodes' DC energy plus their attributed conversion losses and "
                    "overhead share"),
    "wait_s": "wait_s = sim_start_s - submit_time_s",
    "turnaround_s": "turnaround_s = sim_end_s - submit_time_s",
    "run_s": "run_s = sim_end_s - sim_start_s",
    "bounded_slowdown": "max(1, turnaround_s / max(run_s, 10 s))",
}
_JOB_RESULT_DTYPES = {"outcome": "int", "prefilled": "bool"}

#: long_name of the attribution quantities (``/attribution/<group>/<name>``).
ATTRIBUTION_QUANTITIES = {
    "E_it_J": "IT (rack-input) energy",
    "E_node_dc_J": "Node component (DC) energy",
    "E_sivoc_loss_J": "VRM/SIVOC conversion loss",
    "E_rectifier_loss_J": "Rectifier conversion loss",
    "E_rack_overhead_J": "Rack overhead devices (equal share per node-second)",
    "E_cdu_pump_J": "CDU secondary pump energy (share of the CDU's heat per interval)",
    "E_facility_pump_J": "Facility pump energy (share of the facility heat per interval)",
    "E_tower_pump_J": "Tower-water pump energy (share of the facility heat per interval; 0 if the plant has none)",
    "E_tower_fan_J": "Cooling-tower fan energy (share of the facility heat per interval)",
    "E_chiller_J": "Chiller energy (share of the facility heat per interval; 0 without a chiller)",
    "E_cooling_J": "Liquid cooling plant energy = CDU pumps + facility pumps + tower pumps + tower fans + chiller",
    "E_transformer_loss_J": "Medium-voltage transformer loss (share of IT power per interval)",
    "E_switchgear_loss_J": "Switchgear / busway / cabling loss (share of IT power per interval)",
    "E_ups_loss_J": "UPS loss (share of IT power per interval)",
    "E_pdu_loss_J": "PDU loss (share of IT power per interval)",
    "E_air_fan_J": "Air-handler / CRAH fan energy for heat that goes to air (share of IT power per interval)",
    "E_air_chiller_J": "Chilled water for the air side (share of IT power per interval; 0 on economiser)",
    "E_lighting_J": "Lighting and building controls (share of IT power per interval)",
    "E_electrical_loss_J": "Electrical chain loss = transformer + switchgear + UPS + PDU",
    "E_air_side_J": "Air side = air-handler fans + chilled water for air",
    "E_facility_J": "Facility energy = E_it_J + E_cooling_J + E_air_side_J + E_electrical_loss_J + E_lighting_J",
    "PUE_effective": "Effective PUE = E_facility_J / E_it_J",
}
#: Attribution quantities without a unit suffix that are dimensionless (or an index).
_ATTRIBUTION_DIMENSIONLESS = ("PUE", "PUE_cumulative", "PUE_effective", "cdu")


def attribution_unit(name: str) -> str:
    """Unit of an attribution quantity: ``1`` for PUEs and the CDU index, else from the name suffix.

    Parameters
    ----------
    name : str
        Quantity name.

    Returns
    -------
    str
        The unit.
    """
    return "1" if name in _ATTRIBUTION_DIMENSIONLESS else unit_of(name)


#: (units, long_name) of the ``/serving/requests`` columns.
REQUEST_COLUMNS = {
    "request_id": ("1", "Request identifier (arrival order)"),
    "arrival_time_s": ("s", "Arrival time, trace time relative to the serving window start"),
    "prompt_tokens": ("1", "Prompt length [tokens]"),
    "output_tokens": ("1", "Generated tokens"),
    "prefix_block_ids": ("", "Prompt KV-block ids, space separated ('' when none)"),
    "replica": ("1", "Replica the router chose"),
    "first_token_s": ("s", "Time the first output token was produced (end of the prefill step; end of the KV "
                           "transfer when disaggregated)"),
    "finish_s": ("s", "Time the last output token was produced"),
    "ttft_s": ("s", "ttft_s = first_token_s - arrival_time_s"),
    "e2e_s": ("s", "e2e_s = finish_s - arrival_time_s"),
    "tpot_s": ("s", "tpot_s = (finish_s - first_token_s) / (output_tokens - 1); NaN for one-token outputs"),
    "preemptions": ("1", "Times the request was preempted (KV cache full) and recomputed"),
    "status": ("1", "1 completed, 2 rejected (can never fit in the KV cache), 0 not done"),
    "cached_prompt_tokens": ("1", "Prompt tokens whose prefill the prefix cache skipped (last prefill)"),
    "recompute_cached_tokens": ("1", "Of cached_prompt_tokens, those in blocks the request wrote itself before a "
                                     "preemption (recompute saved, not a prefix hit)"),
    "decode_replica": ("1", "Replica that decoded the request (= replica unless prefill/decode disaggregated)"),
    "kv_transfer_s": ("s", "End of the KV transfer - end of the prefill (link queueing included); NaN if none"),
    "slo_met": ("1", "completed and ttft_s <= ttft_slo_s and (tpot_s <= tpot_slo_s or one-token output)"),
}
_REQUEST_DTYPES = {"prefix_block_ids": "str", "slo_met": "bool", "arrival_time_s": "float", "first_token_s": "float",
                   "finish_s": "float", "ttft_s": "float", "e2e_s": "float", "tpot_s": "float",
                   "kv_transfer_s": "float"}
_JOB_DTYPE_CLASS = {"int64": "int", "int8": "int", "float64": "float", "object": "str"}

#: ``/workload/training`` columns (issue #24): one row per training job of ``[[workload]]``; name -> (dtype class,
#: unit, description). Written by :func:`scheduler_sim.io.hdf5.write_workload_group`.
TRAINING_REPORT_COLUMNS = {
    "job_id": ("int", "1", "Job id (row of /jobs)"),
    "name": ("str", "", "Job name"),
    "model": ("str", "", "Training model"),
    "gpus": ("int", "1", "GPUs of the job (tp x pp x dp)"),
    "nodes": ("int", "1", "Nodes of the job"),
    "t_iter_s": ("float", "s", "Iteration time (compute + exposed communication + bubble)"),
    "t_compute_s": ("float", "s", "Compute time of one iteration (recomputation included)"),
    "exposed_comm_s": ("float", "s", "Exposed TP + PP + EP + DP communication per iteration"),
    "bubble_fraction": ("float", "1", "Pipeline bubble share of the pipelined work"),
    "mfu": ("float", "1", "Model FLOPs utilisation"),
    "memory_B": ("float", "B", "Memory per GPU of the first pipeline stage"),
    "tokens_per_iter": ("float", "1", "Tokens per iteration"),
    "P_node_mean_W": ("float", "W", "Node DC power averaged over whole iterations"),
    "P_node_compute_W": ("float", "W", "Node DC power in the compute phase"),
    "P_node_low_W": ("float", "W", "Node DC power in the lowest iteration phase (bubble or communication)"),
    "P_gpu_mean_W": ("float", "W", "GPU board power averaged over whole iterations (node model's GPU part)"),
    "checkpoint_interval_s": ("float", "s", "Training time between checkpoints"),
    "young_daly_s": ("float", "s", "Young/Daly optimal checkpoint interval sqrt(2 delta MTBF)"),
    "checkpoint_write_s": ("float", "s", "Time to write one checkpoint"),
    "n_checkpoints": ("int", "1", "Checkpoints written"),
    "n_failures": ("int", "1", "Failures (interruptions) of the job"),
    "lost_work_s": ("float", "s", "Training time lost to failures"),
    "down_s": ("float", "s", "Detection and restart time"),
    "wall_s": ("float", "s", "Wall time of the job"),
    "useful_s": ("float", "s", "Useful training time"),
    "ettr": ("float", "1", "Effective training time ratio, useful / wall (goodput of the job's time)"),
    "ettr_expected": ("float", "1", "Expected ETTR (renewal formula, jobs.training.expected_ettr)"),
    "iterations": ("float", "1", "Useful iterations"),
    "goodput_iter_per_s": ("float", "1/s", "Useful iterations per second of wall time"),
    "E_it_J": ("float", "J", "IT (rack-input) energy of the job (/attribution/jobs)"),
    "E_facility_J": ("float", "J", "Facility energy attributed to the job (/attribution/jobs)"),
    "PUE_effective": ("float", "1", "E_facility_J / E_it_J of the job"),
    "J_per_iteration_it": ("float", "J", "IT energy per useful iteration"),
    "J_per_iteration_facility": ("float", "J", "Facility energy per useful iteration"),
}
#: ``/workload/rl`` columns (issue #24): one row per RL pipeline of ``[[workload]] family = "rl"``.
RL_REPORT_COLUMNS = {
    "name": ("str", "", "Pipeline name"),
    "model": ("str", "", "Trainer model"),
    "mode": ("str", "", "sync or async"),
    "staleness_bound": ("int", "1", "Staleness bound k (async)"),
    "partial_segment": ("int", "1", "Partial-rollout tokens per sample per step (0 = off)"),
    "steps": ("int", "1", "RL steps"),
    "samples_trained": ("int", "1", "Samples the trainer trained on"),
    "makespan_s": ("float", "s", "End of the last step"),
    "mean_step_s": ("float", "s", "Makespan / steps"),
    "samples_per_s": ("float", "1/s", "Trained samples per second"),
    "idle_rollout": ("float", "1", "Idle fraction of the rollout pool"),
    "idle_reward": ("float", "1", "Idle fraction of the reward pool"),
    "idle_trainer": ("float", "1", "Idle fraction of the trainer"),
    "staleness_mean": ("float", "1", "Mean staleness of the trained samples (versions)"),
    "staleness_max": ("int", "1", "Largest staleness of a trained sample (versions)"),
    "E_rollout_gpu_J": ("float", "J", "GPU energy of the rollout pool"),
    "E_trainer_gpu_J": ("float", "J", "GPU energy of the trainer"),
    "E_reward_J": ("float", "J", "Reward-pool energy above the hosts' idle"),
    "J_per_sample_gpu": ("float", "J", "GPU + reward energy per trained sample"),
    "job_id": ("int", "1", "Job id of the pipeline's one gang job, every pool (row of /jobs)"),
    "nodes": ("int", "1", "Nodes of the job (rollout_nodes + trainer_nodes)"),
    "rollout_nodes": ("int", "1", "Nodes of the rollout pool"),
    "trainer_nodes": ("int", "1", "Nodes of the trainer pool"),
    "rollout_gpus": ("int", "1", "GPUs of the rollout pool"),
    "trainer_gpus": ("int", "1", "GPUs of the trainer pool"),
    "start_s": ("float", "s", "Start of the pipeline's job, every pool at once (simulation time)"),
    "wait_s": ("float", "s", "Wait of the pipeline's job for all its nodes at once (/jobs wait_s)"),
    "E_it_J": ("float", "J", "IT energy of the pipeline's job (/attribution/jobs)"),
    "E_facility_J": ("float", "J", "Facility energy attributed to the pipeline's job"),
    "PUE_effective": ("float", "1", "E_facility_J / E_it_J of the pipeline"),
    "J_per_sample_it": ("float", "J", "IT energy per trained sample"),
    "J_per_sample_facility": ("float", "J", "Facility energy per trained sample"),
}


_CONTENT = _attr("/@content_sha256", "str", "SHA-256 over every group, dataset and attribute except itself and the "
                 "volatile wall-clock attributes (scheduler_sim.io.hdf5.content_digest); set when the file is "
                 "written, checked by scheduler_sim.io.hdf5.verify_file", required=True, since="1.1")


def _run_table() -> tuple[Entry, ...]:
    E: list[Entry] = [
        _attr("/@schema_version", "str", f'Schema version of the file, "{SCHEMA_VERSION}"', required=True),
        _attr("/@software_version", "str", "hpctwin version", required=True),
        _attr("/@git_sha", "str", "Commit of the hpctwin source tree ('unknown' outside a git checkout)",
              required=True),
        _attr("/@run_name", "str", "Run name", required=True),
        _attr("/@system", "str", "System description name", required=True),
        _attr("/@policy", "str", "Scheduling policy", required=True),
        _attr("/@seed", "int", "Seed of the run", required=True),
        _attr("/@config_json", "str", "The full run configuration (canonical JSON, sorted keys)", required=True),
        _attr("/@pue_definition", "str", "The definitions of PUE, pPUE, ITUE and TUE used in this file",
              required=True),
        _attr("/@pue_category", "str", "What the PUE counts in The Green Grid's terms: category 3 (IT at rack "
              "input, facility at utility input) when the transformer and switchgear are counted, else a category-3 "
              "IT point with the facility total short of the utility input; then the stages counted and left out",
              required=True, since="1.1"),
        _attr("/@it_fans_rule", "str", "Fans inside IT equipment are IT power (The Green Grid WP49), never "
              "facility overhead", required=True, since="1.1"),
        _attr("/@facility_stages_counted", "str", "Comma-separated stages of the system's [facility] table "
              "(transformer, switchgear, ups, pdu, air_side, lighting) the run counted", required=True, since="1.1"),
        _attr("/@facility_stages_absent", "str", "Comma-separated stages the run left out", required=True,
              since="1.1"),
        _attr("/@cooling_modelled", "bool", "False when the run had no cooling plant (PUE is then NaN)",
              required=True),
        _attr("/@complete", "bool", "False when the cooling FMU failed a step (or left its physical bounds under "
              "cooling.on_implausible = 'stop'): the file holds the results up to the last whole output interval "
              "(hpctwin run exits with status 2)", required=True, since="1.1"),
        _attr("/@failure", "str", "The error message when complete is false, else ''", required=True, since="1.1"),
        _attr("/@plant_out_of_bounds_json", "str", "Present only when a plant output left its physical bounds "
              "(water frozen or boiling, negative CDU or tower approach; cooling_fmu.plausibility): one record per "
              "quantity and bound with the first time and value, the number of steps out of bounds and the worst "
              "value (hpctwin run exits with status 1)", since="1.1"),
        _attr("/@cooling_model", "str", "Present only when the cooling plant was not the FMU: 'fast' (the "
              "quasi-steady plant of cooling_fmu.quasisteady, cooling.model = 'fast'); absent with cooling_modelled "
              "true means the FMU ran", since="1.2"),
        _CONTENT,
        # /jobs
        _group("/jobs", "One dataset per job-table column, shape (n_jobs,)", required=True),
    ]
    for col, (dt, unit, desc) in JOB_COLUMNS.items():
        E.append(_ds(f"/jobs/{col}", _JOB_DTYPE_CLASS.get(dt, "number"), ("n_jobs",), unit, desc, long_name=True,
                     required=True))
    for col, desc in JOB_RESULTS.items():
        E.append(_ds(f"/jobs/{col}", _JOB_RESULT_DTYPES.get(col, "float"), ("n_jobs",), unit_of(col), desc,
                     long_name=True, required=col not in ("node_power_model_W",)))
    E += [
        _ds("/jobs/it_power_cdu_W", "float", ("n_jobs", "n_cdus"), "W",
            "Rack-input power of the job in each CDU while it runs, shape (n_jobs, n_cdus)", long_name=True),
        _ds("/jobs/{column}", "number", ("n_jobs",), None, "Further job columns: loader extras (procs, "
            "source_line ...) and results (wait_before_window_s, lost_node_s, lost_energy_dc_J ...); unit from the "
            "loader or the name suffix"),
        _ds("/jobs/{text_column}", "str", ("n_jobs",), "", "Further text columns of the loader"),
        _group("/allocations", "Every run attempt of every job as runs of consecutive nodes within one CDU, shape "
               "(n_runs,) each", since="1.1"),
        _attr("/allocations@long_name", "str", "Description of the group", since="1.1"),
        _ds("/allocations/job_id", "int", ("n_runs",), "1", "Job of the attempt", since="1.1"),
        _ds("/allocations/start_s", "float", ("n_runs",), "s", "Start of the attempt", since="1.1"),
        _ds("/allocations/end_s", "float", ("n_runs",), "s", "End of the attempt", since="1.1"),
        _ds("/allocations/node_first", "int", ("n_runs",), "1", "First node of the run of consecutive nodes",
            since="1.1"),
        _ds("/allocations/node_count", "int", ("n_runs",), "1", "Nodes in the run", since="1.1"),
        _ds("/allocations/cdu", "int", ("n_runs",), "1", "CDU of those nodes", since="1.1"),
        _ds("/allocations/it_power_W", "float", ("n_runs",), "W", "Rack-input power of those nodes during the "
            "attempt (its mean when the job's power varied)", since="1.1"),
        # /timeseries
        _group("/timeseries", "Interval averages over the run", required=True),
        _attr("/timeseries@interval_s", "float", "Output interval (NaN for a one-interval run)", "s", required=True),
        _attr("/timeseries@time_origin_unix_s", "float", "Unix time of simulation time 0 (NaN when the trace gives "
              "none)", "s", required=True),
        _ds("/timeseries/time_s", "float64", ("n_intervals",), "s", "Start of the output interval (simulation time)",
            long_name=True, required=True),
        _group("/timeseries/facility", "Facility series, shape (n_intervals,)", required=True),
    ]
    for name, desc in FACILITY_SERIES.items():
        E.append(_ds(f"/timeseries/facility/{name}", "float", ("n_intervals",), unit_of(name), desc, long_name=True,
                     required=name in _FACILITY_REQUIRED))
    E += [
        _attr("/timeseries/facility/PUE@undefined", "str", "Present when no cooling plant was modelled: PUE is not "
              "defined (NaN)"),
        _ds("/timeseries/facility/{plant_output}", "float", ("n_intervals",), None, "Every scalar output of the "
            "cooling FMU (supply / return temperatures, pump and fan power, heat rejected, stored energy, water "
            "flows ...), unit from the plant's variable map"),
        _group("/timeseries/cdu", "Per-CDU series, shape (n_intervals, n_cdus)", required=True),
        _ds("/timeseries/cdu/Q_flow_W", "float", ("n_intervals", "n_cdus"), "W", "Heat delivered to the CDU by its "
            "racks", long_name=True, required=True),
        _ds("/timeseries/cdu/{plant_output}", "float", ("n_intervals", "n_cdus"), None, "Every per-CDU output of the "
            "cooling FMU (supply / return temperatures, secondary pump power, valve position ...)"),
        _group("/timeseries/rack", "Per-rack series, shape (n_intervals, n_racks)", required=True),
        _ds("/timeseries/rack/P_in_W", "float", ("n_intervals", "n_racks"), "W", "Rack input power (IT power of the "
            "rack)", long_name=True, required=True),
        # partitions (only on a system of more than one partition; a one-partition run's file is unchanged)
        _ds("/jobs/partition", "str", ("n_jobs",), "", "Partition that ran the job (scheduler_sim.kernel.partitions: "
            "the trace's partition / queue / GPU model, mapped by the system's trace_names, else the default "
            "partition); present only on a partitioned system", since="1.2"),
        _group("/timeseries/partition", "Per-partition series, shape (n_intervals, n_partitions); present only on a "
               "partitioned system", since="1.2"),
        _ds("/timeseries/partition/P_it_W", "float", ("n_intervals", "n_partitions"), "W", "IT power (rack input) "
            "of the partition's racks", long_name=True, since="1.2"),
        _ds("/timeseries/partition/busy_nodes", "float", ("n_intervals", "n_partitions"), "1", "Nodes running a "
            "batch job in the partition (time average)", long_name=True, since="1.2"),
        _group("/partitions", "One row per partition, shape (n_partitions,); present only on a partitioned system",
               since="1.2"),
        _ds("/partitions/name", "str", ("n_partitions",), "", "Partition name", since="1.2"),
        _ds("/partitions/kind", "str", ("n_partitions",), "", "batch or serving", since="1.2"),
        _ds("/partitions/node_type", "str", ("n_partitions",), "", "Catalogue node type ('' when defined inline)",
            since="1.2"),
        _ds("/partitions/cdu_partitions", "str", ("n_cdus",), "", "Per CDU: the partitions whose racks it cools, "
            "'+'-separated", since="1.2"),
        _ds("/partitions/{column}", "number", ("n_partitions",), None, "first_node, n_nodes, n_racks, idle_node_W, "
            "max_node_W, rack_limit_W (NaN: none), peak_rack_W (highest interval-average rack input), peak_it_W, "
            "E_it_J (exact IT energy of its racks), jobs, node_hours [h], utilisation (node-seconds of its jobs / "
            "(batch nodes x span)), mean_wait_s, mean_bounded_slowdown, energy_it_J (of its jobs); unit from the "
            "name suffix", since="1.2"),
        # /headroom (hpctwin run: scheduler_sim.analysis.headroom, docs/site_guide.md)
        _group("/headroom", "Headroom of the run (scheduler_sim.analysis.headroom): feed and plant margins, N+1 at "
               "the design day, chiller-free hours; written by hpctwin run", since="1.2"),
        _attr("/headroom@{name}", "float", "One headroom figure (unit from the name suffix; NaN: not known): "
              "peak_P_facility_W, feed_W, feed_firm_W, peak_heat_W, worst_hour_T_wb_K, capacity_worst_hour_W, "
              "design_T_wb_K, capacity_design_W, full_load_heat_W, hours_supply_above_h, least_margin_cdu (-1: "
              "unknown), least_margin_K, has_chiller (1/0); hours_below_dew_point_h (hours with some CDU supply below the "
              "data hall's dew point), coldest_supply_K, dew_point_K (15 C, ASHRAE TC 9.9 recommended upper bound)",
              since="1.2"),
        _ds("/headroom/n_plus_one_case", "str", ("n_redundancy_cases",), "", "N+1 case at the machine's full-load "
            "heat and the design wet-bulb (cooling_fmu.redundancy.n_plus_one): all units, one tower cell out, one facility pump "
            "out, one tower pump out; empty without a plant or a design day", since="1.2"),
        _ds("/headroom/n_plus_one_ok", "bool", ("n_redundancy_cases",), "1", "The case holds the facility and every "
            "CDU supply within 0.5 K of its set point", since="1.2"),
        _ds("/headroom/n_plus_one_T_fac_sup_K", "float", ("n_redundancy_cases",), "K", "Steady facility supply of "
            "the case (NaN: no standby unit)", since="1.2"),
        _ds("/headroom/n_plus_one_T_sec_sup_max_K", "float", ("n_redundancy_cases",), "K", "Warmest steady CDU "
            "supply of the case (NaN: no standby unit)", since="1.2"),
        _ds("/headroom/chiller_free_month", "str", ("n_months",), "", "Calendar month (UTC) YYYY-MM of the run",
            since="1.2"),
        _ds("/headroom/chiller_free_h", "float", ("n_months",), "h", "Hours of the month with the chiller off "
            "(interval-mean chiller heat below 1 W; every hour without a chiller)", since="1.2"),
        _ds("/headroom/simulated_h", "float", ("n_months",), "h", "Simulated hours of the month", since="1.2"),
        # /metrics
        _group("/metrics", "Per-group job metrics (prefilled jobs excluded from the wait statistics)",
               required=True),
    ]
    for by, dim in (("account", "n_accounts"), ("size", "n_size_classes")):
        E += [
            _group(f"/metrics/by_{by}", f"One row per {by} group", required=True),
            _ds(f"/metrics/by_{by}/group", "str", (dim,), None, "Group label (account, else user, '(unknown)'; or "
                "the size class 1, 2-15, 16-127, 128-511, 512-2047, 2048+ nodes); units '' (text), but '1' on a run "
                "without jobs, whose empty size-class column is numeric", required=True),
            _ds(f"/metrics/by_{by}/jobs", "int", (dim,), "1", "Jobs of the group", required=True),
            _ds(f"/metrics/by_{by}/node_hours", "float", (dim,), "h", "Node hours of the group", required=True),
            _ds(f"/metrics/by_{by}/{{metric}}", "number", (dim,), None, "mean_wait_s, mean_bounded_slowdown, "
                "energy_dc_J, energy_it_J: unit from the name suffix"),
        ]
    E += [
        _group("/summary", "Headline metrics (scheduler_sim.kernel.metrics.summarize) as attributes", required=True),
        _attr("/summary@{metric}", "float64", "One headline metric (float64; its unit, kind and shown unit in "
              "SUMMARY_METRICS, the table below): jobs, "
              "utilisation, waits, slowdown, makespan, energies, PUE, pPUE, ITUE, TUE, mean and peak power ...; "
              "serving_* with a serving partition", required=True),
        _group("/totals", "Energies integrated exactly over the run, as attributes", required=True),
        _attr("/totals@{energy}", "float64", "One total (float64, J unless the name says otherwise: duration_s)",
              "J", required=True),
        # /provenance
        _group("/provenance", "Where the run came from", required=True),
        _attr("/provenance@input_checksums_json", "str", "SHA-256 of the trace, weather file and FMU (JSON)",
              required=True),
        _attr("/provenance@versions_json", "str", "Python and package versions (JSON)", required=True),
        _attr("/provenance@load_report_json", "str", "What the trace loader read, repaired and rejected (JSON)",
              required=True),
        _attr("/provenance@info_json", "str", "Run counts (events, scheduling passes, prefilled and excluded jobs; "
              "twin_pool and twin_decisions with the twin), JSON", required=True),
        _attr("/provenance@created", "str", "UTC time the file was written (ISO 8601; volatile)", required=True),
        _attr("/provenance@wall_time_s", "float", "Wall time of the run (volatile)", "s", required=True),
        _attr("/provenance@scheduling_time_s", "float", "Wall time spent in scheduling passes (volatile)", "s",
              required=True),
        _attr("/provenance@twin_latency_s", "float", "With --policy twin: wall time of each decision (volatile)",
              "s", shape=("n_twin_decisions",)),
        # /attribution
        _group("/attribution", "Job -> PUE attribution (scheduler_sim.analysis.attribution)", since="1.1"),
        _attr("/attribution@rules", "str", "The allocation rules, in words", since="1.1"),
        _attr("/attribution@conversion_split", "str", "'system' (per-job SIVOC loss from the system description) "
              "or 'facility-proportional'", since="1.1"),
        _attr("/attribution@T_supply_limit_K", "float", "CDU supply-temperature limit: the plant's secondary "
              "supply set point (Frontier-like 305.15 K, ASHRAE W32; Theta-like 300.15 K, W27); 300.15 K without a "
              "plant", "K", since="1.1"),
        _attr("/attribution@T_supply_tolerance_K", "float", "An interval is above the limit only beyond this "
              "margin", "K", since="1.1"),
        _attr("/attribution@liquid_fraction", "float", "E_cdu_heat_J / E_it_J", "1", since="1.1"),
        _attr("/attribution@interval_s", "float", "Output interval", "s", since="1.1"),
    ]
    for sub, dim in (("jobs", "n_jobs"), ("pseudo", "n_pseudo")):
        E.append(_group(f"/attribution/{sub}", "Consumers: jobs (rows of /jobs)" if sub == "jobs" else
                        "Pseudo-consumers idle and partition (the remainder)", since="1.1"))
        for name, desc in ATTRIBUTION_QUANTITIES.items():
            E.append(_ds(f"/attribution/{sub}/{name}", "float", (dim,), attribution_unit(name), desc,
                         long_name=True, since="1.1"))
    E += [
        _ds("/attribution/pseudo/name", "str", ("n_pseudo",), "", "Pseudo-consumer names: idle, partition",
            has_units=False, since="1.1"),
        _group("/attribution/timeseries", "Facility power decomposition per interval, shape (n_intervals,)",
               since="1.1"),
        _ds("/attribution/timeseries/{name}", "float", ("n_intervals",), None, "P_node_dc_W ... P_lighting_W (the "
            "fifteen parts sum exactly to P_facility_W), P_it_W, P_cooling_W, P_facility_W, P_it_jobs_W, "
            "P_it_other_W (W); PUE, PUE_cumulative (1)", since="1.1"),
    ]
    for sub, dim in (("cdu", "n_cdus"), ("rack", "n_racks")):
        E.append(_group(f"/attribution/{sub}", f"Per {sub.upper() if sub == 'cdu' else sub} energies", since="1.1"))
        for name in ("E_it_J", "E_node_dc_J", "E_sivoc_loss_J", "E_rectifier_loss_J") + (
                ("E_cdu_pump_J", "E_cooling_J") if sub == "cdu" else ()):
            E.append(_ds(f"/attribution/{sub}/{name}", "float", (dim,), "J", ATTRIBUTION_QUANTITIES[name],
                         long_name=True, since="1.1"))
        E.append(_ds(f"/attribution/{sub}/{{name}}", "number", (dim,), None, "E_heat_J, E_plant_share_J (CDU), "
                     "time_above_limit_s, T_supply_max_K (CDU), cdu (rack: its CDU index)", since="1.1"))
    E += [
        _group("/attribution/totals", "Totals the shares sum to, and two checks", since="1.1"),
        _attr("/attribution/totals@{name}", "float64", "A total (J), closure_rel_error or decomposition_rel_error "
              "(1)", since="1.1"),
        # /serving
        _group("/serving", "A co-located serving partition (present with [serving])"),
        _attr("/serving@deployment_json", "str", "Model, GPU, replicas, tensor_parallel, constants, disaggregation"),
        _attr("/serving@router", "str", "Router name"),
        _attr("/serving@limits_json", "str", "Engine limits (max_num_seqs, max_num_batched_tokens, ...)"),
        _attr("/serving@ttft_slo_s", "float", "TTFT service-level objective", "s"),
        _attr("/serving@tpot_slo_s", "float", "TPOT service-level objective", "s"),
        _attr("/serving@trace", "str", "Request trace path"),
        _attr("/serving@time_origin_unix_s", "float", "Unix time of trace time 0", "s"),
        _attr("/serving@load_report_json", "str", "Request loader report (JSON)"),
        _attr("/serving@info_json", "str", "Engine counts (events, steps, preemptions, KV blocks ...), JSON"),
        _group("/serving/requests", "The request table, shape (n_requests,)"),
    ]
    for col, (unit, desc) in REQUEST_COLUMNS.items():
        E.append(_ds(f"/serving/requests/{col}", _REQUEST_DTYPES.get(col, "int"), ("n_requests",), unit, desc,
                     long_name=True))
    E += [
        _ds("/serving/requests/{column}", "number", ("n_requests",), "1", "Further request columns"),
        _group("/serving/power", "The partition's power profile carried through the chain and the plant"),
        _attr("/serving/power@server_cooling", "str", "'liquid' or 'air' servers"),
        _attr("/serving/power@merge_s", "float", "Bin width of the profile rows", "s"),
        _attr("/serving/power@node_baseline_W", "float", "Non-GPU DC power of a partition node", "W"),
        _ds("/serving/power/time_s", "float", ("n_rows",), "s", "Start of each profile row (simulation time); the "
            "last row holds to the end of the run", long_name=True),
        _ds("/serving/power/P_gpu_W", "float", ("n_rows", "n_replicas"), "W", "Power of each GPU of each replica, "
            "shape (n_rows, n_replicas); exact average over the row", long_name=True),
        _ds("/serving/power/P_node_W", "float", ("n_rows", "n_partition_nodes"), "W", "DC power of each partition "
            "node, shape (n_rows, n_nodes)", long_name=True),
        _ds("/serving/power/nodes", "int", ("n_partition_nodes",), "1", "System node index of each partition node",
            long_name=True),
        _ds("/serving/power/P_link_W", "float", ("n_rows", "n_replicas"), "W", "KV-transfer link power charged to "
            "each replica's nodes, shape (n_rows, n_replicas); included in P_node_W", long_name=True),
        _ds("/serving/power/P_fan_W", "float", ("n_rows", "n_partition_nodes"), "W", "Server fan power of each "
            "partition node (air-cooled servers), shape (n_rows, n_nodes); IT power (The Green Grid: fans inside "
            "IT equipment are IT), included in P_node_W", long_name=True),
        _group("/serving/summary", "Serving metrics as attributes (also in /summary with the prefix serving_)"),
        _attr("/serving/summary@{metric}", "float64", "One serving metric (unit from the name suffix)"),
        # /workload (issue #24): training-job and RL-pipeline reports
        _group("/workload", "Reports of the [[workload]] tables (present with training jobs or RL pipelines)",
               since="1.2"),
        _group("/workload/training", "One row per training job, shape (n_training_jobs,)", since="1.2"),
        _group("/workload/rl", "One row per RL pipeline, shape (n_rl_pipelines,)", since="1.2"),
    ]
    for col, (dt, unit, desc) in TRAINING_REPORT_COLUMNS.items():
        E.append(_ds(f"/workload/training/{col}", dt, ("n_training_jobs",), unit, desc, long_name=True,
                     since="1.2"))
    for col, (dt, unit, desc) in RL_REPORT_COLUMNS.items():
        E.append(_ds(f"/workload/rl/{col}", dt, ("n_rl_pipelines",), unit, desc, long_name=True, since="1.2"))
    E += [
        _group("/workload/rl_power", "Pool power of each RL pipeline as step functions (the RL engine's own "
               "resolution, before the 1 s binning given to the kernel)", since="1.2"),
        _group("/workload/rl_power/{name}", "One pipeline", since="1.2"),
        Entry("/workload/rl_power/{name}/{pool}_t_s", "float", None, "s", "Start of each step of the "
            "pool's power from the pipeline start (pool = rollout, trainer, reward), shape (n_steps,)", since="1.2"),
        Entry("/workload/rl_power/{name}/{pool}_P_W", "float", None, "W", "GPU power of the pool "
            "(reward: above the hosts' idle) from that time on, shape (n_steps,)", since="1.2"),
        Entry("/workload/rl_power/{name}/step_end_s", "float", None, "s", "End of each RL step (weights "
            "published) from the pipeline start, shape (steps,)", since="1.2"),
        # /grid (issue #15): cost / CO2 (scheduler_sim.io.grid) and the dynamic reports (scheduler_sim.io.grid_group);
        # each writer names its units per dataset (grid_units, the report tables), so units are checked present only
        _group("/grid", "The facility on the grid (present with a [grid] section, --carbon or --price)",
               since="1.2"),
        _attr("/grid@{name}", "number", "Signal description: currency, alignment, basis, fallbacks (docs/grid.md)",
              since="1.2"),
        _attr("/grid@{text}", "str", "Signal description: sources, currency, alignment (docs/grid.md)", since="1.2"),
        _group("/grid/{sub}", "jobs, pseudo, accounts, cdu, timeseries, totals (cost / CO2); events, ramps, battery "
               "(demand response, ramps: docs/grid_dynamics.md)", since="1.2"),
        _attr("/grid/{sub}@{name}", "number", "A total or a setting of the subgroup (unit in the name)", since="1.2"),
        _attr("/grid/{sub}@{text}", "str", "A label of the subgroup", since="1.2"),
        Entry("/grid/{sub}/{name}", "number", None, None, "Cost, CO2, power, state of charge, ramp or event row "
            "(units attribute per dataset)", since="1.2"),
        Entry("/grid/{sub}/{text}", "str", None, "", "Account names, event labels and verdicts", has_units=False,
            since="1.2"),
    ]
    return tuple(E)


#: The run file (``hpctwin run``; :func:`scheduler_sim.io.hdf5.write_run`).
RUN: tuple[Entry, ...] = _run_table()

#: The sweep's ``summary.h5`` (:func:`scheduler_sim.app.sweep.run_study`).
SWEEP_SUMMARY: tuple[Entry, ...] = (
    _attr("/@schema_version", "str", f'"{SCHEMA_VERSION}"', required=True),
    _attr("/@kind", "str", '"sweep-summary"', required=True),
    _attr("/@study", "str", "Study name", required=True),
    _attr("/@study_file", "str", "The study TOML", required=True),
    _attr("/@sweep_timing_json", "str", "Ranks, whether rank 0 worked, wall time, busy seconds and scenarios per "
          "rank, wall time per scenario, scenarios skipped as done earlier (volatile)", required=True),
    _attr("/@sweep_resume_json", "str", "Resume: scenarios done by an earlier sweep and reused (done_earlier), and "
          "earlier files not reused with the reason (rerun: name -> e.g. 'input changed: trace trace.swf (sha256 "
          "... -> ...)'; volatile)"),
    _CONTENT,
    _group("/scenarios", "One row per scenario in scenario order", required=True),
    _ds("/scenarios/name", "str", ("n_scenarios",), "", "Scenario name", has_units=False, required=True),
    _ds("/scenarios/status", "str", ("n_scenarios",), "", "done / failed (a scenario finished by an earlier, "
        "interrupted sweep and skipped on restart is done)", has_units=False, required=True),
    _ds("/scenarios/error", "str", ("n_scenarios",), "", "Message and traceback of a failed scenario",
        has_units=False, required=True),
    _ds("/scenarios/config_json", "str", ("n_scenarios",), "", "The scenario's run configuration (JSON)",
        has_units=False, required=True),
    _ds("/scenarios/file", "str", ("n_scenarios",), "", "The run file's name ('' when the scenario left none)",
        has_units=False, required=True),
    _ds("/scenarios/{metric}", "float64", ("n_scenarios",), None, "One headline metric per scenario (NaN for "
        "failed scenarios); unit from the name suffix"),
    _group("/runs", "External links to the finished scenarios' run files (relative paths)", required=True),
    Entry("/runs/{scenario}", "link", None, None, "External link to <scenario>.h5:/"),
    _group("/refine", "Present when the study re-ran selected fast-plant scenarios with the FMU ([refine] or "
           "hpctwin sweep --refine-top / --refine-pareto): one row per re-run scenario"),
    _ds("/refine/scenario", "str", ("n_refined",), "", "Name of the fast-plant scenario selected", has_units=False),
    _ds("/refine/fmu_scenario", "str", ("n_refined",), "", "Name of its FMU re-run (<scenario>_fmu; its file and "
        "/runs link)", has_units=False),
    _ds("/refine/status", "str", ("n_refined",), "", "done / failed: the FMU re-run's status", has_units=False),
    _ds("/refine/{column}", "float64", ("n_refined",), None, "<metric>_fast, <metric>_fmu: the headline metric of "
        "the fast-plant scenario and of its FMU re-run; <metric>_rel_error: fast / FMU - 1 (NaN when the re-run "
        "failed)"),
    _group("/ensemble", "Present for a study with an [uncertainty] table (scheduler_sim.app.uncertainty): every "
           "scenario ran as members with perturbed inputs; statistics by scheduler_sim.analysis.ensemble",
           since="1.2"),
    _attr("/ensemble@members", "int", "N, members per scenario of the design", since="1.2"),
    _attr("/ensemble@n_runs", "int", "Members run per scenario: N, or N (2D + 2) for a Saltelli design", since="1.2"),
    _attr("/ensemble@design", "str", "lhs, sobol or saltelli", since="1.2"),
    _attr("/ensemble@seed", "int", "Seed of the design and of the members' per-job noise", since="1.2"),
    _attr("/ensemble@cooling", "str", "fast (members on the fast plant) or keep", since="1.2"),
    _attr("/ensemble@n_failed", "int", "Members that failed (left out of every statistic)", since="1.2"),
    _attr("/ensemble@spec_json", "str", "The [uncertainty] table as JSON (parameter: [dist, args...])", since="1.2"),
    _ds("/ensemble/scenario", "str", ("n_ensemble_scenarios",), "", "The study's scenarios (before expansion into "
        "members <scenario>_m<kkk>)", has_units=False, since="1.2"),
    _ds("/ensemble/condition", "str", ("n_ensemble_scenarios",), "", "Each scenario's condition (weather, seed ...; "
        "'' without condition axes)", has_units=False, since="1.2"),
    _ds("/ensemble/does_not_matter", "str", ("n_ensemble_lines",), "", "Per headline metric and condition: whether "
        "the decision changes it by more than the ensemble 5-95 % half-width", has_units=False, since="1.2"),
    _group("/ensemble/parameters", "The design: one dataset per parameter, its value for each member", since="1.2"),
    _ds("/ensemble/parameters/{parameter}", "float64", ("n_members",), None, "Value of the parameter in member k",
        since="1.2"),
    _group("/ensemble/band", "Bands of every metric over the members, one value per scenario", since="1.2"),
    _ds("/ensemble/band/{column}", "float64", ("n_ensemble_scenarios",), None, "<metric>__mean, __std (ddof 1), "
        "__p05, __p95 (numpy.quantile, linear) of the finite members; unit of the metric", since="1.2"),
    _group("/ensemble/beats", "Ranking robustness per headline metric", since="1.2"),
    _ds("/ensemble/beats/{metric}", "float64", ("n_ensemble_scenarios", "n_ensemble_scenarios"), "1",
        "P[a, b]: share of members in which scenario a is better than b (ties 1/2; lower is better unless the "
        "metric is maximised); diagonal NaN", since="1.2"),
    _group("/ensemble/sensitivity", "Sensitivity indices of the headline metrics (scenario mean per member)",
           since="1.2"),
    _ds("/ensemble/sensitivity/parameter", "str", ("n_varied",), "", "The varied parameters, in design order",
        has_units=False, since="1.2"),
    _ds("/ensemble/sensitivity/{column}", "float64", ("n_varied",), "1", "<metric>__rbd_fast_S1, __delta, __delta_S1 "
        "(LHS / Sobol design) or <metric>__sobol_S1, __sobol_ST and their __conf (Saltelli design); NaN without "
        "variance", since="1.2"),
    _group("/ensemble/refine", "Members also run with the FMU ([uncertainty] refine)", since="1.2"),
    _ds("/ensemble/refine/member", "str", ("n_ensemble_refined",), "", "Fast-plant member name (its FMU run: "
        "<member>_fmu)", has_units=False, since="1.2"),
    _ds("/ensemble/refine/{column}", "float64", ("n_ensemble_refined",), "1", "<metric>__rel_error = fast / FMU - 1",
        since="1.2"),
)

#: Cooling-only mode (``hpctwin cooling``; :func:`scheduler_sim.app.cooling.write_standalone`).
COOLING_STANDALONE: tuple[Entry, ...] = (
    _attr("/@schema_version", "str", '"1.0"', required=True),
    _attr("/@kind", "str", '"cooling_standalone"', required=True),
    _attr("/@plant", "str", "Plant name", required=True),
    _attr("/@git_sha", "str", "Commit of the hpctwin source tree", required=True),
    _attr("/@step_s", "float", "FMU communication step", "s", required=True),
    _attr("/@time_origin_unix_s", "float", "Unix time of time 0 (first row of the power series)", "s",
          required=True),
    _attr("/@pue_counts", "str", "What the PUE counts (liquid plant only, or the system's facility stages)",
          required=True),
    _CONTENT,
    _group("/timeseries", "Interval averages", required=True),
    _ds("/timeseries/time_s", "float64", ("n_intervals",), "s", "Start of each interval", required=True),
    _attr("/timeseries/time_s@interval_s", "float", "Output interval", "s", required=True),
    _group("/timeseries/facility", "Facility series, shape (n_intervals,)", required=True),
    _ds("/timeseries/facility/P_it_W", "float", ("n_intervals",), "W", "IT power of the measured series",
        required=True),
    _ds("/timeseries/facility/T_wb_K", "float", ("n_intervals",), "K", "Outdoor wet-bulb temperature",
        required=True),
    _ds("/timeseries/facility/{plant_output}", "float", ("n_intervals",), None, "Every scalar plant output (and "
        "the facility overheads with --system)"),
    _group("/timeseries/cdu", "Per-CDU plant outputs, shape (n_intervals, n_cdus)", required=True),
    _ds("/timeseries/cdu/{plant_output}", "float", ("n_intervals", "n_cdus"), None, "Every per-CDU plant output"),
    _group("/summary", "Energies [J], PUE, WUE_L_per_kWh, fan share, scale factor as attributes", required=True),
    _attr("/summary@{metric}", "number", "One summary figure (unit from the name suffix)", required=True),
    _group("/provenance", "Inputs and versions", required=True),
    _attr("/provenance@input_checksums_json", "str", "SHA-256 of the power series and the FMU (JSON)",
          required=True),
    _attr("/provenance@power_report_json", "str", "What the power-series loader read (JSON)", required=True),
    _attr("/provenance@versions_json", "str", "Python and package versions (JSON)", required=True),
)

#: The energy-incentive study's summary (experiments/incentive.py).
INCENTIVE_STUDY: tuple[Entry, ...] = (
    _attr("/@schema_version", "str", f'"{SCHEMA_VERSION}"', required=True),
    _attr("/@kind", "str", '"incentive-study"', required=True),
    _attr("/@scores_json", "str", "Phase-1 user scores per variant (JSON)", required=True),
    _CONTENT,
    _group("/cases", "One row per phase-2 case", required=True),
    _ds("/cases/case", "str", ("n_cases",), "", "Case label", required=True),
    _ds("/cases/mean_wait_h", "float", ("n_cases",), "h", "Mean wait", required=True),
    _ds("/cases/mean_bounded_slowdown", "float", ("n_cases",), "1", "Mean bounded slowdown (tau = 10 s)",
        required=True),
    _ds("/cases/E_facility_MWh", "float", ("n_cases",), "MWh", "Facility energy", required=True),
    _ds("/cases/PUE", "float", ("n_cases",), "1", "Run PUE", required=True),
    _ds("/cases/wait_good_half_h[{variant}]", "float", ("n_cases",), "h", "Mean wait of the better-scored half of "
        "users by this variant's phase-1 score"),
    _ds("/cases/wait_bad_half_h[{variant}]", "float", ("n_cases",), "h", "Mean wait of the worse-scored half"),
)

def _run_summary_table() -> tuple[Entry, ...]:
    """The ``run-summary`` kind: a run file's root attributes, ``/summary``, ``/totals`` and ``/provenance`` only."""
    keep = [e for e in RUN if e.path.startswith("/@") or e.path.split("@")[0] in ("/summary", "/totals",
                                                                                  "/provenance")]
    kind = _attr("/@kind", "str", '"run-summary": an ensemble member\'s record (the run file without its jobs, '
                 'series, metrics and attribution; [uncertainty] member_files = "summary", the default): the headline '
                 'metrics the ensemble statistics and the resume need', required=True, since="1.2")
    return (kind, *keep)


#: An ensemble member's record (scheduler_sim.app.uncertainty, ``member_files = "summary"``).
RUN_SUMMARY: tuple[Entry, ...] = _run_summary_table()

#: Entries per file kind (root attribute ``kind``; ``run`` when absent).
TABLES: dict[str, tuple[Entry, ...]] = {"run": RUN, "sweep-summary": SWEEP_SUMMARY,
                                        "cooling_standalone": COOLING_STANDALONE, "incentive-study": INCENTIVE_STUDY,
                                        "run-summary": RUN_SUMMARY}
#: schema_version written per file kind.
KIND_VERSIONS = {"run": SCHEMA_VERSION, "sweep-summary": SCHEMA_VERSION, "cooling_standalone": "1.0",
                 "incentive-study": SCHEMA_VERSION, "run-summary": SCHEMA_VERSION}


def _check_table(entries: tuple[Entry, ...], kind: str) -> None:
    seen = set()
    for e in entries:
        if e.path in seen:
            raise ValueError(f"schema table {kind}: {e.path} declared twice")
        seen.add(e.path)


for _k, _t in TABLES.items():
    _check_table(_t, _k)

_EXACT: dict[str, dict[str, Entry]] = {k: {e.path: e for e in t if not e.is_pattern} for k, t in TABLES.items()}
_PATTERNS: dict[str, list[Entry]] = {k: [e for e in t if e.is_pattern] for k, t in TABLES.items()}


def lookup(kind: str, path: str, dtype: np.dtype | None = None) -> Entry | None:
    """The entry of ``path`` in the table of ``kind``: the exact path first, else the first matching pattern.

    Parameters
    ----------
    kind : str
        File kind (a key of :data:`TABLES`).
    path : str
        HDF5 path (``<object>@<attribute>`` for an attribute).
    dtype : np.dtype | None
        When given, a pattern whose dtype class does not accept it is skipped (``/jobs/{column}`` numeric vs
        ``/jobs/{text_column}``).

    Returns
    -------
    Entry or None
        None when the table does not declare the path.

    Raises
    ------
    KeyError
        If ``kind`` is not a known file kind.
    """
    if kind not in TABLES:
        raise KeyError(f"unknown output file kind {kind!r}; known: {', '.join(TABLES)}")
    e = _EXACT[kind].get(path)
    if e is not None:
        return e
    fallback = None
    for e in _PATTERNS[kind]:
        if e.regex.match(path):
            test = DTYPES[e.dtype][0]
            if dtype is None or test is None or test(dtype):
                return e
            fallback = fallback or e
    return fallback


def _dtype_of(value) -> np.dtype:
    if isinstance(value, (str, bytes)):
        return np.dtype("O")
    return np.asarray(value).dtype


#: Arrays written to each file being sealed, by dataset path (weak references: nothing is kept alive here), keyed
#: by the HDF5 identifier of the open file (:func:`track_sources`).
_SOURCES: dict[int, dict[str, weakref.ref]] = {}


def track_sources(f: h5py.File) -> dict[str, weakref.ref]:
    """Start recording, for the open file ``f``, the array each :meth:`SchemaWriter.dataset` call writes.

    :class:`scheduler_sim.io.hdf5.atomic_h5` calls it when it opens a file and :func:`untrack_sources` when it
    seals it: the file's ``content_sha256`` (:func:`scheduler_sim.io.hdf5.content_digest`) is then fed from the
    arrays still alive in memory (the run's series, held by its result) instead of reading them back and
    decompressing them (issue #26 item 4: ~45 % of a week's file write). Only weak references are kept.

    Parameters
    ----------
    f : h5py.File
        The open file.

    Returns
    -------
    dict of str -> weakref.ref
        The record (dataset path -> the array written there), filled as datasets are written.
    """
    return _SOURCES.setdefault(f.id.id, {})


def untrack_sources(f: h5py.File) -> dict[str, weakref.ref]:
    """Stop recording for ``f`` (see :func:`track_sources`); returns what was recorded (empty if nothing).

    Parameters
    ----------
    f : h5py.File
        The open file (before it is closed).

    Returns
    -------
    dict of str -> weakref.ref
        Dataset path -> the array written there.
    """
    return _SOURCES.pop(f.id.id, {})


def chunk_rows(data: np.ndarray) -> int:
    """Rows per chunk of a chunked output dataset: at most 65,536, and at most 1 MiB of data a chunk (a wide series,
    e.g. rack input power of (n_intervals, n_racks), gets shorter chunks; a 1-D float64 series 65,536 rows).

    Why (issue #26 item 3): HDF5 compresses a whole chunk at once; a 65,536-row chunk of 24 racks was 12 MiB, held
    with its compressed copy and the contiguous copy of the series when the file was written (the end-of-run peak
    after 30 days of Theta). The content, and so ``content_sha256``, does not depend on the chunking.

    Parameters
    ----------
    data : np.ndarray
        The dataset's values (at least one dimension).

    Returns
    -------
    int
        Rows per chunk (>= 1, <= the number of rows).
    """
    row_bytes = max(1, int(np.prod(data.shape[1:], dtype=np.int64)) * data.dtype.itemsize)
    return max(1, min(data.shape[0], 65536, (1 << 20) // row_bytes))


class SchemaWriter:
    """Writes groups, datasets and attributes of one output file, each checked against the schema table.

    A path the table does not declare, a dtype class or number of dimensions it does not allow, or a unit other
    than the table's is refused with a :class:`SchemaError` before anything is written. A dataset receives its
    ``units`` attribute and (where the table says so) its ``long_name`` from the table.

    Parameters
    ----------
    f : h5py.File
        The open file being written (e.g. inside :class:`scheduler_sim.io.hdf5.atomic_h5`).
    kind : str
        File kind (a key of :data:`TABLES`).

    Raises
    ------
    KeyError
        If ``kind`` is not a key of :data:`TABLES`.
    """

    def __init__(self, f: h5py.File, kind: str) -> None:
        if kind not in TABLES:
            raise KeyError(f"unknown output file kind {kind!r}; known: {', '.join(TABLES)}")
        self.f, self.kind = f, kind

    def _entry(self, path: str, what: str, dtype: np.dtype | None) -> Entry:
        e = lookup(self.kind, path, dtype)
        if e is None:
            raise SchemaError(f"{path}: not declared in the {self.kind} schema table (scheduler_sim.io.schema); "
                              f"declare it there before writing it")
        if (e.kind == "attribute") != (what == "attribute") or (what == "group") != (e.kind == "group"):
            raise SchemaError(f"{path}: declared as a {e.kind}, written as a {what}")
        test = DTYPES[e.dtype][0]
        if dtype is not None and test is not None and not test(dtype):
            raise SchemaError(f"{path}: dtype {dtype} is not {e.dtype} ({DTYPES[e.dtype][1]}) as the schema "
                              f"table says")
        return e

    def group(self, path: str) -> h5py.Group:
        """Create (or open) the declared group ``path`` and return it.

        Parameters
        ----------
        path : str
            Absolute group path.

        Returns
        -------
        h5py.Group
            The group (a :class:`SchemaError` if the path is not a declared group).
        """
        self._entry(path, "group", None)
        return self.f.require_group(path)

    def attr(self, path: str, name: str, value: object) -> None:
        """Set attribute ``name`` of the object at ``path``.

        Parameters
        ----------
        path : str
            Object path (``/`` for the root).
        name : str
            Attribute name.
        value : object
            Value (str, float, int, bool or array); a :class:`SchemaError` if ``path@name`` is not declared or the
            value is of another dtype class.
        """
        self._entry(f"{path}@{name}", "attribute", _dtype_of(value))
        self.f[path].attrs[name] = value

    def attrs(self, path: str, values: dict) -> None:
        """Set several attributes of ``path`` (:meth:`attr` for each item).

        Parameters
        ----------
        path : str
            Object path.
        values : dict
            Attribute name -> value.
        """
        for k, v in values.items():
            self.attr(path, k, v)

    def link(self, path: str, filename: str, target: str = "/") -> None:
        """Create the declared external link ``path`` to ``filename:target``.

        Parameters
        ----------
        path : str
            Link path.
        filename : str
            Target file (a relative path keeps the folder movable).
        target : str
            Object inside the target file.

        Raises
        ------
        SchemaError
            If the path is not a declared link.
        """
        e = lookup(self.kind, path)
        if e is None or e.kind != "link":
            raise SchemaError(f"{path}: not declared as a link in the {self.kind} schema table")
        self.f[path] = h5py.ExternalLink(filename, target)

    def dataset(self, path: str, data: object, *, units: str | None = None, long_name: str | None = None,
                **create) -> h5py.Dataset:
        """Create the dataset ``path`` with its ``units`` and ``long_name`` attributes.

        Arrays of more than 1,024 elements are chunked (up to 65,536 rows and 1 MiB a chunk, :func:`chunk_rows`) and
        gzip-compressed (level 4, shuffled) unless ``create`` gives other creation keywords; numeric ones are written
        a chunk at a time.

        Parameters
        ----------
        path : str
            Absolute dataset path; its parent group is created.
        data : object
            Values (array_like).
        units : str | None
            Unit for an entry whose unit the writer gives (plant outputs); must equal the table's unit otherwise.
        long_name : str | None
            Description for a pattern entry; None: the table's description when the entry writes one.
        **create
            Keyword arguments of :meth:`h5py.Group.create_dataset` (chunks, compression ...).

        Returns
        -------
        h5py.Dataset
            The dataset.

        Raises
        ------
        SchemaError
            If the path is not declared, the dtype class or the number of dimensions differ from the table, or the
            unit differs from the table's.
        """
        data = np.asarray(data)
        e = self._entry(path, "dataset", data.dtype if data.size else None)  # empty: any dtype (see module doc)
        if e.shape is not None and data.ndim != len(e.shape):
            raise SchemaError(f"{path}: {data.ndim} dimension(s), the schema table says {len(e.shape)} "
                              f"{tuple(e.shape)}")
        if e.unit is not None and units is not None and units != e.unit:
            raise SchemaError(f"{path}: unit {units!r}, the schema table says {e.unit!r}")
        unit = units if units is not None else e.unit
        if e.has_units and unit is None:
            raise SchemaError(f"{path}: the schema table leaves the unit to the writer, and none was given")
        blocks = 0
        if not create and data.ndim >= 1 and data.size > 1024:
            blocks = chunk_rows(data)
            create = {"compression": "gzip", "compression_opts": 4, "shuffle": True,
                      "chunks": (blocks,) + data.shape[1:]}
        parent, _, name = path.rpartition("/")
        g = self.f.require_group(parent or "/")
        if blocks and data.dtype.kind in "biuf":
            # numeric series: written a chunk at a time from the caller's array (often a strided view of the
            # run's row block), so neither a contiguous copy of the whole series nor a chunk of it all is made
            ds = g.create_dataset(name, shape=data.shape, dtype=data.dtype, track_times=False, **create)
            for i in range(0, data.shape[0], blocks):  # one chunk (<= 1 MiB) a write
                ds[i:i + blocks] = data[i:i + blocks]
        else:
            ds = g.create_dataset(name, data=data, track_times=False, **create)
        sources = _SOURCES.get(self.f.id.id)
        if sources is not None and data.dtype.kind in "biuf" and data.ndim >= 1:
            sources[ds.name] = weakref.ref(data)
        if e.has_units:
            ds.attrs["units"] = unit
        text = long_name if long_name is not None else (e.description if e.long_name else "")
        if text:
            ds.attrs["long_name"] = text
        return ds


def file_kind(f: h5py.File) -> str:
    """Kind of an open output file: its root attribute ``kind``, ``run`` when absent.

    Parameters
    ----------
    f : h5py.File
        The open file.

    Returns
    -------
    str
        The kind.
    """
    k = f.attrs.get("kind", "run")
    return k.decode() if isinstance(k, bytes) else str(k)


def shape_conflicts(f: h5py.File, path: str | Path = "") -> list[str]:
    """Datasets whose shape disagrees with the schema table's named dimensions, from metadata only (no data read).

    Every dataset the table declares with named dimensions (``n_intervals``, ``n_jobs``, ``n_cdus``, ...) must
    give each name the same length wherever it appears; the first dataset that names a dimension sets it. A crafted
    ``/timeseries/time_s`` of 2e9 rows beside series of 90 is found here before anything is allocated.

    Parameters
    ----------
    f : h5py.File
        The open file.
    path : str | Path
        The file's name, for the messages.

    Returns
    -------
    list of str
        One message per conflict, naming the file, both datasets and both lengths; empty when the file is
        consistent or its kind is unknown.
    """
    kind = file_kind(f)
    if kind not in TABLES:
        return []
    dims: dict[str, tuple[int, str]] = {}
    out: list[str] = []

    def visit(name: str, obj) -> None:
        if not isinstance(obj, h5py.Dataset):
            return
        p = "/" + name
        e = lookup(kind, p, obj.dtype if obj.size else None)
        if e is None or e.kind != "dataset" or e.shape is None:
            return
        if len(obj.shape) != len(e.shape):
            out.append(f"{path}: {p} has shape {obj.shape}, expected {len(e.shape)} dimension(s) {tuple(e.shape)}: "
                       f"the file is damaged or crafted")
            return
        for n, d in zip(obj.shape, e.shape):
            if isinstance(d, int):
                continue
            if d in dims and dims[d][0] != n:
                out.append(f"{path}: {p} has {n:,} along {d} but {dims[d][1]} has {dims[d][0]:,}: the file is "
                           f"damaged or crafted")
            else:
                dims.setdefault(d, (n, p))

    f.visititems(visit)
    return out


def validate_file(path: str | Path) -> list[str]:
    """Check an output file against the schema table of its kind; return the problems (empty: it conforms).

    Checked: every group, dataset, attribute and link is declared; dtype classes; number of dimensions and the size
    of every named dimension (one size per name across the file); the ``units`` attribute of every dataset (the
    table's unit, or present when the writer gives it); every entry marked required is present (a pattern: at
    least one match); ``schema_version`` has the major version of the table.

    Parameters
    ----------
    path : str | Path
        The HDF5 file (an ``OSError`` from h5py if it cannot be opened).

    Returns
    -------
    list of str
        One message per problem, each naming the file and the HDF5 path.
    """
    path = Path(path)
    with h5py.File(path, "r") as f:
        kind = file_kind(f)
        if kind not in TABLES:
            return [f"{path}: /: unknown kind {kind!r} (known: {', '.join(TABLES)})"]
        check = _FileCheck(path, kind)
        v = f.attrs.get("schema_version")
        v = v.decode() if isinstance(v, bytes) else (None if v is None else str(v))
        if v is not None and v.split(".")[0] != KIND_VERSIONS[kind].split(".")[0]:
            check.say("/@schema_version",
                      f"{v} is not a {KIND_VERSIONS[kind].split('.')[0]}.x version of the {kind} schema")
        check.visit("/", f)
    for e in TABLES[kind]:
        if e.required and e.path not in check.used:
            check.say(e.path, f"required by the {kind} schema table, missing")
    return check.problems


class _FileCheck:
    """The walk of :func:`validate_file` over one file: the problems found, the entries used, the dimensions seen."""

    def __init__(self, path: Path, kind: str) -> None:
        self.path, self.kind = path, kind
        self.problems: list[str] = []
        self.dims: dict[str, tuple[int, str]] = {}
        self.used: set[str] = set()

    def say(self, obj: str, msg: str) -> None:
        """Record one problem at HDF5 path ``obj``."""
        self.problems.append(f"{self.path}: {obj}: {msg}")

    def attrs(self, obj_path: str, obj, skip=()) -> None:
        """Check every attribute of ``obj`` (but ``skip``) against the table."""
        for name in obj.attrs:
            if name in skip:
                continue
            ap = f"{obj_path}@{name}"
            val = obj.attrs[name]
            e = lookup(self.kind, ap, _dtype_of(val))
            if e is None:
                self.say(ap, "attribute not in the schema table")
                continue
            self.used.add(e.path)
            test = DTYPES[e.dtype][0]
            if not test(_dtype_of(val)):
                self.say(ap, f"dtype {_dtype_of(val)}, expected {e.dtype} ({DTYPES[e.dtype][1]})")
            self.shape(ap, e, np.shape(val) if not isinstance(val, (str, bytes)) else ())

    def shape(self, p: str, e: Entry, shape: tuple) -> None:
        """Check a shape against the entry's: fixed sizes, and one size per named dimension across the file."""
        if e.shape is None:
            return
        if len(shape) != len(e.shape):
            self.say(p, f"shape {shape}, expected {len(e.shape)} dimension(s) {tuple(e.shape)}")
            return
        for n, d in zip(shape, e.shape):
            if isinstance(d, int):
                if n != d:
                    self.say(p, f"shape {shape}, expected {tuple(e.shape)}")
            elif d in self.dims and self.dims[d][0] != n:
                self.say(p, f"shape {shape}: {d} = {n} here but {self.dims[d][0]} in {self.dims[d][1]}")
            else:
                self.dims.setdefault(d, (n, p))

    def dataset(self, obj_path: str, obj) -> None:
        """Check one dataset: declared, dtype, shape, units, attributes."""
        e = lookup(self.kind, obj_path, obj.dtype if obj.size else None)
        if e is None or e.kind != "dataset":
            self.say(obj_path, "dataset not in the schema table")
            return
        self.used.add(e.path)
        if obj.size and not DTYPES[e.dtype][0](obj.dtype):
            self.say(obj_path, f"dtype {obj.dtype}, expected {e.dtype} ({DTYPES[e.dtype][1]})")
        self.shape(obj_path, e, obj.shape)
        u = obj.attrs.get("units")
        u = u.decode() if isinstance(u, bytes) else u
        if e.has_units and u is None:
            self.say(obj_path, "no units attribute")
        elif e.has_units and e.unit is not None and u != e.unit:
            self.say(obj_path, f"units {u!r}, expected {e.unit!r}")
        self.attrs(obj_path, obj, skip=("units", "long_name"))

    def visit(self, obj_path: str, obj) -> None:
        """Check ``obj`` and, for a group, its attributes, external links and members (recursively)."""
        if isinstance(obj, h5py.Dataset):
            self.dataset(obj_path, obj)
            return
        if obj_path != "/":
            e = lookup(self.kind, obj_path)
            if e is None or e.kind != "group":
                self.say(obj_path, "group not in the schema table")
                return
            self.used.add(e.path)
        self.attrs(obj_path, obj)
        for name in obj:
            sub = f"{obj_path.rstrip('/')}/{name}"
            link = obj.get(name, getlink=True)
            if isinstance(link, h5py.ExternalLink):
                e = lookup(self.kind, sub)
                if e is None or e.kind != "link":
                    self.say(sub, "external link not in the schema table")
                else:
                    self.used.add(e.path)
                continue
            self.visit(sub, obj[name])


def check_file(path: str | Path) -> None:
    """Raise :class:`SchemaError` listing every problem :func:`validate_file` finds.

    Parameters
    ----------
    path : str | Path
        The HDF5 file.

    Raises
    ------
    SchemaError
        If the file does not conform (one line per problem).
    """
    problems = validate_file(path)
    if problems:
        raise SchemaError(f"{len(problems)} schema problem(s):\n" + "\n".join(problems))
