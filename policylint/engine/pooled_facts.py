"""Facts of pooled demand: what pool, workload and proposal views get from a pool's workloads together.

The numbers come from :func:`policylint.measure.pools.measure_pools` (see
:mod:`policylint.measure.pooled`); this module turns them into plain facts for the rules:
the pooled bands next to the sum of the workloads' own bands (and a sentence that
compares them for messages), the pool's queue figures handed to each of its
workloads, and which workloads repeat another's measurement in the same pool.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from policylint.measure import PoolFacts
    from policylint.model import Pool, Workload
    from policylint.engine.views import View

#: Pool facts of pooled demand (see policylint.measure.pooled) next to the sums they replace.
POOLED_POOL_FACTS: dict[str, str] = {
    "baseline_gpus_sum": "sum of the workloads' own baseline band GPUs (an upper bound of the pooled figure in most pools)",
    "daily_gpus_sum": "sum of the workloads' own daily band GPUs",
    "peak_gpus_sum": "sum of the workloads' own peak band GPUs (never below the pooled peak)",
    "sustained_max_gpus_sum": "sum of the workloads' own sustained-maximum GPUs",
    "baseline_pooling": "text: the summed baselines and what pooling saves, for messages",
    "daily_pooling": "text: the summed daily bands and what pooling saves, for messages",
    "sustained_pooling": "text: the summed sustained maxima and what pooling saves, for messages",
    "measured_workload_count": "workloads of the pool whose GPU demand is measured (readable trace and per-GPU figure)",
    "pooled_window_days": "days of pooled samples: time in which every workload of the pool has a usable sample",
    "pooled_cold_start_seconds": "the pool's cold start: the longest effective cold start of its workloads",
    "pooled_step_seconds": "step of the pool's common grid (the finest workload step)",
    "pooled_noise_spikes": "spikes of the pooled series above its baseline, narrower than the pool's cold start",
    "pooled_real_spikes": "spikes of the pooled series above its baseline, at least as wide as the pool's cold start",
    "pooled_highest_spike_gpus": "height of the highest pooled spike above the pooled baseline, GPUs",
    "max_wait_seconds": "simulated max wait of the pooled GPU demand at reserved + elastic GPUs, seconds",
    "p99_wait_seconds": "simulated p99 wait of the pooled GPU demand at reserved + elastic GPUs, seconds",
    "daily_max_wait_seconds": "simulated max wait of the pooled demand cut at the pooled daily band, at reserved + elastic GPUs, seconds",
    "daily_rejected_share": (
        "share of the pooled daily-band work the pool's queue turns away when it honours queue.maxWaitSeconds"
    ),
}

#: Workload facts that come from the workload's pool or from its neighbours there.
POOLED_WORKLOAD_FACTS: dict[str, str] = {
    "measurement_double_counted": (
        "true when another workload of the same pool cites the same concurrency measurement (file and"
        " columns) and neither declares a share"
    ),
    "double_counted_with": "the workload of the same pool whose measurement this one repeats",
    "double_count_basis": (
        "how the repeat was recognised: the same file, or a copy (another file holding the same series,"
        " by the series fingerprint) - text for messages"
    ),
    "measurement_share": "declared concurrency.share.fraction (None when not declared)",
    "queue_rejection_note": (
        "text for messages: what the pool's queue turns away when it honours queue.maxWaitSeconds (empty when unknown)"
    ),
}



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


def pooled_pool_facts(pooled: PoolFacts | None, sums: dict[str, int | None]) -> dict[str, Any]:
    """The pooled-demand facts of one pool (None where unknown)."""
    r = pooled.report if pooled is not None else None
    known = r is not None and r.baseline is not None
    base = _int(r.baseline) if known and r else None
    daily = _int(r.daily) if known and r else None
    sustained = _int(r.sustained_max) if known and r else None
    return {
        "baseline_gpus": base,
        "daily_gpus": daily,
        "peak_gpus": _int(r.peak) if known and r else None,
        "sustained_max_gpus": sustained,
        "baseline_gpus_sum": sums["baseline"],
        "daily_gpus_sum": sums["daily"],
        "peak_gpus_sum": sums["peak"],
        "sustained_max_gpus_sum": sums["sustained_max"],
        "baseline_pooling": _pooling("baselines", base, sums["baseline"]),
        "daily_pooling": _pooling("daily bands", daily, sums["daily"]),
        "sustained_pooling": _pooling("sustained maxima", sustained, sums["sustained_max"]),
        "measured_workload_count": len(pooled.measured) if pooled is not None else 0,
        "pooled_window_days": r.window_days if r else None,
        "pooled_cold_start_seconds": r.cold_start_seconds if r else None,
        "pooled_step_seconds": r.step_seconds if r else None,
        "pooled_noise_spikes": r.noise_spike_count if known and r else None,
        "pooled_real_spikes": r.real_spike_count if known and r else None,
        "pooled_highest_spike_gpus": r.highest_spike if known and r else None,
        "max_wait_seconds": r.queue.max_wait if r and r.queue else None,
        "p99_wait_seconds": r.queue.p99_wait if r and r.queue else None,
        "daily_max_wait_seconds": r.daily_queue.max_wait if r and r.daily_queue else None,
        "daily_rejected_share": r.daily_rejected_share if r else None,
    }


def _measurement_key(w: Workload) -> tuple[str, str, str] | None:
    """What makes two concurrency measurements the same: file, columns and series selector."""
    ref = w.measurements.get("concurrency")
    if ref is None or ref.path is None:
        return None
    columns = ref.spec.get("columns")
    return (
        os.path.realpath(ref.path),
        json.dumps(sorted(columns) if isinstance(columns, list) else columns),
        json.dumps(ref.spec.get("match"), sort_keys=True),
    )


def double_counted(pool: Pool, fingerprints: dict[str, str | None] | None = None) -> dict[str, str]:
    """Workloads of ``pool`` that repeat another's measurement without a declared share.

    Maps each offending workload to the one it repeats. In a group citing one
    measurement, the first workload (by name) without a share keeps it; every
    other one without a share counts the same demand again. See :func:`repeats`.
    """
    return {name: kept for name, (kept, _) in repeats(pool, fingerprints).items()}


def repeats(
    pool: Pool,
    fingerprints: dict[str, str | None] | None = None,
    series: dict[str, str | None] | None = None,
    shapes: dict[str, str | None] | None = None,
) -> dict[str, tuple[str, str]]:
    """Workload -> (workload it repeats, how that was recognised), for one pool.

    Identity is content-based: two workloads whose concurrency series, as read,
    hold the same values (:func:`policylint.measure.integrity.copies.values_fingerprint`, in
    ``fingerprints`` by workload) cite the same demand, whatever the files are
    called and whatever dates they carry - a byte-identical copy under another
    name, or the same samples moved to other dates, is the same evidence. A
    workload whose series is unknown (unreadable) is grouped by its file,
    columns and selector instead. ``series`` (the fingerprints with times, by
    workload) tells a copy moved to other dates from a plain copy in messages.
    ``shapes`` (:func:`policylint.measure.integrity.copies.shape_fingerprint`) then finds a
    copy scaled up or shifted: it rises and falls at exactly the same samples.
    """
    groups: dict[tuple[str, ...], list[Workload]] = {}
    for w in sorted(pool.workloads, key=lambda w: w.name):
        printed = (fingerprints or {}).get(w.name)
        key: tuple[str, ...] | None = ("series", printed) if printed else _measurement_key(w)
        if key is not None:
            groups.setdefault(key, []).append(w)
    out: dict[str, tuple[str, str]] = {}
    for members in groups.values():
        unshared = [w for w in members if not (w.spec.get("concurrency") or {}).get("share")]
        for w in unshared[1:]:
            first = unshared[0]
            moved = series is not None and series.get(first.name) != series.get(w.name)
            out[w.name] = (first.name, _basis(first, w, moved))
    scaled: dict[str, list[Workload]] = {}
    for w in sorted(pool.workloads, key=lambda w: w.name):
        shape = (shapes or {}).get(w.name)
        if shape and w.name not in out:
            scaled.setdefault(shape, []).append(w)
    for members in scaled.values():
        unshared = [w for w in members if not (w.spec.get("concurrency") or {}).get("share")]
        for w in unshared[1:]:
            out[w.name] = (unshared[0].name, _scaled_basis(unshared[0], w))
    return out


def _scaled_basis(kept: Workload, repeat: Workload) -> str:
    """Message text for a copy that was scaled or shifted."""
    a, b = kept.measurements.get("concurrency"), repeat.measurements.get("concurrency")
    names = (b.display if b else repeat.name, a.display if a else kept.name)
    return f"a scaled copy: {names[0]} rises and falls at exactly the samples {names[1]} does"


def _basis(kept: Workload, repeat: Workload, moved: bool = False) -> str:
    """'the same file' or 'a copy: X and Y hold the same series', for messages."""
    a, b = kept.measurements.get("concurrency"), repeat.measurements.get("concurrency")
    if a is None or b is None or a.path is None or b.path is None:
        return "the same file"
    if os.path.realpath(a.path) == os.path.realpath(b.path):
        return f"the same file {b.display}"
    if moved:
        return f"a copy moved in time: {b.display} holds the values of {a.display} on other dates"
    return f"a copy: {b.display} holds the same series as {a.display}"


def _rejection_note(pv: View) -> str:
    """'; honouring ... it turns away N% ...' for messages, or '' when no limit or no queue is known."""
    share, limit = pv.facts.get("daily_rejected_share"), pv.facts.get("queue_max_wait_seconds")
    if share is None or limit is None:
        return ""
    from policylint.engine.checks import format_share  # the one way a share is written in messages

    return f"; honouring its wait limit of {limit:g} s the queue would turn away {format_share(share)} of the pool's daily-band work"


def identity_fingerprint(facts: Mapping[str, Any] | None) -> str | None:
    """The fingerprint two workloads must share to cite the same demand (PL111; the planner's guard).

    By values alone when the series says enough to be recognised (ten changes or
    more), so a copy moved to other dates is the same evidence; otherwise by the
    series with its times: two constant traces of one length are not copies.
    ``facts``: a workload's integrity facts (None: nothing was read).
    """
    if not facts:
        return None
    key = "values_fingerprint" if (facts.get("value_changes") or 0) >= 10 else "series_fingerprint"
    value = facts.get(key)
    return str(value) if value else None


def pool_workload_facts(pool: Pool, pv: View, wviews: dict[str, View]) -> None:
    """Give every workload of ``pool`` the pool's queue figures and its double-count verdict."""
    printed = {n: identity_fingerprint(v.facts) for n, v in wviews.items()}
    found = repeats(
        pool,
        printed,
        {n: v.facts.get("series_fingerprint") for n, v in wviews.items()},
        {n: v.facts.get("shape_fingerprint") for n, v in wviews.items()},
    )
    for w in pool.workloads:
        view = wviews.get(w.name)
        if view is None:
            continue
        share = ((w.spec.get("concurrency") or {}).get("share") or {}).get("fraction")
        view.facts.update(
            {
                "pool_capacity_gpus": pv.facts["capacity_gpus"],
                "max_wait_seconds": pv.facts["max_wait_seconds"],
                "p99_wait_seconds": pv.facts["p99_wait_seconds"],
                "daily_max_wait_seconds": pv.facts["daily_max_wait_seconds"],
                "daily_rejected_share": pv.facts["daily_rejected_share"],
                "queue_rejection_note": _rejection_note(pv),
                "measurement_double_counted": w.name in found,
                "double_counted_with": found[w.name][0] if w.name in found else None,
                "double_count_basis": found[w.name][1] if w.name in found else None,
                "measurement_share": float(share) if isinstance(share, (int, float)) else None,
            }
        )
        view.paths.setdefault("measurement_double_counted", ("spec", "concurrency", "trace", "path"))
