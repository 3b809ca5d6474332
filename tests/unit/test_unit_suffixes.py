"""Names end in their SI unit (issue #27 item 8): variables, arguments, attributes, fields and dataset names use
``_W``, ``_J``, ``_K`` (upper case) and ``_s``; function names stay snake_case (``rectifier_input_w``)."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("scheduler_sim", "power", "cooling_fmu", "dataloaders", "jobs", "experiments")
#: A lower-case power / energy / temperature unit at the end of a name.
LOWER_UNIT = re.compile(r"^[A-Za-z0-9_]*[a-z0-9]_(w|j|k|kw|mw|kj|mj|kwh|mwh)$")
#: Names whose suffix is not a unit, and names an open issue renames (file, name) -> why.
ALLOWED = {
    ("cooling_fmu/components/drycooler.py", "m_w"): "water mass flow (w = water), not watts",
    ("cooling_fmu/components/tower.py", "h_w"): "water enthalpy (w = water), not watts",
    ("jobs/training.py", "top_k"): "the MoE top-k, not kelvin",
    ("scheduler_sim/app/workload_config.py", "top_k"): "the MoE top-k, not kelvin",
    ("scheduler_sim/app/sweep.py", "top_k"): "the refine's top-k scenarios, not kelvin",
    ("scheduler_sim/app/commands.py", "top_k"): "the refine's top-k scenarios, not kelvin",
    ("cooling_fmu/plausibility.py", "_appr_j"): "index j of an approach pair, not joules",
    # the Plant protocol's argument: cooling_fmu/modelica.py and quasisteady.py implement it (plant issue's files)
    **{(f, "heat_w"): "Plant protocol argument, renamed with the plant issue's split"
       for f in ("cooling_fmu/coupling.py", "cooling_fmu/plant.py", "cooling_fmu/modelica.py",
                 "cooling_fmu/quasisteady.py")},
}
#: Module-level functions whose name is not snake_case, (file, name) -> why; the plant issue owns cooling_fmu/.
FUNCTIONS_ALLOWED = {
    **{("cooling_fmu/" + f, name): "cooling_fmu is the plant issue's: renamed with its split"
       for f, name in (("components/chiller.py", "chiller_setpoint_K"), ("components/pipe.py", "stored_energy_J"),
                       ("components/pump.py", "shaft_nominal_W"), ("components/pump.py", "pump_rated_motor_W"),
                       ("components/pump.py", "pump_power_W"), ("components/pump.py", "pump_heat_split_W"),
                       ("components/pump.py", "pump_shaft_heat_W"), ("components/tower.py", "fan_power_W"),
                       ("coupling.py", "supply_rise_K_per_W"), ("modelica.py", "cdu_loop_heat_W"),
                       ("modelica.py", "secondary_supply_K"), ("plausibility.py", "saturation_temperature_K"),
                       ("sizing.py", "supply_temperatures_K"), ("weather.py", "wet_bulb_K"))},
    ("scheduler_sim/io/schema.py", "_M"): "the schema table's row constructor (one letter, as a table column); "
                                          "renamed when issue 28 item 1 merges the metric catalogue into the table",
}
SNAKE = re.compile(r"^_{0,2}[a-z][a-z0-9_]*$")


def _function_names(tree: ast.AST) -> set[str]:
    return {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def lower_unit_names(path: Path, rel: str, functions: frozenset[str] = frozenset()) -> list[tuple[int, str]]:
    """(line, name) of every variable, argument, attribute, field or string constant ending in a lower-case unit
    that is not a function name (of this file or ``functions``: ``__all__`` lists name functions) nor allowed."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    funcs = _function_names(tree) | functions
    out = []
    for n in ast.walk(tree):
        names: list[str] = []
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            names = [a.arg for a in n.args.args + n.args.kwonlyargs + n.args.posonlyargs]
        elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            names = [n.id]
        elif isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store):
            names = [n.attr]
        elif isinstance(n, ast.Constant) and isinstance(n.value, str):
            names = [n.value]
        for name in names:
            if LOWER_UNIT.match(name) and name not in funcs and (rel, name) not in ALLOWED:
                out.append((n.lineno, name))
    return out


def test_no_lower_case_unit_suffix_in_the_product_packages():
    paths = [p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))]
    functions = frozenset().union(*(_function_names(ast.parse(p.read_text(encoding="utf-8"))) for p in paths))
    assert "rectifier_input_w" in functions  # function names keep their snake case
    bad = []
    for path in paths:
        rel = path.relative_to(ROOT).as_posix()
        bad += [f"{rel}:{line}: {name}" for line, name in lower_unit_names(path, rel, functions)]
    assert not bad, "names ending in a lower-case unit (use _W, _J, _K):\n" + "\n".join(bad)


def test_the_check_finds_a_lower_case_unit_and_spares_function_names(tmp_path):
    src = ("__all__ = ['rectifier_input_w']\n"
           "def rectifier_input_w(p_out_W, loss_w=0.0):\n"
           "    heat_k = 1.0\n"
           "    self_P_W = 2.0\n"
           "    d = {'energy_j': 3.0, 'E_J': 4.0}\n"
           "    return p_out_W\n")
    f = tmp_path / "m.py"
    f.write_text(src)
    assert sorted(name for _, name in lower_unit_names(f, "m.py")) == ["energy_j", "heat_k", "loss_w"]


def test_every_allowed_name_still_exists():
    # an allowance for a name that is gone must go too (the list shrinks)
    for (rel, name) in ALLOWED:
        text = (ROOT / rel).read_text(encoding="utf-8")
        assert re.search(rf"\b{re.escape(name)}\b", text), (rel, name)


def module_functions_not_snake_case(path: Path, rel: str) -> list[tuple[int, str]]:
    """(line, name) of every module-level function of ``path`` whose name is not snake_case, allowances aside."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [(n.lineno, n.name) for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            and not SNAKE.match(n.name) and (rel, n.name) not in FUNCTIONS_ALLOWED]


def test_module_functions_are_snake_case_with_a_lower_case_unit():
    bad = []
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            bad += [f"{rel}:{line}: {name}" for line, name in module_functions_not_snake_case(path, rel)]
    assert not bad, "functions are snake_case, their unit lower case (peak_it_w, not peak_it_W):\n" + "\n".join(bad)


def test_the_function_check_finds_an_upper_case_unit(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("def peak_it_W(s):\n    return s\ndef peak_it_w(s):\n    return s\n"
                 "class C:\n    def max_W(self):\n        return 1\n")
    assert module_functions_not_snake_case(f, "m.py") == [(1, "peak_it_W")]  # methods (field-like) are not checked


def test_every_allowed_function_still_exists():
    for (rel, name) in FUNCTIONS_ALLOWED:
        assert re.search(rf"^def {re.escape(name)}\(", (ROOT / rel).read_text(encoding="utf-8"), re.M), (rel, name)
