"""Set-up once per process (issue #26 item 4): the scenarios of one sweep rank share the parsed trace, weather,
system, plant description and fast-plant table (:mod:`scheduler_sim.app.shared`), and never share a parse of an
input that differs.
"""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

from scheduler_sim.app import shared
from scheduler_sim.app.config import RunConfig
from scheduler_sim.app.runner import run_one

ROOT = Path(__file__).resolve().parents[2]
THETA = ROOT / "experiments/data/theta_2022.swf.gz"
WEATHER = ROOT / "cooling_fmu/data"
CHICAGO = WEATHER / "USA_IL_Chicago-OHare.Intl.AP.725300_TMY3.epw.gz"
KNOXVILLE = WEATHER / "USA_TN_Knoxville-McGhee.Tyson.AP.723260_TMY3.epw.gz"


@pytest.fixture(autouse=True)
def _fresh_share():
    shared.clear()
    yield
    shared.clear()


def _cfg(trace: Path, weather: Path, **extra) -> RunConfig:
    """Six hours of Theta (day 181), fast plant, the given trace and weather file."""
    return RunConfig().with_overrides({"trace.path": str(trace), "trace.window_start_days": 181.0,
                                       "trace.window_days": 0.25, "output.max_drain_days": 1e-6,
                                       "output.progress": False, "cooling.model": "fast",
                                       "cooling.weather_path": str(weather), **extra})


def _bits(summary: dict) -> dict:
    """The summary by its exact values (``repr`` of each float: NaN equals NaN, 0.1 + 0.2 is not 0.3)."""
    return {k: repr(float(v)) if isinstance(v, float) else repr(v) for k, v in summary.items()}


def _small_trace(path: Path, keep_every: int = 1) -> Path:
    """The Theta trace's header plus every ``keep_every``-th job line, written (gzip) to ``path``."""
    with gzip.open(THETA, "rt") as f:
        lines = f.readlines()
    head = [x for x in lines if x.startswith(";")]
    jobs = [x for x in lines if not x.startswith(";") and x.strip()]
    with gzip.open(path, "wt") as f:
        f.writelines(head + jobs[::keep_every])
    return path


def test_second_scenario_of_a_process_parses_nothing_again_and_gives_the_same_result(tmp_path):
    trace, weather = _small_trace(tmp_path / "t.swf.gz"), tmp_path / "w.epw.gz"
    shutil.copyfile(CHICAGO, weather)
    a = run_one(_cfg(trace, weather), None, progress=False)
    first = shared.parse_counts()
    # every input of a fast-plant run was parsed once, by the first scenario
    for kind in ("trace", "system", "plant", "weather", "steady_table", "swf_header", "sha256"):
        assert first.get(kind, 0) >= 1, kind
    assert first["trace"] == first["weather"] == first["system"] == first["steady_table"] == 1
    b = run_one(_cfg(trace, weather, **{"scheduler.policy": "fcfs"}), None, progress=False)
    assert shared.parse_counts() == first  # a second scenario (another policy) takes every parse from the share
    assert b.summary["E_it_J"] > 0 and _bits(b.summary) != _bits(a.summary)  # it really ran (another schedule)
    # a shared parse gives what a fresh one gives: the same scenario again from an empty share, bit for bit
    shared.clear()
    b_fresh = run_one(_cfg(trace, weather, **{"scheduler.policy": "fcfs"}), None, progress=False)
    assert _bits(b_fresh.summary) == _bits(b.summary)


def test_changed_trace_or_weather_file_is_parsed_again_not_shared(tmp_path):
    trace, weather = _small_trace(tmp_path / "t.swf.gz"), tmp_path / "w.epw.gz"
    shutil.copyfile(CHICAGO, weather)
    a = run_one(_cfg(trace, weather), None, progress=False)
    assert shared.parse_counts()["trace"] == 1 and shared.parse_counts()["weather"] == 1
    # the same path, now half the jobs: parsed again, and the run sees the new trace
    _small_trace(trace, keep_every=2)
    b = run_one(_cfg(trace, weather), None, progress=False)
    assert shared.parse_counts()["trace"] == 2 and shared.parse_counts()["weather"] == 1
    assert b.summary["E_it_J"] < a.summary["E_it_J"]  # fewer jobs in the window: less IT energy
    # the same path, now another site's weather: parsed again; same schedule, other wet-bulb, other cooling
    shutil.copyfile(KNOXVILLE, weather)
    c = run_one(_cfg(trace, weather), None, progress=False)
    assert shared.parse_counts()["weather"] == 2 and shared.parse_counts()["trace"] == 2
    assert c.summary["E_it_J"] == b.summary["E_it_J"]
    assert c.summary["E_cooling_J"] != b.summary["E_cooling_J"]
    assert "Knoxville" in c.info["weather"] and "Chicago" in b.info["weather"]


def test_steady_table_is_keyed_by_plant_content(monkeypatch):
    from cooling_fmu import quasisteady
    from cooling_fmu.params import load_plant_params

    built = []

    class Table:
        pass

    monkeypatch.setattr(quasisteady, "cached_steady_table", lambda p: built.append(p.name) or Table())
    p1 = load_plant_params("theta")
    p2 = type(p1).model_validate({**p1.model_dump(), "name": p1.name + "_other"})
    t1 = shared.shared_steady_table(p1)
    assert shared.shared_steady_table(load_plant_params("theta")) is t1  # equal content, another object: shared
    t2 = shared.shared_steady_table(p2)
    assert t2 is not t1 and len(built) == 2


def test_shared_system_is_read_only():
    s = shared.shared_system("theta")
    assert shared.shared_system("theta") is s
    with pytest.raises(ValueError, match="read-only"):
        s.node_cdu[0] = 1
