"""Benchmark: the full year of the embedded ALCF Theta 2022 trace with the cooling FMU.

Each run is a fresh child process (its peak memory is its own) that runs the main job's configuration over the
366-day window and, with ``--out``, writes the HDF5 file to a temporary folder. Printed per policy: median CPU time
of the child (user + system, ``wait4`` rusage: the figure that holds on a loaded machine), median wall time,
simulated time / CPU time, events and cooling steps per CPU second, and the median peak RSS, over ``--repeat``
runs. With ``--root OLD_CHECKOUT`` the same runs are made on that checkout too, interleaved, and new / old ratios
are printed (issue #26 item 7). Targets (issue #26): <= 30 s and <= 1 GB with the file written.

    python benchmarks/bench_full_year.py [--policy easy] [--repeat 1] [--no-cooling] [--out] [--root /tmp/old]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, time
sys.path.insert(0, {root!r})
from scheduler_sim.app.config import RunConfig
from scheduler_sim.app.runner import run_one
cfg = RunConfig().with_overrides({{
    "name": "bench-" + {pol!r}, "scheduler.policy": {pol!r}, "trace.window_start_days": 0.0,
    "trace.window_days": 366.0, "cooling.enabled": {cooling!r}, "cooling.step_s": {step!r},
    "output.interval_s": max(60.0, {step!r}), "output.progress": False}})
r = run_one(cfg, {out!r}, progress=False)
print(json.dumps({{"events": r.info["events"], "steps": r.info.get("cooling_steps", 0),
                   "duration_s": r.summary["duration_s"], "PUE": r.summary["PUE"]}}))
"""


def run_child(root: Path, pol: str, cooling: bool, step: float, out: str | None) -> dict:
    """One run in a child process on checkout ``root``; its JSON line plus ``cpu_s``, ``wall_s``, ``rss_mib``.

    Raises
    ------
    RuntimeError
        If the child fails (its stderr tail in the message).
    """
    code = CHILD.format(root=str(root), pol=pol, cooling=cooling, step=step, out=out)
    t = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-c", code], cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    stdout, stderr = p.stdout.read().decode(), p.stderr.read().decode(errors="replace")
    p.stdout.close()
    p.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{root}: {pol} failed:\n{stderr[-2000:]}")
    res = json.loads(stdout.strip().splitlines()[-1])
    res.update(cpu_s=ru.ru_utime + ru.ru_stime, wall_s=wall, rss_mib=ru.ru_maxrss / 1024)
    return res


def main() -> None:
    """Print the medians per policy and checkout (and new / old with ``--root``)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--policy", action="append", help="policy (repeatable; default easy)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per policy and checkout (median reported)")
    ap.add_argument("--no-cooling", action="store_true", help="scheduler + power chain only")
    ap.add_argument("--step", type=float, default=15.0, help="cooling step [s]")
    ap.add_argument("--out", action="store_true", help="write the HDF5 file (to a temporary folder)")
    ap.add_argument("--root", type=Path, help="an older checkout measured in the same run")
    a = ap.parse_args()
    policies = a.policy or ["easy"]
    roots = [("new", HERE)] + ([("old", a.root.resolve())] if a.root else [])
    print(f"{'policy':8s} {'tree':4s} {'cooling':7s} {'CPU s':>7s} {'wall s':>7s} {'sim/CPU':>9s} {'events/CPU s':>12s} "
          f"{'steps/CPU s':>11s} {'peak MiB':>8s} {'PUE':>7s}")
    for pol in policies:
        med: dict[str, tuple[float, float]] = {}
        with tempfile.TemporaryDirectory(prefix="bench-year-") as tmp:
            runs: dict[str, list[dict]] = {k: [] for k, _ in roots}
            for i in range(a.repeat):
                for k, root in roots:
                    out = str(Path(tmp) / f"{k}{i}.h5") if a.out else None
                    runs[k].append(run_child(root, pol, not a.no_cooling, a.step, out))
        for k, v in runs.items():
            c = statistics.median(x["cpu_s"] for x in v)
            w = statistics.median(x["wall_s"] for x in v)
            m = statistics.median(x["rss_mib"] for x in v)
            r = v[-1]
            med[k] = (c, m)
            print(f"{pol:8s} {k:4s} {'off' if a.no_cooling else 'FMU':7s} {c:7.1f} {w:7.1f} {r['duration_s'] / c:9.0f} "
                  f"{r['events'] / c:12.0f} {r['steps'] / c:11.0f} {m:8.0f} {r['PUE']:7.4f}")
        if a.root:
            print(f"{pol:8s} new / old: CPU {med['new'][0] / med['old'][0]:.3f}, peak RSS "
                  f"{med['new'][1] / med['old'][1]:.3f}")


if __name__ == "__main__":
    main()
