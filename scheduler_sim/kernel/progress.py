"""Progress display for long runs, built so that it can never fail a run.

The kernel tells its run observers (:class:`RunObserver`: ``run_started``, ``run_progress``, ``run_ended``,
through :class:`RunHooks`) how a run goes; the progress bar (:class:`RunProgress`) is one of them and
``hpctwin run --live``'s dashboard (:class:`scheduler_sim.app.live.LiveView`) another.

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
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, TextIO

import numpy as np
from tqdm import tqdm

__all__ = ["RunProgress", "Spinner", "RunStatus", "RunObserver", "RunHooks"]

_WINDOW_FMT = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} {unit} simulated [{elapsed}<{remaining}]"
_DRAIN_FMT = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} jobs ended [{elapsed}]"


#: Width [characters] and height [lines] of the screen for a terminal that reports no size: a pseudo-terminal opened
#: without one (e.g. ``script`` under a process without a controlling terminal) reports 0 x 0, and tqdm then draws
#: nothing at all (its bar is hidden below a screen of 0 lines). The values are ``shutil.get_terminal_size``'s
#: fallback (80) and tqdm's own default height (20).
FALLBACK_NCOLS, FALLBACK_NROWS = 80, 20


def _width(file: TextIO) -> dict:
    """Screen-size arguments of tqdm for ``file``: follow the terminal (``dynamic_ncols``) where it reports a size,
    else :data:`FALLBACK_NCOLS` columns and :data:`FALLBACK_NROWS` lines.
    """
    try:
        size = os.get_terminal_size(file.fileno())
    except (AttributeError, OSError, ValueError):
        return {"dynamic_ncols": True}
    kw = {"dynamic_ncols": True} if size.columns > 0 else {"ncols": FALLBACK_NCOLS}
    if size.lines <= 0:
        kw["nrows"] = FALLBACK_NROWS
    return kw


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
    window_h : float | None
        Length of the submission window [h] (> 0; a non-positive or non-finite value shows no window phase). None
        opens the bar later, at :meth:`run_started` (as a run observer).
    enabled : bool
        False makes every method a no-op (``--quiet``, no terminal).
    file : TextIO | None
        Where to draw (default ``sys.stderr``).
    mininterval : float | None
        Least time between redraws [s] (tqdm's ``mininterval``). Default: ``$HPCTWIN_PROGRESS_MININTERVAL`` or
        0.1 s; the terminal tests set 0 so that every update redraws.

    Notes
    -----
    Never raises: a failure inside the display library closes the display and the run goes on.
    """

    def __init__(self, window_h: float | None = None, *, enabled: bool = True, file: TextIO | None = None,
                 mininterval: float | None = None) -> None:
        self.enabled = bool(enabled)
        self.mininterval = _mininterval(0.1) if mininterval is None else float(mininterval)
        self.window_h = float(window_h) if window_h is not None and window_h == window_h and window_h > 0 else 0.0
        self.file = file if file is not None else sys.stderr
        self.phase = "window"
        self._bar = None
        self._shown = 0
        self._drain_total = 0
        self._drain_done = 0
        if self.enabled and window_h is not None:
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
        # whole hours (or whole minutes for windows under 2 h) so the counts print as integers
        self._scale, unit = (1.0, "h") if self.window_h >= 2.0 else (60.0, "min")
        self._total_units = max(1, math.ceil(self.window_h * self._scale - 1e-9))
        self._shown = 0
        self._bar = tqdm(total=self._total_units, desc="window", unit=unit, leave=False, file=self.file,
                         bar_format=_WINDOW_FMT, mininterval=self.mininterval, miniters=1, **_width(self.file))

    def _open_drain(self, jobs_left: int) -> None:
        if self._bar is not None:
            self._bar.close()
        self.phase = "drain"
        self._drain_total = max(int(jobs_left), 0)
        self._drain_done = 0
        self._bar = tqdm(total=self._drain_total, desc="draining the queue", leave=False, file=self.file, bar_format=_DRAIN_FMT,
                         mininterval=self.mininterval, miniters=1, **_width(self.file))

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

    # ------------------------------------------------------------------ as a run observer (RunObserver)
    def run_started(self, window_h: float) -> None:
        """Open the bar for a window of ``window_h`` hours, unless it is already open; never raises.

        Parameters
        ----------
        window_h : float
            Length of the submission window [h].
        """
        if self.enabled and self._bar is None:
            self.window_h = float(window_h) if window_h == window_h and window_h > 0 else 0.0
            self.phase = "window"
            self._guard(self._open_window)

    def run_progress(self, status: RunStatus) -> None:
        """Show the run's ``status.sim_h`` and ``status.jobs_left`` (:meth:`update`).

        Parameters
        ----------
        status : RunStatus
            The run now.
        """
        self.update(status.sim_h, status.jobs_left)

    def run_ended(self) -> None:
        """Remove the bar (:meth:`close`)."""
        self.close()


@dataclass(frozen=True)
class RunStatus:
    """What a run observer sees at an update: the run's progress and the platform's state now.

    Attributes
    ----------
    sim_h : float
        Simulated hours since the window start [h].
    window_h : float
        Length of the submission window [h].
    jobs_left : int
        Jobs not yet ended.
    queued, running : int
        Jobs waiting in the queue; jobs running.
    P_it_W, P_overhead_W : float
        IT power (rack input) and facility overheads beyond it of the last cooling step [W] (0 before the first
        step, or without cooling).
    plant_state : np.ndarray | None
        The plant's outputs at the end of its last step (SI, read-only, in the order of ``output_names``); None
        without a plant or before its first step.
    output_names : tuple[str, ...]
        The plant's output names (empty without a plant).
    """

    sim_h: float
    window_h: float
    jobs_left: int
    queued: int
    running: int
    P_it_W: float
    P_overhead_W: float
    plant_state: np.ndarray | None
    output_names: tuple[str, ...]


class RunObserver(Protocol):
    """What the kernel calls while a run goes (``Simulation(..., observers=...)``): start, progress, end.

    The progress bar (:class:`RunProgress`) and ``hpctwin run --live``'s dashboard
    (:class:`scheduler_sim.app.live.LiveView`) are two observers. An observer must not raise and must not change
    what it is shown: the status is a copy.
    """

    def run_started(self, window_h: float) -> None:
        """The run begins; its submission window is ``window_h`` hours long."""

    def run_progress(self, status: RunStatus) -> None:
        """The run reached ``status.sim_h`` (called after every cooling step the plant was stepped through)."""

    def run_ended(self) -> None:
        """The run ended (completed or stopped); erase any display."""


class RunHooks:
    """The kernel's side of the observers: builds a :class:`RunStatus` from the platform state and calls each one.

    Parameters
    ----------
    observers : Sequence[RunObserver]
        Called in order; one that raises is dropped for the rest of the run (a display never stops a run).
    window_h : float
        Length of the submission window [h].
    state : object
        The run's :class:`~scheduler_sim.kernel.state.PlatformState` (``queue``, ``running``, ``cooling``).
    output_names : Sequence[str]
        The plant's output names (empty without a plant).
    """

    def __init__(self, observers: Sequence[RunObserver], window_h: float, state: object,
                 output_names: Sequence[str] = ()) -> None:
        self.observers = list(observers)
        self.window_h = float(window_h)
        self.state = state
        self.output_names = tuple(output_names)
        self._call("run_started", self.window_h)

    @classmethod
    def for_run(cls, observers: Sequence[RunObserver], progress: bool, window_h: float, state: object,
                plant: object | None) -> RunHooks | None:
        """The hooks of one run: its observers, plus the progress bar with ``progress``; None when there is none.

        Parameters
        ----------
        observers : Sequence[RunObserver]
            The simulation's observers.
        progress : bool
            Add a :class:`RunProgress` (``SimulationConfig.progress``).
        window_h : float
            Length of the submission window [h].
        state : object
            The run's platform state.
        plant : object | None
            The cooling plant (its ``output_names``), or None.

        Returns
        -------
        RunHooks | None
        """
        obs = [*observers, RunProgress()] if progress else list(observers)
        return cls(obs, window_h, state, getattr(plant, "output_names", ())) if obs else None

    def _call(self, what: str, *args: object) -> None:
        for obs in list(self.observers):
            try:
                getattr(obs, what)(*args)
            except Exception:  # noqa: BLE001 - an observer is a convenience, never a reason to stop a run
                self.observers.remove(obs)

    def status(self, sim_h: float, jobs_left: int) -> RunStatus:
        """The status now.

        Parameters
        ----------
        sim_h : float
            Simulated hours since the window start [h].
        jobs_left : int
            Jobs not yet ended.

        Returns
        -------
        RunStatus
        """
        st = self.state
        ro = st.cooling
        ps = ro.plant_state
        if ps is not None:
            ps = ps.view()
            ps.flags.writeable = False
        return RunStatus(float(sim_h), self.window_h, int(jobs_left), len(st.queue), len(st.running),
                         float(ro.last_it_W or 0.0), float(ro.last_overhead_W or 0.0), ps, self.output_names)

    def update(self, sim_h: float, jobs_left: int) -> None:
        """Tell every observer the run's :meth:`status` at ``sim_h`` [h] with ``jobs_left`` jobs not yet ended."""
        if self.observers:
            self._call("run_progress", self.status(sim_h, jobs_left))

    def close(self) -> None:
        """Tell every observer the run ended (idempotent)."""
        self._call("run_ended")
        self.observers = []


class Spinner:
    """An indeterminate progress line for a long step with no natural count (FMU build, report figures).

    Parameters
    ----------
    desc : str
        What is being done, e.g. ``"building FMU (257 CDUs)"``.
    enabled : bool
        False makes it silent.
    total : int | None
        When the step has a count (e.g. figures), the bar shows ``n/total``.
    file : TextIO | None
        Where to draw (default ``sys.stderr``).

    Notes
    -----
    Use as a context manager; :meth:`step` advances the count. Never raises from the display.
    """

    def __init__(self, desc: str, *, enabled: bool = True, total: int | None = None,
                 file: TextIO | None = None) -> None:
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
                fmt = ("{desc}: {n_fmt}/{total_fmt} [{elapsed}]" if self.total is not None
                       else "{desc} [{elapsed}]")
                self._bar = tqdm(total=self.total, desc=self.desc, leave=False, file=self.file, bar_format=fmt,
                                 mininterval=_mininterval(0.5), miniters=1, **_width(self.file))
            except Exception:  # noqa: BLE001
                self._bar = None
        if self._bar is not None:  # a background refresh keeps the elapsed time moving during a silent step
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
