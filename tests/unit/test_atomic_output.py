"""The one file writer (jobs.cachedirs.atomic_output): whole or nothing, private temporaries that cannot be links.

Issue #21 kind 1 (writes follow planted links): on main the temporary of every output was `.<name>.tmp-<host>-<pid>`,
opened with O_CREAT | O_TRUNC and no O_EXCL / O_NOFOLLOW, so a link planted at that name was followed.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import socket
import stat
import subprocess
import sys
import tempfile

import h5py
import numpy as np
import pytest

from jobs import cachedirs
from jobs.cachedirs import (CacheTrustError, atomic_output, atomic_write_bytes, cache_lock, clean_stale_temporaries,
                            read_entry, write_entry)

HOST = socket.gethostname().replace("-", "_")


def _tmps(folder) -> list[str]:
    return sorted(p for p in os.listdir(folder) if ".tmp-" in p)


def test_failed_write_leaves_the_old_file_whole_and_no_temporary(tmp_path):
    """An exception after part of the content was written: the old file is kept byte for byte, nothing else left;
    a full disk (ENOSPC from os.write) gives one OSError naming the file and its size."""
    out = tmp_path / "o.bin"
    atomic_write_bytes(out, b"old content")
    with pytest.raises(RuntimeError, match="half way"), atomic_output(out) as fh:
        fh.write(b"x" * 100_000)
        fh.flush()
        assert len(_tmps(tmp_path)) == 1 and os.path.getsize(tmp_path / _tmps(tmp_path)[0]) == 100_000
        raise RuntimeError("half way")
    assert out.read_bytes() == b"old content" and _tmps(tmp_path) == []
    real = os.write

    def full(fd, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    os.write = full
    try:
        with pytest.raises(OSError) as ei:
            atomic_write_bytes(out, b"y" * 2_000_000, what="report")
    finally:
        os.write = real
    assert str(ei.value) == (f"{out}: could not write the report (2.0 MB): No space left on device; the previous "
                             f"file is kept") and ei.value.errno == errno.ENOSPC
    assert out.read_bytes() == b"old content" and _tmps(tmp_path) == []


def test_temporary_is_a_new_private_file_with_an_unguessable_name(tmp_path):
    """`.<name>.tmp-<host>-<pid>-<random>`: the host-pid prefix is kept (stale ones are recognised), the random part
    differs between writes; the temporary is a regular 0600 file of this user while it is written."""
    out = tmp_path / "run.h5"
    names = []
    for _ in range(2):
        with atomic_output(out) as fh:
            (t,) = _tmps(tmp_path)
            names.append(t)
            st = os.lstat(tmp_path / t)
            assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == os.getuid()
            fh.write(b"abc")
    pat = re.compile(rf"^\.run\.h5\.tmp-{re.escape(HOST)}-{os.getpid()}-[a-z0-9_]{{8}}$")
    assert all(pat.match(n) for n in names), names
    assert names[0] != names[1] and out.read_bytes() == b"abc" and _tmps(tmp_path) == []


def test_planted_links_at_candidate_names_are_never_followed(tmp_path, monkeypatch):
    """Links planted at the old predictable name, at the first random candidates (tempfile's name generator forced
    to repeat them) and at the output's own name: the victim is untouched, the output is a new regular file."""
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"PRECIOUS")
    victim.chmod(0o600)
    shared = tmp_path / "shared"
    shared.mkdir()
    out = shared / "run.h5"
    prefix = f".run.h5.tmp-{HOST}-{os.getpid()}"
    forced = ["aaaaaaaa", "bbbbbbbb", "cccccccc"]
    for name in [prefix, *(f"{prefix}-{r}" for r in forced[:2])]:
        os.symlink(victim, shared / name)
    os.symlink(victim, out)  # the output name itself
    seq = iter(forced)

    class Names:
        def __iter__(self):
            return self

        def __next__(self):
            return next(seq)

    monkeypatch.setattr(tempfile, "_get_candidate_names", lambda: Names())
    with atomic_output(out) as fh:
        fh.write(b"HDF5-ish")
    assert victim.read_bytes() == b"PRECIOUS"
    assert not out.is_symlink() and out.read_bytes() == b"HDF5-ish"
    for name in (f"{prefix}-aaaaaaaa", f"{prefix}-bbbbbbbb"):  # the planted links are still links to the victim
        assert os.readlink(shared / name) == str(victim)


@pytest.mark.parametrize("umask,expected", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_output_mode_follows_the_umask_and_cache_entries_are_private(tmp_path, umask, expected):
    old = os.umask(umask)
    try:
        atomic_write_bytes(tmp_path / "out.h5", b"1")
        write_entry(tmp_path / "entry.npz", b"2")
        with atomic_output(tmp_path / "t.csv", "w", newline="") as fh:
            fh.write("a,b\r\n1,2\r\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "out.h5").st_mode) == expected
    assert stat.S_IMODE(os.stat(tmp_path / "t.csv").st_mode) == expected
    assert stat.S_IMODE(os.stat(tmp_path / "entry.npz").st_mode) == 0o600
    assert (tmp_path / "t.csv").read_bytes() == b"a,b\r\n1,2\r\n"


def test_libraries_write_through_the_descriptor(tmp_path):
    """h5py File(fileobj), matplotlib savefig(fh) and numpy savez(fh) write through the yielded file object."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = np.arange(100_000, dtype=np.float64)
    with atomic_output(tmp_path / "x.h5") as fh, h5py.File(fh, "w") as f:
        f.create_dataset("x", data=data, chunks=(10_000,), compression="gzip")
    with h5py.File(tmp_path / "x.h5") as f:
        assert np.array_equal(f["x"][()], data)
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    with atomic_output(tmp_path / "f.png") as fh:
        fig.savefig(fh, format="png")
    plt.close(fig)
    assert (tmp_path / "f.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with atomic_output(tmp_path / "a.npz") as fh:
        np.savez(fh, a=data[:5])
    with np.load(tmp_path / "a.npz") as z:
        assert z["a"].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert _tmps(tmp_path) == []


def test_stale_temporaries_of_both_name_forms_are_cleaned(tmp_path):
    """A dead process's `.<name>.tmp-<host>-<pid>-<random>` (and the older `-<pid>` form) is removed by the next
    write; a live process's and another host's are kept."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    out = tmp_path / "run.h5"
    stale_new = tmp_path / f".run.h5.tmp-{HOST}-{dead.pid}-k3j2h1g0"
    stale_old = tmp_path / f".run.h5.tmp-{HOST}-{dead.pid}"
    live = tmp_path / f".run.h5.tmp-{HOST}-{os.getppid()}-abcdefgh"
    other = tmp_path / f".run.h5.tmp-otherhost-{dead.pid}-abcdefgh"
    for p in (stale_new, stale_old, live, other):
        p.write_bytes(b"partial")
    assert sorted(clean_stale_temporaries(out)) == sorted([stale_new, stale_old])
    assert live.exists() and other.exists()


def test_output_folder_others_can_write_without_sticky_bit_is_warned(tmp_path, caplog):
    """A 0777 folder without the sticky bit is named in a warning (once); a sticky 1777 one is not."""
    cachedirs._WARNED_SHARED.clear()
    shared, sticky = tmp_path / "shared", tmp_path / "sticky"
    shared.mkdir()
    sticky.mkdir()
    shared.chmod(0o777)
    sticky.chmod(0o1777)
    with caplog.at_level(logging.WARNING, logger="hpctwin.files"):
        atomic_write_bytes(shared / "a.h5", b"1")
        atomic_write_bytes(shared / "b.h5", b"1")
        atomic_write_bytes(sticky / "c.h5", b"1")
    msgs = [r.getMessage() for r in caplog.records]
    assert len(msgs) == 1 and str(shared) in msgs[0] and "mode 0777" in msgs[0] and "sticky" in msgs[0]


def test_cache_reads_and_locks_do_not_follow_links(tmp_path):
    """read_entry refuses a link (O_NOFOLLOW) and an entry others can write; the per-entry lock file is not opened
    through a planted link either (the victim is not created)."""
    victim = tmp_path / "victim"
    victim.write_bytes(b"v")
    os.symlink(victim, tmp_path / "entry.fmu")
    with pytest.raises(CacheTrustError, match="symbolic link"):
        read_entry(tmp_path / "entry.fmu")
    (tmp_path / "open.npz").write_bytes(b"x")
    (tmp_path / "open.npz").chmod(0o666)
    with pytest.raises(CacheTrustError, match="writable by other users"):
        read_entry(tmp_path / "open.npz")
    os.symlink(tmp_path / "created-by-lock", tmp_path / ".e.fmu.lock")
    with pytest.raises(OSError) as ei, cache_lock(tmp_path, "e.fmu"):
        pass
    assert ei.value.errno == errno.ELOOP and not (tmp_path / "created-by-lock").exists()


def test_sweep_lock_is_not_opened_through_a_planted_link(tmp_path):
    """The sweep's `.sweep.lock` is truncated and written with the pid: a link planted there must not be followed
    (on main it truncated the link's target)."""
    from scheduler_sim.app.config import ConfigError
    from scheduler_sim.app.sweep import _sweep_lock

    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"PRECIOUS")
    out = tmp_path / "sw"
    out.mkdir()
    os.symlink(victim, out / ".sweep.lock")
    with pytest.raises(ConfigError, match="symbolic link"), _sweep_lock(out):
        pass
    assert victim.read_bytes() == b"PRECIOUS"
