"""The shortcuts of a warm one-file run's neighbours give what the plain computations give.

* a workload sheet made by :func:`policylint.facts.builder` from its values in order is the
  sheet :func:`policylint.facts.rebuild` makes (attributes, their order and types, parts); a
  sheet whose ``__post_init__`` is its own is made by calling its class; names out of order
  give no maker;
* :func:`policylint.engine.verdicts.quick_canonical` texts tell apart what
  :func:`~policylint.engine.verdicts.canonical` tells apart, and refuse what it refuses;
* :func:`policylint.engine.evaluate.evaluate` with a shared set of skipped codes per view gives
  the findings, in order, it gives when every view is asked alone.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import EXAMPLES

from policylint.cache.exact import is_plain
from policylint.engine.evaluate import evaluate
from policylint.engine.index_store import same_by_value, same_value
from policylint.engine.linter import LintOptions, lint
from policylint.engine.ruleset import load_rules
from policylint.engine.sheets import WorkloadFactSheet
from policylint.cache.exact import quick_canonical
from policylint.engine.verdicts import canonical
from policylint.facts import Facts, _direct, builder, fact, rebuild
from policylint.resources import rules_dir

NOW = dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc)


@pytest.fixture(scope="module")
def ruleset() -> Any:
    return load_rules([rules_dir()])


@pytest.fixture(scope="module")
def bad_views(ruleset: Any) -> list[Any]:
    root = EXAMPLES / "bad"
    return lint([root], LintOptions(root=root, now=NOW, ruleset=ruleset)).views


def _attrs(sheet: Any) -> Any:
    return [type(sheet), [(k, _attrs(v) if isinstance(v, Facts) else v) for k, v in vars(sheet).items()]]


def test_a_built_sheet_is_the_rebuilt_sheet(bad_views: list[Any]) -> None:
    sheets = [v.facts for v in bad_views if v.subject == "workload"]
    assert sheets and _direct(WorkloadFactSheet)
    names = list(WorkloadFactSheet.routes())
    make = builder(WorkloadFactSheet, tuple(names))
    assert make is not None
    for sheet in sheets:
        values = [sheet[n] for n in names]
        kept = list(values)
        made, plain = make(values), rebuild(WorkloadFactSheet, dict(zip(names, values)))
        assert values == kept  # the list given is read, not changed
        assert same_value(_attrs(made), _attrs(plain))
        assert same_value(dict(made), dict(sheet))
    assert builder(WorkloadFactSheet, tuple(reversed(names))) is None
    assert builder(WorkloadFactSheet, tuple(names[:-1])) is None


@dataclasses.dataclass(kw_only=True, eq=False)
class _Counted(Facts):
    a: int = fact("a")
    b: str | None = fact("b")

    def __post_init__(self) -> None:
        super().__post_init__()
        self.b = f"{self.b}!"  # a sheet that changes what it is given: made by calling it


def test_a_sheet_with_its_own_post_init_is_made_by_calling_it() -> None:
    assert not _direct(_Counted)
    make = builder(_Counted, ("a", "b"))
    assert make is not None
    made = make([1, "x"])
    assert made.b == "x!" and same_value(_attrs(made), _attrs(rebuild(_Counted, {"a": 1, "b": "x"})))


def test_quick_canonical_texts_are_exact() -> None:
    values: list[Any] = [None, True, False, 0, 1, 1.0, 0.0, -0.0, "1", "", [], (), {}, [1], (1,), [1.0], [True],
                         {"a": 1}, {"a": 1.0}, {"a": [1, (2,)]}, [None], [[]], ["a", "b"], ["a,b"], ("a", "b"),
                         float("inf"), float("-inf"), 10**40, "it's", 'say "x"', "\0", [("x",), "y"]]
    texts = [quick_canonical(v) for v in values]
    assert None not in texts
    for (a, ta), (b, tb) in itertools.combinations(zip(values, texts), 2):
        assert (ta == tb) == (canonical(a) == canonical(b)), (a, b)
    assert quick_canonical(float("nan")) == quick_canonical(float("nan"))


class _Int(int):
    pass


def test_quick_canonical_refuses_what_canonical_refuses() -> None:
    loop: list[Any] = []
    loop.append(loop)
    for value in (_Int(1), [_Int(1)], {1: "a"}, {"a": object()}, {1.5}, loop, [b"x"], 10**5000):
        assert canonical(value) is None
        assert quick_canonical(value) is None


def test_shared_skip_sets_judge_as_views_asked_alone(bad_views: list[Any], ruleset: Any) -> None:
    rules = [r for r in ruleset.sorted() if not r.builtin]
    codes = sorted({r.code for r in rules if r.subject == "workload"})
    skipped = frozenset(codes[::2])
    workloads = [v for v in bad_views if v.subject == "workload"]
    assert len(workloads) > 2
    judged = {id(v) for v in workloads[1::2]}

    def shared(view: Any) -> frozenset[str]:
        return skipped if id(view) in judged else frozenset()

    def alone(view: Any) -> set[str]:
        return set(skipped) if id(view) in judged else set()  # a new set per question

    def key(findings: list[Any]) -> list[Any]:
        return [(f.file, f.line, f.column, f.code, f.message, f.hint, f.subject) for f in findings]

    params = ruleset.params
    once = key(evaluate(rules, bad_views, params, skip=shared))
    assert once == key(evaluate(rules, bad_views, params, skip=alone))
    everything = key(evaluate(rules, bad_views, params))
    assert once != everything and set(once) <= set(everything)


def test_a_run_sketch_is_packed_only_when_every_number_has_an_8_byte_form() -> None:
    import struct

    from policylint.engine.index_store import packed_run_sketch

    sketch = [0, 1, 891616711748, 2**63 - 1, -5, -(2**63)]
    packed = packed_run_sketch(sketch)
    assert isinstance(packed, bytes) and list(struct.unpack(f"<{len(sketch)}q", packed)) == sketch
    assert packed_run_sketch([2**63]) == [2**63]  # no 8-byte signed form: kept as numbers
    assert packed_run_sketch([]) == [] and packed_run_sketch(None) is None


def test_provenance_paths_are_taken_from_the_record_only_for_the_same_measured_files(tmp_path: Any) -> None:
    from pathlib import Path

    from policylint.engine.index_store import Record, files_of, recorded_files

    class _Ref:
        def __init__(self, path: Path | None) -> None:
            self.path = path

    class _W:
        def __init__(self, paths: dict[str, Path | None]) -> None:
            self.measurements = {role: _Ref(p) for role, p in paths.items()}

    w: Any = _W({"concurrency": tmp_path / "a.csv", "vram": tmp_path / "b.csv"})
    plain = files_of(w)
    assert plain is not None
    rec = Record([0] * 5, "", "", [[0] * 5] * 2, (), "", {}, False, None, None, None, False, {},
                 files=[["x", "planted"], ["y", "planted"]])
    assert recorded_files(rec, w) == plain  # other measured paths: computed
    rec.files = [[m, "kept"] for m, _ in plain]
    assert recorded_files(rec, w) == [(m, "kept") for m, _ in plain]  # the same paths: the record's
    rec.files = None
    assert recorded_files(rec, w) == plain
    empty: Any = _W({"concurrency": None})
    assert recorded_files(rec, empty) is None


_SCALAR = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([0.0, -0.0, 1.0, float("nan"), -float("nan"), float("inf"), 1e300, 2**40, -(2**70)]),
    st.sampled_from(["", "a", "1", "it's", 'x"y', "a, b"]), st.builds(_Int, st.integers(0, 1)),
    st.binary(max_size=2), st.binary(max_size=2).map(bytearray),
)
_VALUE = st.recursive(
    _SCALAR,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3),
    ),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None)
@given(_VALUE, _VALUE)
def test_same_value_answers_as_value_by_value(a: Any, b: Any) -> None:
    """Plain containers compared by their exact texts: the same answer as value by value, for any pair."""
    assert same_value(a, b) == same_by_value(a, b)
    assert same_value(a, a) and same_value(b, b) == same_by_value(b, b)
    if is_plain(a):  # an equal value made afresh from its literal text (NaN is NaN, -0.0 is -0.0): the same
        copy = eval(repr(a), {"nan": float("nan"), "inf": float("inf")})
        assert same_value(a, copy) and same_value(copy, a)


def test_same_value_keeps_what_value_by_value_refuses() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(RecursionError):
        same_value(loop, [loop])
    assert same_value([10**5000], [10**5000]) and not same_value([10**5000], [10**5000 + 1])
    assert not same_value({"a": 1, "b": 2}, {"b": 2, "a": 1})  # key order counts
    assert not same_value([0.0], [-0.0]) and same_value([float("nan")], [float("nan")])
    assert same_value([float("nan")], [-float("nan")]) and same_value({"a": [float("nan")]}, {"a": [-float("nan")]})
    assert not same_value([bytearray(b"x")], [b"x"]) and not same_value([_Int(1)], [1])  # marshal writes both alike
    # a plain value against one that is not: not the same, whichever side is walked
    assert not same_value([1], [_Int(1)]) and not same_value({"a": "x"}, {"a": bytearray(b"x")})
    assert not same_value(["x"], [b"x"]) and not same_value([("a",)], [["a"]])
    assert not same_value([1], [1.0]) and not same_value([1], [True]) and not same_value([1], (1,))


def test_a_recorded_list_of_fact_names_reuses_the_maker_of_an_equal_list(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each record made in a run holds a list of names of its own: the maker is built once per distinct list."""
    import policylint.facts
    from policylint.engine import index_store as repo_index

    made: list[int] = []
    real = policylint.facts.builder

    def counting(sheet: Any, names: Any) -> Any:
        made.append(1)
        return real(sheet, names)

    monkeypatch.setattr(policylint.facts, "builder", counting)
    monkeypatch.setattr(repo_index, "_SHAPES", {})
    names = list(WorkloadFactSheet.routes())
    shapes = [tuple(names) for _ in range(50)]  # 50 equal lists, 50 identities
    found = [repo_index.shape_of(s) for s in shapes]
    assert len(made) == 1 and found[0][0] is not None
    assert all(f[0] is found[0][0] and f[1] == {n: i for i, n in enumerate(names)} for f in found)
    other = tuple(reversed(names))
    assert repo_index.shape_of(other)[0] is None and len(made) == 2  # not the sheet's order: no maker
    monkeypatch.setattr(repo_index, "_MAX_SHAPES", 4)
    for s in [tuple(names) for _ in range(20)]:
        repo_index.shape_of(s)
    assert len(repo_index._SHAPES) <= 4  # bounded


@settings(max_examples=400, deadline=None)
@given(_VALUE, _VALUE)
def test_quick_bytes_tell_values_apart_as_exactly_as_texts_do(a: Any, b: Any) -> None:
    """Where both forms exist, equal bytes exactly when equal texts; and equal values made apart give equal bytes."""
    from policylint.cache.exact import quick_bytes

    ta, tb, ba, bb = quick_canonical(a), quick_canonical(b), quick_bytes(a), quick_bytes(b)
    if ta is not None and tb is not None:
        assert ba is not None and bb is not None
        assert (ba == bb) == (ta == tb), (a, b)
    if ta is not None:
        copy = eval(repr(a), {"nan": float("nan"), "inf": float("inf")})  # no shared objects, no interned strings
        assert quick_bytes(copy) == ba


def test_quick_bytes_do_not_hang_on_references_or_interning() -> None:
    """The same value gives the same bytes however many references its parts have and however its strings were made."""
    import sys

    from policylint.cache.exact import quick_bytes

    part = [1.5, "pool"]
    shared = [part, part, {"k": part}]
    apart = [[1.5, "".join(["po", "ol"])], [1.5, sys.intern("pool")], {"k": [1.5, "pool"]}]
    assert quick_bytes(shared) == quick_bytes(apart)
    loop: list[Any] = []
    loop.append(loop)
    for value in (_Int(1), [_Int(1)], {"a": object()}, loop):
        assert quick_bytes(value) is None
    assert len({quick_bytes(v) for v in (1, 1.0, True, "1", [1], (1,), 0.0, -0.0)}) == 8
