"""``--format gitlab``: a GitLab Code Quality report for the merge-request widget.

GitLab reads a JSON array of issues (``artifacts: reports: codequality``)::

    [
      {
        "description": "PL101 reserved-above-baseline: pool prod/serving reserves 16 GPUs ...",
        "check_name": "PL101",
        "fingerprint": "<64 hex digits>",
        "severity": "major",
        "location": {"path": "plans/a.yaml", "lines": {"begin": 12}}
      }
    ]

Those five fields are the ones GitLab requires; ``type``, ``engine_name`` and
``content`` (the hint) are optional extras. Severities map to GitLab's scale: error -> ``major``, warning ->
``minor``, info -> ``info`` (``critical`` and ``blocker`` are left for problems
that break a build, which a capacity finding does not).

The fingerprint is the same line-independent identity SARIF uses (rule, file,
document, path inside it, subject), so the widget keeps recognising an issue
when lines above it move, and reports it as fixed only when it is gone.
Paths are relative to the repository root, as GitLab resolves them.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from policylint.finding import Finding, Severity
from policylint.report import ReportContext
from policylint.report.safe_text import json_ascii_controls
from policylint.report.sarif_report import fingerprints

if TYPE_CHECKING:
    from policylint.engine.result import LintResult

#: GitLab's severity scale, lowest first.
SEVERITIES = ("info", "minor", "major", "critical", "blocker")
_SEVERITY = {Severity.ERROR: "major", Severity.WARNING: "minor", Severity.INFO: "info"}


def issue(f: Finding, fingerprint: str) -> dict[str, Any]:
    """One Code Quality issue for one finding."""
    description = f"{f.code} {f.name}: {f.message}"
    body = f"{description}\n\nhint: {f.hint}" if f.hint else description
    return {
        "type": "issue",
        "engine_name": "policylint",
        "check_name": f.code,
        "description": description,
        "content": {"body": body},
        "severity": _SEVERITY[f.severity],
        "fingerprint": fingerprint,
        # GitLab lines start at 1; a whole-file finding (line 0) points at the first.
        "location": {"path": f.file, "lines": {"begin": max(f.line, 1)}},
    }


def render(result: LintResult, context: ReportContext) -> str:
    findings = list(result.findings)
    issues = [issue(f, fp) for f, fp in zip(findings, fingerprints(findings), strict=True)]
    return json_ascii_controls(json.dumps(issues, indent=2, sort_keys=True, ensure_ascii=False)) + "\n"
