"""The variable map is parsed once per process and re-read when its file changes (issue #26 item 4)."""

from __future__ import annotations

import os

import pytest

from cooling_fmu import adapter
from cooling_fmu.adapter import MAPS_DIR, load_variable_map


def test_the_shipped_map_is_parsed_once_for_repeated_scenarios(monkeypatch):
    calls = []
    real = adapter.yaml.safe_load
    monkeypatch.setattr(adapter.yaml, "safe_load", lambda text: calls.append(len(text)) or real(text))
    adapter._MAP_MEMO.clear()
    first = load_variable_map(6)
    again = load_variable_map(6)
    assert again is first and len(calls) == 1  # parsed once
    per_cdu = sum(e.name.endswith("[6]") for e in first.inputs)  # inputs given per CDU (the CDU heat at least)
    assert per_cdu >= 1
    other = load_variable_map(3)  # another CDU count: parsed for it (3 entries of each per-CDU input, not 6)
    assert len(calls) == 2 and len(first.inputs) - len(other.inputs) == 3 * per_cdu


def test_a_changed_map_file_is_parsed_again_and_a_bad_one_is_never_kept(tmp_path):
    p = tmp_path / "map.yaml"
    text = (MAPS_DIR / "hpctwin_plant.yaml").read_text(encoding="utf-8")
    p.write_text(text, encoding="utf-8")
    a = load_variable_map(2, p)
    p.write_text(text + "\n# a comment\n", encoding="utf-8")
    os.utime(p, ns=(1, 1))  # a different modification time and size
    b = load_variable_map(2, p)
    assert b is not a and b == a  # parsed again, same content
    p.write_text("inputs: [", encoding="utf-8")
    for _ in range(2):  # refused each time: an error is not memoised
        with pytest.raises(ValueError, match="not valid YAML"):
            load_variable_map(2, p)
