"""Helpers shared by the Kueue and Volcano readers."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, TypeVar

from policylint.finding import Finding
from policylint.model.load import Document, DocPath
from policylint.model import Cluster, Model, Pool
from policylint.model.schedulers.quantity import gpu_count
from policylint.model.specs import PoolQueueSpec, PoolSpec

_Number = TypeVar("_Number", int, float)

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


def uncounted_gpus(doc: Document, owner: str, resource: str, path: DocPath, gpu_resources: tuple[str, ...]) -> Finding:
    """PL905: ``owner`` holds a quota of ``resource``, which looks like a GPU but is not counted as one."""
    return doc.finding(
        "PL905",
        f"{owner} holds a quota of '{resource}', which looks like a GPU (or a slice of one) but is not counted:"
        f" policylint counts {', '.join(gpu_resources)}, so this capacity is judged by no rule",
        path,
        hint=f"add '{resource}' to gpu-resources in .policylint.yaml (each unit is then counted as one GPU), or"
        " suppress this finding with the reason the resource is not GPU capacity",
    )


def gpus(doc: Document, path: DocPath, value: Any, findings: list[Finding]) -> int | None:
    """A GPU quantity, or None with a finding at ``path`` when it is not a quantity."""
    try:
        return gpu_count(value)
    except ValueError as exc:
        findings.append(
            doc.finding(
                "PL010",
                f"{exc}",
                path,
                hint="write a Kubernetes quantity: a whole number of GPUs such as 8",
            )
        )
        return None


def declared_overflow(doc: Document) -> str:
    """``reject`` when the queue carries the overflow annotation saying so; else ``queue`` (what the scheduler does)."""
    return "reject" if str(annotations_of(doc).get(ANNOTATION_OVERFLOW, "")).strip() == "reject" else "queue"


def queue_limits(doc: Document) -> PoolQueueSpec:
    """Queue limits declared by annotation (Kueue and Volcano queues have no such fields)."""
    notes = annotations_of(doc)
    out: PoolQueueSpec = {}
    depth = _annotated_limit(notes, ANNOTATION_MAX_DEPTH, int)
    if depth is not None:
        out["maxDepth"] = depth
    wait = _annotated_limit(notes, ANNOTATION_MAX_WAIT, float)
    if wait is not None:
        out["maxWaitSeconds"] = wait
    return out


def _annotated_limit(notes: dict[str, Any], key: str, kind: Callable[[str], _Number]) -> _Number | None:
    """The limit annotation ``key`` read with ``kind``; None when absent or saying nothing usable."""
    if key not in notes:
        return None
    try:
        value = kind(str(notes[key]))
    except ValueError:
        return None
    if math.isfinite(value) and 0 <= value <= 1e15:  # "nan", "inf" and absurd limits say nothing
        return value
    return None


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


@functools.cache
def _pool_validator() -> Any:
    """The Cluster pool schema, for pools built from scheduler manifests.

    A manifest cannot say two things a Cluster pool must: which classes the
    queue serves (they come from the workloads placed in it, so ``serves`` may
    still be empty) and the GPU's model and memory (node labels that may be
    absent). Everything else - names, whole GPU counts, the elastic kind, the
    overflow policy, queue limits - must read as a Cluster pool's would.
    """
    import copy

    import jsonschema

    from policylint.resources import load_schema

    schema = copy.deepcopy(load_schema("Cluster")["$defs"]["pool"])
    schema["required"] = ["name", "reservedGpus", "elastic", "serves", "overflow", "queue", "scheduling"]
    schema["properties"]["serves"].pop("minItems", None)
    schema["properties"]["gpu"]["required"] = []
    return jsonschema.Draft202012Validator(schema)


def scheduler_pool(
    name: str,
    cluster: Cluster,
    spec: PoolSpec,
    doc: Document,
    doc_path: DocPath,
    origin: str,
    places: dict[str, DocPath],
    findings: list[Finding],
) -> Pool | None:
    """A pool built from a scheduler manifest, or None with findings when its spec is not a valid pool.

    The spec is validated like a Cluster pool (see :func:`_pool_validator`), so a
    queue the readers cannot turn into a pool (a name no pool may have, a
    negative quota) is reported on the manifest instead of reaching the rules.
    """
    from policylint.model import cluster_pool_places
    from policylint.model.validate import error_message

    errors = sorted(_pool_validator().iter_errors(spec), key=lambda e: [str(p) for p in e.absolute_path])
    if not errors:
        return Pool(name, cluster, spec, doc, doc_path, origin=origin, places=places)
    where = {**cluster_pool_places(doc_path, spec), **places}
    for error in errors:
        field_path = [str(p) for p in error.absolute_path]
        place = {"reservedGpus": "reserved", "elastic": "elastic", "name": "name", "gpu": "gpu"}.get(
            field_path[0] if field_path else "name", "name"
        )
        findings.append(
            doc.finding(
                "PL010",
                f"{doc.kind} '{doc.name}' does not make a valid pool '{name}': "
                f"{'.'.join(field_path) or 'pool'}: {error_message(error)}",
                where[place],
                hint="policylint reads this queue as a pool; see docs/schedulers.md for how its fields map",
            )
        )
    return None


def new_cluster(name: str, doc: Document, backing: tuple[str, str, str]) -> Cluster:
    """A synthetic cluster shown as ``name``, identified by ``backing`` (scheduler, kind, name)."""
    return Cluster(name=name, doc=doc, spec={}, backing=backing)
