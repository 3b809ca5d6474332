"""Ensemble members' records (``[uncertainty] member_files = "summary"``, kind ``run-summary``): what they hold, that the
sweep resumes from them exactly as from run files, and that readers of run files refuse them with the option named."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from scheduler_sim.analysis.attribution import load_result
from scheduler_sim.app.config import RunConfig
from scheduler_sim.app.runner import run_one
from scheduler_sim.app.sweep import Scenario, scenario_status
from scheduler_sim.io.hdf5 import SchemaError, verify_file
from scheduler_sim.io.schema import validate_file

CFG = RunConfig().with_overrides({"name": "x_m000", "trace.window_start_days": 181.0, "trace.window_days": 0.25,
                                  "cooling.model": "fast", "output.progress": False})


@pytest.fixture(scope="module")
def record(tmp_path_factory):
    d = tmp_path_factory.mktemp("records")
    r = run_one(CFG, d / "x_m000.h5", progress=False, content="summary")
    return d, r


def test_record_holds_the_run_files_summary_totals_and_provenance_only(record):
    d, r = record
    path = d / "x_m000.h5"
    verify_file(path, require_digest=True)
    assert validate_file(path) == []
    with h5py.File(path) as f:
        assert f.attrs["kind"] == "run-summary" and set(f) == {"summary", "totals", "provenance"}
        np.testing.assert_equal({k: float(v) for k, v in f["summary"].attrs.items()}, r.summary)  # exact, NaN too
        assert f.attrs["config_json"] == CFG.to_json()
    assert path.stat().st_size < 100_000  # a run file of the same run holds megabytes of series


def test_sweep_resumes_from_a_record_and_reruns_when_the_study_wants_run_files(record):
    d, r = record
    metrics, why = scenario_status(Scenario(0, "x_m000", CFG, "summary"), d)
    assert why == ""
    np.testing.assert_equal(metrics, r.summary)
    metrics, why = scenario_status(Scenario(0, "x_m000", CFG, "full"), d)
    assert metrics is None and "run-summary" in why


def test_readers_of_run_files_refuse_a_record_naming_the_option(record):
    d, _ = record
    with pytest.raises(SchemaError, match='member_files = "full"'):
        load_result(d / "x_m000.h5")
