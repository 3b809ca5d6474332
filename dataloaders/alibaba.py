"""Alibaba GPU cluster pod loader: ``openb_pod_list_*.csv`` (cluster-trace-gpu-v2023) -> canonical job table.

Layout (fairly sure: column names from the trace's README in alibaba/clusterdata, cluster-trace-gpu-v2023)::

    name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time

Fields read -> canonical column
-------------------------------
==================  ===============================================================================================
``name``            ``job_id``: the number at the end (``openb-pod-0017`` -> 17); kept in ``trace_job_id``; no
                    number -> rejected; repeated -> rejected (first kept)
``creation_time``   ``submit_time_s`` [s, relative to the trace start]; missing -> rejected
``scheduled_time``  ``start_time_s`` [s]; empty -> NaN (never scheduled, flagged). 0 is a valid time (a pod created
                    and scheduled at the trace start); a time before ``creation_time`` -> NaN (repaired)
``deletion_time``   ``end_time_s`` [s]; empty -> NaN (still running at the end, flagged); before scheduled -> NaN
                    (repaired)
``num_gpu``,        ``gpus`` (extra, float64): num_gpu x gpu_milli / 1000, the GPU share of the pod (fractional
``gpu_milli``       GPUs: ``num_gpu=1, gpu_milli=250`` -> 0.25); gpu_milli outside [0, 1000] -> rejected
``cpu_milli``       ``cpus`` (extra, float64): cpu_milli / 1000 cores; negative -> rejected; empty -> NaN (share unknown)
``memory_mib``      ``memory_B`` (extra, float64): memory_mib x 2^20 bytes
``pod_phase``       ``status``: Succeeded -> 1, Failed -> 0, Running / Pending -> -1; kept in ``state``
``qos``             ``queue``
``gpu_spec``        ``gpu_spec`` (extra text; the GPU models the pod accepts, ``|``-separated)
==================  ===============================================================================================

Counts above 2**31 GPUs or cores, and times above 1e10 s, are rejected (``*_out_of_range``) instead of overflowing.

``nodes`` = 1 here (a pod's share of a node is not known without the machine); the run maps ``gpus`` and ``cpus``
to whole nodes and to per-node utilisation with :func:`jobs.shares.apply_node_shares` (a pod asking for more GPUs
than a node has spans several nodes). ``runtime_s`` = end - start; ``requested_walltime_s`` NaN (pods have no
limit); ``measured_node_power_W`` NaN.

References
----------
Weng, Q. et al., "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent",
USENIX ATC 2023; Alibaba clusterdata, cluster-trace-gpu-v2023.
"""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dataloaders._common import MAX_COUNT, MAX_EXACT_INT, MAX_TIME_S, MEASURED_POWER_COLUMN, Issues
from dataloaders._common import check_common_options, finish_load, read_text, reject_duplicates
from dataloaders.registry import BaseLoader
from dataloaders.report import LoadReport, LoadResult, TraceError
from jobs.table import JobStatus

__all__ = ["ALIBABA_POD_COLUMNS", "AlibabaPodLoader", "read_alibaba_pods"]

#: Columns of openb_pod_list_*.csv, in file order.
ALIBABA_POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos", "pod_phase",
                       "creation_time", "deletion_time", "scheduled_time")
_PHASE = {"Succeeded": JobStatus.COMPLETED, "Failed": JobStatus.FAILED, "Running": JobStatus.UNKNOWN,
          "Pending": JobStatus.UNKNOWN}


def read_alibaba_pods(path: str | os.PathLike[str], *, cores_per_node: int = 1, max_nodes: int | None = None,
                      strict: bool = False) -> LoadResult:
    """Read an Alibaba GPU-cluster pod list into the canonical job table (fields in the module docstring).

    Parameters
    ----------
    path : str or os.PathLike
        ``openb_pod_list_*.csv``, plain or gzip.
    cores_per_node : int, optional
        Accepted for a uniform interface; unused.
    max_nodes : int, optional
        Accepted for a uniform interface (every pod needs 1 node).
    strict : bool, optional
        Raise for the first repaired or rejected record.

    Returns
    -------
    LoadResult
        ``jobs`` with extras ``measured_node_power_W``, ``gpus``, ``cpus``, ``memory_B``, ``gpu_spec``,
        ``trace_job_id``, ``state``, ``source_line``; ``attrs["time_origin_unix_s"]`` NaN (relative times).

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    TraceError
        A required column is missing, zero pods, or a strict-mode violation.
    """
    check_common_options(cores_per_node, max_nodes)
    p = Path(path)
    src = str(p)
    text = read_text(p)
    lines_txt = text.split("\n")
    head = lines_txt[0].strip().rstrip("\r").split(",") if lines_txt else []
    head = [h.strip() for h in head]
    missing = [c for c in ("name", "creation_time", "num_gpu", "gpu_milli") if c not in head]
    if missing:
        raise TraceError(src, f"missing column(s) {missing}", line=1, field=missing[0],
                         expected=",".join(ALIBABA_POD_COLUMNS), found=",".join(head)[:80])
    dup = sorted({c for c in head if head.count(c) > 1})
    if dup:  # a repeated column name makes every value of that field ambiguous: the header is unusable
        raise TraceError(src, f"column(s) {dup} appear more than once in the header", line=1, field=dup[0],
                         expected="each column once", found=",".join(head)[:80])
    issues = Issues()
    report = LoadReport(source=src, loader="alibaba_pods")
    # csv module for the field count check (quoted gpu_spec may hold commas), then pandas on good rows
    rows, line_no = [], []
    reader = csv.reader(io.StringIO(text))
    try:
        next(reader, None)  # the header (already read above)
    except csv.Error as exc:
        raise TraceError(src, f"the header line is not well-formed CSV ({exc})", line=1, field="",
                         expected=",".join(ALIBABA_POD_COLUMNS), found=lines_txt[0][:80]) from None
    while True:
        try:
            rec = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:  # e.g. a bare carriage return inside an unquoted field
            report.records_read += 1
            issues.add(reader.line_num, None, "", "", f"a well-formed CSV record ({exc})", "rejected", "malformed_csv")
            continue
        ln = reader.line_num
        if not rec or all(not c.strip() for c in rec):
            continue
        report.records_read += 1
        if len(rec) != len(head):
            issues.add(ln, None, "", ",".join(rec), f"{len(head)} comma-separated fields, found {len(rec)}",
                       "rejected", "wrong_field_count")
            continue
        rows.append(rec)
        line_no.append(ln)
    df = pd.DataFrame(rows, columns=head, dtype=object) if rows else pd.DataFrame(columns=head, dtype=object)
    lines = np.asarray(line_no, dtype=np.int64)
    n = len(df)

    def num(c: str) -> np.ndarray:
        if c not in df:
            return np.full(n, np.nan)
        return pd.to_numeric(df[c].astype(str).str.strip().replace("", np.nan), errors="coerce").to_numpy(float)

    name = df["name"].astype(str).str.strip()
    idnum = name.str.extract(r"(\d+)$")[0]
    ok = idnum.notna().to_numpy().copy()
    issues.add_mask(~ok, lines, None, "name", name.to_numpy(), "a pod name ending in a number", "rejected",
                    "bad_pod_name")
    idf = pd.to_numeric(idnum.str.slice(-20), errors="coerce").fillna(-1).to_numpy(float)
    huge_id = ok & (idf > MAX_EXACT_INT)
    issues.add_mask(huge_id, lines, None, "name", name.to_numpy(), f"a pod number <= {MAX_EXACT_INT}", "rejected",
                    "job_id_out_of_range")
    ok &= ~huge_id
    jid = np.where(ok, idf, -1).astype(np.int64)
    create, sched, delete = num("creation_time"), num("scheduled_time"), num("deletion_time")
    bad_c = ok & ~(np.isfinite(create) & (create >= 0))
    issues.add_mask(bad_c, lines, jid, "creation_time", df["creation_time"].to_numpy(), "a time >= 0 s",
                    "rejected", "submit_time_missing")
    ok &= ~bad_c
    for name_t, t in (("creation_time", create), ("scheduled_time", sched), ("deletion_time", delete)):
        huge_t = ok & (t > MAX_TIME_S)
        issues.add_mask(huge_t, lines, jid, name_t, t, f"a time below {MAX_TIME_S:.0e} s (317 years)", "rejected",
                        "time_out_of_range")
        ok &= ~huge_t
    ngpu, gmilli = num("num_gpu"), num("gpu_milli")
    bad_g = ok & ~((np.isfinite(ngpu) & (ngpu >= 0)) & (np.isfinite(gmilli) & (gmilli >= 0) & (gmilli <= 1000)))
    issues.add_mask(bad_g, lines, jid, "gpu_milli", [f"num_gpu={a}, gpu_milli={b}" for a, b in
                                                      zip(df.get("num_gpu", [""] * n), df.get("gpu_milli", [""] * n))],
                    "num_gpu >= 0 and gpu_milli in [0, 1000]", "rejected", "bad_gpu_request")
    ok &= ~bad_g
    huge_g = ok & (ngpu > MAX_COUNT)
    issues.add_mask(huge_g, lines, jid, "num_gpu", ngpu, f"at most {MAX_COUNT:.0f} GPUs", "rejected",
                    "gpus_out_of_range")
    ok &= ~huge_g
    cmilli = num("cpu_milli")
    bad_cpu = ok & ((cmilli < 0) | (cmilli > 1000 * MAX_COUNT) | np.isinf(cmilli))
    issues.add_mask(bad_cpu, lines, jid, "cpu_milli", cmilli, f"milli-cores in [0, {1000 * MAX_COUNT:.0f}]",
                    "rejected", "bad_cpu_request")
    ok &= ~bad_cpu
    idx = np.flatnonzero(ok)
    keep = reject_duplicates(jid[idx], lines[idx], issues, keep="first")
    ok[idx[~keep]] = False

    # only a missing value means "never scheduled": 0 is the trace start, a valid time
    not_sched = ok & ~np.isfinite(sched)
    issues.add_mask(not_sched, lines, jid, "scheduled_time", df.get("scheduled_time", pd.Series([""] * n)).to_numpy(),
                    "a time >= 0 s (never scheduled: start NaN)", "flagged", "never_scheduled")
    start = np.where(not_sched, np.nan, sched)
    early = ok & np.isfinite(start) & (start < create)
    issues.add_mask(early, lines, jid, "scheduled_time", sched, "scheduled >= creation (start set to NaN)",
                    "repaired", "scheduled_before_creation")
    start[early] = np.nan
    no_del = ok & ~np.isfinite(delete)
    issues.add_mask(no_del & ~not_sched, lines, jid, "deletion_time", "(empty)", "a time (still running: end NaN)",
                    "flagged", "no_deletion_time")
    end = delete.copy()
    before = ok & np.isfinite(end) & np.isfinite(start) & (end < start)
    issues.add_mask(before, lines, jid, "deletion_time", delete, "deletion >= scheduled (end set to NaN)",
                    "repaired", "deleted_before_scheduled")
    end[before] = np.nan
    end[~np.isfinite(start)] = np.nan
    runtime = end - start
    phase = df.get("pod_phase", pd.Series([""] * n)).astype(str).str.strip()
    status = phase.map(_PHASE)
    unk = ok & status.isna().to_numpy()
    issues.add_mask(unk, lines, jid, "pod_phase", phase.to_numpy(), "Succeeded, Failed, Running or Pending",
                    "repaired", "unknown_pod_phase")
    gpus = ngpu * gmilli / 1000.0
    frac = ok & (gpus > 0) & (gpus != np.floor(gpus))
    if frac.any():
        report.notes.append(f"{int(frac.sum())} pod(s) with a fractional GPU share (gpus column)")
    report.notes.append("no absolute time origin (pod times are seconds from the trace start)")
    out = pd.DataFrame({
        "job_id": jid, "submit_time_s": create, "requested_walltime_s": np.full(n, np.nan),
        "nodes": np.ones(n, dtype=np.int64), "runtime_s": runtime, "start_time_s": start, "end_time_s": end,
        "user": "", "account": "", "queue": df.get("qos", pd.Series([""] * n)).astype(str).to_numpy(),
        "status": status.fillna(JobStatus.UNKNOWN).to_numpy(dtype=np.int8),
        "cpu_util": np.full(n, np.nan), "gpu_util": np.full(n, np.nan), MEASURED_POWER_COLUMN: np.full(n, np.nan),
        "gpus": gpus, "cpus": cmilli / 1000.0, "memory_B": num("memory_mib") * 2.0**20,
        "gpu_spec": df.get("gpu_spec", pd.Series([""] * n)).astype(str).to_numpy(),
        "trace_job_id": name.to_numpy(dtype=object), "state": phase.to_numpy(dtype=object), "source_line": lines,
    })[ok]
    return finish_load(out, report, issues, strict=strict, origin=float("nan"))


class AlibabaPodLoader(BaseLoader):
    """Loader for Alibaba GPU-cluster pod lists (cluster-trace-gpu-v2023); see :func:`read_alibaba_pods`.

    Attributes
    ----------
    name : str
        ``"alibaba_pods"``.
    description : str
        One-line description.
    suffixes : tuple of str
        ``()`` (a ``.csv`` is ambiguous: pass ``format="alibaba_pods"``).
    """

    name = "alibaba_pods"
    header_columns = ('name', 'creation_time', 'num_gpu', 'gpu_milli')
    description = "Alibaba GPU cluster pod list (openb_pod_list_*.csv, fractional GPUs)"
    suffixes = ()

    def load(self, path: str | os.PathLike[str], **options: Any) -> LoadResult:
        """Read a pod list; options as for :func:`read_alibaba_pods`.

        Parameters
        ----------
        path : str or os.PathLike
            Pod list CSV.
        **options
            ``cores_per_node``, ``max_nodes``, ``strict``.

        Returns
        -------
        LoadResult
            Job table and load report.

        Raises
        ------
        TraceError
            See :func:`read_alibaba_pods`.
        """
        return read_alibaba_pods(path, **options)
