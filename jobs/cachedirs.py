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
import errno
import glob
import hashlib
import io
import logging
import os
import shutil
import socket
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["CACHE_ENV", "FMU_CACHE_ENV", "TRACE_CACHE_ENV", "CacheTrustError", "cache_root", "fmu_cache_dir",
           "trace_cache_dir", "private_dir", "check_cache_path", "check_private_file", "read_entry",
           "verified_copy", "sha256_bytes", "cache_lock", "write_entry", "atomic_output", "atomic_write_bytes",
           "atomic_write_text", "clean_stale_temporaries", "temporary_prefix", "shared_folder_problem"]

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


#: Logger of the file checks (shared output folders, cache folders above the cache root); printed on stderr.
log = logging.getLogger("hpctwin.files")

_GO_WRITE = stat.S_IWGRP | stat.S_IWOTH


def _uid() -> int | None:
    return os.getuid() if hasattr(os, "getuid") else None


def _check_owned_private(path: Path, what: str, st: os.stat_result | None = None) -> None:
    st = st if st is not None else path.stat()
    uid = _uid()
    if uid is not None and st.st_uid != uid:
        raise CacheTrustError(f"{path}: {what} belongs to another user (uid {st.st_uid}); its entries cannot be "
                              f"verified, so it is not used. Point {FMU_CACHE_ENV} / {TRACE_CACHE_ENV} (or "
                              f"{CACHE_ENV}) to a folder of your own")
    if st.st_mode & _GO_WRITE:
        raise CacheTrustError(f"{path}: {what} is writable by other users (mode {stat.S_IMODE(st.st_mode):04o}); "
                              f"anyone could plant an entry there, so it is not used. Make it private "
                              f"(chmod 700 {path}) or use a folder of your own")


def _ancestor_problem(st: os.stat_result, child_st: os.stat_result) -> str | None:
    """Why a folder above a cache folder lets another user swap what lies below it (None: it does not).

    The rule (as OpenSSH's StrictModes): the folder belongs to the user or to root, and it is not writable by group
    or others, unless it has the sticky bit (``/tmp``) and the folder below it in the path is the user's (or
    root's), which others then cannot rename or delete.
    """
    uid = _uid()
    if uid is None:  # pragma: no cover - not POSIX
        return None
    if st.st_uid not in (uid, 0):
        return f"belongs to another user (uid {st.st_uid})"
    mode = stat.S_IMODE(st.st_mode)
    if mode & _GO_WRITE:
        if not mode & stat.S_ISVTX:
            return f"is writable by other users (mode {mode:04o}, no sticky bit)"
        if child_st.st_uid not in (uid, 0):
            return (f"is a shared sticky folder (mode {mode:04o}) and the folder below it belongs to another user "
                    f"(uid {child_st.st_uid})")
    return None


_WARNED_ABOVE: set[str] = set()


def check_cache_path(leaf: str | os.PathLike[str], root: str | os.PathLike[str] | None = None,
                     what: str = "cache folder") -> Path:
    """Check that no other user can change what lies in cache folder ``leaf``, on the whole path; return it resolved.

    * ``leaf`` itself (where the entries are) must be the user's and not writable by group or others;
    * every folder from the cache ``root`` down to ``leaf``'s parent must be the user's or root's and not writable
      by group or others, unless it has the sticky bit and the folder below it is the user's (or root's): else
      another user could rename the folder below and put one of their own in its place;
    * folders above ``root`` are checked by the same rule, but only warned about (once per folder, on the
      ``hpctwin.files`` logger): they are outside what hpctwin creates, e.g. a group project folder.

    Parameters
    ----------
    leaf : str | os.PathLike[str]
        The cache folder (must exist).
    root : str | os.PathLike[str] | None
        The cache root above it (``$HPCTWIN_CACHE_DIR`` or the platform cache folder); when None or not above
        ``leaf``, ``leaf`` is its own root.
    what : str
        What the folder is, for the messages.

    Returns
    -------
    Path
        ``leaf`` with every symbolic link resolved (use it: the checked path is the resolved one).

    Raises
    ------
    CacheTrustError
        Naming the first folder, from the top, at or below the root that fails the rule.
    """
    leaf_p = Path(os.path.realpath(leaf))
    root_p = Path(os.path.realpath(root)) if root is not None else leaf_p
    if root_p != leaf_p and root_p not in leaf_p.parents:
        root_p = leaf_p
    leaf_st = leaf_p.stat()
    _check_owned_private(leaf_p, what, leaf_st)
    chain = [leaf_p, *leaf_p.parents]  # leaf first, then up to "/"
    stats = [leaf_st] + [q.stat() for q in chain[1:]]
    below_root = True  # walking up: True while the folder is at or below the root
    for i in range(1, len(chain)):
        if chain[i - 1] == root_p:
            below_root = False
        why = _ancestor_problem(stats[i], stats[i - 1])
        if why is None:
            continue
        if below_root:
            raise CacheTrustError(f"{chain[i]}: a folder on the path of the {what} {leaf_p} {why}; another user "
                                  f"could swap the cache below it, so it is not used. Make it private (chmod go-w "
                                  f"{chain[i]}) or point {CACHE_ENV} to a folder of your own")
        if str(chain[i]) not in _WARNED_ABOVE:
            _WARNED_ABOVE.add(str(chain[i]))
            log.warning("warning: %s: a folder above the cache root %s %s; another user could swap the cache "
                        "below it (hpctwin uses it, because it is outside the cache; see docs/security.md)",
                        chain[i], root_p, why)
    return leaf_p


def _default_root_for(p: Path) -> Path | None:
    try:
        root = Path(os.path.realpath(cache_root()))
    except Exception:  # noqa: BLE001 - no platform cache folder: the leaf is its own root
        return None
    rp = Path(os.path.realpath(p))
    return root if (root == rp or root in rp.parents) else None


def private_dir(path: str | os.PathLike[str], what: str = "cache folder",
                root: str | os.PathLike[str] | None = None) -> Path:
    """Create ``path`` (mode 0700, parents as needed) or check an existing one, on its whole path; return it.

    The check is :func:`check_cache_path`, from the cache ``root`` (default: :func:`cache_root` when ``path`` lies
    below it, else ``path`` itself) down to ``path``.

    Parameters
    ----------
    path : str | os.PathLike[str]
        The cache folder.
    what : str
        What it is, for the messages.
    root : str | os.PathLike[str] | None
        The cache root above it (see :func:`check_cache_path`).

    Returns
    -------
    Path
        The folder, symbolic links resolved (the path that was checked; use it). Errors: :class:`CacheTrustError`
        (from :func:`check_cache_path`) if the folder, or a folder between the cache root and it, belongs to another
        user or is writable by others; ``OSError`` if it cannot be created.
    """
    p = Path(path)
    if not p.is_dir():
        p.mkdir(parents=True, exist_ok=True, mode=0o700)
        with contextlib.suppress(OSError):  # mkdir's mode is masked by the umask; be explicit
            if p.stat().st_uid == os.getuid():
                os.chmod(p, 0o700)
    return check_cache_path(p, root if root is not None else _default_root_for(p), what)


def check_private_file(path: Path, what: str = "cache entry") -> None:
    """Refuse a cache file that belongs to another user or is writable by group or others (CacheTrustError)."""
    _check_owned_private(path, what, os.lstat(path))


def read_entry(path: str | os.PathLike[str], what: str = "cache entry") -> bytes:
    """Read a cache entry's bytes once, through one descriptor that cannot follow a link; check it first.

    Callers verify these bytes (their SHA-256) and parse these same bytes: nothing is reopened by name between the
    check and the use.

    Parameters
    ----------
    path : str | os.PathLike[str]
        The entry.
    what : str
        What it is, for the messages.

    Returns
    -------
    bytes
        The whole content.

    Raises
    ------
    CacheTrustError
        If the entry is a symbolic link or not a regular file, belongs to another user, or others can write it.
    OSError
        If it cannot be read (``FileNotFoundError`` if there is no entry).
    """
    p = Path(path)
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
                     | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise CacheTrustError(f"{p}: {what} is a symbolic link; it is not followed, so it is not used") from None
        raise
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise CacheTrustError(f"{p}: {what} is not a regular file; it is not used")
        _check_owned_private(p, what, st)
        return fh.read()


@contextlib.contextmanager
def verified_copy(data: bytes, name: str, sha256: str) -> Iterator[Path]:
    """Yield a private copy of verified bytes, to hand to a library that can only open a file by name (fmpy).

    The copy is written into a new folder made by :func:`tempfile.mkdtemp` (``0700``, this user's), hashed again
    after writing, and removed (with its folder) when the block ends. No other user can change it in between, so
    what the library opens is what was verified.

    Parameters
    ----------
    data : bytes
        The bytes that were verified.
    name : str
        File name of the copy (e.g. the FMU's cache name; fmpy reads its model identifier from inside).
    sha256 : str
        Their hex SHA-256.

    Yields
    ------
    Path
        The copy.

    Raises
    ------
    CacheTrustError
        If ``data`` does not hash to ``sha256``, or the copy read back does not.
    """
    if sha256_bytes(data) != sha256:
        raise CacheTrustError(f"{name}: bytes do not match their SHA-256 {sha256[:16]}...; not used")
    folder = Path(tempfile.mkdtemp(prefix="hpctwin-verified-"))
    try:
        copy = folder / Path(name).name
        fd = os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        if sha256_bytes(read_entry(copy, "private copy")) != sha256:
            raise CacheTrustError(f"{copy}: private copy does not match the verified SHA-256; not used")
        yield copy
    finally:
        shutil.rmtree(folder, ignore_errors=True)

def sha256_bytes(data: bytes) -> str:
    """Hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


# ---------------------------------------------------------------------------------------------- the one file writer
def _host() -> str:
    return socket.gethostname().replace("-", "_") or "host"


def temporary_prefix(path: str | os.PathLike[str]) -> str:
    """Start of the names of ``path``'s temporaries: ``.<name>.tmp-``; then ``<host>-<pid>-<random>``."""
    return f".{Path(path).name}.tmp-"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def clean_stale_temporaries(path: str | os.PathLike[str]) -> list[Path]:
    """Remove temporaries of ``path`` left by dead processes of this host (e.g. after a ``kill -9``).

    A temporary is ``.<name>.tmp-<host>-<pid>-<random>`` (:func:`atomic_output`; ``.<name>.tmp-<host>-<pid>``
    before the random part was added); it is stale when ``<host>`` is this machine and no process ``<pid>`` runs.
    Temporaries of live processes, and of other hosts (a shared file system), are left alone. A planted symbolic
    link of such a name is removed as a link (never followed).

    Parameters
    ----------
    path : str | os.PathLike[str]
        The output file whose temporaries are looked for.

    Returns
    -------
    list of Path
        The files removed.
    """
    path = Path(path)
    host = _host()
    prefix = temporary_prefix(path)
    gone: list[Path] = []
    try:
        entries = list(path.parent.glob(glob.escape(prefix) + "*"))
    except OSError:
        return gone
    for q in entries:
        parts = q.name[len(prefix):].split("-")
        if len(parts) not in (2, 3):
            continue
        h, pid = parts[0], parts[1]
        if h != host or not pid.isdigit() or int(pid) == os.getpid() or _pid_alive(int(pid)):
            continue
        try:
            q.unlink()
            gone.append(q)
        except OSError:
            pass
    return gone


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _umask() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    old = os.umask(0o022)  # pragma: no cover - no /proc: read it by setting it back
    os.umask(old)
    return old


class _DescriptorIO(io.RawIOBase):
    """Raw file over one descriptor (read, write, seek, truncate): what h5py, matplotlib and numpy write through."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd

    def fileno(self) -> int:
        return self._fd

    def readable(self) -> bool:
        return True

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        return os.readv(self._fd, [b])

    def write(self, b) -> int:
        view = memoryview(b).cast("B")
        done = 0
        while done < len(view):
            done += os.write(self._fd, view[done:])
        return done

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        return os.lseek(self._fd, offset, whence)

    def tell(self) -> int:
        return os.lseek(self._fd, 0, os.SEEK_CUR)

    def truncate(self, size: int | None = None) -> int:
        size = self.tell() if size is None else size
        os.ftruncate(self._fd, size)
        return size

    def close(self) -> None:
        if not self.closed:
            try:
                os.close(self._fd)
            finally:
                super().close()


_WARNED_SHARED: set[str] = set()


def shared_folder_problem(folder: str | os.PathLike[str]) -> str | None:
    """Why ``folder`` is unsafe for outputs (writable by group or others without the sticky bit), or None.

    Parameters
    ----------
    folder : str | os.PathLike[str]
        An output folder.

    Returns
    -------
    str or None
        A phrase with the mode, or None when the folder is private, sticky, or cannot be read.
    """
    try:
        mode = stat.S_IMODE(os.stat(folder).st_mode)
    except OSError:
        return None
    if mode & _GO_WRITE and not mode & stat.S_ISVTX:
        who = "others" if mode & stat.S_IWOTH else "its group"
        return f"can be written by {who} and has no sticky bit (mode {mode:04o})"
    return None


def _warn_shared(folder: Path) -> None:
    key = os.path.realpath(folder)
    if key in _WARNED_SHARED:
        return
    why = shared_folder_problem(folder)
    if why is not None:
        _WARNED_SHARED.add(key)
        log.warning("warning: output folder %s %s: files are written through private temporaries that cannot be "
                    "links, but another user can delete or replace them once written; use a private folder "
                    "(chmod go-w) or one with the sticky bit (chmod +t). See docs/security.md", folder, why)


def _raise_write_error(path: Path, what: str, size: int | None, exc: OSError):
    why = exc.strerror or str(exc)
    mb = f" ({size / 1e6:.1f} MB)" if size is not None else ""
    err = OSError(f"{path}: could not write the {what}{mb}: {why}"
                  f"{'; the previous file is kept' if os.path.lexists(path) else ''}")
    err.errno = exc.errno  # the message alone is printed (no "[Errno n]" prefix); the code stays available
    raise err from None


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike[str], mode: str = "wb", *, private: bool = False,
                  what: str = "output file", encoding: str = "utf-8", newline: str | None = None,
                  make_parents: bool = True,
                  size_hint: int | None = None) -> Iterator[io.BufferedRandom | io.TextIOWrapper]:
    """Write one file whole or not at all, through a private temporary that cannot be a planted link.

    The one writer of hpctwin: outputs (HDF5 files, reports, figures, sweep summaries, exports), cache entries and
    the experiments' files all go through it. Steps:

    1. stale temporaries of ``path`` left by dead processes of this host are removed
       (:func:`clean_stale_temporaries`);
    2. the temporary ``.<name>.tmp-<host>-<pid>-<random>`` is made in the target's folder by
       :func:`tempfile.mkstemp` (``O_CREAT | O_EXCL | O_NOFOLLOW``, mode ``0600``): it is a new file, never an
       existing one or a link another user planted, and its name cannot be guessed;
    3. the caller writes through the file object yielded, which writes only through that descriptor (h5py
       ``File(fileobj)``, ``savefig(fh)``, ``np.savez(fh)``); the file is never reopened by name;
    4. on success: ``flush``, ``fsync``, mode set (``0666`` minus the umask, as ``open`` would; ``0600`` with
       ``private``), ``os.replace`` onto ``path`` (which replaces a link at ``path`` itself, never its target),
       a check that ``path`` is the file written (another user who can write the folder could have swapped the
       temporary), and ``fsync`` of the folder;
    5. on any failure (an exception in the block, a full disk) the temporary is removed and the old file is kept.

    A folder that others can write without the sticky bit is warned about once (``hpctwin.files`` logger): the
    temporaries are safe there, but the finished file can be deleted or replaced by others.

    Parameters
    ----------
    path : str | os.PathLike[str]
        Destination file.
    mode : str
        Binary (a buffered, readable, seekable file object: h5py needs both) or text.
    private : bool
        Mode ``0600`` (cache entries) instead of ``0666`` minus the umask.
    what : str
        What the file is, for the error message.
    encoding : str
        Text mode only, as for :func:`open`.
    newline : str | None
        Text mode only, as for :func:`open`.
    make_parents : bool
        Create the folder when missing (outputs); cache entries need an existing (checked) folder.
    size_hint : int | None
        Size for the error message (else the bytes written so far).

    Yields
    ------
    io.BufferedRandom or io.TextIOWrapper
        The file object to write.

    Raises
    ------
    ValueError
        If ``mode`` is not ``"wb"`` (binary) or ``"w"`` (text).
    IsADirectoryError
        If ``path`` is a folder.
    OSError
        If the file cannot be written (one line naming the file, the size and the cause; the old file is kept), or
        if another user replaced the temporary before the rename.
    BaseException
        Whatever the block raised, re-raised once the temporary is removed (an ``OSError`` as above).
    """
    if mode not in ("wb", "w"):
        raise ValueError(f"atomic_output: mode must be 'wb' or 'w', not {mode!r}")
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{path}: is a folder; give an output file name")
    try:
        if make_parents:
            path.parent.mkdir(parents=True, exist_ok=True)
        _warn_shared(path.parent)
        clean_stale_temporaries(path)
        fd, name = tempfile.mkstemp(prefix=f"{temporary_prefix(path)}{_host()}-{os.getpid()}-", dir=path.parent)
    except OSError as exc:
        _raise_write_error(path, what, size_hint, exc)
    tmp = Path(name)
    raw = _DescriptorIO(fd)
    fh = io.BufferedRandom(raw)
    handle = io.TextIOWrapper(fh, encoding=encoding, newline=newline) if mode == "w" else fh
    size = size_hint
    try:
        yield handle
        handle.flush()
        size = raw.tell() if size is None else size
        os.fsync(fd)
        os.fchmod(fd, 0o600 if private else 0o666 & ~_umask())
        mine = os.fstat(fd)
        handle.close()
        os.replace(tmp, path)
        now = os.lstat(path)
        if (now.st_dev, now.st_ino) != (mine.st_dev, mine.st_ino):
            raise OSError(errno.EEXIST, f"another user replaced the temporary in {path.parent} before it was "
                                        f"renamed (the folder is writable by others); the file there is not "
                                        f"the one written: use a private folder")
    except BaseException as exc:
        with contextlib.suppress(Exception):
            handle.close()
        with contextlib.suppress(OSError):
            if os.path.lexists(tmp):
                tmp.unlink()
        if isinstance(exc, OSError):
            if size is None:
                with contextlib.suppress(Exception):
                    size = os.fstat(fd).st_size
            _raise_write_error(path, what, size, exc)
        raise
    _fsync_dir(path.parent)


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes | memoryview, *, what: str = "output file",
                       private: bool = False, make_parents: bool = True) -> Path:
    """Write ``data`` to ``path`` with :func:`atomic_output` (whole or not at all; never through a planted link).

    Parameters
    ----------
    path : str | os.PathLike[str]
        Destination file; its folder is created when missing (unless ``make_parents`` is False).
    data : bytes | memoryview
        The whole content (a ``memoryview`` is written without a copy, e.g. an HDF5 image's buffer).
    what : str
        What the file is, for the error message.
    private : bool
        Mode ``0600`` instead of ``0666`` minus the umask.
    make_parents : bool
        Create the folder when missing.

    Returns
    -------
    Path
        ``path``. Errors are those of :func:`atomic_output`: ``IsADirectoryError`` if ``path`` is a folder, one
        ``OSError`` naming the file if it cannot be written.
    """
    view = memoryview(data).cast("B")
    with atomic_output(path, "wb", private=private, what=what, make_parents=make_parents,
                       size_hint=len(view)) as fh:
        fh.raw.write(view)  # unbuffered: straight from the caller's buffer, no copy
    return Path(path)


def atomic_write_text(path: str | os.PathLike[str], text: str, *, encoding: str = "utf-8",
                      what: str = "output file", private: bool = False, make_parents: bool = True) -> Path:
    """Write ``text`` to ``path`` with :func:`atomic_output`; see :func:`atomic_write_bytes`.

    Parameters
    ----------
    path : str | os.PathLike[str]
        Destination file.
    text : str
        The whole content.
    encoding : str
        Its encoding.
    what : str
        What the file is, for the error message.
    private : bool
        Mode ``0600``.
    make_parents : bool
        Create the folder when missing.

    Returns
    -------
    Path
        ``path``. Errors are those of :func:`atomic_write_bytes`.
    """
    return atomic_write_bytes(path, text.encode(encoding), what=what, private=private, make_parents=make_parents)


def write_entry(path: Path, data: bytes) -> None:
    """Write one cache entry atomically with :func:`atomic_output` (private ``0600``, folder must exist).

    Readers see the old entry or the new one, never a part; the temporary is removed on any failure, and the
    ``OSError`` of an unwritable folder or a full disk propagates (callers skip the cache then).

    Parameters
    ----------
    path : Path
        The entry; its folder must exist.
    data : bytes
        The entry's content.
    """
    atomic_write_bytes(path, data, what="cache entry", private=True, make_parents=False)


@contextlib.contextmanager
def cache_lock(folder: Path, entry: str | None = None) -> Iterator[None]:
    """Hold an exclusive advisory lock on one cache entry (``fcntl.flock`` on ``<folder>/.<entry>.lock``).

    One lock per entry: processes building or checking the same entry (e.g. MPI ranks) see one build, and a long
    build of one plant's FMU never blocks a run of another plant. ``entry=None`` locks ``<folder>/.lock`` (a whole
    folder; kept for callers that store one thing). The lock file is opened with ``O_NOFOLLOW``, ``0600``. Where
    ``fcntl`` is missing the lock is a no-op (entries are still written atomically and verified).

    Parameters
    ----------
    folder : Path
        The (checked, private) cache folder.
    entry : str | None
        The entry's file name.

    Yields
    ------
    None
        While the lock is held.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    name = f".{entry}.lock" if entry else ".lock"
    fd = os.open(Path(folder) / name, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
                 | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
