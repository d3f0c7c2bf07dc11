"""Pooling orchestration: every pool's pooled GPU demand, computed, updated or taken from the cache.

:func:`measure_pools` runs after every workload is measured. A pool found in the
pooled-demand cache is taken as stored; a pool whose kept sum
(:mod:`policylint.measure.pooled_cache`) can be updated reads only the series of the members
that joined or left; any other pool is summed afresh from its members' GPU demand
(:mod:`policylint.measure.pooled` does the arithmetic). :func:`cached_pools` looks the
pools up for the run before the workloads are measured, so that members of a cached
pool need not bring their series.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from policylint.measure import measurement_cache as measure_cache
from policylint.measure import pooled_cache
from policylint.errors import PolicylintError
from policylint.measure.facts import PoolFacts, WorkloadFacts
from policylint.measure.cold_start import pool_cold_start
from policylint.measure.conversion import gpu_conversion
from policylint.measure.pooled import GpuMember, PooledGrid, align, analyse_pool, extents, grid_spec, pool_bands

if TYPE_CHECKING:
    from pathlib import Path

    from policylint.measure.pooled_cache import PoolSum
    from policylint.measure.pooled import GridSpec, PooledReport, PoolMember
    from policylint.model import Model, Pool, Workload


class Needed(Protocol):
    """The part of a model a narrowed run measures: workloads by name, pools by ``cluster/pool``.

    Plain names, so that the measuring step need not know the engine that works
    them out (:func:`policylint.engine.scope.needed` gives one).
    """

    @property
    def workloads(self) -> Collection[str]: ...

    @property
    def pools(self) -> Collection[str]: ...


@dataclass(frozen=True)
class CachedPool:
    """A pool's pooled-demand cache key (None: not cacheable) and what the cache held under it.

    When the exact entry misses, ``base`` is the pool's kept sum
    (:mod:`policylint.measure.pooled_cache`) when it can be updated: ``joining`` names the
    members whose series must be added (every other member's series is not read),
    ``keys`` holds every member's measurement key.
    """

    key: str | None
    facts: PoolFacts | None = None
    base: PoolSum | None = None
    leaving: tuple[str, ...] = ()
    joining: tuple[str, ...] = ()
    keys: dict[str, str] = field(default_factory=dict)


def cached_pools(
    model: Model, keys: dict[str, str | None], cache_dir: Path, only: Needed | None = None
) -> dict[str, CachedPool]:
    """Each pool's cache key and cached pooled demand; a pool with an unkeyed member has no key.

    A pool whose exact entry misses gets its kept sum when few enough members changed.
    """
    out: dict[str, CachedPool] = {}
    for pool in model.pools:
        if only is not None and pool.qualified not in only.pools:
            continue
        members = [(w.name, keys.get(w.name)) for w in pool.workloads]
        if not members or any(k is None for _, k in members):
            out[pool.qualified] = CachedPool(None)
            continue
        key = measure_cache.pool_key(pool, [(n, str(k)) for n, k in members])
        found = measure_cache.load_pool(cache_dir, key)
        if found is not None:
            out[pool.qualified] = CachedPool(key, found)
            continue
        named = {n: str(k) for n, k in members}
        base = pooled_cache.load(cache_dir, pooled_cache.locator(model.root, pool.qualified))
        changes = base.changes(named) if base is not None else None
        if base is None or changes is None:
            out[pool.qualified] = CachedPool(key, keys=named)
        else:
            out[pool.qualified] = CachedPool(key, None, base, tuple(changes[0]), tuple(changes[1]), named)
    return out


def _member(workload: Workload, facts: WorkloadFacts) -> PoolMember | None:
    per_gpu, per_replica = gpu_conversion(workload, facts.trace_unit)
    demand = facts.demand
    if facts.report is None or demand is None or not isinstance(per_gpu, (int, float)) or per_gpu <= 0:
        return None
    return GpuMember(
        name=workload.name,
        # None for a regular axis: (axis_start, axis_step) stand for it until the pool needs it
        times=demand.times,  # type: ignore[arg-type]
        values=demand.gpus,  # not read: the GPU demand was computed when the workload was measured
        step_seconds=demand.step_seconds,
        per_gpu=float(per_gpu),
        gpus_per_replica=per_replica,
        gpus=demand.gpus,
        axis_start=demand.axis_start,
        axis_step=demand.axis_step,
    )


def measure_pool(
    pool: Pool, facts: dict[str, WorkloadFacts], keys: dict[str, str] | None = None, root: Path | None = None
) -> PoolFacts:
    """Pooled demand of one pool from its workloads' measured series.

    With every member's measurement key (``keys``) and the repository ``root``,
    the sum is also made ready for the pooled-sum cache (see :mod:`policylint.measure.pooled_cache`).
    """
    return _measure_pool(pool, facts, keys, root)[0]


def _measure_pool(
    pool: Pool, facts: dict[str, WorkloadFacts], keys: dict[str, str] | None, root: Path | None
) -> tuple[PoolFacts, PoolSum | None]:
    members: list[PoolMember] = []
    unknown: list[str] = []
    for w in sorted(pool.workloads, key=lambda w: w.name):
        m = _member(w, facts[w.name]) if w.name in facts else None
        if m is None:
            unknown.append(w.name)
        else:
            members.append(m)
    out = PoolFacts(measured=tuple(m.name for m in members), unknown=tuple(unknown))
    if not members or unknown:
        return out, None
    out.cold_start_seconds = pool_cold_start(pool)
    known = extents(members) if keys is not None and root is not None else None
    parts = pooled_cache.Accumulator(_grid_size(grid_spec(known))) if known is not None else None
    try:
        out.grid, out.report = _pool_series(pool, members, out.cold_start_seconds, parts)
        figures = [_alone(m, out.cold_start_seconds) for m in members]
        out.member_sums = _sum_alone(figures)
    except PolicylintError:  # pragma: no cover - members are validated above
        return out, None
    if known is None or parts is None or not parts.exact or keys is None or root is None:
        return out, None
    assert out.grid is not None
    kept = {
        e[0]: pooled_cache.SumMember(keys[e[0]], e[1], e[2], e[3], alone)
        for e, alone in zip(known, figures, strict=True)
        if e[0] in keys
    }
    if len(kept) != len(members):
        return out, None
    loc = pooled_cache.locator(root, pool.qualified)
    return out, pooled_cache.build(loc, grid_spec(known), out.cold_start_seconds, kept, parts.total, parts.missing)


def _grid_size(spec: GridSpec) -> int:
    return max(0, spec.k1 - spec.k0)


def _queue_limit(pool: Pool) -> float | None:
    """The pool's ``queue.maxWaitSeconds`` (None when it declares no number)."""
    limit = (pool.spec.get("queue") or {}).get("maxWaitSeconds")
    return float(limit) if isinstance(limit, (int, float)) and not isinstance(limit, bool) else None


def _pool_series(
    pool: Pool, members: list[PoolMember], cold_start: float, parts: Any = None
) -> tuple[PooledGrid, PooledReport]:
    """The pool's grid and report at its capacity and queue limit (``parts`` sees each member's row)."""
    grid = align(members, parts)
    return grid, analyse_pool(grid, cold_start, capacity=float(pool.capacity_gpus), limit_seconds=_queue_limit(pool))


def _alone(member: PoolMember, cold_start_seconds: float) -> tuple[float | None, float | None, float | None, float | None]:
    """One workload's GPU bands alone at the pool's cold start: a pool of its own."""
    return pool_bands([member], cold_start_seconds)


def _sum_alone(
    figures: list[tuple[float | None, float | None, float | None, float | None]],
) -> tuple[float | None, float | None, float | None, float | None]:
    """Each workload's GPU bands alone, at the pool's cold start, summed (None when any is unknown).

    Each member is analysed as a pool of its own by the pooled calculator, so the
    sum differs from the pooled figure only by what pooling changes: a pool of
    one gives the same figures as its pooled series. Summed in member (name) order,
    whether the figures were computed now or kept by the pooled-sum cache.
    """
    totals: list[float | None] = [0.0, 0.0, 0.0, 0.0]
    for alone in figures:
        for i, value in enumerate(alone):
            current = totals[i]
            totals[i] = None if current is None or value is None else current + value
    return (totals[0], totals[1], totals[2], totals[3])


def _update_pool(
    pool: Pool, facts: dict[str, WorkloadFacts], entry: CachedPool, cache_dir: Path
) -> tuple[PoolFacts, PoolSum] | None:
    """The pool's demand from its kept sum, updated with the members that left and joined; None when it cannot be.

    Only the joining members' new series (in ``facts``) and the leaving members' old
    series (their series entries, by their old keys) are read; every other
    member's figures come from the kept sum. Anything that would make the result
    differ from summing afresh (see :mod:`policylint.measure.pooled_cache`) gives None.
    """
    base = entry.base
    if base is None:
        return None
    names = sorted(w.name for w in pool.workloads)
    if set(names) != set(entry.keys):
        return None
    cold = pool_cold_start(pool)
    if cold != base.cold_start:
        return None
    joining: list[tuple[PoolMember, pooled_cache.SumMember]] = []
    extent: dict[str, tuple[str, float, float, float]] = {}
    for w in sorted(pool.workloads, key=lambda w: w.name):
        if w.name in entry.joining:
            f = facts.get(w.name)
            m = _member(w, f) if f is not None else None
            ends = m.extent() if m is not None else None
            if m is None or ends is None:
                return None
            alone = _alone(m, cold)
            joining.append((m, pooled_cache.SumMember(entry.keys[w.name], float(m.step_seconds), ends[0], ends[1], alone)))
            extent[w.name] = (w.name, float(m.step_seconds), ends[0], ends[1])
        else:
            kept = base.members.get(w.name)
            f = facts.get(w.name)
            if kept is None or kept.key != entry.keys[w.name] or f is None or f.report is None:
                return None
            extent[w.name] = (w.name, kept.step, kept.first, kept.last)
    leaving: list[PoolMember] = []
    for name in entry.leaving:
        old = base.members[name]
        demand = measure_cache.load_demand(cache_dir, old.key)
        if demand is None:
            return None
        leaving.append(
            GpuMember(
                name, demand.times, demand.gpus, demand.step_seconds, 1.0, 1,
                gpus=demand.gpus, axis_start=demand.axis_start, axis_step=demand.axis_step,
            )
        )
        ends = leaving[-1].extent()
        if ends is None or (float(demand.step_seconds), ends[0], ends[1]) != (old.step, old.first, old.last):
            return None  # not the series the sum holds
    spec = grid_spec([extent[n] for n in names])
    updated = pooled_cache.update(base, spec, leaving, joining)
    if updated is None or sorted(updated.members) != names:
        return None
    out = PoolFacts(measured=tuple(names), unknown=(), cold_start_seconds=cold)
    out.grid = PooledGrid(times=spec.times(), step_seconds=spec.step, names=tuple(names), pooled=updated.pooled())
    out.report = analyse_pool(out.grid, cold, capacity=float(pool.capacity_gpus), limit_seconds=_queue_limit(pool))
    out.member_sums = _sum_alone([updated.members[n].alone for n in names])
    return out, updated


def _fill_demand(
    pool: Pool,
    facts: dict[str, WorkloadFacts],
    entry: CachedPool | None,
    cache_dir: Path | None,
    remeasure: Callable[[Workload, str], WorkloadFacts] | None,
) -> None:
    """Read back the series of the members that came without one (left out for a kept sum that could not be used)."""
    if entry is None or cache_dir is None:
        return
    for w in pool.workloads:
        f = facts.get(w.name)
        key = entry.keys.get(w.name)
        if f is None or f.demand is not None or f.report is None or key is None:
            continue
        hit = measure_cache.load(cache_dir, key)
        if hit is not None:
            f.demand = hit.demand
        elif remeasure is not None:
            facts[w.name] = remeasure(w, key)


def measure_pools(
    model: Model,
    facts: dict[str, WorkloadFacts],
    *,
    cache_dir: Path | None = None,
    cached: dict[str, CachedPool] | None = None,
    only: Needed | None = None,
    remeasure: Callable[[Workload, str], WorkloadFacts] | None = None,
) -> dict[str, PoolFacts]:
    """Pooled demand of every pool of the model (by ``cluster/pool``), computed once per run.

    ``cached`` is what :func:`policylint.measure.run.measure` found in the cache folder ``cache_dir``: a pool
    found there is taken as stored; a pool whose kept sum can be updated is updated
    (:mod:`policylint.measure.pooled_cache`); another with a key is computed and stored, its
    sum kept. ``only`` (None: every pool) computes just those pools. ``remeasure``
    measures a workload again whose series cannot be read back when a kept sum
    turns out unusable (its facts then came without the series).
    """
    out: dict[str, PoolFacts] = {}
    for pool in model.pools:
        if only is not None and pool.qualified not in only.pools:
            continue
        entry = (cached or {}).get(pool.qualified)
        if entry is not None and entry.facts is not None:
            out[pool.qualified] = entry.facts
            continue
        kept: PoolSum | None = None
        updated = _update_pool(pool, facts, entry, cache_dir) if entry is not None and cache_dir is not None else None
        if updated is not None:
            out[pool.qualified], kept = updated
        else:
            _fill_demand(pool, facts, entry, cache_dir, remeasure)
            keys = entry.keys if entry is not None and entry.key is not None and entry.keys else None
            out[pool.qualified], kept = _measure_pool(pool, facts, keys, model.root if keys else None)
        if cache_dir is not None and entry is not None and entry.key is not None:
            measure_cache.store_pool(cache_dir, entry.key, out[pool.qualified])
            if kept is not None:
                pooled_cache.store(cache_dir, kept)
    return out
