"""The repository model: declared workloads, clusters, pools and proposals.

Built by :mod:`policylint.model.resolve` from validated documents. Every object keeps
its :class:`~policylint.model.load.Document` and the document path of its own block,
so later steps can place findings on the right line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from policylint.finding import Subject, cluster_subject
from policylint.model.load import Document, DocPath
from policylint.model.specs import (
    ClusterSpec,
    ElasticSpec,
    MetadataSpec,
    NoBlock,
    PoolSpec,
    ProposalSpec,
    ReferenceSpec,
    WorkloadSpec,
)


@dataclass
class MeasurementRef:
    """A measurement file referenced by a document, resolved and checked."""

    owner: str
    role: str  # "concurrency", "vram", "durations"
    doc: Document
    doc_path: DocPath
    spec: ReferenceSpec
    path: Path | None  # None when the reference was rejected
    display: str


def whole_number(value: Any) -> int | None:
    """A count the documents give (GPUs): an int, or a float with no fraction (the schema's integer
    admits ``4.0``); None for anything else (a bool, a text, a fraction, nothing).

    The one reading of such a count where a missing or odd value must not count: ``4.0`` read as
    "not an int" made a buffer of 4 GPUs count as none, and a reserved count at a ``--diff`` base unknown.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not value.is_integer():
        return None
    return int(value)


@dataclass
class Workload:
    name: str
    doc: Document
    spec: WorkloadSpec
    metadata: MetadataSpec
    pool: Pool | None = None
    measurements: dict[str, MeasurementRef] = field(default_factory=dict)

    @property
    def cls(self) -> str:
        return str(self.spec.get("class", ""))

    @property
    def team(self) -> str:
        return str(self.metadata.get("team", ""))


#: The places of a pool a finding can point at, by what is written there (not by fact name).
#: Every pool has each of them, whatever its source; :mod:`policylint.engine.views` maps facts to
#: places in one table, checked against these and the known facts when it is imported.
POOL_PLACES: dict[str, str] = {
    "name": "the pool's name",
    "reserved": "the reserved (guaranteed) GPUs",
    "elastic": "the most GPUs added on demand",
    "capacity": "reserved + elastic GPUs as a whole (the elastic block, or the reserved GPUs without one)",
    "demand": "where measured demand is compared with the pool",
    "overflow": "what happens to the peak band",
    "queue": "the queue limits",
    "queue_needs": "the queue limits, or the name without any",
    "queue_depth": "the queue depth limit",
    "queue_wait": "the queue wait limit",
    "scheduling": "the scheduling block, or the name without one",
    "gang": "gang (all-or-nothing) scheduling",
    "preemption": "preemption",
    "buffer": "the GPUs kept free for long-tail jobs, or the name without any",
    "serves": "the classes the pool serves",
    "gpu": "the GPU type and memory",
    "reclaim": "how lent GPUs come back",
}


def cluster_pool_places(base: DocPath, spec: PoolSpec) -> dict[str, DocPath]:
    """The places of a pool written as a policylint Cluster pool at ``base``.

    Also the default of every place a scheduler reader does not give: its
    ``base`` is then the block of the manifest the pool comes from.
    """
    reserved: DocPath = (*base, "reservedGpus")
    name: DocPath = (*base, "name")
    elastic_block: DocPath = (*base, "elastic") if "elastic" in spec else reserved
    return {
        "name": name,
        "reserved": reserved,
        "elastic": (*base, "elastic", "maxGpus"),
        "capacity": elastic_block,
        "demand": (*base, "elastic") if "elastic" in spec and not spec.get("reservedGpus") else reserved,
        "overflow": (*base, "overflow"),
        "queue": (*base, "queue"),
        "queue_needs": (*base, "queue") if "queue" in spec else name,
        "queue_depth": (*base, "queue", "maxDepth"),
        "queue_wait": (*base, "queue", "maxWaitSeconds"),
        "scheduling": (*base, "scheduling") if "scheduling" in spec else name,
        "gang": (*base, "scheduling"),
        "preemption": (*base, "scheduling"),
        "buffer": (*base, "bufferGpus") if "bufferGpus" in spec else name,
        "serves": (*base, "serves"),
        "gpu": (*base, "gpu"),
        "reclaim": name,
    }


def pool_capacity(reserved_gpus: int, elastic_gpus: int) -> int:
    """A pool's capacity: its reserved plus its elastic GPUs.

    The one definition, for a declared pool (:attr:`Pool.capacity_gpus`), a planned
    one and the capacity a fix writes.
    """
    return reserved_gpus + elastic_gpus


@dataclass
class Pool:
    """A GPU pool, whatever its source: a Cluster's pool, a Kueue ClusterQueue flavor, a Volcano Queue.

    ``spec`` has the shape of a Cluster pool (``schemas/cluster.schema.json``,
    ``$defs/pool``) for every source: scheduler readers translate their
    manifests into it and validate the result against that schema, so every
    rule and calculator reads one kind of pool.
    """

    name: str
    cluster: Cluster
    spec: PoolSpec
    doc: Document
    doc_path: DocPath
    workloads: list[Workload] = field(default_factory=list)
    origin: str = "policylint"  # or "kueue" / "volcano"
    #: where each place (:data:`POOL_PLACES`) is written, when not where a Cluster pool writes it
    places: dict[str, DocPath] = field(default_factory=dict)
    #: what the scheduler manifest says beyond the policylint-shaped ``spec``
    scheduler: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = sorted(set(self.places) - set(POOL_PLACES))
        if unknown:  # a reader's mistake, caught when the pool is built rather than as a misplaced finding
            raise ValueError(f"pool {self.name}: unknown places {', '.join(unknown)} (known: {', '.join(POOL_PLACES)})")

    @property
    def reserved_gpus(self) -> int:
        """``reservedGpus`` (0 when the pool declares none)."""
        return int(self.spec.get("reservedGpus", 0) or 0)

    @property
    def buffer_gpus(self) -> int:
        """``bufferGpus`` as a whole number (``4.0`` is 4, as the schema's integer admits it; 0 when none)."""
        return whole_number(self.spec.get("bufferGpus")) or 0

    @property
    def elastic_gpus(self) -> int:
        """``elastic.maxGpus`` (0 without elastic capacity)."""
        elastic: ElasticSpec | NoBlock = self.spec.get("elastic") or {}
        return int(elastic.get("maxGpus", 0) or 0)

    @property
    def capacity_gpus(self) -> int:
        """The pool's capacity (:func:`pool_capacity`): what every command shows and judges."""
        return pool_capacity(self.reserved_gpus, self.elastic_gpus)

    @property
    def owned_gpus(self) -> int:
        """GPUs the pool holds as its own: ``reservedGpus``; for a Kueue flavor its whole nominal quota.

        Kueue lends the part of a nominal quota above ``nominalQuota - lendingLimit`` only while
        the owner leaves it idle, so it reads as elastic capacity - but it is bought all the same.
        """
        nominal = self.scheduler.get("nominal") if self.origin == "kueue" else None
        return nominal if isinstance(nominal, int) else self.reserved_gpus

    @property
    def lent_gpus(self) -> int:
        """GPUs of the pool's own quota that it may lend away: ``owned_gpus - reserved_gpus`` (0 but for a Kueue lender)."""
        return max(0, self.owned_gpus - self.reserved_gpus)

    @property
    def parent_only_gpus(self) -> int:
        """GPUs of a Volcano Queue's parent queues' guarantees that no other queue may use: its own in all but name.

        0 for other pools. A Kueue Cohort's own quota is not counted so: it may be capacity an autoscaler
        rents on demand (as in examples/kueue), which a purchase does not replace.
        """
        found = self.scheduler.get("parent_only") if self.origin == "volcano" else None
        return found if isinstance(found, int) and not isinstance(found, bool) else 0

    @property
    def owned_beyond_reserved_gpus(self) -> int:
        """What PL801 counts as owned beside the reservation: quota a Kueue flavor may lend, and a Volcano parent
        guarantee only this queue may use. A reservation's fix keeps both."""
        return self.lent_gpus + self.parent_only_gpus

    @property
    def held_gpus(self) -> int:
        """GPUs that carry the pool's baseline band: ``reservedGpus``, plus the quota a Kueue flavor lends when its
        ClusterQueue takes lent quota back by preemption (``reclaimWithinCohort`` Any or LowerPriority).

        Such a flavor holds its whole nominal quota whenever its own work needs it; one that only waits
        for borrowers to finish (``Never``) holds the part it cannot lend.
        """
        if self.origin == "kueue" and self.scheduler.get("reclaims_in_time"):
            return self.reserved_gpus + self.lent_gpus
        return self.reserved_gpus

    def place(self, name: str) -> DocPath:
        """The document path of the place ``name`` (a key of :data:`POOL_PLACES`)."""
        if name in self.places:
            return self.places[name]
        return cluster_pool_places(self.doc_path, self.spec)[name]

    @property
    def qualified(self) -> str:
        return f"{self.cluster.name}/{self.name}"

    @property
    def key(self) -> tuple[str, str, str]:
        """(kind, name) of the document that backs the pool, and the pool's name.

        Stable across revisions and independent of the cluster name a scheduler
        pool is given (a Kueue cohort may be renamed ``kueue-...`` to avoid a
        policylint Cluster of the same name): history matches pools on it.
        """
        return (self.doc.kind or "", self.doc.name or "", self.name)


@dataclass
class Cluster:
    """A policylint Cluster, or the synthetic cluster a scheduler's queues are shown under."""

    name: str  # what reports show; a scheduler-made cluster may be renamed to avoid a clash
    doc: Document
    spec: ClusterSpec
    pools: dict[str, Pool] = field(default_factory=dict)
    #: (scheduler, kind, name) of what a scheduler-made cluster stands for (a Kueue cohort, say);
    #: None for a policylint Cluster, which is identified by its own name
    backing: tuple[str, str, str] | None = None

    @property
    def subject(self) -> Subject:
        """The typed identity findings on this cluster are keyed by (never its display name)."""
        return cluster_subject(self.name, self.backing)


@dataclass
class Proposal:
    name: str
    doc: Document
    spec: ProposalSpec
    cluster: Cluster | None = None
    pools: dict[str, Pool] = field(default_factory=dict)
    workloads: list[Workload] = field(default_factory=list)


@dataclass(frozen=True)
class Unplaced:
    """A document that may hold a pool's workload but is not in the model: the pools it may belong to.

    ``cluster`` and ``pool`` are the names it declares as far as they can be read (None: any);
    ``file`` is its file as displayed and ``code`` the finding that says why it is not placed.
    """

    cluster: str | None
    pool: str | None
    file: str
    code: str

    def may_hold(self, pool: Pool) -> bool:
        """Whether a workload of ``pool`` may be in this document."""
        return (self.cluster is None or self.cluster == pool.cluster.name) and (self.pool is None or self.pool == pool.name)


@dataclass
class Model:
    root: Path
    workloads: dict[str, Workload] = field(default_factory=dict)
    clusters: dict[str, Cluster] = field(default_factory=dict)
    proposals: dict[str, Proposal] = field(default_factory=dict)
    #: scheduler manifests read by :mod:`policylint.model.schedulers` (queues not yet in ``clusters``)
    schedulers: dict[str, Any] = field(default_factory=dict)
    #: documents that may hold workloads of a pool but could not be read or placed (their
    #: findings say why): while one may belong to a pool, its demand is not known whole
    unplaced: list[Unplaced] = field(default_factory=list)
    #: (file of the first definition, file of a later one) per name defined twice (PL021): a change to either
    #: decides which one the model reads, so a narrowed run judges the whole repository
    clashes: list[tuple[Path, Path]] = field(default_factory=list)

    def proposed_gpus(self) -> tuple[dict[str, int], dict[str, list[tuple[str, int]]]]:
        """The GPUs the proposals ask for each pool (by its qualified name), in all and per proposal.

        The one sum of a pool's proposed GPUs: the pool's committed capacity (PL109) and, at the
        ``--diff`` base, what its proposals had asked for (PL950). Proposals are taken in name order;
        a request for a pool its cluster does not have counts nowhere (PL020 reports it).
        """
        proposed: dict[str, int] = {}
        proposed_by: dict[str, list[tuple[str, int]]] = {}
        for pname, p in sorted(self.proposals.items()):
            if p.cluster is None:
                continue
            for req in p.spec.get("requests", []):
                if req["pool"] in p.cluster.pools:
                    key = f"{p.cluster.name}/{req['pool']}"
                    proposed[key] = proposed.get(key, 0) + int(req["gpus"])
                    proposed_by.setdefault(key, []).append((pname, int(req["gpus"])))
        return proposed, proposed_by

    @property
    def pools(self) -> list[Pool]:
        return [p for c in self.clusters.values() for p in c.pools.values()]

    def measurements(self) -> list[MeasurementRef]:
        return [m for w in self.workloads.values() for m in w.measurements.values()]
