"""Surgical edits of scalar spans in YAML text.

The file is composed again with PyYAML; each node carries the character index
where it starts and ends in the text, so replacing exactly that span changes
the value and nothing else. A round-trip YAML library would re-emit the whole
document and could reflow quoting, indentation or comments; slicing the text
cannot.

An edit is refused (and reported as a note) when the value is not a plain or
quoted scalar written right there: an alias or an anchored value (changing it
would change every place that shares it), a value from a merge key, a block
scalar, a tagged value, or a new value whose text would read back as another
YAML type.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass, field

import yaml

DocPath = tuple[str | int, ...]
Scalar = int | float | str | bool


@dataclass(frozen=True)
class ScalarEdit:
    """Set the scalar at ``path`` of document ``doc_index`` to ``value``."""

    doc_index: int
    path: DocPath
    value: Scalar


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


def _show(path: DocPath) -> str:
    return "/".join(str(p) for p in path)


def _child(node: yaml.Node, key: str | int) -> yaml.Node | None:
    """The node under ``key``; only explicit keys (a merged ``<<`` value is not the document's own)."""
    if isinstance(node, yaml.SequenceNode) and isinstance(key, int):
        return node.value[key] if 0 <= key < len(node.value) else None
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode) and k.tag != "tag:yaml.org,2002:merge" and k.value == str(key):
                return v
    return None


def _plain_text(value: Scalar) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _resolve(text: str) -> str:
    """The tag a plain scalar ``text`` reads back as."""
    # SafeLoader resolves plain scalars with the default Resolver: the same tags the linter reads.
    return str(yaml.resolver.Resolver().resolve(yaml.ScalarNode, text, (True, False)))


def _replacement(text: str, node: yaml.ScalarNode, value: Scalar) -> tuple[str | None, str]:
    """(new span text, '') or (None, reason the value cannot be rewritten here)."""
    old = text[node.start_mark.index : node.end_mark.index]
    if node.style in ("|", ">"):
        return None, "block scalar"
    if old.startswith(("&", "!")):
        return None, "anchored or tagged value (other places may share it)"
    new = _plain_text(value)
    if node.style in ('"', "'"):
        if any(c in new for c in "\"'\\\n"):
            return None, "quoted value needs escaping"
        return node.style + new + node.style, ""
    if _resolve(new) != node.tag:
        return None, f"new value {new!r} would change the YAML type ({node.tag.rsplit(':', 1)[-1]})"
    return new, ""


def apply_edits(text: str, edits: Sequence[ScalarEdit]) -> EditResult:
    """Apply ``edits`` to YAML ``text``, changing only the characters of each edited scalar.

    A text that does not compose (YAML error) is returned untouched with
    :attr:`EditResult.error` set: nothing is written into a file that the
    linter could not read.
    """
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    body = text[len(bom) :]
    try:
        docs = list(yaml.compose_all(body, Loader=yaml.SafeLoader))
    except yaml.YAMLError as exc:
        return EditResult(text=text, error=f"YAML error: {exc}")
    result = EditResult(text=text)
    spans: list[tuple[int, int, str, ScalarEdit]] = []
    for edit in edits:
        node: yaml.Node | None = docs[edit.doc_index] if 0 <= edit.doc_index < len(docs) else None
        parent_end = -1
        for key in edit.path:
            if node is None:
                break
            if isinstance(node, yaml.MappingNode):
                for k, v in node.value:
                    if isinstance(k, yaml.ScalarNode) and k.value == str(key) and k.tag != "tag:yaml.org,2002:merge":
                        parent_end = k.end_mark.index
                        break
            node = _child(node, key)
        if node is None:
            result.refused.append((edit, f"{_show(edit.path)} is not written in this document (default or merge key)"))
            continue
        if not isinstance(node, yaml.ScalarNode):
            result.refused.append((edit, f"{_show(edit.path)} is not a scalar"))
            continue
        if node.start_mark.index < parent_end:
            # The value node was composed before its key: an alias of an earlier anchor.
            result.refused.append((edit, f"{_show(edit.path)} is an alias"))
            continue
        new, reason = _replacement(body, node, edit.value)
        if new is None:
            result.refused.append((edit, f"{_show(edit.path)}: {reason}"))
            continue
        start, end = node.start_mark.index, node.end_mark.index
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
