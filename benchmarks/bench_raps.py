"""hpctwin and ExaDigiT RAPS side by side on one Frontier-like day (issue #16 item 10), plus the Frontier-day target.

Usage (from the checkout root)::

    python benchmarks/bench_raps.py [--repeat 3] [--system frontier|frontier257] [--no-cooling]
                                    [--root OLD_CHECKOUT] [--days 1] [--seed 1] [--load 0.85]

Workload: a synthetic Frontier-like SWF from :mod:`experiments.frontier_workload` (Lublin & Feitelson 2003 model,
OLCF queue limits; no external trace). hpctwin runs it with FCFS + EASY backfill on the ``--system`` (default
``frontier``: 25 CDUs; ``frontier257`` is the 257-CDU benchmark system) with the cooling FMU at a 15 s step, in a
fresh child process per repeat (FMU already cached: the first, untimed, run builds it). Printed per program: the
median wall time of the child, simulated time / wall time (the simulated time is the submission window, 1 day;
the issue's target is >= 20,000x), and the median peak RSS of the child (``wait4`` rusage, MiB).

``--root OLD_CHECKOUT`` times hpctwin from that checkout too (same workload, interleaved runs) and prints the
ratio new / old of the medians.

RAPS (ExaDigiT, https://github.com/ExaDigiT/RAPS) is not on PyPI (PyPI's ``raps`` is an unrelated package). The
script looks for it ONLY here: ``$RAPS_DIR`` (a RAPS checkout containing ``main.py``) run by ``$RAPS_PYTHON``
(default ``python3.12`` on PATH). When either is missing it prints why and skips RAPS. The RAPS command line is
``$RAPS_CMD`` if set (a format string with ``{python}``, ``{swf}``, ``{step}``, ``{seconds}``), else the default
:data:`RAPS_CMD_DEFAULT` (FCFS + EASY, 15 s and 1 s steps); check it against your RAPS version's ``--help``: RAPS
options change between releases and this default was not run here. Ratios printed: hpctwin simulated time per
wall second / RAPS's, and RAPS peak RSS / hpctwin's.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
#: Default RAPS command (see the module docstring); {python}, {swf}, {step}, {seconds} are filled in.
RAPS_CMD_DEFAULT = ("{python} main.py --system frontier --replay {swf} --time {seconds} --time-delta {step} "
                    "--policy fcfs --backfill easy")
#: Issue #16 target for a Frontier day with the FMU: simulated time / wall time.
TARGET_SPEEDUP = 20_000.0


def run_child(cmd: list[str], cwd: Path, env: dict | None = None) -> tuple[float, float, int]:
    """Run ``cmd``; return (wall s, peak RSS MiB of that child, exit status)."""
    t = time.perf_counter()
    p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        sys.stderr.write(f"command failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr.read().decode()[-2000:]}\n")
    p.stderr.close()
    return wall, ru.ru_maxrss / 1024.0, p.returncode


def hpctwin_cmd(root: Path, config: Path, out: Path) -> list[str]:
    """The hpctwin command of one run from checkout ``root``."""
    return [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(root)!r}); from scheduler_sim.cli import main;"
            f" sys.exit(main(['run', {str(config)!r}, '--quiet', '--out', {str(out)!r}]))"]


def write_config(path: Path, swf: Path, system: str, days: float, cooling: bool) -> None:
    """A run configuration for the synthetic day (SWF processors = nodes x 64)."""
    sys_file = HERE / "power" / "systems" / f"{system}.toml"
    plant = ""
    if sys_file.is_file():  # by path, so that an older checkout (--root) runs this checkout's system and plant
        import tomllib

        plant_name = tomllib.loads(sys_file.read_text())["cooling_plant"]
        plant = str(HERE / "cooling_fmu" / "plants" / f"{plant_name}.toml")
        system = str(sys_file)
    path.write_text(f"""name = "bench-frontier-day"
system = "{system}"
[trace]
path = "{swf}"
window_start_days = 0.0
window_days = {days}
cores_per_node = 64
[scheduler]
policy = "fcfs"
backfill = "easy"
[cooling]
enabled = {'true' if cooling else 'false'}
plant = "{plant}"
step_s = 15.0
weather = "constant"
T_wb_C = 20.0
[output]
interval_s = 60.0
progress = false
""")


def find_raps() -> tuple[Path | None, str | None, str]:
    """(RAPS folder, python, reason when absent)."""
    d = os.environ.get("RAPS_DIR")
    if not d:
        return None, None, "RAPS_DIR is not set (point it at an ExaDigiT/RAPS checkout with main.py)"
    if not (Path(d) / "main.py").is_file():
        return None, None, f"RAPS_DIR={d} has no main.py"
    py = os.environ.get("RAPS_PYTHON", "python3.12")
    if shutil.which(py) is None and not Path(py).is_file():
        return None, None, f"RAPS_PYTHON={py} not found (RAPS needs its own Python 3.12 environment)"
    return Path(d), py, ""


def main() -> None:
    """Generate the day, time hpctwin (and the old checkout, and RAPS when present), print medians and ratios."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--system", default="frontier", help="frontier (25 CDUs) or frontier257 (257 CDUs)")
    ap.add_argument("--no-cooling", action="store_true")
    ap.add_argument("--root", help="older checkout to compare with")
    ap.add_argument("--days", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--load", type=float, default=0.85)
    a = ap.parse_args()
    sys.path.insert(0, str(HERE))
    from experiments.frontier_workload import frontier_jobs, write_swf

    sim_s = a.days * 86400.0
    with tempfile.TemporaryDirectory(prefix="bench-raps-") as tmp:
        tmp = Path(tmp)
        jobs = frontier_jobs(a.days, seed=a.seed, load=a.load)
        swf = write_swf(jobs, tmp / "frontier_day.swf")
        cfg = tmp / "run.toml"
        write_config(cfg, swf, a.system, a.days, not a.no_cooling)
        print(f"workload: {jobs['nodes'].size} jobs, {a.days:g} day(s), offered load >= {a.load:g}, system "
              f"{a.system}, cooling {'off' if a.no_cooling else 'FMU 15 s'}")
        roots = [("hpctwin", HERE)] + ([("hpctwin old", Path(a.root).resolve())] if a.root else [])
        for _, r in roots:  # untimed warm-up: builds / caches the FMU and the plant figures
            run_child(hpctwin_cmd(r, cfg, tmp / "warm.h5"), r)
        res: dict[str, list[tuple[float, float, int]]] = {n: [] for n, _ in roots}
        for _ in range(a.repeat):
            for n, r in roots:
                res[n].append(run_child(hpctwin_cmd(r, cfg, tmp / "out.h5"), r))
        med = {n: (statistics.median(w for w, _, _ in v), statistics.median(m for _, m, _ in v)) for n, v in res.items()}
        print(f"{'program':28s} {'median wall s':>13s} {'sim/wall':>10s} {'/ target':>8s} {'peak RSS MiB':>12s}")
        for n, (w, m) in med.items():
            print(f"{n:28s} {w:13.2f} {sim_s / w:10.0f} {sim_s / w / TARGET_SPEEDUP:8.2f} {m:12.0f}   "
                  f"(runs: {' '.join(f'{x[0]:.2f}' for x in res[n])})")
        if a.root:
            print(f"new / old wall time: {med['hpctwin'][0] / med['hpctwin old'][0]:.2f}; peak RSS "
                  f"{med['hpctwin'][1] / med['hpctwin old'][1]:.2f}")
        raps_dir, py, why = find_raps()
        if raps_dir is None:
            print(f"RAPS: skipped: {why}")
            return
        template = os.environ.get("RAPS_CMD", RAPS_CMD_DEFAULT)
        for step in (15, 1):
            cmd = shlex.split(template.format(python=py, swf=swf, step=step, seconds=int(sim_s)))
            w, m, rc = run_child(cmd, raps_dir)
            if rc != 0:
                print(f"RAPS {step:>2d} s step: failed (exit {rc}; killed by the OS when negative) after {w:.1f} s, "
                      f"peak RSS {m:.0f} MiB")
                continue
            hw, hm = med["hpctwin"]
            print(f"{'RAPS ' + str(step) + ' s step':28s} {w:13.2f} {sim_s / w:10.0f} {'':8s} {m:12.0f}   "
                  f"hpctwin / RAPS speed {(sim_s / hw) / (sim_s / w):.1f}x, RAPS / hpctwin memory {m / hm:.1f}x")


if __name__ == "__main__":
    main()
