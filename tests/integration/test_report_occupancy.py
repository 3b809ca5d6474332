"""The report's node-occupancy view: its rectangles are exactly the run file's /allocations, and never overlap."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest

from scheduler_sim.io import hdf5 as hdf5io
from scheduler_sim.analysis.attribution import attribution_of_run, load_result
from scheduler_sim.analysis.report import _occupancy
from scheduler_sim.analysis.report import figures as F
from scheduler_sim.kernel.simulation import Simulation, SimulationConfig
from tests.conftest import make_jobs, tiny_system_spec

# 8 nodes = 2 CDUs x 2 racks x 2 nodes, lowest-index placement. Job 4 (3 nodes) starts at 500 s on the free nodes
# {2, 3, 7} (job 6 was backfilled onto node 6 at 300 s) -> two runs (2-3 and 7); node 4 fails at 1000 s, so job 3
# (nodes 4-5) is requeued: two attempts.
JOBS = [(1, 0, 2, 1000, 1200), (2, 0, 2, 500, 600), (3, 0, 2, 2000, 2400), (5, 0, 2, 300, 400),
        (4, 10, 3, 900, 1000), (6, 20, 1, 3000, 3600), (7, 30, 4, 700, 800)]


def _toml(spec: dict) -> str:
    """The tiny spec as TOML (scalars, lists and one level of tables)."""
    def val(v):
        return json.dumps(v) if not isinstance(v, bool) else str(v).lower()
    top = [f"{k} = {val(v)}" for k, v in spec.items() if not isinstance(v, dict)]
    tables = [f"\n[{k}]\n" + "\n".join(f"{kk} = {val(vv)}" for kk, vv in v.items())
              for k, v in spec.items() if isinstance(v, dict)]
    return "\n".join(top) + "\n" + "\n".join(tables) + "\n"


@pytest.fixture(scope="module")
def run_file(tmp_path_factory):
    from power.system import System

    d = tmp_path_factory.mktemp("occ")
    spec = tiny_system_spec(n_nodes=8, n_cdus=2, racks_per_cdu=2)
    (d / "tiny8.toml").write_text(_toml(spec))
    system = System.from_spec(spec, source="tiny8")
    res = Simulation(make_jobs(JOBS), system, "easy",
                     SimulationConfig(window_start_s=0.0, window_s=1e5, failures=np.array([[1000.0, 1100.0, 4.0]]),
                                      on_failure="requeue")).run()
    cfg_json = json.dumps({"system": str(d / "tiny8.toml")})
    path = hdf5io.write_run(d / "occ.h5", res, cfg_json, run_name="occ", system_name=str(d / "tiny8.toml"),
                            policy="easy", seed=0, input_checksums={}, attribution=attribution_of_run(res, cfg_json))
    return path


def _alloc(path):
    with h5py.File(path, "r") as f:
        return {k: f["allocations"][k][()] for k in f["allocations"]}


def _rects(fig):
    """(x0, x1, y0, y1) of every rectangle of the occupancy collection, and its job ids."""
    ax = fig.axes[0]
    (coll,) = [c for c in ax.collections if c.get_gid() == "allocations"]
    r = []
    for p in coll.get_paths():
        v = p.vertices[:4]
        r.append((v[:, 0].min(), v[:, 0].max(), v[:, 1].min(), v[:, 1].max()))
    return np.array(r).reshape(-1, 4), np.asarray(coll.job_ids)


def _expected(al, t0, t1, tax):
    sel = (al["end_s"] > t0) & (al["start_s"] < t1)
    x0 = tax.x(np.maximum(al["start_s"][sel], t0))
    x1 = tax.x(np.minimum(al["end_s"][sel], t1))
    y0 = al["node_first"][sel].astype(float)
    return np.column_stack([x0, x1, y0, y0 + al["node_count"][sel]]), al["job_id"][sel]


def _sorted(r, j):
    o = np.lexsort((r[:, 2], r[:, 0], j))
    return r[o], j[o]


def test_the_hand_built_run_has_fragmented_and_requeued_allocations(run_file):
    al = _alloc(run_file)
    runs4 = np.flatnonzero(al["job_id"] == 4)
    assert sorted(zip(al["node_first"][runs4], al["node_count"][runs4])) == [(2, 2), (7, 1)]
    att3 = np.unique(al["start_s"][al["job_id"] == 3])
    assert att3.size == 2 and al["end_s"][al["job_id"] == 3].min() == pytest.approx(1000.0)


@pytest.mark.parametrize("window", [(0.0, 1e4), (600.0, 1500.0)])
def test_rectangles_are_the_allocations_and_never_overlap(run_file, window):
    res = load_result(run_file)
    tax = F.TimeAxis(res.time_s, res.time_origin_unix_s)
    t0, t1 = window
    fig, caption = _occupancy(run_file, res, 8, t0, t1, tax, "job")
    got, gj = _sorted(*_rects(fig))
    want, wj = _sorted(*_expected(_alloc(run_file), t0, t1, tax))
    assert len(got) == len(want) > 0
    np.testing.assert_array_equal(gj, wj)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)
    if window == (600.0, 1500.0):  # clipped to the window
        assert got[:, 0].min() == pytest.approx(tax.x(np.array([600.0]))[0])
        assert got[:, 1].max() == pytest.approx(tax.x(np.array([1500.0]))[0])
    # no node holds two rectangles at once
    for i in range(len(got)):
        for k in range(i + 1, len(got)):
            a, b = got[i], got[k]
            nodes_overlap = a[2] < b[3] and b[2] < a[3]
            time_overlap = a[0] < b[1] - 1e-12 and b[0] < a[1] - 1e-12
            assert not (nodes_overlap and time_overlap), (gj[i], gj[k], a, b)
    # CDU ticks from the system description named in the file; the requeued attempt is hatched
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["CDU 0", "CDU 1"]
    assert ax.get_ylim() == (8.0, 0.0)
    hatched = [c for c in ax.collections if c.get_gid() == "failed_attempts"]
    assert (len(hatched) == 1) == (t0 < 1000.0)
    assert "from /allocations" in caption


def test_wait_colouring_and_stable_job_colours(run_file):
    res = load_result(run_file)
    tax = F.TimeAxis(res.time_s, res.time_origin_unix_s)
    fig, _ = _occupancy(run_file, res, 8, 0.0, 1e4, tax, "wait")
    assert len(fig.axes) >= 2  # the colour bar
    c = F.job_colours(np.array([4, 12129, 4]))
    np.testing.assert_array_equal(c[0], c[2])
    assert not np.allclose(c[0], c[1])


def test_file_without_allocations_falls_back_with_a_note(run_file, tmp_path):
    import shutil

    p = tmp_path / "old.h5"
    shutil.copy(run_file, p)
    with h5py.File(p, "r+") as f:
        del f["allocations"]
        f.attrs["content_sha256"] = hdf5io.content_digest(f)  # a file written whole without /allocations
    res = load_result(p)
    tax = F.TimeAxis(res.time_s, res.time_origin_unix_s)
    fig, caption = _occupancy(p, res, 8, 0.0, 1e4, tax, "job")
    ax = fig.axes[0]
    assert not [c for c in ax.collections if c.get_gid() == "allocations"]
    assert any("APPROXIMATE" in t.get_text() for t in ax.texts)
    assert "APPROXIMATE" in caption


def test_report_compares_measured_and_modelled_power(tmp_path):
    # A run with telemetry for one of two jobs: the report adds the comparison figure, whose caption carries the
    # energies both ways. Job 1: 2 nodes x 100 s at 250 W measured vs 300 W modelled.
    from power.system import System
    from scheduler_sim.io import hdf5 as hdf5io
    from scheduler_sim.analysis.report import make_report
    from scheduler_sim.kernel.simulation import Simulation, SimulationConfig
    from tests.conftest import make_jobs, tiny_system_spec

    sysm = System.from_spec(tiny_system_spec(), source="tiny")
    jobs = make_jobs([(1, 0, 2, 100, 100), (2, 0, 2, 100, 100)])
    jobs["measured_node_power_W"] = [250.0, float("nan")]
    res = Simulation(jobs, sysm, "easy", SimulationConfig(window_start_s=0.0, window_s=1e6, use_measured_power=True)).run()
    p = hdf5io.write_run(tmp_path / "m.h5", res, "{}", run_name="m", system_name="tiny", policy="easy", seed=0,
                         input_checksums={})
    html_path = make_report(p, tmp_path / "rep")
    text = html_path.read_text()
    assert "power_measured_vs_model" in text
    # measured: 2x250x100 + 2x300x100 = 110,000 J; model: 2 x 2x300x100 = 120,000 J -> -8.3 %
    assert "-8.3 %" in text and (tmp_path / "rep" / "power_measured_vs_model.png").exists()
