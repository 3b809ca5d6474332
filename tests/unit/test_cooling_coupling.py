"""The plant protocol's conventions (cooling_fmu.coupling): step averages, CDU columns, temperature rise, failures."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from cooling_fmu.adapter import FMUError
from cooling_fmu.coupling import (
    WATER_CP_J_PER_KG_K,
    Plant,
    PlantError,
    StepAverager,
    cdu_series_name,
    group_cdu_columns,
    supply_rise_K_per_W,
)
from cooling_fmu.params import load_plant_params
from cooling_fmu.plant import PlantStepError


def test_step_averages_come_from_the_running_totals():
    names = ["P_cooling", "E_cooling_out", "T_fac_sup"]
    av = StepAverager(names, step_s=15.0)
    av.start(np.array([999.0, 100.0, 300.0]))  # E = 100 J at t = 0
    # totals 100 -> 1600 -> 2200 J over two 15 s steps: averages 1500/15 = 100 W, 600/15 = 40 W
    out = np.array([[7.0, 1600.0, 301.0], [8.0, 2200.0, 302.0]])
    av.apply(out)
    np.testing.assert_array_equal(out[:, 0], [100.0, 40.0])
    np.testing.assert_array_equal(out[:, 2], [301.0, 302.0])  # not a power with a total: untouched
    # the next call continues from the last total (2200 J): (2500 - 2200) / 15 = 20 W
    nxt = np.array([[0.0, 2500.0, 303.0]])
    av.apply(nxt)
    assert nxt[0, 0] == 20.0


def test_only_pairs_present_in_the_outputs_are_averaged():
    av = StepAverager(["P_cooling", "P_fan_tower", "E_fan_out"], 10.0)
    assert [(p, e) for p, _, e, _ in av.pairs] == [("P_fan_tower", "E_fan_out")]


def test_cdu_columns_in_cdu_order():
    names = ["T_sec_sup[2]", "P_cooling", "T_sec_sup[1]", "Q_flow_hx[1]", "T_sec_sup[10]"]
    assert cdu_series_name("T_sec_sup[2]") == "T_sec_sup" and cdu_series_name("P_cooling") is None
    assert group_cdu_columns(names) == {"T_sec_sup": [2, 0, 4], "Q_flow_hx": [3]}


def test_supply_rise_is_one_over_m_flow_cp():
    p = load_plant_params("theta")
    assert p.cdu.m_flow_sec_nominal_kg_s == 6.4  # cooling_fmu/plants/theta.toml
    # 6.4 kg/s x 4186 J/(kg K) = 26,790.4 W/K -> 3.7327e-5 K per W (266.7 kW design heat per CDU -> 9.96 K)
    assert supply_rise_K_per_W(SimpleNamespace(params=p)) == pytest.approx(1 / 26790.4, rel=1e-12)
    assert WATER_CP_J_PER_KG_K == 4186.0
    assert supply_rise_K_per_W(SimpleNamespace()) is None  # a plant without a description


def test_plant_error_carries_completed_outputs():
    err = PlantError("fmi2DoStep failed", np.ones((3, 2)))
    assert err.completed_outputs.shape == (3, 2) and "fmi2DoStep" in str(err)
    assert PlantError("x").completed_outputs.shape[0] == 0


def test_plant_protocol_is_structural():
    class Double:
        output_names = ["P_cooling"]
        output_units = ["W"]
        P_cooling_index = 0

        def initialize(self, heat_w, T_wb_K):
            return np.zeros(1)

        def run(self, heat_w, T_wb_K):
            return np.zeros((len(T_wb_K), 1))

    assert isinstance(Double(), Plant)
    assert not isinstance(SimpleNamespace(output_names=[]), Plant)


def test_cooling_plant_step_error_is_a_plant_error():
    e = PlantStepError(FMUError("fmi2DoStep", 3, 30.0, {}, []), np.ones((2, 3)), ["a", "b", "c"])
    assert isinstance(e, PlantError) and e.completed_outputs.shape == (2, 3)
    with pytest.raises(PlantError):
        raise e
