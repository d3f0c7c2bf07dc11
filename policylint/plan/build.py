"""The plan of a repository: group, search, size and explain, in that order (see :mod:`policylint.plan`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from policylint.errors import PolicylintError
from policylint.plan.explain import planned_pool, unmeasured_pool
from policylint.plan.grouping import Group, dns, group_of, planned_spec, pool_gang, split_spread, tolerance_of
from policylint.plan.models import EPS, Plan, PlannedPool, Thresholds, Unplaced, WhatIf
from policylint.plan.search import merge

if TYPE_CHECKING:
    from policylint.measure.facts import WorkloadFacts
    from policylint.model import Model, Workload

__all__ = ["build_plan"]


def build_plan(
    model: Model,
    facts: Mapping[str, WorkloadFacts],
    whatif: WhatIf | None = None,
    thresholds: Thresholds | None = None,
    unplaced_at: Unplaced | None = None,
) -> Plan:
    """The plan for the workloads of ``model`` measured as ``facts`` (see the package docs).

    Clusters are optional input: a workload placed in no pool is planned in the cluster
    it names (else ``unplaced_at.cluster``) on ``unplaced_at``'s GPU type. Queue depths
    are left at 0: :func:`policylint.plan.explain.apply_depths` sets them from the
    planned repository's own views.
    """
    whatif = whatif or WhatIf()
    th = thresholds or Thresholds()
    unplaced_at = unplaced_at or Unplaced()
    unknown = sorted({n for n, _ in whatif.tolerances} - set(model.workloads))
    if unknown:
        raise PolicylintError(f"--tolerance names no workload of the repository: {', '.join(unknown)}")
    if whatif.headroom < 0 or whatif.headroom > th.headroom + EPS:
        raise PolicylintError(
            f"--headroom {whatif.headroom:g} is outside 0..{th.headroom:g}, the headroom the sizing rules accept"
        )
    specs = {n: planned_spec(w, whatif) for n, w in model.workloads.items()}
    planned = {n: replace(w, spec=specs[n]) for n, w in model.workloads.items()}
    groups: dict[Group, list[str]] = {}
    unplaced: dict[str, str] = {}
    for name in sorted(planned):
        g = group_of(planned[name], specs[name], th, unplaced_at)
        if isinstance(g, str):
            unplaced[name] = g
        else:
            groups.setdefault(g, []).append(name)
    pools: list[PlannedPool] = []
    used: set[tuple[str, str]] = set()
    tol = {n: tolerance_of(specs[n]) for n in planned}
    for group in sorted(groups, key=lambda g: g.order):
        for part_index, part in enumerate(split_spread(groups[group], tol, th.max_spread)):
            measured = [n for n in part if _measured(facts.get(n))]
            unmeasured = sorted(n for n in part if n not in measured)
            why: dict[str, str] = {}
            # gang and one-GPU work of a group pool together, as in a pool check judges (pool_groups)
            parts, alone = merge(measured, planned, facts, whatif, group, tol, th, why)
            for members in parts:
                base = _base_name(group, part_index, [planned[n] for n in members], facts)
                sized = planned_pool(group, base, members, planned, facts, whatif, tol, th, alone, why)
                if sized is None:  # measured, but no stretch of its series as long as the cold start
                    unmeasured = sorted(unmeasured + members)
                    continue
                sized.name = _unique(base, group.cluster, used)
                pools.append(sized)
            if unmeasured:
                base = _base_name(group, part_index, [planned[n] for n in unmeasured], facts)
                name = _unique(base + "-unmeasured", group.cluster, used)
                pools.append(unmeasured_pool(group, name, unmeasured, planned, facts, tol, th))
    pools.sort(key=lambda p: (p.cluster, p.name))
    return Plan(pools=pools, unplaced=unplaced, whatif=whatif, thresholds=th)


def _base_name(group: Group, part_index: int, members: list[Workload], facts: Mapping[str, WorkloadFacts]) -> str:
    """A planned pool's name before it is made unique: class, GPU, tier, ``-gang`` when a member runs gang jobs, part."""
    gang = "-gang" if pool_gang(members, facts) else ""
    return f"{group.cls}-{dns(group.gpu_model)}-{group.tier}{gang}" + (f"-{part_index + 1}" if part_index else "")


def _measured(f: WorkloadFacts | None) -> bool:
    return f is not None and f.report is not None and f.demand is not None


def _unique(base: str, cluster: str, used: set[tuple[str, str]]) -> str:
    name, k = base, 1
    while (cluster, name) in used:
        k += 1
        name = f"{base}-{k}"
    used.add((cluster, name))
    return name
