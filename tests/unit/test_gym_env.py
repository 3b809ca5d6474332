"""The gymnasium environment: registration, check_env, seeded windows and split, and agents with exact references."""

import numpy as np
import pytest

gym = pytest.importorskip("gymnasium", reason="gymnasium is the optional extra `rl` (pip install -e '.[rl]')")
pytest.importorskip("greenlet", reason="greenlet is part of the optional extra `rl`")

import scheduler_sim.app.gym_env  # noqa: E402,F401 - registers hpctwin/Facility-v0
from scheduler_sim.app.runner import simulation_config  # noqa: E402
from scheduler_sim.kernel.simulation import Simulation  # noqa: E402


@pytest.fixture(scope="module")
def env():
    e = gym.make("hpctwin/Facility-v0", config={"K": 16, "window_days": 1.0})
    yield e
    e.close()


def _run(env, agent, seed=0, day=None):
    obs, info = env.reset(seed=seed, options={"start_day": day} if day is not None else None)
    tot = {"reward": 0.0, "wait_s": 0.0, "energy_J": 0.0, "steps": 0}
    done = False
    while not done:
        obs, r, done, trunc, info = env.step(agent(obs, info))
        assert env.observation_space.contains(obs)
        tot["reward"] += r
        tot["wait_s"] += info["wait_s"]
        tot["energy_J"] += info["energy_J"]
        tot["steps"] += 1
    return tot, info


def _reference(env, day, policy, backfill=None):
    u = env.unwrapped
    cfg = u.base.with_overrides({"trace.window_start_days": day, "scheduler.backfill": backfill or "none"})
    return Simulation(u.jobs, u.system, policy, simulation_config(cfg, u.system)).run()


def test_env_passes_the_gymnasium_checker(env):
    from gymnasium.utils.env_checker import check_env
    check_env(env.unwrapped, skip_render_check=True)
    assert env.action_space.n == 17 and env.observation_space.shape == (72,)


def test_seeded_reset_and_train_test_split(env):
    u = env.unwrapped
    assert not set(u.train_days) & set(u.test_days)
    n = len(u.train_days) + len(u.test_days)
    assert len(u.test_days) == round(0.2 * n)
    o1, i1 = env.reset(seed=11)
    o2, i2 = env.reset(seed=11)
    assert i1["start_day"] == i2["start_day"] and np.array_equal(o1, o2)
    assert i1["start_day"] in u.train_days
    t = gym.make("hpctwin/Facility-v0", config={"split": "test"})
    assert t.reset(seed=3)[1]["start_day"] in u.test_days
    t.close()


def test_head_of_queue_agent_is_exactly_fcfs(env):
    """Start the first queued job when it fits, else wait: that is FCFS without backfill, decision for decision."""
    K = env.unwrapped.K

    def head(obs, info):
        return 0 if info["action_mask"][0] else K

    tot, info = _run(env, head, day=190.0)
    ref = _reference(env, 190.0, "fcfs")
    s = info["summary"]
    assert s["mean_wait_s"] == ref.summary["mean_wait_s"]
    assert s["E_node_dc_J"] == ref.summary["E_node_dc_J"]
    jobs = ref.jobs
    # the reward's wait term integrates exactly the waiting the run reports
    assert tot["wait_s"] == pytest.approx(float(np.sum(jobs["wait_s"])), rel=1e-9)
    assert tot["reward"] < 0


def test_policy_mode_with_one_policy_is_that_policy(tmp_path):
    e = gym.make("hpctwin/Facility-v0", config={"mode": "policy", "pool": ["fcfs+easy", "sjf+easy"],
                                                "period_s": 7200.0})
    tot, info = _run(e, lambda obs, info: 0, day=200.0)
    ref = _reference(e, 200.0, "fcfs", "easy")
    assert info["summary"]["mean_wait_s"] == ref.summary["mean_wait_s"]
    assert tot["steps"] >= 12  # one decision per 2 h of a day with jobs queued, at least
    e.close()


def test_random_agent_runs_every_job_and_its_reward_adds_up(env):
    rng = np.random.default_rng(4)

    def rand(obs, info):
        return int(rng.choice(np.flatnonzero(info["action_mask"])))

    tot, info = _run(env, rand, day=190.0)
    s = info["summary"]
    assert s["jobs_not_run"] == 0
    w = env.unwrapped.opts
    assert tot["reward"] == pytest.approx(-(w["w_wait_per_s"] * tot["wait_s"] + w["w_energy_per_J"] * tot["energy_J"]),
                                          rel=1e-12)
    fcfs = _reference(env, 190.0, "fcfs")
    # the same jobs run for the same time whatever the order: the busy-node energy of the reward is policy-free
    assert tot["energy_J"] == pytest.approx(float(np.sum(fcfs.jobs["energy_dc_J"])), rel=1e-9)


def test_masked_action_is_replaced_and_reported(env):
    obs, info = env.reset(seed=0, options={"start_day": 190.0})
    for _ in range(500):  # start jobs until the machine is full enough that some action is masked
        if (~info["action_mask"]).any():
            break
        obs, _, done, _, info = env.step(0)
        assert not done
    bad = int(np.flatnonzero(~info["action_mask"])[0])
    n_before = info["now_s"]
    _, _, _, _, info = env.step(bad)
    assert info["action_replaced"] is True and info["now_s"] >= n_before


def _fingerprint(mode, episodes):
    """Digest of every observation, mask and time, the action sequence and the reward sums of a seeded random
    agent over ``episodes`` (seeds), 1-day windows."""
    import hashlib

    e = gym.make("hpctwin/Facility-v0", config={"K": 16, "window_days": 1.0, "mode": mode})
    rng = np.random.default_rng(7)
    h, acts, rs = hashlib.sha256(), [], []
    for ep in episodes:
        obs, info = e.reset(seed=ep)
        h.update(obs.tobytes())
        h.update(info["action_mask"].tobytes())
        done = False
        while not done:
            a = int(rng.choice(np.flatnonzero(info["action_mask"])))
            obs, r, done, _, info = e.step(a)
            acts.append(a)
            rs.append(r)
            h.update(obs.tobytes())
            h.update(info["action_mask"].tobytes())
            h.update(np.float64(info["now_s"]).tobytes())
    e.close()
    return len(acts), h.hexdigest(), hashlib.sha256(np.array(acts).tobytes()).hexdigest(), float(np.sum(rs))


@pytest.mark.parametrize("mode, episodes, expected", [
    ("job", [0, 1, 2], (549, "9e74c2a0f7d5c3b417b4643f176f340b23ac0b4dbdbf2da1faf40279580458f1",
                        "f4fab331cb8e4ff8238f7dece75e7c9fc6838b944a3148b02fd64044e412942e", -8985.779406852893)),
    ("policy", [3], (36, "9aecd876c59b416161d1d7fcb3f908c82475f4d3c7bb1c9ee025b888ecaece54",
                     "a088f8c20a1746c16404068304114ae00f09bcb8540319a020ef9eb0f6cf5347", -2908.986277192625)),
])
def test_seeded_trajectory_is_unchanged_by_the_speed_work(mode, episodes, expected):
    """Same seeds -> the same trajectory as the environment before its speed-up (recorded with the code of main
    04864c7): every observation and mask bit for bit, the same actions, the reward sum to 1e-12."""
    n, obs_digest, act_digest, r_sum = _fingerprint(mode, episodes)
    assert (n, obs_digest, act_digest) == expected[:3]
    assert r_sum == pytest.approx(expected[3], rel=1e-12)
