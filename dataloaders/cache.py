"""Cache of parsed traces: parquet files keyed by the input's sha256, the loader name and version, and the options.

A cache entry is a folder ``<cache dir>/<key>/`` holding ``jobs.parquet``, ``report.json``, when the loader
returned one, ``profiles.parquet``, and ``manifest.json``: the SHA-256 of each of those files, written last.
Entries are written to a temporary folder and renamed into place (atomic on one file system), so a crash never
leaves a half-written entry. Before use every file is hashed again and compared with the manifest; an entry that
fails (damaged, truncated, a file missing or added) is removed and the trace is parsed again. No pickle: parquet
and JSON only.

The cache folder is :func:`jobs.cachedirs.trace_cache_dir`: ``$HPCTWIN_TRACE_CACHE_DIR``, else
``<root>/traces`` with ``<root>`` = ``$HPCTWIN_CACHE_DIR`` or the platform's user cache folder
(``~/.cache/hpctwin`` on Linux): never the FMU cache's folder. It is created ``0700``; a folder that belongs to
another user or that others can write is refused (:class:`jobs.cachedirs.CacheTrustError`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

from dataloaders.report import Issue, LoadReport, LoadResult
from jobs.table import validate_job_table

__all__ = ["LOADER_VERSIONS", "cache_dir", "cache_key", "load_cached", "store_cached"]

#: Bump a loader's version when its output for the same input changes; old entries are then ignored.
LOADER_VERSIONS: dict[str, str] = {
    "swf": "2", "sacct": "2", "batsim": "2", "alibaba_pods": "2", "pm100": "2", "fugaku": "2", "adastra": "2",
    "lassen": "2",
}


def cache_dir() -> Path:
    """Return the trace cache folder (not created).

    Returns
    -------
    pathlib.Path
        ``$HPCTWIN_TRACE_CACHE_DIR``, else ``<root>/traces`` (:func:`jobs.cachedirs.trace_cache_dir`).
    """
    from jobs.cachedirs import trace_cache_dir

    return trace_cache_dir()


_MANIFEST = "manifest.json"


def _read_verified(d: Path) -> dict[str, bytes] | None:
    """The bytes of every file of entry ``d``, read once each and checked against its manifest; None if any fails.

    Each file is read through a descriptor that does not follow links and is checked for owner and mode
    (:func:`jobs.cachedirs.read_entry`); the bytes hashed are the bytes returned, which the caller parses: nothing
    is reopened by name between the check and the use. None when a file is missing, extra, altered or unreadable.
    """
    from jobs.cachedirs import CacheTrustError, read_entry

    try:
        manifest = json.loads(read_entry(d / _MANIFEST, "trace cache manifest").decode("utf-8"))
        files = {q.name for q in d.iterdir()} - {_MANIFEST}
        if not isinstance(manifest, dict) or set(manifest) != files:
            return None
        blobs = {name: read_entry(d / name, "trace cache entry") for name in sorted(manifest)}
    except (OSError, ValueError, CacheTrustError):
        return None
    if any(hashlib.sha256(blobs[name]).hexdigest() != digest for name, digest in manifest.items()):
        return None
    return blobs


def _verify_entry(d: Path) -> bool:
    """True when every file of entry ``d`` has the SHA-256 its manifest records and no file is missing or extra."""
    return _read_verified(d) is not None


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _parquet_bytes(df: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    df.to_parquet(buf, index=False)
    return buf.getvalue()


def cache_key(path: str | os.PathLike[str], loader: str, options: dict[str, Any]) -> str:
    """Return the cache key of one load.

    Parameters
    ----------
    path : str | os.PathLike[str]
        Input file (a folder input, e.g. Lassen, hashes every file in it, sorted by name).
    loader : str
        Loader name.
    options : dict[str, Any]
        Loader options (JSON-serialisable; ``repr`` is used for others).

    Returns
    -------
    str
        64 hex digits: sha256 of (input sha256, loader, loader version, options).
    """
    p = Path(path)
    if p.is_dir():
        digest = hashlib.sha256("".join(f"{q.name}:{_sha256(q)}" for q in sorted(p.iterdir()) if q.is_file())
                                .encode()).hexdigest()
    else:
        digest = _sha256(p)
    blob = json.dumps({"input": digest, "loader": loader, "version": LOADER_VERSIONS.get(loader, "0"),
                       "options": {k: options[k] for k in sorted(options)}}, sort_keys=True, default=repr)
    return hashlib.sha256(blob.encode()).hexdigest()


def _report_from_dict(d: dict[str, Any]) -> LoadReport:
    fields = {f.name for f in dataclasses.fields(LoadReport)}
    kw = {k: v for k, v in d.items() if k in fields and k != "issues"}
    rep = LoadReport(**kw)
    rep.issues = [Issue(**i) for i in d.get("issues", [])]
    return rep


def load_cached(key: str) -> LoadResult | None:
    """Return the cached result for ``key``, or None when absent or unreadable.

    Parameters
    ----------
    key : str
        From :func:`cache_key`.

    Returns
    -------
    LoadResult or None
        Jobs (with their ``attrs``), report and profiles as stored; None when absent, or when the entry fails its
        content check (the entry is then removed).

    Notes
    -----
    Raised by the functions it calls, not by its own body:

    - ``jobs.cachedirs.CacheTrustError``: If the cache folder belongs to another user or others can write it.
    """
    from jobs.cachedirs import CacheTrustError, check_cache_path, private_dir

    root = cache_dir()
    if not root.is_dir():
        return None
    d = private_dir(root, "trace cache folder") / key
    if not d.is_dir():
        return None
    try:
        check_cache_path(d, root, "trace cache entry")  # the entry folder too: this user's, not writable by others
    except CacheTrustError:
        return None
    blobs = _read_verified(d)
    if blobs is None:  # damaged or incomplete: removed, so the caller parses and stores it again
        shutil.rmtree(d, ignore_errors=True)
        return None
    try:  # the verified bytes are parsed, not the files again
        jobs = pd.read_parquet(io.BytesIO(blobs["jobs.parquet"]))
        meta = json.loads(blobs["report.json"].decode("utf-8"))
        prof = pd.read_parquet(io.BytesIO(blobs["profiles.parquet"])) if "profiles.parquet" in blobs else None
    except (OSError, ValueError, KeyError):
        return None
    jobs.attrs = meta.get("attrs", {})
    jobs = validate_job_table(jobs)  # canonical dtypes (parquet gives text back as the string dtype)
    jobs.attrs["time_origin_unix_s"] = float(jobs.attrs.get("time_origin_unix_s", float("nan")))
    rep = _report_from_dict(meta["report"])
    rep.notes = list(rep.notes) + [f"loaded from cache {d}"]
    return LoadResult(jobs, rep, prof)


def store_cached(key: str, result: LoadResult) -> Path:
    """Write ``result`` atomically under ``key``.

    Parameters
    ----------
    key : str
        From :func:`cache_key`.
    result : LoadResult
        The load to store.

    Returns
    -------
    pathlib.Path
        The entry folder.

    Raises
    ------
    OSError
        If the cache folder cannot be written.
    BaseException
        Whatever interrupts the write (the partial entry is removed, then the error re-raised).

    Notes
    -----
    Raised by the functions it calls, not by its own body:

    - ``jobs.cachedirs.CacheTrustError``: If the cache folder belongs to another user or others can write it.
    """
    from jobs.cachedirs import private_dir, write_entry

    root = private_dir(cache_dir(), "trace cache folder")
    final = root / key
    tmp = Path(tempfile.mkdtemp(prefix=f".{key[:12]}-", dir=root))
    try:
        jobs = result.jobs.copy()
        attrs = {k: v for k, v in jobs.attrs.items() if isinstance(v, (str, int, float, bool, type(None)))}
        jobs.attrs = {}
        blobs = {"jobs.parquet": _parquet_bytes(jobs)}
        if result.profiles is not None:
            blobs["profiles.parquet"] = _parquet_bytes(result.profiles)
        blobs["report.json"] = json.dumps({"report": result.report.to_dict(), "attrs": attrs},
                                          default=str).encode("utf-8")
        for name, blob in blobs.items():  # the one writer, in this private folder (mkdtemp, 0700)
            write_entry(tmp / name, blob)
        manifest = {name: hashlib.sha256(blobs[name]).hexdigest() for name in sorted(blobs)}
        write_entry(tmp / _MANIFEST, json.dumps(manifest, sort_keys=True).encode("utf-8"))
        if final.exists() and not _verify_entry(final):
            shutil.rmtree(final, ignore_errors=True)  # a damaged entry under the same key: replaced
        try:
            os.replace(tmp, final)
        except OSError:
            if final.exists():  # another process stored the same key first
                shutil.rmtree(tmp, ignore_errors=True)
            else:
                raise
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final
