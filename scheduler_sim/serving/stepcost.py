"""Step-cost model of the serving engine: time and GPU power of a prefill, mixed or decode step, and of a decode run.

The roofline step model (:class:`scheduler_sim.serving.roofline.StepModel`) gives a step's time [s] and per-GPU power
[W] from its token count, attention work (sum over the step's tokens of the positions they attend to), KV reads
[tokens] and sequences. A prefill of ``q`` new tokens on ``c`` cached ones attends ``q c + q (q + 1) / 2``
positions; a decode step of sequences with ``L_j`` cached tokens attends ``sum L_j + n`` and reads ``sum L_j``.
Between two changes of batch composition the ``m`` decode steps of a run are planned at once as arrays
(:meth:`StepCost.decode_run`), the ``k``-th step with ``n k`` more cached tokens.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .hardware import Deployment
from .roofline import StepModel

__all__ = ["Bulk", "StepCost"]

_NO_SEQS = np.zeros(0, dtype=np.int64)
_NO_SEQS.flags.writeable = False


class Bulk:
    """A planned step, or run of decode steps, of one replica.

    Parameters
    ----------
    kind : str
        ``"prefill"``, ``"decode"`` or ``"mixed"``.
    t_start : float
        Start of the first step [s].
    ends : np.ndarray | list
        End of each step [s], shape (m,) (a one-element list for a single prefill or mixed step).
    P : np.ndarray | list
        Per-GPU power of each step [W], shape (m,) (likewise).
    seqs : np.ndarray
        Decoding sequences (request rows).
    chunks : Sequence
        ``(request row, prompt tokens)`` prefilled in the step.
    """

    __slots__ = ("kind", "t_start", "ends", "P", "m", "seqs", "chunks", "g", "L", "left", "lmin")

    def __init__(self, kind: str, t_start: float, ends: np.ndarray | list, P: np.ndarray | list, seqs: np.ndarray,
                 chunks: Sequence = ()) -> None:
        self.kind = kind
        self.t_start = t_start
        self.ends = ends
        self.P = P
        self.m = len(ends)
        self.seqs = seqs
        self.chunks = chunks
        self.g = self.L = self.left = None  # a decode run's gen, cached tokens and tokens left at its start
        self.lmin = 0  # the fewest tokens left at its start (with ``left``)


class StepCost:
    """Plan steps on a deployment: :class:`Bulk` objects with their end times and powers.

    Parameters
    ----------
    deployment : Deployment
    """

    def __init__(self, deployment: Deployment) -> None:
        self.model = StepModel(deployment)

    def prefill(self, t: float, adm: list, tokens: int, attn: float, kv_read: float) -> Bulk:
        """A prefill step starting at t of the admitted ``(row, new tokens)`` pairs ``adm``.

        Parameters
        ----------
        t : float
            Start [s].
        adm : list
            ``(row, new tokens)`` pairs.
        tokens : int
            New prompt tokens of the step.
        attn : float
            Attention positions (sum of ``q c + q (q + 1) / 2``).
        kv_read : float
            Cached tokens read [tokens].

        Returns
        -------
        Bulk
        """
        dt, P = self.model.cost1(float(tokens), attn, kv_read, float(len(adm)))
        return Bulk("prefill", t, [t + dt], [P], _NO_SEQS, adm)

    def decode_run(self, t: float, s: np.ndarray, L: np.ndarray, m: int) -> Bulk:
        """``m`` decode steps of sequences ``s`` (cached tokens ``L``) from t.

        Parameters
        ----------
        t : float
            Start [s].
        s : np.ndarray
            Decoding sequences (int64, shape (n,)).
        L : np.ndarray
            Their cached tokens (int64, shape (n,)).
        m : int
            Steps, >= 1.

        Returns
        -------
        Bulk
        """
        dt, P = self.model.decode_steps(s.size, float(L.sum()), m)
        ends = dt.cumsum()
        ends += t
        return Bulk("decode", t, ends, P, s)

    def mixed(self, t: float, s: np.ndarray, L: np.ndarray, chunks: list, done: np.ndarray) -> Bulk:
        """A chunked-prefill step from t: one decode token of each of ``s`` plus the prompt ``chunks``.

        Parameters
        ----------
        t : float
            Start [s].
        s : np.ndarray
            Decoding sequences (int64).
        L : np.ndarray
            Their cached tokens (int64).
        chunks : list
            ``(row, tokens)`` prompt chunks.
        done : np.ndarray
            Prompt tokens each row has already computed.

        Returns
        -------
        Bulk
        """
        n_tok = s.size + sum(q for _, q in chunks)
        attn = float(L.sum() + s.size) + sum(q * int(done[i]) + q * (q + 1) / 2.0 for i, q in chunks)
        kv = float(L.sum()) + sum(float(done[i]) for i, _ in chunks)
        dt, P = self.model.cost1(float(n_tok), attn, kv, float(s.size + len(chunks)))
        return Bulk("mixed", t, [t + dt], [P], s, chunks)
