"""Where a file's YAML comments are: the text outside every scalar, as the YAML parser read it.

A ``#`` starts a comment only where the scanner is between tokens; inside a
quoted, plain, literal (``|``) or folded (``>``) scalar it is text. PyYAML and
libyaml drop comments without a token, so they are found from the other side:
the parser reports where each scalar starts and ends (its event's marks), and
a ``#`` on a line is a comment when no scalar covers it. The only other tokens
are indicators (``- ? : , [ ] { }``), document markers, anchors, aliases and
tags, none of which can hold a ``#``, and directives (a ``%`` line).

A scalar event's span is wider than its text in two places, and both are
narrowed here: it starts at the node's properties (``&anchor !tag``), which may
be followed by a comment before the scalar itself, and a block scalar's header
line (``| # note``) may end in a comment. See :func:`_opaque`.

The marks come from the parse the loader makes anyway: the composer fills a
:class:`~policylint.model.load.positions.ScalarScan` for each file whose text holds
``policylint:``. A file from the document cache was not parsed in this run; it
gets one event pass (no composing, no building) the first time its comments
are asked for, and only when it holds that text.
"""

from __future__ import annotations

import bisect
import re
from typing import TYPE_CHECKING, NamedTuple

from policylint.model.load.positions import NEEDLE, ScalarScan

if TYPE_CHECKING:
    from policylint.model.load.documents import SourceFile

#: YAML 1.1 line breaks, as PyYAML counts lines (``\r\n`` is one break).
_BREAK = re.compile("\r\n|[\n\r\x85\u2028\u2029]")
_BREAK_CHARS = "\r\n\x85\u2028\u2029"
_BREAK_CHAR = re.compile("[\r\n\x85\u2028\u2029]")
_SPACE = " \t" + _BREAK_CHARS
_BLOCK_HEADER = frozenset("+-0123456789")
#: Directives whose line may end in a comment; PyYAML reads any other directive's
#: line to its end (libyaml refuses it), so nothing on it is a comment.
_COMMENTED_DIRECTIVES = ("%YAML", "%TAG")


class Comment(NamedTuple):
    """One comment: 1-based line and column of its ``#``, its text (``#`` to the end of the line)."""

    line: int
    column: int
    text: str
    #: nothing but blanks before the comment on its line
    alone: bool


def _line_end(text: str, pos: int, limit: int) -> int:
    """Offset of the first line break at or after ``pos`` (``limit`` when none comes before it)."""
    found = _BREAK_CHAR.search(text, pos, limit)
    return limit if found is None else found.start()


def _opaque(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The parts of one scalar event's span in which a ``#`` is not a comment.

    The span starts with the node's properties, if any, each a run of non-blank
    characters starting with ``&`` or ``!``, separated by blanks, line breaks
    or comments; a scalar's own text never starts with ``&``, ``!``, ``#`` or a
    blank, so the first other character is where the scalar begins. A block
    scalar's first line holds only its indicators (``|``/``>``, then chomping
    and indentation digits) and optionally a comment; its text starts on the
    next line.
    """
    out = []
    pos = start
    while pos < end:
        c = text[pos]
        if c in _SPACE:
            pos += 1
        elif c == "#":
            pos = _line_end(text, pos, end)
        elif c in "&!":
            j = pos
            while j < end and text[j] not in _SPACE:
                j += 1
            out.append((pos, j))
            pos = j
        else:
            break
    if pos >= end:
        return out
    if text[pos] not in "|>":
        out.append((pos, end))
        return out
    j = pos + 1
    while j < end and text[j] in _BLOCK_HEADER:
        j += 1
    out.append((pos, j))
    brk = _line_end(text, j, end)
    if brk < end:
        body = brk + (2 if text.startswith("\r\n", brk) else 1)
        if body < end:
            out.append((body, end))
    return out


def find_comments(text: str, scan: ScalarScan, needle: str = NEEDLE) -> list[Comment]:
    """The comments of ``text`` on the lines that hold ``needle``, in line order.

    A line's comment starts at its first ``#`` that no scalar covers and runs to
    the end of the line. Linear in the text: each needle line is found with
    string searches and looks only at the scalars that overlap it.
    """
    if needle not in text:
        return []
    lines = _Lines(text)
    comments: list[Comment] = []
    at = text.find(needle)
    while at >= 0:
        n, line_start, line_end = lines.around(at)
        comment = _comment_on_line(text, scan, line_start, line_end)
        if comment is not None:
            hash_at, alone = comment
            comments.append(Comment(n, hash_at - line_start + 1, text[hash_at:line_end], alone))
        at = text.find(needle, line_end)
    return comments


class _Lines:
    """Line numbers and bounds of offsets met in increasing order.

    Most files break lines with ``\n`` alone: then string searches find a
    line's bounds and count the lines before it. Any other YAML line break
    (``\r``, NEL, LS, PS) makes the line starts be listed once instead.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts: list[int] | None = None
        if any(c in text for c in _BREAK_CHARS if c != "\n"):
            self.starts = [0] + [m.end() for m in _BREAK.finditer(text)]
        self.line = 1
        self.counted_to = 0

    def around(self, at: int) -> tuple[int, int, int]:
        """(1-based line number, start offset, end offset before its break) of the line holding ``at``."""
        text = self.text
        if self.starts is None:
            start = text.rfind("\n", 0, at) + 1
            self.line += text.count("\n", self.counted_to, start)
            self.counted_to = start
            end = text.find("\n", at)
            return self.line, start, len(text) if end < 0 else end
        n = bisect.bisect_right(self.starts, at) - 1
        start = self.starts[n]
        if n + 1 < len(self.starts):
            following = self.starts[n + 1]
            end = following - (2 if text.startswith("\r\n", following - 2) else 1)
        else:
            end = len(text)
        return n + 1, start, end


def _comment_on_line(text: str, scan: ScalarScan, line_start: int, line_end: int) -> tuple[int, bool] | None:
    """(offset of the ``#``, alone on its line) of the comment on one line, else None."""
    if line_end > scan.read_to:
        return None
    # The scalars that may cover part of the line: the last one starting before it, and those inside it.
    covered: list[tuple[int, int]] = []
    starts, ends = scan.starts, scan.ends
    for i in range(max(bisect.bisect_right(starts, line_start) - 1, 0), len(starts)):
        if starts[i] >= line_end:
            break
        if ends[i] > line_start:
            covered.extend((a, b) for a, b in _opaque(text, starts[i], ends[i]) if a < line_end and b > line_start)
    covered.sort()
    if text.startswith("%", line_start) and not any(a <= line_start < b for a, b in covered):
        if not text.startswith(_COMMENTED_DIRECTIVES, line_start):
            return None
    pos = line_start
    for a, b in covered:
        hash_at = text.find("#", pos, min(a, line_end))
        if hash_at >= 0:
            break
        pos = max(pos, b)
    else:
        hash_at = text.find("#", pos, line_end) if pos < line_end else -1
    if hash_at < 0:
        return None
    alone = not text[line_start:hash_at].strip(" \t\ufeff")
    return hash_at, alone


def source_comments(source: SourceFile, needle: str = NEEDLE) -> list[Comment]:
    """The comments of ``source`` on the lines holding ``needle`` (see :func:`find_comments`).

    Uses the scalar spans the loader recorded while parsing; a file it did not
    parse in this run (a document-cache hit) is scanned for its events once.
    """
    if needle not in source.text:
        return []
    if source.scalars is None:
        # imported here: a run whose files all came from the cache never loads PyYAML
        from policylint.model.load.compose import scan_scalars

        source.scalars = scan_scalars(source.text)
    return find_comments(source.text, source.scalars, needle)
