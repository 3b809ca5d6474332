"""Policy studies: a study file declares a base run and axes; scenarios are spread over MPI ranks.

Study file (TOML)::

    name = "theta-fcfs-vs-easy"
    plot = "experiments.plots:policy_study"   # optional: called on rank 0 with (summary.h5, out dir)
    [base]                         # any RunConfig fields (same layout as a run file)
    trace = { window_days = 7.0 }
    [axes]                         # dotted RunConfig keys -> list of values; the scenarios are their product
    "scheduler.policy" = ["fcfs", "easy"]
    "cooling.weather" = ["tmy3", "constant"]
    [[scenarios]]                  # optional explicit list (each crossed with the axes), with a label
    name = "conservative"
    "scheduler.backfill" = "conservative"

Scenarios are enumerated in a fixed order (the product of the axes in file order), each is a pure function of its
configuration (:func:`scheduler_sim.runner.run_one`), and scenario ``i`` runs on rank ``i % size``. Each writes
``<out>/<scenario>.h5``; rank 0 gathers the headline metrics and writes ``<out>/summary.h5`` with one row per
scenario and an HDF5 external link to each run file. The results therefore do not depend on the number of ranks.
A scenario that raises is recorded as failed (with its error) and the sweep goes on.
"""

from __future__ import annotations

import itertools
import re
import tomllib
import traceback
from dataclasses import dataclass
from pathlib import Path

import h5py
import numpy as np
from pydantic import ValidationError

from .config import ConfigError, RunConfig, _format_errors

__all__ = ["Scenario", "load_study", "run_sweep"]


@dataclass(frozen=True)
class Scenario:
    """One member of a study: its index, file-safe name and configuration."""

    index: int
    name: str
    config: RunConfig


def _slug(v: object) -> str:
    if isinstance(v, (list, tuple)) and not v:
        v = "none"
    elif isinstance(v, dict):
        v = "_".join(str(x) for x in v.values())
    return re.sub(r"[^A-Za-z0-9.+-]+", "_", str(v)).strip("_")[:40]


def load_study(path: str | Path) -> tuple[str, list[Scenario]]:
    """Read a study file and enumerate its scenarios.

    Raises
    ------
    ConfigError
        If the file is missing or invalid, an axis key is unknown, or an axis is empty.
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: study file not found")
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    unknown = set(data) - {"name", "base", "axes", "scenarios", "plot"}
    if unknown:
        raise ConfigError(f"{path}: unknown top-level key(s) {sorted(unknown)}; expected name, base, axes, "
                          f"scenarios, plot")
    study = str(data.get("name", path.stem))
    base_data = dict(data.get("base", {}))
    base_data.setdefault("name", study)
    try:
        base = RunConfig.model_validate(base_data)
    except ValidationError as exc:
        raise ConfigError(_format_errors(f"{path} [base]", exc)) from None
    rel = {}
    if base.trace.path and not Path(base.trace.path).is_absolute():
        rel["trace.path"] = str((path.parent / base.trace.path).resolve())
    if base.cooling.weather_path and not Path(base.cooling.weather_path).is_absolute():
        rel["cooling.weather_path"] = str((path.parent / base.cooling.weather_path).resolve())
    if rel:  # relative paths in a study file are relative to the study file, as in a run file
        base = base.with_overrides(rel)
    axes = data.get("axes", {})
    for k, v in axes.items():
        if not isinstance(v, list) or not v:
            raise ConfigError(f"{path}: axis {k!r} must be a non-empty list")
    keys = list(axes)
    explicit = data.get("scenarios", [{}])
    if not isinstance(explicit, list) or not explicit or not all(isinstance(e, dict) for e in explicit):
        raise ConfigError(f"{path}: [[scenarios]] must be a non-empty list of tables of dotted overrides")
    scenarios = []
    i = 0
    for k, ex in enumerate(explicit):
        ex = dict(ex)
        label = str(ex.pop("name", "")) if "name" in ex else ""
        if not label and "scenarios" in data:
            label = f"s{k}"
        for combo in itertools.product(*(axes[key] for key in keys)) if keys else [()]:
            name = f"{i:03d}" + (f"_{_slug(label)}" if label else "") + "".join(f"_{_slug(v)}" for v in combo)
            try:
                cfg = base.with_overrides({**ex, **dict(zip(keys, combo)), "name": name})
            except ConfigError as exc:
                raise ConfigError(f"{path}: scenario {name}: {exc}") from None
            scenarios.append(Scenario(i, name, cfg))
            i += 1
    return study, scenarios


def study_plot_function(path: str | Path):
    """The study's plot function (``plot = "module:function"`` in the study file), or None."""
    data = tomllib.loads(Path(path).read_text())
    spec = data.get("plot")
    if not spec:
        return None
    mod, _, fn = str(spec).partition(":")
    import importlib

    try:
        return getattr(importlib.import_module(mod), fn)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"{path}: plot = {spec!r} cannot be imported: {exc}") from None


def _comm():
    try:
        from mpi4py import MPI
    except ImportError:  # no MPI installed: run everything here
        return None
    return MPI.COMM_WORLD


def run_sweep(study_path: str | Path, out_dir: str | Path, *, echo=print) -> Path | None:
    """Run every scenario of a study, spread over the MPI ranks of COMM_WORLD (or one process).

    Parameters
    ----------
    study_path : str or Path
        Study TOML file.
    out_dir : str or Path
        Folder for the run files and ``summary.h5`` (created).
    echo : callable(str)
        Printer used on rank 0 only.

    Returns
    -------
    Path or None
        The summary file on rank 0; None on other ranks.
    """
    from .hdf5io import atomic_h5
    from .runner import run_one

    comm = _comm()
    rank = comm.Get_rank() if comm is not None else 0
    size = comm.Get_size() if comm is not None else 1
    say = echo if rank == 0 else (lambda s: None)
    study, scenarios = load_study(study_path)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    say(f"study {study}: {len(scenarios)} scenario(s) on {size} rank(s) -> {out_dir}")
    mine = [s for s in scenarios if s.index % size == rank]
    results = []
    for s in mine:
        try:
            r = run_one(s.config, out_dir / f"{s.name}.h5", progress=False)
            results.append((s.index, "done", "", r.summary))
            print(f"[rank {rank}] {s.name}: done (PUE {r.summary['PUE']:.4f}, mean wait "
                  f"{r.summary['mean_wait_s'] / 3600:.2f} h)", flush=True)
        except Exception as exc:  # a failed scenario must not stop the sweep
            err = f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"
            results.append((s.index, "failed", err, {}))
            (out_dir / f"{s.name}.h5").unlink(missing_ok=True)  # no stale file from an earlier sweep
            print(f"[rank {rank}] {s.name}: FAILED: {type(exc).__name__}: {exc}", flush=True)
    gathered = comm.gather(results, root=0) if comm is not None else [results]
    if rank != 0:
        return None
    rows = sorted((r for part in gathered for r in part), key=lambda r: r[0])
    metric_names = sorted({k for r in rows for k in r[3]})
    summary_path = out_dir / "summary.h5"
    with atomic_h5(summary_path) as f:
        from .hdf5io import SCHEMA_VERSION
        f.attrs["schema_version"] = SCHEMA_VERSION
        f.attrs["kind"] = "sweep-summary"
        f.attrs["study"] = study
        f.attrs["study_file"] = Path(study_path).read_text()
        t = f.create_group("scenarios")
        str_dt = h5py.string_dtype("utf-8")
        t.create_dataset("name", data=np.array([scenarios[i].name for i, *_ in rows], dtype=str_dt))
        t.create_dataset("status", data=np.array([st for _, st, _, _ in rows], dtype=str_dt))
        t.create_dataset("error", data=np.array([e for _, _, e, _ in rows], dtype=str_dt))
        t.create_dataset("config_json", data=np.array([scenarios[i].config.to_json() for i, *_ in rows], dtype=str_dt))
        t.create_dataset("file", data=np.array([f"{scenarios[i].name}.h5" for i, *_ in rows], dtype=str_dt))
        for m in metric_names:
            ds = t.create_dataset(m, data=np.array([r[3].get(m, np.nan) for r in rows], dtype=float))
            from .hdf5io import unit_of
            ds.attrs["units"] = unit_of(m)
        links = f.create_group("runs")
        for i, st, _, _ in rows:
            if st == "done":
                links[scenarios[i].name] = h5py.ExternalLink(f"{scenarios[i].name}.h5", "/")
    n_fail = sum(1 for r in rows if r[1] == "failed")
    say(f"summary -> {summary_path} ({len(rows) - n_fail} done, {n_fail} failed)")
    plot = study_plot_function(study_path)
    if plot is not None:
        for fig in plot(summary_path, out_dir) or []:
            say(f"figure  -> {fig}")
    return summary_path
