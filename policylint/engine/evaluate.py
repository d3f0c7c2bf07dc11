"""Step 5: evaluate rules against the views of their subjects.

A rule applies to a subject when every fact in ``needs`` is known and the
subject's facts satisfy the ``when`` schema. It then fails when the facts do
not satisfy the ``require`` schema (one finding), or for every problem its
registered check function returns. Schemas are cerberus schemas; the few
comparisons cerberus lacks (one fact against another, scaled by a parameter)
are added as custom rules on :class:`FactValidator`. Parameters are referenced
in schemas as ``"$name"`` and substituted before validation - data, not code.
"""

from __future__ import annotations

import functools
import json
import math
import string
from collections import ChainMap
from collections.abc import Callable, Container, Iterable, Mapping
from types import MappingProxyType
from typing import Any, cast

from policylint.finding import Finding, Subject, pool_subject
from policylint.engine.rule import Rule
from policylint.engine.views import View

# Comparisons between facts allow this much float noise (0.1 + 0.2 vs 0.3), nothing more:
# facts are never rounded before a verdict, and 19.996 stays below 20.
_EPS = 1e-9


@functools.cache
def _validator_class() -> Any:
    import cerberus

    class FactValidator(cerberus.Validator):  # type: ignore[misc]
        """cerberus plus comparisons between facts."""

        def _other(self, name: str) -> Any:
            return self.root_document.get(name) if self.root_document else None

        def _validate_max_over(self, spec: Any, field: str, value: Any) -> None:
            """Value must not exceed another fact scaled by (1 + margin).

            The rule's arguments are validated against this schema:
            {'type': 'dict', 'schema': {'field': {'type': 'string', 'required': True},
             'margin': {'type': 'number'}}}
            """
            other = self._other(spec["field"])
            if other is None or value is None:
                return
            limit = other * (1 + spec.get("margin", 0))
            if value > limit + _EPS:
                self._error(field, f"{value} exceeds {spec['field']} ({other}) + {spec.get('margin', 0):.0%}")

        def _validate_min_field(self, other_name: Any, field: str, value: Any) -> None:
            """Value must be at least another fact.

            The rule's arguments are validated against this schema:
            {'type': 'string'}
            """
            other = self._other(other_name)
            if other is not None and value is not None and value < other - _EPS:
                self._error(field, f"{value} is below {other_name} ({other})")

        def _validate_max_field(self, other_name: Any, field: str, value: Any) -> None:
            """Value must be at most another fact.

            The rule's arguments are validated against this schema:
            {'type': 'string'}
            """
            other = self._other(other_name)
            if other is not None and value is not None and value > other + _EPS:
                self._error(field, f"{value} is above {other_name} ({other})")

        def _validate_below_field(self, other_name: Any, field: str, value: Any) -> None:
            """Value must be strictly below another fact (exactly: equal is not below).

            The rule's arguments are validated against this schema:
            {'type': 'string'}
            """
            other = self._other(other_name)
            if other is not None and value is not None and not value < other:
                self._error(field, f"{value} is not below {other_name} ({other})")

        def _validate_below(self, limit: Any, field: str, value: Any) -> None:
            """Value must be strictly below a number.

            The rule's arguments are validated against this schema:
            {'type': 'number'}
            """
            if value is not None and not value < limit:
                self._error(field, f"{value} is not below {limit}")

        def _validate_excludes_all(self, items: Any, field: str, value: Any) -> None:
            """A list must not contain all of these items together.

            The rule's arguments are validated against this schema:
            {'type': 'list'}
            """
            if isinstance(value, list) and all(item in value for item in items):
                self._error(field, f"contains all of {items}")

    return FactValidator


def _substitute(node: Any, params: Mapping[str, Any]) -> Any:
    if isinstance(node, str) and node.startswith("$") and node[1:].isidentifier():
        name = node[1:]
        if name not in params:
            raise KeyError(f"unknown parameter '${name}'")
        return params[name]
    if isinstance(node, dict):
        return {k: _substitute(v, params) for k, v in node.items()}
    if isinstance(node, list):
        return [_substitute(v, params) for v in node]
    return node


def compile_schema(schema: Mapping[str, Any], params: Mapping[str, Any]) -> _Condition:
    """A validator for ``schema`` with ``$param`` references filled in.

    Raises ValueError when cerberus rejects the schema.
    """
    import cerberus

    memo = _MEMO
    if memo is not None:
        hit = memo.get((id(schema), id(params)))
        if hit is not None and hit[0] is schema and hit[1] is params:
            return hit[2]
    key = json.dumps([schema, params], sort_keys=True, default=str)
    try:
        condition = _compile(key)
    except cerberus.SchemaError as exc:
        raise ValueError(str(exc)) from None
    if memo is not None:
        # the entry holds schema and parameters, so their ids name them for as long as it lives
        memo[(id(schema), id(params))] = (schema, params, condition)
    return condition


def trust_conditions(conditions: Iterable[tuple[Mapping[str, Any], Mapping[str, Any]]]) -> None:
    """Tell cerberus that these (schema, parameters) conditions were already judged valid.

    cerberus checks every schema against its own meta-schema before use and
    remembers, per process, the hashes of schemas that passed. The hashes are of
    Python objects (not stable across processes), so the rule cache stores the
    fact "every condition of this rule set compiled" and this marks the conditions
    again here: the validators are then built without the check. Only for a cached
    rule set whose key (same code, same cerberus, same rule files and overrides)
    proves that this exact set compiled before (:mod:`policylint.cache.rules`).
    """
    from cerberus.schema import DefinitionSchema
    from cerberus.utils import mapping_hash

    validator = _validator_class()
    types = mapping_hash(validator.types_mapping)
    for schema, params in conditions:
        expanded = DefinitionSchema.expand(_substitute(schema, params))
        validator._valid_schemas.add((mapping_hash(expanded), types))


#: Within one :func:`evaluate` call, compiled conditions by the identity of their schema and
#: parameters: the same rule meets thousands of views, and its cache key (the schema and
#: parameters as JSON) cost more to build than the lookup it serves.
_MEMO: dict[tuple[int, int], tuple[Any, Any, _Condition]] | None = None
#: the parameters of a rule without any, one object for every view (see _MEMO)
_NO_PARAMS: Mapping[str, Any] = MappingProxyType({})


class _Condition:
    """A compiled schema plus the facts it reads, so only those are validated."""

    def __init__(self, schema: dict[str, Any]) -> None:
        # Facts not named by the schema are allowed; facts are never coerced.
        self.validator = _validator_class()(schema, allow_unknown=True)
        self.fields = sorted(set(schema) | _referenced(schema))

    def validate(self, facts: Mapping[str, Any]) -> bool:
        # Validating a projection without normalisation keeps cerberus fast: it
        # would otherwise copy and normalise every fact of the view on each call.
        projected = {k: facts[k] for k in self.fields if k in facts}
        return bool(self.validator.validate(projected, normalize=False))

    @property
    def errors(self) -> dict[str, Any]:
        return dict(self.validator.errors)


def _referenced(node: Any) -> set[str]:
    """Facts named as the other side of a comparison (field, min_field, max_field)."""
    out: set[str] = set()
    if isinstance(node, dict):
        for k, v in node.items():
            if k in ("field", "min_field", "max_field", "below_field") and isinstance(v, str):
                out.add(v)
            out |= _referenced(v)
    elif isinstance(node, list):
        for v in node:
            out |= _referenced(v)
    return out


@functools.lru_cache(maxsize=512)
def _compile(key: str) -> _Condition:
    schema, params = json.loads(key)
    return _Condition(_substitute(schema, params))


class _SafeFormatter(string.Formatter):
    """str.format restricted to plain names; numbers are tidied for reading.

    ``{n:plural:GPU}`` writes the number with its noun, singular for exactly one
    ("1 GPU", "3 GPUs"); an irregular plural follows a second colon
    (``{n:plural:entry:entries}``). ``{x:share}`` writes a share of work (0..1) as a
    percentage that never reads 0% or 100% unless it is exactly that
    (:func:`policylint.engine.checks.format_share`, the one function every message uses).
    """

    def get_field(self, field_name: str, args: Any, kwargs: Any) -> Any:
        if not field_name.isidentifier():
            raise KeyError(field_name)
        return kwargs.get(field_name, f"{{{field_name}}}"), field_name

    def format_field(self, value: Any, format_spec: str) -> Any:
        if format_spec.startswith("plural:"):
            return _plural(value, *format_spec.split(":")[1:3])
        if format_spec == "share":
            from policylint.engine.checks import format_share

            return format_share(value)
        if format_spec and (value is None or isinstance(value, float) and math.isinf(value)):
            return _plain(value)  # "unknown" / "unbounded", whatever the number format
        if format_spec:
            try:
                return super().format_field(value, format_spec)
            except (ValueError, TypeError):
                return str(value)
        return _plain(value)


def _plural(value: Any, word: str, plural: str | None = None) -> str:
    """``1 GPU``, ``2 GPUs``, ``unknown GPUs``; ``plural`` when adding "s" is wrong."""
    text = _plain(value)
    # Decided on the number as shown, so that 1.001 (shown "1") reads "1 GPU".
    return f"{text} {word if text == '1' else (plural or word + 's')}"


def _plain(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return "unknown" if value is None else str(value).lower()
    if isinstance(value, float):
        if math.isinf(value):
            return "unbounded"
        if value.is_integer():
            return str(int(value))
        return f"{value:.2f}".rstrip("0").rstrip(".")
    if isinstance(value, list):
        return ", ".join(_plain(v) for v in value) or "none"
    return str(value)


_FORMATTER = _SafeFormatter()


def render(template: str, variables: Mapping[str, Any]) -> str:
    """Fill a rule's message template (plain names only, never attribute access).

    ``variables`` is only looked up by name (:meth:`_SafeFormatter.get_field`),
    never copied: a finding's variables are a view of its facts, not a copy of them.
    """
    return _FORMATTER.vformat(template, (), variables)


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
            errors = validator.errors  # cerberus formats its error tree on every access
            failing = sorted(errors)[0] if errors else None
            problems.append(({}, rule.at or failing, require_figures(rule, failing, view.facts, params)))
    if rule.check:
        from policylint.engine.checks import CHECKS

        for problem in CHECKS[rule.check](view.facts, params):
            extra = {k: v for k, v in problem.items() if not k.startswith("_")}
            problems.append((extra, problem.get("_at") or rule.at, _problem_figures(problem)))
    findings = []
    target = subject_of(view)
    for extra, at, figures in problems:
        # looked up in this order, as {**facts, **params, **extra, "subject": ...} would give them
        # (ChainMap only reads the parameters here, never writes them)
        variables = ChainMap({"subject": view.label}, extra, cast("dict[str, Any]", params), view.facts)
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
) -> list[Finding]:
    """Run every (non built-in) rule on every view of its subject.

    With ``applied``, records for each rule the subjects it applied to (its
    ``needs`` known and ``when`` met), whether or not it found a problem: a
    passing example proves a rule only if the rule looked at something.
    ``skip(view)`` names rule codes not run on that view (asked once per view);
    the findings of the others come in the same order as without it.
    """
    by_subject: dict[str, list[View]] = {}
    for view in views:
        by_subject.setdefault(view.subject, []).append(view)
    skipped: dict[int, Container[str]] = {}
    if skip is not None:
        skipped = {id(view): skip(view) for group in by_subject.values() for view in group}
    findings: list[Finding] = []
    global _MEMO
    outer, _MEMO = _MEMO, {}
    try:
        for rule in rules:
            if rule.builtin:
                continue
            values = params.get(rule.code, _NO_PARAMS)
            for view in by_subject.get(rule.subject, []):
                if skipped and rule.code in skipped[id(view)]:
                    continue
                ran, found = evaluate_rule_on(rule, view, values)
                findings.extend(found)
                if ran and applied is not None:
                    applied.setdefault(rule.code, set()).add(str(subject_of(view)))
    finally:
        _MEMO = outer
    return findings


# -- what a rule reads ------------------------------------------------------------------------

#: cerberus rules whose argument names other fields of the document (facts, here)
_CROSS_FIELD = ("dependencies", "excludes")


def _schema_facts(node: Any) -> set[str]:
    """Facts a ``when``/``require`` schema reads: its top-level names and every fact a comparison names."""
    if not isinstance(node, dict):
        return set()
    out = set(node) | _referenced(node)

    def walk(item: Any) -> None:
        if isinstance(item, dict):
            for key, value in item.items():
                if key in _CROSS_FIELD:
                    if isinstance(value, str):
                        out.add(value)
                    elif isinstance(value, (list, dict)):
                        out.update(str(v) for v in value)
                walk(value)
        elif isinstance(item, list):
            for value in item:
                walk(value)

    walk(node)
    return out


def _template_names(template: str) -> set[str]:
    """The variables a message template names (facts, parameters, check variables alike)."""
    try:
        return {name for _, name, _, _ in string.Formatter().parse(template) if name}
    except ValueError:
        return set()


@functools.cache
def check_reads(name: str) -> frozenset[str] | None:
    """The facts a registered check function reads, from its source; None when that cannot be told.

    Only reads by a constant name count (``facts["x"]``, ``facts.get("x")``); any
    other use of the facts (a computed name, handing them to another function,
    iterating over them) makes the answer None, which callers take as "any fact".
    """
    import ast
    import inspect
    import textwrap

    from policylint.engine.checks import CHECKS

    function = CHECKS.get(name)
    if function is None:
        return None
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    except (OSError, TypeError, SyntaxError):
        return None
    definition = tree.body[0] if tree.body else None
    if not isinstance(definition, ast.FunctionDef) or not definition.args.args:
        return None
    argument = definition.args.args[0].arg
    reads: set[str] = set()
    allowed: set[int] = set()  # the Name nodes used in a recognised read
    for node in ast.walk(definition):
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and node.value.id == argument
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, str)
        ):
            reads.add(node.slice.value)
            allowed.add(id(node.value))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == argument
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            reads.add(node.args[0].value)
            allowed.add(id(node.func.value))
    for node in ast.walk(definition):
        if isinstance(node, ast.Name) and node.id == argument and id(node) not in allowed:
            return None
    return frozenset(reads)


def facts_read(rule: Rule) -> frozenset[str] | None:
    """Every fact a rule's verdict, location and message on a view can depend on; None: any fact.

    From the rule's metadata: ``needs``, the ``when`` and ``require`` schemas
    (names and the facts their comparisons name), ``at``, the message and hint
    templates, and the facts its check function reads (:func:`check_reads`).
    Names that are parameters or check variables come along; they match no fact.
    """
    names = set(rule.needs) | _schema_facts(rule.when) | _schema_facts(rule.require)
    names |= _template_names(rule.message) | _template_names(rule.hint)
    if rule.at:
        names.add(rule.at)
    if rule.check:
        reads = check_reads(rule.check)
        if reads is None:
            return None
        names |= reads
    return frozenset(names)
