"""Unit tests: the many-CDU plant FMU built by replicating rumoca's CDU block (cooling_fmu/replicate.py).

The reference is rumoca 0.9.13 on the whole model, built through the ordinary path of cooling_fmu.build.
"""

from __future__ import annotations

import zipfile

import numpy as np
import pytest

import cooling_fmu.build as build
import cooling_fmu.replicate as rep
from cooling_fmu.modelica import generate_plant_modelica, model_name_for
from cooling_fmu.params import load_plant_params
from cooling_fmu.plant import CoolingPlant, _reduced


def _frontier(n: int):
    return _reduced(load_plant_params("frontier"), n)


def test_reduced_source_has_k_cdus_and_the_same_parameters():
    p = load_plant_params("frontier257")
    src = generate_plant_modelica(p)
    small = rep.reduce_source(src)
    assert rep.n_cdus_of(src) == 257 and rep.n_cdus_of(small) == rep.K_CDUS == 3
    params = [ln for ln in src.splitlines() if ln.lstrip().startswith("parameter ")]
    assert params == [ln for ln in small.splitlines() if ln.lstrip().startswith("parameter ")]
    assert f"model {model_name_for(p)} " in small and "[257]" not in small
    assert "r_dp = max(dp_reset_min, max(max(y_valve[1], y_valve[2]), y_valve[3]));" in small
    assert "E_stored = cp * (m_water_sec * (sum(T_sec) - 3.0 * T_ref)" in small


def test_source_with_an_unknown_dependence_on_n_is_refused():
    src = generate_plant_modelica(load_plant_params("frontier257"))
    odd = src.replace("  T_fac_sup = T_pipe_sup;", "  T_fac_sup = T_pipe_sup + 0.0 * T_sec[3];")
    with pytest.raises(rep.ReplicationError, match="does not reduce to 3 CDUs and back"):
        rep.reduce_source(odd)
    with pytest.raises(rep.ReplicationError, match="more than 3 CDUs"):
        rep.reduce_source(generate_plant_modelica(_frontier(3)))
    assert rep.n_cdus_of("model M\n  Real x;\nend M;") is None


def test_cache_key_covers_the_replicator_only_for_replicated_plants(monkeypatch):
    big, small = load_plant_params("frontier257"), _frontier(25)
    src_big, src_small = generate_plant_modelica(big), generate_plant_modelica(small)
    assert rep.build_fingerprint(src_small) == "" and rep.build_fingerprint(src_big).startswith("replicate k=3 ")
    k_big = build.cache_key(src_big, model_name_for(big))
    k_small = build.cache_key(src_small, model_name_for(small))
    monkeypatch.setattr(rep, "_module_sha256", lambda: "0" * 64)
    assert build.cache_key(src_big, model_name_for(big)) != k_big
    assert build.cache_key(src_small, model_name_for(small)) == k_small


def _fmu_c(path) -> str:
    with zipfile.ZipFile(path) as z:
        return next(z.read(n).decode() for n in z.namelist() if n.startswith("sources/") and n.endswith(".c"))


@pytest.mark.fmu
@pytest.mark.slow
@pytest.mark.parametrize("n", [6, 25])
def test_replicated_fmu_is_rumocas_program_and_steps_identically(tmp_path, monkeypatch, n):
    """A Frontier-like plant of 6 and of 25 CDUs built both ways: rumoca on the whole model (the default at <= 40
    CDUs) and rumoca on 3 CDUs replicated to n (forced by lowering the threshold). The replicated C is rumoca's whole-model
    C without the unused locals (drop_unused_locals), the variable maps agree, and a 40-step transient with
    unequal, changing CDU loads (0-100 % of nominal, wet-bulb 280-298 K) gives the same outputs to the last bit,
    although the replicated FMU is compiled at gcc -O0 and the flat one at -O2."""
    p = _frontier(n)
    flat_cache, rep_cache = tmp_path / "flat", tmp_path / "rep"
    flat_cache.mkdir(mode=0o700)
    rep_cache.mkdir(mode=0o700)
    src, name = generate_plant_modelica(p), model_name_for(p)
    flat = build.build_fmu(src, name, flat_cache)
    monkeypatch.setattr(rep, "REPLICATE_ABOVE_CDUS", 4)
    phases: list[str] = []
    repl = build.build_fmu(src, name, rep_cache, phases.append)
    assert any(f"3 CDUs, replicated to {n}" in ph for ph in phases), phases
    assert any(ph.startswith("gcc -O0") for ph in phases), phases
    assert _fmu_c(repl) == rep.drop_unused_locals(_fmu_c(flat))
    with zipfile.ZipFile(repl) as a, zipfile.ZipFile(flat) as b:
        assert a.read("modelDescription.xml") == b.read("modelDescription.xml")

    rng = np.random.default_rng(7)
    q = p.cdu.Q_flow_nominal_W
    heat = rng.uniform(0.0, 1.0, (40, n)) * q
    T_wb = np.linspace(280.0, 298.0, 40)
    outs = []
    for cache in (flat_cache, rep_cache):
        with CoolingPlant(p, step_s=15.0, cache_dir=cache) as plant:
            plant.initialize(heat[0] * 0.5, 285.0)
            outs.append((plant.output_names, plant.run(heat, T_wb)))
    assert outs[0][0] == outs[1][0]
    assert outs[0][1].shape == (40, len(outs[0][0]))
    assert np.array_equal(outs[0][1], outs[1][1])
    # the transient is not trivial: CDU supply temperatures differ across CDUs and move over the run
    T_sup = outs[0][1][:, [outs[0][0].index(f"T_sec_sup[{i}]") for i in range(1, n + 1)]]
    assert np.ptp(T_sup[-1]) > 0.05 and np.ptp(T_sup[:, 0]) > 0.05


@pytest.mark.fmu
@pytest.mark.slow
def test_257_cdu_fmu_holds_each_cdus_analytic_steady_state(tmp_path):
    """The 257-CDU plant (built by replication) started at the numpy mirror's analytic steady state for unequal
    loads (30-90 % of nominal, wet-bulb 290 K) stays there for an hour of 15 s steps, CDU by CDU: each CDU's HX
    passes its own heat plus its pump's shaft heat, its valve opening is the steady state's, and the supply
    temperatures drift by less than 1 uK. A CDU block wired to the wrong inputs, states or outputs fails this."""
    from cooling_fmu.modelica import analytic_steady_state

    p = load_plant_params("frontier257")
    n = p.n_cdu
    q = np.random.default_rng(3).uniform(0.3, 0.9, n) * p.cdu.Q_flow_nominal_W
    cache = tmp_path / "fmu"
    cache.mkdir(mode=0o700)
    with CoolingPlant(p, step_s=15.0, cache_dir=cache) as plant:
        plant.initialize(q, 290.0)
        out = plant.run(np.tile(q, (240, 1)), np.full(240, 290.0))
        names = plant.output_names
    ss = analytic_steady_state(p, q, 290.0)

    def col(name):
        return out[:, [names.index(f"{name}[{i}]") for i in range(1, n + 1)]]

    assert np.abs(col("T_sec_sup")[-1] - col("T_sec_sup")[0]).max() < 1e-6
    np.testing.assert_allclose(col("y_valve")[-1], ss["y_valve"], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(col("Q_flow_hx")[-1], ss["Q_flow_hx"], rtol=1e-9)
    assert np.ptp(ss["y_valve"]) > 0.05  # the CDUs really differ
    pump_heat = ss["Q_flow_hx"] - q
    assert np.all(pump_heat > 0) and np.ptp(col("Q_flow_hx")[-1] - q) < 0.5 * np.ptp(q)


def test_build_falls_back_to_rumoca_on_the_whole_model_when_replication_fails(tmp_path, monkeypatch):
    """A C of a shape the replicator does not know is not replicated: the build says so and gives rumoca the
    whole model (stopped here before rumoca runs)."""
    p = load_plant_params("frontier257")
    calls: list[int | None] = []

    def fake_save(source, name, out_dir):
        calls.append(rep.n_cdus_of(source))
        if len(calls) == 2:
            raise build.FMUBuildError("stopped before rumoca")

    def odd(*_args):
        raise rep.ReplicationError("line refers to CDUs [1, 3] of 3")

    monkeypatch.setattr(build, "_rumoca_save", fake_save)
    monkeypatch.setattr(rep, "replicate_tree", odd)
    cache = tmp_path / "fmu"
    cache.mkdir(mode=0o700)
    phases: list[str] = []
    with pytest.raises(build.FMUBuildError, match="stopped before rumoca"):
        build.fetch_fmu_bytes(generate_plant_modelica(p), model_name_for(p), cache, phases.append)
    assert calls == [3, 257]
    assert any(ph.startswith("CDU replication not possible (line refers to CDUs [1, 3] of 3)") for ph in phases)
    assert not list(cache.glob("*.fmu"))
