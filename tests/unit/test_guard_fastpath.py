"""The all-columns pre-check of OutputGuard.check changes nothing it reports (#16: vectorised guard)."""

from __future__ import annotations

import numpy as np

from cooling_fmu import plausibility
from cooling_fmu.plausibility import OutputGuard

NAMES = ["T_sec_sup[1]", "T_sec_sup[2]", "T_sec_ret[1]", "T_fac_sup", "T_tower_out", "P_cooling", "Q_flow_hx[1]"]
UNITS = ["K", "K", "K", "K", "K", "W", "W"]


def _rows(rng, m):
    out = rng.uniform(290.0, 310.0, (m, len(NAMES)))
    out[:, 3] = 295.0  # facility supply below the secondary supplies: approach positive
    kind = rng.integers(0, 8)
    r, c = rng.integers(0, m), rng.choice([0, 1, 2, 3, 4])
    if kind == 1:
        out[r, c] = np.nan
    elif kind == 2:
        out[r, c] = 270.0  # frozen
    elif kind == 3:
        out[r, c] = 380.0  # boiling at 1 atm
    elif kind == 4:
        out[r, 0] = 294.0  # 1 K below the facility supply: approach violated
    elif kind == 5:
        out[r, 4] = 280.0  # tower water 5 K below the wet-bulb of 285 K
    elif kind == 6:
        out[r, c] = np.inf  # the min / max form of the water bounds must catch infinities as the loop does
    elif kind == 7:
        out[r, c] = -np.inf
    return out


def test_fast_path_reports_exactly_what_the_loop_reports(monkeypatch):
    rng = np.random.default_rng(11)
    fast, slow = OutputGuard(NAMES, UNITS), OutputGuard(NAMES, UNITS)
    n_hits = 0
    for k in range(300):
        m = int(rng.integers(1, 20))
        out, t = _rows(rng, m), np.arange(m) * 15.0 + 15.0 * k * 20
        twb = np.full(m, 285.0)
        a = fast.check(t, out, twb)
        monkeypatch.setattr(OutputGuard, "violates", lambda self, o, w=None: True)
        b = slow.check(t, out, twb)
        monkeypatch.undo()
        assert a == b
        n_hits += a is not None
    assert n_hits > 100  # the violations drawn above were found
    assert list(fast.violations) == list(slow.violations)
    for key in fast.violations:
        assert vars(fast.violations[key]) == vars(slow.violations[key]) or \
            repr(fast.violations[key]) == repr(slow.violations[key])
    assert plausibility.T_FREEZE_K == 273.15
