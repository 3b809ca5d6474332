"""Shared nodes: the slots of a sharing partition (``share = true``), who holds them, and the power by share.

A sharing partition's nodes have ``S = share_slots`` slots each, its scheduling unit. A job asks for
``k = ceil(s x S)`` slots, ``s`` its share of one node (``max(gpus / G, cpus / C)`` of a GPU-sharing pod or a
CPU-only pod; ``nodes`` whole nodes, ``k = nodes x S``, for a job that gives none), see
:func:`job_slots`. The policy's view of the partition counts slots, not nodes (free slots, each job's slots, the
known availability of every slot), so EASY's reservations and backfill are those of a pool of slots.

Placement (:meth:`SlotTable.allocate`): a job of ``k <= S`` slots goes on one node when any node has ``k`` free
slots, the fullest such node first (best fit); a larger job takes whole free nodes first. Only when no node has
room for it whole is a job spread over several partly used nodes, counted as ``split`` (``share_jobs_split`` in
the run's info): so a job fits iff the partition has ``k`` free slots, and the slot counts the policy plans with are
exact (as Slurm's ``select/cons_tres`` places a job asking for tasks, not nodes, on the cores free anywhere).

Power by share (:func:`node_power_by_share`): a shared node draws its idle power plus the sum of its tenants'
dynamic power, capped at the node's maximum power,

    P_n = P_idle + min(sum_t d_t k_tn, P_max - P_idle),

with ``d_t`` tenant ``t``'s dynamic power per slot (its node power over idle times its nodes, divided by its
slots) and ``k_tn`` its slots on the node. This is the additive utilisation model of :func:`power.node.node_power_w`
(each component linear in its utilisation between idle and maximum), summed over the tenants' shares of the
node's components; the cap is the node's rated maximum (Fan, Weber and Barroso, "Power provisioning for a
warehouse-sized computer", ISCA 2007: power linear in utilisation from idle to peak). Each tenant is charged the
idle power in proportion to its slots among the occupied ones (a node with a tenant is not idle) plus its share of
the dynamic power after the cap, and the node's rack-input power in proportion to that DC power, so the tenants'
charges add up to the node's power and the run's energy closes.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from power import System

__all__ = ["SlotTable", "charge_tenants", "job_slots", "node_power_by_share", "share_power", "slot_table_of"]

FREE = -1


def job_slots(df: pd.DataFrame, part: np.ndarray, system: System) -> np.ndarray:
    """Slots each job asks for: its nodes on a whole-node partition, its share of a node in slots on a sharing one.

    Parameters
    ----------
    df : pd.DataFrame
        Canonical job table, ``n`` rows (``nodes``; optional ``gpus`` and ``cpus`` share columns, :mod:`jobs.shares`).
    part : np.ndarray
        Shape (n,): partition index of each job.
    system : System
        The platform.

    Returns
    -------
    ndarray of int64, shape (n,)
        ``nodes`` on a whole-node partition; ``max(1, ceil(s x S))`` for a job with a share ``s <= 1`` of a node,
        else ``nodes x S``, on a sharing partition of ``S`` slots per node (module docstring).
    """
    nodes = df["nodes"].to_numpy(dtype=np.int64)
    out = nodes.copy()
    if not system.shares:
        return out
    n = len(df)
    g = df["gpus"].to_numpy(float) if "gpus" in df.columns else np.full(n, np.nan)
    c = df["cpus"].to_numpy(float) if "cpus" in df.columns else np.full(n, np.nan)
    for p in system.partitions:
        m = (part == p.index)
        if not p.share or not m.any():
            continue
        S, G, C = p.share_slots, p.node.gpus_per_node, max(p.cores_per_node, 1)
        sg = np.where(np.isfinite(g) & (g > 0) & (G > 0), g / max(G, 1), 0.0)
        sc = np.where(np.isfinite(c) & (c > 0), c / C, 0.0)
        s = np.maximum(sg, sc)
        sub = (s > 0) & (s <= 1.0) & (nodes <= 1)
        # the 1e-9 keeps an exact share (0.25 of 64 slots = 16) from rounding up on float error
        k = np.maximum(1, np.ceil(s * S - 1e-9)).astype(np.int64)
        out[m] = np.where(sub, k, nodes * S)[m]
    return out


class SlotTable:
    """The slots of one sharing partition: which job holds each, and how many each node has in use.

    Parameters
    ----------
    lo : int
        First node of the partition.
    n : int
        Its nodes (>= 1).
    slots : int
        Slots per node ``S`` (>= 2).

    Attributes
    ----------
    owner : ndarray of int64, shape (n x S,)
        Job holding each slot (slot ``u`` is on node ``lo + u // S``), -1 when free.
    used : ndarray of int64, shape (n,)
        Slots in use on each node.
    dyn_W : dict of int -> float
        Dynamic DC power of each tenant job, all its slots together [W] (its node power over idle, times nodes).
    n_split : int
        Jobs placed over more nodes than their slots need, for lack of a node with room for them whole.
    """

    def __init__(self, lo: int, n: int, slots: int) -> None:
        self.lo, self.n, self.S = int(lo), int(n), int(slots)
        self.owner = np.full(self.n * self.S, FREE, dtype=np.int64)
        self.used = np.zeros(self.n, dtype=np.int64)
        self.held: dict[int, np.ndarray] = {}
        self.dyn_W: dict[int, float] = {}
        self.n_split = 0

    def free_slots(self, avail: np.ndarray) -> int:
        """Free slots on the nodes that are available (``avail``: up and in the pool, shape (n,))."""
        return int((self.S - self.used)[avail].sum())

    def allocate(self, job: int, k: int, avail: np.ndarray, rank: np.ndarray) -> np.ndarray:
        """Give ``k`` free slots to ``job`` (module docstring: best fit on one node, else whole nodes, else split).

        Parameters
        ----------
        job : int
            Job index (>= 0).
        k : int
            Slots (>= 1).
        avail : np.ndarray
            Shape (n,), bool: nodes up and in the pool.
        rank : np.ndarray
            Shape (n,), int64: the placement's preference of each node (lower first), the last tie-break.

        Returns
        -------
        ndarray of int64
            The global indices of the nodes the job is on, ascending.

        Raises
        ------
        ValueError
            If fewer than ``k`` slots are free (the caller turns it into its allocation error).
        """
        S = self.S
        free_n = np.where(avail, S - self.used, 0)
        if int(free_n.sum()) < k:
            raise ValueError(f"job {job} asks for {k} slots but only {int(free_n.sum())} are free")
        fits = free_n >= k if k <= S else free_n == S
        # fitting nodes first, the fullest of them first (best fit); then the rest, the emptiest first
        key = np.where(fits, free_n, -free_n) if k <= S else -free_n
        order = np.lexsort((rank, key, ~fits))
        order = order[free_n[order] > 0]
        cum = np.cumsum(free_n[order])
        m = int(np.searchsorted(cum, k)) + 1
        chosen = order[:m]
        take = free_n[chosen].copy()
        take[-1] = k - (int(cum[m - 2]) if m > 1 else 0)
        got = []
        for nd, t in zip(chosen.tolist(), take.tolist()):
            base = nd * S
            got.append(base + np.flatnonzero(self.owner[base:base + S] == FREE)[:t])
        slots = np.sort(np.concatenate(got))
        self.owner[slots] = job
        self.used[chosen] += take
        self.held[job] = slots
        if m > -(-k // S):
            self.n_split += 1
        return self.lo + np.sort(chosen).astype(np.int64)

    def release(self, job: int) -> np.ndarray:
        """Free ``job``'s slots; return the global indices of its nodes, ascending."""
        slots = self.held.pop(job)
        self.dyn_W.pop(job, None)
        self.owner[slots] = FREE
        local, cnt = np.unique(slots // self.S, return_counts=True)
        self.used[local] -= cnt
        return self.lo + local

    def holds(self, job: int) -> bool:
        """True while ``job`` holds slots here."""
        return job in self.held

    def tenants(self, nodes: np.ndarray) -> np.ndarray:
        """Jobs holding slots on ``nodes`` (global indices), ascending."""
        local = np.asarray(nodes, dtype=np.int64) - self.lo
        idx = (local[:, None] * self.S + np.arange(self.S)).ravel()
        o = self.owner[idx]
        return np.unique(o[o >= 0])

    def representative(self, nodes: np.ndarray) -> np.ndarray:
        """Owner code of each node (global indices) for the node-level allocator: its lowest tenant, or -1."""
        local = np.asarray(nodes, dtype=np.int64) - self.lo
        o = self.owner[(local[:, None] * self.S + np.arange(self.S))]
        o = np.where(o >= 0, o, np.iinfo(np.int64).max)
        rep = o.min(axis=1)
        return np.where(rep == np.iinfo(np.int64).max, FREE, rep)

    def slots_on(self, job: int) -> tuple[np.ndarray, np.ndarray]:
        """``job``'s nodes (global, ascending) and its slots on each, shapes (m,) and (m,)."""
        local, cnt = np.unique(self.held[job] // self.S, return_counts=True)
        return self.lo + local, cnt


def node_power_by_share(table: SlotTable, nodes: np.ndarray, idle_W: np.ndarray, max_W: float
                        ) -> tuple[np.ndarray, dict[int, tuple[np.ndarray, np.ndarray]]]:
    """DC power of shared nodes and each tenant's charge on them (module docstring).

    Parameters
    ----------
    table : SlotTable
        The partition's slots and its tenants' dynamic power (:attr:`SlotTable.dyn_W`).
    nodes : np.ndarray
        Shape (m,): global node indices, ascending.
    idle_W : np.ndarray
        Shape (m,): idle DC power of each of those nodes [W].
    max_W : float
        The node type's maximum DC power [W] (the cap).

    Returns
    -------
    node_dc_W : ndarray, shape (m,)
        DC power of each node [W]: idle + min(sum of tenants' dynamic power, max - idle).
    charges : dict of int -> (ndarray, ndarray)
        For each tenant on those nodes: the nodes (global, among ``nodes``) and its DC charge on each [W]; the
        charges of a node add up to its DC power.
    """
    S = table.S
    local = np.asarray(nodes, dtype=np.int64) - table.lo
    dc = np.asarray(idle_W, dtype=float).copy()
    charges: dict[int, tuple[list, list]] = {}
    for i, nd in enumerate(local.tolist()):
        o = table.owner[nd * S:(nd + 1) * S]
        ten, k = np.unique(o[o >= 0], return_counts=True)
        if ten.size == 0:
            continue
        dyn = np.array([table.dyn_W[int(t)] / table.held[int(t)].size for t in ten]) * k
        D = float(dyn.sum())
        room = max(max_W - idle_W[i], 0.0)
        dc[i] = idle_W[i] + min(D, room)
        share = dyn / D if D > 0 else np.zeros(ten.size)
        charge = idle_W[i] * k / k.sum() + (dc[i] - idle_W[i]) * share
        for t, c in zip(ten.tolist(), charge.tolist()):
            nl, cl = charges.setdefault(int(t), ([], []))
            nl.append(table.lo + nd)
            cl.append(c)
    return dc, {t: (np.asarray(a, dtype=np.int64), np.asarray(b, dtype=float)) for t, (a, b) in charges.items()}


def charge_tenants(table: SlotTable, nodes: np.ndarray, now: float, state: object, idle_node_W: np.ndarray,
                   max_W: float, chain: object) -> None:
    """Set the DC power of shared ``nodes`` and re-charge every tenant on them from ``now`` on (module docstring).

    Each tenant's energy is first accrued up to ``now`` at its old power; then the nodes' power
    (:func:`node_power_by_share`) is set in ``state.node_dc``, and each tenant's ledger power becomes its DC charge
    (``cur_node_power`` = its mean charge per node, so ``cur_node_power x nodes`` is its DC power) and its
    rack-input charge (each node's rack-input power split in proportion to the DC charges), per node and per CDU.

    Parameters
    ----------
    table : SlotTable
        The sharing partition.
    nodes : np.ndarray
        Global node indices whose tenants changed (a job started, ended or changed its power there).
    now : float
        Current time [s].
    state : object
        The platform state (a PlatformState: ``node_dc``, ``job_nodes``, ``ledger``, ``attempt_shares``, ``step``).
    idle_node_W : np.ndarray
        Shape (n_nodes,): idle DC power of every node [W].
    max_W : float
        Maximum DC power of the partition's node type [W].
    chain : object
        The power chain (a PowerChain: rack-input power of nodes, the node-to-CDU map).
    """
    st, led = state, state.ledger
    ten = table.tenants(nodes)
    allnodes = np.unique(np.concatenate([np.asarray(nodes, dtype=np.int64)] + [st.job_nodes[int(x)] for x in ten]))
    dc, charges = node_power_by_share(table, allnodes, idle_node_W[allnodes], max_W)
    st.node_dc[allnodes] = dc
    it = chain.node_it_input_w_of(st.node_dc, allnodes)
    pos = {int(n): i for i, n in enumerate(allnodes.tolist())}
    sysm = chain.system
    for x in ten.tolist():
        nd, c = charges[x]
        i = np.fromiter((pos[int(n)] for n in nd), dtype=np.int64, count=nd.size)
        it_x = np.where(dc[i] > 0, it[i] * c / np.where(dc[i] > 0, dc[i], 1.0), 0.0)
        led.accrue_job(x, now, st.job_nodes[x].size)
        led.cur_node_power[x] = float(c.sum()) / nd.size
        led.set_power(x, it_x, np.bincount(sysm.node_cdu[nd], weights=it_x, minlength=sysm.n_cdus))
        st.attempt_shares[x] = it_x
    st.step.touch(allnodes)


def slot_table_of(j: int, system: System, jobs: object, alloc: object) -> SlotTable | None:
    """The slot table of job ``j``'s partition when that partition shares its nodes, else None.

    Parameters
    ----------
    j : int
        Job index.
    system : System
        The platform.
    jobs : object
        The run's jobs (a JobTable: ``partition``).
    alloc : object
        The node allocator (a NodeAllocator: its ``shared`` tables).

    Returns
    -------
    SlotTable or None
        None on a whole-node partition (always on a system without ``share = true``).
    """
    if not system.shares:
        return None
    p = system.partitions[int(jobs.partition[j])]
    return alloc.shared[p.first_node] if p.share else None


def share_power(j: int, p_node_W: float | None, nodes: np.ndarray, now: float, system: System, jobs: object,
                state: object, chain: object) -> None:
    """Set job ``j``'s dynamic power from its node power sample and re-charge the tenants of ``nodes``.

    Parameters
    ----------
    j : int
        Job index, on a sharing partition.
    p_node_W : float | None
        Its node DC power sample [W] (the power it would draw per node alone, :mod:`jobs.shares`): its dynamic
        power becomes ``nodes x max(p - idle, 0)``; None when it has just ended (its co-tenants are re-charged).
    nodes : np.ndarray
        Global indices of its nodes.
    now : float
        Current time [s].
    system : System
        The platform.
    jobs : object
        The run's jobs (a JobTable: ``partition``, ``nodes``, ``idle_node_W``).
    state : object
        The platform state (a PlatformState).
    chain : object
        The power chain (a PowerChain).
    """
    p = system.partitions[int(jobs.partition[j])]
    tbl = state.alloc.shared[p.first_node]
    if p_node_W is not None:
        idle = float(jobs.idle_node_W[p.first_node])
        tbl.dyn_W[j] = float(jobs.nodes[j]) * max(float(p_node_W) - idle, 0.0)
    charge_tenants(tbl, nodes, now, state, jobs.idle_node_W, p.node.max_W, chain)
