"""The bundled JSON Schemas: valid, closed, self-describing, and what `policylint schema` prints."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from conftest import REPO, run_cli

from policylint.resources import SCHEMA_FILES

SCHEMAS = sorted((REPO / "schemas").glob("*.json"))

#: Object schemas that list some properties but deliberately stay open. Each entry
#: needs a reason; anything not listed here must say ``additionalProperties: false``.
OPEN_BY_DESIGN = {
    # per-rule settings: besides `severity`, the keys are the options of that rule,
    # which configure_rules checks against the rule's own params when rules load
    ("config.schema.json", "#/properties/rules/additionalProperties"),
    # conditions on one field of a toleration (the object itself is closed)
    ("cluster.schema.json", "#/$defs/pool/properties/nodes/properties/tolerations/items/allOf/0/then"),
    ("cluster.schema.json", "#/$defs/pool/properties/nodes/properties/tolerations/items/allOf/1/then"),
}

#: Properties that still lack a description. The list may only shrink: a new
#: property without one fails, and so does an entry here that has been fixed.
MISSING_DESCRIPTIONS: set[tuple[str, str]] = set()


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def subschemas(schema: Any, pointer: str = "#") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema object inside ``schema`` with its JSON pointer (keywords only, not data)."""
    if not isinstance(schema, dict):
        return
    yield pointer, schema
    for keyword in ("properties", "$defs", "patternProperties", "dependentSchemas"):
        for name, sub in schema.get(keyword, {}).items():
            yield from subschemas(sub, f"{pointer}/{keyword}/{name}")
    for keyword in ("items", "additionalProperties", "contains", "not", "if", "then", "else", "propertyNames"):
        yield from subschemas(schema.get(keyword), f"{pointer}/{keyword}")
    for keyword in ("allOf", "anyOf", "oneOf", "prefixItems"):
        for i, sub in enumerate(schema.get(keyword, [])):
            yield from subschemas(sub, f"{pointer}/{keyword}/{i}")


def resolve_ref(root: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """Follow a local ``$ref`` (``#/$defs/x``) once."""
    ref = schema.get("$ref")
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return schema
    target: Any = root
    for part in ref[2:].split("/"):
        target = target[part]
    assert isinstance(target, dict)
    return target


def test_every_document_kind_has_a_schema_file() -> None:
    names = {p.name for p in SCHEMAS}
    assert set(SCHEMA_FILES.values()) <= names


@pytest.mark.parametrize("path", SCHEMAS, ids=lambda p: p.name)
def test_schema_is_valid_draft_2020_12(path: Path) -> None:
    schema = load(path)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)


@pytest.mark.parametrize("path", SCHEMAS, ids=lambda p: p.name)
def test_schema_has_an_id_named_after_its_file(path: Path) -> None:
    schema = load(path)
    assert schema["$id"].endswith("/" + path.name)
    assert schema.get("title") and schema.get("description")


@pytest.mark.parametrize("path", SCHEMAS, ids=lambda p: p.name)
def test_object_schemas_with_properties_are_closed(path: Path) -> None:
    open_ones = {
        (path.name, pointer)
        for pointer, sub in subschemas(load(path))
        if "properties" in sub and sub.get("additionalProperties") is not False
    }
    assert open_ones == {entry for entry in OPEN_BY_DESIGN if entry[0] == path.name}


@pytest.mark.parametrize("path", SCHEMAS, ids=lambda p: p.name)
def test_every_property_has_a_description(path: Path) -> None:
    root = load(path)
    missing = set()
    for pointer, sub in subschemas(root):
        for name, prop in sub.get("properties", {}).items():
            # a property that is only a $ref is described by its target
            if "description" not in prop and "description" not in resolve_ref(root, prop):
                missing.add((path.name, f"{pointer}/properties/{name}"))
    assert missing == {entry for entry in MISSING_DESCRIPTIONS if entry[0] == path.name}


def test_the_walk_sees_nested_definitions() -> None:
    pointers = dict(subschemas(load(REPO / "schemas" / "workload.schema.json")))
    assert "#/$defs/measurement" in pointers
    assert "#/properties/spec/properties/concurrency/properties/exclude/items" in pointers


@pytest.mark.parametrize("kind", ["workload", "cluster", "proposal", "rule", "config"])
def test_schema_command_prints_the_file(kind: str) -> None:
    code, out, err = run_cli(["schema", kind])
    assert (code, err) == (0, "")
    assert json.loads(out) == load(REPO / "schemas" / f"{kind}.schema.json")


def test_schema_command_accepts_the_kind_in_any_case() -> None:
    code, out, _ = run_cli(["schema", "Workload"])
    assert code == 0
    assert json.loads(out)["title"] == "policylint Workload"


def test_schema_command_with_an_unknown_kind() -> None:
    code, out, err = run_cli(["schema", "gizmo"])
    assert code == 2
    assert out == ""
    assert err == "policylint: error: unknown schema 'gizmo' (known: Cluster, Config, Proposal, Rule, Workload)\n"
