"""Resource shares of a node (GPU-sharing pods) -> whole nodes and per-node utilisation of the canonical job table.

Traces of GPU-sharing clusters (Alibaba ``openb_pod_list``, :mod:`dataloaders.alibaba`) give each pod a GPU count
that may be fractional (``gpus`` = 0.25: a quarter of one GPU) or larger than a node holds (``gpus`` = 8 on a
4-GPU node), and a CPU core count (``cpus``). The scheduler allocates whole nodes and the power model
(:func:`power.node.node_power_w`) takes one CPU and one GPU utilisation per node, so a share maps as follows.

Mapping (G = GPUs per node, C = cores per node; u_gpu, u_cpu = the job's recorded utilisation, else the system's
default):

* nodes = max(1, ceil(gpus / G), ceil(cpus / C)): more GPUs (or cores) than one node has span several nodes;
  a fractional share still needs one node.
* GPU share per node s_g = gpus / (nodes x G); CPU share per node s_c = cpus / (nodes x C) (1 when ``cpus`` is
  missing), both clipped to [0, 1].
* gpu_util = s_g x u_gpu and cpu_util = s_c x u_cpu: the node's GPUs (sockets) share one utilisation in the power
  model, so a pod using a quarter of one of four GPUs at u_gpu drives the node's GPU power as if every GPU ran at
  u_gpu / 16. Node DC power is then idle + share x utilisation x (max - idle) per component: power follows the
  share, and the parts of the node the pod does not use stay at idle power.

On a whole-node partition every pod still gets whole nodes to itself, so the idle power of the unused share is
charged to the pod's node and the machine fills faster than a packing scheduler would fill it. On a partition with
``share = true`` pods share nodes: the scheduler places each pod's share by slot beside other pods, and a node
draws its idle power plus its tenants' dynamic power (this mapping's ``share x utilisation`` above idle), capped at
its maximum (:mod:`scheduler_sim.kernel.sharing`). Two pods on one GPU are not modelled apart from two pods on one
node. The run's notes say how many pods were mapped.

References
----------
Weng, Q. et al., "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent",
USENIX ATC 2023 (the trace's ``gpu_milli`` GPU shares).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["apply_node_shares"]


def apply_node_shares(jobs: pd.DataFrame, *, gpus_per_node: int, cores_per_node: int, default_cpu_util: float,
                      default_gpu_util: float) -> tuple[pd.DataFrame, list[str]]:
    """Map the ``gpus`` / ``cpus`` share columns of a job table to nodes and per-node utilisation (module docstring).

    Parameters
    ----------
    jobs : pd.DataFrame
        Shape (n_jobs, >= 13). Canonical job table with an extra ``gpus`` column (GPUs, float, >= 0) and/or
        ``cpus`` column (cores, float, >= 0, NaN when unknown). A table with neither is returned unchanged.
    gpus_per_node : int
        GPUs per node of the system (>= 0; 0 for CPU-only nodes: GPU shares are then ignored, with a note).
    cores_per_node : int
        CPU cores per node (>= 1).
    default_cpu_util : float
        System default CPU utilisation in [0, 1] for jobs with none recorded.
    default_gpu_util : float
        System default GPU utilisation in [0, 1] for jobs with none recorded.

    Returns
    -------
    jobs : pandas.DataFrame
        A copy with ``nodes``, ``cpu_util`` and ``gpu_util`` set from the shares (attrs kept).
    notes : list of str
        What was mapped, for the load report.

    Raises
    ------
    ValueError
        If ``cores_per_node`` < 1 or ``gpus_per_node`` < 0.
    """
    if "gpus" not in jobs.columns and "cpus" not in jobs.columns:
        return jobs, []
    if cores_per_node < 1 or gpus_per_node < 0:
        raise ValueError(f"cores_per_node must be >= 1 and gpus_per_node >= 0, got {cores_per_node}, {gpus_per_node}")
    n = len(jobs)
    g = jobs["gpus"].to_numpy(float) if "gpus" in jobs.columns else np.zeros(n)
    c = jobs["cpus"].to_numpy(float) if "cpus" in jobs.columns else np.full(n, np.nan)
    g = np.where(np.isfinite(g) & (g > 0), g, 0.0)
    c_known = np.isfinite(c) & (c >= 0)
    notes: list[str] = []
    nodes = np.ones(n)
    if gpus_per_node > 0:
        nodes = np.maximum(nodes, np.ceil(g / gpus_per_node))
    elif (g > 0).any():
        notes.append(f"{int((g > 0).sum())} job(s) ask for GPUs but the system's nodes have none: GPU share ignored")
    nodes = np.maximum(nodes, np.where(c_known, np.ceil(c / cores_per_node), 1.0))
    s_g = np.clip(g / (nodes * gpus_per_node), 0.0, 1.0) if gpus_per_node > 0 else np.zeros(n)
    s_c = np.where(c_known, np.clip(c / (nodes * cores_per_node), 0.0, 1.0), 1.0)
    u_c = jobs["cpu_util"].to_numpy(float)
    u_g = jobs["gpu_util"].to_numpy(float)
    u_c = np.where(np.isnan(u_c), default_cpu_util, u_c)
    u_g = np.where(np.isnan(u_g), default_gpu_util, u_g)
    out = jobs.copy()
    out["nodes"] = nodes.astype(np.int64)
    out["cpu_util"] = s_c * u_c
    out["gpu_util"] = s_g * u_g
    out.attrs = dict(jobs.attrs)
    multi = int((nodes > 1).sum())
    frac = int(((g > 0) & (g < gpus_per_node)).sum()) if gpus_per_node > 0 else 0
    notes.append(f"node shares (jobs.shares): {n} job(s) mapped with {gpus_per_node} GPU(s) and {cores_per_node} "
                 f"core(s) per node; {frac} use part of a node's GPUs, {multi} span several nodes; utilisation = "
                 f"share x utilisation, idle power of the unused share stays on the job's node")
    if (~c_known).any():
        notes.append(f"{int((~c_known).sum())} job(s) without a core count: CPU share taken as the whole node")
    return out, notes
