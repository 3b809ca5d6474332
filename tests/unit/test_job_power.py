"""Per-job node power spread (issue 11 item 7): the ARCHER2 mixture, the mapping to utilisation, the spread metric.

Expected values: the ARCHER2 table's own ``Overall`` row (published with the per-application rows), Tukey fences
and node powers worked by hand from the system files, a hand-made power series for the IQR / median metric.
"""

from __future__ import annotations

import numpy as np
import pytest

from power import load_system
from power.job_power import (
    ARCHER2_TABLE,
    NodePowerDistribution,
    draw_job_utilisation,
    it_power_spread,
    utilisation_for_ratio,
)
from power.node import node_power_w


@pytest.fixture(scope="module")
def archer2():
    return NodePowerDistribution.from_table(ARCHER2_TABLE)


def test_table_read_with_fences_and_skips(archer2):
    assert archer2.skipped == ("Smilei",)  # its Q3 cell is empty in the published file
    assert len(archer2.names) == 48 and archer2.weights.sum() == pytest.approx(1.0)
    # VASP: Min 0, Q1 367.0, Median 485.9, Q3 520.7, Max 834.2 -> IQR 153.7, fences 367 - 230.55, 520.7 + 230.55
    k = archer2.knots_W[archer2.names.index("VASP")]
    np.testing.assert_allclose(k, [136.45, 367.0, 485.9, 520.7, 751.25])
    # node-hour weight: 747,652.4 of all 3,554,664.1 - 4,561.4 (Smilei, skipped) node-hours
    assert archer2.weights[archer2.names.index("VASP")] == pytest.approx(747652.4 / (3554664.1 - 4561.4), rel=1e-4)


def test_mixture_reproduces_the_published_overall_quartiles(archer2):
    # 2022-11_CodePower_weighted.csv "Overall" row (all job steps, node-hour weighted): Q1 425.2, median 486.3,
    # Q3 521.6 W. The mixture of the per-application rows must land within 2 % of each.
    q1, med, q3 = archer2.quantile([0.25, 0.5, 0.75])
    assert q1 == pytest.approx(425.2, rel=0.02)
    assert med == pytest.approx(486.3, rel=0.02)
    assert q3 == pytest.approx(521.6, rel=0.02)


def test_single_component_cdf_quantile_mean_by_hand():
    d = NodePowerDistribution(("x",), np.array([[100.0, 200.0, 300.0, 400.0, 600.0]]), np.array([1.0]))
    assert d.cdf(250.0) == pytest.approx(0.375)   # half-way through the second quarter
    assert d.cdf(500.0) == pytest.approx(0.875)
    assert d.quantile(0.5) == pytest.approx(300.0, abs=0.01)
    # mean = 0.25 * (150 + 250 + 350 + 500) = 312.5
    assert d.mean_W == pytest.approx(312.5)
    s = d.sample_W(200_000, np.random.default_rng(1))
    assert s.min() >= 100.0 and s.max() <= 600.0
    assert np.mean(s) == pytest.approx(312.5, rel=3e-3)
    assert np.percentile(s, 75) == pytest.approx(400.0, rel=5e-3)


def test_utilisation_for_ratio_theta_by_hand():
    theta = load_system("theta")
    # Theta node: idle 60 + 24 + 10 + 3 + 10 = 107 W; at default cpu 0.5: 107 + 0.5 x 155 = 184.5 W
    cpu, gpu, clipped = utilisation_for_ratio(np.array([1.0, 1.2, 0.5, 1.5]), theta)
    s12 = (1.2 * 184.5 - 107.0) / 77.5                   # 1.476129...
    np.testing.assert_allclose(cpu, [0.5, 0.5 * s12, 0.0, 1.0])
    assert np.all(gpu == 0.0) and clipped.tolist() == [False, False, True, True]
    assert float(node_power_w(cpu[1], 0.0, theta.node)) == pytest.approx(1.2 * 184.5)


def test_utilisation_for_ratio_frontier_scales_cpu_and_gpu_together():
    fr = load_system("frontier")
    p_def = float(node_power_w(0.5, 0.5, fr.node))
    p_idle = float(node_power_w(0.0, 0.0, fr.node))
    # 90 + 95 + 4 x (88 + 236) + 74.26 + 80 + 30 = 1,665.26 W; idle 90 + 352 + 184.26 = 626.26 W
    assert p_def == pytest.approx(1665.26) and p_idle == pytest.approx(626.26)
    cpu, gpu, _ = utilisation_for_ratio(np.array([1.1]), fr)
    assert cpu[0] == gpu[0] == pytest.approx(0.5 * (1.1 * 1665.26 - 626.26) / (1665.26 - 626.26))
    assert float(node_power_w(cpu[0], gpu[0], fr.node)) == pytest.approx(1.1 * 1665.26)


def test_draws_are_seeded_keep_recorded_values_and_keep_the_mean():
    theta = load_system("theta")
    n = 100_000
    cpu0 = np.full(n, np.nan)
    cpu0[:10] = 0.9  # recorded
    gpu0 = np.full(n, np.nan)
    a = draw_job_utilisation(cpu0, gpu0, theta, seed=3)
    b = draw_job_utilisation(cpu0, gpu0, theta, seed=3)
    c = draw_job_utilisation(cpu0, gpu0, theta, seed=4)
    np.testing.assert_array_equal(a[0], b[0])
    assert not np.array_equal(a[0], c[0])
    assert np.all(a[0][:10] == 0.9) and a[2]["jobs_drawn"] == n  # gpu NaN everywhere -> every row drawn
    assert np.all((a[0] >= 0) & (a[0] <= 1)) and np.all(a[1] == 0.0)
    # the mean node power stays near the default's (clipping at idle / max moves it a little)
    p = node_power_w(a[0][10:], 0.0, theta.node)
    assert p.mean() == pytest.approx(184.5, rel=0.03)
    q1, q3 = np.percentile(p, [25, 75])
    assert 0.15 < (q3 - q1) / np.median(p) < 0.30
    none = draw_job_utilisation(cpu0, gpu0, theta, seed=3, distribution="none")
    assert np.isnan(none[0][10:]).all() and none[2]["jobs_drawn"] == 0
    with pytest.raises(ValueError, match="unknown job power distribution"):
        draw_job_utilisation(cpu0, gpu0, theta, seed=3, distribution="lumi")


def test_it_power_spread_by_hand():
    # 60-s samples: four complete 15-min bins at 1, 2, 3, 4 W and one incomplete bin (left out)
    t = np.arange(0, 4 * 900 + 300, 60.0)
    p = np.r_[np.repeat([1.0, 2.0, 3.0, 4.0], 15), np.full(5, 100.0)]
    # bin means 1, 2, 3, 4: Q1 1.75, median 2.5, Q3 3.25 -> 1.5 / 2.5
    assert it_power_spread(t, p, 0.0, 1e9) == pytest.approx(0.6)
    # the period bounds drop the first bin: means 2, 3, 4 -> (3.5 - 2.5) / 3
    assert it_power_spread(t, p, 900.0, 1e9) == pytest.approx(1.0 / 3.0)
    with pytest.raises(ValueError):
        it_power_spread(t, p, 0.0, 600.0)


def test_sliced_mixture_cdf_is_bit_identical_to_the_masked_one():
    """The mixture table is built by slices of the sorted grid (#16 set-up); every value must equal the
    whole-grid masked form of _component_cdf, bit for bit, including tied knots (jumps) and knots off the grid."""
    from power import job_power as jp

    rng = np.random.default_rng(3)
    g = np.linspace(0.0, 600.0, 2001)
    for _ in range(300):
        kn = (np.sort(rng.choice([0.0, 100.0, 200.0, 250.0, 300.0, 400.0, 650.0], 5)) if rng.random() < 0.5
              else np.sort(rng.uniform(0.0, 700.0, 5)))
        w = float(rng.uniform(0.01, 1.0))
        ref = np.full_like(g, 0.125)
        ref += w * jp._component_cdf(g, kn)
        got = np.full_like(g, 0.125)
        jp._add_component_cdf(got, g, kn, w)
        assert np.array_equal(ref, got), kn
    d = jp.NodePowerDistribution.from_table(jp.ARCHER2_TABLE)
    ref = np.zeros_like(d._grid)
    for wi, ki in zip(d.weights, d.knots_W):
        if wi > 0:
            ref += wi * jp._component_cdf(d._grid, ki)
    assert np.array_equal(ref, d._cdf)
