"""Loader for Mooncake request traces (JSON Lines: relative millisecond timestamps, lengths, prefix block ids).

Each line is one JSON object, e.g. ``{"timestamp": 27482, "input_length": 6955, "output_length": 52,
"hash_ids": [46, 47, 48]}``: ``timestamp`` in ms relative to the trace start, ``hash_ids`` the ids of the prompt's
512-token KV blocks (equal ids = shared prefix). There is no absolute time (``time_origin_unix_s`` = NaN).

References
----------
.. [1] R. Qin et al., "Mooncake: A KVCache-centric Disaggregated Architecture for LLM Serving", FAST 2025;
   traces at https://github.com/kvcache-ai/Mooncake (``mooncake_trace.jsonl``).
"""

from __future__ import annotations

import json
import os
from typing import Any, ClassVar

import numpy as np

from dataloaders.fields import RecordField, parse_record
from dataloaders.report import LoadReport, LoadResult
from dataloaders.request_csv import BaseRequestLoader, open_text

__all__ = ["MooncakeLoader"]


def _ms_to_s(x: Any) -> float | None:
    """A number of milliseconds -> seconds; None unless finite."""
    try:
        t = float(x) * 1e-3
    except (TypeError, ValueError, OverflowError):
        return None
    return t if np.isfinite(t) else None


def _block_ids(h: Any) -> tuple[int, ...] | None:
    """A list of integers -> a tuple; None for anything else."""
    return tuple(h) if isinstance(h, list) and all(isinstance(b, int) for b in h) else None


_TOKENS = "an integer in [1, 2**31]"
#: the fields of a Mooncake record, in the order they are checked (engine: dataloaders.fields)
_FIELDS = (
    RecordField("t", "timestamp", lambda r: r.get("timestamp"), _ms_to_s, "a number of milliseconds", "bad_timestamp",
                "s"),
    RecordField("prompt", "input_length", lambda r: r.get("input_length"), BaseRequestLoader._int_tokens, _TOKENS,
                "bad_input_length", "tokens"),
    RecordField("output", "output_length", lambda r: r.get("output_length"), BaseRequestLoader._int_tokens, _TOKENS,
                "bad_output_length", "tokens"),
    RecordField("prefix", "hash_ids", lambda r: r.get("hash_ids", []), _block_ids, "a list of integers",
                "bad_hash_ids", "block ids"),
)


class MooncakeLoader(BaseRequestLoader):
    """Mooncake JSONL request trace -> request table (prefix block ids kept for prefix-affinity routing)."""

    name: ClassVar[str] = "mooncake"
    description: ClassVar[str] = "Mooncake request trace JSONL (timestamp ms, input_length, output_length, hash_ids)"
    suffixes: ClassVar[tuple[str, ...]] = (".jsonl",)

    def load(self, path: str | os.PathLike[str], *, strict: bool = False, **options: Any) -> LoadResult:
        """Read a Mooncake JSONL trace.

        Parameters
        ----------
        path : str | os.PathLike[str]
            The ``.jsonl`` file (``.jsonl.gz`` allowed).
        strict : bool
            Raise on the first bad record instead of rejecting it.
        **options : Any
            Options meant for other loaders are ignored.

        Returns
        -------
        LoadResult
            ``jobs`` holds the request table (:mod:`jobs.requests`) with ``prefix_block_ids`` from ``hash_ids``.

        Notes
        -----
        Raised by the functions it calls, not by its own body:

        - ``TraceError``: Bad record in strict mode, or no request at all.
        - ``FileNotFoundError``: If the file does not exist.
        """
        report = LoadReport(source=str(path), loader=self.name)
        T, P, O, X, L = [], [], [], [], []
        with open_text(path, report) as fh:
            for line, text in enumerate(fh, start=1):
                if not text.strip():
                    continue
                report.records_read += 1
                try:
                    rec = json.loads(text)
                except (ValueError, RecursionError):  # RecursionError: a line nested too deeply to parse
                    rec = None
                if not isinstance(rec, dict):
                    self._record(report, line, "", text.strip(), "a JSON object", "bad_json", strict)
                    continue
                v = parse_record(rec, _FIELDS, lambda field, found, expected, reason, line=line:
                                 self._record(report, line, field, found, expected, reason, strict))
                if v is None:
                    continue
                T.append(v["t"])
                P.append(v["prompt"])
                O.append(v["output"])
                X.append(v["prefix"])
                L.append(line)
        return self._finish(report, T, P, O, X, float("nan"), "", lines=L, strict=strict, time_field="timestamp")
