"""Battery energy balance, ramp statistics and the periodic job profile (issue #15, items 3c)."""

import math

import numpy as np
import pytest

from power.battery import Battery, dispatch_ramp_limited
from power.ramps import (PeriodicProfile, add_periodic_bins, fundamental_amplitude, max_ramp, ramp_statistics,
                         square_wave_integral, step_bin_means)


def _bursty_load(n=20000, seed=3):
    rng = np.random.default_rng(seed)
    base = 5e6 + np.cumsum(rng.normal(0, 2e4, n))
    steps = np.repeat(rng.choice([0.0, 1.5e6, -1e6], size=n // 200), 200)
    return base + np.concatenate([steps, np.zeros(n - steps.size)])


@pytest.mark.parametrize("eta", [1.0, 0.85, 0.6])
def test_battery_energy_balance_closes_and_soc_in_bounds(eta):
    bat = Battery(capacity_J=500 * 3.6e6, power_W=2e6, round_trip_efficiency=eta, soc_min_fraction=0.1,
                  soc_max_fraction=0.9, restore_time_s=600.0)
    r = dispatch_ramp_limited(_bursty_load(), 1.0, 1e6 / 60.0, bat)
    # balance: E_in - E_out - losses = delta SoC, to 1e-9 relative to the energy throughput
    scale = r.E_in_J + r.E_out_J
    assert scale > 1e9  # the battery did work (the test cannot pass on an idle battery)
    assert abs(r.balance_residual_J()) <= 1e-9 * scale
    # the per-step series close too: sum of terminal energies = E_out - E_in
    assert math.isclose(float(r.battery_W.sum()), r.E_out_J - r.E_in_J, rel_tol=1e-9, abs_tol=1e-3)
    assert r.soc_J.min() >= 0.1 * bat.capacity_J * (1 - 1e-12)
    assert r.soc_J.max() <= 0.9 * bat.capacity_J * (1 + 1e-12)
    assert np.all(np.abs(r.battery_W) <= 2e6 * (1 + 1e-12))
    # grid = load - battery, bin by bin
    assert np.allclose(r.grid_W + r.battery_W, _bursty_load(), rtol=0, atol=1e-6)
    if eta < 1:
        assert r.E_loss_J > 0
    else:
        assert r.E_loss_J == 0.0


def test_battery_meets_ramp_when_large_enough_and_not_without():
    # a 1.5 MW step every 200 s with a 1 MW/min limit: without a battery the 1 s step is a violation,
    # a 2 MW / 500 kWh battery absorbs every step (each needs at most 1.5 MW for 90 s = 37.5 kWh)
    load = np.where((np.arange(4000) // 400) % 2 == 1, 6.5e6, 5e6)
    none = dispatch_ramp_limited(load, 1.0, 1e6 / 60, None)
    assert none.violations.size == 9  # the 9 edges of the square wave
    bat = Battery(capacity_J=500 * 3.6e6, power_W=2e6, round_trip_efficiency=0.9)
    r = dispatch_ramp_limited(load, 1.0, 1e6 / 60, bat)
    assert r.violations.size == 0
    assert np.max(np.abs(np.diff(r.grid_W))) <= 1e6 / 60 * (1 + 1e-9)
    small = Battery(capacity_J=5 * 3.6e6, power_W=0.2e6, round_trip_efficiency=0.9)
    assert dispatch_ramp_limited(load, 1.0, 1e6 / 60, small).violations.size > 0


def test_battery_rejects_bad_ratings():
    with pytest.raises(ValueError, match="round_trip_efficiency"):
        Battery(capacity_J=1e9, power_W=1e6, round_trip_efficiency=1.2)
    with pytest.raises(ValueError, match="capacity"):
        Battery(capacity_J=0.0, power_W=1e6)


def test_step_bin_means_exact():
    # f = 2 from t=0, +3 at t=1.5, -5 at t=3.25 (hand-built); bins of 1 s from 0
    m = step_bin_means(np.array([0.0, 1.5, 3.25]), np.array([2.0, 3.0, -5.0]), 0.0, 1.0, 5)
    assert np.allclose(m, [2.0, 3.5, 5.0, 0.25 * 5.0 + 0.75 * 0.0, 0.0], rtol=0, atol=1e-12)


def test_ramp_statistic_on_hand_built_step():
    # 1 s bins: 100 W for 130 s, then 700 W for 170 s (300 s). 60 s means: [100, 100, 100+600*50/60, 700, 700]
    x = np.r_[np.full(130, 100.0), np.full(170, 700.0)]
    ramp60, i = max_ramp(x, 1.0, 60.0)
    assert ramp60 == pytest.approx(600.0 * 50 / 60, rel=1e-12) and i == 2
    st = ramp_statistics(x, 1.0, (1.0, 60.0, 150.0))
    assert st[1.0] == pytest.approx(600.0)
    # 150 s means: [100*130/150 + 700*20/150, 700] -> difference 600 * 130/150
    assert st[150.0] == pytest.approx(600.0 * 130 / 150, rel=1e-12)
    assert math.isnan(ramp_statistics(x, 1.0, (900.0,))[900.0])  # fewer than two complete 15 min windows


def test_square_wave_integral_and_bins():
    p = PeriodicProfile(period_s=10.0, duty=0.7, low_W=100.0, high_W=500.0)
    assert p.mean_W == pytest.approx(0.7 * 500 + 0.3 * 100)
    # 25 s = 2 periods (2 * 3800 J) + 5 s at high (2500 J)
    assert square_wave_integral(np.array([25.0]), p)[0] == pytest.approx(2 * 3800 + 2500)
    assert square_wave_integral(np.array([29.0]), p)[0] == pytest.approx(2 * 3800 + 3500 + 200)
    out = np.zeros(40)
    add_periodic_bins(out, 0.0, 1.0, 3.0, 33.0, p, scale=2.0)  # 3 whole periods: zero-mean
    assert out.sum() == pytest.approx(0.0, abs=1e-9)
    assert out[3] == pytest.approx(2.0 * (500 - p.mean_W))
    assert out[3 + 7] == pytest.approx(2.0 * (100 - p.mean_W))
    assert np.all(out[:3] == 0) and np.all(out[33:] == 0)
    floored = PeriodicProfile(period_s=10.0, duty=0.7, low_W=100.0, high_W=500.0, floor_W=400.0)
    assert floored.low_eff_W == 400.0 and floored.mean_W == pytest.approx(470.0)


def test_fundamental_amplitude_of_square_wave():
    # square wave of swing S = 1000 W, duty 0.3, period 20 s, in 0.05 s bins: (2S/pi) sin(pi d) sinc(dt/T)
    p = PeriodicProfile(period_s=20.0, duty=0.3, low_W=0.0, high_W=1000.0)
    dt = 0.05
    x = np.zeros(int(200 / dt))
    add_periodic_bins(x, 0.0, dt, 0.0, 200.0, p, scale=1.0)
    expect = 2 * 1000 / math.pi * math.sin(math.pi * 0.3) * np.sinc(dt / 20.0)
    # the harmonics 1 + m N (N = 400 bins per period) alias onto the fundamental: O(1/N^2) x the sum over m
    assert fundamental_amplitude(x, dt, 20.0) == pytest.approx(expect, rel=1e-4)
    # at T/2 the second harmonic of the square wave: (2S / (2 pi)) |sin(2 pi d)| sinc(dt / (T/2))
    second = 2 * 1000 / (2 * math.pi) * abs(math.sin(2 * math.pi * 0.3)) * np.sinc(dt / 10.0)
    assert fundamental_amplitude(x, dt, 10.0) == pytest.approx(second, rel=1e-4)


def test_kink_bin_means_and_ramped_steps_by_hand():
    from power.ramps import kink_bin_means, ramped_steps
    # f = 2 (t - 1)_+ - 2 (t - 3)_+: 0 until 1, ramp to 4 at 3, then 4. Bins of 1 s: [0, 1, 3, 4, 4]
    m = kink_bin_means(np.array([1.0, 3.0]), np.array([2.0, -2.0]), 0.0, 1.0, 5)
    assert np.allclose(m, [0.0, 1.0, 3.0, 4.0, 4.0], rtol=0, atol=1e-12)
    # a 600 W job from 10 to 100 s at 10 W/s: ramp-in 60 s (deficit 600^2/20 = 18 kJ), ramp-down 60 s after 100
    t, c, deficit, filler = ramped_steps(np.array([10.0]), np.array([100.0]), np.array([600.0]), 10.0)
    assert deficit == pytest.approx(18000.0) and filler == pytest.approx(18000.0)
    f = kink_bin_means(t, c, 0.0, 1.0, 200)
    assert f[9] == 0.0 and f[10] == pytest.approx(5.0) and f[75] == pytest.approx(600.0)
    assert f[100] == pytest.approx(595.0) and f[160] == pytest.approx(0.0, abs=1e-9)
    assert np.max(np.abs(np.diff(f))) <= 10.0 + 1e-9
    # the energy: 600 W x 90 s - deficit + filler
    assert f.sum() == pytest.approx(600 * 90 - 18000 + 18000)
    # a 30 s job shorter than its 60 s ramp reaches 300 W: deficit 600 x 30 - 10 x 30^2 / 2, filler 300^2 / 20
    _, _, d2, f2 = ramped_steps(np.array([0.0]), np.array([30.0]), np.array([600.0]), 10.0)
    assert d2 == pytest.approx(18000 - 4500) and f2 == pytest.approx(4500.0)


def test_windowed_amplitude_sees_a_job_that_the_whole_series_averages_out():
    from power.ramps import windowed_amplitude
    p = PeriodicProfile(period_s=10.0, duty=0.5, low_W=0.0, high_W=1000.0)
    x = np.zeros(36000)
    add_periodic_bins(x, 0.0, 1.0, 0.0, 900.0, p, scale=1.0)  # one 15 min job in 10 h
    a = windowed_amplitude(x, 1.0, 10.0, 900.0)
    # 1 s bins of a 10 s square wave of duty 0.5: N = 10 samples of +-S/2 per period; the DFT bin is
    # (2/N) S |sum_{k<5} exp(-i pi k / 5)| = (2/N) S / sin(pi/N) (geometric sum), 647.2 W for S = 1000 W
    assert a[0] == pytest.approx(2 * 1000 / (10 * math.sin(math.pi / 10)), rel=1e-12)
    assert np.all(a[1:] < 1e-6)
    assert fundamental_amplitude(x, 1.0, 10.0) == pytest.approx(a[0] / 40, rel=1e-9)
