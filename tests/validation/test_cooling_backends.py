"""FMI backend conformance: the same checks on every backend. fmpy always runs; pyfmi runs where it is installed and
is reported as skipped, with the reason, elsewhere (it needs the FMI Library, which no reachable registry ships)."""

from __future__ import annotations

import numpy as np
import pytest

from cooling_fmu.adapter import FMUError, backend_available
from cooling_fmu.modelica import analytic_steady_state
from cooling_fmu.plant import CoolingPlant

pytestmark = pytest.mark.fmu


@pytest.fixture(params=["fmpy", "pyfmi"])
def backend(request):
    ok, why = backend_available(request.param)
    if not ok:
        pytest.skip(why)
    return request.param


def test_backend_steady_state_steps_and_reset(backend, fmu_cache):
    with CoolingPlant("theta", step_s=15.0, cache_dir=fmu_cache, backend=backend) as plant:
        q = np.linspace(50e3, 250e3, 6)
        ss = analytic_steady_state(plant.params, q, 288.0)
        plant.initialize(q, 288.0)
        out = plant.run(np.tile(q, (20, 1)), np.full(20, 288.0))
        assert out[-1, plant.index("T_fac_ret")] == pytest.approx(ss["T_fac_ret"], abs=1e-8)
        assert out[-1, plant.P_cooling_index] == pytest.approx(ss["P_cooling"], rel=1e-8)
        plant.reset()
        plant.initialize(q, 288.0)
        np.testing.assert_array_equal(plant.run(np.tile(q, (20, 1)), np.full(20, 288.0)), out)
        with pytest.raises(FMUError):
            plant._fmu.getReal([10_000_000])


def test_unknown_backend_is_refused():
    with pytest.raises(ValueError, match="unknown FMI backend"):
        backend_available("dymola")
