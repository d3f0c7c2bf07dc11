"""Property tests for every entry point that takes user data (trace readers are tested beside them).

Each property states part of the contract - never an internal error, a finding
with a position or one clear error instead - over generated inputs. The number
of examples is bounded so the suite stays fast; ``fuzz/run.py`` runs the same
kind of inputs for as long as it is given.
"""

from __future__ import annotations

import json
import re
import string
from collections import Counter
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import policylint.model.load.compose as compose
from policylint.model.config_checks import check_plain, validate_settings
from policylint.errors import PolicylintError
from policylint.engine.filter import find_comment, parse_directive, read_baseline
from policylint.model.load import LoadLimits, SourceFile, parse_text
from policylint.model.schedulers.quantity import MAX_COUNT, gpu_count, parse_quantity, whole_count

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# -- YAML loading ------------------------------------------------------------------------------------

#: Fragments that make YAML interesting: structure, tags, anchors, numbers, odd characters.
YAML_PIECES = st.sampled_from(
    [
        "a", "b", "apiVersion", "kind", "spec", ": ", ":", "\n", "  ", "- ", "[", "]", "{", "}", ", ", "---\n",
        "...\n", "&x ", "*x", "<<: ", "!!int ", "!!float ", "!!bool ", "!!str ", "!!binary ", "!t ", "? ", "'",
        '"', "#", " # c\n", "1", "-1", "0x1F", "0o7", "1_000", "1:30", ".nan", ".inf", "1e5", "9" * 50, "~",
        "yes", "2026-12-01", "é", "日本", "\\", "|\n", ">\n", "\t", "\r\n", "\x00", "\x85", "\ufeff", "\u2028",
    ]
)
YAML_TEXT = st.lists(YAML_PIECES, max_size=40).map("".join)


def _parse(text: str, limits: LoadLimits = LoadLimits()) -> SourceFile:
    source = SourceFile(path=Path("x.yaml"), display="x.yaml", text=text)
    parse_text(source, limits)
    return source


def _snapshot(source: SourceFile) -> tuple[object, ...]:
    docs = [(d.index, repr(d.data), sorted(d.positions._values.items(), key=repr)) for d in source.documents]
    return docs, [(f.code, f.line, f.column, f.message) for f in source.findings]


@FAST
@given(YAML_TEXT)
def test_loading_never_raises_and_every_finding_has_a_position(text: str) -> None:
    source = _parse(text)
    # YAML 1.1 line breaks; the parser sees one more, final line break
    lines = len(re.split(r"\r\n|[\n\r\x85\u2028\u2029]", text)) + 1
    for f in source.findings:
        assert f.code.startswith("PL0")
        assert 1 <= f.line <= lines + 1 and f.column >= 1
        assert "\n" not in f.message


@FAST
@given(text=YAML_TEXT)
def test_libyaml_and_pure_python_give_the_same_result(text: str, monkeypatch_module: pytest.MonkeyPatch) -> None:
    if not compose.LIBYAML:
        pytest.skip("libyaml is not installed")
    with_c = _snapshot(_parse(text))
    monkeypatch_module.setattr(compose, "LIBYAML", False)
    try:
        pure = _snapshot(_parse(text))
    finally:
        monkeypatch_module.setattr(compose, "LIBYAML", True)
    assert with_c == pure


@FAST
@given(st.integers(1, 30), st.integers(1, 30), st.integers(1, 8))
def test_budgets_hold_for_any_shape(width: int, documents: int, limit_docs: int) -> None:
    """Whatever the file's shape, the work done is within the limits, and refusal is a PL005 finding."""
    text = ("---\n" + "k: [" + ", ".join(["1"] * width) + "]\n") * documents
    limits = LoadLimits(max_nodes=50, max_documents=limit_docs)
    source = _parse(text, limits)
    assert len(source.documents) <= limit_docs
    built = sum(1 + len(d.data["k"]) for d in source.documents)
    assert built <= 50
    refused = [f for f in source.findings if f.code == "PL005"]
    over = documents > limit_docs or (width + 2) * min(documents, limit_docs) > 50
    assert bool(refused) == over


@pytest.fixture(scope="module")
def monkeypatch_module() -> Iterator[pytest.MonkeyPatch]:
    patch = pytest.MonkeyPatch()
    yield patch
    patch.undo()


# -- quantities --------------------------------------------------------------------------------------

QUANTITY_TEXT = st.one_of(
    st.from_regex(r"\A[+-]?[0-9]{1,12}(\.[0-9]{0,6})?(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]{1,12})?\Z"),
    st.text(alphabet=string.printable, max_size=30),
)
QUANTITY_VALUE = st.one_of(
    QUANTITY_TEXT, st.integers(), st.floats(allow_nan=True, allow_infinity=True), st.booleans(), st.none()
)


@FAST
@given(QUANTITY_VALUE)
def test_quantity_is_a_finite_decimal_or_a_value_error(value: object) -> None:
    try:
        q = parse_quantity(value)
    except ValueError as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    assert isinstance(q, Decimal) and q.is_finite()
    assert q.adjusted() <= 30


@FAST
@given(QUANTITY_VALUE)
def test_gpu_count_is_a_bounded_whole_number_or_a_value_error(value: object) -> None:
    try:
        n = gpu_count(value)
    except ValueError:
        return
    assert isinstance(n, int) and 0 <= n <= MAX_COUNT


@FAST
@given(st.one_of(st.integers(), st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=5), st.none()))
def test_whole_count_accepts_only_whole_numbers_in_range(value: object) -> None:
    try:
        n = whole_count(value, "replicas")
    except ValueError as exc:
        assert str(exc).startswith("replicas must be")
        return
    assert n == value and 0 <= n <= MAX_COUNT


# -- configuration -----------------------------------------------------------------------------------

JSONISH = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8)
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.text(max_size=8), st.integers()), inner, max_size=4),
    ),
    max_leaves=30,
)
CONFIG_KEYS = st.sampled_from(
    ["select", "ignore", "extend-select", "per-file-ignores", "exclude", "fail-on", "now", "rules", "limits",
     "gpu-resources", "baseline", "rule-dirs"]
)


@FAST
@given(st.dictionaries(CONFIG_KEYS, JSONISH, max_size=4))
def test_any_configuration_is_accepted_or_one_clear_error(raw: dict[str, object]) -> None:
    try:
        check_plain(raw, "cfg.yaml")
        validate_settings(raw, "cfg.yaml")
    except PolicylintError as exc:
        text = str(exc)
        assert text.startswith("cfg.yaml") and "\n" not in text


@FAST
@given(st.integers(0, 60))
def test_nesting_beyond_the_limit_names_the_key(depth: int) -> None:
    value: object = "x"
    for _ in range(depth):
        value = [value]
    try:
        check_plain({"exclude": value}, "cfg.yaml")
    except PolicylintError as exc:
        assert depth + 1 > 20 and exc.key is not None and exc.key.startswith("exclude[0]")
    else:
        assert depth + 1 <= 20


# -- suppression comments ----------------------------------------------------------------------------

COMMENT_PIECES = st.sampled_from(
    ["# ", "#", "policylint:", " ", "  ", "\t", "disable", "disable-file", "=", "PL101", "reserved-above-baseline",
     ",", "until=", "2027-01-01", "--", " why", "x", "é", "\u00a0"]
)


@FAST
@given(st.lists(COMMENT_PIECES, max_size=30).map("".join))
def test_comment_parsing_never_raises(line: str) -> None:
    found = find_comment(line)
    if found is None:
        assert not re.search(r"#\s*policylint:", line)
        return
    at, body = found
    assert line[at] == "#"
    directive = parse_directive(body)
    if directive is not None:
        assert directive.kind in ("disable", "disable-file")
        assert directive.rules.strip()


@FAST
@given(
    st.lists(st.sampled_from(["PL101", "PL2", "reserved-above-baseline"]), min_size=1, max_size=4),
    st.one_of(st.none(), st.sampled_from(["2027-01-01", "soon"])),
    st.one_of(st.none(), st.text(alphabet=string.ascii_letters + " -", max_size=20)),
    st.integers(0, 3),
)
def test_written_directive_reads_back(rules: list[str], until: str | None, reason: str | None, spaces: int) -> None:
    pad = " " * spaces
    text = f"disable={pad}{','.join(rules)}" + (f" {pad}until={until}" if until else "") + (
        f" {pad}-- {reason}" if reason is not None else ""
    )
    directive = parse_directive(text)
    assert directive is not None
    assert [r.strip() for r in directive.rules.split(",")] == rules
    assert directive.until == until
    assert directive.reason == (reason.strip() if reason is not None else None)


# -- baselines ---------------------------------------------------------------------------------------

ENTRY = st.fixed_dictionaries(
    {},
    optional={
        "code": st.one_of(st.text(max_size=6), st.integers(), st.none()),
        "file": st.one_of(st.text(max_size=6), st.integers(), st.none(), st.lists(st.integers(), max_size=2)),
        "subject": st.one_of(st.text(max_size=6), st.booleans()),
        "path": st.one_of(st.text(max_size=6), st.floats(allow_nan=True)),
    },
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(st.lists(ENTRY, max_size=5).map(lambda es: {"version": 1, "findings": es}), JSONISH))
def test_any_baseline_json_is_read_or_one_clear_error(tmp_path: Path, data: object) -> None:
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    try:
        keys = read_baseline(path)
    except PolicylintError as exc:
        assert "\n" not in str(exc) and str(exc).startswith(str(path))
        return
    assert isinstance(keys, Counter)
    assert all(isinstance(part, str) for key in keys for part in key)
