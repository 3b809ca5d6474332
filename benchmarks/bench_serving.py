"""Benchmark: replay the Azure LLM conversation hour (19,366 requests) on the 8-GPU deployment.

Prints the engine's wall time, real-time factor and events/s (target: < 10 s wall, >= 360x real time).

    python benchmarks/bench_serving.py [--chunked]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    """Run the benchmark and print its figures; exit status 1 if the hour takes 10 s or more."""
    from dataloaders.registry import load_trace
    from scheduler_sim.serving.engine import BatchLimits, ServingEngine
    from scheduler_sim.serving.hardware import load_deployment

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--chunked", action="store_true", help="chunked prefill")
    a = ap.parse_args()
    t0 = time.perf_counter()
    req = load_trace(ROOT / "experiments/data/AzureLLMInferenceTrace_conv.csv.gz", format="azure_llm").jobs
    t_load = time.perf_counter() - t0
    dep = load_deployment(ROOT / "experiments/serving/llama3-70b_h100_tp4x2.toml")
    res = ServingEngine(dep, BatchLimits(chunked_prefill=a.chunked)).run(req)
    i = res.info
    span = i["t_end_s"]
    print(f"Azure conversation trace: {len(req)} requests, {span:.0f} s simulated (load {t_load:.2f} s)")
    print(f"deployment {dep.name}: {dep.n_gpus} GPUs, chunked prefill {a.chunked}")
    print(f"engine wall {i['wall_time_s']:.2f} s  -> {span / i['wall_time_s']:,.0f}x real time")
    print(f"events {i['events']:,} ({i['events_per_s']:,.0f} events/s); decode steps {i['decode_steps']:,} in "
          f"{i['decode_runs']:,} bulk runs; prefill steps {i['prefill_steps']:,}; mixed {i['mixed_steps']:,}")
    return 0 if i["wall_time_s"] < 10.0 else 1


if __name__ == "__main__":
    sys.exit(main())
