"""Ensembles: the [uncertainty] design, the perturbations, bands, ranking probabilities, sensitivity, and a sweep."""

import json

import h5py
import numpy as np
import pandas as pd
import pytest

from scheduler_sim.analysis.ensemble import (band, beats_matrix, does_not_matter, sensitivity_from_members,
                                             sobol_indices)
from scheduler_sim.app.config import ConfigError, PerturbConfig, RunConfig
from scheduler_sim.app.uncertainty import (design_matrix, ensemble_spec, member_seed, perturb_jobs, perturb_plant,
                                           perturb_system, perturb_wet_bulb)


def _spec(**kw):
    d = {"members": 8, "seed": 3, "parameters": {"node_power_scale": {"dist": "uniform", "low": 0.9, "high": 1.1},
                                                  "wet_bulb_offset_K": {"dist": "normal", "mean": 0.0, "sd": 1.0},
                                                  "runtime_estimate_sigma": {"dist": "constant", "value": 0.3}}}
    d.update(kw)
    return ensemble_spec(d, "s.toml")


def test_latin_hypercube_puts_one_member_in_each_stratum():
    U, X = design_matrix(_spec(members=10))
    assert U.shape == (10, 2) and X.shape == (10, 3)
    for j in range(2):
        assert sorted(np.floor(U[:, j] * 10).astype(int).tolist()) == list(range(10))
    assert np.allclose(X[:, 0], 0.9 + 0.2 * U[:, 0])  # uniform: low + u (high - low)
    from scipy.stats import norm
    assert np.allclose(X[:, 1], norm.ppf(U[:, 1]))
    assert np.all(X[:, 2] == 0.3)  # a constant is not a dimension of the design


def test_saltelli_design_runs_n_times_2d_plus_2():
    s = _spec(design="saltelli", members=8)
    assert s.n_runs == 8 * (2 * 2 + 2)
    U, X = design_matrix(s)
    assert U.shape == (48, 2) and np.all((U > 0) & (U < 1))


def test_sobol_design_and_seeds_are_reproducible():
    a, b = design_matrix(_spec(design="sobol"))[0], design_matrix(_spec(design="sobol"))[0]
    assert np.array_equal(a, b)
    assert member_seed(3, 0) != member_seed(3, 1) and member_seed(3, 1) == member_seed(3, 1)


@pytest.mark.parametrize("bad, msg", [
    ({"parameters": {"tower_ua": {"dist": "uniform", "low": 0, "high": 1}}}, "tower_ua: unknown parameter"),
    ({"parameters": {"node_power_scale": {"dist": "uniform", "low": 2, "high": 1}}}, "needs low < high"),
    ({"parameters": {"node_power_scale": {"dist": "normal", "mean": 1}}}, "takes exactly mean, sd"),
    ({"design": "grid"}, "design must be 'lhs', 'sobol' or 'saltelli'"),
    ({"members": 1}, "members must be an integer >= 2"),
    ({"refine": [99]}, "refine must be a list of member indices in 0..7"),
])
def test_bad_uncertainty_tables_name_the_key(bad, msg):
    with pytest.raises(ConfigError, match=msg):
        _spec(**bad)


def test_node_power_scale_scales_every_non_gpu_component():
    from power import load_system
    s = load_system("theta")
    p = perturb_system(PerturbConfig(node_power_scale=1.1, gpu_power_scale=2.0), s)
    assert p.node.cpu_max_W == pytest.approx(1.1 * s.node.cpu_max_W, rel=1e-15)
    assert p.node.mem_W == pytest.approx(1.1 * s.node.mem_W, rel=1e-15)
    assert p.node.gpu_max_W == 2.0 * s.node.gpu_max_W
    assert perturb_system(PerturbConfig(), s) is s and perturb_system(None, s) is s


def test_plant_perturbation_scales_tower_ntu_fans_and_caps_pump_efficiency():
    from cooling_fmu.params import load_plant_params
    base = load_plant_params("theta")
    p = perturb_plant(PerturbConfig(tower_ntu_scale=0.8, pump_eta_scale=5.0, fan_power_scale=1.2), base)
    assert p.tower.NTU_nominal == pytest.approx(0.8 * base.tower.NTU_nominal)
    assert p.tower.P_fan_cell_nominal_W == pytest.approx(1.2 * base.tower.P_fan_cell_nominal_W)
    assert p.cdu.pump.eta_pump == 1.0 and p.facility.pump.eta_pump == 1.0  # capped at 1


def test_job_perturbation_is_seeded_and_keeps_submissions_in_the_window():
    jobs = pd.DataFrame({"submit_time_s": [50.0, 100.0, 200.0, 300.0, 5000.0],
                         "requested_walltime_s": [10.0, 20.0, np.nan, 40.0, 50.0]})
    p = PerturbConfig(runtime_estimate_sigma=0.5, arrival_jitter_s=100.0, seed=7)
    a = perturb_jobs(p, jobs, 100.0, 400.0)
    rng = np.random.default_rng(7)
    z1, z2 = rng.standard_normal(5), rng.standard_normal(5)
    assert np.allclose(a["requested_walltime_s"], jobs["requested_walltime_s"] * np.exp(0.5 * z1), equal_nan=True)
    sub = a["submit_time_s"].to_numpy()
    assert sub[0] == 50.0 and sub[4] == 5000.0  # before / after the window: unchanged
    assert np.allclose(sub[1:4], np.clip(jobs["submit_time_s"][1:4] + 100 * z2[1:4], 100, np.nextafter(400, 0)))
    assert np.isnan(a["requested_walltime_s"][2])
    assert perturb_jobs(PerturbConfig(), jobs, 0, 1) is jobs
    assert perturb_wet_bulb(PerturbConfig(wet_bulb_offset_K=1.5), lambda t: t * 0 + 290.0)(np.zeros(2)).tolist() \
        == [291.5, 291.5]


def test_default_perturb_leaves_config_json_unchanged():
    assert "perturb" not in RunConfig().to_json()
    assert "perturb" in RunConfig().with_overrides({"perturb.node_power_scale": 1.05}).to_json()


def test_band_quantiles_by_hand():
    b = band(np.r_[np.arange(1.0, 22.0), np.nan])  # 1..21: p05 at position 1 -> 2, p95 at 19 -> 20
    assert (b.mean, b.p05, b.p95, b.n) == (11.0, 2.0, 20.0, 21)
    assert b.std == pytest.approx(np.std(np.arange(1.0, 22.0), ddof=1))


def test_beats_matrix_counts_members_and_ties():
    V = np.array([[1.0, 2.0, 3.0, 4.0], [2.0, 2.0, 1.0, 5.0]])
    P = beats_matrix(V, "min")
    # member 0: a < b, 1: tie, 2: a > b, 3: a < b -> (1 + 0.5 + 0 + 1) / 4
    assert P[0, 1] == 0.625 and P[1, 0] == 0.375 and np.isnan(P[0, 0])
    assert beats_matrix(V, "max")[0, 1] == 0.375


def test_does_not_matter_rule():
    bands = {"PUE": [band(np.linspace(1.040, 1.060, 21)), band(np.linspace(1.041, 1.061, 21))],
             "mean_wait_s": [band(np.linspace(100, 110, 21)), band(np.linspace(200, 210, 21))]}
    lines = does_not_matter(["fcfs", "easy"], ["", ""], bands)
    assert lines[0].startswith("policy choice does not change PUE here: means differ by at most 0.001, within the "
                               "ensemble 5-95 % half-width (0.009)")
    assert lines[1] == ("policy choice changes mean wait: fcfs vs easy differ by 100 s, more than the ensemble "
                        "5-95 % half-width 4.5 s")  # durations in the unit their size picks (schema table)


def test_rbd_fast_and_delta_find_the_parameter_that_matters():
    U = design_matrix(_spec(members=64))[0]
    y = 5.0 * U[:, 0] + 0.01 * U[:, 1]
    s = sensitivity_from_members(U, y, ["a", "b"])
    assert s["rbd_fast_S1"][0] > 0.8 and s["rbd_fast_S1"][1] < 0.15
    assert s["delta"][0] > 3 * s["delta"][1]
    assert np.all(np.isnan(sensitivity_from_members(U, np.ones(64), ["a", "b"])["delta"]))  # no variance: NaN


def test_sensitivity_indices_do_not_depend_on_numpy_global_random_state():
    # SALib's delta also draws from numpy's global generator: the indices must depend on the members and the seed
    # only, whatever ran before in the process (another member, another test, another MPI rank's history)
    U = design_matrix(_spec(members=64))[0]
    y = 5.0 * U[:, 0] + 0.01 * U[:, 1]
    got = []
    for state in (0, 1, 12345):
        np.random.seed(state)
        s = sensitivity_from_members(U, y, ["a", "b"])
        got.append(np.concatenate([s["delta"], s["rbd_fast_S1"]]))
        after = np.random.random()
        np.random.seed(state)
        assert after == np.random.random()  # the caller's global generator is given back as it was
    assert np.array_equal(got[0], got[1]) and np.array_equal(got[0], got[2])


def test_sobol_indices_of_a_linear_model_are_its_variance_shares():
    s = _spec(design="saltelli", members=512)
    U = design_matrix(s)[0]
    y = U[:, 0] + 2.0 * U[:, 1]  # var: 1/12 and 4/12 -> S1 = ST = 0.2, 0.8 (additive model)
    r = sobol_indices(y, ["a", "b"])
    assert r["sobol_S1"] == pytest.approx([0.2, 0.8], abs=0.05)
    assert r["sobol_ST"] == pytest.approx([0.2, 0.8], abs=0.05)


def test_ensemble_sweep_bands_and_physics(tmp_path):
    """Two policies x 4 members of a 1-day Theta window, cooling off: node DC energy scales exactly with the
    sampled node_power_scale (scheduling does not depend on power), and /ensemble matches /scenarios."""
    from scheduler_sim.app.runner import run_one
    from scheduler_sim.app.sweep import run_sweep

    study = tmp_path / "ens.toml"
    study.write_text('''name = "ens"
[base]
trace = { window_start_days = 181.0, window_days = 1.0 }
cooling = { model = "off" }
output = { interval_s = 60.0, progress = false }
[axes]
"scheduler.policy" = ["fcfs", "easy"]
[uncertainty]
members = 4
seed = 5
[uncertainty.parameters]
node_power_scale = { dist = "uniform", low = 0.9, high = 1.1 }
''')
    lines = []
    summary = run_sweep(study, tmp_path / "out", echo=lines.append)
    ref = run_one(RunConfig.model_validate({"trace": {"window_start_days": 181.0, "window_days": 1.0},
                                            "cooling": {"model": "off"}, "scheduler": {"policy": "fcfs"},
                                            "output": {"progress": False}}), None).summary
    with h5py.File(summary) as f:
        names = [x.decode() for x in f["scenarios/name"][()]]
        assert names == [f"{p}_m{k:03d}" for p in ("000_fcfs", "001_easy") for k in range(4)]
        scale = f["ensemble/parameters/node_power_scale"][()]
        e = f["scenarios/E_node_dc_J"][()]
        assert e[:4] / ref["E_node_dc_J"] == pytest.approx(scale, rel=1e-9)
        assert f["ensemble/band/E_node_dc_J__mean"][()] == pytest.approx([e[:4].mean(), e[4:].mean()], rel=1e-12)
        assert f["ensemble/band/E_node_dc_J__p95"][0] == pytest.approx(np.quantile(e[:4], 0.95), rel=1e-12)
        P = f["ensemble/beats/mean_wait_s"][()]
        assert P[0, 1] + P[1, 0] == pytest.approx(1.0)
        assert [x.decode() for x in f["ensemble/scenario"][()]] == ["000_fcfs", "001_easy"]
    out = "\n".join(lines)
    assert "ensemble: 2 scenario(s) x 4 member(s) (lhs, seed 5" in out
    assert "ranking mean_wait_s (lower is better): P(000_fcfs beats 001_easy) = " in out
    from scheduler_sim.io.schema import validate_file
    assert validate_file(summary) == []
    lines.clear()
    run_sweep(study, tmp_path / "out", echo=lines.append)  # resumes: every member done earlier
    assert "8 scenario(s), 8 done earlier, 0 to run" in lines[0]


def test_within_the_spread_but_same_sign_in_every_member_matters():
    rng = np.random.default_rng(1)
    a = 1.05 + 0.01 * rng.standard_normal(32)  # common inputs: B = A + 0.001 in every member
    V = np.vstack([a, a + 0.001])
    lines = does_not_matter(["fcfs", "easy"], ["", ""], {"PUE": [band(V[0]), band(V[1])]}, values={"PUE": V})
    assert lines[0].startswith("policy choice changes PUE by less than the ensemble spread")
    assert "fcfs - easy between -0.001 and -0.001 (5-95 %)" in lines[0]  # PUE: no unit
    V2 = np.vstack([a, a[::-1]])  # same spread, paired differences of both signs: does not matter
    assert does_not_matter(["fcfs", "easy"], ["", ""], {"PUE": [band(V2[0]), band(V2[1])]},
                           values={"PUE": V2})[0].startswith("policy choice does not change PUE here")


@pytest.mark.fmu
@pytest.mark.slow
def test_refined_members_run_with_the_fmu_and_report_the_fast_plant_error(tmp_path):
    """Members on the fast plant; member 0 also with the FMU: /ensemble/refine within docs/cooling.md's bound
    (cooling energy within 1.2e-2 on a week; a day with a perturbed wet-bulb here, same order)."""
    from scheduler_sim.app.sweep import run_sweep

    study = tmp_path / "ref.toml"
    study.write_text('''name = "ref"
[base]
trace = { window_start_days = 181.0, window_days = 1.0 }
output = { interval_s = 60.0, progress = false, max_drain_days = 0.5 }
[uncertainty]
members = 2
seed = 1
refine = [0]
[uncertainty.parameters]
wet_bulb_offset_K = { dist = "uniform", low = -1.0, high = 1.0 }
''')
    lines = []
    summary = run_sweep(study, tmp_path / "out", echo=lines.append)
    with h5py.File(summary) as f:
        names = [x.decode() for x in f["scenarios/name"][()]]
        assert names == ["000_m000", "000_m001", "000_m000_fmu"]
        cfgs = [json.loads(x) for x in f["scenarios/config_json"][()]]
        assert [c["cooling"].get("model", "fmu") for c in cfgs] == ["fast", "fast", "fmu"]
        assert [x.decode() for x in f["ensemble/refine/member"][()]] == ["000_m000"]
        rel = f["ensemble/refine/E_cooling_J__rel_error"][0]
        e = f["scenarios/E_cooling_J"][()]
        assert rel == pytest.approx(e[0] / e[2] - 1.0, rel=1e-12)
        assert 0 < abs(rel) < 2e-2
    assert any(ln.startswith("refine  000_m000: fast vs FMU relative error: E_cooling_J") for ln in lines)
