"""Glue between a run configuration's ``[serving]`` section, the serving engine and the facility simulation.

:func:`prepare_serving` loads the request trace and the deployment, runs the engine and returns the partition's
:class:`~scheduler_sim.simulation.NodePowerProfile`; after the facility simulation, :func:`finish_serving` adds the
IT- and facility-scope energies and the headline metrics; :func:`write_serving_group` writes ``/serving`` into the
run's HDF5 file (layout in docs/output_schema.md).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from .engine import BatchLimits, ServingEngine, ServingResult
from .hardware import Deployment, load_deployment
from .metrics import add_slo, summarize_serving
from .profile import ServingPower, build_power

__all__ = ["ServingOutput", "prepare_serving", "finish_serving", "write_serving_group", "embedded_request_trace"]


def embedded_request_trace() -> Path:
    """Path of the embedded Azure LLM conversation trace (gzip) in ``experiments/data``."""
    from importlib import resources
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
        """The partition's :class:`~scheduler_sim.simulation.NodePowerProfile` (simulation times)."""
        from scheduler_sim.simulation import NodePowerProfile
        return NodePowerProfile(self.nodes, self.power.t_s, self.power.P_node_W, label="serving")


def prepare_serving(sc, system, *, sim_offset_s: float) -> ServingOutput:
    """Load the trace and the deployment of a ``[serving]`` section, run the engine, bin its power.

    Parameters
    ----------
    sc : scheduler_sim.config.ServingConfig
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
    from dataloaders.registry import load_trace

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
    gpn = system.node.gpus_per_node
    n_nodes = -(-dep.n_gpus // gpn) if gpn else 0
    if gpn == 0:
        raise ValueError(f"system {system.name!r} has no GPUs per node; it cannot host serving")
    nodes = np.arange(sc.first_node, sc.first_node + n_nodes, dtype=np.int64)
    if nodes[-1] >= system.n_nodes:
        raise ValueError(f"serving partition nodes {sc.first_node}..{nodes[-1]} exceed the system's "
                         f"{system.n_nodes} nodes")
    eng = ServingEngine(dep, BatchLimits(sc.max_num_seqs, sc.max_num_batched_tokens, sc.chunked_prefill,
                                         sc.prefix_caching, sc.prefix_block_tokens), sc.router_name(),
                        affinity_slack=sc.affinity_slack())
    res = eng.run(req)
    from .engine import RequestStatus

    st = res.requests["status"].to_numpy()
    if (st == RequestStatus.REJECTED).all():
        raise ValueError(f"{path}: every one of the {len(st)} request(s) was rejected by the serving engine (prompt + "
                         f"output tokens never fit one replica's KV cache of {dep.kv_blocks_per_replica} blocks x "
                         f"{dep.block_size} tokens = {dep.kv_blocks_per_replica * dep.block_size} tokens); nothing "
                         f"was served: use a deployment with more KV memory or a trace with shorter requests")
    pw = build_power(res, node=system.node, merge_s=sc.merge_s, offset_s=sim_offset_s, cpu_util=sc.cpu_util)
    origin = float(attrs.get("time_origin_unix_s", float("nan"))) + sc.start_s
    return ServingOutput(res, pw, nodes, sc.ttft_slo_s, sc.tpot_slo_s, loaded.report.to_dict(), path, origin)


def finish_serving(so: ServingOutput, sim_result) -> dict[str, float]:
    """Compute the three energy scopes from the facility result and the headline metrics (also stored in ``so``).

    Parameters
    ----------
    so : ServingOutput
    sim_result : scheduler_sim.simulation.SimulationResult
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
    s["E_partition_node_dc_J"] = float(sim_result.totals["E_partition_node_dc_J"])
    s["engine_wall_time_s"] = float(so.result.info["wall_time_s"])
    s["engine_events"] = float(so.result.info["events"])
    s["engine_events_per_s"] = float(so.result.info["events_per_s"])
    so.summary = s
    return s


_REQ_DOCS = {
    "request_id": ("1", "Request identifier (arrival order)"),
    "arrival_time_s": ("s", "Arrival time, trace time relative to the serving window start"),
    "prompt_tokens": ("1", "Prompt length [tokens]"),
    "output_tokens": ("1", "Generated tokens"),
    "prefix_block_ids": ("", "Prompt KV-block ids, space separated ('' when none)"),
    "replica": ("1", "Replica the router chose"),
    "first_token_s": ("s", "Time the first output token was produced (end of the prefill step; end of the KV "
                           "transfer when disaggregated)"),
    "finish_s": ("s", "Time the last output token was produced"),
    "ttft_s": ("s", "ttft_s = first_token_s - arrival_time_s"),
    "e2e_s": ("s", "e2e_s = finish_s - arrival_time_s"),
    "tpot_s": ("s", "tpot_s = (finish_s - first_token_s) / (output_tokens - 1); NaN for one-token outputs"),
    "preemptions": ("1", "Times the request was preempted (KV cache full) and recomputed"),
    "status": ("1", "1 completed, 2 rejected (can never fit in the KV cache), 0 not done"),
    "cached_prompt_tokens": ("1", "Prompt tokens whose prefill the prefix cache skipped (last prefill)"),
    "decode_replica": ("1", "Replica that decoded the request (= replica unless prefill/decode disaggregated)"),
    "kv_transfer_s": ("s", "End of the KV transfer - end of the prefill (link queueing included); NaN if none"),
    "slo_met": ("1", "completed and ttft_s <= ttft_slo_s and (tpot_s <= tpot_slo_s or one-token output)"),
}


def write_serving_group(f, so: ServingOutput) -> None:
    """Write ``/serving`` (requests, power series, summary) into an open HDF5 file (docs/output_schema.md).

    Parameters
    ----------
    f : h5py.File
        The run file being written.
    so : ServingOutput
        After :func:`finish_serving`.
    """
    import h5py

    from scheduler_sim.hdf5io import _dataset

    g = f.create_group("serving")
    dep: Deployment = so.result.deployment
    g.attrs["deployment_json"] = dep.model_dump_json()
    g.attrs["router"] = so.result.router
    g.attrs["limits_json"] = json.dumps(so.result.limits.__dict__, sort_keys=True)
    g.attrs["ttft_slo_s"] = float(so.ttft_slo_s)
    g.attrs["tpot_slo_s"] = float(so.tpot_slo_s)
    g.attrs["trace"] = str(so.trace_path)
    g.attrs["time_origin_unix_s"] = float(so.time_origin_unix_s)
    g.attrs["load_report_json"] = json.dumps(so.load_report, sort_keys=True, default=str)
    g.attrs["info_json"] = json.dumps({k: v for k, v in so.result.info.items() if k not in ("wall_time_s",
                                                                                           "events_per_s")},
                                      sort_keys=True, default=str)
    rq = g.create_group("requests")
    df = so.requests if so.requests is not None else so.result.requests
    for col in df.columns:
        units, desc = _REQ_DOCS.get(col, ("1", ""))
        if col == "prefix_block_ids":
            data = np.array([" ".join(str(b) for b in x) for x in df[col]], dtype=h5py.string_dtype("utf-8"))
        else:
            data = df[col].to_numpy()
        _dataset(rq, col, data, units, desc)
    pw = g.create_group("power")
    _dataset(pw, "time_s", so.power.t_s, "s", "Start of each profile row (simulation time); the last row holds "
                                             "to the end of the run")
    _dataset(pw, "P_gpu_W", so.power.P_gpu_W, "W", "Power of each GPU of each replica, shape (n_rows, "
                                                   "n_replicas); exact average over the row")
    _dataset(pw, "P_node_W", so.power.P_node_W, "W", "DC power of each partition node, shape (n_rows, n_nodes)")
    _dataset(pw, "nodes", so.nodes, "1", "System node index of each partition node")
    if so.power.P_link_W is not None and so.result.deployment.disaggregation is not None:
        _dataset(pw, "P_link_W", so.power.P_link_W, "W", "KV-transfer link power charged to each replica's nodes, "
                                                         "shape (n_rows, n_replicas); included in P_node_W")
    if so.power.P_fan_W is not None:
        _dataset(pw, "P_fan_W", so.power.P_fan_W, "W", "Server fan power of each partition node (air-cooled "
                                                       "servers), shape (n_rows, n_nodes); IT power (The Green "
                                                       "Grid: fans inside IT equipment are IT), included in P_node_W")
    pw.attrs["server_cooling"] = so.result.deployment.server.cooling
    pw.attrs["merge_s"] = so.power.merge_s
    pw.attrs["node_baseline_W"] = so.power.node_baseline_W
    sg = g.create_group("summary")
    for k, v in so.summary.items():
        sg.attrs[k] = float(v)
