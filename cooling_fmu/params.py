"""Typed cooling-plant descriptions loaded from TOML (``cooling_fmu/plants/<name>.toml``).

A plant description is data, not code: :func:`cooling_fmu.modelica.generate_plant_modelica` turns a
:class:`PlantParams` into one flat Modelica model. All values are SI; field names carry the unit as a suffix.
"""

from __future__ import annotations

import math
import tomllib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

__all__ = [
    "CDUParams",
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
        Design heat per CDU [W] (> 0).
    m_flow_sec_nominal_kg_s : float
        Secondary (rack-side) mass flow at full pump speed [kg/s] (> 0).
    m_flow_fac_nominal_kg_s : float
        Facility-side mass flow through one CDU heat exchanger, valve fully open [kg/s] (> 0).
    m_water_sec_kg : float
        Water mass of one secondary loop, its thermal mass [kg] (> 0).
    eps_hx : float
        Heat-exchanger effectiveness, dimensionless in (0, 1].
    P_pump_sec_nominal_W : float
        Secondary pump electrical power at full flow [W] (>= 0).
    y_pump_sec_min : float
        Minimum secondary flow fraction, dimensionless in (0, 1].
    y_valve_fac_min : float
        Minimum facility-side flow fraction, dimensionless in (0, 1].
    """

    model_config = _STRICT
    Q_flow_nominal_W: float = Field(gt=0, json_schema_extra={"unit": "W"})
    m_flow_sec_nominal_kg_s: float = Field(gt=0, json_schema_extra={"unit": "kg/s"})
    m_flow_fac_nominal_kg_s: float = Field(gt=0, json_schema_extra={"unit": "kg/s"})
    m_water_sec_kg: float = Field(gt=0, json_schema_extra={"unit": "kg"})
    eps_hx: float = Field(gt=0, le=1)
    P_pump_sec_nominal_W: float = Field(ge=0, json_schema_extra={"unit": "W"})
    y_pump_sec_min: float = Field(gt=0, le=1)
    y_valve_fac_min: float = Field(gt=0, le=1)


class FacilityParams(BaseModel):
    """Facility water loop parameters.

    Attributes
    ----------
    m_water_kg : float
        Water mass of the facility loop (pipes, basins), its thermal mass [kg] (> 0).
    P_pump_nominal_W : float
        Facility pump electrical power at full flow (all CDU valves open) [W] (>= 0).
    """

    model_config = _STRICT
    m_water_kg: float = Field(gt=0, json_schema_extra={"unit": "kg"})
    P_pump_nominal_W: float = Field(ge=0, json_schema_extra={"unit": "W"})


class TowerParams(BaseModel):
    """Evaporative cooling-tower bank parameters.

    Attributes
    ----------
    approach_K : float
        Leaving-water temperature minus wet-bulb [K] (>= 0).
    Q_flow_nominal_W : float
        Design heat rejection, reached at full fan speed [W] (> 0).
    P_fan_nominal_W : float
        Electrical power of all fans at full speed [W] (>= 0).
    y_fan_min : float
        Minimum fan speed fraction, dimensionless in [0, 1].
    """

    model_config = _STRICT
    approach_K: float = Field(ge=0, json_schema_extra={"unit": "K"})
    Q_flow_nominal_W: float = Field(gt=0, json_schema_extra={"unit": "W"})
    P_fan_nominal_W: float = Field(ge=0, json_schema_extra={"unit": "W"})
    y_fan_min: float = Field(ge=0, le=1)


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
    T_ref_K : float
        Reference temperature of the stored-energy output [K] (> 0).
    cdu, facility, tower : CDUParams, FacilityParams, TowerParams
        Component parameters.
    """

    model_config = _STRICT
    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    description: str = ""
    n_cdu: int = Field(ge=1, le=1000)
    cp_water_J_kgK: float = Field(gt=0, json_schema_extra={"unit": "J/(kg K)"})
    T_ref_K: float = Field(gt=0, json_schema_extra={"unit": "K"})
    cdu: CDUParams
    facility: FacilityParams
    tower: TowerParams

    @model_validator(mode="after")
    def _finite(self) -> PlantParams:
        for section in (self, self.cdu, self.facility, self.tower):
            for key, value in section.__dict__.items():
                if isinstance(value, float) and not math.isfinite(value):
                    raise ValueError(f"{key} must be finite, got {value!r}")
        return self


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
        If the file does not exist, is not valid TOML, or a field is missing, unknown or out of range;
        the message names the file and the dotted field path (e.g. ``cdu.eps_hx``).
    """
    path = Path(name_or_path)
    if path.suffix != ".toml" and not path.exists():
        path = PLANTS_DIR / f"{name_or_path}.toml"
    if not path.is_file():
        raise PlantParamsError(
            f"{path}: plant description not found (shipped plants: {', '.join(plant_names())})"
        )
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise PlantParamsError(f"{path}: not valid TOML: {exc}") from exc
    try:
        return PlantParams.model_validate(data)
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            field = ".".join(str(p) for p in err["loc"]) or "<root>"
            lines.append(f"{path}: field '{field}': {err['msg']} (got {err.get('input')!r})")
        raise PlantParamsError("\n".join(lines)) from exc
