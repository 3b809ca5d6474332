"""One plant call per event (#16 item 5): folding the step in progress and the run after it into one coupler call
changes no output bit, including the totals and a run the plant stops."""

from __future__ import annotations

import numpy as np
import pytest

from cooling_fmu.coupling import PlantError
from scheduler_sim.kernel import recorder, simulation
from scheduler_sim.kernel.simulation import Simulation, SimulationConfig
from tests.conftest import make_jobs

STEP = 15.0
# irregular submits and run times, so event times fall inside steps and runs of whole steps follow them
JOBS = [(1, 0.0, 2, 1000.0, 2000.0), (2, 7.0, 1, 333.3, 900.0), (3, 40.5, 1, 95.25, 300.0),
        (4, 400.0, 3, 2500.7, 4000.0), (5, 401.0, 1, 61.1, 100.0), (6, 1234.5, 2, 789.0, 1000.0)]


class _LagPlant:
    """A first-order plant double with running totals: per step, T += (heat / 1e4 + T_wb - T) / 8; power 0.05 x heat
    + T; energy total advanced by that power x step. Fails at ``fail_at`` (step count) when given."""

    output_names = ["T_sec_sup[1]", "P_cooling", "E_cooling_out"]
    output_units = ["K", "W", "J"]
    P_cooling_index = 1

    def __init__(self, fail_at: int | None = None):
        self.fail_at = fail_at
        self.k = 0
        self.T = self.E = 0.0
        self.calls = 0

    def initialize(self, heat_w, T_wb_K):
        self.T = float(T_wb_K) + 5.0
        return np.array([self.T, 0.0, 0.0])

    def run(self, heat, twb):
        self.calls += 1
        out = []
        for h, w in zip(heat, twb):
            if self.k == self.fail_at:
                raise PlantError(f"fmi2DoStep failed at step {self.k}", np.array(out).reshape(-1, 3))
            self.T += (h.sum() / 1e4 + w - self.T) / 8.0
            p = 0.05 * h.sum() + self.T
            self.E += p * STEP
            self.k += 1
            out.append([self.T, p, self.E])
        return np.array(out)


def _run(tiny_system, monkeypatch, fold: bool, fail_at: int | None = None):
    class Integrator(recorder.StepIntegrator):
        def __init__(self, *args, **kw):
            kw["fold"] = fold and kw.get("fold", False)
            super().__init__(*args, **kw)

    monkeypatch.setattr(simulation, "StepIntegrator", Integrator)
    plant = _LagPlant(fail_at)
    res = Simulation(make_jobs(JOBS), tiny_system, "easy",
                     SimulationConfig(window_start_s=0.0, window_s=1e5, step_s=STEP, interval_s=60.0), plant=plant,
                     wet_bulb_K=lambda t: 285.0 + 5.0 * np.sin(np.asarray(t) / 3600.0)).run()
    monkeypatch.undo()
    return res, plant


@pytest.mark.parametrize("fail_at", [None, 101])
def test_folded_calls_give_identical_results(tiny_system, monkeypatch, fail_at):
    a, pa = _run(tiny_system, monkeypatch, fold=False, fail_at=fail_at)
    b, pb = _run(tiny_system, monkeypatch, fold=True, fail_at=fail_at)
    assert pb.calls < pa.calls  # folding really made fewer plant calls
    assert a.totals == b.totals  # bit for bit: every total as a float
    assert np.array_equal(a.time_s, b.time_s)
    for name in a.facility:
        assert np.array_equal(a.facility[name], b.facility[name], equal_nan=True), name
    assert a.info["complete"] == b.info["complete"] == (fail_at is None)
    if fail_at is not None:
        # 101 steps of 15 s done: the failure is at 1,515 s; 25 whole 60 s intervals are kept
        assert a.info["failed_at_s"] == b.info["failed_at_s"] == fail_at * STEP
        assert len(b.time_s) == 25
    # the cooling energy is the plant's own running total over every completed step (the step averages telescope)
    assert pa.E == pb.E and b.totals["E_cooling_J"] == pytest.approx(pb.E, rel=1e-12)
