"""The fact sheet of one workload: its declarations, its measured bands and spikes, its pool as it sees it.

:func:`workload_view` builds a workload's :class:`~policylint.engine.sheets.WorkloadFactSheet`
from the workload alone (its documents, its measurements, its pool's spec, the
clock); what it takes from its neighbours is filled in afterwards per pool: the
capacity share and queue depth here (:func:`depth_facts`), the pooled queue and
double counts by :func:`policylint.engine.pooled_facts.pool_workload_facts`.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from policylint.calc.gpus import gpus_one
from policylint.engine.sheets import WorkloadFactSheet
from policylint.engine.view import View
from policylint.measure.conversion import conversion_for, gpu_conversion, gpus_per_replica
from policylint.measure.integrity.timing import pulled_digest_matches, pulled_range_outside
from policylint.measure.integrity.workload import workload_facts as integrity_facts
from policylint.measure.pool_groups import is_gang
from policylint.measure.sources.provenance import pull_facts, read_record
from policylint.model.load import DocPath

if TYPE_CHECKING:
    from policylint.measure.facts import WorkloadFacts
    from policylint.model import Pool, Workload
    from policylint.model.specs import NoBlock, PerGpuConcurrencySpec, PoolSpec, ToleranceSpec


def num(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def gpus(value: float | None, per_gpu: float | None, per_replica: int) -> int | None:
    if value is None or not per_gpu:
        return None
    return gpus_one(value, per_gpu, per_replica)


def baseline_gpus(w: Workload, facts: WorkloadFacts) -> int | None:
    """GPUs the workload's baseline band needs, by its declarations and measured facts: its sheet's
    ``baseline_gpus``, and under ``--diff`` what a workload moved into a pool brings from the base revision."""
    to_gpu, to_replica = gpu_conversion(w, facts.trace_unit)
    return gpus(facts.report.baseline if facts.report else None, to_gpu, to_replica)


def _evidence(tol: ToleranceSpec) -> dict[str, Any]:
    """Facts about a tolerance's evidence: its form, its texts, its latency budget."""
    ev = tol.get("evidence")
    out: dict[str, Any] = {
        "tolerance_evidence": None,
        "tolerance_evidence_form": None,
        "tolerance_evidence_texts": [],
        "evidence_objective_seconds": None,
        "evidence_service_seconds": None,
        "evidence_queue_budget_seconds": None,
    }
    if isinstance(ev, str):
        text = ev.strip()
        if text:
            out.update(tolerance_evidence=text, tolerance_evidence_form="text", tolerance_evidence_texts=[["evidence", text]])
        return out
    if not isinstance(ev, dict):
        return out
    objective, service = num(ev.get("objectiveSeconds")), num(ev.get("serviceSeconds"))
    texts = [[key, str(ev[key]).strip()] for key in ("note", "document", "url") if isinstance(ev.get(key), str)]
    parts = []
    if objective is not None and service is not None:
        form = "structured"
        out["evidence_objective_seconds"] = objective
        out["evidence_service_seconds"] = service
        # Exact: the comparison with maxQueueSeconds sees this difference, never a rounded one.
        out["evidence_queue_budget_seconds"] = objective - service
        parts.append(f"objective {objective:g} s - service {service:g} s")
    elif ev.get("document"):
        form = "document"
    elif ev.get("url"):
        form = "url"
    else:
        form = None
    parts += [text for key, text in texts if key != "note" and text]
    out.update(
        tolerance_evidence="; ".join(parts) or None,
        tolerance_evidence_form=form,
        tolerance_evidence_texts=[pair for pair in texts if pair[1]],
    )
    return out


#: the most of a tolerance's evidence document read to judge whether it is a text (PL304)
EVIDENCE_READ_BYTES = 256 << 10


def _evidence_document(w: Workload) -> dict[str, Any]:
    """What a tolerance's evidence document holds: its words of text, and whether it is data, not a text.

    Red team, 2026-12-06: an empty file, one holding "TODO", or the workload's own trace passed as
    the document a tolerance was taken from; its path was all PL304 looked at.
    """
    import os
    import re

    out: dict[str, Any] = {"tolerance_evidence_document_words": None, "tolerance_evidence_document_data": None}
    ref = w.measurements.get("evidence")
    if ref is None or ref.path is None:
        return out
    try:
        with open(ref.path, "rb") as fh:
            text = fh.read(EVIDENCE_READ_BYTES).decode("utf-8", "replace")
    except OSError:
        return out
    letters = sum(1 for c in text if c.isalpha())
    digits = sum(1 for c in text if c.isdigit())
    real = os.path.realpath(ref.path)
    measured = any(r.path is not None and os.path.realpath(r.path) == real
                   for role, r in w.measurements.items() if role != "evidence")
    out["tolerance_evidence_document_words"] = len(re.findall(r"[^\W\d_]{2,}", text))
    out["tolerance_evidence_document_data"] = measured or digits > letters
    return out


def _flat_list(days: tuple[float, ...], shown: int = 3) -> str | None:
    if not days:
        return None
    dates = [dt.datetime.fromtimestamp(d, tz=dt.timezone.utc).strftime("%Y-%m-%d") for d in days[:shown]]
    more = len(days) - shown
    return ", ".join(dates) + (f" and {more} more" if more > 0 else "")


def to_gpus(f: WorkloadFactSheet) -> tuple[float | None, int]:
    """Concurrency per GPU and GPUs per replica of a workload; a GPU-weighted trace needs neither."""
    return conversion_for(f.trace_unit, f.per_gpu, f.gpus_per_replica)


def _pull_record(w: Workload) -> dict[str, Any] | None:
    """The provenance record ``policylint pull`` wrote beside the concurrency trace, if any."""
    ref = w.measurements.get("concurrency")
    if ref is None or ref.path is None:
        return None
    return read_record(ref.path)[0]


def _vram_exceeds(resident_gib: float | None, pool_spec: PoolSpec, per_replica: int) -> bool | None:
    """Plausibility: a replica cannot keep more resident than its GPUs hold."""
    memory = num((pool_spec.get("gpu") or {}).get("memoryGiB"))
    if resident_gib is None or memory is None:
        return None
    return resident_gib > memory * max(1, per_replica) + 1e-9


def workload_view(w: Workload, facts: WorkloadFacts, now: dt.datetime) -> tuple[View, WorkloadFactSheet]:
    """The view of one workload, and its fact sheet (the pooled facts come later, per pool)."""
    spec = w.spec
    per: PerGpuConcurrencySpec | NoBlock = spec.get("perGpuConcurrency") or {}
    tol = spec.get("tolerance") or {}
    vram = spec.get("vram") or {}
    declared = spec.get("bands") or {}
    conc = spec.get("concurrency") or {}
    per_gpu = num(per.get("value"))
    per_replica = gpus_per_replica(w)
    # The one conversion (a GPU-weighted trace is GPU demand already: no second one).
    to_gpu, to_replica = gpu_conversion(w, facts.trace_unit)
    r = facts.report
    pool = w.pool
    pool_spec: PoolSpec | NoBlock = pool.spec if pool else {}
    queue = pool_spec.get("queue") or {}
    sched = pool_spec.get("scheduling") or {}
    age = None
    if facts.last_sample is not None:
        # Unrounded: 30.004 days is older than 30; messages round, verdicts do not.
        age = (now - facts.last_sample).total_seconds() / 86_400.0
    resident_gib = num(vram.get("residentGiB"))
    if resident_gib is None:
        resident_gib = facts.vram_resident_gib
    vram_missing = [
        what
        for what, value in (("residency ratio", facts.vram_ratio), ("resident GiB", resident_gib))
        if value is None
    ]
    buffer = pool.buffer_gpus if pool else 0
    tail_gpus = facts.tail_job_gpus if facts.tail_job_gpus is not None else per_replica
    integrity = integrity_facts(facts.integrity, now.timestamp(), len(r.outlier_days) if r else None)
    integrity.pulled_range_outside_seconds = pulled_range_outside(facts.integrity, _pull_record(w))
    ref = w.measurements.get("concurrency")
    integrity.pulled_digest_matches = pulled_digest_matches(
        _pull_record(w), str(ref.path) if ref is not None and ref.path is not None else None
    )
    v = WorkloadFactSheet(
        name=w.name,
        team=w.team,
        workload_class=w.cls,
        pool=pool.qualified if pool else None,
        gpus_per_replica=per_replica,
        trace_unit=facts.trace_unit,
        trace_counts_jobs=_counts_jobs(w, facts.trace_unit),
        concurrency_measured=r is not None,
        concurrency_declared=num(conc.get("declared")),
        concurrency_trace_declared="trace" in conc,
        baseline=r.baseline if r else None,
        daily=r.daily if r else None,
        peak=r.peak if r else None,
        sustained_max=facts.sustained_max,
        baseline_gpus=baseline_gpus(w, facts),
        daily_gpus=gpus(r.daily if r else None, to_gpu, to_replica),
        peak_gpus=gpus(r.peak if r else None, to_gpu, to_replica),
        rounding_gpus_mean=facts.rounding_gpus_mean,
        # Unrounded: 89.9965 days is not 90.
        window_days=r.window_days if r else None,
        flat_days=len(facts.flat_days) if r else None,
        flat_day_list=_flat_list(facts.flat_days),
        step_seconds=facts.step_seconds if r else None,
        cold_start_window_seconds=facts.cold_start_seconds,
        measurement_age_days=age,
        last_sample=facts.last_sample.strftime("%Y-%m-%d") if facts.last_sample else None,
        noise_spikes=r.noise_spike_count if r else None,
        real_spikes=r.real_spike_count if r else None,
        per_gpu=per_gpu,
        per_gpu_measured_in=per.get("measuredIn"),
        per_gpu_source=per.get("source"),
        cold_start_seconds=num(spec.get("coldStartSeconds")),
        tolerance_seconds=num(tol.get("maxQueueSeconds")),
        **_evidence(tol),
        **_evidence_document(w),
        tolerance_label=tol.get("label"),
        declared_baseline=num(declared.get("baseline")),
        declared_daily=num(declared.get("daily")),
        declared_peak=num(declared.get("peak")),
        vram_resident_gib=resident_gib,
        vram_ratio=facts.vram_ratio,
        vram_residency_seconds=facts.vram_residency_seconds,
        vram_active_seconds=facts.vram_active_seconds,
        vram_measured=not vram_missing,
        vram_missing=" and ".join(vram_missing) or None,
        durations_measured=facts.p50 is not None and facts.p99 is not None,
        p50_seconds=facts.p50,
        p90_seconds=facts.p90,
        p99_seconds=facts.p99,
        tail_ratio=facts.tail_ratio,
        tail_job_gpus=tail_gpus,
        # more than one GPU per job as declared, or as the job lists record it: a job list weighed by GPUs
        # made gpusPerReplica cost nothing, and 1 hid 64-GPU jobs from PL403 (red team, 2026-12-06); plan
        # decides scheduling.gang by the same function
        multi_gpu_job=is_gang(w.cls, spec, facts.integrity),
        pool_serves_class=(w.cls in (pool_spec.get("serves") or [])) if pool else None,
        pool_buffer_gpus=buffer,
        pool_preemption=bool(sched.get("preemption")) if pool else None,
        pool_tail_protected=_tail_protected(pool, tail_gpus) if pool else None,
        pool_overflow=pool_spec.get("overflow"),
        pool_queue_max_depth=queue.get("maxDepth"),
        pool_queue_max_wait_seconds=num(queue.get("maxWaitSeconds")),
        pool_gpu_memory_gib=num((pool_spec.get("gpu") or {}).get("memoryGiB")) if pool else None,
        replica_memory_gpus=_memory_gpus(resident_gib, num((pool_spec.get("gpu") or {}).get("memoryGiB")) if pool else None),
        pulls=pull_facts(w, now),
        vram_exceeds_gpu_memory=_vram_exceeds(resident_gib, pool.spec, per_replica) if pool else None,
        vram_declared_gib=num(vram.get("residentGiB")),
        vram_trace_gib=facts.vram_resident_gib,
        integrity=integrity,
    )
    trace = ("spec", "concurrency", "trace")
    paths: dict[str, DocPath] = {
        "name": ("metadata", "name"),
        "workload_class": ("spec", "class"),
        "pool": ("spec", "pool"),
        "concurrency_measured": ("spec", "concurrency") if "concurrency" in spec else ("spec",),
        "concurrency_declared": ("spec", "concurrency", "declared"),
        "window_days": (*trace, "path"),
        "flat_days": (*trace, "path"),
        "step_seconds": (*trace, "path"),
        "measurement_age_days": (*trace, "path"),
        "seconds_after_now": (*trace, "path"),
        "resolution_step_seconds": (*trace, "path"),
        "roughness": (*trace, "path"),
        "repeated_day_share": (*trace, "path"),
        "repeated_run_share": (*trace, "path"),
        "pulled_range_outside_seconds": (*trace, "path"),
        "pulled_digest_matches": (*trace, "path"),
        "open_job_ratio": (*trace, "path"),
        "trace_job_gpus_p90": (*trace, "path"),
        "trace_unit": (*trace, "path"),
        "open_job_longest_days": (*trace, "path"),
        "vram_seconds_after_now": ("spec", "vram", "trace", "path") if "trace" in vram else ("spec", "vram"),
        "jobs_seconds_after_now": (
            ("spec", "durations", "jobs", "path") if "jobs" in (spec.get("durations") or {}) else ("spec", "durations")
        ),
        "vram_declared_gib": ("spec", "vram", "residentGiB") if "residentGiB" in vram else ("spec", "vram"),
        "job_gpus_max": ("spec", "gpusPerReplica") if "gpusPerReplica" in spec else ("spec", "class"),
        "excluded_share": ("spec", "concurrency", "exclude") if "exclude" in conc else (*trace, "path"),
        "vram_exceeds_gpu_memory": ("spec", "vram", "residentGiB") if "residentGiB" in vram else ("spec", "vram"),
        "replica_memory_gpus": ("spec", "gpusPerReplica") if "gpusPerReplica" in spec else ("spec", "vram"),
        "per_gpu": ("spec", "perGpuConcurrency", "value"),
        "per_gpu_measured_in": ("spec", "perGpuConcurrency", "measuredIn"),
        "cold_start_seconds": ("spec", "coldStartSeconds"),
        "tolerance_seconds": ("spec", "tolerance"),
        "tolerance_evidence": ("spec", "tolerance", "evidence") if "evidence" in tol else ("spec", "tolerance"),
        "tolerance_evidence_form": ("spec", "tolerance", "evidence") if "evidence" in tol else ("spec", "tolerance"),
        "evidence_queue_budget_seconds": ("spec", "tolerance", "maxQueueSeconds"),
        "max_wait_seconds": ("spec", "tolerance"),
        "daily_max_wait_seconds": ("spec", "tolerance"),
        "declared_baseline": ("spec", "bands", "baseline"),
        "declared_daily": ("spec", "bands", "daily"),
        "declared_peak": ("spec", "bands", "peak"),
        "vram_ratio": ("spec", "vram"),
        "vram_resident_gib": ("spec", "vram", "residentGiB"),
        "vram_measured": ("spec", "vram") if "vram" in spec else ("spec", "class"),
        "durations_measured": ("spec", "durations") if "durations" in spec else ("spec", "class"),
        "tail_ratio": ("spec", "durations"),
        "durations_shared": (
            ("spec", "durations", "jobs", "path") if "jobs" in (spec.get("durations") or {}) else ("spec", "durations")
        ),
        "pool_serves_class": ("spec", "pool"),
    }
    return View("workload", f"workload {w.name}", w.doc, ("metadata", "name"), v, paths), v


def capacity_shares(pool: Pool, wfacts: Mapping[str, Mapping[str, Any]]) -> dict[str, float]:
    """Split the pool's declared GPUs across its workloads by baseline GPUs.

    Used only for queue depth (PL206): depth counts a workload's own requests or
    jobs, so the spikes that must fit are measured against the part of the capacity
    the workload's baseline takes. Waits and rejections are the pooled queue's. A
    workload alone in its pool gets all of it; without measured baselines for every
    workload no split is made (the depth stays unknown).
    """
    names = [w.name for w in pool.workloads]
    total = pool.capacity_gpus
    if len(names) == 1:
        return {names[0]: float(total)}
    weights = [wfacts[n].get("baseline_gpus") for n in names]
    if not names or any(x is None for x in weights):
        return {}
    denom = float(sum(x for x in weights if x is not None))
    if denom <= 0:
        return {n: total / len(names) for n in names}
    return {n: total * float(x) / denom for n, x in zip(names, weights, strict=True) if x is not None}


def depth_facts(v: WorkloadFactSheet, facts: WorkloadFacts, capacity: float) -> None:
    """The queue depth a workload's spikes need above its capacity share (PL206).

    Spike height sets queue depth: what stands above the capacity at one time must
    fit in the queue. Pools that queue their overflow absorb all demand; pools that
    reject it only the daily band. Nothing is rounded before the ceiling to a whole
    request.
    """
    import numpy as np

    r = facts.report
    v.capacity_share = capacity
    top = facts.usable_max
    if top is None:
        return
    # The highest sample above the capacity, from the highest sample: subtracting the
    # capacity and cutting at the daily band are monotone (also once rounded), so
    # max(min(c, daily) - capacity) over the samples is min(max c, daily) - capacity, exactly.
    if v.pool_overflow != "queue" and r is not None:
        top = float(np.minimum(top, r.daily))  # NaN when the daily band is: no sample is usable
    if not math.isnan(top):
        v.queue_depth_needed = int(max(0.0, math.ceil(float(top - capacity) - 1e-9)))


def _memory_gpus(resident_gib: float | None, memory_gib: float | None) -> int | None:
    """GPUs one replica's resident memory fills (at least 1), or None without both figures."""
    if resident_gib is None or memory_gib is None or not memory_gib > 0 or not math.isfinite(resident_gib) or resident_gib < 0:
        return None
    return max(1, math.ceil(resident_gib / memory_gib))


def _counts_jobs(w: Workload, unit: str | None) -> bool:
    """True when the concurrency trace counts a job list's or request log's running rows, each one replica."""
    trace: Any = (w.spec.get("concurrency") or {}).get("trace") or {}
    return unit != "gpus" and isinstance(trace, dict) and (trace.get("format") in ("jobs", "requests") or "startColumn" in trace)


def _tail_protected(pool: Pool, tail_job_gpus: int = 1) -> bool:
    """Preemption, or a buffer that holds at least one long-tail job (a smaller one protects nothing)."""
    sched = pool.spec.get("scheduling") or {}
    return bool(sched.get("preemption")) or pool.buffer_gpus >= tail_job_gpus > 0
