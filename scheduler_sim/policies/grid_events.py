"""Grid obligations on top of any scheduling policy: demand-response events and a facility ramp-rate limit (#15).

:class:`GridDynamicsPolicy` wraps a policy (FCFS, EASY, priority ...) and filters the jobs it wants to start:

* **Demand response.** An event ``[start, end)`` with a facility power cap becomes a step of the platform's power
  budget (:func:`merge_event_caps`), so during the event the platform itself refuses a start that would push
  predicted facility power over the cap. Before the event the wrapper *looks ahead*: a job may start only if,
  with the jobs already running (each expected to end at start + requested time) and those started earlier in
  the same pass, predicted facility power stays under every event cap it would overlap
  (:meth:`SchedulerView.availability` gives the budget left at every future breakpoint). Flexible work is thus
  delayed, not paused: a running job is never stopped, so an event is infeasible when the work that cannot be
  delayed (idle nodes, a co-located serving partition, jobs started before the event was known, cooling) alone
  exceeds the cap; the event report (:mod:`scheduler_sim.analysis.grid_dynamics`) says so.
* **Ramp-rate limit.** Starts are staggered by a token bucket: the facility may add at most ``r * window`` of
  predicted power in any window (``r`` in W/s, window 60 s for a limit quoted in MW/min); tokens refill at
  ``r``. A job whose own step exceeds one window's allowance starts only on a full bucket and is counted as a
  start-ramp violation (a job cannot be split). The wrapper asks the platform for a pass when enough tokens
  are back (:meth:`next_pass_s`).

Jobs held back keep their place in the queue. A job held for an event is left out of the inner policy's
planning for that pass (it re-plans without it, so it holds no reservation then); a job held by the ramp limit
keeps its order: the jobs after it wait too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from .base import BasePolicy, SchedulerView

__all__ = ["GridEvent", "GridDynamicsPolicy", "merge_event_caps"]


@dataclass(frozen=True)
class GridEvent:
    """A demand-response event: facility power at most ``cap_W`` on ``[start_s, end_s)``.

    Attributes
    ----------
    start_s, end_s : float
        Simulation times [s], ``end_s > start_s``.
    cap_W : float
        Facility power cap during the event [W] (> 0).
    target_fraction : float
        The requested reduction as a fraction of the reference power (NaN when the event gave a cap in W).
    reference_W : float
        Reference power the fraction applies to [W] (NaN when the event gave a cap in W).
    label : str
        Name of the event in reports.

    Raises
    ------
    ValueError
        If the window or the cap is not valid.
    """

    start_s: float
    end_s: float
    cap_W: float
    target_fraction: float = float("nan")
    reference_W: float = float("nan")
    label: str = ""

    def __post_init__(self) -> None:
        """Check the window and the cap."""
        if not (self.end_s > self.start_s):
            raise ValueError(f"grid event {self.label!r}: end {self.end_s} s must be after start {self.start_s} s")
        if not (self.cap_W > 0):
            raise ValueError(f"grid event {self.label!r}: cap must be > 0 W, got {self.cap_W!r}")


def merge_event_caps(base: list[tuple[float, float]], events: list[GridEvent], t0_s: float,
                     need_power: bool = False) -> list[tuple[float, float]]:
    """The platform's power budget schedule with the events' caps folded in.

    At every breakpoint (a base step, an event start or end) the budget is the lowest of the base budget in force
    and the caps of the events active then.

    Parameters
    ----------
    base : list[tuple[float, float]]
        ``(t_s, cap_W)`` steps: the configured budget schedule (``cap_W`` from ``t_s`` on; before the first step: none).
    events : list[GridEvent]
        Demand-response events.
    t0_s : float
        Window start [s]; with ``need_power`` an unlimited budget step is put there so that the platform gives
        policies every job's power (the ramp limit needs it).
    need_power : bool
        Whether the schedule must be non-empty.

    Returns
    -------
    list of (t_s, cap_W)
        Sorted by time; ``inf`` where no budget applies; equal consecutive values merged.
    """
    base = sorted((float(t), float(w)) for t, w in base)
    times = sorted({t for t, _ in base} | {e.start_s for e in events} | {e.end_s for e in events}
                   | ({float(t0_s)} if need_power or events else set()))
    out: list[tuple[float, float]] = []
    for t in times:
        cap = math.inf
        for tb, w in base:
            if tb <= t:
                cap = w
        for e in events:
            if e.start_s <= t < e.end_s:
                cap = min(cap, e.cap_W)
        if out and out[-1][1] == cap:
            continue
        if not out and cap == math.inf and not (need_power or events):
            continue
        out.append((t, cap))
    return out


class GridDynamicsPolicy(BasePolicy):
    """Wrap ``inner`` with demand-response look-ahead and a ramp-rate limit on starts (module docstring).

    Parameters
    ----------
    inner : BasePolicy
        The scheduling policy whose decisions are filtered.
    events : list[GridEvent]
        Demand-response events (their caps must also be in the platform's budget: :func:`merge_event_caps`).
    ramp_W_per_s : float | None
        Ramp-rate limit on the power added by starts [W/s]; None = no limit.
    ramp_window_s : float
        Window of the limit [s] (60 s for a limit in MW/min): the bucket holds ``ramp_W_per_s * ramp_window_s``.

    Raises
    ------
    ValueError
        If ``ramp_W_per_s`` or ``ramp_window_s`` is not > 0.
    """

    name = "grid-dynamics"
    description = "demand-response look-ahead and ramp-rate limit on starts, around another policy"

    def __init__(self, inner: BasePolicy, events: list[GridEvent] = (), ramp_W_per_s: float | None = None,
                 ramp_window_s: float = 60.0) -> None:
        if ramp_W_per_s is not None and not (ramp_W_per_s > 0):
            raise ValueError(f"ramp limit must be > 0 W/s, got {ramp_W_per_s!r}")
        if not (ramp_window_s > 0):
            raise ValueError(f"ramp window must be > 0 s, got {ramp_window_s!r}")
        self.inner = inner
        self.events = sorted(events, key=lambda e: e.start_s)
        self.ramp = ramp_W_per_s
        self.window = float(ramp_window_s)
        self.name = inner.name
        self.description = inner.description
        self.kills_at_walltime = inner.kills_at_walltime
        self.reservations: dict[int, float] = {}
        self._tokens = math.inf if ramp_W_per_s is None else ramp_W_per_s * ramp_window_s
        self._t_tokens = -math.inf
        self._next: float | None = None
        self.held_dr: set[int] = set()  # jobs held back at least once by an event's look-ahead
        self.held_ramp: set[int] = set()  # jobs held back at least once by the ramp limit
        self.start_ramp_violations: list[tuple[float, int, float]] = []  # (t, job, step W) larger than a window

    # ------------------------------------------------------------ delegation
    def __getattr__(self, item):
        """Attributes the platform reads from policies (e.g. ``order``) come from the inner policy."""
        if item == "inner":
            raise AttributeError(item)
        return getattr(self.inner, item)

    def bind(self, queue_names: list[str], account_names: list[str]) -> None:
        """Forward to the inner policy."""
        self.inner.bind(queue_names, account_names)

    def job_ended(self, job: int, view: SchedulerView) -> None:
        """Forward to the inner policy."""
        self.inner.job_ended(job, view)

    def wakeup_time(self, job: int, view: SchedulerView) -> float | None:
        """Forward to the inner policy."""
        return self.inner.wakeup_time(job, view)

    def wants_wakeup_time(self) -> bool:
        """Forward to the inner policy.

        Returns
        -------
        bool
            Whether the inner policy's :meth:`wakeup_time` can ask for anything.
        """
        return self.inner.wants_wakeup_time()

    def next_pass_s(self, view: SchedulerView) -> float | None:
        """When the ramp bucket will hold enough for the first job held back by it (None: nothing held)."""
        nxt, self._next = self._next, None
        return nxt

    def run_info(self) -> dict:
        """The inner policy's entries plus the counts of held-back jobs and start-ramp violations.

        Returns
        -------
        dict
            ``grid_jobs_delayed_by_events``, ``grid_jobs_delayed_by_ramp``, ``grid_start_ramp_violations``.
        """
        info = dict(self.inner.run_info())
        info["grid_jobs_delayed_by_events"] = len(self.held_dr)
        info["grid_jobs_delayed_by_ramp"] = len(self.held_ramp)
        info["grid_start_ramp_violations"] = len(self.start_ramp_violations)
        return info

    # ------------------------------------------------------------ the filter
    def _refill(self, now: float) -> None:
        if self.ramp is None:
            return
        full = self.ramp * self.window
        if math.isfinite(self._t_tokens):
            self._tokens = min(full, self._tokens + self.ramp * (now - self._t_tokens))
        self._t_tokens = now

    def schedule(self, view: SchedulerView) -> list[int]:
        """The inner policy's decisions, re-planned without the jobs an event or the ramp limit holds back.

        The inner policy plans on the view; the first decision that would break an upcoming event's cap is held
        back and the inner policy plans again on the queue without it (so a later job, e.g. a short one that
        ends before the event, may take its nodes), until every decision fits. The ramp limit then keeps the
        longest prefix of the decisions the bucket can pay for (first come, first served).

        Parameters
        ----------
        view : SchedulerView
            The platform now (with ``power_W``: the runner gives the platform a budget schedule).

        Returns
        -------
        list of int
            Jobs to start now, in order.
        """
        decisions = self.inner.schedule(view)
        self.reservations = getattr(self.inner, "reservations", {})
        if not decisions or view.power_W is None:
            return decisions
        now = view.now_s
        self._refill(now)
        upcoming = [e for e in self.events if e.end_s > now]
        if upcoming:
            times, _, head0 = view.availability()
            nxt = np.r_[times[1:], math.inf]
            in_event = np.zeros(times.size, dtype=bool)
            for e in upcoming:  # budget steps [times[i], times[i+1]) that overlap an event
                in_event |= (times < e.end_s) & (nxt > e.start_s)
            in_event &= times > now  # the platform itself checks the budget in force now
            held: set[int] = set()
            for _ in range(len(view.queue) + 1):
                bad = None
                head = head0.copy()
                for j in decisions:
                    p = float(view.power_W[j])
                    sel = in_event & (times < now + float(view.estimate_s[j]))
                    if sel.any() and p > float(head[sel].min()) + 1e-6:
                        bad = j
                        break
                    head[times < now + float(view.estimate_s[j])] -= p
                if bad is None:
                    break
                held.add(bad)
                self.held_dr.add(bad)
                sub = replace(view, queue=tuple(j for j in view.queue if j not in held))
                decisions = self.inner.schedule(sub) if sub.queue else []
                self.reservations = getattr(self.inner, "reservations", {})
        if self.ramp is None:
            return decisions
        full = self.ramp * self.window
        keep: list[int] = []
        for j in decisions:
            p = float(view.power_W[j])
            if p > full:  # larger than one window's allowance: only on a full bucket, and it is a violation
                if self._tokens < full * (1 - 1e-9):
                    self._ask(now, full - self._tokens)
                    break
                self.start_ramp_violations.append((now, j, p))
            elif p > self._tokens + 1e-9 * full:
                self._ask(now, p - self._tokens)
                break
            self._tokens -= p
            keep.append(j)
        self.held_ramp.update(decisions[len(keep):])
        return keep

    def _ask(self, now: float, missing_W: float) -> None:
        t = now + max(missing_W, 0.0) / self.ramp
        t = max(t, math.nextafter(now, math.inf))
        if self._next is None or t < self._next:
            self._next = t
