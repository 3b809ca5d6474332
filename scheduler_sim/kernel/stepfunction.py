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

Incremental evaluation (issue #26 item 1). On that same path (affine chain, one idle power, no partition) the job
life-cycle names the nodes it changes (:meth:`~scheduler_sim.kernel.state.StepValue.touch`), and an evaluation
updates only what those nodes feed:

* the node DC sum of each rack they sit in, recomputed from that rack's nodes with the segment sum the full chain
  uses (``np.add.reduceat`` over the rack), so every rack sum, rack input, CDU heat and power total is bit for bit
  that of :meth:`power.PowerChain.evaluate` (the machine's DC total stays one ``p.sum()``, as there); above
  :data:`FULL_RACK_FRACTION` of the racks changed, all rack sums are recomputed at once;
* the idle nodes counted per *idle-share class* (the distinct rack-input shares of an idle node; a few per rack):
  integer counts moved by the changed nodes, and the idle rack-input power ``sum_c n_c share_c``. That sum is the
  one value not bit for bit the full evaluation's (a different summation order: within 1e-15 relative, tested
  against the full evaluation at every event of a Theta week), and it is a function of the present idle set only.

Nothing is carried by difference, so nothing drifts and no periodic re-sum is needed. Anything else that writes
node power sets ``dirty = True``, which asks for the full evaluation (which also rebuilds the caches).
"""

from __future__ import annotations

import numpy as np

from power import PowerChain

from .jobdata import NodePowerProfile
from .state import PlatformState, StateLayout

__all__ = ["StepFunction", "FULL_RACK_FRACTION"]

#: Above this fraction of racks changed since the last evaluation, every rack sum is recomputed in one call.
FULL_RACK_FRACTION = 0.25


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
    incremental : bool
        Update only the racks and idle counts of the nodes that changed (module docstring), where the tables
        apply; False evaluates the whole chain at every change (the reference the tests compare with).
    """

    def __init__(self, chain: PowerChain, layout: StateLayout, partition: NodePowerProfile | None,
                 idle_node_W: float | None = None, incremental: bool = True) -> None:
        self.chain = chain
        self.layout = layout
        self.partition = partition
        self._idle_W = idle_node_W
        self._idle_share_W: np.ndarray | None = None  # rack-input share of each node when idle [W]
        if idle_node_W is not None and partition is None and chain.uses_affine_path:
            self._idle_share_W = chain.node_it_input_w(np.full(chain.system.n_nodes, float(idle_node_W)))
        self._node_part = chain.system.node_partition
        self._bounds = chain.rack_node_ranges
        self._incremental = bool(incremental and self._idle_share_W is not None and self._bounds is not None)
        if self._incremental:
            self._node_rack = np.asarray(chain.system.node_rack, dtype=np.intp)
            self._class_W, cls = np.unique(self._idle_share_W, return_inverse=True)
            self._node_class = cls.astype(np.intp).ravel()
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
        if sv.dirty and self._incremental:
            self._update(st)
        elif sv.dirty and self._idle_share_W is not None:
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

    def _update(self, st: PlatformState) -> None:
        """Bring ``st.step`` up to date on the incremental path (module docstring): the racks and idle counts of
        the touched nodes only, or everything when a full evaluation was asked for.

        Raises ValueError if a changed node's power is negative, NaN or infinite (the check of
        :meth:`power.PowerChain.evaluate`, on the nodes that changed).
        """
        sv, lay, p = st.step, self.layout, st.node_dc
        if sv.stale or sv.rack_dc_W is None:
            mask = st.alloc.idle_mask()
            sv.rack_dc_W = self.chain.rack_dc_sums_w(p)
            sv.idle_now = mask
            sv.idle_class_n = np.bincount(self._node_class[mask], minlength=self._class_W.size)
            if not (np.isfinite(sv.rack_dc_W.sum()) and p.min() >= 0.0):
                raise ValueError("node_dc_w must be finite and >= 0 W")
        else:
            ch = sv.changed
            nodes = ch[0] if len(ch) == 1 else np.unique(np.concatenate(ch))
            if nodes.size:
                q = p[nodes]
                if not (np.isfinite(q.sum()) and q.min() >= 0.0):
                    raise ValueError("node_dc_w must be finite and >= 0 W")
                racks = np.unique(self._node_rack[nodes])
                if racks.size > FULL_RACK_FRACTION * lay.n_racks:
                    sv.rack_dc_W = self.chain.rack_dc_sums_w(p)
                else:
                    b, red, rd = self._bounds, np.add.reduceat, sv.rack_dc_W
                    for r in racks.tolist():
                        rd[r] = red(p[b[r]:b[r + 1]], _FIRST)[0]
                now = st.alloc.idle_at(nodes)
                was = sv.idle_now[nodes]
                moved = now != was
                if moved.any():
                    cls = self._node_class[nodes[moved]]
                    up = now[moved]
                    n_cls = self._class_W.size
                    sv.idle_class_n += np.bincount(cls[up], minlength=n_cls) - np.bincount(cls[~up], minlength=n_cls)
                    sv.idle_now[nodes] = now
        r = self.chain.affine_state_of_racks(sv.rack_dc_W, float(p.sum()))
        v, nc = sv.vec, lay.n_cdus
        v[:nc] = r.cdu_heat_W
        v[nc:nc + 5] = (r.node_dc_W, r.sivoc_loss_W, r.rectifier_loss_W, r.rack_overhead_W, r.it_input_W)
        v[lay.rack:lay.part_busy] = r.rack_input_W
        n = sv.idle_class_n
        sv.idle_dc_W = self._idle_dc_W(int(n.sum()))
        sv.idle_it_W = float((n * self._class_W).sum())
        sv.dirty = False


_FIRST = np.zeros(1, dtype=np.intp)

