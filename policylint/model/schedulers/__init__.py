"""Scheduler manifests (Kueue, Volcano) as pools of the repository model.

Hooks called by the pipeline:

* :func:`attach` - read scheduler documents, report what the schedulers' own
  validation would reject (PL901-PL903), and prepare one pool per GPU queue;
* :func:`place` - link a Workload that names a scheduler queue (``spec.queue``);
* :func:`adopt_unused` - put the pools no workload uses into the model too: a
  queue is a pool like a ``Cluster`` pool, so GPU quota nobody measured is PL110;
* :class:`SchedulerPoolFacts` / :func:`pool_facts` - extra facts of scheduler-backed pools.

Each pool carries a policylint-shaped ``spec`` (``reservedGpus``, ``elastic``,
``serves``, ``overflow``, ``queue``, ``scheduling``, ``gpu``), so every framework
rule applies to it unchanged, and per-fact document paths, so its findings land
on the manifest's own lines (``nominalQuota:``, ``guarantee:``...).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from policylint.facts import Facts, fact
from policylint.model.schedulers.quantity import GPU_RESOURCES

if TYPE_CHECKING:
    from policylint.finding import Finding
    from policylint.model.load import Document
    from policylint.model import Model, Pool, Workload
    from policylint.model.load import Definitions

__all__ = ["GPU_RESOURCES", "SchedulerPoolFacts", "all_pools", "attach", "documents", "place", "pool_facts"]


@dataclass(kw_only=True, eq=False)
class SchedulerPoolFacts(Facts):
    """Facts every pool carries besides policylint's own: its scheduler queue (all None for a ``Cluster`` pool)."""

    scheduler: str | None = fact("kueue or volcano when the pool is a scheduler queue", default=None)
    scheduler_queue: str | None = fact("the Kueue ClusterQueue or Volcano Queue behind the pool", default=None)
    cohort: str | None = fact("Kueue cohort or Volcano parent queue the pool shares GPUs in", default=None)
    cohort_training_queues: list[str] | None = fact("other queues of the same cohort (parent queue) that admit training", default=None)
    reclaims_in_time: bool | None = fact(
        "true when borrowed GPUs come back by preemption: Kueue reclaimWithinCohort is Any or "
        "LowerPriority; Volcano: every training queue of the parent is reclaimable",
        default=None,
    )


def attach(
    documents: list[Document],
    model: Model,
    gpu_resources: tuple[str, ...] = GPU_RESOURCES,
    definitions: Definitions | None = None,
) -> list[Finding]:
    """Index scheduler documents, check their invariants and prepare their pools; return findings.

    ``definitions`` holds the names already defined: a second ClusterQueue (or
    Volcano Queue, LocalQueue, ResourceFlavor, Cohort) of one name is PL021.
    """
    from policylint.model.schedulers import kueue, volcano

    findings: list[Finding] = []
    taken: set[str] = set()
    k_index, more = kueue.read(documents, model, gpu_resources, taken, definitions)
    findings += more
    v_index, more = volcano.read(documents, model, gpu_resources, taken, definitions)
    model.schedulers["kueue"] = k_index
    model.schedulers["volcano"] = v_index
    return findings + more


def place(workload: Workload, model: Model) -> list[Finding] | None:
    """Link a workload admitted through a scheduler queue; None when it names none."""
    queue = workload.spec.get("queue")
    if not isinstance(queue, dict):
        return None
    from policylint.model.schedulers import kueue, volcano

    name = str(queue.get("name", ""))
    if queue.get("scheduler") == "kueue":
        return kueue.place(workload, name, model.schedulers.get("kueue"), model)
    if queue.get("scheduler") == "volcano":
        return volcano.place(workload, name, model.schedulers.get("volcano"), model)
    return None


def queue_pools(model: Model) -> dict[tuple[str, str], Pool]:
    """The pool each scheduler queue a workload may name admits it to, by the placement the workload
    writes: a Kueue LocalQueue (``("queue:kueue", name)``) by its ``namespace/name`` and by its bare
    name where that is unique, as :func:`kueue.admission` reads them; a Volcano Queue
    (``("queue:volcano", name)``) by its name. A queue leading to no GPU pool has no entry.
    """
    from policylint.model.schedulers.kueue import admission

    out: dict[tuple[str, str], Pool] = {}
    index = model.schedulers.get("kueue")
    local = getattr(index, "local_queues", None) or {}
    bare: dict[str, int] = {}
    for key in local:
        short = key.split("/", 1)[-1]
        bare[short] = bare.get(short, 0) + 1
    for name in sorted({*local, *(short for short, n in bare.items() if n == 1)}):
        pool = admission(index, name).pool
        if pool is not None:
            out[("queue:kueue", name)] = pool
    volcano = model.schedulers.get("volcano")
    for name, queue_pool in sorted((getattr(volcano, "pools", None) or {}).items()):
        out[("queue:volcano", name)] = queue_pool
    return out


def all_pools(model: Model) -> list[Pool]:
    """Every GPU pool the scheduler manifests define, used by a workload or not, in a stable order."""
    found: list[Pool] = []
    kueue_index = model.schedulers.get("kueue")
    if kueue_index is not None:
        found += [p for queue in sorted(kueue_index.pools) for p in kueue_index.pools[queue]]
    volcano_index = model.schedulers.get("volcano")
    if volcano_index is not None:
        found += [volcano_index.pools[q] for q in sorted(volcano_index.pools)]
    return found


def documents(model: Model) -> list[Document]:
    """Every document the scheduler indexes read, index by index as :func:`attach` filled them.

    Kueue ResourceFlavors, ClusterQueues, LocalQueues and Cohorts, then Volcano
    Queues: the first definition of each name, each kind in reading order.
    """
    return [doc for index in model.schedulers.values() for doc in index.documents()]


def adopt_unused(model: Model) -> None:
    """Put every pool the scheduler manifests define into the model, used by a workload or not.

    A queue is a pool whatever its source: like a ``Cluster`` pool, it is in the
    model from its definition on, and the rules judge it from the same facts. A
    queue with GPU quota and no measured workload is capacity nobody measured
    (PL110), exactly as a ``Cluster`` pool with no workload is.
    """
    from policylint.model.schedulers.common import adopt

    for pool in all_pools(model):
        adopt(pool, model)


def pool_facts(pool: Pool) -> SchedulerPoolFacts:
    """Scheduler-specific facts of one pool (all None when no scheduler queue backs it)."""
    info = pool.scheduler
    if not info:
        return SchedulerPoolFacts()
    cohort = info.get("cohort")
    siblings = [
        p
        for p in pool.cluster.pools.values()
        if p is not pool and p.scheduler and cohort is not None and p.scheduler.get("cohort") == cohort
    ]
    training = [p for p in siblings if any(w.cls == "training" for w in p.workloads)]
    if info["scheduler"] == "volcano":
        # Training queues lend their idle GPUs; only reclaimable ones give them back.
        in_time = all(p.scheduler.get("reclaimable", True) for p in training)
    else:
        in_time = bool(info.get("reclaims_in_time"))
    return SchedulerPoolFacts(
        scheduler=info["scheduler"],
        scheduler_queue=info["queue"],
        cohort=cohort,
        cohort_training_queues=sorted(str(p.scheduler["queue"]) for p in training),
        reclaims_in_time=in_time,
    )
