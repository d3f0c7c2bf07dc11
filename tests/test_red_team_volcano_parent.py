"""A Volcano parent queue's guarantee above its children's is reserved capacity (red team round 22, 2026-12-07).

The game: a Volcano twin of ``examples/kueue`` (research, a parent queue guaranteeing 120 GPUs, over
training 104/128 and batch 16/24; serving 22/24) with research's guarantee raised 120 -> 152. Jobs run
in leaf queues and every pool is sized from its own guarantee, so the 32 guaranteed GPUs above what the
children are guaranteed were reserved capacity no workload's baseline backs: no sizing rule saw them, and
PL950 under ``--diff`` compared only the leaves' guarantees. ``check``, the hook and ``--diff`` passed;
with the children's capabilities raised as well (research 174, training 150) it was +54. Now PL976 reads
a parent guaranteed more than its children together as a contradiction, at every level above a pool.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import EXAMPLES, git, replace_once, run_cli

QUEUES = "volcano/queues.yaml"

VOLCANO = """# Volcano queues: each leaf guarantees the baseline band of what it admits; research guarantees
# exactly what its two children guarantee.
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: research
spec:
  reclaimable: true
  guarantee:
    resource:
      nvidia.com/gpu: 120
  capability:
    nvidia.com/gpu: 152
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: training
  annotations:
    policylint.dev/queue-max-depth: "60"
    policylint.dev/queue-max-wait-seconds: "21600"
spec:
  parent: research
  reclaimable: true
  guarantee:
    resource:
      nvidia.com/gpu: 104
  capability:
    nvidia.com/gpu: 128
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: batch
  annotations:
    policylint.dev/queue-max-depth: "400"
    policylint.dev/queue-max-wait-seconds: "7200"
spec:
  parent: research
  reclaimable: true
  guarantee:
    resource:
      nvidia.com/gpu: 16
  capability:
    nvidia.com/gpu: 24
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: serving
  annotations:
    policylint.dev/queue-max-depth: "4000"
    policylint.dev/queue-max-wait-seconds: "5"
spec:
  reclaimable: true
  guarantee:
    resource:
      nvidia.com/gpu: 22
  capability:
    nvidia.com/gpu: 24
"""

RESEARCH = "  name: research\nspec:\n  reclaimable: true\n  guarantee:\n    resource:\n      nvidia.com/gpu: 120\n"


def _twin(tmp_path: Path) -> Path:
    """The Volcano twin of ``examples/kueue`` (as the red team's mkvolcano.sh builds it), committed."""
    repo = Path(shutil.copytree(EXAMPLES / "kueue", tmp_path / "repo"))
    shutil.rmtree(repo / "kueue")
    moved = 0
    for path in sorted((repo / "workloads").glob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        for old, new in (("product-ai/serving", "serving"), ("research/training", "training"), ("research/batch", "batch")):
            old_ref, new_ref = f"queue: {{scheduler: kueue, name: {old}}}", f"queue: {{scheduler: volcano, name: {new}}}"
            moved += text.count(old_ref)
            text = text.replace(old_ref, new_ref)
        path.write_text(text, encoding="utf-8")
    assert moved >= 3
    (repo / "volcano").mkdir()
    (repo / QUEUES).write_text(VOLCANO, encoding="utf-8")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    return repo


def _raise(repo: Path, guarantee: int, research_cap: int = 152, training_cap: int = 128) -> None:
    path = repo / QUEUES
    replace_once(path, RESEARCH, RESEARCH.replace("120", str(guarantee)))
    if research_cap != 152:
        replace_once(path, "    nvidia.com/gpu: 152\n", f"    nvidia.com/gpu: {research_cap}\n")
    if training_cap != 128:
        replace_once(path, "    nvidia.com/gpu: 128\n", f"    nvidia.com/gpu: {training_cap}\n")


def _findings(repo: Path, *args: str) -> tuple[int, list[dict[str, object]]]:
    code, out, err = run_cli(["check", "--format", "json", *args], cwd=repo)
    assert err == "", err
    return code, json.loads(out)["findings"]


def _spare(found: list[dict[str, object]]) -> list[str]:
    return [str(f["message"]) for f in found if f["code"] == "PL976"]


def test_the_honest_twin_is_clean(tmp_path: Path) -> None:
    # research's guarantee is exactly its children's (104 + 16)
    assert _findings(_twin(tmp_path), ".") == (0, [])


def test_a_parent_guarantee_raised_above_its_childrens_fails_check_hook_and_diff(tmp_path: Path) -> None:
    repo = _twin(tmp_path)
    _raise(repo, 152)
    git(repo, "add", "-A")
    for args in ((".",), ("--changed-files", QUEUES)):
        code, found = _findings(repo, *args)
        spare = _spare(found)
        assert code == 1 and spare, (args, found)
        assert all("research is guaranteed 152 GPUs, but the queues under it only 120 together: 32 reserved GPUs"
                   in m for m in spare), spare
    git(repo, "commit", "-qm", "gamed")
    code, found = _findings(repo, "--diff", "HEAD~1")
    assert code == 1 and _spare(found), found


def test_the_raise_with_capabilities_raised_too_is_reported_in_full(tmp_path: Path) -> None:
    # +54: research 174/174, training's capability 150, within PL102's headroom
    repo = _twin(tmp_path)
    _raise(repo, 174, research_cap=174, training_cap=150)
    code, found = _findings(repo, ".")
    spare = _spare(found)
    assert code == 1 and spare, found
    assert any("only 120 together: 54 reserved GPUs no workload's baseline backs" in m for m in spare), spare


def test_a_grandparent_guaranteed_above_its_children_is_reported(tmp_path: Path) -> None:
    # the spare guarantee one level further up: org guarantees 152 over research's 120
    repo = _twin(tmp_path)
    path = repo / QUEUES
    org = RESEARCH.replace("research", "org").replace("120", "152")
    replace_once(path, RESEARCH, RESEARCH.replace("spec:\n", "spec:\n  parent: org\n"))
    path.write_text("apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata:\n" + org
                    + "  capability:\n    nvidia.com/gpu: 152\n---\n" + path.read_text(encoding="utf-8"), encoding="utf-8")
    code, found = _findings(repo, ".")
    spare = _spare(found)
    assert code == 1 and spare, found
    assert any("org is guaranteed 152 GPUs, but the queues under it only 120 together: 32 reserved GPUs" in m
               for m in spare), spare
    # ... and an org guaranteeing what research does is clean
    replace_once(path, org, org.replace("152", "120"))
    assert _findings(repo, ".") == (0, [])


def test_a_parent_without_a_guarantee_is_clean(tmp_path: Path) -> None:
    # a parent that only caps its subtree reserves nothing
    repo = _twin(tmp_path)
    replace_once(repo / QUEUES, RESEARCH, RESEARCH.replace("  guarantee:\n    resource:\n      nvidia.com/gpu: 120\n", ""))
    assert _findings(repo, ".") == (0, [])
