"""Whole-facility overheads outside the IT equipment and the liquid cooling plant.

The liquid plant (CDU pumps, facility pumps, towers, chiller) is the Modelica FMU of :mod:`cooling_fmu`. This
module adds every other watt between the utility meter and the rack (The Green Grid's "total facility energy"):

* the **electrical chain** from the utility to the rack: medium-voltage transformer(s), switchgear / busway /
  cabling, UPS (on the share of the IT load that sits on UPS) and PDUs;
* the **air side**: heat that goes to room air (the share ``1 - liquid_fraction`` of rack input, plus the losses of
  the UPS and PDUs and the lighting, which are indoors) is removed by air handlers / CRAH fans on chilled water
  (an EIR chiller with real part load and its chilled- and condenser-water pumps) or on a water-side economiser
  when the outdoor wet-bulb is low enough; all of that heat, the chiller's power and its pumps' ends in the cooling
  towers (:meth:`FacilityOverheads.air_side_rejected_W`, passed to a plant that takes it);
* **lighting and building controls**: a constant load (W per m2 of floor area).

Each stage is optional: a system description (``[facility]`` table of ``power/systems/*.toml``) may leave any of
them out, and the run lists the stages it counted and the ones it left out.

Chain (all W, vectorised over the cooling steps; ``P_it`` = rack input, ``P_liq`` = liquid plant power)::

    P_pdu_in   = P_it / eta_pdu                               PDU loss     L_pdu = P_pdu_in - P_it
    P_ups_out  = s_ups P_pdu_in                               s_ups: share of the IT load on UPS
    L_ups      = R_ups (c0 + c1 x + c2 x^2),  x = P_ups_out / R_ups   (three-term UPS loss model, fitted to the
                                                              efficiency points of the system file)
    P_light    = W_per_m2 * floor_area
    Q_air      = (1 - lf) P_it + L_pdu + L_ups + P_light      heat to room air (lf = liquid_fraction)
    P_fan      = k_fan Q_air                                  CRAH / air-handler fans
    L          = Q_air + P_fan                                coil load on the chilled water
    P_comp     = EIR chiller (L, T_chw, T_wb + approach)      if T_wb > T_econ else 0 (economiser)
                 (cooling_fmu.components.chiller.eir_chiller: EnergyPlus Chiller:Electric:EIR curves of the
                 reference chiller, reference COP = chiller_cop, capacity sized at the design air heat)
    P_chw      = P_comp + k_chw L + k_cond (L + P_comp)       chiller + chilled-water and condenser pumps
                 (ASHRAE 90.1 Appendix G 22 / 19 W/gpm: cooling_fmu.components.chiller)
    Q_rej_air  = L + P_chw                                    heat the air side puts into the tower water
    P_sw_out   = P_pdu_in + L_ups + P_liq + P_fan + P_chw + P_light
    L_sw       = R_sw (f_0 + f_fl (P_sw_out / R_sw)^2)         switchgear, busway, cabling: no-load + I^2 R
    P_tr_out   = P_sw_out + L_sw
    L_tr       = n (P_0 + P_k (S / S_r)^2),  S = P_tr_out / (pf n)  (n transformers sharing the load)

Ratings from the system: the switchgear rating ``R_sw`` and, unless the file gives it, the transformer count ``n``
follow from the system's design load ``P_design = (1 + design_overhead_fraction) P_IT,max`` (every node at full
utilisation through the power chain; :meth:`FacilitySpec.sized`, applied by :mod:`power.sizing`):
``n = ceil(P_design / (pf S_r)) + redundant_units`` (N+1 by default) and ``R_sw = P_design``. At constant voltage
the current is proportional to the power, so the resistive loss of busway, cables and breaker contacts goes with
the square of the throughput (I^2 R); ``f_fl`` is that loss at rated current per rated watt, ``f_0`` the loss with
no load (control power, relays, metering, space heaters).
    P_facility = P_tr_out + L_tr
             = P_it + P_liq + (L_tr + L_sw + L_ups + L_pdu) + (P_fan + P_chw) + P_light      (exact)

Fans inside IT equipment (server fans, Cray XC cabinet blowers) are IT power per The Green Grid (WP49, "PUE: a
comprehensive examination of the metric", 2012): they are never counted here.

Sources of the forms: transformer losses as no-load + load loss x (load / rating)^2 (IEEE C57.12.00; DOE
10 CFR 431.196 states efficiency at 50 % of rated load); switchgear and cable losses as a no-load loss plus the
resistive loss I^2 R of the conductors (the split of the transformer's losses; White Paper 113 below treats
wiring losses as square-law); UPS loss as no-load + proportional + square-law terms (the loss model of Schneider
Electric / APC White Paper 113, "Electrical efficiency modeling for data centers", Rasmussen); fan power from
the LBNL "Self-benchmarking guide for data center energy performance" (Greenberg, Tschudi, Weale, 2006)
air-handler airflow efficiency in W/cfm; chiller COP from ASHRAE 90.1 minimum efficiency tables. Every figure of a
system file names its own source there.
"""

from __future__ import annotations

import dataclasses
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike, NDArray
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = ["pue_category", "AirSideSpec", "FacilitySpec", "FeedSpec", "FacilityOverheads", "LightingSpec", "PduSpec", "STAGES",
           "SwitchgearSpec", "TransformerSpec", "UpsSpec", "CFM_PER_M3_S", "RHO_AIR", "CP_AIR"]

#: cubic feet per minute in one m3/s (1 ft = 0.3048 m exactly).
CFM_PER_M3_S = 60.0 / 0.3048 ** 3
#: Density of air at ~24 degC, sea level [kg/m3] (ASHRAE Fundamentals, standard air 1.2 kg/m3).
RHO_AIR = 1.2
#: Specific heat of dry air [J/(kg K)] (ASHRAE Fundamentals).
CP_AIR = 1006.0
#: AHRI Standard 550/590 rating point of water-cooled chillers (the conditions of the ASHRAE 90.1 efficiency
#: tables): leaving chilled water 44 F, entering condenser water 85 F at 3 gpm/ton (a ~9.3 F = 5.15 K rise at
#: COP 6.3) [K].
AHRI_T_CHW_K = 279.817
AHRI_T_COND_IN_K = 302.594
AHRI_COND_RISE_K = 5.15

#: Facility stages, in the order they are reported.
STAGES = ("transformer", "switchgear", "ups", "pdu", "air_side", "lighting")


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TransformerSpec(_Strict):
    """Medium-voltage transformers feeding the whole facility (all units energised, load shared equally).

    Loss of one unit at apparent load ``S`` [VA]: ``P_0 + P_k (S / S_r)^2`` (IEEE C57.12.00 loss convention).
    """

    rated_VA: float = Field(gt=0, description="Rated apparent power of one transformer, VA")
    count: int | None = Field(None, ge=1, description="Transformers in service, sharing the load equally; unset = "
                                                      "from the system's design load (N + redundant_units)")
    redundant_units: int = Field(1, ge=0, description="Units beyond those the design load needs, when count is "
                                                      "derived (ASSUMPTION: N+1)")
    no_load_loss_W: float = Field(ge=0, description="No-load (core) loss of one transformer, W")
    load_loss_W: float = Field(ge=0, description="Load (winding) loss of one transformer at rated load, W")
    power_factor: float = Field(0.95, gt=0, le=1, description="Power factor of the facility load, 1")
    source: str = Field(min_length=1, description="Where the figures come from")

    def efficiency(self, load_fraction: float) -> float:
        """Efficiency of one unit at ``load_fraction`` of its rated apparent power (real power out / in), 1.

        ``eta = P / (P + L_0 + L_fl x^2)`` with ``P = x S_rated pf`` (no-load loss plus a load loss quadratic in
        the current).

        Parameters
        ----------
        load_fraction : float
            Load of one unit per its rated apparent power ``rated_VA``, 1 (> 0; may exceed 1 when overloaded).

        Returns
        -------
        float
            Efficiency (real power out / in), 1, in (0, 1).

        Raises
        ------
        ValueError
            If ``load_fraction`` is not > 0.
        """
        if not load_fraction > 0:
            raise ValueError(f"load_fraction must be > 0, got {load_fraction}")
        p_out = load_fraction * self.rated_VA * self.power_factor
        loss = self.no_load_loss_W + self.load_loss_W * load_fraction ** 2
        return p_out / (p_out + loss)


class SwitchgearSpec(_Strict):
    """Switchgear, busway and cabling between the transformers and the UPS / PDUs: a no-load loss plus a resistive
    (I^2 R) loss, quadratic in the power passing through: ``L = R (f_0 + f_fl (P / R)^2)``, ``R`` the rating.
    """

    no_load_fraction: float = Field(ge=0, lt=0.05, description="Loss with no load per rated W (control power, "
                                                                "relays, metering, space heaters), 1")
    full_load_loss_fraction: float = Field(ge=0, lt=0.2, description="Resistive loss at rated current per rated W "
                                                                     "(busway, cables, breaker contacts), 1")
    rated_W: float | None = Field(None, gt=0, description="Rated throughput, W; unset = the system's design load")
    source: str = Field(min_length=1, description="Where the figures come from")

    @model_validator(mode="before")
    @classmethod
    def _no_linear_form(cls, data):
        if isinstance(data, dict) and "loss_fraction" in data:
            raise ValueError("switchgear.loss_fraction (a loss linear in the throughput) is replaced by the no-load "
                             "+ I^2 R form: give no_load_fraction and full_load_loss_fraction (docs/facility.md)")
        return data

    def loss_W(self, P_W: ArrayLike, rated_W: float | None = None) -> NDArray[np.float64] | float:
        """Loss at throughput ``P_W`` [W]: ``R (f_0 + f_fl (P / R)^2)``.

        Parameters
        ----------
        P_W : ArrayLike
            Power passing through [W], any shape.
        rated_W : float | None
            Rating ``R`` [W] when :attr:`rated_W` is unset.

        Returns
        -------
        ndarray or float
            Loss [W].

        Raises
        ------
        ValueError
            If no rating is known.
        """
        R = self.rated_W if self.rated_W is not None else rated_W
        if R is None:
            raise ValueError("switchgear has no rating: give rated_W or size the facility from the system")
        x = np.asarray(P_W, dtype=float) / R
        return R * (self.no_load_fraction + self.full_load_loss_fraction * x * x)


class UpsSpec(_Strict):
    """UPS carrying ``share`` of the IT load; its loss follows the three-term model ``R (c0 + c1 x + c2 x^2)`` with
    ``x`` the load fraction, fitted (least squares on the loss) to ``efficiency_points`` = [[x, eta], ...].
    """

    share: float = Field(ge=0, le=1, description="Share of the IT load (PDU input) that sits on UPS, 1")
    rated_W: float = Field(gt=0, description="Rated real output power of all UPS modules together, W")
    efficiency_points: list[tuple[float, float]] = Field(
        min_length=3, description="[[load fraction, efficiency], ...] from the cited curve (>= 3 points)")
    source: str = Field(min_length=1, description="Where the efficiency curve comes from")

    @model_validator(mode="after")
    def _points(self) -> UpsSpec:
        xs = [x for x, _ in self.efficiency_points]
        if any(not (0 < x <= 1.5) for x in xs) or len(set(xs)) != len(xs):
            raise ValueError("efficiency_points load fractions must be distinct and in (0, 1.5]")
        if any(not (0.5 < e < 1.0) for _, e in self.efficiency_points):
            raise ValueError("efficiency_points efficiencies must be in (0.5, 1)")
        c = self.loss_coefficients()
        if c[0] < 0 or any(c[0] + c[1] * x + c[2] * x * x < 0 for x in np.linspace(0, 1.5, 31)):
            raise ValueError(f"efficiency_points give a negative loss somewhere in 0..150 % load (fit {c})")
        return self

    def loss_coefficients(self) -> tuple[float, float, float]:
        """(c0, c1, c2): loss / rated_W = c0 + c1 x + c2 x^2, least-squares fit to the efficiency points."""
        x = np.array([p[0] for p in self.efficiency_points], dtype=float)
        eta = np.array([p[1] for p in self.efficiency_points], dtype=float)
        loss = x * (1.0 / eta - 1.0)
        c = np.linalg.lstsq(np.vander(x, 3, increasing=True), loss, rcond=None)[0]
        return float(c[0]), float(c[1]), float(c[2])

    def efficiency(self, load_fraction: float) -> float:
        """Model efficiency (output / input) at ``load_fraction`` of ``rated_W``, 1.

        ``eta = x / (x + c0 + c1 x + c2 x^2)``, the coefficients from :meth:`loss_coefficients`.

        Parameters
        ----------
        load_fraction : float
            Output power per ``rated_W``, 1 (> 0).

        Returns
        -------
        float
            Efficiency (output / input), 1.

        Raises
        ------
        ValueError
            If ``load_fraction`` is not > 0.
        """
        if not load_fraction > 0:
            raise ValueError(f"load_fraction must be > 0, got {load_fraction}")
        c0, c1, c2 = self.loss_coefficients()
        x = load_fraction
        return x / (x + c0 + c1 * x + c2 * x * x)


class PduSpec(_Strict):
    """Power distribution units between the UPS and the racks (a transformer-type PDU has ~1.5-3 % loss; a
    480 V feed straight to the rack rectifiers has none, leave the stage out then).
    """

    eta: float = Field(gt=0.5, le=1, description="PDU efficiency (output / input), 1")
    source: str = Field(min_length=1, description="Where the figure comes from")


@lru_cache(maxsize=32)
def _reference_at_cop(name: str, cop: float) -> object:
    """The reference chiller ``name`` with its reference COP set to ``cop`` (built once per pair, not per call).

    Parameters
    ----------
    name : str
        A reference chiller (:func:`cooling_fmu.chiller_records.reference_chiller`).
    cop : float
        Its reference COP [1].

    Returns
    -------
    object
        The :class:`cooling_fmu.chiller_records.EIRChiller` record with ``COP_ref = cop``.
    """
    from cooling_fmu.chiller_records import reference_chiller

    return dataclasses.replace(reference_chiller(name), COP_ref=cop)


class AirSideSpec(_Strict):
    """Air handlers / CRAH units removing the heat that goes to room air.

    Fan power per W of air-side heat: ``k_fan = W_per_cfm * CFM_PER_M3_S / (RHO_AIR CP_AIR delta_T_K)``
    (airflow needed to carry the heat at the supply-return temperature difference, times the fan power per unit
    airflow). Chilled water for the coils (:meth:`chilled_water_W`): the EnergyPlus ``Chiller:Electric:EIR``
    curves of ``chiller_reference`` (:mod:`cooling_fmu.components.chiller`) with its reference COP set to
    ``chiller_cop`` (the curve shapes kept, as an EnergyPlus input does), leaving water at ``chw_supply_K``
    (default: the record's reference), condenser water at the wet-bulb plus ``condenser_approach_K``, part load
    against ``chiller_capacity_W`` (default: the design air heat); no compressor while the outdoor wet-bulb is at or
    below ``economiser_wb_max_K`` (water-side economiser); the chilled-water and condenser pumps always run.
    """

    fan_W_per_cfm: float = Field(ge=0, description="Air-handler fan power per unit airflow, W/cfm")
    delta_T_K: float = Field(gt=0, description="Air temperature rise across the IT equipment / coils, K")
    chiller_cop: float = Field(gt=0, description="Coefficient of performance of the chilled-water source, 1")
    economiser_wb_max_K: float | None = Field(None, gt=200, lt=330,
                                              description="Wet-bulb at or below which the economiser carries the "
                                                          "air side (no chiller power), K; absent: never")
    chw_supply_K: float | None = Field(None, gt=270, lt=300, description="Chilled-water supply temperature of the "
                                       "air-side coils, K; absent: the reference chiller's rating temperature")
    condenser_approach_K: float = Field(4.0, ge=0, description="Condenser water above the wet-bulb (tower "
                                                               "approach), K")
    chiller_reference: str = Field("McQuay_WSC_471kW_5_89COP_Vanes", min_length=1, description="Reference chiller "
                                   "whose EIR curves the air side's chiller follows (cooling_fmu.components.chiller)")
    chiller_capacity_W: float | None = Field(None, gt=0, description="Capacity of the air side's chiller at its "
                                             "rating, W; absent: the air heat at the system's design load")
    source: str = Field(min_length=1, description="Where the figures come from")

    @field_validator("chiller_reference")
    @classmethod
    def _known_chiller(cls, v: str) -> str:
        from cooling_fmu.chiller_records import reference_chiller

        reference_chiller(v)  # ValueError naming the known records
        return v

    def chilled_water_W(self, load_W: NDArray[np.float64], T_wb_K: ArrayLike | None, capacity_W: float | None
                        ) -> NDArray[np.float64]:
        """Electrical power of the air side's chilled water: chiller compressor (EIR curves) and its two pumps.

        Parameters
        ----------
        load_W : NDArray[np.float64]
            Coil load (air heat + CRAH fans) [W], >= 0.
        T_wb_K : ArrayLike | None
            Outdoor wet-bulb [K] (condenser water = wet-bulb + ``condenser_approach_K``; economiser decision);
            None: the reference chiller's rating condenser water, never the economiser.
        capacity_W : float | None
            Chiller capacity at its rating [W]; None: ``chiller_capacity_W``, else every load is full load.

        Returns
        -------
        ndarray
            ``P_comp + k_chw L + k_cond (L + P_comp)`` [W] (module docstring), shape of ``load_W``. A load above
            the capacity runs more of the same chillers at full load (power scaled with the load).
        """
        from cooling_fmu.components.chiller import CHW_PUMP_W_PER_W, COND_PUMP_W_PER_W, eir_chiller

        L = np.asarray(load_W, dtype=float)
        econ = None
        if self.economiser_wb_max_K is not None and T_wb_K is not None:
            econ = np.broadcast_to(np.asarray(T_wb_K, dtype=float), L.shape) <= self.economiser_wb_max_K
            if econ.all():  # the economiser carries every point: no compressor, the curves are not needed
                P = np.zeros(L.shape)
                return P + CHW_PUMP_W_PER_W * L + COND_PUMP_W_PER_W * (L + P)
        ref = _reference_at_cop(self.chiller_reference, self.chiller_cop)
        cap_W = self.chiller_capacity_W if self.chiller_capacity_W is not None else capacity_W
        T_lchw = self.chw_supply_K if self.chw_supply_K is not None else ref.T_lchw_ref_K
        T_ecw = ref.T_ecw_ref_K if T_wb_K is None else np.asarray(T_wb_K, dtype=float) + self.condenser_approach_K
        Q_ref = np.maximum(L, 1e-9) if cap_W is None else cap_W
        Q, P, _ = eir_chiller(ref, Q_ref, L, T_lchw, T_ecw)
        P = np.where(Q > 0.0, P * L / np.where(Q > 0.0, Q, 1.0), 0.0)
        if econ is not None:
            P = np.where(econ, 0.0, P)
        return P + CHW_PUMP_W_PER_W * L + COND_PUMP_W_PER_W * (L + P)

    @property
    def fan_W_per_W(self) -> float:
        """Fan power per W of air-side heat, 1."""
        return self.fan_W_per_cfm * CFM_PER_M3_S / (RHO_AIR * CP_AIR * self.delta_T_K)


class LightingSpec(_Strict):
    """Lighting and building controls: a constant load ``W_per_m2 * floor_area_m2``."""

    W_per_m2: float = Field(ge=0, description="Lighting and building-controls power density, W/m2")
    floor_area_m2: float = Field(ge=0, description="Floor area the density applies to, m2")
    source: str = Field(min_length=1, description="Where the figures come from")


class FeedSpec(_Strict):
    """The facility's electrical feed (utility service): its capacity and redundancy, for headroom and site checks.

    ``capacity_W`` is the real power the installed feed units deliver together; with ``redundancy = "N+1"`` one of
    the ``units`` may be out of service, so the firm capacity is ``capacity_W (units - 1) / units``; with ``"2N"``
    it is half of it (two full paths). Not a loss stage: it is never counted in PUE.
    """

    capacity_W: float = Field(gt=0, description="Real power of all installed feed units together, W")
    units: int = Field(1, ge=1, description="Feed units (transformers, utility services) making up capacity_W")
    redundancy: Literal["N", "N+1", "2N"] = Field("N", description="Redundancy of the feed")
    source: str = Field(min_length=1, description="Where the figures come from")

    @property
    def firm_W(self) -> float:
        """Capacity with the redundant part out of service, W."""
        if self.redundancy == "2N":
            return self.capacity_W / 2.0
        if self.redundancy == "N+1":
            return self.capacity_W * (self.units - 1) / self.units if self.units > 1 else 0.0
        return self.capacity_W


class FacilitySpec(_Strict):
    """The ``[facility]`` table of a system file: every stage optional (absent = not counted)."""

    design_overhead_fraction: float = Field(0.10, ge=0, le=1, description="Design load of the electrical chain "
                                            "beyond the peak IT power (cooling, air side, lighting, losses at "
                                            "peak), per IT W; ASSUMPTION 0.10 (above PUE 1.03-1.06 of published "
                                            "liquid-cooled sites)")
    design_load_W: float | None = Field(None, gt=0, description="Design load of the electrical chain, W; unset = "
                                        "from the system (sized at load)")
    transformer: TransformerSpec | None = None
    switchgear: SwitchgearSpec | None = None
    ups: UpsSpec | None = None
    pdu: PduSpec | None = None
    air_side: AirSideSpec | None = None
    lighting: LightingSpec | None = None
    feed: FeedSpec | None = None

    def feed_W(self) -> tuple[float, float, str]:
        """The facility's electrical feed: capacity, firm capacity and where they come from.

        Returns
        -------
        capacity_W : float
            The ``[facility.feed]`` capacity, else the transformers' ``count x rated_VA x power_factor``, else NaN
            (also for transformers whose count is not yet sized: :meth:`sized`).
        firm_W : float
            The capacity with the redundant unit out of service (:class:`FeedSpec`; for transformers, one unit
            less), W (NaN without either).
        source : str
            ``"[facility.feed]"``, ``"transformers"`` or ``""``.
        """
        if self.feed is not None:
            return self.feed.capacity_W, self.feed.firm_W, "[facility.feed]"
        t = self.transformer
        if t is not None and t.count is not None:  # an unsized spec (count from the design load): see sized()
            unit = t.rated_VA * t.power_factor
            return t.count * unit, (t.count - 1) * unit, "transformers"
        return float("nan"), float("nan"), ""

    def sized(self, peak_it_W: float) -> FacilitySpec:
        """The spec with the ratings that follow from the system filled in (module docstring).

        Parameters
        ----------
        peak_it_W : float
            IT power (rack input) with every node at full utilisation [W].

        Returns
        -------
        FacilitySpec
            ``design_load_W`` set (if unset: ``(1 + design_overhead_fraction) peak_it_W``), the transformer count
            (if unset: ``ceil(design_load / (pf rated_VA)) + redundant_units``) and the switchgear rating (if
            unset: the design load).
        """
        design = self.design_load_W if self.design_load_W is not None else \
            (1.0 + self.design_overhead_fraction) * float(peak_it_W)
        upd: dict = {"design_load_W": design}
        t = self.transformer
        if t is not None and t.count is None:
            n = max(1, int(np.ceil(design / (t.power_factor * t.rated_VA) - 1e-9)))
            upd["transformer"] = t.model_copy(update={"count": n + t.redundant_units})
        if self.switchgear is not None and self.switchgear.rated_W is None:
            upd["switchgear"] = self.switchgear.model_copy(update={"rated_W": design})
        return self.model_copy(update=upd)

    def present(self) -> list[str]:
        """Names of the stages this description counts, in :data:`STAGES` order."""
        return [s for s in STAGES if getattr(self, s) is not None]

    def absent(self) -> list[str]:
        """Names of the stages this description leaves out, in :data:`STAGES` order."""
        return [s for s in STAGES if getattr(self, s) is None]


#: Output series of :meth:`FacilityOverheads.evaluate`, in column order (all W).
SERIES = ("P_transformer_loss_W", "P_switchgear_loss_W", "P_ups_loss_W", "P_pdu_loss_W", "Q_air_W",
          "P_air_fan_W", "P_air_chiller_W", "P_lighting_W")
_I_TR, _I_SW, _I_UPS, _I_PDU, _I_QAIR, _I_FAN, _I_CHW, _I_LIGHT = range(len(SERIES))


@dataclasses.dataclass(frozen=True)
class FacilityOverheads:
    """Evaluator of the facility overheads of one system (see the module docstring for the equations).

    Parameters
    ----------
    spec : FacilitySpec
        Stages and their figures.
    liquid_fraction : float
        Share of rack input rejected to the CDU loop, 1 in [0, 1]; the rest goes to room air.
    """

    spec: FacilitySpec
    liquid_fraction: float = 1.0

    SERIES = SERIES

    @property
    def active(self) -> bool:
        """True when any stage is present or some heat goes to air (else every series is identically 0)."""
        return bool(self.spec.present())

    def __post_init__(self) -> None:
        # Per-run constants of the chain, computed once (issue #16: the UPS least-squares fit ran on every plant call,
        # 46 % of this evaluator's time). The same Python floats as the per-call expressions, so results are
        # bit-identical.
        sp = self.spec
        object.__setattr__(self, "_ups_c", sp.ups.loss_coefficients() if sp.ups is not None else None)
        object.__setattr__(self, "_light_W", sp.lighting.W_per_m2 * sp.lighting.floor_area_m2
                           if sp.lighting is not None else None)
        object.__setattr__(self, "_fan_W_per_W", sp.air_side.fan_W_per_W if sp.air_side is not None else None)
        cap = None  # the air side's chiller: sized at the air heat of the design IT load (ASSUMPTION: N, no spare)
        if sp.air_side is not None and sp.air_side.chiller_capacity_W is None and sp.design_load_W is not None:
            peak_it = sp.design_load_W / (1.0 + sp.design_overhead_fraction)
            q_air = self._air_heat(np.array([peak_it]))
            cap = float(q_air[0] * (1.0 + sp.air_side.fan_W_per_W))
        object.__setattr__(self, "_chiller_cap_W", cap)
        t = sp.transformer
        if t is not None and t.count is None:
            if sp.design_load_W is None:
                raise ValueError("transformer count unset and no design load: size the spec (FacilitySpec.sized)")
            t = sp.sized(0.0).transformer
        object.__setattr__(self, "_tr_count", t.count if t is not None else 0)

    def evaluate(self, P_it_W: ArrayLike, P_liquid_W: ArrayLike, T_wb_K: ArrayLike | None = None  # noqa: DOC502
                 ) -> dict[str, NDArray[np.float64]]:
        """Overhead powers for arrays of operating points.

        Parameters
        ----------
        P_it_W : ArrayLike
            IT power (rack input) [W], shape (n,), >= 0.
        P_liquid_W : ArrayLike
            Liquid cooling plant power [W], shape (n,) (the FMU's ``P_cooling``); 0 when no plant is modelled.
        T_wb_K : ArrayLike | None
            Outdoor wet-bulb [K], shape (n,) (economiser decision); None: the economiser never runs.

        Returns
        -------
        dict of str -> ndarray (n,)
            :data:`SERIES` (W). Absent stages give zeros. ``Q_air_W`` is heat (not electrical power).

        Raises
        ------
        ValueError
            If the shapes differ or an input is negative / not finite (raised by :meth:`evaluate_columns`).
        """
        P_it = np.asarray(P_it_W, dtype=float)
        cols = self.evaluate_columns(P_it, P_liquid_W, T_wb_K)
        return {k: cols[..., i].copy() for i, k in enumerate(SERIES)}

    def evaluate_columns(self, P_it_W: ArrayLike, P_liquid_W: ArrayLike, T_wb_K: ArrayLike | None = None
                         ) -> NDArray[np.float64]:
        """Overhead powers as one array, columns in :data:`SERIES` order (the coupler's form of :meth:`evaluate`).

        Parameters
        ----------
        P_it_W : ArrayLike
            IT power (rack input) [W], shape (n,), >= 0.
        P_liquid_W : ArrayLike
            Liquid cooling plant power [W], shape (n,); 0 when no plant is modelled.
        T_wb_K : ArrayLike | None
            Shape (n,) [K].
            Outdoor wet-bulb (economiser decision); None: the economiser never runs.

        Returns
        -------
        ndarray, shape (n, len(SERIES)), W
            A new C-contiguous array; absent stages give zero columns. Same values as :meth:`evaluate`, bit for bit.

        Raises
        ------
        ValueError
            If the shapes differ or an input is negative / not finite.
        """
        P_it = np.asarray(P_it_W, dtype=float)
        P_liq = np.asarray(P_liquid_W, dtype=float)
        if P_it.shape != P_liq.shape:
            raise ValueError(f"P_it_W {P_it.shape} and P_liquid_W {P_liq.shape} must have the same shape")
        if not (np.isfinite(P_it).all() and np.isfinite(P_liq).all()) or (P_it.size and P_it.min() < 0):
            raise ValueError("P_it_W must be finite and >= 0, P_liquid_W finite")
        sp = self.spec
        cols = np.zeros(P_it.shape + (len(SERIES),))
        zero = cols[..., 0]  # zeros until the transformer (the last stage computed) is written
        # PDU, UPS, lighting and the heat to room air (one arithmetic: air_heat_split)
        q_air, pdu_loss, ups_loss, light, P_pdu_in = self.air_heat_split(P_it)
        cols[..., _I_PDU] = pdu_loss
        cols[..., _I_UPS] = ups_loss
        cols[..., _I_LIGHT] = light
        cols[..., _I_QAIR] = q_air
        if sp.air_side is not None:
            fan, chw = self._air_side(q_air, T_wb_K)
            cols[..., _I_FAN] = fan
            cols[..., _I_CHW] = chw
        else:
            fan = chw = zero
        sw_out = P_pdu_in + ups_loss + P_liq + fan + chw + light
        if sp.switchgear is not None:
            sw_loss = sp.switchgear.loss_W(sw_out, sp.design_load_W)
            cols[..., _I_SW] = sw_loss
        else:
            sw_loss = zero
        if sp.transformer is not None:
            t = sp.transformer
            n = self._tr_count
            S = (sw_out + sw_loss) / (t.power_factor * n)
            cols[..., _I_TR] = n * (t.no_load_loss_W + t.load_loss_W * (S / t.rated_VA) ** 2)
        return cols

    def _air_side(self, q_air: NDArray[np.float64], T_wb_K: ArrayLike | None) -> tuple:
        """CRAH fans and chilled-water power for the air heat ``q_air`` (one relation, module docstring).

        The last answer is kept: the cooling coupler asks twice per plant call with the same inputs (the air side's
        heat into the towers, then the overhead columns), and the chiller's curves cost more than the comparison.
        The same arrays come back for equal inputs (new ones otherwise), so results are bit-identical.
        """
        memo = self.__dict__.get("_air_memo")
        if (memo is not None and T_wb_K is not None and np.array_equal(memo[0], q_air)
                and np.array_equal(memo[1], T_wb_K)):
            return memo[2], memo[3]
        a = self.spec.air_side
        fan = self._fan_W_per_W * q_air
        chw = a.chilled_water_W(q_air + fan, T_wb_K, self._chiller_cap_W)
        if T_wb_K is not None:  # frozen dataclass: the memo is no field (not compared, not hashed)
            object.__setattr__(self, "_air_memo", (np.array(q_air, dtype=float), np.array(T_wb_K, dtype=float),
                                                    fan, chw))
        return fan, chw

    def _air_heat(self, P_it: NDArray[np.float64]) -> NDArray[np.float64]:
        """Heat to room air at IT power ``P_it`` [W]: the share not on liquid, PDU and UPS losses, lighting."""
        return self.air_heat_split(P_it)[0]

    def air_heat_split(self, P_it: NDArray[np.float64]) -> tuple:
        """Heat to room air and its parts at IT power ``P_it`` (the arithmetic of :meth:`evaluate_columns`).

        Parameters
        ----------
        P_it : NDArray[np.float64]
            IT power (rack input) [W].

        Returns
        -------
        tuple of ndarray
            ``(Q_air, L_pdu, L_ups, P_light, P_pdu_in)`` [W] (``P_pdu_in`` the PDUs' input power).
        """
        sp = self.spec
        zero = np.zeros_like(P_it)
        P_pdu_in = P_it / sp.pdu.eta if sp.pdu is not None else P_it
        pdu_loss = P_pdu_in - P_it if sp.pdu is not None else zero
        if self._ups_c is not None:
            c0, c1, c2 = self._ups_c
            R = sp.ups.rated_W
            x = sp.ups.share * P_pdu_in / R
            ups_loss = R * (c0 + c1 * x + c2 * x * x)
        else:
            ups_loss = zero
        light = zero + self._light_W if self._light_W is not None else zero
        return (1.0 - self.liquid_fraction) * P_it + pdu_loss + ups_loss + light, pdu_loss, ups_loss, light, P_pdu_in

    def air_side_rejected_W(self, P_it_W: ArrayLike, T_wb_K: ArrayLike | None = None) -> NDArray[np.float64] | None:
        """Heat the air side puts into the cooling towers' water: coil load, chiller and pump power (issue 22 item 4).

        Parameters
        ----------
        P_it_W : ArrayLike
            IT power (rack input) [W], shape (n,).
        T_wb_K : ArrayLike | None
            Outdoor wet-bulb [K], shape (n,).

        Returns
        -------
        ndarray or None
            ``Q_air + P_fan + P_chw`` [W] (the CRAH coil's heat, all of the chilled-water power, through the chiller
            or the economiser to the towers), shape (n,); None without an air side.
        """
        if self.spec.air_side is None:
            return None
        q_air = self._air_heat(np.asarray(P_it_W, dtype=float))
        fan, chw = self._air_side(q_air, T_wb_K)
        return q_air + fan + chw

    def air_side_inputs(self, plant: object, P_it_W: ArrayLike, T_wb_K: ArrayLike | None = None) -> dict:
        """Keyword inputs of a plant's steady state for the air side's heat into its towers.

        Parameters
        ----------
        plant : object
            A plant; only one with ``uses_air_side_heat`` takes the heat.
        P_it_W : ArrayLike
            IT power (rack input) [W], shape (n,).
        T_wb_K : ArrayLike | None
            Outdoor wet-bulb [K], shape (n,).

        Returns
        -------
        dict
            ``{"Q_air_side_W": ndarray (n,)}`` (:meth:`air_side_rejected_W`) for such a plant on a facility with an
            air side, else empty.
        """
        if not getattr(plant, "uses_air_side_heat", False):
            return {}
        q_air = self.air_side_rejected_W(P_it_W, T_wb_K)
        return {} if q_air is None else {"Q_air_side_W": q_air}

    def describe(self) -> str:
        """One line per stage (counted or left out), for the run summary and the HDF5 attributes."""
        sp = self.spec
        lines = []
        for s in STAGES:
            st = getattr(sp, s)
            size = ""
            if s == "transformer" and st is not None:
                size = f"{self._tr_count} x {st.rated_VA / 1e6:g} MVA, "
            elif s == "switchgear" and st is not None:
                R = st.rated_W if st.rated_W is not None else sp.design_load_W
                size = f"rated {R / 1e6:.3g} MW, " if R is not None else ""
            lines.append(f"{s}: {'counted' if st is not None else 'left out'}"
                         + (f" ({size}{st.source})" if st is not None else ""))
        lines.append(f"heat to air: {100 * (1 - self.liquid_fraction):.1f} % of rack input"
                     + ("" if sp.air_side is not None or self.liquid_fraction == 1.0
                        else " (no air side in the description: its removal is not counted)"))
        return "\n".join(lines)


def pue_category(info: dict | None) -> str:
    """What the run's PUE counts, in The Green Grid's terms (one line).

    The Green Grid PUE categories (Usage and Public Reporting Guidelines for PUE/DCiE, 2009; WP49, 2012) differ by
    where IT energy is measured: category 1 at the UPS output, 2 at the PDU output, 3 at the IT equipment input;
    total facility energy is always measured at the utility input, over 12 months. hpctwin measures IT energy at
    the rack input (category-3 point); the facility total reaches the utility input only when the electrical chain
    (transformer, switchgear, UPS, PDU) is counted. A run shorter than a year is a category-3 *measurement* over
    its window, not an annual category-3 PUE.
    """
    counted = list((info or {}).get("facility_stages_counted", []))
    absent = list((info or {}).get("facility_stages_absent", []))
    head = "category 3 (IT at rack input, facility at utility input)"
    if {"transformer", "switchgear"} - set(counted):
        head = "category-3 IT point, facility total short of the utility input"
    return f"{head}; counted: liquid plant{''.join(', ' + c for c in counted)}" + (
        f"; left out: {', '.join(absent)}" if absent else "")
