"""Pools a cluster keeps apart that would need fewer GPUs pooled (PL988's fact, ``pool_merges``).

``policylint plan`` pools the workloads of one group (one cluster, class, GPU type and
tolerance tier, :mod:`policylint.measure.pool_groups`; gang jobs or not) whenever pooling
saves GPUs. ``check`` judges the pools a repository declares the same way: for every
pair of a cluster's pools whose workloads all belong to one such group, it computes
the pooled demand of the pair and compares the GPUs it needs (reserved + elastic =
the daily band, :func:`~policylint.measure.pool_groups.framework_capacity`) with what
the two pools need apart.

**What "apart" is.** Each pool's own pooled daily band, measured - not what it
declares. The saving is then what pooling itself saves, whatever the pools reserve:
a pool that reserves less than its band is PL101's, one that reserves more PL104's.
Both sides are taken at one cold start, the longer of the two pools' own
(:func:`policylint.measure.cold_start.pool_cold_start`): a merged pool comes up no
faster than its slower half, and a band at a longer window is lower, so comparing at
two windows would credit pooling with what the window did.

**How the pair is pooled.** By the functions every pool's demand comes from
(:mod:`policylint.measure.pooled`): the two pools' pooled series are the members of
:func:`~policylint.measure.pooled.align` (a pool's series is whole GPUs already, so
it is taken as it is: one GPU per unit), and :func:`~policylint.measure.pooled.analyse_pool`
gives the bands. When both pools lie on one grid (one step, samples on the same
lattice: the usual case) that is exactly the series the members of both pools would
give together; otherwise the coarser pool's series is read on the finer grid by the
same carry-forward rule.

**What is never pooled**, as ``plan`` never pools it: a pair whose pooled window is
shorter than PL112's ``min_window_days``; a pair whose tolerances the spread rule
would cut (PL303's factor, :func:`~policylint.measure.pool_groups.split_spread`); two
pools citing one measurement (PL111's identity: pooled, its demand would count once
where apart it counts twice, so the saving is the double count's, and PL972 reports
it); a workload whose trace is a near copy of one in the other pool (PL972); a pool
with a workload of unknown demand or one in a document the model lacks (PL981).

**Cost.** Nothing is computed for a cluster with fewer than two pools, or for a group
with one pool: a repository with one pool does no work here, whatever its size. A
group of more than :data:`MAX_POOLS` pools is judged on the :data:`MAX_POOLS` that
need the most GPUs apart (ties by name), so at most ``MAX_POOLS x (MAX_POOLS - 1) / 2``
pairs, each one pass over the pair's series.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from policylint.engine.double_counts import double_counted, identity_fingerprint
from policylint.engine.sheets import PoolMerge
from policylint.measure.cold_start import pool_cold_start
from policylint.measure.pool_groups import Thresholds, framework_capacity, group_key, split_spread, tolerance_of

if TYPE_CHECKING:
    from policylint.measure.pooled import GpuMember, PooledGrid
    from policylint.engine.sheets import PoolFactSheet, WorkloadFactSheet
    from policylint.measure.facts import PoolFacts
    from policylint.model import Cluster, Pool

__all__ = ["MAX_POOLS", "pool_merges"]

#: Most pools of one group judged pairwise (the rest: see the module docs).
MAX_POOLS = 16


class _Candidate:
    """A pool that may be pooled with another: its group, series and members' identities."""

    __slots__ = ("cold", "grid", "group", "pool", "tolerances")

    def __init__(self, pool: Pool, group: tuple[object, ...], grid: PooledGrid, cold: float, tolerances: dict[str, float | None]):
        self.pool = pool
        self.group = group
        self.grid = grid
        self.cold = cold
        self.tolerances = tolerances


def _candidate(pool: Pool, sheet: PoolFactSheet, pooled: PoolFacts | None, th: Thresholds) -> _Candidate | None:
    """The pool as a pooling candidate; None when it has no single group or no measured pooled demand."""
    if not pool.workloads or sheet.unread_count:
        return None
    if pooled is None or pooled.unknown or pooled.grid is None or pooled.report is None or pooled.report.daily is None:
        return None
    gpu = pool.spec.get("gpu")
    keys = {group_key(w.cls, w.spec, gpu, th) for w in pool.workloads}
    if len(keys) != 1:
        return None
    (key,) = keys
    if isinstance(key, str):
        return None
    cold = pooled.cold_start_seconds if pooled.cold_start_seconds is not None else pool_cold_start(pool)
    return _Candidate(pool, key, pooled.grid, cold, {w.name: tolerance_of(w.spec) for w in pool.workloads})


def _as_member(name: str, grid: PooledGrid) -> GpuMember:
    """A pool's pooled series as one member of a pooled pair: whole GPUs already, one GPU per unit."""
    from policylint.measure.pooled import GpuMember  # the calculator, only for a cluster with pools to pair

    return GpuMember(
        name=name, times=grid.times, values=grid.pooled, step_seconds=grid.step_seconds,
        per_gpu=1.0, gpus_per_replica=1, gpus=grid.pooled,
    )


def _bands(grid: PooledGrid, cold: float) -> tuple[int, int, float] | None:
    """(reserved, reserved + elastic, window days) the bands of ``grid`` at ``cold`` justify; None without bands."""
    from policylint.measure.pooled import analyse_pool

    r = analyse_pool(grid, cold)
    if r.baseline is None or r.daily is None:
        return None
    reserved, full = framework_capacity(r.baseline, r.daily)
    return reserved, full, r.window_days


def _apart(c: _Candidate, cold: float, memo: dict[tuple[str, float], tuple[int, int, float] | None]) -> tuple[int, int, float] | None:
    key = (c.pool.qualified, cold)
    if key not in memo:
        memo[key] = _bands(c.grid, cold)
    return memo[key]


def _fingerprints(pool: Pool, workloads: Mapping[str, WorkloadFactSheet]) -> dict[str, str | None]:
    return {w.name: identity_fingerprint(workloads[w.name].integrity) if w.name in workloads else None for w in pool.workloads}


def _repeats_across(a: _Candidate, b: _Candidate, workloads: Mapping[str, WorkloadFactSheet]) -> bool:
    """True when a workload of one pool repeats (PL111) or nearly copies (PL972) one of the other's."""
    names_a = {w.name for w in a.pool.workloads}
    names_b = {w.name for w in b.pool.workloads}
    for mine, other in ((a, b), (b, a)):
        for w in mine.pool.workloads:
            sheet = workloads.get(w.name)
            if sheet is not None and sheet.integrity.near_copy_pool == other.pool.qualified:
                return True
    from dataclasses import replace

    together = replace(a.pool, workloads=[*a.pool.workloads, *b.pool.workloads])
    printed = {**_fingerprints(a.pool, workloads), **_fingerprints(b.pool, workloads)}
    for name, kept in double_counted(together, printed).items():
        if (name in names_a and kept in names_b) or (name in names_b and kept in names_a):
            return True
    return False


def pool_merges(
    cluster: Cluster,
    sheets: Mapping[str, PoolFactSheet],
    pooled: Mapping[str, PoolFacts],
    workloads: Mapping[str, WorkloadFactSheet],
    th: Thresholds | None = None,
) -> list[PoolMerge]:
    """Every pair of ``cluster``'s pools in one plan group that needs fewer GPUs pooled than apart (see the module docs).

    ``sheets`` and ``pooled`` by ``cluster/pool``, ``workloads`` by name. Largest saving
    first, then by pool names.
    """
    pools = list(cluster.pools.values())
    if len(pools) < 2:
        return []
    th = th or Thresholds()
    groups: dict[tuple[object, ...], list[_Candidate]] = {}
    for pool in sorted(pools, key=lambda p: p.qualified):
        sheet = sheets.get(pool.qualified)
        found = _candidate(pool, sheet, pooled.get(pool.qualified), th) if sheet is not None else None
        if found is not None:
            groups.setdefault(found.group, []).append(found)
    out: list[PoolMerge] = []
    memo: dict[tuple[str, float], tuple[int, int, float] | None] = {}
    for members in groups.values():
        if len(members) < 2:
            continue
        if len(members) > MAX_POOLS:
            own = {c.pool.qualified: _apart(c, c.cold, memo) for c in members}
            members = sorted(members, key=lambda c: (-(own[c.pool.qualified] or (0, 0, 0.0))[1], c.pool.qualified))[:MAX_POOLS]
            members.sort(key=lambda c: c.pool.qualified)
        for i, a in enumerate(members):
            for b in members[i + 1 :]:
                merged = _judge(a, b, workloads, th, memo)
                if merged is not None:
                    out.append(merged)
    out.sort(key=lambda m: (-m["saving_gpus"], m["pools"]))
    return out


def _judge(
    a: _Candidate,
    b: _Candidate,
    workloads: Mapping[str, WorkloadFactSheet],
    th: Thresholds,
    memo: dict[tuple[str, float], tuple[int, int, float] | None],
) -> PoolMerge | None:
    """The pair's figures when pooling it saves GPUs (total or reserved) and plan would pool it; else None."""
    tolerances = {**a.tolerances, **b.tolerances}
    if len(split_spread(sorted(tolerances), tolerances, th.max_spread)) != 1:
        return None
    cold = max(a.cold, b.cold)
    apart_a, apart_b = _apart(a, cold, memo), _apart(b, cold, memo)
    if apart_a is None or apart_b is None:
        return None
    if _repeats_across(a, b, workloads):
        return None
    import numpy as np

    from policylint.measure.pooled import align

    grid = align([_as_member(a.pool.qualified, a.grid), _as_member(b.pool.qualified, b.grid)])
    if not np.isfinite(grid.pooled).any():
        return None
    together = _bands(grid, cold)
    if together is None or together[2] < th.min_window_days:
        return None
    apart = apart_a[1] + apart_b[1]
    apart_reserved = apart_a[0] + apart_b[0]
    if (apart - together[1], apart_reserved - together[0]) <= (0, 0):
        return None
    return PoolMerge(
        pools=[a.pool.qualified, b.pool.qualified],
        apart_gpus=apart,
        pooled_gpus=together[1],
        saving_gpus=apart - together[1],
        apart_reserved_gpus=apart_reserved,
        pooled_reserved_gpus=together[0],
        cold_start_seconds=cold,
        window_days=together[2],
    )
