"""Property tests: random corruptions of each text format give a TraceError or rejected records, never a crash."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dataloaders import TraceError
from dataloaders.alibaba import read_alibaba_pods
from dataloaders.batsim import read_batsim
from dataloaders.slurm import read_sacct
from dataloaders.swf import read_swf

DATA = Path(__file__).parents[1] / "data"
CASES = {
    "sacct": (read_sacct, (DATA / "quirks.sacct").read_bytes(), ".sacct"),
    "batsim": (read_batsim, (DATA / "quirks_batsim.json").read_bytes(), ".json"),
    "pods": (read_alibaba_pods, (DATA / "quirks_pods.csv").read_bytes(), ".csv"),
    "swf": (read_swf, (DATA / "quirks.swf").read_bytes(), ".swf"),
}

corruption = st.lists(
    st.tuples(st.sampled_from(["flip", "delete", "insert", "truncate", "dupline"]), st.floats(0, 1),
              st.binary(min_size=1, max_size=4)), min_size=1, max_size=4)


def corrupt(data: bytes, ops) -> bytes:
    b = bytearray(data)
    for op, where, junk in ops:
        if not b:
            break
        k = min(int(where * len(b)), len(b) - 1)
        if op == "flip":
            b[k] = junk[0]
        elif op == "delete":
            del b[k:k + len(junk)]
        elif op == "insert":
            b[k:k] = junk
        elif op == "truncate":
            del b[k:]
        else:
            lines = bytes(b).split(b"\n")
            j = min(int(where * len(lines)), len(lines) - 1)
            lines.insert(j, lines[j])
            b = bytearray(b"\n".join(lines))
    return bytes(b)


def _check(name, ops, tmp_path_factory):
    fn, data, suffix = CASES[name]
    p = tmp_path_factory.mktemp(name) / f"t{suffix}"
    p.write_bytes(corrupt(data, ops))
    try:
        df, rep = fn(p)
    except TraceError:
        return
    assert rep.records_read == rep.accepted + rep.rejected + rep.folded
    assert len(df) == rep.accepted >= 1
    assert df["job_id"].is_unique and (df["nodes"] >= 1).all()


for _name in CASES:
    def _make(name):
        @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
        @given(ops=corruption)
        def test(ops, tmp_path_factory):
            _check(name, ops, tmp_path_factory)
        test.__name__ = f"test_fuzz_{name}"
        return test
    globals()[f"test_fuzz_{_name}"] = _make(_name)
