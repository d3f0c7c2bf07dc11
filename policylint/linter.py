"""The pipeline: load -> validate -> resolve -> measure -> evaluate -> filter.

:func:`lint` wires the steps together and returns a :class:`LintResult` that the
reporters consume. Each step lives in its own module; this one only decides the
order and what flows between them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from pathlib import Path

from policylint.errors import PolicylintError
from policylint.finding import Finding, sort_findings
from policylint.load import (
    Document,
    LoadLimits,
    SourceFile,
    discover,
    display_path,
    is_scheduler_doc,
    load_file,
    looks_relevant,
)
from policylint.model import Model

if TYPE_CHECKING:
    from policylint.history import Change
    from policylint.measure import PoolFacts
    from policylint.readers.limits import TraceLimits
    from policylint.ruleset import RuleSet
    from policylint.views import View


@dataclass
class LintOptions:
    """Everything a run needs besides the paths."""

    root: Path
    exclude: Sequence[str] = ()
    limits: LoadLimits = field(default_factory=LoadLimits)
    now: dt.datetime | None = None
    ruleset: RuleSet | None = None  # None: structural checks only
    selected: set[str] | None = None  # rule codes that run (None: all)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    baseline: Path | None = None
    change: Change | None = None  # --diff: files changed since a base revision
    gpu_resources: tuple[str, ...] = ()  # scheduler resources counted as GPUs (empty: default)
    trace_limits: TraceLimits | None = None  # bounds for reading measurements (None: the readers' defaults)
    cache_dir: Path | None = None  # measurement cache folder (None: measure everything afresh)
    jobs: int = 1  # processes measuring workloads (results identical to 1)


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
    #: the pooled demand of every pool the rules judged (series included), by ``cluster/pool``, for the HTML report
    pools: dict[str, PoolFacts] = field(default_factory=dict)


def load_sources(paths: Sequence[Path], options: LintOptions) -> list[SourceFile]:
    """Discover and parse files; keep those that hold policylint input."""
    sources: list[SourceFile] = []
    for path, explicit in discover(paths, options.exclude, options.root):
        source = load_file(path, display_path(path), options.limits)
        if explicit or looks_relevant(source):
            sources.append(source)
    return sources


def lint(paths: Sequence[Path], options: LintOptions) -> LintResult:
    """Run the whole pipeline over ``paths``.

    Raises :class:`PolicylintError` when nothing policylint can read was found:
    a gate that passes on nothing would hide a misconfigured path.
    """
    from policylint.resolve import resolve
    from policylint.validate import validate_document

    sources = load_sources(paths, options)
    findings: list[Finding] = []
    valid: list[Document] = []
    scheduler_docs: list[Document] = []
    broken: dict[str, set[str]] = {}
    n_docs = 0
    for source in sources:
        findings.extend(source.findings)
        for doc in source.documents:
            if not doc.is_policylint:
                if is_scheduler_doc(doc):
                    scheduler_docs.append(doc)
                continue
            n_docs += 1
            problems = validate_document(doc)
            if problems:
                findings.extend(problems)
                if doc.kind and doc.name:
                    broken.setdefault(doc.kind, set()).add(doc.name)
            else:
                valid.append(doc)
    if n_docs == 0 and not findings and not scheduler_docs:
        shown = ", ".join(str(p) for p in paths)
        raise PolicylintError(
            f"no policylint documents found in {shown} (looked for YAML files with apiVersion: policylint/v1)"
        )
    model, problems = resolve(valid, options.root, broken, scheduler_docs, options.gpu_resources)
    findings.extend(problems)
    result = LintResult(
        findings=[],
        sources={s.display: s for s in sources},
        model=model,
        documents=n_docs + len(scheduler_docs),
        files=len(sources),
    )
    if options.ruleset is None:
        result.findings = sort_findings(findings)
        return result
    judged, result.views, result.pools = judge(model, options)
    findings.extend(judged)
    from policylint.filter import FilterSettings, apply_filters

    now = options.now or dt.datetime.now(dt.timezone.utc)
    settings = FilterSettings(
        selected=options.selected if options.selected is not None else set(options.ruleset.rules),
        per_file_ignores=options.per_file_ignores,
        root=options.root,
        today=now.date(),
        baseline=options.baseline,
    )
    reported, suppressed, baselined, stale = apply_filters(findings, result.sources, options.ruleset, settings)
    result.findings = sort_findings(reported)
    result.suppressed = sorted(suppressed, key=lambda x: x[0].sort_key())
    result.baselined = sort_findings(baselined)
    result.stale_baseline = stale
    return result


def judge(model: Model, options: LintOptions) -> tuple[list[Finding], list[View], dict[str, PoolFacts]]:
    """Measure (once per run), build views and evaluate every rule (the filter selects); the views and pooled demand come back too."""
    from policylint.evaluate import evaluate
    from policylint.measure import measure, measure_pools
    from policylint.views import build_views

    assert options.ruleset is not None
    now = options.now or dt.datetime.now(dt.timezone.utc)
    # Every rule runs; selection happens in the filter step, after suppressions are matched.
    rules = [r for r in options.ruleset.sorted() if not r.builtin]
    facts, findings = measure(
        model, now, limits=options.trace_limits, cache_dir=options.cache_dir, jobs=options.jobs
    )
    pools = measure_pools(model, facts)
    history = None
    if options.change is not None:
        import os

        from policylint.history import previous_reserved
        from policylint.views import History

        history = History(
            reserved_before=previous_reserved(options.change, model),
            changed_files=frozenset(os.path.realpath(p) for p in options.change.files),
        )
    views = build_views(model, facts, now, history, pools)
    findings.extend(evaluate(rules, views, options.ruleset.params))
    return findings, views, pools
