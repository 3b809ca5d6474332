"""Benchmark: does one plant's FMU build block another plant's run? (issue #26 item 6, the lock per cache entry)

In a fresh private FMU cache, plant A's FMU is built first (cached). A child process then builds plant B, its build
held for ``--build-s`` seconds inside its first phase (a stand-in for the minutes of a 257-CDU rumoca build; the
lock is taken exactly as for a real build, by :func:`cooling_fmu.build.fetch_fmu_bytes`). While B builds, this
process times (1) the fetch of plant A's cached FMU, which is what a run of plant A does first, and (2) the fetch of
plant B itself, which must wait for B's build and then find it in the cache (one build, not two). Both are measured
with this checkout's lock (one per entry) and with the whole-folder lock of before (emulated: every entry takes
``<folder>/.lock``), in the same run, as medians over ``--repeat``.

    python benchmarks/bench_cache_lock.py [--build-s 10] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]


def source(name: str) -> str:
    """A one-state Modelica model (a few seconds to build)."""
    return (f'model {name}\n  Real x(start=1, unit="K");\nequation\n  der(x) = -x;\nend {name};\n')


CHILD = r"""
import sys, time
from pathlib import Path
sys.path.insert(0, {root!r})
import jobs.cachedirs as cd
if {folder!r}:
    real = cd.cache_lock
    cd.cache_lock = lambda folder, entry=None: real(folder, None)
from cooling_fmu.build import fetch_fmu_bytes
marker = Path({marker!r})
def phase(msg):
    if not marker.exists():
        marker.write_text("locked")
        time.sleep({hold!r})
fetch_fmu_bytes({src!r}, "PlantB", Path({cache!r}), on_phase=phase)
"""


def one(folder_lock: bool, hold_s: float) -> tuple[float, float, float]:
    """One measurement: (fetch of the other plant's cached FMU, fetch of the building plant, B's build) [s]."""
    import jobs.cachedirs as cd
    from cooling_fmu.build import fetch_fmu_bytes

    real = cd.cache_lock
    if folder_lock:
        cd.cache_lock = lambda folder, entry=None: real(folder, None)
    try:
        with tempfile.TemporaryDirectory(prefix="bench-lock-") as tmp:
            cache = Path(tmp) / "fmu"
            cache.mkdir(mode=0o700)
            fetch_fmu_bytes(source("PlantA"), "PlantA", cache)
            marker = Path(tmp) / "marker"
            t_b = time.perf_counter()
            child = subprocess.Popen([sys.executable, "-c", CHILD.format(
                root=str(HERE), folder=folder_lock, marker=str(marker), hold=hold_s, src=source("PlantB"),
                cache=str(cache))])
            while not marker.exists():
                if child.poll() is not None:
                    raise RuntimeError("the build of plant B failed")
                time.sleep(0.01)
            t = time.perf_counter()
            fetch_fmu_bytes(source("PlantA"), "PlantA", cache)
            other = time.perf_counter() - t
            t = time.perf_counter()
            fetch_fmu_bytes(source("PlantB"), "PlantB", cache)
            same = time.perf_counter() - t
            child.wait()
            build = time.perf_counter() - t_b
            if child.returncode != 0:
                raise RuntimeError("the build of plant B failed")
            return other, same, build
    finally:
        cd.cache_lock = real


def main() -> None:
    """Print the table."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-s", type=float, default=10.0, help="how long plant B's build holds its lock [s]")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    sys.path.insert(0, str(HERE))
    res: dict[bool, list[tuple[float, float, float]]] = {False: [], True: []}
    for _ in range(a.repeat):
        for folder in (False, True):
            res[folder].append(one(folder, a.build_s))
    print(f"plant B's build holds its lock >= {a.build_s:g} s; medians over {a.repeat} repeats")
    print(f"{'lock':28s} {'plant A cached fetch s':>22s} {'plant B fetch s':>16s} {'B build s':>10s}")
    med = {}
    for folder, label in ((False, "per entry (this checkout)"), (True, "whole folder (before)")):
        m = [statistics.median(x[i] for x in res[folder]) for i in range(3)]
        med[folder] = m
        print(f"{label:28s} {m[0]:22.3f} {m[1]:16.3f} {m[2]:10.1f}")
    print(f"per entry / whole folder: plant A's fetch {med[False][0] / med[True][0]:.4f}")


if __name__ == "__main__":
    main()
