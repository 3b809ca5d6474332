"""The ready studies: every study file loads, and the power-cap study (on a short window) holds its cap and draws its
figure."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import pytest

from power import load_system
from scheduler_sim.app.runner import design_peak_w
from scheduler_sim.app.sweep import load_study, run_sweep, study_plot_function

EXP = Path(__file__).resolve().parents[2] / "experiments"


@pytest.mark.parametrize("name,n", [("study_policies_theta", 5), ("study_power_cap", 5),
                                    ("study_placement_hot_week", 3), ("theta_policies_weather", 4)])
def test_study_files_load(name, n):
    study, scenarios = load_study(EXP / f"{name}.toml")
    assert len(scenarios) == n and len({s.name for s in scenarios}) == n


@pytest.mark.fmu
def test_power_cap_study_holds_the_cap_and_plots(tmp_path):
    text = (EXP / "study_power_cap.toml").read_text()
    text = text.replace("window_days = 30.0", "window_days = 3.0")
    text = text.replace('output = { progress = false }', 'output = { progress = false, warmup_days = 1.0 }')
    study = tmp_path / "cap.toml"
    study.write_text(text)
    summary = run_sweep(study, tmp_path / "out", echo=lambda s: None)
    assert (tmp_path / "out" / "power_cap.png").stat().st_size > 10_000
    peak_ref = design_peak_w(load_system("theta"), 0.05)
    with h5py.File(summary) as f:
        names = [x.decode() for x in f["scenarios/name"][()]]
        peaks = f["scenarios/peak_P_facility_measured_W"][()]
        for name, cj, peak in zip(names, f["scenarios/config_json"][()], peaks):
            cap = json.loads(cj)["scheduler"]["power_cap"]
            if cap:
                # after the warm-up no 60 s average exceeds the budget (the prediction uses the same chain for IT;
                # cooling is predicted with the plant's last cooling/IT ratio, so when a job fills the headroom
                # almost exactly the plant's response to the step adds to it: measured on cap90 (3 days) with
                # reservations from known availability, a 1024-node job admitted with 64 W of headroom at 46.967 h
                # (+124 kW IT) moved the cooling/IT ratio from 0.0027 to 0.0038 within 10 minutes: 4.5e-4 of the cap.
                # The bound is that ratio rise times the largest IT step, ~1e-3 of the cap; the predictor's lag is
                # a known limitation (docs/policies.md, power cap)
                assert peak <= cap[0]["cap_fraction"] * peak_ref * (1 + 1e-3), name
        # a tighter cap never raises the measured peak
        assert peaks[names.index("004_cap70")] <= peaks[names.index("002_cap90")]
    assert study_plot_function(study) is not None
