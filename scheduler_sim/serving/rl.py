"""RL post-training pipelines: rollout on the serving engine, a reward pool, the trainer (issue #24 item 2).

Three pools share the facility:

* **rollout**: a serving deployment (:class:`scheduler_sim.serving.hardware.Deployment`) runs every sample of a
  step as a request through the real :class:`scheduler_sim.serving.engine.ServingEngine` (continuous batching,
  paged KV cache, the fitted step model and GPU power); a step is ``prompts x group`` samples (GRPO groups) with
  log-normal prompt and output lengths (defaults: outputs median 500, p99 5,000 tokens, capped at ``max_output``;
  the heavy tail of reasoning rollouts, ../shared/notes/ai-workload-figures.md "Lesson notes" [S]: rollouts
  roughly log-normal; RLHFuse, arXiv 2409.13221: p99.9 output length > 10x the median);
* **reward**: ``reward_workers`` CPU sandbox workers, first come first served in the order samples finish, a
  log-normal time per sample (default median 2 s, p99 20 s: ASSUMPTION for unit-test execution; verl issue #980
  reports a code reward stage of 140 s per step against 180 s of rollout); or a **reward model** on
  ``reward_gpus`` GPUs (``reward_model`` set): each GPU scores one sample at a time, a forward pass of
  ``2 N_rm (prompt + output)`` FLOPs at ``eta_compute`` of the trainer GPU's peak, the GPU at its compute power
  while scoring and idle otherwise;
* **trainer**: the training model (:func:`jobs.training.iteration_time`) over the step's tokens (prompt + output of
  the samples it trains on, packed in ``seq_len`` sequences), plus a weight broadcast of the BF16 weights to the
  rollout pool over the network (``2 P / B_net``).

Modes:

* ``"sync"``: a barrier per step: rollout of every sample, reward, train, weight sync, then the next step;
* ``"async"``: rollout runs ahead of the trainer with a staleness bound ``k``: the samples of step ``j`` are
  generated with weights at least version ``j - k`` (version ``v`` = after ``v`` training steps), so step ``j``'s
  requests arrive when version ``j - k`` is published (at once for ``j <= k``); finished, rewarded samples wait in
  a replay buffer until the trainer takes them, one step's worth at a time (AReaL, arXiv 2505.24298; ``k = 1`` is
  one-step off-policy);
* ``partial_segment`` (sync only): a sample generates at most that many tokens per step; an unfinished one is kept
  (with its tokens so far) and continued in the next step's rollout, which prefills it again (Kimi k1.5, arXiv
  2501.12599, partial rollouts); the trainer takes the samples that finished.

Async exactness: step ``j``'s requests arrive after version ``j - k`` is published, which is after every sample of
step ``j - k - 1`` finished, so later arrivals cannot change those finish times; the engine is rerun on the growing
prefix of steps to place each arrival (cost quadratic in the number of steps, fine for tens of steps).

Outputs (:class:`RLResult`): step times, samples/s, idle fraction per pool, staleness histogram (trainer version at
training minus version used for generation), power per pool as step functions, energy per trained sample (GPU and
reward-CPU energy; facility overheads are applied by the run, not here).
"""

from __future__ import annotations

import dataclasses
import heapq
import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from jobs.families.inference import lognormal_from_median_p99
from jobs.requests import make_request_table
from jobs.training import ParallelLayout, TrainingConstants, TrainingGPU, TrainingModel, iteration_time

from .engine import BatchLimits, ServingEngine
from .hardware import Deployment

__all__ = ["RLConfig", "RLResult", "run_rl", "rl_summary"]


@dataclass(frozen=True)
class RLConfig:
    """An RL post-training pipeline.

    Attributes
    ----------
    rollout : Deployment
        Rollout pool (replicas x tensor_parallel GPUs).
    trainer_model : TrainingModel
    trainer_layout : ParallelLayout
        Its ``micro_batches`` is replaced per step to hold the step's tokens.
    trainer_gpu : TrainingGPU
    steps : int
        RL steps to train.
    prompts, group : int
        Prompts per step and samples per prompt.
    prompt_median, prompt_p99, output_median, output_p99 : float
        Length distributions [tokens].
    max_output : int
        Output cap [tokens].
    reward_workers : int
        CPU sandbox workers.
    reward_median_s, reward_p99_s : float
        Reward time per sample [s].
    reward_worker_W : float
        Power a busy worker adds above its node's idle [W] (ASSUMPTION: one core of a 350 W, 56-core socket
        at full load ~ 5 W plus its share of memory traffic: 10 W).
    reward_idle_W : float
        Idle power of the reward pool's nodes [W].
    reward_model : TrainingModel or None
        A reward model scored on GPUs instead of the CPU sandbox (its parameters set the forward FLOPs).
    reward_gpus : int
        GPUs of the reward-model pool (>= 1 when ``reward_model`` is set; of the trainer's GPU type).
    mode : {"sync", "async"}
    staleness : int
        Bound ``k`` (async).
    partial_segment : int
        Tokens per step per sample (sync; 0 = off).
    max_num_seqs : int
        Rollout engine's batch limit.
    seed : int
    """

    rollout: Deployment
    trainer_model: TrainingModel
    trainer_layout: ParallelLayout
    trainer_gpu: TrainingGPU
    steps: int = 10
    prompts: int = 64
    group: int = 8
    prompt_median: float = 300.0
    prompt_p99: float = 2000.0
    output_median: float = 500.0
    output_p99: float = 5000.0
    max_output: int = 16384
    reward_workers: int = 256
    reward_median_s: float = 2.0
    reward_p99_s: float = 20.0
    reward_worker_W: float = 10.0
    reward_idle_W: float = 0.0
    reward_model: TrainingModel | None = None
    reward_gpus: int = 0
    mode: str = "sync"
    staleness: int = 1
    partial_segment: int = 0
    max_num_seqs: int = 256
    seed: int = 0
    const: TrainingConstants = field(default_factory=TrainingConstants)

    def __post_init__(self) -> None:
        """Check the mode and sizes."""
        if self.mode not in ("sync", "async"):
            raise ValueError(f"RL mode {self.mode!r}; expected 'sync' or 'async'")
        if self.steps < 1 or self.prompts < 1 or self.group < 1 or self.reward_workers < 1 or self.staleness < 0:
            raise ValueError("RL config: steps, prompts, group, reward_workers must be >= 1 and staleness >= 0")
        if self.partial_segment and self.mode != "sync":
            raise ValueError("partial rollouts are modelled in sync mode only")
        if self.reward_model is not None and self.reward_gpus < 1:
            raise ValueError("a reward model needs reward_gpus >= 1")


@dataclass
class RLResult:
    """Outputs of :func:`run_rl` (module docstring).

    Attributes
    ----------
    step_end_s : ndarray, shape (steps,)
        End of each training step (weights published) [s].
    samples_trained : ndarray of int, shape (steps,)
    staleness : ndarray of int, shape (trained samples,)
        Version at training minus version used to generate, per trained sample.
    busy_s : dict
        Busy time per pool [s]: rollout (GPU-replica-seconds / replicas), reward (worker-seconds / workers),
        trainer.
    energy_J : dict
        Energy per pool [J] over the run (idle included).
    power : dict of (ndarray, ndarray)
        Per pool a step function ``(t_s, P_W)``: the pool's power from ``t_s[i]`` to ``t_s[i+1]``.
    info : dict
        ``t_train_s`` per step, engine events, wall time.
    """

    step_end_s: np.ndarray
    samples_trained: np.ndarray
    staleness: np.ndarray
    busy_s: dict
    energy_J: dict
    power: dict
    info: dict = field(default_factory=dict)

    @property
    def makespan_s(self) -> float:
        """float: end of the last step [s]."""
        return float(self.step_end_s[-1])

    @property
    def samples_per_s(self) -> float:
        """float: trained samples per second of the run."""
        return float(self.samples_trained.sum()) / self.makespan_s

    @property
    def mean_step_s(self) -> float:
        """float: makespan / steps [s]."""
        return self.makespan_s / self.step_end_s.size

    @property
    def idle_fraction(self) -> dict:
        """dict: per pool, 1 - busy time / makespan."""
        return {k: 1.0 - v / self.makespan_s for k, v in self.busy_s.items()}

    @property
    def energy_per_sample_J(self) -> float:
        """float: all pools' energy / trained samples [J]."""
        return sum(self.energy_J.values()) / float(self.samples_trained.sum())

    def staleness_histogram(self) -> dict:
        """dict: staleness -> count of trained samples."""
        v, c = np.unique(self.staleness, return_counts=True)
        return {int(a): int(b) for a, b in zip(v, c)}


def _reward(done_s: np.ndarray, dur_s: np.ndarray, workers: int) -> tuple[np.ndarray, float]:
    """FCFS list scheduling on ``workers`` servers: completion times and total busy time."""
    order = np.argsort(done_s, kind="stable")
    free = [0.0] * workers
    heapq.heapify(free)
    out = np.empty(done_s.size)
    for i in order:
        f = heapq.heappop(free)
        s = max(f, float(done_s[i]))
        e = s + float(dur_s[i])
        out[i] = e
        heapq.heappush(free, e)
    return out, float(dur_s.sum())


def _train_time(cfg: RLConfig, tokens: float) -> tuple[float, float, float]:
    """Trainer step time for ``tokens``, its mean GPU power, and the weight broadcast time [s, W, s]."""
    lay = cfg.trainer_layout
    m = cfg.trainer_model
    per = lay.dp * lay.micro_batch_size * m.seq_len
    mb = max(1, math.ceil(tokens / per))
    lay = dataclasses.replace(lay, micro_batches=mb)
    it = iteration_time(m, lay, cfg.trainer_gpu, cfg.const)
    g, c = cfg.trainer_gpu, cfg.const
    d, _ = it.phases()
    u = np.array([c.util_compute, c.util_bubble, c.util_comm])
    P = g.idle_power_W + (g.max_power_W - g.idle_power_W) * float(np.dot(d, u)) / float(d.sum())
    sync = 2.0 * m.params / g.network_bandwidth_B_s
    return it.t_iter_s, P, sync


def run_rl(cfg: RLConfig) -> RLResult:
    """Simulate ``cfg.steps`` RL steps (module docstring).

    Parameters
    ----------
    cfg : RLConfig

    Returns
    -------
    RLResult

    Notes
    -----
    The engine and the training model raise ValueError for a prompt that never fits a replica or a trainer
    layout that does not fit in memory.
    """
    rng = np.random.default_rng([cfg.seed, 24, 2])
    n_s = cfg.prompts * cfg.group
    S = cfg.steps
    # every step's samples drawn up front (same draws in both modes for a fair comparison)
    prm = [np.repeat(lognormal_from_median_p99(rng, cfg.prompt_median, cfg.prompt_p99, cfg.prompts, 32768),
                     cfg.group) for _ in range(S)]
    out = [lognormal_from_median_p99(rng, cfg.output_median, cfg.output_p99, n_s, cfg.max_output) for _ in range(S)]
    rew = [lognormal_from_median_p99(rng, 1000.0 * cfg.reward_median_s, 1000.0 * cfg.reward_p99_s, n_s, 10**9)
           / 1000.0 for _ in range(S)]
    if cfg.reward_model is not None:  # a reward model: forward FLOPs of each sample on one GPU
        g = cfg.trainer_gpu
        per_tok = 2.0 * cfg.reward_model.active_params / (g.peak_flops * cfg.const.eta_compute)
        rew = [per_tok * (prm[j] + out[j]).astype(float) for j in range(S)]
        cfg = dataclasses.replace(cfg, reward_workers=cfg.reward_gpus,
                                  reward_worker_W=(g.max_power_W - g.idle_power_W) * cfg.const.util_compute,
                                  reward_idle_W=g.idle_power_W * cfg.reward_gpus)
    eng = ServingEngine(cfg.rollout, BatchLimits(max_num_seqs=cfg.max_num_seqs))
    gpu_roll = cfg.rollout.tensor_parallel * cfg.rollout.replicas
    n_train = cfg.trainer_layout.n_gpus
    P_train_idle = cfg.trainer_gpu.idle_power_W * n_train
    info: dict = {"t_train_s": [], "engine_events": 0}
    if cfg.mode == "sync":
        res = _sync(cfg, eng, prm, out, rew, info)
    else:
        res = _async(cfg, eng, prm, out, rew, info)
    step_end, trained, stale, roll_segs, train_iv, reward_iv, reward_busy = res
    T = float(step_end[-1])
    # rollout pool power: engine segments per replica (each GPU of the replica at P), idle elsewhere
    P_idle_roll = cfg.rollout.gpu.idle_power_W
    ev_t, ev_d = [0.0], [P_idle_roll * gpu_roll]
    busy_roll = 0.0
    for (a, b, P) in roll_segs:
        ev_t += list(a) + list(b)
        ev_d += list((P - P_idle_roll) * cfg.rollout.tensor_parallel) + list(-(P - P_idle_roll) *
                                                                             cfg.rollout.tensor_parallel)
        busy_roll += float((b - a).sum())
    power = {"rollout": _steps(np.array(ev_t), np.array(ev_d), T)}
    # trainer: its mean power while training, idle otherwise
    tt, td = [0.0], [P_train_idle]
    busy_train = 0.0
    for a, b, P in train_iv:
        tt += [a, b]
        td += [(P - cfg.trainer_gpu.idle_power_W) * n_train, -(P - cfg.trainer_gpu.idle_power_W) * n_train]
        busy_train += b - a
    power["trainer"] = _steps(np.array(tt), np.array(td), T)
    rt, rd = [0.0], [cfg.reward_idle_W]
    for a, b in reward_iv:
        rt += [a, b]
        rd += [cfg.reward_worker_W, -cfg.reward_worker_W]
    power["reward"] = _steps(np.array(rt), np.array(rd), T)
    energy = {k: float(np.dot(np.diff(np.append(t, T)), P)) for k, (t, P) in power.items()}
    busy = {"rollout": busy_roll / cfg.rollout.replicas, "reward": reward_busy / cfg.reward_workers,
            "trainer": busy_train}
    return RLResult(np.asarray(step_end), np.asarray(trained), np.asarray(stale, dtype=int), busy, energy, power,
                    info)


def _steps(t: np.ndarray, d: np.ndarray, T: float) -> tuple[np.ndarray, np.ndarray]:
    """A step function from jumps ``d`` at times ``t`` (first jump = initial value) on ``[0, T]``."""
    o = np.argsort(t, kind="stable")
    t, d = t[o], d[o]
    keep = t <= T
    t, P = t[keep], np.cumsum(d[keep])
    u, idx = np.unique(t[::-1], return_index=True)  # last value at each time
    last = t.size - 1 - idx
    return u, P[last]


def _segments(r) -> list:
    return [(np.asarray(a, float), np.asarray(b, float), np.asarray(P, float)) for (a, b, P) in r.segments]


def _sync(cfg, eng, prm, out, rew, info):
    S = cfg.steps
    t = 0.0
    step_end, trained, stale, segs, train_iv, reward_iv = [], [], [], [], [], []
    reward_busy = 0.0
    carry_p = np.zeros(0, np.int64)
    carry_o = np.zeros(0, np.int64)
    carry_v = np.zeros(0, np.int64)        # version a carried sample started with
    carry_r = np.zeros(0)
    for j in range(S):
        p = np.concatenate([carry_p, prm[j]])
        o_left = np.concatenate([carry_o, out[j]])
        ver = np.concatenate([carry_v, np.full(prm[j].size, j)])
        rdur = np.concatenate([carry_r, rew[j]])
        seg = cfg.partial_segment
        o_now = np.minimum(o_left, seg) if seg else o_left
        req = make_request_table(np.zeros(p.size), p, np.maximum(o_now, 1))
        r = eng.run(req)
        info["engine_events"] += int(r.info["events"])
        fin = t + r.requests.sort_values("request_id")["finish_s"].to_numpy(float)
        segs += [(a + t, b + t, P) for (a, b, P) in _segments(r)]
        done = o_now >= o_left
        rdone, rb = _reward(fin[done], rdur[done], cfg.reward_workers)
        reward_busy += rb
        reward_iv += list(zip(rdone - rdur[done], rdone))
        t_ready = float(rdone.max()) if rdone.size else float(fin.max())
        tokens = float((p[done] + o_left[done]).sum())
        tt, P, sync = _train_time(cfg, max(tokens, 1.0))
        info["t_train_s"].append(tt)
        train_iv.append((t_ready, t_ready + tt, P))
        t = t_ready + tt + sync
        step_end.append(t)
        trained.append(int(done.sum()))
        stale += list(j - ver[done])
        keep = ~done
        carry_p = (p + o_now)[keep]
        carry_o = (o_left - o_now)[keep]
        carry_v = ver[keep]
        carry_r = rdur[keep]
    return step_end, trained, stale, segs, train_iv, reward_iv, reward_busy


def _async(cfg, eng, prm, out, rew, info):
    S = cfg.steps
    k = cfg.staleness
    n_s = prm[0].size
    arrive = np.zeros(S)
    published = np.full(S + 1, np.inf)     # time version v is published (v = 0 at t = 0)
    published[0] = 0.0
    train_end = np.zeros(S)
    train_iv, stale = [], []
    fin_all = rdone_all = None
    reward_busy = 0.0
    reward_iv = []
    last = None
    for j in range(S):
        v_need = max(0, j - k)
        if not math.isfinite(published[v_need]):
            raise RuntimeError("internal: staleness gate before its version")  # pragma: no cover
        arrive[j] = published[v_need]
        # rerun the engine on steps 0..j (arrivals known); finish times of step j are final once step j+k+1 is placed
        t_arr = np.repeat(arrive[:j + 1], n_s)
        req = make_request_table(t_arr, np.concatenate(prm[:j + 1]), np.concatenate(out[:j + 1]))
        last = eng.run(req)
        fin_all = last.requests.sort_values("request_id")["finish_s"].to_numpy(float)
        rd = np.concatenate(rew[:j + 1])
        rdone_all, _ = _reward(fin_all, rd, cfg.reward_workers)
        # the trainer takes step i's samples once all are rewarded and it is free; version i+1 published after
        for i in range(j + 1):
            if i < len(train_iv):
                continue
            # step i's samples are final only if no later arrival can precede their finish: arrival of step
            # i+k+1 is published[i+1] >= their reward end, so compute step i now when j >= min(S-1, i+k)
            if j < min(S - 1, i + k):
                break
            sl = slice(i * n_s, (i + 1) * n_s)
            ready = float(rdone_all[sl].max())
            start = max(ready, train_end[i - 1] + _sync_time(cfg) if i else ready)
            tokens = float((prm[i] + out[i]).sum())
            tt, P, sync = _train_time(cfg, tokens)
            info["t_train_s"].append(tt)
            train_iv.append((start, start + tt, P))
            train_end[i] = start + tt
            published[i + 1] = start + tt + sync
            v_gen = int(np.searchsorted(published[:i + 1], arrive[i], side="right")) - 1  # newest version then
            stale += [i - v_gen] * n_s
    info["engine_events"] = int(last.info["events"])
    rd = np.concatenate(rew)
    rdone_all, reward_busy = _reward(fin_all, rd, cfg.reward_workers)
    reward_iv = list(zip(rdone_all - rd, rdone_all))
    step_end = published[1:]
    return (list(step_end), [n_s] * S, stale, _segments(last), train_iv, reward_iv, reward_busy)


def _sync_time(cfg: RLConfig) -> float:
    return 2.0 * cfg.trainer_model.params / cfg.trainer_gpu.network_bandwidth_B_s


def rl_summary(res: RLResult) -> pd.DataFrame:
    """One-row table of the headline outputs.

    Parameters
    ----------
    res : RLResult

    Returns
    -------
    pandas.DataFrame
    """
    idle = res.idle_fraction
    return pd.DataFrame([{"mean_step_s": res.mean_step_s, "samples_per_s": res.samples_per_s,
                          "idle_rollout": idle["rollout"], "idle_reward": idle["reward"],
                          "idle_trainer": idle["trainer"], "energy_per_sample_J": res.energy_per_sample_J}])
