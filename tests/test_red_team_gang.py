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

The gang need itself had two definitions: PL403 called a workload's jobs multi-GPU when
``gpusPerReplica`` was above 1 or a measured job list recorded a job of several GPUs,
while ``plan`` looked at ``gpusPerReplica`` alone. A batch workload declaring 1 whose job
list shows 8-GPU jobs was planned without gang scheduling, and ``check`` then refused
the planned pool by PL403. Both now ask
:func:`policylint.measure.pool_groups.is_gang` with the workload's measured facts.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import EXAMPLES, run_cli
from fixture_helpers import NOW, RULESET, session_cache
from test_plan import DAYS, END, Spec, make_repo, plan_json, pool_of

from policylint.engine.linter import LintOptions, lint
from policylint.measure.pool_groups import is_gang

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


# --- gang need from the job list: one definition for check and plan -----------------------------


def _eight_gpu_jobs(path: Path) -> None:
    """A job list of 8-GPU jobs over the plans' 92 days: one starts every 30 minutes and runs 1.5 to 2.5 hours."""
    first = END - DAYS * 86_400
    rows = ["job_id,start,end,gpus"] + [
        f"j{i},{first + 1800 * i},{first + 1800 * i + 5400 + (i * 37) % 3600},8" for i in range(DAYS * 48 - 6)
    ]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")


def _one_gpu_declared(tmp_path: Path, measured: str) -> Path:
    """A batch workload declaring ``gpusPerReplica: 1`` whose measured job list records 8-GPU jobs.

    ``measured``: ``durations`` - the job list is its durations (``job_gpus_max``), its
    trace counts running jobs; ``weighted`` - its trace is the job list weighed by GPUs
    (``trace_job_gpus_p90``; ``gpusPerReplica`` then costs nothing), durations declared.
    """
    repo = make_repo(tmp_path / "repo", [Spec("score", cls="batch", replicas=1, tolerance=3600, cold_start=600)])
    _eight_gpu_jobs(repo / "measurements" / "score-jobs.csv")
    jobs = {"path": "../measurements/score-jobs.csv", "format": "jobs", "startColumn": "start", "endColumn": "end",
            "gpusColumn": "gpus"}  # fmt: skip
    path = repo / "workloads" / "score.yaml"
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    if measured == "durations":
        doc["spec"]["durations"] = {"jobs": jobs}
    else:
        doc["spec"]["concurrency"] = {"trace": jobs}
    assert doc["spec"]["gpusPerReplica"] == 1
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return repo


@pytest.mark.parametrize("measured", ["durations", "weighted"])
def test_plan_declares_the_gang_check_demands_from_the_job_list(tmp_path: Path, measured: str) -> None:
    """The game: declare gpusPerReplica 1 while the job list shows 8-GPU jobs. check asks for gang admission
    (PL403); plan planned the pool without it, so a team citing plan failed check. Both now read the job list."""
    repo = _one_gpu_declared(tmp_path, measured)
    _, findings = _check(repo, "PL403")
    assert [(f["code"], f["subject"]) for f in findings] == [("PL403", "pool east/all")]
    assert "runs multi-GPU jobs (score)" in findings[0]["message"]
    planned = tmp_path / "planned"
    code, out, err = run_cli(["plan", str(repo), "--format", "json", "--repository", str(planned)])
    assert "Traceback" not in err
    doc = json.loads(out)
    pool = pool_of(doc, "score")
    assert pool["scheduling"]["gang"] is True
    assert pool["pool"].endswith("-gang")
    assert "multi-GPU jobs needing gang scheduling" in pool["reasons"]["score"]
    assert pool["derivation"]["scheduling.gang"]["value"] is True
    assert code == 0 and doc["check"]["passes"] is True, doc["check"]
    assert "PL403" not in {f["code"] for f in doc["check"]["sizing_findings"]}
    # the fix converges: check on what plan wrote has no PL403 for the planned pool
    _, findings = _check(planned, "PL403")
    assert findings == [], [f["message"] for f in findings]


@pytest.mark.parametrize(
    ("cls", "spec", "integrity", "gang"),
    [
        ("batch", {"gpusPerReplica": 2}, None, True),
        ("training", {"gpusPerReplica": 2.0}, None, True),  # the schema's integer: 2.0 is 2
        ("batch", {"gpusPerReplica": 1}, None, False),
        ("batch", {}, {"job_gpus_max": 8}, True),  # the durations' job list
        ("training", {"gpusPerReplica": 1}, {"trace_job_gpus_p90": 8.0}, True),  # a GPU-weighted trace
        ("batch", {"gpusPerReplica": 1}, {"job_gpus_max": 1, "trace_job_gpus_p90": None}, False),
        ("batch", {"gpusPerReplica": 1}, {"job_gpus_max": True}, False),  # a boolean is no GPU count
        ("inference", {"gpusPerReplica": 8}, {"job_gpus_max": 8}, False),  # replicas, not jobs: no gang
    ],
)
def test_one_definition_of_jobs_holding_several_gpus(cls: str, spec: dict[str, Any], integrity: Any, gang: bool) -> None:
    assert is_gang(cls, spec, integrity) is gang
