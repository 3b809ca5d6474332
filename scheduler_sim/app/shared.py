"""Inputs parsed once per process and shared, read-only, by the scenarios a process runs (issue #26 item 4).

A sweep rank or an ensemble runs many scenarios of one study in one process (:mod:`scheduler_sim.app.sweep`);
most of them read the same trace, weather file, system and plant description. :func:`shared` keeps what such a
parse returns, keyed by what it depends on, so a later scenario of the same process takes it instead of parsing
again:

* a file's key is its resolved path, inode, size and modification time (:func:`file_key`): a file edited between
  two scenarios (a new modification time or size) is parsed again, and two different files never share;
* the options of the parse are part of the key (loader options, ``accept_long_gaps``, ...);
* a derived table is keyed by the *content* of its input (the fast plant's steady table by the plant description's
  JSON), so two scenarios whose plants differ (an ensemble member's perturbed pumps) never share it.

What is shared must not be written: the system's index arrays are made read-only (:func:`shared_system`); the
trace is handed out as a copy (the runner adds notes to the report and derives new tables); the weather object
is never changed by a run (:meth:`cooling_fmu.weather.Weather.at_calendar` returns a new object); plant
descriptions are frozen pydantic models. Each kind keeps its :data:`LIMIT` most recent entries (a study that
alternates between a few systems or weather files keeps them all; one that reads a new file per scenario holds
at most that many); a parsed trace keeps one (:data:`LIMITS`).

``parse_counts()`` tells how often each kind was really parsed in this process (tests: a shared parse is not
done again; changing a scenario's input parses again).
"""

from __future__ import annotations

import dataclasses
import os
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import numpy as np

if TYPE_CHECKING:
    from cooling_fmu.params import PlantParams
    from cooling_fmu.quasisteady import SteadyTable

__all__ = ["shared", "file_key", "parse_counts", "clear", "LIMIT", "LIMITS", "shared_system", "shared_plant_params",
           "shared_weather", "shared_steady_table", "shared_sha256", "shared_swf_header"]

T = TypeVar("T")

#: Entries kept per kind (least recently used out first); :data:`LIMITS` overrides it for a kind.
LIMIT = 4
#: Kinds that keep fewer: a parsed trace can hold millions of jobs, so one is kept (a sweep replays one trace).
LIMITS = {"trace": 1}

_MEMO: dict[str, OrderedDict] = {}
_PARSES: dict[str, int] = {}


def file_key(path: str | Path) -> tuple | None:
    """What a parse of a file depends on: ``(resolved path, inode, size, mtime_ns)``; None if it cannot be stat'ed.

    Parameters
    ----------
    path : str | Path
        The file.

    Returns
    -------
    tuple or None
        The key; None (do not share: parse, and let the parser report the problem) when ``stat`` fails.
    """
    try:
        p = Path(path).resolve()
        st = os.stat(p)
    except (OSError, RuntimeError):
        return None
    return (str(p), st.st_ino, st.st_size, st.st_mtime_ns)


def shared(kind: str, key: tuple | None, build: Callable[[], T]) -> T:
    """The value ``build()`` returned for ``(kind, key)`` earlier in this process, or ``build()`` now (kept).

    Parameters
    ----------
    kind : str
        What is parsed (``"system"``, ``"weather"``, ...): each kind keeps its own :data:`LIMIT` entries.
    key : tuple | None
        Everything the value depends on (file keys of :func:`file_key`, options, content); None: not shared
        (``build()`` is called and its value not kept).
    build : Callable[[], T]
        The parse. An exception it raises propagates and nothing is kept.

    Returns
    -------
    T
        The shared value (the same object for every caller with the same key: do not modify it).
    """
    if key is None:
        _PARSES[kind] = _PARSES.get(kind, 0) + 1
        return build()
    memo = _MEMO.setdefault(kind, OrderedDict())
    if key in memo:
        memo.move_to_end(key)
        return memo[key]
    value = build()
    _PARSES[kind] = _PARSES.get(kind, 0) + 1
    memo[key] = value
    while len(memo) > LIMITS.get(kind, LIMIT):
        memo.popitem(last=False)
    return value


def parse_counts() -> dict[str, int]:
    """How many times each kind was parsed (not taken from the share) in this process.

    Returns
    -------
    dict[str, int]
        Kind -> parses.
    """
    return dict(_PARSES)


def clear() -> None:
    """Forget every shared value and the parse counts (tests)."""
    _MEMO.clear()
    _PARSES.clear()


def _read_only(system):
    """The system with its index arrays made read-only (so a run writing into a shared one fails loudly)."""
    for f in dataclasses.fields(system):
        v = getattr(system, f.name)
        if isinstance(v, np.ndarray):
            v.flags.writeable = False
    return system


def shared_system(name_or_path: str | Path):  # noqa: DOC502
    """:func:`power.load_system`, parsed once per process for each file (its index arrays read-only).

    Parameters
    ----------
    name_or_path : str | Path
        A bundled system name or a ``.toml`` path, as :func:`power.load_system` takes it.

    Returns
    -------
    power.System
        The shared platform description.

    Raises
    ------
    FileNotFoundError
        If there is no such system (raised by :func:`power.load_system`).
    SystemFileError
        (:class:`power.system.SystemFileError`) If the file is invalid (raised by :func:`power.load_system`).
    """
    from power import load_system
    from power.system import SYSTEMS_DIR

    p = Path(name_or_path)
    if not (p.suffix == ".toml" or p.exists()):  # the bundled name, resolved as load_system does
        p = SYSTEMS_DIR / f"{name_or_path}.toml"
    k = file_key(p)
    return shared("system", None if k is None else (k,), lambda: _read_only(load_system(name_or_path)))


def shared_plant_params(name_or_path: str | Path):  # noqa: DOC502
    """:func:`cooling_fmu.params.load_plant_params`, parsed once per process for each file.

    Parameters
    ----------
    name_or_path : str | Path
        A shipped plant name or a plant description path.

    Returns
    -------
    cooling_fmu.params.PlantParams
        The shared (frozen) plant description.

    Raises
    ------
    PlantParamsError
        (:class:`cooling_fmu.params.PlantParamsError`) If the description is missing or invalid (raised by
        :func:`cooling_fmu.params.load_plant_params`).
    """
    from cooling_fmu.params import PlantParams, load_plant_params, plant_params_path

    if isinstance(name_or_path, PlantParams):
        return name_or_path
    try:
        k = file_key(plant_params_path(name_or_path))
    except Exception:  # noqa: BLE001 - an unresolvable name: the loader below raises its own error
        k = None
    return shared("plant", None if k is None else (k,), lambda: load_plant_params(name_or_path))


def shared_weather(path: str | Path, accept_long_gaps: bool = False):  # noqa: DOC502
    """:meth:`cooling_fmu.weather.Weather.from_file`, parsed once per process for each file and option.

    Parameters
    ----------
    path : str | Path
        The EPW / TMY3 file (resolved).
    accept_long_gaps : bool
        As :meth:`~cooling_fmu.weather.Weather.from_file` (part of the key).

    Returns
    -------
    cooling_fmu.weather.Weather
        The shared weather (not calendar-aligned; :meth:`~cooling_fmu.weather.Weather.at_calendar` gives each run
        its own object).

    Raises
    ------
    WeatherFileError
        (:class:`cooling_fmu.weather.WeatherFileError`) If the file cannot be used (raised by
        :meth:`~cooling_fmu.weather.Weather.from_file`).
    """
    from cooling_fmu.weather import Weather

    k = file_key(path)
    return shared("weather", None if k is None else (k, bool(accept_long_gaps)),
                  lambda: Weather.from_file(path, accept_long_gaps=accept_long_gaps))


def shared_steady_table(params: PlantParams) -> SteadyTable:
    """The fast plant's steady table (:func:`cooling_fmu.quasisteady.cached_steady_table`), once per process for
    each plant, keyed by the plant description's content (a perturbed plant has its own).

    Parameters
    ----------
    params : PlantParams
        The plant (:class:`cooling_fmu.params.PlantParams`, after any ensemble perturbation).

    Returns
    -------
    SteadyTable
        The shared table (:class:`cooling_fmu.quasisteady.SteadyTable`) (its arrays read-only).
    """
    from cooling_fmu.quasisteady import cached_steady_table

    def build():
        table = cached_steady_table(params)
        for v in vars(table).values():
            if isinstance(v, np.ndarray):
                v.flags.writeable = False
        return table

    return shared("steady_table", (params.model_dump_json(),), build)


def shared_sha256(path: str | Path) -> str:  # noqa: DOC502
    """:func:`scheduler_sim.io.hdf5.sha256_file`, once per process for each file (keyed by :func:`file_key`).

    Parameters
    ----------
    path : str | Path
        The input file.

    Returns
    -------
    str
        Hex SHA-256 of its bytes.

    Raises
    ------
    OSError
        If the file cannot be read (raised by :func:`~scheduler_sim.io.hdf5.sha256_file`).
    """
    from ..io.hdf5 import sha256_file

    k = file_key(path)
    return shared("sha256", None if k is None else (k,), lambda: sha256_file(path))


def shared_swf_header(path: str | Path) -> dict:  # noqa: DOC502
    """:func:`dataloaders.swf.read_swf_header`, once per process for each file.

    Parameters
    ----------
    path : str | Path
        The SWF trace.

    Returns
    -------
    dict
        The header fields (shared: do not modify).

    Raises
    ------
    FileNotFoundError
        If the trace does not exist (raised by :func:`dataloaders.swf.read_swf_header`).
    TraceError
        (:class:`dataloaders.report.TraceError`) If the header cannot be read (raised by
        :func:`dataloaders.swf.read_swf_header`).
    """
    from dataloaders.swf import read_swf_header

    k = file_key(path)
    return shared("swf_header", None if k is None else (k,), lambda: read_swf_header(path))
