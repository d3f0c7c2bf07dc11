"""Every rule is proven by a failing and a passing fixture, run through the real engine.

Layout: ``tests/rules/<CODE>/fail/`` and ``tests/rules/<CODE>/pass/``, each a
small capacity repository (measurements shared by all fixtures live in
``tests/rules/_traces/``; the fixtures root is ``tests/rules``). In ``fail/``
every line where the rule must report carries a comment ``# expect: <CODE>``; the test asserts that the rule reports
exactly those lines (file and line), and nothing in ``pass/``, where the rule
must still apply to at least one subject (else the pass fixture proves nothing).
Built-in document checks (PL0xx) are proven by the loader and CLI tests.
"""

from __future__ import annotations

import functools

import pytest

from fixture_helpers import FIXTURES, RULESET
from fixture_helpers import expected_marks as expected
from fixture_helpers import reported_marks as reported

#: Rules that judge a change (--diff) need git history; tests/test_history_rule.py proves them.
HISTORY_RULES = {"PL950"}
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
def _pass_run(code: str) -> tuple[frozenset[tuple[str, int]], frozenset[str]]:
    """(lines reported for ``code``, codes of rules that applied to a subject) on ``code``'s pass fixture.

    One engine run serves both pass-fixture tests; the rules' applicability is recorded
    by wrapping the engine's own test of a rule's ``needs`` and ``when``.
    """
    from policylint import evaluate

    applied: set[str] = set()
    real = evaluate._applies

    def spy(rule, view, params):  # type: ignore[no-untyped-def]
        applies = real(rule, view, params)
        if applies:
            applied.add(rule.code)
        return applies

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(evaluate, "_applies", spy)
        lines = reported(FIXTURES / code / "pass", code)
    return frozenset(lines), frozenset(applied)


@pytest.mark.parametrize("code", CHECKED)
def test_rule_passes_on_pass_fixture(code: str) -> None:
    assert _pass_run(code)[0] == set()


def test_no_fixture_for_unknown_rule() -> None:
    orphans = sorted(
        p.name for p in FIXTURES.iterdir() if p.is_dir() and not p.name.startswith("_") and p.name not in RULESET.rules
    )
    assert orphans == []


#: Rules whose ``when`` already is the finding: a workload without a declared trace can
#: never be measured, so PL105 applies only where it fails; its pass fixture shows the
#: traced workload it leaves alone.
APPLIES_ONLY_TO_FAIL = {"PL105"}
#: Pass fixtures that still give their rule no subject to judge (to be rewritten so the
#: rule applies and is satisfied; strict, so a fixed fixture must leave this list).
PASS_FIXTURES_TO_REWRITE = {"PL904"}


def _pass_param(code: str) -> object:
    if code in PASS_FIXTURES_TO_REWRITE:
        return pytest.param(code, marks=pytest.mark.xfail(strict=True, reason=f"{code}/pass applies to no subject"))
    return code


@pytest.mark.parametrize("code", [_pass_param(c) for c in CHECKED if c not in APPLIES_ONLY_TO_FAIL])
def test_pass_fixture_exercises_its_rule(code: str) -> None:
    """A pass fixture proves something only if the rule judged at least one subject there and let it pass."""
    lines, applied = _pass_run(code)
    assert lines == set()
    assert code in applied, f"{code}/pass gives the rule no subject it applies to"
