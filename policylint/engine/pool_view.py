"""The fact sheet of one pool: its declared capacity and limits, its workloads, their pooled demand.

:func:`pool_view` builds a pool's :class:`~policylint.engine.sheets.PoolFactSheet` from
the sheets of its workloads, the GPUs proposals ask for it and its pooled demand
(:func:`policylint.measure.measure_pools`); :data:`POOL_FACT_PLACES` says where in the
pool's document (a ``Cluster`` pool or a scheduler queue) a finding on each fact points.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from policylint.engine.pooled_facts import pooled_pool_facts
from policylint.engine.sheets import PoolFactSheet, QueueNeed, WorkloadFactSheet, WorkloadTolerance
from policylint.engine.view import History, View
from policylint.engine.workload_view import gpus, num, to_gpus
from policylint.model import POOL_PLACES, pool_capacity
from policylint.model.schedulers import pool_facts

if TYPE_CHECKING:
    from policylint.measure.facts import PoolFacts
    from policylint.model import Pool
    from policylint.model.specs import ElasticSpec, NoBlock

#: Where a finding on a pool fact points: the place (:data:`policylint.model.POOL_PLACES`) it is
#: written at, for a Cluster pool and a scheduler queue alike. Facts not named here point at the
#: pool's name.
POOL_FACT_PLACES: dict[str, str] = {
    "name": "name",
    "reserved_gpus": "reserved",
    "committed_gpus": "reserved",
    "held_gpus": "reserved",
    "reserved_gpus_before": "reserved",  # before and now compared where the reserved GPUs are written
    "capacity_gpus_before": "reserved",
    "owned_gpus": "reserved",
    "owned_gpus_before": "reserved",
    "owned_gpus_allowed": "reserved",
    "owned_and_proposed_gpus": "reserved",  # a raise asked for by a proposal too: where the pool's own GPUs are written
    "owned_and_proposed_gpus_before": "reserved",
    "measured_allowance_gpus": "reserved",
    "gpu_model_changed": "gpu",
    "gpu_model_before": "gpu",
    "elastic_gpus": "elastic",
    "capacity_gpus": "capacity",
    "committed_capacity_gpus": "capacity",
    "sustained_max_gpus": "capacity",
    "measured_workload_count": "demand",
    "unmeasured_workloads": "demand",
    "unjudged_gpus": "demand",
    "rounding_share": "demand",
    "rounding_gpus": "demand",
    "pooled_window_days": "name",
    "unread_documents": "name",
    "unread_count": "name",
    "overflow": "overflow",
    "queue_max_depth": "queue",
    "queue_max_wait_seconds": "queue",
    "queue_needs": "queue_needs",
    # where PL206 and PL207 point: the limit that is too small
    "queue_depth_limit": "queue_depth",
    "queue_wait_limit": "queue_wait",
    "gang": "gang",
    "preemption": "preemption",
    "buffer_gpus": "buffer",
    "buffer_needed_gpus": "buffer",
    "multi_gpu_jobs": "scheduling",
    "serves": "serves",
    "classes": "serves",
    "tolerance_spread": "name",
    "resident_gib_total": "gpu",
    "memory_gib_total": "gpu",
    "resident_gib_per_gpu": "gpu",
    "reclaims_in_time": "reclaim",
    # integrity (plausibility) of a pool: the GPU it declares, the gangs it admits, its queue's own limits
    "gpu_memory_contradiction": "gpu",
    "largest_gang_gpus": "capacity",
    "queue_contradiction_count": "capacity",
}


def _check_fact_places() -> None:
    """Every mapped pool fact is a known fact at a known place; fails at start-up, not with a lost finding."""
    facts = set(PoolFactSheet.routes()) | {"queue_depth_limit", "queue_wait_limit"}  # limits: finding places only
    bad = sorted(f for f in POOL_FACT_PLACES if f not in facts)
    bad += sorted(f"{f} -> {p}" for f, p in POOL_FACT_PLACES.items() if p not in POOL_PLACES)
    if bad:
        raise RuntimeError(f"pool facts mapped to unknown facts or places: {', '.join(bad)}")


_check_fact_places()


def _sum(values: list[int | None]) -> int | None:
    if not values or any(x is None for x in values):
        return None
    return int(sum(x for x in values if x is not None))


def _sustained_sum(wv: list[WorkloadFactSheet]) -> int | None:
    """``_sum`` of every workload's sustained maximum in GPUs (:func:`gpus`), converted in one array.

    The same conversion element by element (:func:`policylint.calc.gpus.gpu_counts`), so the
    same whole numbers; a figure the conversion refuses is converted one by one, raising
    as it always did.
    """
    import numpy as np

    from policylint.calc.gpus import gpu_counts

    values: list[float] = []
    pers: list[float] = []
    replicas: list[int] = []
    unknown = not wv
    for f in wv:
        per_gpu, per_replica = to_gpus(f)
        if f.sustained_max is None or not per_gpu:
            unknown = True
            continue
        values.append(f.sustained_max)
        pers.append(per_gpu)
        replicas.append(per_replica)
    try:
        with np.errstate(invalid="ignore"):
            counts = gpu_counts(np.array(values, dtype=np.float64), np.array(pers, dtype=np.float64), np.array(replicas, dtype=np.float64))
            whole = counts.astype(np.int64)
    except Exception:  # noqa: BLE001 - refused figures: one by one, as before
        return _sum([gpus(f.sustained_max, *to_gpus(f)) for f in wv])
    if not np.all(counts < 2.0**63):  # NaN or past int64: one by one, with the warnings they give
        return _sum([gpus(f.sustained_max, *to_gpus(f)) for f in wv])
    return None if unknown else int(sum(whole.tolist()))


def pool_rounding(wv: list[WorkloadFactSheet]) -> tuple[float | None, int | None]:
    """What rounding to whole replicas adds to a pool's demand on average, and how many workloads need under one replica.

    The sum, in name order, of each workload's ``rounding_gpus_mean``
    (:func:`policylint.calc.gpus.mean_rounding` of its cleaned demand): means add up, so
    that is what rounding adds to the pooled series on average. And the number of those
    workloads whose baseline concurrency is below one replica's per-GPU figure. (None,
    None) when no workload has a figure.
    """
    total = 0.0
    small = 0
    counted = 0
    for f in wv:
        if f.rounding_gpus_mean is None:
            continue
        total += f.rounding_gpus_mean
        counted += 1
        per_gpu, _ = to_gpus(f)
        if per_gpu and f.baseline is not None and 0 < f.baseline < per_gpu:
            small += 1
    return (total, small) if counted else (None, None)


#: the tail ratio (p99 / p50 of job durations) from which a pool needs a buffer or preemption: the
#: framework's figure (input 7), and PL601's default ``max_tail_ratio``
TAIL_RATIO = 20.0


def _buffer_needed(wv: list[WorkloadFactSheet], preempts: bool) -> tuple[int, str]:
    """The GPUs of the largest long-tail job a pool's buffer must hold, and where that figure comes from.

    The framework asks for a buffer only where job durations have a long tail (p99 at least
    :data:`TAIL_RATIO` times p50) and the pool cannot preempt; then the buffer holds one
    long-tail job, the figure PL601 asks of it (``tail_job_gpus``: the largest job at or above
    the p99 duration, never less than gpusPerReplica), over the training and batch workloads
    that give their job durations; the first name in order on a tie. 0 otherwise: a buffer
    where no tail needs one, or beside preemption, holds GPUs nothing asks for (red team,
    2026-12-06: 64 GPUs on a pool whose tails were 3-4x, with preemption, passed).
    """
    if preempts:
        return 0, "the pool preempts, so a long-tail job reclaims its GPUs without a buffer"
    gpus, name, measured = 0, None, False
    for f in wv:
        if f.workload_class not in ("training", "batch") or not f.durations_measured:
            continue
        measured = True
        if f.tail_ratio is not None and f.tail_ratio >= TAIL_RATIO and f.tail_job_gpus > gpus:
            gpus, name = f.tail_job_gpus, f.name
    if name is None:
        if measured:
            return 0, (f"none of its training or batch workloads has a long tail of job durations (p99 at least"
                       f" {TAIL_RATIO:g} times the median), so no job needs it")
        return 0, "none of its training or batch workloads gives job durations, so no measured job needs it"
    return gpus, f"the largest long-tail job, workload {name}'s, takes {gpus}"


def _committed_parts(pool: Pool, proposed: int) -> str:
    """The parts of ``committed_gpus`` for messages: reserved (+ lent quota taken back) + proposed."""
    taken_back = pool.held_gpus - pool.reserved_gpus
    lent = f" + {taken_back} lent to the cohort and taken back by preemption" if taken_back else ""
    return f"reserved {pool.reserved_gpus}{lent} + proposed {proposed}"


def _floor_advice(pool: Pool, baseline: int | None) -> str:
    """How the pool can hold its baseline band (PL104's hint). GPUs the pool owns that do not hold it - quota a
    Kueue flavor lends and never takes back, a Volcano parent's guarantee that no other queue may use
    (:attr:`~policylint.model.Pool.parent_only_gpus`) - are put to work before any is bought, as PL801 counts them
    owned (red team, 2026-12-07: the two rules' advice must not contradict each other)."""
    if baseline is None:
        return "reserve (or propose) GPUs for the pooled baseline"
    lent_out = pool.lent_gpus if pool.held_gpus == pool.reserved_gpus else 0  # lent, never taken back
    above = pool.parent_only_gpus
    if not lent_out and not above:
        return f"reserve (or propose) at least {baseline} GPUs"
    owned = pool.held_gpus + lent_out + above
    steps = []
    if lent_out:
        to = " to 0" if owned < baseline else ""  # short of the baseline: all it owns must hold it
        steps.append(f"lower its lendingLimit{to} or take lent quota back by preemption (reclaimWithinCohort: Any)")
    if above:
        where = "its parent queues' guarantee"
        if lent_out:  # how much to move depends on how much less it lends: the user's choice
            amount = f"up to {above}"
        else:
            need = min(above, max(0, baseline - pool.held_gpus))
            amount = f"{need} of the {above}" if need < above else f"the {above}"
        steps.append(f"move {amount} GPUs of {where} that no other queue may use into its own guarantee")
    if owned >= baseline:
        if lent_out and not above:
            return (f"it owns {owned} GPUs of nominal quota: lower its lendingLimit to {owned - baseline} or take lent"
                    " quota back by preemption (reclaimWithinCohort: Any) - no GPU needs buying")
        return f"it owns {owned} GPUs: {' and '.join(steps)} - no GPU needs buying"
    return f"{' and '.join(steps)}, and propose the {baseline - owned} GPUs of the baseline it does not own"


def pool_view(
    pool: Pool, workloads: Mapping[str, WorkloadFactSheet], proposed: int, pooled: PoolFacts | None = None
) -> tuple[View, PoolFactSheet]:
    """The view of one pool and its fact sheet, from its workloads' sheets (``workloads``, by name)."""
    spec = pool.spec
    elastic: ElasticSpec | NoBlock = spec.get("elastic") or {}
    queue = spec.get("queue") or {}
    sched = spec.get("scheduling") or {}
    names = sorted(w.name for w in pool.workloads)
    wv = [workloads[n] for n in names]
    reserved = pool.reserved_gpus
    elastic_gpus = pool.elastic_gpus
    tolerances = [f.tolerance_seconds for f in wv if f.tolerance_seconds is not None]
    spread = None
    if len(tolerances) >= 2:
        lo, hi = min(tolerances), max(tolerances)
        spread = math.inf if lo <= 0 else hi / lo  # unrounded: the verdict compares it exactly
    memory = num((spec.get("gpu") or {}).get("memoryGiB"))
    resident: list[float | None] = []
    for f in wv:
        if f.workload_class != "inference":
            continue
        if f.vram_resident_gib is None or f.baseline_gpus is None:
            resident.append(None)
            continue
        replicas = max(1, math.ceil(f.baseline_gpus / max(1, f.gpus_per_replica)))
        resident.append(f.vram_resident_gib * replicas)
    # Shared GPUs (multi-model serving): any GPU may be asked to hold every model, so
    # their memory adds up. Exclusive GPUs hold one replica each: the largest model decides.
    sharing = spec.get("sharing", "exclusive")
    per_gpu_resident = [
        f.vram_resident_gib / max(1, f.gpus_per_replica)
        for f in wv
        if f.workload_class == "inference" and f.vram_resident_gib is not None
    ]
    needed_buffer = _buffer_needed(wv, bool(sched.get("preemption")))
    unmeasured = [f.name for f in wv if f.baseline_gpus is None]
    committed_capacity = pool_capacity(reserved + proposed, elastic_gpus)  # the one definition, once bought
    sums = {
        "baseline": _sum([f.baseline_gpus for f in wv]),
        "daily": _sum([f.daily_gpus for f in wv]),
        "peak": _sum([f.peak_gpus for f in wv]),
        "sustained_max": _sustained_sum(wv),
    }
    if pooled is not None and pooled.member_sums is not None:
        # The workloads' bands at the pool's own cold start: the same window as the pooled figure.
        for name, value in zip(("baseline", "daily", "peak", "sustained_max"), pooled.member_sums):
            sums[name] = None if value is None else int(value)
    v = PoolFactSheet(
        name=pool.name,
        cluster=pool.cluster.name,
        qualified=pool.qualified,
        reserved_gpus=reserved,
        elastic_gpus=elastic_gpus,
        capacity_gpus=pool.capacity_gpus,
        proposed_gpus=proposed,
        held_gpus=pool.held_gpus,
        committed_gpus=pool.held_gpus + proposed,
        committed_parts=_committed_parts(pool, proposed),
        floor_advice="",  # the baseline is known below
        committed_capacity_gpus=committed_capacity,
        gpu_memory_gib=memory,
        serves=list(spec.get("serves") or []),
        classes=sorted({f.workload_class for f in wv}),
        workload_names=names,
        workload_count=len(names),
        unmeasured_workloads=unmeasured,
        unmeasured_count=len(unmeasured),
        unjudged_gpus=committed_capacity if unmeasured and len(unmeasured) < len(wv) else 0,
        unmeasured_verb="has" if len(unmeasured) == 1 else "have",
        overflow=spec.get("overflow"),
        queue_max_depth=queue.get("maxDepth"),
        queue_max_wait_seconds=num(queue.get("maxWaitSeconds")),
        gang=sched.get("gang"),
        preemption=sched.get("preemption"),
        buffer_gpus=pool.buffer_gpus if "bufferGpus" in spec else None,
        buffer_needed_gpus=needed_buffer[0],
        buffer_need=needed_buffer[1],
        buffer_excess_gpus=max(0, pool.buffer_gpus - needed_buffer[0]),
        multi_gpu_training=any(f.workload_class == "training" and f.multi_gpu_job for f in wv),
        tolerance_min_seconds=min(tolerances) if tolerances else None,
        tolerance_max_seconds=max(tolerances) if tolerances else None,
        tolerance_spread=spread,
        resident_gib_total=None if (not resident or None in resident) else sum(r for r in resident if r),
        memory_gib_total=reserved * memory if memory is not None else None,
        resident_gib_per_gpu=(
            (sum(per_gpu_resident) if sharing == "shared" else max(per_gpu_resident)) if per_gpu_resident else None
        ),
        sharing=sharing,
        multi_gpu_jobs=[f.name for f in wv if f.multi_gpu_job],
        workload_tolerances=[
            WorkloadTolerance(name=f.name, tolerance_seconds=f.tolerance_seconds)
            for f in wv
            if f.tolerance_seconds is not None
        ],
        queue_needs=[
            QueueNeed(
                name=f.name,
                queue_depth_needed=f.queue_depth_needed,
                tolerance_seconds=f.tolerance_seconds,
                daily_rejected_share=f.pooled.daily_rejected_share,
            )
            for f in wv
        ],
        scheduler_queue_facts=pool_facts(pool),
        pooled=pooled_pool_facts(pooled, sums, pool_rounding(wv)),
    )
    v.floor_advice = _floor_advice(pool, v.pooled.baseline_gpus)
    # The queue is the pool's: what it turns away is the pooled figure, for every workload.
    for need in v.queue_needs:
        need["daily_rejected_share"] = v.pooled.daily_rejected_share
    paths = {fact: pool.place(place) for fact, place in POOL_FACT_PLACES.items()}
    return View("pool", f"pool {pool.qualified}", pool.doc, pool.place("name"), v, paths), v


def history_facts(
    sheet: PoolFactSheet, pool: Pool, history: History | None, members: Mapping[str, WorkloadFactSheet] | None = None
) -> None:
    """What the pool looked like at the ``--diff`` base: its reserved GPUs, capacity and GPU model then, whether its
    evidence changed, and the demand of the members placed elsewhere then (``members``: their sheets)."""
    if history is None:
        return
    cited = [(m.display, os.path.realpath(m.path)) for w in pool.workloads for m in w.measurements.values()
             if m.path is not None]
    sheet.evidence_changed = any(real in history.changed_files for _, real in cited)
    sheet.reserved_gpus_before = history.reserved_before.get(pool.qualified)
    then = history.pools_then.get(pool.qualified)
    unreadable = history.unreadable.get(pool.qualified) if then is None else None
    if then is None and unreadable is None:
        return
    sheet.owned_gpus = pool.owned_gpus
    if then is not None:
        sheet.capacity_gpus_before, sheet.owned_gpus_before = then.capacity_gpus, then.owned_gpus
    lent = pool.owned_gpus - pool.reserved_gpus
    sheet.owned_phrase = (
        f"reserves {pool.reserved_gpus} GPU{'s' if pool.reserved_gpus != 1 else ''}" if not lent
        else f"owns {pool.owned_gpus} GPUs of nominal quota ({lent} of them lendable, so {pool.reserved_gpus} read as reserved)"
    )
    if pool.buffer_gpus:
        sheet.owned_phrase += f" and keeps {pool.buffer_gpus} more free as a buffer"
    split = history.split_owned.get(pool.qualified)
    carved = history.carved.get(pool.qualified)
    if split is not None:
        # a pool split in the change answers for the whole: what the pieces own together
        sheet.owned_gpus = split[0]
        why = f": {carved}" if carved else ""
        sheet.owned_phrase += f", {split[0]} with {', '.join(split[1])} (split from the same pool at the base revision{why})"
    elif carved:
        sheet.owned_phrase += f" ({carved})"
    # and what it will own once its proposals are delivered, then and now: a raise asked for is a raise
    owned, asked = history.planned.get(pool.qualified, (sheet.owned_gpus, 0))
    sheet.owned_and_proposed_gpus = owned + asked
    moved, cohort = history.moved_to_cohort.get(pool.qualified, (0, ""))
    if moved:
        sheet.owned_phrase += (f", plus {moved} of its nominal quota moved into Kueue Cohort quota in this change"
                               f" (it borrows from {cohort}; still its own here){'' if asked else f', {owned} in all'}")
    if pool.buffer_gpus and not (asked or moved or split is not None):
        sheet.owned_phrase += f", {sheet.owned_and_proposed_gpus} in all"
    if asked:
        whose = f"{',' if split is not None or moved else ''} and {'their' if split is not None else 'its'} proposals"
        sheet.owned_phrase += f"{whose} ask {asked} more, {sheet.owned_and_proposed_gpus} in all"
    if then is None:
        # fail closed: a pool whose base cannot be read is no pool new in the change (red team round 16: a cluster
        # file in a submodule fetched shallow); nothing shows what it owned, so nothing backs what it owns
        sheet.owned_and_proposed_gpus_before = sheet.owned_gpus_allowed = 0
        sheet.owned_before_phrase = "what the base revision held (unknown here)"
        sheet.backing_note = f"{unreadable}: nothing shows what the pool owned then, so none of it is backed"
        # the 0 above only fails the pool closed; the base is unknown, not empty, so no figure is shown for it
        sheet.allowed_phrase = "what the base revision held, which could not be read here"
        return
    sheet.owned_and_proposed_gpus_before = then.owned_and_proposed_gpus
    parts = [f"{then.owned_gpus} owned", *([f"{then.buffer_gpus} buffer"] if then.buffer_gpus else []),
             *([f"{then.proposed_gpus} proposed"] if then.proposed_gpus else [])]
    sheet.owned_before_phrase = (
        f"{then.owned_and_proposed_gpus} at the base revision ({', '.join(parts[:-1])} and {parts[-1]})"
        if len(parts) > 1 else f"{then.owned_gpus} at the base revision"
    )
    sheet.gpu_model_before = then.gpu_model
    today = (pool.spec.get("gpu") or {}).get("model")
    if isinstance(today, str) and today.strip() and then.gpu_model is not None:
        sheet.gpu_model_changed = today.strip().casefold() != then.gpu_model.casefold()
    from policylint.engine.checks import listed

    # a member measured elsewhere (moved in, or new) brings demand this pool did not carry then: one moved in, the
    # baseline the base gave it as the base declared it (not today's figures: a per-GPU figure cut with the move
    # asked for the difference); a new one, or one the base does not measure whole, its baseline today
    newcomers = [w.name for w in pool.workloads if history.measured_on.get(w.name) is not then]
    gpus_in = [history.arrived_baseline[n] if n in history.arrived_baseline
               else members[n].baseline_gpus if members is not None and n in members else None for n in newcomers]
    brought = sum(g for g in gpus_in if g is not None)
    # ... beyond the demand of the members that left it (a workload renamed with its trace moved is a newcomer
    # beside itself at the base: red team, 2026-12-07); one of those not known whole leaves no room for newcomers
    left = history.departed_baseline.get(pool.qualified, 0) if newcomers else 0
    sheet.newcomer_count = len(newcomers)
    sheet.newcomer_baseline_gpus = 0 if left is None else max(0, brought - left)
    sheet.measured_allowance_gpus = then.capacity_gpus + sheet.newcomer_baseline_gpus
    less = ("" if not left and left is not None else
            ", less the baselines of the workloads that left it (not known whole)" if left is None else
            f", less {left} for the baselines of the workloads that left it")
    sheet.newcomer_note = (
        f" (plus {sheet.newcomer_baseline_gpus} for the baselines of {listed(sorted(newcomers))}, placed elsewhere"
        f" then{less})" if newcomers else ""
    )
    from policylint.engine.evidence_bound import backed_by

    rearranged = sorted({shown for shown, real in cited if real in history.rearranged})
    backed_by(sheet, then.owned_and_proposed_gpus, history.baseline_before.get(pool.qualified, (None, None)),
              rearranged)
    sheet.allowed_phrase = f"{sheet.owned_gpus_allowed} in all"


def measured_on_facts(sheets: Mapping[str, WorkloadFactSheet], pool: Pool, history: History | None) -> None:
    """Each member's ``measured_pool_gpus``: the capacity its measurements were taken on, under ``--diff`` the base's.

    A trace in a change was measured on the pool that runs, as the base revision declares
    it, not on the capacity the same change writes (PL973).
    """
    if history is None:
        return
    for w in pool.workloads:
        then = history.measured_on.get(w.name)
        sheet = sheets.get(w.name)
        if then is None or sheet is None or sheet.pooled.pool_capacity_gpus is None:
            continue
        today = sheet.pooled.pool_capacity_gpus
        if then.capacity_gpus != today:
            sheet.pooled = dataclasses.replace(
                sheet.pooled,
                measured_pool_gpus=then.capacity_gpus,
                measured_pool_basis=f" (its capacity at the base revision; {today} in this change)",
            )
