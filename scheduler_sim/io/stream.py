"""Streamed series (issue #26 item 3): a run's interval rows appended to the HDF5 file while the run goes.

The interval reducer (:class:`scheduler_sim.kernel.recorder.IntervalReducer`) hands each finished block of output
intervals to a :class:`SeriesStream`, which appends every series to its own chunked, gzip-compressed dataset
(``/timeseries/...``, the layout of docs/output_schema.md) through a bounded in-memory block
(:class:`BlockAppender`: one chunk per dataset, the dataset grown by ``resize``). The file is the run's own
private temporary (:class:`scheduler_sim.io.hdf5.atomic_h5`), published by rename only when the run and the rest
of the file are complete; a run that has no output file (``run_one(cfg, None)``, a sweep with
``output.write = false``, an ensemble member's summary record) streams into a temporary file of its own, removed
when the result is freed. So memory does not hold the series, whatever the run length.

End-of-run readers get the series through :class:`StreamedGroup` (a mapping name -> array, read from the file on
each access and not kept), with the same values, bit for bit, as the in-memory result.
"""

from __future__ import annotations

import shutil
import tempfile
import weakref
from collections.abc import Callable, Iterator, MutableMapping
from pathlib import Path

import h5py
import numpy as np

from .schema import SchemaWriter, unit_of

__all__ = ["BlockAppender", "SeriesStream", "StreamedGroup", "block_rows_for"]

#: Bytes of one block (= one chunk) of a streamed dataset, at most: the memory a series holds while it streams.
BLOCK_BYTES = 1 << 16


def block_rows_for(row_shape: tuple[int, ...], itemsize: int = 8, block_bytes: int = BLOCK_BYTES) -> int:
    """Rows of one block (and chunk) of a streamed dataset whose rows have shape ``row_shape``.

    Parameters
    ----------
    row_shape : tuple[int, ...]
        Shape of one row (``()`` for a 1-D series, ``(n_cdus,)`` for a per-CDU one).
    itemsize : int
        Bytes per value.
    block_bytes : int
        Bytes of a block at most (at least one row).

    Returns
    -------
    int
        Rows per block, >= 1.
    """
    row = max(1, int(np.prod(row_shape, dtype=np.int64)) * itemsize)
    return max(1, block_bytes // row)


class BlockAppender:
    """Append rows to a resizable HDF5 dataset through an in-memory block of ``block_rows`` rows.

    Rows are copied into the block; a full block is written at the end of the dataset (grown by ``resize`` along
    its first axis) in one write, so with ``block_rows`` equal to the dataset's chunk rows every write fills one
    whole chunk. :meth:`flush` writes a partial block (the last one).

    Parameters
    ----------
    ds : h5py.Dataset
        The dataset, resizable along axis 0 (``maxshape=(None, ...)``).
    block_rows : int
        Rows held before a write (>= 1).

    Raises
    ------
    ValueError
        If ``block_rows < 1``.
    """

    def __init__(self, ds: h5py.Dataset, block_rows: int) -> None:
        if block_rows < 1:
            raise ValueError(f"block_rows must be >= 1, got {block_rows}")
        self.ds = ds
        self._block = np.empty((int(block_rows),) + tuple(ds.shape[1:]), dtype=ds.dtype)
        self._fill = 0

    @property
    def n_rows(self) -> int:
        """Rows appended so far (written or in the block)."""
        return int(self.ds.shape[0]) + self._fill

    def append(self, rows: np.ndarray) -> None:
        """Append ``rows`` (shape ``(m,) + row shape``), in order.

        Parameters
        ----------
        rows : np.ndarray
            The rows; values are copied (cast to the dataset's dtype).
        """
        rows = np.asarray(rows)
        i, m, cap = 0, rows.shape[0], self._block.shape[0]
        while i < m:
            take = min(m - i, cap - self._fill)
            self._block[self._fill:self._fill + take] = rows[i:i + take]
            self._fill += take
            i += take
            if self._fill == cap:
                self.flush()

    def flush(self) -> None:
        """Write the rows held in the block to the end of the dataset (nothing when the block is empty)."""
        if not self._fill:
            return
        n = int(self.ds.shape[0])
        self.ds.resize(n + self._fill, axis=0)
        self.ds[n:n + self._fill] = self._block[:self._fill]
        self._fill = 0


class StreamedGroup(MutableMapping):
    """The series of one ``/timeseries`` group of a :class:`SeriesStream`, by name, read from the file.

    ``group[name]`` reads the whole dataset (a fresh array, not kept); ``group[name] = array`` writes a new dataset
    (an end-of-run series such as ``P_facility_W``); names iterate in creation order (the order of the file).

    Parameters
    ----------
    stream : SeriesStream
        The stream.
    group : str
        Group name under ``/timeseries`` (``facility``, ``cdu``, ``rack``, ``partition``).
    """

    def __init__(self, stream: SeriesStream, group: str) -> None:
        self._stream = stream
        self._group = group

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self._stream.names[self._group]:
            raise KeyError(name)
        return self._stream.read(f"/timeseries/{self._group}/{name}")

    def __setitem__(self, name: str, value: np.ndarray) -> None:
        self._stream.write(self._group, name, value)

    def __delitem__(self, name: str) -> None:
        raise TypeError("a streamed series cannot be deleted from its file")

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._stream.names[self._group]))

    def __len__(self) -> int:
        return len(self._stream.names[self._group])

    def __contains__(self, name: object) -> bool:
        return name in self._stream.names[self._group]

    def blocks(self, name: str, rows: int = 1 << 16) -> Iterator[np.ndarray]:
        """The series ``name`` in consecutive blocks of ``rows`` rows (the last one shorter), read from the file.

        Parameters
        ----------
        name : str
            Series name.
        rows : int
            Rows per block (>= 1).

        Yields
        ------
        np.ndarray
            Rows ``i .. i + rows - 1`` of the series, in order.

        Raises
        ------
        KeyError
            If the group has no such series.
        """
        if name not in self._stream.names[self._group]:
            raise KeyError(name)
        path = f"/timeseries/{self._group}/{name}"
        if self._stream.f is not None:
            ds = self._stream.f[path]
            for i in range(0, ds.shape[0], rows):
                yield ds[i:i + rows]
            return
        with h5py.File(self._stream.path, "r") as f:
            ds = f[path]
            for i in range(0, ds.shape[0], rows):
                yield ds[i:i + rows]


class SeriesStream:
    """The run's series streamed into its HDF5 file (or a temporary one) while the run goes.

    Parameters
    ----------
    path : str | Path | None
        The run's output file (written through :class:`scheduler_sim.io.hdf5.atomic_h5`, published by
        :meth:`sealing`); None: a private temporary file, removed when the stream is freed (:meth:`seal_temporary`).
    plan : list | Callable[[], list]
        ``(group, name, take, unit, row_shape)`` per dataset, in the order of the file: ``take(rows)`` gives the
        dataset's block from a block of interval rows (shape (m, n_columns) -> (m,) + row_shape); ``unit`` None
        for the unit of the name (:func:`scheduler_sim.io.schema.unit_of`). A callable is asked for the list when
        the first block comes (the run's layout is complete then).
    t0_s : float
        Start of interval 0 [s].
    interval_s : tuple[int, float]
        ``(steps per interval, step [s])``: ``time_s[i] = t0 + (i * steps) * step``, the in-memory formula.

    Notes
    -----
    Errors: a write that fails (a full disk) is trapped by the writer and raised as its one-line ``OSError`` at the
    next block (:meth:`__call__`), so the run stops there and nothing is published.
    """

    def __init__(self, path: str | Path | None, plan: list | Callable[[], list], t0_s: float,
                 interval_s: tuple[int, float]) -> None:
        self._tmpdir = None
        if path is None:
            self._tmpdir = tempfile.mkdtemp(prefix="hpctwin-series-")
            weakref.finalize(self, shutil.rmtree, self._tmpdir, True)
            path = Path(self._tmpdir) / "series.h5"
        self.path = Path(path)
        self._plan_of = plan
        self._writer = None
        self.f: h5py.File | None = None
        self.sealed = False
        self._t0 = float(t0_s)
        self._ratio, self._step = int(interval_s[0]), float(interval_s[1])
        self.n_rows = 0
        self.units: dict[str, str] = {}
        self.names: dict[str, list[str]] = {"facility": [], "cdu": [], "rack": [], "partition": []}
        self._plan: list = []
        self._time: BlockAppender | None = None

    def _open(self) -> None:
        """Open the file (the writer's private temporary) and create every series, empty (at the first block)."""
        from .hdf5 import atomic_h5

        if self._writer is not None:
            return
        self._writer = atomic_h5(self.path, digest=self._tmpdir is None)
        self.f = self._writer.__enter__()
        plan = self._plan_of() if callable(self._plan_of) else self._plan_of
        w = SchemaWriter(self.f, "run")
        w.group("/timeseries")
        gz = self._tmpdir is None  # a temporary stream is read back once and removed: not worth compressing
        self._time = self._create(w, "/timeseries/time_s", (), None, gz)
        for group, name, take, unit, row_shape in plan:
            if not self.names[group]:
                w.group(f"/timeseries/{group}")
            unit = unit if unit is not None else unit_of(name)
            self.names[group].append(name)
            self.units[name] = unit
            self._plan.append((take, self._create(w, f"/timeseries/{group}/{name}", tuple(row_shape), unit, gz)))

    @property
    def opened(self) -> bool:
        """True once the file was opened (a block came, or :meth:`finish` ran)."""
        return self._writer is not None

    @staticmethod
    def _create(w: SchemaWriter, path: str, row_shape: tuple[int, ...], unit: str | None,
                compress: bool = True) -> BlockAppender:
        """An empty resizable dataset at ``path`` (through the schema table) and its appender; gzip level 4 with
        shuffle when ``compress`` (the run's output file), none for a temporary stream (the same values, no
        compression CPU: a year of the main job's series cost ~20 s of gzip in a run without an output file).
        """
        rows = block_rows_for(row_shape)
        gz = {"compression": "gzip", "compression_opts": 4, "shuffle": True} if compress else {}
        # no chunk cache (rdcc_nbytes=0): each block is one whole chunk, compressed and written to the disk at once;
        # HDF5's default cache (1 MiB per open dataset) would hold up to 16 chunks of every series in memory
        ds = w.dataset(path, np.zeros((0,) + row_shape), units=unit, maxshape=(None,) + row_shape,
                       chunks=(rows,) + row_shape, **gz, rdcc_nbytes=0, rdcc_nslots=1,
                       rdcc_w0=1.0)  # (h5py ignores the cache keywords when all are 0)
        return BlockAppender(ds, rows)

    def _check(self) -> None:
        """Raise the writer's trapped disk error (one line, the temporary removed), if a write failed."""
        err = self._writer.write_error if self._writer is not None else None
        if err is not None:
            self.abandon(err)
            raise err

    def __call__(self, rows: np.ndarray) -> None:
        """Append a block of interval rows (shape (m, n_columns)) to every series.

        Parameters
        ----------
        rows : np.ndarray
            The rows of intervals ``n_rows .. n_rows + m - 1``.
        """
        self._open()
        m = rows.shape[0]
        k = np.arange(self.n_rows, self.n_rows + m)
        self._time.append(self._t0 + (k * self._ratio) * self._step)
        for take, app in self._plan:
            app.append(take(rows))
        self.n_rows += m
        self._check()

    def finish(self) -> int:
        """Write the blocks still held; returns the number of intervals streamed.

        Returns
        -------
        int
            Rows of every streamed series.
        """
        self._open()
        self._time.flush()
        for _, app in self._plan:
            app.flush()
        self._check()
        return self.n_rows

    def group(self, name: str) -> StreamedGroup:
        """The series of ``/timeseries/<name>`` as a mapping (see :class:`StreamedGroup`).

        Parameters
        ----------
        name : str
            ``facility``, ``cdu``, ``rack`` or ``partition``.

        Returns
        -------
        StreamedGroup
            The mapping.
        """
        return StreamedGroup(self, name)

    def time_s(self) -> np.ndarray:
        """The interval starts [s], shape (n_intervals,), read from the file.

        Returns
        -------
        np.ndarray
            ``t0 + (i * steps) * step``.
        """
        return self.read("/timeseries/time_s")

    def read(self, path: str) -> np.ndarray:
        """The dataset at ``path`` (whole, a fresh array): from the open file, or the published one once sealed.

        Parameters
        ----------
        path : str
            Dataset path.

        Returns
        -------
        np.ndarray
            Its values.
        """
        if self.f is not None:
            return self.f[path][()]
        with h5py.File(self.path, "r") as f:
            return f[path][()]

    def write(self, group: str, name: str, value: np.ndarray, unit: str | None = None) -> None:
        """Write an end-of-run series ``/timeseries/<group>/<name>`` (whole; through the schema table).

        Parameters
        ----------
        group : str
            Group under ``/timeseries``.
        name : str
            Series name.
        value : np.ndarray
            Shape (n_intervals,) or (n_intervals, k).
        unit : str | None
            Its unit; None: from its name (:func:`scheduler_sim.io.schema.unit_of`).

        Raises
        ------
        RuntimeError
            If the stream is already sealed.
        """
        if self.f is None:
            raise RuntimeError(f"{self.path}: the streamed series are sealed; {group}/{name} cannot be added")
        if not self.names[group]:
            self.f.require_group(f"/timeseries/{group}")
        unit = unit if unit is not None else unit_of(name)
        SchemaWriter(self.f, "run").dataset(f"/timeseries/{group}/{name}", value, units=unit)
        self.names[group].append(name)
        self.units[name] = unit
        self._check()

    def sealing(self) -> _Sealing:
        """Context for the rest of the run file: yields the open file; on a clean exit it is sealed (content digest)
        and published by rename; on an exception the temporary is removed (nothing published).

        Returns
        -------
        _Sealing
            The context manager.
        """
        return _Sealing(self)

    def seal_temporary(self) -> None:
        """Close a temporary stream (no output file) so its series are read from the closed file."""
        with self.sealing():
            pass

    def abandon(self, exc: BaseException) -> None:
        """Remove the temporary (nothing is published) after ``exc``; raises the disk's one-line error if a write
        failed, else returns (the caller re-raises ``exc``).

        Parameters
        ----------
        exc : BaseException
            Why the run stopped.
        """
        if self.f is None:
            return
        self.f = None
        self.sealed = True
        self._writer.__exit__(type(exc), exc, exc.__traceback__)

    def discard(self) -> None:
        """Remove the temporary of a stream that is not used (nothing is published)."""
        if self.f is not None:
            self.abandon(RuntimeError("the streamed series are not used"))


class _Sealing:
    """See :meth:`SeriesStream.sealing`."""

    def __init__(self, stream: SeriesStream) -> None:
        self.s = stream

    def __enter__(self) -> h5py.File:
        if self.s.f is None:
            raise RuntimeError(f"{self.s.path}: the streamed series were already sealed")
        return self.s.f

    def __exit__(self, exc_type, exc, tb) -> None:
        s = self.s
        s.f = None
        s.sealed = True
        s._writer.__exit__(exc_type, exc, tb)


StreamTake = Callable[[np.ndarray], np.ndarray]
