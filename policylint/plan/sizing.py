"""Sizing: the capacity a pool's pooled bands justify, by the framework's rule.

The framework (FRAMEWORK.md, "concurrency bands") sizes a pool from the bands of its
pooled series: reserved = the baseline band, reserved + elastic = the daily band
(elastic = daily band minus baseline), demand above it overflows. :func:`capacity`
applies that rule to a pool's bands, with the what-if headroom.

For a pool that queues its overflow there is a cheaper figure: the least capacity
at which the daily-band demand waits no longer than the pool's tightest tolerance
(:func:`policylint.bands.capacity_for_tolerance`). The plan reports it as what
queueing would save; it sizes by it only when asked to
(``--size-queues-by-tolerance``, :attr:`WhatIf.size_queues_by_tolerance`), because
the framework's elastic band is the daily band, not a queue's.

:func:`size` is the full analysis of one candidate pool, by the functions ``check``
uses (:func:`policylint.measure.pools.measure_pool` at :func:`policylint.measure.cold_start.pool_cold_start`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from policylint.bands import capacity_for_tolerance
from policylint.measure.cold_start import pool_cold_start, pool_cold_start_source
from policylint.measure.pool_groups import framework_capacity
from policylint.measure.pools import measure_pool
from policylint.model import Cluster, Pool
from policylint.plan.models import EPS, WhatIf

if TYPE_CHECKING:
    from policylint.measure.facts import PoolFacts, WorkloadFacts
    from policylint.model import Workload
    from policylint.model.specs import GpuSpec, PoolSpec

__all__ = ["Capacity", "Sized", "capacity", "size", "trial", "trial_spec"]


@dataclass(frozen=True)
class Capacity:
    """What a pool's bands justify: reserved and total GPUs, the rule that gave them, the queue figures.

    ``daily`` is the framework's total (the daily band, with headroom);
    ``tolerance_capacity`` the least capacity meeting the tightest tolerance and
    ``queued`` the total sized by it (both None when not computed: a pool that rejects
    its overflow, a workload without tolerance, or a search that did not need them);
    ``by_tolerance`` says whether ``capacity`` is ``queued`` (the option) or ``daily``.
    """

    reserved: int
    capacity: int
    rule: str
    daily: int
    tolerance_capacity: int | None = None
    queued: int | None = None
    by_tolerance: bool = False

    @property
    def queueing_saves(self) -> int | None:
        """GPUs that sizing by the tolerance takes off the daily-band total (applied or not); None: not computed."""
        return None if self.queued is None else self.daily - self.queued


def capacity(
    baseline: float,
    daily: float,
    whatif: WhatIf,
    tolerance: float | None,
    tolerance_capacity: Callable[[], int],
    *,
    explain: bool = True,
) -> Capacity:
    """Reserved and total GPUs from a pool's baseline and daily bands (see the module docs).

    ``tolerance`` is the tightest tolerance of a pool that queues its overflow (None
    for a pool that rejects it, or when a workload declares none);
    ``tolerance_capacity()`` computes the least capacity meeting it, and is called
    only when the sizing uses it or ``explain`` asks for the figure.
    """
    h = whatif.headroom
    reserved, full = framework_capacity(baseline, daily, h)
    rule = "daily band" if h == 0 else f"daily band + {h:.0%} headroom"
    by = whatif.size_queues_by_tolerance
    if tolerance is None or not (by or explain):
        return Capacity(reserved, full, rule, full)
    tol_cap = tolerance_capacity()
    with_h = math.floor(tol_cap * (1 + h) + EPS)
    if with_h >= full:
        return Capacity(reserved, full, rule, full, tol_cap, full, by)
    queued = max(reserved, with_h)
    if not by:
        return Capacity(reserved, full, rule, full, tol_cap, queued, by)
    rule = f"least capacity at which daily-band demand waits at most {tolerance:g} s" + (
        "" if h == 0 else f", + {h:.0%} headroom"
    )
    if queued == reserved:
        rule += " (the reserved baseline already holds it)"
    return Capacity(reserved, queued, rule, full, tol_cap, queued, by)


def trial(members: Sequence[Workload], spec: PoolSpec) -> Pool:
    """A pool that exists only for measuring: copies of ``members`` placed in one pool with ``spec``.

    The copies keep their declarations and measurements; only their pool changes, so
    :func:`policylint.measure.cold_start.effective_cold_start` sees the planned pool.
    """
    doc = members[0].doc
    current = members[0].pool
    owner = Cluster(name=current.cluster.name if current is not None else "plan", doc=doc, spec={})
    pool = Pool(name=str(spec["name"]), cluster=owner, spec=spec, doc=doc, doc_path=())
    pool.workloads = [replace(w, pool=pool) for w in members]
    return pool


def trial_spec(cls: str, gpu: GpuSpec) -> PoolSpec:
    """The spec of a trial pool: the GPU type, no reserved or elastic capacity."""
    return {"name": "trial", "gpu": gpu, "reservedGpus": 0, "serves": [cls]}


@dataclass
class Sized:
    """A candidate pool's pooled facts and the capacity the rules give it."""

    facts: PoolFacts
    sized: Capacity | None
    cold_start: float
    cold_start_source: str

    @property
    def ok(self) -> bool:
        return self.facts.report is not None and self.facts.report.baseline is not None and self.sized is not None


def size(
    members: Sequence[Workload],
    facts: Mapping[str, WorkloadFacts],
    whatif: WhatIf,
    tolerance: float | None,
    gpu: GpuSpec,
    *,
    explain: bool = True,
) -> Sized:
    """Pooled bands of ``members`` and the capacity they justify (see the module docs).

    ``tolerance`` is the tightest tolerance of a pool that queues its overflow, else None;
    ``explain`` computes the capacity that tolerance allows even when the sizing does not use it.
    """
    pool = trial(members, trial_spec(members[0].cls, gpu))
    # Without elastic capacity each member's effective cold start is its own; the pool's
    # is the longest of them. Elastic capacity that comes up within that window leaves it so.
    cold = pool_cold_start(pool)
    source = pool_cold_start_source(pool)
    pooled = measure_pool(pool, dict(facts))
    r, grid = pooled.report, pooled.grid
    if r is None or r.baseline is None or r.daily is None or grid is None:
        return Sized(pooled, None, cold, source)
    daily, step = r.daily, r.step_seconds

    def tolerance_capacity() -> int:
        assert tolerance is not None
        return capacity_for_tolerance(np.minimum(grid.pooled, daily), tolerance, step)

    return Sized(pooled, capacity(r.baseline, daily, whatif, tolerance, tolerance_capacity, explain=explain), cold, source)
