"""Step 2: validate each document against the JSON Schema of its kind.

Validator errors carry a JSON path (``spec/pools/0/reservedGpus``); they are
turned into findings at the nearest position the loader recorded for that path,
so a schema violation is reported at its line and column like any other problem.
"""

from __future__ import annotations

import functools
from typing import Any

from policylint.finding import Finding
from policylint.model.load import Document
from policylint.resources import load_schema

DOCUMENT_KINDS = ("Workload", "Cluster", "Proposal")


@functools.cache
def _schema(kind: str) -> dict[str, Any]:
    """The schema of ``kind``, read once per process (never changed: both validators only read it)."""
    return load_schema(kind)


@functools.cache
def _validator(kind: str) -> Any:
    import jsonschema

    schema = load_schema(kind)
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema)


def _unknown_keys(error: Any) -> list[Any]:
    """Keys an additionalProperties error is about, sorted.

    Sorted as text: YAML allows ``1: x`` next to ``foo: y``, and int and str do
    not compare.
    """
    return sorted(set(error.instance) - set(error.schema.get("properties", {})), key=str)


def _describe(error: Any) -> str:
    """A short, user-facing description of one validation error."""
    where = "/".join(str(p) for p in error.absolute_path)
    validator = error.validator
    if validator == "additionalProperties":
        extra = _unknown_keys(error)
        allowed = ", ".join(sorted(error.schema.get("properties", {})))
        names = ", ".join(repr(e) for e in extra)
        from policylint.errors import did_you_mean

        # a typo of a known field (coldstartSeconds): name the field it was meant to be (newcomer trial)
        hint = did_you_mean(str(extra[0]), error.schema.get("properties", {})) if len(extra) == 1 else ""
        return f"unknown field {names}" + (f" in '{where}'" if where else "") + f" (allowed: {allowed}){hint}"
    if validator == "required":
        return str(error.message).replace("is a required property", "is required") + (f" in '{where}'" if where else "")
    if validator in ("enum", "const"):
        options = error.validator_value if validator == "enum" else [error.validator_value]
        return f"'{where}' must be one of: {', '.join(str(o) for o in options)} (got {shown(error.instance)})"
    if validator == "type":
        wanted = error.validator_value
        names = " or ".join(repr(t) for t in wanted) if isinstance(wanted, list) else repr(wanted)
        message = f"{shown(error.instance)} is not of type {names}"
        if isinstance(error.instance, str) and {"number", "integer"} & set(wanted if isinstance(wanted, list) else [wanted]):
            try:
                float(error.instance)
            except ValueError:
                pass
            else:
                message += f" (YAML read it as text: {_as_number(error.instance)})"
        return f"'{where}': {message}" if where else message
    message = error_message(error)
    return f"'{where}': {message}" if where else message


def _as_number(text: str) -> str:
    """How to write ``text``, a number YAML 1.1 read as text, so that it reads as one."""
    digits = text.lstrip("+-")
    if "e" in digits.lower():  # YAML 1.1 reads 1e300 (no decimal point, or no exponent sign) as text
        return "write an exponent with a decimal point and a sign, e.g. 1.0e+3"
    if len(digits) > 1 and digits.isdigit() and digits[0] == "0":  # 0392: octal to YAML 1.1, which has no 9
        return f"a leading zero makes YAML 1.1 read octal, which has no 8 or 9: write {int(text, 10)}"
    return "write it without quotes"


def shown(value: Any, *, wanted_number: bool = False) -> str:
    """A value as the YAML it came from says it: null, true and false, not Python's None, True and False.

    With ``wanted_number``, text that reads as a number says that its quotes made it text.
    """
    if value is None:
        return "null (an empty value)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if wanted_number and isinstance(value, str) and _numeric(value):
        return f"the text {value!r} (quoted: write {value.strip()} without quotes for a number)"
    return repr(value)


def _numeric(text: str) -> bool:
    try:
        float(text.strip())
    except ValueError:
        return False
    return bool(text.strip()) and "_" not in text


def error_message(error: Any) -> str:
    """jsonschema's message for one error, without the schemas' line-break guard.

    Every name pattern ends in ``$(?!\n)`` so that a trailing line break cannot pass
    (Python's ``$`` matches before one); the guard is not part of what a name must look like.
    """
    if error.validator == "pattern" and isinstance(error.validator_value, str):
        shown = error.validator_value.removesuffix("(?!\\n)")
        return f"{error.instance!r} does not match {shown!r}"
    return str(error.message)


def _error_path(error: Any) -> tuple[str | int, ...]:
    path = tuple(error.absolute_path)
    if error.validator == "additionalProperties":
        extra = _unknown_keys(error)
        if extra:
            return (*path, extra[0])
    return path


def validate_document(doc: Document) -> list[Finding]:
    """Schema findings for one policylint document (empty when valid)."""
    kind = doc.kind
    if not isinstance(doc.data, dict):
        return [
            doc.finding(
                "PL006",
                f"a policylint document must be a mapping, got {type(doc.data).__name__}",
            )
        ]
    if kind not in DOCUMENT_KINDS:
        return [
            doc.finding(
                "PL011",
                (f"unknown kind {shown(doc.data['kind'])}" if doc.data.get("kind") is not None else "no kind given")
                + f" for apiVersion {doc.api_version} (expected one of: {', '.join(DOCUMENT_KINDS)})",
                ("kind",),
            )
        ]
    from policylint.model.quick_schema import certainly_valid

    unbounded = _non_finite(doc)
    if not unbounded and certainly_valid(_schema(kind), doc.data):
        return []  # what jsonschema would answer, without importing it (issue 26)
    validator = _validator(kind)
    findings = list(unbounded.values())
    for error in validator.iter_errors(doc.data):
        path = _error_path(error)
        if tuple(error.absolute_path) in unbounded:
            continue  # a non-finite number out of bounds too: one finding at its place
        findings.append(
            doc.finding(
                "PL010",
                f"{kind}: {_describe(error)}",
                path,
                hint=f"see `policylint schema {kind.lower()}` for the allowed fields",
            )
        )
    return findings


def _non_finite(doc: Document) -> dict[tuple[str | int, ...], Finding]:
    """PL010 at each number of ``doc`` that is not finite (``.inf``, ``-.inf``, ``.nan``).

    JSON has no such numbers, so no schema keyword refuses them, and every bound a schema
    sets lets infinity past one side: ``perGpuConcurrency: {value: .inf}`` passed
    ``exclusiveMinimum: 0`` and stopped the run with an internal error (red team, 2026-12-07).
    """
    import math

    found: dict[tuple[str | int, ...], Finding] = {}
    todo: list[tuple[tuple[str | int, ...], Any]] = [((), doc.data)]
    while todo:
        path, value = todo.pop()
        if isinstance(value, float) and not math.isfinite(value):
            found[path] = doc.finding(
                "PL010",
                f"{doc.kind}: {value!r} is not a finite number",
                path,
                hint="write the measured figure; YAML's .inf and .nan stand for no measurement",
            )
        elif isinstance(value, dict):
            todo.extend(((*path, k), v) for k, v in value.items() if isinstance(k, (str, int)))
        elif isinstance(value, list):
            todo.extend(((*path, i), v) for i, v in enumerate(value))
    return dict(sorted(found.items(), key=lambda item: (item[1].line, item[1].column)))
