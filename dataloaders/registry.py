"""Registry of trace loaders: built-in ones plus plugins from the ``hpctwin.dataloaders`` entry-point group.

A plugin package declares, in its ``pyproject.toml``::

    [project.entry-points."hpctwin.dataloaders"]
    mysite = "mysite_loader:MySiteLoader"

where ``MySiteLoader`` subclasses :class:`BaseLoader`. Built-in loaders are known even when hpctwin itself is not
installed (running from a checkout), so the registry never depends on package metadata being present.
"""

from __future__ import annotations

import abc
import csv
import importlib
import importlib.metadata
import io
import os
import warnings
from pathlib import Path
from typing import Any, ClassVar, NoReturn

from dataloaders.cache import cache_key, load_cached, store_cached
from dataloaders.report import LoadResult
from jobs.registry import Registry

__all__ = [
    "ENTRY_POINT_GROUP",
    "BaseLoader",
    "available_loaders",
    "get_loader",
    "guess_format",
    "load_trace",
    "register_loader",
]

#: Entry-point group scanned for third-party loaders.
ENTRY_POINT_GROUP = "hpctwin.dataloaders"

#: Built-in loaders, name -> "module:Class" (imported lazily).
_BUILTIN: dict[str, str] = {
    "swf": "dataloaders.swf:SWFLoader",
    "sacct": "dataloaders.slurm:SacctLoader",
    "batsim": "dataloaders.batsim:BatsimLoader",
    "alibaba_pods": "dataloaders.alibaba:AlibabaPodLoader",
    "pm100": "dataloaders.power_datasets:PM100Loader",
    "fugaku": "dataloaders.power_datasets:FugakuLoader",
    "adastra": "dataloaders.power_datasets:AdastraLoader",
    "lassen": "dataloaders.power_datasets:LassenLoader",
    "azure_llm": "dataloaders.azure_llm:AzureLLMLoader",
    "mooncake": "dataloaders.mooncake:MooncakeLoader",
    "request_csv": "dataloaders.request_csv:RequestCSVLoader",
}

#: File suffixes claimed by the built-in loaders (their classes' ``suffixes``), so that :func:`guess_format` can
#: pick a built-in loader without importing every loader module first (start-up time, issue #16 item 6).
#: tests/unit/test_startup.py checks that this table equals the classes' own ``suffixes``.
_BUILTIN_SUFFIXES: dict[str, tuple[str, ...]] = {
    "swf": (".swf",), "sacct": (".sacct", ".psv"), "batsim": (".json",), "alibaba_pods": (), "pm100": (),
    "fugaku": (), "adastra": (), "lassen": (), "azure_llm": (), "mooncake": (".jsonl",), "request_csv": (),
}

#: Loaders registered at run time with :func:`register_loader` (a :class:`jobs.registry.Registry`, as the policies,
#: plants and workload families); built-in and entry-point loaders are resolved lazily beside it.
_RUNTIME: Registry[type[BaseLoader]] = Registry("trace loader")


class BaseLoader(abc.ABC):
    """Abstract trace loader: reads one site trace into the canonical job table.

    Subclasses set the class attributes and implement :meth:`load`.

    Attributes
    ----------
    name : str
        Registry name, lower case (e.g. ``"swf"``).
    description : str
        One-line description shown by :func:`available_loaders`.
    suffixes : tuple of str
        File suffixes (lower case, with the dot, without a compression suffix such as ``.gz``) used by
        :func:`load_trace` to guess the format.
    header_columns : tuple of str
        For CSV formats (suffix ``.csv``, claimed by several loaders): the columns a header must contain for
        :func:`guess_format` to pick this loader from the file's first line.
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    suffixes: ClassVar[tuple[str, ...]] = ()
    header_columns: ClassVar[tuple[str, ...]] = ()

    @abc.abstractmethod
    def load(self, path: str | os.PathLike[str], **options: Any) -> LoadResult:
        """Read a trace file.

        Parameters
        ----------
        path : str | os.PathLike[str]
            The trace file (compressed or not, as the loader supports).
        **options : Any
            Loader-specific options; every loader accepts ``strict: bool``.

        Returns
        -------
        LoadResult
            The canonical job table and the load report.

        Notes
        -----
        Raised by the functions it calls, not by its own body:

        - ``dataloaders.report.TraceError``: If the trace yields zero jobs, or (``strict=True``) a record would
          be repaired or rejected.
        """


def _import_object(target: str) -> Any:
    module_name, _, attr = target.partition(":")
    obj = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def _entry_points() -> dict[str, importlib.metadata.EntryPoint]:
    try:
        eps = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
    except Exception as exc:  # broken metadata must not hide the built-in loaders
        warnings.warn(f"could not read entry points {ENTRY_POINT_GROUP!r}: {exc}", RuntimeWarning, stacklevel=3)
        return {}
    return {ep.name: ep for ep in eps}


def _targets() -> dict[str, Any]:
    """Name -> class, "module:Class" string, or EntryPoint; run-time > built-in > entry point."""
    out: dict[str, Any] = {}
    for name, ep in _entry_points().items():
        if name in _BUILTIN and ep.value.replace(" ", "") != _BUILTIN[name]:
            warnings.warn(
                f"entry point {name!r} = {ep.value!r} ({ENTRY_POINT_GROUP}) shadows a built-in loader; "
                f"the built-in {_BUILTIN[name]!r} is used",
                RuntimeWarning,
                stacklevel=3,
            )
            continue
        out[name] = ep
    out.update(_BUILTIN)
    out.update({name: _RUNTIME[name] for name in _RUNTIME})
    return out


def _resolve(name: str, target: Any) -> type[BaseLoader]:
    if isinstance(target, importlib.metadata.EntryPoint):
        cls = target.load()
    elif isinstance(target, str):
        cls = _import_object(target)
    else:
        cls = target
    if not (isinstance(cls, type) and issubclass(cls, BaseLoader)):
        raise TypeError(f"loader {name!r} resolves to {cls!r}, which is not a BaseLoader subclass")
    return cls


def register_loader(cls: type[BaseLoader], *, replace: bool = False) -> type[BaseLoader]:
    """Register a loader class at run time (usable as a class decorator).

    Parameters
    ----------
    cls : type[BaseLoader]
        A :class:`BaseLoader` subclass with a non-empty ``name``.
    replace : bool
        Allow replacing a loader of the same name (default False).

    Returns
    -------
    type
        ``cls`` unchanged.

    Raises
    ------
    TypeError
        If ``cls`` is not a BaseLoader subclass.
    ValueError
        If ``cls.name`` is empty, or already registered and ``replace`` is False.
    """
    if not (isinstance(cls, type) and issubclass(cls, BaseLoader)):
        raise TypeError(f"{cls!r} is not a BaseLoader subclass")
    if not cls.name:
        raise ValueError(f"{cls.__name__}.name is empty")
    if not replace and cls.name in _targets():
        raise ValueError(f"a loader named {cls.name!r} is already registered; pass replace=True to replace it")
    _RUNTIME.register(cls.name, cls, cls.description, replace=True)
    return cls


def _unknown(name: str, known: dict[str, Any]) -> NoReturn:
    """Raise the error of an unknown loader name.

    Parameters
    ----------
    name : str
        The name asked for.
    known : dict[str, Any]
        The registered names.

    Raises
    ------
    ValueError
        Always; the message lists the known names.
    """
    raise ValueError(f"unknown trace format {name!r}; known loaders: {', '.join(sorted(known)) or '(none)'}")


def get_loader(name: str) -> BaseLoader:
    """Return an instance of the loader registered under ``name``.

    Parameters
    ----------
    name : str
        Registry name (case-insensitive), e.g. ``"swf"``.

    Returns
    -------
    BaseLoader
        A new loader instance.

    Notes
    -----
    Raised by the functions it calls, not by its own body:

    - ``ValueError``: If no loader has that name; the message lists the known names.
    - ``TypeError``: If the registered object is not a BaseLoader subclass.
    """
    targets = _targets()
    key = name.lower()
    if key not in targets:
        _unknown(name, targets)
    return _resolve(key, targets[key])()


def available_loaders() -> dict[str, str]:
    """Return every known loader with its one-line description.

    Returns
    -------
    dict of str to str
        Name -> description, sorted by name. A plugin that fails to import is listed with the error as its
        description rather than hiding the others.
    """
    out: dict[str, str] = {}
    for name, target in sorted(_targets().items()):
        try:
            out[name] = _resolve(name, target).description
        except Exception as exc:  # one broken plugin must not hide the rest
            out[name] = f"(cannot be loaded: {type(exc).__name__}: {exc})"
    return out


_COMPRESSION_SUFFIXES = (".gz",)


def guess_format(path: str | os.PathLike[str]) -> str:
    """Guess a trace's loader name from its file name.

    Parameters
    ----------
    path : str | os.PathLike[str]
        Trace file name; a trailing ``.gz`` is ignored (``x.swf.gz`` -> ``swf``).

    Returns
    -------
    str
        The registry name of the first loader whose ``suffixes`` contains the file's suffix.

    Raises
    ------
    ValueError
        If no loader claims the suffix; the message lists the known loaders and their suffixes.
    """
    p = Path(path)
    suffixes = [s.lower() for s in p.suffixes]
    while suffixes and suffixes[-1] in _COMPRESSION_SUFFIXES:
        suffixes.pop()
    suffix = suffixes[-1] if suffixes else ""
    targets = sorted(_targets().items())
    if suffix and suffix != ".csv":  # fast path: built-ins by their static suffixes, plugins resolved in order
        for name, target in targets:
            static = _BUILTIN_SUFFIXES.get(name) if target == _BUILTIN.get(name) else None
            if static is None:
                try:
                    static = tuple(_resolve(name, target).suffixes)
                except Exception:  # noqa: BLE001 - a broken plugin cannot claim a suffix
                    continue
            if suffix in static:
                return name
    claims: dict[str, tuple[str, ...]] = {}
    headers: dict[str, tuple[str, ...]] = {}
    for name, target in targets:
        try:
            cls = _resolve(name, target)
            claims[name] = tuple(cls.suffixes)
            headers[name] = tuple(getattr(cls, "header_columns", ()))
        except Exception:  # noqa: BLE001 - a broken plugin cannot claim a suffix
            continue
        if suffix and suffix in claims[name]:
            return name
    if suffix == ".csv":
        return _guess_csv(p, headers)
    known = ", ".join(f"{n} {list(s)}" for n, s in claims.items())
    raise ValueError(f"cannot guess the trace format of {str(path)!r} (suffix {suffix!r}); known loaders: {known}")


def _guess_csv(path: Path, headers: dict[str, tuple[str, ...]]) -> str:
    """The loader whose required header columns the CSV's first line contains (the most specific one wins).

    Parameters
    ----------
    path : Path
        The CSV file.
    headers : dict[str, tuple[str, ...]]
        Loader name -> the header columns it needs (empty: the loader does not claim CSV headers).

    Returns
    -------
    str
        The loader name.

    Raises
    ------
    ValueError
        If no loader's columns match, or two loaders with the same number of columns match (ambiguous); the
        message names the header found and the candidates, and asks for ``--format``.
    InputFileError
        If the one input opener refuses the file (UTF-16 / UTF-32, corrupt compressed stream).
    """
    from jobs.textfiles import InputFileError, read_input_head  # the one input opener (a BOM is dropped there)

    try:
        head = read_input_head(path, 65536, "CSV file")
    except InputFileError:
        raise
    except OSError as exc:
        raise ValueError(f"{path}: cannot read the header line to guess the CSV format ({exc})") from None
    line = head.decode("utf-8", errors="replace").splitlines()[0] if head else ""
    head = {c.strip() for c in next(csv.reader(io.StringIO(line)), [])}
    match = [(len(cols), n) for n, cols in headers.items() if cols and set(cols) <= head]
    if not match:
        cands = "; ".join(f"{n}: {', '.join(c)}" for n, c in headers.items() if c)
        raise ValueError(f"{path}: cannot guess the CSV format from its header ({line.strip()[:120]!r}); give "
                         f"--format (CSV loaders and the columns they need: {cands}; request_csv takes a column "
                         f"mapping)")
    match.sort(reverse=True)
    if len(match) > 1 and match[0][0] == match[1][0]:
        raise ValueError(f"{path}: the CSV header fits several loaders ({match[0][1]}, {match[1][1]}); give --format")
    return match[0][1]


def load_trace(path: str | os.PathLike[str], format: str | None = None, *, cache: bool = False,  # noqa: A002
               **options: Any) -> LoadResult:
    """Load a trace with the loader named ``format``, or the one guessed from the file suffix.

    Parameters
    ----------
    path : str | os.PathLike[str]
        The trace file.
    format : str | None
        Loader name; guessed with :func:`guess_format` when None.
    cache : bool
        Use the parsed-trace cache (:mod:`dataloaders.cache`, keyed by the input's sha256, the loader version and
        the options); default False. A strict load that would raise is never cached.
    **options : Any
        Passed to the loader's ``load`` (e.g. ``cores_per_node``, ``max_nodes``, ``strict`` for SWF).

    Returns
    -------
    LoadResult
        The canonical job table and the load report.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.

    Notes
    -----
    Raised by the functions it calls, not by its own body:

    - ``ValueError``: If the format is unknown or cannot be guessed (message lists the known loaders).
    - ``dataloaders.report.TraceError``: From the loader: zero jobs, unreadable file, or a strict-mode violation.
    """
    name = format if format is not None else guess_format(path)
    loader = get_loader(name)
    if not cache:
        return loader.load(path, **options)
    if not Path(path).exists():
        raise FileNotFoundError(str(path))
    key = cache_key(path, loader.name or name, options)
    hit = load_cached(key)
    if hit is not None:
        return hit
    res = loader.load(path, **options)
    try:
        store_cached(key, res)
    except OSError as exc:
        warnings.warn(f"could not write the trace cache: {exc}", RuntimeWarning, stacklevel=2)
    return res
