"""The HDF5 run file: schema, units, round trip, atomic writing, determinism, version check."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from cooling_fmu.coupling import PlantError
from scheduler_sim.io import hdf5 as hdf5io
from scheduler_sim.kernel.simulation import Simulation, SimulationConfig
from tests.conftest import make_jobs
from tests.integration.test_schedules import EIGHT


def _result(tiny_system):
    return Simulation(make_jobs(EIGHT), tiny_system, "easy", SimulationConfig(window_start_s=0.0, window_s=1e6)).run()


def _write(path, res):
    return hdf5io.write_run(path, res, '{"x": 1}', run_name="t", system_name="tiny", policy="easy", seed=3,
                            input_checksums={"trace": "abc"}, load_report={"records_read": 8})


def test_round_trip_and_units(tmp_path, tiny_system):
    res = _result(tiny_system)
    p = _write(tmp_path / "r.h5", res)
    jobs = hdf5io.read_jobs(p)
    assert list(jobs["job_id"]) == list(res.jobs["job_id"])
    assert np.array_equal(jobs["sim_start_s"].to_numpy(), res.jobs["sim_start_s"].to_numpy())
    with h5py.File(p, "r") as f:
        assert f.attrs["schema_version"] == hdf5io.SCHEMA_VERSION
        assert f["jobs/wait_s"].attrs["units"] == "s"
        assert f["jobs/energy_dc_J"].attrs["units"] == "J"
        assert f["timeseries/facility/P_it_W"].attrs["units"] == "W"
        assert f["timeseries/cdu/Q_flow_W"].shape == (len(res.time_s), 1)
        assert f["summary"].attrs["makespan_s"] == 350
        assert f["provenance"].attrs["input_checksums_json"] == '{"trace": "abc"}'
    fac = hdf5io.read_series(p)
    assert fac.index[1] - fac.index[0] == 60.0
    # interval-average IT power integrates to the exact total energy
    assert fac["P_it_W"].sum() * 60.0 == pytest.approx(res.totals["E_it_J"], rel=1e-12)


def test_same_inputs_same_content(tmp_path, tiny_system):
    a = _write(tmp_path / "a.h5", _result(tiny_system))
    b = _write(tmp_path / "b.h5", _result(tiny_system))
    assert h5_content(a) == h5_content(b)


def test_failed_write_leaves_nothing(tmp_path, tiny_system):
    res = _result(tiny_system)
    res.summary["bad"] = object()  # cannot be stored as a float attribute
    with pytest.raises(TypeError):
        _write(tmp_path / "x.h5", res)
    assert list(tmp_path.iterdir()) == []


def test_incompatible_schema_refused(tmp_path, tiny_system):
    p = _write(tmp_path / "r.h5", _result(tiny_system))
    with h5py.File(p, "a") as f:
        f.attrs["schema_version"] = "99.0"
    with pytest.raises(hdf5io.SchemaError, match="99.0"):
        hdf5io.read_summary(p)
    q = tmp_path / "plain.h5"
    with h5py.File(q, "w") as f:
        f["x"] = 1
    with pytest.raises(hdf5io.SchemaError, match="not an hpctwin run file"):
        hdf5io.read_jobs(q)


def h5_content(path) -> dict:
    """Every dataset's bytes and every attribute of a file, minus the documented volatile attributes."""
    out = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            attrs = {k: (v if isinstance(v, str) else np.asarray(v).tobytes()) for k, v in obj.attrs.items()
                     if k not in hdf5io.VOLATILE_ATTRS}  # bytes: NaN compares equal to NaN
            if isinstance(obj, h5py.Dataset):
                out[name] = (obj[()].tobytes() if obj.dtype.kind != "O" else tuple(obj[()]), attrs)
            else:
                out[name] = attrs
        visit("/", f)
        f.visititems(visit)
    return out


class _FailingPlant:
    """A plant double that fails on its 10th step, like cooling_fmu.plant.PlantStepError after 9 good steps."""

    output_names = ["T_sec_sup[1]", "P_cooling", "E_cooling_out"]
    output_units = ["K", "W", "J"]
    P_cooling_index = 1

    def __init__(self):
        self.steps = 0
        self.E = 0.0

    def initialize(self, heat_w, T_wb_K):
        return np.array([300.0, 100.0, 0.0])

    def run(self, heat, twb):
        out = []
        for _ in range(heat.shape[0]):
            if self.steps == 9:
                raise PlantError("fmi2DoStep returned fmi2Error at t=135 s", np.array(out).reshape(-1, 3))
            self.steps += 1
            self.E += 100.0 * 15.0
            out.append([300.0, 100.0, self.E])
        return np.array(out)


def test_plant_failure_keeps_and_marks_partial_results(tmp_path, tiny_system):
    res = Simulation(make_jobs(EIGHT), tiny_system, "easy", SimulationConfig(window_start_s=0.0, window_s=1e6),
                     plant=_FailingPlant(), wet_bulb_K=lambda t: np.full(np.shape(t), 290.0)).run()
    assert res.info["complete"] is False and "fmi2DoStep" in res.info["failure"]
    # 9 steps of 15 s completed -> 2 whole 60 s output intervals kept
    assert len(res.time_s) == 2 and res.info["failed_at_s"] == 135.0
    assert res.totals["E_cooling_J"] == pytest.approx(9 * 15 * 100.0)
    p = _write(tmp_path / "partial.h5", res)
    with h5py.File(p) as f:
        assert not f.attrs["complete"] and "fmi2DoStep" in f.attrs["failure"]
