"""Kept reads: a concurrency trace's series as the reader gave it, for the workloads a small run measures.

Editing a workload's declaration (its tolerance, its cold start, a per-GPU figure)
changes the key of its measurement (:func:`policylint.measure.measurement_cache.workload_key`
covers the whole spec), so the next run measures it again: it parses the trace
and imports pyarrow to do so, about a sixth of a pre-commit run on a large
repository, although the trace and the way it is read did not change.

A run that measures only a few workloads (at most :data:`KEEP_AT_MOST`: a
pre-commit run on the files being edited, never the run that fills the cache,
whose thousands of entries would cost more to write than they save) keeps each
trace's series as read, under a SHA-256 of everything the read depends on, and
looks it up when it measures the workload again:

- the file's bytes (their digest, :func:`policylint.cache.digests.known_digest`),
  its real path, its name as shown and its suffix (which picks the reader);
- the measurement block the reader's options come from
  (:func:`policylint.measure.reading.reader_arguments`) and the trace limits;
- the code fingerprint and the installed pyarrow and numpy, which parse and hold it.

The entry is read instead of the trace (a binary entry of :mod:`policylint.cache.store`,
sealed like every other, its series rebuilt by :mod:`policylint.measure.cache_encoding`
bit for bit).
A read that fails, or that a file changed during (its identity before hashing
and after reading differ, or it changed within the last two seconds), is not
kept. A damaged, foreign or mismatching entry is a miss: the trace is read.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from policylint.cache.digests import hash_limit, known_digest
from policylint.cache.store import (
    FORMAT_VERSION, Uncacheable, code_fingerprint, library_identity, load_entry, settings_digest, stat_identity,
    write_entry,
)
from policylint.measure.cache_encoding import Encoder, decode
from policylint.measure.reading import reader_arguments

if TYPE_CHECKING:
    from policylint.model import MeasurementRef
    from policylint.readers.limits import TraceLimits
    from policylint.readers.series import Series

T = TypeVar("T")

#: a run that measures more traced workloads than this neither keeps nor looks up reads
KEEP_AT_MOST = 8

#: a file changed this recently may change again within the same timestamp tick: not kept
_RACY_SECONDS = 2.0


def _read_key(ref: MeasurementRef, limits: TraceLimits | None, folder: Path) -> str | None:
    """The key of ``ref``'s trace read with its block's options; None when the file cannot be hashed."""
    assert ref.path is not None
    try:
        content = known_digest(ref.path, folder, limit=hash_limit(limits))
    except OSError:
        return None  # refused or unreadable: the reader reports it
    settings = {
        "code": code_fingerprint(),
        "libraries": [library_identity("pyarrow") or "none", library_identity("numpy") or "none"],
        "reader": "trace",
        "path": os.path.realpath(ref.path),
        "display": ref.display,
        "suffix": ref.path.suffix.lower(),
        "spec": ref.spec,
        "limits": dataclasses.asdict(limits) if limits is not None else None,
        "content": content,
    }
    return settings_digest(settings)


def _entry_path(folder: Path, key: str) -> Path:
    return folder / f"reads-v{FORMAT_VERSION}" / key[:2] / f"{key}.read"


def _load(folder: Path, key: str) -> Series | None:
    from policylint.readers.series import Series

    try:
        meta, arrays, budget = load_entry(_entry_path(folder, key), kind="reads", folder=folder)
        if meta.get("format") != FORMAT_VERSION or meta.get("key") != key or meta.get("kind") != "reads":
            return None
        series = decode(meta["series"], arrays, budget)
    except Exception:  # noqa: BLE001 - any damage to an entry means "not kept", never an error
        return None
    return series if isinstance(series, Series) else None


def _store(folder: Path, key: str, series: Series) -> None:
    encoder = Encoder()
    try:
        document = {"format": FORMAT_VERSION, "kind": "reads", "key": key, "series": encoder.encode(series)}
    except Uncacheable:
        return
    write_entry(_entry_path(folder, key), document, encoder.blobs(), kind="reads", folder=folder)


def _identity(path: Path) -> list[int] | None:
    try:
        return stat_identity(os.stat(path))
    except OSError:
        return None


def read_trace(ref: MeasurementRef, limits: TraceLimits | None, folder: Path | None) -> Series:
    """``ref``'s concurrency trace as :func:`policylint.traces.read_series` reads it.

    With the cache ``folder`` (a small run's; None: no kept reads), from a kept read
    when one fits, and a read made here is kept for the next run.
    """
    return _kept(ref, limits, folder, lambda series: series, _load, _store)


def read_prints(ref: MeasurementRef, limits: TraceLimits | None, folder: Path | None) -> dict[str, Any]:
    """The copy prints of ``ref``'s trace (:func:`policylint.measure.integrity.workload.copy_prints` of its read).

    With the cache ``folder`` (None: nothing kept), kept under the key of the read
    they come from: the prints are a function of the series as read, which the key
    names whole (the file's bytes, the reader's options, the code). Every run keeps
    them, whatever its size: an entry holds about a kilobyte. A read that fails raises
    as :func:`read_trace` does; one that a file changed during is not kept.
    """
    from policylint.measure.integrity.workload import copy_prints

    return _kept(ref, limits, folder, copy_prints, _load_prints, _store_prints)


def _kept(
    ref: MeasurementRef,
    limits: TraceLimits | None,
    folder: Path | None,
    made: Callable[[Series], T],
    load: Callable[[Path, str], T | None],
    store: Callable[[Path, str, T], None],
) -> T:
    """``made`` of ``ref``'s trace as read, taken from the cache ``folder`` under the read's key when kept there.

    What is made here is kept (``store``) unless the file changed while it was hashed and
    read, or within the last two seconds before (it may change again within one tick).
    """
    from policylint import traces

    assert ref.path is not None
    if folder is None:
        return made(traces.read_series(ref.path, **reader_arguments(ref, limits, "trace")))
    before = _identity(ref.path)
    started = time.time_ns()
    key = _read_key(ref, limits, folder)
    if key is not None:
        kept = load(folder, key)
        if kept is not None:
            from policylint.readers.kept import release

            release()  # bytes the key's hashing kept for a reader that does not come
            return kept
    value = made(traces.read_series(ref.path, **reader_arguments(ref, limits, "trace")))
    if key is not None and before is not None and _identity(ref.path) == before:
        mtime, ctime = before[3], before[4]
        if max(mtime, ctime) < started - int(_RACY_SECONDS * 1e9):
            store(folder, key, value)
    return value


# --------------------------------------------------------------------------- kept copy prints


def _prints_path(folder: Path, key: str) -> Path:
    return folder / f"prints-v{FORMAT_VERSION}" / key[:2] / f"{key}.prints"


def _store_prints(folder: Path, key: str, prints: dict[str, Any]) -> None:
    document = {"format": FORMAT_VERSION, "kind": "prints", "key": key, **prints}
    write_entry(_prints_path(folder, key), document, {}, kind="prints", folder=folder)


def _load_prints(folder: Path, key: str) -> dict[str, Any] | None:
    """The kept prints under ``key``, checked field by field; None when missing, damaged or foreign."""
    from policylint.calc.runs import SKETCH_SIZE

    try:
        meta, _, _ = load_entry(_prints_path(folder, key), kind="prints", folder=folder)
    except Exception:  # noqa: BLE001 - any damage to an entry means "not kept", never an error
        return None
    if meta.get("format") != FORMAT_VERSION or meta.get("key") != key or meta.get("kind") != "prints":
        return None
    sketch, printed, changes = meta.get("run_sketch"), meta.get("values_fingerprint"), meta.get("value_changes")
    parts = meta.get("part_sketches")

    def is_sketch(value: Any) -> bool:
        return value is None or (
            isinstance(value, list) and 0 < len(value) <= SKETCH_SIZE
            and all(type(x) is int and 0 <= x < 1 << 53 for x in value)
        )

    if not is_sketch(sketch) or not (parts is None or (isinstance(parts, list) and parts and all(map(is_sketch, parts)))):
        return None
    if not isinstance(printed, str) or len(printed) > 128 or type(changes) is not int or changes < 0:
        return None
    return {"run_sketch": sketch, "values_fingerprint": printed, "value_changes": changes, "part_sketches": parts}
