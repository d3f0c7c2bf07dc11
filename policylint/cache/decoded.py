"""Large sealed entries decoded once for many runs: what a resident server keeps for the runs it forks.

A one-file run on a large repository spends a good part of its time decoding
three entries: the document pack, the repository index and the kept
verdicts (at 10,000 workloads the first two are 33 MB each). A resident server
(:mod:`policylint.resident_server`) forks every run from one process, so it can
decode them once, after a run named them, and hand the values to the runs it
forks next: each child gets its own copy of the server's memory.

The value is used only where decoding would give it: a run always reads the entry
and checks its seal (:func:`policylint.cache.store.read_sealed`), and takes a kept
value only when the body it read is equal, byte for byte, to the body the server
decoded it from. Anything else is decoded as a run on its own decodes it.
"""

from __future__ import annotations

import json
import marshal
import os
from pathlib import Path
from typing import Any

from policylint.cache.store import read_sealed, read_sealed_frames, stat_identity

#: a sealed JSON entry at least this large, decoded by a run, is worth keeping decoded in a
#: resident server (:mod:`policylint.resident_server`) for the runs it forks next
KEEP_DECODED_BYTES = 32 << 10

#: the entries this process decoded that are worth keeping so: (path, cache folder, kind, size limit)
DECODED: list[tuple[str, str, str, int]] = []

#: entries a resident server decoded before forking this run, by path: (body, value); each is used
#: at most once, and only for a body equal to the one it was decoded from
KEPT_DECODED: dict[str, tuple[bytes, Any]] = {}
#: in the server: the identity (device, inode, size, times) each kept entry's file had when it was read
_IDENTS: dict[str, list[int]] = {}


def read_sealed_json(path: Path | str, folder: Path, kind: str, max_bytes: int) -> Any:
    """``json.loads`` of :func:`read_sealed`'s body (None when it gives none); errors are ``json.loads``'s.

    The body is always read and its seal checked. A resident server's child takes the value the
    server decoded from an equal body (:data:`KEPT_DECODED`) instead of decoding it again: the
    same bytes give the same value, and the child's copy is its own (the server forked it).
    """
    body = read_sealed(path, folder, kind, max_bytes)
    if body is None:
        return None
    name = os.fspath(path)
    kept = KEPT_DECODED.pop(name, None)
    if kept is not None and kept[0] == body:
        return kept[1]
    if len(body) >= KEEP_DECODED_BYTES:
        DECODED.append((name, os.fspath(folder), kind, max_bytes))
    return json.loads(body)


def _frames_of(path: Path | str, folder: Path, kind: str, max_bytes: int) -> tuple[bytes, list[Any]] | None:
    """(the entry's bytes, its frames decoded by ``marshal``) when its seal holds, else None."""
    read = read_sealed_frames(path, folder, kind, max_bytes)
    if read is None:
        return None
    data, frames = read
    try:
        values = [marshal.loads(f) for f in frames]
    except (ValueError, EOFError, TypeError):
        return None
    return data, values


def read_sealed_values(path: Path | str, folder: Path, kind: str, max_bytes: int) -> list[Any] | None:
    """The values of a sealed entry of frames (:func:`policylint.cache.store.write_sealed_frames`), each
    written by ``marshal.dumps``; None when it is missing or its seal does not hold.

    ``marshal`` reads back what a run of this policylint under this Python wrote, several times faster
    than ``json`` for the repository's document pack and index (tens of MB at 10,000 workloads); the
    seal, keyed by the cache folder's secret, says it was written so. The entries' locations hold
    the Python version (:func:`python_tag`). A resident server's child takes the values the server
    decoded from equal bytes, as :func:`read_sealed_json` does.
    """
    read = _frames_of(path, folder, kind, max_bytes)
    if read is None:
        return None
    data, values = read
    name = os.fspath(path)
    kept = KEPT_DECODED.pop(name, None)
    if kept is not None and kept[0] == data:
        return kept[1]  # type: ignore[no-any-return]
    if len(data) >= KEEP_DECODED_BYTES:
        DECODED.append((name, os.fspath(folder), kind, max_bytes))
    return values


def python_tag() -> str:
    """What the locations of ``marshal`` entries hold of the interpreter: its version and ``marshal``'s."""
    import sys

    return f"py{sys.version_info[0]}.{sys.version_info[1]}-marshal{marshal.version}"


#: the most bytes of entries a resident server keeps decoded (their values take a few times as much)
KEEP_DECODED_MAX = 128 << 20
#: the entry kinds a resident server keeps decoded: the repository's document pack and index, its verdicts
KEEP_DECODED_KINDS = frozenset({"docpack", "repoindex", "verdicts"})
#: of those, the kinds written as frames of ``marshal`` (:func:`read_sealed_values`); the others are JSON
FRAMED_KINDS = frozenset({"docpack", "repoindex"})


class DecodedKeeper:
    """The resident server's :class:`policylint.resident_server.Keeper`: large entries a run decoded, decoded once more."""

    def names(self) -> list[bytes]:
        """In a run's child: a JSON line per large entry of a kept kind it decoded."""
        return [(json.dumps(list(named)) + "\n").encode("utf-8", "surrogateescape")
                for named in dict.fromkeys(DECODED) if named[2] in KEEP_DECODED_KINDS]

    def keep(self, lines: list[bytes]) -> None:
        """In the server: read, check and decode each named entry as a run does, for the runs forked next.

        A named entry must lie in its cache folder; it is read no larger than
        :data:`KEEP_DECODED_MAX`, and what is kept stays under it, the latest named kept first.
        A run takes a kept value only for a body equal to the one it read itself.
        """
        for line in lines:
            try:
                named = json.loads(line.decode("utf-8", "surrogateescape"))
                if not (isinstance(named, list) and len(named) == 4):
                    continue
                path, folder, kind, max_bytes = named
                if not (isinstance(path, str) and isinstance(folder, str) and kind in KEEP_DECODED_KINDS
                        and type(max_bytes) is int and max_bytes > 0):
                    continue
                real_folder = os.path.realpath(folder)
                if os.path.commonpath([os.path.realpath(path), real_folder]) != real_folder:
                    continue
                ident = stat_identity(os.stat(path))
                if path in KEPT_DECODED and _IDENTS.get(path) == ident:
                    # unchanged since it was decoded: kept as it is (the next run is not kept waiting
                    # while the server decodes the same 33 MB again; a run still compares the bytes)
                    KEPT_DECODED[path] = KEPT_DECODED.pop(path)  # the latest named
                    continue
                KEPT_DECODED.pop(path, None)
                _IDENTS.pop(path, None)
                if kind in FRAMED_KINDS:
                    read = _frames_of(path, Path(folder), kind, min(max_bytes, KEEP_DECODED_MAX))
                else:
                    body = read_sealed(path, Path(folder), kind, min(max_bytes, KEEP_DECODED_MAX))
                    read = None if body is None else (body, json.loads(body))
                if read is not None:
                    KEPT_DECODED[path] = read
                    _IDENTS[path] = ident
            except Exception:  # noqa: BLE001 - an entry that cannot be kept is decoded by each run, as alone
                continue
            while sum(len(b) for b, _ in KEPT_DECODED.values()) > KEEP_DECODED_MAX:
                _IDENTS.pop(next(iter(KEPT_DECODED)), None)
                KEPT_DECODED.pop(next(iter(KEPT_DECODED)))  # the oldest named first

    def kept(self) -> tuple[int, int]:
        return len(KEPT_DECODED), sum(len(body) for body, _ in KEPT_DECODED.values())
