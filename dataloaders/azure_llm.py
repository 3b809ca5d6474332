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
import re
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from dataloaders.report import LoadReport, LoadResult, TraceError
from dataloaders.request_csv import BaseRequestLoader, open_text

__all__ = ["AzureLLMLoader", "parse_datetimes"]

_DT = re.compile(r"^(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?$")


def parse_datetimes(texts: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Parse zone-less date-time text with any number (0-9) of fractional-second digits, read as UTC.

    Parameters
    ----------
    texts : list of str, length n
        E.g. ``"2023-11-16 18:15:46.6805900"``.

    Returns
    -------
    seconds : ndarray of int64, shape (n,)
        Whole Unix seconds (0 where invalid).
    fraction : ndarray of float64, shape (n,)
        Fractional second in [0, 1) (exact to the digits given, 0 where invalid).
    ok : ndarray of bool, shape (n,)
        Whether the text was a valid date-time.
    """
    n = len(texts)
    whole = []
    frac = np.zeros(n)
    ok = np.zeros(n, dtype=bool)
    for i, t in enumerate(texts):
        m = _DT.match(t.strip())
        if m is None:
            whole.append("NaT")
            continue
        whole.append(m.group(1).replace("T", " "))
        d = m.group(2)
        frac[i] = int(d) / 10 ** len(d) if d else 0.0
        ok[i] = True
    ts = pd.to_datetime(pd.Series(whole, dtype=object), format="%Y-%m-%d %H:%M:%S", errors="coerce")
    bad = ts.isna().to_numpy()
    ok &= ~bad
    secs = np.where(ok, ts.to_numpy("datetime64[s]").astype("int64", copy=False), 0)
    return secs.astype(np.int64), np.where(ok, frac, 0.0), ok


class AzureLLMLoader(BaseRequestLoader):
    """Azure LLM inference trace CSV (``TIMESTAMP, ContextTokens, GeneratedTokens``) -> request table."""

    name: ClassVar[str] = "azure_llm"
    header_columns: ClassVar[tuple[str, ...]] = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
    description: ClassVar[str] = "Azure LLM inference trace 2023 CSV (TIMESTAMP, ContextTokens, GeneratedTokens)"
    suffixes: ClassVar[tuple[str, ...]] = ()

    COLUMNS: ClassVar[tuple[str, str, str]] = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")

    def load(self, path: str | os.PathLike[str], *, strict: bool = False, **_: Any) -> LoadResult:
        """Read an Azure LLM inference trace.

        Parameters
        ----------
        path : str or os.PathLike
            The CSV (``.csv`` or ``.csv.gz``).
        strict : bool
            Raise on the first bad record instead of rejecting it.
        **_
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
        FileNotFoundError
            If the file does not exist.
        """
        report = LoadReport(source=str(path), loader=self.name)
        with open_text(path, report) as fh:
            reader = csv.reader(fh)
            header = next(reader, None)
            if header is None or [h.strip() for h in header[:3]] != list(self.COLUMNS):
                raise TraceError(str(path), "not an Azure LLM inference trace header", line=1, field="header",
                                 found=",".join(header or [])[:80], expected=",".join(self.COLUMNS))
            rows = [(i, r) for i, r in enumerate(reader, start=2) if r and any(x.strip() for x in r)]
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
            if not ok[k]:
                self._record(report, line, "TIMESTAMP", r[0], "YYYY-MM-DD HH:MM:SS[.fffffff]", "bad_timestamp",
                             strict)
                continue
            p = self._int_tokens(r[1])
            o = self._int_tokens(r[2])
            if p is None:
                self._record(report, line, "ContextTokens", r[1], "an integer in [1, 2**31]", "bad_context_tokens",
                             strict)
                continue
            if o is None:
                self._record(report, line, "GeneratedTokens", r[2], "an integer in [1, 2**31]", "bad_generated_tokens",
                             strict)
                continue
            T.append(float(secs[k] - s0) + float(fracs[k]))
            P.append(p)
            O.append(o)
            texts.append(r[0].strip())
            L.append(line)
        report.notes.append("TIMESTAMP has no time zone; read as UTC")
        return self._finish(report, T, P, O, None, float(s0), texts, lines=L, strict=strict, time_field="TIMESTAMP")
