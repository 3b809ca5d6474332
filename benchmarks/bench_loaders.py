"""Loader throughput: generate an N-job trace per text format in a temp dir, load it R times, print medians.

Usage: ``python benchmarks/bench_loaders.py [--jobs 1000000] [--repeat 3] [--formats swf,sacct,batsim]
[--root OLD_CHECKOUT]`` (run from the checkout root). Each load runs in a fresh child process; printed per format:
the median wall time of the repeats, jobs/s at that median, the median peak RSS growth of the child during the
load (ru_maxrss after - before, MB; pandas etc. already imported), the ratio of the median time to the target
(10 s for 1,000,000 jobs, scaled linearly to ``--jobs``; < 1 meets it) and the median CPU time of the load (all
threads; steadier than wall time on a shared machine). ``--root OLD_CHECKOUT`` loads the same file with the
``dataloaders`` of that checkout too (e.g. main exported with ``git archive``), the runs of the two interleaved,
and prints the ratios new / old of the median time and memory, and whether both gave the same job table and load
report (a digest of both).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np


def make_swf(path: Path, n: int, rng: np.random.Generator) -> None:
    """Write an SWF trace of ``n`` jobs."""
    sub = np.cumsum(rng.integers(0, 60, n))
    run = rng.integers(0, 86400, n)
    procs = rng.integers(1, 512, n)
    rows = np.column_stack([np.arange(1, n + 1), sub, rng.integers(0, 3600, n), run, procs, run // 2,
                            np.full(n, -1), procs, run + 600, np.full(n, -1), np.ones(n, int),
                            rng.integers(1, 500, n), rng.integers(1, 50, n), np.full(n, -1), np.ones(n, int),
                            np.ones(n, int), np.full(n, -1), np.full(n, -1)])
    np.savetxt(path, rows, fmt="%d", delimiter=" ", header="Version: 2.2", comments="; ")


def make_sacct(path: Path, n: int, rng: np.random.Generator) -> None:
    """Write sacct -P output of ``n`` jobs, each with a .batch step."""
    t0 = np.datetime64("2024-01-01T00:00:00")
    sub = t0 + np.cumsum(rng.integers(0, 60, n)).astype("timedelta64[s]")
    start = sub + rng.integers(0, 3600, n).astype("timedelta64[s]")
    run = rng.integers(0, 86400, n)
    end = start + run.astype("timedelta64[s]")
    nn = rng.integers(1, 64, n)
    el = [f"{r // 86400}-{r % 86400 // 3600:02d}:{r % 3600 // 60:02d}:{r % 60:02d}" if r >= 86400 else
          f"{r // 3600:02d}:{r % 3600 // 60:02d}:{r % 60:02d}" for r in run.tolist()]
    with open(path, "w") as f:
        f.write("JobID|User|Account|Partition|Submit|Start|End|Elapsed|Timelimit|NNodes|State|ConsumedEnergyRaw\n")
        for i in range(n):
            s, a, e = str(sub[i]), str(start[i]), str(end[i])
            f.write(f"{i + 1}|u{i % 97}|a{i % 13}|batch|{s}|{a}|{e}|{el[i]}|1-00:00:00|{nn[i]}|COMPLETED|\n")
            f.write(f"{i + 1}.batch|||| {s}|{a}|{e}|{el[i]}||1|COMPLETED|{int(run[i]) * 300}\n")


def make_batsim(path: Path, n: int, rng: np.random.Generator) -> None:
    """Write a Batsim workload of ``n`` jobs with 100 delay profiles."""
    sub = np.cumsum(rng.integers(0, 60, n)).tolist()
    res = rng.integers(1, 64, n).tolist()
    prof = rng.integers(0, 100, n).tolist()
    jobs = [{"id": i + 1, "subtime": sub[i], "walltime": 90000, "res": res[i], "profile": f"p{prof[i]}"}
            for i in range(n)]
    json.dump({"nb_res": 1024, "jobs": jobs,
               "profiles": {f"p{k}": {"type": "delay", "delay": 60.0 * (k + 1)} for k in range(100)}},
              open(path, "w"))


#: Load-time target for 1,000,000 jobs [s] (issue #8, item 4).
TARGET_S = 10.0
FORMATS = {"swf": (make_swf, ".swf"), "sacct": (make_sacct, ".sacct"), "batsim": (make_batsim, ".json")}
CHILD = ("import hashlib, resource, sys, time; sys.path.insert(0, {root!r}); from dataloaders import load_trace; "
         "u = resource.getrusage(resource.RUSAGE_SELF); r0, c0 = u.ru_maxrss, u.ru_utime + u.ru_stime; "
         "t = time.perf_counter(); "
         "df, rep = load_trace({path!r}); dt = time.perf_counter() - t; "
         "u = resource.getrusage(resource.RUSAGE_SELF); mem = (u.ru_maxrss - r0) / 1024; "
         "cpu = u.ru_utime + u.ru_stime - c0; "
         "import pandas as pd; h = hashlib.sha256(pd.util.hash_pandas_object(df.astype(str), index=True).values); "
         "h.update(repr(sorted(df.attrs.items())).encode()); h.update(repr(rep.to_dict()).encode()); "
         "print(len(df), dt, mem, h.hexdigest()[:16], cpu)")


def load_child(root: str, path: Path) -> tuple[int, float, float, str, float]:
    """Load ``path`` with the dataloaders of ``root`` in a fresh process.

    Returns (jobs, wall s, peak RSS growth MB, digest of the table and report, CPU s of all threads).
    """
    out = subprocess.run([sys.executable, "-c", CHILD.format(root=root, path=str(path))], check=True,
                         capture_output=True, text=True).stdout.split()
    return int(out[0]), float(out[1]), float(out[2]), out[3], float(out[4])


def main() -> None:
    """Generate, load, report."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--jobs", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--formats", default="swf,sacct,batsim")
    ap.add_argument("--root", default=None, help="older checkout to compare with (its dataloaders are loaded)")
    a = ap.parse_args()
    roots = [("new", str(Path(__file__).resolve().parents[1]))]
    if a.root:
        roots.append(("old", str(Path(a.root).resolve())))
    target = TARGET_S * a.jobs / 1_000_000
    rng = np.random.default_rng(8)
    print(f"{'format':8s} {'code':4s} {'jobs':>9s} {'file MB':>8s} {'median s':>9s} {'jobs/s':>10s} "
          f"{'peak RSS +MB':>12s} {'/ target':>8s} {'CPU s':>6s}  (runs s)")
    with tempfile.TemporaryDirectory() as tmp:
        for name in a.formats.split(","):
            make, suffix = FORMATS[name]
            p = Path(tmp) / f"bench{suffix}"
            make(p, a.jobs, rng)
            runs: dict[str, list[tuple[int, float, float, str, float]]] = {k: [] for k, _ in roots}
            for _ in range(a.repeat):
                for k, r in roots:  # interleaved: both see the same machine load
                    runs[k].append(load_child(r, p))
            med = {}
            for k, _ in roots:
                n = runs[k][0][0]
                t = statistics.median(r[1] for r in runs[k])
                mem = statistics.median(r[2] for r in runs[k])
                cpu = statistics.median(r[4] for r in runs[k])
                med[k] = (t, mem, cpu)
                times = " ".join(f"{r[1]:.2f}" for r in runs[k])
                print(f"{name:8s} {k:4s} {n:9d} {p.stat().st_size / 1e6:8.1f} {t:9.2f} {n / t:10.0f} {mem:12.0f} "
                      f"{t / target:8.2f} {cpu:6.1f}  ({times})", flush=True)
            if a.root:
                same = {r[3] for r in runs["new"]} == {r[3] for r in runs["old"]}
                print(f"{name:8s} new / old: time {med['new'][0] / med['old'][0]:.2f} (CPU "
                      f"{med['new'][2] / med['old'][2]:.2f}), peak RSS growth "
                      f"{med['new'][1] / med['old'][1]:.2f}; same job table and report: {'yes' if same else 'NO'}",
                      flush=True)


if __name__ == "__main__":
    main()
