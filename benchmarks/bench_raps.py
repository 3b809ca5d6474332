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

The run itself is printed apart (issue #26: >= 100,000x for the run itself, simulated s per wall s after
set-up): the child times the kernel's event loop (``Simulation._loop``, wrapped by the child: from the first event
to the end of the loop, the plant stepping inside it), and the line splits the child's wall time into set-up
(interpreter start, imports, system, trace, plant and FMU load, up to the first event), the run itself, and the
rest (results, attribution, HDF5 write, exit). Each part is the median over ``--repeat``; the run's speed is the
simulated day / the loop's median wall time.

``--root OLD_CHECKOUT`` times hpctwin from that checkout too (same workload, interleaved runs) and prints the
ratio new / old of the medians (whole process, set-up and the run itself).

RAPS (ExaDigiT, https://github.com/ExaDigiT/RAPS) is not on PyPI (PyPI's ``raps`` is an unrelated package) and
needs Python >= 3.12. The script looks for it in ``$RAPS_DIR`` (a RAPS checkout containing ``main.py``), else in
``.venv/raps-src`` of this checkout; it runs it with ``$RAPS_PYTHON``, else ``.venv/raps-venv/bin/python`` when
that exists, else ``python3.12`` on PATH. When RAPS or its Python is missing it prints why and skips RAPS. Set-up
used here (RAPS 2.0.0.dev0, commit 6c142bf)::

    git clone https://github.com/ExaDigiT/RAPS .venv/raps-src
    ~/.pyenv/versions/3.12.1/bin/python -m venv .venv/raps-venv
    .venv/raps-venv/bin/pip install matplotlib numpy rich fmpy pandas scipy pyarrow tqdm uncertainties requests \
        fsspec networkx pyyaml pydantic pydantic-settings dill==0.4.0 argcomplete==3.6.2
    .venv/raps-venv/bin/pip install --no-deps -e .venv/raps-src    # its RL/cloud extras are not needed here

RAPS reads a copy of the same jobs written by :func:`write_raps_swf` through its own SWF loader
(``raps.dataloaders.frontier_swf``), on its ``frontier`` system, without its cooling model (its FMU is not
public); the command is :data:`RAPS_CMD_DEFAULT` unless ``$RAPS_CMD`` is set (a format string with ``{python}``,
``{swf}``, ``{step}``, ``{seconds}``). It runs at a 15 s step over the whole window and at RAPS's default 1 s step
over the first ``--raps-1s-hours`` hours (default: the whole window; a whole day at 1 s takes RAPS tens of
minutes and more than 20 GiB). Each RAPS run is limited to ``--raps-mem-gb`` GiB of address space (default 8) so
that it cannot exhaust a shared machine; a run stopped by the limit is reported as such. Ratios printed: hpctwin
simulated time per wall second / RAPS's, and RAPS peak RSS / hpctwin's.
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
RAPS_CMD_DEFAULT = ("{python} main.py run --system frontier --dataloader raps.dataloaders.frontier_swf "
                    "--replay {swf} --time {seconds} --time-delta {step} --policy fcfs --backfill easy --noui "
                    "-o none")
#: Issue #16 target for a Frontier day with the FMU: simulated time / wall time.
TARGET_SPEEDUP = 20_000.0
#: Issue #26 target for the run itself (the event loop, after set-up): simulated time / wall time.
RUN_TARGET = 100_000.0


def run_child(cmd: list[str], cwd: Path, env: dict | None = None, mem_gb: float | None = None
              ) -> tuple[float, float, int]:
    """Run ``cmd`` (address space limited to ``mem_gb`` GiB when given); return (wall s, peak RSS MiB, exit)."""
    def limit() -> None:
        if mem_gb is not None:
            import resource

            b = int(mem_gb * 2**30)
            resource.setrlimit(resource.RLIMIT_AS, (b, b))

    t = time.perf_counter()
    p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         preexec_fn=limit if mem_gb is not None else None)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        sys.stderr.write(f"command failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr.read().decode()[-2000:]}\n")
    p.stderr.close()
    return wall, ru.ru_maxrss / 1024.0, p.returncode


#: The child of one timed run: the CLI of checkout ``root`` with the kernel's event loop timed (module docstring).
CHILD = r"""
import json, sys, time
t_child = time.perf_counter()
sys.path.insert(0, {root!r})
from scheduler_sim.kernel.simulation import Simulation
loop = []
_orig = Simulation._loop
def _timed(self, *a, **k):
    t = time.perf_counter()
    try:
        return _orig(self, *a, **k)
    finally:
        loop.append((t - t_child, time.perf_counter() - t_child))
Simulation._loop = _timed
from scheduler_sim.app.cli import main
rc = main(['run', {config!r}, '--quiet', '--out', {out!r}])
with open({timing!r}, 'w') as f:
    json.dump({{"loop": loop, "end": time.perf_counter() - t_child}}, f)
sys.exit(rc)
"""


def hpctwin_cmd(root: Path, config: Path, out: Path, timing: Path | None = None) -> list[str]:
    """The hpctwin command of one run from checkout ``root`` (its event loop timed into ``timing`` when given)."""
    if timing is None:
        return [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(root)!r}); "
                f"from scheduler_sim.app.cli import main; sys.exit(main(['run', {str(config)!r}, '--quiet', '--out', "
                f"{str(out)!r}]))"]
    return [sys.executable, "-c", CHILD.format(root=str(root), config=str(config), out=str(out), timing=str(timing))]


def split_run(wall: float, timing: Path) -> tuple[float, float, float]:
    """(set-up, run itself, rest) [s] of one timed child: wall up to the first event, the event loop, after it.

    The child's clock starts after the interpreter starts; the interpreter's start-up is put into set-up (the whole
    wall minus what the child measured from its first line to its end).
    """
    import json

    doc = json.loads(timing.read_text())
    (l0, l1), end = doc["loop"][0], doc["end"]
    return wall - (end - l0), l1 - l0, end - l1


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


#: Unix time of the synthetic day's first submission in the RAPS copy of the trace (2024-01-01T00:00:00Z; RAPS's
#: SWF loader needs a ``; UnixStartTime:`` header line).
UNIX_START = 1_704_067_200


def write_raps_swf(jobs: dict, path: Path) -> Path:
    """The same jobs as the hpctwin SWF, in the form RAPS's ``raps.dataloaders.frontier_swf`` reads.

    That loader (RAPS docs: the public Frontier trace, JSSPP 2026) takes the node count from field 21, a site
    descriptor ``frontier:excl:<nodes>x<cores>``, falling back to field 5 as nodes; it needs a ``; UnixStartTime:``
    header. Here fields 5 and 8 hold nodes (not processors), the wait time is 0 (it is rescheduled), field 10 the
    requested time [s], and fields 19-21 are ``used_gpus`` (4 per node), ``-1`` and the descriptor.
    """
    import numpy as np

    n = jobs["nodes"].size
    nodes = jobs["nodes"].astype(np.int64)
    sub = np.floor(jobs["submit_s"]).astype(np.int64)
    with open(path, "w") as f:
        f.write(f"; Version: 2.2\n; UnixStartTime: {UNIX_START}\n; MaxNodes: 9408\n")
        for i in range(n):
            f.write(f"{i + 1} {sub[i]} 0 {int(jobs['run_s'][i])} {nodes[i]} -1 -1 {nodes[i]} {int(jobs['req_s'][i])} "
                    f"-1 1 1 1 -1 1 -1 -1 -1 {4 * nodes[i]} -1 frontier:excl:{nodes[i]}x56\n")
    return path


def find_raps() -> tuple[Path | None, str | None, str]:
    """(RAPS folder, its python, reason when absent); see the module docstring for where it is looked for."""
    d = os.environ.get("RAPS_DIR")
    folder = Path(d) if d else HERE / ".venv" / "raps-src"
    if not (folder / "main.py").is_file():
        return None, None, (f"RAPS_DIR={d} has no main.py" if d else
                            "RAPS not found (set RAPS_DIR to an ExaDigiT/RAPS checkout, or see the module docstring)")
    py = os.environ.get("RAPS_PYTHON")
    if not py:
        local = HERE / ".venv" / "raps-venv" / "bin" / "python"
        py = str(local) if local.is_file() else "python3.12"
    if shutil.which(py) is None and not Path(py).is_file():
        return None, None, f"RAPS's python {py} not found (RAPS needs its own Python >= 3.12 environment)"
    return folder, py, ""


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
    ap.add_argument("--raps-1s-hours", type=float, default=None,
                    help="simulate only the first HOURS at RAPS's 1 s step (default: the whole window)")
    ap.add_argument("--raps-mem-gb", type=float, default=8.0, help="address-space limit of each RAPS run [GiB]")
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
        parts: dict[str, list[tuple[float, float, float]]] = {n: [] for n, _ in roots}
        for _ in range(a.repeat):
            for n, r in roots:
                timing = tmp / "timing.json"
                timing.unlink(missing_ok=True)
                res[n].append(run_child(hpctwin_cmd(r, cfg, tmp / "out.h5", timing), r))
                parts[n].append(split_run(res[n][-1][0], timing))
        med = {n: (statistics.median(w for w, _, _ in v), statistics.median(m for _, m, _ in v)) for n, v in res.items()}
        mp = {n: tuple(statistics.median(x[k] for x in v) for k in range(3)) for n, v in parts.items()}
        print(f"{'program':28s} {'median wall s':>13s} {'sim/wall':>10s} {'/ target':>8s} {'peak RSS MiB':>12s}")
        for n, (w, m) in med.items():
            print(f"{n:28s} {w:13.2f} {sim_s / w:10.0f} {sim_s / w / TARGET_SPEEDUP:8.2f} {m:12.0f}   "
                  f"(runs: {' '.join(f'{x[0]:.2f}' for x in res[n])})")
        for n, (su, loop, rest) in mp.items():
            print(f"{n + ', the run itself':28s} {loop:13.2f} {sim_s / loop:10.0f} {sim_s / loop / RUN_TARGET:8.2f} "
                  f"{'':12s}   (median of {a.repeat}: set-up {su:.2f} s before the first event, results + HDF5 + "
                  f"exit {rest:.2f} s after the loop; target {RUN_TARGET:,.0f}x)")
        if a.root:
            new, old = mp["hpctwin"], mp["hpctwin old"]
            print(f"new / old wall time: {med['hpctwin'][0] / med['hpctwin old'][0]:.2f}; peak RSS "
                  f"{med['hpctwin'][1] / med['hpctwin old'][1]:.2f}; set-up {new[0] / old[0]:.2f}, the run itself "
                  f"{new[1] / old[1]:.2f}, after the loop {new[2] / old[2]:.2f}")
        raps_dir, py, why = find_raps()
        if raps_dir is None:
            print(f"RAPS: skipped: {why}")
            return
        template = os.environ.get("RAPS_CMD", RAPS_CMD_DEFAULT)
        rswf = write_raps_swf(jobs, tmp / "frontier_day_raps.swf")
        hw, hm = med["hpctwin"]
        for step in (15, 1):
            secs = sim_s if step != 1 or a.raps_1s_hours is None else min(sim_s, a.raps_1s_hours * 3600.0)
            cmd = shlex.split(template.format(python=py, swf=rswf, step=step, seconds=int(secs)))
            w, m, rc = run_child(cmd, raps_dir, mem_gb=a.raps_mem_gb)
            label = f"RAPS {step} s step" + (f", {secs / 3600:g} h" if secs != sim_s else "")
            if rc != 0:
                print(f"{label:28s} failed (exit {rc}; a MemoryError or a kill when the {a.raps_mem_gb:g} GiB limit "
                      f"is reached) after {w:.1f} s, peak RSS {m:.0f} MiB")
                continue
            print(f"{label:28s} {w:13.2f} {secs / w:10.0f} {'':8s} {m:12.0f}   "
                  f"hpctwin / RAPS speed {(sim_s / hw) / (secs / w):.1f}x, RAPS / hpctwin memory {m / hm:.1f}x",
                  flush=True)


if __name__ == "__main__":
    main()
