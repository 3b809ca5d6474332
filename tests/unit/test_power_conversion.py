"""Unit tests for power.conversion at the Frontier datasheet (RAPS fit) points."""

import numpy as np
import pytest

from power import (
    RectifierParams,
    SivocParams,
    conversion_efficiency,
    load_system,
    rectifier_input_w,
    sivoc_input_w,
)

SIVOC = SivocParams(P_fixed_W=13.0, eta=0.98)
RECT = RectifierParams(P_fixed_W=17.0, eta=0.96, nodes_per_rectifier=4)


def test_frontier_file_matches_reference_fit():
    s = load_system("frontier")
    assert s.sivoc == SIVOC
    assert s.rectifier == RECT


def test_sivoc_at_1kw():
    # (1000 + 13) / 0.98 = 1033.673469387755 W; efficiency 1000 / 1033.67... = 0.967423...
    assert float(sivoc_input_w(1000.0, SIVOC)) == pytest.approx(1033.673469387755, rel=1e-14)
    assert float(conversion_efficiency(1000.0, SIVOC)) == pytest.approx(1000.0 / 1033.673469387755, rel=1e-14)


def test_sivoc_at_frontier_node_max():
    # node max 2704.26 W -> (2704.26 + 13) / 0.98 = 2717.26 / 0.98 = 2772.7142857142853 W
    assert float(sivoc_input_w(2704.26, SIVOC)) == pytest.approx(2772.7142857142853, rel=1e-14)


def test_rectifier_at_3kw_and_at_full_frontier_group():
    # (3000 + 17) / 0.96 = 3142.708333... W
    assert float(rectifier_input_w(3000.0, RECT)) == pytest.approx(3142.7083333333335, rel=1e-14)
    # full group: 4 x 2772.7142857 + 250 (switch share) = 11340.857142857 W out
    #   -> (11340.857142857 + 17) / 0.96 = 11831.101190476 W in
    out = 4 * 2772.7142857142853 + 250.0
    assert float(rectifier_input_w(out, RECT)) == pytest.approx(11831.10119047619, rel=1e-13)
    assert float(conversion_efficiency(out, RECT)) == pytest.approx(out / 11831.10119047619, rel=1e-13)


def test_quadratic_term():
    p = SivocParams(P_fixed_W=10.0, eta=0.9, k_per_W=1e-5)
    # (100 + 10) / 0.9 + 1e-5 x 100^2 = 122.2222... + 0.1 = 122.3222... W
    assert float(sivoc_input_w(100.0, p)) == pytest.approx(110.0 / 0.9 + 0.1, rel=1e-14)


def test_zero_load_is_no_load_loss():
    # 13 / 0.98 = 13.265306... W drawn at zero output; efficiency 0
    assert float(sivoc_input_w(0.0, SIVOC)) == pytest.approx(13.0 / 0.98)
    assert float(conversion_efficiency(0.0, SIVOC)) == 0.0


def test_array_shape_kept():
    x = np.linspace(0.0, 3000.0, 12).reshape(3, 4)
    assert rectifier_input_w(x, RECT).shape == (3, 4)


@pytest.mark.parametrize("bad", [-1.0, np.nan])
def test_rejects_negative_or_nan(bad):
    with pytest.raises(ValueError):
        sivoc_input_w(np.array([1.0, bad]), SIVOC)
    with pytest.raises(ValueError):
        rectifier_input_w(bad, RECT)


def test_params_ranges():
    with pytest.raises(ValueError):
        SivocParams(P_fixed_W=1.0, eta=1.2)
    with pytest.raises(ValueError):
        RectifierParams(P_fixed_W=1.0, eta=0.9, nodes_per_rectifier=0)
