"""Benchmark: scheduling cost.

1. The full Theta 2022 year with the cooling FMU under conservative backfill and under priority + EASY: wall time,
   events per second, time spent in scheduling passes (target: each under 3 minutes on a 2-core machine).
2. Scheduling-pass cost as the queue grows (synthetic overload): a full Theta-sized machine (4,392 nodes, 800 jobs
   running) and Q queued jobs (Q = 100 ... 5,000, seeded sizes and requested times), one pass per policy, median
   of repeated passes. Conservative backfill recomputes every reservation each pass, so its cost grows fastest.

    python benchmarks/bench_scheduling.py [--skip-year] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from scheduler_sim.app.config import RunConfig
from scheduler_sim.policies import SchedulerView, make_policy
from scheduler_sim.app.runner import run_one

POLICIES = [("fcfs", "conservative"), ("priority", "easy"), ("fcfs", "easy"), ("sjf", "easy")]


def full_year() -> None:
    """Full-year runs with the FMU for conservative and priority + EASY."""
    print("full year of Theta 2022 with the cooling FMU (15 s steps)")
    print(f"{'policy':22s} {'wall s':>8s} {'events':>8s} {'events/s':>10s} {'sched s':>8s} {'passes':>8s} "
          f"{'max queue':>9s} {'mean wait h':>11s}")
    for order, bf in POLICIES[:2]:
        cfg = RunConfig().with_overrides({"name": f"bench-{order}-{bf}", "scheduler.policy": order,
                                          "scheduler.backfill": bf, "trace.window_start_days": 0.0,
                                          "trace.window_days": 366.0, "output.progress": False})
        t0 = time.perf_counter()
        r = run_one(cfg, None, progress=False)
        w = time.perf_counter() - t0
        i = r.info
        print(f"{order + '+' + bf:22s} {w:8.1f} {i['events']:8d} {i['events'] / w:10.0f} "
              f"{i['scheduling_time_s']:8.1f} {i['scheduling_passes']:8d} {i['max_queue_length']:9d} "
              f"{r.summary['mean_wait_s'] / 3600:11.2f}")


def overload_view(n_queue: int, rng: np.random.Generator, n_nodes: int = 4392, n_running: int = 800) -> SchedulerView:
    """A full machine with ``n_running`` jobs running and ``n_queue`` queued (seeded sizes and requested times)."""
    n = n_running + n_queue
    nodes = np.empty(n, dtype=np.int64)
    # running jobs fill the machine exactly
    run_nodes = rng.multinomial(n_nodes - n_running, np.full(n_running, 1 / n_running)) + 1
    nodes[:n_running] = run_nodes
    nodes[n_running:] = rng.choice([1, 2, 4, 8, 16, 64, 128, 256, 512, 1024], n_queue)
    est = rng.choice([600.0, 3600.0, 4 * 3600.0, 12 * 3600.0, 24 * 3600.0], n)
    start = np.full(n, np.nan)
    start[:n_running] = -rng.uniform(0, 1, n_running) * est[:n_running]
    submit = np.concatenate([start[:n_running] - 60.0, -rng.uniform(0, 86400, n_queue)])
    return SchedulerView(now_s=0.0, queue=list(range(n_running, n)), free_nodes=0, nodes=nodes, estimate_s=est,
                         submit_s=submit, recorded_start_s=np.full(n, np.nan), running=list(range(n_running)),
                         start_s=start, n_nodes=n_nodes, account_id=rng.integers(0, 50, n),
                         queue_id=np.zeros(n, dtype=np.int64))


def pass_cost(repeat: int) -> None:
    """Median wall time of one scheduling pass against the queue length."""
    sizes = [100, 500, 1000, 2000, 5000]
    print("\nscheduling-pass cost vs queue length (full machine, 800 running jobs), median of "
          f"{repeat} passes [ms]")
    print(f"{'policy':22s}" + "".join(f"{q:>10d}" for q in sizes))
    for order, bf in POLICIES:
        row = []
        for q in sizes:
            view = overload_view(q, np.random.default_rng(q))
            pol = make_policy(order, bf)
            pol.schedule(view)  # warm-up (fair-share state, caches)
            ts = []
            for _ in range(repeat):
                t0 = time.perf_counter()
                pol.schedule(view)
                ts.append(time.perf_counter() - t0)
            row.append(statistics.median(ts) * 1e3)
        print(f"{order + '+' + bf:22s}" + "".join(f"{x:10.2f}" for x in row))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--skip-year", action="store_true", help="only the pass-cost part")
    ap.add_argument("--repeat", type=int, default=5, help="passes per measurement (median)")
    a = ap.parse_args()
    if not a.skip_year:
        full_year()
    pass_cost(a.repeat)


if __name__ == "__main__":
    main()
