"""Cooling-only mode's output: the HDF5 file of a :class:`cooling_fmu.standalone.StandaloneRun`.

Same conventions as a run file (:mod:`scheduler_sim.io.hdf5`): SI, a ``units`` attribute on every dataset, written
atomically. Layout (``kind = "cooling_standalone"``, schema 1.0)::

    /                              attrs: schema_version, kind, plant, git_sha, step_s, time_origin_unix_s
    /timeseries/time_s             (n_intervals,)          start of each interval [s]; attrs units, interval_s
    /timeseries/facility/<name>    (n_intervals,)          P_it_W, T_wb_K, then every scalar plant output
    /timeseries/cdu/<name>         (n_intervals, n_cdus)   per-CDU plant outputs
    /summary                       attrs: energies [J], PUE, WUE_L_per_kWh, fan share, scale factor
    /provenance                    attrs: input_checksums_json, power_report_json, versions_json
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import numpy as np

from cooling_fmu.standalone import StandaloneRun, run_standalone

from ..io.hdf5 import atomic_h5, git_sha, package_versions, sha256_file
from ..io.schema import KIND_VERSIONS, SchemaWriter

__all__ = ["write_standalone", "run_cooling_standalone"]


def write_standalone(out: str | Path, run: StandaloneRun, power_csv: str | Path) -> Path:
    """Write a cooling-only run to ``out`` (atomically; layout in the module docstring).

    Parameters
    ----------
    out : str or pathlib.Path
        HDF5 file to write; parent folders are created.
    run : cooling_fmu.standalone.StandaloneRun
        The run.
    power_csv : str or pathlib.Path
        The power series it was driven by (its SHA-256 goes to ``/provenance``).

    Returns
    -------
    pathlib.Path
        ``out``.
    """
    out = Path(out)
    with atomic_h5(out) as f:
        w = SchemaWriter(f, "cooling_standalone")
        w.attrs("/", {"schema_version": KIND_VERSIONS["cooling_standalone"], "kind": "cooling_standalone",
                      "plant": run.plant, "git_sha": git_sha(), "step_s": float(run.step_s),
                      "time_origin_unix_s": float(run.time_origin_unix_s), "pue_counts": run.pue_counts})
        w.group("/timeseries")
        w.dataset("/timeseries/time_s", np.arange(run.n_intervals) * float(run.interval_s), chunks=None)
        w.attr("/timeseries/time_s", "interval_s", float(run.interval_s))
        for grp, series in (("facility", run.facility), ("cdu", run.cdu)):
            w.group(f"/timeseries/{grp}")
            for name, (data, unit) in series.items():
                kw = {"chunks": None} if name in ("P_it_W", "T_wb_K") else {"compression": "gzip"}
                w.dataset(f"/timeseries/{grp}/{name}", data, units=unit, **kw)
        w.group("/summary")
        w.attrs("/summary", run.summary)
        w.group("/provenance")
        w.attrs("/provenance", {
            "input_checksums_json": json.dumps({"power": sha256_file(power_csv),
                                                "fmu": run.fmu_sha256 or sha256_file(run.fmu_path)}),
            "power_report_json": json.dumps(asdict(run.report)), "versions_json": json.dumps(package_versions())})
    return out


def run_cooling_standalone(power_csv: str | Path, out: str | Path, **options) -> dict[str, float]:
    """Drive a plant from a measured IT power series (:func:`cooling_fmu.standalone.run_standalone`) and write it.

    Parameters
    ----------
    power_csv : str or pathlib.Path
        Power series (``timestamp_secs, measured_kW``).
    out : str or pathlib.Path
        HDF5 file to write.
    **options
        Keyword arguments of :func:`cooling_fmu.standalone.run_standalone` (plant, step_s, days, ...).

    Returns
    -------
    dict of str -> float
        The run's summary.
    """
    run = run_standalone(power_csv, **options)
    write_standalone(out, run, power_csv)
    return run.summary
