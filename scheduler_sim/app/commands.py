"""The handlers of the ``hpctwin`` sub-commands (run, sweep, compare, report, list, cooling, validate).

:mod:`scheduler_sim.app.cli` builds the parser and imports this module only when a command runs, so that
``hpctwin --help`` stays light. Errors the user can fix are raised as ``ValueError`` / ``OSError`` and turned into
one line and exit status 2 by :func:`scheduler_sim.app.cli.main`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import math
import sys
import time
from importlib import resources
from pathlib import Path

import h5py

from cooling_fmu.params import load_plant_params, plant_registry
from cooling_fmu.redundancy import chiller_free_hours_by_month, n_plus_one
from cooling_fmu.standalone import load_power_series, site_weather_file
from cooling_fmu.weather import Weather, design_conditions
from dataloaders.registry import available_loaders, guess_format
from power import available_systems, load_system

from ..analysis.compare import compare
from ..analysis.report import make_report
from ..policies import policy_catalogue
from ..policies.registry import SHORTHANDS, make_policy
from .config import load_config
from .cooling import run_cooling_standalone
from .grid import grid_from_flags
from ..analysis.fast_check import WINDOW_H as FAST_CHECK_WINDOW_H
from .runner import format_summary, run_one, weather_source
from .sweep import _comm, load_study, run_sweep
from ..io.hdf5 import describe_unreadable
from .twin import serve_rollouts, stop_rollout_workers
from .validate import _parse_map, cmd_validate

__all__ = ["cmd_run", "cmd_sweep", "cmd_compare", "cmd_report", "cmd_frontier", "cmd_list", "cmd_cooling",
           "cmd_design_day", "cmd_site",
           "cmd_validate",
           "one_line", "describe_unreadable", "RUN_FLAGS"]


#: Configuration keys set by `hpctwin run` options, so an invalid value is reported under the flag the user typed.
RUN_FLAGS = {"scheduler.policy": "--policy", "scheduler.backfill": "--backfill", "scheduler.placement": "--placement",
             "system": "--system", "trace.path": "--trace", "trace.format": "--format",
             "trace.window_start_days": "--start-day", "trace.window_days": "--days", "cooling.weather": "--weather",
             "cooling.T_wb_C": "--wet-bulb", "cooling.step_s": "--step", "output.interval_s": "--interval",
             "seed": "--seed", "trace.cores_per_node": "--cores-per-node", "trace.timezone": "--timezone",
             "scheduler.pool_nodes": "--nodes"}


def _flag_names(message: str, keys) -> str:
    """Replace configuration keys that came from command-line options by the options' names."""
    message = message.replace("overrides: invalid configuration", "invalid command-line option")
    for k in sorted(keys, key=len, reverse=True):
        if k in RUN_FLAGS:
            message = message.replace(k, f"{RUN_FLAGS[k]} ({k})")
    return message


def _serving_overrides(a: argparse.Namespace, cfg) -> dict:
    """The ``[serving]`` section (and ``trace.enabled``) set by ``--requests`` / ``--deployment`` / ``--map``."""
    dep = a.deployment or "llama3-70b_h100_tp4x2"
    path = Path(dep)
    if not path.is_file():
        cand = Path(str(resources.files("experiments") / "serving" / f"{Path(dep).stem}.toml"))
        if not cand.is_file():
            names = sorted(q.stem for q in Path(str(resources.files("experiments") / "serving")).glob("*.toml"))
            raise ValueError(f"--deployment {dep!r}: no such file and no deployment of that name (known: "
                             f"{', '.join(names)})")
        path = cand
    sv = cfg.serving.model_dump(mode="json") if cfg.serving is not None else {}
    sv["deployment"] = str(path.resolve())
    if a.requests is not None:
        req = Path(a.requests)
        if not req.is_file():
            raise ValueError(f"--requests {a.requests}: no such file")
        sv["trace"] = str(req.resolve())
        fmt = a.request_format
        if fmt is None:
            fmt = "request_csv" if a.map else guess_format(req)
        sv["format"] = fmt
    elif a.request_format is not None:
        sv["format"] = a.request_format
    if a.map:
        sv["loader_options"] = _parse_map(a.map)
    ov: dict = {"serving": sv}
    if a.trace is None and a.config is None:
        ov["trace.enabled"] = False  # serving-only: no batch trace unless one is asked for
    if a.system is None and a.config is None:
        ov["system"] = "frontier"  # the default system (Theta-like KNL) has no GPU to serve on
    return ov


def _is_study(path) -> bool:
    """Whether a TOML file is a study (``[[scenarios]]`` or ``[axes]``) rather than one run."""
    if path is None or not Path(path).is_file():
        return False
    import tomllib

    from jobs.textfiles import read_utf8, toml_loads

    try:
        data = toml_loads(read_utf8(path, "configuration file"), path, "configuration file")
    except (tomllib.TOMLDecodeError, ValueError, OSError):
        return False  # load_config reports it
    return "scenarios" in data or "axes" in data


def _run_study(a: argparse.Namespace) -> int:
    """``hpctwin run STUDY.toml``: every scenario (over MPI ranks under mpiexec), a table of each scenario's
    energy, PUE, wait, cost and CO2, then the last scenario explained against the first, link by link.
    """
    sets = list(getattr(a, "set", None) or [])
    if getattr(a, "timezone", None):
        sets.append(f"trace.timezone={json.dumps(a.timezone)}")
    study, scenarios = load_study(a.config, sets=sets)
    out = Path(a.out) if a.out else Path("out") / study
    summary = run_sweep(a.config, out, sets=sets)
    if summary is None:  # another MPI rank
        return 0
    with h5py.File(summary) as f:
        t = f["scenarios"]
        names = [x.decode() if isinstance(x, bytes) else x for x in t["name"][()]]
        status = [x.decode() if isinstance(x, bytes) else x for x in t["status"][()]]
        col = {k: t[k][()] for k in t if t[k].dtype.kind == "f"}
    nan = [float("nan")] * len(names)
    print(f"\n{'scenario':24s} {'facility MWh':>13s} {'PUE':>7s} {'mean wait h':>12s} {'CO2 t':>10s} "
          f"{'gCO2/kWh':>9s} {'cost':>12s} {'per MWh':>8s}")
    for i, n in enumerate(names):
        g = lambda k: float(col.get(k, nan)[i])  # noqa: E731
        print(f"{n:24s} {g('E_facility_J') / 3.6e9:13,.1f} {g('PUE'):7.4f} {g('mean_wait_s') / 3600:12.2f} "
              f"{g('grid_co2_t'):10,.1f} {g('grid_carbon_mean_g_per_kWh'):9.1f} {g('grid_cost'):12,.0f} "
              f"{g('grid_price_mean_per_MWh'):8.2f}" + ("" if status[i] == "done" else f"  ({status[i]})"))
    if len(names) >= 2 and status[0] == "done" and status[-1] == "done":
        print(f"\n{names[-1]} explained against {names[0]}:")
        print(compare(out / f"{names[0]}.h5", out / f"{names[-1]}.h5", top=5).format())
    failed = sum(s == "failed" for s in status)
    if failed:
        print(f"hpctwin run: {failed} scenario(s) failed; see {summary} (/scenarios/error)", file=sys.stderr)
        return 1
    return 0


def cmd_run(a: argparse.Namespace) -> int:
    """``hpctwin run``: one simulation from a configuration and options; returns the exit status (0, 1 or 2).

    A study file (``[[scenarios]]`` / ``[axes]``) runs all its scenarios (:func:`_run_study`).
    """
    if _is_study(a.config):
        return _run_study(a)
    cfg = load_config(a.config)
    ov = _flag_overrides(a, cfg)
    if ov:
        try:
            cfg = cfg.with_overrides(ov)
        except ValueError as exc:
            raise ValueError(_flag_names(str(exc), ov)) from None
        if any(k in ov for k in _NAMING_KEYS):  # a name that says what changed, so runs do not overwrite each other
            cfg = cfg.with_overrides({"name": _run_name(cfg, ov).replace("/", "_")})
    cfg = _tag_name(a, cfg)
    if cfg.scheduler.policy not in ("twin", "carbon-aware", "price-aware"):  # a misspelt policy or backfill is
        make_policy(cfg.scheduler.policy, cfg.scheduler.backfill or None)  # refused before anything is printed
    comm = _comm() if cfg.scheduler.policy == "twin" else None  # under mpirun, other ranks roll out the candidates
    if comm is None or comm.Get_size() <= 1:
        return _run_and_report(a, cfg, None)
    if comm.Get_rank() != 0:
        serve_rollouts(comm)
        return 0
    try:
        return _run_and_report(a, cfg, comm)
    finally:
        stop_rollout_workers(comm)


#: Overrides that change what a run is: with any of them the run gets a name that says so.
_NAMING_KEYS = ("scheduler.policy", "scheduler.backfill", "scheduler.placement", "system", "trace.path",
                "trace.window_start_days", "trace.window_days", "cooling.T_wb_C", "cooling.enabled", "serving",
                "cooling.model", "cooling.weather_path")


def _flag_overrides(a: argparse.Namespace, cfg) -> dict:
    """The configuration overrides the ``hpctwin run`` flags ask for, in the order they are applied."""
    ov: dict = {}
    if a.backfill is not None and a.policy is None and cfg.scheduler.policy in SHORTHANDS:
        # `--backfill B` alone: the default policy is a shorthand (easy = fcfs + easy); apply B to its order
        ov["scheduler.policy"] = SHORTHANDS[cfg.scheduler.policy][0]
    for key, val in (("scheduler.policy", a.policy), ("scheduler.backfill", a.backfill),
                     ("scheduler.placement", a.placement), ("system", a.system), ("trace.path", a.trace),
                     ("trace.format", a.format), ("trace.window_start_days", a.start_day),
                     ("trace.window_days", a.days),
                     ("cooling.step_s", a.step), ("output.interval_s", a.interval), ("seed", a.seed),
                     ("trace.cores_per_node", a.cores_per_node),
                     ("trace.timezone", getattr(a, "timezone", None)), ("scheduler.pool_nodes", getattr(a, "nodes", None))):
        if val is not None:
            ov[key] = str(Path(val).resolve()) if key == "trace.path" else val
    if a.requests is not None or a.deployment is not None:
        ov.update(_serving_overrides(a, cfg))
    ov.update(grid_from_flags(getattr(a, "carbon", None), getattr(a, "price", None)))
    ov.update(_weather_overrides(a))
    ov.update(_cooling_overrides(a))
    if a.strict:
        ov["trace.strict"] = True
    if a.quiet:
        ov["output.progress"] = False
    if getattr(a, "accept_weather_gaps", False):
        ov["cooling.accept_weather_gaps"] = True
    if a.step is not None and a.interval is None and a.step > 0 and math.isfinite(a.step):
        ratio = max(1, round(cfg.output.interval_s / a.step))
        if abs(ratio * a.step - cfg.output.interval_s) > 1e-9:
            print(f"note: output interval set to {ratio * a.step:g} s, the multiple of --step {a.step:g} s "
                  f"nearest to {cfg.output.interval_s:g} s")
        ov["output.interval_s"] = ratio * a.step
    return ov


def _weather_overrides(a: argparse.Namespace) -> dict:
    """``--weather`` (constant, tmy3 / file, site, or a file) and ``--wet-bulb`` as overrides."""
    ov: dict = {}
    if a.weather is not None:
        w = a.weather.strip()
        if w == "constant":
            ov["cooling.weather"] = "constant"
        elif w in ("tmy3", "file"):
            ov["cooling.weather"] = "file"
        elif w == "site":
            ov["cooling.weather"], ov["cooling.weather_path"] = "file", ""
        else:
            ov["cooling.weather"] = "file"
            ov["cooling.weather_path"] = str(Path(w).resolve()) if Path(w).exists() else w
    if a.wet_bulb is not None:
        ov["cooling.weather"] = "constant"
        ov["cooling.T_wb_C"] = a.wet_bulb
    return ov


def _cooling_overrides(a: argparse.Namespace) -> dict:
    """``--no-cooling`` / ``--cooling MODEL`` as overrides; both at once (but ``off``) contradict each other."""
    cooling = getattr(a, "cooling", None)
    if a.no_cooling and cooling not in (None, "off"):
        raise ValueError(f"--no-cooling and --cooling {a.cooling} contradict each other")
    if a.no_cooling or cooling == "off":
        return {"cooling.enabled": False}
    return {"cooling.model": cooling} if cooling is not None else {}


def _run_name(c, ov: dict) -> str:
    """A run name that says what the flags changed (system, trace, policy, window, placement, cooling)."""
    pol = c.scheduler.policy + (f"+{c.scheduler.backfill}" if c.scheduler.backfill else "")
    name = (f"{Path(c.system).stem}-{Path(c.trace.path).stem.split('.')[0] if c.trace.path else 'theta2022'}"
            f"-{pol}-day{c.trace.window_start_days:g}-{c.trace.window_days:g}d")
    if not c.trace.enabled and c.serving is not None:
        name = (f"{Path(c.system).stem}-serving-{Path(c.serving.deployment).stem}-"
                f"{Path(c.serving.trace).stem.split('.')[0] if c.serving.trace else 'azure-conv'}")
    if c.scheduler.placement != "lowest":
        name += f"-{c.scheduler.placement}"
    if c.cooling.plant_model == "off":
        name += "-nocooling"
    elif c.cooling.plant_model == "fast":
        name += "-fastcooling"
    elif c.cooling.weather == "constant":
        name += f"-wb{c.cooling.T_wb_C:g}C"
    elif ov.get("cooling.weather_path"):
        name += f"-wx{Path(ov['cooling.weather_path']).name.split('.')[0]}"
    return name


def _tag_name(a: argparse.Namespace, cfg):
    """``--nodes`` and ``--set`` (applied here) tag the run name, unless ``--out`` names the file."""
    if getattr(a, "nodes", None) is not None and a.out is None:
        cfg = cfg.with_overrides({"name": f"{cfg.name}-pool{a.nodes}"})
    if getattr(a, "set", None):
        from .overrides import apply_sets

        cfg = apply_sets(cfg, a.set)
        if a.out is None:  # its own file name: a what-if never overwrites the run it changes
            tag = hashlib.sha256("\0".join(a.set).encode()).hexdigest()[:8]
            cfg = cfg.with_overrides({"name": f"{cfg.name}-set{tag}"})
    return cfg


def _weather_label(cfg) -> str:
    """Short name of the run's weather and site for the run header (never fails: the run reports errors)."""
    try:
        system = load_system(cfg.system)
        spec, chosen_by, _ = weather_source(cfg, system)
        site = system.site_name or "not given"
        if spec == "constant":
            return f"constant {cfg.cooling.T_wb_C:g} degC wet-bulb (system site: {site})"
        if chosen_by == "system site":
            return f"{Path(spec).name} (the system's site: {site})"
        return f"{Path(spec).name} (from {chosen_by}; the system's site: {site})"
    except Exception:  # noqa: BLE001 - the run itself reports a bad system or weather file
        return "(unresolved)"


#: How the run header names each cooling plant model (``cooling.model``).
_COOLING_LABEL = {"fmu": "FMU, weather ", "fast": "fast quasi-steady plant, weather "}


def _run_and_report(a: argparse.Namespace, cfg, comm) -> int:
    out = Path(a.out) if a.out else Path("out") / f"{cfg.name}.h5"
    t0 = time.perf_counter()
    sv = cfg.serving
    what = (f"policy {cfg.scheduler.policy}, window day {cfg.trace.window_start_days:g} + "
            f"{cfg.trace.window_days:g} days" if cfg.trace.enabled or sv is None else
            f"serving only: deployment {sv.deployment}, request trace {sv.trace or 'embedded Azure conversation'}")
    model = cfg.cooling.plant_model
    cooling = _COOLING_LABEL[model] + _weather_label(cfg) if model != "off" else "off"
    print(f"hpctwin run '{cfg.name}': system {cfg.system}, {what}, cooling {cooling}")
    live = None
    if getattr(a, "live", False):
        if sys.stderr.isatty():
            from .live import LiveView

            live = LiveView(title=cfg.name)
        else:  # never break a run without a terminal: run as usual, say why there is no dashboard
            print("hpctwin run: note: --live needs a terminal (stderr is not one): running without the dashboard",
                  file=sys.stderr)
    if live is not None:
        from .live import live_dashboard

        with live_dashboard(live):
            res = run_one(cfg, out, progress=True, echo=lambda m: print("  " + m), comm=comm, headroom=True,
                          live=live, fast_check_h=FAST_CHECK_WINDOW_H)
    else:
        res = run_one(cfg, out, progress=cfg.output.progress and sys.stderr.isatty() and not a.quiet,
                      echo=None if a.quiet else (lambda m: print("  " + m)), comm=comm, headroom=True,
                      fast_check_h=FAST_CHECK_WINDOW_H)
    wall = time.perf_counter() - t0
    if not a.quiet:
        print(res.load_summary)
    print(f"summary ({res.info['events']} events, {wall:.1f} s wall, "
          f"{res.summary['duration_s'] / max(wall, 1e-9):,.0f}x real time):")
    print(format_summary(res.summary, res.info))
    info = res.info
    if info.get("twin_latency_s"):
        lat = info["twin_latency_s"]
        chosen = [d[2] for d in info["twin_decisions"]]
        use = ", ".join(f"{n} {chosen.count(i)}" for i, n in enumerate(info["twin_pool"]))
        print(f"  twin                  {len(lat)} decisions on {comm.Get_size() if comm else 1} rank(s), latency "
              f"mean {1e3 * sum(lat) / len(lat):.1f} ms, max {1e3 * max(lat):.1f} ms; chosen: {use}")
    if not info.get("complete", True):
        print(f"hpctwin run: error: {info['failure']}\n  partial results up to t = {info['t_final_s']:.0f} s were "
              f"written to {res.path} (root attribute complete = False)", file=sys.stderr)
        return 2
    dropped = {k: info.get(k, 0) for k in ("jobs_excluded_unknown_runtime", "jobs_excluded_larger_than_machine",
                                           "jobs_not_run", "jobs_rejected_power_cap", "jobs_cut_at_horizon")}
    at_load = sum(c["rejected"] for c in res.load_counts if c["kind"] == "jobs")
    print(f"  jobs left out          rejected by the loader {at_load} (whole trace), unknown run time "
          f"{dropped['jobs_excluded_unknown_runtime']}, larger than the machine "
          f"{dropped['jobs_excluded_larger_than_machine']}, above every power budget "
          f"{dropped['jobs_rejected_power_cap']}, never started {dropped['jobs_not_run']}, cut at the horizon "
          f"{dropped['jobs_cut_at_horizon']}")
    for line in res.supply + res.headroom:  # CDU supply vs the plant's limit; feed and plant margins
        print(line)
    for c in res.load_counts:  # data loss is never hidden, not even by --quiet
        if c["rejected"] or c["repaired"]:
            what = "job" if c["kind"] == "jobs" else "request"
            print(f"hpctwin run: warning: {c['source']}: {c['rejected']} {what} record(s) rejected and "
                  f"{c['repaired']} repaired at load, of {c['records_read']} read (details: hpctwin validate, or "
                  f"the load report in /provenance)", file=sys.stderr)
    if "stopped_at_horizon_s" in info:
        print(f"hpctwin run: warning: the run stopped at the horizon t = {info['stopped_at_horizon_s']:.0f} s (window "
              f"end + output.max_drain_days) with jobs left: {dropped['jobs_cut_at_horizon']} running job(s) cut "
              f"there (outcome 5), {dropped['jobs_not_run']} never started", file=sys.stderr)
    for w in info.get("warnings", []):
        print(f"hpctwin run: warning: {w}", file=sys.stderr)
    print(f"wrote {res.path}")
    if info.get("plant_out_of_bounds"):
        print(f"hpctwin run: error: the cooling plant left its physical bounds (see the warnings above; recorded in "
              f"{res.path} as plant_out_of_bounds_json): its temperatures and cooling power are not physical",
              file=sys.stderr)
        return 1
    if dropped["jobs_cut_at_horizon"] and not dropped["jobs_not_run"]:
        return 1
    if dropped["jobs_not_run"]:
        print(f"hpctwin run: warning: {dropped['jobs_not_run']} job(s) never started (e.g. nodes down until the "
              f"end); see /provenance info_json", file=sys.stderr)
        return 1
    return 0


def cmd_sweep(a: argparse.Namespace) -> int:
    """``hpctwin sweep``: every scenario of a study (over MPI ranks under mpiexec); 1 when a scenario failed."""
    sets = list(getattr(a, "set", None) or [])
    if getattr(a, "timezone", None):
        sets.append(f"trace.timezone={json.dumps(a.timezone)}")
    study, _ = load_study(a.study, sets=sets)
    out = Path(a.out) if a.out else Path("out") / study
    refine = {"top_k": getattr(a, "refine_top", None), "objective": getattr(a, "refine_by", None),
              "pareto": list(a.refine_pareto) if getattr(a, "refine_pareto", None) else None}
    summary = run_sweep(a.study, out, refine=refine, sets=sets)
    if summary is not None:
        print_sweep_answer(summary)
        with h5py.File(summary) as f:
            failed = sum(1 for x in f["scenarios/status"][()] if x in (b"failed", "failed"))
        if failed:
            print(f"hpctwin sweep: {failed} scenario(s) failed; see {summary} (/scenarios/error)", file=sys.stderr)
            return 1
    return 0


def print_sweep_answer(summary: Path, echo: object = print) -> None:
    """The answer of a sweep at the terminal: each scenario's headline metrics, then its frontier.

    Parameters
    ----------
    summary : Path
        The sweep's ``summary.h5``.
    echo : object
        Printer of one line (a callable, default ``print``).
    """
    from ..analysis.frontier import SpanMismatchError, frontier_table, load_sweep_points, serving_default_axes
    from ..analysis.report.sweep_table import headline_table

    echo("")
    echo("scenarios (headline metrics):")
    echo(headline_table(summary).format())
    import numpy as np

    from ..analysis.frontier import _subset
    from ..analysis.report import sweep_conditions

    pts = load_sweep_points(summary)
    with h5py.File(summary, "r") as f:  # conditions (weather, trace ...) are not decisions: one front per condition
        g = f["scenarios"]
        dec = [x.decode() if isinstance(x, bytes) else str(x) for x in g["name"][()]]
        cfgs = ([x.decode() if isinstance(x, bytes) else str(x) for x in g["config_json"][()]]
                if "config_json" in g else ["{}"] * len(dec))
        study_file = str(f.attrs.get("study_file", ""))
    cond = dict(zip(dec, sweep_conditions(study_file, cfgs)))
    from ..analysis.report.sweep_table import ensemble_mean_points

    pts, cond, of = ensemble_mean_points(summary, pts, cond)  # an ensemble: the front of the scenarios' means
    labels = [cond.get(n, "") for n in pts.names]
    for label in sorted(set(labels)):
        sub = _subset(pts, np.array([lb == label for lb in labels], dtype=bool)) if len(set(labels)) > 1 else pts
        where = f" under {label}" if label else ""
        try:
            if len(sub.names) < 2:
                continue
            dx, dy, dc = serving_default_axes() if sub.serving else ("wait", "energy", None)
            fr = frontier_table(sub, [dx, dy], colour=dc)
            echo("")
            echo(f"frontier{of}{where} ({', '.join(f'{m.name} ({m.sense})' for m in fr.metrics)}; `hpctwin frontier "
                 f"{summary.parent}` for other metrics, CSV and plot):")
            echo(fr.format())
        except (SpanMismatchError, ValueError) as exc:  # spans differ, or no scenario has both metrics
            echo(f"frontier{where} not computed: {exc}")


def cmd_compare(a: argparse.Namespace) -> int:
    """``hpctwin compare A B``: the change from run A to run B, link by link; returns 0."""
    cmp = compare(a.a, a.b, top=a.top, period_s=a.period_h * 3600.0, allow_unverified=a.no_verify)
    print(cmp.format())
    if getattr(a, "plot", None):
        from ..analysis.report import make_compare_report

        print(f"wrote {make_compare_report(a.a, a.b, a.plot, cmp)}")
    if a.json:
        from ..io.hdf5 import atomic_write_bytes

        atomic_write_bytes(a.json, json.dumps(cmp.to_dict(), indent=2).encode("utf-8"), what="comparison")
        print(f"wrote {a.json}")
    return 0


def cmd_report(a: argparse.Namespace) -> int:
    """``hpctwin report``: figures and one HTML report of a run, a sweep summary or a cooling-only file."""
    t0 = time.perf_counter()
    if Path(a.file).is_dir():  # a sweep folder: its summary.h5
        if not (Path(a.file) / "summary.h5").is_file():
            raise ValueError(f"{a.file}: a folder without summary.h5 (give a run file, or a sweep folder)")
        a.file = str(Path(a.file) / "summary.h5")
    html = make_report(a.file, out_dir=a.out, gantt_start_day=a.gantt_start_day or 0.0, gantt_days=a.gantt_days,
                       gantt_color=a.gantt_color,
                       pareto=[tuple(p.split(",", 1)) for p in a.pareto] if a.pareto else None,
                       progress=sys.stderr.isatty(), allow_unverified=a.no_verify)
    print(f"wrote {html} ({time.perf_counter() - t0:.1f} s)")
    return 0


def _condition_labels(summary: Path) -> dict[str, str]:
    """Scenario name -> condition label of a sweep summary (its weather, trace ... axes; "" without any), from the
    study file and configurations stored in it (:func:`scheduler_sim.analysis.report.sweep_conditions`).
    """
    from ..analysis.report import sweep_conditions

    with h5py.File(summary, "r") as f:
        g = f["scenarios"]
        dec = lambda a: [x.decode() if isinstance(x, bytes) else str(x) for x in a]  # noqa: E731
        names = dec(g["name"][()])
        cfgs = dec(g["config_json"][()]) if "config_json" in g else ["{}"] * len(names)
        study = f.attrs.get("study_file", "")
    study = study.decode() if isinstance(study, bytes) else str(study)
    return dict(zip(names, sweep_conditions(study, cfgs)))


def cmd_frontier(a: argparse.Namespace) -> int:
    """``hpctwin frontier SWEEP_DIR``: the sweep's non-dominated set, knee and hypervolume; optional CSV and plot.

    A sweep with condition axes (weather, trace: not decisions) gets one front per condition, as its report; the
    CSV and plot files then carry ``_<k>`` before their suffix for the k-th condition in sorted order.
    ``--across-conditions`` compares every scenario with every other (one front).
    """
    from ..analysis.frontier import (condition_groups, frontier_csv, frontier_plot, frontier_table,
                                     load_sweep_points, serving_default_axes)

    pts = load_sweep_points(a.sweep)
    dx, dy, dc = serving_default_axes() if pts.serving else ("wait", "energy", None)
    metrics = [a.x or dx, a.y or dy] + ([a.z] if a.z else [])
    colour = a.colour or (dc if not a.z else None)
    groups = [("", pts)] if a.across_conditions else condition_groups(pts, _condition_labels(pts.path))
    frs = [(label, frontier_table(sub, metrics, per_day=a.per_day, ref=a.ref, colour=colour))
           for label, sub in groups]
    for k, (label, fr) in enumerate(frs):
        if k:
            print()
        print(f"frontier of {pts.path}: " + ", ".join(f"{m.name} ({m.sense})" for m in fr.metrics)
              + (f"; colour {fr.colour_metric.name}" if fr.colour_metric else "")
              + (f"; condition {label} (its own front: a condition is not a decision)" if label else ""))
        print(fr.format())
        suffix = (lambda p: p) if len(frs) == 1 else (lambda p, k=k: Path(p).with_name(
            f"{Path(p).stem}_{k}{Path(p).suffix}"))
        if a.csv:
            print(f"wrote {frontier_csv(fr, suffix(a.csv))}")
        if a.plot:
            if label:  # the condition as the title, as in the sweep report
                import matplotlib.pyplot as plt

                fig = frontier_plot(fr)
                fig.axes[0].set_title(label, fontsize=10)
                fig.savefig(suffix(a.plot), dpi=120)
                plt.close(fig)
            else:
                frontier_plot(fr, suffix(a.plot))
            print(f"wrote {suffix(a.plot)}")
    return 0


def cmd_list(a: argparse.Namespace) -> int:
    """``hpctwin list``: policies, trace loaders, systems, cooling plants, node types or workload families."""
    if a.what == "policies":
        for name, desc in policy_catalogue():
            print(f"{name:26s} {desc}")
    elif a.what == "loaders":
        for name, desc in available_loaders().items():
            print(f"{name:10s} {desc}")
    elif a.what == "systems":
        for name in available_systems():
            s = load_system(name)
            print(f"{name:10s} {s.n_nodes} nodes, {s.n_racks} racks, {s.n_cdus} CDUs, plant '{s.cooling_plant}'"
                  + (f", partitions {', '.join(p.name for p in s.partitions)}" if s.partitioned else ""))
    elif a.what == "node-types":
        from power.nodetypes import available_node_types, load_node_type

        for name in available_node_types():
            t = load_node_type(name)
            print(f"{name:16s} idle {t.idle_W:7.0f} W  max {t.max_W:7.0f} W  {t.cpus_per_node} CPU {t.gpus_per_node} GPU"
                  f"  {t.description}")
    elif a.what == "families":
        from jobs.families import FAMILIES

        for name, desc in FAMILIES.catalogue():
            print(f"{name:10s} {desc}")
    else:
        for name, desc in plant_registry().catalogue():
            print(f"{name:12s} {desc}")
    return 0


def _print_n_plus_one(params, weather_file: Path) -> None:
    """Print the design wet-bulb of the site and the plant's N+1 cases there (cooling_fmu.redundancy)."""
    dc = design_conditions(weather_file)
    print(f"  design wet-bulb {dc.wet_bulb_K - 273.15:.2f} degC ({dc.source})")
    for c in n_plus_one(params, dc.wet_bulb_K):
        temps = (f"facility supply {c.T_fac_sup_K - 273.15:.2f} degC, warmest CDU supply "
                 f"{c.T_sec_sup_max_K - 273.15:.2f} degC, fans {c.y_fan:.2f}" if c.T_fac_sup_K == c.T_fac_sup_K
                 else c.note)
        print(f"  N+1 at design heat, {c.name}: {'holds its set points' if c.ok else 'FAILS'} ({temps})")


def _print_free_cooling(params, out: Path) -> None:
    """Print the chiller-free (economiser-only) hours per month of a written cooling run."""
    if not params.chiller.enabled:
        print("  chiller-free hours: every hour (the plant has no chiller: towers and economiser only)")
        return
    with h5py.File(out, "r") as f:
        t = f["timeseries/time_s"][:]
        q = f["timeseries/facility/Q_flow_chiller"][:]
        origin = float(f.attrs["time_origin_unix_s"])
    dt_s = float(t[1] - t[0]) if len(t) > 1 else 0.0
    months = chiller_free_hours_by_month(t, q, origin, dt_s)
    print("  chiller-free hours per month: " + ", ".join(f"{k} {free:,.0f} of {tot:,.0f} h"
                                                          for k, (free, tot) in months.items()))


def _print_tower_cells(params, s: dict, cells: int | None) -> None:
    """Print how the tower cells ran in a cooling-only run: held at ``--cells``, or staged as in ``hpctwin run``."""
    if "tower_cells_min" not in s:
        return
    n, sb = params.tower.n_cells, params.tower.n_cells_standby
    bank = f"{n} (standby {sb})" if sb else f"{n}"
    if cells:
        print(f"  tower cells: {cells} of {bank} held throughout (--cells); fans {s['E_fan_J'] / 3.6e6:,.1f} kWh")
        return
    lo, hi, k = s["tower_cells_min"], s["tower_cells_max"], s["tower_cell_switches"]
    ran = (f"{lo:.0f} of {bank} running throughout" if lo == hi else
           f"{lo:.0f} to {hi:.0f} of {bank} running, mean {s['tower_cells_mean']:.2f}, {k:.0f} stage "
           f"change{'s' if k != 1 else ''}")
    print(f"  tower cells: staged by the supervisory controller (as hpctwin run): {ran}; fans "
          f"{s['E_fan_J'] / 3.6e6:,.1f} kWh")


def cmd_cooling(a: argparse.Namespace) -> int:
    """``hpctwin cooling``: drive a plant from a measured IT power series and write its HDF5 file."""
    if a.design_day:
        return cmd_design_day(a)
    if a.power is None:
        raise ValueError("give a POWER_CSV (or --design-day with --system)")
    a.plant = a.plant or "frontier"
    t, P, rep = load_power_series(a.power)
    for note in rep.notes:
        print(f"  {a.power}: {note}")
    params = load_plant_params(a.plant)
    t0 = float(t[rep.leading_zero_rows]) + a.start_day * 86400.0 if len(t) else 0.0
    t1 = t0 + a.days * 86400.0 if a.days is not None else float(t[-1]) + rep.interval_s
    day0 = dt.datetime.fromtimestamp(t0, dt.timezone.utc)
    day1 = dt.datetime.fromtimestamp(t1, dt.timezone.utc)
    out = Path(a.out) if a.out else Path("out") / f"cooling-{params.name}-{day0:%Y%m%d}.h5"
    weather = Weather.constant(a.wet_bulb + 273.15) if a.wet_bulb is not None else None
    wx = (f"constant wet-bulb {a.wet_bulb:g} degC" if a.wet_bulb is not None else
          f"{a.weather or ('the site of system ' + a.system if a.system else 'golden')} typical year, aligned to the "
          f"series' dates")
    print(f"hpctwin cooling: plant {params.name} ({params.n_cdu} CDUs), power {a.power}, "
          f"{day0:%Y-%m-%d %H:%M} to {day1:%Y-%m-%d %H:%M} UTC, weather {wx}, step {a.step:g} s")
    s = run_cooling_standalone(a.power, out, plant=a.plant, step_s=a.step, days=a.days, start_day=a.start_day,
                               weather_file=a.weather, scale_to_design=a.scale_to_design, weather=weather,
                               system=a.system, cells=a.cells)
    design = params.n_cdu * params.cdu.Q_flow_nominal_W
    sel = (t >= t0) & (t < t1)
    peak = float(P[sel].max()) * s["power_scale"] if sel.any() else 0.0
    print(f"  power scale factor {s['power_scale']:.4g} (peak IT {peak / 1e6:,.3f} MW, plant design heat "
          f"{design / 1e6:,.3f} MW)")
    print(f"  IT energy {s['E_it_J'] / 3.6e9:,.1f} MWh, cooling {s['E_cooling_J'] / 3.6e9:,.1f} MWh, "
          f"PUE {s['PUE']:.4f}, WUE {s['WUE_L_per_kWh']:.3f} L/kWh, fans {100 * s['fan_share_of_cooling']:.1f} % "
          f"of cooling energy")
    if a.system is not None:
        print(f"  facility PUE {s['PUE']:.4f} (liquid plant alone {s['PUE_liquid_plant']:.4f}; pPUE mechanical "
              f"{s['pPUE_mechanical']:.4f}, electrical {s['pPUE_electrical']:.4f}); counts: liquid plant + the "
              f"[facility] stages of system {a.system}")
    else:
        print("  PUE counts the liquid plant only (give --system NAME to count its electrical chain and lighting)")
    _print_tower_cells(params, s, a.cells)
    if a.wet_bulb is None:
        _print_n_plus_one(params, site_weather_file(a.weather, load_system(a.system) if a.system else None))
    if peak > design * (1 + 1e-9):
        print(f"hpctwin cooling: warning: peak IT power {peak / 1e6:,.3f} MW exceeds the plant's design heat "
              f"{design / 1e6:,.3f} MW by {100 * (peak / design - 1):.0f} %; supply temperatures may exceed their "
              f"limits (see --scale-to-design)", file=sys.stderr)
    _print_free_cooling(params, out)
    print(f"wrote {out}")
    return 0


def cmd_design_day(a: argparse.Namespace) -> int:
    """``hpctwin cooling --design-day``: the plant at full-load IT power through its site's design day.

    The full-load IT power is every node at utilisation 1 through the power chain
    (:func:`scheduler_sim.analysis.headroom.full_load_heat_w` for the heat); the design day is the calendar day of
    the weather year with the highest daily mean wet-bulb (:func:`scheduler_sim.app.cooling.design_day`). It is
    written as a constant power series and run as any ``hpctwin cooling`` series (heat shared equally by the CDUs).
    """
    import tempfile

    import numpy as np

    from power import load_system

    from .cooling import design_day_series

    if a.power is not None:
        raise ValueError("--design-day takes no POWER_CSV (the power is the system's full load)")
    if not a.system:
        raise ValueError("--design-day needs --system NAME (its full-load power, its site and its plant)")
    system = load_system(a.system)
    plant = a.plant or system.cooling_plant
    params = load_plant_params(plant)
    with tempfile.TemporaryDirectory(prefix="hpctwin-design-day-") as tmp:
        csv, info = design_day_series(system, a.weather, Path(tmp))
        out = Path(a.out) if a.out else Path("out") / f"cooling-{params.name}-design-day.h5"
        print(f"design day: system {system.name}, plant {params.name} ({params.n_cdu} CDUs), "
              f"full-load IT {info['P_it_W'] / 1e6:,.3f} MW, design day {info['day']} of {info['weather']} "
              f"(mean wet-bulb {info['mean_T_wb_K'] - 273.15:.1f} C, max {info['max_T_wb_K'] - 273.15:.1f} C; "
              f"0.4 % design wet-bulb {info['design_T_wb_K'] - 273.15:.1f} C)")
        s = run_cooling_standalone(csv, out, plant=plant, step_s=a.step, weather_file=info["weather_path"],
                                   system=a.system, cells=a.cells)
    import h5py

    with h5py.File(out, "r") as f:
        T = f["/timeseries/cdu/T_sec_sup"][()]
        ts = f["/timeseries/time_s"][()]
        dt_h = float(ts[1] - ts[0]) / 3600.0 if len(ts) > 1 else 0.0
    limit = params.cdu.T_sec_sup_set_K + 1.0
    hours = float(np.any(T > limit, axis=1).sum() * dt_h)
    print(f"  CDU supply: highest {T.max() - 273.15:.2f} C (set point {params.cdu.T_sec_sup_set_K - 273.15:.1f} C); "
          f"{hours:.2f} h above set point + 1 K")
    print(f"  IT energy {s['E_it_J'] / 3.6e9:,.1f} MWh, cooling {s['E_cooling_J'] / 3.6e9:,.2f} MWh, PUE {s['PUE']:.4f}")
    _print_tower_cells(params, s, a.cells)
    print(f"wrote {out}")
    return 0


def _ask(a: argparse.Namespace) -> None:
    """Prompt for the options of ``site new`` that are missing, on a terminal only (tests give options)."""
    if not sys.stdin.isatty():
        return
    if not a.partition:
        a.partition = []
        print("partitions, one per line as NAME=NODE_TYPE:COUNT[:NODES_PER_RACK[:RACK_KW]] (empty line ends):")
        while (line := input("  partition: ").strip()):
            a.partition.append(line)
    if a.cooling is None:
        a.cooling = input("cooling (towers, chiller) [towers]: ").strip() or "towers"
    if a.site is None:
        a.site = input("site (golden, chicago, knoxville or an EPW path) [golden]: ").strip() or "golden"
    if a.feed_MW is None:
        v = input("electrical feed [MW] (empty: 1.5 x full-load IT): ").strip()
        a.feed_MW = float(v) if v else None


def cmd_site(a: argparse.Namespace) -> int:
    """``hpctwin site new`` / ``hpctwin site check`` (:mod:`scheduler_sim.app.site`)."""
    from .site import SiteSpec, build_site, check_site, parse_partition

    if a.site_command == "new":
        _ask(a)
        if not a.partition:
            raise ValueError("site new: give at least one --partition NAME=NODE_TYPE:COUNT")
        spec = SiteSpec(a.name, tuple(parse_partition(p) for p in a.partition), a.cooling or "towers",
                        a.site or "golden", a.feed_MW * 1e6 if a.feed_MW is not None else math.nan, a.feed_units,
                        a.redundancy, a.margin, a.racks_per_cdu, a.rack_kW * 1e3)
        sys_path, plant_path, log = build_site(spec, a.out)
        for line in log:
            print(f"  {line}")
        print(f"wrote {sys_path}\nwrote {plant_path}")
        print(f"next: hpctwin site check {a.name} --dir {a.out}")
        return 0
    path = Path(a.name) if a.name.endswith(".toml") else Path(a.dir) / f"{a.name}.toml"
    if not path.is_file():
        raise ValueError(f"no site {a.name!r}: {path} not found (write it with hpctwin site new {a.name})")
    ok, lines = check_site(path)
    for line in lines:
        print(line)
    return 0 if ok else 2


def one_line(exc: BaseException) -> str:
    """The first line of the exception's message."""
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else ""

