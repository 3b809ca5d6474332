"""The output schema table (scheduler_sim.io.schema): every writer's file conforms to it, every entry it marks
required is in the file, the validator names what is wrong, and docs/output_schema.md is generated from it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pandas as pd
import pytest

from scheduler_sim.app.cli import main
from scheduler_sim.app.cooling import run_cooling_standalone
from scheduler_sim.io import schema
from scheduler_sim.io.hdf5 import atomic_h5, content_digest
from tests.conftest import write_power_series
from tests.integration.test_serving_run import _config as serving_config

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"


def _paths(path: Path) -> set[str]:
    """Every object and attribute path of a file (``obj@attr`` for attributes, links included)."""
    out: set[str] = set()
    with h5py.File(path, "r") as f:
        def walk(p, g):
            for a in g.attrs:
                out.add(f"{p}@{a}")
            if isinstance(g, h5py.Dataset):
                return
            for name in g:
                sub = f"{p.rstrip('/')}/{name}"
                out.add(sub)
                if isinstance(g.get(name, getlink=True), h5py.ExternalLink):
                    continue
                walk(sub, g[name])
        walk("/", f)
    return out


def _both_ways(path: Path, kind: str) -> set[str]:
    """The file conforms to the table, and every required entry of the table matches a path of the file."""
    assert schema.validate_file(path) == []
    got = _paths(path)
    for e in schema.TABLES[kind]:
        if e.required:
            assert any(e.regex.match(p) for p in got), f"{kind}: required {e.path} not in {path.name}"
    return got


@pytest.fixture(scope="module")
def cooled_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "run.h5"
    assert main(["run", "--start-day", "181", "--days", "0.25", "--quiet", "--out", str(out)]) == 0
    return out


@pytest.mark.fmu
def test_cooled_run_file_conforms_both_ways(cooled_run):
    got = _both_ways(cooled_run, "run")
    # the pieces the table declares beyond the required ones are there too: attribution, plant outputs
    assert "/attribution/jobs/E_facility_J" in got and "/timeseries/cdu/T_sec_sup" in got
    with h5py.File(cooled_run) as f:
        assert f["timeseries/facility/P_it_W"].attrs["long_name"] == schema.FACILITY_SERIES["P_it_W"]
        assert f["jobs/job_id"].attrs["units"] == "1" and f["timeseries/rack/P_in_W"].attrs["units"] == "W"


def test_serving_run_conforms_both_ways(tmp_path):
    from scheduler_sim.app.config import load_config
    from scheduler_sim.app.runner import run_one

    out = tmp_path / "s.h5"
    run_one(load_config(serving_config(tmp_path, batch=True)), out)
    got = _both_ways(out, "run")
    assert "/serving/requests/ttft_s" in got and "/serving/power/P_gpu_W" in got
    assert "/timeseries/facility/PUE@undefined" in got  # cooling off


def test_sweep_summary_and_members_conform(tmp_path):
    s = tmp_path / "study.toml"
    s.write_text(f'name = "sch"\n[base]\nsystem = "theta"\n'
                 f'trace = {{ path = "{DATA / "with_header.swf"}", window_days = 0.05, window_start_days = 0.0 }}\n'
                 'cooling = { enabled = false }\noutput = { progress = false }\n'
                 '[axes]\n"scheduler.policy" = ["fcfs", "easy"]\n')
    assert main(["sweep", str(s), "--out", str(tmp_path / "o")]) == 0
    got = _both_ways(tmp_path / "o" / "summary.h5", "sweep-summary")
    assert {"/runs/000_fcfs", "/runs/001_easy", "/scenarios/mean_wait_s"} <= got
    for member in sorted((tmp_path / "o").glob("0*.h5")):
        _both_ways(member, "run")


@pytest.mark.fmu
def test_cooling_only_file_conforms_both_ways(tmp_path, fmu_cache):
    from cooling_fmu.weather import Weather

    out = tmp_path / "c.h5"
    run_cooling_standalone(write_power_series(tmp_path / "p.csv"), out, plant="theta", step_s=15.0,
                           weather=Weather.constant(285.0), cache_dir=fmu_cache, days=0.1)
    got = _both_ways(out, "cooling_standalone")
    assert "/timeseries/cdu/T_sec_sup" in got


def test_incentive_study_writer_goes_through_the_table(tmp_path):
    """experiments/incentive.py writes its summary with the table's units (was: no units, no check)."""
    table = pd.DataFrame({"case": ["a", "b"], "mean_wait_h": [1.0, 2.0], "mean_bounded_slowdown": [3.0, 4.0],
                          "E_facility_MWh": [5.0, 6.0], "PUE": [1.1, 1.2], "wait_good_half_h[edp]": [0.5, 0.6],
                          "wait_bad_half_h[edp]": [1.5, 1.6]})
    out = tmp_path / "summary.h5"
    with atomic_h5(out) as f:
        w = schema.SchemaWriter(f, "incentive-study")
        w.attrs("/", {"schema_version": schema.SCHEMA_VERSION, "kind": "incentive-study", "scores_json": "{}"})
        for col in table.columns:
            data = table[col].to_numpy() if col != "case" else np.array(table[col].tolist(), dtype=h5py.string_dtype())
            w.dataset(f"/cases/{col}", data)
    _both_ways(out, "incentive-study")
    with h5py.File(out) as f:
        assert f["cases/E_facility_MWh"].attrs["units"] == "MWh" and f["cases/wait_bad_half_h[edp]"].attrs["units"] == "h"


def test_writer_refuses_what_the_table_does_not_declare(tmp_path):
    with atomic_h5(tmp_path / "x.h5") as f:
        w = schema.SchemaWriter(f, "run")
        with pytest.raises(schema.SchemaError, match="/timeseries/nonsense.*not declared"):
            w.dataset("/timeseries/nonsense", np.zeros(3))
        with pytest.raises(schema.SchemaError, match="unit 'kW', the schema table says 'W'"):
            w.dataset("/timeseries/facility/P_it_W", np.zeros(3), units="kW")
        with pytest.raises(schema.SchemaError, match="2 dimension"):
            w.dataset("/timeseries/facility/P_it_W", np.zeros((3, 2)))
        with pytest.raises(schema.SchemaError, match="dtype int64 is not float"):
            w.dataset("/timeseries/time_s", np.zeros(3, dtype=np.int64))
        with pytest.raises(schema.SchemaError, match="leaves the unit to the writer"):
            w.dataset("/timeseries/facility/T_cw_sup", np.zeros(3))


def test_validator_names_each_problem(tmp_path, cooled_run):
    bad = tmp_path / "bad.h5"
    shutil.copy(cooled_run, bad)
    with h5py.File(bad, "a") as f:
        f["timeseries/facility/P_it_W"].attrs["units"] = "kW"          # wrong unit
        del f["timeseries/rack/P_in_W"]                                  # required, missing
        f["timeseries/rack/P_in_W"] = np.zeros((3, 2))                   # ... back with the wrong shape, no units
        f.create_dataset("extra/thing", data=[1.0])                      # unknown group and dataset
        f["jobs"].attrs["colour"] = "blue"                               # unknown attribute
        n = f["jobs/job_id"].shape[0]
        del f["jobs/wait_s"]
        f["jobs/wait_s"] = np.zeros(n, dtype=np.int32).astype("S1")     # wrong dtype
        f["jobs/wait_s"].attrs["units"] = "s"
        del f["totals"]                                                  # required group missing
    problems = "\n".join(schema.validate_file(bad))
    assert "/timeseries/facility/P_it_W: units 'kW', expected 'W'" in problems
    assert "/timeseries/rack/P_in_W: shape (3, 2): n_intervals = 3 here but" in problems
    assert "/timeseries/rack/P_in_W: no units attribute" in problems
    assert "/extra: group not in the schema table" in problems
    assert "/jobs@colour: attribute not in the schema table" in problems
    assert "/jobs/wait_s: dtype |S1, expected float" in problems
    assert "/totals: required by the run schema table, missing" in problems
    assert all(line.startswith(str(bad)) for line in problems.splitlines())
    with pytest.raises(schema.SchemaError, match="schema problem"):
        schema.check_file(bad)


def test_cli_validate_checks_a_run_file(cooled_run, tmp_path, capsys):
    assert main(["validate", str(cooled_run)]) == 0
    assert "conforms to the run schema" in capsys.readouterr().out
    bad = tmp_path / "bad.h5"
    shutil.copy(cooled_run, bad)
    with h5py.File(bad, "a") as f:
        f["timeseries/facility/P_it_W"].attrs["units"] = "kW"
        f.attrs["content_sha256"] = content_digest(f)  # crafted with a fresh checksum: the schema check finds it
    assert main(["validate", str(bad)]) == 1
    assert "units 'kW', expected 'W'" in capsys.readouterr().out


def test_output_schema_doc_is_generated_from_the_table():
    r = subprocess.run([sys.executable, "-m", "scheduler_sim.io.schema_doc", "--check"], cwd=ROOT,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    text = (ROOT / "docs" / "output_schema.md").read_text()
    for e in schema.RUN:
        assert f"`{e.path}`" in text
