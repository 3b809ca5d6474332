"""Reading text input files that must be UTF-8 (TOML v1.0.0 requires it), with a message that names the file.

Lowest layer, so that configuration, system, plant and deployment readers in every package can share it.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["read_utf8"]


def read_utf8(path: str | Path, what: str, error: type[Exception] = ValueError) -> str:
    """The text of ``path`` decoded as UTF-8 (a leading byte-order mark allowed).

    Parameters
    ----------
    path : str or pathlib.Path
        The file.
    what : str
        What the file is, for the message (e.g. ``"configuration file"``).
    error : type of Exception
        The exception raised when the bytes are not UTF-8 (a subclass of the caller's error family).

    Raises
    ------
    error
        If the bytes are not UTF-8: the message names the file, says it is not UTF-8 text and gives the line and the
        byte offset of the first bad byte.
    OSError
        If the file cannot be read.
    """
    raw = Path(path).read_bytes()
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise error(f"{path}: {what} is not UTF-8 text (line {line}, byte {exc.start}: "
                    f"{raw[exc.start:exc.start + 1]!r}); save it as UTF-8") from None
