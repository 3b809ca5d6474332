"""The platform's power step function: its value after the current timestamp.

Node DC power changes only at events, so the facility's electrical state is piecewise constant. Its value is one
vector (columns named by :class:`~scheduler_sim.kernel.state.StateLayout`): heat per CDU and the power totals from
the power chain (:meth:`power.PowerChain.evaluate`), the scheduler counts, and the rack input. The power part is
recomputed only when node power changed (``StepValue.dirty``); the idle-node and partition powers the energy ledger
integrates are refreshed with it.
"""

from __future__ import annotations

import numpy as np

from power import PowerChain

from .allocator import FREE
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
    """

    def __init__(self, chain: PowerChain, layout: StateLayout, partition: NodePowerProfile | None) -> None:
        self.chain = chain
        self.layout = layout
        self.partition = partition

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
        if sv.dirty:
            r, shares = self.chain.evaluate_with_shares(st.node_dc)
            v[:nc] = r.cdu_heat_W
            v[nc:nc + 5] = (r.node_dc_W, r.sivoc_loss_W, r.rectifier_loss_W, r.rack_overhead_W, r.it_input_W)
            v[lay.rack:] = r.rack_input_W
            idle = st.alloc.owner == FREE
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
        return v
