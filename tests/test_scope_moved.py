"""A workload moved to another pool: the pool it left is judged by the narrowed runs too.

Red team, 2026-12-05: moving embeddings-search from prod-east/serving to another
cluster's pool left prod-east/serving over-reserved (PL102 in a whole run), while
``check --changed-files workloads/embeddings.yaml`` (the hook) and ``check --diff
HEAD~1`` (the CI recipe) judged only the pool it joined and passed. The old
placement is read from git (HEAD for the hook, the base for ``--diff``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, run_cli

NOW = ["--now", "2026-12-01"]
SEARCH_EAST = """apiVersion: policylint/v1
kind: Cluster
metadata: {name: search-east}
spec:
  pools:
    - name: embed
      gpu: {model: H200-SXM-141GB, memoryGiB: 141}
      reservedGpus: 11
      elastic: {maxGpus: 1, kind: autoscale, coldStartSeconds: 600}
      serves: [inference]
      overflow: reject
      queue: {maxDepth: 4000, maxWaitSeconds: 5}
"""


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=repo, check=True,
                   capture_output=True)


def _findings(repo: Path, *args: str) -> set[tuple[str, str]]:
    rc, out, err = run_cli(["check", *NOW, "--format", "json", *args], cwd=repo)
    assert rc in (0, 1) and err == "", err
    return {(f["code"], f["file"]) for f in json.loads(out)["findings"]}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("needs git")
    repo = tmp_path / "repo"
    shutil.copytree(REPO / "examples" / "good", repo)
    (repo / "proposals" / "2027-q1-serving.yaml").unlink()
    search = repo / "workloads" / "search.yaml"
    head, first, rest = search.read_text().partition("apiVersion:")
    body, sep, others = rest.partition("---\n")
    assert "name: embeddings-search" in body and "pool: serving" in body
    (repo / "workloads" / "embeddings.yaml").write_text(first + body)
    search.write_text(head + others)
    (repo / "clusters" / "search-east.yaml").write_text(SEARCH_EAST)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    assert ("PL102", "clusters/prod-east.yaml") not in _findings(repo, ".")
    moved = repo / "workloads" / "embeddings.yaml"
    moved.write_text(moved.read_text().replace("cluster: prod-east", "cluster: search-east", 1)
                     .replace("pool: serving", "pool: embed", 1))
    return repo


def test_the_hook_judges_the_pool_a_staged_workload_left(repo: Path) -> None:
    whole = _findings(repo, ".")
    left = {f for f in whole if f[1] == "clusters/prod-east.yaml"}
    assert ("PL102", "clusters/prod-east.yaml") in left, whole  # the pool it left has capacity for the demand gone
    _git(repo, "add", "-A")
    assert left <= _findings(repo, "--changed-files", "workloads/embeddings.yaml")


def test_the_diff_gate_judges_the_pool_a_workload_left(repo: Path) -> None:
    whole = _findings(repo, ".")
    left = {f for f in whole if f[1] == "clusters/prod-east.yaml"}
    assert ("PL102", "clusters/prod-east.yaml") in left
    _git(repo, "commit", "-q", "-am", "move")
    assert left <= _findings(repo, "--diff", "HEAD~1")


def test_without_git_history_the_pool_it_joined_is_still_judged(repo: Path) -> None:
    shutil.rmtree(repo / ".git")
    joined = _findings(repo, "--changed-files", "workloads/embeddings.yaml")
    # nothing says where it was: the pool it joined is judged, the one it left is not
    assert ("PL102", "clusters/prod-east.yaml") not in joined


def test_a_workload_moved_to_another_kueue_queue_reaches_the_queue_it_left(tmp_path: Path) -> None:
    """The same through Kueue: the LocalQueue it left leads to a ClusterQueue that is now idle (PL110)."""
    if shutil.which("git") is None:
        pytest.skip("needs git")
    repo = tmp_path / "kueue"
    shutil.copytree(REPO / "examples" / "kueue", repo)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    workload = repo / "workloads" / "product-ai.yaml"
    text = workload.read_text()
    old = "queue: {scheduler: kueue, name: product-ai/serving}"
    assert text.count(old) == 1
    workload.write_text(text.replace(old, "queue: {scheduler: kueue, name: research/batch}"))
    whole = _findings(repo, ".")
    assert ("PL110", "kueue/cluster-queues.yaml") in whole  # the serving ClusterQueue lost its only workload
    _git(repo, "add", "-A")
    assert _findings(repo, "--changed-files", "workloads/product-ai.yaml") == whole
