"""Kind 13 (issue #21): a load that rejects every (or most) record says why, with the first line, field and value.

Field case (../shared/cases/field-3/all-rejected-no-reason): three requests whose arrival column is date-time
text, mapped without ``time_unit=datetime``; the load said "3 read, 3 rejected" and nothing else.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dataloaders import TraceError
from dataloaders.request_csv import RequestCSVLoader
from dataloaders.swf import read_swf
from scheduler_sim.app.cli import main

CASES = Path(__file__).resolve().parents[2].parent / "shared" / "cases" / "field-3"
CSV = ("request_id,gmt_create,prompt_length,num_inference_steps\n"
       "r1,2024-11-15 16:57:50,512,30\nr2,2024-11-15 16:57:53,768,30\nr3,2024-11-15 16:58:01,256,20\n")
MAP = ["--map", "arrival=gmt_create", "--map", "prompt=prompt_length", "--map", "output=num_inference_steps"]


def test_all_rejected_load_gives_reasons_and_the_datetime_hint(tmp_path, capsys):
    p = tmp_path / "datetime_arrivals.csv"
    p.write_text(CSV)
    assert main(["validate", "--format", "request_csv", *MAP, str(p)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"hpctwin validate: {p}: cannot be used: {p}: the trace yields zero requests (3 record(s) read, 3 "
                   f"rejected); most common reasons: bad_time x3 (first: line 2, gmt_create = '2024-11-15 16:57:50', "
                   f"expected a time (s)); hint: gmt_create holds date-time text ('2024-11-15 16:57:50', line 2) where "
                   f"a number was expected: give --map time_unit=datetime; expected >= 1 valid request")
    # the hint is right: with it every request loads
    assert main(["validate", "--format", "request_csv", *MAP, "--map", "time_unit=datetime", str(p)]) == 0


@pytest.mark.skipif(not CASES.is_dir(), reason="field cases (../shared/cases/field-3) not beside the checkout")
def test_all_rejected_load_gives_reasons_field_case(capsys):
    p = CASES / "all-rejected-no-reason" / "datetime_arrivals.csv"
    assert main(["validate", "--format", "request_csv", *MAP, str(p)]) == 2
    err = capsys.readouterr().err
    assert "bad_time x3 (first: line 2, gmt_create = '2024-11-15 16:57:50'" in err
    assert "give --map time_unit=datetime" in err


def test_all_rejected_load_gives_reasons_ranked_with_first_line_each(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("t,p,o\n1,x,5\n2,0,5\n3,4,-1\n4,y,5\n5,4,z\n")
    with pytest.raises(TraceError) as ei:
        RequestCSVLoader().load(p, arrival="t", prompt="p", output="o")
    msg = str(ei.value)
    # 3 bad prompt counts (lines 2, 3, 5) rank before 2 bad output counts (lines 4, 6)
    assert ("most common reasons: bad_prompt_tokens x3 (first: line 2, p = 'x', expected an integer in [1, 2**31]); "
            "bad_output_tokens x2 (first: line 4, o = '-1', expected an integer in [1, 2**31])") in msg
    assert "hint" not in msg


def test_all_rejected_load_gives_reasons_for_batch_loaders_and_csv_given_as_swf(tmp_path):
    p = tmp_path / "jobs.swf"
    p.write_text("job,submit,wait,run,procs\n1,0,0,3600,4\n2,10,0,60,2\n")
    with pytest.raises(TraceError) as ei:
        read_swf(p)
    first = str(ei.value).splitlines()[0]
    assert first.startswith(f"{p}: the trace yields zero jobs (3 record(s) read, 3 rejected); most common reasons: "
                            f"wrong_field_count x3 (first: line 1, ")
    assert "hint: the rejected lines hold commas: this looks like a CSV, not SWF; give --format" in first


def test_many_rejected_load_summary_gives_reasons(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("t,p,o\n1,5,5\n2024-01-01 00:00:00,5,5\n2024-01-01 00:00:01,5,5\n")
    res = RequestCSVLoader().load(p, arrival="t", prompt="p", output="o")
    s = res.report.summary()
    assert res.report.accepted == 1 and res.report.rejected == 2
    assert "  most records were rejected (2 of 3); most common reasons: bad_time x2 (first: line 3, t = " in s
    assert "  hint: t holds date-time text ('2024-01-01 00:00:00', line 3) where a number was expected: give --map " \
           "time_unit=datetime" in s
