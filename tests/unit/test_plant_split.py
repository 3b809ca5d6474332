"""CoolingPlant split (issue 22 item 10): FMU stepping (cooling_fmu.stepping.FMUStepper) apart from output assembly
(cooling_fmu.plant.PlantIO, CoolingPlant), each class at most 400 lines."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "cooling_fmu"


def _classes(path: Path) -> dict[str, ast.ClassDef]:
    return {n.name: n for n in ast.parse(path.read_text()).body if isinstance(n, ast.ClassDef)}


def test_plant_classes_are_at_most_400_lines():
    sizes = {name: c.end_lineno - c.lineno + 1 for f in ("plant.py", "stepping.py")
             for name, c in _classes(ROOT / f).items()}
    assert {"CoolingPlant", "PlantIO", "FMUStepper"} <= set(sizes)
    assert max(sizes.values()) <= 400, sizes


def test_fmi_calls_live_in_the_stepper_only():
    plant = ast.unparse(_classes(ROOT / "plant.py")["CoolingPlant"])
    for call in ("doStep(", "fmi2DoStep", "hpctwin_run", "setupExperiment(", "enterInitializationMode("):
        assert call not in plant, call
    stepper = ast.unparse(_classes(ROOT / "stepping.py")["FMUStepper"])
    for call in ("doStep(", "fmi2DoStep", "setupExperiment(", "exitInitializationMode("):
        assert call in stepper, call
