"""Cache trust on the whole path, verified bytes loaded, one lock per entry (issue #21 kind 2).

On main only the leaf folder (e.g. <root>/fmu) was checked, so a cache root that anyone could write was accepted;
the FMU was hashed, then fmpy opened it again by path (a swap in between ran another user's code); `cache_lock`
locked the whole folder, so one plant's FMU build blocked every other plant's run.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from jobs import cachedirs
from jobs.cachedirs import CacheTrustError, cache_lock, check_cache_path, private_dir, sha256_bytes

ROOT = Path(__file__).resolve().parents[2]


def test_cache_root_writable_by_others_is_refused_naming_it(tmp_path):
    croot = tmp_path / "croot"
    croot.mkdir()
    croot.chmod(0o777)
    with pytest.raises(CacheTrustError) as ei:
        private_dir(croot / "fmu", "FMU cache folder", root=croot)
    msg = str(ei.value)
    assert msg.startswith(f"{croot}: ") and "mode 0777, no sticky bit" in msg and f"{croot}/fmu" in msg
    # a folder between the root and the entry folder is checked too
    croot.chmod(0o700)
    (croot / "mid").mkdir()
    (croot / "mid").chmod(0o775)
    with pytest.raises(CacheTrustError, match=rf"^{croot}/mid: .*mode 0775, no sticky bit"):
        private_dir(croot / "mid" / "fmu", root=croot)


def test_cache_root_from_the_environment_is_the_checked_root(tmp_path, monkeypatch):
    """With HPCTWIN_CACHE_DIR set, <root>/fmu is checked from that root down (the default root)."""
    croot = tmp_path / "croot"
    croot.mkdir()
    croot.chmod(0o777)
    monkeypatch.setenv(cachedirs.CACHE_ENV, str(croot))
    with pytest.raises(CacheTrustError, match=rf"^{croot}: "):
        private_dir(cachedirs.fmu_cache_dir(), "FMU cache folder")
    croot.chmod(0o700)
    assert private_dir(cachedirs.fmu_cache_dir(), "FMU cache folder") == (croot / "fmu").resolve()


def test_sticky_shared_folder_is_accepted_only_above_a_folder_of_the_user(tmp_path):
    """A sticky 1777 folder (as /tmp) on the path is fine when the folder below it is the user's (others cannot
    rename it); the entry folder itself must be private even if sticky."""
    croot = tmp_path / "croot"
    croot.mkdir()
    croot.chmod(0o1777)
    leaf = private_dir(croot / "mine", root=croot)
    assert leaf == (croot / "mine").resolve()
    (croot / "open").mkdir()
    (croot / "open").chmod(0o1777)
    with pytest.raises(CacheTrustError, match="writable by other users"):
        check_cache_path(croot / "open", root=croot)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a folder to another uid (chown)")
def test_folder_on_the_path_owned_by_another_user_is_refused(tmp_path):
    croot = tmp_path / "croot"
    (croot / "fmu").mkdir(parents=True)
    os.chown(croot, 54321, 54321)
    croot.chmod(0o755)
    with pytest.raises(CacheTrustError, match=rf"^{croot}: .*belongs to another user \(uid 54321\)"):
        private_dir(croot / "fmu", root=croot)


def test_folders_above_the_cache_root_are_warned_about_not_refused(tmp_path, caplog):
    above = tmp_path / "project"
    above.mkdir()
    above.chmod(0o777)
    croot = above / "me"
    croot.mkdir(mode=0o700)
    cachedirs._WARNED_ABOVE.discard(str(above.resolve()))
    with caplog.at_level(logging.WARNING, logger="hpctwin.files"):
        assert private_dir(croot / "fmu", root=croot) == (croot / "fmu").resolve()
    (msg,) = [r.getMessage() for r in caplog.records]
    assert str(above.resolve()) in msg and "above the cache root" in msg and "mode 0777" in msg


def test_cli_run_refuses_a_cache_root_others_can_write(tmp_path):
    """The field case: `HPCTWIN_CACHE_DIR=croot` with croot 0777 -> exit 2, one line naming croot."""
    croot = tmp_path / "croot"
    croot.mkdir()
    croot.chmod(0o777)
    swf = tmp_path / "two.swf"
    swf.write_text("1 0 0 100 1 -1 -1 1 200 -1 1 1 1 -1 1 -1 -1 -1\n")
    env = {**os.environ, "HPCTWIN_CACHE_DIR": str(croot)}
    env.pop("HPCTWIN_FMU_CACHE_DIR", None)
    r = subprocess.run([sys.executable, "-m", "scheduler_sim.app.cli", "run", "--system", "theta", "--trace",
                        str(swf), "--start-day", "0", "--days", "0.01", "--weather", "constant", "--quiet",
                        "--out", str(tmp_path / "o.h5")], capture_output=True, text=True, timeout=300, env=env,
                       cwd=ROOT)
    errs = [ln for ln in r.stderr.splitlines() if "error" in ln]
    assert r.returncode == 2 and len(errs) == 1 and f"{croot}: " in errs[0] and "no sticky bit" in errs[0], r.stderr
    assert "Traceback" not in r.stderr and not list(croot.rglob("*.fmu"))  # nothing built or loaded there


@pytest.mark.fmu
def test_fmu_opened_is_a_private_copy_of_the_verified_bytes(tmp_path, monkeypatch):
    """fmpy is handed a private copy (mkdtemp folder, 0700) of the bytes hashed, never the cache file: the cache
    entry is overwritten with garbage between the check and the open, and the plant still opens the verified FMU."""
    from cooling_fmu import plant as plant_mod

    cache = tmp_path / "fmu"
    seen = {}
    real_open = plant_mod.open_fmu

    def swapped_open(path, backend="fmpy"):
        path = Path(path)
        entry = next(cache.glob("*.fmu"))
        entry.write_bytes(b"PK\x03\x04 not the verified FMU")  # the swap between check and open
        seen.update(path=path, sha=sha256_bytes(path.read_bytes()), mode=path.parent.stat().st_mode & 0o777,
                    entry=entry)
        return real_open(path, backend)

    monkeypatch.setattr(plant_mod, "open_fmu", swapped_open)
    with plant_mod.CoolingPlant("seth", cache_dir=cache) as p:
        assert seen["path"].parent != cache.resolve() and seen["path"].name == p.fmu_path.name
        assert seen["sha"] == p.fmu_sha256 and seen["mode"] == 0o700
        assert p.n_cdu >= 1
    assert not seen["path"].exists()  # the private copy is removed once fmpy has extracted it


def test_trace_cache_loads_the_verified_bytes_and_refuses_links(tmp_path, monkeypatch):
    """The parsed-trace cache parses the bytes it verified; an entry file replaced by a link is not followed (the
    entry is dropped and the trace parsed again)."""
    from conftest import make_jobs
    from dataloaders import cache as tcache
    from dataloaders.report import LoadReport, LoadResult

    monkeypatch.setenv("HPCTWIN_TRACE_CACHE_DIR", str(tmp_path / "traces"))
    jobs = make_jobs([(7, 0.0, 1, 30.0, 60.0)], origin=0.0)
    d = tcache.store_cached("k" * 64, LoadResult(jobs, LoadReport(source="t.swf", loader="swf"), None))
    hit = tcache.load_cached("k" * 64)
    assert hit is not None and hit.jobs["job_id"].tolist() == [7]
    real = d / "jobs.parquet"
    moved = tmp_path / "elsewhere.parquet"
    real.rename(moved)
    os.symlink(moved, real)  # same bytes, but through a link
    assert tcache.load_cached("k" * 64) is None and not d.exists()


_LOCKER = textwrap.dedent("""
    import fcntl, os, sys, time
    sys.path.insert(0, {root!r})
    from pathlib import Path
    from jobs.cachedirs import cache_lock
    folder, entry, mode = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    if mode == "try":  # non-blocking probe of the same lock file
        fd = os.open(folder / f".{{entry}}.lock", os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            print("free")
        except BlockingIOError:
            print("held")
    else:
        t = time.perf_counter()
        with cache_lock(folder, entry):
            print(f"got {{time.perf_counter() - t:.3f}}")
""")


def test_lock_of_one_entry_does_not_block_another_entry(tmp_path):
    """Holding the lock of entry A (as a long FMU build does): a second process takes entry B's lock at once, and
    finds A's held."""
    script = tmp_path / "locker.py"
    script.write_text(_LOCKER.format(root=str(ROOT)))
    with cache_lock(tmp_path, "A.fmu"):
        r = subprocess.run([sys.executable, str(script), str(tmp_path), "B.fmu", "take"], capture_output=True,
                           text=True, timeout=30)
        assert r.returncode == 0 and r.stdout.startswith("got "), r.stderr
        assert float(r.stdout.split()[1]) < 5.0
        r = subprocess.run([sys.executable, str(script), str(tmp_path), "A.fmu", "try"], capture_output=True,
                           text=True, timeout=30)
        assert r.stdout.strip() == "held", r.stderr
    r = subprocess.run([sys.executable, str(script), str(tmp_path), "A.fmu", "try"], capture_output=True, text=True,
                       timeout=30)
    assert r.stdout.strip() == "free"


_BUILDER = textwrap.dedent("""
    import json, sys, time
    sys.path.insert(0, {root!r})
    from pathlib import Path
    import cooling_fmu.build as b
    from jobs.cachedirs import write_entry
    count = Path(sys.argv[2])

    def fake_build(source, model_name, cache, target, key, sha256_bytes, phase):
        with open(count, "a") as fh:
            fh.write("build\\n")
        time.sleep(1.5)  # long enough for the other process to be waiting on the lock
        data = b"fake fmu " + key.encode()
        digest = sha256_bytes(data)
        write_entry(target, data)
        write_entry(b._record_path(target), json.dumps({{"key": key, "sha256": digest}}).encode())
        return digest, data

    b._build_into = fake_build
    target, digest, data = b.fetch_fmu_bytes("model M end M;", "M", sys.argv[1])
    print(digest, len(data))
""")


def test_two_processes_building_the_same_entry_see_one_build(tmp_path):
    script = tmp_path / "builder.py"
    script.write_text(_BUILDER.format(root=str(ROOT)))
    cache, count = tmp_path / "fmu", tmp_path / "builds.txt"
    procs = [subprocess.Popen([sys.executable, str(script), str(cache), str(count)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [e for _, e in outs]
    assert count.read_text() == "build\n"  # one build; the other process waited and found the verified entry
    assert outs[0][0] == outs[1][0] and outs[0][0].split()[1] == str(len(b"fake fmu ") + 64)
    assert json.loads(next(cache.glob("*.fmu.json")).read_text())["sha256"] == outs[0][0].split()[0]
