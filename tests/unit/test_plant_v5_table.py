"""benchmarks/plant_v5_table.py: the wet-bulb bins of its COP row and the table it prints (no runs)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def _table():
    spec = importlib.util.spec_from_file_location("benchmarks_plant_v5_table", ROOT / "benchmarks" / "plant_v5_table.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def test_cop_bins_are_the_bins_of_the_cooling_page_with_open_ends():
    t = _table()
    # 9.99 C falls below the first edge, 10 C in the second bin, 24 C and above in the open last bin
    wb_K = 273.15 + np.array([-5.0, 9.99, 10.0, 17.0, 21.0, 23.0, 24.0, 30.0])
    assert t._bins(wb_K).tolist() == [0, 0, 1, 2, 3, 4, 5, 5]
    assert [t._bin_name(b) for b in range(6)] == ["< 10", "10-15", "15-20", "20-22", "22-24", ">= 24"]
    assert "| < 10 C | 10-15 C | 15-20 C | 20-22 C | 22-24 C | >= 24 C |" in (ROOT / "docs" / "cooling.md").read_text()


def test_table_has_the_five_columns_and_one_line_per_row():
    t = _table()
    lines = t.table([("what", "before", "now", "expected", "cmd a ; cmd b")])
    assert lines == ["| what | before (issue 22, plant v4) | now | physically expected | command |",
                     "|---|---|---|---|---|", "| what | before | now | expected | `cmd a ; cmd b` |"]
    assert len(t.ROWS) == 10  # the ten rows of the "Where it stands"
