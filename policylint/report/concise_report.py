"""``--format concise``: one line per finding, then the summary line.

::

    clusters/prod-east.yaml:19:7: error PL101 [reserved-above-baseline] pool prod-east/serving reserves ...
    Found 1 finding (1 error) in 11 documents in 6 files.

For editors' problem matchers, ``grep`` and quick reading in a narrow
terminal: no grouping, no code frames, no hints, no colour. ``--quiet`` keeps
only the summary; ``--statistics`` prints the per-rule table instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from policylint.finding import Finding
from policylint.report import ReportContext
from policylint.report.text_report import statistics_table, summary_line

if TYPE_CHECKING:
    from policylint.linter import LintResult


def line(f: Finding) -> str:
    """``file:line:col: severity CODE [name] message`` (``file: ...`` for a whole-file finding)."""
    where = f"{f.file}:{f.line}:{f.column}" if f.line > 0 else f.file
    return f"{where}: {f.severity.label} {f.code} [{f.name}] {f.message}"


def render(result: LintResult, context: ReportContext) -> str:
    if context.statistics:
        return statistics_table(result)
    lines = [] if context.quiet else [line(f) for f in result.findings]
    lines.append(summary_line(result))
    return "\n".join(lines) + "\n"
