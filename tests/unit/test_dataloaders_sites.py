"""sacct, Batsim, Alibaba pods, PM100, F-DATA, Adastra, Lassen loaders: quirk fixtures, real values, cache, CLI."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import numpy as np
import pytest

from dataloaders import TraceError, load_trace
from dataloaders.alibaba import read_alibaba_pods
from dataloaders.batsim import read_batsim
from dataloaders.power_datasets import read_adastra, read_fugaku, read_lassen, read_pm100
from dataloaders.registry import available_loaders
from dataloaders.slurm import count_hostlist, expand_hostlist, parse_slurm_duration, read_sacct

DATA = Path(__file__).parents[1] / "data"
sys.path.insert(0, str(DATA))
import power_fixtures as pf  # noqa: E402


def reasons(rep):
    return {f"{a}:{r}": n for (a, r), n in rep.counts_by_reason().items()}


# ---- sacct ---------------------------------------------------------------------------------------------------
def test_slurm_durations_and_hostlists():
    assert parse_slurm_duration("1-02:03:04", bare_unit_s=1) == 86400 + 7384
    assert parse_slurm_duration("30") == 1800.0            # bare number = minutes for limits
    assert parse_slurm_duration("2-12") == 2 * 86400 + 12 * 3600
    assert parse_slurm_duration("05:03.250", bare_unit_s=1) == 303.25
    assert np.isnan(parse_slurm_duration("UNLIMITED")) and np.isnan(parse_slurm_duration("Partition_Limit"))
    with pytest.raises(ValueError):
        parse_slurm_duration("1:2:3:4")
    assert expand_hostlist("nid[001-003,007],login1") == ["nid001", "nid002", "nid003", "nid007", "login1"]
    assert count_hostlist("nid[001-004,007]") == 5
    assert count_hostlist("r[1-2]n[01-03]") == 6 and len(expand_hostlist("r[1-2]n[01-03]")) == 6
    with pytest.raises(ValueError):
        count_hostlist("nid[001-004")


def test_sacct_quirks():
    df, rep = read_sacct(DATA / "quirks.sacct", timezone="Europe/Rome")
    # 15 data lines: 3 steps folded, 4 rejected (requeued duplicate, bad submit, '|' in name, truncated line)
    assert (rep.records_read, rep.accepted, rep.rejected, rep.folded) == (15, 8, 4, 3)
    assert reasons(rep) == {"rejected:wrong_field_count": 2, "rejected:duplicate_job_id": 1,
                            "rejected:submit_time_missing": 1, "repaired:unknown_state": 1}
    # origin: first submit 2023-03-01T09:00 Rome = 08:00 UTC
    assert df.attrs["time_origin_unix_s"] == 1677657600.0
    assert df["job_id"].tolist() == [102, 103, 100, 104, 105, 106, 110, 109]
    j = df.set_index("job_id")
    assert j.loc[102, "nodes"] == 5 and j.loc[102, "runtime_s"] == 90000 and j.loc[102, "status"] == 0  # TIMEOUT
    assert j.loc[102, "requested_walltime_s"] == 86400
    assert j.loc[103, "nodes"] == 1 and np.isnan(j.loc[103, "requested_walltime_s"])  # NodeList count, UNLIMITED
    assert j.loc[104, "status"] == 5 and j.loc[104, "state"] == "CANCELLED"
    assert np.isnan(j.loc[105, "runtime_s"]) and np.isnan(j.loc[105, "start_time_s"])  # pending: not 0
    assert j.loc[105, "requested_walltime_s"] == 1800
    assert j.loc[106, "start_time_s"] == 13200.0  # the last (requeued) record is kept
    assert j.loc[110, "trace_job_id"] == "107_1"  # array task id from JobIDRaw
    # energy: .extern 5,760,000 J / 4 nodes / 3600 s = 400 W; TotalCPU 48 h / (128 x 1 h) = 0.375
    assert j.loc[100, "measured_node_power_W"] == 400.0 and j.loc[100, "cpu_util"] == 0.375
    assert df["measured_node_power_W"].notna().sum() == 1
    assert df["runtime_s"].sum() == 90000 + 600 + 3600 + 600 + 600 + 1200 + 600


def test_sacct_strict_timezone_dst_noheader(tmp_path):
    with pytest.raises(TraceError) as e:
        read_sacct(DATA / "quirks.sacct", strict=True)
    assert e.value.line == 10 and e.value.field == "job_id"
    p = tmp_path / "x.sacct"
    # no header (columns=), -X style, DST gap 02:30 on 2023-03-26 in Rome, trailing '|' (sacct -p)
    p.write_text("1|2023-03-26T01:00:00|2023-03-26T01:30:00|2023-03-26T03:30:00|01:00:00|1:00:00|2|COMPLETED|\r\n"
                 "2|2023-03-26T02:30:00|2023-03-26T04:00:00|2023-03-26T04:10:00|00:10:00|10|1|FAILED|\n")
    cols = ["JobID", "Submit", "Start", "End", "Elapsed", "Timelimit", "NNodes", "State", ""]
    df, rep = read_sacct(p, timezone="Europe/Rome", columns=cols)
    assert reasons(rep) == {"repaired:dst_nonexistent_time": 1}
    # 02:30 does not exist in Rome that day: moved forward by the 1 h gap (fold=0, read with CET) -> 03:30 CEST,
    # 1.5 h after 01:00 CET (issue #21 kind 11; was shifted to 03:00 before)
    assert df["submit_time_s"].tolist() == [0.0, 5400.0]
    assert df["runtime_s"].tolist() == [3600.0, 600.0] and df["nodes"].tolist() == [2, 1]
    with pytest.raises(TraceError, match="not a sacct -P header"):
        read_sacct(p)
    with pytest.raises(ValueError, match="time zone"):
        read_sacct(p, timezone="Mars/Olympus", columns=cols)


# ---- Batsim ---------------------------------------------------------------------------------------------------
def test_batsim_quirks(tmp_path):
    df, rep = read_batsim(DATA / "quirks_batsim.json")
    assert (rep.records_read, rep.accepted, rep.rejected) == (9, 6, 3)
    assert reasons(rep)["rejected:larger_than_machine"] == 1 and reasons(rep)["flagged:walltime_missing"] == 1
    assert df["job_id"].tolist() == [1, 2, 5, 7, 8, 3]
    assert df["nodes"].sum() == 4 + 1 + 1 + 2 + 1 + 2
    assert np.nansum(df["runtime_s"]) == 300.5 + 60 + 300.5 + 60
    assert df["runtime_s"].isna().sum() == 2  # unknown profile, parallel_homogeneous
    t = tmp_path / "trunc.json"
    t.write_bytes((DATA / "quirks_batsim.json").read_bytes()[:200])
    with pytest.raises(TraceError, match="not valid JSON"):
        read_batsim(t)


# ---- Alibaba ----------------------------------------------------------------------------------------------------
def test_alibaba_pods_quirks():
    df, rep = read_alibaba_pods(DATA / "quirks_pods.csv")
    assert (rep.records_read, rep.accepted, rep.rejected) == (10, 6, 4)
    assert df["job_id"].tolist() == [1, 2, 3, 4, 7, 8]
    assert df["gpus"].sum() == 0.25 + 2 + 1 + 0 + 0.5 + 0.5
    assert np.nansum(df["runtime_s"]) == 990 + 8900 + 990
    assert df.loc[df.job_id == 8, "gpu_spec"].item() == "A10,T4"  # quoted comma kept
    assert df["status"].tolist() == [-1, 0, 1, -1, 1, 1]


# ---- power datasets ---------------------------------------------------------------------------------------------
def test_pm100_power_and_profiles(tmp_path):
    res = read_pm100(pf.write_pm100(tmp_path / "job_table.parquet"))
    df, rep = res
    assert (rep.accepted, rep.rejected) == (4, 1)
    j = df.set_index("job_id")
    # job 11: mean(2000, 2400, 2200) / 2 nodes = 1100 W; job 10: mean(900, 1100, 1000) / 1 = 1000 W
    assert j.loc[11, "measured_node_power_W"] == 1100.0 and j.loc[10, "measured_node_power_W"] == 1000.0
    assert j.loc[10, "requested_walltime_s"] == 1800.0  # 30 min
    assert j.loc[12, "status"] == 5 and np.isnan(j.loc[13, "runtime_s"])
    prof = res.profiles
    assert prof.shape == (6, 3) and prof["job_id"].tolist() == [10, 10, 10, 11, 11, 11]
    assert prof["t_offset_s"].tolist() == [0, 20, 40, 0, 20, 40]
    assert prof.groupby("job_id")["node_power_W"].mean().tolist() == [1000.0, 1100.0]


def test_fugaku_adastra_lassen(tmp_path):
    df, rep = read_fugaku(pf.write_fugaku(tmp_path / "21_04.parquet"))
    assert df["measured_node_power_W"].tolist()[0] == 300.0  # 600 W job / 2 nodes
    assert df["nodes"].tolist() == [2, 1, 1, 3] and np.isnan(df["start_time_s"].iloc[3])  # 1970 placeholder
    assert df.attrs["time_origin_unix_s"] == 1617202800.0  # 2021-04-01 00:00 JST
    df2, _ = read_fugaku(tmp_path / "21_04.parquet", avgpcon_per_node=True)
    assert df2["measured_node_power_W"].iloc[0] == 600.0
    df, rep = read_adastra(pf.write_adastra(tmp_path / "ad.parquet"))
    assert reasons(rep) == {"rejected:nodes_missing": 1}
    assert df["measured_node_power_W"].tolist() == [600.0, 500.0]  # 120 kJ / (100 s x 2); 25 kJ / 50 s
    df, rep = read_lassen(pf.write_lassen(tmp_path / "last"))
    assert (rep.accepted, rep.rejected) == (3, 1)
    j = df.set_index("job_id")
    assert j.loc[9001, "measured_node_power_W"] == 1200.0  # 1.44 MJ / 2 nodes / 600 s
    assert j.loc[9002, "measured_node_power_W"] == 300.0 and j.loc[9002, "status"] == 0
    assert np.isnan(j.loc[9003, "measured_node_power_W"])


def test_registry_lists_new_loaders():
    names = set(available_loaders())
    assert {"sacct", "batsim", "alibaba_pods", "pm100", "fugaku", "adastra", "lassen", "swf"} <= names
    df, _ = load_trace(DATA / "quirks.sacct")
    assert len(df) == 8


# ---- cache ------------------------------------------------------------------------------------------------------
def test_cache_roundtrip(tmp_path, monkeypatch):
    monkeypatch.setenv("HPCTWIN_TRACE_CACHE_DIR", str(tmp_path / "c"))
    a = load_trace(DATA / "quirks.sacct", cache=True, timezone="Europe/Rome")
    assert len(list((tmp_path / "c").iterdir())) == 1
    b = load_trace(DATA / "quirks.sacct", cache=True, timezone="Europe/Rome")
    assert "loaded from cache" in b.report.notes[-1]
    assert b.jobs.equals(a.jobs) and b.jobs.attrs["time_origin_unix_s"] == a.jobs.attrs["time_origin_unix_s"]
    assert b.report.rejected == 4 and len(b.report.issues) == len(a.report.issues)
    load_trace(DATA / "quirks.sacct", cache=True, timezone="UTC")  # other options -> other key
    assert len(list((tmp_path / "c").iterdir())) == 2
    pm = pf.write_pm100(tmp_path / "job_table.parquet")
    load_trace(pm, "pm100", cache=True)
    c = load_trace(pm, "pm100", cache=True)
    assert c.profiles.shape == (6, 3)
    assert not [p for p in (tmp_path / "c").iterdir() if p.name.startswith(".")]  # no temp folders left


@pytest.mark.parametrize("damage", ["flip-byte", "truncate", "extra-file", "no-manifest"])
def test_damaged_cache_entry_is_parsed_again(tmp_path, monkeypatch, damage):
    """Trace cache entries are checked against the SHA-256 manifest written with them; a damaged one is removed and
    the trace parsed again (issue #12 kind 7: caches verified by content hash before use)."""
    monkeypatch.setenv("HPCTWIN_TRACE_CACHE_DIR", str(tmp_path / "c"))
    a = load_trace(DATA / "quirks.sacct", cache=True, timezone="UTC")
    (entry,) = list((tmp_path / "c").iterdir())
    manifest = json.loads((entry / "manifest.json").read_text())
    assert set(manifest) == {"jobs.parquet", "report.json"}
    jobs = entry / "jobs.parquet"
    raw = bytearray(jobs.read_bytes())
    if damage == "flip-byte":
        raw[len(raw) // 2] ^= 0xFF
        jobs.write_bytes(bytes(raw))
    elif damage == "truncate":
        jobs.write_bytes(bytes(raw[:100]))
    elif damage == "extra-file":
        (entry / "planted.parquet").write_bytes(b"x")
    else:
        (entry / "manifest.json").unlink()
    b = load_trace(DATA / "quirks.sacct", cache=True, timezone="UTC")
    assert not any("loaded from cache" in n for n in b.report.notes)  # parsed again, not read from the damage
    assert b.jobs.equals(a.jobs)
    c = load_trace(DATA / "quirks.sacct", cache=True, timezone="UTC")  # and stored again, verified
    assert "loaded from cache" in c.report.notes[-1] and c.jobs.equals(a.jobs)
    assert stat.S_IMODE((tmp_path / "c").stat().st_mode) == 0o700


def test_shared_trace_cache_folder_is_refused(tmp_path, monkeypatch):
    from jobs.cachedirs import CacheTrustError

    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    monkeypatch.setenv("HPCTWIN_TRACE_CACHE_DIR", str(shared))
    with pytest.raises(CacheTrustError, match="trace cache folder is writable by other users"):
        load_trace(DATA / "quirks.sacct", cache=True, timezone="UTC")


# ---- CLI --------------------------------------------------------------------------------------------------------
def test_cli_validate_exit_codes(tmp_path, capsys):
    from scheduler_sim.app.cli import main
    clean = tmp_path / "ok.sacct"
    clean.write_text("JobID|Submit|Start|End|Elapsed|Timelimit|NNodes|State\n"
                     "1|2024-01-01T00:00:00|2024-01-01T00:00:10|2024-01-01T00:01:10|00:01:00|10|2|COMPLETED\n")
    assert main(["validate", str(clean)]) == 0
    assert "accepted 1" in capsys.readouterr().out
    assert main(["validate", str(DATA / "quirks.sacct"), "--timezone", "Europe/Rome"]) == 1
    assert main(["validate", str(DATA / "quirks.sacct"), "--strict"]) == 2
    bad = tmp_path / "bad.json"
    bad.write_text("{\"jobs\": [")
    assert main(["validate", str(bad)]) == 2
    assert "not valid JSON" in capsys.readouterr().err
    assert main(["validate", str(tmp_path / "missing.sacct")]) == 2


# ---- sacct: block / chunk boundaries and the reference per-line reader -----------------------------------------
def _sacct_rows(n):
    rows = ["JobID|User|Submit|Start|End|Elapsed|Timelimit|NNodes|State|ConsumedEnergyRaw"]
    for i in range(1, n + 1):
        s = f"2024-01-01T{i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}"
        rows.append(f"{i}|u{i % 3}|{s}|{s}|{s}|00:10:00|30|2|COMPLETED|")
        rows.append(f"{i}.batch||{s}|{s}|{s}|00:10:00||1|COMPLETED|{1200 * i}")
        rows.append(f"{i}.extern||{s}|{s}|{s}|00:10:00||2|COMPLETED|{2400 * i}")
    return rows


def _same_sacct(a, b):
    pd = pytest.importorskip("pandas")
    pd.testing.assert_frame_equal(a[0], b[0], check_exact=True)
    assert repr(a[1].to_dict()) == repr(b[1].to_dict())


@pytest.mark.parametrize("block, chunk", [(1, 1), (50, 2), (300, 7), (1 << 22, 250_000)])
def test_sacct_chunks_inside_folded_jobs(tmp_path, monkeypatch, block, chunk):
    import dataloaders.slurm as slurm

    rows = _sacct_rows(300)
    rows[400] = rows[400] + "|extra"                 # line 401: a '|' too many, in the middle of a chunk
    rows[500] = "\r"                                 # line 501 (job 167 .batch): blank, CR only
    rows[598] = rows[598].replace("|u2|", "|u\u00e9|")  # job 200: non-ASCII user, utf-8 kept
    rows[700] = rows[700] + "\r"                     # CR line end: stripped, pandas path for that chunk
    p = tmp_path / "big.sacct"
    p.write_text("\n".join(rows) + "\n")
    monkeypatch.setattr(slurm, "_BLOCK_BYTES", block)
    monkeypatch.setattr(slurm, "_CHUNK_LINES", chunk)
    df, rep = read_sacct(p)
    # 900 lines, 1 blank (not a record); the job line 401 (job 134) has a field too many, so its .batch and
    # .extern steps (lines 402, 403) are rejected as steps without a job; 600 - 1 - 2 steps folded
    assert (rep.records_read, rep.accepted, rep.rejected, rep.folded) == (899, 299, 3, 597)
    assert {(i.line, i.reason) for i in rep.issues if i.action == "rejected"} == {
        (401, "wrong_field_count"), (402, "step_without_job"), (403, "step_without_job")}
    bad = next(i for i in rep.issues if i.line == 401)
    assert bad.found == rows[400][:80] and bad.expected.startswith("10 '|'-separated fields (found 11;")
    j = df.set_index("job_id")
    # energy: the largest step (.extern 2400 i J) over 2 nodes and 600 s -> 2 i W
    assert j.loc[10, "measured_node_power_W"] == 20.0 and j.loc[299, "measured_node_power_W"] == 598.0
    assert j.loc[200, "user"] == "u\u00e9" and j.loc[234, "source_line"] == 701 and j.loc[234, "runtime_s"] == 600
    assert 134 not in j.index and j.loc[167, "measured_node_power_W"] == 334.0
    # the same as the reference reader that splits the decoded text line by line
    monkeypatch.setattr(slurm, "_read_rows_bytes",
                        lambda data, enc, src, columns, delim, issues: slurm._read_rows(data.decode(enc), src,
                                                                                       columns, delim, issues))
    _same_sacct(read_sacct(p), (df, rep))
