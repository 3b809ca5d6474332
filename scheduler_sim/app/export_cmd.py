"""``hpctwin export``: one table of an output file as CSV or Parquet (scheduler_sim.io.export)."""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["cmd_export"]


def cmd_export(a: argparse.Namespace) -> int:
    """``hpctwin export FILE.h5 --table T --format F [--out FILE]``: check the file, write the table; returns 0."""
    from ..io.export import export_table

    fmt = a.format or ("parquet" if a.out and Path(a.out).suffix.lower() in (".parquet", ".pq") else "csv")
    out = Path(a.out) if a.out else Path(a.file).with_name(f"{Path(a.file).stem}_{a.table}.{fmt}")
    path, n_rows, n_cols = export_table(a.file, a.table, out, fmt, allow_unverified=a.no_verify)
    print(f"wrote {path} ({a.table}: {n_rows:,} rows x {n_cols} columns, {fmt})")
    return 0
