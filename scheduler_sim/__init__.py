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
import sys

__version__ = "0.1.0"

if "gymnasium" in sys.modules:  # gymnasium already imported: register hpctwin/Facility-v0 (optional extra `rl`)
    try:
        importlib.import_module("scheduler_sim.app.gym_env")
    except ImportError:  # greenlet (also in `rl`) missing: gymnasium.make then names the missing module
        pass
