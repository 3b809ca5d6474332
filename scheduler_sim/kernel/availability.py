"""Known future availability of the batch pool: free nodes and facility power headroom from now on.

A backfill that makes reservations (EASY, EASY best-fit, conservative) needs to know when nodes and power will be
available if no new job starts. Everything the platform knows in advance counts:

* running jobs end at their *expected* end (start + requested time; a job past it, with no limit, "any moment
  now", i.e. just after now); a job on a node that a known maintenance (non-drain downtime) takes down later ends
  there (it is killed);
* known downtimes: nodes down now come back at the window's end (a *drain* end included: a drained node that
  is still running a job is free only when both the job and the drain are over); nodes that a future window takes
  down are unavailable on ``[start, end)``;
* the facility power budget schedule (steps of the power cap) and the power each running job gives back when it
  ends.

Node failures are *not* known in advance (their times are random): a node down for a failure is treated as down
for good (no reservation may count on its repair), and future failures are not foreseen.

The result is a step function: ``times[0] = now``; ``free[i]`` nodes are free and ``headroom[i]`` W of facility
power budget are left on ``[times[i], times[i+1])`` (the last value holds for ever).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["known_availability"]


def known_availability(now: float, owner: np.ndarray, down_count: np.ndarray, running: list[int],
                       start_s: np.ndarray, estimate_s: np.ndarray, downtimes: list[tuple], power_W: np.ndarray | None,
                       facility_W: float, cap_schedule: list[tuple[float, float]], job_nodes: np.ndarray,
                       n_free: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Free nodes and power headroom from now on, if no new job starts (module docstring).

    Parameters
    ----------
    now : float
        Current time [s].
    owner : np.ndarray
        Shape (n_nodes,), int64. Job index on each node, -1 idle, -2 reserved for a partition (never free).
    down_count : np.ndarray
        Shape (n_nodes,), int64. Number of down windows (downtimes and failures) holding each node down now.
    running : list[int]
        Running job indices.
    start_s : np.ndarray
        Shape (n_jobs,). Start of every job [s]; a running job is expected to end at its start plus its estimate
        (read for running jobs only).
    estimate_s : np.ndarray
        Shape (n_jobs,). Requested time (estimate) of every job [s].
    downtimes : list[tuple]
        ``(start_s, end_s, nodes, drain)`` of the known downtime windows (maintenance and drains) [s].
    power_W : np.ndarray | None
        Shape (n_jobs,). Facility power each job adds while it runs [W] (None: no power budget).
    facility_W : float
        Predicted facility power now [W].
    cap_schedule : list[tuple[float, float]]
        ``(t_s, cap_W)``: facility power budget from ``t_s`` on, sorted by time.
    job_nodes : np.ndarray
        Shape (n_jobs,), int64. Nodes of every job.
    n_free : int
        Nodes idle and up now.

    Returns
    -------
    times : ndarray of float64, shape (k,)
        Breakpoints [s], increasing, ``times[0] == now``.
    free : ndarray of int64, shape (k,)
        Nodes idle and up on ``[times[i], times[i+1])``; ``free[0]`` equals the nodes free now.
    headroom : ndarray of float64, shape (k,)
        Facility power budget minus predicted facility power on the same steps [W] (``inf`` without a budget).
    """
    soon = math.nextafter(now, math.inf)
    windows = [(float(a), float(b), np.asarray(nd, dtype=np.int64), bool(dr)) for a, b, nd, dr in downtimes
               if b > now]
    if not windows and (power_W is None or not cap_schedule) and not down_count.any():
        return _job_ends_only(now, soon, running, start_s, estimate_s, job_nodes, n_free)
    n_jobs = start_s.shape[0]
    end = np.full(n_jobs, np.nan)
    run = np.asarray(running, dtype=np.int64)
    if run.size:  # past its estimate: ends "any moment", not now
        end[run] = np.maximum(start_s[run] + estimate_s[run], soon)
    for a, b, nd, dr in windows:  # a maintenance that takes a running job's node kills the job there
        if not dr and a > now:
            hit = owner[nd]
            hit = np.unique(hit[hit >= 0])
            if hit.size:
                end[hit] = np.minimum(end[hit], a)
    if not windows and not down_count.any():  # nothing known but job ends: O(running jobs), no node scan
        nt = np.concatenate(([now], end[run])) if run.size else np.array([now])
        nd_ = np.concatenate(([int(n_free)], job_nodes[run])).astype(np.int64)
        return _steps(now, nt, nd_, end[run] if run.size else np.zeros(0), run, power_W, facility_W, cap_schedule)
    batch = owner != -2
    free_from = np.where(owner >= 0, end[np.maximum(owner, 0)], now)  # when each node is free of its job
    touched = np.zeros(owner.size, dtype=bool)
    active = np.zeros(owner.size, dtype=np.int64)
    for a, b, nd, _ in windows:
        touched[nd] = True
        if a <= now:
            active[nd] += 1
    touched |= down_count > 0
    failed = down_count > active  # down for a reason not announced (a failure): down for good here
    plain = batch & ~touched
    t_list = [free_from[plain]]
    d_list = [np.ones(int(plain.sum()), dtype=np.int64)]
    tn = np.flatnonzero(batch & touched & ~failed)
    if tn.size:
        edges = np.unique([now] + [x for a, b, _, _ in windows for x in (a, b) if x > now])
        of = free_from[tn]
        for s, e0 in enumerate(edges):
            e1 = edges[s + 1] if s + 1 < edges.size else math.inf
            covered = np.zeros(owner.size, dtype=bool)
            for a, b, nd, _ in windows:
                if a <= e0 < b:
                    covered[nd] = True
            up = ~covered[tn]
            begin = np.maximum(of[up], e0)
            keep = begin < e1
            t_list += [begin[keep]]
            d_list += [np.ones(int(keep.sum()), dtype=np.int64)]
            if math.isfinite(e1):
                t_list += [np.full(int(keep.sum()), e1)]
                d_list += [-np.ones(int(keep.sum()), dtype=np.int64)]
    nt = np.concatenate(t_list)
    nd_ = np.concatenate(d_list)
    return _steps(now, nt, nd_, end[run] if run.size else np.zeros(0), run, power_W, facility_W, cap_schedule)


def _job_ends_only(now: float, soon: float, running: list[int], start_s: np.ndarray, estimate_s: np.ndarray,
                   job_nodes: np.ndarray, n_free: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The common case (no downtime, no down node, no power budget): running jobs' ends only.

    Vectorised: the running jobs' expected ends (never before ``soon``) sorted, equal ends merged, the nodes they
    free added up in end order. The sums are integers, so the result does not depend on the order of equal ends.
    """
    if not running:
        return np.array([now]), np.array([int(n_free)], dtype=np.int64), np.full(1, math.inf)
    run = np.asarray(running, dtype=np.int64)
    ends = np.maximum(start_s[run] + estimate_s[run], soon)
    order = np.argsort(ends, kind="stable")
    ends = ends[order]
    first = np.flatnonzero(np.concatenate(([True], ends[1:] != ends[:-1])))
    freed = np.add.reduceat(job_nodes[run][order].astype(np.int64), first)
    times = np.concatenate(([now], ends[first]))
    free = np.concatenate(([int(n_free)], int(n_free) + np.cumsum(freed))).astype(np.int64)
    return times, free, np.full(times.size, math.inf)


def _steps(now: float, nt: np.ndarray, nd_: np.ndarray, rel_t: np.ndarray, run: np.ndarray,
           power_W: np.ndarray | None, facility_W: float, cap_schedule: list[tuple[float, float]]
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Turn node deltas ``nd_`` at times ``nt`` and job power releases at ``rel_t`` into the step function."""
    cap_t = np.array([t for t, _ in cap_schedule], dtype=float)
    cap_W = np.array([w for _, w in cap_schedule], dtype=float)
    times = np.unique(np.concatenate(([now], nt, rel_t, cap_t[cap_t > now])))
    times = times[times >= now]
    order = np.argsort(nt, kind="stable")
    cum = np.concatenate(([0], np.cumsum(nd_[order])))
    free = cum[np.searchsorted(nt[order], times, side="right")].astype(np.int64)
    if power_W is None or not cap_schedule:
        headroom = np.full(times.size, math.inf)
    else:
        ro = np.argsort(rel_t, kind="stable")
        pcum = np.concatenate(([0.0], np.cumsum(power_W[run][ro])))
        released = pcum[np.searchsorted(rel_t[ro], times, side="right")]
        ci = np.searchsorted(cap_t, times, side="right") - 1
        cap = np.where(ci >= 0, cap_W[np.maximum(ci, 0)], math.inf)
        headroom = (cap - facility_W) + released
    return times, free, headroom
