"""How a run uses the repository index (:mod:`policylint.engine.repo_index`): taken from, and recorded in.

:func:`indexed_run` opens the index for :func:`policylint.engine.linter.judge` and, for a
narrowed run, takes the unchanged workloads from it; :func:`record_beside` hands the
recording of a run's workloads to a forked child (:mod:`policylint.cache.beside`) when the
run may use more than one process and has enough of them to record.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable, Mapping
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
    beside: Beside,
    model: Model,
    facts: Mapping[str, WorkloadFacts],
    now: dt.datetime,
    only: Needed | None,
    prebuilt: Mapping[str, View] | None,
    recorder: Recorder,
    folder: Path | None,
) -> Callable[[Workload, WorkloadFacts, View], None] | None:
    """What ``build_views`` is to record with: None when a child records (and writes the index) instead.

    ``build_views`` records the workloads it views itself (those of ``only``, not ``prebuilt``).
    When :meth:`Beside.forks` work of that size, the workloads the recorder wants are asked
    once here; enough of them go to a child, which views each again as ``build_views`` views it
    before its pool steps (what the recorder sees inline). Too few, and only they are recorded
    inline; a run with too few workloads to view, or one process, records as it always did.
    """
    todo = [n for n in sorted(model.workloads) if (only is None or n in only.workloads) and not (prebuilt and n in prebuilt)]
    if not beside.forks(len(todo)):
        return recorder
    todo = [n for n in todo if recorder.wants(model.workloads[n], facts[n])]
    if beside.forks(len(todo)):
        beside.start(functools.partial(_record, model, facts, now, todo, recorder, folder), len(todo))
        return None
    wanted = frozenset(todo)

    def record(w: Workload, wf: WorkloadFacts, view: View) -> None:
        if w.name in wanted:
            recorder(w, wf, view, wanted=True)

    return record


def _record(
    model: Model, facts: Mapping[str, WorkloadFacts], now: dt.datetime, names: list[str], recorder: Recorder, folder: Path | None
) -> None:
    """Record ``names`` in the repository index as ``build_views`` does, then write the index."""
    from policylint.engine.workload_view import workload_view

    for name in names:
        workload = model.workloads[name]
        recorder(workload, facts[name], workload_view(workload, facts[name], now)[0], wanted=True)
    recorder.index.write()
    if folder is not None:
        from policylint.cache.digests import flush_digests

        flush_digests(folder)  # what recording hashed (a workload this run did not measure)
