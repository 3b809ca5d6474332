"""Node failures: seeded samples of failure and repair times (MTBF / MTTR distributions).

Each node fails independently; times between failures follow an exponential distribution (constant hazard) or a
Weibull distribution with the given shape (shape < 1: infant mortality, > 1: wear-out), scaled so the mean is the
MTBF; repair times are exponential with mean MTTR (or log-normal with a given sigma). The sample depends only on
the seed, the node count and the parameters, so runs are reproducible and independent of MPI ranks.

References
----------
B. Schroeder, G. Gibson, "A large-scale study of failures in high-performance computing systems", IEEE TDSC 7(4),
2010 (time between failures well fitted by Weibull with shape 0.7-0.8; repair times log-normal).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["sample_failures"]


def sample_failures(n_nodes: int, t0_s: float, t1_s: float, mtbf_s: float, mttr_s: float, seed: int,
                    distribution: str = "exponential", weibull_shape: float = 0.75,
                    repair: str = "exponential", repair_sigma: float = 1.0) -> np.ndarray:
    """Sample node failures in ``[t0_s, t1_s)``.

    Parameters
    ----------
    n_nodes : int
        Nodes (>= 1).
    t0_s : float
        Start of the horizon [s].
    t1_s : float
        End of the horizon [s]; failures starting at or after it are not sampled.
    mtbf_s : float
        Mean time between failures of ONE node [s] (> 0).
    mttr_s : float
        Mean time to repair [s] (> 0).
    seed : int
        Seed of the numpy Generator (PCG64).
    distribution : str
        Law of the times between failures: ``"exponential"`` or ``"weibull"``.
    weibull_shape : float
        Weibull shape k (> 0); the scale is ``mtbf / Gamma(1 + 1/k)``.
    repair : str
        Law of the repair times, ``"exponential"`` or ``"lognormal"``; the log-normal has the given mean and log-space sigma.
    repair_sigma : float
        Log-space standard deviation of log-normal repairs.

    Returns
    -------
    ndarray, shape (k, 3)
        Rows ``(t_down_s, t_up_s, node)`` sorted by time then node. A node is up again before it can fail again.

    Raises
    ------
    ValueError
        For non-positive MTBF / MTTR / shape or an unknown distribution.
    """
    if not (mtbf_s > 0 and mttr_s > 0 and n_nodes >= 1 and t1_s > t0_s):
        raise ValueError("need mtbf_s > 0, mttr_s > 0, n_nodes >= 1 and t1_s > t0_s")
    if distribution not in ("exponential", "weibull") or repair not in ("exponential", "lognormal"):
        raise ValueError("distribution must be 'exponential' or 'weibull'; repair 'exponential' or 'lognormal'")
    if distribution == "weibull" and not weibull_shape > 0:
        raise ValueError("weibull_shape must be > 0")
    expected = n_nodes * (t1_s - t0_s) / (mtbf_s + mttr_s)
    if expected > 5e6:
        raise ValueError(f"about {expected:.2g} node failures expected over the horizon (n_nodes x horizon / "
                         f"(MTBF + MTTR)); at most 5e6 are supported: raise the MTBF or shorten the window")
    rng = np.random.Generator(np.random.PCG64(seed))
    rows = []
    t = np.full(n_nodes, float(t0_s))
    alive = np.ones(n_nodes, dtype=bool)
    scale = mtbf_s / math.gamma(1.0 + 1.0 / weibull_shape) if distribution == "weibull" else mtbf_s
    while alive.any():
        idx = np.flatnonzero(alive)
        if distribution == "exponential":
            gap = rng.exponential(mtbf_s, idx.size)
        else:
            gap = scale * rng.weibull(weibull_shape, idx.size)
        if repair == "exponential":
            rep = rng.exponential(mttr_s, idx.size)
        else:
            mu = math.log(mttr_s) - repair_sigma ** 2 / 2
            rep = rng.lognormal(mu, repair_sigma, idx.size)
        down = t[idx] + gap
        ok = down < t1_s
        rows.append(np.column_stack([down[ok], down[ok] + rep[ok], idx[ok].astype(float)]))
        t[idx] = down + rep
        alive[idx[~ok]] = False
    out = np.concatenate(rows) if rows else np.zeros((0, 3))
    return out[np.lexsort((out[:, 2], out[:, 0]))]
