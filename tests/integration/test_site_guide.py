"""docs/site_guide.md: run its commands in order in a fresh folder, as a new user would, and check what it claims.

Every line of a ```bash block that starts with ``.venv/bin/hpctwin`` is run through the CLI (``scheduler_sim.app.cli.main``)
in a temporary working directory; the install line is skipped (the suite already runs installed). Section 5's
``--set partition.gpu.nodes=+20%`` what-if is run as well.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import h5py
import pytest

from scheduler_sim.app.cli import main

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "site_guide.md"


def guide_commands() -> list[list[str]]:
    """The ``hpctwin`` command lines of the guide's bash blocks, in order."""
    text = GUIDE.read_text()
    out = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for line in block.splitlines():
            if line.startswith(".venv/bin/hpctwin "):
                out.append(shlex.split(line)[1:])
    return out


def test_guide_lists_the_steps():
    cmds = [c[:2] for c in guide_commands()]
    assert cmds == [["list", "node-types"], ["site", "new"], ["site", "check"], ["run", "--system"],
                    ["run", "--system"], ["site", "new"], ["site", "check"], ["run", "--system"],
                    ["site", "new"], ["site", "check"]]  # section 6: the dry-cooler site
    assert "--set partition.gpu.nodes=+20%" in GUIDE.read_text()


@pytest.mark.fmu
def test_follow_the_guide(tmp_path, capsys):
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        for cmd in guide_commands():
            assert main(cmd) == 0, cmd
        out = capsys.readouterr().out
    finally:
        os.chdir(cwd)
    # what the guide says it shows
    assert "note: the full load exceeds the firm feed by 208 kW (N+1 not held)" in out
    assert "note: the full load exceeds the firm feed by 490 kW (N+1 not held)" in out
    assert out.count("headroom:") == 3 and "partition cpu: 145 job(s) by default" in out
    # the first run (towers sized for all the heat they reject, the air side counted): every N+1 row holds (the
    # template's standby pumps cover a pump out)
    assert "full-load heat 1.958 MW vs capacity 2.378 MW (+17.7 %)" in out
    assert "one tower cell out holds, one facility pump out holds, one tower pump out holds" in out
    # the --set what-if on the plant as built (5 cells, a third CDU): capacity +5.6 % on the CDU supplies, but the
    # facility supply misses its set point even with all units
    assert "full-load heat 2.210 MW vs capacity 2.326 MW (+5.0 %)" in out
    # section 6: the dry site, its set point raised until the bank holds at the design dry-bulb, N+1 with a spare
    assert "facility set point 31 -> 38 C so the dry coolers hold at the design dry-bulb 32.2 C" in out
    assert "plant capacity at the design dry-bulb: 2.733 MW vs full-load heat 1.958 MW (+28.3 % of capacity left)" in out
    assert "N+1 (one dry-cooler unit out) at the design dry-bulb, full-load heat: holds (facility supply 38.00 C" in out
    assert "all units FAILS (facility supply 32.4 C" in out
    assert "one tower cell out FAILS (facility supply 34.1 C" in out
    # the re-sized site: holds with all units (only the what-if says "all units FAILS"), not with one cell out
    assert out.count("all units FAILS") == 1
    assert "full-load heat 2.210 MW vs capacity 2.770 MW (+20.2 %)" in out
    assert "one tower cell out FAILS (facility supply 32.7 C" in out
    assert "chiller-free" in out and "N+1, design day" in out
    with h5py.File(tmp_path / "out" / "mysite-set.h5") as f:
        assert int(f["/partitions/n_nodes"][1]) == 154 and f["/timeseries/cdu/Q_flow_W"].shape[1] == 3
        assert [x.decode() for x in f["/headroom/n_plus_one_case"][:]][1] == "one tower cell out"
    with h5py.File(tmp_path / "out" / "mysite-gpu20.h5") as f:
        assert [x.decode() for x in f["/partitions/name"][:]] == ["cpu", "gpu"]
        assert int(f["/partitions/n_nodes"][1]) == 154
