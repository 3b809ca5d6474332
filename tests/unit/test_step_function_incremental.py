"""The incremental step function (issue #26 item 1) against the full evaluation of the power chain.

The event loop updates only the racks and idle counts of the nodes a job start, end or power change touched
(:class:`scheduler_sim.kernel.stepfunction.StepFunction`). These tests run the real ALCF Theta 2022 trace (a week
of the main job's configuration) and compare, at every evaluation, the incremental value with a full evaluation of
the same state: the step vector (CDU heat, power totals, rack input, counts) and the idle DC power bit for bit, the
idle rack-input power within 1e-12 relative (a different summation order).
"""

import functools

import h5py
import numpy as np
import pytest

import scheduler_sim.kernel.simulation as simulation_module
from power import load_system
from scheduler_sim.app.config import RunConfig
from scheduler_sim.app.runner import run_one
from scheduler_sim.kernel.stepfunction import StepFunction
from scheduler_sim.simulation import Simulation
from tests.conftest import make_jobs


class _Checked(StepFunction):
    """The incremental step function, checked against a full evaluation at every change."""

    seen: list = []

    def __init__(self, chain, layout, partition, idle_node_W=None):
        super().__init__(chain, layout, partition, idle_node_W)
        self._full = StepFunction(chain, layout, partition, idle_node_W, incremental=False)

    def value(self, st):
        dirty = st.step.dirty
        v = super().value(st).copy()
        if dirty:
            inc = (st.step.idle_dc_W, st.step.idle_it_W)
            st.step.stale = True
            ref = self._full.value(st).copy()
            ref_idle = (st.step.idle_dc_W, st.step.idle_it_W)
            st.step.idle_it_W = inc[1]  # the run goes on with the incremental value
            _Checked.seen.append((np.array_equal(v, ref), inc[0] == ref_idle[0],
                                  abs(inc[1] - ref_idle[1]) / ref_idle[1], len(st.running)))
        return v


def test_incremental_equals_full_evaluation_at_every_event_of_a_theta_week(monkeypatch):
    """Theta 2022 trace, EASY, days 181-188, no cooling: at each of the run's evaluations the incremental vector is
    the full one bit for bit and the idle rack-input power agrees within 1e-12 (seen: <= 1e-15)."""
    _Checked.seen = []
    monkeypatch.setattr(simulation_module, "StepFunction", _Checked)
    cfg = RunConfig().with_overrides({"name": "inc", "trace.window_start_days": 181.0, "trace.window_days": 7.0,
                                      "cooling.enabled": False, "output.progress": False})
    run_one(cfg, None, progress=False)
    seen = _Checked.seen
    assert len(seen) > 300  # job starts and ends of a Theta week
    assert max(s[3] for s in seen) > 5  # with several jobs running at once
    assert all(s[0] for s in seen), "step vector differs from the full evaluation"
    assert all(s[1] for s in seen), "idle DC power differs from the full evaluation"
    worst = max(s[2] for s in seen)
    assert worst <= 1e-15


def test_run_outputs_of_incremental_and_full_evaluation_agree(monkeypatch, tmp_path):
    """The same Theta week run twice, incremental and full, into HDF5: every dataset (series, jobs, allocations)
    equal bit for bit, and of the totals only the idle rack-input energy differs, within 1e-12 relative."""
    cfg = RunConfig().with_overrides({"name": "inc", "trace.window_start_days": 181.0, "trace.window_days": 7.0,
                                      "cooling.enabled": False, "output.progress": False})
    for inc in (False, True):
        monkeypatch.setattr(simulation_module, "StepFunction", functools.partial(StepFunction, incremental=inc))
        run_one(cfg, tmp_path / f"{inc}.h5", progress=False)
    with h5py.File(tmp_path / "False.h5") as fa, h5py.File(tmp_path / "True.h5") as fb:
        names: list[str] = []
        fa.visit(lambda n: names.append(n) if isinstance(fa[n], h5py.Dataset) else None)
        assert len(names) > 20 and "timeseries/facility/P_it_W" in names
        for n in names:
            assert np.array_equal(fa[n][()], fb[n][()], equal_nan=fa[n].dtype.kind == "f"), n
        ta, tb = dict(fa["totals"].attrs), dict(fb["totals"].attrs)
        assert ta.keys() == tb.keys() and ta["E_it_J"] > 1e11
        differ = {k for k in ta if ta[k] != tb[k]}
        assert differ <= {"E_idle_node_it_J"}
        assert abs(ta["E_idle_node_it_J"] - tb["E_idle_node_it_J"]) <= 1e-12 * ta["E_idle_node_it_J"]


def test_touched_power_is_checked_and_full_evaluation_rebuilds_the_caches():
    """A touched node with a negative power is refused like the full chain refuses it; ``dirty = True`` (a writer
    that does not name its nodes) gives the full evaluation's value from then on."""
    jobs = make_jobs([(1, 0.0, 100, 600.0, 1000.0), (2, 10.0, 200, 600.0, 1000.0)])
    sim = Simulation(jobs, load_system("theta"), "fcfs", window_start_s=0.0, window_s=1e9)
    res = sim.run()
    assert res.info["complete"]
    st, fn = sim.state, sim.stepfn
    assert fn._incremental
    full = StepFunction(sim.chain, sim.layout, None, sim.jobdata.idle_node_power_W, incremental=False)
    st.node_dc[5] = 321.0  # written without touch: not seen until dirty is set
    st.step.dirty = True
    v = fn.value(st).copy()
    st.step.dirty = True
    assert np.array_equal(full.value(st), v)
    assert v[sim.layout.power("P_node_dc_W")] == pytest.approx(float(st.node_dc.sum()), rel=0, abs=0)
    st.node_dc[7] = -1.0
    st.step.touch(np.array([7]))
    with pytest.raises(ValueError, match="finite and >= 0"):
        fn.value(st)
