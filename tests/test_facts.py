"""The facts are declared once: the catalogue, the docs and what the views build all come from the fact sheets.

* the catalogue rule files are checked against is the sheets' declaration, for every subject kind;
* every view built on the examples (and on the integrity fixtures) holds the sheet of its
  subject kind, with exactly the declared facts, each value of its declared type;
* docs/facts.md is what ``tools/fact_catalogue.py`` prints, and the integrity table of
  docs/red-team.md names declared facts only;
* ``policylint bands --format json`` prints the integrity facts as declared.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import importlib.util
import json
import re
import sys
import types
import typing
from typing import Any

import pytest

from conftest import EXAMPLES, REPO, run_cli
from fixture_helpers import FIXTURES, run_fixture

from policylint.engine.linter import LintOptions, lint
from policylint.engine.ruleset import load_rules
from policylint.engine.sheets import FACTS, SHEETS
from policylint.engine.view import View
from policylint.facts import Facts, catalogue, declarations, fact, part
from policylint.measure.integrity_facts import IntegrityWorkloadFacts
from policylint.resources import rules_dir

NOW = dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc)


def test_the_catalogue_is_the_declaration() -> None:
    assert set(FACTS) == set(SHEETS) == {"workload", "pool", "cluster", "proposal"}
    for subject, sheet in SHEETS.items():
        found = declarations(sheet)
        assert FACTS[subject] == {d.name: d.description for d in found} == catalogue(sheet)
        assert list(sheet.routes()) == [d.name for d in found]
        for d in found:
            assert d.description.strip() and d.written_type, (subject, d.name)


@dataclasses.dataclass(kw_only=True, eq=False)
class _Part(Facts):
    x: int = fact("x", default=0)


@dataclasses.dataclass(kw_only=True, eq=False)
class _Twice(Facts):
    x: int = fact("x again", default=0)
    inner: _Part = part(_Part)


def test_a_fact_is_declared_once_per_sheet() -> None:
    with pytest.raises(TypeError, match="declared twice"):
        _Twice.routes()


def test_a_sheet_is_a_read_only_mapping_of_its_declared_facts() -> None:
    facts = IntegrityWorkloadFacts(roughness=1.5)
    assert facts["roughness"] == 1.5 and facts.get("roughness") == 1.5
    assert "roughness" in facts and "no_such_fact" not in facts
    assert facts.get("no_such_fact") is None
    with pytest.raises(KeyError):
        facts["no_such_fact"]
    assert dict(facts) == {name: None for name in catalogue(IntegrityWorkloadFacts)} | {"roughness": 1.5}
    assert not hasattr(facts, "__setitem__")


# --------------------------------------------------------------------------- what is built


def _matches(value: Any, hint: Any) -> bool:
    """Whether ``value`` is of the declared type ``hint`` (int passes for float; list items checked)."""
    if hint is Any:
        return True
    if typing.is_typeddict(hint):
        fields = typing.get_type_hints(hint)
        return isinstance(value, dict) and set(value) == set(fields) and all(_matches(value[k], fields[k]) for k in fields)
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_matches(value, h) for h in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if hint is float:
        return isinstance(value, (int, float))
    if origin is list:
        (item,) = typing.get_args(hint)
        return isinstance(value, list) and all(_matches(v, item) for v in value)
    if origin is dict:
        key, item = typing.get_args(hint)
        return isinstance(value, dict) and all(_matches(k, key) and _matches(v, item) for k, v in value.items())
    return isinstance(value, hint)


def _leaf_hints(sheet: type[Facts]) -> dict[str, Any]:
    """Fact name -> declared type, parts flattened."""
    hints = typing.get_type_hints(sheet)
    out: dict[str, Any] = {}
    for f in dataclasses.fields(sheet):
        if f.metadata.get("part"):
            out.update(_leaf_hints(hints[f.name]))
        else:
            out[f.name] = hints[f.name]
    return out


def _check_views(views: list[View]) -> set[str]:
    seen = set()
    for view in views:
        sheet = SHEETS[view.subject]
        assert type(view.facts) is sheet, view.label
        assert list(view.facts) == list(FACTS[view.subject]), view.label
        for name, hint in _leaf_hints(sheet).items():
            value = view.facts[name]
            assert _matches(value, hint), f"{view.label}: {name} = {value!r} is not {hint}"
        seen.add(view.subject)
    return seen


@pytest.fixture(scope="module")
def ruleset() -> Any:
    return load_rules([rules_dir()])


@pytest.mark.parametrize("example", ["good", "bad", "kueue", "kueue-bad"])
def test_every_view_of_an_example_holds_its_declared_sheet(example: str, ruleset: Any) -> None:
    root = EXAMPLES / example
    result = lint([root], LintOptions(root=root, now=NOW, ruleset=ruleset))
    assert result.views
    assert _check_views(result.views) == {"workload", "pool", "cluster", "proposal"} or example.startswith("kueue")


@pytest.mark.parametrize("code", ["PL961", "PL111", "PL974", "PL977"])
def test_the_integrity_fixtures_too(code: str) -> None:
    """Traces faked every way the integrity stage knows: each fact still of its declared type."""
    _check_views(run_fixture(FIXTURES / code / "fail").views)


def test_bands_json_prints_the_declared_integrity_facts() -> None:
    code, out, err = run_cli(["bands", str(FIXTURES / "_traces" / "future-92d.csv"), "--format", "json"])
    assert (code, err) == (0, "")
    printed = json.loads(out)["integrity"]
    assert list(printed) == sorted(catalogue(IntegrityWorkloadFacts))


# --------------------------------------------------------------------------- the docs


def _tool() -> types.ModuleType:
    spec = importlib.util.spec_from_file_location("fact_catalogue", REPO / "tools" / "fact_catalogue.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["fact_catalogue"] = module
    spec.loader.exec_module(module)
    return module


def test_the_fact_reference_is_up_to_date() -> None:
    committed = (REPO / "docs" / "facts.md").read_text(encoding="utf-8")
    assert committed == _tool().markdown(), "docs/facts.md is stale: run `python tools/fact_catalogue.py > docs/facts.md`"


def test_the_red_team_table_names_declared_facts() -> None:
    """The integrity stage's table (docs/red-team.md) names facts that exist, and every workload integrity fact."""
    text = (REPO / "docs" / "red-team.md").read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if re.match(r"\| (identity|time|resolution|shaping|plausibility|the gate)", line)]
    assert rows
    named = set()
    for row in rows:  # `exclusion_recurring(_at)` names two facts
        for name, suffix in re.findall(r"`([a-z_0-9]+)(?:\((_[a-z_0-9]+)\))?`", row.split("|")[2]):
            named |= {name, name + suffix}
    known = set().union(*(set(f) for f in FACTS.values()))
    assert named - known == set()
    assert set(catalogue(IntegrityWorkloadFacts)) - named == set()
