"""Where hpctwin keeps its caches, and the checks that make a cache entry trustworthy.

One folder per cache (never a shared one):

==============  ==========================================  ==============================================
cache           folder                                      entries
==============  ==========================================  ==============================================
cooling FMUs    ``$HPCTWIN_FMU_CACHE_DIR``, else            ``<model>-<key16>.fmu`` + ``.fmu.json`` record
                ``<root>/fmu``                              (SHA-256 of the FMU's bytes, build key)
parsed traces   ``$HPCTWIN_TRACE_CACHE_DIR``, else          ``<key>/`` folder: parquet + JSON files and a
                ``<root>/traces``                           ``manifest.json`` of their SHA-256
wet-bulb        ``$HPCTWIN_WEATHER_CACHE_DIR``, else        ``.npz`` (no pickle) with its own SHA-256
series          ``<root>/weather``                          (:mod:`cooling_fmu.weather`)
==============  ==========================================  ==============================================

``<root>`` is ``$HPCTWIN_CACHE_DIR`` when set (it names the *root*; each cache is a subfolder of it), else the
user cache folder of the platform (:func:`platformdirs.user_cache_path`: ``~/.cache/hpctwin`` on Linux, following
``XDG_CACHE_HOME``).

Trust. Every entry is verified by content hash before use: the hash is recorded when the entry is written and the
bytes are hashed again on every use; a mismatch (a truncated or damaged entry) is treated as absent, so it is
rebuilt. A hash recorded beside the entry only proves something if nobody else can write there, so a cache folder
must be owned by the user and not writable by group or others (:func:`private_dir`); folders that hpctwin creates
are made ``0700``. A folder that fails this check is refused with :class:`CacheTrustError`, whose message says how
to fix it: its entries cannot be verified. No cache holds pickles: FMUs are zip files, the trace cache holds
parquet and JSON.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import tempfile
from pathlib import Path

__all__ = ["CACHE_ENV", "FMU_CACHE_ENV", "TRACE_CACHE_ENV", "CacheTrustError", "cache_root", "fmu_cache_dir",
           "trace_cache_dir", "private_dir", "check_private_file", "sha256_bytes", "cache_lock", "write_entry"]

#: Root of every hpctwin cache (each cache is a subfolder).
CACHE_ENV = "HPCTWIN_CACHE_DIR"
#: Folder of the cooling-FMU cache (overrides ``<root>/fmu``).
FMU_CACHE_ENV = "HPCTWIN_FMU_CACHE_DIR"
#: Folder of the parsed-trace cache (overrides ``<root>/traces``).
TRACE_CACHE_ENV = "HPCTWIN_TRACE_CACHE_DIR"


class CacheTrustError(RuntimeError):
    """A cache folder or entry whose contents cannot be verified (shared, foreign, or unwritable); refused."""


def cache_root() -> Path:
    """``$HPCTWIN_CACHE_DIR`` if set, else the platform's user cache folder for hpctwin (platformdirs)."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    import platformdirs

    return platformdirs.user_cache_path("hpctwin", appauthor=False)


def fmu_cache_dir() -> Path:
    """Folder of the cooling-FMU cache: ``$HPCTWIN_FMU_CACHE_DIR``, else ``<root>/fmu`` (not created)."""
    env = os.environ.get(FMU_CACHE_ENV)
    return Path(env).expanduser() if env else cache_root() / "fmu"


def trace_cache_dir() -> Path:
    """Folder of the parsed-trace cache: ``$HPCTWIN_TRACE_CACHE_DIR``, else ``<root>/traces`` (not created)."""
    env = os.environ.get(TRACE_CACHE_ENV)
    return Path(env).expanduser() if env else cache_root() / "traces"


def _check_owned_private(path: Path, what: str) -> None:
    st = path.stat()
    uid = os.getuid() if hasattr(os, "getuid") else None
    if uid is not None and st.st_uid != uid:
        raise CacheTrustError(f"{path}: {what} belongs to another user (uid {st.st_uid}); its entries cannot be "
                              f"verified, so it is not used. Point {FMU_CACHE_ENV} / {TRACE_CACHE_ENV} (or "
                              f"{CACHE_ENV}) to a folder of your own")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise CacheTrustError(f"{path}: {what} is writable by other users (mode {stat.S_IMODE(st.st_mode):04o}); "
                              f"anyone could plant an entry there, so it is not used. Make it private "
                              f"(chmod 700 {path}) or use a folder of your own")


def private_dir(path: str | os.PathLike[str], what: str = "cache folder") -> Path:
    """Create ``path`` (mode 0700, parents as needed) or check an existing one; return it.

    Raises
    ------
    CacheTrustError
        If the folder belongs to another user or is writable by group or others.
    OSError
        If it cannot be created.
    """
    p = Path(path)
    if not p.is_dir():
        p.mkdir(parents=True, exist_ok=True, mode=0o700)
        with contextlib.suppress(OSError):  # mkdir's mode is masked by the umask; be explicit
            if p.stat().st_uid == os.getuid():
                os.chmod(p, 0o700)
    _check_owned_private(p, what)
    return p


def check_private_file(path: Path, what: str = "cache entry") -> None:
    """Refuse a cache file that belongs to another user or is writable by group or others (CacheTrustError)."""
    _check_owned_private(path, what)


def sha256_bytes(data: bytes) -> str:
    """Hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def write_entry(path: Path, data: bytes) -> None:
    """Write one cache entry atomically: a private temporary file (``0600``) beside ``path``, then ``os.replace``.

    Readers see the old entry or the new one, never a part; the temporary is removed on any failure, and the
    ``OSError`` of an unwritable folder or a full disk propagates (callers skip the cache then).

    Parameters
    ----------
    path : Path
        The entry; its folder must exist.
    data : bytes
        The entry's content.
    """
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


@contextlib.contextmanager
def cache_lock(folder: Path):
    """Hold an exclusive advisory lock (``fcntl.flock`` on ``<folder>/.lock``) while checking or writing an entry.

    Processes of one machine (e.g. MPI ranks) then never see an entry and its record from two different writers.
    Where ``fcntl`` is missing the lock is a no-op (entries are still written atomically and verified).
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    fd = os.open(folder / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
