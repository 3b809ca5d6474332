"""Steps per second of the gymnasium environment (hpctwin/Facility-v0), plant off.

Theta 2022 (the embedded trace), K = 16 queued jobs in the observation, job mode, a random agent that draws among
the allowed actions (seeded). Resets are included in the rate (each draws a training window); the one-off trace
load when the environment is made is not. Prints one line per episode and the total, in wall time and in CPU time
of this process (``time.process_time``, which the load of a shared machine changes much less; the load average is
printed beside it). ``PYTHONPATH=OLD`` measures another source tree (e.g. an export of main) with the same script.

    .venv/bin/python benchmarks/bench_env.py [--episodes 5] [--window-days 7] [--mode job|policy]
"""

import argparse
import os
import time

import gymnasium as gym
import numpy as np

import scheduler_sim
import scheduler_sim.app.gym_env  # noqa: F401 - registers hpctwin/Facility-v0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=5)
    ap.add_argument("--window-days", type=float, default=7.0)
    ap.add_argument("--mode", choices=["job", "policy"], default="job")
    ap.add_argument("--K", type=int, default=16)
    a = ap.parse_args()
    t = time.perf_counter()
    env = gym.make("hpctwin/Facility-v0", config={"K": a.K, "window_days": a.window_days, "mode": a.mode})
    print(f"make (trace load) {time.perf_counter() - t:.2f} s")
    rng = np.random.default_rng(0)
    load0 = os.getloadavg()[0]
    steps, t0, c0 = 0, time.perf_counter(), time.process_time()
    for ep in range(a.episodes):
        te = time.perf_counter()
        obs, info = env.reset(seed=ep)
        day = info["start_day"]
        n, done = 0, False
        while not done:
            obs, r, done, trunc, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
            n += 1
        dt = time.perf_counter() - te
        steps += n
        print(f"episode {ep}: window day {day:g}, {n} steps in {dt:.2f} s "
              f"({n / dt:,.0f} steps/s), mean wait {info['summary']['mean_wait_s'] / 3600:.2f} h")
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(f"{steps} steps in {wall:.2f} s: {steps / wall:,.0f} steps per second (mode {a.mode}, K = {a.K}, "
          f"{a.window_days:g}-day windows, plant off, resets included)")
    print(f"{steps} steps in {cpu:.2f} s of CPU: {steps / cpu:,.0f} steps per CPU second (load average "
          f"{load0:.1f} -> {os.getloadavg()[0]:.1f}; {scheduler_sim.__file__})")
    env.close()


if __name__ == "__main__":
    main()
