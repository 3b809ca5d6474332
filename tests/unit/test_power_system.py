"""Unit tests for power.system: loading, topology index arrays, error messages."""

from pathlib import Path

import numpy as np
import pytest

from power import System, SystemFileError, available_systems, load_system
from power.system import SYSTEMS_DIR


def test_bundled_systems():
    assert {"theta", "frontier"} <= set(available_systems())


def test_frontier_topology_counts():
    s = load_system("frontier")
    # 25 CDUs x 3 positions = 75 positions, one empty -> 74 racks x 128 = 9,472 nodes
    assert (s.n_cdus, s.n_racks, s.n_nodes) == (25, 74, 9472)
    assert s.node_rack.shape == s.node_cdu.shape == s.node_rectifier.shape == (9472,)
    assert s.rack_cdu.shape == (74,)
    assert np.all(np.bincount(s.node_rack) == 128)
    racks_per_cdu = np.bincount(s.rack_cdu, minlength=25)
    # 24 CDUs with 3 racks + 1 CDU with 2 racks = 74
    assert sorted(racks_per_cdu.tolist()) == [2] + [3] * 24
    assert np.bincount(s.node_cdu, minlength=25).sum() == 9472
    assert set(np.bincount(s.node_cdu, minlength=25).tolist()) == {256, 384}  # 2 x 128, 3 x 128
    # 128 / 4 = 32 rectifiers per rack -> 74 x 32 = 2,368, each feeding 4 nodes of one rack
    assert s.n_rectifiers == 2368
    assert np.all(np.bincount(s.node_rectifier) == 4)
    assert np.array_equal(s.rectifier_rack[s.node_rectifier], s.node_rack)
    assert 41 not in s.rack_position.tolist() and s.rack_position.size == 74
    assert np.array_equal(s.node_cdu, s.rack_cdu[s.node_rack])


def test_frontier_plant_figures_not_it():
    s = load_system("frontier")
    assert s.cdu_own_power_W == 8473.47
    assert s.cooling_plant == "frontier" and s.liquid_fraction == 0.945  # ~5.5 % to air (ExaDigiT/RAPS)
    # 8 chassis x 4 switches x 250 W = 8000 W per rack, fed by rectifiers
    assert (s.rack_overhead_W, s.rack_overhead_side) == (8000.0, "dc")


def test_theta_topology_counts():
    s = load_system("theta")
    # 6 CDUs x 4 cabinets = 24 racks x 183 nodes = 4,392 nodes
    assert (s.n_cdus, s.n_racks, s.n_nodes) == (6, 24, 4392)
    assert np.all(np.bincount(s.node_rack) == 183)
    assert np.all(np.bincount(s.rack_cdu) == 4)
    assert np.all(np.bincount(s.node_cdu) == 4 * 183)  # 732 nodes per XDP
    # 183 = 15 x 12 + 3 -> 16 rectifiers per rack, 24 x 16 = 384; sizes 15 x [12] + [3] per rack
    assert s.n_rectifiers == 384
    sizes = np.bincount(s.node_rectifier).reshape(24, 16)
    assert np.all(sizes[:, :15] == 12) and np.all(sizes[:, 15] == 3)
    # rectifier groups never straddle racks: node 182 is the last of rack 0 (rectifier 15), node 183 opens rack 1
    assert (s.node_rectifier[182], s.node_rectifier[183]) == (15, 16)
    assert s.cores_per_node == 64 and s.cooling_plant == "theta"


def test_index_arrays_read_only():
    s = load_system("theta")
    with pytest.raises(ValueError):
        s.node_rack[0] = 3


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "bad.toml"
    p.write_text(text)
    return p


def test_error_names_file_and_field(tmp_path):
    text = (SYSTEMS_DIR / "frontier.toml").read_text().replace("eta = 0.98", "eta = 1.98")
    p = _write(tmp_path, text)
    with pytest.raises(SystemFileError) as ei:
        load_system(p)
    assert "bad.toml" in str(ei.value) and "sivoc.eta" in str(ei.value)


def test_error_on_inconsistent_node_count(tmp_path):
    text = (SYSTEMS_DIR / "frontier.toml").read_text().replace("n_nodes = 9472", "n_nodes = 9600")
    with pytest.raises(SystemFileError, match=r"topology.*implies 9472"):
        load_system(_write(tmp_path, text))


def test_error_on_unknown_field_and_bad_toml(tmp_path):
    text = (SYSTEMS_DIR / "theta.toml").read_text().replace("[cdu]", "[cdu]\nP_pump_kW = 3")
    with pytest.raises(SystemFileError, match=r"cdu\.P_pump_kW"):
        load_system(_write(tmp_path, text))
    with pytest.raises(SystemFileError, match="not valid TOML"):
        load_system(_write(tmp_path, "name = "))


def test_unknown_name():
    with pytest.raises(FileNotFoundError, match="bundled systems"):
        load_system("no_such_machine")


def test_from_spec_roundtrip():
    import tomllib

    spec = tomllib.loads((SYSTEMS_DIR / "theta.toml").read_text())
    s = System.from_spec(spec, source="inline")
    assert s.n_nodes == 4392 and s.source == "inline"
