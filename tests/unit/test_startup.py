"""Start-up stays light (issue #16 item 6): what ``hpctwin --help`` and format guessing import.

Timing is measured in benchmarks/bench_startup.py, never here; these tests check the cause of slow start-up
instead: which modules a fresh interpreter has imported after the step in question.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from jobs.registry import Registry
from dataloaders import registry
from dataloaders.registry import BaseLoader, guess_format, register_loader

ROOT = Path(__file__).resolve().parents[2]
#: Modules that cost 50 ms - 1 s each to import; none is needed to print help or pick a loader.
HEAVY = ("numpy", "pandas", "h5py", "pyarrow", "fmpy", "matplotlib", "mpi4py", "scipy", "pydantic", "psychrolib")


def _modules_after(code: str) -> set[str]:
    """Top-level names of the modules imported by a fresh interpreter running ``code``."""
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys, json; print(json.dumps(sorted(sys.modules)))"],
                         cwd=ROOT, capture_output=True, text=True, check=True).stdout.splitlines()[-1]
    return set(json.loads(out))


def test_help_imports_nothing_heavy():
    """Building the parser and printing every sub-command's help imports none of HEAVY."""
    mods = _modules_after(
        "from scheduler_sim.app.cli import build_parser\n"
        "p = build_parser()\n"
        "p.format_help()\n"
        "for c in ('run', 'sweep', 'compare', 'report', 'list', 'validate', 'cooling'):\n"
        "    p._subparsers._group_actions[0].choices[c].format_help()\n")
    assert {m.split(".")[0] for m in mods} & set(HEAVY) == set()


@pytest.mark.parametrize(("name", "expected"), [("x.swf", "swf"), ("x.sacct.gz", "sacct"), ("x.psv", "sacct"),
                                                ("x.jsonl", "mooncake"), ("x.json", "batsim")])
def test_guess_format_imports_no_loader_module(name, expected):
    """Guessing a built-in format from its suffix imports no loader module (dataloaders.swf comes with the
    package's __init__)."""
    mods = _modules_after(f"from dataloaders.registry import guess_format\nprint(guess_format({name!r}))")
    loaders = {m for m in mods if m.startswith("dataloaders.")} - {"dataloaders.registry", "dataloaders.report",
                                                                   "dataloaders.swf", "dataloaders.cache",
                                                                   # the SWF loader's helpers (field tables)
                                                                   "dataloaders._common", "dataloaders.fields"}
    assert loaders == set()
    assert guess_format(name) == expected


def test_builtin_suffix_table_matches_the_classes():
    """The static table used for guessing equals every built-in loader class's own ``suffixes``."""
    assert set(registry._BUILTIN_SUFFIXES) == set(registry._BUILTIN)
    for name, target in registry._BUILTIN.items():
        cls = registry._resolve(name, target)
        assert tuple(cls.suffixes) == registry._BUILTIN_SUFFIXES[name], name


class _EarlySwf(BaseLoader):
    name = "aaa_swf"  # sorts before "swf"
    description = "test loader claiming .swf"
    suffixes = (".swf",)

    def load(self, path, **options):  # pragma: no cover - never loaded
        raise NotImplementedError


def test_fast_path_keeps_the_sorted_order_of_claims(monkeypatch):
    """A registered loader that sorts before a built-in and claims the same suffix still wins, as before."""
    monkeypatch.setattr(registry, "_RUNTIME", Registry("trace loader"))
    register_loader(_EarlySwf)
    assert guess_format("t.swf") == "aaa_swf"
    assert guess_format("t.sacct") == "sacct"
