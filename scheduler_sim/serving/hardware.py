"""What is served on what: model, GPU type and deployment descriptions, read from TOML data files.

A *deployment* is a model x a GPU type x ``replicas`` x tensor-parallel degree ``tensor_parallel``; each replica
holds a full copy of the weights split over its ``tensor_parallel`` GPUs. Shipped descriptions live in
``scheduler_sim/serving/data/{models,gpus}/<name>.toml`` (each file cites its datasheet); a deployment file names
them (or gives a path) and may override the roofline / power constants of :class:`RooflineConstants`.
"""

from __future__ import annotations

import math
import tomllib
from importlib import resources
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from jobs.textfiles import read_utf8, toml_loads

__all__ = ["ModelSpec", "GPUSpec", "RooflineConstants", "Disaggregation", "ServerCooling", "Deployment",
           "load_deployment", "load_model", "load_gpu", "DATA_DIR"]

#: Folder of the shipped model and GPU descriptions.
DATA_DIR = Path(__file__).resolve().parent / "data"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ModelSpec(_Strict):
    """A dense decoder-only transformer, as far as serving cost is concerned.

    Attributes
    ----------
    name : str
    parameters : float
        Number of parameters (weights), > 0.
    layers, hidden_size, attention_heads, kv_heads, head_dim : int
        Architecture (grouped-query attention: ``kv_heads`` <= ``attention_heads``).
    bytes_per_parameter, bytes_per_kv_element : float
        Storage of one weight / one KV-cache element [B] (2 for BF16).
    """

    name: str
    parameters: float = Field(gt=0, description="Number of weights")
    layers: int = Field(ge=1)
    hidden_size: int = Field(ge=1)
    attention_heads: int = Field(ge=1)
    kv_heads: int = Field(ge=1)
    head_dim: int = Field(ge=1)
    bytes_per_parameter: float = Field(2.0, gt=0, description="Bytes per weight [B]")
    bytes_per_kv_element: float = Field(2.0, gt=0, description="Bytes per KV-cache element [B]")

    @property
    def weight_bytes(self) -> float:
        """Bytes of all weights [B] = parameters x bytes_per_parameter."""
        return self.parameters * self.bytes_per_parameter

    @property
    def kv_bytes_per_token(self) -> float:
        """KV-cache bytes per token [B] = 2 (K, V) x layers x kv_heads x head_dim x bytes_per_kv_element (GQA)."""
        return 2.0 * self.layers * self.kv_heads * self.head_dim * self.bytes_per_kv_element

    @property
    def attention_width(self) -> int:
        """Width of the query projection, attention_heads x head_dim (sets attention FLOPs)."""
        return self.attention_heads * self.head_dim


class GPUSpec(_Strict):
    """One GPU type (datasheet figures; see the data file for sources).

    Attributes
    ----------
    peak_flops : float
        Dense BF16/FP16 tensor throughput [FLOP/s].
    hbm_bandwidth_B_s : float
        Peak HBM bandwidth [B/s].
    hbm_capacity_B : float
        HBM capacity [B].
    idle_power_W, max_power_W : float
        Board power when idle and at the power limit [W].
    link_bandwidth_B_s : float
        GPU-to-GPU (NVLink) bandwidth in one direction [B/s], used for tensor-parallel all-reduce.
    p_active : float
        Share of the idle-to-max range drawn whenever the GPU runs a step (clocks up, SMs and HBM awake), added to
        the utilisation terms of :class:`RooflineConstants`; 0 unless fitted (:mod:`scheduler_sim.serving.calibrate`).
    k_compute, k_memory : float or None
        This GPU's fitted power constants; None uses :class:`RooflineConstants`' (a deployment's ``[constants]``
        table, when it sets them, wins over both).
    network_bandwidth_B_s : float or None
        Inter-node network bandwidth per GPU, one direction [B/s], for training jobs (:mod:`jobs.training`);
        None uses one 400 Gb/s NIC per GPU (50e9).
    """

    name: str
    peak_flops: float = Field(gt=0)
    hbm_bandwidth_B_s: float = Field(gt=0)
    hbm_capacity_B: float = Field(gt=0)
    idle_power_W: float = Field(ge=0)
    max_power_W: float = Field(gt=0)
    link_bandwidth_B_s: float = Field(gt=0)
    p_active: float = Field(0.0, ge=0, le=1)
    k_compute: float | None = Field(None, ge=0)
    k_memory: float | None = Field(None, ge=0)
    network_bandwidth_B_s: float | None = Field(None, gt=0)


class RooflineConstants(_Strict):
    """Efficiency and power-calibration constants of the step model (:mod:`scheduler_sim.serving.roofline`).

    Attributes
    ----------
    eta_compute : float
        Achievable fraction of ``peak_flops`` in large GEMMs (model FLOPs utilisation in prefill). Default 0.6:
        ASSUMPTION within the 50-70 % prefill MFU reported for vLLM / TensorRT-LLM on A100 / H100 (e.g. the
        Sarathi-Serve and Vidur papers, Agrawal et al., OSDI 2024 / MLSys 2024).
    eta_memory : float
        Achievable fraction of HBM bandwidth in decode (model bandwidth utilisation, MBU). Default 0.8: ASSUMPTION
        (Databricks, "LLM Inference Performance Engineering: Best Practices", 2023, defines MBU and shows
        well-tuned decode kernels approaching but not reaching peak bandwidth).
    step_overhead_s : float
        Fixed time per engine step (scheduler pass, kernel launches, synchronisation) [s]. Default 3.125 ms: fitted
        with ``seq_overhead_s`` to the median inter-token latency of the ML.ENERGY Benchmark v3.0 H100 rows of
        Llama 3.3 70B on 4 GPUs, max_num_seqs 8-768 (vLLM 0.11.1;
        ``tests/data/mlenergy_v3_h100_llama-3.3-70b_lm-arena-chat.csv``), by linear least squares
        (:func:`scheduler_sim.serving.calibrate.fit_step_time`; it was a 2 ms ASSUMPTION before).
    seq_overhead_s : float
        Fixed time per sequence in a step [s]: scheduling, input preparation, sampling and output processing of
        each running sequence. Default 50.17 us: fitted with ``step_overhead_s`` (same data and fit). It is a software
        and host cost of the engine, the same for every model and tensor-parallel degree (every rank handles every
        sequence), which is what lets the fit transfer. The data cannot tell it from a lower bandwidth of the
        attention kernels: the mean context is 405-414 tokens on every row, so KV bytes and sequence count grow
        together; the per-sequence form was chosen because the step time is low by about the same share on one GPU
        and on four, for short- and long-output models (issue #24), which a per-KV-byte cost would not give.
    allreduce_latency_s : float
        Latency of one tensor-parallel all-reduce [s]; two per layer per step. Default 10 us: ASSUMPTION
        (NCCL small-message all-reduce latency within one NVLink node is of the order of 10 us).
    activation_bytes : float
        Bytes per activation element in the all-reduce [B] (2, BF16).
    k_compute, k_memory : float
        Power calibration: GPU power = idle + (max - idle) x min(1, k_compute a_c + k_memory a_m), with a_c, a_m
        the step's achieved fractions of peak FLOP/s and of peak bandwidth. Calibrated to the V100 measurements of
        DESIGN.md "Reference figures" (prefill 270-300 W, decode 180-200 W on a 300 W board, idle 40 W):
        prefill a_c = eta_compute = 0.6 at (285 - 40)/(300 - 40) = 0.942 of the range -> k_compute = 1.57; decode
        a_m = eta_memory = 0.8 at (190 - 40)/(300 - 40) = 0.577 -> k_memory = 0.72. At the roofline ridge both
        terms add and the clip at max power is reached, so power is *not monotonic* in batch size (it peaks near
        the ridge and falls back to the compute-bound level beyond it), as the ML.ENERGY benchmark observes on
        H100 / B200 (Chung et al., "Where Do the Joules Go?", arXiv 2601.22076, 2026; ML.ENERGY Leaderboard v3.0).
    """

    eta_compute: float = Field(0.6, gt=0, le=1)
    eta_memory: float = Field(0.8, gt=0, le=1)
    step_overhead_s: float = Field(3.125e-3, ge=0)
    seq_overhead_s: float = Field(50.17e-6, ge=0)
    allreduce_latency_s: float = Field(10e-6, ge=0)
    activation_bytes: float = Field(2.0, gt=0)
    k_compute: float = Field(1.57, ge=0)
    k_memory: float = Field(0.72, ge=0)


class Disaggregation(_Strict):
    """Prefill/decode disaggregation (Splitwise, Patel et al., ISCA 2024; DistServe, Zhong et al., OSDI 2024).

    Replicas ``0 .. prefill_replicas - 1`` only prefill; the others only decode. After its prefill a request's
    prompt KV cache is sent to a decode replica over the replicas' links: the ``tensor_parallel`` GPUs of the
    sender each send their KV shard over their own link, so the transfer takes
    ``KV bytes of the prompt / (tensor_parallel x kv_link_bandwidth_B_s) + kv_link_latency_s``. Transfers from one
    prefill replica are serialised (first-come first-served on its links).

    Attributes
    ----------
    prefill_replicas : int
        Replicas of the prefill pool (>= 1, < ``Deployment.replicas``); the rest form the decode pool.
    kv_link_bandwidth_B_s : float
        Bandwidth of one GPU's link in one direction [B/s]. Default 50e9 = InfiniBand NDR 400 Gb/s (NVIDIA
        ConnectX-7, one adapter per GPU as in DGX H100 and the Splitwise testbed).
    kv_link_latency_s : float
        Fixed latency per transfer [s]. Default 10 us: ASSUMPTION (RDMA write through one NDR switch and its
        completion notification: a few us of hardware latency, of the order of NCCL point-to-point small-message
        latency; software KV-transfer stacks may add more, set it in the deployment file).
    kv_link_power_W : float
        Power of one GPU's link while it transfers [W], charged to the sending and the receiving replica's nodes
        half each. Default 18 W = two 400 Gb/s OSFP transceivers (both link ends) at 9 W typical (NVIDIA
        MMS4X00-NS400 product specification). ASSUMPTION: charged only during transfers, an upper bound on the
        incremental power (optics draw most of it when idle too, which the node baseline already holds).
    """

    prefill_replicas: int = Field(ge=1)
    kv_link_bandwidth_B_s: float = Field(50e9, gt=0)
    kv_link_latency_s: float = Field(10e-6, ge=0)
    kv_link_power_W: float = Field(18.0, ge=0)


class ServerCooling(_Strict):
    """How the serving servers are cooled, and the fan power of air-cooled ones.

    Air-cooled GPU servers move their heat with their own fans, which draw 9-15 % of server power in public
    measurements (../shared/notes/published-facility-figures.md, "air-cooled GPU server fans"). Fans inside IT
    equipment are IT power (The Green Grid, PUE: a comprehensive examination of the metric, White Paper 49, 2012),
    so their power is added to the node's DC power, and so to IT power, never to cooling.

    Model: a constant share ``fan_share`` of the server's power, ``P_fan = fan_share / (1 - fan_share) x P_rest``
    with ``P_rest`` the node's power without fans (GPUs, host, links). A simplification: real fan controllers follow
    component temperatures, so the share moves with load; the public figures give a share, not a fan curve.

    Attributes
    ----------
    cooling : {"liquid", "air"}
        ``"liquid"`` (default): cold plates, no server fans modelled (HPE Cray EX is fanless). ``"air"``: fans.
    fan_share : float
        Share of server power drawn by the fans when air-cooled, in [0, 0.5). Default 0.12: ASSUMPTION, the middle
        of the published 9-15 %.
    """

    cooling: Literal["liquid", "air"] = "liquid"
    fan_share: float = Field(0.12, ge=0, lt=0.5)

    @property
    def fan_factor(self) -> float:
        """Fan power per watt of the rest of the server, ``fan_share / (1 - fan_share)`` (0 when liquid-cooled)."""
        return self.fan_share / (1.0 - self.fan_share) if self.cooling == "air" else 0.0


class Deployment(_Strict):
    """A model served by ``replicas`` copies, each on ``tensor_parallel`` GPUs of one type.

    Attributes
    ----------
    name : str
    model : ModelSpec
    gpu : GPUSpec
    replicas : int
        Independent engine instances (>= 1).
    tensor_parallel : int
        GPUs per replica (>= 1).
    gpu_memory_utilization : float
        Fraction of HBM the engine may use for weights + KV cache (vLLM ``gpu_memory_utilization``, default 0.9).
    block_size : int
        Tokens per KV-cache block (vLLM default 16).
    constants : RooflineConstants
    disaggregation : Disaggregation or None
        Separate prefill and decode pools (``[disaggregation]`` table of the deployment file); None = every
        replica prefills and decodes.
    server : ServerCooling
        Server cooling and fan power (``[server]`` table); default liquid-cooled, no fans.
    """

    name: str
    model: ModelSpec
    gpu: GPUSpec
    replicas: int = Field(1, ge=1)
    tensor_parallel: int = Field(1, ge=1)
    gpu_memory_utilization: float = Field(0.9, gt=0, le=1)
    block_size: int = Field(16, ge=1)
    constants: RooflineConstants = RooflineConstants()
    disaggregation: Disaggregation | None = None
    server: ServerCooling = ServerCooling()

    @model_validator(mode="after")
    def _pools(self) -> "Deployment":
        d = self.disaggregation
        if d is not None and d.prefill_replicas >= self.replicas:
            raise ValueError(f"disaggregation.prefill_replicas ({d.prefill_replicas}) must be below replicas "
                             f"({self.replicas}): at least one decode replica is needed")
        return self

    @property
    def kv_transfer_s(self) -> float:
        """Time to send the KV cache of one prompt token [s] (disaggregated deployments; 0 otherwise)."""
        d = self.disaggregation
        if d is None:
            return 0.0
        return self.model.kv_bytes_per_token / (self.tensor_parallel * d.kv_link_bandwidth_B_s)

    @property
    def n_gpus(self) -> int:
        """GPUs of the deployment = replicas x tensor_parallel."""
        return self.replicas * self.tensor_parallel

    @property
    def kv_blocks_per_replica(self) -> int:
        """KV-cache blocks of one replica: floor((TP x HBM x utilisation - weights) / (block_size x KV bytes)).

        Raises
        ------
        ValueError
            If the weights do not fit in the replica's usable memory.
        """
        usable = self.tensor_parallel * self.gpu.hbm_capacity_B * self.gpu_memory_utilization
        free = usable - self.model.weight_bytes
        if free <= 0:
            raise ValueError(f"deployment {self.name!r}: {self.model.name} weights ({self.model.weight_bytes / 1e9:.1f} "
                             f"GB) do not fit in {self.tensor_parallel} x {self.gpu.name} at "
                             f"{self.gpu_memory_utilization:.0%} memory ({usable / 1e9:.1f} GB)")
        return int(math.floor(free / (self.block_size * self.model.kv_bytes_per_token)))


def _read_toml(path: Path, what: str) -> dict:

    try:
        return toml_loads(read_utf8(path, f"{what} file"), path, f"{what} file")
    except FileNotFoundError:
        raise ValueError(f"{what} file {path} not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path}: not valid TOML: {exc}") from None


def _resolve(name_or_path: str, kind: str, base: Path | None) -> Path:
    p = Path(name_or_path)
    if p.suffix == ".toml":
        return p if p.is_absolute() or base is None else (base / p)
    cand = DATA_DIR / kind / f"{name_or_path}.toml"
    if not cand.is_file():
        known = sorted(x.stem for x in (DATA_DIR / kind).glob("*.toml"))
        raise ValueError(f"unknown {kind[:-1]} {name_or_path!r}; shipped: {', '.join(known)} (or give a .toml path)")
    return cand


def _validate(cls, data: dict, source: str):
    try:
        return cls.model_validate(data)
    except ValidationError as exc:
        lines = [f"{source}: invalid {cls.__name__}"]
        for e in exc.errors():
            lines.append(f"  {'.'.join(str(x) for x in e['loc'])}: {e['msg']} (got {e.get('input')!r})")
        raise ValueError("\n".join(lines)) from None


def load_model(name_or_path: str, base: Path | None = None) -> ModelSpec:
    """Load a model description by shipped name (e.g. ``"llama-3-8b"``) or TOML path.

    Parameters
    ----------
    name_or_path : str
        A shipped model name or a TOML path.
    base : Path | None
        Folder a relative path is read from (the deployment file's); None: the working directory.

    Returns
    -------
    ModelSpec
        The validated model.

    Notes
    -----
    Raises ValueError for an unknown name, a missing file, bad TOML or an invalid / unknown field (the message names
    file and field).
    """
    p = _resolve(name_or_path, "models", base)
    return _validate(ModelSpec, _read_toml(p, "model"), str(p))


def load_gpu(name_or_path: str, base: Path | None = None) -> GPUSpec:
    """Load a GPU description by shipped name (e.g. ``"h100-sxm"``) or TOML path.

    Parameters
    ----------
    name_or_path : str
        A shipped GPU name (``scheduler_sim/serving/data/gpus``) or a TOML path, relative to ``base``.
    base : Path | None
        The deployment file's folder (None: the working directory).

    Returns
    -------
    GPUSpec
        The validated GPU; the file's ``[node]`` table (a node type, :mod:`power.nodetypes`) is not read here.

    Raises
    ------
    ValueError
        Unknown name, missing file, bad TOML, an invalid / unknown field, or a catalogue entry that is not a GPU
        (``kind = "cpu-node"``).
    """
    p = _resolve(name_or_path, "gpus", base)
    data = _read_toml(p, "GPU")
    if data.get("kind", "gpu") != "gpu":
        raise ValueError(f"{p}: is a {data['kind']} entry of the hardware catalogue, not a GPU")
    data.pop("kind", None)
    data.pop("node", None)  # the node type built on this GPU (power/nodetypes.py), not a GPU figure
    return _validate(GPUSpec, data, str(p))


def shipped_deployments_dir() -> Path:
    """Folder of the shipped deployment TOMLs (``experiments/serving``)."""
    return Path(str(resources.files("experiments") / "serving"))


def resolve_deployment(name_or_path: str | Path) -> Path:
    """The deployment file a ``serving.deployment`` value names.

    A ``.toml`` path, an existing file, or the name of a shipped deployment (``"llama3-70b_h100_tp4x2"`` ->
    ``experiments/serving/llama3-70b_h100_tp4x2.toml``).

    Parameters
    ----------
    name_or_path : str | Path
        The ``serving.deployment`` value.

    Returns
    -------
    Path
        The deployment file.

    Raises
    ------
    ValueError
        A name that is neither an existing file nor a shipped deployment (the message lists the shipped names).
    """
    p = Path(name_or_path)
    if p.suffix == ".toml" or p.is_file():
        return p
    cand = shipped_deployments_dir() / f"{p.name}.toml"
    if p.name == str(name_or_path) and cand.is_file():
        return cand
    known = sorted(x.stem for x in shipped_deployments_dir().glob("*.toml"))
    raise ValueError(f"deployment {str(name_or_path)!r}: no such file and no shipped deployment of that name; "
                     f"shipped: {', '.join(known)} (or give a .toml path)")


def load_deployment(path: str | Path) -> Deployment:
    """Load a deployment TOML.

    Keys: ``name``, ``model`` and ``gpu`` (shipped names or paths relative to the file), ``replicas``,
    ``tensor_parallel``, optional ``gpu_memory_utilization``, ``block_size``, a ``[constants]`` table overriding
    :class:`RooflineConstants`, a ``[disaggregation]`` table (:class:`Disaggregation`) and a ``[server]`` table
    (:class:`ServerCooling`).

    Parameters
    ----------
    path : str | Path
        The file, or a shipped deployment's name (:func:`resolve_deployment`).

    Returns
    -------
    Deployment
        The validated deployment, its model and GPU loaded.

    Raises
    ------
    ValueError
        Missing file, bad TOML, unknown model / GPU, or an invalid field (message names the file and the field).
    """
    path = resolve_deployment(path)
    data = _read_toml(path, "deployment")
    for key in ("model", "gpu"):
        if key not in data or not isinstance(data[key], str):
            raise ValueError(f"{path}: field {key!r} missing; expected a shipped name or a .toml path")
    data["model"] = load_model(data["model"], path.parent)
    data["gpu"] = load_gpu(data["gpu"], path.parent)
    data.setdefault("name", path.stem)
    return _validate(Deployment, data, str(path))
