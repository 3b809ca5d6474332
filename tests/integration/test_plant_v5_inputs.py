"""Plant v5's optional inputs (issue 22 items 4 and 6): the weather's dry-bulb and the air side's heat reach a plant
that takes them (``uses_dry_bulb`` / ``uses_air_side_heat``), with the values of the weather file and of the facility
model, and a plant (or site FMU) without them keeps its two-input protocol."""

from __future__ import annotations

import numpy as np
import pytest

from cooling_fmu.weather import Weather, load_weather, resolve_weather_file
from power.sizing import facility_overheads
from power.system import load_system
from scheduler_sim.kernel.config import SimulationConfig
from scheduler_sim.kernel.simulation import Simulation
from tests.conftest import make_jobs

STEP = 15.0
JOBS = [(1, 0.0, 2, 1000.0, 2000.0), (2, 7.0, 1, 333.3, 900.0), (3, 400.0, 3, 2500.7, 4000.0)]


def test_weather_file_carries_its_dry_bulb():
    path = resolve_weather_file("knoxville")  # the shipped Knoxville TMY3 EPW
    df, _ = load_weather(path)
    w = Weather.from_file(path)
    t = df["time_s"].to_numpy()[:200]
    np.testing.assert_array_equal(w.dry_bulb_K(t), df["T_db_K"].to_numpy()[:200])  # the file's hourly values
    assert np.all(w.dry_bulb_K(t) >= w.wet_bulb_K(t) - 1e-9)
    # the same calendar as the wet-bulb (interpolated between stamps, periodic, aligned by at_calendar)
    wc = w.at_calendar(1_656_633_600.0, -5.0)  # 2022-07-01 00:00 UTC
    assert wc.has_dry_bulb and wc.dry_bulb_K(0.0) == pytest.approx(float(w.dry_bulb_K(wc.offset_s)), abs=1e-9)
    assert not Weather.constant(290.0).has_dry_bulb and Weather.constant(290.0).dry_bulb_K(0.0) is None


class _Recorder:
    """A plant double that records the keyword inputs it is given (two outputs)."""

    output_names = ["P_cooling", "E_cooling_out"]
    output_units = ["W", "J"]
    P_cooling_index = 0

    def __init__(self, takes: bool):
        if takes:
            self.uses_dry_bulb = self.uses_air_side_heat = True
        self.kw: list[dict] = []
        self.E = 0.0

    def initialize(self, heat_w, T_wb_K, **kw):
        self.kw.append(kw)
        return np.zeros(2)

    def run(self, heat, twb, **kw):
        self.kw.append(kw)
        out = np.zeros((len(twb), 2))
        out[:, 0] = 0.01 * heat.sum(axis=1)
        self.E += out[:, 0].sum() * STEP
        out[:, 1] = self.E
        return out


def _sim(system, plant):
    return Simulation(make_jobs(JOBS), system, "easy",
                      SimulationConfig(window_start_s=0.0, window_s=6000.0, step_s=STEP, interval_s=60.0), plant=plant,
                      wet_bulb_K=lambda t: np.full(np.shape(t), 290.0),
                      dry_bulb_K=lambda t: np.full(np.shape(t), 301.0))


def test_dry_bulb_and_air_side_heat_reach_only_a_plant_that_takes_them():
    system = load_system("frontier")  # 5.5 % of the rack heat to room air, an air side with a chiller
    p = _Recorder(takes=True)
    res = _sim(system, p).run()
    assert p.kw[0] == {"T_db_K": 301.0, "Q_air_side_W": pytest.approx(p.kw[0]["Q_air_side_W"])}
    runs = p.kw[1:]
    assert runs and all(set(k) == {"T_db_K", "Q_air_side_W"} for k in runs)
    assert all(np.all(k["T_db_K"] == 301.0) for k in runs)
    # the air side's heat is the facility model's: coil load + chiller + pumps at the IT power of each step
    ov = facility_overheads(system)
    q = np.concatenate([k["Q_air_side_W"] for k in runs])
    P_it = res.facility["P_it_W"]
    assert q.min() > 0 and q.size >= P_it.size
    rej = ov.air_side_rejected_W(np.array([P_it.max()]), np.array([290.0]))[0]
    assert q.max() == pytest.approx(rej, rel=0.05)  # interval means vs step values: within the load's spread
    # a plant without the attributes (a site FMU's map without T_db / Q_flow_air_side) gets neither
    p2 = _Recorder(takes=False)
    _sim(system, p2).run()
    assert all(k == {} for k in p2.kw)
