"""The planning sequence: lint, measure, plan, write the planned repository, check it.

One sequence behind ``policylint plan`` (:mod:`policylint.commands.plan`) and the
review page's plan section (:mod:`policylint.report.plan_section`); it lives in the
plan package so the report never imports a command.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from policylint.writer import write_file

if TYPE_CHECKING:
    from policylint.finding import Finding
    from policylint.engine.result import LintResult
    from policylint.model import Model
    from policylint.plan import Plan, Unplaced, WhatIf

__all__ = ["Planned", "Refused", "planned", "savings_words"]


def _session(path: Path, args: argparse.Namespace, *, config: Path | None, root: Path | None) -> Any:
    from policylint.session import Session

    return Session.from_args(
        argparse.Namespace(paths=[path], config=config, isolated=args.isolated, root=root, now=args.now)
    )


def _refuse(result: LintResult) -> bool:
    """Print the errors that leave the model incomplete; True when there are any.

    Errors inside the documents the plan replaces (clusters, proposals, scheduler
    manifests) do not count: the plan is made without them.
    """
    from policylint.errors import escape_controls
    from policylint.finding import Severity
    from policylint.plan import replaced_document

    def placement(f: Finding) -> bool | None:
        """For a Workload's PL020: whether the plan places it anew; None for any other finding."""
        source = result.sources.get(f.file)
        docs = [d for d in source.documents if d.index == f.doc_index] if source is not None else []
        if not docs:
            return False
        if docs[0].is_policylint and docs[0].kind == "Workload" and f.code == "PL020":
            # no placement, or one in a cluster or pool not declared: the plan places the workload anew
            return f.doc_path == "spec" or f.doc_path.split("/")[:2] in (["spec", "cluster"], ["spec", "pool"], ["spec", "queue"])
        return None if replaced_document(docs[0]) else False

    def replaced(f: Finding) -> bool:
        return placement(f) is not False

    errors = [f for f in result.model_errors if f.severity >= Severity.ERROR and not replaced(f)]
    if not errors:
        # Nothing the user wrote disappears silently: a proposal or cluster the plan replaces is
        # still today's, and one with an error is missing from today's figures - say which.
        # Only errors that keep a document out of the model (it did not load, validate or
        # resolve: PL001-PL029); a workload placed anew is named by the plan itself.
        left_out = [f for f in result.model_errors
                    if f.severity >= Severity.ERROR and _left_out_code(f.code) and placement(f) is None]
        for f in left_out:
            sys.stderr.write(
                escape_controls(f"policylint: plan: not in today's figures: {f.file}:{f.line}:{f.column}: {f.code} {f.message}")
                + "\n"
            )
        return False
    for f in errors:
        sys.stderr.write(escape_controls(f"{f.file}:{f.line}:{f.column}: {f.code} {f.message}") + "\n")
    n = len(errors)
    sys.stderr.write(
        f"policylint: the capacity model has {n} error{'s' if n != 1 else ''}; no plan (fix them, `policylint check` shows them)\n"
    )
    return True


def _left_out_code(code: str) -> bool:
    """A built-in check whose error leaves its document out of the model (loading, validation, references)."""
    return code.startswith("PL0") and code[2:].isdigit() and int(code[2:]) < 30


@dataclass
class Planned:
    """What :func:`planned` made: the plan, its JSON document and the checked planned repository.

    ``planned_root`` exists only inside the ``with`` block that made it.
    """

    result: LintResult
    model: Model
    plan: Plan
    checked: LintResult
    remaining: list[Finding]
    document: dict[str, Any]
    clusters_text: str
    root: Path
    planned_root: Path


class Refused(Exception):
    """The model has errors that leave it incomplete (already printed on stderr): no plan."""


@contextlib.contextmanager
def planned(
    path: Path,
    args: argparse.Namespace,
    *,
    whatif: WhatIf,
    unplaced: Unplaced,
    when: dt.datetime | None = None,
    hint: str = "",
    current: Callable[[LintResult, Path], list[Finding]] | None = None,
) -> Iterator[Planned]:
    """Plan the repository at ``path``, write it to a scratch folder and check it there.

    The one sequence behind ``policylint plan`` and the review page's plan section:
    lint and measure the repository as ``check`` does, build the plan, write the planned
    repository, take the queue depths its check asks for, check it again and compare it
    with today. ``args`` carries ``config``, ``isolated``, ``root`` and ``now``;
    ``when`` is the instant to judge at when the caller fixed one; ``current`` chooses
    the findings of today the comparison shows (default: as linted). Raises
    :class:`Refused` for a model with errors and ``PolicylintError`` for nothing to plan.
    """
    import tempfile

    from policylint.errors import PolicylintError
    from policylint.measure.run import measure
    from policylint.plan import (
        Thresholds,
        apply_depths,
        build_plan,
        cluster_yaml,
        compare,
        to_dict,
        write_repository,
    )
    from policylint.plan.verdict import answered_for

    session = _session(path, args, config=args.config, root=args.root)
    config, options = session.config, session.options
    now = options.now or when or dt.datetime.now(dt.timezone.utc)
    options.now = now
    result = session.lint()
    if _refuse(result):
        raise Refused
    model = result.model
    assert model is not None
    if not model.workloads:
        raise PolicylintError(f"nothing to plan: no Workload in {path.as_posix()}")
    facts, _ = measure(model, now, limits=config.trace_limits())
    ruleset = options.ruleset
    thresholds = Thresholds.from_params(ruleset.params if ruleset is not None else {})
    plan = build_plan(model, facts, whatif, thresholds, unplaced)
    if not plan.pools:
        raise PolicylintError(f"nothing to plan: no workload of {path.as_posix()} has a GPU type{hint}")
    root = Path(config.root)
    config_file = Path(config.path) if config.path else None
    with tempfile.TemporaryDirectory(prefix="policylint-plan-") as scratch:
        planned_root = Path(scratch) / "repository"
        planned_config: Path | None = None
        if config_file is not None and args.config is not None:
            try:
                planned_config = planned_root / config_file.resolve().relative_to(root.resolve())
            except ValueError:
                planned_config = config_file  # a configuration outside the repository is used as it is
        clusters_file = write_repository(plan, model, result.sources.values(), root, planned_root, cluster_yaml(plan, model))
        first = _lint_planned(planned_root, args, planned_config, now)
        needed = {v.facts["name"]: v.facts.get("queue_depth_needed") for v in first.views if v.subject == "workload"}
        apply_depths(plan, needed)
        clusters_text = cluster_yaml(plan, model)
        write_file(clusters_file, clusters_text, root=planned_root, links="replace", what="the planned clusters file")
        checked = _lint_planned(planned_root, args, planned_config, now)
        answered = answered_for(result, checked, plan, ruleset.rules if ruleset is not None else {})
        remaining = [a.finding for a in answered] + _broken(checked, plan)
        today = current(result, root) if current is not None else result.findings
        document = {
            "version": 1,
            "repository": path.as_posix(),
            "plan": to_dict(plan),
            "comparison": compare(plan, model, today, checked.findings),
            "check": _verification(checked.findings, remaining, {id(a.finding): a.because for a in answered}),
        }
        yield Planned(result, model, plan, checked, remaining, document, clusters_text, root, planned_root)


def _broken(checked: LintResult, plan: Plan) -> list[Finding]:
    """Load, schema and reference errors of the planned repository: a plan that does not load is no plan.

    A workload the plan could not place keeps its old placement, whose cluster is gone:
    that reference error is the workload's, already reported as not planned.
    """
    from policylint.finding import Severity

    def unplaced(f: Finding) -> bool:
        source = checked.sources.get(f.file)
        docs = [d for d in source.documents if d.index == f.doc_index] if source is not None else []
        return f.code == "PL020" and bool(docs) and docs[0].kind == "Workload" and docs[0].name in plan.unplaced

    # model errors are PL0xx codes, never one of SIZING_RULES: nothing is counted twice
    return [f for f in checked.model_errors if f.severity >= Severity.ERROR and not unplaced(f)]


def _lint_planned(root: Path, args: argparse.Namespace, config: Path | None, now: Any) -> LintResult:
    """``check`` on the planned repository, with the same configuration and date."""
    session = _session(root, args, config=config, root=root)
    session.options.now = now
    session.config.now = now
    result: LintResult = session.lint()
    return result


def _verification(findings: list[Finding], remaining: list[Finding], because: dict[int, str | None]) -> dict[str, Any]:
    """What ``check`` says about the planned repository: the findings the plan answers for, the rest by code.

    ``remaining`` are the plan's (:mod:`policylint.plan.verdict`, and errors that keep the
    planned repository from loading); ``because`` says, by finding identity, why a finding
    outside the sizing rules is the plan's. Every other finding is counted, by code, as the
    repository's own, even where its rule also has a finding that is the plan's.
    """
    mine = {_key(f) for f in remaining}
    by_code: dict[str, int] = {}
    for f in findings:
        if _key(f) not in mine:
            by_code[f.code] = by_code.get(f.code, 0) + 1
    return {
        "sizing_findings": [
            {"code": f.code, "name": f.name, "subject": f.subject, "message": f.message, "because": because.get(id(f))}
            for f in sorted(remaining, key=lambda f: (f.code, f.subject, f.message))
        ],
        "passes": not remaining,
        "other_findings_by_code": {k: by_code[k] for k in sorted(by_code)},
    }


def _key(f: Finding) -> tuple[str, str, str, int, int, str]:
    return (f.code, f.subject, f.file, f.line, f.column, f.message)


def savings_words(saves: dict[str, int]) -> str:
    """What the plan saves (or costs) against today, in words."""
    reserved, total = saves["reserved_gpus"], saves["total_gpus"]
    first = (
        f"saves {reserved} reserved and proposed GPUs"
        if reserved >= 0
        else f"reserves {-reserved} GPUs more than are reserved and proposed today"
    )
    second = f"saves {total} GPUs in all" if total >= 0 else f"needs {-total} GPUs more in all"
    return f"the plan {first}; it {second}"
