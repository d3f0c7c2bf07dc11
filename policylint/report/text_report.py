"""``--format text``: findings grouped by file, with a code frame and a summary.

rich is only imported here, at render time. Colour is decided by the CLI
(off when the stream is not a terminal or ``NO_COLOR`` is set).

``--no-show-source`` drops the code frames; ``--statistics`` replaces the
whole report with a table of findings per rule (as ruff does), so that it can
be read or parsed on its own.

Rendering is linear in the number of findings: each file's text is split
into lines once, however many findings point into it.
"""

from __future__ import annotations

import io
from collections import Counter
from typing import TYPE_CHECKING

from policylint.engine.linter import UNREADABLE
from policylint.finding import Finding, Severity
from policylint.report import FIX_MARKER, UNSAFE_MARKER, ReportContext, fix_marker, fix_summary
from policylint.report.safe_text import escape_controls

if TYPE_CHECKING:
    from rich.text import Text

    from policylint.engine.result import LintResult

_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}


def _frame(lines: list[str], finding: Finding) -> list[tuple[str, str]]:
    """(gutter, text) rows: the line before, the offending line and a caret."""
    if finding.line <= 0 or finding.line > len(lines):
        return []
    rows = []
    first = max(1, finding.line - 1)
    width = len(str(finding.line))
    for n in range(first, finding.line + 1):
        # the file's own text: a control character in it (a YAML error is reported at
        # exactly such a line) must not reach the terminal raw
        rows.append((f"{n:>{width}} |", escape_controls(lines[n - 1].rstrip())))
    rows.append((f"{'':>{width}} |", " " * (max(finding.column, 1) - 1) + "^"))
    return rows


def statistics_table(result: LintResult, context: ReportContext | None = None) -> str:
    """Findings per rule, most frequent first: ``count  code  fix  name`` (nothing when clean).

    The fix column is ``[*]`` when ``--fix`` fixes every finding of the rule, ``[~]``
    when ``--fix --unsafe-fixes`` is needed for some, ``[ ]`` otherwise (as ruff).
    """
    context = context or ReportContext()
    counts = Counter((f.code, f.name) for f in result.findings)
    marks: dict[str, set[str]] = {}
    for f in result.findings:
        marks.setdefault(f.code, set()).add(fix_marker(f, context))
    rows = sorted(counts.items(), key=lambda item: (-item[1], item[0]))

    def column(code: str) -> str:
        found = marks[code]
        if found == {FIX_MARKER}:
            return FIX_MARKER
        if found <= {FIX_MARKER, UNSAFE_MARKER}:
            return UNSAFE_MARKER
        return "[ ]"

    return "".join(f"{n:>5}  {code:<7} {column(code)} {name}\n" for (code, name), n in rows)


#: One printed line: the style of the whole line, its first text, then (text, style) pieces
#: appended to it - how each was built as a rich ``Text``. None prints an empty line.
Line = tuple[str, str, list[tuple[str, str]]] | None


def render(result: LintResult, context: ReportContext) -> str:
    if context.statistics:
        return statistics_table(result, context)
    lines = _lines(result, context)
    if context.color:
        return _rich(lines, color=True)
    return "".join(map(_plain, lines))


def _lines(result: LintResult, context: ReportContext) -> list[Line]:
    """Everything the report prints, line by line, with its styles."""
    out: list[Line] = []
    if not context.quiet:
        current = None
        lines: dict[str, list[str]] = {}  # file -> its lines, split once
        for f in result.findings:
            if f.file != current:
                if current is not None:
                    out.append(None)
                current = f.file
                out.append(("bold underline", f.file, []))
            out.append(_headline_line(f, fix_marker(f, context)))
            source = result.sources.get(f.file) if context.show_source else None
            if source is not None:
                if f.file not in lines:
                    lines[f.file] = source.lines
                for gutter, text in _frame(lines[f.file], f):
                    out.append(("", "    ", [(gutter, "blue"), (" " + text, "bold red" if text.strip() == "^" else "")]))
            if f.hint:
                out.append(("cyan", "    = help: ", [(f.hint, "")]))
        if result.findings:
            out.append(None)
    if result.stale_baseline and not context.quiet:
        out.append(("bold", "Baseline entries that no longer match a finding:", []))
        for e in result.stale_baseline:
            # a Text, not a str: rich would read "[...]" in a file name as markup
            out.append(("", f"  {e.get('file', '')}: {e.get('code', '')} {e.get('subject', '')} {e.get('path', '')}".rstrip(), []))
        out.append(None)
    out.append(("green" if not result.findings else "bold", summary_line(result), []))
    fixable = fix_summary(result.findings, context)
    if fixable:
        out.append(("", fixable, []))
    return out


def _text(line: tuple[str, str, list[tuple[str, str]]]) -> Text:
    from rich.text import Text

    style, first, pieces = line
    text = Text(first, style=style)
    for piece, piece_style in pieces:
        text.append(piece, style=piece_style or None)
    return text


def _rich(lines: list[Line], color: bool) -> str:
    """The lines as rich prints them, one ``print`` each (with colour: styles as terminal codes)."""
    from rich.console import Console

    buffer = io.StringIO()
    console = Console(
        file=buffer,
        force_terminal=color,
        no_color=not color,
        color_system="standard" if color else None,
        highlight=False,
        soft_wrap=True,
        width=200,
    )
    for line in lines:
        if line is None:
            console.print()
        else:
            console.print(_text(line))
    return buffer.getvalue()


#: The control codes rich's ``Text`` removes from what it is given (bell, backspace, vertical
#: tab, form feed, carriage return), as a ``str.translate`` table: the plain path would
#: otherwise import rich (about 15 ms) for this one table. ``tests/test_report_text.py``
#: holds it to rich's own and the plain lines to rich's output.
RICH_STRIPS = {7: None, 8: None, 11: None, 12: None, 13: None}


def _plain(line: Line) -> str:
    """One line as rich prints it without colour: its text, control codes stripped as rich strips them.

    Without colour and with soft wrapping rich adds nothing to a line's text but
    its end, and changes nothing in it but tabs (expanded to the next stop of 8):
    a line holding one is left to rich. Printing 17,000 lines one ``print`` at a
    time took rich about 2.5 s for 3,000 findings, the whole pre-commit run on a
    large pool; ``tests/test_report_text.py`` holds the two to the same bytes.
    """
    if line is None:
        return "\n"
    style, first, pieces = line
    text = (first + "".join(piece for piece, _ in pieces)).translate(RICH_STRIPS)
    if "\t" in text:
        return _rich([line], color=False)
    return text + "\n"


def _headline_line(f: Finding, marker: str = "") -> Line:
    pieces = [(f.severity.label, _STYLE[f.severity]), (f" {f.code} ", "bold")]
    if marker:
        pieces.append((f"{marker} ", "bold cyan"))
    pieces += [(f"[{f.name}] ", "dim"), (f.message, "")]
    return ("", f"  {f.file}:{f.line}:{f.column}: ", pieces)


def _names_a_file_here(result: LintResult) -> bool:
    """Whether a stale baseline entry names a file this run read (as the entry writes it, from the root)."""
    from pathlib import PurePosixPath

    here = {PurePosixPath(name).parts for name in result.sources} | {PurePosixPath(f.file).parts for f in result.findings}
    for entry in result.stale_baseline:
        parts = PurePosixPath(str(entry.get("file", ""))).parts
        if parts and any(len(p) >= len(parts) and p[len(p) - len(parts):] == parts for p in here):
            return True
    return False


#: document and measurement checks after which what the rules would judge may be missing from the run
_UNREAD_INPUT = UNREADABLE | frozenset({"PL010", "PL011", "PL020", "PL022", "PL023", "PL024", "PL026"})


def summary_line(result: LintResult) -> str:
    """``Found 3 findings (2 errors, 1 warning) in 5 documents in 2 files.`` or ``All checks passed: ...``."""
    counts = Counter(f.severity for f in result.findings)
    scope = f"{result.documents} document{'s' if result.documents != 1 else ''} in {result.files} file{'s' if result.files != 1 else ''}"
    suppressed = f", {len(result.suppressed)} suppressed" if result.suppressed else ""
    if result.baselined:
        suppressed += f", {len(result.baselined)} in baseline"
    if result.stale_baseline:
        n = len(result.stale_baseline)
        if not result.baselined and result.findings and not _names_a_file_here(result):
            # not one entry matched, yet there are findings, and no entry names a file of this run: rather
            # another repository's (or another folder's) baseline than every finding fixed and another made
            suppressed += (f", {n} baseline entr{'ies' if n != 1 else 'y'} and none matches a finding here"
                           " (is the baseline this repository's, recorded from its root?)")
        else:
            unread = sum(1 for f in result.findings if f.code in _UNREAD_INPUT)
            # a baselined finding about a document or measurement that could not be read this run is not
            # fixed, only not judged (a newcomer's trial, 2026-12-07: a typo in one trace said "fixed?")
            why = (f"fixed, or not judged while {unread} input{'s' if unread != 1 else ''} cannot be read"
                   " (the errors above)" if unread else "fixed? regenerate the baseline")
            suppressed += f", {n} baseline entr{'ies' if n != 1 else 'y'} no longer found ({why})"
    if not result.findings:
        return f"All checks passed: {scope}{suppressed}."
    parts = []
    for sev in (Severity.ERROR, Severity.WARNING, Severity.INFO):
        if counts[sev]:
            parts.append(f"{counts[sev]} {sev.label}{'s' if counts[sev] != 1 else ''}")
    n = len(result.findings)
    return f"Found {n} finding{'s' if n != 1 else ''} ({', '.join(parts)}) in {scope}{suppressed}."
