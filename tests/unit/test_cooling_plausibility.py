"""Issue #12 kind 6 (plant-impossible): physical bounds of the cooling plant, at load and on its outputs."""

from __future__ import annotations

import math
from pathlib import Path

import h5py
import numpy as np
import pytest

from cooling_fmu.params import PlantParamsError, load_plant_params
from cooling_fmu.plausibility import (APPROACH_TOLERANCE_K, OutputGuard, check_design_heat, design_steady_state,
                                      saturation_temperature_K)

THETA = Path(__file__).resolve().parents[2] / "cooling_fmu" / "plants" / "theta.toml"


@pytest.mark.parametrize("p_Pa,T_K", [(101325.0, 373.124), (200e3, 393.361), (10e3, 318.956)])
def test_boiling_point_matches_iapws_tables(p_Pa, T_K):
    # IAPWS-IF97 saturation temperatures (Wagner & Kretzschmar, International Steam Tables, 2008): 99.974 degC at
    # 101.325 kPa, 120.21 degC at 200 kPa, 45.81 degC at 10 kPa
    assert saturation_temperature_K(p_Pa) == pytest.approx(T_K, abs=0.02)


def test_design_steady_state_of_theta_by_hand():
    # C_sec = 6.4 x 4186, C_fac = 10.6 x 4186, Cr = 0.603774, NTU = 62,000 / 26,790.4 = 2.314262;
    # counterflow eps = (1 - e) / (1 - Cr e), e = exp(-NTU (1 - Cr)) = 0.399728 -> eps = 0.791232;
    # T_sec_ret = 24 + 266,700 / (eps C_sec) = 36.582 degC; T_fac_ret = 24 + 266,700 / C_fac = 30.011 degC
    s = design_steady_state(load_plant_params("theta"))
    c_sec, c_fac = 6.4 * 4186.0, 10.6 * 4186.0
    e = math.exp(-(62e3 / c_sec) * (1 - c_sec / c_fac))
    eps = (1 - e) / (1 - c_sec / c_fac * e)
    assert eps == pytest.approx(0.791232, abs=1e-6) and s["eps"] == pytest.approx(eps, rel=1e-12)
    assert s["T_sec_ret_K"] - 273.15 == pytest.approx(24.0 + 266.7e3 / (eps * c_sec), rel=1e-12)
    assert s["T_sec_ret_K"] - 273.15 == pytest.approx(36.582, abs=1e-3)
    assert s["T_fac_ret_K"] - 273.15 == pytest.approx(30.011, abs=1e-3)
    # the shipped sizing note: the CDU holds its 27 degC supply at design heat with the valve 85 % open, so with it
    # fully open the supply is a little colder
    assert 24.0 < s["T_sec_sup_K"] - 273.15 < 27.0


@pytest.mark.parametrize("name", ["theta", "frontier", "seth"])
def test_shipped_plants_pass_the_design_check(name):
    check_design_heat(load_plant_params(name))


def _variant(tmp_path, old: str, new: str) -> Path:
    text = THETA.read_text(encoding="utf-8")
    assert text.count(old) == 1
    p = tmp_path / "variant.toml"
    p.write_text(text.replace(old, new), encoding="utf-8")
    return p


def test_plant_that_cannot_reject_its_design_heat_is_refused_at_load(tmp_path):
    """plant-impossible: facility flow 0.1 kg/s (a typo for 10.1) heats the facility water by
    266,700 / (0.1 x 4186) = 637 K; refused when loaded, naming file and field."""
    p = _variant(tmp_path, "m_flow_fac_nominal_kg_s = 10.6", "m_flow_fac_nominal_kg_s = 0.1")
    with pytest.raises(PlantParamsError, match=r"m_flow_fac_nominal_kg_s = 0\.1 kg/s heats the facility water by "
                                               r"637 K to 661 degC") as e:
        load_plant_params(p)
    assert str(p) in str(e.value)
    # a heat exchanger far too small: 266.7 kW through UA = 200 W/K needs a secondary return over 1,000 degC
    p = _variant(tmp_path, "UA_hx_W_K = 62.0e3", "UA_hx_W_K = 200.0")
    with pytest.raises(PlantParamsError, match="cdu.UA_hx_W_K = 200 W/K"):
        load_plant_params(p)


@pytest.mark.parametrize("old,new,match", [
    # secondary supply 23 degC below the 24 degC facility supply: a negative design approach
    ("T_sec_sup_set_K = 300.15", "T_sec_sup_set_K = 296.15", r"cdu.T_sec_sup_set_K = 296.15 K must be above "
                                                              r"tower.T_fac_sup_set_K = 297.15 K.*-1 K"),
    # 107 degC secondary supply: no longer liquid at 101.325 kPa (boils at 373.12 K)
    ("T_sec_sup_set_K = 300.15", "T_sec_sup_set_K = 380.15", r"380.15 K is not a liquid-water temperature"),
    ("T_fac_sup_set_K = 297.15", "T_fac_sup_set_K = 272.15", r"tower.T_fac_sup_set_K = 272.15 K is not a liquid"),
])
def test_setpoints_must_be_liquid_with_a_positive_design_approach(tmp_path, old, new, match):
    with pytest.raises(PlantParamsError, match=match):
        load_plant_params(_variant(tmp_path, old, new))


def test_cli_refuses_the_impossible_plant_in_one_line(tmp_path, capsys):
    from scheduler_sim.app.cli import main

    plant = _variant(tmp_path, "m_flow_fac_nominal_kg_s = 10.6", "m_flow_fac_nominal_kg_s = 0.1")
    swf = tmp_path / "one.swf"
    swf.write_text("1 0 0 100 1 -1 -1 1 200 -1 1 1 1 -1 1 -1 -1 -1\n")
    cfg = tmp_path / "run.toml"
    cfg.write_text(f'name = "lowflow"\n[trace]\npath = "{swf}"\nwindow_start_days = 0\nwindow_days = 0.5\n'
                   f'[cooling]\nplant = "{plant}"\nstep_s = 60\nweather = "constant"\n[output]\ninterval_s = 300\n'
                   f'progress = false\n')
    assert main(["run", str(cfg), "--out", str(tmp_path / "o.h5"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot reject its design heat" in err[0] and not (tmp_path / "o.h5").exists()


def test_output_guard_bounds_by_name_and_unit():
    names = ["T_sec_sup[1]", "T_sec_sup[2]", "T_fac_sup", "T_tower_out", "P_cooling", "T_air_K_like"]
    units = ["K", "K", "K", "K", "W", "degC"]
    g = OutputGuard(names, units)
    ok = np.array([[300.0, 301.0, 297.0, 296.0, 1e4, -50.0]] * 3)
    assert g.check(np.array([60.0, 120.0, 180.0]), ok, np.full(3, 290.0)) is None and not g.violations
    rows = ok.copy()
    rows[1, 1] = 373.2          # CDU 2 supply boils (373.124 K at 101.325 kPa)
    rows[2, 0] = 297.0 - APPROACH_TOLERANCE_K - 0.1  # CDU 1 supply colder than the facility water
    rows[2, 3] = 289.0          # tower water 1 K below the 290 K wet-bulb
    rows[0, 4] = 1e9            # not a temperature: never checked
    rows[:, 5] = 200.0          # unit is not K: never checked
    first = g.check(np.array([240.0, 300.0, 360.0]), rows, np.full(3, 290.0))
    assert first == 1
    v = g.violations
    assert list(v) == ["T_sec_sup boil", "T_sec_sup approach", "T_tower_out approach"]
    assert v["T_sec_sup boil"].name == "T_sec_sup[2]" and v["T_sec_sup boil"].t_s == 300.0
    assert v["T_sec_sup approach"].value == pytest.approx(-APPROACH_TOLERANCE_K - 0.1)
    assert v["T_tower_out approach"].value == pytest.approx(-1.0)
    frozen = ok.copy()
    frozen[0, 2] = 273.0
    assert g.check(np.array([420.0, 480.0, 540.0]), frozen, np.full(3, 290.0)) == 0
    assert g.violations["T_fac_sup freeze"].value == 273.0


class _HeatingPlant:
    """A stand-in plant whose facility supply warms by 1 K per step from 340 K: boils (373.124 K) at step 34."""

    output_names = ["T_fac_sup", "P_cooling"]
    output_units = ["K", "W"]
    P_cooling_index = 1

    def __init__(self) -> None:
        self.k = 0

    def initialize(self, heat_w, T_wb_K):
        return np.array([340.0, 0.0])

    def run(self, heat_w, T_wb_K):
        m = heat_w.shape[0]
        T = 340.0 + np.arange(self.k + 1, self.k + m + 1, dtype=float)
        self.k += m
        return np.column_stack([T, np.full(m, 1e3)])

    def close(self) -> None:
        pass


@pytest.mark.parametrize("mode", ["warn", "stop"])
def test_run_leaving_the_bounds_is_recorded_or_stopped(tmp_path, mode):
    from power.system import System
    from scheduler_sim.io.hdf5 import write_run
    from scheduler_sim.kernel.simulation import Simulation, SimulationConfig
    from tests.conftest import make_jobs, tiny_system_spec

    system = System.from_spec(tiny_system_spec(), source="tiny")
    jobs = make_jobs([(1, 0.0, 2, 6000.0, 7200.0)])
    sim = Simulation(jobs, system, "fcfs",
                     SimulationConfig(window_start_s=0.0, window_s=3600.0, step_s=60.0, interval_s=300.0, on_implausible=mode),
                     plant=_HeatingPlant(), wet_bulb_K=lambda t: np.full(np.shape(t), 290.0))
    res = sim.run()
    # step k (1-based) ends at 60 k s with T = 340 + k: first >= 373.124 K at k = 34, t = 2,040 s
    if mode == "warn":
        rec = res.info["plant_out_of_bounds"]
        assert len(rec) == 1 and rec[0]["name"] == "T_fac_sup" and rec[0]["first_t_s"] == 2040.0
        assert rec[0]["first_value"] == 374.0 and rec[0]["steps"] == 100 - 33
        assert any("T_fac_sup" in w and "boiling" in w for w in res.info["warnings"])
        assert res.info["complete"]
        path = write_run(tmp_path / "r.h5", res, "{}", run_name="r", system_name="tiny", policy="fcfs", seed=0,
                         input_checksums={})
        with h5py.File(path) as f:
            assert '"first_t_s": 2040.0' in f.attrs["plant_out_of_bounds_json"]
    else:
        assert not res.info["complete"] and "T_fac_sup" in res.info["failure"]
        assert res.info["failed_at_s"] == 2040.0
        # partial results end at the last whole 300 s interval before the step that left the bounds
        assert res.info["t_final_s"] == 1800.0 and res.time_s[-1] == 1500.0
