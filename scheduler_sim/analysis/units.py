"""Unit systems at the edges: what a planner reads in SI (the default) or in US customary (IP) units.

Everything inside hpctwin is SI (K, J, W, kg, s); this module only changes how the terminal summary, the headroom
lines and the report's tables *show* a few quantities. ``hpctwin run --units ip`` and ``hpctwin report --units ip``
select the IP system for one command (:func:`set_unit_system`; the CLI sets it back to SI when the command ends).

========================  =====================  =====================================================
quantity                  SI (default)           IP
========================  =====================  =====================================================
temperature               ``C`` / ``degC``       ``F`` / ``degF``: ``(T - 273.15) x 9/5 + 32``
temperature difference    ``K``                  ``F`` (Fahrenheit degrees): ``dT x 9/5``
water volume              ``m3``                 ``gal`` (US gallon, 3.785411784 L)
water usage (WUE)         ``L/kWh``              ``gal/kWh``
mass                      ``kg``                 ``lb`` (0.45359237 kg)
========================  =====================  =====================================================

Energies (MWh), powers (W, kW, MW), CO2 (metric tonnes, as greenhouse-gas inventories report it), money and
durations are the same in both. Figures keep SI axes.

Sources: the US gallon (231 in^3 = 3.785411784 L) and the international pound (0.45359237 kg) are exact by
definition (NIST Handbook 44, Appendix C; NIST SP 811, Appendix B); the Fahrenheit scale, NIST SP 811 section 4.2.1.1.
"""

from __future__ import annotations

__all__ = ["GALLON_M3", "POUND_KG", "SYSTEMS", "IP_SHOWN", "set_unit_system", "unit_system", "temperature_text",
           "temperature_difference_text"]

#: The unit systems a planner can choose.
SYSTEMS = ("si", "ip")
#: One US gallon [m3] (exact: 231 cubic inches; NIST Handbook 44, Appendix C).
GALLON_M3 = 3.785411784e-3
#: One international pound [kg] (exact; NIST SP 811, Appendix B).
POUND_KG = 0.45359237

#: Shown SI unit (a key of :data:`scheduler_sim.io.schema.SHOWN_UNITS`) -> (IP unit, factor from the SI shown
#: value to the IP one).
IP_SHOWN: dict[str, tuple[str, float]] = {
    "m3": ("gal", 1.0 / GALLON_M3),
    "L/kWh": ("gal/kWh", 1e-3 / GALLON_M3),
    "kg": ("lb", 1.0 / POUND_KG),
}

_STATE = {"system": "si"}


def set_unit_system(name: str) -> None:
    """Choose the unit system of what is shown from now on in this process.

    Parameters
    ----------
    name : str
        ``"si"`` or ``"ip"``.

    Raises
    ------
    ValueError
        If ``name`` is not one of :data:`SYSTEMS`.
    """
    if name not in SYSTEMS:
        raise ValueError(f"unit system {name!r}: expected one of {', '.join(SYSTEMS)}")
    _STATE["system"] = name


def unit_system() -> str:
    """The unit system in force: ``"si"`` (default) or ``"ip"``."""
    return _STATE["system"]


def temperature_text(T_K: float, fmt: str = ".1f", label: str = "C") -> str:
    """A temperature as shown: ``"30.7 C"`` in SI, ``"87.3 F"`` in IP.

    Parameters
    ----------
    T_K : float
        Temperature [K].
    fmt : str
        Format spec of the number.
    label : str
        The SI label, ``"C"`` or ``"degC"``; IP shows ``"F"`` or ``"degF"`` in its place.

    Returns
    -------
    str
        Number and unit.
    """
    t_C = float(T_K) - 273.15
    if _STATE["system"] == "ip":
        return f"{t_C * 1.8 + 32.0:{fmt}} {label.replace('C', 'F')}"
    return f"{t_C:{fmt}} {label}"


def temperature_difference_text(dT_K: float, fmt: str = "+.2f") -> str:
    """A temperature difference as shown: ``"-2.72 K"`` in SI, ``"-4.90 F"`` (Fahrenheit degrees) in IP.

    Parameters
    ----------
    dT_K : float
        Temperature difference [K].
    fmt : str
        Format spec of the number.

    Returns
    -------
    str
        Number and unit.
    """
    if _STATE["system"] == "ip":
        return f"{float(dT_K) * 1.8:{fmt}} F"
    return f"{float(dT_K):{fmt}} K"
