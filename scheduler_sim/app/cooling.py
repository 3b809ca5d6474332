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
    out : str | Path
        HDF5 file to write; parent folders are created.
    run : StandaloneRun
        The run (:class:`cooling_fmu.standalone.StandaloneRun`).
    power_csv : str | Path
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
    power_csv : str | Path
        Power series (``timestamp_secs, measured_kW``).
    out : str | Path
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


def design_day(weather_path: str | Path) -> tuple[int, int, float, float]:
    """The design day of a weather year: the calendar day with the highest daily mean wet-bulb.

    Parameters
    ----------
    weather_path : str | Path
        EPW or TMY3 file.

    Returns
    -------
    month, day : int
        The day.
    mean_T_wb_K, max_T_wb_K : float
        Its mean and highest hourly wet-bulb [K].
    """
    from cooling_fmu.weather import load_weather

    df, _ = load_weather(weather_path)
    g = df.groupby(["month", "day"])["T_wb_K"]
    mean = g.mean()
    (m, d) = mean.idxmax()
    return int(m), int(d), float(mean.max()), float(g.max().loc[(m, d)])


def design_day_series(system: object, weather: str | None, folder: Path) -> tuple[Path, dict]:
    """A constant full-load IT power series over the design day of the system's site, as a cooling CSV.

    Parameters
    ----------
    system : object
        The machine (a power.System; full load: every node at utilisation 1 through the power chain).
    weather : str | None
        Weather file or shipped site; None: the system's site (else Golden, CO).
    folder : Path
        Where the CSV is written.

    Returns
    -------
    csv : pathlib.Path
        ``timestamp_secs, measured_kW`` every 15 min over the day (year 2022, UTC; aligned to the weather by
        month / day / hour like any series).
    info : dict
        ``P_it_W``, ``day`` (MM-DD), ``weather``, ``weather_path``, ``mean_T_wb_K``, ``max_T_wb_K``,
        ``design_T_wb_K`` (0.4 %).
    """
    import datetime as dt

    import numpy as np

    from cooling_fmu.weather import design_conditions, resolve_weather_file
    from power import PowerChain, node_power_w

    base = str(Path(system.source).parent) if system.source else None
    spec = weather or system.site_weather or "golden"
    path = resolve_weather_file(spec, base if not weather else None)
    m, d, mean, mx = design_day(path)
    p = np.concatenate([np.full(q.n_nodes, float(node_power_w(1.0, 1.0, q.node))) for q in system.partitions])
    it = float(PowerChain(system).evaluate(p).it_input_W)
    t0 = dt.datetime(2022, m, d, tzinfo=dt.timezone.utc).timestamp()
    t = t0 + 900.0 * np.arange(97)
    csv = folder / "design_day.csv"
    csv.write_text("timestamp_secs,measured_kW\n" + "".join(f"{x:.0f},{it / 1e3:.6f}\n" for x in t))
    info = {"P_it_W": it, "day": f"{m:02d}-{d:02d}", "weather": Path(path).name, "weather_path": str(path),
            "mean_T_wb_K": mean, "max_T_wb_K": mx, "design_T_wb_K": design_conditions(path).wet_bulb_K}
    return csv, info
