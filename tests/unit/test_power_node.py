"""Unit tests for power.node: node DC power by hand at idle / max / mid utilisation."""

import numpy as np
import pytest
from pydantic import ValidationError

from power import NodePowerParams, load_system, node_power_w

FRONTIER = load_system("frontier").node
THETA = load_system("theta").node


def test_frontier_node_idle_and_max_by_hand():
    # idle: 1 x 90 + 4 x 88 + 74.26 + 4 x 20 + 1 x 30 = 90 + 352 + 74.26 + 80 + 30 = 626.26 W
    assert float(node_power_w(0.0, 0.0, FRONTIER)) == pytest.approx(626.26, rel=1e-15)
    # max: 1 x 280 + 4 x 560 + 74.26 + 80 + 30 = 280 + 2240 + 184.26 = 2704.26 W
    assert float(node_power_w(1.0, 1.0, FRONTIER)) == pytest.approx(2704.26, rel=1e-15)
    assert FRONTIER.idle_W == pytest.approx(626.26) and FRONTIER.max_W == pytest.approx(2704.26)


def test_frontier_node_half_load_by_hand():
    # cpu 90 + 0.5 x 190 = 185; gpu 4 x (88 + 0.5 x 472) = 4 x 324 = 1296; + 184.26 -> 1665.26 W
    assert float(node_power_w(0.5, 0.5, FRONTIER)) == pytest.approx(1665.26, rel=1e-15)


def test_theta_node_idle_and_max_by_hand():
    # idle: 60 (KNL) + 24 (DDR4) + 10 (Aries share) + 3 (SSD) + 10 (other) = 107 W
    # max: 215 + 24 + 10 + 3 + 10 = 262 W; no GPUs so gpu_util has no effect
    assert float(node_power_w(0.0, 0.0, THETA)) == pytest.approx(107.0, rel=1e-15)
    assert float(node_power_w(1.0, 1.0, THETA)) == pytest.approx(262.0, rel=1e-15)
    assert float(node_power_w(1.0, 0.0, THETA)) == pytest.approx(262.0, rel=1e-15)


def test_broadcasting_shape():
    cpu = np.array([[0.0], [1.0]])  # (2, 1)
    gpu = np.array([0.0, 0.5, 1.0])  # (3,)
    p = node_power_w(cpu, gpu, FRONTIER)
    assert p.shape == (2, 3)
    # row 1, col 0: cpu 280 + gpu 352 + 184.26 = 816.26 W
    assert p[1, 0] == pytest.approx(816.26)


@pytest.mark.parametrize("bad", [-0.01, 1.0001, np.nan])
def test_rejects_bad_utilisation(bad):
    with pytest.raises(ValueError, match="cpu_util"):
        node_power_w(np.array([0.2, bad]), 0.0, FRONTIER)
    with pytest.raises(ValueError, match="gpu_util"):
        node_power_w(0.0, bad, FRONTIER)


def test_params_validation():
    with pytest.raises(ValidationError, match="cpu_max_W"):
        NodePowerParams(cpu_idle_W=100.0, cpu_max_W=50.0, cpus_per_node=1)
    with pytest.raises(ValidationError):
        NodePowerParams(cpu_idle_W=-1.0, cpu_max_W=50.0, cpus_per_node=1)
    with pytest.raises(ValidationError):
        NodePowerParams(cpu_idle_W=1.0, cpu_max_W=50.0, cpus_per_node=1, typo_W=3.0)
