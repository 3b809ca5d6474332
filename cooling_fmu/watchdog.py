"""A wall-clock limit on FMU steps: a step that never returns stops the run instead of hanging it (issue #21 kind 9).

The plant steps inside one C call (the generated FMU's ``hpctwin_run`` loop over many communication steps, or one
``fmi2DoStep`` of a site FMU). No Python signal can interrupt a thread that is inside a C call, so the call is not
made on the caller's thread: :func:`guard_plant` routes every FMU step call of a
:class:`~cooling_fmu.plant.CoolingPlant` through one worker thread, and the caller waits for it with a deadline.
ctypes releases the GIL during the foreign call, so the caller keeps running Python while the worker is in C.

* The limit is per step: the deadline is ``timeout_s`` after the call began or after the last communication step it
  completed (the C loop writes each step's outputs as it goes; the output rows are pre-filled with NaN so the
  caller can see how far it got), so a long loop of fast steps is never cut.
* When the deadline passes, the caller raises :class:`StepTimeout` (a :class:`~cooling_fmu.coupling.PlantError`)
  naming the FMU, the FMI call and the simulated time of the step that did not return, with the outputs of the
  steps of that call that did complete. The run's ordinary plant-failure path then keeps everything up to there
  and writes the output file, marked partial (``complete = false``), through the same atomic writer as any run
  (never half-written); the command exits with status 2.
* The worker thread stays inside the FMU (a daemon thread: it does not keep the process alive); the plant is
  marked hung and never touched again (no ``fmi2Terminate`` / ``fmi2FreeInstance`` on an instance that is still
  inside ``fmi2DoStep``).

Why a worker thread rather than a child process: the results stay bit-identical (the same FMU instance and the same
calls in the same process), the FMU opened is exactly the one the cache verified (a child would open the file
again), and every other plant call (initialisation, outputs, the hot-path buffers) is unchanged; the cost is one
hand-off between two threads per plant call (a few microseconds; the C loop covers many steps per call).
"""

from __future__ import annotations

import ctypes
import queue
import threading
import time
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from .coupling import PlantError

if TYPE_CHECKING:
    from .plant import CoolingPlant

__all__ = ["StepTimeout", "guard_plant", "DEFAULT_STEP_TIMEOUT_S"]

#: Default wall-clock limit of one FMU step [s] (``cooling.step_timeout_s``); the generated FMU's step takes ~10 us.
DEFAULT_STEP_TIMEOUT_S = 60.0
#: How often the waiting caller looks at the progress of a long call [s] (a bound on the detection delay).
_POLL_S = 0.25


class StepTimeout(PlantError):
    """An FMU step did not return within the wall-clock limit; the plant is left inside the call.

    Parameters
    ----------
    fmu : str
        FMU file name.
    function : str
        The FMI call that did not return (``fmi2DoStep``).
    time_s : float
        Simulated time at the start of the step that did not return [s].
    timeout_s : float
        The limit [s of wall time].
    completed_outputs : np.ndarray | None
        SI outputs of the steps of the call completed before it, shape (k, n_outputs).
    """

    def __init__(self, fmu: str, function: str, time_s: float, timeout_s: float,
                 completed_outputs: np.ndarray | None = None) -> None:
        super().__init__(f"FMU {fmu}: {function} did not return within {timeout_s:g} s of wall time "
                         f"(cooling.step_timeout_s) for the step from simulated time t = {time_s:.6g} s",
                         completed_outputs)
        self.fmu, self.function, self.time_s, self.timeout_s = fmu, function, time_s, timeout_s


class _Worker:
    """One daemon thread that runs the calls handed to it, in order."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._loop, name="hpctwin-fmu-step", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:  # stop(): the plant was closed
                return
            try:
                job[3].append(job[0](*job[1]))
            except BaseException as exc:  # noqa: BLE001 - handed back to the caller
                job[4].append(exc)
            finally:
                job[2].set()

    def on_worker(self) -> bool:
        """True on the worker's own thread (inside a call handed to it).

        Returns
        -------
        bool
            Whether the current thread is the worker.
        """
        return threading.current_thread() is self._thread

    def stop(self) -> None:
        """End the thread after the calls already handed over (the plant is closed)."""
        self._jobs.put(None)

    def call(self, fn: Callable, args: tuple, timeout_s: float, progress: Callable[[], int]) -> tuple[Any, int]:
        """Run ``fn(*args)`` on the worker; return ``(result, -1)``, or ``(None, steps done)`` when it hangs.

        The deadline is ``timeout_s`` after the start or after the last change of ``progress()``.
        """
        done = threading.Event()
        res: list = []
        err: list = []
        self._jobs.put((fn, args, done, res, err))
        last, t_last = progress(), time.monotonic()
        while not done.wait(min(timeout_s, _POLL_S)):
            p, now = progress(), time.monotonic()
            if p != last:
                last, t_last = p, now
            elif now - t_last >= timeout_s:
                return None, p
        if err:
            raise err[0]
        return res[0], -1


def _guard_c_loop(plant: CoolingPlant, worker: _Worker, timeout_s: float, hung: Callable) -> None:
    """Route the FMU's own C loop (``stepper.run_c``), the staged block loop and whole blocks of plant calls
    (``plant.run_block``, used by :class:`cooling_fmu.coupling.AdaptiveStepper`) through ``worker``.
    """
    stepper = plant._stepper
    run_c = stepper.run_c
    # inside a block handed to the worker whole (plant.run_block): the C calls are made there directly, each
    # counted (calls done, the current call's rows done, its start time) for the caller's deadline
    blk = {"calls": 0, "out": None, "t": 0.0}

    def rows_of(out: np.ndarray | None) -> int:
        if out is None:
            return 0
        nan = np.isnan(out[:, 0])
        return int(np.argmax(nan)) if nan.any() else len(out)

    def c_rows(a_out, n_steps, n_out) -> np.ndarray:
        out = np.ctypeslib.as_array((ctypes.c_double * (int(n_steps) * int(n_out))).from_address(a_out))
        out = out.reshape(int(n_steps), int(n_out))
        out[:] = np.nan  # rows still NaN = steps not done yet: the progress of the loop
        return out

    def run_counted(comp, n_steps, t_start, h, a_vr_in, n_in, a_u, a_vr_out, n_out, a_out, a_status):
        # one row (a held long step): the count of calls is its progress, no row view to mark (issue 26 item 2)
        blk["out"], blk["t"] = (c_rows(a_out, n_steps, n_out) if n_steps > 1 else None), float(t_start)
        r = run_c(comp, n_steps, t_start, h, a_vr_in, n_in, a_u, a_vr_out, n_out, a_out, a_status)
        blk["calls"] += 1
        return r

    def run_block(fn: Callable, *args: Any) -> Any:
        if worker.on_worker():
            return fn(*args)
        blk["calls"], blk["out"] = 0, None
        r, k = worker.call(fn, args, timeout_s, lambda: (blk["calls"], rows_of(blk["out"])))
        if k is not None and k != -1:
            raise hung("fmi2DoStep (in the FMU's hpctwin_run loop, a block of plant calls)", blk["t"])
        return r

    plant.run_block = run_block

    def run_guarded(comp, n_steps, t_start, h, a_vr_in, n_in, a_u, a_vr_out, n_out, a_out, a_status):
        if worker.on_worker():
            return run_counted(comp, n_steps, t_start, h, a_vr_in, n_in, a_u, a_vr_out, n_out, a_out, a_status)
        out = c_rows(a_out, n_steps, n_out)

        def steps_done() -> int:
            return rows_of(out)

        r, k = worker.call(run_c, (comp, n_steps, t_start, h, a_vr_in, n_in, a_u, a_vr_out, n_out, a_out,
                                   a_status), timeout_s, steps_done)
        if k >= 0:
            rows = out[:k].copy()
            raise hung("fmi2DoStep (in the FMU's hpctwin_run loop)", t_start + k * h, rows)
        return r

    stepper.run_c = run_guarded
    staged = stepper.steps_staged

    def staged_guarded(u, t0_s, k0, step_s, out, schedule, to_si):
        # the whole block on the worker, with the stager between its pieces (one hand-off per block, not per
        # sample period); the unwrapped C loop inside, the rows still NaN = the steps not done yet
        if worker.on_worker():
            return staged(u, t0_s, k0, step_s, out, schedule, to_si, run_counted)
        out[:] = np.nan

        def rows_done() -> int:
            nan = np.isnan(out[:, 0])
            return int(np.argmax(nan)) if nan.any() else len(out)

        r, k = worker.call(staged, (u, t0_s, k0, step_s, out, schedule, to_si, run_c), timeout_s, rows_done)
        if k >= 0:
            raise hung("fmi2DoStep (in the FMU's hpctwin_run loop)", t0_s + (k0 + k) * step_s, out[:k].copy())
        return r

    stepper.steps_staged = staged_guarded


def guard_plant(plant: CoolingPlant, timeout_s: float | None) -> None:
    """Put every FMU step call of ``plant`` under a wall-clock limit per step (see the module docstring).

    Parameters
    ----------
    plant : CoolingPlant
        The plant (:class:`cooling_fmu.plant.CoolingPlant`): its stepper's C loop (``run_c``) and staged block
        loop (``steps_staged``, the whole block on the worker), the raw ``fmi2DoStep`` and the adapter's ``doStep``
        are wrapped.
    timeout_s : float | None
        Limit [s of wall time per step], > 0; None leaves the plant as it is.

    Raises
    ------
    ValueError
        If ``timeout_s`` is not positive and finite.
    """
    if timeout_s is None:
        return
    timeout_s = float(timeout_s)
    if not (np.isfinite(timeout_s) and timeout_s > 0):
        raise ValueError(f"step timeout must be > 0 s and finite, got {timeout_s}")
    worker = _Worker()
    name = plant.fmu_path.name
    fmu = plant._fmu

    def hung(function: str, t_s: float, rows: np.ndarray | None = None) -> StepTimeout:
        plant._hung = True  # never call into this instance again (CoolingPlant.close skips it)
        done = None if rows is None else plant._io.to_si_outputs(np.array(rows, dtype=float))
        return StepTimeout(name, function, t_s, timeout_s, done)

    stepper = plant._stepper  # cooling_fmu.stepping.FMUStepper: the C loop and the FMU instance it steps
    if stepper.run_c is not None:
        _guard_c_loop(plant, worker, timeout_s, hung)
    raw = getattr(fmu, "raw", None)
    if raw is not None:
        do_step_raw = raw.fmi2DoStep

        def do_step_raw_guarded(comp, t, h, flag):
            r, k = worker.call(do_step_raw, (comp, t, h, flag), timeout_s, lambda: 0)
            if k >= 0:
                raise hung("fmi2DoStep", float(t))
            return r

        raw.fmi2DoStep = do_step_raw_guarded
    do_step = fmu.doStep

    def do_step_guarded(current_time_s, step_s):
        r, k = worker.call(do_step, (current_time_s, step_s), timeout_s, lambda: 0)
        if k >= 0:
            raise hung("fmi2DoStep", float(current_time_s))
        return r

    fmu.doStep = do_step_guarded
    free = fmu.freeInstance

    def free_and_stop():
        try:
            free()
        finally:
            worker.stop()  # one idle thread per closed plant would pile up over a sweep's scenarios

    fmu.freeInstance = free_and_stop
