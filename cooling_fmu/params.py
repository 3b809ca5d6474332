"""Typed cooling-plant descriptions loaded from TOML (``cooling_fmu/plants/<name>.toml``).

A plant description is data, not code: :func:`cooling_fmu.modelica.generate_plant_modelica` turns a
:class:`PlantParams` into one flat Modelica model. All values are SI; field names carry the unit as a suffix.
The physics each field enters is documented in :mod:`cooling_fmu.modelica`; every shipped TOML says where each
value comes from ("source") or that it is an engineering choice a site should replace ("assumption").
"""

from __future__ import annotations

import math
import tomllib
from pathlib import Path

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from jobs.registry import Registry
from jobs.textfiles import read_utf8, toml_loads

__all__ = [
    "plant_params_path",
    "CDUParams",
    "PumpParams",
    "TowerLoopParams",
    "ChillerParams",
    "FacilityParams",
    "PlantParams",
    "PlantParamsError",
    "TowerParams",
    "DryCoolerSection",
    "load_plant_params",
    "plant_names",
    "plant_registry",
]

PLANTS_DIR = Path(__file__).resolve().parent / "plants"

_STRICT = ConfigDict(frozen=True, extra="forbid")


class PlantParamsError(ValueError):
    """A plant description file is missing, unreadable or invalid; the message names the file and field."""


class PumpParams(BaseModel):
    """A pump's hydraulics: the system curve it works against and its hydraulic efficiency.

    The electrical power at flow fraction ``w`` follows :func:`cooling_fmu.modelica.pump_power_W`: hydraulic power
    ``V_nom w (dp_static + dp_friction w^2)`` (the affinity law with a static term), divided by ``eta_pump`` and by
    the motor and drive efficiency at the motor load (U.S. DOE 2014 motor part-load curve, falling at part load).
    A group of ``n_pumps`` identical pumps in parallel is staged with the flow: ``ceil(w n_pumps)`` run, each at the
    same speed, so each running motor stays nearer its rating (ASHRAE 90.1 sec. 6.5.4 variable-flow hydronic
    systems; the usual N-pump headered arrangement).

    Attributes
    ----------
    dp_static_Pa : float
        Pressure rise the pump must give at any flow [Pa] (>= 0): the lift of an open tower circuit (basin to
        distribution deck) or the differential-pressure set point a controller holds at the loads.
    dp_friction_Pa : float
        Friction pressure drop of the loop at nominal flow [Pa] (>= 0), scaling with the square of the flow.
    eta_pump : float
        Hydraulic (water-to-shaft) efficiency of the pump, in (0, 1]; held constant (pump-curve shape omitted).
    n_pumps : int
        Identical pumps sharing the duty in parallel (1..16, default 1), staged with the flow; the heads and the
        nominal flow are those of the whole group.
    n_pumps_standby : int
        Identical standby pumps beside the duty group (0..4, default 0): idle (no power, no flow) while every duty
        pump runs; one starts when a duty pump fails, so the group still moves its design flow with one pump out
        (N+1 pumps, one standby per group: the usual primary-pump arrangement of ASHRAE Handbook HVAC Systems
        and Equipment ch. 44 and the redundant capacity components of Uptime Institute Tier II-IV; ASSUMPTION:
        neither text could be opened here, ../shared/notes has no site description of its pumps;
        :func:`cooling_fmu.redundancy.n_plus_one`). The running plant and its FMU do not use it.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    dp_static_Pa: float = Field(ge=0, json_schema_extra={"unit": "Pa"})
    dp_friction_Pa: float = Field(ge=0, json_schema_extra={"unit": "Pa"})
    eta_pump: float = Field(gt=0, le=1)
    n_pumps: int = Field(default=1, ge=1, le=16)
    n_pumps_standby: int = Field(default=0, ge=0, le=4)

    @model_validator(mode="after")
    def _some_head(self) -> PumpParams:
        if self.dp_static_Pa + self.dp_friction_Pa <= 0:
            raise ValueError("dp_static_Pa + dp_friction_Pa must be > 0")
        return self

    @property
    def static_fraction(self) -> float:
        """float: ``dp_static / (dp_static + dp_friction)``, the static share of the head at nominal flow."""
        return self.dp_static_Pa / (self.dp_static_Pa + self.dp_friction_Pa)


class CDUParams(BaseModel):
    """Coolant distribution unit (CDU) parameters, identical for every CDU of a plant.

    Attributes
    ----------
    Q_flow_nominal_W : float
        Design heat per CDU [W] (> 0); the secondary pump reaches full speed at this heat.
    m_flow_sec_nominal_kg_s : float
        Secondary (rack-side) mass flow at full pump speed [kg/s] (> 0).
    m_flow_fac_nominal_kg_s : float
        Facility-side mass flow through one CDU heat exchanger, valve fully open [kg/s] (> 0).
    m_water_sec_kg : float
        Water mass of one secondary loop, its thermal mass [kg] (> 0).
    UA_hx_W_K : float
        Overall conductance of the liquid-liquid counterflow plate heat exchanger [W/K] (> 0).
    pump_control : {"constant_flow", "dp"}
        Secondary pump control: ``"constant_flow"`` holds the nominal flow at every load (the pump at a fixed speed,
        as Frontier's CDUs at ~2.9x their minimum safe flow); ``"dp"`` (differential-pressure control) lets the rack
        valves follow the load, ``y_sec = clip(Q / Q_nominal, y_pump_sec_min, 1)``, with the pump holding
        ``pump.dp_static_Pa`` across the racks.
    pump : PumpParams
        Secondary pump hydraulics (head at nominal flow and efficiency).
    y_pump_sec_min : float
        Minimum secondary flow fraction under ``"dp"`` control (minimum pump speed), dimensionless in (0, 1].
    y_valve_min : float
        Minimum facility-side valve opening (flow fraction), dimensionless in (0, 1].
    T_sec_sup_set_K : float
        Setpoint of the secondary supply temperature to the racks [K].
    valve_Ti_s : float
        Integral time of the valve controller [s] (> 0).
    valve_dT_span_K : float
        Temperature error that moves the valve by its full range in ``valve_Ti_s`` [K] (> 0).
    valve_k_ff : float
        Load feed-forward gain of the facility valve, dimensionless in [0, 1]: the opening is ``clip(I + valve_k_ff
        Q / Q_nominal, y_valve_min, 1)`` (:func:`cooling_fmu.components.valve.feedforward_opening`); 0 (default):
        integral control alone.
    """

    model_config = _STRICT
    Q_flow_nominal_W: float = Field(gt=0, json_schema_extra={"unit": "W"})
    m_flow_sec_nominal_kg_s: float = Field(gt=0, json_schema_extra={"unit": "kg/s"})
    m_flow_fac_nominal_kg_s: float = Field(gt=0, json_schema_extra={"unit": "kg/s"})
    m_water_sec_kg: float = Field(gt=0, json_schema_extra={"unit": "kg"})
    UA_hx_W_K: float = Field(gt=0, json_schema_extra={"unit": "W/K"})
    pump_control: Literal["constant_flow", "dp"]
    pump: PumpParams
    y_pump_sec_min: float = Field(gt=0, le=1)
    y_valve_min: float = Field(gt=0, le=1)
    T_sec_sup_set_K: float = Field(gt=200, lt=400, json_schema_extra={"unit": "K"})
    valve_Ti_s: float = Field(gt=0, json_schema_extra={"unit": "s"})
    valve_dT_span_K: float = Field(gt=0, json_schema_extra={"unit": "K"})
    valve_k_ff: float = Field(default=0.0, ge=0, le=1)


class FacilityParams(BaseModel):
    """Facility (primary) water loop parameters.

    Attributes
    ----------
    m_water_sup_kg : float
        Water mass of the supply piping after the intermediate heat exchanger (one well-mixed volume) [kg] (> 0).
    m_water_ret_kg : float
        Water mass of the return piping (one well-mixed volume) [kg] (> 0).
    pump : PumpParams
        Facility (hot-water) pump hydraulics; its nominal flow is every CDU valve open.
    dp_reset : bool
        Differential-pressure set-point reset (default False): the set point ``pump.dp_static_Pa`` is lowered until
        the neediest CDU valve is fully open, i.e. scaled by ``max(dp_reset_min, max_i y_valve_i)^2`` (ASHRAE 90.1
        sec. 6.5.4 / Guideline 36 trim-and-respond reset of hydronic variable-flow systems).
    dp_reset_min : float
        Flow fraction of the neediest branch below which the reset stops lowering the set point, in (0, 1]
        (default 0.3: the set point never falls below 9 % of its design value).
    """

    model_config = _STRICT
    m_water_sup_kg: float = Field(gt=0, json_schema_extra={"unit": "kg"})
    m_water_ret_kg: float = Field(gt=0, json_schema_extra={"unit": "kg"})
    pump: PumpParams
    dp_reset: bool = False
    dp_reset_min: float = Field(default=0.3, gt=0, le=1)


class TowerLoopParams(BaseModel):
    """Tower-water (condenser-water) loop: basin, tower pumps and the intermediate plate heat exchanger (IHX)
    between the open tower water and the closed facility loop.

    Attributes
    ----------
    m_flow_nominal_kg_s : float
        Tower-water flow at full pump speed [kg/s] (> 0).
    w_flow_min : float
        Smallest tower-water flow fraction, in (0, 1]. The tower pumps follow the facility flow fraction
        ``w_cw = max(w_flow_min, m_fac / m_fac_design)``; ``1.0`` means constant flow.
    UA_ihx_W_K : float
        Conductance of the intermediate counterflow plate heat exchanger [W/K] (> 0).
    m_water_basin_kg : float
        Water mass of the tower basins and tower-water piping (one well-mixed volume) [kg] (> 0).
    pump : PumpParams
        Tower pump hydraulics (the open circuit has a real static lift).
    ihx_bypass_below_set_K : float | None
        Winter control (plant v5): an ideal three-way valve on the facility side of the IHX sends facility water
        around it so that the facility supply never falls below ``tower.T_fac_sup_set_K - ihx_bypass_below_set_K``
        [K] (default 0.25 K: below the fan controller's set point, so the fans slow to their floor first and the
        valve never fights them; ASSUMPTION); None = no IHX bypass (plant v4).
    """

    model_config = _STRICT
    m_flow_nominal_kg_s: float = Field(gt=0, json_schema_extra={"unit": "kg/s"})
    w_flow_min: float = Field(gt=0, le=1)
    UA_ihx_W_K: float = Field(gt=0, json_schema_extra={"unit": "W/K"})
    m_water_basin_kg: float = Field(gt=0, json_schema_extra={"unit": "kg"})
    pump: PumpParams
    ihx_bypass_below_set_K: float | None = Field(default=0.25, ge=0, le=10, json_schema_extra={"unit": "K"})


class TowerParams(BaseModel):
    """Evaporative cooling-tower bank: cells with variable-speed fans, leaving-water setpoint control, water use.

    Attributes
    ----------
    n_cells : int
        Number of tower cells (1..64).
    n_cells_standby : int
        Cells of the bank that are standby at design (N+1 redundancy, issue 22 item 8b): the shipped plants size
        ``NTU_nominal`` and the IHX so that ``n_cells - n_cells_standby`` cells hold the design point
        (:func:`cooling_fmu.sizing.size_tower_ntu`, :func:`cooling_fmu.sizing.size_ihx_ua`); 0 (default): every
        cell is needed at design. The running plant uses every cell.
    NTU_nominal : float
        Merkel number ``KaV/L`` of the bank at full air flow and design water flow (> 0). Plant v5 turns it into
        Braun's air-side coefficient ``c = NTU_nominal LG_nominal^n_merkel`` (:func:`cooling_fmu.components.tower.
        braun_coefficients`); the shipped plants size it at ``T_wb_design_K`` and ``approach_design_K`` for all
        the heat the towers reject at design (:func:`cooling_fmu.sizing.size_tower_ntu`).
    n_merkel : float
        Exponent of the tower characteristic ``NTU ~ (air flow / water flow)^n`` (0 < n <= 1.5).
    LG_nominal : float
        Water-to-air mass-flow ratio ``L/G`` of the bank at full fan speed and nominal tower-water flow (> 0);
        gives the air flow of the evaporation balance, ``m_air = y_fan m_cw_nominal / LG_nominal``.
    p_atm_Pa : float
        Site atmospheric pressure [Pa] (> 0), for the humidity ratio of saturated air.
    P_fan_cell_nominal_W : float
        Electrical power of one cell's fan at full speed [W] (>= 0).
    y_fan_min : float
        Minimum speed of a running fan, fraction of full speed in (0, 1].
    T_fac_sup_set_K : float
        Setpoint of the facility supply (tower basin) temperature [K].
    fan_k_p : float
        Proportional gain of the fan controller, air-flow fraction per ``fan_dT_span_K`` of error (>= 0).
    fan_Ti_s : float
        Integral time of the fan controller [s] (> 0); the anti-windup tracking time equals it.
    fan_dT_span_K : float
        Temperature span normalising the fan controller error [K] (> 0).
    cycles_of_concentration : float
        Ratio of dissolved solids in the basin to the make-up water (> 1).
    drift_fraction : float
        Drift loss as a fraction of the circulating water flow, in [0, 0.01].
    T_wb_design_K : float | None
        Design wet-bulb the bank was sized at [K] (the site's 0.4 % value, :func:`cooling_fmu.weather.
        design_conditions`); documentation of the sizing, checked by the tests; None = not stated.
    approach_design_K : float | None
        Approach (leaving water minus wet-bulb) at design heat, design wet-bulb and full fans [K]; None = not stated.
    Q_air_side_design_W : float
        Heat the air side puts into the tower water at design [W] (>= 0; the CRAH coils' load, their fans and the
        chilled-water power, :meth:`power.facility.FacilityOverheads.air_side_rejected_W` of the system at the IT
        power whose liquid share is the plant's design heat; :func:`power.sizing.design_air_side_heat_w`). Part of
        the heat the towers are sized for (:func:`cooling_fmu.sizing.size_tower_ntu`); 0 = no air side.
    T_leaving_min_K : float
        Minimum tower leaving water temperature [K] held by the tower bypass valve (cold-weather capacity
        control: fans at minimum, then water bypassed to the basin), in (273.15, T_fac_sup_set_K). Default
        278.15 K (5 C, ~41 F): SPX Cooling Technologies, "Operating cooling towers in freezing weather" (keep the
        cold water at or above 40 F / 4.4 C) and ASHRAE Handbook HVAC Systems and Equipment 2020 ch. 40 ("Cooling
        towers", cold-weather operation and capacity control).
    """

    model_config = _STRICT
    n_cells: int = Field(ge=1, le=64)
    n_cells_standby: int = Field(default=0, ge=0, le=8)
    NTU_nominal: float = Field(gt=0)
    n_merkel: float = Field(gt=0, le=1.5)
    LG_nominal: float = Field(gt=0, le=10)
    p_atm_Pa: float = Field(gt=30e3, lt=120e3, json_schema_extra={"unit": "Pa"})
    P_fan_cell_nominal_W: float = Field(ge=0, json_schema_extra={"unit": "W"})
    y_fan_min: float = Field(gt=0, le=1)
    T_fac_sup_set_K: float = Field(gt=200, lt=400, json_schema_extra={"unit": "K"})
    fan_k_p: float = Field(ge=0)
    fan_Ti_s: float = Field(gt=0, json_schema_extra={"unit": "s"})
    fan_dT_span_K: float = Field(gt=0, json_schema_extra={"unit": "K"})
    cycles_of_concentration: float = Field(gt=1)
    drift_fraction: float = Field(ge=0, le=0.01)
    T_leaving_min_K: float = Field(default=278.15, gt=273.15, lt=400, json_schema_extra={"unit": "K"})
    T_wb_design_K: float | None = Field(default=None, gt=200, lt=340, json_schema_extra={"unit": "K"})
    approach_design_K: float | None = Field(default=None, gt=0, lt=30, json_schema_extra={"unit": "K"})
    Q_air_side_design_W: float = Field(default=0.0, ge=0, json_schema_extra={"unit": "W"})

    @model_validator(mode="after")
    def _bypass_below_setpoint(self) -> TowerParams:
        # a setpoint at or below freezing is reported by cooling_fmu.plausibility ("not a liquid") instead
        if self.T_fac_sup_set_K > 273.15 and self.T_leaving_min_K >= self.T_fac_sup_set_K:
            raise ValueError(f"T_leaving_min_K ({self.T_leaving_min_K} K) must be below T_fac_sup_set_K "
                             f"({self.T_fac_sup_set_K} K): the tower bypass would fight the fan controller")
        return self


class ChillerParams(BaseModel):
    """Optional trim chiller in series after the towers, for hot weather (economiser switch-over).

    Attributes
    ----------
    enabled : bool
        Whether the plant has a chiller at all.
    Q_flow_max_W : float
        Capacity of the chiller at its reference chiller's rating conditions [W] (>= 0); the available capacity
        follows that chiller's CAPFT curve.
    T_wb_switch_K : float
        Wet-bulb above which the chiller is allowed to run (economiser below it) [K].
    dT_deadband_K : float
        The chiller holds the water it leaves at ``T_fac_sup_set_K + dT_deadband_K`` [K] (>= 0.1), so it only
        trims what the towers at full fan speed cannot do and never fights the fan controller.
    reference : str
        Reference chiller whose EnergyPlus ``Chiller:Electric:EIR`` curves the chiller follows, scaled to
        ``Q_flow_max_W`` (a key of :data:`cooling_fmu.components.chiller.REFERENCE_CHILLERS`).
    """

    model_config = _STRICT
    enabled: bool = False
    Q_flow_max_W: float = Field(default=0.0, ge=0, json_schema_extra={"unit": "W"})
    T_wb_switch_K: float = Field(default=400.0, gt=200, json_schema_extra={"unit": "K"})
    dT_deadband_K: float = Field(default=0.5, ge=0.1, json_schema_extra={"unit": "K"})
    reference: str = Field(default="McQuay_WSC_471kW_5_89COP_Vanes", min_length=1)

    @field_validator("reference")
    @classmethod
    def _known_reference(cls, v: str) -> str:
        from .chiller_records import reference_chiller

        reference_chiller(v)  # ValueError naming the known records
        return v


class DryCoolerSection(BaseModel):
    """Dry-cooler bank of a plant with ``heat_rejection = "dry"`` or ``"hybrid"`` (issue 22 item 6).

    The bank replaces the tower cells on the tower-water (closed, glycol-free ASSUMPTION) loop; its staging,
    fan controller, fan power per unit and minimum fan speed are the ``[tower]`` section's (``n_cells`` counts the
    dry-cooler units, ``P_fan_cell_nominal_W`` is one unit's fan at full speed). Relations:
    :mod:`cooling_fmu.components.drycooler`.

    Attributes
    ----------
    UA_nominal_W_K : float
        Conductance of the whole bank at full fans [W/K] (> 0; :func:`cooling_fmu.components.drycooler.
        size_ua_nominal` sizes it at the design dry-bulb).
    m_air_nominal_kg_s : float
        Air of the whole bank at full fans [kg/s] (> 0).
    n_UA : float
        Exponent of the conductance in the air flow (ASSUMPTION 0.6, the module docstring).
    eps_pad : float
        Saturation effectiveness of the adiabatic pads in [0, 1) (hybrid only; 0 for ``"dry"``).
    T_db_pad_on_K : float
        Dry-bulb above which the pads are wetted [K] (the hybrid's switch-over; dry below it).
    """

    model_config = _STRICT
    UA_nominal_W_K: float = Field(gt=0, json_schema_extra={"unit": "W/K"})
    m_air_nominal_kg_s: float = Field(gt=0, json_schema_extra={"unit": "kg/s"})
    n_UA: float = Field(default=0.6, gt=0, le=1.5)
    eps_pad: float = Field(default=0.0, ge=0, lt=1)
    T_db_pad_on_K: float = Field(default=400.0, gt=200, json_schema_extra={"unit": "K"})


class PlantParams(BaseModel):
    """Complete description of one cooling plant (frozen, validated).

    Attributes
    ----------
    name : str
        Plant name, a valid identifier (used in the Modelica model name).
    description : str
        One-line human description.
    n_cdu : int
        Number of CDUs (>= 1).
    cp_water_J_kgK : float
        Specific heat of water [J/(kg K)] (> 0).
    rho_water_kg_m3 : float
        Density of water used to report water volumes [kg/m3] (> 0).
    T_ref_K : float
        Reference temperature of the stored-energy output [K] (> 0).
    cdu, facility, tower_loop, tower, chiller : CDUParams, FacilityParams, TowerLoopParams, TowerParams, ChillerParams
        Component parameters (``chiller`` optional, absent = no chiller).
    heat_rejection : str
        ``"towers"`` (default: evaporative cells), ``"dry"`` (a dry-cooler bank, no water) or ``"hybrid"`` (the
        dry-cooler bank with adiabatic pads wetted above a dry-bulb switch-over).
    dry_cooler : DryCoolerSection | None
        The dry-cooler bank; required for ``"dry"`` and ``"hybrid"``, refused with ``"towers"``.
    """

    model_config = _STRICT
    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    description: str = ""
    n_cdu: int = Field(ge=1, le=1000)
    cp_water_J_kgK: float = Field(gt=0, json_schema_extra={"unit": "J/(kg K)"})
    rho_water_kg_m3: float = Field(default=997.0, gt=0, json_schema_extra={"unit": "kg/m3"})
    T_ref_K: float = Field(gt=0, json_schema_extra={"unit": "K"})
    cdu: CDUParams
    facility: FacilityParams
    tower_loop: TowerLoopParams
    tower: TowerParams
    chiller: ChillerParams = ChillerParams()
    heat_rejection: Literal["towers", "dry", "hybrid"] = "towers"
    dry_cooler: DryCoolerSection | None = None

    @model_validator(mode="after")
    def _dry_cooler_section(self) -> PlantParams:
        if self.heat_rejection == "towers" and self.dry_cooler is not None:
            raise ValueError("[dry_cooler] is given but heat_rejection is 'towers': set heat_rejection = "
                             "'dry' or 'hybrid', or remove the section")
        if self.heat_rejection != "towers" and self.dry_cooler is None:
            raise ValueError(f"heat_rejection = '{self.heat_rejection}' needs a [dry_cooler] section "
                             "(UA_nominal_W_K, m_air_nominal_kg_s)")
        if self.heat_rejection == "hybrid" and self.dry_cooler.eps_pad <= 0:
            raise ValueError("heat_rejection = 'hybrid' needs dry_cooler.eps_pad > 0 (the adiabatic pads)")
        if self.heat_rejection == "dry" and self.dry_cooler.eps_pad != 0:
            raise ValueError("heat_rejection = 'dry' has no pads: dry_cooler.eps_pad must be 0 (or choose 'hybrid')")
        return self

    @model_validator(mode="after")
    def _finite(self) -> PlantParams:
        for section in (self, self.cdu, self.cdu.pump, self.facility, self.facility.pump, self.tower_loop,
                        self.tower_loop.pump, self.tower, self.chiller):
            for key, value in section.__dict__.items():
                if isinstance(value, float) and not math.isfinite(value):
                    raise ValueError(f"{key} must be finite, got {value!r}")
        return self

    @property
    def m_flow_fac_design_kg_s(self) -> float:
        """float: total facility flow with every CDU valve open, ``n_cdu * m_flow_fac_nominal`` [kg/s]."""
        return self.n_cdu * self.cdu.m_flow_fac_nominal_kg_s

    @property
    def y_sec_floor(self) -> float:
        """float: smallest secondary flow fraction: 1 under ``"constant_flow"``, else ``y_pump_sec_min``."""
        return 1.0 if self.cdu.pump_control == "constant_flow" else self.cdu.y_pump_sec_min

    @property
    def m_air_nominal_kg_s(self) -> float:
        """float: air mass flow of the tower bank at full fan speed, ``m_cw_nominal / LG_nominal`` [kg/s]."""
        return self.tower_loop.m_flow_nominal_kg_s / self.tower.LG_nominal

    @property
    def T_ihx_bypass_K(self) -> float:
        """float: facility supply held by the IHX bypass, ``T_fac_sup_set - ihx_bypass_below_set`` [K]; 0 K (never
        active) without a bypass.
        """
        d = self.tower_loop.ihx_bypass_below_set_K
        return 0.0 if d is None else self.tower.T_fac_sup_set_K - d

    @property
    def y_fan_floor(self) -> float:
        """float: smallest bank air-flow fraction, one cell at minimum speed: ``y_fan_min / n_cells``."""
        return self.tower.y_fan_min / self.tower.n_cells


def plant_names() -> list[str]:
    """List the plant descriptions shipped in ``cooling_fmu/plants``.

    Returns
    -------
    list of str
        Sorted plant names (file stems), e.g. ``["frontier", "theta"]``.
    """
    return sorted(p.stem for p in PLANTS_DIR.glob("*.toml"))


def plant_registry() -> Registry[Path]:
    """The shipped plant descriptions as a :class:`jobs.registry.Registry` (name -> file), for ``hpctwin list``.

    Returns
    -------
    Registry
        One entry per ``cooling_fmu/plants/<name>.toml``, sorted by name, described by the file's ``description``
        (empty when the file has none or cannot be read; :func:`load_plant_params` reports a broken file).
    """
    reg: Registry[Path] = Registry("plant")
    for name in plant_names():
        path = PLANTS_DIR / f"{name}.toml"
        try:
            desc = str(tomllib.loads(path.read_text(encoding="utf-8")).get("description", ""))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            desc = ""
        reg.register(name, path, desc)
    return reg


def plant_params_path(name_or_path: str | Path) -> Path:
    """The plant description file a plant name or path names (a shipped name -> ``cooling_fmu/plants/<name>.toml``).

    Parameters
    ----------
    name_or_path : str | Path
        A ``.toml`` path, an existing file, or a shipped plant name.

    Returns
    -------
    pathlib.Path
        The file (not checked for existence).
    """
    path = Path(name_or_path)
    if path.suffix != ".toml" and not path.exists():
        path = PLANTS_DIR / f"{name_or_path}.toml"
    return path


def load_plant_params(name_or_path: str | Path) -> PlantParams:
    """Load and validate a plant description.

    Parameters
    ----------
    name_or_path : str | Path
        A shipped plant name (``"theta"``, ``"frontier"``) or the path of a TOML file.

    Returns
    -------
    PlantParams
        The frozen, validated description (SI units).

    Raises
    ------
    PlantParamsError
        If the file does not exist, is not UTF-8 or not valid TOML, or a field is missing, unknown or out of range;
        the message names the file and the dotted field path (e.g. ``cdu.UA_hx_W_K``). Also when the plant cannot
        reject its design heat with liquid water (:func:`cooling_fmu.plausibility.check_design_heat`).
    """
    path = plant_params_path(name_or_path)
    if not path.is_file():
        raise PlantParamsError(
            f"{path}: plant description not found (shipped plants: {', '.join(plant_names())})"
        )
    text = read_utf8(path, "plant description", PlantParamsError)
    try:
        data = toml_loads(text, path, "plant description", PlantParamsError)
    except tomllib.TOMLDecodeError as exc:
        raise PlantParamsError(f"{path}: not valid TOML: {exc}") from exc
    try:
        params = PlantParams.model_validate(data)
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            field = ".".join(str(p) for p in err["loc"]) or "<root>"
            lines.append(f"{path}: field '{field}': {err['msg']} (got {err.get('input')!r})")
        raise PlantParamsError("\n".join(lines)) from exc
    from .plausibility import check_design_heat

    # a plant that cannot reject its design heat as liquid water is refused
    check_design_heat(params, str(path), error=PlantParamsError)
    return params
