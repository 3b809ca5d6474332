"""The one opener of every input file: bounded streaming decompression, encoding checks, line bounds (issue #21).

Every text or binary input the project reads from a user (traces of every loader in ``dataloaders/``, EPW / TMY3
weather, grid CSVs, request traces, the cooling-only power CSV, TOML configurations) goes through
:func:`read_input` (or :func:`read_input_head` for a peek at the first bytes, :func:`read_utf8` for UTF-8 text).
It:

* decompresses as a stream, told by the content and not the suffix: gzip (``1f 8b``, multi-member too), bzip2
  (``BZh``), xz (``fd 37 7a 58 5a 00``) and zip (``PK 03 04``, exactly one file in the archive). It stops as soon
  as the decompressed size passes the limit -- :data:`MAX_INPUT_BYTES` (2 GiB; the environment variable
  ``HPCTWIN_MAX_INPUT_BYTES`` sets another) or the caller's -- or as soon as ``expansion`` times that size passes
  the memory budget of :func:`jobs.memory.check_allocation`, so a gzip bomb costs at most the limit, never a
  ``MemoryError``;
* strips a UTF-8 byte-order mark, and refuses UTF-16 and UTF-32 (with or without a byte-order mark: the pattern of
  NUL bytes tells them) with ``<file> is UTF-16 (little-endian); save it as UTF-8``;
* bounds the length of a line (:data:`MAX_LINE_BYTES`, 1 MiB; None for formats without lines such as JSON), so a
  100 MB one-line file is refused before any parser sees it.

Every refusal is one :class:`InputFileError` (a ``ValueError``: exit 2 at the command line) whose message starts with
the file's name. Lowest layer (no project imports but :mod:`jobs.memory`), so that configuration, system, plant,
weather, grid and trace readers in every package share it.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import tomllib
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jobs.memory import check_allocation, fmt_bytes

__all__ = ["InputFileError", "MAX_INPUT_BYTES", "MAX_LINE_BYTES", "MAX_TEXT_CONFIG_BYTES", "max_input_bytes",
           "read_input", "read_input_head", "read_utf8", "toml_loads"]

#: Default limit on the decompressed size of one input file [bytes] (2 GiB); ``HPCTWIN_MAX_INPUT_BYTES`` overrides.
MAX_INPUT_BYTES = 2 << 30
#: Longest line accepted in a line-oriented input [bytes] (1 MiB; an SWF or CSV record is well under 1 KiB).
MAX_LINE_BYTES = 1 << 20
#: Largest configuration, system or plant TOML file [bytes] (16 MiB).
MAX_TEXT_CONFIG_BYTES = 16 << 20

_CHUNK = 1 << 20
_GZIP, _BZ2, _XZ, _ZIP = b"\x1f\x8b", b"BZh", b"\xfd7zXZ\x00", b"PK\x03\x04"


class InputFileError(ValueError):
    """An input file that cannot be read as it is; ``str()`` is ``"<path>: <reason>"``.

    Parameters
    ----------
    path : str | os.PathLike[str]
        The file.
    reason : str
        What is wrong, without the file name.

    Attributes
    ----------
    path : str
        The file.
    reason : str
        What is wrong.
    """

    def __init__(self, path: str | os.PathLike[str], reason: str) -> None:
        self.path = str(path)
        self.reason = reason
        super().__init__(f"{self.path}: {reason}")


def max_input_bytes() -> int:
    """The decompressed-size limit in force: ``HPCTWIN_MAX_INPUT_BYTES`` when set (an integer > 0), else 2 GiB.

    Returns
    -------
    int
        The limit [bytes].

    Raises
    ------
    ValueError
        If ``HPCTWIN_MAX_INPUT_BYTES`` is set but is not an integer > 0.
    """
    env = os.environ.get("HPCTWIN_MAX_INPUT_BYTES", "").strip()
    if not env:
        return MAX_INPUT_BYTES
    try:
        n = int(float(env))
    except ValueError:
        n = 0
    if n <= 0:
        raise ValueError(f"HPCTWIN_MAX_INPUT_BYTES={env!r}: expected a number of bytes > 0")
    return n


def _compression(head: bytes) -> str:
    if head.startswith(_GZIP):
        return "gzip"
    if head.startswith(_BZ2) and len(head) >= 4 and head[3:4] in b"123456789":
        return "bzip2"
    if head.startswith(_XZ):
        return "xz"
    if head.startswith(_ZIP):
        return "zip"
    return ""


def _open_stream(p: Path, raw: io.BufferedReader, kind: str) -> io.RawIOBase | io.BufferedIOBase:
    if kind == "gzip":
        return gzip.GzipFile(fileobj=raw, mode="rb")
    if kind == "bzip2":
        return bz2.BZ2File(raw, "rb")
    if kind == "xz":
        return lzma.LZMAFile(raw, "rb")
    if kind == "zip":
        zf = zipfile.ZipFile(raw)
        files = [i for i in zf.infolist() if not i.is_dir()]
        if len(files) != 1:
            raise InputFileError(p, f"zip archive with {len(files)} files; give an archive of exactly one file "
                                    f"(or the file itself)")
        return zf.open(files[0])
    return raw


def _encoding_problem(head: bytes) -> str:
    """'' when ``head`` may be UTF-8 / Latin-1 text, else the name of the wide encoding it is in."""
    if head.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        return f"UTF-32 ({'little' if head[0] == 0xFF else 'big'}-endian, with a byte-order mark)"
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return f"UTF-16 ({'little' if head[0] == 0xFF else 'big'}-endian, with a byte-order mark)"
    sample = head[:4096]
    if len(sample) < 4 or b"\x00" not in sample:
        return ""
    n4 = len(sample) // 4 * 4
    zeros = [sample[k:n4:4].count(0) / (n4 // 4) for k in range(4)]
    if zeros[1] > 0.9 and zeros[2] > 0.9 and zeros[3] > 0.9 and zeros[0] < 0.5:
        return "UTF-32 (little-endian, no byte-order mark)"
    if zeros[0] > 0.9 and zeros[1] > 0.9 and zeros[2] > 0.9 and zeros[3] < 0.5:
        return "UTF-32 (big-endian, no byte-order mark)"
    odd, even = (zeros[1] + zeros[3]) / 2, (zeros[0] + zeros[2]) / 2
    if odd > 0.4 and even < 0.1:
        return "UTF-16 (little-endian, no byte-order mark)"
    if even > 0.4 and odd < 0.1:
        return "UTF-16 (big-endian, no byte-order mark)"
    return ""


def _long_line(data: bytes | bytearray, limit: int) -> int | None:
    """1-based number of the first line longer than ``limit`` bytes, or None (a newline byte ends a line)."""
    start, n = 0, len(data)
    while n - start > limit:
        # the last newline within the next limit + 1 bytes: every line before it fits; go on after it
        nl = data.rfind(b"\n", start, start + limit + 1)
        if nl < 0:
            return data.count(b"\n", 0, start) + 1
        start = nl + 1
    return None


def _read(path: str | os.PathLike[str], what: str, limit: int | None, expansion: float,
          head_only: int | None = None) -> tuple[bytes, str]:
    p = Path(path)
    limit = max_input_bytes() if limit is None else int(limit)
    try:
        raw = open(p, "rb")  # noqa: SIM115 - closed below, after the decompressor that reads it
    except FileNotFoundError:
        raise FileNotFoundError(f"{p}: {what} not found") from None
    except IsADirectoryError:
        raise InputFileError(p, f"is a folder, not a {what}") from None
    kind = ""
    try:
        kind = _compression(raw.read(8))
        raw.seek(0)
        src = _open_stream(p, raw, kind)
        buf = bytearray()
        want = limit + 1 if head_only is None else min(limit + 1, head_only)
        checked = 64 << 20
        while len(buf) < want:
            chunk = src.read(min(_CHUNK, want - len(buf)))
            if not chunk:
                break
            buf += chunk
            if head_only is None and len(buf) * expansion > checked:
                check_allocation(len(buf) * expansion * 2, f"{what} of more than {fmt_bytes(len(buf))}"
                                 f"{' decompressed' if kind else ''} (read with about {expansion:g}x that in memory)",
                                 lambda m: InputFileError(p, m))
                checked *= 2
        if src is not raw:
            src.close()
    except (OSError, EOFError, zlib.error, lzma.LZMAError, zipfile.BadZipFile, NotImplementedError,
            RuntimeError) as exc:
        if isinstance(exc, (FileNotFoundError, PermissionError)):
            raise
        if not kind:
            raise
        raise InputFileError(p, f"corrupt {kind} data: {exc}") from None
    finally:
        raw.close()
    if head_only is None and len(buf) > limit:
        raise InputFileError(p, f"{what} is larger than {fmt_bytes(limit)}{' decompressed' if kind else ''} (the "
                                f"limit on one input file, HPCTWIN_MAX_INPUT_BYTES); split it or raise the limit")
    enc = _encoding_problem(bytes(buf[:4096]))
    if enc:
        raise InputFileError(p, f"is {enc}; save it as UTF-8")
    if buf.startswith(b"\xef\xbb\xbf"):
        del buf[:3]
    return bytes(buf), kind


def read_input(path: str | os.PathLike[str], what: str = "input file", *, max_bytes: int | None = None,
               max_line_bytes: int | None = MAX_LINE_BYTES, expansion: float = 4.0) -> bytes:
    """The bytes of an input file: decompressed (bounded), UTF-8 byte-order mark stripped, encoding and lines checked.

    Parameters
    ----------
    path : str | os.PathLike[str]
        The file (plain, gzip, bzip2, xz or a zip of one file; told by the content, not the suffix).
    what : str
        What the file is, for messages (``"trace"``, ``"weather file"``).
    max_bytes : int | None
        Largest decompressed size accepted [bytes]; None: :func:`max_input_bytes` (2 GiB by default).
    max_line_bytes : int | None
        Longest line accepted [bytes] (default :data:`MAX_LINE_BYTES`); None for formats without lines (JSON).
    expansion : float
        How many times the file's size the caller holds in memory while parsing it; the read stops with an error
        once that much would exceed the memory budget (:func:`jobs.memory.check_allocation`).

    Returns
    -------
    bytes
        The decompressed content without a leading UTF-8 byte-order mark (not decoded: callers choose UTF-8 or
        their fallback).

    Raises
    ------
    InputFileError
        If the compressed stream is corrupt, the content is larger than the limit or than memory allows, the text
        is UTF-16 or UTF-32, or a line is longer than ``max_line_bytes``; the message names the file (and line).
        A missing file is a ``FileNotFoundError`` naming it, an unreadable one an ``OSError``.
    """
    data, _kind = _read(path, what, max_bytes, expansion)
    if max_line_bytes is not None:
        bad = _long_line(data, int(max_line_bytes))
        if bad is not None:
            raise InputFileError(path, f"line {bad} is longer than {fmt_bytes(max_line_bytes)} (the longest line "
                                       f"a {what} may have); is it the right file?")
    return data


def read_input_head(path: str | os.PathLike[str], nbytes: int, what: str = "input file") -> bytes:
    """The first ``nbytes`` decompressed bytes of an input file (header peeks, format guesses), checked like
    :func:`read_input` for encoding, without reading the rest.

    Parameters
    ----------
    path : str | os.PathLike[str]
        The file.
    nbytes : int
        Bytes wanted (fewer when the file is shorter).
    what : str
        What the file is, for messages.

    Returns
    -------
    bytes
        Up to ``nbytes`` bytes, UTF-8 byte-order mark stripped.


    Errors as :func:`read_input` (``FileNotFoundError``, ``InputFileError`` for a corrupt stream within the
    bytes read or UTF-16 / UTF-32 text), without the size and line checks.
    """
    return _read(path, what, None, 1.0, head_only=int(nbytes))[0]


def read_utf8(path: str | Path, what: str, error: type[Exception] = ValueError,  # noqa: DOC503
              max_bytes: int = MAX_TEXT_CONFIG_BYTES) -> str:
    """The text of ``path`` decoded as UTF-8 (a leading byte-order mark allowed), read through :func:`read_input`.

    Parameters
    ----------
    path : str | Path
        The file.
    what : str
        What the file is, for the message (e.g. ``"configuration file"``).
    error : type[Exception]
        The exception raised when the bytes are not UTF-8 (a subclass of the caller's error family).
    max_bytes : int
        Largest size accepted [bytes] (default :data:`MAX_TEXT_CONFIG_BYTES`, 16 MiB).

    Returns
    -------
    str
        The text.

    Raises
    ------
    error
        If the bytes are not UTF-8: the message names the file, says it is not UTF-8 text and gives the line and the
        byte offset of the first bad byte; also when the file is UTF-16 / UTF-32, larger than ``max_bytes`` or a
        corrupt compressed stream (:class:`InputFileError`'s message).
    OSError
        If the file cannot be read.
    """
    try:
        raw = read_input(path, what, max_bytes=max_bytes, max_line_bytes=None)
    except InputFileError as exc:
        raise error(str(exc)) from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise error(f"{path}: {what} is not UTF-8 text (line {line}, byte {exc.start}: "
                    f"{raw[exc.start:exc.start + 1]!r}); save it as UTF-8") from None


def toml_loads(text: str, path: str | os.PathLike[str], what: str,
               error: Callable[[str], Exception] = ValueError) -> dict[str, Any]:
    """Parse TOML text (``tomllib.loads``), turning a nesting too deep for the parser into an error naming the file.

    A syntax error stays a ``tomllib.TOMLDecodeError`` (callers add the file name and line as before).

    Parameters
    ----------
    text : str
        The TOML text.
    path : str | os.PathLike[str]
        The file it came from, for the message.
    what : str
        What the file is (``"configuration file"``).
    error : Callable[[str], Exception]
        Builds the exception for a too-deep nesting.

    Returns
    -------
    dict
        The parsed table.

    Raises
    ------
    error
        ``error(message)`` when arrays or inline tables are nested too deeply to parse (``RecursionError`` in the
        parser; no real configuration nests more than a few levels).
    """
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise error(f"{path}: {what} nests arrays or inline tables too deeply to be read (TOML parser recursion "
                    f"limit); no configuration needs more than a few levels") from None
