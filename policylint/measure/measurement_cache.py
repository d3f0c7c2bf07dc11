"""The measurement cache: a workload's facts, its GPU demand series and a pool's pooled demand.

Measuring (reading traces, computing bands) is most of what ``check`` costs, and
a pre-commit run on one changed file would otherwise re-read every trace of the
repository. A workload's entry is keyed (:func:`workload_key`) by a SHA-256 over

- the digest of every measurement file the workload reads
  (:mod:`policylint.cache.digests`), with the name it is shown under and its suffix,
- every setting that shapes the result: the workload's spec (measurement blocks,
  cold start, share, exclusions, per-GPU figure, GPUs per replica, VRAM), the
  pool's elastic and GPU sections, the trace limits,
- the code fingerprint (policylint version, package source, entry format).

The date of the run is not part of the key: measuring does not use it (staleness
is judged by the rules, from the last sample), and a test holds that.

A workload's GPU demand series, which only its pool's sum reads, is a second entry
next to its facts (``series-v*``), and each pool's sum and bands have their own
entry keyed by the pool's spec and its members' keys (:func:`pool_key`): a warm
run whose pools are cached reads no series at all. Entries are binary entries of
:mod:`policylint.cache.store`, their values encoded by :mod:`policylint.measure.cache_encoding`.

Only measurements that succeeded without findings are stored (the caller decides),
so findings at file positions (which depend on the YAML, not on the trace) are
always computed afresh and come out identical with and without the cache.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from policylint.cache.digests import Unhashed, hash_limit, known_digest
from policylint.measure.cache_encoding import Encoder, decode
from policylint.cache.store import (
    FORMAT_VERSION, Uncacheable, code_fingerprint, load_entry, settings_digest, write_entry,
)
from policylint.measure.facts import GpuDemand, PoolFacts, WorkloadFacts

if TYPE_CHECKING:
    from policylint.model import Workload
    from policylint.readers.limits import TraceLimits


#: what :func:`workload_key` gives, without ``hash_files``, for a workload with a file to hash
UNHASHED = "unhashed"


def files_unchanged(workload: Workload) -> bool:
    """Whether every file ``workload`` measures still is the file its key's digests were taken of.

    A measurement read after one of its traces was rewritten is of other bytes than its key
    names: it is neither stored nor keyed (see :func:`policylint.cache.digests.unchanged_since_digest`).
    """
    from policylint.cache.digests import unchanged_since_digest

    return all(unchanged_since_digest(ref.path) for ref in workload.measurements.values() if ref.path is not None)


def workload_key(
    workload: Workload, limits: TraceLimits | None, folder: Path | None = None, *, hash_files: bool = True
) -> str | None:
    """The cache key of one workload's facts; None when it reads no file (or one is unreadable).

    Untraced workloads cost nothing to measure, and a file that cannot be read
    is reported by the measuring step, so neither is worth an entry. With the
    cache ``folder``, the digests of files unchanged since an earlier run are
    reused (see :func:`policylint.cache.digests.known_digest`) instead of reading every trace again.
    Without ``hash_files`` a workload with a file whose digest is not recorded
    gets :data:`UNHASHED` instead of a key: a parallel run hashes those files in
    its workers, beside the measuring.
    """
    files = []
    for role in sorted(workload.measurements):
        ref = workload.measurements[role]
        if ref.path is None:
            continue
        try:
            # checked (regular file, size) before hashing: a pipe or an 8 GiB file is the readers' to refuse
            content = known_digest(ref.path, folder, hash_files=hash_files, limit=hash_limit(limits))
        except Unhashed:
            return UNHASHED
        except OSError:
            return None
        # The file by its bytes, its name as written and its real suffix (which picks the
        # reader) - not by where the repository lies: a moved or freshly cloned repository,
        # or a CI workspace with a new folder on every run, still finds its entries.
        files.append([role, ref.display, ref.path.suffix.lower(), ref.spec, content])
    if not files:
        return None
    pool = workload.pool
    settings = {
        "code": code_fingerprint(),
        "workload": workload.name,
        "spec": workload.spec,
        "pool": {"elastic": pool.spec.get("elastic"), "gpu": pool.spec.get("gpu")} if pool is not None else {"elastic": None, "gpu": None},
        "limits": dataclasses.asdict(limits) if limits is not None else None,
        "files": files,
    }
    return settings_digest(settings)


def _entry_path(folder: Path, key: str) -> Path:
    return folder / f"measure-v{FORMAT_VERSION}" / key[:2] / f"{key}.entry"


def _series_path(folder: Path, key: str) -> Path:
    return folder / f"series-v{FORMAT_VERSION}" / key[:2] / f"{key}.series"


def _load_value(folder: Path, path: Path, kind: str, key: str, field: str) -> Any:
    """The decoded ``field`` of the ``kind`` entry at ``path`` recorded under ``key``; ValueError/OSError when not."""
    meta, arrays, budget = load_entry(path, kind=kind, folder=folder)
    if meta.get("format") != FORMAT_VERSION or meta.get("key") != key or meta.get("kind") != kind:
        raise ValueError("not this entry")
    return decode(meta[field], arrays, budget)


def load(folder: Path, key: str, *, demand: bool = True) -> WorkloadFacts | None:
    """The facts stored under ``key``, or None when absent, unreadable or not matching.

    The facts are one small entry; the workload's GPU demand series, which only its
    pool's sum reads, is a second one (``series-v*``), read only with ``demand``. Without
    it the facts come back with ``demand`` None - for a caller that has the pool's sum
    from :func:`load_pool` already. A damaged or missing series entry makes the whole
    measurement a miss, so it is measured and both entries are written again.
    """
    try:
        meta, arrays, budget = load_entry(_entry_path(folder, key), kind="measure", folder=folder)
        if meta.get("format") != FORMAT_VERSION or meta.get("key") != key or meta.get("kind") != "measure":
            return None
        facts = decode(meta["facts"], arrays, budget)
        if not isinstance(facts, WorkloadFacts) or not isinstance(meta.get("series"), bool):
            return None
        if demand and meta["series"]:
            series = _load_value(folder, _series_path(folder, key), "series", key, "demand")
            if not isinstance(series, GpuDemand):
                return None
            facts.demand = series
    except Exception:  # noqa: BLE001 - any damage to an entry means "not cached", never an error
        return None
    return facts


def load_demand(folder: Path, key: str) -> Any:
    """The GPU demand series (:class:`~policylint.measure.facts.GpuDemand`) stored under ``key``, or None.

    Read alone, without the facts: the pooled-sum cache takes an old series out of a
    pool's sum by the key it was added under (:mod:`policylint.measure.pooled_cache`).
    """
    try:
        series = _load_value(folder, _series_path(folder, key), "series", key, "demand")
    except Exception:  # noqa: BLE001 - a missing or damaged entry is a miss, never an error
        return None
    return series if isinstance(series, GpuDemand) else None


def store(folder: Path, key: str, facts: WorkloadFacts) -> None:
    """Write ``facts`` under ``key`` atomically (the GPU demand series as its own entry, written first).

    A value or folder that cannot be stored is skipped.
    """
    encoder = Encoder()
    try:
        small = dataclasses.replace(facts, demand=None)
        document = {"format": FORMAT_VERSION, "kind": "measure", "key": key, "facts": encoder.encode(small)}
        document["series"] = facts.demand is not None
        if facts.demand is not None:
            series = Encoder()
            series_document = {"format": FORMAT_VERSION, "kind": "series", "key": key, "demand": series.encode(facts.demand)}
    except Uncacheable:
        return
    try:
        if facts.demand is not None:
            # The series first: a run that finds the facts finds their series too (or a miss).
            write_entry(_series_path(folder, key), series_document, series.blobs(), kind="series", folder=folder)
        write_entry(_entry_path(folder, key), document, encoder.blobs(), kind="measure", folder=folder)
    except ValueError:
        return  # a value JSON cannot spell exactly (NaN in a figure): measured afresh next time


# --------------------------------------------------------------------------- pooled demand
#
# A pool's summed series, bands and queue figures, keyed by everything they are
# computed from: the code, the pool's own spec (reserved and elastic GPUs, cold start,
# queue), and each member's name and measurement key in name order - a member's key
# already covers its trace bytes, its spec and the pool sections its facts depend on.
# Any change to a member changes its key and so the pool's. A warm run whose pools
# all hit reads one small entry per workload and one entry per pool, instead of every
# member's series followed by the sum.


def pool_key(pool: Any, member_keys: Sequence[tuple[str, str]]) -> str:
    """The cache key of one pool's pooled demand: the code, the pool's spec and its members' keys."""
    settings = {
        "code": code_fingerprint(),
        "pool": pool.qualified,
        "spec": pool.spec,
        "members": [list(m) for m in sorted(member_keys)],
    }
    return settings_digest(settings, f"pooled/{FORMAT_VERSION}/")


def _pool_path(folder: Path, key: str) -> Path:
    return folder / f"pooled-v{FORMAT_VERSION}" / key[:2] / f"{key}.pool"


def load_pool(folder: Path, key: str) -> PoolFacts | None:
    """The :class:`~policylint.measure.facts.PoolFacts` stored under ``key``, or None (absent or damaged)."""
    try:
        pooled = _load_value(folder, _pool_path(folder, key), "pooled", key, "pool")
    except Exception:  # noqa: BLE001 - a missing or damaged entry is a miss, never an error
        return None
    return pooled if isinstance(pooled, PoolFacts) else None


def store_pool(folder: Path, key: str, pooled: PoolFacts) -> None:
    """Keep one pool's pooled demand under ``key``; a value that cannot be stored is skipped."""
    encoder = Encoder()
    try:
        document = {"format": FORMAT_VERSION, "kind": "pooled", "key": key, "pool": encoder.encode(pooled)}
    except Uncacheable:
        return
    try:
        write_entry(_pool_path(folder, key), document, encoder.blobs(), kind="pooled", folder=folder)
    except ValueError:
        return  # a value JSON cannot spell exactly: summed afresh next time

