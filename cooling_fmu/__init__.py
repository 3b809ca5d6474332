"""Cooling plant of the hpctwin digital twin: Modelica model -> FMI 2.0 FMU (rumoca + gcc) -> fmpy co-simulation.

Public API
----------
load_plant_params, PlantParams
    Typed plant descriptions (``cooling_fmu/plants/*.toml``).
generate_plant_modelica, analytic_steady_state
    The flat Modelica model generated from a description, and its hand-derived steady state.
build_fmu
    Content-hash-cached FMU build.
CoolingPlant
    Facade stepped once per communication step (``step``) or over many steps (``run``).
Weather, load_tmy3, load_epw, default_weather
    Wet-bulb temperature from NREL TMY3 or EnergyPlus EPW weather (psychrolib) or a constant.
Plant, PlantError
    What a facility simulation may rely on (``cooling_fmu.coupling``): the plant protocol, its typed failure
    carrying the outputs of the completed steps, per-CDU output names, exact step averages, temperature rise.
PlantStepError
    Raised when the FMU fails a step (a PlantError); carries the outputs of the completed steps.
run_standalone
    Cooling-only mode driven by a measured IT power series (``cooling_fmu.standalone``); the command line writes
    its result with ``scheduler_sim.app.cooling``.
"""

from .adapter import FMU2CoSimulation, FMUError
from .build import FMUBuildError, build_fmu
from .coupling import Plant, PlantError
from .modelica import analytic_steady_state, generate_plant_modelica, model_name_for
from .params import PlantParams, PlantParamsError, load_plant_params
from .plant import CoolingPlant, PlantStepError
from .weather import Weather, WeatherReport, default_weather, load_epw, load_tmy3

__all__ = [
    "CoolingPlant",
    "FMU2CoSimulation",
    "FMUBuildError",
    "FMUError",
    "Plant",
    "PlantError",
    "PlantParams",
    "PlantParamsError",
    "PlantStepError",
    "Weather",
    "WeatherReport",
    "analytic_steady_state",
    "build_fmu",
    "default_weather",
    "generate_plant_modelica",
    "load_epw",
    "load_plant_params",
    "load_tmy3",
    "model_name_for",
]
