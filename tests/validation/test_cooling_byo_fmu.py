"""Bring-your-own FMU: a site FMU with other variable names and degC / kW / kWh units replaces the generated plant
through a variable map; conversions are checked at the boundary, results are checked against the site model's own
closed-form physics. Also: FMI failures keep the completed steps (PlantStepError)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cooling_fmu.adapter import FMUError, load_variable_map
from cooling_fmu.build import build_fmu
from cooling_fmu.params import load_plant_params
from cooling_fmu.plant import CoolingPlant, PlantStepError

pytestmark = pytest.mark.fmu

MAP = Path(__file__).resolve().parents[1] / "data" / "site_plant_map.yaml"
N = 3
UA_kW_K = 150.0  # loop-to-wet-bulb conductance of the site model [kW/K]
M_kg = 50_000.0  # loop water [kg]


def _site_model() -> str:
    """A 'site' plant in kW and degC: one water volume rejecting UA (T - T_wb); pumps 20 kW + 2 % of the heat."""
    per_cdu = "\n".join(f'  output Real cdu{i}_supply_degC(unit="degC") "CDU {i} supply";' for i in range(1, N + 1))
    eqs = "\n".join(f"  cdu{i}_supply_degC = loopTemp_degC + 2.0 + 0.01 * cduHeat_kW[{i}];" for i in range(1, N + 1))
    return f"""model SiteLoop "differently named site plant, kW / degC / kWh"
  parameter Real UA(unit="kW/K") = {UA_kW_K};
  parameter Real M(unit="kg") = {M_kg};
  input Real cduHeat_kW[{N}](each unit="kW", each start=0.0);
  input Real wetBulb_degC(unit="degC", start=10.0);
  Real T(unit="degC", start=20.0);
  Real eHeat(unit="kWh", start=0.0);
  Real eTower(unit="kWh", start=0.0);
  Real eCool(unit="MJ", start=0.0);
{per_cdu}
  output Real loopTemp_degC(unit="degC");
  output Real towerHeat_kW(unit="kW");
  output Real coolingPower_kW(unit="kW");
  output Real heatIn_kWh(unit="kWh");
  output Real towerOut_kWh(unit="kWh");
  output Real coolingEnergy_MJ(unit="MJ");
  output Real stored_kWh(unit="kWh");
equation
  towerHeat_kW = UA * (T - wetBulb_degC);
  M * 4.186 * der(T) = sum(cduHeat_kW) - towerHeat_kW;
  loopTemp_degC = T;
{eqs}
  coolingPower_kW = 20.0 + 0.02 * sum(cduHeat_kW);
  der(eHeat) = sum(cduHeat_kW) / 3600.0;
  der(eTower) = towerHeat_kW / 3600.0;
  der(eCool) = coolingPower_kW / 1000.0;
  heatIn_kWh = eHeat;
  towerOut_kWh = eTower;
  coolingEnergy_MJ = eCool;
  stored_kWh = M * 4.186 * (T - 20.0) / 3600.0;
end SiteLoop;
"""


@pytest.fixture(scope="module")
def site_fmu(fmu_cache):
    return build_fmu(_site_model(), "SiteLoop", fmu_cache)


@pytest.fixture(scope="module")
def params():
    return load_plant_params("theta").model_copy(update={"n_cdu": N})


def test_site_fmu_runs_in_si_through_the_map(site_fmu, params):
    q = np.array([300e3, 200e3, 100e3])  # W -> 300, 200, 100 kW
    with CoolingPlant(params, step_s=60.0, fmu_path=site_fmu, map_path=MAP) as plant:
        assert not plant.own_model and plant.output_units[plant.index("T_fac_sup")] == "K"
        plant.initialize(q, 288.15, warmup_s=3 * 86400)  # warm-up to the site model's steady state
        y = plant.run(np.tile(q, (60, 1)), np.full(60, 288.15))[-1]
        # closed form of the site model: T = T_wb + Q / UA = 15 C + 600 kW / 150 kW/K = 19 C = 292.15 K
        assert y[plant.index("T_fac_sup")] == pytest.approx(292.15, abs=1e-6)
        assert y[plant.index("Q_flow_tower")] == pytest.approx(600e3, rel=1e-7)  # kW -> W
        assert y[plant.index("P_cooling")] == pytest.approx(20e3 + 0.02 * 600e3, rel=1e-12)  # 32 kW -> W
        # pattern-named per-CDU outputs: 19 C + 2 + 0.01 x 300 kW = 24 C = 297.15 K
        assert y[plant.index("T_sec_sup[1]")] == pytest.approx(297.15, abs=1e-6)
        # kWh -> J: one hour of 600 kW after the 60 steps = 2.16e9 J (the warm-up days are counted too)
        assert y[plant.index("E_heat_in")] == pytest.approx(600e3 * (3 * 86400 + 3600), rel=1e-9)


def test_site_fmu_in_the_simulation(site_fmu, params):
    from power.system import System
    from scheduler_sim.kernel.simulation import Simulation, SimulationConfig
    from tests.conftest import make_jobs, tiny_system_spec

    system = System.from_spec(tiny_system_spec(n_nodes=6, n_cdus=N), source="tiny")
    jobs = make_jobs([(1, 0, 2, 3600, 7200), (2, 600, 4, 1800, 3600)], origin=0.0)
    with CoolingPlant(params, step_s=15.0, fmu_path=site_fmu, map_path=MAP) as plant:
        sim = Simulation(jobs, system, "fcfs",
                         SimulationConfig(window_start_s=0.0, window_s=86400.0, step_s=15.0, interval_s=60.0), plant=plant,
                         wet_bulb_K=lambda t: np.full(np.shape(t), 285.0))
        res = sim.run()
        final = dict(zip(plant.output_names, sim.plant_state))
    # the site FMU received exactly the rack heat, in kW, and its kWh total converts back to the same joules
    assert final["E_heat_in"] == pytest.approx(res.totals["E_cdu_heat_J"], rel=1e-9)
    assert res.totals["E_cooling_J"] == pytest.approx(final["E_cooling_out"], rel=1e-9)
    assert res.summary["PUE"] > 1.0


def test_unit_mismatch_and_wrong_scale_are_refused(site_fmu, params, tmp_path):
    text = MAP.read_text()
    bad = tmp_path / "bad_unit.yaml"
    bad.write_text(text.replace("{fmu: towerHeat_kW, unit: W, fmu_unit: kW}", "{fmu: towerHeat_kW, unit: W}"))
    with pytest.raises(ValueError, match="unit mismatch.*towerHeat_kW"):
        CoolingPlant(params, fmu_path=site_fmu, map_path=bad)
    wrong = tmp_path / "wrong_scale.yaml"
    wrong.write_text(text.replace("fmu_unit: kW, per_cdu: true}", "fmu_unit: kW, scale: 1.0, per_cdu: true}"))
    with pytest.raises(ValueError, match="kW -> W is value \\* 1000.0"):
        load_variable_map(N, wrong)
    unknown = tmp_path / "unknown.yaml"
    unknown.write_text(text.replace("fmu_unit: MJ}", "fmu_unit: therm}"))
    with pytest.raises(ValueError, match="no known conversion from 'therm'"):
        load_variable_map(N, unknown)


def test_failed_step_keeps_completed_outputs(fmu_cache):
    # The generated FMUs never fail a step, so the failure is injected at the FMI boundary: fmi2DoStep returns
    # fmi2Error (3) on the 6th call. What is tested is hpctwin's handling, not a real FMU fault.
    q = np.full((10, 6), 200e3)
    tw = np.full(10, 285.0)
    with CoolingPlant("theta", step_s=15.0, cache_dir=fmu_cache) as plant:
        plant.initialize(q[0], 285.0)
        ref = plant.run(q, tw)
        plant.reset()
        plant.initialize(q[0], 285.0)
        plant._stepper.run_c = None  # the Python loop (site FMUs); the C loop's failure path is tested below
        real = plant._fmu.raw.fmi2DoStep
        calls = {"n": 0}

        def failing(comp, t, h, flag):
            calls["n"] += 1
            return 3 if calls["n"] == 6 else real(comp, t, h, flag)

        plant._fmu.raw.fmi2DoStep = failing
        with pytest.raises(PlantStepError) as exc:
            plant.run(q, tw)
        err = exc.value
        assert isinstance(err, FMUError) and err.function == "fmi2DoStep" and err.status == 3
        assert err.completed_steps == 5 and err.time_s == 5 * 15.0
        np.testing.assert_array_equal(err.completed_outputs, ref[:5])
        assert "Q_flow_CDU[1]" in str(err) and "t = 75" in str(err) and "5 completed steps" in str(err)
        assert plant.time_s == 5 * 15.0  # the plant stays at the last completed step
        plant._fmu.raw.fmi2DoStep = real


def test_failed_step_in_the_fmu_loop_is_reported(fmu_cache):
    # The FMU's own loop (hpctwin_run) stops at the first non-OK status and says how many steps completed. The
    # fault is injected by asking it for an output value reference the FMU does not have (fmi2GetReal -> fmi2Error).
    q = np.full((4, 6), 200e3)
    tw = np.full(4, 285.0)
    with CoolingPlant("theta", step_s=15.0, cache_dir=fmu_cache) as plant:
        assert plant.raw_run_available
        plant.initialize(q[0], 285.0)
        bad = plant._stepper._vr_out.copy()
        bad[-1] = 10_000
        plant._stepper._a_vr_out = bad.ctypes.data
        with pytest.raises(PlantStepError) as exc:
            plant.run(q, tw)
        err = exc.value
        assert err.function == "fmi2GetReal" and err.status == 3 and err.completed_steps == 0
