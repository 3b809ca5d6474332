"""Unit tests: plant descriptions, generated Modelica, analytic steady state (exact numbers, arithmetic in comments)."""

from __future__ import annotations

import numpy as np
import pytest

from cooling_fmu.modelica import analytic_steady_state, generate_plant_modelica, model_name_for
from cooling_fmu.params import PlantParamsError, load_plant_params, plant_names


def test_shipped_plants_load():
    assert {"theta", "frontier"} <= set(plant_names())
    theta, frontier = load_plant_params("theta"), load_plant_params("frontier")
    assert theta.n_cdu == 6 and frontier.n_cdu == 25
    # Theta: 6 x 266.7 kW = 1.6002 MW design IT heat (4,392 nodes x ~350 W = 1.537 MW, rounded up)
    assert theta.n_cdu * theta.cdu.Q_flow_nominal_W == pytest.approx(1.6e6, rel=1e-3)
    # Frontier: 25 x 1.128 MW = 28.2 MW (RAPS full load)
    assert frontier.n_cdu * frontier.cdu.Q_flow_nominal_W == pytest.approx(28.2e6, rel=1e-9)


def test_frontier_fans_dominate_cooling_power_at_design():
    p = load_plant_params("frontier")
    ss = analytic_steady_state(p, np.full(p.n_cdu, p.cdu.Q_flow_nominal_W), 290.0)
    # 1080 / (25 x 6 + 250 + 1080) = 1080 / 1480 = 0.7297 (arXiv 2603.01198: fans ~73 %)
    assert ss["P_fan_tower"] / ss["P_cooling"] == pytest.approx(1080 / 1480, rel=1e-12)
    assert 0.72 < ss["P_fan_tower"] / ss["P_cooling"] < 0.74


def test_validation_error_names_file_and_field(tmp_path):
    text = (load_plant_params.__globals__["PLANTS_DIR"] / "theta.toml").read_text()
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace("eps_hx = 0.8", "eps_hx = 1.5"))
    with pytest.raises(PlantParamsError) as exc:
        load_plant_params(bad)
    assert str(bad) in str(exc.value) and "cdu.eps_hx" in str(exc.value)
    missing = tmp_path / "missing.toml"
    missing.write_text(text.replace("approach_K = 4.0", ""))
    with pytest.raises(PlantParamsError, match=r"tower\.approach_K"):
        load_plant_params(missing)
    with pytest.raises(PlantParamsError, match="not found"):
        load_plant_params(tmp_path / "nope.toml")


def test_params_are_frozen():
    p = load_plant_params("theta")
    with pytest.raises(Exception):
        p.n_cdu = 7  # type: ignore[misc]


def test_generated_modelica_is_flat_and_sized():
    p = load_plant_params("theta")
    src = generate_plant_modelica(p)
    name = model_name_for(p)
    assert src.startswith(f"model {name}") and src.rstrip().endswith(f"end {name};")
    assert "connect(" not in src and "import" not in src and "Modelica." not in src
    assert "input Real Q_flow_CDU[6]" in src and "input Real T_wb(" in src
    assert "for i in 1:6 loop" in src


def test_analytic_steady_state_hand_numbers():
    p = load_plant_params("theta")
    q = np.array([266.7e3, 133.35e3, 0.0, 266.7e3, 266.7e3, 400.0e3])
    ss = analytic_steady_state(p, q, 288.15)
    # T_fac_sup = 288.15 + 4 = 292.15 K
    assert ss["T_fac_sup"] == pytest.approx(292.15, abs=1e-12)
    # CDU 1 at design: C_min = min(6.4, 10.6) x 4186 = 26,790.4 W/K; dT_hx = 266.7e3 / (0.8 x 26,790.4) = 12.4438 K
    assert ss["T_sec_ret"][0] - 292.15 == pytest.approx(266.7e3 / (0.8 * 6.4 * 4186), rel=1e-12)
    # supply = return - Q / (m_sec cp) = return - 266.7e3 / 26,790.4 = return - 9.955 K
    assert ss["T_sec_ret"][0] - ss["T_sec_sup"][0] == pytest.approx(266.7e3 / (6.4 * 4186), rel=1e-12)
    # CDU 2 at half load: y_sec = 0.5, P = 2200 x 0.125 = 275 W; CDU 3 idle: y = 0.3, P = 2200 x 0.027 = 59.4 W
    assert ss["P_pump_sec"][1] == pytest.approx(275.0, rel=1e-12)
    assert ss["P_pump_sec"][2] == pytest.approx(59.4, rel=1e-12)
    assert ss["T_sec_sup"][2] == ss["T_sec_ret"][2] == pytest.approx(292.15)
    # CDU 6 overloaded (1.5x): flows capped at nominal, pump at P_nominal
    assert ss["P_pump_sec"][5] == pytest.approx(2200.0)
    # towers reject all heat at steady state
    assert ss["Q_flow_tower"] == pytest.approx(q.sum(), rel=1e-15)
    # facility flow = 10.6 x (1 + 0.5 + 0.2 + 1 + 1 + 1) = 49.82 kg/s; P = 27e3 x (49.82 / 63.6)^3
    assert ss["P_pump_fac"] == pytest.approx(27e3 * (49.82 / 63.6) ** 3, rel=1e-12)
    assert ss["T_fac_ret"] - 292.15 == pytest.approx(q.sum() / (49.82 * 4186), rel=1e-12)
    assert ss["P_cooling"] == pytest.approx(ss["P_pump_sec"].sum() + ss["P_pump_fac"] + ss["P_fan_tower"])


def test_analytic_steady_state_rejects_bad_heat():
    p = load_plant_params("theta")
    with pytest.raises(ValueError):
        analytic_steady_state(p, np.zeros(5), 290.0)
    with pytest.raises(ValueError):
        analytic_steady_state(p, np.array([-1.0, 0, 0, 0, 0, 0]), 290.0)
