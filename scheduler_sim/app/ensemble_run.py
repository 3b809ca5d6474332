"""The ensemble part of a sweep: ``/ensemble`` in ``summary.h5`` and the lines printed at the end of the sweep.

A study with an ``[uncertainty]`` table (:mod:`scheduler_sim.app.uncertainty`) runs every scenario as members;
when the sweep is done, rank 0 groups the members' rows of ``/scenarios`` by scenario and writes, with
:mod:`scheduler_sim.analysis.ensemble`: bands of every metric, ``P(A beats B)`` per headline metric, sensitivity
indices (RBD-FAST and delta from an LHS / Sobol design; Sobol S1 / ST from a Saltelli design), the fast-vs-FMU
error of the refined members, and the "does not matter" lines.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import h5py
import numpy as np

from ..analysis.ensemble import (HEADLINE, Band, band, beats_matrix, does_not_matter, sense_of, sensitivity_from_members,
                                 sobol_indices)
from ..io.schema import SchemaWriter, unit_of
from .config import read_toml
from .uncertainty import EnsembleSpec, design_matrix, ensemble_spec

__all__ = ["EnsembleSummary", "ensemble_of_study", "summarise_ensemble", "write_ensemble", "format_ensemble",
           "choice_label"]

#: Metrics compared between a fast-plant member and its FMU re-run.
_REFINE = ("E_cooling_J", "E_facility_J", "PUE", "water_makeup_kg", "peak_P_facility_W")


def ensemble_of_study(study_path: str | Path) -> EnsembleSpec | None:
    """The study's checked ``[uncertainty]`` table, or None when it has none.

    Parameters
    ----------
    study_path : str | Path
        The study file.

    Returns
    -------
    EnsembleSpec or None
        The table, checked by :func:`scheduler_sim.app.uncertainty.ensemble_spec` (which raises ConfigError for a
        bad one).
    """
    data = read_toml(Path(study_path), "study file")
    return ensemble_spec(data["uncertainty"], study_path) if "uncertainty" in data else None


def choice_label(study_text: str) -> str:
    """What the scenarios of one condition differ by: ``"policy choice"`` for a ``scheduler.policy`` axis, ...

    Parameters
    ----------
    study_text : str
        The study TOML.

    Returns
    -------
    str
        ``"<last key part> choice"`` for one decision axis, ``"choice of a, b"`` for several, ``"scenario choice"``
        otherwise.
    """
    from ..analysis.report import _is_condition

    try:
        axes = [k for k in tomllib.loads(study_text).get("axes", {}) if not _is_condition(k)]
    except (tomllib.TOMLDecodeError, AttributeError):
        axes = []
    if len(axes) == 1:
        return f"{axes[0].split('.')[-1]} choice"
    if axes:
        return "choice of " + ", ".join(a.split(".")[-1] for a in axes)
    return "scenario choice"


@dataclass
class EnsembleSummary:
    """The ensemble statistics of a sweep.

    Attributes
    ----------
    spec : EnsembleSpec
        The ``[uncertainty]`` table.
    scenarios : list of str
        Study scenario names (before expansion), shape (S,).
    conditions : list of str
        Their condition labels.
    U, X : ndarray
        The design: unit-cube coordinates (n_runs, D) and parameter values (n_runs, P).
    values : dict of str to ndarray
        Metric -> (S, n_runs) member values (NaN: failed).
    bands : dict of str to list of Band
        Metric -> one band per scenario.
    beats : dict of str to ndarray
        Headline metric -> (S, S) ``P(row beats column)``.
    sensitivity : dict of str to dict of str to ndarray
        Headline metric -> index name -> (D,) values.
    refine : list of tuple
        (member name, {metric: fast / FMU - 1}) for each refined member that finished.
    lines : list of str
        The "does not matter" lines.
    n_failed : int
        Members that failed.
    """

    spec: EnsembleSpec
    scenarios: list[str]
    conditions: list[str]
    U: np.ndarray
    X: np.ndarray
    values: dict[str, np.ndarray]
    bands: dict[str, list[Band]]
    beats: dict[str, np.ndarray]
    sensitivity: dict[str, dict[str, np.ndarray]]
    refine: list[tuple[str, dict[str, float]]] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    n_failed: int = 0


def summarise_ensemble(spec: EnsembleSpec, base: list, member_rows: dict[str, tuple[str, dict]],
                       study_text: str) -> EnsembleSummary:
    """Group the members' results by scenario and compute the statistics.

    Parameters
    ----------
    spec : EnsembleSpec
        The ensemble.
    base : list
        The study's scenarios before expansion (:class:`scheduler_sim.app.sweep.Scenario`).
    member_rows : dict[str, tuple[str, dict]]
        Member scenario name -> (status, headline metrics).
    study_text : str
        The study TOML (for the condition axes and the decision label).

    Returns
    -------
    EnsembleSummary
        Every statistic of the module docstring.
    """
    from ..analysis.report import sweep_conditions

    U, X = design_matrix(spec)
    n = spec.n_runs
    names = [s.name for s in base]
    conditions = sweep_conditions(study_text, [s.config.to_json() for s in base])
    metrics = sorted({k for st, m in member_rows.values() if st == "done" for k in m})
    values = {m: np.full((len(base), n), np.nan) for m in metrics}
    n_failed = 0
    for b, s in enumerate(base):
        for k in range(n):
            st, met = member_rows.get(f"{s.name}_m{k:03d}", ("failed", {}))
            if st != "done":
                n_failed += 1
                continue
            for m in metrics:
                values[m][b, k] = met.get(m, np.nan)
    bands = {m: [band(values[m][b]) for b in range(len(base))] for m in metrics}
    head = [m for m in HEADLINE if m in values and np.isfinite(values[m]).any()]
    beats = {m: beats_matrix(values[m], sense_of(m)) for m in head}
    varied = [d.name for d in spec.varied]
    sens: dict[str, dict[str, np.ndarray]] = {}
    for m in head:
        y = np.nanmean(values[m], axis=0)  # the scenarios' mean: the sensitivity of the study's level
        sens[m] = sobol_indices(y, varied, spec.seed) if spec.design == "saltelli" else \
            sensitivity_from_members(U, y, varied, spec.seed, delta=spec.delta)
    refine = []
    for s in base:
        for k in spec.refine:
            fast = member_rows.get(f"{s.name}_m{k:03d}", ("failed", {}))
            fmu = member_rows.get(f"{s.name}_m{k:03d}_fmu", ("failed", {}))
            if fast[0] == "done" and fmu[0] == "done":
                refine.append((f"{s.name}_m{k:03d}", {m: fast[1][m] / fmu[1][m] - 1.0 for m in _REFINE
                                                      if m in fast[1] and m in fmu[1] and fmu[1][m]}))
    lines = does_not_matter(names, conditions, {m: bands[m] for m in head}, choice_label(study_text),
                            values={m: values[m] for m in head})
    return EnsembleSummary(spec, names, conditions, U, X, values, bands, beats, sens, refine, lines, n_failed)


def write_ensemble(w: SchemaWriter, ens: EnsembleSummary) -> None:
    """Write ``/ensemble`` into the sweep summary (its layout in :data:`scheduler_sim.io.schema.SWEEP_SUMMARY`).

    Parameters
    ----------
    w : SchemaWriter
        The summary's writer.
    ens : EnsembleSummary
        The statistics.
    """
    s = ens.spec
    str_dt = h5py.string_dtype("utf-8")
    w.group("/ensemble")
    w.attrs("/ensemble", {"members": s.members, "n_runs": s.n_runs, "design": s.design, "seed": s.seed,
                          "cooling": s.cooling, "n_failed": ens.n_failed,
                          "spec_json": json.dumps({"members": s.members, "seed": s.seed, "design": s.design,
                                                   "cooling": s.cooling, "refine": list(s.refine),
                                                   "parameters": {d.name: [d.dist, *d.args] for d in s.dists}})})
    w.dataset("/ensemble/scenario", np.array(ens.scenarios, dtype=str_dt), dtype=str_dt)
    w.dataset("/ensemble/condition", np.array(ens.conditions, dtype=str_dt), dtype=str_dt)
    w.dataset("/ensemble/does_not_matter", np.array(ens.lines, dtype=str_dt), dtype=str_dt)
    w.group("/ensemble/parameters")
    for j, d in enumerate(s.dists):
        w.dataset(f"/ensemble/parameters/{d.name}", ens.X[:, j].astype(float), units=unit_of(d.name), chunks=None)
    w.group("/ensemble/band")
    for m, bs in ens.bands.items():
        for stat in ("mean", "std", "p05", "p95"):
            w.dataset(f"/ensemble/band/{m}__{stat}", np.array([getattr(b, stat) for b in bs], float),
                      units=unit_of(m), chunks=None)
    w.group("/ensemble/beats")
    for m, P in ens.beats.items():
        w.dataset(f"/ensemble/beats/{m}", P, units="1", chunks=None)
    w.group("/ensemble/sensitivity")
    w.dataset("/ensemble/sensitivity/parameter", np.array([d.name for d in s.varied], dtype=str_dt), dtype=str_dt)
    for m, idx in ens.sensitivity.items():
        for k, v in idx.items():
            w.dataset(f"/ensemble/sensitivity/{m}__{k}", np.asarray(v, float), units="1", chunks=None)
    if s.refine:
        w.group("/ensemble/refine")
        w.dataset("/ensemble/refine/member", np.array([r[0] for r in ens.refine], dtype=str_dt), dtype=str_dt)
        for m in _REFINE:
            w.dataset(f"/ensemble/refine/{m}__rel_error",
                      np.array([r[1].get(m, np.nan) for r in ens.refine], float), units="1", chunks=None)


def _fmt(m: str, v: float) -> str:
    from ..analysis.report.catalogue import describe

    d = describe(m)
    return f"{v * d.scale:.4g}" if np.isfinite(v) else "n/a"


def format_ensemble(ens: EnsembleSummary) -> list[str]:
    """The terminal lines: one band line per scenario and headline metric, the ranking probabilities, the largest
    sensitivity index per metric, the refine errors and the "does not matter" lines.

    Parameters
    ----------
    ens : EnsembleSummary
        The statistics.

    Returns
    -------
    list[str]
        Lines to print.
    """
    from ..analysis.report.catalogue import describe

    s = ens.spec
    out = [f"ensemble: {len(ens.scenarios)} scenario(s) x {s.n_runs} member(s) ({s.design}, seed {s.seed}, "
           f"{len(s.varied)} varied parameter(s): {', '.join(d.name for d in s.varied) or '-'}; members "
           f"{'on the fast plant' if s.cooling == 'fast' else 'on their own plant'}); {ens.n_failed} failed"]
    head = list(ens.beats)
    for m in head:
        d = describe(m)
        unit = f" [{d.unit}]" if d.unit else ""
        out.append(f"band    {d.label}{unit}: mean (5 % .. 95 %)")
        for i, nm in enumerate(ens.scenarios):
            b = ens.bands[m][i]
            out.append(f"          {nm:28s} {_fmt(m, b.mean):>10s}  ({_fmt(m, b.p05)} .. {_fmt(m, b.p95)})")
    for m in head:
        P = ens.beats[m]
        pairs = [f"P({ens.scenarios[a]} beats {ens.scenarios[b]}) = {P[a, b]:.2f}"
                 for a in range(len(P)) for b in range(a + 1, len(P))
                 if ens.conditions[a] == ens.conditions[b] and np.isfinite(P[a, b])]
        if pairs:
            out.append(f"ranking {m} ({'higher' if sense_of(m) == 'max' else 'lower'} is better): " + "; ".join(pairs))
    for m, idx in ens.sensitivity.items():
        key = "sobol_ST" if "sobol_ST" in idx else ("delta" if "delta" in idx else "rbd_fast_S1")
        v = idx.get(key)
        if v is not None and np.isfinite(v).any():
            j = int(np.nanargmax(v))
            extra = (f", S1 {idx['sobol_S1'][j]:.2f}" if key == "sobol_ST" else
                     f", RBD-FAST S1 {idx['rbd_fast_S1'][j]:.2f}" if key == "delta" else "")
            out.append(f"sensitivity {m}: largest {key} {s.varied[j].name} {v[j]:.2f}{extra}")
    for name, errs in ens.refine:
        out.append(f"refine  {name}: fast vs FMU relative error: "
                   + ", ".join(f"{m} {e:+.2e}" for m, e in errs.items()))
    out += [f"matters {ln}" if " changes " in ln else f"same    {ln}" for ln in ens.lines]
    return out
