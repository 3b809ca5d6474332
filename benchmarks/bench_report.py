"""Benchmark: `hpctwin report` on a full-year run (target: under 30 s).

Runs the full year of the embedded ALCF Theta 2022 trace with the cooling FMU first unless --file names an existing
run file, then times the report (all figures as PNG + SVG and the HTML) and prints the time.

    python benchmarks/bench_report.py [--file out/theta-year.h5] [--out DIR]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout, not an installed copy

from scheduler_sim.app.config import load_config  # noqa: E402
from scheduler_sim.analysis.report import make_report  # noqa: E402
from scheduler_sim.app.runner import run_one  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--file", help="existing full-year run file (default: run it into a temporary folder)")
    ap.add_argument("--out", help="report folder (default: a temporary folder)")
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="hpctwin-bench-report-"))
    path = Path(a.file) if a.file else tmp / "theta-year.h5"
    if not path.exists():
        cfg = load_config(None).with_overrides({"trace.window_start_days": 0.0, "trace.window_days": 366.0,
                                                "output.progress": False, "name": "theta-year"})
        t = time.perf_counter()
        run_one(cfg, path, progress=False)
        print(f"full-year run: {time.perf_counter() - t:.1f} s -> {path}")
    t = time.perf_counter()
    html = make_report(path, a.out or tmp / "report")
    wall = time.perf_counter() - t
    print(f"report of {path.name}: {wall:.1f} s (target < 30 s) -> {html}")


if __name__ == "__main__":
    main()
