"""``check --fix``: which numbers to rewrite, and rewriting them.

A fix is planned only for a finding the run reported (so a suppressed or
baselined finding is left alone), from the facts its rule judged:

- PL101 (reserved above the pooled baseline): ``reservedGpus`` := pooled baseline GPUs;
- PL104 (reserved below it): ``reservedGpus`` := pooled baseline - GPUs already proposed;
- PL102 (reserved + elastic above the pooled daily band): ``elastic.maxGpus`` :=
  daily - reserved (the reserved figure after this run's fixes), at least 0;
- PL801 (a proposal asks beyond the shortfall): the request's ``gpus`` := pooled
  baseline - reserved (again after this run's fixes).

As in ruff, a fix that lowers a number is *safe*; one that raises capacity
spends money and is *unsafe*: it is applied only with ``--unsafe-fixes``.

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from policylint.edit.scalars import DocPath, ScalarEdit, apply_edits, unified_diff

if TYPE_CHECKING:
    from policylint.finding import Finding
    from policylint.linter import LintOptions, LintResult
    from policylint.model import Pool
    from policylint.views import View

#: Rules with a fix: code -> the field the fix rewrites (documentation for notes and the README).
FIXABLE: dict[str, str] = {
    "PL101": "reservedGpus := pooled baseline GPUs",  # Kueue nominalQuota, Volcano guarantee
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

    @property
    def safe(self) -> bool:
        """Lowering a number is safe; raising capacity spends money."""
        return self.new <= self.old

    def describe(self) -> str:
        where = "/".join(str(p) for p in self.doc_path)
        return f"{self.file}: {self.code} {where} {self.old} -> {self.new}"


@dataclass
class FixOutcome:
    """What ``--fix`` (or its dry run) did."""

    applied: list[Fix] = field(default_factory=list)
    withheld: list[Fix] = field(default_factory=list)  # unsafe, without --unsafe-fixes
    notes: list[str] = field(default_factory=list)  # fixes that could not be made, and why
    diff: str = ""
    files: list[str] = field(default_factory=list)  # files changed (or that would change)


def _views(result: LintResult, options: LintOptions) -> list[View]:
    """The views the run judged; measured again only for a result that kept none."""
    if result.views:
        return result.views
    from policylint.measure import measure, measure_pools
    from policylint.views import build_views

    assert result.model is not None
    now = options.now or dt.datetime.now(dt.timezone.utc)
    facts, _ = measure(result.model, now, limits=options.trace_limits)
    return build_views(result.model, facts, now, None, measure_pools(result.model, facts))


def plan(result: LintResult, options: LintOptions) -> tuple[list[Fix], list[str]]:
    """Fixes for the reported findings of fixable rules, plus notes on those that have none."""
    wanted = [f for f in result.findings if f.code in FIXABLE]
    if not wanted or result.model is None:
        return [], []
    views = {(v.doc.file, v.doc.index, v.label): v for v in _views(result, options)}
    pools = {p.qualified: p for p in result.model.pools}
    fixes: list[Fix] = []
    notes: list[str] = []
    reserved_after: dict[str, int] = {}  # pool -> reserved GPUs after this run's fixes
    # Pools first: elastic capacity and a proposal's shortfall follow the fixed reservation.
    order = {"PL101": 0, "PL104": 0, "PL102": 1, "PL801": 2}
    for finding in sorted(wanted, key=lambda f: (order[f.code], f.sort_key())):
        view = views.get((finding.file, finding.doc_index, finding.subject))
        where = f"{finding.file}:{finding.line}:{finding.column}: {finding.code}"
        if view is None:
            notes.append(f"{where}: no fix (subject not found)")
            continue
        if finding.code == "PL801":
            fix, note = _proposal_fix(finding, view, reserved_after)
        else:
            pool = pools.get(view.facts["qualified"])
            if pool is None or view.facts["baseline_gpus"] is None or view.facts["daily_gpus"] is None:
                notes.append(f"{where}: no fix (pooled bands unknown)")
                continue
            fix, note = _pool_fix(finding.code, pool, view, reserved_after)
        if fix is not None:
            fixes.append(fix)
        if note:
            notes.append(f"{where}: no fix ({note})")
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


def _pool_fix(code: str, pool: Pool, view: View, reserved_after: dict[str, int]) -> tuple[Fix | None, str]:
    """The fix of a pool finding: a policylint pool, a Kueue ClusterQueue or a Volcano Queue."""
    f = view.facts
    origin = pool.origin
    if code in ("PL101", "PL104"):
        target = f["baseline_gpus"] if code == "PL101" else max(0, f["baseline_gpus"] - f["proposed_gpus"])
        reserved_after[pool.qualified] = target
        if origin == "policylint":
            return _fix(code, view, (*pool.doc_path, "reservedGpus"), target)
        path = pool.place("reserved")
        if origin == "kueue" and path[-1:] == ("nominalQuota",):
            # reserved = nominalQuota - lendingLimit inside a cohort: keep what it lends, move the nominal quota
            lending = (pool.scheduler.get("lending_limit") or 0) if pool.scheduler.get("cohort") else 0
            if _number(view, path) != pool.scheduler.get("nominal"):
                return None, "the flavor's GPU quota is split over several resources; edit it by hand"
            return _fix(code, view, path, target + lending)
        if origin == "volcano" and path[:3] == ("spec", "guarantee", "resource") and len(path) == 4:
            return _fix(code, view, path, target)
        return None, "the reserved GPUs are not written as one number; add them by hand"
    # PL102: reserved + elastic above the daily band: lower the elastic part.
    reserved = reserved_after.get(pool.qualified, f["reserved_gpus"])
    elastic = max(0, f["daily_gpus"] - reserved)
    path = pool.place("capacity")
    if origin == "policylint":
        if "maxGpus" not in (pool.spec.get("elastic") or {}):
            return None, "no elastic.maxGpus to lower; lower the reservation"
        path, new = (*pool.doc_path, "elastic", "maxGpus"), elastic
    elif origin == "kueue" and path[-1:] == ("borrowingLimit",):
        path, new = path, elastic
    elif origin == "volcano" and path[:2] == ("spec", "capability"):
        path, new = path, reserved + elastic
    elif origin == "kueue":
        return None, f"borrowing from the cohort is unlimited; add borrowingLimit: {elastic} to the GPU resource"
    else:
        return None, f"no capability to lower; add capability {reserved + elastic} for the GPU resource"
    old = _number(view, path)
    if old is not None and new >= old:
        if reserved > f["daily_gpus"]:
            return None, "reserved GPUs alone exceed the daily band; lower the reservation"
        return None, ""  # the reservation's fix brings capacity within the band
    return _fix(code, view, path, new)


def _proposal_fix(finding: Finding, view: View, reserved_after: dict[str, int]) -> tuple[Fix | None, str]:
    """A proposal request asks beyond the shortfall: ask for the shortfall."""
    parts = finding.doc_path.split("/")
    if len(parts) != 4 or not parts[2].isdigit():
        return None, "request not found"
    f = view.facts
    req = f["requests"][int(parts[2])]
    reserved = reserved_after.get(f"{f['cluster']}/{req['pool']}", req["reserved"])
    shortfall = req["baseline_gpus"] - reserved
    if shortfall < 1:
        return None, "the pool needs no more GPUs: drop this request"
    return _fix(finding.code, view, ("spec", "requests", int(parts[2]), "gpus"), shortfall)


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


def run_fixes(result: LintResult, options: LintOptions, *, unsafe: bool, write: bool) -> FixOutcome:
    """Plan the fixes, edit each file's text, and write it when ``write``.

    Each file is read again and edited only when its text is still the one
    linted, every number is still written where and as it was, and it still
    composes; otherwise its fixes are refused with a note and it is left
    untouched. A file the safe writer refuses (a link leaving the repository,
    a read-only or hard-linked file, a full disk) is noted and left as it was.
    """
    from policylint.errors import PolicylintError
    from policylint.load import pointer
    from policylint.safeio import read_bytes
    from policylint.writer import write_file

    fixes, notes = plan(result, options)
    outcome = FixOutcome(notes=notes)
    by_file: dict[Path, list[Fix]] = {}
    for f in fixes:
        if not f.safe and not unsafe:
            outcome.withheld.append(f)
        elif f.new != f.old:
            by_file.setdefault(f.path, []).append(f)
    diffs: list[str] = []
    for path in sorted(by_file, key=str):
        chosen = by_file[path]
        display = chosen[0].file
        keys = ", ".join(pointer(f.doc_path) for f in chosen)
        try:
            raw = read_bytes(path, limit=options.limits.max_file_bytes, what="document")
            text = raw.decode("utf-8")
        except PolicylintError as exc:
            outcome.notes.append(f"{display}: not fixed ({exc.message})")
            continue
        except UnicodeDecodeError as exc:
            outcome.notes.append(f"{display}: not fixed ({exc})")
            continue
        if any(f.linted is not None and text.removeprefix("\ufeff") != f.linted for f in chosen):
            outcome.notes.append(f"{display}: not fixed (the file changed since it was linted; {keys} left as written: run check --fix again)")
            continue
        edits = {ScalarEdit(f.doc_index, f.doc_path, f.new, f.at, f.written): f for f in chosen}
        edited = apply_edits(text, list(edits))
        if edited.error is not None:
            outcome.notes.append(f"{display}: not fixed ({edited.error.splitlines()[0]})")
            continue
        for edit, reason in edited.refused:
            outcome.notes.append(f"{display}: not fixed ({reason})")
        if edited.stale:
            # the other numbers of the file were planned from the same reading (an elastic limit
            # follows the reservation): none of them is written
            outcome.notes.append(f"{display}: not fixed (no fix written to this file; {keys} left as written)")
            continue
        applied = [edits[e] for e in edited.applied]
        if not applied:
            continue
        if write:
            try:
                write_file(path, edited.text, root=options.root, what="the fixed document", if_unchanged=raw)
            except PolicylintError as exc:
                outcome.notes.append(f"{display}: not fixed ({exc.message}; {keys} left as written)")
                continue
        diffs.append(unified_diff(text, edited.text, display))
        outcome.files.append(display)
        outcome.applied.extend(applied)
    outcome.diff = "".join(diffs)
    return outcome


def summary(outcome: FixOutcome, *, write: bool) -> str:
    """Lines for stderr: what was fixed, what was withheld, what could not be fixed."""
    lines = [f"  {f.describe()}" for f in outcome.applied]
    verb = "fixed" if write else "would fix"
    head = f"{verb} {len(outcome.applied)} number{'s' if len(outcome.applied) != 1 else ''}"
    if outcome.files:
        head += f" in {len(outcome.files)} file{'s' if len(outcome.files) != 1 else ''}"
    if outcome.withheld:
        head += f"; {len(outcome.withheld)} unsafe fix{'es' if len(outcome.withheld) != 1 else ''} withheld (raise capacity; rerun with --unsafe-fixes)"
        lines += [f"  withheld: {f.describe()}" for f in outcome.withheld]
    lines += [f"  {n}" for n in outcome.notes]
    return "\n".join([head, *lines]) + "\n"
