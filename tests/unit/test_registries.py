"""One registry type (issue #27 item 7): policies, trace loaders, plants and workload families register through
jobs.registry.Registry, and `hpctwin list` shows each of them."""

import pytest

from cooling_fmu.params import PLANTS_DIR, plant_registry
from dataloaders import registry as loader_registry
from jobs.families import FAMILIES, inference_family, training_family
from jobs.registry import Registry, UnknownNameError
from scheduler_sim.app.cli import main
from scheduler_sim.policies.registry import POLICIES


def test_registry_keeps_order_refuses_repeats_and_names_the_closest_on_a_miss():
    r = Registry("widget")
    assert r.register("Beta", 2, "second") == 2  # returns the object (decorator use)
    r.register("alpha", 1, "first")
    assert r.names() == ["beta", "alpha"] and r.catalogue() == [("beta", "second"), ("alpha", "first")]
    assert r["BETA"] == 2 and "Alpha" in r and "gamma" not in r and len(r) == 2
    with pytest.raises(ValueError, match="widget name 'beta' is already registered"):
        r.register("beta", 3, "again")
    r.register("beta", 3, "replaced", replace=True)
    assert r["beta"] == 3 and r.entry("beta").description == "replaced"
    with pytest.raises(UnknownNameError, match=r"unknown widget 'alpah' \(did you mean alpha\?\); known: beta, alpha"):
        r["alpah"]
    with pytest.raises(ValueError, match="non-empty name"):
        r.register("  ", 0, "")


def test_policies_loaders_plants_and_families_are_registries():
    assert isinstance(POLICIES, Registry) and POLICIES.names()[0] == "replay"
    assert isinstance(loader_registry._RUNTIME, Registry)
    plants = plant_registry()
    assert plants.names() == sorted(p.stem for p in PLANTS_DIR.glob("*.toml")) and "theta" in plants
    assert plants["theta"] == PLANTS_DIR / "theta.toml"
    assert plants.entry("theta").description.startswith("Theta-like liquid-cooled plant: 6 CDUs")
    assert FAMILIES.names() == ["training", "inference", "mixed", "extreme"]
    assert FAMILIES["training"] is training_family and FAMILIES["inference"] is inference_family


def test_hpctwin_list_shows_the_workload_families_and_the_plants(capsys):
    assert main(["list", "families"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [ln.split()[0] for ln in lines] == ["training", "inference", "mixed", "extreme"]
    assert "pre-training" in lines[0]
    assert main(["list", "plants"]) == 0
    out = capsys.readouterr().out
    assert "theta        Theta-like liquid-cooled plant" in out
