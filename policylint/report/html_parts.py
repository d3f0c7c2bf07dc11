"""The HTML primitives every section of the review page writes with.

Escaping, numbers, durations, data attributes, table cells and links to source
lines live here, below :mod:`policylint.report.html_report` and the sections it
assembles (the pool, proposal, change and plan sections), so a section never
imports the page.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape
from pathlib import Path
from urllib.parse import quote

from policylint.report.safe_text import escape_controls


@dataclass(frozen=True)
class SourceLinks:
    """Where a file:line on the page links to.

    With a ``template`` (``report.source-url``, e.g.
    ``https://host/org/repo/blob/{rev}/{path}#L{line}``) every place links to the
    repository's web view at the revision the page shows (``rev``; ``base_rev``
    for what only the base revision holds). Without one - or when the template
    needs ``{rev}`` and there is no commit - a link is the file's path relative
    to the folder the page is written to (``page_dir``), which opens it from a
    CI artifact or a checkout. ``top`` is the folder finding paths are relative
    to (the repository root). No folders at all: plain text.
    """

    template: str | None = None
    rev: str | None = None
    base_rev: str | None = None
    top: Path | None = None
    page_dir: Path | None = None

    def href(self, path: str, line: int = 0, *, base: bool = False) -> str | None:
        """The URL of ``path`` (relative to ``top``) at ``line``; None when there is nothing to link to."""
        rev = self.base_rev if base else self.rev
        if self.template is not None and (rev is not None or "{rev}" not in self.template):
            return self.template.format(rev=quote(rev or "", safe=""), path=quote(path, safe="/"), line=max(line, 1))
        if self.top is None or self.page_dir is None:
            return None
        import os

        target = os.path.join(os.path.realpath(self.top), path)
        if base and not os.path.exists(target):
            return None  # the file is gone from the working tree: nothing there to open
        rel = os.path.relpath(target, os.path.realpath(self.page_dir))
        # every character but the separator percent-encoded: a file named "javascript:x" stays a path
        return quote(Path(rel).as_posix(), safe="/")


def esc(value: object) -> str:
    """HTML-escaped text of ``value`` (quotes too: the text may land in an attribute).

    Control characters are written as visible escapes first: HTML cannot carry
    most of them, and a name or message holding one is user input (see
    :mod:`policylint.report.safe_text`).
    """
    return escape(escape_controls(str(value)), quote=True)


def num(value: float | int | None, unit: str = "") -> str:
    """A number for people: whole numbers without decimals, others with at most two."""
    if value is None:
        return "–"
    if isinstance(value, float) and not math.isfinite(value):
        return "∞"
    if float(value) == int(value):
        text = f"{int(value):,}"
    else:
        text = f"{float(value):,.2f}".rstrip("0").rstrip(".")
    return f"{text}{unit}"


def attr(value: object) -> str:
    """A data attribute value: exact (repr of floats), empty for unknown."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else ""
    return esc(value)


def cell(label: str, content: str, css: str = "") -> str:
    """A table cell that names its column (``data-label``): narrow screens show a table row as a card."""
    cls = f' class="{css}"' if css else ""
    return f'<td{cls} data-label="{esc(label)}"><span>{content}</span></td>'


def duration(seconds: float | None) -> str:
    """A length of time as a reader takes it in ('–' when unknown): :func:`policylint.engine.messages.duration`,
    the one way policylint writes one in words, but for an unbounded one."""
    from policylint.engine.messages import duration as in_words

    if seconds is None:
        return "–"
    if not math.isfinite(seconds):
        return "without bound"
    return in_words(seconds)
