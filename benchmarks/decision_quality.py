"""Error to decision quality (issue #25 item 4): the twin with wrong knowledge, and heuristics against an optimum.

1. The twin in the loop (default pool, 6 h horizon, 1 h period, plant off) on a Theta 2022 window, with its
   rollouts' runtimes off by a log-normal error (sigma) and its future arrivals jittered; the realised objective
   J = W / 1 h + E_facility / 1 MWh of the main run against the error-free twin (--seeds error seeds per size).
2. Small instances (8 jobs, 16 nodes; seeded: submit 0-2 h, sizes 1-16 nodes, run times 5 min - 4 h): each
   heuristic's total wait against the hindsight optimum found by exhaustive search.

    .venv/bin/python benchmarks/decision_quality.py [--days 3] [--instances 5] [--seeds 3] [--period-h 1]
"""

import argparse
import time

import numpy as np

from scheduler_sim.app.config import RunConfig
from scheduler_sim.app.decision_quality import error_study, heuristic_gaps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--days", type=float, default=3.0)
    ap.add_argument("--start-day", type=float, default=190.0)
    ap.add_argument("--instances", type=int, default=5)
    ap.add_argument("--seeds", type=int, default=3, help="error seeds per error size")
    ap.add_argument("--period-h", type=float, default=1.0, help="twin decision period [h]")
    a = ap.parse_args()
    cfg = RunConfig.model_validate({"trace": {"window_start_days": a.start_day, "window_days": a.days},
                                    "scheduler": {"policy": "twin", "twin": {"period_s": a.period_h * 3600.0}},
                                    "output": {"progress": False, "max_drain_days": 2.0}})
    print(f"twin with knowledge errors: Theta 2022 days {a.start_day:g} + {a.days:g}, pool fcfs+easy, sjf+easy, "
          f"priority+easy, fcfs+conservative, horizon 6 h, period {a.period_h:g} h, plant off, drain cut 2 days after the window")
    errors = [(0.1, 0.0), (0.3, 0.0), (0.5, 0.0), (1.0, 0.0), (0.0, 1800.0), (0.0, 7200.0), (0.5, 3600.0)]
    error_study(cfg, errors, seeds=tuple(range(a.seeds)), echo=print)
    print(f"\nheuristics against the hindsight optimum ({a.instances} instances of 8 jobs on 16 nodes, total wait)")
    rng = np.random.default_rng(2026)
    gaps: dict[str, list[float]] = {}
    for k in range(a.instances):
        sub = np.sort(rng.uniform(0, 7200, 8)).round()
        nodes = rng.integers(1, 17, 8)
        run = rng.uniform(300, 4 * 3600, 8).round()
        t = time.perf_counter()
        g = heuristic_gaps(sub, nodes, run, 16)
        line = ", ".join(f"{p} {100 * v['gap']:+.1f} %" for p, v in g.items() if p != "optimum")
        print(f"  instance {k}: optimum {g['optimum']['wait_s'] / 3600:.2f} job-h ({time.perf_counter() - t:.1f} s); "
              f"gap {line}")
        for p, v in g.items():
            if p != "optimum":
                gaps.setdefault(p, []).append(v["gap"])
    print("  mean gap: " + ", ".join(f"{p} {100 * np.mean(v):.1f} %" for p, v in gaps.items()))


if __name__ == "__main__":
    main()
