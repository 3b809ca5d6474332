"""Plant capacity and sizing figures from the plant's steady state (headroom of a run, the site builder).

The **capacity** of a plant at a wet-bulb ``T_wb`` for a given split of heat over its CDUs (a *heat shape*) is the
largest total heat for which the plant's steady state keeps every CDU's secondary supply within ``tol_K`` of its
set point (``cdu.T_sec_sup_set_K``; default 1 K, the same bound as the run's "hours above set point + 1 K"). It is
computed as the quasi-steady plant (:mod:`cooling_fmu.quasisteady`) does, without its table: the plant-level steady
state at the mean heat per CDU (:func:`cooling_fmu.quasisteady._steady_states`, the derivation of
:func:`cooling_fmu.modelica.analytic_steady_state` vectorised) gives the facility supply temperature, and each CDU's
valve and secondary temperatures follow from its own heat at that facility supply
(:func:`cooling_fmu.modelica._valves_at`). This is evaluated on a fine grid of scale factors of the heat shape up
to 3 x ``cdu.Q_flow_nominal_W`` on the hottest CDU, and the capacity is the first crossing of the bound (linear
between grid points). When nothing in that range crosses it, the capacity is *at least* the range's end and
:attr:`Capacity.at_least` says so. Every load carries the air side's heat into the tower water
(:func:`air_side_heat_w`: the plant's ``tower.Q_air_side_design_W`` in proportion to the load), the heat the towers
are sized for (below); before session 9 the capacity left it out, so a site builder's towers plant was chosen for
less heat than it rejects. With equal heat on every CDU it is the analytic steady state exactly (tested:
the supply sits at set point + ``tol_K`` at the capacity).

Until the component library of plant v5 lands these figures come from today's plant description
(``cooling_fmu/plants/*.toml``) and :mod:`cooling_fmu.quasisteady`.

**One more tower cell** (:func:`with_tower_cells`): the shipped tower is one bank of ``tower.n_cells`` equal cells
whose Merkel number ``NTU_nominal`` holds at full air flow of the whole bank. A bank of ``N + k`` such cells at the
same water flow moves ``(N + k) / N`` times the air, so ``L/G`` falls by ``N / (N + k)`` and the Merkel number
rises as ``NTU ~ (L/G)^-n`` (``tower.n_merkel``; ASHRAE Handbook HVAC Systems & Equipment 2020 ch. 40), i.e.
``NTU_nominal x ((N + k) / N)^n``; the fan power per cell is unchanged.

**Tower sizing for all the heat the towers reject** (:func:`size_tower_ntu`): the bank's rating point is the
tower-water design flow, full fans, the site's design wet-bulb ``tower.T_wb_design_K`` and the design approach
``tower.approach_design_K`` (a cooling-tower rating is flow, range, approach and wet-bulb: CTI ATC-105); the heat
at that point is what the towers reject in the plant's steady state at design heat and design wet-bulb
(:func:`design_tower_heat_w`): the CDUs' rack heat, the shaft work of every pump (CDU, facility, tower water), the
trim chiller's condenser heat (its load, already in the facility heat, plus its compressor and condenser-pump
power) and the air side's heat (``tower.Q_air_side_design_W``). Before this (session 6) the rating used the rack
heat alone, so theta's towers left at a 3.23 K approach at design instead of the sized 3 K. The chiller's power
depends on the tower water, so the size is the fixed point ``NTU = size(Q_tower(NTU))``
(:func:`~cooling_fmu.components.tower.size_ntu_nominal`); the steady heat balance makes ``Q_tower`` the sum of the
heat in, so the fixed point is reached in two or three passes.

**N+1 at design** (issue 22 item 8b; :func:`size_tower_ntu` and :func:`size_ihx_ua` with ``tower.n_cells_standby
= k``): the rating point above is met by ``N - k`` cells, the bank less its standby cells (the bank of ``N - k``
cells at the same water flow: :func:`with_tower_cells` with ``-k``), so one cell out still leaves the design
approach; and the intermediate heat exchanger is sized so that, with those ``N - k`` cells at full fans, the
facility supply is at its set point at design heat and the design wet-bulb: ``UA_ihx`` is the root of
``T_fac_sup(UA_ihx) = tower.T_fac_sup_set_K`` (bisection in ``log UA``; the supply falls monotonically as the IHX
grows). Before this (session 7) the Frontier-like plant had a 3 K tower approach on 25.12 C plus a 2 K IHX
approach: 30.1 C at design with every unit running, against a 29 C set point. A plant whose set point lies below
``T_wb_design + approach`` (a trim chiller's plant: Theta-like, 24 C) has no such IHX: :func:`size_ihx_ua` raises.
The two sizes are coupled (the facility pumps' shaft heat, part of the towers' design heat, depends on how far the
CDU valves open at the facility supply the IHX gives), so :func:`size_towers_and_ihx` takes their joint fixed
point: three passes move ``NTU_nominal`` by 2e-7 on the Frontier-like plant.

**Trim chiller at the design day** (:func:`size_trim_chiller`, :func:`size_towers_and_chiller`): a plant whose
facility set point lies below ``T_wb_design + approach`` (Theta-like: 24 C against the 25.41 C 0.4 % wet-bulb of
Chicago O'Hare, :func:`cooling_fmu.weather.design_conditions`) holds it only with its chiller, so the chiller is
sized there: ``chiller.Q_flow_max_W`` is the smallest reference capacity at which the steady state at design heat,
the air side's design heat and the design wet-bulb, with the design cells (``n_cells - n_cells_standby``) at full
fans, leaves the facility supply at the chiller's set point ``T_fac_sup_set + dT_deadband`` (bisection: the supply
falls as the capacity grows until the chiller holds it). The available capacity is ``Q_flow_max_W x CAPFT`` of the
reference chiller's EnergyPlus curve at that leaving water and the basin's condenser water
(:mod:`cooling_fmu.components.chiller`). The towers' design heat holds the chiller's condenser heat and the chiller's
load the water the towers leave, so the two sizes are a joint fixed point. Before this (session 8) Theta's chiller
was 600 kW (ASSUMPTION "40 % of design heat"): 27.1 C facility supply at design with every unit running.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .params import PlantParams

#: Bisection width [K] of the steady states behind the sizing and N+1 answers (capacity, cells needed, N+1 cases):
#: their figures are read to 0.01 K, and 1e-6 K takes about 4x fewer tower evaluations than adjacent doubles.
SIZING_XTOL_K = 1e-6

__all__ = ["Capacity", "air_side_heat_w", "plant_capacity", "supply_temperatures_K", "with_tower_cells", "tower_cells_needed",
           "design_tower_heat_w", "size_tower_ntu", "size_ihx_ua", "size_towers_and_ihx", "size_trim_chiller",
           "size_towers_and_chiller", "design_cells"]


@dataclasses.dataclass(frozen=True)
class Capacity:
    """The plant's capacity at one wet-bulb for one heat shape.

    Attributes
    ----------
    heat_W : float
        Largest total heat that keeps every CDU supply within ``tol_K`` of its set point [W].
    at_least : bool
        True when the bound was not crossed inside the table's range (the capacity is at least ``heat_W``).
    T_wb_K : float
        Wet-bulb [K].
    tol_K : float
        Tolerance above the supply set point [K].
    worst_cdu : int
        CDU (0-based) whose supply crosses the bound first.
    """

    heat_W: float
    at_least: bool
    T_wb_K: float
    tol_K: float
    worst_cdu: int


def air_side_heat_w(params: PlantParams, heat_W: np.ndarray) -> np.ndarray:
    """Heat the air side puts into the tower water at loads ``heat_W``: the plant's design value
    ``tower.Q_air_side_design_W`` in proportion to the total heat (the one rule of every capacity and sizing
    question, the site builder's towers and dry paths alike).

    ASSUMPTION: proportional to the load; the CRAH coils' heat and fans are (a fixed share of IT power), the
    chilled-water power is at the design wet-bulb's COP, and the electrical chain's no-load losses and lighting,
    a few kW, are taken at the same share.

    Parameters
    ----------
    params : PlantParams
        Plant description (``tower.Q_air_side_design_W`` at design heat ``n_cdu x cdu.Q_flow_nominal_W``).
    heat_W : np.ndarray
        Heat per CDU of each load [W], shape (k, n_cdu).

    Returns
    -------
    ndarray, shape (k,)
        Air side's heat into the tower water [W].
    """
    design = params.n_cdu * params.cdu.Q_flow_nominal_W
    return params.tower.Q_air_side_design_W * np.asarray(heat_W, dtype=float).sum(axis=1) / design


def supply_temperatures_K(params: PlantParams, heat_W: np.ndarray, T_wb_K: float,
                          T_db_K: float | None = None) -> np.ndarray:
    """Steady secondary supply temperature of every CDU for loads ``heat_W`` at one wet-bulb (module docstring),
    with the air side's heat of each load (:func:`air_side_heat_w`) in the tower water.

    Parameters
    ----------
    params : PlantParams
        Plant description.
    heat_W : np.ndarray
        Heat per CDU of each load [W], >= 0, shape (k, n_cdu).
    T_wb_K : float
        Wet-bulb [K].
    T_db_K : float | None
        Dry-bulb [K] (what a dry or hybrid bank works against); None: saturated air (``T_db = T_wb``).

    Returns
    -------
    ndarray, shape (k, n_cdu)
        Secondary supply temperature [K].
    """
    from .modelica import cdu_loop_heat_W, secondary_supply_K, steady_states

    heat = np.asarray(heat_W, dtype=float)
    k, n = heat.shape
    # the facility loop sees the CDUs' total loop heat (rack heat + secondary pump shaft heat, a non-linear function
    # of each CDU's heat): the uniform load with the same total loop heat, by bisection on the monotone relation
    target = cdu_loop_heat_W(params, heat).mean(axis=1)
    lo, hi = np.zeros(k), heat.max(axis=1)
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        low = cdu_loop_heat_W(params, mid) < target
        lo, hi = np.where(low, mid, lo), np.where(low, hi, mid)
    q = 0.5 * (lo + hi)
    x = steady_states(params, np.repeat(q[:, None], n, axis=1), np.full(k, float(T_wb_K)),
                      Q_air_side_W=air_side_heat_w(params, heat), xtol_K=SIZING_XTOL_K,
                      T_db_K=None if T_db_K is None else np.full(k, float(T_db_K)))[0]
    T_fs = np.repeat(x[:, 2 * n], n)
    return secondary_supply_K(params, heat.ravel(), T_fs).reshape(k, n)


def plant_capacity(params: PlantParams, heat_shape_W: np.ndarray, T_wb_K: float, tol_K: float = 1.0,
                   n_grid: int = 600, cache_dir: None = None, T_db_K: float | None = None) -> Capacity:
    """Capacity of the plant at ``T_wb_K`` for heat split over the CDUs as ``heat_shape_W`` (module docstring).

    Parameters
    ----------
    params : PlantParams
        Plant description (a generated plant).
    heat_shape_W : np.ndarray
        Heat per CDU of some load [W], shape (n_cdu,) (only its proportions matter), >= 0 with a positive sum.
    T_wb_K : float
        Wet-bulb [K].
    tol_K : float
        Allowed rise of a CDU secondary supply above its set point [K].
    n_grid : int
        Scale factors tried between 0 and the range's end.
    cache_dir : None
        Unused (kept for callers that pass a cache).
    T_db_K : float | None
        Dry-bulb [K] for a dry or hybrid bank (its design day is the dry-bulb); None: saturated air.

    Returns
    -------
    Capacity
        The capacity.

    Raises
    ------
    ValueError
        If the shape has the wrong length, a negative value or a zero sum.
    """
    shape = np.asarray(heat_shape_W, dtype=float)
    if shape.shape != (params.n_cdu,) or np.any(shape < 0) or not shape.sum() > 0:
        raise ValueError(f"heat shape must have {params.n_cdu} values >= 0 with a positive sum; got {shape}")
    shape = shape / shape.sum()
    f_max = 3.0 * params.cdu.Q_flow_nominal_W / shape.max()  # the range's end for the hottest CDU
    f = np.linspace(0.0, f_max, n_grid)
    T = supply_temperatures_K(params, f[:, None] * shape[None, :], T_wb_K, T_db_K)
    over = T - (params.cdu.T_sec_sup_set_K + tol_K)
    worst = over.max(axis=1)
    bad = np.flatnonzero(worst > 0.0)
    if bad.size == 0:
        return Capacity(float(f_max), True, float(T_wb_K), float(tol_K), int(np.argmax(T[-1])))
    k = int(bad[0])
    if k == 0:
        return Capacity(0.0, False, float(T_wb_K), float(tol_K), int(np.argmax(over[0])))
    w0, w1 = worst[k - 1], worst[k]
    f_cross = f[k - 1] + (f[k] - f[k - 1]) * (-w0) / (w1 - w0)
    return Capacity(float(f_cross), False, float(T_wb_K), float(tol_K), int(np.argmax(over[k])))


def with_tower_cells(params: PlantParams, extra: int) -> PlantParams:
    """The plant with ``extra`` more tower cells of the same size (module docstring: NTU and L/G scaling).

    Parameters
    ----------
    params : PlantParams
        Plant description.
    extra : int
        Cells to add (> -n_cells; negative: the bank less cells, :func:`design_cells`).

    Returns
    -------
    PlantParams
        A copy with ``tower.n_cells``, ``tower.NTU_nominal`` and ``tower.LG_nominal`` changed.
    """
    t = params.tower
    n0 = t.n_cells
    r = (n0 + extra) / n0
    tower = t.model_copy(update={"n_cells": n0 + extra, "NTU_nominal": t.NTU_nominal * r ** t.n_merkel,
                                 "LG_nominal": t.LG_nominal / r})
    return params.model_copy(update={"tower": tower})


def tower_cells_needed(params: PlantParams, heat_shape_W: np.ndarray, T_wb_K: float, need_W: float,
                       tol_K: float = 1.0, max_extra: int = 8, cache_dir: None = None,
                       n_grid: int = 300) -> int | None:
    """Fewest extra tower cells (:func:`with_tower_cells`) that give a capacity of at least ``need_W``.

    Parameters
    ----------
    params : PlantParams
        Plant description.
    heat_shape_W : np.ndarray
        Heat split over the CDUs [W], shape (n_cdu,).
    T_wb_K : float
        Wet-bulb [K].
    need_W : float
        Heat to reject [W].
    tol_K : float
        Allowed supply rise above set point [K].
    max_extra : int
        Most cells tried.
    cache_dir : None
        Unused.
    n_grid : int
        Scale factors of each capacity evaluation (:func:`plant_capacity`).

    Returns
    -------
    int or None
        Cells to add (found by doubling, then bisection: capacity grows with the cells; 0 when the plant already
        suffices); None when ``max_extra`` cells do not suffice (the CDUs or
        the facility loop, not the towers, then limit the plant).
    """
    def enough(k: int) -> bool:
        cap = plant_capacity(with_tower_cells(params, k), heat_shape_W, T_wb_K, tol_K, n_grid=n_grid)
        return cap.heat_W >= need_W

    if enough(0):
        return 0
    lo, hi = 0, 1  # enough(lo) is False; find hi with enough(hi), doubling, then bisect (capacity grows with cells)
    while not enough(hi):
        if hi >= max_extra:
            return None
        lo, hi = hi, min(2 * hi, max_extra)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if enough(mid) else (mid, hi)
    return hi


def design_cells(params: PlantParams) -> PlantParams:
    """The plant as sized: its bank less ``tower.n_cells_standby`` cells (:func:`with_tower_cells`, module docstring).

    Parameters
    ----------
    params : PlantParams
        Plant description.

    Returns
    -------
    PlantParams
        ``params`` itself without standby cells, else a copy with ``n_cells - n_cells_standby`` cells.

    Raises
    ------
    ValueError
        If the standby cells are the whole bank.
    """
    k = params.tower.n_cells_standby
    if k == 0:
        return params
    if k >= params.tower.n_cells:
        raise ValueError(f"plant {params.name}: tower.n_cells_standby = {k} leaves no cell of {params.tower.n_cells}")
    return with_tower_cells(params, -k)


def design_tower_heat_w(params: PlantParams) -> float:
    """Heat the towers reject at design: the steady state at design heat on every CDU and the design wet-bulb.

    Parameters
    ----------
    params : PlantParams
        Plant description with ``tower.T_wb_design_K`` stated.

    Returns
    -------
    float
        ``Q_flow_tower`` [W] of :func:`cooling_fmu.modelica.analytic_steady_state` with the air side's design heat
        ``tower.Q_air_side_design_W`` (module docstring): rack heat + every pump's shaft work + the trim chiller's
        condenser heat + the air side's heat.

    Raises
    ------
    ValueError
        If the plant states no design wet-bulb.
    """
    from .modelica import analytic_steady_state

    t = params.tower
    if t.T_wb_design_K is None:
        raise ValueError(f"plant {params.name}: tower.T_wb_design_K is not stated; the towers cannot be sized")
    ss = analytic_steady_state(params, np.full(params.n_cdu, params.cdu.Q_flow_nominal_W), t.T_wb_design_K,
                               Q_air_side_W=t.Q_air_side_design_W, xtol_K=SIZING_XTOL_K)
    return float(ss["Q_flow_tower"])


def size_tower_ntu(params: PlantParams, rtol: float = 1e-6, max_iter: int = 20) -> tuple[float, float]:
    """``NTU_nominal`` of towers that reject all their design heat at the design wet-bulb and approach with their
    ``n_cells - n_cells_standby`` design cells (module docstring), by the fixed point ``NTU =
    size_ntu_nominal(design_tower_heat_w(plant with NTU))``.

    Parameters
    ----------
    params : PlantParams
        Plant description with ``tower.T_wb_design_K`` and ``tower.approach_design_K`` stated.
    rtol : float
        Relative change of ``NTU_nominal`` at which the iteration stops (the steady states bisect to
        ``SIZING_XTOL_K``, which moves ``NTU_nominal`` by about 1e-8).
    max_iter : int
        Most passes.

    Returns
    -------
    tuple of float
        ``(NTU_nominal, Q_design_W)``: the Merkel number at full air and design water flow and the heat [W] it is
        sized for.

    Raises
    ------
    ValueError
        If the design wet-bulb or approach is not stated, or the iteration does not settle in ``max_iter`` passes.
    """
    from .components.tower import size_ntu_nominal

    t, tl = params.tower, params.tower_loop
    if t.approach_design_K is None:
        raise ValueError(f"plant {params.name}: tower.approach_design_K is not stated; the towers cannot be sized")
    # the design cells (N - standby) scale NTU by r^n and L/G by 1/r, r = (N - k) / N (with_tower_cells)
    r = (t.n_cells - t.n_cells_standby) / t.n_cells
    ntu = t.NTU_nominal
    for _ in range(max_iter):
        trial = params.model_copy(update={"tower": t.model_copy(update={"NTU_nominal": ntu})})
        Q = design_tower_heat_w(design_cells(trial))
        new = size_ntu_nominal(t.n_merkel, t.LG_nominal / r, Q, tl.m_flow_nominal_kg_s, t.T_wb_design_K,
                               t.approach_design_K, t.p_atm_Pa, params.cp_water_J_kgK) / r ** t.n_merkel
        if abs(new - ntu) <= rtol * new:
            return float(new), Q
        ntu = new
    raise ValueError(f"plant {params.name}: tower sizing did not settle in {max_iter} passes (NTU {ntu:.6g})")


def size_ihx_ua(params: PlantParams, rtol: float = 1e-6) -> float:
    """``UA_ihx`` [W/K] that holds the facility supply at its set point at design with the design cells at full fans
    (module docstring, "N+1 at design").

    Parameters
    ----------
    params : PlantParams
        Plant description with its towers sized (:func:`size_tower_ntu`) and ``tower.T_wb_design_K`` stated.
    rtol : float
        Relative width of the bisection bracket in ``UA_ihx`` at which it stops.

    Returns
    -------
    float
        Conductance of the intermediate heat exchanger [W/K].

    Raises
    ------
    ValueError
        If no design wet-bulb is stated, or no IHX between 1e-3 and 1e3 times today's holds the set point (a
        set point below what the towers can reach: a chiller plant).
    """
    from .modelica import analytic_steady_state

    t = params.tower
    if t.T_wb_design_K is None:
        raise ValueError(f"plant {params.name}: tower.T_wb_design_K is not stated; the IHX cannot be sized")
    base = design_cells(params)
    heat = np.full(params.n_cdu, params.cdu.Q_flow_nominal_W)

    def over(log_ua: float) -> float:
        p = base.model_copy(update={"tower_loop": base.tower_loop.model_copy(update={"UA_ihx_W_K":
                                                                                     float(np.exp(log_ua))})})
        ss = analytic_steady_state(p, heat, t.T_wb_design_K, Q_air_side_W=t.Q_air_side_design_W,
                                   xtol_K=SIZING_XTOL_K)
        # at the root the fans are just full: below it the supply sits at the set point with fans < 1
        return float(ss["T_fac_sup"]) - t.T_fac_sup_set_K - (1.0 - float(ss["y_fan"]))

    lo, hi = np.log(params.tower_loop.UA_ihx_W_K) - np.log(1e3), np.log(params.tower_loop.UA_ihx_W_K) + np.log(1e3)
    if over(hi) > 0.0:
        raise ValueError(f"plant {params.name}: no IHX holds the {t.T_fac_sup_set_K - 273.15:.2f} C facility set "
                         f"point at the design wet-bulb {t.T_wb_design_K - 273.15:.2f} C with "
                         f"{base.tower.n_cells} cells (a chiller plant?)")
    while hi - lo > rtol:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if over(mid) > 0.0 else (lo, mid)
    return float(np.exp(hi))


def size_towers_and_ihx(params: PlantParams, rtol: float = 1e-6, max_iter: int = 10) -> tuple[float, float, float]:  # noqa: DOC502
    """Joint fixed point of :func:`size_tower_ntu` and :func:`size_ihx_ua` (module docstring, "N+1 at design").

    Parameters
    ----------
    params : PlantParams
        Plant description with ``tower.T_wb_design_K`` and ``tower.approach_design_K`` stated.
    rtol : float
        Relative change of both sizes at which the passes stop.
    max_iter : int
        Most passes.

    Returns
    -------
    tuple of float
        ``(NTU_nominal, UA_ihx_W_K, Q_design_W)``: the bank's Merkel number, the IHX conductance [W/K] and the
        towers' design heat [W].

    Raises
    ------
    ValueError
        If a size cannot be found (:func:`size_tower_ntu`, :func:`size_ihx_ua`) or the passes do not settle.
    """
    return _with_towers(params, size_ihx_ua, "tower_loop", "UA_ihx_W_K", "IHX", rtol, max_iter, floor=0.0)


def size_trim_chiller(params: PlantParams, rtol: float = 1e-5) -> float:
    """``chiller.Q_flow_max_W`` [W] of the smallest trim chiller that holds its set point at design with the design
    cells at full fans (module docstring, "Trim chiller at the design day").

    Parameters
    ----------
    params : PlantParams
        A plant with a trim chiller (``chiller.enabled``) and ``tower.T_wb_design_K`` stated.
    rtol : float
        Relative width of the bisection bracket in ``Q_flow_max_W`` at which it stops (the upper end is returned).

    Returns
    -------
    float
        Reference capacity [W]; 0 when the towers alone hold the set point there.

    Raises
    ------
    ValueError
        If the plant has no chiller or no design wet-bulb, or no chiller up to twice the design heat holds it.
    """
    from .components.chiller import chiller_setpoint_K
    from .modelica import analytic_steady_state

    t = params.tower
    if not params.chiller.enabled:
        raise ValueError(f"plant {params.name}: no trim chiller to size (chiller.enabled = false)")
    if t.T_wb_design_K is None:
        raise ValueError(f"plant {params.name}: tower.T_wb_design_K is not stated; the chiller cannot be sized")
    base = design_cells(params)
    heat = np.full(params.n_cdu, params.cdu.Q_flow_nominal_W)
    T_set = chiller_setpoint_K(params)

    def over(q_W: float) -> float:
        p = base.model_copy(update={"chiller": base.chiller.model_copy(update={"Q_flow_max_W": q_W})})
        ss = analytic_steady_state(p, heat, t.T_wb_design_K, Q_air_side_W=t.Q_air_side_design_W,
                                   xtol_K=SIZING_XTOL_K)
        return float(ss["T_fac_sup"]) - T_set

    tol_K = 10 * SIZING_XTOL_K  # the steady state's bisection width: the set point is held below it
    if over(0.0) <= tol_K:
        return 0.0
    lo, hi = 1e-3 * float(heat.sum()), 2.0 * float(heat.sum())
    if over(hi) > tol_K:
        raise ValueError(f"plant {params.name}: no trim chiller up to {hi / 1e6:.3f} MW holds "
                         f"{T_set - 273.15:.2f} C at the design wet-bulb {t.T_wb_design_K - 273.15:.2f} C")
    while hi - lo > rtol * hi:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if over(mid) > tol_K else (lo, mid)
    return float(hi)


def size_towers_and_chiller(params: PlantParams, rtol: float = 1e-5, max_iter: int = 10  # noqa: DOC502
                            ) -> tuple[float, float, float]:
    """Joint fixed point of :func:`size_tower_ntu` and :func:`size_trim_chiller` (module docstring, "Trim chiller at
    the design day"): the towers' design heat holds the chiller's condenser heat, and the chiller's load the water
    the towers leave.

    Parameters
    ----------
    params : PlantParams
        A chiller plant with ``tower.T_wb_design_K`` and ``tower.approach_design_K`` stated.
    rtol : float
        Relative change of both sizes at which the passes stop.
    max_iter : int
        Most passes.

    Returns
    -------
    tuple of float
        ``(NTU_nominal, Q_flow_max_W, Q_design_W)``: the bank's Merkel number, the chiller's reference capacity [W]
        and the towers' design heat [W].

    Raises
    ------
    ValueError
        If a size cannot be found (:func:`size_tower_ntu`, :func:`size_trim_chiller`) or the passes do not settle.
    """
    return _with_towers(params, size_trim_chiller, "chiller", "Q_flow_max_W", "chiller", rtol, max_iter, floor=1.0)


def _with_towers(params: PlantParams, size_other, section: str, field: str, what: str, rtol: float, max_iter: int,
                 floor: float) -> tuple[float, float, float]:
    """The joint fixed point of :func:`size_tower_ntu` and a second size (``size_other(plant)``, written to
    ``params.<section>.<field>``): passes of both until neither moves by more than ``rtol`` (of the new value, and
    for the second size of at least ``floor``). Returns ``(NTU_nominal, the second size, Q_design_W)``; raises
    ``ValueError`` (naming ``what``) when the passes do not settle, or as a size function raises.
    """
    p = params
    for _ in range(max_iter):
        ntu, Q = size_tower_ntu(p)
        q = p.model_copy(update={"tower": p.tower.model_copy(update={"NTU_nominal": ntu})})
        x = size_other(q)
        if abs(ntu - p.tower.NTU_nominal) <= rtol * ntu and \
                abs(x - getattr(getattr(p, section), field)) <= rtol * max(x, floor):
            return ntu, x, Q
        p = q.model_copy(update={section: getattr(q, section).model_copy(update={field: x})})
    raise ValueError(f"plant {p.name}: tower and {what} sizing did not settle in {max_iter} passes")


#: Smallest entering temperature difference (water in minus air in) a dry-cooler bank is selected for at design
#: [K]. ASSUMPTION: no manufacturer selection could be opened here; below about 5-8 K the coil area grows without
#: bound (the crossflow effectiveness tends to its limit).
DRY_ITD_MIN_K = 6.0

#: Largest water-side effectiveness a dry-cooler bank is selected for at design (ASSUMPTION 0.75: the water range
#: is at most three quarters of the entering temperature difference), so ``ITD >= range / 0.75``.
DRY_EPS_WATER_MAX = 0.75

#: Air temperature rise across the dry-cooler coil at design, as a fraction of the entering temperature difference
#: (ASSUMPTION: 0.5, a balanced selection between coil area and fan air).
DRY_AIR_RISE_FRACTION = 0.5

#: Saturation effectiveness of the hybrid's adiabatic pads (ASSUMPTION 0.8: rigid-media pads are quoted at 70-95 %,
#: ASHRAE Handbook HVAC Systems and Equipment 2020 ch. 41, not opened here).
PAD_EFFECTIVENESS = 0.8


def size_dry_cooler(params: PlantParams, T_db_design_K: float, heat_rejection: str = "dry",
                    T_wb_coincident_K: float | None = None) -> tuple:
    """A dry-cooler (or hybrid) version of a plant, its bank sized for ALL the heat the towers reject at design.

    The design heat is :func:`design_tower_heat_w` of the plant as given (rack heat, every pump's shaft work, the
    trim chiller's condenser heat, the air side's design heat: the one sizing rule). The bank sees the water the
    towers would see at the facility set point (``T_tower_in`` of the design steady state) and air at the design
    dry-bulb, or at ``T_tower_in - ITD`` (``ITD = max(DRY_ITD_MIN_K, range / DRY_EPS_WATER_MAX)``, the water range at
    design) where the dry-bulb is warmer (then the bank cannot hold the set
    point on the design day; the returned shortfall says by how much). Air: the design heat at an air rise of
    ``DRY_AIR_RISE_FRACTION`` of the entering difference; conductance by
    :func:`~cooling_fmu.components.drycooler.size_ua_nominal`; fans
    :data:`~cooling_fmu.components.drycooler.SPECIFIC_FAN_POWER_W_PER_W` of the design heat, spread over the
    ``tower.n_cells`` units. Hybrid: pads of :data:`PAD_EFFECTIVENESS`; the design air is the pre-cooled dry-bulb
    ``T_db - eps (T_db - T_wb,coincident)``, and the pads are wetted above the dry-bulb the bank is sized at (below
    it the dry bank alone carries the design heat).

    Parameters
    ----------
    params : PlantParams
        A towers plant with ``tower.T_wb_design_K`` stated.
    T_db_design_K : float
        The site's 0.4 % design dry-bulb [K] (:func:`cooling_fmu.weather.design_conditions`).
    heat_rejection : str
        ``"dry"`` or ``"hybrid"``.
    T_wb_coincident_K : float | None
        Mean coincident wet-bulb of the design dry-bulb [K] (``mcwb_K`` of the design conditions); needed for
        ``"hybrid"``, unused for ``"dry"``.

    Returns
    -------
    tuple
        ``(plant, Q_design_W, T_air_sized_K, shortfall_K)``: the new plant, the heat the bank is sized for [W], the
        air temperature it is sized at [K] and how far the design air (the dry-bulb, or with pads the pre-cooled
        dry-bulb) is above it [K] (0 when it holds).

    Raises
    ------
    ValueError
        If ``heat_rejection`` is not ``"dry"`` or ``"hybrid"``, a hybrid has no coincident wet-bulb, or the plant
        states no design wet-bulb.
    """
    from .components import drycooler
    from .modelica import analytic_steady_state
    from .params import DryCoolerSection

    if heat_rejection not in ("dry", "hybrid"):
        raise ValueError(f"heat_rejection must be 'dry' or 'hybrid', got {heat_rejection!r}")
    t, cp = params.tower, params.cp_water_J_kgK
    Q = design_tower_heat_w(params)
    ss = analytic_steady_state(params, np.full(params.n_cdu, params.cdu.Q_flow_nominal_W), t.T_wb_design_K,
                               Q_air_side_W=t.Q_air_side_design_W, xtol_K=SIZING_XTOL_K)
    m_cw = float(ss["m_flow_cw"])
    T_in = float(ss["T_cw_ret"]) + (float(ss["Q_flow_chiller"]) + float(ss["P_chiller"]) + t.Q_air_side_design_W) \
        / (m_cw * cp)
    pads = heat_rejection == "hybrid"
    if pads and T_wb_coincident_K is None:
        raise ValueError("a hybrid bank is sized with the design dry-bulb's coincident wet-bulb (T_wb_coincident_K)")
    T_design = (drycooler.coil_air_k(float(T_db_design_K), float(T_wb_coincident_K), PAD_EFFECTIVENESS, 0.0)
                if pads else float(T_db_design_K))
    itd = max(DRY_ITD_MIN_K, Q / (m_cw * cp) / DRY_EPS_WATER_MAX)
    T_air = min(T_design, T_in - itd)
    m_air = Q / (drycooler.CP_AIR_J_KGK * DRY_AIR_RISE_FRACTION * (T_in - T_air))
    ua = drycooler.size_ua_nominal(Q, m_cw, m_air, T_in, T_air, cp_water_J_kgK=cp)
    dc = DryCoolerSection(UA_nominal_W_K=ua, m_air_nominal_kg_s=m_air, eps_pad=PAD_EFFECTIVENESS if pads else 0.0,
                          T_db_pad_on_K=T_air if pads else 400.0)
    d = params.model_dump()
    d["tower"]["P_fan_cell_nominal_W"] = drycooler.SPECIFIC_FAN_POWER_W_PER_W * Q / t.n_cells
    d.update(heat_rejection=heat_rejection, dry_cooler=dc.model_dump())
    plant = type(params).model_validate(d)
    return plant, Q, T_air, max(0.0, T_design - T_air)
