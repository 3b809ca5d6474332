"""Attribution: who caused which joule, from job to PUE (the ``/attribution`` group of a run file).

A pure function of a :class:`~scheduler_sim.kernel.simulation.SimulationResult` (or of the same datasets read back from a
run file). Every facility energy of the run is given to a *consumer*: a job, or one of two pseudo-consumers,
``idle`` (nodes running no job, and whatever the chain does not attribute to a job) and ``partition`` (a co-located
partition, :class:`~scheduler_sim.kernel.simulation.NodePowerProfile`). The pseudo-consumers receive the remainder, so the
shares of every quantity sum to the run total to round-off (tested at 1e-9 relative).

Allocation rules
----------------
Let ``dt`` be the output interval, ``k`` an interval, ``c`` a CDU, ``P_jc`` the rack-input power of job ``j`` in
CDU ``c`` while it runs (``/jobs/it_power_cdu_W``, constant while the job runs) and ``o_jk`` the seconds job ``j``
runs inside interval ``k`` (exact, from ``sim_start_s`` clipped to the run start, and ``sim_end_s``).

* IT energy of job ``j`` in interval ``k`` and CDU ``c``: ``E_jkc = P_jc o_jk``; its heat ``lf E_jkc`` with the
  liquid fraction ``lf = E_cdu_heat_J / E_it_J`` (uniform over racks, as in :class:`power.PowerChain`).
* Conversion losses of a job (``E_it = E_dc + E_sivoc + E_rectifier + E_overhead``): ``E_dc`` is the job's node
  DC energy (``energy_dc_J``); ``E_sivoc = n_nodes t_run (s(P) - P)`` with the node-local SIVOC / VRM stage
  ``s(P) = (P + P_fixed) / eta + k P^2`` of the system (exact); ``E_overhead = n_nodes t_run O / N`` (rack
  overhead devices, shared equally per node: ``O`` the system's overhead power, ``N`` its nodes);
  ``E_rectifier = E_it - E_dc - E_sivoc - E_overhead`` (the job's rectifier loss incl. its share of the
  rectifier's fixed loss). Without a loadable system description the job's ``E_it - E_dc`` is split in the
  proportions of the run's facility totals (attribute ``conversion_split`` says which rule was used).
* CDU secondary pumps: pump energy of CDU ``c`` in interval ``k`` goes to the consumers in proportion to their
  share of that CDU's heat in that interval: ``E_pump,jc = sum_k lf E_jkc / (Q_kc dt) * P_pump,kc dt``.
* Plant (facility pumps, tower-water pumps, tower fans, chiller if present): in proportion to the consumer's share of the whole
  facility's heat in the interval: ``E_x,j = sum_k (sum_c lf E_jkc) / (sum_c Q_kc dt) * P_x,k dt``.
* Cooling components: the FMU reports each component at the end of a communication step, but the total
  ``P_cooling_W`` as an exact step average; within each interval the exact total is split over the components in
  proportion to their interval means (so components sum exactly to ``P_cooling_W``).
* Pseudo-consumers: ``idle + partition = total - sum over jobs`` for every quantity. The remainder is split
  between ``idle`` and ``partition`` in the proportions of ``E_idle_node_*_J`` and ``E_partition_node_*_J`` of
  ``/totals`` (DC energies for ``E_node_dc_J``, IT energies for every other quantity); the partition's own
  per-interval power is not in the run file.
* Facility overheads outside IT and the liquid plant (:mod:`power.facility`: transformer, switchgear, UPS and PDU
  losses, air side = CRAH fans + chilled water for the heat that goes to air, lighting and building controls): in
  proportion to the consumer's share of IT power in the interval: ``E_x,j = sum_k E_jk / (P_it,k dt) P_x,k dt``.
  (Every one of them scales with IT power, or is a fixed load the IT load is there for.)
* Effective PUE of a consumer: ``E_facility / E_it`` with ``E_facility = E_it + E_cooling + E_air_side +
  E_electrical_loss + E_lighting`` (``E_cooling`` its CDU pump + plant shares).

Per CDU and rack: IT energy, heat, SIVOC / rectifier losses (exact inversion of the affine power chain:
``P_dc,rack = (P_in,rack - B_rack) / a``; NaN with an I^2R conversion term), pump and plant shares (CDUs), and the
time the CDU supply temperature (``T_sec_sup``) spends above a limit ``T_supply_limit_K`` (default 300.15 K =
27 degC, the ASHRAE W27 facility-water class limit; configurable), counted on interval averages with a tolerance
of ``T_SUPPLY_TOLERANCE_K`` = 0.5 K (a supply is "above" only when it exceeds the limit by more than 0.5 K, as in
docs/policies.md; the plant's controller holds the set point to within 1e-7 K, which is not an excursion).

Per interval: facility power decomposed exactly as ``P_facility = P_node_dc + P_rack_overhead + P_sivoc_loss +
P_rectifier_loss + P_cdu_pump + P_facility_pump + P_tower_pump + P_tower_fan + P_chiller + P_transformer_loss
+ P_switchgear_loss + P_ups_loss + P_pdu_loss + P_air_fan + P_air_chiller + P_lighting``; IT power of jobs and of
the rest;
interval PUE and cumulative PUE ``sum_{i<=k} E_facility,i / sum_{i<=k} E_it,i``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import h5py
import numpy as np
import pandas as pd

from power import PowerChain, System, load_system, sivoc_loss_w

from ..io.hdf5 import check_output, check_schema, read_jobs, reading

__all__ = ["Attribution", "DEFAULT_T_SUPPLY_LIMIT_K", "attribute", "attribute_file", "attribution_of_run",
           "read_attribution", "load_result"]

#: Default CDU supply-temperature limit [K]: 27 degC, the ASHRAE W27 facility-water class limit.
DEFAULT_T_SUPPLY_LIMIT_K = 300.15
#: An interval counts as above the supply limit only when its mean exceeds the limit by more than this [K].
T_SUPPLY_TOLERANCE_K = 0.5

#: Consumer quantities, in the order written.
JOB_QUANTITIES = ("E_it_J", "E_node_dc_J", "E_sivoc_loss_J", "E_rectifier_loss_J", "E_rack_overhead_J",
                  "E_cdu_pump_J", "E_facility_pump_J", "E_tower_pump_J", "E_tower_fan_J", "E_chiller_J", "E_cooling_J",
                  "E_transformer_loss_J", "E_switchgear_loss_J", "E_ups_loss_J", "E_pdu_loss_J", "E_air_fan_J",
                  "E_air_chiller_J", "E_lighting_J", "E_electrical_loss_J", "E_air_side_J", "E_facility_J")
#: Facility overheads (allocated by IT power share) -> facility series that feed them.
_OVERHEAD = {"E_transformer_loss_J": "P_transformer_loss_W", "E_switchgear_loss_J": "P_switchgear_loss_W",
             "E_ups_loss_J": "P_ups_loss_W", "E_pdu_loss_J": "P_pdu_loss_W", "E_air_fan_J": "P_air_fan_W",
             "E_air_chiller_J": "P_air_chiller_W", "E_lighting_J": "P_lighting_W"}
#: Plant components (facility-level, allocated by facility heat) -> plant output names that feed them.
_PLANT = {"E_facility_pump_J": "P_pump_fac", "E_tower_pump_J": "P_pump_tower", "E_tower_fan_J": "P_fan_tower",
          "E_chiller_J": "P_chiller"}



@dataclass
class Attribution:
    """Attribution of one run (all SI: J, W, s, K).

    Attributes
    ----------
    jobs : dict of str -> ndarray, shape (n_jobs,)
        Per-job energies (:data:`JOB_QUANTITIES`) and ``PUE_effective``, aligned with ``/jobs``.
    pseudo : dict of str -> ndarray, shape (1,) or (2,)
        The same for the pseudo-consumers ``idle`` and, when the run has a co-located partition, ``partition``
        (``name`` holds the labels). ``PUE_effective`` is NaN when no plant was modelled.
    timeseries : dict of str -> ndarray, shape (n_intervals,)
        Facility power decomposition, job / non-job IT power, interval and cumulative PUE.
    cdu : dict of str -> ndarray, shape (n_cdus,)
        Per-CDU energies and time above the supply-temperature limit.
    rack : dict of str -> ndarray, shape (n_racks,)
        Per-rack energies and time above the limit (of the rack's CDU).
    totals : dict of str -> float
        Run totals the shares close on (jobs + pseudo-consumers = total, by construction), and two independent
        checks: ``closure_rel_error`` (the idle + partition remainder of IT and DC energy against the energies the
        simulation integrated event by event, relative to the run total) and ``decomposition_rel_error`` (largest
        gap between the sum of the facility power components and ``P_facility_W``, relative to its peak).
    attrs : dict
        Rules used (``conversion_split``, ``T_supply_limit_K``, ``liquid_fraction``).
    """

    jobs: dict[str, np.ndarray]
    pseudo: dict[str, np.ndarray]
    timeseries: dict[str, np.ndarray]
    cdu: dict[str, np.ndarray]
    rack: dict[str, np.ndarray]
    totals: dict[str, float]
    attrs: dict = field(default_factory=dict)

    def jobs_frame(self, job_id: np.ndarray | None = None) -> pd.DataFrame:
        """Per-job attribution as a DataFrame (indexed by ``job_id`` when given)."""
        df = pd.DataFrame(self.jobs)
        if job_id is not None:
            df.index = pd.Index(np.asarray(job_id), name="job_id")
        return df


def _consumers(result: object, t0: float, n_cdus: int):
    """The consumers that attribution shares out energy to, and when each drew power.

    A consumer is a run of nodes of one attempt of a job in one CDU (requeued jobs have several attempts) when the
    result carries ``allocations`` with per-run IT power; otherwise (files without per-run power) one attempt per
    job at its recorded per-CDU IT power.

    Parameters
    ----------
    result : object
        A SimulationResult or a result read back from a file.
        Needs ``jobs``, ``job_cdu_it_W`` and, optionally, ``allocations``.
    t0 : float
        Start of the first output interval [s]; earlier starts are clipped to it.
    n_cdus : int
        Number of CDUs.

    Returns
    -------
    tuple
        ``(owner, P_jc, a, b)``: row in ``result.jobs`` of each consumer (None when consumers are the jobs
        themselves), IT power per consumer and CDU [W] shape (n_consumers, n_cdus) (a :class:`OneCdu` when each
        consumer is a run of nodes in one CDU), start and end [s] shape (n_consumers,).
    """
    jobs = result.jobs
    al = getattr(result, "allocations", None) or {}
    if "it_power_W" in al and len(al["job_id"]) > 0:
        row = pd.Series(np.arange(len(jobs)), index=jobs["job_id"].to_numpy())
        owner = row.loc[np.asarray(al["job_id"])].to_numpy()
        P_jc = OneCdu(np.asarray(al["it_power_W"], float), np.asarray(al["cdu"], dtype=np.int64))
        return owner, P_jc, np.maximum(np.asarray(al["start_s"], dtype=float), t0), np.asarray(al["end_s"], float)
    return (None, np.asarray(result.job_cdu_it_W, dtype=float),
            np.maximum(jobs["sim_start_s"].to_numpy(float), t0), jobs["sim_end_s"].to_numpy(float))


@dataclass
class OneCdu:
    """Per-consumer IT power when every consumer draws it in one CDU (a run of nodes): the (n_consumers, n_cdus)
    table of :func:`_consumers` with one non-zero per row, held as that value and its column.

    The dense table was the largest array of the attribution of a million jobs (4.5 million runs x 6 CDUs, 216 MB;
    issue #26). Every use gives what the dense table gives, bit for bit: a row sum of one value and zeros is that
    value, and :func:`_weighted`'s row sum of ``P_jc * per_c`` is ``P * per_c`` at the column, every other product
    being ``+0.0`` (powers and prices are >= 0 and finite: :func:`_safe_div` leaves no inf or NaN).

    Attributes
    ----------
    P : ndarray, shape (n_consumers,)
        IT power of each consumer [W].
    col : ndarray of int64, shape (n_consumers,)
        Its CDU.
    """

    P: np.ndarray
    col: np.ndarray

    def row_sums(self) -> np.ndarray:
        """IT power of each consumer [W], shape (n_consumers, 1) (the dense table's ``sum(axis=1, keepdims=True)``)."""
        return self.P[:, None]


def _overlaps(a: np.ndarray, b: np.ndarray, t0: float, dt: float, n: int):
    """Interval indices and seconds of overlap of ``[a, b)`` with intervals ``[t0 + k dt, t0 + (k+1) dt)``.

    Returns ``ka, kb, wa, wb``: first and last interval (``kb`` may equal ``n``), seconds in ``ka`` and in ``kb``
    (``wb = 0`` when ``ka == kb``); intervals strictly between ``ka`` and ``kb`` are fully covered.
    """
    ok = np.isfinite(a) & np.isfinite(b) & (b > a)
    a = np.where(ok, a, t0)
    b = np.where(ok, b, t0)
    ka = np.clip(np.floor((a - t0) / dt).astype(np.int64), 0, n)
    kb = np.clip(np.floor((b - t0) / dt).astype(np.int64), 0, n)
    same = ka == kb
    wa = np.where(same, b - a, (t0 + (ka + 1) * dt) - a)
    wb = np.where(same, 0.0, b - (t0 + kb * dt))
    wa = np.where(ok, wa, 0.0)
    wb = np.where(ok, wb, 0.0)
    return ka, kb, wa, wb


def _per_interval(P: np.ndarray, ka, kb, wa, wb, dt: float, n: int) -> np.ndarray:
    """Sum over jobs of ``P_j o_jk``, shape (n, m) for ``P`` of shape (n_jobs, m) [J]."""
    m = P.shape[1]
    E = np.zeros((n + 2, m))
    np.add.at(E, ka, P * wa[:, None])
    np.add.at(E, kb, P * wb[:, None])
    D = np.zeros((n + 2, m))
    lo = ka + 1
    hi = np.maximum(kb, lo)
    np.add.at(D, lo, P)
    np.add.at(D, hi, -P)
    E += np.cumsum(D, axis=0) * dt
    return E[:n]


#: Jobs per block of :func:`_weighted`: its (jobs, CDUs) temporaries are made a block at a time, so their memory is
#: bounded (at 1,000,000 jobs the whole-table temporaries doubled the run's memory at its end, issue #26 item 1).
WEIGHTED_BLOCK_JOBS = 65536


def _weighted(P: np.ndarray | OneCdu, q: np.ndarray, ka, kb, wa, wb, dt: float) -> np.ndarray:
    """Per job ``sum_k sum_c P_jc o_jk q_kc`` for a price ``q`` of shape (n, m) [J per J] -> (n_jobs,).

    Evaluated :data:`WEIGHTED_BLOCK_JOBS` jobs at a time: every job's value is its own row's expression and row sum,
    so the result is the same bit for bit whatever the block. A :class:`OneCdu` ``P`` evaluates the one column
    each consumer draws power in (the same value as the dense row's sum).
    """
    n, m = q.shape
    qp = np.vstack([q, np.zeros((2, m))])
    Q = np.vstack([np.zeros((1, m)), np.cumsum(qp, axis=0)])  # Q[k] = sum_{i<k} q[i]
    out = np.empty(len(ka))
    for j0 in range(0, len(ka), WEIGHTED_BLOCK_JOBS):
        sl = slice(j0, j0 + WEIGHTED_BLOCK_JOBS)
        a, b = ka[sl], kb[sl]
        lo = a + 1
        hi = np.maximum(b, lo)
        if isinstance(P, OneCdu):  # the consumer's column only (OneCdu: the same value)
            c = P.col[sl]
            out[sl] = P.P[sl] * (wa[sl] * qp[a, c] + wb[sl] * qp[b, c] + dt * (Q[hi, c] - Q[lo, c]))
            continue
        per_c = wa[sl, None] * qp[a] + wb[sl, None] * qp[b] + dt * (Q[hi] - Q[lo])
        out[sl] = np.sum(P[sl] * per_c, axis=1)
    return out


def column_sums(group: object, name: str, n: int, rows: int = 1 << 13) -> np.ndarray:
    """``np.asarray(group[name], dtype=float).sum(axis=0)`` of an (n, k) series, bit for bit, without holding it
    whole when the group is streamed (:class:`scheduler_sim.io.stream.StreamedGroup`, its ``blocks``).

    numpy sums the rows of a C-ordered (n, k >= 2) array one after the other (its reduction's inner loop runs over
    the k columns), so the sum of the first blocks, continued row by row over the next block
    (``np.add.reduce`` of the running sum stacked on the block), is the same sum in the same order; a single column
    (k = 1) is summed pairwise along its length, so it is read whole. Tested against the whole-array sum
    (``tests/unit/test_series_stream.py``).

    Parameters
    ----------
    group : object
        A mapping of series (a dict of arrays, or a streamed group).
    name : str
        The series; absent: no columns.
    n : int
        Rows of the series (the output intervals), for the empty result of an absent series.
    rows : int
        Rows per block read.

    Returns
    -------
    np.ndarray
        Shape (k,): the sum over the rows.
    """
    if name not in group:
        return np.zeros((n, 0)).sum(axis=0)
    blocks = getattr(group, "blocks", None)
    if blocks is None:
        return np.asarray(group[name], dtype=float).sum(axis=0)
    acc = None
    for block in blocks(name, rows):
        block = np.asarray(block, dtype=float)
        if block.ndim != 2 or block.shape[1] < 2:  # one column: numpy's pairwise sum needs it whole
            return np.asarray(group[name], dtype=float).sum(axis=0)
        acc = block.sum(axis=0) if acc is None else np.add.reduce(np.concatenate([acc[None, :], block]), axis=0)
    return acc if acc is not None else np.asarray(group[name], dtype=float).sum(axis=0)


def _safe_div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(y > 0, x / np.where(y > 0, y, 1.0), 0.0)


def _cooling_components(facility: dict, cdu: dict, n: int, n_cdus: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """CDU pump power (n, n_cdus) and plant component powers (n,), scaled to sum exactly to ``P_cooling_W``."""
    # column-major copy: the per-CDU sums over time run along contiguous memory, as they did when the goldens were made
    pump = np.array(cdu.get("P_pump_sec", np.zeros((n, n_cdus))), dtype=float, order="F")
    plant = {k: np.asarray(facility.get(v, np.zeros(n)), dtype=float) for k, v in _PLANT.items()}
    raw = pump.sum(axis=1) + sum(plant.values())
    total = np.asarray(facility.get("P_cooling_W", np.zeros(n)), dtype=float)
    scale = _safe_div(total, raw)
    missing = (raw <= 0) & (total > 0)  # no component reported: put it on the facility pumps
    pump = pump * scale[:, None]
    plant = {k: v * scale for k, v in plant.items()}
    plant["E_facility_pump_J"] = np.where(missing, total, plant["E_facility_pump_J"])
    return pump, plant


def _overhead_sums(J: dict) -> None:
    """Electrical-chain and air-side sums, facility energy and effective PUE of each consumer (in place)."""
    J["E_electrical_loss_J"] = (J["E_transformer_loss_J"] + J["E_switchgear_loss_J"] + J["E_ups_loss_J"]
                                + J["E_pdu_loss_J"])
    J["E_air_side_J"] = J["E_air_fan_J"] + J["E_air_chiller_J"]
    J["E_facility_J"] = (J["E_it_J"] + J["E_cooling_J"] + J["E_air_side_J"] + J["E_electrical_loss_J"]
                         + J["E_lighting_J"])


def _conversion(system):
    """The platform's power chain (:class:`power.PowerChain`; every loss comes from power/), or None."""
    if system is None:
        return None
    chain = PowerChain(system)
    return SimpleNamespace(chain=chain, sivoc_loss=lambda P: sivoc_loss_w(P, system.sivoc),
                           overhead_per_node_W=chain.overhead_per_node_W, rack_cdu=np.asarray(system.rack_cdu))


def _shared_dc(jobs: pd.DataFrame, owner: np.ndarray, nodes: np.ndarray, run_s: np.ndarray,
               a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """DC energy, node-seconds and DC power per node of each run on a system that shares nodes.

    A tenant of a shared node is charged part of the node's power (:mod:`scheduler_sim.kernel.sharing`), so
    ``node_power_W x nodes x t`` is not its DC energy: each run gets its job's DC energy (``energy_dc_J``, the
    ledger's exact charges) in proportion to its node-seconds, and counts ``node_share / m`` of each of its
    ``m`` nodes (the attempt's nodes) for the per-node conversion split; whole-node jobs are unchanged but for
    rounding.

    Parameters
    ----------
    jobs : pd.DataFrame
        Result job table (``energy_dc_J``, ``node_share``).
    owner : np.ndarray
        Shape (k,): job row of each run.
    nodes : np.ndarray
        Shape (k,): nodes of each run.
    run_s : np.ndarray
        Shape (k,): duration of each run [s].
    a : np.ndarray
        Shape (k,): start of each run [s] (runs of one attempt share it).

    Returns
    -------
    E_dc_J : ndarray, shape (k,)
        DC energy of each run [J].
    node_s : ndarray, shape (k,)
        Node-seconds each run counts for [node s].
    P_node_W : ndarray, shape (k,)
        DC power per counted node of each run [W] (0 for a run of no length).
    """
    ns = nodes * run_s
    tot_ns = np.zeros(len(jobs))
    np.add.at(tot_ns, owner, ns)
    e = jobs["energy_dc_J"].to_numpy(float)[owner]
    E = np.where(tot_ns[owner] > 0, e * ns / np.where(tot_ns[owner] > 0, tot_ns[owner], 1.0), 0.0)
    m = pd.Series(nodes).groupby([owner, a]).transform("sum").to_numpy(float)  # nodes of the attempt
    node_s = ns * np.minimum(jobs["node_share"].to_numpy(float)[owner] / np.maximum(m, 1.0), 1.0)
    P = np.where(node_s > 0, E / np.where(node_s > 0, node_s, 1.0), 0.0)
    return E, node_s, P


def _split_conversion(J: dict, cv, conv_tot: dict, node_s: np.ndarray, P_node: np.ndarray) -> str:
    """Each job's conversion energy into ``J`` (SIVOC, rack overhead, rectifier) [J]; the rule's name.

    With the system (``cv``): the exact SIVOC loss and overhead per node, the rectifier the rest; without it: the
    job's IT minus DC energy split in the run's facility proportions ``conv_tot``. ``node_s``: node-seconds per job.
    """
    if cv is not None:
        J["E_sivoc_loss_J"] = node_s * cv.sivoc_loss(P_node)
        J["E_rack_overhead_J"] = node_s * cv.overhead_per_node_W
        J["E_rectifier_loss_J"] = J["E_it_J"] - J["E_node_dc_J"] - J["E_sivoc_loss_J"] - J["E_rack_overhead_J"]
        return "system"
    rest = J["E_it_J"] - J["E_node_dc_J"]
    s = sum(conv_tot.values())
    for k, v in conv_tot.items():
        J[k] = rest * (v / s if s > 0 else 0.0)
    return "facility-proportional"


def _pseudo_consumers(J: dict, T: dict, tot: dict, cooled: bool) -> tuple[dict[str, np.ndarray], float]:
    """The remainder of every run total after the jobs, split idle / partition; and the closure error.

    The closure is an independent cross-check: the remainder of IT / DC energy after the jobs' interval integration
    must equal the idle + partition energies the simulation integrated event by event (relative error, 1).
    """
    def frac(kind: str) -> float:
        i, p = tot.get(f"E_idle_node_{kind}_J", 0.0), tot.get(f"E_partition_node_{kind}_J", 0.0)
        return p / (i + p) if (i + p) > 0 else 0.0

    E_it_tot = tot["E_it_J"]
    has_partition = (tot.get("E_partition_node_it_J", 0.0) > 0 or tot.get("E_partition_node_dc_J", 0.0) > 0)
    pseudo: dict[str, np.ndarray] = {}
    for k in JOB_QUANTITIES:
        rest = T[k] - float(np.sum(J[k]))
        f = frac("dc" if k == "E_node_dc_J" else "it")
        pseudo[k] = np.array([rest * (1.0 - f), rest * f]) if has_partition else np.array([rest])
    pseudo["PUE_effective"] = _safe_div(pseudo["E_facility_J"], pseudo["E_it_J"])
    if not cooled:
        pseudo["PUE_effective"][:] = np.nan
    other_it = tot.get("E_idle_node_it_J", np.nan) + tot.get("E_partition_node_it_J", 0.0)
    other_dc = tot.get("E_idle_node_dc_J", np.nan) + tot.get("E_partition_node_dc_J", 0.0)
    closure = max(abs(float(np.sum(pseudo["E_it_J"])) - other_it) / E_it_tot if E_it_tot > 0 else 0.0,
                  abs(float(np.sum(pseudo["E_node_dc_J"])) - other_dc) / T["E_node_dc_J"] if T["E_node_dc_J"] > 0
                  else 0.0)
    return pseudo, closure


def attribute(result: object, system: System | None = None, *,
              T_supply_limit_K: float = DEFAULT_T_SUPPLY_LIMIT_K) -> Attribution:
    """Attribute every facility joule of a run to jobs and pseudo-consumers (rules: module docstring).

    Parameters
    ----------
    result : object
        A :class:`~scheduler_sim.kernel.results.SimulationResult` or a namespace with the same attributes. Needs
        ``jobs`` (``sim_start_s``, ``sim_end_s``, ``nodes``, ``node_power_W``, ``energy_dc_J``), ``time_s``
        (n_intervals,) [s], ``facility``, ``cdu``, ``rack`` series [W, K], ``totals`` [J] and ``job_cdu_it_W``
        (n_jobs, n_cdus) [W].
    system : System | None
        The platform; gives the exact SIVOC / overhead split per job and the per-rack losses. None: the job's
        conversion energy is split in the run's facility proportions and per-rack losses are NaN.
    T_supply_limit_K : float
        CDU supply-temperature limit [K] for the time-above-limit figures.

    Returns
    -------
    Attribution

    Raises
    ------
    ValueError
        If the result has no per-job per-CDU IT power or fewer than one output interval.
    """
    if result.job_cdu_it_W is None:
        raise ValueError("attribution needs the per-job per-CDU IT power (job_cdu_it_W / /jobs/it_power_cdu_W)")
    time_s = np.asarray(result.time_s, dtype=float)
    n = time_s.size
    if n < 1:
        raise ValueError("attribution needs at least one output interval")
    tot = {k: float(v) for k, v in result.totals.items()}
    dt = float(time_s[1] - time_s[0]) if n > 1 else float(tot["duration_s"])
    t0 = float(time_s[0])
    fac, cdu = result.facility, result.cdu
    Q = np.asarray(cdu["Q_flow_W"], dtype=float)  # (n, n_cdus)
    n_cdus = Q.shape[1]
    jobs = result.jobs
    owner, P_jc, a, b = _consumers(result, t0, n_cdus)
    if owner is not None:
        nodes = np.asarray(result.allocations["node_count"], dtype=float)
        P_node = jobs["node_power_W"].to_numpy(float)[owner]
    else:  # files without per-run power: one attempt per job, at its recorded per-CDU power
        nodes = jobs["nodes"].to_numpy(float)
        P_node = jobs["node_power_W"].to_numpy(float)
    ka, kb, wa, wb = _overlaps(a, b, t0, dt, n)
    run_s = np.where(np.isfinite(a) & np.isfinite(b) & (b > a), b - a, 0.0)

    E_it_tot = tot["E_it_J"]
    lf = tot["E_cdu_heat_J"] / E_it_tot if E_it_tot > 0 else 1.0
    pump, plant = _cooling_components(fac, cdu, n, n_cdus)

    # ---- per job
    J: dict[str, np.ndarray] = {}
    J["E_it_J"] = _weighted(P_jc, np.ones((n, n_cdus)), ka, kb, wa, wb, dt)
    J["E_node_dc_J"] = np.where(run_s > 0, P_node * nodes * run_s, 0.0)
    node_s = nodes * run_s
    if owner is not None and "node_share" in jobs.columns:  # shared nodes: the ledger's DC charges
        J["E_node_dc_J"], node_s, P_node = _shared_dc(jobs, owner, nodes, run_s, a)
    conv_tot = {k: tot[k] for k in ("E_sivoc_loss_J", "E_rectifier_loss_J", "E_rack_overhead_J")}
    cv = _conversion(system)
    split = _split_conversion(J, cv, conv_tot, node_s, P_node)

    def to_jobs(x: np.ndarray) -> np.ndarray:  # sum the runs of each job (consumers are runs of nodes)
        if owner is None:
            return x
        acc = np.zeros(len(jobs))
        np.add.at(acc, owner, x)
        return acc

    # Each quantity is summed per job as soon as it is known, so no more than a few per-run arrays are held at
    # once (a million jobs have ~4.5 million runs: the per-run arrays of every quantity, held until the end,
    # were the attribution's share of the run's end-of-run memory; issue #26). Same sums, bit for bit.
    J = {k: to_jobs(v) for k, v in J.items()}
    H = Q * dt  # CDU heat per interval [J]
    H_fac = H.sum(axis=1)
    J["E_cdu_pump_J"] = to_jobs(lf * _weighted(P_jc, _safe_div(pump * dt, H), ka, kb, wa, wb, dt))
    # IT power of each consumer [W], (n_consumers, 1)
    P_tot = P_jc.row_sums() if isinstance(P_jc, OneCdu) else P_jc.sum(axis=1, keepdims=True)
    del P_jc
    for k, p in plant.items():
        q = _safe_div(p * dt, H_fac)[:, None]
        J[k] = to_jobs(lf * _weighted(P_tot, q, ka, kb, wa, wb, dt))
    P_it_ts = np.asarray(fac["P_it_W"], dtype=float)
    over = {k: np.asarray(fac.get(v, np.zeros(n)), dtype=float) for k, v in _OVERHEAD.items()}
    for k, p in over.items():
        J[k] = to_jobs(_weighted(P_tot, _safe_div(p, P_it_ts)[:, None], ka, kb, wa, wb, dt))
    J["E_cooling_J"] = J["E_cdu_pump_J"] + sum(J[k] for k in _PLANT)
    _overhead_sums(J)
    cooled = "T_wb_K" in fac  # a plant was modelled; without one no PUE is defined (NaN, never 1.0)
    J["PUE_effective"] = _safe_div(J["E_facility_J"], J["E_it_J"])
    J["PUE_effective"][(J["E_it_J"] <= 0) | (not cooled)] = np.nan

    # ---- run totals every share closes on
    T = {"E_it_J": E_it_tot, "E_node_dc_J": tot["E_node_dc_J"], **conv_tot,
         "E_cdu_pump_J": float(pump.sum() * dt)}
    for k, p in plant.items():
        T[k] = float(p.sum() * dt)
    T["E_cooling_J"] = tot.get("E_cooling_J", 0.0)
    for k, p in over.items():
        T[k] = tot.get(k, float(p.sum() * dt))
    T["E_electrical_loss_J"] = (T["E_transformer_loss_J"] + T["E_switchgear_loss_J"] + T["E_ups_loss_J"]
                                + T["E_pdu_loss_J"])
    T["E_air_side_J"] = T["E_air_fan_J"] + T["E_air_chiller_J"]
    T["E_facility_J"] = tot.get("E_facility_J", E_it_tot + T["E_cooling_J"])

    pseudo, closure = _pseudo_consumers(J, T, tot, cooled)

    # ---- per interval
    ts: dict[str, np.ndarray] = {}
    for name in ("P_node_dc_W", "P_rack_overhead_W", "P_sivoc_loss_W", "P_rectifier_loss_W"):
        ts[name] = np.asarray(fac[name], dtype=float)
    ts["P_cdu_pump_W"] = pump.sum(axis=1)
    ts["P_facility_pump_W"] = plant["E_facility_pump_J"]
    ts["P_tower_pump_W"] = plant["E_tower_pump_J"]
    ts["P_tower_fan_W"] = plant["E_tower_fan_J"]
    ts["P_chiller_W"] = plant["E_chiller_J"]
    ts["P_it_W"] = np.asarray(fac["P_it_W"], dtype=float)
    ts["P_cooling_W"] = np.asarray(fac.get("P_cooling_W", np.zeros(n)), dtype=float)
    for k, p in over.items():
        ts["P" + k[1:-2] + "_W"] = p
    ts["P_facility_W"] = np.asarray(fac["P_facility_W"], dtype=float) if "P_facility_W" in fac \
        else ts["P_it_W"] + ts["P_cooling_W"]
    ts["P_it_jobs_W"] = _per_interval(P_tot, ka, kb, wa, wb, dt, n)[:, 0] / dt
    ts["P_it_other_W"] = ts["P_it_W"] - ts["P_it_jobs_W"]
    parts = ("P_node_dc_W", "P_rack_overhead_W", "P_sivoc_loss_W", "P_rectifier_loss_W", "P_cdu_pump_W",
             "P_facility_pump_W", "P_tower_pump_W", "P_tower_fan_W", "P_chiller_W") + tuple("P" + k[1:-2] + "_W"
                                                                                        for k in _OVERHEAD)
    decomp_err = float(np.max(np.abs(sum(ts[k] for k in parts) - ts["P_facility_W"]), initial=0.0)
                       / max(float(np.max(ts["P_facility_W"], initial=0.0)), 1e-300))
    ts["PUE"] = _safe_div(ts["P_facility_W"], ts["P_it_W"]) if cooled else np.full(n, np.nan)
    ts["PUE_cumulative"] = (_safe_div(np.cumsum(ts["P_facility_W"]), np.cumsum(ts["P_it_W"])) if cooled
                            else np.full(n, np.nan))

    # ---- per CDU and rack
    P_rack_sum = column_sums(result.rack, "P_in_W", n)
    n_racks = P_rack_sum.size
    R: dict[str, np.ndarray] = {"E_it_J": P_rack_sum * dt}
    R["E_heat_J"] = lf * R["E_it_J"]
    if cv is not None and cv.chain.is_affine and cv.chain.system.n_racks == n_racks:
        R["E_node_dc_J"], R["E_sivoc_loss_J"], R["E_rectifier_loss_J"] = cv.chain.rack_energy_split(R["E_it_J"],
                                                                                                   dt * n)
        rack_cdu = cv.rack_cdu
    else:
        for k in ("E_node_dc_J", "E_sivoc_loss_J", "E_rectifier_loss_J"):
            R[k] = np.full(n_racks, np.nan)
        rack_cdu = None
    C: dict[str, np.ndarray] = {"E_heat_J": H.sum(axis=0), "E_it_J": H.sum(axis=0) / lf if lf > 0 else H.sum(axis=0)}
    for k in ("E_node_dc_J", "E_sivoc_loss_J", "E_rectifier_loss_J"):
        C[k] = (np.bincount(rack_cdu, weights=R[k], minlength=n_cdus) if rack_cdu is not None
                else np.full(n_cdus, np.nan))
    C["E_cdu_pump_J"] = pump.sum(axis=0) * dt
    share = _safe_div(H, H_fac[:, None])
    C["E_plant_share_J"] = (share * (sum(plant.values()) * dt)[:, None]).sum(axis=0)
    C["E_cooling_J"] = C["E_cdu_pump_J"] + C["E_plant_share_J"]
    Ts = cdu.get("T_sec_sup")
    if Ts is not None:
        Ts = np.asarray(Ts, dtype=float)
        C["time_above_limit_s"] = (Ts > T_supply_limit_K + T_SUPPLY_TOLERANCE_K).sum(axis=0) * dt
        C["T_supply_max_K"] = Ts.max(axis=0)
    else:
        C["time_above_limit_s"] = np.full(n_cdus, np.nan)
        C["T_supply_max_K"] = np.full(n_cdus, np.nan)
    if rack_cdu is not None:
        R["time_above_limit_s"] = C["time_above_limit_s"][rack_cdu]
        R["cdu"] = rack_cdu.astype(np.int64)
    return Attribution(
        jobs=J, pseudo={"name": np.array(["idle", "partition"] if len(pseudo["E_it_J"]) == 2 else ["idle"]), **pseudo},
        timeseries=ts, cdu=C, rack=R,
        totals={**T, "closure_rel_error": float(closure), "decomposition_rel_error": decomp_err},
        attrs={"conversion_split": split, "T_supply_limit_K": float(T_supply_limit_K),
               "T_supply_tolerance_K": T_SUPPLY_TOLERANCE_K, "liquid_fraction": lf,
               "interval_s": dt})


def _system_from_config(config_json: str):
    """The run's :class:`power.System` from its configuration, or None if it cannot be loaded."""
    try:
        name = json.loads(config_json).get("system")
        if not name:
            return None
        return load_system(name)
    except Exception:  # an unloadable description only degrades the conversion split (recorded in attrs)
        return None


def attribution_of_run(result: object, config_json: str, *,
                       T_supply_limit_K: float = DEFAULT_T_SUPPLY_LIMIT_K) -> Attribution | None:
    """The attribution a run file carries in ``/attribution`` (written by :func:`scheduler_sim.io.hdf5.write_run`).

    Parameters
    ----------
    result : object
        The run (:class:`~scheduler_sim.kernel.results.SimulationResult`).
    config_json : str
        The run configuration (its ``system`` key selects the system description).
    T_supply_limit_K : float
        CDU supply-temperature limit [K].

    Returns
    -------
    Attribution or None
        None when the result has no per-job per-CDU IT power (older results): no ``/attribution`` is written.
    """
    if getattr(result, "job_cdu_it_W", None) is None:
        return None
    return attribute(result, _system_from_config(config_json), T_supply_limit_K=T_supply_limit_K)


def load_result(path: str | Path, *, verify: bool = True, allow_unverified: bool = False) -> SimpleNamespace:  # noqa: DOC502
    """Read a run file back into a :class:`SimulationResult`-like namespace (jobs, series, totals, config).

    Parameters
    ----------
    path : str | Path
        The run file.
    verify : bool
        Check it first (:func:`scheduler_sim.io.hdf5.check_output`: shapes, memory, ``content_sha256``); False
        only for a caller that has just checked it (``compare``, ``report``).
    allow_unverified : bool
        Accept a file without ``content_sha256`` (``--no-verify``; schema 1.0 files have none).

    Returns
    -------
    types.SimpleNamespace
        ``jobs``, ``time_s``, ``facility``, ``cdu``, ``rack``, ``totals``, ``summary``, ``job_cdu_it_W``,
        ``allocations``, ``config_json``, ``interval_s``, ``time_origin_unix_s``, ``attrs``, ``provenance``.

    Raises
    ------
    scheduler_sim.io.hdf5.SchemaError
        If the file is not a compatible run file.
    scheduler_sim.io.hdf5.DamagedFileError
        As :func:`scheduler_sim.io.hdf5.check_output`.
    """
    if verify:
        check_output(path, allow_unverified=allow_unverified)
    jobs = read_jobs(path, verify=False)
    with reading(path), h5py.File(path, "r") as f:
        check_schema(f, path)
        ts = f["timeseries"]
        ns = SimpleNamespace(
            jobs=jobs, time_s=ts["time_s"][()],
            facility={k: v[()] for k, v in ts["facility"].items()},
            cdu={k: v[()] for k, v in ts["cdu"].items()},
            rack={k: v[()] for k, v in ts["rack"].items()} if "rack" in ts else {},
            totals={k: float(v) for k, v in f["totals"].attrs.items()},
            summary={k: float(v) for k, v in f["summary"].attrs.items()},
            job_cdu_it_W=f["jobs/it_power_cdu_W"][()] if "it_power_cdu_W" in f["jobs"] else None,
            allocations={k: v[()] for k, v in f["allocations"].items()} if "allocations" in f else {},
            config_json=str(f.attrs.get("config_json", "{}")),
            interval_s=float(ts.attrs.get("interval_s", np.nan)),
            time_origin_unix_s=float(ts.attrs.get("time_origin_unix_s", np.nan)),
            attrs={k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()},
            provenance={k: (v.decode() if isinstance(v, bytes) else v) for k, v in f["provenance"].attrs.items()},
        )
    return ns


def attribute_file(path: str | Path, *, T_supply_limit_K: float = DEFAULT_T_SUPPLY_LIMIT_K,
                   verify: bool = True) -> Attribution:
    """Compute the attribution of a run file from its datasets (works on schema 1.0 files too).

    Parameters
    ----------
    path : str | Path
        The run file.
    T_supply_limit_K : float
        CDU supply-temperature limit [K].
    verify : bool
        Check the file first (:func:`scheduler_sim.io.hdf5.check_output`).

    Returns
    -------
    Attribution
        Computed from the file's datasets.
    """
    res = load_result(path, verify=verify)
    return attribute(res, _system_from_config(res.config_json), T_supply_limit_K=T_supply_limit_K)


def read_attribution(path: str | Path, *, verify: bool = True, allow_unverified: bool = False) -> Attribution:  # noqa: DOC502
    """Read ``/attribution`` from a run file, or compute it when the file predates it (schema 1.0).

    Parameters
    ----------
    path : str | Path
        The run file.
    verify : bool
        Check it first (:func:`scheduler_sim.io.hdf5.check_output`); False only for a caller that has just
        checked it.
    allow_unverified : bool
        Accept a file without ``content_sha256`` (``--no-verify``; schema 1.0 files have none).

    Returns
    -------
    Attribution
        As stored (or computed).

    Raises
    ------
    scheduler_sim.io.hdf5.SchemaError
        If the file is not a compatible run file.
    scheduler_sim.io.hdf5.DamagedFileError
        As :func:`scheduler_sim.io.hdf5.check_output`.
    """
    if verify:
        check_output(path, allow_unverified=allow_unverified)
    with reading(path), h5py.File(path, "r") as f:
        check_schema(f, path)
        if "attribution" not in f:
            return attribute_file(path, verify=False)
        g = f["attribution"]

        def grp(name):
            out = {}
            for k, ds in g[name].items():
                arr = ds[()]
                if ds.dtype.kind == "O":
                    arr = np.array([x.decode() if isinstance(x, bytes) else x for x in arr])
                out[k] = arr
            return out

        return Attribution(jobs=grp("jobs"), pseudo=grp("pseudo"), timeseries=grp("timeseries"), cdu=grp("cdu"),
                           rack=grp("rack"), totals={k: float(v) for k, v in g["totals"].attrs.items()},
                           attrs={k: (v.decode() if isinstance(v, bytes) else v) for k, v in g.attrs.items()})
