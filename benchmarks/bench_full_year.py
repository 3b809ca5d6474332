"""Benchmark: the full year of the embedded ALCF Theta 2022 trace with the cooling FMU.

Prints wall time, simulated-time / wall-time ratio, events per second, cooling steps per second and peak memory
(ru_maxrss) for each policy, as medians over --repeat runs measured in this one process. Target (issue 2): the
full year in under 120 s on a 2-core machine.

    python benchmarks/bench_full_year.py [--policy easy] [--repeat 1] [--no-cooling]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time

from scheduler_sim.app.config import RunConfig
from scheduler_sim.app.runner import run_one


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--policy", action="append", help="policy (repeatable; default easy)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per policy (median reported)")
    ap.add_argument("--no-cooling", action="store_true", help="scheduler + power chain only")
    ap.add_argument("--step", type=float, default=15.0, help="cooling step [s]")
    a = ap.parse_args()
    policies = a.policy or ["easy"]
    print(f"{'policy':8s} {'cooling':8s} {'wall s':>8s} {'sim/wall':>10s} {'events':>8s} {'events/s':>10s} "
          f"{'steps':>9s} {'steps/s':>10s} {'PUE':>7s}")
    for pol in policies:
        cfg = RunConfig().with_overrides({
            "name": f"bench-{pol}", "scheduler.policy": pol, "trace.window_start_days": 0.0,
            "trace.window_days": 366.0, "cooling.enabled": not a.no_cooling, "cooling.step_s": a.step,
            "output.interval_s": max(60.0, a.step), "output.progress": False})
        walls = []
        for _ in range(a.repeat):
            t0 = time.perf_counter()
            r = run_one(cfg, None, progress=False)
            walls.append(time.perf_counter() - t0)
        w = statistics.median(walls)
        ev = r.info["events"]
        steps = r.info["cooling_steps"]
        print(f"{pol:8s} {'off' if a.no_cooling else 'FMU':8s} {w:8.1f} {r.summary['duration_s'] / w:10.0f} "
              f"{ev:8d} {ev / w:10.0f} {steps:9d} {steps / w:10.0f} {r.summary['PUE']:7.4f}")
    print(f"peak memory (ru_maxrss): {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
