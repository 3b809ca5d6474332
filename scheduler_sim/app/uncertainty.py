"""Ensembles: an ``[uncertainty]`` table turns every scenario of a study into members with perturbed inputs.

Study file::

    [uncertainty]
    members = 32            # N: members per scenario (a Saltelli design runs N (2D + 2))
    seed = 1                # seed of the design and of each member's per-job noise
    design = "lhs"          # "lhs" (Latin hypercube), "sobol" (scrambled Sobol) or "saltelli" (Sobol indices)
    cooling = "fast"        # plant of the members: "fast" (default) or "keep" (each scenario's own)
    refine = [0, 1]         # members also run with the FMU (<scenario>_m000_fmu): the fast plant's error
    delta = false           # also delta indices (seconds per metric); RBD-FAST always (Sobol for "saltelli")
    [uncertainty.parameters]
    node_power_scale = { dist = "normal", mean = 1.0, sd = 0.03 }
    tower_ntu_scale = { dist = "uniform", low = 0.85, high = 1.15 }
    wet_bulb_offset_K = { dist = "triangular", low = -2.0, mode = 0.0, high = 2.0 }
    runtime_estimate_sigma = { dist = "constant", value = 0.3 }

Parameters are the keys of :class:`scheduler_sim.app.config.PerturbConfig` (``[perturb]`` of a run):

=========================  ==========================================================================
parameter                  what it changes (in :func:`perturb_system` / :func:`perturb_plant` / ...)
=========================  ==========================================================================
node_power_scale           CPU idle / max, memory, NIC, NVMe and other node power x factor
gpu_power_scale            GPU idle / max power x factor
tower_ntu_scale            the towers' nominal Merkel NTU (UA / (m_w c_p)) x factor
pump_eta_scale             every pump's hydraulic efficiency x factor (at most 1)
fan_power_scale            the tower fans' nominal power x factor
wet_bulb_offset_K          + offset on every hour of the typical year (a perturbed typical year)
runtime_estimate_sigma     requested walltime x exp(N(0, sigma^2)) per job (log-normal estimate noise)
arrival_jitter_s           submission + N(0, sigma^2) per job submitted in the window, kept in the window
=========================  ==========================================================================

Distributions (``dist``): ``uniform`` (low, high), ``normal`` (mean, sd), ``lognormal`` (median, sigma: the
log's standard deviation), ``triangular`` (low, mode, high), ``constant`` (value; not a dimension of the design).
A design point ``u`` in the unit hypercube maps to a value by the distribution's inverse CDF (scipy.stats).

Members. Member ``k`` of scenario ``s`` is ``<s>_m<kkk>``: the scenario's configuration with ``[perturb]`` set to
the design's row ``k`` and ``perturb.seed`` = the first word of ``numpy.random.SeedSequence([seed, k])``, and
``cooling.model = "fast"`` (unless ``cooling = "keep"``). Every scenario gets the *same* rows and seeds (common
random numbers): scenario A and B are compared member by member. Members are ordinary sweep scenarios: they are
spread over the MPI ranks by the sweep's work queue and a restarted sweep skips the members already done.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .config import ConfigError, PerturbConfig

if TYPE_CHECKING:
    import pandas as pd

    from cooling_fmu.params import PlantParams
    from power.system import System

__all__ = ["EnsembleSpec", "Distribution", "ensemble_spec", "design_matrix", "member_seed", "expand_members",
           "perturb_system", "perturb_plant", "perturb_jobs", "perturb_wet_bulb", "PARAMETERS", "MemberInfo"]

#: The perturbable parameters (the fields of PerturbConfig except the seed).
PARAMETERS = tuple(k for k in PerturbConfig.model_fields if k != "seed")

_DISTS = {"uniform": ("low", "high"), "normal": ("mean", "sd"), "lognormal": ("median", "sigma"),
          "triangular": ("low", "mode", "high"), "constant": ("value",)}


@dataclass(frozen=True)
class Distribution:
    """One parameter's distribution.

    Attributes
    ----------
    name : str
        Parameter (a :data:`PARAMETERS` key).
    dist : str
        ``uniform``, ``normal``, ``lognormal``, ``triangular`` or ``constant``.
    args : tuple of float
        Its arguments in the order of the module docstring.
    """

    name: str
    dist: str
    args: tuple[float, ...]

    def ppf(self, u: np.ndarray) -> np.ndarray:
        """Values at unit-cube coordinates ``u`` (shape (n,)) by the inverse CDF; shape (n,)."""
        from scipy import stats

        u = np.asarray(u, float)
        a = self.args
        if self.dist == "constant":
            return np.full(u.shape, a[0])
        if self.dist == "uniform":
            return a[0] + u * (a[1] - a[0])
        if self.dist == "normal":
            return stats.norm.ppf(u, loc=a[0], scale=a[1])
        if self.dist == "lognormal":
            return a[0] * np.exp(a[1] * stats.norm.ppf(u))
        c = (a[1] - a[0]) / (a[2] - a[0])
        return stats.triang.ppf(u, c, loc=a[0], scale=a[2] - a[0])


@dataclass(frozen=True)
class EnsembleSpec:
    """A study's ``[uncertainty]`` table, checked.

    Attributes
    ----------
    members : int
        N (members per scenario; a Saltelli design runs N (2D + 2)).
    seed : int
        Design seed.
    design : str
        ``lhs``, ``sobol`` or ``saltelli``.
    cooling : str
        ``fast`` or ``keep``.
    refine : tuple of int
        Member indices also run with the FMU.
    dists : tuple of Distribution
        Every parameter's distribution, in file order.
    delta : bool
        Also compute delta indices (slow: seconds per metric).
    member_files : str
        ``"summary"`` (default): each member writes a record of its run (kind ``run-summary``: headline metrics,
        totals, provenance; what the statistics and the resume read); ``"full"``: whole run files.
    """

    members: int
    seed: int
    design: str
    cooling: str
    refine: tuple[int, ...]
    dists: tuple[Distribution, ...]
    delta: bool = False
    member_files: str = "summary"

    @property
    def varied(self) -> list[Distribution]:
        """The non-constant parameters: the dimensions D of the design."""
        return [d for d in self.dists if d.dist != "constant"]

    @property
    def n_runs(self) -> int:
        """Members per scenario that run: N, or N (2D + 2) for a Saltelli design."""
        return self.members * (2 * len(self.varied) + 2) if self.design == "saltelli" else self.members


def ensemble_spec(data: dict, where: str | Path = "study file") -> EnsembleSpec:
    """Check an ``[uncertainty]`` table.

    Parameters
    ----------
    data : dict
        The table.
    where : str | Path
        The study file (named in errors).

    Returns
    -------
    EnsembleSpec
        The checked table.

    Raises
    ------
    ConfigError
        If a key is unknown, a count or seed is not a positive integer, a design is unknown, a parameter is not a
        :data:`PARAMETERS` key, a distribution or its arguments are wrong (low < high, sd > 0, ...), or a refine
        member is out of range.
    """
    w = f"{where}: [uncertainty]"
    if not isinstance(data, dict):
        raise ConfigError(f"{w} must be a table")
    unknown = set(data) - {"members", "seed", "design", "cooling", "refine", "parameters", "delta", "member_files"}
    if unknown:
        raise ConfigError(f"{w}: unknown key(s) {sorted(unknown)}; expected members, seed, design, cooling, refine, "
                          f"delta, member_files, parameters")
    member_files = data.get("member_files", "summary")
    if member_files not in ("summary", "full"):
        raise ConfigError(f"{w} member_files must be 'summary' or 'full', got {member_files!r}")
    if not isinstance(data.get("delta", False), bool):
        raise ConfigError(f"{w} delta must be true or false, got {data['delta']!r}")
    n = data.get("members", 32)
    if isinstance(n, bool) or not isinstance(n, int) or n < 2:
        raise ConfigError(f"{w} members must be an integer >= 2, got {n!r}")
    seed = data.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ConfigError(f"{w} seed must be an integer >= 0, got {seed!r}")
    design = data.get("design", "lhs")
    if design not in ("lhs", "sobol", "saltelli"):
        raise ConfigError(f"{w} design must be 'lhs', 'sobol' or 'saltelli', got {design!r}")
    cooling = data.get("cooling", "fast")
    if cooling not in ("fast", "keep"):
        raise ConfigError(f"{w} cooling must be 'fast' or 'keep', got {cooling!r}")
    params = data.get("parameters", {})
    if not isinstance(params, dict) or not params:
        raise ConfigError(f"{w}.parameters must be a non-empty table: parameter = {{ dist = ..., ... }}")
    dists = []
    for name, d in params.items():
        dists.append(_distribution(name, d, f"{w}.parameters.{name}"))
    spec = EnsembleSpec(n, seed, design, cooling, (), tuple(dists), bool(data.get("delta", False)), member_files)
    refine = data.get("refine", [])
    if not isinstance(refine, list) or not all(isinstance(k, int) and not isinstance(k, bool) for k in refine) \
            or any(k < 0 or k >= spec.n_runs for k in refine):
        raise ConfigError(f"{w} refine must be a list of member indices in 0..{spec.n_runs - 1}, got {refine!r}")
    if design == "saltelli" and not spec.varied:
        raise ConfigError(f"{w}: a Saltelli design needs at least one non-constant parameter")
    return dataclasses.replace(spec, refine=tuple(sorted(set(refine))))


def _distribution(name: str, d, w: str) -> Distribution:
    if name not in PARAMETERS:
        raise ConfigError(f"{w}: unknown parameter; expected one of {', '.join(PARAMETERS)}")
    if not isinstance(d, dict) or d.get("dist") not in _DISTS:
        raise ConfigError(f"{w} must be a table with dist = one of {', '.join(_DISTS)}")
    keys = _DISTS[d["dist"]]
    extra = set(d) - {"dist", *keys}
    if extra or any(k not in d for k in keys):
        raise ConfigError(f"{w}: dist = {d['dist']!r} takes exactly {', '.join(keys)} (got {sorted(set(d) - {'dist'})})")
    try:
        args = tuple(float(d[k]) for k in keys)
    except (TypeError, ValueError):
        raise ConfigError(f"{w}: {', '.join(keys)} must be numbers") from None
    ok = {"uniform": lambda a: a[0] < a[1], "normal": lambda a: a[1] > 0, "lognormal": lambda a: a[0] > 0 and a[1] > 0,
          "triangular": lambda a: a[0] <= a[1] <= a[2] and a[0] < a[2], "constant": lambda a: True}[d["dist"]]
    if not all(np.isfinite(args)) or not ok(args):
        need = {"uniform": "low < high", "normal": "sd > 0", "lognormal": "median > 0 and sigma > 0",
                "triangular": "low <= mode <= high, low < high", "constant": "a finite value"}[d["dist"]]
        raise ConfigError(f"{w}: needs {need}, got {dict(zip(keys, args))}")
    return Distribution(name, d["dist"], args)


def design_matrix(spec: EnsembleSpec) -> tuple[np.ndarray, np.ndarray]:
    """The design: unit-cube coordinates and parameter values of every member.

    Parameters
    ----------
    spec : EnsembleSpec
        The ensemble.

    Returns
    -------
    (U, X) : (np.ndarray, np.ndarray)
        ``U`` shape (n_runs, D): coordinates of the non-constant parameters in [0, 1)
        (``scipy.stats.qmc.LatinHypercube`` / ``Sobol(scramble=True)`` seeded by ``spec.seed``, or
        ``SALib.sample.sobol.sample`` with second-order terms, N (2D + 2) rows); ``X`` shape (n_runs, P): the
        value of every parameter (file order), constants included.
    """
    from scipy.stats import qmc

    D = len(spec.varied)
    if spec.design == "saltelli":
        from SALib.sample import sobol as sobol_sample

        problem = {"num_vars": D, "names": [d.name for d in spec.varied], "bounds": [[0.0, 1.0]] * D}
        U = sobol_sample.sample(problem, spec.members, calc_second_order=True, scramble=True, seed=spec.seed)
        U = np.clip(U, 1e-9, 1 - 1e-9)  # Saltelli points may sit on the cube's faces; the normal's ppf is inf there
    elif D == 0:
        U = np.zeros((spec.members, 0))
    elif spec.design == "sobol":
        U = qmc.Sobol(d=D, scramble=True, seed=spec.seed).random(spec.members)
    else:
        U = qmc.LatinHypercube(d=D, seed=spec.seed).random(spec.members)
    cols, j = [], 0
    for d in spec.dists:
        if d.dist == "constant":
            cols.append(d.ppf(np.zeros(len(U))))
        else:
            cols.append(d.ppf(U[:, j]))
            j += 1
    return U, np.column_stack(cols) if cols else np.zeros((len(U), 0))


def member_seed(seed: int, k: int) -> int:
    """Seed of member ``k``'s per-job noise: ``SeedSequence([seed, k]).generate_state(1)[0]`` (uint32)."""
    return int(np.random.SeedSequence([seed, k]).generate_state(1)[0])


@dataclass(frozen=True)
class MemberInfo:
    """Where a member scenario comes from.

    Attributes
    ----------
    base : int
        Index of its study scenario (before expansion).
    member : int
        Member index k.
    fmu : bool
        True for an FMU refine run of member k.
    """

    base: int
    member: int
    fmu: bool = False


def expand_members(scenarios: list, spec: EnsembleSpec) -> tuple[list, list[MemberInfo]]:
    """Replace every scenario by its members (and the FMU refine runs), renumbered in a fixed order.

    Order: scenario by scenario; inside a scenario, members 0..n_runs-1, then the refine runs.

    Parameters
    ----------
    scenarios : list
        The study's :class:`scheduler_sim.app.sweep.Scenario` list.
    spec : EnsembleSpec
        The ensemble.

    Returns
    -------
    (members, info) : (list, list[MemberInfo])
        The new scenario list (same class) and, per entry, where it comes from.

    Raises
    ------
    ConfigError
        If a perturbed value is outside the ``[perturb]`` limits (the member and the key are named).
    """
    _, X = design_matrix(spec)
    names = [d.name for d in spec.dists]
    out, info = [], []
    cls = type(scenarios[0]) if scenarios else None
    for s in scenarios:
        for k in range(spec.n_runs):
            over = {f"perturb.{n}": float(v) for n, v in zip(names, X[k])}
            over["perturb.seed"] = member_seed(spec.seed, k)
            if spec.cooling == "fast" and s.config.cooling.plant_model == "fmu":
                over["cooling.model"] = "fast"
            runs = [(False, over)] + ([(True, {**over, "cooling.model": "fmu"})] if k in spec.refine else [])
            for fmu, o in runs:
                name = f"{s.name}_m{k:03d}" + ("_fmu" if fmu else "")
                try:
                    cfg = s.config.with_overrides({**o, "name": name})
                except ConfigError as exc:
                    raise ConfigError(f"[uncertainty] member {name}: {exc}") from None
                info.append((MemberInfo(s.index, k, fmu), name, cfg))
    order = sorted(range(len(info)), key=lambda i: (info[i][0].base, info[i][0].fmu, info[i][0].member))
    for j, i in enumerate(order):
        mi, name, cfg = info[i]
        out.append(cls(j, name, cfg, spec.member_files))
    return out, [info[i][0] for i in order]


# ----------------------------------------------------------------------------------------- applying [perturb]

def perturb_system(p: PerturbConfig | None, system: System) -> System:
    """The system with its node power coefficients scaled (``node_power_scale``, ``gpu_power_scale``).

    Parameters
    ----------
    p : PerturbConfig | None
        The run's perturbation (None: ``system`` unchanged).
    system : System
        The loaded system (:class:`power.system.System`).

    Returns
    -------
    power.system.System
        A copy with ``node`` replaced (or ``system`` itself when nothing changes).
    """
    if p is None or (p.node_power_scale == 1.0 and p.gpu_power_scale == 1.0):
        return system
    n, a, g = system.node, p.node_power_scale, p.gpu_power_scale
    node = n.model_copy(update={"cpu_idle_W": n.cpu_idle_W * a, "cpu_max_W": n.cpu_max_W * a, "mem_W": n.mem_W * a,
                                "nic_W": n.nic_W * a, "nvme_W": n.nvme_W * a, "other_W": n.other_W * a,
                                "gpu_idle_W": n.gpu_idle_W * g, "gpu_max_W": n.gpu_max_W * g})
    return dataclasses.replace(system, node=node)


def perturb_plant(p: PerturbConfig | None, params: PlantParams) -> PlantParams:
    """Plant parameters with the tower NTU, pump efficiencies and tower-fan power scaled.

    Parameters
    ----------
    p : PerturbConfig | None
        The run's perturbation (None: unchanged).
    params : PlantParams
        The plant description (:class:`cooling_fmu.params.PlantParams`).

    Returns
    -------
    cooling_fmu.params.PlantParams
        A validated copy (``eta_pump`` capped at 1), or ``params`` itself when nothing changes.
    """
    if p is None or (p.tower_ntu_scale == 1.0 and p.pump_eta_scale == 1.0 and p.fan_power_scale == 1.0):
        return params
    d = params.model_dump()
    d["tower"]["NTU_nominal"] *= p.tower_ntu_scale
    d["tower"]["P_fan_cell_nominal_W"] *= p.fan_power_scale
    for sec in ("cdu", "facility", "tower_loop"):
        d[sec]["pump"]["eta_pump"] = min(1.0, d[sec]["pump"]["eta_pump"] * p.pump_eta_scale)
    return type(params).model_validate(d)


def perturb_jobs(p: PerturbConfig | None, jobs: pd.DataFrame, window_start_s: float, window_end_s: float) -> pd.DataFrame:
    """The job table with log-normal estimate noise and arrival jitter (seeded by ``p.seed``).

    ``requested_walltime_s *= exp(sigma z)``, ``z ~ N(0, 1)`` per job (NaN stays NaN). Jobs submitted in
    ``[window_start_s, window_end_s)`` move by ``N(0, arrival_jitter_s^2)``, clipped into the window; jobs from
    before the window (running or queued at its start) keep their times. Draw order: one normal per job for the
    estimate, then one per job for the arrival (a fixed number of draws whatever the parameters' values).

    Parameters
    ----------
    p : PerturbConfig | None
        The run's perturbation (None: unchanged).
    jobs : pd.DataFrame
        Canonical job table (never modified).
    window_start_s : float
        Batch window start [s, trace time].
    window_end_s : float
        Batch window end [s, trace time].

    Returns
    -------
    pandas.DataFrame
        A copy with the perturbed columns, or ``jobs`` itself when nothing changes.
    """
    if p is None or len(jobs) == 0 or (p.runtime_estimate_sigma == 0.0 and p.arrival_jitter_s == 0.0):
        return jobs
    rng = np.random.default_rng(p.seed)
    z_est = rng.standard_normal(len(jobs))
    z_arr = rng.standard_normal(len(jobs))
    attrs = dict(jobs.attrs)
    out = jobs.copy()
    if p.runtime_estimate_sigma > 0:
        out["requested_walltime_s"] = jobs["requested_walltime_s"].to_numpy(float) * np.exp(
            p.runtime_estimate_sigma * z_est)
    if p.arrival_jitter_s > 0:
        sub = jobs["submit_time_s"].to_numpy(float)
        inside = (sub >= window_start_s) & (sub < window_end_s)
        moved = np.clip(sub + p.arrival_jitter_s * z_arr, window_start_s, np.nextafter(window_end_s, -np.inf))
        out["submit_time_s"] = np.where(inside, moved, sub)
    out.attrs.update(attrs)
    return out


def perturb_wet_bulb(p: PerturbConfig | None, wet_bulb_K: Callable | None) -> Callable | None:
    """The wet-bulb function shifted by ``wet_bulb_offset_K`` (a perturbed typical year).

    Parameters
    ----------
    p : PerturbConfig | None
        The run's perturbation (None: unchanged).
    wet_bulb_K : Callable | None
        ``wet_bulb_K(t_s) -> K`` (scalar or array); None without a plant.

    Returns
    -------
    callable
        ``t -> wet_bulb_K(t) + offset``, or ``wet_bulb_K`` itself for a zero offset.
    """
    if p is None or p.wet_bulb_offset_K == 0.0 or wet_bulb_K is None:
        return wet_bulb_K
    return _OffsetWetBulb(wet_bulb_K, float(p.wet_bulb_offset_K))


class _OffsetWetBulb:
    """``t -> wet_bulb_K(t) + offset_K`` as a picklable object (the twin's rollout cooling goes to MPI ranks)."""

    def __init__(self, wet_bulb_K: Callable, offset_K: float) -> None:
        self.wet_bulb_K, self.offset_K = wet_bulb_K, offset_K

    def __call__(self, t):
        return self.wet_bulb_K(t) + self.offset_K
