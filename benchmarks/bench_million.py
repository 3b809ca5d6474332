"""1,000,000 jobs over a year, no cooling (issue #16 item 8): target <= 120 s and <= 2 GB.

Usage (from the checkout root)::

    python benchmarks/bench_million.py [--jobs 1000000] [--repeat 1] [--root OLD_CHECKOUT] [--mem-limit-gb 6]
                                       [--profile FILE.prof]

Workload: the synthetic SWF of shared/cases/field-2/million-jobs-memory/gen.py (reproduced in :func:`make_swf`,
same seed and distributions: 1,000,000 submissions uniform over 365 days, log-normal sizes and run times, offered
load ~28 % of Theta's 4,392 nodes), truncated to ``--jobs``. Each repeat runs ``hpctwin run --trace big.swf
--start-day 0 --days 366 --no-cooling --quiet`` in a fresh child process with its address space limited to
``--mem-limit-gb`` (so a leak ends in a MemoryError, not in the machine's OOM killer). Printed: the median wall
CPU time of the child (user + system, ``wait4`` rusage: the figure that holds on a loaded machine), the median wall
time, jobs per CPU second, the median peak RSS of the child and both against the targets scaled to ``--jobs`` (time
linearly, memory not). ``--root`` also times an older checkout, interleaved, and prints new /
old. ``--profile`` runs one extra child under cProfile (this checkout) and prints its top 25 functions.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parents[1]
TARGET_S, TARGET_GB, FULL = 120.0, 2.0, 1_000_000


def make_swf(path: Path, n: int) -> None:
    """The million-jobs-memory field case's trace (gen.py there), first ``n`` jobs."""
    rng = np.random.default_rng(42)
    big = FULL
    submit = np.sort(rng.uniform(0, 365 * 86400, big)).astype(np.int64)
    nodes = np.clip(np.round(rng.lognormal(1.5, 1.2, big)), 1, 4360).astype(np.int64)
    run = np.clip(rng.lognormal(7.5, 1.3, big), 10, 86400).astype(np.int64)
    req = np.minimum(run * rng.uniform(1.0, 3.0, big), 86400 * 2).astype(np.int64)
    m1 = -np.ones(big, np.int64)
    cols = np.column_stack([np.arange(1, big + 1), submit, m1, run, nodes, m1, m1, nodes, req, m1,
                            np.ones(big, np.int64), rng.integers(1, 500, big), rng.integers(1, 50, big), m1,
                            np.ones(big, np.int64), m1, m1, m1])[:n]
    with open(path, "w") as f:
        f.write("; Version: 2.2\n; MaxNodes: 4392\n; MaxProcs: 4392\n")
        np.savetxt(f, cols, fmt="%d")


def child_cmd(root: Path, swf: Path, out: Path, profile: Path | None = None) -> list[str]:
    """The hpctwin run of one repeat from checkout ``root``."""
    args = ["run", "--trace", str(swf), "--start-day", "0", "--days", "366", "--no-cooling", "--quiet",
            "--out", str(out)]
    body = (f"import sys; sys.path.insert(0, {str(root)!r}); from scheduler_sim.cli import main; "
            f"sys.exit(main({args!r}))")
    if profile is not None:
        body = (f"import cProfile, sys; sys.path.insert(0, {str(root)!r}); from scheduler_sim.cli import main; "
                f"cProfile.run({'main(' + repr(args) + ')'!r}, {str(profile)!r})")
    return [sys.executable, "-c", body]


def run_child(cmd: list[str], cwd: Path, mem_limit_gb: float) -> tuple[float, float, int, float]:
    """Run ``cmd`` with an address-space limit; return (wall s, peak RSS GiB, exit status, CPU s of the child)."""
    lim = int(mem_limit_gb * 2**30)

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (lim, lim))

    t = time.perf_counter()
    p = subprocess.Popen(cmd, cwd=cwd, preexec_fn=limit, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    rc = os.waitstatus_to_exitcode(status)
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    if rc != 0:
        sys.stderr.write(f"run failed (exit {rc}) after {wall:.1f} s: {err[-1500:]}\n")
    return wall, ru.ru_maxrss / 2**20, rc, ru.ru_utime + ru.ru_stime


def main() -> None:
    """Generate the trace, time the runs, print medians against the targets."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=FULL)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--root", help="older checkout to compare with")
    ap.add_argument("--mem-limit-gb", type=float, default=6.0)
    ap.add_argument("--profile", help="also profile one run of this checkout into this .prof file")
    a = ap.parse_args()
    if not 1 <= a.jobs <= FULL:
        raise SystemExit(f"--jobs must be in 1 .. {FULL}")
    roots = [("this", HERE)] + ([("old", Path(a.root).resolve())] if a.root else [])
    with tempfile.TemporaryDirectory(prefix="bench-million-") as tmp:
        tmp = Path(tmp)
        swf = tmp / f"big{a.jobs}.swf"
        t = time.perf_counter()
        make_swf(swf, a.jobs)
        print(f"trace: {a.jobs} jobs, {swf.stat().st_size / 1e6:.0f} MB, written in {time.perf_counter() - t:.1f} s")
        res: dict[str, list[tuple[float, float, int, float]]] = {n: [] for n, _ in roots}
        for _ in range(a.repeat):
            for n, r in roots:
                res[n].append(run_child(child_cmd(r, swf, tmp / f"{n}.h5"), r, a.mem_limit_gb))
        target_s = TARGET_S * a.jobs / FULL
        print(f"{'checkout':9s} {'median CPU s':>12s} {'wall s':>8s} {'jobs/CPU s':>10s} {'/ target':>8s} "
              f"{'peak RSS GiB':>12s} {'/ 2 GB':>7s}  (CPU s of each run; exit)")
        med = {}
        for n, v in res.items():
            c = statistics.median(x[3] for x in v)
            w = statistics.median(x[0] for x in v)
            m = statistics.median(x[1] for x in v)
            med[n] = (c, w, m)
            print(f"{n:9s} {c:12.1f} {w:8.1f} {a.jobs / c:10.0f} {c / target_s:8.2f} {m:12.2f} "
                  f"{m * 2**30 / 2e9:7.2f}  ({' '.join(f'{x[3]:.1f}' for x in v)}; {' '.join(str(x[2]) for x in v)})")
        if a.root:
            print(f"new / old: CPU {med['this'][0] / med['old'][0]:.2f}, wall {med['this'][1] / med['old'][1]:.2f}, "
                  f"peak RSS {med['this'][2] / med['old'][2]:.2f}")
        if a.profile:
            run_child(child_cmd(HERE, swf, tmp / "prof.h5", Path(a.profile)), HERE, a.mem_limit_gb)
            import pstats

            pstats.Stats(a.profile).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
