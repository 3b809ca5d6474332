"""Cooling FMU benchmark: build time and per-step cost for 25 and 257 CDUs (Frontier-like plant, 15 s steps).

Run from the repository root: ``python benchmarks/bench_cooling.py``. Prints the FMU build time (fresh cache:
rumoca codegen + dependency re-ordering + gcc + validation), the per-step cost of ``CoolingPlant.run`` and the
real-time factor ``step_s / cost`` (acceptance: >= 1,000x for 257 CDUs at 15 s).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from cooling_fmu.params import load_plant_params  # noqa: E402
from cooling_fmu.plant import CoolingPlant  # noqa: E402


def main() -> None:
    """Print build time, per-step cost and real-time factor for 25 and 257 CDUs."""
    base = load_plant_params("frontier")
    step = 15.0
    for n in (25, 257):
        p = base.model_copy(update={"n_cdu": n, "name": "frontier_bench"})
        with tempfile.TemporaryDirectory() as cache:
            t = time.perf_counter()
            plant = CoolingPlant(p, step_s=step, cache_dir=cache)
            build = time.perf_counter() - t
            with plant:
                rng = np.random.default_rng(0)
                m = 20_000 if n < 100 else 5_000
                q = p.cdu.Q_flow_nominal_W * rng.uniform(0.3, 1.0, size=(m, n))
                tw = np.full(m, 288.0)
                plant.initialize(q[0], 288.0)
                t = time.perf_counter()
                plant.run(q, tw)
                cost = (time.perf_counter() - t) / m
        print(f"{n:4d} CDUs: build {build:6.2f} s, {len(plant.output_names)} outputs, {cost * 1e6:8.1f} us/step, "
              f"{step / cost:12,.0f}x real time at {step:g} s steps")


if __name__ == "__main__":
    main()
