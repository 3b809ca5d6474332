"""Server fans of air-cooled GPU servers are IT power (The Green Grid): added to node DC power, reported apart."""

from pathlib import Path

import h5py
import pytest

from scheduler_sim.config import load_config
from scheduler_sim.runner import run_one

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
DEP = ROOT / "experiments" / "serving" / "llama3-70b_h100_tp4x2.toml"


def _run(tmp_path, cooling: str):
    dep = tmp_path / f"dep_{cooling}.toml"
    text = DEP.read_text().replace('cooling = "air"', f'cooling = "{cooling}"')
    dep.write_text(text)
    cfg = tmp_path / f"run_{cooling}.toml"
    cfg.write_text(f"""
name = "fans-{cooling}"
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
deployment = "{dep}"
trace = "{DATA / 'azure_llm_mini.csv'}"
first_node = 100
""")
    return run_one(load_config(cfg), tmp_path / f"{cooling}.h5")


def test_air_cooled_servers_add_fans_as_it_power(tmp_path):
    air, liq = _run(tmp_path, "air"), _run(tmp_path, "liquid")
    sa, sl = air.summary, liq.summary
    assert sa["serving_E_gpu_J"] == sl["serving_E_gpu_J"]          # the GPUs do the same work
    # fans draw 12 % of server power: node DC energy = rest / (1 - 0.12), fans = rest x 0.12 / 0.88
    assert sa["serving_E_partition_node_dc_J"] == pytest.approx(sl["serving_E_partition_node_dc_J"] / 0.88, rel=1e-9)
    assert sa["serving_E_server_fan_J"] == pytest.approx(sl["serving_E_partition_node_dc_J"] * 0.12 / 0.88, rel=1e-9)
    assert sl["serving_E_server_fan_J"] == 0.0
    # IT energy (rack input) grows with the fans: they are inside the IT equipment
    assert sa["serving_E_it_J"] > sl["serving_E_it_J"]
    with h5py.File(air.path) as f, h5py.File(liq.path) as g:
        pw = f["serving/power"]
        assert pw.attrs["server_cooling"] == "air" and "P_fan_W" in pw
        assert (pw["P_fan_W"][()] / pw["P_node_W"][()]) == pytest.approx(0.12, rel=1e-12)
        assert g["serving/power"].attrs["server_cooling"] == "liquid" and "P_fan_W" not in g["serving/power"]
