"""Issue #12 kinds 7-8: output files (disk full, stale temporaries, fsync, atomic report), damaged files, sweep
paths, names, resume integrity and the folder lock."""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from scheduler_sim.io import hdf5 as hdf5io
from scheduler_sim.app.cli import main
from scheduler_sim.io.hdf5 import DamagedFileError, atomic_h5, atomic_write_bytes, verify_file

FIELD = Path(__file__).resolve().parents[2].parent / "shared" / "cases" / "field-2"
SWF = "1 0 0 100 1 -1 -1 1 200 -1 1 1 1 -1 1 -1 -1 -1\n2 10 0 50 2 -1 -1 2 100 -1 1 1 1 -1 1 -1 -1 -1\n"


def _tmps(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".tmp-" in p.name)


def _run_cfg(tmp_path: Path, name: str = "t") -> Path:
    swf = tmp_path / "one.swf"
    swf.write_text(SWF)
    cfg = tmp_path / f"{name}.toml"
    cfg.write_text(f'name = "{name}"\nsystem = "theta"\n[trace]\npath = "{swf}"\nwindow_start_days = 0\n'
                   f'window_days = 0.01\n[cooling]\nenabled = false\n[output]\nprogress = false\n')
    return cfg


# ---- output files -------------------------------------------------------------------------------------------------
def test_disk_full_is_one_line_exit_2_old_file_kept_no_temporary(tmp_path, capsys, monkeypatch):
    """Disk full (issue #12): the write of the file's image fails with ENOSPC. Seen: 18 h5py tracebacks and a
    segfault. Now one line naming the file, exit 2, the older file untouched, no temporary left. (The HDF5 file is
    built in memory, so HDF5 itself never meets the full disk; the ENOSPC is raised where bytes reach the disk.)"""
    cfg = _run_cfg(tmp_path)
    out = tmp_path / "o.h5"
    assert main(["run", str(cfg), "--out", str(out), "--quiet"]) == 0
    before = out.read_bytes()
    capsys.readouterr()
    real_write = os.write
    calls = []

    def full(fd, data):
        calls.append(len(data))
        if len(calls) == 1:  # part of the file fits, then the disk is full
            return real_write(fd, bytes(data[:4096]))
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", full)
    assert main(["run", str(cfg), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(out) in err[0] and "No space left on device" in err[0]
    assert "previous file is kept" in err[0]
    assert out.read_bytes() == before and _tmps(tmp_path) == []
    # on an already full disk nothing at all is left either (no new file, no empty temporary)
    monkeypatch.setattr(os, "write", lambda fd, data: (_ for _ in ()).throw(OSError(errno.ENOSPC, "full")))
    assert main(["run", str(cfg), "--out", str(tmp_path / "new.h5"), "--quiet"]) == 2
    assert not (tmp_path / "new.h5").exists() and _tmps(tmp_path) == []


@pytest.fixture
def small_tmpfs(tmp_path):
    """A 1 MiB tmpfs (needs root and mount(8)); skipped where it cannot be mounted."""
    import shutil

    mnt = tmp_path / "tmpfs"
    mnt.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a real full disk needs a tmpfs mount (root); the ENOSPC path is tested by monkeypatch above")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


def test_real_full_disk_gives_one_line_and_exit_2(tmp_path, small_tmpfs):
    """The field row "disk full" on a real 1 MiB tmpfs, in a subprocess: exit 2 (was 139, a segfault after 18 h5py
    tracebacks), one error line, the older file kept byte for byte, no temporary left."""
    cfg = _run_cfg(tmp_path)
    out = small_tmpfs / "o.h5"
    old = b"older result\n"
    out.write_bytes(old)
    (small_tmpfs / "fill").write_bytes(b"\0" * (1024 * 1024 - 64 * 1024))  # leave ~60 KB: the run file is larger
    r = subprocess.run([sys.executable, "-m", "scheduler_sim", "run", str(cfg), "--out", str(out), "--quiet"],
                       capture_output=True, text=True, timeout=300)
    errs = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2, r.stderr
    assert len(errs) == 1 and "No space left on device" in errs[0] and "Traceback" not in r.stderr
    assert out.read_bytes() == old and _tmps(small_tmpfs) == []


def test_rename_follows_fsync_of_the_file(tmp_path, monkeypatch):
    order = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: (order.append("fsync"), real_fsync(fd))[1])
    monkeypatch.setattr(os, "replace", lambda a, b: (order.append("replace"), real_replace(a, b))[1])
    atomic_write_bytes(tmp_path / "x.bin", b"abc")
    assert order[:2] == ["fsync", "replace"] and order[2:] == ["fsync"]  # then the folder entry
    assert (tmp_path / "x.bin").read_bytes() == b"abc"


def test_stale_temporaries_of_dead_processes_are_cleaned(tmp_path):
    """A kill -9 during a write left .<name>.tmp-<pid> forever; the next write of the same output removes the
    temporaries of dead processes of this host, and keeps those of a live process and of other hosts."""
    import socket

    host = socket.gethostname().replace("-", "_")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        out = tmp_path / "run.h5"
        stale = tmp_path / f".run.h5.tmp-{host}-{dead.pid}"
        busy = tmp_path / f".run.h5.tmp-{host}-{live.pid}"
        other_host = tmp_path / f".run.h5.tmp-otherhost-{dead.pid}"
        other_file = tmp_path / f".other.h5.tmp-{host}-{dead.pid}"
        for p in (stale, busy, other_host, other_file):
            p.write_bytes(b"partial")
        with atomic_h5(out) as f:
            f.create_dataset("x", data=np.arange(3))
        assert not stale.exists() and busy.exists() and other_host.exists() and other_file.exists()
        assert h5py.File(out)["x"][()].tolist() == [0, 1, 2]
    finally:
        live.kill()
        live.wait()


def test_report_html_is_written_atomically(tmp_path, monkeypatch):
    """report.html goes through the atomic writer (whole or not at all); a failing write leaves the old report."""
    from scheduler_sim.analysis.report import _write_html

    p = _write_html(tmp_path, "<p>one</p>")
    assert p == tmp_path / "report.html" and "<p>one</p>" in p.read_text()

    def boom(fd, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", boom)
    with pytest.raises(OSError, match="report.html: could not write the report"):
        _write_html(tmp_path, "<p>two</p>")
    assert "<p>one</p>" in p.read_text() and _tmps(tmp_path) == []


# ---- damaged files: report and compare -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def run_file(tmp_path_factory):
    d = tmp_path_factory.mktemp("run")
    cfg = _run_cfg(d)
    assert main(["run", str(cfg), "--out", str(d / "good.h5"), "--quiet"]) == 0
    return d / "good.h5"


def test_content_checksum_is_recorded_and_verified(run_file, tmp_path):
    with h5py.File(run_file) as f:
        assert f.attrs["content_sha256"] == hdf5io.content_digest(f)
    assert verify_file(run_file) is True
    # one changed value in one dataset is caught, although the file is still valid HDF5
    bad = tmp_path / "edited.h5"
    bad.write_bytes(run_file.read_bytes())
    with h5py.File(bad, "r+") as f:
        f["jobs/sim_start_s"][0] += 1.0
    with pytest.raises(DamagedFileError, match="does not match the checksum"):
        verify_file(bad)


@pytest.mark.parametrize("damage", ["random-64k", "text", "empty", "truncated"])
@pytest.mark.parametrize("command", ["report", "compare"])
def test_report_and_compare_on_unreadable_files_give_one_line(run_file, tmp_path, capsys, damage, command):
    """sweep-corrupt-resume / config-not-utf8 (issue #12): a damaged or non-HDF5 file was a TypeError traceback;
    now one line naming the file, exit 2."""
    data = bytearray(run_file.read_bytes())
    p = tmp_path / "bad.h5"
    if damage == "random-64k":
        rng = np.random.default_rng(0)
        m = len(data) // 2
        data[m:m + 65536] = rng.integers(0, 256, min(65536, len(data) - m), dtype=np.uint8).tobytes()
    elif damage == "text":
        data = bytearray(b"not an hdf5 file\n" * 10)
    elif damage == "empty":
        data = bytearray()
    else:
        data = data[: len(data) // 3]
    p.write_bytes(bytes(data))
    argv = ["report", str(p), "--out", str(tmp_path / "rep")] if command == "report" else \
        ["compare", str(run_file), str(p)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(p) in err[0], err
    if damage in ("text", "empty"):
        assert "not an HDF5 file" in err[0]
    else:  # where the random bytes land decides which check sees them first
        assert any(w in err[0] for w in ("damaged", "not an hpctwin run file", "not an HDF5 file")), err


# ---- sweeps --------------------------------------------------------------------------------------------------------
def _study(tmp_path: Path, body: str) -> Path:
    s = tmp_path / "study" / "study.toml"
    s.parent.mkdir(exist_ok=True)
    (s.parent / "a.swf").write_text(SWF)
    (s.parent / "b.swf").write_text(SWF.replace("1 0 0 100 1", "1 0 0 300 1"))
    s.write_text(body)
    return s


@pytest.mark.parametrize("name", ["../../escaped", "/tmp/abs_study", "..", "a\\\\b"])
def test_study_name_cannot_escape_out(tmp_path, capsys, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    s = _study(tmp_path, f'name = "{name}"\n[base]\nname = "base"\ntrace = {{ path = "a.swf", window_days = 0.01, '
                         f'window_start_days = 0.0 }}\ncooling = {{ enabled = false }}\n[axes]\n'
                         f'"scheduler.policy" = ["fcfs"]\n')
    assert main(["sweep", str(s)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "study name" in err[0]
    assert not list(tmp_path.rglob("*.h5")) and not (tmp_path.parent / "escaped").exists()


def test_every_relative_path_in_a_study_resolves_against_the_study_file(tmp_path, monkeypatch):
    """sweep-relative-paths (issue #12): [axes] and [[scenarios]] paths were read from the working directory."""
    from scheduler_sim.app.sweep import load_study

    s = _study(tmp_path, 'name = "rel"\n[base]\ntrace = { path = "a.swf", window_days = 0.01, window_start_days = 0.0 }'
                         '\ncooling = { enabled = false }\n[axes]\n"trace.path" = ["a.swf", "b.swf"]\n'
                         '[[scenarios]]\nname = "x"\n"cooling.weather_path" = "w.csv"\n')
    monkeypatch.chdir(tmp_path)  # not the study's folder
    _, sc = load_study(s)
    assert [c.config.trace.path for c in sc] == [str(s.parent / "a.swf"), str(s.parent / "b.swf")]
    assert {c.config.cooling.weather_path for c in sc} == {str(s.parent / "w.csv")}
    assert main(["sweep", str(s), "--out", str(tmp_path / "o")]) == 0
    with h5py.File(tmp_path / "o" / "summary.h5") as f:
        assert [x.decode() for x in f["scenarios/status"][()]] == ["done", "done"]


def test_summary_lists_only_files_that_exist(tmp_path):
    s = _study(tmp_path, 'name = "fail"\n[base]\ntrace = { window_days = 0.01, window_start_days = 0.0 }\n'
                         'cooling = { enabled = false }\n[axes]\n"trace.path" = ["a.swf", "missing.swf"]\n')
    assert main(["sweep", str(s), "--out", str(tmp_path / "o")]) == 1
    with h5py.File(tmp_path / "o" / "summary.h5") as f:
        status = [x.decode() for x in f["scenarios/status"][()]]
        files = [x.decode() for x in f["scenarios/file"][()]]
    assert status == ["done", "failed"] and files == ["000_a.swf.h5", ""]
    assert (tmp_path / "o" / "000_a.swf.h5").is_file() and not (tmp_path / "o" / "001_missing.swf.h5").exists()


def test_resume_reruns_a_damaged_scenario_file(tmp_path):
    """sweep-corrupt-resume (issue #12): 64 KB of random bytes in the middle of a finished scenario's file; the
    resume used to skip it as done. Now it fails the content check and is run again, giving the same datasets."""
    s = _study(tmp_path, 'name = "c"\n[base]\ntrace = { path = "a.swf", window_days = 0.01, window_start_days = 0.0 }'
                         '\ncooling = { enabled = false }\n[axes]\n"scheduler.policy" = ["fcfs", "sjf"]\n')
    out = tmp_path / "o"
    assert main(["sweep", str(s), "--out", str(out)]) == 0
    f0, f1 = out / "000_fcfs.h5", out / "001_sjf.h5"
    good = f0.read_bytes()
    data = bytearray(good)
    m = len(data) // 2
    data[m:m + 65536] = np.random.default_rng(1).integers(0, 256, min(65536, len(data) - m), dtype=np.uint8).tobytes()
    f0.write_bytes(bytes(data))
    t1 = f1.stat().st_mtime_ns
    from scheduler_sim.app.sweep import load_study, scenario_done

    _, sc = load_study(s)
    assert scenario_done(sc[0], out) is None and scenario_done(sc[1], out) is not None
    assert main(["sweep", str(s), "--out", str(out)]) == 0
    assert f1.stat().st_mtime_ns == t1  # the whole file was skipped
    assert verify_file(f0) and scenario_done(sc[0], out) is not None
    # the rerun wrote the same content as the original run (content_sha256 included: it leaves out wall times)
    from tests.integration.test_output_hdf5 import h5_content

    ref = tmp_path / "ref.h5"
    ref.write_bytes(good)
    assert h5_content(ref) == h5_content(f0)


def test_second_sweep_into_the_same_folder_is_refused(tmp_path):
    """A lock on the sweep folder keeps two sweeps from deleting each other's files (issue #12)."""
    import fcntl

    s = _study(tmp_path, 'name = "l"\n[base]\ntrace = { path = "a.swf", window_days = 0.01, window_start_days = 0.0 }'
                         '\ncooling = { enabled = false }\n[axes]\n"scheduler.policy" = ["fcfs"]\n')
    out = tmp_path / "o"
    out.mkdir()
    fd = os.open(out / ".sweep.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.write(fd, b"4242")
    try:
        r = subprocess.run([sys.executable, "-m", "scheduler_sim", "sweep", str(s), "--out", str(out)],
                           capture_output=True, text=True, timeout=300)
    finally:
        os.close(fd)
    assert r.returncode == 2 and "another sweep (pid 4242)" in r.stderr and not list(out.glob("*.h5"))
    assert main(["sweep", str(s), "--out", str(out)]) == 0  # free again


# ---- the wet-bulb cache follows the same rules --------------------------------------------------------------------
def test_weather_cache_lives_under_the_cache_root_and_a_shared_folder_is_not_used(tmp_path, monkeypatch, caplog):
    import logging

    from cooling_fmu.weather import load_weather, resolve_weather_file, weather_cache_dir

    monkeypatch.delenv("HPCTWIN_WEATHER_CACHE_DIR", raising=False)
    monkeypatch.setenv("HPCTWIN_CACHE_DIR", str(tmp_path / "root"))
    assert weather_cache_dir() == tmp_path / "root" / "weather"
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    monkeypatch.setenv("HPCTWIN_WEATHER_CACHE_DIR", str(shared))
    with caplog.at_level(logging.WARNING):
        df, _ = load_weather(resolve_weather_file("chicago"))
    assert len(df) == 8760 and list(shared.iterdir()) == []  # computed, never read from or written to it
    assert "weather cache folder is writable by other users" in caplog.text


def test_atomic_h5_writes_its_buffer_without_a_copy_and_nothing_on_error(tmp_path):
    """atomic_h5 hands its in-memory image to atomic_write_bytes as a memoryview (no second copy of the file,
    issue #16): the bytes on disk are a whole HDF5 file with the values written and a matching content_sha256; an
    exception inside the block leaves no file and no temporary."""
    data = np.arange(200_000, dtype=np.float64) * 0.5
    out = tmp_path / "img.h5"
    with atomic_h5(out) as f:
        f.create_dataset("x", data=data, chunks=(65_536,), compression="gzip", shuffle=True)
    with h5py.File(out) as g:
        assert np.array_equal(g["x"][()], data) and g.attrs["content_sha256"] == hdf5io.content_digest(g)
    assert verify_file(out) is True
    mv = memoryview(b"0123456789")[2:7]
    atomic_write_bytes(tmp_path / "mv.bin", mv)
    assert (tmp_path / "mv.bin").read_bytes() == b"23456"
    with pytest.raises(RuntimeError, match="stop"), atomic_h5(tmp_path / "never.h5") as f:
        f.create_dataset("x", data=data)
        raise RuntimeError("stop")
    assert not (tmp_path / "never.h5").exists() and _tmps(tmp_path) == []


@contextlib.contextmanager
def _disk_full_after(n_writes: int):
    """``os.write`` fails with ENOSPC after ``n_writes`` writes went through (a disk that fills during the file)."""
    real_write = os.write
    calls = []

    def full(fd, b):
        calls.append(1)
        if len(calls) > n_writes:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, b)

    os.write = full
    try:
        yield
    finally:
        os.write = real_write


def test_atomic_h5_data_reaches_the_temporary_while_the_file_is_open(tmp_path):
    """Streamed output (issue #26 item 3): once h5py flushes, the datasets written so far are on the disk in the
    private temporary (none at the target name yet), not in an in-memory image; a disk that fills during a chunk
    write gives one OSError naming the file and the disk's cause, and no temporary is left."""
    rng = np.random.default_rng(3)
    data = rng.random(1_000_000)  # 8 MB, incompressible
    out = tmp_path / "s.h5"
    with atomic_h5(out) as f:
        f.create_dataset("x", data=data, chunks=(65_536,), compression="gzip", shuffle=True)
        f.flush()
        tmps = _tmps(tmp_path)
        assert len(tmps) == 1 and not out.exists()
        assert (tmp_path / tmps[0]).stat().st_size > 6e6  # the compressed chunks are on the disk already
    assert verify_file(out) is True and _tmps(tmp_path) == []
    with _disk_full_after(3), pytest.raises(OSError) as ei, atomic_h5(tmp_path / "full.h5") as f:
        f.create_dataset("x", data=data, chunks=(65_536,), compression="gzip", shuffle=True)
    assert str(ei.value) == f"{tmp_path / 'full.h5'}: could not write the HDF5 file: No space left on device"
    assert not (tmp_path / "full.h5").exists() and _tmps(tmp_path) == []



def test_atomic_h5_full_disk_leaves_no_open_hdf5_object_behind(tmp_path):
    """The first streamed writer's segfault (issue #26 item 3): after a full disk inside a chunk write, HDF5 had
    failed to close the file and kept its IDs open; freeing them later flushed through the closed temporary
    (``ObjectID._dealloc -> H5FD_fileobj_write: seek of closed file``, an unraisable error, a crash in the full
    suite). Now the failure never reaches HDF5: the file and the dataset are closed, and collecting them (and the
    traceback that holds them) reports nothing; a later file is written and verified."""
    import gc

    data = np.random.default_rng(4).random(400_000)
    unraisable = []
    old_hook = sys.unraisablehook
    sys.unraisablehook = lambda u: unraisable.append(f"{u.exc_type.__name__}: {u.exc_value}")
    try:
        with _disk_full_after(2), pytest.raises(OSError) as ei, atomic_h5(tmp_path / "full.h5") as f:
            d = f.create_dataset("x", data=data, chunks=(16_384,), compression="gzip", shuffle=True)
            f.create_dataset("y", data=data[::-1], chunks=(16_384,), compression="gzip", shuffle=True)
        assert "No space left on device" in str(ei.value) and "\n" not in str(ei.value)
        assert not f.id.valid and not d.id.valid  # closed by HDF5, nothing left open
        del f, d, ei
        gc.collect()
        with atomic_h5(tmp_path / "after.h5") as g:
            g.create_dataset("z", data=data, chunks=(16_384,), compression="gzip")
        del g
        gc.collect()
    finally:
        sys.unraisablehook = old_hook
    assert unraisable == []
    assert verify_file(tmp_path / "after.h5") is True and _tmps(tmp_path) == []

def test_content_digest_in_blocks_equals_the_whole_read_digest(tmp_path):
    """content_digest hashes numeric datasets in blocks of rows (memory); the digest must stay the one of the whole
    read (files written before keep verifying). Reference: the byte stream of the former whole-read code, rebuilt
    here independently, on datasets larger than one 8 MiB block, 1-D, 2-D, empty, scalar and text."""
    import hashlib

    rng = np.random.default_rng(7)
    out = tmp_path / "d.h5"
    sets = {"a2d": rng.standard_normal((300_000, 5)), "a1d": rng.standard_normal(1_100_001).astype(np.float32),
            "empty": np.zeros((0, 3)), "scalar": np.float64(2.5), "i": np.arange(10, dtype=np.int64),
            "fixed": np.array([b"ab", b"cd"]), "txt": np.array(["x", "yy"], dtype=h5py.string_dtype("utf-8"))}
    with atomic_h5(out) as f:
        for k, v in sets.items():
            f.create_dataset(k, data=v)
        f.attrs["note"] = "n"
    with h5py.File(out) as f:
        h = hashlib.sha256()
        h.update(b"\0P/" + b"\0A" + b"note=" + b"s:n")
        for k in sorted(sets):
            h.update(b"\0P/" + k.encode())
            a = f[k][()]
            a = np.asarray(a)
            if a.dtype.kind == "O":
                h.update(b"\0D" + b"o:" + repr(a.ravel().tolist()).encode())
            else:
                h.update(b"\0D" + str(a.dtype).encode() + str(a.shape).encode() + np.ascontiguousarray(a).tobytes())
        assert hdf5io.content_digest(f) == h.hexdigest() == f.attrs["content_sha256"]


def test_content_digest_hashes_the_written_arrays_from_memory_and_equals_the_read_back(tmp_path, monkeypatch):
    """Issue #26 item 4 (the per-scenario write): sealing a file hashes the numeric datasets from the arrays just
    written (still alive: a strided view of a row block, a 2-D column slice, an integer array), with no read-back
    and no decompression; the digest is the one read back from the file (the definition of content_sha256 is kept);
    a dataset whose array is gone (a temporary) or that was not written through the schema writer is read back."""
    from scheduler_sim.io.schema import SchemaWriter

    rng = np.random.default_rng(11)
    rows = rng.random((5000, 9))
    series = {"P_it_W": rows[:, 4], "busy_nodes": rows[:, 0]}  # strided views of the row block
    job_id = np.arange(300, dtype=np.int64)
    cdu = rows[:, 1:4]  # a 2-D view whose rows are not contiguous
    reads = []
    real_getitem = h5py.Dataset.__getitem__

    def counting(self, key):
        reads.append(self.name)
        return real_getitem(self, key)

    monkeypatch.setattr(h5py.Dataset, "__getitem__", counting)
    out = tmp_path / "mem.h5"
    with atomic_h5(out) as f:
        w = SchemaWriter(f, "run")
        w.group("/timeseries")
        w.dataset("/timeseries/time_s", np.arange(5000) * 60.0)  # a temporary: gone before the file is sealed
        w.group("/timeseries/facility")
        for name, arr in series.items():
            w.dataset(f"/timeseries/facility/{name}", arr)
        w.group("/timeseries/cdu")
        w.dataset("/timeseries/cdu/Q_flow_W", cdu)
        w.group("/jobs")
        w.dataset("/jobs/job_id", job_id)
        f.create_dataset("/timeseries/rack/P_in_W", data=rows[:, 5:9])  # not through the schema writer
    assert sorted(set(reads)) == ["/timeseries/rack/P_in_W", "/timeseries/time_s"]
    monkeypatch.undo()
    with h5py.File(out) as f:
        assert f.attrs["content_sha256"] == hdf5io.content_digest(f)  # everything read back: the same digest
        np.testing.assert_array_equal(f["/timeseries/cdu/Q_flow_W"][()], cdu)
    assert verify_file(out, require_digest=True)


# ---- streamed series (issue #26 item 3) ---------------------------------------------------------------------------
def _stream_cfg(tmp_path: Path, days: float = 1.0, cooling: str = "false") -> Path:
    cfg = tmp_path / "stream.toml"
    cfg.write_text(f'name = "stream"\nsystem = "theta"\n[trace]\nwindow_start_days = 181\nwindow_days = {days}\n'
                   f'[cooling]\nenabled = {cooling}\nmodel = "fast"\n[output]\nprogress = false\n')
    return cfg


def _datasets(path: Path) -> dict:
    out = {}
    with h5py.File(path) as f:
        def visit(name, obj):
            if isinstance(obj, h5py.Dataset):
                out[name] = (obj[()], dict(obj.attrs))
        f.visititems(visit)
        out["/"] = {k: v for k, v in f.attrs.items()}
    return out


def test_streamed_file_equals_the_file_of_the_in_memory_result(tmp_path, monkeypatch):
    """The series streamed into the file during the run (fast plant: facility, per-CDU, rack, overheads and the
    end-of-run PUE series) give the same file as the result held in memory and written at the end: every dataset
    equal bit for bit with the same attributes, and the same content_sha256."""
    from scheduler_sim.app import runner
    from scheduler_sim.app.config import load_config

    cfg = load_config(_stream_cfg(tmp_path, 2.0, "true"))
    streamed = tmp_path / "streamed.h5"
    runner.run_one(cfg, streamed, progress=False)
    monkeypatch.setattr(runner, "streaming", lambda sink: contextlib.nullcontext())  # no reducer takes the stream
    held = tmp_path / "held.h5"
    runner.run_one(cfg, held, progress=False)
    assert verify_file(streamed) is True and verify_file(held) is True and _tmps(tmp_path) == []
    a, b = _datasets(streamed), _datasets(held)
    assert sorted(a) == sorted(b) and any(k.startswith("timeseries/cdu/") for k in a)
    with h5py.File(streamed) as f:
        assert f["timeseries/facility/P_it_W"].maxshape == (None,)  # appended by resize during the run
        assert f["timeseries/facility/PUE"].shape == f["timeseries/time_s"].shape
    with h5py.File(held) as f:
        assert f["timeseries/facility/P_it_W"].maxshape != (None,)
    for k in a:
        if k == "/":
            continue
        np.testing.assert_array_equal(a[k][0], b[k][0], err_msg=k)
        assert a[k][0].dtype == b[k][0].dtype and a[k][1] == b[k][1], k
    assert a["/"]["content_sha256"] == b["/"]["content_sha256"]


def test_run_killed_mid_stream_publishes_no_file(tmp_path):
    """A run killed (SIGKILL) while its series stream into the private temporary: no file at the output name."""
    import signal
    import time

    cfg = _stream_cfg(tmp_path, 20.0)
    out = tmp_path / "k.h5"
    p = subprocess.Popen([sys.executable, "-m", "scheduler_sim", "run", str(cfg), "--out", str(out), "--quiet"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        t_end = time.monotonic() + 300
        while not _tmps(tmp_path) and p.poll() is None and time.monotonic() < t_end:
            time.sleep(0.05)
        assert _tmps(tmp_path), "the run should stream into its temporary before it ends"
        size = 0
        while p.poll() is None and time.monotonic() < t_end:  # wait for streamed blocks to reach the temporary
            size = (tmp_path / _tmps(tmp_path)[0]).stat().st_size
            if size > 100_000:
                break
            time.sleep(0.05)
        assert p.poll() is None and size > 100_000
        p.send_signal(signal.SIGKILL)
        p.wait(30)
    finally:
        if p.poll() is None:
            p.kill()
    assert not out.exists() and len(_tmps(tmp_path)) == 1  # only the unpublished temporary, never the output


def test_disk_full_mid_stream_is_one_line_exit_2_and_stops_the_run(tmp_path, capsys, monkeypatch):
    """ENOSPC while the series stream (the disk fills after the first blocks reached it): one line naming the file,
    exit 2, no file and no temporary, and the run stopped there (its result was never built)."""
    from scheduler_sim.kernel import results

    built = []
    real_build = results.ResultBuilder.build
    monkeypatch.setattr(results.ResultBuilder, "build", lambda self: built.append(1) or real_build(self))
    cfg = _stream_cfg(tmp_path, 14.0)  # the reducer hands its first block over after ~9 days
    out = tmp_path / "full.h5"
    with _disk_full_after(3):  # a few chunks reach the disk, then it is full (chunks are written ~6 days in)
        assert main(["run", str(cfg), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(out) in err[0] and "No space left on device" in err[0]
    assert built == [] and not out.exists() and _tmps(tmp_path) == []
