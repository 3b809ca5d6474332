"""Registry of scheduling policies by name (configs and ``--policy`` use these names)."""

from __future__ import annotations

from .base import BasePolicy
from .easy import EASY
from .fcfs import FCFS
from .replay import Replay

__all__ = ["POLICIES", "make_policy"]

#: name -> policy class, in the order ``hpctwin list policies`` prints them.
POLICIES: dict[str, type[BasePolicy]] = {cls.name: cls for cls in (Replay, FCFS, EASY)}


def make_policy(name: str) -> BasePolicy:
    """Instantiate the policy registered under ``name``.

    Raises
    ------
    ValueError
        If ``name`` is unknown; the message lists the known names.
    """
    try:
        return POLICIES[name.lower()]()
    except KeyError:
        raise ValueError(f"unknown policy {name!r}; known policies: {', '.join(POLICIES)}") from None
