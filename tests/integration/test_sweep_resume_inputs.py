"""Field faults round 3 (issue #21) kind 4: a resumed sweep never trusts changed inputs.

A scenario's identity is its configuration plus the SHA-256 of every input file it reads (trace, system, plant,
weather, grid series). Changing one of them between two sweeps reruns exactly the scenarios that read it, and the
terminal and summary.h5 (``sweep_resume_json``) say which and why.
"""

from __future__ import annotations

import json
from pathlib import Path

import h5py

from scheduler_sim.app.sweep import run_sweep
from tests.conftest import TINY4_TOML as TINY4  # the tiny 4-node machine

TRACE = ("1 0 0 3600 4 -1 -1 4 3600 -1 1 1 1 -1 1 -1 -1 -1\n"
         "2 100 0 1800 2 -1 -1 2 3600 -1 1 1 1 -1 1 -1 -1 -1\n"
         "3 200 0 1800 2 -1 -1 2 3600 -1 1 1 1 -1 1 -1 -1 -1\n")
EM_HEAD = ("Datetime (UTC),Country,Zone Name,Zone Id,Carbon Intensity gCO₂eq/kWh (direct),"
           "Carbon Intensity gCO₂eq/kWh (LCA),Low Carbon Percentage,Renewable Percentage,Data Source,"
           "Data Estimated,Data Estimation Method\n")


def _carbon(path: Path, value: float) -> None:
    path.write_text(EM_HEAD + "".join(f"2022-01-01 {h:02d}:00:00,USA,X,US-X,{value},{value},0,0,x,false,\n"
                                      for h in range(24)), encoding="utf-8")


def _study(tmp_path: Path, traces: int = 2) -> Path:
    (tmp_path / "tiny4.toml").write_text(TINY4)
    (tmp_path / "trace.swf").write_text(TRACE)
    (tmp_path / "other.swf").write_text(TRACE)
    _carbon(tmp_path / "c.csv", 400.0)
    st = tmp_path / "study.toml"
    st.write_text('name = "resume"\n[base]\nsystem = "tiny4.toml"\n[base.trace]\npath = "trace.swf"\n'
                  'window_start_days = 0.0\nwindow_days = 1.0\n[base.cooling]\nenabled = false\n'
                  '[base.output]\nprogress = false\n[base.grid]\ncarbon = "c.csv"\n[axes]\n'
                  '"scheduler.policy" = ["fcfs", "sjf"]\n'
                  + ('"trace.path" = ["trace.swf", "other.swf"]\n' if traces == 2 else ""))
    return st


def _sweep(st: Path, out: Path) -> tuple[list[str], dict]:
    lines: list[str] = []
    run_sweep(st, out, echo=lines.append)
    with h5py.File(out / "summary.h5") as f:
        resume = json.loads(f.attrs["sweep_resume_json"])
    return lines, resume


def test_resume_reruns_scenarios_whose_input_files_changed(tmp_path):
    st = _study(tmp_path)
    out = tmp_path / "o"
    _sweep(st, out)
    names = ["000_fcfs_trace.swf", "001_fcfs_other.swf", "002_sjf_trace.swf", "003_sjf_other.swf"]
    assert sorted(p.stem for p in out.glob("0*.h5")) == names
    lines, resume = _sweep(st, out)  # nothing changed: all reused
    assert "4 done earlier" in lines[0] and resume == {"done_earlier": names, "rerun": {}}

    # the field case: job 1's run time changes in trace.swf, and one file is deleted
    (tmp_path / "trace.swf").write_text(TRACE.replace("1 0 0 3600 4", "1 0 0 900 4", 1))
    (out / "003_sjf_other.swf.h5").unlink()
    lines, resume = _sweep(st, out)
    assert "1 done earlier" in lines[0], lines[0]  # only 001_fcfs_other.swf is still valid
    assert resume["done_earlier"] == ["001_fcfs_other.swf"]
    assert set(resume["rerun"]) == {"000_fcfs_trace.swf", "002_sjf_trace.swf"}
    assert all(r.startswith("input changed: trace trace.swf") for r in resume["rerun"].values())
    assert any("000_fcfs_trace.swf: re-run: input changed: trace trace.swf" in ln for ln in lines)
    with h5py.File(out / "000_fcfs_trace.swf.h5") as f:
        assert float(f["jobs/run_s"][0]) == 900.0
    with h5py.File(out / "summary.h5") as f:  # the summary holds one trace only
        e = dict(zip([n.decode() if isinstance(n, bytes) else n for n in f["scenarios/name"][:]],
                     f["scenarios/E_it_J"][:]))
    assert e["000_fcfs_trace.swf"] < e["001_fcfs_other.swf"]


def test_resume_reruns_every_scenario_when_the_system_or_a_grid_series_changed(tmp_path):
    st = _study(tmp_path, traces=1)
    out = tmp_path / "o"
    _sweep(st, out)
    edited = TINY4.replace('description = "', 'description = "edited: ', 1)
    assert edited != TINY4
    (tmp_path / "tiny4.toml").write_text(edited)
    _, resume = _sweep(st, out)
    assert resume["done_earlier"] == [] and len(resume["rerun"]) == 2
    assert all("system tiny4.toml" in r for r in resume["rerun"].values())
    _carbon(tmp_path / "c.csv", 300.0)
    _, resume = _sweep(st, out)
    assert resume["done_earlier"] == [] and all("grid_carbon c.csv" in r for r in resume["rerun"].values())
    with h5py.File(out / "000_fcfs.h5") as f:
        assert abs(float(f["summary"].attrs["grid_carbon_mean_g_per_kWh"]) - 300.0) < 1e-9


def test_resume_reruns_a_file_that_records_no_checksum_for_an_input(tmp_path):
    st = _study(tmp_path, traces=1)
    out = tmp_path / "o"
    _sweep(st, out)
    from scheduler_sim.io.hdf5 import CONTENT_DIGEST_ATTR, content_digest

    with h5py.File(out / "000_fcfs.h5", "r+") as f:  # a file from before the system was recorded
        cs = json.loads(f["provenance"].attrs["input_checksums_json"])
        cs.pop("system")
        f["provenance"].attrs["input_checksums_json"] = json.dumps(cs, sort_keys=True)
        f.attrs[CONTENT_DIGEST_ATTR] = content_digest(f)
    _, resume = _sweep(st, out)
    assert resume["rerun"] == {"000_fcfs": "earlier file records no checksum for system"}
