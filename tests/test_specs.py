"""The spec types (policylint/model/specs.py) say what the JSON Schemas say, key for key.

From each root type (a document's ``spec`` and ``metadata``, and what a measurement
reference holds) the test follows every key whose type is another TypedDict into
the schema object at that property (through ``$ref`` and array ``items``), so each
TypedDict meets every schema object it types. There:

* its keys are exactly the properties of those objects together (a key in the
  schema but not in the type, or in the type but not in the schema, fails by name);
* a key it requires is one each of them requires (the type may be laxer: one type
  holds pools read from scheduler manifests too);
* each key's value type is the schema's (string - str, number - float,
  integer - int, boolean - bool, array - list, object - a dict), array items too;
* a schema object with properties of its own is typed by a TypedDict, unless it is
  listed in READ_WHOLE;

and every TypedDict of the module is reached.
"""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, NotRequired, Required, Union, get_args, get_origin, is_typeddict

import pytest

from conftest import REPO

from policylint.model import specs

SCHEMAS: dict[str, dict[str, Any]] = {
    p.name: json.loads(p.read_text(encoding="utf-8")) for p in sorted((REPO / "schemas").glob("*.schema.json"))
}

#: Each root type and the schema objects it types (file and JSON pointer).
ROOTS: list[tuple[type, list[str]]] = [
    (specs.WorkloadSpec, ["workload.schema.json#/properties/spec"]),
    (specs.ClusterSpec, ["cluster.schema.json#/properties/spec"]),
    (specs.ProposalSpec, ["proposal.schema.json#/properties/spec"]),
    (
        specs.MetadataSpec,
        [
            "workload.schema.json#/properties/metadata",
            "cluster.schema.json#/properties/metadata",
            "proposal.schema.json#/properties/metadata",
        ],
    ),
    # a MeasurementRef's spec: any of the three measurement blocks, or a tolerance's evidence
    (
        specs.ReferenceSpec,
        [
            "workload.schema.json#/$defs/measurement",
            "workload.schema.json#/$defs/vramTrace",
            "workload.schema.json#/$defs/activityTrace",
            "workload.schema.json#/properties/spec/properties/tolerance/properties/evidence",
        ],
    ),
]

#: Schema objects with properties that the code reads only as a whole (type, key).
READ_WHOLE = {("NodesSpec", "taints"), ("NodesSpec", "tolerations")}

_PYTHON = {str: "string", float: "number", int: "integer", bool: "boolean"}


@dataclass
class _Node:
    """A schema object, with where it is (for messages) and the file it is in (for ``$ref``)."""

    file: str
    pointer: str
    schema: dict[str, Any]

    @property
    def where(self) -> str:
        return f"{self.file}#{self.pointer}"


@dataclass
class _Reached:
    nodes: list[_Node] = field(default_factory=list)


def _at(file: str, pointer: str) -> _Node:
    node: Any = SCHEMAS[file]
    for part in pointer.strip("/").split("/") if pointer.strip("/") else []:
        node = node[int(part)] if isinstance(node, list) else node[part]
    return _resolve(_Node(file, pointer, node))


def _resolve(node: _Node) -> _Node:
    ref = node.schema.get("$ref")
    if ref is None:
        return node
    file, _, pointer = ref.partition("#")
    return _at(file.removeprefix("./") or node.file, pointer)


def _child(node: _Node, *path: str) -> _Node:
    schema: Any = node.schema
    for part in path:
        schema = schema[part]
    return _resolve(_Node(node.file, f"{node.pointer}/{'/'.join(path)}", schema))


def _hints(td: type) -> dict[str, Any]:
    return typing.get_type_hints(td, include_extras=True)


def _alternatives(tp: Any) -> list[Any]:
    """The members of a union (one otherwise), without Required/NotRequired."""
    if get_origin(tp) in (Required, NotRequired):
        return _alternatives(get_args(tp)[0])
    if get_origin(tp) in (Union, types.UnionType):
        return [a for arg in get_args(tp) for a in _alternatives(arg)]
    return [tp]


def _kind(tp: Any) -> str:
    """The JSON type of a Python annotation (``object``, ``array`` or a scalar)."""
    if is_typeddict(tp) or tp is dict or get_origin(tp) is dict:
        return "object"
    if tp is list or get_origin(tp) is list:
        return "array"
    return _PYTHON[tp]


def _schema_kinds(node: _Node) -> set[str] | None:
    """The JSON types a schema allows, None when it does not say."""
    schema = node.schema
    if "type" in schema:
        kinds = schema["type"]
        return {kinds} if isinstance(kinds, str) else set(kinds)
    values = schema.get("enum", [schema["const"]] if "const" in schema else None)
    if values is None:
        return None
    return {_PYTHON[type(v)] for v in values}


def _reach() -> dict[type, _Reached]:
    """Every TypedDict reached from ROOTS, with the schema objects it meets."""
    reached: dict[type, _Reached] = {}
    todo: list[tuple[type, _Node]] = [(td, _at(*where.split("#"))) for td, wheres in ROOTS for where in wheres]
    while todo:
        td, node = todo.pop()
        entry = reached.setdefault(td, _Reached())
        if any(n.where == node.where for n in entry.nodes):
            continue
        entry.nodes.append(node)
        for key, tp in _hints(td).items():
            if key not in node.schema.get("properties", {}):
                continue
            prop = _child(node, "properties", key)
            for alt in _alternatives(tp):
                if is_typeddict(alt):
                    todo.append((alt, prop))
                elif get_origin(alt) is list and is_typeddict(get_args(alt)[0]):
                    todo.append((get_args(alt)[0], _child(prop, "items")))
    return reached


REACHED = _reach()


def _cases() -> Iterator[Any]:
    for td, entry in sorted(REACHED.items(), key=lambda item: item[0].__name__):
        yield pytest.param(td, entry.nodes, id=td.__name__)


@pytest.mark.parametrize(("td", "nodes"), list(_cases()))
def test_keys_are_the_schema_properties(td: type, nodes: list[_Node]) -> None:
    keys = set(_hints(td))
    properties = {key for node in nodes for key in node.schema.get("properties", {})}
    where = ", ".join(n.where for n in nodes)
    missing, extra = sorted(properties - keys), sorted(keys - properties)
    problems = [f"lacks keys the schema has: {missing}"] * bool(missing) + [f"has keys the schema does not: {extra}"] * bool(extra)
    assert not problems, f"{td.__name__} {' and '.join(problems)} (schema: {where})"


@pytest.mark.parametrize(("td", "nodes"), list(_cases()))
def test_required_keys_are_required_by_the_schema(td: type, nodes: list[_Node]) -> None:
    required_everywhere = set.intersection(*(set(node.schema.get("required", [])) for node in nodes))
    stricter = sorted(set(td.__required_keys__) - required_everywhere)
    where = ", ".join(n.where for n in nodes)
    assert not stricter, f"{td.__name__} requires keys the schema leaves optional: {stricter} (schema: {where})"


@pytest.mark.parametrize(("td", "nodes"), list(_cases()))
def test_value_types_are_the_schema_types(td: type, nodes: list[_Node]) -> None:
    wrong = []
    for key, tp in _hints(td).items():
        for node in nodes:
            if key not in node.schema.get("properties", {}):
                continue
            prop = _child(node, "properties", key)
            alternatives = _alternatives(tp)
            declared = {_kind(alt) for alt in alternatives}
            allowed = _schema_kinds(prop)
            if allowed is not None and declared != allowed:
                wrong.append(f"{key}: {sorted(declared)} here, {sorted(allowed)} in {prop.where}")
            lists = [alt for alt in alternatives if get_origin(alt) is list]
            if lists and "items" in prop.schema:
                items = _child(prop, "items")
                item_kinds = {_kind(a) for alt in lists for a in _alternatives(get_args(alt)[0])}
                allowed_items = _schema_kinds(items)
                if allowed_items is not None and item_kinds != allowed_items:
                    wrong.append(f"{key} items: {sorted(item_kinds)} here, {sorted(allowed_items)} in {items.where}")
            if (td.__name__, key) in READ_WHOLE:
                continue
            whole = [alt for alt in alternatives if get_origin(alt) is dict or alt is dict]
            if whole and "properties" in prop.schema:
                wrong.append(f"{key}: a plain dict here, but {prop.where} has properties (type it, or list it in READ_WHOLE)")
            typed_lists = [alt for alt in lists if get_origin(get_args(alt)[0]) is dict]
            if typed_lists and "properties" in _child(prop, "items").schema:
                wrong.append(f"{key} items: plain dicts here, but they have properties (type them, or list in READ_WHOLE)")
    assert not wrong, f"{td.__name__}: " + "; ".join(wrong)


def test_every_spec_type_is_held_to_a_schema() -> None:
    defined = {
        value
        for name, value in vars(specs).items()
        if is_typeddict(value) and not name.startswith("_") and value.__module__ == specs.__name__
    }
    unreached = sorted(td.__name__ for td in defined - set(REACHED))
    assert not unreached, f"TypedDicts no root of ROOTS leads to (add them to ROOTS or to a reached type): {unreached}"
    stale = sorted(f"{name}.{key}" for name, key in READ_WHOLE if key not in _hints(getattr(specs, name)))
    assert not stale, f"READ_WHOLE names keys that no longer exist: {stale}"


def test_every_document_block_has_a_root() -> None:
    """A new document kind, or a new block of one, cannot go untyped unnoticed."""
    rooted = {where for _, wheres in ROOTS for where in wheres}
    kinds = [name for name, schema in SCHEMAS.items() if "kind" in schema.get("properties", {})]
    assert len(kinds) >= 3, f"document schemas not found: {kinds}"
    untyped = sorted(
        f"{name}#/properties/{block}"
        for name in kinds
        for block in SCHEMAS[name]["properties"]
        if block not in ("apiVersion", "kind") and f"{name}#/properties/{block}" not in rooted
    )
    assert not untyped, f"document blocks without a spec type in ROOTS: {untyped}"
