"""Benchmark (issue #24 speed rule): a 30-day run of a 4,096-GPU training job with iteration-level power.

The run is ``experiments/training/llama3_70b_4k.toml`` (Llama 3 70B on all 512 nodes of the one-type H100 cluster,
interleaved 1F1B, 648 h of useful training, checkpoints every 30 min, failures at the Llama 3 rate). The job's power
is its iteration's phase shape (compute, bubble, exposed communication: a :class:`power.ramps.PhaseProfile`)
integrated in closed form over whole iterations: the kernel sees one power step per timeline segment (training,
checkpoint write, detection and restart), never one event per iteration, and the 1 s ramp statistics and the
spectrum come from the same closed form.

Prints the wall time of building the job (iteration model + resilience timeline), of the whole run (scheduler,
power chain, plant, HDF5 file), of the closed-form ramp and spectrum, the iterations the run covers and the power
steps the kernel integrated. Exit status 1 if the run takes 60 s or more (the rule: seconds, not minutes).

    python benchmarks/bench_training_30d.py [--cooling fast|fmu] [--out FILE.h5]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    """Run the benchmark and print its figures.

    Returns
    -------
    int
        0 if the 30-day run took less than 60 s of wall time, else 1.
    """
    import h5py
    import numpy as np

    from power import load_system
    from scheduler_sim.app.config import load_config
    from scheduler_sim.app.runner import run_one
    from scheduler_sim.app.workloads import training_jobs

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--cooling", choices=("off", "fast", "fmu"), default="off",
                    help="off: scheduler, job power, conversion chain, attribution and the HDF5 file, no plant "
                         "(what the speed rule is about); fast: + the fast plant; fmu: + the Modelica cooling FMU")
    ap.add_argument("--out", default="", help="HDF5 output (default: a temporary file)")
    a = ap.parse_args()
    cfg = load_config(ROOT / "experiments/training/llama3_70b_4k.toml")
    if a.cooling != "fmu":
        cfg = cfg.with_overrides({"cooling.model": a.cooling})
    system = load_system(cfg.system)
    t0 = time.perf_counter()
    tj = training_jobs(cfg.workload, system, cfg.seed)
    t_build = time.perf_counter() - t0
    rep = tj.reports[0]
    prof = tj.profiles[rep["job_id"]]
    t0 = time.perf_counter()
    ramp = prof.max_ramp_W(1.0)
    harm = [2 * abs(prof.fourier(k)) for k in range(1, 9)]
    t_closed = time.perf_counter() - t0
    out = Path(a.out) if a.out else Path(tempfile.mkdtemp(prefix="bench-training-")) / "run.h5"
    t0, c0 = time.perf_counter(), time.process_time()
    res = run_one(cfg, out)
    t_run, c_run = time.perf_counter() - t0, time.process_time() - c0
    with h5py.File(out, "r") as f:
        n_out = f["timeseries/time_s"].shape[0] if "timeseries/time_s" in f else -1
    steps = int((tj.power_series["job_id"] == rep["job_id"]).sum())
    print(f"job: {rep['model']} on {rep['gpus']:,} GPUs ({rep['nodes']} nodes), iteration {rep['t_iter_s']:.3f} s, "
          f"MFU {rep['mfu']:.3f}; wall {rep['wall_s'] / 86400:.2f} days, ETTR {rep['ettr']:.4f}, "
          f"{rep['n_failures']} failures, {rep['n_checkpoints']:,} checkpoints")
    print(f"iterations covered: {rep['iterations']:,.0f}; power steps given to the kernel: {steps:,} "
          f"({rep['iterations'] / max(steps, 1):,.0f} iterations per step, closed form inside each)")
    print(f"build (iteration model + timeline): {t_build:.3f} s; closed-form 1 s ramp "
          f"{ramp * rep['nodes'] / 1e3:,.1f} kW of node DC power"
          + (f", harmonics 1-8: {np.round(np.asarray(harm) * rep['nodes'] / 1e3, 1).tolist()} kW" if harm else "")
          + f" ({t_closed * 1e3:.2f} ms)")
    pue = res.summary.get("PUE", float("nan"))
    print(f"30-day run, cooling {a.cooling}: {t_run:.1f} s wall, {c_run:.1f} s CPU (PUE {pue:.4f}, {n_out:,} output "
          f"rows) -> {30 * 86400 / t_run:,.0f}x real time")
    return 0 if t_run < 60.0 else 1


if __name__ == "__main__":
    sys.exit(main())
