"""Plans built to test the pooled-demand rules, run through the real entry point.

"Plans that must not pass" hide capacity or demand where a per-workload view cannot see
it; "plans that must not fail" are sound plans that the sum of the workloads' bands
used to refuse. Each plan is a small repository in a temporary folder: a day-time
service and a night-time batch (tests/rules/_traces/day-shift.csv and night-shift.csv;
alone each needs 21 GPUs, together never more than 23).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import run_cli

TRACES = Path(__file__).parent / "rules" / "_traces"

#: The rules whose verdicts depend on pooled demand or on who measured what.
POOLED_RULES = {
    "PL101", "PL102", "PL104", "PL110", "PL111", "PL112", "PL201", "PL203", "PL205", "PL801", "PL802", "PL803",
}


def _pool(name: str, reserved: int, elastic: int = 0) -> str:
    return f"""
    - name: {name}
      gpu: {{model: H100-80GB, memoryGiB: 80}}
      reservedGpus: {reserved}
      elastic: {{maxGpus: {elastic}, kind: autoscale, coldStartSeconds: 600}}
      serves: [inference, batch]
      overflow: queue
      queue: {{maxDepth: 100, maxWaitSeconds: 60}}"""


def _cluster(*pools: str, name: str = "shifts") -> str:
    return f"apiVersion: policylint/v1\nkind: Cluster\nmetadata:\n  name: {name}\nspec:\n  pools:{''.join(pools)}\n"


def _workload(name: str, trace: str | None, *, pool: str = "shared", cls: str = "inference",
              per_gpu: int = 10, tolerance: int = 30, share: str = "", cluster: str = "shifts") -> str:
    concurrency = f"    trace:\n      path: ../traces/{trace}\n{share}" if trace else "    declared: 200\n"
    return f"""---
apiVersion: policylint/v1
kind: Workload
metadata:
  name: {name}
  team: platform
spec:
  class: {cls}
  cluster: {cluster}
  pool: {pool}
  gpusPerReplica: 1
  concurrency:
{concurrency}  perGpuConcurrency: {{value: {per_gpu}, measuredIn: production, source: "grafana: saturation board, 2026-11"}}
  coldStartSeconds: 600
  tolerance:
    maxQueueSeconds: {tolerance}
    evidence: "answers may take {tolerance} s, product SLO document 2026-Q3"
"""


DAY = _workload("day-service", "day-shift.csv")
NIGHT = _workload("night-batch", "night-shift.csv", cls="batch", per_gpu=1, tolerance=1800)


def _proposal(pool: str, gpus: int, workloads: str = "[day-service, night-batch]", cluster: str = "shifts") -> str:
    return f"""apiVersion: policylint/v1
kind: Proposal
metadata:
  name: more-gpus
spec:
  cluster: {cluster}
  date: "2026-11-20"
  requests:
    - pool: {pool}
      gpus: {gpus}
  workloads: {workloads}
  justification: Closes the gap between the pooled baseline band and the reserved GPUs.
"""


def _repo(tmp: Path, cluster: str, workloads: str, proposal: str | None = None) -> Path:
    root = tmp / "plan"
    (root / "traces").mkdir(parents=True)
    for name in ("day-shift.csv", "night-shift.csv", "old-92d.csv"):
        shutil.copy(TRACES / name, root / "traces" / name)
    (root / ".policylint.yaml").write_text('now: "2026-12-01"\n', encoding="utf-8")
    (root / "clusters").mkdir()
    (root / "clusters" / "shifts.yaml").write_text(cluster, encoding="utf-8")
    (root / "workloads").mkdir()
    (root / "workloads" / "all.yaml").write_text(workloads, encoding="utf-8")
    if proposal is not None:
        (root / "proposals").mkdir()
        (root / "proposals" / "more.yaml").write_text(proposal, encoding="utf-8")
    return root


def _check(root: Path, *paths: str) -> tuple[int, list[dict[str, object]]]:
    code, out, err = run_cli(["check", *(paths or (".",)), "--format", "json"], cwd=root)
    assert code in (0, 1), err
    return code, [f for f in json.loads(out)["findings"] if f["code"] in POOLED_RULES]


def _codes(findings: list[dict[str, object]]) -> list[str]:
    return sorted(str(f["code"]) for f in findings)


# --------------------------------------------------------------------------- plans that must not pass


def test_capacity_hidden_in_an_empty_second_pool(tmp_path: Path) -> None:
    root = _repo(tmp_path, _cluster(_pool("shared", 23), _pool("standby", 40, 8)), DAY + NIGHT)
    code, findings = _check(root)
    assert code == 1 and _codes(findings) == ["PL110"]
    assert "standby holds 48 GPUs (reserved 40 + elastic 8)" in str(findings[0]["message"])


def test_capacity_hidden_in_a_pool_of_declared_numbers(tmp_path: Path) -> None:
    guessed = _workload("guessed", None, pool="standby")
    root = _repo(tmp_path, _cluster(_pool("shared", 23), _pool("standby", 40)), DAY + NIGHT + guessed)
    _, findings = _check(root)
    assert _codes(findings) == ["PL110"]


def test_proposal_for_an_unmeasured_pool_fails_alone_and_in_the_whole_repository(tmp_path: Path) -> None:
    root = _repo(tmp_path, _cluster(_pool("shared", 23), _pool("standby", 0)), DAY + NIGHT,
                 _proposal("standby", 32, "[day-service]"))
    code_all, everything = _check(root)
    code_one, alone = _check(root, "proposals/more.yaml")
    in_proposal = [f for f in everything if f["file"] == "proposals/more.yaml"]
    assert (code_all, code_one) == (1, 1)
    assert _codes(alone) == _codes(in_proposal) == ["PL803"]
    assert alone == in_proposal


def test_proposal_for_a_cluster_without_measured_workloads(tmp_path: Path) -> None:
    guessed = _workload("guessed", None, pool="standby")
    root = _repo(tmp_path, _cluster(_pool("standby", 0)), guessed, _proposal("standby", 16, "[guessed]"))
    _, alone = _check(root, "proposals/more.yaml")
    assert _codes(alone) == ["PL802", "PL803"]
    pl803 = next(f for f in alone if f["code"] == "PL803")
    assert "(1 placed there, 0 measured in the whole cluster)" in str(pl803["message"])


def test_the_same_trace_cited_twice_in_one_pool(tmp_path: Path) -> None:
    copy = _workload("day-service-copy", "day-shift.csv")
    root = _repo(tmp_path, _cluster(_pool("shared", 44)), DAY + copy + NIGHT)
    _, findings = _check(root)
    assert _codes(findings) == ["PL111"]
    assert "day-service-copy cites the same concurrency measurement" in str(findings[0]["message"])


def test_reserving_the_sum_of_the_workloads_baselines_is_peak_sizing(tmp_path: Path) -> None:
    root = _repo(tmp_path, _cluster(_pool("shared", 42)), DAY + NIGHT)
    _, findings = _check(root)
    assert "PL101" in _codes(findings)
    pl101 = next(f for f in findings if f["code"] == "PL101")
    assert "pooled baseline is 23 GPUs (sum of workload baselines 42: pooling saves 19" in str(pl101["message"])


def test_traces_from_different_quarters_give_no_pooled_window(tmp_path: Path) -> None:
    old = _workload("old-service", "old-92d.csv")
    root = _repo(tmp_path, _cluster(_pool("shared", 40)), DAY + old)
    _, findings = _check(root)
    assert "PL112" in _codes(findings)


# --------------------------------------------------------------------------- plans that must not fail


def test_day_service_and_night_batch_sized_at_their_combined_p95(tmp_path: Path) -> None:
    root = _repo(tmp_path, _cluster(_pool("shared", 23)), DAY + NIGHT)
    _, findings = _check(root)
    # The sum of the workloads' bands (42) would have failed PL104 and, split by
    # baseline, PL203 for both workloads.
    assert findings == []


def test_proposal_closing_the_pooled_shortfall(tmp_path: Path) -> None:
    root = _repo(tmp_path, _cluster(_pool("shared", 20, 3)), DAY + NIGHT, _proposal("shared", 3))
    _, everything = _check(root)
    _, alone = _check(root, "proposals/more.yaml")
    assert everything == [] and alone == []


def test_two_workloads_sharing_one_trace_by_declared_shares(tmp_path: Path) -> None:
    share = '    share: {fraction: 0.5, reason: "blue/green halves of the day-service traffic (router config)"}\n'
    blue = _workload("day-blue", "day-shift.csv", share=share)
    green = _workload("day-green", "day-shift.csv", share=share)
    root = _repo(tmp_path, _cluster(_pool("shared", 24)), blue + green + NIGHT)
    _, findings = _check(root)
    # Halves of one trace, each rounded to whole GPUs on its own: 2 x ceil(105 / 10) + the
    # batch's 2 = 24 by day; one GPU more than the undivided service needs, not twice as many.
    assert findings == []


def test_capacity_hidden_in_an_unused_cluster_queue_of_the_same_cohort(tmp_path: Path) -> None:
    from conftest import EXAMPLES

    root = tmp_path / "kueue"
    shutil.copytree(EXAMPLES / "kueue", root)
    spare = """---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: spare
spec:
  cohortName: east
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: ["nvidia.com/gpu"]
    flavors:
    - name: h200
      resources:
      - name: "nvidia.com/gpu"
        nominalQuota: 40
"""
    queues = root / "kueue" / "cluster-queues.yaml"
    queues.write_text(queues.read_text(encoding="utf-8") + spare, encoding="utf-8")
    _, findings = _check(root)
    assert [(f["code"], f["file"]) for f in findings] == [("PL110", "kueue/cluster-queues.yaml")]
    assert str(findings[0]["message"]).startswith("pool east/spare holds 64 GPUs (reserved 40 + elastic 24)")
