"""Grouping: which workloads may share a planned pool at all, and why.

Training, batch and inference never share a pool. Inside one cluster, workloads are
grouped by class, GPU model and memory (taken from the pool they run in today) and
tolerance tier (real-time, interactive, queue-tolerant), and a tier is cut wherever its
loosest tolerance would exceed the spread the rules accept (:func:`split_spread`). Which
workloads of a group are then pooled together is :mod:`policylint.plan.search`'s
question. Gang jobs (training or batch jobs holding more than one GPU, by their
``gpusPerReplica`` or by what their measured job lists record) pool with the rest of
their group, as ``check`` pools a pool's workloads
(:mod:`policylint.measure.pool_groups`); a pool holding one declares gang scheduling
(:func:`pool_gang`). Whether a workload runs gang jobs is
:func:`~policylint.measure.pool_groups.is_gang` of its spec and its measured facts, the
very question PL403 asks, so a planned pool never lacks the gang admission ``check``
demands.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from policylint.measure.pool_groups import (
    CLASSES,
    Thresholds,
    is_gang,
    model_key,
    number,
    split_spread,
    tier_of,
    tightest,
    tolerance_of,
)
from policylint.plan.models import Unplaced, WhatIf, plain

if TYPE_CHECKING:
    from policylint.measure.facts import WorkloadFacts
    from policylint.model import Pool, Workload
    from policylint.model.specs import GpuSpec, NodesSpec, WorkloadSpec

__all__ = [
    "Group",
    "common_nodes",
    "dns",
    "group_of",
    "is_reject",
    "planned_spec",
    "pool_gang",
    "reason",
    "runs_gang_jobs",
    "split_spread",
    "tightest",
    "tolerance_of",
]


def planned_spec(w: Workload, whatif: WhatIf) -> WorkloadSpec:
    """The workload's spec with the what-if inputs applied (a copy)."""
    spec = w.spec.copy()
    if whatif.cold_start_seconds is not None:
        spec["coldStartSeconds"] = plain(whatif.cold_start_seconds)
    for name, seconds in whatif.tolerances:
        if name == w.name:
            tol = (spec.get("tolerance") or {}).copy()
            tol["maxQueueSeconds"] = plain(seconds)
            spec["tolerance"] = tol
    return spec


def dns(text: str) -> str:
    """A pool-name-safe, DNS-friendly rendering of ``text``."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


@dataclass(frozen=True)
class Group:
    """The workloads that may share a pool: one cluster, class, GPU type and tier.

    GPU types compare by :func:`~policylint.measure.pool_groups.model_key` (two spellings of
    one model are one type); ``gpu_model`` is the model as the group's first workload's pool
    writes it.
    """

    cluster: str
    cls: str
    gpu_model: str = field(compare=False)
    gpu_memory: float
    tier: str
    model: str = field(default="")

    def __post_init__(self) -> None:
        if not self.model:
            object.__setattr__(self, "model", model_key(self.gpu_model))

    @property
    def gpu(self) -> GpuSpec:
        """The GPU type as a Cluster pool declares it."""
        return {"model": self.gpu_model, "memoryGiB": plain(self.gpu_memory)}

    @property
    def order(self) -> tuple[str, str, str, float, str]:
        return (self.cluster, self.cls, self.gpu_model, self.gpu_memory, self.tier)


def is_reject(group: Group) -> bool:
    """A real-time group rejects its overflow (callers retry); the others queue it."""
    return group.tier == "realtime"


def group_of(w: Workload, spec: WorkloadSpec, th: Thresholds, unplaced: Unplaced) -> Group | str:
    """The group a workload belongs to, or why it cannot be planned (:func:`~policylint.measure.pool_groups.group_key`)."""
    if w.cls not in CLASSES:
        return f"its class {w.cls!r} is not one of {', '.join(CLASSES)}"
    tier = tier_of(tolerance_of(spec), th)
    if w.pool is None:
        if unplaced.gpu_model is None or unplaced.gpu_memory is None:
            return "it is placed in no pool, so its GPU type is unknown (give one with --gpu MODEL=GIB)"
        named = spec.get("cluster")
        cluster = named if isinstance(named, str) and named else unplaced.cluster
        return Group(cluster, w.cls, unplaced.gpu_model, unplaced.gpu_memory, tier)
    gpu = w.pool.spec.get("gpu") or {}
    model, memory = gpu.get("model"), number(gpu.get("memoryGiB"))
    if not isinstance(model, str) or memory is None:
        return f"its pool {w.pool.qualified} declares no GPU model and memory"
    return Group(w.pool.cluster.name, w.cls, model, memory, tier)


def runs_gang_jobs(w: Workload, facts: Mapping[str, WorkloadFacts]) -> bool:
    """Whether ``w``'s jobs hold more than one GPU, declared or measured (:func:`is_gang`, PL403's question).

    ``facts`` are the measured facts the plan is built from; a workload without any is
    judged by its declaration alone, as ``check`` judges it.
    """
    measured = facts.get(w.name)
    return is_gang(w.cls, w.spec, measured.integrity if measured is not None else None)


def pool_gang(members: Iterable[Workload], facts: Mapping[str, WorkloadFacts]) -> bool:
    """Whether a planned pool declares gang scheduling: some member runs jobs of more than one GPU (:func:`runs_gang_jobs`)."""
    return any(runs_gang_jobs(w, facts) for w in members)


def common_nodes(pools: Iterable[Pool | None]) -> tuple[NodesSpec | None, tuple[str, ...]]:
    """The node selection all current pools agree on (else none), and every namespace they name."""
    nodes: list[NodesSpec | None] = []
    namespaces: set[str] = set()
    for p in pools:
        if p is None:
            continue
        nodes.append(p.spec.get("nodes"))
        namespaces.update(str(n) for n in p.spec.get("namespaces") or [])
    first = nodes[0] if nodes else None
    same = all(n == first for n in nodes)
    return (first.copy() if same and isinstance(first, dict) and first else None), tuple(sorted(namespaces))


def reason(group: Group, w: Workload, tol: float | None, alone: str | None, gang: bool) -> str:
    """Why the workload ``w`` sits in its planned pool: its group, its jobs, its tier and whether it was pooled.

    ``alone``: why the search left it in a pool of its own (None: it was pooled); ``gang``:
    whether its jobs hold more than one GPU (:func:`runs_gang_jobs`).
    """
    tier = {
        "realtime": "real-time (tolerates at most the real-time limit)",
        "interactive": "interactive (between the real-time and queue-tolerant limits)",
        "queue-tolerant": "queue-tolerant",
        "no-tolerance": "without a declared tolerance",
    }[group.tier]
    what = f"{group.cls} on {group.gpu_model} ({plain(group.gpu_memory)} GiB)"
    jobs = ", multi-GPU jobs needing gang scheduling" if gang else ""
    tol_text = "no tolerance" if tol is None else f"tolerates {tol:g} s"
    pooled = alone if alone is not None else "pooled: together they need fewer GPUs than apart"
    return f"{what}{jobs}; {tol_text}, {tier}; {pooled}"
