"""Loader for the Azure LLM inference traces (Patel et al., Splitwise, ISCA 2024; CC-BY-4.0).

Layout: a CSV with the header ``TIMESTAMP,ContextTokens,GeneratedTokens``. ``TIMESTAMP`` is local wall-clock text
with 7 fractional digits (100 ns) and no time zone, e.g. ``2023-11-16 18:15:46.6805900``; Python's ``%f`` takes at
most 6 digits, so the fraction is parsed separately and kept exact (relative times are computed as whole-second
differences plus fraction differences, never from a float Unix time, which has only ~0.2 us resolution in 2023).
The zone is unknown; the loader reads the text as UTC and says so in the report.

References
----------
.. [1] P. Patel et al., "Splitwise: Efficient Generative LLM Inference Using Phase Splitting", ISCA 2024.
   Trace: https://github.com/Azure/AzurePublicDataset (AzureLLMInferenceDataset2023), CC-BY-4.0.
"""

from __future__ import annotations

import csv
import os
from typing import Any, ClassVar


from dataloaders.fields import RecordField, parse_record
from dataloaders.report import LoadReport, LoadResult, TraceError
from dataloaders.request_csv import BaseRequestLoader, open_text, parse_datetimes

__all__ = ["AzureLLMLoader", "parse_datetimes"]



_TOKENS = "an integer in [1, 2**31]"
#: the fields of an Azure record ((TIMESTAMP parsed?, row)), in the order they are checked (engine: dataloaders.fields)
_FIELDS = (
    RecordField("time", "TIMESTAMP", lambda rec: rec[0] or None, lambda ok: ok, "YYYY-MM-DD HH:MM:SS[.fffffff]",
                "bad_timestamp", "s", found=lambda rec: rec[1][0]),
    RecordField("prompt", "ContextTokens", lambda rec: rec[1][1], BaseRequestLoader._int_tokens, _TOKENS,
                "bad_context_tokens", "tokens"),
    RecordField("output", "GeneratedTokens", lambda rec: rec[1][2], BaseRequestLoader._int_tokens, _TOKENS,
                "bad_generated_tokens", "tokens"),
)


class AzureLLMLoader(BaseRequestLoader):
    """Azure LLM inference trace CSV (``TIMESTAMP, ContextTokens, GeneratedTokens``) -> request table."""

    name: ClassVar[str] = "azure_llm"
    header_columns: ClassVar[tuple[str, ...]] = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
    description: ClassVar[str] = "Azure LLM inference trace 2023 CSV (TIMESTAMP, ContextTokens, GeneratedTokens)"
    suffixes: ClassVar[tuple[str, ...]] = ()

    COLUMNS: ClassVar[tuple[str, str, str]] = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")

    def load(self, path: str | os.PathLike[str], *, strict: bool = False, **options: Any) -> LoadResult:
        """Read an Azure LLM inference trace.

        Parameters
        ----------
        path : str | os.PathLike[str]
            The CSV (``.csv`` or ``.csv.gz``).
        strict : bool
            Raise on the first bad record instead of rejecting it.
        **options : Any
            Options meant for other loaders are ignored.

        Returns
        -------
        LoadResult
            ``jobs`` holds the request table (:mod:`jobs.requests`), ``attrs["time_origin_unix_s"]`` the first
            arrival as a Unix time (zone-less text read as UTC).

        Raises
        ------
        TraceError
            Wrong header (line 1), bad record in strict mode, or no request at all.

        Notes
        -----
        Raised by the functions it calls, not by its own body:

        - ``FileNotFoundError``: If the file does not exist.
        """
        report = LoadReport(source=str(path), loader=self.name)
        reader = None
        try:
            with open_text(path, report) as fh:
                reader = csv.reader(fh)
                header = next(reader, None)
                if header is None or [h.strip() for h in header[:3]] != list(self.COLUMNS):
                    raise TraceError(str(path), "not an Azure LLM inference trace header", line=1, field="header",
                                     found=",".join(header or [])[:80], expected=",".join(self.COLUMNS))
                rows = [(i, r) for i, r in enumerate(reader, start=2) if r and any(x.strip() for x in r)]
        except csv.Error as exc:  # e.g. a field beyond the csv module's field size limit, a NUL byte
            raise TraceError(str(path), f"not readable as CSV: {exc}", line=getattr(reader, "line_num", None),
                             expected="comma-separated text") from None
        report.records_read = len(rows)
        good = []
        for line, r in rows:
            if len(r) != 3:
                self._record(report, line, "", ",".join(r), "3 fields", "wrong_field_count", strict)
                continue
            good.append((line, r))
        secs, fracs, ok = parse_datetimes([r[0] for _, r in good])
        T, P, O, texts, L = [], [], [], [], []
        s0 = int(secs[ok][0]) if ok.any() else 0
        for k, (line, r) in enumerate(good):
            v = parse_record((bool(ok[k]), r), _FIELDS, lambda field, found, expected, reason, line=line:
                             self._record(report, line, field, found, expected, reason, strict))
            if v is None:
                continue
            T.append(float(secs[k] - s0) + float(fracs[k]))
            P.append(v["prompt"])
            O.append(v["output"])
            texts.append(r[0].strip())
            L.append(line)
        report.notes.append("TIMESTAMP has no time zone; read as UTC")
        return self._finish(report, T, P, O, None, float(s0), texts, lines=L, strict=strict, time_field="TIMESTAMP")
