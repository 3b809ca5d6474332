"""The twin in the scheduling loop: forks reproduce the main run, a one-policy pool is that policy, MPI rollouts
give the same decisions as serial ones."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from power.system import System
from scheduler_sim.policies import BasePolicy, make_policy
from scheduler_sim.kernel.simulation import Simulation, SimulationConfig
from scheduler_sim.app.twin import Objective, TwinPolicy, make_candidate
from tests.conftest import make_jobs, tiny_system_spec

MPIEXEC = Path(sys.executable).parent / "mpiexec"


def _workload(n: int = 60, n_nodes: int = 16, seed: int = 3) -> list[tuple]:
    """A random but fixed workload: (id, submit, nodes, runtime, requested), requested >= runtime mostly."""
    rng = np.random.default_rng(seed)
    rows = []
    t = 0.0
    for i in range(n):
        t += float(rng.exponential(300.0))
        rt = float(rng.choice([60.0, 600.0, 3600.0, 7200.0]))
        req = rt * float(rng.choice([1.0, 1.5, 3.0, 0.8]))
        rows.append((i + 1, round(t), int(rng.integers(1, n_nodes // 2 + 1)), rt, req))
    return rows


@pytest.fixture
def system16():
    return System.from_spec(tiny_system_spec(n_nodes=16, n_cdus=2, racks_per_cdu=2), source="tiny16")


class _ForkAt(BasePolicy):
    """Runs ``inner`` and, at the first pass at or after ``t_fork``, forks the platform and rolls it out."""

    name = "fork-at"

    def __init__(self, inner: BasePolicy, t_fork: float, horizon: float) -> None:
        self.inner, self.t_fork, self.horizon = inner, t_fork, horizon
        self.fork = None

    def bind(self, queue_names, account_names):
        self.inner.bind(queue_names, account_names)

    def job_ended(self, job, view):
        self.inner.job_ended(job, view)

    def schedule(self, view):
        if self.fork is None and view.now_s >= self.t_fork:
            import copy
            self.snap = view.lookahead.snapshot()  # the fork/rollout service: the policy never holds the platform
            self.fork = self.snap._fork.fork(copy.deepcopy(self.inner))  # the fork a rollout runs (to read it)
            self.t = view.now_s
            self.score = self.fork.rollout(view.now_s + self.horizon)
            self.queued_at_fork = list(view.queue)
        return self.inner.schedule(view)


@pytest.mark.parametrize("spec", ["fcfs+easy", "sjf+conservative", "priority+easy"])
def test_rollout_of_the_active_policy_reproduces_the_main_run(system16, spec):
    jobs = make_jobs(_workload())
    probe = _ForkAt(make_candidate(spec), t_fork=4000.0, horizon=5000.0)
    res = Simulation(jobs, system16, probe, SimulationConfig(window_start_s=0.0, window_s=1e6)).run()
    end = probe.t + probe.horizon
    main = res.jobs["sim_start_s"].to_numpy()
    fork = probe.fork.start
    upto = (main <= end) | (fork <= end)
    assert upto.sum() > 10 and np.array_equal(main[upto], fork[upto])
    # the wait score is the waiting accrued in [t, t + horizon] by jobs not started before t
    sub = res.jobs["submit_time_s"].to_numpy()
    pending = ~(main < probe.t) & (sub < end)
    expect = np.clip(np.minimum(main[pending], end) - np.maximum(sub[pending], probe.t), 0, None).sum()
    assert probe.score["wait_s"] == pytest.approx(expect, rel=1e-12)
    assert probe.score["E_facility_J"] == pytest.approx(probe.score["E_it_J"] * 1.05)
    # the main run was not disturbed by the fork
    plain = Simulation(jobs, system16, make_candidate(spec), SimulationConfig(window_start_s=0.0, window_s=1e6)).run()
    assert np.array_equal(plain.jobs["sim_start_s"].to_numpy(), main)


def test_rollout_energy_is_exact(system16):
    # fork at the first pass (all idle before it) and roll out past the end of the run: the fork's IT energy is
    # the main run's, minus the idle energy before the fork, plus idle energy after the run's end
    from power import PowerChain

    jobs = make_jobs(_workload(n=20))
    probe = _ForkAt(make_policy("easy"), t_fork=0.0, horizon=3e5)
    res = Simulation(jobs, system16, probe, SimulationConfig(window_start_s=0.0, window_s=1e6)).run()
    idle_it = float(PowerChain(system16).evaluate(np.full(16, 100.0)).it_input_W)
    t, t_final, h = probe.t, res.info["t_final_s"], probe.horizon
    expect = res.totals["E_it_J"] - idle_it * t + idle_it * (t + h - t_final)
    assert probe.score["E_it_J"] == pytest.approx(expect, rel=1e-9)
    assert probe.score["started"] == 20


@pytest.mark.parametrize("spec", ["fcfs+easy", "sjf+easy", "fcfs+conservative", "priority+easy"])
def test_single_policy_pool_reproduces_that_policy_exactly(system16, spec):
    jobs = make_jobs(_workload())
    plain = Simulation(jobs, system16, make_candidate(spec), SimulationConfig(window_start_s=0.0, window_s=1e6)).run()
    twin = TwinPolicy([spec], horizon_s=3600.0, period_s=600.0)
    res = Simulation(jobs, system16, twin, SimulationConfig(window_start_s=0.0, window_s=1e6)).run()
    assert len(twin.decisions) > 5
    for col in ("sim_start_s", "sim_end_s", "outcome", "energy_it_J"):
        assert np.array_equal(plain.jobs[col].to_numpy(), res.jobs[col].to_numpy()), col
    for k, v in plain.allocations.items():
        assert np.array_equal(v, res.allocations[k]), k
    assert res.info["twin_pool"] == [make_candidate(spec).name]


def test_twin_picks_the_best_candidate_and_switches(system16):
    jobs = make_jobs(_workload(n=80))
    twin = TwinPolicy(["fcfs+easy", "sjf+easy", "fcfs"], horizon_s=7200.0, period_s=900.0)
    res = Simulation(jobs, system16, twin, SimulationConfig(window_start_s=0.0, window_s=1e6)).run()
    chosen = {d[2] for d in twin.decisions}
    assert len(twin.decisions) == len(twin.latency_s) > 5
    for t, q, best, J in twin.decisions:
        assert J[best] == min(J) and best == J.index(min(J))
    assert len(chosen) >= 2, twin.decisions  # this workload makes it switch
    fixed = {s: Simulation(jobs, system16, make_candidate(s), SimulationConfig(window_start_s=0.0, window_s=1e6)).run()
             for s in ("fcfs+easy", "sjf+easy", "fcfs")}
    assert res.summary["mean_wait_s"] <= max(r.summary["mean_wait_s"] for r in fixed.values())
    json.dumps(res.info["twin_decisions"])  # deterministic decisions are written to info_json


def test_objective_units_and_validation():
    obj = Objective(w_wait_per_s=1 / 3600, w_energy_per_J=1 / 3.6e9)
    assert obj({"wait_s": 7200.0, "E_facility_J": 3.6e9}) == pytest.approx(3.0)
    with pytest.raises(ValueError, match="replay"):
        TwinPolicy(["replay"])
    with pytest.raises(ValueError, match="horizon"):
        TwinPolicy(["easy"], horizon_s=0.0)
    with pytest.raises(ValueError, match="no backfill"):
        make_policy("twin", "easy")


def test_fork_pickles(system16):
    jobs = make_jobs(_workload(n=20))
    probe = _ForkAt(make_policy("easy"), t_fork=1000.0, horizon=100.0)
    Simulation(jobs, system16, probe, SimulationConfig(window_start_s=0.0, window_s=1e6)).run()
    f2 = pickle.loads(pickle.dumps(probe.fork))
    assert np.array_equal(f2.start, probe.fork.start, equal_nan=True)
    s2 = pickle.loads(pickle.dumps(probe.snap))  # a snapshot pickles (MPI rollouts) and keeps its time
    assert s2.now_s == probe.snap.now_s == probe.t


_MPI_TWIN = """
import json, sys
import numpy as np
from mpi4py import MPI
from power.system import System
from scheduler_sim.kernel.simulation import Simulation, SimulationConfig
from scheduler_sim.app.twin import TwinPolicy, serve_rollouts, stop_rollout_workers
from tests.conftest import make_jobs, tiny_system_spec
from tests.integration.test_twin import _workload
comm = MPI.COMM_WORLD
system = System.from_spec(tiny_system_spec(n_nodes=16, n_cdus=2, racks_per_cdu=2), source="tiny16")
if comm.Get_rank() != 0:
    serve_rollouts(comm)
    sys.exit(0)
try:
    twin = TwinPolicy(["fcfs+easy", "sjf+easy", "fcfs", "fcfs+conservative"], horizon_s=7200.0, period_s=900.0,
                      comm=comm)
    res = Simulation(make_jobs(_workload(n=80)), system, twin, SimulationConfig(window_start_s=0.0, window_s=1e6)).run()
finally:
    stop_rollout_workers(comm)
print(json.dumps({"starts": res.jobs["sim_start_s"].tolist(), "decisions": twin.decisions}))
"""


@pytest.mark.mpi
def test_mpi_rollouts_equal_serial_rollouts(tmp_path, system16):
    if not MPIEXEC.exists():
        pytest.skip("no mpiexec next to the interpreter")
    script = tmp_path / "twin_mpi.py"
    script.write_text(_MPI_TWIN)
    root = str(Path(__file__).resolve().parents[2])
    r = subprocess.run([str(MPIEXEC), "-n", "3", sys.executable, "-m", "mpi4py", str(script)], capture_output=True,
                       text=True, timeout=120, cwd=root, env={**__import__("os").environ, "PYTHONPATH": root})
    assert r.returncode == 0, r.stdout + r.stderr
    got = json.loads(r.stdout.strip().splitlines()[-1])
    twin = TwinPolicy(["fcfs+easy", "sjf+easy", "fcfs", "fcfs+conservative"], horizon_s=7200.0, period_s=900.0)
    res = Simulation(make_jobs(_workload(n=80)), system16, twin, SimulationConfig(window_start_s=0.0, window_s=1e6)).run()
    assert got["starts"] == res.jobs["sim_start_s"].tolist()
    assert got["decisions"] == json.loads(json.dumps(twin.decisions))


def _datasets(path) -> dict[str, np.ndarray]:
    import h5py

    out = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda name, obj: out.__setitem__(name, obj[()]) if isinstance(obj, h5py.Dataset) else None)
    return out


def test_twin_of_the_plain_policy_writes_the_plain_run_with_requeues_and_measured_power(system16, tmp_path):
    """Issue #12 kind 9: a fork is a full copy, so a twin whose only candidate is the plain policy writes exactly
    the plain run's datasets, even when rollouts requeue profiled jobs after node failures (a rollout used to
    overwrite the main run's ``_attempt_it0`` / ``_attempt_shares`` and the job's last attempt was written at
    0 W). Expected values: the plain run (no fork at all)."""
    import pandas as pd

    from scheduler_sim.io.hdf5 import write_run

    jobs = make_jobs(_workload())
    jobs["measured_node_power_W"] = np.where(np.arange(len(jobs)) % 2 == 0, 250.0, np.nan)
    prof = pd.DataFrame([(jid, off, p) for jid in jobs["job_id"][::2]
                         for off, p in ((0.0, 200.0), (30.0, 280.0), (400.0, 150.0))],
                        columns=["job_id", "t_offset_s", "node_power_W"])
    # failures while jobs run, inside the twin's rollout horizons (decisions every 600 s, horizon 3600 s)
    fail = np.array([[3000.0, 9000.0, 1.0], [5000.0, 7000.0, 9.0], [20000.0, 30000.0, 3.0]])
    cfg = SimulationConfig(window_start_s=0.0, window_s=1e6, failures=fail, use_measured_power=True)
    plain = Simulation(jobs, system16, make_candidate("fcfs+easy"), cfg, job_power_profiles=prof).run()
    twin = TwinPolicy(["fcfs+easy"], horizon_s=3600.0, period_s=600.0)
    res = Simulation(jobs, system16, twin, cfg, job_power_profiles=prof).run()
    assert plain.info["requeues"] == 3 and len(twin.decisions) > 20
    files = []
    for name, r in (("plain", plain), ("twin", res)):
        files.append(write_run(tmp_path / f"{name}.h5", r, "{}", run_name="r", system_name="tiny16",
                               policy="p", seed=0, input_checksums={}))
    a, b = _datasets(files[0]), _datasets(files[1])
    assert a.keys() == b.keys() and len(a) > 40
    for k in a:
        assert a[k].dtype == b[k].dtype and a[k].shape == b[k].shape, k
        if a[k].dtype.kind == "f":
            assert np.array_equal(a[k], b[k], equal_nan=True), k
        else:
            assert np.array_equal(a[k], b[k]), k
    assert plain.totals == res.totals
    # every attempt of a profiled job carries its mean rack-input power: attempts' energies add up to the job's
    al = res.allocations
    ids = res.jobs["job_id"].to_numpy()
    profiled = set(prof["job_id"].tolist())
    requeued = [int(i) for i, n in zip(ids, res.jobs["requeues"].to_numpy()) if n > 0 and int(i) in profiled]
    assert requeued
    for jid in requeued:
        rows = al["job_id"] == jid
        e = float((al["it_power_W"][rows] * (al["end_s"][rows] - al["start_s"][rows])).sum())
        assert np.all(al["it_power_W"][rows] > 0)
        assert e == pytest.approx(float(res.jobs.loc[res.jobs["job_id"] == jid, "energy_it_J"].iloc[0]), rel=1e-12)


class _LinearPlant:
    """A plant whose steady cooling power is ``a * sum(Q) + c * (T_wb - 273.15)`` [W] (an analytic stand-in for the
    quasi-steady plant's ``steady_outputs``)."""

    P_cooling_index = 0

    def __init__(self, a: float, c: float) -> None:
        self.a, self.c = a, c

    def steady_outputs(self, heat_W, T_wb_K):
        return (self.a * heat_W.sum(axis=1) + self.c * (T_wb_K - 273.15))[:, None]


def test_rollout_cooling_energy_is_the_plant_integral_over_the_horizon(system16):
    """With a RolloutCooling, a rollout's cooling energy is the plant's power integrated over the horizon. For the
    linear plant above and a wet-bulb rising linearly in time the integral is analytic:
    E_cooling = a E_heat + c (T(t) + T(t + H) - 2 * 273.15) / 2 * H (midpoint steps integrate a linear T exactly),
    and E_heat = E_it on this fully liquid-cooled system without facility stages (overheads absent)."""
    from scheduler_sim.kernel.lookahead import RolloutCooling

    jobs = make_jobs(_workload(n=20))
    probe = _ForkAt(make_policy("easy"), t_fork=1000.0, horizon=7000.0)
    Simulation(jobs, system16, probe, SimulationConfig(window_start_s=0.0, window_s=1e6)).run()
    t, h = probe.t, probe.horizon
    wb = lambda ts: 280.0 + 1e-4 * np.asarray(ts, float)  # noqa: E731 - 0.36 K per hour
    frozen = probe.snap.rollout(make_policy("easy"), t + h)
    a, c = 0.04, 50.0
    cooled = probe.snap.rollout(make_policy("easy"), t + h, RolloutCooling(_LinearPlant(a, c), wb, step_s=300.0))
    assert cooled["E_it_J"] == pytest.approx(frozen["E_it_J"], rel=1e-12)  # same schedule, finer steps
    assert cooled["wait_s"] == frozen["wait_s"] and cooled["started"] == frozen["started"]
    expect = a * cooled["E_it_J"] + c * (0.5 * (wb(t) + wb(t + h)) - 273.15) * h
    assert cooled["E_cooling_J"] == pytest.approx(expect, rel=1e-12)
    assert cooled["E_facility_J"] == pytest.approx(cooled["E_it_J"] + expect, rel=1e-12)
    # the snapshot is never advanced: a second rollout from it gives the same score
    assert probe.snap.rollout(make_policy("easy"), t + h) == frozen


def test_twin_decisions_see_the_cooling_of_the_horizon(system16):
    """The twin with rollout cooling scores each candidate with its cooled facility energy: a plant whose cooling
    grows with the wet-bulb raises every candidate's J by the same weather term, and a plant with a large cooling
    per heat watt makes the energy weight pick the candidate that runs least inside the horizon (plain FCFS here),
    where the frozen ratio (5 %) leaves the wait term in charge."""
    from scheduler_sim.kernel.lookahead import RolloutCooling

    jobs = make_jobs(_workload(n=80))
    pool = ["fcfs+easy", "fcfs"]
    obj = Objective(w_wait_per_s=1 / 3600, w_energy_per_J=1 / 3.6e6)  # one point per kWh
    plain = TwinPolicy(pool, horizon_s=7200.0, period_s=900.0, objective=obj)
    Simulation(jobs, system16, plain, SimulationConfig(window_start_s=0.0, window_s=1e6)).run()
    hot = TwinPolicy(pool, horizon_s=7200.0, period_s=900.0, objective=obj,
                     cooling=RolloutCooling(_LinearPlant(5.0, 0.0), lambda ts: np.full(len(ts), 290.0), 600.0))
    Simulation(jobs, system16, hot, SimulationConfig(window_start_s=0.0, window_s=1e6)).run()
    first_plain, first_hot = plain.decisions[0], hot.decisions[0]
    assert first_plain[0] == first_hot[0]  # same first decision time and state
    # cooled J = frozen J + w_energy * (E_cool - 0.05 E_it) with E_cool = 5 E_it: every score rises
    assert all(jh > jp for jh, jp in zip(first_hot[3], first_plain[3]))
    assert sum(d[2] == 0 for d in plain.decisions) > sum(d[2] == 0 for d in hot.decisions)


# ---------------------------------------------------------------- rollout cost bound (#25 item 5)
def test_bounded_pass_considers_only_the_first_jobs_of_the_order():
    # 8 free nodes, nothing running. FCFS queue: job 0 (10 nodes, cannot start: reserved at inf, nothing ends),
    # jobs 1, 2, 3 (2 nodes each) fit. Unbounded EASY backfills 1, 2, 3 around the head's (infinite) reservation;
    # bounded to the first 2 jobs of the order it sees 0 and 1 only: job 1 starts, 2 and 3 wait for a later pass.
    from scheduler_sim.policies import SchedulerView

    n = 4
    view = SchedulerView(now_s=0.0, queue=(0, 1, 2, 3), free_nodes=8, nodes=np.array([10, 2, 2, 2]),
                         estimate_s=np.full(n, 100.0), submit_s=np.zeros(n), recorded_start_s=np.full(n, np.nan),
                         running=(), start_s=np.full(n, np.nan), n_nodes=8, availability_grows=True)
    full, bounded = make_candidate("fcfs+easy"), make_candidate("fcfs+easy")
    bounded.max_jobs = 2
    assert full.schedule(view) == [1, 2, 3]
    assert bounded.schedule(view) == [1]
    assert set(bounded.reservations) == {0}
    cons = make_candidate("fcfs+conservative")
    cons.max_jobs = 3
    assert cons.schedule(view) == [1, 2] and set(cons.reservations) == {0, 1, 2}


def _bursty(n: int = 90) -> list[tuple]:
    """Everything submitted in the first 15 minutes on 16 nodes: the queue holds dozens of jobs for hours."""
    rng = np.random.default_rng(11)
    return [(i + 1, round(float(rng.uniform(0, 900))), int(rng.integers(1, 9)),
             float(rng.choice([600.0, 1800.0, 3600.0])), 3600.0 * 1.5) for i in range(n)]


class _Probe(BasePolicy):
    """Runs ``inner``; at the first pass at or after ``t_fork`` keeps a snapshot and the queue length."""

    name = "probe"

    def __init__(self, inner: BasePolicy, t_fork: float) -> None:
        self.inner, self.t_fork, self.snap = inner, t_fork, None

    def schedule(self, view):
        if self.snap is None and view.now_s >= self.t_fork:
            self.snap, self.t, self.queued = view.lookahead.snapshot(), view.now_s, len(view.queue)
        return self.inner.schedule(view)


@pytest.mark.parametrize("spec", ["fcfs+easy", "sjf+easy", "fcfs+conservative", "priority+easy"])
def test_rollout_bounded_above_the_queue_equals_the_unbounded_rollout(system16, spec):
    from scheduler_sim.app.twin import bounded_candidate

    probe = _Probe(make_candidate(spec), t_fork=1200.0)
    Simulation(make_jobs(_bursty()), system16, probe, SimulationConfig(window_start_s=0.0, window_s=1e6)).run()
    assert probe.queued > 40  # a long queue at the fork
    end = probe.t + 4 * 3600.0
    free = probe.snap.rollout(make_candidate(spec), end)
    assert probe.snap.rollout(bounded_candidate(make_candidate(spec), 90), end) == free  # limit >= every job
    if spec in ("fcfs+easy", "fcfs+conservative"):  # here a limit below the queue changes the rollout
        tight = probe.snap.rollout(bounded_candidate(make_candidate(spec), 1), end)
        assert tight != free and tight["started"] > 0


def test_twin_bounds_its_rollouts_but_never_the_main_run(system16):
    jobs = make_jobs(_bursty())
    cfg = SimulationConfig(window_start_s=0.0, window_s=1e6)
    plain = Simulation(jobs, system16, make_candidate("sjf+easy"), cfg).run()
    twin = TwinPolicy(["sjf+easy"], horizon_s=3600.0, period_s=600.0, rollout_queue_limit=2)
    res = Simulation(jobs, system16, twin, cfg).run()
    assert max(d[1] for d in twin.decisions) > 40
    assert np.array_equal(plain.jobs["sim_start_s"].to_numpy(), res.jobs["sim_start_s"].to_numpy())
    # the rollouts ran the bounded copy: the scores equal those of a rollout of max_jobs = 2 from the same state
    probe = _Probe(make_candidate("sjf+easy"), t_fork=twin.decisions[2][0])
    Simulation(jobs, system16, probe, cfg).run()
    bounded = make_candidate("sjf+easy")
    bounded.max_jobs = 2
    J = Objective()(probe.snap.rollout(bounded, probe.t + 3600.0))
    assert twin.decisions[2][3] == [J]
    with pytest.raises(ValueError, match="rollout_queue_limit"):
        TwinPolicy(["sjf+easy"], rollout_queue_limit=0)


def test_rollout_queue_limit_key_defaults_to_100_and_0_means_the_whole_queue():
    from scheduler_sim.app.config import RunConfig
    from scheduler_sim.app.twin import DEFAULT_ROLLOUT_QUEUE_LIMIT, twin_from_config

    cfg = RunConfig()
    assert "rollout_queue_limit" not in json.loads(cfg.to_json())["scheduler"]["twin"]  # JSON as before the key
    assert twin_from_config(cfg).rollout_queue_limit == DEFAULT_ROLLOUT_QUEUE_LIMIT == 100
    whole = cfg.with_overrides({"scheduler.twin.rollout_queue_limit": 0})
    assert twin_from_config(whole).rollout_queue_limit is None
    some = cfg.with_overrides({"scheduler.twin.rollout_queue_limit": 250})
    assert json.loads(some.to_json())["scheduler"]["twin"]["rollout_queue_limit"] == 250
    assert twin_from_config(some).rollout_queue_limit == 250
