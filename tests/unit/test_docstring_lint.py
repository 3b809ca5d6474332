"""pydoclint runs with no baseline (issue #27 item 8): any docstring finding in a product package fails it.

The baseline file that listed the findings predating the check (issue #14) is emptied and deleted; these tests keep
it that way: the configuration names no baseline, the project's configuration fails on a new finding (exit 1, the
finding named) and passes its corrected form, and the six product packages have no finding today (the command
``.ci/run`` runs).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("scheduler_sim", "power", "cooling_fmu", "jobs", "dataloaders", "experiments")
PYDOCLINT = Path(sys.executable).parent / "pydoclint"

needs_pydoclint = pytest.mark.skipif(not PYDOCLINT.exists(), reason="pydoclint not installed (dev extra)")

#: A function whose docstring gives ``x`` another type than its signature (DOC105) and omits the ValueError its
#: body raises (DOC501, DOC503).
BAD = '''
def half(x: float) -> float:
    """Half of ``x``.

    Parameters
    ----------
    x : int
        A number.

    Returns
    -------
    float
        ``x / 2``.
    """
    if x != x:
        raise ValueError("x is NaN")
    return x / 2
'''

GOOD = '''
def half(x: float) -> float:
    """Half of ``x``.

    Parameters
    ----------
    x : float
        A number.

    Returns
    -------
    float
        ``x / 2``.

    Raises
    ------
    ValueError
        If ``x`` is NaN.
    """
    if x != x:
        raise ValueError("x is NaN")
    return x / 2
'''


def _pydoclint(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(PYDOCLINT), f"--config={ROOT / 'pyproject.toml'}", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=600)


def test_configuration_names_no_baseline_and_the_file_is_gone():
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pydoclint"]
    assert "baseline" not in cfg
    assert not (ROOT / "pydoclint-baseline.txt").exists()
    assert "--baseline" not in (ROOT / ".ci" / "run").read_text()


@needs_pydoclint
def test_project_configuration_fails_on_a_new_finding_and_passes_its_fix(tmp_path):
    (tmp_path / "probe.py").write_text(textwrap.dedent(BAD))
    bad = _pydoclint("probe.py", cwd=tmp_path)
    out = bad.stdout + bad.stderr
    assert bad.returncode == 1, out
    assert "DOC105" in out and "DOC501" in out, out
    (tmp_path / "probe.py").write_text(textwrap.dedent(GOOD))
    good = _pydoclint("probe.py", cwd=tmp_path)
    assert good.returncode == 0, good.stdout + good.stderr


@needs_pydoclint
def test_product_packages_have_no_pydoclint_finding():
    r = _pydoclint(*PACKAGES, cwd=ROOT)
    findings = [line.strip() for line in (r.stdout + r.stderr).splitlines() if ": DOC" in line]
    assert r.returncode == 0 and not findings, "\n".join(findings[:40])
