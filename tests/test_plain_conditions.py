"""Plain conditions judged without cerberus give cerberus' verdict (policylint.engine.plain_conditions).

Every ``when`` and ``require`` of the shipped rules, and generated schemas over every rule
the fast verdict handles, are judged on generated facts (absent, None, booleans, integers,
floats with NaN and infinities, strings, empty and full lists, dictionaries) both ways: the
verdicts must agree, and after a failed verdict the errors read are cerberus' own.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import REPO
from policylint.engine.conditions import _substitute, _validator_class, compile_schema
from policylint.engine.ruleset import load_rules
from policylint.engine.plain_conditions import RULES, verdict_of

RULESET = load_rules([REPO / "rules"])
CONDITIONS = [
    (f"{rule.code}.{part}", _substitute(schema, RULESET.params.get(rule.code, {})))
    for rule in RULESET.sorted()
    if not rule.builtin
    for part, schema in (("when", rule.when), ("require", rule.require))
    if schema
]
FACT_NAMES = sorted({name for _, schema in CONDITIONS for name in schema} | {"other", "spare"})

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, 1.0, 1.0 + 1e-10, 2.0, 0.5, -0.0, 19.996, 20.0]),
    st.sampled_from(["", "reject", "inference", "training", "queue", "x"]),
)
values = st.one_of(
    scalars,
    st.lists(st.one_of(st.integers(0, 3), st.sampled_from(["a", "b", "reject", True])), max_size=4),
    st.dictionaries(st.sampled_from(["a", "b"]), st.integers(0, 2), max_size=2),
)


def _cerberus(schema: dict[str, Any], facts: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    validator = _validator_class()(schema, allow_unknown=True)
    ok = bool(validator.validate(facts, normalize=False))
    return ok, dict(validator.errors)


def _agree(schema: dict[str, Any], facts: dict[str, Any]) -> None:
    try:
        expected = _cerberus(schema, facts)
    except TypeError:  # cerberus raises: so must the verdict
        verdict = verdict_of(_validator_class()(schema, allow_unknown=True).schema)
        if verdict is not None:
            with pytest.raises(TypeError):
                verdict(facts)
        return
    verdict = verdict_of(_validator_class()(schema, allow_unknown=True).schema)
    if verdict is not None:
        assert verdict(facts) is expected[0], (schema, facts)


@pytest.mark.parametrize(("name", "schema"), CONDITIONS, ids=[n for n, _ in CONDITIONS])
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_shipped_condition_gets_cerberus_verdict(name: str, schema: dict[str, Any], data: st.DataObject) -> None:
    facts = data.draw(st.dictionaries(st.sampled_from(FACT_NAMES), values, max_size=8))
    _agree(schema, facts)


def test_most_shipped_conditions_are_judged_without_cerberus() -> None:
    fast = [name for name, schema in CONDITIONS if verdict_of(_validator_class()(schema, allow_unknown=True).schema)]
    assert len(fast) >= len(CONDITIONS) * 3 // 4, sorted(set(n for n, _ in CONDITIONS) - set(fast))


rule_values = {
    "min": st.one_of(st.integers(-2, 3), st.floats(-2, 3), st.just("b")),
    "max": st.one_of(st.integers(-2, 3), st.floats(-2, 3)),
    "allowed": st.lists(st.one_of(st.integers(0, 3), st.sampled_from(["a", "reject", True, False])), max_size=3),
    "contains": st.one_of(  # never empty: cerberus refuses that schema
        st.sampled_from(["a", "inference", 1, True, 2.5]),
        st.lists(st.one_of(st.integers(0, 3), st.sampled_from(["a", "b", "reject", True])), min_size=1, max_size=3),
    ),
    "nullable": st.booleans(),
    "empty": st.booleans(),
    "max_over": st.fixed_dictionaries({"field": st.just("other")}, optional={"margin": st.sampled_from([0, 0.1, 0.5])}),
    "min_field": st.just("other"),
    "max_field": st.just("other"),
    "below_field": st.just("other"),
    "below": st.sampled_from([0, 1, 2.5]),
    "excludes_all": st.lists(st.sampled_from(["a", "b", 1]), min_size=1, max_size=2),
}


@st.composite
def schemas(draw: st.DrawFn) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for field in draw(st.lists(st.sampled_from(["x", "y", "spare"]), min_size=1, max_size=2, unique=True)):
        names = draw(st.lists(st.sampled_from(sorted(RULES)), min_size=1, max_size=3, unique=True))
        out[field] = {n: draw(rule_values[n]) for n in names}
    return out


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schemas(), st.dictionaries(st.sampled_from(["x", "y", "other", "spare"]), values, max_size=4))
def test_generated_plain_conditions_get_cerberus_verdict(schema: dict[str, Any], facts: dict[str, Any]) -> None:
    _agree(schema, facts)


@settings(max_examples=300, deadline=None)
@given(schemas(), st.dictionaries(st.sampled_from(["x", "y", "other", "spare"]), values, max_size=4))
def test_a_compiled_condition_reports_cerberus_errors(schema: dict[str, Any], facts: dict[str, Any]) -> None:
    condition = compile_schema(schema, {})
    # as the condition was before its verdicts: cerberus on the compiled schema (keys sorted) and the projection
    compiled = json.loads(json.dumps(schema, sort_keys=True))
    try:
        expected_ok, expected_errors = _cerberus(compiled, {k: facts[k] for k in condition.fields if k in facts})
    except TypeError:
        return
    assert condition.validate(facts) is expected_ok
    assert condition.errors == expected_errors


def test_a_condition_with_other_rules_is_left_to_cerberus(tmp_path: Path) -> None:
    assert verdict_of({"x": {"minlength": 1}}) is None
    assert verdict_of({"x": {"min": 1, "type": "number"}}) is None
    assert compile_schema({"x": {"minlength": 1}}, {}).verdict is None


def test_a_trusted_condition_is_marked_when_first_compiled(monkeypatch: pytest.MonkeyPatch) -> None:
    """A cached rule set's conditions skip cerberus' schema check, each one when it is compiled, and only those."""
    from cerberus.schema import DefinitionSchema

    from policylint.engine import conditions

    checked: list[object] = []
    real = DefinitionSchema._validate

    def counting(self: object, schema: object) -> None:
        checked.append(schema)
        real(self, schema)  # type: ignore[arg-type]

    monkeypatch.setattr(DefinitionSchema, "_validate", counting)
    monkeypatch.setattr(conditions, "_TRUSTED", set())
    trusted = ({"trust_probe_a": {"min": "$low"}}, {"low": 3})
    other = ({"trust_probe_b": {"min": "$low"}}, {"low": 4})
    conditions.trust_conditions([trusted])
    assert conditions.compile_schema(*trusted).validate({"trust_probe_a": 5})
    assert checked == []
    assert not conditions.compile_schema(*other).validate({"trust_probe_b": 1})
    assert len(checked) == 1  # the condition no cached rule set vouched for was checked


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schemas(), st.dictionaries(st.sampled_from(["x", "y", "other", "spare"]), values, max_size=4))
def test_the_first_failing_field_is_cerberus_first_error(schema: dict[str, Any], facts: dict[str, Any]) -> None:
    """A rule's message names the first failing field of its require: a plain condition finds it without cerberus."""
    from policylint.engine.plain_conditions import failures_of

    validator = _validator_class()(schema, allow_unknown=True)
    failures = failures_of(validator.schema)
    assert failures is not None
    try:
        ok = validator.validate(facts, normalize=False)
    except TypeError:
        with pytest.raises(TypeError):
            failures(facts)
        return
    assert failures(facts) == sorted(validator.errors)
    assert (not failures(facts)) is ok
    condition = compile_schema(schema, {})
    if not condition.validate(facts):
        assert condition.first_failure() == sorted(validator.errors)[0]


@pytest.fixture
def fresh_conditions(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The condition tables as a new process has them."""
    from policylint.engine import conditions

    monkeypatch.setattr(conditions, "_TRUSTED", set())
    monkeypatch.setattr(conditions, "_PLAIN", {})
    conditions._compile.cache_clear()
    yield conditions
    conditions._compile.cache_clear()


SHIPPED = [
    (schema, RULESET.params.get(rule.code, {}))
    for rule in RULESET.sorted()
    if not rule.builtin
    for schema in (rule.when, rule.require)
    if schema
]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_kept_plain_form_judges_as_cerberus_does(fresh_conditions: Any, data: st.DataObject) -> None:
    """A shipped condition compiled from its kept form (no cerberus validator built) gives every answer the validator gives."""
    forms = fresh_conditions.plain_forms(SHIPPED)
    assert sum(f is not None for f in forms) >= len(SHIPPED) * 3 // 4
    fresh_conditions._compile.cache_clear()
    fresh_conditions.trust_conditions(SHIPPED, forms)
    facts = data.draw(st.dictionaries(st.sampled_from(FACT_NAMES), values, max_size=8))
    for (schema, params), form in zip(SHIPPED, forms):
        condition = compile_schema(schema, params)
        assert (condition._validator is None) is (form is not None)  # a kept form builds no validator
        reference = _validator_class()(_substitute(schema, params), allow_unknown=True)
        projected = {k: facts[k] for k in condition.fields if k in facts}
        try:
            expected = bool(reference.validate(projected, normalize=False))
        except TypeError:
            continue
        assert condition.validate(facts) is expected
        if not expected:
            assert condition.first_failure() == sorted(reference.errors)[0]


@pytest.mark.parametrize(
    "forms",
    [None, "text", [], ["{not json"], ['{"x": {"minlength": 1}}'], ['{"x": 1}'], [7]],
    ids=["none", "text", "wrong-length", "not-json", "other-rule", "not-rules", "not-text"],
)
def test_kept_forms_that_do_not_fit_are_ignored(fresh_conditions: Any, forms: Any) -> None:
    condition = ({"form_probe": {"min": "$low"}}, {"low": 3})
    fresh_conditions.trust_conditions([condition], forms)
    assert fresh_conditions._PLAIN == {}
    compiled = compile_schema(*condition)
    assert compiled._validator is not None  # built with cerberus, as without a kept form
    assert not compiled.validate({"form_probe": 1}) and compiled.first_failure() == "form_probe"


def test_a_warm_run_judges_plain_conditions_without_cerberus(tmp_path: Path) -> None:
    """With the rule cache filled, a check whose conditions are all plain never imports cerberus, and says the same."""
    from conftest import EXAMPLES, run_fresh

    check = ["check", str(EXAMPLES / "bad"), "--now", "2026-12-01"]
    runs = [run_fresh(check + extra, tmp_path, tmp_path / "cache") for extra in ([], [], ["--no-cache"])]
    assert ["cerberus" in modules for _, modules in runs] == [True, False, True]
    assert runs[0][0] == runs[1][0] == runs[2][0]
    assert "PL" in runs[1][0]  # findings were made, their fields named without cerberus
