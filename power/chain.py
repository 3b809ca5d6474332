"""Vectorised power chain for one instant: node DC -> SIVOC -> rectifier -> rack input -> CDU heat.

Chain (per rack ``r``, rectifier group ``g`` of ``n_g`` nodes)::

    s_i  = (P_i + P_fixed,s) / eta_s + k_s P_i^2                  SIVOC input of node i
    L_g  = sum_{i in g} s_i + O_g                                  rectifier DC output; O_g = DC overhead share
    R_g  = (L_g + P_fixed,r) / eta_r + k_r L_g^2                   rectifier AC input
    P_r  = sum_{g in r} R_g + O_r,ac                               rack input (IT power)
    Q_c  = liquid_fraction * sum_{r in c} P_r                      heat to CDU c

``O_g = rack_overhead_W / (rectifiers in the rack)`` when the overhead side is "dc", else 0; ``O_r,ac =
rack_overhead_W`` when it is "ac". IT power is rack input (DESIGN.md: rectifier and VRM losses are inside IT).
The CDU's own power is a cooling-plant figure and is never added here.

With ``k_s = k_r = 0`` every node's rack-input share is affine, ``a P_i + b_i``, with ``a = 1 / (eta_s eta_r)``
and ``b_i`` precomputed (it holds the fixed losses and overhead of the node's group and rack, so partial groups
are exact too); :class:`PowerChain` then uses this faster path. Both paths give the same result (tested).

Every loss formula is :mod:`power.conversion`'s (one source): the stage inputs (:func:`~power.conversion.sivoc_input_w`,
:func:`~power.conversion.rectifier_input_w`), the linear totals (:func:`~power.conversion.linear_loss_w`), the affine
coefficients (:func:`~power.conversion.two_stage_affine_w`, :func:`~power.conversion.rectifier_no_load_share_w`) and
the per-node attribution (:func:`~power.conversion.rectifier_input_share_w`). This module only aggregates.

Aggregation (node -> rectifier -> rack -> CDU) uses the topology index arrays, never a Python loop over nodes:
contiguous-segment sums (``np.add.reduceat``) when the index array is sorted with no empty segment, which is
what :func:`power.system.load_system` builds, else weighted ``np.bincount``. Measured per :meth:`evaluate`
call: Theta (4,392 nodes) ~7 us, Frontier (9,472 nodes) ~9 us on the affine path (~17 / ~33 us general path);
weighted ``np.bincount`` alone costs ~26 us per call at 9,472 nodes.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from power import conversion
from power.system import System

__all__ = ["ChainState", "PowerChain"]


def _segment_sum(index: NDArray[np.intp], n: int) -> Callable[[NDArray[np.float64]], NDArray[np.float64]]:
    """Return ``w -> sum of w per index value``, shape (n,): ``np.bincount(index, w, minlength=n)``.

    When `index` is non-decreasing and every value 0..n-1 occurs (true for node -> rack, node -> rectifier,
    rectifier -> rack and, without empty CDUs, rack -> CDU), the sums are contiguous segments and
    ``np.add.reduceat`` over precomputed segment starts gives the same sums ~10x faster than weighted
    ``np.bincount`` (measured 2.5 us vs 26 us for 9,472 nodes). Otherwise weighted ``np.bincount`` is used.
    """
    counts = np.bincount(index, minlength=n)
    if index.size and counts.size == n and np.all(counts > 0) and np.all(np.diff(index) >= 0):
        starts = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.intp)
        return lambda w: np.add.reduceat(w, starts)
    return lambda w: np.bincount(index, weights=w, minlength=n)


@dataclasses.dataclass(frozen=True, slots=True)
class ChainState:
    """Power flows of the whole system at one instant (all W).

    Attributes
    ----------
    node_dc_W : float
        Sum of node component (DC) power, W.
    sivoc_loss_W : float
        Sum of VRM / SIVOC losses, W.
    rectifier_loss_W : float
        Sum of rectifier losses, W.
    rack_overhead_W : float
        Sum of rack overhead device power (switches, controllers), W.
    it_input_W : float
        IT power = sum of rack input, W; equals the sum of the four terms above (energy balance).
    rack_input_W : ndarray of float64, shape (n_racks,)
        Input power of each rack, W.
    cdu_heat_W : ndarray of float64, shape (n_cdus,)
        Heat sent to each CDU loop, W (``liquid_fraction`` x rack input summed per CDU).
    """

    node_dc_W: float
    sivoc_loss_W: float
    rectifier_loss_W: float
    rack_overhead_W: float
    it_input_W: float
    rack_input_W: NDArray[np.float64]
    cdu_heat_W: NDArray[np.float64]

    @property
    def conversion_loss_W(self) -> float:
        """SIVOC plus rectifier loss, W."""
        return self.sivoc_loss_W + self.rectifier_loss_W

    @property
    def itue(self) -> float:
        """ITUE = rack input / component DC power (node DC + rack overhead devices), dimensionless >= 1."""
        return self.it_input_W / (self.node_dc_W + self.rack_overhead_W)


class PowerChain:
    """Precomputed, vectorised power chain of one :class:`~power.system.System`.

    Parameters
    ----------
    system : System
        Platform description (topology index arrays and conversion parameters).
    allow_affine : bool
        Use the per-node affine fast path when both conversion stages are linear (``k_per_W == 0``).
        ``False`` forces the general path (used by tests to prove the two agree). Default True.

    Attributes
    ----------
    system : System
        The platform.
    uses_affine_path : bool
        Whether :meth:`evaluate` uses the affine fast path.

    References
    ----------
    .. [1] ExaDigiT/RAPS ``raps/power.py::compute_rack_power`` (rectifier loss applied per rectifier to its
       nodes' SIVOC input plus its share of switch power).
    .. [2] DESIGN.md, "Choices that matter": IT power is rack input; aggregation by index arrays.
    """

    def __init__(self, system: System, allow_affine: bool = True) -> None:
        self.system = system
        s, r = system.sivoc, system.rectifier
        n_nodes, n_racks, n_rect = system.n_nodes, system.n_racks, system.n_rectifiers
        self._node_rack = np.asarray(system.node_rack, dtype=np.intp)
        self._node_rect = np.asarray(system.node_rectifier, dtype=np.intp)
        self._rect_rack = np.asarray(system.rectifier_rack, dtype=np.intp)
        self._rack_cdu = np.asarray(system.rack_cdu, dtype=np.intp)
        self._sum_node_rack = _segment_sum(self._node_rack, n_racks)
        self._sum_node_rect = _segment_sum(self._node_rect, n_rect)
        self._sum_rect_rack = _segment_sum(self._rect_rack, n_racks)
        self._sum_rack_cdu = _segment_sum(self._rack_cdu, system.n_cdus)
        self._group_n = np.bincount(self._node_rect, minlength=n_rect).astype(np.float64)  # n_g
        rect_per_rack = np.bincount(self._rect_rack, minlength=n_racks).astype(np.float64)
        nodes_per_rack = np.bincount(self._node_rack, minlength=n_racks).astype(np.float64)
        dc = system.rack_overhead_side == "dc"
        # O_g: DC overhead carried by each rectifier; O_ac: AC overhead added at each rack's input.
        self._O_g = (system.rack_overhead_W / rect_per_rack)[self._rect_rack] if dc else np.zeros(n_rect)
        self._O_ac_rack = np.zeros(n_racks) if dc else np.full(n_racks, system.rack_overhead_W)
        self._O_ac_node = (self._O_ac_rack / nodes_per_rack)[self._node_rack]
        self._O_dc_total = float(self._O_g.sum())
        self._overhead_total = system.rack_overhead_W * n_racks
        self._n_nodes, self._n_racks, self._n_cdus, self._n_rect = n_nodes, n_racks, system.n_cdus, n_rect
        self._lf = system.liquid_fraction
        self._s, self._r = s, r
        self.uses_affine_path = bool(allow_affine and s.k_per_W == 0.0 and r.k_per_W == 0.0)
        # Affine form: node rack-input share = a P_i + b_i (see module docstring).
        if self.is_affine:
            self._a, b_sivoc = conversion.two_stage_affine_w(s, r)
            self._b_node = (
                b_sivoc
                + conversion.rectifier_no_load_share_w(self._O_g, self._group_n, r)[self._node_rect]
                + self._O_ac_node
            )
        else:  # not affine: the affine path and rack_energy_split are never taken, NaN marks any misuse
            self._a, self._b_node = float("nan"), np.full(n_nodes, np.nan)
        self._B_rack = np.bincount(self._node_rack, weights=self._b_node, minlength=n_racks)
        self._nodes_per_rack = nodes_per_rack

    def _check(self, node_dc_W: ArrayLike) -> tuple[NDArray[np.float64], float]:
        p = np.asarray(node_dc_W, dtype=np.float64)
        if p.shape != (self._n_nodes,):
            raise ValueError(f"node_dc_W must have shape ({self._n_nodes},), got {p.shape}")
        total = float(p.sum())
        if not (np.isfinite(total) and p.min() >= 0.0):
            raise ValueError("node_dc_W must be finite and >= 0 W")
        return p, total

    def evaluate(self, node_dc_W: ArrayLike) -> ChainState:  # noqa: DOC502
        """Evaluate the chain for one instant.

        Parameters
        ----------
        node_dc_W : ArrayLike
            Component (DC) power of every node; 0 for a node that is powered off, shape (n_nodes,), W (finite, >= 0).

        Returns
        -------
        ChainState
            Totals, per-rack input (n_racks,) and per-CDU heat (n_cdus,).

        Raises
        ------
        ValueError
            If `node_dc_W` has the wrong shape, or holds a NaN, an infinity or a negative value (raised by
            ``_check``).

        References
        ----------
        .. [1] Chain equations: module docstring of :mod:`power.chain`; loss form: :mod:`power.conversion`.
        """
        p, dc_total = self._check(node_dc_W)
        if self.uses_affine_path:
            return self._affine_state(p, dc_total)
        s_in, load, r_in = self._general(p)
        rack_in = self._sum_rect_rack(r_in) + self._O_ac_rack
        sivoc_loss = float(s_in.sum()) - dc_total
        rect_loss = float(r_in.sum()) - float(load.sum())
        return self._state(dc_total, sivoc_loss, rect_loss, rack_in)

    def evaluate_with_shares(self, node_dc_W: ArrayLike) -> tuple[ChainState, NDArray[np.float64]]:
        """:meth:`evaluate` and :meth:`node_it_input_w` of the same node powers, checked once.

        The event loop needs both at every power change; on the affine path this skips the second input check
        (three passes over the nodes). The values are those of the two methods, bit for bit.

        Parameters
        ----------
        node_dc_W : ArrayLike
            Component (DC) power of every node, shape (n_nodes,), W (finite, >= 0).

        Returns
        -------
        tuple[ChainState, NDArray[np.float64]]
            The :meth:`evaluate` state, and the :meth:`node_it_input_w` shares, shape (n_nodes,) [W].

        Notes
        -----
        Raises ValueError (from the input check) if `node_dc_W` has the wrong shape, or holds a NaN, an infinity
        or a negative value.
        """
        if not self.uses_affine_path:
            return self.evaluate(node_dc_W), self.node_it_input_w(node_dc_W)
        p, dc_total = self._check(node_dc_W)
        return self._affine_state(p, dc_total), self._a * p + self._b_node

    def node_it_input_w_of(self, node_dc_W: NDArray[np.float64], nodes: NDArray[np.int64]) -> NDArray[np.float64]:
        """``node_it_input_w(node_dc_W)[nodes]``, on the affine path from those nodes only (O(len(nodes))).

        Parameters
        ----------
        node_dc_W : NDArray[np.float64]
            Component (DC) power of every node, shape (n_nodes,), W (finite, >= 0).
        nodes : NDArray[np.int64]
            Node indices, shape (k,).

        Returns
        -------
        ndarray of float64, shape (k,)
            Rack-input power attributed to each of ``nodes`` [W], the same values as the whole-machine method.

        Raises
        ------
        ValueError
            If `node_dc_W` has the wrong shape, or a power of ``nodes`` is NaN, infinite or negative (on the
            general path: any node's).
        """
        if not self.uses_affine_path:
            return self.node_it_input_w(node_dc_W)[nodes]
        if np.shape(node_dc_W) != (self._n_nodes,):
            raise ValueError(f"node_dc_W must have shape ({self._n_nodes},), got {np.shape(node_dc_W)}")
        p = node_dc_W[nodes]
        if p.size and not (np.isfinite(p.sum()) and p.min() >= 0.0):
            raise ValueError("node_dc_W must be finite and >= 0 W")
        return self._a * p + self._b_node[nodes]

    def node_it_input_w_at(self, node_dc_W: NDArray[np.float64], nodes: NDArray[np.int64],
                           p_W: float) -> NDArray[np.float64]:
        """:meth:`node_it_input_w_of` when every node of ``nodes`` draws the same DC power ``p_W`` [W] (a job starting or
        changing its power), without reading ``node_dc_W`` on the affine path: ``a p + b_i``, the same values.

        Parameters
        ----------
        node_dc_W : NDArray[np.float64]
            Component (DC) power of every node, shape (n_nodes,) [W], ``p_W`` at ``nodes`` (read only on the general
            path).
        nodes : NDArray[np.int64]
            Node indices, shape (k,).
        p_W : float
            DC power of each of ``nodes`` [W] (finite, >= 0).

        Returns
        -------
        ndarray of float64, shape (k,)
            Rack-input power attributed to each of ``nodes`` [W].

        Raises
        ------
        ValueError
            If ``p_W`` is NaN, infinite or negative.
        """
        if not self.uses_affine_path:
            return self.node_it_input_w(node_dc_W)[nodes]
        if not (math.isfinite(p_W) and p_W >= 0.0):
            raise ValueError("node_dc_W must be finite and >= 0 W")
        return self._a * float(p_W) + self._b_node[nodes]

    def evaluate_into(self, node_dc_W: NDArray[np.float64], cdu_heat_W: NDArray[np.float64],
                      totals_W: NDArray[np.float64], rack_input_W: NDArray[np.float64]
                      ) -> tuple[NDArray[np.float64], float]:
        """:meth:`evaluate` on the affine path, written into the caller's arrays (the event loop's step vector).

        The same values bit for bit (the same expressions in the same order), without building a
        :class:`ChainState` or new result arrays: the event loop calls it at every power change.

        Parameters
        ----------
        node_dc_W : NDArray[np.float64]
            Component (DC) power of every node, shape (n_nodes,), W (finite, >= 0).
        cdu_heat_W : NDArray[np.float64]
            Out: heat per CDU, shape (n_cdus,) [W].
        totals_W : NDArray[np.float64]
            Out, shape (5,): node DC, SIVOC loss, rectifier loss, rack overhead, IT input [W] (the
            :class:`ChainState` totals in that order).
        rack_input_W : NDArray[np.float64]
            Out: input power per rack, shape (n_racks,) [W].

        Returns
        -------
        tuple[NDArray[np.float64], float]
            The node DC power per rack, shape (n_racks,) [W], and in total [W]: what the
            step function then keeps by difference.

        Raises
        ------
        ValueError
            If the chain is not affine (:attr:`uses_affine_path` False), or `node_dc_W` has the wrong shape, or
            holds a NaN, an infinity or a negative value.
        """
        if not self.uses_affine_path:
            raise ValueError("evaluate_into needs the affine path (both conversion stages linear)")
        p, dc_total = self._check(node_dc_W)
        rack_dc = self._sum_node_rack(p)
        self.rack_dc_into(rack_dc, dc_total, cdu_heat_W, totals_W, rack_input_W)
        return rack_dc, dc_total

    def rack_dc_into(self, rack_dc_W: NDArray[np.float64], dc_total_W: float, cdu_heat_W: NDArray[np.float64],
                     totals_W: NDArray[np.float64], rack_input_W: NDArray[np.float64]) -> None:
        """The rest of :meth:`evaluate_into` from the DC power per rack and in total (affine path).

        The event loop keeps both by difference between exact re-sums (:mod:`scheduler_sim.kernel.stepfunction`)
        and calls this at every power change: O(n_racks), the same expressions as :meth:`evaluate_into`.

        Parameters
        ----------
        rack_dc_W : NDArray[np.float64]
            DC power of each rack's nodes, shape (n_racks,) [W] (as :meth:`evaluate_into` returns it).
        dc_total_W : float
            DC power of all nodes [W].
        cdu_heat_W : NDArray[np.float64]
            Out: heat per CDU, shape (n_cdus,) [W].
        totals_W : NDArray[np.float64]
            Out, shape (5,): node DC, SIVOC loss, rectifier loss, rack overhead, IT input [W].
        rack_input_W : NDArray[np.float64]
            Out: input power per rack, shape (n_racks,) [W].
        """
        dc_total = dc_total_W
        rack_in = self._a * rack_dc_W + self._B_rack
        sivoc_loss, rect_loss = self.loss_totals_w(dc_total)
        cdu = self._sum_rack_cdu(rack_in)
        if self._lf != 1.0:
            cdu *= self._lf
        rack_input_W[:] = rack_in
        cdu_heat_W[:] = cdu
        totals_W[0] = dc_total
        totals_W[1] = sivoc_loss
        totals_W[2] = rect_loss
        totals_W[3] = self._overhead_total
        totals_W[4] = rack_in.sum()

    def loss_totals_w(self, dc_total_W: float) -> tuple[float, float]:
        """SIVOC and rectifier loss of the whole system from its node DC power, on the affine path [W].

        With linear stages both totals depend only on the summed DC power (:func:`power.conversion.linear_loss_w`):
        the expressions :meth:`evaluate` uses, in the same order.

        Parameters
        ----------
        dc_total_W : float
            DC power of all nodes [W].

        Returns
        -------
        tuple[float, float]
            SIVOC loss and rectifier loss [W].
        """
        sivoc_loss = conversion.linear_loss_w(dc_total_W, self._n_nodes, self._s)
        rect_out = dc_total_W + sivoc_loss + self._O_dc_total
        return sivoc_loss, conversion.linear_loss_w(rect_out, self._n_rect, self._r)

    @property
    def affine_coefficients(self) -> tuple[float, NDArray[np.float64], NDArray[np.float64]]:
        """``(a, b_node, B_rack)`` of the affine path: a node's rack-input share is ``a P_i + b_i`` and a rack's input
        ``a P_rack + B_rack`` (module docstring); NaN when the chain is not affine. Shapes: (), (n_nodes,), (n_racks,).
        """
        return self._a, self._b_node, self._B_rack

    def _affine_state(self, p: NDArray[np.float64], dc_total: float) -> ChainState:
        """The :class:`ChainState` of checked node powers ``p`` on the affine path."""
        rack_in = self._a * self._sum_node_rack(p) + self._B_rack
        sivoc_loss, rect_loss = self.loss_totals_w(dc_total)
        return self._state(dc_total, sivoc_loss, rect_loss, rack_in)

    def _state(self, dc_total: float, sivoc_loss: float, rect_loss: float, rack_in: NDArray[np.float64]) -> ChainState:
        cdu = self._sum_rack_cdu(rack_in)
        if self._lf != 1.0:
            cdu *= self._lf
        return ChainState(node_dc_W=dc_total, sivoc_loss_W=float(sivoc_loss), rectifier_loss_W=float(rect_loss),
                          rack_overhead_W=self._overhead_total, it_input_W=float(rack_in.sum()),
                          rack_input_W=rack_in, cdu_heat_W=cdu)

    def _general(self, p: NDArray[np.float64]) -> tuple[NDArray[np.float64], ...]:
        s_in = conversion.sivoc_input_w(p, self._s)
        load = self._sum_node_rect(s_in) + self._O_g
        r_in = conversion.rectifier_input_w(load, self._r)
        return s_in, load, r_in

    def node_it_input_w(self, node_dc_W: ArrayLike) -> NDArray[np.float64]:  # noqa: DOC502
        """Rack-input (IT) power attributed to each node: its SIVOC input plus its share of its rectifier.

        Attribution rule (shares sum exactly to rack input, hence to IT input): in rectifier group ``g`` of
        ``n_g`` nodes with DC overhead share ``O_g`` and load ``L_g``, node ``i`` receives
        ``s_i / eta_r`` (its proportional load) + ``(P_fixed,r + O_g) / (eta_r n_g)`` (fixed loss and overhead
        split equally) + ``k_r L_g (s_i + O_g / n_g)`` (I^2 R loss in proportion to its share of the load),
        plus ``rack_overhead_W / (nodes in rack)`` when the overhead is on the AC side. Idle nodes carry their
        own share; the caller decides to which job / bucket each node's share goes.

        Parameters
        ----------
        node_dc_W : ArrayLike
            Component (DC) power of every node, shape (n_nodes,), W (finite, >= 0).

        Returns
        -------
        ndarray of float64, shape (n_nodes,)
            Rack-input power attributed to each node, W; ``sum == evaluate(node_dc_W).it_input_W``.

        Raises
        ------
        ValueError
            If `node_dc_W` has the wrong shape, or holds a NaN, an infinity or a negative value (raised by
            ``_check``).

        References
        ----------
        .. [1] Chain equations: module docstring of :mod:`power.chain`.
        """
        p, _ = self._check(node_dc_W)
        if self.uses_affine_path:
            return self._a * p + self._b_node
        s_in, load, _ = self._general(p)
        return conversion.rectifier_input_share_w(s_in, load, self._O_g, self._group_n, self._node_rect, self._r,
                                                  self._O_ac_node)

    @property
    def is_affine(self) -> bool:
        """True when both conversion stages are linear (``k_per_W == 0``), so rack input is affine in node DC power."""
        return self._s.k_per_W == 0.0 and self._r.k_per_W == 0.0

    @property
    def overhead_per_node_W(self) -> float:
        """Rack overhead power shared equally per node, W: ``rack_overhead_W * n_racks / n_nodes``."""
        return self.system.rack_overhead_W * self._n_racks / self._n_nodes

    def rack_energy_split(self, rack_input_J: ArrayLike, duration_s: float) -> tuple[NDArray[np.float64], ...]:
        """Invert the affine chain per rack: node DC energy, SIVOC loss and rectifier loss from rack-input energy.

        With linear stages every rack's input is ``a P_dc,rack + B_rack`` (module docstring), so over a duration
        ``T`` the rack's node DC energy is ``E_dc = (E_in - B_rack T) / a``, its SIVOC loss
        ``E_dc (1 / eta_s - 1) + n_rack P_fixed,s / eta_s T`` and its rectifier loss
        ``E_in - E_dc - E_sivoc - O T`` (``O`` the rack overhead power), exactly, whatever the power did in between.

        Parameters
        ----------
        rack_input_J : ArrayLike
            Rack-input energy of every rack over the duration, shape (n_racks,), J.
        duration_s : float
            Duration, s (> 0).

        Returns
        -------
        tuple of three ndarray of float64, shape (n_racks,)
            Node DC energy, SIVOC loss and rectifier loss of every rack, J.

        Raises
        ------
        ValueError
            If a conversion stage has an I^2R term (the chain is not affine and cannot be inverted from energy), or
            `rack_input_J` has the wrong shape.

        References
        ----------
        .. [1] Chain equations: module docstring of :mod:`power.chain`.
        """
        if not self.is_affine:
            raise ValueError("rack_energy_split needs linear conversion stages (k_per_W == 0): with an I^2R term the "
                             "rack's losses depend on how its power varied, not only on its energy")
        e_in = np.asarray(rack_input_J, dtype=np.float64)
        if e_in.shape != (self._n_racks,):
            raise ValueError(f"rack_input_J must have shape ({self._n_racks},), got {e_in.shape}")
        T = float(duration_s)
        e_dc = (e_in - self._B_rack * T) / self._a
        e_sivoc = conversion.linear_loss_w(e_dc, self._nodes_per_rack, self._s, T)
        e_rect = e_in - e_dc - e_sivoc - self.system.rack_overhead_W * T
        return e_dc, e_sivoc, e_rect
