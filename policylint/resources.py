"""Locate the bundled ``rules/`` and ``schemas/`` folders.

In a source checkout (and an editable install) they are the top-level folders
next to the package. In a built wheel they are shipped inside the package as
``policylint/_data/rules`` and ``policylint/_data/schemas`` (see
``pyproject.toml``). Both layouts are looked up, installed data first.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from policylint.errors import PolicylintError

_PACKAGE = Path(__file__).resolve().parent


def _find(name: str) -> Path:
    for candidate in (_PACKAGE / "_data" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise PolicylintError(f"bundled '{name}' folder not found; the installation is incomplete")


def rules_dir() -> Path:
    """The folder holding the bundled rule files."""
    return _find("rules")


def schemas_dir() -> Path:
    """The folder holding the bundled JSON Schemas."""
    return _find("schemas")


SCHEMA_FILES = {
    "Workload": "workload.schema.json",
    "Cluster": "cluster.schema.json",
    "Proposal": "proposal.schema.json",
    "Rule": "rule.schema.json",
    "Config": "config.schema.json",
}


@functools.cache
def load_schema(kind: str) -> dict[str, Any]:
    """The JSON Schema for ``kind`` (a document kind, ``Rule`` or ``Config``)."""
    try:
        filename = SCHEMA_FILES[kind]
    except KeyError:
        known = ", ".join(sorted(SCHEMA_FILES))
        raise PolicylintError(f"unknown schema '{kind}' (known: {known})") from None
    path = schemas_dir() / filename
    try:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise PolicylintError(f"cannot read bundled schema: {exc}", source=str(path)) from None
    return data
