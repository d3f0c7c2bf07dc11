"""``--format json``: a stable, documented machine-readable report.

Shape (keys sorted, findings in file/line/column/code order)::

    {
      "version": "<policylint version>",
      "summary": {"files": 3, "documents": 11, "findings": 2,
                  "error": 1, "warning": 1, "info": 0, "suppressed": 0,
                  "baselined": 0, "fixable": 1, "unsafe_fixable": 0},
      "findings": [
        {"file": "...", "line": 12, "column": 5, "code": "PL101",
         "name": "reserved-above-baseline", "severity": "error",
         "message": "...", "hint": "...", "document": 0,
         "path": "spec/pools/0/reservedGpus", "subject": "pool prod/serving",
         "fix": "safe"}
      ],
      "suppressed": [{...finding..., "justification": "reason from the comment"}],
      "baselined": 0,
      "stale_baseline": [{"code": "...", "file": "...", "subject": "...", "path": "..."}]
    }

``suppressed`` and ``stale_baseline`` are always present (possibly empty);
``baselined`` counts findings hidden by ``--baseline``. ``fix`` says how
``check --fix`` fixes the finding: ``"safe"`` (``--fix``), ``"unsafe"`` (only with
``--unsafe-fixes``: it raises capacity), ``"display-only"`` (shown by
``--fix-dry-run``, never written), or ``null`` when it has no fix. ``fixable``
counts the findings ``--fix`` fixes as run (with ``--unsafe-fixes``, the unsafe
ones too), ``unsafe_fixable`` those only ``--unsafe-fixes`` would add.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from policylint import __version__
from policylint.report import ReportContext, fix_counts, fix_of
from policylint.report.sarif_report import stale_key

if TYPE_CHECKING:
    from policylint.engine.result import LintResult


def summary(result: LintResult) -> dict[str, int]:
    counts = {"error": 0, "warning": 0, "info": 0}
    for f in result.findings:
        counts[f.severity.label] += 1
    return {
        "files": result.files,
        "documents": result.documents,
        "findings": len(result.findings),
        "suppressed": len(result.suppressed),
        "baselined": len(result.baselined),
        **counts,
    }


def render(result: LintResult, context: ReportContext) -> str:
    safe, unsafe = fix_counts(result.findings, context)
    payload = {
        "version": __version__,
        "summary": {**summary(result), "fixable": safe, "unsafe_fixable": unsafe},
        "findings": [{**f.to_dict(), "fix": fix_of(f, context)} for f in result.findings],
        # The hidden lists come in no guaranteed order; sorted so that output depends only on content.
        "suppressed": [
            {**f.to_dict(), "justification": reason}
            for f, reason in sorted(result.suppressed, key=lambda pair: (pair[0].sort_key(), pair[1]))
        ],
        "baselined": len(result.baselined),
        "stale_baseline": sorted(result.stale_baseline, key=stale_key),
    }
    return json.dumps(payload, indent=2, sort_keys=True) + "\n"
