"""The pooling search gives the pools a naive search gives: every candidate by the full pooled analysis.

:func:`policylint.plan.search.merge` judges candidates from running pooled sums, a batch
at a time, and computes a candidate only when a bound on its saving could still beat the
best one found. The reference here is the search as first written: every pair of parts in
every round sized by :func:`policylint.plan.sizing.size` (``measure_pool``, as ``check``
does), best saving first, ties to the pair that comes first. Generated groups vary cold
starts, per-GPU figures, replicas, tolerances and gaps in the traces (which take the bound
away), and one mixes sample steps (which takes the running sums away).
"""

from __future__ import annotations

import argparse
import datetime as dt
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policylint.measure.run import measure
from policylint.plan.grouping import Group, group_of, is_reject, tightest, tolerance_of
from policylint.plan.models import Thresholds, Unplaced, WhatIf
from policylint.plan.search import merge
from policylint.plan.sizing import size, trial
from policylint.engine.double_counts import double_counted
from policylint.session import Session
from test_plan import END, STEP, Spec, make_repo

NOW = dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc)


def _measured(repo: Path) -> tuple[Any, dict[str, Any]]:
    session = Session.from_args(argparse.Namespace(paths=[repo], config=None, isolated=False, root=None, now=None))
    session.options.now = NOW
    result = session.lint()
    facts, _ = measure(result.model, NOW, limits=session.config.trace_limits())
    return result.model, facts


def naive(
    names: list[str], planned: Mapping[str, Any], facts: Mapping[str, Any], whatif: WhatIf, group: Group,
    tol: Mapping[str, float | None], th: Thresholds,
) -> list[list[str]]:
    """The search as first written (one full pooled analysis per candidate, every pair every round)."""
    reject = is_reject(group)
    cache: dict[frozenset[str], Any] = {}

    def sized(members: list[str]) -> Any:
        key = frozenset(members)
        if key not in cache:
            ordered = sorted(key)
            tight = None if reject else tightest(tol[n] for n in ordered)
            cache[key] = size([planned[n] for n in ordered], facts, whatif, tight, group.gpu, explain=False)
        return cache[key]

    def repeated(members: list[str]) -> bool:
        return bool(double_counted(trial([planned[n] for n in sorted(members)], {"name": "trial"})))

    parts = [[n] for n in sorted(names)]
    while len(parts) > 1:
        best: tuple[tuple[int, int], int, int] | None = None
        for i in range(len(parts)):
            for j in range(i + 1, len(parts)):
                if repeated(parts[i] + parts[j]):
                    continue
                a, b, both = sized(parts[i]), sized(parts[j]), sized(parts[i] + parts[j])
                if not (a.ok and b.ok and both.ok) or both.facts.report.window_days < th.min_window_days:
                    continue
                saving = (a.sized.capacity + b.sized.capacity - both.sized.capacity, a.sized.reserved + b.sized.reserved - both.sized.reserved)
                if saving > (0, 0) and (best is None or saving > best[0]):
                    best = (saving, i, j)
        if best is None:
            break
        _, i, j = best
        parts[i] = sorted(parts[i] + parts[j])
        del parts[j]
    return sorted(parts)


def _compare(repo: Path, whatif: WhatIf) -> list[list[str]]:
    model, facts = _measured(repo)
    th = Thresholds()
    groups: dict[Group, list[str]] = {}
    for name, w in sorted(model.workloads.items()):
        g = group_of(w, w.spec, th, Unplaced())
        assert isinstance(g, Group)
        groups.setdefault(g, []).append(name)
    tol = {n: tolerance_of(w.spec) for n, w in model.workloads.items()}
    found = []
    for group, names in groups.items():
        measured = [n for n in names if facts[n].report is not None and facts[n].demand is not None]
        parts, alone = merge(measured, model.workloads, facts, whatif, group, tol, th)
        assert parts == naive(measured, model.workloads, facts, whatif, group, tol, th)
        for n in measured:  # each workload alone, as the full analysis sizes it
            single = size([model.workloads[n]], facts, whatif, None if is_reject(group) else tol[n], group.gpu, explain=False)
            assert alone[n].ok == single.ok
            if single.ok:
                assert (alone[n].reserved, alone[n].capacity) == (single.sized.reserved, single.sized.capacity)
        found += parts
    return found


ROW = st.tuples(
    st.integers(1, 20),  # level
    st.integers(0, 30),  # burst
    st.integers(0, 23),  # burst hour
    st.sampled_from([15, 60, 180]),  # burst minutes
    st.sampled_from([1, 3]),  # per GPU
    st.sampled_from([600, 600, 1800]),  # cold start
    st.sampled_from([30, 60, 120]),  # tolerance: one interactive group
    st.booleans(),  # a gap of a day in the trace
)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(ROW, min_size=2, max_size=6), st.booleans())
def test_search_pools_as_the_naive_search(tmp_path_factory: pytest.TempPathFactory, rows: list[tuple[Any, ...]], by_tolerance: bool) -> None:
    specs = [Spec(f"w{i}", level=lv, burst=b, burst_hour=h, burst_minutes=m, per_gpu=g, cold_start=cs, tolerance=t)
             for i, (lv, b, h, m, g, cs, t, _) in enumerate(rows)]  # fmt: skip
    repo = make_repo(tmp_path_factory.mktemp("search") / "r", specs)
    for i, row in enumerate(rows):
        if row[-1]:  # a missing day: those instants are not measured, in the pool either
            path = repo / "measurements" / f"w{i}.csv"
            lines = path.read_text(encoding="utf-8").splitlines()
            cut = 1 + 288 * (10 + i)
            path.write_text("\n".join(lines[:cut] + lines[cut + 288 :]) + "\n", encoding="utf-8")
    _compare(repo, WhatIf(size_queues_by_tolerance=by_tolerance))


def test_mixed_steps_take_the_full_analysis(tmp_path: Path) -> None:
    specs = [Spec("day", burst_hour=14, burst_minutes=60, cold_start=600, tolerance=30),
             Spec("night", burst_hour=2, burst_minutes=60, cold_start=600, tolerance=30),
             Spec("noon", burst_hour=12, burst_minutes=60, cold_start=600, tolerance=30)]  # fmt: skip
    repo = make_repo(tmp_path / "r", specs)
    path = repo / "measurements" / "noon.csv"  # every other sample: a 600 s step
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join(lines[:1] + lines[1::2]) + "\n", encoding="utf-8")
    assert int(lines[3].split(",")[0]) - int(lines[1].split(",")[0]) == 2 * STEP and END
    parts = _compare(repo, WhatIf())
    assert ["day", "night", "noon"] in parts or ["day", "night"] in parts


def test_peaking_apart_pools_under_both_rules(tmp_path: Path) -> None:
    specs = [Spec(f"w{h}", level=5, burst=20, burst_hour=h, burst_minutes=60, cold_start=600, tolerance=60) for h in (0, 4, 8, 12, 16, 20)]
    repo = make_repo(tmp_path / "r", specs)
    for by in (False, True):
        parts = _compare(repo, WhatIf(size_queues_by_tolerance=by))
        assert max(len(p) for p in parts) > 1
