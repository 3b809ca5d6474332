"""Queue orders: which queued job comes first. An order is combined with a backfill strategy into a policy.

References
----------
Slurm multifactor priority plugin, https://slurm.schedmd.com/priority_multifactor.html (factors in [0, 1], weighted
sum; classic fair-share factor F = 2^(-U/S) with decayed usage U and shares S, both normalised).
"""

from __future__ import annotations

import abc
import math
from typing import ClassVar

import numpy as np

from .base import SchedulerView

__all__ = ["QueueOrder", "FCFSOrder", "SJFOrder", "LJFOrder", "LargestFirstOrder", "MultiFactorPriority", "ORDERS"]


class QueueOrder(abc.ABC):
    """Sorts the queue; stateless unless stated (the multi-factor order keeps fair-share usage)."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""

    @abc.abstractmethod
    def order(self, view: SchedulerView) -> list[int]:
        """Return ``view.queue`` sorted by this order (ties broken by arrival order)."""


class FCFSOrder(QueueOrder):
    """First come, first served: arrival order (submit time, then trace order)."""

    name = "fcfs"
    description = "first come, first served (arrival order)"

    def order(self, view: SchedulerView) -> list[int]:
        """Arrival order, i.e. ``view.queue`` unchanged."""
        return list(view.queue)


def _sorted(view: SchedulerView, key: np.ndarray) -> list[int]:
    q = np.asarray(view.queue, dtype=np.int64)
    if q.size == 0:
        return []
    pos = np.arange(q.size)  # arrival rank breaks ties
    return q[np.lexsort((pos, key))].tolist()  # Python ints, one C loop


class SJFOrder(QueueOrder):
    """Shortest job first, by requested (estimated) run time."""

    name = "sjf"
    description = "shortest requested run time first"

    def order(self, view: SchedulerView) -> list[int]:
        """Queue sorted by ascending estimate."""
        return _sorted(view, view.estimate_s[np.asarray(view.queue, dtype=np.int64)])


class LJFOrder(QueueOrder):
    """Longest job first, by requested (estimated) run time."""

    name = "ljf"
    description = "longest requested run time first"

    def order(self, view: SchedulerView) -> list[int]:
        """Queue sorted by descending estimate."""
        return _sorted(view, -view.estimate_s[np.asarray(view.queue, dtype=np.int64)])


class LargestFirstOrder(QueueOrder):
    """Largest job (most nodes) first."""

    name = "largest"
    description = "largest node count first"

    def order(self, view: SchedulerView) -> list[int]:
        """Queue sorted by descending node count."""
        return _sorted(view, -view.nodes[np.asarray(view.queue, dtype=np.int64)].astype(float))


class MultiFactorPriority(QueueOrder):
    """Slurm-style multi-factor priority: ``P = w_age A + w_size S + w_fs F + w_qos Q`` (each factor in [0, 1]).

    * age ``A = min(1, (now - submit) / max_age_s)``;
    * size ``S = nodes / n_nodes`` (favours large jobs, as Slurm's default ``PriorityFavorSmall=NO``);
    * fair-share ``F = 2^(-U/S)`` with ``U`` the account's share of the decayed usage of all accounts and ``S`` its
      normalised share (equal shares); usage is node-seconds, decayed with half-life ``half_life_s``
      (Slurm ``PriorityDecayHalfLife``, default 7 days) and accrued while jobs run;
    * QoS ``Q = qos_weight[queue] / max(qos_weight)`` (1 for every queue when no weights are given).

    Parameters
    ----------
    w_age : float
        Weight of the age factor (>= 0); Slurm's defaults are site-specific, these defaults give age and fair-share
        equal say.
    w_size : float
        Weight of the size factor (>= 0).
    w_fairshare : float
        Weight of the fair-share factor (>= 0).
    w_qos : float
        Weight of the QoS factor (>= 0).
    max_age_s : float
        Age at which the age factor saturates [s] (Slurm ``PriorityMaxAge``, default 7 days).
    half_life_s : float
        Usage decay half-life [s].
    qos_weights : dict[str, float] | None
        Weight per queue name (mapped to the platform's queue codes by :meth:`bind`).
    account_bonus : dict[str, float] | None
        Additive priority per account name (used by incentive schemes, e.g. energy points); default none.

    Raises
    ------
    ValueError
        If a weight is negative or not finite, or ``max_age_s`` or ``half_life_s`` is not > 0.
    """

    name = "priority"
    description = "multi-factor priority: age, size, fair-share (decayed usage per account), QoS (Slurm-style)"

    def __init__(self, w_age: float = 1000.0, w_size: float = 100.0, w_fairshare: float = 1000.0,
                 w_qos: float = 0.0, max_age_s: float = 7 * 86400.0, half_life_s: float = 7 * 86400.0,
                 qos_weights: dict[str, float] | None = None, account_bonus: dict[str, float] | None = None) -> None:
        for nm, v in (("w_age", w_age), ("w_size", w_size), ("w_fairshare", w_fairshare), ("w_qos", w_qos)):
            if not (v >= 0 and math.isfinite(v)):
                raise ValueError(f"{nm} must be a finite number >= 0, got {v}")
        if not (max_age_s > 0 and half_life_s > 0):
            raise ValueError("max_age_s and half_life_s must be > 0")
        self.w_age, self.w_size, self.w_fs, self.w_qos = w_age, w_size, w_fairshare, w_qos
        self.max_age_s, self.half_life_s = max_age_s, half_life_s
        self.qos_weights = dict(qos_weights or {})
        self.account_bonus_by_name = dict(account_bonus or {})
        self.qos_weight: dict[int, float] = {}
        self.account_bonus: dict[int, float] = {}
        self.bonus_accounts_absent: list[str] = []
        self._usage = np.zeros(0)  # decayed node-seconds per account code
        self._t_usage: float | None = None
        self._charged: dict[int, float] = {}  # job index -> time up to which its usage is charged

    def bind(self, queue_names: list[str], account_names: list[str]) -> None:
        """Map QoS weights and account bonuses given by name onto the platform's integer codes.

        Parameters
        ----------
        queue_names : list[str]
            The platform's queue names; code ``i`` is ``queue_names[i]``.
        account_names : list[str]
            The platform's account names; code ``i`` is ``account_names[i]``.

        Raises
        ------
        ValueError
            If a named QoS queue does not occur in the trace (a typo must not pass silently). Accounts with a bonus
            but no job are listed in :attr:`bonus_accounts_absent`.
        """
        qi = {n: i for i, n in enumerate(queue_names)}
        ai = {n: i for i, n in enumerate(account_names)}
        for n in self.qos_weights:
            if n not in qi:
                raise ValueError(f"priority.qos_weights: queue {n!r} does not occur in the trace")
        self.qos_weight = {qi[n]: w for n, w in self.qos_weights.items()}
        # accounts with a bonus but no job in this run simply have nothing to boost (e.g. points earned earlier)
        self.account_bonus = {ai[n]: b for n, b in self.account_bonus_by_name.items() if n in ai}
        self.bonus_accounts_absent = sorted(n for n in self.account_bonus_by_name if n not in ai)

    def _grow(self, n_acc: int) -> None:
        if self._usage.size < n_acc:
            self._usage = np.concatenate([self._usage, np.zeros(n_acc - self._usage.size)])

    def _decay_to(self, now: float) -> None:
        if self._t_usage is None:
            self._t_usage = now
        elif now > self._t_usage:
            self._usage *= 2.0 ** (-(now - self._t_usage) / self.half_life_s)
            self._t_usage = now

    def _charge(self, view: SchedulerView, jobs: list[int], now: float) -> None:
        """Add the node-seconds each job ran since it was last charged (or started) up to ``now``."""
        for j in jobs:
            since = max(float(view.start_s[j]), self._charged.get(j, -math.inf))
            if now > since:
                self._usage[view.account_id[j]] += float(view.nodes[j]) * (now - since)
            self._charged[j] = now

    def _accrue(self, view: SchedulerView) -> None:
        """Decay usage to now and charge running jobs (usage accrues while jobs run, as in Slurm)."""
        acc = view.account_id
        if acc is None:
            return
        self._grow(int(acc.max()) + 1 if acc.size else 1)
        self._decay_to(view.now_s)
        self._charge(view, list(view.running), view.now_s)

    def job_ended(self, job: int, view: SchedulerView) -> None:
        """Charge a job's last stretch of usage when it ends (called by the platform)."""
        if view.account_id is None:
            return
        self._grow(int(view.account_id.max()) + 1)
        self._decay_to(view.now_s)
        self._charge(view, [job], view.now_s)
        self._charged.pop(job, None)

    def priority(self, view: SchedulerView) -> np.ndarray:
        """Priority of each queued job (shape (len(queue),)), higher first."""
        self._accrue(view)
        q = np.asarray(view.queue, dtype=np.int64)
        age = np.minimum(1.0, (view.now_s - view.submit_s[q]) / self.max_age_s)
        size = view.nodes[q] / max(view.n_nodes, 1)
        p = self.w_age * age + self.w_size * size
        if view.account_id is not None and self.w_fs:
            acc = view.account_id[q]
            total = self._usage.sum()
            n_acc = max(int(np.count_nonzero(self._usage)), len(np.unique(acc)), 1)
            U = self._usage[acc] / total if total > 0 else np.zeros(q.size)
            S = 1.0 / n_acc
            p = p + self.w_fs * 2.0 ** (-U / S)
        if self.w_qos and view.queue_id is not None and self.qos_weight:
            wmax = max(self.qos_weight.values()) or 1.0
            p = p + self.w_qos * np.array([self.qos_weight.get(int(x), 0.0) for x in view.queue_id[q]]) / wmax
        if self.account_bonus and view.account_id is not None:
            p = p + np.array([self.account_bonus.get(int(a), 0.0) for a in view.account_id[q]])
        return p

    def order(self, view: SchedulerView) -> list[int]:
        """Queue sorted by descending priority (ties: arrival order)."""
        if not view.queue:
            return []
        return _sorted(view, -self.priority(view))


#: name -> order class.
ORDERS: dict[str, type[QueueOrder]] = {c.name: c for c in (FCFSOrder, SJFOrder, LJFOrder, LargestFirstOrder,
                                                             MultiFactorPriority)}
