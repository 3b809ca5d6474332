"""The stager's pieces inside one plant call (FMUStepper.steps_staged): the FMU sees the same inputs step by step as
one CoolingPlant.run call per sample period (StagedPlant's loop before), so every output is bit-identical, the
stager makes the same decisions, and a block may start and end anywhere inside a sample period."""

from __future__ import annotations

import numpy as np
import pytest

from cooling_fmu.params import load_plant_params
from cooling_fmu.supervisory import StagedPlant

pytestmark = pytest.mark.fmu


def _drive(plant, p, blocks):
    q0 = np.full(p.n_cdu, 0.3 * p.cdu.Q_flow_nominal_W)
    outs = [plant.initialize(q0, 290.0)[None, :]]
    rng = np.random.default_rng(7)
    for n in blocks:  # uneven blocks: pieces cut at sample instants inside them, starts mid-period
        q = np.tile(q0 * rng.uniform(0.5, 3.0), (n, 1))
        outs.append(plant.run(q, np.linspace(289.0, 297.0, n), T_db_K=np.full(n, 300.0),
                              Q_air_side_W=np.full(n, 5e3)))
    return np.concatenate(outs), list(plant.switch_times_s), plant.stager.n_on


def test_staged_block_equals_one_call_per_sample_period_bit_for_bit(fmu_cache):
    from cooling_fmu.plant import CoolingPlant

    p = load_plant_params("theta")
    blocks = [1, 3, 7, 240, 5, 2, 961, 4, 13]
    with CoolingPlant(p, step_s=15.0, cache_dir=fmu_cache) as a, CoolingPlant(p, step_s=15.0, cache_dir=fmu_cache) as b:
        sa, sb = StagedPlant(a), StagedPlant(b)
        assert sa._schedule_in_plant
        sb._schedule_in_plant = False  # the loop of one plant call per sample period
        ya, swa, na = _drive(sa, p, blocks)
        yb, swb, nb = _drive(sb, p, blocks)
    assert ya.shape == (1 + sum(blocks), len(a.output_names))
    np.testing.assert_array_equal(ya, yb)
    assert swa == swb and na == nb
    assert len(swa) >= 1  # the stager did switch in this sequence (its decisions were exercised)
