"""A narrowed run's near-copy partners outside what it measures (PL972 across pools and clusters).

A narrowed run (``--changed-files``, ``--diff``, PATH arguments) measures only the pools
and clusters its judged views read (:func:`policylint.engine.scope.needed`). A near copy
(:func:`policylint.measure.integrity.copies.copy_facts`) pairs workloads across the whole
repository: a trace copied from another cluster under another file name has its
original outside that part, so without this step the narrowed run never compared them
and passed a copy a whole run reports. :func:`copy_partners` finds, for the workloads the
run judges whole, every workload outside the measured part whose trace shares a sketched
run (or its values) with one of theirs - from the repository index where its record is
usable, otherwise measured (a cache hit when warm). The caller then measures the
partners' pools too, and a change reports the partners with the near-copy rules only:
the finding lands on whichever of the pair comes later by name.

Pairs are taken as :func:`policylint.calc.runs.shared_run_pairs` gives them, before any
similarity threshold or open-citation test: a partner too many only costs measuring its
pool; the verdict is the rule's, with both measured.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from policylint.engine.index_store import Index
    from policylint.engine.repo_index import Prepared
    from policylint.model import Model, Workload
    from policylint.model.needed import Needed

#: the facts of a workload view that a near copy sets (rules reading none of them do not judge a partner)
NEAR_COPY_FACTS: frozenset[str] = frozenset({"near_copy_of", "near_copy_similarity", "near_copy_trace", "near_copy_pool"})


def _prints(integrity: Any, view_facts: Any = None) -> tuple[Any, str | None]:
    """(run sketch, values fingerprint when the series says enough to be recognised) of one workload."""
    got = integrity if isinstance(integrity, dict) else {}
    sketch = got.get("run_sketch")
    source = view_facts if view_facts is not None else got

    def read(key: str) -> Any:
        return source.get(key) if isinstance(source, dict) else getattr(source, key, None)

    changes = read("value_changes") or 0
    printed = read("values_fingerprint") if changes >= 10 else None
    return (sketch if isinstance(sketch, (list, bytes)) else None), (str(printed) if printed else None)


def copy_partners(
    model: Model,
    only: Needed,
    mine: Iterable[str],
    facts: dict[str, Any],
    prepared: Prepared | None,
    index: Index | None,
    options: Any,
    now: dt.datetime,
) -> set[str]:
    """Workloads outside ``only`` that may be a near copy of one of ``mine`` (measured, in ``facts``), or its original."""
    from policylint.calc.runs import shared_run_pairs
    from policylint.engine.repo_index import lite_view_of, usable
    from policylint.measure.run import measure
    from policylint.model.needed import Needed

    names: list[str] = []
    prints: list[tuple[Any, str | None]] = []
    for name in sorted(set(mine)):
        got = facts.get(name)
        if got is None:
            continue
        view = prepared.views.get(name) if prepared is not None else None
        found = _prints(getattr(got, "integrity", None), view.facts if view is not None else None)
        if found != (None, None):
            names.append(name)
            prints.append(found)
    if not names:
        return set()
    own = len(names)
    others = sorted(n for n in model.workloads if n not in only.workloads)
    unknown: list[str] = []
    pools_seen: dict[str, str] = {}
    for name in others:
        w = model.workloads[name]
        rec = index.get(name) if index is not None else None
        lite = lite_view_of(rec, w, now) if rec is not None and usable(rec, w, pools_seen) else None
        if lite is None:
            unknown.append(name)
            continue
        view, sketch = lite
        names.append(name)
        prints.append(_prints({"run_sketch": sketch}, view.facts))
    if unknown:
        measured, _ = measure(model, now, limits=options.trace_limits, cache_dir=options.cache_dir, jobs=options.jobs,
                              only=Needed(frozenset(unknown), frozenset(), frozenset(), frozenset()))
        for name in unknown:
            if name in measured:
                names.append(name)
                prints.append(_prints(measured[name].integrity))
    partners: set[str] = set()
    for a, b in shared_run_pairs([s for s, _ in prints]):
        if (a < own) != (b < own):
            partners.add(names[b] if a < own else names[a])
    by_values: dict[str, list[int]] = {}
    for i, (_, printed) in enumerate(prints):
        if printed:
            by_values.setdefault(printed, []).append(i)
    for members in by_values.values():
        if any(i < own for i in members):
            partners.update(names[i] for i in members if i >= own)
    return partners


def shared_citations(model: Model) -> dict[str, list[Workload]]:
    """Workload name -> the workloads of other pools citing its concurrency trace by the same path.

    Such a pair is judged as a copy (PL972) when neither declares a share
    (:func:`policylint.measure.integrity.copies.copy_facts`), so each one's verdict reads the
    other's facts. Only names with such a partner are keys. The path is compared as written,
    made absolute, as ``copy_facts`` compares it.
    """
    # by file name first (a system call-free string split): only citations of one name can be one path
    by_name: dict[str, list[tuple[Workload, str]]] = {}
    for w in model.workloads.values():
        ref = w.measurements.get("concurrency")
        if ref is not None and ref.path is not None and w.pool is not None:
            text = os.fspath(ref.path)
            by_name.setdefault(os.path.basename(text), []).append((w, text))
    by_path: dict[str, list[Workload]] = {}
    for named in by_name.values():
        if len(named) > 1:
            for w, text in named:
                by_path.setdefault(os.path.abspath(text), []).append(w)
    out: dict[str, list[Workload]] = {}
    for group in by_path.values():
        if len(group) > 1 and len({w.pool.qualified for w in group if w.pool is not None}) > 1:
            for w in group:
                out[w.name] = [o for o in group if o.pool is not w.pool]
    return out
