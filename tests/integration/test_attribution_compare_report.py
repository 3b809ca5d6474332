"""Attribution, run-vs-run explanation and report on real (3-day, cooling FMU) Theta runs."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import h5py
import numpy as np
import pytest

from scheduler_sim.io import hdf5 as hdf5io
from scheduler_sim.analysis.attribution import load_result, read_attribution
from scheduler_sim.app.cli import main
from scheduler_sim.analysis.compare import LINKS, compare
from scheduler_sim.app.config import load_config
from scheduler_sim.analysis.report import RUN_FIGURES, make_report
from scheduler_sim.app.runner import run_one

pytestmark = pytest.mark.fmu


def _run(out: Path, **ov):
    # Every job at the system's default utilisation (no per-job power spread): the bound below, a job's effective
    # PUE within the range of the interval PUEs, holds when all jobs have one power density per node. With a spread
    # a low-power job on a CDU shares that CDU's pump power over less heat, and its PUE may leave that range.
    cfg = load_config(None).with_overrides({"trace.window_days": 3.0, "output.progress": False,
                                            "power.job_power_spread": "none", **ov})
    return run_one(cfg, out, progress=False).path


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("runs")
    # B differs from A only in the weather: a constant wet-bulb of 18 degC instead of 8 degC. The plant's tower fans
    # run under a leaving-water setpoint control, so a hotter wet-bulb needs more air flow (more fan power); nothing
    # upstream of the plant sees the weather.
    wx = {"cooling.weather": "constant"}
    return {"a": _run(d / "a.h5", name="a", **wx, **{"cooling.T_wb_C": 8.0}),
            "b": _run(d / "b.h5", name="b", **wx, **{"cooling.T_wb_C": 18.0}),
            "fcfs": _run(d / "fcfs.h5", name="fcfs", **wx, **{"cooling.T_wb_C": 8.0, "scheduler.policy": "fcfs"})}


def test_attribution_closes_on_the_run_totals(runs):
    p = runs["a"]
    att = read_attribution(p)
    res = load_result(p)
    T = res.totals
    J, S = att.jobs, att.pseudo
    # per job: interval-integrated IT energy equals the simulation's own per-job energy
    ran = res.jobs["energy_it_J"].to_numpy() > 0
    assert np.allclose(J["E_it_J"][ran], res.jobs["energy_it_J"].to_numpy()[ran], rtol=1e-9, atol=0)
    # the remainder after the jobs equals the idle energy the simulation integrated event by event
    assert S["E_it_J"][0] == pytest.approx(T["E_idle_node_it_J"], rel=1e-9)
    assert S["E_node_dc_J"][0] == pytest.approx(T["E_idle_node_dc_J"], rel=1e-9)
    assert att.totals["closure_rel_error"] < 1e-9
    # every consumer's shares sum to the run totals of /totals
    for k, tk in (("E_it_J", "E_it_J"), ("E_node_dc_J", "E_node_dc_J"), ("E_sivoc_loss_J", "E_sivoc_loss_J"),
                  ("E_rectifier_loss_J", "E_rectifier_loss_J"), ("E_cooling_J", "E_cooling_J"),
                  ("E_facility_J", "E_facility_J")):
        assert J[k].sum() + S[k].sum() == pytest.approx(T[tk], rel=1e-9), k
    cool = sum(J[k].sum() + S[k].sum() for k in ("E_cdu_pump_J", "E_facility_pump_J", "E_tower_pump_J", "E_tower_fan_J",
                                                  "E_chiller_J"))
    assert att.totals["E_tower_pump_J"] > 0.05 * T["E_cooling_J"]  # the tower-water pumps are a component of their own
    assert cool == pytest.approx(T["E_cooling_J"], rel=1e-9)
    # SIVOC split from the system description: Theta (P + 3 W) / 0.93 per node
    j = int(np.argmax(J["E_it_J"]))
    P, n, run_s = (res.jobs[c].iloc[j] for c in ("node_power_W", "nodes", "run_s"))
    t = min(run_s, res.jobs["sim_end_s"].iloc[j] - res.time_s[0])
    assert J["E_sivoc_loss_J"][j] == pytest.approx(n * t * ((P + 3.0) / 0.93 - P), rel=1e-9)
    # every job pays some cooling. Everything but the CDU pumps is allocated by the job's share of facility heat
    # or IT power in each interval (liquid fraction constant), so without its CDU pumps a job's effective PUE is a
    # convex combination of the interval ratios; CDU pumps follow the job's own CDUs, whose pump power per watt of
    # heat differs from the facility's, so they are left out of this bound
    ts = att.timeseries
    assert np.all(J["E_cooling_J"][ran] > 0)
    r_int = (ts["P_facility_W"] - ts["P_cdu_pump_W"]) / ts["P_it_W"]
    r_job = (J["E_facility_J"][ran] - J["E_cdu_pump_J"][ran]) / J["E_it_J"][ran]
    assert r_int.min() - 1e-12 <= r_job.min() and r_job.max() <= r_int.max() + 1e-12
    # per interval: the components sum to facility power; cumulative PUE ends on the run's PUE
    ts = att.timeseries
    parts = sum(ts[k] for k in ("P_node_dc_W", "P_rack_overhead_W", "P_sivoc_loss_W", "P_rectifier_loss_W",
                                "P_cdu_pump_W", "P_facility_pump_W", "P_tower_pump_W",
                                "P_tower_fan_W", "P_chiller_W",
                                "P_transformer_loss_W", "P_switchgear_loss_W", "P_ups_loss_W", "P_pdu_loss_W",
                                "P_air_fan_W", "P_air_chiller_W", "P_lighting_W"))
    assert np.allclose(parts, res.facility["P_facility_W"], rtol=1e-9, atol=0)
    assert ts["PUE_cumulative"][-1] == pytest.approx(res.summary["PUE"], rel=1e-9)
    assert att.cdu["E_heat_J"].sum() == pytest.approx(T["E_cdu_heat_J"], rel=1e-9)
    assert att.rack["E_sivoc_loss_J"].sum() == pytest.approx(T["E_sivoc_loss_J"], rel=1e-9)
    assert att.rack["E_rectifier_loss_J"].sum() == pytest.approx(T["E_rectifier_loss_J"], rel=1e-9)


def test_compare_a_with_itself_is_all_zeros(runs, capsys):
    c = compare(runs["a"], runs["a"])
    assert (c.energy == 0).all() and (c.pue == 0).all()
    assert (c.totals["delta"] == 0).all()
    assert len(c.top_jobs) == 0 and len(c.top_periods) == 0
    assert main(["compare", str(runs["a"]), str(runs["a"])]) == 0
    assert re.search(r"^total\s+\+0\.0000 MWh\s+\+0\.000000$", capsys.readouterr().out, re.M)


def test_weather_only_change_lands_on_the_cooling_link(runs):
    c = compare(runs["a"], runs["b"])
    dE = c.totals.loc["E_facility_J", "delta"]
    dP = c.totals.loc["PUE", "delta"]
    assert dE > 0 and dP > 0  # a hotter wet-bulb costs fan power
    assert c.energy["cooling: plant efficiency"] == pytest.approx(dE, rel=1e-12)
    assert c.pue["cooling: plant efficiency"] == pytest.approx(dP, rel=1e-9)
    for k in ("scheduling -> compute", "conversion losses", "cooling: heat load"):
        assert c.energy[k] == 0 and abs(c.pue[k]) < 1e-15
    assert c.context["jobs_only_a"] == c.context["jobs_only_b"] == 0 and (c.top_jobs["delta_start_s"] == 0).all()
    assert (c.top_periods["delta_E_it_J"] == 0).all()


def test_scheduling_change_links_sum_to_the_total(runs):
    c = compare(runs["a"], runs["fcfs"])
    dE = c.totals.loc["E_facility_J", "delta"]
    assert list(c.energy.index) == list(LINKS)
    assert c.energy.sum() == pytest.approx(dE, rel=1e-12)
    assert c.pue.sum() == pytest.approx(c.totals.loc["PUE", "delta"], rel=1e-9)
    assert c.energy["scheduling -> compute"] == pytest.approx(c.totals.loc["E_compute_J", "delta"], rel=1e-12)
    # FCFS leaves nodes idle longer: a change the first link must show
    assert c.energy["scheduling -> compute"] != 0 and c.context["delta_mean_wait_s"] > 0


def test_report_renders_every_figure(runs, tmp_path):
    html_path = make_report(runs["a"], tmp_path / "rep")
    page = html_path.read_text()
    for name in RUN_FIGURES:
        m = re.search(rf'data-figure="{name}"><img alt="[^"]*" src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
        assert m, name
        assert base64.b64decode(m.group(1))[:8] == b"\x89PNG\r\n\x1a\n"
        assert (tmp_path / "rep" / f"{name}.svg").read_text().lstrip().startswith("<?xml")
    with h5py.File(runs["a"]) as f:
        sha = f.attrs["git_sha"]
        checks = f["provenance"].attrs["input_checksums_json"]
    assert sha in page and checks.split('"')[3] in page  # provenance: commit and a checksum


def test_sweep_report_has_pareto_plots(tmp_path):
    p = tmp_path / "summary.h5"
    with h5py.File(p, "w") as f:
        f.attrs.update(schema_version=hdf5io.SCHEMA_VERSION, kind="sweep-summary", study="s", study_file="x")
        g = f.create_group("scenarios")
        g["name"] = np.array(["000_fcfs", "001_easy", "002_bad"], dtype=h5py.string_dtype())
        g["status"] = np.array(["done", "done", "failed"], dtype=h5py.string_dtype())
        for k, v in {"mean_wait_s": [7200.0, 3600.0, np.nan], "E_facility_J": [3.6e12, 3.7e12, np.nan],
                     "mean_bounded_slowdown": [5.0, 3.0, np.nan], "PUE": [1.012, 1.013, np.nan]}.items():
            g[k] = np.array(v)
        f.attrs["content_sha256"] = hdf5io.content_digest(f)
    page = make_report(p).read_text()
    for name in ("pareto_mean_wait_s__E_facility_J", "pareto_mean_bounded_slowdown__PUE"):
        assert f'data-figure="{name}"><img' in page
    with pytest.raises(KeyError, match="no metric 'nope'"):
        make_report(p, pareto=[("nope", "PUE")])


def test_schema_1_0_files_still_read_and_2_0_refused(runs, tmp_path):
    old = tmp_path / "old.h5"
    old.write_bytes(Path(runs["a"]).read_bytes())
    with h5py.File(old, "a") as f:
        del f["attribution"]
        f.attrs["schema_version"] = "1.0"
        del f.attrs["content_sha256"]  # schema 1.0 files have no content checksum: read with --no-verify only
    with pytest.raises(hdf5io.DamagedFileError, match="no content checksum"):
        read_attribution(old)
    a_new, a_old = read_attribution(runs["a"]), read_attribution(old, allow_unverified=True)
    assert np.array_equal(a_new.jobs["E_facility_J"], a_old.jobs["E_facility_J"])
    with h5py.File(old, "a") as f:
        f.attrs["schema_version"] = "2.0"
    with pytest.raises(hdf5io.SchemaError, match="2.0 is not compatible"):
        read_attribution(old, allow_unverified=True)
