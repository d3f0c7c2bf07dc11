"""Helpers shared by the rule-fixture, Kueue, Volcano and export tests."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

import yaml

from policylint.linter import LintOptions, LintResult, lint
from policylint.resources import rules_dir
from policylint.ruleset import load_rules

TESTS = Path(__file__).parent
DATA = TESTS / "data"
FIXTURES = TESTS / "rules"
NOW = dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc)
RULESET = load_rules([rules_dir()])
_EXPECT = re.compile(r"#\s*expect:\s*(?P<codes>[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)")


def run(paths: list[Path], root: Path, rules: bool = True) -> LintResult:
    return lint(paths, LintOptions(root=root, now=NOW, ruleset=RULESET if rules else None))


def all_marks(folder: Path, relative_to: Path | None = None) -> set[tuple[str, int, str]]:
    """Every ``# expect: CODE[, CODE]`` mark under ``folder`` as (file, line, code)."""
    base = relative_to or folder
    marks = set()
    for path in sorted(folder.rglob("*.y*ml")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            m = _EXPECT.search(line)
            if m:
                for code in m.group("codes").split(","):
                    marks.add((path.relative_to(base).as_posix(), n, code.strip()))
    return marks


def expected_marks(folder: Path, code: str) -> set[tuple[str, int]]:
    """Lines under ``folder`` marked as expecting ``code``."""
    return {(file, line) for file, line, c in all_marks(folder) if c == code}


def run_fixture(folder: Path) -> LintResult:
    """Lint one rule fixture folder: its own repository, with the traces shared under the fixtures root."""
    return lint([folder], LintOptions(root=FIXTURES, now=NOW, ruleset=RULESET, repository=folder))


def reported_marks(folder: Path, code: str) -> set[tuple[str, int]]:
    result = run_fixture(folder)
    return {
        ((Path.cwd() / f.file).resolve().relative_to(folder.resolve()).as_posix(), f.line)
        for f in result.findings
        if f.code == code
    }


def crd_schema(crd_file: Path, version: str) -> dict[str, Any]:
    """The CRD's openAPIV3Schema as a JSON Schema that refuses unknown fields.

    Kubernetes prunes unknown fields instead of refusing them; refusing them here
    catches a field written under the wrong name (``cohort`` in v1beta2). ``x-kubernetes-*``
    keys are unknown to jsonschema and ignored; ``nullable`` becomes a null type.
    """
    crd = yaml.safe_load(crd_file.read_text(encoding="utf-8"))
    schema = next(v["schema"]["openAPIV3Schema"] for v in crd["spec"]["versions"] if v["name"] == version)

    def convert(node: Any) -> Any:
        if isinstance(node, list):
            return [convert(x) for x in node]
        if not isinstance(node, dict):
            return node
        out = {k: convert(v) for k, v in node.items()}
        if out.pop("nullable", False) and "type" in out:
            out["type"] = [out["type"], "null"]
        if "properties" in out and "additionalProperties" not in out and not out.get("x-kubernetes-preserve-unknown-fields"):
            out["additionalProperties"] = False
        return out

    converted: dict[str, Any] = convert(schema)
    return converted
