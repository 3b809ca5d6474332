"""Kind 8 (issue #21): inputs are sized before they are expanded; kind 13's encodings: one opener reads them all.

Each test names the kind it checks. The numbers are built by hand: a 4 GiB gzip bomb is 64 gzip members of 64 MiB
of newlines (about 4 MB on disk); a 317-year series at 30-day rows has 3,860 rows; 2e9 rows of float64 are 14.9 GiB.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from dataloaders import TraceError
from dataloaders.swf import read_swf
from jobs.memory import MAX_SPAN_S, InputTooLargeError, check_allocation, check_span, memory_budget_bytes
from jobs.textfiles import MAX_LINE_BYTES, InputFileError, read_input, read_utf8, toml_loads
from scheduler_sim.app.cli import main
from tests.conftest import write_tiny4  # the tiny 4-node machine (tests/conftest.py)

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT.parent / "shared" / "cases" / "field-3"
SWF = b"1 0 0 3600 4 -1 -1 4 3600 -1 1 1 1 -1 1 -1 -1 -1\n2 100 0 1800 2 -1 -1 2 3600 -1 1 1 1 -1 1 -1 -1 -1\n"


def _zip(data: bytes, names=("t.swf",)) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for n in names:
            zf.writestr(n, data)
    return buf.getvalue()


@pytest.mark.parametrize("pack", [lambda b: b, gzip.compress, bz2.compress, lzma.compress, _zip],
                         ids=["plain", "gzip", "bzip2", "xz", "zip"])
def test_inputs_one_opener_reads_every_compression_by_content(tmp_path, pack):
    p = tmp_path / "trace.dat"  # no telling suffix: the content decides
    p.write_bytes(pack(SWF))
    assert read_input(p) == SWF
    df, rep = read_swf(p)
    assert list(df["job_id"]) == [1, 2] and rep.rejected == 0


def test_inputs_expanded_before_size_check_gzip_bomb_refused_at_the_limit(tmp_path, monkeypatch):
    member = gzip.compress(b"\n" * (8 << 20))
    p = tmp_path / "bomb.swf.gz"
    p.write_bytes(member * 16)  # 128 MiB decompressed from ~130 kB
    monkeypatch.setenv("HPCTWIN_MAX_INPUT_BYTES", str(32 << 20))
    with pytest.raises(InputFileError, match=r"bomb\.swf\.gz: trace is larger than 32\.00 MiB decompressed"):
        read_input(p, "trace")
    with pytest.raises(TraceError, match=r"bomb\.swf\.gz.*larger than 32\.00 MiB"):
        read_swf(p)


def test_inputs_expanded_before_size_check_bomb_at_the_cli_exits_2_in_one_line(tmp_path, capsys, monkeypatch):
    write_tiny4(tmp_path)
    p = tmp_path / "bomb.swf.gz"
    p.write_bytes(gzip.compress(b"\n" * (8 << 20)) * 8)
    monkeypatch.setenv("HPCTWIN_MAX_INPUT_BYTES", str(16 << 20))
    rc = main(["run", "--system", str(tmp_path / "tiny4.toml"), "--trace", str(p), "--format", "swf",
               "--start-day", "0", "--days", "1", "--no-cooling", "--quiet", "--out", str(tmp_path / "o.h5")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert err[-1].startswith("hpctwin run: error: ") and str(p) in err[-1] and "larger than 16.00 MiB" in err[-1]
    assert not (tmp_path / "o.h5").exists()


def test_inputs_expanded_before_size_check_memory_budget_stops_the_bomb_under_rlimit(tmp_path):
    # the field case: a 4 GiB bomb under an address-space limit of 3 GB gives one line, not a MemoryError; run
    # in a child so the limit binds only there
    p = tmp_path / "bomb.gz"
    p.write_bytes(gzip.compress(b"\n" * (64 << 20)) * 64)
    code = ("import resource, sys\n"
            "resource.setrlimit(resource.RLIMIT_AS, (3_000_000_000, 3_000_000_000))\n"
            "from jobs.textfiles import read_input, InputFileError\n"
            "try:\n    read_input(sys.argv[1], 'trace')\n"
            "except InputFileError as e:\n    print(e); sys.exit(2)\n")
    r = subprocess.run([sys.executable, "-c", code, str(p)], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 2, r.stderr
    assert r.stdout.startswith(f"{p}: trace of more than") and "min(MemAvailable, RLIMIT_AS - VmSize)" in r.stdout
    assert "MemoryError" not in r.stdout + r.stderr


def test_inputs_expanded_before_size_check_one_line_100mb_refused(tmp_path):
    p = tmp_path / "one.swf"
    with open(p, "wb") as fh:
        fh.write(b"1 0 0 3600 4 -1 -1 4 3600 -1 1 1 1 -1 1 -1 -1 -1\n2 " + b"9" * (MAX_LINE_BYTES + 10) + b"\n")
    with pytest.raises(TraceError, match=r"one\.swf: line 2 is longer than 1\.00 MiB"):
        read_swf(p)
    # a line of exactly the limit is accepted by the opener
    q = tmp_path / "ok.txt"
    q.write_bytes(b"x" * MAX_LINE_BYTES + b"\n" + b"y\n")
    assert len(read_input(q)) == MAX_LINE_BYTES + 3


def test_inputs_expanded_before_size_check_truncated_and_multi_file_archives(tmp_path):
    p = tmp_path / "t.gz"
    p.write_bytes(gzip.compress(os.urandom(200_000))[:5000])
    with pytest.raises(InputFileError, match=r"t\.gz: corrupt gzip data"):
        read_input(p)
    z = tmp_path / "two.zip"
    z.write_bytes(_zip(SWF, names=("a.swf", "b.swf")))
    with pytest.raises(InputFileError, match=r"two\.zip: zip archive with 2 files"):
        read_input(z)


def test_inputs_expanded_before_size_check_allocation_check_uses_rlimit_as():
    assert memory_budget_bytes() > 0
    check_allocation(1 << 20, "small")  # passes
    with pytest.raises(InputTooLargeError, match="needs nan"):
        check_allocation(float("nan"), "x")
    # under RLIMIT_AS = 3 GB the 2e9-row float64 dataset of the field case (14.90 GiB) is refused, and the budget is
    # below the limit less the 256 MiB margin
    code = ("import resource\nresource.setrlimit(resource.RLIMIT_AS, (3_000_000_000, 3_000_000_000))\n"
            "from jobs.memory import memory_budget_bytes, check_allocation, InputTooLargeError\n"
            "print(memory_budget_bytes())\n"
            "try:\n    check_allocation(2_000_000_000 * 8, 'x.h5: /timeseries/time_s')\n"
            "except InputTooLargeError as e:\n    print(e)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    budget, msg = r.stdout.strip().splitlines()
    assert 0 <= int(budget) <= 3_000_000_000 - (256 << 20)
    assert msg.startswith("x.h5: /timeseries/time_s: needs 14.90 GiB of memory, more than the ")


def test_inputs_expanded_before_size_check_spans_bounded():
    assert MAX_SPAN_S == pytest.approx(20 * 365.25 * 86400)
    assert check_span(86400.0, 15.0, "a day", 8) == 5760
    with pytest.raises(InputTooLargeError, match=r"p\.csv: spans 317\.0 years; the longest run or series is 20 years"):
        check_span(317 * 365.25 * 86400, 15.0, "p.csv", 8)
    with pytest.raises(InputTooLargeError, match="cannot be simulated"):
        check_span(float("nan"), 15.0, "p.csv", 8)


def test_inputs_expanded_before_size_check_cooling_csv_of_317_years_exits_2(tmp_path, capsys):
    t = np.arange(0, 317 * 365.25 * 86400, 30 * 86400)
    assert len(t) == 3860
    p = tmp_path / "long.csv"
    p.write_text("timestamp_secs,measured_kW\n" + "".join(f"{x:.0f},100\n" for x in t))
    assert main(["cooling", str(p), "--out", str(tmp_path / "c.h5")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"hpctwin cooling: error: {p}: the power series: spans 317.0 years; the longest run or series is "
                   f"20 years (jobs.memory.MAX_SPAN_S)")


def test_inputs_expanded_before_size_check_run_window_bounded(tmp_path, capsys):
    write_tiny4(tmp_path)
    (tmp_path / "two.swf").write_bytes(SWF)
    rc = main(["run", "--system", str(tmp_path / "tiny4.toml"), "--trace", str(tmp_path / "two.swf"),
               "--start-day", "0", "--days", "10000", "--no-cooling", "--quiet", "--out", str(tmp_path / "o.h5")])
    assert rc == 2
    assert "the run window of 10000 days (trace.window_days / --days): spans 27.4 years" in capsys.readouterr().err


def test_inputs_expanded_before_size_check_grid_span_checked_before_allocating(tmp_path):
    from dataloaders.grid.series import MAX_ROWS, GridSignalError, regularise

    t = np.array([0.0, (MAX_ROWS + 5) * 3600.0])
    with pytest.raises(GridSignalError, match="the records span"):
        regularise(tmp_path / "g.csv", t, np.ones(2), np.array([2, 3]), [], strict=False, time_col="t")


def test_encodings_utf16_trace_refused_naming_the_file(tmp_path, capsys):
    text = SWF.decode()
    for enc, name in (("utf-16", "UTF-16 (little-endian, with a byte-order mark)"),
                      ("utf-16-le", "UTF-16 (little-endian, no byte-order mark)"),
                      ("utf-16-be", "UTF-16 (big-endian, no byte-order mark)"),
                      ("utf-32", "UTF-32 (little-endian, with a byte-order mark)"),
                      ("utf-32-be", "UTF-32 (big-endian, no byte-order mark)")):
        p = tmp_path / f"{enc}.swf"
        p.write_bytes(text.encode(enc))
        assert main(["validate", str(p)]) == 2
        err = capsys.readouterr().err.strip()
        assert err == f"hpctwin validate: {p}: cannot be used: {p}: is {name}; save it as UTF-8"


@pytest.mark.skipif(not CASES.is_dir(), reason="field cases (../shared/cases/field-3) not beside the checkout")
def test_encodings_field_case_utf16_swf(capsys):
    p = CASES / "encodings" / "utf16.swf"
    assert main(["validate", str(p)]) == 2
    assert "is UTF-16 (little-endian, with a byte-order mark); save it as UTF-8" in capsys.readouterr().err


def test_encodings_utf8_bom_stripped_for_every_text_loader(tmp_path):
    from dataloaders.request_csv import RequestCSVLoader

    p = tmp_path / "bom.swf"
    p.write_bytes(b"\xef\xbb\xbf" + SWF)
    df, rep = read_swf(p)
    assert list(df["job_id"]) == [1, 2] and rep.rejected == 0  # before: line 1 rejected, job_number = '\ufeff1'
    q = tmp_path / "bom.csv"
    q.write_bytes(b"\xef\xbb\xbft,p,o\n0,5,6\n1.5,7,8\n")
    res = RequestCSVLoader().load(q, arrival="t", prompt="p", output="o")
    assert list(res.jobs["arrival_time_s"]) == [0.0, 1.5] and res.report.rejected == 0
    c = tmp_path / "bom.toml"
    c.write_bytes(b"\xef\xbb\xbfa = 1\n")
    assert read_utf8(c, "configuration file") == "a = 1\n"


def test_encodings_weather_and_grid_files_go_through_the_opener(tmp_path):
    from cooling_fmu.weather import WeatherFileError, load_weather
    from dataloaders.grid.series import GridSignalError, open_text

    w = tmp_path / "w.epw"
    w.write_bytes("LOCATION,x\n".encode("utf-16"))
    with pytest.raises(WeatherFileError, match=r"w\.epw: is UTF-16 .*save it as UTF-8"):
        load_weather(w, cache=False)
    g = tmp_path / "g.csv"
    g.write_bytes("datetime,carbon\n".encode("utf-16-le"))
    with pytest.raises(GridSignalError, match=r"g\.csv: is UTF-16"):
        open_text(g)


def test_encodings_deep_toml_names_the_file(tmp_path, capsys):
    p = tmp_path / "deep.toml"
    p.write_text("a = " + "[" * 5000 + "]" * 5000 + "\n")
    assert main(["run", str(p)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"hpctwin run: error: {p}: configuration file nests arrays or inline tables too deeply")
    assert "maximum recursion depth" not in err
    with pytest.raises(ValueError, match=r"x\.toml: system file nests"):
        toml_loads("b = " + "{c = " * 3000 + "1" + "}" * 3000, "x.toml", "system file")


def test_encodings_deep_json_line_is_a_rejected_record(tmp_path):
    from dataloaders.mooncake import MooncakeLoader

    p = tmp_path / "m.jsonl"
    p.write_text('{"timestamp": 0, "input_length": 5, "output_length": 6, "hash_ids": [1]}\n'
                 + "[" * 100000 + "]" * 100000 + "\n")
    res = MooncakeLoader().load(p)
    assert res.report.accepted == 1 and res.report.rejected == 1
    assert res.report.issues[0].reason == "bad_json" and res.report.issues[0].line == 2
