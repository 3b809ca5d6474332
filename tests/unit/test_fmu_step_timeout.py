"""An FMU step that never returns (issue #21 kind 9; field case fmu-step-hangs).

Before: `hpctwin run` hung forever. The test builds the case's FMU the way its make_hang.sh does (private cache:
the generated plant's fmi2DoStep sleeps forever once t > 3600 s, rebuilt with gcc, its cache record's digest
updated) and runs with a 2 s limit: exit 2, one error line naming the FMU, the call and the simulated time, and a
partial file (complete = false) that validates.
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import h5py
import pytest
from tests.conftest import write_tiny4  # the tiny 4-node machine (tests/conftest.py)


TWO_SWF = ("1 0 0 3600 4 -1 -1 4 3600 -1 1 1 1 -1 1 -1 -1 -1\n"
           "2 100 0 1800 2 -1 -1 2 3600 -1 1 1 1 -1 1 -1 -1 -1\n")


def _hpctwin(args, env, cwd, timeout):
    return subprocess.run([sys.executable, "-m", "scheduler_sim", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


def _make_hanging_fmu(cache: Path) -> Path:
    """make_hang.sh in Python: patch fmi2DoStep of the cached FMU to sleep forever after t = 3600 s."""
    import fmpy

    (fmu,) = sorted((cache / "fmu").glob("*.fmu"))
    x = cache.parent / "x"
    with zipfile.ZipFile(fmu) as z:
        z.extractall(x)
    (c,) = sorted((x / "sources").glob("*.c"))
    (so,) = sorted((x / "binaries" / "linux64").glob("*.so"))
    s = "#include <unistd.h>\n" + c.read_text()
    i = s.index("fmi2Status fmi2DoStep(")
    j = s.index("{", i) + 1
    s = s[:j] + "\n    if (currentCommunicationPoint > 3600.0) { for(;;) sleep(1); }" + s[j:]
    c.write_text(s)
    inc = Path(fmpy.__file__).parent / "c-code"
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", f"-I{inc}", "-o", str(so), str(c), "-lm"], check=True)
    fmu.unlink()
    with zipfile.ZipFile(fmu, "w", zipfile.ZIP_DEFLATED) as z:
        for p in sorted(x.rglob("*")):
            if p.is_file():
                z.write(p, p.relative_to(x).as_posix())
    rec_path = Path(str(fmu) + ".json")
    rec = json.loads(rec_path.read_text())
    rec["sha256"] = hashlib.sha256(fmu.read_bytes()).hexdigest()
    rec_path.write_text(json.dumps(rec))
    return fmu


@pytest.mark.skipif(shutil.which("gcc") is None or sys.platform != "linux", reason="needs gcc on Linux (FMU build)")
def test_fmu_step_that_never_returns_stops_the_run_with_a_partial_file(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    env = dict(os.environ, HPCTWIN_CACHE_DIR=str(cache), PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    write_tiny4(tmp_path)
    (tmp_path / "two.swf").write_text(TWO_SWF)
    base = ["run", "--system", "tiny4.toml", "--trace", "two.swf", "--start-day", "0", "--weather", "constant",
            "--quiet"]
    warm = _hpctwin(base + ["--days", "0.05", "--out", "warm.h5"], env, tmp_path, 600)  # builds the FMU
    assert warm.returncode == 0, warm.stderr
    fmu = _make_hanging_fmu(cache)
    r = _hpctwin(base + ["--days", "0.2", "--set", "cooling.step_timeout_s=2", "--set", "cooling.stepping=fixed",
                         "--out", "hang.h5"], env, tmp_path, 120)  # before the fix: TimeoutExpired (hangs forever)
    assert r.returncode == 2, r.stderr
    err = [ln for ln in r.stderr.splitlines() if ln.startswith("hpctwin run: error:")]
    assert len(err) == 1
    # the step from t = 3615 s is the first with t > 3600 s (15 s steps): it never returns
    assert fmu.name in err[0] and "fmi2DoStep" in err[0] and "t = 3615 s" in err[0] and "within 2 s" in err[0]
    with h5py.File(tmp_path / "hang.h5") as f:
        assert not bool(f.attrs["complete"])
        assert "fmi2DoStep" in f.attrs["failure"]
        t = f["timeseries/time_s"][()]
    assert t.size and float(t[-1]) <= 3600.0  # kept up to the last whole output interval before the hang
    v = _hpctwin(["validate", "hang.h5"], env, tmp_path, 120)
    # the file conforms and its checksum holds; validate exits 1 and says PARTIAL RUN first (issue #21 kind 7)
    assert v.returncode == 1, v.stdout + v.stderr
    assert v.stdout.startswith("PARTIAL RUN: hang.h5") and "content checksum verified" in v.stdout, v.stdout
    # adaptive stepping hands whole blocks of plant calls to the step worker (plant.run_block): the C calls inside
    # are counted, so the hang is caught the same way (the block's own steps are not kept: the file ends earlier)
    ra = _hpctwin(base + ["--days", "0.2", "--set", "cooling.step_timeout_s=2", "--set", "cooling.stepping=adaptive",
                          "--out", "hang_adaptive.h5"], env, tmp_path, 120)
    assert ra.returncode == 2, ra.stderr
    err = [ln for ln in ra.stderr.splitlines() if ln.startswith("hpctwin run: error:")]
    assert len(err) == 1 and fmu.name in err[0] and "fmi2DoStep" in err[0] and "within 2 s" in err[0], ra.stderr
    with h5py.File(tmp_path / "hang_adaptive.h5") as f:
        assert not bool(f.attrs["complete"])
        assert float(f["timeseries/time_s"][()][-1]) <= 3600.0
    # the same FMU opened as a site FMU (no C loop: the Python loop of raw fmi2DoStep calls) stops the same way
    script = ("import sys, numpy as np\n"
              "from cooling_fmu.plant import CoolingPlant\n"
              "from cooling_fmu.watchdog import StepTimeout, guard_plant\n"
              "p = CoolingPlant('seth', step_s=15.0, fmu_path=sys.argv[1])\n"
              "assert not p.raw_run_available\n"
              "guard_plant(p, 1.0)\n"
              "p.initialize(np.full(1, 2000.0), 288.15)\n"
              "try:\n"
              "    p.run(np.full((300, 1), 2000.0), np.full(300, 288.15))\n"
              "except StepTimeout as e:\n"
              "    print('STOPPED', e.function, e.time_s, e.completed_outputs.shape[0])\n"
              "p.close()\n")
    site = subprocess.run([sys.executable, "-c", script, str(fmu)], env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert site.returncode == 0, site.stderr
    assert site.stdout.split() == ["STOPPED", "fmi2DoStep", "3615.0", "0"]
    # the default limit is at most 60 s of wall time per step, and it is a documented configuration key
    from scheduler_sim.app.config import CoolingConfig

    assert 0 < CoolingConfig().step_timeout_s <= 60.0
