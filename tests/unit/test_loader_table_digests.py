"""Loaded job tables and load reports stay bit-identical through loader refactors (issue #27 item 3).

Every shipped sample of every registered loader is loaded and digested: each column's name, dtype and bytes (text
columns by their repr), the table's ``attrs``, the report's ``to_dict()`` and its full ``summary()`` text (every
example). The digests below were recorded on main BEFORE the field tables replaced the hand-written checks
(``python tests/unit/test_loader_table_digests.py`` prints them); a change of a loaded value, an issue's line, field,
text or order, a note or a count changes a digest.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
SHARED = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT / "tests" / "data"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from dataloaders.registry import load_trace  # noqa: E402

REQUEST_MAP = {"arrival": "t_ms", "prompt": "in", "output": "out", "prefix": "blocks", "time_unit": "ms"}


_TMP: list[str] = []  # the folder the fixtures were written to (it differs from run to run)


def _clean(text: str) -> str:
    for t in _TMP:
        text = text.replace(t, "<tmp>")
    return text.replace(str(ROOT), "<root>").replace(str(SHARED), "<shared>")


def _table_digest(df: pd.DataFrame, report) -> str:
    h = hashlib.sha256()
    for c in df.columns:
        col = df[c]
        h.update(f"{c}:{col.dtype}:".encode())
        if col.dtype.kind in "biufcmM":
            h.update(np.ascontiguousarray(col.to_numpy()).tobytes())
        else:
            h.update(repr(col.tolist()).encode())
    h.update(_clean(json.dumps(df.attrs, sort_keys=True, default=str)).encode())
    h.update(_clean(json.dumps(report.to_dict(), sort_keys=True, default=str)).encode())
    h.update(_clean(report.summary(max_examples=10**9)).encode())
    return h.hexdigest()[:24]


#: One sacct record per check of the sacct field tables (and the quirks around them).
FAULTS_SACCT = """JobID|JobIDRaw|User|Submit|Start|End|ElapsedRaw|TimelimitRaw|NNodes|NodeList|NCPUS|TotalCPU|State|ConsumedEnergy
10|10|u1|2024-03-01T10:00:00|2024-03-01T10:00:05|2024-03-01T10:10:05|600|30|2|nid[001-002]|8|01:30:00|COMPLETED|1.5K
10.batch|10.batch||2024-03-01T10:00:00|2024-03-01T10:00:05|2024-03-01T10:10:05|600||1|nid001|8|00:10:00|COMPLETED|2.5K
11|11|u2|2024-03-01T10:01:00|2024-03-01T10:02:00|2024-03-01T10:01:00||Partition_Limit|1|nid003|4|00:00:10|FAILED|
12|12|u2|2024-03-01T10:02:00|2024-03-01T10:03:00|2024-03-01T10:04:00|abc|UNLIMITED|0|nid[004-006]|4|00:01:00|TIMEOUT|
13|13|u3|2024-03-01T10:03:00|Unknown|Unknown|0|0|1||4|00:00:00|PENDING|
14|14|u3|2024-03-01T10:04:00|2024-03-01T10:05:00|2024-03-01T10:06:00|60|10|0|nid[9-3]|4|00:00:30|CANCELLED by 7|
15|15|u3|2024-03-01T10:05:00|2024-03-01T10:06:00|2024-03-01T10:07:00|60|10|16|nid[001-016]|4|00:00:30|RUNNING|3M
16_1|16_1|u4|2024-03-01T10:06:00|2024-03-01T10:07:00|2024-03-01T10:08:00|60|1-00:00|1|nid007|2|00:01:00|OUT_OF_MEMORY|
16_2|16_2|u4|2024-03-01T10:06:00|2024-03-01T10:07:00|2024-03-01T10:08:00|60|bad|1|nid007|2|1-00:00:00|REQUEUED|
99.extern|99.extern||2024-03-01T10:06:00|2024-03-01T10:07:00|2024-03-01T10:08:00|60||1|nid007|2||COMPLETED|5
17|17|u5||2024-03-01T10:07:00|2024-03-01T10:08:00|60|10|1|nid008|2|00:00:01|WEIRD|
18|18|u5|2024-03-01T10:08:00|2024-03-01T10:09:00|2024-03-01T10:10:00|60|10|0||0|00:00:01|NODE_FAIL|
"""


#: One pod per check of the Alibaba pod list's tables.
FAULTS_PODS = """name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
openb-pod-0001,4000,15000,1,250,,BE,Running,0,,100
pod-without-number,1000,2000,0,0,,BE,Pending,5,,6
openb-pod-99999999999999999999,1000,2000,0,0,,BE,Pending,5,,6
openb-pod-0002,1000,2000,0,0,,BE,Succeeded,1e20,,6
openb-pod-0003,1000,2000,0,0,,BE,Succeeded,7,1e20,8
openb-pod-0004,1000,2000,99999999999,1000,,BE,Succeeded,7,20,8
openb-pod-0005,-5,2000,0,0,,BE,Succeeded,7,20,8
openb-pod-0006,1000,2000,1,1000,V100M32,LS,Succeeded,9,,
openb-pod-0007,1000,2000,1,1000,"V100M32|P100",LS,Exploded,9,30,10
openb-pod-0008,inf,2000,1,1000,,LS,Failed,9,30,10
openb-pod-0009,1000,2000,1,1500,,LS,Failed,9,30,10
openb-pod-0010,1000,2000,0.5,1000,,LS,Failed,,30,10
openb-pod-0011,500,1024,2,300,T4,LS,Succeeded,12,14,13
"""

#: One job per check of the Batsim tables.
FAULTS_BATSIM = """{"nb_res": 8, "jobs": [
  {"id": 1, "subtime": 0, "walltime": 100, "res": 2, "profile": "d"},
  7,
  {"subtime": 1, "walltime": 100, "res": 2, "profile": "d"},
  {"id": 99999999999999999999, "subtime": 1, "walltime": 100, "res": 2, "profile": "d"},
  {"id": "w!x", "subtime": 2, "walltime": 100, "res": 2, "profile": "d"},
  {"id": 3, "subtime": 1e20, "walltime": 100, "res": 2, "profile": "d"},
  {"id": 4, "subtime": 3, "walltime": 100, "res": 0, "profile": "d"},
  {"id": 5, "subtime": 3, "walltime": 100, "res": 1e12, "profile": "d"},
  {"id": 6, "subtime": 3, "walltime": 100, "res": 1.5, "profile": "d"},
  {"id": 7, "subtime": 4, "walltime": 1e30, "res": 1, "profile": "bad"},
  {"id": 8, "subtime": "x", "walltime": 100, "res": 1, "profile": "d"},
  {"id": 9, "subtime": 5, "walltime": -1, "res": 9, "profile": "d"},
  {"id": 10, "subtime": 5, "res": 1, "profile": "u"}
], "profiles": {"d": {"type": "delay", "delay": 50}, "bad": {"type": "delay", "delay": -3},
                "u": {"type": "parallel"}}}
"""


#: One record per check of each request loader's field table.
FAULTS_MOONCAKE = """{"timestamp": 1000, "input_length": 600, "output_length": 10, "hash_ids": [1, 2]}
[1, 2]
{"timestamp": "soon", "input_length": 6, "output_length": 1}
{"timestamp": 1e400, "input_length": 6, "output_length": 1}
{"timestamp": 1200, "input_length": 0, "output_length": 1}
{"timestamp": 1300, "input_length": 5, "output_length": 2.5}
{"timestamp": 1400, "input_length": 5, "output_length": 2, "hash_ids": "1 2"}
{"timestamp": 1500, "input_length": 5, "output_length": 2, "hash_ids": [1, "x"]}
{"timestamp": 1600, "input_length": 5.0, "output_length": "3"}
not json
{"timestamp": 900, "input_length": 1e300, "output_length": 3}
"""
FAULTS_AZURE = """TIMESTAMP,ContextTokens,GeneratedTokens
2023-11-16 18:15:46.6805900,374,44
2023-11-16 18:15:47,10
2023-11-16 18:15:48.1,abc,2
2023-11-16 18:15:49.2,10,0
2023-11-16 25:15:49.2,10,3
2023-11-16 18:15:50.3,10.0,3.0
2023-11-16 18:15:45.0000001,7,1,9
"""
FAULTS_REQUESTS = """t_ms,in,out,blocks
2000,12,3,7;8
500,4,2,
x,4,2,
700,0,2,
800,4,-1,
900,4,2,1;a
1000,4
1100,5.0,1,3 4
"""


def _synthetic(tmp: Path) -> dict[str, tuple[Path, str, dict]]:
    """The benchmark's generators (seeded), with faults added, for bigger inputs than the samples."""
    import bench_loaders as bl

    out = {}
    p = tmp / "gen.sacct"
    bl.make_sacct(p, 3000, np.random.default_rng(7))
    lines = p.read_text().split("\n")
    lines[5] = lines[5].replace("|1-00:00:00|", "|UNLIMITED|")
    lines[9] = lines[9].replace("COMPLETED", "WEIRD")
    lines[13] = lines[13].replace("|1-00:00:00|", "|bogus|")
    lines[17] = lines[17] + "|extra"
    lines[21] = lines[21].replace("2024-", "x2024-", 1)
    lines[25] = lines[25].replace("|1-00:00:00|", "|0|")
    p.write_text("\n".join(lines))
    out["gen.sacct"] = (p, "sacct", {})
    p = tmp / "faults.sacct"
    p.write_text(FAULTS_SACCT)
    out["faults.sacct"] = (p, "sacct", {"max_nodes": 8})
    p = tmp / "faults_pods.csv"
    p.write_text(FAULTS_PODS)
    out["faults_pods.csv"] = (p, "alibaba_pods", {})
    p = tmp / "faults_batsim.json"
    p.write_text(FAULTS_BATSIM)
    out["faults_batsim.json"] = (p, "batsim", {})
    for name, text, fmt, opts in (("faults_mooncake.jsonl", FAULTS_MOONCAKE, "mooncake", {}),
                                  ("faults_azure.csv", FAULTS_AZURE, "azure_llm", {}),
                                  ("faults_requests.csv", FAULTS_REQUESTS, "request_csv", REQUEST_MAP)):
        p = tmp / name
        p.write_text(text)
        out[name] = (p, fmt, opts)
    p = tmp / "gen_batsim.json"
    bl.make_batsim(p, 3000, np.random.default_rng(7))
    out["gen_batsim.json"] = (p, "batsim", {})
    p = tmp / "gen.swf"
    bl.make_swf(p, 3000, np.random.default_rng(7))
    out["gen.swf"] = (p, "swf", {})
    return out


def _cases(tmp: Path) -> dict[str, tuple[Path, str | None, dict]]:
    import power_fixtures as pf

    _TMP[:] = [str(tmp)]
    cases: dict[str, tuple[Path, str | None, dict]] = {
        "quirks.swf": (DATA / "quirks.swf", "swf", {}),
        "with_header.swf": (DATA / "with_header.swf", "swf", {}),
        "no_header_epoch.swf": (DATA / "no_header_epoch.swf", "swf", {}),
        "quirks.sacct": (DATA / "quirks.sacct", "sacct", {}),
        "quirks.sacct@Europe/Paris": (DATA / "quirks.sacct", "sacct", {"timezone": "Europe/Paris", "max_nodes": 4}),
        "quirks_batsim.json": (DATA / "quirks_batsim.json", "batsim", {}),
        "quirks_pods.csv": (DATA / "quirks_pods.csv", "alibaba_pods", {}),
        "azure_llm_mini.csv": (DATA / "azure_llm_mini.csv", "azure_llm", {}),
        "mooncake_mini.jsonl": (DATA / "mooncake_mini.jsonl", "mooncake", {}),
        "requests_mini.csv": (DATA / "requests_mini.csv", "request_csv", REQUEST_MAP),
        "theta_2022.swf.gz": (ROOT / "experiments" / "data" / "theta_2022.swf.gz", "swf", {}),
        "hpc2n.swf.gz": (ROOT / "experiments" / "data" / "hpc2n.swf.gz", "swf", {}),
        "AzureLLMInferenceTrace_conv.csv.gz": (ROOT / "experiments" / "data" / "AzureLLMInferenceTrace_conv.csv.gz",
                                               "azure_llm", {}),
        "pm100.parquet": (pf.write_pm100(tmp / "pm100.parquet"), "pm100", {}),
        "fugaku.parquet": (pf.write_fugaku(tmp / "fugaku.parquet"), "fugaku", {}),
        "adastra.parquet": (pf.write_adastra(tmp / "adastra.parquet"), "adastra", {}),
        "lassen": (pf.write_lassen(tmp / "lassen") / "final_csm_allocation_history_hashed.csv", "lassen", {}),
    }
    cases.update(_synthetic(tmp))
    if SHARED.is_dir():
        cases["shared hpc2n.swf (+ .machines)"] = (SHARED / "hpc-traces" / "hpc2n.swf", "swf", {})
        cases["shared AzureLLMInferenceTrace_code.csv"] = (
            SHARED / "serving-traces" / "AzureLLMInferenceTrace_code.csv", "azure_llm", {})
    return cases


#: Recorded on main at 01dfbb1 (``PYTHONPATH=<export of main> python tests/unit/test_loader_table_digests.py``),
#: before the loaders' checks became field tables.
RECORDED: dict[str, str] = {
    "AzureLLMInferenceTrace_conv.csv.gz": "9d943f506552adde98bd8c9b",
    "adastra.parquet": "171ff10aaf9237c89b3063f2",
    "azure_llm_mini.csv": "964c9aed0002f1629004c8b9",
    "faults_azure.csv": "e7f819670fd7ad2395b58d6c",
    "faults_batsim.json": "b59eddc0b2dafba79bbccb66",
    "faults_mooncake.jsonl": "8554faa7172f8567715b2c83",
    "faults_pods.csv": "426253ebf776b1a0b04bb226",
    "faults_requests.csv": "c989bc2a6f1e5c363fd04b07",
    "faults.sacct": "26d3b1562f8c8dc110080b89",
    "fugaku.parquet": "0d77e5cb7a63384c92041b8f",
    "gen.sacct": "580b614aeaf4c1faa2c7c84a",
    "gen.swf": "c86651c1c6a58b95714f3c04",
    "gen_batsim.json": "b1afef5511488f52604a18f2",
    "hpc2n.swf.gz": "c51b0babebbcde1db18fd2a0",
    "lassen": "c73e1cc194c7391f4b990d93",
    "mooncake_mini.jsonl": "3fcbbc380ba3162d9e0d0ff4",
    "no_header_epoch.swf": "9ad29a70702a75ad6b47fa83",
    "pm100.parquet": "a27146f6dd7b6ddb91f1943b",
    "quirks.sacct": "0f54c7fb69c8c03524cdbe5c",
    "quirks.sacct@Europe/Paris": "77acccd71ac9cdede176cb2e",
    "quirks.swf": "6ffafde84844b31ca54dfcef",
    "quirks_batsim.json": "1ce67a8b177858b3a28ec962",
    "quirks_pods.csv": "69411ebc164acf321ff3a707",
    "requests_mini.csv": "29857a782a6f6c2c1a44f2de",
    "shared AzureLLMInferenceTrace_code.csv": "40961363b997951d4cbd35a5",
    "shared hpc2n.swf (+ .machines)": "15ac5b1f83add1b4bad71dc3",
    "theta_2022.swf.gz": "50c450c1ef87f848c601abb2",
    "with_header.swf": "be783de890181e17e0cdae88",
}


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    return _cases(tmp_path_factory.mktemp("loader-samples"))


def _digest(case: str, all_cases: dict) -> str:
    path, fmt, opts = all_cases[case]
    res = load_trace(path, format=fmt, **opts)
    return _table_digest(res.jobs, res.report)


@pytest.mark.parametrize("case", sorted(RECORDED))
def test_loaded_table_and_report_are_bit_identical_to_the_recorded_digest(case, cases):
    if case.startswith("shared") and not SHARED.is_dir():
        pytest.skip("../shared/data is absent")
    assert _digest(case, cases) == RECORDED[case], f"{case}: job table or load report changed"


def test_every_registered_loader_has_a_recorded_sample(cases):
    from dataloaders.registry import available_loaders

    formats = {fmt for _, fmt, _ in cases.values()}
    assert set(available_loaders()) <= formats, sorted(set(available_loaders()) - formats)
    assert len(RECORDED) >= 20


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        found = _cases(Path(d))
        for name in sorted(found):
            print(f"    {name!r}: {_digest(name, found)!r},")
