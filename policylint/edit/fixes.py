"""``check --fix``: which numbers to rewrite for a run's findings, and rewriting them.

A fix is planned only for a finding the run reported (so a suppressed or
baselined finding is left alone), from the facts its rule judged, and only for
a rule whose rule file declares one (``fix:``, read through
:func:`policylint.catalogue.fixes`); what each fix computes is in
:mod:`policylint.edit.rewrites`, the planned change itself is a
:class:`~policylint.edit.fix.Fix`.

Fixes converge: ``check --fix --unsafe-fixes`` followed by ``check`` reports none
of the sizing findings it fixed and no new one (tests/test_fix_converges.py).

Before writing, each file is read again and a fix is refused (a note naming the
file and key; the file untouched) when the file changed since the lint, when
the span no longer holds the old number, or when a key on its path is written
twice (the dead first occurrence would be edited). The file is written through
:func:`policylint.writer.write_file`, which also refuses it when it changed
between that read and the write.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from policylint.catalogue import fixes
from policylint.edit.fix import Fix, FixOutcome
from policylint.edit.rewrites import buffer_fix, capacity_fix, request_fixes, reservation_fix
from policylint.edit.scalars import ScalarEdit, apply_edits, unified_diff
from policylint.engine.evaluate import require_figures

if TYPE_CHECKING:
    from policylint.finding import Finding, FindingKey
    from policylint.engine.linter import LintOptions
    from policylint.engine.rule import RuleSet
    from policylint.engine.result import LintResult
    from policylint.engine.view import View


def _views(result: LintResult, options: LintOptions) -> list[View]:
    """The views the run judged; measured again only for a result that kept none."""
    if result.views:
        return result.views
    from policylint.measure.pools import measure_pools
    from policylint.measure.run import measure
    from policylint.engine.views import build_views

    assert result.model is not None
    now = options.now or dt.datetime.now(dt.timezone.utc)
    facts, _ = measure(result.model, now, limits=options.trace_limits)
    return build_views(result.model, facts, now, None, measure_pools(result.model, facts))



#: the conditions of a rule's ``require`` that cap a fact from above (see :func:`_capacity_ceiling`)
_UPPER_BOUNDS = frozenset({"max_over", "max_field", "max"})


def _capacity_ceiling(view: View, ruleset: RuleSet | None, selected: Iterable[str] | None = None) -> float | None:
    """The most GPUs of capacity the pool's rules accept, or None: the lowest upper bound on ``capacity_gpus``.

    Each bound is the one the rule's ``require`` tests (:func:`~policylint.engine.evaluate.require_figures`:
    PL102's daily band plus its headroom, PL201's sustained maximum plus its headroom), with the
    run's parameters; ``selected`` are the rules that run (None: all).
    """
    if ruleset is None:
        return None
    chosen = set(ruleset.rules) if selected is None else set(selected)
    bounds = []
    for rule in ruleset.sorted():
        condition = rule.require.get("capacity_gpus")
        if rule.code not in chosen or rule.subject != "pool" or not isinstance(condition, dict):
            continue
        if not condition or set(condition) - _UPPER_BOUNDS:
            continue
        figures = require_figures(rule, "capacity_gpus", view.facts, ruleset.params.get(rule.code, {}))
        if figures is not None:
            bounds.append(figures[1])
    return min(bounds, default=None)


def plan(result: LintResult, options: LintOptions) -> tuple[list[Fix], list[str]]:
    """Fixes for the reported findings of fixable rules, plus notes on those that have none.

    Fixes of one pool are planned together, so that the plan they leave passes the
    rules that asked for them instead of trading one finding for another:

    - the requests of a pool's proposals that PL801 reports are what may still change
      there; every other request stays as written;
    - the reservation (PL101, PL104) is the pooled baseline minus what the proposals
      that stay as written ask - the same ``proposed_gpus`` PL104 adds to the
      reservation. Owned GPUs are kept before GPUs still to be bought: a reservation
      above the baseline is lowered to the baseline, never below it to make room for a
      reported request (a request cannot ask for 0; one the pool no longer needs is left
      for the user to withdraw, with a note);
    - capacity follows: with PL102 reported, reserved + elastic := the pooled daily
      band; otherwise a changed reservation keeps reserved + elastic where it was, the
      elastic part taking up the difference (lowering capacity could start PL203 or
      PL205; raising it, PL102 or PL201). A pool with no elastic number to write
      keeps its reservation when lowering it would leave less than min(capacity, daily band);
    - the reported requests then share what remains of the shortfall.

    Fixes of one pool carry one ``group``: without ``--unsafe-fixes`` an unsafe fix
    withholds its whole group, so a reservation never moves without its capacity.
    """
    declared = fixes()  # lowest order first
    wanted = [f for f in result.findings if f.code in declared]
    if not wanted or result.model is None:
        return [], []
    refusal = incomplete_model(result)
    if refusal is not None:
        return [], [refusal]
    all_views = _views(result, options)
    views = {(v.doc.file, v.doc.index, v.label): v for v in all_views}
    pool_views = {str(v.facts.get("qualified")): v for v in all_views if v.subject == "pool"}
    pools = {p.qualified: p for p in result.model.pools}
    planned: list[Fix] = []
    notes: list[str] = []

    def where(finding: Finding) -> str:
        return f"{finding.file}:{finding.line}:{finding.column}: {finding.code}"

    def rewrites(finding: Finding) -> str:
        return declared[finding.code].rewrites

    def first(found: dict[str, Finding], number: str) -> Finding | None:
        """Of one pool's findings whose fixes rewrite ``number``, the one of the lowest declared order."""
        return next((found[code] for code, d in declared.items() if d.rewrites == number and code in found), None)

    # The requests reported (PL801), per pool: the part of the proposals a fix may lower.
    asks: dict[str, list[tuple[Finding, View, int, int]]] = {}
    for finding in sorted((f for f in wanted if rewrites(f) == "requests"), key=lambda f: f.sort_key()):
        view = views.get((finding.file, finding.doc_index, finding.subject))
        parts = finding.doc_path.split("/")
        if view is None or len(parts) != 4 or not parts[2].isdigit():
            notes.append(f"{where(finding)}: no fix (request not found)")
            continue
        index = int(parts[2])
        req = view.facts["requests"][index]
        asks.setdefault(f"{view.facts['cluster']}/{req['pool']}", []).append((finding, view, index, int(req["gpus"])))

    # A buffer above the largest long-tail job (PL603): its own number, whatever the pool's bands
    for finding in sorted((f for f in wanted if rewrites(f) == "buffer"), key=lambda f: f.sort_key()):
        view = views.get((finding.file, finding.doc_index, finding.subject))
        pool = pools.get(str(view.facts["qualified"])) if view is not None else None
        if view is None or pool is None:
            notes.append(f"{where(finding)}: no fix (subject not found)")
            continue
        buffer, note = buffer_fix(finding.code, pool, view)
        if buffer is None:
            notes.append(f"{where(finding)}: no fix ({note})")
        else:
            planned.append(replace(buffer, origin=finding.key()))

    reserved_after: dict[str, int] = {}  # pool -> reserved GPUs after this run's fixes
    lent_less: dict[str, int] = {}  # pool -> GPUs a Kueue flavor lends less after this run's fixes
    by_pool: dict[str, dict[str, Finding]] = {}
    for finding in sorted((f for f in wanted if rewrites(f) not in ("requests", "buffer")), key=lambda f: f.sort_key()):
        view = views.get((finding.file, finding.doc_index, finding.subject))
        if view is None:
            notes.append(f"{where(finding)}: no fix (subject not found)")
            continue
        by_pool.setdefault(str(view.facts["qualified"]), {})[finding.code] = finding
    for qualified, found in sorted(by_pool.items()):
        view = pool_views.get(qualified)
        pool = pools.get(qualified)
        if view is None or pool is None or view.facts["baseline_gpus"] is None or view.facts["daily_gpus"] is None:
            notes += [f"{where(f)}: no fix (pooled bands unknown)" for f in found.values()]
            continue
        reservation = first(found, "reserved")
        capacity = first(found, "capacity")
        reserved = int(view.facts["reserved_gpus"])
        fix: Fix | None = None
        if reservation is not None:
            fix, note = reservation_fix(
                reservation.code, pool, view, asks.get(qualified, []),
                raise_only=declared[reservation.code].direction == "raise",
            )
            if fix is None:
                notes.append(f"{where(reservation)}: no fix ({note})")
                if capacity is not None:
                    notes.append(f"{where(capacity)}: no fix (the reservation is not fixed; fix it first)")
                continue
            reserved = fix.reserved if fix.reserved is not None else fix.new
        follow, note, refused = capacity_fix(
            (capacity or reservation or next(iter(found.values()))).code, pool, view, reserved, keep=capacity is None,
            ceiling=_capacity_ceiling(view, options.ruleset, options.selected), pools=result.model.pools,
        )
        if refused:
            notes += [f"{where(f)}: no fix ({note})" for f in (reservation, capacity) if f is not None]
            continue
        if fix is not None:
            # a Kueue flavor lending less moves its nominalQuota with the lendingLimit: one number, the capacity's
            same = next((c for c in follow if c.doc_path == fix.doc_path and c.doc_index == fix.doc_index), None)
            if same is not None:
                fix, follow = replace(fix, new=same.new), [c for c in follow if c is not same]
        if fix is not None and reservation is not None:
            reserved_after[qualified] = reserved
            planned.append(replace(fix, group=qualified, origin=reservation.key()))
        for c in follow:
            if c.doc_path[-1:] == ("lendingLimit",):
                lent_less[qualified] = c.old - c.new
            # the capacity that follows a moved reservation answers the reservation's finding
            planned.append(replace(c, group=qualified, origin=(capacity or reservation or next(iter(found.values()))).key()))
        if note and capacity is not None:
            notes.append(f"{where(capacity)}: no fix ({note})")
    for qualified, requests in sorted(asks.items()):
        after = reserved_after.get(qualified)
        # a reservation's fix keeps what a Kueue flavor lends (and a Volcano parent's guarantee only it may use):
        # both stay owned beside the new reservation
        kept = (pools[qualified].owned_beyond_reserved_gpus if qualified in pools else 0) - lent_less.get(qualified, 0)
        fixed, more = request_fixes(requests, None if after is None else after + kept)
        planned += [replace(f, group=qualified) if qualified in reserved_after else f for f in fixed]
        notes += more
    return planned, notes


def incomplete_model(result: LintResult) -> str | None:
    """Why no fix may be planned for ``result``, or None: the note for a capacity model with errors.

    A document that did not load, validate or resolve is left out of the model, and it
    may be a member of a pool: that pool's pooled figures then lack its demand, and a fix
    computed from them would cut GPUs the missing workload needs. ``export`` and ``plan``
    refuse such a model; ``--fix`` does too (every error, as they count them).
    """
    errors = result.model_errors
    if not errors:
        return None
    first = errors[0]
    more = f" and {len(errors) - 1} more" if len(errors) > 1 else ""
    return (
        f"no fix: the capacity model has {len(errors)} error{'s' if len(errors) != 1 else ''}"
        f" ({first.file}:{first.line}:{first.column}: {first.code}{more}); a document left out of the model may"
        " belong to a pool whose figures the fixes would rewrite: fix the errors, then run check --fix again"
    )


@dataclass(frozen=True)
class _Prepared:
    """One file's fixes, checked against the file as it is now and applied in memory."""

    fixes: list[Fix]
    raw: bytes
    before: str
    text: str
    applied: list[Fix]
    refused: list[Fix]


def _prepare(path: Path, chosen: list[Fix], options: LintOptions) -> tuple[_Prepared | None, list[str]]:
    """Read ``path`` again and apply ``chosen`` in memory; (None, notes) when the file must be left alone."""
    from policylint.errors import PolicylintError
    from policylint.model.load import pointer
    from policylint.safeio import read_bytes

    display = chosen[0].file
    keys = ", ".join(pointer(f.doc_path) for f in chosen)
    try:
        raw = read_bytes(path, limit=options.limits.max_file_bytes, what="document")
        text = raw.decode("utf-8")
    except PolicylintError as exc:
        return None, [f"{display}: not fixed ({exc.message})"]
    except UnicodeDecodeError as exc:
        return None, [f"{display}: not fixed ({exc})"]
    if any(f.linted is not None and text.removeprefix("\ufeff") != f.linted for f in chosen):
        return None, [f"{display}: not fixed (the file changed since it was linted; {keys} left as written: run check --fix again)"]
    edits = {ScalarEdit(f.doc_index, f.doc_path, f.new, f.at, f.written): f for f in chosen}
    edited = apply_edits(text, list(edits))
    if edited.error is not None:
        return None, [f"{display}: not fixed ({edited.error.splitlines()[0]})"]
    notes = [f"{display}: not fixed ({reason})" for _, reason in edited.refused]
    if edited.stale:
        # the other numbers of the file were planned from the same reading (an elastic limit
        # follows the reservation): none of them is written
        return None, [*notes, f"{display}: not fixed (no fix written to this file; {keys} left as written)"]
    applied = [edits[e] for e in edited.applied]
    refused = [edits[e] for e, _ in edited.refused]
    if not applied:
        return None, notes
    return _Prepared(chosen, raw, text, edited.text, applied, refused), notes


def run_fixes(result: LintResult, options: LintOptions, *, unsafe: bool, write: bool) -> FixOutcome:
    """Plan the fixes, edit each file's text, and write it when ``write``.

    Each file is read again and edited only when its text is still the one
    linted, every number is still written where and as it was, and it still
    composes; otherwise its fixes are refused with a note and it is left
    untouched. A file the safe writer refuses (a link leaving the repository,
    a read-only or hard-linked file, a full disk) is noted and left as it was.
    """
    from policylint.errors import PolicylintError
    from policylint.model.load import pointer
    from policylint.writer import write_file

    fixes, notes = plan(result, options)
    outcome = FixOutcome(notes=notes)
    by_file: dict[Path, list[Fix]] = {}
    # a pool's fixes go together: a reservation never moves without the capacity that follows it
    held = {f.group for f in fixes if f.group and not f.safe}
    shown = {f.group for f in fixes if f.group and f.applicability == "display-only"}
    for f in fixes:
        if f.new == f.old:
            continue
        if (f.applicability == "display-only" or f.group in shown) and write:
            outcome.shown.append(f)  # never written; a dry run shows it in the diff, which is all it is for
        elif not unsafe and (not f.safe or f.group in held) and f.group not in shown:
            outcome.withheld.append(f)
        else:
            by_file.setdefault(f.path, []).append(f)
    # Every file is read and edited in memory first. A pool's fixes may span files (a
    # reservation and a proposal's request): when one of them cannot be made, the others
    # of its group are left as written too, so no file gets half of a planned change.
    broken: set[str] = set()
    ready: dict[Path, _Prepared] = {}
    # in the order the numbers are written in the file
    pending = {path: sorted(chosen, key=lambda f: (f.doc_index, f.at or (0, 0))) for path, chosen in by_file.items()}
    while pending:
        for path in sorted(pending, key=str):
            prepared, failed = _prepare(path, pending[path], options)
            outcome.notes += failed
            if prepared is None:
                broken |= {f.group for f in pending[path] if f.group}
            else:
                # a refused number breaks its group: the fixes planned with it are not written either
                broken |= {f.group for f in prepared.refused if f.group}
                ready[path] = prepared
        pending = {}
        for path, prepared in list(ready.items()):
            cut = [f for f in prepared.applied if f.group in broken]
            if cut:
                del ready[path]
                keys = ", ".join(pointer(f.doc_path) for f in cut)
                outcome.notes.append(f"{cut[0].file}: not fixed ({keys} planned with a fix that could not be made; left as written)")
                rest = [f for f in prepared.applied if f.group not in broken]
                if rest:
                    pending[path] = rest
    diffs: list[str] = []
    for path in sorted(ready, key=str):
        prepared = ready[path]
        chosen = prepared.applied
        display = chosen[0].file
        keys = ", ".join(pointer(f.doc_path) for f in chosen)
        if any(f.group in broken for f in chosen):
            outcome.notes.append(f"{display}: not fixed (planned with a fix that could not be written; {keys} left as written)")
            continue
        if write:
            try:
                write_file(path, prepared.text, root=options.root, what="the fixed document", if_unchanged=prepared.raw)
            except PolicylintError as exc:
                outcome.notes.append(f"{display}: not fixed ({exc.message}; {keys} left as written)")
                groups = {f.group for f in chosen if f.group}
                broken |= groups
                # files are written one by one: what was written before this refusal stays written
                done = sorted({f.file for f in outcome.applied if f.group in groups})
                if done:
                    outcome.notes.append(f"{display}: {', '.join(done)} already fixed with it; make {display} writable and run check --fix again")
                continue
        diffs.append(unified_diff(prepared.before, prepared.text, display))
        outcome.files.append(display)
        outcome.applied.extend(prepared.applied)
    outcome.diff = "".join(diffs)
    return outcome


def summary(outcome: FixOutcome, *, write: bool) -> str:
    """Lines for stderr: what was fixed, what was withheld, what could not be fixed."""
    lines = [f"  {f.describe()}" for f in outcome.applied]
    verb = "fixed" if write else "would fix"
    head = f"{verb} {len(outcome.applied)} number{'s' if len(outcome.applied) != 1 else ''}"
    if outcome.files:
        head += f" in {len(outcome.files)} file{'s' if len(outcome.files) != 1 else ''}"
    unsafe, shown = outcome.withheld, outcome.shown
    if unsafe:
        head += f"; {len(unsafe)} unsafe fix{'es' if len(unsafe) != 1 else ''} withheld (raise capacity; rerun with --unsafe-fixes)"
        lines += [f"  withheld: {f.describe()}" for f in unsafe]
    if shown:
        head += f"; {len(shown)} display-only fix{'es' if len(shown) != 1 else ''} not written (see --fix-dry-run)"
        lines += [f"  display-only: {f.describe()}" for f in shown]
    lines += [f"  {n}" for n in outcome.notes]
    return "\n".join([head, *lines]) + "\n"


def availability(result: LintResult, options: LintOptions) -> dict[FindingKey, str]:
    """How each reported finding's fix may be applied: finding identity -> ``safe`` / ``unsafe`` / ``display-only``.

    From the same plan ``--fix`` makes, so a finding is marked fixable exactly when
    ``--fix`` (or ``--fix --unsafe-fixes``) would change a number for it; a finding
    whose fix cannot be made (a note of the plan) is not marked. A pool's fixes go
    together: one unsafe fix of the group makes each of its findings unsafe.
    """
    declared = fixes()
    if not any(f.code in declared for f in result.findings):
        return {}
    planned, _ = plan(result, options)
    planned = [f for f in planned if f.new != f.old and f.origin is not None]
    rank = {"safe": 0, "unsafe": 1, "display-only": 2}
    worst: dict[str, str] = {}  # group -> the least applicable fix in it
    for f in planned:
        if f.group and rank[f.applicability] > rank[worst.get(f.group, "safe")]:
            worst[f.group] = f.applicability
    out: dict[FindingKey, str] = {}
    for f in planned:
        assert f.origin is not None
        level = worst.get(f.group, f.applicability) if f.group else f.applicability
        before = out.get(f.origin)
        if before is None or rank[level] > rank[before]:
            out[f.origin] = level
    return out
