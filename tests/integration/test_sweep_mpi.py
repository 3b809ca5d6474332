"""The MPI sweep: `mpiexec -n 2 hpctwin sweep` gives the same files as one process, and failures are recorded."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from tests.integration.test_output_hdf5 import h5_content

MPIEXEC = Path(sys.executable).parent / "mpiexec"

STUDY = """
name = "mini"
[base]
system = "theta"
trace = { window_start_days = 181.0, window_days = 1.0 }
cooling = { step_s = 15.0, T_wb_C = 24.0 }
output = { interval_s = 60.0, progress = false }
[axes]
"scheduler.policy" = ["fcfs", "easy"]
"cooling.weather" = ["tmy3", "constant"]
"""


def _sweep(study: Path, out: Path, ranks: int, expect: int = 0) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "mpi4py", "-m", "scheduler_sim", "sweep", str(study), "--out", str(out)]
    if ranks > 1:
        if not MPIEXEC.exists():
            pytest.skip(f"no mpiexec next to {sys.executable} (install the 'mpi' or 'dev' extra)")
        cmd = [str(MPIEXEC), "-n", str(ranks)] + cmd
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode == expect, r.stdout + r.stderr
    return r


@pytest.mark.mpi
@pytest.mark.fmu
def test_two_ranks_equal_one_rank(tmp_path):
    study = tmp_path / "study.toml"
    study.write_text(STUDY)
    _sweep(study, tmp_path / "one", 1)
    r2 = _sweep(study, tmp_path / "two", 2)
    assert "on 2 rank(s)" in r2.stdout
    names = sorted(p.name for p in (tmp_path / "one").glob("*.h5"))
    assert names == ["000_fcfs_tmy3.h5", "001_fcfs_constant.h5", "002_easy_tmy3.h5", "003_easy_constant.h5",
                     "summary.h5"]
    for name in names:
        if name == "summary.h5":
            continue
        a, b = h5_content(tmp_path / "one" / name), h5_content(tmp_path / "two" / name)
        a.pop("/"), b.pop("/")  # root attrs hold the git sha etc., identical here; compare datasets strictly
        assert a == b, name
    with h5py.File(tmp_path / "two" / "summary.h5") as f:
        status = [s.decode() for s in f["scenarios/status"][()]]
        assert status == ["done"] * 4
        pue = f["scenarios/PUE"][()]
        assert np.all(pue > 1.0)
        # a constant 24 degC wet-bulb is hotter than Golden's July weather: the towers cannot hold the 24 C
        # setpoint, the trim chiller holds 24.5 C instead, and cooling power rises, for both policies
        for hot, mild in ((1, 0), (3, 2)):
            t_hot = f[f"runs/{f['scenarios/name'][hot].decode()}/timeseries/facility/T_fac_sup"][()].mean()
            t_mild = f[f"runs/{f['scenarios/name'][mild].decode()}/timeseries/facility/T_fac_sup"][()].mean()
            assert t_hot > t_mild + 0.3
            p_hot = f[f"runs/{f['scenarios/name'][hot].decode()}/timeseries/facility/P_cooling_W"][()].mean()
            p_mild = f[f"runs/{f['scenarios/name'][mild].decode()}/timeseries/facility/P_cooling_W"][()].mean()
            assert p_hot > 2.0 * p_mild
        # the external link opens the run file
        assert f["runs/002_easy_tmy3/summary"].attrs["PUE"] == pytest.approx(pue[2])
    with h5py.File(tmp_path / "one" / "summary.h5") as f1, h5py.File(tmp_path / "two" / "summary.h5") as f2:
        for k in f1["scenarios"]:
            if k != "error":
                a, b = f1["scenarios"][k][()], f2["scenarios"][k][()]
                assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), k


@pytest.mark.mpi
def test_failed_scenario_is_recorded_and_sweep_goes_on(tmp_path):
    study = tmp_path / "study.toml"
    study.write_text(STUDY.replace('["fcfs", "easy"]', '["fcfs"]').replace('"cooling.weather" = ["tmy3", "constant"]',
                                                                        '"trace.path" = ["missing.swf", ""]\n'
                                                                        '"cooling.enabled" = [false]'))
    r = _sweep(study, tmp_path / "out", 2, expect=1)  # exit status 1: a scenario failed
    assert "1 scenario(s) failed" in r.stderr
    with h5py.File(tmp_path / "out" / "summary.h5") as f:
        status = [s.decode() for s in f["scenarios/status"][()]]
        assert status == ["failed", "done"]
        assert "missing.swf" in f["scenarios/error"][0].decode()
        assert "000_missing.swf" not in f["runs"]
