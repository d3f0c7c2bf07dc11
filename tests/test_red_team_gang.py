"""Red team, 2026-12-06: a pool that mixes gang jobs with one-GPU jobs.

``examples/good``'s batch pool holds nightly-eval (2-GPU jobs, gang-scheduled) and
offline-scoring (one GPU per job). ``check`` sizes it from the pooled series of both: a
baseline of 20 GPUs and a daily band of 26. ``plan`` kept gang work in pools of its own,
so it planned the same two workloads as two pools, 16 + 8 and 10 + 4: 26 reserved and 38
in all. A team that wanted GPUs cited ``plan`` in the procurement review (the figure
PL101 and PL102 refuse for the pool as it stands), or split the pool the way ``plan``
drew it: each half passed every rule, and PL988 never paired a gang pool with a
one-GPU pool, because it pairs only pools ``plan`` would pool.

FRAMEWORK.md separates pools by class and tolerance, and answers gang jobs with gang
admission, a buffer or preemption; a gang's GPUs are whole GPUs in the pooled series
like any other job's. So gang need is no longer part of the group key both commands
share (:func:`policylint.measure.pool_groups.group_key`): ``plan`` pools a mixed pool's
workloads and sizes them by the pooled series ``check`` judges, and PL988 pairs a gang
pool with a one-GPU pool of the same class, GPU type and tier.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from conftest import EXAMPLES, run_cli
from fixture_helpers import NOW, RULESET, session_cache
from test_plan import plan_json, pool_of

from policylint.engine.linter import LintOptions, lint

GOOD = EXAMPLES / "good"
MIXED = "prod-east/batch"


def _check_figures(repo: Path, pool: str) -> dict[str, Any]:
    """The pooled figures ``check``'s rules judge ``pool`` by: its fact sheet in a lint of ``repo``."""
    result = lint([repo], LintOptions(root=repo, now=NOW, ruleset=RULESET, repository=repo, cache_dir=session_cache()))
    (view,) = [v for v in result.views if v.label == f"pool {pool}"]
    return {k: view.facts[k] for k in ("baseline_gpus", "daily_gpus", "baseline_gpus_sum", "daily_gpus_sum")}


def _copy(tmp_path: Path) -> Path:
    repo = tmp_path / "good"
    shutil.copytree(GOOD, repo)
    return repo


def _check(repo: Path, select: str) -> tuple[int, list[dict[str, Any]]]:
    code, out, err = run_cli(["check", str(repo), "--format", "json", "--no-cache", "--select", select])
    assert code in (0, 1) and "Traceback" not in err, err
    return code, json.loads(out)["findings"]


def test_plan_and_check_give_a_mixed_pool_one_figure() -> None:
    """The planned pool of the mixed pool's workloads is sized at the very bands check judges the pool by."""
    doc = plan_json(GOOD)
    planned = pool_of(doc, "nightly-eval")
    assert sorted(planned["workloads"]) == ["nightly-eval", "offline-scoring"]
    assert planned["scheduling"]["gang"] is True
    check = _check_figures(GOOD, MIXED)
    assert (check["baseline_gpus"], check["daily_gpus"]) == (20, 26)
    assert (planned["reserved_gpus"], planned["capacity_gpus"]) == (check["baseline_gpus"], check["daily_gpus"])
    assert (planned["pooled"]["baseline_gpus"], planned["pooled"]["daily_gpus"]) == (20, 26)
    # what pooling saves, as plan explains it, is check's sum of the workloads' own bands against the pooled one
    assert planned["apart"] == {"reserved": check["baseline_gpus_sum"], "capacity": check["daily_gpus_sum"]} == {
        "reserved": 26, "capacity": 38,
    }  # fmt: skip
    # and `bands --pool`, the third command to show the pool, agrees
    code, out, err = run_cli(["bands", "--pool", MIXED, str(GOOD), "--format", "json"])
    assert (code, err) == (0, ""), err
    bands = json.loads(out)["pooled"]["bands_gpus"]
    assert (bands["baseline"], bands["daily"]) == (20, 26)


def test_what_plan_gives_a_mixed_pool_check_accepts(tmp_path: Path) -> None:
    """The game: cite plan's figure for the pool. What plan plans for its workloads now passes check's sizing rules."""
    doc = plan_json(GOOD)
    planned = [p for p in doc["plan"]["pools"] if {"nightly-eval", "offline-scoring"} & set(p["workloads"])]
    reserved = sum(p["reserved_gpus"] for p in planned)
    elastic = sum(p["elastic_gpus"] for p in planned)
    repo = _copy(tmp_path)
    cluster = repo / "clusters" / "prod-east.yaml"
    text = cluster.read_text(encoding="utf-8")
    assert text.count("reservedGpus: 20\n") == 1 and text.count("maxGpus: 6\n") == 1
    cluster.write_text(
        text.replace("reservedGpus: 20\n", f"reservedGpus: {reserved}\n").replace("maxGpus: 6\n", f"maxGpus: {elastic}\n"),
        encoding="utf-8",
    )
    code, findings = _check(repo, "PL101,PL102,PL104,PL109")
    assert (code, findings) == (0, []), [f["message"] for f in findings]


def test_splitting_gang_work_from_one_gpu_work_is_reported(tmp_path: Path) -> None:
    """The game made a repository: the mixed pool split the way plan drew it, each half sized by its own bands."""
    repo = _copy(tmp_path)
    cluster = repo / "clusters" / "prod-east.yaml"
    text = cluster.read_text(encoding="utf-8")
    batch = text[text.index("    - name: batch\n"):]
    halves = (
        "    - name: batch\n"
        "      gpu: {model: H100-SXM-80GB, memoryGiB: 80}\n"
        "      reservedGpus: 10\n"
        "      elastic: {maxGpus: 4, kind: spot, coldStartSeconds: 420}\n"
        "      serves: [batch]\n"
        "      overflow: queue\n"
        "      queue: {maxDepth: 400, maxWaitSeconds: 7200}\n"
        "      scheduling: {gang: false, preemption: true}\n"
        "    - name: batch-gang\n"
        "      gpu: {model: H100-SXM-80GB, memoryGiB: 80}\n"
        "      reservedGpus: 16\n"
        "      elastic: {maxGpus: 8, kind: spot, coldStartSeconds: 420}\n"
        "      serves: [batch]\n"
        "      overflow: queue\n"
        "      queue: {maxDepth: 400, maxWaitSeconds: 7200}\n"
        "      scheduling: {gang: true, preemption: true}\n"
    )  # fmt: skip
    cluster.write_text(text.replace(batch, halves), encoding="utf-8")
    research = repo / "workloads" / "research.yaml"
    text = research.read_text(encoding="utf-8")
    eval_at = text.index("name: nightly-eval")
    pool_at = text.index("pool: batch\n", eval_at)
    research.write_text(text[:pool_at] + "pool: batch-gang\n" + text[pool_at + len("pool: batch\n"):], encoding="utf-8")
    code, findings = _check(repo, "PL101,PL102,PL104,PL988")
    assert code == 1
    assert [f["code"] for f in findings] == ["PL988"]
    assert findings[0]["message"] == (
        "cluster prod-east keeps prod-east/batch and prod-east/batch-gang apart, though they peak at different times:"
        " apart their daily bands need 38 GPUs (reserved + elastic), pooled 26 (20 reserved instead of 26), so pooling"
        " saves 12 (32%; limits 4 GPUs and 15%)"
    )
