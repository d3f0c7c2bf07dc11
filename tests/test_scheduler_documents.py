"""The scheduler indexes' documents and the Kueue LocalQueue lookup, each written once.

``schedulers.documents`` lists what the indexes read (the narrowed run's unmapped
files, the base revision's files); ``kueue.admission`` resolves a LocalQueue name
for placement and for the pool a moved workload left (``scope._queue_pool``).
"""

from __future__ import annotations

from pathlib import Path

from fixture_helpers import run

from policylint.engine.scope import _queue_pool
from policylint.model import Model, schedulers
from policylint.model.schedulers import kueue

MANIFESTS = """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: team-a, name: shared}
spec: {clusterQueue: gpus}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: a100}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: all}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: gpus}
spec:
  cohortName: all
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: a100
      resources:
      - {name: nvidia.com/gpu, nominalQuota: 8}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: team-b, name: shared}
spec: {clusterQueue: gpus}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: team-b, name: lost}
spec: {clusterQueue: nowhere}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: solo}
spec: {clusterQueue: gpus}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: research}
spec:
  guarantee: {resource: {nvidia.com/gpu: 4}}
  capability: {nvidia.com/gpu: 8}
"""


def _model(tmp_path: Path) -> Model:
    (tmp_path / "queues.yaml").write_text(MANIFESTS)
    model = run([tmp_path], tmp_path, rules=False).model
    assert model is not None
    return model


def test_documents_lists_each_index_in_order(tmp_path: Path) -> None:
    model = _model(tmp_path)
    listed = [(d.kind, d.name) for d in schedulers.documents(model)]
    assert listed == [
        ("ResourceFlavor", "a100"),
        ("ClusterQueue", "gpus"),
        ("LocalQueue", "shared"),
        ("LocalQueue", "shared"),
        ("LocalQueue", "lost"),
        ("LocalQueue", "solo"),
        ("Cohort", "all"),
        ("Queue", "research"),
    ]
    assert schedulers.documents(Model(root=tmp_path)) == []  # no scheduler read: nothing listed


def test_admission_resolves_a_local_queue(tmp_path: Path) -> None:
    model = _model(tmp_path)
    index = model.schedulers["kueue"]
    pool = index.pools["gpus"][0]
    found = kueue.admission(index, "team-a/shared")
    assert (found.key, found.cluster_queue, found.pool) == ("team-a/shared", "gpus", pool)
    assert kueue.admission(index, "solo").key == "default/solo"  # a bare name unique across namespaces
    assert kueue.admission(index, "solo").pool is pool
    ambiguous = kueue.admission(index, "shared")
    assert ambiguous.ambiguous == ("team-a/shared", "team-b/shared") and ambiguous.pool is None
    lost = kueue.admission(index, "lost")
    assert (lost.key, lost.cluster_queue, lost.pool) == ("team-b/lost", "nowhere", None)
    assert kueue.admission(index, "team-c/solo") == kueue.Admission(key="team-c/solo")
    assert kueue.admission(index, "missing") == kueue.Admission()
    assert kueue.admission(None, "team-a/shared") == kueue.Admission(key="team-a/shared")


def test_the_queue_a_workload_left_leads_to_the_same_pool(tmp_path: Path) -> None:
    model = _model(tmp_path)
    pool = model.schedulers["kueue"].pools["gpus"][0]
    assert _queue_pool(model, "kueue", "team-b/shared") is pool
    assert _queue_pool(model, "kueue", "solo") is pool
    assert _queue_pool(model, "kueue", "shared") is None  # ambiguous: no pool is known
    assert _queue_pool(model, "kueue", "team-b/lost") is None
    assert _queue_pool(model, "volcano", "research") is None  # only through a workload admitted there
