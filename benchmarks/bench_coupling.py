"""Where the time of one ``hpctwin run`` goes, per component, this checkout against an older one (issue #16 items 5-6).

Usage (from the checkout root)::

    python benchmarks/bench_coupling.py [--repeat 3] [--root OLD_CHECKOUT] [-- RUN ARGS ...]

The run arguments default to the main job (``experiments/theta_easy_30d.toml``: 30 days of Theta, EASY, FMU);
``-- --system frontier --days 1`` style arguments time another run. Each run is a fresh ``python -m scheduler_sim
run ...`` child with ``PYTHONPATH`` at the checkout (the FMU comes from the user cache, built once beforehand).

Printed:

* wall time, median over ``--repeat`` plain runs (new and old interleaved A, B, A, B ... so both see the same load),
  and the ratio new / old;
* one cProfile run per checkout, the cumulative time of each component: the plant's FMU calls (``CoolingPlant.run``),
  the coupler around them (``CoolingCoupler.emit`` minus the plant), and inside it the facility overheads, the step
  averager, the output guard and the wet-bulb lookup; the number of plant calls and plant steps; the scheduling
  passes; the whole event loop (``Simulation._loop``); the HDF5 writing; and the set-up (everything of the process
  outside the event loop and the HDF5 writing: imports, trace, weather, FMU, job table). cProfile inflates small
  functions, so compare a component only with itself (the new / old ratio), not with the plain wall time.
"""

from __future__ import annotations

import argparse
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
DEFAULT_ARGS = ["experiments/theta_easy_30d.toml"]

#: (label, path suffix, function name): summed cumulative time of every matching profile entry.
COMPONENTS = [
    ("plant FMU calls (CoolingPlant.run)", "cooling_fmu/plant.py", "run"),
    ("coupler emit (incl. plant)", "scheduler_sim/kernel/coupler.py", "emit"),
    ("  facility overheads", "power/facility.py", ("evaluate", "evaluate_columns")),
    ("  UPS loss fit", "power/facility.py", "loss_coefficients"),
    ("  step averager", "cooling_fmu/coupling.py", "apply"),
    ("  output guard", "cooling_fmu/plausibility.py", ("check", "violates")),
    ("  wet-bulb lookup", "cooling_fmu/weather.py", "wet_bulb_K"),
    ("scheduling passes", "scheduler_sim/kernel/lifecycle.py", "scheduling_pass"),
    ("event loop (Simulation._loop)", "scheduler_sim/kernel/simulation.py", "_loop"),
    ("HDF5 writing (write_run)", "scheduler_sim/io/hdf5.py", "write_run"),
]


def _child(root: Path, args: list[str], out: Path, prof: Path | None) -> float:
    """Run ``hpctwin run ARGS --out OUT`` in a child on ``root``; return its wall time [s]."""
    env = dict(os.environ, PYTHONPATH=str(root), HPCTWIN_PROGRESS="0")
    cmd = [sys.executable]
    if prof is not None:
        cmd += ["-m", "cProfile", "-o", str(prof)]
    cmd += ["-m", "scheduler_sim", "run", *args, "--out", str(out)]
    t = time.perf_counter()
    r = subprocess.run(cmd, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t
    if r.returncode != 0:
        raise SystemExit(f"run failed in {root} ({' '.join(cmd)}):\n{r.stderr[-2000:]}")
    return wall


def components(prof: Path) -> dict[str, float]:
    """Cumulative seconds per component of :data:`COMPONENTS` (and call counts) from a cProfile file."""
    st = pstats.Stats(str(prof)).stats  # {(file, line, func): (cc, nc, tt, ct, callers)}
    res: dict[str, float] = {}
    total = max(ct for (_, _, _), (_, _, _, ct, _) in st.items())
    for label, suffix, funcs in COMPONENTS:
        names = (funcs,) if isinstance(funcs, str) else funcs
        hits = [(nc, ct) for (f, _, fn), (_, nc, _, ct, _) in st.items()
                if f.replace(os.sep, "/").endswith(suffix) and fn in names]
        res[label] = sum(ct for _, ct in hits)
        res[label + " #calls"] = sum(nc for nc, _ in hits)
    res["process (profiled)"] = total
    res["set-up and rest (process - loop - HDF5)"] = (total - res["event loop (Simulation._loop)"]
                                                     - res["HDF5 writing (write_run)"])
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3, help="plain runs per checkout (median)")
    ap.add_argument("--root", type=Path, help="an older checkout to compare with")
    ap.add_argument("run_args", nargs="*", help="arguments of `hpctwin run` (after --)")
    a = ap.parse_args()
    args = a.run_args or DEFAULT_ARGS
    roots = {"new": HERE} | ({"old": a.root.resolve()} if a.root else {})
    walls: dict[str, list[float]] = {k: [] for k in roots}
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        for k, root in roots.items():  # warm-up: byte-compile, FMU cache, weather cache
            _child(root, args, t / f"{k}-warm.h5", None)
        for _ in range(a.repeat):
            for k, root in roots.items():
                walls[k].append(_child(root, args, t / f"{k}.h5", None))
        comp = {}
        for k, root in roots.items():
            _child(root, args, t / f"{k}-p.h5", t / f"{k}.prof")
            comp[k] = components(t / f"{k}.prof")
    print(f"hpctwin run {' '.join(args)}")
    for k in roots:
        print(f"  {k}: median wall {statistics.median(walls[k]):.2f} s over {a.repeat} "
              f"(min {min(walls[k]):.2f} s)")
    if "old" in roots:
        print(f"  new / old median wall: {statistics.median(walls['new']) / statistics.median(walls['old']):.3f}")
    print(f"\n{'component (cProfile cumulative s)':45s} {'new':>9s}" + (f" {'old':>9s} {'new/old':>8s}"
                                                                       if "old" in roots else ""))
    for label in [c[0] for c in COMPONENTS] + ["process (profiled)", "set-up and rest (process - loop - HDF5)"]:
        n = comp["new"][label]
        line = f"{label:45s} {n:9.3f}"
        if "old" in roots:
            o = comp["old"][label]
            line += f" {o:9.3f} {n / o if o > 0 else float('nan'):8.3f}"
        calls = comp["new"].get(label + " #calls")
        if calls:
            line += f"   calls new {calls}" + (f", old {comp['old'][label + ' #calls']}" if "old" in roots else "")
        print(line)


if __name__ == "__main__":
    main()
