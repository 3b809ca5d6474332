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

Reservations use node counts, requested times and every known future availability (:class:`Profile`, built from
:meth:`SchedulerView.availability`): running jobs' requested ends (ties included), downtime and drain ends, future
downtimes, and steps of the facility power budget. When a budget is in force a start must also fit the power
headroom at its start (the platform refuses it otherwise); reservations account for it, so no job started now can
push a reservation past the power a budget step frees.

References
----------
D. Lifka, "The ANL/IBM SP scheduling system", JSSPP 1995, LNCS 949.
A. Mu'alem, D. Feitelson, "Utilization, predictability, workloads, and user runtime estimates in scheduling the
IBM SP2 with backfilling", IEEE TPDS 12(6), 2001.
"""

from __future__ import annotations

import bisect
import itertools
import math

import numpy as np

from .base import SchedulerView

__all__ = ["BACKFILLS", "shadow_time", "backfill_none", "backfill_easy", "backfill_conservative",
           "backfill_firstfit", "Profile"]


def shadow_time(view: SchedulerView, need: int, started: list[int] = ()) -> tuple[float, int]:
    """EASY's shadow time: the earliest time ``need`` nodes are free, and the *extra* nodes free then.

    Every known future availability counts (:meth:`SchedulerView.availability`): running jobs' requested ends
    (every job whose end is at or before the shadow time, ties included, whatever their ids), downtime and drain
    ends. Jobs in ``started`` (chosen to start now in this pass) hold their nodes until now + estimate.

    Parameters
    ----------
    view : SchedulerView
        The platform as the policy sees it.
    need : int
        Nodes the queue's head asks for.
    started : list[int]
        Jobs chosen to start now in this pass (not yet in the view's running set).

    Returns
    -------
    shadow_s : float
        First breakpoint at which at least ``need`` nodes are free [s] (``inf`` if never).
    extra : int
        Nodes free at ``shadow_s`` beyond ``need`` (0 when ``shadow_s`` is ``inf``).
    """
    prof = Profile.from_view(view)
    for j in started:
        prof.reserve(view.now_s, float(view.estimate_s[j]), int(view.nodes[j]), 0.0)
    for t, f in zip(prof.times, prof.free):
        if f >= need:
            return t, f - int(need)
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
    """EASY backfill (see module docstring); records the head job's reservation in ``reservations``.

    Jobs start in order while each can start now; the first that cannot (the head) is reserved at its earliest
    feasible time in the known availability profile (:class:`Profile`): its shadow time, which counts every
    running job ending at or before it (ties included), downtime and drain ends and power-budget steps. A later
    job then starts now only if it fits in the profile with the head's reservation in it, so it can never delay
    the head. With a profile that only grows (no future downtime or budget cut) this is exactly Lifka's rule:
    the job ends by the shadow time or uses only the extra nodes.
    """
    now = view.now_s
    if not order:
        return []
    out: list[int] = []
    i = 0
    if view.availability_grows:
        # The profile only grows (jobs only end) and every start-now reservation covers [now, now + d): free
        # nodes stay non-decreasing in time, so a start now fits iff it fits in the nodes free now. The profile
        # is built (with the same reservations, in the same order) only when a job does not fit; the job arrays
        # are read only then (a pass that starts every queued job costs no numpy call).
        free, vn = view.free_nodes, view.nodes
        while i < len(order) and int(vn[order[i]]) <= free:
            free -= int(vn[order[i]])
            out.append(order[i])
            i += 1
        if i >= len(order):
            return out
    idx = np.asarray(order, dtype=np.int64)
    nodes = view.nodes[idx].tolist()
    est = view.estimate_s[idx].astype(float).tolist()
    power = view.power_W[idx].astype(float).tolist() if view.power_W is not None else [0.0] * len(order)
    if view.availability_grows:
        prof = Profile.from_view(view)
        for k in range(i):
            prof.reserve(now, est[k], nodes[k], power[k])
    else:
        prof = Profile.from_view(view)
        while i < len(order) and prof.fits_now(nodes[i], power[i], est[i]):
            prof.reserve(now, est[i], nodes[i], power[i])
            out.append(order[i])
            i += 1
        if i >= len(order):
            return out
    shadow = prof.earliest(nodes[i], power[i], est[i])
    reservations[order[i]] = shadow
    if math.isfinite(shadow):
        prof.reserve(shadow, est[i], nodes[i], power[i])
    cands = list(range(i + 1, len(order)))
    if best_fit:
        cands.sort(key=lambda k: -nodes[k])  # stable: ties keep policy order
    free, head = int(prof.free[0]), float(prof.head[0])
    for k in cands:
        if free == 0:
            break
        n, p = nodes[k], power[k]
        if n > free or p > head or not prof.fits_now(n, p, est[k]):
            continue
        prof.reserve(now, est[k], n, p)
        out.append(order[k])
        free, head = int(prof.free[0]), float(prof.head[0])
    return out


class Profile:
    """Free nodes and power headroom over time, with the reservations made in this pass (a step function).

    ``times`` (k,) are increasing breakpoints starting at now; ``free[i]`` nodes and ``head[i]`` W of facility
    power budget are left on ``[times[i], times[i+1])`` (the last values to infinity); ``starts[i]`` marks the
    breakpoints at which a reservation begins. It starts from the platform's known future availability
    (:meth:`SchedulerView.availability`) and every reservation subtracts its nodes and power over its window.

    Feasibility of a start at ``t`` for ``n`` nodes, ``p`` W and duration ``d``: ``free >= n`` on all of
    ``[t, t + d)``, ``head >= p`` at ``t``, and ``head >= p`` at every reservation start inside ``(t, t + d)``. The
    power budget is checked only when a job starts (the platform never stops a running job for a budget step), so
    a reservation must leave the budget of every later-starting reservation intact, and nothing more.

    The steps are kept in Python lists (k is the number of distinct running-job ends and known changes, a few
    hundred at most): a start-now check is a bisection and a slice minimum, a reservation a list insertion;
    :meth:`earliest` searches every breakpoint at once with numpy (O(k) in C).
    """

    def __init__(self, times, free, head) -> None:
        self.times: list[float] = np.asarray(times, dtype=float).tolist()  # Python floats
        self.free: list[int] = np.asarray(free, dtype=np.int64).tolist()  # Python ints
        self.head: list[float] = np.asarray(head, dtype=float).tolist()
        self.starts: list[bool] = [False] * len(self.times)
        self.budget = any(math.isfinite(h) for h in self.head)  # a power budget now or later
        self._later_starts = False  # a reservation starts after now (its power budget must be kept)
        self._min_free: list[int] | None = None  # prefix minima of free (start-now checks), rebuilt lazily

    @classmethod
    def from_view(cls, view: SchedulerView) -> "Profile":
        """The profile of a view's known availability, with no reservation yet."""
        t, f, h = view.availability()
        return cls(t, f, h)

    def earliest(self, need: int, power: float, duration: float) -> float:
        """Earliest breakpoint ``t`` at which a start is feasible (class docstring); ``inf`` if none.

        The window of a start at breakpoint ``i`` covers the steps ``i .. j-1`` with ``j`` the first breakpoint at or
        after ``t_i + duration`` (at least step ``i`` itself); it is checked for every ``i`` at once with prefix
        counts of the short steps.
        """
        times = np.array(self.times)
        free = np.array(self.free)
        k = times.size
        nxt = np.arange(1, k + 1)
        j = np.maximum(np.searchsorted(times, times + duration, side="left"), nxt)
        short = np.concatenate(([0], np.cumsum(free < need)))
        ok = short[j] == short[:k]
        if self.budget:
            head = np.array(self.head)
            ok &= head >= power
            bad = np.concatenate(([0], np.cumsum(np.array(self.starts) & (head < power))))
            ok &= bad[j] == bad[nxt]  # no reservation start in (t_i, t_i + duration) left short of power
        idx = np.flatnonzero(ok)
        return float(times[idx[0]]) if idx.size else math.inf

    def fits_now(self, need: int, power: float, duration: float) -> bool:
        """Whether a start now is feasible (the same as ``earliest(...) == now``, without numpy)."""
        free, head = self.free, self.head
        if need > free[0] or not power <= head[0]:
            return False
        if self._min_free is None:
            self._min_free = list(itertools.accumulate(free, min))
        j = max(bisect.bisect_left(self.times, self.times[0] + duration), 1)
        if self._min_free[j - 1] < need:
            return False
        if self.budget and self._later_starts:
            starts = self.starts
            return all(head[i] >= power for i in range(1, j) if starts[i])
        return True

    def reserve(self, start: float, duration: float, n: int, power: float = 0.0) -> None:
        """Subtract ``n`` nodes and ``power`` W on ``[start, start + duration)`` and mark ``start`` as a start."""
        end = start + duration
        i0 = self._split(start)
        i1 = self._split(end) if math.isfinite(end) else len(self.times)
        free, head = self.free, self.head
        for i in range(i0, i1):
            free[i] -= n
            head[i] -= power
        self.starts[i0] = True
        self._later_starts = self._later_starts or i0 > 0
        self._min_free = None

    def _split(self, t: float) -> int:
        """Index of the breakpoint at ``t``, inserted if needed (carrying the values of the step containing it)."""
        times = self.times
        if t <= times[0]:
            return 0
        lo = bisect.bisect_left(times, t)
        if lo < len(times) and times[lo] == t:
            return lo
        times.insert(lo, t)
        self.free.insert(lo, self.free[lo - 1])
        self.head.insert(lo, self.head[lo - 1])
        self.starts.insert(lo, False)
        return lo


def backfill_conservative(view: SchedulerView, order: list[int], reservations: dict,
                          previous: dict | None = None) -> list[int]:
    """Conservative backfill: a reservation for every queued job; start those reserved for now.

    Jobs that already hold a reservation are re-placed first, in order of that reservation (then policy order),
    each at the earliest feasible time in the known availability profile (:class:`Profile`: running jobs'
    requested ends, downtime and drain ends, future downtimes, power-budget steps) (schedule compression, Mu'alem
    and Feitelson 2001): moving earlier jobs earlier never takes capacity inside a later job's old window, so no
    reservation is ever delayed as long as running jobs end no later than their requested times (they are killed
    there). New jobs follow, in policy order.
    """
    now = view.now_s
    previous = previous or {}
    prof = Profile.from_view(view)
    rank = {j: k for k, j in enumerate(order)}
    held = sorted((j for j in order if j in previous), key=lambda j: (previous[j], rank[j]))
    fresh = [j for j in order if j not in previous]
    out: list[int] = []
    for j in held + fresh:
        n, p, est = int(view.nodes[j]), _pw(view, j), float(view.estimate_s[j])
        t = prof.earliest(n, p, est)
        reservations[j] = t
        if math.isfinite(t):
            prof.reserve(t, est, n, p)
        if t == now:
            out.append(j)
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
