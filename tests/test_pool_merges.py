"""PL988's fact, ``pool_merges``: the pairs of pools plan would pool, by plan's own functions, at no cost for one pool."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from fixture_helpers import FIXTURES, NOW, run_fixture

from policylint.engine.pool_merges import pool_merges
from policylint.measure.run import measure
from policylint.plan import WhatIf, build_plan
from policylint.plan.sizing import size


class _Untouchable(Mapping[str, Any]):
    """A mapping that fails the test when anything is read from it."""

    def __getitem__(self, key: str) -> Any:
        raise AssertionError(f"read {key!r}")

    def get(self, key: str, default: Any = None) -> Any:
        raise AssertionError(f"read {key!r}")

    def __iter__(self) -> Iterator[str]:
        raise AssertionError("iterated")

    def __len__(self) -> int:
        raise AssertionError("measured")


def test_a_cluster_with_one_pool_reads_nothing() -> None:
    """One pool, however many workloads: no sheet, no pooled series, no workload is looked at."""
    result = run_fixture(FIXTURES / "PL101" / "pass")
    assert result.model is not None
    (cluster,) = [c for c in result.model.clusters.values() if len(c.pools) == 1][:1]
    assert pool_merges(cluster, _Untouchable(), _Untouchable(), _Untouchable()) == []


def test_the_pooled_figure_is_plans_sizing_of_the_workloads_together() -> None:
    """One definition: the pair's pooled GPUs are what plan's sizing gives the two pools' workloads as one pool."""
    result = run_fixture(FIXTURES / "PL988" / "fail")
    model = result.model
    assert model is not None
    facts, _ = measure(model, NOW)
    (view,) = [v for v in result.views if v.label == "cluster follow-the-sun"]
    merges = view.facts["pool_merges"]
    assert len(merges) == 3
    for merge in merges:
        pools = [p for p in model.pools if p.qualified in merge["pools"]]
        members = [w for p in pools for w in p.workloads]
        sized = size(members, facts, WhatIf(), None, pools[0].spec["gpu"], explain=False).sized
        assert sized is not None
        assert (merge["pooled_reserved_gpus"], merge["pooled_gpus"]) == (sized.reserved, sized.capacity)
        apart = [size(p.workloads, facts, WhatIf(), None, p.spec["gpu"], explain=False).sized for p in pools]
        assert merge["apart_gpus"] == sum(a.capacity for a in apart if a is not None)
        assert merge["saving_gpus"] == merge["apart_gpus"] - merge["pooled_gpus"]


def test_plan_pools_what_pl988_reports() -> None:
    """The fail fixture's regional pools, the pools spelled two ways and the gang pool split from its one-GPU
    neighbour each become one planned pool (the last with gang scheduling)."""
    result = run_fixture(FIXTURES / "PL988" / "fail")
    model = result.model
    assert model is not None
    facts, _ = measure(model, NOW)
    plan = build_plan(model, facts)
    clusters = ("follow-the-sun", "spelled-apart", "batch-split")
    members = sorted(sorted(p.members) for p in plan.pools if p.cluster in clusters)
    assert members == [["chat-asia", "chat-europe", "chat-us"], ["day-scoring", "night-eval"], ["spelled-asia", "spelled-europe"]]
    (mixed,) = [p for p in plan.pools if p.cluster == "batch-split"]
    assert mixed.gang is True


def test_nothing_is_reported_where_plan_would_not_pool() -> None:
    """Another GPU model, class or tier: no pair is even judged; pools busy together are judged and pass."""
    result = run_fixture(FIXTURES / "PL988" / "pass")
    merges = {v.label: v.facts["pool_merges"] for v in result.views if v.subject == "cluster"}
    assert merges["cluster apart-by-gpu"] == merges["cluster apart-by-class"] == merges["cluster apart-by-tier"] == []
    assert all(m["saving_gpus"] < 4 for m in merges["cluster busy-together"])
    # a gang pool and a one-GPU pool of one class, GPU type and tier are judged as a pair (and save little here)
    (pair,) = merges["cluster gang-together"]
    assert pair["pools"] == ["gang-together/eval", "gang-together/scoring"] and pair["saving_gpus"] < 4
