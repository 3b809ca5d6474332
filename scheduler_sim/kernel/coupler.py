"""The cooling coupler: completed cooling steps in, plant steps and output rows out.

The step integrator (:class:`scheduler_sim.kernel.recorder.StepIntegrator`) hands the coupler the exact average of
the power step function over each completed cooling communication step. The coupler

* steps the plant with the heat per CDU and the wet-bulb temperature of those steps (zero-order hold), talking to
  it only through the :class:`cooling_fmu.coupling.Plant` protocol and its conventions (step averages of the
  plant's power outputs, :class:`~cooling_fmu.coupling.StepAverager`; physical bounds,
  :class:`cooling_fmu.plausibility.OutputGuard`; the typed failure :class:`~cooling_fmu.coupling.PlantError`);
* evaluates the facility overheads beyond IT and the liquid plant (:class:`power.facility.FacilityOverheads`);
* integrates the facility energies, publishes what the scheduler may know of the last step
  (:class:`~scheduler_sim.kernel.state.CoolingReadout`), and pushes one output row per step to the interval
  reducer.

Without a plant only the electrical series are recorded (the facility is then not modelled).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from cooling_fmu.coupling import Plant, PlantError, StepAverager
from cooling_fmu.plausibility import OutputGuard
from power.facility import SERIES as OVERHEAD_SERIES
from power.sizing import facility_overheads
from power.system import System

from .progress import RunHooks
from .recorder import IntervalReducer
from .state import CoolingReadout, StateLayout

__all__ = ["PlantStopped", "CoolingCoupler"]


class PlantStopped(RuntimeError):
    """The cooling plant failed a step (or left its bounds under ``on_implausible="stop"``) at ``t_s``; the run
    stops and keeps what was completed.

    Parameters
    ----------
    cause : Exception
        The plant's error.
    t_s : float
        End of the last step kept [s].
    """

    def __init__(self, cause: Exception, t_s: float) -> None:
        super().__init__(f"cooling plant failed at t = {t_s:.0f} s: {cause}")
        self.cause = cause
        self.t_s = t_s


class CoolingCoupler:
    """Steps the plant with each completed cooling step and records the step rows.

    Parameters
    ----------
    plant : Plant | None
        The plant; None disables cooling (no plant and no facility overhead is modelled).
    wet_bulb_K : Callable | None
        Wet-bulb temperature [K] at simulation times [s], ``ndarray -> ndarray`` (used with a plant).
    system : System
        The platform (facility stages, liquid fraction).
    layout : StateLayout
        Columns of the step-function vector.
    t0 : float
        Window start [s] (step ``k`` covers ``[t0 + k step, t0 + (k + 1) step)``).
    step_s : float
        Cooling communication step [s].
    ratio : int
        Steps per output interval.
    on_implausible : str
        "warn" or "stop": what a plant output out of its physical bounds does (see
        :class:`scheduler_sim.kernel.config.SimulationConfig`).
    progress : RunHooks | None
        Progress display, updated per call.
    dry_bulb_K : Callable | None
        Dry-bulb temperature [K] at simulation times; passed to a plant with ``uses_dry_bulb`` as ``T_db_K``
        (None, or a plant without it: the plant's own default, saturated air for the generated plant).

    Attributes
    ----------
    step_sums : ndarray, shape (layout.size,)
        Integral of the step function over the completed steps [J for powers].
    plant_sums : ndarray, shape (n_outputs,)
        Integral of the plant's outputs [J for powers].
    overhead_sums : ndarray, shape (n_overheads,)
        Integral of the facility overhead series [J].
    steps_emitted : int
        Steps completed.
    reducer : IntervalReducer
        Interval averages of the rows.
    guard : OutputGuard or None
        Physical bounds of the plant's outputs (its violations are reported).
    """

    def __init__(self, plant: Plant | None, wet_bulb_K: Callable | None, system: System, layout: StateLayout, t0: float,
                 step_s: float, ratio: int, on_implausible: str, progress: RunHooks | None = None,
                 dry_bulb_K: Callable | None = None) -> None:
        self.plant = plant
        self.wet_bulb_K = wet_bulb_K
        self.dry_bulb_K = dry_bulb_K if getattr(plant, "uses_dry_bulb", False) else None
        self._air_to_plant = None  # the air side's heat, into the plant's towers (issue 22 item 4)
        self.layout = layout
        self.t0 = float(t0)
        self.step_s = float(step_s)
        self.on_implausible = on_implausible
        self.progress = progress
        self.overheads = facility_overheads(system)  # ratings from the system (power.sizing)
        n_plant = len(plant.output_names) if plant is not None else 0
        self.guard = OutputGuard(list(plant.output_names), list(plant.output_units)) if plant is not None else None
        # cooling off means the facility is not modelled: no overhead is counted then
        modelled = plant is not None and (self.overheads.active or system.liquid_fraction != 1.0)
        self.n_overheads = len(OVERHEAD_SERIES) if modelled else 0
        self._i_q_air = OVERHEAD_SERIES.index("Q_air_W")
        if modelled and getattr(plant, "uses_air_side_heat", False) and self.overheads.spec.air_side is not None:
            self._air_to_plant = self.overheads.air_side_rejected_W
        self.step_sums = np.zeros(layout.size)
        self.plant_sums = np.zeros(n_plant)
        self.overhead_sums = np.zeros(self.n_overheads)
        self.steps_emitted = 0
        n_cols = layout.size + (1 + n_plant if plant is not None else 0) + self.n_overheads
        self.reducer = IntervalReducer(ratio, n_cols)
        self._ready = False
        self._averager: StepAverager | None = None
        self._readout: CoolingReadout | None = None
        self._jobs_left: Callable[[], int] = lambda: 0

    def bind(self, readout: CoolingReadout, jobs_left: Callable[[], int]) -> None:
        """Publish to ``readout`` (the platform state's); ``jobs_left`` feeds the progress display."""
        self._readout = readout
        self._jobs_left = jobs_left

    def _step_plant(self, k0: int, block: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                              PlantStopped | None]:
        """Run the plant over the steps ``k0 ..`` of ``block``; returns (block, wet-bulb, outputs, failure) cut to the
        steps kept (a failure keeps the completed steps; a step out of bounds under "stop" is the last kept).

        Raises :class:`PlantStopped` when the plant fails in the first step of the call (nothing to keep).
        """
        m = block.shape[0]
        plant = self.plant
        t_mid = self.t0 + (np.arange(k0, k0 + m) + 0.5) * self.step_s
        twb = np.asarray(self.wet_bulb_K(t_mid), dtype=float)
        heat = np.ascontiguousarray(block[:, :self.layout.n_cdus])
        db = {} if self.dry_bulb_K is None else {"T_db_K": np.asarray(self.dry_bulb_K(t_mid), dtype=float)}
        if self._air_to_plant is not None:  # CRAH coil -> chilled water -> chiller / economiser -> towers
            db["Q_air_side_W"] = self._air_to_plant(block[:, self.layout.it], twb)
        if not self._ready:
            init = plant.initialize(heat[0], float(twb[0]), **{k: float(v[0]) for k, v in db.items()})
            self._ready = True
            self._averager = StepAverager(plant.output_names, self.step_s)
            self._averager.start(init)
        failure = None
        try:
            out = plant.run(heat, twb, **db)
        except PlantError as exc:  # keep the steps the plant completed, then stop the run (marked partial)
            done = exc.completed_outputs
            if done.shape[0] == 0:
                raise PlantStopped(exc, self.t0 + k0 * self.step_s) from exc
            failure = PlantStopped(exc, self.t0 + (k0 + done.shape[0]) * self.step_s)
            m = done.shape[0]
            out = np.array(done, dtype=float)
            block, twb = block[:m], twb[:m]
        # Power outputs sampled at the end of a step are replaced by their exact step averages where the plant
        # integrates them itself (a running energy total E_x: P_avg = dE / step).
        self._averager.apply(out)
        if self.guard is not None and self.guard.violates(out, twb):  # physical bounds (cooling_fmu.plausibility)
            t_end = self.t0 + (np.arange(k0, k0 + m) + 1.0) * self.step_s
            bad = self.guard.check(t_end, out, twb)
            if bad is not None and self.on_implausible == "stop" and failure is None:
                v = min(self.guard.violations.values(), key=lambda v: v.t_s)
                failure = PlantStopped(RuntimeError(v.message()), float(t_end[bad]))
                m = bad + 1  # keep the step that left the bounds; the run stops after it
                out, block, twb = out[:m], block[:m], twb[:m]
        return block, twb, out, failure

    def emit(self, k0: int, block: np.ndarray, parts: tuple[np.ndarray, ...] | None = None) -> None:
        """Receive completed cooling steps and step the plant (one plant call for all of them).

        Parameters
        ----------
        k0 : int
            Index of the first step of ``block``.
        block : np.ndarray
            Shape (m, layout.size): averages of the step function over steps ``k0 .. k0 + m - 1``.
        parts : tuple[np.ndarray, ...] | None
            The blocks ``block`` was made of (:class:`~scheduler_sim.kernel.recorder.StepIntegrator` with
            ``fold=True``: the step in progress, then the run of whole steps), in order. The energy totals are
            accumulated part by part, the arithmetic of one call per part, so a folded call gives bit-identical
            totals; every per-step output is the same in either form. None: ``block`` is one part.

        Raises
        ------
        PlantStopped
            When the plant failed (after the completed steps were recorded).
        """
        lay = self.layout
        failure = None
        if parts is None:
            parts = (block,)
        if self.plant is not None:
            block, twb, out, failure = self._step_plant(k0, block)
            m = block.shape[0]
            self._readout.plant_state = out[-1]
            p_liq = out[:, self.plant.P_cooling_index]
            # one row array for the reducer, filled in place (no per-call concatenate / stack)
            rows = np.empty((m, self.reducer.n_values))
            rows[:, :lay.size] = block
            rows[:, lay.size] = twb
            rows[:, lay.size + 1:lay.size + 1 + out.shape[1]] = out
        else:
            m = block.shape[0]
            p_liq, twb = np.zeros(m), None
            rows = block
        if self.n_overheads:
            cols = self.overheads.evaluate_columns(block[:, lay.it], p_liq, twb)  # (m, n_overheads), C order
            rows[:, rows.shape[1] - self.n_overheads:] = cols
            extra = cols[-1].sum() - cols[-1, self._i_q_air]  # facility overhead beyond the liquid plant [W]
        else:
            extra = 0.0
        readout = self._readout
        readout.last_overhead_W = float(p_liq[-1]) + float(extra)
        a = 0  # totals part by part (steps a .. b - 1 of this call), cut to the m steps kept
        for part in parts:
            b = min(a + part.shape[0], m)
            if b <= a:
                break
            self.step_sums += part[:b - a].sum(axis=0) * self.step_s
            if self.plant is not None:
                self.plant_sums += out[a:b].sum(axis=0) * self.step_s
            if self.n_overheads:
                self.overhead_sums += cols[a:b].sum(axis=0) * self.step_s
            a = b
        readout.last_step_heat = block[-1, :lay.n_cdus].copy()
        readout.last_it_W = float(block[-1, lay.it])
        self.steps_emitted = k0 + m
        self.reducer.push(rows)
        if self.progress is not None:
            self.progress.update((k0 + m) * self.step_s / 3600.0, self._jobs_left())
        if failure is not None:
            raise PlantStopped(failure.cause, failure.t_s) from failure.cause
