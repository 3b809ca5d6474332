"""Scheduling policies behind one decision interface (:class:`BasePolicy`).

Queue orders x backfill strategies, and replay; registered by name with :func:`register_policy`.
"""

from .base import BasePolicy, PolicyError, SchedulerView
from .registry import OrderedPolicy, make_policy, policy_catalogue, register_policy
from . import carbon  # noqa: F401,E402 - registers carbon-aware and price-aware

__all__ = ["BasePolicy", "PolicyError", "SchedulerView", "OrderedPolicy", "make_policy",
           "register_policy", "policy_catalogue"]
