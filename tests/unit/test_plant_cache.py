"""Per-plant figures cached with the FMU, keyed by the plant hash and verified by content (issue #16 item 3)."""

from __future__ import annotations

import json

import pytest

from cooling_fmu import plant as plant_mod
from cooling_fmu.params import load_plant_params
from cooling_fmu.plant import max_stable_step_s, plant_cache_path, plant_hash


@pytest.fixture(scope="module")
def theta():
    return load_plant_params("theta")


@pytest.fixture(scope="module")
def reference(theta):
    """The limit computed without any cache (the linearisation of cooling_fmu.plant)."""
    return max_stable_step_s(theta, use_cache=False)


def _no_compute(monkeypatch):
    def fail(params):
        raise AssertionError("the limit was recomputed although a valid cache entry exists")
    monkeypatch.setattr(plant_mod, "_compute_max_stable_step_s", fail)


def test_cached_value_is_the_computed_float_exactly(tmp_path, theta, reference, monkeypatch):
    """First call writes the entry; the second returns the same float (==, not approx) without recomputing."""
    assert max_stable_step_s(theta, tmp_path) == reference
    path = plant_cache_path(theta, tmp_path)
    doc = json.loads(path.read_text())
    assert doc["key"] == plant_hash(theta) and doc["payload"]["max_stable_step_s"] == reference
    _no_compute(monkeypatch)
    assert max_stable_step_s(theta, tmp_path) == reference


def test_altered_entry_is_recomputed(tmp_path, theta, reference):
    """An entry whose value was changed without its digest is not trusted: recomputed and rewritten."""
    max_stable_step_s(theta, tmp_path)
    path = plant_cache_path(theta, tmp_path)
    doc = json.loads(path.read_text())
    doc["payload"]["max_stable_step_s"] = 1e9
    path.write_text(json.dumps(doc))
    assert max_stable_step_s(theta, tmp_path) == reference
    assert json.loads(path.read_text())["payload"]["max_stable_step_s"] == reference
    path.write_text("{ truncated")
    assert max_stable_step_s(theta, tmp_path) == reference


def test_entry_of_another_plant_is_not_used(tmp_path, theta, reference):
    """A valid entry of another plant copied to this plant's name is refused (its key differs)."""
    other = theta.model_copy(update={"cdu": theta.cdu.model_copy(update={"m_water_sec_kg": 1.0})})
    assert plant_hash(other) != plant_hash(theta)
    limit_other = max_stable_step_s(other, tmp_path)
    assert limit_other < reference  # 1 kg of secondary water: a much faster loop, a shorter limit
    plant_cache_path(theta, tmp_path).write_bytes(plant_cache_path(other, tmp_path).read_bytes())
    assert max_stable_step_s(theta, tmp_path) == reference


def test_hash_covers_every_parameter_and_the_cdu_count(theta):
    """Changing one parameter, or the number of CDUs, gives another plant hash."""
    h = plant_hash(theta)
    assert plant_hash(theta.model_copy(update={"n_cdu": theta.n_cdu + 1})) != h
    assert plant_hash(theta.model_copy(update={"tower": theta.tower.model_copy(update={"fan_Ti_s": 301.0})})) != h
    assert plant_hash(load_plant_params("theta")) == h


def test_entry_writable_by_others_is_not_trusted(tmp_path, theta, reference):
    """A well-formed entry (right key, right digest) that others may write is not used: the FMU cache's trust
    rule (jobs.cachedirs). The planted value 1e9 s would otherwise allow any step."""
    max_stable_step_s(theta, tmp_path)
    path = plant_cache_path(theta, tmp_path)
    doc = json.loads(path.read_text())
    doc["payload"]["max_stable_step_s"] = 1e9
    doc["sha256"] = plant_mod._payload_digest(doc["payload"])
    path.write_text(json.dumps(doc))
    path.chmod(0o666)
    assert max_stable_step_s(theta, tmp_path) == reference
    path.chmod(0o600)
    path.write_text(json.dumps(doc))
    assert max_stable_step_s(theta, tmp_path) == 1e9  # the user's own private entry is trusted, as FMUs are


def test_write_entry_is_atomic_and_leaves_no_temporary(tmp_path, monkeypatch):
    """jobs.cachedirs.write_entry (the plant-figure and fast-plant-table caches): the entry holds exactly the bytes,
    0600; a failed rename keeps the old entry and leaves no temporary behind; a missing folder raises OSError."""
    import os
    import stat

    from jobs import cachedirs

    entry = tmp_path / "x.json"
    cachedirs.write_entry(entry, b"first")
    assert entry.read_bytes() == b"first" and stat.S_IMODE(entry.stat().st_mode) == 0o600

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cachedirs.os, "replace", broken_replace)
    with pytest.raises(OSError):
        cachedirs.write_entry(entry, b"second")
    monkeypatch.undo()
    assert entry.read_bytes() == b"first" and sorted(os.listdir(tmp_path)) == ["x.json"]
    with pytest.raises(OSError):
        cachedirs.write_entry(tmp_path / "missing" / "y.json", b"z")
