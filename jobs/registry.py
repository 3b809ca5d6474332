"""One small registry type for everything hpctwin looks up by name: policies, trace loaders, plants, workload families.

A :class:`Registry` maps a lower-case name to an object (a factory, a class, a path) and a one-line description, in
registration order. Registering a name twice is an error unless ``replace=True``; looking up an unknown name raises
a ``KeyError`` (a ``LookupError``) that lists the known names and the closest ones. ``hpctwin list`` prints each
registry's :meth:`Registry.catalogue`.

It lives in :mod:`jobs`, the lowest package, so that every layer (policies in scheduler_sim, loaders in dataloaders,
plants in cooling_fmu, families in jobs) registers through the same type without importing upwards.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["Registry", "RegistryEntry", "UnknownNameError"]

T = TypeVar("T")


class UnknownNameError(KeyError):
    """A name no registry entry has; the message lists the known names (and the closest ones)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class RegistryEntry(Generic[T]):
    """One registered object.

    Attributes
    ----------
    name : str
        Lower-case name used in configs and on the command line.
    obj : T
        What the name stands for (factory, class, path ...).
    description : str
        One line for ``hpctwin list``.
    """

    name: str
    obj: T
    description: str


class Registry(Generic[T]):
    """Name -> object + description, in registration order.

    Parameters
    ----------
    kind : str
        What the entries are, for messages (``"policy"``, ``"trace loader"``, ``"plant"``, ``"workload family"``).
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, RegistryEntry[T]] = {}

    def register(self, name: str, obj: T, description: str, *, replace: bool = False) -> T:
        """Register ``obj`` under ``name`` (lower-cased).

        Parameters
        ----------
        name : str
            The name.
        obj : T
            The object.
        description : str
            One line for ``hpctwin list``.
        replace : bool
            Allow replacing an entry of the same name.

        Returns
        -------
        T
            ``obj``, so that ``register`` can end a decorator.

        Raises
        ------
        ValueError
            If the name is empty or already registered (and ``replace`` is False).
        """
        key = name.strip().lower()
        if not key:
            raise ValueError(f"a {self.kind} needs a non-empty name")
        if key in self._entries and not replace:
            raise ValueError(f"{self.kind} name {name!r} is already registered")
        self._entries[key] = RegistryEntry(key, obj, description)
        return obj

    def unregister(self, name: str) -> None:
        """Remove ``name`` if registered (no error otherwise).

        Parameters
        ----------
        name : str
            The name.
        """
        self._entries.pop(name.strip().lower(), None)

    def entry(self, name: str) -> RegistryEntry[T]:
        """The entry of ``name`` (any case).

        Parameters
        ----------
        name : str
            The name.

        Returns
        -------
        RegistryEntry
            Name, object and description.

        Raises
        ------
        UnknownNameError
            If no entry has that name; the message lists the known names and the closest ones.
        """
        key = str(name).strip().lower()
        if key not in self._entries:
            close = difflib.get_close_matches(key, list(self._entries), n=2, cutoff=0.6)
            hint = f" (did you mean {' or '.join(close)}?)" if close else ""
            raise UnknownNameError(f"unknown {self.kind} {name!r}{hint}; known: {', '.join(self._entries) or 'none'}")
        return self._entries[key]

    def __getitem__(self, name: str) -> T:
        return self.entry(name).obj

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.strip().lower() in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def names(self) -> list[str]:
        """The registered names, in registration order.

        Returns
        -------
        list of str
            Lower-case names.
        """
        return list(self._entries)

    def catalogue(self) -> list[tuple[str, str]]:
        """``(name, description)`` of every entry, in registration order (what ``hpctwin list`` prints).

        Returns
        -------
        list of (str, str)
            Names and descriptions.
        """
        return [(e.name, e.description) for e in self._entries.values()]
