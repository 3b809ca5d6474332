"""Fuzzing rule of issue #21: every loader and every output reader, fed crafted bytes, under a memory and time budget.

Each example runs with the process's address space limited to its current size plus :data:`BUDGET_BYTES`
(``RLIMIT_AS``, restored after the example), so an allocation sized by the input fails there; and under a
hypothesis ``deadline``. What may come out: the result, or one of the project's documented error types
(``TraceError`` and its subclasses for traces and grid series, ``WeatherFileError``, ``ConfigError``,
``DamagedFileError`` / ``SchemaError`` for output files); never another exception, never a ``MemoryError``.

Crafted inputs: random edits of a valid seed file of each format (byte flips, deletions, insertions, truncation,
duplicated lines), and special payloads: a small gzip / bzip2 / xz bomb (``HPCTWIN_MAX_INPUT_BYTES`` lowered so
it trips), UTF-16 and UTF-32 text, a UTF-8 BOM, NUL bytes, an over-long line, deep nesting, random binary.
Output files: random byte edits of a real run file, and files built with h5py with random shapes (up to 2e12
elements declared, allocated lazily), attributes and checksums.

CI keeps the whole module at about 90 s (``max_examples`` below); the deep versions (400 examples per target) run
only with ``HPCTWIN_FUZZ_DEEP=1`` (they take many minutes on a 2-core machine).
"""

from __future__ import annotations

import bz2
import contextlib
import datetime as dt
import functools
import gzip
import io
import lzma
import os
import resource
import shutil
from pathlib import Path

import h5py
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cooling_fmu.weather import DEFAULT_TMY3, WeatherFileError, load_epw, load_tmy3, load_weather
from dataloaders import TraceError
from dataloaders.grid import load_grid_series
from dataloaders.registry import load_trace
from jobs.memory import _vm_size
from scheduler_sim.app.cli import main
from scheduler_sim.app.config import ConfigError, load_config
from scheduler_sim.io.hdf5 import (DamagedFileError, SchemaError, check_output, content_digest, read_jobs,
                                   read_series, read_summary)
from tests.data import power_fixtures as pf
from tests.conftest import TINY4_TOML as TINY4
from tests.unit.test_inputs_bounded import SWF

DATA = Path(__file__).parents[1] / "data"
ROOT = Path(__file__).resolve().parents[2]
#: Memory an example may allocate beyond what the process holds when it starts [bytes].
BUDGET_BYTES = 1536 << 20
#: Hypothesis examples per target in CI, and in the deep (``slow``) runs.
CI_EXAMPLES, DEEP_EXAMPLES, WEATHER_EXAMPLES, OUTPUT_EXAMPLES = 8, 400, 4, 6
DEADLINE = dt.timedelta(seconds=20)
_SETTINGS = dict(deadline=DEADLINE, derandomize=True, database=None,
                 suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                        HealthCheck.data_too_large])


@contextlib.contextmanager
def memory_budget(extra: int = BUDGET_BYTES):
    """Limit the address space to the current size + ``extra`` for the block (soft limit; restored after)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    want = _vm_size() + extra
    if hard != resource.RLIM_INFINITY:
        want = min(want, hard)
    resource.setrlimit(resource.RLIMIT_AS, (want, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _seed_files(tmp: Path) -> dict[str, tuple[str, bytes, str]]:
    """format -> (suffix, valid bytes, loader format name) for every registered trace loader."""
    seeds = {
        "swf": (".swf", (DATA / "quirks.swf").read_bytes()),
        "sacct": (".sacct", (DATA / "quirks.sacct").read_bytes()),
        "batsim": (".json", (DATA / "quirks_batsim.json").read_bytes()),
        "alibaba_pods": (".csv", (DATA / "quirks_pods.csv").read_bytes()),
        "azure_llm": (".csv", (DATA / "azure_llm_mini.csv").read_bytes()),
        "mooncake": (".jsonl", (DATA / "mooncake_mini.jsonl").read_bytes()),
        "request_csv": (".csv", (DATA / "requests_mini.csv").read_bytes()),
    }
    for name, writer in (("pm100", pf.write_pm100), ("fugaku", pf.write_fugaku), ("adastra", pf.write_adastra)):
        p = writer(tmp / f"{name}.parquet")
        seeds[name] = (".csv", pd.read_parquet(p).to_csv(index=False).encode())
        seeds[f"{name}.parquet"] = (".parquet", p.read_bytes())
    lassen = pf.write_lassen(tmp / "lassen_seed")
    seeds["lassen"] = ("/final_csm_allocation_history_hashed.csv",
                       (lassen / "final_csm_allocation_history_hashed.csv").read_bytes())
    return seeds


SEED_DIR = Path(os.environ.get("TMPDIR", "/tmp")) / f"hpctwin-fuzz-seeds-{os.getpid()}"
SEED_DIR.mkdir(parents=True, exist_ok=True)
SEEDS = _seed_files(SEED_DIR)
REQUEST_MAP = {"request_csv": {"arrival": "t_ms", "prompt": "in", "output": "out", "prefix": "blocks",
                               "time_unit": "ms"}}
LASSEN_NODES = (SEED_DIR / "lassen_seed" / "final_csm_allocation_node_history.csv").read_bytes()


@functools.lru_cache(maxsize=None)
def _bomb(kind: str) -> bytes:
    """12 MiB of one byte pattern, compressed (made once: compressing is slower than refusing)."""
    if kind == "gzip-bomb":
        return gzip.compress(b"\n" * (12 << 20), compresslevel=1)
    if kind == "bzip2-bomb":
        return bz2.compress(b"0 " * (6 << 20), compresslevel=1)
    return lzma.compress(b"\x00" * (12 << 20), preset=0)


def _special(seed: bytes, kind: str) -> bytes:
    if kind.endswith("-bomb"):
        return _bomb(kind)
    if kind == "utf16":
        return seed.decode("latin-1").encode("utf-16")
    if kind == "utf16-nobom":
        return seed.decode("latin-1").encode("utf-16-le")
    if kind == "utf32":
        return seed.decode("latin-1").encode("utf-32")
    if kind == "bom":
        return b"\xef\xbb\xbf" + seed
    if kind == "nul":
        return seed.replace(b"\n", b"\x00\n", 3)
    if kind == "long-line":
        return seed[:200] + b"9" * (2 << 20) + b"\n" + seed[200:]
    if kind == "deep":
        return b"[" * 200000 + b"]" * 200000
    if kind == "gzip-truncated":
        return gzip.compress(seed)[: max(10, len(seed) // 3)]
    return os.urandom(64)


SPECIALS = ["gzip-bomb", "bzip2-bomb", "xz-bomb", "utf16", "utf16-nobom", "utf32", "bom", "nul", "long-line", "deep",
            "gzip-truncated", "random"]
edits = st.lists(st.tuples(st.sampled_from(["flip", "delete", "insert", "truncate", "dupline"]), st.floats(0, 1),
                           st.binary(min_size=1, max_size=8)), min_size=1, max_size=5)
crafted = st.one_of(st.tuples(st.just("edit"), edits), st.tuples(st.just("special"), st.sampled_from(SPECIALS)))


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


def make(seed: bytes, case) -> bytes:
    how, arg = case
    return corrupt(seed, arg) if how == "edit" else _special(seed, arg)


@contextlib.contextmanager
def small_input_limit():
    old = os.environ.get("HPCTWIN_MAX_INPUT_BYTES")
    os.environ["HPCTWIN_MAX_INPUT_BYTES"] = str(8 << 20)  # the bombs above decompress to 12 MiB
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("HPCTWIN_MAX_INPUT_BYTES", None)
        else:
            os.environ["HPCTWIN_MAX_INPUT_BYTES"] = old


def _write(tmp: Path, suffix: str, data: bytes) -> Path:
    if suffix.startswith("/"):  # a folder format (Lassen): the fuzzed file beside an intact second one
        d = tmp / "lassen"
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir()
        (d / suffix[1:]).write_bytes(data)
        (d / "final_csm_allocation_node_history.csv").write_bytes(LASSEN_NODES)
        return d
    p = tmp / f"input{suffix}"
    p.write_bytes(data)
    return p


def _fuzz_loader(name: str, case, tmp: Path) -> None:
    suffix, seed = SEEDS[name]
    fmt = name.split(".")[0]
    p = _write(tmp, suffix, make(seed, case))
    with small_input_limit(), memory_budget():
        try:
            res = load_trace(p, format=fmt, **REQUEST_MAP.get(fmt, {}))
        except TraceError:
            return
    rep = res.report
    assert rep.records_read == rep.accepted + rep.rejected + rep.folded
    assert len(res.jobs) == rep.accepted >= 1


LOADERS = sorted(SEEDS)


def _loader_test(examples: int):
    @settings(max_examples=examples, **_SETTINGS)
    @given(case=crafted)
    def run(name, case, tmp_path):
        _fuzz_loader(name, case, tmp_path)
    return run


_ci_loader, _deep_loader = _loader_test(CI_EXAMPLES), _loader_test(DEEP_EXAMPLES)


@pytest.mark.parametrize("name", LOADERS)
def test_fuzz_every_loader_crafted_bytes_documented_errors_only(name, tmp_path):
    _ci_loader(name, tmp_path=tmp_path)


_DEEP = pytest.mark.skipif(not os.environ.get("HPCTWIN_FUZZ_DEEP"),
                           reason="deep fuzzing (400 examples per target) runs with HPCTWIN_FUZZ_DEEP=1")


@pytest.mark.slow
@_DEEP
@pytest.mark.parametrize("name", LOADERS)
def test_fuzz_every_loader_deep(name, tmp_path):
    _deep_loader(name, tmp_path=tmp_path)


def test_fuzz_covers_every_registered_loader():
    from dataloaders.registry import available_loaders

    assert set(available_loaders()) <= {n.split(".")[0] for n in LOADERS}


# ---- weather, grid series, TOML configuration -------------------------------------------------------------------
EPW = gzip.decompress((ROOT / "cooling_fmu" / "data" / "USA_IL_Chicago-OHare.Intl.AP.725300_TMY3.epw.gz").read_bytes())
TMY3 = gzip.decompress(Path(DEFAULT_TMY3).read_bytes()) if str(DEFAULT_TMY3).endswith(".gz") else \
    Path(DEFAULT_TMY3).read_bytes()
GRID = gzip.decompress((ROOT / "dataloaders" / "data" / "grid" / "FI_2022_hourly.csv.gz").read_bytes())[:20000]
CONFIG = (b'name = "fz"\nsystem = "SYS"\n[trace]\npath = "TRACE"\nwindow_start_days = 0\n'
          b'window_days = 1\n[cooling]\nenabled = false\n')


def _other_test(examples: int):
    @settings(max_examples=examples, **_SETTINGS)
    @given(case=crafted)
    def run(target, case, tmp_path):
        if target in ("epw", "tmy3"):
            p = tmp_path / f"w.{target}"
            p.write_bytes(make(EPW if target == "epw" else TMY3, case))
            with small_input_limit(), memory_budget():
                try:
                    df, rep = load_weather(p, cache=False)
                except WeatherFileError:
                    return
            assert len(df) in (8760, 8784) and np.all(np.isfinite(df["T_wb_K"]))
        elif target == "grid":
            p = tmp_path / "g.csv"
            p.write_bytes(make(GRID, case))
            with small_input_limit(), memory_budget():
                try:
                    s = load_grid_series(p, "carbon")
                except TraceError:  # GridSignalError is one
                    return
            assert s.values.ndim == 1 and s.step_s > 0
        else:
            (tmp_path / "sys.toml").write_text(TINY4)
            (tmp_path / "t.swf").write_bytes(SWF)
            p = tmp_path / "c.toml"
            p.write_bytes(make(CONFIG, case).replace(b"SYS", str(tmp_path / "sys.toml").encode())
                          .replace(b"TRACE", str(tmp_path / "t.swf").encode()))
            with small_input_limit(), memory_budget():
                try:
                    load_config(p)
                except ConfigError:
                    return
    return run


_ci_other, _deep_other = _other_test(CI_EXAMPLES), _other_test(DEEP_EXAMPLES)
_ci_weather = _other_test(WEATHER_EXAMPLES)  # a weather example parses 8,760 rows and solves 8,760 wet-bulbs
OTHERS = ["epw", "tmy3", "grid", "toml"]


@pytest.mark.parametrize("target", OTHERS)
def test_fuzz_weather_grid_and_config_documented_errors_only(target, tmp_path):
    (_ci_weather if target in ("epw", "tmy3") else _ci_other)(target, tmp_path=tmp_path)


@pytest.mark.slow
@_DEEP
@pytest.mark.parametrize("target", OTHERS)
def test_fuzz_weather_grid_and_config_deep(target, tmp_path):
    _deep_other(target, tmp_path=tmp_path)


def test_fuzz_epw_and_tmy3_seeds_are_valid():
    assert len(load_epw(Path("x.epw"), text=EPW.decode())[0]) == 8760
    assert len(load_tmy3(Path("x.csv"), text=TMY3.decode("utf-8", "replace"))[0]) == 8760


# ---- output files: read_jobs / read_series / read_summary, validate, compare -----------------------------------
@pytest.fixture(scope="module")
def run_file(tmp_path_factory):
    d = tmp_path_factory.mktemp("fz_out")
    (d / "tiny4.toml").write_text(TINY4)
    (d / "two.swf").write_bytes(SWF)
    assert main(["run", "--system", str(d / "tiny4.toml"), "--trace", str(d / "two.swf"), "--start-day", "0",
                 "--days", "1", "--no-cooling", "--quiet", "--out", str(d / "run.h5")]) == 0
    return d / "run.h5"


OUTPUT_ERRORS = (DamagedFileError, SchemaError)


def _read_all(p: Path, good: Path, capsys) -> None:
    with memory_budget():
        for reader in (check_output, read_jobs, read_series, read_summary):
            try:
                reader(p)
            except OUTPUT_ERRORS:
                pass
        for argv in (["validate", str(p)], ["compare", str(good), str(p)]):
            rc = main(argv)
            out = capsys.readouterr()
            assert rc in (0, 1, 2), argv
            assert "Traceback" not in out.err + out.out


shape = st.lists(st.sampled_from([0, 1, 2, 3, 90, 1000, 2_000_000_000, 10**12]), min_size=1, max_size=2)


def _crafted_h5(p: Path, good: Path, data) -> None:
    shutil.copyfile(good, p)
    with h5py.File(p, "r+") as f:
        for _ in range(data.draw(st.integers(1, 3))):
            target = data.draw(st.sampled_from(["timeseries/time_s", "timeseries/facility/P_it_W", "jobs/job_id",
                                                "jobs/energy_it_J", "summary", "attr"]))
            if target == "attr":
                name = data.draw(st.sampled_from(["complete", "schema_version", "kind", "seed", "failure"]))
                f.attrs[name] = data.draw(st.one_of(st.text(max_size=20), st.integers(-5, 5), st.booleans()))
            elif target == "summary":
                if "summary" in f:
                    del f["summary"]
            else:
                sh = tuple(data.draw(shape))
                dt_ = data.draw(st.sampled_from(["f8", "i8", "u1"]))
                if target in f:
                    del f[target]
                f.create_dataset(target, shape=sh, dtype=dt_, chunks=True if np.prod(sh, dtype=float) else None,
                                 fillvalue=0)
        digest = data.draw(st.sampled_from(["fresh", "stale", "none"]))
        sizes = [np.prod(f[k].shape, dtype=float) for k in ("timeseries/time_s", "timeseries/facility/P_it_W",
                                                             "jobs/job_id", "jobs/energy_it_J") if k in f]
        if digest == "fresh" and max(sizes, default=0) < 1e6:  # hashing 1e12 zeros would take hours
            f.attrs["content_sha256"] = content_digest(f)
        elif digest == "none" and "content_sha256" in f.attrs:
            del f.attrs["content_sha256"]


def _output_test(examples: int):
    @settings(max_examples=examples, **_SETTINGS)
    @given(data=st.data())
    def run(how, run_file, tmp_path, capsys, data):
        p = tmp_path / "x.h5"
        if how == "bytes":
            raw = bytearray(run_file.read_bytes())
            for _ in range(data.draw(st.integers(1, 6))):
                k = data.draw(st.integers(0, len(raw) - 1))
                raw[k] = data.draw(st.integers(0, 255))
            if data.draw(st.booleans()):
                del raw[data.draw(st.integers(0, len(raw) - 1)):]
            p.write_bytes(bytes(raw))
        else:
            _crafted_h5(p, run_file, data)
        _read_all(p, run_file, capsys)
    return run


_ci_output, _deep_output = _output_test(OUTPUT_EXAMPLES), _output_test(DEEP_EXAMPLES)


@pytest.mark.parametrize("how", ["bytes", "shapes"])
def test_fuzz_output_readers_validate_and_compare_documented_errors_only(how, run_file, tmp_path, capsys):
    _ci_output(how, run_file=run_file, tmp_path=tmp_path, capsys=capsys)


@pytest.mark.slow
@_DEEP
@pytest.mark.parametrize("how", ["bytes", "shapes"])
def test_fuzz_output_readers_deep(how, run_file, tmp_path, capsys):
    _deep_output(how, run_file=run_file, tmp_path=tmp_path, capsys=capsys)


def test_fuzz_memory_budget_binds(tmp_path):
    # the budget is real: inside it, an allocation past it fails (and the project's check refuses it first)
    from jobs.memory import InputTooLargeError, check_allocation

    with memory_budget(256 << 20):
        with pytest.raises(MemoryError):
            np.ones(64 << 20)  # 512 MiB
        with pytest.raises(InputTooLargeError):
            check_allocation(512 << 20, "x")
    assert np.ones(64 << 20).nbytes == 512 << 20  # restored
    assert io.BytesIO(b"").read() == b""


def teardown_module(module):
    shutil.rmtree(SEED_DIR, ignore_errors=True)
