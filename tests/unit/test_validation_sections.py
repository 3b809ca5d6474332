"""benchmarks/validation.py --section: one part of docs/validation.md is rewritten, every other byte stays."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _validation():
    spec = importlib.util.spec_from_file_location("benchmarks_validation", ROOT / "benchmarks" / "validation.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


V = _validation()

FR = "| Frontier-like run: facility PUE | 1.0563 | 1.03-1.06 (src) | 1.011 | inside | `.venv/bin/hpctwin run --system frontier --out out/validation/frontier.h5 --quiet` |"  # noqa: E501
SW = "| Frontier-like at 8 MW IT: facility PUE | 1.0617 | 1.0300-1.0600 (src) | 1.016 | above | `.venv/bin/hpctwin cooling out/validation/const_8MW.csv --plant frontier --system frontier --days 364 --step 60 --out out/validation/frontier_8MW.h5` |"  # noqa: E501
TH = "| Theta-like main job: liquid plant / IT | 0.0285 | 0.0100-0.0250 (src) | 1.631 | above | `.venv/bin/hpctwin run --out out/validation/main.h5 --quiet` |"  # noqa: E501
PAGE = "\n".join([
    "# Validation against published facility figures", "", "Intro line.", "", V.TABLE_HEAD, "|---|---|---|---|---|---|",
    FR, SW, TH, "", V.OUTSIDE_HEAD, "",
    "- Frontier-like at 8 MW IT: facility PUE: 1.0617, above 1.0300-1.0600. Old cause of the sweep row.",
    "- Theta-like main job: liquid plant / IT: 0.0285, above 0.0100-0.0250. Old cause of the Theta row.", "",
    "## Plant v5 targets", "", "| target |", "|---|", "| kept |", "",
    "## Frontier-like load sweep", "", "old sweep prose  (two spaces, kept bytes)", "",
    "## Training jobs (issue #24)", "", "old training text", ""])


def test_splice_sections_replaces_one_section_and_keeps_every_other_byte():
    chunks = V.split_sections(PAGE)
    assert "".join(chunks) == PAGE and [c.split("\n", 1)[0] for c in chunks[1:]] == [
        "## Plant v5 targets", "## Frontier-like load sweep", "## Training jobs (issue #24)"]
    new = V.splice_sections(PAGE, {"## Frontier-like load sweep": "## Frontier-like load sweep\n\nnew sweep text\n"})
    got = V.split_sections(new)
    assert got[0] == chunks[0] and got[1] == chunks[1] and got[3] == chunks[3]  # byte-identical
    assert got[2] == "## Frontier-like load sweep\n\nnew sweep text\n\n"
    # a heading the page lacks is appended at the end; the rest stays
    more = V.splice_sections(PAGE, {"## RL post-training": "## RL post-training\n\nrl\n"})
    assert more.startswith(PAGE.rstrip("\n")) and more.endswith("\n\n## RL post-training\n\nrl\n")


def test_row_group_reads_the_command_cell():
    assert [V.row_group(x) for x in (FR, SW, TH, V.TABLE_HEAD, "|---|---|", "plain text")] == [
        "frontier", "sweep", "theta", None, None, None]


def test_splice_rows_replaces_one_group_keeps_the_other_rows_and_their_causes():
    th = "| Theta-like main job: liquid plant / IT | 0.0190 | 0.0100-0.0250 (src) | 1.086 | inside | `.venv/bin/hpctwin run --out out/validation/main.h5 --quiet` |"  # noqa: E501
    new = V.splice_rows(PAGE, {"theta": [th]}, {})
    lines, old = new.split("\n"), PAGE.split("\n")
    assert lines[:8] == old[:8] and lines[8] == th  # the Frontier rows byte-identical, the Theta row replaced
    # the Theta row is now inside: its bullet is gone, the sweep row's bullet (and cause) kept as it was
    assert lines[9:13] == ["", V.OUTSIDE_HEAD, "", old[12]]
    assert new[new.index("## Plant v5 targets"):] == PAGE[PAGE.index("## Plant v5 targets"):]
    # a regenerated row outside its range gets the new cause
    th2 = th.replace("| 0.0190 |", "| 0.0300 |").replace("| inside |", "| above |")
    new2 = V.splice_rows(PAGE, {"theta": [th2]}, {"Theta-like main job: liquid plant / IT": "New cause."})
    assert "- Theta-like main job: liquid plant / IT: 0.0300, above 0.0100-0.0250. New cause." in new2.split("\n")
    assert "Old cause of the Theta row" not in new2 and "Old cause of the sweep row" in new2


def test_stamp_records_the_commit_of_each_part_and_keeps_the_others():
    once = V.stamp(PAGE, ["theta"], "abc1234")
    assert f"{V.STAMP_HEAD} `theta` abc1234" in once.split("\n")
    twice = V.stamp(once, ["sweep", "rl"], "def5678")
    line = next(x for x in twice.split("\n") if x.startswith(V.STAMP_HEAD))
    assert line == f"{V.STAMP_HEAD} `sweep` def5678; `theta` abc1234; `rl` def5678"  # SECTION_NAMES order


def test_section_training_rewrites_only_its_section(tmp_path):
    doc = tmp_path / "v.md"
    doc.write_text(PAGE)
    assert V.main(["--section", "training", "--out-doc", str(doc)]) == 0
    got, old = V.split_sections(doc.read_text()), V.split_sections(PAGE)
    assert got[1:3] == old[1:3]  # kept sections and the sweep section: byte-identical
    assert got[0] == V.stamp(old[0], ["training"], V._commit())  # the preamble: only its stamp line added
    assert got[3].startswith("## Training jobs (issue #24)\n") and "old training text" not in got[3]
    assert "test_bubble_fraction_equals_the_formula" in got[3] and "Training iteration power" in got[3]
