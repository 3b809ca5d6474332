"""Options that work the way they read (issue #13, item 6): each test types what a planner would type."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np
import pytest

from scheduler_sim.app.cli import main
from scheduler_sim.app.config import RunConfig
from tests.conftest import make_jobs

DATA = Path(__file__).resolve().parents[1] / "data"


def _config(path: Path) -> dict:
    with h5py.File(path) as f:
        return json.loads(f.attrs["config_json"])


def test_backfill_alone_applies_to_the_default_order(tmp_path, capsys):
    out = tmp_path / "c.h5"
    assert main(["run", "--backfill", "conservative", "--no-cooling", "--days", "0.5", "--quiet",
                 "--out", str(out)]) == 0
    sc = _config(out)["scheduler"]
    assert (sc["policy"], sc["backfill"]) == ("fcfs", "conservative")


def test_twin_is_listed_and_a_typo_is_suggested_once(capsys):
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    assert "twin" in capsys.readouterr().out
    assert main(["run", "--policy", "twn", "--no-cooling", "--days", "1", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "did you mean twin?" in err and "known policies: replay, " in err and " twin," in err
    assert err.count("twn") == 1  # the typo is named once, never offered back as a suggestion


def test_version_and_debug_after_the_command(capsys):
    from importlib.metadata import version

    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.strip() == f"hpctwin {version('hpctwin')}"
    with pytest.raises(Exception, match="window_days"):  # --debug after the command: the traceback propagates
        main(["run", "--days", "-1", "--no-cooling", "--debug"])


def test_errors_name_the_flag_not_the_config_key(capsys):
    assert main(["run", "--days", "-1", "--no-cooling", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "--days (trace.window_days)" in err and "invalid command-line option" in err


def test_default_start_day_fits_the_trace():
    from scheduler_sim.app.runner import default_start_day

    cfg = RunConfig()
    early = make_jobs([(1, 2.5 * 86400, 1, 60, 120), (2, 9 * 86400, 1, 60, 120)])
    assert default_start_day(cfg, early) == 2.0          # the trace ends before day 181: its first submission's day
    late = make_jobs([(1, 2.5 * 86400, 1, 60, 120), (2, 250 * 86400, 1, 60, 120)])
    assert default_start_day(cfg, late) == 181.0         # the trace reaches day 181 (even with a gap there): kept
    chosen = cfg.with_overrides({"trace.window_start_days": 100.0})
    assert default_start_day(chosen, early) == 100.0     # a start the user chose is never moved


def test_cooling_default_output_names_plant_and_start(tmp_path, capsys, monkeypatch):
    t = 1_700_000_000 + 900 * np.arange(96)
    kw = np.full(96, 2000.0)  # 2.0 MW, above the Theta-like plant's design heat (6 x 266.7 kW = 1.6 MW)
    series = tmp_path / "p.csv"
    series.write_text("timestamp_secs,measured_kW\n" + "\n".join(f"{a},{b:g}" for a, b in zip(t, kw)) + "\n")
    monkeypatch.chdir(tmp_path)
    assert main(["cooling", str(series), "--plant", "theta", "--wet-bulb", "12"]) == 0
    cap = capsys.readouterr()
    assert (tmp_path / "out" / "cooling-theta-20231114.h5").is_file()
    assert "plant theta" in cap.out and "power scale factor 1" in cap.out and "2023-11-14 22:13" in cap.out
    assert "exceeds the plant's design heat" in cap.err


def test_serving_only_run_from_the_command_line(tmp_path, capsys):
    out = tmp_path / "s.h5"
    assert main(["run", "--requests", str(DATA / "azure_llm_mini.csv"), "--no-cooling", "--quiet",
                 "--out", str(out)]) == 0
    cfg = _config(out)
    assert cfg["trace"]["enabled"] is False and cfg["system"] == "frontier"
    assert cfg["serving"]["format"] == "azure_llm" and cfg["serving"]["deployment"].endswith("llama3-70b_h100_tp4x2.toml")
    with h5py.File(out) as f:
        assert "serving" in f


def test_validate_takes_the_request_csv_mapping(capsys):
    argv = ["validate", str(DATA / "requests_mini.csv"), "--format", "request_csv", "--map", "arrival=t_ms",
            "--map", "prompt=in", "--map", "output=out", "--map", "time_unit=ms"]
    assert main(argv) == 0
    assert "accepted 2" in capsys.readouterr().out
    assert main(["validate", str(DATA / "requests_mini.csv"), "--format", "request_csv", "--map", "arrival"]) == 2
    assert "--map 'arrival': expected KEY=COLUMN" in capsys.readouterr().err


def test_csv_formats_are_guessed_from_the_header(tmp_path):
    from dataloaders.registry import guess_format

    assert guess_format(DATA / "quirks_pods.csv") == "alibaba_pods"     # (the file starts with a UTF-8 BOM)
    assert guess_format(DATA / "azure_llm_mini.csv") == "azure_llm"
    adastra = tmp_path / "a.csv"
    adastra.write_text("job_id,submit_time,start_time,end_time,num_nodes_alloc,run_time\n")
    pm100 = tmp_path / "p.csv"
    pm100.write_text("job_id,submit_time,start_time,end_time,num_nodes_alloc,power\n")
    assert guess_format(adastra) == "adastra"   # the most specific column set wins
    assert guess_format(pm100) == "pm100"
    with pytest.raises(ValueError, match="cannot guess the CSV format.*--format"):
        guess_format(DATA / "requests_mini.csv")
