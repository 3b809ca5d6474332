"""Pieces every study script in experiments/ shares: the MPI world (optional) and saving a figure.

Written once here instead of in each study (grid_demand_response, grid_ramps_battery, incentive, plots).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

if TYPE_CHECKING:  # only for the annotation
    import matplotlib.figure

__all__ = ["world", "save_figure"]


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
