"""Synthetic Frontier workload (experiments/frontier_workload.py): OLCF bins, the model's size law, the load."""

from __future__ import annotations

import numpy as np
import pytest

from dataloaders import load_trace
from experiments.frontier_workload import (
    FRONTIER_NODES,
    POW2_PROB,
    SERIAL_PROB,
    bin_limit_s,
    frontier_jobs,
    write_swf,
)


def test_bin_limits_are_the_olcf_table():
    """OLCF Frontier User Guide: 1-91 nodes 2 h, 92-183 6 h, 184 and more 12 h (bins 1-3)."""
    nodes = np.array([1, 91, 92, 183, 184, 1881, 1882, 5644, 5645, 9408])
    assert bin_limit_s(nodes).tolist() == [7200, 7200, 21600, 21600] + [43200] * 6


@pytest.fixture(scope="module")
def month():
    return frontier_jobs(30.0, seed=7, load=0.85)


def test_jobs_respect_the_machine_and_their_bin(month):
    n, run, req = month["nodes"], month["run_s"], month["req_s"]
    assert n.min() >= 1 and n.max() <= 9408
    assert (run >= 1).all() and (run <= req).all()
    np.testing.assert_array_equal(req, bin_limit_s(n))
    s = month["submit_s"]
    assert s[0] == 0.0 and (np.diff(s) >= 0).all() and s[-1] < 30 * 86400


def test_size_law_of_lublin_feitelson(month):
    """Serial share = SERIAL_PROB = 0.244; power-of-two share of parallel jobs >= POW2_PROB / (1 - SERIAL_PROB)
    (non-rounded draws may land on a power of two too). Binomial 4-sigma bounds for the sample size."""
    n = month["nodes"]
    k = n.size
    assert k > 2000
    sd = np.sqrt(SERIAL_PROB * (1 - SERIAL_PROB) / k)
    assert abs((n == 1).mean() - SERIAL_PROB) < 4 * sd
    par = n[n > 1]
    pow2 = (par & (par - 1)) == 0
    p = POW2_PROB / (1 - SERIAL_PROB)
    assert pow2.mean() > p - 4 * np.sqrt(p * (1 - p) / par.size)


def test_offered_load_reaches_the_target_with_the_last_job(month):
    """sum(nodes x run) / (nodes x window) >= load, and below load once the last job is taken away."""
    work = month["nodes"] * month["run_s"].astype(float)
    cap = FRONTIER_NODES * 30 * 86400.0
    assert work.sum() / cap >= 0.85 > (work.sum() - work[-1]) / cap


def test_same_seed_same_jobs_and_swf_round_trip(tmp_path):
    a, b = frontier_jobs(1.0, seed=3), frontier_jobs(1.0, seed=3)
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])
    assert not np.array_equal(frontier_jobs(1.0, seed=4)["nodes"][:50], a["nodes"][:50])
    path = write_swf(a, tmp_path / "day.swf")
    df, rep = load_trace(path, cores_per_node=64)
    assert rep.rejected == 0 and len(df) == a["nodes"].size
    np.testing.assert_array_equal(df["nodes"].to_numpy(), a["nodes"])


@pytest.mark.parametrize("kw", [{"days": 0.0}, {"days": float("inf")}, {"load": 0.0}, {"load": 3.0},
                                {"system_nodes": 1}])
def test_bad_arguments_are_refused(kw):
    args = {"days": 1.0} | kw
    days = args.pop("days")
    with pytest.raises(ValueError):
        frontier_jobs(days, **args)
