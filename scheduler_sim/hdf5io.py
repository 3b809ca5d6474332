"""HDF5 output of one run: a documented, versioned schema (docs/output_schema.md), written atomically.

Layout (schema 1.1; 1.1 added /attribution, readers accept any 1.x)::

    /                      attrs: schema_version, software_version, git_sha, run_name, system, policy, seed,
                                  config_json, pue_definition, cooling_modelled
    /jobs/<column>         (n_jobs,)           one dataset per job-table column, attrs units, long_name
    /timeseries/time_s     (n_intervals,)      start of each output interval [s]; attrs interval_s, time_origin_unix_s
    /timeseries/facility/<name>  (n_intervals,)          interval averages
    /timeseries/cdu/<name>       (n_intervals, n_cdus)   interval averages per CDU
    /timeseries/rack/P_in_W      (n_intervals, n_racks)  interval-average rack input power
    /summary               attrs: headline metrics (see scheduler_sim.metrics.summarize)
    /totals                attrs: exact energies [J] integrated over the run
    /attribution/...       job -> PUE attribution (scheduler_sim.attribution; docs/output_schema.md)
    /provenance            attrs: input_checksums_json, versions_json, load_report_json, info_json,
                                  created, wall_time_s, scheduling_time_s (the only attributes that vary
                                  between identical runs: wall-clock measurements)

A file is written to a temporary name in the same folder and renamed into place only when complete, so a reader
never sees a half-written file.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

import h5py
import numpy as np
import pandas as pd

from .attribution import write_attribution

__all__ = ["SCHEMA_VERSION", "VOLATILE_ATTRS", "write_run", "read_jobs", "read_series", "read_summary",
           "check_schema", "SchemaError", "sha256_file", "package_versions", "git_sha", "atomic_h5"]

SCHEMA_VERSION = "1.1"
#: Attributes (in /provenance; ``sweep_timing_json`` at the root of a sweep's summary.h5) that legitimately differ
#: between two runs of the same inputs: wall times (``twin_latency_s``: wall time of each twin decision [s];
#: the serving engine's wall time and events per wall second in /summary and /serving/summary).
VOLATILE_ATTRS = ("created", "wall_time_s", "scheduling_time_s", "sweep_timing_json", "twin_latency_s",
                  "serving_engine_wall_time_s", "serving_engine_events_per_s", "engine_wall_time_s",
                  "engine_events_per_s")

PUE_DEFINITION = ("PUE = E_facility / E_IT, energy-weighted (The Green Grid WP49). E_IT = rack input energy "
                  "(node DC + SIVOC/VRM loss + rectifier loss + rack overhead; fans inside IT equipment are IT). "
                  "E_facility = E_IT + liquid cooling plant (pumps, tower fans, chiller) + air side (CRAH fans, "
                  "chilled water for heat to air) + electrical-chain losses (transformer, switchgear, UPS, PDU) + "
                  "lighting and building controls, for the stages the system description counts (attribute "
                  "facility_stages_counted). pPUE_mechanical = (E_IT + liquid plant + air side) / E_IT; "
                  "pPUE_electrical = (E_IT + electrical-chain losses) / E_IT. "
                  "ITUE = E_IT / (E_node_dc + E_rack_overhead). TUE = ITUE * PUE.")
#: The Green Grid rule on fans inside IT equipment, written to every run file.
IT_FANS_RULE = ("Fans inside IT equipment (server fans, cabinet blowers) are IT power (The Green Grid WP49); they "
                "are never counted in the facility overhead.")

_LONG_NAMES = {
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
    "Q_flow_W": "Heat delivered to the CDU by its racks",
}


class SchemaError(ValueError):
    """A file that is not an hpctwin run file of a compatible schema version."""


def unit_of(name: str) -> str:
    """Unit of a quantity from its name suffix (``_W`` -> W, ``_J`` -> J, ``_K`` -> K, ``_s`` -> s, ...)."""
    for suffix, unit in (("_W", "W"), ("_J", "J"), ("_K", "K"), ("_s", "s"), ("_kg_s", "kg/s"), ("_Pa", "Pa"),
                         ("_m3_s", "m3/s"), ("_kg", "kg"), ("_m3", "m3")):
        if name.endswith(suffix):
            return unit
    return "1"


def sha256_file(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def package_versions() -> dict[str, str]:
    """Versions of hpctwin and the packages that shape its results."""
    out = {"python": sys.version.split()[0]}
    for pkg in ("hpctwin", "numpy", "pandas", "h5py", "fmpy", "rumoca", "mpi4py", "psychrolib", "pydantic"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def git_sha() -> str:
    """Commit of the hpctwin source tree, or 'unknown' outside a git checkout."""
    try:
        here = Path(__file__).resolve().parent
        r = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5)
        return r.stdout.strip() if r.returncode == 0 else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


class atomic_h5:
    """Context manager: an ``h5py.File`` opened on a temporary name, renamed to ``path`` only on success.

    On an exception the temporary file is removed and nothing is left at ``path``.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.tmp = self.path.with_name(f".{self.path.name}.tmp-{os.getpid()}")

    def __enter__(self) -> h5py.File:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.f = h5py.File(self.tmp, "w", track_order=True)
        return self.f

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            self.f.close()
            if exc_type is None:
                if self.path.is_dir():
                    raise IsADirectoryError(f"{self.path}: is a folder; give an output file name")
                os.replace(self.tmp, self.path)
        finally:
            self.tmp.unlink(missing_ok=True)


def _dataset(group: h5py.Group, name: str, data: np.ndarray, units: str, long_name: str = "") -> None:
    data = np.asarray(data)
    kw = {}
    if data.ndim >= 1 and data.size > 1024:
        kw = {"compression": "gzip", "compression_opts": 4, "shuffle": True,
              "chunks": (min(data.shape[0], 65536),) + data.shape[1:]}
    ds = group.create_dataset(name, data=data, track_times=False, **kw)
    ds.attrs["units"] = units
    if long_name:
        ds.attrs["long_name"] = long_name


def write_run(path: str | Path, result, config_json: str, *, run_name: str, system_name: str, policy: str,
              seed: int, input_checksums: dict[str, str], load_report: dict | None = None,
              time_origin_unix_s: float = float("nan"), job_units: dict[str, str] | None = None,
              serving=None) -> Path:
    """Write one run's results to ``path`` (atomically).

    Parameters
    ----------
    path : str or Path
        Output file; parent folders are created.
    result : scheduler_sim.simulation.SimulationResult
        What the run produced.
    config_json : str
        Canonical JSON of the run configuration.
    run_name, system_name, policy : str
        Identification stored as root attributes.
    seed : int
        Seed of the run.
    input_checksums : dict of str -> str
        SHA-256 of every input file (trace, weather, FMU), keyed by role.
    load_report : dict or None
        The trace loader's report (:meth:`dataloaders.report.LoadReport.to_dict`).
    time_origin_unix_s : float
        Unix time of simulation time 0 (NaN when the trace gives none).
    job_units : dict or None
        Units of job columns that are not recognisable by suffix.
    serving : scheduler_sim.serving.run.ServingOutput or None
        A co-located serving partition's results, written to ``/serving`` by :func:`_write_serving`.

    Returns
    -------
    Path
        ``path``.
    """
    from jobs.table import JOB_COLUMNS

    path = Path(path)
    with atomic_h5(path) as f:
        f.attrs["schema_version"] = SCHEMA_VERSION
        f.attrs["software_version"] = package_versions().get("hpctwin", "unknown")
        f.attrs["git_sha"] = git_sha()
        f.attrs["run_name"] = run_name
        f.attrs["system"] = system_name
        f.attrs["policy"] = policy
        f.attrs["seed"] = int(seed)
        f.attrs["config_json"] = config_json
        f.attrs["pue_definition"] = PUE_DEFINITION
        from .runner import pue_category

        f.attrs["pue_category"] = pue_category(result.info)
        f.attrs["it_fans_rule"] = IT_FANS_RULE
        f.attrs["facility_stages_counted"] = ",".join(result.info.get("facility_stages_counted", []))
        f.attrs["facility_stages_absent"] = ",".join(result.info.get("facility_stages_absent", []))
        f.attrs["cooling_modelled"] = bool("T_wb_K" in result.facility)
        f.attrs["complete"] = bool(result.info.get("complete", True))
        f.attrs["failure"] = str(result.info.get("failure", ""))

        g = f.create_group("jobs")
        for col in result.jobs.columns:
            s = result.jobs[col]
            if s.dtype == object or pd.api.types.is_string_dtype(s.dtype):
                data = np.array(s.astype(str).tolist(), dtype=h5py.string_dtype("utf-8"))
                units = ""
            else:
                data = s.to_numpy()
                units = JOB_COLUMNS[col][1] if col in JOB_COLUMNS else (job_units or {}).get(col, unit_of(col))
            desc = JOB_COLUMNS[col][2] if col in JOB_COLUMNS else _JOB_RESULT_DOCS.get(col, "")
            _dataset(g, col, data, units, desc)

        if result.job_cdu_it_W is not None:
            _dataset(g, "it_power_cdu_W", result.job_cdu_it_W, "W",
                     "Rack-input power of the job in each CDU while it runs, shape (n_jobs, n_cdus)")
        if result.allocations:
            al = f.create_group("allocations")
            al.attrs["long_name"] = "Every run attempt of every job as runs of consecutive nodes"
            for name, arr in result.allocations.items():
                _dataset(al, name, arr, unit_of(name))
        ts = f.create_group("timeseries")
        _dataset(ts, "time_s", result.time_s, "s", "Start of the output interval (simulation time)")
        ts.attrs["interval_s"] = float(result.time_s[1] - result.time_s[0]) if len(result.time_s) > 1 else float("nan")
        ts.attrs["time_origin_unix_s"] = float(time_origin_unix_s)
        fac = ts.create_group("facility")
        for name, arr in result.facility.items():
            _dataset(fac, name, arr, result.units.get(name, unit_of(name)), _LONG_NAMES.get(name, ""))
        if "PUE" in fac and "T_wb_K" not in result.facility:
            fac["PUE"].attrs["undefined"] = "no cooling plant was modelled (cooling off): PUE is not defined (NaN)"
        cdu = ts.create_group("cdu")
        for name, arr in result.cdu.items():
            _dataset(cdu, name, arr, result.units.get(name, unit_of(name)), _LONG_NAMES.get(name, ""))

        rk = ts.create_group("rack")
        for name, arr in result.rack.items():
            _dataset(rk, name, arr, unit_of(name), "Rack input power (IT power of the rack)")
        from .metrics import group_metrics
        mg = f.create_group("metrics")
        for by in ("account", "size"):
            gm = group_metrics(result.jobs, by)
            gg = mg.create_group(f"by_{by}")
            for col in gm.columns:
                if gm[col].dtype == object or pd.api.types.is_string_dtype(gm[col].dtype):
                    _dataset(gg, col, np.array(gm[col].astype(str).tolist(), dtype=h5py.string_dtype("utf-8")), "")
                else:
                    _dataset(gg, col, gm[col].to_numpy(), {"node_hours": "h"}.get(col, unit_of(col)))
        sg = f.create_group("summary")
        for k, v in result.summary.items():
            sg.attrs[k] = float(v)
        tg = f.create_group("totals")
        for k, v in result.totals.items():
            tg.attrs[k] = float(v)
        write_attribution(f, result, config_json)
        pg = f.create_group("provenance")
        pg.attrs["input_checksums_json"] = json.dumps(input_checksums, sort_keys=True)
        pg.attrs["versions_json"] = json.dumps(package_versions(), sort_keys=True)
        pg.attrs["load_report_json"] = json.dumps(load_report or {}, sort_keys=True, default=str)
        info = {k: v for k, v in result.info.items() if k not in VOLATILE_ATTRS}
        pg.attrs["info_json"] = json.dumps(info, sort_keys=True, default=str)
        pg.attrs["created"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
        pg.attrs["wall_time_s"] = float(result.info.get("wall_time_s", float("nan")))
        pg.attrs["scheduling_time_s"] = float(result.info.get("scheduling_time_s", float("nan")))
        if "twin_latency_s" in result.info:
            pg.attrs["twin_latency_s"] = np.asarray(result.info["twin_latency_s"], dtype=float)
        _write_serving(f, serving)
    return path


def _write_serving(f: h5py.File, serving) -> None:
    """Write the ``/serving`` group (docs/output_schema.md) when the run had a serving partition."""
    if serving is None:
        return
    from .serving.run import write_serving_group

    write_serving_group(f, serving)


_JOB_RESULT_DOCS = {
    "sim_start_s": "Simulated start time",
    "sim_end_s": "Simulated end time",
    "outcome": "Simulated outcome: 1 completed, 2 killed at requested wall time, 3 killed by node down, 0 not run",
    "prefilled": "Running when the window opened; placed first at the window start",
    "node_power_W": "DC power of each of the job's nodes while it runs (mean of the telemetry series if measured)",
    "node_power_model_W": "Node DC power the utilisation model gives for the job (written when measured power is used)",
    "energy_dc_J": "Node DC energy of the job = node_power_W * nodes * run_s",
    "energy_it_J": "Rack-input energy of the job: its nodes' DC energy plus their attributed conversion losses and overhead share",
    "wait_s": "wait_s = sim_start_s - submit_time_s",
    "turnaround_s": "turnaround_s = sim_end_s - submit_time_s",
    "run_s": "run_s = sim_end_s - sim_start_s",
    "bounded_slowdown": "max(1, turnaround_s / max(run_s, 10 s))",
}


def check_schema(f: h5py.File, path: str | Path = "") -> None:
    """Refuse a file that is not an hpctwin run file of a compatible schema (same major version).

    Raises
    ------
    SchemaError
        With the file name, the version found and the version expected.
    """
    v = f.attrs.get("schema_version")
    if v is None:
        raise SchemaError(f"{path}: not an hpctwin run file (no schema_version attribute)")
    v = v.decode() if isinstance(v, bytes) else str(v)
    if v.split(".")[0] != SCHEMA_VERSION.split(".")[0]:
        raise SchemaError(f"{path}: schema_version {v} is not compatible with this hpctwin (reads {SCHEMA_VERSION})")


def read_jobs(path: str | Path) -> pd.DataFrame:
    """Read the /jobs table of a run file into a DataFrame (strings decoded)."""
    with h5py.File(path, "r") as f:
        check_schema(f, path)
        data = {}
        for name, ds in f["jobs"].items():
            if ds.ndim != 1:
                continue  # per-job matrices (e.g. it_power_cdu_W) are read with h5py
            arr = ds[()]
            if ds.dtype.kind == "O":
                arr = np.array([x.decode() if isinstance(x, bytes) else x for x in arr], dtype=object)
            data[name] = arr
    return pd.DataFrame(data)


def read_series(path: str | Path, which: str = "facility") -> pd.DataFrame:
    """Read /timeseries/facility (or one CDU column per series for 'cdu') into a DataFrame indexed by time_s."""
    with h5py.File(path, "r") as f:
        check_schema(f, path)
        t = f["timeseries/time_s"][()]
        cols = {}
        for name, ds in f[f"timeseries/{which}"].items():
            arr = ds[()]
            if arr.ndim == 1:
                cols[name] = arr
            else:
                for i in range(arr.shape[1]):
                    cols[f"{name}[{i}]"] = arr[:, i]
    return pd.DataFrame(cols, index=pd.Index(t, name="time_s"))


def read_summary(path: str | Path) -> dict[str, float]:
    """Headline metrics (/summary attributes) of a run file."""
    with h5py.File(path, "r") as f:
        check_schema(f, path)
        return {k: float(v) for k, v in f["summary"].attrs.items()}
