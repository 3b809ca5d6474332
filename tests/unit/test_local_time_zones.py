"""Local time zones in `run` and `sweep` (issue #21 kind 11; field case sacct-timezone-run).

Before: `hpctwin run` read sacct local times as UTC and had no zone option, so a 40-minute wait across the spring
DST change of 2022-03-13 in Chicago (01:30 CST -> 03:10 CDT) came out as 1 h 40 min (mean 1.67 h).
"""

import datetime as dt

import h5py
import numpy as np
import pytest

from scheduler_sim.app.cli import main
from scheduler_sim.app.config import load_config
from scheduler_sim.app.runner import run_one
from tests.conftest import write_tiny4  # the tiny 4-node machine (tests/conftest.py)


# the field case: two jobs submitted 01:30 / 01:40 CST, started 03:10 / 03:20 CDT on 2022-03-13 (spring forward)
DST_SACCT = """JobID|JobIDRaw|User|Account|Partition|Submit|Start|End|Elapsed|Timelimit|NNodes|NCPUS|State
1|1|alice|phys|batch|2022-03-13T01:30:00|2022-03-13T03:10:00|2022-03-13T04:10:00|01:00:00|02:00:00|1|1|COMPLETED
2|2|bob|phys|batch|2022-03-13T01:40:00|2022-03-13T03:20:00|2022-03-13T04:20:00|01:00:00|02:00:00|1|1|COMPLETED
"""


def _case(tmp_path, timezone: str | None = None):
    write_tiny4(tmp_path)
    (tmp_path / "dst.sacct").write_text(DST_SACCT)
    tz = f'timezone = "{timezone}"\n' if timezone else ""
    (tmp_path / "dst.toml").write_text(
        'name = "dst"\nsystem = "tiny4.toml"\n[trace]\npath = "dst.sacct"\nformat = "sacct"\n' + tz +
        'window_start_days = 0.0\nwindow_days = 1.0\n[scheduler]\npolicy = "replay"\n[cooling]\nenabled = false\n'
        '[output]\nprogress = false\n')
    return tmp_path / "dst.toml"


def _waits(path):
    with h5py.File(path) as f:
        return f["jobs/wait_s"][()]


def test_local_time_zone_of_sacct_times_in_run_and_sweep(tmp_path, capsys):
    cfg = _case(tmp_path)
    # by hand: 01:30 CST = 07:30 UTC, 03:10 CDT = 08:10 UTC -> 40 min; likewise 01:40 CST -> 03:20 CDT
    out = tmp_path / "cli.h5"
    assert main(["run", str(cfg), "--timezone", "America/Chicago", "--quiet", "--out", str(out)]) == 0
    np.testing.assert_array_equal(_waits(out), [2400.0, 2400.0])
    # the same from the [trace] table of the configuration
    (tmp_path / "cfg").mkdir()
    res = run_one(load_config(_case(tmp_path / "cfg", "America/Chicago")), None)
    assert res.summary["mean_wait_s"] == pytest.approx(2400.0, abs=1e-9)
    # without a zone the times are UTC wall clock: 1 h 40 min (the old answer, still right for UTC)
    res = run_one(load_config(cfg), None)
    assert res.summary["mean_wait_s"] == pytest.approx(6000.0, abs=1e-9)
    # a sweep takes the zone too (--timezone sets trace.timezone of the base run)
    (tmp_path / "study.toml").write_text('name = "dstsweep"\n[base]\nsystem = "tiny4.toml"\n[base.trace]\n'
                                         'path = "dst.sacct"\nformat = "sacct"\nwindow_start_days = 0.0\n'
                                         'window_days = 1.0\n[base.cooling]\nenabled = false\n[base.output]\n'
                                         'progress = false\n[axes]\n"scheduler.policy" = ["replay"]\n')
    sw = tmp_path / "sw"
    assert main(["sweep", str(tmp_path / "study.toml"), "--timezone", "America/Chicago", "--out", str(sw)]) == 0
    (run,) = sorted(p for p in sw.glob("*.h5") if p.name != "summary.h5")
    np.testing.assert_array_equal(_waits(run), [2400.0, 2400.0])
    # an unknown zone is one line, exit 2
    assert main(["run", str(cfg), "--timezone", "Mars/Olympus", "--quiet", "--out", str(tmp_path / "x.h5")]) == 2
    assert "Mars/Olympus" in capsys.readouterr().err
    # a zone for a trace whose times have none (SWF offsets): refused in one line, not a traceback
    (tmp_path / "t.swf").write_text("1 0 0 60 1 -1 -1 1 60 -1 1 1 1 -1 1 -1 -1 -1\n")
    assert main(["run", "--system", str(tmp_path / "tiny4.toml"), "--trace", str(tmp_path / "t.swf"), "--no-cooling",
                 "--start-day", "0", "--timezone", "UTC", "--quiet", "--out", str(tmp_path / "y.h5")]) == 2
    assert "the swf loader" in capsys.readouterr().err


def test_dst_repeated_hour_takes_first_occurrence_and_skipped_hour_moves_forward_by_the_gap(tmp_path):
    from dataloaders.slurm import read_sacct

    p = tmp_path / "amb.sacct"
    p.write_text("JobID|Submit|Start|End|NNodes|State|Timelimit\n"
                 "1|2022-11-06T01:30:00|2022-11-06T01:40:00|2022-11-06T02:40:00|1|COMPLETED|02:00:00\n"
                 "2|2022-03-13T02:30:00|2022-03-13T03:40:00|2022-03-13T04:40:00|1|COMPLETED|02:00:00\n")
    df, rep = read_sacct(p, timezone="America/Chicago")
    t = (df.set_index("job_id")["submit_time_s"] + df.attrs["time_origin_unix_s"]).to_dict()
    utc = dt.timezone.utc
    # 01:30 on 2022-11-06 happens twice in Chicago; first occurrence (CDT, UTC-5) = 06:30 UTC
    assert t[1] == dt.datetime(2022, 11, 6, 6, 30, tzinfo=utc).timestamp()
    # 02:30 on 2022-03-13 does not exist; read with the offset before the change (CST, UTC-6) = 08:30 UTC, i.e.
    # 03:30 CDT: moved forward by the 1 h gap (not to 03:00)
    assert t[2] == dt.datetime(2022, 3, 13, 8, 30, tzinfo=utc).timestamp()
    got = {(i.line, i.field, i.reason) for i in rep.issues}
    assert got == {(2, "Submit", "dst_ambiguous_time"), (2, "Start", "dst_ambiguous_time"),
                   (3, "Submit", "dst_nonexistent_time")}
    text = rep.summary()  # both kinds counted and listed in the load report
    assert "repaired       2  dst_ambiguous_time" in text and "repaired       1  dst_nonexistent_time" in text


def test_dst_rule_is_the_same_in_the_power_dataset_loaders():
    # PM100 / Fugaku / Adastra / Lassen read naive local times through dataloaders.power_datasets._epoch: the same
    # fold=0 rule, reported per record (before: both became NaN, so the job was rejected as "submit missing")
    from dataloaders._common import Issues
    from dataloaders.power_datasets import _epoch

    issues = Issues()
    col = __import__("pandas").Series(["2023-03-26 02:30:00", "2023-10-29 02:30:00", "2023-07-01 12:00:00"])
    v = _epoch(col, "Europe/Rome", issues, "submit_time", np.array([7, 8, 9]))
    utc = dt.timezone.utc
    assert v.tolist() == [dt.datetime(2023, 3, 26, 1, 30, tzinfo=utc).timestamp(),    # 02:30 CET = 03:30 CEST
                          dt.datetime(2023, 10, 29, 0, 30, tzinfo=utc).timestamp(),   # first 02:30: CEST
                          dt.datetime(2023, 7, 1, 10, 0, tzinfo=utc).timestamp()]
    assert sorted((i.line, i.job_id, i.reason) for i in issues.items) == [(1, 7, "dst_nonexistent_time"),
                                                                          (2, 8, "dst_ambiguous_time")]
