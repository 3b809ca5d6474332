"""Cache of parsed traces: parquet files keyed by the input's sha256, the loader name and version, and the options.

A cache entry is a folder ``<cache dir>/<key>/`` holding ``jobs.parquet``, ``report.json`` and, when the loader
returned one, ``profiles.parquet``. Entries are written to a temporary folder and renamed into place (atomic on
one file system), so a crash never leaves a half-written entry. No pickle: parquet and JSON only.

The cache folder is ``$HPCTWIN_CACHE_DIR`` when set, else ``~/.cache/hpctwin/traces``.
"""

from __future__ import annotations

import dataclasses
import hashlib
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
    """Return the cache folder (not created).

    Returns
    -------
    pathlib.Path
        ``$HPCTWIN_CACHE_DIR`` or ``~/.cache/hpctwin/traces``.
    """
    env = os.environ.get("HPCTWIN_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "hpctwin" / "traces"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def cache_key(path: str | os.PathLike[str], loader: str, options: dict[str, Any]) -> str:
    """Return the cache key of one load.

    Parameters
    ----------
    path : str or os.PathLike
        Input file (a folder input, e.g. Lassen, hashes every file in it, sorted by name).
    loader : str
        Loader name.
    options : dict
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
        Jobs (with their ``attrs``), report and profiles as stored.
    """
    d = cache_dir() / key
    try:
        jobs = pd.read_parquet(d / "jobs.parquet")
        meta = json.loads((d / "report.json").read_text())
        prof = pd.read_parquet(d / "profiles.parquet") if (d / "profiles.parquet").exists() else None
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
    """
    root = cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    final = root / key
    tmp = Path(tempfile.mkdtemp(prefix=f".{key[:12]}-", dir=root))
    try:
        jobs = result.jobs.copy()
        attrs = {k: v for k, v in jobs.attrs.items() if isinstance(v, (str, int, float, bool, type(None)))}
        jobs.attrs = {}
        jobs.to_parquet(tmp / "jobs.parquet", index=False)
        if result.profiles is not None:
            result.profiles.to_parquet(tmp / "profiles.parquet", index=False)
        (tmp / "report.json").write_text(json.dumps({"report": result.report.to_dict(), "attrs": attrs},
                                                    default=str))
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
