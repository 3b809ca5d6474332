"""Pieces every study script in experiments/ shares: the MPI world (optional) and saving a figure.

Written once here instead of in each study (grid_demand_response, grid_ramps_battery, incentive, plots).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

if TYPE_CHECKING:  # only for the annotation
    import matplotlib.figure

__all__ = ["world", "save_figure", "start_study", "my_share", "gather_rows", "gather_dicts"]


def world() -> tuple[object | None, int, int]:
    """The MPI world communicator with this process's rank and the number of ranks.

    Returns
    -------
    tuple
        ``(comm, rank, size)``; ``(None, 0, 1)`` when mpi4py is not installed (the study then runs in one process).
    """
    try:
        from mpi4py import MPI  # optional: importing mpi4py.MPI initialises MPI; without mpi4py run in one process
    except ImportError:
        return None, 0, 1
    comm = MPI.COMM_WORLD
    return comm, comm.Get_rank(), comm.Get_size()


def start_study(description: str, default_out: str, argv: list[str] | None) -> tuple[Path, object | None, int, int]:
    """Parse a study's command line (``--out``), make its output folder and join the MPI world.

    Parameters
    ----------
    description : str
        The ``--help`` text.
    default_out : str
        Output folder when ``--out`` is not given.
    argv : list[str] | None
        Command-line arguments (None: ``sys.argv``).

    Returns
    -------
    tuple
        ``(out folder, comm, rank, size)`` as :func:`world`.
    """
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--out", default=default_out, help="output folder")
    a = ap.parse_args(argv)
    comm, rank, size = world()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    return out, comm, rank, size


def my_share(items: Sequence, rank: int, size: int) -> list[tuple[int, object]]:
    """The ``(index, item)`` pairs this rank runs: every ``size``-th item from ``rank`` (round robin).

    Parameters
    ----------
    items : Sequence
        The scenarios, in order.
    rank : int
        This process's rank.
    size : int
        Number of ranks.

    Returns
    -------
    list of (int, object)
        Index in ``items`` and item.
    """
    return [(i, x) for i, x in enumerate(items) if i % size == rank]


def gather_rows(comm: object | None, rows: list) -> list | None:
    """Every rank's ``rows`` joined on rank 0 (rank order, then each rank's order); None on the other ranks.

    Parameters
    ----------
    comm : object | None
        The mpi4py communicator :func:`world` gives; None: one process.
    rows : list
        This rank's rows.

    Returns
    -------
    list or None
        All rows on rank 0, None elsewhere.
    """
    parts = comm.gather(rows, root=0) if comm is not None else [rows]
    return None if parts is None else [x for part in parts for x in part]


def gather_dicts(comm: object | None, d: dict) -> dict | None:
    """:func:`gather_rows` of a dict's items: every rank's entries merged on rank 0 (later ranks win), None elsewhere."""
    parts = comm.gather(d, root=0) if comm is not None else [d]
    return None if parts is None else {k: v for part in parts for k, v in part.items()}


def save_figure(fig: "matplotlib.figure.Figure", out_dir: str | Path, stem: str) -> list[Path]:
    """Save ``fig`` as ``<out_dir>/<stem>.png`` (130 dpi) and ``.svg``, then close it.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure.
    out_dir : str | Path
        An existing folder.
    stem : str
        File name without extension.

    Returns
    -------
    list[Path]
        The PNG and the SVG path.
    """
    import matplotlib.pyplot as plt  # heavy: only when a figure is saved

    from jobs.cachedirs import atomic_output

    paths = []
    for ext in ("png", "svg"):
        p = Path(out_dir) / f"{stem}.{ext}"
        with atomic_output(p, what="figure") as fh:  # the one writer: private temporary, never a planted link
            fig.savefig(fh, format=ext, dpi=130, bbox_inches="tight")
        paths.append(p)
    plt.close(fig)
    return paths


def write_csv(table: pd.DataFrame, path: str | Path) -> Path:
    """Write ``table`` as CSV (no index) through the one writer (:func:`jobs.cachedirs.atomic_output`).

    Parameters
    ----------
    table : pd.DataFrame
        The table.
    path : str | Path
        Destination file.

    Returns
    -------
    Path
        ``path``.
    """
    from jobs.cachedirs import atomic_output

    with atomic_output(path, "w", newline="", what="table") as fh:
        table.to_csv(fh, index=False)
    return Path(path)
