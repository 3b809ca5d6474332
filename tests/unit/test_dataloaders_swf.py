"""SWF loader: exact counts and sums on hand-written fixtures and on the real traces in ../shared/data."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dataloaders import TraceError, load_trace, read_swf
from jobs.table import JOB_COLUMNS, JobStatus, validate_job_table

DATA = Path(__file__).parents[1] / "data"
REPO = Path(__file__).parents[2]
TRACES = REPO.parent / "shared" / "data" / "hpc-traces"
EMBEDDED_THETA = REPO / "experiments" / "data" / "theta_2022.swf.gz"

needs_traces = pytest.mark.skipif(
    not TRACES.is_dir(), reason=f"real traces not found at {TRACES} (CI checks ../shared out beside the repo)"
)


def _reasons(report, action):
    return {(i.line, i.reason) for i in report.issues if i.action == action}


# --------------------------------------------------------------------------------------------------------------
# fixtures written by hand
# --------------------------------------------------------------------------------------------------------------


def test_with_header_counts_sums_and_origin():
    res = read_swf(DATA / "with_header.swf", cores_per_node=4, strict=True)
    df, rep = res
    assert (rep.records_read, rep.accepted, rep.rejected, rep.repaired, rep.folded) == (3, 3, 0, 0, 0)
    assert rep.issues == []
    # procs 8, 4, 16 with 4 per node -> 2 + 1 + 4 = 7 nodes
    assert df["nodes"].sum() == 7
    assert df["runtime_s"].sum() == 100 + 200 + 50
    # header UnixStartTime 1e9 is the origin; submit times are already offsets
    assert df.attrs["time_origin_unix_s"] == 1_000_000_000
    assert df["submit_time_s"].tolist() == [0.0, 30.0, 60.0]
    # start = submit + wait, end = start + run: (0+10, 30+20, 60+0) and (+100, +200, +50)
    assert df["start_time_s"].tolist() == [10.0, 50.0, 60.0]
    assert df["end_time_s"].tolist() == [110.0, 250.0, 110.0]
    # requested time -1 stays NaN (never 0)
    assert math.isnan(df.loc[df.job_id == 3, "requested_walltime_s"].item())
    # cpu_util = 80.5 / 100; job 2: 200 / 200 = 1 (not clipped, not repaired); job 3: -1 -> NaN
    assert df["cpu_util"].iloc[0] == pytest.approx(0.805)
    assert df["cpu_util"].iloc[1] == 1.0
    assert math.isnan(df["cpu_util"].iloc[2])
    assert df["user"].tolist() == ["1", "2", "1"] and df["account"].tolist() == ["1", "1", "2"]
    assert df["queue"].tolist() == ["1", "1", "2"]
    assert df["status"].tolist() == [1, 1, 0]
    assert list(df.columns[: len(JOB_COLUMNS)]) == list(JOB_COLUMNS)
    assert not any("MaxJobs" in n for n in rep.notes)  # header count agrees
    assert rep.header["MaxNodes"] == 4 and rep.header["MaxProcs"] == 16


def test_no_header_epoch_normalised_and_sorted():
    df, rep = read_swf(DATA / "no_header_epoch.swf")
    assert df.attrs["time_origin_unix_s"] == 1_600_000_000  # smallest submit epoch
    # file order 100, 0, 50, 200 (relative) -> sorted; 0 and 50 are below the running max 100 -> 2 out of order
    assert df["job_id"].tolist() == [2, 3, 1, 4]
    assert df["submit_time_s"].tolist() == [0.0, 50.0, 100.0, 200.0]
    assert any("2 record(s) out of submit-time order" in n for n in rep.notes)
    assert df["nodes"].sum() == 1 + 4 + 2 + 3
    assert df["runtime_s"].sum() == 50 + 0 + 100 + 25  # runtime 0 is legal and kept
    assert (df["runtime_s"] == 0).sum() == 1
    # job 2 requested -1 -> NaN; job 4 wait -1 -> start and end NaN, runtime kept
    assert math.isnan(df.loc[df.job_id == 2, "requested_walltime_s"].item())
    j4 = df.loc[df.job_id == 4].iloc[0]
    assert math.isnan(j4.start_time_s) and math.isnan(j4.end_time_s) and j4.runtime_s == 25
    assert set(df["user"]) == {""} and set(df["queue"]) == {""}
    assert df.loc[df.job_id == 3, "status"].item() == JobStatus.CANCELLED


QUIRKS_LINES = {
    # line -> (action, reason), from tests/data/quirks.swf (cat -n)
    10: ("flagged", "runtime_missing"),  # job 3 run time -1
    12: ("repaired", "cpu_util_clipped"),  # job 4 summary: 600 s CPU over 300 s run
    13: ("folded", "partial_execution_line"),  # job 4 part, status 2
    14: ("folded", "partial_execution_line"),  # job 4 part, status 3
    15: ("repaired", "partial_execution_without_summary"),  # job 5 parts 2 + 4, no summary line
    16: ("folded", "partial_execution_line"),  # job 5 second part
    17: ("rejected", "wrong_field_count"),  # "6 70 1 2 3"
    18: ("rejected", "non_numeric"),  # "abc" in requested time
    19: ("rejected", "larger_than_machine"),  # job 8: 64 procs / 4 = 16 nodes > 8
    20: ("rejected", "duplicate_job_id"),  # job 1 again
}


def test_quirks_counts_sums_and_issues():
    df, rep = read_swf(DATA / "quirks.swf", cores_per_node=4, max_nodes=8)
    # 13 data lines = 6 accepted (jobs 1,2,3,4,5,9) + 4 rejected + 3 folded
    assert (rep.records_read, rep.accepted, rep.rejected, rep.folded, rep.repaired) == (13, 6, 4, 3, 2)
    assert sorted(df["job_id"]) == [1, 2, 3, 4, 5, 9]
    assert {i.line: (i.action, i.reason) for i in rep.issues} == QUIRKS_LINES
    # nodes: job1 8/4=2, job2 alloc -1 -> requested 5 -> ceil(5/4)=2, job3 4/4=1, job4 16/4=4,
    #        job5 4/4=1, job9 ceil(3/4)=1  -> 11
    assert df["nodes"].sum() == 11
    assert df.set_index("job_id")["procs"].to_dict() == {1: 8, 3: 4, 2: 5, 4: 16, 5: 4, 9: 3}
    assert any("allocated_processors (field 5) for 5 job(s), from requested_processors (field 8) for 1" in n
               for n in rep.notes)
    # runtimes: 100 + 0 + NaN + 300 (summary line, parts folded) + 150 (orphan parts 100 + 50) + 10 = 560
    assert df["runtime_s"].sum() == 560
    assert df["runtime_s"].isna().sum() == 1
    by_id = df.set_index("job_id")
    # job 2: status 5, runtime 0 kept, wait -1 -> start NaN, requested -1 -> NaN, ids -1 -> ''
    assert by_id.loc[2, "status"] == JobStatus.CANCELLED and by_id.loc[2, "runtime_s"] == 0
    assert math.isnan(by_id.loc[2, "start_time_s"]) and math.isnan(by_id.loc[2, "requested_walltime_s"])
    assert by_id.loc[2, "user"] == "" and by_id.loc[2, "account"] == "" and by_id.loc[2, "queue"] == ""
    # job 3: fractional CPU time with unknown runtime -> cpu_util NaN, end NaN, start 20 + 5
    assert math.isnan(by_id.loc[3, "cpu_util"]) and by_id.loc[3, "start_time_s"] == 25
    assert math.isnan(by_id.loc[3, "end_time_s"])
    # job 4: clipped to 1; job 9: 5.5 / 10 = 0.55, fractional wait 1.5 -> start 91.5, end 101.5
    assert by_id.loc[4, "cpu_util"] == 1.0 and by_id.loc[4, "status"] == JobStatus.COMPLETED
    assert by_id.loc[9, "cpu_util"] == pytest.approx(0.55)
    assert (by_id.loc[9, "start_time_s"], by_id.loc[9, "end_time_s"]) == (91.5, 101.5)
    # job 5 folded from parts: start 60 + 10, runtime 150, last part status 4 -> failed
    assert (by_id.loc[5, "start_time_s"], by_id.loc[5, "end_time_s"], by_id.loc[5, "status"]) == (70, 220, 0)
    # sorted by submit then id: job 3 (submit 20) comes before job 2 (submit 30)
    assert df["job_id"].tolist() == [1, 3, 2, 4, 5, 9]
    assert any("1 record(s) out of submit-time order" in n for n in rep.notes)
    assert any("header MaxJobs = 99 but 6 jobs were loaded" in n for n in rep.notes)
    assert any("header MaxRecords = 99 but 13 records were read" in n for n in rep.notes)
    assert math.isnan(df.attrs["time_origin_unix_s"])
    validate_job_table(df)


def test_quirks_summary_and_to_dict():
    _, rep = read_swf(DATA / "quirks.swf", cores_per_node=4, max_nodes=8)
    text = rep.summary()
    assert "records read 13: accepted 6 (repaired 2), rejected 4, folded 3" in text
    assert "line 19 (job 8)" in text and "larger_than_machine" in text
    d = rep.to_dict()
    json.dumps(d)  # serialisable for provenance
    assert d["counts_by_reason"]["rejected:duplicate_job_id"] == 1
    assert d["counts_by_reason"]["folded:partial_execution_line"] == 3
    assert len(d["issues"]) == len(QUIRKS_LINES)
    dup = next(i for i in rep.issues if i.reason == "duplicate_job_id")
    assert dup.job_id == 1 and "first seen on line 8" in dup.expected


def test_quirks_without_max_nodes_keeps_the_big_job():
    df, rep = read_swf(DATA / "quirks.swf", cores_per_node=4)
    assert rep.accepted == 7 and rep.rejected == 3
    assert df.loc[df.job_id == 8, "nodes"].item() == 16


def test_strict_raises_naming_the_line():
    with pytest.raises(TraceError) as ei:
        read_swf(DATA / "quirks.swf", cores_per_node=4, max_nodes=8, strict=True)
    err = ei.value
    # first repaired/rejected record is line 12 (cpu_util clipped); the flagged line 10 does not raise
    assert err.line == 12 and err.field == "average_cpu_time"
    assert "quirks.swf, line 12" in str(err) and "expected" in str(err)


def test_strict_bad_line(tmp_path):
    p = tmp_path / "bad.swf"
    p.write_text("1 0 0 10 1 -1 -1 1 60 -1 1 1 1 -1 1 -1 -1 -1\n2 5 0 10 x -1 -1 1 60 -1 1 1 1 -1 1 -1 -1 -1\n")
    with pytest.raises(TraceError, match=r"bad.swf, line 2.*allocated_processors.*'x'"):
        read_swf(p, strict=True)
    df, rep = read_swf(p)
    assert rep.accepted == 1 and rep.rejected == 1


def test_gzip_crlf_and_blank_lines_load_identically(tmp_path):
    raw = (DATA / "quirks.swf").read_bytes()
    gz = tmp_path / "quirks.swf.gz"
    gz.write_bytes(gzip.compress(raw))
    crlf = tmp_path / "quirks_crlf.swf"
    crlf.write_bytes(raw.replace(b"\n", b"\r\n"))
    ref, rep = read_swf(DATA / "quirks.swf", cores_per_node=4, max_nodes=8)
    for p in (gz, crlf):
        df, r = load_trace(p, cores_per_node=4, max_nodes=8)
        pd.testing.assert_frame_equal(df, ref)
        assert [(i.line, i.reason) for i in r.issues] == [(i.line, i.reason) for i in rep.issues]


def test_zero_jobs_is_an_error(tmp_path):
    p = tmp_path / "empty.swf"
    p.write_text("; MaxJobs: 0\n;\n\n   \n")
    with pytest.raises(TraceError, match="zero jobs"):
        read_swf(p)
    q = tmp_path / "allbad.swf"
    q.write_text("1 2 3\n")
    with pytest.raises(TraceError, match=r"zero jobs \(1 record\(s\) read, 1 rejected\)"):
        read_swf(q)


def test_header_origin_with_epoch_submits(tmp_path):
    p = tmp_path / "h.swf"
    p.write_text("; UnixStartTime: 1600000000\n1 1600000100 0 10 1 -1 -1 1 60 -1 1 1 1 -1 1 -1 -1 -1\n")
    df, _ = read_swf(p)
    assert df.attrs["time_origin_unix_s"] == 1_600_000_000 and df["submit_time_s"].tolist() == [100.0]


def test_bad_options():
    with pytest.raises(ValueError, match="cores_per_node"):
        read_swf(DATA / "with_header.swf", cores_per_node=0)
    with pytest.raises(ValueError, match="max_nodes"):
        read_swf(DATA / "with_header.swf", max_nodes=0)


# --------------------------------------------------------------------------------------------------------------
# real traces (facts checked with an independent pandas.read_csv pass and grep)
# --------------------------------------------------------------------------------------------------------------


@needs_traces
def test_theta_2022():
    df, rep = load_trace(TRACES / "theta_2022.swf")  # its time: benchmarks/bench_loaders.py
    assert (rep.records_read, rep.accepted, rep.rejected, rep.repaired) == (23911, 23911, 0, 0)
    # header UnixStartTime is 0 -> origin is the first submit epoch (job 1, 2022-01-01)
    assert df.attrs["time_origin_unix_s"] == 1641021254
    assert df["submit_time_s"].iloc[0] == 0 and df["submit_time_s"].iloc[-1] == 1672445845 - 1641021254
    assert (df["status"] == JobStatus.FAILED).all()
    assert any("every job has status 0" in n for n in rep.notes)
    assert any("6264 job(s) ran longer than requested" in n for n in rep.notes)
    assert df["nodes"].min() == 128 and df["nodes"].max() == 4048
    ref = pd.read_csv(TRACES / "theta_2022.swf", sep=r"\s+", comment=";", header=None)
    assert df["nodes"].sum() == ref[4].sum()
    assert df["runtime_s"].sum() == ref[3].sum()
    assert df["requested_walltime_s"].sum() == ref[8].sum()


@needs_traces
def test_theta_embedded_copy_identical():
    if not EMBEDDED_THETA.is_file():
        pytest.skip(f"{EMBEDDED_THETA} absent")
    a, ra = load_trace(TRACES / "theta_2022.swf")
    b, rb = load_trace(EMBEDDED_THETA)
    pd.testing.assert_frame_equal(a, b)
    assert a.attrs["time_origin_unix_s"] == b.attrs["time_origin_unix_s"]
    da, db = ra.to_dict(), rb.to_dict()
    for d in (da, db):
        d.pop("source")
    assert da == db


@needs_traces
def test_hpc2n():
    df, rep = load_trace(TRACES / "hpc2n.swf")
    assert (rep.records_read, rep.accepted, rep.rejected) == (3170, 3170, 0)
    assert rep.header["MaxJobs"] == 527371
    assert any("header MaxJobs = 527371 but 3170 jobs were loaded" in n for n in rep.notes)
    assert df.attrs["time_origin_unix_s"] == 1027839845  # header UnixStartTime
    # 25 records with run time -1 -> NaN, flagged, not 0
    assert df["runtime_s"].isna().sum() == 25
    assert rep.counts_by_reason()[("flagged", "runtime_missing")] == 25
    # average CPU time above run time (fractional field 6, e.g. 43307 s over 43306 s) -> clipped, 354 jobs
    assert rep.counts_by_reason()[("repaired", "cpu_util_clipped")] == 354 == rep.repaired
    assert df["cpu_util"].max() == 1.0
    assert (df["status"] == JobStatus.UNKNOWN).sum() == 25
    ref = pd.read_csv(TRACES / "hpc2n.swf", sep=r"\s+", comment=";", header=None)
    assert df["nodes"].sum() == ref[4].sum()
    assert df["runtime_s"].sum() == ref.loc[ref[3] >= 0, 3].sum()
    # job 12 "552.21" s CPU over 553 s
    assert df.loc[df.job_id == 12, "cpu_util"].item() == pytest.approx(552.21 / 553)


@needs_traces
def test_nasa_gz():
    df, rep = load_trace(TRACES / "NASA-iPSC-1993-3.1-cln.swf.gz")
    assert (rep.records_read, rep.accepted, rep.rejected) == (18239, 18239, 0)
    assert (df["runtime_s"] == 0).sum() == 173
    assert any("header MaxJobs = 42264" in n for n in rep.notes)
    assert df.attrs["time_origin_unix_s"] == 749458803
    # wait, requested time and status are all -1: NaN / NaN / unknown, never 0
    assert df["start_time_s"].isna().all() and df["requested_walltime_s"].isna().all()
    assert (df["status"] == JobStatus.UNKNOWN).all()
    assert df["nodes"].max() == 128
    ref = pd.read_csv(TRACES / "NASA-iPSC-1993-3.1-cln.swf.gz", sep=r"\s+", comment=";", header=None)
    assert df["nodes"].sum() == ref[4].sum() and df["runtime_s"].sum() == ref[3].sum()


@needs_traces
def test_real_traces_with_machine_size():
    # Theta: 4,392 nodes; the trace's processors are nodes (MaxProcs 4360). max_nodes=2048 rejects the big ones.
    df, rep = load_trace(TRACES / "theta_2022.swf", max_nodes=2048)
    ref = pd.read_csv(TRACES / "theta_2022.swf", sep=r"\s+", comment=";", header=None)
    n_big = int((ref[4] > 2048).sum())
    assert n_big > 0 and rep.rejected == n_big and rep.accepted == 23911 - n_big
    assert set(i.reason for i in rep.issues) == {"larger_than_machine"}
    assert np.all(df["nodes"] <= 2048)


# --------------------------------------------------------------------------------------------------------------
# block scanner (fast path) vs per-line path
# --------------------------------------------------------------------------------------------------------------


def _swf_line(i, *, run=100, cpu="-1"):
    return f"{i} {10 * i} 5 {run} 4 {cpu} -1 4 200 -1 1 {i % 7} 2 -1 1 -1 -1 -1"


def _same_load(a, b):
    (da, ra), (db, rb) = a, b
    pd.testing.assert_frame_equal(da, db, check_exact=True)
    assert repr(ra.to_dict()) == repr(rb.to_dict())


@pytest.mark.parametrize("block", [1, 64, 4096])
def test_small_blocks_load_like_one_block(tmp_path, monkeypatch, block):
    import dataloaders.swf as swf

    one = read_swf(DATA / "quirks.swf", cores_per_node=4, max_nodes=8)
    monkeypatch.setattr(swf, "_BLOCK_BYTES", block)
    _same_load(read_swf(DATA / "quirks.swf", cores_per_node=4, max_nodes=8), one)


def test_bad_lines_in_the_middle_of_big_blocks(tmp_path, monkeypatch):
    import dataloaders.swf as swf

    lines = [_swf_line(i) for i in range(1, 5001)]
    lines[1233] = lines[1233].replace(" 4 -1 -1 4 ", " 4 x -1 4 ", 1)        # line 1234: non-numeric field 6
    lines[2999] = " ".join(lines[2999].split()[:17])                          # line 3000: 17 fields
    lines[4000] = lines[4000] + "\r"                                          # CR line end: fast path, kept
    lines[4100] = "\t" + lines[4100].replace(" 200 ", "\t1e3\t", 1)           # exponent: per-line path, kept
    lines[4200] = _swf_line(4201, run="-0")                                   # -0 keeps its sign (per-line)
    lines[4300] = _swf_line(4301, cpu="12.345678901234")                      # 15-character decimal
    lines[4400] = _swf_line(4401, cpu="0.12345678901234567")                  # longer: per-line path
    p = tmp_path / "big.swf"
    p.write_text("; MaxJobs: 5000\n" + "\n".join(lines) + "\n")
    df, rep = read_swf(p)
    assert (rep.records_read, rep.accepted, rep.rejected) == (5000, 4998, 2)
    bad = {i.line: (i.field, i.found, i.expected, i.reason) for i in rep.issues if i.action == "rejected"}
    assert bad == {1235: ("average_cpu_time", "x", "a finite number (-1 when missing)", "non_numeric"),
                   3001: ("", " ".join(lines[2999].split()), "18 whitespace-separated fields, found 17",
                          "wrong_field_count")}
    j = df.set_index("job_id")
    assert j.loc[4101, "requested_walltime_s"] == 1000.0 and j.loc[4101, "source_line"] == 4102
    assert j.loc[4201, "runtime_s"] == 0 and np.signbit(j.loc[4201, "runtime_s"])
    assert j.loc[4301, "cpu_util"] == 12.345678901234 / 100
    assert j.loc[4401, "cpu_util"] == 0.12345678901234567 / 100
    # the same load, line by line (every block one byte: the scanner sees no whole line longer than the block)
    monkeypatch.setattr(swf, "_BLOCK_BYTES", 1)
    _same_load(read_swf(p), (df, rep))
    with pytest.raises(TraceError, match=r"big.swf, line 1235.*average_cpu_time.*'x'"):
        read_swf(p, strict=True)


def test_scanner_sends_odd_lines_to_the_per_line_path():
    from dataloaders.swf import _scan_block

    ok = _swf_line(1).encode()
    odd = [b"; comment", ok.replace(b" 5 ", b" -0 "), ok.replace(b" 5 ", b" 1e3 "), ok.replace(b" 5 ", b" - "),
           ok.replace(b" 5 ", b" 1.2.3 "), ok.replace(b" 5 ", b" 1234567890123456 "), ok + b" 7",
           ok.replace(b" 5 ", b" 5\r "), ok.replace(b" 5 ", b" \xc3\xa9 "), ok.replace(b" 5 ", b" 5- "),
           ok.replace(b" 5 ", b" . "), ok.replace(b" 5 ", b"\x0b5 ")]
    clean, blank = _scan_block(b"\n".join([ok, b" \t\r", ok + b"\r", *odd, b""]))
    assert clean.tolist() == [True, False, True] + [False] * len(odd) + [False]
    assert blank.tolist() == [False, True, False] + [False] * len(odd) + [True]


def test_out_of_range_values_reject_only_their_record(tmp_path):
    # Found by an adversarial review: huge ids wrapped to negative int64, huge processor counts failed the whole
    # trace, a 1e300 s run time crashed the run later. Each is now one rejected record; the others load.
    p = tmp_path / "huge.swf"
    p.write_text(
        "1 0 0 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n"
        "100000000000000000000 10 0 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n"
        "3 20 0 100 1000000000000000000000000000000 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n"
        "4 30 0 1e300 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n"
        "5 40 0 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n")
    jobs, rep = read_swf(p)
    assert list(jobs["job_id"]) == [1, 5]
    reasons = {(i.line, i.reason) for i in rep.issues if i.action == "rejected"}
    assert reasons == {(2, "job_id_out_of_range"), (3, "processors_out_of_range"), (4, "time_out_of_range")}


def test_mixed_epoch_and_offset_submits_reject_the_minority(tmp_path):
    p = tmp_path / "mixed.swf"
    p.write_text("1 1641021254 0 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n"
                 "2 5 0 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n"
                 "3 60 0 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n")
    jobs, rep = read_swf(p)
    assert list(jobs["job_id"]) == [2, 3]
    [issue] = [i for i in rep.issues if i.reason == "submit_time_mixed_origin"]
    assert issue.line == 1 and "offsets" in issue.expected


def test_non_ascii_digit_is_a_rejected_record_not_a_crash(tmp_path):
    # '²' passes str.isdigit() but float() refuses it (found by the fuzz test)
    p = tmp_path / "sup.swf"
    p.write_bytes("\u00b2 0 0 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1\n2 0 0 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n"
                  .encode())
    jobs, rep = read_swf(p)
    assert list(jobs["job_id"]) == [2] and rep.rejected == 1
