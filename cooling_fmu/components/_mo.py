"""Modelica text helpers shared by every component fragment (literals only; no physics here)."""

from __future__ import annotations

__all__ = ["lit", "real"]


def real(x: float) -> str:
    """An exact Modelica real literal (``repr`` of the float: round-trips bit for bit).

    Parameters
    ----------
    x : float
        Value.

    Returns
    -------
    str
        The literal.
    """
    return repr(float(x))


def lit(x: float) -> str:
    """A Modelica literal in parentheses, so a negative constant never follows a binary operator.

    Parameters
    ----------
    x : float
        Value.

    Returns
    -------
    str
        ``"(<literal>)"``.
    """
    return f"({real(x)})"
