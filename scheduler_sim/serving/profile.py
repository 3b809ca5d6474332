"""From the engine's busy intervals to a compact node power profile for the facility simulation.

GPU power of each replica is a step function (idle power outside busy intervals). It is averaged over fixed bins of
``merge_s`` seconds *exactly*: the bin's energy (integral of the step function) divided by its length, so energy is
preserved bin by bin and the profile has at most ``duration / merge_s`` rows (consecutive identical rows are then
dropped). Node DC power = the node's non-GPU baseline (CPU, memory, NICs, drives from the system's
``NodePowerParams``) + the power of the node's GPUs; GPU slot ``g`` of the partition is on node
``g // gpus_per_node`` and replica ``r`` owns slots ``r tp .. (r+1) tp - 1``; slots no replica owns draw the
deployment GPU's idle power. With prefill/decode disaggregation the power of the links during KV transfers
(``ServingResult.transfers``) is added half to the sending, half to the receiving replica's nodes (spread evenly
over the replica's GPU slots), binned energy-exactly like the GPU power (transfers may overlap). Air-cooled
servers add their fans, ``fan_share / (1 - fan_share)`` times the rest of the node's power, to the node (IT power,
The Green Grid; :class:`scheduler_sim.serving.hardware.ServerCooling`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from power import NodePowerParams, node_power_w

from .engine import ServingResult

__all__ = ["MAX_PROFILE_BYTES", "ServingPower", "build_power"]


@dataclass
class ServingPower:
    """Binned power of a serving partition.

    Attributes
    ----------
    t_s : ndarray, shape (k,)
        Row start times [s] (trace time + ``offset_s``); the last row holds to the end of the simulation.
    P_gpu_W : ndarray, shape (k, n_replicas)
        Power of each GPU of each replica [W] (every GPU of a replica draws the same).
    P_node_W : ndarray, shape (k, n_nodes)
        DC power of each partition node [W] (GPUs, node baseline and KV-transfer links).
    P_link_W : ndarray, shape (k, n_replicas)
        KV-transfer link power charged to each replica's nodes [W] (zero without disaggregation).
    P_fan_W : ndarray, shape (k, n_nodes) or None
        Server fan power of each partition node [W], included in ``P_node_W`` (IT power); None when the
        deployment's servers are liquid-cooled (:class:`scheduler_sim.serving.hardware.ServerCooling`).
    gpus_per_node : int
    node_baseline_W : float
        Non-GPU DC power of one node [W].
    merge_s : float
        Bin length [s].
    """

    t_s: np.ndarray
    P_gpu_W: np.ndarray
    P_node_W: np.ndarray
    gpus_per_node: int
    node_baseline_W: float
    merge_s: float
    P_link_W: np.ndarray | None = None
    P_fan_W: np.ndarray | None = None

    def fan_energy_J(self, t_end_s: float) -> float:
        """Energy of the server fans of the partition from ``t_s[0]`` to ``t_end_s`` [J] (0 when liquid-cooled)."""
        if self.P_fan_W is None:
            return 0.0
        dt = np.diff(np.append(self.t_s, t_end_s))
        return float(np.dot(dt, self.P_fan_W.sum(axis=1)))

    def link_energy_J(self, t_end_s: float) -> float:
        """Energy of the KV-transfer links from ``t_s[0]`` to ``t_end_s`` [J]."""
        if self.P_link_W is None:
            return 0.0
        dt = np.diff(np.append(self.t_s, t_end_s))
        return float(np.dot(dt, self.P_link_W.sum(axis=1)))

    def gpu_energy_J(self, t_end_s: float) -> float:
        """Energy of all deployment GPUs from ``t_s[0]`` to ``t_end_s`` [J] (tp GPUs per replica column).

        Parameters
        ----------
        t_end_s : float
            End of the span [s], at or after the last row's start.

        Returns
        -------
        float
            The energy [J].

        Raises
        ------
        ValueError
            If ``t_end_s`` is before the last row start.
        """
        if t_end_s < self.t_s[-1]:
            raise ValueError(f"t_end_s={t_end_s} is before the last profile row ({self.t_s[-1]})")
        dt = np.diff(np.append(self.t_s, t_end_s))
        return float(np.dot(dt, self.P_gpu_W.sum(axis=1)) * self._tp)

    _tp: int = 1


def _bin_energy(seg_t0, seg_t1, seg_P, idle_W, edges) -> np.ndarray:
    """Energy per bin [J] of a step function: idle_W outside the segments, seg_P inside (segments disjoint)."""
    e = idle_W * np.diff(edges)
    if len(seg_t0) == 0:
        return e
    excess = (seg_P - idle_W) * (seg_t1 - seg_t0)
    knots = np.empty(2 * len(seg_t0))
    knots[0::2] = seg_t0
    knots[1::2] = seg_t1
    cum = np.empty_like(knots)
    c = np.cumsum(excess)
    cum[1::2] = c
    cum[0::2] = c - excess
    E = np.interp(edges, knots, cum, left=0.0, right=float(c[-1]))
    return e + np.diff(E)


def _bin_energy_overlapping(t0, t1, P, edges) -> np.ndarray:
    """Energy per bin [J] of a sum of rectangles (power P over [t0, t1]; rectangles may overlap), zero elsewhere.

    E(x) = sum_{t0 < x} P (x - t0) - sum_{t1 < x} P (x - t1), evaluated at the edges with sorted cumulative sums.
    """
    if len(t0) == 0:
        return np.zeros(len(edges) - 1)

    def ramp(knots, w):
        o = np.argsort(knots)
        k, w = knots[o], w[o]
        cw = np.concatenate(([0.0], np.cumsum(w)))
        cwk = np.concatenate(([0.0], np.cumsum(w * k)))
        j = np.searchsorted(k, edges, side="left")
        return edges * cw[j] - cwk[j]

    E = ramp(np.asarray(t0, float), np.asarray(P, float)) - ramp(np.asarray(t1, float), np.asarray(P, float))
    return np.diff(E)


#: Largest power profile :func:`build_power` allocates [bytes] (sizes taken from input are checked first).
MAX_PROFILE_BYTES = 2 * 2**30


def build_power(res: ServingResult, *, node: NodePowerParams, merge_s: float = 1.0, t_end_s: float | None = None,
                offset_s: float = 0.0, cpu_util: float = 0.0) -> ServingPower:
    """Bin the engine's GPU power and add the node baseline.

    Parameters
    ----------
    res : ServingResult
        Engine output.
    node : NodePowerParams
        The system's node description (CPU / memory / NIC / drive baseline, ``gpus_per_node``).
    merge_s : float
        Bin length [s], > 0 (default 1 s).
    t_end_s : float | None
        End of the binned span in trace time [s]; default the last completion, rounded up to a whole bin.
    offset_s : float
        Added to trace times to give simulation times [s].
    cpu_util : float
        Host CPU utilisation in [0, 1] of the partition nodes (constant; default 0: CPUs at idle power).

    Returns
    -------
    ServingPower

    Raises
    ------
    ValueError
        If the system's nodes have no GPU, ``tensor_parallel`` does not divide / is not a multiple of
        ``gpus_per_node``, ``merge_s`` <= 0, or the profile would exceed :data:`MAX_PROFILE_BYTES`.
    """
    if merge_s <= 0:
        raise ValueError(f"merge_s must be > 0, got {merge_s}")
    dep = res.deployment
    gpn = node.gpus_per_node
    tp = dep.tensor_parallel
    if gpn < 1:
        raise ValueError("the system's nodes have no GPU (gpus_per_node = 0): cannot host a serving partition")
    if gpn % tp and tp % gpn:
        raise ValueError(f"tensor_parallel={tp} must divide, or be a multiple of, gpus_per_node={gpn}")
    t_last = res.info["t_end_s"] if t_end_s is None else t_end_s
    rows = t_last / merge_s
    n_cols = 3 * dep.replicas + -(-dep.n_gpus // gpn)
    if not np.isfinite(rows) or (rows + 2) * n_cols * 8 > MAX_PROFILE_BYTES:
        raise ValueError(f"the serving power profile would need {rows:,.0f} rows of {merge_s:g} s "
                         f"({(rows + 2) * n_cols * 8 / 2**30:,.1f} GiB) for {t_last:,.0f} s of trace; limit "
                         f"{MAX_PROFILE_BYTES / 2**30:.0f} GiB: raise serving.merge_s, shorten serving.duration_s, or "
                         f"check the request trace's times")
    nb = max(1, int(np.ceil(t_last / merge_s - 1e-9)))
    edges = np.arange(nb + 1) * merge_s
    idle = dep.gpu.idle_power_W
    P_rep = np.empty((nb, dep.replicas))
    for r, (a, b, P) in enumerate(res.segments):
        P_rep[:, r] = _bin_energy(a, b, P, idle, edges) / merge_s
    # one idle row after the last bin
    P_rep = np.vstack([P_rep, np.full((1, dep.replicas), idle)])
    P_link = np.zeros_like(P_rep)
    tr = res.transfers
    if tr and len(tr["t_start_s"]):
        half = 0.5 * tr["P_W"]
        for r in range(dep.replicas):
            m = (tr["src"] == r) | (tr["dst"] == r)
            if m.any():
                w = half[m] * ((tr["src"][m] == r).astype(float) + (tr["dst"][m] == r))
                P_link[:-1, r] = _bin_energy_overlapping(tr["t_start_s"][m], tr["t_end_s"][m], w, edges) / merge_s
    t = np.append(edges[:-1], edges[-1])
    n_slots_used = dep.n_gpus
    n_nodes = -(-n_slots_used // gpn)
    slot_P = np.full((P_rep.shape[0], n_nodes * gpn), idle)
    slot_P[:, :n_slots_used] = np.repeat(P_rep + P_link / tp, tp, axis=1)
    base = float(node_power_w(cpu_util, 0.0, node)) - gpn * node.gpu_idle_W
    P_node = base + slot_P.reshape(P_rep.shape[0], n_nodes, gpn).sum(axis=2)
    fan = dep.server.fan_factor
    P_fan = fan * P_node if fan > 0 else None
    if P_fan is not None:  # server fans of air-cooled servers: IT power inside the node (ServerCooling)
        P_node = P_node + P_fan
    keep = np.ones(len(t), dtype=bool)
    keep[1:] = np.any(P_node[1:] != P_node[:-1], axis=1) | np.any(P_rep[1:] != P_rep[:-1], axis=1)
    out = ServingPower(t[keep] + offset_s, P_rep[keep], P_node[keep], gpn, base, float(merge_s), P_link[keep],
                       P_fan[keep] if P_fan is not None else None)
    out._tp = tp
    return out
