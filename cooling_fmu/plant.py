"""``CoolingPlant``: the snake_case facade the scheduler steps once per cooling communication step.

The plant is a Modelica model generated from a :class:`~cooling_fmu.params.PlantParams`, compiled to an FMI 2.0
FMU on first use (cached by content hash) and stepped with a fixed communication step; or a site's own FMU with a
variable map (``maps/*.yaml``). Coupling rules (docs/cooling.md):

* the input of each step is the exact step-average heat per CDU, held constant over the step (zero-order hold),
  and the wet-bulb temperature for that step;
* outputs are the values at the end of each step (running totals ``E_*_out`` give exact step averages);
* the plant starts at the steady state of the first step's load and wet-bulb unless asked otherwise;
* if the FMU fails a step, :meth:`CoolingPlant.run` raises :class:`PlantStepError` (an
  :class:`~cooling_fmu.adapter.FMUError`) carrying the function, time, inputs and FMU log of the failing step and
  the outputs of every step completed before it, so the caller can keep its partial results.
"""

from __future__ import annotations

from collections.abc import Callable

import hashlib
import json
import math
from functools import lru_cache
from pathlib import Path

import numpy as np

from jobs.cachedirs import sha256_bytes, verified_copy

from . import modelica as _modelica
from .adapter import FMUError, VariableMap, load_variable_map, open_fmu
from .build import default_cache_dir, fetch_fmu_bytes
from .coupling import PlantError
from .modelica import analytic_steady_state, generate_plant_modelica, model_name_for, plant_equations
from .params import PlantParams, load_plant_params
from .stepping import FMUStepper

__all__ = ["CoolingPlant", "advance_held_sequence", "PlantIO", "SUBSTEP_ACCURACY", "PlantStepError", "max_stable_step_s",
           "plant_cache_path", "plant_hash"]

#: Largest ``|h lambda|`` allowed for one Heun sub-step ``h`` of the generated FMU (accuracy; stability,
#: ``|1 + z + z^2 / 2| < 1`` with ``z = h lambda``, is checked as well). See :func:`cooling_fmu.build.install_integrator`.
SUBSTEP_ACCURACY = 0.5
#: Most Heun sub-steps one held long step (:meth:`CoolingPlant.advance_held`) may span: the span rumoca's
#: 10 forward-Euler sub-steps allowed before, so :class:`cooling_fmu.coupling.AdaptiveStepper`'s caps keep meaning.
HELD_SUBSTEPS = 10
#: Optional plant inputs after ``T_wb``, in this order (plant v5): outdoor dry-bulb, air-side heat into the towers.
OPTIONAL_INPUTS = ("T_db", "Q_flow_air_side")
#: The optional-input lists a map may have (an ordered subset of :data:`OPTIONAL_INPUTS`).
OPTIONAL_INPUT_SETS = (["T_db"], ["Q_flow_air_side"], ["T_db", "Q_flow_air_side"])
#: Version of the per-plant figures cached next to the FMU (bump when what is stored changes meaning).
#: 2: ``max_stable_step_s`` is the longest Heun sub-step (it was 10 forward-Euler sub-steps).
PLANT_CACHE_VERSION = "2"


class PlantStepError(FMUError, PlantError):
    """The FMU failed during :meth:`CoolingPlant.run`; the steps before the failing one are kept.

    Parameters
    ----------
    cause : FMUError
        The failing FMI call's error (its function, status, time, inputs and log are copied).
    completed_outputs : np.ndarray
        SI outputs of the steps completed in this call before the failure, shape (k, n_outputs).
    output_names : list[str]
        Column names of ``completed_outputs``.

    Attributes
    ----------
    completed_outputs : ndarray, shape (k, n_outputs)
        SI outputs of the ``k`` steps completed in this call before the failure (columns as ``output_names``).
    completed_steps : int
        ``k``.
    output_names : list of str
        Column names of ``completed_outputs``.
    function, status, time_s, inputs, log
        As :class:`~cooling_fmu.adapter.FMUError`, for the failing step (inputs in the FMU's units).
    """

    def __init__(self, cause: FMUError, completed_outputs: np.ndarray, output_names: list[str]):
        super().__init__(cause.function, cause.status, cause.time_s, cause.inputs, cause.log)
        self.completed_outputs = completed_outputs
        self.completed_steps = int(completed_outputs.shape[0])
        self.output_names = list(output_names)
        self.args = (f"{self.args[0]} [after {self.completed_steps} completed steps of this call]",)


def _reduced(params: PlantParams, n_red: int) -> PlantParams:
    """The same plant with ``n_red`` CDUs and facility volumes scaled so uniform loading is equivalent."""
    k = n_red / params.n_cdu
    fac = params.facility.model_copy(update={"m_water_sup_kg": params.facility.m_water_sup_kg * k,
                                             "m_water_ret_kg": params.facility.m_water_ret_kg * k})
    return params.model_copy(update={"n_cdu": n_red, "facility": fac})


@lru_cache(maxsize=32)
def _eigenvalues(params: PlantParams) -> np.ndarray:
    """Eigenvalues [1/s] of the linearised plant at 9 operating points (loads 0, 0.5, 1; wet-bulb -5, 15, 25 C)."""
    p = _reduced(params, min(params.n_cdu, 2))
    lams = []
    for load in (0.0, 0.5, 1.0):
        for T_wb in (268.15, 288.15, 298.15):
            q = np.full(p.n_cdu, load * p.cdu.Q_flow_nominal_W)
            x0 = analytic_steady_state(p, q, T_wb)["x"]
            J = np.empty((x0.size, x0.size))
            for j in range(x0.size):
                d = 1e-6 * max(1.0, abs(x0[j]))
                xp, xm = x0.copy(), x0.copy()
                xp[j] += d
                xm[j] -= d
                J[:, j] = (plant_equations(p, xp, q, T_wb)["der"] - plant_equations(p, xm, q, T_wb)["der"]) / (2 * d)
            lams.append(np.linalg.eigvals(J))
    return np.concatenate(lams)


def plant_hash(params: PlantParams) -> str:
    """Content hash of everything a per-plant computation depends on.

    Parameters
    ----------
    params : PlantParams
        Plant description.

    Returns
    -------
    str
        Hex SHA-256 of the generated Modelica source (structure and every parameter value), the source text of
        :mod:`cooling_fmu.modelica` and of the component library :mod:`cooling_fmu.components` (the numpy mirror
        built from them is what :func:`max_stable_step_s` linearises), the
        sub-step accuracy bound, :data:`PLANT_CACHE_VERSION` and the numpy version (eigenvalues come from LAPACK).
    """
    h = hashlib.sha256()
    lib = sorted((Path(_modelica.__file__).parent / "components").glob("*.py"))
    for part in (generate_plant_modelica(params), Path(_modelica.__file__).read_text(encoding="utf-8"),
                 *(f.read_text(encoding="utf-8") for f in lib), repr(SUBSTEP_ACCURACY), PLANT_CACHE_VERSION,
                 np.__version__):
        h.update(part.encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()


def _payload_digest(payload: dict) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode("utf-8")).hexdigest()


def _read_plant_cache(path: Path, key: str) -> dict | None:
    """The cached per-plant figures, or None when absent, unreadable, for another plant or altered."""
    try:
        from jobs.cachedirs import read_entry

        doc = json.loads(read_entry(path, "plant cache entry").decode("utf-8"))  # read once, checked on its descriptor
        payload = doc["payload"]
        if doc.get("key") != key or payload.get("key") != key or doc.get("sha256") != _payload_digest(payload):
            return None
        limit = float(payload["max_stable_step_s"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return payload if (math.isfinite(limit) and limit > 0) else None


def _write_plant_cache(path: Path, payload: dict) -> None:
    """Write the figures atomically (temporary file + rename); a cache that cannot be written is skipped."""
    from jobs.cachedirs import write_entry

    doc = {"key": payload["key"], "sha256": _payload_digest(payload), "payload": payload}
    try:
        write_entry(path, json.dumps(doc, indent=1).encode("utf-8"))
    except OSError:  # read-only cache folder: the figure is simply recomputed next time
        pass


def plant_cache_path(params: PlantParams, cache_dir: str | Path | None = None) -> Path:
    """Where the per-plant figures of ``params`` are cached: ``<model>-<hash16>.plant.json`` in the FMU cache."""
    return _plant_cache_path(params, plant_hash(params), cache_dir)


def _plant_cache_path(params: PlantParams, key: str, cache_dir: str | Path | None) -> Path:
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    return cache / f"{model_name_for(params)}-{key[:16]}.plant.json"


def _compute_max_stable_step_s(params: PlantParams) -> float:
    lam = _eigenvalues(params)
    lam = lam[np.abs(lam) > 1e-12]
    if np.any(lam.real > 1e-9):
        raise ValueError(
            f"plant {params.name!r}: the linearised plant is unstable at a test point (eigenvalue with real part "
            f"{float(lam.real.max()):.3g} 1/s); its controllers need retuning (e.g. tower.fan_k_p, tower.fan_Ti_s) "
            f"or its water volumes are too slow for them")
    h = SUBSTEP_ACCURACY / float(np.max(np.abs(lam)))
    # Heun's stability function bounds the step for the decaying modes; a marginal mode (real part within 1e-9 1/s of
    # zero, e.g. a water volume made so large that it never moves) cannot be damped by any step and is left out
    # (it made this loop endless: |R(h lambda)| >= 1 for every h > 0)
    dec = lam[lam.real < -1e-9]
    for _ in range(10_000):
        if not np.any(np.abs(1.0 + h * dec + 0.5 * (h * dec) ** 2) >= 1.0):
            return h
        h *= 0.9
    raise ValueError(f"plant {params.name!r}: no stable explicit step found for its linearised modes")


def max_stable_step_s(params: PlantParams, cache_dir: str | Path | None = None, *,  # noqa: DOC502
                      use_cache: bool = True) -> float:
    """Longest Heun sub-step of the generated FMU that is stable and accurate; the FMU splits every
    communication step into ``ceil(step / limit)`` equal sub-steps (:func:`cooling_fmu.build.install_integrator`).

    The plant is linearised (central differences of :func:`~cooling_fmu.modelica.plant_equations`) at 9 operating
    points; a sub-step ``h`` must give ``|1 + z + z^2 / 2| < 1`` with ``z = h lambda`` (Heun's stability function)
    and ``|h lambda| <= SUBSTEP_ACCURACY`` for every eigenvalue ``lambda``.

    The result is cached with the FMU (:func:`plant_cache_path`, a small JSON file holding the key and a SHA-256
    of its content), keyed by :func:`plant_hash`: a cached value is used only when its key is this plant's, its
    digest verifies and folder and file pass the FMU cache's trust checks (:mod:`jobs.cachedirs`: the
    user's own, not writable by others); otherwise it is recomputed (and rewritten when the folder is trusted).
    The cached float is the computed one exactly (JSON
    round-trips a float's ``repr``), so runs are identical with or without the cache.

    Parameters
    ----------
    params : PlantParams
        Plant description.
    cache_dir : str | Path | None
        Cache folder (None: :func:`cooling_fmu.build.default_cache_dir`, the FMU cache).
    use_cache : bool
        False computes the limit without reading or writing the cache.

    Returns
    -------
    float
        The limit [s].

    Raises
    ------
    ValueError
        If the linearised plant is unstable at one of the points (a controller loop that oscillates; raised by
        ``_compute_max_stable_step_s``).
    """
    if not use_cache:
        return _compute_max_stable_step_s(params)
    from jobs.cachedirs import CacheTrustError, private_dir

    full = plant_hash(params)
    path = _plant_cache_path(params, full, cache_dir)
    try:  # the same trust rules as the FMU beside it: a private folder on its whole path, an entry of this user
        path = private_dir(path.parent, "FMU cache folder") / path.name
    except CacheTrustError as exc:  # unverifiable: not used (the figure is computed), and said so
        import logging

        logging.getLogger("hpctwin.files").warning("warning: plant figure cache not used: %s", exc)
        return _compute_max_stable_step_s(params)
    except OSError:
        return _compute_max_stable_step_s(params)
    try:
        cached = _read_plant_cache(path, full)
    except CacheTrustError:
        cached = None
    if cached is not None:
        return float(cached["max_stable_step_s"])
    limit = _compute_max_stable_step_s(params)
    _write_plant_cache(path, {"key": full, "plant": params.name, "n_cdu": params.n_cdu, "max_stable_step_s": limit,
                              "integrator": "heun", "substep_accuracy": SUBSTEP_ACCURACY})
    return limit


class PlantIO:
    """The variable map of a plant FMU in use: names, value references and the SI <-> FMU conversions.

    Output assembly's half of :class:`CoolingPlant` (the FMI calls are :class:`cooling_fmu.stepping.FMUStepper`'s):
    checks the map against the plant, resolves the value references and converts inputs, states and outputs,
    ``value_SI = scale * value_FMU + offset`` (identity for the generated plant).

    Parameters
    ----------
    vmap : VariableMap
        The map (:func:`cooling_fmu.adapter.load_variable_map`).
    fmu : object
        The opened FMU (for its value references).
    n_cdu : int
        CDUs of the plant.
    own_model : bool
        True for a generated plant (its states are checked against :data:`~cooling_fmu.modelica.STATE_NAMES`).

    Raises
    ------
    ValueError
        If the inputs are not ``Q_flow_CDU[1..n]`` then ``T_wb``, there is no ``P_cooling`` output, or a generated
        plant's states are missing.
    """

    def __init__(self, vmap: VariableMap, fmu: object, n_cdu: int, own_model: bool):
        m = vmap
        self.input_names = [e.name for e in m.inputs]
        self.output_names = [e.name for e in m.outputs]
        self.output_units = [e.unit for e in m.outputs]
        self.index = {n: i for i, n in enumerate(self.output_names)}
        expected = [f"Q_flow_CDU[{i}]" for i in range(1, n_cdu + 1)] + ["T_wb"]
        extra = self.input_names[len(expected):]
        if self.input_names[:len(expected)] != expected or extra not in ([], *OPTIONAL_INPUT_SETS):
            raise ValueError(f"{m.path}: inputs must be Q_flow_CDU (per_cdu) then T_wb (then optionally, in this "
                             f"order, {' and '.join(OPTIONAL_INPUTS)}) for {n_cdu} CDUs, got "
                             f"{self.input_names[:3]}...{self.input_names[len(expected) - 1:]}")
        #: The map has the optional inputs ``T_db`` (outdoor dry-bulb) / ``Q_flow_air_side`` after ``T_wb``.
        self.has_dry_bulb = "T_db" in extra
        self.has_air_side = "Q_flow_air_side" in extra
        if own_model and extra != list(OPTIONAL_INPUTS):
            raise ValueError(f"{m.path}: the generated plant needs the inputs {', '.join(OPTIONAL_INPUTS)} after T_wb")
        if "P_cooling" not in self.index:
            raise ValueError(f"{m.path}: the map must have an output P_cooling")
        if own_model and len(m.states) != 2 * n_cdu + 4:
            raise ValueError(f"{m.path}: the generated plant needs the {2 * n_cdu + 4} states of STATE_NAMES")
        self.vr_in = fmu.value_references([e.fmu for e in m.inputs])
        #: the generated plant's supervisory input (tower cells commanded by the stager; 0 = algebraic staging)
        self.has_cells_cmd = own_model
        if own_model:
            self.vr_in = list(self.vr_in) + fmu.value_references(["n_cells_cmd"])
        self.vr_state = fmu.value_references([e.fmu for e in m.states])
        self.vr_out = fmu.value_references([e.fmu for e in m.outputs])
        self._in_scale = np.array([e.scale for e in m.inputs])
        self._in_offset = np.array([e.offset for e in m.inputs])
        self._out_scale = np.array([e.scale for e in m.outputs])
        self._out_offset = np.array([e.offset for e in m.outputs])
        self._st_scale = np.array([e.scale for e in m.states])
        self._st_offset = np.array([e.offset for e in m.states])
        self._convert_in = not all(e.is_identity for e in m.inputs)
        self._convert_out = not all(e.is_identity for e in m.outputs)

    @staticmethod
    def check_inputs(heat_w: np.ndarray, T_wb_K: np.ndarray) -> None:
        """Refuse negative or non-finite heat and a wet-bulb outside (150, 400) K.

        Parameters
        ----------
        heat_w : np.ndarray
            Heat per CDU [W], any shape.
        T_wb_K : np.ndarray
            Wet-bulb [K], any shape.

        Raises
        ------
        ValueError
            Naming the bad input.
        """
        if heat_w.size and not (np.all(np.isfinite(heat_w)) and heat_w.min() >= 0.0):
            raise ValueError("heat_w must be finite and >= 0 W")
        if T_wb_K.size and not (np.all(np.isfinite(T_wb_K)) and T_wb_K.min() > 150.0 and T_wb_K.max() < 400.0):
            raise ValueError("T_wb_K must be finite and in (150, 400) K (kelvin, not Celsius)")

    def si_inputs(self, heat_w: np.ndarray, T_wb_K: np.ndarray, T_db_K: np.ndarray | float | None = None,
                  Q_air_side_W: np.ndarray | float | None = None) -> np.ndarray:
        """The SI input rows in map order: heat per CDU, wet-bulb and, when the map has them, dry-bulb and air side.

        Parameters
        ----------
        heat_w : np.ndarray
            Heat per CDU [W], shape (m, n_cdu).
        T_wb_K : np.ndarray
            Wet-bulb [K], shape (m,).
        T_db_K : np.ndarray | float | None
            Dry-bulb [K], shape (m,); None: the wet-bulb (saturated air). Ignored when the map has no ``T_db``.
        Q_air_side_W : np.ndarray | float | None
            Heat of the air side into the tower water [W], shape (m,), >= 0; None: 0. Ignored when the map has no
            ``Q_flow_air_side``.

        Returns
        -------
        ndarray, shape (m, n_inputs)
            SI inputs.

        Raises
        ------
        ValueError
            If the dry-bulb is not finite or outside (150, 400) K, or the air-side heat negative or not finite.
        """
        m = heat_w.shape[0]
        u = np.empty((m, len(self.input_names)))
        n = heat_w.shape[1]
        u[:, :n] = heat_w
        u[:, n] = T_wb_K
        if self.has_dry_bulb:
            td = T_wb_K if T_db_K is None else np.broadcast_to(np.asarray(T_db_K, dtype=float), (m,))
            if td.size and not (np.all(np.isfinite(td)) and td.min() > 150.0 and td.max() < 400.0):
                raise ValueError("T_db_K must be finite and in (150, 400) K (kelvin, not Celsius)")
            u[:, n + 1] = td
        if self.has_air_side:
            qa = np.zeros(m) if Q_air_side_W is None else np.broadcast_to(np.asarray(Q_air_side_W, dtype=float), (m,))
            if qa.size and not (np.all(np.isfinite(qa)) and qa.min() >= 0.0):
                raise ValueError("Q_air_side_W must be finite and >= 0 W")
            u[:, n + 1 + self.has_dry_bulb] = qa
        return u

    def held_row(self, heat_w: np.ndarray, T_wb_K: float, n_cells_cmd: float, T_db_K: float | None = None,
                 Q_air_side_W: float | None = None) -> np.ndarray:
        """The FMU's input row of one held step, checked as :meth:`check_inputs` and :meth:`si_inputs` check.

        The same values as ``fmu_inputs(heat_w[None, :], ...)[0]``, built from floats (a held step of
        :class:`cooling_fmu.coupling.AdaptiveStepper` is one row: the array checks cost more than its C step).

        Parameters
        ----------
        heat_w : np.ndarray
            Heat per CDU [W], shape (n_cdu,).
        T_wb_K : float
            Wet-bulb [K].
        n_cells_cmd : float
            Tower cells commanded (generated plant).
        T_db_K : float | None
            Dry-bulb [K]; None: the wet-bulb.
        Q_air_side_W : float | None
            Air-side heat into the tower water [W]; None: 0.

        Returns
        -------
        ndarray, shape (n_in,)
            In FMU units.

        Raises
        ------
        ValueError
            Naming the bad input (the messages of :meth:`check_inputs` / :meth:`si_inputs`).
        """
        if self._convert_in:  # a site map with units to convert: the array path
            self.check_inputs(heat_w, np.array([T_wb_K]))
            return self.fmu_inputs(heat_w[None, :], np.array([T_wb_K]), n_cells_cmd, T_db_K, Q_air_side_W)[0]
        n = heat_w.shape[0]
        if n and not (math.isfinite(float(heat_w.sum())) and float(heat_w.min()) >= 0.0):
            raise ValueError("heat_w must be finite and >= 0 W")
        if not (math.isfinite(T_wb_K) and 150.0 < T_wb_K < 400.0):
            raise ValueError("T_wb_K must be finite and in (150, 400) K (kelvin, not Celsius)")
        row = np.empty(len(self.input_names) + self.has_cells_cmd)
        row[:n], row[n], i = heat_w, T_wb_K, n + 1
        if self.has_dry_bulb:
            td = T_wb_K if T_db_K is None else float(T_db_K)
            if not (math.isfinite(td) and 150.0 < td < 400.0):
                raise ValueError("T_db_K must be finite and in (150, 400) K (kelvin, not Celsius)")
            row[i], i = td, i + 1
        if self.has_air_side:
            qa = 0.0 if Q_air_side_W is None else float(Q_air_side_W)
            if not (math.isfinite(qa) and qa >= 0.0):
                raise ValueError("Q_air_side_W must be finite and >= 0 W")
            row[i] = qa
        if self.has_cells_cmd:
            row[-1] = float(n_cells_cmd)
        return row

    def nonfinite(self, y: np.ndarray, t_s: float, u_row: np.ndarray, log: list) -> FMUError:
        """The error of a step whose outputs are not all finite (names the first five).

        Parameters
        ----------
        y : np.ndarray
            The step's outputs, shape (n_outputs,).
        t_s : float
            Time at the end of the step [s].
        u_row : np.ndarray
            The step's inputs (FMU units), shape (n_in,).
        log : list
            The FMU's log.

        Returns
        -------
        cooling_fmu.adapter.FMUError
            Function ``fmi2GetReal``, status 3 (error).
        """
        names = [self.output_names[i] for i in np.flatnonzero(~np.isfinite(y))]
        return FMUError(f"fmi2GetReal (non-finite outputs {names[:5]})", 3, t_s,
                        dict(zip(self.input_names, u_row.tolist())), list(log))

    def fmu_inputs(self, heat_w: np.ndarray, T_wb_K: np.ndarray, n_cells_cmd: float | np.ndarray,
                   T_db_K: np.ndarray | float | None = None, Q_air_side_W: np.ndarray | float | None = None
                   ) -> np.ndarray:
        """The FMU's input rows: the map's inputs (:meth:`si_inputs`) in FMU units, then (generated plant) the cell
        command.

        Parameters
        ----------
        heat_w : np.ndarray
            Heat per CDU [W], shape (k, n_cdu).
        T_wb_K : np.ndarray
            Wet-bulb [K], shape (k,).
        n_cells_cmd : float | np.ndarray
            Tower cells commanded (0 = algebraic staging), scalar or shape (k,); ignored for a site FMU.
        T_db_K : np.ndarray | float | None
            Dry-bulb [K] (:meth:`si_inputs`).
        Q_air_side_W : np.ndarray | float | None
            Air-side heat into the tower water [W] (:meth:`si_inputs`).

        Returns
        -------
        ndarray, shape (k, n_in)
            C-contiguous, in FMU units.
        """
        k = heat_w.shape[0]
        u = self.to_fmu_inputs(self.si_inputs(heat_w, T_wb_K, T_db_K, Q_air_side_W))
        if self.has_cells_cmd:
            u = np.concatenate([u, np.broadcast_to(np.asarray(n_cells_cmd, dtype=float), (k,))[:, None]], axis=1)
        return np.ascontiguousarray(u)

    def to_fmu_inputs(self, u: np.ndarray) -> np.ndarray:
        """SI inputs to FMU units.

        Parameters
        ----------
        u : np.ndarray
            Inputs in SI, last axis in input order.

        Returns
        -------
        ndarray
            In FMU units (the same array when the map is the identity).
        """
        return (u - self._in_offset) / self._in_scale if self._convert_in else u

    def states_to_fmu(self, x: np.ndarray) -> np.ndarray:
        """SI states to FMU units.

        Parameters
        ----------
        x : np.ndarray
            States in SI, in the map's state order.

        Returns
        -------
        ndarray
            In FMU units.
        """
        return (x - self._st_offset) / self._st_scale

    def to_si_outputs(self, y: np.ndarray) -> np.ndarray:
        """FMU outputs to SI, in place.

        Parameters
        ----------
        y : np.ndarray
            Outputs in FMU units, last axis in output order.

        Returns
        -------
        ndarray
            The same array, in SI.
        """
        if self._convert_out:
            y *= self._out_scale
            y += self._out_offset
        return y


def _open_plant_fmu(params: PlantParams, fmu_path: str | Path | None, cache_dir: str | Path | None,
                    map_path: str | Path | None, backend: str, phase: Callable[[str], None]
                    ) -> tuple[Path, str, object, VariableMap, PlantIO]:
    """Fetch (or read) the FMU's bytes, open a verified private copy and check its variable map.

    Parameters
    ----------
    params : PlantParams
        Plant description (generated when ``fmu_path`` is None).
    fmu_path : str | Path | None
        A site FMU, or None for the generated plant (fetched from the cache, built on a miss).
    cache_dir : str | Path | None
        FMU cache folder.
    map_path : str | Path | None
        Variable map YAML (default the shipped map).
    backend : str
        FMI backend.
    phase : Callable[[str], None]
        Told each phase of the set-up.

    Returns
    -------
    tuple of (pathlib.Path, str, object, VariableMap, PlantIO)
        The FMU's path, the SHA-256 of the bytes opened, the opened FMU, the map and its :class:`PlantIO`.

    Raises
    ------
    Exception
        Whatever checking the map against the FMU raises (ValueError: units, inputs, states), re-raised after
        the FMU instance is freed; and the build / cache / backend errors listed by :class:`CoolingPlant`.
    """
    own_model = fmu_path is None
    if own_model:
        phase("FMU (cache lookup)")
        fmu_path, sha, data = fetch_fmu_bytes(generate_plant_modelica(params), model_name_for(params), cache_dir,
                                              phase)
    else:  # a site FMU: read once, and the bytes hashed are the bytes opened (it runs as native code by design)
        data = Path(fmu_path).read_bytes()
        sha = sha256_bytes(data)
    vmap: VariableMap = load_variable_map(params.n_cdu, map_path)
    # fmpy opens files by name only: it opens a private copy (mkdtemp, 0700) of the verified bytes, hashed again
    # after writing, never the cache file; the copy is removed once fmpy has extracted it
    with verified_copy(data, Path(fmu_path).name, sha) as copy:
        fmu = open_fmu(copy, backend)
    del data
    try:
        for group in (vmap.inputs, vmap.states, vmap.outputs):
            fmu.check_units(group)
        io = PlantIO(vmap, fmu, params.n_cdu, own_model)
    except Exception:
        fmu.freeInstance()
        raise
    return Path(fmu_path), sha, fmu, vmap, io


def advance_held_sequence(plant: CoolingPlant, heat_w: np.ndarray, T_wb_K: np.ndarray, n_steps: np.ndarray,
                          schedule: object, T_db_K: np.ndarray | None = None,
                          Q_air_side_W: np.ndarray | None = None) -> np.ndarray:
    """Held long steps of a generated plant one after another, the stager's command before each (issue 26 item 2).

    The same FMU calls, inputs and clock as one :meth:`CoolingPlant.advance_held` per row (each followed by
    ``schedule.after``), made by :meth:`cooling_fmu.stepping.FMUStepper.held_staged` in one Python call: what
    :class:`cooling_fmu.coupling.AdaptiveStepper` runs for the long steps of a constant run.

    Parameters
    ----------
    plant : CoolingPlant
        An initialised generated plant (its own C loop).
    heat_w : np.ndarray
        Heat per CDU of each long step [W], shape (k, n_cdu), or (n_cdu,) for the same heat in every one.
    T_wb_K : np.ndarray
        Wet-bulb of each long step [K], shape (k,).
    n_steps : np.ndarray
        Communication steps of each long step, shape (k,), each in 1 .. ``plant.max_held_steps``.
    schedule : object
        ``command()`` and ``after(n, y_si)`` (:class:`cooling_fmu.supervisory.StagedPlant`).
    T_db_K : np.ndarray | None
        Dry-bulb of each long step [K], shape (k,); None: the wet-bulb.
    Q_air_side_W : np.ndarray | None
        Air-side heat of each long step [W], shape (k,); None: 0.

    Returns
    -------
    ndarray, shape (k, n_outputs)
        SI outputs at the end of each long step.

    Raises
    ------
    ValueError
        If a step count or an input is out of range.
    PlantStepError
        If an FMI call fails or an output is not finite; ``completed_outputs`` is empty and ``held_outputs`` holds
        the SI outputs at the end of each long step completed before it (the plant stays after the last of them).
    """
    ns = np.asarray(n_steps, dtype=np.int64)
    if ns.size and not (ns.min() >= 1 and ns.max() <= plant.max_held_steps):
        raise ValueError(f"n_steps must be in 1..{plant.max_held_steps} (HELD_SUBSTEPS sub-steps), got {ns.tolist()}")
    tw = np.asarray(T_wb_K, dtype=float)
    q = np.broadcast_to(np.asarray(heat_w, dtype=float), (tw.shape[0], plant.n_cdu))
    io, stepper = plant._io, plant._stepper
    io.check_inputs(q, tw)
    u = io.fmu_inputs(q, tw, 0.0, T_db_K, Q_air_side_W)
    out = np.empty((tw.shape[0], len(io.vr_out)))
    j, exc = stepper.held_staged(u, plant._t0, plant._k, ns, plant.step_s, out, schedule, io.to_si_outputs)
    if exc is None and j and not np.isfinite(out[j - 1]).all():
        j -= 1
        exc = io.nonfinite(out[j], plant._t0 + (plant._k + int(ns[:j + 1].sum())) * plant.step_s, u[j],
                           plant._fmu.log)
    plant._k += int(ns[:j].sum())
    if exc is not None:
        try:
            raise PlantStepError(exc, np.zeros((0, out.shape[1])), plant.output_names) from exc
        except PlantStepError as err:  # the long steps completed before it, for AdaptiveStepper
            err.held_outputs = io.to_si_outputs(out[:j].copy())
            raise
    return io.to_si_outputs(out)


class _ClosedOnExit:
    """Context-manager protocol for a class with ``close()``: ``with X(...) as x:`` closes ``x`` at the end."""

    def __enter__(self):
        """Return self (context manager).

        Returns
        -------
        object
            This object.
        """
        return self

    def __exit__(self, *exc: object) -> None:
        """Close (context manager).

        Parameters
        ----------
        *exc : object
            Exception information (ignored).
        """
        self.close()


class CoolingPlant(_ClosedOnExit):
    """Cooling plant FMU with a fixed communication step.

    Parameters
    ----------
    params : PlantParams | str | Path
        Plant description, or a shipped plant name / TOML path for :func:`~cooling_fmu.params.load_plant_params`.
        With a site FMU (``fmu_path``) it still gives ``n_cdu`` (and the design figures used in reports).
    step_s : float
        Communication step [s] (default 15 s). The generated FMU splits it into Heun sub-steps no longer than
        :func:`max_stable_step_s`.
    cache_dir : str | Path | None
        FMU cache directory (default :func:`cooling_fmu.build.default_cache_dir`).
    map_path : str | Path | None
        Variable map YAML (default ``maps/hpctwin_plant.yaml``).
    fmu_path : str | Path | None
        Use this FMU instead of building one from ``params`` (a site's own FMU, with its own ``map_path``).
    backend : str
        FMI backend: ``"fmpy"`` (default; ctypes hot path) or ``"pyfmi"`` (where installed).
    on_phase : Callable[[str], None] | None
        Told the phase of the set-up as it starts (stability limit, and each phase of an FMU build; see
        :func:`cooling_fmu.build.fetch_fmu`), to show progress. Default: silent.

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
    fmu_sha256 : str
        Hex SHA-256 of the FMU's bytes: for a generated plant, the digest verified against the cache record (see
        :func:`cooling_fmu.build.fetch_fmu_bytes`); for a site FMU, hashed when read. Either way fmpy opens a private
        copy of exactly those bytes (:func:`jobs.cachedirs.verified_copy`). Runs record this value.
    own_model : bool
        True if the FMU was generated from ``params`` (then the analytic steady state is available).

    Raises
    ------
    ValueError
        If ``step_s`` is not positive and finite, or the map does not fit.
    ImportError
        If the backend is not installed.
    cooling_fmu.build.FMUBuildError
        If the FMU cannot be built.
    jobs.cachedirs.CacheTrustError
        If the FMU cache folder cannot be trusted (another user's, or writable by others).

    Examples
    --------
    >>> with CoolingPlant("theta") as plant:                              # doctest: +SKIP
    ...     plant.initialize(np.full(6, 200e3), 285.0)
    ...     y = plant.step(np.full(6, 210e3), 285.5)
    ...     p_cooling_w = y[plant.P_cooling_index]
    """

    def __init__(  # noqa: DOC503
        self,
        params: PlantParams | str | Path,
        step_s: float = 15.0,
        cache_dir: str | Path | None = None,
        map_path: str | Path | None = None,
        fmu_path: str | Path | None = None,
        backend: str = "fmpy",
        on_phase: Callable[[str], None] | None = None,
    ):
        self.params = params if isinstance(params, PlantParams) else load_plant_params(params)
        step_s = float(step_s)
        if not (math.isfinite(step_s) and step_s > 0):
            raise ValueError(f"step_s must be positive and finite, got {step_s}")
        self.own_model = fmu_path is None
        phase = on_phase or (lambda _msg: None)
        if self.own_model:
            phase("stability limit")
            limit = max_stable_step_s(self.params, cache_dir)
        self.step_s = step_s
        self.n_cdu = self.params.n_cdu
        self.backend = backend
        self.fmu_path, self.fmu_sha256, self._fmu, self.map, self._io = _open_plant_fmu(
            self.params, fmu_path, cache_dir, map_path, backend, phase)
        #: longest Heun sub-step of the generated FMU [s] (:func:`max_stable_step_s`); None for a site FMU
        self.max_substep_s = limit if self.own_model else None
        #: most communication steps one advance_held call may cover: HELD_SUBSTEPS sub-steps of the generated FMU
        #: (1 for a site FMU, whose integrator is not known)
        self.max_held_steps = max(1, int(HELD_SUBSTEPS * limit // step_s)) if self.own_model else 1
        self._k, self._t0 = 0, 0.0  # communication steps since initialize, and the time of step 0 [s]
        self._initialized = self._closed = False
        #: the FMI calls (experiment, initial state, the step loops): cooling_fmu.stepping.FMUStepper
        io = self._io
        self.input_names, self.output_names, self.output_units = io.input_names, io.output_names, io.output_units
        #: The FMU takes the outdoor dry-bulb (input ``T_db``; keyword ``T_db_K`` of :meth:`run`). A site FMU whose
        #: map has no ``T_db`` input is never given one (its own model decides); the generated plant, given none,
        #: takes ``T_db = T_wb`` (saturated air).
        self.uses_dry_bulb = io.has_dry_bulb
        #: The FMU takes the air side's heat into its tower water (input ``Q_flow_air_side``; keyword
        #: ``Q_air_side_W``); given none it is 0.
        self.uses_air_side_heat = io.has_air_side
        self._n_out = len(io.vr_out)
        self._stepper = FMUStepper(self._fmu, io.vr_in, io.vr_state, io.vr_out, limit if self.own_model else None)

    @property
    def raw_run_available(self) -> bool:
        """True when the FMU's own multi-step C loop runs :meth:`run` (an FMU built here, fmpy backend)."""
        return self._stepper.run_c is not None

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
            return self._io.index[name]
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

    def _require_open(self) -> None:
        if self._closed:
            raise RuntimeError("CoolingPlant is closed")

    # ---- lifecycle -------------------------------------------------------------------------------------------------
    def initialize(self, heat_w: np.ndarray, T_wb_K: float, steady: bool = True, start_time_s: float = 0.0,  # noqa: DOC503
                   initial_state: np.ndarray | None = None, warmup_s: float = 0.0,
                   T_db_K: float | None = None, Q_air_side_W: float | None = None) -> np.ndarray:
        """Set up the experiment and initial state, and leave initialization mode.

        Parameters
        ----------
        heat_w : np.ndarray
            Heat into each CDU for the first step [W], shape (n_cdu,), >= 0.
        T_wb_K : float
            Wet-bulb temperature for the first step [K].
        steady : bool
            Generated plant: if True (default) start at the analytic steady state of ``heat_w`` and ``T_wb_K``
            (:func:`~cooling_fmu.modelica.analytic_steady_state`); if False at the steady state of an idle plant
            (zero heat) at ``T_wb_K``. Ignored for a site FMU (use ``warmup_s``).
        start_time_s : float
            Simulation time of the first communication point [s].
        initial_state : np.ndarray | None
            Explicit initial state in SI, in the order of the map's ``states`` (generated plant:
            :func:`~cooling_fmu.modelica.state_vector`); overrides ``steady``.
        warmup_s : float
            Run the FMU for this long [s] before ``start_time_s`` with ``heat_w`` and ``T_wb_K`` held (a whole
            number of steps; the FMU's clock starts at ``start_time_s - warmup_s``). The way to start a site FMU
            near its steady state.
        T_db_K : float | None
            Dry-bulb for the first step [K] (input ``T_db`` when the map has it; a generated plant's steady start
            is taken at it, so a dry or hybrid bank starts settled); None: the wet-bulb.
        Q_air_side_W : float | None
            Air-side heat into the tower water for the first step [W] (input ``Q_flow_air_side``); None: 0. The
            generated plant's steady start includes it.

        Returns
        -------
        ndarray, shape (n_outputs,)
            Outputs at ``start_time_s`` (SI).

        Raises
        ------
        RuntimeError
            If already initialized (call :meth:`reset` first) or closed.
        ValueError
            If inputs have the wrong shape or are out of range.
        cooling_fmu.adapter.FMUError
            If an FMI call fails (raised by the FMU adapter).
        """
        self._require_open()
        if self._initialized:
            raise RuntimeError("CoolingPlant already initialized; call reset() first")
        q = np.asarray(heat_w, dtype=float)
        if q.shape != (self.n_cdu,):
            raise ValueError(f"heat_w must have shape ({self.n_cdu},), got {q.shape}")
        self._io.check_inputs(q, np.asarray([T_wb_K], dtype=float))
        n_warm = int(round(float(warmup_s) / self.step_s))
        if n_warm < 0:
            raise ValueError("warmup_s must be >= 0")
        states = None
        if initial_state is not None:
            states = np.asarray(initial_state, dtype=float)
            if states.shape != (len(self.map.states),):
                raise ValueError(f"initial_state must have shape ({len(self.map.states)},), got {states.shape}")
        elif self.own_model:
            qa = float(Q_air_side_W or 0.0) if self._io.has_air_side and steady else 0.0
            states = analytic_steady_state(self.params, q if steady else np.zeros_like(q), float(T_wb_K),
                                           T_db_K=None if T_db_K is None else float(T_db_K), Q_air_side_W=qa)["x"]
        u = self._io.fmu_inputs(q[None, :], np.array([float(T_wb_K)]), 0.0, T_db_K, Q_air_side_W)[0]
        t_fmu0 = float(start_time_s) - n_warm * self.step_s
        y = self._stepper.start(t_fmu0, u, None if states is None else self._io.states_to_fmu(states))
        if n_warm:
            y = self._stepper.warm_up(t_fmu0, self.step_s, n_warm)
        self._t0, self._k = float(start_time_s), 0
        self._initialized = True
        return self._io.to_si_outputs(np.array(y, dtype=float))

    def step(self, heat_w: np.ndarray, T_wb_K: float) -> np.ndarray:  # noqa: DOC503
        """Advance exactly one communication step with the step-average heat held constant.

        Parameters
        ----------
        heat_w : np.ndarray
            Average heat into each CDU over this step [W], shape (n_cdu,), >= 0.
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
        PlantStepError
            If the FMU fails the step (raised by :meth:`run`, as are the RuntimeError and the range checks).
        """
        if getattr(heat_w, "shape", None) != (self.n_cdu,):
            raise ValueError(f"heat_w must have shape ({self.n_cdu},), got {np.shape(heat_w)}")
        return self.run(np.asarray(heat_w, dtype=float)[None, :], np.array([T_wb_K], dtype=float))[0]

    def run(self, heat_w: np.ndarray, T_wb_K: np.ndarray, n_cells_cmd: float | np.ndarray = 0.0,
            T_db_K: np.ndarray | None = None, Q_air_side_W: np.ndarray | None = None) -> np.ndarray:
        """Advance ``n_steps`` communication steps (fmpy: three C calls per step, no allocation).

        Parameters
        ----------
        heat_w : np.ndarray
            Average heat into each CDU over each step [W], >= 0, shape (n_steps, n_cdu).
        T_wb_K : np.ndarray
            Wet-bulb temperature over each step [K], shape (n_steps,).
        n_cells_cmd : float | np.ndarray
            Tower cells commanded by the supervisory stager (:mod:`cooling_fmu.supervisory`), scalar or shape
            (n_steps,); 0 (default) = the FMU's algebraic staging; or the stager itself (an object with
            ``sample_steps``: :meth:`cooling_fmu.stepping.FMUStepper.steps_staged`). Ignored for a site FMU.
        T_db_K : np.ndarray | None
            Dry-bulb over each step [K] (input ``T_db`` when the map has it), shape (n_steps,); None: the wet-bulb
            (saturated air).
        Q_air_side_W : np.ndarray | None
            Air-side heat into the tower water over each step [W] (input ``Q_flow_air_side``); None: 0.

        Returns
        -------
        ndarray, shape (n_steps, n_outputs)
            SI outputs at the end of each step.

        Raises
        ------
        RuntimeError
            If not initialized.
        ValueError
            If shapes disagree or values are out of range.
        PlantStepError
            If an FMI call fails or an output is not finite; it carries the function, time, inputs and FMU log of
            the failing step and the outputs of the steps completed before it (the plant stays at the last
            completed step).
        """
        if not self._initialized:
            raise RuntimeError("CoolingPlant.run() before initialize()")
        q = np.asarray(heat_w, dtype=float)
        tw = np.asarray(T_wb_K, dtype=float)
        if q.ndim != 2 or q.shape[1] != self.n_cdu or tw.shape != (q.shape[0],):
            raise ValueError(
                f"need heat_w shape (n_steps, {self.n_cdu}) and T_wb_K shape (n_steps,), got {q.shape}, {tw.shape}"
            )
        self._io.check_inputs(q, tw)
        n_steps, staged = q.shape[0], hasattr(n_cells_cmd, "sample_steps") and self._io.has_cells_cmd
        u = self._io.fmu_inputs(q, tw, 0.0 if staged else n_cells_cmd, T_db_K, Q_air_side_W)
        out = np.empty((n_steps, self._n_out))
        h, t0, k0 = self.step_s, self._t0, self._k
        if staged:  # the stager's command, piece by piece (cooling_fmu.supervisory.StagedPlant)
            j, exc = self._stepper.steps_staged(u, t0, k0, h, out, n_cells_cmd, self._io.to_si_outputs)
        else:
            j, exc = self._stepper.steps(u, t0 + k0 * h, h, out)
        bad = ~np.isfinite(out[:j]).all(axis=1)
        if exc is None and bad.any():
            j = int(np.argmax(bad))
            exc = self._io.nonfinite(out[j], t0 + (k0 + j + 1) * h, u[j], self._fmu.log)
        if exc is not None:
            self._k = k0 + j
            raise PlantStepError(exc, self._io.to_si_outputs(out[:j].copy()), self.output_names) from exc
        self._k = k0 + n_steps
        return self._io.to_si_outputs(out)

    def advance_held(self, heat_w: np.ndarray, T_wb_K: float, n_steps: int, n_cells_cmd: float = 0.0,
                     T_db_K: float | None = None, Q_air_side_W: float | None = None) -> np.ndarray:
        """Advance ``n_steps`` communication steps as ONE FMU step of ``n_steps * step_s``, inputs held.

        Used by :class:`cooling_fmu.coupling.AdaptiveStepper` while the heat is constant: the generated FMU splits
        the long step into Heun sub-steps no longer than :func:`max_stable_step_s` (at most :data:`HELD_SUBSTEPS`).

        Parameters
        ----------
        heat_w : np.ndarray
            Heat into each CDU, constant over the long step [W], >= 0; shape (n_cdu,).
        T_wb_K : float
            Wet-bulb over the long step [K].
        n_steps : int
            Communication steps covered, 1 .. :attr:`max_held_steps`.
        n_cells_cmd : float
            Tower cells commanded (as :meth:`run`).
        T_db_K : float | None
            Dry-bulb over the long step [K]; None: the wet-bulb.
        Q_air_side_W : float | None
            Air-side heat into the tower water over the long step [W]; None: 0.

        Returns
        -------
        ndarray, shape (n_outputs,)
            SI outputs at the end of the long step.

        Raises
        ------
        RuntimeError
            If not initialized.
        ValueError
            If ``n_steps`` is out of range or the inputs are.
        PlantStepError
            If an FMI call fails or an output is not finite (no step completed; the plant stays where it was).
        """
        if not self._initialized:
            raise RuntimeError("CoolingPlant.advance_held() before initialize()")
        n = int(n_steps)
        if not 1 <= n <= self.max_held_steps:
            raise ValueError(f"n_steps must be in 1..{self.max_held_steps} (HELD_SUBSTEPS sub-steps), got {n_steps}")
        q = np.asarray(heat_w, dtype=float)
        if q.shape != (self.n_cdu,):
            raise ValueError(f"heat_w must have shape ({self.n_cdu},), got {q.shape}")
        u = self._io.held_row(q, float(T_wb_K), n_cells_cmd, T_db_K, Q_air_side_W)
        t = self._t0 + self._k * self.step_s
        try:
            y = self._stepper.held(u, t, n * self.step_s)
        except FMUError as exc:
            raise PlantStepError(exc, np.zeros((0, self._n_out)), self.output_names) from exc
        if not np.isfinite(y).all():
            exc = self._io.nonfinite(y, t + n * self.step_s, u, self._fmu.log)
            raise PlantStepError(exc, np.zeros((0, self._n_out)), self.output_names)
        self._k += n
        return self._io.to_si_outputs(y)

    def reset(self) -> None:  # noqa: DOC502
        """Return the FMU to its instantiated state (``fmi2Reset``); call :meth:`initialize` again before stepping.

        Raises
        ------
        cooling_fmu.adapter.FMUError
            If ``fmi2Reset`` fails (raised by the FMU adapter).
        """
        self._require_open()
        self._fmu.reset()
        self._initialized = False
        self._k, self._t0 = 0, 0.0

    def close(self) -> None:
        """Terminate and free the FMU instance and delete its extracted files (idempotent).

        A plant whose step did not return (:func:`cooling_fmu.watchdog.guard_plant`) is left alone: it is still in it.
        """
        if self._closed or getattr(self, "_hung", False):
            return
        self._closed = True
        try:
            if self._initialized:
                self._fmu.terminate()
        finally:
            self._fmu.freeInstance()
