"""One source for the conversion losses: PowerChain computes every loss through power.conversion.

Also holds the tests that kill the mutants that survived the hand-mutation review of issue #27 (NaN path of
``sivoc_loss_w``; the rectifier's quadratic term, through PowerChain).
"""

from __future__ import annotations

import numpy as np
import pytest

from power import PowerChain, System, conversion
from power.conversion import SivocParams, sivoc_loss_w
from tests.conftest import tiny_system_spec

# tiny system: 4 nodes in 1 rack, SIVOC (P + 10 W) / 0.9, rectifier (L + 20 W) / 0.95 (+ k L^2), 2 nodes per
# rectifier, no rack overhead, liquid fraction 1.
ETA_S, PF_S, ETA_R, PF_R = 0.9, 10.0, 0.95, 20.0


def _system(k_rect: float = 0.0, k_sivoc: float = 0.0) -> System:
    spec = tiny_system_spec()
    spec["rectifier"]["k_per_W"] = k_rect
    spec["sivoc"]["k_per_W"] = k_sivoc
    return System.from_spec(spec, source="tiny")


def test_sivoc_loss_nan_output_gives_nan_loss_and_values_elsewhere():
    # Documented: NaN outputs give NaN losses, every other value its loss (P + 13) / 0.98 - P.
    p = SivocParams(P_fixed_W=13.0, eta=0.98)
    got = sivoc_loss_w(np.array([np.nan, 1000.0, 0.0, np.nan]), p)
    assert np.isnan(got[0]) and np.isnan(got[3])
    assert got[1] == pytest.approx(1013.0 / 0.98 - 1000.0, rel=1e-15)   # 33.6734... W
    assert got[2] == pytest.approx(13.0 / 0.98, rel=1e-15)              # no-load loss 13.2653... W
    assert got.shape == (4,)


def test_sivoc_loss_all_nan_and_scalar_nan_give_nan():
    p = SivocParams(P_fixed_W=13.0, eta=0.98)
    assert np.isnan(sivoc_loss_w(np.full((2, 3), np.nan), p)).all()
    assert np.isnan(sivoc_loss_w(float("nan"), p))


def test_sivoc_loss_negative_output_raises_even_beside_nan():
    p = SivocParams(P_fixed_W=13.0, eta=0.98)
    with pytest.raises(ValueError, match=">= 0 W"):
        sivoc_loss_w(np.array([np.nan, -1.0]), p)
    with pytest.raises(ValueError, match=">= 0 W"):
        sivoc_loss_w(np.array([5.0, -1.0]), p)


@pytest.mark.parametrize("allow_affine", [True, False])
def test_rectifier_quadratic_term_through_power_chain_hand_computed(allow_affine):
    # Every node at 200 W DC: SIVOC input s = 210 / 0.9 = 233.33 W; rectifier load L = 2 s = 466.67 W.
    # Rectifier input R = (L + 20) / 0.95 + k L^2; with k = 1e-4 /W the quadratic term adds k L^2 = 21.78 W
    # per rectifier, 43.56 W over the two rectifiers.
    k = 1e-4
    chain = PowerChain(_system(k_rect=k), allow_affine=allow_affine)
    assert not chain.uses_affine_path
    st = chain.evaluate(np.full(4, 200.0))
    s = (200.0 + PF_S) / ETA_S
    L = 2 * s
    R = (L + PF_R) / ETA_R + k * L * L
    assert k * L * L == pytest.approx(21.7777777, rel=1e-8)
    assert st.rectifier_loss_W == pytest.approx(2 * (R - L), rel=1e-13)
    assert st.it_input_W == pytest.approx(2 * R, rel=1e-13)
    assert st.rack_input_W[0] == pytest.approx(2 * R, rel=1e-13)
    assert st.cdu_heat_W[0] == pytest.approx(2 * R, rel=1e-13)
    # the same with k = 0 is lower by exactly the two quadratic terms
    lin = PowerChain(_system(k_rect=0.0)).evaluate(np.full(4, 200.0))
    assert st.it_input_W - lin.it_input_W == pytest.approx(2 * k * L * L, rel=1e-10)
    # per-node attribution: each node carries s / 0.95 + 20 / (0.95 x 2) + k L s
    shares = chain.node_it_input_w(np.full(4, 200.0))
    assert shares == pytest.approx(np.full(4, s / ETA_R + PF_R / (ETA_R * 2) + k * L * s), rel=1e-13)
    assert shares.sum() == pytest.approx(st.it_input_W, rel=1e-13)


def test_rectifier_quadratic_term_uneven_groups_hand_computed():
    # Group 0 (nodes 0, 1) at 100 and 300 W, group 1 idle at 0 W: the quadratic term grows with each group's load.
    k = 2e-4
    chain = PowerChain(_system(k_rect=k))
    p = np.array([100.0, 300.0, 0.0, 0.0])
    s = (p + PF_S) / ETA_S
    L0, L1 = s[0] + s[1], s[2] + s[3]
    R0 = (L0 + PF_R) / ETA_R + k * L0 ** 2
    R1 = (L1 + PF_R) / ETA_R + k * L1 ** 2
    st = chain.evaluate(p)
    assert st.rectifier_loss_W == pytest.approx(R0 - L0 + R1 - L1, rel=1e-13)
    shares = chain.node_it_input_w(p)
    assert shares[1] == pytest.approx(s[1] / ETA_R + PF_R / (2 * ETA_R) + k * L0 * s[1], rel=1e-13)


def _scaled(fn, factor):
    def wrapped(*a, **kw):
        return fn(*a, **kw) * factor
    return wrapped


@pytest.mark.parametrize("k_rect", [0.0, 1e-4])
@pytest.mark.parametrize("name", ["sivoc_input_w", "rectifier_input_w", "linear_loss_w", "rectifier_input_share_w",
                                  "rectifier_no_load_share_w"])
def test_changing_a_conversion_formula_changes_power_chain(monkeypatch, name, k_rect):
    # One source: PowerChain reads its losses from power.conversion at call time, so altering a formula there
    # (here scaled by 1.001) changes the chain's result; a formula the path does not use leaves it alone.
    p = np.array([100.0, 300.0, 250.0, 0.0])
    before = PowerChain(_system(k_rect=k_rect)).evaluate(p)
    before_sh = PowerChain(_system(k_rect=k_rect)).node_it_input_w(p)
    monkeypatch.setattr(conversion, name, _scaled(getattr(conversion, name), 1.001))
    chain = PowerChain(_system(k_rect=k_rect))
    after, after_sh = chain.evaluate(p), chain.node_it_input_w(p)
    changed = (after.conversion_loss_W != before.conversion_loss_W or after.it_input_W != before.it_input_W
               or not np.array_equal(after_sh, before_sh))
    used = {0.0: {"linear_loss_w", "rectifier_no_load_share_w"},
            1e-4: {"sivoc_input_w", "rectifier_input_w", "rectifier_input_share_w", "rectifier_no_load_share_w"}}
    assert changed == (name in used[k_rect])


def test_changing_a_loss_coefficient_changes_power_chain_on_both_paths():
    # The SIVOC fixed term 10 -> 11 W adds 4 x 1 / (0.9 x 0.95) W of rack input, affine and general path alike.
    p = np.full(4, 200.0)
    spec = tiny_system_spec()
    spec["sivoc"]["P_fixed_W"] = 11.0
    sys11 = System.from_spec(spec, source="tiny")
    for affine in (True, False):
        d = PowerChain(sys11, allow_affine=affine).evaluate(p).it_input_W - \
            PowerChain(_system(), allow_affine=affine).evaluate(p).it_input_W
        assert d == pytest.approx(4 / (ETA_S * ETA_R), rel=1e-9)


def test_linear_helpers_reject_a_quadratic_stage():
    q = SivocParams(P_fixed_W=1.0, eta=0.9, k_per_W=1e-4)
    with pytest.raises(ValueError, match="k_per_W == 0"):
        conversion.linear_loss_w(100.0, 1, q)
    with pytest.raises(ValueError, match="k_per_W == 0"):
        conversion.two_stage_affine_w(q, conversion.RectifierParams(P_fixed_W=1.0, eta=0.9, nodes_per_rectifier=2))


def test_linear_loss_matches_stage_inputs_summed():
    # k = 0: the loss of n stages carrying a total P equals the sum of their individual losses, whatever the split.
    p = SivocParams(P_fixed_W=13.0, eta=0.98)
    outs = np.array([0.0, 120.0, 2000.0])
    assert conversion.linear_loss_w(outs.sum(), 3, p) == pytest.approx(
        float((conversion.sivoc_input_w(outs, p) - outs).sum()), rel=1e-13)
    assert conversion.linear_loss_w(outs.sum() * 10.0, 3, p, 10.0) == pytest.approx(
        10.0 * float((conversion.sivoc_input_w(outs, p) - outs).sum()), rel=1e-13)


_FORMULAS = ("sivoc_input_w", "rectifier_input_w", "linear_loss_w", "two_stage_affine_w",
             "rectifier_no_load_share_w", "rectifier_input_share_w")


def _spy(monkeypatch, system):
    """Record ``(formula, stage)`` for every call of a power.conversion formula; stage from the params passed."""
    calls = set()

    def wrap(name, fn):
        def spied(*a, **kw):
            for x in (*a, *kw.values()):
                if x is system.sivoc:
                    calls.add((name, "sivoc"))
                if x is system.rectifier:
                    calls.add((name, "rectifier"))
            return fn(*a, **kw)
        return spied

    for name in _FORMULAS:
        monkeypatch.setattr(conversion, name, wrap(name, getattr(conversion, name)))
    return calls


def test_every_loss_of_the_affine_path_comes_from_conversion(monkeypatch):
    # Each loss of each stage is computed by conversion's formula for that stage (a partial inline copy, e.g. of
    # the SIVOC total only, is caught because the stage is recorded with the call).
    system = _system()
    calls = _spy(monkeypatch, system)
    chain = PowerChain(system)
    assert chain.uses_affine_path
    assert calls == {("two_stage_affine_w", "sivoc"), ("two_stage_affine_w", "rectifier"),
                     ("rectifier_no_load_share_w", "rectifier")}
    calls.clear()
    chain.evaluate(np.full(4, 200.0))
    assert calls == {("linear_loss_w", "sivoc"), ("linear_loss_w", "rectifier")}
    calls.clear()
    chain.rack_energy_split(np.array([1e6]), 100.0)
    assert calls == {("linear_loss_w", "sivoc")}


@pytest.mark.parametrize("allow_affine,k_rect", [(False, 0.0), (True, 1e-4)])
def test_every_loss_of_the_general_path_comes_from_conversion(monkeypatch, allow_affine, k_rect):
    system = _system(k_rect=k_rect)
    calls = _spy(monkeypatch, system)
    chain = PowerChain(system, allow_affine=allow_affine)
    assert not chain.uses_affine_path
    calls.clear()
    chain.evaluate(np.full(4, 200.0))
    assert calls == {("sivoc_input_w", "sivoc"), ("rectifier_input_w", "rectifier")}
    calls.clear()
    chain.node_it_input_w(np.full(4, 200.0))
    assert calls == {("sivoc_input_w", "sivoc"), ("rectifier_input_w", "rectifier"),
                     ("rectifier_input_share_w", "rectifier"), ("rectifier_no_load_share_w", "rectifier")}
