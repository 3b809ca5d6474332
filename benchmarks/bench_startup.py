"""Start-up cost of the ``hpctwin`` command (issue #16 item 6): ``--help`` and ``validate`` should take < 1 s.

``validate run.h5`` checks an output file (written once at the start: one day of Theta without cooling), which needs
h5py and the schema table only; ``validate`` of a trace needs its loader and pandas.

Usage: ``python benchmarks/bench_startup.py [--repeat 7] [--root OLD_CHECKOUT] [--importtime]`` (run from the
checkout root). Each command runs ``--repeat`` times in a fresh ``python -m scheduler_sim`` child process with
``PYTHONPATH`` at the checkout; printed per command: the median wall time, the median CPU time of the child
(user + system, less sensitive to other load on the machine than wall time), the min wall time and the ratio of
the median wall time to the 1 s target (< 1 meets it). A floor line times ``python -c "import pandas"`` the same
way: ``validate`` must build a pandas DataFrame, so it cannot start faster than pandas imports.

With ``--root OLD_CHECKOUT`` every command is also timed on that checkout, interleaved with this one (A, B, A,
B ...) so both see the same machine load, and the ratio new / old of the median wall times is printed.
``--importtime`` prints the ten heaviest imports (cumulative, ``python -X importtime``) of each command.
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

#: Start-up target [s] (issue #16 item 6).
TARGET_S = 1.0
HERE = Path(__file__).resolve().parents[1]


def commands(root: Path, h5: Path | None = None) -> dict[str, list[str]]:
    """The timed commands (argument lists after ``python``) for a checkout; ``h5``: an output file to validate."""
    swf = str(root / "tests" / "data" / "quirks.swf")
    sacct = str(root / "tests" / "data" / "quirks.sacct")
    extra = {"hpctwin validate run.h5": ["-m", "scheduler_sim", "validate", str(h5)]} if h5 is not None else {}
    return extra | {
        "floor: import pandas": ["-c", "import pandas"],
        "hpctwin --help": ["-m", "scheduler_sim", "--help"],
        "hpctwin run --help": ["-m", "scheduler_sim", "run", "--help"],
        "hpctwin validate quirks.swf": ["-m", "scheduler_sim", "validate", swf],
        "hpctwin validate quirks.sacct": ["-m", "scheduler_sim", "validate", sacct],
    }


def time_child(args: list[str], root: Path) -> tuple[float, float]:
    """Run ``python ARGS`` with the checkout on ``PYTHONPATH``; return (wall s, child CPU s)."""
    env = dict(os.environ, PYTHONPATH=str(root), HPCTWIN_PROGRESS="0")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run([sys.executable, *args], cwd=root, env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def heaviest_imports(args: list[str], root: Path, n: int = 10) -> list[tuple[int, str]]:
    """The ``n`` largest cumulative import times [us] of a command (``python -X importtime``)."""
    env = dict(os.environ, PYTHONPATH=str(root), HPCTWIN_PROGRESS="0")
    err = subprocess.run([sys.executable, "-X", "importtime", *args], cwd=root, env=env, capture_output=True,
                         text=True, check=False).stderr
    rows = []
    for line in err.splitlines():
        if line.startswith("import time:") and "|" in line and "cumulative" not in line:
            _, cum, name = line[len("import time:"):].split("|")
            if not name.startswith("  "):  # top-level imports only (indentation = nesting)
                rows.append((int(cum), name.strip()))
    return sorted(rows, reverse=True)[:n]


def main() -> None:
    """Time every command on this checkout (and ``--root``), print medians and ratios."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--root", help="older checkout to compare with (ratio new / old)")
    ap.add_argument("--importtime", action="store_true", help="print the heaviest imports of each command")
    a = ap.parse_args()
    roots = [HERE] + ([Path(a.root).resolve()] if a.root else [])
    tmp = tempfile.TemporaryDirectory()
    h5 = Path(tmp.name) / "run.h5"  # an output file for `validate FILE.h5`: one day of Theta, no cooling
    subprocess.run([sys.executable, "-m", "scheduler_sim", "run", "--days", "1", "--no-cooling", "--out", str(h5)],
                   cwd=HERE, env=dict(os.environ, PYTHONPATH=str(HERE), HPCTWIN_PROGRESS="0"),
                   stdout=subprocess.DEVNULL, check=True)
    cmds = [commands(r, h5) for r in roots]
    print(f"{'command':32s} {'checkout':9s} {'median wall s':>13s} {'median CPU s':>12s} {'min wall s':>10s} "
          f"{'/ target':>8s} {'new/old':>8s}")
    for name in cmds[0]:
        res: list[list[tuple[float, float]]] = [[] for _ in roots]
        for _ in range(a.repeat):
            for i, r in enumerate(roots):
                res[i].append(time_child(cmds[i][name], r))
        meds = [statistics.median(w for w, _ in rr) for rr in res]
        for i, rr in enumerate(res):
            cpu = statistics.median(c for _, c in rr)
            ratio = f"{meds[0] / meds[1]:8.2f}" if (len(roots) == 2 and i == 0) else f"{'':8s}"
            print(f"{name:32s} {'this' if i == 0 else 'old':9s} {meds[i]:13.3f} {cpu:12.3f} "
                  f"{min(w for w, _ in rr):10.3f} {meds[i] / TARGET_S:8.2f} {ratio}", flush=True)
        if a.importtime:
            for us, mod in heaviest_imports(cmds[0][name], roots[0]):
                print(f"    {us / 1e3:8.1f} ms  {mod}")
    print(f"(repeats: {a.repeat}; CPU = user + system time of the child; target {TARGET_S:.0f} s; "
          f"machine load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
