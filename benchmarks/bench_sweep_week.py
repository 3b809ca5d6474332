"""Benchmark: a planner's sweep of 100 scenarios, one week each, under ``mpiexec -n 2`` (issue 16 item 9 target).

The study: the Theta-like system, the ALCF Theta 2022 trace from day 181 for 7 days, cooling at 15 s, output every
60 s; 4 scheduling choices (FCFS, EASY, SJF + EASY, largest-first + first-fit) x 25 constant wet-bulbs (-6 to
30 degC, 1.5 K apart) = 100 scenarios. Each variant of ``--variants`` runs the whole study in the same invocation,
``--repeat`` times:

* ``fmu``: the cooling FMU (``cooling.model = "fmu"``) with ``cooling.stepping = "fixed"`` (the default path);
* ``fmu-adaptive``: the FMU with adaptive plant stepping;
* ``fast``: the quasi-steady plant (``cooling.model = "fast"``, :mod:`cooling_fmu.quasisteady`) for all 100, then
  the ``--refine-top`` best in facility energy re-run with the FMU (``hpctwin sweep --refine-top K``): the
  multi-fidelity workflow.

Prints the median wall time of the whole ``hpctwin sweep`` process (start-up, plant from the cache, every scenario
file and summary.h5) and the ratio to the first variant, and for ``fast`` the fast-vs-FMU relative error of the
re-run scenarios (from summary.h5 ``/refine``). Target (issue 16): median under 60 s.

    .venv/bin/python benchmarks/bench_sweep_week.py [--ranks 2] [--repeat 1] [--variants fmu fast] [--refine-top 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import h5py
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
MPIEXEC = str(Path(PY).parent / "mpiexec")

STUDY = """name = "bench-sweep-week"
[base]
system = "theta"
trace = {{ window_start_days = 181.0, window_days = 7.0 }}
cooling = {{ step_s = 15.0, weather = "constant", stepping = "{stepping}", model = "{model}" }}
output = {{ interval_s = 60.0, progress = false }}

[axes]
"scheduler.policy" = ["fcfs", "easy", "sjf", "largest"]
"cooling.T_wb_C" = [{wb}]
"""

VARIANTS = {"fmu": ("fixed", "fmu"), "fmu-adaptive": ("adaptive", "fmu"), "fast": ("fixed", "fast")}


def main() -> None:
    """Command line (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--variants", nargs="+", default=["fmu", "fast"], choices=tuple(VARIANTS))
    ap.add_argument("--refine-top", type=int, default=5, help="FMU re-runs after the fast pass (0: none)")
    a = ap.parse_args()
    wb = ", ".join(f"{-6.0 + 1.5 * i:g}" for i in range(25))
    res, errors = {}, {}
    with tempfile.TemporaryDirectory(prefix="bench-sweep-week-") as tmp:
        for variant in a.variants:
            stepping, model = VARIANTS[variant]
            study = Path(tmp) / f"study-{variant}.toml"
            study.write_text(STUDY.format(stepping=stepping, model=model, wb=wb), encoding="utf-8")
            walls = []
            for r in range(a.repeat):
                out = Path(tmp) / f"out-{variant}-{r}"
                cmd = [MPIEXEC, "-n", str(a.ranks), PY, "-m", "mpi4py", "-m", "scheduler_sim", "sweep", str(study),
                       "--out", str(out)]
                if model == "fast" and a.refine_top > 0:
                    cmd += ["--refine-top", str(a.refine_top), "--refine-by", "E_facility_J"]
                t0 = time.perf_counter()
                p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
                walls.append(time.perf_counter() - t0)
                if p.returncode != 0:
                    raise SystemExit(f"sweep failed ({p.returncode}):\n{p.stderr[-3000:]}")
                n_files = len(list(out.glob("*.h5")))
                if model == "fast" and a.refine_top > 0:
                    with h5py.File(out / "summary.h5") as f:
                        g = f["refine"]
                        errors[variant] = {m: np.asarray(g[f"{m}_rel_error"][()], dtype=float)
                                           for m in ("E_cooling_J", "PUE", "E_facility_J", "peak_P_facility_W")}
            res[variant] = (statistics.median(walls), n_files)
    first = res[a.variants[0]][0]
    print(f"Theta day 181, 7 days, 100 scenarios, mpiexec -n {a.ranks}; median of {a.repeat} run(s)")
    for variant, (w, n) in res.items():
        extra = f" + FMU re-run of the top {a.refine_top}" if VARIANTS[variant][1] == "fast" and a.refine_top else ""
        print(f"  {variant:13s} {w:7.1f} s wall  {w / first:5.2f}x  ({n} HDF5 files){extra}")
    for variant, errs in errors.items():
        print(f"  {variant}: fast vs FMU on the {len(next(iter(errs.values())))} re-run scenarios (relative error, "
              f"min .. max):")
        for m, e in errs.items():
            print(f"    {m:18s} {np.nanmin(e):+.2e} .. {np.nanmax(e):+.2e}")


if __name__ == "__main__":
    main()
