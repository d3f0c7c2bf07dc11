"""Findings on the review page, and the run's views and findings by subject.

A finding is shown the same way wherever it appears (a pool, a proposal, the
change): its severity badge, code, name and message, and its place linked to
the source. :class:`Subjects` groups the run's views by subject and its
findings by subject label, which every section of the page reads.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from policylint.report.html_parts import SourceLinks, esc

if TYPE_CHECKING:
    from policylint.engine.result import LintResult
    from policylint.engine.view import View
    from policylint.finding import Finding

SEVERITY_RANK = {"info": 1, "warning": 2, "error": 3}


def badge(severity: str) -> str:
    """The coloured severity label."""
    return f'<span class="badge {esc(severity)}">{esc(severity)}</span>'


def where(f: Finding, links: SourceLinks, *, base: bool = False) -> str:
    """``file:line:column`` of a finding, linked to the file when there is somewhere to link."""
    text = f"{esc(f.file)}:{f.line}:{f.column}"
    href = links.href(f.file, f.line, base=base)
    return f'<a href="{esc(href)}">{text}</a>' if href is not None else text


def finding_item(f: Finding, links: SourceLinks, attrs: str, *, base: bool = False, extra: str = "") -> str:
    """One finding as a list item (``attrs``: its data attributes; ``base``: its place is in the base revision)."""
    return (
        f"<li {attrs}>{badge(f.severity.label)} <b>{esc(f.code)}</b> "
        f"<code>{esc(f.name)}</code> — {esc(f.message)}"
        f' <span class="muted">({where(f, links, base=base)})</span>'
        + (f'<br><span class="hint">→ {esc(f.hint)}</span>' if f.hint else "")
        + extra
        + "</li>"
    )


def findings_list(findings: Sequence[Finding], links: SourceLinks) -> str:
    """The findings as a list, or a line saying there are none."""
    if not findings:
        return '<p class="muted">No findings.</p>'
    items = [finding_item(f, links, f'data-code="{esc(f.code)}"') for f in findings]
    return f'<ul class="findings">{"".join(items)}</ul>'


@dataclass(frozen=True)
class Subjects:
    """The run's views by subject, and its findings by subject label."""

    workloads: dict[str, View]
    pools: dict[str, View]
    proposals: dict[str, View]
    findings: dict[str, list[Finding]]

    @classmethod
    def of(cls, result: LintResult) -> Subjects:
        workloads, pools, proposals = {}, {}, {}
        for v in result.views:
            if v.subject == "workload":
                workloads[v.facts["name"]] = v
            elif v.subject == "pool":
                pools[v.facts["qualified"]] = v
            elif v.subject == "proposal":
                proposals[v.facts["name"]] = v
        # a finding about a document only (no subject: a reference to a pool that does not exist, a
        # schema error) belongs to the subject whose document holds it; otherwise a proposal asking
        # for a misspelt pool would read "No findings" beside its own error
        # a finding names its file as result.sources does (rebased to the repository root by the report)
        named = {id(source): name for name, source in result.sources.items()}
        held = {
            (named.get(id(v.doc.source), v.doc.file), v.doc.index): v.label
            for v in result.views
            if v.subject in ("workload", "proposal")
        }
        by_subject: dict[str, list[Finding]] = {}
        for f in result.findings:
            label = f.subject or held.get((f.file, f.doc_index), "")
            by_subject.setdefault(label, []).append(f)
        return cls(workloads, pools, proposals, by_subject)

    def about(self, label: str) -> list[Finding]:
        return self.findings.get(label, [])


def failing_findings(findings: Iterable[Finding], fail_on: str) -> list[Finding]:
    """The findings at ``fail_on`` or above: those that fail the run."""
    floor = SEVERITY_RANK[fail_on]
    return [f for f in findings if SEVERITY_RANK[f.severity.label] >= floor]
