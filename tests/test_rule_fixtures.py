"""Every rule is proven by a failing and a passing fixture, run through the real engine.

Layout: ``tests/rules/<CODE>/fail/`` and ``tests/rules/<CODE>/pass/``, each a
small capacity repository (measurements shared by all fixtures live in
``tests/rules/_traces/``; the fixtures root is ``tests/rules``). In ``fail/``
every line where the rule must report carries a comment ``# expect: <CODE>``; the test asserts that the rule reports
exactly those lines (file and line), and nothing in ``pass/`` - where the rule
must still apply to at least one subject, or the pass fixture proves nothing.
Built-in document checks (PL0xx) are proven by the loader and CLI tests.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import pytest

from fixture_helpers import FIXTURES, RULESET, run_fixture
from fixture_helpers import expected_marks as expected
from fixture_helpers import reported_marks as reported

if TYPE_CHECKING:
    from policylint.engine.result import LintResult

#: Rules that judge a change (--diff) need git history; tests/test_history_rule.py proves them.
HISTORY_RULES = {"PL950", "PL951", "PL952"}
CHECKED = sorted(code for code, rule in RULESET.rules.items() if not rule.builtin and code not in HISTORY_RULES)


@pytest.mark.parametrize("code", CHECKED)
def test_rule_has_fixtures(code: str) -> None:
    for kind in ("fail", "pass"):
        assert (FIXTURES / code / kind).is_dir(), f"{code} has no {kind}/ fixture"
    assert expected(FIXTURES / code / "fail", code), f"{code}/fail has no '# expect: {code}' mark"


@pytest.mark.parametrize("code", CHECKED)
def test_rule_fails_on_fail_fixture(code: str) -> None:
    folder = FIXTURES / code / "fail"
    assert reported(folder, code) == expected(folder, code)


@functools.cache
def pass_result(code: str) -> LintResult:
    """The lint of ``code``'s pass fixture, run once for the two tests below (they only read it)."""
    return run_fixture(FIXTURES / code / "pass")


@pytest.mark.parametrize("code", CHECKED)
def test_rule_passes_on_pass_fixture(code: str) -> None:
    assert reported(FIXTURES / code / "pass", code, pass_result(code)) == set()


def applied_subjects(code: str, kind: str) -> set[str]:
    """The subjects rule ``code`` applied to (needs known, when met) in a fixture folder."""
    from policylint.engine.evaluate import Applied, evaluate

    result = pass_result(code) if kind == "pass" else run_fixture(FIXTURES / code / kind)
    applied: Applied = {}
    evaluate([RULESET.rules[code]], result.views, RULESET.params, applied)
    return applied.get(code, set())


@pytest.mark.parametrize("code", CHECKED)
def test_rule_applies_in_pass_fixture(code: str) -> None:
    # A pass fixture on which the rule never applies would pass for any rule at all.
    assert applied_subjects(code, "pass"), f"{code}/pass: the rule applies to no subject"


def test_no_fixture_for_unknown_rule() -> None:
    orphans = sorted(
        p.name for p in FIXTURES.iterdir() if p.is_dir() and not p.name.startswith("_") and p.name not in RULESET.rules
    )
    assert orphans == []
