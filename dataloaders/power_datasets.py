"""Public job datasets with power telemetry: PM100 (Marconi100), Fugaku F-DATA, Adastra MI250, LLNL Lassen (LAST).

None of these datasets is available on the development machines; each loader was written against the layout as
documented by the dataset (and as read by the ExaDigiT/RAPS loaders) and tested on small fixtures built in that
layout (``tests/unit/test_dataloaders_power.py``). How sure we are of each layout is stated per loader.

Common output: the canonical job table plus ``measured_node_power_W`` (float64, mean DC power per node of the job
over its run [W], NaN when unknown), ``trace_job_id`` (the dataset's id as text) and ``source_line`` (1-based row
number in the file). Times are made relative to the first submit; ``attrs["time_origin_unix_s"]`` holds it.
Timestamps without a zone are read in the ``timezone`` option (each loader has the site's zone as default).
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dataloaders._common import MAX_COUNT, MAX_EXACT_INT, MAX_TIME_S, MEASURED_POWER_COLUMN, Issues
from dataloaders._common import check_common_options, trace_bytes
from dataloaders._common import _dst_fold0, count_or_zero, finish_load, reject_duplicates
from dataloaders.fields import Check, apply_checks
from dataloaders.registry import BaseLoader
from dataloaders.report import LoadReport, LoadResult, TraceError
from jobs.memory import check_allocation

__all__ = ["AdastraLoader", "FugakuLoader", "LassenLoader", "PM100Loader", "read_adastra", "read_fugaku",
           "read_lassen", "read_pm100"]

#: PM100 power sample period [s] (Antici et al. 2023: power aggregated every 20 s).
PM100_SAMPLE_S = 20.0

_SLURM_STATE = {"COMPLETED": 1, "CANCELLED": 5, "FAILED": 0, "TIMEOUT": 0, "NODE_FAIL": 0, "OUT_OF_MEMORY": 0,
                "PREEMPTED": 0, "BOOT_FAIL": 0, "DEADLINE": 0, "RUNNING": -1, "PENDING": -1}


def _check_parquet_size(path: Path, src: str) -> None:
    """Refuse a Parquet table whose rows x columns (from its footer, before reading) exceed the memory budget.

    Parameters
    ----------
    path : Path
        The Parquet file.
    src : str
        Its name for messages.

    Raises
    ------
    TraceError
        If the table would need more memory than :func:`jobs.memory.check_allocation` allows (16 bytes a cell:
        the value and pandas' copy), or the footer cannot be read.
    """
    import pyarrow.parquet as pq

    try:
        md = pq.ParquetFile(path).metadata
    except Exception as exc:  # noqa: BLE001 - pyarrow raises many types for a damaged footer
        raise TraceError(src, f"cannot read the Parquet footer: {type(exc).__name__}: {exc}") from None
    check_allocation(16.0 * md.num_rows * max(1, md.num_columns),
                     f"{md.num_rows} rows x {md.num_columns} columns (Parquet footer)", lambda m: TraceError(src, m))


def _read_table(path: Path, src: str, required: tuple[str, ...]) -> pd.DataFrame:
    try:
        if path.suffix.lower() == ".parquet":
            _check_parquet_size(path, src)
            df = pd.read_parquet(path)
        else:
            data = trace_bytes(path)  # the one input opener: bounded decompression, encodings, line lengths
            try:
                df = pd.read_csv(io.BytesIO(data), low_memory=False, encoding="utf-8")
            except UnicodeDecodeError:  # one stray byte must not sink the table: Latin-1 reads every byte
                df = pd.read_csv(io.BytesIO(data), low_memory=False, encoding="latin-1")
    except (FileNotFoundError, TraceError):
        raise
    except Exception as exc:  # noqa: BLE001 - pyarrow / parser errors have many types
        raise TraceError(src, f"cannot read the table: {type(exc).__name__}: {exc}") from exc
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise TraceError(src, f"missing column(s) {missing}", field=missing[0], expected=", ".join(required),
                         found=", ".join(map(str, df.columns))[:80])
    return df.reset_index(drop=True)


def _epoch(col: pd.Series, tz: str, issues: Issues | None = None, field: str = "",
           ids: np.ndarray | None = None) -> np.ndarray:
    """Timestamps (datetime64, tz-aware or naive, text, or numbers = Unix s) -> Unix s, NaN where missing.

    Naive times are local times in ``tz``; at a DST change a repeated time takes its first occurrence and a skipped
    one moves forward by the gap (``fold=0``, :func:`dataloaders._common._dst_fold0`), each reported to ``issues``
    as repaired (``dst_ambiguous_time`` / ``dst_nonexistent_time``, record numbers from 1) when given.
    """
    if pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col):
        v = col.to_numpy(dtype=float)
        return np.where((v > 0) & (v <= MAX_TIME_S), v, np.nan)
    dt = col if isinstance(col.dtype, pd.DatetimeTZDtype) or pd.api.types.is_datetime64_dtype(col) else \
        pd.to_datetime(col, errors="coerce", format="mixed")
    if isinstance(dt.dtype, pd.DatetimeTZDtype):
        dt = dt.dt.tz_convert("UTC")
    else:
        naive = pd.DatetimeIndex(dt)
        loc = naive.tz_localize(tz, ambiguous="NaT", nonexistent="NaT")
        odd = np.asarray(loc.isna() & ~naive.isna())
        if odd.any():
            loc, gap = _dst_fold0(naive, loc, odd, tz)
            if issues is not None:
                rec = np.arange(1, len(col) + 1, dtype=np.int64)
                issues.add_mask(odd & ~gap, rec, ids, field, col.astype(str).to_numpy(),
                                f"an unambiguous local time in {tz} (DST change: the hour happens twice; its first "
                                "occurrence, fold=0, was used)", "repaired", "dst_ambiguous_time")
                issues.add_mask(gap, rec, ids, field, col.astype(str).to_numpy(),
                                f"a local time that exists in {tz} (DST change: the hour is skipped; moved forward "
                                "by the gap, fold=0)", "repaired", "dst_nonexistent_time")
        dt = pd.Series(loc, index=col.index).dt.tz_convert("UTC")
    # microseconds: a corrupt year (3024) does not fit int64 nanoseconds; such times are missing, never a crash
    us = dt.dt.as_unit("us").astype("int64").to_numpy().astype(float)
    us[dt.isna().to_numpy()] = np.nan
    out = us / 1e6
    out[(out < 1e8) | (out > MAX_TIME_S)] = np.nan  # 1970 placeholders mean "missing"
    return out


def _status_from_text(col: pd.Series, mapping: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    word = col.astype(str).str.strip().str.split(" ", n=1).str[0].str.upper()
    st = word.map(mapping)
    return st.fillna(-1).to_numpy(dtype=np.int8), st.isna().to_numpy()


# ---- the checks every power dataset shares, as data (engine: dataloaders.fields) --------------------------------
_JOB_CHECKS = (
    Check("submit_time", lambda v: ~np.isfinite(v["submit"]), "(missing)", "a timestamp", "submit_time_missing"),
    Check("nodes", lambda v: np.asarray(v["found"], dtype=float) > MAX_COUNT, lambda v: v["found"],
          f"an integer <= {MAX_COUNT:.0f}", "nodes_out_of_range"),
    Check("nodes", lambda v: ~(v["nodes"] >= 1), lambda v: v["found"], "an integer >= 1", "nodes_missing"),
    Check("nodes", lambda v: v["nodes_found"] != np.floor(v["nodes_found"]), lambda v: v["nodes_found"],
          "an integer (rounded up)", "fractional_nodes", "repaired", when=lambda v: v["nodes_found"] is not None),
    Check("nodes", lambda v: v["nodes"] > v["max_nodes"], lambda v: v["nodes"], "<= {max_nodes} (max_nodes)",
          "larger_than_machine", when=lambda v: v["max_nodes"] is not None),
)
_VALUE_CHECKS = (
    Check("end_time", lambda v: v["rt_neg"], lambda v: v["end"] - v["start"], "end >= start (run time NaN)",
          "end_before_start", "repaired"),
    Check("run_time", lambda v: ~np.isfinite(v["rt"]) & ~v["rt_neg"], "(missing)", "a run time (NaN kept)",
          "runtime_missing", "flagged"),
    Check("time_limit", lambda v: np.isfinite(v["limit"]) & (v["limit"] <= 0), lambda v: v["limit"],
          "> 0 (set to NaN)", "time_limit_not_positive", "repaired"),
    Check("state", lambda v: v["bad_status"], "(unknown)", "a known job state (set to -1)", "unknown_state",
          "repaired"),
    Check(MEASURED_POWER_COLUMN, lambda v: np.isfinite(v["power"]) & (v["power"] < 0), lambda v: v["power"],
          "power >= 0 W (set to NaN)", "negative_power", "repaired"),
)


def _finish_common(src: str, loader: str, df: pd.DataFrame, *, jid: np.ndarray, id_text: np.ndarray,
                   submit: np.ndarray, start: np.ndarray, end: np.ndarray, runtime: np.ndarray, limit: np.ndarray,
                   nodes: np.ndarray, status: np.ndarray, bad_status: np.ndarray, user: Any, account: Any, queue: Any,
                   power: np.ndarray, max_nodes: int | None, strict: bool, issues: Issues, report: LoadReport,
                   profiles: pd.DataFrame | None = None, extra: dict[str, Any] | None = None,
                   nodes_found: np.ndarray | None = None) -> LoadResult:
    """Shared checks: submit missing, nodes, duplicates, run time vs. times, limits, then :func:`finish_load`.

    ``nodes`` are the counts from :func:`dataloaders._common.count_or_zero` (0 where unusable) and ``nodes_found``
    the numbers the file holds (float, NaN when missing): they name the value in rejections (``1e300`` is
    rejected as out of range, never cast) and fractional counts are reported as rounded up.
    """
    n = len(df)
    line = np.arange(1, n + 1, dtype=np.int64)
    report.records_read = n
    found = nodes if nodes_found is None else nodes_found
    v = {"submit": submit, "nodes": nodes, "nodes_found": nodes_found, "found": found, "max_nodes": max_nodes,
         "limit": limit, "bad_status": bad_status, "power": power}
    ok = apply_checks(v, _JOB_CHECKS, np.ones(n, dtype=bool), line, jid, issues)
    idx = np.flatnonzero(ok)
    keep = reject_duplicates(jid[idx], line[idx], issues, keep="first")
    ok[idx[~keep]] = False
    rt = np.where(np.isfinite(runtime) & (runtime >= 0), runtime, end - start)
    v.update(rt=rt, rt_neg=rt < 0, start=start, end=end)
    apply_checks(v, _VALUE_CHECKS, ok, line, jid, issues)
    rt[rt < 0] = np.nan
    limit = np.where(limit > 0, limit, np.nan)
    power = np.where(power >= 0, power, np.nan)
    if ok.any():
        origin = float(np.nanmin(submit[ok]))
    else:
        origin = float("nan")
    n_pow = int((ok & np.isfinite(power)).sum())
    report.notes.append(f"measured_node_power_W known for {n_pow} of {int(ok.sum())} job(s)")
    report.notes.append(f"origin = first submit {origin:.0f} (Unix s)")
    out = pd.DataFrame({
        "job_id": jid, "submit_time_s": submit - origin, "requested_walltime_s": limit, "nodes": nodes,
        "runtime_s": rt, "start_time_s": start - origin, "end_time_s": end - origin,
        "user": user, "account": account, "queue": queue, "status": status,
        "cpu_util": np.full(n, np.nan), "gpu_util": np.full(n, np.nan), MEASURED_POWER_COLUMN: power,
        "trace_job_id": id_text, **(extra or {}), "source_line": line,
    })[ok]
    return finish_load(out, report, issues, strict=strict, origin=origin, profiles=profiles)


def _text(df: pd.DataFrame, c: str) -> np.ndarray:
    if c not in df:
        return np.full(len(df), "", dtype=object)
    return df[c].astype(object).where(df[c].notna(), "").astype(str).to_numpy(dtype=object)


def _ids(df: pd.DataFrame, c: str, issues: Issues, report: LoadReport) -> tuple[np.ndarray, np.ndarray]:
    """Integer ids where the column is integral, else ids assigned in first-appearance order (text kept)."""
    text = _text(df, c)
    num = pd.to_numeric(df[c], errors="coerce").to_numpy(dtype=float)
    if np.isfinite(num).all() and (num == np.floor(num)).all() and (np.abs(num) <= MAX_EXACT_INT).all():
        return num.astype(np.int64), text
    codes, _ = pd.factorize(pd.Series(text))
    report.notes.append(f"{c} is not integral (anonymised text): job_id = 1-based order of first appearance; "
                        "text kept in trace_job_id")
    return codes.astype(np.int64) + 1, text


def _float_or_nan(x: str) -> float:
    try:
        return float(x)
    except ValueError:
        return float("nan")


def _as_array(a) -> np.ndarray:
    """A per-job power array as float64: from a list / array, or from its text in a CSV export (``"[1. 2.]"``);
    empty when it holds no numbers.
    """
    if isinstance(a, (str, bytes)):
        a = a.decode("latin-1") if isinstance(a, bytes) else a
        a = [_float_or_nan(x) for x in a.strip().strip("[]").replace(",", " ").split()]
    try:
        return np.asarray(a, dtype=float).ravel()
    except (TypeError, ValueError):
        return np.zeros(0)


def _array_len_sum(col: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    n = np.zeros(len(col), dtype=np.int64)
    s = np.full(len(col), np.nan)
    for k, a in enumerate(col.to_numpy(dtype=object)):
        if a is None or (isinstance(a, float) and np.isnan(a)):
            continue
        arr = _as_array(a)
        arr = arr[np.isfinite(arr)]
        n[k] = len(arr)
        if len(arr):
            s[k] = float(arr.sum())
    return n, s


# ---------------------------------------------------------------------------------------------------------------------
def read_pm100(path: str | os.PathLike[str], *, timezone: str = "Europe/Rome", cores_per_node: int = 1,
               max_nodes: int | None = None, strict: bool = False, profiles: bool = True) -> LoadResult:
    """Read the PM100 job table (Marconi100, CINECA; ``job_table.parquet``) with its per-job power series.

    Layout (sure of the names and types: ``documentation/job_features.md`` of the PM100-data repository; medium
    sure of the power semantics, taken from the RAPS marconi100 loader, which divides by ``num_nodes_alloc``):
    ``job_id`` int; ``submit_time``, ``start_time``, ``end_time`` timestamps; ``time_limit`` int [min];
    ``run_time`` int [s]; ``num_nodes_alloc`` int; ``user_id``, ``group_id`` int; ``partition``, ``qos``,
    ``job_state`` text; ``node_power_consumption`` array[float]: the job's total node input power [W] (sum over its
    nodes), one value per 20 s sample from the start.

    Parameters
    ----------
    path : str | os.PathLike[str]
        ``job_table.parquet`` (or a CSV with the same columns, arrays then unavailable).
    timezone : str
        Zone of naive timestamps, default ``"Europe/Rome"`` (CINECA, Bologna).
    cores_per_node : int
        Unused (the table gives nodes).
    max_nodes : int | None
        Larger jobs are rejected.
    strict : bool
        Raise for the first repaired or rejected record.
    profiles : bool
        Build the ``profiles`` side table (default True).

    Returns
    -------
    LoadResult
        ``measured_node_power_W`` = mean of the series / ``num_nodes_alloc`` [W]; ``profiles`` rows
        (job_id, t_offset_s = 20 k s, node_power_W = sample / num_nodes_alloc).

    Notes
    -----
    Raised by the functions it calls, not by its own body:

    - ``TraceError``: Unreadable file, missing columns, zero jobs, strict-mode violation.

    References
    ----------
    F. Antici, M. Seyedkazemi Ardebili, A. Bartolini, A. Borghesi, "PM100: A Job Power Consumption Dataset of a
    Large-scale Production HPC System", SC-W 2023, doi:10.1145/3624062.3624263; data: Zenodo record 10127767.
    """
    check_common_options(cores_per_node, max_nodes)
    p = Path(path)
    src = str(p)
    df = _read_table(p, src, ("job_id", "submit_time", "start_time", "end_time", "num_nodes_alloc"))
    issues, report = Issues(), LoadReport(source=src, loader="pm100")
    jid, id_text = _ids(df, "job_id", issues, report)
    nodes_f = pd.to_numeric(df["num_nodes_alloc"], errors="coerce").to_numpy(dtype=float)
    nodes = count_or_zero(nodes_f)
    limit_min = pd.to_numeric(df.get("time_limit", pd.Series(np.nan, index=df.index)), errors="coerce")
    status, bad_st = _status_from_text(df.get("job_state", pd.Series("", index=df.index)), _SLURM_STATE)
    power = np.full(len(df), np.nan)
    prof = None
    if "node_power_consumption" in df:
        cnt, tot = _array_len_sum(df["node_power_consumption"])
        has = cnt > 0
        power[has] = tot[has] / cnt[has] / np.maximum(nodes[has], 1)
        if profiles and has.any():
            rows = np.flatnonzero(has & (nodes >= 1))
            rows = rows[~pd.Series(jid[rows]).duplicated(keep="first").to_numpy()]  # duplicates are rejected
            arrs = [_as_array(df["node_power_consumption"].iat[k]) for k in rows]
            lens = np.array([len(a) for a in arrs], dtype=np.int64)
            offs = np.concatenate([np.arange(m) for m in lens]) * PM100_SAMPLE_S if len(arrs) else np.array([])
            vals = np.concatenate(arrs) / np.repeat(nodes[rows], lens) if len(arrs) else np.array([])
            prof = pd.DataFrame({"job_id": np.repeat(jid[rows], lens), "t_offset_s": offs.astype(float),
                                 "node_power_W": vals})
            prof = prof[np.isfinite(prof["node_power_W"])].sort_values(["job_id", "t_offset_s"], kind="stable")
            prof = prof.reset_index(drop=True)
    else:
        report.notes.append("no node_power_consumption column: measured_node_power_W is NaN")
    return _finish_common(
        src, "pm100", df, jid=jid, id_text=id_text, submit=_epoch(df["submit_time"], timezone, issues, "submit_time", jid),
        start=_epoch(df["start_time"], timezone, issues, "start_time", jid),
        end=_epoch(df["end_time"], timezone, issues, "end_time", jid),
        runtime=pd.to_numeric(df.get("run_time", pd.Series(np.nan, index=df.index)), errors="coerce").to_numpy(float),
        limit=limit_min.to_numpy(dtype=float) * 60.0, nodes=nodes, status=status, bad_status=bad_st,
        user=_text(df, "user_id"), account=_text(df, "group_id"), queue=_text(df, "partition"), power=power,
        max_nodes=max_nodes, nodes_found=nodes_f, strict=strict, issues=issues, report=report, profiles=prof)


# ---------------------------------------------------------------------------------------------------------------------
_FUGAKU_STATE = {"COMPLETED": 1, "FAILED": 0, "CANCELLED": 5, "CANCELED": 5, "TIMEOUT": 0, "REJECTED": 0,
                 "ABNORMAL": 0}


def read_fugaku(path: str | os.PathLike[str], *, timezone: str = "Asia/Tokyo", avgpcon_per_node: bool = False,
                cores_per_node: int = 1, max_nodes: int | None = None, strict: bool = False) -> LoadResult:
    """Read a Fugaku F-DATA monthly table (``21_04.parquet`` ...): per-job average power, no time series.

    Layout (sure of the names: the F-DATA paper's feature list and the RAPS fugaku loader; low-to-medium sure of the
    power unit scope): ``jid`` text (anonymised), ``usr`` text, ``jnam`` text, ``nnumr`` int (nodes requested),
    ``nnuma`` int (nodes allocated), ``elpl`` float [s] (elapse limit), ``duration`` [s], ``adt`` (accept =
    submit), ``sdt`` (start), ``edt`` (end) timestamps, ``avgpcon`` / ``minpcon`` / ``maxpcon`` float [W],
    ``econ`` float (energy), ``exit state`` text (completed, failed, ...).

    Parameters
    ----------
    path : str | os.PathLike[str]
        F-DATA parquet (or CSV with the same columns).
    timezone : str
        Zone of naive timestamps, default ``"Asia/Tokyo"`` (RIKEN R-CCS, Kobe).
    avgpcon_per_node : bool
        False (default): ``avgpcon`` is the job's total average power and is divided by the node count. True: it
        is already per node. The dataset's description does not settle this; check against ``econ`` for your copy.
    cores_per_node : int
        Unused.
    max_nodes : int | None
        Larger jobs are rejected.
    strict : bool
        Raise for the first repaired or rejected record.

    Returns
    -------
    LoadResult
        ``measured_node_power_W`` from ``avgpcon``; ``profiles`` None.

    Raises
    ------
    TraceError
        Unreadable file, missing columns, zero jobs, strict-mode violation.

    References
    ----------
    F. Antici, A. Bartolini, J. Domke, Z. Kiziltan, K. Yamamoto, "F-DATA: A Fugaku Workload Dataset for
    Job-centric Predictive Modelling in HPC Systems", Scientific Data 2025; data: Zenodo record 11467483.
    """
    check_common_options(cores_per_node, max_nodes)
    p = Path(path)
    src = str(p)
    df = _read_table(p, src, ("jid", "adt", "sdt", "edt"))
    if "nnuma" not in df and "nnumr" not in df:
        raise TraceError(src, "missing node count column", field="nnuma", expected="nnuma or nnumr")
    issues, report = Issues(), LoadReport(source=src, loader="fugaku")
    jid, id_text = _ids(df, "jid", issues, report)
    nnuma = pd.to_numeric(df.get("nnuma", pd.Series(np.nan, index=df.index)), errors="coerce").to_numpy(float)
    nnumr = pd.to_numeric(df.get("nnumr", pd.Series(np.nan, index=df.index)), errors="coerce").to_numpy(float)
    nodes_f = np.where(nnuma >= 1, nnuma, nnumr)
    nodes = count_or_zero(nodes_f)
    n_req = int(((~(nnuma >= 1)) & (nnumr >= 1)).sum())
    if n_req:
        report.notes.append(f"nodes from nnumr (requested) for {n_req} job(s) without nnuma")
    avg = pd.to_numeric(df.get("avgpcon", pd.Series(np.nan, index=df.index)), errors="coerce").to_numpy(float)
    power = avg if avgpcon_per_node else avg / np.maximum(nodes, 1)
    report.notes.append("avgpcon read as " + ("W per node" if avgpcon_per_node else "W per job, divided by nodes"))
    status, bad_st = _status_from_text(df.get("exit state", pd.Series("", index=df.index)), _FUGAKU_STATE)
    return _finish_common(
        src, "fugaku", df, jid=jid, id_text=id_text, submit=_epoch(df["adt"], timezone, issues, "adt", jid),
        start=_epoch(df["sdt"], timezone, issues, "sdt", jid),
        end=_epoch(df["edt"], timezone, issues, "edt", jid),
        runtime=pd.to_numeric(df.get("duration", pd.Series(np.nan, index=df.index)), errors="coerce").to_numpy(float),
        limit=pd.to_numeric(df.get("elpl", pd.Series(np.nan, index=df.index)), errors="coerce").to_numpy(float),
        nodes=nodes, status=status, bad_status=bad_st, user=_text(df, "usr"), account=_text(df, "usr"),
        queue=np.full(len(df), "", dtype=object), power=power, max_nodes=max_nodes, nodes_found=nodes_f,
        strict=strict, issues=issues, report=report)


# ---------------------------------------------------------------------------------------------------------------------
def read_adastra(path: str | os.PathLike[str], *, timezone: str = "Europe/Paris", cores_per_node: int = 1,
                 max_nodes: int | None = None, strict: bool = False) -> LoadResult:
    """Read the Adastra MI250 job table (CINES; ``AdastaJobsMI250_15days.parquet``).

    Layout (medium sure of the names, from the RAPS adastraMI250 loader; low sure of the power semantics): PM100-like
    columns ``job_id``, ``user_id``, ``num_nodes_alloc``, ``run_time`` [s], ``time_limit`` [s], ``submit_time``,
    ``start_time``, ``end_time`` timestamps, ``job_state``, ``priority``, ``node_power_consumption`` array. RAPS
    computes the mean node power as sum(array) / (run_time x num_nodes_alloc), i.e. the array sums to the job's
    node energy [J]; this loader does the same. No series is returned (its time base is not documented).

    Parameters
    ----------
    path : str | os.PathLike[str]
        Adastra parquet (or CSV, arrays then unavailable).
    timezone : str
        Zone of naive timestamps, default ``"Europe/Paris"`` (CINES, Montpellier).
    cores_per_node : int
        Unused.
    max_nodes : int | None
        Larger jobs are rejected.
    strict : bool
        Raise for the first repaired or rejected record.

    Returns
    -------
    LoadResult
        ``measured_node_power_W`` as above; ``profiles`` None.

    Notes
    -----
    Raised by the functions it calls, not by its own body:

    - ``TraceError``: Unreadable file, missing columns, zero jobs, strict-mode violation.

    References
    ----------
    Adastra MI250 jobs dataset, CINES, Zenodo record 14007065 (as used by ExaDigiT/RAPS).
    """
    check_common_options(cores_per_node, max_nodes)
    p = Path(path)
    src = str(p)
    df = _read_table(p, src, ("job_id", "submit_time", "start_time", "end_time", "num_nodes_alloc", "run_time"))
    issues, report = Issues(), LoadReport(source=src, loader="adastra")
    jid, id_text = _ids(df, "job_id", issues, report)
    nodes_f = pd.to_numeric(df["num_nodes_alloc"], errors="coerce").to_numpy(dtype=float)
    nodes = count_or_zero(nodes_f)
    run = pd.to_numeric(df["run_time"], errors="coerce").to_numpy(float)
    power = np.full(len(df), np.nan)
    if "node_power_consumption" in df:
        cnt, tot = _array_len_sum(df["node_power_consumption"])
        okp = (cnt > 0) & (run > 0) & (nodes >= 1)
        power[okp] = tot[okp] / (run[okp] * nodes[okp])
    status, bad_st = _status_from_text(df.get("job_state", pd.Series("", index=df.index)), _SLURM_STATE)
    return _finish_common(
        src, "adastra", df, jid=jid, id_text=id_text, submit=_epoch(df["submit_time"], timezone, issues, "submit_time", jid),
        start=_epoch(df["start_time"], timezone, issues, "start_time", jid),
        end=_epoch(df["end_time"], timezone, issues, "end_time", jid), runtime=run,
        limit=pd.to_numeric(df.get("time_limit", pd.Series(np.nan, index=df.index)), errors="coerce").to_numpy(float),
        nodes=nodes, status=status, bad_status=bad_st, user=_text(df, "user_id"), account=_text(df, "user_id"),
        queue=_text(df, "partition"), power=power, max_nodes=max_nodes, nodes_found=nodes_f, strict=strict,
        issues=issues, report=report)


# ---------------------------------------------------------------------------------------------------------------------
_LASSEN_ALLOC = "final_csm_allocation_history_hashed.csv"
_LASSEN_NODE = "final_csm_allocation_node_history.csv"


def read_lassen(path: str | os.PathLike[str], *, timezone: str = "America/Los_Angeles", cores_per_node: int = 1,
                max_nodes: int | None = None, strict: bool = False) -> LoadResult:
    """Read the LLNL Lassen job tables (LAST, ``Lassen-Supercomputer-Job-Dataset``): allocations + per-node energy.

    Layout (medium sure: the LAST repository file names and the RAPS lassen loader):
    ``final_csm_allocation_history_hashed.csv``: ``allocation_id``, ``primary_job_id``, ``job_submit_time``,
    ``begin_time``, ``end_time`` (local text times), ``num_nodes``, ``time_limit`` [s], ``hashed_user_id``,
    ``exit_status``, ``queue``. ``final_csm_allocation_node_history.csv`` (same folder, optional): one row per
    (allocation, node): ``allocation_id``, ``node_name``, ``energy`` [J, node], ``gpu_energy`` [J].

    Parameters
    ----------
    path : str | os.PathLike[str]
        The dataset folder, or the allocation CSV itself (the node CSV is then looked for beside it).
    timezone : str
        Zone of the text times, default ``"America/Los_Angeles"`` (LLNL, Livermore).
    cores_per_node : int
        Unused.
    max_nodes : int | None
        Larger jobs are rejected.
    strict : bool
        Raise for the first repaired or rejected record.

    Returns
    -------
    LoadResult
        ``job_id`` = ``primary_job_id`` (``allocation_id`` in ``allocation_id`` extra column);
        ``measured_node_power_W`` = sum over the job's nodes of ``energy`` / num_nodes / run time [W];
        ``status`` 1 when ``exit_status`` is 0, else 0.

    Raises
    ------
    FileNotFoundError
        If the allocation table does not exist.

    Notes
    -----
    Raised by the functions it calls, not by its own body:

    - ``TraceError``: Missing columns, zero jobs, strict-mode violation.

    References
    ----------
    T. Patki et al., "Monitoring Large Scale Supercomputers: A Case Study with the Lassen Supercomputer", IEEE
    CLUSTER 2021; LLNL LAST repository (Lassen-Supercomputer-Job-Dataset).
    """
    check_common_options(cores_per_node, max_nodes)
    p = Path(path)
    alloc_p = p / _LASSEN_ALLOC if p.is_dir() else p
    src = str(alloc_p)
    if not alloc_p.exists():
        raise FileNotFoundError(src)
    df = _read_table(alloc_p, src, ("allocation_id", "primary_job_id", "job_submit_time", "begin_time", "end_time",
                                    "num_nodes"))
    issues, report = Issues(), LoadReport(source=src, loader="lassen")
    jid, id_text = _ids(df, "primary_job_id", issues, report)
    nodes_f = pd.to_numeric(df["num_nodes"], errors="coerce").to_numpy(dtype=float)
    nodes = count_or_zero(nodes_f)
    submit = _epoch(df["job_submit_time"].astype(str), timezone, issues, "job_submit_time", jid)
    start = _epoch(df["begin_time"].astype(str), timezone, issues, "begin_time", jid)
    end = _epoch(df["end_time"].astype(str), timezone, issues, "end_time", jid)
    power = np.full(len(df), np.nan)
    node_p = alloc_p.parent / _LASSEN_NODE
    if node_p.exists():
        nd = _read_table(node_p, str(node_p), ("allocation_id", "energy"))
        e = pd.to_numeric(nd["energy"], errors="coerce")
        nneg = int((e < 0).sum())
        if nneg:
            report.notes.append(f"{node_p.name}: {nneg} negative node energy value(s) ignored")
        e = e.where(e >= 0)
        tot = e.groupby(nd["allocation_id"]).sum(min_count=1)
        etot = df["allocation_id"].map(tot).to_numpy(dtype=float)
        rt = end - start
        okp = np.isfinite(etot) & (rt > 0) & (nodes >= 1)
        power[okp] = etot[okp] / nodes[okp] / rt[okp]
        report.notes.append(f"node energy from {node_p.name} ({len(nd)} rows)")
    else:
        report.notes.append(f"{_LASSEN_NODE} not found beside the allocation table: no measured power")
    ex = pd.to_numeric(df.get("exit_status", pd.Series(np.nan, index=df.index)), errors="coerce").to_numpy(float)
    status = np.where(np.isnan(ex), -1, np.where(ex == 0, 1, 0)).astype(np.int8)
    return _finish_common(
        src, "lassen", df, jid=jid, id_text=id_text, submit=submit, start=start, end=end,
        runtime=np.full(len(df), np.nan),
        limit=pd.to_numeric(df.get("time_limit", pd.Series(np.nan, index=df.index)), errors="coerce").to_numpy(float),
        nodes=nodes, status=status, bad_status=np.zeros(len(df), dtype=bool), user=_text(df, "hashed_user_id"),
        account=_text(df, "hashed_user_id"), queue=_text(df, "queue"), power=power, max_nodes=max_nodes,
        nodes_found=nodes_f, strict=strict, issues=issues, report=report,
        extra={"allocation_id": _int_or_minus_one(pd.to_numeric(df["allocation_id"], errors="coerce"))})


def _int_or_minus_one(x: pd.Series) -> np.ndarray:
    """Integral ids as int64; -1 where missing, fractional or beyond 2**53 (never an overflowing cast)."""
    v = x.to_numpy(dtype=float)
    good = np.isfinite(v) & (np.abs(v) <= MAX_EXACT_INT) & (v == np.floor(v))
    out = np.full(len(v), -1, dtype=np.int64)
    out[good] = v[good].astype(np.int64)
    return out


# ---------------------------------------------------------------------------------------------------------------------
def _loader_doc(fn_name: str) -> str:
    return f"""Read the trace; options as for :func:`{fn_name}`.

        Parameters
        ----------
        path : str or os.PathLike
            The dataset file.
        **options
            Passed to :func:`{fn_name}`.

        Returns
        -------
        LoadResult
            Job table, load report and (PM100) profiles.

        Raises
        ------
        TraceError
            See :func:`{fn_name}`.
        """


class PM100Loader(BaseLoader):
    """Loader for the PM100 (Marconi100) job table with 20 s power series; see :func:`read_pm100`."""

    name = "pm100"
    header_columns = ('job_id', 'submit_time', 'start_time', 'end_time', 'num_nodes_alloc')
    description = "PM100 Marconi100 job_table.parquet with per-job node power series (20 s)"
    suffixes = ()

    def load(self, path: str | os.PathLike[str], **options: Any) -> LoadResult:  # noqa: D102
        return read_pm100(path, **options)

    load.__doc__ = _loader_doc("read_pm100")


class FugakuLoader(BaseLoader):
    """Loader for Fugaku F-DATA monthly tables (per-job average power); see :func:`read_fugaku`."""

    name = "fugaku"
    header_columns = ('jid', 'adt', 'sdt', 'edt')
    description = "Fugaku F-DATA parquet (per-job average power avgpcon)"
    suffixes = ()

    def load(self, path: str | os.PathLike[str], **options: Any) -> LoadResult:  # noqa: D102
        return read_fugaku(path, **options)

    load.__doc__ = _loader_doc("read_fugaku")


class AdastraLoader(BaseLoader):
    """Loader for the Adastra MI250 job table (CINES); see :func:`read_adastra`."""

    name = "adastra"
    header_columns = ('job_id', 'submit_time', 'start_time', 'end_time', 'num_nodes_alloc', 'run_time')
    description = "Adastra MI250 job parquet (CINES) with node energy arrays"
    suffixes = ()

    def load(self, path: str | os.PathLike[str], **options: Any) -> LoadResult:  # noqa: D102
        return read_adastra(path, **options)

    load.__doc__ = _loader_doc("read_adastra")


class LassenLoader(BaseLoader):
    """Loader for LLNL Lassen (LAST) allocation + per-node energy tables; see :func:`read_lassen`."""

    name = "lassen"
    description = "LLNL Lassen LAST allocation history + per-node energy CSVs"
    suffixes = ()

    def load(self, path: str | os.PathLike[str], **options: Any) -> LoadResult:  # noqa: D102
        return read_lassen(path, **options)

    load.__doc__ = _loader_doc("read_lassen")
