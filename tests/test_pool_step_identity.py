"""The pool step's shortcuts give exactly what the plain computations give.

The step that adds the pool's facts to every workload (near copies across the
model, the pool's sheet, the pooled facts of each member) was made cheap per
member: runs shared between sketches are paired in whole arrays, a trace's real
path is resolved only for the members of a candidate pair, the pool's summed
sustained maxima are converted in one array, and a sheet gains its near-copy facts
without running ``__init__`` again. Each is held here to the plain computation it
replaced (frozen below), including the cases where it must fall back to it.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policylint.calc import runs
from policylint.engine import pool_view as pool_view_module
from policylint.engine.views import replaced
from policylint.engine.workload_view import gpus, to_gpus
from policylint.facts import Facts, fact
from policylint.measure.integrity import copies
from policylint.measure.integrity_facts import IntegrityWorkloadFacts

# --- the plain computations, as they were before the shortcuts ----------------------------------


def plain_pairs(sketches: Sequence[Sequence[int] | None]) -> set[tuple[int, int]]:
    """Pairs sharing a run named by at most 64 members: an index of runs to members."""
    by_run: dict[Any, list[int]] = {}
    for i, sketch in enumerate(sketches):
        for x in sketch or ():
            by_run.setdefault(x, []).append(i)
    pairs: set[tuple[int, int]] = set()
    for members in by_run.values():
        if 1 < len(members) <= 64:
            for j, a in enumerate(members):
                for b in members[j + 1 :]:
                    pairs.add((a, b) if a < b else (b, a))
    return pairs


def plain_copy_facts(
    workloads: Sequence[Any], stored: dict[str, Any], facts: Mapping[str, Mapping[str, Any]]
) -> dict[str, dict[str, Any]]:
    """copy_facts before the lazy paths: every path made absolute up front."""
    entries: list[tuple[str, str | None, str | None, Sequence[int] | None]] = []
    trace: dict[str, str] = {}
    for w in sorted(workloads, key=lambda w: w.name):
        view, measured = facts.get(w.name), stored.get(w.name)
        if view is None or measured is None:
            continue
        ref = w.measurements.get("concurrency")
        if ref is not None and ref.path is not None:
            os.path.realpath(ref.path)  # raises for a path no system call takes, as copy_facts does
        # a trace's identity in a pair is its path as written (made absolute, never resolved): one file
        # cited by one path is an open citation, the same file under another name (a link) is not
        path = os.path.abspath(ref.path) if ref is not None and ref.path is not None else None
        trace[w.name] = ref.display if ref is not None else ""
        sketch = (measured.integrity or {}).get("run_sketch")
        entries.append((w.name, path, view.get("pool"), sketch if isinstance(sketch, list) else None))
    skip = {frozenset((name, str(view["double_counted_with"]))) for name, view in facts.items() if view.get("double_counted_with")}
    reported = {name for name, view in facts.items() if view.get("double_counted_with")}
    values_of = {
        name: view.get("values_fingerprint") if (view.get("value_changes") or 0) >= 10 else None for name, view in facts.items()
    }
    out: dict[str, dict[str, Any]] = {}
    for name, _, _, sketch in entries:
        if (sketch or values_of.get(name)) and name not in reported:
            out[name] = {"near_copy_similarity": 0.0}
    def open_citation(na: str, nb: str) -> bool:
        # one file by one path: open with a share on either side (in one pool without one, PL111
        # judges a read that may overlap and this the rest: red team, 2026-12-07)
        return any(facts[n].get("measurement_share") is not None for n in (na, nb))

    for name, (other, similarity) in plain_near_copies(entries, skip, values_of, open_citation).items():
        if name in reported:
            continue
        out[name] = {
            "near_copy_of": other,
            "near_copy_similarity": similarity,
            "near_copy_trace": trace.get(other),
            "near_copy_pool": facts[other].get("pool"),
        }
    return out


def plain_near_copies(
    entries: Sequence[tuple[str, str | None, str | None, Sequence[int] | None]],
    skip: set[frozenset[str]],
    values_of: dict[str, str | None] | None,
    open_citation: Callable[[str, str], bool] | None = None,
) -> dict[str, tuple[str, float]]:
    pairs = plain_pairs([e[3] for e in entries])
    by_values: dict[str, list[int]] = {}
    for i, entry in enumerate(entries):
        printed = values_of.get(entry[0]) if values_of else None
        if printed:
            by_values.setdefault(printed, []).append(i)
    for members in by_values.values():
        for j, a in enumerate(members):
            for b in members[j + 1 :]:
                pairs.add((a, b) if a < b else (b, a))
    out: dict[str, tuple[str, float]] = {}
    for a, b in sorted(pairs):
        (na, pa, _, sa), (nb, pb, _, sb) = entries[a], entries[b]
        if na == nb or frozenset((na, nb)) in skip:
            continue
        if pa is not None and pa == pb and (open_citation is None or open_citation(na, nb)):
            continue
        same = values_of is not None and values_of.get(na) is not None and values_of.get(na) == values_of.get(nb)
        if same:
            sim = 1.0
        elif sa and sb:
            sim = runs.sketch_similarity(sa, sb)
        else:
            continue
        first, second = sorted((na, nb))
        if second not in out or sim > out[second][1]:
            out[second] = (first, sim)
    return out


def _canon(x: Any) -> Any:
    """A value as compared: its type and, for floats, every bit."""
    if isinstance(x, dict):
        return sorted((repr(k), _canon(v)) for k, v in x.items())
    if isinstance(x, (list, tuple, set, frozenset)):
        items = [_canon(v) for v in x]
        return (type(x).__name__, sorted(items) if isinstance(x, (set, frozenset)) else items)
    if isinstance(x, float):
        return ("float", x.hex())
    return (type(x).__name__, x)


# --- runs shared between sketches ----------------------------------------------------------------


@st.composite
def sketch_lists(draw: st.DrawFn) -> list[list[int] | None]:
    """Sketches drawn from a few bases (copies with edits), some empty or missing, runs named twice,
    and runs many members share (groups past 64 members are not paired)."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    crowd = int(rng.integers(0, 2**53))  # a run every member of a large crowd names
    bases = [[int(x) for x in rng.integers(0, int(draw(st.sampled_from([50, 2**53]))), size=int(rng.integers(1, 130)))] for _ in range(draw(st.integers(1, 5)))]
    out: list[list[int] | None] = []
    for _ in range(draw(st.integers(0, 160))):
        kind = int(rng.integers(0, 7))
        if kind == 0:
            out.append(None)
        elif kind == 1:
            out.append([])
        else:
            sketch = list(bases[int(rng.integers(0, len(bases)))])
            for _ in range(int(rng.integers(0, 30))):
                sketch[int(rng.integers(0, len(sketch)))] = int(rng.integers(-(2**63), 2**63 - 1))
            if kind == 5:
                sketch.append(sketch[0])  # a run named twice
            if kind == 6:
                sketch.append(crowd)
            out.append(sketch)
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(sketch_lists())
def test_shared_run_pairs_are_the_index_pairs(sketches: list[list[int] | None]) -> None:
    assert runs.shared_run_pairs(sketches) == plain_pairs(sketches)


def test_a_group_of_exactly_64_is_paired_and_65_is_not() -> None:
    for size, paired in ((64, True), (65, False)):
        sketches: list[list[int] | None] = [[7, i + 100] for i in range(size)]
        found = runs.shared_run_pairs(sketches)
        assert found == plain_pairs(sketches)
        assert bool(found) is paired


@pytest.mark.parametrize(
    "odd",
    [
        [True, 3],  # a bool is a run equal to 1, as a dict key is
        [1.0, 2.5],  # floats: 1.0 names the run 1
        [2**63, 5],  # past int64
        [-(2**63) - 1],
        ["a", 3],
    ],
)
def test_sketches_of_other_runs_fall_back_to_the_index(odd: list[Any], monkeypatch: pytest.MonkeyPatch) -> None:
    sketches: list[Any] = [[1, 3, 5], odd, [5, 1]]
    calls: list[int] = []
    plain = runs._shared_run_pairs_plain
    monkeypatch.setattr(runs, "_shared_run_pairs_plain", lambda s: calls.append(1) or plain(s))
    assert runs.shared_run_pairs(sketches) == plain_pairs(sketches)
    assert calls == [1]


def test_no_runs_no_pairs() -> None:
    assert runs.shared_run_pairs([]) == set()
    assert runs.shared_run_pairs([None, [], None]) == set()
    assert runs.shared_run_pairs([[1, 2], [3, 4]]) == set()


# --- near-copy facts with paths resolved only for a pair's members -------------------------------


def _model(tmp: Path, rng: np.random.Generator, n: int) -> tuple[list[Any], dict[str, Any], dict[str, dict[str, Any]]]:
    """Workloads citing files (some through links, some the same file), with sketches, values and PL111 pairs."""
    files = []
    for i in range(6):
        f = tmp / f"t{i}.csv"
        f.write_text("t,v\n")
        files.append(f)
    (tmp / "link.csv").symlink_to(files[0])
    (tmp / "dir").mkdir(exist_ok=True)
    (tmp / "dir" / "up.csv").symlink_to(Path("..") / "t1.csv")
    choices: list[Path | None] = [*files, tmp / "link.csv", tmp / "dir" / "up.csv", tmp / "gone.csv", None]
    bases = [[int(x) for x in rng.integers(0, 2**53, size=128)] for _ in range(3)]
    workloads, stored, facts = [], {}, {}
    names = [f"w-{i}" for i in range(n)]
    for i, name in enumerate(names):
        path = choices[int(rng.integers(0, len(choices)))]
        ref = None if rng.random() < 0.05 else SimpleNamespace(path=path, display=f"traces/{i}.csv")
        workloads.append(SimpleNamespace(name=name, measurements={"concurrency": ref} if ref is not None else {}))
        kind = int(rng.integers(0, 5))
        sketch: Any = None if kind == 0 else list(bases[int(rng.integers(0, 3))])
        if isinstance(sketch, list):
            for _ in range(int(rng.integers(0, 60))):
                sketch[int(rng.integers(0, 128))] = int(rng.integers(0, 2**53))
        if kind == 1:
            sketch = tuple(sketch)  # not a list: not sketched
        if rng.random() > 0.1:
            stored[name] = SimpleNamespace(integrity=None if rng.random() < 0.05 else {"run_sketch": sketch})
        if rng.random() > 0.05:
            facts[name] = {
                "pool": f"c/p{int(rng.integers(0, 2))}",
                "double_counted_with": names[int(rng.integers(0, n))] if rng.random() < 0.1 else None,
                "values_fingerprint": f"v{int(rng.integers(0, 3))}" if rng.random() < 0.3 else None,
                "value_changes": int(rng.integers(0, 20)),
            }
    return workloads, stored, facts


def _seeded_model(tmp_path: Path, seed: int, n: int) -> tuple[list[Any], dict[str, Any], dict[str, dict[str, Any]]]:
    """:func:`_model` of ``n`` workloads from ``seed``, in a folder of its own (hypothesis reuses ``tmp_path``)."""
    folder = tmp_path / str(seed) / str(n)
    folder.mkdir(parents=True, exist_ok=True)
    return _model(folder, np.random.default_rng(seed), n)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.integers(0, 2**32 - 1), st.integers(1, 70))
def test_copy_facts_are_the_plain_ones(tmp_path: Path, seed: int, n: int) -> None:
    workloads, stored, facts = _seeded_model(tmp_path, seed, n)
    assert _canon(copies.copy_facts(workloads, stored, facts)) == _canon(plain_copy_facts(workloads, stored, facts))


def test_one_file_by_one_path_is_an_open_citation_and_a_link_to_it_a_copy(tmp_path: Path) -> None:
    """Red team, 2026-12-05: a symlink under another name was taken for an open citation of the file."""
    (tmp_path / "a.csv").write_text("t,v\n")
    (tmp_path / "b.csv").symlink_to(tmp_path / "a.csv")
    (tmp_path / "c.csv").write_text("t,v\n")
    sketch = list(range(1000, 1128))
    workloads = [
        SimpleNamespace(name=n, measurements={"concurrency": SimpleNamespace(path=tmp_path / f, display=f)})
        for n, f in (("w-1", "a.csv"), ("w-2", "b.csv"), ("w-3", "c.csv"), ("w-4", "a.csv"))
    ]
    stored = {w.name: SimpleNamespace(integrity={"run_sketch": list(sketch)}) for w in workloads}
    facts: dict[str, dict[str, Any]] = {w.name: {"pool": "c/p"} for w in workloads}
    got = copies.copy_facts(workloads, stored, facts)
    assert got == plain_copy_facts(workloads, stored, facts)
    assert got["w-2"]["near_copy_of"] == "w-1"  # the same file through a link: judged as a copy
    assert got["w-3"]["near_copy_of"] == "w-1"
    # w-4 cites a.csv by w-1's own path, without a share: judged as any pair is (red team, 2026-12-07)
    assert got["w-4"]["near_copy_of"] == "w-1"
    # with a share declared it is an open citation, never paired with w-1 (its best partner is another)
    facts["w-4"]["measurement_share"] = 0.5
    shared = copies.copy_facts(workloads, stored, facts)
    assert shared == plain_copy_facts(workloads, stored, facts)
    assert shared["w-4"].get("near_copy_of") != "w-1"


def test_only_the_paths_of_a_pair_are_resolved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    workloads, stored, facts = _model(tmp_path, np.random.default_rng(5), 60)
    expected = plain_copy_facts(workloads, stored, facts)
    asked: list[str] = []
    made = os.path.abspath
    monkeypatch.setattr(copies.os.path, "abspath", lambda p: asked.append(str(p)) or made(p))
    assert _canon(copies.copy_facts(workloads, stored, facts)) == _canon(expected)
    assert len(asked) < len(workloads)


def test_a_path_that_cannot_be_resolved_raises_as_before(tmp_path: Path) -> None:
    workloads = [
        SimpleNamespace(name="w-1", measurements={"concurrency": SimpleNamespace(path=Path("a\0b.csv"), display="x")}),
        SimpleNamespace(name="w-2", measurements={"concurrency": SimpleNamespace(path=tmp_path / "c.csv", display="y")}),
    ]
    stored = {"w-1": SimpleNamespace(integrity={"run_sketch": [1, 2]}), "w-2": SimpleNamespace(integrity={"run_sketch": [3, 4]})}
    facts: dict[str, dict[str, Any]] = {"w-1": {"pool": "p"}, "w-2": {"pool": "p"}}
    with pytest.raises(ValueError):
        plain_copy_facts(workloads, stored, facts)
    with pytest.raises(ValueError):
        copies.copy_facts(workloads, stored, facts)


# --- a sheet with its near-copy facts -------------------------------------------------------------


def _integrity(rng: np.random.Generator) -> IntegrityWorkloadFacts:
    sheet = IntegrityWorkloadFacts()
    for f in dataclasses.fields(sheet):
        if rng.random() < 0.5:
            setattr(sheet, f.name, float(rng.random()) if rng.random() < 0.5 else f"x{int(rng.integers(0, 9))}")
    return sheet


def _state(sheet: Any) -> list[tuple[str, Any]]:
    return [(k, _canon(v)) for k, v in vars(sheet).items()]


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([{"near_copy_similarity": 0.0}, {"near_copy_of": "w-1", "near_copy_similarity": 0.5, "near_copy_trace": "t.csv", "near_copy_pool": None}]))
def test_replaced_is_dataclasses_replace(seed: int, changes: dict[str, Any]) -> None:
    rng = np.random.default_rng(seed)
    sheet = _integrity(rng)
    if rng.random() < 0.3:
        sheet.__dict__["not_a_field"] = 1  # replace() drops what is not a field
    if rng.random() < 0.3:  # fields held in another order
        held = dict(sheet.__dict__)
        sheet.__dict__.clear()
        sheet.__dict__.update(reversed(list(held.items())))
    new, old = replaced(sheet, changes), dataclasses.replace(sheet, **changes)
    assert type(new) is type(old) and new is not sheet
    assert _state(new) == _state(old)
    assert [new[k] for k in new] == [old[k] for k in old]


@dataclasses.dataclass(kw_only=True, eq=False)
class _Checked(Facts):
    a: float | None = fact("a", default=None)
    b: float | None = fact("b", default=None)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.b = None if self.a is None else self.a * 2


def test_a_sheet_with_its_own_post_init_is_built_again() -> None:
    sheet = _Checked(a=1.0)
    assert vars(replaced(sheet, {"a": 3.0})) == vars(dataclasses.replace(sheet, a=3.0)) == {"a": 3.0, "b": 6.0}


def test_a_change_naming_no_field_raises_as_replace_does() -> None:
    with pytest.raises(TypeError):
        replaced(IntegrityWorkloadFacts(), {"no_such_fact": 1})


# --- the pool's summed sustained maxima in one array ----------------------------------------------


def _plain_sustained(wv: list[Any]) -> int | None:
    values = [gpus(f.sustained_max, *to_gpus(f)) for f in wv]
    if not values or any(x is None for x in values):
        return None
    return int(sum(x for x in values if x is not None))


def _sheet(sustained: float | None, per_gpu: float | None, replicas: int, unit: str | None = None) -> Any:
    return SimpleNamespace(sustained_max=sustained, per_gpu=per_gpu, gpus_per_replica=replicas, trace_unit=unit)


_figures = st.one_of(st.none(), st.floats(0, 1e6), st.sampled_from([0.0, 1.0, 2.5, 1e-9, 7.000000001]))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_figures, st.one_of(st.none(), st.sampled_from([0.0, 0.5, 1.0, 3.0, 1e-6]), st.floats(1e-3, 1e3)), st.integers(1, 8), st.sampled_from([None, "gpus", "requests"])), max_size=40))
def test_the_summed_sustained_maxima_are_the_plain_sum(rows: list[tuple[Any, Any, int, Any]]) -> None:
    wv = [_sheet(*row) for row in rows]
    assert _canon(pool_view_module._sustained_sum(wv)) == _canon(_plain_sustained(wv))


@pytest.mark.parametrize(
    "rows",
    [
        [(5.0, 1.0, 1), (3.0, -2.0, 1)],  # a negative conversion: refused, with the same message
        [(5.0, 1.0, 1), (3.0, float("nan"), 1)],
        [(5.0, 1.0, 0)],  # no replica
        [(None, 1.0, 1), (3.0, -1.0, 1)],  # refused even beside an unknown figure
    ],
)
def test_a_refused_conversion_raises_as_before(rows: list[tuple[Any, Any, int]]) -> None:
    wv = [_sheet(*row) for row in rows]
    with pytest.raises(Exception) as plain:
        _plain_sustained(wv)
    with pytest.raises(type(plain.value)) as fast:
        pool_view_module._sustained_sum(wv)
    assert str(fast.value) == str(plain.value)


def test_figures_past_the_integer_range_are_converted_one_by_one() -> None:
    # A figure that is no number, or whose GPUs no count can hold, is refused alike by both (never wrapped).
    for figure in (float("nan"), 1e300, float("inf")):
        wv = [_sheet(2.0, 1.0, 1), _sheet(figure, 1.0, 1)]
        with pytest.raises(Exception) as plain:
            _plain_sustained(wv)
        with pytest.raises(type(plain.value)) as fast:
            pool_view_module._sustained_sum(wv)
        assert str(fast.value) == str(plain.value)
    wv = [_sheet(2.0**52, 1.0, 1), _sheet(3.5, 1.0, 1)]
    assert _canon(pool_view_module._sustained_sum(wv)) == _canon(_plain_sustained(wv))
    assert pool_view_module._sustained_sum([]) is None


# --- packed sketches (neighbours taken from the repository index) ---------------------------------


def _packed(sketch: list[int] | None) -> bytes | list[int] | None:
    """As the index hands a neighbour's sketch over: its numbers as 8-byte little-endian signed integers."""
    from policylint.engine.index_store import packed_run_sketch

    return packed_run_sketch(sketch)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(sketch_lists(), st.integers(0, 2**32 - 1))
def test_packed_sketches_pair_as_their_lists(sketches: list[list[int] | None], seed: int) -> None:
    """Any mix of packed and listed sketches: the pairs of the lists, the same numbers read back."""
    rng = np.random.default_rng(seed)
    mixed = [_packed(s) if i == 0 or rng.random() < 0.7 else s for i, s in enumerate(sketches)]
    assert runs.shared_run_pairs(mixed) == plain_pairs(sketches)
    for s, m in zip(sketches, mixed):
        assert (list(runs.sketch_values(m)) if m else m) == s or (not s and not m)


def test_packed_sketches_with_runs_of_other_types_fall_back_to_the_index() -> None:
    sketches: list[Any] = [[1, 2, 3], [3, 4], ["x", 1], [2, 5]]
    mixed = [_packed(sketches[0]), sketches[1], sketches[2], _packed(sketches[3])]
    assert isinstance(mixed[0], bytes) and isinstance(mixed[3], bytes)
    assert runs.shared_run_pairs(mixed) == plain_pairs(sketches) == {(0, 1), (0, 2), (0, 3)}


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.integers(0, 2**32 - 1), st.integers(1, 70))
def test_copy_facts_of_packed_sketches_are_those_of_their_lists(tmp_path: Path, seed: int, n: int) -> None:
    workloads, stored, facts = _seeded_model(tmp_path, seed, n)
    rng = np.random.default_rng(seed + 1)
    packed = {}
    for name, measured in stored.items():
        sketch = (measured.integrity or {}).get("run_sketch")
        if isinstance(sketch, list) and rng.random() < 0.7:
            packed[name] = SimpleNamespace(integrity={"run_sketch": _packed(sketch)})
        else:
            packed[name] = measured
    assert _canon(copies.copy_facts(workloads, packed, facts)) == _canon(copies.copy_facts(workloads, stored, facts))
