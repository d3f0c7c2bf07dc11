"""Derivations: each planned pool with its figures and the measurement, band and rule behind every number.

:func:`planned_pool` sizes a final pool by the full pooled analysis (the same one
``check`` runs on the planned repository) and writes down why each member sits there,
what pooling saves, and every number's derivation; :func:`unmeasured_pool` holds the
workloads without measured GPU demand; :func:`apply_depths` sets the queue depths from
the planned repository's own views.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from policylint.measure.cold_start import pool_cold_start
from policylint.plan.grouping import (
    Group,
    common_nodes,
    is_reject,
    pool_gang,
    reason,
    runs_gang_jobs,
    tightest,
)
from policylint.plan.models import Plan, PlannedPool, Thresholds, WhatIf, plain
from policylint.plan.search import Candidate
from policylint.plan.sizing import Capacity, size, trial, trial_spec

if TYPE_CHECKING:
    from policylint.measure.facts import WorkloadFacts
    from policylint.model import Workload

__all__ = ["apply_depths", "planned_pool", "unmeasured_pool"]


def planned_pool(
    group: Group,
    name: str,
    members: list[str],
    planned: Mapping[str, Workload],
    facts: Mapping[str, WorkloadFacts],
    whatif: WhatIf,
    tol: Mapping[str, float | None],
    th: Thresholds,
    alone: Mapping[str, Candidate],
    why: Mapping[str, str],
) -> PlannedPool | None:
    """The pool of ``members`` sized from their pooled series; None when that series has no bands.

    ``alone`` is each member judged as a pool of its own (the search's figures); ``why``
    says what kept a workload the search left alone there.
    """
    gpu = group.gpu
    tols = [tol[n] for n in members]
    tight = tightest(tols)
    reject = is_reject(group)
    sized = size([planned[n] for n in members], facts, whatif, None if reject else tight, gpu)
    if not sized.ok or sized.sized is None:
        return None
    c = sized.sized
    nodes, namespaces = common_nodes(planned[n].pool for n in members)
    tails = {n: facts[n].tail_ratio for n in members}
    preempt = sorted(n for n, t in tails.items() if t is not None and t >= th.max_tail_ratio)
    known = [t for t in tols if t is not None]
    patient = max(known) if known else None
    pool = PlannedPool(
        cluster=group.cluster,
        name=name,
        cls=group.cls,
        gpu=gpu,
        tier=group.tier,
        gang=pool_gang((planned[n] for n in members), facts),
        preemption=bool(preempt),
        members=tuple(members),
        measured=True,
        reserved=c.reserved,
        elastic=c.capacity - c.reserved,
        cold_start_seconds=sized.cold_start,
        overflow="reject" if reject else "queue",
        max_wait_seconds=patient if patient is not None else sized.cold_start,
        nodes=nodes,
        namespaces=namespaces,
    )
    r = sized.facts.report
    assert r is not None and r.baseline is not None and r.daily is not None and r.peak is not None
    sums = sized.facts.member_sums
    pool.bands = {
        "baseline_gpus": int(r.baseline),
        "daily_gpus": int(r.daily),
        "peak_gpus": int(r.peak),
        "sustained_max_gpus": int(r.sustained_max or 0),
        "highest_spike_gpus": int(r.highest_spike),
        "real_spikes": r.real_spike_count,
        "noise_spikes": r.noise_spike_count,
        "step_seconds": r.step_seconds,
        "window_days": round(r.window_days, 3),
        "sum_of_member_bands_gpus": None
        if sums is None or None in sums[:3]
        else {"baseline": int(sums[0] or 0), "daily": int(sums[1] or 0), "peak": int(sums[2] or 0)},
    }
    apart = [alone[n] for n in members]
    pool.apart = {"reserved": sum(a.reserved for a in apart), "capacity": sum(a.capacity for a in apart)}
    pool.reasons = {
        n: reason(group, planned[n], tol[n], why[n] if len(members) == 1 else None, runs_gang_jobs(planned[n], facts))
        for n in members
    }
    cold_rule = (
        f"pool cold start = the longest effective cold start of its workloads ({sized.cold_start_source}); "
        + (
            "elastic GPUs must serve within it, or the bursts the daily band counts end before they arrive"
            if pool.elastic
            else "the pool has no elastic capacity, so it is only the window of its bands"
        )
    )
    if whatif.cold_start_seconds is not None:
        cold_rule += f"; what-if: every workload's cold start set to {whatif.cold_start_seconds:g} s"
    measurement = f"pooled GPU demand of {', '.join(members)} over {r.window_days:.1f} days at {r.step_seconds:g} s steps"
    pool.derivation = {
        "reservedGpus": {
            "value": pool.reserved,
            "band": "baseline",
            "band_gpus": int(r.baseline),
            "measurement": measurement,
            "rule": "reserved = pooled baseline band (p95 of the demand sustained for a whole cold start)"
            + ("" if whatif.headroom == 0 else f" + {whatif.headroom:.0%} headroom, rounded down"),
        },
        "elastic.maxGpus": {
            "value": pool.elastic,
            "band": "daily",
            "band_gpus": int(r.daily),
            "measurement": measurement,
            "rule": f"elastic = capacity - reserved; capacity = {c.rule}" + _queueing_note(c, tight),
            "capacity_gpus": c.capacity,
            "tolerance_capacity_gpus": c.tolerance_capacity,
            "tightest_tolerance_seconds": tight,
            "sized_by": "tolerance" if c.by_tolerance and c.capacity < c.daily else "daily band",
            "queueing_saves_gpus": c.queueing_saves,
        },
        "elastic.coldStartSeconds": {"value": plain(sized.cold_start), "rule": cold_rule},
        "overflow": {
            "value": pool.overflow,
            "rule": (
                f"real-time pool (every workload tolerates at most {th.realtime_seconds:g} s): demand above the daily band"
                " cannot wait, callers retry"
                if reject
                else "the workloads can wait: demand above the daily band queues"
            ),
        },
        "queue.maxWaitSeconds": {
            "value": plain(pool.max_wait_seconds),
            "rule": "the longest tolerance of the pool's workloads: the queue never turns away work that could still wait"
            if patient is not None
            else "no workload declares a tolerance: the queue holds work for one cold start",
            "measurement": "tolerance.maxQueueSeconds of each workload"
            + ("" if not whatif.tolerances else " (what-if values where --tolerance names it)"),
            "per_workload": {n: tol[n] for n in members},
        },
        "scheduling.gang": _gang_derivation(members, planned, facts),
        "scheduling.preemption": {
            "value": pool.preemption,
            "rule": (
                f"p99 job duration at least {th.max_tail_ratio:g} x p50 for {', '.join(preempt)}:"
                " preemption reclaims GPUs from long-tail jobs"
            )
            if preempt
            else "no job-duration tail needs protection",
        },
    }
    return pool


def _gang_derivation(members: list[str], planned: Mapping[str, Workload], facts: Mapping[str, WorkloadFacts]) -> dict[str, Any]:
    """Why a planned pool does or does not declare gang scheduling: the members whose jobs hold several GPUs."""
    gangs = [n for n in members if runs_gang_jobs(planned[n], facts)]
    if not gangs:
        return {"value": False, "rule": "no job holds more than one GPU"}
    rule = "training or batch jobs holding more than one GPU are admitted all-or-nothing"
    if len(gangs) < len(members):
        rule += (
            f" ({', '.join(gangs)}); the one-GPU jobs pooled with them are gangs of one, and every job's GPUs count"
            " in the pooled series as check counts them"
        )
    return {"value": True, "rule": rule}


def _queueing_note(c: Capacity, tight: float | None) -> str:
    """What sizing by the tolerance would save, when the plan does not apply it."""
    saves = c.queueing_saves
    if c.by_tolerance or not saves or c.queued is None or tight is None:
        return ""
    return (
        f"; queueing would save {saves} GPUs: at {c.queued} in all the daily-band demand waits at most {tight:g} s,"
        " but the framework's elastic band is the daily band minus the baseline, so it is not applied"
        " (--size-queues-by-tolerance applies it)"
    )


def unmeasured_pool(
    group: Group,
    name: str,
    members: list[str],
    planned: Mapping[str, Workload],
    facts: Mapping[str, WorkloadFacts],
    tol: Mapping[str, float | None],
    th: Thresholds,
) -> PlannedPool:
    """A pool without GPUs for the workloads whose GPU demand is not measured: measure first."""
    nodes, namespaces = common_nodes(planned[n].pool for n in members)
    preempt = sorted(
        n for n in members if (f := facts.get(n)) is not None and f.tail_ratio is not None and f.tail_ratio >= th.max_tail_ratio
    )
    known = [t for n in members if (t := tol[n]) is not None]
    # the cold start of the members together in a pool without elastic capacity, as a measured one gets it
    cold = pool_cold_start(trial([planned[n] for n in members], trial_spec(group.cls, group.gpu)))
    pool = PlannedPool(
        cluster=group.cluster,
        name=name,
        cls=group.cls,
        gpu=group.gpu,
        tier=group.tier,
        gang=pool_gang((planned[n] for n in members), facts),
        preemption=bool(preempt),
        members=tuple(members),
        measured=False,
        overflow="reject" if is_reject(group) else "queue",
        max_wait_seconds=max(known) if known else cold,
        nodes=nodes,
        namespaces=namespaces,
    )
    why = (
        "no measured GPU demand (a readable concurrency trace covering at least one cold start, and a per-GPU"
        " figure): no GPUs until it is measured"
    )
    pool.reasons = {n: why for n in members}
    pool.derivation = {
        "reservedGpus": {"value": 0, "rule": why},
        "queue.maxWaitSeconds": {"value": plain(pool.max_wait_seconds), "rule": "the longest declared tolerance"},
    }
    return pool


def apply_depths(plan: Plan, needed: Mapping[str, int | None]) -> None:
    """Set each pool's ``queue.maxDepth`` to the most its workloads' spikes need (workload -> depth).

    ``needed`` is the ``queue_depth_needed`` fact of every workload in the planned
    repository: the depth ``check`` derives from the measured spike heights above the
    workload's share of the planned capacity (PL206).
    """
    for p in plan.pools:
        depths = {n: needed.get(n) for n in p.members}
        known = {n: d for n, d in depths.items() if d is not None}
        p.max_depth = max(known.values(), default=0)
        top = sorted(known, key=lambda n: (-known[n], n))
        entry: dict[str, Any] = {
            "value": p.max_depth,
            "rule": "the highest spike above a workload's share of the planned capacity, in its own requests or jobs"
            " (the depth check requires, PL206)"
            + (f"; set by {top[0]}" if top and p.max_depth else ""),
            "measurement": "each workload's highest usable concurrency sample (the top of its spikes), less its"
            " share of the planned capacity (split by baseline GPUs) in requests or jobs",
            "per_workload": {n: known.get(n) for n in sorted(depths)},
        }
        p.derivation["queue.maxDepth"] = entry
