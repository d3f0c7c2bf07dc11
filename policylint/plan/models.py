"""What a plan is made of: its inputs (what-if, thresholds, where unplaced workloads go) and its pools.

Plain data, no computation beyond a pool's own rendering as a Cluster pool: every
other module of :mod:`policylint.plan` reads and writes these types.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from policylint.measure.pool_groups import CLASSES, EPS, Thresholds, number
from policylint.model import pool_capacity
from policylint.model.specs import ElasticSpec, GpuSpec, NodesSpec, PoolSpec

__all__ = [
    "CLASSES",
    "EPS",
    "PLANNED_CLUSTERS_FILE",
    "SIZING_RULES",
    "Plan",
    "PlannedPool",
    "Thresholds",
    "Unplaced",
    "WhatIf",
    "number",
    "plain",
]

#: The findings a plan is responsible for: sizing, queues, placement and scheduling of pools.
#: ``check`` on a planned repository reports none of them (the plan's own verification).
SIZING_RULES = frozenset(
    {
        "PL101", "PL102", "PL103", "PL104", "PL110", "PL111", "PL112",
        "PL201", "PL203", "PL204", "PL205", "PL206", "PL207", "PL208",
        "PL303", "PL306", "PL401", "PL402", "PL403", "PL502", "PL601",
        "PL801", "PL803",
    }
)  # fmt: skip

#: Name of the file holding the planned clusters in a planned repository.
PLANNED_CLUSTERS_FILE = "planned-clusters.yaml"


def plain(x: float) -> float | int:
    """A whole float as an int (YAML and JSON without a spurious .0)."""
    return int(x) if float(x).is_integer() else float(x)


@dataclass(frozen=True)
class WhatIf:
    """One input changed, to see what it is worth in GPUs.

    ``cold_start_seconds`` replaces every workload's declared cold start (faster model
    loading); ``tolerances`` replaces named workloads' ``maxQueueSeconds``; ``headroom``
    is the share above the bands the plan adds (0: exactly the bands).
    ``size_queues_by_tolerance`` sizes a pool that queues its overflow to the least
    capacity meeting its tightest tolerance when that is below the daily band (the
    figure the plan otherwise only reports, see :mod:`policylint.plan.sizing`).
    """

    cold_start_seconds: float | None = None
    tolerances: tuple[tuple[str, float], ...] = ()
    headroom: float = 0.0
    size_queues_by_tolerance: bool = False


@dataclass(frozen=True)
class Unplaced:
    """Where workloads placed in no pool are planned: a cluster (when they name none) and a GPU type.

    Without a GPU type they are left out of the plan: nothing says which GPUs they run on.
    """

    cluster: str = "planned"
    gpu_model: str | None = None
    gpu_memory: float | None = None


@dataclass
class PlannedPool:
    """One planned pool: who is in it, its pooled bands and the capacity they justify."""

    cluster: str
    name: str
    cls: str
    gpu: GpuSpec
    tier: str
    gang: bool
    preemption: bool
    members: tuple[str, ...]
    measured: bool
    reserved: int = 0
    elastic: int = 0
    cold_start_seconds: float | None = None
    overflow: str = "queue"
    max_wait_seconds: float = 0.0
    max_depth: int = 0
    nodes: NodesSpec | None = None
    namespaces: tuple[str, ...] = ()
    #: pooled figures (GPUs) and what surrounds them; None for an unmeasured pool
    bands: dict[str, Any] | None = None
    #: the members' bands each planned alone, summed, and the capacity they would need apart
    apart: dict[str, int] | None = None
    #: why each member sits here
    reasons: dict[str, str] = field(default_factory=dict)
    #: every number with the measurement, band and rule it comes from
    derivation: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def qualified(self) -> str:
        return f"{self.cluster}/{self.name}"

    @property
    def capacity(self) -> int:
        """Reserved + elastic GPUs (:func:`policylint.model.pool_capacity`)."""
        return pool_capacity(self.reserved, self.elastic)

    def spec(self) -> PoolSpec:
        """The pool as a policylint Cluster pool (``schemas/cluster.schema.json``)."""
        # in the order a Cluster pool is written: the elastic block, when there is one, before serves
        if self.elastic > 0:
            elastic: ElasticSpec = {"maxGpus": self.elastic, "kind": "autoscale"}
            if self.cold_start_seconds is not None:
                elastic["coldStartSeconds"] = plain(self.cold_start_seconds)
            out: PoolSpec = {
                "name": self.name,
                "gpu": self.gpu.copy(),
                "reservedGpus": self.reserved,
                "elastic": elastic,
                "serves": [self.cls],
            }
        else:
            out = {"name": self.name, "gpu": self.gpu.copy(), "reservedGpus": self.reserved, "serves": [self.cls]}
        out["sharing"] = "exclusive"
        out["overflow"] = self.overflow
        out["queue"] = {"maxDepth": self.max_depth, "maxWaitSeconds": plain(self.max_wait_seconds)}
        out["scheduling"] = {"gang": self.gang, "preemption": self.preemption}
        if self.namespaces:
            out["namespaces"] = list(self.namespaces)
        if self.nodes:
            out["nodes"] = self.nodes
        return out


@dataclass
class Plan:
    """The planned pools, the workloads the plan cannot place, and the inputs it was made with."""

    pools: list[PlannedPool]
    #: workload -> why it has no planned pool (no cluster or GPU type to plan it in)
    unplaced: dict[str, str]
    whatif: WhatIf
    thresholds: Thresholds

    def pool_of(self, workload: str) -> PlannedPool | None:
        for p in self.pools:
            if workload in p.members:
                return p
        return None
