"""The shortcut for valid documents (policylint.model.quick_schema) answers only what jsonschema answers.

``certainly_valid`` lets a run skip importing jsonschema for a document that is valid. It must
never say valid where jsonschema finds an error: these tests hold it to jsonschema on every
policylint document of the examples and the rule fixtures, and on edits of them drawn by
hypothesis (values of other types, numbers out of range, keys dropped, added or misspelt). It
should also answer for the documents it is for: every valid example document is told valid.
"""

from __future__ import annotations

import copy
from typing import Any

import jsonschema
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import REPO
from policylint.model.quick_schema import certainly_valid
from policylint.model.validate import DOCUMENT_KINDS
from policylint.resources import load_schema


def _documents() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for path in sorted([*(REPO / "examples").rglob("*.yaml"), *(REPO / "tests" / "rules").rglob("*.yaml")]):
        try:
            docs = list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
        except (yaml.YAMLError, UnicodeDecodeError):
            continue
        for doc in docs:
            if isinstance(doc, dict) and doc.get("apiVersion") == "policylint/v1" and doc.get("kind") in DOCUMENT_KINDS:
                found.append((str(path.relative_to(REPO)), doc))
    return found


DOCUMENTS = _documents()
SCHEMAS = {kind: load_schema(kind) for kind in DOCUMENT_KINDS}
VALIDATORS = {kind: jsonschema.validators.validator_for(s)(s) for kind, s in SCHEMAS.items()}


def _agrees(doc: dict[str, Any]) -> bool:
    kind = doc["kind"]
    quick = certainly_valid(SCHEMAS[kind], doc)
    valid = not any(True for _ in VALIDATORS[kind].iter_errors(doc))
    assert not (quick and not valid), f"told valid, but jsonschema finds: {next(VALIDATORS[kind].iter_errors(doc))}"
    return quick == valid


def test_there_are_documents_of_every_kind() -> None:
    assert {doc["kind"] for _, doc in DOCUMENTS} == set(DOCUMENT_KINDS)
    assert len(DOCUMENTS) > 200


def test_every_example_and_fixture_document_is_judged_as_jsonschema_judges_it() -> None:
    missed = [name for name, doc in DOCUMENTS if not _agrees(doc)]
    # a valid document the shortcut cannot tell valid costs only the import; none of ours is one
    assert missed == []


_ODD = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.floats(allow_nan=True),
                 st.text(max_size=6), st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=3),
                 st.integers(), max_size=2), st.sampled_from(["", "x", "1e3", "inference", "training", "H100", "1.5"]))


def _paths(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [at]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*at, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*at, i))
    return out


@st.composite
def _edited(draw: st.DrawFn) -> dict[str, Any]:
    _, doc = draw(st.sampled_from(DOCUMENTS))
    doc = copy.deepcopy(doc)
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(doc) if p and p[:2] != ("kind",) and p != ("apiVersion",)]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent: Any = doc
        for part in path[:-1]:
            parent = parent[part]
        how = draw(st.sampled_from(["replace", "drop", "add", "scale"]))
        last = path[-1]
        if how == "replace":
            parent[last] = draw(_ODD)
        elif how == "drop" and isinstance(parent, dict):
            del parent[last]
        elif how == "add" and isinstance(parent, dict):
            parent[draw(st.sampled_from([f"{last}x", "extra", str(last).lower(), "Spec"]))] = draw(_ODD)
        elif how == "scale" and isinstance(parent[last], (int, float)) and not isinstance(parent[last], bool):
            parent[last] = parent[last] * draw(st.sampled_from([-1, 0, 0.5, 1.5, 10**9]))
    return doc


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_edited())
def test_edited_documents_are_never_told_valid_when_jsonschema_finds_an_error(doc: dict[str, Any]) -> None:
    _agrees(doc)


@pytest.mark.parametrize("schema, instance, expected", [
    ({"type": "integer"}, 3.0, True),  # jsonschema's integer: a float without a fraction
    ({"type": "integer"}, True, False),
    ({"type": "number"}, float("nan"), True),
    ({"minimum": 0}, float("nan"), True),  # nan < 0 is false, as in jsonschema
    ({"enum": [1, 2]}, 1, False),  # numbers in an enum: jsonschema decides (True and 1)
    ({"const": "a"}, "a", True),
    ({"uniqueItems": True}, [1, True], False),  # not told: jsonschema decides
    ({"unknownKeyword": 1}, 1, False),
    ({"oneOf": [{"type": "string"}, {"minLength": 1}]}, "x", False),  # both hold: one of fails
])
def test_the_shortcut_on_the_edges_of_jsonschema(schema: dict[str, Any], instance: Any, expected: bool) -> None:
    assert certainly_valid(schema, instance) is expected
    if expected:
        assert jsonschema.validators.validator_for(schema)(schema).is_valid(instance)
