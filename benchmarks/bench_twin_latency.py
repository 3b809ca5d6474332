"""Benchmark: the twin's decision latency against queue length and horizon, with and without cooling in its rollouts,
with and without the bound on the rollouts' passes.

Theta 2022 from day 181 (``--days`` days), the main run on the fast plant (15 s), the default pool of four
candidates, one process. For each horizon of ``--horizons``, each rollout cooling of ``--cooling`` (``frozen``:
IT x (1 + the ratio at the decision); ``fast``: the quasi-steady plant and the run's wet-bulb on ``plant_step_s``
steps, ``[scheduler.twin] cooling = "fast"``) and each rollout queue limit of ``--limits`` (``[scheduler.twin]
rollout_queue_limit``: the jobs of its order a rollout's pass considers; 0 = the whole queue, the twin before the
bound), the twin decides every ``--period-h`` hours; each decision's wall time (snapshot, four rollouts, scoring)
is binned by the queue length at the decision. ``--arrival-factor`` > 1 compresses the inter-arrival times
(``trace.arrival_rate_factor``) to reach queues of thousands of jobs. Prints P50 and P99 per bin and the load
average (latencies are wall times on a shared machine); ``--csv`` writes every decision (cooling, horizon, limit,
queue length, latency, chosen candidate), ``--plot`` draws P50 / P99 against queue length from one or more such
CSV files (``--from-csv`` plots without running).

    .venv/bin/python benchmarks/bench_twin_latency.py [--days 2] [--horizons 1 6 24] [--cooling frozen fast]
        [--limits 100] [--arrival-factor 1] [--period-h 1] [--plant-step 300] [--csv out.csv]
        [--plot docs/img/twin_latency.png] [--from-csv a.csv b.csv]
"""

from __future__ import annotations

import argparse
import csv
import os
import time
from pathlib import Path

import numpy as np

BINS = (0, 50, 100, 500, 1000, 2000, 5000, 10 ** 9)
FIELDS = ("cooling", "horizon_h", "limit", "arrival_factor", "t_s", "queue", "latency_ms", "chosen")


def run(a: argparse.Namespace) -> list[dict]:
    """Run every configuration; print the table; return one row per decision."""
    from scheduler_sim.app.config import RunConfig
    from scheduler_sim.app.runner import run_one

    print(f"twin latency: Theta 2022 day 181 + {a.days:g} d, arrival factor {a.arrival_factor:g}, period "
          f"{a.period_h:g} h, pool of 4, main run on the fast plant; load average {os.getloadavg()[0]:.1f}")
    print(f"{'cooling':7s} {'horizon':>8s} {'limit':>6s} {'queue':>11s} {'n':>4s} {'P50 [ms]':>9s} {'P99 [ms]':>9s}")
    rows: list[dict] = []
    for h in a.horizons:
        for cooling in a.cooling:
            for limit in a.limits:
                cfg = RunConfig().with_overrides({
                    "trace.window_start_days": 181.0, "trace.window_days": a.days, "cooling.model": "fast",
                    "trace.arrival_rate_factor": a.arrival_factor, "scheduler.policy": "twin",
                    "scheduler.twin.horizon_s": h * 3600.0, "scheduler.twin.period_s": a.period_h * 3600.0,
                    "scheduler.twin.cooling": cooling, "scheduler.twin.plant_step_s": a.plant_step,
                    "scheduler.twin.rollout_queue_limit": limit,
                    "output.progress": False, "output.max_drain_days": 0.5})
                t0, c0 = time.perf_counter(), time.process_time()
                r = run_one(cfg, None, progress=False)
                cpu = time.process_time() - c0
                dec = r.info["twin_decisions"]
                q = np.array([d[1] for d in dec])
                lat = np.array(r.info["twin_latency_s"]) * 1e3
                lim = f"{limit}" if limit else "none"
                for lo, hi in zip(BINS[:-1], BINS[1:]):
                    sel = (q >= lo) & (q < hi)
                    if sel.any():
                        label = f"{lo}-{hi}" if hi < 10 ** 9 else f">= {lo}"
                        print(f"{cooling:7s} {h:6g} h {lim:>6s} {label:>11s} {int(sel.sum()):4d} "
                              f"{np.percentile(lat[sel], 50):9.1f} {np.percentile(lat[sel], 99):9.1f}")
                print(f"{cooling:7s} {h:6g} h {lim:>6s} {'all':>11s} {len(lat):4d} {np.percentile(lat, 50):9.1f} "
                      f"{np.percentile(lat, 99):9.1f}   (run {time.perf_counter() - t0:.0f} s wall, {cpu:.0f} s CPU, max queue "
                      f"{q.max()}, "
                      f"load {os.getloadavg()[0]:.1f})", flush=True)
                rows += [{"cooling": cooling, "horizon_h": h, "limit": limit, "arrival_factor": a.arrival_factor,
                          "t_s": d[0], "queue": d[1], "latency_ms": float(x), "chosen": d[2]}
                         for d, x in zip(dec, lat)]
    return rows


def plot(paths: list[Path], out: Path) -> None:
    """P50 and P99 of the decision latency per queue-length bin, one line per (horizon, cooling, limit)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for p in paths for r in csv.DictReader(p.open())]
    keys = sorted({(float(r["horizon_h"]), r["cooling"], int(r["limit"])) for r in rows})
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    edges = [0, 25, 50, 100, 200, 500, 1000, 2000, 3000, 5000, 10 ** 9]
    for h, cooling, limit in keys:
        sub = [r for r in rows if (float(r["horizon_h"]), r["cooling"], int(r["limit"])) == (h, cooling, limit)]
        q = np.array([float(r["queue"]) for r in sub])
        lat = np.array([float(r["latency_ms"]) for r in sub]) / 1e3
        xs, p50, p99 = [], [], []
        for lo, hi in zip(edges[:-1], edges[1:]):
            sel = (q >= lo) & (q < hi)
            if sel.sum() >= 1:
                xs.append(float(np.median(q[sel])))
                p50.append(np.percentile(lat[sel], 50))
                p99.append(np.percentile(lat[sel], 99))
        label = f"{h:g} h, {cooling}, " + (f"limit {limit}" if limit else "no limit")
        style = "-" if limit else "--"
        for ax, y in zip(axes, (p50, p99)):
            ax.plot(xs, y, style, marker="o", ms=3, label=label)
    for ax, name in zip(axes, ("P50", "P99")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("queued jobs at the decision")
        ax.set_title(f"twin decision latency, {name} (wall time per decision)")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("latency [s]")
    axes[1].legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


def main() -> None:
    """Command line (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--days", type=float, default=2.0)
    ap.add_argument("--horizons", type=float, nargs="+", default=[1.0, 6.0, 24.0], help="hours")
    ap.add_argument("--cooling", nargs="+", default=["frozen", "fast"], choices=["frozen", "fast"])
    ap.add_argument("--limits", type=int, nargs="+", default=[100], help="rollout queue limits (0 = none)")
    ap.add_argument("--arrival-factor", type=float, default=1.0)
    ap.add_argument("--period-h", type=float, default=1.0)
    ap.add_argument("--plant-step", type=float, default=300.0, help="rollout cooling step [s]")
    ap.add_argument("--csv", type=Path, help="write every decision here")
    ap.add_argument("--plot", type=Path, help="draw the latency curve (PNG) from --csv and --from-csv files")
    ap.add_argument("--from-csv", type=Path, nargs="+", default=[], help="plot these CSV files without running")
    a = ap.parse_args()
    if not a.from_csv:
        rows = run(a)
        if a.csv:
            with a.csv.open("w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=FIELDS)
                w.writeheader()
                w.writerows(rows)
    if a.plot:
        plot(list(a.from_csv) + ([a.csv] if a.csv and not a.from_csv else []), a.plot)


if __name__ == "__main__":
    main()
