"""Step 5b: evaluate rules against the views of their subjects.

A rule applies to a subject when every fact in ``needs`` is known and the
subject's facts satisfy the ``when`` schema. It then fails when the facts do
not satisfy the ``require`` schema (one finding), or for every problem its
registered check function returns. The schemas are compiled in
:mod:`policylint.engine.conditions`; messages are filled in by
:mod:`policylint.engine.messages`.
"""

from __future__ import annotations

import math
from collections import ChainMap
from collections.abc import Callable, Container, Iterable, Mapping
from types import MappingProxyType
from typing import Any, cast

from policylint.engine.checks import CHECKS
from policylint.engine.conditions import _substitute, compile_schema, memo
from policylint.engine.messages import render
from policylint.engine.rule import Rule
from policylint.engine.view import View
from policylint.finding import Finding, Subject, pool_subject

#: the parameters of a rule without any, one object for every view (compiled conditions are
#: remembered by the identity of their parameters)
_NO_PARAMS: Mapping[str, Any] = MappingProxyType({})


def _applies(rule: Rule, view: View, params: Mapping[str, Any]) -> bool:
    facts = view.facts
    if any(facts.get(n) is None for n in rule.needs):
        return False
    if rule.when:
        return bool(compile_schema(rule.when, params).validate(facts))
    return True


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def require_figures(rule: Rule, fact: str | None, facts: Mapping[str, Any], params: Mapping[str, Any]) -> tuple[float, float] | None:
    """(measured, allowed) of a failed ``require`` on ``fact``, when it compares numbers.

    The allowed value is the limit the condition tested, exactly as tested
    (another fact scaled by its margin, another fact, or a number).
    """
    if fact is None or fact not in rule.require:
        return None
    condition = _substitute(rule.require[fact], params)
    if not isinstance(condition, dict):
        return None
    measured = _number(facts.get(fact))
    allowed: float | None = None
    if isinstance(condition.get("max_over"), dict):
        spec = condition["max_over"]
        other = _number(facts.get(spec.get("field")))
        margin = _number(spec.get("margin", 0))
        allowed = None if other is None or margin is None else other * (1 + margin)
    else:
        for name in ("max_field", "min_field", "below_field"):
            if isinstance(condition.get(name), str):
                allowed = _number(facts.get(condition[name]))
                break
        else:
            for name in ("below", "max", "min"):
                if name in condition:
                    allowed = _number(condition[name])
                    break
    if measured is None or allowed is None:
        return None
    return (measured, allowed)


def _problem_figures(problem: Mapping[str, Any]) -> tuple[float, float] | None:
    raw = problem.get("_figures")
    if not isinstance(raw, tuple) or len(raw) != 2:
        return None
    measured, allowed = _number(raw[0]), _number(raw[1])
    return None if measured is None or allowed is None else (measured, allowed)


def subject_of(view: View) -> Subject:
    """The typed identity of a view's subject: its kind and qualified name (never its label)."""
    if view.target is not None:
        return view.target
    facts = view.facts
    if view.subject == "pool":
        scheduler = facts.get("scheduler")
        return pool_subject(str(facts.get("cluster")), str(facts.get("name")), str(scheduler) if scheduler else None)
    return Subject(view.subject, str(facts.get("name", view.label)))


def evaluate_rule(rule: Rule, view: View, params: Mapping[str, Any]) -> list[Finding]:
    """Findings of one rule on one subject."""
    return evaluate_rule_on(rule, view, params)[1]


def evaluate_rule_on(rule: Rule, view: View, params: Mapping[str, Any]) -> tuple[bool, list[Finding]]:
    """(whether the rule applied to the subject, its findings there)."""
    if not _applies(rule, view, params):
        return False, []
    problems: list[tuple[dict[str, Any], Any, tuple[float, float] | None]] = []
    if rule.require:
        validator = compile_schema(rule.require, params)
        if not validator.validate(view.facts):
            failing = validator.first_failure()
            problems.append(({}, rule.at or failing, require_figures(rule, failing, view.facts, params)))
    if rule.check:
        for problem in CHECKS[rule.check](view.facts, params):
            extra = {k: v for k, v in problem.items() if not k.startswith("_")}
            problems.append((extra, problem.get("_at") or rule.at, _problem_figures(problem)))
    findings = []
    target = subject_of(view)
    for extra, at, figures in problems:
        # looked up in this order, as {**facts, **params, **extra, "subject": ...} would give them
        # (ChainMap only reads the parameters and facts here, never writes them)
        variables = ChainMap({"subject": view.label}, extra, cast("dict[str, Any]", params), cast("dict[str, Any]", view.facts))
        path = at if isinstance(at, tuple) else view.path_of(at)
        findings.append(
            view.doc.finding(
                rule.code,
                render(rule.message, variables),
                path,
                rule=(rule.name, rule.severity),
                hint=render(rule.hint, variables) if rule.hint else "",
                subject=view.label,
                target=target,
                figures=figures,
            )
        )
    return True, findings


#: Per rule code, the subjects (``str(Subject)``) a rule applied to in a run; see :func:`evaluate`.
Applied = dict[str, set[str]]


def evaluate(
    rules: Iterable[Rule],
    views: Iterable[View],
    params: Mapping[str, Mapping[str, Any]],
    applied: Applied | None = None,
    skip: Callable[[View], Container[str]] | None = None,
    given: Mapping[int, Mapping[str, list[Finding]]] | None = None,
    found: Mapping[int, dict[str, list[Finding] | None]] | None = None,
) -> list[Finding]:
    """Run every (non built-in) rule on every view of its subject.

    With ``applied``, records for each rule the subjects it applied to (its
    ``needs`` known and ``when`` met), whether or not it found a problem: a
    passing example proves a rule only if the rule looked at something.
    ``skip(view)`` names rule codes not run on that view (asked once per view);
    the findings of the others come in the same order as without it.
    ``given`` holds, per view (by ``id``), the findings of rules on it known
    beforehand (:mod:`policylint.engine.verdicts`): taken instead of evaluating
    those rules there (not with ``applied``, which needs them run); ``found``
    collects, per view named in it, the findings of each rule code it names there.
    """
    if applied is not None:
        given = None
    by_subject: dict[str, list[View]] = {}
    for view in views:
        by_subject.setdefault(view.subject, []).append(view)
    #: per subject, its views grouped by the set of codes skipped on them (the same object for every
    #: neighbour, so a rule a neighbour skips costs nothing per neighbour): (set, the views' places)
    groups: dict[str, list[tuple[Container[str], list[int]]]] = {}
    if skip is not None:
        for subject, group in by_subject.items():
            by_set: dict[int, tuple[Container[str], list[int]]] = {}  # every set held: ids stay distinct
            each = [skip(view) for view in group]
            for i, codes in enumerate(each):
                by_set.setdefault(id(codes), (codes, []))[1].append(i)
            # one group per view when the sets are not shared
            groups[subject] = list(by_set.values()) if len(by_set) <= 8 else [(c, [i]) for i, c in enumerate(each)]
    findings: list[Finding] = []
    with memo():
        for rule in rules:
            if rule.builtin:
                continue
            values = params.get(rule.code, _NO_PARAMS)
            group = by_subject.get(rule.subject, [])
            if rule.subject in groups:
                # the views this rule is not skipped on, in their order
                taken = [places for codes, places in groups[rule.subject] if rule.code not in codes]
                if len(taken) == 1:
                    group = [group[i] for i in taken[0]]
                elif len(by_subject[rule.subject]) == len(groups[rule.subject]):
                    group = [group[p[0]] for p in taken]  # one group per view, in order
                else:
                    group = [group[i] for i in sorted(i for p in taken for i in p)]
            for view in group:
                known = given.get(id(view)) if given else None
                if known is not None and rule.code in known:
                    findings.extend(known[rule.code])
                    continue
                ran, made = evaluate_rule_on(rule, view, values)
                findings.extend(made)
                slot = found.get(id(view)) if found else None
                if slot is not None and rule.code in slot:
                    slot[rule.code] = made
                if ran and applied is not None:
                    applied.setdefault(rule.code, set()).add(str(subject_of(view)))
    return findings
