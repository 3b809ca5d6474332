"""Grid signals through a real run (1 day of Theta, cooling FMU): /grid closes, compare explains cost and CO2."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest

from scheduler_sim.analysis.attribution import load_result, read_attribution
from scheduler_sim.analysis.compare import GRID_LINKS, compare
from scheduler_sim.app.cli import main
from scheduler_sim.app.config import load_config
from scheduler_sim.app.runner import run_one
from scheduler_sim.io.grid import read_grid_group

pytestmark = pytest.mark.fmu


def _run(out, **ov):
    cfg = load_config(None).with_overrides({"trace.window_days": 1.0, "output.progress": False, **ov})
    return run_one(cfg, out, progress=False)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("grid")
    g = {"grid.carbon": "pjm-carbon-2022", "grid.price": "pjm-price-2022"}
    return {"plain": _run(d / "plain.h5", name="plain"),
            "easy": _run(d / "easy.h5", name="easy", **g),
            "carbon": _run(d / "carbon.h5", name="carbon", **g, **{"scheduler.policy": "carbon-aware"})}


def test_no_grid_section_writes_nothing_new(runs):
    p = runs["plain"].path
    with h5py.File(p) as f:
        assert "grid" not in f
        cfg = json.loads(f.attrs["config_json"])
        assert "grid" not in cfg and "carbon" not in cfg["scheduler"]
        assert not any(k.startswith("grid_") for k in f["summary"].attrs)


def test_grid_totals_close_and_match_the_facility_energy(runs):
    p = runs["easy"].path
    g = read_grid_group(p)
    res = load_result(p)
    T = g["totals"]
    # the grid integration covers exactly the facility energy of the run (interval sums of P_facility_W)
    assert T["E_facility_J"] == pytest.approx(res.totals["E_facility_J"], rel=1e-9)
    for p_ in ("co2_kg", "cost"):
        tot = T[f"{p_}_facility"]
        # jobs + idle = total; groups sum to the facility; accounts, CDUs and intervals sum to it
        assert g["jobs"][f"{p_}_facility"].sum() + g["pseudo"][f"{p_}_facility"].sum() == pytest.approx(tot, rel=1e-12)
        parts = sum(T[f"{p_}_{k}"] for k in ("it", "cooling", "electrical_loss", "lighting"))
        assert parts == pytest.approx(tot, rel=1e-12)
        assert g["accounts"][f"{p_}_facility"].sum() == pytest.approx(tot, rel=1e-12)
        assert g["timeseries"][p_].sum() == pytest.approx(tot, rel=1e-12)
        assert T[f"{p_}_cdu_closure_rel_error"] < 1e-9
        # the interval-level IT of the jobs against the event-level integral P_j * int s dt: the trace origin is
        # 07:14:14 UTC, so every hour boundary falls inside a 60 s interval; the gap stays below 1e-4
        assert T[f"{p_}_it_jobs_interval_rel_error"] < 1e-4
    # the energy-weighted mean intensity lies inside the day's hourly range of the PJM series (July 1-2, 2022)
    w = g["timeseries"]["carbon_intensity_kg_per_J"] * 3.6e9
    assert w.min() <= T["carbon_mean_per_J"] * 3.6e9 <= w.max()
    # per-job CO2 of IT equals the job's IT energy times its run-mean intensity, within the spread of the day
    att = read_attribution(p)
    ran = att.jobs["E_it_J"] > 0
    ratio = g["jobs"]["co2_kg_it"][ran] / att.jobs["E_it_J"][ran] * 3.6e9
    assert np.all((ratio >= w.min() - 1e-9) & (ratio <= w.max() + 1e-9))
    s = runs["easy"].summary
    assert s["grid_co2_t"] == pytest.approx(T["co2_kg_facility"] / 1e3) and s["grid_carbon_fallback_fraction"] == 0


def test_compare_explains_cost_and_co2_link_by_link(runs):
    a, b = runs["easy"].path, runs["carbon"].path
    same = compare(a, a)
    for kind in ("carbon", "price"):
        assert np.allclose(same.grid[kind]["links"].to_numpy(), 0.0, atol=1e-9)
    c = compare(a, b)
    ga, gb = read_grid_group(a), read_grid_group(b)
    for kind, key, scale in (("carbon", "co2_kg_facility", 1e3), ("price", "cost_facility", 1.0)):
        links = c.grid[kind]["links"]
        assert list(links.index) == list(GRID_LINKS)
        # the links sum to the change exactly; the signal is the same file, so the grid-signal link is 0
        d = (gb["totals"][key] - ga["totals"][key]) / scale
        assert links.sum() == pytest.approx(d, rel=1e-12, abs=1e-12)
        assert links["grid signal"] == pytest.approx(0.0, abs=1e-12 * abs(ga["totals"][key]))
    text = c.format()
    assert "CO2 (facility)" in text and "scheduling: timing" in text and "grid signal" in text


def test_cli_flags_and_summary_lines(tmp_path, capsys):
    out = tmp_path / "r.h5"
    rc = main(["run", "--days", "0.5", "--carbon", "pjm-carbon-2022", "--price", "pjm-price-2022", "--quiet",
               "--out", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    assert "CO2 (facility)" in text and "energy cost (facility)" in text and "PUE" in text
    with h5py.File(out) as f:
        assert f["grid"].attrs["carbon_source"] == "US-MIDA-PJM_2022_hourly.csv.gz"
        assert f["grid/jobs/co2_kg_facility"].attrs["units"] == "kg"
        assert f["grid/jobs/cost_facility"].attrs["units"] == "USD"


def test_both_halves_of_grid_share_one_group_that_the_schema_accepts(runs, tmp_path):
    """Signals (cost / CO2) and dynamics (a ramp limit, a battery) in one run: one /grid holding both writers'
    subgroups, and the file conforms to the schema table both ways (nothing undeclared, nothing required missing)."""
    from scheduler_sim.io.schema import validate_file

    out = tmp_path / "both.h5"
    _run(out, name="both", **{"grid.carbon": "pjm-carbon-2022", "grid.price": "pjm-price-2022",
                              "grid.ramp_limit_MW_per_min": 0.05,
                              "grid.battery": {"capacity_kWh": 50.0, "power_kW": 100.0,
                                               "round_trip_efficiency": 0.9}})
    with h5py.File(out) as f:
        subs = set(f["grid"])
    assert {"jobs", "accounts", "cdu", "timeseries", "totals"} <= subs  # cost / CO2 (scheduler_sim.io.grid)
    assert {"ramps", "battery"} <= subs  # dynamics (scheduler_sim.io.grid_group)
    assert validate_file(out) == []
    assert validate_file(runs["easy"].path) == []  # signals only
