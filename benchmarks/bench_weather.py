"""Benchmark: wet-bulb lookups (issue 16 item 1) and the run time they cost.

Part 1, in this process: the wet-bulb of a full year at 15 s steps, looked up in blocks of ``--block`` steps the
way the simulation's ``_emit`` does, (a) with ``numpy.interp(period=...)`` on the hourly table (the former code,
which sorts the 8,760-row table on every call) and (b) with :class:`cooling_fmu.weather.Weather` (periodic table
built once). Prints the median over ``--repeat`` repeats, the ratio, and checks the two are bit-identical. Also
the load time of a weather file: parse + psychrolib (cold) and from the wet-bulb cache (warm).

Part 2 (``--days D``): a Theta-like run of D days from day 0 with the cooling FMU, the Golden TMY3 weather and
every job at the default utilisation (as before the job-power spread),
each in a fresh child process, for this checkout and for ``--root OLD_CHECKOUT`` (an older checkout, e.g. main
before this change) in the same invocation; prints median wall times and their ratio.

    .venv/bin/python benchmarks/bench_weather.py [--repeat 3] [--block 44] [--days 366 --root /work/main]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

CHILD = r"""
import sys, time
sys.path.insert(0, {root!r})
from scheduler_sim.config import RunConfig
from scheduler_sim.runner import run_one
ov = {{"name": "bench-weather", "trace.window_start_days": 0.0, "trace.window_days": {days!r},
      "cooling.step_s": 15.0, "output.interval_s": 60.0, "output.progress": False}}
fields = RunConfig.model_fields["cooling"].annotation.model_fields
if "weather_path" in fields and "file" in str(fields["weather"].annotation):
    ov["cooling.weather_path"] = "golden"
else:
    ov["cooling.weather"] = "tmy3"
if "job_power_spread" in RunConfig.model_fields["power"].annotation.model_fields:
    ov["power.job_power_spread"] = "none"  # same job powers as an older checkout: time the weather alone
cfg = RunConfig().with_overrides(ov)
t0 = time.perf_counter()
r = run_one(cfg, None, progress=False)
print(time.perf_counter() - t0, r.summary["PUE"], r.info["cooling_steps"])
"""


def lookups(repeat: int, block: int) -> None:
    from cooling_fmu.weather import DEFAULT_TMY3, YEAR_S, Weather, load_tmy3

    df, _ = load_tmy3(DEFAULT_TMY3)
    xp, fp = df["time_s"].to_numpy(), df["T_wb_K"].to_numpy()
    off = Weather.offset_for(1)
    w = Weather(xp, fp, offset_s=off)
    t = np.arange(0.0, YEAR_S, 15.0) + 7.5
    blocks = [t[i:i + block] for i in range(0, t.size, block)]
    old_t, new_t = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        a = [np.interp(b + off, xp, fp, period=YEAR_S) for b in blocks]
        old_t.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        c = [w.wet_bulb_K(b) for b in blocks]
        new_t.append(time.perf_counter() - t0)
    same = all(np.array_equal(x, y) for x, y in zip(a, c))
    mo, mn = statistics.median(old_t), statistics.median(new_t)
    print(f"wet-bulb lookups, one year at 15 s ({t.size:,} steps) in {len(blocks):,} blocks of {block}:")
    print(f"  np.interp(period=...) {mo:8.3f} s   periodic table {mn:8.3f} s   ratio {mo / mn:6.1f}x   "
          f"bit-identical {same}")


def loading(repeat: int) -> None:
    from cooling_fmu.weather import SITES, DATA_DIR, load_weather

    path = DATA_DIR / SITES["chicago"][0]
    with tempfile.TemporaryDirectory() as d:
        os.environ["HPCTWIN_WEATHER_CACHE_DIR"] = d
        cold, warm = [], []
        for _ in range(repeat):
            for f in Path(d).glob("*"):
                f.unlink()
            t0 = time.perf_counter()
            load_weather(path)
            cold.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            load_weather(path)
            warm.append(time.perf_counter() - t0)
        del os.environ["HPCTWIN_WEATHER_CACHE_DIR"]
    mc, mw = statistics.median(cold), statistics.median(warm)
    print(f"weather file load (Chicago EPW): parse + psychrolib {mc:.3f} s, from the cache {mw:.4f} s, "
          f"ratio {mc / mw:.0f}x")


def runs(days: float, repeat: int, root_old: str | None) -> None:
    here = str(Path(__file__).resolve().parents[1])
    roots = [("this checkout", here)] + ([("--root", str(Path(root_old).resolve()))] if root_old else [])
    res = {}
    for label, root in roots:
        walls = []
        for _ in range(repeat):
            out = subprocess.run([sys.executable, "-c", CHILD.format(root=root, days=float(days))], check=True,
                                 capture_output=True, text=True, cwd=root).stdout.split()
            walls.append(float(out[0]))
        res[label] = statistics.median(walls)
        print(f"run {days:g} days, Golden weather, FMU 15 s [{label}: {root}]: median wall {res[label]:.1f} s "
              f"over {repeat} (PUE {float(out[1]):.6f}, {int(out[2]):,} cooling steps)")
    if len(res) == 2:
        print(f"speed-up: {res['--root'] / res['this checkout']:.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3, help="repeats (median reported)")
    ap.add_argument("--block", type=int, default=44, help="steps per lookup (full Theta year: ~44 on average)")
    ap.add_argument("--days", type=float, default=0.0, help="also time a run of this many days (0: no run)")
    ap.add_argument("--root", help="older checkout to time the same run against")
    a = ap.parse_args()
    lookups(a.repeat, a.block)
    loading(a.repeat)
    if a.days > 0:
        runs(a.days, 1 if a.days > 60 else a.repeat, a.root)


if __name__ == "__main__":
    main()
