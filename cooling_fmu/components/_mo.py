"""Modelica text helpers shared by every component fragment (literals only; no physics here)."""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["Fragment", "lit", "real", "reals"]


class Fragment(NamedTuple):
    """A Modelica fragment for the one flat model: its declarations and its equations, each line indented two
    spaces; unpacks as ``decl, eq``.

    Attributes
    ----------
    decl : list of str
        ``Real ...;`` declarations.
    eq : list of str
        Equations.
    """

    decl: list[str]
    eq: list[str]


def reals(tag: str, **units: str) -> list[str]:
    """Declarations ``Real <name>_<tag>(unit="<unit>");``, one per keyword, in the order given.

    Parameters
    ----------
    tag : str
        Suffix of every name.
    **units : str
        Name -> Modelica unit string.

    Returns
    -------
    list of str
        The declarations (indented two spaces).
    """
    return [f'  Real {name}_{tag}(unit="{unit}");' for name, unit in units.items()]


def real(x: float) -> str:
    """An exact Modelica real literal (``repr`` of the float: round-trips bit for bit).

    Parameters
    ----------
    x : float
        Value, written with every digit ``repr`` gives.

    Returns
    -------
    str
        The literal, e.g. ``"0.1"``, ``"-2.5e-05"``.
    """
    return repr(float(x))


def lit(x: float) -> str:
    """A Modelica literal in parentheses, so a negative constant never follows a binary operator.

    Parameters
    ----------
    x : float
        Value (any sign).

    Returns
    -------
    str
        ``"(" + real(x) + ")"``.
    """
    return f"({real(x)})"
