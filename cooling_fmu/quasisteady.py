"""A fast quasi-steady cooling plant: the generated plant's analytic steady state, tabulated and interpolated.

:class:`QuasiSteadyPlant` implements the :class:`cooling_fmu.coupling.Plant` protocol with the same outputs
(names, units, order) as the FMU plant :class:`cooling_fmu.plant.CoolingPlant`, so every downstream series, PUE
and the HDF5 layout are unchanged (``cooling.model = "fast"``, ``hpctwin run --cooling fast``). It replaces the
FMU's time integration by the plant's steady state (:func:`cooling_fmu.modelica.analytic_steady_state`), optionally
followed by a first-order lag:

* **Plant-level table.** On a grid of (mean heat per CDU ``q``, wet-bulb ``T_wb``) the steady state of the plant
  with every CDU at ``q`` is computed once per plant (:func:`steady_table`; the same derivation as
  ``analytic_steady_state``, vectorised over the grid) and cached next to the FMU under the plant hash
  (:func:`cooling_fmu.plant.plant_hash`). Each step evaluates it by bilinear interpolation at the step's mean heat
  per CDU and wet-bulb, vectorised over a whole block of steps.
* **Per CDU.** Outputs that depend on a CDU's own heat are evaluated per CDU: the secondary flow and pump power in
  closed form (:func:`cooling_fmu.modelica.pump_power_W`), the valve opening and secondary return temperature from
  a second table over (heat of that CDU, facility supply temperature), read at the tabulated facility supply
  temperature. ``P_cooling`` is the sum of its components (per-CDU pumps + facility pumps + tower pumps + fans +
  chiller), so the attribution of cooling power stays exact.
* **Lag.** With ``tau_s > 0`` every non-total output relaxes to its table value as ``y_k = s_k + (y_{k-1} - s_k)
  exp(-step / tau)`` (default 0: pure quasi-steady).
* **Totals.** The running totals (``E_*_out``, ``M_makeup_out``, ``E_heat_in``) are the trapezoidal integrals of
  their powers / flows over the steps, so the simulator's exact step averages
  (:class:`cooling_fmu.coupling.StepAverager`) are the trapezoid means.

Error sources (measured against the FMU in docs/cooling.md): the plant's thermal inertia is ignored (or lumped
into ``tau_s``); the plant-level part assumes the heat shared equally among the CDUs (the facility flow is the sum
of the valve openings, which is not linear in each CDU's heat); linear interpolation across the regime switches
(fan floor / setpoint / full fans, chiller on) and the pump staging kinks. At every grid node with equal heat per
CDU the table equals ``analytic_steady_state`` to ~1e-12 (tested).
"""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import numpy as np

from .adapter import load_variable_map
from .coupling import PlantError
from .components import chiller, drycooler, pipe, pump, roots, tower, valve
from .modelica import (_valves_at, cdu_loop_heat_W, facility_flows, plant_equations, setpoint_tower_side, steady_states,
                       tower_side_at_fan)
from .modelica import coil_air_temperature_k
from .params import PlantParams, load_plant_params

__all__ = ["QuasiSteadyPlant", "steady_table", "SteadyTable", "TABLE_VERSION", "Q_FRACTIONS", "T_WB_GRID_K",
           "FAN_YTOL"]

#: Version of the cached table layout and grid (bump when the grid or the stored quantities change).
TABLE_VERSION = "2"
#: Tolerance of the fast plant's fan solve on the tower air-flow fraction [-] at every step
#: (:func:`cooling_fmu.components.tower.braun_fan_fraction`, Illinois regula falsi): the fan power moves by about
#: 3e-12 relative against the bisection to adjacent doubles of the steady states, for about 6x fewer tower
#: evaluations (plant v5 made this solve ~90 % of a fast-plant run's time).
FAN_YTOL = 1e-12
#: Tolerance of the fast plant's valve solve on the opening [-] in rows between the table's regimes
#: (:func:`_cdu_and_flow_columns` with ``exact``; :func:`cooling_fmu.modelica._valves_at` by regula falsi).
VALVE_YTOL = 1e-13
#: Bisection width of the basin temperature in the chiller regime of the fast plant [K] (:func:`_chiller_rows`).
BASIN_XTOL_K = 1e-9
#: Heat per CDU of the table grid as fractions of ``cdu.Q_flow_nominal_W``: 0 to 1.5 in steps of 0.025.
Q_FRACTIONS = np.linspace(0.0, 1.5, 61)
#: Wet-bulb grid [K]: -40 to +40 degC in 1 K steps (the range of ``cooling.T_wb_C``; a TMY wet-bulb stays inside).
T_WB_GRID_K = 273.15 + np.linspace(-40.0, 40.0, 81)
#: Coil-air grid of a dry or hybrid plant [K]: -40 to +55 degC (a dry-bulb; Phoenix TMY3 peaks at 46 C). The table
#: of such a plant is on the air the coil sees (:func:`cooling_fmu.modelica.coil_air_temperature_k`), which is all
#: its steady state depends on (no chiller: refused, :class:`QuasiSteadyPlant`).
T_COIL_GRID_K = 273.15 + np.linspace(-40.0, 55.0, 96)


def _air_grid(params: PlantParams) -> np.ndarray:
    """The table's air-temperature axis: wet-bulb for towers, coil air for a dry or hybrid bank."""
    return T_WB_GRID_K if params.heat_rejection == "towers" else T_COIL_GRID_K
#: Facility supply temperature grid of the per-CDU table, relative to the facility setpoint [K].
T_FS_OFFSETS_K = np.linspace(-60.0, 30.0, 181)
#: Plant-level outputs taken from the table (every plant-level output except the running totals and P_cooling).
TABLE_OUTPUTS = ("T_fac_sup", "T_fac_ret", "T_cw_sup", "T_cw_ret", "T_tower_out", "m_flow_fac", "m_flow_cw",
                 "Q_flow_ihx", "P_pump_fac", "P_pump_tower", "y_fan", "y_fan_demand", "n_cells_on", "P_fan_tower", "Q_flow_tower",
                 "Q_flow_chiller", "P_chiller", "m_flow_air", "T_air_out", "m_flow_evap", "m_flow_drift",
                 "m_flow_blowdown", "m_flow_makeup", "E_stored", "Q_flow_pump_heat")
#: Running total -> the output it integrates (plant level).
_TOTALS = {"E_tower_out": "Q_flow_tower", "E_chiller_out": "Q_flow_chiller", "E_cooling_out": "P_cooling",
           "E_fan_out": "P_fan_tower", "E_pump_fac_out": "P_pump_fac", "E_pump_tower_out": "P_pump_tower",
           "E_chiller_elec_out": "P_chiller", "M_makeup_out": "m_flow_makeup", "E_pump_heat_out": "Q_flow_pump_heat"}


class SteadyTable:
    """The tabulated steady state of one plant (see :func:`steady_table`).

    Parameters
    ----------
    q_W : np.ndarray
        Heat per CDU of the grid [W], shape (n_q,).
    T_wb_K : np.ndarray
        Wet-bulb grid [K], shape (n_wb,).
    values : np.ndarray
        Plant-level outputs, shape (n_q, n_wb, len(TABLE_OUTPUTS)).
    T_fs_K : np.ndarray
        Facility supply grid of the per-CDU table [K], shape (n_fs,).
    y_valve : np.ndarray
        Valve openings [1], shape (n_q, n_fs).
    T_sec : np.ndarray
        Secondary temperatures [K], shape (n_q, n_fs).

    Attributes
    ----------
    q_W : ndarray, shape (n_q,)
        Heat per CDU of the grid [W].
    T_wb_K : ndarray, shape (n_wb,)
        Wet-bulb grid [K].
    values : ndarray, shape (n_q, n_wb, len(TABLE_OUTPUTS))
        Plant-level outputs at each node, every CDU at ``q_W``.
    T_fs_K : ndarray, shape (n_fs,)
        Facility supply temperature grid of the per-CDU table [K].
    y_valve, T_sec : ndarray, shape (n_q, n_fs)
        Steady valve opening [1] and secondary (return) temperature [K] of one CDU with heat ``q_W`` at facility
        supply ``T_fs_K``.
    """

    def __init__(self, q_W: np.ndarray, T_wb_K: np.ndarray, values: np.ndarray, T_fs_K: np.ndarray,
                 y_valve: np.ndarray, T_sec: np.ndarray) -> None:
        self.q_W, self.T_wb_K, self.values = q_W, T_wb_K, values
        self.T_fs_K, self.y_valve, self.T_sec = T_fs_K, y_valve, T_sec

    def arrays(self) -> dict[str, np.ndarray]:
        """The arrays by name (for the cache file)."""
        return {"q_W": self.q_W, "T_wb_K": self.T_wb_K, "values": self.values, "T_fs_K": self.T_fs_K,
                "y_valve": self.y_valve, "T_sec": self.T_sec}


def _steady_states(params: PlantParams, q: np.ndarray, T_wb: np.ndarray, xtol_K: float = 0.0,
                   T_db: np.ndarray | None = None) -> np.ndarray:
    """Steady states of the plant with every CDU at heat ``q``: :func:`cooling_fmu.modelica.steady_states` (the one
    derivation of the steady state) at ``k`` points.

    Parameters
    ----------
    params : PlantParams
        Plant description.
    q : np.ndarray
        Heat per CDU [W] (>= 0) of each point, shape (k,).
    T_wb : np.ndarray
        Wet-bulb [K] of each point, shape (k,).
    xtol_K : float
        Bisection width [K] (:func:`cooling_fmu.modelica.steady_states`); 0: to adjacent doubles.
    T_db : np.ndarray | None
        Dry-bulb [K] of each point (a dry or hybrid bank works against it); None: saturated air.

    Returns
    -------
    ndarray, shape (k, 2 n_cdu + 4)
        The state (:func:`cooling_fmu.modelica.state_vector` order) of each point.
    """
    q = np.asarray(q, dtype=float)
    return steady_states(params, np.repeat(q[:, None], params.n_cdu, axis=1), np.asarray(T_wb, dtype=float),
                         xtol_K=xtol_K, T_db_K=T_db)[0]


def steady_table(params: PlantParams) -> SteadyTable:
    """Tabulate the plant's steady state on the grid :data:`Q_FRACTIONS` x :data:`T_WB_GRID_K` (no cache).

    Each node is the steady state with every CDU at the node's heat (:func:`_steady_states`, the derivation of
    :func:`cooling_fmu.modelica.analytic_steady_state`), its outputs evaluated by the numpy mirror
    :func:`cooling_fmu.modelica.plant_equations`. The per-CDU table holds :func:`cooling_fmu.modelica._valves_at`
    on (heat, facility supply temperature). About 5-10 s for a 6-CDU plant.

    Parameters
    ----------
    params : PlantParams
        Plant description.

    Returns
    -------
    SteadyTable
        The tables.
    """
    q_grid = Q_FRACTIONS * params.cdu.Q_flow_nominal_W
    grid = _air_grid(params)
    qq, ww = np.meshgrid(q_grid, grid, indexing="ij")
    x = _steady_states(params, qq.ravel(), ww.ravel())
    n = params.n_cdu
    vals = np.empty((x.shape[0], len(TABLE_OUTPUTS)))
    for k in range(x.shape[0]):
        out = plant_equations(params, x[k], np.full(n, qq.ravel()[k]), float(ww.ravel()[k]))
        vals[k] = [float(out[name]) for name in TABLE_OUTPUTS]
    T_fs = params.tower.T_fac_sup_set_K + T_FS_OFFSETS_K
    q2, f2 = np.meshgrid(q_grid, T_fs, indexing="ij")
    y_v, T_sec = _valves_at(params, q2.ravel(), f2.ravel())
    return SteadyTable(q_grid, grid.copy(), vals.reshape(len(q_grid), len(grid), -1), T_fs,
                       y_v.reshape(q2.shape), T_sec.reshape(q2.shape))


def _table_key(params: PlantParams) -> str:
    from .plant import plant_hash

    h = hashlib.sha256(plant_hash(params).encode())
    h.update(repr((TABLE_VERSION, Q_FRACTIONS.tolist(), T_WB_GRID_K.tolist(), T_FS_OFFSETS_K.tolist(),
                   TABLE_OUTPUTS)).encode())
    h.update(Path(__file__).read_bytes())
    return h.hexdigest()


def cached_steady_table(params: PlantParams, cache_dir: str | Path | None = None) -> SteadyTable:
    """:func:`steady_table`, cached next to the FMU (``<model>-<key16>.qss.npz`` plus a ``.json`` record).

    The record holds the key (plant hash, grid, table version, this module's source) and the SHA-256 of the
    ``.npz`` bytes; a file whose digest or key does not match, or a folder / file failing the FMU cache's trust
    checks (:mod:`jobs.cachedirs`), is recomputed, never loaded. The ``.npz`` is read with
    ``allow_pickle=False``. Writes are atomic (temporary file + rename); an unwritable cache is skipped.

    Parameters
    ----------
    params : PlantParams
        Plant description.
    cache_dir : str | Path | None
        Cache folder (default :func:`cooling_fmu.build.default_cache_dir`).

    Returns
    -------
    SteadyTable
        The tables (identical with or without the cache: the arrays are stored bit for bit).
    """
    from jobs.cachedirs import CacheTrustError, private_dir, read_entry, write_entry

    from .build import default_cache_dir
    from .modelica import model_name_for

    key = _table_key(params)
    folder = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    try:
        folder = private_dir(folder, "FMU cache folder")  # checked on its whole path; the resolved folder is used
        trusted = True
    except CacheTrustError as exc:  # unverifiable: not used (the table is computed), and said so
        import logging

        logging.getLogger("hpctwin.files").warning("warning: fast-plant table cache not used: %s", exc)
        trusted = False
    except OSError:
        trusted = False
    npz = folder / f"{model_name_for(params)}-{key[:16]}.qss.npz"
    rec = npz.with_name(npz.name + ".json")
    if trusted:
        try:  # each file read once through a descriptor checked for owner and mode; these bytes hashed and parsed
            doc = json.loads(read_entry(rec, "plant table cache record").decode("utf-8"))
            data = read_entry(npz, "plant table cache entry")
            if doc.get("key") == key and doc.get("sha256") == hashlib.sha256(data).hexdigest():
                with np.load(io.BytesIO(data), allow_pickle=False) as z:
                    return SteadyTable(*(np.array(z[k]) for k in ("q_W", "T_wb_K", "values", "T_fs_K", "y_valve",
                                                                  "T_sec")))
        except (CacheTrustError, OSError, ValueError, KeyError, AttributeError):
            pass
    table = steady_table(params)
    if trusted:
        buf = io.BytesIO()
        np.savez(buf, **table.arrays())
        data = buf.getvalue()
        try:
            for path, blob in ((npz, data), (rec, json.dumps({"key": key, "plant": params.name, "sha256":
                                                              hashlib.sha256(data).hexdigest()}).encode())):
                write_entry(path, blob)
        except OSError:  # an unwritable cache is skipped: the table is recomputed next time
            pass
    return table


def _bilinear(xg: np.ndarray, yg: np.ndarray, table: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Bilinear interpolation of ``table`` (shape (nx, ny, ...)) at points ``(x, y)`` (shape (k,)), clamped to the
    grid; returns shape (k, ...).
    """
    i = np.clip(np.searchsorted(xg, x, side="right") - 1, 0, len(xg) - 2)
    j = np.clip(np.searchsorted(yg, y, side="right") - 1, 0, len(yg) - 2)
    fx = np.clip((x - xg[i]) / (xg[i + 1] - xg[i]), 0.0, 1.0)
    fy = np.clip((y - yg[j]) / (yg[j + 1] - yg[j]), 0.0, 1.0)
    extra = (slice(None),) + (None,) * (table.ndim - 2)
    fx, fy = fx[extra], fy[extra]
    return ((1 - fx) * (1 - fy) * table[i, j] + fx * (1 - fy) * table[i + 1, j]
            + (1 - fx) * fy * table[i, j + 1] + fx * fy * table[i + 1, j + 1])


class QuasiSteadyPlant:
    """Quasi-steady cooling plant with the FMU plant's outputs (module docstring), for fast outline studies.

    Parameters
    ----------
    params : PlantParams | str | Path
        Plant description (a generated plant; a site FMU has no analytic steady state).
    step_s : float
        Communication step [s] (> 0).
    tau_s : float
        Time constant of the first-order lag applied to every non-total output [s]; 0 (default) is none.
    cache_dir : str | Path | None
        Cache folder of the table (default: the FMU cache).
    table : SteadyTable | None
        Use this table instead of the cached one (tests).

    Attributes
    ----------
    output_names, output_units : list of str
        As :class:`cooling_fmu.plant.CoolingPlant` (the shipped variable map, ``maps/hpctwin_plant.yaml``).
    fmu_path : pathlib.Path
        The table's cache file (what this plant evaluates; recorded by the run like the FMU's path).
    fmu_sha256 : str
        The table's key (plant hash, grid and this module's source).
    model : str
        ``"fast"``.

    Raises
    ------
    ValueError
        If ``step_s`` is not positive and finite or ``tau_s`` is negative.
    """

    model = "fast"
    #: The plant takes the outdoor dry-bulb (``T_db_K`` of :meth:`run`) for its evaporation.
    uses_dry_bulb = True
    #: The plant takes the air side's heat into its towers (``Q_air_side_W`` of :meth:`run`).
    uses_air_side_heat = True
    #: the fan demand does not depend on the cells commanded (:class:`cooling_fmu.supervisory.StagedPlant` stages a
    #: whole block from one evaluation)
    demand_independent_of_cells = True

    def __init__(self, params: PlantParams | str | Path, step_s: float = 15.0, tau_s: float = 0.0,
                 cache_dir: str | Path | None = None, table: SteadyTable | None = None) -> None:
        self.params = params if isinstance(params, PlantParams) else load_plant_params(params)
        if self.params.heat_rejection != "towers" and self.params.chiller.enabled:
            raise ValueError(f"plant {self.params.name}: the fast plant of a {self.params.heat_rejection} bank "
                             "has no trim chiller (its table is on the coil air, the chiller needs the wet-bulb); "
                             "use the FMU (--cooling fmu)")
        if not (np.isfinite(step_s) and step_s > 0):
            raise ValueError(f"step_s must be positive and finite, got {step_s}")
        if not (np.isfinite(tau_s) and tau_s >= 0):
            raise ValueError(f"tau_s must be >= 0 s, got {tau_s}")
        self.step_s, self.tau_s = float(step_s), float(tau_s)
        self.n_cdu = n = self.params.n_cdu
        vm = load_variable_map(n, None)
        self.output_names = [e.name for e in vm.outputs]
        self.output_units = [e.unit for e in vm.outputs]
        idx = {nm: i for i, nm in enumerate(self.output_names)}
        self._idx = idx
        self.table = table if table is not None else cached_steady_table(self.params, cache_dir)
        from .build import default_cache_dir
        from .modelica import model_name_for

        key = _table_key(self.params)
        folder = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self.fmu_path = folder / f"{model_name_for(self.params)}-{key[:16]}.qss.npz"
        self.fmu_sha256 = key
        self._col_table = np.array([idx[nm] for nm in TABLE_OUTPUTS])
        self._cdu_table = np.stack([self.table.y_valve, self.table.T_sec], axis=-1)
        cdu = lambda base: np.array([idx[f"{base}[{i}]"] for i in range(1, n + 1)])  # noqa: E731
        self._c = {b: cdu(b) for b in ("T_sec_sup", "T_sec_ret", "m_flow_sec", "m_flow_fac_cdu", "y_valve",
                                       "Q_flow_hx", "P_pump_sec", "E_pump_sec_out")}
        self._i_P = idx["P_cooling"]
        self._totals = [(idx[e], idx[p]) for e, p in _TOTALS.items()] + [
            (int(e), int(p)) for e, p in zip(self._c["E_pump_sec_out"], self._c["P_pump_sec"])]
        self._i_heat = idx["E_heat_in"]
        self._i_air_in = idx["E_air_side_in"]
        self._e_cols = np.array([e for e, _ in self._totals])
        self._p_cols = np.array([pc for _, pc in self._totals])
        self._total_cols = np.array([e for e, _ in self._totals] + [self._i_heat, self._i_air_in])
        self._lag_mask = np.ones(len(self.output_names), dtype=bool)
        self._lag_mask[self._total_cols] = False
        self._y: np.ndarray | None = None
        self._heat_prev = 0.0
        self._memo: dict[bytes, np.ndarray] = {}  # _base_outputs of the previous call's rows

    @property
    def P_cooling_index(self) -> int:
        """int: column of ``P_cooling`` [W]."""
        return self._i_P

    def index(self, name: str) -> int:
        """Column of output ``name`` (KeyError if absent)."""
        return self._idx[name]

    def steady_outputs(self, heat_w: np.ndarray, T_wb_K: np.ndarray, n_cells_cmd: float | np.ndarray = 0.0,
                       T_db_K: np.ndarray | None = None, Q_air_side_W: np.ndarray | None = None) -> np.ndarray:
        """Quasi-steady outputs (totals left at 0) of each row, vectorised.

        Parameters
        ----------
        heat_w : np.ndarray
            Heat per CDU [W], >= 0, shape (m, n_cdu).
        T_wb_K : np.ndarray
            Wet-bulb [K], shape (m,).
        n_cells_cmd : float | np.ndarray
            Tower cells commanded by the supervisory stager (0 = the algebraic staging of the table), scalar or
            shape (m,).
        T_db_K : np.ndarray | None
            Dry-bulb [K], shape (m,); None: saturated air (``T_db = T_wb``). The evaporation is recomputed from the
            interpolated tower state with it (:func:`~cooling_fmu.components.tower.exit_air`).
        Q_air_side_W : np.ndarray | None
            Heat of the air side into the tower water [W], shape (m,); None: 0. At the facility set point the tower
            side is exact with it (:func:`cooling_fmu.modelica.setpoint_tower_side`); elsewhere the plant-level
            table is read at the mean CDU heat plus this heat shared over the CDUs (an approximation: the heat enters
            the tower water, not the facility loop).

        Returns
        -------
        ndarray, shape (m, n_outputs)
            Outputs in :attr:`output_names` order; ``P_cooling`` the sum of its components.

        Raises
        ------
        PlantError
            If the heat is negative or not finite, the mean heat per CDU is beyond the table (1.5 x nominal) or
            the wet-bulb outside -40 .. 40 degC.
        """
        q = np.asarray(heat_w, dtype=float)
        tw_in = np.asarray(T_wb_K, dtype=float)
        tw = self._table_air(tw_in, T_db_K)
        why = _input_error(self, q, tw)
        if why is not None:
            raise PlantError(why)
        m = q.shape[0]
        qa = np.zeros(m) if Q_air_side_W is None else np.asarray(Q_air_side_W, dtype=float)
        out = self._base_outputs(q, tw, qa)
        p, t, idx, cp = self.params, self.params.tower, self._idx, self.params.cp_water_J_kgK
        m_cw = out[:, idx["m_flow_cw"]]
        P_sec = out[:, self._c["P_pump_sec"]]
        cmd = np.broadcast_to(np.asarray(n_cells_cmd, dtype=float), (m,))
        if np.any(cmd >= 0.5):
            self._staged_fans(out, cmd)
        # evaporation from the tower state of each row (the air the fans move) and its dry-bulb (the one exit-air
        # relation)
        T_tin = pipe.leaving_temperature(out[:, idx["T_cw_ret"]], -(out[:, idx["Q_flow_chiller"]]
                                                                  + out[:, idx["P_chiller"]] + qa), m_cw, cp)
        if p.heat_rejection == "towers":
            m_air, T_ao, W_in, W_out = tower.exit_air(t.p_atm_Pa, tw, T_tin,
                                                      out[:, idx["y_fan"]] * p.m_air_nominal_kg_s,
                                                      out[:, idx["Q_flow_tower"]], T_db_K)
            evap = m_air * (W_out - W_in)
            drift_fraction = t.drift_fraction
        else:  # the dry-cooler bank: sensible air from the coil air, the pads' water (the mirror's relations)
            m_air = out[:, idx["y_fan"]] * p.dry_cooler.m_air_nominal_kg_s
            T_ao = tw + np.maximum(0.0, out[:, idx["Q_flow_tower"]]) / (m_air * drycooler.CP_AIR_J_KGK)
            evap = drycooler.pad_evaporation_kg_s(m_air, tw_in if T_db_K is None else np.asarray(T_db_K, float), tw)
            drift_fraction = 0.0
        drift, blow, makeup = tower.water_use(evap, m_cw, drift_fraction, t.cycles_of_concentration)
        for name, v in (("m_flow_air", m_air), ("T_air_out", T_ao), ("m_flow_evap", evap), ("m_flow_drift", drift),
                        ("m_flow_blowdown", blow), ("m_flow_makeup", makeup)):
            out[:, idx[name]] = v
        out[:, self._i_P] = (P_sec.sum(axis=1) + out[:, idx["P_pump_fac"]] + out[:, idx["P_pump_tower"]]
                             + out[:, idx["P_fan_tower"]] + out[:, idx["P_chiller"]])
        return out

    def fan_demand(self, heat_w: np.ndarray, T_wb_K: np.ndarray, T_db_K: np.ndarray | None = None,
                   Q_air_side_W: np.ndarray | None = None) -> np.ndarray:
        """The fan demand ``y_fan_demand`` of each row: column ``y_fan_demand`` of :meth:`steady_outputs`, bit for bit,
        without the cells' staging and the evaporation (which do not change it); what
        :class:`cooling_fmu.supervisory.StagedPlant` stages a block from.

        Parameters
        ----------
        heat_w : np.ndarray
            Heat per CDU [W], shape (m, n_cdu).
        T_wb_K : np.ndarray
            Wet-bulb [K], shape (m,).
        T_db_K : np.ndarray | None
            Dry-bulb [K] (not used by the demand; accepted for the same call as :meth:`steady_outputs`).
        Q_air_side_W : np.ndarray | None
            Air-side heat into the towers [W], shape (m,); None: 0.

        Returns
        -------
        ndarray
            Shape (m,).

        Raises
        ------
        PlantError
            As :meth:`steady_outputs`.
        """
        q = np.asarray(heat_w, dtype=float)
        tw = self._table_air(np.asarray(T_wb_K, dtype=float), T_db_K)
        why = _input_error(self, q, tw)
        if why is not None:
            raise PlantError(why)
        qa = np.zeros(q.shape[0]) if Q_air_side_W is None else np.asarray(Q_air_side_W, dtype=float)
        return self._base_outputs(q, tw, qa)[:, self._idx["y_fan_demand"]]

    def _table_air(self, T_wb_K: np.ndarray, T_db_K: np.ndarray | None) -> np.ndarray:
        """The table's air axis for each row: the wet-bulb (towers) or the coil air of a dry or hybrid bank."""
        if self.params.heat_rejection == "towers":
            return T_wb_K
        return np.asarray(coil_air_temperature_k(self.params, T_wb_K, T_db_K), dtype=float)

    def _base_outputs(self, q: np.ndarray, tw: np.ndarray, qa: np.ndarray) -> np.ndarray:
        """The outputs of each row before the cells' staging (the table, the CDUs, the pumps and the set-point
        fans), memoised over the rows of the previous call: a row depends only on its own heat, wet-bulb and
        air-side heat, and :class:`cooling_fmu.supervisory.StagedPlant` evaluates every block twice (the fan demand
        for the stager, then the plant with its commands), so the second evaluation reads the first's rows (the
        same arithmetic: bit for bit).
        """
        m = q.shape[0]
        keys = np.ascontiguousarray(np.column_stack((q, tw, qa)))
        kb = [keys[i].tobytes() for i in range(m)]
        memo = self._memo
        out = np.empty((m, len(self.output_names)))
        first: dict[bytes, int] = {}
        todo, copy_from = [], []
        for i, k in enumerate(kb):
            row = memo.get(k)
            if row is not None:
                out[i] = row
            elif k in first:
                copy_from.append((i, first[k]))
            else:
                first[k] = i
                todo.append(i)
        if todo:
            r = np.asarray(todo)
            out[r] = _base_rows(self, q[r], tw[r], qa[r])
        for i, j in copy_from:
            out[i] = out[j]
        base = out.copy()
        self._memo = dict(zip(kb, base))
        return out

    def _staged_fans(self, out: np.ndarray, n_cmd: np.ndarray) -> None:
        """Fans of the commanded cells (in place): the FMU's relations :func:`~cooling_fmu.components.tower.cells_in_service`
        and :func:`~cooling_fmu.components.tower.fan_speed` at the tabulated demand. Where the commanded cells at
        full speed cannot move the demand (the FMU's supply would rise until the stager adds a cell), the fast plant
        runs the fewest cells that can (a limit: the excursion is not simulated). Below the floor of the commanded
        cells the air is their minimum speed (the bypass holds the water; its heat is the table's).
        """
        p, t, idx = self.params, self.params.tower, self._idx
        N = t.n_cells
        y = out[:, idx["y_fan_demand"]]
        n_on = np.where(n_cmd >= 0.5, np.clip(n_cmd, 1.0, N),
                        tower.cells_running(y, N, t.y_fan_min))
        n_on = np.maximum(n_on, np.ceil(y * N - 1e-9))
        _, y_air = tower.fan_speed(y, n_on, N, t.y_fan_min)
        out[:, idx["n_cells_on"]] = n_on
        out[:, idx["y_fan"]] = y_air
        out[:, idx["m_flow_air"]] = y_air * p.m_air_nominal_kg_s
        out[:, idx["P_fan_tower"]] = tower.fan_power_W(y_air, n_on, N, t.P_fan_cell_nominal_W)

    def initialize(self, heat_w: np.ndarray, T_wb_K: float, T_db_K: float | None = None,
                   Q_air_side_W: float | None = None) -> np.ndarray:
        """Start at the quasi-steady state of the first step's inputs, every running total 0.

        Parameters
        ----------
        heat_w : np.ndarray
            Heat per CDU [W], shape (n_cdu,).
        T_wb_K : float
            Wet-bulb [K].
        T_db_K : float | None
            Dry-bulb [K]; None: saturated air.
        Q_air_side_W : float | None
            Air-side heat into the towers [W]; None: 0.

        Returns
        -------
        ndarray, shape (n_outputs,)
            Outputs at time 0.
        """
        y = self.steady_outputs(np.asarray(heat_w, dtype=float)[None, :], np.array([float(T_wb_K)]),
                                T_db_K=None if T_db_K is None else np.array([float(T_db_K)]),
                                Q_air_side_W=None if Q_air_side_W is None else np.array([float(Q_air_side_W)]))[0]
        self._y = y
        self._heat_prev = float(np.sum(heat_w))
        return y.copy()

    def run(self, heat_w: np.ndarray, T_wb_K: np.ndarray, n_cells_cmd: float | np.ndarray = 0.0,
            T_db_K: np.ndarray | None = None, Q_air_side_W: np.ndarray | None = None) -> np.ndarray:
        """Advance one step per row (the :class:`cooling_fmu.coupling.Plant` protocol).

        Parameters
        ----------
        heat_w : np.ndarray
            Average heat per CDU of each step [W], shape (m, n_cdu).
        T_wb_K : np.ndarray
            Wet-bulb of each step [K], shape (m,).
        n_cells_cmd : float | np.ndarray
            Tower cells commanded by the supervisory stager (:mod:`cooling_fmu.supervisory`), scalar or shape (m,);
            0 = none.
        T_db_K : np.ndarray | None
            Dry-bulb of each step [K], shape (m,); None: saturated air.
        Q_air_side_W : np.ndarray | None
            Air-side heat into the towers of each step [W], shape (m,); None: 0.

        Returns
        -------
        ndarray, shape (m, n_outputs)
            Outputs at the end of each step; running totals are trapezoidal integrals.

        Raises
        ------
        PlantError
            If the inputs are outside the table (:meth:`steady_outputs`); no step of the call is completed.
        RuntimeError
            If called before :meth:`initialize`.
        """
        if self._y is None:
            raise RuntimeError("QuasiSteadyPlant.run() before initialize()")
        q = np.asarray(heat_w, dtype=float)
        m = q.shape[0]
        if m == 0:
            return np.zeros((0, len(self.output_names)))
        tw = np.asarray(T_wb_K, dtype=float)
        td = None if T_db_K is None else np.asarray(T_db_K, dtype=float)
        qa = None if Q_air_side_W is None else np.asarray(Q_air_side_W, dtype=float)
        # the kernel hands over runs of identical rows: evaluate each run once, then repeat it
        cmd = np.broadcast_to(np.asarray(n_cells_cmd, dtype=float), (m,))
        new = np.ones(m, dtype=bool)
        if m > 1:
            new[1:] = np.any(q[1:] != q[:-1], axis=1) | (tw[1:] != tw[:-1]) | (cmd[1:] != cmd[:-1])
            if td is not None:
                new[1:] |= td[1:] != td[:-1]
            if qa is not None:
                new[1:] |= qa[1:] != qa[:-1]
        starts = np.flatnonzero(new)
        try:
            s = self.steady_outputs(q[starts], tw[starts], cmd[starts], None if td is None else td[starts],
                                    None if qa is None else qa[starts])
            if starts.size < m:
                s = np.repeat(s, np.diff(np.append(starts, m)), axis=0)
        except PlantError as exc:
            raise PlantError(str(exc), np.zeros((0, len(self.output_names)))) from None
        prev = self._y
        if self.tau_s > 0.0:  # first-order lag y_k = s_k + (y_{k-1} - s_k) a
            a = float(np.exp(-self.step_s / self.tau_s))
            lagged = s[:, self._lag_mask]
            y = prev[self._lag_mask].copy()
            for k in range(m):
                y = lagged[k] + (y - lagged[k]) * a
                lagged[k] = y
            s[:, self._lag_mask] = lagged
        dt = self.step_s
        pw = np.concatenate((prev[self._p_cols][None, :], s[:, self._p_cols]))  # trapezoidal running totals
        s[:, self._e_cols] = prev[self._e_cols] + np.cumsum(0.5 * (pw[1:] + pw[:-1]), axis=0) * dt
        heat = q.sum(axis=1)  # the heat input is held over each step: its integral is exact
        s[:, self._i_heat] = prev[self._i_heat] + np.cumsum(heat) * dt
        s[:, self._i_air_in] = prev[self._i_air_in] + (np.cumsum(qa) * dt if qa is not None else 0.0)
        self._y = s[-1].copy()
        return s

    def close(self) -> None:
        """Nothing to release (the protocol's ``close``, for symmetry with the FMU plant)."""

    def __enter__(self) -> QuasiSteadyPlant:
        """Context manager: returns self."""
        return self

    def __exit__(self, *exc) -> None:
        """Context manager: :meth:`close`."""
        self.close()


def _input_error(plant: QuasiSteadyPlant, q: np.ndarray, tw: np.ndarray) -> str | None:
    """Why heat or wet-bulb are outside the table (:meth:`QuasiSteadyPlant.steady_outputs`), or None when they are inside."""
    tab = plant.table
    if q.size and not (np.all(np.isfinite(q)) and q.min() >= 0.0):
        return "fast plant: heat per CDU must be finite and >= 0 W"
    qm = q.mean(axis=1) if q.size else np.zeros(0)
    if qm.size and (qm.max() > tab.q_W[-1] * (1 + 1e-12) or q.max() > tab.q_W[-1] * (1 + 1e-12)):
        return (f"fast plant: heat per CDU {q.max():.0f} W is beyond the table "
                f"({tab.q_W[-1]:.0f} W = 1.5 x cdu.Q_flow_nominal_W); use cooling.model = 'fmu'")
    if tw.size and not (np.all(np.isfinite(tw)) and tw.min() >= tab.T_wb_K[0] - 1e-9
                        and tw.max() <= tab.T_wb_K[-1] + 1e-9):
        what = "wet-bulb" if plant.params.heat_rejection == "towers" else "coil air"
        return (f"fast plant: {what} {tw.min() - 273.15:.1f} .. {tw.max() - 273.15:.1f} degC outside "
                f"the table's {tab.T_wb_K[0] - 273.15:.0f} .. {tab.T_wb_K[-1] - 273.15:.0f} degC; use "
                "cooling.model = 'fmu'")
    return None


def _base_rows(plant: QuasiSteadyPlant, q: np.ndarray, tw: np.ndarray, qa: np.ndarray) -> np.ndarray:
    """:meth:`QuasiSteadyPlant._base_outputs` of rows not seen in the previous call (a function of the plant:
    the class stays under the size limit).
    """
    tab = plant.table
    m = q.shape[0]
    qm = q.mean(axis=1)
    out = np.zeros((m, len(plant.output_names)))
    vals = _bilinear(tab.q_W, tab.T_wb_K, tab.values, qm + qa / plant.n_cdu, tw)
    out[:, plant._col_table] = vals
    T_fs = vals[:, TABLE_OUTPUTS.index("T_fac_sup")]
    Q, m_fac, w_cw, _, Qp_cw = _cdu_and_flow_columns(plant, out, q, T_fs)
    _solve_regimes(plant, out, q, tw, qa, Q, m_fac, w_cw, Qp_cw)
    return out


def _cdu_and_flow_columns(plant: QuasiSteadyPlant, out: np.ndarray, q: np.ndarray,
                          T_fs: np.ndarray, exact: bool = False) -> tuple:
    """Write the per-CDU columns and the facility / tower-water flows and pumps of each row at the facility supply
    ``T_fs`` (in place), and return what the tower side needs.

    Per CDU: the valve and secondary return temperature from the CDU table at (own heat, ``T_fs``), the secondary
    flow and pumps in closed form (:func:`~cooling_fmu.components.pump.secondary_flow_fraction`,
    :func:`~cooling_fmu.components.pump.pump_power_W`); the facility flow is the sum of the valves
    (:func:`cooling_fmu.modelica.facility_flows`), not the plant-level table's equal shares.

    Parameters
    ----------
    plant : QuasiSteadyPlant
        The fast plant (its parameters, tables and column indices).
    out : np.ndarray
        Output rows, shape (m, n_outputs), written in place.
    q : np.ndarray
        Heat per CDU [W], shape (m, n_cdu).
    T_fs : np.ndarray
        Facility supply [K], shape (m,).
    exact : bool
        Solve the valves (:func:`cooling_fmu.modelica._valves_at`, the steady state's bisection) instead of reading
        the CDU table; for the few rows between the table's regimes (:func:`_solve_regimes`): the chiller's load is
        the small difference of the facility heat and the IHX heat and would carry the valves' interpolation error
        about 100-fold.

    Returns
    -------
    tuple of ndarray
        ``(Q_fac [W], m_fac [kg/s], w_cw [1], m_cw [kg/s], Q_pump_cw [W])``, each shape (m,): the facility heat (CDU
        heat exchangers + facility pumps' heat) and the flows of :func:`cooling_fmu.modelica.facility_flows`.
    """
    tab, p, c = plant.table, plant.params, plant.params.cdu
    cp = p.cp_water_J_kgK
    if exact:
        y_v, T_sec = _valves_at(p, q, T_fs[:, None], ytol=VALVE_YTOL)
    else:
        both = _bilinear(tab.q_W, tab.T_fs_K, plant._cdu_table, q.ravel(), np.repeat(T_fs, plant.n_cdu))
        y_v, T_sec = both[:, 0].reshape(q.shape), both[:, 1].reshape(q.shape)
    y_sec = pump.secondary_flow_fraction(q, c.Q_flow_nominal_W, p.y_sec_floor)
    m_sec = y_sec * c.m_flow_sec_nominal_kg_s
    P_sec = pump.pump_power_W(c.pump, c.m_flow_sec_nominal_kg_s, p.rho_water_kg_m3, y_sec)
    cc = plant._c
    out[:, cc["T_sec_ret"]] = T_sec
    out[:, cc["m_flow_sec"]] = m_sec
    out[:, cc["m_flow_fac_cdu"]] = y_v * c.m_flow_fac_nominal_kg_s
    out[:, cc["y_valve"]] = y_v
    Q_hx = cdu_loop_heat_W(p, q)
    out[:, cc["T_sec_sup"]] = T_sec - Q_hx / (m_sec * cp)
    out[:, cc["Q_flow_hx"]] = Q_hx
    out[:, cc["P_pump_sec"]] = P_sec
    idx = plant._idx
    f, tl = p.facility, p.tower_loop
    m_fac, w_cw, m_cw, Qp_fac, Qp_cw = facility_flows(p, y_v)
    w = m_fac / p.m_flow_fac_design_kg_s
    r_dp = valve.reset_factor(y_v, f.dp_reset_min if f.dp_reset else 1.0)
    out[:, idx["m_flow_fac"]] = m_fac
    out[:, idx["m_flow_cw"]] = m_cw
    out[:, idx["P_pump_fac"]] = pump.pump_power_W(f.pump, p.m_flow_fac_design_kg_s, p.rho_water_kg_m3, w, r_dp)
    out[:, idx["P_pump_tower"]] = pump.pump_power_W(tl.pump, tl.m_flow_nominal_kg_s, p.rho_water_kg_m3, w_cw)
    out[:, idx["Q_flow_pump_heat"]] = (Q_hx - q).sum(axis=1) + Qp_fac + Qp_cw
    return Q_hx.sum(axis=1) + Qp_fac, m_fac, w_cw, m_cw, Qp_cw


def _solve_regimes(plant: QuasiSteadyPlant, out: np.ndarray, q: np.ndarray, tw: np.ndarray, qa: np.ndarray,
                   Q: np.ndarray, m_fac: np.ndarray, w_cw: np.ndarray, Qp_cw: np.ndarray) -> None:
    """Redo each row's plant-level state at its own facility flow, in the regime of
    :func:`cooling_fmu.modelica.steady_states` the row is in (in place).

    The plant-level table is read at the mean CDU heat and assumes equal shares, which unequal CDU loads do not
    follow (their valves set another facility flow, so another return temperature, IHX heat and chiller load); and
    it interpolates linearly across the regime switches (fans at their floor / facility supply at its set point /
    fans at full air, and the trim chiller's dead band between the fans' set point and the chiller's), where a row
    reads a supply between two regimes that is neither's. So:

    1. Rows the table has at the set point: regime A in closed form at the row's own flows (:func:`_setpoint_rows`).
    2. Rows the table has at the fan floor below the set point keep the table (regime B, interpolated inside it).
    3. Every other row with heat is tried in regime A at the set point with its valves there; if its fans would
       need more than full air it is tried at the chiller's set point (:func:`_chiller_rows`), and otherwise solved
       at full air for the supply ``T = T_out(T)`` (:func:`_fixed_point_rows`: the dead band, a chiller at its
       capacity, or a plant without one); if its fans would go below their floor, at the floor. A row none of
       these solves keeps the table.

    Each is the steady state's own derivation at the row (:func:`cooling_fmu.modelica.setpoint_tower_side`,
    :func:`cooling_fmu.modelica.tower_side_at_fan`): one relation, not a second copy.

    Parameters
    ----------
    plant : QuasiSteadyPlant
        The fast plant.
    out : np.ndarray
        Rows of the table and the per-CDU columns at the table's supply, shape (m, n_outputs), written in place.
    q : np.ndarray
        Heat per CDU [W], shape (m, n_cdu).
    tw : np.ndarray
        Wet-bulb (the table's air axis) [K], shape (m,).
    qa : np.ndarray
        Air-side heat into the tower water [W], shape (m,).
    Q : np.ndarray
        Facility heat at the table's supply (CDU heat exchangers + facility pumps' heat) [W], shape (m,).
    m_fac : np.ndarray
        Facility flow at the table's supply [kg/s], shape (m,).
    w_cw : np.ndarray
        Tower-water flow fraction at the table's supply [1], shape (m,).
    Qp_cw : np.ndarray
        Tower pumps' heat at the table's supply [W], shape (m,).
    """
    p, idx = plant.params, plant._idx
    T_set = p.tower.T_fac_sup_set_K
    T_fs, y_tab = out[:, idx["T_fac_sup"]], out[:, idx["y_fan"]]
    heat = Q > 0.0
    settled = np.zeros(out.shape[0], dtype=bool)
    rows = np.flatnonzero(heat & (np.abs(T_fs - T_set) < 1e-9))
    if rows.size:
        sub = out[rows]
        ok, _ = _setpoint_rows(plant, sub, Q[rows], m_fac[rows], w_cw[rows], tw[rows], Qp_cw[rows], qa[rows])
        out[rows[ok]] = sub[ok]
        settled[rows[ok]] = True
    floor = (y_tab <= p.y_fan_floor + 1e-12) & (T_fs < T_set - 1e-9)
    rows = np.flatnonzero(heat & ~settled & ~floor)
    if rows.size == 0:
        return
    sub, qr, twr, qar = out[rows], q[rows], tw[rows], qa[rows]
    Qs, ms, wcs, _, Qps = _cdu_and_flow_columns(plant, sub, qr, np.full(rows.size, T_set))
    done, y_req = _setpoint_rows(plant, sub, Qs, ms, wcs, twr, Qps, qar)
    cold = ~done & (y_req < p.y_fan_floor)
    hot = ~done & ~cold  # above full air, or no finite answer
    if p.chiller.enabled and np.any(hot):
        r = np.flatnonzero(hot)
        part = sub[r]
        ok = _chiller_rows(plant, part, qr[r], twr[r], qar[r])
        sub[r[ok]] = part[ok]
        done[r[ok]] = True
        hot[r[ok]] = False
    # the fixed point on the side of the set point each saturation rests on (steady_states' brackets, narrowed
    # where the root is known to lie: a chiller that did not hold its set point is idle there, so a dead-band root
    # is below it; the IHX bypass keeps the supply at the fan floor at or above T_ihx_bypass_K, so below that
    # T - T_out(T) < 0). twr is the table's air axis: the wet-bulb, or a dry bank's coil air
    n = rows.size
    wide = np.maximum(T_set, twr + 50.0)
    T_band = chiller.chiller_setpoint_K(p) if p.chiller.enabled else wide
    for sel, y, lo, hi in ((hot, 1.0, np.full(n, T_set), np.minimum(T_band, wide)),
                           (hot, 1.0, np.full(n, T_set), wide),
                           (cold, p.y_fan_floor, np.maximum(twr - 50.0, p.T_ihx_bypass_K - 0.01), np.full(n, T_set))):
        sel = sel & ~done
        if np.any(sel):
            r = np.flatnonzero(sel)
            part = sub[r]
            ok = _fixed_point_rows(plant, part, qr[r], twr[r], qar[r], y, lo[r], hi[r])
            sub[r[ok]] = part[ok]
            done[r[ok]] = True
    out[rows[done]] = sub[done]


def _fan_columns(plant: QuasiSteadyPlant, out: np.ndarray, y: np.ndarray) -> None:
    """Write the bank's fan columns of each row at the air-flow fraction ``y`` [1], shape (m,) (in place): the
    algebraic staging of the generated model, :func:`~cooling_fmu.components.tower.cells_running` and the fan
    affinity law :func:`~cooling_fmu.components.tower.fan_power_W`.
    """
    p, t, idx = plant.params, plant.params.tower, plant._idx
    y = np.broadcast_to(np.asarray(y, dtype=float), (out.shape[0],))
    n_on = np.asarray(tower.cells_running(y, t.n_cells, t.y_fan_min), dtype=float)
    for name, v in (("y_fan", y), ("y_fan_demand", y), ("m_flow_air", y * p.m_air_nominal_kg_s),
                    ("n_cells_on", n_on), ("P_fan_tower", tower.fan_power_W(y, n_on, t.n_cells, t.P_fan_cell_nominal_W))):
        out[:, idx[name]] = v


def _setpoint_rows(plant: QuasiSteadyPlant, out: np.ndarray, Q: np.ndarray, m: np.ndarray, w_cw: np.ndarray,
                   T_wb: np.ndarray, Qp_cw: np.ndarray, Q_air: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Regime A of :func:`cooling_fmu.modelica.steady_states` at each row's own flows: the tower side in closed form
    (:func:`cooling_fmu.modelica.setpoint_tower_side`, Braun's tower solved for the fan air,
    :func:`~cooling_fmu.components.tower.braun_fan_fraction`, to :data:`FAN_YTOL`), written (in place) where the
    fans can hold the set point (``y_fan_floor <= y <= 1``).

    Parameters
    ----------
    plant : QuasiSteadyPlant
        The fast plant.
    out : np.ndarray
        Rows whose per-CDU columns are at the set point, shape (m, n_outputs).
    Q : np.ndarray
        Facility heat (CDU heat exchangers + facility pumps' heat) [W], shape (m,).
    m : np.ndarray
        Facility flow [kg/s], shape (m,).
    w_cw : np.ndarray
        Tower-water flow fraction [1], shape (m,).
    T_wb : np.ndarray
        Wet-bulb [K], shape (m,).
    Qp_cw : np.ndarray
        Tower pumps' heat [W], shape (m,).
    Q_air : np.ndarray
        Air side's heat into the tower entering water [W], shape (m,).

    Returns
    -------
    tuple of ndarray
        ``(ok, y_req)``: the rows written, bool, shape (m,), and the fan air each row needs [1], shape (m,).
    """
    p = plant.params
    idx = plant._idx
    T_ret, T_cw, T_cw_ret, y = setpoint_tower_side(p, Q, m, w_cw, T_wb, Qp_cw, Q_air, FAN_YTOL)
    ok = np.isfinite(y) & (y >= p.y_fan_floor) & (y <= 1.0)
    k = np.flatnonzero(ok)
    m_cw = w_cw[k] * p.tower_loop.m_flow_nominal_kg_s
    sub = out[k]
    for name, v in (("T_fac_sup", np.full(k.size, p.tower.T_fac_sup_set_K)), ("T_fac_ret", T_ret[k]),
                    ("T_cw_sup", T_cw[k]), ("T_tower_out", T_cw[k] - Qp_cw[k] / (m_cw * p.cp_water_J_kgK)),
                    ("T_cw_ret", T_cw_ret[k]), ("Q_flow_ihx", Q[k]), ("Q_flow_chiller", np.zeros(k.size)),
                    ("P_chiller", np.zeros(k.size)), ("Q_flow_tower", Q[k] + Qp_cw[k] + Q_air[k])):
        sub[:, idx[name]] = v
    _fan_columns(plant, sub, y[k])
    out[k] = sub
    return ok, y


def _tower_side_columns(plant: QuasiSteadyPlant, out: np.ndarray, T_fs: np.ndarray, side: tuple, m: np.ndarray,
                        mc: np.ndarray, Tw: np.ndarray, Qp: np.ndarray, Qa: np.ndarray, y: float) -> None:
    """Write the facility and tower-water columns of each row from :func:`cooling_fmu.modelica.tower_side_at_fan`'s
    ``side`` at the supply ``T_fs`` [K] and fan air ``y`` [1] (in place); ``m``, ``mc`` the facility and tower-water
    flows [kg/s], ``Tw`` the wet-bulb [K], ``Qp`` the tower pumps' and ``Qa`` the air side's heat [W], shape (m,).
    The chiller's power and condenser heat from :func:`~cooling_fmu.components.chiller.trim_chiller`.
    """
    p, idx = plant.params, plant._idx
    T_ret, T_cw, T_ihx, Q_ch, _ = side
    cp = p.cp_water_J_kgK
    q_ihx = m * cp * (T_ret - T_ihx)
    _, P_ch, _, Q_cond = chiller.trim_chiller(p, m, T_ihx, Tw, T_cw)
    for name, v in (("T_fac_sup", T_fs), ("T_fac_ret", T_ret), ("T_cw_sup", T_cw),
                    ("T_tower_out", T_cw - Qp / (mc * cp)), ("T_cw_ret", T_cw + q_ihx / (mc * cp)),
                    ("Q_flow_ihx", q_ihx), ("Q_flow_chiller", Q_ch), ("P_chiller", P_ch),
                    ("Q_flow_tower", q_ihx + Q_cond + Qa + Qp)):
        out[:, idx[name]] = v
    _fan_columns(plant, out, np.full(out.shape[0], y))


def _loop_at(plant: QuasiSteadyPlant, out: np.ndarray, q: np.ndarray, tw: np.ndarray, qa: np.ndarray,
             T_fs: np.ndarray, y: float) -> tuple:
    """The steady loop of each row at the facility supply ``T_fs`` [K] and fan air ``y`` [1]: the per-CDU, flow and
    pump columns written into ``out`` (in place, with the steady state's valves, :func:`_cdu_and_flow_columns`) and
    the tower side by :func:`cooling_fmu.modelica.tower_side_at_fan` (its basin by regula falsi to
    :data:`BASIN_XTOL_K`); what :func:`_chiller_rows` tries at the chiller's set point and :func:`_fixed_point_rows`
    iterates on.

    Parameters
    ----------
    plant : QuasiSteadyPlant
        The fast plant.
    out : np.ndarray
        Output rows, shape (m, n_outputs), written in place.
    q : np.ndarray
        Heat per CDU [W], shape (m, n_cdu).
    tw : np.ndarray
        Wet-bulb [K], shape (m,).
    qa : np.ndarray
        Air side's heat into the tower water [W], shape (m,).
    T_fs : np.ndarray
        Facility supply [K], shape (m,).
    y : float
        Fan air-flow fraction [1].

    Returns
    -------
    tuple
        ``(m_fac [kg/s], m_cw [kg/s], Q_pump_cw [W], side)``, ``side`` the tuple of ``tower_side_at_fan``.
    """
    Q, m, _, mc, Qp = _cdu_and_flow_columns(plant, out, q, T_fs, exact=True)
    return m, mc, Qp, tower_side_at_fan(plant.params, Q, m, mc, Qp, qa, tw, T_fs, y, BASIN_XTOL_K, regula_falsi=True)


def _chiller_rows(plant: QuasiSteadyPlant, out: np.ndarray, q: np.ndarray, tw: np.ndarray,
                  qa: np.ndarray) -> np.ndarray:
    """Rows at full fan air tried with the trim chiller holding its set point (regime C of
    :func:`cooling_fmu.modelica.steady_states` with the chiller on, :func:`~cooling_fmu.components.chiller
    .chiller_setpoint_K`), written (in place) where it does.

    The valves, the facility flow and the pumps at that supply (:func:`_cdu_and_flow_columns` with the steady
    state's valves: the chiller's load is the small difference of the facility heat and the IHX heat and would carry
    the CDU table's interpolation error about 100-fold), and the tower side by
    :func:`cooling_fmu.modelica.tower_side_at_fan` at ``y_fan = 1`` (the basin by regula falsi to
    :data:`BASIN_XTOL_K`). A row is the chiller's where its leaving water is within 1e-6 K of the set point with a
    positive load.

    Measured (issue 25's power cap, Theta's 6 CDUs at 160 / 174 / 4 x 92 kW, wet-bulb 24.28 degC, the plant sized
    at its design day): the fast plant's cooling power was 43.61 kW (the table read at a 24.35 degC supply between
    a chiller point and a dead-band point) against the analytic steady state's 40.01 kW; 6e-9 relative since
    (tests/unit/test_quasisteady.py).

    Parameters
    ----------
    plant : QuasiSteadyPlant
        The fast plant.
    out : np.ndarray
        Output rows, shape (m, n_outputs).
    q : np.ndarray
        Heat per CDU [W], shape (m, n_cdu).
    tw : np.ndarray
        Wet-bulb [K], shape (m,).
    qa : np.ndarray
        Air side's heat into the tower water [W], shape (m,).

    Returns
    -------
    ndarray
        The rows written, bool, shape (m,).
    """
    T_set = chiller.chiller_setpoint_K(plant.params)
    T_fs = np.full(out.shape[0], T_set)
    sub = out.copy()
    m, mc, Qp, side = _loop_at(plant, sub, q, tw, qa, T_fs, 1.0)
    ok = (np.abs(side[4] - T_set) < 1e-6) & (side[3] > 0.0)
    k = np.flatnonzero(ok)
    if k.size:
        part = sub[k]
        _tower_side_columns(plant, part, T_fs[k], tuple(a[k] for a in side), m[k], mc[k], tw[k], Qp[k], qa[k], 1.0)
        out[k] = part
    return ok


def _fixed_point_rows(plant: QuasiSteadyPlant, out: np.ndarray, q: np.ndarray, tw: np.ndarray, qa: np.ndarray,
                      y: float, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Rows with the fans saturated at ``y`` (1: full air; ``y_fan_floor``: the floor) solved for the facility supply
    ``T = T_out(T)`` (regimes B / C of :func:`cooling_fmu.modelica.steady_states`: the same loop, the steady state's
    valves (:func:`cooling_fmu.modelica._valves_at`; the CDU table's put 5e-5 K on the supply), the tower side by
    :func:`cooling_fmu.modelica.tower_side_at_fan` with its basin by regula falsi), by Illinois regula falsi
    (:func:`~cooling_fmu.components.roots.illinois`) on ``[lo, hi]`` to 1e-9 K; written (in place) where the
    bracket holds a sign change.

    Parameters
    ----------
    plant : QuasiSteadyPlant
        The fast plant.
    out : np.ndarray
        Output rows, shape (m, n_outputs).
    q : np.ndarray
        Heat per CDU [W], shape (m, n_cdu).
    tw : np.ndarray
        Wet-bulb [K], shape (m,).
    qa : np.ndarray
        Air side's heat into the tower water [W], shape (m,).
    y : float
        Fan air-flow fraction [1].
    lo : np.ndarray
        Lower end of the supply bracket [K], shape (m,).
    hi : np.ndarray
        Upper end [K], shape (m,).

    Returns
    -------
    ndarray
        The rows written, bool, shape (m,).
    """
    def g(T, r):  # out[r] is a copy: the trial's columns are not kept
        return T - _loop_at(plant, out[r], q[r], tw[r], qa[r], T, y)[3][4]

    every = np.arange(out.shape[0])
    f_lo, f_hi = g(lo, every), g(hi, every)
    ok = (f_lo < 0.0) & (f_hi >= 0.0)
    T = roots.illinois(g, np.zeros(out.shape[0]), lo, hi, f_lo, f_hi, 1e-9)
    k = np.flatnonzero(ok)
    if k.size:
        part = out[k]
        m, mc, Qp, side = _loop_at(plant, part, q[k], tw[k], qa[k], T[k], y)
        _tower_side_columns(plant, part, T[k], side, m, mc, tw[k], Qp, qa[k], y)
        out[k] = part
    return ok
