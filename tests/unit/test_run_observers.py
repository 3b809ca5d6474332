"""The kernel's run-observer hook (issue 28 item 9): the kernel calls its observers with the run's status; the
progress bar and ``hpctwin run --live``'s dashboard are two of them; an observer never changes or stops a run."""

from __future__ import annotations

import io

import numpy as np
import pytest

from scheduler_sim.app.live import LiveView
from scheduler_sim.kernel.progress import RunHooks, RunProgress, RunStatus
from scheduler_sim.kernel.simulation import Simulation, SimulationConfig
from tests.conftest import make_jobs

# 4 nodes, step 60 s: jobs 1 and 2 (2 nodes each) start at 0 s and end at 100 / 200 s; job 3 (4 nodes) waits for both
ROWS = [(1, 0, 2, 100, 100), (2, 0, 2, 200, 200), (3, 10, 4, 50, 50)]
CFG = dict(window_start_s=0.0, window_s=3600.0, step_s=60.0, interval_s=60.0)


class Recorder:
    def __init__(self) -> None:
        self.calls: list = []

    def run_started(self, window_h):
        self.calls.append(("started", window_h))

    def run_progress(self, status):
        self.calls.append(("progress", status))

    def run_ended(self):
        self.calls.append(("ended",))


class Broken(Recorder):
    def run_progress(self, status):
        raise RuntimeError("display broke")


def _run(system, observers=(), **kw):
    return Simulation(make_jobs(ROWS), system, "fcfs", SimulationConfig(**CFG, **kw), observers=observers).run()


def test_observers_are_told_start_progress_and_end_with_the_platform_state(tiny_system):
    rec = Recorder()
    res = _run(tiny_system, [rec])
    kinds = [c[0] for c in rec.calls]
    assert kinds[0] == "started" and rec.calls[0][1] == pytest.approx(1.0)   # a one-hour window
    assert kinds[-1] == "ended" and kinds.count("ended") == 1 and kinds.count("started") == 1
    st = [c[1] for c in rec.calls if c[0] == "progress"]
    assert st and all(isinstance(s, RunStatus) for s in st)
    hours = [s.sim_h for s in st]
    assert hours == sorted(hours) and hours[-1] == pytest.approx(res.time_s[-1] / 3600.0 + 1 / 60, abs=1 / 60)
    # the first whole step (0-60 s): jobs 1 and 2 running, job 3 queued, three jobs left
    first = st[0]
    assert (first.queued, first.running, first.jobs_left) == (1, 2, 3) and first.window_h == pytest.approx(1.0)
    assert st[-1].jobs_left == 0 and st[-1].running == 0
    assert first.plant_state is None and first.output_names == ()  # no plant in this run


def test_an_observer_changes_nothing_and_one_that_raises_is_dropped(tiny_system):
    ref = _run(tiny_system)
    rec, bad = Recorder(), Broken()
    res = _run(tiny_system, [bad, rec])
    for col in ("sim_start_s", "sim_end_s", "energy_J"):
        if col in ref.jobs:
            np.testing.assert_array_equal(res.jobs[col].to_numpy(), ref.jobs[col].to_numpy())
    assert res.facility.keys() == ref.facility.keys() and res.facility
    for k in ref.facility:
        np.testing.assert_array_equal(res.facility[k], ref.facility[k])
    assert res.totals == ref.totals
    assert bad.calls == [("started", pytest.approx(1.0))]       # dropped at its first failure, never called again
    assert [c[0] for c in rec.calls][-1] == "ended"              # the other observer saw the whole run


def test_the_progress_bar_is_an_observer(tiny_system):
    f = io.StringIO()
    bar = RunProgress(file=f, mininterval=0)          # no window yet: opened by run_started
    assert f.getvalue() == ""
    hooks = RunHooks([bar], 2.0, _StateStub())
    hooks.update(1.0, 1)
    hooks.update(2.5, 0)
    hooks.close()
    text = f.getvalue()
    assert "1/2 h simulated" in text and "2/2 h simulated" in text and not bar.enabled


def test_a_fork_has_no_observers(tiny_system):
    sim = Simulation(make_jobs(ROWS), tiny_system, "fcfs", SimulationConfig(**CFG), observers=[Recorder()])
    assert len(sim.observers) == 1
    sim.run()
    assert sim.fork(None).observers == ()


def test_live_view_shows_the_status_it_is_handed():
    view = LiveView(file=io.StringIO(), T_limit_K=305.15)
    view.run_started(2.0)
    s = RunStatus(1.0, 2.0, 5, 3, 2, 1.0e6, 0.06e6, np.array([300.0, 303.15, 1.0]),
                  ("cdu1.T_sec_sup", "cdu2.T_sec_sup", "P_pump"))
    snap = view._snapshot(s)
    assert snap["P_fac_W"] == pytest.approx(1.06e6) and snap["T_sup_max_K"] == pytest.approx(303.15)
    view.run_progress(s)
    view.run_progress(RunStatus(2.0, 2.0, 0, 0, 0, 1.0e6, 0.06e6, None, ()))
    assert view._E_fac / view._E_it == pytest.approx(1.06)    # PUE so far from the statuses' powers
    view.run_ended()


class _StateStub:
    """The parts of a PlatformState the hooks read: queue, running, cooling readout."""

    queue: list = [7]
    running: dict = {}

    class cooling:  # noqa: N801 - an attribute namespace
        plant_state = None
        last_it_W = 0.0
        last_overhead_W = 0.0
