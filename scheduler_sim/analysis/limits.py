"""The CDU supply-temperature limit of a plant, its ASHRAE liquid-cooling class, and the time a run spends above it.

The limit is the plant's secondary (CDU) supply set point ``cdu.T_sec_sup_set_K`` of its description
(cooling_fmu/plants/<name>.toml): the temperature the racks are designed to receive (Frontier-like 305.15 K = 32 degC,
Theta-like 300.15 K = 27 degC). A supply counts as above it only beyond the margin
:data:`scheduler_sim.analysis.attribution.T_SUPPLY_TOLERANCE_K` (0.5 K), on interval averages.

The class: ASHRAE TC 9.9 liquid-cooling classes W17, W27, W32, W40, W45 (upper supply temperature 17, 27, 32, 40,
45 degC; W+ above 45 degC) -- source: ASHRAE TC 9.9, "Water-Cooled Servers: Common Designs, Components, and
Processes" (2019) and "Liquid Cooling Guidelines for Datacom Equipment Centers", 2nd ed. (2014), table of W classes.
A plant description that names its class (an ``ashrae_class`` attribute of the plant parameters) is taken as it is;
the shipped descriptions do not (their parameter model has no such field), so the class is derived: the lowest class
whose upper temperature is at or above the set point.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["ASHRAE_W_CLASSES", "SupplyLimit", "ashrae_class", "supply_limit", "supply_limit_of_plant",
           "hours_above"]

#: ASHRAE TC 9.9 liquid-cooling classes: (name, upper supply temperature [K]), ascending.
ASHRAE_W_CLASSES = (("W17", 290.15), ("W27", 300.15), ("W32", 305.15), ("W40", 313.15), ("W45", 318.15))


@dataclass(frozen=True)
class SupplyLimit:
    """A plant's CDU supply-temperature limit.

    Attributes
    ----------
    T_limit_K : float
        The limit [K] (the plant's secondary supply set point).
    w_class : str
        ASHRAE liquid-cooling class (W17 ... W45, W+).
    source : str
        Where the limit and the class came from, in words.
    """

    T_limit_K: float
    w_class: str
    source: str

    def describe(self) -> str:
        """One line: ``32.0 degC (W32, ...)``."""
        from .units import temperature_text

        return f"{temperature_text(self.T_limit_K, '.1f', 'degC')} ({self.w_class}; {self.source})"


def ashrae_class(T_K: float) -> str:
    """The lowest ASHRAE W class whose upper supply temperature is at or above ``T_K`` (``W+`` above 45 degC).

    Parameters
    ----------
    T_K : float
        Supply temperature set point [K].

    Returns
    -------
    str
        ``W17``, ``W27``, ``W32``, ``W40``, ``W45`` or ``W+``.

    Raises
    ------
    ValueError
        If ``T_K`` is not a finite temperature above 0 K.
    """
    T = float(T_K)
    if not np.isfinite(T) or T <= 0:
        raise ValueError(f"supply temperature {T_K!r} K: expected a finite temperature above 0 K")
    for name, upper in ASHRAE_W_CLASSES:
        if T <= upper + 1e-9:
            return name
    return "W+"


def supply_limit(T_set_K: float, w_class: str | None = None, plant: str = "") -> SupplyLimit:
    """The limit of a plant whose secondary supply set point is ``T_set_K``; its class given, else derived.

    Parameters
    ----------
    T_set_K : float
        The plant's CDU supply set point [K].
    w_class : str | None
        The class the plant description names; None: :func:`ashrae_class` of the set point.
    plant : str
        Plant name, for ``source``.

    Returns
    -------
    SupplyLimit
        The limit.

    Raises
    ------
    ValueError
        If the set point is not a temperature, or ``w_class`` is not an ASHRAE W class.
    """
    derived = ashrae_class(T_set_K)
    names = [n for n, _ in ASHRAE_W_CLASSES] + ["W+"]
    if w_class is not None and w_class not in names:
        raise ValueError(f"plant {plant or '?'}: ashrae_class {w_class!r}: expected one of {', '.join(names)}")
    who = f"plant {plant}" if plant else "the plant"
    if w_class is None:
        return SupplyLimit(float(T_set_K), derived, f"set point of {who}; class derived from it")
    return SupplyLimit(float(T_set_K), w_class, f"set point and class of {who}")


def supply_limit_of_plant(params: object, plant: str = "") -> SupplyLimit:
    """:func:`supply_limit` of loaded plant parameters (cooling_fmu.params.PlantParams).

    Parameters
    ----------
    params : object
        The plant description (a cooling_fmu.params.PlantParams: ``cdu.T_sec_sup_set_K``; an ``ashrae_class``
        attribute when it has one).
    plant : str
        Plant name, for ``source``.

    Returns
    -------
    SupplyLimit
        The limit.
    """
    return supply_limit(params.cdu.T_sec_sup_set_K, getattr(params, "ashrae_class", None), plant)


def hours_above(T_K: np.ndarray, limit_K: float, margin_K: float, dt_s: float) -> tuple[np.ndarray, float]:
    """Hours each CDU's supply spends above ``limit_K + margin_K``, and hours any CDU does (interval averages).

    Parameters
    ----------
    T_K : np.ndarray
        Interval-average supply temperatures [K], shape (n_intervals, n_cdus) or (n_intervals,).
    limit_K : float
        Limit [K].
    margin_K : float
        Margin [K]; an interval counts when its temperature is strictly above limit + margin.
    dt_s : float
        Interval length [s].

    Returns
    -------
    tuple of (ndarray, float)
        Hours above per CDU, shape (n_cdus,); hours during which at least one CDU is above.
    """
    T = np.asarray(T_K, dtype=float)
    if T.ndim == 1:
        T = T[:, None]
    above = T > limit_K + margin_K
    return above.sum(axis=0) * dt_s / 3600.0, float(above.any(axis=1).sum() * dt_s / 3600.0)
