"""Facts of pooled demand: what pool, workload and proposal sheets get from a pool's workloads together.

The numbers come from :func:`policylint.measure.pools.measure_pools` (see
:mod:`policylint.measure.pooled`); this module turns them into plain facts for the rules:
the pooled bands next to the sum of the workloads' own bands (and a sentence that
compares them for messages), the pool's queue figures handed to each of its
workloads, and which workloads repeat another's measurement in the same pool.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from policylint.engine.checks import format_share
from policylint.engine.double_counts import column_basis, identity_fingerprint, repeats
from policylint.facts import Facts, fact

if TYPE_CHECKING:
    from policylint.measure.facts import PoolFacts
    from policylint.model import Pool
    from policylint.model.specs import NoBlock, ShareSpec


@dataclass(kw_only=True, eq=False)
class PooledPoolFacts(Facts):
    """A pool's pooled demand (see :mod:`policylint.measure.pooled`) next to the sums of its workloads' bands."""

    baseline_gpus: int | None = fact("pooled baseline band, GPUs (p95 of the sustained pooled GPU-demand series)", "GPUs")
    daily_gpus: int | None = fact("pooled daily band, GPUs (p99 of the sustained pooled GPU-demand series)", "GPUs")
    peak_gpus: int | None = fact("pooled peak band, GPUs (max of the pooled GPU-demand series)", "GPUs")
    sustained_max_gpus: int | None = fact("highest pooled GPU demand held for a whole pool cold-start window", "GPUs")
    baseline_gpus_sum: int | None = fact(
        "sum of the workloads' own baseline band GPUs (an upper bound of the pooled figure in most "
        "pools)",
    )
    daily_gpus_sum: int | None = fact("sum of the workloads' own daily band GPUs")
    peak_gpus_sum: int | None = fact("sum of the workloads' own peak band GPUs (never below the pooled peak)")
    sustained_max_gpus_sum: int | None = fact("sum of the workloads' own sustained-maximum GPUs")
    baseline_pooling: str | None = fact("text: the summed baselines and what pooling saves, for messages")
    daily_pooling: str | None = fact("text: the summed daily bands and what pooling saves, for messages")
    sustained_pooling: str | None = fact("text: the summed sustained maxima and what pooling saves, for messages")
    measured_workload_count: int = fact(
        "workloads of the pool whose GPU demand is measured (readable trace and per-GPU figure)",
    )
    rounding_gpus: float | None = fact(
        "GPUs rounding up to whole replicas adds to the pool's demand on average: the sum of its measured "
        "workloads' rounding_gpus_mean, unrounded",
        "GPUs",
    )
    rounding_share: float | None = fact(
        "rounding_gpus over the pooled baseline GPUs, unrounded (None when that baseline is unknown or zero)",
        "share",
    )
    sub_replica_workloads: int | None = fact(
        "measured workloads whose baseline needs less than one replica (baseline concurrency below "
        "one replica's per-GPU figure)",
    )
    pooled_window_days: float | None = fact(
        "days of pooled samples: time in which every workload of the pool has a usable sample",
        "days",
    )
    pooled_cold_start_seconds: float | None = fact("the pool's cold start: the longest effective cold start of its workloads", "s")
    pooled_step_seconds: float | None = fact("step of the pool's common grid (the finest workload step)", "s")
    pooled_noise_spikes: int | None = fact(
        "spikes of the pooled series above its baseline, narrower than the pool's cold start",
    )
    pooled_real_spikes: int | None = fact(
        "spikes of the pooled series above its baseline, at least as wide as the pool's cold start",
    )
    pooled_highest_spike_gpus: float | None = fact("height of the highest pooled spike above the pooled baseline, GPUs", "GPUs")
    max_wait_seconds: float | None = fact(
        "simulated max wait of the pooled GPU demand at reserved + elastic GPUs, seconds",
        "s",
    )
    p99_wait_seconds: float | None = fact(
        "simulated p99 wait of the pooled GPU demand at reserved + elastic GPUs, seconds",
        "s",
    )
    daily_max_wait_seconds: float | None = fact(
        "simulated max wait of the pooled demand cut at the pooled daily band, at reserved + "
        "elastic GPUs, seconds",
        "s",
    )
    daily_rejected_share: float | None = fact(
        "share of the pooled daily-band work the pool's queue turns away when it honours "
        "queue.maxWaitSeconds",
        "share",
    )


@dataclass(kw_only=True, eq=False)
class PooledWorkloadFacts(Facts):
    """What a workload takes from its pool and its neighbours there: the pooled queue, repeated measurements."""

    pool_capacity_gpus: int | None = fact("reserved + elastic GPUs of the workload's pool (the queue's capacity)", "GPUs", default=None)
    measured_pool_gpus: int | None = fact(
        "reserved + elastic GPUs of the pool the workload's measurements were taken on: with --diff, its "
        "pool as the base revision declares it (where the base placed the workload), else pool_capacity_gpus",
        "GPUs",
        default=None,
    )
    measured_pool_basis: str | None = fact(
        "text for messages: empty when measured_pool_gpus is today's capacity, else which revision it is from",
        default=None,
    )
    max_wait_seconds: float | None = fact(
        "simulated max wait in the pool's queue (pooled GPU demand at the pool's capacity), seconds",
        "s",
        default=None,
    )
    p99_wait_seconds: float | None = fact("simulated p99 wait in the pool's queue, seconds", "s", default=None)
    daily_max_wait_seconds: float | None = fact(
        "simulated max wait in the pool's queue for the pooled demand up to the pool's daily band, "
        "seconds (demand above it is the peak band, left to the pool's overflow policy)",
        "s",
        default=None,
    )
    daily_rejected_share: float | None = fact(
        "share of the pool's pooled daily-band work its queue turns away when it honours the pool's"
        " maxWaitSeconds (the pool's one fluid queue at reserved + elastic GPUs)",
        "share",
        default=None,
    )
    measurement_double_counted: bool | None = fact(
        "true when another workload of the same pool cites the same concurrency measurement (file "
        "and columns) and neither declares a share",
        default=None,
    )
    double_counted_with: str | None = fact("the workload of the same pool whose measurement this one repeats", default=None)
    double_count_basis: str | None = fact(
        "how the repeat was recognised: the same file, or a copy (another file holding the same "
        "series, by the series fingerprint) - text for messages",
        default=None,
    )
    measurement_share: float | None = fact("declared concurrency.share.fraction (None when not declared)", "share", default=None)
    durations_shared: bool | None = fact(
        "true when another workload of the repository, in this pool or another, reads the same jobs as its job "
        "durations (jobs_fingerprint); None without a measured job duration distribution",
        default=None,
    )
    durations_shared_with: str | None = fact(
        "the first other workload (by name) whose job durations are the same jobs", default=None
    )
    durations_shared_pool: str | None = fact(
        "text for messages: where durations_shared_with runs - 'the same pool', 'pool <cluster/pool>' or "
        "'no pool'",
        default=None,
    )
    queue_rejection_note: str | None = fact(
        "text for messages: what the pool's queue turns away when it honours queue.maxWaitSeconds "
        "(empty when unknown)",
        default=None,
    )


def _pooling(kind: str, pooled: int | None, summed: int | None) -> str | None:
    """Message text comparing a pooled band with the sum of the workloads' bands."""
    if summed is None:
        return None
    if pooled is None:
        return f"sum of workload {kind} {summed}"
    saved = summed - pooled
    if saved > 0:
        return f"sum of workload {kind} {summed}: pooling saves {saved}"
    if saved < 0:
        return f"sum of workload {kind} {summed}: pooled demand is {-saved} higher, the workloads are busy together"
    return f"sum of workload {kind} {summed}: pooling saves nothing"


def _int(x: float | None) -> int | None:
    # Pooled bands are order statistics of whole GPU counts: exact integers.
    return None if x is None else int(x)


def pooled_pool_facts(
    pooled: PoolFacts | None, sums: dict[str, int | None], rounding: tuple[float | None, int | None] = (None, None)
) -> PooledPoolFacts:
    """The pooled-demand facts of one pool (None where unknown); ``rounding`` is :func:`pool_rounding`'s."""
    r = pooled.report if pooled is not None else None
    known = r is not None and r.baseline is not None
    base = _int(r.baseline) if known and r else None
    daily = _int(r.daily) if known and r else None
    sustained = _int(r.sustained_max) if known and r else None
    return PooledPoolFacts(
        baseline_gpus=base,
        daily_gpus=daily,
        peak_gpus=_int(r.peak) if known and r else None,
        sustained_max_gpus=sustained,
        baseline_gpus_sum=sums["baseline"],
        daily_gpus_sum=sums["daily"],
        peak_gpus_sum=sums["peak"],
        sustained_max_gpus_sum=sums["sustained_max"],
        baseline_pooling=_pooling("baselines", base, sums["baseline"]),
        daily_pooling=_pooling("daily bands", daily, sums["daily"]),
        sustained_pooling=_pooling("sustained maxima", sustained, sums["sustained_max"]),
        measured_workload_count=len(pooled.measured) if pooled is not None else 0,
        rounding_gpus=rounding[0],
        rounding_share=rounding[0] / base if rounding[0] is not None and base else None,
        sub_replica_workloads=rounding[1],
        pooled_window_days=r.window_days if r else None,
        pooled_cold_start_seconds=r.cold_start_seconds if r else None,
        pooled_step_seconds=r.step_seconds if r else None,
        pooled_noise_spikes=r.noise_spike_count if known and r else None,
        pooled_real_spikes=r.real_spike_count if known and r else None,
        pooled_highest_spike_gpus=r.highest_spike if known and r else None,
        max_wait_seconds=r.queue.max_wait if r and r.queue else None,
        p99_wait_seconds=r.queue.p99_wait if r and r.queue else None,
        daily_max_wait_seconds=r.daily_queue.max_wait if r and r.daily_queue else None,
        daily_rejected_share=r.daily_rejected_share if r else None,
    )


def _rejection_note(pool: Mapping[str, Any]) -> str:
    """'; honouring ... it turns away N% ...' for messages, or '' when no limit or no queue is known."""
    share, limit = pool.get("daily_rejected_share"), pool.get("queue_max_wait_seconds")
    if share is None or limit is None:
        return ""
    return f"; honouring its wait limit of {limit:g} s the queue would turn away {format_share(share)} of the pool's daily-band work"


def _identities(pool: Pool, workloads: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The double-count verdict and declared share of every workload of ``pool`` with facts in ``workloads``.

    What a member's facts say about the pool's measurements, without its pooled demand:
    :func:`pool_workload_facts` hands these to every member, :func:`identity_facts` alone.
    """
    # repeats() looks only at the pool's own workloads: their fingerprints are all it needs
    members = {w.name: workloads[w.name] for w in pool.workloads if w.name in workloads}
    identities: dict[str, str | None] = {}
    series: dict[str, str | None] = {}
    shapes: dict[str, str | None] = {}
    samples: dict[str, str | None] = {}
    for n, f in members.items():  # one pass over the members for the four fingerprints
        identities[n] = identity_fingerprint(f)
        series[n] = f.get("series_fingerprint")
        shapes[n] = f.get("shape_fingerprint")
        samples[n] = f.get("samples_fingerprint")
    found = repeats(pool, identities, series, shapes, samples)
    # a summed column that is another member's whole series (red team, 2026-12-06, round 11: two
    # columns copied from the pool's other traces added 23 GPUs)
    # each print's holders, first name first (the first one other than the member itself is its partner):
    # built once, not once per member (quadratic in a pool whose every trace sums columns)
    # A column (or group of columns) holding another member's series scaled or shifted rises and falls
    # where that series does: its shape print is that member's (round 14: a column of a copy times two).
    for key, prints, scaled in (("part_fingerprints", identities, False), ("part_shapes", shapes, True)):
        holding: dict[str, list[str]] = {}
        for other, printed in sorted(prints.items()):
            if printed:
                holding.setdefault(printed, []).append(other)
        for n, f in members.items():
            parts = f.get(key)
            if not parts or n in found:
                continue
            for i, printed in enumerate(parts):
                holder = next((other for other in holding.get(printed, ()) if other != n), None) if printed else None
                if holder is not None:
                    found[n] = (holder, column_basis(pool, n, i, holder, scaled=scaled, labels=f.get("part_labels")))
                    break
    out: dict[str, dict[str, Any]] = {}
    for w in pool.workloads:
        if w.name not in members:
            continue
        declared: ShareSpec | NoBlock = (w.spec.get("concurrency") or {}).get("share") or {}
        share = declared.get("fraction")
        out[w.name] = {
            "measurement_double_counted": w.name in found,
            "double_counted_with": found[w.name][0] if w.name in found else None,
            "double_count_basis": found[w.name][1] if w.name in found else None,
            "measurement_share": float(share) if isinstance(share, (int, float)) else None,
        }
    return out


#: the workload facts :func:`durations_shared` sets (PL984): whole-repository facts, like a near copy's
DURATIONS_FACTS: frozenset[str] = frozenset({"durations_shared", "durations_shared_with", "durations_shared_pool"})


def durations_shared(sheets: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """PL984's facts of every workload in ``sheets`` (name -> its fact sheet): who else reads the same jobs.

    Grouped by ``jobs_fingerprint`` across the whole repository, not pool by pool: a list
    borrowed from a workload of another pool is borrowed all the same (it sets this
    workload's tail, buffer and GPUs per job), and there it also raises the other pool's
    PL603 ceiling. ``sheets`` must hold every workload that may share a list with one whose
    verdict is wanted: a whole run's sheets, or a narrowed run's with its job-list partners
    (:func:`policylint.engine.copy_reach.jobs_partners`). A workload without a measured
    duration distribution has None.
    """
    by_jobs: dict[str, list[str]] = {}
    for n, f in sheets.items():
        printed = f.get("jobs_fingerprint")
        if printed:
            by_jobs.setdefault(str(printed), []).append(n)
    with_: dict[str, str] = {}
    for names in by_jobs.values():
        if len(names) > 1:
            ordered = sorted(names)
            for n in ordered:
                with_[n] = next(o for o in ordered if o != n)
    out: dict[str, dict[str, Any]] = {}
    for n, f in sheets.items():
        other = with_.get(n)
        where = None
        if other is not None:
            theirs = sheets[other].get("pool")
            where = "the same pool" if theirs is not None and theirs == f.get("pool") else (
                f"pool {theirs}" if theirs is not None else "no pool")
        out[n] = {
            "durations_shared": (other is not None) if f.get("durations_measured") else None,
            "durations_shared_with": other,
            "durations_shared_pool": where,
        }
    return out


def identity_facts(pool: Pool, workloads: Mapping[str, Mapping[str, Any]]) -> dict[str, PooledWorkloadFacts]:
    """What every workload of ``pool`` takes from it when its pooled demand is not measured: the identity part only.

    For a narrowed run's near-copy partners (:mod:`policylint.engine.copy_reach`), which are
    judged by the near-copy rules alone: those read whether a workload repeats another of its
    pool and what share it declares, never the pool's queue figures (left None here).
    """
    return {name: PooledWorkloadFacts(**part) for name, part in _identities(pool, workloads).items()}


def pool_workload_facts(
    pool: Pool, pool_facts: Mapping[str, Any], workloads: Mapping[str, Mapping[str, Any]]
) -> dict[str, PooledWorkloadFacts]:
    """What every workload of ``pool`` (with facts in ``workloads``) takes from it: the queue figures, the double-count verdict."""
    parts = _identities(pool, workloads)
    if not parts:
        return {}
    # the pool's figures, the same for every member: read once
    capacity, max_wait = pool_facts["capacity_gpus"], pool_facts["max_wait_seconds"]
    p99_wait, daily_wait = pool_facts["p99_wait_seconds"], pool_facts["daily_max_wait_seconds"]
    rejected, note = pool_facts["daily_rejected_share"], _rejection_note(pool_facts)
    return {
        name: PooledWorkloadFacts(
            pool_capacity_gpus=capacity,
            measured_pool_gpus=capacity,
            measured_pool_basis="",
            max_wait_seconds=max_wait,
            p99_wait_seconds=p99_wait,
            daily_max_wait_seconds=daily_wait,
            daily_rejected_share=rejected,
            queue_rejection_note=note,
            **part,
        )
        for name, part in parts.items()
    }
