"""Field faults round 3 (issue #21) kind 14: the facility power cap holds at facility level.

The budget caps ``P_facility_W`` (IT + liquid plant + air side + electrical chain + lighting). On the 7-day version
of ``experiments/study_power_cap.toml`` at 80 % (Theta-like system, its FMU plant, Chicago July), the admission that
only looked at the present overhead ratio let the afternoon's tower fans push the facility 2.9 % above the budget
in 2,101 one-minute intervals after the warm-up (main before this fix); with the overhead forecast over the
look-ahead (``scheduler_sim.kernel.powercap.OverheadForecast``) still 81 minutes by up to 1.5e-3; with the
forecast margin (``scheduler.power_cap_forecast_margin``, 5e-3 of the budget held back) none.
"""

from __future__ import annotations

import h5py
import pytest

from scheduler_sim.app.runner import design_peak_w, run_one
from scheduler_sim.app.sweep import load_study

pytestmark = [pytest.mark.fmu, pytest.mark.slow]

#: docs/policies.md, "Facility power cap": after the warm-up, never above the budget in the run (week + drain) with
#: the default forecast margin, and by at most 1e-3 of it without the margin. Measured (session 8, plant v5, towers
#: sized for all their heat): 0 minutes, the peak 5.1e-3 below the budget; without the margin 0 minutes, 8.4e-4
#: below. Before the forecast's steady peak and the fast plant's CDU shares in the chiller regime: 54 min over by
#: up to 3.85e-3 with the margin, 190 min by up to 1.65e-2 without.
MAX_MINUTES_OVER = 0
MAX_REL_EXCESS = 1e-3


def _cap80_week(tmp_path, margin: float | None = None):
    """Run the 7-day cap80 study (the margin overridden when given); return (t, P_facility, budget, after warm-up,
    summary's power_cap_exceeded_s)."""
    _, scenarios = load_study("experiments/study_power_cap.toml")
    sc = next(s for s in scenarios if s.name.endswith("cap80"))
    over = {"trace.window_days": 7.0}
    if margin is not None:
        over["scheduler.power_cap_forecast_margin"] = margin
    cfg = sc.config.with_overrides(over)
    out = tmp_path / "cap80.h5"
    run_one(cfg, out)
    from power import load_system

    cap = 0.8 * design_peak_w(load_system(cfg.system), cfg.scheduler.cooling_estimate)
    with h5py.File(out) as f:
        t = f["timeseries/time_s"][:]
        P = f["timeseries/facility/P_facility_W"][:]
        total_over_s = float(f["summary"].attrs["power_cap_exceeded_s"])
    after = t >= (cfg.trace.window_start_days + cfg.output.warmup_days) * 86400.0
    return t, P, cap, after, total_over_s


def test_forecast_alone_keeps_the_7_day_study_within_1e3_of_the_budget(tmp_path):
    _, P, cap, after, _ = _cap80_week(tmp_path, margin=0.0)
    assert float(((P[after] - cap) / cap).max()) <= MAX_REL_EXCESS


def test_power_cap_holds_facility_power_after_warmup_on_the_7_day_study(tmp_path):
    t, P, cap, after, total_over_s = _cap80_week(tmp_path)
    dt = float(t[1] - t[0])
    over = after & (P > cap)
    minutes = over.sum() * dt / 60.0
    excess = float(((P[after] - cap) / cap).max())
    assert minutes <= MAX_MINUTES_OVER, (minutes, excess)
    assert excess <= MAX_REL_EXCESS, (minutes, excess)
    # the summary's figure counts the whole run: the rest is the first day (jobs placed at the window start)
    assert total_over_s - minutes * 60.0 == pytest.approx(float((~after & (P > cap)).sum()) * dt)
