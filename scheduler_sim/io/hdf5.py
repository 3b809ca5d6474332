"""HDF5 output of one run: a documented, versioned schema (docs/output_schema.md), written atomically.

Layout (schema 1.1; 1.1 added /attribution, readers accept any 1.x)::

    /                      attrs: schema_version, software_version, git_sha, run_name, system, policy, seed,
                                  config_json, pue_definition, cooling_modelled
    /jobs/<column>         (n_jobs,)           one dataset per job-table column, attrs units, long_name
    /timeseries/time_s     (n_intervals,)      start of each output interval [s]; attrs interval_s, time_origin_unix_s
    /timeseries/facility/<name>  (n_intervals,)          interval averages
    /timeseries/cdu/<name>       (n_intervals, n_cdus)   interval averages per CDU
    /timeseries/rack/P_in_W      (n_intervals, n_racks)  interval-average rack input power
    /summary               attrs: headline metrics (see scheduler_sim.kernel.metrics.summarize)
    /totals                attrs: exact energies [J] integrated over the run
    /attribution/...       job -> PUE attribution (scheduler_sim.analysis.attribution; docs/output_schema.md)
    /provenance            attrs: input_checksums_json, versions_json, load_report_json, info_json,
                                  created, wall_time_s, scheduling_time_s (the only attributes that vary
                                  between identical runs: wall-clock measurements)

A file is built in memory, then written to a temporary name in the same folder, flushed to the disk (``fsync``) and
renamed into place only when complete (:class:`atomic_h5`), so a reader never sees a half-written file, and a full
disk gives one error naming the file, with nothing left behind.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import subprocess
import sys
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

import h5py
import numpy as np
import pandas as pd

from jobs.table import JOB_COLUMNS
from power.facility import pue_category

from ..kernel.metrics import group_metrics

if TYPE_CHECKING:  # types only
    from ..serving.run import ServingOutput

__all__ = ["SCHEMA_VERSION", "VOLATILE_ATTRS", "write_run", "read_jobs", "read_series", "read_summary",
           "check_schema", "SchemaError", "sha256_file", "package_versions", "git_sha", "atomic_h5", "unit_of",
           "write_dataset", "write_attribution_group", "write_serving_group",
           "atomic_write_bytes", "clean_stale_temporaries", "content_digest", "verify_file", "DamagedFileError",
           "CONTENT_DIGEST_ATTR", "describe_unreadable"]

SCHEMA_VERSION = "1.1"
#: Attributes (in /provenance; ``sweep_timing_json`` at the root of a sweep's summary.h5) that legitimately differ
#: between two runs of the same inputs: wall times (``twin_latency_s``: wall time of each twin decision [s];
#: the serving engine's wall time and events per wall second in /summary and /serving/summary).
VOLATILE_ATTRS = ("created", "wall_time_s", "scheduling_time_s", "sweep_timing_json", "twin_latency_s",
                  "serving_engine_wall_time_s", "serving_engine_events_per_s", "engine_wall_time_s",
                  "engine_events_per_s")

PUE_DEFINITION = ("PUE = E_facility / E_IT, energy-weighted (The Green Grid WP49). E_IT = rack input energy "
                  "(node DC + SIVOC/VRM loss + rectifier loss + rack overhead; fans inside IT equipment are IT). "
                  "E_facility = E_IT + liquid cooling plant (pumps, tower fans, chiller) + air side (CRAH fans, "
                  "chilled water for heat to air) + electrical-chain losses (transformer, switchgear, UPS, PDU) + "
                  "lighting and building controls, for the stages the system description counts (attribute "
                  "facility_stages_counted). pPUE_mechanical = (E_IT + liquid plant + air side) / E_IT; "
                  "pPUE_electrical = (E_IT + electrical-chain losses) / E_IT. "
                  "ITUE = E_IT / (E_node_dc + E_rack_overhead). TUE = ITUE * PUE.")
#: The Green Grid rule on fans inside IT equipment, written to every run file.
IT_FANS_RULE = ("Fans inside IT equipment (server fans, cabinet blowers) are IT power (The Green Grid WP49); they "
                "are never counted in the facility overhead.")

_LONG_NAMES = {
    "P_node_dc_W": "Node component (DC) power, all nodes",
    "P_sivoc_loss_W": "VRM/SIVOC conversion loss, all nodes",
    "P_rectifier_loss_W": "Rectifier conversion loss, all racks",
    "P_rack_overhead_W": "Rack overhead devices (switches), all racks",
    "P_it_W": "IT power: rack input incl. conversion losses",
    "P_cooling_W": "Liquid cooling plant electrical power (pumps + fans + chiller)",
    "P_transformer_loss_W": "Medium-voltage transformer loss (no-load + load loss)",
    "P_switchgear_loss_W": "Switchgear, busway and cabling loss",
    "P_ups_loss_W": "UPS loss (on the share of the IT load that sits on UPS)",
    "P_pdu_loss_W": "PDU loss",
    "P_electrical_loss_W": "Electrical chain loss = transformer + switchgear + UPS + PDU",
    "Q_air_W": "Heat to room air: (1 - liquid_fraction) x IT + UPS and PDU loss + lighting (heat, not power)",
    "P_air_fan_W": "Air-handler / CRAH fan power for the heat that goes to air (not IT fans: those are IT)",
    "P_air_chiller_W": "Chilled-water power for the air side (0 while the economiser carries it)",
    "P_air_side_W": "Air side = CRAH fans + chilled water for air",
    "P_lighting_W": "Lighting and building controls (constant)",
    "P_mechanical_W": "Mechanical overhead = liquid plant P_cooling_W + air side",
    "P_facility_W": "Facility power = IT + mechanical + electrical-chain loss + lighting",
    "pPUE_mechanical": "Interval partial PUE of the mechanical plant = (IT + mechanical) / IT",
    "pPUE_electrical": "Interval partial PUE of the electrical chain = (IT + electrical loss) / IT",
    "PUE": "Interval PUE = interval facility energy / interval IT energy",
    "T_wb_K": "Outdoor wet-bulb temperature",
    "busy_nodes": "Time-averaged number of nodes running a job",
    "running_jobs": "Time-averaged number of running jobs",
    "queued_jobs": "Time-averaged number of queued jobs",
    "down_nodes": "Time-averaged number of down nodes",
    "Q_flow_W": "Heat delivered to the CDU by its racks",
}


class SchemaError(ValueError):
    """A file that is not an hpctwin run file of a compatible schema version."""


def unit_of(name: str) -> str:
    """Unit of a quantity from its name suffix (``_W`` -> W, ``_J`` -> J, ``_K`` -> K, ``_s`` -> s, ...)."""
    for suffix, unit in (("_W", "W"), ("_J", "J"), ("_K", "K"), ("_s", "s"), ("_kg_s", "kg/s"), ("_Pa", "Pa"),
                         ("_m3_s", "m3/s"), ("_kg", "kg"), ("_m3", "m3")):
        if name.endswith(suffix):
            return unit
    return "1"


def sha256_file(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def package_versions() -> dict[str, str]:
    """Versions of hpctwin and the packages that shape its results."""
    out = {"python": sys.version.split()[0]}
    for pkg in ("hpctwin", "numpy", "pandas", "h5py", "fmpy", "rumoca", "mpi4py", "psychrolib", "pydantic"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def git_sha() -> str:
    """Commit of the hpctwin source tree, or 'unknown' outside a git checkout."""
    try:
        here = Path(__file__).resolve().parent
        r = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5)
        return r.stdout.strip() if r.returncode == 0 else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _tmp_prefix(path: Path) -> str:
    return f".{path.name}.tmp-"


def _tmp_name(path: Path) -> Path:
    """Temporary name of ``path`` for this process: ``.<name>.tmp-<host>-<pid>`` in the same folder."""
    host = socket.gethostname().replace("-", "_") or "host"
    return path.with_name(f"{_tmp_prefix(path)}{host}-{os.getpid()}")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def clean_stale_temporaries(path: str | Path) -> list[Path]:
    """Remove temporaries of ``path`` left by dead processes of this host (e.g. after a ``kill -9``).

    A temporary is ``.<name>.tmp-<host>-<pid>`` (see :func:`atomic_write_bytes`); it is stale when ``<host>`` is
    this machine and no process ``<pid>`` runs. Temporaries of live processes, and of other hosts (a shared file
    system), are left alone.

    Returns
    -------
    list of Path
        The files removed.
    """
    path = Path(path)
    host = socket.gethostname().replace("-", "_") or "host"
    gone = []
    try:
        entries = list(path.parent.glob(_tmp_prefix(path) + "*"))
    except OSError:
        return gone
    for q in entries:
        rest = q.name[len(_tmp_prefix(path)):]
        h, _, pid = rest.rpartition("-")
        if h != host or not pid.isdigit() or int(pid) == os.getpid() or _pid_alive(int(pid)):
            continue
        try:
            q.unlink()
            gone.append(q)
        except OSError:
            pass
    return gone


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_bytes(path: str | Path, data: bytes, *, what: str = "output file") -> Path:
    """Write ``data`` to ``path`` atomically: temporary file, ``fsync``, rename, ``fsync`` of the folder.

    Readers see the old file or the new one, never a part. Stale temporaries of ``path`` left by dead processes
    are removed first (:func:`clean_stale_temporaries`). On any error (a full disk, a quota, an I/O error) the
    temporary is removed, the old file (if any) is kept, and one :class:`OSError` is raised whose message names the
    file, the size and the cause.

    Raises
    ------
    IsADirectoryError
        If ``path`` is a folder.
    OSError
        If the folder cannot be created or the file cannot be written (one line, file named).
    """
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{path}: is a folder; give an output file name")
    path.parent.mkdir(parents=True, exist_ok=True)
    clean_stale_temporaries(path)
    tmp = _tmp_name(path)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
        try:
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        why = exc.strerror or str(exc)
        err = OSError(f"{path}: could not write the {what} ({len(data) / 1e6:.1f} MB): {why}"
                      f"{'; the previous file is kept' if path.exists() else ''}")
        err.errno = exc.errno  # the message alone is printed (no "[Errno n]" prefix); the code stays available
        raise err from None
    _fsync_dir(path.parent)
    return path


#: Root attribute holding :func:`content_digest` of the rest of the file, set when the file is written.
CONTENT_DIGEST_ATTR = "content_sha256"


class DamagedFileError(ValueError):
    """A file that is not an HDF5 file, cannot be read, or whose content no longer matches its ``content_sha256``."""


def content_digest(f: h5py.File) -> str:
    """SHA-256 over every group, dataset and attribute of an open file, except ``content_sha256`` itself and the
    wall-clock attributes of :data:`VOLATILE_ATTRS` (so the digest, like the rest of the file, is the same for two
    runs of the same inputs).

    Objects are visited in sorted path order; each contributes its path, its attributes (sorted by name: name,
    dtype and bytes, or the text of a string) and, for a dataset, its dtype, shape and bytes (the ``repr`` of the
    values for variable-length strings). External links contribute their target. The digest depends only on the
    content, not on chunking, compression or the order objects were created in.
    """
    h = hashlib.sha256()

    def value_bytes(v) -> bytes:
        if isinstance(v, bytes):
            return b"b:" + v
        if isinstance(v, str):
            return b"s:" + v.encode("utf-8", "surrogatepass")
        a = np.asarray(v)
        if a.dtype.kind == "O":
            return b"o:" + repr(a.ravel().tolist()).encode()
        return str(a.dtype).encode() + str(a.shape).encode() + np.ascontiguousarray(a).tobytes()

    def visit(path: str, obj) -> None:
        h.update(b"\0P" + path.encode())
        for k in sorted(obj.attrs.keys()):
            if (path == "/" and k == CONTENT_DIGEST_ATTR) or k in VOLATILE_ATTRS:
                continue
            h.update(b"\0A" + k.encode() + b"=" + value_bytes(obj.attrs[k]))
        if isinstance(obj, h5py.Dataset):
            h.update(b"\0D" + value_bytes(obj[()]))
            return
        for name in sorted(obj.keys()):
            link = obj.get(name, getlink=True)
            sub = (path.rstrip("/") + "/" + name)
            if isinstance(link, h5py.ExternalLink):
                h.update(b"\0L" + sub.encode() + b"->" + link.filename.encode() + b":" + link.path.encode())
            elif isinstance(link, h5py.SoftLink):
                h.update(b"\0S" + sub.encode() + b"->" + link.path.encode())
            else:
                visit(sub, obj[name])

    visit("/", f)
    return h.hexdigest()


def verify_file(path: str | Path, *, require_digest: bool = False) -> bool:
    """Check that ``path`` is a readable HDF5 file whose content matches its ``content_sha256`` attribute.

    Parameters
    ----------
    path : str or Path
        The file.
    require_digest : bool
        Treat a file without ``content_sha256`` (written by an older hpctwin) as damaged.

    Returns
    -------
    bool
        True when the digest was checked and matches; False when the file has no digest (and it is not required).

    Raises
    ------
    DamagedFileError
        One line naming the file: not found, not an HDF5 file, unreadable, or its content does not match its
        recorded digest (the file was changed or damaged after it was written).
    """
    path = Path(path)
    if not path.is_file():
        raise DamagedFileError(f"{path}: no such file")
    try:
        with h5py.File(path, "r") as f:
            want = f.attrs.get(CONTENT_DIGEST_ATTR)
            if want is None:
                if require_digest:
                    raise DamagedFileError(f"{path}: has no content checksum ({CONTENT_DIGEST_ATTR}); it cannot be "
                                           f"verified")
                return False
            got = content_digest(f)
    except DamagedFileError:
        raise
    except Exception as exc:  # noqa: BLE001 - h5py raises OSError, KeyError, TypeError, ValueError ... on damage
        raise DamagedFileError(f"{path}: {describe_unreadable(path, exc)}") from None
    want = want.decode() if isinstance(want, bytes) else str(want)
    if got != want:
        raise DamagedFileError(f"{path}: damaged: its content does not match the checksum recorded when it was "
                               f"written ({CONTENT_DIGEST_ATTR})")
    return True


def describe_unreadable(path: str | Path, exc: BaseException) -> str:
    """One phrase saying why ``path`` cannot be read: not HDF5 at all (signature check), or damaged (with the cause)."""
    try:
        is_h5 = h5py.is_hdf5(str(path))
    except Exception:  # noqa: BLE001
        is_h5 = False
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if not is_h5:
        return "not an HDF5 file"
    return f"damaged HDF5 file, cannot be read ({type(exc).__name__}: {first})"


class atomic_h5:
    """Context manager: an ``h5py.File`` built in memory and written to ``path`` only on success, atomically.

    The HDF5 file is assembled in memory (HDF5 ``core`` driver without backing store), so the HDF5 library never
    writes to the disk and a full disk cannot leave it in a broken state; its image is then written by
    :func:`atomic_write_bytes` (temporary name in the same folder, ``fsync``, rename, folder ``fsync``; stale
    temporaries of dead processes cleaned; on failure one ``OSError`` naming the file, nothing left behind and the
    old file kept). On an exception inside the block nothing is written. Just before writing, the root attribute
    ``content_sha256`` is set to :func:`content_digest` of everything in the file, so a reader can tell a whole
    file from a damaged one (:func:`verify_file`).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def __enter__(self) -> h5py.File:
        if self.path.is_dir():
            raise IsADirectoryError(f"{self.path}: is a folder; give an output file name")
        self.f = h5py.File(f"hpctwin-{os.getpid()}-{id(self)}.h5", "w", driver="core", backing_store=False,
                           block_size=1 << 20, track_order=True)
        return self.f

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            self.f.close()
            return
        try:
            self.f.attrs[CONTENT_DIGEST_ATTR] = content_digest(self.f)
            self.f.flush()
            image = self.f.id.get_file_image()
        finally:
            self.f.close()
        atomic_write_bytes(self.path, image, what="HDF5 file")


def write_dataset(group: h5py.Group, name: str, data: np.ndarray, units: str, long_name: str = "") -> None:
    """Write one dataset of a run file with its ``units`` (and ``long_name``) attributes.

    Arrays of more than 1,024 elements are chunked (up to 65,536 rows a chunk) and gzip-compressed (level 4,
    shuffled), so files stay small and readable with plain h5py.

    Parameters
    ----------
    group : h5py.Group
        Group to create the dataset in.
    name : str
        Dataset name.
    data : array_like
        Values (any shape; strings as an ``h5py.string_dtype`` array).
    units : str
        Unit string (SI, e.g. ``W``, ``J``, ``s``; ``1`` for dimensionless; ``""`` for text).
    long_name : str, optional
        Description; not written when empty.
    """
    data = np.asarray(data)
    kw = {}
    if data.ndim >= 1 and data.size > 1024:
        kw = {"compression": "gzip", "compression_opts": 4, "shuffle": True,
              "chunks": (min(data.shape[0], 65536),) + data.shape[1:]}
    ds = group.create_dataset(name, data=data, track_times=False, **kw)
    ds.attrs["units"] = units
    if long_name:
        ds.attrs["long_name"] = long_name


_dataset = write_dataset  # short name used by the writers of this module


def write_run(path: str | Path, result, config_json: str, *, run_name: str, system_name: str, policy: str,
              seed: int, input_checksums: dict[str, str], load_report: dict | None = None,
              time_origin_unix_s: float = float("nan"), job_units: dict[str, str] | None = None,
              serving: ServingOutput | None = None, attribution=None, extra_groups=None) -> Path:
    """Write one run's results to ``path`` (atomically).

    Parameters
    ----------
    path : str or Path
        Output file; parent folders are created.
    result : scheduler_sim.kernel.simulation.SimulationResult
        What the run produced.
    config_json : str
        Canonical JSON of the run configuration.
    run_name, system_name, policy : str
        Identification stored as root attributes.
    seed : int
        Seed of the run.
    input_checksums : dict of str -> str
        SHA-256 of every input file (trace, weather, FMU), keyed by role.
    load_report : dict or None
        The trace loader's report (:meth:`dataloaders.report.LoadReport.to_dict`).
    time_origin_unix_s : float
        Unix time of simulation time 0 (NaN when the trace gives none).
    job_units : dict or None
        Units of job columns that are not recognisable by suffix.
    serving : scheduler_sim.serving.run.ServingOutput or None
        A co-located serving partition's results, written to ``/serving`` by :func:`write_serving_group`.
    attribution : scheduler_sim.analysis.attribution.Attribution or None
        The run's job -> PUE attribution (:func:`scheduler_sim.analysis.attribution.attribution_of_run`), written to
        ``/attribution`` by :func:`write_attribution_group`; None writes no ``/attribution`` group.
    extra_groups : callable(h5py.File) or None
        Writes further groups into the open file before it is sealed (e.g. ``/grid``,
        :func:`scheduler_sim.io.grid_group.write_grid_group`); None writes none.

    Returns
    -------
    Path
        ``path``.
    """
    path = Path(path)
    with atomic_h5(path) as f:
        f.attrs["schema_version"] = SCHEMA_VERSION
        f.attrs["software_version"] = package_versions().get("hpctwin", "unknown")
        f.attrs["git_sha"] = git_sha()
        f.attrs["run_name"] = run_name
        f.attrs["system"] = system_name
        f.attrs["policy"] = policy
        f.attrs["seed"] = int(seed)
        f.attrs["config_json"] = config_json
        f.attrs["pue_definition"] = PUE_DEFINITION
        f.attrs["pue_category"] = pue_category(result.info)
        f.attrs["it_fans_rule"] = IT_FANS_RULE
        f.attrs["facility_stages_counted"] = ",".join(result.info.get("facility_stages_counted", []))
        f.attrs["facility_stages_absent"] = ",".join(result.info.get("facility_stages_absent", []))
        f.attrs["cooling_modelled"] = bool("T_wb_K" in result.facility)
        f.attrs["complete"] = bool(result.info.get("complete", True))
        f.attrs["failure"] = str(result.info.get("failure", ""))
        if result.info.get("plant_out_of_bounds"):  # only when the plant left its physical bounds
            f.attrs["plant_out_of_bounds_json"] = json.dumps(result.info["plant_out_of_bounds"], sort_keys=True)

        g = f.create_group("jobs")
        for col in result.jobs.columns:
            s = result.jobs[col]
            if s.dtype == object or pd.api.types.is_string_dtype(s.dtype):
                data = np.array(s.astype(str).tolist(), dtype=h5py.string_dtype("utf-8"))
                units = ""
            else:
                data = s.to_numpy()
                units = JOB_COLUMNS[col][1] if col in JOB_COLUMNS else (job_units or {}).get(col, unit_of(col))
            desc = JOB_COLUMNS[col][2] if col in JOB_COLUMNS else _JOB_RESULT_DOCS.get(col, "")
            _dataset(g, col, data, units, desc)

        if result.job_cdu_it_W is not None:
            _dataset(g, "it_power_cdu_W", result.job_cdu_it_W, "W",
                     "Rack-input power of the job in each CDU while it runs, shape (n_jobs, n_cdus)")
        if result.allocations:
            al = f.create_group("allocations")
            al.attrs["long_name"] = "Every run attempt of every job as runs of consecutive nodes"
            for name, arr in result.allocations.items():
                _dataset(al, name, arr, unit_of(name))
        ts = f.create_group("timeseries")
        _dataset(ts, "time_s", result.time_s, "s", "Start of the output interval (simulation time)")
        ts.attrs["interval_s"] = float(result.time_s[1] - result.time_s[0]) if len(result.time_s) > 1 else float("nan")
        ts.attrs["time_origin_unix_s"] = float(time_origin_unix_s)
        fac = ts.create_group("facility")
        for name, arr in result.facility.items():
            _dataset(fac, name, arr, result.units.get(name, unit_of(name)), _LONG_NAMES.get(name, ""))
        if "PUE" in fac and "T_wb_K" not in result.facility:
            fac["PUE"].attrs["undefined"] = "no cooling plant was modelled (cooling off): PUE is not defined (NaN)"
        cdu = ts.create_group("cdu")
        for name, arr in result.cdu.items():
            _dataset(cdu, name, arr, result.units.get(name, unit_of(name)), _LONG_NAMES.get(name, ""))

        rk = ts.create_group("rack")
        for name, arr in result.rack.items():
            _dataset(rk, name, arr, unit_of(name), "Rack input power (IT power of the rack)")
        mg = f.create_group("metrics")
        for by in ("account", "size"):
            gm = group_metrics(result.jobs, by)
            gg = mg.create_group(f"by_{by}")
            for col in gm.columns:
                if gm[col].dtype == object or pd.api.types.is_string_dtype(gm[col].dtype):
                    _dataset(gg, col, np.array(gm[col].astype(str).tolist(), dtype=h5py.string_dtype("utf-8")), "")
                else:
                    _dataset(gg, col, gm[col].to_numpy(), {"node_hours": "h"}.get(col, unit_of(col)))
        sg = f.create_group("summary")
        for k, v in result.summary.items():
            sg.attrs[k] = float(v)
        tg = f.create_group("totals")
        for k, v in result.totals.items():
            tg.attrs[k] = float(v)
        if attribution is not None:
            write_attribution_group(f, attribution)
        pg = f.create_group("provenance")
        pg.attrs["input_checksums_json"] = json.dumps(input_checksums, sort_keys=True)
        pg.attrs["versions_json"] = json.dumps(package_versions(), sort_keys=True)
        pg.attrs["load_report_json"] = json.dumps(load_report or {}, sort_keys=True, default=str)
        info = {k: v for k, v in result.info.items() if k not in VOLATILE_ATTRS}
        pg.attrs["info_json"] = json.dumps(info, sort_keys=True, default=str)
        pg.attrs["created"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
        pg.attrs["wall_time_s"] = float(result.info.get("wall_time_s", float("nan")))
        pg.attrs["scheduling_time_s"] = float(result.info.get("scheduling_time_s", float("nan")))
        if "twin_latency_s" in result.info:
            pg.attrs["twin_latency_s"] = np.asarray(result.info["twin_latency_s"], dtype=float)
        if serving is not None:
            write_serving_group(f, serving)
        if extra_groups is not None:
            extra_groups(f)
    return path


_JOB_RESULT_DOCS = {
    "sim_start_s": "Simulated start time",
    "sim_end_s": "Simulated end time",
    "outcome": "Simulated outcome: 1 completed, 2 killed at requested wall time, 3 killed by node down, 0 not run",
    "prefilled": "Running when the window opened; placed first at the window start",
    "node_power_W": "DC power of each of the job's nodes while it runs (mean of the telemetry series if measured)",
    "node_power_model_W": "Node DC power the utilisation model gives for the job (written when measured power is used)",
    "energy_dc_J": "Node DC energy of the job = node_power_W * nodes * run_s",
    "energy_it_J": ("Rack-input energy of the job: its nodes' DC energy plus their attributed conversion losses and "
                    "overhead share"),
    "wait_s": "wait_s = sim_start_s - submit_time_s",
    "turnaround_s": "turnaround_s = sim_end_s - submit_time_s",
    "run_s": "run_s = sim_end_s - sim_start_s",
    "bounded_slowdown": "max(1, turnaround_s / max(run_s, 10 s))",
}


def check_schema(f: h5py.File, path: str | Path = "") -> None:
    """Refuse a file that is not an hpctwin run file of a compatible schema (same major version).

    Raises
    ------
    SchemaError
        With the file name, the version found and the version expected.
    """
    v = f.attrs.get("schema_version")
    if v is None:
        raise SchemaError(f"{path}: not an hpctwin run file (no schema_version attribute)")
    v = v.decode() if isinstance(v, bytes) else str(v)
    if v.split(".")[0] != SCHEMA_VERSION.split(".")[0]:
        raise SchemaError(f"{path}: schema_version {v} is not compatible with this hpctwin (reads {SCHEMA_VERSION})")


def read_jobs(path: str | Path) -> pd.DataFrame:
    """Read the /jobs table of a run file into a DataFrame (strings decoded)."""
    with h5py.File(path, "r") as f:
        check_schema(f, path)
        data = {}
        for name, ds in f["jobs"].items():
            if ds.ndim != 1:
                continue  # per-job matrices (e.g. it_power_cdu_W) are read with h5py
            arr = ds[()]
            if ds.dtype.kind == "O":
                arr = np.array([x.decode() if isinstance(x, bytes) else x for x in arr], dtype=object)
            data[name] = arr
    return pd.DataFrame(data)


def read_series(path: str | Path, which: str = "facility") -> pd.DataFrame:
    """Read /timeseries/facility (or one CDU column per series for 'cdu') into a DataFrame indexed by time_s."""
    with h5py.File(path, "r") as f:
        check_schema(f, path)
        t = f["timeseries/time_s"][()]
        cols = {}
        for name, ds in f[f"timeseries/{which}"].items():
            arr = ds[()]
            if arr.ndim == 1:
                cols[name] = arr
            else:
                for i in range(arr.shape[1]):
                    cols[f"{name}[{i}]"] = arr[:, i]
    return pd.DataFrame(cols, index=pd.Index(t, name="time_s"))


def read_summary(path: str | Path) -> dict[str, float]:
    """Headline metrics (/summary attributes) of a run file."""
    with h5py.File(path, "r") as f:
        check_schema(f, path)
        return {k: float(v) for k, v in f["summary"].attrs.items()}


#: long_name of the attribution quantities (``/attribution/*/<name>``).
_ATTRIBUTION_DOCS = {
    "E_it_J": "IT (rack-input) energy",
    "E_node_dc_J": "Node component (DC) energy",
    "E_sivoc_loss_J": "VRM/SIVOC conversion loss",
    "E_rectifier_loss_J": "Rectifier conversion loss",
    "E_rack_overhead_J": "Rack overhead devices (equal share per node-second)",
    "E_cdu_pump_J": "CDU secondary pump energy (share of the CDU's heat per interval)",
    "E_facility_pump_J": "Facility pump energy (share of the facility heat per interval)",
    "E_tower_pump_J": "Tower-water pump energy (share of the facility heat per interval; 0 if the plant has none)",
    "E_tower_fan_J": "Cooling-tower fan energy (share of the facility heat per interval)",
    "E_chiller_J": "Chiller energy (share of the facility heat per interval; 0 without a chiller)",
    "E_cooling_J": "Liquid cooling plant energy = CDU pumps + facility pumps + tower pumps + tower fans + chiller",
    "E_transformer_loss_J": "Medium-voltage transformer loss (share of IT power per interval)",
    "E_switchgear_loss_J": "Switchgear / busway / cabling loss (share of IT power per interval)",
    "E_ups_loss_J": "UPS loss (share of IT power per interval)",
    "E_pdu_loss_J": "PDU loss (share of IT power per interval)",
    "E_air_fan_J": "Air-handler / CRAH fan energy for heat that goes to air (share of IT power per interval)",
    "E_air_chiller_J": "Chilled water for the air side (share of IT power per interval; 0 on economiser)",
    "E_lighting_J": "Lighting and building controls (share of IT power per interval)",
    "E_electrical_loss_J": "Electrical chain loss = transformer + switchgear + UPS + PDU",
    "E_air_side_J": "Air side = air-handler fans + chilled water for air",
    "E_facility_J": "Facility energy = E_it_J + E_cooling_J + E_air_side_J + E_electrical_loss_J + E_lighting_J",
    "PUE_effective": "Effective PUE = E_facility_J / E_it_J",
}


def write_attribution_group(f: h5py.File, att) -> None:
    """Write the ``/attribution`` group (layout in docs/output_schema.md) into an open run file.

    Parameters
    ----------
    f : h5py.File
        The run file being written.
    att : scheduler_sim.analysis.attribution.Attribution
        The run's attribution (:func:`scheduler_sim.analysis.attribution.attribution_of_run`).
    """
    g = f.create_group("attribution")
    g.attrs["rules"] = ("Shares of CDU pumps by the consumer's share of that CDU's heat per output interval; "
                        "plant (facility pumps, tower pumps, tower fans, chiller) by share of the facility heat per interval; "
                        "idle and partition pseudo-consumers take the remainder. See scheduler_sim.attribution.")
    for k, v in att.attrs.items():
        g.attrs[k] = v
    for sub, data in (("jobs", att.jobs), ("pseudo", att.pseudo), ("timeseries", att.timeseries),
                      ("cdu", att.cdu), ("rack", att.rack)):
        sg = g.create_group(sub)
        for name, arr in data.items():
            arr = np.asarray(arr)
            if arr.dtype.kind == "U":
                sg.create_dataset(name, data=arr.astype(object), dtype=h5py.string_dtype("utf-8"))
                continue
            units = "1" if name in ("PUE", "PUE_cumulative", "PUE_effective", "cdu") else unit_of(name)
            _dataset(sg, name, arr, units, _ATTRIBUTION_DOCS.get(name, ""))
    tg = g.create_group("totals")
    for k, v in att.totals.items():
        tg.attrs[k] = float(v)


#: (units, long_name) of the ``/serving/requests`` columns.
_REQ_DOCS = {
    "request_id": ("1", "Request identifier (arrival order)"),
    "arrival_time_s": ("s", "Arrival time, trace time relative to the serving window start"),
    "prompt_tokens": ("1", "Prompt length [tokens]"),
    "output_tokens": ("1", "Generated tokens"),
    "prefix_block_ids": ("", "Prompt KV-block ids, space separated ('' when none)"),
    "replica": ("1", "Replica the router chose"),
    "first_token_s": ("s", "Time the first output token was produced (end of the prefill step; end of the KV "
                           "transfer when disaggregated)"),
    "finish_s": ("s", "Time the last output token was produced"),
    "ttft_s": ("s", "ttft_s = first_token_s - arrival_time_s"),
    "e2e_s": ("s", "e2e_s = finish_s - arrival_time_s"),
    "tpot_s": ("s", "tpot_s = (finish_s - first_token_s) / (output_tokens - 1); NaN for one-token outputs"),
    "preemptions": ("1", "Times the request was preempted (KV cache full) and recomputed"),
    "status": ("1", "1 completed, 2 rejected (can never fit in the KV cache), 0 not done"),
    "cached_prompt_tokens": ("1", "Prompt tokens whose prefill the prefix cache skipped (last prefill)"),
    "decode_replica": ("1", "Replica that decoded the request (= replica unless prefill/decode disaggregated)"),
    "kv_transfer_s": ("s", "End of the KV transfer - end of the prefill (link queueing included); NaN if none"),
    "slo_met": ("1", "completed and ttft_s <= ttft_slo_s and (tpot_s <= tpot_slo_s or one-token output)"),
}


def write_serving_group(f, so: ServingOutput) -> None:
    """Write ``/serving`` (requests, power series, summary) into an open HDF5 file (docs/output_schema.md).

    Parameters
    ----------
    f : h5py.File
        The run file being written.
    so : scheduler_sim.serving.run.ServingOutput
        After :func:`scheduler_sim.serving.run.finish_serving`.
    """
    g = f.create_group("serving")
    dep = so.result.deployment
    g.attrs["deployment_json"] = dep.model_dump_json()
    g.attrs["router"] = so.result.router
    g.attrs["limits_json"] = json.dumps(so.result.limits.__dict__, sort_keys=True)
    g.attrs["ttft_slo_s"] = float(so.ttft_slo_s)
    g.attrs["tpot_slo_s"] = float(so.tpot_slo_s)
    g.attrs["trace"] = str(so.trace_path)
    g.attrs["time_origin_unix_s"] = float(so.time_origin_unix_s)
    g.attrs["load_report_json"] = json.dumps(so.load_report, sort_keys=True, default=str)
    g.attrs["info_json"] = json.dumps({k: v for k, v in so.result.info.items() if k not in ("wall_time_s",
                                                                                           "events_per_s")},
                                      sort_keys=True, default=str)
    rq = g.create_group("requests")
    df = so.requests if so.requests is not None else so.result.requests
    for col in df.columns:
        units, desc = _REQ_DOCS.get(col, ("1", ""))
        if col == "prefix_block_ids":
            data = np.array([" ".join(str(b) for b in x) for x in df[col]], dtype=h5py.string_dtype("utf-8"))
        else:
            data = df[col].to_numpy()
        _dataset(rq, col, data, units, desc)
    pw = g.create_group("power")
    _dataset(pw, "time_s", so.power.t_s, "s", "Start of each profile row (simulation time); the last row holds "
                                             "to the end of the run")
    _dataset(pw, "P_gpu_W", so.power.P_gpu_W, "W", "Power of each GPU of each replica, shape (n_rows, "
                                                   "n_replicas); exact average over the row")
    _dataset(pw, "P_node_W", so.power.P_node_W, "W", "DC power of each partition node, shape (n_rows, n_nodes)")
    _dataset(pw, "nodes", so.nodes, "1", "System node index of each partition node")
    if so.power.P_link_W is not None and so.result.deployment.disaggregation is not None:
        _dataset(pw, "P_link_W", so.power.P_link_W, "W", "KV-transfer link power charged to each replica's nodes, "
                                                         "shape (n_rows, n_replicas); included in P_node_W")
    if so.power.P_fan_W is not None:
        _dataset(pw, "P_fan_W", so.power.P_fan_W, "W", "Server fan power of each partition node (air-cooled "
                                                       "servers), shape (n_rows, n_nodes); IT power (The Green "
                                                       "Grid: fans inside IT equipment are IT), included in P_node_W")
    pw.attrs["server_cooling"] = so.result.deployment.server.cooling
    pw.attrs["merge_s"] = so.power.merge_s
    pw.attrs["node_baseline_W"] = so.power.node_baseline_W
    sg = g.create_group("summary")
    for k, v in so.summary.items():
        sg.attrs[k] = float(v)
