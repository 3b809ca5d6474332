"""Plots and a single-file HTML report of a run file, or of a sweep's ``summary.h5``.

``make_report(path)`` writes every figure as PNG and SVG into a folder (default ``<stem>_report`` beside the file)
and ``report.html``, which embeds the PNGs (base64) and the provenance (configuration, input checksums, versions,
load report), so the HTML can be mailed on its own. Figures of a run (names are the file stems):

* ``facility_power`` - facility power stacked by component over time, and the losses + cooling alone;
* ``pue_weather`` - PUE per bin and cumulative, with the outdoor wet-bulb temperature;
* ``cdu_heatmap`` - heat per CDU and CDU supply temperature, time x CDU;
* ``utilisation_queue`` - utilisation and queue length;
* ``occupancy`` - node occupancy in a window (``gantt_start_day``, ``gantt_days``) from ``/allocations``: node index
  (grouped by CDU, racks marked) x time, one rectangle per allocation run, coloured by job or by wait time; files
  without ``/allocations`` fall back to job blocks packed by start time, marked as approximate;
* ``wait_vs_size`` - wait time against job size;
* ``energy_breakdown`` - energy by component and the jobs' effective PUE (from ``/attribution``).

A sweep gets one Pareto plot per metric pair (``pareto_<x>__<y>``) and a scenario table.
"""

from __future__ import annotations

import base64
import io
import json
import re
import shutil
import sys
import tomllib
from pathlib import Path

import h5py
import numpy as np

from power import load_system

from jobs.cachedirs import atomic_output, atomic_write_bytes

from ...io.hdf5 import DamagedFileError, check_output, check_schema, describe_unreadable
from ...kernel.progress import Spinner
from ..attribution import DEFAULT_T_SUPPLY_LIMIT_K, T_SUPPLY_TOLERANCE_K, load_result, read_attribution
from ..limits import ashrae_class, supply_limit, supply_limit_of_plant
from .catalogue import describe, format_value, grouped_rows

__all__ = ["make_report", "make_compare_report", "RUN_FIGURES"]

RUN_FIGURES = ("facility_power", "pue_weather", "cdu_heatmap", "utilisation_queue", "occupancy", "wait_vs_size",
               "energy_breakdown")
DEFAULT_PARETO = (("mean_wait_s", "E_facility_J"), ("mean_bounded_slowdown", "PUE"))

#: Folder of the Jinja2 templates (package data): ``base.html.j2`` (the page, with blocks), ``macros.html.j2`` and one
#: child per report kind (``run``, ``cooling``, ``sweep``).
TEMPLATES = Path(__file__).with_name("templates")


def _environment():
    """The Jinja2 environment of the reports: autoescape on for every template, undefined names are errors."""
    import jinja2  # imported only when a report is written

    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True,
                              undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                              keep_trailing_newline=True)


def render(template: str, **context) -> str:
    """Render one report template with autoescape: every value in ``context`` is HTML-escaped where it is inserted.

    No value is marked safe: figures are embedded as base64 text, so the page holds no markup that did not come from
    a template.

    Parameters
    ----------
    template : str
        Template file name in :data:`TEMPLATES` (e.g. ``"run.html.j2"``).
    **context
        The values the template shows (plain strings, numbers, lists of rows).

    Returns
    -------
    str
        The HTML page.
    """
    # the file check's warnings (partial run, read unverified) open every page, in a red banner (issue #21 kind 7)
    return _environment().get_template(template).render(**{"file_warnings": list(_FILE_WARNINGS), **context})


#: The progress line of the report being written (a Spinner; None when silent). Set by make_report.
_SPINNER = None
#: Warnings of the file being reported (:func:`scheduler_sim.io.hdf5.check_output`), shown first on the page.
_FILE_WARNINGS: list[str] = []


def _save(fig, out_dir: Path, name: str) -> bytes:
    """Write a figure as PNG and SVG (each whole or not at all, through the one writer); return the PNG's bytes.

    The page embeds these bytes, not the file read back by name (another user who can write the folder could have
    replaced it).
    """
    import matplotlib.pyplot as plt  # heavy (matplotlib): imported only when a report is drawn

    from .figures import layout_problems

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    png = buf.getvalue()
    _LAYOUT[name] = layout_problems(fig)  # shown on the page (data-overflow, data-empty) for the browser test
    atomic_write_bytes(out_dir / f"{name}.png", png, what="figure")
    with atomic_output(out_dir / f"{name}.svg", what="figure") as fh:
        fig.savefig(fh, format="svg")
    plt.close(fig)
    if _SPINNER is not None:
        _SPINNER.step(1, desc=f"report: saved {name}")
    return png


#: Per saved figure: texts that run off it and empty panels (:func:`figures.layout_problems`), for the page.
_LAYOUT: dict[str, dict[str, list[str]]] = {}


def _img(png: bytes, name: str, caption: str) -> dict[str, str]:
    """One figure for the templates: its name, caption, PNG as base64 text and layout problems (``|``-joined)."""
    lay = _LAYOUT.get(name, {})
    return {"name": name, "caption": caption, "b64": base64.b64encode(png).decode("ascii"),
            "overflow": " | ".join(lay.get("overflow", [])), "empty": " | ".join(lay.get("empty", []))}


def _text(v) -> str:
    """A value read from a file, as text (bytes decoded; nothing else changed: the template escapes it)."""
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


def _pretty(obj) -> str:
    """JSON text (a file attribute holding JSON) pretty-printed, other text as it is; escaped by the template."""
    if isinstance(obj, (str, bytes)):
        try:
            obj = json.loads(obj)
        except ValueError:
            return _text(obj)
    return json.dumps(obj, indent=2, sort_keys=True, default=str)


def _seed(attrs: dict, path: Path) -> int:
    """The run's ``seed`` attribute, checked to be an integer (a crafted file is refused, naming the file)."""
    v = attrs.get("seed", 0)
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise DamagedFileError(f"{path}: root attribute 'seed' is {_text(v)[:60]!r} ({type(v).__name__}), expected "
                               f"an integer; the file was not written by hpctwin as it is, so it is not reported")
    return int(v)


#: Summary keys that describe the facility beyond IT; left out of a report when no plant was modelled.
FACILITY_ONLY = ("E_facility_J", "E_cooling_J", "mean_P_facility_W", "peak_P_facility_W",
                 "peak_P_facility_measured_W", "PUE", "TUE", "EDP_Js", "ED2P_Js2", "water_makeup_kg",
                 "WUE_L_per_kWh")


def _metric_tables(summary: dict[str, float], batch: bool = True) -> dict:
    """The metric tables for the templates: one per group (schedule, energy, cooling, water, ...), rows of human
    name, value, unit, definition; ``no_plant`` when no cooling plant was modelled (facility figures left out);
    ``no_batch`` when the run had no batch job (the schedule group, all zeros and NaN then, is left out).
    """
    pue = summary.get("PUE", float("nan"))
    no_plant = not (isinstance(pue, float) and np.isfinite(pue))
    if no_plant:  # no plant: facility figures are not defined
        summary = {k: v for k, v in summary.items() if k not in FACILITY_ONLY}
    groups = [(group, rows) for group, rows in grouped_rows(summary) if batch or group != "schedule"]
    return {"no_plant": no_plant, "no_batch": not batch,
            "groups": [(group.capitalize(), [tuple(_text(c) for c in r) for r in rows]) for group, rows in groups]}


def make_report(path: str | Path, out_dir: str | Path | None = None, *, gantt_start_day: float = 0.0,  # noqa: DOC503
                gantt_days: float = 3.0, gantt_color: str = "job",
                pareto: list[tuple[str, str]] | None = None, progress: bool = False,
                allow_unverified: bool = False) -> Path:
    """Write the figures (PNG + SVG) and ``report.html`` of a run file or a sweep summary.

    Parameters
    ----------
    path : str | Path
        Run file or sweep ``summary.h5``.
    out_dir : str | Path | None
        Output folder (created); default ``<stem>_report`` beside ``path``.
    gantt_start_day : float
        Start of the occupancy view [days after the run start].
    gantt_days : float
        Length of the occupancy view [days].
    gantt_color : str
        Colour of the occupancy rectangles: "job" (a stable colour per job) or "wait" (the job's wait time).
    pareto : list[tuple[str, str]] | None
        Sweep only: metric pairs (summary.h5 ``/scenarios`` datasets) for the Pareto plots.
    progress : bool
        Show a progress line on stderr (figures saved, elapsed time); the CLI sets it on a terminal.
    allow_unverified : bool
        Accept a file without ``content_sha256`` (``--no-verify``); the page then opens with a red warning, as it
        does for a partial run (``complete = false``).

    Returns
    -------
    Path
        The HTML file.

    Raises
    ------
    scheduler_sim.io.hdf5.SchemaError
        If the file is not an hpctwin run or sweep-summary file of a compatible schema.
    scheduler_sim.io.hdf5.DamagedFileError
        If the file is missing, not HDF5, unreadable, or does not match its recorded ``content_sha256``.
    KeyError
        If a Pareto metric is not in the sweep summary.
    ValueError
        If ``gantt_color`` is neither "job" nor "wait".
    """
    path = Path(path)
    out = Path(out_dir) if out_dir else path.with_name(f"{path.stem}_report")
    if gantt_color not in ("job", "wait"):
        raise ValueError(f"gantt_color must be 'job' or 'wait', not {gantt_color!r}")
    global _FILE_WARNINGS
    check = check_output(path, allow_unverified=allow_unverified)  # first: nothing is read before it
    _FILE_WARNINGS = list(check.warnings)
    for w in check.warnings:  # loudly: on the terminal as well as on the page
        print(w, file=sys.stderr)
    try:
        with h5py.File(path, "r") as f:
            check_schema(f, path)
            kind = f.attrs.get("kind", "run")
    except Exception as exc:  # noqa: BLE001 - SchemaError passes through; anything else is a damaged file
        if isinstance(exc, ValueError):
            raise
        raise DamagedFileError(f"{path}: {describe_unreadable(path, exc)}") from exc
    kind = kind.decode() if isinstance(kind, bytes) else str(kind)
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    global _SPINNER
    try:
        _SPINNER = Spinner("report: reading and drawing", enabled=progress).__enter__()
        if kind == "sweep-summary":
            return _sweep_report(path, out, list(pareto) if pareto else list(DEFAULT_PARETO))
        if kind == "cooling_standalone":
            return _cooling_report(path, out)
        return _run_report(path, out, gantt_start_day, gantt_days, gantt_color)
    except BaseException:
        if created:  # a failed report leaves no folder behind (a folder it did not create is left as it was)
            shutil.rmtree(out, ignore_errors=True)
        raise
    finally:
        if _SPINNER is not None:
            _SPINNER.__exit__(None, None, None)
        _SPINNER = None
        _FILE_WARNINGS = []
        _LAYOUT.clear()


def _run_report(path: Path, out: Path, gantt_start_day: float, gantt_days: float, gantt_color: str = "job") -> Path:
    from . import figures as F  # heavy (matplotlib): imported only when a report is drawn

    res = load_result(path, verify=False)  # checked by make_report
    seed = _seed(res.attrs, path)  # checked before anything is drawn
    att = read_attribution(path, verify=False)
    ts = att.timeseries
    tax = F.TimeAxis(res.time_s, res.time_origin_unix_s)
    n_nodes = int(json.loads(res.provenance.get("info_json", "{}")).get("n_nodes", 0)) or _n_nodes(res)
    pue_run = res.summary.get("PUE", float("nan"))
    T_lim = float(att.attrs.get("T_supply_limit_K", DEFAULT_T_SUPPLY_LIMIT_K))  # the plant's (the runner writes it)
    T_tol = float(att.attrs.get("T_supply_tolerance_K", 0.0))
    w_class = ashrae_class(T_lim)
    cooled_run = bool(np.isfinite(pue_run))
    run_t0, run_t1 = _run_span(res)
    t0 = run_t0 + gantt_start_day * 86400.0
    t1 = min(t0 + gantt_days * 86400.0, run_t1)  # a 1-hour run gets a 1-hour window, not 3 days of nothing
    batch = _batch_jobs(res.jobs)
    serving = _serving(path)
    n_serving = int(serving["nodes"].size) if serving is not None else 0
    figs = {
        "facility_power": (F.power_stack(ts, tax),
                           "Facility power stacked by component (top, MW); conversion losses and cooling alone "
                           "(bottom, kW). The stack's top is the facility power."),
        "pue_weather": (F.pue_weather(ts, res.facility.get("T_wb_K"), tax, pue_run),
                        "PUE [-] per time bin (ratio of binned energies) and cumulative since the run start; the "
                        "wet-bulb temperature the cooling towers see [degC] on the right axis."),
        "cdu_heatmap": (F.cdu_heatmap(res.cdu["Q_flow_W"], res.cdu.get("T_sec_sup"), tax, T_lim, T_tol, w_class),
                        f"Heat delivered to each CDU (kW) and the share of each time bin its supply to the racks is "
                        f"above the plant's limit, {T_lim - 273.15:.1f} degC (its set point, ASHRAE {w_class}), + "
                        f"{T_tol:g} K [%]."),
    }
    if batch:  # sections of batch jobs only when the run has some (a serving-only run has none)
        figs["utilisation_queue"] = (F.utilisation_queue(res.facility, n_nodes, tax, serving_nodes=n_serving),
                                     "Share of nodes running a batch job" + (" or reserved for the serving partition"
                                                                             if n_serving else "")
                                     + " [%], and the number of queued and running jobs [jobs].")
    if serving is not None:
        figs.update(_serving_figures(serving, tax))
    if batch:
        if t1 > t0:
            figs["occupancy"] = _occupancy(path, res, n_nodes, t0, t1, tax, gantt_color)
        figs["wait_vs_size"] = (F.wait_vs_size(res.jobs),
                                "Wait time [h] against job size [nodes], coloured by run time [h]; black bars are the "
                                "median per size.")
    has_job_energy = bool(np.any(np.asarray(att.jobs["E_it_J"]) > 0)) if len(res.jobs) else False
    figs["energy_breakdown"] = (
        F.energy_breakdown(att.totals, np.asarray(att.jobs["PUE_effective"]), np.asarray(att.jobs["E_it_J"]),
                           float(att.pseudo["PUE_effective"][0]), pue_run),
        "Energy of the run by component [MWh] (linear bars, values written beside them)"
        + (", and the effective PUE [-] of the jobs, each job weighted by its IT energy [MWh] (cooling attributed by "
           "heat share per interval)." if has_job_energy and cooled_run else "."))
    if "node_power_model_W" in res.jobs:  # the run used measured job power: compare it with the model
        figs["power_measured_vs_model"] = F.measured_vs_model(res.jobs)
    parts = []
    for name, (fig, cap) in figs.items():
        parts.append(_img(_save(fig, out, name), name, cap))

    a = res.attrs
    cooled = bool(np.isfinite(res.summary.get("PUE", float("nan"))))
    atot = [(m.label, format_value(k, v, m), m.unit) for k, v in att.totals.items() for m in (describe(k, v),)
            if cooled or k not in FACILITY_ONLY]
    jf = att.jobs_frame(res.jobs["job_id"].to_numpy())
    top = jf.sort_values("E_facility_J", ascending=False).head(10)
    top_rows = [(int(i), int(n), f"{r['E_it_J'] / 3.6e9:,.3f}", f"{r['E_cooling_J'] / 3.6e9:,.4f}",
                 f"{r['E_facility_J'] / 3.6e9:,.3f}", f"{r['PUE_effective']:.5f}")
                for (i, r), n in zip(top.iterrows(), res.jobs.set_index("job_id").loc[top.index, "nodes"])]
    cdu_rows = [(c, f"{att.cdu['E_heat_J'][c] / 3.6e9:,.2f}", f"{att.cdu['E_cooling_J'][c] / 3.6e9:,.3f}",
                 f"{att.cdu['T_supply_max_K'][c] - 273.15:.2f}", f"{att.cdu['time_above_limit_s'][c] / 3600:.2f}")
                for c in range(len(att.cdu["E_heat_J"]))]
    prov = res.provenance
    page = render(
        "run.html.j2", run_name=_text(a.get("run_name", path.stem)), file=str(path), system=_text(a.get("system")),
        policy=_text(a.get("policy")), seed=seed, schema_version=_text(a.get("schema_version")),
        software_version=_text(a.get("software_version")), git_sha=_text(a.get("git_sha")),
        created=_text(prov.get("created")), pue_definition=_text(a.get("pue_definition", "")),
        metrics=_metric_tables(res.summary, batch=bool(batch)), figures=parts, training=_training_rows(res),
        monthly=_monthly(path, res, ts), workload=_workload_tables(path),
        headline=_headline(res.summary, att, T_lim, T_tol, w_class, bool(batch), serving is not None,
                           _member_bands(path, _text(a.get("run_name", path.stem)))),
        headline_header=_headline_header(path, _text(a.get("run_name", path.stem))),
        conversion_split=_text(att.attrs.get("conversion_split")),
        closure=f"{att.totals.get('closure_rel_error', float('nan')):.1e}",
        totals=[tuple(_text(c) for c in r) for r in atot], top_jobs=top_rows, cdus=cdu_rows,
        cdu_limit_header=f"time above {T_lim - 273.15:.1f} degC ({w_class}) + {T_tol:g} K [h]", headroom=_headroom_text(res),
        fast_check=_fast_check_text(prov),
        provenance=[("Configuration", _pretty(a.get("config_json", "{}"))),
                    ("Input checksums (SHA-256)", _pretty(prov.get("input_checksums_json", "{}"))),
                    ("Versions", _pretty(prov.get("versions_json", "{}"))),
                    ("Run information", _pretty(prov.get("info_json", "{}"))),
                    ("Trace load report", _pretty(prov.get("load_report_json", "{}")))])
    return _write_html(out, page)


def _run_span(res) -> tuple[float, float]:
    """Simulated span of a run [s]: the first interval's start to the last interval's end."""
    t = np.asarray(res.time_s, dtype=float)
    dt = float(t[1] - t[0]) if t.size > 1 else 0.0
    return (float(t[0]), float(t[-1]) + dt) if t.size else (0.0, 0.0)


def _batch_jobs(jobs) -> int:
    """Number of batch jobs of a run (rows of ``/jobs``; 0 in a serving-only or cooling-less serving run)."""
    return int(len(jobs)) if jobs is not None else 0


def _serving(path: Path) -> dict | None:
    """The ``/serving`` group of a run file (requests, power, SLOs, deployment), or None when it has none."""
    with h5py.File(path, "r") as f:
        if "serving" not in f:
            return None
        g = f["serving"]
        req = {k: g["requests"][k][()] for k in ("ttft_s", "tpot_s", "e2e_s", "status", "first_token_s", "finish_s",
                                                 "output_tokens", "slo_met") if k in g["requests"]}
        pw = g["power"]
        out = {"requests": req, "t_s": pw["time_s"][()], "P_gpu_W": pw["P_gpu_W"][()], "P_node_W": pw["P_node_W"][()],
               "nodes": pw["nodes"][()], "ttft_slo_s": float(g.attrs.get("ttft_slo_s", float("nan"))),
               "tpot_slo_s": float(g.attrs.get("tpot_slo_s", float("nan"))),
               "origin": float(g.attrs.get("time_origin_unix_s", float("nan"))),
               "deployment": _json(g.attrs.get("deployment_json", "{}")), "router": _text(g.attrs.get("router", ""))}
        cfg = _json(f.attrs.get("config_json", "{}"))
    # simulation time of request-trace time 0, as the runner places the partition (app/runner.py: t_serv)
    try:
        out["offset_s"] = (float((cfg.get("trace") or {}).get("window_start_days", 0.0)) * 86400.0
                           + float((cfg.get("serving") or {}).get("offset_s", 0.0)))
    except (TypeError, ValueError):
        out["offset_s"] = 0.0
    dep = out["deployment"]
    replicas = int(dep.get("replicas", out["P_gpu_W"].shape[1] if out["P_gpu_W"].ndim == 2 else 1))
    n_pre = int((dep.get("disaggregation") or {}).get("prefill_replicas", 0) or 0)
    out["roles"] = (["prefill"] * n_pre + ["decode"] * (replicas - n_pre)) if n_pre else ["prefill + decode"] * replicas
    out["tp"] = int(dep.get("tensor_parallel", 1))
    out["n_gpus"] = replicas * out["tp"]
    out["gpu_max_W"] = (dep.get("gpu") or {}).get("max_power_W")
    return out


def _json(v) -> dict:
    try:
        d = json.loads(_text(v))
    except ValueError:
        return {}
    return d if isinstance(d, dict) else {}


def _serving_figures(sv: dict, tax) -> dict:
    """The serving partition's figures (latency against the SLOs, goodput and tokens/s, power per replica)."""
    from . import figures as F  # heavy (matplotlib): imported only when a report is drawn

    dep = sv["deployment"]
    what = f"{dep.get('name', 'deployment')}: {sv['n_gpus']} GPUs, {len(sv['roles'])} replicas x TP{sv['tp']}"
    return {
        "serving_latency": (F.serving_latency(sv["requests"], sv["ttft_slo_s"], sv["tpot_slo_s"]),
                            f"Distributions (CDF [-]) of time to first token [s], time per output token [ms] and "
                            f"end-to-end latency [s] of the completed requests ({what}), with p50 / p90 / p99 and "
                            f"the SLOs (TTFT {sv['ttft_slo_s']:g} s, TPOT {sv['tpot_slo_s'] * 1e3:g} ms) in red."),
        "serving_throughput": (F.serving_throughput(sv["requests"], sv["n_gpus"], tax.origin, sv["offset_s"]),
                               "Goodput (requests completed within both SLOs per second [req/s]) beside all "
                               "completions, and output tokens per second per GPU [tokens/s] over time (UTC)."),
        "serving_power": (F.serving_power(sv["t_s"], sv["P_gpu_W"], sv["roles"], sv["tp"], sv["P_node_W"], tax,
                                          sv["gpu_max_W"]),
                          "Power of each GPU of each serving replica [W], by the phase it serves (prefill, decode "
                          "or both), and the DC power of the partition's nodes [kW] (GPUs, host baseline, fans, "
                          "KV links)."),
    }


def _ensemble_of_member(path: Path, run_name: str):
    """(bands, scenario) when ``path`` is a member of an ensemble sweep (``summary.h5`` beside it with
    ``/ensemble`` naming the member's scenario, ``<scenario>_m<kkk>``), else None.
    """
    from .sweep_table import ensemble_bands

    m = re.fullmatch(r"(.+)_m\d{3}(?:_fmu)?", run_name)
    summary = Path(path).parent / "summary.h5"
    if m is None or not summary.is_file():
        return None
    try:
        bands = ensemble_bands(summary)
    except (OSError, KeyError, ValueError):
        return None
    if bands is None or m.group(1) not in bands.scenarios:
        return None
    return bands, m.group(1)


def _member_bands(path: Path, run_name: str) -> dict[str, tuple[float, float, float]] | None:
    """Headline key -> ``(mean, p05, p95)`` of the member's scenario over its ensemble (None: not a member)."""
    found = _ensemble_of_member(path, run_name)
    if found is None:
        return None
    bands, scen = found
    return {k: b for k in bands.stats for b in (bands.of(scen, k),) if b is not None and np.isfinite(b[0])}


def _headline_header(path: Path, run_name: str) -> tuple[str, ...]:
    """Columns of the headline table: a third, the ensemble's band, for a member of an ensemble sweep."""
    found = _ensemble_of_member(path, run_name)
    if found is None:
        return ("", "value")
    bands, scen = found
    return ("", "this run", f"ensemble {scen}: mean (5 % .. 95 %) of {bands.members} members")


def _headline(summary: dict, att, T_lim: float, T_tol: float, w_class: str, batch: bool, serving: bool,
              bands: dict[str, str] | None = None) -> list:
    """The figures a planner reads first: energy, PUE, peak power, wait or serving latency, and the CDU supply
    against the plant's limit (peak and hours above). Rows of (what, value with its unit), and with ``bands`` (a
    member of an ensemble sweep: :func:`_member_bands`) a third cell, the scenario's 5-95 % band.
    """
    from .catalogue import format_with_unit

    # without a cooling plant (PUE not finite) there are no facility figures: the headline gives IT energy instead
    cooled = np.isfinite(float(summary.get("PUE", float("nan"))))
    keys = ["E_facility_J", "PUE", "peak_P_facility_W"] if cooled else ["E_it_J"]
    keys += ["mean_wait_s", "utilisation"] if batch else []
    keys += ["serving_goodput_req_s", "serving_ttft_p99_s", "serving_tpot_p99_s", "serving_slo_attainment",
             "serving_tokens_per_s_per_gpu"] if serving else []
    keys += ["grid_cost", "grid_co2_t", "WUE_L_per_kWh"]
    rows = []
    for k in keys:
        v = summary.get(k)
        if v is None or not np.isfinite(float(v)):
            continue
        rows.append((describe(k, v).label, format_with_unit(k, v)) if bands is None else
                    (describe(k, v).label, format_with_unit(k, v), _band_cell(k, v, bands.get(k))))
    T_max = np.asarray(att.cdu.get("T_supply_max_K", []), dtype=float)
    if T_max.size and np.any(np.isfinite(T_max)):
        c = int(np.nanargmax(T_max))
        above = np.asarray(att.cdu.get("time_above_limit_s", np.zeros(T_max.size)), dtype=float)
        rows.append(("peak CDU supply", f"{T_max[c] - 273.15:.2f} degC (CDU {c}); limit {T_lim - 273.15:.1f} degC "
                                        f"({w_class}, the plant's set point) + {T_tol:g} K: {np.nanmax(above) / 3600:.2f}"
                                        f" h above (most of any CDU)") + (() if bands is None else ("-",)))
    return rows


def _band_cell(key: str, value: float, band: tuple[float, float, float] | None) -> str:
    """``"mean (p05 .. p95) unit"`` in the unit the run's own value is shown in; ``-`` without a band."""
    from .sweep_table import band_text

    if band is None:
        return "-"
    shown = describe(key, value)
    return band_text(key, *band, shown) + (f" {shown.unit}" if shown.unit else "")


def _monthly(path: Path, res, ts) -> dict | None:
    """The monthly table (:mod:`scheduler_sim.analysis.monthly`) of a run longer than a month, else None."""
    from ..monthly import monthly_table

    grid_ts = None
    with h5py.File(path, "r") as f:
        if "grid/timeseries" in f:
            g = f["grid/timeseries"]
            grid_ts = {k: g[k][()] for k in g if isinstance(g[k], h5py.Dataset) and g[k].ndim == 1}
    cur = ""
    try:
        cur = str(json.loads(res.provenance.get("info_json", "{}")).get("grid_currency", ""))
    except ValueError:
        pass
    mt = monthly_table(res.time_s, res.time_origin_unix_s, ts["P_facility_W"], ts["P_it_W"],
                       res.facility.get("m_flow_makeup"), grid_ts, cur)
    return None if mt is None else {"header": mt.header, "rows": mt.rows}


def _workload_tables(path: Path) -> dict:
    """The ``/workload`` reports of a run (issue #24): training jobs (iteration time, MFU, iteration power,
    checkpoints, failures, ETTR, goodput) and RL pipelines, as rows for the templates; empty when absent.
    """
    def col(g, k):
        a = g[k][()]
        return [x.decode("utf-8", "replace") if isinstance(x, bytes) else x for x in a]

    out = {"training_header": (), "training": [], "rl_header": (), "rl": []}  # every key, for the strict templates
    with h5py.File(path, "r") as f:
        if "workload/training" in f and "job_id" in f["workload/training"]:
            g = f["workload/training"]
            c = {k: col(g, k) for k in g if isinstance(g[k], h5py.Dataset)}
            n = len(c["job_id"])

            def v(k, i, fmt, scale=1.0):
                x = c.get(k, [float("nan")] * n)[i]
                try:
                    return format(float(x) * scale, fmt) if np.isfinite(float(x)) else "n/a"
                except (TypeError, ValueError):
                    return _text(x)

            out["training_header"] = ("job id", "model", "GPUs", "iteration [s]", "MFU [%]", "node power mean / "
                                      "compute / low [W]", "checkpoints", "failures", "ETTR [%]",
                                      "goodput [iter/s]", "facility energy [MWh]")
            out["training"] = [(int(c["job_id"][i]), _text(c.get("model", [""] * n)[i]), v("gpus", i, ",.0f"),
                                v("t_iter_s", i, ".3f"), v("mfu", i, ".1f", 100.0),
                                f"{v('P_node_mean_W', i, ',.0f')} / {v('P_node_compute_W', i, ',.0f')} / "
                                f"{v('P_node_low_W', i, ',.0f')}", v("n_checkpoints", i, ",.0f"),
                                v("n_failures", i, ",.0f"), v("ettr", i, ".2f", 100.0),
                                v("goodput_iter_per_s", i, ".4f"), v("E_facility_J", i, ",.3f", 1 / 3.6e9))
                               for i in range(min(n, 50))]
        if "workload/rl" in f and "name" in f["workload/rl"]:
            g = f["workload/rl"]
            c = {k: col(g, k) for k in g if isinstance(g[k], h5py.Dataset)}
            n = len(c["name"])

            def r(k, i, fmt, scale=1.0):
                x = c.get(k, [float("nan")] * n)[i]
                return format(float(x) * scale, fmt) if np.isfinite(float(x)) else "n/a"

            out["rl_header"] = ("pipeline", "model", "mode", "steps", "mean step [s]", "samples/s [1/s]",
                                "idle rollout / reward / trainer [%]", "GPU energy per sample [J]")
            out["rl"] = [(_text(c["name"][i]), _text(c.get("model", [""] * n)[i]), _text(c.get("mode", [""] * n)[i]),
                          r("steps", i, ",.0f"), r("mean_step_s", i, ".2f"), r("samples_per_s", i, ".3f"),
                          f"{r('idle_rollout', i, '.1f', 100)} / {r('idle_reward', i, '.1f', 100)} / "
                          f"{r('idle_trainer', i, '.1f', 100)}", r("J_per_sample_gpu", i, ",.1f"))
                         for i in range(min(n, 50))]
    return out


def _training_rows(res) -> list[tuple]:
    """Rows of the training-job table: the jobs the ``[[workload]]`` tables generated (queue ``training``, or the
    account of a workload name), with their nodes, run time and energy; [] when the run has none.
    """
    jobs = res.jobs
    if jobs is None or not len(jobs) or "queue" not in jobs:
        return []
    try:
        names = {str(w.get("name", "")) for w in (json.loads(res.config_json).get("workload") or [])}
    except (ValueError, AttributeError):
        names = set()
    q = jobs["queue"].astype(str)
    acct = jobs["account"].astype(str) if "account" in jobs else q
    sel = jobs[(q == "training") | acct.isin(names - {""})]
    rows = []
    for _, r in sel.head(50).iterrows():
        e = float(r.get("energy_dc_J", float("nan")))
        rows.append((int(r["job_id"]), _text(r.get("account", "")), int(r["nodes"]),
                     f"{float(r['run_s']) / 3600:,.2f}" if np.isfinite(float(r["run_s"])) else "n/a",
                     f"{float(r['wait_s']) / 3600:,.2f}" if np.isfinite(float(r.get("wait_s", float('nan')))) else
                     "n/a", f"{e / 3.6e9:,.3f}" if np.isfinite(e) else "n/a"))
    return rows


def _cooling_report(path: Path, out: Path) -> Path:
    """Report of a cooling-only file (``hpctwin cooling``): power by component, PUE with weather, CDU maps."""
    from . import figures as F  # heavy (matplotlib): imported only when a report is drawn

    with h5py.File(path, "r") as f:
        a = dict(f.attrs)
        t = f["timeseries/time_s"][()]
        fac = {k: f["timeseries/facility"][k][()] for k in f["timeseries/facility"]}
        cdu = {k: f["timeseries/cdu"][k][()] for k in f["timeseries/cdu"]}
        summary = {k: float(v) for k, v in f["summary"].attrs.items()} if "summary" in f else {}
        prov = {k: (v.decode() if isinstance(v, bytes) else str(v)) for k, v in f["provenance"].attrs.items()} \
            if "provenance" in f else {}
    origin = float(a.get("time_origin_unix_s", float("nan")))
    tax = F.TimeAxis(t, origin)
    zero = np.zeros(len(t))
    ts = {"P_node_dc_W": fac.get("P_it_W", zero),
          "P_cdu_pump_W": cdu["P_pump_sec"].sum(axis=1) if "P_pump_sec" in cdu else zero,
          "P_facility_pump_W": fac.get("P_pump_fac", zero), "P_tower_pump_W": fac.get("P_pump_tower", zero),
          "P_tower_fan_W": fac.get("P_fan_tower", zero),
          "P_chiller_W": fac.get("P_chiller", zero)}
    ts["P_it_W"] = ts["P_node_dc_W"]
    ts["P_facility_W"] = ts["P_it_W"] + fac.get("P_cooling", zero)
    with np.errstate(invalid="ignore", divide="ignore"):
        ts["PUE_cumulative"] = np.cumsum(ts["P_facility_W"]) / np.cumsum(ts["P_it_W"])
    pue = summary.get("PUE", float("nan"))
    figs = {
        "facility_power": (F.power_stack(ts, tax),
                           "Measured IT power (blue, MW, as read from the power series) and the modelled cooling "
                           "power by component (bottom, kW); the stack's top is IT + cooling."),
        "pue_weather": (F.pue_weather(ts, fac.get("T_wb_K"), tax, pue),
                        "Mechanical PUE (IT + cooling) / IT per time bin and cumulative; wet-bulb temperature "
                        "(degC) on the right axis."),
    }
    if "Q_flow_hx" in cdu:
        lim = _plant_limit(_text(a.get("plant", "")))
        figs["cdu_heatmap"] = (F.cdu_heatmap(cdu["Q_flow_hx"], cdu.get("T_sec_sup"), tax, lim.T_limit_K,
                                             T_SUPPLY_TOLERANCE_K, lim.w_class),
                               f"Heat removed by each CDU's heat exchanger (kW) and the share of each time bin its "
                               f"supply is above {lim.describe()} + {T_SUPPLY_TOLERANCE_K:g} K [%].")
    parts = [_img(_save(fig, out, name), name, cap) for name, (fig, cap) in figs.items()]
    page = render("cooling.html.j2", plant=_text(a.get("plant", "")), file=str(path),
                  step=f"{float(a.get('step_s', float('nan'))):g}", metrics=_metric_tables(summary), figures=parts,
                  provenance=[(_text(k), _pretty(v)) for k, v in prov.items()])
    return _write_html(out, page)


def _plant_limit(plant: str):
    """The supply limit of a cooling-only file's plant (its set point); the W27 default when it cannot be loaded."""
    from cooling_fmu.params import load_plant_params

    try:
        return supply_limit_of_plant(load_plant_params(plant), plant)
    except Exception:  # noqa: BLE001 - an unknown or moved plant file degrades to the stated default
        return supply_limit(DEFAULT_T_SUPPLY_LIMIT_K, None, f"{plant or '?'} not loadable: default")


def _occupancy(path: Path, res, n_nodes: int, t0: float, t1: float, tax, color_by: str):
    """The occupancy figure and its caption: exact from ``/allocations``, else the packed fallback."""
    from . import figures as F  # heavy (matplotlib): imported only when a report is drawn

    with h5py.File(path, "r") as f:
        alloc = {k: f["allocations"][k][()] for k in f["allocations"]} if "allocations" in f else None
        system_name = str(f.attrs.get("system", ""))
    days = (t1 - t0) / 86400.0
    span = f"{days:g} days" if days >= 1 else f"{days * 24:.3g} h"
    if alloc is None:
        return (F.occupancy_packed(res.jobs, n_nodes, t0, t1, tax),
                f"Node occupancy over {span} as job blocks (height = nodes, time in [UTC]) packed first-fit by "
                f"start time. "
                "APPROXIMATE: this file has no /allocations, so the busy-node count is exact at every instant but "
                "the node positions are not.")
    system = _system(system_name, res)
    t_span = (float(res.time_s[0]), float(res.time_s[-1]) + (float(res.time_s[1] - res.time_s[0])
                                                             if len(res.time_s) > 1 else 0.0))
    down = np.asarray(res.facility.get("down_nodes", np.zeros(len(res.time_s))), dtype=float)
    in_win = (res.time_s >= t0) & (res.time_s < t1)
    down_max = float(down[in_win].max()) if in_win.any() else 0.0
    fig = F.occupancy_allocations(alloc, system.n_nodes if system else n_nodes, t0, t1, tax, jobs=res.jobs,
                                  node_rack=system.node_rack if system else None,
                                  node_cdu=system.node_cdu if system else None, color_by=color_by,
                                  run_span_s=t_span, down_nodes_max=down_max)
    where = ("nodes in index order, grouped by CDU (solid lines) and rack (dotted lines)" if system else
             f"node index (system {system_name!r} not found, so no CDU / rack marks)")
    colour = ("a stable colour per job id" if color_by == "job" else
              "the job's wait before its first start (log scale; grey: running when the simulation started, wait "
              "unknown)")
    return (fig, f"Which nodes ran which job over {span} (from /allocations, exact): y = {where} [node index], "
                 f"x = time [UTC]; "
                 f"one rectangle per run of consecutive nodes of a job attempt, coloured by {colour}; white = idle; "
                 "red hatching: an attempt ended by a node failure.")


def _fast_check_text(prov: dict) -> str:
    """The fast plant's measured error against the FMU (:mod:`scheduler_sim.analysis.fast_check`), '' if none."""
    from ..fast_check import fast_check_lines

    check = json.loads(prov.get("info_json", "{}") or "{}").get("fast_plant_check")
    if not check:
        return ""
    method = [f"Method: {check.get('method', '')}"] if "window_h" in check else []
    return "\n".join([line.strip() for line in fast_check_lines(check)] + method)


def _headroom_text(res) -> str:
    """The headroom block (:mod:`scheduler_sim.analysis.headroom`) of a run file, from its series and its system."""
    from ..headroom import run_headroom

    sysm = _system(str(res.attrs.get("system", "")), res)
    if sysm is None:
        return "Headroom not computed: the run's system description could not be loaded."
    params = design = None
    if "T_wb_K" in res.facility:
        try:
            from cooling_fmu.params import load_plant_params
            from cooling_fmu.weather import design_conditions, resolve_weather_file

            params = load_plant_params(sysm.cooling_plant)
            base = str(Path(sysm.source).parent) if sysm.source else None
            design = design_conditions(resolve_weather_file(sysm.site_weather or "golden", base))
        except (FileNotFoundError, ValueError):  # a site FMU, or no readable site weather: feed and supply only
            pass
    origin = float(getattr(res, "time_origin_unix_s", float("nan")))  # the run's calendar: its months
    h = run_headroom(sysm, res.facility, res.cdu, np.asarray(res.time_s), params, design, origin)
    return "\n".join(h.lines())


def _system(name: str, res):
    """The run's system description (root attribute ``system``, else the configuration's), or None."""
    cands = [name]
    try:
        cands.append(str(json.loads(res.config_json).get("system", "")))
    except (ValueError, AttributeError):
        pass
    for c in cands:
        if not c:
            continue
        try:
            return load_system(c)
        except Exception:  # an unknown or unreadable description only costs the CDU / rack marks
            continue
    return None


def _n_nodes(res) -> int:
    """Nodes of the system of a run (from its configuration), else the peak busy count."""
    try:
        return int(load_system(json.loads(res.config_json)["system"]).n_nodes)
    except Exception:  # a missing description only affects the utilisation scale
        return int(np.ceil(np.max(res.facility["busy_nodes"]))) or 1


#: Study axes that describe the conditions a scenario meets (weather, randomness, grid signals), not a decision.
#: A Pareto comparison is made only among scenarios under the same condition.
CONDITION_AXES = ("cooling.weather", "cooling.weather_path", "cooling.T_wb_C", "cooling.utc_offset_h", "seed",
                  "faults.", "grid.carbon", "grid.price")


def _is_condition(axis: str) -> bool:
    return any(axis == c or (c.endswith(".") and axis.startswith(c)) for c in CONDITION_AXES)


def _dotted(cfg: dict, key: str):
    cur = cfg
    for part in key.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return None
        cur = cur[part]
    return cur


def sweep_conditions(study_text: str, configs: list[str]) -> list[str]:
    """The condition label of each scenario of a sweep, e.g. ``"cooling.weather=tmy3"``.

    Parameters
    ----------
    study_text : str
        The study file (TOML) stored in ``summary.h5``; its ``[axes]`` keys that are conditions
        (:data:`CONDITION_AXES`) are used.
    configs : list[str]
        Each scenario's resolved configuration (JSON).

    Returns
    -------
    list of str
        One label per scenario ("" for all when the study has no condition axis).
    """
    try:
        axes = [k for k in tomllib.loads(study_text).get("axes", {}) if _is_condition(k)]
    except (tomllib.TOMLDecodeError, AttributeError):
        axes = []
    if not axes:
        return [""] * len(configs)
    labels = []
    for c in configs:
        try:
            cfg = json.loads(c)
        except (TypeError, ValueError):
            cfg = {}
        labels.append(", ".join(f"{k.split('.')[-1]}={_dotted(cfg, k)}" for k in axes))
    return labels


def _sweep_report(path: Path, out: Path, pairs: list[tuple[str, str]]) -> Path:
    from ..frontier import sweep_frontier
    from .sweep_table import headline_table
    from . import figures as F  # heavy (matplotlib): imported only when a report is drawn

    with h5py.File(path, "r") as f:
        g = f["scenarios"]
        names = [x.decode() if isinstance(x, bytes) else str(x) for x in g["name"][()]]
        status = [x.decode() if isinstance(x, bytes) else str(x) for x in g["status"][()]]
        metrics = {k: g[k][()] for k in g if g[k].dtype.kind == "f"}
        configs = ([x.decode() if isinstance(x, bytes) else str(x) for x in g["config_json"][()]]
                   if "config_json" in g else ["{}"] * len(names))
        study = str(f.attrs.get("study", path.parent.name))
        study_file = str(f.attrs.get("study_file", ""))
        version = str(f.attrs.get("schema_version"))
    groups = sweep_conditions(study_file, configs)
    parts = []
    for mx, my in pairs:
        for m in (mx, my):
            if m not in metrics:
                raise KeyError(f"{path}: no metric {m!r} in the sweep summary (has {', '.join(sorted(metrics))})")
        name = f"pareto_{mx}__{my}"
        fig = F.pareto(names, metrics[mx], metrics[my], mx, my, groups=groups)
        lx, ly = F._metric_label(mx, metrics[mx])[0], F._metric_label(my, metrics[my])[0]
        per = (" Each condition (" + ", ".join(sorted(set(groups))) + ") has its own front: conditions are not "
               "decisions." if any(groups) else "")
        parts.append(_img(_save(fig, out, name), name,
                          f"{ly} against {lx} for every finished scenario; filled markers joined by a line: the "
                          f"non-dominated scenarios.{per}"))
    # the frontier (analysis.frontier): non-dominated set, knee, hypervolume, CSV; one per condition
    from ..frontier import load_sweep_points
    from .sweep_table import ensemble_mean_points

    fpts, fcond, of = ensemble_mean_points(path, load_sweep_points(path), dict(zip(names, groups)))
    fronts = sweep_frontier(path, out, fcond, points=fpts if of else None)
    for fs in fronts:
        if of:  # an ensemble: the front of the study scenarios' means
            fs.caption = f"Frontier{of}: each point a study scenario at its members' mean. " + fs.caption
    fnames = ["frontier"] if len(fronts) == 1 else [f"frontier_{k}" for k in range(len(fronts))]
    frontiers = [{"figure": _img(_save(fs.figure, out, fn), fn, fs.caption), "header": fs.header, "rows": fs.rows}
                 for fn, fs in zip(fnames, fronts)]
    table = headline_table(path, members=True)  # peak power, cost, CO2, water beside PUE, energy and wait
    for w in table.warnings:
        print(f"WARNING: {w}", file=sys.stderr)
    bands = headline_table(path)  # an ensemble: each study scenario's figures with their 5-95 % band
    ensemble = None if bands.header == table.header else {"header": bands.header, "rows": bands.rows,
                                                           "warnings": bands.warnings}
    page = render("sweep.html.j2", study=study, file=str(path), schema_version=version, n_scenarios=len(names),
                  n_done=status.count("done"), header=table.header, rows=table.rows, figures=parts,
                  study_file=study_file, frontiers=frontiers, table_warnings=table.warnings, ensemble=ensemble)
    return _write_html(out, page)


def _write_html(out: Path, page: str) -> Path:
    """Write a rendered page as ``<out>/report.html`` through the one writer (whole or not at all)."""
    return atomic_write_bytes(out / "report.html", page.encode("utf-8"), what="report")


def make_compare_report(a: str | Path, b: str | Path, out_dir: str | Path, cmp: object = None, *,
                        allow_unverified: bool = False) -> Path:
    """``compare --plot``: the waterfall of the links from A's total to B's, A and B overlaid, and a page.

    Writes ``compare_waterfall`` and ``compare_series`` (PNG + SVG) and ``report.html`` (the link table, the
    figures, the notes) into ``out_dir``.

    Parameters
    ----------
    a : str | Path
        The reference run file (A).
    b : str | Path
        The run file explained against A (B).
    out_dir : str | Path
        Output folder (created; removed again on failure when this call created it).
    cmp : object
        The :class:`~scheduler_sim.analysis.compare.Comparison` when already computed; None computes it, checking
        both files first (a bad file raises SchemaError / DamagedFileError from
        :func:`scheduler_sim.analysis.compare.compare`).
    allow_unverified : bool
        Accept files without ``content_sha256`` (``--no-verify``), with a warning on the page.

    Returns
    -------
    Path
        The HTML file.

    Raises
    ------
    BaseException
        Whatever stopped the drawing or the writing (re-raised after the folder this call created is removed).
    """
    from ..compare import GRID_LINKS, LINKS, compare
    from . import figures as F  # heavy (matplotlib): imported only when a report is drawn

    global _FILE_WARNINGS
    if cmp is None:
        cmp = compare(a, b, allow_unverified=allow_unverified)
    out = Path(out_dir)
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    _FILE_WARNINGS = list(cmp.file_warnings)
    try:
        series = []
        for p in (a, b):  # both checked by compare()
            res = load_result(p, verify=False)
            ts = read_attribution(p, verify=False).timeseries
            series.append({"time_s": np.asarray(res.time_s), "origin": float(res.time_origin_unix_s),
                           "P_facility_W": np.asarray(ts["P_facility_W"]), "P_it_W": np.asarray(ts["P_it_W"])})
        la, lb = f"A ({Path(a).stem})", f"B ({Path(b).stem})"
        parts = [_img(_save(F.compare_waterfall(cmp, "A", "B"), out, "compare_waterfall"), "compare_waterfall",
                      "From A's facility energy [MWh] (and PUE [-], cost, CO2 when both runs have them) to B's, one "
                      "bar per link of the chain in causal order: red raises, green lowers; the links add up "
                      "exactly to the change (scheduler_sim.analysis.compare)."),
                 _img(_save(F.compare_series(series[0], series[1], la, lb), out, "compare_series"), "compare_series",
                      "Facility power [MW] and PUE [-] of A (grey) and B (blue) over time (UTC), overlaid.")]
        t = cmp.totals
        mwh = 3.6e9
        rows = [(k, f"{cmp.energy[k] / mwh:+,.4f}", f"{cmp.pue[k]:+.6f}" if np.isfinite(cmp.pue[k]) else "n/a")
                for k in LINKS]
        rows.append(("total", f"{cmp.energy.sum() / mwh:+,.4f}",
                     f"{cmp.pue.sum(skipna=False):+.6f}" if np.isfinite(cmp.pue.sum(skipna=False)) else "n/a"))
        grid_rows = [(("CO2" if kind == "carbon" else "cost") + f" [{g['unit']}]", k, f"{float(g['links'][k]):+,.3f}")
                     for kind, g in cmp.grid.items() for k in GRID_LINKS]
        head = [("facility energy [MWh]", f"{t.loc['E_facility_J', 'A'] / mwh:,.3f}",
                 f"{t.loc['E_facility_J', 'B'] / mwh:,.3f}", f"{t.loc['E_facility_J', 'delta'] / mwh:+,.4f}"),
                ("PUE [-]", *(f"{t.loc['PUE', c]:.5f}" if np.isfinite(t.loc["PUE", c]) else "n/a"
                              for c in ("A", "B", "delta")))]
        page = render("compare.html.j2", a=str(a), b=str(b), totals=head, links=rows, grid_links=grid_rows,
                      notes=list(cmp.notes), figures=parts)
        return _write_html(out, page)
    except BaseException:
        if created:
            shutil.rmtree(out, ignore_errors=True)
        raise
    finally:
        _FILE_WARNINGS = []
        _LAYOUT.clear()
