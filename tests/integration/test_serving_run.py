"""A [serving] partition through the run configuration: serving-only and co-located with a batch trace."""

from pathlib import Path

import h5py
import numpy as np
import pytest

from scheduler_sim.app.config import ConfigError, load_config
from scheduler_sim.app.runner import run_one

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"


def _config(tmp_path, batch: bool) -> Path:
    trace = f'path = "{DATA / "with_header.swf"}"\nwindow_start_days = 0.0\nwindow_days = 1.0' if batch else \
        "enabled = false\nwindow_start_days = 0.0"
    p = tmp_path / "run.toml"
    p.write_text(f"""
name = "serving-test"
system = "frontier"
[trace]
{trace}
[cooling]
enabled = false
[output]
interval_s = 60.0
progress = false
[serving]
deployment = "{ROOT / 'experiments' / 'serving' / 'llama3-70b_h100_tp4x2.toml'}"
trace = "{DATA / 'azure_llm_mini.csv'}"
first_node = 100
""")
    return p


def test_serving_only_run_writes_serving_group(tmp_path):
    cfg = load_config(_config(tmp_path, batch=False))
    out = run_one(cfg, tmp_path / "s.h5")
    s = out.summary
    assert s["jobs_simulated"] == 0 and s["serving_completed"] == 3
    # 8 GPUs / 4 per Frontier node = 2 partition nodes; IT energy of the partition > its node DC > its GPUs
    assert s["serving_E_it_J"] > s["serving_E_partition_node_dc_J"] > s["serving_E_gpu_J"] > 0
    assert np.isnan(s["serving_E_facility_J"])  # no cooling plant -> no facility scope
    assert s["serving_J_per_token_gpu"] == pytest.approx(s["serving_E_gpu_J"] / (44 + 2 + 1))
    with h5py.File(out.path) as f:
        g = f["serving"]
        assert g["requests/ttft_s"].shape == (3,) and g["requests/ttft_s"].attrs["units"] == "s"
        assert g["power/P_node_W"].shape[1] == 2
        assert g["power/nodes"][()].tolist() == [100, 101]
        assert g["summary"].attrs["completed"] == 3
        # the partition's node DC energy in the facility run equals the profile's energy (exact step integration)
        t = g["power/time_s"][()]
        P = g["power/P_node_W"][()].sum(axis=1)
        t_end = f["totals"].attrs["duration_s"]
        E = float(np.dot(np.diff(np.append(t, t_end)), P))
        assert f["totals"].attrs["E_partition_node_dc_J"] == pytest.approx(E, rel=1e-9)


def test_colocated_with_batch_trace(tmp_path):
    cfg = load_config(_config(tmp_path, batch=True))
    out = run_one(cfg, None)
    assert out.summary["jobs_simulated"] >= 1 and out.summary["serving_completed"] == 3


def test_disabled_trace_needs_serving(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text("[trace]\nenabled = false\n")
    with pytest.raises(ConfigError, match="serving"):
        load_config(p)


def test_disaggregated_prefix_cached_run_and_cli_header(tmp_path, capsys):
    from scheduler_sim.app.cli import main

    p = tmp_path / "disagg.toml"
    p.write_text(f"""
name = "serving-disagg"
system = "frontier"
[trace]
enabled = false
window_start_days = 0.0
[cooling]
enabled = false
[output]
interval_s = 60.0
progress = false
[serving]
deployment = "{ROOT / 'experiments' / 'serving' / 'llama3-70b_h100_tp4_p1d1.toml'}"
trace = "{DATA / 'mooncake_mini.jsonl'}"
format = "mooncake"
router = "prefix_affinity"
prefix_caching = true
""")
    assert main(["run", str(p), "--out", str(tmp_path / "d.h5"), "--quiet"]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert "serving only: deployment" in head and "mooncake_mini.jsonl" in head and "window day" not in head
    with h5py.File(tmp_path / "d.h5") as f:
        g = f["serving"]
        done = g["requests/status"][()] == 1
        assert done.all()
        # prefilled on replica 0, decoded on replica 1 (one-token outputs finish at the prefill)
        assert set(g["requests/replica"][()].tolist()) == {0}
        multi = g["requests/output_tokens"][()] > 1
        assert (g["requests/decode_replica"][()][multi] == 1).all()
        assert np.isfinite(g["requests/kv_transfer_s"][()][multi]).all()
        s = g["summary"].attrs
        assert s["kv_transfers"] == multi.sum() and s["E_kv_transfer_J"] > 0
        assert g["power/P_link_W"].shape[1] == 2
