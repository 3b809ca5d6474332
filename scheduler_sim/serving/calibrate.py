"""Fit the serving step-time and power models to measured steady-state serving by batch size.

Step time (:func:`fit_step_time`). The roofline step of :mod:`scheduler_sim.serving.roofline` has two fixed
costs, one per step ``t_0`` and one per running sequence ``c_seq``; everything else (weight and KV bytes, FLOPs,
all-reduce) comes from the datasheet and the model's architecture. A measured row's median inter-token latency is
taken as its *decode step*: ``B`` sequences of mean cached length ``Lp + O / 2`` and no prompt tokens (the prefill
work is spread unevenly over the steps, a few steps carrying whole prompts, so the median gap sits at the plain
decode step while the mean step, which sets the throughput, carries the prefill as well). The measured latency
minus the physical part is then linear in ``(t_0, c_seq)``: ``ITL - t_phys(B) = t_0 + c_seq B``, fitted by least
squares. The throughput, and so the energy per output token, is then a prediction, not a fit: the mean step
(:func:`steady_state_step`, prefill included) against ``avg_batch_size / output_throughput``.

The step model (:mod:`scheduler_sim.serving.roofline`) gives each engine step its achieved fractions of peak
FLOP/s ``a_c`` and of peak HBM bandwidth ``a_m``; GPU power during the step is
``P = P_idle + (P_max - P_idle) min(1, p_active + k_c a_c + k_m a_m)``. ``p_active`` is the share of the range a
GPU draws whenever it runs kernels at all (clocks up, SMs and HBM awake), which a pure utilisation law misses:
measured decode power at small batch sits far above idle although its ``a_c`` is tiny.

A measured row (batch ``B``, mean output length ``O``, average power per GPU) is a steady state of continuous
batching. It is represented by one *mean step*: ``B`` decode tokens whose mean cached length is ``Lp + O / 2``,
plus the prompt tokens that arrive per step, ``q = B Lp / O`` (every sequence joins once per ``O`` steps; vLLM
mixes prompt chunks into decode steps), each prompt whole (attention positions ``q (Lp + 1) / 2``, no cached KV
read). ``Lp`` is the mean prompt length. With ``a_c``, ``a_m`` of that step from :meth:`StepModel.cost` (which do
not depend on the power constants), the model is linear in ``(p_active, k_c, k_m)`` below the clip, so the fit is a
non-negative least-squares problem on ``(P - P_idle) / (P_max - P_idle)``, solved exactly by trying every subset of
free parameters (three parameters: seven subsets) and keeping the best feasible one.

The shipped fit (``scheduler_sim/serving/data/gpus/h100-sxm.toml``) uses the ML.ENERGY Benchmark v3.0 H100 rows of
Llama 3.3 70B on 4 GPUs (``tests/data/mlenergy_v3_h100_llama-3.3-70b_lm-arena-chat.csv``, its README gives the
source) with ``Lp = 200`` tokens (ASSUMPTION: LMArena prompts are short chat turns; the fitted powers stay within
2.4 % of every row for any ``Lp`` from 100 to 1,000 tokens, but the split between the three constants moves).

Reproduce::

    .venv/bin/python -m scheduler_sim.serving.calibrate tests/data/mlenergy_v3_h100_llama-3.3-70b_lm-arena-chat.csv
"""

from __future__ import annotations

import csv
import itertools
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .hardware import Deployment, load_gpu, load_model
from .roofline import StepModel

__all__ = ["PowerFit", "StepFit", "fit_power", "fit_step_time", "read_measurements", "steady_state_step",
           "decode_step"]

#: Mean prompt length assumed for the lm-arena-chat rows [tokens] (see the module docstring).
PROMPT_TOKENS = 200.0


@dataclass(frozen=True)
class PowerFit:
    """Result of :func:`fit_power`.

    Attributes
    ----------
    p_active, k_compute, k_memory : float
        Fitted constants (dimensionless, >= 0).
    P_meas_W, P_fit_W : ndarray, shape (n,)
        Measured and fitted power per GPU of each row [W].
    a_c, a_m, t_step_s : ndarray, shape (n,)
        Achieved compute / bandwidth fractions and step time of each row's mean step.
    """

    p_active: float
    k_compute: float
    k_memory: float
    P_meas_W: np.ndarray
    P_fit_W: np.ndarray
    a_c: np.ndarray
    a_m: np.ndarray
    t_step_s: np.ndarray

    @property
    def max_rel_error(self) -> float:
        """float: largest ``|P_fit / P_meas - 1|`` over the rows."""
        return float(np.max(np.abs(self.P_fit_W / self.P_meas_W - 1.0)))


def read_measurements(path: str | Path) -> list[dict]:
    """Rows of a measurement table (columns of ``tests/data/mlenergy_v3_*.csv``), numbers as floats.

    Parameters
    ----------
    path : str | Path
        The CSV file.

    Returns
    -------
    list[dict]
        One dict per data row: every column as read (text), the five needed ones (``num_gpus`` ...
        ``avg_power_watts``) as float.

    Raises
    ------
    ValueError
        If a needed column is missing or a value is not a positive number (file and line named).
    """
    path = Path(path)
    need = ("num_gpus", "tensor_parallel", "avg_batch_size", "avg_output_len", "avg_power_watts")
    rows = []
    with path.open(newline="", encoding="utf-8") as fh:
        rd = csv.DictReader(fh)
        missing = [c for c in need if c not in (rd.fieldnames or ())]
        if missing:
            raise ValueError(f"{path}: columns {missing} missing")
        for line, r in enumerate(rd, start=2):
            try:
                vals = {c: float(r[c]) for c in need}
            except ValueError:
                raise ValueError(f"{path}: line {line}: a value of {need} is not a number") from None
            if min(vals.values()) <= 0:
                raise ValueError(f"{path}: line {line}: every value of {need} must be > 0")
            rows.append(dict(r, **vals))
    if not rows:
        raise ValueError(f"{path}: no rows")
    return rows


def steady_state_step(sm: StepModel, batch: float, out_len: float, prompt_len: float = PROMPT_TOKENS):
    """Achieved fractions and time of the mean step of a continuous-batching steady state.

    Parameters
    ----------
    sm : StepModel
        Step model of one replica.
    batch : float
        Running sequences ``B`` (> 0).
    out_len : float
        Mean output tokens per request ``O`` (> 0).
    prompt_len : float
        Mean prompt tokens ``Lp`` (>= 0).

    Returns
    -------
    a_c, a_m : float
        Achieved fractions of peak FLOP/s and of peak bandwidth.
    t_s : float
        Step time [s].
    """
    q = batch * prompt_len / out_len
    L = prompt_len + out_len / 2.0
    n = batch + q
    attn = batch * (L + 1.0) + q * (prompt_len + 1.0) / 2.0
    kv = batch * L
    t, _ = sm.cost(n, attn, kv, batch + batch / out_len)  # B decoding + B / O prompts joining per step
    F = sm.flops_per_token * n + sm.attn_flops_per_pos * attn
    B = sm.weight_bytes + sm.kv_bytes * (kv + n)
    return float(F / (sm.F_pk * t)), float(B / (sm.B_pk * t)), float(t)


def decode_step(sm: StepModel, batch: float, out_len: float, prompt_len: float = PROMPT_TOKENS) -> float:
    """Time of a plain decode step of the steady state: ``batch`` sequences of mean cached length
    ``prompt_len + out_len / 2``, no prompt tokens [s] (compared with the median inter-token latency).

    Parameters
    ----------
    sm : StepModel
        Step model of one replica.
    batch : float
        Running sequences ``B`` (> 0).
    out_len : float
        Mean output tokens per request ``O`` (> 0).
    prompt_len : float
        Mean prompt tokens ``Lp`` (>= 0).

    Returns
    -------
    float
        Step time [s].
    """
    L = prompt_len + out_len / 2.0
    t, _ = sm.cost(batch, batch * (L + 1.0), batch * L, batch)
    return float(t)


@dataclass(frozen=True)
class StepFit:
    """Result of :func:`fit_step_time`.

    Attributes
    ----------
    step_overhead_s, seq_overhead_s : float
        Fitted fixed cost per step and per running sequence [s].
    itl_meas_s, itl_fit_s : ndarray, shape (n,)
        Measured median inter-token latency and the fitted decode step of each row [s].
    """

    step_overhead_s: float
    seq_overhead_s: float
    itl_meas_s: np.ndarray
    itl_fit_s: np.ndarray


def fit_step_time(dep: Deployment, rows: list[dict], prompt_len: float = PROMPT_TOKENS) -> StepFit:
    """Least-squares fit of the per-step and per-sequence fixed costs to measured median inter-token latency.

    ``median_itl_ms / 1e3 - t_phys = t_0 + c_seq B`` with ``t_phys`` the decode step (:func:`decode_step`)
    without the two costs; see the module docstring.

    Parameters
    ----------
    dep : Deployment
        The deployment the rows were measured on (its other constants are kept).
    rows : list[dict]
        From :func:`read_measurements`; each needs ``median_itl_ms``.
    prompt_len : float
        Mean prompt length [tokens].

    Returns
    -------
    StepFit

    Raises
    ------
    ValueError
        If a row lacks a positive ``median_itl_ms`` or was measured on another tensor-parallel degree, or the fit
        gives a negative cost.
    """
    c0 = dep.constants.model_copy(update={"step_overhead_s": 0.0, "seq_overhead_s": 0.0})
    sm = StepModel(dep.model_copy(update={"constants": c0}))
    X, y = [], []
    for k, r in enumerate(rows):
        if int(r["tensor_parallel"]) != dep.tensor_parallel:
            raise ValueError(f"row {k}: tensor_parallel {r['tensor_parallel']:g}, the deployment has "
                             f"{dep.tensor_parallel}")
        try:
            itl = float(r["median_itl_ms"]) / 1e3
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"row {k}: median_itl_ms missing or not a number") from None
        if not itl > 0:
            raise ValueError(f"row {k}: median_itl_ms must be > 0, got {r['median_itl_ms']!r}")
        B = r["avg_batch_size"]
        X.append([1.0, B])
        y.append(itl - decode_step(sm, B, r["avg_output_len"], prompt_len))
    X, y = np.asarray(X), np.asarray(y)
    sol, *_ = np.linalg.lstsq(X, y, rcond=None)
    if np.any(sol < 0):
        raise ValueError(f"fitted step costs are negative (t_0 = {sol[0]:.3g} s, c_seq = {sol[1]:.3g} s): the "
                         "physical step is already longer than the measured latency")
    meas = y + np.array([decode_step(sm, r["avg_batch_size"], r["avg_output_len"], prompt_len) for r in rows])
    return StepFit(float(sol[0]), float(sol[1]), meas, meas - y + X @ sol)


def fit_power(dep: Deployment, rows: list[dict], prompt_len: float = PROMPT_TOKENS) -> PowerFit:
    """Non-negative least-squares fit of ``(p_active, k_compute, k_memory)`` to measured serving power.

    Parameters
    ----------
    dep : Deployment
        The deployment the rows were measured on (its GPU's idle and maximum power are kept).
    rows : list[dict]
        From :func:`read_measurements`; ``avg_power_watts`` is the total over ``num_gpus`` GPUs.
    prompt_len : float
        Mean prompt length [tokens].

    Returns
    -------
    PowerFit

    Raises
    ------
    ValueError
        If a row's GPU count or tensor-parallel degree differs from the deployment's, or a measured power lies
        outside the GPU's idle-to-maximum range.
    """
    sm = StepModel(dep)
    X, y, P, tt = [], [], [], []
    for r in rows:
        if int(r["tensor_parallel"]) != dep.tensor_parallel or int(r["num_gpus"]) != dep.tensor_parallel:
            raise ValueError(f"row with {r['num_gpus']:g} GPUs, TP {r['tensor_parallel']:g}: the deployment has "
                             f"tensor_parallel {dep.tensor_parallel}")
        p = r["avg_power_watts"] / r["num_gpus"]
        if not dep.gpu.idle_power_W < p <= dep.gpu.max_power_W:
            raise ValueError(f"measured {p:.1f} W per GPU outside ({dep.gpu.idle_power_W}, {dep.gpu.max_power_W}] W")
        a_c, a_m, t = steady_state_step(sm, r["avg_batch_size"], r["avg_output_len"], prompt_len)
        X.append([1.0, a_c, a_m])
        y.append((p - sm.P_idle) / sm.P_range)
        P.append(p)
        tt.append(t)
    X, y = np.asarray(X), np.asarray(y)
    best, best_res = None, np.inf
    for k in range(1, 4):
        for cols in itertools.combinations(range(3), k):
            sol, *_ = np.linalg.lstsq(X[:, cols], y, rcond=None)
            if np.any(sol < 0):
                continue
            x = np.zeros(3)
            x[list(cols)] = sol
            res = float(np.sum((X @ x - y) ** 2))
            if res < best_res - 1e-15:
                best, best_res = x, res
    P_fit = sm.P_idle + sm.P_range * np.minimum(1.0, X @ best)
    return PowerFit(float(best[0]), float(best[1]), float(best[2]), np.asarray(P), P_fit, X[:, 1], X[:, 2],
                    np.asarray(tt))


def _main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__)
        return 2
    rows = read_measurements(argv[0])
    dep = Deployment(name="fit", model=load_model("llama-3-70b"), gpu=load_gpu("h100-sxm"),
                     tensor_parallel=int(rows[0]["tensor_parallel"]))
    sf = fit_step_time(dep, rows)
    print(f"step_overhead_s = {sf.step_overhead_s:.4e}\nseq_overhead_s = {sf.seq_overhead_s:.4e}")
    print(f"{'batch':>7s} {'median ITL ms':>14s} {'decode step ms':>15s} {'error':>7s}")
    for r, a, b in zip(rows, sf.itl_meas_s, sf.itl_fit_s):
        print(f"{r['avg_batch_size']:7.1f} {1e3 * a:14.2f} {1e3 * b:15.2f} {100 * (b / a - 1):6.2f} %")
    fit = fit_power(dep, rows)
    print(f"p_active = {fit.p_active:.4f}\nk_compute = {fit.k_compute:.4f}\nk_memory = {fit.k_memory:.4f}")
    print(f"{'batch':>7s} {'measured W':>11s} {'fitted W':>9s} {'error':>7s}")
    for r, pm, pf in zip(rows, fit.P_meas_W, fit.P_fit_W):
        print(f"{r['avg_batch_size']:7.1f} {pm:11.1f} {pf:9.1f} {100 * (pf / pm - 1):6.2f} %")
    print(f"max |error| {100 * fit.max_rel_error:.2f} %")
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
