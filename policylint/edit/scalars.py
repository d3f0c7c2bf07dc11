"""Surgical edits of scalar spans in YAML text.

The file is read again by the linter's loader; its position index records the
character offsets where each value starts and ends, its scalar style and
whether it was reached through an alias, so replacing exactly that span
changes the value and nothing else. A round-trip YAML library would re-emit the whole
document and could reflow quoting, indentation or comments; slicing the text
cannot.

An edit is refused (and reported as a note) when the value is not a plain or
quoted scalar written right there: an alias or an anchored value (changing it
would change every place that shares it), a value from a merge key, a block
scalar, a tagged value, or a new value whose text would read back as another
YAML type. It is also refused when a key on its path is written twice in its
mapping (the span recorded is the first occurrence, which YAML loaders ignore:
editing it would report a fix and change nothing that counts), and, for an
edit that carries what it was computed from (``at``, ``expect``), when the
value is no longer written at that span with that text.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from policylint.model.load import Document, SourceFile, Span

DocPath = tuple[str | int, ...]
Scalar = int | float | str | bool


@dataclass(frozen=True)
class ScalarEdit:
    """Set the scalar at ``path`` of document ``doc_index`` to ``value``.

    ``at`` (character span) and ``expect`` (the text written there) record
    what the edit was computed from; when given, the edit is refused unless
    the text being edited still holds exactly that value at exactly that place.
    """

    doc_index: int
    path: DocPath
    value: Scalar
    at: tuple[int, int] | None = None
    expect: str | None = None


@dataclass
class EditResult:
    """The new text and what happened to each edit."""

    text: str
    applied: list[ScalarEdit] = field(default_factory=list)
    #: edits refused, each with the reason
    refused: list[tuple[ScalarEdit, str]] = field(default_factory=list)
    #: edits whose value was already written (nothing to change)
    unchanged: list[ScalarEdit] = field(default_factory=list)
    #: set when the file could not be composed; then ``text`` is the input, untouched
    error: str | None = None
    #: an edit no longer matches what it was computed from (moved, changed, duplicated key):
    #: the other edits of the file were computed from the same stale reading, so callers
    #: should write none of them
    stale: bool = False


def _show(path: DocPath) -> str:
    from policylint.model.load import pointer

    return pointer(path)


def _plain_text(value: Scalar) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _resolve(text: str) -> str:
    """The tag a plain scalar ``text`` reads back as."""
    import yaml  # only when a fix writes a scalar

    # SafeLoader resolves plain scalars with the default Resolver: the same tags the linter reads.
    return str(yaml.resolver.Resolver().resolve(yaml.ScalarNode, text, (True, False)))


_QUOTES = {"single": "'", "double": '"'}

_DUPLICATE = re.compile(r"duplicate key '(.*)' \(first defined on line (\d+)\)", re.DOTALL)


def _duplicated(source: SourceFile, doc: Document, path: DocPath) -> str | None:
    """The first key on ``path`` that is written twice in its mapping, or None.

    The loader reports each repeated key (PL002) at that occurrence; the position
    index keeps the last occurrence (the value YAML loaders keep), so a key on the
    path whose recorded line is that of a report is a repeated one.
    """
    repeated: set[tuple[str, int]] = set()
    for finding in source.findings:
        if finding.code == "PL002" and finding.doc_index == doc.index:
            match = _DUPLICATE.match(finding.message)
            if match:
                repeated.add((match.group(1), finding.line))
    if not repeated:
        return None
    for depth, key in enumerate(path):
        if (str(key), doc.positions.locate(path[: depth + 1])[0]) in repeated:
            return str(key)
    return None


def _replacement(old: str, span: Span, value: Scalar) -> tuple[str | None, str]:
    """(new span text, '') or (None, reason the value cannot be rewritten here)."""
    if span.style in ("literal", "folded"):
        return None, "block scalar"
    if old.startswith(("&", "!")):
        return None, "anchored or tagged value (other places may share it)"
    new = _plain_text(value)
    quote = _QUOTES.get(span.style or "")
    if quote is not None:
        if any(c in new for c in "\"'\\\n"):
            return None, "quoted value needs escaping"
        return quote + new + quote, ""
    tag = _resolve(old)
    if tag.endswith(":float") and isinstance(value, int) and not isinstance(value, bool) and _resolve(new) != tag:
        new = _plain_text(float(value))  # a count written 123.0 stays written so: 57.0, read as 57
    if _resolve(new) != tag:
        return None, f"new value {new!r} would change the YAML type ({tag.rsplit(':', 1)[-1]})"
    return new, ""


def apply_edits(text: str, edits: Sequence[ScalarEdit]) -> EditResult:
    """Apply ``edits`` to YAML ``text``, changing only the characters of each edited scalar.

    The text is read by the linter's own loader; the position index gives each
    scalar's exact span (start and end offsets), its style and whether it was
    reached through an alias or merge key, so the edit replaces exactly the
    characters of that value. A text the loader cannot read (YAML error, a
    refused document) is returned untouched with :attr:`EditResult.error` set:
    nothing is written into a file that the linter could not read.
    """
    from pathlib import Path

    from policylint.model.load import parse_text

    bom = "\ufeff" if text.startswith("\ufeff") else ""
    body = text[len(bom) :]
    source = SourceFile(path=Path("<edit>"), display="<edit>", text=body)
    parse_text(source)
    # duplicate keys, empty documents and apiVersion near misses do not stop the text being read
    problems = [f for f in source.findings if f.code not in ("PL002", "PL004", "PL007")]
    if problems:
        first = problems[0]
        problem = first.message.removeprefix("YAML syntax error: ")
        return EditResult(text=text, error=f"YAML error at line {first.line}, column {first.column}: {problem}")
    docs = {d.index: d for d in source.documents}
    result = EditResult(text=text)
    spans: list[tuple[int, int, str, ScalarEdit]] = []
    for edit in edits:
        doc = docs.get(edit.doc_index)
        span = doc.positions.span(edit.path) if doc is not None else None
        if span is None:
            result.refused.append((edit, f"{_show(edit.path)} is not written in this document (default or merge key)"))
            continue
        if span.via == "merge":
            result.refused.append((edit, f"{_show(edit.path)} is not written in this document (default or merge key)"))
            continue
        if span.via == "alias":
            result.refused.append((edit, f"{_show(edit.path)} is an alias"))
            continue
        if span.style is None:
            result.refused.append((edit, f"{_show(edit.path)} is not a scalar"))
            continue
        repeated = _duplicated(source, doc, edit.path) if doc is not None else None
        if repeated is not None:
            result.refused.append((
                edit,
                f"{_show(edit.path)}: key '{repeated}' is written twice in its mapping; "
                "remove one of the two entries, then fix again",
            ))
            result.stale = True
            continue
        if edit.at is not None and (span.start, span.end) != edit.at or (
            edit.expect is not None and body[span.start : span.end] != edit.expect
        ):
            result.refused.append((edit, f"{_show(edit.path)} no longer holds the value the fix was computed from"))
            result.stale = True
            continue
        new, reason = _replacement(body[span.start : span.end], span, edit.value)
        if new is None:
            result.refused.append((edit, f"{_show(edit.path)}: {reason}"))
            continue
        start, end = span.start, span.end
        if body[start:end] == new:
            result.unchanged.append(edit)
            continue
        if any(s < end and start < e for s, e, _, _ in spans):
            result.refused.append((edit, f"{_show(edit.path)} is edited twice"))
            continue
        spans.append((start, end, new, edit))
    for start, end, new, edit in sorted(spans, key=lambda s: s[0], reverse=True):
        body = body[:start] + new + body[end:]
    result.applied = [s[3] for s in sorted(spans, key=lambda s: s[0])]
    result.text = bom + body
    return result


def unified_diff(old: str, new: str, name: str) -> str:
    """A unified diff of one file (``a/NAME`` -> ``b/NAME``), as ``git apply`` and ``patch -p1`` read it."""
    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{name}", f"b/{name}"
    )
    out = []
    for line in lines:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def whole_number(value: Any) -> int | None:
    """A number written as a whole number (8, 8.0 or a quoted "8"); None for a bool, 8.5, 2000m or other text.

    The document's own reading (:func:`policylint.model.whole_number`), and the quoted digits a
    Kubernetes quantity may be: a fix rewrites any count the run read as a whole number.
    """
    from policylint.model import whole_number as counted

    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return counted(value)
