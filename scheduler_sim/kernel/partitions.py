"""Which partition runs each job: the trace's own name for it, mapped onto the system's partitions.

A job runs in one partition (as in Slurm). The trace names it in one of these columns, tried in this order for each
job (the first name that maps to a partition counts; an Alibaba pod's QoS in ``queue`` does not hide its GPU model):

=================  =======================================================================================
``partition``      a loader's own partition column (an extra column of the canonical table)
``queue``          Slurm ``Partition`` (sacct), SWF field 15 (queue), a power dataset's ``partition``
``gpu_spec``       Alibaba GPU pods: the GPU models the pod accepts (``|``-separated; the first that maps)
=================  =======================================================================================

A name maps to the batch partition whose ``trace_names`` list holds it, else to the batch partition of that name,
else to the system's default partition (``default = true``, else the first batch partition). The run's info says
how many jobs each rule placed in each partition (``partition_mapping``), so a trace whose names do not match the
system is visible in the load report, never silent. A system with one partition places every job there and adds
nothing to the info.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import numpy as np
import pandas as pd

from power import System

from ..policies import BasePolicy

__all__ = ["NAME_COLUMNS", "each_policy", "map_partitions", "partition_policies", "partition_pools"]

#: Columns of the job table that may name a job's partition, in the order they are tried.
NAME_COLUMNS = ("partition", "queue", "gpu_spec")


def _lookup(system: System) -> dict[str, int]:
    """Trace name -> batch partition index (``trace_names`` first, then partition names)."""
    out: dict[str, int] = {}
    batch = [p for p in system.partitions if p.kind == "batch"]
    for p in batch:
        out.setdefault(p.name, p.index)
    for p in batch:  # an explicit trace name wins over a partition of the same name
        for n in p.trace_names:
            out[n] = p.index
    return out


def map_partitions(df: pd.DataFrame, system: System, info: dict) -> np.ndarray:
    """The partition index of every job of ``df`` (module docstring).

    Parameters
    ----------
    df : pd.DataFrame
        Canonical job table (:mod:`jobs.table`), ``n`` rows.
    system : System
        The platform and its partitions.
    info : dict
        The run's info; with more than one partition, ``partition_mapping`` is added: one entry per (partition,
        rule) with the job count and up to five trace names.

    Returns
    -------
    ndarray of int64, shape (n,)
        Index into ``system.partitions`` of each job's partition (always a batch partition).
    """
    n = len(df)
    default = next(p.index for p in system.partitions if p.default)
    if not system.partitioned:
        return np.full(n, default, dtype=np.int64)
    lookup = _lookup(system)
    out = np.full(n, default, dtype=np.int64)
    rule = np.full(n, "default", dtype=object)
    name = np.full(n, "", dtype=object)
    todo = np.ones(n, dtype=bool)
    for col in NAME_COLUMNS:
        if col not in df.columns or not todo.any():
            continue
        vals = df[col].astype(str).where(df[col].notna(), "").to_numpy(dtype=object)
        has = todo & (vals != "")
        for i in np.flatnonzero(has):
            cands = vals[i].split("|") if col == "gpu_spec" else [vals[i]]
            hit = next((lookup[c] for c in cands if c in lookup), None)
            if name[i] == "":  # the first name the trace gives, reported with the default
                name[i] = vals[i]
            if hit is not None:
                out[i] = hit
                rule[i] = f"by {col}"
                name[i] = vals[i]
                todo[i] = False
    rows = []
    for p in system.partitions:
        for r in ("by partition", "by queue", "by gpu_spec", "default"):
            m = (out == p.index) & (rule == r)
            if m.any():
                names = sorted({str(x) for x in name[m]})
                rows.append({"partition": p.name, "rule": r, "jobs": int(m.sum()), "trace_names": names[:5]})
    info["partition_mapping"] = rows
    return out


def partition_pools(system: System, reserved: object) -> np.ndarray:
    """Nodes the batch scheduler manages in each partition.

    Parameters
    ----------
    system : System
        The platform.
    reserved : object
        A co-located partition's nodes (a NodePowerProfile: taken out of the batch partitions they lie in), or
        None.

    Returns
    -------
    ndarray of int64, shape (n_partitions,)
        Batch nodes of each partition (0 for a serving partition).
    """
    taken = np.zeros(system.n_nodes, dtype=bool)
    if reserved is not None:
        taken[reserved.nodes] = True
    return np.array([0 if p.kind != "batch" else p.n_nodes - int(taken[p.first_node:p.first_node + p.n_nodes].sum())
                     for p in system.partitions], dtype=np.int64)


def partition_policies(policy: BasePolicy, system: System) -> list:
    """One policy per partition: ``policy`` itself for the first batch partition, a deep copy for each other one
    (its own reservations and state, as Slurm's backfill keeps per partition), None for a serving partition.

    Parameters
    ----------
    policy : BasePolicy
        The run's policy (not yet attached to a platform: copies are made before :meth:`BasePolicy.attach`); None
        (a fork whose policy is set later) gives None everywhere.
    system : System
        The platform.

    Returns
    -------
    list
        ``BasePolicy`` or None per partition, in partition order.
    """
    out: list = []
    first = True
    for p in system.partitions:
        if p.kind != "batch" or policy is None:
            out.append(None)
        elif first:
            out.append(policy)
            first = False
        else:
            out.append(copy.deepcopy(policy))
    return out


def each_policy(policies: list, fn: Callable) -> None:
    """Call ``fn(policy)`` once for every distinct policy of :func:`partition_policies` (None skipped).

    Parameters
    ----------
    policies : list
        ``BasePolicy`` or None per partition.
    fn : Callable
        What to do with each policy (bind the queue names, attach the platform).
    """
    for pol in dict.fromkeys(p for p in policies if p is not None):
        fn(pol)
