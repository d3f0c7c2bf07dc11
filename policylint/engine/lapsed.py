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

The finding keeps its code and says why it is back; rewriting the reason after reviewing the
new line re-confirms the suppression. A whole run knows no change and is not affected. PL026's
own rule for kustomizations (:mod:`policylint.engine.outlived`) is applied first; a finding it
reports again is not reported twice.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from policylint.engine.outlived import Changed
    from policylint.engine.rule import RuleSet
    from policylint.finding import Finding
    from policylint.model.load import LoadLimits, SourceFile

NOTE = " [the suppression here was written before this change, and the change edited this line since: it no longer vouches for it]"
HINT = ("review the finding as the line is now; if the suppression still holds, rewrite its reason to say so (a reason"
        " written in the change re-confirms it), or fix what the finding reports")


def edited_lines(before: str, after: str) -> set[int]:
    """The 1-based lines of ``after`` that a line-by-line comparison with ``before`` finds inserted or replaced."""
    old, new = before.splitlines(), after.splitlines()
    edited: set[int] = set()
    for tag, _, _, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag in ("replace", "insert"):
            edited.update(range(j1 + 1, j2 + 1))
    return edited


def covered(finding: Finding, source: SourceFile) -> set[int]:
    """The lines a finding vouches for: its own, and every line of the node it is placed at that holds text."""
    from policylint.model.load.positions import parse_pointer

    lines = {finding.line}
    if not finding.doc_path or finding.doc_index >= len(source.documents):
        return lines
    keys = parse_pointer(finding.doc_path)
    positions = source.documents[finding.doc_index].positions
    # list indexes are written as text: a step that names no mapping key is an index
    span = positions.span(keys) or positions.span(tuple(int(k) if k.isdigit() else k for k in keys))
    if span is not None:
        written = source.text[span.start : span.end].rstrip()
        lines.update(range(span.line, span.line + written.count("\n") + 1))
    return lines


def lapsed(
    suppressed: Sequence[tuple[Finding, str]],
    sources: dict[str, SourceFile],
    changed: Changed,
    base_text: Callable[[SourceFile], str | None],
    ruleset: RuleSet,
    limits: LoadLimits,
) -> list[tuple[Finding, Finding]]:
    """The suppressed findings whose suppression the change outlives: each with the finding to report in its place.

    ``base_text`` gives a file as the base revision holds it (None when it holds none).
    Only files of the change are read at the base: a file the change did not touch
    edited no line.
    """
    from policylint.engine.filter import scan_suppressions
    from policylint.model.load import SourceFile as Source, parse_text

    found: list[tuple[Finding, Finding]] = []
    bases: dict[str, tuple[set[tuple[str, str]], set[int]] | None] = {}
    for finding, reason in suppressed:
        source = sources.get(finding.file)
        if source is None or finding.line < 1:
            continue
        if finding.file not in bases:
            bases[finding.file] = None
            if changed.holds(source.path) is not None:
                text = base_text(source)
                if text is not None and text != source.text:
                    old = Source(path=source.path, display=source.display, text=text)
                    parse_text(old, limits)
                    stood = {(code, s.reason) for s in scan_suppressions(old, ruleset).suppressions for code in s.rules}
                    bases[finding.file] = (stood, edited_lines(text, source.text))
        base = bases[finding.file]
        if base is None or (finding.code, reason) not in base[0] or not (covered(finding, source) & base[1]):
            continue
        found.append((finding, replace(finding, message=finding.message + NOTE, hint=HINT)))
    return found
