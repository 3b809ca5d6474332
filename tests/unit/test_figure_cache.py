"""The plant figure cache (cooling_fmu.figure_cache): the headroom's capacity, N+1 and cells-needed answers read
back exactly (==, to the bit) from a content-verified entry, never from an altered or foreign one."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cooling_fmu import figure_cache as fc
from cooling_fmu import redundancy, sizing
from cooling_fmu.params import load_plant_params


@pytest.fixture(scope="module")
def theta():
    return load_plant_params("theta")


def _shape(p):
    return np.linspace(0.8, 1.2, p.n_cdu) * p.cdu.Q_flow_nominal_W


def _forbid(monkeypatch):
    def fail(*a, **k):
        raise AssertionError("recomputed although a valid cache entry exists")
    monkeypatch.setattr(sizing, "plant_capacity", fail)
    monkeypatch.setattr(sizing, "tower_cells_needed", fail)
    monkeypatch.setattr(redundancy, "n_plus_one", fail)


def test_cached_figures_equal_the_computed_ones_bit_for_bit(tmp_path, theta, monkeypatch):
    """Capacity, N+1 cases and cells needed: the first call computes and writes, the second reads the same values
    (dataclass ==, floats compared exactly) without computing."""
    shape, T = _shape(theta), 299.15
    cap0 = sizing.plant_capacity(theta, shape, T, n_grid=60)
    n10 = redundancy.n_plus_one(theta, T, shape)
    k0 = sizing.tower_cells_needed(theta, shape, T, 1.5 * cap0.heat_W, max_extra=4, n_grid=60)
    assert fc.cached_capacity(theta, shape, T, n_grid=60, cache_dir=tmp_path) == cap0
    assert fc.cached_n_plus_one(theta, T, shape, cache_dir=tmp_path) == n10
    assert fc.cached_cells_needed(theta, shape, T, 1.5 * cap0.heat_W, max_extra=4, n_grid=60,
                                  cache_dir=tmp_path) == k0
    assert len(list(tmp_path.glob("*.json"))) == 3
    _forbid(monkeypatch)
    cap1 = fc.cached_capacity(theta, shape, T, n_grid=60, cache_dir=tmp_path)
    assert cap1 == cap0 and cap1.heat_W.hex() == cap0.heat_W.hex()
    n11 = fc.cached_n_plus_one(theta, T, shape, cache_dir=tmp_path)
    assert n11 == n10 and [c.T_fac_sup_K.hex() for c in n11] == [c.T_fac_sup_K.hex() for c in n10]
    assert fc.cached_cells_needed(theta, shape, T, 1.5 * cap0.heat_W, max_extra=4, n_grid=60,
                                  cache_dir=tmp_path) == k0


def test_altered_or_other_question_entries_are_recomputed(tmp_path, theta, monkeypatch):
    """An entry whose value was edited (digest no longer verifies) is not used; another wet-bulb, heat shape or
    plant is another key (its own entry)."""
    shape, T = _shape(theta), 297.15
    cap0 = fc.cached_capacity(theta, shape, T, n_grid=40, cache_dir=tmp_path)
    (entry,) = tmp_path.glob("*.capacity.json")
    doc = json.loads(entry.read_text())
    doc["value"]["heat_W"] = 1.0  # a forged capacity, digest left as it was
    entry.write_text(json.dumps(doc))
    entry.chmod(0o600)
    assert fc.cached_capacity(theta, shape, T, n_grid=40, cache_dir=tmp_path) == cap0
    keys = {fc.figure_key(theta, "capacity", shape, T, 1.0, 40),
            fc.figure_key(theta, "capacity", shape, T + 1e-9, 1.0, 40),
            fc.figure_key(theta, "capacity", shape * (1 + 1e-15), T, 1.0, 40),
            fc.figure_key(sizing.with_tower_cells(theta, 1), "capacity", shape, T, 1.0, 40)}
    assert len(keys) == 4


def test_headroom_uses_the_cache(tmp_path, theta, monkeypatch):
    """run_headroom's design-day figures come back from the cache on a second call (no steady state solved)."""
    from power.system import load_system
    from scheduler_sim.analysis import headroom
    import types

    monkeypatch.setenv("HPCTWIN_CACHE_DIR", str(tmp_path / "c"))
    system = load_system("theta")
    design = types.SimpleNamespace(wet_bulb_K=298.15, source="test")
    t = np.arange(4) * 60.0
    fac = {"P_facility_W": np.full(4, 2e6), "T_wb_K": np.full(4, 296.0)}
    cdu = {"Q_flow_W": np.tile(_shape(theta), (4, 1)) * 0.5, "T_sec_sup": np.full((4, theta.n_cdu), 300.0)}
    h0 = headroom.run_headroom(system, fac, cdu, t, theta, design)
    _forbid(monkeypatch)
    h1 = headroom.run_headroom(system, fac, cdu, t, theta, design)
    assert h1.capacity_design_W == h0.capacity_design_W and h1.n_plus_one == h0.n_plus_one
    assert h1.capacity_worst_hour_W == h0.capacity_worst_hour_W and h1.advice == h0.advice
