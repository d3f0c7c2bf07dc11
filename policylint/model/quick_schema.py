"""A sound shortcut for documents that are valid: no jsonschema import when nothing is wrong.

A one-file pre-commit run on an edited workload validates that one document, and importing
jsonschema (with ``referencing``, ``rpds`` and ``attrs``) took about 0.09 s of a 0.5 s run at
1,000 workloads (issue 26). :func:`certainly_valid` evaluates the schema keywords policylint's
schemas use, each exactly as jsonschema's Draft 2020-12 validator does (the same type
checks, comparisons, ``re.search`` and equality), and answers True only when every keyword
that applies was evaluated and holds. Anything else - a keyword it does not evaluate, an
``enum`` or ``const`` of values it does not compare as jsonschema does, a failing keyword -
answers False, and :mod:`policylint.model.validate` asks jsonschema, whose errors are the
findings. So the shortcut can only skip jsonschema for a document jsonschema accepts
(``tests/test_quick_schema.py`` holds it to jsonschema on every example and fixture document
and on hypothesis-generated edits of them).
"""

from __future__ import annotations

import re
from typing import Any

#: keywords that only annotate: nothing to evaluate
_ANNOTATIONS = frozenset({
    "$schema", "$id", "$defs", "$comment", "title", "description", "default", "examples", "deprecated",
    "readOnly", "writeOnly",
})

#: the outcome of evaluating a schema: True (holds), False (fails), None (not evaluated here)
Outcome = bool | None


def certainly_valid(schema: dict[str, Any], instance: Any) -> bool:
    """True only when ``instance`` is valid under ``schema`` (the root of its ``$ref``s), by jsonschema's rules."""
    try:
        return _check(schema, schema, instance, 0) is True
    except (RecursionError, re.error, TypeError, ValueError):
        return False


def _is_type(instance: Any, name: str) -> Outcome:
    if name == "object":
        return isinstance(instance, dict)
    if name == "array":
        return isinstance(instance, list)
    if name == "string":
        return isinstance(instance, str)
    if name == "boolean":
        return isinstance(instance, bool)
    if name == "null":
        return instance is None
    if name == "integer":
        if isinstance(instance, bool):
            return False
        return isinstance(instance, int) or (isinstance(instance, float) and instance.is_integer())
    if name == "number":
        return isinstance(instance, (int, float)) and not isinstance(instance, bool)
    return None


def _number(instance: Any) -> bool:
    return isinstance(instance, (int, float)) and not isinstance(instance, bool)


def _equal(instance: Any, value: Any) -> Outcome:
    """jsonschema's ``equal`` where it is plain: a string against anything; else not evaluated."""
    if isinstance(instance, str) or isinstance(value, str):
        return instance == value if isinstance(instance, str) and isinstance(value, str) else False
    return None


def _all(outcomes: Any) -> Outcome:
    unknown = False
    for outcome in outcomes:
        if outcome is False:
            return False
        if outcome is None:
            unknown = True
    return None if unknown else True


def _check(schema: Any, root: dict[str, Any], instance: Any, depth: int) -> Outcome:
    if schema is True:
        return True
    if schema is False:
        return False
    if not isinstance(schema, dict) or depth > 64:
        return None
    unknown = False
    for key, value in schema.items():
        if key in _ANNOTATIONS or key in ("then", "else"):
            continue
        outcome = _keyword(key, value, schema, root, instance, depth)
        if outcome is False:
            return False
        if outcome is None:
            unknown = True
    return None if unknown else True


def _keyword(key: str, value: Any, schema: dict[str, Any], root: dict[str, Any], instance: Any, depth: int) -> Outcome:
    if key == "type":
        names = value if isinstance(value, list) else [value]
        found = [_is_type(instance, n) for n in names]
        return True if True in found else (None if None in found else False)
    if key == "$ref":
        if not isinstance(value, str) or not value.startswith("#/"):
            return None
        target: Any = root
        for part in value[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(target, dict) or part not in target:
                return None
            target = target[part]
        return _check(target, root, instance, depth + 1)
    if key == "enum":
        if not isinstance(value, list):
            return None
        found = [_equal(instance, v) for v in value]
        return True if True in found else (None if None in found else False)
    if key == "const":
        return _equal(instance, value)
    if key in ("properties", "additionalProperties", "required", "minProperties", "maxProperties", "propertyNames",
               "dependentRequired"):
        return _object_keyword(key, value, schema, root, instance, depth)
    if key in ("items", "minItems", "maxItems", "uniqueItems"):
        return _array_keyword(key, value, schema, root, instance, depth)
    if key in ("minLength", "maxLength", "pattern"):
        if not isinstance(instance, str):
            return True
        if key == "minLength":
            return not len(instance) < value
        if key == "maxLength":
            return not len(instance) > value
        return re.search(value, instance) is not None
    if key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        if not _number(instance):
            return True
        if key == "minimum":
            return not instance < value
        if key == "maximum":
            return not instance > value
        if key == "exclusiveMinimum":
            return not instance <= value
        return not instance >= value
    if key in ("allOf", "anyOf", "oneOf"):
        if not isinstance(value, list):
            return None
        found = [_check(s, root, instance, depth + 1) for s in value]
        if key == "allOf":
            return _all(found)
        if None in found:
            return None
        return (True in found) if key == "anyOf" else found.count(True) == 1
    if key == "not":
        held = _check(value, root, instance, depth + 1)
        return None if held is None else not held
    if key == "if":
        held = _check(value, root, instance, depth + 1)
        if held is None:
            return None
        branch = schema.get("then" if held else "else", True)
        return _check(branch, root, instance, depth + 1)
    return None  # a keyword not evaluated here: jsonschema decides


def _object_keyword(key: str, value: Any, schema: dict[str, Any], root: dict[str, Any], instance: Any,
                    depth: int) -> Outcome:
    if not isinstance(instance, dict):
        return True
    if key == "properties":
        return _all(_check(sub, root, instance[name], depth + 1) for name, sub in value.items() if name in instance)
    if key == "additionalProperties":
        if "patternProperties" in schema:
            return None
        known = schema.get("properties", {})
        extra = [name for name in instance if name not in known]
        return _all(_check(value, root, instance[name], depth + 1) for name in extra)
    if key == "required":
        return all(name in instance for name in value)
    if key == "minProperties":
        return not len(instance) < value
    if key == "maxProperties":
        return not len(instance) > value
    if key == "propertyNames":
        return _all(_check(value, root, name, depth + 1) for name in instance)
    # dependentRequired
    return all(dep in instance for name, deps in value.items() if name in instance for dep in deps)


def _array_keyword(key: str, value: Any, schema: dict[str, Any], root: dict[str, Any], instance: Any,
                   depth: int) -> Outcome:
    if not isinstance(instance, list):
        return True
    if key == "items":
        if "prefixItems" in schema:
            return None
        return _all(_check(value, root, item, depth + 1) for item in instance)
    if key == "minItems":
        return not len(instance) < value
    if key == "maxItems":
        return not len(instance) > value
    # uniqueItems: told exactly only for strings
    if not value:
        return True
    if not all(isinstance(item, str) for item in instance):
        return None
    return len(set(instance)) == len(instance)
