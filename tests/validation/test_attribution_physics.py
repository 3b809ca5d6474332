"""Attribution takes every loss from power/ (issue #14 item 6): change a SIVOC or rectifier coefficient and the
attribution follows it and still closes on the facility totals the simulation integrated."""

from __future__ import annotations

import numpy as np
import pytest

from power import PowerChain, sivoc_loss_w
from power.system import System
from scheduler_sim.analysis.attribution import attribute
from scheduler_sim.kernel.simulation import Simulation, SimulationConfig
from tests.conftest import make_jobs, tiny_system_spec

# (job_id, submit_s, nodes, runtime_s, requested_s): four jobs on the 4-node tiny system, one of them waits
ROWS = [(1, 0, 2, 300, 400), (2, 0, 1, 200, 300), (3, 50, 2, 100, 200), (4, 100, 1, 500, 600)]


def _system(**over) -> System:
    spec = tiny_system_spec()
    for sec, vals in over.items():
        spec[sec] = {**spec[sec], **vals}
    spec["rack_overhead"] = {"P_W": 40.0, "side": "dc"}
    return System.from_spec(spec, source="tiny+override")


def _closes(system: System):
    res = Simulation(make_jobs(ROWS), system, "easy", SimulationConfig(window_start_s=0.0, window_s=1e6)).run()
    att = attribute(res, system)
    tot = res.totals
    for q in ("E_node_dc_J", "E_sivoc_loss_J", "E_rectifier_loss_J", "E_rack_overhead_J", "E_it_J"):
        # jobs + idle: every joule of each loss the simulation integrated event by event
        assert att.jobs[q].sum() + att.pseudo[q].sum() == pytest.approx(tot[q], rel=1e-9), q
    for q in ("E_node_dc_J", "E_sivoc_loss_J", "E_rectifier_loss_J"):
        # per rack, by exact inversion of the affine chain (power.PowerChain.rack_energy_split)
        assert att.rack[q].sum() == pytest.approx(tot[q], rel=1e-9), q
    assert att.totals["closure_rel_error"] < 1e-9
    return res, att


@pytest.mark.parametrize("over", [
    {},
    {"sivoc": {"eta": 0.8, "P_fixed_W": 25.0}},              # SIVOC coefficients changed
    {"rectifier": {"eta": 0.85, "P_fixed_W": 60.0}},         # rectifier coefficients changed
    {"sivoc": {"eta": 0.97, "P_fixed_W": 0.0}, "rectifier": {"eta": 0.99, "P_fixed_W": 5.0}},
])
def test_attribution_follows_the_loss_coefficients_and_closes(over):
    system = _system(**over)
    res, att = _closes(system)
    # per job: SIVOC loss = nodes x run time x (s(P) - P), s from the system's SIVOC stage, computed here by hand
    s = system.sivoc
    j = res.jobs
    run = (j["sim_end_s"] - j["sim_start_s"]).to_numpy()
    P = j["node_power_W"].to_numpy()
    hand = j["nodes"].to_numpy() * run * ((P + s.P_fixed_W) / s.eta - P)
    np.testing.assert_allclose(att.jobs["E_sivoc_loss_J"], hand, rtol=1e-12)
    np.testing.assert_allclose(sivoc_loss_w(P, s), (P + s.P_fixed_W) / s.eta - P, rtol=1e-15)


def test_changed_coefficients_change_the_attributed_losses():
    """The attribution is not tied to fixed constants: a worse SIVOC moves loss from nowhere into E_sivoc_loss_J."""
    _, base = _closes(_system())
    _, worse = _closes(_system(sivoc={"eta": 0.8}))
    assert worse.jobs["E_sivoc_loss_J"].sum() > 1.5 * base.jobs["E_sivoc_loss_J"].sum()


def test_rack_energy_split_inverts_the_chain_exactly():
    system = _system(sivoc={"eta": 0.8, "P_fixed_W": 25.0}, rectifier={"eta": 0.85, "P_fixed_W": 60.0})
    ch = PowerChain(system)
    p = np.array([120.0, 300.0, 0.0, 250.0])
    st = ch.evaluate(p)
    T = 37.0
    dc, sivoc, rect = ch.rack_energy_split(st.rack_input_W * T, T)
    assert dc.sum() == pytest.approx(p.sum() * T, rel=1e-12)
    assert sivoc.sum() == pytest.approx(st.sivoc_loss_W * T, rel=1e-12)
    assert rect.sum() == pytest.approx(st.rectifier_loss_W * T, rel=1e-12)
    quad = _system(rectifier={"k_per_W": 1e-6})
    with pytest.raises(ValueError, match="I\\^2R"):
        PowerChain(quad).rack_energy_split(np.zeros(quad.n_racks), 1.0)
