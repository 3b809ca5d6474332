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
file and summary.h5) and the ratio to the first variant, the median wall time of one scenario (fast and FMU
re-runs apart, from summary.h5's ``sweep_timing_json``), and for ``fast`` the fast-vs-FMU relative error of the
re-run scenarios (from summary.h5 ``/refine``). Target (issue 16, kept by issue 26): median under 60 s.

``--wet-bulbs K`` keeps the first K of the 25 wet-bulbs (4 K scenarios), for a loaded machine; the line then also
gives the figure scaled to 100 scenarios (the fast phase scaled by 100 / (4 K), the FMU re-runs as measured: the
scaling is stated, not hidden). ``--root OLD`` runs the same study with an older checkout too (its ``scheduler_sim``
first on the path, this venv's Python and MPI), interleaved, and prints new / old.

    .venv/bin/python benchmarks/bench_sweep_week.py [--ranks 2] [--repeat 1] [--variants fmu fast] [--refine-top 5]
                                                    [--wet-bulbs 25] [--root OLD_CHECKOUT]
"""

from __future__ import annotations

import argparse
import json
import os
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
    ap.add_argument("--wet-bulbs", type=int, default=25, help="the first K of the 25 wet-bulbs (4 K scenarios)")
    ap.add_argument("--root", type=Path, help="an older checkout to time beside this one")
    a = ap.parse_args()
    k = max(1, min(25, a.wet_bulbs))
    wb = ", ".join(f"{-6.0 + 1.5 * i:g}" for i in range(k))
    roots = [("this", ROOT)] + ([("old", a.root.resolve())] if a.root else [])
    res, errors, scen = {}, {}, {}
    with tempfile.TemporaryDirectory(prefix="bench-sweep-week-") as tmp:
        for variant in a.variants:
            stepping, model = VARIANTS[variant]
            study = Path(tmp) / f"study-{variant}.toml"
            study.write_text(STUDY.format(stepping=stepping, model=model, wb=wb), encoding="utf-8")
            walls: dict[str, list[float]] = {n: [] for n, _ in roots}
            for r in range(a.repeat):
                for name, root in roots:
                    out = Path(tmp) / f"out-{name}-{variant}-{r}"
                    cmd = [MPIEXEC, "-n", str(a.ranks), PY, "-m", "mpi4py", "-m", "scheduler_sim", "sweep",
                           str(study), "--out", str(out)]
                    if model == "fast" and a.refine_top > 0:
                        cmd += ["--refine-top", str(a.refine_top), "--refine-by", "E_facility_J"]
                    env = dict(os.environ, PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))
                    t0 = time.perf_counter()
                    p = subprocess.run(cmd, cwd=root, capture_output=True, text=True, check=False, env=env)
                    walls[name].append(time.perf_counter() - t0)
                    if p.returncode != 0:
                        raise SystemExit(f"sweep from {root} failed ({p.returncode}):\n{p.stderr[-3000:]}")
                    n_files = len(list(out.glob("*.h5")))
                    with h5py.File(out / "summary.h5") as f:
                        per = json.loads(f.attrs["sweep_timing_json"])["scenario_wall_s"]
                        if model == "fast" and a.refine_top > 0 and name == "this":
                            g = f["refine"]
                            errors[variant] = {m: np.asarray(g[f"{m}_rel_error"][()], dtype=float)
                                               for m in ("E_cooling_J", "PUE", "E_facility_J", "peak_P_facility_W")}
                    scen.setdefault((name, variant), []).append(per)
            for name, _ in roots:
                res[(name, variant)] = (statistics.median(walls[name]), n_files)
    first = res[("this", a.variants[0])][0]
    n_sc = 4 * k
    print(f"Theta day 181, 7 days, {n_sc} scenarios (4 policies x {k} wet-bulbs), mpiexec -n {a.ranks}; median of "
          f"{a.repeat} run(s)")
    for (name, variant), (w, n) in res.items():
        extra = f" + FMU re-run of the top {a.refine_top}" if VARIANTS[variant][1] == "fast" and a.refine_top else ""
        per = scen[(name, variant)][-1]
        fast_w = [v for s, v in per.items() if not s.endswith("_fmu")]
        fmu_w = [v for s, v in per.items() if s.endswith("_fmu")]
        line = (f"  {name:4s} {variant:13s} {w:7.1f} s wall  {w / first:5.2f}x  ({n} HDF5 files){extra}; median "
                f"scenario {statistics.median(fast_w):.1f} s" + (f", FMU re-run {statistics.median(fmu_w):.1f} s"
                                                                  if fmu_w else ""))
        if n_sc < 100:  # scaled: the scenario phase x 100 / n, the re-runs (and start-up) as measured
            rerun = sum(fmu_w) / a.ranks
            line += f"; scaled to 100 scenarios ~{(w - rerun) * 100 / n_sc + rerun:.0f} s"
        print(line)
    if a.root:
        for variant in a.variants:
            print(f"  new / old {variant}: {res[('this', variant)][0] / res[('old', variant)][0]:.2f} (whole sweep)")
    for variant, errs in errors.items():
        print(f"  {variant}: fast vs FMU on the {len(next(iter(errs.values())))} re-run scenarios (relative error, "
              f"min .. max):")
        for m, e in errs.items():
            print(f"    {m:18s} {np.nanmin(e):+.2e} .. {np.nanmax(e):+.2e}")


if __name__ == "__main__":
    main()
