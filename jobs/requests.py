"""The canonical request table (LLM serving) and seeded request workload families.

One row per inference request. Request loaders (:mod:`dataloaders.azure_llm`, :mod:`dataloaders.mooncake`,
:mod:`dataloaders.request_csv`) return this table; the serving engine (:mod:`scheduler_sim.serving`) only reads it.
Columns and dtypes are fixed by :data:`REQUEST_COLUMNS`; :func:`validate_request_table` checks a table.

Times are seconds relative to the trace's time origin, which loaders normalise to the first arrival
(``arrival_time_s[0] == 0``); ``df.attrs["time_origin_unix_s"]`` holds that origin as a Unix time when the trace
gives absolute times, else NaN, and ``df.attrs["time_shift_s"]`` what was subtracted from the trace's own clock.

Workload families
-----------------
Arrivals: :func:`poisson_arrivals` (exponential inter-arrival times), :func:`gamma_arrivals` (a Gamma renewal
process: bursty for a coefficient of variation CV > 1) and :func:`mmpp_arrivals` (a two-state Markov-modulated
Poisson process, the classic model of on/off bursts). Lengths: :class:`LengthModel` fitted from a trace, either a
bivariate log-normal (log prompt and log output lengths jointly normal, so their correlation is kept) or the
empirical joint distribution (bootstrap of (prompt, output) pairs). :func:`synthetic_requests` combines them.
Every function draws from a caller-supplied :class:`numpy.random.Generator`, so a run is reproducible from its seed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

__all__ = [
    "REQUEST_COLUMNS",
    "LengthModel",
    "empty_request_table",
    "gamma_arrivals",
    "make_request_table",
    "mmpp_arrivals",
    "poisson_arrivals",
    "synthetic_requests",
    "validate_request_table",
]

#: Column name -> (dtype, unit, description). The order is the table's column order.
REQUEST_COLUMNS: dict[str, tuple[str, str, str]] = {
    "request_id": ("int64", "1", "Request identifier, unique within the table (0..n-1 in arrival order)"),
    "arrival_time_s": ("float64", "s", "Arrival time relative to the trace time origin (first arrival = 0)"),
    "prompt_tokens": ("int64", "1", "Prompt (context) length in tokens, >= 1"),
    "output_tokens": ("int64", "1", "Tokens to generate, >= 1 (the first one is produced by the prefill)"),
    "prefix_block_ids": ("object", "1", "Tuple of int: ids of the prompt's KV blocks (Mooncake hash_ids) used "
                                        "for prefix-affinity routing; () when the trace has none"),
}


def empty_request_table() -> pd.DataFrame:
    """Return an empty request table with the canonical columns and dtypes.

    Returns
    -------
    pandas.DataFrame
        Zero rows, the columns of :data:`REQUEST_COLUMNS`, ``attrs["time_origin_unix_s"] = NaN``.
    """
    df = pd.DataFrame({n: pd.Series([], dtype=dt) for n, (dt, _, _) in REQUEST_COLUMNS.items()})
    df.attrs["time_origin_unix_s"] = float("nan")
    df.attrs["time_shift_s"] = 0.0
    return df


def make_request_table(arrival_time_s: ArrayLike, prompt_tokens: ArrayLike, output_tokens: ArrayLike,  # noqa: DOC502
                       prefix_block_ids: Sequence[Sequence[int]] | None = None, *,
                       time_origin_unix_s: float = float("nan"), time_shift_s: float = 0.0) -> pd.DataFrame:
    """Build a canonical request table from columns, sorted by arrival (stable), with ids 0..n-1.

    Parameters
    ----------
    arrival_time_s : ArrayLike
        Arrival times [s], float, shape (n,), finite and >= 0.
    prompt_tokens : ArrayLike
        Prompt lengths [tokens], int, shape (n,), >= 1.
    output_tokens : ArrayLike
        Output lengths [tokens], int, shape (n,), >= 1.
    prefix_block_ids : Sequence[Sequence[int]] | None
        Prompt KV-block ids, length n; None gives ``()`` for every request.
    time_origin_unix_s : float
        Unix time of time 0 (NaN when unknown).
    time_shift_s : float
        What was subtracted from the trace's own times to make the first arrival 0 [s].

    Returns
    -------
    pandas.DataFrame
        The validated table, shape (n, 5).

    Raises
    ------
    ValueError
        As :func:`validate_request_table`.
    """
    t = np.asarray(arrival_time_s, dtype=np.float64)
    n = t.size
    pre = [tuple(int(b) for b in x) for x in prefix_block_ids] if prefix_block_ids is not None else [()] * n
    order = np.argsort(t, kind="stable")
    df = pd.DataFrame({
        "request_id": np.arange(n, dtype=np.int64),
        "arrival_time_s": t[order],
        "prompt_tokens": np.asarray(prompt_tokens, dtype=np.int64)[order],
        "output_tokens": np.asarray(output_tokens, dtype=np.int64)[order],
        "prefix_block_ids": pd.Series([pre[i] for i in order], dtype=object),
    })
    df.attrs["time_origin_unix_s"] = float(time_origin_unix_s)
    df.attrs["time_shift_s"] = float(time_shift_s)
    return validate_request_table(df)


def validate_request_table(df: pd.DataFrame) -> pd.DataFrame:
    """Check a request table against the canonical schema; return it with canonical dtypes and column order.

    Parameters
    ----------
    df : pd.DataFrame
        Candidate table, shape (n_requests, >= 4); a missing ``prefix_block_ids`` column is filled with ``()``.

    Returns
    -------
    pandas.DataFrame
        Same rows, canonical columns first (extra columns kept after them), attrs kept.

    Raises
    ------
    ValueError
        If a column is missing, ``request_id`` is not unique, an arrival time is negative / not finite / not
        sorted, or a token count is < 1. The message names the column and the first offending ``request_id``.
    """
    out = df.copy()
    if "prefix_block_ids" not in out.columns:
        out["prefix_block_ids"] = pd.Series([()] * len(out), dtype=object, index=out.index)
    missing = [c for c in REQUEST_COLUMNS if c not in out.columns]
    if missing:
        raise ValueError(f"request table is missing column(s) {missing}; expected {list(REQUEST_COLUMNS)}")
    for name, (dt, _, _) in REQUEST_COLUMNS.items():
        if dt != "object":
            out[name] = out[name].astype(dt)
    extra = [c for c in out.columns if c not in REQUEST_COLUMNS]
    out = out[list(REQUEST_COLUMNS) + extra].reset_index(drop=True)
    out.attrs = dict(df.attrs)
    out.attrs.setdefault("time_origin_unix_s", float("nan"))
    out.attrs.setdefault("time_shift_s", 0.0)

    def _first_bad(mask: np.ndarray, what: str) -> None:
        if mask.any():
            rid = int(out["request_id"].to_numpy()[np.argmax(mask)])
            raise ValueError(f"request table: {what} (first at request_id={rid}, {int(mask.sum())} row(s))")

    t = out["arrival_time_s"].to_numpy()
    _first_bad(out["request_id"].duplicated().to_numpy(), "request_id is not unique")
    _first_bad(~np.isfinite(t) | (t < 0), "arrival_time_s must be finite and >= 0")
    _first_bad(np.concatenate(([False], np.diff(t) < 0)), "arrival_time_s must be sorted (non-decreasing)")
    _first_bad(out["prompt_tokens"].to_numpy() < 1, "prompt_tokens must be >= 1")
    _first_bad(out["output_tokens"].to_numpy() < 1, "output_tokens must be >= 1")
    return out


# ---------------------------------------------------------------------------------------------- arrivals
def _check_rate(rate_per_s: float, duration_s: float) -> None:
    if not (rate_per_s > 0 and np.isfinite(rate_per_s)):
        raise ValueError(f"rate_per_s must be a finite number > 0, got {rate_per_s!r}")
    if not (duration_s > 0 and np.isfinite(duration_s)):
        raise ValueError(f"duration_s must be a finite number > 0, got {duration_s!r}")


def _renewal(rng: np.random.Generator, draw, mean_gap_s: float, duration_s: float) -> np.ndarray:
    """Arrival times of a renewal process in [0, duration_s): cumulative sums of i.i.d. gaps from ``draw(n)``."""
    out: list[np.ndarray] = []
    t_last = 0.0
    n = int(duration_s / mean_gap_s * 1.2) + 16
    while True:
        t = t_last + np.cumsum(draw(n))
        out.append(t[t < duration_s])
        if t[-1] >= duration_s:
            return np.concatenate(out)
        t_last = float(t[-1])


def poisson_arrivals(rng: np.random.Generator, rate_per_s: float, duration_s: float) -> np.ndarray:  # noqa: DOC502
    """Arrival times of a homogeneous Poisson process.

    Parameters
    ----------
    rng : np.random.Generator
        Source of randomness.
    rate_per_s : float
        Mean arrival rate [1/s], > 0.
    duration_s : float
        Horizon [s], > 0.

    Returns
    -------
    ndarray of float64, shape (n,)
        Sorted arrival times in [0, duration_s) [s]; E[n] = rate_per_s * duration_s.

    Raises
    ------
    ValueError
        If the rate or the duration is not a finite positive number.
    """
    _check_rate(rate_per_s, duration_s)
    return _renewal(rng, lambda n: rng.exponential(1.0 / rate_per_s, n), 1.0 / rate_per_s, duration_s)


def gamma_arrivals(rng: np.random.Generator, rate_per_s: float, cv: float, duration_s: float) -> np.ndarray:
    """Arrival times of a Gamma renewal process (bursty for ``cv > 1``, smoother than Poisson for ``cv < 1``).

    Inter-arrival gaps are Gamma(shape k = 1 / cv^2, scale = cv^2 / rate): mean 1 / rate, coefficient of variation
    ``cv``; ``cv = 1`` is the Poisson process. This is the burstiness model of the serving-workload literature
    (e.g. AlpaServe, Li et al., OSDI 2023, which fits Gamma processes to production traces).

    Parameters
    ----------
    rng : np.random.Generator
        Source of randomness.
    rate_per_s : float
        Mean arrival rate [1/s], > 0.
    cv : float
        Coefficient of variation of the gaps, > 0 (dimensionless).
    duration_s : float
        Horizon [s], > 0.

    Returns
    -------
    ndarray of float64, shape (n,)
        Sorted arrival times in [0, duration_s) [s].

    Raises
    ------
    ValueError
        If a parameter is not a finite positive number.
    """
    _check_rate(rate_per_s, duration_s)
    if not (cv > 0 and np.isfinite(cv)):
        raise ValueError(f"cv must be a finite number > 0, got {cv!r}")
    k = 1.0 / cv**2
    return _renewal(rng, lambda n: rng.gamma(k, 1.0 / (k * rate_per_s), n), 1.0 / rate_per_s, duration_s)


def mmpp_arrivals(rng: np.random.Generator, rates_per_s: tuple[float, float], mean_dwell_s: tuple[float, float],
                  duration_s: float) -> np.ndarray:
    """Arrival times of a two-state Markov-modulated Poisson process (MMPP-2), starting in state 0.

    The process stays in state i for an exponential time of mean ``mean_dwell_s[i]``, emitting Poisson arrivals of
    rate ``rates_per_s[i]``, then switches to the other state. Long-run mean rate:
    ``(r0 d0 + r1 d1) / (d0 + d1)``.

    Parameters
    ----------
    rng : np.random.Generator
        Source of randomness.
    rates_per_s : tuple[float, float]
        Arrival rate in each state [1/s], >= 0, not both 0.
    mean_dwell_s : tuple[float, float]
        Mean sojourn time in each state [s], > 0.
    duration_s : float
        Horizon [s], > 0.

    Returns
    -------
    ndarray of float64, shape (n,)
        Sorted arrival times in [0, duration_s) [s].

    Raises
    ------
    ValueError
        If a rate is negative, both are 0, or a dwell time / the duration is not positive.
    """
    r = [float(x) for x in rates_per_s]
    d = [float(x) for x in mean_dwell_s]
    if min(r) < 0 or max(r) <= 0 or min(d) <= 0 or not duration_s > 0:
        raise ValueError(f"mmpp_arrivals: rates {r} must be >= 0 (not both 0), dwell times {d} and duration "
                         f"{duration_s} must be > 0")
    out = []
    t, state = 0.0, 0
    while t < duration_s:
        dwell = float(rng.exponential(d[state]))
        end = min(t + dwell, duration_s)
        if r[state] > 0:
            n = int(rng.poisson(r[state] * (end - t)))
            out.append(np.sort(rng.uniform(t, end, n)))  # Poisson points given their count are uniform
        t, state = end, 1 - state
    return np.concatenate(out) if out else np.zeros(0)


# ---------------------------------------------------------------------------------------------- lengths
@dataclass(frozen=True)
class LengthModel:
    """Joint distribution of (prompt, output) lengths fitted from a request table.

    Attributes
    ----------
    kind : {"lognormal", "empirical"}
        ``"lognormal"``: (ln prompt, ln output) ~ bivariate normal with ``mean`` and ``cov``; draws are rounded and
        clipped to [1, max]. ``"empirical"``: draws resample the observed (prompt, output) pairs.
    mean : ndarray, shape (2,)
        Mean of (ln prompt_tokens, ln output_tokens).
    cov : ndarray, shape (2, 2)
        Covariance of the logs.
    max_tokens : ndarray of int64, shape (2,)
        Largest prompt and output length observed (upper clip of log-normal draws).
    pairs : ndarray of int64, shape (n, 2)
        The observed pairs (used by ``"empirical"``).
    """

    kind: str
    mean: np.ndarray
    cov: np.ndarray
    max_tokens: np.ndarray
    pairs: np.ndarray

    @classmethod
    def fit(cls, table: pd.DataFrame, kind: str = "lognormal") -> LengthModel:
        """Fit the model to a request table (maximum likelihood for the log-normal: sample mean and covariance).

        Parameters
        ----------
        table : pd.DataFrame
            Request table with ``prompt_tokens`` and ``output_tokens`` (>= 2 rows).
        kind : str
            Model family: "lognormal" or "empirical".

        Returns
        -------
        LengthModel

        Raises
        ------
        ValueError
            If ``kind`` is unknown or the table has fewer than 2 rows.
        """
        if kind not in ("lognormal", "empirical"):
            raise ValueError(f"LengthModel kind must be 'lognormal' or 'empirical', got {kind!r}")
        pairs = table[["prompt_tokens", "output_tokens"]].to_numpy(np.int64)
        if pairs.shape[0] < 2:
            raise ValueError("LengthModel.fit needs at least 2 requests")
        logs = np.log(pairs.astype(float))
        return cls(kind, logs.mean(axis=0), np.cov(logs, rowvar=False, bias=True), pairs.max(axis=0), pairs)

    def sample(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Draw ``n`` (prompt, output) length pairs.

        Parameters
        ----------
        rng : np.random.Generator
            Source of randomness.
        n : int
            Number of draws, >= 0.

        Returns
        -------
        (ndarray of int64, ndarray of int64), each shape (n,)
            Prompt and output lengths [tokens], >= 1.
        """
        if self.kind == "empirical":
            idx = rng.integers(0, self.pairs.shape[0], n)
            return self.pairs[idx, 0].copy(), self.pairs[idx, 1].copy()
        z = rng.multivariate_normal(self.mean, self.cov, size=n, method="eigh")  # eigh: also for a singular covariance
        x = np.clip(np.rint(np.exp(z)), 1, self.max_tokens).astype(np.int64)
        return x[:, 0].copy(), x[:, 1].copy()


def synthetic_requests(rng: np.random.Generator, lengths: LengthModel, duration_s: float, rate_per_s: float, *,
                       arrival: str = "poisson", cv: float = 1.0,
                       mmpp_rates_per_s: tuple[float, float] = (1.0, 1.0),
                       mmpp_dwell_s: tuple[float, float] = (60.0, 60.0)) -> pd.DataFrame:
    """A synthetic request table: arrivals of one family, lengths from a fitted :class:`LengthModel`.

    Parameters
    ----------
    rng : np.random.Generator
        Source of randomness (seed it from the run configuration).
    lengths : LengthModel
        Length distribution (e.g. ``LengthModel.fit(azure_table)``).
    duration_s : float
        Horizon [s].
    rate_per_s : float
        Mean arrival rate [1/s] (``"poisson"`` and ``"gamma"``).
    arrival : str
        Arrival family: "poisson", "gamma" or "mmpp".
    cv : float
        Gap coefficient of variation for ``"gamma"``.
    mmpp_rates_per_s : tuple[float, float]
        State rates [1/s] for ``"mmpp"``.
    mmpp_dwell_s : tuple[float, float]
        Mean dwell times [s] of the two states for ``"mmpp"``.

    Returns
    -------
    pandas.DataFrame
        Canonical request table (time origin NaN).

    Raises
    ------
    ValueError
        For an unknown family or invalid parameters.
    """
    if arrival == "poisson":
        t = poisson_arrivals(rng, rate_per_s, duration_s)
    elif arrival == "gamma":
        t = gamma_arrivals(rng, rate_per_s, cv, duration_s)
    elif arrival == "mmpp":
        t = mmpp_arrivals(rng, mmpp_rates_per_s, mmpp_dwell_s, duration_s)
    else:
        raise ValueError(f"unknown arrival family {arrival!r}; expected 'poisson', 'gamma' or 'mmpp'")
    p, o = lengths.sample(rng, t.size)
    return make_request_table(t, p, o)
