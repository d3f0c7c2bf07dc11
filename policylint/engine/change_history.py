"""What a ``--diff`` run knows of the base revision: the pools then, where each workload ran, the demand then.

:func:`history_for` gathers it for the view builder (:class:`policylint.engine.view.History`);
the git and base-revision reading lives in :mod:`policylint.engine.history`.
:func:`baselines_at_base` measures a pool's pooled baseline as the base revision's own files
give it, with the same readers, calculator and pooling as today's run, so that PL950 can ask
whether new measurements back a raise, not only whether some measurement changed.
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from policylint.engine.cohort_quota import CohortState
    from policylint.engine.base_traces import Remap
    from policylint.engine.history import Change, PoolThen
    from policylint.engine.view import History
    from policylint.model import Model, Pool, Workload

#: loads and resolves the repository at a folder as the run does (the linter's own, handed in)
LoadBase = Callable[[Path], "Model | None"]


def history_for(options: Any, model: Model, now: dt.datetime, load_base: LoadBase,
                facts: Mapping[str, Any] | None = None) -> History | None:
    """The ``--diff`` history of ``model`` (None without ``--diff``); ``options`` are the run's
    :class:`~policylint.engine.linter.LintOptions`, ``load_base`` loads the base revision's files, ``facts``
    are today's measured facts by workload (their samples' prints recognise a workload renamed beside a trace
    written anew)."""
    from policylint.engine.history import measured_on, pools_at_base, renamed_pools, same_traces
    from policylint.engine.view import History

    change = options.change
    if change is None:
        return None
    then, by_name = pools_at_base(change, model, options.limits, options.gpu_resources)
    measured = measured_on(change, model, then, by_name, options.limits)
    # a newcomer holding demand carved out of a member that stayed, at a conversion to more GPUs, is that member's
    # demand, measured on the pool it ran in; in a pool of its own, that pool is judged with the member's (round 8,
    # 2026-12-07: half of chat-assistant's samples in a new cluster at 5 per GPU where chat runs 14, 53 -> 72)
    from policylint.engine.split_members import carved_out, carved_note

    carved = carved_out(change, model, measured, options.trace_limits)
    for name, member in carved.items():
        measured[name] = measured[member.name]
    then = renamed_pools(model, then, measured)
    for name, member in carved.items():
        # ... also a new pool that holds new workloads beside it: what it owns is judged with the member's pool
        pool = model.workloads[name].pool
        if pool is not None and pool.qualified not in then:
            then[pool.qualified] = measured[member.name]
    before = {q: p.reserved_gpus for q, p in then.items() if p.reserved_gpus is not None}
    change.reserved_before = before
    changed = frozenset(os.path.realpath(p) for p in change.files)
    # PL950's candidates: pools that own more than at the base; of their changed measurements,
    # those that read as they did then are no new evidence
    # a pool split into several in the change (into another cluster too: PL988 pairs pools of one cluster only) is
    # judged whole, by the one that keeps its name or else owns the most (red team, 2026-12-06, round 16: +95)
    groups: dict[int, list[Any]] = {}
    for p in model.pools:
        if p.qualified in then:
            groups.setdefault(id(then[p.qualified]), []).append(p)
    # what each pool will own once its proposals are delivered: GPUs asked for are GPUs bought, and a raise
    # written as a proposal is judged as one written as reserved GPUs (red team, 2026-12-06, round 13)
    proposed, _ = model.proposed_gpus()
    # quota a Kueue pool gave up in the change while its Cohort tree's own quota grew as much is still the pool's
    # (red team rounds 10 and 11, 2026-12-07: 19 moved into the Cohort, then proposed again, passed every gate)
    moved = moved_into_cohorts(model, then, change.cohorts_before)
    # a pool found nowhere at the base because its file's base cannot be read is reported, not passed (round 16)
    unreadable = {q: why for q, why in change.unreadable.items() if q not in then}
    # a buffer is GPUs bought and kept free on purpose: raised, it is capacity bought (red team round 21, 2026-12-07:
    # preemption switched off and 64 buffer GPUs added beside short jobs written into the job list to make a tail)
    planned = {p.qualified: (p.owned_gpus + p.buffer_gpus + moved.get(p.qualified, (0, ""))[0], proposed.get(p.qualified, 0))
               for p in model.pools if p.qualified in then or p.qualified in unreadable}
    split_owned: dict[str, tuple[int, list[str]]] = {}
    for members in groups.values():
        if len(members) > 1:
            base = then[members[0].qualified]
            head = max(members, key=lambda p: (p.key == base.key, p.owned_gpus, p.qualified))
            split_owned[head.qualified] = (sum(planned[p.qualified][0] for p in members),
                                           sorted(p.qualified for p in members if p is not head))
            planned[head.qualified] = (split_owned[head.qualified][0], sum(planned[p.qualified][1] for p in members))
    grown = [p for p in model.pools if p.qualified in then
             and sum(planned[p.qualified]) > then[p.qualified].owned_and_proposed_gpus]

    def cited(pool: object) -> set[str]:
        return {os.path.realpath(m.path) for w in pool.workloads for m in w.measurements.values()  # type: ignore[attr-defined]
                if m.path is not None}

    traces = {t for p in grown for t in cited(p)} & changed
    rearranged: set[str] = set()  # changed traces holding the base's samples moved in time: no evidence at all
    evidence = changed - same_traces(change, model, options.trace_limits, traces, rearranged)
    # of those, the pools whose evidence did change: is the raise backed by the demand it measures?
    backed = {p.qualified: then[p.qualified] for p in grown if cited(p) & evidence}
    # the workloads each pool took in from another pool of the base: they bring the baseline the base gave them,
    # not one today's declarations give (a per-GPU figure cut with the move asked for the difference)
    arrived = {w.name: (measured[w.name], w) for p in model.pools if p.qualified in then for w in p.workloads
               if w.name in measured and measured[w.name] is not then[p.qualified]}
    prints = {name: _prints(f) for name, f in (facts or {}).items()}
    baselines, brought, departed, recognised = (
        baselines_at_base(change, backed, model, options, now, load_base, arrived, prints)
        if backed or arrived else ({}, {}, {}, {}))
    for name, q in recognised.items():
        measured[name] = backed[q]  # renamed beside its trace written anew: measured on the pool it ran in
    # carved into a pool that ran other workloads at the base, it brings no demand there: the member's pool carried it
    brought = {**brought, **{name: 0 for name in carved if name in arrived}}
    return History(reserved_before=before, changed_files=evidence, pools_then=then, measured_on=measured,
                   baseline_before=baselines, arrived_baseline=brought, split_owned=split_owned, planned=planned,
                   departed_baseline=departed, moved_to_cohort=moved, rearranged=frozenset(rearranged),
                   carved=carved_note(model, carved), unreadable=unreadable)


def moved_into_cohorts(model: Model, then: Mapping[str, PoolThen], before: CohortState | None
                       ) -> dict[str, tuple[int, str]]:
    """GPUs of nominal quota each Kueue pool gave up since the base while the Cohorts' own quota of its GPU model
    grew, and the Cohort it borrows from today (today's pool name -> (GPUs, Cohort)).

    A Cohort's own quota is capacity every queue of its tree may borrow, rented or bought: ``check`` cannot
    count it as one pool's. A change can see it move: a pool's quota lowered and the Cohorts' raised is the
    same capacity, still the pool's when PL950 compares what it owns with the base. The Cohorts are compared
    by GPU model over the repository (``before``: :func:`policylint.engine.cohort_quota.cohort_state` at the
    base), not by name: a Cohort or flavor renamed, or the pool moved to another Cohort tree, in the same
    change moves the same GPUs (red team round 12, 2026-12-07). Growth that the other queues of that model
    claim by borrowing more (:func:`policylint.engine.cohort_quota.borrowable`) is theirs (round 13: batch's
    daily band grew, the Cohort with it, while training gave back leased quota); the rest goes to the pools
    that gave up quota, in name order, each at most what it gave up.
    """
    from policylint.engine.cohort_quota import cohort_state, gpu_kind
    from policylint.model import schedulers

    if before is None:
        return {}
    now = cohort_state(schedulers.all_pools(model))
    room = {kind: quota - before.quota.get(kind, 0) for kind, quota in now.quota.items()}
    claims: dict[str, tuple[str | None, int]] = {}  # pool -> (GPU model, borrowingLimit it added since the base)
    for pool in model.pools:
        if pool.key in now.borrowing:
            was = before.borrowing.get(then[pool.qualified].key, 0) if pool.qualified in then else 0
            claims[pool.qualified] = (gpu_kind(pool), max(0, now.borrowing[pool.key] - was))
    out: dict[str, tuple[int, str]] = {}
    given: dict[str | None, int] = {}
    for pool in sorted(model.pools, key=lambda p: p.qualified):
        was_then = then.get(pool.qualified)
        if was_then is None or pool.qualified not in claims:
            continue
        kind = claims[pool.qualified][0]
        others = sum(claim for q, (k, claim) in claims.items() if k == kind and q != pool.qualified)
        free = room.get(kind, 0) - others - given.get(kind, 0)
        gave = was_then.owned_gpus - pool.owned_gpus
        if free > 0 and gave > 0:
            out[pool.qualified] = (min(gave, free), str((pool.scheduler or {}).get("cohort")))
            given[kind] = given.get(kind, 0) + out[pool.qualified][0]
    return out


def baselines_at_base(change: Change, wanted: dict[str, PoolThen], model: Model, options: Any, now: dt.datetime,
                      load_base: LoadBase, arrived: dict[str, tuple[PoolThen, Workload]] | None = None,
                      prints: dict[str, Prints] | None = None,
                      ) -> tuple[dict[str, tuple[int | None, int | None]], dict[str, int], dict[str, int | None], dict[str, str]]:
    """Two pooled baselines, in GPUs, for each pool of ``wanted`` (today's name -> the pool at the base); the
    baseline, in GPUs, of each workload of ``arrived`` (today's name -> the pool it ran in at the base, and today's
    workload) as the base declared it; and for each pool of ``wanted``, the baselines of the members it held at the
    base that no workload of it is today, and today's workloads recognised there by their samples (see
    :func:`_pooled_at_base`).

    The first is the pool at the base as the base declared it: the base revision's policylint
    documents under the repository's folder, and the measurements its workloads cite there.
    The second reads the same measurement files of the base with today's declarations (today's
    documents of the pool, its cluster and its workloads): the demand the base's evidence gives
    under the per-GPU figures, shares and columns declared now, so that today's baseline over
    it measures what the evidence changed and nothing the declarations did (red team,
    2026-12-06, round 12: per-GPU figures cut 2.7 times beside one edited sample "backed" +90).
    Files are written to scratch folders through the one writer, loaded by the run's own
    loader, measured and pooled by the same functions as today's
    (:func:`policylint.measure.run.measure`, :func:`policylint.measure.pools.measure_pool`).
    A baseline the base does not give whole (a file missing or unreadable there, a workload
    unmeasured) is None, and PL950 then judges only whether the evidence changed.

    A workload of ``arrived`` is measured in the first reading, found in the pool it ran in by its
    name, else by the concurrency trace it cites, else as the one workload of its file then (as
    :func:`policylint.engine.history.measured_on` placed it); one not found or not measured there
    has no entry.
    """
    import tempfile

    from policylint.errors import MeasurementError, PolicylintError

    top, commit = change.top, change.commit
    arrived = arrived or {}
    if top is None or commit is None or not (wanted or arrived):
        return {}, {}, {}, {}
    folder = Path(os.path.realpath(top))
    home = Path(os.path.realpath(options.repository or options.root))
    try:
        rel = home.relative_to(folder)
    except ValueError:
        return {}, {}, {}, {}
    sha = commit.hexsha
    out: dict[str, list[int | None]] = {q: [None, None] for q in wanted}
    brought: dict[str, int] = {}
    departed: dict[str, int | None] = {}
    recognised: dict[str, str] = {}
    try:
        from policylint.engine.base_files import tree_at, write_blobs
        from policylint.model.load.files import SKIPPED_FOLDERS, is_json_name, is_yaml_name
    
        with tempfile.TemporaryDirectory(prefix="policylint-base-") as scratch:
            names = [n for n in tree_at(folder, sha, rel)
                     if (is_yaml_name(n) or is_json_name(n)) and not (set(Path(n).parts[:-1]) & SKIPPED_FOLDERS)]
            write_blobs(folder, sha, names, Path(scratch), options.limits.max_file_bytes)
            staying = {p.qualified: list(p.workloads) for p in model.pools if p.qualified in wanted}
            at_base: dict[str, dict[str, str]] = {}  # what each workload of the base cited, by name and role
            pooled, brought, departed, recognised = _pooled_at_base(
                folder, sha, Path(scratch), rel, {q: t.key for q, t in wanted.items()}, options, now, load_base,
                {n: (t.key, w) for n, (t, w) in arrived.items()}, staying, change.renamed, prints, at_base)
            for q, gpus in pooled.items():
                out[q][0] = gpus
        if not wanted:
            return {}, brought, departed, recognised
        with tempfile.TemporaryDirectory(prefix="policylint-base-") as scratch:
            from policylint.writer import write_file

            today = {q: p for p in model.pools if (q := p.qualified) in wanted}
            from policylint.model import schedulers

            # the pools' own documents, their clusters', their workloads' and every scheduler manifest (a
            # Kueue pool needs its flavors, cohorts and local queues to be one)
            docs = {d.source.path for p in today.values()
                    for d in (p.doc, p.cluster.doc, *(w.doc for w in p.workloads))}
            docs |= {d.source.path for d in schedulers.documents(model)}
            for path in sorted(docs, key=str):
                relative = Path(os.path.realpath(path)).relative_to(folder)
                write_file(Path(scratch) / relative, Path(path).read_bytes(), root=None, explicit=True, parents=True,
                           durable=False, mode=0o600, what="a document beside the base revision's measurements")
            keys = {q: p.key for q, p in today.items()}
            # each workload reads the base file its own base placement cited, not what the base held at today's
            # path (red team round 22, 2026-12-07: two traces swapped, contents and citing paths, backed +19)
            from policylint.engine.base_traces import remap_to_base

            remap = remap_to_base((w for p in today.values() for w in p.workloads), folder, at_base)
            for q, gpus in _pooled_at_base(folder, sha, Path(scratch), rel, keys, options, now, load_base,
                                           remap=remap)[0].items():
                out[q][1] = gpus
    except (OSError, ValueError, PolicylintError, MeasurementError, subprocess.SubprocessError):
        return {}, brought, departed, recognised  # what the first reading measured whole stands
    return {q: (b[0], b[1]) for q, b in out.items()}, brought, departed, recognised


def _pooled_at_base(folder: Path, sha: str, scratch: Path, rel: Path, wanted: dict[str, tuple[str, str, str]],
                    options: Any, now: dt.datetime, load_base: LoadBase,
                    arrived: dict[str, tuple[tuple[str, str, str], Workload]] | None = None,
                    staying: dict[str, list[Workload]] | None = None, renamed: dict[str, str] | None = None,
                    prints: dict[str, Prints] | None = None, at_base: dict[str, dict[str, str]] | None = None,
                    remap: Remap | None = None,
                    ) -> tuple[dict[str, int], dict[str, int], dict[str, int | None], dict[str, str]]:
    """The pooled baseline of each pool ``wanted`` names (by its key) in the documents at ``scratch``, over the
    measurement files the base revision holds for what its workloads cite; the baseline of each workload
    ``arrived`` names (today's name -> the key of the pool it ran in there, and today's workload), found there;
    and, for each pool ``staying`` names (today's name -> its workloads today), the summed baselines of the
    members it held there that none of those workloads is (:func:`_found_at_base`): deleted, moved to another
    pool, or renamed with its trace moved - which today's pool counts as a newcomer (None: one of them is not
    measured whole there); and the newcomers of those pools (today's name -> the pool's name) whose samples a
    member that left holds (``prints``: today's, by workload), which are that member renamed. ``at_base`` is
    filled with the paths each workload of the documents cites (name -> role -> path); a path of ``remap``
    (:func:`policylint.engine.base_traces.remap_to_base`) is written with the base file it maps to.

    A newcomer's baseline backs a pool's growth: demand it did not carry at the base. A member that left
    takes its demand with it, or the same demand is counted twice (red team, 2026-12-07: fine-tuning renamed
    and its trace moved in one commit was a newcomer beside the base's fine-tuning, and backed training
    392 -> 450 past ``--diff``)."""
    from policylint.engine.base_files import write_blobs
    from policylint.engine.base_traces import cited_by_role, write_remapped
    from policylint.measure.pools import measure_pool
    from policylint.measure.run import measure
    from policylint.model import schedulers
    from policylint.model.needed import Needed

    base_home = scratch / rel
    base_home.mkdir(parents=True, exist_ok=True)

    arrived = arrived or {}
    came_from = {key for key, _ in arrived.values()}

    def load() -> tuple[Model | None, dict[str, Pool], dict[tuple[str, str, str], Pool]]:
        base = load_base(base_home)
        if base is None:
            return None, {}, {}
        pools = {p.key: p for p in [*base.pools, *schedulers.all_pools(base)]}
        return (base, {q: pools[key] for q, key in wanted.items() if key in pools},
                {key: pools[key] for key in came_from if key in pools})

    # the documents first, for the files the wanted pools' workloads cite; then again with those files
    _, found, left = load()
    cited: set[str] = set()
    for pool in [*found.values(), *left.values()]:
        for w in pool.workloads:
            cited |= _paths_cited(w.doc.data, Path(os.path.realpath(w.doc.source.path)).parent, scratch)
    cap = options.trace_limits.max_file_bytes if options.trace_limits is not None else None
    remap = remap or {}
    write_blobs(folder, sha, sorted(cited - remap.keys()), scratch, cap)
    write_remapped(folder, sha, {p: b for p, b in remap.items() if p in cited}, scratch, cap)
    base, found, left = load()
    if base is None:
        return {}, {}, {}, {}
    if at_base is not None:
        at_base.update({n: cited_by_role(w, scratch) for n, w in base.workloads.items()})
    members = {w.name: w for p in [*found.values(), *left.values()] for w in p.workloads}
    only = Needed(workloads=frozenset(members), pools=frozenset(p.qualified for p in found.values()),
                  clusters=frozenset(), proposals=frozenset())
    facts, _ = measure(base, now, limits=options.trace_limits, only=only)
    out: dict[str, int] = {}
    for q, pool in sorted(found.items()):
        report = measure_pool(pool, facts).report
        if report is not None and report.baseline is not None:
            out[q] = int(report.baseline)  # pooled bands are whole GPU counts (as pooled_pool_facts reads them)
    from policylint.engine.workload_view import baseline_gpus

    brought: dict[str, int] = {}
    for name, (key, w) in sorted(arrived.items()):
        then = (_found_at_base(w, left[key].workloads, list(base.workloads.values()), folder, scratch, renamed)
                if key in left else None)
        gpus = baseline_gpus(then, facts[then.name]) if then is not None and then.name in facts else None
        if gpus is not None:
            brought[name] = gpus
    departed: dict[str, int | None] = {}
    recognised: dict[str, str] = {}
    everyone = list(base.workloads.values())
    for q, pool in sorted(found.items()):
        if staying is None or q not in staying:
            continue
        found_then = {w.name: _found_at_base(w, pool.workloads, everyone, folder, scratch, renamed) for w in staying[q]}
        stayed = {id(then) for then in found_then.values() if then is not None}
        # a member that left, whose samples a newcomer holds (its trace written anew: ISO times for epoch seconds,
        # a few samples edited), is that newcomer renamed (fourth red team, 2026-12-07: git paired no rename and
        # the newcomer's halved per-GPU figure read as new demand)
        if prints is not None:
            for x in pool.workloads:
                if id(x) in stayed or x.name not in facts:
                    continue
                was = _prints(facts[x.name])
                twin = next((n for n, then in sorted(found_then.items())
                             if then is None and n not in recognised and _same_samples(prints.get(n), was)), None)
                if twin is not None:
                    recognised[twin] = q
                    stayed.add(id(x))
            # a member that left, split into newcomers that each hold part of every sample, is those newcomers
            # (sixth red team, 2026-12-07: halved per-GPU figures on the halves read as new demand)
            from policylint.engine.split_members import converts_to_more, split_members

            fresh = {w.name: w for w in staying[q] if found_then[w.name] is None and w.name not in recognised}
            # only a split that converts to more GPUs is recognised: no trace is read for a member no newcomer could
            # be such a part of (a rename, a split that keeps the figures, unrelated arrivals)
            gone = [x for x in pool.workloads if id(x) not in stayed and converts_to_more(x, list(fresh.values()))]
            for x, parts in split_members(gone, fresh, options.trace_limits):
                if converts_to_more(x, [fresh[n] for n in parts]):
                    recognised.update(dict.fromkeys(parts, q))
                    stayed.add(id(x))
        left_gpus = [baseline_gpus(x, facts[x.name]) if x.name in facts else None
                     for x in pool.workloads if id(x) not in stayed]
        departed[q] = None if any(g is None for g in left_gpus) else sum(g for g in left_gpus if g is not None)
    return out, brought, departed, recognised


#: (samples print, run sketch) of a workload's concurrency trace, from its measured facts
Prints = tuple[str | None, Any]


def _prints(measured: Any) -> Prints:
    integrity = getattr(measured, "integrity", None) or {}
    return integrity.get("samples_fingerprint"), integrity.get("run_sketch")


def _same_samples(a: Prints | None, b: Prints) -> bool:
    """Whether two traces hold the same samples: an equal print, or run sketches as alike as PL972 calls a copy."""
    from policylint.calc.runs import sketch_similarity, sketch_values

    if a is None:
        return False
    if a[0] is not None and a[0] == b[0]:
        return True
    if a[1] is None or b[1] is None:
        return False
    return sketch_similarity(sketch_values(a[1]), sketch_values(b[1])) > 0.5


def _found_at_base(w: Workload, ran_with: list[Workload], everyone: list[Workload], folder: Path,
                   scratch: Path, renamed: dict[str, str] | None = None) -> Workload | None:
    """``w`` among the workloads of the pool it ran in at the base (``ran_with``, of ``everyone`` the base held,
    loaded from ``scratch``): by its name, else by the concurrency trace it cites (or the one git's rename
    detection says it was moved from: ``renamed``, real paths today -> then), else as the one workload its
    file held."""
    def where(path: Path | None, top: Path) -> str | None:
        try:
            return Path(os.path.realpath(path)).relative_to(top).as_posix() if path is not None else None
        except ValueError:
            return None

    def trace(x: Workload, top: Path) -> str | None:
        ref = x.measurements.get("concurrency")
        return where(ref.path, top) if ref is not None else None

    top = Path(os.path.realpath(scratch))
    by_name = [x for x in ran_with if x.name == w.name]
    mine = trace(w, folder)
    ref = w.measurements.get("concurrency")
    moved = (renamed or {}).get(os.path.realpath(ref.path)) if ref is not None and ref.path is not None else None
    was = where(Path(moved), folder) if moved is not None else None
    by_trace = [x for x in ran_with if (cited := trace(x, top)) is not None and cited in (mine, was)]
    by_file = [x for x in everyone if where(x.doc.source.path, top) == where(w.doc.source.path, folder)]
    by_file = [x for x in by_file if len(by_file) == 1 and any(x is y for y in ran_with)]
    for found in (by_name, by_trace, by_file):
        if len(found) == 1:
            return found[0]
    return None


def _paths_cited(data: object, declared_in: Path, scratch: Path) -> set[str]:
    """Every ``path`` a document's ``spec`` gives (its measurements and evidence), relative to ``scratch``."""
    out: set[str] = set()
    stack = [data.get("spec")] if isinstance(data, dict) else []
    top = Path(os.path.realpath(scratch))
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                if key == "path" and isinstance(value, str) and not os.path.isabs(value):
                    try:
                        out.add(Path(os.path.normpath(declared_in / value)).relative_to(top).as_posix())
                    except ValueError:
                        pass  # outside the repository: refused when read, as today
                else:
                    stack.append(value)
        elif isinstance(item, list):
            stack.extend(item)
    return out
