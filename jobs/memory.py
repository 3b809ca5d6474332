"""The one check made before allocating anything whose size comes from an input file (issue #21, kind 8).

A trace, a weather file, a power series, an HDF5 output file or a job count can ask for any amount of memory: a
317-year power series at a 15 s step, an HDF5 dataset whose shape says 2e9 rows, a gzip bomb. Every reader that
sizes an allocation from its input calls :func:`check_allocation` first, so a crafted or mistaken file gives one
line naming the file (a :class:`InputTooLargeError`, a ``ValueError``: exit 2 at the command line) instead of a
``MemoryError`` traceback or the kernel's out-of-memory killer.

The budget is ``min(MemAvailable, RLIMIT_AS - VmSize) - margin`` (:func:`memory_budget_bytes`): what the kernel
says can still be had without swapping (``MemAvailable`` of ``/proc/meminfo``, Linux >= 3.14), and what the
process's address-space limit (``ulimit -v`` / ``prlimit --as``) still leaves, less a margin of
:data:`MARGIN_FRACTION` of it, at least :data:`MARGIN_MIN_BYTES`, for everything the run allocates besides.
Lowest layer (no project imports), so that every package can share it.
"""

from __future__ import annotations

import resource
from collections.abc import Callable

__all__ = ["InputTooLargeError", "MARGIN_FRACTION", "MARGIN_MIN_BYTES", "MAX_SPAN_S", "check_allocation", "check_span",
           "memory_budget_bytes", "fmt_bytes"]

#: Part of the free memory kept back from any one input-sized allocation (the run needs memory besides it).
MARGIN_FRACTION = 0.10
#: Smallest margin kept back [bytes] (256 MiB).
MARGIN_MIN_BYTES = 256 << 20
#: Longest simulated span of a run window or of an input series [s]: 20 years of 365.25 days. A trace may carry
#: times up to 1e10 s (~317 years, the loaders' limit), but no run covers more than this.
MAX_SPAN_S = 20 * 365.25 * 86400.0


class InputTooLargeError(ValueError):
    """An input asks for more memory (or more bytes, lines, rows) than may be allocated; the message names it."""


def fmt_bytes(n: float) -> str:
    """``n`` bytes as text with a binary unit (``'4.98 GiB'``).

    Parameters
    ----------
    n : float
        A size [bytes].

    Returns
    -------
    str
        The size with B, KiB, MiB, GiB or TiB.
    """
    for unit, k in (("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if abs(n) >= 1 << k:
            return f"{n / (1 << k):.2f} {unit}"
    return f"{int(n)} B"


def _meminfo_available() -> int | None:
    try:
        with open("/proc/meminfo", "rb") as fh:
            for line in fh:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _vm_size() -> int:
    try:
        with open("/proc/self/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return 0
    return 0


def memory_budget_bytes() -> int:
    """Most bytes one input-sized allocation may take now: ``min(MemAvailable, RLIMIT_AS - VmSize) - margin``.

    Returns
    -------
    int
        The budget [bytes], >= 0. Without ``/proc/meminfo`` (not Linux) and without an address-space limit the
        budget is unbounded (``2**62``). The margin is :data:`MARGIN_FRACTION` of the smaller figure, at least
        :data:`MARGIN_MIN_BYTES`.
    """
    free = [v for v in (_meminfo_available(),) if v is not None]
    soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        free.append(max(0, int(soft) - _vm_size()))
    if not free:
        return 1 << 62
    room = min(free)
    return max(0, room - max(MARGIN_MIN_BYTES, int(room * MARGIN_FRACTION)))


def check_allocation(nbytes: float, what: str, error: Callable[[str], Exception] = InputTooLargeError) -> None:
    """Refuse an allocation of ``nbytes`` sized by an input before it is made, when it exceeds the budget.

    Parameters
    ----------
    nbytes : float
        Bytes the caller is about to allocate (all copies it will hold at once) [bytes].
    what : str
        What asks for it, naming the file and the size that came from it (e.g.
        ``"power.csv: 317 years at a 15 s step (666,000,000 steps x 8 bytes)"``); the message starts with it.
    error : Callable[[str], Exception]
        Builds the exception raised (default :class:`InputTooLargeError`); it gets the whole message.

    Raises
    ------
    error
        ``error(message)`` when ``nbytes`` exceeds :func:`memory_budget_bytes` (the message gives both sizes and
        says where the budget comes from); also when ``nbytes`` is not a finite number >= 0.
    """
    try:
        n = float(nbytes)
    except (TypeError, ValueError):
        n = float("nan")
    budget = memory_budget_bytes()
    if n == n and 0 <= n <= budget:
        return
    need = fmt_bytes(n) if n == n and n != float("inf") else str(nbytes)
    raise error(f"{what}: needs {need} of memory, more than the {fmt_bytes(budget)} this process may still "
                f"allocate (min(MemAvailable, RLIMIT_AS - VmSize) less a margin; jobs.memory)")



def check_span(span_s: float, step_s: float, what: str, bytes_per_step: float,
               error: Callable[[str], Exception] = InputTooLargeError) -> int:
    """Refuse a span longer than :data:`MAX_SPAN_S`, or whose steps would not fit in memory, before allocating.

    Parameters
    ----------
    span_s : float
        The simulated span asked for [s] (from the input: a series' first to last time, a run window).
    step_s : float
        Step (or output interval) the span is cut into [s], > 0.
    what : str
        What asks for it, naming the file or option; the message starts with it.
    bytes_per_step : float
        Bytes held per step (every array sized by the step count, all at once) [bytes].
    error : Callable[[str], Exception]
        Builds the exception raised (default :class:`InputTooLargeError`).

    Returns
    -------
    int
        The number of steps, ``ceil(span_s / step_s)``.

    Raises
    ------
    error
        ``error(message)`` when the span is not finite, is longer than :data:`MAX_SPAN_S` (20 years), or its steps
        need more memory than :func:`check_allocation` allows.
    """
    span, step = float(span_s), float(step_s)
    if not (span == span and abs(span) != float("inf") and step > 0):
        raise error(f"{what}: span {span_s!r} s at step {step_s!r} s cannot be simulated")
    if span > MAX_SPAN_S:
        raise error(f"{what}: spans {span / 86400 / 365.25:.1f} years; the longest run or series is "
                    f"{MAX_SPAN_S / 86400 / 365.25:.0f} years (jobs.memory.MAX_SPAN_S)")
    n = max(0, int(-(-span // step)))
    check_allocation(n * float(bytes_per_step), f"{what}: {n:,} steps of {step:g} s x {bytes_per_step:g} bytes",
                     error)
    return n
