"""Every fact the package's own code reads by name is a declared fact.

Rules are checked against the fact catalogue when they load; the Python code
that reads a view's facts by name (check functions, fixes, the review page,
exports) is held to the same catalogue here. A fact read as
``view.facts["name"]``, ``facts.get("name")`` or ``f["name"]`` (``f`` being the
conventional name of a view's facts) must be declared on some subject's sheet
(``policylint.engine.sheets.FACTS``): a misspelt or removed fact then fails the
suite instead of reading as a missing value at run time.
"""

from __future__ import annotations

import ast
from pathlib import Path

import policylint
from policylint.engine.sheets import FACTS

#: the names a mapping of facts goes by in the package
FACT_HOLDERS = {"facts", "f", "pool_facts", "workload_facts", "cluster_facts"}


def _holder(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id in FACT_HOLDERS
    if isinstance(node, ast.Attribute):
        return node.attr in FACT_HOLDERS
    return False


def _reads(tree: ast.AST) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and _holder(node.value):
            key = node.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                found.append((node.lineno, key.value))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and _holder(node.func.value)
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.append((node.lineno, node.args[0].value))
    return found


def test_every_fact_read_by_name_is_declared() -> None:
    declared = {name for names in FACTS.values() for name in names}
    root = Path(policylint.__file__).parent
    reads = 0
    unknown = []
    for path in sorted(root.rglob("*.py")):
        for line, name in _reads(ast.parse(path.read_text(encoding="utf-8"))):
            reads += 1
            if name not in declared:
                unknown.append(f"{path.relative_to(root.parent)}:{line}: {name!r}")
    assert not unknown, "facts read by name but declared on no sheet:\n" + "\n".join(unknown)
    assert reads > 100, f"only {reads} fact reads found: the scan no longer sees how the code reads facts"


def test_the_scan_sees_a_misspelt_read() -> None:
    tree = ast.parse('def g(view):\n    f = view.facts\n    return f["baseline_gpu"], view.facts.get("pooled_baseline")\n')
    assert [name for _, name in _reads(tree)] == ["baseline_gpu", "pooled_baseline"]
    declared = {name for names in FACTS.values() for name in names}
    assert "baseline_gpu" not in declared and "baseline_gpus" in declared
