"""Registry of scheduling policies: a queue order x a backfill strategy, or replay.

Names used in configs and on the command line: ``--policy`` is an order (``fcfs``, ``sjf``, ``ljf``, ``largest``,
``priority``) or ``replay``; ``--backfill`` is a strategy (``none``, ``easy``, ``easy-bestfit``,
``conservative``, ``firstfit``). The shorthands ``easy`` and ``conservative`` as a policy mean FCFS with that
backfill.
"""

from __future__ import annotations

import difflib

from .backfill import BACKFILLS
from .base import BasePolicy, SchedulerView
from .order import ORDERS, QueueOrder
from .replay import Replay

__all__ = ["OrderedPolicy", "make_policy", "policy_catalogue"]

#: policy shorthands -> (order, backfill)
SHORTHANDS = {"easy": ("fcfs", "easy"), "conservative": ("fcfs", "conservative")}


class OrderedPolicy(BasePolicy):
    """A queue order combined with a backfill strategy (see :mod:`.order` and :mod:`.backfill`)."""

    kills_at_walltime = True

    def __init__(self, order: QueueOrder, backfill: str) -> None:
        if backfill not in BACKFILLS:
            close = difflib.get_close_matches(str(backfill).lower(), list(BACKFILLS), n=2, cutoff=0.6)
            hint = f" (did you mean {' or '.join(close)}?)" if close else ""
            raise ValueError(f"unknown backfill {backfill!r}{hint}; known: {', '.join(BACKFILLS)}")
        self.order = order
        self.backfill = backfill
        self._fn = BACKFILLS[backfill][0]
        self.name = order.name if backfill == "none" else f"{order.name}+{backfill}"
        self.description = f"{order.description}; backfill {backfill}"
        self.reservations: dict[int, float] = {}

    def bind(self, queue_names: list[str], account_names: list[str]) -> None:
        """Pass the queue / account names to the order (multi-factor priority maps names to codes)."""
        if hasattr(self.order, "bind"):
            self.order.bind(queue_names, account_names)

    def job_ended(self, job: int, view: SchedulerView) -> None:
        """Forward job ends to the order (fair-share usage)."""
        if hasattr(self.order, "job_ended"):
            self.order.job_ended(job, view)

    def schedule(self, view: SchedulerView) -> list[int]:
        """Order the queue, then apply the backfill strategy; reservations are kept in :attr:`reservations`."""
        previous = self.reservations
        self.reservations = {}
        return self._fn(view, self.order.order(view), self.reservations, previous)


def make_policy(name: str, backfill: str | None = None, **params) -> BasePolicy:
    """Instantiate a policy.

    Parameters
    ----------
    name : str
        ``replay``, an order name (:data:`ORDERS`) or a shorthand (``easy``, ``conservative``).
    backfill : str or None
        Backfill strategy; None means the shorthand's, or ``none`` for a plain order.
    **params
        Order parameters (e.g. multi-factor weights for ``priority``).

    Raises
    ------
    ValueError
        If a name is unknown (the message lists the known names) or replay is combined with a backfill.
    """
    key = name.lower()
    if key == "twin":
        if backfill not in (None, "none"):
            raise ValueError("twin chooses among its pool's policies; it takes no backfill (see [scheduler.twin])")
        from ..twin import TwinPolicy
        return TwinPolicy(priority_params=params or None)
    if key == "replay":
        if backfill not in (None, "none"):
            raise ValueError("replay starts jobs at their recorded times; it takes no backfill")
        return Replay()
    if key in SHORTHANDS:
        order_name, bf = SHORTHANDS[key]
        if backfill not in (None, bf):
            raise ValueError(f"policy {name!r} already means {order_name} + {bf} backfill; use --policy "
                             f"{order_name} --backfill {backfill}")
        backfill = bf
    elif key in ORDERS:
        order_name = key
    else:
        known = ["replay", "twin", *ORDERS, *SHORTHANDS]
        close = [k for k in difflib.get_close_matches(key, known, n=2, cutoff=0.6) if k != key]
        hint = f" (did you mean {' or '.join(close)}?)" if close else ""
        raise ValueError(f"unknown policy {name!r}{hint}; known policies: {', '.join(known)}")
    return OrderedPolicy(ORDERS[order_name](**params), backfill or "none")


def policy_catalogue() -> list[tuple[str, str]]:
    """(name, one-line description) of every order, backfill strategy and shorthand, for ``hpctwin list``."""
    rows = [("replay", Replay.description), ("twin", "twin in the loop: rolls out a pool of policies over a horizon "
                                                     "every period and applies the best ([scheduler.twin])")]
    rows += [(n, c.description) for n, c in ORDERS.items()]
    rows += [(f"--backfill {n}", d) for n, (_, d) in BACKFILLS.items()]
    rows += [(n, f"shorthand for --policy {o} --backfill {b}") for n, (o, b) in SHORTHANDS.items()]
    return rows
