"""Benchmark: the issue #25 ensemble target, 4 scenarios x N members on the fast plant under ``mpiexec -n 2``.

The study is ``experiments/theta_policies_weather_ensemble.toml`` (FCFS / EASY x Chicago TMY3 / constant 24 degC
wet-bulb, Theta 2022 from day 181 for 7 days, 4 varied parameters, LHS), with ``[uncertainty] members`` set by
``--members`` (default 32: 128 runs, the target of under 10 minutes). Each repeat runs the whole ``hpctwin sweep``
process into a fresh folder (start-up, every member file, summary.h5 with the ensemble statistics). Prints, per
source tree, the median wall time, the CPU time of the ranks (user + system, from ``getrusage`` of the children),
the CPU seconds per run, the load average before and after (the machine is shared), and with ``--root OLD`` the
ratio of this tree to OLD (e.g. an export of main: ``git archive main | tar -x -C /tmp/old``), run the same way
with ``PYTHONPATH=OLD``.

    .venv/bin/python benchmarks/bench_ensemble.py [--members 32] [--ranks 2] [--repeat 1] [--root OLD]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
MPIEXEC = str(Path(PY).parent / "mpiexec")
STUDY = ROOT / "experiments" / "theta_policies_weather_ensemble.toml"


def study_text(members: int) -> str:
    """The target study with ``members`` members per scenario.

    Parameters
    ----------
    members : int
        Members per scenario (>= 2).

    Returns
    -------
    str
        The study TOML.
    """
    text = STUDY.read_text(encoding="utf-8")
    return re.sub(r"(?m)^members = \d+", f"members = {members}", text)


def run_once(tree: Path, study: Path, out: Path, ranks: int) -> tuple[float, float]:
    """Run the sweep once with the sources of ``tree``; return (wall [s], CPU of the ranks [s]).

    Parameters
    ----------
    tree : Path
        Source tree (this checkout, or an older one run with ``PYTHONPATH``).
    study : Path
        The study file.
    out : Path
        A fresh output folder.
    ranks : int
        MPI ranks.

    Returns
    -------
    tuple[float, float]
        Wall time and user + system CPU time of the child processes [s].

    Raises
    ------
    SystemExit
        If the sweep fails (its stderr tail is shown).
    """
    env = dict(os.environ, PYTHONPATH=str(tree), PYTHONDONTWRITEBYTECODE="1")
    cmd = [MPIEXEC, "-n", str(ranks), PY, "-m", "mpi4py", "-m", "scheduler_sim", "sweep", str(study), "--out",
           str(out)]
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise SystemExit(f"sweep with {tree} failed ({p.returncode}):\n{p.stderr[-3000:]}")
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def main() -> None:
    """Command line (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--members", type=int, default=32)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--root", type=Path, help="an older source tree to compare with (e.g. an export of main)")
    a = ap.parse_args()
    trees = [("this tree", ROOT)] + ([("OLD " + str(a.root), a.root.resolve())] if a.root else [])
    n_runs = 4 * a.members
    res = {}
    with tempfile.TemporaryDirectory(prefix="bench-ensemble-") as tmp:
        study = Path(tmp) / "study.toml"
        study.write_text(study_text(a.members), encoding="utf-8")
        for r in range(a.repeat):
            for label, tree in trees:  # alternate the trees, so both see the same load on a shared machine
                load0 = os.getloadavg()[0]
                wall, cpu = run_once(tree, study, Path(tmp) / f"out-{len(res)}-{r}-{label[:3]}", a.ranks)
                res.setdefault(label, []).append((wall, cpu, load0, os.getloadavg()[0]))
                print(f"  {label}: repeat {r}: {wall:.1f} s wall, {cpu:.1f} s CPU, load {load0:.1f} -> "
                      f"{os.getloadavg()[0]:.1f}", flush=True)
    print(f"ensemble: 4 scenarios x {a.members} members = {n_runs} runs, fast plant, mpiexec -n {a.ranks}; "
          f"median of {a.repeat}")
    first = None
    for label, rows in res.items():
        wall = statistics.median(w for w, *_ in rows)
        cpu = statistics.median(c for _, c, *_ in rows)
        first = first or wall
        print(f"  {label:30s} {wall:7.1f} s wall ({wall / 60:.1f} min)  {cpu:7.1f} s CPU ({cpu / n_runs:.2f} s per "
              f"run)  {wall / first:5.2f}x of this tree")


if __name__ == "__main__":
    main()
