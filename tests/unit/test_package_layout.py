"""The split of scheduler_sim into layers: only the layered module paths import (no shim)."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import scheduler_sim
from scheduler_sim.kernel.simulation import Simulation


@pytest.mark.parametrize("old", ["scheduler_sim.simulation", "scheduler_sim.hdf5io", "scheduler_sim.cli",
                                 "scheduler_sim.runner", "scheduler_sim.report.figures", "scheduler_sim.cachedirs"])
def test_module_paths_before_the_layers_are_gone(old):
    # no compatibility shim (issue #27 item 6): the paths before the split into layers (issue #14) do not import
    sys.modules.pop(old, None)
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(old)
    assert not hasattr(scheduler_sim, "MOVED_MODULES")


def test_the_layered_paths_import():
    assert importlib.import_module("scheduler_sim.kernel.simulation").Simulation is Simulation
    assert callable(importlib.import_module("scheduler_sim.io.hdf5").write_run)


def test_lower_packages_do_not_import_scheduler_sim():
    # the same rule import-linter checks in CI (.ci/run, pyproject [tool.importlinter]), at run time
    code = ("import sys, power, cooling_fmu, jobs, dataloaders.registry, cooling_fmu.standalone; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'scheduler_sim'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_simulation_takes_no_keyword_catch_all():
    # issue #27 item 6: no **kwargs path into Simulation; its options come through SimulationConfig, and an option
    # passed the old way is refused when the call is bound, before any work
    import inspect

    params = inspect.signature(Simulation.__init__).parameters.values()
    assert not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)
    with pytest.raises(TypeError, match="unexpected keyword argument 'window_s'"):
        Simulation(None, None, "easy", window_s=86400.0)
