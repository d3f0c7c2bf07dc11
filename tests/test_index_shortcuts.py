"""The per-neighbour shortcuts of a narrowed run give the answers of the plain computations.

* :func:`~policylint.engine.repo_index._clock_facts` computes the time facts and the
  measurement's age once per set of inputs: the same facts as computed afresh, types
  included (an integer time and a float time of the same value apart), a naive and
  an aware time still refused.
"""

from __future__ import annotations

import datetime as dt
import math
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policylint.engine import index_store, repo_index
from policylint.engine.index_store import Record, same_value
from policylint.measure.integrity.timing import time_facts

NOW = dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc)


def _record(values: list[Any], sketch: Any) -> Record:
    shape = tuple(f"f{i}" for i in range(len(values)))
    text = index_store.json_text([values, sketch])
    assert text is not None
    return Record(ident=[1, 2, 3, 4, 5], pool="", key="k", measured=[], shape=shape, text=text, paths={},
                  report=False, daily=None, usable_max=None, last_sample=None, integrity=False, clock={})


_times = st.one_of(st.none(), st.integers(0, 2**34), st.floats(0, 2e9, allow_nan=False), st.sampled_from([0, 0.0, 1, 1.0]))


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(st.sampled_from(index_store.CLOCK_KEYS), _times, max_size=5),
    st.dictionaries(st.sampled_from(index_store.CLOCK_KEYS), _times, max_size=5),
    st.sampled_from([NOW, NOW + dt.timedelta(days=3, seconds=7, microseconds=1234), dt.datetime(2026, 1, 1)]),
    st.sampled_from([None, "2026-11-30T12:00:00+00:00", "2026-11-30T12:00:00"]),
)
def test_memoised_clock_facts_equal_fresh_ones(clock: dict[str, Any], other: dict[str, Any], now: dt.datetime, last: str | None) -> None:
    w = SimpleNamespace(measurements={})  # no pulls: pull_facts gives []
    for c in (clock, other, clock):  # asked again after another: the memo answers
        rec = _record([], None)
        rec.clock, rec.integrity, rec.last_sample = c, True, last
        try:
            want_age = (now - dt.datetime.fromisoformat(last)).total_seconds() / 86_400.0 if last else None
        except TypeError:  # a naive and an aware time: the plain path raises as well
            with pytest.raises(TypeError):
                repo_index._clock_facts(rec, w, now)  # type: ignore[arg-type]
            continue
        got = repo_index._clock_facts(rec, w, now)  # type: ignore[arg-type]
        want = {"measurement_age_days": want_age, "pulls": [], **time_facts(c, now.timestamp())}
        assert list(got) == list(want)
        assert all(same_value(got[k], want[k]) for k in want), (got, want)


def test_clock_facts_tell_an_integer_time_from_a_float_one() -> None:
    w = SimpleNamespace(measurements={})
    for value in (1_700_000_000, 1_700_000_000.0, 1_700_000_000, 1_700_000_000.0):
        rec = _record([], None)
        rec.clock, rec.integrity = {"last_time": value, "step_seconds": 300}, True
        got = repo_index._clock_facts(rec, w, NOW)  # type: ignore[arg-type]
        want = time_facts(rec.clock, NOW.timestamp())
        assert all(same_value(got[k], want[k]) for k in want)
        assert not math.isnan(got["seconds_after_now"])


_PART = st.one_of(st.text(), st.integers(), st.floats(allow_nan=False), st.booleans(), st.none())
_PLACES = st.dictionaries(
    st.one_of(st.text(), st.integers()),
    st.one_of(st.lists(_PART, max_size=5), st.tuples(st.text(), st.integers())),
    max_size=6,
)


@given(_PLACES)
@settings(max_examples=300, deadline=None)
def test_places_checked_by_type_agree_with_the_json_round_trip(places: dict[Any, Any]) -> None:
    """json_exact_places says yes only where writing and reading JSON gives the places back exactly,
    and for every value of the kind a view holds (text keys, lists of texts and ints) it says yes."""
    from policylint.engine.index_store import json_exact_places, json_text

    plain = all(type(k) is str and type(v) is list and all(type(p) in (str, int) for p in v) for k, v in places.items())
    assert json_exact_places(places) == plain
    if plain:
        assert json_text(places) is not None


def test_fact_values_are_the_sheets_values_in_order() -> None:
    """fact_values reads a sheet as dict(sheet) does: its facts' values in its order."""
    from policylint.engine.index_store import fact_values
    from policylint.engine.sheets import WorkloadFactSheet

    names = tuple(WorkloadFactSheet.routes())
    make, _ = index_store.shape_of(names)
    assert make is not None
    values = [f"value {i}" for i in range(len(names))]  # each fact its own value, parts' facts included
    sheet = make(list(values))
    assert fact_values(sheet) == list(dict(sheet).values()) == values
    assert fact_values({"a": 1, "b": [2]}) == [1, [2]]
