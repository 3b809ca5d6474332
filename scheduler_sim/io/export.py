"""``hpctwin export``: one table of an output file as CSV or Parquet, units in the column names (issue #28 item 8).

The file is checked first (:func:`scheduler_sim.io.hdf5.check_output`: schema and the content record
``content_sha256``); nothing is read before that. Tables (:data:`TABLES`), each a group of 1-D datasets of one
length, or of 2-D datasets of shape (n, m) written as m columns ``name[k]``:

* ``jobs``, ``allocations``: the job and allocation tables;
* ``timeseries``: ``time_s`` and every ``/timeseries/facility`` series;
* ``cdu``, ``rack``: ``time_s`` and the per-CDU / per-rack series (one column per CDU or rack);
* ``attribution``: the per-job attribution (``/attribution/jobs``);
* ``requests``: the serving request table (``/serving/requests``);
* ``grid``: the cost / CO2 per interval (``/grid/timeseries``);
* ``training``, ``rl``: the ``[[workload]]`` reports (``/workload/training``, ``/workload/rl``);
* ``scenarios``: a sweep summary's scenario table.

A column is named ``"<dataset> [<units>]"`` from the dataset's ``units`` attribute (the schema's), e.g.
``P_facility_W [W]``; a dimensionless column (``units`` ``1`` or none) keeps its bare name. The output goes through
the one writer (:func:`jobs.cachedirs.atomic_output`): whole or not at all.
"""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np

__all__ = ["TABLES", "FORMATS", "export_table", "read_table"]

#: Table name -> (group path, time column taken from /timeseries/time_s or None).
TABLES = {"jobs": ("jobs", False), "allocations": ("allocations", False), "timeseries": ("timeseries/facility", True),
          "cdu": ("timeseries/cdu", True), "rack": ("timeseries/rack", True), "attribution": ("attribution/jobs", False),
          "requests": ("serving/requests", False), "grid": ("grid/timeseries", True),
          "training": ("workload/training", False), "rl": ("workload/rl", False), "scenarios": ("scenarios", False)}
FORMATS = ("csv", "parquet")


def _name(ds: h5py.Dataset, name: str) -> str:
    """``"<name> [<units>]"``: the dataset's ``units``, else the schema's unit of a summary key (sweep
    ``/scenarios`` columns); the bare name when dimensionless.
    """
    from .schema import summary_metric

    u = ds.attrs.get("units", "")
    u = u.decode() if isinstance(u, bytes) else str(u)
    if not u:
        m = summary_metric(name)
        u = m.unit if m is not None else ""
    return f"{name} [{u}]" if u and u != "1" else name


def _column(ds: h5py.Dataset):
    a = ds[()]
    if a.dtype.kind in ("S", "O"):
        a = np.array([x.decode("utf-8", "replace") if isinstance(x, bytes) else str(x) for x in a], dtype=object)
    return a


def read_table(path: str | Path, table: str):
    """One table of a checked output file as a :class:`pandas.DataFrame` with units in the column names.

    Parameters
    ----------
    path : str | Path
        The output file (already checked by :func:`scheduler_sim.io.hdf5.check_output`).
    table : str
        One of :data:`TABLES`.

    Returns
    -------
    pandas.DataFrame
        Shape (n_rows, n_columns).

    Raises
    ------
    ValueError
        If ``table`` is unknown, or the file has no such group (the tables it has are named), or its datasets
        disagree in length (the dataset is named).
    """
    import pandas as pd

    if table not in TABLES:
        raise ValueError(f"unknown table {table!r}: expected one of {', '.join(TABLES)}")
    group, timed = TABLES[table]
    with h5py.File(path, "r") as f:
        if group not in f or not isinstance(f[group], h5py.Group):
            have = [t for t, (g, _) in TABLES.items() if g in f]
            raise ValueError(f"{path}: no table {table!r} (no /{group}); this file has: {', '.join(have) or 'none'}")
        cols: dict[str, np.ndarray] = {}
        n = None
        if timed and "timeseries/time_s" in f:
            cols[_name(f["timeseries/time_s"], "time_s")] = f["timeseries/time_s"][()]
            n = cols[next(iter(cols))].shape[0]
        g = f[group]
        for k in sorted(g):
            ds = g[k]
            if not isinstance(ds, h5py.Dataset) or ds.ndim not in (1, 2):
                continue
            if n is None:
                n = ds.shape[0]
            if ds.shape[0] != n:
                raise ValueError(f"{path}: /{group}/{k} has {ds.shape[0]} rows, the table {n}: not one table")
            a = _column(ds)
            if ds.ndim == 1:
                cols[_name(ds, k)] = a
            else:
                u = _name(ds, k)[len(k):]
                for j in range(a.shape[1]):
                    cols[f"{k}[{j}]{u}"] = a[:, j]
    return pd.DataFrame(cols)


def export_table(path: str | Path, table: str, out: str | Path, fmt: str | None = None, *,
                 allow_unverified: bool = False) -> tuple[Path, int, int]:
    """Check an output file, then write one of its tables as CSV or Parquet.

    Parameters
    ----------
    path : str | Path
        The output file (run, cooling-only or sweep summary); checked first by
        :func:`scheduler_sim.io.hdf5.check_output`, which raises SchemaError / DamagedFileError for a file that is
        not a compatible output file or does not match its content record.
    table : str
        One of :data:`TABLES`.
    out : str | Path
        The file to write.
    fmt : str | None
        The format; None: from the suffix of ``out`` (``.parquet`` / ``.pq``, else CSV).
    allow_unverified : bool
        Accept a file without ``content_sha256`` (``--no-verify``), with a warning.

    Returns
    -------
    (Path, int, int)
        The file written, rows and columns.

    Raises
    ------
    ValueError
        If the table or the format is unknown, or the table is not in the file.
    """
    from jobs.cachedirs import atomic_output

    from .hdf5 import check_output

    out = Path(out)
    fmt = fmt or ("parquet" if out.suffix.lower() in (".parquet", ".pq") else "csv")
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}: expected csv or parquet")
    if table not in TABLES:
        raise ValueError(f"unknown table {table!r}: expected one of {', '.join(TABLES)}")
    check = check_output(path, allow_unverified=allow_unverified)  # first: nothing is read before it
    import sys

    for w in check.warnings:
        print(w, file=sys.stderr)
    df = read_table(path, table)
    if fmt == "csv":
        with atomic_output(out, "w", what="export", newline="") as fh:
            df.to_csv(fh, index=False)
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        tab = pa.Table.from_pandas(df, preserve_index=False)
        with atomic_output(out, what="export") as fh:
            pq.write_table(tab, fh)
    return out, int(df.shape[0]), int(df.shape[1])
