"""Exact integration of piecewise-constant signals into fixed steps, and reduction to output intervals.

Between events every platform quantity (node power, CDU heat, queue length ...) is constant, so its average over
a fixed step is computed exactly from the event times: no sampling. :class:`StepIntegrator` turns the step
function into per-step averages (the cooling communication step); :class:`IntervalReducer` averages whole steps
into output intervals (an integer number of steps each).
"""

from __future__ import annotations

import contextlib
import mmap
from collections.abc import Callable, Iterator

import numpy as np

__all__ = ["StepIntegrator", "IntervalReducer", "mapped_array", "streaming"]

#: Sinks waiting for the next :class:`IntervalReducer` made (:func:`streaming`).
_NEXT_SINK: list = []


@contextlib.contextmanager
def streaming(sink: Callable[[np.ndarray], None]) -> Iterator[None]:
    """Inside the block, the next :class:`IntervalReducer` made streams to ``sink`` (:meth:`IntervalReducer.stream_to`).

    The run's reducer is made when its simulation starts (by the cooling coupler), before any other; reducers made
    after it (the twin's rollouts) keep their rows as before.

    Parameters
    ----------
    sink : Callable[[np.ndarray], None]
        Receives each block of finished intervals.

    Yields
    ------
    None
        The block runs the simulation.
    """
    _NEXT_SINK.append(sink)
    try:
        yield
    finally:
        if sink in _NEXT_SINK:  # not claimed (no reducer was made)
            _NEXT_SINK.remove(sink)


def _repeat_rows(row: np.ndarray, m: int) -> np.ndarray:
    """``np.broadcast_to(row, (m, row.size))``, made directly: the same read-only view (stride 0 over the rows) at
    ~1 us instead of ~6 us per call (numpy's broadcast_to is Python-level; the integrator makes one per run of whole
    steps, issue #26 item 2).
    """
    v = np.ndarray((m, row.size), dtype=row.dtype, buffer=row, strides=(0, row.strides[0]))
    v.flags.writeable = False
    return v


class StepIntegrator:
    """Average a piecewise-constant vector signal over consecutive fixed steps, exactly.

    Parameters
    ----------
    t0_s : float
        Start of step 0 [s].
    step_s : float
        Step length [s] (> 0).
    n_values : int
        Length of the signal vector.
    emit : Callable[..., None]
        ``emit(k0, block)`` (or ``emit(k0, block, parts)`` with ``fold``), called with the index of the first
        completed step and ``block``, an array of shape (m, n_values) holding the averages of steps
        ``k0 .. k0+m-1``, in order, as soon as those steps are complete. Runs of identical whole steps are emitted
        as one block (the caller may step a cooling plant over all of them at once).
    fold : bool
        False (default): the step in progress and the run of whole steps after it are two calls ``emit(k0,
        block)``. True: one call ``emit(k0, block, parts)`` per :meth:`advance` with ``block`` all steps completed
        and ``parts`` the blocks of the two-call form, in order (a 1-row block, then the run as a read-only
        broadcast view), so the receiver can total each part exactly as before (issue #16 item 5: one plant call
        per event).

    Raises
    ------
    ValueError
        If ``step_s`` is not > 0.

    Notes
    -----
    The value is set with :meth:`set` and holds until the next :meth:`set`; :meth:`advance` moves time forward.
    Step ``k`` covers ``[t0 + k*step, t0 + (k+1)*step)``. Step boundaries are computed as ``t0 + k*step``
    (never by repeated addition) so rounding does not drift over a year.
    """

    def __init__(self, t0_s: float, step_s: float, n_values: int, emit: Callable[..., None],
                 fold: bool = False) -> None:
        if not step_s > 0:
            raise ValueError(f"step_s must be > 0, got {step_s}")
        self.t0 = float(t0_s)
        self.step = float(step_s)
        self.value = np.zeros(n_values)
        self._acc = np.zeros(n_values)
        self._t = self.t0
        self._k = 0  # index of the step in progress
        self._emit = emit
        self._fold = bool(fold)

    @property
    def steps_done(self) -> int:
        """Number of completed steps."""
        return self._k

    def set(self, value: np.ndarray) -> None:
        """Set the signal's value from the current time on (shape (n_values,))."""
        self.value[:] = value

    def boundary(self, k: int) -> float:
        """Start time of step ``k`` [s]: ``t0 + k * step`` from the integer count ``k`` (never a running sum)."""
        return self.t0 + k * self.step

    def first_boundary_at_or_after(self, t_s: float, multiple: int = 1) -> int:
        """Smallest step count ``k``, a whole multiple of ``multiple`` (>= 1), with ``boundary(k) >= t_s``.

        Used to end a run on a whole output interval (``multiple`` = steps per interval): the end is then an
        integer count of steps, so the last (partial) interval is integrated in full, never lost to rounding.
        """
        if multiple < 1:
            raise ValueError(f"multiple must be >= 1, got {multiple}")
        n = max(0, int((t_s - self.t0) // (self.step * multiple)))
        while n > 0 and self.boundary((n - 1) * multiple) >= t_s:
            n -= 1
        while self.boundary(n * multiple) < t_s:
            n += 1
        return n * multiple

    def advance(self, t_s: float) -> None:
        """Integrate the current value up to ``t_s`` and emit every step completed on the way.

        Parameters
        ----------
        t_s : float
            Time to integrate up to [s], >= the time already reached.

        Raises
        ------
        ValueError
            If ``t_s`` is earlier than the time already reached.
        """
        if t_s < self._t:
            raise ValueError(f"time went backwards: {t_s} < {self._t}")
        end = self.boundary(self._k + 1)
        if t_s < end:
            self._acc += self.value * (t_s - self._t)
            self._t = t_s
            return
        # finish the step in progress
        self._acc += self.value * (end - self._t)
        first = (self._acc / self.step)[None, :]
        k_first = self._k
        if not self._fold:
            self._emit(self._k, first)
        self._k += 1
        # whole steps with the constant value: the largest m with boundary(k + m) <= t_s, found from the floor
        # estimate and corrected both ways against the boundaries themselves (so a time that IS a boundary
        # always completes the step that ends there, whatever the rounding of the division)
        m = max(0, int((t_s - self.boundary(self._k)) // self.step))
        while m > 0 and self.boundary(self._k + m) > t_s:
            m -= 1
        while self.boundary(self._k + m + 1) <= t_s:
            m += 1
        if self._fold:
            if m > 0:
                run = _repeat_rows(self.value.copy(), m)
                block = np.empty((m + 1, self.value.size))
                block[0] = first[0]
                block[1:] = self.value
                self._emit(k_first, block, (first, run))
            else:
                self._emit(k_first, first, (first,))
            self._k += m
        elif m > 0:
            self._emit(self._k, _repeat_rows(self.value, m))
            self._k += m
        start = self.boundary(self._k)
        self._acc = self.value * (t_s - start)
        self._t = t_s


def mapped_array(shape: tuple[int, int]) -> np.ndarray:
    """A float64 array in its own anonymous memory map, whose pages go back to the system when it is freed.

    Why (issue #26 item 3, measured phase by phase): glibc's ``malloc`` raises its mmap threshold (up to 32 MiB)
    each time it frees a mapped block, so after the trace loader's temporaries the output-interval row chunks
    (~4 MiB each) were carved from the heap, where freeing them (while they are copied into the one result array)
    left their pages resident: +10.4 MiB after 16 days of Theta. A map of its own is unmapped when the array (its
    last view) is freed, whatever the threshold. Setting the threshold for the whole process instead cost ~6 % of
    the run's CPU time (every larger temporary mapped and faulted in anew).

    Parameters
    ----------
    shape : tuple[int, int]
        (rows, columns).

    Returns
    -------
    np.ndarray
        Writable, C-contiguous, uninitialised (zeros), of that shape.
    """
    nbytes = int(shape[0]) * int(shape[1]) * 8
    if nbytes == 0:
        return np.empty(shape)
    return np.frombuffer(mmap.mmap(-1, nbytes), dtype=np.float64).reshape(shape)


class IntervalReducer:
    """Average blocks of per-step rows into output intervals of ``ratio`` steps each.

    Parameters
    ----------
    ratio : int
        Steps per output interval (>= 1).
    n_values : int
        Columns per row.
    chunk_rows : int | None
        Output rows buffered before being appended to the result list (memory bound); default keeps the buffer
        near 2**21 values.

    Raises
    ------
    ValueError
        If ``ratio < 1``.

    Notes
    -----
    Rows must arrive in step order. A trailing partial interval is kept until :meth:`finish`. After
    :meth:`stream_to` the finished intervals go to a sink instead of being kept (streamed output, issue #26 item 3).
    """

    def __init__(self, ratio: int, n_values: int, chunk_rows: int | None = None) -> None:
        if ratio < 1:
            raise ValueError(f"ratio must be >= 1, got {ratio}")
        if chunk_rows is None:  # keep the buffer near 2**21 values whatever the ratio
            chunk_rows = max(1, (1 << 21) // (ratio * max(n_values, 1)))
        self.ratio = int(ratio)
        self.n_values = int(n_values)
        self._buf = np.empty((chunk_rows * self.ratio, self.n_values))
        self._fill = 0
        self._chunks: list[np.ndarray] = []
        self.sink: Callable[[np.ndarray], None] | None = _NEXT_SINK.pop() if _NEXT_SINK else None

    def stream_to(self, sink: Callable[[np.ndarray], None]) -> None:
        """Hand every block of finished intervals to ``sink(rows)`` (shape (m, n_values), in order) instead of
        keeping it; :meth:`finish` then returns no rows (the sink holds them: :class:`scheduler_sim.io.stream.SeriesStream`).

        Parameters
        ----------
        sink : Callable[[np.ndarray], None]
            Receives each block; its rows are not kept after the call.
        """
        self.sink = sink

    def push(self, rows: np.ndarray) -> None:
        """Append rows of shape (m, n_values)."""
        i = 0
        m = rows.shape[0]
        while i < m:
            take = min(m - i, self._buf.shape[0] - self._fill)
            self._buf[self._fill:self._fill + take] = rows[i:i + take]
            self._fill += take
            i += take
            if self._fill == self._buf.shape[0]:
                self._flush()

    def _flush(self) -> None:
        whole = (self._fill // self.ratio) * self.ratio
        if whole:
            means = self._buf[:whole].reshape(-1, self.ratio, self.n_values)
            if self.sink is not None:  # streamed: the block goes to the file, nothing is kept
                self.sink(means.mean(axis=1))
            else:
                self._chunks.append(means.mean(axis=1, out=mapped_array((whole // self.ratio, self.n_values))))
            rest = self._fill - whole
            self._buf[:rest] = self._buf[whole:self._fill]
            self._fill = rest

    def finish(self) -> np.ndarray:
        """Return all complete intervals, shape (n_intervals, n_values); a partial last interval is dropped.

        Callers run the simulation to an interval boundary so nothing is dropped. With a sink
        (:meth:`stream_to`) the last intervals go to it and the array returned has no rows.
        """
        self._flush()
        self._buf = np.empty((0, self.n_values))  # the step buffer is not needed any more (a partial interval is dropped)
        if self.sink is not None:
            return np.empty((0, self.n_values))
        # One copy into an array whose pages are touched only as it fills, each chunk released once copied, so the
        # peak is one copy of the series plus one chunk (np.concatenate held both whole copies: +0.5 GB on a year
        # of Theta at 60 s intervals). Same values as np.concatenate, bit for bit.
        n = sum(c.shape[0] for c in self._chunks)
        out = mapped_array((n, self.n_values))
        chunks, self._chunks = self._chunks[::-1], []
        i = 0
        while chunks:
            c = chunks.pop()
            out[i:i + c.shape[0]] = c
            i += c.shape[0]
            del c
        self._chunks = [out] if n else []  # a second call returns the same rows
        return out
