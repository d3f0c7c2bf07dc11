"""Rule conditions: cerberus schemas over a subject's facts, with ``$parameters`` filled in.

A rule's ``when`` and ``require`` are cerberus schemas; the few comparisons
cerberus lacks (one fact against another, scaled by a parameter) are custom rules
on the validator class. Parameters are referenced in schemas as ``"$name"`` and
substituted before validation - data, not code. Compiled conditions are cached
by their schema and parameters.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from policylint.engine.plain_conditions import FACT_EPS as _EPS
from policylint.engine.plain_conditions import failures_of, verdict_of


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
    memo = _MEMO
    if memo is not None:
        hit = memo.get((id(schema), id(params)))
        if hit is not None and hit[0] is schema and hit[1] is params:
            return hit[2]
    key = _condition_key(schema, params)
    try:
        condition = _compile(key)
    except Exception as exc:
        import cerberus

        if isinstance(exc, cerberus.SchemaError):
            raise ValueError(str(exc)) from None
        raise
    if memo is not None:
        # the entry holds schema and parameters, so their ids name them for as long as it lives
        memo[(id(schema), id(params))] = (schema, params, condition)
    return condition


#: Within one :func:`memo` block (one :func:`policylint.engine.evaluate.evaluate` call), compiled
#: conditions by the identity of their schema and parameters: the same rule meets thousands of
#: views, and its cache key (the schema and parameters as JSON) cost more to build than the
#: lookup it serves.
_MEMO: dict[tuple[int, int], tuple[Any, Any, _Condition]] | None = None


#: conditions a cached rule set proved valid, by their compile key (see :func:`compile_schema`)
_TRUSTED: set[str] = set()

#: of those, the plain ones (:mod:`policylint.engine.plain_conditions`): their schema as cerberus
#: expanded it, by compile key - judged without cerberus being imported at all
_PLAIN: dict[str, dict[str, Any]] = {}


def _condition_key(schema: Mapping[str, Any], params: Mapping[str, Any]) -> str:
    return json.dumps([schema, params], sort_keys=True, default=str)


def trust_conditions(conditions: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]], forms: Any = None) -> None:
    """Tell cerberus that these (schema, parameters) conditions were already judged valid.

    cerberus checks every schema against its own meta-schema before use and
    remembers, per process, the hashes of schemas that passed. The hashes are of
    Python objects (not stable across processes), so the rule cache stores the
    fact "every condition of this rule set compiled" and the conditions are marked
    again in this process: their validators are then built without the check.
    Only for a cached rule set whose key (same code, same cerberus, same rule
    files and overrides) proves that this exact set compiled before
    (:mod:`policylint.engine.rule_cache`).

    Each condition is marked when it is first compiled (:func:`_compile`), so a
    run that judges only a few subjects expands only the schemas it uses.

    ``forms`` are the conditions' :func:`plain_forms`, kept by the rule cache with
    them: a plain condition given its expanded schema is judged, failing fields
    included, without cerberus (which is imported only if a condition needs it).
    Forms of any other shape, or that do not fit their conditions, are ignored.
    """
    keys = [_condition_key(schema, params) for schema, params in conditions]
    _TRUSTED.update(keys)
    if not isinstance(forms, list) or len(forms) != len(keys):
        return
    plain: dict[str, dict[str, Any]] = {}
    for key, form in zip(keys, forms):
        if form is None:
            continue
        expanded = _plain_form(form)
        if expanded is None:
            return
        plain[key] = expanded
    _PLAIN.update(plain)


def plain_forms(conditions: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]]) -> list[str | None]:
    """Per condition, its schema as cerberus expanded it, as JSON text, when it is plain; else None.

    Kept by the rule cache beside a rule set all of whose conditions compiled
    (:func:`trust_conditions` takes them back). Only a form JSON gives back exactly
    (the same types, the same order: Python's literal text of both is compared) is
    kept; a condition that raises when compiled gets None.
    """
    out: list[str | None] = []
    for schema, params in conditions:
        try:
            condition = compile_schema(schema, params)
        except (ValueError, KeyError):
            out.append(None)
            continue
        if condition.verdict is None:
            out.append(None)
            continue
        expanded = {field: dict(rules) for field, rules in condition.validator.schema.items()}
        try:
            text = json.dumps(expanded, allow_nan=False)
        except (TypeError, ValueError):
            out.append(None)
            continue
        back = _plain_form(text)
        out.append(text if back is not None and repr(back) == repr(expanded) else None)
    return out


def _plain_form(text: Any) -> dict[str, dict[str, Any]] | None:
    """A kept plain form read back: a mapping of field names to rule mappings a plain verdict handles; else None."""
    if not isinstance(text, str):
        return None
    try:
        form = json.loads(text)
    except ValueError:
        return None
    if not isinstance(form, dict) or not all(isinstance(rules, dict) for rules in form.values()):
        return None
    return form if failures_of(form) is not None else None


def _mark_trusted(schema: Mapping[str, Any]) -> None:
    """Mark one trusted condition (parameters filled in) as valid in cerberus; if that fails, cerberus checks it."""
    try:
        from cerberus.schema import DefinitionSchema
        from cerberus.utils import mapping_hash

        validator = _validator_class()
        expanded = DefinitionSchema.expand(schema)
        validator._valid_schemas.add((mapping_hash(expanded), mapping_hash(validator.types_mapping)))
    except Exception:  # noqa: BLE001 - marking only spares a check; an unmarked schema is checked as without a cache
        return


@contextlib.contextmanager
def memo() -> Iterator[None]:
    """Remember compiled conditions by identity while the block runs (nested blocks keep their own)."""
    global _MEMO
    outer, _MEMO = _MEMO, {}
    try:
        yield
    finally:
        _MEMO = outer


class _Condition:
    """A compiled schema plus the facts it reads, so only those are validated.

    ``expanded`` (a trusted plain condition's schema as cerberus expanded it, kept by
    the rule cache) spares building the cerberus validator: it is then built only if
    the condition's cerberus errors are read.
    """

    def __init__(self, schema: dict[str, Any], expanded: dict[str, Any] | None = None, trusted: bool = False) -> None:
        self._schema = schema
        self._trusted = trusted
        self._validator: Any = None
        if expanded is None:
            # Facts not named by the schema are allowed; facts are never coerced.
            self._validator = _validator_class()(schema, allow_unknown=True)
            expanded = self._validator.schema
        self.fields = sorted(set(schema) | _referenced(schema))
        # the verdict without a cerberus run, for conditions of plain rules (policylint.engine.plain_conditions)
        self.verdict = verdict_of(expanded)
        self.failures = failures_of(expanded)
        #: the facts last judged by ``verdict``: cerberus judges them again only if the errors are read
        self.pending: dict[str, Any] | None = None

    @property
    def validator(self) -> Any:
        """The cerberus validator of the schema, built when first asked for (a plain condition's errors)."""
        if self._validator is None:
            # copies: expanding may rewrite a schema, and ``fields`` were read from this one
            if self._trusted:
                _mark_trusted(copy.deepcopy(self._schema))
            self._validator = _validator_class()(copy.deepcopy(self._schema), allow_unknown=True)
        return self._validator

    def validate(self, facts: Mapping[str, Any]) -> bool:
        # Validating a projection without normalisation keeps cerberus fast: it
        # would otherwise copy and normalise every fact of the view on each call.
        projected = {k: facts[k] for k in self.fields if k in facts}
        if self.verdict is not None:
            self.pending = projected
            return self.verdict(projected)
        return bool(self.validator.validate(projected, normalize=False))

    @property
    def errors(self) -> dict[str, Any]:
        if self.pending is not None:
            pending, self.pending = self.pending, None
            self.validator.validate(pending, normalize=False)
        return dict(self.validator.errors)

    def first_failure(self) -> str | None:
        """The first (sorted) field the last failed :meth:`validate` named: a plain condition's without cerberus."""
        if self.failures is not None and self.pending is not None:
            pending, self.pending = self.pending, None
            failed = self.failures(pending)
        else:
            failed = sorted(self.errors)
        return failed[0] if failed else None


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
    if key in _TRUSTED:
        expanded = _PLAIN.get(key)
        if expanded is not None:
            return _Condition(_substitute(schema, params), expanded, trusted=True)
        _mark_trusted(_substitute(schema, params))  # a copy of its own: expanding may rewrite it
    return _Condition(_substitute(schema, params))
