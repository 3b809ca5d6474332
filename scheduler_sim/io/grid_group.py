"""Writer of a run file's ``/grid`` group (#15: demand-response events, ramps, battery); layout in
docs/output_schema.md.

The content is built by :func:`scheduler_sim.app.grid_run.grid_outputs` as plain data so this layer does not
import the analysis above it::

    {"<subgroup>": {"attrs": {name: number or str}, "datasets": {name: (array, units, long_name)}}}
"""

from __future__ import annotations

import h5py
import numpy as np

from .hdf5 import write_dataset

__all__ = ["write_grid_group"]


def write_grid_group(f: h5py.File, content: dict[str, dict]) -> None:
    """Write ``/grid`` with one subgroup per key of ``content`` (module docstring).

    Parameters
    ----------
    f : h5py.File
        The run file, open for writing.
    content : dict[str, dict]
        Subgroup name -> {"attrs": dict, "datasets": dict of name -> (array, units, long_name)}.

    Raises
    ------
    TypeError
        If an attribute is neither a number, a bool nor a string.
    """
    g = f.require_group("grid")  # the cost / CO2 part (scheduler_sim.io.grid) may share it
    g.attrs["long_name"] = "The facility on the grid: cost and CO2, demand-response events, ramp statistics, battery (issue #15)"
    for sub, body in content.items():
        sg = g.create_group(sub)
        for k, v in body.get("attrs", {}).items():
            if isinstance(v, (bool, np.bool_)):
                sg.attrs[k] = bool(v)
            elif isinstance(v, (int, float, np.integer, np.floating)):
                sg.attrs[k] = float(v)
            elif isinstance(v, str):
                sg.attrs[k] = v
            else:
                raise TypeError(f"/grid/{sub} attribute {k!r}: expected a number or a string, got {type(v).__name__}")
        for name, (arr, units, long_name) in body.get("datasets", {}).items():
            a = np.asarray(arr)
            if a.dtype.kind in ("U", "O"):
                a = np.array([str(x) for x in a.tolist()], dtype=h5py.string_dtype("utf-8"))
            write_dataset(sg, name, a, units, long_name)
