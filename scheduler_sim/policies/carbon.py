"""Carbon-aware and price-aware scheduling: delay flexible jobs into low-carbon / low-price hours within a slack.

Rule (one scheduling pass at time ``now``): a queued job ``j`` that fits the free nodes now is *held* when

* it is flexible: its requested time is at most ``max_estimate_s`` and ``now < r_j + slack_j``, where ``r_j`` is
  the first pass at which the job fitted the free nodes (its *ready* time: from then on any delay is the
  policy's) and ``slack_j`` comes from its queue / QoS name, else the default; and
* a later start ``t`` in ``(now, r_j + slack_j]`` (``t`` a signal step boundary) gives a mean signal ``s_later``
  over the job's requested run ``[t, t + estimate_j)`` lower than the mean ``s_now`` for a start now by more than
  ``min_gain``: the gain is ``(s_now - s_later) / |s_now|`` (so a price of -20.5 against -20 is a 2.5 % gain at
  negative prices as 19.5 against 20 is at positive ones), and where ``|s_now|`` is below ``near_zero`` (a
  relative gain means nothing near zero) the test is absolute, ``s_now - s_later > min_gain_abs``; and
* both runs, now and later, lie wholly in steps the series gives (known data). The constant fallback, in a gap or
  after the series ends, is a placeholder and not a forecast: it is never a reason to hold a job.

The slack is counted from the ready time, not the submission: on a saturated machine (Theta's 2022 jobs wait
~2 days on average under EASY) a slack counted from submission is spent in the queue before the job could ever
start, and nothing would be shifted. So the delay the policy itself adds to a job is at most its slack.

Held jobs are taken out of the FCFS order for this pass; the rest goes through the chosen backfill (EASY by
default), which makes its reservation for the first job that cannot start and backfills only jobs that do not delay
it, so holding a job never breaks a reservation (it only frees resources). After each pass the policy asks the
platform for a pass at the best start of a held job (:meth:`next_pass_s`); the best start lies within the slack
and at it the job is no longer held, so no job is held beyond ``r_j + slack_j``; after that it is an ordinary FCFS
job (it may still wait for nodes, as under EASY).

The signal is known in advance over the slack (perfect foresight of the day-ahead shape: real carbon forecasts
have errors of ~5-15 % a day ahead; docs/grid.md). The signal's mean over a run is exact
(:meth:`power.grid.StepSignal.mean_over` arithmetic on the cumulative integral).
"""

from __future__ import annotations

import math

import numpy as np

from power.grid import StepSignal

from .backfill import BACKFILLS
from .base import BasePolicy, SchedulerView
from .order import ORDERS
from .registry import register_policy

__all__ = ["CarbonAwarePolicy", "NEAR_ZERO_FILE_UNITS", "MIN_GAIN_ABS_FILE_UNITS"]

#: Default ``near_zero`` in the signal's file unit (10 USD/MWh, 10 gCO2eq/kWh): below it a relative gain is
#: meaningless (ASSUMPTION: a tenth of a typical PJM price or of a fossil-free grid's intensity).
NEAR_ZERO_FILE_UNITS = 10.0
#: Default ``min_gain_abs`` in the file unit: the default 5 % relative gain at ``near_zero`` (continuous there).
MIN_GAIN_ABS_FILE_UNITS = 0.5


class CarbonAwarePolicy(BasePolicy):
    """FCFS + a backfill, holding flexible jobs for a lower signal (rule: module docstring).

    Parameters
    ----------
    signal : StepSignal
        Carbon intensity [kg/J] or price [currency/J] in simulation time.
    backfill : str
        Backfill strategy (default ``easy``).
    slack_s : float
        Default slack [s] (>= 0).
    slack_by_queue : dict[str, float] | None
        Slack per queue (QoS) name [s].
    max_estimate_s : float
        Jobs with a longer requested time are never held [s].
    min_gain : float
        Relative reduction of the run-mean signal needed to hold a job, in [0, 1).
    kind : str
        ``"carbon"`` or ``"price"`` (the policy's name).
    near_zero : float | None
        Below this ``|s_now|`` [SI per J] the gain is tested in absolute terms (default 10 USD/MWh for price,
        10 gCO2eq/kWh for carbon; ``scheduler.carbon.near_zero_*``).
    min_gain_abs : float | None
        Absolute reduction of the run-mean signal needed to hold a job where ``|s_now| < near_zero`` [SI per J]
        (default 0.5 USD/MWh or 0.5 gCO2eq/kWh, the 5 % relative gain at ``near_zero``).

    Raises
    ------
    ValueError
        If a parameter is out of range or the backfill is unknown.
    """

    kills_at_walltime = True
    #: Rounds of hold-and-rerun per scheduling pass.
    MAX_ROUNDS = 4

    def __init__(self, signal: StepSignal, backfill: str = "easy", *, slack_s: float = 43200.0,
                 slack_by_queue: dict[str, float] | None = None, max_estimate_s: float = 86400.0,
                 min_gain: float = 0.05, kind: str = "carbon", near_zero: float | None = None,
                 min_gain_abs: float | None = None) -> None:
        if backfill not in BACKFILLS:
            raise ValueError(f"unknown backfill {backfill!r}; known: {', '.join(BACKFILLS)}")
        if not (slack_s >= 0 and max_estimate_s > 0 and 0 <= min_gain < 1):
            raise ValueError(f"need slack_s >= 0, max_estimate_s > 0, 0 <= min_gain < 1; got {slack_s}, "
                             f"{max_estimate_s}, {min_gain}")
        to_si = 1.0 / 3.6e9 if kind == "price" else 1e-3 / 3.6e6  # USD/MWh or g/kWh -> per J
        self.near_zero = float(NEAR_ZERO_FILE_UNITS * to_si if near_zero is None else near_zero)
        self.min_gain_abs = float(MIN_GAIN_ABS_FILE_UNITS * to_si if min_gain_abs is None else min_gain_abs)
        if not (self.near_zero >= 0 and self.min_gain_abs >= 0):
            raise ValueError(f"need near_zero >= 0 and min_gain_abs >= 0; got {self.near_zero}, {self.min_gain_abs}")
        self.signal = signal
        self.backfill = backfill
        self._fn = BACKFILLS[backfill][0]
        self._order = ORDERS["fcfs"]()
        self.slack_s = float(slack_s)
        self.slack_by_queue = {k: float(v) for k, v in (slack_by_queue or {}).items()}
        self.max_estimate_s = float(max_estimate_s)
        self.min_gain = float(min_gain)
        self.name = f"{kind}-aware+{backfill}"
        self.description = f"FCFS + {backfill}; flexible jobs held for lower {kind} within their slack"
        self.reservations: dict[int, float] = {}
        self._slack_code: dict[int, float] = {}
        self.held_passes = 0
        self.ready_s: dict[int, float] = {}  # job -> first pass at which it fitted the free nodes
        self.held_jobs: set[int] = set()  # jobs held at least once
        self._targets: dict[int, float] = {}  # held job -> best start
        self._requested: set[float] = set()
        self.last_held: set[int] = set()
        # cumulative integral of the signal at its edges (fallback outside / in gaps): F(t) is exact by linear
        # interpolation between edges, since the signal is constant there
        e = signal.edges_s
        v = np.where(np.isfinite(signal.values), signal.values, signal.fallback)
        self._e = e
        self._F = np.concatenate(([0.0], np.cumsum(v * np.diff(e)))) if e.size > 1 else np.zeros(e.size)
        # cumulative length of the steps with a known value (finite, inside the edges): a run [a, b) is known data
        # when K(b) - K(a) = b - a
        known = np.isfinite(signal.values).astype(float)
        self._K = np.concatenate(([0.0], np.cumsum(known * np.diff(e)))) if e.size > 1 else np.zeros(e.size)

    def _known(self, a: np.ndarray, d: float) -> np.ndarray:
        """Whether each run ``[a, a + d)`` lies wholly in steps the series gives (not the fallback)."""
        e, K = self._e, self._K
        a = np.asarray(a, dtype=float)
        if e.size < 2:
            return np.zeros(a.shape, dtype=bool)
        inside = (a >= e[0]) & (a + d <= e[-1])
        cover = np.interp(a + d, e, K) - np.interp(a, e, K)
        return inside & (cover >= d * (1.0 - 1e-12) - 1e-9)

    def bind(self, queue_names: list[str], account_names: list[str]) -> None:
        """Map queue codes (``view.queue_id``) to their slack."""
        self._slack_code = {i: self.slack_by_queue[q] for i, q in enumerate(queue_names) if q in self.slack_by_queue}

    def _F_at(self, t: np.ndarray) -> np.ndarray:
        """Integral of the signal from ``edges[0]`` to ``t`` (fallback slope outside the edges)."""
        e, F, fb = self._e, self._F, self.signal.fallback
        t = np.asarray(t, dtype=float)
        inside = np.interp(t, e, F)
        return np.where(t < e[0], (t - e[0]) * fb, np.where(t > e[-1], F[-1] + (t - e[-1]) * fb, inside))

    def slack_of(self, job: int, view: SchedulerView) -> float:
        """Slack of ``job`` [s]: its queue's, else the default."""
        if view.queue_id is not None and self._slack_code:
            return self._slack_code.get(int(view.queue_id[job]), self.slack_s)
        return self.slack_s

    def deadline_s(self, job: int, view: SchedulerView, now: float) -> float:
        """Latest start the policy may hold ``job`` to [s]: its ready time (``now`` if not yet ready) + slack."""
        return self.ready_s.get(job, now) + self.slack_of(job, view)

    def best_start(self, job: int, view: SchedulerView, now: float) -> tuple[float, float, float]:
        """(best start, run-mean signal at it, run-mean signal for a start at ``now``) for ``job``.

        Candidates are ``now`` and every signal step boundary in ``(now, ready + slack]`` whose run lies in known
        data (module docstring: the fallback is not a forecast); the run-mean signal of a start ``t`` is the exact
        mean over ``[t, t + estimate)``. Ties keep the earliest candidate. When the run now is not in known data
        either, the best start is ``now`` (nothing is known to gain).
        """
        est = float(view.estimate_s[job])
        deadline = self.deadline_s(job, view, now)
        e = self._e
        later = e[(e > now) & (e <= deadline)]
        cand = np.concatenate(([now], later))
        d = max(est, 1e-9)
        mean = (self._F_at(cand + d) - self._F_at(cand)) / d
        known = self._known(cand, d)
        if not known[0]:
            return float(now), float(mean[0]), float(mean[0])
        i = int(np.argmin(np.where(known, mean, np.inf)))
        return float(cand[i]), float(mean[i]), float(mean[0])

    def gain_enough(self, here: float, best: float) -> bool:
        """Whether a run-mean signal ``best`` later beats ``here`` now by the rule's margin (module docstring).

        Parameters
        ----------
        here : float
            Run-mean signal for a start now [SI per J].
        best : float
            Run-mean signal at the best later start [SI per J].

        Returns
        -------
        bool
            ``(here - best) / |here| > min_gain``, or ``here - best > min_gain_abs`` where ``|here| < near_zero``.
        """
        drop = here - best
        if abs(here) < self.near_zero:
            return drop > self.min_gain_abs
        return drop > self.min_gain * abs(here)

    def holds(self, job: int, view: SchedulerView) -> bool:
        """Whether the rule holds ``job`` back at ``view.now_s`` (module docstring)."""
        now = view.now_s
        if float(view.estimate_s[job]) > self.max_estimate_s:
            return False
        if not now < self.deadline_s(job, view, now):
            return False
        t, best, here = self.best_start(job, view, now)
        return t > now and self.gain_enough(here, best)

    def next_pass_s(self, view: SchedulerView) -> float | None:
        """The earliest best start of a held job not yet asked for (one per pass; the next pass asks the next)."""
        now_s = view.now_s
        for t in sorted(set(self._targets.values())):
            if t > now_s and t not in self._requested and math.isfinite(t):
                self._requested.add(t)
                return t
        return None

    def schedule(self, view: SchedulerView) -> list[int]:
        """The backfill's decision on the FCFS order without the held jobs (reservations in :attr:`reservations`).

        The backfill first runs on the whole order; the jobs it would start that the rule holds are taken out and
        it runs again (a job it then starts instead may be held in turn; at most :attr:`MAX_ROUNDS` rounds, after
        which the last decision stands). Only jobs the backfill would start now become ready.
        """
        previous = self.reservations
        now = view.now_s
        order = self._order.order(view)
        held: set[int] = set()
        self._targets = {}
        for _ in range(self.MAX_ROUNDS):
            res: dict[int, float] = {}
            out = self._fn(view, [j for j in order if j not in held], res, previous)
            new = set()
            for j in out:
                self.ready_s.setdefault(j, now)
                if self.holds(j, view):
                    new.add(j)
                    self._targets[j] = self.best_start(j, view, now)[0]
            if not new:
                break
            held |= new
        self.reservations = res
        if held:
            self.held_passes += 1
            self.held_jobs |= held
        self.last_held = held - set(out)
        return out

    def job_ended(self, job: int, view: SchedulerView) -> None:
        """Forget a finished job's ready time (a requeued job becomes ready anew)."""
        self.ready_s.pop(job, None)

    def run_info(self) -> dict:
        """Scheduling passes in which at least one job was held, and how many jobs were ever held."""
        return {"carbon_policy_passes_holding": self.held_passes, "carbon_policy_jobs_held": len(self.held_jobs)}


def _factory(kind: str):
    def make(backfill: str | None = None, *, signal: StepSignal | None = None, **params) -> CarbonAwarePolicy:
        if signal is None:
            raise ValueError(f"policy '{kind}-aware' needs a {kind} signal: give a [grid] section (grid.{kind} or "
                             f"its constant fallback) or --{kind} FILE")
        return CarbonAwarePolicy(signal, backfill if backfill not in (None, "") else "easy", kind=kind, **params)
    return make


register_policy("carbon-aware", "FCFS + EASY; flexible jobs held for low-carbon hours within a slack "
                "([scheduler.carbon]; needs [grid])")(_factory("carbon"))
register_policy("price-aware", "FCFS + EASY; flexible jobs held for low-price hours within a slack "
                "([scheduler.carbon]; needs [grid] price)")(_factory("price"))
