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

By difference (issue #26 item 1). On the affine chain every place that changes a node's power or owner notes the
nodes (:meth:`~scheduler_sim.kernel.state.StepValue.touch`); the next evaluation reads only those nodes, compares
them with their power and idle / busy state at the previous evaluation (kept in ``StepValue.diff``, so a fork goes
on from the same sums) and updates by difference:

* the DC power per rack and in total (float sums), then the input of the racks touched, the heat of their CDUs
  and the totals (:meth:`power.PowerChain.loss_totals_w`, the chain's own expressions);
* the idle nodes per idle-share class and the busy nodes per partition (integer counts, exact: the idle powers above
  are then those of the exact evaluation bit for bit);
* without tables (node types with different idle powers, a co-located partition), the idle and partition DC and
  rack-input powers (float sums).

The update is a plain Python loop over the touched nodes (numpy's cost per call, ~1 us, exceeds the work on the
few nodes of a typical event: a first version with numpy calls on the touched nodes cost 92 us per evaluation
against 69 us for the exact one, measured side by side under load; the loop costs ~0.4 us per node, so above
:data:`DIFF_MAX_NODES` nodes the exact pass is taken). Each node update rounds each float sum it enters once, by at
most half an ulp of the sum's largest value, so the step function is evaluated exactly from all nodes, and the
sums restart from it, after :data:`RESUM_EVERY` evaluations by difference or :data:`RESUM_NODES` node updates,
whichever comes first: with at most 1,024 + 256 roundings of a sum whose largest and smallest values in that
period differ by less than 4x (a rack's idle and full power) the worst-case error is 1,280 x 1.1e-16 x 4 =
5.7e-13 relative, inside the 1e-12 the tests hold every evaluation to against the exact one on a real trace
(tests/unit/test_step_function_difference.py, which reports the largest difference seen: 4.4e-14 on two weeks of
Theta 2022). The chain with an I^2R term (not affine) is always evaluated exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from power import PowerChain

from .allocator import FREE, OUT_OF_POOL
from .jobdata import NodePowerProfile
from .state import PlatformState, StateLayout, StepValue

__all__ = ["DIFF_MAX_NODES", "MINOR_FRACTION", "RESUM_EVERY", "RESUM_NODES", "StepFunction"]

#: Evaluations by difference between two exact ones (module docstring: the bound on the drift).
RESUM_EVERY = 256
#: Node updates by difference between two exact evaluations (module docstring: the bound on the drift).
RESUM_NODES = 1024
#: Nodes changed at one evaluation above which the exact evaluation is taken instead (about where the loop over
#: them costs what the whole-machine pass does).
DIFF_MAX_NODES = 48

#: Largest fraction of nodes outside the most common idle share for which the idle rack-input power is counted by
#: class; above it the idle shares are summed directly.
MINOR_FRACTION = 0.25


@dataclass
class _Sums:
    """What the evaluation by difference carries from one evaluation to the next (module docstring).

    Attributes
    ----------
    p_W : ndarray, shape (n_nodes,)
        Node DC power at the last evaluation [W].
    owner : ndarray of int64, shape (n_nodes,)
        Node owners at the last evaluation (:attr:`~scheduler_sim.kernel.allocator.NodeAllocator.owner`): whether
        each node was idle or busy then.
    rack_dc_W : list of float, (n_racks,)
        DC power per rack [W].
    rack_in_W : list of float, (n_racks,)
        Rack input [W] (the vector's rack columns).
    dc_W : float
        DC power of all nodes [W].
    idle_n : list of int
        Idle nodes per idle-share class (one class without tables); their sum is the idle count.
    part_busy : list of int
        Busy nodes per partition (empty without partitions).
    n_diff : int
        Evaluations by difference since the last exact one.
    n_nodes : int
        Node updates by difference since the last exact evaluation.
    """

    p_W: np.ndarray
    owner: np.ndarray
    rack_dc_W: list
    rack_in_W: list
    dc_W: float
    idle_n: list
    part_busy: list
    n_diff: int = 0
    n_nodes: int = 0


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
        from the whole machine's shares at every exact evaluation (no tables), and by difference between them.
    resum_every : int
        Evaluations by difference between two exact ones (default :data:`RESUM_EVERY`); 0: every evaluation is
        exact (the reference the tests compare with).
    """

    def __init__(self, chain: PowerChain, layout: StateLayout, partition: NodePowerProfile | None,
                 idle_node_W: float | None = None, resum_every: int = RESUM_EVERY) -> None:
        self.chain = chain
        self.resum_every = int(resum_every)
        n = chain.system.n_nodes
        sysm = chain.system
        self._by_diff = bool(chain.uses_affine_path and self.resum_every > 0)
        self._diff_max = DIFF_MAX_NODES
        self._in_part: bytearray | None = None  # 1 for a node of the co-located partition
        if partition is not None:
            m = np.zeros(n, dtype=np.uint8)
            m[partition.nodes] = 1
            self._in_part = bytearray(m.tobytes())
        if self._by_diff:  # the topology and the affine coefficients as Python lists, for the loop over nodes
            a, b_node, b_rack = chain.affine_coefficients
            self._a = float(a)
            self._b_node_l = b_node.tolist()
            self._b_rack_l = b_rack.tolist()
            self._node_rack_l = np.asarray(sysm.node_rack).tolist()
            self._rack_cdu_l = np.asarray(sysm.rack_cdu).tolist()
            self._cdu_racks = [np.flatnonzero(np.asarray(sysm.rack_cdu) == c).tolist() for c in range(sysm.n_cdus)]
            self._node_part_l = np.asarray(sysm.node_partition).tolist()
            self._lf = float(sysm.liquid_fraction)
        self.layout = layout
        self._counts = layout.counts  # first column of the scheduler counts (read at every evaluation)
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
        self._cls_node: np.ndarray | None = None  # idle-share class of every node (with minor classes)
        self._cls_node_l: list | None = None  # the same, a list
        self._major = 0  # the most common class
        self._direct = False  # too many nodes outside the major class: the idle shares are summed directly
        if self._idle_share_W is not None:
            cls_W, cls, n_cls = np.unique(self._idle_share_W, return_inverse=True, return_counts=True)
            if cls_W.size > 1:  # the most common share is the major class, the others are counted by their nodes
                major = int(np.argmax(n_cls))
                minor_nodes = np.flatnonzero(cls != major)
                if minor_nodes.size <= MINOR_FRACTION * chain.system.n_nodes:
                    self._minor = (minor_nodes, cls[minor_nodes].astype(np.intp), cls_W, float(cls_W[major]))
                    self._minor_W = float(cls_W[1 - major]) if cls_W.size == 2 else math.nan
                    self._cls_node = cls.astype(np.intp)  # idle-share class of every node
                    self._cls_node_l = self._cls_node.tolist()
                    self._major = major
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

    def _idle_it_of_counts(self, k: int, n_cls: list) -> float:
        """Rack-input power of ``k`` idle nodes counted ``n_cls`` per idle-share class [W]: the value of
        :meth:`_idle_it_W` for the same idle nodes, bit for bit (the same expressions on the same counts).
        """
        if self._minor is None:
            return self._idle_it_W(k, None)
        _, _, cls_W, major_W = self._minor
        if cls_W.size == 2:
            n1 = int(n_cls[1 - self._major])
            return float(n1 * self._minor_W + (k - n1) * major_W)
        terms = [float(c) * float(w) for i, (c, w) in enumerate(zip(n_cls, cls_W.tolist())) if c and i != self._major]
        return math.fsum(terms + [float(k - (sum(n_cls) - n_cls[self._major])) * major_W])

    def value(self, st: PlatformState) -> np.ndarray:
        """The value after this timestamp (``st.step.vec``, updated in place).

        Evaluated by difference from the nodes touched since the last evaluation, or exactly from every node
        (module docstring: when, and the bound between the two).

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
        sv = st.step
        v = sv.vec
        if sv.dirty:
            d = sv.diff
            tl = sv.touched
            n = len(tl[0]) if len(tl) == 1 else sum(map(len, tl))
            if d is not None and d.n_diff < self.resum_every and n <= self._diff_max and d.n_nodes + n <= RESUM_NODES:
                self._difference(st, sv, d)
            else:
                self._exact(st, sv)
            sv.touched = []
            sv.dirty = False
        c, alloc = self._counts, st.alloc
        v[c] = float(alloc.n_busy)
        v[c + 1] = len(st.running)
        v[c + 2] = len(st.queue)
        v[c + 3] = float(alloc.n_down)
        lay = self.layout
        if lay.n_parts:  # busy nodes per partition (a partitioned system)
            if sv.diff is not None:
                v[lay.part_busy:] = sv.diff.part_busy  # kept by difference (exact integers)
            else:
                v[lay.part_busy:] = np.bincount(self._node_part[alloc.owner >= 0], minlength=lay.n_parts)
        return v

    def exact(self, st: PlatformState) -> StepValue:
        """The exact evaluation of the state now, without changing it (the reference of the tests).

        Parameters
        ----------
        st : PlatformState
            The platform state (read only).

        Returns
        -------
        StepValue
            A new value: ``vec`` (the counts included) and the idle and partition powers, evaluated from every node.
        """
        sv = StepValue(np.zeros(self.layout.size))
        saved, st.step = st.step, sv
        try:
            self._exact(st, sv, keep=False)
            sv.dirty = False
            self.value(st)
        finally:
            st.step = saved
        return sv

    def _exact(self, st: PlatformState, sv: StepValue, keep: bool = True) -> None:
        """Evaluate the power part of ``sv`` from every node; with ``keep``, restart the sums by difference."""
        lay = self.layout
        v = sv.vec
        nc = lay.n_cdus
        p = st.node_dc
        mask = st.alloc.idle_mask()
        rack_dc = None
        if self.chain.uses_affine_path:  # evaluate_into: evaluate's values bit for bit, and the sums it made
            rack_dc, dc_total = self.chain.evaluate_into(p, v[:nc], v[nc:nc + 5], v[lay.rack:lay.part_busy])
        else:
            r, shares = self.chain.evaluate_with_shares(p)
            v[:nc] = r.cdu_heat_W
            v[nc:nc + 5] = (r.node_dc_W, r.sivoc_loss_W, r.rectifier_loss_W, r.rack_overhead_W, r.it_input_W)
            v[lay.rack:lay.part_busy] = r.rack_input_W
        if self._idle_share_W is not None:
            k = int(np.count_nonzero(mask))
            sv.idle_dc_W = self._idle_dc_W(k)
            sv.idle_it_W = self._idle_it_W(k, mask)
        else:
            if self.chain.uses_affine_path:  # node_it_input_w's shares (a p + b_i), without a second input check
                a, b_node, _ = self.chain.affine_coefficients
                shares = a * p + b_node
            sv.idle_dc_W = float(p[mask].sum())
            sv.idle_it_W = float(shares[mask].sum())
            if self.partition is not None:
                sv.part_dc_W = float(p[self.partition.nodes].sum())
                sv.part_it_W = float(shares[self.partition.nodes].sum())
        if not (keep and self._by_diff):
            if keep:
                sv.diff = None
            return
        o = st.alloc.owner
        part_busy = (np.bincount(self._node_part[o >= 0], minlength=lay.n_parts).tolist() if lay.n_parts else [])
        if self._cls_node is not None:
            idle_n = np.bincount(self._cls_node[mask], minlength=self._minor[2].size).tolist()
        else:
            idle_n = [int(np.count_nonzero(mask))]
        sv.diff = _Sums(p.copy(), o.copy(), np.asarray(rack_dc).tolist(),
                        v[lay.rack:lay.part_busy].tolist(), float(dc_total), idle_n, part_busy)

    def _difference(self, st: PlatformState, sv: StepValue, d: _Sums) -> None:
        """Update the power part of ``sv`` and the sums ``d`` from the touched nodes only (module docstring); a
        touched node's power that is NaN, infinite or negative raises the chain's ValueError (:func:`_update_nodes`).
        """
        d.n_diff += 1
        tl = sv.touched
        if not tl:  # nodes went down or up: no power or owner changed
            return
        idx = tl[0] if len(tl) == 1 else np.unique(np.concatenate(tl))
        d.n_nodes += len(idx)
        new = st.node_dc[idx]
        own = st.alloc.owner[idx]
        racks, idle, part_dc, idle_changed, busy_changed = _update_nodes(self, d, idx, new, own)
        d.p_W[idx] = new
        d.owner[idx] = own
        lay = self.layout
        v = sv.vec
        if racks:
            _write_racks_and_totals(self, d, racks, v)
            if part_dc:
                sv.part_dc_W += part_dc
                sv.part_it_W += self._a * part_dc
        if self._idle_share_W is None:
            if sum(d.idle_n):
                sv.idle_dc_W += idle[0]
                sv.idle_it_W += idle[1]
            else:  # no idle node left: 0 exactly, not a residue
                sv.idle_dc_W = sv.idle_it_W = 0.0
        elif idle_changed:
            k = sum(d.idle_n)
            sv.idle_dc_W = self._idle_dc_W(k)
            if self._direct:
                sv.idle_it_W = float(self._idle_share_W[st.alloc.idle_mask()].sum())
            else:
                sv.idle_it_W = self._idle_it_of_counts(k, d.idle_n)
        if busy_changed:
            v[lay.part_busy:] = d.part_busy


def _update_nodes(sf: StepFunction, d: _Sums, idx: np.ndarray, new: np.ndarray, own: np.ndarray
                  ) -> tuple[set, tuple[float, float], float, bool, bool]:
    """The loop over the touched nodes: rack and total DC sums, idle counts, busy nodes per partition.

    Parameters
    ----------
    sf : StepFunction
        The step function (its topology lists and affine coefficients).
    d : _Sums
        The sums, updated in place (not the per-node arrays: the caller writes those after).
    idx : np.ndarray
        Touched nodes, shape (k,), unique.
    new : np.ndarray
        Their DC power now, shape (k,) [W].
    own : np.ndarray
        Their owners now, shape (k,).

    Returns
    -------
    tuple[set, tuple[float, float], float, bool, bool]
        Racks whose DC power changed; the change of the idle DC and rack-input powers without tables [W]; the
        change of the co-located partition's DC power [W]; whether an idle count and a busy count changed.

    Raises
    ------
    ValueError
        If a touched node's power is NaN, infinite or negative.
    """
    rack_dc, nr, a = d.rack_dc_W, sf._node_rack_l, sf._a
    general = sf._idle_share_W is None
    in_part, cls_l = sf._in_part, sf._cls_node_l
    rows = zip(idx.tolist(), new.tolist(), d.p_W[idx].tolist(), own.tolist(), d.owner[idx].tolist())
    if not general and in_part is None and not d.part_busy:  # tables, no partition: the loop without their tests
        return _update_plain(d, rows, nr, cls_l)
    dc = d.dc_W
    racks: set = set()
    idle_dc = idle_it = part_dc = 0.0
    idle_changed = busy_changed = False
    for i, x, old, o, o_was in rows:
        if not x >= 0.0:
            raise ValueError("node_dc_W must be finite and >= 0 W")
        dp = x - old
        if dp:
            r = nr[i]
            rack_dc[r] += dp
            dc += dp
            racks.add(r)
            if in_part is not None and in_part[i]:
                part_dc += dp
        idle = o == FREE or o == OUT_OF_POOL
        was = o_was == FREE or o_was == OUT_OF_POOL
        if general and (idle or was):  # the idle sums: what this node adds now less what it added before
            b = sf._b_node_l[i]
            if idle:
                idle_dc += x
                idle_it += a * x + b
            if was:
                idle_dc -= old
                idle_it -= a * old + b
        if idle != was:
            d.idle_n[0 if cls_l is None else cls_l[i]] += 1 if idle else -1
            idle_changed = True
        if d.part_busy and (o >= 0) != (o_was >= 0):
            d.part_busy[sf._node_part_l[i]] += 1 if o >= 0 else -1
            busy_changed = True
    if not math.isfinite(dc):
        raise ValueError("node_dc_W must be finite and >= 0 W")
    d.dc_W = dc
    return racks, (idle_dc, idle_it), part_dc, idle_changed, busy_changed

def _update_plain(d: _Sums, rows: object, nr: list, cls_l: list | None
                  ) -> tuple[set, tuple[float, float], float, bool, bool]:
    """:func:`_update_nodes` with idle tables, no co-located partition and no partition counts (the common case):
    the same sums in the same order, the tests those cases need left out.

    Parameters
    ----------
    d : _Sums
        The sums, updated in place.
    rows : object
        ``(node, power now, power before, owner now, owner before)`` of each touched node, in node order.
    nr : list
        Rack of every node.
    cls_l : list | None
        Idle-share class of every node (None: one class).

    Returns
    -------
    tuple[set, tuple[float, float], float, bool, bool]
        As :func:`_update_nodes` (the idle and partition changes are zero, no busy count changes).

    Raises
    ------
    ValueError
        If a touched node's power is NaN, infinite or negative.
    """
    rack_dc, idle_n = d.rack_dc_W, d.idle_n
    dc = d.dc_W
    racks: set = set()
    idle_changed = False
    for i, x, old, o, o_was in rows:
        if not x >= 0.0:
            raise ValueError("node_dc_W must be finite and >= 0 W")
        dp = x - old
        if dp:
            r = nr[i]
            rack_dc[r] += dp
            dc += dp
            racks.add(r)
        idle = o == FREE or o == OUT_OF_POOL
        if idle != (o_was == FREE or o_was == OUT_OF_POOL):
            idle_n[0 if cls_l is None else cls_l[i]] += 1 if idle else -1
            idle_changed = True
    if not math.isfinite(dc):
        raise ValueError("node_dc_W must be finite and >= 0 W")
    d.dc_W = dc
    return racks, (0.0, 0.0), 0.0, idle_changed, False


def _write_racks_and_totals(sf: StepFunction, d: _Sums, racks: set, v: np.ndarray) -> None:
    """Write the input of ``racks``, the heat of their CDUs and the power totals into ``v`` from the sums ``d`` (the
    step function ``sf``'s layout and chain).
    """
    lay = sf.layout
    nc = lay.n_cdus
    rin, rack_dc, b_rack, r0, a = d.rack_in_W, d.rack_dc_W, sf._b_rack_l, lay.rack, sf._a
    cdus = set()
    for r in racks:
        rin[r] = ri = a * rack_dc[r] + b_rack[r]
        v[r0 + r] = ri
        cdus.add(sf._rack_cdu_l[r])
    for c in cdus:
        q = sum([rin[r] for r in sf._cdu_racks[c]])
        v[c] = q * sf._lf if sf._lf != 1.0 else q
    sivoc, rect = sf.chain.loss_totals_w(d.dc_W)
    v[nc] = d.dc_W
    v[nc + 1] = sivoc
    v[nc + 2] = rect
    v[nc + 4] = sum(rin)
