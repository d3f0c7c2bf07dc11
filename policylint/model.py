"""The repository model: declared workloads, clusters, pools and proposals.

Built by :mod:`policylint.resolve` from validated documents. Every object keeps
its :class:`~policylint.load.Document` and the document path of its own block,
so later steps can place findings on the right line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from policylint.load import Document, DocPath


@dataclass
class MeasurementRef:
    """A measurement file referenced by a document, resolved and checked."""

    owner: str
    role: str  # "concurrency", "vram", "durations"
    doc: Document
    doc_path: DocPath
    spec: dict[str, Any]
    path: Path | None  # None when the reference was rejected
    display: str


@dataclass
class Workload:
    name: str
    doc: Document
    spec: dict[str, Any]
    metadata: dict[str, Any]
    pool: Pool | None = None
    measurements: dict[str, MeasurementRef] = field(default_factory=dict)

    @property
    def cls(self) -> str:
        return str(self.spec.get("class", ""))

    @property
    def team(self) -> str:
        return str(self.metadata.get("team", ""))


@dataclass
class Pool:
    name: str
    cluster: Cluster
    spec: dict[str, Any]
    doc: Document
    doc_path: DocPath
    workloads: list[Workload] = field(default_factory=list)
    origin: str = "policylint"  # or "kueue" / "volcano"
    #: per-fact document paths overriding the default ``doc_path + key`` (scheduler pools)
    paths: dict[str, DocPath] = field(default_factory=dict)
    #: what the scheduler manifest says beyond the policylint-shaped ``spec``
    scheduler: dict[str, Any] = field(default_factory=dict)

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
    name: str
    doc: Document
    spec: dict[str, Any]
    pools: dict[str, Pool] = field(default_factory=dict)


@dataclass
class Proposal:
    name: str
    doc: Document
    spec: dict[str, Any]
    cluster: Cluster | None = None
    pools: dict[str, Pool] = field(default_factory=dict)
    workloads: list[Workload] = field(default_factory=list)


@dataclass
class Model:
    root: Path
    workloads: dict[str, Workload] = field(default_factory=dict)
    clusters: dict[str, Cluster] = field(default_factory=dict)
    proposals: dict[str, Proposal] = field(default_factory=dict)
    #: scheduler manifests read by :mod:`policylint.schedulers` (queues not yet in ``clusters``)
    schedulers: dict[str, Any] = field(default_factory=dict)

    @property
    def pools(self) -> list[Pool]:
        return [p for c in self.clusters.values() for p in c.pools.values()]

    def measurements(self) -> list[MeasurementRef]:
        return [m for w in self.workloads.values() for m in w.measurements.values()]
