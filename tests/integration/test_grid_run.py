"""A run with the dynamic [grid] keys (#15) end to end: events, ramp limit, battery and a periodic profile on one day
of the Theta trace (cooling off), written to /grid; a run without them keeps the earlier configuration JSON."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest

from scheduler_sim.app.config import load_config
from scheduler_sim.app.runner import run_one

GRID = {"ramp_limit_MW_per_min": 0.2,
        "event": [{"start_day": 181.5, "duration_h": 3.0, "reduction_fraction": 0.3, "label": "peak"},
                  {"start_day": 181.8, "duration_h": 1.0, "cap_MW": 0.1, "label": "impossible"}],
        "battery": {"capacity_kWh": 200.0, "power_kW": 500.0, "round_trip_efficiency": 0.85},
        "power_profile": {"period_s": 20.0, "duty": 0.7, "low_W": 150.0, "high_W": 300.0, "min_nodes": 64}}


@pytest.fixture(scope="module")
def grid_run(tmp_path_factory):
    cfg = load_config(None).with_overrides({"trace.window_days": 1.0, "output.progress": False, "name": "grid",
                                            "cooling.enabled": False, "grid": GRID})
    path = tmp_path_factory.mktemp("grid") / "grid.h5"
    return run_one(cfg, path, progress=False), path


def test_grid_group_written_and_battery_closes(grid_run):
    out, path = grid_run
    with h5py.File(path) as f:
        assert "grid" in json.loads(f.attrs["config_json"])
        ev = f["grid/events"]
        labels = [x.decode() for x in ev["label"][()]]
        assert labels == ["peak", "impossible"]
        # 0.1 MW is below the idle Theta-like machine: reported infeasible, not met
        assert ev["feasible"][1] == 0 and ev["met"][1] == 0
        assert ev["verdict"][1].decode().startswith("infeasible")
        assert ev["floor_W"][1] > 0.1e6
        # the reduction target resolves to (1 - 0.3) x the design peak
        assert ev["cap_W"][0] == pytest.approx(0.7 * ev["reference_W"][0], rel=1e-12)
        b = f["grid/battery"]
        e_in, e_out, loss = b.attrs["E_in_J"], b.attrs["E_out_J"], b.attrs["E_loss_J"]
        dsoc = b.attrs["soc_end_J"] - b.attrs["soc_start_J"]
        assert e_in > 1e9
        assert abs(e_in - e_out - loss - dsoc) <= 1e-9 * (e_in + e_out)
        soc = b["soc_J"][()]
        cap = b.attrs["capacity_J"]
        assert soc.min() >= 0.1 * cap * (1 - 1e-12) and soc.max() <= 0.9 * cap * (1 + 1e-12)
        # the resampled series keeps the run's energy: its mean equals the interval series' mean (the periodic
        # swing is zero-mean over whole periods; at most one incomplete period per profiled job differs)
        fast = f["grid/ramps/P_facility_W"][()]
        P = f["timeseries/facility/P_facility_W"][()]
        assert fast.size == P.size * 60
        assert fast.mean() == pytest.approx(P.mean(), rel=1e-4)
        s = f["summary"].attrs
        assert s["grid_events"] == 2 and s["grid_events_infeasible"] == 1
        # the battery removes the ramp-limit violations of the facility draw here and damps the 20 s oscillation
        assert s["grid_ramp_violations_with_battery"] <= s["grid_ramp_violations"]
        assert s["grid_amplitude_at_period_with_battery_W"] < 0.2 * s["grid_amplitude_at_period_W"]
        # profiled jobs ran at the profile mean (0.7 x 300 + 0.3 x 150 W per node)
        npw = f["jobs/node_power_W"][()]
        setp = f["jobs/node_power_set_W"][()]
        assert np.allclose(npw[np.isfinite(setp)], 255.0)


def test_no_grid_section_keeps_config_json():
    cfg = load_config(None)
    assert cfg.grid is None and "grid" not in json.loads(cfg.to_json())
