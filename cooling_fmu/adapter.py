"""Thin FMI 2.0 co-simulation layer over fmpy's ``FMU2Slave``, plus the variable map.

Methods are named after the standard (``instantiate``, ``setupExperiment``, ``enterInitializationMode``,
``exitInitializationMode``, ``setReal``, ``getReal``, ``doStep``, ``reset``, ``terminate``, ``freeInstance``).
Every status goes through :meth:`FMU2CoSimulation._check`, which raises :class:`FMUError` carrying the FMI function,
the status, the simulation time, the last inputs and the FMU log. The hot-path calls (:meth:`FMU2CoSimulation.raw`)
are plain ctypes function pointers taking integer addresses; their status is still checked by ``_check``.
"""

from __future__ import annotations

import ctypes
import importlib.util
import shutil
import tempfile
from collections import deque
from ctypes import c_double, c_int, c_size_t, c_void_p
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from jobs.textfiles import read_utf8

__all__ = [
    "BACKENDS",
    "FMU2CoSimulation",
    "FMUError",
    "MapEntry",
    "PyFMICoSimulation",
    "UNIT_CONVERSIONS",
    "VariableMap",
    "backend_available",
    "load_variable_map",
    "open_fmu",
]

MAPS_DIR = Path(__file__).resolve().parent / "maps"

_STATUS = ("ok", "warning", "discard", "error", "fatal", "pending")


class FMUError(RuntimeError):
    """An FMI call returned a status worse than warning.

    Parameters
    ----------
    function : str
        FMI function name, e.g. ``"fmi2DoStep"``.
    status : int
        FMI status code returned (2 discard, 3 error, 4 fatal, 5 pending; another value is shown as "illegal").
    time_s : float
        Simulation time at the call [s].
    inputs : dict[str, float]
        Last input values set through the adapter (FMU variable name -> value, FMU units); the message shows the
        first 40.
    log : list[str]
        Messages the FMU sent to the logger callback (the message shows the last 20).

    Attributes
    ----------
    function : str
        FMI function name, e.g. ``"fmi2DoStep"``.
    status : int
        FMI status code (2 discard, 3 error, 4 fatal, 5 pending).
    time_s : float
        Simulation time at the call [s].
    inputs : dict of str to float
        Last input values set through the adapter (FMU variable name -> value, FMU units).
    log : list of str
        Messages the FMU sent to the logger callback (most recent last, at most 200).
    """

    def __init__(self, function: str, status: int, time_s: float, inputs: dict[str, float], log: list[str]):
        label = _STATUS[status] if 0 <= status < len(_STATUS) else "illegal"
        shown = ", ".join(f"{k}={v:.6g}" for k, v in list(inputs.items())[:40])
        msg = (
            f"{function} returned status {status} ({label}) at t = {time_s:.6g} s; inputs: {{{shown}}}; "
            f"FMU log: {log[-20:] if log else '(empty)'}"
        )
        super().__init__(msg)
        self.function, self.status, self.time_s, self.inputs, self.log = function, status, time_s, inputs, log


#: Known conversions from an FMU unit to the SI unit hpctwin uses: ``value_SI = scale * value_FMU + offset``.
#: Sources: BIPM SI Brochure 9th ed. (degC, kWh = 3.6 MJ); NIST SP 811 (degF).
UNIT_CONVERSIONS: dict[tuple[str, str], tuple[float, float]] = {
    ("degC", "K"): (1.0, 273.15),
    ("degF", "K"): (5.0 / 9.0, 273.15 - 32.0 * 5.0 / 9.0),
    ("kW", "W"): (1e3, 0.0),
    ("MW", "W"): (1e6, 0.0),
    ("kJ", "J"): (1e3, 0.0),
    ("MJ", "J"): (1e6, 0.0),
    ("GJ", "J"): (1e9, 0.0),
    ("kWh", "J"): (3.6e6, 0.0),
    ("MWh", "J"): (3.6e9, 0.0),
    ("g/s", "kg/s"): (1e-3, 0.0),
    ("t", "kg"): (1e3, 0.0),
    ("%", "1"): (1e-2, 0.0),
}


@dataclass(frozen=True)
class MapEntry:
    """One hpctwin variable mapped to one FMU variable, with the unit conversion at this boundary.

    Attributes
    ----------
    name : str
        hpctwin name, e.g. ``"T_sec_sup[3]"``.
    fmu : str
        FMU variable name, e.g. ``"T_sec_sup[3]"`` or ``"cdu3_supplyTemp"``.
    unit : str
        SI unit hpctwin uses.
    description : str
        Human description.
    fmu_unit : str
        Unit the FMU declares for the variable (default: ``unit``).
    scale, offset : float
        ``value_SI = scale * value_FMU + offset``.
    """

    name: str
    fmu: str
    unit: str
    description: str = ""
    fmu_unit: str = ""
    scale: float = 1.0
    offset: float = 0.0

    @property
    def is_identity(self) -> bool:
        """bool: True if no conversion is applied."""
        return self.scale == 1.0 and self.offset == 0.0


@dataclass(frozen=True)
class VariableMap:
    """Expanded variable map for a plant with ``n_cdu`` CDUs.

    Attributes
    ----------
    inputs, states, outputs : tuple of MapEntry
        Entries in FMU input order (per-CDU entries first, element 1..n_cdu), states, outputs. ``states`` may be
        empty (a site FMU that does not expose its states; it then starts from its own start values).
    path : str
        File the map was read from.
    """

    inputs: tuple[MapEntry, ...]
    states: tuple[MapEntry, ...]
    outputs: tuple[MapEntry, ...]
    path: str = ""


def _conversion(path: Path, where: str, spec: dict, unit: str) -> tuple[str, float, float]:
    """Resolve (fmu_unit, scale, offset) of one map entry; see :func:`load_variable_map`."""
    fmu_unit = str(spec.get("fmu_unit", unit))
    known = UNIT_CONVERSIONS.get((fmu_unit, unit), (1.0, 0.0) if fmu_unit == unit else None)
    if "scale" in spec or "offset" in spec:
        scale, offset = float(spec.get("scale", 1.0)), float(spec.get("offset", 0.0))
        if not (np.isfinite(scale) and np.isfinite(offset) and scale != 0.0):
            raise ValueError(f"{path}: entry '{where}': scale must be finite and non-zero, offset finite")
        if known is not None and not (np.isclose(scale, known[0], rtol=1e-9, atol=0)
                                      and np.isclose(offset, known[1], rtol=1e-9, atol=1e-9)):
            raise ValueError(f"{path}: entry '{where}': {fmu_unit} -> {unit} is value * {known[0]!r} + {known[1]!r}, "
                             f"but the map says scale {scale!r}, offset {offset!r}")
        return fmu_unit, scale, offset
    if known is None:
        raise ValueError(f"{path}: entry '{where}': no known conversion from {fmu_unit!r} to {unit!r}; give scale "
                         f"and offset (value_SI = scale * value_FMU + offset)")
    return fmu_unit, known[0], known[1]


def load_variable_map(n_cdu: int, path: str | Path | None = None) -> VariableMap:
    """Load a variable-map YAML file and expand per-CDU entries.

    Each entry is ``hpctwin_name: {fmu: NAME, unit: SI_UNIT, fmu_unit: UNIT, scale: S, offset: O, per_cdu: BOOL}``.
    ``fmu_unit`` defaults to ``unit``; ``scale`` / ``offset`` default to the known conversion
    (:data:`UNIT_CONVERSIONS`) and, when given for a known pair, must agree with it. A per-CDU entry expands to
    ``name[i]``, i = 1..n_cdu; its FMU name is ``fmu.format(i=i)`` if it contains ``{i}``, else ``fmu[i]``
    (a Modelica array element).

    Parameters
    ----------
    n_cdu : int
        Number of CDUs (>= 1).
    path : str | Path | None
        Map file; default ``cooling_fmu/maps/hpctwin_plant.yaml``.

    Returns
    -------
    VariableMap
        The expanded map.

    Raises
    ------
    ValueError
        If a section (``inputs``, ``outputs``) is missing, an entry lacks ``fmu`` / ``unit``, or a conversion is
        unknown or inconsistent (the message names the file and entry).
    """
    path = Path(path) if path is not None else MAPS_DIR / "hpctwin_plant.yaml"
    try:
        st = path.stat()
        key = (int(n_cdu), str(path), str(path.resolve()), st.st_mtime_ns, st.st_size)
    except OSError:  # read_utf8 below names the file and the cause
        key = None
    if key is not None and key in _MAP_MEMO:  # a sweep rank's later scenario: the same (immutable) map
        return _MAP_MEMO[key]
    try:  # the one input opener (size, encoding), then a YAML error or a nesting too deep named with the file
        data = yaml.safe_load(read_utf8(path, "variable map"))
    except yaml.YAMLError as exc:
        raise ValueError(f"{path}: not valid YAML: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") \
            from None
    except RecursionError:
        raise ValueError(f"{path}: variable map nested too deeply to be read") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a variable map (expected a YAML mapping)")
    sections: dict[str, tuple[MapEntry, ...]] = {}
    for section in ("inputs", "states", "outputs"):
        spec_s = data.get(section)
        if spec_s is None and section == "states":
            sections[section] = ()
            continue
        if not isinstance(spec_s, dict):
            raise ValueError(f"{path}: missing section '{section}'")
        entries: list[MapEntry] = []
        for name, spec in spec_s.items():
            if not isinstance(spec, dict) or "fmu" not in spec or "unit" not in spec:
                raise ValueError(f"{path}: entry '{section}.{name}' needs 'fmu' and 'unit'")
            desc = str(spec.get("description", ""))
            unit = str(spec["unit"])
            fmu_unit, scale, offset = _conversion(path, f"{section}.{name}", spec, unit)
            fmu = str(spec["fmu"])
            if spec.get("per_cdu", False):
                entries += [
                    MapEntry(f"{name}[{i}]", fmu.format(i=i) if "{i}" in fmu else f"{fmu}[{i}]", unit, desc,
                             fmu_unit, scale, offset)
                    for i in range(1, n_cdu + 1)
                ]
            else:
                entries.append(MapEntry(str(name), fmu, unit, desc, fmu_unit, scale, offset))
        sections[section] = tuple(entries)
    vmap = VariableMap(**sections, path=str(path))
    if key is not None:
        _MAP_MEMO.clear()  # one map kept per process: a sweep or an ensemble runs one plant
        _MAP_MEMO[key] = vmap
    return vmap


#: The last variable map parsed in this process (:func:`load_variable_map`), keyed by CDU count, path, modification
#: time and size: parsing the YAML with the pure-Python parser was 85 % of a fast plant's set-up (0.5 s of 0.59 s
#: per scenario under load, issue #26 item 4). :class:`VariableMap` is frozen (tuples of frozen entries): shared.
_MAP_MEMO: dict[tuple, VariableMap] = {}


def _named_inputs(variables: dict, last_inputs: dict[int, float]) -> dict[str, float]:
    """The last inputs set through an adapter by FMU variable name, for :class:`FMUError` (both backends).

    Parameters
    ----------
    variables : dict
        The model description's variables by name (``valueReference``, ``causality``).
    last_inputs : dict[int, float]
        Last value set per value reference (FMU units).

    Returns
    -------
    dict[str, float]
        Input name (or the value reference as text, for a reference that is no input) -> value, in setting order.
    """
    names = {v.valueReference: n for n, v in variables.items() if v.causality == "input"}
    return {names.get(vr, str(vr)): val for vr, val in last_inputs.items()}


class _Raw:
    """Raw ctypes FMI functions with pointer arguments passed as integer addresses (hot path)."""

    def __init__(self, dll: ctypes.CDLL):
        def fn(name: str, *argtypes):
            return ctypes.CFUNCTYPE(c_int, *argtypes)((name, dll))

        self.fmi2SetReal = fn("fmi2SetReal", c_void_p, c_void_p, c_size_t, c_void_p)
        self.fmi2GetReal = fn("fmi2GetReal", c_void_p, c_void_p, c_size_t, c_void_p)
        self.fmi2DoStep = fn("fmi2DoStep", c_void_p, c_double, c_double, c_int)
        # hpctwin's own FMUs export these (cooling_fmu.build.install_integrator); other FMUs do not: None then
        self.hpctwin_set_max_substep = None
        self.hpctwin_run = None
        if hasattr(dll, "hpctwin_run") and hasattr(dll, "hpctwin_set_max_substep"):
            self.hpctwin_set_max_substep = fn("hpctwin_set_max_substep", c_void_p, c_double)
            self.hpctwin_run = ctypes.CFUNCTYPE(c_size_t, c_void_p, c_size_t, c_double, c_double, c_void_p, c_size_t,
                                                c_void_p, c_void_p, c_size_t, c_void_p, c_void_p)(("hpctwin_run", dll))
        # the sub-steps' error control and its piece count (cooling_fmu.build, BUILD_SCRIPT_VERSION >= 4)
        self.hpctwin_set_tolerance = None
        self.hpctwin_pieces = None
        if self.hpctwin_run is not None and hasattr(dll, "hpctwin_set_tolerance"):
            self.hpctwin_set_tolerance = fn("hpctwin_set_tolerance", c_void_p, c_double, c_double)
            self.hpctwin_pieces = ctypes.CFUNCTYPE(c_double, c_void_p)(("hpctwin_pieces", dll))


class FMU2CoSimulation:
    """One FMI 2.0 co-simulation instance of an FMU file, extracted once.

    Parameters
    ----------
    fmu_path : str | Path
        Path of the ``.fmu`` file (must support co-simulation on this platform).
    instance_name : str
        FMI instance name.

    Attributes
    ----------
    model_description : fmpy.model_description.ModelDescription
        Parsed modelDescription.xml.
    variables : dict of str to fmpy ScalarVariable
        FMU variables by name.
    time_s : float
        Current simulation time as tracked by the adapter [s].

    Raises
    ------
    ValueError
        If the FMU has no co-simulation interface.
    """

    def __init__(self, fmu_path: str | Path, instance_name: str = "hpctwin_plant"):
        from fmpy import extract, read_model_description  # heavy: fmpy is loaded only when an FMU is built or opened
        from fmpy.fmi2 import FMU2Slave

        self.fmu_path = Path(fmu_path)
        self.model_description = read_model_description(str(self.fmu_path))
        cs = self.model_description.coSimulation
        if cs is None:
            raise ValueError(f"{self.fmu_path}: FMU has no co-simulation interface")
        self._unzip_dir = tempfile.mkdtemp(prefix="hpctwin-fmu-")
        extract(str(self.fmu_path), unzipdir=self._unzip_dir)
        self.variables = {v.name: v for v in self.model_description.modelVariables}
        self._slave = FMU2Slave(
            guid=self.model_description.guid,
            unzipDirectory=self._unzip_dir,
            modelIdentifier=cs.modelIdentifier,
            instanceName=instance_name,
        )
        self.raw = _Raw(self._slave.dll)
        self.log: deque[str] = deque(maxlen=200)
        self.last_inputs: dict[int, float] = {}
        self.time_s = 0.0
        self._instantiated = False
        self._callbacks = None

    # ---- status checking: the one place --------------------------------------------------------------------------
    def _check(self, function: str, status: int) -> int:
        """Check an FMI status; raise :class:`FMUError` if worse than warning.

        Parameters
        ----------
        function : str
            FMI function name.
        status : int
            Returned status.

        Returns
        -------
        int
            ``status`` (0 ok or 1 warning; warnings are appended to :attr:`log`).

        Raises
        ------
        FMUError
            If ``status`` > 1 (discard, error, fatal, pending) or not an int.
        """
        if status == 0:
            return 0
        if status == 1:
            self.log.append(f"{function}: warning at t = {self.time_s} s")
            return 1
        raise FMUError(function, int(status), self.time_s, _named_inputs(self.variables, self.last_inputs),
                       list(self.log))

    def _call(self, function: str, method, *args):
        from fmpy.fmi1 import FMICallException  # heavy: fmpy is loaded only when an FMU is built or opened

        try:
            res = method(*args)
        except FMICallException as exc:
            self._check(function, exc.status)
            raise  # pragma: no cover - _check always raises for status > 1
        return res

    def check_raw(self, function: str, status: int) -> int:  # noqa: DOC502
        """Check the status of a :attr:`raw` call (hot path); see :meth:`_check`.

        Parameters
        ----------
        function : str
            FMI function name.
        status : int
            Returned status.

        Returns
        -------
        int
            ``status`` when it is ok or warning.

        Raises
        ------
        FMUError
            If the status is worse than warning (raised by :meth:`_check`).
        """
        return self._check(function, status)

    # ---- FMI 2.0 API ---------------------------------------------------------------------------------------------
    def instantiate(self, logging_on: bool = False) -> None:
        """``fmi2Instantiate`` as co-simulation, with a logger that records FMU messages in :attr:`log`.

        Parameters
        ----------
        logging_on : bool
            Passed to the FMU as ``loggingOn``.

        Raises
        ------
        FMUError
            If the FMU returns a NULL instance.
        """
        # heavy: fmpy is loaded only when an FMU is built or opened
        from fmpy.fmi2 import defaultCallbacks, fmi2CallbackFunctions, fmi2CallbackLoggerTYPE

        log = self.log

        def logger(env, instance, status, category, message):  # pragma: no cover - rumoca FMUs never log
            log.append(f"[{_STATUS[status] if 0 <= status < 6 else status}] {category!r}: {message!r}")

        cb = fmi2CallbackFunctions()
        cb.logger = fmi2CallbackLoggerTYPE(logger)
        cb.allocateMemory = defaultCallbacks.allocateMemory
        cb.freeMemory = defaultCallbacks.freeMemory
        self._callbacks = cb
        try:
            self._slave.instantiate(callbacks=cb, loggingOn=logging_on)
        except Exception as exc:  # fmpy raises a bare Exception on NULL
            raise FMUError("fmi2Instantiate", 3, self.time_s, {}, list(self.log) + [str(exc)]) from exc
        self._instantiated = True

    def setupExperiment(self, start_time_s: float = 0.0, stop_time_s: float | None = None) -> None:  # noqa: DOC502
        """``fmi2SetupExperiment`` without tolerance.

        Parameters
        ----------
        start_time_s : float
            Start time [s].
        stop_time_s : float | None
            Stop time [s]; undefined if None.

        Raises
        ------
        FMUError
            On a failing status (raised by :meth:`_check`).
        """
        self.time_s = float(start_time_s)
        self._call("fmi2SetupExperiment", self._slave.setupExperiment, None, start_time_s, stop_time_s)

    def enterInitializationMode(self) -> None:  # noqa: DOC502
        """``fmi2EnterInitializationMode``.

        Raises
        ------
        FMUError
            On a failing status (raised by :meth:`_check`).
        """
        self._call("fmi2EnterInitializationMode", self._slave.enterInitializationMode)

    def exitInitializationMode(self) -> None:  # noqa: DOC502
        """``fmi2ExitInitializationMode``.

        Raises
        ------
        FMUError
            On a failing status (raised by :meth:`_check`).
        """
        self._call("fmi2ExitInitializationMode", self._slave.exitInitializationMode)

    def setReal(self, vrs: list[int], values: np.ndarray | list[float]) -> None:  # noqa: DOC503
        """``fmi2SetReal``.

        Parameters
        ----------
        vrs : list[int]
            Value references.
        values : np.ndarray | list[float]
            Values in the FMU's units, shape (len(vrs),).

        Raises
        ------
        ValueError
            If lengths differ.
        FMUError
            On a failing status (raised by :meth:`_check`).
        """
        values = [float(v) for v in np.asarray(values, dtype=float).ravel()]
        if len(values) != len(vrs):
            raise ValueError(f"setReal: {len(vrs)} value references but {len(values)} values")
        for vr, v in zip(vrs, values):
            self.last_inputs[vr] = v
        self._call("fmi2SetReal", self._slave.setReal, list(vrs), values)

    def getReal(self, vrs: list[int]) -> np.ndarray:  # noqa: DOC502
        """``fmi2GetReal``.

        Parameters
        ----------
        vrs : list[int]
            Value references.

        Returns
        -------
        ndarray, shape (len(vrs),)
            Values in the FMU's units.

        Raises
        ------
        FMUError
            On a failing status (raised by :meth:`_check`).
        """
        return np.asarray(self._call("fmi2GetReal", self._slave.getReal, list(vrs)), dtype=float)

    def doStep(self, current_time_s: float, step_s: float) -> None:  # noqa: DOC502
        """``fmi2DoStep`` from ``current_time_s`` over ``step_s``.

        Parameters
        ----------
        current_time_s : float
            Current communication point [s].
        step_s : float
            Communication step size [s] (> 0).

        Raises
        ------
        FMUError
            On a failing status (raised by :meth:`_check`).
        """
        self.time_s = float(current_time_s)
        self._call("fmi2DoStep", self._slave.doStep, current_time_s, step_s)
        self.time_s = float(current_time_s) + float(step_s)

    def reset(self) -> None:  # noqa: DOC502
        """``fmi2Reset``: back to the instantiated state with default start values.

        Raises
        ------
        FMUError
            On a failing status (raised by :meth:`_check`).
        """
        self._call("fmi2Reset", self._slave.reset)
        self.time_s = 0.0
        self.last_inputs.clear()

    def terminate(self) -> None:  # noqa: DOC502
        """``fmi2Terminate``.

        Raises
        ------
        FMUError
            On a failing status (raised by :meth:`_check`).
        """
        self._call("fmi2Terminate", self._slave.terminate)

    def freeInstance(self) -> None:
        """``fmi2FreeInstance``, unload the library and delete the extracted FMU (idempotent)."""
        if self._instantiated:
            self._instantiated = False
            self._slave.freeInstance()
        if self._unzip_dir:
            shutil.rmtree(self._unzip_dir, ignore_errors=True)
            self._unzip_dir = ""

    @property
    def component(self) -> int:
        """int: address of the FMI instance, for the :attr:`raw` hot-path calls."""
        return self._slave.component

    def value_references(self, names: list[str] | tuple[str, ...]) -> list[int]:
        """Value references of FMU variables.

        Parameters
        ----------
        names : list[str] | tuple[str, ...]
            FMU variable names.

        Returns
        -------
        list of int
            Value references in the same order.

        Raises
        ------
        KeyError
            If a name is not in the FMU (the message lists it).
        """
        missing = [n for n in names if n not in self.variables]
        if missing:
            raise KeyError(f"{self.fmu_path.name}: variables not in the FMU: {missing}")
        return [self.variables[n].valueReference for n in names]

    def check_units(self, entries: tuple[MapEntry, ...]) -> None:  # noqa: DOC503
        """Check that each mapped FMU variable declares the expected unit.

        Parameters
        ----------
        entries : tuple[MapEntry, ...]
            Map entries to check.

        Raises
        ------
        KeyError
            If a variable is missing (raised by :meth:`value_references`).
        ValueError
            If a declared unit differs from the map's unit (no silent conversion).
        """
        self.value_references([e.fmu for e in entries])
        bad = [
            f"{e.fmu}: FMU unit {self.variables[e.fmu].unit!r}, map expects {e.fmu_unit or e.unit!r}"
            for e in entries
            if (self.variables[e.fmu].unit or "") != (e.fmu_unit or e.unit)
        ]
        if bad:
            raise ValueError(f"{self.fmu_path.name}: unit mismatch: " + "; ".join(bad))


class PyFMICoSimulation:
    """The same FMI 2.0 co-simulation interface as :class:`FMU2CoSimulation`, on pyfmi (JModelica.org / Modelon).

    pyfmi needs the FMI Library (FMIL), which neither PyPI nor Debian ships, so it could not be installed where this
    code was written: the conformance tests (``tests/validation/test_cooling_backends.py``) run it wherever pyfmi is
    importable and report it as skipped, with that reason, elsewhere. There is no ctypes hot path here; the plant
    uses the generic ``setReal`` / ``doStep`` / ``getReal`` loop.

    Parameters
    ----------
    fmu_path : str | Path
        Path of the ``.fmu`` file.
    instance_name : str
        Unused by pyfmi (kept for the same signature).

    Raises
    ------
    ImportError
        If pyfmi is not installed.
    """

    raw = None

    def __init__(self, fmu_path: str | Path, instance_name: str = "hpctwin_plant"):  # noqa: DOC502
        import pyfmi  # noqa: F401 - ImportError is the documented signal that the backend is unavailable

        from fmpy import read_model_description  # heavy: fmpy is loaded only when an FMU is built or opened

        self.fmu_path = Path(fmu_path)
        self.model_description = read_model_description(str(self.fmu_path))
        self.variables = {v.name: v for v in self.model_description.modelVariables}
        self._model = pyfmi.load_fmu(str(self.fmu_path), kind="CS", log_level=3)
        self.log: deque[str] = deque(maxlen=200)
        self.last_inputs: dict[int, float] = {}
        self.time_s = 0.0

    def _guard(self, function: str, call, *args):
        try:
            return call(*args)
        except Exception as exc:  # pyfmi raises FMUException for every non-ok status
            try:
                self.log.extend(str(m) for m in self._model.get_log()[-20:])
            except Exception:  # pragma: no cover - log retrieval is best effort
                pass
            raise FMUError(function, 3, self.time_s, _named_inputs(self.variables, self.last_inputs),
                           list(self.log) + [str(exc)]) from exc

    def check_raw(self, function: str, status: int) -> int:  # pragma: no cover - no raw path on pyfmi
        """Check a status code (kept for interface parity; pyfmi raises instead of returning codes).

        Parameters
        ----------
        function : str
            FMI function name.
        status : int
            Returned status.

        Returns
        -------
        int
            ``status`` if ok or warning.

        Raises
        ------
        FMUError
            If ``status`` > 1.
        """
        if status > 1:
            raise FMUError(function, int(status), self.time_s, {}, list(self.log))
        return status

    def instantiate(self, logging_on: bool = False) -> None:
        """No-op: ``pyfmi.load_fmu`` already instantiated the FMU.

        Parameters
        ----------
        logging_on : bool
            Ignored.
        """

    def setupExperiment(self, start_time_s: float = 0.0, stop_time_s: float | None = None) -> None:
        """``fmi2SetupExperiment``.

        Parameters
        ----------
        start_time_s : float
            Start time [s].
        stop_time_s : float | None
            Stop time [s] (None: undefined).
        """
        self.time_s = float(start_time_s)
        kw = {"start_time": start_time_s}
        if stop_time_s is not None:
            kw.update(stop_time_defined=True, stop_time=stop_time_s)
        self._guard("fmi2SetupExperiment", lambda: self._model.setup_experiment(**kw))

    def enterInitializationMode(self) -> None:
        """``fmi2EnterInitializationMode``."""
        self._guard("fmi2EnterInitializationMode", self._model.enter_initialization_mode)

    def exitInitializationMode(self) -> None:
        """``fmi2ExitInitializationMode``."""
        self._guard("fmi2ExitInitializationMode", self._model.exit_initialization_mode)

    def setReal(self, vrs: list[int], values: np.ndarray | list[float]) -> None:
        """``fmi2SetReal``.

        Parameters
        ----------
        vrs : list[int]
            Value references.
        values : np.ndarray | list[float]
            Values in the FMU's units, shape (len(vrs),).
        """
        v = np.asarray(values, dtype=float).ravel()
        self.last_inputs.update(zip(vrs, v.tolist()))
        self._guard("fmi2SetReal", self._model.set_real, np.asarray(vrs, dtype=np.uint32), v)

    def getReal(self, vrs: list[int]) -> np.ndarray:
        """``fmi2GetReal``.

        Parameters
        ----------
        vrs : list[int]
            Value references.

        Returns
        -------
        ndarray, shape (len(vrs),)
            Values in the FMU's units.
        """
        return np.asarray(self._guard("fmi2GetReal", self._model.get_real, np.asarray(vrs, dtype=np.uint32)),
                          dtype=float)

    def doStep(self, current_time_s: float, step_s: float) -> None:
        """``fmi2DoStep``.

        Parameters
        ----------
        current_time_s : float
            Current communication point [s].
        step_s : float
            Communication step [s].

        Raises
        ------
        FMUError
            If the step fails.
        """
        self.time_s = float(current_time_s)
        status = self._guard("fmi2DoStep", self._model.do_step, current_time_s, step_s, True)
        if status not in (0, 1, None):
            raise FMUError("fmi2DoStep", int(status), self.time_s, {}, list(self.log))
        self.time_s = float(current_time_s) + float(step_s)

    def reset(self) -> None:
        """``fmi2Reset``."""
        self._guard("fmi2Reset", self._model.reset)
        self.time_s = 0.0
        self.last_inputs.clear()

    def terminate(self) -> None:
        """``fmi2Terminate``."""
        self._guard("fmi2Terminate", self._model.terminate)

    def freeInstance(self) -> None:
        """Free the pyfmi model (idempotent)."""
        model, self._model = getattr(self, "_model", None), None
        if model is not None:
            try:
                model.free_instance()
            except Exception:  # pragma: no cover - pyfmi frees on garbage collection as well
                pass

    value_references = FMU2CoSimulation.value_references
    check_units = FMU2CoSimulation.check_units


#: FMI backends by name. ``fmpy`` is always available (a dependency); ``pyfmi`` only where it is installed.
BACKENDS = {"fmpy": FMU2CoSimulation, "pyfmi": PyFMICoSimulation}


def backend_available(name: str) -> tuple[bool, str]:
    """Whether an FMI backend can be used here.

    Parameters
    ----------
    name : str
        ``"fmpy"`` or ``"pyfmi"``.

    Returns
    -------
    (bool, str)
        Availability and, when unavailable, the reason.

    Raises
    ------
    ValueError
        If the backend name is unknown.
    """
    if name not in BACKENDS:
        raise ValueError(f"unknown FMI backend {name!r}; choose from {sorted(BACKENDS)}")
    if importlib.util.find_spec(name) is None:
        why = {"pyfmi": "pyfmi is not installed: PyPI has only a 2018 sdist that needs the FMI Library (FMIL), which "
                        "no reachable registry ships (see docs/cooling.md)"}.get(name, f"{name} not installed")
        return False, why
    return True, ""


def open_fmu(fmu_path: str | Path, backend: str = "fmpy") -> FMU2CoSimulation | PyFMICoSimulation:  # noqa: DOC503
    """Open an FMU for co-simulation with the chosen backend.

    Parameters
    ----------
    fmu_path : str | Path
        FMU file.
    backend : str
        ``"fmpy"`` (default) or ``"pyfmi"``.

    Returns
    -------
    FMU2CoSimulation or PyFMICoSimulation
        The opened (extracted, loaded) FMU, not yet instantiated.

    Raises
    ------
    ValueError
        If the backend is unknown (raised by :func:`backend_available`).
    ImportError
        If the backend is not installed (the message gives the reason).
    """
    ok, why = backend_available(backend)
    if not ok:
        raise ImportError(why)
    return BACKENDS[backend](fmu_path)
