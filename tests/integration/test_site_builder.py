"""The site builder (#23 items 3-4): `hpctwin site new` writes a commented system and plant sized for the design
day; `hpctwin site check` prints the derived design and refuses (exit 2) a plant that cannot reject full load.
"""

from __future__ import annotations

import re
import tomllib

import numpy as np
import pytest

from cooling_fmu.params import load_plant_params
from cooling_fmu.sizing import plant_capacity, with_tower_cells
from cooling_fmu.weather import design_conditions, resolve_weather_file
from power import PowerChain, node_power_w
from power.system import load_system
from scheduler_sim.app.cli import main
from scheduler_sim.app.site import parse_partition, set_points_k
from scheduler_sim.analysis.headroom import full_load_heat_w

NEW = ["site", "new", "demo", "--partition", "cpu=epyc-7763-2s:512:128:120", "--partition",
       "gpu=h100-sxm-8gpu:64:8:100", "--cooling", "towers", "--site", "chicago", "--feed-MW", "4", "--margin", "0.1"]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    d = tmp_path_factory.mktemp("sites")
    assert main([*NEW, "--out", str(d)]) == 0
    return d


def test_parse_partition():
    p = parse_partition("gpu=a100-4gpu-epyc:1536:128:300")
    assert (p.name, p.node_type, p.nodes, p.nodes_per_rack, p.rack_limit_W) == ("gpu", "a100-4gpu-epyc", 1536, 128,
                                                                               300e3)
    assert parse_partition("cpu=epyc-7763-2s:10").nodes_per_rack is None
    for bad in ("cpu", "cpu=epyc", "cpu=epyc:x", "cpu=epyc:0"):
        with pytest.raises(ValueError, match="--partition"):
            parse_partition(bad)


def test_every_value_carries_a_comment(site):
    for f in ("demo.toml", "demo_plant.toml"):
        for line in (site / f).read_text().splitlines():
            if re.match(r"^[A-Za-z_]+ = ", line):
                assert "#" in line, f"{f}: {line!r} has no source / assumption comment"
    tomllib.loads((site / "demo.toml").read_text())  # valid TOML


def test_generated_system_and_plant(site):
    s = load_system(site / "demo.toml")
    assert [p.name for p in s.partitions] == ["cpu", "gpu"]
    # gpu: 8 nodes per rack as given; DGX H100 at full load 9,556 W DC -> rack input (P + 13)/0.98, + 17/4 W,
    # /0.96 each, 8 nodes + 250 W switch
    per = ((9556.0 + 13.0) / 0.98 + 17.0 / 4) / 0.96
    gpu = s.partition("gpu")
    assert gpu.n_racks == 8
    p = load_plant_params(s.cooling_plant)
    heat = full_load_heat_w(s)
    # CDU design heat = largest full-load CDU heat x 1.1
    assert p.cdu.Q_flow_nominal_W == pytest.approx(1.1 * heat.max(), rel=1e-5)
    assert p.n_cdu == s.n_cdus and not p.chiller.enabled
    assert s.facility.feed.capacity_W == 4e6 and s.facility.feed.redundancy == "N+1"
    # the design day: Chicago 0.4 % wet-bulb; set points max(24 C, wb + 5 K) and + 3 K
    d = design_conditions(resolve_weather_file("chicago"))
    assert (p.tower.T_fac_sup_set_K, p.cdu.T_sec_sup_set_K) == set_points_k(d.wet_bulb_K)
    assert set_points_k(d.wet_bulb_K)[0] == 273.15 + np.ceil(d.wet_bulb_K + 5.0 - 273.15)
    # the plant holds full load x (1 + margin) at the design wet-bulb with the fewest cells that do
    cap = plant_capacity(p, heat, d.wet_bulb_K).heat_W
    assert cap >= 1.1 * heat.sum()
    if p.tower.n_cells > 2:  # 2 cells is the floor
        assert plant_capacity(with_tower_cells(p, -1), heat, d.wet_bulb_K).heat_W < 1.1 * heat.sum()
    else:
        assert p.tower.n_cells == 2
    full = np.concatenate([np.full(q.n_nodes, float(node_power_w(1.0, 1.0, q.node))) for q in s.partitions])
    assert PowerChain(s).evaluate(full).rack_input_W[gpu.first_rack] == pytest.approx(per * 8 + 250.0 / 0.96,
                                                                                       rel=1e-9)


def test_site_check_prints_the_design(site, capsys):
    assert main(["site", "check", "demo", "--dir", str(site)]) == 0
    out = capsys.readouterr().out
    d = design_conditions(resolve_weather_file("chicago"))
    assert f"wet-bulb {d.wet_bulb_K - 273.15:.1f} C" in out and f"dry-bulb {d.dry_bulb_K - 273.15:.1f} C" in out
    for key in ("per CDU", "kW per rack vs limit", "plant capacity at the design wet-bulb", "pumps (rated motor",
                "towers:", "feed 4.000 MW", "firm 2.000 MW with N+1"):
        assert key in out, key


def test_site_check_refuses_a_plant_that_cannot_hold_full_load(site, tmp_path, capsys):
    # the same site with a quarter of its tower and a weaker tower: the check refuses and says what to add
    for f in ("demo.toml", "demo_plant.toml"):
        (tmp_path / f).write_text((site / f).read_text())
    plant = tmp_path / "demo_plant.toml"
    text = plant.read_text()
    text = re.sub(r"^NTU_nominal = [0-9.e+-]+", "NTU_nominal = 0.25", text, flags=re.M)
    plant.write_text(text)
    assert main(["site", "check", str(tmp_path / "demo.toml")]) == 2
    out = capsys.readouterr().out
    assert "REFUSED: the plant cannot reject the full-load heat at the design wet-bulb" in out
    assert re.search(r"add \d+ tower cell\(s\) of the same size|larger CDU heat exchangers", out)


def test_unsupported_topologies_are_refused(tmp_path, capsys):
    assert main(["site", "new", "x", "--partition", "cpu=epyc-7763-2s:64", "--cooling", "air",
                 "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "--cooling air: not supported" in err and len(err.strip().splitlines()) == 1
    assert main(["site", "check", "nowhere", "--dir", str(tmp_path)]) == 2
    assert "no site 'nowhere'" in capsys.readouterr().err


def test_towers_path_counts_the_air_side_heat_in_its_capacity(site):
    # #23 gap (session 9): the towers path chose its cells with a capacity that left out the air side's heat (and
    # wrote the template's Theta figures, 298.56 K and 11.7 kW, into the plant); now both paths write the site's
    # design wet-bulb and the system's air-side heat at the design heat (scheduler_sim.app.site.design_air_side_w),
    # and the capacity counts that heat in proportion to the load (cooling_fmu.sizing.air_side_heat_w)
    from cooling_fmu.modelica import analytic_steady_state
    from cooling_fmu.sizing import air_side_heat_w
    from power.sizing import design_air_side_heat_w

    s = load_system(site / "demo.toml")
    p = load_plant_params(s.cooling_plant)
    d = design_conditions(resolve_weather_file("chicago"))
    design_heat = p.n_cdu * p.cdu.Q_flow_nominal_W
    assert p.tower.T_wb_design_K == pytest.approx(d.wet_bulb_K, abs=1e-3)
    q_air = design_air_side_heat_w(s, design_heat, d.wet_bulb_K)
    assert p.tower.Q_air_side_design_W == pytest.approx(q_air, rel=1e-5)
    assert q_air == pytest.approx(79.0e3, abs=100.0)  # 79.0 kW, as the builder's log says
    heat = full_load_heat_w(s)
    # by hand: the air side at a load is the design value times load / design heat (one CDU here)
    assert air_side_heat_w(p, heat[None, :])[0] == pytest.approx(q_air * heat.sum() / design_heat, rel=1e-5)
    cap = plant_capacity(p, heat, d.wet_bulb_K).heat_W
    # at the capacity the steady state WITH that air-side heat puts the CDU supply at set point + 1 K
    ss = analytic_steady_state(p, heat / heat.sum() * cap, d.wet_bulb_K,
                               Q_air_side_W=p.tower.Q_air_side_design_W * cap / design_heat)
    assert ss["T_sec_sup"].max() == pytest.approx(p.cdu.T_sec_sup_set_K + 1.0, abs=2e-3)
    # the rule without the air side overstated the capacity: at its answer the real plant is above the bound
    bare = p.model_copy(update={"tower": p.tower.model_copy(update={"Q_air_side_design_W": 0.0})})
    cap0 = plant_capacity(bare, heat, d.wet_bulb_K).heat_W
    assert cap0 > cap
    over = analytic_steady_state(p, heat / heat.sum() * cap0, d.wet_bulb_K,
                                 Q_air_side_W=p.tower.Q_air_side_design_W * cap0 / design_heat)
    assert over["T_sec_sup"].max() > p.cdu.T_sec_sup_set_K + 1.0 + 2e-3
