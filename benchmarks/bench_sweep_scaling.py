"""Scaling benchmark of the MPI sweep and of the twin in the scheduling loop.

Run from the repository root::

    python benchmarks/bench_sweep_scaling.py            # everything (a few minutes on 2 cores)
    python benchmarks/bench_sweep_scaling.py --phase sweep --ranks 1 2 4
    python benchmarks/bench_sweep_scaling.py --phase twin

Phases
------
sweep
    Strong scaling of one fixed 32-scenario study (4 policies x 4 window lengths 0.25-2 days x 2 start days, cooling
    FMU on, so scenario lengths differ ~8x) under ``mpiexec -n N`` for each N: wall time, speed-up, parallel
    efficiency ``E = T1 / (N * TN)``, and load balance ``mean / max`` of the busy time per rank (the sweep's
    ``sweep_timing_json``). Results are also checked to be identical for every N. ``nproc`` is reported: with more
    ranks than cores the ranks share cores, so efficiency beyond ``nproc`` ranks measures oversubscription, not the
    code.
executor
    The same study under ``mpiexec -n 2`` driven by ``mpi4py.futures.MPICommExecutor`` (rank 0 a pure master that
    only hands out scenarios) instead of the sweep's hand-written queue (rank 0 also runs scenarios), against the
    hand queue on 1 and 2 ranks in the same run: issue #14 item 8 keeps the hand queue unless the executor's 2-rank
    speed-up reaches the queue's.
twin-ranks
    Decision latency of ``hpctwin run --policy twin`` (default pool of 4, horizon 6 h, period 1 h; 2 days of
    Theta, no plant) under ``mpiexec -n N``.
twin
    In one process: decision latency vs horizon and vs queue length, and the twin's gain over the best fixed policy
    of its pool on a week of the Theta trace (objective J of docs/twin.md over the whole run; cooling plant off so
    facility energy = IT x (1 + cooling_estimate)).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import h5py  # noqa: E402
import numpy as np  # noqa: E402

PY = sys.executable
MPIEXEC = str(Path(PY).parent / "mpiexec")

STUDY = """
name = "bench-scaling"
[base]
system = "theta"
trace = { window_start_days = 181.0, window_days = 1.0 }
cooling = { step_s = 15.0, weather = "constant", T_wb_C = 12.0 }
output = { interval_s = 60.0, progress = false }
[axes]
"scheduler.policy" = ["fcfs", "easy", "sjf", "conservative"]
"trace.window_days" = [0.25, 0.5, 1.0, 2.0]
"trace.window_start_days" = [181.0, 200.0]
"""


def _mpirun(n: int, args: list[str], timeout: float = 1800) -> subprocess.CompletedProcess:
    cmd = [PY, "-m", "mpi4py", *args]
    if n > 1:
        cmd = [MPIEXEC, "-n", str(n), *cmd]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1",
                            "OPENBLAS_NUM_THREADS": "1"})
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    return r


def phase_sweep(ranks: list[int], work: Path) -> dict:
    study = work / "study.toml"
    study.write_text(STUDY)
    _mpirun(1, ["-m", "scheduler_sim", "run", "--days", "0.1", "--quiet", "--out", str(work / "warm.h5")])  # FMU cache
    rows = {}
    ref = None
    for n in ranks:
        out = work / f"sweep_{n}"
        t = time.perf_counter()
        _mpirun(n, ["-m", "scheduler_sim", "sweep", str(study), "--out", str(out)])
        wall_outer = time.perf_counter() - t
        with h5py.File(out / "summary.h5") as f:
            timing = json.loads(f.attrs["sweep_timing_json"])
            pue = f["scenarios/PUE"][()]
            wait = f["scenarios/mean_wait_s"][()]
        ref = (pue, wait) if ref is None else ref
        same = bool(np.array_equal(ref[0], pue, equal_nan=True) and np.array_equal(ref[1], wait, equal_nan=True))
        busy = np.array(timing["busy_s_per_rank"])
        rows[n] = {"wall_s": timing["wall_time_s"], "wall_outer_s": wall_outer, "busy_s_per_rank": busy.tolist(),
                   "scenarios_per_rank": timing["scenarios_per_rank"], "load_balance": float(busy.mean() / busy.max()),
                   "identical_to_first": same, "scenario_wall_s": timing["scenario_wall_s"]}
    t1 = rows[ranks[0]]["wall_s"] * ranks[0]
    for n, r in rows.items():
        r["speedup"] = t1 / r["wall_s"]
        r["efficiency"] = t1 / (n * r["wall_s"])
    return rows


EXECUTOR_DRIVER = """
import sys, time
from pathlib import Path
from mpi4py import MPI
from mpi4py.futures import MPICommExecutor
from scheduler_sim.app.sweep import _run_scenario, load_study

_, scenarios = load_study(sys.argv[1])
out = Path(sys.argv[2])
with MPICommExecutor(MPI.COMM_WORLD, root=0) as ex:
    if ex is not None:  # rank 0: the master; the other ranks serve tasks inside the context manager
        out.mkdir(exist_ok=True)
        t = time.perf_counter()
        rows = list(ex.map(_run_scenario, scenarios, [out] * len(scenarios)))
        bad = [r[1] for r in rows if r[0] != "done"]
        print(f"{time.perf_counter() - t:.6f} {len(rows)} {len(bad)}")
"""


def phase_executor(work: Path) -> dict:
    """Hand queue on 1 and 2 ranks, then MPICommExecutor on 2 ranks, same study, same run (see module doc)."""
    hand = phase_sweep([1, 2], work)
    driver = work / "executor_driver.py"
    driver.write_text(EXECUTOR_DRIVER)
    r = _mpirun(2, [str(driver), str(work / "study.toml"), str(work / "executor_2")])
    wall_s, n, n_bad = r.stdout.split()[-3:]
    if int(n_bad):
        raise RuntimeError(f"{n_bad} of {n} scenarios failed under MPICommExecutor:\n{r.stdout[-2000:]}")
    t1 = hand[1]["wall_s"]
    return {"hand_1_wall_s": t1, "hand_2_wall_s": hand[2]["wall_s"], "hand_2_speedup": t1 / hand[2]["wall_s"],
            "executor_2_wall_s": float(wall_s), "executor_2_speedup": t1 / float(wall_s), "scenarios": int(n)}


def phase_twin_ranks(ranks: list[int], work: Path) -> dict:
    rows = {}
    for n in ranks:
        out = work / f"twin_{n}.h5"
        _mpirun(n, ["-m", "scheduler_sim", "run", "--policy", "twin", "--days", "2", "--no-cooling", "--quiet",
                    "--out", str(out)])
        with h5py.File(out) as f:
            lat = np.asarray(f["provenance"].attrs["twin_latency_s"])
            starts = f["jobs/sim_start_s"][()]
        rows[n] = {"decisions": int(lat.size), "latency_mean_ms": 1e3 * float(lat.mean()),
                   "latency_median_ms": 1e3 * float(np.median(lat)), "latency_max_ms": 1e3 * float(lat.max()),
                   "starts_checksum": float(np.nansum(starts))}
    return rows


def phase_twin() -> dict:
    from dataloaders.registry import load_trace
    from power import load_system
    from scheduler_sim.app.config import embedded_trace_path
    from scheduler_sim.kernel.simulation import Simulation, SimulationConfig
    from scheduler_sim.app.twin import DEFAULT_POOL, Objective, TwinPolicy, make_candidate

    system = load_system("theta")
    jobs = load_trace(embedded_trace_path(), max_nodes=system.n_nodes).jobs
    out: dict = {"horizon": {}, "queue": {}, "gain": {}}
    kw2 = dict(window_start_s=181 * 86400.0, window_s=2 * 86400.0)
    for h_h in (1, 3, 6, 12, 24):
        tw = TwinPolicy(DEFAULT_POOL, horizon_s=h_h * 3600.0, period_s=3600.0)
        Simulation(jobs, system, tw, SimulationConfig(**kw2)).run()
        lat = np.array(tw.latency_s)
        out["horizon"][h_h] = {"decisions": int(lat.size), "latency_mean_ms": 1e3 * float(lat.mean()),
                               "latency_max_ms": 1e3 * float(lat.max())}
        if h_h == 6:
            q = np.array([d[1] for d in tw.decisions])
            for lo, hi in ((0, 50), (50, 100), (100, 200), (200, 10**6)):
                m = (q >= lo) & (q < hi)
                if m.any():
                    out["queue"][f"{lo}-{hi}"] = {"decisions": int(m.sum()),
                                                  "latency_mean_ms": 1e3 * float(lat[m].mean())}
    obj = Objective()
    kw7 = dict(window_start_s=181 * 86400.0, window_s=7 * 86400.0)

    def total_J(res) -> float:
        s = res.jobs["wait_s"].to_numpy()
        return obj({"wait_s": float(np.nansum(s)), "E_facility_J": res.totals["E_it_J"] * 1.05})

    for spec in DEFAULT_POOL:
        t = time.perf_counter()
        res = Simulation(jobs, system, make_candidate(spec), SimulationConfig(**kw7)).run()
        out["gain"][spec] = {"mean_wait_h": res.summary["mean_wait_s"] / 3600, "J": total_J(res),
                             "E_facility_MWh": res.totals["E_it_J"] * 1.05 / 3.6e9, "wall_s": time.perf_counter() - t}
    tw = TwinPolicy(DEFAULT_POOL, horizon_s=6 * 3600.0, period_s=3600.0)
    t = time.perf_counter()
    res = Simulation(jobs, system, tw, SimulationConfig(**kw7)).run()
    chosen = [d[2] for d in tw.decisions]
    out["gain"]["twin"] = {"mean_wait_h": res.summary["mean_wait_s"] / 3600, "J": total_J(res),
                           "E_facility_MWh": res.totals["E_it_J"] * 1.05 / 3.6e9, "wall_s": time.perf_counter() - t,
                           "decisions": len(chosen), "chosen": {s: chosen.count(i) for i, s in enumerate(DEFAULT_POOL)},
                           "latency_mean_ms": 1e3 * float(np.mean(tw.latency_s))}
    best = min(DEFAULT_POOL, key=lambda s: out["gain"][s]["J"])
    out["gain"]["best_fixed"] = best
    out["gain"]["J_gain_vs_best_fixed_pct"] = 100 * (1 - out["gain"]["twin"]["J"] / out["gain"][best]["J"])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--phase", choices=["all", "sweep", "executor", "twin-ranks", "twin"], default="all")
    ap.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--json", default="", help="also write the results to this JSON file")
    a = ap.parse_args()
    res: dict = {"nproc": os.cpu_count(), "nproc_cmd": subprocess.run(["nproc"], capture_output=True,
                                                                          text=True).stdout.strip()}
    print(f"cores: nproc = {res['nproc_cmd']}")
    with tempfile.TemporaryDirectory() as d:
        work = Path(d)
        if a.phase in ("all", "sweep"):
            res["sweep"] = phase_sweep(a.ranks, work)
            print("sweep strong scaling (32 scenarios, cooling FMU on):")
            print("  ranks  wall [s]  speed-up  efficiency  load balance  busy s per rank          identical")
            for n, r in res["sweep"].items():
                print(f"  {n:5d}  {r['wall_s']:8.1f}  {r['speedup']:8.2f}  {r['efficiency']:10.2f}  "
                      f"{r['load_balance']:12.3f}  {str([round(b, 1) for b in r['busy_s_per_rank']]):24s} "
                      f"{r['identical_to_first']}")
            sw = list(res["sweep"].values())[0]["scenario_wall_s"]
            print(f"  scenario wall times {min(sw.values()):.1f}-{max(sw.values()):.1f} s")
        if a.phase == "executor":
            res["executor"] = e = phase_executor(work)
            print(f"sweep of {e['scenarios']} scenarios on 2 ranks: hand queue {e['hand_2_wall_s']:.1f} s "
                  f"(speed-up {e['hand_2_speedup']:.2f} over 1 rank, {e['hand_1_wall_s']:.1f} s), "
                  f"MPICommExecutor {e['executor_2_wall_s']:.1f} s (speed-up {e['executor_2_speedup']:.2f})")
        if a.phase in ("all", "twin-ranks"):
            res["twin_ranks"] = phase_twin_ranks(a.ranks, work)
            print("twin decision latency vs ranks (pool 4, horizon 6 h, 2 days of Theta, no plant):")
            for n, r in res["twin_ranks"].items():
                print(f"  {n} rank(s): {r['decisions']} decisions, mean {r['latency_mean_ms']:.1f} ms, median "
                      f"{r['latency_median_ms']:.1f} ms, max {r['latency_max_ms']:.1f} ms "
                      f"(starts checksum {r['starts_checksum']:.6e})")
        if a.phase in ("all", "twin"):
            res["twin"] = phase_twin()
            print("twin decision latency vs horizon (1 process, pool 4):")
            for h, r in res["twin"]["horizon"].items():
                print(f"  horizon {h:3d} h: mean {r['latency_mean_ms']:.1f} ms, max {r['latency_max_ms']:.1f} ms "
                      f"({r['decisions']} decisions)")
            print("twin decision latency vs queue length (horizon 6 h):")
            for k, r in res["twin"]["queue"].items():
                print(f"  queue {k:>9s}: mean {r['latency_mean_ms']:.1f} ms ({r['decisions']} decisions)")
            print("twin vs fixed policies, 7 days of Theta from day 181 (J = wait/1 h + E_facility/1 MWh):")
            g = res["twin"]["gain"]
            for k, r in g.items():
                if isinstance(r, dict):
                    print(f"  {k:18s} J {r['J']:12.1f}  mean wait {r['mean_wait_h']:7.2f} h  E_facility "
                          f"{r['E_facility_MWh']:8.1f} MWh  wall {r['wall_s']:.1f} s"
                          + (f"  chosen {r['chosen']}" if "chosen" in r else ""))
            print(f"  gain of the twin over the best fixed policy ({g['best_fixed']}): "
                  f"{g['J_gain_vs_best_fixed_pct']:.2f} % of J")
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=1, default=str))


if __name__ == "__main__":
    main()
