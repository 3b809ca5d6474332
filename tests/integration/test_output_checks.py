"""Kind 7 (issue #21): every command that reads an output file checks its content record and shapes first.

The field case (../shared/cases/field-3/output-checks-skipped): a changed value with the stale checksum was
"conforms" for ``validate``; a stripped checksum and a partial file were reported and compared without a word;
``compare`` exited 0 on a dataset of 2e9 rows. The changes are made here the way the case's tamper.py makes them.
"""

from __future__ import annotations

import shutil

import h5py
import numpy as np
import pytest

from scheduler_sim.app.cli import main
from scheduler_sim.io import hdf5 as hdf5io
from scheduler_sim.io.hdf5 import DamagedFileError, check_output, content_digest, read_jobs, read_series, read_summary
from tests.conftest import TINY4_TOML as TINY4
from tests.unit.test_inputs_bounded import SWF


@pytest.fixture(scope="module")
def run_file(tmp_path_factory):
    d = tmp_path_factory.mktemp("out")
    (d / "tiny4.toml").write_text(TINY4)
    (d / "two.swf").write_bytes(SWF)
    assert main(["run", "--system", str(d / "tiny4.toml"), "--trace", str(d / "two.swf"), "--start-day", "0",
                 "--days", "1", "--no-cooling", "--quiet", "--out", str(d / "run.h5")]) == 0
    return d / "run.h5"


def tamper(src, dst, mode: str):
    shutil.copyfile(src, dst)
    with h5py.File(dst, "r+") as f:
        if mode in ("value", "nodigest", "bitflip"):
            d = f["jobs/energy_it_J"]
            if mode == "bitflip":  # one bit of one float, as a disk error would do
                v = d[()]
                b = bytearray(v.tobytes())
                b[3] ^= 0x10
                d[...] = np.frombuffer(bytes(b), dtype=v.dtype).reshape(v.shape)
            else:
                d[0] = d[0] * 10 + 1
            if mode == "nodigest":
                del f.attrs["content_sha256"]
            return dst
        if mode == "partial":
            f.attrs["complete"] = False
            f.attrs["failure"] = "cooling plant failed at t = 3600 s (step failed)"
        elif mode.startswith("absurd:"):
            n = int(mode[7:])
            dt = f["timeseries/time_s"].dtype
            del f["timeseries/time_s"]
            f.create_dataset("timeseries/time_s", shape=(n,), dtype=dt, chunks=(1 << 20,), compression="gzip",
                             fillvalue=0)
        f.attrs["content_sha256"] = content_digest(f)
    return dst


def test_output_checks_validate_refuses_a_changed_value(run_file, tmp_path, capsys):
    assert main(["validate", str(run_file)]) == 0
    assert capsys.readouterr().out.strip() == (f"{run_file}: conforms to the run schema (docs/output_schema.md); "
                                               f"content checksum verified")
    for mode in ("value", "bitflip"):
        t = tamper(run_file, tmp_path / f"{mode}.h5", mode)
        assert main(["validate", str(t)]) == 2  # before: 0, "conforms to the run schema"
        assert capsys.readouterr().err.strip() == (
            f"hpctwin validate: {t}: damaged or changed: its content does not match the checksum recorded when it "
            f"was written (content_sha256)")


@pytest.mark.parametrize("command", ["validate", "report", "compare"])
def test_output_checks_file_without_checksum_refused_unless_no_verify(run_file, tmp_path, capsys, command):
    t = tamper(run_file, tmp_path / "nodigest.h5", "nodigest")
    args = {"validate": [str(t)], "report": [str(t), "--out", str(tmp_path / "rep")],
            "compare": [str(run_file), str(t)]}[command]
    assert main([command, *args]) == 2  # before: report and compare exit 0 without a word
    err = capsys.readouterr().err
    assert f"{t}: has no content checksum (content_sha256): it cannot be verified" in err
    assert "--no-verify" in err
    if command == "report":
        assert not (tmp_path / "rep").exists()
        return  # the report with --no-verify draws figures (slow); its banner is checked on the partial file
    assert main([command, "--no-verify", *args]) in ((1,) if command == "validate" else (0,))
    out = capsys.readouterr().out
    assert out.splitlines()[0] == (f"WARNING: {t} is read UNVERIFIED (--no-verify): it has no content checksum "
                                   f"(content_sha256), so nothing shows whether it was changed after it was written")


def test_output_checks_partial_file_marked_in_compare_first_line_and_validate(run_file, tmp_path, capsys):
    t = tamper(run_file, tmp_path / "partial.h5", "partial")
    first = (f"PARTIAL RUN: {t} is incomplete (complete = false): cooling plant failed at t = 3600 s (step failed); "
             f"its totals cover only the part that ran")
    assert main(["compare", str(run_file), str(t)]) == 0
    assert capsys.readouterr().out.splitlines()[0] == first  # before: no mention at all
    assert main(["validate", str(t)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == first and out[-1].endswith("; PARTIAL run (complete = false)")
    chk = check_output(t)
    assert chk.partial and chk.verified and chk.failure.startswith("cooling plant failed")


def test_output_checks_partial_file_red_banner_at_the_top_of_the_report(run_file, tmp_path, capsys):
    t = tamper(run_file, tmp_path / "partial.h5", "partial")
    assert main(["report", str(t), "--out", str(tmp_path / "rep")]) == 0
    page = (tmp_path / "rep" / "report.html").read_text()
    body = page.split("<body>", 1)[1].lstrip()
    assert body.startswith('<div class="file-warning" role="alert" style="background:#b00020;')
    assert "PARTIAL RUN: " in body[:600] and "is incomplete (complete = false)" in body[:600]
    assert "PARTIAL RUN" in capsys.readouterr().err


def test_output_checks_absurd_row_count_refused_before_reading(run_file, tmp_path, capsys):
    t = tamper(run_file, tmp_path / "absurd.h5", "absurd:2000000000")  # 14.9 GiB of float64 if read
    want = (f"{t}: /timeseries/time_s has 2,000,000,000 along n_intervals but /attribution/timeseries/PUE has 90: "
            f"the file is damaged or crafted")
    for cmd, args in (("compare", [str(run_file), str(t)]), ("validate", [str(t)]),
                      ("report", [str(t), "--out", str(tmp_path / "r")])):
        assert main([cmd, *args]) == 2  # before: compare 0, validate 1 after reading, report a MemoryError
        prefix = "hpctwin validate: " if cmd == "validate" else f"hpctwin {cmd}: error: "
        assert capsys.readouterr().err.strip() == prefix + want
    for reader in (read_jobs, read_series, read_summary):
        with pytest.raises(DamagedFileError, match="2,000,000,000 along n_intervals"):
            reader(t)


def test_output_checks_readers_verify_the_checksum_first(run_file, tmp_path):
    t = tamper(run_file, tmp_path / "value.h5", "value")
    for reader in (read_jobs, read_series, read_summary):
        with pytest.raises(DamagedFileError, match="does not match the checksum"):
            reader(t)
    n = tamper(run_file, tmp_path / "n.h5", "nodigest")
    with pytest.raises(DamagedFileError, match="no content checksum"):
        read_summary(n)
    got, want = read_summary(n, allow_unverified=True), read_summary(run_file)
    assert got.keys() == want.keys() and got["E_it_J"] == want["E_it_J"] > 0
    assert hdf5io.verify_file(run_file) is True and hdf5io.verify_file(n) is False
    with pytest.raises(DamagedFileError, match="no content checksum"):
        hdf5io.verify_file(n, require_digest=True)


def test_output_checks_memory_budget_over_all_datasets(run_file, monkeypatch):
    import jobs.memory

    chk = check_output(run_file)
    assert chk.data_bytes > 0
    monkeypatch.setattr(jobs.memory, "memory_budget_bytes", lambda: chk.data_bytes)  # 2x the data is needed
    with pytest.raises(DamagedFileError, match=r"its datasets hold [\d,]+ bytes: needs .* of memory"):
        check_output(run_file)
