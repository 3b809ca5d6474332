"""With the cooling plant off, the facility is not modelled: PUE is n/a everywhere (issue #13, item 4).

Before: the summary printed "facility energy" (= IT energy), /timeseries PUE was 1.0, every job's PUE_effective
was 1.0, `compare` showed PUE 1.00000 and the report plotted "PUE nan" on a 1e-5 axis; a partition
pseudo-consumer with PUE_effective 0 appeared in runs without a partition.
"""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from scheduler_sim.cli import main


@pytest.fixture(scope="module")
def nocool(tmp_path_factory):
    out = tmp_path_factory.mktemp("nc") / "nc.h5"
    assert main(["run", "--no-cooling", "--days", "0.5", "--quiet", "--out", str(out)]) == 0
    return out


def test_summary_does_not_print_facility_figures(tmp_path, capsys):
    assert main(["run", "--no-cooling", "--days", "0.5", "--quiet", "--out", str(tmp_path / "a.h5")]) == 0
    text = capsys.readouterr().out
    assert "  facility energy " not in text and "  cooling energy " not in text  # no such line
    assert "not modelled (cooling off)" in text and "PUE n/a" in text and "ITUE" in text


def test_file_pue_is_nan_and_says_why(nocool):
    with h5py.File(nocool) as f:
        pue = f["timeseries/facility/PUE"]
        assert np.all(np.isnan(pue[()])) and "not defined" in pue.attrs["undefined"]
        assert np.isnan(f["summary"].attrs["PUE"])
        assert np.all(np.isnan(f["attribution/jobs/PUE_effective"][()]))
        names = [x.decode() if isinstance(x, bytes) else x for x in f["attribution/pseudo/name"][()]]
        assert names == ["idle"]  # no partition in this run: no partition pseudo-consumer
        assert np.all(np.isnan(f["attribution/pseudo/PUE_effective"][()]))
        # attribution still closes: jobs + idle = IT energy
        total = f["attribution/jobs/E_it_J"][()].sum() + f["attribution/pseudo/E_it_J"][()].sum()
        assert total == pytest.approx(f["summary"].attrs["E_it_J"], rel=1e-9)


def test_compare_says_n_a(nocool, capsys):
    assert main(["compare", str(nocool), str(nocool)]) == 0
    text = capsys.readouterr().out
    assert "PUE              A     n/a        B     n/a        change n/a" in text
    assert "modelled no cooling plant" in text and "1.00000" not in text


def test_report_leaves_facility_figures_out(nocool, tmp_path):
    from scheduler_sim.report import make_report

    html = make_report(nocool, tmp_path / "r").read_text()
    assert "No cooling plant was modelled" in html
    assert ">facility energy<" not in html and ">PUE<" not in html
