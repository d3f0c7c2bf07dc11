"""PL113: a pool sized by rounding, the red team's "one service split into many small workloads".

Red team, 2026-12-05 (attempts 2, 3 and 13): a reranker that needs 5 GPUs was split into
40 or 60 workloads - shares of one trace, one pod's rows each of a long table, or per-shard
traces of fractional in-flight counts that sum to the real one. Each rounds up to a GPU of
its own, the pooled baseline rose from 53 to 84 and 105 GPUs, and a proposal for the
difference passed every rule. These tests pin the figure PL113 judges, show each form of
the split caught (the fixtures under ``tests/rules/PL113`` hold the shares), and the hook's
narrowed run giving the whole run's verdict.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO, run_cli

NOW = ["--now", "2026-12-01"]
FIXTURES = REPO / "tests" / "rules"
CLUSTER = """apiVersion: policylint/v1
kind: Cluster
metadata: {name: east}
spec:
  pools:
    - name: serving
      gpu: {model: H100-80GB, memoryGiB: 80}
      reservedGpus: 16
      serves: [inference]
      overflow: queue
      queue: {maxDepth: 1000, maxWaitSeconds: 2}
"""


def _workload(name: str, concurrency: str) -> str:
    return f"""---
apiVersion: policylint/v1
kind: Workload
metadata: {{name: {name}, team: search}}
spec:
  class: inference
  cluster: east
  pool: serving
  gpusPerReplica: 1
  concurrency:
{concurrency}
  perGpuConcurrency: {{value: 40, measuredIn: production, source: "grafana: reranker latency board, 2026-11"}}
  coldStartSeconds: 600
  tolerance: {{maxQueueSeconds: 2, evidence: "p99 reranking latency objective of 2 s, search SLO 2026-Q3"}}
"""


def _pl113(repo: Path, *args: str) -> list[dict[str, object]]:
    if not (repo / ".policylint.yaml").exists():
        (repo / ".policylint.yaml").write_text("fail-on: warning\n")  # the repository's root: the traces lie inside
    rc, out, err = run_cli(["check", *NOW, "--format", "json", "--select", "PL113", *args], cwd=repo)
    assert rc in (0, 1) and err == "", err
    return [f for f in json.loads(out)["findings"] if f["code"] == "PL113"]


def _demand(days: int = 92, step: int = 300) -> tuple[np.ndarray, np.ndarray]:
    """A reranker's in-flight requests: a daily wave between about 40 and 200, every 5 minutes."""
    t = np.arange(days * 86_400 // step, dtype=np.int64) * step + 1_756_684_800  # from 2025-09-01
    hours = (t % 86_400) / 3_600
    rng = np.random.default_rng(7)
    c = 120 + 80 * np.sin((hours - 9) / 24 * 2 * np.pi) + rng.integers(-10, 11, t.size)
    return t, np.maximum(c, 0).astype(np.int64)


def test_the_rounding_of_one_series_is_the_mean_over_its_usable_samples() -> None:
    from policylint.calc.gpus import mean_rounding

    # 5 at 40 per GPU is an eighth of a GPU, rounded to one; 80 is exactly two; NaN is not a sample.
    # The mean of the differences, taken as the difference of the two means: (1 + 2 + 1) / 3 - 90 / 3 / 40
    series = np.array([5.0, 80.0, np.nan, 5.0])
    assert mean_rounding(series, 40.0) == 4 / 3 - 90 / 3 / 40
    assert mean_rounding(series, 40.0) == pytest.approx(((1 - 0.125) + 0.0 + (1 - 0.125)) / 3, rel=1e-12)
    # the counts a caller already has are taken as they are
    assert mean_rounding(series, 40.0, counts=np.array([1.0, 2.0, np.nan, 1.0])) == mean_rounding(series, 40.0)
    # on 2-GPU replicas: 50 at 40 per GPU is 1.25 replicas, rounded to 2 (4 GPUs for 2.5)
    assert mean_rounding(np.array([50.0]), 40.0, 2) == 4 - 2.5
    assert mean_rounding(np.array([np.nan]), 40.0) is None


def test_the_pools_rounding_is_the_sum_of_its_workloads_means() -> None:
    from policylint.engine.pool_view import pool_rounding
    from policylint.engine.sheets import WorkloadFactSheet

    def sheet(rounding: float | None, baseline: float | None, per: float | None, unit: str = "concurrency"):
        f = WorkloadFactSheet.__new__(WorkloadFactSheet)
        f.__dict__.update(rounding_gpus_mean=rounding, baseline=baseline, per_gpu=per, gpus_per_replica=1, trace_unit=unit)
        return f

    got = pool_rounding([sheet(0.875, 5.0, 40.0), sheet(0.5, 100.0, 40.0), sheet(0.0, 0.0, 40.0)])
    assert got == (0.875 + 0.5 + 0.0, 1)  # only the first needs less than one replica at its baseline
    # unmeasured workloads are not counted; none counted is unknown
    assert pool_rounding([sheet(None, None, 40.0), sheet(None, 5.0, None)]) == (None, None)


def test_sixteen_shares_of_one_trace_are_reported_with_their_exact_figures(tmp_path: Path) -> None:
    repo = tmp_path / "rules"
    shutil.copytree(FIXTURES / "_traces", repo / "_traces")
    shutil.copytree(FIXTURES / "PL113" / "fail", repo / "PL113" / "fail")
    found = _pl113(repo, "PL113/fail/shards.yaml")
    assert len(found) == 1
    message = str(found[0]["message"])
    # 16 shards of a sixteenth of the trace at 40 per GPU: each needs under a quarter of a GPU and holds one
    assert re.search(r"adds 1[34]\.\d GPUs to the pool's demand on average \(16 of its workloads need less than one replica", message)
    assert re.search(r"8\d% of the pooled baseline of 16 GPUs \(limit 25%\)", message)


def test_the_same_demand_as_one_workload_passes(tmp_path: Path) -> None:
    repo = tmp_path / "rules"
    shutil.copytree(FIXTURES / "_traces", repo / "_traces")
    shutil.copytree(FIXTURES / "PL113" / "pass", repo / "PL113" / "pass")
    assert _pl113(repo, "PL113") == []


def test_fractional_per_shard_traces_that_sum_to_the_real_one_are_caught(tmp_path: Path) -> None:
    # attempt 13: each shard's trace holds c(t) x its weight, fractional in-flight counts
    repo = tmp_path / "repo"
    (repo / "traces").mkdir(parents=True)
    t, c = _demand()
    weights = np.random.default_rng(3).dirichlet(np.ones(24))
    text = CLUSTER
    for i, w in enumerate(weights):
        rows = "\n".join(f"{a},{b:.4f}" for a, b in zip(t.tolist(), (c * w).tolist()))
        (repo / "traces" / f"shard-{i:02d}.csv").write_text("timestamp,in_flight\n" + rows + "\n")
        text += _workload(f"rerank-{i:02d}", f"    trace: {{path: traces/shard-{i:02d}.csv}}")
    (repo / "plan.yaml").write_text(text)
    found = _pl113(repo, ".")
    assert [f["file"] for f in found] == ["plan.yaml"], found
    # and the real trace as one workload passes
    whole = repo.parent / "whole"
    (whole / "traces").mkdir(parents=True)
    rows = "\n".join(f"{a},{b}" for a, b in zip(t.tolist(), c.tolist()))
    (whole / "traces" / "rerank.csv").write_text("timestamp,in_flight\n" + rows + "\n")
    (whole / "plan.yaml").write_text(CLUSTER + _workload("rerank", "    trace: {path: traces/rerank.csv}"))
    assert _pl113(whole, ".") == []


def test_one_workload_per_pod_of_one_long_table_is_caught(tmp_path: Path) -> None:
    # attempt 3: an honest per-pod table, and one workload per pod selected from it
    repo = tmp_path / "repo"
    (repo / "traces").mkdir(parents=True)
    t, c = _demand()
    pods = 20
    split = np.random.default_rng(5).multinomial(1, np.ones(pods) / pods, size=int(c.max()))  # requests to pods
    per_pod = np.stack([np.cumsum(split[:, p])[np.maximum(c - 1, 0)] * (c > 0) for p in range(pods)])
    lines = ["timestamp,pod,in_flight"]
    for p in range(pods):
        lines += [f"{a},pod-{p:02d},{b}" for a, b in zip(t.tolist(), per_pod[p].tolist())]
    (repo / "traces" / "rerank-by-pod.csv").write_text("\n".join(lines) + "\n")
    text = CLUSTER
    for p in range(pods):
        text += _workload(
            f"rerank-pod-{p:02d}",
            f"    trace:\n      path: traces/rerank-by-pod.csv\n      key: {{column: pod, select: pod-{p:02d}}}\n      columns: [in_flight]",
        )
    (repo / "plan.yaml").write_text(text)
    found = _pl113(repo, ".")
    assert [f["file"] for f in found] == ["plan.yaml"], found


def test_shards_that_take_turns_are_caught(tmp_path: Path) -> None:
    # helper red team, 2026-12-05: 60 shards, a third of them busy at any sample and none busy two
    # samples running; their own baselines are zero, so rounding at each shard's baseline saw nothing
    repo = tmp_path / "repo"
    (repo / "traces").mkdir(parents=True)
    t, c = _demand()
    shards, busy = 60, 20
    text = CLUSTER
    for i in range(shards):
        turn = (np.arange(t.size) * busy + i) % shards < busy  # shard i is busy at a third of the samples
        values = np.where(turn, c / busy, 0.0)
        rows = "\n".join(f"{a},{b:.4f}" for a, b in zip(t.tolist(), values.tolist()))
        (repo / "traces" / f"turn-{i:02d}.csv").write_text("timestamp,in_flight\n" + rows + "\n")
        text += _workload(f"rerank-turn-{i:02d}", f"    trace: {{path: traces/turn-{i:02d}.csv}}")
    (repo / "plan.yaml").write_text(text)
    found = _pl113(repo, ".")
    assert [f["file"] for f in found] == ["plan.yaml"], found
    assert "(0 of its workloads need less than one replica at their baseline)" in str(found[0]["message"])


def test_the_hooks_narrowed_run_gives_the_whole_runs_verdict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if shutil.which("git") is None:
        pytest.skip("needs git")
    from policylint.engine import lite_sheet, repo_index

    monkeypatch.setattr(repo_index, "RACY_SECONDS", 0.0)  # the files were just written: index them at once

    repo = tmp_path / "repo"
    (repo / "workloads").mkdir(parents=True)
    shutil.copytree(FIXTURES / "_traces", repo / "_traces")
    (repo / "cluster.yaml").write_text(CLUSTER)
    share = '    trace: {path: ../_traces/diurnal-100.csv}\n    share: {fraction: 0.0625, reason: "one of 16 reranker shards, router logs"}'
    for i in range(16):
        (repo / "workloads" / f"shard-{i:02d}.yaml").write_text(_workload(f"shard-{i:02d}", share).removeprefix("---\n"))
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    whole = _pl113(repo, ".")  # fills the cache: the narrowed runs below take the neighbours from it
    assert [f["file"] for f in whole] == ["cluster.yaml"]
    made, filled = lite_sheet.STATS["made"], lite_sheet.STATS["filled"]
    narrowed = _pl113(repo, "--changed-files", "workloads/shard-03.yaml")
    assert narrowed == whole
    # an edit that leaves the split as it is: the same verdict, the 15 unchanged shards standing in
    edited = repo / "workloads" / "shard-03.yaml"
    edited.write_text(edited.read_text().replace("maxQueueSeconds: 2,", "maxQueueSeconds: 3,"))
    again = _pl113(repo, "--changed-files", "workloads/shard-03.yaml")
    assert again == whole
    assert lite_sheet.STATS["made"] > made
    # the rounding reads what a stand-in holds: the unchanged shards' sheets are not rebuilt for it
    # (reading a baseline a stand-in did not hold would rebuild all 15 in each narrowed run)
    assert lite_sheet.STATS["filled"] - filled < 15
    assert again == _pl113(repo, ".", "--no-cache")
