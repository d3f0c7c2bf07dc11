"""How a run uses the repository index (:mod:`policylint.engine.repo_index`): taken from, and recorded in.

:func:`indexed_run` opens the index for :func:`policylint.engine.linter.judge` and, for a
narrowed run, takes the unchanged workloads from it; :func:`record_beside` records the
workloads the run viewed, handing the work to a forked child (:mod:`policylint.cache.beside`)
when the run may use more than one process and has enough of them to record.
"""

from __future__ import annotations

import datetime as dt
import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any

from policylint.engine.index_store import Index, open_index
from policylint.engine.repo_index import Prepared, Recorder, prepare

if TYPE_CHECKING:
    from policylint.cache.beside import Beside
    from policylint.engine.view import View
    from policylint.measure.facts import WorkloadFacts
    from policylint.model import Model, Workload
    from policylint.model.needed import Needed


def indexed_run(
    model: Model, options: Any, keep: Any, only: Needed | None, now: dt.datetime
) -> tuple[Index | None, Prepared | None, Recorder | None]:
    """For :func:`policylint.engine.linter.judge`: the index, what it gave (None: today's path) and its recorder.

    Nothing without a cache folder or a rule set. Only a narrowed run (``only``)
    takes workloads from the index - a whole run measures every workload anyway -
    and not with ``--diff`` history or when every view is wanted; every cached run
    records the workloads it viewed from their measurements.
    """
    if options.cache_dir is None or options.ruleset is None:
        return None, None, None
    try:
        index = open_index(options.cache_dir, model.root, options.trace_limits, options.gpu_resources)
    except Exception:  # noqa: BLE001 - no index: today's path, nothing recorded
        return None, None, None
    recorder = Recorder(index, now, set())
    prepared = None
    if only is not None and options.change is None and not options.all_views:
        try:
            prepared = prepare(model, only, now, index, limits=options.trace_limits, cache_dir=options.cache_dir,
                               jobs=options.jobs)
        except Exception:  # noqa: BLE001 - an index that cannot be used is no index: today's path
            prepared = None
        if prepared is not None:
            recorder.skip_files.update(f.file for f in prepared.findings)
    return index, prepared, recorder


def record_beside(
    beside: Beside | None, recorder: Recorder, folder: Path | None, built: list[tuple[Workload, WorkloadFacts, View]]
) -> None:
    """Record the workload views ``build_views`` built, given before its pool steps add to them.

    When :meth:`Beside.forks` work of that size, the workloads the recorder wants are
    asked once here, and enough of them go to a child, which records them from the views
    as they are at this moment and writes the index (``recorder.handed_off``: the run must
    not write it without those records). Otherwise they are recorded here, as always, and
    a large index that gained rows is handed to a child to write from here.
    """
    if beside is None or not beside.forks(len(built)):
        for w, wf, view in built:
            recorder(w, wf, view)
    else:
        todo = [(w, wf, view) for w, wf, view in built if recorder.wants(w, wf)]
        if beside.forks(len(todo)):
            beside.start(functools.partial(_record, todo, recorder, folder), len(todo))
            recorder.handed_off = True
            return
        for w, wf, view in todo:
            recorder(w, wf, view, wanted=True)
    # Nothing is recorded after this: a large index that gained rows (a one-file run that edited a
    # workload: 40 MB at 10,000 workloads) is written by a child from here, beside the pool steps and
    # the rules, rather than after them, which left the run waiting for the child at its end.
    index = recorder.index
    if beside is not None and index.dirty and beside.forks(len(index.rows) + len(index.records)):
        beside.start(index.write, len(index.rows) + len(index.records))
        recorder.handed_off = True


def _record(todo: list[tuple[Workload, WorkloadFacts, View]], recorder: Recorder, folder: Path | None) -> None:
    """In a child: record ``todo``, then write the index and what recording hashed."""
    for w, wf, view in todo:
        recorder(w, wf, view, wanted=True)
    recorder.index.write()
    if folder is not None:
        from policylint.cache.digests import flush_digests

        flush_digests(folder)  # what recording hashed (a workload this run did not measure)


def measure_part(
    model: Model, options: Any, keep: Any, only: Needed | None, now: dt.datetime
) -> tuple[Index | None, Prepared | None, Recorder | None, dict[str, Any], list[Any], dict[str, Any]]:
    """For :func:`policylint.engine.linter.judge`: the index, what it gave, its recorder; then facts, findings and pools.

    The workloads and pools of ``only`` (all without it) measured: taken from the index when
    :func:`indexed_run` can, else measured and pooled (from the cache where it holds them).
    """
    from policylint.measure.facts import WorkloadFacts
    from policylint.measure.parallel import measure_keyed
    from policylint.measure.pools import CachedPool, measure_pools
    from policylint.measure.run import measure

    index, prepared, recorder = indexed_run(model, options, keep, only, now)
    if prepared is not None:
        return index, prepared, recorder, prepared.facts, prepared.findings, prepared.pools
    cached: dict[str, CachedPool] = {}
    facts, findings = measure(
        model, now, limits=options.trace_limits, cache_dir=options.cache_dir, jobs=options.jobs, pooled=cached,
        only=only, keys_out=recorder.keys if recorder is not None else None,
    )

    def remeasure(workload: Workload, key: str) -> WorkloadFacts:
        (measured, _), _ = measure_keyed(workload, key, now, options.trace_limits, options.cache_dir)
        return measured

    pools = measure_pools(model, facts, cache_dir=options.cache_dir, cached=cached, only=only, remeasure=remeasure)
    if recorder is not None:
        recorder.skip_files.update(f.file for f in findings)
    return index, prepared, recorder, facts, findings, pools


def measure_more(
    model: Model, options: Any, names: frozenset[str], part: tuple[Any, ...], now: dt.datetime
) -> tuple[Index | None, Prepared | None, Recorder | None, dict[str, Any], list[Any], dict[str, Any]]:
    """``part`` (what :func:`measure_part` gave) with the workloads ``names`` it lacks measured too.

    Only those workloads, never a pool: what a narrowed run adds for near-copy partners
    (:func:`policylint.engine.copy_reach.with_partners`), whose pools' demand it does not read.
    What was measured already is kept as it is, so nothing is measured twice.
    """
    from policylint.measure.run import measure
    from policylint.model.needed import Needed

    index, prepared, recorder, facts, findings, pools = part
    todo = frozenset(n for n in names if n not in facts)
    if not todo:
        return index, prepared, recorder, facts, findings, pools
    if prepared is not None and index is not None:
        # an indexed run takes them from the index as it took its part (lite views, no series)
        from policylint.engine.repo_index import prepare

        try:
            extra = prepare(model, Needed(todo, frozenset(), frozenset(), frozenset()), now, index,
                            limits=options.trace_limits, cache_dir=options.cache_dir, jobs=options.jobs)
        except Exception:  # noqa: BLE001 - an index that cannot be used is no index: measured below
            extra = None
        if extra is not None:
            prepared.views.update(extra.views)
            facts.update(extra.facts)
            if recorder is not None:
                recorder.skip_files.update(f.file for f in extra.findings)
            return index, prepared, recorder, facts, [*findings, *extra.findings], pools
    more, problems = measure(
        model, now, limits=options.trace_limits, cache_dir=options.cache_dir, jobs=options.jobs,
        only=Needed(todo, frozenset(), frozenset(), frozenset()), keys_out=recorder.keys if recorder is not None else None,
    )
    facts.update(more)
    if recorder is not None:
        recorder.skip_files.update(f.file for f in problems)
    return index, prepared, recorder, facts, [*findings, *problems], pools
