"""FMU stepping for :class:`cooling_fmu.plant.CoolingPlant`: one FMU instance, its start and its communication steps.

:class:`FMUStepper` does the FMI calls and nothing else: experiment set-up, initial state, the re-evaluation that
works around rumoca 0.9.13's output order at initialisation, and the fastest loop the FMU allows for many steps
(the FMU's own C loop ``hpctwin_run`` when it was built here, else raw ctypes calls, else the backend's methods).
Inputs and outputs are in the FMU's units; a failing FMI call raises :class:`~cooling_fmu.adapter.FMUError` from
the adapter (:meth:`FMUStepper.steps` returns it instead, with the steps completed). Checks, SI conversion and
the assembly of outputs and failure reports stay in :class:`~cooling_fmu.plant.CoolingPlant` (issue 22 item 10:
stepping apart from output assembly).
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Callable

import numpy as np

from .adapter import FMUError

__all__ = ["FMUStepper", "SUBSTEP_TOL_Q", "SUBSTEP_TOL_X"]

#: Error control of the generated FMU's Heun sub-steps (:func:`cooling_fmu.build.install_integrator`): largest local
#: error estimate ``0.5 h |k2 - k1|`` of a dynamic state in one piece, in its own units (1 mK for the temperatures,
#: 1e-3 for the controllers' integrators, which run over 0..1). ASSUMPTION, chosen by measurement: a one-hour step
#: after a 30 -> 80 % heat step on the Theta plant then ends 1.8e-5 off 240 steps of 15 s in cooling energy
#: (6.6e-4 without it) and 8.5e-6 off a 0.94 s reference, with 248 Heun pieces instead of 56 (docs/cooling.md).
SUBSTEP_TOL_X = 1e-3
#: The same for a running integral (``E_*``, ``M_*``), relative to its increment over the piece: a power that jumps
#: or kinks inside a sub-step (pump staging, the chiller starting, a valve or fan reaching its limit) has the piece
#: bisected around it.
SUBSTEP_TOL_Q = 0.1


class FMUStepper:
    """Steps one instantiated FMU (FMU units in and out).

    Parameters
    ----------
    fmu : object
        An opened FMU (:func:`cooling_fmu.adapter.open_fmu`), not yet instantiated; it is instantiated here.
    vr_in : list
        Value references of the inputs, in input order.
    vr_state : list
        Value references of the exposed states (may be empty).
    vr_out : list
        Value references of the outputs, in output order.
    own_loop_substep_s : float | None
        For an FMU built here: the longest Heun sub-step [s], handed to ``hpctwin_set_max_substep`` (with the error
        control :data:`SUBSTEP_TOL_X` / :data:`SUBSTEP_TOL_Q`, ``hpctwin_set_tolerance``), and the FMU's own C loop
        is used; None for a site FMU (Python loop).

    Attributes
    ----------
    fmu : object
        The FMU instance.
    run_c : object or None
        The FMU's multi-step C function, or None when the Python loop runs.
    """

    def __init__(self, fmu: object, vr_in: list, vr_state: list, vr_out: list, own_loop_substep_s: float | None):
        self.fmu = fmu
        self.vr_in_list, self.vr_state_list, self.vr_out_list = list(vr_in), list(vr_state), list(vr_out)
        # pre-built buffers for the hot path (addresses passed as ints to the raw ctypes functions)
        self._vr_in = np.asarray(self.vr_in_list, dtype=np.uint32)
        self._vr_out = np.asarray(self.vr_out_list, dtype=np.uint32)
        self.n_in, self.n_out = len(self._vr_in), len(self._vr_out)
        self._a_vr_in, self._a_vr_out = self._vr_in.ctypes.data, self._vr_out.ctypes.data
        fmu.instantiate()
        raw = getattr(fmu, "raw", None)
        self.run_c = raw.hpctwin_run if raw is not None and own_loop_substep_s is not None else None
        if self.run_c is not None:  # limit > 0 and finite (max_stable_step_s), which the FMU accepts
            raw.hpctwin_set_max_substep(fmu.component, own_loop_substep_s)
            if getattr(raw, "hpctwin_set_tolerance", None) is not None:  # the sub-steps' error control
                raw.hpctwin_set_tolerance(fmu.component, SUBSTEP_TOL_X, SUBSTEP_TOL_Q)

    def start(self, t_start_s: float, u: np.ndarray, states: np.ndarray | None) -> np.ndarray:
        """Set up the experiment, set inputs and initial states, leave initialisation mode.

        Parameters
        ----------
        t_start_s : float
            Start time of the FMU's clock [s].
        u : np.ndarray
            Inputs (FMU units), shape (n_in,).
        states : np.ndarray | None
            Initial states (FMU units), shape (n_states,), or None for the FMU's own start values.

        Returns
        -------
        ndarray, shape (n_out,)
            Outputs after initialisation (FMU units).

        """
        fmu = self.fmu
        fmu.setupExperiment(t_start_s)
        fmu.enterInitializationMode()
        fmu.setReal(self.vr_in_list, u)
        if states is not None and len(self.vr_state_list):
            fmu.setReal(self.vr_state_list, states)
        fmu.exitInitializationMode()
        # rumoca 0.9.13 defect: fmi2ExitInitializationMode evaluates outputs in a fixed order, so an output that
        # depends on an algebraic that depends on another output keeps the value from the default start values.
        # Re-evaluate (fmi2SetReal marks the instance dirty) until the outputs stop changing.
        y = fmu.getReal(self.vr_out_list)
        for _ in range(5):
            fmu.setReal(self.vr_in_list, u)
            y_new = fmu.getReal(self.vr_out_list)
            if np.array_equal(y_new, y):
                break
            y = y_new
        return np.array(y, dtype=float)

    def warm_up(self, t_start_s: float, step_s: float, n_steps: int) -> np.ndarray:
        """Take ``n_steps`` steps with the inputs last set held.

        Parameters
        ----------
        t_start_s : float
            Time of the first step [s].
        step_s : float
            Step [s].
        n_steps : int
            Steps (>= 1).

        Returns
        -------
        ndarray, shape (n_out,)
            Outputs at the end (FMU units).

        """
        for j in range(n_steps):
            self.fmu.doStep(t_start_s + j * step_s, step_s)
        return np.array(self.fmu.getReal(self.vr_out_list), dtype=float)

    def steps(self, u: np.ndarray, t_first_s: float, step_s: float, out: np.ndarray,
              run_c: object = None) -> tuple[int, FMUError | None]:
        """Take one communication step per row of ``u``, writing the outputs into ``out``.

        Parameters
        ----------
        u : np.ndarray
            Inputs (FMU units), C-contiguous, shape (n_steps, n_in).
        t_first_s : float
            Time at the start of the first step [s].
        step_s : float
            Communication step [s].
        out : np.ndarray
            Output buffer, C-contiguous, shape (n_steps, n_out); row ``j`` gets the outputs at the end of step
            ``j``.
        run_c : object
            The C loop to call instead of :attr:`run_c` (the step timeout's worker passes the unwrapped one).

        Returns
        -------
        tuple of (int, cooling_fmu.adapter.FMUError or None)
            Steps completed and, if a step failed, its error (function, status, time, inputs, FMU log).
        """
        fmu, n_steps, h, t0 = self.fmu, u.shape[0], step_s, t_first_s
        run_c = self.run_c if run_c is None else run_c
        j = 0
        try:
            if run_c is not None:  # the FMU's own loop: one C call for every step
                status = ctypes.c_int(0)
                j = int(run_c(fmu.component, n_steps, t0, h, self._a_vr_in, self.n_in, u.ctypes.data,
                                   self._a_vr_out, self.n_out, out.ctypes.data, ctypes.addressof(status)))
                if status.value:
                    self._raise_raw_status(status.value, t0 + j * h, u[j])
            elif fmu.raw is not None:
                raw, comp = fmu.raw, fmu.component
                set_real, do_step, get_real = raw.fmi2SetReal, raw.fmi2DoStep, raw.fmi2GetReal
                a_vr_in, a_vr_out, n_in, n_out = self._a_vr_in, self._a_vr_out, self.n_in, self.n_out
                a_u, a_out = u.ctypes.data, out.ctypes.data
                su, so = u.strides[0], out.strides[0]
                for j in range(n_steps):
                    st = set_real(comp, a_vr_in, n_in, a_u + j * su)
                    st |= do_step(comp, t0 + j * h, h, 1) << 3
                    st |= get_real(comp, a_vr_out, n_out, a_out + j * so) << 6
                    if st:
                        self._raise_raw_status(st, t0 + j * h, u[j])
            else:
                for j in range(n_steps):
                    fmu.setReal(self.vr_in_list, u[j])
                    fmu.doStep(t0 + j * h, h)
                    out[j] = fmu.getReal(self.vr_out_list)
        except FMUError as exc:
            return j, exc
        return n_steps, None

    def steps_staged(self, u: np.ndarray, t0_s: float, k0: int, step_s: float, out: np.ndarray, schedule: object,
                     to_si: Callable[[np.ndarray], np.ndarray], run_c: object = None) -> tuple[int, FMUError | None]:
        """:meth:`steps` in pieces of one sample period, the supervisory command set before each piece.

        The cell command (the last input column) of each piece is ``schedule.command()``; after the piece,
        ``schedule.after(n, y_last)`` gets its length and its last outputs in SI (``to_si`` of a copy). Pieces end at
        the multiples of ``schedule.sample_steps`` steps counted by ``schedule.steps_done``, so the FMU sees the
        same inputs, step by step, as one :meth:`steps` call per piece (the calls :class:`cooling_fmu.supervisory.
        StagedPlant` made before), without the per-piece input checks and conversions.

        Parameters
        ----------
        u : np.ndarray
            Inputs (FMU units), C-contiguous, shape (n_steps, n_in); the last column is overwritten.
        t0_s : float
            Time of the plant's step 0 [s].
        k0 : int
            Steps taken before ``u``'s first row (its start time is ``t0_s + k0 * step_s``).
        step_s : float
            Communication step [s].
        out : np.ndarray
            Output buffer, C-contiguous, shape (n_steps, n_out).
        schedule : object
            ``sample_steps``, ``steps_done``, ``command()`` and ``after(n, y_last)`` (the stager).
        to_si : Callable[[np.ndarray], np.ndarray]
            FMU outputs to SI (in place).
        run_c : object
            As :meth:`steps`.

        Returns
        -------
        tuple of (int, cooling_fmu.adapter.FMUError or None)
            Steps completed and, if a step failed, its error. A piece with a non-finite output ends the loop
            after that piece (the caller finds the step).
        """
        n_steps, col, every, j = u.shape[0], u.shape[1] - 1, schedule.sample_steps, 0
        run_c = self.run_c if run_c is None else run_c
        if run_c is None:  # no C loop (another backend): one steps() call per piece
            while j < n_steps:
                n = min(n_steps - j, every - schedule.steps_done % every)
                u[j:j + n, col] = schedule.command()
                done, exc = self.steps(u[j:j + n], t0_s + (k0 + j) * step_s, step_s, out[j:j + n])
                if exc is not None:
                    return j + done, exc
                j += n
                if not np.isfinite(out[j - n:j]).all():
                    return j, None
                schedule.after(n, to_si(out[j - 1].copy()))
            return n_steps, None
        # the C loop per piece, called as steps() calls it, with the buffers' addresses taken once; the Python per
        # piece kept to what the stager needs (issue 26 item 2): the command column is written for the rest of the
        # block and rewritten only when the command changes (the same values, row by row, as setting each piece's
        # rows before it), the piece's finiteness is tested through one sum (a non-finite element makes it
        # non-finite; only an overflowing sum of finite values needs the element test)
        comp, status = self.fmu.component, ctypes.c_int(0)
        a_st, a_u, a_out, su, so = ctypes.addressof(status), u.ctypes.data, out.ctypes.data, u.strides[0], out.strides[0]
        a_vr_in, a_vr_out, n_in, n_out = self._a_vr_in, self._a_vr_out, self.n_in, self.n_out
        isfinite, after, command = math.isfinite, schedule.after, schedule.command
        k = schedule.steps_done
        cmd = command()
        u[:, col] = cmd
        while j < n_steps:
            n = min(n_steps - j, every - k % every)
            t = t0_s + (k0 + j) * step_s
            done = int(run_c(comp, n, t, step_s, a_vr_in, n_in, a_u + j * su, a_vr_out, n_out, a_out + j * so, a_st))
            if status.value:
                try:
                    self._raise_raw_status(status.value, t + done * step_s, u[j + done])
                except FMUError as exc:
                    return j + done, exc
            j += n
            k += n
            piece = out[j - n:j]
            if not isfinite(float(piece.sum())) and not np.isfinite(piece).all():
                return j, None
            after(n, to_si(out[j - 1].copy()))
            c = command()
            if c != cmd and j < n_steps:
                u[j:, col] = cmd = c
        return n_steps, None

    def held_staged(self, u: np.ndarray, t0_s: float, k0: int, n_steps: np.ndarray, step_s: float, out: np.ndarray,
                    schedule: object, to_si: Callable[[np.ndarray], np.ndarray]) -> tuple[int, FMUError | None]:
        """Held long steps one after another, the supervisory command set before each (issue 26 item 2).

        Row ``k`` of ``u`` is ONE FMU step of ``n_steps[k] * step_s`` with its inputs held (:meth:`held`, in the FMU's
        own C loop), its cell command (the last input column) ``schedule.command()``; then
        ``schedule.after(n_steps[k], y)`` gets the SI outputs at its end: the calls and arithmetic of one
        :meth:`held` call per row with the stager between them, without their per-call Python.

        Parameters
        ----------
        u : np.ndarray
            Inputs (FMU units), C-contiguous, shape (k, n_in); the last column is overwritten.
        t0_s : float
            Time of the plant's step 0 [s].
        k0 : int
            Steps taken before ``u``'s first row (it starts at ``t0_s + k0 * step_s``, as :meth:`held` is called).
        n_steps : np.ndarray
            Communication steps each row covers, shape (k,), >= 1.
        step_s : float
            Communication step [s].
        out : np.ndarray
            Output buffer, C-contiguous, shape (k, n_out): row ``k`` gets the outputs (FMU units) at the end of row
            ``k``.
        schedule : object
            ``command()`` and ``after(n, y_last)`` (the stager, :class:`cooling_fmu.supervisory.StagedPlant`).
        to_si : Callable[[np.ndarray], np.ndarray]
            FMU outputs to SI (in place).

        Returns
        -------
        tuple of (int, cooling_fmu.adapter.FMUError or None)
            Rows completed and, if one failed, its error. A row with a non-finite output ends the loop after that
            row (the caller finds it).

        Raises
        ------
        ValueError
            If the FMU has no C loop of its own (a site FMU is never stepped with held steps).
        """
        run_c = self.run_c
        if run_c is None:
            raise ValueError("held_staged needs the FMU's own C loop (hpctwin_run)")
        comp, status = self.fmu.component, ctypes.c_int(0)
        a_st, a_u, a_out, su, so = ctypes.addressof(status), u.ctypes.data, out.ctypes.data, u.strides[0], out.strides[0]
        a_vr_in, a_vr_out, n_in, n_out, isfinite = self._a_vr_in, self._a_vr_out, self.n_in, self.n_out, math.isfinite
        col, kk = u.shape[1] - 1, int(k0)
        after, command = schedule.after, schedule.command
        cmd = command()
        u[:, col] = cmd  # rewritten from the next row on when the command changes (the same values row by row)
        for k, n in enumerate(n_steps.tolist()):
            t, span = t0_s + kk * step_s, n * step_s
            run_c(comp, 1, t, span, a_vr_in, n_in, a_u + k * su, a_vr_out, n_out, a_out + k * so, a_st)
            if status.value:
                try:
                    self._raise_raw_status(status.value, t, u[k])
                except FMUError as exc:
                    return k, exc
            y = out[k]
            if not isfinite(y.sum()) and not np.isfinite(y).all():
                return k + 1, None
            after(n, to_si(y.copy()))
            kk += n
            c = command()
            if c != cmd:
                u[k + 1:, col] = cmd = c
        return u.shape[0], None

    def held(self, u: np.ndarray, t_s: float, span_s: float) -> np.ndarray:
        """One FMU step of ``span_s`` with the inputs ``u`` held.

        Parameters
        ----------
        u : np.ndarray
            Inputs (FMU units), shape (n_in,).
        t_s : float
            Time at the start [s].
        span_s : float
            Length of the step [s].

        Returns
        -------
        ndarray, shape (n_out,)
            Outputs at the end (FMU units).

        Raises
        ------
        FMUError
            If an FMI call fails.
        """
        if self.run_c is not None:  # the FMU's own loop for one row: the same fmi2SetReal / DoStep / GetReal in C
            out = np.empty((1, self.n_out))
            _, exc = self.steps(np.ascontiguousarray(u, dtype=float).reshape(1, -1), t_s, span_s, out)
            if exc is not None:
                raise FMUError(exc.function, exc.status, exc.time_s, exc.inputs, exc.log) from exc
            return out[0]
        self.fmu.setReal(self.vr_in_list, u)
        self.fmu.doStep(t_s, span_s)
        return np.array(self.fmu.getReal(self.vr_out_list), dtype=float)

    def _raise_raw_status(self, st: int, t_s: float, u_row: np.ndarray) -> None:
        """Raise the FMUError of a failed hot-path step: ``st`` packs the statuses of fmi2SetReal (bits 0-2),
        fmi2DoStep (3-5) and fmi2GetReal (6-8), as both loops of :meth:`steps` (Python and the FMU's C loop) build it.
        """
        fmu = self.fmu
        fmu.time_s = t_s
        fmu.last_inputs = dict(zip(self.vr_in_list, u_row.tolist()))
        for shift, name in ((0, "fmi2SetReal"), (3, "fmi2DoStep"), (6, "fmi2GetReal")):
            fmu.check_raw(name, (st >> shift) & 7)
