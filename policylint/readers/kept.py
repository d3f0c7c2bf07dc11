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
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections import OrderedDict
from pathlib import Path

__all__ = ["KEEP_BYTES", "KEEP_FILES", "NotRegular", "digest_and_keep", "release", "take"]

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
    if kept is None:
        return None
    try:
        info = os.stat(real)
    except OSError:
        return None
    return kept[1] if _identity(info) == kept[0] else None


def release() -> None:
    """Let every kept buffer go: the hashing found what it hashed for elsewhere (a cache entry), so no reader comes."""
    _KEPT.clear()
