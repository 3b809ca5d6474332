"""What a facility simulation may know about a cooling plant: the :class:`Plant` protocol and its conventions.

The simulation (:mod:`scheduler_sim.kernel.simulation`) talks to a plant only through this module: the protocol's
methods, the typed failure :class:`PlantError` (which carries the outputs of the steps completed before it), the
naming of per-CDU outputs (``name[i]``, 1-based), the exact step averages of power outputs the plant integrates
into running totals (:class:`StepAverager`), and the CDU supply-temperature rise per watt of heat
(:func:`supply_rise_K_per_W`).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

__all__ = ["Plant", "PlantError", "HeldStepPlant", "AdaptiveStepper", "STEPPING", "StepAverager", "AVERAGED_BY_TOTAL",
           "average_pairs", "WATER_CP_J_PER_KG_K", "cdu_series_name", "group_cdu_columns", "supply_rise_K_per_W",
           "CDU_SUPPLY_T", "cdu_supply_columns", "validity_warnings", "wet_bulb_switches_k"]

#: Per-CDU output holding the CDU's secondary (rack-side) supply temperature [K].
CDU_SUPPLY_T = "T_sec_sup"

#: Specific heat of liquid water [J/(kg K)] used for the CDU secondary loop's temperature rise (4.186 kJ/(kg K),
#: the handbook value near 15-20 degC; IAPWS-95 gives 4.18-4.19 kJ/(kg K) over 10-45 degC).
WATER_CP_J_PER_KG_K = 4186.0

#: Plant power (or flow) outputs sampled at the end of a step -> the running total the plant integrates them into.
#: Where a plant has both, the step average is exact: ``P_avg = (E(t_k+1) - E(t_k)) / step``. Per-CDU outputs
#: ``P[i]`` pair with ``E[i]`` element by element (``P_pump_sec[3]`` -> ``E_pump_sec_out[3]``).
AVERAGED_BY_TOTAL = {"P_cooling": "E_cooling_out", "Q_flow_tower": "E_tower_out", "Q_flow_chiller": "E_chiller_out",
                     "P_fan_tower": "E_fan_out", "m_flow_makeup": "M_makeup_out", "P_pump_fac": "E_pump_fac_out",
                     "P_pump_tower": "E_pump_tower_out", "P_chiller": "E_chiller_elec_out",
                     "P_pump_sec": "E_pump_sec_out", "Q_flow_pump_heat": "E_pump_heat_out"}


def average_pairs(names: list[str]) -> list[tuple[str, int, str, int]]:
    """(output name, its index, total name, its index) for each output whose running total exists.

    Plant-level outputs pair by name (``P_pump_fac`` -> ``E_pump_fac_out``); per-CDU outputs pair element by element
    (``P_pump_sec[3]`` -> ``E_pump_sec_out[3]``).
    """
    index = {n: i for i, n in enumerate(names)}
    pairs = []
    for n, i in index.items():
        base, _, rest = n.partition("[")
        total = AVERAGED_BY_TOTAL.get(base)
        if total is None:
            continue
        e = total + ("[" + rest if rest else "")
        if e in index:
            pairs.append((n, i, e, index[e]))
    return pairs


class PlantError(RuntimeError):
    """A plant failed during :meth:`Plant.run`; the steps completed before the failure are kept.

    Parameters
    ----------
    message : str
        What failed (function, time, status).
    completed_outputs : np.ndarray | None
        Shape (k, n_outputs): SI outputs of the ``k`` steps completed in the failing call (columns as
        ``Plant.output_names``); ``k`` may be 0. Default (None): none completed.

    Attributes
    ----------
    completed_outputs : ndarray, shape (k, n_outputs)
        As given (an empty ``(0, 0)`` array when none).
    """

    def __init__(self, message: str, completed_outputs: np.ndarray | None = None) -> None:
        super().__init__(message)
        self.completed_outputs = (np.zeros((0, 0)) if completed_outputs is None
                                  else np.asarray(completed_outputs, dtype=float))


@runtime_checkable
class Plant(Protocol):
    """A cooling plant stepped at a fixed communication step (e.g. :class:`cooling_fmu.plant.CoolingPlant`).

    Attributes
    ----------
    output_names : list of str
        Names of the output columns; per-CDU outputs are ``name[i]`` (``i`` = 1 .. n_cdu).
    output_units : list of str
        SI unit of each output.
    P_cooling_index : int
        Column of the plant's electrical power ``P_cooling`` [W].

    Notes
    -----
    A plant with a true attribute ``uses_dry_bulb`` also takes the outdoor dry-bulb as the keyword ``T_db_K`` of
    :meth:`initialize` (float) and :meth:`run` (shape (m,)) [K]; one with ``uses_air_side_heat`` the heat of the air
    side into its tower water as ``Q_air_side_W`` [W]. The simulator passes them only to such a plant.
    """

    output_names: list[str]
    output_units: list[str]
    P_cooling_index: int

    def initialize(self, heat_w: np.ndarray, T_wb_K: float) -> np.ndarray:
        """Initialise at the first step's inputs; return the outputs at time 0, shape (n_outputs,)."""

    def run(self, heat_w: np.ndarray, T_wb_K: np.ndarray) -> np.ndarray:
        """Advance one step per row: heat per CDU [W] shape (m, n_cdu), wet-bulb [K] shape (m,).

        Returns the SI outputs at the end of each step, shape (m, n_outputs). Raises :class:`PlantError` when a
        step fails, carrying the outputs of the steps completed before it.
        """


@runtime_checkable
class HeldStepPlant(Plant, Protocol):
    """A :class:`Plant` that can also advance several communication steps in ONE internal step, inputs held.

    Attributes
    ----------
    max_held_steps : int
        Most communication steps one :meth:`advance_held` call may cover (the plant's own stability / accuracy
        limit divided by its step; 1 when it cannot take longer steps).
    """

    max_held_steps: int

    def advance_held(self, heat_w: np.ndarray, T_wb_K: float, n_steps: int) -> np.ndarray:
        """Advance ``n_steps`` communication steps as one step of ``n_steps * step_s`` with the inputs held.

        ``heat_w`` has shape (n_cdu,) [W]; returns the SI outputs at the end, shape (n_outputs,). Raises
        :class:`PlantError` (no completed steps) when the step fails.
        """


#: Plant stepping schemes of a run (``cooling.stepping``): ``"fixed"`` calls the plant once per communication
#: step; ``"adaptive"`` wraps it in :class:`AdaptiveStepper`.
STEPPING = ("adaptive", "fixed")


def wet_bulb_switches_k(plant: object) -> tuple[float, ...]:
    """Wet-bulbs at which a generated plant's equations jump: the trim chiller's economiser switch-over
    (``T_wb > T_wb_switch``, :mod:`cooling_fmu.modelica`), where the chiller's whole load starts or stops at once.

    Parameters
    ----------
    plant : object
        A plant (wrappers forward ``own_model`` and ``params``); a site FMU (``own_model`` False) or a plant
        without parameters has none known.

    Returns
    -------
    tuple of float
        The switch wet-bulbs [K], possibly empty.
    """
    if not getattr(plant, "own_model", False):
        return ()
    chiller = getattr(getattr(plant, "params", None), "chiller", None)
    if chiller is None or not chiller.enabled:
        return ()
    return (float(chiller.T_wb_switch_K),)


class AdaptiveStepper:
    """Step a plant on its fixed output grid, but with longer internal steps while the heat input is constant.

    Between scheduler events the heat per CDU is constant (the kernel hands over runs of identical rows). After
    every change the plant is stepped ``n_fine`` times at the communication step; then each call of
    :meth:`HeldStepPlant.advance_held` covers ``growth`` times more steps than the last, up to the plant's
    ``max_held_steps`` (for :class:`cooling_fmu.plant.CoolingPlant`: 10 Heun sub-steps of
    :func:`cooling_fmu.plant.max_stable_step_s`) and never
    beyond the constant run. The wet-bulb input of a long step is the mean of its steps' wet-bulbs (the exact
    average of the piecewise-linear weather over the step, since every step has the same length). A run also ends
    where the wet-bulb crosses a switch of the plant's equations (:func:`wet_bulb_switches_k`, the trim chiller's
    economiser switch-over), so no long step averages the wet-bulb across it.

    The run's output grid does not change: the steps inside a long step get every output linearly interpolated
    between its start and end values. The running energy totals ``E_*_out`` are therefore linear inside it, so
    the step averages of :class:`StepAverager` are the long step's exact average power on each of its steps and
    every energy total (hence cooling energy, PUE) is exactly what the plant integrated.

    The run caps long steps at ``cooling.max_step_s`` (default 240 s). Accuracy (docs/cooling.md,
    ``benchmarks/bench_plant_stepping.py``; tested in ``tests/integration/test_adaptive_stepping.py``): on a week
    of the main job's load the relative error in
    cooling energy against a 0.25 s fixed-step reference is 5.3e-6 (240 s cap) and 1.6e-6 (60 s cap).

    Parameters
    ----------
    plant : Plant
        The plant (a :class:`HeldStepPlant` for long steps). A plant without ``advance_held`` (or with
        ``max_held_steps`` <= 1) is stepped one step at a time: the wrapper then changes nothing.
    n_fine : int
        Communication steps taken one by one after each change of the heat input (default 4, >= 1).
    growth : int
        Factor by which each long step exceeds the previous one (default 2, >= 2).
    max_held : int | None
        Cap on the steps per long step, below the plant's ``max_held_steps`` (default None: the plant's limit).

    Attributes
    ----------
    plant : Plant
        The wrapped plant; other attributes (``params``, ``fmu_path``, ``close`` ...) are forwarded to it.
    max_held : int
        Steps per long step at most (1 = fixed stepping).
    calls : int
        Plant step calls made so far (one per fine step, one per long step): the work done.
    steps : int
        Communication steps advanced so far.

    Raises
    ------
    ValueError
        If ``n_fine`` < 1 or ``growth`` < 2.
    """

    def __init__(self, plant: Plant, n_fine: int = 4, growth: int = 2, max_held: int | None = None) -> None:
        if int(n_fine) < 1 or int(growth) < 2:
            raise ValueError(f"n_fine must be >= 1 and growth >= 2, got {n_fine}, {growth}")
        self.plant = plant
        self.n_fine, self.growth = int(n_fine), int(growth)
        held = getattr(plant, "advance_held", None)
        self.max_held = max(1, int(getattr(plant, "max_held_steps", 1))) if held is not None else 1
        if max_held is not None:
            self.max_held = max(1, min(self.max_held, int(max_held)))
        self.output_names = list(plant.output_names)
        self.output_units = list(plant.output_units)
        self.P_cooling_index = plant.P_cooling_index
        self.calls = 0
        self.steps = 0
        self._last_heat: np.ndarray | None = None  # the run key of the last row (heat, sides of the switches)
        self._switches = np.asarray(wet_bulb_switches_k(plant), dtype=float)
        #: a supervisory stager's sampling period in steps (cooling_fmu.supervisory.StagedPlant.sample_steps); long
        #: steps end on its sample instants, so it decides at the instants and on the outputs of a fixed step
        self._every = max(0, int(getattr(plant, "sample_steps", 0) or 0))
        self._since_change = 0
        self._held = 1
        self._y: np.ndarray | None = None

    def __getattr__(self, name: str):
        """Forward any other attribute to the wrapped plant (``params``, ``fmu_path``, ``close`` ...)."""
        if name == "plant":  # not yet set (during unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.plant, name)

    def initialize(self, heat_w: np.ndarray, T_wb_K: float, **kw) -> np.ndarray:
        """Initialise the wrapped plant (:meth:`Plant.initialize`, ``T_db_K`` passed on); return its outputs at time 0,
        shape (n_outputs,).
        """
        y = np.asarray(self.plant.initialize(heat_w, T_wb_K, **kw), dtype=float)
        self._y = y.copy()
        self._last_heat = None
        return y

    def run(self, heat_w: np.ndarray, T_wb_K: np.ndarray, **rows: np.ndarray | None) -> np.ndarray:
        """Advance one communication step per row, as :meth:`Plant.run`, with long steps inside constant runs.

        Parameters
        ----------
        heat_w : np.ndarray
            Average heat per CDU of each step [W], shape (m, n_cdu).
        T_wb_K : np.ndarray
            Wet-bulb of each step [K], shape (m,).
        **rows : np.ndarray | None
            Further per-step inputs of the plant (``T_db_K`` [K], ``Q_air_side_W`` [W]), shape (m,), passed on
            (their mean over a held long step).

        Returns
        -------
        ndarray, shape (m, n_outputs)
            SI outputs at the end of each step (interpolated inside a long step).

        Raises
        ------
        PlantError
            If the plant fails; ``completed_outputs`` holds the steps of this call completed before the failure.
        RuntimeError
            If called before :meth:`initialize`.
        """
        if self._y is None:
            raise RuntimeError("AdaptiveStepper.run() before initialize()")
        q = np.asarray(heat_w, dtype=float)
        tw = np.asarray(T_wb_K, dtype=float)
        m = q.shape[0]
        extra = {k: np.asarray(v, dtype=float) for k, v in rows.items() if v is not None}

        def db(a, b):  # the further per-step inputs of rows a..b
            return {k: v[a:b] for k, v in extra.items()}

        if self.max_held <= 1:
            out = self.plant.run(q, tw, **db(0, m))
            self.calls += m
            self.steps += m
            self._y = np.array(out[-1], dtype=float) if m else self._y
            return out
        out = np.empty((m, len(self.output_names)))
        pos = [0]  # steps of this call completed (kept by _run_long as it goes)
        block = getattr(self.plant, "run_block", None)  # a guarded FMU plant: the whole block on its step worker
        try:
            if block is not None:
                block(self._run_long, q, tw, extra, out, pos)
            else:
                self._run_long(q, tw, extra, out, pos)
        except PlantError as exc:
            done, i = exc.completed_outputs, pos[0]
            # the same error (function, time, FMU log kept), with every step of THIS call completed before it
            done = np.zeros((0, out.shape[1])) if done is None else done
            exc.completed_outputs = out[:i].copy() if done.size == 0 else np.concatenate([out[:i], done], axis=0)
            if hasattr(exc, "completed_steps"):
                exc.completed_steps = int(exc.completed_outputs.shape[0])
            raise
        return out

    def _run_long(self, q: np.ndarray, tw: np.ndarray, extra: dict, out: np.ndarray, pos: list) -> None:
        """:meth:`run` with long steps (fine steps after each change, then growing held steps) into ``out``."""

        def db(a, b):  # the further per-step inputs of rows a..b
            return {k: v[a:b] for k, v in extra.items()}

        if getattr(self.plant, "held_sequence_available", False):  # every plant step of this call in one call
            self._run_sequence(q, tw, extra, out, pos)
            return
        key, bounds = self._runs(q, tw)
        for a, b in zip(bounds[:-1], bounds[1:]):
            h = q[a]
            if self._last_heat is None or not np.array_equal(key[a], self._last_heat):
                self._last_heat = key[a].copy()
                self._since_change, self._held = 0, 1
            i = pos[0] = a
            while i < b:
                if self._since_change < self.n_fine:  # fine steps after a change, in one plant call
                    n = min(self.n_fine - self._since_change, b - i)
                    out[i:i + n] = self.plant.run(q[i:i + n], tw[i:i + n], **db(i, i + n))
                    self.calls += n
                    self._since_change += n
                else:
                    n = min(self._held, b - i, self._to_sample(0))
                    if n == 1:
                        out[i] = self.plant.run(q[i:i + 1], tw[i:i + 1], **db(i, i + 1))[0]
                    else:
                        kw = {k: float(v[i:i + n].mean()) for k, v in extra.items()}
                        y1 = np.asarray(self.plant.advance_held(h, float(tw[i:i + n].mean()), n, **kw),
                                        dtype=float)
                        frac = (np.arange(1, n + 1) / n)[:, None]
                        out[i:i + n] = self._y + (y1 - self._y) * frac
                        out[i + n - 1] = y1  # the end of the long step exactly
                    self.calls += 1
                    self._held = min(self._held * self.growth, self.max_held)
                i += n
                pos[0] = i
                self.steps += n
                self._y = out[i - 1].copy()

    def _run_sequence(self, q: np.ndarray, tw: np.ndarray, extra: dict, out: np.ndarray, pos: list) -> None:
        """:meth:`_run_long`'s steps in ONE plant call (``advance_held_sequence``, :class:`cooling_fmu.supervisory.
        StagedPlant` over the generated FMU): issue 26 item 2.

        The plan is the one the step-by-step loop follows, worked out first (it never depends on the outputs):
        per run of identical rows, after a change ``n_fine`` steps of one step each, then long steps of ``_held``
        steps, times ``growth``, capped at ``max_held`` and at the run. A long step of one step is the plain step
        (the same FMU calls, inputs and stager updates), each long step's inputs are the means of its rows, so
        every output is bit-identical to one plant call per fine block and per long step
        (``tests/unit/test_adaptive_sequence.py``), with a few microseconds of Python per step of the plan
        instead of some hundred. On a failure ``out`` holds the steps completed and ``pos[0]`` their count.
        """
        m = q.shape[0]
        key, bounds = self._runs(q, tw)
        bounds = bounds.tolist()
        ns: list[int] = []
        for a, b in zip(bounds[:-1], bounds[1:]):
            if self._last_heat is None or not np.array_equal(key[a], self._last_heat):
                self._last_heat = key[a].copy()
                self._since_change, self._held = 0, 1
            i = a
            while i < b:
                if self._since_change < self.n_fine:  # a fine step
                    n = 1
                    self._since_change += 1
                else:
                    n = min(self._held, b - i, self._to_sample(i))
                    self._held = min(self._held * self.growth, self.max_held)
                ns.append(n)
                i += n
        n_arr = np.array(ns, dtype=np.int64)
        first_arr = np.cumsum(n_arr) - n_arr  # first row of each step of the plan
        first = first_arr.tolist()
        # the long steps of the plan (the fine ones, most of them, take their row as it is)
        longs = [(i, first[i], n) for i, n in enumerate(ns) if n > 1]

        def means(v: np.ndarray) -> np.ndarray:
            # a fine step's input: its row; a long step's: the mean of its rows, as ndarray.mean computes it (the
            # same pairwise sum, then one division by the count), without its per-call bookkeeping
            r = v[first_arr]
            for i, a, n in longs:
                r[i] = float(v[a:a + n].sum()) / n
            return r

        kw = {k: means(v) for k, v in extra.items()}
        try:
            Y = np.asarray(self.plant.advance_held_sequence(q[first], means(tw), n_arr, **kw), dtype=float)
        except PlantError as exc:
            Y = np.asarray(getattr(exc, "held_outputs", np.zeros((0, out.shape[1]))), dtype=float)
            self._fill_held(Y, n_arr[:Y.shape[0]], out, 0)
            pos[0] = int(n_arr[:Y.shape[0]].sum())
            raise
        self._fill_held(Y, n_arr, out, 0)
        pos[0] = m

    def _to_sample(self, ahead: int) -> int:
        """Steps to the stager's next sample instant from ``ahead`` steps after the stager's count of steps taken
        (``steps_done``); no bound without a stager. A long step thus never spans a sample: a 240 s long step
        under a 60 s stager is four of 60 s (the same Heun sub-steps), and the stager decides at the instants, and
        on the outputs, of a fixed step.
        """
        if not self._every:
            return self.max_held
        return self._every - (int(self.plant.steps_done) + ahead) % self._every

    def _runs(self, q: np.ndarray, tw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The run key of each row (:meth:`_run_key`) and the bounds of its runs of identical keys, ``[0, starts...,
        m]`` (the kernel hands over broadcast blocks: usually a single run); for both plan paths.
        """
        m = q.shape[0]
        key = self._run_key(q, tw)
        starts = np.flatnonzero(np.any(key[1:] != key[:-1], axis=1)) + 1 if m > 1 else np.empty(0, dtype=np.intp)
        return key, np.concatenate(([0], starts, [m]))

    def _run_key(self, q: np.ndarray, tw: np.ndarray) -> np.ndarray:
        """What a run of rows held in one long step must share: the heat per CDU and, for each wet-bulb at which
        the plant's equations switch (:func:`wet_bulb_switches_k`), the side of it the wet-bulb is on. A long
        step then never straddles a switch (its mean wet-bulb is on the side of all its rows), and a crossing
        restarts the fine steps, as a change of the heat does: the switch falls on the step it falls on at a
        fixed step.
        """
        if not self._switches.size:
            return q
        return np.concatenate([q, (tw[:, None] > self._switches[None, :]).astype(float)], axis=1)

    def _fill_held(self, Y: np.ndarray, n_arr: np.ndarray, out: np.ndarray, i: int) -> None:
        """Rows of the long steps ending in ``Y`` (their sizes ``n_arr``, from row ``i``), interpolated linearly
        from the outputs before each (the arithmetic of :meth:`_run_long`, element by element); counters kept.
        """
        k = Y.shape[0]
        if k == 0:
            return
        total = int(n_arr.sum())
        Y0 = np.concatenate([self._y[None, :], Y[:-1]])
        rep = np.repeat(np.arange(k), n_arr)
        jj = np.arange(1, total + 1) - np.repeat(np.cumsum(n_arr) - n_arr, n_arr)  # 1 .. n within each long step
        frac = (jj / n_arr[rep])[:, None]
        y0 = Y0[rep]
        out[i:i + total] = y0 + (Y[rep] - y0) * frac
        out[i + np.cumsum(n_arr) - 1] = Y  # each long step's end exactly (a 1-step one: the plain step's outputs)
        self.calls += k
        self.steps += total
        self._y = Y[-1].copy()


def cdu_series_name(name: str) -> str | None:
    """Series name of a per-CDU output (``'T_sec_sup[3]'`` -> ``'T_sec_sup'``); None for a plant-level output."""
    return name.split("[", 1)[0] if name.endswith("]") and "[" in name else None


def group_cdu_columns(names: list[str]) -> dict[str, list[int]]:
    """Columns of each per-CDU series, in CDU order (``{'T_sec_sup': [col of [1], col of [2], ...]}``)."""
    groups: dict[str, list[tuple[int, int]]] = {}
    for i, nm in enumerate(names):
        base = cdu_series_name(nm)
        if base is not None:
            idx = int(nm[nm.index("[") + 1:-1])
            groups.setdefault(base, []).append((idx, i))
    return {b: [i for _, i in sorted(v)] for b, v in groups.items()}


def cdu_supply_columns(names: list[str], n_cdus: int) -> np.ndarray | None:
    """Columns of the per-CDU secondary supply temperature (:data:`CDU_SUPPLY_T`) in CDU order.

    Parameters
    ----------
    names : list[str]
        The plant's output names.
    n_cdus : int
        CDUs of the system.

    Returns
    -------
    ndarray of int or None
        ``n_cdus`` column indices; None when the plant has no such output for every CDU.
    """
    idx = group_cdu_columns(list(names)).get(CDU_SUPPLY_T)
    return np.array(idx) if idx and len(idx) == n_cdus else None


def validity_warnings(facility: dict[str, np.ndarray]) -> list[str]:
    """Warnings for interval series outside the plant model's validity.

    Facility supply water below 2 degC (``T_fac_sup`` [K]; the tower bypass holds the tower leaving water at or above
    ``tower.T_leaving_min_K`` > 0 degC, so this only happens when the plant starts colder than that) and
    negative tower make-up water (``m_flow_makeup`` [kg/s]; the towers were heating colder water).

    Parameters
    ----------
    facility : dict[str, np.ndarray]
        Shape (n_intervals,) each: interval-average facility series (the plant's outputs among them).

    Returns
    -------
    list of str
        One message per condition met (empty when none, or when the plant has no such output).
    """
    warnings = []
    if "T_fac_sup" in facility and len(facility["T_fac_sup"]):
        cold = facility["T_fac_sup"] < 275.15
        if cold.any():
            warnings.append(f"facility supply water below 2 degC in {int(cold.sum())} output interval(s) (min "
                            f"{facility['T_fac_sup'].min() - 273.15:.1f} degC): colder than the tower bypass holds "
                            f"the loop, so results there are outside the plant model's validity")
    if "m_flow_makeup" in facility and len(facility["m_flow_makeup"]) and facility["m_flow_makeup"].min() < 0:
        warnings.append(f"negative tower make-up water in {int((facility['m_flow_makeup'] < 0).sum())} interval(s):"
                        f" the towers were adding heat to colder water (outside the model's validity)")
    return warnings


def supply_rise_K_per_W(plant: Plant) -> float | None:
    """CDU secondary supply-temperature rise per watt of added heat [K/W]: ``1 / (m_flow_sec_nominal * cp)``.

    Parameters
    ----------
    plant : Plant
        A plant with a plant description (``plant.params.cdu.m_flow_sec_nominal_kg_s`` [kg/s]).

    Returns
    -------
    float or None
        None when the plant has no such description (e.g. a test double).
    """
    cdu_params = getattr(getattr(plant, "params", None), "cdu", None)
    if cdu_params is None or not hasattr(cdu_params, "m_flow_sec_nominal_kg_s"):
        return None
    return 1.0 / (cdu_params.m_flow_sec_nominal_kg_s * WATER_CP_J_PER_KG_K)


class StepAverager:
    """Turns power outputs sampled at step ends into exact step averages from the plant's running totals.

    Parameters
    ----------
    output_names : list[str]
        The plant's output columns.
    step_s : float
        Communication step [s].

    Attributes
    ----------
    pairs : list of (str, int, str, int)
        (output, its column, running total, its column), from :func:`average_pairs`.
    last_totals : dict of str -> float
        Each running total at the end of the last step seen [J for energies].
    """

    def __init__(self, output_names: list[str], step_s: float) -> None:
        self.step_s = float(step_s)
        self.pairs = average_pairs(list(output_names))
        self._ip = np.array([ip for _, ip, _, _ in self.pairs], dtype=np.intp)
        self._ie = np.array([ie for _, _, _, ie in self.pairs], dtype=np.intp)
        self._last = np.zeros(len(self.pairs))

    @property
    def last_totals(self) -> dict[str, float]:
        """Each running total at the end of the last step seen, by total name."""
        return {e: float(v) for (_, _, e, _), v in zip(self.pairs, self._last)}

    def start(self, initial: np.ndarray) -> None:
        """Take the running totals at time 0 from the outputs of :meth:`Plant.initialize`."""
        self._last = np.array([float(initial[ie]) for _, _, _, ie in self.pairs], dtype=float)

    def apply(self, out: np.ndarray) -> None:
        """Replace the sampled powers of ``out`` (shape (m, n_outputs), consecutive steps) by step averages, in place.

        All pairs at once: ``P_avg[k] = (E[k] - E[k-1]) / step`` with ``E[-1]`` the last total of the previous call;
        elementwise the same arithmetic as one pair at a time, so bit-identical to it (issue #16).
        """
        if not self.pairs or out.shape[0] == 0:
            return
        tot = out[:, self._ie]
        prev = np.empty_like(tot)
        prev[0] = self._last
        prev[1:] = tot[:-1]
        out[:, self._ip] = (tot - prev) / self.step_s
        self._last = tot[-1].copy()
