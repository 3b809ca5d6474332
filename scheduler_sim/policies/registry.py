"""Registry of scheduling policies: a queue order x a backfill strategy, or replay.

Names used in configs and on the command line: ``--policy`` is an order (``fcfs``, ``sjf``, ``ljf``, ``largest``,
``priority``) or ``replay``; ``--backfill`` is a strategy (``none``, ``easy``, ``easy-bestfit``,
``conservative``, ``firstfit``). The shorthands ``easy`` and ``conservative`` as a policy mean FCFS with that
backfill.
"""

from __future__ import annotations

import difflib
import importlib.metadata
from collections.abc import Callable

from jobs.registry import Registry

from .backfill import BACKFILLS
from .base import BasePolicy, SchedulerView
from .order import ORDERS, QueueOrder
from .replay import Replay

__all__ = ["OrderedPolicy", "POLICIES", "make_policy", "policy_catalogue", "register_policy", "PolicyFactory",
           "ENTRY_POINT_GROUP", "load_entry_point_policies"]

#: policy shorthands -> (order, backfill)
SHORTHANDS = {"easy": ("fcfs", "easy"), "conservative": ("fcfs", "conservative")}

#: A factory of a registered policy: ``factory(backfill, **params) -> BasePolicy``.
PolicyFactory = Callable[..., BasePolicy]

#: Entry point group of out-of-tree policies (``[project.entry-points."hpctwin.policies"]`` in their pyproject.toml).
ENTRY_POINT_GROUP = "hpctwin.policies"

#: Policies registered by :func:`register_policy` (name -> factory, one-line description), in registration order.
POLICIES: Registry[PolicyFactory] = Registry("policy")


def register_policy(name: str, description: str) -> Callable[[PolicyFactory], PolicyFactory]:
    """Class or function decorator: make ``factory`` the policy ``name`` of :func:`make_policy`.

    The factory is called as ``factory(backfill, **params)`` (``backfill`` is None when not given) and raises
    ValueError for a backfill or parameters it cannot take. A layer above the policies (e.g. the twin driver,
    :mod:`scheduler_sim.app.twin`) registers its policy this way, so this package never imports upwards.

    Parameters
    ----------
    name : str
        Name used in configs and on the command line (lower case).
    description : str
        One line for ``hpctwin list policies``.

    Returns
    -------
    callable
        The decorator; it returns the factory unchanged.

    Notes
    -----
    The decorator raises ValueError if ``name`` is already an order, a shorthand or a registered policy.
    """
    key = name.lower()

    def deco(factory: PolicyFactory) -> PolicyFactory:
        if key in ORDERS or key in SHORTHANDS or key in POLICIES:
            raise ValueError(f"policy name {name!r} is already registered")
        return POLICIES.register(key, factory, description)

    return deco


def _replay(backfill: str | None = None, **params) -> BasePolicy:
    if backfill not in (None, "none"):
        raise ValueError("replay starts jobs at their recorded times; it takes no backfill")
    return Replay()


register_policy("replay", Replay.description)(_replay)


class OrderedPolicy(BasePolicy):
    """A queue order combined with a backfill strategy (see :mod:`.order` and :mod:`.backfill`).

    ``max_jobs`` (attribute, default None: the whole queue) bounds the jobs a pass considers to the first
    ``max_jobs`` of the order, as Slurm bounds its scheduling passes (``SchedulerParameters=default_queue_depth``,
    default 100 jobs, and ``bf_max_job_test``, default 500, for backfill: https://slurm.schedmd.com/slurm.conf.html):
    a job further down the order neither starts nor is reserved in that pass. The twin sets it on its rollouts'
    copies (``[scheduler.twin] rollout_queue_limit``).
    """

    kills_at_walltime = True
    max_jobs: int | None = None

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

    def wants_job_ended(self) -> bool:
        """Whether job ends matter: the order takes them (fair-share usage) or a subclass overrides :meth:`job_ended`.

        Returns
        -------
        bool
            True when :meth:`job_ended` does anything.
        """
        return type(self).job_ended is not OrderedPolicy.job_ended or hasattr(self.order, "job_ended")

    def schedule(self, view: SchedulerView) -> list[int]:
        """Order the queue, then apply the backfill strategy; reservations are kept in :attr:`reservations`."""
        previous = self.reservations
        self.reservations = {}
        order = self.order.order(view)
        if self.max_jobs is not None and len(order) > self.max_jobs:
            order = order[:self.max_jobs]
        return self._fn(view, order, self.reservations, previous)


def make_policy(name: str, backfill: str | None = None, **params) -> BasePolicy:
    """Instantiate a policy.

    Parameters
    ----------
    name : str
        A registered policy (``replay``; ``twin`` once :mod:`scheduler_sim.app.twin` is imported), an order name
        (:data:`ORDERS`) or a shorthand (``easy``, ``conservative``).
    backfill : str | None
        Backfill strategy; None means the shorthand's, or ``none`` for a plain order.
    **params
        Order parameters (e.g. multi-factor weights for ``priority``).

    Returns
    -------
    BasePolicy
        The policy, ready to bind to a run.

    Raises
    ------
    ValueError
        If a name is unknown (the message lists the known names) or replay is combined with a backfill.
    """
    key = name.lower()
    if key not in POLICIES and key not in SHORTHANDS and key not in ORDERS:
        load_entry_point_policies()
    if key in POLICIES:
        return POLICIES[key](backfill, **params)
    if key in SHORTHANDS:
        order_name, bf = SHORTHANDS[key]
        if backfill not in (None, bf):
            raise ValueError(f"policy {name!r} already means {order_name} + {bf} backfill; use --policy "
                             f"{order_name} --backfill {backfill}")
        backfill = bf
    elif key in ORDERS:
        order_name = key
    else:
        known = [*POLICIES, *ORDERS, *SHORTHANDS]
        close = [k for k in difflib.get_close_matches(key, known, n=2, cutoff=0.6) if k != key]
        hint = f" (did you mean {' or '.join(close)}?)" if close else ""
        raise ValueError(f"unknown policy {name!r}{hint}; known policies: {', '.join(known)}")
    return OrderedPolicy(ORDERS[order_name](**params), backfill or "none")


def load_entry_point_policies() -> list[str]:
    """Register every policy of the :data:`ENTRY_POINT_GROUP` entry points not registered yet.

    Returns
    -------
    list of str
        The names registered by this call.

    Raises
    ------
    ValueError
        If an entry point cannot be loaded (the message names it and its target), or its name is an order or a
        shorthand.
    """
    new = []
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        key = ep.name.lower()
        if key in POLICIES:
            continue
        try:
            factory = ep.load()
        except Exception as exc:  # noqa: BLE001 - any import error of a plug-in becomes one clear message
            raise ValueError(f"policy entry point {ep.name!r} = {ep.value!r} ({ENTRY_POINT_GROUP}) cannot be "
                             f"loaded: {type(exc).__name__}: {exc}") from exc
        doc = getattr(factory, "description", "") or (factory.__doc__ or "").strip().partition("\n")[0]
        register_policy(key, doc or f"out-of-tree policy ({ep.value})")(factory)
        new.append(key)
    return new


def policy_catalogue() -> list[tuple[str, str]]:
    """(name, one-line description) of every order, backfill strategy and shorthand, for ``hpctwin list``."""
    load_entry_point_policies()
    rows = POLICIES.catalogue()
    rows += [(n, c.description) for n, c in ORDERS.items()]
    rows += [(f"--backfill {n}", d) for n, (_, d) in BACKFILLS.items()]
    rows += [(n, f"shorthand for --policy {o} --backfill {b}") for n, (o, b) in SHORTHANDS.items()]
    return rows
