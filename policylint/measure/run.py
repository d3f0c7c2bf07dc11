"""Step 4 of a run: every workload of the model measured once, from the cache where it can be.

:func:`measure` works out each traced workload's cache key, takes what the cache
holds, and measures the rest (:func:`policylint.measure.workload.measure_workload`)
in this process or, with ``--jobs``, in worker processes
(:mod:`policylint.measure.parallel`). The pools are summed after it, by
:func:`policylint.measure.pools.measure_pools`; their cache entries are looked up here
first, so that the members of a pool whose sum is kept need not bring their series.
Results are kept for the run and never recomputed per rule.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from policylint.measure import measurement_cache as measure_cache
from policylint.cache import digests as digest_cache
from policylint.finding import Finding
from policylint.measure import parallel
from policylint.measure.facts import WorkloadFacts
from policylint.measure.heap import hold_freed_memory
from policylint.measure.kept_reads import KEEP_AT_MOST
from policylint.measure.pools import CachedPool, Needed, cached_pools

if TYPE_CHECKING:
    from pathlib import Path

    from policylint.model import Model
    from policylint.traces import TraceLimits


def measure(
    model: Model,
    now: dt.datetime,
    *,
    limits: TraceLimits | None = None,
    cache_dir: Path | None = None,
    jobs: int = 1,
    pooled: dict[str, CachedPool] | None = None,
    only: Needed | None = None,
    keys_out: dict[str, str | None] | None = None,
) -> tuple[dict[str, WorkloadFacts], list[Finding]]:
    """Facts for every workload of the model, computed once per run (traces read within ``limits``).

    ``cache_dir`` (None: no cache) keeps each traced workload's facts between runs
    (:mod:`policylint.cache`). ``jobs`` above 1 measures the workloads the cache
    does not hold in that many processes; the result is the same as with one.

    With the cache, ``pooled`` (when given) receives every pool's cache key and its
    cached pooled demand, for :func:`policylint.measure.pools.measure_pools`; the workloads of a pool whose
    pooled demand is cached come back without their GPU demand series (``demand``
    None), which only that sum would read.

    ``only`` (None: every workload) measures just those workloads and looks up
    just those pools (see :func:`policylint.engine.scope.needed`).

    ``keys_out`` (when given) receives each measured workload's cache key, as
    :func:`~policylint.measure.measurement_cache.workload_key` gave it before its measuring.
    """
    names = sorted(model.workloads) if only is None else sorted(n for n in model.workloads if n in only.workloads)
    done: dict[str, tuple[WorkloadFacts, list[Finding]]] = {}
    keys: dict[str, str | None] = {}
    in_workers = jobs > 1 and parallel.can_fork()
    unhashed: list[str] = []  # workloads with a trace whose digest is not recorded yet
    for name in names:
        if cache_dir is None:
            keys[name] = None
            continue
        # New traces are hashed beside their measuring - by a parallel run's workers, or below in
        # one process - not one after another here: the bytes hashed for the key are then the bytes
        # the reader parses (policylint.readers.kept), and a cold run reads each trace once.
        key = measure_cache.workload_key(model.workloads[name], limits, cache_dir, hash_files=False)
        if key == measure_cache.UNHASHED:
            unhashed.append(name)
        else:
            keys[name] = key
    if len(unhashed) < parallel.PARALLEL_MIN_WORKLOADS:
        for name in unhashed:  # too few to start workers for: hashed here
            keys[name] = measure_cache.workload_key(model.workloads[name], limits, cache_dir)
        unhashed = []
    summed: set[str] = set()  # workloads whose pools all have their pooled demand cached
    if cache_dir is not None and pooled is not None and not unhashed:
        pooled.update(cached_pools(model, keys, cache_dir, only))
        hits = {q for q, c in pooled.items() if c.facts is not None}
        # a pool's kept sum is updated from the series of the members that join it only
        joining = {q: frozenset(c.joining) for q, c in pooled.items() if c.facts is None and c.base is not None}
        for name in names:
            pool = model.workloads[name].pool
            if pool is not None and (pool.qualified in hits or name not in joining.get(pool.qualified, {name})):
                summed.add(name)
    for name in names:
        key = keys.get(name)
        hit = (
            measure_cache.load(cache_dir, key, demand=name not in summed)
            if cache_dir is not None and key is not None
            else None
        )
        if hit is not None:
            # only finding-free measurements are stored, so a hit has no findings
            done[name] = (hit, [])
    todo = [n for n in names if n not in done]
    traced = [n for n in todo if any(r.path is not None for r in model.workloads[n].measurements.values())]
    # a run that measures a few workloads again (a pre-commit run on an edited file) takes their
    # traces' reads kept by the one before and keeps them for the next (policylint.measure.kept_reads)
    reads = cache_dir if len(traced) <= KEEP_AT_MOST else None
    if len(traced) >= parallel.PARALLEL_MIN_WORKLOADS:
        hold_freed_memory()  # many traces' arrays made and freed: reuse the memory, not fresh pages
    changed: list[str] = []  # keyed workloads measured after a trace of theirs changed since its digest

    def measured(name: str) -> tuple[WorkloadFacts, list[Finding]]:
        result, key = parallel.measure_keyed(model.workloads[name], keys[name], now, limits, cache_dir, reads)
        if key is None and keys[name] is not None:
            changed.append(name)
        return result

    if in_workers and len(traced) >= parallel.PARALLEL_MIN_WORKLOADS:
        # The first one here: it imports the readers and calculator once, before the
        # fork, instead of once in every worker.
        first = traced[0]
        if first in unhashed:
            keys[first], hit = parallel.keyed_hit(model.workloads[first], limits, cache_dir)
            if hit is not None:
                done[first] = (hit, [])
        if first not in done:
            done[first] = measured(first)
        rekey = frozenset(unhashed) - {first}
        for name, key, result in parallel.measure_parallel(model, traced[1:], keys, rekey, now, limits, cache_dir, jobs):
            if key is None and keys.get(name) is not None:
                changed.append(name)  # its worker read a trace changed since its key's digests were taken
            keys[name] = key
            done[name] = result
    for name in todo:
        if name not in done:
            if name not in keys:  # hashed just before its measuring (or its worker failed before hashing)
                keys[name], hit = parallel.keyed_hit(model.workloads[name], limits, cache_dir)
                if hit is not None:
                    done[name] = (hit, [])  # as a worker does: the new digest found an entry
                    continue
            done[name] = measured(name)
    if cache_dir is not None:
        # a workload measured after one of its traces changed since its key's digests were taken: its
        # facts are of other bytes than the key names, so neither it nor a pool holding it is keyed
        # (a worker checks what it measured itself and hands back no key: policylint.measure.parallel._work)
        for name in changed:
            keys[name] = None
        if pooled is not None and changed and not unhashed:
            for name in changed:
                pool = model.workloads[name].pool
                if pool is not None and pool.qualified in pooled:
                    pooled[pool.qualified] = CachedPool(None)
    if cache_dir is not None and pooled is not None and unhashed:
        # every key is known now: the pools' entries, for measure_pools to use or store
        pooled.update(cached_pools(model, keys, cache_dir, only))
    digest_cache.flush_digests(cache_dir)  # the digests recorded or hashed here, one entry per folder
    from policylint.readers import forget_reads

    forget_reads()  # what was kept to read an export once for all the workloads reading it (all measured now)
    if keys_out is not None:
        keys_out.update(keys)
    out: dict[str, WorkloadFacts] = {}
    findings: list[Finding] = []
    for name in names:  # the order of the sequential run, whoever measured what
        out[name] = done[name][0]
        findings.extend(done[name][1])
    return out, findings
