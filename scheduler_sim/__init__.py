"""hpctwin's scheduler simulator, in layers; each imports only the layers below it (checked by import-linter).

Layers, top to bottom::

    app/        config, runner (one run end to end), sweep (MPI), twin (rollouts), cooling-only output, cli
    analysis/   attribution (job -> PUE), compare (run A vs B), report (figures, HTML)
    io/         hdf5: the run file's writer and readers (docs/output_schema.md)
    serving/    LLM serving engine and its glue to the facility simulation
    kernel/     core (event heap), allocator, simulation (the platform), recorder, faults, metrics, progress
    policies/   the decision interface and the policies (queue orders x backfills, replay)

Below scheduler_sim: power/ (node power, conversion chain), cooling_fmu/ (plant FMU), jobs/ (tables),
dataloaders/ (traces). None of them imports scheduler_sim.

The platform (:mod:`scheduler_sim.kernel.simulation`) runs jobs on nodes and couples the power chain and the
cooling plant; policies (:mod:`scheduler_sim.policies`) only decide.
"""

import importlib
import importlib.abc
import importlib.util
import sys

__version__ = "0.1.0"

#: Module paths before the split into layers (issue #14) -> where they live now. Kept so that code written against
#: the old paths (branches in flight, user scripts) still imports; new code imports the new paths. To be removed
#: once no branch uses them.
MOVED_MODULES = {
    "scheduler_sim.core": "scheduler_sim.kernel.core",
    "scheduler_sim.allocator": "scheduler_sim.kernel.allocator",
    "scheduler_sim.simulation": "scheduler_sim.kernel.simulation",
    "scheduler_sim.recorder": "scheduler_sim.kernel.recorder",
    "scheduler_sim.faults": "scheduler_sim.kernel.faults",
    "scheduler_sim.metrics": "scheduler_sim.kernel.metrics",
    "scheduler_sim.progress": "scheduler_sim.kernel.progress",
    "scheduler_sim.availability": "scheduler_sim.kernel.availability",
    "scheduler_sim.cachedirs": "jobs.cachedirs",
    "scheduler_sim.hdf5io": "scheduler_sim.io.hdf5",
    "scheduler_sim.attribution": "scheduler_sim.analysis.attribution",
    "scheduler_sim.compare": "scheduler_sim.analysis.compare",
    "scheduler_sim.report": "scheduler_sim.analysis.report",
    "scheduler_sim.report.figures": "scheduler_sim.analysis.report.figures",
    "scheduler_sim.report.catalogue": "scheduler_sim.analysis.report.catalogue",
    "scheduler_sim.cli": "scheduler_sim.app.cli",
    "scheduler_sim.runner": "scheduler_sim.app.runner",
    "scheduler_sim.sweep": "scheduler_sim.app.sweep",
    "scheduler_sim.twin": "scheduler_sim.app.twin",
    "scheduler_sim.config": "scheduler_sim.app.config",
}


class _MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Import finder: an old module path (:data:`MOVED_MODULES`) yields the module object at its new path."""

    def find_spec(self, fullname, path=None, target=None):  # noqa: D102 - importlib protocol
        if fullname not in MOVED_MODULES:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):  # noqa: D102 - importlib protocol
        return importlib.import_module(MOVED_MODULES[spec.name])

    def exec_module(self, module):  # noqa: D102 - importlib protocol; the module already ran at its new path
        sys.modules[module.__spec__.name if module.__spec__ else module.__name__] = module


if not any(isinstance(f, _MovedModuleFinder) for f in sys.meta_path):
    sys.meta_path.insert(0, _MovedModuleFinder())  # before the path finder: one module object per file

if "gymnasium" in sys.modules:  # gymnasium already imported: register hpctwin/Facility-v0 (optional extra `rl`)
    try:
        importlib.import_module("scheduler_sim.app.gym_env")
    except ImportError:  # greenlet (also in `rl`) missing: gymnasium.make then names the missing module
        pass
