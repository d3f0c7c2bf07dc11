"""Guarded opening of a measurement file: regular files only, size checked first.

Every reader starts here, so the checks live in one place: a FIFO would block the
run forever, ``/dev/zero`` would fill memory, a folder or a path written with a
trailing ``/`` is not a trace, and a file over the size limit is refused from
``stat`` alone, before a byte is read.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from policylint.errors import MeasurementError

__all__ = ["PARQUET_MAGIC", "ARROW_MAGIC", "Source", "open_source", "sniff_container"]

PARQUET_MAGIC = b"PAR1"
ARROW_MAGIC = b"ARROW1"
_ARROW_STREAM_MAGIC = b"\xff\xff\xff\xff"

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


@dataclass(frozen=True)
class Source:
    """A measurement file that passed the checks: where it is, its name in messages, its size."""

    path: Path
    name: str
    size: int


def _ends_with_separator(text: str) -> bool:
    return text.endswith("/") or (os.sep != "/" and text.endswith(os.sep))


def open_source(path: str | Path, name: str, *, max_bytes: int, written_as: str | None = None) -> Source:
    """Check ``path`` and return a :class:`Source`; raise :class:`MeasurementError` otherwise.

    ``written_as`` is the path as the user wrote it (a declaration's ``path:``);
    ``Path`` drops a trailing ``/``, so that is checked on the text.
    """
    for text in (path if isinstance(path, str) else None, written_as):
        if text and _ends_with_separator(text):
            raise MeasurementError("the path ends in '/': a measurement is a file, not a folder", source=name)
    target = Path(path)
    try:
        info = os.stat(target)
    except FileNotFoundError:
        raise MeasurementError("file not found", source=name) from None
    except OSError as exc:
        raise MeasurementError(f"cannot read: {exc.strerror or exc}", source=name) from None
    for test, kind in _KINDS:
        if test(info.st_mode):
            raise MeasurementError(f"not a regular file but {kind}; refused", source=name)
    if not stat.S_ISREG(info.st_mode):
        raise MeasurementError("not a regular file; refused", source=name)
    if info.st_size > max_bytes:
        raise MeasurementError(
            f"file is {info.st_size:,} bytes, more than the {max_bytes:,}-byte limit for a trace; refused",
            source=name,
        )
    return Source(target, name, int(info.st_size))


def read_head(source: Source, size: int) -> bytes:
    """The first ``size`` bytes of the file (fewer when it is shorter)."""
    try:
        with source.path.open("rb") as handle:
            return handle.read(size)
    except OSError as exc:
        raise MeasurementError(f"cannot read: {exc.strerror or exc}", source=source.name) from None


def sniff_container(head: bytes) -> str:
    """``parquet``, ``arrow`` (IPC file), ``arrow-stream`` or ``text`` from the first bytes."""
    if head.startswith(PARQUET_MAGIC):
        return "parquet"
    if head.startswith(ARROW_MAGIC):
        return "arrow"
    if head.startswith(_ARROW_STREAM_MAGIC):
        return "arrow-stream"
    return "text"
