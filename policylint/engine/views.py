"""Facts: the plain view of each subject that rules judge.

For every workload, pool, cluster and proposal this builds a flat dict of
declared fields and computed facts (bands in concurrency and GPUs, spikes,
duration percentiles, VRAM ratio, and each pool's pooled demand and queue - see
:mod:`policylint.engine.pooled_facts`). Rules only ever see these dicts. :data:`FACTS`
names and describes every fact per subject; rule files are checked against it
when they load, so a misspelt fact is an error at start, not a rule that
silently never fires.

Each view also carries, outside the dict, the document path each fact was
declared at, so a finding can point at the line that matters.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from policylint.measure.integrity.catalogue import CLUSTER_FACTS as INTEGRITY_CLUSTER_FACTS
from policylint.measure.integrity.catalogue import POOL_FACTS as INTEGRITY_POOL_FACTS
from policylint.measure.integrity.catalogue import WORKLOAD_FACTS as INTEGRITY_WORKLOAD_FACTS
from policylint.model.load import Document, DocPath
from policylint.engine.pooled_facts import POOLED_POOL_FACTS, POOLED_WORKLOAD_FACTS
from policylint.schedulers import POOL_FACTS as SCHEDULER_POOL_FACTS

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from policylint.finding import Subject
    from policylint.measure import PoolFacts, WorkloadFacts
    from policylint.model import Model, Pool, Workload
    from policylint.engine.scope import Needed

_OWN_FACTS: dict[str, dict[str, str]] = {
    "workload": {
        "name": "metadata.name",
        "team": "metadata.team",
        "workload_class": "training, inference or batch",
        "pool": "cluster/pool the workload runs in",
        "gpus_per_replica": "GPUs one replica or job occupies",
        "trace_unit": "what the concurrency trace counts: concurrency, or gpus (GPU-weighted jobs, not converted again)",
        "concurrency_measured": "true when a readable concurrency trace backs the workload",
        "concurrency_declared": "a bare declared concurrency number (no measurement)",
        "concurrency_trace_declared": "true when the workload references a concurrency trace (readable or not)",
        "baseline": "baseline band top, concurrency (p95 of the sustained series)",
        "daily": "daily band top, concurrency (p99 of the sustained series)",
        "peak": "peak band top, concurrency (max of the series)",
        "sustained_max": "highest level held for a whole cold-start window",
        "baseline_gpus": "GPUs the baseline band needs",
        "daily_gpus": "GPUs the daily band needs",
        "peak_gpus": "GPUs the peak band needs",
        "window_days": "days of valid samples after cleaning (exclusions, flat days, outlier days), unrounded",
        "flat_days": "number of UTC days on which the trace holds one constant value (left out of the window)",
        "flat_day_list": "the first flat days, as dates",
        "step_seconds": "sampling step of the concurrency trace, seconds",
        "cold_start_window_seconds": (
            "effective cold start the bands were computed with: the longer of the declared and the pool's elastic"
            " coldStartSeconds (either alone when the other is missing), else 300 s"
        ),
        "measurement_age_days": "days between the last sample and now, unrounded",
        "last_sample": "timestamp of the last sample",
        "noise_spikes": "spikes narrower than the cold-start window",
        "real_spikes": "spikes at least as wide as the cold-start window",
        "per_gpu": "declared concurrency one GPU sustains",
        "per_gpu_measured_in": "where the per-GPU figure was measured",
        "per_gpu_source": "source of the per-GPU figure",
        "cold_start_seconds": "declared cold-start window, seconds",
        "tolerance_seconds": "declared maximum tolerable queue seconds",
        "tolerance_evidence": "evidence for the tolerance, as one readable text",
        "tolerance_evidence_form": "structured (objective and service time), document, url, text (free text), or unknown",
        "tolerance_evidence_texts": "every text of the evidence as [field, text] pairs (free text, note, document, url)",
        "evidence_objective_seconds": "latency objective the tolerance was derived from, seconds",
        "evidence_service_seconds": "service time the tolerance was derived from, seconds",
        "evidence_queue_budget_seconds": "objective - service time: the most the work may wait, seconds",
        "tolerance_label": "free-form priority label",
        "pool_capacity_gpus": "reserved + elastic GPUs of the workload's pool (the queue's capacity)",
        "max_wait_seconds": "simulated max wait in the pool's queue (pooled GPU demand at the pool's capacity), seconds",
        "p99_wait_seconds": "simulated p99 wait in the pool's queue, seconds",
        "daily_max_wait_seconds": (
            "simulated max wait in the pool's queue for the pooled demand up to the pool's daily band, seconds"
            " (demand above it is the peak band, left to the pool's overflow policy)"
        ),
        "daily_rejected_share": (
            "share of the pool's pooled daily-band work its queue turns away when it honours the pool's"
            " maxWaitSeconds (the pool's one fluid queue at reserved + elastic GPUs)"
        ),
        "capacity_share": "the part of the pool's GPUs, in concurrency, the workload's baseline takes (for queue depth)",
        "queue_depth_needed": (
            "most requests or jobs above capacity_share at one time: the queue depth its spikes need"
            " (demand up to the daily band when the pool rejects overflow, all demand when it queues)"
        ),
        "declared_baseline": "declared baseline band top",
        "declared_daily": "declared daily band top",
        "declared_peak": "declared peak band top",
        "vram_resident_gib": "GiB the model keeps resident per replica (declared residentGiB, else the peak of its VRAM trace)",
        "vram_ratio": "VRAM residency seconds / active compute seconds (resident samples only), unrounded",
        "vram_residency_seconds": "seconds the model was resident (declared per day, or measured: summed over pods)",
        "vram_active_seconds": "active compute seconds (declared per day, or measured activity over resident samples, summed over pods)",
        "vram_measured": "true when both the residency ratio and the resident GiB are known",
        "vram_missing": "what VRAM residency data the workload lacks",
        "durations_measured": "true when the job duration distribution (p50 and p99) is known",
        "p50_seconds": "median job duration",
        "p90_seconds": "p90 job duration",
        "p99_seconds": "p99 job duration",
        "tail_ratio": "p99 / p50 job duration, unrounded",
        "tail_job_gpus": "GPUs one long-tail job holds (most GPUs among jobs at or above p99 duration, at least gpusPerReplica)",
        "multi_gpu_job": "true for a training or batch workload whose jobs hold more than one GPU",
        "pool_serves_class": "true when the pool lists this workload's class in serves",
        "pool_buffer_gpus": "GPUs the pool keeps free for long-tail jobs",
        "pool_preemption": "true when the pool can preempt",
        "pool_tail_protected": "true when the pool has preemption, or buffer GPUs that hold at least one long-tail job",
        "pool_overflow": "the pool's overflow policy (queue or reject)",
        "pool_queue_max_depth": "the pool's queue depth limit",
        "pool_queue_max_wait_seconds": "the pool's queue wait limit, seconds",
        "pool_gpu_memory_gib": "memory of one GPU in the pool",
        "pulls": "per measurement with a Prometheus source: declared and pulled query and step, days since the pull",
        "vram_exceeds_gpu_memory": (
            "plausibility: true when the resident GiB of one replica exceed the memory of the GPUs it occupies"
            " (pool gpu.memoryGiB x gpusPerReplica)"
        ),
        "vram_declared_gib": "plausibility: the declared vram.residentGiB (None when not declared)",
        "vram_trace_gib": "plausibility: the most GiB the VRAM trace shows resident (None without a VRAM trace)",
    },
    "pool": {
        "name": "pool name",
        "cluster": "cluster name",
        "qualified": "cluster/pool",
        "reserved_gpus": "dedicated GPUs",
        "elastic_gpus": "most GPUs added on demand",
        "capacity_gpus": "reserved + elastic GPUs",
        "proposed_gpus": "GPUs requested for this pool by proposals",
        "committed_gpus": "reserved + proposed GPUs",
        "gpu_memory_gib": "memory of one GPU",
        "serves": "classes the pool is meant for",
        "classes": "classes of the workloads placed in the pool",
        "workload_names": "names of the workloads placed in the pool",
        "workload_count": "number of workloads placed in the pool",
        "unmeasured_workloads": "workloads whose demand facts are unknown",
        "overflow": "declared peak-band behaviour (queue or reject)",
        "queue_max_depth": "declared queue depth limit",
        "queue_max_wait_seconds": "declared queue wait limit",
        "gang": "gang scheduling enabled",
        "preemption": "preemption enabled",
        "buffer_gpus": "GPUs kept free for long-tail jobs",
        "baseline_gpus": "pooled baseline band, GPUs (p95 of the sustained pooled GPU-demand series)",
        "daily_gpus": "pooled daily band, GPUs (p99 of the sustained pooled GPU-demand series)",
        "peak_gpus": "pooled peak band, GPUs (max of the pooled GPU-demand series)",
        "sustained_max_gpus": "highest pooled GPU demand held for a whole pool cold-start window",
        "multi_gpu_training": "true when a training workload needs more than one GPU per job",
        "multi_gpu_jobs": "training or batch workloads whose jobs hold more than one GPU",
        "sharing": "exclusive (a GPU holds one model's replica, the default) or shared (models share GPUs)",
        "workload_tolerances": "per workload: name and tolerance_seconds (list of objects)",
        "queue_needs": "per workload: name, queue_depth_needed, tolerance_seconds, daily_rejected_share (list of objects)",
        "tolerance_min_seconds": "tightest tolerance of the pool's workloads",
        "tolerance_max_seconds": "loosest tolerance of the pool's workloads",
        "tolerance_spread": "loosest / tightest tolerance",
        "resident_gib_total": "VRAM the inference models keep resident across their baseline replicas",
        "memory_gib_total": "GPU memory of the reserved GPUs",
        "reserved_gpus_before": "reserved GPUs at the --diff base revision (unknown without --diff)",
        "evidence_changed": "true when a measurement of the pool's workloads changed since the --diff base",
        "resident_gib_per_gpu": (
            "GiB one GPU must hold: with sharing shared, every inference model of the pool at once"
            " (sum of residentGiB / gpusPerReplica); with exclusive GPUs, the largest one alone"
            " (unknown when no inference workload has resident GiB)"
        ),
    },
    "cluster": {
        "name": "cluster name",
        "workload_count": "workloads placed in the cluster's pools",
        "tolerance_declared_count": "workloads with a declared tolerance",
        "tolerances": "declared tolerances of the cluster's workloads, seconds",
    },
    "proposal": {
        "name": "proposal name",
        "cluster": "cluster the GPUs are for",
        "requested_gpus": "GPUs requested in total",
        "cited_workloads": "number of workloads cited",
        "cited_measured": "number of cited workloads backed by a readable measurement",
        "requests": (
            "per request: pool, gpus, reserved, baseline_gpus (pooled), baseline_gpus_sum, baseline_pooling,"
            " measured_workloads, pool_workloads, pool_proposed_gpus (GPUs every proposal of the repository asks"
            " for that pool, this one included), pool_proposals (those proposals as name and gpus) (list of objects)"
        ),
        "cluster_measured": "workloads of the proposal's cluster whose GPU demand is measured",
        "justification": "justification text",
    },
}

#: Every fact per subject: policylint's own, the scheduler facts of a pool and the pooled
#: demand facts, declared here in one place (rule files are checked against it when they load).
FACTS: dict[str, dict[str, str]] = {
    "workload": {**_OWN_FACTS["workload"], **POOLED_WORKLOAD_FACTS, **INTEGRITY_WORKLOAD_FACTS},
    "pool": {**_OWN_FACTS["pool"], **SCHEDULER_POOL_FACTS, **POOLED_POOL_FACTS, **INTEGRITY_POOL_FACTS},
    "cluster": {**_OWN_FACTS["cluster"], **INTEGRITY_CLUSTER_FACTS},
    "proposal": dict(_OWN_FACTS["proposal"]),
}


#: Where a finding on a pool fact points: the place (:data:`policylint.model.POOL_PLACES`) it is
#: written at, for a Cluster pool and a scheduler queue alike. Facts not named here point at the
#: pool's name.
POOL_FACT_PLACES: dict[str, str] = {
    "name": "name",
    "reserved_gpus": "reserved",
    "committed_gpus": "reserved",
    "reserved_gpus_before": "reserved",  # before and now compared where the reserved GPUs are written
    "elastic_gpus": "elastic",
    "capacity_gpus": "capacity",
    "sustained_max_gpus": "capacity",
    "measured_workload_count": "demand",
    "pooled_window_days": "name",
    "overflow": "overflow",
    "queue_max_depth": "queue",
    "queue_max_wait_seconds": "queue",
    "queue_needs": "queue_needs",
    # where PL206 and PL207 point: the limit that is too small
    "queue_depth_limit": "queue_depth",
    "queue_wait_limit": "queue_wait",
    "gang": "gang",
    "preemption": "preemption",
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
    from policylint.model import POOL_PLACES

    facts = set(FACTS["pool"]) | {"queue_depth_limit", "queue_wait_limit"}  # limits: finding places only
    bad = sorted(f for f in POOL_FACT_PLACES if f not in facts)
    bad += sorted(f"{f} -> {p}" for f, p in POOL_FACT_PLACES.items() if p not in POOL_PLACES)
    if bad:
        raise RuntimeError(f"pool facts mapped to unknown facts or places: {', '.join(bad)}")


_check_fact_places()


@dataclass
class View:
    """One subject's facts plus where each is written."""

    subject: str
    label: str  # e.g. "workload chat-api", "pool prod/serving"
    doc: Document
    base: DocPath
    facts: dict[str, Any]
    paths: dict[str, DocPath] = field(default_factory=dict)
    #: the typed identity findings are keyed by, when the facts' ``name`` does not give it
    #: (a scheduler-made cluster is identified by what backs it, not by its shown name)
    target: Subject | None = None

    def path_of(self, fact: str | None) -> DocPath:
        if fact and fact in self.paths:
            return self.paths[fact]
        return self.base


def _num(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def _gpus(value: float | None, per_gpu: float | None, per_replica: int) -> int | None:
    if value is None or not per_gpu:
        return None
    from policylint.bands import gpus_for

    return int(gpus_for(value, per_gpu, per_replica))


def _evidence(tol: dict[str, Any]) -> dict[str, Any]:
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
    objective, service = _num(ev.get("objectiveSeconds")), _num(ev.get("serviceSeconds"))
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


def _flat_list(days: tuple[float, ...], shown: int = 3) -> str | None:
    if not days:
        return None
    dates = [dt.datetime.fromtimestamp(d, tz=dt.timezone.utc).strftime("%Y-%m-%d") for d in days[:shown]]
    more = len(days) - shown
    return ", ".join(dates) + (f" and {more} more" if more > 0 else "")


def _to_gpus(f: dict[str, Any]) -> tuple[float | None, int]:
    """Concurrency per GPU and GPUs per replica of a workload view; a GPU-weighted trace needs neither."""
    from policylint.measure.conversion import conversion_for

    return conversion_for(f.get("trace_unit"), f["per_gpu"], f["gpus_per_replica"])


def _pull_record(w: Workload) -> dict[str, Any] | None:
    """The provenance record ``policylint pull`` wrote beside the concurrency trace, if any."""
    from policylint.measure.sources.provenance import read_record

    ref = w.measurements.get("concurrency")
    if ref is None or ref.path is None:
        return None
    return read_record(ref.path)[0]


def _vram_exceeds(resident_gib: float | None, pool_spec: dict[str, Any], per_replica: int) -> bool | None:
    """Plausibility: a replica cannot keep more resident than its GPUs hold."""
    memory = _num((pool_spec.get("gpu") or {}).get("memoryGiB"))
    if resident_gib is None or memory is None:
        return None
    return resident_gib > memory * max(1, per_replica) + 1e-9


def workload_view(w: Workload, facts: WorkloadFacts, now: dt.datetime) -> View:
    from policylint.measure.sources.provenance import pull_facts

    spec = w.spec
    per = spec.get("perGpuConcurrency") or {}
    tol = spec.get("tolerance") or {}
    vram = spec.get("vram") or {}
    declared = spec.get("bands") or {}
    conc = spec.get("concurrency") or {}
    per_gpu = _num(per.get("value"))
    per_replica = int(spec.get("gpusPerReplica", 1))
    # The one conversion (a GPU-weighted trace is GPU demand already: no second one).
    from policylint.measure.conversion import gpu_conversion

    to_gpu, to_replica = gpu_conversion(w, facts.trace_unit)
    r = facts.report
    pool = w.pool
    pool_spec = pool.spec if pool else {}
    queue = pool_spec.get("queue") or {}
    sched = pool_spec.get("scheduling") or {}
    age = None
    if facts.last_sample is not None:
        # Unrounded: 30.004 days is older than 30; messages round, verdicts do not.
        age = (now - facts.last_sample).total_seconds() / 86_400.0
    resident_gib = _num(vram.get("residentGiB"))
    if resident_gib is None:
        resident_gib = facts.vram_resident_gib
    vram_missing = [
        what
        for what, value in (("residency ratio", facts.vram_ratio), ("resident GiB", resident_gib))
        if value is None
    ]
    buffer = pool_spec.get("bufferGpus")
    tail_gpus = facts.tail_job_gpus if facts.tail_job_gpus is not None else per_replica
    v: dict[str, Any] = {
        "name": w.name,
        "team": w.team,
        "workload_class": w.cls,
        "pool": pool.qualified if pool else None,
        "gpus_per_replica": per_replica,
        "trace_unit": facts.trace_unit,
        "concurrency_measured": r is not None,
        "concurrency_declared": _num(conc.get("declared")),
        "concurrency_trace_declared": "trace" in conc,
        "baseline": r.baseline if r else None,
        "daily": r.daily if r else None,
        "peak": r.peak if r else None,
        "sustained_max": facts.sustained_max,
        "baseline_gpus": _gpus(r.baseline if r else None, to_gpu, to_replica),
        "daily_gpus": _gpus(r.daily if r else None, to_gpu, to_replica),
        "peak_gpus": _gpus(r.peak if r else None, to_gpu, to_replica),
        # Unrounded: 89.9965 days is not 90.
        "window_days": r.window_days if r else None,
        "flat_days": len(facts.flat_days) if r else None,
        "flat_day_list": _flat_list(facts.flat_days),
        "step_seconds": facts.step_seconds if r else None,
        "cold_start_window_seconds": facts.cold_start_seconds,
        "measurement_age_days": age,
        "last_sample": facts.last_sample.strftime("%Y-%m-%d") if facts.last_sample else None,
        "noise_spikes": r.noise_spike_count if r else None,
        "real_spikes": r.real_spike_count if r else None,
        "per_gpu": per_gpu,
        "per_gpu_measured_in": per.get("measuredIn"),
        "per_gpu_source": per.get("source"),
        "cold_start_seconds": _num(spec.get("coldStartSeconds")),
        "tolerance_seconds": _num(tol.get("maxQueueSeconds")),
        **_evidence(tol),
        "tolerance_label": tol.get("label"),
        "pool_capacity_gpus": None,
        "max_wait_seconds": None,
        "p99_wait_seconds": None,
        "daily_max_wait_seconds": None,
        "daily_rejected_share": None,
        "capacity_share": None,
        "queue_depth_needed": None,
        "declared_baseline": _num(declared.get("baseline")),
        "declared_daily": _num(declared.get("daily")),
        "declared_peak": _num(declared.get("peak")),
        "vram_resident_gib": resident_gib,
        "vram_ratio": facts.vram_ratio,
        "vram_residency_seconds": facts.vram_residency_seconds,
        "vram_active_seconds": facts.vram_active_seconds,
        "vram_measured": not vram_missing,
        "vram_missing": " and ".join(vram_missing) or None,
        "durations_measured": facts.p50 is not None and facts.p99 is not None,
        "p50_seconds": facts.p50,
        "p90_seconds": facts.p90,
        "p99_seconds": facts.p99,
        "tail_ratio": facts.tail_ratio,
        "tail_job_gpus": tail_gpus,
        "multi_gpu_job": w.cls in ("training", "batch") and per_replica > 1,
        "pool_serves_class": (w.cls in (pool_spec.get("serves") or [])) if pool else None,
        "pool_buffer_gpus": int(buffer) if isinstance(buffer, int) else 0,
        "pool_preemption": bool(sched.get("preemption")) if pool else None,
        "pool_tail_protected": _tail_protected(pool, tail_gpus) if pool else None,
        "pool_overflow": pool_spec.get("overflow"),
        "pool_queue_max_depth": queue.get("maxDepth"),
        "pool_queue_max_wait_seconds": _num(queue.get("maxWaitSeconds")),
        "pool_gpu_memory_gib": _num((pool_spec.get("gpu") or {}).get("memoryGiB")) if pool else None,
        "pulls": pull_facts(w, now),
        "vram_exceeds_gpu_memory": _vram_exceeds(resident_gib, pool_spec, per_replica) if pool else None,
        "vram_declared_gib": _num(vram.get("residentGiB")),
        "vram_trace_gib": facts.vram_resident_gib,
    }
    from policylint.measure.integrity.facts import workload_facts as integrity_facts
    from policylint.measure.integrity.timing import pulled_range_outside

    v.update(integrity_facts(facts.integrity, now.timestamp(), len(r.outlier_days) if r else None))
    v["pulled_range_outside_seconds"] = pulled_range_outside(facts.integrity, _pull_record(w))
    from policylint.measure.integrity.timing import pulled_digest_matches

    ref = w.measurements.get("concurrency")
    v["pulled_digest_matches"] = pulled_digest_matches(_pull_record(w), str(ref.path) if ref is not None and ref.path is not None else None)
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
        "pulled_range_outside_seconds": (*trace, "path"),
        "pulled_digest_matches": (*trace, "path"),
        "vram_seconds_after_now": ("spec", "vram", "trace", "path") if "trace" in vram else ("spec", "vram"),
        "jobs_seconds_after_now": (
            ("spec", "durations", "jobs", "path") if "jobs" in (spec.get("durations") or {}) else ("spec", "durations")
        ),
        "vram_declared_gib": ("spec", "vram", "residentGiB") if "residentGiB" in vram else ("spec", "vram"),
        "job_gpus_max": ("spec", "gpusPerReplica") if "gpusPerReplica" in spec else ("spec", "class"),
        "excluded_share": ("spec", "concurrency", "exclude") if "exclude" in conc else (*trace, "path"),
        "vram_exceeds_gpu_memory": ("spec", "vram", "residentGiB") if "residentGiB" in vram else ("spec", "vram"),
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
        "pool_serves_class": ("spec", "pool"),
    }
    return View("workload", f"workload {w.name}", w.doc, ("metadata", "name"), v, paths)


def capacity_shares(pool: Pool, wfacts: dict[str, dict[str, Any]]) -> dict[str, float]:
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


def _depth_facts(v: dict[str, Any], facts: WorkloadFacts, capacity: float) -> None:
    """The queue depth a workload's spikes need above its capacity share (PL206).

    Spike height sets queue depth: what stands above the capacity at one time must
    fit in the queue. Pools that queue their overflow absorb all demand; pools that
    reject it only the daily band. Nothing is rounded before the ceiling to a whole
    request.
    """
    import numpy as np

    r = facts.report
    v["capacity_share"] = capacity
    top = facts.usable_max
    if top is None:
        return
    # The highest sample above the capacity, from the highest sample: subtracting the
    # capacity and cutting at the daily band are monotone (also once rounded), so
    # max(min(c, daily) - capacity) over the samples is min(max c, daily) - capacity, exactly.
    if v["pool_overflow"] != "queue" and r is not None:
        top = float(np.minimum(top, r.daily))  # NaN when the daily band is: no sample is usable
    if not math.isnan(top):
        v["queue_depth_needed"] = int(max(0.0, math.ceil(float(top - capacity) - 1e-9)))


def _tail_protected(pool: Pool, tail_job_gpus: int = 1) -> bool:
    """Preemption, or a buffer that holds at least one long-tail job (a smaller one protects nothing)."""
    sched = pool.spec.get("scheduling") or {}
    buffer = pool.spec.get("bufferGpus")
    return bool(sched.get("preemption")) or (isinstance(buffer, int) and buffer >= tail_job_gpus > 0)


def _sum(values: list[int | None]) -> int | None:
    if not values or any(x is None for x in values):
        return None
    return int(sum(x for x in values if x is not None))


def pool_view(pool: Pool, wviews: dict[str, View], proposed: int, pooled: PoolFacts | None = None) -> View:
    spec = pool.spec
    elastic = spec.get("elastic") or {}
    queue = spec.get("queue") or {}
    sched = spec.get("scheduling") or {}
    names = sorted(w.name for w in pool.workloads)
    wv = [wviews[n].facts for n in names]
    reserved = pool.reserved_gpus
    elastic_gpus = pool.elastic_gpus
    tolerances = [f["tolerance_seconds"] for f in wv if f["tolerance_seconds"] is not None]
    spread = None
    if len(tolerances) >= 2:
        lo, hi = min(tolerances), max(tolerances)
        spread = math.inf if lo <= 0 else hi / lo  # unrounded: the verdict compares it exactly
    memory = _num((spec.get("gpu") or {}).get("memoryGiB"))
    resident: list[float | None] = []
    for f in wv:
        if f["workload_class"] != "inference":
            continue
        if f["vram_resident_gib"] is None or f["baseline_gpus"] is None:
            resident.append(None)
            continue
        replicas = max(1, math.ceil(f["baseline_gpus"] / max(1, f["gpus_per_replica"])))
        resident.append(f["vram_resident_gib"] * replicas)
    # Shared GPUs (multi-model serving): any GPU may be asked to hold every model, so
    # their memory adds up. Exclusive GPUs hold one replica each: the largest model decides.
    sharing = spec.get("sharing", "exclusive")
    per_gpu_resident = [
        f["vram_resident_gib"] / max(1, f["gpus_per_replica"])
        for f in wv
        if f["workload_class"] == "inference" and f["vram_resident_gib"] is not None
    ]
    v: dict[str, Any] = {
        "name": pool.name,
        "cluster": pool.cluster.name,
        "qualified": pool.qualified,
        "reserved_gpus": reserved,
        "elastic_gpus": elastic_gpus,
        "capacity_gpus": pool.capacity_gpus,
        "proposed_gpus": proposed,
        "committed_gpus": reserved + proposed,
        "gpu_memory_gib": memory,
        "serves": list(spec.get("serves") or []),
        "classes": sorted({f["workload_class"] for f in wv}),
        "workload_names": names,
        "workload_count": len(names),
        "unmeasured_workloads": [f["name"] for f in wv if f["baseline_gpus"] is None],
        "overflow": spec.get("overflow"),
        "queue_max_depth": queue.get("maxDepth"),
        "queue_max_wait_seconds": _num(queue.get("maxWaitSeconds")),
        "gang": sched.get("gang"),
        "preemption": sched.get("preemption"),
        "buffer_gpus": spec.get("bufferGpus"),
        "multi_gpu_training": any(f["workload_class"] == "training" and f["gpus_per_replica"] > 1 for f in wv),
        "tolerance_min_seconds": min(tolerances) if tolerances else None,
        "tolerance_max_seconds": max(tolerances) if tolerances else None,
        "tolerance_spread": spread,
        "resident_gib_total": None if (not resident or None in resident) else sum(r for r in resident if r),
        "memory_gib_total": reserved * memory if memory is not None else None,
        "resident_gib_per_gpu": (
            (sum(per_gpu_resident) if sharing == "shared" else max(per_gpu_resident)) if per_gpu_resident else None
        ),
        "sharing": sharing,
        "multi_gpu_jobs": [f["name"] for f in wv if f["multi_gpu_job"]],
        "workload_tolerances": [
            {"name": f["name"], "tolerance_seconds": f["tolerance_seconds"]} for f in wv if f["tolerance_seconds"] is not None
        ],
        "queue_needs": [
            {k: f[k] for k in ("name", "queue_depth_needed", "tolerance_seconds", "daily_rejected_share")} for f in wv
        ],
    }
    sums = {
        "baseline": _sum([f["baseline_gpus"] for f in wv]),
        "daily": _sum([f["daily_gpus"] for f in wv]),
        "peak": _sum([f["peak_gpus"] for f in wv]),
        "sustained_max": _sum([_gpus(f["sustained_max"], *_to_gpus(f)) for f in wv]),
    }
    if pooled is not None and pooled.member_sums is not None:
        # The workloads' bands at the pool's own cold start: the same window as the pooled figure.
        for name, value in zip(("baseline", "daily", "peak", "sustained_max"), pooled.member_sums):
            sums[name] = None if value is None else int(value)
    from policylint.engine.pooled_facts import pooled_pool_facts

    v.update(pooled_pool_facts(pooled, sums))
    # The queue is the pool's: what it turns away is the pooled figure, for every workload.
    for need in v["queue_needs"]:
        need["daily_rejected_share"] = v["daily_rejected_share"]
    from policylint.schedulers import POOL_FACTS, pool_facts

    v.update({name: None for name in POOL_FACTS})
    v.update(pool_facts(pool))
    paths = {fact: pool.place(place) for fact, place in POOL_FACT_PLACES.items()}
    return View("pool", f"pool {pool.qualified}", pool.doc, pool.place("name"), v, paths)


def _group(asks: list[tuple[str, int]]) -> list[dict[str, Any]]:
    """The proposals asking for one pool, each once with its GPUs summed, by name."""
    total: dict[str, int] = {}
    for name, gpus in asks:
        total[name] = total.get(name, 0) + gpus
    return [{"name": name, "gpus": total[name]} for name in sorted(total)]


@dataclass(frozen=True)
class History:
    """What a pool looked like at the ``--diff`` base revision."""

    reserved_before: dict[str, int]  # "cluster/pool" -> reserved GPUs at the base
    changed_files: frozenset[str]  # real paths of files changed since the base


def _history_facts(pool: Pool, history: History | None) -> dict[str, Any]:
    if history is None:
        return {"reserved_gpus_before": None, "evidence_changed": None}
    import os

    changed = any(
        m.path is not None and os.path.realpath(m.path) in history.changed_files
        for w in pool.workloads
        for m in w.measurements.values()
    )
    return {"reserved_gpus_before": history.reserved_before.get(pool.qualified), "evidence_changed": changed}


def build_views(
    model: Model,
    facts: dict[str, WorkloadFacts],
    now: dt.datetime,
    history: History | None = None,
    pools: dict[str, PoolFacts] | None = None,
    only: Needed | None = None,
    prebuilt: Mapping[str, View] | None = None,
    record: Callable[[Workload, WorkloadFacts, View], None] | None = None,
) -> list[View]:
    """Views for every subject of the model, in a deterministic order.

    ``pools`` is the pooled demand from :func:`policylint.measure.pools.measure_pools`;
    computed here when the caller did not. ``only`` (None: everything) limits the
    views to those subjects; ``facts`` and ``pools`` then need to hold just what
    :func:`policylint.engine.scope.needed` says they read. ``prebuilt`` holds workload views
    already built (from the repository index, :mod:`policylint.engine.repo_index`); ``record``
    sees every workload view built here, before the pool steps add to it.
    """
    from policylint.engine.pooled_facts import POOLED_WORKLOAD_FACTS, pool_workload_facts

    if pools is None:
        from policylint.measure.pools import measure_pools

        pools = measure_pools(model, facts)
    wanted_pools = model.pools if only is None else [p for p in model.pools if p.qualified in only.pools]
    wviews: dict[str, View] = {}
    for n, workload in sorted(model.workloads.items()):
        if only is None or n in only.workloads:
            if prebuilt is not None and n in prebuilt:
                wviews[n] = prebuilt[n]
                continue
            wviews[n] = workload_view(workload, facts[n], now)
            if record is not None:
                record(workload, facts[n], wviews[n])
    for pool in wanted_pools:
        shares = capacity_shares(pool, {w.name: wviews[w.name].facts for w in pool.workloads})
        for member in pool.workloads:
            share, wf, f = shares.get(member.name), facts[member.name], wviews[member.name].facts
            per_gpu, per_replica = _to_gpus(f)
            if share is not None and wf.report is not None and per_gpu:
                _depth_facts(f, wf, share / per_replica * per_gpu)
    for w in wviews.values():
        for name in POOLED_WORKLOAD_FACTS:
            w.facts.setdefault(name, None)
    proposed: dict[str, int] = {}
    #: every proposal's requests per pool: proposals are judged together, so splitting one ask in two gains nothing
    proposed_by: dict[str, list[tuple[str, int]]] = {}
    for pname, p in sorted(model.proposals.items()):
        if p.cluster is None:
            continue
        for req in p.spec.get("requests", []):
            if req["pool"] in p.cluster.pools:
                key = f"{p.cluster.name}/{req['pool']}"
                proposed[key] = proposed.get(key, 0) + int(req["gpus"])
                proposed_by.setdefault(key, []).append((pname, int(req["gpus"])))
    pviews = {
        pool.qualified: pool_view(pool, wviews, proposed.get(pool.qualified, 0), pools.get(pool.qualified))
        for pool in wanted_pools
    }
    for pool in wanted_pools:
        pool_workload_facts(pool, pviews[pool.qualified], wviews)
        pviews[pool.qualified].facts.update(_history_facts(pool, history))
    from policylint.measure.integrity.copies import copy_facts
    from policylint.measure.integrity.plausibility import pool_integrity_facts

    copy_facts(list(model.workloads.values()), facts, wviews)  # near copies, across pools too
    for pool in wanted_pools:
        volcano = getattr(model.schedulers.get("volcano"), "queues", None)
        pviews[pool.qualified].facts.update(pool_integrity_facts(pool, pviews[pool.qualified].facts, volcano))
    views: list[View] = list(wviews.values())
    views += [pviews[k] for k in sorted(pviews)]
    for name in sorted(model.clusters):
        if only is not None and name not in only.clusters:
            continue
        cluster = model.clusters[name]
        members = [wviews[w.name].facts for pool in cluster.pools.values() for w in pool.workloads]
        tolerances = sorted(f["tolerance_seconds"] for f in members if f["tolerance_seconds"] is not None)
        views.append(
            View(
                "cluster",
                f"cluster {name}",
                cluster.doc,
                ("metadata", "name"),
                {
                    "name": name,
                    "workload_count": len(members),
                    "tolerance_declared_count": len(tolerances),
                    "tolerances": tolerances,
                    "loosened_options": None,  # the run's configuration: set by the linter
                    "loosened_count": None,
                    "loosened_summary": None,
                },
                target=cluster.subject,
            )
        )
    for name in sorted(model.proposals):
        if only is not None and name not in only.proposals:
            continue
        p = model.proposals[name]
        requests = []
        for i, req in enumerate(p.spec.get("requests", [])):
            target = p.pools.get(req["pool"])
            pv = pviews.get(target.qualified) if target else None
            requests.append(
                {
                    "index": i,
                    "pool": req["pool"],
                    "gpus": int(req["gpus"]),
                    "reserved": pv.facts["reserved_gpus"] if pv else None,
                    "baseline_gpus": pv.facts["baseline_gpus"] if pv else None,
                    "baseline_gpus_sum": pv.facts["baseline_gpus_sum"] if pv else None,
                    "baseline_pooling": pv.facts["baseline_pooling"] if pv else None,
                    "measured_workloads": pv.facts["measured_workload_count"] if pv else None,
                    "pool_workloads": pv.facts["workload_count"] if pv else None,
                    "pool_proposed_gpus": proposed.get(target.qualified, 0) if target else None,
                    "pool_proposals": _group(proposed_by.get(target.qualified, [])) if target else [],
                }
            )
        cluster_measured = None
        if p.cluster is not None:
            cluster_measured = sum(
                pviews[pool.qualified].facts["measured_workload_count"] for pool in p.cluster.pools.values()
            )
        cited = [wviews[w.name].facts for w in p.workloads if w.name in wviews]
        views.append(
            View(
                "proposal",
                f"proposal {name}",
                p.doc,
                ("metadata", "name"),
                {
                    "name": name,
                    "cluster": p.spec.get("cluster"),
                    "requested_gpus": sum(r["gpus"] for r in requests),
                    "cited_workloads": len(p.spec.get("workloads", [])),
                    "cited_measured": sum(1 for f in cited if f["concurrency_measured"]),
                    "requests": requests,
                    "justification": (p.spec.get("justification") or "").strip() or None,
                    "cluster_measured": cluster_measured,
                },
                {
                    "cited_workloads": ("spec", "workloads") if "workloads" in p.spec else ("spec",),
                    "cited_measured": ("spec", "workloads") if "workloads" in p.spec else ("spec",),
                    "requested_gpus": ("spec", "requests"),
                    "justification": ("spec", "justification") if "justification" in p.spec else ("spec",),
                },
            )
        )
    return views
