"""Batsim JSON workload loader: ``{"nb_res": N, "jobs": [...], "profiles": {...}}`` -> canonical job table.

Fields read -> canonical column
-------------------------------
=====================  =================================================================================================
``jobs[i].id``         ``job_id``: an integer, or a string ``"workload!123"`` / ``"123"`` whose number is used; text
                       without a number -> new id above the largest (repaired); original kept in ``trace_job_id``;
                       above 2**53 -> rejected (``job_id_out_of_range``)
``jobs[i].subtime``    ``submit_time_s`` [s] (Batsim times are seconds from the simulation start); missing -> rejected;
                       above 1e10 s -> rejected (``time_out_of_range``)
``jobs[i].walltime``   ``requested_walltime_s`` [s]; absent or -1 -> NaN (flagged); 0 or negative -> NaN (repaired)
``jobs[i].res``        ``nodes`` (Batsim resources are hosts); missing or < 1 -> rejected; > 2**31 (``1e300``) ->
                       rejected (``nodes_out_of_range``, never cast); > ``nb_res`` -> rejected
``jobs[i].profile``    name of a profile; ``profiles[name].type == "delay"`` gives ``runtime_s = delay`` [s]. Other
                       types (parallel, parallel_homogeneous, composed, ...) have no fixed duration: run time NaN
                       (flagged); an unknown profile name -> run time NaN (repaired)
=====================  =================================================================================================

``start_time_s`` / ``end_time_s`` are NaN (a workload has no recorded schedule); ``status`` is -1; utilisations
and ``measured_node_power_W`` are NaN. Extra columns: ``measured_node_power_W``, ``trace_job_id``, ``profile``,
``source_line`` (the record's position in ``jobs``, 1-based; JSON has no useful line numbers).

The whole document is parsed with the standard ``json`` module (a UTF-8 BOM is accepted); a syntax error (e.g. a
truncated file) makes the file unusable: :class:`TraceError` with the line and column of the error.

References
----------
Batsim documentation, "Workload" and "Profiles" (https://batsim.readthedocs.io/en/latest/input-workload.html).
Dutot, Mercier, Poquet, Richard, "Batsim: a Realistic Language-Independent Resources and Jobs Management Systems
Simulator", JSSPP 2016.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dataloaders._common import MAX_COUNT, MAX_EXACT_INT, MAX_TIME_S, MEASURED_POWER_COLUMN, Issues
from dataloaders._common import check_common_options, count_or_zero, finish_load, read_text, reject_duplicates
from dataloaders.fields import Check, apply_checks
from dataloaders.registry import BaseLoader
from dataloaders.report import LoadReport, LoadResult, TraceError
from jobs.table import JobStatus

__all__ = ["BatsimLoader", "read_batsim"]

_ID_NUM = re.compile(r"(?:^|!)(\d+)$")


def _num(x: Any) -> float:
    """Number or NaN (bool and non-numbers -> NaN)."""
    if isinstance(x, bool) or x is None:
        return float("nan")
    if isinstance(x, (int, float)):
        return float(x)
    if isinstance(x, str):
        try:
            return float(x)
        except ValueError:
            return float("nan")
    return float("nan")


def _member_text(key: str) -> Any:
    """A job member as text, per record (``"(absent)"`` when the job object lacks it)."""
    return lambda v: [str(j.get(key, "(absent)")) for j in v["g"]]


# ---- the workload's checks as data (engine: dataloaders.fields); values: the members read per job -------------
_ID_CHECKS = (
    Check("", lambda v: ~v["is_obj"], lambda v: [repr(j) for j in v["jobs"]], "a job object", "not_an_object"),
    Check("id", lambda v: np.array([x is None for x in v["raw_id"]], dtype=bool), "(absent)", "a job id",
          "job_id_missing"),
    Check("id", lambda v: v["huge_id"], lambda v: v["id_text"], f"an integer <= {MAX_EXACT_INT}",
          "job_id_out_of_range"),
)
_JOB_CHECKS = (
    Check("id", lambda v: v["no_num"], lambda v: v["id_text"], "an integer or 'workload!integer' (new id from "
          "{start_id})", "non_numeric_job_id", "repaired", hide_id=True),
    Check("subtime", lambda v: ~(np.isfinite(v["subtime"]) & (v["subtime"] >= 0)), _member_text("subtime"),
          "a time >= 0 s", "submit_time_missing"),
    Check("subtime", lambda v: v["subtime"] > MAX_TIME_S, lambda v: v["subtime"],
          f"a time below {MAX_TIME_S:.0e} s (317 years)", "time_out_of_range"),
    Check("res", lambda v: ~(np.isfinite(v["res"]) & (v["res"] >= 1)), _member_text("res"), "an integer >= 1",
          "nodes_missing"),
    Check("res", lambda v: v["res"] > MAX_COUNT, lambda v: v["res"], f"an integer <= {MAX_COUNT:.0f} hosts",
          "nodes_out_of_range"),
    Check("res", lambda v: v["res"] != np.floor(v["res"]), lambda v: v["res"], "an integer (rounded up)",
          "fractional_res", "repaired"),
)
_MACHINE_CHECKS = (
    Check("res", lambda v: v["nodes"] > v["max_nodes"], lambda v: v["nodes"], "<= {max_nodes} hosts",
          "larger_than_machine", when=lambda v: v["max_nodes"] is not None),
)
_WALLTIME_CHECKS = (
    Check("walltime", lambda v: v["walltime"] == -1, lambda v: v["walltime"], "a time > 0 s (NaN kept)",
          "walltime_missing", "flagged"),
    Check("walltime", lambda v: ~((v["walltime"] > 0) & (v["walltime"] <= MAX_TIME_S)) & (v["walltime"] != -1),
          lambda v: [str(j.get("walltime")) for j in v["g"]], f"a time in (0, {MAX_TIME_S:.0e}] s or -1 (set to NaN)",
          "walltime_not_positive", "repaired"),
)


def read_batsim(path: str | os.PathLike[str], *, cores_per_node: int = 1, max_nodes: int | None = None,
                strict: bool = False) -> LoadResult:
    """Read a Batsim JSON workload into the canonical job table (fields in the module docstring).

    Parameters
    ----------
    path : str | os.PathLike[str]
        Workload JSON, plain or gzip.
    cores_per_node : int
        Accepted for a uniform interface; unused (``res`` are hosts).
    max_nodes : int | None
        Machine size in nodes; default the file's ``nb_res``. Larger jobs are rejected.
    strict : bool
        Raise for the first repaired or rejected record.

    Returns
    -------
    LoadResult
        ``jobs`` shape (n_jobs, 17); ``attrs["time_origin_unix_s"]`` NaN (Batsim times are relative).

    Raises
    ------
    TraceError
        Invalid JSON (line, column), no ``jobs`` list, zero jobs, or a strict-mode violation.

    Notes
    -----
    Raised by the functions it calls, not by its own body:

    - ``FileNotFoundError``: If ``path`` does not exist.
    """
    check_common_options(cores_per_node, max_nodes)
    p = Path(path)
    src = str(p)
    try:
        doc = json.loads(read_text(p, max_line_bytes=None))  # JSON: no lines to bound (size still bounded)
    except json.JSONDecodeError as exc:
        raise TraceError(src, f"not valid JSON ({exc.msg}; truncated file?)", line=exc.lineno,
                         expected="a Batsim workload object", found=f"column {exc.colno}") from exc
    except RecursionError as exc:
        raise TraceError(src, "JSON nested too deeply", expected="a Batsim workload object") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("jobs"), list):
        raise TraceError(src, "no 'jobs' list at the top level", field="jobs",
                         expected='{"nb_res": N, "jobs": [...], "profiles": {...}}', found=type(doc).__name__)
    jobs = doc["jobs"]
    profiles = doc.get("profiles") if isinstance(doc.get("profiles"), dict) else {}
    nb_res = _num(doc.get("nb_res"))
    report = LoadReport(source=src, loader="batsim", header={k: v for k, v in doc.items() if k not in ("jobs",
                                                                                                        "profiles")})
    report.records_read = len(jobs)
    issues = Issues()
    limit = max_nodes if max_nodes is not None else (int(nb_res) if math.isfinite(nb_res) and nb_res >= 1 else None)
    if max_nodes is None and limit is not None:
        report.notes.append(f"max_nodes = nb_res = {limit} from the file")
    elif not math.isfinite(nb_res):
        report.notes.append("no valid nb_res: job sizes not checked against the machine")

    n = len(jobs)
    line = np.arange(1, n + 1, dtype=np.int64)
    is_obj = np.fromiter((isinstance(j, dict) for j in jobs), dtype=bool, count=n)
    g = [j if isinstance(j, dict) else {} for j in jobs]
    raw_id = [j.get("id") for j in g]
    sub = np.array([_num(j.get("subtime")) for j in g])
    wall = np.array([_num(j.get("walltime", -1)) for j in g])
    res = np.array([_num(j.get("res")) for j in g])
    prof = [j.get("profile") for j in g]

    jid = np.full(n, -1, dtype=np.int64)
    id_text = np.empty(n, dtype=object)
    no_num = np.zeros(n, dtype=bool)
    huge_id = np.zeros(n, dtype=bool)
    for k, x in enumerate(raw_id):
        id_text[k] = "" if x is None else str(x)
        v = None
        if isinstance(x, int) and not isinstance(x, bool) and x >= 0:
            v = x
        elif isinstance(x, str) and (m := _ID_NUM.search(x)):
            v = int(m.group(1)[:20])  # more digits than int64 holds is out of range anyway
        else:
            no_num[k] = True
        if v is not None:
            if v > MAX_EXACT_INT:
                huge_id[k] = True
            else:
                jid[k] = v
    v = {"jobs": jobs, "g": g, "is_obj": is_obj, "raw_id": raw_id, "id_text": id_text, "huge_id": huge_id,
         "no_num": no_num, "subtime": sub, "walltime": wall, "res": res, "max_nodes": limit}
    ok = apply_checks(v, _ID_CHECKS, np.ones(n, dtype=bool), line, None, issues)
    fix = ok & no_num
    v["start_id"] = int(jid.max()) + 1 if (jid >= 0).any() else 1
    jid[fix] = v["start_id"] + np.arange(int(fix.sum()))
    ok = apply_checks(v, _JOB_CHECKS, ok, line, jid, issues)
    v["nodes"] = nodes = count_or_zero(np.where(ok, res, np.nan))
    ok = apply_checks(v, _MACHINE_CHECKS, ok, line, jid, issues)
    # duplicates among the records still valid, first kept
    idx = np.flatnonzero(ok)
    keep_sub = reject_duplicates(jid[idx], line[idx], issues, keep="first")
    ok[idx[~keep_sub]] = False
    apply_checks(v, _WALLTIME_CHECKS, ok, line, jid, issues)
    wall = np.where((wall > 0) & (wall <= MAX_TIME_S), wall, np.nan)

    runtime = np.full(n, np.nan)
    prof_name = np.array(["" if x is None else str(x) for x in prof], dtype=object)
    types: dict[str, Any] = {}
    for k in np.flatnonzero(ok):
        name = prof_name[k]
        pr = profiles.get(name) if name else None
        if not isinstance(pr, dict):
            issues.add(line[k], jid[k], "profile", name or "(absent)", "the name of a profile in 'profiles' "
                       "(run time NaN)", "repaired", "unknown_profile")
            continue
        typ = pr.get("type")
        types[str(typ)] = types.get(str(typ), 0) + 1
        if typ == "delay":
            d = _num(pr.get("delay"))
            if math.isfinite(d) and 0 <= d <= MAX_TIME_S:
                runtime[k] = d
            else:
                issues.add(line[k], jid[k], "profile", f"{name}: delay={pr.get('delay')!r}",
                           f"delay in [0, {MAX_TIME_S:.0e}] s (run time NaN)", "repaired", "bad_delay")
        else:
            issues.add(line[k], jid[k], "profile", f"{name}: type {typ!r}", "a 'delay' profile to know the run "
                       "time (NaN kept)", "flagged", "profile_without_duration")
    if types:
        report.notes.append("profile types used: " + ", ".join(f"{t} {c}" for t, c in sorted(types.items())))
    s_ok = sub[ok]
    if len(s_ok) > 1 and (np.diff(s_ok) < 0).any():
        report.notes.append(f"{int((s_ok[1:] < np.maximum.accumulate(s_ok)[:-1]).sum())} job(s) out of subtime "
                            "order; sorted by submit, job id")
    report.notes.append("no absolute time origin (Batsim subtimes are relative seconds)")
    out = pd.DataFrame({
        "job_id": jid, "submit_time_s": sub, "requested_walltime_s": wall, "nodes": nodes, "runtime_s": runtime,
        "start_time_s": np.full(n, np.nan), "end_time_s": np.full(n, np.nan),
        "user": "", "account": "", "queue": "", "status": np.full(n, JobStatus.UNKNOWN, dtype=np.int8),
        "cpu_util": np.full(n, np.nan), "gpu_util": np.full(n, np.nan), MEASURED_POWER_COLUMN: np.full(n, np.nan),
        "trace_job_id": id_text, "profile": prof_name, "source_line": line,
    })[ok]
    return finish_load(out, report, issues, strict=strict, origin=float("nan"))


class BatsimLoader(BaseLoader):
    """Loader for Batsim JSON workloads (``.json``); see :func:`read_batsim`.

    Attributes
    ----------
    name : str
        ``"batsim"``.
    description : str
        One-line description.
    suffixes : tuple of str
        ``(".json",)``.
    """

    name = "batsim"
    description = "Batsim JSON workload (jobs with subtime/walltime/res/profile; delay profiles give run times)"
    suffixes = (".json",)

    def load(self, path: str | os.PathLike[str], **options: Any) -> LoadResult:
        """Read a Batsim workload; options as for :func:`read_batsim`.

        Parameters
        ----------
        path : str | os.PathLike[str]
            Workload file.
        **options : Any
            ``cores_per_node``, ``max_nodes``, ``strict``.

        Returns
        -------
        LoadResult
            Job table and load report.

        Notes
        -----
        Raised by the functions it calls, not by its own body:

        - ``TraceError``: See :func:`read_batsim`.
        """
        return read_batsim(path, **options)
