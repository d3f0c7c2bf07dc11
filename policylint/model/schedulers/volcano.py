"""Volcano (``scheduling.volcano.sh/v1beta1``, ``batch.volcano.sh/v1alpha1``) manifests as pools.

Mapping (documented in docs/schedulers.md):

* every leaf Queue (no other queue names it as ``parent``) with GPUs in its
  capability, deserved or guarantee is one pool, named after the queue;
* reserved GPUs = ``guarantee.resource``; elastic GPUs (kind ``borrow``) =
  ``capability`` above the guarantee (``deserved`` when no GPU capability is set);
* the synthetic cluster is the parent queue (``root`` for top-level queues);
* PodGroups and Jobs are judged for gang size: a gang smaller than the job is PL903.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from policylint.finding import Finding
from policylint.model.load import Definitions, Document, DocPath
from policylint.model import Cluster, Model, Pool, Workload
from policylint.model.schedulers.common import (
    adopt,
    declared_overflow,
    gpus,
    mapping,
    new_cluster,
    queue_limits,
    scheduler_pool,
    sequence,
    uncounted_gpus,
    unique_cluster_name,
)
from policylint.model.schedulers.quantity import looks_like_gpu
from policylint.model.schedulers.quantity import whole_count
from policylint.model.specs import PoolSpec

SCHEDULING = "scheduling.volcano.sh/"
BATCH = "batch.volcano.sh/"


@dataclass
class VolcanoIndex:
    queues: dict[str, Document] = field(default_factory=dict)
    pools: dict[str, Pool] = field(default_factory=dict)

    def documents(self) -> list[Document]:
        """The documents read: the Queues (first definitions; PodGroups and Jobs are checked, not kept)."""
        return list(self.queues.values())


def _gpu_in(resources: dict[str, Any], gpu_resources: tuple[str, ...]) -> str | None:
    return next((r for r in gpu_resources if r in resources), None)


def read(
    documents: list[Document],
    model: Model,
    gpu_resources: tuple[str, ...],
    taken: set[str],
    definitions: Definitions | None = None,
) -> tuple[VolcanoIndex, list[Finding]]:
    """Index the Volcano documents, build one pool per leaf GPU queue, check gang sizes.

    A Queue is read from its first definition; a second Queue of the same name
    is PL021 through ``definitions``.
    """
    index = VolcanoIndex()
    findings: list[Finding] = []
    definitions = definitions or Definitions(findings)
    jobs: dict[str, Document] = {}
    groups: list[Document] = []
    for doc in documents:
        api = doc.api_version or ""
        if not doc.name:
            continue
        if api.startswith(SCHEDULING) and doc.kind == "Queue":
            if definitions.claim("Queue", doc.name, doc):
                index.queues[doc.name] = doc
        elif api.startswith(SCHEDULING) and doc.kind == "PodGroup":
            groups.append(doc)
        elif api.startswith(BATCH) and doc.kind == "Job":
            jobs.setdefault(f"{_namespace(doc)}/{doc.name}", doc)
    parents = {str(mapping(d.data.get("spec")).get("parent")) for d in index.queues.values()}
    #: each queue's children, by name (``root`` for top-level queues): read once for every pool's parents
    children: dict[str, list[Document]] = {}
    for _, d in sorted(index.queues.items()):
        children.setdefault(str(mapping(d.data.get("spec")).get("parent") or "root"), []).append(d)
    clusters: dict[str, Cluster] = {}
    for name, doc in index.queues.items():
        parent = mapping(doc.data.get("spec")).get("parent")
        if parent not in (None, "", "root") and str(parent) not in index.queues:
            # Volcano refuses a queue under a parent it does not know, and a parent defined elsewhere
            # caps this queue by a capability nothing here judges (red team, 2026-12-06)
            known = ", ".join(sorted(index.queues)) or "none"
            findings.append(doc.finding(
                "PL020", f"Volcano Queue '{name}' names parent queue '{parent}', which no checked file defines"
                f" (queues checked: {known})", ("spec", "parent"),
                hint="check the parent Queue manifest in beside its children, or remove spec.parent to place the queue under root"))
        if name in parents or name == "root":
            continue  # an inner queue of the hierarchy: its children are the pools
        pool = _pool(name, doc, index, clusters, model, gpu_resources, taken, findings, children)
        if pool is not None:
            index.pools[name] = pool
            closed = _closed(name, index)
            if closed is not None:
                findings.append(_closed_finding(doc, name, closed))
    job_sizes: dict[str, tuple[int, int]] = {}
    for key, job in jobs.items():
        size = _job_size(job, gpu_resources, findings)
        job_sizes[key] = size
        replicas, gpu_total = size
        spec = mapping(job.data.get("spec"))
        if "minAvailable" in spec:
            min_available = _count(job, ("spec", "minAvailable"), spec["minAvailable"], "minAvailable", findings)
            if min_available is not None and gpu_total > 1 and replicas > 1 and min_available < replicas:
                findings.append(_gang_finding(job, ("spec", "minAvailable"), "minAvailable", min_available, replicas, gpu_total))
        else:
            # Without a job-level minAvailable, Volcano takes the gang from the tasks' own minAvailable
            # where they set one (red team, 2026-12-06: tasks[0].minAvailable: 1 on 4 x 8 GPUs passed)
            found = _tasks_min_available(job, findings)
            if found is not None:
                min_available, where = found
                if gpu_total > 1 and replicas > 1 and min_available < replicas:
                    findings.append(_gang_finding(job, where, "tasks[].minAvailable", min_available, replicas, gpu_total))
    for pg in groups:
        linked = job_sizes.get(f"{_namespace(pg)}/{pg.name}")
        spec = mapping(pg.data.get("spec"))
        if linked is None or "minMember" not in spec:
            continue
        replicas, gpu_total = linked
        min_member = _count(pg, ("spec", "minMember"), spec["minMember"], "minMember", findings)
        if min_member is None:
            continue
        if gpu_total > 1 and replicas > 1 and min_member < replicas:
            findings.append(_gang_finding(pg, ("spec", "minMember"), "minMember", min_member, replicas, gpu_total))
    return index, findings


#: the states of a Volcano Queue in which it takes no new PodGroup
CLOSED_STATES = ("Closed", "Closing")


def _closed(name: str, index: VolcanoIndex) -> tuple[str, str] | None:
    """(the queue, its state) when ``name`` or a queue above it is closed, as its manifest's status says."""
    seen: set[str] = set()
    while name in index.queues and name not in seen:
        seen.add(name)
        doc = index.queues[name]
        state = mapping(doc.data.get("status")).get("state")
        if isinstance(state, str) and state in CLOSED_STATES:
            return name, state
        name = str(mapping(doc.data.get("spec")).get("parent") or "root")
    return None


def _closed_finding(doc: Document, name: str, closed: tuple[str, str]) -> Finding:
    queue, state = closed
    own = queue == name
    where = "its status.state" if own else f"its parent queue '{queue}'"
    return doc.finding(
        "PL907",
        f"Volcano Queue '{name}' is counted as a pool, but {where} is {state}: Volcano admits no new"
        " PodGroup to it, so its GPUs serve none of the workloads placed there",
        ("status", "state") if own else ("spec", "parent"),
        hint=f"open the queue (vcctl queue operate --action open --name {queue}) or move its workloads and GPUs to an open one",
    )


def _namespace(doc: Document) -> str:
    return str(mapping(doc.data.get("metadata")).get("namespace") or "default")


def _count(doc: Document, path: DocPath, value: Any, what: str, findings: list[Finding]) -> int | None:
    """A whole number of pods, or None with a finding at ``path`` (``.inf``, ``.nan``, text)."""
    try:
        return whole_count(value, what)
    except ValueError as exc:
        findings.append(doc.finding("PL010", str(exc), path, hint=f"write {what} as a whole number such as 4"))
        return None


def _job_size(job: Document, gpu_resources: tuple[str, ...], findings: list[Finding]) -> tuple[int, int]:
    """(pods, GPUs) a Volcano Job asks for across its tasks; unreadable numbers become findings."""
    replicas = gpu_total = 0
    for i, task in enumerate(sequence(mapping(job.data.get("spec")).get("tasks"))):
        task = mapping(task)
        tpath: DocPath = ("spec", "tasks", i)
        n = _count(job, (*tpath, "replicas"), task["replicas"], "replicas", findings) if "replicas" in task else 1
        if n is None:
            n = 1
        per_pod = 0
        pod = mapping(mapping(task.get("template")).get("spec"))
        for c, container in enumerate(sequence(pod.get("containers"))):
            res = mapping(mapping(container).get("resources"))
            section = "limits" if mapping(res.get("limits")) else "requests"
            amounts = mapping(res.get(section))
            for name in gpu_resources:
                if name in amounts:
                    path = (*tpath, "template", "spec", "containers", c, "resources", section, name)
                    per_pod += gpus(job, path, amounts[name], findings) or 0
        replicas += n
        gpu_total += n * per_pod
    return replicas, gpu_total


def _tasks_min_available(job: Document, findings: list[Finding]) -> tuple[int, DocPath] | None:
    """(the gang the tasks' minAvailable make - each task's, or its replicas where it sets none, summed;
    the first task minAvailable's place), or None when no task sets one."""
    total, first = 0, None
    for i, task in enumerate(sequence(mapping(job.data.get("spec")).get("tasks"))):
        task = mapping(task)
        key = "minAvailable" if "minAvailable" in task else "replicas" if "replicas" in task else None
        n = _count(job, ("spec", "tasks", i, key), task[key], key, findings) if key else 1
        if key == "minAvailable" and first is None:
            first = ("spec", "tasks", i, "minAvailable")
        total += 1 if n is None else n
    return (total, first) if first is not None else None


def _gang_finding(doc: Document, path: DocPath, field_name: str, value: int, replicas: int, gpu_total: int) -> Finding:
    return doc.finding(
        "PL903",
        f"{doc.kind} '{doc.name}' sets {field_name}: {value} for a job of {replicas} pods ({gpu_total} GPUs): "
        "the scheduler may start part of the job, which then holds its GPUs while waiting for the rest",
        path,
        hint=f"set {field_name}: {replicas} so the job is admitted all at once",
    )


def _pool(
    name: str,
    doc: Document,
    index: VolcanoIndex,
    clusters: dict[str, Cluster],
    model: Model,
    gpu_resources: tuple[str, ...],
    taken: set[str],
    findings: list[Finding],
    children: dict[str, list[Document]],
) -> Pool | None:
    spec = mapping(doc.data.get("spec"))
    capability = mapping(spec.get("capability"))
    deserved = mapping(spec.get("deserved"))
    guarantee = mapping(mapping(spec.get("guarantee")).get("resource"))
    cap_key = _gpu_in(capability, gpu_resources)
    des_key = _gpu_in(deserved, gpu_resources)
    gua_key = _gpu_in(guarantee, gpu_resources)
    for where, resources in ((("spec", "capability"), capability), (("spec", "deserved"), deserved),
                             (("spec", "guarantee", "resource"), guarantee)):
        for key in resources:
            if key not in gpu_resources and looks_like_gpu(key):
                findings.append(uncounted_gpus(doc, f"Volcano Queue '{name}'", str(key), (*where, key), gpu_resources))
    if not (cap_key or des_key or gua_key):
        return None
    reserved = gpus(doc, ("spec", "guarantee", "resource", gua_key), guarantee[gua_key], findings) if gua_key else 0
    if reserved is None:
        return None
    if cap_key:
        top = gpus(doc, ("spec", "capability", cap_key), capability[cap_key], findings)
        top_path: DocPath = ("spec", "capability", cap_key)
    elif des_key:
        # No hard cap: the queue may grow into idle GPUs policylint cannot see; count its deserved share.
        top = gpus(doc, ("spec", "deserved", des_key), deserved[des_key], findings)
        top_path = ("spec", "deserved", des_key)
    else:
        top, top_path = reserved, ("spec", "guarantee", "resource", str(gua_key))
    if top is None:
        return None
    parent = str(spec.get("parent") or "root")
    if parent not in clusters:
        home = index.queues.get(parent, doc)
        clusters[parent] = new_cluster(unique_cluster_name(parent, "volcano", model, taken), home, ("volcano", "Queue", parent))
    reclaimable = spec.get("reclaimable") is not False
    pool_spec: PoolSpec = {
        "name": name,
        "reservedGpus": reserved,
        "elastic": {"maxGpus": max(0, top - reserved), "kind": "borrow"},
        "serves": [],
        "overflow": declared_overflow(doc),  # pending PodGroups wait; "reject" is a declared intent
        "queue": queue_limits(doc),
        # Volcano admits a PodGroup only when minMember pods fit: gang by design.
        # PodGroups and Jobs whose gang is smaller than the job are PL903.
        "scheduling": {"gang": True, "preemption": reclaimable},
    }
    meta: DocPath = ("metadata", "name")
    reserved_path: DocPath = ("spec", "guarantee", "resource", gua_key) if gua_key else ("spec", "guarantee") if "guarantee" in spec else meta
    annotated = "annotations" in mapping(doc.data.get("metadata"))
    places: dict[str, DocPath] = {
        "name": meta,
        "reserved": reserved_path,
        "demand": reserved_path,
        "elastic": top_path,
        "capacity": top_path,
        "overflow": meta,
        "queue": ("metadata", "annotations") if annotated else meta,
        "gang": meta,
        "preemption": ("spec", "reclaimable") if "reclaimable" in spec else meta,
        "serves": meta,
        "gpu": meta,
        "reclaim": ("spec", "parent") if "parent" in spec else meta,
    }
    pool = scheduler_pool(name, clusters[parent], pool_spec, doc, ("spec",), "volcano", places, findings)
    if pool is None:
        return None
    pool.scheduler = {
        "scheduler": "volcano",
        "queue": name,
        "flavor": None,
        "cohort": parent,
        "reclaimable": reclaimable,
        "weight": spec.get("weight"),
        "parent_only": _parent_only(name, parent, index, children, gpu_resources, reserved, top if cap_key else None),
    }
    return pool


def _limits(doc: Document, gpu_resources: tuple[str, ...]) -> tuple[int, int | None]:
    """(guaranteed GPUs, GPU capability or None without one) of a Queue, read quietly (its own reading reports)."""
    spec = mapping(doc.data.get("spec"))
    quiet: list[Finding] = []
    guarantee = mapping(mapping(spec.get("guarantee")).get("resource"))
    capability = mapping(spec.get("capability"))
    gua_key, cap_key = _gpu_in(guarantee, gpu_resources), _gpu_in(capability, gpu_resources)
    held = gpus(doc, ("spec", "guarantee", "resource", gua_key), guarantee[gua_key], quiet) if gua_key else 0
    cap = gpus(doc, ("spec", "capability", cap_key), capability[cap_key], quiet) if cap_key else None
    return held or 0, cap


def _parent_only(name: str, parent: str, index: VolcanoIndex, children: dict[str, list[Document]],
                 gpu_resources: tuple[str, ...], reserved: int, capability: int | None) -> int:
    """GPUs of its parent Queues' guarantees that no queue but ``name`` may use: its own in all but name.

    A parent's guarantee beyond its children's is held for its subtree. Walking up from the queue, at each
    ancestor the spare guarantee is what the other queues met so far - the siblings of every queue on the way
    up, each up to its capability above its own guarantee (one without a GPU capability: all) - cannot take;
    what reaches the queue is at most each one's capability above its guarantee on the way (its own first).
    Red team, 2026-12-07, rounds 10 and 11: training's guarantee moved up into its parent, or its grandparent,
    then bought back as a "shortfall" (+19). ``children`` holds each queue's children, by name.
    """
    total, others = 0, 0  # spare guarantee found so far, what the other queues met so far may take
    below, room = name, None if capability is None else max(0, capability - reserved)
    seen = {name}
    while parent != "root" and parent in index.queues and parent not in seen:
        seen.add(parent)
        home = index.queues[parent]
        held, cap = _limits(home, gpu_resources)
        spare = held
        for doc in children.get(parent, []):
            guaranteed, _ = _limits(doc, gpu_resources)
            spare -= guaranteed
            if str(doc.name) != below:
                reach = _can_hold(doc, index, children, gpu_resources, set(seen))
                if reach is None:
                    return total  # a queue without a cap may take everything from here up
                others += max(0, reach - guaranteed)
        total += max(0, spare - others)
        if room is not None:
            total = min(total, room)
        if cap is not None:  # what flows down through this queue is capped by it too
            up = max(0, cap - held)
            room = up if room is None else min(room, up + total)
        below, parent = parent, str(mapping(home.data.get("spec")).get("parent") or "root")
    return max(0, total)


def _can_hold(doc: Document, index: VolcanoIndex, children: dict[str, list[Document]],
              gpu_resources: tuple[str, ...], seen: set[str]) -> int | None:
    """The GPUs the Queue ``doc`` and its subtree can run at most (None: no limit): its capability, and for a
    queue with children (jobs run in leaf queues) no more than they can hold together.

    Red team, 2026-12-07, round 17: a sibling "tools" queue with a capability of 19 whose only child was
    capped at 0 GPUs was read as able to take 19 of the parent's spare guarantee, so training's 19 moved up
    into the parent looked shared, and were bought back as a shortfall.
    """
    name = str(doc.name)
    _, cap = _limits(doc, gpu_resources)
    kids = children.get(name, [])
    if not kids or name in seen:
        return cap
    seen.add(name)
    held = 0
    for kid in kids:
        reach = _can_hold(kid, index, children, gpu_resources, seen)
        if reach is None:
            return cap
        held += reach
    return held if cap is None else min(cap, held)


def place(w: Workload, queue_name: str, index: VolcanoIndex | None, model: Model) -> list[Finding]:
    where: DocPath = ("spec", "queue", "name")
    queues = index.queues if index else {}
    if queue_name not in queues or index is None:
        known = ", ".join(sorted(queues)) or "none in the checked files"
        return [w.doc.finding("PL020", f"unknown Volcano Queue '{queue_name}' (known: {known})", where,
                              hint="check the Queue manifest in with the workloads")]
    pool = index.pools.get(queue_name)
    if pool is None:
        return [w.doc.finding("PL020",
                              f"Volcano Queue '{queue_name}' has no GPU capability, deserved or guarantee (or is a parent queue)",
                              where, hint="admit GPU work through a leaf queue that sets GPU quantities")]
    adopt(pool, model)
    w.pool = pool
    pool.workloads.append(w)
    if w.cls and w.cls not in pool.spec["serves"]:
        pool.spec["serves"] = sorted([*pool.spec["serves"], w.cls])
    return []
