"""``check --fix``: which numbers to rewrite, and rewriting them.

A fix is planned only for a finding the run reported (so a suppressed or
baselined finding is left alone), from the facts its rule judged:

- PL101 (reserved above the pooled baseline) and PL104 (reserved + proposed below
  it): ``reservedGpus`` := pooled baseline - the GPUs the pool's proposals ask
  (``proposed_gpus``, the fact PL104 judges), counting each request PL801 reports at
  one GPU - so that reserved + proposed is what the rules require after the fix;
- PL102 (reserved + elastic above the pooled daily band): ``elastic.maxGpus`` :=
  daily - reserved (the reserved figure after this run's fixes), at least 0; a
  reservation that moves without PL102 keeps reserved + elastic where it was;
- PL801 (a proposal asks beyond the shortfall): the reported requests of a pool
  share pooled baseline - reserved (after this run's fixes) - the other requests.

Fixes converge: ``check --fix --unsafe-fixes`` followed by ``check`` reports none
of the sizing findings it fixed and no new one (tests/test_fix_converges.py).

How a rule's fix may be applied is declared in its rule file (``fix: safe``,
``unsafe`` or ``display-only``; :func:`policylint.engine.ruleset.fix_applicability`),
as in ruff: a *safe* fix is applied by ``--fix``; an *unsafe* one raises capacity
and spends money, so it is applied only with ``--unsafe-fixes``; a
*display-only* one is shown by ``--fix-dry-run`` and never written. A fix
declared safe that would raise a number after all (the elastic part that keeps
a pool's capacity when its reservation is lowered) counts as unsafe: the
declaration can only be made stricter by the numbers, never looser.

A fix remembers what it was computed from: the file's text as linted, and the
span and text of the number. Before writing, the file is read again and a fix
is refused (a note naming the file and key; the file untouched) when the file
changed since the lint, when the span no longer holds the old number, or when
a key on its path is written twice (the dead first occurrence would be edited).
The file is written through :func:`policylint.writer.write_file`, which also
refuses it when it changed between that read and the write.
A Kueue ClusterQueue is fixed through its GPU ``nominalQuota`` (reserved =
nominal - lendingLimit inside a cohort, so the lending limit is kept) and its
``borrowingLimit``; a Volcano Queue through ``guarantee`` and ``capability``.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from policylint.edit.scalars import DocPath, ScalarEdit, apply_edits, unified_diff
from policylint.model import pool_capacity

if TYPE_CHECKING:
    from policylint.finding import Finding, FindingKey
    from policylint.engine.linter import LintOptions, LintResult
    from policylint.model import Pool
    from policylint.engine.views import View

#: Rules policylint has a fix for: code -> the field the fix rewrites. How each may be
#: applied is declared in its rule file (``fix:``), never here; a test keeps both sets equal.
FIXABLE: dict[str, str] = {
    "PL101": "reservedGpus := pooled baseline GPUs - proposed GPUs",  # Kueue nominalQuota, Volcano guarantee
    "PL104": "reservedGpus := pooled baseline GPUs - proposed GPUs",
    "PL102": "elastic.maxGpus := pooled daily GPUs - reserved GPUs",  # Kueue borrowingLimit, Volcano capability
    "PL801": "requests[].gpus := pooled baseline GPUs - reserved GPUs",
}


@dataclass(frozen=True)
class Fix:
    """One planned change of one number."""

    code: str
    file: str  # display path, as in findings
    path: Path  # the file on disk
    doc_index: int
    doc_path: DocPath
    old: int
    new: int
    #: character span of the number in the linted text, and the text written there
    at: tuple[int, int] | None = None
    written: str | None = None
    #: the whole file as it was linted (without a byte-order mark)
    linted: str | None = field(default=None, compare=False, repr=False)
    #: fixes planned together (one pool's reservation, capacity and requests): withheld together
    group: str = ""
    #: the reserved GPUs the new number stands for, when it is not written as such (a Kueue nominal quota)
    reserved: int | None = None
    #: the identity of the finding the fix answers
    origin: FindingKey | None = field(default=None, compare=False)

    @property
    def applicability(self) -> str:
        """``safe``, ``unsafe`` or ``display-only``: the rule's declaration, made unsafe by a raised number."""
        from policylint.engine.ruleset import fix_applicability

        declared = fix_applicability().get(self.code, "display-only")
        if declared == "safe" and self.new > self.old:
            return "unsafe"  # raising a number spends money, whatever the rule's fix usually does
        return declared

    @property
    def safe(self) -> bool:
        """Applied by ``--fix`` alone (see :attr:`applicability`)."""
        return self.applicability == "safe"

    def describe(self) -> str:
        where = "/".join(str(p) for p in self.doc_path)
        return f"{self.file}: {self.code} {where} {self.old} -> {self.new}"


@dataclass
class FixOutcome:
    """What ``--fix`` (or its dry run) did."""

    applied: list[Fix] = field(default_factory=list)
    withheld: list[Fix] = field(default_factory=list)  # unsafe, without --unsafe-fixes
    shown: list[Fix] = field(default_factory=list)  # display-only (and planned with one): never written
    notes: list[str] = field(default_factory=list)  # fixes that could not be made, and why
    diff: str = ""
    files: list[str] = field(default_factory=list)  # files changed (or that would change)


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


def plan(result: LintResult, options: LintOptions) -> tuple[list[Fix], list[str]]:
    """Fixes for the reported findings of fixable rules, plus notes on those that have none.

    Fixes of one pool are planned together, so that the plan they leave passes the
    rules that asked for them instead of trading one finding for another:

    - the requests of a pool's proposals that PL801 reports are what may still change
      there; every other request stays as written;
    - the reservation (PL101, PL104) is the pooled baseline minus what the proposals
      will ask - the same ``proposed_gpus`` PL104 adds to the reservation. Owned GPUs
      are kept before GPUs still to be bought: a reservation above the baseline is
      lowered only far enough to leave one GPU for each reported request (a request
      cannot ask for 0; dropping it is the user's edit);
    - capacity follows: with PL102 reported, reserved + elastic := the pooled daily
      band; otherwise a changed reservation keeps reserved + elastic where it was, the
      elastic part taking up the difference (lowering capacity could start PL203 or
      PL205; raising it, PL102 or PL201). A pool with no elastic number to write
      keeps its reservation when lowering it would leave less than min(capacity, daily band);
    - the reported requests then share what remains of the shortfall.

    Fixes of one pool carry one ``group``: without ``--unsafe-fixes`` an unsafe fix
    withholds its whole group, so a reservation never moves without its capacity.
    """
    wanted = [f for f in result.findings if f.code in FIXABLE]
    if not wanted or result.model is None:
        return [], []
    all_views = _views(result, options)
    views = {(v.doc.file, v.doc.index, v.label): v for v in all_views}
    pool_views = {str(v.facts.get("qualified")): v for v in all_views if v.subject == "pool"}
    pools = {p.qualified: p for p in result.model.pools}
    fixes: list[Fix] = []
    notes: list[str] = []

    def where(finding: Finding) -> str:
        return f"{finding.file}:{finding.line}:{finding.column}: {finding.code}"

    # The requests PL801 reports, per pool: the part of the proposals a fix may lower.
    asks: dict[str, list[tuple[Finding, View, int, int]]] = {}
    for finding in sorted((f for f in wanted if f.code == "PL801"), key=lambda f: f.sort_key()):
        view = views.get((finding.file, finding.doc_index, finding.subject))
        parts = finding.doc_path.split("/")
        if view is None or len(parts) != 4 or not parts[2].isdigit():
            notes.append(f"{where(finding)}: no fix (request not found)")
            continue
        index = int(parts[2])
        req = view.facts["requests"][index]
        asks.setdefault(f"{view.facts['cluster']}/{req['pool']}", []).append((finding, view, index, int(req["gpus"])))

    reserved_after: dict[str, int] = {}  # pool -> reserved GPUs after this run's fixes
    by_pool: dict[str, dict[str, Finding]] = {}
    for finding in sorted((f for f in wanted if f.code != "PL801"), key=lambda f: f.sort_key()):
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
        reservation = found.get("PL101") or found.get("PL104")
        capacity = found.get("PL102")
        reserved = int(view.facts["reserved_gpus"])
        fix: Fix | None = None
        if reservation is not None:
            fix, note = _reservation_fix(reservation.code, pool, view, asks.get(qualified, []))
            if fix is None:
                notes.append(f"{where(reservation)}: no fix ({note})")
                if capacity is not None:
                    notes.append(f"{where(capacity)}: no fix (the reservation is not fixed; fix it first)")
                continue
            reserved = fix.reserved if fix.reserved is not None else fix.new
        follow, note, refused = _capacity_fix(
            (capacity or reservation or next(iter(found.values()))).code, pool, view, reserved, keep=capacity is None
        )
        if refused:
            notes += [f"{where(f)}: no fix ({note})" for f in (reservation, capacity) if f is not None]
            continue
        if fix is not None and reservation is not None:
            reserved_after[qualified] = reserved
            fixes.append(replace(fix, group=qualified, origin=reservation.key()))
        if follow is not None:
            # the capacity that follows a moved reservation answers the reservation's finding
            fixes.append(replace(follow, group=qualified, origin=(capacity or reservation or next(iter(found.values()))).key()))
        if note and capacity is not None:
            notes.append(f"{where(capacity)}: no fix ({note})")
    for qualified, requests in sorted(asks.items()):
        fixed, more = _request_fixes(requests, reserved_after.get(qualified))
        fixes += [replace(f, group=qualified) if qualified in reserved_after else f for f in fixed]
        notes += more
    return fixes, notes


def _number(view: View, path: DocPath) -> int | None:
    """The whole number written at ``path`` (a quoted "8" counts; 8.5 or 8k do not)."""
    value = doc_value(view, path)
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


def _fix(code: str, view: View, path: DocPath, new: int) -> tuple[Fix | None, str]:
    old = _number(view, path)
    if old is None:
        where = "/".join(str(p) for p in path)
        return None, f"{where} is not written as a whole number in the document; edit it by hand"
    doc = view.doc
    span = doc.positions.span(path)
    at = (span.start, span.end) if span is not None else None
    written = doc.source.text[span.start : span.end] if span is not None else None
    return Fix(code, doc.file, doc.source.path, doc.index, path, old, new, at, written, doc.source.text), ""


def _reservation_fix(code: str, pool: Pool, view: View, asks: list[tuple[Finding, View, int, int]]) -> tuple[Fix | None, str]:
    """PL101 / PL104: reserved := pooled baseline - what the pool's proposals will ask after this run.

    ``proposed_gpus`` is the fact PL104 adds to the reservation; the requests PL801
    reports (``asks``) will be lowered, to one GPU each at least, so the reservation
    counts them at one each - owned GPUs are kept before GPUs still to be bought.
    """
    f = view.facts
    fixable = sum(gpus for *_, gpus in asks)
    kept = int(f["proposed_gpus"]) - fixable + len(asks)
    target = max(0, int(f["baseline_gpus"]) - kept)
    if code == "PL104":
        # reserved + proposed is below the baseline: raise the reservation to close the gap
        target = max(target, int(f["reserved_gpus"]))
    origin = pool.origin
    if origin == "policylint":
        return _fix(code, view, (*pool.doc_path, "reservedGpus"), target)
    path = pool.place("reserved")
    if origin == "kueue" and path[-1:] == ("nominalQuota",):
        # reserved = nominalQuota - lendingLimit inside a cohort: keep what it lends, move the nominal quota
        lending = (pool.scheduler.get("lending_limit") or 0) if pool.scheduler.get("cohort") else 0
        if _number(view, path) != pool.scheduler.get("nominal"):
            return None, "the flavor's GPU quota is split over several resources; edit it by hand"
        fix, note = _fix(code, view, path, target + lending)
        return (None, note) if fix is None else (replace(fix, reserved=target), "")
    if origin == "volcano" and path[:3] == ("spec", "guarantee", "resource") and len(path) == 4:
        return _fix(code, view, path, target)
    return None, "the reserved GPUs are not written as one number; add them by hand"


def _capacity_fix(code: str, pool: Pool, view: View, reserved: int, *, keep: bool) -> tuple[Fix | None, str, bool]:
    """The elastic number that gives the pool its capacity once ``reserved`` GPUs are reserved.

    ``keep``: the capacity stays what it is (a reservation moved, capacity was not
    reported); else it becomes the pooled daily band (PL102). Returns (fix or None,
    note, refused): ``refused`` when the reservation must not move - the capacity
    would fall below both what it was and the daily band, with nothing elastic to
    write that could carry the difference.
    """
    f = view.facts
    daily, capacity = int(f["daily_gpus"]), int(f["capacity_gpus"])
    elastic = max(0, (capacity if keep else daily) - reserved)
    origin = pool.origin
    path = pool.place("capacity")
    new: int
    if origin == "policylint" and "maxGpus" in (pool.spec.get("elastic") or {}):
        path, new = (*pool.doc_path, "elastic", "maxGpus"), elastic
    elif origin == "kueue" and path[-1:] == ("borrowingLimit",):
        new = elastic
    elif origin == "volcano" and path[:2] in (("spec", "capability"), ("spec", "deserved")):
        if keep:
            return None, "", False  # capability (or deserved) holds the capacity whatever the guarantee
        new = pool_capacity(reserved, elastic)
    else:
        # nothing elastic to write: the capacity is the reservation (plus what a cohort lends)
        after = reserved + (int(f["elastic_gpus"] or 0) if origin == "kueue" else 0)
        if after < min(capacity, daily):
            return None, (
                f"a reservation of {reserved} would leave {after} GPUs for a pooled daily band of {daily} and there is"
                f" no elastic limit to carry the rest; add elastic capacity of {min(capacity, daily) - after} GPUs,"
                " then lower the reservation"
            ), True
        if keep or after <= daily:
            return None, "", False  # the reservation alone brings capacity within the band
        if origin == "policylint":
            return None, "no elastic.maxGpus to lower; lower the reservation", False
        if origin == "kueue":
            return None, f"borrowing from the cohort is unlimited; add borrowingLimit: {elastic} to the GPU resource", False
        return None, f"no capability to lower; add capability {reserved + elastic} for the GPU resource", False
    old = _number(view, path)
    if not keep and old is not None and new >= old and reserved == int(f["reserved_gpus"]):
        if reserved > daily:
            return None, "reserved GPUs alone exceed the daily band; lower the reservation", False
        return None, "", False  # the reservation's fix brings capacity within the band
    if old == new:
        return None, "", False
    fix, note = _fix(code, view, path, new)
    return fix, note, False


def _request_fixes(asks: list[tuple[Finding, View, int, int]], reserved: int | None) -> tuple[list[Fix], list[str]]:
    """PL801: the reported requests of one pool share the shortfall left after this run's reservation.

    The shortfall is the pool's baseline minus its reservation (after its fix) minus
    the requests that stay as written; the reported requests get it in order, each
    at most what it asks now. When it cannot give each of them a GPU, none is
    lowered: the pool's proposals are judged together, so only dropping requests
    helps, and that is the user's edit.
    """
    if not asks:
        return [], []
    _, view0, index0, _ = asks[0]
    req0 = view0.facts["requests"][index0]
    baseline = req0["baseline_gpus"]
    if reserved is None:
        reserved = req0["reserved"]
    fixable = sum(gpus for *_, gpus in asks)
    others = int(req0.get("pool_proposed_gpus") or fixable) - fixable
    left = int(baseline) - int(reserved) - others
    notes: list[str] = []
    if left < len(asks):
        for finding, *_ in asks:
            notes.append(
                f"{finding.file}:{finding.line}:{finding.column}: {finding.code}: no fix (the pool needs no more GPUs"
                + (": drop this request)" if len(asks) == 1 else f" than {max(0, left)} across {len(asks)} requests: drop requests)")
            )
        return [], notes
    fixes: list[Fix] = []
    for i, (finding, view, index, gpus) in enumerate(asks):
        share = min(gpus, left - (len(asks) - 1 - i))
        left -= share
        if share != gpus:
            fix, note = _fix(finding.code, view, ("spec", "requests", index, "gpus"), share)
            if fix is not None:
                fixes.append(replace(fix, origin=finding.key()))
            if note:
                notes.append(f"{finding.file}:{finding.line}:{finding.column}: {finding.code}: no fix ({note})")
    return fixes, notes


def doc_value(view: View, path: DocPath) -> Any:
    """The value at ``path`` of the view's document (None when absent)."""
    node: Any = view.doc.data
    for key in path:
        if isinstance(node, dict):
            node = node.get(key)
        elif isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node):
            node = node[key]
        else:
            return None
    return node


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
    from policylint.engine.ruleset import fix_applicability

    declared = fix_applicability()
    if not any(f.code in declared for f in result.findings):
        return {}
    fixes, _ = plan(result, options)
    fixes = [f for f in fixes if f.new != f.old and f.origin is not None]
    rank = {"safe": 0, "unsafe": 1, "display-only": 2}
    worst: dict[str, str] = {}  # group -> the least applicable fix in it
    for f in fixes:
        if f.group and rank[f.applicability] > rank[worst.get(f.group, "safe")]:
            worst[f.group] = f.applicability
    out: dict[FindingKey, str] = {}
    for f in fixes:
        assert f.origin is not None
        level = worst.get(f.group, f.applicability) if f.group else f.applicability
        before = out.get(f.origin)
        if before is None or rank[level] > rank[before]:
            out[f.origin] = level
    return out
