"""Per-job node power with a measured spread: jobs without recorded utilisation draw one from public data.

Why
---
With every job at the system's ``default_cpu_util`` the IT power of a machine hardly moves (IQR / median of
15-minute means 1.9 % on the main job), while measured machines show 7 % (HLRS Hawk), 19 % (LUMI) and 21 %
(OLCF Summit). Real jobs differ: ARCHER2's per-application node power summaries show medians from ~210 to
~560 W per node and a node-hour-weighted interquartile range of 425-522 W.

The distribution
----------------
``power/data/archer2_codepower_weighted_2022-11.csv`` is the ARCHER2 (HPE Cray EX, 2 x AMD EPYC 7742 per node)
"CodePower_weighted" table of November 2022 from the ARCHER2 service's usage-analysis tool (SCUA,
github.com/ARCHER2-HPC/usage-analysis, historic data; CC0), rows unchanged, the ``Overall`` row and the
share columns left out (see ``power/data/ATTRIBUTION.md``). Each row gives, for one application, the minimum,
quartiles and maximum of the mean node power of its job steps [W], weighted by node-hours, with the application's
job count and node-hours.

:class:`NodePowerDistribution` turns it into a mixture: an application is chosen with probability proportional
to its node-hours, then a power from its five-number summary, read as a piecewise-linear quantile function
through (0, lo), (0.25, Q1), (0.5, median), (0.75, Q3), (1, hi). The tails are cut at Tukey's fences,
``lo = max(Min, Q1 - 1.5 IQR)``, ``hi = min(Max, Q3 + 1.5 IQR)`` (Tukey, *Exploratory Data Analysis*, 1977), because
the table's minima (0 W) are failed or empty job steps, not running jobs. Rows with a missing value are left out
and counted. The mixture reproduces the table's own ``Overall`` quartiles (425.2 / 486.3 / 521.6 W) within 2 %
(tests/unit/test_job_power.py).

From ARCHER2 watts to another machine
-------------------------------------
Only the shape is carried over: a draw is the ratio ``r = P / mean`` of the mixture (IQR / mean about 0.23,
IQR / median 0.22). A job's node DC power is ``r`` times the node power at the system's default utilisation, so
the system's ``default_cpu_util`` / ``default_gpu_util`` stay the MEAN job and the expected IT energy is unchanged
by the spread (up to the clipping below; the mixture's median is 1.05 times its mean). The CPU and GPU
utilisations that give that power are the defaults times one factor
``s = (r P_default - P_idle) / (P_default - P_idle)``, each clipped to [0, 1] (a draw beyond the node's
idle-to-max range is clipped and counted).

Draws are seeded (``numpy.random.SeedSequence([seed, 0x6A6F6270])``) and made once per trace row in table order,
so the same trace and seed give the same powers. Jobs whose trace records a utilisation keep it; with
``power.use_measured_power`` a job with measured node power (PM100, F-DATA, Lassen, ... loaders:
``measured_node_power_W``) keeps its measurement.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from power.node import node_power_w
from power.system import System

__all__ = ["ARCHER2_TABLE", "NodePowerDistribution", "draw_job_utilisation", "it_power_spread",
           "utilisation_for_ratio"]

#: Shipped ARCHER2 per-application node power table (see the module docstring and power/data/ATTRIBUTION.md).
ARCHER2_TABLE = Path(__file__).resolve().with_name("data") / "archer2_codepower_weighted_2022-11.csv"
#: Stream tag mixed into the run seed so job-power draws never share a stream with other random choices.
SEED_TAG = 0x6A6F6270
_QS = np.array([0.0, 0.25, 0.5, 0.75, 1.0])


@dataclass(frozen=True)
class NodePowerDistribution:
    """A mixture of per-application node-power distributions (five-number summaries).

    Attributes
    ----------
    names : tuple of str
        Application names, one per component.
    knots_W : ndarray, shape (k, 5)
        Per component: lower fence, Q1, median, Q3, upper fence of the node power [W], non-decreasing.
    weights : ndarray, shape (k,)
        Mixture weights (node-hour shares), summing to 1.
    skipped : tuple of str
        Rows left out because a value was missing.
    source : str
        File the table came from.
    """

    names: tuple[str, ...]
    knots_W: np.ndarray
    weights: np.ndarray
    skipped: tuple[str, ...] = ()
    source: str = ""
    _grid: np.ndarray = field(default=None, repr=False, compare=False)
    _cdf: np.ndarray = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        k = np.asarray(self.knots_W, dtype=float)
        w = np.asarray(self.weights, dtype=float)
        if k.ndim != 2 or k.shape[1] != 5 or k.shape[0] != w.size or w.size == 0:
            raise ValueError(f"knots_W must be (k, 5) and weights (k,), got {k.shape} and {w.shape}")
        if np.any(np.diff(k, axis=1) < 0) or np.any(k < 0) or not np.all(np.isfinite(k)):
            raise ValueError("every row of knots_W must be finite, >= 0 and non-decreasing")
        if np.any(w < 0) or not np.isclose(w.sum(), 1.0):
            raise ValueError("weights must be >= 0 and sum to 1")
        grid = np.linspace(0.0, float(k.max()) * 1.001 + 1.0, 200_001)
        cdf = np.zeros_like(grid)
        for wi, ki in zip(w, k):
            if wi > 0:
                _add_component_cdf(cdf, grid, ki, wi)
        object.__setattr__(self, "knots_W", k)
        object.__setattr__(self, "weights", w)
        object.__setattr__(self, "_grid", grid)
        object.__setattr__(self, "_cdf", cdf)

    @classmethod
    def from_table(cls, path: str | Path = ARCHER2_TABLE) -> NodePowerDistribution:
        """Read a per-application table (columns Software, Min, Q1, Median, Q3, Max, Nodeh).

        Parameters
        ----------
        path : str | Path
            CSV in the layout of ``power/data/archer2_codepower_weighted_2022-11.csv``.

        Returns
        -------
        NodePowerDistribution
            Node-hour-weighted mixture with Tukey-fenced tails (module docstring).

        Raises
        ------
        ValueError
            If a column is missing, a value is not a number or negative, the quartiles are not ordered, or no row
            is usable; the message names the file and the line.
        """
        path = Path(path)
        names, knots, weights, skipped = [], [], [], []
        with path.open(newline="", encoding="utf-8") as fh:
            rd = csv.DictReader(fh)
            need = {"Software", "Min", "Q1", "Median", "Q3", "Max", "Nodeh"}
            if not need <= set(rd.fieldnames or ()):
                raise ValueError(f"{path}: columns {sorted(need - set(rd.fieldnames or ()))} missing")
            for line, row in enumerate(rd, start=2):
                cells = [row[c].strip() for c in ("Min", "Q1", "Median", "Q3", "Max", "Nodeh")]
                if any(c == "" for c in cells):
                    skipped.append(row["Software"])
                    continue
                try:
                    mn, q1, md, q3, mx, nh = (float(c) for c in cells)
                except ValueError:
                    raise ValueError(f"{path}: line {line}: a value of {row['Software']!r} is not a number") from None
                if not (0 <= mn <= q1 <= md <= q3 <= mx) or nh < 0:
                    raise ValueError(f"{path}: line {line}: {row['Software']!r}: expected 0 <= Min <= Q1 <= Median "
                                     f"<= Q3 <= Max and Nodeh >= 0")
                iqr = q3 - q1
                names.append(row["Software"])
                knots.append([max(mn, q1 - 1.5 * iqr), q1, md, q3, min(mx, q3 + 1.5 * iqr)])
                weights.append(nh)
        w = np.asarray(weights, dtype=float)
        if w.size == 0 or w.sum() <= 0:
            raise ValueError(f"{path}: no usable row")
        return cls(tuple(names), np.asarray(knots), w / w.sum(), tuple(skipped), str(path))

    def cdf(self, P_W: np.ndarray | float) -> np.ndarray:
        """Mixture CDF at node powers ``P_W`` [W] (piecewise-linear components, tabulated on 200,001 points)."""
        return np.interp(np.asarray(P_W, dtype=float), self._grid, self._cdf)

    def quantile(self, q: np.ndarray | float) -> np.ndarray:
        """Mixture quantiles [W] for probabilities ``q`` in [0, 1] (inverse of :meth:`cdf` on its grid)."""
        return np.interp(np.asarray(q, dtype=float), self._cdf, self._grid)

    @property
    def median_W(self) -> float:
        """float: median node power of the mixture [W]."""
        return float(self.quantile(0.5))

    @property
    def mean_W(self) -> float:
        """float: mean node power of the mixture [W], exact.

        Each component's mean is the integral of its piecewise-linear quantile function,
        ``sum_j 0.25 (k_j + k_{j+1}) / 2``.
        """
        k = self.knots_W
        comp = 0.125 * (k[:, :-1] + k[:, 1:]).sum(axis=1)
        return float(self.weights @ comp)

    def sample_W(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """Draw ``n`` node powers [W]: a component by weight, then a uniform quantile of it.

        Parameters
        ----------
        n : int
            Number of draws (>= 0).
        rng : np.random.Generator
            Random source (two draws per value: component, quantile).

        Returns
        -------
        ndarray, shape (n,)
            Node powers [W].

        Raises
        ------
        ValueError
            If ``n`` < 0.
        """
        if n < 0:
            raise ValueError(f"n must be >= 0, got {n}")
        comp = rng.choice(self.weights.size, size=n, p=self.weights)
        u = rng.random(n)
        seg = np.minimum((u * 4).astype(np.int64), 3)
        frac = u * 4 - seg
        k = self.knots_W[comp]
        lo = k[np.arange(n), seg]
        hi = k[np.arange(n), seg + 1]
        return lo + frac * (hi - lo)


def _component_cdf(P: np.ndarray, knots: np.ndarray) -> np.ndarray:
    """CDF of one piecewise-linear quantile function through (0, 0.25, 0.5, 0.75, 1) at ``knots``."""
    out = np.zeros_like(P)
    out[P >= knots[-1]] = 1.0
    for j in range(4):
        a, b = knots[j], knots[j + 1]
        if b > a:
            m = (P >= a) & (P < b)
            out[m] = _QS[j] + 0.25 * (P[m] - a) / (b - a)
    return out


def _add_component_cdf(cdf: np.ndarray, P: np.ndarray, knots: np.ndarray, weight: float) -> None:
    """``cdf += weight * _component_cdf(P, knots)`` for an ascending grid ``P``, touching only where it is not 0.

    The grid is sorted, so each segment of the quantile function is a slice found by binary search instead of a
    mask over the whole grid (issue #16: the 47 masks over 200,001 points were most of a run's distribution
    set-up). Every point gets the same arithmetic as in :func:`_component_cdf` (a point outside the slices would add
    ``weight * 0.0``, which changes nothing), so the table is bit-identical.
    """
    lo = int(np.searchsorted(P, knots[0], side="left"))
    comp = np.zeros(P.size - lo)
    top = int(np.searchsorted(P, knots[-1], side="left"))  # first point with P >= knots[-1]
    comp[top - lo:] = 1.0
    for j in range(4):
        a, b = knots[j], knots[j + 1]
        if b > a:
            ia = int(np.searchsorted(P, a, side="left"))  # first P >= a
            ib = int(np.searchsorted(P, b, side="left"))  # first P >= b
            comp[ia - lo:ib - lo] = _QS[j] + 0.25 * (P[ia:ib] - a) / (b - a)
    cdf[lo:] += weight * comp


@lru_cache(maxsize=4)
def _distribution(name: str) -> NodePowerDistribution:
    if name == "archer2":
        return NodePowerDistribution.from_table(ARCHER2_TABLE)
    raise ValueError(f"unknown job power distribution {name!r}; known: archer2, none")


def utilisation_for_ratio(ratio: np.ndarray, system: System) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CPU and GPU utilisation that give a node ``ratio`` times the node power at the system's default utilisation.

    Parameters
    ----------
    ratio : np.ndarray
        Shape (n,). Wanted node DC power over the node power at ``(default_cpu_util, default_gpu_util)``, >= 0.
    system : System
        Node power model and defaults.

    Returns
    -------
    cpu_util, gpu_util : ndarray, shape (n,)
        ``clip(s * default, 0, 1)`` with ``s = (ratio P_default - P_idle) / (P_default - P_idle)``: both
        utilisations scale by one factor, so a ratio of 1 gives exactly the defaults.
    clipped : ndarray of bool, shape (n,)
        Where the wanted power lay outside what the node can draw (utilisation clipped at 0 or 1).
    """
    r = np.asarray(ratio, dtype=float)
    cd, gd = float(system.default_cpu_util), float(system.default_gpu_util)
    p_def = float(node_power_w(cd, gd, system.node))
    p_idle = float(node_power_w(0.0, 0.0, system.node))
    if p_def <= p_idle:  # default utilisation 0 (or a node without dynamic power): nothing to scale
        return np.full(r.shape, cd), np.full(r.shape, gd), np.zeros(r.shape, bool)
    s = (r * p_def - p_idle) / (p_def - p_idle)
    cpu, gpu = s * cd, s * gd
    clipped = (cpu < 0) | (cpu > 1) | (gpu < 0) | (gpu > 1)
    return np.clip(cpu, 0.0, 1.0), np.clip(gpu, 0.0, 1.0), clipped


def draw_job_utilisation(cpu_util: np.ndarray, gpu_util: np.ndarray, system: System, seed: int,
                         distribution: str = "archer2") -> tuple[np.ndarray, np.ndarray, dict]:
    """Fill missing (NaN) job utilisations with draws from a measured node-power distribution.

    Parameters
    ----------
    cpu_util : np.ndarray
        Shape (n_jobs,). Recorded CPU utilisations in [0, 1]; NaN where the trace has none.
    gpu_util : np.ndarray
        Shape (n_jobs,). Recorded GPU utilisations in [0, 1]; NaN where the trace has none.
    system : System
        Node power model and default utilisations (the mean job).
    seed : int
        Run seed; the draws use ``SeedSequence([seed, SEED_TAG])``, one ratio per row in order.
    distribution : str
        ``"archer2"``: :data:`ARCHER2_TABLE` (module docstring); ``"none"``: NaN stays NaN (system default).

    Returns
    -------
    cpu_util, gpu_util : ndarray, shape (n_jobs,)
        Recorded values kept, NaN replaced by the draw (a NaN in only one of the two is filled from the same
        draw).
    info : dict
        ``distribution``, ``jobs_drawn`` and ``jobs_clipped`` (draws outside the node's idle-to-max range).

    Raises
    ------
    ValueError
        If the distribution is unknown or the arrays differ in length.
    """
    cpu = np.array(cpu_util, dtype=float)
    gpu = np.array(gpu_util, dtype=float)
    if cpu.shape != gpu.shape or cpu.ndim != 1:
        raise ValueError("cpu_util and gpu_util must be 1-D arrays of one length")
    if distribution == "none":
        return cpu, gpu, {"distribution": "none", "jobs_drawn": 0, "jobs_clipped": 0}
    dist = _distribution(distribution)
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), SEED_TAG]))
    ratio = dist.sample_W(cpu.size, rng) / dist.mean_W
    c, g, clipped = utilisation_for_ratio(ratio, system)
    need = np.isnan(cpu) | np.isnan(gpu)
    cpu = np.where(np.isnan(cpu), c, cpu)
    gpu = np.where(np.isnan(gpu), g, gpu)
    return cpu, gpu, {"distribution": f"{distribution} ({Path(dist.source).name})", "jobs_drawn": int(need.sum()),
                      "jobs_clipped": int((clipped & need).sum())}


def it_power_spread(t_s: np.ndarray, P_W: np.ndarray, t_from_s: float, t_to_s: float, bin_s: float = 900.0
                    ) -> float:
    """IQR / median of the bin means of a power series (the variability figure of Hawk, LUMI, Summit).

    Parameters
    ----------
    t_s : np.ndarray
        Shape (n,). Start of each sample interval [s], on a regular grid that divides ``bin_s``.
    P_W : np.ndarray
        Shape (n,). Mean power over each sample interval [W].
    t_from_s : float
        Start of the period kept [s]: samples with ``t_from_s <= t < t_to_s`` (e.g. the window after the warm-up).
    t_to_s : float
        End of the period kept [s].
    bin_s : float
        Averaging bin [s] (15 minutes: the Hawk series' resolution).

    Returns
    -------
    float
        ``(Q3 - Q1) / median`` of the means of the bins that are complete, dimensionless.

    Raises
    ------
    ValueError
        If no bin is complete.
    """
    t = np.asarray(t_s, dtype=float)
    p = np.asarray(P_W, dtype=float)
    m = (t >= t_from_s) & (t < t_to_s)
    t, p = t[m], p[m]
    if t.size < 2:
        raise ValueError("fewer than two samples in the period")
    dt = float(np.median(np.diff(t)))
    per_bin = int(round(bin_s / dt))
    k = ((t - t_from_s) // bin_s).astype(np.int64)
    n = np.bincount(k)
    s = np.bincount(k, p)
    full = n == per_bin
    if not full.any():
        raise ValueError(f"no complete {bin_s:g} s bin in the period")
    means = s[full] / per_bin
    q1, med, q3 = np.percentile(means, [25, 50, 75])
    return float((q3 - q1) / med)
