"""One run, end to end: configuration -> trace -> simulation (with cooling FMU) -> HDF5 -> summary.

This is the pure function a sweep maps over its scenarios (:func:`run_one`); the command line calls it too.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from cooling_fmu.coupling import AdaptiveStepper
from cooling_fmu.params import load_plant_params, plant_params_path
from cooling_fmu.plant import CoolingPlant
from cooling_fmu.supervisory import StagedPlant
from cooling_fmu.watchdog import guard_plant
from cooling_fmu.weather import SITES, Weather, WeatherFileError, resolve_weather_file
from dataloaders.registry import guess_format, load_trace
from dataloaders.report import LoadResult
from dataloaders.swf import swf_cores_per_node
from jobs.table import empty_job_table
from jobs.shares import apply_node_shares
from power import PowerChain, System, node_power_w
from power.facility import pue_category
from power.job_power import draw_job_utilisation

from ..analysis.attribution import T_SUPPLY_TOLERANCE_K, attribution_of_run
from ..analysis.limits import hours_above, supply_limit_of_plant
from ..analysis.grid import grid_attribution, grid_summary
from ..io.grid import grid_writer
from ..io.hdf5 import write_run, write_workload_group
from ..io.stream import SeriesStream
from ..kernel.config import SimulationConfig
from ..kernel.faults import sample_failures
from ..kernel.lookahead import RolloutCooling
from ..kernel.partitions import map_partitions
from ..kernel.progress import Spinner
from ..kernel.recorder import streaming
from ..kernel.results import series_plan
from ..kernel.simulation import Simulation
from ..serving.hardware import resolve_deployment
from ..serving.run import finish_serving, prepare_serving
from . import grid_run, workloads
from .rl_workload import finish_rl
from .uncertainty import perturb_jobs, perturb_plant, perturb_system, perturb_wet_bulb
from .config import DAY_S, RunConfig, TraceConfig
from .grid import SIGNAL_POLICIES, build_grid_signals, carbon_policy_params, grid_file
from ..analysis.fast_check import fast_check_lines, fast_plant_check
from .twin import twin_from_config
from .shared import (file_key, shared, shared_plant_params, shared_sha256, shared_steady_table, shared_swf_header,
                     shared_system, shared_weather)

__all__ = ["RunOutput", "run_one", "run_input_files", "format_summary", "pue_category", "build_plant", "build_weather",
           "weather_source"]


@dataclass
class RunOutput:
    """What :func:`run_one` returns: the output file, the headline metrics and the loader report summary.

    ``load_counts`` holds one entry per trace loaded (batch, then request trace): ``source``, ``kind``
    (``"jobs"`` / ``"requests"``), ``records_read``, ``rejected`` and ``repaired`` record counts, so callers can
    warn about data loss even when the summary is not shown (``--quiet``).
    """

    path: Path | None
    summary: dict[str, float]
    info: dict
    load_summary: str
    load_counts: list[dict] = field(default_factory=list)
    headroom: list[str] = field(default_factory=list)
    supply: list[str] = field(default_factory=list)


def weather_source(cfg: RunConfig, system: System | None = None) -> tuple[str, str, str]:
    """Which weather a run uses, without reading it.

    Precedence: ``cooling.weather = "constant"``; else ``cooling.weather_path`` (set by ``--weather PATH``, or in
    the configuration); else the system's site (``[site] weather`` of its description); else the shipped Golden,
    CO file.

    Parameters
    ----------
    cfg : RunConfig
        The run.
    system : System | None
        The run's system (loaded from ``cfg.system`` when None).

    Returns
    -------
    spec : str
        ``"constant"``, a shipped site name or a file path.
    chosen_by : str
        ``"cooling.T_wb_C"``, ``"cooling.weather_path"``, ``"system site"`` or ``"default"``.
    base_dir : str
        Folder a relative ``spec`` is resolved against ("" for the working directory).
    """
    c = cfg.cooling
    if c.weather == "constant":
        return "constant", "cooling.T_wb_C", ""
    if c.weather_path:
        return c.weather_path, "cooling.weather_path", ""
    if system is None:
        system = shared_system(cfg.system)
    if system.site_weather:
        return system.site_weather, "system site", str(Path(system.source).parent) if system.source else ""
    return "golden", "default", ""


def run_input_files(cfg: RunConfig, system: System | None = None) -> dict[str, Path]:
    """Every input file a run of ``cfg`` reads, by role: the keys :func:`run_one` records in
    ``input_checksums_json`` (derived artefacts, the built FMU and the fast-plant table, are keyed by these files).

    Roles: ``trace``, ``request_trace``, ``deployment`` (serving), ``system``, ``plant`` and ``weather`` (when the
    cooling plant runs and the weather is a file), ``grid_carbon`` and ``grid_price`` (series files). A resumed
    sweep compares their SHA-256 with the ones a finished scenario recorded (:func:`scheduler_sim.app.sweep.
    scenario_status`).

    Parameters
    ----------
    cfg : RunConfig
        The run.
    system : System | None
        The run's system (loaded from ``cfg.system`` when None).

    Returns
    -------
    dict of str -> pathlib.Path
        Role -> file. A system, weather file or shipped grid name that cannot be resolved raises the error of its
        resolver (FileNotFoundError, SystemFileError, ValueError).
    """
    if system is None:
        system = shared_system(cfg.system)
    files: dict[str, Path] = {}
    if cfg.trace.enabled:
        files["trace"] = cfg.trace.resolved_path()
    if cfg.serving is not None:
        from ..serving.run import embedded_request_trace

        files["request_trace"] = Path(cfg.serving.trace) if cfg.serving.trace else embedded_request_trace()
        files["deployment"] = resolve_deployment(cfg.serving.deployment)
    if system.source:
        files["system"] = Path(system.source)
    if cfg.cooling.plant_model != "off":
        files["plant"] = plant_params_path(cfg.cooling.plant or system.cooling_plant)
        spec, _, base = weather_source(cfg, system)
        if spec != "constant":
            files["weather"] = resolve_weather_file(spec, base or None)
    g = cfg.grid
    if g is not None or cfg.scheduler.policy in SIGNAL_POLICIES:
        if g is not None and g.carbon and g.carbon != "constant":
            files["grid_carbon"] = grid_file(g.carbon)
        if g is not None and g.price:
            files["grid_price"] = grid_file(g.price)
    return files


def build_weather(cfg: RunConfig, time_origin_unix_s: float,  # noqa: DOC503
                  system: System | None = None) -> tuple[Callable[[np.ndarray | float], np.ndarray], Path | None, str]:
    """Return (wet_bulb_K(t_s) callable, weather file path or None, one-line description) for simulation times.

    The weather file is chosen by :func:`weather_source`. A typical year is aligned to the trace by its Unix time
    origin and indexed by month, day and hour (:meth:`cooling_fmu.weather.Weather.at_calendar`: every trace year
    maps a date to the same weather hour; 29 February repeats 28 February): a simulation time ``t`` is looked up
    at the local standard time ``origin + t + utc_offset``. The UTC offset is ``cooling.utc_offset_h`` if set,
    else the file header's. A trace without a Unix origin starts on January 1st, 00:00 of a non-leap year.

    Parameters
    ----------
    cfg : RunConfig
        The run (its ``cooling`` section: ``weather``, ``weather_path``, ``T_wb_C``, ``utc_offset_h``,
        ``accept_weather_gaps``).
    time_origin_unix_s : float
        Unix time [s] of simulation time 0; NaN when the trace gives none (no calendar alignment).
    system : System | None
        The run's system, whose site may choose the weather (loaded from ``cfg.system`` when None).

    Returns
    -------
    wet_bulb_K : Callable[[np.ndarray | float], np.ndarray]
        Wet-bulb temperature [K] at simulation times [s].
    path : Path | None
        The weather file read; None for a constant wet-bulb.
    description : str
        One line: site, file format and name, what chose it, and how it is aligned to the trace calendar.

    Raises
    ------
    FileNotFoundError
        If the weather file does not exist and is not a shipped site name (raised by
        :func:`cooling_fmu.weather.resolve_weather_file`).
    WeatherFileError
        (:class:`cooling_fmu.weather.WeatherFileError`) If the file cannot be used (layout, physically impossible
        values: file, column and line named; raised by :meth:`cooling_fmu.weather.Weather.from_file`), or the run
        needs a UTC offset that neither the configuration nor the file gives.
    """
    c = cfg.cooling
    spec, chosen_by, base = weather_source(cfg, system)
    if spec == "constant":
        return Weather.constant(c.T_wb_C + 273.15).wet_bulb_K, None, f"constant wet-bulb {c.T_wb_C:g} degC"
    wpath = resolve_weather_file(spec, base or None)
    weather = shared_weather(wpath, c.accept_weather_gaps)  # parsed once per process (app.shared)
    rep = weather.report
    label = SITES[spec.lower()][1] if spec.lower() in SITES else (rep.station_name or wpath.name)
    if c.utc_offset_h is not None:
        utc, how = float(c.utc_offset_h), "cooling.utc_offset_h"
    else:
        utc, how = float(rep.utc_offset_h), "file header"
    if math.isfinite(time_origin_unix_s):
        if not math.isfinite(utc):
            raise WeatherFileError(f"{wpath}: the file header gives no UTC offset; set cooling.utc_offset_h")
        weather = weather.at_calendar(time_origin_unix_s, utc)
        when = f"UTC{utc:+g} h from the {how}, calendar-aligned by month/day/hour"
    else:
        when = "no calendar origin: starts Jan 1 00:00"
    desc = f"{label}: {rep.format} {wpath.name} (chosen by {chosen_by}; {when})"
    return weather.wet_bulb_K, wpath, desc


def build_plant(cfg: RunConfig, system: System, *, progress: bool = False) -> StagedPlant | AdaptiveStepper:
    """Build (or fetch from the cache) the cooling FMU for the system's plant and return a CoolingPlant.

    With ``cooling.stepping = "adaptive"`` (the default; "fixed" steps the plant at every ``step_s``) the plant is
    returned wrapped in a :class:`cooling_fmu.coupling.AdaptiveStepper` (same protocol; attributes forwarded).

    With ``progress`` a spinner line (elapsed time) is shown while the plant is set up: the first use of a plant
    builds its FMU (rumoca + gcc; minutes for hundreds of CDUs, see docs/cooling.md) and linearises it for the
    stability limit; later uses read both from the cache.

    Parameters
    ----------
    cfg : RunConfig
        The run (its ``cooling`` section: plant, plant_model, step_s, stepping; ``perturb`` for an ensemble
        member).
    system : System
        The run's system (its ``cooling_plant`` when ``cooling.plant`` is unset, its CDU count).
    progress : bool
        Show a spinner line while the plant is set up.

    Returns
    -------
    StagedPlant | AdaptiveStepper
        The plant (FMU or, with ``cooling.plant_model = "fast"``, the quasi-steady table) behind the supervisory
        tower-cell stager, wrapped in an :class:`~cooling_fmu.coupling.AdaptiveStepper` with
        ``cooling.stepping = "adaptive"``.

    Raises
    ------
    ValueError
        If the plant description's number of CDUs differs from the system's.
    """
    params = perturb_plant(cfg.perturb, shared_plant_params(cfg.cooling.plant or system.cooling_plant))
    if params.n_cdu != system.n_cdus:
        raise ValueError(f"plant {cfg.cooling.plant or system.cooling_plant!r} has {params.n_cdu} CDUs but system "
                         f"{system.name!r} has {system.n_cdus}")
    if cfg.cooling.plant_model == "fast":  # quasi-steady table (cooling_fmu.quasisteady); no FMU, no stepping
        from cooling_fmu.quasisteady import QuasiSteadyPlant

        return StagedPlant(QuasiSteadyPlant(params, step_s=cfg.cooling.step_s, tau_s=cfg.cooling.fast_tau_s,
                                            table=shared_steady_table(params)))  # one table per plant content
    head = f"cooling plant set-up ({params.n_cdu} CDUs; the first use builds the FMU)"
    with Spinner(head, enabled=progress) as sp:  # the line names the phase: rumoca, gcc, validation ...
        plant = CoolingPlant(params, step_s=cfg.cooling.step_s, on_phase=lambda m: sp.step(0, desc=f"{head}: {m}"))
    guard_plant(plant, cfg.cooling.step_timeout_s)  # a step that never returns stops the run (docs/cooling.md)
    plant = StagedPlant(plant)  # tower cells staged by the supervisory controller (cooling_fmu/supervisory.py)
    if cfg.cooling.stepping == "adaptive":
        cap = int(cfg.cooling.max_step_s // cfg.cooling.step_s) if cfg.cooling.max_step_s > 0 else None
        return AdaptiveStepper(plant, n_fine=cfg.cooling.fine_steps, max_held=cap)
    return plant


def _grid_writers(ga, grid_content):
    """The ``extra_groups`` writer of ``/grid``: the dynamic reports (events, ramps, battery) and the cost / CO2
    attribution, each when the run has them; None when it has neither (no ``/grid``).
    """
    parts = ([grid_run.writer(grid_content)] if grid_content else []) + ([grid_writer(ga)] if ga is not None else [])
    if not parts:
        return None
    return lambda f: [w(f) for w in parts]


def run_one(cfg: RunConfig, out: str | Path | None, *, progress: bool | None = None,
            echo: Callable[[str], None] | None = None, comm: object | None = None,
            headroom: bool = False, live: object = None, fast_check_h: float = 0.0,
            content: str = "full") -> RunOutput:
    """Run one configuration and write its HDF5 file.

    A pipeline of small steps over one :class:`_Run` (configuration -> inputs -> simulation -> outputs): the
    system, the batch trace, the serving partition, the checksums, the cooling plant and its weather, the grid
    signals, the policy and workloads, the simulation, what the result records, the file, the summary.

    Parameters
    ----------
    cfg : RunConfig
        The run.
    out : str | Path | None
        Output HDF5 path; None runs without writing (tests, benchmarks).
    progress : bool | None
        Override ``cfg.output.progress``.
    echo : Callable[[str], None] | None
        Where to print stage messages (None: silent).
    comm : object | None
        An mpi4py communicator: with ``scheduler.policy = "twin"``, the twin's rollouts are spread over its ranks
        (the other ranks must run :func:`scheduler_sim.app.twin.serve_rollouts`); None rolls out serially.
    headroom : bool
        Compute the run's headroom (:mod:`scheduler_sim.analysis.headroom`) after the file is written, into
        ``RunOutput.headroom`` (printed by ``hpctwin run``; not written to the file).
    live : object
        ``hpctwin run --live``: the :class:`~scheduler_sim.app.live.LiveView` (None: none), given to the
        simulation as its run observer in place of the progress bar (the caller erases it at the end with
        :func:`scheduler_sim.app.live.live_dashboard`).
    fast_check_h : float
        With ``cooling.model = "fast"``: length of the FMU reference window [h] that measures the fast plant's
        supply-temperature and peak errors on this run (:mod:`scheduler_sim.analysis.fast_check`; ``hpctwin run`` asks
        for 6 h), written to ``info["fast_plant_check"]`` and printed; 0 measures nothing.
    content : str
        ``"full"`` writes the run file; ``"summary"`` an ensemble member's record (root attributes, summary,
        totals, provenance: :func:`scheduler_sim.io.hdf5.write_run`), without the attribution it would hold.

    Returns
    -------
    RunOutput

    Raises
    ------
    BaseException
        Whatever a step after the simulation raised, re-raised once the run's streamed temporary is removed
        (nothing is published; a failed write of the disk: its one-line ``OSError`` instead).

    Notes
    -----
    The steps raise ValueError if the output is an input file of the run or a folder; also (from the
    configuration, the loaders and the plant) for a bad input, with a message naming the file / field at fault.
    The loaders raise :class:`dataloaders.report.TraceError` and the plant the errors of :mod:`cooling_fmu`
    (messages naming the file / field at fault).
    """
    run = _Run(cfg=cfg, say=echo or (lambda s: None), show=cfg.output.progress if progress is None else progress,
               progress=progress, live=live, fast_check_h=fast_check_h)
    _check_output(cfg, out)
    _prepare_system(run)
    _prepare_batch(run)
    _prepare_serving(run)
    _record_input_checksums(run)
    _prepare_cooling(run)
    _prepare_grid(run)
    _prepare_policy(run, comm)
    sim, result = _simulate(run, out if content == "full" else None)
    try:
        _annotate_result(run, result)
        ga, grid_content = _grid_results(run, result, sim)
        limit = _supply_limit(run)
        attr = _attribution(run, result, limit) if (out is not None and content == "full") or _has_workload(run) \
            else None
        _finish_workloads(run, result, attr)
        room = run_headroom_of(run.cfg, run.system, result, run.wpath, run.origin) if headroom else None
        path = _write(run, out, result, ga, grid_content, attr, room, content) if out is not None else None
    except BaseException as exc:  # nothing published: the streamed temporary is removed (a disk error: one line)
        if result.stream is not None:
            result.stream.abandon(exc)
        raise
    return _run_output(run, path, result, limit, room)


@dataclass
class _Run:
    """What the steps of :func:`run_one` hand on to each other (each step fills its part)."""

    cfg: RunConfig
    say: Callable[[str], None]
    show: bool
    progress: bool | None = None  # run_one's override of cfg.output.progress
    live: object = None  # hpctwin run --live: the dashboard (scheduler_sim.app.live.LiveView)
    fast_check_h: float = 0.0  # the fast plant's FMU reference window [h]; 0: none
    system: System | None = None
    loaded: LoadResult | None = None
    jobs: pd.DataFrame | None = None
    spread_info: dict = field(default_factory=dict)
    origin: float = float("nan")
    checksums: dict = field(default_factory=dict)
    serving: object = None
    plant: object = None
    wet_bulb: object = None
    dry_bulb: object = None
    wpath: Path | None = None
    wdesc: str = "cooling off"
    data_warnings: list[str] = field(default_factory=list)  # printed by every run, also under --quiet; info_json
    weather_gaps: dict | None = None
    grid: object = None
    policy: object = None
    sim_cfg: SimulationConfig | None = None
    events: list = field(default_factory=list)
    training: object = None


def _check_output(cfg: RunConfig, out: str | Path | None) -> None:
    """Refuse an output that is an input of the run or a folder."""
    if out is None:
        return
    inputs = [cfg.trace.resolved_path()] if cfg.trace.enabled else []
    inputs += [Path(c) for c in (cfg.cooling.weather_path,) if c and Path(c).exists()]
    if any(Path(out).resolve() == Path(i).resolve() for i in inputs):
        raise ValueError(f"output {out} is an input file of this run; refusing to overwrite it")
    if Path(out).is_dir():
        raise ValueError(f"output {out} is a folder; give a file name such as {Path(out) / (cfg.name + '.h5')}")


def _prepare_system(run: _Run) -> None:
    """The system description (perturbed for an ensemble member), checked; notes on what PUE leaves out."""
    cfg, say = run.cfg, run.say
    run.system = system = perturb_system(cfg.perturb, shared_system(cfg.system))  # [perturb]: an ensemble member
    check_sizes(cfg, system)
    if system.liquid_fraction < 1.0:
        if system.facility.air_side is None:
            say(f"note    {100 * (1 - system.liquid_fraction):.1f} % of rack heat goes to room air and the system "
                f"description has no [facility.air_side]: its removal is not counted in PUE")
        else:
            say(f"note    {100 * (1 - system.liquid_fraction):.1f} % of rack heat goes to room air, removed by the "
                f"air side of the system description (CRAH fans, chilled water or economiser), counted in PUE")
    absent = system.facility.absent()
    if absent:
        say(f"note    facility stages left out by the system description (not counted in PUE): {', '.join(absent)}")


def _prepare_batch(run: _Run) -> None:
    """The batch trace: loaded, shares -> nodes, window start, growth, job power, perturbation (or none)."""
    cfg, system, say = run.cfg, run.system, run.say
    if not cfg.trace.enabled:
        say("trace   (batch trace disabled)")
        run.jobs = empty_job_table()
        run.spread_info = {"distribution": cfg.power.job_power_spread, "jobs_drawn": 0, "jobs_clipped": 0}
        return
    trace_path = cfg.trace.resolved_path()
    say(f"trace   {trace_path}")
    cpn, cpn_why = trace_cores_per_node(cfg, system)
    pool = pool_size(cfg, system)
    opts = {"timezone": cfg.trace.timezone} if cfg.trace.timezone else {}
    with Spinner(f"loading trace {trace_path.name}", enabled=run.show):  # a large trace takes seconds to parse
        run.loaded = loaded = _load_batch_trace(cfg, trace_path, pool, cpn, opts)
    if loaded.report.loader == "swf" and cfg.trace.cores_per_node is None:  # derived: say from where
        loaded.report.notes.append(f"cores_per_node = {cpn} from {cpn_why}")
    say(trace_vs_system(cfg, system, loaded, cpn, pool))
    jobs = loaded.jobs
    if "gpus" in jobs.columns or "cpus" in jobs.columns:  # GPU-sharing pods: shares -> nodes, utilisation
        jobs, share_notes = _apply_shares(jobs, cfg, system)
        loaded.report.notes.extend(share_notes)
    run.origin = float(jobs.attrs.get("time_origin_unix_s", float("nan")))
    start = default_start_day(cfg, jobs)
    jobs, growth = grow_workload(jobs, cfg, start * DAY_S, pool)
    if growth:
        say(f"growth  {growth}")
    jobs, run.spread_info = _draw_job_power(cfg, jobs, system)
    run.checksums = {"trace": shared_sha256(trace_path)}
    if start != cfg.trace.window_start_days:
        say(f"note    no submission in days [{cfg.trace.window_start_days:g}, "
            f"{cfg.trace.window_start_days + cfg.trace.window_days:g}) of this trace: the window starts at its "
            f"first submission day {start:g} instead (give --start-day to choose)")
        run.cfg = cfg = cfg.with_overrides({"trace.window_start_days": start})  # recorded in the file's config_json
    run.jobs = perturb_jobs(cfg.perturb, jobs, cfg.trace.window_start_days * DAY_S,
                            (cfg.trace.window_start_days + cfg.trace.window_days) * DAY_S)


def _apply_shares(jobs: pd.DataFrame, cfg: RunConfig, system: System) -> tuple[pd.DataFrame, list[str]]:
    """GPU / CPU shares of a trace's pods -> nodes and utilisation (:func:`jobs.shares.apply_node_shares`), each
    job with the node type of its partition (:func:`~scheduler_sim.kernel.partitions.map_partitions`).

    Parameters
    ----------
    jobs : pd.DataFrame
        Canonical job table with ``gpus`` and/or ``cpus`` share columns, ``n`` rows.
    cfg : RunConfig
        The run (``trace.cores_per_node`` overrides the node type's cores).
    system : System
        The platform.

    Returns
    -------
    jobs : pd.DataFrame
        The mapped table, rows in their order (attrs kept).
    notes : list of str
        What was mapped (per partition on a partitioned system), for the load report.
    """
    if not system.partitioned:
        return apply_node_shares(jobs, gpus_per_node=system.node.gpus_per_node,
                                 cores_per_node=cfg.trace.cores_per_node or system.cores_per_node,
                                 default_cpu_util=system.default_cpu_util, default_gpu_util=system.default_gpu_util)
    part = map_partitions(jobs, system, {})
    pieces, notes = [], []
    for p in system.partitions:
        m = part == p.index
        if not m.any():
            continue
        sub, n = apply_node_shares(jobs.loc[m], gpus_per_node=p.node.gpus_per_node,
                                   cores_per_node=cfg.trace.cores_per_node or p.cores_per_node,
                                   default_cpu_util=p.default_cpu_util, default_gpu_util=p.default_gpu_util)
        pieces.append(sub)
        if p.share:  # the unused share is not idle there: other jobs may use it
            n = [x.replace("idle power of the unused share stays on the job's node", "power by share") for x in n]
        notes += [f"partition {p.name}: {x}" for x in n]
        if p.share:
            notes.append(f"partition {p.name} shares its nodes (share = true): jobs asking for part of a node are "
                         f"placed by slot ({p.share_slots} per node) beside other jobs, power by share")
    out = pd.concat(pieces).sort_index(kind="stable")
    out.attrs = dict(jobs.attrs)
    return out, notes


def _prepare_serving(run: _Run) -> None:
    """The serving partition's request trace and engine run (``[serving]``), when configured."""
    cfg = run.cfg
    if cfg.serving is None:
        return
    t_serv = cfg.trace.window_start_days * DAY_S + cfg.serving.offset_s
    gen = workloads.inference_requests(cfg.workload, cfg.serving.workload, cfg.seed, run.system) \
        if cfg.serving.workload else None
    run.serving = serving = prepare_serving(cfg.serving, run.system, sim_offset_s=t_serv, generated=gen)
    if gen is None:
        run.checksums["request_trace"] = shared_sha256(serving.trace_path)
    run.checksums["deployment"] = shared_sha256(resolve_deployment(cfg.serving.deployment))
    if not cfg.trace.enabled and math.isfinite(serving.time_origin_unix_s):
        run.origin = serving.time_origin_unix_s - t_serv  # weather follows the request trace's date
    info = serving.result.info
    if gen is not None and gen[1].params.get("family") == "mixed":  # the serving partition against its share
        dep, pm = serving.result.deployment, gen[1].params
        held = dep.replicas * dep.tensor_parallel
        run.say(f"mixed   {gen[0]}: inference share {pm['share_inference']:g} of {pm['gpu_hours']:,.0f} GPU-hours "
                f"asks for {pm['inference_gpus']:,.1f} GPUs over the horizon; the serving partition holds {held}"
                + ("" if abs(held - pm["inference_gpus"]) <= dep.tensor_parallel else
                   f" (off by more than one replica: set replicas = "
                   f"{max(1, round(pm['inference_gpus'] / dep.tensor_parallel))} in the deployment)"))
    run.say(f"serving {serving.result.deployment.name}: {len(serving.result.requests)} requests on nodes "
            f"{int(serving.nodes[0])}..{int(serving.nodes[-1])}, engine {info['wall_time_s']:.2f} s wall, "
            f"{info['events']} events ({info['events_per_s']:,.0f} events/s), {len(serving.power.t_s)} profile rows")


def _record_input_checksums(run: _Run) -> None:
    """Checksums of the system description and the plant description."""
    cfg, system = run.cfg, run.system
    if system.source and Path(system.source).is_file():
        run.checksums["system"] = shared_sha256(system.source)
    if cfg.cooling.plant_model != "off":
        ppath = plant_params_path(cfg.cooling.plant or system.cooling_plant)
        if ppath.is_file():
            run.checksums["plant"] = shared_sha256(ppath)


def _prepare_cooling(run: _Run) -> None:
    """The site's wet-bulb series (and its gaps) and the cooling plant, unless cooling is off."""
    cfg, system, say = run.cfg, run.system, run.say
    if cfg.cooling.plant_model == "off":
        return
    wet_bulb, run.wpath, wdesc = build_weather(cfg, run.origin, system)
    wx = getattr(wet_bulb, "__self__", None)  # the Weather: its dry-bulb feeds the tower evaporation
    run.dry_bulb = wx.dry_bulb_K if getattr(wx, "has_dry_bulb", False) else None
    run.wet_bulb = perturb_wet_bulb(cfg.perturb, wet_bulb)
    if cfg.perturb is not None and cfg.perturb.wet_bulb_offset_K:
        wdesc += f", perturbed by {cfg.perturb.wet_bulb_offset_K:+.3f} K"
    run.wdesc = wdesc
    say(f"weather {wdesc}")
    if run.wpath is not None:
        run.checksums["weather"] = shared_sha256(run.wpath)
        wrep = getattr(getattr(run.wet_bulb, "__self__", None), "report", None)  # the Weather's load report
        if wrep is not None and wrep.n_missing:  # from the cache as from a first parse: every run says it
            run.data_warnings += wrep.data_warnings()
            run.weather_gaps = {"file": str(run.wpath), "missing": wrep.missing, "gaps": wrep.gaps,
                                "accepted_long_gaps": bool(cfg.cooling.accept_weather_gaps)}
    run.plant = plant = build_plant(cfg, system, progress=run.show)
    if cfg.cooling.plant_model == "fast":
        run.checksums["fast_plant_table"] = plant.fmu_sha256  # the table's key (plant hash, grid, module source)
        say(f"cooling fast quasi-steady plant {plant.fmu_path.name} ({system.n_cdus} CDUs, step "
            f"{cfg.cooling.step_s:g} s; docs/cooling.md gives its error against the FMU)")
    else:
        run.checksums["fmu"] = plant.fmu_sha256  # the digest verified against the cache record, not a re-read
        say(f"cooling {plant.fmu_path.name} ({system.n_cdus} CDUs, step {cfg.cooling.step_s:g} s)")


def _prepare_grid(run: _Run) -> None:
    """The grid signals (price, carbon) when the run or its policy uses them."""
    cfg = run.cfg
    if not ((cfg.grid is not None and cfg.grid.signals_enabled()) or cfg.scheduler.policy in SIGNAL_POLICIES):
        return
    run.grid = grid = build_grid_signals(cfg, run.origin,
                                         _site_utc_offset(cfg, run.system) if not math.isfinite(run.origin) else None)
    for line in grid.notes:
        run.say(f"grid    {line}")
    run.data_warnings += grid.warnings
    run.checksums.update({k: shared_sha256(v) for k, v in grid.files.items()})


def _prepare_policy(run: _Run, comm) -> None:
    """The policy (the twin, a signal policy, grid events around it), the simulation config, the training jobs."""
    cfg, system = run.cfg, run.system
    policy = cfg.scheduler.policy
    if policy == "twin":
        cooling = (rollout_cooling(cfg, system, run.wet_bulb, run.origin) if cfg.scheduler.twin.cooling == "fast"
                   else None)
        policy = twin_from_config(cfg, comm=comm, priority_params=priority_params(cfg), cooling=cooling)
    sim_cfg = simulation_config(cfg, system, progress=run.show and run.live is None)  # --live: the dashboard only
    if policy in SIGNAL_POLICIES:  # the carbon- / price-aware policy takes the run's signal
        sim_cfg = dataclasses.replace(sim_cfg, policy_params=carbon_policy_params(cfg, run.grid))
    if grid_run.enabled(cfg):  # the dynamic [grid] keys of #15: events / ramp limit around the policy, profiles
        run.events = grid_run.resolve_events(cfg, design_peak_w(system, cfg.scheduler.cooling_estimate))
        policy, sim_cfg = grid_run.wrap_policy(cfg, policy, sim_cfg, run.events)
        run.jobs = grid_run.apply_power_profiles(cfg, run.jobs)
    run.policy, run.sim_cfg = policy, sim_cfg
    if not cfg.workload:
        return
    # [[workload]] tables of #24: generated training jobs join the trace as gang jobs
    run.training = training = workloads.training_jobs(cfg.workload, system, cfg.seed, trace_jobs=run.jobs)
    run.jobs = workloads.merge_jobs(run.jobs, training)
    for r in training.reports:
        where = f" of partition {r['partition']}" if system.partitioned else ""
        run.say(f"training {r['name']}: {r['model']} on {r['gpus']} GPUs ({r['nodes']} nodes{where}), iteration "
                f"{r['t_iter_s']:.3f} s (bubble {100 * r['bubble_fraction']:.1f} %, exposed comm "
                f"{r['exposed_comm_s']:.3f} s), MFU {100 * r['mfu']:.1f} %, {r['memory_GB']:.1f} GB per GPU; "
                f"checkpoint every {r['checkpoint_interval_s']:.0f} s (Young/Daly {r['young_daly_s']:.0f} s, write "
                f"{r['checkpoint_write_s']:.1f} s); {r['n_failures']} failures, ETTR {r['ettr']:.4f}, wall "
                f"{r['wall_s'] / 3600:.2f} h for {r['useful_s'] / 3600:.2f} h of training")


def _simulate(run: _Run, out: str | Path | None = None):
    """Build the :class:`Simulation` and run it, its series streamed into ``out`` (or a temporary file when None,
    closed at the end of the run: :mod:`scheduler_sim.io.stream`); the plant is closed whatever happens. Returns
    (sim, result).
    """
    cfg, serving, training = run.cfg, run.serving, run.training
    sim = Simulation(run.jobs, run.system, run.policy, run.sim_cfg, plant=run.plant, wet_bulb_K=run.wet_bulb,
                     dry_bulb_K=run.dry_bulb,
                     partition=serving.profile() if serving is not None else None,
                     job_power_profiles=getattr(run.loaded, "profiles", None) if cfg.power.use_measured_power
                     else None,
                     workload_power_profiles=training.power_series if training is not None else None,
                     observers=(run.live,) if run.live is not None else ())  # hpctwin run --live: the dashboard
    if run.live is not None:
        if cfg.cooling.plant_model != "off":
            try:
                run.live.T_limit_K = float(load_plant_params(cfg.cooling.plant or run.system.cooling_plant)
                                           .cdu.T_sec_sup_set_K)
            except Exception:  # noqa: BLE001 - the limit is a label of the dashboard only
                run.live.T_limit_K = None
    stream = SeriesStream(out, lambda: series_plan(sim), sim.t0, (sim.ratio, sim.step_s))
    try:
        with streaming(stream):
            result = sim.run()
    except BaseException as exc:  # nothing published, the temporary removed (a full disk: its one line)
        stream.abandon(exc)
        raise
    finally:
        if run.plant is not None:
            run.plant.close()
    if result.stream is None:  # the run made no reducer of its own (nothing streamed)
        stream.discard()
    elif out is None:  # no output file: the series stay in the closed temporary until the result is freed
        stream.seal_temporary()
    return sim, result


def _annotate_result(run: _Run, result) -> None:
    """What the result records beside the simulation: data warnings, weather gaps, site, weather, serving."""
    if run.data_warnings:
        result.info["warnings"] = run.data_warnings + list(result.info.get("warnings", []))
    if run.weather_gaps is not None:
        result.info["weather_gaps"] = run.weather_gaps
    for line in partition_mapping_lines(result.info):  # which trace names went to which partition (load report)
        if run.loaded is not None:
            run.loaded.report.notes.append(line.strip())
    result.info["job_power_spread"] = run.spread_info
    result.info["site"] = run.system.site_name
    result.info["weather"] = run.wdesc
    if run.cfg.cooling.plant_model == "fast":  # recorded as the root attribute cooling_model (absent: the FMU ran)
        result.info["cooling_model"] = "fast"
        if run.fast_check_h > 0 and result.info.get("complete", True):
            check = _fast_check(run.cfg, run.system, result, run.fast_check_h, run.progress)
            if check is not None:
                result.info["fast_plant_check"] = check
    if run.serving is not None:
        result.summary.update({f"serving_{k}": v for k, v in finish_serving(run.serving, result).items()})


def _grid_results(run: _Run, result, sim):
    """The grid cost / CO2 attribution and the dynamic grid reports: ``(attribution or None, content or None)``."""
    cfg, grid = run.cfg, run.grid
    ga = None
    if grid is not None and cfg.grid is not None and cfg.grid.signals_enabled() \
            and getattr(result, "job_cdu_it_W", None) is not None and len(result.time_s):
        ga = grid_attribution(result, grid.signals, grid.attrs)
        result.summary.update(grid_summary(ga))
        result.info["grid_currency"] = grid.attrs.get("currency", "")
        result.info.setdefault("warnings", []).extend(_grid_warnings(ga))
    grid_content = None
    if grid_run.enabled(cfg):
        t_serv = cfg.trace.window_start_days * DAY_S + cfg.serving.offset_s if cfg.serving is not None else 0.0
        dyn_summary, grid_content, grid_reports = grid_run.grid_outputs(cfg, result, sim, run.events,
                                                                         serving=run.serving,
                                                                         serving_offset_s=t_serv,
                                                                         training=run.training)
        result.summary.update(dyn_summary)
        for line in grid_run.format_grid_summary(dyn_summary, grid_reports).splitlines():
            run.say(line)
    return ga, grid_content


def _supply_limit(run: _Run):
    """The plant's supply limit (analysis/limits.py), not a fixed 27 degC; None with cooling off."""
    if run.cfg.cooling.plant_model == "off":
        return None
    name = run.cfg.cooling.plant or run.system.cooling_plant
    return supply_limit_of_plant(shared_plant_params(name), str(name))


def _has_workload(run: _Run) -> bool:
    """Whether the run has training jobs or RL pools with reports (``/workload``)."""
    return bool(run.training is not None and (run.training.reports or run.training.rl))


def _attribution(run: _Run, result, limit):
    """The run's attribution (:func:`scheduler_sim.analysis.attribution.attribution_of_run`), at the plant's limit."""
    cfg = run.cfg
    return (attribution_of_run(result, cfg.to_json(), T_supply_limit_K=limit.T_limit_K) if limit is not None
            else attribution_of_run(result, cfg.to_json()))


def _finish_workloads(run: _Run, result, attr) -> None:
    """Attributed energies of the training jobs and RL pools (``/workload``), and one line per RL pipeline."""
    if not _has_workload(run):
        return
    training = run.training
    workloads.finish_training(training.reports, result.jobs, attr)
    finish_rl(training.rl, result.jobs, attr)
    for r in training.rl:
        run.say(f"rl {r['name']}: {r['mode']}{' k = ' + str(r['staleness_bound']) if r['mode'] == 'async' else ''}, "
                f"{r['steps']} steps of {r['mean_step_s']:.1f} s, {r['samples_per_s']:.2f} samples/s on "
                f"{r['rollout_gpus']} rollout + {r['trainer_gpus']} trainer GPUs; IT {r['E_it_J'] / 3.6e6:,.2f} kWh, "
                f"facility {r['E_facility_J'] / 3.6e6:,.2f} kWh, PUE {r['PUE_effective']:.4f}, "
                f"{r['J_per_sample_it'] / 1e3:.2f} kJ (IT) / {r['J_per_sample_facility'] / 1e3:.2f} kJ (facility) "
                f"per sample" + (f"; waited {r['wait_s']:.0f} s for its {r['nodes']} nodes" if r['wait_s'] > 0
                                 else ""))


def _extra_groups(run: _Run, ga, grid_content, room):
    """The ``extra_groups`` writer of the run file: ``/grid`` (:func:`_grid_writers`), ``/headroom``, ``/workload``."""
    extra = _grid_writers(ga, grid_content)
    if room is not None:  # /headroom (N+1, chiller-free hours, margins) beside the grid groups
        extra = _and_headroom(extra, room)
    if not _has_workload(run):
        return extra
    training = run.training
    rl_power = [dict(res.power, step_end_s=res.step_end_s) for res in training.rl_results]
    parts = [extra] if extra is not None else []
    parts.append(lambda f: write_workload_group(f, training.reports, training.rl, rl_power))

    def write(f) -> None:
        for part in parts:
            part(f)

    return write


def _write(run: _Run, out: str | Path, result, ga, grid_content, attr, room, content: str = "full") -> Path:
    """Write the run file (:func:`scheduler_sim.io.hdf5.write_run`) with its attribution, or with ``content =
    "summary"`` a member's record; its path.
    """
    cfg, loaded = run.cfg, run.loaded
    if content == "summary":
        return write_run(out, result, cfg.to_json(), run_name=cfg.name, system_name=run.system.name,
                         policy=cfg.scheduler.policy, seed=cfg.seed, input_checksums=run.checksums,
                         load_report=loaded.report.to_dict() if loaded is not None else {},
                         time_origin_unix_s=run.origin, content="summary")
    return write_run(out, result, cfg.to_json(), run_name=cfg.name, system_name=run.system.name,
                     policy=cfg.scheduler.policy, seed=cfg.seed, input_checksums=run.checksums,
                     load_report=loaded.report.to_dict() if loaded is not None else {},
                     time_origin_unix_s=run.origin, serving=run.serving, attribution=attr,
                     extra_groups=_extra_groups(run, ga, grid_content, room))


def _run_output(run: _Run, path: Path | None, result, limit, room) -> RunOutput:
    """The :class:`RunOutput`: headline metrics, the load summaries and counts, headroom and supply lines."""
    loaded, serving = run.loaded, run.serving
    load_summary = loaded.report.summary() if loaded is not None else "batch trace disabled"
    counts = []
    if loaded is not None:
        r = loaded.report
        counts.append({"source": r.source, "kind": "jobs", "records_read": r.records_read, "rejected": r.rejected,
                       "repaired": r.repaired})
    if serving is not None:
        load_summary += "\n" + serving_load_summary(serving)
        r = serving.load_report
        counts.append({"source": r["source"], "kind": "requests", "records_read": r["records_read"],
                       "rejected": r["rejected"], "repaired": r.get("repaired", 0)})
    lines = room.lines() if room is not None else []
    return RunOutput(path=path, summary=result.summary, info=result.info, load_summary=load_summary,
                     load_counts=counts, headroom=lines,
                     supply=supply_lines(result, limit) + fast_check_lines(result.info.get("fast_plant_check")))


def _fmu_cached(cfg: RunConfig, system) -> Path | None:
    """The cache entry of this run's plant FMU when it is built (None: not built yet; a fast run never builds it)."""
    from cooling_fmu.build import cache_key, default_cache_dir
    from cooling_fmu.modelica import generate_plant_modelica, model_name_for

    params = perturb_plant(cfg.perturb, load_plant_params(cfg.cooling.plant or system.cooling_plant))
    name = model_name_for(params)
    entry = default_cache_dir() / f"{name}-{cache_key(generate_plant_modelica(params), name)[:16]}.fmu"
    return entry if entry.is_file() else None


def _fast_check(cfg: RunConfig, system, result, window_h: float, progress: bool | None) -> dict | None:
    """The fast plant's error against the FMU on a window of this run (:func:`~.fast_check.fast_plant_check`);
    when the plant's FMU is not in the cache, a note saying so (the check never builds an FMU: a fast run is
    chosen to avoid that).
    """
    if _fmu_cached(cfg, system) is None:
        return {"method": "not measured: this plant's FMU is not built (run it once with --cooling fmu, then fast "
                          "runs measure their error against it)"}
    fmu_cfg = cfg.with_overrides({"cooling.model": "fmu", "cooling.stepping": "fixed"})
    show = cfg.output.progress if progress is None else progress
    return fast_plant_check(result, lambda: build_plant(fmu_cfg, system, progress=show),
                            lambda: build_plant(cfg, system), cfg.cooling.step_s, window_h)


def supply_lines(result: object, limit: object) -> list[str]:
    """The terminal's CDU supply line: peak supply temperature and hours above the plant's limit + margin.

    Parameters
    ----------
    result : object
        The run, a SimulationResult (``cdu["T_sec_sup"]``, shape (n_intervals, n_cdus) [K]; ``time_s`` gives the interval).
    limit : object
        The plant's limit (scheduler_sim.analysis.limits.SupplyLimit); None (cooling off): no line.

    Returns
    -------
    list of str
        One line, or none when the run has no plant or no supply temperature.
    """
    T = (getattr(result, "cdu", None) or {}).get("T_sec_sup") if limit is not None else None
    if T is None or np.size(T) == 0:
        return []
    T = np.asarray(T, dtype=float)
    t = np.asarray(result.time_s, dtype=float)
    dt = float(t[1] - t[0]) if t.size > 1 else float(result.totals["duration_s"])  # as the attribution's dt
    per_cdu, any_h = hours_above(T, limit.T_limit_K, T_SUPPLY_TOLERANCE_K, dt)
    hot = int(np.nanargmax(np.nanmax(T.reshape(len(T), -1), axis=0)))
    from ..analysis.units import temperature_difference_text, temperature_text

    return [f"  CDU supply            peak {temperature_text(np.nanmax(T), '.2f', 'degC')} (CDU {hot}); limit "
            f"{limit.describe()} + {temperature_difference_text(T_SUPPLY_TOLERANCE_K, 'g')}: {any_h:.2f} h above "
            f"(any CDU), the most "
            f"{per_cdu.max():.2f} h (CDU {int(per_cdu.argmax())})"]


def design_of(cfg: RunConfig, system: System, wpath: Path | None) -> object:
    """The design conditions a run's headroom uses: the 0.4 % values of its weather file
    (:func:`cooling_fmu.weather.design_conditions`; ``wpath``, else the system's site), or its constant wet-bulb.

    Parameters
    ----------
    cfg : RunConfig
        The run.
    system : System
        Its platform.
    wpath : Path | None
        The weather file the run read (None: the system's site).

    Returns
    -------
    object
        A cooling_fmu.weather.DesignConditions, or a namespace with ``wet_bulb_K`` and ``source``.
    """
    import types

    from cooling_fmu.weather import design_conditions, resolve_weather_file

    if cfg.cooling.weather == "constant":
        return types.SimpleNamespace(wet_bulb_K=cfg.cooling.T_wb_C + 273.15, source="constant wet-bulb of the run")
    if wpath is None:
        spec, _, base = weather_source(cfg, system)
        wpath = resolve_weather_file(spec, base or None)
    return design_conditions(wpath)


def _and_headroom(extra, room):
    """An ``extra_groups`` writer that writes ``/headroom`` (:meth:`Headroom.write`) after ``extra`` (or alone)."""
    from ..io.schema import SchemaWriter

    def write(f):
        if extra is not None:
            extra(f)
        room.write(SchemaWriter(f, "run"))
    return write


def run_headroom_of(cfg: RunConfig, system: System, result: object, wpath: Path | None,
                    origin_unix_s: float = math.nan) -> object:
    """The headroom figures of a run (:func:`scheduler_sim.analysis.headroom.run_headroom`).

    The plant figures need a generated plant (a plant description ``cooling_fmu/plants/<name>.toml``) and a run with
    cooling; without them only the feed is reported.

    Parameters
    ----------
    cfg : RunConfig
        The run.
    system : System
        Its platform.
    result : object
        The run's SimulationResult.
    wpath : Path | None
        The weather file the run read (None: the system's site).
    origin_unix_s : float
        Unix time of the run's time origin [s] (NaN: unknown), for the calendar months of the chiller-free hours.

    Returns
    -------
    scheduler_sim.analysis.headroom.Headroom
    """
    from cooling_fmu.params import load_plant_params

    from ..analysis.headroom import run_headroom

    params = design = None
    if cfg.cooling.plant_model != "off":
        try:
            params = load_plant_params(cfg.cooling.plant or system.cooling_plant)  # a --set plant: the derived one
        except (FileNotFoundError, ValueError):  # a site FMU: no analytic steady state
            params = None
        design = design_of(cfg, system, wpath) if params is not None else None
    return run_headroom(system, result.facility, result.cdu, result.time_s, params, design, origin_unix_s)


def _site_utc_offset(cfg: RunConfig, system) -> float | None:
    """UTC offset [h] of the run's weather file header (the site's time zone), or None without a file."""
    if cfg.cooling.utc_offset_h is not None:
        return float(cfg.cooling.utc_offset_h)
    spec, _, base = weather_source(cfg, system)
    if spec == "constant":
        return None
    try:
        off = float(Weather.from_file(resolve_weather_file(spec, base or None)).report.utc_offset_h)
    except (OSError, WeatherFileError):
        return None
    return off if math.isfinite(off) else None


def _grid_warnings(ga) -> list[str]:
    """What the run must say about grid fallbacks (energy priced at the constant, a price series that ends)."""
    out = []
    T, a = ga.totals, ga.attrs
    E = T["E_facility_J"]
    for kind, unit in (("carbon", "gCO2eq/kWh"), ("price", f"{a.get('currency', '')}/MWh")):
        Efb = T.get(f"E_{kind}_fallback_J", 0.0)
        if Efb > 0 and E > 0:
            fb = a.get(f"{kind}_fallback_g_per_kWh" if kind == "carbon" else "price_fallback_per_MWh")
            src = a.get(f"{kind}_source", "")
            what = "the whole run" if src == "constant" else f"gaps in / time outside {src}"
            out.append(f"grid: {100 * Efb / E:.3f} % of facility energy used the constant {kind} fallback "
                       f"{fb:g} {unit} ({what})")
    return out


def trace_cores_per_node(cfg: RunConfig, system: System) -> tuple[int, str]:  # noqa: DOC502
    """Processors per node for the run's batch trace, and where the value came from.

    Order: ``trace.cores_per_node`` (config or ``--cores-per-node``); for an SWF trace, its header (MaxProcs /
    MaxNodes, see :func:`dataloaders.swf.swf_cores_per_node`); else the system's ``trace_procs_per_node``.

    Parameters
    ----------
    cfg : RunConfig
        The run (its ``trace`` section: ``cores_per_node``, path and format).
    system : System
        The run's system (``trace_procs_per_node``, ``n_nodes``).

    Returns
    -------
    cores_per_node : int
        Processors per node of the trace.
    source : str
        Where the value came from, for the run log.

    Raises
    ------
    FileNotFoundError
        If the SWF trace does not exist (raised by :func:`dataloaders.swf.read_swf_header`).
    TraceError
        (:class:`dataloaders.report.TraceError`) If the SWF header cannot be read (a corrupt compressed stream,
        UTF-16 / UTF-32 text; raised by :func:`dataloaders.swf.read_swf_header`).
    """
    if cfg.trace.cores_per_node is not None:
        return int(cfg.trace.cores_per_node), "the run configuration (trace.cores_per_node / --cores-per-node)"
    path = cfg.trace.resolved_path()
    fmt = cfg.trace.format or guess_format(path)
    if fmt == "swf":
        return swf_cores_per_node(shared_swf_header(path), system.trace_procs_per_node, system.n_nodes)
    return system.trace_procs_per_node, f"system {system.name!r} (trace_procs_per_node)"


def _draw_job_power(cfg: RunConfig, jobs, system):
    """Fill the job table's missing utilisations with seeded draws (``power.job_power_spread``).

    Returns a copy of ``jobs`` (the loader's table is never modified) and the draw summary.
    """
    if cfg.power.job_power_spread == "none" or len(jobs) == 0:
        return jobs, {"distribution": cfg.power.job_power_spread, "jobs_drawn": 0, "jobs_clipped": 0}
    cpu, gpu, info = draw_job_utilisation(jobs["cpu_util"].to_numpy(float), jobs["gpu_util"].to_numpy(float),
                                          system, cfg.seed, cfg.power.job_power_spread)
    attrs = dict(jobs.attrs)
    jobs = jobs.copy()
    jobs["cpu_util"], jobs["gpu_util"] = cpu, gpu
    jobs.attrs.update(attrs)
    return jobs, info


def default_start_day(cfg: RunConfig, jobs: pd.DataFrame) -> float:
    """The window start [days] a run uses: the configured one, or the trace's first submission day.

    The default start (day 181, mid-year of a one-year trace) fits the embedded trace. When the configured start is
    that default and the trace has no submission on or after day 181 (a trace shorter than half a year), the
    window starts at the day of the trace's first submission instead, ``floor(min(submit) / 86400)``. A start the
    user chose (any other value) is kept, so an empty window is then an error.

    Parameters
    ----------
    cfg : RunConfig
        The run configuration.
    jobs : pd.DataFrame
        The canonical job table (``submit_time_s`` [s] since the trace origin).

    Returns
    -------
    float
        Window start [days after the trace origin].
    """
    start = float(cfg.trace.window_start_days)
    default = float(TraceConfig.model_fields["window_start_days"].default)
    sub = np.asarray(jobs["submit_time_s"], dtype=float) if len(jobs) else np.zeros(0)
    sub = sub[np.isfinite(sub)]
    if start != default or sub.size == 0:
        return start
    if np.any(sub >= start * DAY_S):  # the trace reaches the default start: keep it
        return start
    return float(math.floor(sub.min() / DAY_S))


def serving_load_summary(serving) -> str:
    """One-line-per-note summary of the request trace load."""
    r = serving.load_report
    lines = [f"{r['loader']} load of {r['source']}", f"  records read {r['records_read']}: accepted {r['accepted']}, "
             f"rejected {r['rejected']}"]
    lines += [f"  note: {n}" for n in r["notes"]]
    return "\n".join(lines)


def partition_mapping_lines(info: dict) -> list[str]:
    """Lines saying how the trace's jobs were mapped to the partitions (:mod:`scheduler_sim.kernel.partitions`).

    Parameters
    ----------
    info : dict
        A run's info (its ``partition_mapping`` entry; absent on a one-partition system).

    Returns
    -------
    list of str
        One line per partition and rule, e.g. ``partition gpu: 120 job(s) by queue (names: gpu, gpu_debug)``.
    """
    out = []
    for r in info.get("partition_mapping", []):
        names = f" (trace names: {', '.join(r['trace_names'])})" if r["trace_names"] and r["trace_names"] != [""] \
            else ""
        why = "by default (no trace name maps to a partition)" if r["rule"] == "default" else r["rule"]
        out.append(f"  partition {r['partition']}: {r['jobs']} job(s) {why}{names}")
    return out


def design_peak_w(system, cooling_estimate: float) -> float:
    """Design peak facility power [W] (the reference of ``power_cap.cap_fraction``).

    Every node at the system's default utilisation, with conversion losses and rack overhead, times
    ``1 + cooling_estimate``.
    """
    p = node_power_w(system.default_cpu_util, system.default_gpu_util, system.node)
    it = PowerChain(system).evaluate(np.full(system.n_nodes, float(p))).it_input_W
    return float(it) * (1.0 + cooling_estimate)


def priority_params(cfg: RunConfig) -> dict:
    """Multi-factor priority weights of a configuration, in SI (keyword arguments of the ``priority`` order)."""
    pr = cfg.scheduler.priority
    return dict(w_age=pr.w_age, w_size=pr.w_size, w_fairshare=pr.w_fairshare, w_qos=pr.w_qos,
                max_age_s=pr.max_age_days * DAY_S, half_life_s=pr.half_life_days * DAY_S,
                qos_weights=pr.qos_weights, account_bonus=pr.account_bonus)


#: Most output intervals a run window may ask for (``window_days x 86400 / output.interval_s``): the output series
#: hold one row per interval (1e8 rows of ~100 columns would be 80 GB).
MAX_OUTPUT_INTERVALS = 1e8


def check_sizes(cfg: RunConfig, system: System) -> None:
    """Check every size the configuration asks to allocate against the machine, before anything is allocated.

    Downtime node ranges (``scheduler.downtime[i].nodes``) must lie on the machine (checked as ranges, never
    expanded first), the window must not be longer than :data:`jobs.memory.MAX_SPAN_S` (20 years) and its output
    interval count must not exceed :data:`MAX_OUTPUT_INTERVALS`. The
    system's own node count is bounded when its file is read (:data:`power.system.MAX_NODES`), node failures by
    :func:`scheduler_sim.kernel.faults.sample_failures`, the serving partition and its power profile in
    :mod:`scheduler_sim.serving`.

    Parameters
    ----------
    cfg : RunConfig
        The run configuration (downtime ranges, ``pool_nodes``, window and output interval).
    system : System
        The machine it runs on (``n_nodes``, ``name``).

    Raises
    ------
    ConfigError
        Naming the field, the value and the bound.
    """
    from .config import ConfigError

    for i, d in enumerate(cfg.scheduler.downtime):
        try:
            d.node_ranges(system.n_nodes)
        except ValueError as exc:
            raise ConfigError(f"scheduler.downtime[{i}].nodes = {d.nodes!r}: {exc} (system {system.name!r})") from None
    pool = cfg.scheduler.pool_nodes
    if pool is not None and pool > system.n_nodes:
        raise ConfigError(f"scheduler.pool_nodes = {pool} (--nodes): more than the {system.n_nodes} nodes of system "
                          f"{system.name!r}")
    from jobs.memory import check_span

    # the longest run (jobs.memory.MAX_SPAN_S, 20 years)
    check_span(cfg.trace.window_days * DAY_S, cfg.output.interval_s,
               f"the run window of {cfg.trace.window_days:g} days (trace.window_days / --days)", 0.0, ConfigError)
    n_int = cfg.trace.window_days * DAY_S / cfg.output.interval_s
    if n_int > MAX_OUTPUT_INTERVALS:
        raise ConfigError(f"trace.window_days = {cfg.trace.window_days:g} with output.interval_s = "
                          f"{cfg.output.interval_s:g} s gives {n_int:.3g} output intervals; at most "
                          f"{MAX_OUTPUT_INTERVALS:.0e} are supported (raise output.interval_s)")


def simulation_config(cfg: RunConfig, system: System, progress: bool = False) -> SimulationConfig:
    """The kernel's options (:class:`scheduler_sim.kernel.config.SimulationConfig`) of a run configuration.

    Converts the configuration's edge units (days, hours, MW) to SI and samples node failures with the run seed.
    The plant, the weather and a co-located partition are collaborators, given to the Simulation beside it.

    Parameters
    ----------
    cfg : RunConfig
        The validated run configuration.
    system : System
        The platform (node count for downtimes, design peak for fractional power budgets).
    progress : bool
        Show the progress bar.

    Returns
    -------
    SimulationConfig
        Validated, SI.
    """
    sc = cfg.scheduler
    pr = sc.priority
    params = priority_params(cfg) if sc.policy == "priority" else {}
    t0 = cfg.trace.window_start_days * DAY_S
    failures = None
    if cfg.faults.enabled:
        f = cfg.faults
        # horizon: the window plus the longest drain the run may take (failures after the last job are not used)
        failures = sample_failures(system.n_nodes, t0,
                                   t0 + (cfg.trace.window_days + cfg.output.max_drain_days) * DAY_S,
                                   f.mtbf_node_h * 3600.0, f.mttr_h * 3600.0, seed=cfg.seed,
                                   distribution=f.distribution, weibull_shape=f.weibull_shape)
    return SimulationConfig(
        progress=bool(progress), backfill=sc.backfill or None, policy_params=params,
        window_start_s=t0, window_s=cfg.trace.window_days * DAY_S,
        step_s=cfg.cooling.step_s, interval_s=cfg.output.interval_s,
        default_walltime_s=sc.default_walltime_s,
        downtimes=[(d.start_day * DAY_S, d.start_day * DAY_S + d.hours * 3600.0,
                    np.array(d.node_indices(system.n_nodes)), d.drain) for d in sc.downtime],
        use_measured_power=cfg.power.use_measured_power,
        power_cap=[(c.start_day * DAY_S, c.cap_MW * 1e6 if c.cap_MW is not None
                    else c.cap_fraction * design_peak_w(system, sc.cooling_estimate)) for c in sc.power_cap],
        cooling_estimate=sc.cooling_estimate, power_cap_forecast_margin=sc.power_cap_forecast_margin,
        placement=sc.placement,
        failures=failures, on_failure=cfg.faults.on_failure, warmup_s=cfg.output.warmup_days * DAY_S,
        max_drain_s=cfg.output.max_drain_days * DAY_S,
        share_entity=pr.fairshare_by, on_implausible=cfg.cooling.on_implausible,
        pool_nodes=sc.pool_nodes,
    )


def rollout_cooling(cfg: RunConfig, system: System, wet_bulb: Callable | None, origin: float) -> RolloutCooling:
    """The twin's rollout cooling for ``[scheduler.twin] cooling = "fast"``: the quasi-steady plant of the run's
    plant (perturbed as the run's) and the run's wet-bulb.

    Parameters
    ----------
    cfg : RunConfig
        The run.
    system : System
        The platform.
    wet_bulb : Callable | None
        The run's wet-bulb [K] at simulation times [s]; None (cooling off): built from the run's weather settings.
    origin : float
        Unix time of simulation time 0 (NaN when unknown).

    Returns
    -------
    RolloutCooling
        Plant, wet-bulb and ``[scheduler.twin] plant_step_s``.

    Raises
    ------
    ValueError
        If the plant's CDU count differs from the system's (and the errors of the plant and weather loaders).
    """
    from cooling_fmu.quasisteady import QuasiSteadyPlant

    params = perturb_plant(cfg.perturb, shared_plant_params(cfg.cooling.plant or system.cooling_plant))
    if params.n_cdu != system.n_cdus:
        raise ValueError(f"plant {cfg.cooling.plant or system.cooling_plant!r} has {params.n_cdu} CDUs but system "
                         f"{system.name!r} has {system.n_cdus}")
    step = cfg.scheduler.twin.plant_step_s
    if wet_bulb is None:
        wet_bulb = perturb_wet_bulb(cfg.perturb, build_weather(cfg.with_overrides({"cooling.model": "fast"}), origin,
                                                              system)[0])
    return RolloutCooling(QuasiSteadyPlant(params, step_s=step, table=shared_steady_table(params)), wet_bulb, step)


def _load_batch_trace(cfg: RunConfig, trace_path: Path, pool: int, cpn: int,  # noqa: DOC502
                      opts: dict) -> LoadResult:
    """Load the run's batch trace (jobs larger than ``pool`` rejected), with the zone option when set.

    Parameters
    ----------
    cfg : RunConfig
        The run.
    trace_path : Path
        The trace file.
    pool : int
        Schedulable pool [nodes] (the loader's ``max_nodes``).
    cpn : int
        Processors per node.
    opts : dict
        Extra loader options (``timezone``).

    Returns
    -------
    LoadResult
        The loaded trace: a copy of this process's parse of that file with these options, when there is one
        (:func:`scheduler_sim.app.shared.shared`; a sweep rank's later scenarios, an ensemble's later members).

    Raises
    ------
    ValueError
        If a time zone is given for a loader that reads no local clock times (one line, naming loader and file;
        raised by :func:`_parse_batch_trace`).
    TypeError
        Any other TypeError of the loader, as raised.
    """
    fk = file_key(trace_path)  # shared per process (app.shared): path, inode, size, mtime + the loader's options
    key = None if fk is None else (fk, cfg.trace.format or None, int(pool), int(cpn), bool(cfg.trace.strict),
                                   tuple(sorted(opts.items())))
    return _copy_loaded(shared("trace", key, lambda: _parse_batch_trace(cfg, trace_path, pool, cpn, opts)))


def _parse_batch_trace(cfg: RunConfig, trace_path: Path, pool: int, cpn: int, opts: dict) -> LoadResult:
    """The parse of :func:`_load_batch_trace` (it raises the errors that function documents)."""
    try:
        return load_trace(trace_path, format=cfg.trace.format or None, max_nodes=pool, cores_per_node=cpn,
                          strict=cfg.trace.strict, **opts)
    except TypeError as exc:
        if "timezone" not in str(exc) or "timezone" not in opts:
            raise
        fmt = cfg.trace.format or guess_format(trace_path)
        raise ValueError(f"trace.timezone = {cfg.trace.timezone!r} (--timezone): the {fmt} loader of {trace_path} "
                         f"reads no local clock times (its times carry no zone to set); leave it unset") from None


def _copy_loaded(loaded: LoadResult) -> LoadResult:
    """An independent copy of a loaded trace (job table, report, profiles), so no run writes into the share."""
    import copy

    jobs = loaded.jobs.copy(deep=True)
    jobs.attrs = copy.deepcopy(loaded.jobs.attrs)
    prof = loaded.profiles.copy(deep=True) if loaded.profiles is not None else None
    return LoadResult(jobs, copy.deepcopy(loaded.report), prof)


def pool_size(cfg: RunConfig, system) -> int:
    """The schedulable pool of batch jobs [nodes]: ``scheduler.pool_nodes`` (``--nodes``), else the whole system."""
    return int(cfg.scheduler.pool_nodes) if cfg.scheduler.pool_nodes is not None else int(system.n_nodes)


def trace_machine_nodes(cfg: RunConfig, loaded: LoadResult, cores_per_node: int) -> tuple[int | None, str]:
    """Nodes of the machine the trace was recorded on, as far as the trace says, and where that came from.

    SWF: the header's ``MaxNodes``, else ``MaxProcs / cores_per_node``; Slurm sacct: the distinct host names of
    ``NodeList`` (job-table column ``node_list``); Alibaba pods: the rows of the node list read beside the pod list
    (``report.header["node_list"]``, :func:`dataloaders.alibaba.read_alibaba_nodes`); otherwise None (the trace
    does not say).

    Parameters
    ----------
    cfg : RunConfig
        The run.
    loaded : LoadResult
        The loaded trace (:class:`dataloaders.report.LoadResult`).
    cores_per_node : int
        Processors per node used for the load.

    Returns
    -------
    nodes : int or None
    source : str
    """
    if loaded.report.loader == "swf":
        try:
            h = shared_swf_header(cfg.trace.resolved_path())
        except (OSError, ValueError):
            h = {}
        mn, mp = h.get("MaxNodes"), h.get("MaxProcs")
        if isinstance(mn, (int, float)) and mn > 0:
            return int(mn), "SWF header MaxNodes"
        if isinstance(mp, (int, float)) and mp > 0:
            return int(math.ceil(mp / max(cores_per_node, 1))), f"SWF header MaxProcs / {cores_per_node}"
        return None, ""
    machine = loaded.report.header.get("node_list") if isinstance(loaded.report.header, dict) else None
    if isinstance(machine, dict) and machine.get("nodes"):
        return int(sum(machine["nodes"].values())), f"Alibaba node list {machine['file']}"
    if "node_list" in loaded.jobs.columns:
        from dataloaders.slurm import count_hostlist, expand_hostlist

        lists = [x for x in pd.unique(loaded.jobs["node_list"].astype(str)) if x.strip()]
        try:
            if lists and sum(count_hostlist(x) for x in lists) <= 2_000_000:  # bounded before anything is expanded
                hosts = set()
                for x in lists:
                    hosts.update(expand_hostlist(x))
                if hosts:
                    return len(hosts), "distinct NodeList host names"
        except ValueError:
            pass  # a bad host list was reported by the loader
    return None, ""


def trace_vs_system(cfg: RunConfig, system: System, loaded: LoadResult, cores_per_node: int, pool: int) -> str:
    """The run-header line comparing the trace's machine with the system and the pool (issue #23 item 7).

    Parameters
    ----------
    cfg : RunConfig
        The run.
    system : System
        The run's system.
    loaded : LoadResult
        The loaded trace.
    cores_per_node : int
        Processors per node used for the load.
    pool : int
        Schedulable pool [nodes].

    Returns
    -------
    str
        e.g. ``machine trace 4360 nodes (SWF header MaxNodes) vs system 'theta' 4392 nodes: differs; pool 4392
        nodes (the whole system), job sizes as in the trace (no scaling; --nodes N sets the pool,
        trace.job_size_factor scales jobs)``.
    """
    n, how = trace_machine_nodes(cfg, loaded, cores_per_node)
    big = int(loaded.jobs["nodes"].max()) if len(loaded.jobs) else 0
    tr = f"trace {n} nodes ({how})" if n is not None else f"trace machine not stated (largest job {big} nodes)"
    same = "" if n is None else (": same" if n == system.n_nodes else ": differs")
    pl = ("the whole system" if cfg.scheduler.pool_nodes is None else "scheduler.pool_nodes / --nodes")
    g = cfg.trace.job_size_factor
    scale = (f"job sizes x {g:g} (trace.job_size_factor)" if g != 1.0 else "job sizes as in the trace (no scaling)")
    hint = "" if (n is None or n == pool) else "; --nodes N sets the pool"
    header = loaded.report.header
    per = _node_list_vs_partitions(system, header.get("node_list") if isinstance(header, dict) else None)
    return (f"machine {tr} vs system {system.name!r} {system.n_nodes} nodes{same}{per}; pool {pool} nodes ({pl}), "
            f"{scale}{hint}")


def _node_list_vs_partitions(system: System, machine: object) -> str:
    """Per system partition: the trace's nodes by model that map to it (an Alibaba node list) vs its own nodes.

    Each model of the node list is mapped as a pod of that model is (:func:`map_partitions`, the ``partition``
    column), e.g. ``" (by partition: 'gpu' trace 3 nodes (V100M32 2, P100 1) vs 2: differs; 'cpu' trace 2 nodes
    (cpu 2) vs 4: differs)"``.

    Parameters
    ----------
    system : System
        The run's system.
    machine : object
        ``report.header["node_list"]`` (a dict from :func:`dataloaders.alibaba.read_alibaba_nodes`) or None.

    Returns
    -------
    str
        The clause, "" without a node list.
    """
    if not isinstance(machine, dict) or not machine.get("nodes"):
        return ""
    models = list(machine["nodes"])
    idx = map_partitions(pd.DataFrame({"partition": models}), system, {})
    parts = []
    for p in system.partitions:
        mine = [(m, int(machine["nodes"][m])) for m, k in zip(models, idx) if k == p.index]
        if not mine and p.kind != "batch":
            continue
        t = sum(c for _, c in mine)
        what = ", ".join(f"{m} {c}" for m, c in mine) or "no model maps here"
        parts.append(f"{p.name!r} trace {t} nodes ({what}) vs {p.n_nodes}: {'same' if t == p.n_nodes else 'differs'}")
    return " (by partition: " + "; ".join(parts) + ")"


def grow_workload(jobs: pd.DataFrame, cfg: RunConfig, t0_s: float, pool: int) -> tuple[pd.DataFrame, str]:
    """Workload growth (issue #23 item 5): arrival-rate and job-size scaling of a job table; deterministic.

    Arrival rate (``trace.arrival_rate_factor`` f): submit times ``t >= t0`` become ``t0 + (t - t0) / f`` (time
    compression towards the window start; earlier jobs are unchanged), and the trace's recorded start and end
    times move with their job's submit time (recorded waits and run times are kept). Job size
    (``trace.job_size_factor`` g): ``nodes' = floor(n g) + (u < frac(n g))`` with ``u`` uniform from
    ``numpy.random.default_rng([seed, 23])`` in job-table order (stochastic rounding: the expected total is g times
    the trace's), at least 1 and at most ``pool``.

    Parameters
    ----------
    jobs : pd.DataFrame
        Canonical job table (``submit_time_s``, ``start_time_s``, ``end_time_s`` [s], ``nodes``).
    cfg : RunConfig
        The run (factors and seed).
    t0_s : float
        Window start [s after the trace origin].
    pool : int
        Schedulable pool [nodes] (cap of the scaled sizes).

    Returns
    -------
    jobs : pd.DataFrame
        A scaled copy (``jobs`` itself when both factors are 1).
    note : str
        What was done ('' when nothing).
    """
    f, g = cfg.trace.arrival_rate_factor, cfg.trace.job_size_factor
    if (f == 1.0 and g == 1.0) or len(jobs) == 0:
        return jobs, ""
    attrs = dict(jobs.attrs)
    jobs = jobs.copy()
    notes = []
    if f != 1.0:
        sub = jobs["submit_time_s"].to_numpy(float)
        late = sub >= t0_s
        new = np.where(late, t0_s + (sub - t0_s) / f, sub)
        shift = new - sub
        jobs["submit_time_s"] = new
        for c in ("start_time_s", "end_time_s"):
            if c in jobs:
                jobs[c] = jobs[c].to_numpy(float) + shift
        notes.append(f"arrival rate x {f:g}: submit times from day {t0_s / DAY_S:g} on compressed towards it, "
                     f"t' = t0 + (t - t0) / {f:g} ({int(late.sum())} jobs)")
    if g != 1.0:
        n = jobs["nodes"].to_numpy(np.int64)
        x = n * float(g)
        lo = np.floor(x)
        u = np.random.default_rng([int(cfg.seed), 23]).random(n.size)
        new = (lo + (u < (x - lo))).astype(np.int64)
        capped = int(np.count_nonzero(new > pool))
        new = np.clip(new, 1, pool)
        jobs["nodes"] = new
        notes.append(f"job sizes x {g:g}: nodes {int(n.sum())} -> {int(new.sum())} in all (stochastic rounding, "
                     f"seed {cfg.seed}; {capped} job(s) capped at the pool of {pool})")
    jobs.attrs.update(attrs)
    return jobs, "; ".join(notes)


def _electrical_stages(info: dict | None) -> str:
    """The electrical-chain stages a run counted, in chain order (all four when the run's info does not say)."""
    names = {"transformer": "transformer", "switchgear": "switchgear", "ups": "UPS", "pdu": "PDU"}
    counted = (info or {}).get("facility_stages_counted")
    stages = [v for k, v in names.items() if counted is None or k in counted]
    return ", ".join(stages) if stages else "no electrical stage counted"


def format_summary(s: dict[str, float], info: dict | None = None) -> str:
    """Human-readable headline metrics (units converted for reading: MWh, MW, hours).

    ``info`` (the run's info: ``facility_stages_counted`` / ``_absent``) adds what the PUE counts.
    """
    from ..analysis.report.catalogue import column_unit, format_value, format_with_unit

    def f(x: float, fmt: str) -> str:
        return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, fmt)

    q = lambda k: format_with_unit(k, s[k])  # noqa: E731 - value and unit from the schema's table

    def trio(keys: list[str]) -> str:  # three values of one kind in one unit (the largest one's)
        d = column_unit(keys[0], [s[k] for k in keys])
        return " / ".join(format_value(k, s[k], d) for k in keys) + (f" {d.unit}" if d.unit else "")
    J_MWh = 1 / 3.6e9
    lines = [
        f"  jobs simulated        {int(s['jobs_simulated'])}  (completed {int(s['jobs_completed'])}, "
        f"killed at walltime {int(s['jobs_killed_walltime'])})",
        f"  simulated span        {q('duration_s')} (makespan {q('makespan_s')})",
        f"  utilisation           {f(100 * s['utilisation'], '.1f')} %",
        f"  mean wait             {q('mean_wait_s')}   (median {q('median_wait_s')})",
        f"  mean bounded slowdown {f(s['mean_bounded_slowdown'], '.2f')}   (tau = 10 s)",
        f"  IT energy             {f(s['E_it_J'] * J_MWh, ',.1f')} MWh  (node DC {f(s['E_node_dc_J'] * J_MWh, ',.1f')} MWh, "
        f"conversion losses {f(100 * s['loss_fraction'], '.2f')} % of IT)",
    ]
    if math.isnan(s.get("PUE", float("nan"))):  # no plant: the facility was not modelled, so no facility figures
        lines += [
            "  facility              not modelled (cooling off): no cooling or facility energy, PUE n/a, TUE n/a",
            f"  ITUE                  {f(s['ITUE'], '.4f')}   (E_IT / E_components)",
        ]
    else:
        lines += [
            f"  cooling energy        {f(s['E_cooling_J'] * J_MWh, ',.1f')} MWh liquid plant"
            f" + {f(s.get('E_air_side_J', 0.0) * J_MWh, ',.1f')} MWh air side",
            f"  electrical losses     {f(s.get('E_electrical_loss_J', 0.0) * J_MWh, ',.1f')} MWh  ("
            f"{_electrical_stages(info)})   lighting {f(s.get('E_lighting_J', 0.0) * J_MWh, ',.2f')} MWh",
            f"  facility energy       {f(s['E_facility_J'] * J_MWh, ',.1f')} MWh  (mean "
            f"{f(s['mean_P_facility_W'] / 1e6, '.3f')} MW, peak {f(s['peak_P_facility_W'] / 1e6, '.3f')} MW)",
            f"  PUE                   {f(s['PUE'], '.4f')}   (facility PUE = E_facility / E_IT, energy-weighted)",
            f"  pPUE mech. / elec.    {f(s.get('pPUE_mechanical', float('nan')), '.4f')} / "
            f"{f(s.get('pPUE_electrical', float('nan')), '.4f')}   (partial PUEs: (E_IT + zone) / E_IT)",
            f"  ITUE                  {f(s['ITUE'], '.4f')}   (E_IT / E_components)",
            f"  TUE                   {f(s['TUE'], '.4f')}   (ITUE x PUE)",
        ]
    if "grid_co2_t" in s or "grid_cost" in s:
        if "grid_co2_t" in s:
            lines.append(f"  CO2 (facility)        {f(s['grid_co2_t'], ',.2f')} t CO2eq  (energy-weighted "
                         f"{f(s['grid_carbon_mean_g_per_kWh'], '.1f')} gCO2eq/kWh; constant fallback for "
                         f"{f(100 * s['grid_carbon_fallback_fraction'], '.2f')} % of the energy)")
        if "grid_cost" in s:
            lines.append(f"  energy cost (facility) {f(s['grid_cost'], ',.0f')} {(info or {}).get('grid_currency', '')}"
                         f"  (energy-weighted {f(s['grid_price_mean_per_MWh'], '.2f')} per MWh; constant fallback "
                         f"for {f(100 * s['grid_price_fallback_fraction'], '.2f')} % of the energy)")
    if "serving_requests" in s:
        g = lambda k, fmt: f(s[f"serving_{k}"], fmt)  # noqa: E731
        lines += [
            f"  serving requests      {int(s['serving_requests'])} (completed {int(s['serving_completed'])}, "
            f"rejected {int(s['serving_rejected'])}, preemptions {int(s['serving_preemptions'])})",
            f"  TTFT p50/p90/p99      {trio([f'serving_ttft_p{p}_s' for p in (50, 90, 99)])}",
            f"  TPOT p50/p90/p99      {trio([f'serving_tpot_p{p}_s' for p in (50, 90, 99)])}",
            f"  E2E p50/p90/p99       {trio([f'serving_e2e_p{p}_s' for p in (50, 90, 99)])}",
            f"  SLO attainment        {q('serving_slo_attainment')}  (goodput {q('serving_goodput_req_s')})",
            f"  tokens/s per GPU      {q('serving_tokens_per_s_per_gpu')}   per user "
            f"{q('serving_tokens_per_s_per_user')}",
            f"  energy per token      GPU {g('J_per_token_gpu', '.3f')} J, IT {g('J_per_token_it', '.3f')} J, "
            f"facility {g('J_per_token_facility', '.3f')} J",
            f"  SLO-met per kJ (fac.) {g('slo_met_per_kJ_facility', '.3f')}",
        ]
    if info is not None and "facility_stages_counted" in info and not math.isnan(s.get("PUE", float("nan"))):
        lines.append(f"  PUE counts            {pue_category(info)}")
    lines += _partition_lines(s)
    return "\n".join(lines)


def _partition_lines(s: dict[str, float]) -> list[str]:
    """The per-partition block of the summary (a partitioned system's ``partition_<name>_<metric>`` keys)."""
    names = [k[len("partition_"):-len("_jobs")] for k in s if k.startswith("partition_") and k.endswith("_jobs")]
    if not names:
        return []
    out = ["  partition             jobs   util.   mean wait   IT energy    peak IT    peak rack"]
    for n in names:
        g = lambda m: s[f"partition_{n}_{m}"]  # noqa: E731
        util = "   n/a" if math.isnan(g("utilisation")) else f"{100 * g('utilisation'):5.1f}%"
        wait = "      n/a" if math.isnan(g("mean_wait_s")) else f"{g('mean_wait_s') / 3600:7.2f} h"
        out.append(f"    {n:<18} {int(g('jobs')):6d}  {util}   {wait}  {g('E_it_J') / 3.6e9:8.1f} MWh "
                   f"{g('peak_it_W') / 1e6:7.3f} MW  {g('peak_rack_W') / 1e3:7.1f} kW")
    return out
