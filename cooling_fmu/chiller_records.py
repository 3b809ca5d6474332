"""Reference chillers of the EnergyPlus ``Chiller:Electric:EIR`` model (published data, no physics).

Records of the EnergyPlus chiller data set (DataSets/Chillers.idf) as tabulated by the Modelica Buildings Library
(``Buildings.Fluid.Chillers.Data.ElectricEIR``, LBNL; the copy opened here: repository longlevan/ThermoCodeLib,
``Modelica/Buildings/Fluid/Chillers/Data/ElectricEIR/<record>.mo``). The relation that uses them is
:func:`cooling_fmu.components.chiller.eir_chiller`; the plant description's ``chiller.reference`` and the system's
``facility.air_side.chiller_reference`` name one of them (validated at load, hence this module sits apart from the
component library, which imports the plant description).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["EIRChiller", "REFERENCE_CHILLERS", "reference_chiller"]


@dataclass(frozen=True)
class EIRChiller:
    """A reference chiller of the EnergyPlus ``Chiller:Electric:EIR`` model (temperatures in K, curves in degC).

    Attributes
    ----------
    name : str
        Record name.
    Q_ref_W : float
        Reference capacity [W].
    COP_ref : float
        Reference COP [1].
    T_lchw_ref_K, T_ecw_ref_K : float
        Reference leaving chilled-water and entering condenser-water temperatures [K].
    T_lchw_min_K, T_lchw_max_K, T_ecw_min_K, T_ecw_max_K : float
        Curve input ranges [K] (inputs are clamped to them).
    capft, eirft : tuple of 6 float
        Biquadratic coefficients (a, b, c, d, e, f) in degC.
    eirfplr : tuple of 3 float
        Quadratic coefficients of EIRFPLR.
    PLR_min, PLR_max : float
        Minimum and maximum part-load ratio.
    source : str
        Where the record comes from.
    """

    name: str
    Q_ref_W: float
    COP_ref: float
    T_lchw_ref_K: float
    T_ecw_ref_K: float
    T_lchw_min_K: float
    T_lchw_max_K: float
    T_ecw_min_K: float
    T_ecw_max_K: float
    capft: tuple
    eirft: tuple
    eirfplr: tuple
    PLR_min: float
    PLR_max: float
    source: str


_SRC = ("EnergyPlus DataSets/Chillers.idf via Modelica Buildings Buildings.Fluid.Chillers.Data.ElectricEIR "
        "(copy opened: longlevan/ThermoCodeLib Modelica/Buildings/Fluid/Chillers/Data/ElectricEIR/{}.mo)")
#: Reference chillers by name (the plant description's ``chiller.reference``).
REFERENCE_CHILLERS = {
    "McQuay_WSC_471kW_5_89COP_Vanes": EIRChiller(
        "McQuay_WSC_471kW_5_89COP_Vanes", 471200.0, 5.89, 273.15 + 8.89, 273.15 + 26.67,
        273.15 + 7.22, 273.15 + 12.78, 273.15 + 12.78, 273.15 + 26.67,
        (2.521130E-01, 1.324053E-02, -8.637329E-03, 8.581056E-02, -4.261176E-03, 8.661899E-03),
        (4.475238E-01, -2.588210E-02, -1.459053E-03, 4.342595E-02, -1.000651E-03, 1.920106E-03),
        (2.778889E-01, 2.338363E-01, 4.883748E-01), 0.10, 1.15,
        _SRC.format("ElectricEIRChiller_McQuay_WSC_471kW_5_89COP_Vanes")),
    "Carrier_19XR_742kW_5_42COP_VSD": EIRChiller(
        "Carrier_19XR_742kW_5_42COP_VSD", 742000.0, 5.42, 273.15 + 5.56, 273.15 + 21.11,
        273.15 + 5.56, 273.15 + 10.00, 273.15 + 11.25, 273.15 + 23.89,
        (9.797101E-01, -2.895701E-03, -8.970718E-04, 1.031440E-02, -7.431651E-04, 1.453508E-03),
        (9.946139E-01, -4.829399E-02, 4.674277E-04, -1.158726E-03, 5.762583E-04, 2.148192E-04),
        (1.202277E-01, 1.396384E-01, 7.394038E-01), 0.19, 1.02,
        _SRC.format("ElectricEIRChiller_Carrier_19XR_742kW_5_42COP_VSD")),
}


def reference_chiller(name: str) -> EIRChiller:
    """The reference chiller of that name.

    Parameters
    ----------
    name : str
        A key of :data:`REFERENCE_CHILLERS`.

    Returns
    -------
    EIRChiller
        The record.

    Raises
    ------
    ValueError
        If there is no such record (the message lists the known names).
    """
    try:
        return REFERENCE_CHILLERS[name]
    except KeyError:
        raise ValueError(f"chiller.reference {name!r}: unknown reference chiller; known: "
                         f"{', '.join(sorted(REFERENCE_CHILLERS))}") from None


