"""The canonical job table: one row per batch job, canonical units (seconds, nodes).

Every dataloader returns this table; the scheduler only reads this table. Columns and dtypes are fixed by
:data:`JOB_COLUMNS`; :func:`validate_job_table` checks a table against them.

Times are seconds relative to the trace's time origin (``df.attrs["time_origin_unix_s"]`` holds that origin as a
Unix epoch when the trace gives one, else NaN). A missing value is NaN for floats, ``""`` for strings, and never
0 (DESIGN.md pitfall: "a missing requested time (-1) must not become 0").

Jobs that use a share of a node (GPU-sharing pods with extra ``gpus`` / ``cpus`` columns, e.g. Alibaba
``openb_pod_list``) are mapped before the run by :func:`jobs.shares.apply_node_shares`: ``nodes`` = the whole nodes
the share needs (more GPUs than a node has span several nodes), and ``cpu_util`` / ``gpu_util`` = share of the node
x utilisation, so the node power model (:func:`power.node.node_power_w`) charges idle power plus the share's
dynamic power. Such a job still has its nodes to itself (no two jobs packed on one node).
"""

from __future__ import annotations

import enum

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pandas is imported where a table is built: the schema alone stays light (issue #16 start-up)
    import pandas as pd

__all__ = [
    "JOB_COLUMNS",
    "JobStatus",
    "empty_job_table",
    "validate_job_table",
]


class JobStatus(enum.IntEnum):
    """Recorded final status of a job in the site's trace (not the simulated outcome).

    Values follow the Standard Workload Format v2.2 field 11 (Feitelson, Parallel Workloads Archive):
    0 failed, 1 completed, 5 cancelled; -1 unknown. Partial-execution codes 2-4 are folded by the SWF loader.
    """

    UNKNOWN = -1
    FAILED = 0
    COMPLETED = 1
    CANCELLED = 5


#: Column name -> (numpy/pandas dtype, unit, description). The order is the table's column order.
JOB_COLUMNS: dict[str, tuple[str, str, str]] = {
    "job_id": ("int64", "1", "Job identifier from the trace, unique within the table"),
    "submit_time_s": ("float64", "s", "Submission time relative to the trace time origin"),
    "requested_walltime_s": ("float64", "s", "Requested wall-clock limit; NaN when the trace has none"),
    "nodes": ("int64", "1", "Number of whole nodes requested (>= 1)"),
    "runtime_s": ("float64", "s", "Recorded run time (end - start); NaN when unknown; 0 is legal"),
    "start_time_s": ("float64", "s", "Recorded start time relative to the time origin; NaN when unknown"),
    "end_time_s": ("float64", "s", "Recorded end time relative to the time origin; NaN when unknown"),
    "user": ("object", "", "User name or id as text; '' when unknown"),
    "account": ("object", "", "Account / group / project as text; '' when unknown"),
    "queue": ("object", "", "Queue / partition as text; '' when unknown"),
    "status": ("int8", "1", "Recorded status, a JobStatus value"),
    "cpu_util": ("float64", "1", "Mean CPU utilisation in [0, 1] while running; NaN -> system default"),
    "gpu_util": ("float64", "1", "Mean GPU utilisation in [0, 1] while running; NaN -> system default"),
}


def empty_job_table() -> pd.DataFrame:
    """Return an empty job table with the canonical columns and dtypes.

    Returns
    -------
    pandas.DataFrame
        Zero rows, columns and dtypes of :data:`JOB_COLUMNS`, ``attrs["time_origin_unix_s"] = NaN``.
    """
    import pandas as pd

    df = pd.DataFrame({name: pd.Series([], dtype=dt) for name, (dt, _, _) in JOB_COLUMNS.items()})
    df.attrs["time_origin_unix_s"] = float("nan")
    return df


def validate_job_table(df: pd.DataFrame) -> pd.DataFrame:
    """Check a job table against the canonical schema and return it with canonical dtypes and column order.

    Parameters
    ----------
    df : pd.DataFrame
        Candidate table, shape (n_jobs, >= 13). Extra columns are kept after the canonical ones.

    Returns
    -------
    pandas.DataFrame
        The same rows, canonical columns first, with the dtypes of :data:`JOB_COLUMNS`.

    Raises
    ------
    ValueError
        If a column is missing, ``job_id`` is not unique, ``nodes`` < 1, a time is negative where it must not be
        (``runtime_s`` < 0, ``requested_walltime_s`` <= 0), or a utilisation lies outside [0, 1]. The message names
        the column and the first offending ``job_id``.
    """
    import pandas as pd

    missing = [c for c in JOB_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"job table is missing column(s) {missing}; expected {list(JOB_COLUMNS)}")
    out = df.copy(deep=False)  # columns are replaced below, never written in place
    for name, (dt, _, _) in JOB_COLUMNS.items():
        if dt == "object":
            c = out[name]
            if c.dtype == object and pd.api.types.infer_dtype(c, skipna=False) == "string":
                continue  # already text objects: the conversion below would copy every string unchanged
            if isinstance(c.dtype, pd.StringDtype):
                # one Python string per distinct value (a million rows of a few users: a few objects); missing -> ""
                codes, uniq = pd.factorize(c, sort=False)
                texts = np.append(np.asarray(uniq, dtype=object), "")
                out[name] = pd.Series(texts[codes], index=c.index, dtype=object)
                continue
            out[name] = c.fillna("").astype(str).astype(object)
        else:
            out[name] = out[name].astype(dt)
    extra = [c for c in out.columns if c not in JOB_COLUMNS]
    out = out[list(JOB_COLUMNS) + extra]
    out.attrs = dict(df.attrs)
    out.attrs.setdefault("time_origin_unix_s", float("nan"))

    def _first_bad(mask: np.ndarray, what: str) -> None:
        if mask.any():
            jid = int(out["job_id"].to_numpy()[np.argmax(mask)])
            raise ValueError(f"job table: {what} (first at job_id={jid}, {int(mask.sum())} row(s))")

    _first_bad(out["job_id"].duplicated().to_numpy(), "job_id is not unique")
    _first_bad(out["nodes"].to_numpy() < 1, "nodes must be >= 1")
    _first_bad(out["runtime_s"].to_numpy() < 0, "runtime_s must be >= 0 or NaN")
    _first_bad(out["requested_walltime_s"].to_numpy() <= 0, "requested_walltime_s must be > 0 or NaN")
    for col in ("cpu_util", "gpu_util"):
        v = out[col].to_numpy()
        _first_bad((v < 0) | (v > 1), f"{col} must lie in [0, 1] or be NaN")
    return out
