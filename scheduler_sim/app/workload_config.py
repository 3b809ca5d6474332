"""``[[workload]]`` tables of a run configuration (issue #24): generated workloads that join the trace.

```toml
[[workload]]
family = "training"            # the only family wired into runs so far
name = "llama3-70b"            # job name prefix
model = "llama-3-70b"          # jobs.training.SHIPPED_MODELS, or an inline table of TrainingModel fields
gpu = "h100-sxm"               # the node-type catalogue: scheduler_sim/serving/data/gpus/<name>.toml
count = 1                      # jobs of this kind
submit_day = 0.0               # first submission, days after the trace origin
spacing_h = 0.0                # between consecutive submissions
train_hours = 24.0             # useful training time of each job [h] (the wall time follows from failures)
layout = { tp = 8, pp = 4, dp = 16, micro_batches = 32, schedule = "interleaved", virtual_stages = 5 }
checkpoint_interval_s = 1800.0 # "young-daly" uses the Young/Daly optimum
storage_bandwidth_GB_s = 2000.0
failure_rate_per_gpu_h = 1.97e-5
detect_s = 120.0
restart_s = 600.0
```

Every key but ``family`` and ``layout`` has a default; unknown keys are errors.

On a system of several partitions (docs/partitions.md) ``partition = "gpu"`` puts the table's jobs in that batch
partition: their nodes, GPUs per node, node power model and default CPU load are the partition's node type, and
the jobs carry the partition in the job table's ``partition`` column, which the partition mapping reads first
(:mod:`scheduler_sim.kernel.partitions`). Without it the jobs go where the mapping puts their queue
(``"training"``; for ``training_trace`` the trace job's own partition), by default the default partition.

A parametric family draws the jobs instead (:func:`jobs.families.training.training_family`, seeded from the run):

```toml
[[workload]]
family = "training_family"
kind = "moe"                   # "dense", "moe" or "long-context"
jobs = 6
per_day = 2.0                  # Poisson submissions
gpus = [512, 1024, 2048]
train_hours_median = 24.0      # log-normal useful training time
sigma = 1.0
```

(the checkpoint and failure keys apply to every drawn job; ``layout`` and ``model`` come from the family).

A trace's jobs become training jobs by a documented job-type mapping (``family = "training_trace"``): every trace
job of queue ``trace_queue`` with at least ``min_nodes`` nodes is replaced by a training job of ``model`` on its
nodes' GPUs (layout by :func:`jobs.families.training.auto_layout`), keeping its id, submission time, user and
account; its useful training time is the recorded run time x the expected ETTR
(:func:`jobs.training.expected_ettr`), so its expected wall time is the recorded one and the realised one
follows its own failures.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from jobs.training import LLAMA3_FAILURE_RATE

__all__ = ["WorkloadConfig", "LayoutConfig", "ModelConfig", "RLTableConfig", "InferenceTableConfig",
           "ExtremeTableConfig", "MixedTableConfig", "SERVED_FAMILIES"]

#: Families whose requests a ``[serving]`` section serves (``[serving] workload``).
SERVED_FAMILIES = ("inference", "extreme", "mixed")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ModelConfig(_Strict):
    """An inline training model (the fields of :class:`jobs.training.TrainingModel`)."""

    name: str = "custom"
    layers: int = Field(ge=1)
    hidden: int = Field(ge=1)
    ffn_hidden: int = Field(ge=1)
    heads: int = Field(ge=1)
    kv_heads: int = Field(ge=1)
    vocab: int = Field(ge=1)
    seq_len: int = Field(ge=1)
    experts: int = Field(1, ge=1)
    top_k: int = Field(1, ge=1)


class LayoutConfig(_Strict):
    """A parallel layout (the fields of :class:`jobs.training.ParallelLayout`)."""

    tp: int = Field(ge=1)
    pp: int = Field(1, ge=1)
    dp: int = Field(ge=1)
    ep: int = Field(1, ge=1)
    micro_batches: int = Field(1, ge=1)
    micro_batch_size: int = Field(1, ge=1)
    schedule: Literal["1f1b", "interleaved", "zb-h1"] = "1f1b"
    virtual_stages: int = Field(1, ge=1)
    zero_stage: int = Field(1, ge=0, le=3)
    recompute: Literal["none", "selective", "full"] = "selective"
    cp: int = Field(1, ge=1, description="Context-parallel degree")
    first_stage_layers: int = Field(0, ge=0, description="Layers on the first pipeline stage (0 = L / pp)")


class RLTableConfig(_Strict):
    """The ``rl`` table of a ``family = "rl"`` workload: an RL post-training pipeline
    (:class:`scheduler_sim.serving.rl.RLConfig`; its docstring gives the distributions and their sources).

    The rollout pool is ``rollout_replicas`` replicas of ``rollout_tp`` GPUs serving the workload's ``model`` (a
    serving model of ``scheduler_sim/serving/data/models``); the trainer is the workload's ``layout`` of its
    ``model`` (a training model); both on the workload's ``gpu``. Reward sandboxes run on the host CPUs of the
    rollout nodes (ASSUMPTION, module docstring of :mod:`scheduler_sim.app.workloads`).
    """

    rollout_replicas: int = Field(8, ge=1, description="Rollout replicas")
    rollout_tp: int = Field(1, ge=1, description="GPUs per rollout replica (tensor parallel)")
    max_num_seqs: int = Field(256, ge=1, description="Rollout engine batch limit")
    steps: int = Field(4, ge=1, description="RL steps")
    prompts: int = Field(64, ge=1, description="Prompts per step")
    group: int = Field(8, ge=1, description="Samples per prompt (GRPO group)")
    prompt_median: float = Field(300.0, gt=0, description="Prompt length median [tokens]")
    prompt_p99: float = Field(2000.0, gt=0, description="Prompt length p99 [tokens]")
    output_median: float = Field(500.0, gt=0, description="Output length median [tokens]")
    output_p99: float = Field(5000.0, gt=0, description="Output length p99 [tokens]")
    max_output: int = Field(16384, ge=1, description="Output cap [tokens]")
    reward_workers: int = Field(256, ge=1, description="CPU sandbox workers")
    reward_median_s: float = Field(2.0, gt=0, description="Reward time per sample, median [s]")
    reward_p99_s: float = Field(20.0, gt=0, description="Reward time per sample, p99 [s]")
    reward_worker_W: float = Field(10.0, ge=0, description="Power of a busy sandbox worker above idle [W]")
    mode: Literal["sync", "async"] = Field("sync", description="Barrier per step, or asynchronous")
    staleness: int = Field(1, ge=0, description="Staleness bound k (async)")
    partial_segment: int = Field(0, ge=0, description="Partial-rollout tokens per sample per step (sync; 0 = off)")
    merge_s: float = Field(1.0, gt=0, description="Bin of the pools' node power series [s] (energy-exact means)")


class InferenceTableConfig(_Strict):
    """The ``inference`` table of a ``family = "inference"`` workload: the arrival process, length distributions
    and SLOs of :func:`jobs.families.inference.inference_family` (its docstring gives them and their sources). A
    ``[serving]`` section with ``workload = "<name>"`` serves these requests instead of a request trace.
    """

    arrival: Literal["poisson", "gamma", "mmpp"] = Field("poisson", description="Arrival process")
    duration_s: float = Field(3600.0, gt=0, description="Horizon of the arrivals [s]")
    rate_per_s: float = Field(5.0, gt=0, description="Mean arrival rate (poisson, gamma) [1/s]")
    cv: float = Field(2.0, gt=0, description="Coefficient of variation of the gaps (gamma)")
    mmpp_rates_per_s: tuple[float, float] = Field((2.0, 20.0), description="MMPP state rates [1/s]")
    mmpp_dwell_s: tuple[float, float] = Field((300.0, 60.0), description="MMPP mean dwell times [s]")
    prompt_median: float = Field(1000.0, gt=0, description="Prompt length median [tokens]")
    prompt_p99: float = Field(8000.0, gt=0, description="Prompt length p99 [tokens]")
    output_median: float = Field(250.0, gt=0, description="Output length median [tokens]")
    output_p99: float = Field(2000.0, gt=0, description="Output length p99 [tokens]")
    max_tokens: int = Field(131072, ge=1, description="Length clip [tokens]")
    ttft_s: float = Field(1.0, gt=0, description="TTFT SLO [s] (replaces [serving] ttft_slo_s)")
    tpot_s: float = Field(0.05, gt=0, description="TPOT SLO [s] (replaces [serving] tpot_slo_s)")


class ExtremeTableConfig(_Strict):
    """The ``extreme`` table of a ``family = "extreme"`` workload: long-context requests with a step burst
    (:func:`jobs.families.extreme.extreme_family`; its docstring gives the distributions and their sources), served
    by the ``[serving]`` section that names it.
    """

    duration_s: float = Field(3600.0, gt=0, description="Horizon of the arrivals [s]")
    rate_per_s: float = Field(1.0, gt=0, description="Base Poisson rate [1/s]")
    burst_multiplier: float = Field(10.0, ge=1, description="Rate factor inside the burst")
    burst_start_s: float = Field(1200.0, ge=0, description="Burst start [s]")
    burst_s: float = Field(300.0, gt=0, description="Burst length [s]")
    prompt_median: float = Field(32768.0, gt=0, description="Prompt length median [tokens]")
    prompt_p99: float = Field(131072.0, gt=0, description="Prompt length p99 [tokens]")
    output_median: float = Field(250.0, gt=0, description="Output length median [tokens]")
    output_p99: float = Field(2000.0, gt=0, description="Output length p99 [tokens]")
    ttft_s: float = Field(10.0, gt=0, description="TTFT SLO [s] (replaces [serving] ttft_slo_s)")
    tpot_s: float = Field(0.1, gt=0, description="TPOT SLO [s] (replaces [serving] tpot_slo_s)")


class MixedTableConfig(_Strict):
    """The ``mixed`` table of a ``family = "mixed"`` workload: shares of the facility's GPU-hours in training, inference
    and batch work (:func:`jobs.families.mixed.mixed_family`; its docstring gives the rules and distributions). The
    training jobs use the table's training_family keys (``kind``, ``per_day``, ``gpus``, ``train_hours_median``,
    ``sigma``) and its checkpoint and failure keys; the requests its ``inference`` table; a ``[serving]`` section
    with ``workload = "<name>"`` serves them (when ``share_inference`` > 0).
    """

    gpu_hours: float = Field(0.0, ge=0, description="GPU-hour budget of the horizon [h]; 0 = the system's (its "
                             "partition's) GPUs x duration_s")
    share_training: float = Field(0.6, ge=0, le=1, description="Share of the GPU-hours in useful training")
    share_inference: float = Field(0.3, ge=0, le=1, description="Share held by the serving partition")
    share_batch: float = Field(0.1, ge=0, le=1, description="Share in batch jobs (the three sum to 1)")
    duration_s: float = Field(7 * 86400.0, gt=0, description="Horizon [s]: the inference stream and the budget")
    rate_per_s: float = Field(5.0, gt=0, description="Inference arrival rate [1/s]")
    batch_per_day: float = Field(50.0, gt=0, description="Batch submissions per day (Poisson)")
    batch_nodes: list[int] = Field([1, 2, 4, 8, 16, 32], min_length=1, description="Batch job sizes [nodes]")
    batch_hours_median: float = Field(2.0, gt=0, description="Median batch run time [h] (log-normal)")
    batch_sigma: float = Field(1.0, ge=0, description="Log-normal sigma of the batch run time")
    batch_gpu_util: tuple[float, float] = Field((0.2, 1.0), description="Uniform batch GPU utilisation (low, high)")

    @model_validator(mode="after")
    def _shares_sum_to_one(self) -> "MixedTableConfig":
        tot = self.share_training + self.share_inference + self.share_batch
        if abs(tot - 1.0) > 1e-9:
            raise ValueError(f"mixed: share_training + share_inference + share_batch must be 1, got "
                             f"{self.share_training} + {self.share_inference} + {self.share_batch} = {tot:g}")
        return self


class WorkloadConfig(_Strict):
    """One ``[[workload]]`` table."""

    family: Literal["training", "training_family", "training_trace", "rl", "inference", "extreme", "mixed"] = Field(
        description="Workload family: 'training' (the jobs given), 'training_family' (drawn), 'training_trace' "
                    "(trace jobs mapped), 'rl' (an RL post-training pipeline: rollout and trainer pools), "
                    "'inference' or 'extreme' (requests for the [serving] section that names it), 'mixed' (shares "
                    "of training, inference and batch work)")
    name: str = Field("training", description="Prefix of the generated jobs' names")
    model: str | ModelConfig = Field("llama-3-70b", description="Shipped training model or an inline table")
    gpu: str = Field("h100-sxm", description="GPU type of the node-type catalogue")
    count: int = Field(1, ge=1, description="Jobs of this kind")
    submit_day: float = Field(0.0, ge=0, description="First submission [days after the trace origin]")
    spacing_h: float = Field(0.0, ge=0, description="Time between submissions [h]")
    train_hours: float = Field(24.0, gt=0, description="Useful training time of each job [h]")
    layout: LayoutConfig | None = Field(None, description="Parallel layout (family 'training')")
    checkpoint_interval_s: float | Literal["young-daly"] = Field(1800.0, description="Training time between "
                                                                 "checkpoints [s], or 'young-daly'")
    storage_bandwidth_GB_s: float = Field(2000.0, gt=0, description="Checkpoint write bandwidth of the storage "
                                          "[GB/s] (Llama 3: Tectonic 2 TB/s sustained)")
    failure_rate_per_gpu_h: float = Field(LLAMA3_FAILURE_RATE, ge=0, description="Interruptions per GPU-hour")
    detect_s: float = Field(120.0, ge=0, description="Failure detection time [s]")
    restart_s: float = Field(600.0, ge=0, description="Restart time from the last checkpoint [s]")
    kind: Literal["dense", "moe", "long-context"] = Field("dense", description="training_family: model kind")
    jobs: int = Field(4, ge=0, description="training_family: jobs drawn")
    per_day: float = Field(2.0, gt=0, description="training_family: Poisson submission rate [1/day]")
    gpus: list[int] = Field([512, 1024, 2048, 4096], description="training_family: allowed GPU counts")
    train_hours_median: float = Field(24.0, gt=0, description="training_family: median useful training time [h]")
    sigma: float = Field(1.0, ge=0, description="training_family: log-normal sigma of the training time")
    trace_queue: str = Field("", description="training_trace: trace queue whose jobs are training jobs")
    min_nodes: int = Field(1, ge=1, description="training_trace: smallest trace job mapped [nodes]")
    rl: RLTableConfig | None = Field(None, description="rl: the pipeline (rollout, reward, trainer, mode)")
    inference: InferenceTableConfig | None = Field(None, description="inference: arrivals, lengths and SLOs")
    extreme: ExtremeTableConfig | None = Field(None, description="extreme: long contexts and a burst")
    mixed: MixedTableConfig | None = Field(None, description="mixed: GPU-hour shares of training, inference, batch")
    partition: str = Field("", description="Batch partition the jobs run in (a partitioned system); '' = the "
                                           "partition the trace mapping gives (scheduler_sim.kernel.partitions)")

    @model_validator(mode="after")
    def _layout_given(self) -> "WorkloadConfig":
        if self.family in ("training", "rl") and self.layout is None:
            raise ValueError(f"family {self.family!r} needs a layout table (tp, pp, dp, ...)")
        if self.rl is not None and self.family != "rl":
            raise ValueError(f"an rl table belongs to family 'rl', not {self.family!r}")
        if self.inference is not None and self.family not in ("inference", "mixed"):
            raise ValueError(f"an inference table belongs to family 'inference' or 'mixed', not {self.family!r}")
        if self.mixed is not None and self.family != "mixed":
            raise ValueError(f"a mixed table belongs to family 'mixed', not {self.family!r}")
        if self.extreme is not None and self.family != "extreme":
            raise ValueError(f"an extreme table belongs to family 'extreme', not {self.family!r}")
        return self
