"""Benchmark: plant stepping schemes (issue 16 item 2): convergence table, and the full Theta year.

Part 1 (``table``, default): the main job's load (ALCF Theta 2022, EASY, from day 181) for 7 days with no drain,
Theta-like system and 6-CDU plant, Chicago weather, output every 60 s. A 0.25 s fixed-step reference run (once),
then each scheme: fixed 15 / 30 / 60 s, and adaptive 15 s (``cooling.stepping = "adaptive"``, 4 fine steps after
each change of the heat) with long steps capped at 60, 120, 240 s and at the plant's stability limit. Prints a
Markdown table: relative error of the liquid plant's cooling energy and of PUE against the reference, the plant
step calls (FMU ``doStep``; one per step when fixed), and the median wall time of ``run_one`` (no file written)
over ``--repeat`` runs, in this process (the FMU cache warm).

Part 2 (``year``): the full year of the trace (366-day window, as ``bench_full_year.py``), EASY, 15 s steps, each
run in a fresh child process: this checkout fixed and adaptive (the default since session 9), and with ``--root OLD_CHECKOUT``
the old checkout's default in the same invocation. Prints median wall times over ``--repeat`` runs and ratios.

    .venv/bin/python benchmarks/bench_plant_stepping.py table [--repeat 3]
    .venv/bin/python benchmarks/bench_plant_stepping.py year [--repeat 1] [--root /work/main] [--parallel]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

WEEK = {"trace.window_start_days": 181.0, "trace.window_days": 7.0, "output.max_drain_days": 1e-6,
        "output.progress": False, "output.interval_s": 60.0}

SCHEMES = [("fixed 15 s", {"cooling.step_s": 15.0, "cooling.stepping": "fixed"}),
           ("fixed 30 s", {"cooling.step_s": 30.0, "cooling.stepping": "fixed"}),
           ("fixed 60 s", {"cooling.step_s": 60.0, "cooling.stepping": "fixed"}),
           ("adaptive 15 s, long steps <= 60 s", {"cooling.step_s": 15.0, "cooling.stepping": "adaptive",
                                                  "cooling.max_step_s": 60.0}),
           ("adaptive 15 s, <= 120 s", {"cooling.step_s": 15.0, "cooling.stepping": "adaptive",
                                        "cooling.max_step_s": 120.0}),
           ("adaptive 15 s, <= 240 s", {"cooling.step_s": 15.0, "cooling.stepping": "adaptive",
                                                  "cooling.max_step_s": 240.0}),
           ("adaptive 15 s, <= stability limit", {"cooling.step_s": 15.0, "cooling.stepping": "adaptive",
                                                  "cooling.max_step_s": 0.0})]

CHILD = r"""
import sys, time
sys.path.insert(0, {root!r})
from scheduler_sim.app.config import RunConfig
from scheduler_sim.app.runner import run_one
ov = {{"name": "bench-year", "trace.window_start_days": 0.0, "trace.window_days": 366.0, "cooling.step_s": 15.0,
      "output.interval_s": 60.0, "output.progress": False}}
if {stepping!r} and "stepping" in RunConfig.model_fields["cooling"].annotation.model_fields:
    ov["cooling.stepping"] = {stepping!r}
cfg = RunConfig().with_overrides(ov)
from scheduler_sim.app import runner
built, orig = [], runner.build_plant
runner.build_plant = lambda *a, **k: built.append(orig(*a, **k)) or built[-1]
t0, c0 = time.perf_counter(), time.process_time()
r = run_one(cfg, None, progress=False)
calls = getattr(built[-1], "calls", None) if built else None
print(time.perf_counter() - t0, repr(r.summary["E_cooling_J"]), r.summary["PUE"], r.info["cooling_steps"],
      time.process_time() - c0, calls if calls is not None else r.info["cooling_steps"])
"""


def _run(over: dict):
    """One week run: (wall s, RunOutput, plant step calls). Calls are counted on the plant the runner builds."""
    from scheduler_sim.app import runner
    from scheduler_sim.app.config import RunConfig

    built = []
    orig = runner.build_plant

    def capture(*args, **kw):
        built.append(orig(*args, **kw))
        return built[-1]

    cfg = RunConfig().with_overrides({**WEEK, **over})
    runner.build_plant = capture
    try:
        t0 = time.perf_counter()
        r = runner.run_one(cfg, None, progress=False)
        wall = time.perf_counter() - t0
    finally:
        runner.build_plant = orig
    plant = built[-1]
    calls = getattr(plant, "calls", None)  # an AdaptiveStepper counts; a fixed-step plant makes one call per step
    return wall, r, calls if calls is not None else r.info["cooling_steps"]


def table(repeat: int) -> None:
    """Print the convergence table (Markdown) of the week against the 0.25 s reference."""
    w_ref, ref, _ = _run({"cooling.step_s": 0.25, "cooling.stepping": "fixed"})
    E0, pue0 = ref.summary["E_cooling_J"], ref.summary["PUE"]
    print(f"reference: fixed 0.25 s, cooling energy {E0 / 3.6e9:.3f} MWh, PUE {pue0:.6f}, {w_ref:.1f} s wall (1 run)")
    print()
    print("| scheme | rel. error cooling energy | rel. error PUE | plant step calls | wall s (median) | "
          "wall / fixed 15 s |")
    print("|---|---|---|---|---|---|")
    base = None
    for label, over in SCHEMES:
        walls = []
        for _ in range(repeat):
            w, r, calls = _run(over)
            walls.append(w)
        w = statistics.median(walls)
        base = base or w
        e = (r.summary["E_cooling_J"] - E0) / E0
        ep = (r.summary["PUE"] - pue0) / pue0
        print(f"| {label} | {e:+.2e} | {ep:+.2e} | {calls:,} | {w:.2f} | {w / base:.2f} |")


def _start(root: Path, stepping: str | None) -> subprocess.Popen:
    py = root / ".venv" / "bin" / "python"
    code = CHILD.format(root=str(root), stepping=stepping or "")
    return subprocess.Popen([str(py if py.exists() else sys.executable), "-c", code], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=root)


def _result(proc: subprocess.Popen, root: Path) -> tuple:
    out, err = proc.communicate()
    if proc.returncode != 0:
        raise SystemExit(f"child in {root} failed:\n{err[-2000:]}")
    w, e, pue, steps, cpu, calls = out.strip().splitlines()[-1].split()
    return float(w), e, pue, steps, float(cpu), calls


def _child(root: Path, stepping: str | None) -> tuple:
    return _result(_start(root, stepping), root)


def year(repeat: int, old_root: Path | None, parallel: bool = False) -> None:
    """Print the full-year wall and CPU times: fixed vs adaptive here, and the old checkout's default.

    With ``parallel`` the children of one repeat run at the same time (on a loaded machine the CPU seconds stay
    comparable, the wall times do not).
    """
    rows = [("this checkout, fixed 15 s", ROOT, "fixed"), ("this checkout, adaptive", ROOT, "adaptive")]
    if old_root is not None:
        rows.append((f"--root {old_root} (its default)", old_root, None))
    res = {}
    runs_of: dict[str, list] = {label: [] for label, _, _ in rows}
    for _ in range(repeat):
        if parallel:
            procs = [(label, root, _start(root, stepping)) for label, root, stepping in rows]
            for label, root, proc in procs:
                runs_of[label].append(_result(proc, root))
        else:
            for label, root, stepping in rows:
                runs_of[label].append(_child(root, stepping))
    for label, _, _ in rows:
        runs = runs_of[label]
        res[label] = (statistics.median(r[0] for r in runs), statistics.median(r[4] for r in runs), runs[-1])
    base, base_cpu = res[rows[0][0]][0], res[rows[0][0]][1]
    print(f"full Theta year, 15 s steps, EASY; median of {repeat} run(s) each, fresh process; CPU s of the child")
    print(f"{'run':45s} {'wall s':>8s} {'/ fixed':>8s} {'CPU s':>8s} {'/ fixed':>8s} {'E_cooling MWh':>14s} "
          f"{'PUE':>9s} {'steps':>9s} {'plant calls':>12s}")
    for label, _, _ in rows:
        w, c, (_, e, pue, steps, _, calls) = res[label]
        print(f"{label:45s} {w:8.1f} {w / base:8.2f} {c:8.1f} {c / base_cpu:8.2f} {float(e) / 3.6e9:14.3f} "
              f"{float(pue):9.5f} {steps:>9s} {calls:>12s}")
    e_fix, e_ada = float(res[rows[0][0]][2][1]), float(res[rows[1][0]][2][1])
    print(f"adaptive vs fixed 15 s: cooling energy {(e_ada - e_fix) / e_fix:+.2e} relative")


def main() -> None:
    """Command line (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("part", nargs="?", choices=("table", "year"), default="table")
    ap.add_argument("--repeat", type=int, default=None, help="runs per scheme (median; default 3 table, 1 year)")
    ap.add_argument("--root", type=Path, help="an older checkout to time beside this one (year)")
    ap.add_argument("--parallel", action="store_true", help="year: run the children at the same time (CPU s only)")
    a = ap.parse_args()
    if a.part == "table":
        table(a.repeat or 3)
    else:
        year(a.repeat or 1, a.root, a.parallel)


if __name__ == "__main__":
    main()
