"""Request table, workload families and the request-trace loaders (azure_llm, mooncake, request_csv)."""

from pathlib import Path

import numpy as np
import pytest

from dataloaders.registry import available_loaders, load_trace
from dataloaders.report import TraceError
from jobs.requests import (LengthModel, gamma_arrivals, make_request_table, mmpp_arrivals, poisson_arrivals,
                           synthetic_requests)

DATA = Path(__file__).resolve().parents[1] / "data"


def test_loaders_registered():
    names = available_loaders()
    assert {"azure_llm", "mooncake", "request_csv"} <= set(names)


def test_azure_seven_digit_timestamps_and_rejections():
    res = load_trace(DATA / "azure_llm_mini.csv", format="azure_llm")
    df, rep = res.jobs, res.report
    # 5 records: ContextTokens 0 (line 4) and 'not-a-time' (line 5) rejected
    assert (rep.records_read, rep.accepted, rep.rejected) == (5, 3, 2)
    assert [i.line for i in rep.issues] == [4, 5]
    assert rep.issues[0].field == "ContextTokens" and rep.issues[1].field == "TIMESTAMP"
    # relative times keep the 7th digit: 46.6805901 - 46.6805900 = 1e-7 s; 50.1234567 - 46.6805900 = 3.4428667 s
    t = df["arrival_time_s"].to_numpy()
    assert t[0] == 0.0
    assert t[1] == pytest.approx(1e-7, abs=1e-12)
    assert t[2] == pytest.approx(3.4428667, abs=1e-9)
    assert df["prompt_tokens"].tolist() == [374, 10, 7]
    assert df["output_tokens"].sum() == 44 + 2 + 1
    assert df.attrs["time_origin_unix_s"] == pytest.approx(1700158546.68059, abs=1e-6)
    assert any("first arrival" in n for n in rep.notes)


def test_azure_strict_names_line_and_field():
    with pytest.raises(TraceError, match=r"line 4.*ContextTokens"):
        load_trace(DATA / "azure_llm_mini.csv", format="azure_llm", strict=True)


def test_empty_trace_is_an_error(tmp_path):
    p = tmp_path / "empty.csv"
    p.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n")
    with pytest.raises(TraceError, match="yields zero requests"):
        load_trace(p, format="azure_llm")
    p.write_text("a,b,c\n1,2,3\n")
    with pytest.raises(TraceError, match="line 1"):
        load_trace(p, format="azure_llm")


def test_mooncake_relative_ms_origin_normalised():
    res = load_trace(DATA / "mooncake_mini.jsonl")  # format guessed from .jsonl
    df, rep = res.jobs, res.report
    assert (rep.records_read, rep.accepted, rep.rejected) == (4, 3, 1)
    assert rep.issues[0].line == 4 and rep.issues[0].field == "timestamp"
    # timestamps 1000, 1500, 900 ms -> sorted 900, 1000, 1500 -> minus 900 ms -> 0, 0.1, 0.6 s
    assert df["arrival_time_s"].tolist() == pytest.approx([0.0, 0.1, 0.6])
    assert df["prefix_block_ids"].tolist() == [(), (1, 2), (1,)]
    assert np.isnan(df.attrs["time_origin_unix_s"]) and df.attrs["time_shift_s"] == pytest.approx(0.9)


def test_request_csv_mapping():
    res = load_trace(DATA / "requests_mini.csv", format="request_csv", arrival="t_ms", prompt="in", output="out",
                     prefix="blocks", time_unit="ms")
    df = res.jobs
    assert df["arrival_time_s"].tolist() == pytest.approx([0.0, 1.5])
    assert df["prompt_tokens"].tolist() == [4, 12]
    assert df["prefix_block_ids"].tolist() == [(), (7, 8)]
    with pytest.raises(TraceError, match="column 'nope'"):
        load_trace(DATA / "requests_mini.csv", format="request_csv", arrival="nope", prompt="in", output="out")


def test_arrival_families_are_seeded_and_have_the_right_moments():
    rng = np.random.default_rng(1)
    t = poisson_arrivals(rng, 5.0, 2000.0)
    assert abs(t.size - 10000) < 4 * 100  # Poisson count: mean 10,000, sd 100
    t2 = poisson_arrivals(np.random.default_rng(1), 5.0, 2000.0)
    np.testing.assert_array_equal(t, t2)
    g = np.diff(gamma_arrivals(np.random.default_rng(2), 5.0, 3.0, 4000.0))
    assert g.mean() == pytest.approx(0.2, rel=0.05)
    assert g.std() / g.mean() == pytest.approx(3.0, rel=0.1)
    m = mmpp_arrivals(np.random.default_rng(3), (10.0, 0.0), (10.0, 30.0), 4000.0)
    # long-run rate (10 x 10 + 0 x 30) / 40 = 2.5 /s
    assert m.size / 4000.0 == pytest.approx(2.5, rel=0.1)


def test_length_model_fit_and_synthetic_table():
    base = make_request_table(np.arange(1000.0), np.full(1000, 100), np.full(1000, 10))
    lm = LengthModel.fit(base)
    assert lm.mean == pytest.approx([np.log(100), np.log(10)])
    df = synthetic_requests(np.random.default_rng(0), lm, 100.0, 2.0, arrival="gamma", cv=2.0)
    assert (df["prompt_tokens"] == 100).all() and (df["output_tokens"] == 10).all()
    emp = LengthModel.fit(base, "empirical")
    p, o = emp.sample(np.random.default_rng(0), 5)
    assert p.tolist() == [100] * 5
