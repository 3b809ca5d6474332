"""Frontiers: non-dominated set, knee, hypervolume (hand-computed), span check, CSV, plot, CLI."""

import json

import h5py
import numpy as np
import pytest

from scheduler_sim.analysis.frontier import (SpanMismatchError, default_reference, frontier_csv, frontier_plot,
                                             frontier_table, hypervolume, knee_index, load_sweep_points,
                                             nondominated, resolve_metric)


def test_front_of_five_points_by_hand():
    # (1,5) (2,3) (4,1) are non-dominated; (3,4) is dominated by (2,3); (5,5) by all
    F = np.array([[1, 5], [3, 4], [2, 3], [5, 5], [4, 1]], float)
    assert nondominated(F, ["min", "min"]).tolist() == [True, False, True, False, True]


def test_front_with_a_maximised_axis_and_ties():
    # maximise y: (1,5) dominates (2,3) and (3,4)? (1,5): x smaller, y larger -> dominates every other point
    F = np.array([[1, 5], [3, 4], [2, 3], [1, 5]], float)
    assert nondominated(F, ["min", "max"]).tolist() == [True, False, False, True]  # equal points both stay


def test_nan_rows_never_on_front():
    F = np.array([[1, np.nan], [2, 2], [0, 0]], float)
    assert nondominated(F, ["min", "min"]).tolist() == [False, False, True]


def test_knee_is_farthest_from_the_line_between_extremes():
    # front (0,10) (2,3) (5,1) (10,0): normalised by range 10 on each axis -> sums 1.0, 0.5, 0.6, 1.0
    F = np.array([[0, 10], [2, 3], [5, 1], [10, 0]], float)
    front = nondominated(F, ["min", "min"])
    assert knee_index(F, ["min", "min"], front) == 1
    # distance of (0.2,0.3) to x+y=1 is 0.5/sqrt(2) = 0.3536, of (0.5,0.1) 0.4/sqrt(2): the first is farther
    # the same front with y maximised (negated) keeps the same knee
    G = F.copy()
    G[:, 1] = -G[:, 1]
    assert knee_index(G, ["min", "max"], nondominated(G, ["min", "max"])) == 1


def test_hypervolume_2d_by_hand():
    # points (1,3) (2,2) (3,1), reference (4,4): staircase area = 3*1 + 2*1 + 1*1 = 6
    F = np.array([[1, 3], [2, 2], [3, 1]], float)
    assert hypervolume(F, ["min", "min"], np.array([4.0, 4.0])) == pytest.approx(6.0, abs=0)
    # a dominated point adds nothing; a point beyond the reference adds nothing
    F2 = np.vstack([F, [[3, 3], [5, 0]]])
    assert hypervolume(F2, ["min", "min"], np.array([4.0, 4.0])) == pytest.approx(6.0, abs=0)
    # maximised y: values 1, 2, 3 -> -1, -2, -3 ; reference y = 0 (lowest acceptable) -> area over [x, 4] x [0, y]
    G = np.array([[1, 1], [2, 2], [3, 3]], float)
    # min x, max y: (1,1) (2,2) (3,3) all non-dominated; area = (4-1)*1 + (4-2)*1 + (4-3)*1 = 6
    assert hypervolume(G, ["min", "max"], np.array([4.0, 0.0])) == pytest.approx(6.0, abs=0)


def test_hypervolume_3d_by_hand():
    # one point (1,1,1) against (2,2,2): 1; two points (0,1,1) and (1,0,0) against (2,2,2):
    # box A = 2*1*1 = 2, box B = 1*2*2 = 4, overlap = [1,2]x[1,2]x[1,2] = 1 -> union 5
    assert hypervolume(np.array([[1, 1, 1]], float), ["min"] * 3, np.array([2.0, 2, 2])) == pytest.approx(1.0)
    P = np.array([[0, 1, 1], [1, 0, 0]], float)
    assert hypervolume(P, ["min"] * 3, np.array([2.0, 2, 2])) == pytest.approx(5.0, abs=1e-12)


def test_hypervolume_3d_against_monte_carlo():
    rng = np.random.default_rng(3)
    P = rng.uniform(0, 1, size=(12, 3))
    r = np.array([1.0, 1.0, 1.0])
    exact = hypervolume(P, ["min"] * 3, r)
    S = rng.uniform(0, 1, size=(200_000, 3))
    dom = np.zeros(len(S), bool)
    for p in P:
        dom |= np.all(S >= p, axis=1)
    assert exact == pytest.approx(dom.mean(), abs=4e-3)  # 200k samples: sd ~ 1.1e-3


def test_default_reference_is_nadir_plus_tenth_of_range():
    F = np.array([[1, 10], [3, 20]], float)
    assert default_reference(F, ["min", "max"]).tolist() == pytest.approx([3.2, 9.0])


def test_unknown_metric_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown frontier metric 'wat'"):
        resolve_metric("wat")
    assert resolve_metric("mean_wait_s").name == "wait"
    assert resolve_metric("foo_J:max").sense == "max"


def _summary(tmp_path, rows, windows=None):
    names = [r[0] for r in rows]
    out = tmp_path / "sw"
    out.mkdir()
    with h5py.File(out / "summary.h5", "w") as f:
        g = f.create_group("scenarios")
        g["name"] = np.array(names, dtype=h5py.string_dtype())
        g["status"] = np.array([r[3] for r in rows], dtype=h5py.string_dtype())
        cfg = [json.dumps({"trace": {"enabled": True, "window_days": (windows or [7.0] * len(rows))[i]}})
               for i in range(len(rows))]
        g["config_json"] = np.array(cfg, dtype=h5py.string_dtype())
        g["mean_wait_s"] = np.array([r[1] for r in rows], float) * 3600
        g["E_facility_J"] = np.array([r[2] for r in rows], float) * 3.6e9
    return out


def test_frontier_table_csv_and_plot(tmp_path):
    d = _summary(tmp_path, [("a", 1, 5, "done"), ("b", 3, 4, "done"), ("c", 2, 3, "done"), ("d", 4, 1, "done"),
                            ("e", 0, 0, "failed")])
    fr = frontier_table(load_sweep_points(d), ["wait", "energy"])
    assert fr.names == ["a", "b", "c", "d"]
    assert fr.front.tolist() == [True, False, True, True]
    # normalised on the front (x 1..4, y 1..5): a (0,1) sum 1, c (1/3, 1/2) 0.833, d (1, 0) 1 -> knee c
    assert fr.names[fr.knee] == "c"
    # reference: nadir (4, 5) + 10 % of ranges (3, 4) -> (4.3, 5.4); area by hand:
    # a: (4.3-1)*(5.4-5)=1.32 ; c: (4.3-2)*(5-3)=4.6 ; d: (4.3-4)*(3-1)=0.6 -> 6.52
    assert fr.hv == pytest.approx(6.52, rel=1e-12)
    csv = frontier_csv(fr, tmp_path / "f.csv").read_text().splitlines()
    assert csv[0] == "scenario,wait_h,energy_MWh,knee"
    assert csv[1:] == ["a,1.0,5.0,0", "c,2.0,3.0,1", "d,4.0,1.0,0"]
    assert "1 scenario(s) not finished" in fr.format()
    frontier_plot(fr, tmp_path / "f.png")
    assert (tmp_path / "f.png").stat().st_size > 5000


def test_frontier_refuses_different_spans_unless_per_day(tmp_path):
    d = _summary(tmp_path, [("a", 1, 7, "done"), ("b", 2, 14, "done")], windows=[7.0, 14.0])
    with pytest.raises(SpanMismatchError, match=r"different spans \(7, 14 days\).*--per-day"):
        frontier_table(load_sweep_points(d), ["wait", "energy"])
    fr = frontier_table(load_sweep_points(d), ["wait", "energy"], per_day=True)
    assert fr.F[:, 1].tolist() == pytest.approx([1.0, 1.0])  # 7 MWh / 7 d and 14 MWh / 14 d
    assert fr.front.tolist() == [True, False]  # same energy per day, a waits less


def test_frontier_cli(tmp_path, capsys):
    from scheduler_sim.app.cli import main

    d = _summary(tmp_path, [("a", 1, 5, "done"), ("b", 3, 4, "done"), ("c", 2, 3, "done"), ("d", 4, 1, "done")])
    rc = main(["frontier", str(d), "--x", "wait", "--y", "energy", "--csv", str(tmp_path / "x.csv"),
               "--plot", str(tmp_path / "x.png")])
    out = capsys.readouterr().out
    assert rc == 0
    assert "knee c" in out and "hypervolume" in out
    assert (tmp_path / "x.csv").read_text().splitlines()[1:] == ["a,1.0,5.0,0", "c,2.0,3.0,1", "d,4.0,1.0,0"]
    rc = main(["frontier", str(d), "--x", "wait", "--y", "nope"])
    assert rc == 2
    assert "unknown frontier metric 'nope'" in capsys.readouterr().err


def test_sweep_report_shows_the_frontier_and_writes_its_csv(tmp_path):
    from scheduler_sim.analysis.report import make_report
    from scheduler_sim.io import hdf5 as hdf5io

    d = _summary(tmp_path, [("a", 1, 5, "done"), ("b", 3, 4, "done"), ("c", 2, 3, "done"), ("d", 4, 1, "done")])
    with h5py.File(d / "summary.h5", "a") as f:
        f.attrs.update(schema_version=hdf5io.SCHEMA_VERSION, kind="sweep-summary", study="s", study_file="x")
        f["scenarios/mean_bounded_slowdown"] = np.ones(4)
        f["scenarios/PUE"] = np.ones(4)
        f.attrs["content_sha256"] = hdf5io.content_digest(f)  # every reader verifies the content record first
    page = make_report(d / "summary.h5", out_dir=tmp_path / "rep").read_text()
    assert 'data-figure="frontier"><img' in page
    assert "knee c" in page and "3 of 4 scenario(s) non-dominated" in page
    assert (tmp_path / "rep" / "frontier.csv").read_text().splitlines()[2] == "c,2.0,3.0,1"


def test_sweep_frontier_gives_each_condition_its_own_front(tmp_path):
    """A condition (weather, trace) is not a decision: b is dominated by c across conditions, but c ran under
    another weather, so within its own condition b is on the front. One front per condition, one CSV each."""
    from scheduler_sim.analysis.frontier import sweep_frontier

    d = _summary(tmp_path, [("a", 1, 5, "done"), ("b", 3, 4, "done"), ("c", 2, 3, "done"), ("d", 4, 1, "done")])
    one = sweep_frontier(d / "summary.h5", tmp_path / "one")
    assert [rf.frontier.front.tolist() for rf in one] == [[True, False, True, True]]
    fronts = sweep_frontier(d / "summary.h5", tmp_path / "two",
                            {"a": "weather=hot", "b": "weather=hot", "c": "weather=cold", "d": "weather=cold"})
    assert [rf.frontier.names for rf in fronts] == [["c", "d"], ["a", "b"]]  # sorted by condition label
    assert [rf.frontier.front.tolist() for rf in fronts] == [[True, True], [True, True]]
    assert all("own front" in rf.caption for rf in fronts)
    assert "weather=cold" in fronts[0].caption and "weather=hot" in fronts[1].caption
    # two points normalised to (0, 1) and (1, 0) tie for the knee: the first is taken
    assert (tmp_path / "two" / "frontier_1.csv").read_text().splitlines()[1:] == ["a,1.0,5.0,1", "b,3.0,4.0,0"]


def test_frontier_cli_gives_each_condition_its_own_front(tmp_path, capsys):
    """``hpctwin frontier`` on a sweep with a condition axis (weather) shows one front per condition, as the sweep
    report: b is dominated by c across conditions but not under its own weather; one CSV per condition.
    ``--across-conditions`` gives the single front of before."""
    from scheduler_sim.app.cli import main

    d = _summary(tmp_path, [("a", 1, 5, "done"), ("b", 3, 4, "done"), ("c", 2, 3, "done"), ("d", 4, 1, "done")])
    weather = {"a": "hot", "b": "hot", "c": "cold", "d": "cold"}
    with h5py.File(d / "summary.h5", "a") as f:
        f.attrs["study_file"] = '[axes]\n"scheduler.policy" = ["x", "y"]\n"cooling.weather" = ["hot", "cold"]\n'
        del f["scenarios/config_json"]
        f["scenarios/config_json"] = np.array(
            [json.dumps({"trace": {"enabled": True, "window_days": 7.0}, "cooling": {"weather": weather[n]}})
             for n in "abcd"], dtype=h5py.string_dtype())
    rc = main(["frontier", str(d), "--csv", str(tmp_path / "f.csv"), "--plot", str(tmp_path / "f.png")])
    out = capsys.readouterr().out
    assert rc == 0
    assert "condition weather=cold" in out and "condition weather=hot" in out
    assert out.count("front 2 of 2 scenario(s)") == 2
    assert (tmp_path / "f_0.csv").read_text().splitlines()[1:] == ["c,2.0,3.0,1", "d,4.0,1.0,0"]
    assert (tmp_path / "f_1.csv").read_text().splitlines()[1:] == ["a,1.0,5.0,1", "b,3.0,4.0,0"]
    assert (tmp_path / "f_0.png").stat().st_size > 0 and (tmp_path / "f_1.png").stat().st_size > 0
    rc = main(["frontier", str(d), "--across-conditions", "--csv", str(tmp_path / "all.csv")])
    out = capsys.readouterr().out
    assert rc == 0 and "front 3 of 4 scenario(s)" in out and "condition" not in out
    assert [r.split(",")[0] for r in (tmp_path / "all.csv").read_text().splitlines()[1:]] == ["a", "c", "d"]
