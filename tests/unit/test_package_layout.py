"""The split of scheduler_sim into layers: old module paths still import, as the same module objects."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import scheduler_sim
from scheduler_sim.kernel.simulation import Simulation


@pytest.mark.parametrize("old,new", sorted(scheduler_sim.MOVED_MODULES.items()))
def test_old_module_path_is_the_new_module(old, new):
    assert importlib.import_module(old) is importlib.import_module(new)


def test_old_from_imports_give_the_same_objects():
    hdf5io = importlib.import_module("scheduler_sim.hdf5io")
    OldSimulation = importlib.import_module("scheduler_sim.simulation").Simulation
    assert OldSimulation is Simulation
    assert hdf5io.write_run is importlib.import_module("scheduler_sim.io.hdf5").write_run


def test_lower_packages_do_not_import_scheduler_sim():
    # the same rule import-linter checks in CI (.ci/run, pyproject [tool.importlinter]), at run time
    code = ("import sys, power, cooling_fmu, jobs, dataloaders.registry, cooling_fmu.standalone; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'scheduler_sim'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
