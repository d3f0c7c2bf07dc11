"""A narrowed run's near-copy partners outside what it measures (PL972 across pools and clusters).

A narrowed run (``--changed-files``, ``--diff``, PATH arguments) measures only the pools
and clusters its judged views read (:func:`policylint.engine.scope.needed`). A near copy
(:func:`policylint.measure.integrity.copies.copy_facts`) pairs workloads across the whole
repository: a trace copied from another cluster under another file name has its
original outside that part, so without this step the narrowed run never compared them
and passed a copy a whole run reports. :func:`copy_partners` finds, for the workloads the
run judges whole, every workload outside the measured part whose trace shares a sketched
run (or its values) with one of theirs. The other workloads' prints come from the
repository index where its record is usable, else from the prints the cache keeps, else
from one read of the trace for them alone (:func:`_read_prints`), never a measurement.
The caller then measures the partners (:func:`with_partners`: their pools' members for
the identity facts, not their pools' demand) and judges them by the near-copy rules only
(:func:`copy_skips`): the finding lands on whichever of the pair comes later by name.

Pairs are taken as :func:`policylint.calc.runs.shared_run_pairs` gives them, before any
similarity threshold or open-citation test: a partner too many only costs measuring it;
the verdict is the rule's, with both measured.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from policylint.engine.index_store import Index
    from policylint.engine.repo_index import Prepared
    from policylint.engine.rule import RuleSet
    from policylint.model import Model, Workload
    from policylint.model.needed import Needed

#: the facts of a workload view that a near copy sets (rules reading none of them do not judge a partner)
NEAR_COPY_FACTS: frozenset[str] = frozenset({"near_copy_of", "near_copy_similarity", "near_copy_trace", "near_copy_pool",
                                             "near_copy_part"})


def _prints(integrity: Any, view_facts: Any = None) -> tuple[Any, str | None]:
    """(run sketch, values fingerprint when the series says enough to be recognised) of one workload."""
    got = integrity if isinstance(integrity, dict) else {}
    sketch = got.get("run_sketch")
    source = view_facts if view_facts is not None else got

    def read(key: str) -> Any:
        # a view's fact sheet (a stand-in too) finds a fact by name wherever its part holds it
        return source.get(key) if hasattr(source, "get") else None

    changes = read("value_changes") or 0
    printed = read("values_fingerprint") if changes >= 10 else None
    return (sketch if isinstance(sketch, (list, bytes)) else None), (str(printed) if printed else None)


def _part_prints(integrity: Any, view_facts: Any = None) -> list[tuple[Any, None]]:
    """The run sketch of each column a workload's trace sums (``part_sketches``), as :func:`_prints` entries.

    A column that repeats another workload's trace is a near copy of it (PL972): a narrowed run
    pairs the columns as it pairs whole traces, so the other workload is a partner either way.
    """
    source = view_facts if view_facts is not None else (integrity if isinstance(integrity, dict) else {})
    parts = source.get("part_sketches") if hasattr(source, "get") else None
    return [(s, None) for s in parts if isinstance(s, list) and s] if isinstance(parts, list) else []


def copy_partners(
    model: Model,
    only: Needed,
    mine: Iterable[str],
    facts: dict[str, Any],
    prepared: Prepared | None,
    index: Index | None,
    options: Any,
    now: dt.datetime,
    judged: Iterable[str] | None = None,
) -> set[str]:
    """Workloads not judged by the near-copy rules that may be a near copy of one of ``mine`` (measured, in ``facts``), or its original.

    ``judged`` names the workloads the run already judges by those rules (the changed ones and
    their pools' neighbours); None: every workload of ``only``. A workload measured for another
    reason (a pool of the changed cluster) but judged by no near-copy rule is a partner like one
    outside ``only``: the red team of 2026-12-06 copied a trace into the next pool of the same
    cluster, and the finding, due on the unchanged original, was in no narrowed run.
    """
    from policylint.calc.runs import shared_run_pairs
    from policylint.engine.repo_index import lite_view_of, usable

    names: list[str] = []
    prints: list[tuple[Any, str | None]] = []
    for name in sorted(set(mine)):
        got = facts.get(name)
        if got is None:
            continue
        view = prepared.views.get(name) if prepared is not None else None
        found = _prints(getattr(got, "integrity", None), view.facts if view is not None else None)
        for entry in [found, *_part_prints(getattr(got, "integrity", None), view.facts if view is not None else None)]:
            if entry != (None, None):
                names.append(name)
                prints.append(entry)
    if not names:
        return set()
    own = len(names)
    seen = set(only.workloads if judged is None else judged) | set(names)
    others = sorted(n for n in model.workloads if n not in seen)
    unknown: list[str] = []
    pools_seen: dict[str, str] = {}
    for name in others:
        got = facts.get(name)
        if got is not None:
            # measured by this run already (a pool of the changed cluster): its prints as the judged ones'
            view = prepared.views.get(name) if prepared is not None else None
            facts_of_view = view.facts if view is not None else None
            found = _prints(getattr(got, "integrity", None), facts_of_view)
            for entry in [found, *_part_prints(getattr(got, "integrity", None), facts_of_view)]:
                if entry != (None, None):
                    names.append(name)
                    prints.append(entry)
            continue
        w = model.workloads[name]
        rec = index.get(name) if index is not None else None
        lite = lite_view_of(rec, w, now) if rec is not None and usable(rec, w, pools_seen) else None
        if lite is None:
            unknown.append(name)
            continue
        view, sketch = lite
        names.append(name)
        prints.append(_prints({"run_sketch": sketch}, view.facts))
        for entry in _part_prints(None, view.facts):
            names.append(name)
            prints.append(entry)
    for name, printed in _read_prints(model, unknown, options):
        names.append(name)
        prints.append(_prints(printed))
        for entry in _part_prints(printed):
            names.append(name)
            prints.append(entry)
    partners: set[str] = set()
    for a, b in shared_run_pairs([s for s, _ in prints]):
        if (a < own) != (b < own):
            partners.add(names[b] if a < own else names[a])
    by_values: dict[str, list[int]] = {}
    for i, (_, values) in enumerate(prints):
        if values:
            by_values.setdefault(values, []).append(i)
    for members in by_values.values():
        if any(i < own for i in members):
            partners.update(names[i] for i in members if i >= own)
    return partners


def jobs_partners(
    model: Model,
    only: Needed,
    judged: Iterable[str],
    facts: dict[str, Any],
    prepared: Prepared | None,
    index: Index | None,
    options: Any,
    now: dt.datetime,
) -> set[str]:
    """Workloads outside ``judged`` whose job durations are the same jobs as one of ``judged``'s (PL984).

    PL984 groups job lists across the whole repository
    (:func:`policylint.engine.pooled_facts.durations_shared`), so a narrowed run that judges a
    workload must also hold every workload, in any pool, whose ``jobs_fingerprint`` equals its:
    without them the borrowed list is not seen, and the finding due on the lender - whose
    file did not change - is not made. ``judged`` are the workloads the run judges by PL984
    (the changed ones and their pools' neighbours). A partner's print comes from this run's
    facts when it measured the workload, else from its repository index record, else from one
    read of its job list alone (:func:`_read_jobs_print`): its concurrency is not measured.
    Every workload of a group is a partner, so each partner's own group is whole too.
    """
    from policylint.engine.repo_index import lite_view_of, usable

    def measured_print(name: str) -> str | None:
        got = facts.get(name)
        view = prepared.views.get(name) if prepared is not None else None
        if view is not None:
            printed = view.facts.get("jobs_fingerprint")
        else:
            integrity = getattr(got, "integrity", None)
            printed = integrity.get("jobs_fingerprint") if isinstance(integrity, dict) else None
        return str(printed) if printed else None

    wanted: set[str] = set()
    seen = set(judged)
    for name in sorted(seen):
        if facts.get(name) is not None and (printed := measured_print(name)) is not None:
            wanted.add(printed)
    if not wanted:
        return set()
    partners: set[str] = set()
    pools_seen: dict[str, str] = {}
    for name in sorted(model.workloads):
        if name in seen:
            continue
        w = model.workloads[name]
        durations = w.measurements.get("durations")
        if durations is None or durations.path is None:
            continue  # no job list: nothing to share
        if facts.get(name) is not None:
            printed = measured_print(name)
        else:
            rec = index.get(name) if index is not None else None
            lite = lite_view_of(rec, w, now) if rec is not None and usable(rec, w, pools_seen) else None
            if lite is not None:
                got = lite[0].facts.get("jobs_fingerprint")
                printed = str(got) if got else None
            else:
                printed = _read_jobs_print(w, options)
        if printed in wanted:
            partners.add(name)
    return partners


def _read_jobs_print(w: Workload, options: Any) -> str | None:
    """The ``jobs_fingerprint`` of ``w``'s job list, read for it alone; None when it does not read (its own run says why)."""
    from policylint import traces
    from policylint.errors import PolicylintError
    from policylint.measure.reading import reader_arguments
    from policylint.measure.workload import jobs_fingerprint

    ref = w.measurements["durations"]
    assert ref.path is not None
    try:
        jobs = traces.read_jobs(ref.path, **reader_arguments(ref, options.trace_limits, "jobs"))
    except PolicylintError:
        return None
    return jobs_fingerprint(jobs.durations, jobs.gpus)


def partner_skips(ruleset: RuleSet, facts: frozenset[str]) -> frozenset[str]:
    """Codes of every rule but the workload rules known to read one of ``facts``: not judged on a partner found by them."""
    from policylint.engine.reads import facts_read

    keep = set()
    for rule in ruleset.rules.values():
        if rule.builtin or rule.subject != "workload":
            continue
        reads = facts_read(rule)
        if reads is not None and reads & facts:
            keep.add(rule.code)
    return frozenset(code for code in ruleset.rules if code not in keep)


def with_partners(model: Model, only: Needed, partners: Iterable[str]) -> Needed:
    """``only`` with the workloads ``partners`` measured and viewed, their pools without their pooled demand.

    A partner is judged by the near-copy rules alone (:func:`copy_skips`), which read of its
    pool only which members repeat one another and the shares they declare
    (:func:`policylint.engine.pooled_facts.identity_facts`): its pool's members are measured
    for that, and the pool's demand is not (``Needed.copied``), unless the run needs it anyway.
    """
    from dataclasses import replace

    workloads = set(only.workloads)
    copied: set[str] = set(only.copied)
    for name in partners:
        w = model.workloads[name]
        workloads.add(name)
        if w.pool is not None and w.pool.qualified not in only.pools:
            copied.add(w.pool.qualified)
            workloads.update(m.name for m in w.pool.workloads)
    return replace(only, workloads=frozenset(workloads), copied=frozenset(copied))


def copy_skips(ruleset: RuleSet) -> frozenset[str]:
    """Codes of every rule but the workload rules known to read a near-copy fact: not judged on a partner.

    A partner's view lacks its pool's demand, so a rule whose reads cannot be told is not
    run on it either, and its measuring findings (the built-in codes) are its own run's.
    """
    return partner_skips(ruleset, NEAR_COPY_FACTS)


def _read_prints(model: Model, names: list[str], options: Any) -> Iterable[tuple[str, dict[str, Any]]]:
    """(name, its trace's copy prints) of the workloads ``names`` whose concurrency trace reads.

    Only what recognises a copy is computed (:func:`policylint.measure.integrity.workload.copy_prints`),
    not the trace's bands: one read per trace, or none when the cache keeps its prints
    (:func:`policylint.measure.kept_reads.read_prints`). A trace that does not read has no
    prints here; the run that measures it reports why.
    """
    from policylint.errors import PolicylintError
    from policylint.measure.kept_reads import read_prints

    for name in names:
        ref = model.workloads[name].measurements.get("concurrency")
        if ref is None or ref.path is None:
            continue
        try:
            printed = read_prints(ref, options.trace_limits, options.cache_dir)
        except PolicylintError:
            continue
        yield name, printed


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
