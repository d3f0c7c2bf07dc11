"""A neighbour's stand-in sheet (:mod:`policylint.engine.lite_sheet`) reads exactly as the sheet rebuilt from its row.

* every fact of every workload sheet of the examples, read from a stand-in in any order
  (hypothesis), is the sheet's value, types included; reading the stand-in's own facts
  never makes the whole sheet, reading any other makes it once;
* what a step sets on a stand-in (a field, the pooled part, near-copy facts on its
  integrity part) stays over the whole sheet, as it would on the sheet itself;
* the pool steps (:func:`policylint.engine.views.build_views`) given stand-ins for every
  workload give every view - pool, cluster, proposal, workload - exactly as given the
  plain sheets, and make no whole sheet;
* (in :mod:`tests.test_repo_index`) a warm one-file run makes the whole sheet only of the
  workload it judges by every rule: the neighbours whose kept verdicts hold stay stand-ins.
"""

from __future__ import annotations

import copy
import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import EXAMPLES

from policylint.engine.index_store import same_value
from policylint.engine.lite_sheet import LITE, is_stand_in, lite_values, set_facts, stand_in
from policylint.engine.linter import LintOptions
from policylint.engine.ruleset import load_rules
from policylint.engine.sheets import WorkloadFactSheet
from policylint.engine.view import View
from policylint.engine.views import build_views, replaced
from policylint.facts import Facts
from policylint.resources import rules_dir

NOW = dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc)
NAMES = list(WorkloadFactSheet.routes())


def _model_and_facts(root: Path) -> tuple[Any, Any]:
    from policylint.engine.linter import load_sources
    from policylint.model.resolve import resolve
    from policylint.measure.run import measure

    options = LintOptions(root=root, now=NOW, ruleset=load_rules([rules_dir()]))
    docs = [d for s in load_sources([root], options) for d in s.documents if d.is_policylint]
    model, _ = resolve(docs, root, [], [], ())
    facts, _ = measure(model, NOW)
    return model, facts


@pytest.fixture(scope="module", params=["bad", "good"])
def measured(request: pytest.FixtureRequest) -> tuple[Any, Any]:
    return _model_and_facts(EXAMPLES / request.param)


def _sheets(measured: tuple[Any, Any]) -> list[WorkloadFactSheet]:
    from policylint.engine.workload_view import workload_view

    model, facts = measured
    return [workload_view(w, facts[n], NOW)[1] for n, w in sorted(model.workloads.items()) if n in facts]


def _of(sheet: WorkloadFactSheet) -> tuple[WorkloadFactSheet, list[int]]:
    """A stand-in of ``sheet`` whose whole sheet is a fresh copy of it, and the count of fills."""
    fills = [0]

    def fill() -> WorkloadFactSheet:
        fills[0] += 1
        return copy.deepcopy(sheet)

    return stand_in(lite_values(sheet), fill), fills


def _flat(sheet: Any) -> dict[str, Any]:
    return {name: sheet[name] for name in NAMES}


def test_every_fact_of_a_stand_in_is_the_sheets(measured: tuple[Any, Any]) -> None:
    sheets = _sheets(measured)
    assert sheets
    for sheet in sheets:
        lite, fills = _of(sheet)
        assert isinstance(lite, WorkloadFactSheet) and is_stand_in(lite)
        assert same_value([lite[n] for n in LITE], lite_values(sheet)) and fills[0] == 0
        assert lite.get("name") == sheet.name and lite.integrity.get("near_copy_of") == sheet.integrity.near_copy_of
        assert fills[0] == 0
        assert same_value(_flat(lite), _flat(sheet)) and fills[0] == 1
        assert same_value(dict(lite), dict(sheet)) and list(lite) == list(sheet) and fills[0] == 1


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_facts_read_in_any_order_are_the_sheets(measured: tuple[Any, Any], data: st.DataObject) -> None:
    sheets = _sheets(measured)
    sheet = data.draw(st.sampled_from(sheets))
    lite, fills = _of(sheet)
    order = data.draw(st.lists(st.sampled_from(NAMES), max_size=40))
    for name in order:
        assert same_value(lite[name], sheet[name]), name
    assert fills[0] == (1 if set(order) - set(LITE) else 0)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_what_a_step_sets_stays_over_the_whole_sheet(measured: tuple[Any, Any], data: st.DataObject) -> None:
    from policylint.engine.pooled_facts import PooledWorkloadFacts

    sheet = data.draw(st.sampled_from(_sheets(measured)))
    lite, fills = _of(sheet)
    plain = copy.deepcopy(sheet)
    depth = data.draw(st.none() | st.integers(0, 50))
    share = data.draw(st.floats(0, 100, allow_nan=False))
    near = data.draw(st.sampled_from([{"near_copy_similarity": 0.0},
                                      {"near_copy_of": "w", "near_copy_similarity": 0.75, "near_copy_trace": "t.csv",
                                       "near_copy_pool": None}]))
    pooled = PooledWorkloadFacts(pool_capacity_gpus=8, measurement_double_counted=data.draw(st.booleans()))
    read_first = data.draw(st.booleans())  # the whole sheet made before the steps, or after them
    if read_first:
        lite["p99_seconds"]
    for target in (lite, plain):
        target.capacity_share = share
        target.queue_depth_needed = depth
        target.pooled = pooled
    set_facts(lite.integrity, near)
    plain.integrity = replaced(plain.integrity, near)
    assert same_value(_flat(lite), _flat(plain)) and fills[0] == 1


def test_the_pool_steps_on_stand_ins_are_the_pool_steps(measured: tuple[Any, Any]) -> None:
    from policylint.engine.workload_view import workload_view

    model, facts = measured
    plain = build_views(model, facts, NOW)
    prebuilt: dict[str, View] = {}
    made = []
    for n, w in sorted(model.workloads.items()):
        view, sheet = workload_view(w, facts[n], NOW)
        lite, fills = _of(sheet)
        made.append(fills)
        prebuilt[n] = View(view.subject, view.label, view.doc, view.base, lite, dict(view.paths), view.target)
    assert prebuilt
    lite_views = build_views(model, facts, NOW, prebuilt=prebuilt)
    assert not any(f[0] for f in made)  # the pool steps read only the stand-ins' own facts
    assert [v.label for v in lite_views] == [v.label for v in plain]
    for a, b in zip(lite_views, plain):
        assert same_value(dict(a.paths), dict(b.paths)), a.label
        assert same_value(dict(a.facts), dict(b.facts)), a.label
        if isinstance(b.facts, Facts) and b.subject != "workload":
            assert repr(a.facts) == repr(b.facts)


def test_a_packed_sketch_holds_the_numbers_of_the_listed_one() -> None:
    """A row's run sketch comes packed for a stand-in and listed for a whole view: the same numbers."""
    import struct

    from policylint.engine.index_store import Record, lite_form

    for sketch in ([1, -2, 2**63 - 1, -(2**63)], [7] * 130, None, []):
        lite = lite_form([None] * len(LITE), sketch)
        assert lite is not None
        rec = Record(ident=[0] * 5, pool="", key="", measured=[], shape=(), text="", paths={}, report=False,
                     daily=None, usable_max=None, last_sample=None, integrity=False, clock={}, lite=lite)
        listed, packed = rec.lite_values(), rec.lite_values(packed=True)
        assert listed is not None and packed is not None and listed[1] == sketch
        if sketch:
            assert isinstance(packed[1], bytes) and list(struct.unpack(f"<{len(sketch)}q", packed[1])) == sketch
        else:
            assert packed[1] == sketch
    # a row whose packed sketch is not whole 8-byte numbers does not read back
    for bad in (b"", b"\0" * 7, b"\0" * 9):
        rec.lite = [[None] * len(LITE), bad]
        assert rec.lite_values() is None and rec.lite_values(packed=True) is None
