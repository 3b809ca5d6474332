"""The platform's power step function: its value after the current timestamp.

Node DC power changes only at events, so the facility's electrical state is piecewise constant. Its value is one
vector (columns named by :class:`~scheduler_sim.kernel.state.StateLayout`): heat per CDU and the power totals from
the power chain (:meth:`power.PowerChain.evaluate`), the scheduler counts, and the rack input. The power part is
recomputed only when node power changed (``StepValue.dirty``); the idle-node and partition powers the energy ledger
integrates are refreshed with it.

Idle nodes all draw the idle node power (every node that is not running a job is set to it: at the start, and when
its job ends or is killed), so on the affine chain without a partition their DC and rack-input powers are read from
tables made once (the rack-input share of each node when idle, and the sum of ``k`` idle powers for every count
``k`` seen) instead of from the whole machine's shares at every change: the same float64 values, summed in the same
order (numpy's pairwise sum of the idle nodes in index order), so the results are bit for bit those of the direct
sums.
"""

from __future__ import annotations

import numpy as np

from power import PowerChain

from .jobdata import NodePowerProfile
from .state import PlatformState, StateLayout

__all__ = ["StepFunction"]


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

    def _idle_dc_W(self, k: int) -> float:
        """DC power of ``k`` idle nodes [W]: ``np.full(k, idle).sum()``, the value of the idle nodes' own sum."""
        v = self._idle_dc_sum.get(k)
        if v is None:
            v = self._idle_dc_sum[k] = float(np.full(k, self._idle_W).sum())
        return v

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
            r = self.chain.evaluate(st.node_dc)
            v[:nc] = r.cdu_heat_W
            v[nc:nc + 5] = (r.node_dc_W, r.sivoc_loss_W, r.rectifier_loss_W, r.rack_overhead_W, r.it_input_W)
            v[lay.rack:lay.part_busy] = r.rack_input_W
            idle_shares = self._idle_share_W[st.alloc.idle_mask()]
            sv.idle_dc_W = self._idle_dc_W(idle_shares.size)
            sv.idle_it_W = float(idle_shares.sum())
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
