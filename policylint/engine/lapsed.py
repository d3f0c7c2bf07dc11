"""A suppression does not vouch for a line the change edited, in the runs that know the change.

A suppression comment is reviewed with the line it covers: ``reservedGpus: 24  #
policylint: disable=PL101 -- reason`` says that 24 was looked at and accepted. Matched by code
and line alone, the same comment kept hiding PL101 after the value under it was raised to 29
(red team, 2026-12-07: ``check`` and the hook passed; only ``--diff`` said something, as PL950).

In the runs given a change (the pre-commit hook, against HEAD; ``--diff BASE``), a suppressed
finding is reported again when both hold:

* the suppression stood at the base: the file at the base revision holds a suppression of the
  finding's rule with the same reason (a suppression written, or whose reason was rewritten, in
  the change vouches for the line as it is now);
* the change edited the line the finding is on, or a line of the YAML node it is placed at (a
  line-by-line comparison of the file at the base and now; a line only moved by edits elsewhere
  is not edited). A finding placed at ``elastic:`` covers the ``maxGpus:`` written under it
  (fourth red team, 2026-12-07: a suppression of PL102 on ``elastic:`` kept hiding a raise of
  ``maxGpus`` from 30 to 120 on the line below).

A finding about a pool also vouches for what the pool is made of elsewhere: its entry in a
``Cluster`` (``spec/pools/N``, every line of it), or for a Kueue ClusterQueue flavor its
ClusterQueue, its ResourceFlavor, the Cohorts of its cohort tree and the ClusterQueues that lend
in it, in whatever file of the change they are written (fourth red team, 2026-12-07: a Cohort's
quota raised 32 -> 64 in its own file, under a suppression of PL102 on training's borrowing
limit); for a Volcano queue, its Queue.

The finding keeps its code and says why it is back; rewriting the reason after reviewing the
new line re-confirms the suppression. A whole run knows no change and is not affected. PL026's
own rule for kustomizations (:mod:`policylint.engine.outlived`) is applied first; a finding it
reports again is not reported twice.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import os
from pathlib import Path

from policylint.engine.base_files import placement

if TYPE_CHECKING:
    from policylint.engine.outlived import Changed
    from policylint.model import Model, Pool
    from policylint.model.load import Document
    from policylint.engine.rule import RuleSet
    from policylint.finding import Finding
    from policylint.model.load import LoadLimits, SourceFile

#: what a finding reported again says, with what the change edited
NOTE = " [a suppression written before this change; the change edited {what}, so it no longer vouches for this finding]"
HINT = ("review the finding as the line is now; if the suppression still holds, rewrite its reason to say so (a reason"
        " written in the change re-confirms it), or fix what the finding reports")


def edited_lines(before: str, after: str) -> set[int]:
    """The 1-based lines of ``after`` that a line-by-line comparison with ``before`` finds inserted or replaced.

    Lines are compared without their comments (:func:`_code`): a comment is no edit of what a suppression
    vouches for.
    """
    old, new = [_code(line) for line in before.splitlines()], [_code(line) for line in after.splitlines()]
    edited: set[int] = set()
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag in ("replace", "insert"):
            edited.update(j + 1 for j in range(j1, j2) if new[j])
        if sum(map(bool, old[i1:i2])) > sum(map(bool, new[j1:j2])):
            # content removed (a limit deleted, or commented out: Kueue and Volcano read a missing limit as none,
            # fifth red team, 2026-12-07): the line before where it was - in the node it was removed from - is edited
            edited.add(j1 if j1 >= 1 else min(j2 + 1, len(new)))
    edited.discard(0)
    return edited


def _code(line: str) -> str:
    """A YAML line without its comment and its trailing spaces ("" for a comment or a blank line); the indent stays.

    A ``#`` starts a comment at the line's start or after a space, outside quotes: a comment edited or added
    (a suppression's expiry renewed, a note beside a value) edits nothing a suppression vouches for.
    """
    quote = ""
    for k, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in ("'", '"'):
            quote = ch
        elif ch == "#" and (k == 0 or line[k - 1] in " \t"):
            line = line[:k]
            break
    return line.rstrip() if line.strip() else ""


def covered(finding: Finding, source: SourceFile) -> set[int]:
    """The lines a finding vouches for: its own, and every line of the node it is placed at that holds text."""
    from policylint.model.load.positions import parse_pointer

    lines = {finding.line}
    if not finding.doc_path or finding.doc_index >= len(source.documents):
        return lines
    keys = parse_pointer(finding.doc_path)
    # list indexes are written as text: a step that names no mapping key is an index
    lines.update(_region_lines(source.documents[finding.doc_index], tuple(int(k) if k.isdigit() else k for k in keys))
                 or ())
    return lines


def _pool_of(model: Model | None, subject: str) -> Pool | None:
    """The pool a finding's subject (``pool C/P``) names, of any source; None when it names none."""
    if model is None or not subject.startswith("pool "):
        return None
    from policylint.model import schedulers

    name = subject[len("pool "):]
    return next((p for p in [*model.pools, *schedulers.all_pools(model)] if p.qualified == name), None)


def pool_regions(model: Model | None, subject: str) -> list[tuple[Document, tuple[str | int, ...]]]:
    """(document, path) of each part of the files a pool named by ``subject`` (``pool C/P``) is made of."""
    pool = _pool_of(model, subject)
    if model is None or pool is None:
        return []
    from policylint.model import schedulers

    if pool.origin == "policylint":
        return [(pool.doc, tuple(pool.doc_path[:3]))]  # spec/pools/N, every field of the pool
    regions: list[tuple[Document, tuple[str | int, ...]]] = [(pool.doc, ())]
    index = model.schedulers.get("kueue")
    if pool.origin == "kueue" and index is not None:
        from policylint.model.schedulers.kueue import cohort_roots

        # the whole cohort tree lends to the pool: every Cohort of it, every ClusterQueue of any cohort in it
        # (fifth red team, 2026-12-07: a root Cohort's quota raised 40 -> 200 lapsed nothing)
        root_of = cohort_roots(index)
        root = pool.scheduler.get("cohort_tree") or pool.scheduler.get("cohort")
        flavor = pool.scheduler.get("flavor")
        for doc in schedulers.documents(model):
            if doc is pool.doc:
                continue
            spec = doc.data.get("spec") if isinstance(doc.data, dict) else None
            spec = spec if isinstance(spec, dict) else {}
            cohort = spec.get("cohort", spec.get("cohortName"))
            if doc.kind == "ResourceFlavor" and doc.name == flavor:
                regions.append((doc, ()))
            elif root is not None and doc.kind == "Cohort" and root_of(doc.name) == root:
                # its parent, and its quota of the pool's flavor (another flavor lends the pool nothing)
                parent = [("spec", key) for key in ("parentName", "parent") if key in spec]
                regions += [(doc, path) for path in [*parent, *_flavor_entries(spec, flavor)]]
            elif (root is not None and doc.kind == "ClusterQueue" and isinstance(cohort, str)
                  and root_of(cohort) == root):
                # a queue of the tree lends the pool only quota of the pool's flavor (sixth red team, 2026-12-07: an
                # H200 queue's queue-depth annotation lapsed the suppressions of the H100 training pool)
                regions += [(doc, path) for path in _flavor_entries(spec, flavor)]
    return regions


def _flavor_entries(spec: dict[str, Any], flavor: object) -> list[tuple[str | int, ...]]:
    """The paths of the entries of ``spec.resourceGroups[*].flavors`` named ``flavor``."""
    groups = spec.get("resourceGroups")
    found: list[tuple[str | int, ...]] = []
    for g, group in enumerate(groups if isinstance(groups, list) else []):
        flavors = group.get("flavors") if isinstance(group, dict) else None
        for f, entry in enumerate(flavors if isinstance(flavors, list) else []):
            if isinstance(entry, dict) and entry.get("name") == flavor:
                found.append(("spec", "resourceGroups", g, "flavors", f))
    return found


def pool_holder(model: Model | None, subject: str) -> Callable[[tuple[str, str]], bool] | None:
    """Whether a workload placement (:func:`policylint.engine.base_files.placement`) puts it in the pool ``subject``
    names; None when ``subject`` names no pool of ``model``."""
    found = _pool_of(model, subject)
    if model is None or found is None:
        return None

    def holds(placed: tuple[str, str]) -> bool:
        where, queue = placed
        if not where.startswith("queue:"):
            return found.origin == "policylint" and placed == (found.cluster.name, found.name)
        index = model.schedulers.get(where[len("queue:"):])
        if index is None:
            return False
        if where == "queue:kueue":
            from policylint.model.schedulers.kueue import admission

            return any(p is found for p in admission(index, queue).pools)
        return getattr(index, "pools", {}).get(queue) is found

    return holds


def _region_lines(doc: Document, path: tuple[str | int, ...]) -> set[int] | None:
    """The written lines of ``path`` in ``doc`` (None: not known, so any line of the file)."""
    span = doc.positions.span(path) or doc.positions.span(tuple(str(k) for k in path))  # indexes as text too
    if span is None:
        return None
    written = doc.source.text[span.start : span.end].rstrip()
    return set(range(span.line, span.line + written.count("\n") + 1))


def lapsed(
    suppressed: Sequence[tuple[Finding, str]],
    sources: dict[str, SourceFile],
    changed: Changed,
    base_text: Callable[[SourceFile], str | None],
    ruleset: RuleSet,
    limits: LoadLimits,
    model: Model | None = None,
    *,
    standing: bool = True,
    note: str = NOTE,
    hint: str = HINT,
) -> list[tuple[Finding, Finding]]:
    """The suppressed findings whose suppression the change outlives: each with the finding to report in its place.

    ``base_text`` gives a file as the base revision holds it (None when it holds none).
    Only files of the change are read at the base: a file the change did not touch
    edited no line. Without ``standing``, any of ``suppressed`` (a finding a baseline accepted,
    :mod:`policylint.engine.baselines`) counts as accepted at the base when its file was there;
    ``note`` (with ``{what}``) and ``hint`` say why it is back.
    """
    from policylint.engine.filter import scan_suppressions
    from policylint.model.load import SourceFile as Source, parse_text

    found: list[tuple[Finding, Finding]] = []
    bases: dict[str, tuple[set[tuple[str, str]], set[int]] | None] = {}
    olds: dict[str, SourceFile] = {}  # each file of the change as the base holds it, parsed

    def base_of(source: SourceFile) -> tuple[set[tuple[str, str]], set[int]] | None:
        """(the suppressions standing in the file at the base, the lines the change edited); None: new in it."""
        if source.display not in bases:
            if changed.holds(source.path) is None:
                text: str | None = source.text  # not in the change: at the base as it is now
            else:
                text = base_text(source)
            if text is None:
                bases[source.display] = None
            else:
                old = source
                if text != source.text:
                    old = Source(path=source.path, display=source.display, text=text)
                    parse_text(old, limits)
                olds[source.display] = old
                stood = {(code, s.reason) for s in scan_suppressions(old, ruleset).suppressions for code in s.rules}
                bases[source.display] = (stood, edited_lines(text, source.text) if text != source.text else set())
        return bases[source.display]

    def elsewhere(finding: Finding) -> str | None:
        """What the change edited of the files the finding's pool is made of (None: nothing)."""
        for doc, path in pool_regions(model, finding.subject):
            if changed.holds(doc.source.path) is None:
                continue  # a file the change did not touch
            other = base_of(doc.source)
            lines = _region_lines(doc, path)
            # a file written in the change: the pool is made of something the suppression never saw
            if other is None or lines is None or lines & other[1]:
                what = f"{doc.kind} {doc.name}" if doc.kind not in (None, "Cluster") else "the pool's entry"
                return f"{what} in {doc.source.display}, which {finding.subject} is made of"
        return None

    def moved(finding: Finding) -> str | None:
        """How many workloads the files of the change place in the finding's pool, then and now, when that changed:
        a workload moved into or out of it, added or removed (a pool emptied under a suppression of its oversizing:
        sixth red team, 2026-12-07, +34 GPUs reserved again where its workloads went). A workload renamed in place,
        moved to another file, or admitted through another LocalQueue of the same ClusterQueue leaves it as it was."""
        holds = pool_holder(model, finding.subject)
        if holds is None:
            return None
        then_count = now_count = 0
        for source in _change_files():
            base = base_of(source)
            old = olds.get(source.display) if base is not None else None
            for docs, counted in ((source.documents, "now"), (old.documents if old is not None else [], "then")):
                n = sum(1 for d in docs if d.kind == "Workload" and isinstance(d.data, dict)
                        and (placed := placement(d.data.get("spec"))) is not None and holds(placed))
                if counted == "now":
                    now_count += n
                else:
                    then_count += n
        if then_count == now_count:
            return None
        return (f"the workloads placed in it ({then_count} in the files of the change at the base, {now_count} now)")

    def _change_files() -> list[SourceFile]:
        """The files of the change: those read today, and those it deleted (read at the base only)."""
        found = [sources[d] for d in sorted(sources) if changed.holds(sources[d].path) is not None]
        seen = {os.path.realpath(f.path) for f in found}
        # a file moved in the change is read at the base by the path it was moved from: that path is not gone
        moved_from = {olds[f.display].text for f in found if base_of(f) is not None and f.display in olds}
        for real in sorted(changed.real - seen):
            if not os.path.lexists(real) and real.lower().endswith((".yaml", ".yml", ".json")):
                gone = Source(path=Path(real), display=real, text="")
                if gone.display not in bases:
                    text = base_text(gone)
                    bases[gone.display] = None
                    if text is not None and text not in moved_from:
                        old = Source(path=gone.path, display=gone.display, text=text)
                        parse_text(old, limits)
                        olds[gone.display], bases[gone.display] = old, (set(), set())
                if bases[gone.display] is not None:
                    found.append(gone)
        return found

    for finding, reason in suppressed:
        source = sources.get(finding.file)
        if source is None or finding.line < 1:
            continue
        base = base_of(source)
        if base is None or (standing and (finding.code, reason) not in base[0]):
            continue  # written (or its reason rewritten) in the change: it vouches for what it covers now
        edited = covered(finding, source) & base[1]
        what = (("this line" if finding.line in edited else "the lines it covers") if edited
                else elsewhere(finding) or moved(finding))
        if what is None:
            continue
        found.append((finding, replace(finding, message=finding.message + note.format(what=what), hint=hint)))
    return found
