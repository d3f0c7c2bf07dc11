"""The plan is the same plan after the pooling search was made fast: same pools, same figures.

``tests/data/plan-before/`` holds ``plan --format json`` as printed by the plan of release
0.2.0's line (commit 5b8e97f, before the search kept running pooled sums), for the bundled
examples and for a generated repository of fourteen workloads in which several groups pool
(and one group is sized to its tolerance). Each run here must print the same plan and comparison, with the repository's path
written as ``<repo>``, and the same verdict of ``check``; the only keys compared away are
the ones added on purpose since (:data:`ADDED`) and the count of other rules' findings,
and the words after "alone:" in a workload's reason (one generic sentence then; what kept
that workload alone now, :func:`policylint.plan.search.merge`).

Those plans sized a queued pool to the least capacity that meets its tightest tolerance;
that rule is now ``--size-queues-by-tolerance`` (docs/plan.md), so it is given here.

Those plans also kept gang work (training or batch jobs of more than one GPU) apart from the
rest of its group; since the red team of 2026-12-06 it pools with its group, as ``check``
pools a pool's workloads (``tests/test_red_team_gang.py``). The runs here search gang and
one-GPU work apart again (:func:`_release_groups`), so that what they compare is still the
search: the same groups must give the same pools.

To write the fixtures again (only with the old code in place)::

    POLICYLINT_UPDATE_PLAN_BEFORE=1 pytest tests/test_plan_equivalence.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from conftest import EXAMPLES, REPO, run_cli
from test_plan import Spec, make_repo

FIXTURES = REPO / "tests" / "data" / "plan-before"
UPDATE = os.environ.get("POLICYLINT_UPDATE_PLAN_BEFORE") == "1"
OPTION = "--size-queues-by-tolerance"

#: derivation keys the later plan adds beside the old ones
ADDED = {"queueing_saves_gpus", "sized_by"}

#: fourteen workloads: inference that peaks apart in an interactive group (pooled), a
#: real-time group (overflow rejected, sized to the daily band), queue-tolerant batch with
#: and without gang jobs (the latter pooled and sized to its tolerance), training gangs
GENERATED = [
    Spec("chat", level=10, burst=20, burst_hour=14, burst_minutes=60, cold_start=600, tolerance=30, pool="a"),
    Spec("search", level=8, burst=15, burst_hour=2, burst_minutes=60, cold_start=600, tolerance=30, pool="a"),
    Spec("summarise", level=6, burst=10, burst_hour=8, burst_minutes=180, cold_start=1800, tolerance=60, pool="b"),
    Spec("translate", level=4, burst=25, burst_hour=20, burst_minutes=15, per_gpu=2, cold_start=600, tolerance=30, pool="b"),
    Spec("vision", level=12, burst=6, burst_hour=14, burst_minutes=180, cold_start=600, tolerance=45, pool="a"),
    Spec("voice", level=3, burst=30, burst_hour=6, burst_minutes=60, cold_start=600, tolerance=0.5, pool="a"),
    Spec("rerank", level=5, burst=12, burst_hour=18, burst_minutes=60, cold_start=600, tolerance=0.5, pool="b"),
    Spec("guard", level=7, burst=7, burst_hour=7, burst_minutes=60, cold_start=1800, tolerance=0.5, pool="b"),
    Spec("eval", cls="batch", level=4, burst=20, burst_hour=1, burst_minutes=180, replicas=2, cold_start=600,
         tolerance=3600, pool="a"),
    Spec("embed", cls="batch", level=6, burst=18, burst_hour=13, burst_minutes=180, replicas=2, cold_start=600,
         tolerance=3600, pool="b"),
    Spec("index", cls="batch", level=10, burst=10, burst_hour=3, burst_minutes=60, cold_start=600, tolerance=300, pool="a"),
    Spec("crawl", cls="batch", level=8, burst=12, burst_hour=3, burst_minutes=60, cold_start=600, tolerance=300, pool="b"),
    Spec("pretrain", cls="training", level=2, burst=2, burst_hour=0, burst_minutes=180, replicas=2, cold_start=1800,
         tolerance=7200, pool="a"),
    Spec("finetune", cls="training", level=1, burst=3, burst_hour=12, burst_minutes=180, replicas=2, cold_start=1800,
         tolerance=7200, pool="b"),
]  # fmt: skip


@pytest.fixture(autouse=True)
def _release_groups(monkeypatch: pytest.MonkeyPatch) -> None:
    """Search a group's gang and one-GPU workloads apart, one-GPU work first, as the release's groups did."""
    from policylint.plan import build
    from policylint.plan.grouping import pool_gang

    search = build.merge

    def merge(measured: list[str], planned: Any, facts: Any, *rest: Any) -> tuple[list[list[str]], dict[str, Any]]:
        parts: list[list[str]] = []
        alone: dict[str, Any] = {}
        for gang in (False, True):
            names = [n for n in measured if pool_gang([planned[n]], facts) is gang]
            if names:
                found, each = search(names, planned, facts, *rest)
                parts += found
                alone.update(each)
        return parts, alone

    monkeypatch.setattr(build, "merge", merge)


def _plan(repo: Path, *extra: str) -> dict[str, Any]:
    code, out, err = run_cli(["plan", str(repo), "--format", "json", *extra])
    assert "Traceback" not in err
    assert code in (0, 1), err
    doc: dict[str, Any] = json.loads(out.replace(str(repo), "<repo>").replace(repo.as_posix(), "<repo>"))
    return doc


def _without_added(doc: Any) -> Any:
    if isinstance(doc, dict):
        return {k: _without_added(v) for k, v in doc.items() if k not in ADDED}
    if isinstance(doc, list):
        return [_without_added(v) for v in doc]
    return doc


def _alone_unsaid(doc: dict[str, Any]) -> None:
    """Cut each workload's reason after "alone": that it was left alone is compared, not why."""
    for pool in doc["plan"]["pools"]:
        pool["reasons"] = {n: text.split("; alone: ")[0] + "; alone" if "; alone: " in text else text
                           for n, text in pool["reasons"].items()}


def _compare(name: str, doc: dict[str, Any]) -> None:
    path = FIXTURES / f"{name}.json"
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    before = json.loads(path.read_text(encoding="utf-8"))
    now = _without_added(doc)
    now["plan"]["what_if"].pop("size_queues_by_tolerance", None)
    _alone_unsaid(now)
    _alone_unsaid(before)
    assert now["plan"] == before["plan"]
    assert now["comparison"] == before["comparison"]
    # what check says besides the sizing findings belongs to the rules of the day, not to the plan; and the
    # plan answers since for the findings its what-if inputs cause (each with a ``because``), which the
    # old plan did not look at: the findings of the sizing rules are compared
    sizing = [{k: v for k, v in f.items() if k != "because"} for f in now["check"]["sizing_findings"] if f["because"] is None]
    assert sizing == before["check"]["sizing_findings"]
    assert before["check"]["passes"] == (not sizing)
    assert {k: v for k, v in now.items() if k != "check"} == {k: v for k, v in before.items() if k != "check"}


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_repo(tmp_path_factory.mktemp("equivalence") / "r", GENERATED)


def test_generated_repository_plans_as_before(generated: Path) -> None:
    doc = _plan(generated, *(() if UPDATE else (OPTION,)))
    # the case is worth having: workloads pooled in more than one group, and one pool sized to its tolerance
    pooled = [p for p in doc["plan"]["pools"] if len(p["workloads"]) > 1]
    assert len(pooled) >= 2
    assert any(
        (p["derivation"].get("elastic.maxGpus") or {}).get("capacity_gpus", 0) < p["pooled"]["daily_gpus"]
        for p in doc["plan"]["pools"]
        if p["pooled"] is not None
    )
    _compare("generated", doc)


@pytest.mark.parametrize("example", ["bad", "good", "kueue", "kueue-bad"])
def test_example_plans_as_before(example: str) -> None:
    _compare(example, _plan(EXAMPLES / example, *(() if UPDATE else (OPTION,))))


def test_what_if_plans_as_before(generated: Path) -> None:
    extra = ("--cold-start", "900", "--tolerance", "chat=120", "--headroom", "0.1")
    doc = _plan(generated, *extra, *(() if UPDATE else (OPTION,)))
    _compare("generated-what-if", doc)
    # chat's evidence (a 31 s objective, 1 s of service) leaves 30 s of queueing, not the 120 s the what-if sets
    assert [(f["code"], f["subject"], f["because"]) for f in doc["check"]["sizing_findings"]] == [
        ("PL305", "workload chat", "the plan changed tolerance_seconds from 30 to 120")
    ]
