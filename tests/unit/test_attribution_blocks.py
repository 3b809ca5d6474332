"""The attribution's per-job weighted sums evaluated in blocks of jobs (bounded memory at a million jobs, issue #26
item 1) are bit for bit the whole-table evaluation, and equal a direct loop over jobs and intervals."""

import numpy as np

from scheduler_sim.analysis import attribution as att


def _case(n_jobs=1000, n=50, m=3, dt=60.0, seed=2):
    rng = np.random.default_rng(seed)
    a = rng.uniform(0.0, n * dt, n_jobs)
    b = np.minimum(a + rng.uniform(1.0, 20 * dt, n_jobs), n * dt)
    ka, kb, wa, wb = att._overlaps(a, b, 0.0, dt, n)
    return rng.uniform(0.0, 5e4, (n_jobs, m)), rng.uniform(0.0, 2.0, (n, m)), ka, kb, wa, wb, dt, a, b


def test_blocks_are_the_whole_table_bit_for_bit(monkeypatch):
    P, q, ka, kb, wa, wb, dt, _, _ = _case()
    whole = att._weighted(P, q, ka, kb, wa, wb, dt)
    monkeypatch.setattr(att, "WEIGHTED_BLOCK_JOBS", 7)
    assert np.array_equal(att._weighted(P, q, ka, kb, wa, wb, dt), whole)
    one = att._weighted(P[:, :1], q[:, :1], ka, kb, wa, wb, dt)  # one CDU column (the plant's price)
    monkeypatch.setattr(att, "WEIGHTED_BLOCK_JOBS", 65536)
    assert np.array_equal(att._weighted(P[:, :1], q[:, :1], ka, kb, wa, wb, dt), one)


def test_weighted_is_the_overlap_sum_of_each_job():
    """``sum_k sum_c P_jc o_jk q_kc`` with ``o_jk`` the seconds job j overlaps interval k, by a direct loop."""
    P, q, ka, kb, wa, wb, dt, a, b = _case(n_jobs=60)
    got = att._weighted(P, q, ka, kb, wa, wb, dt)
    n = q.shape[0]
    for j in range(len(a)):
        o = np.array([max(0.0, min(b[j], (k + 1) * dt) - max(a[j], k * dt)) for k in range(n)])
        assert abs(got[j] - float(P[j] @ (o @ q))) <= 1e-9 * max(1.0, abs(got[j]))


def test_one_cdu_consumers_give_the_dense_tables_sums_bit_for_bit(monkeypatch):
    """Consumers that are runs of nodes in one CDU (issue #26: the (runs x CDUs) table held one value a row) are kept
    as that value and its column (OneCdu): the weighted sums over 6 CDUs, with prices that are zero in some
    intervals, and the row sums equal the dense table's, array_equal on float64, in one block and in blocks of 7."""
    P, q, ka, kb, wa, wb, dt, _, _ = _case(m=6, seed=5)
    rng = np.random.default_rng(9)
    col = rng.integers(0, 6, P.shape[0])
    p = P[:, 0].copy()
    p[::17] = 0.0  # idle runs
    dense = np.zeros_like(P)
    dense[np.arange(p.size), col] = p
    q[::5, 2] = 0.0
    one = att.OneCdu(p, col)
    assert np.array_equal(one.row_sums(), dense.sum(axis=1, keepdims=True))
    for block in (65536, 7):
        monkeypatch.setattr(att, "WEIGHTED_BLOCK_JOBS", block)
        for price in (q, np.ones_like(q)):
            assert np.array_equal(att._weighted(one, price, ka, kb, wa, wb, dt),
                                  att._weighted(dense, price, ka, kb, wa, wb, dt))
