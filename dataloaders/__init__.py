"""Site trace loaders: read a job trace into the canonical job table (:mod:`jobs.table`) plus a load report.

Use :func:`load_trace` (format guessed from the file suffix) or :func:`get_loader`; third-party loaders register
under the entry-point group ``hpctwin.dataloaders``. Every load returns a :class:`LoadResult` whose
:class:`LoadReport` counts what was read, accepted, repaired and rejected, with line numbers.
"""

from dataloaders.registry import (
    ENTRY_POINT_GROUP,
    BaseLoader,
    available_loaders,
    get_loader,
    guess_format,
    load_trace,
    register_loader,
)
from dataloaders.report import Issue, LoadReport, LoadResult, TraceError
from dataloaders.swf import SWFLoader, read_swf

__all__ = [
    "ENTRY_POINT_GROUP",
    "BaseLoader",
    "Issue",
    "LoadReport",
    "LoadResult",
    "SWFLoader",
    "TraceError",
    "available_loaders",
    "get_loader",
    "guess_format",
    "load_trace",
    "read_swf",
    "register_loader",
]
