"""Synthetic Frontier-scale batch workload (SWF), so that a Frontier-sized day needs no external trace.

Model
-----
The rigid-job model of Lublin and Feitelson, with its published parameters for the whole sample ("typeless":
no batch / interactive split), adapted to a 9,472-node machine and to OLCF's Frontier queue limits:

* **Size** (nodes): serial with probability ``SERIAL_PROB`` = 0.244; otherwise ``2**u`` with ``u`` from the
  two-stage uniform on ``[U_LOW, U_MED]`` (probability ``U_PROB`` = 0.86) or ``[U_MED, U_HI]``; with probability
  ``POW2_PROB`` = 0.576 ``u`` is rounded first (power-of-two sizes). ``U_LOW`` = 0.8 as published; ``U_HI`` =
  log2(system nodes) and ``U_MED`` = ``U_HI - 2.5`` (the published 4.5 = 7 - 2.5 for their 128-node system;
  the model says ``U_MED`` in ``[U_HI - 3.5, U_HI - 1.5]``).
* **Run time**: ``exp(hg)``, ``hg`` hyper-gamma: Gamma(shape ``A1`` = 4.2, scale ``B1`` = 0.94) with probability
  ``p``, else Gamma(``A2`` = 312, ``B2`` = 0.03); ``p = PA * nodes + PB`` clipped to [0, 1], ``PA`` = -0.0054,
  ``PB`` = 0.78 published for 128 nodes; here ``PA`` is scaled by 128 / system nodes so that ``p`` spans the
  same fraction of the machine (ADAPTATION). Then capped at the OLCF Frontier batch-queue limit of the job's
  size bin (below).
* **Arrivals**: inter-arrival ``exp(g)``, ``g`` ~ Gamma(shape ``AARR * ARAR`` = 10.2303 x 1.0225, scale
  ``BARR`` = 0.4871) (the published rush-hour gamma with its all-hours correction), then all inter-arrival times
  are scaled by one factor so that the offered load ``sum(nodes x run time) / (system nodes x window)`` equals
  ``load`` (ADAPTATION: Frontier's arrival rate is not published with the model; the model's daily cycle is
  not reproduced).
* **Requested wall time**: the bin's limit (ASSUMPTION: OLCF users commonly request the bin maximum; no
  published per-job distribution).

OLCF Frontier batch queue, "Job priority by node count" (OLCF Frontier User Guide, scheduling policy): bin 1
5,645-9,408 nodes and bin 2 1,882-5,644 nodes: 12 h; bin 3 184-1,881 nodes: 12 h; bin 4 92-183 nodes: 6 h;
bin 5 1-91 nodes: 2 h. Jobs larger than 9,408 nodes are clipped to 9,408.

Sources
-------
U. Lublin and D. G. Feitelson, "The workload on parallel supercomputers: modeling the characteristics of rigid
jobs", J. Parallel Distrib. Comput. 63(11):1105-1122, 2003; parameters as in the authors' reference
implementation ``m_lublin99.c`` (Parallel Workloads Archive, https://www.cs.huji.ac.il/labs/parallel/workload/).
OLCF, "Frontier User Guide", section "Scheduling policy / Job priority by node count",
https://docs.olcf.ornl.gov/systems/frontier_user_guide.html .

Usage::

    .venv/bin/python -m experiments.frontier_workload --days 1 --seed 1 --out out/frontier_day.swf
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np

__all__ = ["FRONTIER_BINS", "bin_limit_s", "frontier_jobs", "write_swf"]

# Lublin & Feitelson (2003), typeless parameters (m_lublin99.c)
SERIAL_PROB, POW2_PROB, U_LOW, U_PROB = 0.244, 0.576, 0.8, 0.86
A1, B1, A2, B2, PA, PB = 4.2, 0.94, 312.0, 0.03, -0.0054, 0.78
AARR, BARR, ARAR = 10.2303, 0.4871, 1.0225
#: (smallest nodes, largest nodes, max wall time [s]) of the OLCF Frontier batch-queue bins (User Guide).
FRONTIER_BINS = ((5645, 9408, 12 * 3600), (1882, 5644, 12 * 3600), (184, 1881, 12 * 3600), (92, 183, 6 * 3600),
                 (1, 91, 2 * 3600))
FRONTIER_NODES = 9472
#: Processors per Frontier node written to the SWF (64-core EPYC 7A53, power/systems/frontier.toml).
CORES_PER_NODE = 64


def bin_limit_s(nodes: np.ndarray) -> np.ndarray:
    """Max wall time [s] (int64) of each job's OLCF Frontier size bin (:data:`FRONTIER_BINS`)."""
    out = np.zeros(np.shape(nodes), dtype=np.int64)
    for lo, hi, lim in FRONTIER_BINS:
        out[(nodes >= lo) & (nodes <= hi)] = lim
    return out


def frontier_jobs(days: float = 1.0, *, seed: int = 1, load: float = 0.85,
                  system_nodes: int = FRONTIER_NODES) -> dict[str, np.ndarray]:
    """Draw a synthetic Frontier-scale workload.

    Parameters
    ----------
    days : float
        Submission window [days] (> 0).
    seed : int
        Seed of the numpy generator (same seed -> same jobs).
    load : float
        Offered load in (0, 2]: node-seconds submitted / (system nodes x window).
    system_nodes : int
        Nodes of the machine (U_HI = log2 of it).

    Returns
    -------
    dict of ndarray
        ``submit_s`` (float, sorted, from 0), ``nodes`` (int64), ``run_s`` (int64, >= 1), ``req_s`` (int64, the
        bin limit), all of one length.

    Raises
    ------
    ValueError
        If an argument is out of range.
    """
    if not (days > 0 and math.isfinite(days)):
        raise ValueError(f"days must be positive and finite, got {days}")
    if not 0 < load <= 2:
        raise ValueError(f"load must be in (0, 2], got {load}")
    if not 2 <= system_nodes <= 10_000_000:
        raise ValueError(f"system_nodes must be in 2 .. 10,000,000, got {system_nodes}")
    rng = np.random.default_rng(seed)
    window = days * 86400.0
    u_hi = math.log2(system_nodes)
    u_med = u_hi - 2.5
    max_nodes = min(system_nodes, FRONTIER_BINS[0][1])
    pa = PA * 128.0 / system_nodes
    # draw more jobs than needed, then keep those submitted in the window after scaling
    gaps = np.exp(rng.gamma(AARR * ARAR, BARR, 200_000))
    n_guess = 4096
    while True:
        u = rng.random(n_guess)
        stage = rng.random(n_guess) < U_PROB
        par = np.where(stage, rng.uniform(U_LOW, u_med, n_guess), rng.uniform(u_med, u_hi, n_guess))
        par = np.where(u <= SERIAL_PROB + POW2_PROB, np.floor(par + 0.5), par)
        nodes = np.where(u <= SERIAL_PROB, 1, np.floor(2.0 ** par + 0.5)).astype(np.int64)
        nodes = np.clip(nodes, 1, max_nodes)
        p = np.clip(pa * nodes + PB, 0.0, 1.0)
        first = rng.random(n_guess) < p
        hg = np.where(first, rng.gamma(A1, B1, n_guess), rng.gamma(A2, B2, n_guess))
        limit = bin_limit_s(nodes)
        run = np.clip(np.exp(hg), 1.0, limit).astype(np.int64)
        work = np.cumsum(nodes * run.astype(float))
        need = load * system_nodes * window
        if work[-1] >= need:
            n = int(np.searchsorted(work, need)) + 1
            break
        n_guess *= 2
        if n_guess > 50_000_000:
            raise ValueError("the requested load needs more than 50 million jobs")
    nodes, run, limit = nodes[:n], run[:n], limit[:n]
    g = np.resize(gaps, n)
    submit = np.cumsum(g) - g[0]
    submit *= window / (submit[-1] + g[-1]) if n > 1 else 0.0
    return {"submit_s": submit, "nodes": nodes, "run_s": run, "req_s": limit}


def write_swf(jobs: dict[str, np.ndarray], path: str | Path, *, cores_per_node: int = CORES_PER_NODE) -> Path:
    """Write the jobs as a Standard Workload Format v2.2 file (procs = nodes x ``cores_per_node``).

    Parameters
    ----------
    jobs : dict[str, np.ndarray]
        As returned by :func:`frontier_jobs`.
    path : str | Path
        Output file; written to a temporary name and renamed, never half-written.
    cores_per_node : int
        Processors per node in the SWF (load it with the same ``cores_per_node``).

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    path = Path(path)
    n = jobs["nodes"].size
    procs = jobs["nodes"] * cores_per_node
    m1 = np.full(n, -1, dtype=np.int64)
    cols = np.column_stack([np.arange(1, n + 1), np.floor(jobs["submit_s"]).astype(np.int64), m1, jobs["run_s"],
                            procs, m1, m1, procs, jobs["req_s"], m1, np.ones(n, np.int64), m1, m1, m1,
                            np.ones(n, np.int64), m1, m1, m1])
    from jobs.cachedirs import atomic_output

    with atomic_output(path, "w", what="SWF trace") as f:  # the one writer: private temporary, then os.replace
        f.write("; Version: 2.2\n; Computer: synthetic Frontier-like (experiments/frontier_workload.py)\n"
                f"; MaxNodes: {FRONTIER_NODES}\n; MaxProcs: {FRONTIER_NODES * cores_per_node}\n"
                "; Note: Lublin & Feitelson 2003 model, OLCF Frontier queue limits\n")
        np.savetxt(f, cols, fmt="%d")
    return path


def main(argv: list[str] | None = None) -> int:
    """Command line: write a synthetic Frontier-like SWF."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--days", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--load", type=float, default=0.85, help="offered load (node-seconds / capacity)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    jobs = frontier_jobs(a.days, seed=a.seed, load=a.load)
    write_swf(jobs, a.out)
    print(f"wrote {a.out}: {jobs['nodes'].size} jobs over {a.days:g} days, offered load {a.load:g}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
