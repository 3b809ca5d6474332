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

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

__all__ = [
    "CDUParams",
    "ChillerParams",
    "FacilityParams",
    "PlantParams",
    "PlantParamsError",
    "TowerParams",
    "load_plant_params",
    "plant_names",
]

PLANTS_DIR = Path(__file__).resolve().parent / "plants"

_STRICT = ConfigDict(frozen=True, extra="forbid")


class PlantParamsError(ValueError):
    """A plant description file is missing, unreadable or invalid; the message names the file and field."""


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
    P_pump_sec_nominal_W : float
        Secondary pump electrical power at full flow [W] (>= 0).
    y_pump_sec_min : float
        Minimum secondary flow fraction, dimensionless in (0, 1].
    y_valve_min : float
        Minimum facility-side valve opening (flow fraction), dimensionless in (0, 1].
    T_sec_sup_set_K : float
        Setpoint of the secondary supply temperature to the racks [K].
    valve_Ti_s : float
        Integral time of the valve controller [s] (> 0).
    valve_dT_span_K : float
        Temperature error that moves the valve by its full range in ``valve_Ti_s`` [K] (> 0).
    """

    model_config = _STRICT
    Q_flow_nominal_W: float = Field(gt=0, json_schema_extra={"unit": "W"})
    m_flow_sec_nominal_kg_s: float = Field(gt=0, json_schema_extra={"unit": "kg/s"})
    m_flow_fac_nominal_kg_s: float = Field(gt=0, json_schema_extra={"unit": "kg/s"})
    m_water_sec_kg: float = Field(gt=0, json_schema_extra={"unit": "kg"})
    UA_hx_W_K: float = Field(gt=0, json_schema_extra={"unit": "W/K"})
    P_pump_sec_nominal_W: float = Field(ge=0, json_schema_extra={"unit": "W"})
    y_pump_sec_min: float = Field(gt=0, le=1)
    y_valve_min: float = Field(gt=0, le=1)
    T_sec_sup_set_K: float = Field(gt=200, lt=400, json_schema_extra={"unit": "K"})
    valve_Ti_s: float = Field(gt=0, json_schema_extra={"unit": "s"})
    valve_dT_span_K: float = Field(gt=0, json_schema_extra={"unit": "K"})


class FacilityParams(BaseModel):
    """Facility (primary) water loop parameters.

    Attributes
    ----------
    m_water_sup_kg : float
        Water mass of the tower basins and the supply piping (one well-mixed volume) [kg] (> 0).
    m_water_ret_kg : float
        Water mass of the return piping (one well-mixed volume) [kg] (> 0).
    P_pump_nominal_W : float
        Facility pump electrical power at full flow (all CDU valves open) [W] (>= 0).
    """

    model_config = _STRICT
    m_water_sup_kg: float = Field(gt=0, json_schema_extra={"unit": "kg"})
    m_water_ret_kg: float = Field(gt=0, json_schema_extra={"unit": "kg"})
    P_pump_nominal_W: float = Field(ge=0, json_schema_extra={"unit": "W"})


class TowerParams(BaseModel):
    """Evaporative cooling-tower bank: cells with variable-speed fans, leaving-water setpoint control, water use.

    Attributes
    ----------
    n_cells : int
        Number of tower cells (1..64).
    NTU_nominal : float
        Merkel number (number of transfer units) of the bank at full air flow and design water flow (> 0).
    n_merkel : float
        Exponent of the tower characteristic ``NTU ~ (air flow / water flow)^n`` (0 < n <= 1.5).
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
    h_fg_J_kg : float
        Latent heat of vaporisation of water at tower conditions [J/kg] (> 0).
    f_latent : float
        Fraction of the rejected heat that leaves as latent heat (evaporation), in (0, 1].
    cycles_of_concentration : float
        Ratio of dissolved solids in the basin to the make-up water (> 1).
    drift_fraction : float
        Drift loss as a fraction of the circulating water flow, in [0, 0.01].
    """

    model_config = _STRICT
    n_cells: int = Field(ge=1, le=64)
    NTU_nominal: float = Field(gt=0)
    n_merkel: float = Field(gt=0, le=1.5)
    P_fan_cell_nominal_W: float = Field(ge=0, json_schema_extra={"unit": "W"})
    y_fan_min: float = Field(gt=0, le=1)
    T_fac_sup_set_K: float = Field(gt=200, lt=400, json_schema_extra={"unit": "K"})
    fan_k_p: float = Field(ge=0)
    fan_Ti_s: float = Field(gt=0, json_schema_extra={"unit": "s"})
    fan_dT_span_K: float = Field(gt=0, json_schema_extra={"unit": "K"})
    h_fg_J_kg: float = Field(gt=0, json_schema_extra={"unit": "J/kg"})
    f_latent: float = Field(gt=0, le=1)
    cycles_of_concentration: float = Field(gt=1)
    drift_fraction: float = Field(ge=0, le=0.01)


class ChillerParams(BaseModel):
    """Optional trim chiller in series after the towers, for hot weather (economiser switch-over).

    Attributes
    ----------
    enabled : bool
        Whether the plant has a chiller at all.
    Q_flow_max_W : float
        Largest heat the chiller can remove from the facility water [W] (>= 0).
    T_wb_switch_K : float
        Wet-bulb above which the chiller is allowed to run (economiser below it) [K].
    dT_deadband_K : float
        The chiller holds the water it leaves at ``T_fac_sup_set_K + dT_deadband_K`` [K] (>= 0.1), so it only
        trims what the towers at full fan speed cannot do and never fights the fan controller.
    eta_carnot : float
        Fraction of the Carnot COP reached, in (0, 1].
    COP_max : float
        Upper bound of the COP (> 0).
    dT_lift_min_K : float
        Smallest lift used in the Carnot COP [K] (> 0).
    dT_cond_K : float
        Condensing temperature above the wet-bulb (evaporatively cooled condenser) [K] (>= 0).
    """

    model_config = _STRICT
    enabled: bool = False
    Q_flow_max_W: float = Field(default=0.0, ge=0, json_schema_extra={"unit": "W"})
    T_wb_switch_K: float = Field(default=400.0, gt=200, json_schema_extra={"unit": "K"})
    dT_deadband_K: float = Field(default=0.5, ge=0.1, json_schema_extra={"unit": "K"})
    eta_carnot: float = Field(default=0.5, gt=0, le=1)
    COP_max: float = Field(default=10.0, gt=0)
    dT_lift_min_K: float = Field(default=5.0, gt=0, json_schema_extra={"unit": "K"})
    dT_cond_K: float = Field(default=8.0, ge=0, json_schema_extra={"unit": "K"})


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
    cdu, facility, tower, chiller : CDUParams, FacilityParams, TowerParams, ChillerParams
        Component parameters (``chiller`` optional, absent = no chiller).
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
    tower: TowerParams
    chiller: ChillerParams = ChillerParams()

    @model_validator(mode="after")
    def _finite(self) -> PlantParams:
        for section in (self, self.cdu, self.facility, self.tower, self.chiller):
            for key, value in section.__dict__.items():
                if isinstance(value, float) and not math.isfinite(value):
                    raise ValueError(f"{key} must be finite, got {value!r}")
        return self

    @property
    def m_flow_fac_design_kg_s(self) -> float:
        """float: total facility flow with every CDU valve open, ``n_cdu * m_flow_fac_nominal`` [kg/s]."""
        return self.n_cdu * self.cdu.m_flow_fac_nominal_kg_s

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


def load_plant_params(name_or_path: str | Path) -> PlantParams:
    """Load and validate a plant description.

    Parameters
    ----------
    name_or_path : str or pathlib.Path
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
    path = Path(name_or_path)
    if path.suffix != ".toml" and not path.exists():
        path = PLANTS_DIR / f"{name_or_path}.toml"
    if not path.is_file():
        raise PlantParamsError(
            f"{path}: plant description not found (shipped plants: {', '.join(plant_names())})"
        )
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise PlantParamsError(f"{path}: plant description is not UTF-8 text (line {line}, byte {exc.start}); "
                               f"save it as UTF-8") from None
    try:
        data = tomllib.loads(text)
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

    check_design_heat(params, str(path))  # a plant that cannot reject its design heat as liquid water is refused
    return params
