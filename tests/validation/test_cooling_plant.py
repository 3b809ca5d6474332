"""Validation of the cooling-plant FMU against physics that cannot be fooled: analytic steady state, energy
balance over a day with real Golden weather, zero heat -> minimum pump work, wet-bulb -> supply temperature."""

from __future__ import annotations

import numpy as np
import pytest

from cooling_fmu.modelica import analytic_steady_state
from cooling_fmu.params import load_plant_params
from cooling_fmu.plant import CoolingPlant
from cooling_fmu.weather import Weather, default_weather

pytestmark = pytest.mark.fmu

SCALARS = ("T_fac_sup", "T_fac_ret", "P_pump_fac", "P_fan_tower", "Q_flow_tower", "P_cooling", "E_stored")


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("fmu-cache")


@pytest.fixture(scope="module")
def theta(cache):
    with CoolingPlant("theta", step_s=15.0, cache_dir=cache) as plant:
        yield plant


def _compare(plant: CoolingPlant, y: np.ndarray, ss: dict, atol_K: float, rtol: float) -> None:
    n = plant.n_cdu
    for key in ("T_sec_sup", "T_sec_ret"):
        cols = [plant.index(f"{key}[{i}]") for i in range(1, n + 1)]
        np.testing.assert_allclose(y[cols], ss[key], rtol=0, atol=atol_K, err_msg=key)
    cols = [plant.index(f"P_pump_sec[{i}]") for i in range(1, n + 1)]
    np.testing.assert_allclose(y[cols], ss["P_pump_sec"], rtol=rtol, atol=1e-9)
    for key in SCALARS:
        tol = dict(rtol=0, atol=atol_K) if key.startswith("T_") else dict(rtol=rtol, atol=1e-6)
        np.testing.assert_allclose(y[plant.index(key)], ss[key], err_msg=key, **tol)


LOADS = [0.15, 0.6, 1.0]  # fraction of design heat per CDU (with a per-CDU spread below)
WET_BULBS = [268.15, 293.15]  # -5 C (winter), 20 C (humid summer)


@pytest.mark.parametrize("load", LOADS)
@pytest.mark.parametrize("T_wb", WET_BULBS)
def test_steady_state_start_stays_at_analytic(theta, load, T_wb):
    p = theta.params
    q = load * p.cdu.Q_flow_nominal_W * np.linspace(0.7, 1.3, p.n_cdu)
    ss = analytic_steady_state(p, q, T_wb)
    theta.reset()
    y0 = theta.initialize(q, T_wb, steady=True)
    _compare(theta, y0, ss, atol_K=1e-9, rtol=1e-12)
    out = theta.run(np.tile(q, (40, 1)), np.full(40, T_wb))
    _compare(theta, out[-1], ss, atol_K=1e-9, rtol=1e-12)


@pytest.mark.parametrize("load", LOADS)
@pytest.mark.parametrize("T_wb", WET_BULBS)
def test_cold_start_converges_to_analytic(theta, load, T_wb):
    p = theta.params
    q = load * p.cdu.Q_flow_nominal_W * np.linspace(0.7, 1.3, p.n_cdu)
    ss = analytic_steady_state(p, q, T_wb)
    theta.reset()
    theta.initialize(q, T_wb, steady=False)
    n = 24 * 240  # 24 h at 15 s: > 30 facility-loop time constants even at minimum flow
    out = theta.run(np.tile(q, (n, 1)), np.full(n, T_wb))
    _compare(theta, out[-1], ss, atol_K=1e-6, rtol=1e-7)


def test_frontier_steady_state(cache):
    with CoolingPlant("frontier", cache_dir=cache) as plant:
        p = plant.params
        q = 0.8 * p.cdu.Q_flow_nominal_W * np.linspace(0.5, 1.2, p.n_cdu)
        ss = analytic_steady_state(p, q, 285.0)
        plant.initialize(q, 285.0)
        y = plant.step(q, 285.0)
        _compare(plant, y, ss, atol_K=1e-9, rtol=1e-12)
        # tower fans dominate cooling power in the Frontier-like plant at design load
        design = np.full(p.n_cdu, p.cdu.Q_flow_nominal_W)
        plant.reset()
        plant.initialize(design, 285.0)
        y = plant.step(design, 285.0)
        assert y[plant.index("P_fan_tower")] / y[plant.P_cooling_index] == pytest.approx(0.7297, abs=1e-3)


def test_zero_heat_gives_minimum_pump_work(theta):
    p = theta.params
    theta.reset()
    theta.initialize(np.zeros(p.n_cdu), 290.0, steady=False)
    out = theta.run(np.zeros((200, p.n_cdu)), np.full(200, 290.0))
    y = out[-1]
    # pumps at their minimum-flow floor by design: P = P_nominal x y_min^3
    sec = y[[theta.index(f"P_pump_sec[{i}]") for i in range(1, p.n_cdu + 1)]]
    np.testing.assert_allclose(sec, 2200.0 * 0.3**3, rtol=1e-12)  # 59.4 W each
    assert y[theta.index("P_pump_fac")] == pytest.approx(27e3 * 0.2**3, rel=1e-12)  # 216 W
    assert y[theta.index("P_fan_tower")] == pytest.approx(25e3 * 0.2**3, rel=1e-12)  # 200 W
    assert y[theta.index("Q_flow_tower")] == pytest.approx(0.0, abs=1e-6)
    # idle water sits at the tower leaving temperature
    assert y[theta.index("T_sec_sup[1]")] == pytest.approx(294.0, abs=1e-9)


def test_hotter_wet_bulb_gives_hotter_supply(theta):
    p = theta.params
    q = np.full(p.n_cdu, 0.7 * p.cdu.Q_flow_nominal_W)
    sup = []
    for T_wb in (270.0, 285.0, 295.0):
        theta.reset()
        theta.initialize(q, T_wb)
        sup.append(theta.step(q, T_wb)[theta.index("T_sec_sup[1]")])
    assert sup[0] < sup[1] < sup[2]
    assert sup[2] - sup[1] == pytest.approx(10.0, abs=1e-9)  # supply follows wet-bulb 1:1 at fixed load


def test_daily_energy_balance_with_golden_weather(theta):
    p = theta.params
    dt = theta.step_s
    n = 86_400 // int(dt)
    t_end = dt * np.arange(1, n + 1)
    weather = default_weather(Weather.offset_for(196))  # July 15, Golden CO
    T_wb = weather.wet_bulb_K(t_end - 0.5 * dt)  # step-average ~ mid-step value
    assert T_wb.max() - T_wb.min() > 2.0  # weather really varies over the day
    rng = np.random.default_rng(20261130)
    base = 0.3 + 0.6 * (0.5 + 0.5 * np.sin(2 * np.pi * t_end / 86_400.0))
    jumps = np.repeat(rng.uniform(0.6, 1.2, size=(n // 240, p.n_cdu)), 240, axis=0)
    q = p.cdu.Q_flow_nominal_W * base[:, None] * jumps
    theta.reset()
    y0 = theta.initialize(q[0], T_wb[0], steady=True)
    out = theta.run(q, T_wb)
    heat_in = q.sum() * dt
    Q_tower = np.concatenate([[y0[theta.index("Q_flow_tower")]], out[:, theta.index("Q_flow_tower")]])
    tower_out = np.sum(0.5 * (Q_tower[1:] + Q_tower[:-1])) * dt  # trapezoid of the sampled outputs
    dE = out[-1, theta.index("E_stored")] - y0[theta.index("E_stored")]
    closure = (heat_in - tower_out - dE) / heat_in
    assert abs(closure) < 1e-3, closure
    # the FMU's own integrals close to round-off
    assert out[-1, theta.index("E_heat_in")] == pytest.approx(heat_in, rel=1e-12)
    exact = (heat_in - out[-1, theta.index("E_tower_out")] - dE) / heat_in
    assert abs(exact) < 1e-9, exact
    # and the cooling energy integral agrees with the sampled power
    P = np.concatenate([[y0[theta.P_cooling_index]], out[:, theta.P_cooling_index]])
    e_cool = np.sum(0.5 * (P[1:] + P[:-1])) * dt
    assert out[-1, theta.index("E_cooling_out")] == pytest.approx(e_cool, rel=1e-3)


def test_step_and_run_agree_and_reset_reproduces(theta):
    p = theta.params
    rng = np.random.default_rng(7)
    q = rng.uniform(0, 1.1 * p.cdu.Q_flow_nominal_W, size=(50, p.n_cdu))
    tw = rng.uniform(270, 295, size=50)
    theta.reset()
    theta.initialize(q[0], tw[0])
    a = np.array([theta.step(q[k], tw[k]) for k in range(50)])
    assert theta.time_s == 50 * 15.0
    theta.reset()
    theta.initialize(q[0], tw[0])
    b = theta.run(q, tw)
    np.testing.assert_array_equal(a, b)
    assert np.all(np.isfinite(b))
