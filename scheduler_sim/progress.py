"""Progress display for long runs, built so that it can never fail a run.

A run has two phases with honest totals:

1. ``window``: simulated hours of the submission window, ``0 .. (t1 - t0) / 3600``.
2. ``drain``: after the window the run goes on until the jobs still queued or running end. Its total is the
   number of jobs left when the window closed; the bar counts jobs finished since.

Every call into the display library (tqdm) is guarded: any exception disables the display for the rest of the
run and is never raised (a progress bar is a convenience, not a result). The bar formats use tqdm's
pre-formatted fields (``{n_fmt}``, ``{total_fmt}``), never a format spec applied to a value that tqdm may set to
``None`` (the cause of the terminal crash of issue #13: ``{total:.0f}`` once tqdm dropped an overrun total).
"""

from __future__ import annotations

import math
import os
import sys

__all__ = ["RunProgress", "Spinner"]

_WINDOW_FMT = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} {unit} simulated [{elapsed}<{remaining}]"
_DRAIN_FMT = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} jobs ended [{elapsed}]"


def _mininterval(default: float) -> float:
    """Least time between redraws [s]: ``$HPCTWIN_PROGRESS_MININTERVAL`` if set (tests use 0), else ``default``."""
    try:
        return float(os.environ.get("HPCTWIN_PROGRESS_MININTERVAL", default))
    except ValueError:
        return default


class RunProgress:
    """Two-phase progress bar of a simulation run (window hours, then jobs draining).

    Parameters
    ----------
    window_h : float
        Length of the submission window [h] (> 0; a non-positive or non-finite value shows no window phase).
    enabled : bool
        False makes every method a no-op (``--quiet``, no terminal).
    file : text stream, optional
        Where to draw (default ``sys.stderr``).
    mininterval : float
        Least time between redraws [s] (tqdm's ``mininterval``). Default: ``$HPCTWIN_PROGRESS_MININTERVAL`` or
        0.1 s; the terminal tests set 0 so that every update redraws.

    Notes
    -----
    Never raises: a failure inside the display library closes the display and the run goes on.
    """

    def __init__(self, window_h: float, *, enabled: bool = True, file=None, mininterval: float | None = None) -> None:
        self.enabled = bool(enabled)
        self.mininterval = _mininterval(0.1) if mininterval is None else float(mininterval)
        self.window_h = float(window_h) if window_h == window_h and window_h > 0 else 0.0
        self.file = file if file is not None else sys.stderr
        self.phase = "window"
        self._bar = None
        self._shown = 0
        self._drain_total = 0
        self._drain_done = 0
        if self.enabled:
            self._guard(self._open_window)

    # ------------------------------------------------------------------ guarded calls
    def _guard(self, fn, *args) -> None:
        try:
            fn(*args)
        except Exception:  # noqa: BLE001 - a display must never fail a run
            self._disable()

    def _disable(self) -> None:
        bar, self._bar, self.enabled = self._bar, None, False
        if bar is not None:
            try:
                bar.close()
            except Exception:  # noqa: BLE001
                pass

    # ------------------------------------------------------------------ phases
    def _open_window(self) -> None:
        from tqdm import tqdm  # optional at import time: only a terminal run draws

        # whole hours (or whole minutes for windows under 2 h) so the counts print as integers
        self._scale, unit = (1.0, "h") if self.window_h >= 2.0 else (60.0, "min")
        self._total_units = max(1, math.ceil(self.window_h * self._scale - 1e-9))
        self._shown = 0
        self._bar = tqdm(total=self._total_units, desc="window", unit=unit, leave=False, file=self.file,
                         bar_format=_WINDOW_FMT, dynamic_ncols=True, mininterval=self.mininterval, miniters=1)

    def _open_drain(self, jobs_left: int) -> None:
        from tqdm import tqdm

        if self._bar is not None:
            self._bar.close()
        self.phase = "drain"
        self._drain_total = max(int(jobs_left), 0)
        self._drain_done = 0
        self._bar = tqdm(total=self._drain_total, desc="draining the queue", leave=False, file=self.file, bar_format=_DRAIN_FMT,
                         dynamic_ncols=True, mininterval=self.mininterval, miniters=1)

    def _advance(self, sim_h: float, jobs_left: int) -> None:
        if self.phase == "window":
            if sim_h < self.window_h:
                units = min(int(sim_h * self._scale), self._total_units)
                if units > self._shown:
                    self._bar.update(units - self._shown)
                    self._shown = units
                return
            if self._shown < self._total_units:
                self._bar.update(self._total_units - self._shown)
                self._shown = self._total_units
            self._open_drain(jobs_left)
        done = min(self._drain_total - int(jobs_left), self._drain_total)
        if done > self._drain_done:
            self._bar.update(done - self._drain_done)
            self._drain_done = done

    # ------------------------------------------------------------------ public
    def update(self, sim_h: float, jobs_left: int) -> None:
        """Show the run at ``sim_h`` simulated hours since the window start with ``jobs_left`` jobs not yet ended.

        Never raises.
        """
        if self.enabled and self._bar is not None:
            self._guard(self._advance, float(sim_h), int(jobs_left))

    def close(self) -> None:
        """Remove the bar (idempotent; never raises)."""
        self._disable()


class Spinner:
    """An indeterminate progress line for a long step with no natural count (FMU build, report figures).

    Parameters
    ----------
    desc : str
        What is being done, e.g. ``"building FMU (257 CDUs)"``.
    enabled : bool
        False makes it silent.
    total : int, optional
        When the step has a count (e.g. figures), the bar shows ``n/total``.

    Use as a context manager; :meth:`step` advances the count. Never raises from the display.
    """

    def __init__(self, desc: str, *, enabled: bool = True, total: int | None = None, file=None) -> None:
        self.desc, self.enabled, self.total = desc, bool(enabled), total
        self.file = file if file is not None else sys.stderr
        self._bar = None
        self._stop = None

    def _tick(self) -> None:
        while not self._stop.wait(0.5):
            bar = self._bar
            if bar is None:
                return
            try:
                bar.refresh()
            except Exception:  # noqa: BLE001
                return

    def __enter__(self) -> "Spinner":
        if self.enabled:
            try:
                from tqdm import tqdm

                fmt = ("{desc}: {n_fmt}/{total_fmt} [{elapsed}]" if self.total is not None
                       else "{desc} [{elapsed}]")
                self._bar = tqdm(total=self.total, desc=self.desc, leave=False, file=self.file, bar_format=fmt,
                                 mininterval=_mininterval(0.5), miniters=1)
            except Exception:  # noqa: BLE001
                self._bar = None
        if self._bar is not None:  # a background refresh keeps the elapsed time moving during a silent step
            import threading

            self._stop = threading.Event()
            threading.Thread(target=self._tick, daemon=True).start()
        return self

    def step(self, n: int = 1, desc: str | None = None) -> None:
        """Advance by ``n`` (and optionally rename the step). Never raises."""
        if self._bar is None:
            return
        try:
            if desc is not None:
                self._bar.set_description_str(desc, refresh=False)
            self._bar.update(n)
        except Exception:  # noqa: BLE001
            self._bar = None

    def __exit__(self, *exc) -> None:
        if self._stop is not None:
            self._stop.set()
        if self._bar is not None:
            try:
                self._bar.close()
            except Exception:  # noqa: BLE001
                pass
            self._bar = None
