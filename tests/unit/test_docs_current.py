"""Generated documentation matches the code it documents."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_configuration_reference_is_current():
    r = subprocess.run([sys.executable, str(ROOT / "docs" / "make_configuration_md.py"), "--check"], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, "docs/configuration.md is out of date: run python docs/make_configuration_md.py"
