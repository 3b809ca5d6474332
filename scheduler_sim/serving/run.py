"""Glue between a run configuration's ``[serving]`` section, the serving engine and the facility simulation.

:func:`prepare_serving` loads the request trace and the deployment, runs the engine and returns the partition's
:class:`~scheduler_sim.kernel.simulation.NodePowerProfile`; after the facility simulation, :func:`finish_serving` adds the
IT- and facility-scope energies and the headline metrics; :func:`scheduler_sim.io.hdf5.write_serving_group` writes
``/serving`` into the run's HDF5 file (layout in docs/output_schema.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from dataloaders.registry import load_trace

from power import System

from ..kernel.simulation import NodePowerProfile
from .engine import BatchLimits, RequestStatus, ServingEngine, ServingResult
from .hardware import load_deployment
from .metrics import add_slo, summarize_serving
from .profile import ServingPower, build_power

__all__ = ["ServingOutput", "prepare_serving", "finish_serving", "embedded_request_trace", "serving_partition"]


def embedded_request_trace() -> Path:
    """Path of the embedded Azure LLM conversation trace (gzip) in ``experiments/data``."""
    return Path(str(resources.files("experiments") / "data" / "AzureLLMInferenceTrace_conv.csv.gz"))


@dataclass
class ServingOutput:
    """Everything the serving partition produced (``summary`` is filled by :func:`finish_serving`)."""

    result: ServingResult
    power: ServingPower
    nodes: np.ndarray
    ttft_slo_s: float
    tpot_slo_s: float
    load_report: dict
    trace_path: Path
    time_origin_unix_s: float
    requests: pd.DataFrame | None = None
    summary: dict = field(default_factory=dict)

    def profile(self):
        """The partition's :class:`~scheduler_sim.kernel.simulation.NodePowerProfile` (simulation times)."""
        return NodePowerProfile(self.nodes, self.power.t_s, self.power.P_node_W, label="serving")


def prepare_serving(sc, system, *, sim_offset_s: float) -> ServingOutput:
    """Load the trace and the deployment of a ``[serving]`` section, run the engine, bin its power.

    Parameters
    ----------
    sc : scheduler_sim.app.config.ServingConfig
        The section.
    system : power.System
        The facility's platform (node baseline, GPUs per node, number of nodes).
    sim_offset_s : float
        Simulation time of trace time 0 [s].

    Returns
    -------
    ServingOutput

    Raises
    ------
    ValueError
        Deployment that does not fit the partition or the system, empty trace window, bad file, every request
        rejected by the engine (nothing served: the command exits non-zero), or a power profile too large to hold.
    dataloaders.report.TraceError
        From the request loader.
    """
    path = Path(sc.trace) if sc.trace else embedded_request_trace()
    loaded = load_trace(path, format=sc.format or None, strict=sc.strict, **dict(sc.loader_options))
    if getattr(loaded.report, "loader", "") == "swf" or "arrival_time_s" not in loaded.jobs.columns:
        raise ValueError(f"{path}: serving.format must name a request-trace loader (azure_llm, mooncake, "
                         f"request_csv), not a batch loader")
    req = loaded.jobs
    t = req["arrival_time_s"].to_numpy(float)
    keep = t >= sc.start_s
    if sc.duration_s > 0:
        keep &= t < sc.start_s + sc.duration_s
    req = req.loc[keep].reset_index(drop=True)
    if len(req) == 0:
        raise ValueError(f"{path}: no request in the serving window [{sc.start_s}, {sc.start_s + sc.duration_s}) s")
    attrs = dict(loaded.jobs.attrs)
    req["arrival_time_s"] = req["arrival_time_s"] - sc.start_s
    req.attrs = attrs
    dep = load_deployment(sc.deployment)
    part = serving_partition(system, sc.first_node)
    node = part.node if part is not None else system.node
    gpn = node.gpus_per_node
    n_nodes = -(-dep.n_gpus // gpn) if gpn else 0
    if gpn == 0:
        raise ValueError(f"system {system.name!r} has no GPUs per node; it cannot host serving")
    first = part.first_node if part is not None else sc.first_node
    last = part.first_node + part.n_nodes if part is not None else system.n_nodes
    if first + n_nodes > last:  # checked before anything is sized from the deployment
        where = f"partition {part.name!r} ({part.n_nodes} nodes)" if part is not None else \
            f"the system's {system.n_nodes} nodes"
        raise ValueError(f"{sc.deployment}: serving partition nodes {first}..{first + n_nodes - 1} "
                         f"({dep.n_gpus} GPUs) exceed {where}")
    nodes = np.arange(first, first + n_nodes, dtype=np.int64)
    eng = ServingEngine(dep, BatchLimits(sc.max_num_seqs, sc.max_num_batched_tokens, sc.chunked_prefill,
                                         sc.prefix_caching, sc.prefix_block_tokens), sc.router_name(),
                        affinity_slack=sc.affinity_slack())
    res = eng.run(req)
    st = res.requests["status"].to_numpy()
    if (st == RequestStatus.REJECTED).all():
        raise ValueError(f"{path}: every one of the {len(st)} request(s) was rejected by the serving engine (prompt + "
                         f"output tokens never fit one replica's KV cache of {dep.kv_blocks_per_replica} blocks x "
                         f"{dep.block_size} tokens = {dep.kv_blocks_per_replica * dep.block_size} tokens); nothing "
                         f"was served: use a deployment with more KV memory or a trace with shorter requests")
    pw = build_power(res, node=node, merge_s=sc.merge_s, offset_s=sim_offset_s, cpu_util=sc.cpu_util)
    origin = float(attrs.get("time_origin_unix_s", float("nan"))) + sc.start_s
    return ServingOutput(res, pw, nodes, sc.ttft_slo_s, sc.tpot_slo_s, loaded.report.to_dict(), path, origin)


def serving_partition(system: System, first_node: int) -> object:
    """The partition that hosts a co-located serving deployment, or None on a one-partition system.

    On a one-partition system (every shipped system of before partitions) ``[serving] first_node`` places the
    deployment as it always did, on consecutive nodes taken out of the batch pool. A partitioned system hosts it on
    its ``kind = "serving"`` partition, from that partition's first node.

    Parameters
    ----------
    system : System
        The platform.
    first_node : int
        ``[serving] first_node`` of the run (must be 0 on a partitioned system: the partition places it).

    Returns
    -------
    object
        The serving partition (a power.system.Partition); None on a one-partition system.

    Raises
    ------
    ValueError
        On a partitioned system without a serving partition (with the migration hint), with more than one, or
        with ``first_node`` set.
    """
    if not system.partitioned:
        return None
    parts = [p for p in system.partitions if p.kind == "serving"]
    if not parts:
        raise ValueError(f"system {system.name!r} has partitions ({', '.join(p.name for p in system.partitions)}) "
                         f"but none of kind 'serving': [serving] now runs on a partition; add to the system file "
                         f"[[partition]] name = \"serving\", kind = \"serving\", node_type = \"h100-sxm-8gpu\", "
                         f"nodes = N, nodes_per_rack = M (and drop [serving] first_node)")
    if len(parts) > 1:
        raise ValueError(f"system {system.name!r} has {len(parts)} serving partitions; one deployment runs on one")
    if first_node != 0:
        raise ValueError(f"[serving] first_node = {first_node}: on a partitioned system the deployment runs from the "
                         f"first node of partition {parts[0].name!r}; remove first_node")
    return parts[0]


def finish_serving(so: ServingOutput, sim_result) -> dict[str, float]:
    """Compute the three energy scopes from the facility result and the headline metrics (also stored in ``so``).

    Parameters
    ----------
    so : ServingOutput
    sim_result : scheduler_sim.kernel.simulation.SimulationResult
        The facility run that carried the partition.

    Returns
    -------
    dict of str -> float
        :func:`scheduler_sim.serving.metrics.summarize_serving` plus ``PUE_run``.
    """
    t_final = float(sim_result.info["t_final_s"])
    E_gpu = so.power.gpu_energy_J(t_final)
    E_it = float(sim_result.totals["E_partition_node_it_J"])
    pue = float(sim_result.summary.get("PUE", float("nan")))
    E_fac = E_it * pue if math.isfinite(pue) else float("nan")
    so.requests = add_slo(so.result.requests, so.ttft_slo_s, so.tpot_slo_s)
    s = summarize_serving(so.requests, so.result.deployment.n_gpus, {"E_gpu_J": E_gpu, "E_it_J": E_it,
                                                                    "E_facility_J": E_fac})
    s["PUE_run"] = pue
    s["E_kv_transfer_J"] = so.power.link_energy_J(t_final)
    s["E_server_fan_J"] = so.power.fan_energy_J(t_final)
    s["kv_transfers"] = float(so.result.info.get("kv_transfers", 0))
    s["prefix_hit_tokens"] = float(so.result.info.get("prefix_hit_tokens", 0))
    s["recompute_cached_tokens"] = float(so.result.info.get("recompute_cached_tokens", 0))
    s["E_partition_node_dc_J"] = float(sim_result.totals["E_partition_node_dc_J"])
    s["engine_wall_time_s"] = float(so.result.info["wall_time_s"])
    s["engine_events"] = float(so.result.info["events"])
    s["engine_events_per_s"] = float(so.result.info["events_per_s"])
    so.summary = s
    return s
