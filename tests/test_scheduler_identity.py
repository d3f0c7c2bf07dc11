"""A scheduler queue is a pool like a Cluster's, through the real CLI.

One identity whatever the source: a ClusterQueue (or Volcano Queue, LocalQueue...)
defined twice is PL021 at the second definition, pointing at the first - the one
workloads bind to - with the message a second Cluster gets. And the same facts:
GPU quota that no measured workload uses is PL110, as an empty Cluster pool's GPUs are.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import run_cli
from fixture_helpers import DATA, FIXTURES

CLUSTER_QUEUE = """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: {name}
spec:
  namespaceSelector: {{}}
  resourceGroups:
  - coveredResources: ["nvidia.com/gpu"]
    flavors:
    - name: h100
      resources:
      - name: "nvidia.com/gpu"
        nominalQuota: {gpus}
"""
QUOTA_LINE = 13  # nominalQuota in CLUSTER_QUEUE

LOCAL_QUEUE = """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: chat
  namespace: {namespace}
spec:
  clusterQueue: cluster-queue
"""

VOLCANO_QUEUE = """\
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: {name}
spec:
  guarantee:
    resource:
      nvidia.com/gpu: "{gpus}"
"""
GUARANTEE_LINE = 8  # the GPU guarantee in VOLCANO_QUEUE

CLUSTER = """\
apiVersion: policylint/v1
kind: Cluster
metadata:
  name: {name}
spec:
  pools:
    - name: burst
      gpu: {{model: H100-80GB, memoryGiB: 80}}
      reservedGpus: {gpus}
      serves: [inference]
      overflow: queue
"""

WORKLOAD = """\
apiVersion: policylint/v1
kind: Workload
metadata:
  name: chat
  team: assistants
spec:
  class: inference
  queue: {scheduler: kueue, name: assistants/chat}
  gpusPerReplica: 1
  concurrency:
    trace:
      path: trace.csv
  perGpuConcurrency: {value: 10, measuredIn: production, source: "grafana board"}
  coldStartSeconds: 600
  tolerance:
    maxQueueSeconds: 2
    evidence: "p99 TTFT SLO 2 s"
"""


def repo_of(tmp_path: Path, files: dict[str, str]) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    for name, text in files.items():
        (repo / name).write_text(text, encoding="utf-8")
    return repo


def check(repo: Path, *args: str) -> tuple[int, list[tuple[str, str, int, str]]]:
    """(exit code, findings as (code, file, line, message)) of ``check --format json``."""
    code, out, err = run_cli(["check", "--isolated", "--now", "2026-12-01", "--format", "json", *args, "."], cwd=repo)
    assert err == ""
    return code, [(f["code"], f["file"], f["line"], f["message"]) for f in json.loads(out)["findings"]]


NO_LIMITS = "has no queue limits (maxDepth: unknown, maxWaitSeconds: unknown): waiting is an accident, not a design"


def unmeasured(pool: str, gpus: int) -> str:
    return (
        f"pool {pool} holds {gpus} GPUs (reserved {gpus} + elastic 0), but none of the workloads placed in it (0)"
        " has measured GPU demand: capacity nobody measured"
    )


# -- the same object twice ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "template", "line"),
    [
        pytest.param("Cluster", CLUSTER, 4, id="policylint-cluster"),
        pytest.param("ClusterQueue", CLUSTER_QUEUE, 4, id="kueue-cluster-queue"),
        pytest.param("Queue", VOLCANO_QUEUE, 4, id="volcano-queue"),
    ],
)
def test_a_second_definition_is_pl021_pointing_at_the_first(tmp_path: Path, kind: str, template: str, line: int) -> None:
    name = "cluster-queue"
    repo = repo_of(tmp_path, {"a.yaml": template.format(name=name, gpus=8), "b.yaml": template.format(name=name, gpus=16)})
    code, findings = check(repo, "--select", "PL021")
    assert (code, findings) == (1, [("PL021", "b.yaml", line, f"{kind} '{name}' is already defined at a.yaml:{line}")])


@pytest.mark.parametrize(
    "template", [pytest.param(CLUSTER_QUEUE, id="kueue-cluster-queue"), pytest.param(VOLCANO_QUEUE, id="volcano-queue")]
)
def test_two_names_are_two_queues(tmp_path: Path, template: str) -> None:
    repo = repo_of(
        tmp_path, {"a.yaml": template.format(name="cluster-queue", gpus=8), "b.yaml": template.format(name="other", gpus=16)}
    )
    assert check(repo, "--select", "PL021") == (0, [])


def test_the_second_definition_is_not_read(tmp_path: Path) -> None:
    # the upstream single-ClusterQueue setup names its CPU-only queue cluster-queue; a second
    # file defining cluster-queue with GPUs is the same object, so its quota is no pool
    repo = repo_of(tmp_path, {"gpu.yaml": CLUSTER_QUEUE.format(name="cluster-queue", gpus=16)})
    shutil.copy(DATA / "kueue" / "single-clusterqueue-setup.yaml", repo / "a-setup.yaml")
    code, findings = check(repo)
    assert (code, findings) == (
        1,
        [("PL021", "gpu.yaml", 4, "ClusterQueue 'cluster-queue' is already defined at a-setup.yaml:9")],
    )


def test_a_workload_binds_to_the_first_definition_and_is_told(tmp_path: Path) -> None:
    files = {
        "a.yaml": CLUSTER_QUEUE.format(name="cluster-queue", gpus=14),  # the trace's baseline band: 14 GPUs
        "b.yaml": CLUSTER_QUEUE.format(name="cluster-queue", gpus=64),
        "local.yaml": LOCAL_QUEUE.format(namespace="assistants"),
        "chat.yaml": WORKLOAD,
    }
    repo = repo_of(tmp_path, files)
    shutil.copy(FIXTURES / "_traces" / "diurnal-100.csv", repo / "trace.csv")
    code, findings = check(repo, "--select", "PL021,PL101,PL104,PL110")
    # sized from a.yaml (no PL101 for b.yaml's 64 GPUs); b.yaml is only the duplicate
    assert (code, findings) == (1, [("PL021", "b.yaml", 4, "ClusterQueue 'cluster-queue' is already defined at a.yaml:4")])


def test_a_local_queue_is_one_object_per_namespace(tmp_path: Path) -> None:
    files = {
        "queue.yaml": CLUSTER_QUEUE.format(name="cluster-queue", gpus=8),
        "a.yaml": LOCAL_QUEUE.format(namespace="assistants"),
        "b.yaml": LOCAL_QUEUE.format(namespace="assistants"),
        "c.yaml": LOCAL_QUEUE.format(namespace="research"),
    }
    code, findings = check(repo_of(tmp_path, files), "--select", "PL021")
    assert (code, findings) == (
        1,
        [("PL021", "b.yaml", 4, "LocalQueue 'assistants/chat' is already defined at a.yaml:4")],
    )


# -- GPU quota without a workload -----------------------------------------------------------------


def test_idle_cluster_queue_is_pl110_like_an_empty_cluster_pool(tmp_path: Path) -> None:
    repo = repo_of(
        tmp_path, {"queue.yaml": CLUSTER_QUEUE.format(name="idle", gpus=24), "cluster.yaml": CLUSTER.format(name="prod", gpus=24)}
    )
    code, findings = check(repo, "--select", "PL110,PL204")
    # no cohort: the ClusterQueue is its own cluster; the two pools read alike
    assert (code, findings) == (
        1,
        [
            ("PL204", "cluster.yaml", 7, f"pool prod/burst {NO_LIMITS}"),
            ("PL110", "cluster.yaml", 9, unmeasured("prod/burst", 24)),
            ("PL204", "queue.yaml", 4, f"pool idle/idle {NO_LIMITS}"),
            ("PL110", "queue.yaml", QUOTA_LINE, unmeasured("idle/idle", 24)),
        ],
    )


def test_idle_volcano_queue_is_pl110(tmp_path: Path) -> None:
    repo = repo_of(tmp_path, {"queue.yaml": VOLCANO_QUEUE.format(name="research", gpus=8)})
    code, findings = check(repo, "--select", "PL110")
    assert (code, findings) == (1, [("PL110", "queue.yaml", GUARANTEE_LINE, unmeasured("root/research", 8))])


def test_cluster_queue_used_by_a_measured_workload_is_not_pl110(tmp_path: Path) -> None:
    files = {
        "queue.yaml": CLUSTER_QUEUE.format(name="cluster-queue", gpus=14),
        "local.yaml": LOCAL_QUEUE.format(namespace="assistants"),
        "chat.yaml": WORKLOAD,
    }
    repo = repo_of(tmp_path, files)
    shutil.copy(FIXTURES / "_traces" / "diurnal-100.csv", repo / "trace.csv")
    assert check(repo, "--select", "PL110") == (0, [])


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(CLUSTER_QUEUE.format(name="spare", gpus=0), id="kueue-zero-quota"),
        pytest.param(VOLCANO_QUEUE.format(name="spare", gpus=0), id="volcano-zero-guarantee"),
    ],
)
def test_queue_without_gpus_is_not_pl110(tmp_path: Path, text: str) -> None:
    assert check(repo_of(tmp_path, {"queue.yaml": text}), "--select", "PL110") == (0, [])
