"""Every rule is proven by a failing and a passing fixture, run through the real engine.

Layout: ``tests/rules/<CODE>/fail/`` and ``tests/rules/<CODE>/pass/``, each a
small capacity repository (measurements shared by all fixtures live in
``tests/rules/_traces/``; the fixtures root is ``tests/rules``). In ``fail/`` every line where the rule must report
carries a comment ``# expect: <CODE>``; the test asserts that the rule reports
exactly those lines (file and line), and nothing in ``pass/``.
Built-in document checks (PL0xx) are proven by the loader and CLI tests.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest

from policylint.linter import LintOptions, lint
from policylint.resources import rules_dir
from policylint.ruleset import load_rules

FIXTURES = Path(__file__).parent / "rules"
NOW = dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc)
RULESET = load_rules([rules_dir()])
#: Rules that judge a change (--diff) need git history; tests/test_history_rule.py proves them.
HISTORY_RULES = {"PL950"}
CHECKED = sorted(code for code, rule in RULESET.rules.items() if not rule.builtin and code not in HISTORY_RULES)
_EXPECT = re.compile(r"#\s*expect:\s*(?P<codes>[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)")


def expected(folder: Path, code: str) -> set[tuple[str, int]]:
    marks = set()
    for path in sorted(folder.rglob("*.y*ml")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            m = _EXPECT.search(line)
            if m and code in {c.strip() for c in m.group("codes").split(",")}:
                marks.add((path.relative_to(folder).as_posix(), n))
    return marks


def reported(folder: Path, code: str) -> set[tuple[str, int]]:
    options = LintOptions(root=FIXTURES, now=NOW, ruleset=RULESET)
    result = lint([folder], options)
    out = set()
    for f in result.findings:
        if f.code == code:
            rel = (Path.cwd() / f.file).resolve().relative_to(folder.resolve()).as_posix()
            out.add((rel, f.line))
    return out


@pytest.mark.parametrize("code", CHECKED)
def test_rule_has_fixtures(code: str) -> None:
    for kind in ("fail", "pass"):
        assert (FIXTURES / code / kind).is_dir(), f"{code} has no {kind}/ fixture"
    assert expected(FIXTURES / code / "fail", code), f"{code}/fail has no '# expect: {code}' mark"


@pytest.mark.parametrize("code", CHECKED)
def test_rule_fails_on_fail_fixture(code: str) -> None:
    folder = FIXTURES / code / "fail"
    assert reported(folder, code) == expected(folder, code)


@pytest.mark.parametrize("code", CHECKED)
def test_rule_passes_on_pass_fixture(code: str) -> None:
    assert reported(FIXTURES / code / "pass", code) == set()


def test_no_fixture_for_unknown_rule() -> None:
    orphans = sorted(
        p.name for p in FIXTURES.iterdir() if p.is_dir() and not p.name.startswith("_") and p.name not in RULESET.rules
    )
    assert orphans == []
