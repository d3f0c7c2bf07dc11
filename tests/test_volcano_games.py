"""Volcano queues: the red team's third round (2026-12-06), each a way past the gate that passed with exit 0.

Every case is a Volcano hierarchy whose capacity the mapping counted as more (or less)
than Volcano grants; each is now a PL976 contradiction (or PL903 for the gang), and the
sound version of the same hierarchy stays clean.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fixture_helpers import run


def _queue(name: str, *, parent: str | None = None, guarantee: int | None = None, capability: dict[str, int] | None = None,
           extra: str = "") -> str:
    spec = []
    if parent:
        spec.append(f"parent: {parent}")
    if guarantee is not None:
        spec.append(f"guarantee: {{resource: {{nvidia.com/gpu: {guarantee}}}}}")
    if capability is not None:
        spec.append("capability: {" + ", ".join(f"{k}: {v}" for k, v in capability.items()) + "}")
    if extra:
        spec.append(extra)
    return f"apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {{name: {name}}}\nspec: {{{', '.join(spec)}}}\n"


def _said(tmp_path: Path, *docs: str) -> list[str]:
    (tmp_path / "queues.yaml").write_text("---\n".join(docs), encoding="utf-8")
    result = run([tmp_path], tmp_path)
    return [f.message for f in result.findings if f.code in ("PL976", "PL903")]


SERVING = _queue("serving", parent="product", guarantee=22, capability={"nvidia.com/gpu": 24})


def test_the_sound_hierarchy_contradicts_nothing(tmp_path: Path) -> None:
    assert _said(tmp_path, _queue("product", capability={"nvidia.com/gpu": 30}), SERVING,
                 _queue("batch", parent="product", guarantee=4, capability={"nvidia.com/gpu": 6})) == []


@pytest.mark.parametrize(("case", "docs", "said"), [
    # a second GPU resource name: only the first key found was read
    ("two names", [_queue("product", capability={"nvidia.com/gpu": 64}),
                   _queue("serving", parent="product", guarantee=22,
                          capability={"nvidia.com/gpu": 24, "amd.com/gpu": 40})],
     "Queue serving holds GPU quota under 2 resource names (amd.com/gpu, nvidia.com/gpu)"),
    # a sibling with no GPU capability may take the parent's GPUs, judged by no pool
    ("uncapped sibling", [_queue("product", capability={"nvidia.com/gpu": 64}), SERVING,
                          _queue("spare", parent="product", capability={"cpu": 1000})],
     "a queue under product sets no GPU capability, so it may take up to 64 of product's GPUs"),
    # a grandparent's cap below the queue's guarantee: only the direct parent was looked at
    ("grandparent cap", [_queue("org", capability={"nvidia.com/gpu": 10}),
                         _queue("product", parent="org", capability={"nvidia.com/gpu": 30}), SERVING],
     "Queue serving is guaranteed 22 GPUs, but org, above its parent, caps its subtree at 10"),
    # the parent's cap less the other children's guarantees leaves less than the queue's capability
    ("squeezed", [_queue("product", capability={"nvidia.com/gpu": 30}), SERVING,
                  _queue("other", parent="product", guarantee=8, capability={"nvidia.com/gpu": 8})],
     "at most 22 are reachable, so 2 of its elastic GPUs can never be used"),
    # a cycle of parents
    ("cycle", [_queue("a", parent="b", capability={"nvidia.com/gpu": 64}),
               _queue("b", parent="a", capability={"nvidia.com/gpu": 64}),
               _queue("serving", parent="a", guarantee=22, capability={"nvidia.com/gpu": 24})],
     "the parents of Queue serving form a cycle (serving -> a -> b -> a)"),
])
def test_each_game_is_a_contradiction(tmp_path: Path, case: str, docs: list[str], said: str) -> None:
    found = _said(tmp_path, *docs)
    assert any(said in message for message in found), found


def test_a_tasks_min_available_is_the_gang(tmp_path: Path) -> None:
    job = """apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: llm-pretrain, namespace: research}
spec:
  queue: training
  tasks:
  - name: worker
    replicas: 4
    minAvailable: MIN
    template:
      spec:
        containers:
        - name: trainer
          resources:
            limits: {nvidia.com/gpu: 8}
"""
    training = _queue("training", guarantee=32, capability={"nvidia.com/gpu": 48})
    found = _said(tmp_path, training, job.replace("MIN", "1"))
    assert any("sets tasks[].minAvailable: 1 for a job of 4 pods (32 GPUs)" in m for m in found), found
    assert _said(tmp_path, training, job.replace("MIN", "4")) == []
    # without any minAvailable the job is one gang of its replicas: nothing to say
    assert _said(tmp_path, training, job.replace("    minAvailable: MIN\n", "")) == []
