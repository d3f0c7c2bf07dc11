"""One planned fix, and what ``check --fix`` did with the fixes of a run.

A :class:`Fix` is one number to change in one document. How it may be applied
comes from its rule file (``fix: applicability:``, read through
:mod:`policylint.catalogue`), as in ruff: a *safe* fix is applied by ``--fix``; an
*unsafe* one raises capacity and spends money, so it waits for
``--unsafe-fixes``; a *display-only* one is shown by ``--fix-dry-run`` and never
written. A fix declared safe that would raise a number after all (the elastic
part that keeps a pool's capacity when its reservation is lowered) counts as
unsafe: the numbers can make a declaration stricter, never looser.

A fix also remembers what it was computed from - the file's text as linted, the
span and text of the number - so that the writer can refuse it when the file
changed since (:mod:`policylint.edit.fixes`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from policylint.catalogue import fix_applicability
from policylint.edit.scalars import DocPath, whole_number

if TYPE_CHECKING:
    from policylint.finding import FindingKey
    from policylint.engine.view import View


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



def number(view: View, path: DocPath) -> int | None:
    """The whole number written at ``path`` (a quoted "8" counts; 8.5 or 8k do not)."""
    return whole_number(doc_value(view, path))


def make_fix(code: str, view: View, path: DocPath, new: int) -> tuple[Fix | None, str]:
    old = number(view, path)
    if old is None:
        where = "/".join(str(p) for p in path)
        return None, f"{where} is not written as a whole number in the document; edit it by hand"
    doc = view.doc
    span = doc.positions.span(path)
    at = (span.start, span.end) if span is not None else None
    written = doc.source.text[span.start : span.end] if span is not None else None
    return Fix(code, doc.file, doc.source.path, doc.index, path, old, new, at, written, doc.source.text), ""

