"""Large-model training jobs: iteration time, pipeline bubble, memory feasibility, phase power, checkpoints,
failures and goodput (issue #24 item 1).

A training job is a model (:class:`TrainingModel`), a parallel layout (:class:`ParallelLayout`) and a GPU type
(:class:`TrainingGPU`, read from the node-type catalogue ``scheduler_sim/serving/data/gpus/*.toml``). SI units
inside (s, B, B/s, FLOP, FLOP/s, W, J).

Iteration (one optimizer step; ``N_gpu = tp pp dp`` GPUs, ``ep`` splits the experts inside ``dp``):

* tokens ``T = dp m b s`` (``m`` micro-batches of ``b`` sequences of ``s`` tokens per data-parallel rank);
* model FLOPs ``F = (6 N_act + 12 L h s) T`` (Chowdhery et al., PaLM, arXiv 2204.02311, appendix B: ``6 N`` per
  token for the weights, forward and backward, plus ``12 L H Q T`` for attention, ``H Q = h``), which is what MFU
  counts; the hardware also runs the recomputation: ``+ 2 N_act T`` (one extra forward) with full recompute,
  ``+ 4 L h s T`` (the attention core's forward) with selective recompute (Korthikanti et al., "Reducing Activation
  Recomputation in Large Transformer Models", MLSys 2023);
* compute time of the pipeline's work ``t_c = F_hw / (N_gpu F_pk eta)``, ``eta`` the achievable fraction of peak of
  large BF16 GEMMs (:class:`TrainingConstants`);
* tensor-parallel all-reduces: 4 per layer and micro-batch (2 forward, 2 backward; +2 with full recompute) of
  ``b s h`` activations, ring ``2 (tp-1)/tp`` of the message over the intra-node link (Shoeybi et al., Megatron-LM,
  arXiv 1909.08053; Patarasuk and Yuan, JPDC 2009);
* pipeline p2p: per micro-batch one activation send forward and one gradient send backward of ``b s h`` at each of
  the ``pp - 1`` stage boundaries, each tensor-parallel rank sending its ``1 / tp`` share over its own NIC, on the
  critical path once per micro-batch: ``2 b s h B_act / (tp B_net)`` (inter-node: stages sit on different nodes);
* expert all-to-all (MoE, ``ep > 1``): 4 per MoE layer and micro-batch (dispatch and combine, forward and
  backward) of ``b s k h`` (``k`` = top-k), ``(ep-1)/ep`` of it leaving the GPU; over the intra-node link when
  ``tp ep <= gpus_per_node``, else the network (Lepikhin et al., GShard, arXiv 2006.16668);
* data-parallel gradient reduction: ring all-reduce (ZeRO 0-1) or reduce-scatter + all-gather (ZeRO 2-3, the same
  bytes) of the GPU's gradient shard ``2 Phi`` bytes, ``2 (dp-1)/dp`` of it over the network once per iteration
  (ZeRO-3 adds the parameter all-gathers of forward and backward: x 1.5; Rajbhandari et al., ZeRO, SC20);
* each communication is exposed for ``1 - overlap`` of its time (:class:`TrainingConstants`);
* pipeline bubble: the pipelined work ``W = t_c + exposed TP, PP and EP communication`` is stretched by the idle
  slots of the schedule, ``t_bubble = r W`` with ``r = (p-1)/m`` (1F1B: Narayanan et al., SC21, eq. 1),
  ``(p-1)/(v m)`` (interleaved 1F1B with ``v`` model chunks per GPU, same paper) and ``(p-1)/(3 m)`` (ZB-H1: the
  zero-bubble schedule whose bubble is a third of 1F1B's at the same peak memory; Qi et al., "Zero Bubble Pipeline
  Parallelism", ICLR 2024, arXiv 2401.10241, section 3). As a share of ``W + t_bubble`` this is
  ``(p-1)/(m+p-1)``, ``(p-1)/(v m+p-1)`` and ``(p-1)/(3 m+p-1)`` (:func:`bubble_fraction`);
* ``t_iter = W + t_bubble + exposed DP``; ``MFU = F / (t_iter N_gpu F_pk)``.

Memory per GPU (the first pipeline stage, which holds the most activations), refused when above the HBM
(:func:`memory_use`): weights, gradients and Adam state by ZeRO stage of the first stage's parameters per GPU
``Phi_1`` (its layers and the input embedding): stage 0 ``16 Phi_1``, 1 ``4 Phi_1 + 12 Phi_1 / d``, 2 ``2 Phi_1 +
14 Phi_1 / d``, 3 ``16 Phi_1 / d`` with ``d = dp cp`` (BF16 weights and gradients, FP32 master weights, momentum
and variance; ZeRO, table 1); activations per layer and micro-batch from Korthikanti et al.'s terms written for
this architecture (:func:`activation_bytes_per_layer`: ``(12 + 4 kv/a + 6 f/h) s b h / (tp cp)`` with flash
attention, the paper's 34 being a GPT-3 layer with dropout), times the layer-micro-batches in flight at the first
stage (``min(m, pp) L_1`` for 1F1B and ZB-H1; interleaved: Megatron-LM's warm-up, capped by the iteration's
``m v`` chunks).

Context parallelism (``cp``, Llama 3 at long context; Dubey et al., section 3.3.2): every sequence is split over
``cp`` GPUs, which all-gather K and V before attention and reduce-scatter their gradients in the backward pass:
``2 (+1 with full recompute) x (L/pp) x m x (cp-1)/cp x 2 s kv d_head B_act / tp`` bytes per GPU over the NVLink
when ``tp cp`` fits a node, else the network, exposed for ``1 - overlap_cp``.

Power: a periodic step function per iteration: compute (``t_c`` and the exposed TP/PP/EP time inside the
pipelined work, at the compute power), bubble, exposed DP communication (:meth:`IterationTime.phases`). The
kernel carries the job at the exact mean over whole periods; checkpoints and restarts change it at their own
times (:func:`resilience_timeline`), never one event per iteration.

Checkpoints and failures (:class:`Resilience`): a checkpoint every ``interval_s`` of training, writing
``checkpoint_bytes`` at the storage bandwidth (GPUs at the checkpoint power); failures of the job arrive as a
Poisson process at ``N_gpu x rate per GPU-hour`` (default from Llama 3 405B: 419 unplanned interruptions in 54
days on 16,384 H100, Dubey et al., "The Llama 3 Herd of Models", arXiv 2407.21783, section 3.3.4: 419 / (54 x 24
x 16384) = 1.97e-5 per GPU-hour); each costs detection + restart time and the work done since the last completed
checkpoint. Young/Daly's optimal interval ``sqrt(2 delta M)`` (J. W. Young, CACM 17(9), 1974; J. T. Daly, FGCS
22(3), 2006) is reported beside the one used.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

__all__ = ["TrainingModel", "ParallelLayout", "TrainingGPU", "TrainingConstants", "IterationTime", "MemoryUse",
           "InfeasibleLayout", "Resilience", "Timeline", "bubble_fraction", "bubble_ratio", "iteration_time",
           "memory_use", "activation_bytes_per_layer", "resilience_timeline", "expected_ettr", "young_daly_interval_s",
           "LLAMA3_FAILURE_RATE",
           "SCHEDULES", "RECOMPUTE", "SHIPPED_MODELS"]

SCHEDULES = ("1f1b", "interleaved", "zb-h1")
RECOMPUTE = ("none", "selective", "full")
#: Unplanned interruptions per GPU-hour of Llama 3 405B pre-training: 419 in 54 days on 16,384 H100 (Dubey et al.,
#: arXiv 2407.21783, section 3.3.4 and table 5).
LLAMA3_FAILURE_RATE = 419.0 / (54.0 * 24.0 * 16384.0)


class InfeasibleLayout(ValueError):
    """A parallel layout that cannot run (memory above the HBM, or sizes that do not divide); the message gives
    the reason and the numbers.
    """


@dataclass(frozen=True)
class TrainingModel:
    """A decoder-only transformer as far as training cost is concerned (dense, or MoE in every layer's MLP).

    Attributes
    ----------
    name : str
    layers, hidden, ffn_hidden, heads, kv_heads, vocab : int
        Architecture (SwiGLU MLP: 3 matrices of ``hidden x ffn_hidden`` per expert; grouped-query attention).
    seq_len : int
        Training sequence length [tokens].
    experts, top_k : int
        MoE experts per layer and experts per token (1, 1 = dense).
    """

    name: str
    layers: int
    hidden: int
    ffn_hidden: int
    heads: int
    kv_heads: int
    vocab: int
    seq_len: int
    experts: int = 1
    top_k: int = 1

    def __post_init__(self) -> None:
        """Check the sizes."""
        for k in ("layers", "hidden", "ffn_hidden", "heads", "kv_heads", "vocab", "seq_len", "experts", "top_k"):
            v = getattr(self, k)
            if not (isinstance(v, int) and v >= 1):
                raise ValueError(f"training model {self.name!r}: {k} must be an integer >= 1, got {v!r}")
        if self.top_k > self.experts:
            raise ValueError(f"training model {self.name!r}: top_k ({self.top_k}) > experts ({self.experts})")
        if self.hidden % self.heads or self.heads % self.kv_heads:
            raise ValueError(f"training model {self.name!r}: hidden ({self.hidden}) must be a multiple of heads "
                             f"({self.heads}) and heads of kv_heads ({self.kv_heads})")

    @property
    def attention_params_per_layer(self) -> float:
        """Q, K, V and output projections of one layer: ``2 h^2 + 2 h kv_heads head_dim``."""
        hd = self.hidden // self.heads
        return 2.0 * self.hidden * self.hidden + 2.0 * self.hidden * self.kv_heads * hd

    @property
    def expert_params(self) -> float:
        """Parameters in MLP experts (all layers, all experts): ``3 h f experts L``."""
        return 3.0 * self.hidden * self.ffn_hidden * self.experts * self.layers

    @property
    def dense_params(self) -> float:
        """Parameters outside the experts: attention of every layer and the (untied) embeddings ``2 V h``."""
        return self.attention_params_per_layer * self.layers + 2.0 * self.vocab * self.hidden

    @property
    def params(self) -> float:
        """All parameters."""
        return self.dense_params + self.expert_params

    @property
    def active_params(self) -> float:
        """Parameters one token uses: dense ones plus ``top_k`` experts per layer."""
        return self.dense_params + self.expert_params * self.top_k / self.experts


@dataclass(frozen=True)
class ParallelLayout:
    """How the job is split over GPUs.

    Attributes
    ----------
    tp, pp, dp : int
        Tensor-, pipeline- and data-parallel degrees; GPUs = tp x pp x dp.
    ep : int
        Expert-parallel degree (divides dp and the experts; 1 for dense models).
    micro_batches : int
        Micro-batches per iteration per data-parallel rank ``m``.
    micro_batch_size : int
        Sequences per micro-batch ``b``.
    schedule : {"1f1b", "interleaved", "zb-h1"}
    virtual_stages : int
        Model chunks per GPU ``v`` (interleaved 1F1B; 1 otherwise).
    zero_stage : int
        0-3 (ZeRO / FSDP sharding over ``dp x cp``; Llama 3's FSDP, which shards optimizer state and gradients but
        keeps the gathered weights through the backward pass, is stage 2).
    recompute : {"none", "selective", "full"}
    cp : int
        Context-parallel degree: each sequence split over ``cp`` GPUs (Llama 3: 16 at 131K tokens, 1 at 8K);
        GPUs = tp x cp x pp x dp.
    first_stage_layers : int
        Transformer layers on the first pipeline stage (0 = the even split ``L / pp``). Llama 3 405B: 7 (126
        layers on 16 stages, one layer fewer on the first and the last stage, whose slot holds the embedding or
        the output head; Dubey et al., arXiv 2407.21783, section 3.3.2).
    """

    tp: int
    pp: int
    dp: int
    ep: int = 1
    micro_batches: int = 1
    micro_batch_size: int = 1
    schedule: str = "1f1b"
    virtual_stages: int = 1
    zero_stage: int = 1
    recompute: str = "selective"
    cp: int = 1
    first_stage_layers: int = 0

    def __post_init__(self) -> None:
        """Check the degrees and names."""
        if not (isinstance(self.first_stage_layers, int) and self.first_stage_layers >= 0):
            raise ValueError(f"parallel layout: first_stage_layers must be an integer >= 0, got "
                             f"{self.first_stage_layers!r}")
        for k in ("tp", "pp", "dp", "ep", "micro_batches", "micro_batch_size", "virtual_stages", "cp"):
            v = getattr(self, k)
            if not (isinstance(v, int) and v >= 1):
                raise ValueError(f"parallel layout: {k} must be an integer >= 1, got {v!r}")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"parallel layout: schedule {self.schedule!r}; expected one of {', '.join(SCHEDULES)}")
        if self.recompute not in RECOMPUTE:
            raise ValueError(f"parallel layout: recompute {self.recompute!r}; expected one of {', '.join(RECOMPUTE)}")
        if self.zero_stage not in (0, 1, 2, 3):
            raise ValueError(f"parallel layout: zero_stage must be 0, 1, 2 or 3, got {self.zero_stage!r}")
        if self.schedule != "interleaved" and self.virtual_stages != 1:
            raise ValueError(f"parallel layout: virtual_stages = {self.virtual_stages} needs schedule 'interleaved'")
        if self.dp % self.ep:
            raise ValueError(f"parallel layout: ep ({self.ep}) must divide dp ({self.dp})")

    @property
    def n_gpus(self) -> int:
        """GPUs of the job, tp x cp x pp x dp."""
        return self.tp * self.cp * self.pp * self.dp


@dataclass(frozen=True)
class TrainingGPU:
    """A GPU type for training (from the node-type catalogue).

    Attributes
    ----------
    name : str
    peak_flops : float
        Dense BF16 peak [FLOP/s].
    hbm_capacity_B : float
        HBM [B].
    intra_bandwidth_B_s : float
        GPU-to-GPU link inside a node, one direction [B/s] (NVLink).
    network_bandwidth_B_s : float
        Network bandwidth per GPU, one direction [B/s] (one 400 Gb/s NIC per GPU = 50e9).
    gpus_per_node : int
    idle_power_W, max_power_W : float
        Board power idle and at the limit [W].
    """

    name: str
    peak_flops: float
    hbm_capacity_B: float
    intra_bandwidth_B_s: float
    network_bandwidth_B_s: float
    gpus_per_node: int
    idle_power_W: float
    max_power_W: float


@dataclass(frozen=True)
class TrainingConstants:
    """Efficiency, overlap and phase-power constants of the training model.

    Attributes
    ----------
    eta_compute : float
        Achievable fraction of dense BF16 peak in the training GEMMs and attention kernels. Default 0.62:
        ASSUMPTION, the middle of the 55-70 % that large BF16 GEMMs reach on H100 SXM in vendor and framework
        benchmarks (NVIDIA Megatron-Core reports 47 % MFU *end to end* for GPT-3 175B on H100 clusters, which
        includes communication and bubbles; the kernel fraction is above it).
    overlap_tp, overlap_pp, overlap_ep, overlap_dp : float
        Share of each communication hidden under compute. Defaults 0.5 / 0.5 / 0.3 / 0.8: ASSUMPTIONS (Megatron-LM
        overlaps TP communication with sequence-parallel GEMMs partly, p2p with the next micro-batch's compute,
        and the gradient reduce-scatter with the backward pass bucket by bucket, exposing the last buckets).
    bytes_activation : float
        Bytes per activation element in communication [B] (2: BF16).
    overlap_cp : float
        Share of the context-parallel K/V all-gathers hidden under attention compute. Default 0.5: ASSUMPTION
        (Llama 3 all-gathers K and V before attention, section 3.3.2, and reports its latency as small next to
        the attention at long context).
    util_compute, util_comm, util_bubble, util_checkpoint, util_restart : float
        GPU load of each phase in [0, 1]: its power is ``idle + u (max - idle)``. Defaults 1.0 / 0.25 / 0.15 /
        0.1 / 0.0: ASSUMPTIONS after "compute phase near TDP, communication phase near idle" (Choukse et al.,
        "Power Stabilization for AI Training Datacenters", arXiv 2508.14318, 2025) and checkpoints pulling power
        toward idle (Llama 3, section 3.3.4); communication kernels keep the SMs partly busy, a bubble only spins.
    bytes_per_checkpoint_param : float
        Checkpoint bytes per parameter: BF16 weights + FP32 master weights, momentum, variance = 14 B.
    """

    eta_compute: float = 0.62
    overlap_tp: float = 0.5
    overlap_pp: float = 0.5
    overlap_ep: float = 0.3
    overlap_dp: float = 0.8
    bytes_activation: float = 2.0
    overlap_cp: float = 0.5
    util_compute: float = 1.0
    util_comm: float = 0.25
    util_bubble: float = 0.15
    util_checkpoint: float = 0.1
    util_restart: float = 0.0
    bytes_per_checkpoint_param: float = 14.0

    def __post_init__(self) -> None:
        """Check the ranges."""
        if not 0 < self.eta_compute <= 1:
            raise ValueError(f"training constants: eta_compute must be in (0, 1], got {self.eta_compute!r}")
        for k in ("overlap_tp", "overlap_pp", "overlap_ep", "overlap_dp", "overlap_cp", "util_compute", "util_comm",
                  "util_bubble", "util_checkpoint", "util_restart"):
            v = getattr(self, k)
            if not 0 <= v <= 1:
                raise ValueError(f"training constants: {k} must be in [0, 1], got {v!r}")


def bubble_ratio(schedule: str, p: int, m: int, v: int = 1) -> float:
    """Pipeline bubble time over the pipelined work, ``t_bubble / W`` (module docstring).

    Parameters
    ----------
    schedule : str
        "1f1b", "interleaved" or "zb-h1".
    p : int
        Pipeline stages.
    m : int
        Micro-batches per iteration.
    v : int
        Model chunks per GPU (interleaved).

    Returns
    -------
    float
        ``(p-1)/m``, ``(p-1)/(v m)`` or ``(p-1)/(3 m)``.

    Raises
    ------
    ValueError
        For an unknown schedule.
    """
    if schedule == "1f1b":
        return (p - 1) / m
    if schedule == "interleaved":
        return (p - 1) / (v * m)
    if schedule == "zb-h1":
        return (p - 1) / (3.0 * m)
    raise ValueError(f"unknown pipeline schedule {schedule!r}; expected one of {', '.join(SCHEDULES)}")


def bubble_fraction(schedule: str, p: int, m: int, v: int = 1) -> float:
    """Share of the pipeline's time that is bubble: ``(p-1)/(m+p-1)`` (1F1B), ``(p-1)/(v m+p-1)`` (interleaved),
    ``(p-1)/(3 m+p-1)`` (ZB-H1).

    Parameters
    ----------
    schedule : str
        "1f1b", "interleaved" or "zb-h1".
    p : int
        Pipeline stages.
    m : int
        Micro-batches.
    v : int
        Model chunks per GPU (interleaved).

    Returns
    -------
    float
        The fraction in [0, 1).

    Raises
    ------
    ValueError
        For an unknown schedule.
    """
    k = {"1f1b": 1.0, "interleaved": float(v), "zb-h1": 3.0}.get(schedule)
    if k is None:
        raise ValueError(f"unknown pipeline schedule {schedule!r}; expected one of {', '.join(SCHEDULES)}")
    return (p - 1) / (k * m + p - 1)


@dataclass(frozen=True)
class MemoryUse:
    """Memory per GPU of the first pipeline stage [B].

    Attributes
    ----------
    params_per_gpu : float
        ``Phi``, parameters per GPU averaged over the stages (the data-parallel gradient size).
    states_B : float
        Weights, gradients and optimizer state of the first stage after ZeRO sharding.
    activations_B : float
        Activations held by the first stage.
    total_B, capacity_B : float
    params_first_stage : float
        Parameters per GPU of the first stage (its layers and the input embedding).
    activation_bytes_per_layer : float
        Activations of one layer and one micro-batch on one GPU [B].
    layers_in_flight : float
        Layer-micro-batches whose activations the first stage holds at its peak.
    """

    params_per_gpu: float
    states_B: float
    activations_B: float
    total_B: float
    capacity_B: float
    params_first_stage: float = 0.0
    activation_bytes_per_layer: float = 0.0
    layers_in_flight: float = 0.0

    @property
    def feasible(self) -> bool:
        """bool: the total fits in the HBM."""
        return self.total_B <= self.capacity_B


def activation_bytes_per_layer(model: TrainingModel, lay: ParallelLayout) -> float:
    """Activation bytes one transformer layer keeps for the backward pass, per micro-batch and GPU.

    The terms of Korthikanti et al. (MLSys 2023, section 4.1), written for the architecture of
    :class:`TrainingModel` (pre-norm RMSNorm, grouped-query attention, SwiGLU MLP, no dropout) with 2-byte
    activations, in units of ``s b h`` bytes (``s`` the sequence, ``b`` the micro-batch, ``h`` the hidden size):

    * attention: the QKV projection's input 2, Q 2, K and V ``2 x 2 kv / a``, the attention output (the output
      projection's input) 2: ``6 + 4 kv / a`` (the paper's 11 with kv = a plus a dropout mask of 1);
    * MLP: its input 2, the gate and up projections' outputs ``2 x 2 f / h`` and their product (the down
      projection's input) ``2 f / h``: ``2 + 6 f / h`` (the paper's 19 is ``2 + 16 + 1`` for a 4h GeLU MLP with
      dropout); MoE: the router's input 2 plus per routed copy ``2 + 6 f / h``, ``top_k`` copies;
    * the two norms' inputs: 4;

    so ``12 + 4 kv / a + 6 f / h`` for a dense layer (Llama 3 405B: 31.75; the GPT-3 layer of the paper: 34).
    Recompute ``"none"`` also keeps the softmax output ``2 a s / h`` (no flash attention); ``"full"`` keeps the
    layer's input only, 2. Sequence parallelism divides everything by ``tp`` (paper, section 4.2.2) and context
    parallelism by ``cp`` (each GPU holds ``s / cp`` tokens).

    Parameters
    ----------
    model : TrainingModel
    lay : ParallelLayout

    Returns
    -------
    float
        Bytes per layer, micro-batch and GPU.
    """
    sbh = float(lay.micro_batch_size) * model.seq_len * model.hidden / (lay.tp * lay.cp)
    f_h = model.ffn_hidden / model.hidden
    attn = 6.0 + 4.0 * model.kv_heads / model.heads
    mlp = 2.0 + 6.0 * f_h if model.experts == 1 else 2.0 + model.top_k * (2.0 + 6.0 * f_h)
    if lay.recompute == "full":
        return 2.0 * sbh
    per = attn + mlp + 4.0
    if lay.recompute == "none":
        per += 2.0 * model.heads * model.seq_len / lay.cp / model.hidden
    return per * sbh


def memory_use(model: TrainingModel, lay: ParallelLayout, gpu: TrainingGPU) -> MemoryUse:
    """Memory per GPU of the first pipeline stage (module docstring).

    * States: the first stage's parameters per GPU ``Phi_1`` = its ``L_1`` layers (``first_stage_layers``, or
      ``L / pp``) / tp (experts also / ep) + the input embedding ``V h / tp`` (+ the output head when ``pp = 1``),
      times the ZeRO bytes per parameter with the sharding over ``d = dp x cp``.
    * Activations: :func:`activation_bytes_per_layer` x the layer-micro-batches in flight at the first stage's
      peak: 1F1B and ZB-H1 (same peak memory as 1F1B, Qi et al. 2024) ``min(m, pp) L_1``; interleaved 1F1B with
      ``v`` chunks of ``L_1 / v`` layers, ``min(m v, 2 (pp-1) + (v-1) pp + 1)`` chunks (Megatron-LM's warm-up
      of the first rank plus the one forward before its first backward, capped by the ``m v`` chunks of the
      iteration), which is Korthikanti et al.'s ``(1 + (pp-1)/(pp v)) pp`` micro-batches when ``m v`` is larger.

    Parameters
    ----------
    model : TrainingModel
    lay : ParallelLayout
    gpu : TrainingGPU

    Returns
    -------
    MemoryUse
    """
    phi = model.dense_params / (lay.tp * lay.pp) + model.expert_params / (lay.tp * lay.pp * lay.ep)
    L1 = float(lay.first_stage_layers) if lay.first_stage_layers else model.layers / lay.pp
    emb = model.vocab * model.hidden * (2.0 if lay.pp == 1 else 1.0)
    phi1 = ((L1 * model.attention_params_per_layer + emb) / lay.tp
            + L1 * model.expert_params / model.layers / (lay.tp * lay.ep))
    d = lay.dp * lay.cp
    states = {0: 16.0 * phi1, 1: 4.0 * phi1 + 12.0 * phi1 / d, 2: 2.0 * phi1 + 14.0 * phi1 / d,
              3: 16.0 * phi1 / d}
    per_layer = activation_bytes_per_layer(model, lay)
    m, p, v = lay.micro_batches, lay.pp, lay.virtual_stages
    if lay.schedule == "interleaved":
        in_flight = min(m * v, 2 * (p - 1) + (v - 1) * p + 1) * L1 / v
    else:
        in_flight = min(m, p) * L1
    act = per_layer * in_flight
    st = states[lay.zero_stage]
    return MemoryUse(phi, st, act, st + act, gpu.hbm_capacity_B, phi1, per_layer, in_flight)


@dataclass(frozen=True)
class IterationTime:
    """One iteration of a training job (module docstring) [s unless stated].

    Attributes
    ----------
    t_compute_s : float
        ``t_c`` (recomputation included).
    t_tp_s, t_pp_s, t_ep_s, t_dp_s : float
        Communication times before overlap.
    exposed_tp_s, exposed_pp_s, exposed_ep_s, exposed_dp_s : float
        Their exposed parts.
    t_work_s : float
        Pipelined work ``W = t_c + exposed TP + PP + EP``.
    t_bubble_s : float
        ``r W``.
    t_iter_s : float
        ``W + t_bubble + exposed DP``.
    tokens : float
        Tokens per iteration.
    model_flops : float
        ``F`` (MFU's numerator per iteration).
    mfu : float
        ``F / (t_iter N_gpu F_pk)``.
    n_gpus : int
    memory : MemoryUse
    t_cp_s, exposed_cp_s : float
        Context-parallel K/V all-gathers and gradient reduce-scatters, and their exposed part (inside ``W``).
    """

    t_compute_s: float
    t_tp_s: float
    t_pp_s: float
    t_ep_s: float
    t_dp_s: float
    exposed_tp_s: float
    exposed_pp_s: float
    exposed_ep_s: float
    exposed_dp_s: float
    t_work_s: float
    t_bubble_s: float
    t_iter_s: float
    tokens: float
    model_flops: float
    mfu: float
    n_gpus: int
    memory: MemoryUse
    t_cp_s: float = 0.0
    exposed_cp_s: float = 0.0

    @property
    def bubble_fraction(self) -> float:
        """float: ``t_bubble / (W + t_bubble)``, the pipeline's idle share."""
        return self.t_bubble_s / (self.t_work_s + self.t_bubble_s)

    def phases(self) -> tuple[np.ndarray, np.ndarray]:
        """Phase durations [s] and their names of one iteration: compute (the pipelined work), bubble, exposed
        data-parallel communication.

        Returns
        -------
        tuple of (ndarray, ndarray)
            ``(durations_s, names)``, shape (3,) each; the durations sum to ``t_iter_s``.
        """
        return (np.array([self.t_work_s, self.t_bubble_s, self.exposed_dp_s]),
                np.array(["compute", "bubble", "comm"]))


def iteration_time(model: TrainingModel, lay: ParallelLayout, gpu: TrainingGPU,
                   const: TrainingConstants = TrainingConstants(), *, check_memory: bool = True) -> IterationTime:
    """Time of one iteration and its parts (module docstring).

    Parameters
    ----------
    model : TrainingModel
    lay : ParallelLayout
    gpu : TrainingGPU
    const : TrainingConstants
    check_memory : bool
        Refuse a layout whose memory exceeds the HBM.

    Returns
    -------
    IterationTime

    Raises
    ------
    InfeasibleLayout
        Sizes that do not divide (layers by pp x v, heads by tp, experts by ep, tp above a node) or memory above the
        HBM, with the numbers.
    """
    if model.layers % (lay.pp * lay.virtual_stages) and lay.pp * lay.virtual_stages > 1:
        # uneven stages are allowed (Llama 3 drops a layer from the first and last stage) but chunks must exist
        if model.layers < lay.pp * lay.virtual_stages:
            raise InfeasibleLayout(f"{model.name}: {model.layers} layers cannot fill pp x v = "
                                   f"{lay.pp} x {lay.virtual_stages} chunks")
    if model.heads % lay.tp or model.kv_heads % min(lay.tp, model.kv_heads):
        raise InfeasibleLayout(f"{model.name}: tp = {lay.tp} does not divide the {model.heads} attention heads")
    if model.experts % lay.ep:
        raise InfeasibleLayout(f"{model.name}: ep = {lay.ep} does not divide the {model.experts} experts")
    if lay.tp > gpu.gpus_per_node:
        raise InfeasibleLayout(f"tp = {lay.tp} is larger than the {gpu.gpus_per_node} GPUs of a {gpu.name} node")
    mem = memory_use(model, lay, gpu)
    if check_memory and not mem.feasible:
        raise InfeasibleLayout(
            f"{model.name} on {lay.n_gpus} x {gpu.name} (tp {lay.tp}, {f'cp {lay.cp}, ' if lay.cp > 1 else ''}"
            f"pp {lay.pp}, dp {lay.dp}, ep {lay.ep}, "
            f"ZeRO {lay.zero_stage}, recompute {lay.recompute}, {lay.schedule}): {mem.total_B / 1e9:.1f} GB per GPU "
            f"needed > {mem.capacity_B / 1e9:.1f} GB HBM (weights/gradients/optimizer {mem.states_B / 1e9:.1f} GB, "
            f"activations {mem.activations_B / 1e9:.1f} GB)")
    n = lay.n_gpus
    s, b, h, L = model.seq_len, lay.micro_batch_size, model.hidden, model.layers
    tokens = float(lay.dp * lay.micro_batches * b * s)
    n_act = model.active_params
    F = (6.0 * n_act + 12.0 * L * h * s) * tokens
    extra = {"none": 0.0, "selective": 4.0 * L * h * s, "full": 2.0 * n_act + 4.0 * L * h * s}[lay.recompute]
    F_hw = F + extra * tokens
    t_c = F_hw / (n * gpu.peak_flops * const.eta_compute)
    m = lay.micro_batches
    msg = b * s * h * const.bytes_activation / lay.cp  # one activation tensor of a micro-batch on a GPU [B]
    # per GPU a layer's TP all-reduce runs for each of the m micro-batches of its L / pp layers
    n_ar = 4 + (2 if lay.recompute == "full" else 0)
    t_tp = (n_ar * (L / lay.pp) * m * 2.0 * (lay.tp - 1) / lay.tp * msg / gpu.intra_bandwidth_B_s
            if lay.tp > 1 else 0.0)
    t_pp = 2.0 * m * msg / lay.tp / gpu.network_bandwidth_B_s if lay.pp > 1 else 0.0
    if lay.ep > 1 and model.experts > 1:
        bw = gpu.intra_bandwidth_B_s if lay.tp * lay.ep <= gpu.gpus_per_node else gpu.network_bandwidth_B_s
        t_ep = 4.0 * (L / lay.pp) * m * msg * model.top_k * (lay.ep - 1) / lay.ep / lay.tp / bw
    else:
        t_ep = 0.0
    grad_B = 2.0 * mem.params_per_gpu
    dcp = lay.dp * lay.cp  # gradients are reduced over the data- and context-parallel ranks
    t_dp = (2.0 * (dcp - 1) / dcp * grad_B / gpu.network_bandwidth_B_s
            * (1.5 if lay.zero_stage == 3 else 1.0)) if dcp > 1 else 0.0
    e_tp, e_pp, e_ep, e_dp = ((1 - const.overlap_tp) * t_tp, (1 - const.overlap_pp) * t_pp,
                              (1 - const.overlap_ep) * t_ep, (1 - const.overlap_dp) * t_dp)
    if lay.cp > 1:
        kv_B = 2.0 * b * s * model.kv_heads * (h // model.heads) * const.bytes_activation / lay.tp
        bw = gpu.intra_bandwidth_B_s if lay.tp * lay.cp <= gpu.gpus_per_node else gpu.network_bandwidth_B_s
        n_cp = 2 + (1 if lay.recompute == "full" else 0)
        t_cp = n_cp * (L / lay.pp) * m * (lay.cp - 1) / lay.cp * kv_B / bw
    else:
        t_cp = 0.0
    e_cp = (1 - const.overlap_cp) * t_cp
    W = t_c + e_tp + e_pp + e_ep + e_cp
    t_b = bubble_ratio(lay.schedule, lay.pp, m, lay.virtual_stages) * W
    t_it = W + t_b + e_dp
    return IterationTime(t_c, t_tp, t_pp, t_ep, t_dp, e_tp, e_pp, e_ep, e_dp, W, t_b, t_it, tokens, F,
                         F / (t_it * n * gpu.peak_flops), n, mem, t_cp, e_cp)


# ---------------------------------------------------------------------------------------------- resilience
@dataclass(frozen=True)
class Resilience:
    """Checkpoints and failures of a training job.

    Attributes
    ----------
    checkpoint_interval_s : float
        Training time between checkpoints [s] (> 0; ``inf`` = none).
    checkpoint_write_s : float
        Time the job stops to write one checkpoint [s] (``delta``).
    failure_rate_per_gpu_h : float
        Interruptions per GPU-hour (default :data:`LLAMA3_FAILURE_RATE`).
    detect_s, restart_s : float
        Time to detect a failure and to restart from the last checkpoint [s]. Defaults 120 s and 600 s:
        ASSUMPTIONS (a collective timeout of a few minutes; rescheduling on spare nodes, reloading the checkpoint
        and re-initialising the communicators of a 10K-GPU job takes minutes: Llama 3, section 3.3.4, reports
        automated recovery without giving the time).
    """

    checkpoint_interval_s: float = 1800.0
    checkpoint_write_s: float = 0.0
    failure_rate_per_gpu_h: float = LLAMA3_FAILURE_RATE
    detect_s: float = 120.0
    restart_s: float = 600.0

    def __post_init__(self) -> None:
        """Check the ranges."""
        if not self.checkpoint_interval_s > 0:
            raise ValueError(f"checkpoint_interval_s must be > 0, got {self.checkpoint_interval_s!r}")
        for k in ("checkpoint_write_s", "failure_rate_per_gpu_h", "detect_s", "restart_s"):
            v = getattr(self, k)
            if not (v >= 0 and math.isfinite(v)):
                raise ValueError(f"{k} must be a finite number >= 0, got {v!r}")


def young_daly_interval_s(write_s: float, mtbf_s: float) -> float:
    """Young/Daly first-order optimal checkpoint interval ``sqrt(2 delta M)`` [s] (Young 1974; Daly 2006).

    Parameters
    ----------
    write_s : float
        Checkpoint write time ``delta`` [s].
    mtbf_s : float
        Mean time between failures of the job ``M`` [s].

    Returns
    -------
    float
        The interval [s] (``inf`` without failures).
    """
    return math.sqrt(2.0 * write_s * mtbf_s) if math.isfinite(mtbf_s) else math.inf


def expected_ettr(res: Resilience, n_gpus: int) -> float:
    """Expected effective training time ratio (useful training time / wall time) of :func:`resilience_timeline`.

    A checkpoint period needs ``n = tau + delta`` of failure-free exposure; with exponential failures at rate
    ``lambda = n_gpus x rate / 3600`` and a downtime ``D = detect + restart`` per failure (no exposure while
    down), the expected wall time per completed period is ``(exp(lambda n) - 1) (1 / lambda + D)`` (renewal
    argument, the exact form behind Daly's model, FGCS 22(3), 2006), so
    ``ETTR = tau / ((exp(lambda n) - 1) (1 / lambda + D))``; to first order in ``lambda`` it is
    ``tau / n x (1 - lambda (D + n / 2))``. The last period's missing checkpoint is neglected.

    Parameters
    ----------
    res : Resilience
    n_gpus : int

    Returns
    -------
    float
    """
    lam = n_gpus * res.failure_rate_per_gpu_h / 3600.0
    tau, d = res.checkpoint_interval_s, res.checkpoint_write_s
    if lam == 0:
        return tau / (tau + d) if math.isfinite(tau) else 1.0
    if not math.isfinite(tau):
        return 0.0
    return tau / (math.expm1(lam * (tau + d)) * (1.0 / lam + res.detect_s + res.restart_s))


@dataclass
class Timeline:
    """A realised run of a training job with checkpoints and failures.

    Attributes
    ----------
    wall_s : float
        Wall time until the useful training time is done [s].
    useful_s : float
        Training time kept [s] (the target).
    t_offset_s : ndarray
        Start of each segment from the job start [s], shape (k,).
    kind : ndarray of str
        ``"train"``, ``"checkpoint"``, ``"down"`` (detection + restart) or ``"lost"`` (training later lost),
        shape (k,).
    n_checkpoints, n_failures : int
    lost_work_s, down_s, checkpoint_s : float
        Training time lost to failures, downtime, time writing checkpoints [s].
    """

    wall_s: float
    useful_s: float
    t_offset_s: np.ndarray
    kind: np.ndarray
    n_checkpoints: int
    n_failures: int
    lost_work_s: float
    down_s: float
    checkpoint_s: float
    extras: dict = field(default_factory=dict)

    @property
    def ettr(self) -> float:
        """float: effective training time ratio, useful / wall."""
        return self.useful_s / self.wall_s if self.wall_s > 0 else 1.0

    def node_power(self, P_train_W: float, P_checkpoint_W: float, P_down_W: float) -> np.ndarray:
        """Node power of each segment [W] (training and lost training at the iteration mean ``P_train_W``).

        Parameters
        ----------
        P_train_W : float
            Node power averaged over whole iterations [W].
        P_checkpoint_W : float
            While writing a checkpoint [W].
        P_down_W : float
            During detection and restart [W].

        Returns
        -------
        ndarray of float64, shape (k,)
        """
        lut = {"train": P_train_W, "lost": P_train_W, "checkpoint": P_checkpoint_W, "down": P_down_W}
        return np.array([lut[k] for k in self.kind], dtype=float)


def resilience_timeline(useful_s: float, res: Resilience, n_gpus: int, rng: np.random.Generator) -> Timeline:
    """Realise a training run of ``useful_s`` of training with checkpoints and Poisson failures (seeded).

    Training runs in periods of ``checkpoint_interval_s`` each followed by a checkpoint write of
    ``checkpoint_write_s`` (none after the last period); failures arrive at rate ``n_gpus x rate`` per hour of
    wall time while the job trains or checkpoints (not while it restarts). A failure discards the training since
    the last *completed* checkpoint (those segments are relabelled ``"lost"``), then the job is down for
    ``detect_s + restart_s``. Cost: one loop turn per checkpoint or failure, never per iteration.

    Parameters
    ----------
    useful_s : float
        Training time to complete [s] (> 0).
    res : Resilience
    n_gpus : int
    rng : np.random.Generator

    Returns
    -------
    Timeline

    Raises
    ------
    ValueError
        If the failure rate is so high that the job cannot finish (over 10 million failures).
    """
    lam = n_gpus * res.failure_rate_per_gpu_h / 3600.0
    tau, delta = res.checkpoint_interval_s, res.checkpoint_write_s
    down = res.detect_s + res.restart_s
    t = 0.0
    done = 0.0               # training kept (up to the last completed checkpoint)
    offs: list[float] = []
    kinds: list[str] = []
    n_ck = n_f = 0
    lost = dn = ck = 0.0
    next_fail = rng.exponential(1.0 / lam) if lam > 0 else math.inf  # exposure time left before the failure
    seg_since_ck = 0         # index in offs of the first segment since the last completed checkpoint
    while done < useful_s - 1e-9:
        work = min(tau, useful_s - done)
        last = done + work >= useful_s - 1e-9
        need = work + (0.0 if last else delta)
        if next_fail >= need:                     # the period and its checkpoint complete
            offs.append(t)
            kinds.append("train")
            t += work
            if not last:
                offs.append(t)
                kinds.append("checkpoint")
                t += delta
                n_ck += 1
                ck += delta
            done += work
            next_fail -= need
            seg_since_ck = len(offs)
            continue
        # a failure inside the period (or its checkpoint write)
        x = next_fail
        offs.append(t)
        kinds.append("train")
        w = min(x, work)
        if x > work:                              # during the checkpoint write
            offs.append(t + work)
            kinds.append("checkpoint")
            ck += x - work
        lost += w
        for i in range(seg_since_ck, len(offs)):
            if kinds[i] == "train":
                kinds[i] = "lost"
        t += x
        offs.append(t)
        kinds.append("down")
        t += down
        dn += down
        n_f += 1
        if n_f > 10_000_000:
            raise ValueError(f"training job cannot finish: {n_f} failures at {lam * 3600:.3g} per hour")
        next_fail = rng.exponential(1.0 / lam)
        seg_since_ck = len(offs)
    return Timeline(t, useful_s, np.asarray(offs, dtype=float), np.asarray(kinds), n_ck, n_f, lost, dn, ck)


#: Training models by name. Sources: the models' config.json on Hugging Face (meta-llama/Meta-Llama-3-8B, -70B,
#: Llama-3.1-405B: layers, hidden_size, intermediate_size, heads, key/value heads, vocabulary) and
#: mistralai/Mixtral-8x7B-v0.1 (8 experts, top-2). Sequence lengths: Llama 3 pre-training at 8,192 tokens
#: (arXiv 2407.21783, section 3.4.1); Mixtral's 32,768-token context.
SHIPPED_MODELS = {
    "llama-3-8b": TrainingModel("llama-3-8b", 32, 4096, 14336, 32, 8, 128256, 8192),
    "llama-3-70b": TrainingModel("llama-3-70b", 80, 8192, 28672, 64, 8, 128256, 8192),
    "llama-3-405b": TrainingModel("llama-3-405b", 126, 16384, 53248, 128, 8, 128256, 8192),
    "mixtral-8x7b": TrainingModel("mixtral-8x7b", 32, 4096, 14336, 32, 8, 32000, 32768, experts=8, top_k=2),
}
