"""Verdicts of plain rule conditions without a cerberus run: the same answer, by the same comparisons.

A rule's ``when`` and ``require`` are cerberus schemas (:mod:`policylint.engine.conditions`).
Validating one builds cerberus' processing state, an error tree and a rule queue per
field - about forty microseconds, thousands of times per run. Most conditions use a
handful of rules; for those, :func:`verdict_of` returns a function that reaches the
verdict cerberus 1.3 reaches, rule for rule:

* a field absent from the facts is not judged (no condition marks one ``required``);
* ``None`` fails unless ``nullable`` is true, and then no other rule of the field can fail
  (cerberus drops the built-in rules; the comparisons between facts pass on ``None``);
* ``empty``: an empty sized value fails unless ``empty`` is true, and ``allowed`` is then
  not applied;
* ``min`` and ``max`` compare with ``<`` and ``>``, a comparison that raises TypeError
  passing; ``allowed`` checks each item of a non-string iterable, else the value itself;
  ``contains`` wants every expected item (one text is one item) in an iterable value,
  and passes on anything else (``None`` included);
* the comparisons between facts (``max_over``, ``min_field``, ``max_field``,
  ``below_field``, ``below``, ``excludes_all``) are the validator's own, with the same
  tolerance.

Every rule of every field is applied, as cerberus applies them, so a comparison that
raises does so here too. A condition using any other rule gets None and is validated
by cerberus. The error messages of a failed ``require`` still come from cerberus
(:class:`policylint.engine.conditions._Condition` runs it when they are read).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sized
from typing import Any

#: Comparisons between facts allow this much float noise (0.1 + 0.2 vs 0.3), nothing more:
#: facts are never rounded before a verdict, and 19.996 stays below 20.
FACT_EPS = 1e-9

#: The rules a verdict is computed for here; a condition with any other is left to cerberus.
RULES = frozenset(
    {
        "min", "max", "allowed", "contains", "nullable", "empty",
        "max_over", "min_field", "max_field", "below_field", "below", "excludes_all",
    }
)

Verdict = Callable[[Mapping[str, Any]], bool]


def verdict_of(schema: Mapping[str, Any]) -> Verdict | None:
    """The verdict function of a condition (its schema as cerberus expanded it), or None when it uses other rules."""
    failures = failures_of(schema)
    if failures is None:
        return None

    def verdict(document: Mapping[str, Any]) -> bool:
        return not failures(document)

    return verdict


def failures_of(schema: Mapping[str, Any]) -> Callable[[Mapping[str, Any]], list[str]] | None:
    """The fields a document fails of a condition, sorted, as cerberus names them in its errors; None: other rules.

    A rule's message and figures name the first failing field of its ``require``
    (:func:`policylint.engine.evaluate.evaluate_rule_on`): for a plain condition that
    needs no cerberus run either. Every field is judged, so a comparison that raises
    in any of them raises here as it does in cerberus.
    """
    fields: list[tuple[str, dict[str, Any]]] = []
    for field, rules in schema.items():
        if not isinstance(field, str) or not isinstance(rules, Mapping) or not set(rules) <= RULES:
            return None
        fields.append((field, dict(rules)))

    def failures(document: Mapping[str, Any]) -> list[str]:
        # in the schema's order, as the verdict always judged them; sorted as cerberus' errors are read
        return sorted(
            [field for field, rules in fields if field in document and not _field_passes(rules, document[field], document)]
        )

    return failures


def _field_passes(rules: dict[str, Any], value: Any, document: Mapping[str, Any]) -> bool:
    """Whether no rule of one field fails on ``value``; every rule that cerberus would apply is applied."""
    ok = True
    if value is None:
        if not rules.get("nullable"):
            ok = False
        # the built-in rules are dropped; the comparisons between facts still run and pass on None
        for name in ("max_over", "min_field", "max_field", "below_field", "below", "excludes_all"):
            if name in rules and not _compares(name, rules[name], value, document):
                ok = False
        return ok
    allowed = "allowed" in rules
    if "empty" in rules and isinstance(value, Sized) and len(value) == 0:
        allowed = False
        if not rules["empty"]:
            ok = False
    if "min" in rules:
        try:
            if value < rules["min"]:
                ok = False
        except TypeError:
            pass
    if "max" in rules:
        try:
            if value > rules["max"]:
                ok = False
        except TypeError:
            pass
    if "contains" in rules and not _contains_all(rules["contains"], value):
        ok = False
    if allowed:
        values = rules["allowed"]
        if isinstance(value, Iterable) and not isinstance(value, str):
            if tuple(x for x in value if x not in values):
                ok = False
        elif value not in values:
            ok = False
    for name in ("max_over", "min_field", "max_field", "below_field", "below", "excludes_all"):
        if name in rules and not _compares(name, rules[name], value, document):
            ok = False
    return ok


def _contains_all(expected: Any, value: Any) -> bool:
    """cerberus' ``contains``: a value that is not iterable passes; else it holds every expected item (text is one)."""
    if not isinstance(value, Iterable):
        return True
    wanted = {expected} if not isinstance(expected, Iterable) or isinstance(expected, str) else set(expected)
    return not wanted - set(value)


def _compares(name: str, spec: Any, value: Any, document: Mapping[str, Any]) -> bool:
    """One comparison between facts, as :func:`policylint.engine.conditions._validator_class` defines it."""
    if name == "max_over":
        other = document.get(spec["field"]) if document else None
        if other is None or value is None:
            return True
        return not value > other * (1 + spec.get("margin", 0)) + FACT_EPS
    if name == "below":
        return not (value is not None and not value < spec)
    if name == "excludes_all":
        return not (isinstance(value, list) and all(item in value for item in spec))
    other = document.get(spec) if document else None
    if other is None or value is None:
        return True
    if name == "min_field":
        return not value < other - FACT_EPS
    if name == "max_field":
        return not value > other + FACT_EPS
    return bool(value < other)  # below_field
