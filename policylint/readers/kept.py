"""One read per trace: the bytes hashed for a cache key are the bytes the reader parses.

A run with the cache hashes a trace (its digest is part of the workload's cache
key) and, when no entry holds its facts, reads it again to measure it. The
second read costs as much as the first (issue 26). :func:`digest_and_keep`
reads the file once into memory, hashes that buffer and keeps it; the reader
that opens the same file next (:func:`take`) parses the kept buffer instead of
reading the file again - when the file's identity (device, inode, size and
modification and status-change times) is still the one it had when it was read.

Only a few small files are kept at once (a workload's traces, hashed just
before it is measured); an older buffer makes room for a newer one, so a run
that hashes everything first holds a few files, not the repository.

A file that several workloads read (an export holding a column per workload) is
also read once: from its second whole read on, its bytes are kept
(:func:`read_whole`) and handed to the next reader while the file's identity is
unchanged (:func:`read_again`), so the readers of one export do not each read it.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

__all__ = ["KEEP_BYTES", "KEEP_FILES", "NotRegular", "digest_and_keep", "forget_again", "holds", "read_again",
           "read_whole", "release", "take"]

#: files larger than this are hashed block by block and never kept (the CSV reader streams them)
KEEP_BYTES = 32 * 1024 * 1024

#: at most this many buffers are kept at once (a workload reads up to three traces)
KEEP_FILES = 4

_KEPT: OrderedDict[str, tuple[tuple[int, ...], bytes]] = OrderedDict()

_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)


class NotRegular(OSError):
    """The path is not a regular file (a pipe or device is refused on the open descriptor)."""


def _identity(info: os.stat_result) -> tuple[int, ...]:
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def digest_and_keep(path: str | Path) -> str:
    """The SHA-256 (hex) of a regular file's bytes, read once; a small file's bytes are kept for its reader.

    Raises :class:`NotRegular` (an ``OSError``) for anything but a regular file
    and ``OSError`` when the file cannot be read; nothing is kept then.
    """
    real = os.path.realpath(path)
    fd = os.open(real, _FLAGS)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegular(real)
        digest = hashlib.sha256()
        if info.st_size > KEEP_BYTES:
            while block := os.read(fd, 1 << 20):
                digest.update(block)
            return digest.hexdigest()
        chunks = []
        remaining = info.st_size + 1  # one byte more: a file that grew is not kept
        while remaining > 0 and (block := os.read(fd, min(remaining, 1 << 24))):
            chunks.append(block)
            remaining -= len(block)
        data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        digest.update(data)
        while block := os.read(fd, 1 << 20):  # the rest of a file that grew: hashed as before, not kept
            digest.update(block)
            data = b""
        after = os.fstat(fd)
    finally:
        os.close(fd)
    if len(data) == info.st_size and _identity(after) == _identity(info):
        _KEPT.pop(real, None)
        _KEPT[real] = (_identity(info), data)
        while len(_KEPT) > KEEP_FILES:
            _KEPT.popitem(last=False)
    return digest.hexdigest()


def take(path: str | Path) -> bytes | None:
    """The bytes :func:`digest_and_keep` kept for ``path``, if the file is unchanged since; forgotten once taken."""
    if not _KEPT:
        return None
    real = os.path.realpath(path)
    kept = _KEPT.pop(real, None)
    return kept[1] if kept is not None and _unchanged(real, kept[0]) else None


def _unchanged(real: str, ident: tuple[int, ...]) -> bool:
    """Whether the file at ``real`` still has the identity ``ident``."""
    try:
        return _identity(os.stat(real)) == ident
    except OSError:
        return False


def release() -> None:
    """Let every kept buffer go: the hashing found what it hashed for elsewhere (a cache entry), so no reader comes."""
    _KEPT.clear()


#: a file read again unchanged is this many times (or more) the reason to keep its bytes: a wide export that
#: every workload reads a column of. Whole files of at most :data:`KEEP_BYTES` are kept, at most
#: :data:`AGAIN_FILES` at once; a file is kept from its second read on, so a fleet whose every trace is
#: read once keeps nothing here.
AGAIN_FILES = 2

#: a file whose modification or status-change time is this close to the moment it was read may have been
#: written again in the same timestamp tick: its bytes are not reused (as for the recorded digests)
_RACY_NS = 2_000_000_000

#: real path -> (identity, when it was read, its bytes) of whole files read again
_AGAIN: OrderedDict[str, tuple[tuple[int, ...], int, bytes]] = OrderedDict()
#: real path -> identity of files read whole once (their second read keeps the bytes)
_ONCE: OrderedDict[str, tuple[int, ...]] = OrderedDict()


def read_again(path: str | Path) -> bytes | None:
    """The bytes of ``path`` as this process read them before, when the file is unchanged since; else None.

    Unchanged means the same identity (device, inode, size, modification and status-change
    times) as when it was read, its times older than that read by at least two seconds: any
    write moves the status-change time to the clock's time and no ordinary program sets it
    back, the reasoning :mod:`policylint.cache.digests` keeps a trace's digest on. The very
    same bytes object comes back, so what was parsed from it can be recognised by identity.
    """
    if not _AGAIN:
        return None
    real = os.path.realpath(path)
    kept = _AGAIN.get(real)
    if kept is None:
        return None
    if not _unchanged(real, kept[0]):
        del _AGAIN[real]
        return None
    _AGAIN.move_to_end(real)
    return kept[2]


def read_whole(path: str | Path, read: Callable[[], bytes]) -> bytes:
    """``read()`` (the whole file), remembered for :func:`read_again` from the file's second read on.

    The file's identity is taken before and after the read; bytes read while it changed, or
    written within two seconds of the read, are not kept.
    """
    real = os.path.realpath(path)
    try:
        before = os.stat(real)
    except OSError:
        return read()
    data = read()
    if len(data) != before.st_size or before.st_size > KEEP_BYTES or not stat.S_ISREG(before.st_mode):
        return data
    now = time.time_ns()
    ident = _identity(before)
    if max(before.st_mtime_ns, before.st_ctime_ns) > now - _RACY_NS:
        return data
    if not _unchanged(real, ident):
        return data
    if _ONCE.get(real) != ident:
        _ONCE[real] = ident
        while len(_ONCE) > 256:
            _ONCE.popitem(last=False)
        return data
    _AGAIN[real] = (ident, now, data)
    _AGAIN.move_to_end(real)
    while len(_AGAIN) > AGAIN_FILES:
        _AGAIN.popitem(last=False)
    return data


def holds(data: bytes) -> bool:
    """Whether ``data`` is the very bytes object kept for a file read again (what :func:`read_again` hands out)."""
    return any(kept[2] is data for kept in _AGAIN.values())


def forget_again() -> None:
    """Let the bytes of files read again go (the end of a run's measuring)."""
    _AGAIN.clear()
    _ONCE.clear()
