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


def render(result: LintResult, context: ReportContext) -> str:
    if context.statistics:
        return statistics_table(result, context)
    from rich.console import Console
    from rich.text import Text

    buffer = io.StringIO()
    console = Console(
        file=buffer,
        force_terminal=context.color,
        no_color=not context.color,
        color_system="standard" if context.color else None,
        highlight=False,
        soft_wrap=True,
        width=200,
    )
    if not context.quiet:
        current = None
        lines: dict[str, list[str]] = {}  # file -> its lines, split once
        for f in result.findings:
            if f.file != current:
                if current is not None:
                    console.print()
                current = f.file
                console.print(Text(f.file, style="bold underline"))
            console.print(_headline(f, fix_marker(f, context)))
            source = result.sources.get(f.file) if context.show_source else None
            if source is not None:
                if f.file not in lines:
                    lines[f.file] = source.lines
                for gutter, text in _frame(lines[f.file], f):
                    row = Text("    ")
                    row.append(gutter, style="blue")
                    row.append(" " + text, style="bold red" if text.strip() == "^" else "")
                    console.print(row)
            if f.hint:
                hint = Text("    = help: ", style="cyan")
                hint.append(f.hint)
                console.print(hint)
        if result.findings:
            console.print()
    if result.stale_baseline and not context.quiet:
        console.print(Text("Baseline entries that no longer match a finding:", style="bold"))
        for e in result.stale_baseline:
            # a Text, not a str: rich would read "[...]" in a file name as markup
            console.print(Text(f"  {e.get('file', '')}: {e.get('code', '')} {e.get('subject', '')} {e.get('path', '')}".rstrip()))
        console.print()
    console.print(_summary(result))
    fixable = fix_summary(result.findings, context)
    if fixable:
        console.print(Text(fixable))
    return buffer.getvalue()


def _headline(f: Finding, marker: str = "") -> Text:
    from rich.text import Text

    text = Text(f"  {f.file}:{f.line}:{f.column}: ")
    text.append(f.severity.label, style=_STYLE[f.severity])
    text.append(f" {f.code} ", style="bold")
    if marker:
        text.append(f"{marker} ", style="bold cyan")
    text.append(f"[{f.name}] ", style="dim")
    text.append(f.message)
    return text


def _summary(result: LintResult) -> Text:
    from rich.text import Text

    return Text(summary_line(result), style="green" if not result.findings else "bold")


def summary_line(result: LintResult) -> str:
    """``Found 3 findings (2 errors, 1 warning) in 5 documents in 2 files.`` or ``All checks passed: ...``."""
    counts = Counter(f.severity for f in result.findings)
    scope = f"{result.documents} document{'s' if result.documents != 1 else ''} in {result.files} file{'s' if result.files != 1 else ''}"
    suppressed = f", {len(result.suppressed)} suppressed" if result.suppressed else ""
    if result.baselined:
        suppressed += f", {len(result.baselined)} in baseline"
    if result.stale_baseline:
        n = len(result.stale_baseline)
        suppressed += f", {n} baseline entr{'ies' if n != 1 else 'y'} no longer found (fixed? regenerate the baseline)"
    if not result.findings:
        return f"All checks passed: {scope}{suppressed}."
    parts = []
    for sev in (Severity.ERROR, Severity.WARNING, Severity.INFO):
        if counts[sev]:
            parts.append(f"{counts[sev]} {sev.label}{'s' if counts[sev] != 1 else ''}")
    n = len(result.findings)
    return f"Found {n} finding{'s' if n != 1 else ''} ({', '.join(parts)}) in {scope}{suppressed}."
