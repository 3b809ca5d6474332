"""The per-step work of the cooling coupler does not depend on how steps are grouped into plant calls (#16 item 5).

The coupler receives the completed steps in blocks whose boundaries fall where scheduler events fall. Its per-step
transforms (step averages from running totals, facility overheads, physical bounds) must give the same rows, bit for
bit, whatever the grouping: that is what lets a plant call cover more steps. The reference is the same transform
applied to all steps in one call; the groupings are random cuts of the same steps.
"""

from __future__ import annotations

import numpy as np

from cooling_fmu.coupling import StepAverager
from cooling_fmu.plausibility import OutputGuard
from power import load_system
from power.facility import SERIES, FacilityOverheads
from power.sizing import sized_facility

STEP = 15.0
NAMES = ["T_sec_sup[1]", "T_sec_sup[2]", "T_fac_sup", "T_tower_out", "P_cooling", "E_cooling_out", "P_pump_fac",
         "E_pump_fac_out"]
UNITS = ["K", "K", "K", "K", "W", "J", "W", "J"]


def _series(rng: np.random.Generator, m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Plant outputs (m, 8) with increasing running totals, IT power (m,) and wet-bulb (m,); a few rows out of
    bounds (boiling secondary water, tower water below the wet-bulb) so the guard has something to record."""
    out = np.empty((m, len(NAMES)))
    out[:, 0:2] = rng.uniform(300.0, 310.0, (m, 2))
    out[:, 2] = 295.0
    out[:, 3] = rng.uniform(292.0, 296.0, m)
    out[:, 4] = out[:, 6] = np.nan  # sampled powers: replaced by the step averages
    out[:, 5] = np.cumsum(rng.uniform(1e5, 2e5, m) * STEP)
    out[:, 7] = np.cumsum(rng.uniform(1e4, 2e4, m) * STEP)
    out[rng.choice(m, 5, replace=False), 0] = 380.0
    twb = rng.uniform(270.0, 297.0, m)  # some steps below Theta's economiser limit, some above
    p_it = rng.uniform(1e6, 2e6, m)
    return out, p_it, twb


def _cuts(rng: np.random.Generator, m: int) -> list[int]:
    k = int(rng.integers(1, 40))
    return [0, *sorted(set(rng.integers(1, m, k).tolist())), m]


def test_two_groupings_of_the_same_steps_give_identical_rows_and_records():
    rng = np.random.default_rng(16)
    facility = FacilityOverheads(sized_facility(load_system("theta")), 0.9)
    for _ in range(20):
        m = int(rng.integers(50, 400))
        out, p_it, twb = _series(rng, m)
        t_end = (np.arange(m) + 1.0) * STEP
        results = []
        for cuts in (None, _cuts(rng, m), _cuts(rng, m)):
            cuts = cuts or [0, m]
            avg = StepAverager(NAMES, STEP)
            avg.start(np.zeros(len(NAMES)))
            guard = OutputGuard(NAMES, UNITS)
            y = out.copy()
            cols = []
            for a, b in zip(cuts[:-1], cuts[1:]):
                piece = y[a:b]
                avg.apply(piece)
                guard.check(t_end[a:b], piece, twb[a:b])
                cols.append(facility.evaluate_columns(p_it[a:b], piece[:, 4], twb[a:b]))
            records = {k: vars(v) for k, v in guard.violations.items()}
            results.append((y, np.concatenate(cols), records, avg.last_totals))
        ref = results[0]
        # the step averages are the exact energy differences (hand form), and the facility chain is really on
        assert np.array_equal(ref[0][1:, 4], (out[1:, 5] - out[:-1, 5]) / STEP)
        assert ref[0][0, 4] == out[0, 5] / STEP
        assert ref[1][:, SERIES.index("P_transformer_loss_W")].min() > 0
        assert ref[2]["T_sec_sup boil"]["steps"] == 5
        for other in results[1:]:
            assert np.array_equal(ref[0], other[0])
            assert np.array_equal(ref[1], other[1])
            assert ref[2] == other[2]
            assert ref[3] == other[3]


def test_evaluate_and_evaluate_columns_agree_bit_for_bit():
    rng = np.random.default_rng(5)
    facility = FacilityOverheads(sized_facility(load_system("theta")), 0.85)
    p_it, p_liq, twb = rng.uniform(0.0, 3e6, 100), rng.uniform(0.0, 2e5, 100), rng.uniform(260.0, 300.0, 100)
    cols = facility.evaluate_columns(p_it, p_liq, twb)
    d = facility.evaluate(p_it, p_liq, twb)
    assert cols.flags.c_contiguous and cols.shape == (100, len(SERIES))
    for i, k in enumerate(SERIES):
        assert np.array_equal(cols[:, i], d[k])
    # the UPS loss is the three-term model with the fitted coefficients (power.facility docstring)
    ups = facility.spec.ups
    if ups is not None:
        c0, c1, c2 = ups.loss_coefficients()
        p_in = p_it / facility.spec.pdu.eta if facility.spec.pdu is not None else p_it
        x = ups.share * p_in / ups.rated_W
        assert np.allclose(d["P_ups_loss_W"], ups.rated_W * (c0 + c1 * x + c2 * x * x), rtol=1e-15, atol=0)
