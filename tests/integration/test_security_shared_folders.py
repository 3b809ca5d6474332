"""Security, issue #21 kind 1: another user plants links in a shared output folder (root only: a real second user).

On main `hpctwin run --out shared/run.h5` opened `.run.h5.tmp-<host>-<pid>` with O_CREAT | O_TRUNC: a link planted
there by another user for the next few hundred pids made the run overwrite the victim's file (mode 0600) with HDF5,
and `run.h5` became the other user's link. The test creates user `hpctwin_sec_other` with useradd and removes it.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import h5py
import pytest

from scheduler_sim.io.hdf5 import verify_file

USER = "hpctwin_sec_other"
SWF = "1 0 0 100 1 -1 -1 1 200 -1 1 1 1 -1 1 -1 -1 -1\n2 10 0 50 2 -1 -1 2 100 -1 1 1 1 -1 1 -1 -1 -1\n"

#: A Python the second user can run (root's own interpreter may sit under /root).
PY = next((p for p in ("/usr/bin/python3", "/usr/local/bin/python3") if os.access(p, os.X_OK)), None)

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("useradd") is None or shutil.which("su") is None
                                or PY is None,
                                reason="needs root, useradd, su and a system python3 to plant links as a second user")


@pytest.fixture
def other_user():
    subprocess.run(["userdel", USER], capture_output=True)  # a leftover of an interrupted run
    subprocess.run(["useradd", "-M", "-s", "/bin/sh", USER], check=True, capture_output=True)
    try:
        yield pwd.getpwnam(USER)
    finally:
        subprocess.run(["userdel", USER], capture_output=True)


def _as_other(script: str) -> None:
    r = subprocess.run(["su", USER, "-s", "/bin/sh", "-c", script], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def test_planted_links_in_a_shared_output_folder_are_not_followed(other_user):
    base = Path(tempfile.mkdtemp(prefix="hpctwin-sec-", dir="/tmp"))
    try:
        base.chmod(0o755)
        shared = base / "shared"
        shared.mkdir()
        shared.chmod(0o777)  # group/world-writable, not sticky
        victim = base / "victim.txt"
        victim.write_bytes(b"PRECIOUS\n")
        victim.chmod(0o600)
        swf = base / "two.swf"
        swf.write_text(SWF)
        host = socket.gethostname().replace("-", "_")
        # planted by one process of the other user (no pid used up between its count and the run): the old
        # predictable names for the next 400 pids, the new form with guessed random parts, the output's own name,
        # the sweep lock, and the report's files
        plant = f"""
import os
d, v, host = {str(shared)!r}, {str(victim)!r}, {host!r}
last = int(open("/proc/sys/kernel/ns_last_pid").read())
names = [f".run.h5.tmp-{{host}}-{{p}}" for p in range(last + 1, last + 401)]
names += [f".run.h5.tmp-{{host}}-{{p}}-{{r}}" for p in range(last + 1, last + 60) for r in ("aaaaaaaa", "00000000")]
names += ["run.h5", ".sweep.lock"]
for n in names:
    os.symlink(v, os.path.join(d, n))
os.mkdir(os.path.join(d, "rep"))
os.chmod(os.path.join(d, "rep"), 0o777)
for n in ["report.html", "facility_power.png", f".report.html.tmp-{{host}}-{{last + 500}}"]:
    os.symlink(v, os.path.join(d, "rep", n))
"""
        (base / "plant.py").write_text(plant)
        (base / "plant.py").chmod(0o644)
        _as_other(f"{PY} {base / 'plant.py'}")
        assert os.readlink(shared / "run.h5") == str(victim)
        cmd = [sys.executable, "-m", "scheduler_sim.app.cli", "run", "--system", "theta", "--trace", str(swf),
               "--start-day", "0", "--days", "0.01", "--no-cooling", "--quiet", "--out", str(shared / "run.h5")]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        assert victim.read_bytes() == b"PRECIOUS\n" and (victim.stat().st_mode & 0o777) == 0o600
        out = shared / "run.h5"
        assert not out.is_symlink() and out.stat().st_uid == os.getuid() and verify_file(out) is True
        with h5py.File(out) as f:
            assert f.attrs["system"] == "theta"
        assert f"output folder {shared} can be written by others and has no sticky bit (mode 0777)" in r.stderr
        r = subprocess.run([sys.executable, "-m", "scheduler_sim.app.cli", "report", str(out), "--out",
                            str(shared / "rep")], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        assert victim.read_bytes() == b"PRECIOUS\n"
        page = shared / "rep" / "report.html"
        assert not page.is_symlink() and page.read_text().startswith("<!DOCTYPE html>")
        assert not (shared / "rep" / "facility_power.png").is_symlink()
    finally:
        shutil.rmtree(base, ignore_errors=True)
