"""Volcano manifests as pools: the real examples, queue mapping, PL903 and PL904."""

from __future__ import annotations

import shutil
from pathlib import Path

from conftest import run_cli
from fixture_helpers import DATA, FIXTURES, expected_marks, reported_marks, run


def test_real_manifests_have_no_findings(tmp_path: Path) -> None:
    shutil.copytree(DATA / "volcano", tmp_path / "volcano")
    code, out, err = run_cli(["check", "--isolated", "--now", "2026-12-01", str(tmp_path / "volcano")])
    assert (code, err) == (0, "")
    assert "All checks passed: 2 documents in 2 files." in out
    result = run([tmp_path / "volcano"], tmp_path)
    assert result.findings == []
    # the example queue has CPU and memory only: no GPU pool
    assert result.model.schedulers["volcano"].pools == {}
    assert sorted(result.model.schedulers["volcano"].queues) == ["default"]


QUEUES = """\
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: lab
spec:
  weight: 1
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: chat
spec:
  parent: lab
  guarantee:
    resource:
      nvidia.com/gpu: "4"
  capability:
    nvidia.com/gpu: 12
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: train
spec:
  parent: lab
  reclaimable: RECLAIMABLE
  guarantee:
    resource:
      nvidia.com/gpu: 32
  deserved:
    nvidia.com/gpu: 40
---
apiVersion: policylint/v1
kind: Workload
metadata:
  name: chat
  team: assistants
spec:
  class: inference
  queue: {scheduler: volcano, name: chat}
  gpusPerReplica: 1
  concurrency:
    trace:
      path: diurnal-100.csv
  perGpuConcurrency: {value: 10, measuredIn: production, source: "grafana board"}
  coldStartSeconds: 600
  tolerance:
    maxQueueSeconds: 2
    evidence: "p99 TTFT SLO 2 s"
---
apiVersion: policylint/v1
kind: Workload
metadata:
  name: pretrain
  team: research
spec:
  class: training
  queue: {scheduler: volcano, name: train}
  gpusPerReplica: 8
  concurrency:
    trace:
      path: even-jobs.csv
      format: jobs
      startColumn: start
      endColumn: end
  perGpuConcurrency: {value: 1, measuredIn: production, source: "scheduler admission records"}
  coldStartSeconds: 600
  tolerance:
    maxQueueSeconds: 3600
    evidence: "planning review"
"""


def _repo(tmp_path: Path, reclaimable: str) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    for trace in ("diurnal-100.csv", "even-jobs.csv"):
        shutil.copy(FIXTURES / "_traces" / trace, repo / trace)
    (repo / "queues.yaml").write_text(QUEUES.replace("RECLAIMABLE", reclaimable), encoding="utf-8")
    return repo


def test_queue_mapping_and_pl904(tmp_path: Path) -> None:
    repo = _repo(tmp_path, "false")
    result = run([repo], repo)
    pools = {p.name: p for p in result.model.pools}
    assert sorted(pools) == ["chat", "train"]
    chat, train = pools["chat"], pools["train"]
    assert chat.cluster.name == "lab" and chat.origin == "volcano"
    assert chat.spec["reservedGpus"] == 4 and chat.spec["elastic"]["maxGpus"] == 8
    # no GPU capability: the deserved share bounds the queue
    assert train.spec["reservedGpus"] == 32 and train.spec["elastic"]["maxGpus"] == 8
    pl904 = [f for f in result.findings if f.code == "PL904"]
    assert len(pl904) == 1 and "(train)" in pl904[0].message
    # the training queue is reclaimable: borrowed GPUs come back
    (repo / "queues.yaml").write_text(QUEUES.replace("RECLAIMABLE", "true"), encoding="utf-8")
    assert not [f for f in run([repo], repo).findings if f.code == "PL904"]


def test_unknown_and_parent_queue(tmp_path: Path) -> None:
    repo = _repo(tmp_path, "true")
    text = (repo / "queues.yaml").read_text().replace("name: chat}", "name: lab}").replace("name: train}", "name: nope}")
    (repo / "queues.yaml").write_text(text)
    messages = sorted(f.message for f in run([repo], repo, rules=False).findings)
    assert messages[0].startswith("Volcano Queue 'lab' has no GPU capability")
    assert messages[1].startswith("unknown Volcano Queue 'nope' (known: chat, lab, train)")


def test_pl903_fixture() -> None:
    fail = FIXTURES / "PL903" / "fail"
    assert expected_marks(fail, "PL903")
    assert reported_marks(fail, "PL903") == expected_marks(fail, "PL903")
    assert reported_marks(FIXTURES / "PL903" / "pass", "PL903") == set()


def test_a_key_with_a_slash_is_one_step_of_the_reported_path(tmp_path: Path) -> None:
    """Volcano resource names hold '/': the document path escapes it (JSON Pointer ~1)."""
    import json

    (tmp_path / "q.yaml").write_text(QUEUES.split("---")[0] + "---" + QUEUES.split("---")[1].replace('"4"', '"four"'))
    code, out, err = run_cli(["check", "--isolated", "--format", "json", str(tmp_path / "q.yaml")], cwd=tmp_path)
    found = [(f["code"], f["line"], f["path"]) for f in json.loads(out)["findings"]]
    assert (code, err) == (1, "")
    assert found == [("PL010", 16, "spec/guarantee/resource/nvidia.com~1gpu")]


def test_a_queue_that_makes_no_valid_pool_is_reported_on_its_manifest(tmp_path: Path) -> None:
    """Synthetic pool specs are validated like a Cluster pool: a name no pool may have is PL010."""
    import json

    text = QUEUES.split("---")[0] + "---" + QUEUES.split("---")[1].replace("name: chat", "name: Chat_Queue")
    (tmp_path / "q.yaml").write_text(text)
    code, out, err = run_cli(["check", "--isolated", "--format", "json", str(tmp_path / "q.yaml")], cwd=tmp_path)
    found = [(f["code"], f["line"], f["path"], f["message"]) for f in json.loads(out)["findings"]]
    assert (code, err) == (1, "")
    assert found == [
        (
            "PL010",
            11,
            "metadata/name",
            "Queue 'Chat_Queue' does not make a valid pool 'Chat_Queue': name: "
            "'Chat_Queue' does not match '^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$'",
        )
    ]
