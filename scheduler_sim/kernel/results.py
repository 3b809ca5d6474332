"""The result of a run: :class:`SimulationResult`, and :class:`ResultBuilder`, which assembles it at the end.

The builder turns the interval averages of the step rows (:class:`scheduler_sim.kernel.recorder.IntervalReducer`)
into named facility, per-CDU and per-rack series, the exact energy totals of the run, the facility overheads and
PUE figures (The Green Grid), the per-job table with its metrics and the allocation runs, the summary, and the
warnings of the run.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from cooling_fmu.coupling import cdu_series_name, group_cdu_columns, validity_warnings
from power.facility import SERIES as OVERHEAD_SERIES

from . import metrics
from .attempts import AttemptLog
from .coupler import PlantStopped
from .jobdata import JobOutcome
from .progress import RunHooks
from .recorder import StepIntegrator
from .state import POWER_SERIES, SCHEDULER_SERIES, StateLayout

if TYPE_CHECKING:  # typing only: what the service uses of the platform (kernel.platform)
    from .platform import ResultPlatform

__all__ = ["SimulationResult", "ResultBuilder", "allocation_runs", "finish_completed", "finish_stopped", "series_plan"]


@dataclass
class SimulationResult:
    """Everything one run produced, in SI units.

    Attributes
    ----------
    jobs : pandas.DataFrame
        Canonical job columns of the simulated jobs plus results: ``sim_start_s``, ``sim_end_s``, ``wait_s``,
        ``turnaround_s``, ``bounded_slowdown``, ``outcome`` (:class:`~scheduler_sim.kernel.jobdata.JobOutcome`),
        ``prefilled``, ``node_power_W`` (DC power per node while running), ``energy_dc_J`` (node DC energy of the
        job), ``energy_it_J`` (the job's rack-input energy: its nodes' share of SIVOC and rectifier losses
        included).
    time_s : ndarray, shape (n_intervals,)
        Start of each output interval [s] (simulation time; ``t0`` is the window start).
    facility : dict of str -> ndarray (n_intervals,)
        Interval-average facility series (W, K, dimensionless), see docs/output_schema.md.
    cdu : dict of str -> ndarray (n_intervals, n_cdus)
        Interval-average per-CDU series.
    totals : dict of str -> float
        Energies [J] integrated exactly over the whole run (from the step averages, not the output intervals).
    summary : dict of str -> float
        Headline metrics (see :mod:`scheduler_sim.kernel.metrics`).
    info : dict
        Counts and notes: excluded jobs, delayed replays, prefill size, idle energy, wall time ...
    units : dict of str -> str
        Units of series whose name carries no unit suffix (the cooling plant's outputs).
    rack : dict of str -> ndarray (n_intervals, n_racks)
        Interval-average per-rack series (``P_in_W``: rack input power).
    job_cdu_it_W : ndarray, shape (n_jobs, n_cdus)
        Rack-input power of each job in each CDU while it runs [W] (rows sum to the job's IT power), for
        attributing CDU heat and cooling energy to jobs.
    allocations : dict of str -> ndarray (n_runs,)
        Every run attempt of every job as runs of consecutive nodes within one CDU: ``job_id``, ``start_s``,
        ``end_s``, ``node_first``, ``node_count``, ``cdu``, ``it_power_W`` (rack-input power of those nodes during
        the attempt; its mean when the job's power varied). A job on nodes 0-3 and 8 has two rows per attempt.
        Node occupancy (Gantt charts, double-booking checks) and attribution are exact from this table.
    """

    jobs: pd.DataFrame
    time_s: np.ndarray
    facility: dict[str, np.ndarray]
    cdu: dict[str, np.ndarray]
    totals: dict[str, float]
    summary: dict[str, float]
    info: dict = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)
    rack: dict[str, np.ndarray] = field(default_factory=dict)
    job_cdu_it_W: np.ndarray | None = None
    allocations: dict[str, np.ndarray] = field(default_factory=dict)
    partition: dict[str, np.ndarray] = field(default_factory=dict)
    partitions: dict[str, np.ndarray] = field(default_factory=dict)
    stream: object = None


def _columns(spec: int | slice | list) -> Callable[[np.ndarray], np.ndarray]:
    """``rows -> rows[:, spec]``: a view for a column or a slice, a copy for a list of columns."""
    return lambda rows: rows[:, spec]


def _partition_it(lay: StateLayout, parts: tuple) -> Callable[[np.ndarray], np.ndarray]:
    """``rows -> (m, n_partitions)``: each partition's IT power, the sum of its racks' input in each row."""
    def take(rows: np.ndarray) -> np.ndarray:
        P_rack = rows[:, lay.rack:lay.rack + lay.n_racks]
        return np.stack([P_rack[:, p.first_rack:p.first_rack + p.n_racks].sum(axis=1) for p in parts], axis=1)
    return take


def series_plan(sim: ResultPlatform) -> list[tuple[str, str, Callable[[np.ndarray], np.ndarray], str | None,
                                                   tuple[int, ...]]]:
    """Every output series taken from the interval rows of the reducer, in the order of the file.

    Parameters
    ----------
    sim : ResultPlatform
        The platform (its layout, plant, coupler and system), before or after its run.

    Returns
    -------
    list of tuple
        ``(group, name, take, unit, row_shape)``: ``/timeseries/<group>/<name>`` is ``take(rows)`` of a block of
        interval rows (shape (m, n_columns) -> (m,) + row_shape); ``unit`` the plant's unit of a plant output,
        None for a series whose name carries its unit. The facility's further series (``P_facility_W``, ``PUE`` ...) are
        computed from these at the end of the run (:class:`ResultBuilder`).
    """
    lay, plant = sim.layout, sim.plant
    nc = lay.n_cdus
    plan: list = [("facility", name, _columns(nc + i), None, ()) for i, name in enumerate(POWER_SERIES)]
    plan += [("facility", name, _columns(lay.counts + i), None, ()) for i, name in enumerate(SCHEDULER_SERIES)]
    plan.append(("cdu", "Q_flow_W", _columns(slice(0, nc)), None, (nc,)))
    plan.append(("rack", "P_in_W", _columns(slice(lay.rack, lay.rack + lay.n_racks)), None, (lay.n_racks,)))
    if plant is not None:
        off = lay.size
        plan.append(("facility", "T_wb_K", _columns(off), None, ()))
        pi = plant.P_cooling_index
        for i, name in enumerate(plant.output_names):
            if cdu_series_name(name) is None and i != pi:  # that one is P_cooling_W below
                plan.append(("facility", name, _columns(off + 1 + i), plant.output_units[i], ()))
        for base, idx in group_cdu_columns(plant.output_names).items():
            cols = [off + 1 + i for i in idx]
            contiguous = cols == list(range(cols[0], cols[0] + len(cols)))
            # a view where the CDU columns are adjacent (the generated plant's): no copy of the series
            take = _columns(slice(cols[0], cols[0] + len(cols)) if contiguous else cols)
            plan.append(("cdu", base, take, plant.output_units[idx[0]], (len(cols),)))
        plan.append(("facility", "P_cooling_W", _columns(off + 1 + pi), None, ()))
    n_ovh = sim.coupler.n_overheads
    width = lay.size + (1 + len(plant.output_names) if plant is not None else 0) + n_ovh
    if n_ovh:
        plan += [("facility", name, _columns(width - n_ovh + i), None, ())
                 for i, name in enumerate(OVERHEAD_SERIES)]
    if sim.system.partitioned:
        plan.append(("partition", "P_it_W", _partition_it(lay, tuple(sim.system.partitions)), None,
                     (lay.n_parts,)))
        plan.append(("partition", "busy_nodes", _columns(slice(lay.part_busy, lay.part_busy + lay.n_parts)),
                     None, (lay.n_parts,)))
    return plan


class ResultBuilder:
    """Assembles the :class:`SimulationResult` of a finished (or stopped) run.

    Parameters
    ----------
    sim : ResultPlatform
        The platform after its run (state, coupler, job data, info).
    """

    def __init__(self, sim: ResultPlatform) -> None:
        self.sim = sim

    def build(self) -> SimulationResult:
        """The result (adds the policy's and the facility's entries and the warnings to the run's info).

        With a streamed reducer (its sink a :class:`scheduler_sim.io.stream.SeriesStream`) the series are read from
        the stream's file when used (never held whole) and the end-of-run series are written into it; the values
        are those of the in-memory result, bit for bit.
        """
        sim = self.sim
        sim.info.update(sim.policy.run_info())
        red = sim.coupler.reducer
        rows = red.finish()
        stream = red.sink if hasattr(red.sink, "group") else None
        groups: dict = {g: {} for g in ("facility", "cdu", "rack", "partition")}
        if stream is None:
            n_int = rows.shape[0]
            time_s = sim.t0 + (np.arange(n_int) * sim.ratio) * sim.step_s  # step boundaries, integer counts
            for group, name, take, _, _ in series_plan(sim):
                groups[group][name] = take(rows)  # views of the row block where the columns are adjacent
        else:
            n_int = stream.finish()
            time_s = stream.time_s()
            groups = {g: stream.group(g) for g in groups}
        facility, cdu, rack = groups["facility"], groups["cdu"], groups["rack"]
        totals = self._totals()
        units = self._plant_series(facility, totals, n_int)
        self._facility_overheads(facility, totals, n_int)
        jobs = self._job_table()
        allocations = allocation_runs(sim.attempts, jobs["job_id"].to_numpy(), sim.system.node_cdu)
        summary = metrics.summarize(jobs, totals, facility, n_nodes=sim.system.n_nodes, t0=sim.t0, time_s=time_s,
                                    measure=(sim.t0 + sim.config.warmup_s, sim.t1),
                                    cooling=sim.plant is not None)
        self._warnings(facility)
        self._counts(summary, time_s, facility)
        series, table = (self._partitions(groups["partition"], rack, jobs) if sim.system.partitioned
                         else ({}, {}))
        for k, name in enumerate(table.get("name", ())):  # per-partition headlines in /summary
            for m in ("utilisation", "mean_wait_s", "mean_bounded_slowdown", "E_it_J", "peak_it_W", "peak_rack_W",
                      "jobs"):
                summary[f"partition_{name}_{m}"] = float(table[m][k])
        return SimulationResult(jobs=jobs, time_s=time_s, facility=facility, cdu=cdu, totals=totals,
                                summary=summary, info=dict(sim.info), units=units, rack=rack,
                                job_cdu_it_W=sim.state.ledger.job_cdu_it_W, allocations=allocations,
                                partition=series, partitions=table, stream=stream)

    def _partitions(self, series: dict, rack: dict, jobs: pd.DataFrame) -> tuple[dict, dict]:
        """Per-partition series (IT power from its racks, busy nodes) and the partition table of a partitioned
        system: its description, exact IT energy (the step sums of its racks' input), peak rack input against
        its rack limit, and the scheduling metrics of its jobs (:func:`metrics.partition_metrics`).
        """
        sim = self.sim
        parts = sim.system.partitions
        lay = sim.layout
        P_rack = rack["P_in_W"]
        sums = sim.coupler.step_sums
        p_it = series["P_it_W"]  # per-partition IT power, summed from its racks (series_plan)
        span = float(sim.info["t_final_s"] - sim.t0)
        table = {
            "name": np.array([p.name for p in parts], dtype=object),
            "kind": np.array([p.kind for p in parts], dtype=object),
            "node_type": np.array([p.node_type for p in parts], dtype=object),
            "first_node": np.array([p.first_node for p in parts], dtype=np.int64),
            "n_nodes": np.array([p.n_nodes for p in parts], dtype=np.int64),
            "n_racks": np.array([p.n_racks for p in parts], dtype=np.int64),
            "idle_node_W": np.array([p.node.idle_W for p in parts]),
            "max_node_W": np.array([p.node.max_W for p in parts]),
            "rack_limit_W": np.array([p.rack_limit_W for p in parts]),
            "peak_rack_W": np.array([float(P_rack[:, p.first_rack:p.first_rack + p.n_racks].max())
                                     if P_rack.size else 0.0 for p in parts]),
            "E_it_J": np.array([float(sums[lay.rack + p.first_rack:lay.rack + p.first_rack + p.n_racks].sum())
                                for p in parts]),
            "peak_it_W": p_it.max(axis=0) if p_it.size else np.zeros(len(parts)),
        }
        table.update(metrics.partition_metrics(jobs, [p.name for p in parts], sim.jobdata.pools, span))
        cdu_parts = [[p.name for p in parts if c in p.cdus] for c in range(sim.system.n_cdus)]
        table["cdu_partitions"] = np.array(["+".join(x) for x in cdu_parts], dtype=object)
        return series, table

    def _totals(self) -> dict[str, float]:
        """Energies of the run [J] (exact integrals of the step function) and its duration [s]."""
        sim = self.sim
        nc = sim.layout.n_cdus
        s = sim.coupler.step_sums
        led = sim.state.ledger
        return {
            "E_node_dc_J": float(s[nc + 0]), "E_sivoc_loss_J": float(s[nc + 1]),
            "E_rectifier_loss_J": float(s[nc + 2]), "E_rack_overhead_J": float(s[nc + 3]),
            "E_it_J": float(s[nc + 4]), "E_cdu_heat_J": float(s[:nc].sum()),
            "E_idle_node_dc_J": led.idle_dc_J, "E_idle_node_it_J": led.idle_it_J,
            "E_partition_node_dc_J": led.part_dc_J, "E_partition_node_it_J": led.part_it_J,
            "duration_s": float(sim.info["t_final_s"] - sim.t0),
        }

    def _plant_series(self, facility: dict, totals: dict, n_int: int) -> dict[str, str]:
        """Cooling energy (and a zero ``P_cooling_W`` without a plant); returns the units of the plant's series."""
        sim = self.sim
        plant = sim.plant
        if plant is None:
            totals["E_cooling_J"] = 0.0
            facility["P_cooling_W"] = np.zeros(n_int)
            return {}
        totals["E_cooling_J"] = float(sim.coupler.plant_sums[plant.P_cooling_index])
        return {cdu_series_name(name) or name: plant.output_units[i] for i, name in enumerate(plant.output_names)}

    def _facility_overheads(self, facility: dict, totals: dict, n_int: int) -> None:
        """Facility series and totals beyond IT and the liquid plant (:mod:`power.facility`), and the metrics.

        Adds ``P_<stage>_W`` series and ``E_<stage>_J`` totals, ``P_electrical_loss_W`` (transformer + switchgear
        + UPS + PDU), ``P_air_side_W`` (CRAH fans + chilled water for air), ``P_mechanical_W`` (liquid plant
        ``P_cooling_W`` + air side), ``P_facility_W`` = IT + mechanical + electrical + lighting, the interval
        ``PUE`` and the partial PUEs ``pPUE_mechanical`` / ``pPUE_electrical`` (The Green Grid: (IT + the zone's
        overhead) / IT). With every stage absent and all heat to liquid, ``P_facility_W`` = ``P_it_W +
        P_cooling_W`` exactly (bit for bit). Without a cooling plant the facility is not modelled: no overhead is
        counted and the PUEs are NaN.
        """
        sim = self.sim
        n_ovh = sim.coupler.n_overheads
        for i, name in enumerate(OVERHEAD_SERIES):
            key = "E_air_heat_J" if name == "Q_air_W" else "E" + name[1:-2] + "_J"
            if n_ovh:  # the series is a column of the rows (series_plan)
                totals[key] = float(sim.coupler.overhead_sums[i])
            else:
                facility[name] = np.zeros(n_int)
                totals[key] = 0.0
        f, t = facility, totals
        f["P_electrical_loss_W"] = (f["P_transformer_loss_W"] + f["P_switchgear_loss_W"] + f["P_ups_loss_W"]
                                    + f["P_pdu_loss_W"])
        f["P_air_side_W"] = f["P_air_fan_W"] + f["P_air_chiller_W"]
        f["P_mechanical_W"] = f["P_cooling_W"] + f["P_air_side_W"]
        f["P_facility_W"] = f["P_it_W"] + f["P_mechanical_W"] + f["P_electrical_loss_W"] + f["P_lighting_W"]
        t["E_electrical_loss_J"] = (t["E_transformer_loss_J"] + t["E_switchgear_loss_J"] + t["E_ups_loss_J"]
                                    + t["E_pdu_loss_J"])
        t["E_air_side_J"] = t["E_air_fan_J"] + t["E_air_chiller_J"]
        t["E_mechanical_J"] = t["E_cooling_J"] + t["E_air_side_J"]
        t["E_facility_J"] = t["E_it_J"] + t["E_mechanical_J"] + t["E_electrical_loss_J"] + t["E_lighting_J"]
        with np.errstate(invalid="ignore", divide="ignore"):
            if sim.plant is not None:
                f["PUE"] = f["P_facility_W"] / f["P_it_W"]
                f["pPUE_mechanical"] = (f["P_it_W"] + f["P_mechanical_W"]) / f["P_it_W"]
                f["pPUE_electrical"] = (f["P_it_W"] + f["P_electrical_loss_W"]) / f["P_it_W"]
            else:  # cooling off: the facility is not modelled (no overhead counted), PUE undefined, never 1.0
                for k in ("PUE", "pPUE_mechanical", "pPUE_electrical"):
                    f[k] = np.full(n_int, np.nan)
        sim.info["facility_stages_counted"] = sim.system.facility.present()
        sim.info["facility_stages_absent"] = sim.system.facility.absent()
        sim.info["liquid_fraction"] = float(sim.system.liquid_fraction)

    def _job_table(self) -> pd.DataFrame:
        """The job table with the run's columns and the job metrics (:func:`metrics.add_job_metrics`)."""
        sim = self.sim
        st, led = sim.state, sim.state.ledger
        jobs = sim.jobdata.frame.copy(deep=False)  # columns are added or replaced, never written in place: no data copy
        jobs["sim_start_s"] = st.start
        jobs["sim_end_s"] = st.end
        jobs["outcome"] = st.outcome
        jobs["prefilled"] = st.prefilled
        jobs["node_power_W"] = sim.jobdata.node_power_W
        if sim.config.use_measured_power:  # for the report's measured-vs-model comparison
            jobs["node_power_model_W"] = sim.jobdata.node_power_model_W
        jobs["energy_dc_J"] = led.energy_dc
        jobs["energy_it_J"] = led.energy_it
        jobs["requeues"] = st.n_requeues
        jobs["lost_node_s"] = st.lost_node_s
        jobs["lost_energy_dc_J"] = led.lost_energy_dc
        if sim.system.partitioned:  # which partition ran each job (a one-partition system's table is unchanged)
            names = np.array([p.name for p in sim.system.partitions], dtype=object)
            jobs["partition"] = names[sim.jobdata.partition]
        if sim.system.shares:  # nodes' worth each job holds: slots / slots per node on a sharing partition
            per = np.array([p.share_slots for p in sim.system.partitions], dtype=float)[sim.jobdata.partition]
            jobs["node_share"] = np.where(per > 1, sim.jobdata.slots / per, sim.jobdata.nodes)
            sim.info["share_jobs_split"] = sum(t.n_split for t in st.alloc.shared.values())
        return metrics.add_job_metrics(jobs, window_start_s=sim.t0, copy=False)

    def _warnings(self, facility: dict) -> None:
        """Warnings (plant validity and bounds, a budget below idle power) and notes added to the run's info."""
        sim = self.sim
        warnings = validity_warnings(facility)
        guard = sim.coupler.guard
        if guard is not None and guard.violations:
            sim.info["plant_out_of_bounds"] = [v.to_dict() for v in guard.violations.values()]
            warnings += [v.message() for v in guard.violations.values()]
        absent = getattr(getattr(sim.policy, "order", None), "bonus_accounts_absent", [])
        if absent:
            sim.info["bonus_accounts_absent"] = absent
        cap = sim.governor.schedule
        if cap and min(w for _, w in cap) < sim.jobdata.idle_it_all_W:
            warnings.append(f"a facility power budget ({min(w for _, w in cap) / 1e6:.3f} MW) is below the "
                            f"IT power of the idle machine ({sim.jobdata.idle_it_all_W / 1e6:.3f} MW)")
        if warnings:
            sim.info["warnings"] = warnings

    def _counts(self, summary: dict, time_s: np.ndarray, facility: dict) -> None:
        """Power-budget time figures and job counts added to the summary."""
        sim = self.sim
        st = sim.state
        if sim.governor.active:  # how long the budget was binding, and how long facility power stood above it
            caps = np.full(len(time_s), math.inf)
            for t_c, w in sim.governor.schedule:
                caps[time_s >= t_c] = w
            over = facility["P_facility_W"] > caps
            summary["power_cap_exceeded_s"] = float(over.sum()) * sim.interval_s
            summary["power_cap_bound_s"] = float(sim.info.get("power_cap_bound_s", 0.0))
        summary["jobs_rejected_power_cap"] = float(sim.info.get("jobs_rejected_power_cap", 0))
        summary["jobs_cut_at_horizon"] = float(np.count_nonzero(st.outcome == JobOutcome.CUT_AT_HORIZON))
        summary["jobs_not_run"] = float(np.count_nonzero(np.isnan(st.start)
                                                         & (st.outcome != JobOutcome.REJECTED_POWER_CAP)))


def finish_stopped(sim: ResultPlatform, failure: PlantStopped, integ: StepIntegrator, wall0: float,
                   pbar: RunHooks | None) -> SimulationResult:
    """Partial results of a run the plant stopped: everything up to the last whole output interval it completed.

    Parameters
    ----------
    sim : ResultPlatform
        The stopped platform.
    failure : PlantStopped
        Why and when it stopped.
    integ : StepIntegrator
        The run's step integrator.
    wall0 : float
        Wall-clock start of the run (``time.perf_counter``) [s].
    pbar : RunHooks | None
        The progress display, closed here.

    Returns
    -------
    SimulationResult
        With ``info["complete"]`` False, ``failure`` and ``failed_at_s``.

    Raises
    ------
    RuntimeError
        If no whole output interval was completed.
    """
    n_int = sim.coupler.steps_emitted // sim.ratio
    if n_int == 0:
        raise RuntimeError(f"{failure}; the run stopped before its first whole output interval "
                           f"({sim.interval_s:g} s), so there is nothing to write") from failure
    t_final = integ.boundary(n_int * sim.ratio)
    sim.info.update({"complete": False, "failure": str(failure), "failed_at_s": failure.t_s})
    if pbar is not None:
        pbar.close()
    c = sim.state.counters
    sim.info.update({
        "events": c.n_events, "scheduling_passes": c.n_passes,
        "jobs_not_run": int(np.isnan(sim.state.start).sum()), "t_end_s": failure.t_s, "t_final_s": t_final,
        "cooling_steps": sim.coupler.steps_emitted, "wall_time_s": time.perf_counter() - wall0,
        "policy": sim.policy.name,
    })
    return ResultBuilder(sim).build()


def finish_completed(sim: ResultPlatform, integ: StepIntegrator, wall0: float,
                     pbar: RunHooks | None) -> SimulationResult:
    """Results of a complete run: padded with idle time to a whole output interval (at least one; an integer
    count of steps).

    Parameters
    ----------
    sim : ResultPlatform
        The platform after its last event.
    integ : StepIntegrator
        The run's step integrator.
    wall0 : float
        Wall-clock start of the run (``time.perf_counter``) [s].
    pbar : RunHooks | None
        The progress display, closed here.

    Returns
    -------
    SimulationResult
        With ``info["complete"]`` True.
    """
    st = sim.state
    c = st.counters
    sim.info["complete"] = True
    t_end = max(c.t_last, sim.t0)
    t_final = integ.boundary(max(sim.ratio, integ.first_boundary_at_or_after(t_end, sim.ratio)))
    integ.set(sim.stepfn.value(st))
    integ.advance(t_final)
    sv = st.step
    st.ledger.accrue_background(t_final - c.t_last, sv.idle_dc_W, sv.idle_it_W, sv.part_dc_W, sv.part_it_W)
    if pbar is not None:
        pbar.close()
    not_run = np.isnan(st.start) & (st.outcome != JobOutcome.REJECTED_POWER_CAP)
    sim.info.update({
        "events": c.n_events, "scheduling_passes": c.n_passes, "replay_started_late": c.n_late_replay,
        "jobs_not_run": int(not_run.sum()), "t_end_s": t_end, "t_final_s": t_final,
        "cooling_steps": integ.steps_done, "wall_time_s": time.perf_counter() - wall0,
        "policy": sim.policy.name, "placement": sim.config.placement,
        "scheduling_time_s": c.pass_time_s, "max_queue_length": c.max_queue,
        "jobs_killed_by_node_down": int(c.drained_kills), "requeues": int(st.n_requeues.sum()),
        "lost_node_s": float(st.lost_node_s.sum()), "lost_energy_dc_J": float(st.ledger.lost_energy_dc.sum()),
        "power_cap_bound_s": c.cap_bound_s, "power_cap_bound_passes": c.cap_bound_passes,
    })
    return ResultBuilder(sim).build()


#: Node entries (nodes of all attempts) handled at once by :func:`allocation_runs`: its temporaries (about a dozen
#: arrays of that length) stay near 30 MiB whatever the run length (all attempts at once held ~37 MiB more at the end
#: of 30 days of Theta, the run's peak; issue #26 item 3).
RUN_BATCH_NODES = 1 << 18


def allocation_runs(attempts: list | AttemptLog, job_ids: np.ndarray, node_cdu: np.ndarray,
                    batch_nodes: int = RUN_BATCH_NODES) -> dict[str, np.ndarray]:
    """Rows of consecutive-node runs within one CDU (see :class:`SimulationResult`).

    Vectorised over a batch of attempts at once (one sort of the batch's nodes by (attempt, node), one segment sum
    of the shares): a run breaks where the attempt changes, the next node is not the previous + 1, or the CDU
    changes. Each run's power is the sum of its nodes' shares in node order (``np.add.reduceat``, the same sum per
    run as a per-attempt loop; ``tests/unit/test_allocation_runs.py``). A run never spans two attempts, so batches
    of whole attempts (about ``batch_nodes`` node entries each) give the same rows, bit for bit, as one batch.

    Parameters
    ----------
    attempts : list | AttemptLog
        Every attempt as ``(job index, start [s], end [s], nodes, per-node rack-input power [W])`` (a list of
        tuples, or the run's :class:`~scheduler_sim.kernel.attempts.AttemptLog`); each attempt has at least one
        node.
    job_ids : np.ndarray
        Shape (n_jobs,), int64: job id of each job index.
    node_cdu : np.ndarray
        Shape (n_nodes,), int64: CDU of each node.
    batch_nodes : int
        Node entries per batch (at least one whole attempt per batch).

    Returns
    -------
    dict of str -> ndarray
        Columns ``job_id``, ``start_s``, ``end_s``, ``node_first``, ``node_count``, ``cdu``, ``it_power_W``.

    Raises
    ------
    ValueError
        If an attempt has no node.
    """
    dt = {"job_id": np.int64, "start_s": float, "end_s": float, "node_first": np.int64, "node_count": np.int64,
          "cdu": np.int64, "it_power_W": float}
    if not len(attempts):
        return {k: np.zeros(0, dtype=v) for k, v in dt.items()}
    chunks = attempts.arrays() if isinstance(attempts, AttemptLog) else [_packed(attempts)]
    parts = []
    done = 0  # attempts of the chunks before this one
    for job, a, b, lens, nodes, shares in chunks:
        if not lens.all():
            raise ValueError(f"attempt {done + int(np.flatnonzero(lens == 0)[0])} has no node")
        done += job.size
        ends = np.cumsum(lens)
        a0 = 0
        while a0 < job.size:  # whole attempts, about batch_nodes node entries a batch
            base = int(ends[a0 - 1]) if a0 else 0
            a1 = max(a0 + 1, int(np.searchsorted(ends, base + max(1, int(batch_nodes)), side="right")))
            n0, n1 = base, int(ends[a1 - 1])
            parts.append(_runs_of(job[a0:a1], a[a0:a1], b[a0:a1], lens[a0:a1], nodes[n0:n1], shares[n0:n1],
                                  job_ids, node_cdu))
            a0 = a1
    return {k: np.asarray(np.concatenate([p[k] for p in parts]) if len(parts) > 1 else parts[0][k], dtype=dt[k])
            for k in dt}


def _packed(attempts: list) -> tuple[np.ndarray, ...]:
    """A list of attempt tuples as the flat arrays of :meth:`AttemptLog.arrays` (one chunk)."""
    n = len(attempts)
    return (np.fromiter((x[0] for x in attempts), dtype=np.int64, count=n),
            np.fromiter((x[1] for x in attempts), dtype=float, count=n),
            np.fromiter((x[2] for x in attempts), dtype=float, count=n),
            np.fromiter((len(x[3]) for x in attempts), dtype=np.int64, count=n),
            np.concatenate([np.asarray(x[3], dtype=np.int64) for x in attempts]),
            np.concatenate([np.asarray(x[4], dtype=float) for x in attempts]))


def _runs_of(job: np.ndarray, a: np.ndarray, b: np.ndarray, lens: np.ndarray, nodes: np.ndarray, shares: np.ndarray,
             job_ids: np.ndarray, node_cdu: np.ndarray) -> dict[str, np.ndarray]:
    """The runs of one batch of attempts (:func:`allocation_runs`; their flat arrays), columns in its order, not yet
    cast.
    """
    att = np.repeat(np.arange(job.size, dtype=np.int64), lens)
    order = np.argsort(att * (int(node_cdu.size) + 1) + nodes, kind="stable")  # nodes come sorted: ~linear
    nodes, shares = nodes[order], shares[order]
    cdu = node_cdu[nodes]
    new = np.ones(nodes.size, dtype=bool)
    new[1:] = (np.diff(nodes) != 1) | (np.diff(cdu) != 0) | (att[1:] != att[:-1])
    firsts = np.flatnonzero(new)
    run_att = att[firsts]
    return {"job_id": np.asarray(job_ids)[job[run_att]], "start_s": a[run_att], "end_s": b[run_att],
            "node_first": nodes[firsts], "node_count": np.diff(np.append(firsts, nodes.size)),
            "cdu": cdu[firsts], "it_power_W": np.add.reduceat(shares, firsts)}
