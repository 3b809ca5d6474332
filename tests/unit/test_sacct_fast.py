"""sacct fast paths (issue #16 item 7): the one-pass pyarrow reader, the plain-ISO time conversion and the integer
step keys give exactly what the reference paths give, bad records included (line, field, reason)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dataloaders._common as common
import dataloaders.slurm as slurm
from dataloaders.slurm import read_sacct

HEADER = "JobID|JobIDRaw|User|Account|Partition|Submit|Start|End|Elapsed|Timelimit|NNodes|NodeList|State|ConsumedEnergyRaw"


def _rows() -> list[str]:
    """A trace mixing every quirk the fast paths must hand on to the general code (job i: line 2i, step 2i+1)."""
    odd = {  # job -> (field, text): Submit/Start/End texts the plain-ISO path must not take
        7: ("Submit", "2023-02-30T07:07:00"),          # no such day: submit missing, rejected
        8: ("Start", "1699999999"),                    # Unix seconds
        9: ("Start", "2023-03-26T09:09:00+02:00"),     # explicit offset
        10: ("End", "3024-03-26T10:10:00"),            # year 3024: bad time
        11: ("Submit", "Unknown"),                     # missing submit: rejected
        13: ("Start", " 2023-03-26T13:13:00 "),        # spaces around a plain time
        14: ("End", "2023-03-26T14:14:60"),            # second 60
        15: ("Start", "2023-03-26T02:30:00"),          # Rome: a local time that does not exist
        16: ("User", "u\u00e9"),                       # non-ASCII text
        17: ("State", "WEIRD"),                        # unknown state
    }
    names = HEADER.split("|")
    r = [HEADER]
    for i in range(1, 41):
        s = f"2023-03-26T{i % 24:02d}:{i % 60:02d}:00"
        job = dict(zip(names, [str(i), str(i), f"u{i % 3}", "a", "batch", s, s, s, "00:10:00", "30", "2",
                               "nid[01-02]", "COMPLETED", ""]))
        if i in odd:
            job[odd[i][0]] = odd[i][1]
        r.append("|".join(job[n] for n in names))
        r.append(f"{i}.batch|{i}.batch||||{s}|{s}|{s}|00:10:00||1|nid01|COMPLETED|{1200 * i}")
    r[3] = r[3] + "|extra"                                                        # line 4: a field too many
    r[10] = "   "                                                                 # line 11: blank (spaces)
    r[40] = "99.batch|99.batch||||2023-03-26T15:15:00|||00:10:00||1||COMPLETED|5"  # line 41: orphan step
    r[45] = r[45][:20]                                                            # line 46: truncated job 23
    return r


def _same(a, b) -> None:
    pd.testing.assert_frame_equal(a[0], b[0], check_exact=True)
    assert repr(a[1].to_dict()) == repr(b[1].to_dict())


@pytest.mark.parametrize("tz", ["UTC", "Europe/Rome"])
def test_fast_reader_and_times_equal_reference(tmp_path, monkeypatch, tz):
    p = tmp_path / "q.sacct"
    p.write_text("\n".join(_rows()) + "\n")
    calls = []
    real = slurm._read_rows_fast
    monkeypatch.setattr(slurm, "_read_rows_fast", lambda *a: calls.append(1) or real(*a))
    fast = read_sacct(p, timezone=tz)
    assert calls and real(p.read_bytes(), "utf-8", str(p), None, "|", common.Issues()) is not None  # fast path ran
    df, rep = fast
    got = {(i.line, i.reason) for i in rep.issues}
    # the bad records, each reported with its line (header = line 1; job i on line 2i)
    assert {(4, "wrong_field_count"), (5, "step_without_job"), (46, "wrong_field_count"), (47, "step_without_job"),
            (41, "step_without_job"), (14, "submit_time_missing"), (22, "submit_time_missing"),
            (20, "bad_time"), (34, "unknown_state")} <= got
    assert (30, "dst_nonexistent_time") in got if tz == "Europe/Rome" else (30, "dst_nonexistent_time") not in got
    assert 11 not in {i.line for i in rep.issues}  # a blank line is not a record
    assert rep.records_read == 80 - 1 and rep.accepted == 40 - 4  # 80 lines, 1 blank; jobs 2, 7, 11, 23 rejected
    j = df.set_index("job_id")
    assert j.loc[16, "user"] == "u\u00e9" and j.loc[8, "start_time_s"] + df.attrs["time_origin_unix_s"] == 1699999999
    # the reference: the block reader and the general time path for every value
    monkeypatch.setattr(slurm, "_read_rows_fast", lambda *a: None)
    monkeypatch.setattr(common, "_iso_plain_to_epoch", lambda values, tz: None)
    _same(read_sacct(p, timezone=tz), fast)


def test_dst_times_fast_equals_general(monkeypatch):
    # Rome 2023-03-26 02:30 does not exist, 2023-10-29 02:30 happens twice: both go to the general path
    v = pd.Series(["2023-03-26T01:59:59", "2023-03-26T02:30:00", "2023-10-29T02:30:00", "2023-10-29T03:00:00",
                   "2023-07-01T12:00:00", "", "None", "1699999999"], dtype="str")
    lines = np.arange(2, 2 + len(v))
    i1, i2 = common.Issues(), common.Issues()
    a = common.local_times_to_epoch(v, "Europe/Rome", "Submit", lines, None, i1)
    monkeypatch.setattr(common, "_iso_plain_to_epoch", lambda values, tz: None)
    b = common.local_times_to_epoch(v, "Europe/Rome", "Submit", lines, None, i2)
    np.testing.assert_array_equal(a, b)
    assert i1.items == i2.items and sorted(i.line for i in i1.items) == [3, 4]  # skipped hour, repeated hour
    # 01:59:59 CET = 00:59:59 UTC; 12:00 CEST = 10:00 UTC (by hand from the Unix epoch)
    assert a[0] == 1679792399.0 and a[4] == 1688205600.0 and np.isnan(a[5]) and a[7] == 1699999999.0


def test_step_keys_compare_text_not_number(tmp_path):
    # '007.batch' is a step of job '007', not of job '7': ids are compared as text (leading zero: general keys)
    p = tmp_path / "z.sacct"
    p.write_text("JobID|Submit|Start|End|NNodes|ConsumedEnergyRaw\n"
                 "7|2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T01:00:00|2|\n"
                 "007.batch|2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T01:00:00|2|7200000\n"
                 "8|2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T01:00:00|2|\n"
                 "8.batch|2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T01:00:00|2|3600000\n")
    df, rep = read_sacct(p)
    assert [(i.line, i.reason) for i in rep.issues] == [(3, "step_without_job")]
    j = df.set_index("job_id")
    # job 8: 3,600,000 J / 2 nodes / 3600 s = 500 W; job 7 has no step of its own
    assert j.loc[8, "measured_node_power_W"] == 500.0 and np.isnan(j.loc[7, "measured_node_power_W"])


def test_text_columns_share_string_objects(tmp_path):
    p = tmp_path / "u.sacct"
    p.write_text("\n".join(_rows()[:1] + [r for r in _rows()[1:] if ".batch" not in r][:10]) + "\n")
    df, _ = read_sacct(p)
    users = df["user"].tolist()
    assert set(users) <= {"u0", "u1", "u2"} and len({id(u) for u in users}) == len(set(users))
