"""The platform's power step function: its value after the current timestamp.

Node DC power changes only at events, so the facility's electrical state is piecewise constant. Its value is one
vector (columns named by :class:`~scheduler_sim.kernel.state.StateLayout`): heat per CDU and the power totals from
the power chain (:meth:`power.PowerChain.evaluate`), the scheduler counts, and the rack input. The power part is
recomputed only when node power changed (``StepValue.dirty``); the idle-node and partition powers the energy ledger
integrates are refreshed with it.

Idle nodes all draw the idle node power (every node that is not running a job is set to it: at the start, and when
its job ends or is killed), so on the affine chain without a partition their DC and rack-input powers are read from
tables made once instead of from the whole machine's shares at every change (issue #26 item 1, measured on the
first 20,000 jobs of ``benchmarks/bench_million.py``'s trace, Theta: 45-52 -> 36-45 us CPU per evaluation):

* the idle DC power is the sum of ``k`` idle powers for every count ``k`` seen (``np.full(k, idle).sum()``: the same
  float64 values summed in the same order as the idle nodes' direct sum, so bit for bit);
* the idle rack-input power is counted by *idle-share class* (the distinct rack-input shares of an idle node:
  Frontier has one, Theta two, the 72 nodes of its partial rectifier groups drawing more): with one class it is the
  table of ``k`` equal shares (bit for bit the direct sum); with more, the idle nodes of the minor classes (at most
  :data:`MINOR_FRACTION` of the machine) are counted from their own mask entries and the value is
  ``sum_c n_c share_c``, each class's product exact to half an ulp, so it differs from the pairwise direct sum
  only in the last bits (within 1e-15 relative, tested at every power change of a Theta week). Nothing is carried
  by difference, so nothing drifts;
* the chain is evaluated straight into the step vector (:meth:`power.PowerChain.evaluate_into`, the same
  expressions as :meth:`~power.PowerChain.evaluate`, bit for bit) without a :class:`~power.chain.ChainState`.

Changing node states by difference (update only the nodes an event touched) was tried and measured slower (92-104
against 37-45 us: the per-call cost of numpy on a few nodes exceeds the O(n) passes it saves, commit b76689c).
"""

from __future__ import annotations

import math

import numpy as np

from power import PowerChain

from .jobdata import NodePowerProfile
from .state import PlatformState, StateLayout

__all__ = ["MINOR_FRACTION", "StepFunction"]

#: Largest fraction of nodes outside the most common idle share for which the idle rack-input power is counted by
#: class; above it the idle shares are summed directly.
MINOR_FRACTION = 0.25


class StepFunction:
    """Evaluates the step function of a platform state.

    Parameters
    ----------
    chain : PowerChain
        The system's power chain.
    layout : StateLayout
        Columns of the vector.
    partition : NodePowerProfile | None
        A co-located partition whose power is tracked apart (None: none).
    idle_node_W : float | None
        DC power of an idle node [W], which every node not running a job draws; None: the idle powers are summed
        from the whole machine's shares at every change (no tables).
    """

    def __init__(self, chain: PowerChain, layout: StateLayout, partition: NodePowerProfile | None,
                 idle_node_W: float | None = None) -> None:
        self.chain = chain
        self.layout = layout
        self.partition = partition
        self._idle_W = idle_node_W
        self._idle_share_W: np.ndarray | None = None  # rack-input share of each node when idle [W]
        if idle_node_W is not None and partition is None and chain.uses_affine_path:
            self._idle_share_W = chain.node_it_input_w(np.full(chain.system.n_nodes, float(idle_node_W)))
        self._node_part = chain.system.node_partition
        self._idle_dc_sum: dict[int, float] = {}  # k -> sum of k idle node powers (numpy's pairwise sum) [W]
        self._idle_it_sum: dict[int, float] = {}  # k -> sum of k equal idle shares (one share class) [W]
        self._minor: tuple[np.ndarray, np.ndarray, np.ndarray, float] | None = None
        self._minor_W = math.nan  # the one minor share when there are two classes [W]
        self._direct = False  # too many nodes outside the major class: the idle shares are summed directly
        if self._idle_share_W is not None:
            cls_W, cls, n_cls = np.unique(self._idle_share_W, return_inverse=True, return_counts=True)
            if cls_W.size > 1:  # the most common share is the major class, the others are counted by their nodes
                major = int(np.argmax(n_cls))
                minor_nodes = np.flatnonzero(cls != major)
                if minor_nodes.size <= MINOR_FRACTION * chain.system.n_nodes:
                    self._minor = (minor_nodes, cls[minor_nodes].astype(np.intp), cls_W, float(cls_W[major]))
                    self._minor_W = float(cls_W[1 - major]) if cls_W.size == 2 else math.nan
                else:
                    self._direct = True

    def _idle_dc_W(self, k: int) -> float:
        """DC power of ``k`` idle nodes [W]: ``np.full(k, idle).sum()``, the value of the idle nodes' own sum."""
        v = self._idle_dc_sum.get(k)
        if v is None:
            v = self._idle_dc_sum[k] = float(np.full(k, self._idle_W).sum())
        return v

    def _idle_it_W(self, k: int, mask: np.ndarray) -> float:
        """Rack-input power of the ``k`` idle nodes ``mask`` [W], from the idle-share classes (module docstring)."""
        if self._direct:
            return float(self._idle_share_W[mask].sum())
        if self._minor is None:  # one share: np.full(k, share).sum(), the direct sum's value bit for bit
            v = self._idle_it_sum.get(k)
            if v is None:
                v = self._idle_it_sum[k] = float(np.full(k, self._idle_share_W[0]).sum())
            return v
        nodes, cls, cls_W, major_W = self._minor
        if cls_W.size == 2:  # one minor share (Theta: the 3 nodes of each rack's partial rectifier group)
            n1 = int(np.count_nonzero(mask[nodes]))
            return float(n1 * self._minor_W + (k - n1) * major_W)
        n = np.bincount(cls[mask[nodes]], minlength=cls_W.size)
        terms = [float(c) * float(w) for c, w in zip(n.tolist(), cls_W.tolist()) if c]
        return math.fsum(terms + [float(k - int(n.sum())) * major_W])

    def value(self, st: PlatformState) -> np.ndarray:
        """The value after this timestamp (``st.step.vec``, updated in place).

        Parameters
        ----------
        st : PlatformState
            The platform state.

        Returns
        -------
        np.ndarray
            Shape (layout.size,): CDU heat [W], :data:`~scheduler_sim.kernel.state.POWER_SERIES` [W], scheduler
            counts, rack input [W].
        """
        lay = self.layout
        sv = st.step
        v = sv.vec
        nc = lay.n_cdus
        if sv.dirty and self._idle_share_W is not None:
            self.chain.evaluate_into(st.node_dc, v[:nc], v[nc:nc + 5], v[lay.rack:lay.part_busy])
            mask = st.alloc.idle_mask()
            k = int(np.count_nonzero(mask))
            sv.idle_dc_W = self._idle_dc_W(k)
            sv.idle_it_W = self._idle_it_W(k, mask)
            sv.dirty = False
        elif sv.dirty:
            r, shares = self.chain.evaluate_with_shares(st.node_dc)
            v[:nc] = r.cdu_heat_W
            v[nc:nc + 5] = (r.node_dc_W, r.sivoc_loss_W, r.rectifier_loss_W, r.rack_overhead_W, r.it_input_W)
            v[lay.rack:lay.part_busy] = r.rack_input_W
            idle = st.alloc.idle_mask()
            sv.idle_dc_W = float(st.node_dc[idle].sum())
            sv.idle_it_W = float(shares[idle].sum())
            if self.partition is not None:
                sv.part_dc_W = float(st.node_dc[self.partition.nodes].sum())
                sv.part_it_W = float(shares[self.partition.nodes].sum())
            sv.dirty = False
        c = lay.counts
        v[c] = float(st.alloc.n_busy)
        v[c + 1] = len(st.running)
        v[c + 2] = len(st.queue)
        v[c + 3] = float(st.alloc.n_down)
        if lay.n_parts:  # busy nodes per partition (a partitioned system)
            v[lay.part_busy:] = np.bincount(self._node_part[st.alloc.owner >= 0], minlength=lay.n_parts)
        return v
