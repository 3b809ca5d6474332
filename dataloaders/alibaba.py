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

Node list (the machine)
-----------------------
When the trace's node list lies beside the pod list (same folder: ``<pod file name with pod_list -> node_list>``, e.g.
``openb_pod_list_default.csv`` -> ``openb_node_list_default.csv``, else ``openb_node_list_gpu_node.csv``, plain or
``.gz``), it is read (:func:`read_alibaba_nodes`; columns ``sn,cpu_milli,memory_mib,gpu,model``, one row per node)
and maps each pod to the trace partition of its GPU model, the ``partition`` extra column (tried first by
:func:`scheduler_sim.kernel.partitions.map_partitions`, then ``queue``, then ``gpu_spec``):

==========================================  =====================================================================
pod                                         ``partition``
==========================================  =====================================================================
GPU pod (``gpus`` > 0)                      the first model of its ``gpu_spec`` that the node list has GPU nodes
                                            of (``V100M32|P100`` with V100M32 nodes -> ``V100M32``)
GPU pod, no listed model in ``gpu_spec``    ``""`` (left to ``queue`` / ``gpu_spec`` / the default; counted)
CPU-only pod (``gpus`` = 0)                 ``cpu`` when the node list has CPU nodes (empty ``model``), else ``""``
==========================================  =====================================================================

The load report notes the node count and GPUs per node of each model and how many pods each trace partition got;
``report.header["node_list"]`` keeps the machine (``{"file", "nodes": {model: n}, "gpus_per_node": {model: [g]}}``)
for the run header's trace-vs-system line. A bad node row (wrong field count, a GPU count that is not a whole number
in [0, 2**31), a GPU model without GPUs or GPUs without a model, a repeated ``sn``) is noted with file, line, field
and expected value and skipped (strict mode raises). Without a node list nothing changes.

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
from dataloaders.fields import Check, FrameColumns, TextField, apply_checks, number_or_nan, read_text_fields
from dataloaders.registry import BaseLoader
from dataloaders.report import LoadReport, LoadResult, TraceError
from jobs.table import JobStatus

__all__ = ["ALIBABA_NODE_COLUMNS", "ALIBABA_POD_COLUMNS", "AlibabaPodLoader", "find_node_list", "read_alibaba_nodes",
           "read_alibaba_pods"]

#: Columns of openb_pod_list_*.csv, in file order.
ALIBABA_POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos", "pod_phase",
                       "creation_time", "deletion_time", "scheduled_time")
#: Columns of openb_node_list_gpu_node.csv, in file order.
ALIBABA_NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
#: Trace partition name of the node list's CPU-only nodes (empty ``model``) and of CPU-only pods.
CPU_PARTITION = "cpu"
_NODE_LIST_NAME = "openb_node_list_gpu_node.csv"
_MAX_NODE_NOTES = 5  # bad node rows noted one by one; the rest counted
_PHASE = {"Succeeded": JobStatus.COMPLETED, "Failed": JobStatus.FAILED, "Running": JobStatus.UNKNOWN,
          "Pending": JobStatus.UNKNOWN}


# ---- the pod list's fields and checks as data (engine: dataloaders.fields) --------------------------------------
#: name (= the CSV column), columns, unit as the file holds it, parser (plain numbers; empty -> NaN)
_POD_FIELDS = tuple(TextField(c, (c,), u, number_or_nan) for c, u in (
    ("creation_time", "s"), ("scheduled_time", "s"), ("deletion_time", "s"), ("num_gpu", "-"),
    ("gpu_milli", "1/1000 GPU"), ("cpu_milli", "1/1000 core"), ("memory_mib", "MiB")))
_TIME_TEXT = f"a time below {MAX_TIME_S:.0e} s (317 years)"


def _gpu_text(v: dict[str, Any]) -> list[str]:
    """The GPU request as the file holds it, per record."""
    df, n = v["df"], len(v["df"])
    return [f"num_gpu={a}, gpu_milli={b}" for a, b in zip(df.get("num_gpu", [""] * n), df.get("gpu_milli", [""] * n))]


def _column_text(column: str) -> Any:
    """The text of one pod list column per record (``""`` for every record when the file lacks it)."""
    return lambda v: v["df"].get(column, pd.Series([""] * len(v["df"]))).to_numpy()


_NAME_CHECKS = (
    Check("name", lambda v: ~v["has_number"], lambda v: v["name"], "a pod name ending in a number", "bad_pod_name"),
    Check("name", lambda v: v["idf"] > MAX_EXACT_INT, lambda v: v["name"], f"a pod number <= {MAX_EXACT_INT}",
          "job_id_out_of_range"),
)
_POD_CHECKS = (
    Check("creation_time", lambda v: ~(np.isfinite(v["creation_time"]) & (v["creation_time"] >= 0)),
          lambda v: v["df"]["creation_time"].to_numpy(), "a time >= 0 s", "submit_time_missing"),
    *(Check(c, lambda v, c=c: v[c] > MAX_TIME_S, lambda v, c=c: v[c], _TIME_TEXT, "time_out_of_range")
      for c in ("creation_time", "scheduled_time", "deletion_time")),
    Check("gpu_milli", lambda v: ~((np.isfinite(v["num_gpu"]) & (v["num_gpu"] >= 0)) & (
        np.isfinite(v["gpu_milli"]) & (v["gpu_milli"] >= 0) & (v["gpu_milli"] <= 1000))), _gpu_text,
          "num_gpu >= 0 and gpu_milli in [0, 1000]", "bad_gpu_request"),
    Check("num_gpu", lambda v: v["num_gpu"] > MAX_COUNT, lambda v: v["num_gpu"], f"at most {MAX_COUNT:.0f} GPUs",
          "gpus_out_of_range"),
    Check("cpu_milli", lambda v: (v["cpu_milli"] < 0) | (v["cpu_milli"] > 1000 * MAX_COUNT) | np.isinf(v["cpu_milli"]),
          lambda v: v["cpu_milli"], f"milli-cores in [0, {1000 * MAX_COUNT:.0f}]", "bad_cpu_request"),
)
#: only a missing value means "never scheduled": 0 is the trace start, a valid time
_SCHEDULE_CHECKS = (
    Check("scheduled_time", lambda v: ~np.isfinite(v["scheduled_time"]), _column_text("scheduled_time"),
          "a time >= 0 s (never scheduled: start NaN)", "never_scheduled", "flagged", fill=("start", np.nan)),
    Check("scheduled_time", lambda v: np.isfinite(v["start"]) & (v["start"] < v["creation_time"]),
          lambda v: v["scheduled_time"], "scheduled >= creation (start set to NaN)", "scheduled_before_creation",
          "repaired", fill=("start", np.nan)),
    Check("deletion_time", lambda v: ~np.isfinite(v["deletion_time"]) & np.isfinite(v["scheduled_time"]), "(empty)",
          "a time (still running: end NaN)", "no_deletion_time", "flagged"),
    Check("deletion_time", lambda v: np.isfinite(v["end"]) & np.isfinite(v["start"]) & (v["end"] < v["start"]),
          lambda v: v["deletion_time"], "deletion >= scheduled (end set to NaN)", "deleted_before_scheduled",
          "repaired", fill=("end", np.nan)),
)
_PHASE_CHECKS = (
    Check("pod_phase", lambda v: v["unknown_phase"], lambda v: v["phase"], "Succeeded, Failed, Running or Pending",
          "unknown_pod_phase", "repaired"),
)


def read_alibaba_pods(path: str | os.PathLike[str], *, cores_per_node: int = 1, max_nodes: int | None = None,
                      strict: bool = False) -> LoadResult:
    """Read an Alibaba GPU-cluster pod list into the canonical job table (fields in the module docstring).

    Parameters
    ----------
    path : str | os.PathLike[str]
        ``openb_pod_list_*.csv``, plain or gzip.
    cores_per_node : int
        Accepted for a uniform interface; unused.
    max_nodes : int | None
        Accepted for a uniform interface (every pod needs 1 node).
    strict : bool
        Raise for the first repaired or rejected record.

    Returns
    -------
    LoadResult
        ``jobs`` with extras ``measured_node_power_W``, ``gpus``, ``cpus``, ``memory_B``, ``gpu_spec``,
        ``trace_job_id``, ``state``, ``source_line`` (and ``partition`` when a node list lies beside the pods);
        ``attrs["time_origin_unix_s"]`` NaN (relative times).

    Raises
    ------
    TraceError
        A required column is missing, zero pods, or a strict-mode violation; a bad node list (see
        :func:`read_alibaba_nodes`).

    Notes
    -----
    Raised by the functions it calls, not by its own body:

    - ``FileNotFoundError``: If ``path`` does not exist.
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
    v = read_text_fields(FrameColumns(df), _POD_FIELDS, n)
    v["df"] = df
    name = df["name"].astype(str).str.strip()
    idnum = name.str.extract(r"(\d+)$")[0]
    v.update(name=name.to_numpy(), has_number=idnum.notna().to_numpy(),
             idf=pd.to_numeric(idnum.str.slice(-20), errors="coerce").fillna(-1).to_numpy(float))
    ok = apply_checks(v, _NAME_CHECKS, np.ones(n, dtype=bool), lines, None, issues)
    jid = np.where(ok, v["idf"], -1).astype(np.int64)
    ok = apply_checks(v, _POD_CHECKS, ok, lines, jid, issues)
    idx = np.flatnonzero(ok)
    keep = reject_duplicates(jid[idx], lines[idx], issues, keep="first")
    ok[idx[~keep]] = False
    v["start"], v["end"] = v["scheduled_time"].copy(), v["deletion_time"].copy()
    apply_checks(v, _SCHEDULE_CHECKS, ok, lines, jid, issues)
    start, end = v["start"], v["end"]
    end[~np.isfinite(start)] = np.nan
    runtime = end - start
    phase = df.get("pod_phase", pd.Series([""] * n)).astype(str).str.strip()
    status = phase.map(_PHASE)
    v.update(phase=phase.to_numpy(), unknown_phase=status.isna().to_numpy())
    apply_checks(v, _PHASE_CHECKS, ok, lines, jid, issues)
    ngpu, gmilli, cmilli, create = v["num_gpu"], v["gpu_milli"], v["cpu_milli"], v["creation_time"]
    gpus = ngpu * gmilli / 1000.0
    frac = ok & (gpus > 0) & (gpus != np.floor(gpus))
    if frac.any():
        report.notes.append(f"{int(frac.sum())} pod(s) with a fractional GPU share (gpus column)")
    report.notes.append("no absolute time origin (pod times are seconds from the trace start)")
    spec = df.get("gpu_spec", pd.Series([""] * n)).astype(str).to_numpy()
    extra = {}
    nfile = find_node_list(p)
    if nfile is not None:
        machine, node_notes = read_alibaba_nodes(nfile, strict=strict)
        report.notes.extend(node_notes)
        report.header["node_list"] = machine
        extra["partition"], pod_note = _pod_partitions(gpus, spec, ok, machine)
        report.notes.append(pod_note)
    out = pd.DataFrame({
        "job_id": jid, "submit_time_s": create, "requested_walltime_s": np.full(n, np.nan),
        "nodes": np.ones(n, dtype=np.int64), "runtime_s": runtime, "start_time_s": start, "end_time_s": end,
        "user": "", "account": "", "queue": df.get("qos", pd.Series([""] * n)).astype(str).to_numpy(),
        "status": status.fillna(JobStatus.UNKNOWN).to_numpy(dtype=np.int8),
        "cpu_util": np.full(n, np.nan), "gpu_util": np.full(n, np.nan), MEASURED_POWER_COLUMN: np.full(n, np.nan),
        "gpus": gpus, "cpus": cmilli / 1000.0, "memory_B": v["memory_mib"] * 2.0**20,
        "gpu_spec": spec, **extra,
        "trace_job_id": name.to_numpy(dtype=object), "state": phase.to_numpy(dtype=object), "source_line": lines,
    })[ok]
    return finish_load(out, report, issues, strict=strict, origin=float("nan"))


def find_node_list(pod_path: str | os.PathLike[str]) -> Path | None:
    """The node list beside a pod list, if there is one (module docstring, "Node list").

    Parameters
    ----------
    pod_path : str | os.PathLike[str]
        The pod list (``openb_pod_list_*.csv``, plain or ``.gz``).

    Returns
    -------
    Path or None
        ``<pod name with pod_list -> node_list>`` in the same folder, else ``openb_node_list_gpu_node.csv`` there (each
        plain or ``.gz``); None when neither is a file.
    """
    p = Path(pod_path)
    name = p.name[:-3] if p.name.endswith(".gz") else p.name
    names = [name.replace("pod_list", "node_list", 1)] if "pod_list" in name else []  # not pods.csv -> nodes.csv
    names.append(_NODE_LIST_NAME)
    for n in names:
        for cand in (p.with_name(n), p.with_name(n + ".gz")):
            if cand != p and cand.is_file():
                return cand
    return None


def _node_row(rec: list[str], col: dict[str, int]) -> tuple:
    """One node row -> (sn, model, "", gpus), or (None, field, expected, found) for a bad row."""
    sn, model, g = rec[col["sn"]].strip(), rec[col["model"]].strip(), rec[col["gpu"]].strip()
    if not sn:
        return None, "sn", "a node name", "(empty)"
    try:
        gf = float(g)
    except ValueError:
        gf = float("nan")
    if not (np.isfinite(gf) and gf >= 0 and gf == np.floor(gf) and gf < MAX_COUNT):
        return None, "gpu", f"a whole number of GPUs in [0, {MAX_COUNT:.0f})", g or "(empty)"
    if (gf > 0) != bool(model):
        exp = "a GPU model for a node with GPUs" if gf > 0 else "an empty model for a node without GPUs"
        return None, "model", exp, f"gpu={g}, model={model or '(empty)'}"
    return sn, model, "", int(gf)


def read_alibaba_nodes(path: str | os.PathLike[str], *, strict: bool = False) -> tuple[dict[str, Any], list[str]]:
    """Read an Alibaba node list (``openb_node_list_gpu_node.csv``): the trace's machine by GPU model.

    Parameters
    ----------
    path : str | os.PathLike[str]
        Node list CSV (columns :data:`ALIBABA_NODE_COLUMNS`; ``sn``, ``gpu`` and ``model`` are required), plain or
        gzip; its size and line lengths are bounded by :func:`dataloaders._common.read_text` before it is parsed
        (a missing file: ``FileNotFoundError`` from there).
    strict : bool
        Raise for the first bad row instead of skipping it.

    Returns
    -------
    machine : dict[str, Any]
        ``{"file": name, "nodes": {model: count}, "gpus_per_node": {model: sorted distinct GPU counts}}``; CPU-only
        nodes (empty ``model``) under :data:`CPU_PARTITION`; models in first-seen order.
    notes : list of str
        One per bad row (file, line, field, expected, found; the first five, then a count), then one line per
        model: node count and GPUs per node.

    Raises
    ------
    TraceError
        A required column is missing, no valid node row, or (strict) a bad row.
    """
    p = Path(path)
    src = str(p)
    text = read_text(p)
    reader = csv.reader(io.StringIO(text))
    try:
        head = [h.strip() for h in next(reader, [])]
    except csv.Error as exc:
        raise TraceError(src, f"the header line is not well-formed CSV ({exc})", line=1, field="",
                         expected=",".join(ALIBABA_NODE_COLUMNS), found=text[:80]) from None
    missing = [c for c in ("sn", "gpu", "model") if c not in head]
    if missing:
        raise TraceError(src, f"missing column(s) {missing}", line=1, field=missing[0],
                         expected=",".join(ALIBABA_NODE_COLUMNS), found=",".join(head)[:80])
    col = {c: head.index(c) for c in ("sn", "gpu", "model")}
    nodes: dict[str, int] = {}
    gpn: dict[str, set[int]] = {}
    seen: set[str] = set()
    bad: list[str] = []
    while True:
        try:
            rec = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            rec, why = None, ("", "a well-formed CSV record", str(exc))
        ln = reader.line_num
        if rec is not None and not any(c.strip() for c in rec):
            continue
        if rec is not None and len(rec) != len(head):
            why = ("", f"{len(head)} comma-separated fields", f"{len(rec)} fields")
            rec = None
        row = _node_row(rec, col) if rec is not None else (None, *why)
        if row[0] is not None and row[0] in seen:
            row = (None, "sn", "each node once", f"{row[0]} (repeated)")
        if row[0] is None:
            if strict:
                raise TraceError(src, "bad node row", line=ln, field=row[1], expected=row[2], found=str(row[3])[:80])
            bad.append(f"{p.name} line {ln}: field {row[1] or '(record)'}: expected {row[2]}, found "
                       f"{str(row[3])[:80]!r}; node skipped")
            continue
        sn, model, _, g = row
        seen.add(sn)
        key = model or CPU_PARTITION
        nodes[key] = nodes.get(key, 0) + 1
        gpn.setdefault(key, set()).add(g)
    if not nodes:
        raise TraceError(src, "no valid node row", line=None, field="", expected="at least one node row", found="")
    notes = bad[:_MAX_NODE_NOTES] + ([f"{p.name}: {len(bad) - _MAX_NODE_NOTES} more bad node row(s) skipped"]
                                     if len(bad) > _MAX_NODE_NOTES else [])
    total = sum(nodes.values())
    notes.append(f"node list {p.name}: {total} node(s) read, {len(bad)} skipped; "
                 + "; ".join(f"{m}: {n} node(s) x {'/'.join(str(g) for g in sorted(gpn[m]))} GPU(s)"
                             for m, n in nodes.items()))
    machine = {"file": p.name, "nodes": nodes, "gpus_per_node": {m: sorted(v) for m, v in gpn.items()}}
    return machine, notes


def _pod_partitions(gpus: np.ndarray, spec: np.ndarray, ok: np.ndarray, machine: dict[str, Any]
                    ) -> tuple[np.ndarray, str]:
    """Trace partition of every pod from the node list's models (module docstring table) and the report line.

    Parameters
    ----------
    gpus : np.ndarray
        GPU share of each pod [GPUs], float64, shape (n,).
    spec : np.ndarray
        ``gpu_spec`` text of each pod (``|``-separated models), object, shape (n,).
    ok : np.ndarray
        Accepted pods (only these are counted in the report line), bool, shape (n,).
    machine : dict[str, Any]
        From :func:`read_alibaba_nodes`.

    Returns
    -------
    partition : np.ndarray
        Object, shape (n,): model name, :data:`CPU_PARTITION` or ``""``.
    note : str
        Pods per trace partition and the unmapped GPU pods.
    """
    models = {m for m in machine["nodes"] if m != CPU_PARTITION}
    has_cpu = CPU_PARTITION in machine["nodes"]
    cache: dict[str, str] = {}
    out = np.full(len(gpus), "", dtype=object)
    for i in range(len(gpus)):
        if not (gpus[i] > 0):
            out[i] = CPU_PARTITION if has_cpu else ""
            continue
        s = str(spec[i])
        if s not in cache:
            cache[s] = next((m for m in (x.strip() for x in s.split("|")) if m in models), "")
        out[i] = cache[s]
    counts = pd.Series(out[ok]).value_counts(sort=False)
    got = {k: int(v) for k, v in counts.items() if k != ""}
    lost_gpu = int((ok & (out == "") & (gpus > 0)).sum())
    lost_cpu = int((ok & (out == "") & ~(gpus > 0)).sum())
    note = (f"pod -> trace partition by {machine['file']} (first gpu_spec model with nodes; CPU-only pods -> "
            f"{CPU_PARTITION}): " + (", ".join(f"{k} {v} pod(s)" for k, v in got.items()) or "none"))
    if lost_gpu:
        note += f"; {lost_gpu} GPU pod(s) name no model of the node list (partition left to queue / gpu_spec)"
    if lost_cpu:
        note += f"; {lost_cpu} CPU-only pod(s) and no CPU node in the node list (partition left to queue)"
    return out, note


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
        path : str | os.PathLike[str]
            Pod list CSV.
        **options : Any
            ``cores_per_node``, ``max_nodes``, ``strict``.

        Returns
        -------
        LoadResult
            Job table and load report.

        Notes
        -----
        Raised by the functions it calls, not by its own body:

        - ``TraceError``: See :func:`read_alibaba_pods`.
        """
        return read_alibaba_pods(path, **options)
