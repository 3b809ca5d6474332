"""Carbon-aware policy: a hand schedule, and properties (never breaks a reservation, never holds past the slack)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from power.grid import StepSignal
from scheduler_sim.kernel.simulation import Simulation, SimulationConfig
from scheduler_sim.policies import SchedulerView, make_policy
from scheduler_sim.policies.backfill import Profile, backfill_easy
from scheduler_sim.policies.carbon import CarbonAwarePolicy
from tests.conftest import make_jobs

H = 3600.0


def _sig(values, fallback=50.0):
    v = np.asarray(values, dtype=float)
    return StepSignal(np.arange(v.size + 1) * H, v, fallback, "carbon")


def _run(rows, system, policy):
    sim = Simulation(make_jobs(rows), system, policy,
                     SimulationConfig(window_start_s=0.0, window_s=1e6, step_s=15.0, interval_s=60.0), plant=None)
    return sim.run().jobs.set_index("job_id")


def test_hand_schedule_shifts_a_job_into_the_clean_hour(tiny_system):
    # 4 free nodes, one 1-node job of 1 h submitted at t = 0. Signal: 100 in hours 0-1, 10 in hour 2, 100 after.
    sig = _sig([100, 100, 10, 100, 100, 100])
    # slack 4 h: the run-mean over [7200, 10800) = 10 < 0.95 * 100 -> held, woken at 7200, starts there
    p = make_policy("carbon-aware", None, signal=sig, slack_s=4 * H, min_gain=0.05)
    j = _run([(1, 0, 1, H, H)], tiny_system, p)
    assert j.loc[1, "sim_start_s"] == 2 * H
    # slack 1 h: the only later candidate (3600) has the same mean 100: starts at once
    p = make_policy("carbon-aware", None, signal=sig, slack_s=1 * H)
    assert _run([(1, 0, 1, H, H)], tiny_system, p).loc[1, "sim_start_s"] == 0.0
    # a job longer than max_estimate_s is never held
    p = make_policy("carbon-aware", None, signal=sig, slack_s=4 * H, max_estimate_s=0.5 * H)
    assert _run([(1, 0, 1, H, H)], tiny_system, p).loc[1, "sim_start_s"] == 0.0
    # a half-clean start: from 5400 the run [5400, 9000) has mean (1800*100 + 1800*10)/3600 = 55 (not a step
    # boundary, not a candidate); the best candidate is still 7200 (mean 10)
    p = make_policy("carbon-aware", None, signal=sig, slack_s=2.5 * H)
    assert _run([(1, 0, 1, H, H)], tiny_system, p).loc[1, "sim_start_s"] == 2 * H


def test_held_job_does_not_block_others_and_plain_easy_is_unchanged(tiny_system):
    sig = _sig([100, 100, 10, 100, 100, 100])
    rows = [(1, 0, 2, H, H), (2, 0, 2, 4 * H, 4 * H)]
    # job 1 (1 h) is held for hour 2. Job 2 (4 h): a start at 0, 3600 or 7200 covers the clean hour whichever it
    # is, mean (3 * 100 + 10) / 4 = 77.5 each: no gain, so it starts at once beside the held job
    j = _run(rows, tiny_system, make_policy("carbon-aware", None, signal=sig, slack_s=4 * H))
    assert j.loc[1, "sim_start_s"] == 2 * H and j.loc[2, "sim_start_s"] == 0.0
    j = _run(rows, tiny_system, "easy")
    assert j.loc[1, "sim_start_s"] == 0.0 and j.loc[2, "sim_start_s"] == 0.0


@st.composite
def views(draw):
    n_nodes = draw(st.integers(2, 16))
    n = draw(st.integers(1, 10))
    now = draw(st.sampled_from([0.0, 1800.0, 3600.0, 5000.0, 9000.0]))
    nodes = np.array([draw(st.integers(1, n_nodes)) for _ in range(n)], dtype=np.int64)
    est = np.array([draw(st.sampled_from([600.0, 1800.0, 3600.0, 7200.0, 20000.0])) for _ in range(n)])
    submit = np.array([draw(st.floats(0.0, now)) for _ in range(n)])
    running_mask = [draw(st.booleans()) for _ in range(n)]
    running, used = [], 0
    start = np.full(n, np.nan)
    for j in range(n):
        if running_mask[j] and used + nodes[j] <= n_nodes:
            running.append(j)
            used += int(nodes[j])
            start[j] = draw(st.floats(max(0.0, now - est[j] + 1.0), now))
    queue = [j for j in range(n) if j not in running]
    view = SchedulerView(now_s=now, queue=tuple(queue), free_nodes=n_nodes - used, nodes=nodes, estimate_s=est,
                         submit_s=submit, recorded_start_s=np.full(n, np.nan), running=tuple(running),
                         start_s=start, n_nodes=n_nodes)
    values = draw(st.lists(st.floats(1.0, 500.0), min_size=8, max_size=8))
    slack = draw(st.sampled_from([0.0, 1800.0, 3600.0, 4 * H]))
    ready = {j: draw(st.floats(max(0.0, now - 4 * H), now)) for j in queue if draw(st.booleans())}
    return view, _sig(values), slack, ready


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(views())
def test_never_breaks_a_reservation_and_never_holds_past_the_slack(case):
    view, sig, slack, ready = case
    pol = CarbonAwarePolicy(sig, "easy", slack_s=slack, min_gain=0.05)
    pol.ready_s.update(ready)
    out = pol.schedule(view)
    now = view.now_s
    # decisions are queued jobs that fit together
    assert set(out) <= set(view.queue) and len(set(out)) == len(out)
    assert sum(int(view.nodes[j]) for j in out) <= view.free_nodes
    # the reservation stands with the started jobs in place: the reserved job can still start by its time
    prof = Profile.from_view(view)
    for j in out:
        prof.reserve(now, float(view.estimate_s[j]), int(view.nodes[j]), 0.0)
    for h, t_h in pol.reservations.items():
        assert h not in out
        assert prof.earliest(int(view.nodes[h]), 0.0, float(view.estimate_s[h])) <= t_h + 1e-9
    # every held job is inside its slack: ready <= now < ready + slack, and its wake-up lies within it too
    for j in pol.last_held:
        assert pol.ready_s[j] <= now < pol.ready_s[j] + slack
        assert now < pol._targets[j] <= pol.ready_s[j] + slack
    # holding only removes jobs: every job the policy starts that plain EASY would not start is one EASY could not
    # have started only because a held job took its place; with nothing held the decision is EASY's
    if not pol.last_held:
        assert out == backfill_easy(view, list(view.queue), {}, None)
    w = pol.next_pass_s(view)
    if pol.last_held:
        assert w is not None and now < w <= max(pol.ready_s[j] + slack for j in pol.last_held)


def test_needs_a_signal():
    with pytest.raises(ValueError, match="needs a carbon signal"):
        make_policy("carbon-aware")
