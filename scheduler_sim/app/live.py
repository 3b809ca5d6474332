"""``hpctwin run --live``: a terminal dashboard while a run goes (rich), erased when it ends (issue #28 item 9).

The dashboard shows the simulated time and progress, the queue and running jobs, the facility power, IT power and
PUE of the last cooling step, the PUE so far, and the hottest CDU supply against the plant's limit. It is drawn on
stderr by :class:`rich.live.Live` with ``transient=True`` (erased at the end, the summary is printed after it) and
with stdout and stderr redirected above it, so a data warning printed during the run is shown, never drawn over.
Without a terminal (stderr not a TTY) nothing is drawn and a one-line note says so: the run itself is unchanged.
Any error of the display stops the display, never the run.

The view is one of the kernel's run observers (:class:`scheduler_sim.kernel.progress.RunObserver`, given as
``Simulation(..., observers=[view])``; the progress bar is another): the kernel calls ``run_started(window_h)``,
then ``run_progress(status)`` after the cooling steps, then ``run_ended()``. It reads only the
:class:`~scheduler_sim.kernel.progress.RunStatus` it is handed: queue, running jobs, last step's IT and overhead
power, plant outputs. PUE so far is the ratio of facility and IT energy summed over the updates (each update's
last-step power x the simulated time since the previous update): an approximation for the eye; the run's PUE is
in its summary.
"""

from __future__ import annotations

import contextlib
import sys
import time
from typing import TYPE_CHECKING, Iterator

if TYPE_CHECKING:
    from ..kernel.progress import RunStatus

__all__ = ["LiveView", "live_dashboard"]


class LiveView:
    """The dashboard of one run: a :class:`~scheduler_sim.kernel.progress.RunObserver`.

    Parameters
    ----------
    file : object
        The terminal stream (default ``sys.stderr``).
    T_limit_K : float | None
        The plant's CDU supply limit [K] (its set point), shown beside the hottest supply.
    title : str
        Header line (the run's name).
    min_interval_s : float
        Least wall time between redraws [s].
    """

    def __init__(self, file: object = None, *, T_limit_K: float | None = None, title: str = "",
                 min_interval_s: float = 0.25) -> None:
        self.file = file if file is not None else sys.stderr
        self.T_limit_K, self.title, self.min_interval_s = T_limit_K, title, float(min_interval_s)
        self.window_h = 0.0
        self._live = None
        self._last_draw = 0.0
        self._last_h = 0.0
        self._E_it = self._E_fac = 0.0
        self.draws = 0

    def run_started(self, window_h: float) -> None:
        """Begin the display (the kernel calls it when the run begins); never raises.

        Parameters
        ----------
        window_h : float
            Length of the run's submission window [h].
        """
        self.window_h = float(window_h)
        self._last_h = 0.0
        self._E_it = self._E_fac = 0.0
        try:
            from rich.console import Console
            from rich.live import Live

            console = Console(file=self.file, stderr=self.file is sys.stderr)
            self._live = Live(self._render(None), console=console, transient=True, auto_refresh=False,
                              redirect_stdout=True, redirect_stderr=True)
            self._live.start(refresh=True)
        except Exception:  # noqa: BLE001 - a display is a convenience, never a reason to stop a run
            self._live = None

    @staticmethod
    def _snapshot(status: RunStatus | None) -> dict:
        """The numbers shown, from the kernel's status (None before the first update: missing ones are None)."""
        snap = {"sim_h": 0.0, "jobs_left": 0, "queued": None, "running": None, "P_it_W": None, "P_fac_W": None,
                "T_sup_max_K": None}
        if status is None:
            return snap
        snap.update(sim_h=status.sim_h, jobs_left=status.jobs_left, queued=status.queued, running=status.running,
                    P_it_W=status.P_it_W, P_fac_W=status.P_it_W + status.P_overhead_W)
        idx = [i for i, n in enumerate(status.output_names) if "T_sec_sup" in n]
        if status.plant_state is not None and idx:
            snap["T_sup_max_K"] = float(max(status.plant_state[i] for i in idx))
        return snap

    def _render(self, status: RunStatus | None):
        from rich.table import Table

        s = self._snapshot(status)
        sim_h, jobs_left = s["sim_h"], s["jobs_left"]
        t = Table(title=f"hpctwin live: {self.title}".rstrip(": "), show_header=False, box=None, pad_edge=False)
        t.add_column("what", style="bold")
        t.add_column("value")
        share = min(sim_h / self.window_h, 1.0) if self.window_h > 0 else 0.0
        phase = "window" if sim_h <= self.window_h else "draining the queue"
        t.add_row("simulated", f"{sim_h:,.1f} h of a {self.window_h:,.1f} h window ({100 * share:.0f} %), {phase}")
        if s["queued"] is not None:
            t.add_row("jobs", f"{s['queued']:,} queued, {s['running']:,} running, {jobs_left:,} left")
        if s["P_fac_W"] is not None and s["P_it_W"]:
            t.add_row("facility power", f"{s['P_fac_W'] / 1e6:,.3f} MW (IT {s['P_it_W'] / 1e6:,.3f} MW), "
                                        f"PUE now {s['P_fac_W'] / s['P_it_W']:.4f}")
        if self._E_it > 0:
            t.add_row("PUE so far", f"{self._E_fac / self._E_it:.4f} (approximate, from the display's samples)")
        if s["T_sup_max_K"] is not None:
            lim = f" (limit {self.T_limit_K - 273.15:.1f} degC)" if self.T_limit_K else ""
            t.add_row("hottest CDU supply", f"{s['T_sup_max_K'] - 273.15:.2f} degC{lim}")
        return t

    def run_progress(self, status: RunStatus) -> None:
        """Take the kernel's status of the run; redraw at most every ``min_interval_s``. Never raises.

        Parameters
        ----------
        status : RunStatus
            The run now (simulated hours, jobs, last step's powers, plant outputs).
        """
        try:
            s = self._snapshot(status)
            sim_h = status.sim_h
            dt_s = max(sim_h - self._last_h, 0.0) * 3600.0
            if s["P_it_W"]:
                self._E_it += s["P_it_W"] * dt_s
                self._E_fac += s["P_fac_W"] * dt_s
            self._last_h = sim_h
            now = time.monotonic()
            if self._live is not None and now - self._last_draw >= self.min_interval_s:
                self._live.update(self._render(status), refresh=True)
                self._last_draw = now
                self.draws += 1
        except Exception:  # noqa: BLE001 - stop the display, not the run
            self.run_ended()

    def run_ended(self) -> None:
        """Erase the dashboard (transient) and restore the streams. Never raises."""
        live, self._live = self._live, None
        if live is not None:
            try:
                live.stop()
            except Exception:  # noqa: BLE001
                pass


@contextlib.contextmanager
def live_dashboard(view: LiveView) -> Iterator[LiveView]:
    """Keep ``view`` for the runs inside the block (pass it as an observer); erase it at the end whatever happens.

    Parameters
    ----------
    view : LiveView
        The dashboard (given to the simulation as ``observers=[view]``, :func:`scheduler_sim.app.runner.run_one`'s
        ``live``).

    Yields
    ------
    LiveView
        ``view``.
    """
    try:
        yield view
    finally:
        view.run_ended()
