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
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from jobs.training import LLAMA3_FAILURE_RATE

__all__ = ["WorkloadConfig", "LayoutConfig", "ModelConfig"]


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


class WorkloadConfig(_Strict):
    """One ``[[workload]]`` table."""

    family: Literal["training"] = Field(description="Workload family (only 'training' is wired into runs)")
    name: str = Field("training", description="Prefix of the generated jobs' names")
    model: str | ModelConfig = Field("llama-3-70b", description="Shipped training model or an inline table")
    gpu: str = Field("h100-sxm", description="GPU type of the node-type catalogue")
    count: int = Field(1, ge=1, description="Jobs of this kind")
    submit_day: float = Field(0.0, ge=0, description="First submission [days after the trace origin]")
    spacing_h: float = Field(0.0, ge=0, description="Time between submissions [h]")
    train_hours: float = Field(24.0, gt=0, description="Useful training time of each job [h]")
    layout: LayoutConfig
    checkpoint_interval_s: float | Literal["young-daly"] = Field(1800.0, description="Training time between "
                                                                 "checkpoints [s], or 'young-daly'")
    storage_bandwidth_GB_s: float = Field(2000.0, gt=0, description="Checkpoint write bandwidth of the storage "
                                          "[GB/s] (Llama 3: Tectonic 2 TB/s sustained)")
    failure_rate_per_gpu_h: float = Field(LLAMA3_FAILURE_RATE, ge=0, description="Interruptions per GPU-hour")
    detect_s: float = Field(120.0, ge=0, description="Failure detection time [s]")
    restart_s: float = Field(600.0, ge=0, description="Restart time from the last checkpoint [s]")
