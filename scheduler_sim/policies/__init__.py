"""Scheduling policies behind one decision interface (:class:`BasePolicy`)."""

from .base import BasePolicy, PolicyError, SchedulerView
from .registry import POLICIES, make_policy

__all__ = ["BasePolicy", "PolicyError", "SchedulerView", "POLICIES", "make_policy"]
