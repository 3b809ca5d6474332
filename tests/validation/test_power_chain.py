"""Validation of power.chain: energy balance, attribution, fast path == general path, efficiency vs load,
and the Frontier-like system against RAPS's published idle / full / loss figures."""

import tomllib

import numpy as np
import pytest

from power import PowerChain, System, load_system, node_power_w
from power.system import SYSTEMS_DIR

SYSTEMS = ["theta", "frontier"]


def _random_dc(s: System, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return node_power_w(rng.random(s.n_nodes), rng.random(s.n_nodes), s.node)


def _with(name: str, **over) -> System:
    """A bundled system with some TOML sections overridden (e.g. a non-zero I^2R term, AC overhead)."""
    spec = tomllib.loads((SYSTEMS_DIR / f"{name}.toml").read_text())
    for sec, vals in over.items():
        spec[sec] = {**spec[sec], **vals}
    return System.from_spec(spec, source=f"{name}+override")


def _theta_ac() -> System:
    spec = tomllib.loads((SYSTEMS_DIR / "theta.toml").read_text())
    spec["rack_overhead"]["side"] = "ac"
    spec["rectifier"]["k_per_W"] = 3e-6
    spec["liquid_fraction"] = 0.9
    return System.from_spec(spec, source="theta+ac")


VARIANTS = {
    "theta": lambda: load_system("theta"),
    "frontier": lambda: load_system("frontier"),
    "frontier_quadratic": lambda: _with("frontier", sivoc={"k_per_W": 2e-6}, rectifier={"k_per_W": 1e-6}),
    "theta_ac_overhead_quadratic_lf0.9": _theta_ac,
}


def _reference(s: System, p: np.ndarray) -> tuple[float, np.ndarray]:
    """Independent, loop-based reference of the chain (tests only): IT input and per-rack input."""
    sv, r = s.sivoc, s.rectifier
    s_in = (p + sv.P_fixed_W) / sv.eta + sv.k_per_W * p**2
    rack_in = np.zeros(s.n_racks)
    rect_per_rack = np.bincount(s.rectifier_rack, minlength=s.n_racks)
    for g in range(s.n_rectifiers):
        rack = s.rectifier_rack[g]
        load = s_in[s.node_rectifier == g].sum()
        if s.rack_overhead_side == "dc":
            load += s.rack_overhead_W / rect_per_rack[rack]
        rack_in[rack] += (load + r.P_fixed_W) / r.eta + r.k_per_W * load**2
    if s.rack_overhead_side == "ac":
        rack_in += s.rack_overhead_W
    return rack_in.sum(), rack_in


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_energy_balance_and_reference(variant):
    s = VARIANTS[variant]()
    ch = PowerChain(s)
    p = _random_dc(s, seed=1)
    st = ch.evaluate(p)
    # node DC + SIVOC loss + rectifier loss + overhead == IT input (sum of rack input), 1e-12 relative
    parts = st.node_dc_W + st.sivoc_loss_W + st.rectifier_loss_W + st.rack_overhead_W
    assert parts == pytest.approx(st.it_input_W, rel=1e-12)
    assert st.rack_input_W.sum() == pytest.approx(st.it_input_W, rel=1e-12)
    # CDU heat = liquid_fraction x rack input, summed per CDU
    assert st.cdu_heat_W.shape == (s.n_cdus,)
    assert st.cdu_heat_W.sum() == pytest.approx(s.liquid_fraction * st.it_input_W, rel=1e-12)
    np.testing.assert_allclose(
        st.cdu_heat_W, s.liquid_fraction * np.bincount(s.rack_cdu, st.rack_input_W, s.n_cdus), rtol=1e-12
    )
    # against the loop reference
    it_ref, rack_ref = _reference(s, p)
    assert st.it_input_W == pytest.approx(it_ref, rel=1e-12)
    np.testing.assert_allclose(st.rack_input_W, rack_ref, rtol=1e-12)
    # CDU own power (a plant figure) never enters IT power
    spec = tomllib.loads((SYSTEMS_DIR / "frontier.toml").read_text())
    spec["cdu"]["P_own_W"] = 0.0
    s0 = System.from_spec(spec)
    p0 = np.full(s0.n_nodes, 1000.0)
    assert PowerChain(s0).evaluate(p0).it_input_W == PowerChain(load_system("frontier")).evaluate(p0).it_input_W


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_attribution_sums_exactly(variant):
    s = VARIANTS[variant]()
    ch = PowerChain(s)
    p = _random_dc(s, seed=2)
    shares = ch.node_it_input_w(p)
    st = ch.evaluate(p)
    assert shares.shape == (s.n_nodes,)
    assert shares.sum() == pytest.approx(st.it_input_W, rel=1e-12)
    np.testing.assert_allclose(np.bincount(s.node_rack, shares, s.n_racks), st.rack_input_W, rtol=1e-12)
    # each node pays at least its own SIVOC input / eta_r
    s_in = (p + s.sivoc.P_fixed_W) / s.sivoc.eta
    assert np.all(shares >= s_in / s.rectifier.eta - 1e-9)


@pytest.mark.parametrize("name", SYSTEMS)
def test_affine_path_equals_general_path(name):
    s = load_system(name)
    fast, general = PowerChain(s), PowerChain(s, allow_affine=False)
    assert fast.uses_affine_path and not general.uses_affine_path
    for seed in range(3):
        p = _random_dc(s, seed)
        p[::7] = 0.0  # some nodes powered off
        a, b = fast.evaluate(p), general.evaluate(p)
        for f in ("node_dc_W", "sivoc_loss_W", "rectifier_loss_W", "rack_overhead_W", "it_input_W"):
            assert getattr(a, f) == pytest.approx(getattr(b, f), rel=1e-12), f
        np.testing.assert_allclose(a.rack_input_W, b.rack_input_W, rtol=1e-12)
        np.testing.assert_allclose(a.cdu_heat_W, b.cdu_heat_W, rtol=1e-12)
        np.testing.assert_allclose(fast.node_it_input_w(p), general.node_it_input_w(p), rtol=1e-12)


def test_quadratic_disables_affine_path():
    assert not PowerChain(VARIANTS["frontier_quadratic"]()).uses_affine_path


@pytest.mark.parametrize("name", SYSTEMS)
def test_efficiency_rises_with_load(name):
    s = load_system(name)
    ch = PowerChain(s)
    u = np.linspace(0.0, 1.0, 11)
    itue = [ch.evaluate(np.full(s.n_nodes, float(node_power_w(x, x, s.node)))).itue for x in u]
    # ITUE = rack input / component DC power falls (efficiency rises) strictly with uniform load
    assert np.all(np.diff(itue) < 0) and itue[-1] > 1.0


def test_efficiency_peak_with_quadratic_term():
    from power import SivocParams, conversion_efficiency

    p = SivocParams(P_fixed_W=13.0, eta=0.98, k_per_W=1e-5)
    x_star = np.sqrt(13.0 / (0.98 * 1e-5))  # d/dx (x / ((x+Pf)/eta + k x^2)) = 0 -> x* = sqrt(Pf / (eta k))
    e = conversion_efficiency(np.array([0.5, 1.0, 2.0]) * x_star, p)
    assert e[1] > e[0] and e[1] > e[2]


def test_frontier_vs_raps_published():
    """Frontier-like idle / full vs RAPS (Brewer et al., SC24; DESIGN.md): ~7.3 MW, ~28.2 MW, ~6.4 % loss.

    RAPS's system power = rack input + 25 CDUs x 8,473.47 W (its power_cdu). We keep CDU power out of IT
    (it is a cooling-plant figure), so IT = RAPS total - 211,836.75 W. The published figures carry 2-3
    significant digits ("~7.3", "~28.2", "~6.4 %"), so the tolerance is half a unit of the last digit:
    +-0.05 MW and +-0.05 percentage points.
    """
    s = load_system("frontier")
    ch = PowerChain(s)
    cdu_W = s.n_cdus * s.cdu_own_power_W  # 25 x 8473.47 = 211,836.75 W
    assert cdu_W == pytest.approx(211836.75)

    idle = ch.evaluate(np.full(s.n_nodes, float(node_power_w(0.0, 0.0, s.node))))
    # per node: SIVOC (626.26 + 13) / 0.98 = 652.306122 W; rectifier out 4 x 652.306122 + 250 = 2859.224490 W
    # rectifier in (2859.224490 + 17) / 0.96 = 2996.067177 W; x 32 per rack x 74 racks = 7,094,687.07 W
    assert idle.it_input_W == pytest.approx(7_094_687.07, abs=0.01)
    assert abs(idle.it_input_W + cdu_W - 7.3e6) <= 0.05e6  # 7,306,523.82 W

    full = ch.evaluate(np.full(s.n_nodes, float(node_power_w(1.0, 1.0, s.node))))
    # per node: SIVOC 2717.26 / 0.98 = 2772.714286 W; rectifier out 4 x 2772.714286 + 250 = 11340.857143 W
    # rectifier in 11357.857143 / 0.96 = 11831.101190 W; x 32 x 74 = 28,016,047.62 W
    assert full.it_input_W == pytest.approx(28_016_047.62, abs=0.01)
    assert abs(full.it_input_W + cdu_W - 28.2e6) <= 0.05e6  # 28,227,884.37 W

    # losses at full load: SIVOC 9472 x 68.454286 = 648,398.99 W; rectifier 2368 x 490.244048 = 1,160,897.90 W
    loss = full.conversion_loss_W
    assert loss == pytest.approx(648_398.99 + 1_160_897.90, abs=0.02)
    assert abs(100 * loss / (full.it_input_W + cdu_W) - 6.4) <= 0.05  # 6.410 % of RAPS total (RAPS basis)
    assert 100 * loss / full.it_input_W == pytest.approx(6.458, abs=0.001)  # 6.458 % of IT input (ours)


@pytest.mark.parametrize("bad", [np.nan, -1.0, np.inf])
def test_rejects_bad_node_power(bad):
    s = load_system("theta")
    ch = PowerChain(s)
    p = np.full(s.n_nodes, 100.0)
    p[5] = bad
    with pytest.raises(ValueError):
        ch.evaluate(p)
    with pytest.raises(ValueError):
        ch.node_it_input_w(p)
    with pytest.raises(ValueError, match="shape"):
        ch.evaluate(np.zeros(s.n_nodes - 1))


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_combined_and_per_node_methods_are_the_whole_machine_methods_bit_for_bit(variant):
    """evaluate_with_shares / node_it_input_w_of (the event loop's calls) against evaluate / node_it_input_w: the
    same float64 values exactly (array_equal, ==), on the affine and the general path."""
    s = VARIANTS[variant]()
    ch = PowerChain(s)
    rng = np.random.default_rng(7)
    for seed in range(3):
        p = _random_dc(s, seed)
        p[::5] = 0.0
        st, shares = ch.evaluate_with_shares(p)
        ref = ch.evaluate(p)
        for f in ("node_dc_W", "sivoc_loss_W", "rectifier_loss_W", "rack_overhead_W", "it_input_W"):
            assert getattr(st, f) == getattr(ref, f), f
        assert np.array_equal(st.rack_input_W, ref.rack_input_W)
        assert np.array_equal(st.cdu_heat_W, ref.cdu_heat_W)
        assert np.array_equal(shares, ch.node_it_input_w(p))
        nodes = np.sort(rng.choice(s.n_nodes, size=37, replace=False))
        assert np.array_equal(ch.node_it_input_w_of(p, nodes), ch.node_it_input_w(p)[nodes])


@pytest.mark.parametrize("bad", [np.nan, -1.0, np.inf])
def test_combined_and_per_node_methods_reject_bad_node_power(bad):
    ch = PowerChain(load_system("theta"))
    p = np.full(ch.system.n_nodes, 100.0)
    p[5] = bad
    with pytest.raises(ValueError):
        ch.evaluate_with_shares(p)
    with pytest.raises(ValueError):
        ch.node_it_input_w_of(p, np.array([4, 5, 6]))
    assert np.array_equal(ch.node_it_input_w_of(p, np.array([4, 6])), ch.node_it_input_w(np.full(p.size, 100.0))[[4, 6]])
    with pytest.raises(ValueError, match="shape"):
        ch.node_it_input_w_of(np.zeros(ch.system.n_nodes - 1), np.array([0]))
