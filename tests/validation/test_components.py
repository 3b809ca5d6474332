"""Component library (issue 22 item 1): a validation test beside each component against an analytic or published
reference, and the Modelica fragments compiled in one flat model (rumoca + gcc, the shipped build path) and checked
against the numpy relations at sample points."""

from __future__ import annotations

import ast
import inspect
import math
import re
from pathlib import Path

import numpy as np
import psychrolib as psy
import pytest

from cooling_fmu.components import chiller, crah, drycooler, hx, moist_air, pipe, pump, tower, valve
from cooling_fmu.components._mo import real
from cooling_fmu.params import PumpParams, load_plant_params

psy.SetUnitSystem(psy.SI)
ROOT = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------------------------------------------- validation
def test_pump_heat_split_puts_shaft_work_in_the_water():
    # 0.1 m3/s, 100 kPa static + 200 kPa friction, eta_pump 0.8: shaft 0.1 x 300e3 / 0.8 = 37.5 kW at w = 1;
    # electrical 37.5 / 0.9021 kW; the motor and drive losses (the difference) go to the room air
    p = PumpParams(dp_static_Pa=100e3, dp_friction_Pa=200e3, eta_pump=0.8)
    m, rho = 99.7, 997.0
    P = pump.pump_power_W(p, m, rho, 1.0)
    P_shaft = pump.shaft_nominal_W(p, m, rho)
    assert P_shaft == pytest.approx(37.5e3, rel=1e-12)
    q_w, q_a = pump.pump_heat_split_W(P, P_shaft, pump.shaft_load_fraction(1.0, p.static_fraction))
    assert q_w == pytest.approx(37.5e3, rel=1e-12) and q_a == pytest.approx(37.5e3 / 0.9021 - 37.5e3, rel=1e-12)
    # half flow: x = 0.5 (1/3 + 2/3 0.25) = 0.25 -> 9.375 kW into the water
    x = pump.shaft_load_fraction(0.5, p.static_fraction)
    assert x == pytest.approx(0.25) and pump.pump_heat_split_W(1.0, P_shaft, x)[0] == pytest.approx(9375.0)


def test_secondary_flow_rule_hand_points():
    q = np.array([0.0, 0.1, 0.5, 1.0, 1.4]) * 1e6
    np.testing.assert_array_equal(pump.secondary_flow_fraction(q, 1e6, 0.3), [0.3, 0.3, 0.5, 1.0, 1.0])
    np.testing.assert_array_equal(pump.secondary_flow_fraction(q, 1e6, 1.0), np.ones(5))


def test_valve_opening_reset_and_integrator_hand_points():
    np.testing.assert_array_equal(valve.valve_opening(np.array([-1.0, 0.05, 0.4, 2.0]), 0.2), [0.2, 0.2, 0.4, 1.0])
    assert valve.reset_factor(np.array([[0.3, 0.7, 0.5], [0.1, 0.2, 0.1]]), 0.5).tolist() == [0.7, 0.5]
    # at saturation the tracking term balances the error: I = y + e is at rest
    assert valve.integrator_rate(0.25, 1.0, 1.25, 300.0) == 0.0
    assert valve.integrator_at_rest(1.0, 0.25) == 1.25  # the steady state's saturated valve
    # PI (the tower fans): u = k_p e + I; at rest u = y + e, so I = y + e - k_p e = 1 + 0.25 - 0.5 = 0.75
    I_fan = valve.integrator_at_rest(1.0, 0.25, 2.0)
    assert I_fan == 0.75 and valve.integrator_rate(0.25, 1.0, 2.0 * 0.25 + I_fan, 300.0) == 0.0
    assert valve.control_error(np.array([299.0, 302.0]), 300.0, 4.0).tolist() == [-0.25, 0.5]
    assert valve.control_error_expr("T", "T_set", "span") == "(T - T_set) / span"
    # load feed-forward (issue 22 item 8): k_ff Q / Q_nominal, added to the integrator before the limiter
    np.testing.assert_allclose(valve.feedforward_opening(np.array([0.0, 0.3e6, 1.0e6]), 1e6, 0.85),
                               [0.0, 0.255, 0.85], rtol=1e-15)
    assert valve.feedforward_opening(0.5e6, 1e6, 0.0) == 0.0
    # the reset's nested max, the one text the generator writes and the CDU replicator rewrites (replicate._resize)
    assert valve.max_chain_expr("y", 1) == "y[1]" and valve.max_chain_expr("y", 3) == "max(max(y[1], y[2]), y[3])"
    assert valve.reset_factor_expr("y", 3, "r0") == "max(r0, max(max(y[1], y[2]), y[3]))"


@pytest.mark.parametrize("m1,m2", [(10.0, 10.0), (10.0, 5.0), (3.0, 12.0), (10.0, 9.9995)])
def test_counterflow_hx_satisfies_the_lmtd_identity(m1, m2):
    # independent relation: a counterflow exchanger's heat equals UA times its log-mean temperature difference
    UA, cp, Th, Tc = 40e3, 4186.0, 320.0, 300.0
    eps, C_min = hx.counterflow_eps(UA, cp, m1, m2)
    Q = float(eps * C_min * (Th - Tc))
    Th_out, Tc_out = Th - Q / (m1 * cp), Tc + Q / (m2 * cp)
    d1, d2 = Th - Tc_out, Th_out - Tc
    lmtd = d1 if abs(d1 - d2) < 1e-9 else (d1 - d2) / math.log(d1 / d2)
    assert Q == pytest.approx(UA * lmtd, rel=2e-4 if m1 / m2 > 0.9999 else 1e-10)
    # limits (Incropera & DeWitt Table 11.3): C_r -> 0 gives 1 - exp(-NTU)
    e0, c0 = hx.counterflow_eps(UA, cp, 1.0, 1e9)
    assert float(e0) == pytest.approx(1.0 - math.exp(-UA / (cp * 1.0)), rel=1e-9)


def test_moist_air_matches_psychrolib():
    for T, p in ((250.0, 101325.0), (273.0, 101325.0), (290.0, 82200.0), (305.0, 101325.0), (318.0, 95000.0)):
        W, h, dh = moist_air.sat_air(T, p)
        assert W == pytest.approx(psy.GetSatHumRatio(T - 273.15, p), rel=1e-9)
        assert h == pytest.approx(psy.GetSatAirEnthalpy(T - 273.15, p), rel=1e-9)
        d = 1e-4
        assert dh == pytest.approx((moist_air.sat_air(T + d, p)[1] - moist_air.sat_air(T - d, p)[1]) / (2 * d),
                                   rel=1e-5)


def test_tower_relations_hand_points_and_inverse():
    # Merkel effectiveness and its inverse are one pair
    y = np.array([0.1, 0.4, 0.9])
    eps = tower.merkel_effectiveness(1.8, 0.6, y, 0.8)
    np.testing.assert_allclose(tower.fan_fraction_for_effectiveness(1.8, 0.6, eps, 0.8), y, rtol=1e-12)
    assert tower.fan_fraction_for_effectiveness(1.8, 0.6, 1.0, 1.0) == np.inf
    # 8 cells, minimum speed 0.3: y = 0.1 -> 2 cells at 0.4; y = 0.02 -> 1 cell at 0.16 (the floor); y = 1 -> 8
    np.testing.assert_array_equal(tower.cells_running(np.array([0.02, 0.1, 0.5, 1.0]), 8, 0.3), [1, 2, 8, 8])
    assert tower.fan_power_W(0.1, 2.0, 8, 135e3) == pytest.approx(2 * 135e3 * 0.4**3)
    # bypass: closed when the cells leave warm, else the leaving water is held at the minimum; energy closes
    Q, T = tower.bypass(2e6, 300.0, 100.0, 4186.0, 278.15)
    assert Q == 2e6 and T == pytest.approx(300.0 - 2e6 / 418600.0)
    Q, T = tower.bypass(3e6, 285.0, 100.0, 4186.0, 278.15)
    assert T == 278.15 and Q == pytest.approx(418600.0 * (285.0 - 278.15))


def test_exit_air_balance_against_psychrolib():
    p, T_wb, Q = 101325.0, 295.0, 5e6
    m_air, T_out, W_in, W_out = tower.exit_air(p, T_wb, 305.0, 300.0, Q)
    assert m_air == 300.0  # the fans' air can carry it
    h_in = psy.GetSatAirEnthalpy(T_wb - 273.15, p)
    assert psy.GetSatAirEnthalpy(T_out - 273.15, p) - h_in == pytest.approx(Q / m_air, rel=1e-9)
    assert W_out == pytest.approx(psy.GetSatHumRatio(T_out - 273.15, p), rel=1e-9)
    drift, blow, make = tower.water_use(m_air * (W_out - W_in), 400.0, 1e-4, 4.0)
    evap = m_air * (W_out - W_in)
    assert drift == pytest.approx(0.04) and blow == pytest.approx(evap / 3 - 0.04) and make == pytest.approx(
        evap + drift + blow)


@pytest.mark.parametrize("name", sorted(chiller.REFERENCE_CHILLERS))
def test_eir_chiller_reproduces_its_rating_and_part_load_curve(name):
    # EnergyPlus normalises CAPFT and EIRFT to 1 at the reference point and EIRFPLR to 1 at PLR 1: at its rating
    # the chiller delivers its reference capacity at its reference COP (published record, within the curve fit)
    ref = chiller.REFERENCE_CHILLERS[name]
    Q, P, cap = chiller.eir_chiller(ref, ref.Q_ref_W, 2 * ref.Q_ref_W, ref.T_lchw_ref_K, ref.T_ecw_ref_K)
    assert cap == pytest.approx(ref.Q_ref_W, rel=2e-2) and Q == cap
    assert Q / P == pytest.approx(ref.COP_ref, rel=2e-2)
    # half load at the rating: P = cap / COP_ref EIRFT EIRFPLR(0.5), EIRFPLR by hand from the record's coefficients
    a = ref.eirfplr
    Q2, P2, _ = chiller.eir_chiller(ref, ref.Q_ref_W, 0.5 * cap, ref.T_lchw_ref_K, ref.T_ecw_ref_K)
    assert P2 / P == pytest.approx((a[0] + a[1] * 0.5 + a[2] * 0.25) / (a[0] + a[1] + a[2]), rel=1e-12)
    # below the minimum part-load ratio the compressor cycles: power proportional to the load
    Qs, Ps, _ = chiller.eir_chiller(ref, ref.Q_ref_W, 0.5 * ref.PLR_min * cap, ref.T_lchw_ref_K, ref.T_ecw_ref_K)
    Qm, Pm, _ = chiller.eir_chiller(ref, ref.Q_ref_W, ref.PLR_min * cap, ref.T_lchw_ref_K, ref.T_ecw_ref_K)
    assert Ps == pytest.approx(0.5 * Pm, rel=1e-12) and Qs == pytest.approx(0.5 * Qm, rel=1e-12)
    # colder condenser water (the towers in mild weather) raises the COP: lift matters
    Qc, Pc, _ = chiller.eir_chiller(ref, ref.Q_ref_W, 0.8 * cap, ref.T_lchw_ref_K, ref.T_ecw_min_K)
    Qh, Ph, _ = chiller.eir_chiller(ref, ref.Q_ref_W, 0.8 * cap, ref.T_lchw_ref_K, ref.T_ecw_max_K)
    assert Qc / Pc > Qh / Ph
    # inputs beyond the curve range are clamped, as EnergyPlus clamps Curve:Biquadratic inputs
    assert chiller.eir_chiller(ref, 1e6, 5e5, ref.T_lchw_max_K + 10, ref.T_ecw_max_K + 10) == chiller.eir_chiller(
        ref, 1e6, 5e5, ref.T_lchw_max_K, ref.T_ecw_max_K)


def test_trim_chiller_counts_its_condenser_pump_and_rejects_to_the_towers():
    p = load_plant_params("theta")
    T_set = chiller.chiller_setpoint_K(p)
    ch = p.chiller
    ref = chiller.reference_chiller(ch.reference)
    T_wb, T_cw = ch.T_wb_switch_K + 5.0, 299.0
    Q, P, cop, Q_cond = chiller.trim_chiller(p, 10.0, T_set + 2.0, T_wb, T_cw)
    Qe, Pc, _ = chiller.eir_chiller(ref, ch.Q_flow_max_W, 10.0 * p.cp_water_J_kgK * 2.0, T_set, T_cw)
    assert Q == Qe == pytest.approx(10.0 * p.cp_water_J_kgK * 2.0)  # within its capacity
    # 19 W/gpm at a 10 F rise: 19 / (6.309e-5 m3/s x 997 x 4186 x 5.556 K) = 1.30e-2 W per W of condenser heat
    assert chiller.COND_PUMP_W_PER_W == pytest.approx(19.0 / (6.30902e-5 * 997.0 * 4186.0 * 5.5556), rel=1e-4)
    assert P == pytest.approx(Pc + chiller.COND_PUMP_W_PER_W * (Q + Pc), rel=1e-12) and cop == pytest.approx(Q / P)
    assert Q_cond == pytest.approx(Q + P, rel=1e-12)  # everything it draws ends in the tower water
    assert chiller.trim_chiller(p, 10.0, T_set + 2.0, ch.T_wb_switch_K - 1.0, T_cw)[0] == 0.0  # economiser below
    with pytest.raises(ValueError, match="unknown reference chiller"):
        chiller.reference_chiller("nope")


def test_dry_air_evaporates_more_than_saturated_air_for_the_same_heat():
    # psychrolib as the independent reference: entering air from dry-bulb and wet-bulb (ASHRAE Fundamentals eq. 33)
    p, T_wb, Q = 97000.0, 295.15, 5e6
    for T_db in (295.15, 305.15, 315.15):
        W, h = moist_air.inlet_air(T_db, T_wb, p)
        W_ref = psy.GetHumRatioFromTWetBulb(T_db - 273.15, T_wb - 273.15, p)
        assert W == pytest.approx(W_ref, rel=1e-12)
        assert h == pytest.approx(psy.GetMoistAirEnthalpy(T_db - 273.15, W_ref), rel=1e-12)
    sat = tower.exit_air(p, T_wb, 305.0, 300.0, Q)
    dry = tower.exit_air(p, T_wb, 305.0, 300.0, Q, 315.15)  # Phoenix-like: 20 K of wet-bulb depression
    evap_sat, evap_dry = sat[0] * (sat[3] - sat[2]), dry[0] * (dry[3] - dry[2])
    # same enthalpy rise; the dry air leaves saturated too, so it takes up (W_s(T_out) - W_in): about the wet-bulb
    # depression's sensible heat m_air cp_a (T_db - T_wb) / h_fg more water
    extra = 300.0 * 1006.0 * 20.0 / 2.45e6
    assert evap_dry - evap_sat == pytest.approx(extra, rel=0.15)
    assert tower.exit_air(p, T_wb, 305.0, 300.0, Q, T_wb) == pytest.approx(sat, rel=1e-12)


def test_dry_cooler_crossflow_effectiveness_published_point():
    # Incropera & DeWitt Fig. 11.18 / eq. 11.33 (both unmixed): C_r = 0.5, NTU = 1 -> eps = 0.545
    assert drycooler.crossflow_unmixed_eps(1.0, 0.5) == pytest.approx(0.5448, abs=1e-4)
    # C_r -> 0: every exchanger tends to 1 - exp(-NTU)
    assert drycooler.crossflow_unmixed_eps(1.5, 1e-6) == pytest.approx(1 - math.exp(-1.5), abs=1e-5)
    d = drycooler.DryCoolerParams(UA_nominal_W_K=200e3, m_air_nominal_kg_s=150.0, P_fan_nominal_W=60e3)
    Q, T_out, P = drycooler.dry_cooler(d, 0.5, 40.0, 310.0, 300.0)
    assert 0 < Q < 0.5 * 150.0 * drycooler.CP_AIR_J_KGK * 10.0 + 1e-9  # at most C_min dT
    assert T_out == pytest.approx(310.0 - Q / (40.0 * 4186.0)) and P == pytest.approx(60e3 / 8)


def test_crah_coil_energy_balance_and_lmtd():
    c = crah.CRAHParams(UA_nominal_W_K=30e3, m_air_nominal_kg_s=20.0, P_fan_nominal_W=8e3)
    Q, Ta, Tw, P = crah.crah(c, 1.0, 5.0, 305.0, 290.0)
    C_a, C_w = 20.0 * drycooler.CP_AIR_J_KGK, 5.0 * 4186.0
    assert Q == pytest.approx(C_a * (305.0 - Ta)) and Q == pytest.approx(C_w * (Tw - 290.0))
    d1, d2 = 305.0 - Tw, Ta - 290.0
    assert Q == pytest.approx(30e3 * (d1 - d2) / math.log(d1 / d2), rel=1e-10)
    assert P == 8e3


def test_pipe_relations_hand_points():
    assert pipe.leaving_temperature(300.0, 4186.0 * 2.0, 2.0, 4186.0) == pytest.approx(299.0)
    assert pipe.tower_water_fraction(0.3, 0.5) == 0.5 and pipe.tower_water_fraction(0.8, 0.5) == 0.8
    assert pipe.stored_energy_J(4186.0, 290.0, (10.0, 5.0), (np.array([291.0, 292.0]), 290.5)) == pytest.approx(
        4186.0 * (10.0 * 3.0 + 5.0 * 0.5))


# ------------------------------------------------------------------------- each relation once: who imports what
def _names_used(path: Path, module: str) -> set[str]:
    """Attribute names used on ``module`` (``module.f``) in a source file."""
    tree = ast.parse(path.read_text())
    return {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
            and n.value.id == module}


def test_steady_state_fast_plant_and_generator_use_the_library_functions():
    mod = ROOT / "cooling_fmu" / "modelica.py"
    qss = ROOT / "cooling_fmu" / "quasisteady.py"
    used_m = {m: _names_used(mod, m) for m in ("pump", "valve", "hx", "pipe", "tower", "chiller")}
    used_q = {m: _names_used(qss, m) for m in ("pump", "valve", "hx", "pipe", "tower")}
    # generator (fragments) and mirror / steady state (numpy) in modelica.py
    assert {"secondary_flow_expr", "shaft_load_expr", "pump_power_expr", "secondary_flow_fraction",
            "pump_power_W", "shaft_nominal_W"} <= used_m["pump"]
    assert {"counterflow_equations", "counterflow_eps"} <= used_m["hx"]
    # plant v5 towers (Braun with the air the fans move, cells in service from the stager's command)
    assert {"braun_equations", "braun_effectiveness", "braun_coefficients", "braun_fan_fraction",
            "cells_in_service_expr", "cells_in_service", "fan_speed_equations", "fan_speed",
            "fan_power_expr", "fan_power_W", "bypass_equations", "bypass", "exit_air_fragment", "exit_air",
            "water_use", "water_use_equations"} <= used_m["tower"]
    assert {"valve_opening_expr", "valve_opening", "reset_factor_expr", "reset_factor", "integrator_rate",
            "integrator_rate_expr", "feedforward_opening", "feedforward_opening_expr"} <= used_m["valve"]
    assert {"tower_water_fraction_expr", "tower_water_fraction"} <= used_m["pipe"]
    assert {"trim_chiller", "trim_chiller_equations"} <= used_m["chiller"]
    # the dry-cooler / hybrid bank (issue 22 item 6): the same functions in generator, mirror, steady state
    assert {"dry_cooler", "dry_cooler_equations", "coil_air_k", "coil_air_expr", "pad_evaporation_kg_s",
            "pad_evaporation_expr", "dry_fan_fraction"} <= _names_used(mod, "drycooler")
    assert {"pad_evaporation_kg_s"} <= _names_used(qss, "drycooler")
    src_m = mod.read_text()
    assert "rejected_heat_w(params, y_fan, m_cw" in src_m and "coil_air_temperature_k" in qss.read_text()
    # the fast plant: the same functions, not copies
    assert {"secondary_flow_fraction", "pump_power_W"} <= used_q["pump"]
    assert {"cells_running", "fan_power_W"} <= used_q["tower"]  # the inverse tower relation via setpoint_tower_side
    # plant v5: the regime-A tower side, the facility flows with their pump heat and the CDU loop heat are each one
    # function of modelica.py that the fast plant imports (no copy); the evaporation is the one exit-air relation
    src_imports = qss.read_text()
    for fn in ("setpoint_tower_side", "facility_flows", "cdu_loop_heat_W"):
        assert fn in src_imports.split("from .modelica import", 1)[1].split("\n", 1)[0], fn
    assert {"exit_air", "water_use"} <= used_q["tower"]
    assert {"pump_shaft_heat_W", "shaft_heat_expr"} <= used_m["pump"]
    assert {"cells_running", "fan_speed", "fan_power_W"} <= used_q["tower"]  # Braun through setpoint_tower_side
    src_q = qss.read_text()
    import cooling_fmu.quasisteady as q

    assert "steady_states(" in inspect.getsource(q._steady_states)
    # no relation written out again outside the library
    for text in (mod.read_text(), src_q):
        for copy in ("np.log1p(", "np.exp(-ntu", "** t.n_merkel", "s**3", "spd ** 3", "np.maximum(tl.w_flow_min",
                     "np.maximum(params.y_sec_floor", "np.maximum(p.y_sec_floor"):
            assert copy not in text, copy


def _module_file(mod: str) -> Path | None:
    base = ROOT / Path(*mod.split("."))
    for f in (base.with_suffix(".py"), base / "__init__.py"):
        if f.is_file():
            return f
    return None


def _call_graph(modules: list[str]) -> dict:
    """(module, top-level function or class) -> the (module, name) pairs its body refers to, by the module's imports
    (``pump.x`` with ``from .components import pump``, ``x`` with ``from .modelica import x``, a name of the same
    module); methods and nested functions are folded into their top-level definition."""
    graph = {}
    for mod in modules:
        path = _module_file(mod)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        pkg = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
        mods, names = {}, {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                src = ".".join(pkg[:len(pkg) - node.level + 1] + (node.module or "").split(".")).strip(".") \
                    if node.level else node.module
                for a in node.names:
                    if _module_file(f"{src}.{a.name}"):
                        mods[a.asname or a.name] = f"{src}.{a.name}"
                    else:
                        names[a.asname or a.name] = (src, a.name)
        top = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        for n in tree.body:
            if isinstance(n, (ast.FunctionDef, ast.ClassDef)):
                refs = set()
                for sub in ast.walk(n):
                    if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id in mods:
                        refs.add((mods[sub.value.id], sub.attr))
                    elif isinstance(sub, ast.Name) and sub.id in top:
                        refs.add((mod, sub.id))
                    elif isinstance(sub, ast.Name) and sub.id in names:
                        refs.add(names[sub.id])
                graph[(mod, n.name)] = refs
    return graph


def _reached(graph: dict, starts) -> set:
    seen, todo = set(), list(starts)
    while todo:
        k = todo.pop()
        if k not in seen:
            seen.add(k)
            todo += list(graph.get(k, ()))
    return seen


def _docs_relation_table() -> list[list[str]]:
    text = (ROOT / "docs" / "cooling.md").read_text(encoding="utf-8")
    block = text.split("| relation | numpy function", 1)[1].split("\n\n", 1)[0]
    return [[c.strip() for c in row.strip().strip("|").split("|")] for row in block.splitlines()[2:]]


def _table_key(token: str) -> tuple[str, str]:
    """``pump.x`` -> the component module's ``x``; ``modelica.x`` / ``sizing.x`` -> cooling_fmu's;
    ``power.facility.C.m`` -> class ``C`` of power.facility."""
    parts = token.split(".")
    if parts[0] == "power":
        return ".".join(parts[:2]), parts[2]
    if parts[0] in ("modelica", "sizing", "supervisory", "quasisteady"):
        return f"cooling_fmu.{parts[0]}", parts[1]
    return f"cooling_fmu.components.{parts[0]}", parts[1]


def test_every_relation_of_the_docs_table_is_one_function_the_steady_state_fast_plant_and_generator_reach():
    """docs/cooling.md's table, row by row, against the code's call graph (issue 22 item 1): each numpy function
    is reached from the mirror / steady state (``plant_equations``, ``steady_states``) and from the fast plant
    (:mod:`cooling_fmu.quasisteady`), each fragment from ``generate_plant_modelica``; the sizing rows from
    :mod:`cooling_fmu.sizing`, the stager from ``supervisory.StagedPlant``, the air side's chiller from
    ``power.facility.AirSideSpec``; and every component function the plant reaches is in the table or a helper
    of a function that is (no relation outside the table)."""
    import importlib

    comps = [f"cooling_fmu.components.{f.stem}" for f in sorted((ROOT / "cooling_fmu" / "components").glob("*.py"))
             if f.stem != "__init__"]
    g = _call_graph(comps + ["cooling_fmu.modelica", "cooling_fmu.quasisteady", "cooling_fmu.sizing",
                             "cooling_fmu.supervisory", "cooling_fmu.replicate", "power.facility"])
    gen = _reached(g, [("cooling_fmu.modelica", "generate_plant_modelica")])
    steady = _reached(g, [("cooling_fmu.modelica", "plant_equations"), ("cooling_fmu.modelica", "steady_states")])
    fast = _reached(g, [k for k in g if k[0] == "cooling_fmu.quasisteady"])
    sizing = _reached(g, [k for k in g if k[0] == "cooling_fmu.sizing"])
    elsewhere = {"staging.CellStager": ("cooling_fmu.supervisory", "StagedPlant"),
                 "chiller.eir_chiller": ("power.facility", "AirSideSpec")}
    rows = _docs_relation_table()
    assert len(rows) >= 35, len(rows)
    named = set()
    for relation, numpy_col, fragment_col in rows:
        numpy_fns = [t for t in re.findall(r"`([A-Za-z_][\w.]*)`", numpy_col) if "." in t]
        fragments = [t for t in re.findall(r"`([A-Za-z_][\w.]*)`", fragment_col) if "." in t]
        assert numpy_fns, relation
        for tok in numpy_fns + fragments:
            mod, name = _table_key(tok)
            assert hasattr(importlib.import_module(mod), name), f"{relation}: {tok} does not exist"
            named.add((mod, name))
        if relation.startswith("CRAH coil"):  # the table says: not in the plant (the air side is AirSideSpec)
            assert not {_table_key(t) for t in numpy_fns + fragments} & (gen | steady | fast), relation
            continue
        if "sizing" in relation:
            for tok in numpy_fns:
                assert _table_key(tok) in sizing, f"{relation}: {tok} not used by cooling_fmu.sizing"
            continue
        if numpy_col.split("`")[1] in ("staging.CellStager", "power.facility.AirSideSpec.chilled_water_W"):
            for tok in numpy_fns:
                if tok in elsewhere:
                    assert _table_key(tok) in _reached(g, [elsewhere[tok]]), f"{relation}: {tok}"
            continue
        for tok in numpy_fns:
            assert _table_key(tok) in steady, f"{relation}: {tok} not reached by the mirror / steady state"
            assert _table_key(tok) in fast, f"{relation}: {tok} not reached by the fast plant"
        for tok in fragments:
            assert _table_key(tok) in gen, f"{relation}: {tok} not reached by the generator"
    # the reverse: a component function the plant uses is in the table, or a helper of one that is
    helpers = _reached(g, [k for k in named if k in g])
    unlisted = sorted(k for k in gen | steady | fast
                      if k[0].startswith("cooling_fmu.components.") and not k[1].startswith("_")
                      and k not in named and k not in helpers)
    assert not unlisted, f"component functions the plant uses that docs/cooling.md's table does not account for: " \
                         f"{unlisted}"
    # the CDU replicator rewrites the generator's nested max with the same function, not a copy of it
    assert ("cooling_fmu.components.valve", "max_chain_expr") in _reached(g, [("cooling_fmu.replicate", "_resize")])


# ------------------------------------------------------------------------------ fragments compiled in a flat model
PUMP3 = PumpParams(dp_static_Pa=80e3, dp_friction_Pa=120e3, eta_pump=0.78, n_pumps=3)
DC = drycooler.DryCoolerParams(UA_nominal_W_K=250e3, m_air_nominal_kg_s=180.0, P_fan_nominal_W=70e3)
CR = crah.CRAHParams(UA_nominal_W_K=30e3, m_air_nominal_kg_s=20.0, P_fan_nominal_W=8e3)
INPUTS = ("Q", "w", "r", "I", "e", "m1", "m2", "y_fan", "w_cw", "T_wb", "T_cw_ret", "Q_air", "m_air_nominal",
          "Q_cells", "m_flow_cw", "m_flow_fac", "T_ihx_out", "T_db", "T_air_in", "yv1", "yv2", "yv3")


def _fragment_model(theta) -> str:
    t, ch = theta.tower, theta.chiller
    air_decl, air_eq = tower.exit_air_fragment("y_fan * m_air_nominal")
    dc_decl, dc_eq = drycooler.dry_cooler_equations(DC, "y_fan", "m1", "T_cw_ret", "T_db")
    cr_decl, cr_eq = crah.crah_equations(CR, "y_fan", "m2", "T_air_in", "T_ihx_out")
    ntu, eps_t = tower.merkel_effectiveness_expr("NTU_nom", "n_merkel", "y_fan", "w_cw")
    P_shaft = pump.shaft_nominal_W(PUMP3, 100.0, 997.0)
    x_p = "(" + pump.shaft_load_expr("w", real(PUMP3.static_fraction)) + ")"
    p_pump = pump.pump_power_expr(PUMP3, 100.0, 997.0, "w", "x_p", "P_shaft").replace("x_p", x_p)
    lines = ["model Fragments"]
    lines += [f"  input Real {n}(start=1.0);" for n in INPUTS]
    lines += [f"  parameter Real cp = {real(4186.0)};", f"  parameter Real UA = {real(50e3)};",
              f"  parameter Real NTU_nom = {real(t.NTU_nominal)};", f"  parameter Real n_merkel = {real(t.n_merkel)};",
              f"  parameter Real p_atm = {real(t.p_atm_Pa)};", f"  parameter Real P_shaft = {real(P_shaft)};",
              f"  parameter Real T_min = {real(t.T_leaving_min_K)};", "  parameter Real drift_fraction = 1e-4;",
              "  parameter Real coc = 4.0;", f"  parameter Real T_wb_switch = {real(ch.T_wb_switch_K)};",
              f"  parameter Real have_chiller = {1.0 if ch.enabled else 0.0};",
              f"  parameter Real T_chiller_set = {real(chiller.chiller_setpoint_K(theta))};",
              "  Real Q_flow_chiller_cond;",
              "  Real z(start=0.0);", "  Real yv[3];", "  Real C_min; Real C_r; Real Z; Real NTU_tower;",
              "  Real T_cells_out;", "  Real dh_air; Real T_air_hi; Real dh_air_max;"]
    ch_decl, ch_eq = chiller.trim_chiller_equations(theta, "T_cw_ret")
    lines += air_decl + dc_decl + cr_decl + ch_decl
    outs = ("y_sec", "y_ff", "x_r", "x_1", "n_pumps_on", "P_pump", "y_valve", "dI", "r_dp", "eps", "w_cw_out",
            "eps_tower", "n_on", "P_fan", "Q_tower", "T_tower_out", "m_flow_air", "T_air_out", "m_flow_evap",
            "m_flow_drift", "m_flow_blowdown", "m_flow_makeup", "Q_flow_chiller", "T_chiller_out", "COP_chiller",
            "P_chiller", "Q_dc_out", "T_dc_out", "P_dc_out", "Q_crah_out", "T_air_crah_out", "T_chw_crah_out",
            "P_crah_out", "e_ctl")
    lines += [f"  output Real {o};" for o in outs]
    lines += ["equation", "  der(z) = 0.0;", "  yv[1] = yv1;", "  yv[2] = yv2;", "  yv[3] = yv3;",
              f"  y_sec = {pump.secondary_flow_expr('Q', '1.0e6', '0.25')};",
              f"  y_ff = {valve.feedforward_opening_expr('Q', '1.0e6', '0.85')};",
              f"  x_r = {pump.shaft_load_expr('w', '0.4', 'r')};",
              f"  x_1 = {pump.shaft_load_expr('w', '0.4')};",
              f"  n_pumps_on = {pump.pumps_running_expr(3, 'w')};",
              f"  P_pump = {p_pump};",
              f"  y_valve = {valve.valve_opening_expr('I', '0.2')};",
              f"  dI = {valve.integrator_rate_expr('e', 'y_valve', 'I', '300.0')};",
              f"  r_dp = {valve.reset_factor_expr('yv', 3, '0.5')};",
              f"  e_ctl = {valve.control_error_expr('T_db', 'T_wb', '2.5')};"]
    lines += ["  " + s for s in hx.counterflow_equations("eps", "C_min", "C_r", "Z", "UA", "cp", "m1", "m2")]
    lines += [f"  w_cw_out = {pipe.tower_water_fraction_expr('w', '0.5')};",
              f"  NTU_tower = {ntu};", f"  eps_tower = {eps_t};",
              f"  n_on = {tower.cells_running_expr('y_fan', 8, '0.3')};",
              f"  P_fan = {tower.fan_power_expr('n_on', '135000.0', '(y_fan * 8.0 / n_on)')};"]
    lines += ["  " + s for s in tower.bypass_equations("Q_tower", "T_tower_out", "Q_cells", "T_cells_out",
                                                       "T_cw_ret", "m_flow_cw", "cp", "T_min")]
    lines += air_eq + tower.water_use_equations() + ch_eq + dc_eq + cr_eq
    lines += ["  Q_dc_out = Q_dc;", "  T_dc_out = T_out_dc;", "  P_dc_out = P_fan_dc;", "  Q_crah_out = Q_crah;",
              "  T_air_crah_out = T_air_out_crah;", "  T_chw_crah_out = T_chw_out_crah;", "  P_crah_out = P_fan_crah;",
              "end Fragments;", ""]
    return "\n".join(lines)


def _numpy_reference(theta, u: dict) -> dict:
    t = theta.tower
    eps, C_min = hx.counterflow_eps(50e3, 4186.0, u["m1"], u["m2"])
    y_valve = float(valve.valve_opening(u["I"], 0.2))
    n_on = tower.cells_running(u["y_fan"], 8, 0.3)
    Q_t, T_t = tower.bypass(u["Q_cells"], u["T_cw_ret"], u["m_flow_cw"], 4186.0, t.T_leaving_min_K)
    m_air, T_ao, W_in, W_out = tower.exit_air(t.p_atm_Pa, u["T_wb"], u["T_cw_ret"], u["y_fan"] * u["m_air_nominal"],
                                              u["Q_air"], u["T_db"])
    evap = m_air * (W_out - W_in)
    drift, blow, make = tower.water_use(evap, u["m_flow_cw"], 1e-4, 4.0)
    Q_ch, P_ch, cop, _ = chiller.trim_chiller(theta, u["m_flow_fac"], u["T_ihx_out"], u["T_wb"], u["T_cw_ret"])
    Q_dc, T_dc, P_dc = drycooler.dry_cooler(DC, u["y_fan"], u["m1"], u["T_cw_ret"], u["T_db"])
    Q_cr, Ta_cr, Tw_cr, P_cr = crah.crah(CR, u["y_fan"], u["m2"], u["T_air_in"], u["T_ihx_out"])
    return {
        "y_sec": pump.secondary_flow_fraction(u["Q"], 1e6, 0.25),
        "y_ff": valve.feedforward_opening(u["Q"], 1e6, 0.85), "x_r": pump.shaft_load_fraction(u["w"], 0.4, u["r"]),
        "x_1": pump.shaft_load_fraction(u["w"], 0.4), "n_pumps_on": pump.pumps_running(PUMP3, u["w"]),
        "P_pump": pump.pump_power_W(PUMP3, 100.0, 997.0, u["w"]), "y_valve": y_valve,
        "dI": valve.integrator_rate(u["e"], y_valve, u["I"], 300.0),
        "r_dp": valve.reset_factor(np.array([u["yv1"], u["yv2"], u["yv3"]]), 0.5), "eps": eps,
        "w_cw_out": pipe.tower_water_fraction(u["w"], 0.5),
        "eps_tower": tower.merkel_effectiveness(t.NTU_nominal, t.n_merkel, u["y_fan"], u["w_cw"]), "n_on": n_on,
        "P_fan": tower.fan_power_W(u["y_fan"], n_on, 8, 135e3), "Q_tower": Q_t, "T_tower_out": T_t,
        "m_flow_air": m_air, "T_air_out": T_ao, "m_flow_evap": evap, "m_flow_drift": drift,
        "m_flow_blowdown": blow, "m_flow_makeup": make, "Q_flow_chiller": Q_ch,
        "T_chiller_out": u["T_ihx_out"] - Q_ch / (u["m_flow_fac"] * 4186.0), "COP_chiller": cop, "P_chiller": P_ch,
        "Q_dc_out": Q_dc, "T_dc_out": T_dc, "P_dc_out": P_dc, "Q_crah_out": Q_cr, "T_air_crah_out": Ta_cr,
        "T_chw_crah_out": Tw_cr, "P_crah_out": P_cr, "e_ctl": valve.control_error(u["T_db"], u["T_wb"], 2.5),
    }


def test_fragments_compiled_in_a_flat_model_match_the_numpy_relations(tmp_path):
    from cooling_fmu.adapter import FMU2CoSimulation
    from cooling_fmu.build import build_fmu

    theta = load_plant_params("theta")
    assert theta.cp_water_J_kgK == 4186.0
    fmu_path = build_fmu(_fragment_model(theta), "Fragments", tmp_path)
    fmu = FMU2CoSimulation(fmu_path)
    fmu.instantiate()
    fmu.setupExperiment(0.0)
    fmu.enterInitializationMode()
    fmu.exitInitializationMode()
    u_vr = fmu.value_references(list(INPUTS))
    rng = np.random.default_rng(22)
    names = list(_numpy_reference(theta, {k: 1.0 for k in INPUTS} | {
        "T_wb": 290.0, "T_cw_ret": 300.0, "m1": 10.0, "m2": 5.0, "m_flow_cw": 50.0, "m_flow_fac": 40.0,
        "T_ihx_out": 300.0, "T_db": 295.0, "T_air_in": 305.0, "y_fan": 0.5, "w_cw": 0.8, "m_air_nominal": 300.0}))
    y_vr = fmu.value_references(names)
    checked = 0
    for k in range(8):
        u = {"Q": rng.uniform(0, 1.5e6), "w": rng.uniform(0.05, 1.0), "r": rng.uniform(0.5, 1.0),
             "I": rng.uniform(-0.2, 1.3), "e": rng.uniform(-1, 1), "m1": rng.uniform(2, 30), "m2": rng.uniform(2, 30),
             "y_fan": rng.uniform(0.05, 1.0), "w_cw": rng.uniform(0.5, 1.0), "T_wb": rng.uniform(255.0, 302.0),
             "Q_air": rng.uniform(0, 8e6), "m_air_nominal": rng.uniform(100, 600), "Q_cells": rng.uniform(0, 6e6),
             "m_flow_cw": rng.uniform(20, 150), "m_flow_fac": rng.uniform(20, 150), "T_db": rng.uniform(260, 315),
             "T_air_in": rng.uniform(300, 315), "yv1": rng.uniform(0, 1), "yv2": rng.uniform(0, 1),
             "yv3": rng.uniform(0, 1)}
        u["T_cw_ret"] = u["T_wb"] + rng.uniform(2.0, 20.0)
        u["T_ihx_out"] = rng.uniform(285.0, 300.0)
        fmu.setReal(u_vr, [u[n] for n in INPUTS])
        fmu.doStep(float(k), 1.0)
        got = dict(zip(names, fmu.getReal(y_vr)))
        ref = _numpy_reference(theta, u)
        for n in names:
            assert got[n] == pytest.approx(float(ref[n]), rel=1e-12, abs=1e-12), (k, n, got[n], float(ref[n]))
            checked += 1
    fmu.terminate()
    fmu.freeInstance()
    assert checked == 8 * len(names)
