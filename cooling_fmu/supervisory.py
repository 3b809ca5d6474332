"""Supervisory tower-cell staging around a plant: the Python controller at the communication step.

rumoca 0.9.13 fires no events (docs/cooling.md, defect 2), so the discrete cell stage cannot live inside the FMU.
:class:`StagedPlant` wraps a generated plant (the FMU :class:`~cooling_fmu.plant.CoolingPlant` or the fast
:class:`~cooling_fmu.quasisteady.QuasiSteadyPlant`, which take the same input ``n_cells_cmd``) and runs the
:class:`~cooling_fmu.components.staging.CellStager` on the plant's fan demand output ``y_fan_demand``.

The stager samples the plant every :data:`SAMPLE_PERIOD_S` of simulated time (a building-automation trend
interval; ASSUMPTION), at fixed multiples of the communication step counted from the start, so the decisions do not
depend on how the caller cuts its calls into blocks (runs stay deterministic). Between samples the command is held,
and the plant's own C loop runs the steps of one sample period in one call.
"""

from __future__ import annotations

import numpy as np

from .components.staging import CellStager
from .coupling import PlantError

__all__ = ["SAMPLE_PERIOD_S", "StagedPlant"]

#: Sampling period of the supervisory stager [s] (ASSUMPTION: a one-minute building-automation scan).
SAMPLE_PERIOD_S = 60.0


class StagedPlant:
    """A generated plant with its tower cells staged by the supervisory :class:`CellStager` (module docstring).

    Parameters
    ----------
    plant : object
        A plant of the :class:`~cooling_fmu.coupling.Plant` protocol whose ``run`` takes ``n_cells_cmd`` and whose
        outputs include ``y_fan_demand`` (the generated plant, FMU or fast). Other attributes are forwarded.
    stager : CellStager | None
        The controller (default: :class:`CellStager` with its documented defaults for the plant's cells).
    sample_period_s : float
        Sampling period [s] (default :data:`SAMPLE_PERIOD_S`), rounded to whole communication steps (>= 1).

    Attributes
    ----------
    stager : CellStager
        The controller; ``stager.n_on`` is the current command.
    switch_times_s : list of float
        Simulated times (from the start) at which the command changed.
    """

    def __init__(self, plant: object, stager: CellStager | None = None, sample_period_s: float = SAMPLE_PERIOD_S) -> None:
        self._plant = plant
        self.stager = stager if stager is not None else CellStager(plant.params.tower.n_cells)
        self._every = max(1, int(round(float(sample_period_s) / plant.step_s)))
        self._i_dem = plant.output_names.index("y_fan_demand")
        self._k = 0
        self.switch_times_s: list[float] = []
        from .plant import CoolingPlant

        #: the generated FMU plant takes this stager as its command (:meth:`CoolingPlant.run`): one call per block
        self._schedule_in_plant = isinstance(plant, CoolingPlant) and plant.own_model

    @property
    def sample_steps(self) -> int:
        """int: communication steps between two samples of the stager."""
        return self._every

    @property
    def steps_done(self) -> int:
        """int: communication steps since :meth:`initialize`."""
        return self._k

    def command(self) -> float:
        """The cells commanded until the next sample.

        Returns
        -------
        float
            ``stager.n_on``.
        """
        return float(self.stager.n_on)

    def after(self, n: int, y_last: np.ndarray) -> None:
        """Count ``n`` steps and, at a sample instant, update the stager with the fan demand of ``y_last``.

        Parameters
        ----------
        n : int
            Steps just taken.
        y_last : np.ndarray
            SI outputs at the end of the last of them, shape (n_outputs,).
        """
        self._after(n, y_last)

    def __getattr__(self, name: str):
        return getattr(self._plant, name)

    def initialize(self, heat_W: np.ndarray, T_wb_K: float, **kw) -> np.ndarray:
        """Initialise the plant (its algebraic staging at the start) and the stager at its starting stage.

        Parameters
        ----------
        heat_W : np.ndarray
            Heat per CDU of the first step [W], shape (n_cdu,).
        T_wb_K : float
            Wet-bulb of the first step [K].
        **kw
            Passed to the plant's ``initialize``.

        Returns
        -------
        ndarray
            The plant's outputs at the start.
        """
        y = self._plant.initialize(heat_W, T_wb_K, **kw)
        st = self.stager
        st.n_on = st.initial_stage(float(y[self._i_dem]))
        st.update(0.0, float(y[self._i_dem]))
        self._k = 0
        self.switch_times_s = []
        return y

    def run(self, heat_W: np.ndarray, T_wb_K: np.ndarray, **rows: np.ndarray | None) -> np.ndarray:
        """Advance one communication step per row, the command held between samples.

        Parameters
        ----------
        heat_W : np.ndarray
            Heat per CDU of each step [W], shape (m, n_cdu).
        T_wb_K : np.ndarray
            Wet-bulb of each step [K], shape (m,).
        **rows : np.ndarray | None
            Further per-step inputs of the plant (``T_db_K``, ``Q_air_side_W``), shape (m,), passed on.

        Returns
        -------
        ndarray, shape (m, n_outputs)
            The plant's outputs.

        Raises
        ------
        PlantError
            As the plant's ``run``; its ``completed_outputs`` then hold every step completed in this call.
        """
        q = np.asarray(heat_W, dtype=float)
        tw = np.asarray(T_wb_K, dtype=float)
        m = q.shape[0]
        extra = {k: np.asarray(v, dtype=float) for k, v in rows.items() if v is not None}
        if getattr(self._plant, "demand_independent_of_cells", False) and m:
            return self._run_fast(q, tw, extra)
        if self._schedule_in_plant:  # the FMU plant runs the pieces itself (FMUStepper.steps_staged), same steps
            return self._plant.run(q, tw, n_cells_cmd=self, **extra)
        parts, j = [], 0
        while j < m:
            n = min(m - j, self._every - self._k % self._every)
            try:
                y = self._plant.run(q[j:j + n], tw[j:j + n], n_cells_cmd=float(self.stager.n_on),
                                    **{k: v[j:j + n] for k, v in extra.items()})
            except PlantError as exc:
                prev = exc.completed_outputs
                if parts:
                    exc.completed_outputs = np.concatenate(parts + ([prev] if prev is not None else []))
                raise
            parts.append(y)
            self._after(n, y[-1])
            j += n
        return np.concatenate(parts) if parts else np.zeros((0, len(self.output_names)))

    def _run_fast(self, q: np.ndarray, tw: np.ndarray, extra: dict) -> np.ndarray:
        """The fast plant: its fan demand is a function of the inputs alone, so the stager runs over the whole
        block's demand first (the same sample instants as :meth:`run`) and the plant once with the commands.
        """
        fd = getattr(self._plant, "fan_demand", None)  # the demand alone (no staging, no evaporation): same values
        dem = fd(q, tw, **extra) if fd is not None else self._plant.steady_outputs(q, tw, **extra)[:, self._i_dem]
        cmd = np.empty(q.shape[0])
        for j in range(q.shape[0]):
            cmd[j] = self.stager.n_on
            self._after(1, dem[j:j + 1], column=0)
        return self._plant.run(q, tw, n_cells_cmd=cmd, **extra)

    def advance_held(self, heat_W: np.ndarray, T_wb_K: float, n_steps: int, **kw: float | None) -> np.ndarray:
        """One long step of the plant with the inputs and the command held (:class:`~cooling_fmu.coupling.AdaptiveStepper`).

        Parameters
        ----------
        heat_W : np.ndarray
            Heat per CDU [W], shape (n_cdu,).
        T_wb_K : float
            Wet-bulb [K].
        n_steps : int
            Communication steps covered.
        **kw : float | None
            Further held inputs of the plant (``T_db_K``, ``Q_air_side_W``), passed on.

        Returns
        -------
        ndarray
            The plant's outputs at the end.
        """
        y = self._plant.advance_held(heat_W, T_wb_K, n_steps, n_cells_cmd=float(self.stager.n_on), **kw)
        self._after(int(n_steps), y)
        return y

    @property
    def held_sequence_available(self) -> bool:
        """bool: :meth:`advance_held_sequence` runs (the generated FMU plant with its own C loop)."""
        return self._schedule_in_plant and bool(getattr(self._plant, "raw_run_available", False))

    def advance_held_sequence(self, heat_W: np.ndarray, T_wb_K: np.ndarray, n_steps: np.ndarray,
                              **rows: np.ndarray | None) -> np.ndarray:
        """Long steps one after another, each as :meth:`advance_held` (its command held, the stager after it).

        Parameters
        ----------
        heat_W : np.ndarray
            Heat per CDU of each long step [W], shape (k, n_cdu) or (n_cdu,).
        T_wb_K : np.ndarray
            Wet-bulb of each long step [K], shape (k,).
        n_steps : np.ndarray
            Communication steps of each long step, shape (k,).
        **rows : np.ndarray | None
            Further held inputs of each long step (``T_db_K``, ``Q_air_side_W``), shape (k,).

        Returns
        -------
        ndarray, shape (k, n_outputs)
            The plant's outputs at the end of each long step (:func:`cooling_fmu.plant.advance_held_sequence`).
        """
        from .plant import advance_held_sequence

        return advance_held_sequence(self._plant, heat_W, T_wb_K, n_steps, self, **rows)

    def _after(self, n: int, y_last: np.ndarray, column: int | None = None) -> None:
        """Count ``n`` steps; at a sample instant, update the stager with the last fan demand (column
        ``y_fan_demand`` of ``y_last``, or ``column``).
        """
        before = self._k // self._every
        self._k += n
        if self._k // self._every > before:
            n_old, t = self.stager.n_on, self._k * self._plant.step_s
            col = self._i_dem if column is None else column
            if self.stager.update(t, float(y_last[col])) != n_old:
                self.switch_times_s.append(t)
