"""Trace digests: the SHA-256 of a trace's bytes, reused for a file whose identity has not changed.

A measurement's cache key holds the digest of every trace it reads, so a warm
run would read every trace just to hash it. Instead, a digest is recorded with
the file's identity (device, inode, size, modification and status-change times)
and reused while that identity is unchanged (:func:`known_digest`); the records
of one folder of traces are kept as one table (:class:`_DigestTable`, written at
the end of a run's measuring by :func:`flush_digests`), a sealed JSON entry of
:mod:`policylint.cache.store` (kind ``stattable``). Workers of a parallel run
hand the rows they hashed to the run's process (:func:`take_fresh`,
:func:`adopt`), which writes them with its own. A file is checked as the readers
check it before a byte of it is hashed.

Until 2026-12 each record was also written as an entry of its own (kind
``stat``), one file per trace: a cache-filling run created a file per trace for
rows its tables already held. Those entries are no longer written or read.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import time
from pathlib import Path
from typing import Any

from policylint.cache.store import FORMAT_VERSION, MAX_ENTRY_BYTES, atomic_write, read_sealed, seal_json, stat_identity
from policylint.readers.limits import TraceLimits


def _file_digest(path: Path) -> str:
    """The SHA-256 of a regular file's bytes (a pipe or device is refused on the open descriptor).

    The file is read once: a trace small enough to be parsed from memory keeps its bytes for
    the reader that opens it next, while its identity is unchanged (:mod:`policylint.readers.kept`),
    so a run that hashes a trace for its cache key and then measures it reads the file once.
    """
    from policylint.readers.kept import NotRegular, digest_and_keep

    try:
        return digest_and_keep(path)
    except NotRegular:
        raise _Refused(str(path)) from None


class _Refused(OSError):
    """A trace that is not hashed: not a regular file, or larger than any reader accepts."""


#: a file changed less than this long before it was hashed is hashed again next time
_RACY_SECONDS = 2.0


class Unhashed(Exception):
    """A file's digest is not recorded, and the caller asked not to hash it here."""


def hash_limit(limits: TraceLimits | None) -> int:
    """The largest trace any reader accepts under ``limits``: larger files are never hashed."""
    chosen = limits if limits is not None else TraceLimits()
    return max(chosen.max_file_bytes, chosen.max_json_bytes)


def known_digest(path: Path, folder: Path | None, *, hash_files: bool = True, limit: int | None = None) -> str:
    """The SHA-256 of a file's bytes, reusing the one recorded for an unchanged file.

    The file is checked first, as the readers check it: anything but a regular
    file, or a file over ``limit`` bytes (default: the default trace limits),
    raises :class:`_Refused` (an ``OSError``) before a byte is read or hashed -
    the readers then report it.

    A record maps a file (by real path) to its identity - device, inode, size,
    modification and status-change times in nanoseconds - and the digest of its
    bytes. Any write moves the status-change time (ctime) to the clock's current
    time, and no ordinary program can set it back, so a file whose identity is
    unchanged has unchanged bytes - except for a write in the same timestamp tick
    as the hashing. To exclude that, a digest is only recorded for a file whose
    times are at least two seconds older than the moment it was hashed, and only
    when the file's identity is the same before and after hashing. Everything
    else is hashed again. The table holding the record is sealed like every entry (see
    :func:`policylint.cache.store.seal_json`); a damaged or foreign one is empty. The digest still goes into the entry's
    key, so an entry is only ever used for the bytes it was built from.

    Without ``hash_files`` a file with no usable record raises :class:`Unhashed`
    instead of being read (the caller hashes it elsewhere, in a worker).
    """
    if limit is None:
        limit = hash_limit(None)
    real = os.path.realpath(path)
    before = os.stat(real)
    if not stat.S_ISREG(before.st_mode) or before.st_size > limit:
        raise _Refused(real)
    if folder is None:
        if not hash_files:
            raise Unhashed(str(path))
        return _file_digest(path)
    ident = stat_identity(before)
    table = _digest_table(folder, os.path.dirname(real))
    found = table.get(real, ident)
    if found is not None:
        _KEYED[real] = tuple(ident)
        return found
    if not hash_files:
        raise Unhashed(real)
    hashed_at = time.time_ns()
    digest = _file_digest(Path(real))
    after = stat_identity(os.stat(real))
    if after == ident:
        _KEYED[real] = tuple(ident)
    else:
        _KEYED.pop(real, None)  # changed while hashed: no measurement of it is kept under this digest
    settled = max(before.st_mtime_ns, before.st_ctime_ns) < hashed_at - int(_RACY_SECONDS * 1e9)
    if after == ident and settled:
        table.add(real, ident, digest)
        if len(_FRESH) < _MAX_FRESH:
            _FRESH.append((os.fspath(folder), table.directory, real, list(ident), digest))
    return digest


#: per real path, the identity (device, inode, size, modification and status-change times) the file
#: had when this process took its digest, from its table row or by hashing it; a measurement read
#: from it is kept under a key holding that digest only while the file still has that identity
#: (:func:`unchanged_since_digest`)
_KEYED: dict[str, tuple[int, ...]] = {}


def unchanged_since_digest(path: Path | str) -> bool:
    """Whether the file at ``path`` has the identity it had when this process took its digest.

    A file rewritten between the digest that went into a measurement's key and its reading
    changes its status-change time: what was read from it is then not what the key names.
    """
    real = os.path.realpath(path)
    then = _KEYED.get(real)
    if then is None:
        return False
    try:
        return tuple(stat_identity(os.stat(real))) == then
    except OSError:
        return False


#: the rows this process added by hashing since it last handed them on (:func:`take_fresh`): a
#: worker of a parallel run gives them to the run's own process, whose tables are written
_FRESH: list[tuple[str, str, str, list[int], str]] = []
_MAX_FRESH = 200_000


def take_fresh() -> list[tuple[str, str, str, list[int], str]]:
    """The rows hashed here since the last call, as (cache folder, files' folder, real path, identity, digest)."""
    rows = list(_FRESH)
    _FRESH.clear()
    return rows


def adopt(rows: list[tuple[str, str, str, list[int], str]]) -> None:
    """Add rows another process of this run hashed (:func:`take_fresh`) to this process's tables.

    Each row is what a settled hashing there recorded; only rows of the well-formed shape are taken.
    """
    for row in rows:
        if not (isinstance(row, tuple) and len(row) == 5):
            continue
        folder, directory, real, ident, digest = row
        if not (isinstance(folder, str) and isinstance(directory, str) and isinstance(real, str)):
            continue
        if os.path.dirname(real) != directory or not _is_digest(digest):
            continue
        if not (isinstance(ident, list) and len(ident) == 5 and all(type(x) is int for x in ident)):
            continue
        _digest_table(Path(folder), directory).add(real, ident, digest)


#: a SHA-256 digest as the tables hold it: 64 lowercase hexadecimal digits, nothing else
_DIGEST = re.compile(r"[0-9a-f]{64}")


def _is_digest(value: Any) -> bool:
    # one regular expression rather than a walk over the characters: a table of 10,000 rows is
    # checked twice in a one-file run that edited a workload (0.2 s of generator steps before)
    return isinstance(value, str) and _DIGEST.fullmatch(value) is not None


class _DigestTable:
    """The recorded digests of one folder's files, read and written as one entry.

    A warm run over a thousand traces in one folder reads one entry here instead
    of a thousand records (:func:`known_digest`). Each row is exactly what a record
    holds - the file's real path, its identity and its digest - and is added only
    from a record or a settled hashing, so a row is as trustworthy as a record.
    The entry is sealed like the records (kind ``stattable``) and read as user
    files are; a damaged, foreign or mismatching entry is an empty table.
    """

    #: a table never grows past this many rows (files deleted since stay in it until then)
    MAX_ROWS = 200_000

    def __init__(self, folder: Path, directory: str) -> None:
        self.folder = folder
        self.directory = directory
        name = hashlib.sha256(directory.encode("utf-8", "surrogateescape")).hexdigest()
        self.path = folder / f"stattable-v{FORMAT_VERSION}" / name[:2] / f"{name}.json"
        self.rows: dict[str, tuple[list[int], str]] = {}
        self.dirty = False
        try:
            body = read_sealed(self.path, folder, "stattable", MAX_ENTRY_BYTES["stattable"])
            if body is None:
                return
            stored = json.loads(body)
            if stored.get("dir") != directory or not isinstance(stored.get("files"), dict):
                return
            rows: dict[str, tuple[list[int], str]] = {}
            for real, (ident, digest) in stored["files"].items():
                if os.path.dirname(real) != directory or not _is_digest(digest):
                    return
                if not isinstance(ident, list) or len(ident) != 5 or any(type(x) is not int for x in ident):
                    return
                rows[real] = (ident, digest)
            self.rows = rows
        except Exception:  # noqa: BLE001 - a damaged table is an empty one: the records and hashing remain
            self.rows = {}

    def get(self, real: str, ident: list[int]) -> str | None:
        row = self.rows.get(real)
        return row[1] if row is not None and row[0] == ident else None

    def add(self, real: str, ident: list[int], digest: str) -> None:
        if self.rows.get(real) == (ident, digest):
            return
        if len(self.rows) >= self.MAX_ROWS:
            self.rows.clear()
        self.rows[real] = (list(ident), digest)
        self.dirty = True

    def write(self) -> None:
        if not self.dirty:
            return
        document = {"dir": self.directory, "files": {k: [v[0], v[1]] for k, v in sorted(self.rows.items())}}
        sealed = seal_json(self.folder, "stattable", json.dumps(document, separators=(",", ":")).encode("utf-8"))
        if sealed is not None and len(sealed) <= MAX_ENTRY_BYTES["stattable"]:
            atomic_write(self.path, sealed, self.folder)
        self.dirty = False


#: (cache folder, folder of the files) -> its table, for the length of a run
_TABLES: dict[tuple[str, str], _DigestTable] = {}


def _digest_table(folder: Path, directory: str) -> _DigestTable:
    key = (os.fspath(folder), directory)
    table = _TABLES.get(key)
    if table is None:
        table = _TABLES[key] = _DigestTable(folder, directory)
    return table


def flush_digests(folder: Path | None, *, forget: bool = True) -> None:
    """Write the digest tables of ``folder`` that gained rows in this run (see :class:`_DigestTable`).

    They are then forgotten: the next run in this process reads them afresh, as a new process would.
    With ``forget`` False (a flush in the middle of a run) they stay, written and clean: a later
    step of the same run that needs a digest (recording a re-measured workload) does not read
    and check the folder's whole table again. What a kept table answers is what the entry just
    written holds, and every row is checked against the file's identity when it is asked.
    """
    if folder is None:
        return
    _FRESH[:] = [row for row in _FRESH if row[0] != os.fspath(folder)]
    for key, table in list(_TABLES.items()):
        if key[0] == os.fspath(folder):
            table.write()
            if forget:
                del _TABLES[key]

