"""The command line: exit codes, clear errors, and a real (small) run checked by its numbers."""

from __future__ import annotations

import subprocess
import sys

import h5py
import pytest

from scheduler_sim.cli import main


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


# ---- issue 12: --quiet never hides data loss; runs that serve nothing fail -------------------------------------
def test_quiet_still_warns_about_rejected_records(tmp_path, capsys):
    tr = tmp_path / "nan.swf"
    tr.write_text("; MaxNodes: 4360\n; MaxProcs: 4360\n"
                  "1 600 10 1860 38 -1 -1 38 7200 -1 1 1 1 -1 1 -1 -1 -1\n"
                  "2 1200 10 nan 16 -1 -1 16 7200 -1 1 1 1 -1 1 -1 -1 -1\n"
                  "3 1800 10 1980 112 -1 -1 112 7200 -1 1 1 1 -1 1 -1 -1 -1\n")
    assert main(["run", "--trace", str(tr), "--start-day", "0", "--days", "1", "--no-cooling", "--quiet",
                 "--out", str(tmp_path / "q.h5")]) == 0
    cap = capsys.readouterr()
    assert "rejected by the loader 1 (whole trace)" in cap.out
    warn = [x for x in cap.err.splitlines() if "record(s) rejected" in x]
    assert warn == [f"hpctwin run: warning: {tr}: 1 job record(s) rejected and 0 repaired at load, of 3 read "
                    f"(details: hpctwin validate, or the load report in /provenance)"]
    assert "jobs simulated        2" in cap.out


def test_serving_run_with_every_request_rejected_exits_non_zero(tmp_path, capsys):
    (tmp_path / "sys.toml").write_text(
        'name = "tinygpu"\ncores_per_node = 1\ncooling_plant = "seth"\nliquid_fraction = 1.0\n'
        'default_cpu_util = 0.5\ndefault_gpu_util = 0.5\n[topology]\nn_cdus = 1\nrack_positions_per_cdu = 1\n'
        'nodes_per_rack = 2\nmissing_rack_positions = []\nn_nodes = 2\n[node]\ncpu_idle_W = 10.0\n'
        'cpu_max_W = 20.0\ncpus_per_node = 1\ngpu_idle_W = 100.0\ngpu_max_W = 300.0\ngpus_per_node = 1\n'
        'mem_W = 5.0\n[sivoc]\nP_fixed_W = 0.0\neta = 1.0\nk_per_W = 0.0\n[rectifier]\nP_fixed_W = 0.0\n'
        'eta = 1.0\nk_per_W = 0.0\nnodes_per_rectifier = 2\n[rack_overhead]\nP_W = 0.0\nside = "ac"\n')
    (tmp_path / "m.toml").write_text('name = "toy"\nparameters = 1e9\nlayers = 1\nhidden_size = 1\n'
                                     'attention_heads = 1\nkv_heads = 1\nhead_dim = 1\nbytes_per_parameter = 2\n'
                                     'bytes_per_kv_element = 1\n')
    (tmp_path / "g.toml").write_text('name = "toy"\npeak_flops = 4e12\nhbm_bandwidth_B_s = 1e12\n'
                                     'hbm_capacity_B = 2000000080.0\nidle_power_W = 100.0\nmax_power_W = 300.0\n'
                                     'link_bandwidth_B_s = 1e9\n')
    (tmp_path / "dep.toml").write_text('model = "m.toml"\ngpu = "g.toml"\nreplicas = 1\ntensor_parallel = 1\n'
                                       'gpu_memory_utilization = 1.0\nblock_size = 4\n')
    (tmp_path / "r.csv").write_text("t,p,o\n0,100,2\n1,100,2\n")
    cfg = tmp_path / "run.toml"
    cfg.write_text('name = "allrej"\nsystem = "sys.toml"\n[trace]\nenabled = false\n[cooling]\nenabled = false\n'
                   '[serving]\ndeployment = "dep.toml"\ntrace = "r.csv"\nformat = "request_csv"\n'
                   'loader_options = {arrival = "t", prompt = "p", output = "o"}\n')
    out = tmp_path / "o.h5"
    assert main(["run", str(cfg), "--quiet", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "every one of the 2 request(s) was rejected" in err and "Traceback" not in err
    assert not out.exists()
