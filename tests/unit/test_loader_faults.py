"""Field cases, round 2 (issue 12, kinds 3 and 8): one bad record never sinks a trace, in every loader.

Each expected number is worked out by hand from the few lines of the input written in the test.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from dataloaders.report import TraceError


def _issues(rep, action="rejected"):
    return {(i.line, i.field, i.reason): i for i in rep.issues if i.action == action}


# ---- Batsim: res 1e300 overflowed int64 and refused the whole trace ------------------------------------------
def test_batsim_huge_res_is_one_rejected_record(tmp_path):
    from dataloaders.batsim import read_batsim

    p = tmp_path / "w.json"
    p.write_text(json.dumps({"nb_res": 10, "jobs": [
        {"id": 3, "subtime": 5, "walltime": 100, "res": 1e300, "profile": "p"},
        {"id": 4, "subtime": 5, "walltime": 100, "res": 2, "profile": "p"},
        {"id": 10**30, "subtime": 6, "walltime": 100, "res": 1, "profile": "p"},
        {"id": 6, "subtime": 1e300, "walltime": 100, "res": 1, "profile": "p"},
        {"id": "w!123456789012345678901234567890", "subtime": 7, "res": 1, "profile": "p"}],
        "profiles": {"p": {"type": "delay", "delay": 50}}}))
    df, rep = read_batsim(p)
    assert (rep.records_read, rep.accepted, rep.rejected) == (5, 1, 4)
    bad = _issues(rep)
    assert set(bad) == {(1, "res", "nodes_out_of_range"), (3, "id", "job_id_out_of_range"),
                        (4, "subtime", "time_out_of_range"), (5, "id", "job_id_out_of_range")}
    assert bad[(1, "res", "nodes_out_of_range")].found == "1e+300"
    assert df["job_id"].tolist() == [4] and df["nodes"].tolist() == [2] and df["runtime_s"].tolist() == [50.0]
    with pytest.raises(TraceError, match=r"w.json, line 1.*res"):
        read_batsim(p, strict=True)


# ---- SWF: text user id, extra site columns, notes on accepted records, the count check ---------------------------
def test_swf_text_user_is_kept_as_the_user_name(tmp_path):
    from dataloaders.swf import read_swf

    p = tmp_path / "u.swf"
    p.write_text("; UnixStartTime: 1734800289\n"
                 "0 1734800289 0 1806 2 -1 -1 2 7200 -1 -1 user_A -1 -1 1 1 -1 -1\n"
                 "1 1734800300 0 10 1 -1 -1 1 60 -1 -1 user_B grp_1 -1 q_x 1 -1 -1\n"
                 "2 1734800301 0 10 1 -1 -1 1 x60 -1 -1 user_C -1 -1 1 1 -1 -1\n")
    df, rep = read_swf(p)
    assert (rep.records_read, rep.accepted, rep.rejected) == (3, 2, 1)
    assert set(_issues(rep)) == {(4, "requested_time", "non_numeric")}   # text only where a number is required
    assert df["user"].tolist() == ["user_A", "user_B"]
    assert df["account"].tolist() == ["", "grp_1"] and df["queue"].tolist() == ["1", "q_x"]
    assert df["submit_time_s"].tolist() == [0.0, 11.0]                  # 1734800300 - 1734800289
    assert df.attrs["time_origin_unix_s"] == 1734800289.0
    notes = " | ".join(rep.notes)
    assert "submit times are Unix epochs" in notes and "offsets" not in notes
    assert "2 accepted record(s) hold text in user_id (field 12): kept as the user name" in notes


def test_swf_extra_site_columns_are_ignored_with_a_note(tmp_path):
    from dataloaders.swf import read_swf

    p = tmp_path / "x.swf"
    p.write_text("1 0 0 100 4 -1 -1 4 200 -1 1 1 1 -1 1 1 -1 -1 {1,1,1,1} q_1d 1:ppn=4\n"
                 "2 50 0 100 4 -1 -1 4 200 -1 1 1 1 -1 1 1 -1 -1 {2,2,2,2} q_1d 1:ppn=4\n"
                 "3 60 0 100 4 -1 -1 4 200 -1 1 1 1 -1 1 1 -1\n")
    df, rep = read_swf(p, cores_per_node=2)
    assert (rep.records_read, rep.accepted, rep.rejected) == (3, 2, 1)
    assert set(_issues(rep)) == {(3, "", "wrong_field_count")}
    assert df["nodes"].tolist() == [2, 2] and df["submit_time_s"].tolist() == [0.0, 50.0]
    assert any("2 record(s) with site columns after the 18 standard fields" in n for n in rep.notes)


def test_swf_count_mismatch_is_a_trace_error_not_an_assert(tmp_path, monkeypatch):
    import dataloaders.swf as swf

    p = tmp_path / "a.swf"
    p.write_text("1 0 0 100 4 -1 -1 4 200 -1 1 1 1 -1 1 1 -1 -1\n")
    real = swf._parse_text

    def one_more(raw, issues):
        out = list(real(raw, issues))
        out[3] += 1                                                    # a record read but never accounted for
        return tuple(out)

    monkeypatch.setattr(swf, "_parse_text", one_more)
    with pytest.raises(TraceError, match=r"a.swf.*internal count mismatch.*2 record\(s\) read != accepted 1"):
        swf.read_swf(p)


# ---- Alibaba pods: time 0 is a valid time --------------------------------------------------------------------------
def test_alibaba_pod_scheduled_at_zero_is_valid(tmp_path):
    from dataloaders.alibaba import read_alibaba_pods

    p = tmp_path / "pods.csv"
    p.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
                 "scheduled_time\n"
                 "openb-pod-0000,12000,16384,1,1000,,LS,Running,0,12537496,0\n"
                 "openb-pod-0001,6000,12288,1,460,,LS,Running,427061,12902960,427061\n"
                 "openb-pod-0002,6000,12288,1,460,,LS,Pending,5,,\n"
                 "openb-pod-0003,6000,12288,1e300,1000,,LS,Running,5,9,6\n")
    df, rep = read_alibaba_pods(p)
    j = df.set_index("job_id")
    assert j.loc[0, "start_time_s"] == 0.0 and j.loc[0, "runtime_s"] == 12537496.0
    assert j.loc[1, "runtime_s"] == 12902960.0 - 427061.0
    assert np.isnan(j.loc[2, "start_time_s"])                            # only a missing value means "never"
    assert set(_issues(rep, "flagged")) == {(4, "scheduled_time", "never_scheduled")}
    assert set(_issues(rep)) == {(5, "num_gpu", "gpus_out_of_range")}


# ---- power datasets and sacct: counts and ids beyond int64 are rejected, never cast ---------------------------
def test_power_dataset_huge_and_fractional_node_counts(tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    from dataloaders.power_datasets import read_adastra

    p = tmp_path / "a.parquet"
    pd.DataFrame({"job_id": [1, 2, 3], "submit_time": ["2024-01-01T00:00:00"] * 3,
                  "start_time": ["2024-01-01T00:00:10"] * 3, "end_time": ["2024-01-01T00:01:10"] * 3,
                  "num_nodes_alloc": [2.0, 1e300, 2.5], "run_time": [60, 60, 60],
                  "job_state": ["COMPLETED"] * 3}).to_parquet(p)
    df, rep = read_adastra(p)
    assert (rep.accepted, rep.rejected) == (2, 1)
    assert set(_issues(rep)) == {(2, "nodes", "nodes_out_of_range")}
    assert set(_issues(rep, "repaired")) == {(3, "nodes", "fractional_nodes")}
    assert df.set_index("job_id")["nodes"].to_dict() == {1: 2, 3: 3}


def test_sacct_huge_job_id_and_node_count(tmp_path):
    from dataloaders.slurm import read_sacct

    p = tmp_path / "s.sacct"
    p.write_text("JobID|Submit|Start|End|NNodes|State\n"
                 "11|2024-01-01T00:00:00|2024-01-01T00:00:10|2024-01-01T00:01:10|2|COMPLETED\n"
                 "123456789012345678901234567890|2024-01-01T00:00:01|2024-01-01T00:00:10|2024-01-01T00:01:10|1|"
                 "COMPLETED\n"
                 "13|2024-01-01T00:00:02|2024-01-01T00:00:10|2024-01-01T00:01:10|1e300|COMPLETED\n")
    df, rep = read_sacct(p, timezone="UTC")
    assert (rep.records_read, rep.accepted, rep.rejected) == (3, 2, 1)
    assert set(_issues(rep)) == {(4, "NNodes", "nodes_missing")}
    assert df["nodes"].tolist() == [2, 1]
    # the 30-digit id is text: a new id above the largest numeric one (13, rejected later for its nodes) + 1
    assert df["job_id"].tolist() == [11, 14]
    assert df["trace_job_id"].tolist()[1] == "123456789012345678901234567890"


def test_sacct_time_beyond_int64_nanoseconds_is_one_bad_record(tmp_path):
    # pandas parses year 3024 at second resolution; converting it to nanoseconds raised OutOfBoundsDatetime and
    # sank the whole file (found by the fuzz test). Now: that submit time is missing, so that record is rejected.
    from dataloaders.slurm import read_sacct

    p = tmp_path / "y.sacct"
    p.write_text("JobID|Submit|Start|End|NNodes|State\n"
                 "11|2024-01-01T00:00:00|2024-01-01T00:00:10|2024-01-01T00:01:10|2|COMPLETED\n"
                 "12|3024-01-01T00:00:01|2024-01-01T00:00:10|2024-01-01T00:01:10|1|COMPLETED\n")
    df, rep = read_sacct(p, timezone="UTC")
    assert (rep.accepted, rep.rejected) == (1, 1)
    assert set(_issues(rep)) == {(3, "Submit", "submit_time_missing")}
    assert df["runtime_s"].tolist() == [60.0]


def test_alibaba_repeated_header_column_is_a_trace_error(tmp_path):
    """A pods CSV whose header names a column twice is refused in one message naming line 1 and the column
    (fuzz finding: it used to crash inside pandas with an AttributeError)."""
    from dataloaders.alibaba import read_alibaba_pods
    from dataloaders.report import TraceError

    p = tmp_path / "dup.csv"
    p.write_text("name,creation_time,creation_time,num_gpu,gpu_milli,scheduled_time,deletion_time\n"
                 "p1,0,0,1,1000,0,10\n")
    with pytest.raises(TraceError, match=r"creation_time.*more than once"):
        read_alibaba_pods(p)


# ---- one closing check for every loader (LoadReport.unusable) -------------------------------------------------------
def test_unusable_counts_strict_and_zero_jobs():
    from dataloaders.report import Issue, LoadReport

    ok = LoadReport(source="t.csv", loader="sacct", records_read=5, accepted=3, rejected=1, folded=1)
    assert ok.unusable(strict=True) is None                            # 5 == 3 + 1 + 1, no issue
    bad = LoadReport(source="t.csv", loader="sacct", records_read=5, accepted=3, rejected=1)
    assert bad.unusable(strict=False) == {"message": "internal count mismatch (loader bug, please report): 5 "
                                                    "record(s) read != accepted 3 + rejected 1 + folded 0"}
    rep = LoadReport(source="t.csv", loader="sacct", records_read=2, accepted=1, rejected=1,
                     issues=[Issue(7, 42, "Elapsed", "x", "a duration", "rejected", "unparseable")])
    assert rep.unusable(strict=False) is None
    assert rep.unusable(strict=True) == {"message": "strict mode: record rejected (unparseable)", "line": 7,
                                         "field": "Elapsed", "expected": "a duration", "found": "x"}
    none = LoadReport(source="t.csv", loader="sacct", records_read=1, rejected=1)
    assert "yields zero jobs (1 record(s) read, 1 rejected)" in none.unusable(strict=False)["message"]
