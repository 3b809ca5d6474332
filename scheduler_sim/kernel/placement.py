"""Placement: which free nodes a starting job gets.

``lowest`` takes the lowest free indices. ``spread`` and ``pack`` rank CDUs by their thermal margin and take nodes
from the CDU with the most margin first (``spread``, evens out heat) or the least (``pack``, concentrates heat).
The margin is the plant's last CDU supply temperature plus the rise the heat added since then will cause
(secondary loop: ``dT = dQ / (m_flow cp)``, :func:`cooling_fmu.coupling.supply_rise_K_per_W`); without a plant
reading (no plant, before its first step, in a fork) it is the heat per node of each CDU.
"""

from __future__ import annotations

import numpy as np

from power import PowerChain, System

from .state import CoolingReadout

__all__ = ["PLACEMENTS", "Placement"]

#: Placement rules.
PLACEMENTS = ("lowest", "spread", "pack")


class Placement:
    """Node order for the next allocation.

    Parameters
    ----------
    mode : str
        The rule, "lowest", "spread" or "pack" (see the module docstring).
    system : System
        The platform (``node_cdu``, ``n_cdus``, ``n_nodes``).
    chain : PowerChain
        Its power chain (rack-input power of each node).
    supply_cols : np.ndarray | None
        Columns of the plant's CDU supply temperatures, one per CDU in CDU order [K]; None without them.
    dT_per_W : float | None
        CDU supply-temperature rise per watt of added heat [K/W]; None when the plant does not say.

    Raises
    ------
    ValueError
        For an unknown ``mode``.
    """

    def __init__(self, mode: str, system: System, chain: PowerChain, supply_cols: np.ndarray | None = None,
                 dT_per_W: float | None = None) -> None:
        if mode not in PLACEMENTS:
            raise ValueError(f"placement must be 'lowest', 'spread' or 'pack', got {mode!r}")
        self.mode = mode
        self.system = system
        self.chain = chain
        self.supply_cols = supply_cols
        self.dT_per_W = dT_per_W

    def node_order(self, node_dc: np.ndarray, cooling: CoolingReadout) -> np.ndarray | None:
        """Preferred node order (None = lowest index first).

        Parameters
        ----------
        node_dc : np.ndarray
            Shape (n_nodes,): DC power of every node now [W].
        cooling : CoolingReadout
            The last cooling step (plant outputs, heat per CDU).

        Returns
        -------
        ndarray of int64, shape (n_nodes,) or None
            Node indices, preferred first.
        """
        if self.mode == "lowest":
            return None
        sysm = self.system
        nc = sysm.n_cdus
        heat_now = np.bincount(sysm.node_cdu, weights=self.chain.node_it_input_w(node_dc), minlength=nc)
        if cooling.plant_state is not None and self.supply_cols is not None and self.dT_per_W is not None:
            # margin: the plant's last CDU supply temperature, plus the rise the heat added since then will cause;
            # higher score = cooler = more margin
            T_pred = cooling.plant_state[self.supply_cols] + (heat_now - cooling.last_step_heat) * self.dT_per_W
            score = -T_pred
        else:
            score = -heat_now / np.bincount(sysm.node_cdu, minlength=nc)  # least heat per node first
        if self.mode == "pack":
            score = -score
        rank = np.empty(nc, dtype=np.int64)
        rank[np.argsort(-score, kind="stable")] = np.arange(nc)
        return np.lexsort((np.arange(sysm.n_nodes), rank[sysm.node_cdu]))
