"""The vectorised [D-]HH:MM:SS path of the sacct loader gives exactly parse_slurm_duration's float (#16 item 7)."""

from __future__ import annotations

import math

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from dataloaders.slurm import _durations, parse_slurm_duration

_num = st.integers(0, 10**10).map(str) | st.sampled_from(["00", "07", "59", "000000001"])
_forms = st.one_of(
    st.builds(lambda h, m, s: f"{h}:{m}:{s}", _num, _num, _num),
    st.builds(lambda d, h, m, s: f"{d}-{h}:{m}:{s}", _num, _num, _num, _num),
    st.builds(lambda m, s: f"{m}:{s}", _num, _num),
    st.builds(lambda m, s, f: f"{m}:{s}.{f}", _num, _num, st.integers(0, 999)),
    st.sampled_from(["UNLIMITED", "Partition_Limit", "", " 01:02:03", "1-2", "1:2:3:4", "x", "-1:00:00", "٣:00:00"]),
    st.text(max_size=12),
)


def _ref(text: str) -> tuple[float, bool]:
    try:
        return parse_slurm_duration(text, bare_unit_s=60.0), False
    except ValueError:
        return math.nan, True


@settings(max_examples=300, deadline=None)
@given(st.lists(_forms, min_size=1, max_size=40))
def test_vectorised_equals_scalar(values):
    vals, bad = _durations(pd.Series(values, dtype=object), bare_unit_s=60.0)
    for v, b, text in zip(vals, bad, values):
        r, rb = _ref(text)
        assert b == rb, text
        assert (v == r) or (math.isnan(v) and math.isnan(r)), (text, v, r)


def test_hand_values():
    """1-02:03:04 = 86,400 + 7,200 + 180 + 4 = 93,784 s; 00:00:00 = 0; a 10-digit part takes the scalar path."""
    vals, bad = _durations(pd.Series(["1-02:03:04", "00:00:00", "1234567890:00:00"]), bare_unit_s=60.0)
    assert vals.tolist() == [93784.0, 0.0, 1234567890 * 3600.0] and not bad.any()
