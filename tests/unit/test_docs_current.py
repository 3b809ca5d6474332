"""Generated documentation matches the code it documents."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_configuration_reference_is_current():
    r = subprocess.run([sys.executable, str(ROOT / "docs" / "make_configuration_md.py"), "--check"], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, "docs/configuration.md is out of date: run python docs/make_configuration_md.py"


def test_configuration_tables_keep_four_cells_and_list_allowed_values():
    text = (ROOT / "docs" / "configuration.md").read_text()
    rows = [ln for ln in text.splitlines() if ln.startswith("| `")]
    assert len(rows) > 50
    bad = [ln for ln in rows if ln.count("|") != 5]  # a bare "|" inside a type or description splits a cell
    assert not bad, bad[:3]
    assert not any("Literal" in ln or "typing." in ln for ln in rows)
    policy = next(ln for ln in rows if ln.startswith("| `scheduler.policy`"))
    assert "`twin`" in policy and "`conservative`" in policy
    assert "one of `lowest`, `spread`, `pack`" in next(ln for ln in rows if ln.startswith("| `scheduler.placement`"))


def test_commands_in_docs_and_studies_use_the_venv():
    import re

    files = [*ROOT.glob("docs/*.md"), *ROOT.glob("experiments/*.toml"), *ROOT.glob("experiments/*.py")]
    bare = re.compile(r"(?m)^(?:#\s*)?\s*(?:hpctwin (?:run|sweep|report|compare|cooling|validate)(?!:)|python |mpirun )")
    # (an output line such as "hpctwin run: error: ..." is the program speaking, not a command to type)
    offenders = [f"{p.name}: {m.group(0).strip()}" for p in files for m in bare.finditer(p.read_text())]
    assert not offenders, offenders[:5]
