"""One emit (one plant call) per event, and column-block pushes (issue #16 item 5)."""

from __future__ import annotations

import numpy as np
import pytest

from scheduler_sim.recorder import IntervalReducer, StepIntegrator


def test_one_emit_per_advance_holds_the_partial_step_and_the_run():
    """Value 1 on [0, 5), then 3: advancing to 37 s with 10 s steps completes steps 0, 1, 2 in ONE call.

    Hand-computed averages: step 0 = (1 x 5 + 3 x 5) / 10 = 2; steps 1 and 2 = 3.
    """
    calls = []
    integ = StepIntegrator(0.0, 10.0, 2, lambda k0, block: calls.append((k0, block.copy())))
    integ.set(np.array([1.0, 10.0]))
    integ.advance(5.0)
    assert calls == []
    integ.set(np.array([3.0, 30.0]))
    integ.advance(37.0)
    assert len(calls) == 1
    k0, block = calls[0]
    assert k0 == 0
    np.testing.assert_array_equal(block, [[2.0, 20.0], [3.0, 30.0], [3.0, 30.0]])
    assert integ.steps_done == 3
    integ.advance(40.0)  # finishes step 3 alone: one row, (3 x 10) / 10
    assert len(calls) == 2 and calls[1][0] == 3
    np.testing.assert_array_equal(calls[1][1], [[3.0, 30.0]])


def test_push_of_column_blocks_equals_push_of_the_concatenation():
    """Pushing [a, b, c] side by side gives the same interval means as pushing their concatenation."""
    rng = np.random.default_rng(3)
    a, b, c = rng.random((11, 3)), rng.random((11, 1)), rng.random((11, 2))
    r1, r2 = IntervalReducer(2, 6, chunk_rows=2), IntervalReducer(2, 6, chunk_rows=2)
    r1.push([a, b, c])
    r2.push(np.concatenate([a, b, c], axis=1))
    out = r1.finish()
    np.testing.assert_array_equal(out, r2.finish())
    assert out.shape == (5, 6)
    np.testing.assert_array_equal(out[0, :3], (a[0] + a[1]) / 2)


def test_push_refuses_blocks_that_do_not_fill_the_row():
    r = IntervalReducer(1, 4)
    with pytest.raises(ValueError, match="fill 4 columns"):
        r.push([np.zeros((2, 3))])
    with pytest.raises(ValueError, match="one row count"):
        r.push([np.zeros((2, 3)), np.zeros((1, 1))])
