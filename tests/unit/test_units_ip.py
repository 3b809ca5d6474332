"""US customary (IP) units at the edges (issue #28 item 1): what `--units ip` shows, against hand conversions.

Hand values: 300.15 K = 27.00 C = 27 x 9/5 + 32 = 80.60 F; a 2.72 K difference = 4.896 F; one US gallon is
3.785411784 L exactly, so 1 L/kWh = 0.264172 gal/kWh and 997 kg of water (1 m3 at the schema's 997 kg/m3) =
264.172 gal; 1 kg = 1 / 0.45359237 = 2.20462 lb.
"""

from __future__ import annotations

import numpy as np
import pytest

from scheduler_sim.analysis import units
from scheduler_sim.analysis.report.catalogue import describe, format_value, format_with_unit


@pytest.fixture
def ip():
    units.set_unit_system("ip")
    yield
    units.set_unit_system("si")


def test_si_is_the_default_and_shows_what_it_always_showed():
    assert units.unit_system() == "si"
    assert units.temperature_text(300.15) == "27.0 C"
    assert units.temperature_text(303.87, ".2f", "degC") == "30.72 degC"
    assert units.temperature_difference_text(-2.72) == "-2.72 K"
    assert format_with_unit("WUE_L_per_kWh", 1.5) == "1.500 L/kWh"


def test_ip_temperatures_and_differences_by_hand(ip):
    assert units.temperature_text(300.15) == "80.6 F"
    assert units.temperature_text(300.15, ".2f", "degC") == "80.60 degF"
    assert units.temperature_text(273.15) == "32.0 F" and units.temperature_text(373.15) == "212.0 F"
    assert units.temperature_difference_text(-2.72) == "-4.90 F"
    assert units.temperature_difference_text(1.0, "g") == "1.8 F"


def test_ip_water_and_mass_in_the_report_tables(ip):
    m = describe("WUE_L_per_kWh", 1.0)
    assert m.unit == "gal/kWh" and m.scale == pytest.approx(0.264172, abs=1e-6)
    assert format_value("WUE_L_per_kWh", 1.0, m) == "0.264" and format_with_unit("WUE_L_per_kWh", 1.5) == "0.396 gal/kWh"
    w = describe("water_makeup_kg", 997.0)
    assert w.unit == "gal" and 997.0 * w.scale == pytest.approx(1e-3 / 3.785411784e-3 * 1000.0, rel=1e-12)
    assert 997.0 * w.scale == pytest.approx(264.172, abs=1e-3)
    assert 1.0 / units.POUND_KG == pytest.approx(2.20462, abs=1e-5)
    # CO2 stays in metric tonnes, energy in MWh
    assert describe("grid_co2_t", 1.0).unit == "t CO2eq" and describe("E_it_J", 3.6e9).unit == "MWh"


def test_unknown_unit_system_is_refused():
    with pytest.raises(ValueError, match="expected one of si, ip"):
        units.set_unit_system("imperial")


def test_headroom_lines_in_ip(ip):
    from cooling_fmu.params import load_plant_params
    from power import load_system
    from scheduler_sim.analysis.headroom import run_headroom

    plant = load_plant_params("theta")
    s = load_system("theta")
    n = 120
    T = np.full((n, 6), plant.cdu.T_sec_sup_set_K)
    T[0:45, 1] = 287.65  # 14.5 C = 58.1 F
    T[20:35, 3] = 285.15  # 12 C = 53.6 F
    time_s = 60.0 * np.arange(n)
    facility = {"P_facility_W": np.full(n, 1.0e6), "T_wb_K": np.full(n, 290.15)}
    cdu = {"Q_flow_W": np.full((n, 6), 200e3), "T_sec_sup": T}
    text = "\n".join(run_headroom(s, facility, cdu, time_s, plant, None).lines())
    assert "the data hall's 59 F dew point" in text and "coldest supply 53.6 F" in text
    assert "above set point + 1.8 F" in text and " C," not in text and " C)" not in text


def test_cli_option_sets_ip_for_one_command_only(tmp_path, capsys):
    from scheduler_sim.app.cli import build_parser, main

    a = build_parser().parse_args(["run", "--units", "ip"])
    assert a.units == "ip" and build_parser().parse_args(["run"]).units == "si"
    assert build_parser().parse_args(["report", "x.h5", "--units", "ip"]).units == "ip"
    assert main(["run", "--units", "ip", "--no-cooling", "--days", "0.5", "--quiet",
                 "--out", str(tmp_path / "r.h5")]) == 0
    assert units.unit_system() == "si"  # reset when the command ends
