"""Loader registry: built-ins, entry-point plugins, run-time registration, format guessing."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest

from jobs.registry import Registry
from dataloaders import registry
from dataloaders.registry import (
    BaseLoader,
    available_loaders,
    get_loader,
    guess_format,
    load_trace,
    register_loader,
)
from dataloaders.report import LoadReport, LoadResult
from dataloaders.swf import SWFLoader
from jobs.table import empty_job_table

DATA = Path(__file__).parents[1] / "data"


class _DummyLoader(BaseLoader):
    name = "dummy"
    description = "Test loader that returns an empty table"
    suffixes = (".dummy",)

    def load(self, path, **options):
        return LoadResult(empty_job_table(), LoadReport(source=str(path), loader=self.name))


@pytest.fixture
def clean_runtime(monkeypatch):
    monkeypatch.setattr(registry, "_RUNTIME", Registry("trace loader"))


def test_builtin_swf():
    assert "swf" in available_loaders()
    assert available_loaders()["swf"].startswith("Standard Workload Format")
    assert isinstance(get_loader("swf"), SWFLoader)
    assert isinstance(get_loader("SWF"), SWFLoader)


def test_unknown_name_lists_known():
    with pytest.raises(ValueError, match=r"unknown trace format 'nope'; known loaders: .*swf"):
        get_loader("nope")


def test_guess_format():
    assert guess_format("a/b/theta.swf") == "swf"
    assert guess_format("x.SWF.gz") == "swf"
    with pytest.raises(ValueError, match=r"cannot guess.*'\.xyz'.*swf \['\.swf'\]"):
        guess_format("trace.xyz")
    with pytest.raises(ValueError, match=r"trace\.csv: cannot read the header line"):  # .csv: read from the header
        guess_format("trace.csv")


def test_load_trace_guesses_and_passes_options():
    df, rep = load_trace(DATA / "quirks.swf", cores_per_node=4, max_nodes=8)
    assert rep.loader == "swf" and rep.accepted == 6
    df2, _ = load_trace(DATA / "quirks.swf", format="swf", cores_per_node=4, max_nodes=8)
    assert df.equals(df2)


def test_register_runtime(clean_runtime):
    register_loader(_DummyLoader)
    assert available_loaders()["dummy"] == "Test loader that returns an empty table"
    assert guess_format("x.dummy") == "dummy"
    with pytest.raises(ValueError, match="already registered"):
        register_loader(_DummyLoader)
    with pytest.raises(TypeError):
        register_loader(int)  # type: ignore[arg-type]


def test_entry_point_plugin(monkeypatch, clean_runtime):
    ep = importlib.metadata.EntryPoint(
        name="dummy_ep", value=f"{__name__}:_DummyLoader", group=registry.ENTRY_POINT_GROUP
    )
    broken = importlib.metadata.EntryPoint(
        name="broken", value="no_such_module_xyz:Loader", group=registry.ENTRY_POINT_GROUP
    )

    def fake_entry_points(group=None):
        assert group == registry.ENTRY_POINT_GROUP
        return importlib.metadata.EntryPoints([ep, broken])

    monkeypatch.setattr(importlib.metadata, "entry_points", fake_entry_points)
    loaders = available_loaders()
    assert loaders["dummy_ep"] == "Test loader that returns an empty table"
    assert loaders["broken"].startswith("(cannot be loaded: ModuleNotFoundError")
    assert "swf" in loaders
    assert isinstance(get_loader("dummy_ep"), _DummyLoader)


def test_entry_point_cannot_shadow_builtin(monkeypatch, clean_runtime):
    ep = importlib.metadata.EntryPoint(name="swf", value=f"{__name__}:_DummyLoader", group=registry.ENTRY_POINT_GROUP)
    monkeypatch.setattr(importlib.metadata, "entry_points",
                        lambda group=None: importlib.metadata.EntryPoints([ep]))
    with pytest.warns(RuntimeWarning, match="shadows a built-in"):
        loader = get_loader("swf")
    assert isinstance(loader, SWFLoader)
