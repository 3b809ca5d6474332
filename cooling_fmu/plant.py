"""``CoolingPlant``: the snake_case facade the scheduler steps once per cooling communication step.

The plant is a Modelica model generated from a :class:`~cooling_fmu.params.PlantParams`, compiled to an FMI 2.0
FMU on first use (cached by content hash) and stepped with a fixed communication step. The input of each step is the
exact step-average heat per CDU, held constant over the step (zero-order hold), and the wet-bulb temperature.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .adapter import FMU2CoSimulation, VariableMap, load_variable_map
from .build import build_fmu
from .modelica import analytic_steady_state, generate_plant_modelica, model_name_for
from .params import PlantParams, load_plant_params

__all__ = ["CoolingPlant", "EULER_SUBSTEPS"]

#: rumoca 0.9.13's fmi2DoStep integrates with forward Euler in this many equal sub-steps per communication step.
EULER_SUBSTEPS = 10


def max_rate_per_s(params: PlantParams) -> float:
    """Largest eigenvalue magnitude of the plant's linear thermal dynamics (at full flow).

    Parameters
    ----------
    params : PlantParams
        Plant description.

    Returns
    -------
    float
        ``max(eps m_sec_nom / m_water_sec, n m_fac_nom / m_water_fac)`` [1/s], an upper bound of the decay rates of
        the secondary-loop and facility-loop temperatures (the HX conductance is bounded by ``eps C_min``).
    """
    c = params.cdu
    r_sec = c.eps_hx * min(c.m_flow_sec_nominal_kg_s, c.m_flow_fac_nominal_kg_s) / c.m_water_sec_kg
    r_fac = params.n_cdu * c.m_flow_fac_nominal_kg_s / params.facility.m_water_kg
    return max(r_sec, r_fac)


class CoolingPlant:
    """Cooling plant FMU with a fixed communication step.

    Parameters
    ----------
    params : PlantParams or str or pathlib.Path
        Plant description, or a shipped plant name / TOML path for :func:`~cooling_fmu.params.load_plant_params`.
    step_s : float, optional
        Communication step [s] (default 15 s). Must keep the FMU's forward-Euler sub-step stable and accurate:
        ``step_s / EULER_SUBSTEPS * max_rate_per_s(params) <= 0.2``.
    cache_dir : str or pathlib.Path, optional
        FMU cache directory (default :func:`cooling_fmu.build.default_cache_dir`).
    map_path : str or pathlib.Path, optional
        Variable map YAML (default ``maps/hpctwin_plant.yaml``).
    fmu_path : str or pathlib.Path, optional
        Use this FMU instead of building one from ``params`` (e.g. a site's own FMU with its own map).

    Attributes
    ----------
    params : PlantParams
        The plant description.
    step_s : float
        Communication step [s].
    n_cdu : int
        Number of CDUs.
    input_names : list of str
        ``["Q_flow_CDU[1]", ..., "Q_flow_CDU[n]", "T_wb"]``.
    output_names : list of str
        Output names in the order of the arrays returned by :meth:`step` and :meth:`run`.
    output_units : list of str
        SI unit of each output, aligned with ``output_names``.
    fmu_path : pathlib.Path
        The FMU in use.
    time_s : float
        Simulation time of the last communication point [s].

    Raises
    ------
    ValueError
        If ``step_s`` is not positive and finite, or too large for the Euler sub-step (see above).
    cooling_fmu.build.FMUBuildError
        If the FMU cannot be built.

    Examples
    --------
    >>> with CoolingPlant("theta") as plant:                              # doctest: +SKIP
    ...     plant.initialize(np.full(6, 200e3), 285.0)
    ...     y = plant.step(np.full(6, 210e3), 285.5)
    ...     p_cooling_w = y[plant.P_cooling_index]
    """

    def __init__(
        self,
        params: PlantParams | str | Path,
        step_s: float = 15.0,
        cache_dir: str | Path | None = None,
        map_path: str | Path | None = None,
        fmu_path: str | Path | None = None,
    ):
        self.params = params if isinstance(params, PlantParams) else load_plant_params(params)
        step_s = float(step_s)
        if not (math.isfinite(step_s) and step_s > 0):
            raise ValueError(f"step_s must be positive and finite, got {step_s}")
        courant = step_s / EULER_SUBSTEPS * max_rate_per_s(self.params)
        if fmu_path is None and courant > 0.2:
            raise ValueError(
                f"step_s = {step_s} s is too long for plant {self.params.name!r}: the FMU integrates with forward "
                f"Euler in {EULER_SUBSTEPS} sub-steps and rate x sub-step = {courant:.3f} > 0.2; use step_s <= "
                f"{0.2 * EULER_SUBSTEPS / max_rate_per_s(self.params):.1f} s"
            )
        self.step_s = step_s
        self.n_cdu = self.params.n_cdu
        if fmu_path is None:
            fmu_path = build_fmu(generate_plant_modelica(self.params), model_name_for(self.params), cache_dir)
        self.fmu_path = Path(fmu_path)
        self.map: VariableMap = load_variable_map(self.n_cdu, map_path)
        self._fmu = FMU2CoSimulation(self.fmu_path)
        try:
            for group in (self.map.inputs, self.map.states, self.map.outputs):
                self._fmu.check_units(group)
        except Exception:
            self._fmu.freeInstance()
            raise
        self.input_names = [e.name for e in self.map.inputs]
        self.output_names = [e.name for e in self.map.outputs]
        self.output_units = [e.unit for e in self.map.outputs]
        self._index = {n: i for i, n in enumerate(self.output_names)}
        if len(self.input_names) != self.n_cdu + 1:
            raise ValueError(f"the variable map must have n_cdu + 1 = {self.n_cdu + 1} inputs (heat per CDU, T_wb)")
        self._vr_in_list = self._fmu.value_references([e.fmu for e in self.map.inputs])
        self._vr_state_list = self._fmu.value_references([e.fmu for e in self.map.states])
        self._vr_out_list = self._fmu.value_references([e.fmu for e in self.map.outputs])
        # pre-built buffers for the hot path (addresses passed as ints to the raw ctypes functions)
        self._vr_in = np.asarray(self._vr_in_list, dtype=np.uint32)
        self._vr_out = np.asarray(self._vr_out_list, dtype=np.uint32)
        self._u = np.zeros(self.n_cdu + 1)
        self._y = np.zeros(len(self._vr_out_list))
        self._n_in, self._n_out = len(self._vr_in), len(self._vr_out)
        self._a_vr_in, self._a_vr_out = self._vr_in.ctypes.data, self._vr_out.ctypes.data
        self._a_u, self._a_y = self._u.ctypes.data, self._y.ctypes.data
        self._k = 0  # communication steps since initialize
        self._t0 = 0.0
        self._initialized = False
        self._closed = False
        self._fmu.instantiate()

    # ---- helpers ---------------------------------------------------------------------------------------------------
    def index(self, name: str) -> int:
        """Column of an output.

        Parameters
        ----------
        name : str
            Output name, e.g. ``"P_cooling"`` or ``"T_sec_sup[2]"``.

        Returns
        -------
        int
            Index into the arrays returned by :meth:`step` and :meth:`run`.

        Raises
        ------
        KeyError
            If the output does not exist.
        """
        try:
            return self._index[name]
        except KeyError:
            raise KeyError(f"no output {name!r}; outputs: {self.output_names}") from None

    @property
    def P_cooling_index(self) -> int:
        """int: column of the total cooling power ``P_cooling`` [W]."""
        return self.index("P_cooling")

    @property
    def time_s(self) -> float:
        """float: simulation time of the last communication point [s]."""
        return self._t0 + self._k * self.step_s

    def _check_inputs(self, heat_w: np.ndarray, T_wb_K: np.ndarray) -> None:
        if heat_w.size and not (np.all(np.isfinite(heat_w)) and heat_w.min() >= 0.0):
            raise ValueError("heat_w must be finite and >= 0 W")
        if T_wb_K.size and not (np.all(np.isfinite(T_wb_K)) and T_wb_K.min() > 150.0 and T_wb_K.max() < 400.0):
            raise ValueError("T_wb_K must be finite and in (150, 400) K (kelvin, not Celsius)")

    def _require_open(self) -> None:
        if self._closed:
            raise RuntimeError("CoolingPlant is closed")

    # ---- lifecycle -------------------------------------------------------------------------------------------------
    def initialize(self, heat_w: np.ndarray, T_wb_K: float, steady: bool = True, start_time_s: float = 0.0) -> np.ndarray:
        """Set up the experiment and initial state, and leave initialization mode.

        Parameters
        ----------
        heat_w : ndarray, shape (n_cdu,)
            Heat into each CDU for the first step [W], >= 0.
        T_wb_K : float
            Wet-bulb temperature for the first step [K].
        steady : bool, optional
            If True (default), start at the analytic steady state of ``heat_w`` and ``T_wb_K``
            (:func:`~cooling_fmu.modelica.analytic_steady_state`); if False, start with all water at the tower
            leaving temperature ``T_wb_K + approach`` (an idle plant).
        start_time_s : float, optional
            Simulation time of the first communication point [s].

        Returns
        -------
        ndarray, shape (n_outputs,)
            Outputs at ``start_time_s``.

        Raises
        ------
        RuntimeError
            If already initialized (call :meth:`reset` first) or closed.
        ValueError
            If inputs have the wrong shape or are out of range.
        cooling_fmu.adapter.FMUError
            If an FMI call fails.
        """
        self._require_open()
        if self._initialized:
            raise RuntimeError("CoolingPlant already initialized; call reset() first")
        q = np.asarray(heat_w, dtype=float)
        if q.shape != (self.n_cdu,):
            raise ValueError(f"heat_w must have shape ({self.n_cdu},), got {q.shape}")
        self._check_inputs(q, np.asarray([T_wb_K], dtype=float))
        if steady:
            ss = analytic_steady_state(self.params, q, float(T_wb_K))
            states = np.concatenate([ss["T_sec"], [ss["T_fac"]]])
        else:
            states = np.full(self.n_cdu + 1, float(T_wb_K) + self.params.tower.approach_K)
        fmu = self._fmu
        fmu.setupExperiment(start_time_s)
        fmu.enterInitializationMode()
        fmu.setReal(self._vr_in_list, np.concatenate([q, [float(T_wb_K)]]))
        fmu.setReal(self._vr_state_list, states)
        fmu.exitInitializationMode()
        # rumoca 0.9.13 defect: fmi2ExitInitializationMode evaluates outputs in a fixed order, so an output that
        # depends on an algebraic that depends on another output (P_cooling <- y_fan <- Q_flow_tower) keeps the
        # value from the default start values. Re-evaluate (fmi2SetReal marks the instance dirty) until the
        # outputs stop changing; after fmi2DoStep the outputs are consistent (checked in the tests).
        y = fmu.getReal(self._vr_out_list)
        for _ in range(5):
            fmu.setReal(self._vr_in_list, np.concatenate([q, [float(T_wb_K)]]))
            y_new = fmu.getReal(self._vr_out_list)
            if np.array_equal(y_new, y):
                break
            y = y_new
        self._t0, self._k = float(start_time_s), 0
        self._initialized = True
        return y

    def step(self, heat_w: np.ndarray, T_wb_K: float) -> np.ndarray:
        """Advance exactly one communication step with the step-average heat held constant.

        Parameters
        ----------
        heat_w : ndarray, shape (n_cdu,)
            Average heat into each CDU over this step [W], >= 0.
        T_wb_K : float
            Wet-bulb temperature over this step [K].

        Returns
        -------
        ndarray, shape (n_outputs,)
            Outputs at the end of the step (a new array; columns as :attr:`output_names`).

        Raises
        ------
        RuntimeError
            If not initialized.
        ValueError
            If ``heat_w`` has the wrong shape or negative / non-finite values, or ``T_wb_K`` is out of range.
        cooling_fmu.adapter.FMUError
            If an FMI call fails.
        """
        if not self._initialized:
            raise RuntimeError("CoolingPlant.step() before initialize()")
        u = self._u
        n = self.n_cdu
        if getattr(heat_w, "shape", None) != (n,):
            raise ValueError(f"heat_w must have shape ({n},), got {np.shape(heat_w)}")
        u[:n] = heat_w
        u[n] = T_wb_K
        lo = u[:n].min()
        if not (lo >= 0.0 and 150.0 < u[n] < 400.0 and lo + u.sum() < math.inf):
            self._check_inputs(u[:n].copy(), u[n:].copy())
            raise ValueError("heat_w must be finite and >= 0")  # pragma: no cover - inf sum only
        raw, comp, fmu = self._fmu.raw, self._fmu.component, self._fmu
        st = raw.fmi2SetReal(comp, self._a_vr_in, self._n_in, self._a_u)
        if st:
            fmu.check_raw("fmi2SetReal", st)
        t = self._t0 + self._k * self.step_s
        st = raw.fmi2DoStep(comp, t, self.step_s, 1)
        if st:
            fmu.time_s = t
            fmu.last_inputs = dict(zip(self._vr_in_list, u.tolist()))
            fmu.check_raw("fmi2DoStep", st)
        self._k += 1
        st = raw.fmi2GetReal(comp, self._a_vr_out, self._n_out, self._a_y)
        if st:
            fmu.check_raw("fmi2GetReal", st)
        return self._y.copy()

    def run(self, heat_w: np.ndarray, T_wb_K: np.ndarray) -> np.ndarray:
        """Advance ``n_steps`` communication steps (the hot path: three C calls per step, no allocation).

        Parameters
        ----------
        heat_w : ndarray, shape (n_steps, n_cdu)
            Average heat into each CDU over each step [W], >= 0.
        T_wb_K : ndarray, shape (n_steps,)
            Wet-bulb temperature over each step [K].

        Returns
        -------
        ndarray, shape (n_steps, n_outputs)
            Outputs at the end of each step.

        Raises
        ------
        RuntimeError
            If not initialized.
        ValueError
            If shapes disagree or values are out of range.
        cooling_fmu.adapter.FMUError
            If an FMI call fails (the message gives the time and the inputs of the failing step).
        """
        if not self._initialized:
            raise RuntimeError("CoolingPlant.run() before initialize()")
        q = np.asarray(heat_w, dtype=float)
        tw = np.asarray(T_wb_K, dtype=float)
        if q.ndim != 2 or q.shape[1] != self.n_cdu or tw.shape != (q.shape[0],):
            raise ValueError(
                f"need heat_w shape (n_steps, {self.n_cdu}) and T_wb_K shape (n_steps,), got {q.shape}, {tw.shape}"
            )
        self._check_inputs(q, tw)
        n_steps = q.shape[0]
        u = np.empty((n_steps, self.n_cdu + 1))
        u[:, : self.n_cdu] = q
        u[:, self.n_cdu] = tw
        out = np.empty((n_steps, self._n_out))
        raw, comp, fmu = self._fmu.raw, self._fmu.component, self._fmu
        set_real, do_step, get_real = raw.fmi2SetReal, raw.fmi2DoStep, raw.fmi2GetReal
        a_vr_in, a_vr_out, n_in, n_out = self._a_vr_in, self._a_vr_out, self._n_in, self._n_out
        a_u, a_out = u.ctypes.data, out.ctypes.data
        su, so = u.strides[0], out.strides[0]
        h, t0, k0 = self.step_s, self._t0, self._k
        for j in range(n_steps):
            st = set_real(comp, a_vr_in, n_in, a_u + j * su)
            st |= do_step(comp, t0 + (k0 + j) * h, h, 1) << 3
            st |= get_real(comp, a_vr_out, n_out, a_out + j * so) << 6
            if st:
                self._k = k0 + j
                fmu.time_s = t0 + (k0 + j) * h
                fmu.last_inputs = dict(zip(self._vr_in_list, u[j].tolist()))
                for shift, name in ((0, "fmi2SetReal"), (3, "fmi2DoStep"), (6, "fmi2GetReal")):
                    fmu.check_raw(name, (st >> shift) & 7)
        self._k = k0 + n_steps
        return out

    def reset(self) -> None:
        """Return the FMU to its instantiated state (``fmi2Reset``); call :meth:`initialize` again before stepping.

        Raises
        ------
        cooling_fmu.adapter.FMUError
            If ``fmi2Reset`` fails.
        """
        self._require_open()
        self._fmu.reset()
        self._initialized = False
        self._k, self._t0 = 0, 0.0

    def close(self) -> None:
        """Terminate and free the FMU instance and delete its extracted files (idempotent)."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._initialized:
                self._fmu.terminate()
        finally:
            self._fmu.freeInstance()

    def __enter__(self) -> CoolingPlant:
        """Return self (context manager).

        Returns
        -------
        CoolingPlant
            This plant.
        """
        return self

    def __exit__(self, *exc) -> None:
        """Close the plant (context manager).

        Parameters
        ----------
        *exc : object
            Exception information (ignored).
        """
        self.close()
