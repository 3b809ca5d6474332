"""Policy studies: a study file declares a base run and axes; scenarios are spread over MPI ranks.

Study file (TOML)::

    name = "theta-fcfs-vs-easy"    # a plain name: it becomes the folder out/<name> (checked like run names)
    plot = "experiments.plots:policy_study"   # optional: called on rank 0 with (summary.h5, out dir)
    [base]                         # any RunConfig fields (same layout as a run file)
    trace = { window_days = 7.0 }
    [axes]                         # dotted RunConfig keys -> list of values; the scenarios are their product
    "scheduler.policy" = ["fcfs", "easy"]
    "cooling.weather" = ["tmy3", "constant"]
    [[scenarios]]                  # optional explicit list (each crossed with the axes), with a label
    name = "conservative"
    "scheduler.backfill" = "conservative"

Every relative path in a study (in ``[base]``, ``[axes]`` values and ``[[scenarios]]`` overrides: trace, weather,
system and plant ``.toml`` files, serving deployment and trace) resolves against the folder of the study file, so a
study runs the same from any working directory.

Code in studies. ``plot = "module:function"`` imports that module and calls that function: a study file can run
any code importable on the machine, with the user's rights, as a Python script can. Run only study files you
trust (or delete their ``plot`` line).

Scenarios are enumerated in a fixed order (the product of the axes in file order), and each is a pure function of
its configuration (:func:`scheduler_sim.app.runner.run_one`) that writes ``<out>/<scenario>.h5``. Rank 0 writes
``<out>/summary.h5`` with one row per scenario, in scenario order, and an HDF5 external link to each run file. The
results therefore do not depend on the number of ranks nor on which rank ran what.

Work queue (dynamic load balancing)
-----------------------------------
Rank 0 holds the queue of scenario indices in scenario order. Each other rank sends a request (tag 61) carrying
the result of its previous scenario (None at first), and rank 0 answers (tag 62) with the next index, or -1 when
the queue is empty; that rank then returns. Rank 0 serves requests from a helper thread and also works through
the queue in its main thread (when MPI gives at least MPI_THREAD_SERIALIZED; otherwise it only serves). Ranks wait
by polling (Iprobe + short sleep), so an idle rank does not spin a core. Long and short scenarios thus mix without
leaving ranks idle. Rank 0 prints a progress line after every scenario: done / running / failed / queued,
elapsed and ETA.

Why a hand-written queue and not ``mpi4py.futures``: ``MPICommExecutor`` makes rank 0 a pure master, so on two
ranks only one computes. Measured in one run (``benchmarks/bench_sweep_scaling.py --phase executor``, 32 scenarios,
2 cores shared with other jobs): hand queue on 2 ranks 67.3 s, ``MPICommExecutor`` on 2 ranks 87.4 s, against
166.5 s on one rank (speed-ups 2.48 and 1.91; above 2 because the shared machine's load fell during the run).
Issue #14 item 8 asked for the executor only if it matched the queue; it does not (docs/sweeps_and_twin.md).

Faults and resumption
---------------------
A scenario that raises is recorded as failed, with its error and traceback, and the sweep goes on; a run that stops
early (a failing cooling FMU step: root attribute ``complete`` false) is recorded as failed too and its partial
file is kept. The summary's ``file`` column names a scenario's file only when it exists ('' otherwise). Restarting a
killed sweep with the same command skips every scenario already *done*: its file exists, passes its integrity check
(:func:`scheduler_sim.io.hdf5.verify_file`: every dataset and attribute matches the ``content_sha256`` recorded when
it was written; a damaged file is run again), has ``complete`` true (files are written atomically, so a killed
write leaves none), its stored ``config_json`` equals the scenario's configuration (a changed study reruns it) and
the SHA-256 of every input file it read (trace, weather, system, plant, grid series, request trace; its
``/provenance`` ``input_checksums_json``) equals that file's SHA-256 now: a scenario's identity is its
configuration plus its inputs, so a trace edited between two sweeps reruns every scenario that reads it. Each
earlier file that is not reused is named on the terminal with the reason, and summary.h5 lists them (volatile root
attribute ``sweep_resume_json``: ``done_earlier`` names, ``rerun`` name -> reason).
Rank 0 holds an exclusive lock on ``<out>/.sweep.lock`` for the whole sweep: a second sweep into the same folder
stops at once with an error instead of racing the first for its files; temporaries of dead processes are cleaned
when their output is written again (:func:`scheduler_sim.io.hdf5.clean_stale_temporaries`), never those of a live
one. Its summary row is read back from the file, so the
summary is the same as after an uninterrupted sweep. Wall times, ranks and the number of scenarios skipped are
only in the summary's volatile root attribute ``sweep_timing_json``.
"""

from __future__ import annotations

import importlib
import itertools
import json
import re
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import h5py
import numpy as np
from pydantic import ValidationError

from ..io.hdf5 import SCHEMA_VERSION, atomic_h5, unit_of
from ..io.schema import SchemaWriter
from .config import ConfigError, RunConfig, _format_errors, check_name, read_toml, resolve_relative_paths
from .overrides import apply_sets
from .runner import run_one

__all__ = ["Scenario", "load_study", "run_sweep", "refine_spec", "select_refine", "REFINE_METRICS"]


@dataclass(frozen=True)
class Scenario:
    """One member of a study: its index, file-safe name, configuration and what its file holds (``"full"``: a
    run file; ``"summary"``: an ensemble member's record, :func:`scheduler_sim.io.hdf5.write_run`).
    """

    index: int
    name: str
    config: RunConfig
    content: str = "full"


def _slug(v: object) -> str:
    if isinstance(v, (list, tuple)) and not v:
        v = "none"
    elif isinstance(v, dict):
        v = "_".join(str(x) for x in v.values())
    return re.sub(r"[^A-Za-z0-9.+-]+", "_", str(v)).strip("_")[:40]


def load_study(path: str | Path, sets: list[str] | None = None, members: bool = True) -> tuple[str, list[Scenario]]:
    """Read a study file and enumerate its scenarios.

    Axis and scenario keys go through the key resolver of ``--set``
    (:func:`scheduler_sim.app.overrides.apply_sets`): any configuration key, ``system.*`` and ``plant.*`` keys,
    relative numbers (``"+20%"``, ``"x1.5"``). ``sets`` (``hpctwin sweep --set KEY=VALUE``) change the base run
    first. With an ``[uncertainty]`` table (:mod:`scheduler_sim.app.uncertainty`) and ``members`` true, every
    scenario is replaced by its ensemble members (``<scenario>_m<kkk>``, and ``_fmu`` refine runs), renumbered; with
    ``members`` false the study's own scenarios are returned.

    Parameters
    ----------
    path : str | Path
        Study TOML file.
    sets : list[str] | None
        ``KEY=VALUE`` overrides of the base run.
    members : bool
        Expand an ``[uncertainty]`` study into its members (default) or return its own scenarios.

    Returns
    -------
    tuple of (str, list of Scenario)
        The study name and its scenarios, in their fixed order.

    Raises
    ------
    ConfigError
        If the file is missing or invalid, the study name is not a plain name (it names the folder ``out/<name>``:
        no path separators, not ``.`` / ``..``), an axis key is unknown, or an axis is empty.
    """
    path = Path(path)
    data = read_toml(path, "study file")
    unknown = set(data) - {"name", "base", "axes", "scenarios", "plot", "refine", "uncertainty"}
    if unknown:
        raise ConfigError(f"{path}: unknown top-level key(s) {sorted(unknown)}; expected name, base, axes, "
                          f"scenarios, plot, refine, uncertainty")
    study = str(data.get("name", path.stem))
    try:
        check_name(study, "study name")
    except ValueError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    base_data = dict(data.get("base", {}))
    base_data.setdefault("name", study)
    try:
        base = RunConfig.model_validate(base_data)
    except ValidationError as exc:
        raise ConfigError(_format_errors(f"{path} [base]", exc)) from None
    base = resolve_relative_paths(base, path.parent)  # relative to the study file, as in a run file
    if sets:
        base = apply_sets(base, sets)
    axes = data.get("axes", {})
    for k, v in axes.items():
        if not isinstance(v, list) or not v:
            raise ConfigError(f"{path}: axis {k!r} must be a non-empty list")
    keys = list(axes)
    explicit = data.get("scenarios", [{}])
    if not isinstance(explicit, list) or not explicit or not all(isinstance(e, dict) for e in explicit):
        raise ConfigError(f"{path}: [[scenarios]] must be a non-empty list of tables of dotted overrides")
    scenarios = []
    i = 0
    for k, ex in enumerate(explicit):
        ex = dict(ex)
        label = str(ex.pop("name", "")) if "name" in ex else ""
        if not label and "scenarios" in data:
            label = f"s{k}"
        for combo in itertools.product(*(axes[key] for key in keys)) if keys else [()]:
            name = f"{i:03d}" + (f"_{_slug(label)}" if label else "") + "".join(f"_{_slug(v)}" for v in combo)
            try:
                cfg = apply_sets(base, {**ex, **dict(zip(keys, combo)), "name": name}, record=False)
                cfg = resolve_relative_paths(cfg, path.parent)  # axis / scenario paths: against the study file
            except ConfigError as exc:
                raise ConfigError(f"{path}: scenario {name}: {exc}") from None
            scenarios.append(Scenario(i, name, cfg))
            i += 1
    if members and "uncertainty" in data:  # an ensemble: members replace the scenarios (app.uncertainty)
        from .uncertainty import ensemble_spec, expand_members

        scenarios, _ = expand_members(scenarios, ensemble_spec(data["uncertainty"], path))
    return study, scenarios


def study_plot_function(path: str | Path):
    """The study's plot function (``plot = "module:function"`` in the study file), or None.

    Importing the module runs its code, and the sweep then calls the function: a study file is code, not only data
    (see the module docstring, "Code in studies").
    """
    data = read_toml(Path(path), "study file")
    spec = data.get("plot")
    if not spec:
        return None
    mod, _, fn = str(spec).partition(":")
    try:
        return getattr(importlib.import_module(mod), fn)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"{path}: plot = {spec!r} cannot be imported: {exc}") from None


#: Headline metrics compared between a fast-plant scenario and its FMU re-run (``/refine`` in summary.h5).
REFINE_METRICS = ("E_cooling_J", "E_facility_J", "PUE", "pPUE_mechanical", "WUE_L_per_kWh", "water_makeup_kg",
                  "peak_P_facility_W")


def refine_spec(path: str | Path, override: dict | None = None) -> dict | None:
    """The study's refine request: ``[refine]`` of the study file, updated by ``override`` (command line).

    Keys: ``top_k`` (int >= 1: re-run the k scenarios best in ``objective``, default ``"E_facility_J"``, smallest
    first) or ``pareto`` (two metric names: re-run the non-dominated scenarios, both minimised). Only scenarios
    that ran the fast plant (``cooling.model = "fast"``) and finished are candidates.

    Parameters
    ----------
    path : str | Path
        The study file.
    override : dict | None
        Command-line values (None values are ignored).

    Returns
    -------
    dict or None
        ``{"top_k": int | None, "objective": str, "pareto": list[str] | None}``; None when nothing is asked.

    Raises
    ------
    ConfigError
        If a key is unknown or a value has the wrong type (the study file is named).
    """
    data = read_toml(Path(path), "study file").get("refine", {})
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: [refine] must be a table (top_k, objective, pareto)")
    spec = {**data, **{k: v for k, v in (override or {}).items() if v is not None}}
    unknown = set(spec) - {"top_k", "objective", "pareto"}
    if unknown:
        raise ConfigError(f"{path}: [refine]: unknown key(s) {sorted(unknown)}; expected top_k, objective, pareto")
    if not spec.get("top_k") and not spec.get("pareto"):
        return None
    top_k = spec.get("top_k")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1):
        raise ConfigError(f"{path}: [refine] top_k must be an integer >= 1, got {top_k!r}")
    pareto = spec.get("pareto")
    if pareto is not None and (not isinstance(pareto, list) or len(pareto) != 2
                               or not all(isinstance(x, str) for x in pareto)):
        raise ConfigError(f"{path}: [refine] pareto must be two metric names, e.g. [\"mean_wait_s\", "
                          f"\"E_facility_J\"], got {pareto!r}")
    return {"top_k": top_k if not pareto else None, "objective": str(spec.get("objective", "E_facility_J")),
            "pareto": pareto}


def select_refine(spec: dict, metrics: dict[int, dict]) -> list[int]:
    """Indices of the scenarios to re-run with the FMU, in scenario order.

    Parameters
    ----------
    spec : dict
        :func:`refine_spec`'s result.
    metrics : dict[int, dict]
        Candidate scenario index -> its headline metrics.

    Returns
    -------
    list of int
        ``top_k``: the k smallest ``objective`` (ties by index; NaN or missing never chosen). ``pareto``: every
        scenario not dominated in the two metrics (minimised; no other is <= in both and < in one).
    """
    if spec.get("pareto"):
        a, b = spec["pareto"]
        pts = {i: (m.get(a, np.nan), m.get(b, np.nan)) for i, m in metrics.items()}
        pts = {i: p for i, p in pts.items() if np.isfinite(p[0]) and np.isfinite(p[1])}
        front = [i for i, p in pts.items()
                 if not any(q[0] <= p[0] and q[1] <= p[1] and q != p for q in pts.values())]
        return sorted(front)
    key = spec["objective"]
    ok = [(m[key], i) for i, m in metrics.items() if key in m and np.isfinite(m[key])]
    return sorted(i for _, i in sorted(ok)[:spec["top_k"]])


def _comm():
    try:
        from mpi4py import MPI  # optional: importing mpi4py.MPI initialises MPI; without mpi4py run in one process
    except ImportError:  # no MPI installed: run everything here
        return None
    return MPI.COMM_WORLD


_TAG_REQUEST, _TAG_TASK = 61, 62


def _run_scenario(s: Scenario, out_dir: Path) -> tuple[str, str, dict]:
    """Run one scenario; return (status, error, headline metrics). Never raises."""
    path = out_dir / f"{s.name}.h5"
    try:
        r = run_one(s.config, path, progress=False, content=s.content)
    except Exception as exc:  # a failed scenario must not stop the sweep
        path.unlink(missing_ok=True)  # no stale file from an earlier sweep
        return "failed", f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}", {}
    if not r.info.get("complete", True):
        return "failed", f"run stopped early (partial file kept, complete = false): {r.info.get('failure', '')}", \
            r.summary
    return "done", "", r.summary


def scenario_done(s: Scenario, out_dir: Path, hashes: dict | None = None) -> dict[str, float] | None:
    """The headline metrics of a scenario finished earlier, or None if it must run (:func:`scenario_status`)."""
    return scenario_status(s, out_dir, hashes)[0]


def _current_checksums(cfg: RunConfig, hashes: dict) -> dict[str, tuple[str, str]]:
    """Role -> (file, SHA-256 now) of every input file of ``cfg`` (:func:`run_input_files`); ``hashes`` memoises
    the digests by path over one resume check.
    """
    from ..io.hdf5 import sha256_file
    from .runner import run_input_files

    out = {}
    for role, path in run_input_files(cfg).items():
        key = str(Path(path).resolve())
        if key not in hashes:
            hashes[key] = sha256_file(path)
        out[role] = (str(path), hashes[key])
    return out


def scenario_status(s: Scenario, out_dir: Path, hashes: dict | None = None) -> tuple[dict[str, float] | None, str]:
    """Whether a scenario finished earlier: (its headline metrics, "") or (None, why it must run).

    A scenario's identity is its configuration plus the SHA-256 of every input file it reads (trace, request trace
    and deployment, system, plant, weather, grid series: :func:`scheduler_sim.app.runner.run_input_files`). Done
    means: ``<out>/<name>.h5`` exists, passes :func:`scheduler_sim.io.hdf5.verify_file` (its content matches the
    ``content_sha256`` recorded when it was written; a file without one cannot be trusted), has root attribute
    ``complete`` true, its ``config_json`` equals the scenario's configuration and its ``input_checksums_json``
    (``/provenance``) holds, for every input file the scenario reads now, the file's current SHA-256. Any other
    case reruns the scenario, for the reason returned.

    Parameters
    ----------
    s : Scenario
        The scenario.
    out_dir : Path
        The sweep's folder.
    hashes : dict | None
        Memo of file digests (path -> SHA-256) shared by the scenarios of one resume check.

    Returns
    -------
    (dict or None, str)
        The metrics and ``""`` when done; None and the reason otherwise (``"no earlier file"`` when none exists).
    """
    from ..io.hdf5 import DamagedFileError, verify_file

    path = out_dir / f"{s.name}.h5"
    if not path.is_file():
        return None, "no earlier file"
    try:
        verify_file(path, require_digest=True)
    except DamagedFileError as exc:
        return None, f"earlier file fails its integrity check ({str(exc)[:120]})"
    try:
        with h5py.File(path, "r") as f:
            cfg = f.attrs.get("config_json")
            cfg = cfg.decode() if isinstance(cfg, bytes) else cfg
            if not bool(f.attrs.get("complete", False)):
                return None, "earlier file is partial (complete = false)"
            kind = f.attrs.get("kind", "run")
            kind = kind.decode() if isinstance(kind, bytes) else str(kind)
            if kind != ("run-summary" if s.content == "summary" else "run"):
                return None, f"earlier file is a {kind} file, the study asks for {s.content} member files"
            if cfg != s.config.to_json():
                return None, "configuration changed"
            raw = f["provenance"].attrs.get("input_checksums_json", "{}")
            stored = json.loads(raw.decode() if isinstance(raw, bytes) else raw)
            metrics = {k: float(v) for k, v in f["summary"].attrs.items()}
    except (OSError, KeyError, ValueError):
        return None, "earlier file unreadable"
    try:
        now = _current_checksums(s.config, {} if hashes is None else hashes)
    except (OSError, ValueError) as exc:  # an input that cannot be read now: the run reports it
        return None, f"an input file cannot be read ({str(exc)[:120]})"
    changed = [f"{role} {Path(p).name} (sha256 {stored[role][:12]} -> {h[:12]})"
               for role, (p, h) in sorted(now.items()) if role in stored and stored[role] != h]
    if changed:
        return None, "input changed: " + ", ".join(changed)
    unknown = [role for role in sorted(now) if role not in stored]
    if unknown:
        return None, f"earlier file records no checksum for {', '.join(unknown)}"
    return metrics, ""


class _Board:
    """Rank 0's bookkeeping of a sweep: the queue, what runs where, results, busy time per rank; thread-safe."""

    def __init__(self, todo: list[int], n_total: int, n_earlier: int, size: int, say, names: list[str]) -> None:
        self.lock = threading.Lock()
        self.queue = list(todo)
        self.running: dict[int, int] = {}
        self.results: dict[int, tuple[str, str, dict]] = {}
        self.busy = [0.0] * size
        self.count = [0] * size
        self.wall: dict[int, float] = {}
        self.n_total, self.n_earlier, self.n_todo = n_total, n_earlier, len(todo)
        self.t0 = time.perf_counter()
        self.say, self.names = say, dict(enumerate(names))
        self.plan_refine = None  # callable(results) -> list[Scenario]: the second phase, planned once
        self.extra: dict[int, Scenario] = {}

    def take(self, rank: int) -> int | None:
        """Next scenario index for ``rank``; :data:`_WAIT` while a second (refine) phase waits for the first to
        finish; None when everything is handed out.
        """
        with self.lock:
            if not self.queue and self.plan_refine is not None:
                if self.running:
                    return _WAIT
                plan, self.plan_refine = self.plan_refine, None
                for sc in plan(dict(self.results)):
                    self.extra[sc.index] = sc
                    self.names[sc.index] = sc.name
                    self.queue.append(sc.index)
                    self.n_todo += 1
                    self.n_total += 1
            if not self.queue:
                return None
            i = self.queue.pop(0)
            self.running[i] = rank
            return i

    def scenario(self, i: int, scenarios: list[Scenario]) -> Scenario:
        """Scenario ``i``: from the study, or a refine re-run planned by rank 0."""
        return self.extra[i] if i in self.extra else scenarios[i]

    def finish(self, i: int, rank: int, row: tuple[str, str, dict], busy_s: float) -> None:
        with self.lock:
            self.running.pop(i, None)
            self.results[i] = row
            self.busy[rank] += busy_s
            self.count[rank] += 1
            self.wall[i] = busy_s
            n_new = len(self.results)
            n_fail = sum(1 for r in self.results.values() if r[0] == "failed")
            el = time.perf_counter() - self.t0
            left = self.n_todo - n_new
            eta = el / n_new * left if n_new else float("nan")
            status = row[0] if row[0] == "failed" else f"done in {busy_s:.1f} s"
            self.say(f"[sweep] {self.names[i]} on rank {rank}: {status} | {self.n_earlier + n_new - n_fail}/"
                     f"{self.n_total} done ({self.n_earlier} earlier), {len(self.running)} running, {n_fail} failed, "
                     f"{len(self.queue)} queued | {el:.0f} s elapsed, ETA {eta:.0f} s")


_WAIT = -2  # answer to a request while the refine phase waits for the first phase to finish


def _work(board: _Board, scenarios: list[Scenario], out_dir: Path, rank: int) -> None:
    while (i := board.take(rank)) is not None:
        if i == _WAIT:
            time.sleep(0.02)
            continue
        t = time.perf_counter()
        row = _run_scenario(board.scenario(i, scenarios), out_dir)
        board.finish(i, rank, row, time.perf_counter() - t)


#: Polling of rank 0's server thread: from 2 ms, doubling while no request comes, up to 50 ms (a request waits at
#: most 50 ms; a scenario takes seconds). A fixed 2 ms poll woke the thread 500 times a second, each time taking
#: the GIL from rank 0's own scenario.
_NAP_MIN_S, _NAP_MAX_S = 2e-3, 5e-2


def _serve(comm, board: _Board, n_workers: int) -> None:
    """Rank 0: answer work requests until every other rank has been told to stop."""
    from mpi4py import MPI  # optional: importing mpi4py.MPI initialises MPI (only MPI sweeps reach here)

    st = MPI.Status()
    waiting: list[int] = []  # ranks whose request waits for the refine phase to be planned

    def answer(src: int) -> bool:
        """Send ``src`` its next task; False when it must wait (it is answered later)."""
        nonlocal n_workers
        i = board.take(src)
        if i == _WAIT:
            return False
        # refine re-runs are not in the workers' study: send the scenario itself
        comm.send(-1 if i is None else ((i, board.extra[i]) if i in board.extra else i), dest=src, tag=_TAG_TASK)
        if i is None:
            n_workers -= 1
        return True

    nap = _NAP_MIN_S
    while n_workers:
        waiting = [r for r in waiting if not answer(r)]
        if not comm.Iprobe(source=MPI.ANY_SOURCE, tag=_TAG_REQUEST, status=st):
            time.sleep(nap)  # backs off while the workers are busy: the server thread shares rank 0's GIL
            nap = min(2.0 * nap, _NAP_MAX_S)
            continue
        nap = _NAP_MIN_S
        src = st.Get_source()
        msg = comm.recv(source=src, tag=_TAG_REQUEST)
        if msg is not None:
            board.finish(*msg)
        if not answer(src):
            waiting.append(src)


def _worker(comm, scenarios: list[Scenario], out_dir: Path) -> None:
    """Ranks > 0: ask rank 0 for scenarios (reporting the previous result) until told to stop."""
    rank = comm.Get_rank()
    msg = None
    while True:
        comm.send(msg, dest=0, tag=_TAG_REQUEST)
        while not comm.Iprobe(source=0, tag=_TAG_TASK):
            time.sleep(1e-3)
        task = comm.recv(source=0, tag=_TAG_TASK)
        i, sc = task if isinstance(task, tuple) else (task, None)  # (index, Scenario) for a refine re-run
        if i < 0:
            return
        t = time.perf_counter()
        row = _run_scenario(sc if sc is not None else scenarios[i], out_dir)
        msg = (i, rank, row, time.perf_counter() - t)


def run_sweep(study_path: str | Path, out_dir: str | Path, *, echo: Callable[[str], None] = print,
              refine: dict | None = None, sets: list[str] | None = None) -> Path | None:
    """Run every scenario of a study with a work queue over the MPI ranks of COMM_WORLD (or in one process).

    Parameters
    ----------
    study_path : str | Path
        Study TOML file.
    out_dir : str | Path
        Folder for the run files and ``summary.h5`` (created).
    echo : Callable[[str], None]
        Printer used on rank 0 only.
    refine : dict | None
        Command-line refine options (``top_k``, ``objective``, ``pareto``) over the study's ``[refine]``
        (:func:`refine_spec`): after every scenario ran, the selected fast-plant scenarios run again with the FMU
        (``<name>_fmu``) on the same queue, and summary.h5 gets ``/refine`` with the fast-vs-FMU errors.
    sets : list[str] | None
        ``--set KEY=VALUE`` overrides of the base run (:func:`load_study`).

    Returns
    -------
    Path or None
        The summary file on rank 0; None on other ranks.
    """
    wall0 = time.perf_counter()
    comm = _comm()
    rank = comm.Get_rank() if comm is not None else 0
    size = comm.Get_size() if comm is not None else 1
    study, scenarios = load_study(study_path, sets=sets)
    spec = refine_spec(study_path, refine)
    out_dir = Path(out_dir)
    if rank != 0:
        _worker(comm, scenarios, out_dir)
        return None
    say_lock = threading.Lock()

    def say(msg: str) -> None:
        with say_lock:
            echo(msg)
            sys.stdout.flush()

    out_dir.mkdir(parents=True, exist_ok=True)
    with _sweep_lock(out_dir):
        return _run_locked(study_path, out_dir, study, scenarios, comm, size, say, wall0, spec)


def _sweep_lock(out_dir: Path):
    """Exclusive, non-blocking lock on ``<out>/.sweep.lock`` for one sweep (rank 0); ConfigError if another holds it."""
    import contextlib
    import errno
    import os
    import stat

    @contextlib.contextmanager
    def lock():
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX
            yield
            return
        lock_path = out_dir / ".sweep.lock"
        try:  # never through a planted link: it is truncated and written below
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0),
                         0o644)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise ConfigError(f"{lock_path}: is a symbolic link (planted by someone who can write {out_dir}?); "
                                  f"not followed: remove it or give another --out") from None
            raise
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1 or st.st_uid != os.getuid():
            os.close(fd)
            raise ConfigError(f"{lock_path}: not a private regular file of yours (owner uid {st.st_uid}, "
                              f"{st.st_nlink} links); not used: remove it or give another --out")
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                other = os.pread(fd, 64, 0).decode(errors="replace").strip() or "?"
                raise ConfigError(f"{out_dir}: another sweep (pid {other}) is writing into this folder; wait for it "
                                  f"or give another --out") from None
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
            yield
        finally:
            os.close(fd)  # closing the descriptor releases the lock

    return lock()


def _run_locked(study_path, out_dir: Path, study: str, scenarios: list[Scenario], comm, size: int, say,
                wall0: float, spec: dict | None = None) -> Path:
    """Rank 0's part of :func:`run_sweep`, with the folder locked: resume, run, write the summary, report."""
    from ..io.hdf5 import clean_stale_temporaries

    for s in scenarios:  # temporaries of a killed earlier sweep (dead processes only; a live writer's are kept)
        clean_stale_temporaries(out_dir / f"{s.name}.h5")
    hashes: dict = {}
    status = {s.index: scenario_status(s, out_dir, hashes) for s in scenarios}
    earlier = {i: m for i, (m, _) in status.items() if m is not None}
    todo = [s.index for s in scenarios if s.index not in earlier]
    rerun = {scenarios[i].name: why for i, (m, why) in status.items() if m is None and why != "no earlier file"}
    serve = size > 1
    from_main = True
    if serve:
        from mpi4py import MPI  # optional: importing mpi4py.MPI initialises MPI (only MPI sweeps reach here)
        from_main = MPI.Query_thread() >= MPI.THREAD_SERIALIZED  # rank 0 works while a thread serves
    say(f"study {study}: {len(scenarios)} scenario(s), {len(earlier)} done earlier, {len(todo)} to run on {size} "
        f"rank(s){'' if from_main else ' (rank 0 only serves)'} -> {out_dir}")
    for name, why in rerun.items():  # an earlier file that is not reused, and why
        say(f"[sweep] {name}: re-run: {why}")
    board = _Board(todo, len(scenarios), len(earlier), size, say, [s.name for s in scenarios])
    refine = _Refine(scenarios, earlier, spec, out_dir, hashes, say)
    if spec is not None:
        board.plan_refine = refine.plan
    if serve:
        server = threading.Thread(target=_serve, args=(comm, board, size - 1), name="sweep-server", daemon=True)
        server.start()
        if from_main:
            _work(board, scenarios, out_dir, 0)
        server.join()
    else:
        _work(board, scenarios, out_dir, 0)
    rows = [(i, "done", "", earlier[i]) if i in earlier else (i, *board.results[i]) for i in range(len(scenarios))]
    summary_path = out_dir / "summary.h5"
    wall = time.perf_counter() - wall0
    timing = {"ranks": size, "rank0_works": from_main, "wall_time_s": wall, "skipped_done_earlier": len(earlier),
              "busy_s_per_rank": board.busy, "scenarios_per_rank": board.count,
              "scenario_wall_s": {board.names[i]: w for i, w in sorted(board.wall.items())}}
    resume = {"done_earlier": [scenarios[i].name for i in sorted(earlier)], "rerun": rerun}
    refine_rows = refine.rows(board)
    ens = _write_summary(summary_path, study_path, study, scenarios, rows, out_dir, timing, resume,
                         refine_rows if spec is not None else None)
    _say_refine(scenarios, rows, refine_rows if spec is not None else [], say)
    if ens is not None:
        from .ensemble_run import format_ensemble

        for line in format_ensemble(ens):
            say(line)
    n_fail = sum(1 for r in rows if r[1] == "failed")
    busy = ", ".join(f"{b:.1f}" for b in board.busy)
    say(f"summary -> {summary_path} ({len(rows) - n_fail} done, {n_fail} failed; {wall:.1f} s wall, busy s per rank "
        f"[{busy}])")
    plot = study_plot_function(study_path)
    if plot is not None:
        for fig in plot(summary_path, out_dir) or []:
            say(f"figure  -> {fig}")
    return summary_path


class _Refine:
    """The FMU re-runs of a study's ``[refine]``: planned once the fast phase is done, then their outcomes."""

    def __init__(self, scenarios: list[Scenario], earlier: dict, spec: dict | None, out_dir: Path, hashes: dict,
                 say) -> None:
        self.scenarios, self.earlier, self.spec, self.out_dir, self.hashes, self.say = (
            scenarios, earlier, spec, out_dir, hashes, say)
        self.refined: list[tuple[int, Scenario]] = []  # (fast scenario index, its FMU re-run)
        self.done_earlier: dict[int, dict] = {}

    def plan(self, results: dict) -> list[Scenario]:
        """The FMU re-runs of the selected fast scenarios (called once, when the first phase is done)."""
        scenarios, spec = self.scenarios, self.spec
        cand = {}
        for s in scenarios:
            if s.config.cooling.plant_model != "fast":
                continue
            if s.index in self.earlier:
                cand[s.index] = self.earlier[s.index]
            elif results.get(s.index, ("failed",))[0] == "done":
                cand[s.index] = results[s.index][2]
        chosen = select_refine(spec, cand)
        todo2 = []
        for j, i in enumerate(chosen):
            name = f"{scenarios[i].name}_fmu"
            sc = Scenario(len(scenarios) + j, name, scenarios[i].config.with_overrides({"cooling.model": "fmu",
                                                                                          "name": name}))
            self.refined.append((i, sc))
            done = scenario_done(sc, self.out_dir, self.hashes)
            if done is not None:
                self.done_earlier[sc.index] = done
            else:
                todo2.append(sc)
        what = (f"the {spec['top_k']} best in {spec['objective']}" if spec.get("top_k")
                else f"the Pareto front of {spec['pareto'][0]} and {spec['pareto'][1]}")
        self.say(f"[sweep] refine: {what}: {len(chosen)} fast-plant scenario(s) re-run with the FMU "
                 f"({len(chosen) - len(todo2)} done earlier)")
        return todo2

    def rows(self, board: _Board) -> list[tuple[int, Scenario, str, dict]]:
        """``(fast scenario index, FMU scenario, status, metrics)`` per re-run."""
        out = []
        for i, sc in self.refined:
            st, _, met = ((("done", "", self.done_earlier[sc.index]) if sc.index in self.done_earlier
                           else board.results.get(sc.index, ("failed", "not run", {}))))
            out.append((i, sc, st, met))
        return out


def _write_summary(summary_path: Path, study_path, study: str, scenarios: list[Scenario], rows: list[tuple],
                   out_dir: Path, timing: dict, resume: dict, refine_rows: list[tuple] | None):
    """Write ``summary.h5`` (scenarios, links to their runs, refine errors, ensemble); the ensemble or None."""
    metric_names = sorted({k for r in rows for k in r[3]})
    with atomic_h5(summary_path) as f:
        w = SchemaWriter(f, "sweep-summary")
        w.attrs("/", {"schema_version": SCHEMA_VERSION, "kind": "sweep-summary", "study": study,
                      "study_file": Path(study_path).read_text(),
                      "sweep_timing_json": json.dumps(timing, sort_keys=True),
                      "sweep_resume_json": json.dumps(resume, sort_keys=True)})
        w.group("/scenarios")
        str_dt = h5py.string_dtype("utf-8")
        files = [f"{scenarios[i].name}.h5" if (out_dir / f"{scenarios[i].name}.h5").is_file() else ""
                 for i, *_ in rows]  # only files that exist (a failed scenario may have none)
        for col, values in (("name", [scenarios[i].name for i, *_ in rows]), ("status", [st for _, st, _, _ in rows]),
                            ("error", [e for _, _, e, _ in rows]),
                            ("config_json", [scenarios[i].config.to_json() for i, *_ in rows]), ("file", files)):
            w.dataset(f"/scenarios/{col}", np.array(values, dtype=str_dt), dtype=str_dt)
        for m in metric_names:
            w.dataset(f"/scenarios/{m}", np.array([r[3].get(m, np.nan) for r in rows], dtype=float), units=unit_of(m),
                      chunks=None)
        w.group("/runs")
        for i, st, _, _ in rows:
            if st == "done":
                w.link(f"/runs/{scenarios[i].name}", f"{scenarios[i].name}.h5", "/")
        for _, sc, st, _ in refine_rows or []:
            if st == "done":
                w.link(f"/runs/{sc.name}", f"{sc.name}.h5", "/")
        if refine_rows is not None:
            _write_refine(w, scenarios, rows, refine_rows, str_dt)
        ens = _ensemble_summary(study_path, scenarios, rows)  # [uncertainty]: bands, ranking, sensitivity
        if ens is not None:
            from .ensemble_run import write_ensemble

            write_ensemble(w, ens)
    return ens


def _write_refine(w: SchemaWriter, scenarios: list[Scenario], rows: list[tuple], refine_rows: list[tuple],
                  str_dt) -> None:
    """``/refine``: each re-run's names, status and the fast plant's metrics against the FMU's."""
    w.group("/refine")
    w.dataset("/refine/scenario", np.array([scenarios[i].name for i, *_ in refine_rows], dtype=str_dt),
              dtype=str_dt)
    w.dataset("/refine/fmu_scenario", np.array([sc.name for _, sc, *_ in refine_rows], dtype=str_dt),
              dtype=str_dt)
    w.dataset("/refine/status", np.array([st for *_, st, _ in refine_rows], dtype=str_dt), dtype=str_dt)
    fast_m = {i: m for i, _, _, m in rows}
    for m in REFINE_METRICS:
        fa = np.array([fast_m[i].get(m, np.nan) for i, *_ in refine_rows], dtype=float)
        fm = np.array([met.get(m, np.nan) if st == "done" else np.nan for *_, st, met in refine_rows],
                      dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = fa / fm - 1.0
        for suffix, v, unit in (("fast", fa, unit_of(m)), ("fmu", fm, unit_of(m)), ("rel_error", rel, "1")):
            w.dataset(f"/refine/{m}_{suffix}", v, units=unit, chunks=None)


def _say_refine(scenarios: list[Scenario], rows: list[tuple], refine_rows: list[tuple], say) -> None:
    """One line per FMU re-run: its status, or the fast plant's relative error against it."""
    fast_m = {i: m for i, _, _, m in rows}
    for i, sc, st, met in refine_rows:
        if st != "done":
            say(f"refine  {scenarios[i].name}: FMU re-run {sc.name} {st}")
            continue
        errs = ", ".join(f"{m} {fast_m[i][m] / met[m] - 1.0:+.2e}" for m in ("E_cooling_J", "PUE", "E_facility_J")
                         if m in met and m in fast_m[i] and met[m])
        say(f"refine  {scenarios[i].name}: fast vs FMU ({sc.name}) relative error: {errs}")


def _ensemble_summary(study_path, scenarios: list[Scenario], rows: list[tuple]):
    """The ensemble statistics of a study with ``[uncertainty]`` (:mod:`scheduler_sim.app.ensemble_run`), else None."""
    from .ensemble_run import ensemble_of_study, summarise_ensemble

    spec = ensemble_of_study(study_path)
    if spec is None:
        return None
    _, base = load_study(study_path, members=False)
    member_rows = {scenarios[i].name: (st, met) for i, st, _, met in rows}
    return summarise_ensemble(spec, base, member_rows, Path(study_path).read_text())
