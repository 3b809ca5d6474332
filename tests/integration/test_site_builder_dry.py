"""The site builder's dry-cooler and hybrid topologies (#23 items 3-4, #22 item 6): `hpctwin site new --cooling
dry|hybrid` writes a commented plant whose bank is sized for ALL the heat it rejects (rack heat, pumps' shaft work,
the air side; cooling_fmu.sizing.size_dry_cooler on design_tower_heat_w) at the design dry-bulb, with one spare
unit (N+1); `hpctwin site check` reports the bank, N+1 and refuses a set point the dry-bulb does not allow."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from cooling_fmu.components.drycooler import CP_AIR_J_KGK, SPECIFIC_FAN_POWER_W_PER_W
from cooling_fmu.modelica import analytic_steady_state
from cooling_fmu.params import load_plant_params
from cooling_fmu.sizing import design_tower_heat_w
from cooling_fmu.weather import design_conditions, resolve_weather_file
from power.system import load_system
from scheduler_sim.analysis.headroom import full_load_heat_w
from scheduler_sim.app.cli import main

ARGS = ["--partition", "cpu=epyc-7763-2s:512:128:120", "--partition", "gpu=h100-sxm-8gpu:64:8:100", "--site",
        "chicago", "--feed-MW", "4", "--margin", "0.1"]


@pytest.fixture(scope="module")
def sites(tmp_path_factory):
    d = tmp_path_factory.mktemp("dry-sites")
    for c in ("dry", "hybrid"):
        assert main(["site", "new", f"s{c}", *ARGS, "--cooling", c, "--out", str(d)]) == 0
    return d


def _eps_crossflow(ntu: float, cr: float) -> float:  # Incropera & DeWitt Table 11.3, both fluids unmixed
    return 1.0 - math.exp((1.0 / cr) * ntu**0.22 * (math.exp(-cr * ntu**0.78) - 1.0))


@pytest.mark.parametrize("kind", ["dry", "hybrid"])
def test_dry_plant_is_commented_and_sized_for_all_its_heat_with_n_plus_1(sites, kind):
    text = (sites / f"s{kind}_plant.toml").read_text()
    for line in text.splitlines():
        if re.match(r"^[A-Za-z_]+ = ", line):
            assert "#" in line, f"{line!r} has no source / assumption comment"
    s = load_system(sites / f"s{kind}.toml")
    p = load_plant_params(s.cooling_plant)
    assert p.heat_rejection == kind and not p.chiller.enabled
    heat = full_load_heat_w(s)
    design = design_conditions(resolve_weather_file("chicago"))
    # one unit per 400 kW of design heat (1.077 MW -> 3) + 1 spare
    assert p.cdu.Q_flow_nominal_W == pytest.approx(1.1 * heat.max(), rel=1e-5)
    assert p.tower.n_cells == math.ceil(p.n_cdu * p.cdu.Q_flow_nominal_W / 400e3) + 1 == 4
    # ALL the heat the bank rejects at design, added up by hand: rack design heat + every pump's shaft work + the
    # air side's design heat (no chiller)
    ss = analytic_steady_state(p, np.full(p.n_cdu, p.cdu.Q_flow_nominal_W), p.tower.T_wb_design_K,
                               Q_air_side_W=p.tower.Q_air_side_design_W, xtol_K=1e-6)
    parts = p.n_cdu * p.cdu.Q_flow_nominal_W + ss["Q_flow_pump_heat"] + p.tower.Q_air_side_design_W
    Q = design_tower_heat_w(p)
    assert Q == pytest.approx(parts, rel=1e-6) and p.tower.Q_air_side_design_W > 50e3  # the air side is counted
    assert Q == pytest.approx(1.182e6, rel=2e-3)
    # fans: EnergyPlus' 0.0105 W per W of design heat over the 3 duty units
    assert p.tower.P_fan_cell_nominal_W == pytest.approx(SPECIFIC_FAN_POWER_W_PER_W * Q / 3, rel=2e-3)
    # 3 of the 4 units at full fans carry the design heat at the sizing air (crossflow eps-NTU by hand)
    dc = p.dry_cooler
    m_cw = ss["m_flow_cw"]
    T_in = ss["T_cw_ret"] + p.tower.Q_air_side_design_W / (m_cw * p.cp_water_J_kgK)
    C_w, C_a = m_cw * p.cp_water_J_kgK, 0.75 * dc.m_air_nominal_kg_s * CP_AIR_J_KGK
    C_min, C_max = min(C_w, C_a), max(C_w, C_a)
    if kind == "dry":  # the set point was raised until the bank holds at the design dry-bulb: 31 -> 38 C
        T_air = design.dry_bulb_K
        assert p.tower.T_fac_sup_set_K == 273.15 + 38.0 and p.cdu.T_sec_sup_set_K == 273.15 + 41.0
    else:  # pads (0.8) at the design dry-bulb and its coincident wet-bulb: 32.2 - 0.8 (32.2 - 24.0) = 25.6 C
        T_air = design.dry_bulb_K - 0.8 * (design.dry_bulb_K - design.mcwb_K)
        assert dc.eps_pad == 0.8 and dc.T_db_pad_on_K == pytest.approx(T_air, abs=1e-3)  # 6 digits in the file
        assert p.tower.T_fac_sup_set_K == 273.15 + 31.0  # the wet-bulb rule's set point, not raised
    Q_hand = _eps_crossflow(0.75 * dc.UA_nominal_W_K / C_min, C_min / C_max) * C_min * (T_in - T_air)
    assert Q_hand == pytest.approx(Q, rel=1e-4)


@pytest.mark.parametrize("kind", ["dry", "hybrid"])
def test_site_check_reports_the_bank_n_plus_1_and_holds(sites, kind, capsys):
    assert main(["site", "check", f"s{kind}", "--dir", str(sites)]) == 0
    out = capsys.readouterr().out
    assert "plant capacity at the design dry-bulb" in out
    assert re.search(rf"dry coolers \({kind}\): 4 units, .* sized for 1\.18\d MW \(rack heat, pumps' shaft work, "
                     r"air side \d+ kW\)", out)
    # the one N+1 path (cooling_fmu.redundancy.n_plus_one): set points held at full-load heat and the design
    # dry-bulb with one unit out; the standby pumps of the template cover a pump out
    set_fac = {"dry": "38.00", "hybrid": "31.00"}[kind]
    for case in ("all units", "one dry-cooler unit out", "one facility pump out", "one tower pump out"):
        assert (f"N+1 ({case}) at the design dry-bulb, full-load heat: holds (facility supply {set_fac} C" in out), case


def test_dry_bank_unit_out_is_three_quarters_of_the_bank_and_holds_at_the_design_dry_bulb(sites):
    # cooling_fmu.redundancy.unit_out: 4 identical units, one out: conductance and air x 3/4 (the water spread over
    # the other three), and the bank still holds its 38 C set point at full-load heat and the 32.2 C design dry-bulb
    from cooling_fmu.redundancy import TOLERANCE_K, n_plus_one, unit_out

    system = load_system(sites / "sdry.toml")
    p = load_plant_params(system.cooling_plant)
    one = unit_out(p)
    assert one.tower.n_cells == 3 and p.tower.n_cells == 4
    assert one.dry_cooler.UA_nominal_W_K == pytest.approx(0.75 * p.dry_cooler.UA_nominal_W_K, rel=1e-15)
    assert one.dry_cooler.m_air_nominal_kg_s == pytest.approx(0.75 * p.dry_cooler.m_air_nominal_kg_s, rel=1e-15)
    design = design_conditions(resolve_weather_file("chicago"))
    heat = full_load_heat_w(system)
    cases = {c.name: c for c in n_plus_one(p, design.mcwb_K, heat, design.dry_bulb_K)}
    c = cases["one dry-cooler unit out"]
    assert c.ok and c.T_fac_sup_K == pytest.approx(p.tower.T_fac_sup_set_K, abs=1e-5) and c.y_fan < 1.0
    # the three remaining units run faster than the four did (less coil: more air per unit for the same heat)
    assert c.y_fan > cases["all units"].y_fan
    # two units out is more than N+1: the bank misses its set point at the design dry-bulb
    two = n_plus_one(one, design.mcwb_K, heat, design.dry_bulb_K)[1]
    assert not two.ok and two.T_fac_sup_K > p.tower.T_fac_sup_set_K + TOLERANCE_K


def test_site_check_refuses_a_set_point_below_the_dry_bulb(sites, tmp_path, capsys):
    # the dry site with the wet-bulb rule's 31 C facility supply (34 C secondary): the design dry-bulb 32.2 C
    # leaves the bank far short; the check says so and what to change
    for f in ("sdry.toml", "sdry_plant.toml"):
        (tmp_path / f).write_text((sites / f).read_text())
    plant = tmp_path / "sdry_plant.toml"
    text = re.sub(r"^T_fac_sup_set_K = [0-9.e+-]+", "T_fac_sup_set_K = 304.15", plant.read_text(), flags=re.M)
    text = re.sub(r"^T_sec_sup_set_K = [0-9.e+-]+", "T_sec_sup_set_K = 307.15", text, flags=re.M)
    plant.write_text(text)
    assert main(["site", "check", str(tmp_path / "sdry.toml")]) == 2
    out = capsys.readouterr().out
    m = re.search(r"REFUSED: the dry bank cannot reject the full-load heat at the design dry-bulb \(([0-9,]+) kW short; "
                  r"facility supply ([0-9.]+) C vs set point 31\.0 C\): a dry cooler cannot cool below the dry-bulb "
                  r"plus its approach; raise the facility set point by ([0-9.]+) K, or choose --cooling hybrid or "
                  r"towers", out)
    assert m, out
    assert float(m.group(2)) > 32.2  # above the design dry-bulb: the water cannot leave colder than the air
    assert float(m.group(3)) == pytest.approx(float(m.group(2)) - 31.0, abs=0.051)
