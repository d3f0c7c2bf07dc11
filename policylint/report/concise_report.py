"""``--format concise``: one line per finding, then the summary line.

::

    clusters/prod-east.yaml:19:7: error PL101 [*] [reserved-above-baseline] pool prod-east/serving reserves ...
    Found 1 finding (1 error) in 11 documents in 6 files.
    [*] 1 fixable with --fix.

For editors' problem matchers, ``grep`` and quick reading in a narrow
terminal: no grouping, no code frames, no hints, no colour. A finding that
``--fix`` fixes carries ``[*]`` after its code (``[~]``: only ``--fix
--unsafe-fixes`` does), and a last line counts them. ``--quiet`` keeps only the
summary; ``--statistics`` prints the per-rule table instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from policylint.finding import Finding
from policylint.report import ReportContext, fix_marker, fix_summary
from policylint.report.text_report import statistics_table, summary_line

if TYPE_CHECKING:
    from policylint.engine.result import LintResult


def line(f: Finding, marker: str = "") -> str:
    """``file:line:col: severity CODE [*] [name] message`` (``file: ...`` for a whole-file finding).

    ``marker`` is the fix marker (``[*]``, ``[~]``) of a fixable finding, else empty.
    """
    where = f"{f.file}:{f.line}:{f.column}" if f.line > 0 else f.file
    fix = f"{marker} " if marker else ""
    return f"{where}: {f.severity.label} {f.code} {fix}[{f.name}] {f.message}"


def render(result: LintResult, context: ReportContext) -> str:
    if context.statistics:
        return statistics_table(result, context)
    lines = [] if context.quiet else [line(f, fix_marker(f, context)) for f in result.findings]
    lines.append(summary_line(result))
    fixable = fix_summary(result.findings, context)
    if fixable:
        lines.append(fixable)
    return "\n".join(lines) + "\n"
