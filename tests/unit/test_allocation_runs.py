"""allocation_runs (vectorised over all attempts) against the per-attempt loop it replaced, bit for bit."""

import numpy as np
import pytest

from scheduler_sim.kernel.results import allocation_runs


def _loop_reference(attempts: list, job_ids: np.ndarray, node_cdu: np.ndarray) -> dict[str, np.ndarray]:
    """The per-attempt loop of allocation_runs before it was vectorised (reference, tests only)."""
    cols: dict[str, list] = {k: [] for k in ("job_id", "start_s", "end_s", "node_first", "node_count", "cdu",
                                             "it_power_W")}
    for j, a, b, nodes, shares in attempts:
        order = np.argsort(nodes)
        nodes, shares = nodes[order], np.asarray(shares, dtype=float)[order]
        cdu = node_cdu[nodes]
        breaks = np.flatnonzero((np.diff(nodes) != 1) | (np.diff(cdu) != 0)) + 1
        firsts = np.concatenate(([0], breaks))
        counts = np.diff(np.concatenate((firsts, [nodes.size])))
        k = firsts.size
        cols["job_id"] += [int(job_ids[j])] * k
        cols["start_s"] += [float(a)] * k
        cols["end_s"] += [float(b)] * k
        cols["node_first"] += nodes[firsts].tolist()
        cols["node_count"] += counts.tolist()
        cols["cdu"] += cdu[firsts].tolist()
        cols["it_power_W"] += np.add.reduceat(shares, firsts).tolist() if nodes.size else []
    dt = {"job_id": np.int64, "start_s": float, "end_s": float, "node_first": np.int64, "node_count": np.int64,
          "cdu": np.int64, "it_power_W": float}
    return {k: np.asarray(v, dtype=dt[k]) for k, v in cols.items()}


def _attempts(seed: int, n_att: int = 400, n_nodes: int = 512):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n_att):
        k = int(rng.integers(1, 40))
        if rng.random() < 0.5:  # a contiguous block (one or two runs, maybe across a CDU border)
            first = int(rng.integers(0, n_nodes - k))
            nodes = np.arange(first, first + k)
        else:  # scattered, unsorted
            nodes = rng.choice(n_nodes, size=k, replace=False)
        shares = rng.random(k) * 900.0 + 100.0 / 3.0
        out.append((int(rng.integers(0, 50)), float(rng.random() * 1e6), float(rng.random() * 1e6 + 1e6),
                    nodes.astype(np.int64), shares))
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_vectorised_runs_equal_the_loop_bit_for_bit(seed):
    """400 random attempts (contiguous blocks and scattered unsorted nodes, 1-39 nodes, 512 nodes in CDUs of 64 and
    of 100): every column, dtype and row order equal to the per-attempt loop's (array_equal on float64)."""
    job_ids = np.arange(1000, 1050, dtype=np.int64)
    for node_cdu in (np.arange(512) // 64, np.minimum(np.arange(512) // 100, 4)):
        att = _attempts(seed)
        got, ref = allocation_runs(att, job_ids, node_cdu), _loop_reference(att, job_ids, node_cdu)
        assert got.keys() == ref.keys()
        for k in ref:
            assert got[k].dtype == ref[k].dtype and np.array_equal(got[k], ref[k]), k
        assert got["node_count"].sum() == sum(len(a[3]) for a in att)


@pytest.mark.parametrize("batch_nodes", [1, 7, 40, 1000])
def test_attempts_in_batches_give_the_rows_of_one_batch_bit_for_bit(batch_nodes):
    """Issue #26 item 3: the attempts are taken in batches of about ``batch_nodes`` node entries (whole attempts;
    1: one attempt a batch) so the end-of-run temporaries do not grow with the run; every column equals the
    per-attempt loop's and the one-batch result's, in the same order."""
    job_ids = np.arange(1000, 1050, dtype=np.int64)
    node_cdu = np.arange(512) // 64
    att = _attempts(4)
    one = allocation_runs(att, job_ids, node_cdu, batch_nodes=10**9)
    got, ref = allocation_runs(att, job_ids, node_cdu, batch_nodes=batch_nodes), _loop_reference(att, job_ids, node_cdu)
    for k in ref:
        assert got[k].dtype == ref[k].dtype and np.array_equal(got[k], ref[k]) and np.array_equal(got[k], one[k]), k


def test_no_attempt_gives_empty_columns_and_an_empty_attempt_is_refused():
    empty = allocation_runs([], np.zeros(0, dtype=np.int64), np.zeros(4, dtype=np.int64))
    assert all(v.size == 0 for v in empty.values()) and empty["job_id"].dtype == np.int64
    with pytest.raises(ValueError, match="attempt 1 has no node"):
        allocation_runs([(0, 0.0, 1.0, np.array([1]), np.array([5.0])), (0, 0.0, 1.0, np.zeros(0, np.int64),
                                                                          np.zeros(0))],
                        np.array([7]), np.zeros(4, dtype=np.int64))


def test_attempt_log_packs_attempts_and_gives_the_same_runs_bit_for_bit():
    """Issue #26 (end-of-run memory): the run keeps its attempts in an AttemptLog that packs every 4,096 into flat
    arrays. 9,000 random attempts (three chunks, the last one partly packed when read): iterating gives back every
    tuple (job, start, end, nodes int64, shares float64) equal to the one appended, and allocation_runs of the log
    equals allocation_runs of the list, every column and dtype (array_equal on float64), with small and default
    batches."""
    from scheduler_sim.kernel.attempts import CHUNK_ATTEMPTS, AttemptLog

    att = _attempts(7, n_att=9000)
    log = AttemptLog()
    for x in att:
        log.append((x[0], np.float64(x[1]), x[2], x[3], x[4]))
    assert len(log) == 9000 and 9000 > 2 * CHUNK_ATTEMPTS
    for (j, a, b, nodes, shares), (j2, a2, b2, nodes2, shares2) in zip(att, log):
        assert (j, a, b) == (j2, a2, b2) and nodes2.dtype == np.int64
        assert np.array_equal(nodes, nodes2) and np.array_equal(shares, shares2)
    job_ids = np.arange(1000, 1050, dtype=np.int64)
    node_cdu = np.arange(512) // 64
    for batch in (300, 1 << 18):
        ref = allocation_runs(att, job_ids, node_cdu, batch_nodes=batch)
        got = allocation_runs(log, job_ids, node_cdu, batch_nodes=batch)
        for k in ref:
            assert got[k].dtype == ref[k].dtype and np.array_equal(got[k], ref[k]), k
    assert sum(1 for _ in log) == 9000  # reading packs the rest; the log still holds every attempt
