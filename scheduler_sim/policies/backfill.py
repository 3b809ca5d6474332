"""Backfill strategies: given the queue in policy order, which jobs start now, and which reservations are made.

* ``none``: start jobs in order until the first that does not fit (it blocks the queue).
* ``easy``: EASY backfilling (Lifka 1995): the first job that does not fit gets a reservation at the *shadow time*
  computed from the running jobs' requested times; a later job may start now if it fits and either ends (by its
  requested time) by the shadow time or uses only the *extra* nodes left at the shadow time.
* ``easy-bestfit``: EASY where backfill candidates are tried by how well they fill the free nodes (most nodes
  first, then order) instead of queue order.
* ``conservative``: every queued job, in order, gets the earliest reservation that does not delay any earlier
  reservation (Mu'alem and Feitelson, IEEE TPDS 12(6), 2001); a job whose reservation is *now* starts.
* ``firstfit``: no reservations: every job that fits, in order (may starve large jobs; a baseline).

Reservations use node counts and requested times only. When a facility power cap is active, a start must also fit
the power headroom (the platform refuses it otherwise); the cap may therefore delay a reservation, which is
reported as time the cap was binding.

References
----------
D. Lifka, "The ANL/IBM SP scheduling system", JSSPP 1995, LNCS 949.
A. Mu'alem, D. Feitelson, "Utilization, predictability, workloads, and user runtime estimates in scheduling the
IBM SP2 with backfilling", IEEE TPDS 12(6), 2001.
"""

from __future__ import annotations

import math

import numpy as np

from .base import SchedulerView

__all__ = ["BACKFILLS", "shadow_time", "backfill_none", "backfill_easy", "backfill_conservative",
           "backfill_firstfit", "Profile"]


def shadow_time(view: SchedulerView, need: int, free: int, started: list[int] = ()) -> tuple[float, int]:
    """Earliest time the head job can start, from running jobs' REQUESTED times, and the spare nodes then.

    Parameters
    ----------
    view : SchedulerView
        The platform now.
    need : int
        Nodes the head job needs (> ``free``).
    free : int
        Nodes free now (after the jobs already chosen in this pass).
    started : list of int
        Jobs chosen to start now in this pass; they are expected to end at now + estimate.

    Returns
    -------
    shadow_s : float
        Reservation time of the head job [s] (``inf`` if the running jobs never free enough nodes, e.g. while
        nodes are down).
    extra : int
        Nodes free at ``shadow_s`` beyond what the head job needs.
    """
    ends = [(view.expected_end_s(j), j) for j in view.running]
    ends += [(view.now_s + float(view.estimate_s[j]), j) for j in started]
    ends.sort()
    avail = free
    for t_end, j in ends:
        avail += int(view.nodes[j])
        if avail >= need:
            return t_end, avail - need
    return math.inf, 0


def backfill_none(view: SchedulerView, order: list[int], reservations: dict, previous: dict | None = None) -> list[int]:
    """Start jobs in ``order`` until the first that does not fit."""
    free, head = view.free_nodes, view.power_headroom_W
    out: list[int] = []
    for j in order:
        if not view.fits(j, free, head):
            break
        out.append(j)
        free -= int(view.nodes[j])
        head -= _pw(view, j)
    return out


def backfill_firstfit(view: SchedulerView, order: list[int], reservations: dict, previous: dict | None = None) -> list[int]:
    """Start every job that fits, in ``order`` (no reservation)."""
    free, head = view.free_nodes, view.power_headroom_W
    out: list[int] = []
    for j in order:
        if view.fits(j, free, head):
            out.append(j)
            free -= int(view.nodes[j])
            head -= _pw(view, j)
            if free == 0:
                break
    return out


def _pw(view: SchedulerView, j: int) -> float:
    return 0.0 if view.power_W is None else float(view.power_W[j])


def backfill_easy(view: SchedulerView, order: list[int], reservations: dict, previous: dict | None = None,
                  best_fit: bool = False) -> list[int]:
    """EASY backfill (see module docstring); records the head job's reservation in ``reservations``."""
    free, head = view.free_nodes, view.power_headroom_W
    out: list[int] = []
    i = 0
    while i < len(order) and view.fits(order[i], free, head):
        free -= int(view.nodes[order[i]])
        head -= _pw(view, order[i])
        out.append(order[i])
        i += 1
    if i >= len(order):
        return out
    h = order[i]
    shadow, extra = shadow_time(view, int(view.nodes[h]), free, out)
    if int(view.nodes[h]) <= free:  # blocked by the power cap only: it may start as soon as power allows
        shadow, extra = view.now_s, free - int(view.nodes[h])
    reservations[h] = shadow
    if free == 0:
        return out
    cands = order[i + 1:]
    if best_fit:
        cands = sorted(cands, key=lambda j: -int(view.nodes[j]))  # stable: ties keep policy order
    now = view.now_s
    for j in cands:
        n = int(view.nodes[j])
        if not view.fits(j, free, head):
            continue
        if now + float(view.estimate_s[j]) <= shadow:
            pass
        elif n <= extra:
            extra -= n
        else:
            continue
        out.append(j)
        free -= n
        head -= _pw(view, j)
        if free == 0:
            break
    return out


class Profile:
    """Free-node profile over time: a step function ``free(t)`` from now on (conservative backfilling).

    ``times`` (k,) are increasing breakpoints starting at now; ``free[i]`` holds on ``[times[i], times[i+1])`` and
    the last value to infinity. A release at or before now (a running job past its estimate) is placed just after
    now: its nodes are not free yet. Both are numpy arrays, so a search or a reservation costs O(k) in C, not in
    Python (a pass over Q queued jobs is O(Q k)).
    """

    def __init__(self, now: float, free_now: int, releases: list[tuple[float, int]]) -> None:
        soon = math.nextafter(now, math.inf)
        if releases:
            rt = np.maximum(np.array([t for t, _ in releases], dtype=float), soon)
            rn = np.array([n for _, n in releases], dtype=np.int64)
            # a job already past its estimate (no walltime limit) ends "any moment": its nodes are not free now
            ut, inv = np.unique(rt, return_inverse=True)
            add = np.bincount(inv, weights=rn, minlength=ut.size).astype(np.int64)
            self.times = np.concatenate(([float(now)], ut))
            self.free = np.concatenate(([int(free_now)], int(free_now) + np.cumsum(add)))
        else:
            self.times = np.array([float(now)])
            self.free = np.array([int(free_now)], dtype=np.int64)

    def earliest(self, need: int, duration: float) -> float:
        """Earliest breakpoint ``t`` with ``free >= need`` on all of ``[t, t + duration)`` (``inf`` if none).

        The window of a start at breakpoint ``i`` covers the steps ``i .. j-1`` with ``j`` the first breakpoint at or
        after ``t_i + duration`` (at least step ``i`` itself); it is feasible when none of them is short of nodes,
        checked for every ``i`` at once with a prefix count of the short steps.
        """
        short = self.free < need
        if not short.any():
            return float(self.times[0])
        k = self.times.size
        count = np.concatenate(([0], np.cumsum(short)))
        j = np.maximum(np.searchsorted(self.times, self.times + duration, side="left"), np.arange(1, k + 1))
        ok = np.flatnonzero(count[j] == count[:k])
        return float(self.times[ok[0]]) if ok.size else math.inf

    def reserve(self, start: float, duration: float, n: int) -> None:
        """Subtract ``n`` nodes on ``[start, start + duration)``, adding breakpoints as needed."""
        end = start + duration
        self._split(start)
        if math.isfinite(end):
            self._split(end)
        self.free[(self.times >= start) & (self.times < end)] -= n

    def _split(self, t: float) -> None:
        """Insert a breakpoint at ``t`` (carrying the free value of the step that contains it)."""
        times = self.times
        if t <= times[0]:
            return
        lo = int(np.searchsorted(times, t, side="left"))
        if lo < times.size and times[lo] == t:
            return
        self.times = np.insert(times, lo, t)
        self.free = np.insert(self.free, lo, self.free[lo - 1])


def backfill_conservative(view: SchedulerView, order: list[int], reservations: dict,
                          previous: dict | None = None) -> list[int]:
    """Conservative backfill: a reservation for every queued job; start those reserved for now.

    Jobs that already hold a reservation are re-placed first, in order of that reservation (then policy order),
    each at the earliest feasible time (schedule compression, Mu'alem and Feitelson 2001): moving earlier jobs
    earlier never takes capacity inside a later job's old window, so no reservation is ever delayed as long as
    running jobs end no later than their requested times (they are killed there). New jobs follow, in policy order.
    """
    now = view.now_s
    previous = previous or {}
    prof = Profile(now, view.free_nodes, [(view.expected_end_s(j), int(view.nodes[j])) for j in view.running])
    head = view.power_headroom_W
    rank = {j: k for k, j in enumerate(order)}
    held = sorted((j for j in order if j in previous), key=lambda j: (previous[j], rank[j]))
    fresh = [j for j in order if j not in previous]
    out: list[int] = []
    for j in held + fresh:
        n = int(view.nodes[j])
        est = float(view.estimate_s[j])
        t = prof.earliest(n, est)
        reservations[j] = t
        if math.isfinite(t):
            prof.reserve(t, est, n)
        if t == now and _pw(view, j) <= head:  # reserved for now; a power cap may still hold it back
            out.append(j)
            head -= _pw(view, j)
    out.sort(key=lambda j: rank[j])
    return out


#: name -> (function, description)
BACKFILLS = {
    "none": (backfill_none, "no backfill: the first job that does not fit blocks the queue"),
    "easy": (backfill_easy, "EASY: one reservation (queue head); later jobs backfill if they do not delay it"),
    "easy-bestfit": (lambda v, o, r, p=None: backfill_easy(v, o, r, best_fit=True),
                     "EASY with best-fit candidate choice (largest job that fits first)"),
    "conservative": (backfill_conservative, "conservative: a reservation for every queued job; none is delayed"),
    "firstfit": (backfill_firstfit, "no reservation: any job that fits, in order (can starve large jobs)"),
}
