"""Train a small masked policy on ``hpctwin/Facility-v0`` with stable-baselines3 (never a dependency of hpctwin).

Needs ``sb3-contrib`` (MaskablePPO, which reads the environment's ``action_masks()``); without it the script says
so and exits with status 0. Trains on the training windows, then compares the learnt policy with the head-of-queue
heuristic (FCFS without backfill) on test windows by mean wait.

    .venv/bin/python experiments/rl_train_sb3.py [--steps 20000] [--window-days 1]
"""

from __future__ import annotations

import argparse
import sys

import numpy as np


def _episode(env, act, seed: int) -> float:
    """Mean wait [s] of one test episode under ``act(obs, mask) -> action``."""
    obs, info = env.reset(seed=seed)
    done = False
    while not done:
        obs, _, done, _, info = env.step(act(obs, info["action_mask"]))
    return float(info["summary"]["mean_wait_s"])


def main() -> int:
    """Train and compare; returns the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20000)
    ap.add_argument("--window-days", type=float, default=1.0)
    a = ap.parse_args()
    try:
        import gymnasium as gym
        from sb3_contrib import MaskablePPO
    except ImportError as exc:
        print(f"rl_train_sb3: {exc.name} is not installed (pip install sb3-contrib); nothing to train")
        return 0
    import scheduler_sim.app.gym_env  # noqa: F401 - registers hpctwin/Facility-v0

    cfg = {"K": 16, "window_days": a.window_days}
    env = gym.make("hpctwin/Facility-v0", config=cfg).unwrapped
    model = MaskablePPO("MlpPolicy", env, seed=0, verbose=0, n_steps=512)
    model.learn(total_timesteps=a.steps)
    test = gym.make("hpctwin/Facility-v0", config={**cfg, "split": "test"}).unwrapped
    K = test.K
    learnt = [_episode(test, lambda o, m: int(model.predict(o, action_masks=m, deterministic=True)[0]), s)
              for s in range(5)]
    head = [_episode(test, lambda o, m: 0 if m[0] else K, s) for s in range(5)]
    print(f"test windows: mean wait learnt {np.mean(learnt) / 3600:.2f} h, head of queue {np.mean(head) / 3600:.2f} h")
    return 0


if __name__ == "__main__":
    sys.exit(main())
