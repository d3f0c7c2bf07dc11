"""What a run gives back: the findings it reports, hides and baselines, and what they were judged from.

:class:`LintResult` is the one value the pipeline (:func:`policylint.engine.linter.lint`)
hands up to the reports and commands; narrowing (:mod:`policylint.engine.scope`)
and the fixer read and trim it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from policylint.engine.view import View
from policylint.finding import Finding
from policylint.model import Model
from policylint.model.load import SourceFile

if TYPE_CHECKING:
    from policylint.measure.facts import PoolFacts


@dataclass
class LintResult:
    findings: list[Finding]
    sources: dict[str, SourceFile]
    model: Model | None
    documents: int
    files: int
    #: findings hidden by an inline suppression, with its reason (justification)
    suppressed: list[tuple[Finding, str]] = field(default_factory=list)
    #: findings hidden because the baseline file records them
    baselined: list[Finding] = field(default_factory=list)
    #: baseline entries that no longer match any finding (fixed or stale)
    stale_baseline: list[dict[str, str]] = field(default_factory=list)
    #: the facts the rules judged (kept so that --fix reads the same numbers without measuring again)
    views: list[View] = field(default_factory=list)
    #: errors of loading, validation and resolution anywhere in the root, before any filter or scope:
    #: a model built despite them is incomplete (``export`` refuses to write from it)
    model_errors: list[Finding] = field(default_factory=list)
    #: the pooled demand of every pool the rules judged (series included), by ``cluster/pool``, for the HTML report
    pools: dict[str, PoolFacts] = field(default_factory=dict)
