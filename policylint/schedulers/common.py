"""Helpers shared by the Kueue and Volcano readers."""

from __future__ import annotations

import math
from typing import Any

from policylint.finding import Finding
from policylint.load import Document, DocPath
from policylint.model import Cluster, Model, Pool
from policylint.schedulers.quantity import gpu_count

#: Annotations a ClusterQueue or Volcano Queue may carry to declare what the
#: scheduler itself cannot express (policylint reads them, the scheduler ignores them).
ANNOTATION_MAX_DEPTH = "policylint.dev/queue-max-depth"
ANNOTATION_MAX_WAIT = "policylint.dev/queue-max-wait-seconds"
ANNOTATION_ALL_OR_NOTHING = "policylint.dev/all-or-nothing"
#: The pool's declared overflow ("queue" or "reject"). Neither scheduler can reject
#: pending work, so the intent travels as an annotation (see docs/schedulers.md).
ANNOTATION_OVERFLOW = "policylint.dev/overflow"


def mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def sequence(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def annotations_of(doc: Document) -> dict[str, Any]:
    return mapping(mapping(doc.data.get("metadata")).get("annotations"))


def gpus(doc: Document, path: DocPath, value: Any, findings: list[Finding]) -> int | None:
    """A GPU quantity, or None with a finding at ``path`` when it is not a quantity."""
    try:
        return gpu_count(value)
    except ValueError as exc:
        findings.append(
            doc.finding(
                "PL010",
                "schema-violation",
                f"{exc}",
                path,
                hint="write a Kubernetes quantity: a whole number of GPUs such as 8",
            )
        )
        return None


def declared_overflow(doc: Document) -> str:
    """``reject`` when the queue carries the overflow annotation saying so; else ``queue`` (what the scheduler does)."""
    return "reject" if str(annotations_of(doc).get(ANNOTATION_OVERFLOW, "")).strip() == "reject" else "queue"


def queue_limits(doc: Document) -> dict[str, Any]:
    """Queue limits declared by annotation (Kueue and Volcano queues have no such fields)."""
    notes = annotations_of(doc)
    out: dict[str, Any] = {}
    for key, field_name, kind in (
        (ANNOTATION_MAX_DEPTH, "maxDepth", int),
        (ANNOTATION_MAX_WAIT, "maxWaitSeconds", float),
    ):
        if key in notes:
            try:
                value = kind(str(notes[key]))
            except ValueError:
                continue
            if math.isfinite(value) and 0 <= value <= 1e15:  # "nan", "inf" and absurd limits say nothing
                out[field_name] = value
    return out


def unique_cluster_name(wanted: str, prefix: str, model: Model, taken: set[str]) -> str:
    """``wanted``, or ``prefix-wanted`` when a policylint Cluster (or another scheduler) uses it."""
    name = wanted
    if name in model.clusters or name in taken:
        name = f"{prefix}-{wanted}"
    n = 2
    base = name
    while name in model.clusters or name in taken:
        name = f"{base}-{n}"
        n += 1
    taken.add(name)
    return name


def adopt(pool: Pool, model: Model) -> None:
    """Put a scheduler pool (and its synthetic cluster) into the model on first use."""
    cluster = pool.cluster
    model.clusters.setdefault(cluster.name, cluster)
    cluster.pools.setdefault(pool.name, pool)


def new_cluster(name: str, doc: Document) -> Cluster:
    return Cluster(name=name, doc=doc, spec={})
