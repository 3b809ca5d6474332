"""Step time and GPU power of one engine step of one replica: a roofline model, phase by phase.

A step processes ``n_tok`` tokens: prefill chunks (``q`` new tokens on top of ``c0`` cached ones) and decode
tokens (one per running sequence, on top of its ``L`` cached tokens). With ``P`` parameters, ``W`` weight bytes,
``kv`` KV bytes per token, ``n_layers`` layers, attention width ``d = heads x head_dim``, tensor-parallel degree
``tp``, peak FLOP/s ``F_pk``, bandwidth ``B_pk``, link bandwidth ``B_link``:

* FLOPs ``F = 2 P n_tok + 4 n_layers d A`` with attention positions ``A = sum_chunks (q c0 + q (q+1) / 2) +
  sum_decode (L + 1)`` (QK^T and AV, two FLOPs per multiply-add);
* bytes ``B = W + kv (R + n_tok)``: weights read once per step, cached KV read (``R = sum c0 + sum L``), new KV
  written;
* two phases that run one after the other in every layer, each bound by compute or by bandwidth:
  the weight GEMMs (projections, MLP, LM head) ``t_lin = max(2 P n_tok / (tp F_pk eta_c), W / (tp B_pk eta_m))``
  and attention, which reads every sequence's cached KV and writes the new KV,
  ``t_attn = max(4 n_layers d A / (tp F_pk eta_c), kv (R + n_tok) / (tp B_pk eta_m))``;
* all-reduce time (tp > 1) ``t_ar = 2 n_layers (alpha + 2 (tp - 1) / tp x n_tok x hidden x b_act / B_link)``
  (ring all-reduce, two per layer: after attention and after the MLP);
* a fixed cost per step ``t_0`` and a fixed cost per running sequence ``c_seq`` (scheduling, input preparation,
  sampling and output processing of each sequence, on the host and in small kernels; it does not shrink with
  ``tp``: every rank does it for every sequence);
* step time ``t = t_lin + t_attn + t_ar + t_0 + c_seq n_seq``, ``n_seq`` the sequences in the step (decoding and
  prefilling).

Attention is *not* overlapped with the GEMMs: the kernels of one layer run in sequence (QKV projection, attention,
output projection, all-reduce, MLP, all-reduce), so the KV reads add to the weight reads' time instead of hiding
under a compute-bound GEMM. With a single ``max`` over all FLOPs and all bytes the step time grew too slowly with
the batch (issue #24: model / measured energy per token 0.56-0.64 at max_num_seqs 128-768 on ML.ENERGY v3).
``t_0`` and ``c_seq`` are fitted to the measured median inter-token latency of ML.ENERGY v3.0 (Llama 3.3 70B, 4 x
H100, max_num_seqs 8-768; :func:`scheduler_sim.serving.calibrate.fit_step_time`), see
:class:`scheduler_sim.serving.hardware.RooflineConstants`.

GPU power during the step (every GPU of the replica alike): with ``a_c = F / (tp F_pk t)`` and ``a_m = B / (tp
B_pk t)`` the achieved fractions of peak, ``P = P_idle + (P_max - P_idle) min(1, p_active + k_c a_c + k_m a_m)``.
Constants and their sources: :class:`scheduler_sim.serving.hardware.RooflineConstants` (V100 calibration) and the
GPU's own fit where its data file has one (``h100-sxm``: ML.ENERGY v3.0 measurements,
:mod:`scheduler_sim.serving.calibrate`).

References
----------
.. [1] S. Williams, A. Waterman, D. Patterson, "Roofline: an insightful visual performance model for multicore
   architectures", CACM 52(4), 2009.
.. [2] J. Kaplan et al., "Scaling Laws for Neural Language Models", arXiv 2001.08361, 2020 (2 P FLOPs per token
   forward, attention FLOPs per token proportional to layers x context x width).
.. [3] P. Patarasuk, X. Yuan, "Bandwidth optimal all-reduce algorithms for clusters of workstations", JPDC 69(2),
   2009 (ring all-reduce moves 2 (p-1)/p of the message per rank).
"""

from __future__ import annotations

import numpy as np

from .hardware import Deployment

__all__ = ["StepModel"]

#: Decode runs of at most this many steps are costed in Python floats (:meth:`StepModel.decode_steps`); longer ones
#: with numpy arrays. Measured on the Azure hour: numpy's ~20 array operations cost about as much as 30 steps in
#: Python.
_PY_STEPS = 24


class StepModel:
    """Roofline step time and power for one replica of a deployment.

    Parameters
    ----------
    dep : Deployment
        Model, GPU type, tensor-parallel degree and constants.
    """

    def __init__(self, dep: Deployment) -> None:
        m, g, c = dep.model, dep.gpu, dep.constants
        tp = dep.tensor_parallel
        self.flops_per_token = 2.0 * m.parameters
        self.attn_flops_per_pos = 4.0 * m.layers * m.attention_width
        self.weight_bytes = m.weight_bytes
        self.kv_bytes = m.kv_bytes_per_token
        self.F_eff = tp * g.peak_flops * c.eta_compute
        self.B_eff = tp * g.hbm_bandwidth_B_s * c.eta_memory
        self.F_pk = tp * g.peak_flops
        self.B_pk = tp * g.hbm_bandwidth_B_s
        self.t0 = c.step_overhead_s
        self.c_seq = c.seq_overhead_s
        if tp > 1:
            self.ar_fixed = 2 * m.layers * c.allreduce_latency_s
            self.ar_per_token = 2 * m.layers * 2.0 * (tp - 1) / tp * m.hidden_size * c.activation_bytes \
                / g.link_bandwidth_B_s
        else:
            self.ar_fixed = self.ar_per_token = 0.0
        self.P_idle = g.idle_power_W
        self.P_range = g.max_power_W - g.idle_power_W
        # power constants: the deployment's [constants] if it sets them, else the GPU's fit, else the defaults
        self.k_c = c.k_compute if ("k_compute" in c.model_fields_set or g.k_compute is None) else g.k_compute
        self.k_m = c.k_memory if ("k_memory" in c.model_fields_set or g.k_memory is None) else g.k_memory
        self.p_active = g.p_active

    def cost(self, n_tok: float | np.ndarray, attn_pos: float | np.ndarray, kv_read: float | np.ndarray,
             n_seq: float | np.ndarray) -> tuple:
        """Step time and per-GPU power (works elementwise on arrays).

        Parameters
        ----------
        n_tok : float | np.ndarray
            Tokens processed in the step (prefill chunk tokens + decode sequences), >= 1.
        attn_pos : float | np.ndarray
            Attention positions ``A`` (see the module docstring).
        kv_read : float | np.ndarray
            Cached tokens whose KV is read, ``R``.
        n_seq : float | np.ndarray
            Sequences in the step (decoding ones and prefilling ones), each charged ``c_seq``.

        Returns
        -------
        tuple
            ``(t_s, P_W)``: step time [s] and power of each GPU of the replica during the step [W], floats or
            arrays like the inputs.
        """
        F_lin = self.flops_per_token * n_tok
        F_att = self.attn_flops_per_pos * attn_pos
        B_kv = self.kv_bytes * (kv_read + n_tok)
        F = F_lin + F_att
        B = self.weight_bytes + B_kv
        t = (np.maximum(F_lin / self.F_eff, self.weight_bytes / self.B_eff) + np.maximum(F_att / self.F_eff,
                                                                                          B_kv / self.B_eff)
             + self.ar_fixed + self.ar_per_token * n_tok + self.t0 + self.c_seq * n_seq)
        a_c = F / (self.F_pk * t)
        a_m = B / (self.B_pk * t)
        P = self.P_idle + self.P_range * np.minimum(1.0, self.p_active + self.k_c * a_c + self.k_m * a_m)
        return t, P

    def cost1(self, n_tok: float, attn_pos: float, kv_read: float, n_seq: float) -> tuple[float, float]:
        """:meth:`cost` of one step, in Python floats (bit for bit the same IEEE operations, in the same order).

        The engine plans one prefill or mixed step per event; numpy's scalar dispatch made :meth:`cost` cost
        several microseconds for one step.

        Parameters
        ----------
        n_tok : float
            Tokens processed in the step, >= 1.
        attn_pos : float
            Attention positions ``A``.
        kv_read : float
            Cached tokens whose KV is read, ``R``.
        n_seq : float
            Sequences in the step.

        Returns
        -------
        tuple[float, float]
            ``(t_s, P_W)``: step time [s] and per-GPU power [W].
        """
        F_lin = self.flops_per_token * n_tok
        F_att = self.attn_flops_per_pos * attn_pos
        B_kv = self.kv_bytes * (kv_read + n_tok)
        F = F_lin + F_att
        B = self.weight_bytes + B_kv
        t = (max(F_lin / self.F_eff, self.weight_bytes / self.B_eff) + max(F_att / self.F_eff, B_kv / self.B_eff)
             + self.ar_fixed + self.ar_per_token * n_tok + self.t0 + self.c_seq * n_seq)
        a_c = F / (self.F_pk * t)
        a_m = B / (self.B_pk * t)
        return t, self.P_idle + self.P_range * min(1.0, self.p_active + self.k_c * a_c + self.k_m * a_m)

    def decode_steps(self, nseq: int, Ls: float, m: int) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`cost` of ``m`` decode steps of ``nseq`` sequences holding ``Ls`` cached tokens in all at the first.

        Step ``k`` (0-based) has ``n_tok = n_seq = nseq``, ``A = Ls + nseq + nseq k`` and ``R = Ls + nseq k``.
        The terms that do not depend on ``k`` (the weight GEMMs' time, the linear FLOPs) are Python floats; the
        arithmetic is otherwise that of :meth:`cost`, operation by operation, so the result is the same bit for
        bit.

        Parameters
        ----------
        nseq : int
            Decoding sequences, >= 1.
        Ls : float
            Their cached tokens at the first step [tokens].
        m : int
            Steps, >= 1.

        Returns
        -------
        tuple[np.ndarray, np.ndarray]
            ``(t_s, P_W)``, shape (m,) each: step times [s] and per-GPU powers [W].
        """
        n = float(nseq)
        if m <= _PY_STEPS:
            return self._decode_steps_py(n, Ls, m)
        nk = n * np.arange(m, dtype=float)
        F_lin = self.flops_per_token * n
        F_att = self.attn_flops_per_pos * ((Ls + n) + nk)
        B_kv = self.kv_bytes * ((Ls + nk) + n)
        t = max(F_lin / self.F_eff, self.weight_bytes / self.B_eff) + np.maximum(F_att / self.F_eff,
                                                                                B_kv / self.B_eff)
        t += self.ar_fixed
        t += self.ar_per_token * n
        t += self.t0
        t += self.c_seq * n
        F_att += F_lin                      # F = F_lin + F_att (addition commutes exactly)
        B_kv += self.weight_bytes           # B = W + B_kv
        a = F_att / (self.F_pk * t)
        a *= self.k_c
        a += self.p_active
        a += self.k_m * (B_kv / (self.B_pk * t))
        np.minimum(a, 1.0, out=a)
        a *= self.P_range
        a += self.P_idle
        return t, a

    def _decode_steps_py(self, n: float, Ls: float, m: int) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`decode_steps` for a short run, step by step in Python floats (the same operations in the same
        order), then one array each: below :data:`_PY_STEPS` steps numpy's dispatch cost more than the arithmetic.
        """
        F_lin = self.flops_per_token * n
        t_lin = max(F_lin / self.F_eff, self.weight_bytes / self.B_eff)
        ar_tok, c_seq = self.ar_per_token * n, self.c_seq * n
        ar, t0, apf, kvb, F_eff, B_eff = self.ar_fixed, self.t0, self.attn_flops_per_pos, self.kv_bytes, \
            self.F_eff, self.B_eff
        W, F_pk, B_pk, k_c, k_m, p_a = self.weight_bytes, self.F_pk, self.B_pk, self.k_c, self.k_m, self.p_active
        P_idle, P_range = self.P_idle, self.P_range
        a0 = Ls + n
        ts, Ps = [], []
        for k in range(m):
            nk = n * k
            F_att = apf * (a0 + nk)
            B_kv = kvb * ((Ls + nk) + n)
            t = t_lin + max(F_att / F_eff, B_kv / B_eff) + ar + ar_tok + t0 + c_seq
            x = p_a + k_c * ((F_lin + F_att) / (F_pk * t)) + k_m * ((W + B_kv) / (B_pk * t))
            ts.append(t)
            Ps.append(P_idle + P_range * min(1.0, x))
        return np.array(ts), np.array(Ps)

    def prefill(self, q: int, c0: int = 0) -> tuple[float, float]:
        """Time [s] and per-GPU power [W] of a step prefilling ``q`` tokens on top of ``c0`` cached ones."""
        t, P = self.cost(float(q), q * c0 + q * (q + 1) / 2.0, float(c0), 1.0)
        return float(t), float(P)

    def decode(self, lengths) -> tuple[float, float]:
        """Time [s] and per-GPU power [W] of one decode step of sequences with ``lengths`` cached tokens."""
        L = np.asarray(lengths, dtype=float)
        t, P = self.cost(float(L.size), float(L.sum() + L.size), float(L.sum()), float(L.size))
        return float(t), float(P)
