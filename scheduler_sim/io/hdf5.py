"""HDF5 output of one run: a documented, versioned schema (docs/output_schema.md), written atomically.

Every group, dataset and attribute is written through :class:`scheduler_sim.io.schema.SchemaWriter`, so the schema
table of :mod:`scheduler_sim.io.schema` is the one place that declares the layout below (dtype, shape, unit,
description, since-version); docs/output_schema.md is generated from it.

Layout (schema 1.2; 1.1 added /attribution, 1.2 /grid, readers accept any 1.x)::

    /                      attrs: schema_version, software_version, git_sha, run_name, system, policy, seed,
                                  config_json, pue_definition, cooling_modelled
    /jobs/<column>         (n_jobs,)           one dataset per job-table column, attrs units, long_name
    /timeseries/time_s     (n_intervals,)      start of each output interval [s]; attrs interval_s, time_origin_unix_s
    /timeseries/facility/<name>  (n_intervals,)          interval averages
    /timeseries/cdu/<name>       (n_intervals, n_cdus)   interval averages per CDU
    /timeseries/rack/P_in_W      (n_intervals, n_racks)  interval-average rack input power
    /summary               attrs: headline metrics (see scheduler_sim.kernel.metrics.summarize)
    /totals                attrs: exact energies [J] integrated over the run
    /attribution/...       job -> PUE attribution (scheduler_sim.analysis.attribution; docs/output_schema.md)
    /provenance            attrs: input_checksums_json, versions_json, load_report_json, info_json,
                                  created, wall_time_s, scheduling_time_s (the only attributes that vary
                                  between identical runs: wall-clock measurements)

A file is written as it is built, straight to a private temporary of unpredictable name in the same folder (made
with ``O_CREAT | O_EXCL | O_NOFOLLOW``, so never a link another user planted), flushed to the disk (``fsync``) and
renamed into place only when complete (:class:`atomic_h5`, through :func:`jobs.cachedirs.atomic_output`, the one
writer of the project), so a reader never sees a half-written file and no image of the whole file is held in memory;
a full disk gives one error naming the file, with nothing left behind.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import functools
import io
import json
import subprocess
import sys
import weakref
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

import h5py
import numpy as np
import pandas as pd

from jobs.cachedirs import atomic_output, atomic_write_bytes, clean_stale_temporaries
from jobs.table import JOB_COLUMNS
from power.facility import pue_category

from ..kernel.metrics import group_metrics
from .schema import (RL_REPORT_COLUMNS, SCHEMA_VERSION, TRAINING_REPORT_COLUMNS, SchemaError, SchemaWriter,
                     attribution_unit, track_sources, unit_of, untrack_sources)

if TYPE_CHECKING:  # types only
    from ..kernel.results import SimulationResult
    from ..serving.run import ServingOutput

__all__ = ["SCHEMA_VERSION", "VOLATILE_ATTRS", "write_run", "read_jobs", "read_series", "read_summary",
           "check_schema", "SchemaError", "sha256_file", "package_versions", "git_sha", "atomic_h5", "unit_of",
           "write_dataset", "write_attribution_group", "write_serving_group", "write_workload_group",
           "atomic_write_bytes", "clean_stale_temporaries", "content_digest", "verify_file", "DamagedFileError",
           "CONTENT_DIGEST_ATTR", "describe_unreadable", "check_output", "OutputCheck", "reading"]

#: Attributes (in /provenance; ``sweep_timing_json`` and ``sweep_resume_json`` at the root of a sweep's summary.h5,
#: which depend on what an earlier, interrupted sweep left) that legitimately differ
#: between two runs of the same inputs: wall times (``twin_latency_s``: wall time of each twin decision [s];
#: the serving engine's wall time and events per wall second in /summary and /serving/summary).
VOLATILE_ATTRS = ("created", "wall_time_s", "scheduling_time_s", "sweep_timing_json", "sweep_resume_json",
                  "twin_latency_s", "serving_engine_wall_time_s", "serving_engine_events_per_s", "engine_wall_time_s",
                  "engine_events_per_s")

PUE_DEFINITION = ("PUE = E_facility / E_IT, energy-weighted (The Green Grid WP49). E_IT = rack input energy "
                  "(node DC + SIVOC/VRM loss + rectifier loss + rack overhead; fans inside IT equipment are IT). "
                  "E_facility = E_IT + liquid cooling plant (pumps, tower fans, chiller) + air side (CRAH fans, "
                  "chilled water for heat to air) + electrical-chain losses (transformer, switchgear, UPS, PDU) + "
                  "lighting and building controls, for the stages the system description counts (attribute "
                  "facility_stages_counted). pPUE_mechanical = (E_IT + liquid plant + air side) / E_IT; "
                  "pPUE_electrical = (E_IT + electrical-chain losses) / E_IT. "
                  "ITUE = E_IT / (E_node_dc + E_rack_overhead). TUE = ITUE * PUE.")
#: The Green Grid rule on fans inside IT equipment, written to every run file.
IT_FANS_RULE = ("Fans inside IT equipment (server fans, cabinet blowers) are IT power (The Green Grid WP49); they "
                "are never counted in the facility overhead.")



def sha256_file(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@functools.lru_cache(maxsize=1)
def _package_versions() -> tuple[tuple[str, str], ...]:
    out = {"python": sys.version.split()[0]}
    for pkg in ("hpctwin", "numpy", "pandas", "h5py", "fmpy", "rumoca", "mpi4py", "psychrolib", "pydantic"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    return tuple(out.items())


def package_versions() -> dict[str, str]:
    """Versions of hpctwin and the packages that shape its results (read once per process: every run of a sweep
    rank or ensemble writes them, and the installed versions do not change under a running process).
    """
    return dict(_package_versions())


@functools.lru_cache(maxsize=1)
def git_sha() -> str:
    """Commit of the hpctwin source tree, or 'unknown' outside a git checkout (asked once per process: one
    ``git`` subprocess per written file cost a fork of the whole interpreter for every sweep scenario).
    """
    try:
        here = Path(__file__).resolve().parent
        r = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5)
        return r.stdout.strip() if r.returncode == 0 else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


#: Root attribute holding :func:`content_digest` of the rest of the file, set when the file is written.
CONTENT_DIGEST_ATTR = "content_sha256"


class DamagedFileError(ValueError):
    """A file that is not an HDF5 file, cannot be read, or whose content no longer matches its ``content_sha256``."""


def content_digest(f: h5py.File, sources: dict[str, weakref.ref] | None = None) -> str:
    """SHA-256 over every group, dataset and attribute of an open file, except ``content_sha256`` itself and the
    wall-clock attributes of :data:`VOLATILE_ATTRS` (so the digest, like the rest of the file, is the same for two
    runs of the same inputs).

    Objects are visited in sorted path order; each contributes its path, its attributes (sorted by name: name,
    dtype and bytes, or the text of a string) and, for a dataset, its dtype, shape and bytes (the ``repr`` of the
    values for variable-length strings). External links contribute their target. The digest depends only on the
    content, not on chunking, compression or the order objects were created in.

    Parameters
    ----------
    f : h5py.File
        The open file.
    sources : dict[str, weakref.ref] | None
        The arrays just written, by dataset path (:func:`scheduler_sim.io.schema.track_sources`): a numeric
        dataset whose array is still alive, with the file's dtype and shape, is hashed from memory, the same bytes
        in the same order, instead of being read back and decompressed. None: everything is read back.

    Returns
    -------
    str
        Hex digest.
    """
    h = hashlib.sha256()
    sources = sources or {}

    def value_bytes(v) -> bytes:
        if isinstance(v, bytes):
            return b"b:" + v
        if isinstance(v, str):
            return b"s:" + v.encode("utf-8", "surrogatepass")
        a = np.asarray(v)
        if a.dtype.kind == "O":
            return b"o:" + repr(a.ravel().tolist()).encode()
        return str(a.dtype).encode() + str(a.shape).encode() + np.ascontiguousarray(a).tobytes()

    def visit(path: str, obj) -> None:
        h.update(b"\0P" + path.encode())
        for k in sorted(obj.attrs.keys()):
            if (path == "/" and k == CONTENT_DIGEST_ATTR) or k in VOLATILE_ATTRS:
                continue
            h.update(b"\0A" + k.encode() + b"=" + value_bytes(obj.attrs[k]))
        if isinstance(obj, h5py.Dataset):
            if obj.ndim == 0 or obj.dtype.kind == "O" or h5py.check_string_dtype(obj.dtype) is not None:
                h.update(b"\0D" + value_bytes(obj[()]))
                return
            # numeric: the same bytes as value_bytes(obj[()]) fed in blocks of rows (C order), so hashing a large
            # series never holds it whole (nor its tobytes() copy) in memory
            h.update(b"\0D" + str(obj.dtype).encode() + str(obj.shape).encode())
            row = max(1, int(np.prod(obj.shape[1:], dtype=np.int64)) * obj.dtype.itemsize)
            step = max(1, (1 << 23) // row)
            ref = sources.get(obj.name)
            src = ref() if ref is not None else None
            if src is None or src.dtype != obj.dtype or src.shape != obj.shape:
                src = obj  # not written through the schema writer of this file, or gone: read back
            for i in range(0, obj.shape[0], step):
                h.update(np.ascontiguousarray(src[i:i + step]).data)
            return
        for name in sorted(obj.keys()):
            link = obj.get(name, getlink=True)
            sub = (path.rstrip("/") + "/" + name)
            if isinstance(link, h5py.ExternalLink):
                h.update(b"\0L" + sub.encode() + b"->" + link.filename.encode() + b":" + link.path.encode())
            elif isinstance(link, h5py.SoftLink):
                h.update(b"\0S" + sub.encode() + b"->" + link.path.encode())
            else:
                visit(sub, obj[name])

    visit("/", f)
    return h.hexdigest()


def verify_file(path: str | Path, *, require_digest: bool = False) -> bool:
    """Check that ``path`` is a readable HDF5 file whose content matches its ``content_sha256`` attribute.

    Parameters
    ----------
    path : str | Path
        The file.
    require_digest : bool
        Treat a file without ``content_sha256`` (written by an older hpctwin) as damaged.

    Returns
    -------
    bool
        True when the digest was checked and matches; False when the file has no digest (and it is not required).


    Errors: :class:`DamagedFileError` as :func:`check_output` (one line naming the file).
    """
    return check_output(path, allow_unverified=not require_digest).verified


@dataclasses.dataclass
class OutputCheck:
    """What :func:`check_output` found in an output file, for the command that reads it.

    Attributes
    ----------
    path : pathlib.Path
        The file.
    kind : str
        Its kind (``run``, ``sweep-summary``, ``cooling_standalone``, ...).
    verified : bool
        Its ``content_sha256`` was present and matches its content.
    complete : bool
        False for a partial file (a run that stopped early: root attribute ``complete = false``).
    failure : str
        Why a partial run stopped (root attribute ``failure``), ``""`` otherwise.
    data_bytes : int
        Bytes its datasets hold once read (from the shapes; variable-length strings counted at 64 bytes).
    warnings : list of str
        Lines every command prints first (and the report shows in a banner): a partial file, a file read
        unverified.
    """

    path: Path
    kind: str = "run"
    verified: bool = False
    complete: bool = True
    failure: str = ""
    data_bytes: int = 0
    warnings: list[str] = dataclasses.field(default_factory=list)

    @property
    def partial(self) -> bool:
        """True when the file records an incomplete run (``complete = false``)."""
        return not self.complete


#: Bytes a variable-length string element is counted at when sizing a file's datasets (its pointer and text).
VLEN_ELEMENT_BYTES = 64


def check_output(path: str | Path, *, allow_unverified: bool = False) -> OutputCheck:
    """The one check every command makes before reading an hpctwin output file (``validate``, ``report``,
    ``compare``, ``read_jobs`` / ``read_series`` / ``read_summary``, the sweep's resume).

    In this order, from metadata first: the file exists and is HDF5; every dataset's shape agrees with the schema
    table's named dimensions (:func:`scheduler_sim.io.schema.shape_conflicts`: an absurd row count is refused
    before it is hashed or read); the bytes its datasets hold once read fit the memory budget
    (:func:`jobs.memory.check_allocation`, twice the data for the reader's copies); its ``content_sha256``
    matches its content (:func:`content_digest`). A file without ``content_sha256`` is refused unless
    ``allow_unverified`` (the commands' ``--no-verify``), and then a warning says so. A partial file
    (``complete = false``) is accepted with a warning naming why it stopped.

    Parameters
    ----------
    path : str | Path
        The file.
    allow_unverified : bool
        Accept a file that has no content checksum (written by hpctwin before 0.1, or stripped), with a warning.

    Returns
    -------
    OutputCheck
        What was found, with the warnings to print first.

    Raises
    ------
    SchemaError
        If the file is not an hpctwin output file (no ``schema_version``) or of an incompatible major version.
    DamagedFileError
        One line naming the file: not found, not HDF5, unreadable, shapes that contradict each other, more data
        than memory allows, no checksum (without ``allow_unverified``), or content that does not match it.
    """
    from jobs.memory import check_allocation

    from .schema import KIND_VERSIONS, file_kind, shape_conflicts

    path = Path(path)
    if not path.is_file():
        raise DamagedFileError(f"{path}: no such file")
    out = OutputCheck(path=path)
    try:
        with h5py.File(path, "r") as f:
            out.kind = file_kind(f)
            v = f.attrs.get("schema_version")
            if v is None and CONTENT_DIGEST_ATTR not in f.attrs:
                raise SchemaError(f"{path}: not an hpctwin {out.kind} file (no schema_version attribute)")
            v = "" if v is None else v.decode() if isinstance(v, bytes) else str(v)
            want_v = KIND_VERSIONS.get(out.kind, SCHEMA_VERSION)
            if v and v.split(".")[0] != want_v.split(".")[0]:
                raise SchemaError(f"{path}: schema_version {v} is not compatible with this hpctwin (reads {want_v} "
                                  f"for {out.kind} files)")
            conflicts = shape_conflicts(f, path)
            if conflicts:
                raise DamagedFileError(conflicts[0] + (f" (and {len(conflicts) - 1} more)" if len(conflicts) > 1
                                                       else ""))
            total = 0

            def size(_name: str, obj) -> None:
                nonlocal total
                if isinstance(obj, h5py.Dataset):
                    n = int(np.prod(obj.shape, dtype=np.float64)) if obj.shape else 1
                    item = VLEN_ELEMENT_BYTES if obj.dtype.kind == "O" else obj.dtype.itemsize
                    total += n * item

            f.visititems(size)
            out.data_bytes = total
            check_allocation(2 * total, f"{path}: its datasets hold {total:,} bytes",
                             lambda m: DamagedFileError(m + "; is it the right file?"))
            complete = f.attrs.get("complete", True)
            out.complete = bool(complete) if not isinstance(complete, (str, bytes)) else \
                (complete.decode() if isinstance(complete, bytes) else complete).strip().lower() not in (
                    "false", "0", "no")
            fail = f.attrs.get("failure", "")
            out.failure = fail.decode(errors="replace") if isinstance(fail, bytes) else str(fail)
            want = f.attrs.get(CONTENT_DIGEST_ATTR)
            got = content_digest(f) if want is not None else None
    except (DamagedFileError, SchemaError):
        raise
    except Exception as exc:  # noqa: BLE001 - h5py raises OSError, KeyError, TypeError, ValueError ... on damage
        raise DamagedFileError(f"{path}: {describe_unreadable(path, exc)}") from None
    if want is None:
        if not allow_unverified:
            raise DamagedFileError(f"{path}: has no content checksum ({CONTENT_DIGEST_ATTR}): it cannot be verified "
                                   f"(stripped, or written by an old hpctwin); give --no-verify to read it anyway")
        out.warnings.append(f"WARNING: {path} is read UNVERIFIED (--no-verify): it has no content checksum "
                            f"({CONTENT_DIGEST_ATTR}), so nothing shows whether it was changed after it was written")
    else:
        want = want.decode() if isinstance(want, bytes) else str(want)
        if got != want:
            raise DamagedFileError(f"{path}: damaged or changed: its content does not match the checksum recorded "
                                   f"when it was written ({CONTENT_DIGEST_ATTR})")
        out.verified = True
    if out.partial:
        out.warnings.insert(0, f"PARTIAL RUN: {path} is incomplete (complete = false): "
                               f"{out.failure or 'no reason recorded'}; its totals cover only the part that ran")
    return out


@contextlib.contextmanager
def reading(path: str | Path) -> Iterator[None]:
    """Context of a reader of an output file: a missing group, a wrong dimension or a value of the wrong type (a
    crafted file that still carries a fresh checksum) becomes one :class:`DamagedFileError` naming the file.

    Parameters
    ----------
    path : str | Path
        The file being read.

    Yields
    ------
    None
        The block reads the file.

    Raises
    ------
    DamagedFileError
        For a ``KeyError``, ``ValueError``, ``TypeError``, ``IndexError`` or ``OSError`` inside the block (one
        raised inside passes through unchanged).
    SchemaError
        Passes through unchanged.
    """
    try:
        yield
    except (SchemaError, DamagedFileError):
        raise
    except (KeyError, ValueError, TypeError, IndexError, OSError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DamagedFileError(f"{path}: not the layout of an hpctwin output file ({type(exc).__name__}: "
                               f"{first})") from None


def describe_unreadable(path: str | Path, exc: BaseException) -> str:
    """One phrase saying why ``path`` cannot be read: not HDF5 at all (signature check), or damaged (with the cause)."""
    try:
        is_h5 = h5py.is_hdf5(str(path))
    except Exception:  # noqa: BLE001
        is_h5 = False
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if not is_h5:
        return "not an HDF5 file"
    return f"damaged HDF5 file, cannot be read ({type(exc).__name__}: {first})"


class _TrappedFile:
    """The file object h5py writes through; a failing write (a full disk) is kept here and never reaches HDF5.

    Why (issue #26 item 3, the segfault of the first streamed writer): when a write of h5py's file-object driver
    raised, HDF5 failed the operation and then failed to close the file, leaving its dataset and file IDs open; the
    private temporary was closed and removed, and when the garbage collector later freed one of those IDs, HDF5
    flushed it through the driver into the closed file object (``ObjectID._dealloc -> H5FD_fileobj_write ->
    seek of closed file``, reproduced), at whatever moment the collector ran: in the full test suite inside a later
    test's h5py calls, where it crashed the interpreter. So the first ``OSError`` is recorded and every later call
    is a no-op that reports success: HDF5 always completes and closes the file cleanly, and :class:`atomic_h5`
    then removes the temporary and raises the recorded error as one line. After :meth:`detach` (the temporary is
    closed) every call is a no-op as well.

    Parameters
    ----------
    fh : io.BufferedRandom
        The private temporary of :func:`jobs.cachedirs.atomic_output`.
    """

    def __init__(self, fh: io.BufferedRandom) -> None:
        self._fh: io.BufferedRandom | None = fh
        self.error: OSError | None = None

    def detach(self) -> None:
        """Stop using the temporary (it is about to be closed): later calls do nothing."""
        self._fh = None

    def _live(self) -> bool:
        return self._fh is not None and self.error is None

    def _trap(self, fn, *args) -> bool:
        """Call ``fn(*args)``; on an ``OSError`` keep it and return False (HDF5 is told the call succeeded)."""
        try:
            fn(*args)
            return True
        except OSError as exc:
            self.error = exc
            return False

    def write(self, b) -> int:
        """Write ``b`` (see :meth:`io.BufferedRandom.write`); after a failure: nothing, reported as written."""
        n = memoryview(b).nbytes
        if self._live():
            self._trap(self._fh.write, b)
        return n

    def flush(self) -> None:
        """Flush (see :meth:`io.BufferedRandom.flush`); after a failure: nothing."""
        if self._live():
            self._trap(self._fh.flush)

    def truncate(self, size: int | None = None) -> int:
        """Truncate (see :meth:`io.BufferedRandom.truncate`); after a failure: nothing."""
        if self._live():
            self._trap(self._fh.truncate, size)
        return 0 if size is None else size

    def read(self, n: int = -1) -> bytes:
        """Read (see :meth:`io.BufferedRandom.read`); after a failure: zeros (the file is discarded)."""
        if self._live():
            try:
                return self._fh.read(n)
            except OSError as exc:
                self.error = exc
        return bytes(max(n, 0))

    def readinto(self, b) -> int:
        """Read into ``b`` (see :meth:`io.BufferedRandom.readinto`); after a failure: zeros."""
        if self._live():
            try:
                return self._fh.readinto(b)
            except OSError as exc:
                self.error = exc
        view = memoryview(b).cast("B")
        view[:] = bytes(len(view))
        return len(view)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        """Seek (see :meth:`io.BufferedRandom.seek`); after a failure: the offset asked for."""
        if self._live():
            try:
                return self._fh.seek(offset, whence)
            except OSError as exc:
                self.error = exc
        return offset

    def tell(self) -> int:
        """Position (see :meth:`io.BufferedRandom.tell`); after a failure: 0."""
        if self._live():
            try:
                return self._fh.tell()
            except OSError as exc:
                self.error = exc
        return 0


class atomic_h5:
    """Context manager: an ``h5py.File`` written straight to a private temporary, renamed onto ``path`` on success.

    The file is written as it is built (issue #26 item 3: no image of the whole file in memory; chunked, compressed
    datasets go to the disk chunk by chunk) through :func:`jobs.cachedirs.atomic_output`, the one writer of the
    project: h5py writes only through the descriptor of a private temporary of random name in the target's
    folder (``O_CREAT | O_EXCL | O_NOFOLLOW``), which is ``fsync``-ed and renamed into place only when complete,
    so a reader never sees a half-written file. Just before closing, the root attribute ``content_sha256`` is set
    to :func:`content_digest` of everything in the file (read back in blocks, never whole), so a reader can tell a
    whole file from a damaged one (:func:`verify_file`). On an exception inside the block, or a failing write (a
    full disk: the ``OSError`` is trapped where it leaves the Python file object, :class:`_TrappedFile`), the
    temporary is removed, the old file is kept and the disk's error is raised as one ``OSError`` line naming the
    file.

    Parameters
    ----------
    path : str | Path
        The file to publish.
    digest : bool
        Set ``content_sha256`` before closing (default); False for a private scratch file that is never an
        output (the streamed series of a run without an output file, :mod:`scheduler_sim.io.stream`).
    """

    def __init__(self, path: str | Path, digest: bool = True) -> None:
        self.path = Path(path)
        self.digest = bool(digest)

    @property
    def write_error(self) -> OSError | None:
        """The first failed write (a full disk), trapped by the file object; None while every write succeeded."""
        trap = getattr(self, "_trap", None)
        return None if trap is None else trap.error

    def __enter__(self) -> h5py.File:
        if self.path.is_dir():
            raise IsADirectoryError(f"{self.path}: is a folder; give an output file name")
        self._cm = atomic_output(self.path, "wb", what="HDF5 file")
        self._trap = _TrappedFile(self._cm.__enter__())
        try:
            self.f = h5py.File(self._trap, "w", track_order=True)
        except BaseException as exc:
            self._abandon(exc)
            raise
        track_sources(self.f)  # content_digest hashes the arrays written from memory (no read-back)
        return self.f

    def _abandon(self, exc: BaseException) -> None:
        """Close the HDF5 file (it cannot fail: :class:`_TrappedFile`), remove the temporary; raise the disk's
        error (one line) when a write failed, else return (the caller re-raises ``exc``).
        """
        with contextlib.suppress(Exception):
            untrack_sources(self.f)
        with contextlib.suppress(Exception):
            self.f.close()
        self._trap.detach()
        err = self._trap.error or exc
        self._cm.__exit__(type(err), err, err.__traceback__)  # removes the temporary; an OSError: one line
        if err is not exc:  # pragma: no cover - atomic_output raised its one-line error above
            raise err

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None and self._trap.error is None:
            try:
                sources = untrack_sources(self.f)
                if self.digest:
                    self.f.attrs[CONTENT_DIGEST_ATTR] = content_digest(self.f, sources)
                self.f.close()
            except BaseException as failure:  # noqa: BLE001 - re-raised by _abandon
                exc = failure
        if exc is None and self._trap.error is not None:  # a write failed (trapped): the disk's error
            exc = self._trap.error
        if exc is not None:
            self._abandon(exc)
            if exc_type is None:
                raise exc
            return
        self._trap.detach()
        self._cm.__exit__(None, None, None)  # flush, fsync, rename, fsync of the folder


def write_dataset(group: h5py.Group, name: str, data: np.ndarray, units: str | None = None,
                  long_name: str | None = None, *, kind: str = "run") -> h5py.Dataset:
    """Write one dataset of an output file through the schema table (:class:`scheduler_sim.io.schema.SchemaWriter`).

    Arrays of more than 1,024 elements are chunked (up to 65,536 rows a chunk) and gzip-compressed (level 4,
    shuffled), so files stay small and readable with plain h5py.

    Parameters
    ----------
    group : h5py.Group
        Group to create the dataset in.
    name : str
        Dataset name.
    data : np.ndarray
        Values (any shape; strings as an ``h5py.string_dtype`` array).
    units : str | None
        Unit string (SI, e.g. ``W``, ``J``, ``s``; ``1`` for dimensionless; ``""`` for text); None: the table's.
    long_name : str | None
        Description; None: the table's (when its entry writes one).
    kind : str
        File kind of the schema table (``run``, ``sweep-summary``, ...).

    Returns
    -------
    h5py.Dataset
        The dataset (a :class:`scheduler_sim.io.schema.SchemaError` when the schema table does not declare the
        path, or its dtype, dimensions or unit differ).
    """
    return SchemaWriter(group.file, kind).dataset(f"{group.name.rstrip('/')}/{name}", data, units=units,
                                                  long_name=long_name)


def write_run(path: str | Path, result: SimulationResult, config_json: str, *, run_name: str, system_name: str, policy: str,
              seed: int, input_checksums: dict[str, str], load_report: dict | None = None,
              time_origin_unix_s: float = float("nan"), job_units: dict[str, str] | None = None,
              serving: ServingOutput | None = None, attribution: object | None = None,
              extra_groups: Callable[[h5py.File], None] | None = None,
              content: str = "full") -> Path:
    """Write one run's results to ``path`` (atomically).

    Parameters
    ----------
    path : str | Path
        Output file; parent folders are created.
    result : SimulationResult
        What the run produced (:class:`scheduler_sim.kernel.results.SimulationResult`).
    config_json : str
        Canonical JSON of the run configuration.
    run_name : str
        Name of the run, stored as a root attribute.
    system_name : str
        Name of the simulated system, stored as a root attribute.
    policy : str
        Name of the scheduling policy, stored as a root attribute.
    seed : int
        Seed of the run.
    input_checksums : dict[str, str]
        SHA-256 of every input file (trace, weather, FMU), keyed by role.
    load_report : dict | None
        The trace loader's report (:meth:`dataloaders.report.LoadReport.to_dict`).
    time_origin_unix_s : float
        Unix time of simulation time 0 (NaN when the trace gives none).
    job_units : dict[str, str] | None
        Units of job columns that are not recognisable by suffix.
    serving : ServingOutput | None
        A co-located serving partition's results, written to ``/serving`` by :func:`write_serving_group`.
    attribution : object | None
        The run's job -> PUE attribution (:func:`scheduler_sim.analysis.attribution.attribution_of_run`), written to
        ``/attribution`` by :func:`write_attribution_group`; None writes no ``/attribution`` group.
    extra_groups : Callable[[h5py.File], None] | None
        Called with the open file; writes further groups into the open file before it is sealed (e.g. ``/grid``,
        :func:`scheduler_sim.io.grid_group.write_grid_group`); None writes none.
    content : str
        ``"full"`` (a run file) or ``"summary"``: an ensemble member's record (kind ``run-summary``,
        :data:`scheduler_sim.io.schema.RUN_SUMMARY`): the root attributes, ``/summary``, ``/totals`` and
        ``/provenance`` only (``serving``, ``attribution`` and ``extra_groups`` are not written).

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    ValueError
        If ``content`` is neither ``"full"`` nor ``"summary"``.
    """
    if content not in ("full", "summary"):
        raise ValueError(f"write_run: content must be 'full' or 'summary', got {content!r}")
    path = Path(path)
    summary_only = content == "summary"
    stream = getattr(result, "stream", None)
    streamed = (stream is not None and not summary_only and not stream.sealed
                and stream.path.resolve() == path.resolve())
    # streamed: the series are in the file already (scheduler_sim.io.stream); the rest is added and the file sealed
    with (stream.sealing() if streamed else atomic_h5(path)) as f:
        w = SchemaWriter(f, "run-summary" if summary_only else "run")
        if summary_only:
            w.attr("/", "kind", "run-summary")
        _write_root_attrs(w, result, config_json, run_name, system_name, policy, seed)
        if summary_only:
            _write_summary_groups(w, result, input_checksums, load_report)
            return path

        w.group("/jobs")
        for col in result.jobs.columns:
            s = result.jobs[col]
            if s.dtype == object or pd.api.types.is_string_dtype(s.dtype):
                w.dataset(f"/jobs/{col}", np.array(s.astype(str).tolist(), dtype=h5py.string_dtype("utf-8")),
                          units="")
            else:
                units = JOB_COLUMNS[col][1] if col in JOB_COLUMNS else (job_units or {}).get(col, unit_of(col))
                w.dataset(f"/jobs/{col}", s.to_numpy(), units=units)
        if result.job_cdu_it_W is not None:
            w.dataset("/jobs/it_power_cdu_W", result.job_cdu_it_W)
        if result.allocations:
            w.group("/allocations")
            w.attr("/allocations", "long_name", "Every run attempt of every job as runs of consecutive nodes")
            for name, arr in result.allocations.items():
                w.dataset(f"/allocations/{name}", arr)
        if not streamed:
            _write_series(w, result)
        w.attrs("/timeseries", {
            "interval_s": float(result.time_s[1] - result.time_s[0]) if len(result.time_s) > 1 else float("nan"),
            "time_origin_unix_s": float(time_origin_unix_s)})
        if "PUE" in result.facility and "T_wb_K" not in result.facility:
            w.attr("/timeseries/facility/PUE", "undefined",
                   "no cooling plant was modelled (cooling off): PUE is not defined (NaN)")
        if getattr(result, "partitions", None):  # a partitioned system (a one-partition file is unchanged)
            _write_partitions(w, result, series=not streamed)
        w.group("/metrics")
        for by in ("account", "size"):
            gm = group_metrics(result.jobs, by)
            w.group(f"/metrics/by_{by}")
            for col in gm.columns:
                if gm[col].dtype == object or pd.api.types.is_string_dtype(gm[col].dtype):
                    w.dataset(f"/metrics/by_{by}/{col}",
                              np.array(gm[col].astype(str).tolist(), dtype=h5py.string_dtype("utf-8")), units="")
                else:
                    w.dataset(f"/metrics/by_{by}/{col}", gm[col].to_numpy(),
                              units={"node_hours": "h"}.get(col, unit_of(col)))
        _write_summary_groups(w, result, input_checksums, load_report,
                              between=(lambda: write_attribution_group(f, attribution)) if attribution is not None
                              else None)
        if serving is not None:
            write_serving_group(f, serving)
        if extra_groups is not None:
            extra_groups(f)
    return path




def _write_root_attrs(w: SchemaWriter, result, config_json: str, run_name: str, system_name: str, policy: str,
                      seed: int) -> None:
    """The root attributes of a run file (and of a member's record)."""
    w.attrs("/", {
        "schema_version": SCHEMA_VERSION, "software_version": package_versions().get("hpctwin", "unknown"),
        "git_sha": git_sha(), "run_name": run_name, "system": system_name, "policy": policy, "seed": int(seed),
        "config_json": config_json, "pue_definition": PUE_DEFINITION, "pue_category": pue_category(result.info),
        "it_fans_rule": IT_FANS_RULE,
        "facility_stages_counted": ",".join(result.info.get("facility_stages_counted", [])),
        "facility_stages_absent": ",".join(result.info.get("facility_stages_absent", [])),
        "cooling_modelled": bool("T_wb_K" in result.facility), "complete": bool(result.info.get("complete", True)),
        "failure": str(result.info.get("failure", ""))})
    if result.info.get("cooling_model", "fmu") != "fmu":  # only when another plant model than the FMU ran
        w.attr("/", "cooling_model", str(result.info["cooling_model"]))
    if result.info.get("plant_out_of_bounds"):  # only when the plant left its physical bounds
        w.attr("/", "plant_out_of_bounds_json", json.dumps(result.info["plant_out_of_bounds"], sort_keys=True))


def _write_summary_groups(w: SchemaWriter, result, input_checksums: dict, load_report: dict | None,
                          between=None) -> None:
    """``/summary``, ``/totals`` and ``/provenance`` of a run file (or of a member's record); ``between`` writes
    what goes between the totals and the provenance (the attribution), in the order of earlier files.
    """
    w.group("/summary")
    w.attrs("/summary", {k: float(v) for k, v in result.summary.items()})
    w.group("/totals")
    w.attrs("/totals", {k: float(v) for k, v in result.totals.items()})
    if between is not None:
        between()
    w.group("/provenance")
    info = {k: v for k, v in result.info.items() if k not in VOLATILE_ATTRS}
    w.attrs("/provenance", {
        "input_checksums_json": json.dumps(input_checksums, sort_keys=True),
        "versions_json": json.dumps(package_versions(), sort_keys=True),
        "load_report_json": json.dumps(load_report or {}, sort_keys=True, default=str),
        "info_json": json.dumps(info, sort_keys=True, default=str),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "wall_time_s": float(result.info.get("wall_time_s", float("nan"))),
        "scheduling_time_s": float(result.info.get("scheduling_time_s", float("nan")))})
    if "twin_latency_s" in result.info:
        w.attr("/provenance", "twin_latency_s", np.asarray(result.info["twin_latency_s"], dtype=float))


def _write_series(w: SchemaWriter, result) -> None:
    """``/timeseries``: interval starts, facility, per-CDU and per-rack series of a result held in memory (a
    streamed result's are written during the run, :mod:`scheduler_sim.io.stream`).
    """
    w.group("/timeseries")
    w.dataset("/timeseries/time_s", result.time_s)
    for grp, series in (("facility", result.facility), ("cdu", result.cdu)):
        w.group(f"/timeseries/{grp}")
        for name, arr in series.items():
            w.dataset(f"/timeseries/{grp}/{name}", arr, units=result.units.get(name, unit_of(name)))
    w.group("/timeseries/rack")
    for name, arr in result.rack.items():
        w.dataset(f"/timeseries/rack/{name}", arr)


def _write_partitions(w: SchemaWriter, result, series: bool = True) -> None:
    """``/timeseries/partition`` (unless ``series`` is False: streamed already) and ``/partitions`` of a
    partitioned system's run (docs/output_schema.md).
    """
    if series:
        w.group("/timeseries/partition")
        for name, arr in result.partition.items():
            w.dataset(f"/timeseries/partition/{name}", arr, units=unit_of(name))
    w.group("/partitions")
    for name, arr in result.partitions.items():
        if arr.dtype == object:
            w.dataset(f"/partitions/{name}", np.array([str(x) for x in arr], dtype=h5py.string_dtype("utf-8")),
                      units="")
        else:
            w.dataset(f"/partitions/{name}", arr, units={"node_hours": "h"}.get(name, unit_of(name)))


def check_schema(f: h5py.File, path: str | Path = "") -> None:
    """Refuse a file that is not an hpctwin run file of a compatible schema (same major version).

    Parameters
    ----------
    f : h5py.File
        The open file.
    path : str | Path
        Its name, used in the error message only.

    Raises
    ------
    SchemaError
        With the file name, the version found and the version expected.
    """
    v = f.attrs.get("schema_version")
    if v is None:
        raise SchemaError(f"{path}: not an hpctwin run file (no schema_version attribute)")
    kind = f.attrs.get("kind", "run")
    if (kind.decode() if isinstance(kind, bytes) else str(kind)) == "run-summary":
        raise SchemaError(f"{path}: an ensemble member's record (kind run-summary: headline metrics only, no jobs or "
                          f"series); set [uncertainty] member_files = \"full\" in the study to keep whole run files")
    v = v.decode() if isinstance(v, bytes) else str(v)
    if v.split(".")[0] != SCHEMA_VERSION.split(".")[0]:
        raise SchemaError(f"{path}: schema_version {v} is not compatible with this hpctwin (reads {SCHEMA_VERSION})")


def read_jobs(path: str | Path, *, verify: bool = True, allow_unverified: bool = False) -> pd.DataFrame:
    """Read the /jobs table of a run file into a DataFrame (strings decoded).

    Parameters
    ----------
    path : str | Path
        The run file.
    verify : bool
        Check the file first (:func:`check_output`: shapes, memory, ``content_sha256``); False only for a caller
        that has just checked it.
    allow_unverified : bool
        Accept a file without ``content_sha256`` (``--no-verify``).

    Returns
    -------
    pandas.DataFrame
        One row per job, one column per 1-D dataset of ``/jobs``.

    Errors: :class:`DamagedFileError` as :func:`check_output`; :class:`SchemaError` for an incompatible file;
    a crafted layout is a :class:`DamagedFileError` too (:func:`reading`).
    """
    if verify:
        check_output(path, allow_unverified=allow_unverified)
    with reading(path), h5py.File(path, "r") as f:
        check_schema(f, path)
        data = {}
        for name, ds in f["jobs"].items():
            if ds.ndim != 1:
                continue  # per-job matrices (e.g. it_power_cdu_W) are read with h5py
            arr = ds[()]
            if ds.dtype.kind == "O":
                arr = np.array([x.decode() if isinstance(x, bytes) else x for x in arr], dtype=object)
            data[name] = arr
    return pd.DataFrame(data)


def read_series(path: str | Path, which: str = "facility", *, verify: bool = True,
                allow_unverified: bool = False) -> pd.DataFrame:
    """Read /timeseries/facility (or one CDU column per series for 'cdu') into a DataFrame indexed by time_s.

    Parameters
    ----------
    path : str | Path
        The run file.
    which : str
        ``facility``, ``cdu`` or ``rack``.
    verify : bool
        Check the file first (:func:`check_output`).
    allow_unverified : bool
        Accept a file without ``content_sha256`` (``--no-verify``).

    Returns
    -------
    pandas.DataFrame
        One column per series (``name[i]`` per CDU or rack), index ``time_s``.

    Errors: :class:`DamagedFileError` as :func:`check_output`; :class:`SchemaError` for an incompatible file;
    a crafted layout is a :class:`DamagedFileError` too (:func:`reading`).
    """
    if verify:
        check_output(path, allow_unverified=allow_unverified)
    with reading(path), h5py.File(path, "r") as f:
        check_schema(f, path)
        t = f["timeseries/time_s"][()]
        cols = {}
        for name, ds in f[f"timeseries/{which}"].items():
            arr = ds[()]
            if arr.ndim == 1:
                cols[name] = arr
            else:
                for i in range(arr.shape[1]):
                    cols[f"{name}[{i}]"] = arr[:, i]
    return pd.DataFrame(cols, index=pd.Index(t, name="time_s"))


def read_summary(path: str | Path, *, verify: bool = True, allow_unverified: bool = False) -> dict[str, float]:
    """Headline metrics (/summary attributes) of a run file.

    Parameters
    ----------
    path : str | Path
        The run file.
    verify : bool
        Check the file first (:func:`check_output`).
    allow_unverified : bool
        Accept a file without ``content_sha256`` (``--no-verify``).

    Returns
    -------
    dict of str -> float
        The /summary attributes.

    Errors: :class:`DamagedFileError` as :func:`check_output`; :class:`SchemaError` for an incompatible file;
    a crafted layout is a :class:`DamagedFileError` too (:func:`reading`).
    """
    if verify:
        check_output(path, allow_unverified=allow_unverified)
    with reading(path), h5py.File(path, "r") as f:
        check_schema(f, path)
        return {k: float(v) for k, v in f["summary"].attrs.items()}




def write_attribution_group(f: h5py.File, att: object) -> None:
    """Write the ``/attribution`` group (layout in docs/output_schema.md) into an open run file.

    Parameters
    ----------
    f : h5py.File
        The run file being written.
    att : object
        The run's attribution (:class:`scheduler_sim.analysis.attribution.Attribution`, made by
        :func:`scheduler_sim.analysis.attribution.attribution_of_run`).
    """
    w = SchemaWriter(f, "run")
    w.group("/attribution")
    w.attr("/attribution", "rules",
           "Shares of CDU pumps by the consumer's share of that CDU's heat per output interval; "
           "plant (facility pumps, tower pumps, tower fans, chiller) by share of the facility heat per interval; "
           "idle and partition pseudo-consumers take the remainder. See scheduler_sim.analysis.attribution.")
    w.attrs("/attribution", att.attrs)
    for sub, data in (("jobs", att.jobs), ("pseudo", att.pseudo), ("timeseries", att.timeseries),
                      ("cdu", att.cdu), ("rack", att.rack)):
        w.group(f"/attribution/{sub}")
        for name, arr in data.items():
            arr = np.asarray(arr)
            if arr.dtype.kind == "U":
                w.dataset(f"/attribution/{sub}/{name}", arr.astype(object), dtype=h5py.string_dtype("utf-8"))
                continue
            w.dataset(f"/attribution/{sub}/{name}", arr, units=attribution_unit(name))
    w.group("/attribution/totals")
    w.attrs("/attribution/totals", {k: float(v) for k, v in att.totals.items()})


def write_workload_group(f: h5py.File, training: list[dict], rl: list[dict], rl_power: list[dict] | None = None
                         ) -> None:
    """Write ``/workload`` (training-job and RL-pipeline reports, issue #24) into an open HDF5 file.

    Parameters
    ----------
    f : h5py.File
        The run file being written.
    training : list[dict]
        One report per training job (keys of :data:`scheduler_sim.io.schema.TRAINING_REPORT_COLUMNS`; missing
        float columns are written as NaN).
    rl : list[dict]
        One report per RL pipeline (keys of :data:`scheduler_sim.io.schema.RL_REPORT_COLUMNS`).
    rl_power : list[dict] | None
        Per pipeline (order of ``rl``): ``{"rollout": (t_s, P_W), "trainer": ..., "reward": ..., "step_end_s":
        ndarray}``, written to ``/workload/rl_power/<name>``.

    Raises
    ------
    SchemaError
        If a report lacks an int or str column.
    """
    w = SchemaWriter(f, "run")
    w.group("/workload")
    for sub, rows, cols in (("training", training, TRAINING_REPORT_COLUMNS), ("rl", rl, RL_REPORT_COLUMNS)):
        w.group(f"/workload/{sub}")
        for col, (dt, _unit, _desc) in cols.items():
            if dt == "float":
                data = np.array([float(r.get(col, np.nan)) for r in rows], dtype=np.float64)
            else:
                missing = [i for i, r in enumerate(rows) if col not in r]
                if missing:
                    raise SchemaError(f"/workload/{sub}/{col}: report {missing[0]} has no {col!r}")
                data = (np.array([int(r[col]) for r in rows], dtype=np.int64) if dt == "int" else
                        np.array([str(r[col]) for r in rows], dtype=h5py.string_dtype("utf-8")))
            w.dataset(f"/workload/{sub}/{col}", data)
    if rl_power:
        w.group("/workload/rl_power")
        for rep, pw in zip(rl, rl_power):
            g = f"/workload/rl_power/{rep['name']}"
            w.group(g)
            for pool in ("rollout", "trainer", "reward"):
                t, P = pw[pool]
                w.dataset(f"{g}/{pool}_t_s", np.asarray(t, dtype=np.float64))
                w.dataset(f"{g}/{pool}_P_W", np.asarray(P, dtype=np.float64))
            w.dataset(f"{g}/step_end_s", np.asarray(pw["step_end_s"], dtype=np.float64))


def write_serving_group(f: h5py.File, so: ServingOutput) -> None:
    """Write ``/serving`` (requests, power series, summary) into an open HDF5 file (docs/output_schema.md).

    Parameters
    ----------
    f : h5py.File
        The run file being written.
    so : ServingOutput
        The partition's output (:class:`scheduler_sim.serving.run.ServingOutput`), after
        :func:`scheduler_sim.serving.run.finish_serving`.
    """
    w = SchemaWriter(f, "run")
    w.group("/serving")
    w.attrs("/serving", {
        "deployment_json": so.result.deployment.model_dump_json(), "router": so.result.router,
        "limits_json": json.dumps(so.result.limits.__dict__, sort_keys=True), "ttft_slo_s": float(so.ttft_slo_s),
        "tpot_slo_s": float(so.tpot_slo_s), "trace": str(so.trace_path),
        "time_origin_unix_s": float(so.time_origin_unix_s),
        "load_report_json": json.dumps(so.load_report, sort_keys=True, default=str),
        "info_json": json.dumps({k: v for k, v in so.result.info.items() if k not in ("wall_time_s", "events_per_s")},
                                sort_keys=True, default=str)})
    w.group("/serving/requests")
    df = so.requests if so.requests is not None else so.result.requests
    for col in df.columns:
        if col == "prefix_block_ids":
            data = np.array([" ".join(str(b) for b in x) for x in df[col]], dtype=h5py.string_dtype("utf-8"))
        else:
            data = df[col].to_numpy()
        w.dataset(f"/serving/requests/{col}", data)
    w.group("/serving/power")
    w.dataset("/serving/power/time_s", so.power.t_s)
    w.dataset("/serving/power/P_gpu_W", so.power.P_gpu_W)
    w.dataset("/serving/power/P_node_W", so.power.P_node_W)
    w.dataset("/serving/power/nodes", so.nodes)
    if so.power.P_link_W is not None and so.result.deployment.disaggregation is not None:
        w.dataset("/serving/power/P_link_W", so.power.P_link_W)
    if so.power.P_fan_W is not None:
        w.dataset("/serving/power/P_fan_W", so.power.P_fan_W)
    w.attrs("/serving/power", {"server_cooling": so.result.deployment.server.cooling, "merge_s": so.power.merge_s,
                               "node_baseline_W": so.power.node_baseline_W})
    w.group("/serving/summary")
    w.attrs("/serving/summary", {k: float(v) for k, v in so.summary.items()})
