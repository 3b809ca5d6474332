"""The command line: exit codes, clear errors, and a real (small) run checked by its numbers."""

from __future__ import annotations

import subprocess
import sys

import h5py
import pytest

from scheduler_sim.app.cli import main


def test_help_explains_every_option(capsys):
    with pytest.raises(SystemExit) as e:
        main(["run", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    for opt in ("--out", "--policy", "--days", "--start-day", "--no-cooling", "--wet-bulb", "--step", "--interval"):
        assert opt in out


def test_list_policies(capsys):
    assert main(["list", "policies"]) == 0
    out = capsys.readouterr().out
    names = {line.split()[0] for line in out.splitlines()}
    assert {"replay", "fcfs", "sjf", "ljf", "largest", "priority", "easy", "conservative"} <= names
    assert "easy-bestfit" in out and "firstfit" in out


def test_bad_config_is_a_clear_error(tmp_path, capsys):
    cfg = tmp_path / "bad.toml"
    cfg.write_text('[scheduler]\npolicy = "easy"\nbackfil = 1\n')
    assert main(["run", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert "bad.toml" in err and "scheduler.backfil" in err


def test_unknown_policy_is_a_clear_error(capsys):
    assert main(["run", "--policy", "nope", "--no-cooling", "--days", "1", "--quiet"]) == 2
    assert "unknown policy 'nope'" in capsys.readouterr().err


def test_validate_exit_codes(tmp_path, capsys):
    good = tmp_path / "g.swf"
    good.write_text("1 0 5 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n")
    assert main(["validate", str(good)]) == 0
    bad = tmp_path / "b.swf"
    bad.write_text("1 0 5 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n2 x 5\n")
    assert main(["validate", str(bad)]) == 1
    assert main(["validate", str(tmp_path / "missing.swf")]) == 2


def test_run_without_cooling_writes_consistent_file(tmp_path, capsys):
    out = tmp_path / "r.h5"
    assert main(["run", "--no-cooling", "--days", "2", "--quiet", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "utilisation" in text and "mean bounded slowdown" in text
    with h5py.File(out) as f:
        s = dict(f["summary"].attrs)
        # 2 days of submissions from day 181; IT energy = mean IT power x duration
        assert s["E_it_J"] == pytest.approx(s["mean_P_it_W"] * s["duration_s"], rel=1e-12)
        assert f["timeseries/facility/P_it_W"].shape[0] == int(s["duration_s"] / 60)
        assert 0 < s["utilisation"] <= 1


def test_python_m_scheduler_sim_is_the_same_command():
    r = subprocess.run([sys.executable, "-m", "scheduler_sim", "list", "policies"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and "easy" in r.stdout
