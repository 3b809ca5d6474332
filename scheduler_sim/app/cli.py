"""Command line: ``hpctwin run | sweep | compare | report | frontier | list | validate`` (also ``python -m scheduler_sim``).

Errors the user can fix (a bad configuration, a bad trace, an unknown name) are printed as one clear message and
exit with status 2; ``--debug`` shows the traceback instead.
"""

from __future__ import annotations

import argparse
import sys
from importlib.metadata import PackageNotFoundError, version

__all__ = ["main", "build_parser"]

EPILOG_RUN = """\
examples:
  hpctwin run                                  # main job: 30 days of ALCF Theta 2022, EASY, cooling FMU
  hpctwin run experiments/theta_easy_30d.toml --out out/run.h5
  hpctwin run --policy sjf --backfill conservative --days 7 --no-cooling
  hpctwin run --weather constant --wet-bulb 24
  hpctwin run --system frontier --days 7       # weather of the system's site (Knoxville TMY3)
  hpctwin run --weather knoxville              # a shipped site; or any EPW / TMY3 file: --weather my_site.epw

CONFIG is a TOML file with the sections of scheduler_sim.app.config.RunConfig (see docs/configuration.md); options given
on the command line override it. --days is the window of SUBMISSIONS: the run goes on until those jobs end.
Without --out the file is out/<run name>.h5, where options given here are appended to the run name.
"""


#: Help of ``--no-verify`` (validate, report, compare): the one way to read an output file without a checksum.
NO_VERIFY_HELP = ("read an output file that has no content checksum (content_sha256: stripped, or written by an old "
                  "hpctwin), with a warning; a file whose content does not match its checksum is always refused")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``hpctwin`` command (every option documented in ``--help``)."""
    p = argparse.ArgumentParser(
        prog="hpctwin",
        description="hpctwin: event-driven digital twin of an HPC facility. Replays a job trace through a "
                    "scheduler and follows every decision to node power, conversion losses, CDU heat, a Modelica "
                    "cooling plant (FMU) and PUE; writes the causal chain to HDF5.")
    p.add_argument("--debug", action="store_true", help="show Python tracebacks for errors")
    p.add_argument("--version", action="version", version=f"hpctwin {_version()}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    # --debug is accepted after the command too (`hpctwin run --debug`); SUPPRESS keeps the top-level value
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="show Python tracebacks for errors")
    _add = sub.add_parser

    def add_parser(name, **kw):
        return _add(name, parents=[common], **kw)

    sub.add_parser = add_parser  # type: ignore[method-assign]

    r = sub.add_parser("run", help="run one simulation and write its HDF5 file",
                       description="Run one simulation (default: the embedded main job) and write an HDF5 file.",
                       epilog=EPILOG_RUN, formatter_class=argparse.RawDescriptionHelpFormatter)
    r.add_argument("config", nargs="?", metavar="CONFIG", help="run configuration TOML (default: built-in main job)")
    r.add_argument("--out", metavar="FILE.h5", help="output HDF5 file (default: out/<run name>.h5)")
    r.add_argument("--policy", help="policy: replay, twin, fcfs, sjf, ljf, largest, priority, or the shorthands "
                                    "easy (= fcfs + easy backfill), conservative (see `hpctwin list policies`)")
    r.add_argument("--backfill", help="backfill: none, easy, easy-bestfit, conservative, firstfit (on its own it "
                                      "applies to the configuration's order, fcfs for the shorthands)")
    r.add_argument("--placement", choices=["lowest", "spread", "pack"],
                   help="node placement: lowest index, spread heat over CDUs, or pack it")
    r.add_argument("--system", help="system description name or TOML file (see `hpctwin list systems`)")
    r.add_argument("--trace", metavar="FILE", help="job trace file (default: embedded ALCF Theta 2022 SWF)")
    r.add_argument("--format", help="trace loader name (default: guessed from the file suffix)")
    r.add_argument("--start-day", type=float, metavar="D", help="window start, days after the trace origin")
    r.add_argument("--days", type=float, metavar="D", help="window length in days")
    r.add_argument("--no-cooling", action="store_true", help="do not run the cooling FMU (PUE is then not reported); "
                                                               "the same as --cooling off")
    r.add_argument("--cooling", choices=["fmu", "fast", "off"],
                   help="cooling plant model: fmu (default; the Modelica FMU), fast (quasi-steady table of its "
                        "steady state: outline studies, error in docs/cooling.md), off (no plant)")
    r.add_argument("--weather", metavar="PATH|SITE",
                   help="weather for the cooling towers: an EPW or TMY3 file, a shipped site (golden, chicago, "
                        "knoxville), 'site' (the system's site, the default), 'constant' (with --wet-bulb); "
                        "'tmy3' keeps the configured file or site")
    r.add_argument("--carbon", metavar="FILE|NAME",
                   help="hourly carbon-intensity file (Electricity Maps, EIA-930) or a shipped series "
                        "(pjm-carbon-2022, fi-carbon-2022); sets grid.carbon: cost and CO2 are then reported")
    r.add_argument("--price", metavar="FILE|NAME",
                   help="hourly electricity-price file (PJM real-time LMP) or a shipped series (pjm-price-2022); "
                        "sets grid.price")
    r.add_argument("--wet-bulb", type=float, metavar="DEGC",
                   help="constant wet-bulb temperature [degC] (implies --weather constant)")
    r.add_argument("--step", type=float, metavar="S", help="cooling FMU communication step [s] (default 15)")
    r.add_argument("--interval", type=float, metavar="S", help="output averaging interval [s] (default 60)")
    r.add_argument("--cores-per-node", type=int, metavar="N",
                   help="processors per node in the trace (SWF processors -> nodes); default: the SWF header "
                        "(MaxProcs / MaxNodes), then the system")
    r.add_argument("--strict", action="store_true", help="stop at the first bad trace record instead of skipping it")
    r.add_argument("--seed", type=int, help="seed for every random choice")
    r.add_argument("--requests", metavar="FILE",
                   help="LLM request trace for a serving partition (azure_llm CSV, mooncake JSONL, or request_csv "
                        "with --map); without --trace the run is serving-only")
    r.add_argument("--deployment", metavar="NAME",
                   help="serving deployment: a TOML file or a name in experiments/serving/ (e.g. "
                        "llama3-70b_h100_tp4x2); default llama3-70b_h100_tp4x2 when --requests is given")
    r.add_argument("--request-format", metavar="F", help="request loader: azure_llm, mooncake, request_csv "
                                                         "(default: guessed from the file)")
    r.add_argument("--map", action="append", metavar="KEY=COLUMN",
                   help="request_csv column mapping, repeatable: arrival=, prompt=, output=, prefix=, time_unit=")
    r.add_argument("--timezone", metavar="TZ",
                   help="IANA zone of the trace's local times (sacct, PM100, ...), e.g. America/Chicago; sets "
                        "trace.timezone (default: the loader's, UTC for sacct)")
    r.add_argument("--nodes", type=int, metavar="N",
                   help="schedulable pool size: batch jobs run on N nodes of the system (the others idle); jobs "
                        "larger than N are rejected at load; sets scheduler.pool_nodes")
    r.add_argument("--set", action="append", metavar="KEY=VALUE", dest="set",
                   help="override any configuration key (repeatable), e.g. --set scheduler.policy=fcfs, "
                        "--set system.topology.n_nodes=+20%%, --set plant.tower.n_cells=5, "
                        "--set trace.arrival_rate_factor=1.5; relative numbers: +20%%, -10%%, x1.5 "
                        "(docs/configuration.md)")
    r.add_argument("--units", choices=["si", "ip"], default="si",
                   help="units of the printed summary: si (default) or ip, US customary (degF, gal, lb; "
                        "scheduler_sim.analysis.units); the HDF5 file is SI either way")
    r.add_argument("--quiet", action="store_true", help="no progress bar, only the summary (data warnings, such "
                                                        "as rejected records or interpolated weather, still show)")
    r.add_argument("--live", action="store_true",
                   help="draw a terminal dashboard while the run goes (facility power and PUE, queue and running "
                        "jobs, hottest CDU supply, progress), erased at the end; needs a terminal (without one the "
                        "run goes on without it); not with --quiet")
    r.add_argument("--accept-weather-gaps", action="store_true",
                   help="interpolate missing-value gaps of the weather file longer than 6 h instead of refusing it "
                        "(cooling.accept_weather_gaps); every gap is still reported")

    s = sub.add_parser("sweep", help="run a policy study (use `mpirun -n N hpctwin sweep ...` to spread it over ranks)",
                       description="Run every scenario of a study file; under mpirun scenarios are spread over the "
                                   "ranks. Writes one HDF5 file per scenario and summary.h5 (rank 0).")
    s.add_argument("study", metavar="STUDY", help="study TOML file (e.g. experiments/theta_policies_weather.toml)")
    s.add_argument("--out", metavar="DIR", help="output folder (default: out/<study name>)")
    s.add_argument("--set", action="append", metavar="KEY=VALUE", dest="set",
                   help="override a key of the study's base run (repeatable; as `run --set`, before the axes)")
    s.add_argument("--timezone", metavar="TZ", help="IANA zone of the trace's local times (sets trace.timezone "
                                                    "of the base run)")
    s.add_argument("--refine-top", type=int, metavar="K",
                   help="after the sweep, re-run the K fast-plant scenarios best in --refine-by with the FMU and "
                        "report the fast-vs-FMU error (summary.h5 /refine); overrides the study's [refine]")
    s.add_argument("--refine-by", metavar="METRIC", help="metric minimised by --refine-top (default E_facility_J)")
    s.add_argument("--refine-pareto", nargs=2, metavar=("A", "B"),
                   help="re-run the Pareto front of two metrics (both minimised) with the FMU instead")

    c = sub.add_parser("compare", help="explain the change from run A to run B, link by link",
                       description="Explain the change in facility energy and PUE from run A to run B along the chain "
                                   "scheduling -> compute energy -> conversion losses -> cooling -> PUE (an exact "
                                   "additive decomposition, see scheduler_sim.analysis.compare), with the jobs and periods "
                                   "that changed most.")
    c.add_argument("a", metavar="A.h5", help="reference run file")
    c.add_argument("b", metavar="B.h5", help="run file to explain against A")
    c.add_argument("--top", type=int, default=10, metavar="N", help="jobs and periods to list (default 10)")
    c.add_argument("--period-h", type=float, default=24.0, metavar="H", help="period length in hours (default 24)")
    c.add_argument("--json", metavar="FILE", help="also write the comparison as JSON")
    c.add_argument("--plot", metavar="DIR", help="also draw the comparison: a waterfall of the links from A's total "
                                                 "to B's, A and B over time, and DIR/report.html")
    c.add_argument("--no-verify", action="store_true",
                   help=NO_VERIFY_HELP)

    rp = sub.add_parser("report", help="plots and a single-file HTML report of a run (or of a sweep's summary.h5)",
                        description="Write PNG and SVG figures and a self-contained HTML report (figures embedded, "
                                    "provenance included) for a run file or a sweep summary file.")
    rp.add_argument("file", metavar="FILE.h5", help="run file, a sweep's summary.h5, or a sweep folder")
    rp.add_argument("--out", metavar="DIR", help="output folder (default: <file stem>_report beside the file)")
    rp.add_argument("--gantt-start-day", type=float, metavar="D",
                    help="start of the node-occupancy window, days after the run start (default 0)")
    rp.add_argument("--gantt-days", type=float, default=3.0, metavar="D", help="node-occupancy window length (default 3)")
    rp.add_argument("--gantt-color", choices=["job", "wait"], default="job",
                    help="node-occupancy colours: a stable colour per job, or the job's wait time (default job)")
    rp.add_argument("--pareto", action="append", metavar="X,Y",
                    help="sweep only: metric pair for a Pareto plot (repeatable; default mean_wait_s,E_facility_J "
                         "and mean_bounded_slowdown,PUE)")
    rp.add_argument("--units", choices=["si", "ip"], default="si",
                    help="units of the report's tables and headroom lines: si (default) or ip, US customary "
                         "(degF, gal, lb); figures keep SI axes")
    rp.add_argument("--no-verify", action="store_true",
                    help=NO_VERIFY_HELP)

    fr = sub.add_parser("frontier", help="the Pareto frontier of a sweep in 2 or 3 metrics: knee, hypervolume, CSV, plot",
                        description="Non-dominated scenarios of a sweep (scheduler_sim.analysis.frontier: metric "
                                    "table with each metric's sense), the knee and the hypervolume against a "
                                    "stated reference. Refuses scenarios of different spans unless --per-day. A "
                                    "sweep with condition axes gets one front per condition.")
    fr.add_argument("sweep", metavar="SWEEP_DIR", help="sweep output folder (or its summary.h5)")
    fr.add_argument("--x", metavar="METRIC", help="x metric (default wait; serving sweeps tokens_per_s_per_user)")
    fr.add_argument("--y", metavar="METRIC", help="y metric (default energy; serving sweeps tokens_per_s_per_gpu)")
    fr.add_argument("--z", metavar="METRIC", help="third metric (shown as colour)")
    fr.add_argument("--colour", metavar="METRIC", help="colour of the points, not part of the front (serving "
                                                         "default: energy_per_token)")
    fr.add_argument("--per-day", action="store_true", help="divide energy, cost, CO2 and water by each span in days")
    fr.add_argument("--ref", type=float, nargs="+", metavar="V", help="hypervolume reference point, shown units "
                                                                       "(default: nadir + 10 %% of each range)")
    fr.add_argument("--across-conditions", action="store_true",
                    help="one front over every scenario, also across conditions (weather, trace axes); default: "
                         "one front per condition, as the sweep report")
    fr.add_argument("--csv", metavar="FILE", help="write the front as CSV")
    fr.add_argument("--plot", metavar="FILE", help="write the figure (PNG or SVG)")

    ex = sub.add_parser("export", help="write one table of an output file as CSV or Parquet (units in the column names)",
                        description="Check an output file (schema and content checksum), then write one of its "
                                    "tables as CSV or Parquet; each column is named '<dataset> [<units>]'.")
    ex.add_argument("file", metavar="FILE.h5", help="run file, cooling-only file or sweep summary.h5")
    ex.add_argument("--table", default="jobs",
                    choices=["jobs", "allocations", "timeseries", "cdu", "rack", "attribution", "requests", "grid",
                             "training", "rl", "scenarios"],
                    help="table to write (default jobs; timeseries = /timeseries/facility with time_s)")
    ex.add_argument("--format", choices=["csv", "parquet"], help="output format (default: from --out's suffix, "
                                                                 "else csv)")
    ex.add_argument("--out", metavar="FILE", help="file to write (default <file stem>_<table>.<format> beside FILE)")
    ex.add_argument("--no-verify", action="store_true", help=NO_VERIFY_HELP)

    ls = sub.add_parser("list", help="list policies, trace loaders, systems, cooling plants, node types or workload "
                                     "families")
    ls.add_argument("what", choices=["policies", "loaders", "systems", "plants", "node-types", "families"],
                    help="what to list")

    st = sub.add_parser("site", help="build (site new) or check (site check) a planner's own site",
                        description="site new NAME writes a system and a plant description sized for the site's "
                                    "design day (docs/site_guide.md); site check NAME prints the derived design and "
                                    "exits 2 when the plant cannot reject the full-load heat.")
    sst = st.add_subparsers(dest="site_command", required=True)
    sn = sst.add_parser("new", help="write <DIR>/<NAME>.toml (system) and <NAME>_plant.toml (plant)")
    sn.add_argument("name", metavar="NAME")
    sn.add_argument("--out", default="sites", metavar="DIR", help="folder to write into (default sites/)")
    sn.add_argument("--partition", action="append", metavar="NAME=NODE_TYPE:COUNT[:NODES_PER_RACK[:RACK_KW]]",
                    help="a partition (repeat for each); node types: hpctwin list node-types")
    sn.add_argument("--cooling", choices=["towers", "chiller", "dry", "hybrid", "air"],
                    help="cooling topology: warm-water towers, chiller-assisted towers, dry coolers, hybrid (dry "
                         "coolers with adiabatic pads); air is refused (the plant cools CDUs with liquid)")
    sn.add_argument("--site", metavar="SITE|EPW", help="shipped site (golden, chicago, knoxville) or an EPW/TMY3 file")
    sn.add_argument("--feed-MW", type=float, help="electrical feed capacity [MW] (default 1.5 x full-load IT)")
    sn.add_argument("--feed-units", type=int, default=2, help="feed units / transformers (default 2)")
    sn.add_argument("--redundancy", choices=["N", "N+1", "2N"], default="N+1", help="feed redundancy (default N+1)")
    sn.add_argument("--margin", type=float, default=0.10, help="sizing margin on the design heat (default 0.10)")
    sn.add_argument("--racks-per-cdu", type=int, help="racks per CDU (default: CDUs of at most 1.2 MW)")
    sn.add_argument("--rack-kW", type=float, default=80.0, help="default rack power limit [kW] (default 80)")
    sc = sst.add_parser("check", help="print a site's derived design; exit 2 if its plant cannot hold full load")
    sc.add_argument("name", metavar="NAME", help="site name (in --dir) or its system TOML file")
    sc.add_argument("--dir", default="sites", metavar="DIR", help="folder of the site's files (default sites/)")

    c = sub.add_parser("cooling", help="cooling-only mode: drive a plant from a measured IT power series",
                       description="Drive the cooling plant FMU from a measured IT power CSV (timestamp_secs, "
                                   "measured_kW), e.g. HLRS Hawk 15-min power, and write an HDF5 file. Leading 0 kW "
                                   "rows are reported and skipped.")
    c.add_argument("power", metavar="POWER_CSV", nargs="?",
                   help="measured IT power series (timestamp_secs, measured_kW); not with --design-day")
    c.add_argument("--plant", help="plant name or TOML file (default frontier; with --design-day the system's plant)")
    c.add_argument("--design-day", action="store_true",
                   help="run the plant at the full-load IT power of --system (every node at maximum power) through "
                        "the design day of its site's weather (the day of the highest mean wet-bulb; the 0.4 %% "
                        "design wet-bulb is printed beside it)")
    c.add_argument("--out", metavar="FILE.h5",
                   help="output HDF5 file (default: out/cooling-<plant>-<first day of the window>.h5)")
    c.add_argument("--step", type=float, default=15.0, metavar="S", help="communication step [s] (default 15)")
    c.add_argument("--days", type=float, metavar="D", help="days to simulate (default: the whole series)")
    c.add_argument("--start-day", type=float, default=0.0, metavar="D", help="days after the first non-zero sample")
    c.add_argument("--scale-to-design", type=float, metavar="F",
                   help="scale the power so its peak is F x the plant's design heat (default: no scaling)")
    c.add_argument("--wet-bulb", type=float, metavar="DEGC", help="constant wet-bulb [degC] (default: Golden TMY3)")
    c.add_argument("--weather", metavar="FILE|SITE", help="EPW or TMY3 weather file or shipped site (golden, "
                                                          "chicago, knoxville), aligned to the series' dates "
                                                          "(default: the site of --system, else golden)")
    c.add_argument("--system", metavar="SYSTEM",
                   help="also count this system description's facility overheads (electrical chain, air side, "
                        "lighting: its [facility] table); default: the PUE counts the liquid plant only")
    c.add_argument("--cells", type=int, metavar="N",
                   help="run N tower cells throughout (1 to the bank's cells, standby included) instead of staging "
                        "them with the supervisory controller of hpctwin run (default): compares fan energy at one "
                        "cell rule")

    v = sub.add_parser("validate", help="load a trace and print its load report; or check an output HDF5 file",
                       description="Load a trace and print what was read, repaired and rejected. Exit status: 0 "
                                   "clean, 1 records repaired or rejected, 2 the file cannot be used. Given an "
                                   "hpctwin output file (HDF5: run, sweep summary.h5, cooling-only), check it "
                                   "against the output schema (docs/output_schema.md) instead: 0 conforms, 1 "
                                   "problems (one line each), 2 unreadable.")
    v.add_argument("trace", metavar="TRACE", help="trace file, or an hpctwin output .h5 file")
    v.add_argument("--format", help="loader name (default: from the suffix)")
    v.add_argument("--cores-per-node", type=int,
                   help="processors per node (SWF); default: the header's MaxProcs / MaxNodes when it is a whole "
                        "number, else 1")
    v.add_argument("--max-nodes", type=int, help="reject jobs larger than this many nodes")
    v.add_argument("--strict", action="store_true", help="turn every repair or rejection into an error (exit 2)")
    v.add_argument("--timezone", metavar="TZ", help="IANA zone of local times (sacct, PM100, F-DATA, ...)")
    v.add_argument("--cache", action="store_true", help="use the parsed-trace cache (HPCTWIN_CACHE_DIR)")
    v.add_argument("--json", action="store_true", help="also print the report as one JSON line")
    v.add_argument("--map", action="append", metavar="KEY=COLUMN",
                   help="request_csv column mapping, repeatable: arrival=, prompt=, output=, prefix=, time_unit=")
    v.add_argument("--no-verify", action="store_true",
                   help=NO_VERIFY_HELP)
    return p


def _version() -> str:
    try:
        return version("hpctwin")
    except PackageNotFoundError:  # running from a source tree that was not installed
        return "(not installed)"



def _early_check(a: argparse.Namespace) -> str | None:
    """The argument errors found without importing numpy, h5py or the chain: a missing input file, ``--quiet``
    with ``--live``. Returns the message, or None.
    """
    from pathlib import Path

    if getattr(a, "quiet", False) and getattr(a, "live", False):
        return "--quiet and --live exclude each other (--quiet draws nothing, --live draws a dashboard)"
    files = {"run": ["config", "trace", "requests"], "sweep": ["study"], "compare": ["a", "b"], "report": ["file"],
             "export": ["file"], "cooling": ["power"], "validate": ["trace"]}.get(a.command, [])
    for attr in files:
        v = getattr(a, attr, None)
        if not v:
            continue
        p = Path(v)
        if a.command == "report" and p.is_dir():
            continue  # a sweep folder (checked for summary.h5 by the command)
        if not p.exists():
            near = _near_files(p)
            return f"{v}: no such file" + (f" (did you mean {near}?)" if near else "")
        if p.is_dir():
            return f"{v}: is a folder, expected a file"
    root = Path(__file__).resolve().parents[2]  # the checkout / site-packages holding power/ and cooling_fmu/
    named = {"system": ("system", root / "power" / "systems", ()),
             "plant": ("plant", root / "cooling_fmu" / "plants", ()),
             "weather": ("weather site", None, ("golden", "chicago", "knoxville", "site", "constant", "tmy3", "file"))}
    for attr, (what, folder, extra) in named.items():
        v = getattr(a, attr, None)
        if not v or a.command not in ("run", "cooling"):
            continue
        v = str(v).strip()
        if "/" in v or "." in v or Path(v).exists():
            continue  # a file: its reader names what is wrong with it
        names = sorted({x.stem for x in folder.glob("*.toml")} if folder is not None and folder.is_dir() else set())
        names += list(extra)
        if names and v not in names:
            import difflib

            near = difflib.get_close_matches(v, names, n=3, cutoff=0.5)
            hint = f"did you mean {' or '.join(repr(n) for n in near)}? " if near else ""
            return f"unknown {what} {v!r}; {hint}(known: {', '.join(names)}; or give a file path)"
    return None


def _near_files(p) -> str:
    """Up to 3 files beside ``p`` whose names are close to its name ("" when none is)."""
    import difflib

    try:
        names = [x.name for x in (p.parent if str(p.parent) else p.cwd()).iterdir()][:2000]
    except OSError:
        return ""
    near = difflib.get_close_matches(p.name, names, n=3, cutoff=0.6)
    return ", ".join(str(p.parent / n) for n in near)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``hpctwin`` command; returns the exit status."""
    parser = build_parser()
    a = parser.parse_args(argv)
    # lazy: the command handlers import numpy, pandas, h5py, fmpy and the whole chain; `hpctwin --help` and argument
    # errors must not pay for that (start-up under 1 s, issue #16)
    early = _early_check(a)  # files and names checked before the heavy imports: an error in well under 1 s
    if early:
        print(f"hpctwin {a.command}: error: {early}", file=sys.stderr)
        return 2
    if a.command == "validate":  # lighter still: an output file needs only h5py and the schema table
        from .validate import cmd_validate as handler
    elif a.command == "export":
        from .export_cmd import cmd_export as handler
    else:
        from . import commands

        handler = {"run": commands.cmd_run, "sweep": commands.cmd_sweep, "compare": commands.cmd_compare,
                   "report": commands.cmd_report, "frontier": commands.cmd_frontier, "list": commands.cmd_list,
                   "cooling": commands.cmd_cooling, "site": commands.cmd_site}[a.command]
    from ..analysis.units import set_unit_system  # pure Python: no start-up cost

    set_unit_system(getattr(a, "units", "si"))  # for this command only (reset below: in-process callers)
    try:
        return _handle(a, handler)
    finally:
        set_unit_system("si")


def _handle(a, handler) -> int:
    """Run a command's handler, turning the expected failures into one line on stderr and an exit status."""
    if getattr(a, "debug", False):
        return handler(a)
    try:
        return handler(a)
    except KeyboardInterrupt:
        print("hpctwin: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `hpctwin validate FILE | head`
        sys.stderr.close()
        return 0
    except (ValueError, OSError, RuntimeError, KeyError) as exc:
        print(f"hpctwin {a.command}: error: {exc}", file=sys.stderr)
        return 2
    except MemoryError:  # the last line of defence: inputs are sized before allocating (jobs.memory)
        print(f"hpctwin {a.command}: error: out of memory (an input larger than this machine or its limits allow; "
              f"--debug shows where)", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - report / compare read files that may be damaged in any way
        if a.command not in ("report", "compare"):
            raise
        from . import commands

        if a.command == "report":
            why = f"{a.file}: {commands.describe_unreadable(a.file, exc)}"
        else:
            why = f"cannot read {a.a} or {a.b}: {type(exc).__name__}: {commands.one_line(exc)}"
        print(f"hpctwin {a.command}: error: {why} (--debug shows the traceback)", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
