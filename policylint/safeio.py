"""Reading user-named files safely: regular files only, never more than a limit.

Every path a user can hand to policylint - a document, a configuration file, a
baseline, a rule file, a measurement - is opened through :func:`read_bytes` (or
checked with :func:`require_regular` when another library opens it). A named
pipe would block the run forever and a device such as ``/dev/zero`` never ends,
so anything that is not a regular file is refused before a byte is read. The
file is opened without blocking and checked on the open descriptor, so a file
swapped between the check and the read cannot slip through; and no more than
``limit + 1`` bytes are ever read, even when the file grows meanwhile.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from policylint.errors import PolicylintError

#: The message every caller shows for a pipe, device, socket or folder.
NOT_REGULAR = "not a regular file (pipe, device or socket); refused"


class RefusedFile(PolicylintError):
    """The file exists but is refused unread: not a regular file, or over the size limit."""


class UnreadableFile(PolicylintError):
    """The file cannot be opened or read (missing, permissions, I/O error)."""


def _describe(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder, not a file"
    return NOT_REGULAR


def require_regular(path: Path, *, what: str = "file") -> None:
    """Refuse ``path`` unless it is a regular file (symlinks are followed).

    For callers that hand the path to a library that opens it itself.
    Raises :class:`UnreadableFile` when it does not exist or cannot be
    examined, :class:`RefusedFile` when it is not a regular file.
    """
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise UnreadableFile(f"cannot read {what}: {exc.strerror or exc}", source=str(path)) from None
    if not stat.S_ISREG(mode):
        raise RefusedFile(_describe(mode), source=str(path))


def read_bytes(path: Path, *, limit: int, what: str = "file") -> bytes:
    """The content of the regular file ``path``, refused when larger than ``limit`` bytes.

    The file is opened with ``O_NONBLOCK`` so that opening a FIFO returns at
    once, and checked with ``fstat`` on the descriptor that is then read.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise UnreadableFile(f"cannot read {what}: {exc.strerror or exc}", source=str(path)) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise RefusedFile(_describe(info.st_mode), source=str(path))
        if info.st_size > limit:
            raise RefusedFile(f"file is {info.st_size} bytes, more than the {limit}-byte limit; refused", source=str(path))
        chunks: list[bytes] = []
        remaining = limit + 1
        # the whole file in one read when it is as large as fstat says (a 30 MB cache entry was read
        # in thirty 1 MB reads and joined: a copy more); one byte more shows that it grew
        step = max(1 << 20, info.st_size + 1)
        while remaining > 0:
            chunk = os.read(fd, min(remaining, step))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
    except OSError as exc:
        raise UnreadableFile(f"cannot read {what}: {exc.strerror or exc}", source=str(path)) from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limit:
        # the file grew after it was examined
        raise RefusedFile(f"file is more than the {limit}-byte limit; refused", source=str(path))
    return data


def read_text(path: Path, *, limit: int, what: str = "file") -> str:
    """:func:`read_bytes` decoded as UTF-8 (a leading byte-order mark is dropped)."""
    raw = read_bytes(path, limit=limit, what=what)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UnreadableFile(
            f"{what} is not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})", source=str(path)
        ) from None


#: per path as written, its ``os.stat`` result (or the error number it failed with) while a run is under
#: :func:`one_stat_per_file`; None outside one
_STATS: dict[str, os.stat_result | int] | None = None


class one_stat_per_file:  # noqa: N801 - used as a function: ``with one_stat_per_file():``
    """Within the block, :func:`stat_once` asks the system once per path: one run sees one identity per file.

    A one-file run at 10,000 workloads stat'ed each workload file three times (its document
    pack entry, its index row, the change's reach) and each trace twice. Only a run that
    writes none of the files it reads may enter it (a ``--fix`` is outside). Nested blocks share the outer one's answers.
    """

    _outer: dict[str, os.stat_result | int] | None = None

    def __enter__(self) -> None:
        global _STATS
        self._outer = _STATS
        if _STATS is None:
            _STATS = {}

    def __exit__(self, *exc: object) -> None:
        global _STATS
        _STATS = self._outer


def stat_once(path: str) -> os.stat_result:
    """``os.stat(path)`` (symlinks followed), asked once per path inside :func:`one_stat_per_file`.

    Raises what ``os.stat`` raises (a failure is remembered by its error number and raised afresh).
    """
    memo = _STATS
    if memo is None:
        return os.stat(path)
    found = memo.get(path)
    if found is None:
        try:
            found = os.stat(path)
        except OSError as e:
            if e.errno is None:
                raise
            found = e.errno
        memo[path] = found
    if type(found) is int:
        raise OSError(found, os.strerror(found), path)  # FileNotFoundError and its kin, by the number
    return found  # type: ignore[return-value]
