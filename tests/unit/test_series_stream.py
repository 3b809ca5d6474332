"""The block appender and the series stream (issue #26 item 3: series streamed into the file as the run goes)."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from scheduler_sim.io.stream import BlockAppender, SeriesStream, block_rows_for
from scheduler_sim.kernel.recorder import IntervalReducer, streaming


def _resizable(f: h5py.File, name: str, row_shape: tuple[int, ...], chunk: int) -> h5py.Dataset:
    return f.create_dataset(name, shape=(0,) + row_shape, maxshape=(None,) + row_shape, chunks=(chunk,) + row_shape,
                            dtype=float, compression="gzip", shuffle=True)


def test_block_appender_grows_the_dataset_one_whole_block_at_a_time_with_exact_values(tmp_path):
    """Blocks of 4 rows: appends of 3, 5 and 6 rows (14) give writes at 4, 8, 12 rows, the last 2 rows only at
    flush; every value is the one appended, in order (2-D rows of 3 values)."""
    with h5py.File(tmp_path / "a.h5", "w") as f:
        ds = _resizable(f, "x", (3,), 4)
        app = BlockAppender(ds, 4)
        rows = np.arange(42, dtype=float).reshape(14, 3) * 0.1  # values not exact in binary: copied, not recomputed
        app.append(rows[:3])
        assert ds.shape == (0, 3) and app.n_rows == 3  # held in the block
        app.append(rows[3:8])
        assert ds.shape == (8, 3) and app.n_rows == 8  # two whole blocks written (at 4, then 8)
        app.append(rows[8:14])
        assert ds.shape == (12, 3) and app.n_rows == 14
        app.flush()
        assert ds.shape == (14, 3)
        app.flush()  # an empty block writes nothing
        assert ds.shape == (14, 3)
        np.testing.assert_array_equal(ds[()], rows)  # bit for bit


def test_block_appender_one_dimensional_and_block_of_one_row(tmp_path):
    """A 1-D series with a block of one row is written row by row; a zero block is refused."""
    with h5py.File(tmp_path / "b.h5", "w") as f:
        ds = _resizable(f, "y", (), 1)
        app = BlockAppender(ds, 1)
        app.append(np.array([1.5, -2.25, np.nan]))
        assert ds.shape == (3,)
        np.testing.assert_array_equal(ds[()], [1.5, -2.25, np.nan])
        with pytest.raises(ValueError, match="block_rows must be >= 1"):
            BlockAppender(ds, 0)


def test_block_rows_for_keeps_a_block_within_64_kib():
    """64 KiB blocks: 8,192 float64 values of a 1-D series, 341 rows of 24 racks, at least one row."""
    assert block_rows_for(()) == 8192
    assert block_rows_for((24,)) == 65536 // (24 * 8) == 341
    assert block_rows_for((100_000,)) == 1


def test_reducer_streams_every_interval_to_the_file_as_the_in_memory_reducer_keeps_it(tmp_path):
    """The same steps through a streamed and an in-memory reducer (a buffer of 8 steps, 2 steps an interval, so
    blocks of 4 intervals reach the stream during the run): the file holds the in-memory intervals bit for bit,
    time_s = t0 + (i * ratio) * step, and the rows reached the file before the end (streamed, not held)."""
    rng = np.random.default_rng(5)
    steps = rng.random((22, 3)) * 1e5
    ref = IntervalReducer(2, 3, chunk_rows=4)
    ref.push(steps)
    want = ref.finish()
    plan = [("facility", "P_it_W", lambda r: r[:, 0], None, ()),
            ("cdu", "Q_flow_W", lambda r: r[:, 1:3], None, (2,))]
    out = tmp_path / "s.h5"
    stream = SeriesStream(out, plan, 100.0, (2, 15.0))
    with streaming(stream):
        red = IntervalReducer(2, 3, chunk_rows=4)
    other = IntervalReducer(2, 3)  # made after: keeps its rows (a rollout's reducer)
    assert red.sink is stream and other.sink is None
    red.push(steps[:9])
    assert stream.n_rows == 4  # one block of 4 intervals streamed during the run
    red.push(steps[9:])
    assert red.finish().shape == (0, 3)
    assert stream.finish() == 11
    fac, cdu = stream.group("facility"), stream.group("cdu")
    np.testing.assert_array_equal(fac["P_it_W"], want[:, 0])
    np.testing.assert_array_equal(cdu["Q_flow_W"], want[:, 1:3])
    fac["P_x_W"] = want[:, 0] * 2.0  # an end-of-run series
    assert list(fac) == ["P_it_W", "P_x_W"] and "P_x_W" in fac and len(cdu) == 1
    with stream.sealing():
        pass
    assert out.exists() and stream.sealed
    with h5py.File(out) as f:
        np.testing.assert_array_equal(f["timeseries/time_s"][()], 100.0 + (np.arange(11) * 2) * 15.0)
        assert f["timeseries/facility/P_it_W"].attrs["units"] == "W"
        assert f["timeseries/facility/P_it_W"].chunks == (8192,)
        assert "content_sha256" in f.attrs
    np.testing.assert_array_equal(fac["P_x_W"], want[:, 0] * 2.0)  # read from the published file now
    with pytest.raises(RuntimeError, match="sealed"):
        fac["P_y_W"] = want[:, 0]


def test_a_temporary_stream_is_removed_with_its_result(tmp_path):
    """No output file: the series go to a private temporary file, readable after the run and removed when the
    stream is freed (so a run without output holds no series in memory and leaves nothing behind)."""
    import gc

    stream = SeriesStream(None, [("facility", "P_it_W", lambda r: r[:, 0], None, ())], 0.0, (1, 60.0))
    stream(np.ones((5, 1)))
    stream.finish()
    stream.seal_temporary()
    path = stream.path
    assert path.exists()
    with h5py.File(path) as f:
        assert "content_sha256" not in f.attrs  # a scratch file: no digest computed
    np.testing.assert_array_equal(stream.group("facility")["P_it_W"], np.ones(5))
    del stream
    gc.collect()
    assert not path.exists() and not path.parent.exists()


@pytest.mark.parametrize("k", [1, 2, 3, 6, 24])
def test_column_sums_in_blocks_equal_numpys_whole_array_sum(tmp_path, k):
    """The attribution's rack energies summed block by block from the stream (blocks of 1,000 rows over 25,001
    rows) equal numpy's sum over axis 0 of the whole array, bit for bit, for one column (read whole: pairwise)
    and for 2-24 columns (row by row); a dict of arrays gives the same; an absent series has no columns."""
    from scheduler_sim.analysis.attribution import column_sums

    rng = np.random.default_rng(k)
    a = rng.standard_normal((25_001, k)) * 1e5 + 3e5
    stream = SeriesStream(tmp_path / f"c{k}.h5", [("rack", "P_in_W", lambda r: r, None, (k,))], 0.0, (1, 60.0))
    stream(a)
    stream.finish()
    want = a.sum(axis=0)
    got = column_sums(stream.group("rack"), "P_in_W", len(a), rows=1000)
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
    assert column_sums({"P_in_W": a}, "P_in_W", len(a)).tobytes() == want.tobytes()
    assert column_sums(stream.group("rack"), "P_x_W", 7).shape == (0,)
    stream.discard()
