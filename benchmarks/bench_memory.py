"""Benchmark: peak memory (RSS) of a Theta 2022 run with its HDF5 output, against the run length (issue #16 item 4).

Each run length is measured in a fresh child process (so one length's peak cannot hide another's), which runs the
main job's configuration over ``--days`` days from day 0, writes the HDF5 file to a temporary folder and prints
its own peak resident set size (``ru_maxrss``), the RSS just before the rest of the file is written (the job table,
the attribution and the summary in memory; the series have been streamed into the file during the run since issue
#26 item 3, docs/performance.md) and the file size. With ``--root OLD_CHECKOUT`` the same lengths run on that checkout too (its
source put first on ``PYTHONPATH``, this venv's packages) and the new/old ratio of peak RSS is printed, in the same
run. Memory that is flat in the run length shows as a per-day slope near zero.

    python benchmarks/bench_memory.py [--days 30 90 366] [--no-cooling] [--root /tmp/old] [--step 15]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, os, resource, sys, time
import scheduler_sim
from scheduler_sim.app.config import RunConfig
from scheduler_sim.app import runner
days, cooling, step, out = float(sys.argv[1]), sys.argv[2] == "1", float(sys.argv[3]), sys.argv[4]

def rss_mib():
    with open("/proc/self/status") as fh:
        for ln in fh:
            if ln.startswith("VmRSS:"):
                return int(ln.split()[1]) / 1024
    return float("nan")

before = {}
import scheduler_sim.io.hdf5 as h
_real = h.write_run
def _spy(*a, **k):
    before["rss"] = rss_mib()
    before["peak"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return _real(*a, **k)
h.write_run = _spy
if hasattr(runner, "write_run"):
    runner.write_run = _spy
cfg = RunConfig().with_overrides({
    "name": "bench-mem", "trace.window_start_days": 0.0, "trace.window_days": days, "cooling.enabled": cooling,
    "cooling.step_s": step, "output.interval_s": max(60.0, step), "output.progress": False})
t0 = time.perf_counter()
runner.run_one(cfg, out, progress=False)
wall = time.perf_counter() - t0
print(json.dumps({"src": os.path.dirname(scheduler_sim.__file__), "wall_s": wall,
                  "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "rss_before_write_mib": before.get("rss", float("nan")),
                  "peak_before_write_mib": before.get("peak", float("nan")),
                  "file_mib": os.path.getsize(out) / 2**20}))
"""


def measure(root: Path, days: float, cooling: bool, step: float) -> dict:
    """Run one length in a child process on the checkout ``root``; returns the child's JSON line as a dict.

    Raises
    ------
    RuntimeError
        If the child fails (its stderr tail in the message).
    """
    env = dict(os.environ, PYTHONPATH=str(root))
    with tempfile.TemporaryDirectory() as d:
        r = subprocess.run([sys.executable, "-c", CHILD, str(days), "1" if cooling else "0", str(step),
                            str(Path(d) / "run.h5")], cwd=root, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{root}: {days} days failed:\n{r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> None:
    """Print peak RSS per run length (and the new/old ratio with ``--root``)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--days", type=float, nargs="+", default=[30.0, 90.0])
    ap.add_argument("--no-cooling", action="store_true", help="scheduler + power chain only")
    ap.add_argument("--step", type=float, default=15.0, help="cooling step [s]")
    ap.add_argument("--root", type=Path, help="an OLD checkout measured in the same run")
    a = ap.parse_args()
    roots = [("new", HERE)] + ([("old", a.root.resolve())] if a.root else [])
    res: dict[str, list[dict]] = {k: [] for k, _ in roots}
    print(f"{'tree':4s} {'days':>6s} {'wall s':>8s} {'peak MiB':>9s} {'RSS pre-write':>13s} {'file MiB':>9s}  source")
    for days in a.days:
        for k, root in roots:
            m = measure(root, days, not a.no_cooling, a.step)
            res[k].append(m)
            print(f"{k:4s} {days:6.0f} {m['wall_s']:8.1f} {m['peak_mib']:9.0f} {m['rss_before_write_mib']:13.0f} "
                  f"{m['file_mib']:9.1f}  {m['src']}", flush=True)
    for k, _ in roots:
        if len(a.days) > 1:
            slope = (res[k][-1]["peak_mib"] - res[k][0]["peak_mib"]) / (a.days[-1] - a.days[0])
            print(f"{k}: peak RSS slope {slope:.2f} MiB per simulated day")
    if a.root:
        for days, n, o in zip(a.days, res["new"], res["old"]):
            print(f"{days:6.0f} days: peak new/old {n['peak_mib'] / o['peak_mib']:.3f}")


if __name__ == "__main__":
    main()
