"""IntervalReducer: interval means of per-step rows, exact, with one copy of the series at the end (issue #16)."""

import numpy as np

from scheduler_sim.kernel.recorder import IntervalReducer


def test_finish_gives_the_interval_means_in_order_and_again_on_a_second_call():
    rng = np.random.default_rng(7)
    steps = rng.random((4 * 1000, 3))            # 1000 intervals of 4 steps, 3 columns
    r = IntervalReducer(4, 3, chunk_rows=7)      # many small chunks: 1000 / 7 -> 143 chunks
    for i in range(0, steps.shape[0], 13):       # pushed in blocks that do not align with intervals or chunks
        r.push(steps[i:i + 13])
    got = r.finish()
    want = steps.reshape(1000, 4, 3).mean(axis=1)  # the same reduction in one piece
    assert got.shape == (1000, 3)
    assert np.array_equal(got, want)
    assert np.array_equal(r.finish(), want)      # a second call returns the same rows


def test_finish_of_nothing_is_empty():
    assert IntervalReducer(4, 2).finish().shape == (0, 2)
