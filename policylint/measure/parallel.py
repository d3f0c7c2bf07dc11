"""Measuring in worker processes (``--jobs``): the same facts, sooner.

Workers are forked, so they inherit the parsed model instead of receiving it; each
measures whole workloads (hashing their traces for the cache first when asked) and
sends the facts back. A pool that breaks - a worker killed, no fork possible - is
said on standard error, and the caller measures those workloads itself; anything
else a worker raises is a bug and ends the run.
"""

from __future__ import annotations

import datetime as dt
import os
import sys
from typing import TYPE_CHECKING, Any

from policylint.cache import digests as digest_cache
from policylint.cache.beside import die_with_parent
from policylint.measure import measurement_cache as measure_cache
from policylint.errors import MeasurementError, escape_controls
from policylint.finding import Finding
from policylint.measure.facts import WorkloadFacts
from policylint.measure.workload import measure_workload

if TYPE_CHECKING:
    from pathlib import Path

    from policylint.model import Model, Workload
    from policylint.traces import TraceLimits


#: fewer traced workloads than this are measured in-process: a 92-day trace measures in
#: about 15 ms, while starting the workers and sending the arrays back costs about 0.1 s
PARALLEL_MIN_WORKLOADS = 32


def measure_keyed(
    workload: Workload,
    key: str | None,
    now: dt.datetime,
    limits: TraceLimits | None,
    cache_dir: Path | None,
    reads: Path | None = None,
) -> tuple[tuple[WorkloadFacts, list[Finding]], str | None]:
    """Measure one workload and store a clean result in the cache (its trace's read kept in ``reads``, if given).

    Also the key its facts may be kept and pooled under: ``key``, or None when one of its traces
    changed since the digests in ``key`` were taken (what was read is then not what the key names).
    """
    try:
        facts, problems = measure_workload(workload, now, limits=limits, reads=reads)
    except MeasurementError as exc:  # pragma: no cover - measure_workload catches these
        facts, problems = WorkloadFacts(errors=[str(exc)]), []
    if key is not None and cache_dir is not None and not measure_cache.files_unchanged(workload):
        key = None
    if cache_dir is not None and key is not None and not problems and not facts.errors:
        measure_cache.store(cache_dir, key, facts)
    return (facts, problems), key


def keyed_hit(
    workload: Workload, limits: TraceLimits | None, cache_dir: Path | None
) -> tuple[str | None, WorkloadFacts | None]:
    """The workload's key, its traces hashed now (just before their measuring), and its cached facts if any.

    On a hit the bytes the hashing kept for the readers are let go: no reader comes.
    """
    key = measure_cache.workload_key(workload, limits, cache_dir)
    hit = measure_cache.load(cache_dir, key) if cache_dir is not None and key is not None else None
    if hit is not None:
        from policylint.readers.kept import release

        release()
    return key, hit


def can_fork() -> bool:
    """Workers inherit the parsed model by forking; elsewhere the run stays in one process."""
    return sys.platform.startswith("linux") and hasattr(os, "fork")  # Linux offers the fork start method


#: what forked workers measure from (set just before the pool starts, read in the children)
_WORK: tuple[Model, dict[str, str | None], frozenset[str], dt.datetime, TraceLimits | None, Path | None] | None = None


def _work(name: str) -> tuple[str, str | None, tuple[WorkloadFacts, list[Finding]], list[Any]]:
    """In a worker: the workload's key (hashing its traces when asked), then its cached or measured facts,
    and the trace digests it recorded (for the run's own digest tables, :func:`policylint.cache.digests.adopt`)."""
    assert _WORK is not None
    model, keys, rekey, now, limits, cache_dir = _WORK
    workload = model.workloads[name]
    digest_cache.take_fresh()  # rows a fork inherited from the run's process are that process's own
    if name in rekey:
        key, hit = keyed_hit(workload, limits, cache_dir)
        if hit is not None:
            return name, key, (hit, []), digest_cache.take_fresh()
    else:
        key = keys[name]
    result, key = measure_keyed(workload, key, now, limits, cache_dir)  # no key for a trace changed meanwhile
    return name, key, result, digest_cache.take_fresh()


def measure_parallel(
    model: Model,
    names: list[str],
    keys: dict[str, str | None],
    rekey: frozenset[str],
    now: dt.datetime,
    limits: TraceLimits | None,
    cache_dir: Path | None,
    jobs: int,
) -> list[tuple[str, str | None, tuple[WorkloadFacts, list[Finding]]]]:
    """Measure ``names`` in up to ``jobs`` forked processes, hashing the traces of ``rekey`` there first.

    A broken pool (a worker that died, a fork that failed) is reported on standard
    error and its results are dropped: the caller measures those workloads itself.
    """
    # imported here, not when the module loads: a warm run measures nothing in workers, and the
    # two take tens of milliseconds to import
    import concurrent.futures
    import functools
    import multiprocessing
    from concurrent.futures.process import BrokenProcessPool

    global _WORK
    _WORK = (model, keys, rekey, now, limits, cache_dir)
    out: list[tuple[str, str | None, tuple[WorkloadFacts, list[Finding]]]] = []
    try:
        workers = min(jobs, len(names))
        if workers:
            # looked up when called, not when this module loads: a test may stand in for the executor
            # a worker ends with the run even when the run is killed outright (it would wait on its pipe forever)
            alive = functools.partial(die_with_parent, os.getpid())
            with concurrent.futures.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"),
                                                        initializer=alive) as pool:
                chunk = max(1, len(names) // (workers * 4))
                for name, key, result, rows in pool.map(_work, names, chunksize=chunk):
                    out.append((name, key, result))
                    digest_cache.adopt(rows)
    except (BrokenProcessPool, OSError) as exc:
        # The pool itself broke (a worker killed, e.g. by the OOM killer; no fork possible):
        # the caller measures every workload in this process instead, and the run says so.
        # Anything else a worker raises is a bug and ends the run as one.
        out.clear()
        sys.stderr.write(
            escape_controls(f"policylint: measuring in {jobs} processes failed ({type(exc).__name__}: {exc}); measuring in one process instead")
            + "\n"
        )
    finally:
        _WORK = None
    return out
