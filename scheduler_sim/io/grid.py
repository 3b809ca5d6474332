"""The ``/grid`` group of a run file: cost and emissions per job, account, CDU and interval.

Written only when the run has grid signals (``[grid]``); layout in docs/output_schema.md and docs/grid.md.
"""

from __future__ import annotations

import h5py
import numpy as np

__all__ = ["write_grid_group", "read_grid_group", "grid_units", "grid_writer"]


def grid_units(name: str, currency: str) -> str:
    """Unit of a ``/grid`` dataset from its name.

    kg for ``co2_kg*``, the currency for ``cost*``, SI per J for the signals, ``1`` for shares and counts, J for
    energies.
    """
    if name.startswith("co2_kg"):
        return "kg"
    if name.startswith("cost"):
        return currency
    if name == "carbon_intensity_kg_per_J" or name == "carbon_mean_per_J":
        return "kg/J"
    if name == "price_per_J" or name == "price_mean_per_J":
        return f"{currency}/J"
    if name.endswith("_J"):
        return "J"
    return "1"


def _dataset(group: h5py.Group, name: str, data: np.ndarray, units: str) -> None:
    """One dataset with its ``units``, chunked and compressed above 1,024 values as
    :func:`scheduler_sim.io.hdf5.write_dataset` does (not imported: hdf5 imports this module).
    """
    kw = {}
    if data.ndim >= 1 and data.size > 1024:
        kw = {"compression": "gzip", "compression_opts": 4, "shuffle": True,
              "chunks": (min(data.shape[0], 65536),) + data.shape[1:]}
    ds = group.create_dataset(name, data=data, track_times=False, **kw)
    ds.attrs["units"] = units


def write_grid_group(f: h5py.File, g: object) -> None:
    """Write ``/grid`` into an open run file.

    Parameters
    ----------
    f : h5py.File
        The run file being written.
    g : object
        The run's cost and emissions (:class:`scheduler_sim.analysis.grid.GridAttribution`).
    """
    currency = str(g.attrs.get("currency", ""))
    root = f.require_group("grid")  # the grid-dynamics reports (events, ramps, battery) may share it
    for k, v in g.attrs.items():
        root.attrs[k] = v
    for sub, data in (("jobs", g.jobs), ("pseudo", g.pseudo), ("accounts", g.accounts), ("cdu", g.cdu),
                      ("timeseries", g.timeseries)):
        sg = root.create_group(sub)
        for name, arr in data.items():
            arr = np.asarray(arr)
            if arr.dtype.kind in "UO":
                sg.create_dataset(name, data=np.array([str(x) for x in arr], dtype=object),
                                  dtype=h5py.string_dtype("utf-8"), track_times=False)
                continue
            _dataset(sg, name, arr, grid_units(name, currency))
    tg = root.create_group("totals")
    for k, v in g.totals.items():
        tg.attrs[k] = float(v)


def grid_writer(g: object):
    """A callable for :func:`scheduler_sim.io.hdf5.write_run`'s ``extra_groups`` that writes the cost / CO2 part of
    ``/grid``.

    Parameters
    ----------
    g : object
        The run's :class:`scheduler_sim.analysis.grid.GridAttribution`.

    Returns
    -------
    callable(h5py.File)
    """
    return lambda f: write_grid_group(f, g)


def read_grid_group(path) -> dict | None:
    """Read ``/grid`` of a run file back as nested dicts, or None when the run had no grid signal.

    ``jobs``, ``pseudo``, ``accounts``, ``cdu``, ``timeseries``: name -> array; ``totals``, ``attrs``: name -> value.
    """
    with h5py.File(path, "r") as f:
        if "grid" not in f or "totals" not in f["grid"]:
            return None
        root = f["grid"]
        out: dict = {"attrs": {k: (v.decode() if isinstance(v, bytes) else v) for k, v in root.attrs.items()},
                     "totals": {k: float(v) for k, v in root["totals"].attrs.items()}}
        for sub in ("jobs", "pseudo", "accounts", "cdu", "timeseries"):
            d = {}
            for k, ds in root[sub].items():
                arr = ds[()]
                if ds.dtype.kind == "O":
                    arr = np.array([x.decode() if isinstance(x, bytes) else x for x in arr], dtype=object)
                d[k] = arr
            out[sub] = d
    return out
