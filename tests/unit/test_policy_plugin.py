"""An out-of-tree policy registered by entry point (examples/policy_plugin) runs through the decision interface."""

from __future__ import annotations

import ast
import importlib.metadata
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import make_jobs
from scheduler_sim.kernel.simulation import Simulation, SimulationConfig
from scheduler_sim.policies import registry

PLUGIN = Path(__file__).resolve().parents[2] / "examples" / "policy_plugin"

# 4 nodes: job 0 holds all of them until t = 100 s; then 1 (3 nodes), 2 (1 node), 3 (2 nodes) are queued, 50 s each
ROWS = [(0, 0.0, 4, 100.0, 200.0), (1, 10.0, 3, 50.0, 200.0), (2, 11.0, 1, 50.0, 200.0), (3, 12.0, 2, 50.0, 200.0)]


@pytest.fixture
def plugin(monkeypatch):
    """The example's entry point, as pip would install it (the example folder on sys.path)."""
    monkeypatch.syspath_prepend(str(PLUGIN))
    monkeypatch.setattr(registry.POLICIES, "_entries", dict(registry.POLICIES._entries))
    ep = importlib.metadata.EntryPoint("smallest-first", "hpctwin_smallest_first:SmallestFirst",
                                       registry.ENTRY_POINT_GROUP)
    real = importlib.metadata.entry_points

    def entry_points(**kw):
        return [ep] if kw.get("group") == registry.ENTRY_POINT_GROUP else real(**kw)

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    yield ep
    sys.modules.pop("hpctwin_smallest_first", None)


def _starts(policy, system) -> np.ndarray:
    res = Simulation(make_jobs(ROWS), system, policy, SimulationConfig(window_start_s=0.0, window_s=1e6)).run()
    return res.jobs.sort_values("job_id")["sim_start_s"].to_numpy()


def test_entry_point_policy_is_made_by_name_listed_and_decides(plugin, tiny_system):
    pol = registry.make_policy("smallest-first")
    assert type(pol).__name__ == "SmallestFirst"
    assert ("smallest-first", "smallest jobs first, no backfill (out-of-tree example, examples/policy_plugin)") \
        in registry.policy_catalogue()
    # at t = 100 s the smallest jobs 2 (1 node) and 3 (2 nodes) start; job 1 (3 nodes) waits for them until 150 s
    assert _starts(pol, tiny_system).tolist() == [0.0, 150.0, 100.0, 100.0]
    # FCFS without backfill on the same trace: 1 and 2 start at 100 s, 3 waits until 150 s
    assert _starts("fcfs", tiny_system).tolist() == [0.0, 100.0, 100.0, 150.0]
    with pytest.raises(ValueError, match="no backfill"):
        registry.make_policy("smallest-first", "easy")


def test_a_broken_entry_point_is_one_clear_error(monkeypatch):
    monkeypatch.setattr(registry.POLICIES, "_entries", dict(registry.POLICIES._entries))
    ep = importlib.metadata.EntryPoint("broken", "no_such_module_xyz:P", registry.ENTRY_POINT_GROUP)
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda **kw: [ep])
    with pytest.raises(ValueError, match=r"policy entry point 'broken' = 'no_such_module_xyz:P'.*cannot be loaded"):
        registry.make_policy("broken")


def test_the_example_is_short_and_sees_only_the_decision_interface():
    src = (PLUGIN / "hpctwin_smallest_first.py").read_text()
    assert len(src.splitlines()) <= 30
    mods = {n.module for n in ast.walk(ast.parse(src)) if isinstance(n, ast.ImportFrom)}
    mods |= {a.name for n in ast.walk(ast.parse(src)) if isinstance(n, ast.Import) for a in n.names}
    assert mods == {"scheduler_sim.policies"}
    assert 'smallest-first = "hpctwin_smallest_first:SmallestFirst"' in (PLUGIN / "pyproject.toml").read_text()


def test_no_policy_module_imports_or_receives_the_simulation():
    pol_dir = Path(registry.__file__).parent
    for path in sorted(pol_dir.glob("*.py")):
        tree = ast.parse(path.read_text())
        for n in ast.walk(tree):
            if isinstance(n, (ast.Import, ast.ImportFrom)):
                names = [getattr(n, "module", None) or ""] + [a.name for a in n.names]
                assert not any("kernel" in x or x == "Simulation" for x in names), (path.name, names)
            if isinstance(n, ast.arg) and n.annotation is not None:
                assert "Simulation" not in ast.unparse(n.annotation), (path.name, n.arg)
            if isinstance(n, ast.FunctionDef):
                assert n.name != "attach", path.name
