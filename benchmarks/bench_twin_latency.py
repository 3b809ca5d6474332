"""Benchmark: the twin's decision latency with and without cooling in its rollouts, against queue length and horizon.

Theta 2022 from day 181 (``--days`` days), the main run on the fast plant (15 s), the default pool of four
candidates, one process. For each horizon of ``--horizons`` and each rollout cooling of ``--cooling`` (``frozen``:
IT x (1 + the ratio at the decision); ``fast``: the quasi-steady plant and the run's wet-bulb on ``plant_step_s``
steps, ``[scheduler.twin] cooling = "fast"``), the twin decides every ``--period-h`` hours; each decision's wall
time (snapshot, four rollouts, scoring) is binned by the queue length at the decision. ``--arrival-factor`` > 1
thins the inter-arrival times (``trace.arrival_rate_factor``) to reach queues of thousands of jobs. Prints P50 and
P99 per bin, and the load average (latencies are wall times on a shared machine).

    .venv/bin/python benchmarks/bench_twin_latency.py [--days 2] [--horizons 1 6 24] [--cooling frozen fast]
        [--arrival-factor 1] [--period-h 1] [--plant-step 300]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from scheduler_sim.app.config import RunConfig
from scheduler_sim.app.runner import run_one

BINS = (0, 50, 100, 500, 1000, 2000, 5000, 10 ** 9)


def main() -> None:
    """Command line (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--days", type=float, default=2.0)
    ap.add_argument("--horizons", type=float, nargs="+", default=[1.0, 6.0, 24.0], help="hours")
    ap.add_argument("--cooling", nargs="+", default=["frozen", "fast"], choices=["frozen", "fast"])
    ap.add_argument("--arrival-factor", type=float, default=1.0)
    ap.add_argument("--period-h", type=float, default=1.0)
    ap.add_argument("--plant-step", type=float, default=300.0, help="rollout cooling step [s]")
    a = ap.parse_args()
    print(f"twin latency: Theta 2022 day 181 + {a.days:g} d, arrival factor {a.arrival_factor:g}, period "
          f"{a.period_h:g} h, pool of 4, main run on the fast plant; load average {os.getloadavg()[0]:.1f}")
    print(f"{'cooling':7s} {'horizon':>8s} {'queue':>11s} {'n':>4s} {'P50 [ms]':>9s} {'P99 [ms]':>9s}")
    for h in a.horizons:
        for cooling in a.cooling:
            cfg = RunConfig().with_overrides({
                "trace.window_start_days": 181.0, "trace.window_days": a.days, "cooling.model": "fast",
                "trace.arrival_rate_factor": a.arrival_factor, "scheduler.policy": "twin",
                "scheduler.twin.horizon_s": h * 3600.0, "scheduler.twin.period_s": a.period_h * 3600.0,
                "scheduler.twin.cooling": cooling, "scheduler.twin.plant_step_s": a.plant_step,
                "output.progress": False, "output.max_drain_days": 0.5})
            t0 = time.perf_counter()
            r = run_one(cfg, None, progress=False)
            q = np.array([d[1] for d in r.info["twin_decisions"]])
            lat = np.array(r.info["twin_latency_s"]) * 1e3
            for lo, hi in zip(BINS[:-1], BINS[1:]):
                sel = (q >= lo) & (q < hi)
                if sel.any():
                    label = f"{lo}-{hi}" if hi < 10 ** 9 else f">= {lo}"
                    print(f"{cooling:7s} {h:6g} h {label:>11s} {int(sel.sum()):4d} {np.percentile(lat[sel], 50):9.1f} "
                          f"{np.percentile(lat[sel], 99):9.1f}")
            print(f"{cooling:7s} {h:6g} h {'all':>11s} {len(lat):4d} {np.percentile(lat, 50):9.1f} "
                  f"{np.percentile(lat, 99):9.1f}   (run {time.perf_counter() - t0:.0f} s, max queue {q.max()})",
                  flush=True)


if __name__ == "__main__":
    main()
