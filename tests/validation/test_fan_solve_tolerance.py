"""The fast plant's fan solve (Illinois regula falsi, ``ytol``) against the exact bisection of the steady states, and
the one-branch saturated-air enthalpy against ``sat_air`` (bit for bit)."""

from __future__ import annotations

import numpy as np

from cooling_fmu.components import tower
from cooling_fmu.components.moist_air import sat_air, sat_air_enthalpy

P, CP = 101325.0, 4186.0


def test_sat_air_enthalpy_is_sat_airs_enthalpy_bit_for_bit():
    rng = np.random.default_rng(1)
    for T in (rng.uniform(230.0, 272.0, 500), rng.uniform(280.0, 320.0, 500), rng.uniform(240.0, 320.0, 500)):
        assert np.array_equal(sat_air_enthalpy(T, P), sat_air(T, P)[1])  # ice only, liquid only, both
    assert sat_air_enthalpy(300.0, P) == sat_air(300.0, P)[1]


def test_illinois_fan_fraction_within_its_tolerance_of_the_bisection():
    rng = np.random.default_rng(0)
    n = 2000
    m_w = rng.uniform(50.0, 300.0, n)
    T_in = rng.uniform(295.0, 310.0, n)
    T_wb = T_in - rng.uniform(1.0, 15.0, n)
    c, nb = 1.8, -0.6
    Q_full = tower.braun_effectiveness(c, nb, m_w, np.full(n, 400.0), T_in, T_wb, P, CP)[0]
    Q = Q_full * rng.uniform(0.0, 1.2, n)  # some need less than the floor, some more than full fans
    y0 = tower.braun_fan_fraction(c, nb, m_w, 400.0, T_in, T_wb, P, CP, Q, 0.1)
    y1 = tower.braun_fan_fraction(c, nb, m_w, 400.0, T_in, T_wb, P, CP, Q, 0.1, ytol=1e-12)
    assert np.array_equal(y0 == 0.0, y1 == 0.0) and np.array_equal(np.isinf(y0), np.isinf(y1))
    ok = np.isfinite(y0) & (y0 > 0.0)
    assert ok.sum() > 1000
    assert np.max(np.abs(y1[ok] - y0[ok])) <= 1e-12
    # and the heat at the found air flow is the required heat (the solve's own residual)
    Q1 = tower.braun_effectiveness(c, nb, m_w[ok], y1[ok] * 400.0, T_in[ok], T_wb[ok], P, CP)[0]
    assert np.max(np.abs(Q1 / Q[ok] - 1.0)) < 1e-10
    # each row is solved as if alone: a sub-batch gives the same values
    assert np.array_equal(tower.braun_fan_fraction(c, nb, m_w[:7], 400.0, T_in[:7], T_wb[:7], P, CP, Q[:7], 0.1,
                                                   ytol=1e-12), y1[:7])
