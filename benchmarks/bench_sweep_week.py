"""Benchmark: a planner's sweep of 100 scenarios, one week each, under ``mpiexec -n 2`` (issue 16 item 9 target).

The study: the Theta-like system, the ALCF Theta 2022 trace from day 181 for 7 days, cooling FMU at 15 s, output
every 60 s; 4 scheduling choices (FCFS, EASY, SJF + EASY, largest-first + first-fit) x 25 constant wet-bulbs
(-6 to 30 degC, 1.5 K apart) = 100 scenarios. Run with ``cooling.stepping`` = each value of ``--stepping``, each
in the same invocation, ``--repeat`` times; prints the median wall time of the whole ``hpctwin sweep`` process
(start-up, FMU from the cache, every scenario file and summary.h5) and the ratio to the first stepping. Target
(issue 16): median under 60 s.

    .venv/bin/python benchmarks/bench_sweep_week.py [--ranks 2] [--repeat 1] [--stepping fixed adaptive]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
MPIEXEC = str(Path(PY).parent / "mpiexec")

STUDY = """name = "bench-sweep-week"
[base]
system = "theta"
trace = {{ window_start_days = 181.0, window_days = 7.0 }}
cooling = {{ step_s = 15.0, weather = "constant", stepping = "{stepping}" }}
output = {{ interval_s = 60.0, progress = false }}

[axes]
"scheduler.policy" = ["fcfs", "easy", "sjf", "largest"]
"cooling.T_wb_C" = [{wb}]
"""


def main() -> None:
    """Command line (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--stepping", nargs="+", default=["fixed", "adaptive"], choices=("fixed", "adaptive"))
    a = ap.parse_args()
    wb = ", ".join(f"{-6.0 + 1.5 * i:g}" for i in range(25))
    res = {}
    with tempfile.TemporaryDirectory(prefix="bench-sweep-week-") as tmp:
        for stepping in a.stepping:
            study = Path(tmp) / f"study-{stepping}.toml"
            study.write_text(STUDY.format(stepping=stepping, wb=wb), encoding="utf-8")
            walls = []
            for r in range(a.repeat):
                out = Path(tmp) / f"out-{stepping}-{r}"
                cmd = [MPIEXEC, "-n", str(a.ranks), PY, "-m", "mpi4py", "-m", "scheduler_sim", "sweep", str(study),
                       "--out", str(out)]
                t0 = time.perf_counter()
                p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
                walls.append(time.perf_counter() - t0)
                if p.returncode != 0:
                    raise SystemExit(f"sweep failed ({p.returncode}):\n{p.stderr[-3000:]}")
                n_files = len(list(out.glob("*.h5")))
            res[stepping] = (statistics.median(walls), n_files)
    first = res[a.stepping[0]][0]
    print(f"Theta day 181, 7 days, 100 scenarios, mpiexec -n {a.ranks}; median of {a.repeat} run(s)")
    for stepping, (w, n) in res.items():
        print(f"  cooling.stepping = {stepping:9s} {w:7.1f} s wall  {w / first:5.2f}x  ({n} HDF5 files)")


if __name__ == "__main__":
    main()
