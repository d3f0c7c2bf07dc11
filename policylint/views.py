"""Facts: the plain view of each subject that rules judge.

For every workload, pool, cluster and proposal this builds a flat dict of
declared fields and computed facts (bands in concurrency and GPUs, spikes,
duration percentiles, VRAM ratio, and each pool's pooled demand and queue - see
:mod:`policylint.pooled_facts`). Rules only ever see these dicts. :data:`FACTS`
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

from policylint.load import Document, DocPath

if TYPE_CHECKING:
    from policylint.measure import PoolFacts, WorkloadFacts
    from policylint.model import Model, Pool, Workload

FACTS: dict[str, dict[str, str]] = {
    "workload": {
        "name": "metadata.name",
        "team": "metadata.team",
        "workload_class": "training, inference or batch",
        "pool": "cluster/pool the workload runs in",
        "gpus_per_replica": "GPUs one replica or job occupies",
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
        "window_days": "days of valid samples after cleaning",
        "measurement_age_days": "days between the last sample and now",
        "last_sample": "timestamp of the last sample",
        "noise_spikes": "spikes narrower than the cold-start window",
        "real_spikes": "spikes at least as wide as the cold-start window",
        "per_gpu": "declared concurrency one GPU sustains",
        "per_gpu_measured_in": "where the per-GPU figure was measured",
        "per_gpu_source": "source of the per-GPU figure",
        "cold_start_seconds": "declared cold-start window, seconds",
        "tolerance_seconds": "declared maximum tolerable queue seconds",
        "tolerance_evidence": "evidence for the tolerance",
        "tolerance_label": "free-form priority label",
        "pool_capacity_gpus": "reserved + elastic GPUs of the workload's pool (the queue's capacity)",
        "max_wait_seconds": "simulated max wait in the pool's queue (pooled GPU demand at the pool's capacity), seconds",
        "p99_wait_seconds": "simulated p99 wait in the pool's queue, seconds",
        "daily_max_wait_seconds": (
            "simulated max wait in the pool's queue for the pooled demand up to the pool's daily band, seconds"
            " (demand above it is the peak band, left to the pool's overflow policy)"
        ),
        "declared_baseline": "declared baseline band top",
        "declared_daily": "declared daily band top",
        "declared_peak": "declared peak band top",
        "vram_resident_gib": "GiB the model keeps resident per replica",
        "vram_ratio": "VRAM residency seconds / active compute seconds",
        "p50_seconds": "median job duration",
        "p90_seconds": "p90 job duration",
        "p99_seconds": "p99 job duration",
        "tail_ratio": "p99 / p50 job duration",
        "pool_serves_class": "true when the pool lists this workload's class in serves",
        "pool_tail_protected": "true when the pool has preemption or buffer GPUs",
        "pool_gpu_memory_gib": "memory of one GPU in the pool",
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
        "tolerance_min_seconds": "tightest tolerance of the pool's workloads",
        "tolerance_max_seconds": "loosest tolerance of the pool's workloads",
        "tolerance_spread": "loosest / tightest tolerance",
        "resident_gib_total": "VRAM the inference models keep resident across their baseline replicas",
        "memory_gib_total": "GPU memory of the reserved GPUs",
        "reserved_gpus_before": "reserved GPUs at the --diff base revision (unknown without --diff)",
        "evidence_changed": "true when a measurement of the pool's workloads changed since the --diff base",
        "resident_gib_per_gpu": (
            "GiB one GPU holds when every inference model of the pool is resident on it"
            " (sum of residentGiB / gpusPerReplica; unknown when no inference workload declares residentGiB)"
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
            " measured_workloads, pool_workloads (list of objects)"
        ),
        "cluster_measured": "workloads of the proposal's cluster whose GPU demand is measured",
        "justification": "justification text",
    },
}


def _extend_facts() -> None:
    from policylint.pooled_facts import POOLED_POOL_FACTS, POOLED_WORKLOAD_FACTS
    from policylint.schedulers import POOL_FACTS

    for name, description in POOL_FACTS.items():
        FACTS["pool"].setdefault(name, description)
    for name, description in POOLED_POOL_FACTS.items():
        FACTS["pool"].setdefault(name, description)
    for name, description in POOLED_WORKLOAD_FACTS.items():
        FACTS["workload"].setdefault(name, description)


_extend_facts()


@dataclass
class View:
    """One subject's facts plus where each is written."""

    subject: str
    label: str  # e.g. "workload chat-api", "pool prod/serving"
    doc: Document
    base: DocPath
    facts: dict[str, Any]
    paths: dict[str, DocPath] = field(default_factory=dict)

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


def workload_view(w: Workload, facts: WorkloadFacts, now: dt.datetime) -> View:
    spec = w.spec
    per = spec.get("perGpuConcurrency") or {}
    tol = spec.get("tolerance") or {}
    vram = spec.get("vram") or {}
    declared = spec.get("bands") or {}
    conc = spec.get("concurrency") or {}
    per_gpu = _num(per.get("value"))
    per_replica = int(spec.get("gpusPerReplica", 1))
    r = facts.report
    pool = w.pool
    age = None
    if facts.last_sample is not None:
        age = round((now - facts.last_sample).total_seconds() / 86_400.0, 2)
    v: dict[str, Any] = {
        "name": w.name,
        "team": w.team,
        "workload_class": w.cls,
        "pool": pool.qualified if pool else None,
        "gpus_per_replica": per_replica,
        "concurrency_measured": r is not None,
        "concurrency_declared": _num(conc.get("declared")),
        "concurrency_trace_declared": "trace" in conc,
        "baseline": r.baseline if r else None,
        "daily": r.daily if r else None,
        "peak": r.peak if r else None,
        "sustained_max": facts.sustained_max,
        "baseline_gpus": _gpus(r.baseline if r else None, per_gpu, per_replica),
        "daily_gpus": _gpus(r.daily if r else None, per_gpu, per_replica),
        "peak_gpus": _gpus(r.peak if r else None, per_gpu, per_replica),
        "window_days": round(r.window_days, 2) if r else None,
        "measurement_age_days": age,
        "last_sample": facts.last_sample.strftime("%Y-%m-%d") if facts.last_sample else None,
        "noise_spikes": r.noise_spike_count if r else None,
        "real_spikes": r.real_spike_count if r else None,
        "per_gpu": per_gpu,
        "per_gpu_measured_in": per.get("measuredIn"),
        "per_gpu_source": per.get("source"),
        "cold_start_seconds": _num(spec.get("coldStartSeconds")),
        "tolerance_seconds": _num(tol.get("maxQueueSeconds")),
        "tolerance_evidence": (tol.get("evidence") or "").strip() or None,
        "tolerance_label": tol.get("label"),
        "pool_capacity_gpus": None,
        "max_wait_seconds": None,
        "p99_wait_seconds": None,
        "daily_max_wait_seconds": None,
        "declared_baseline": _num(declared.get("baseline")),
        "declared_daily": _num(declared.get("daily")),
        "declared_peak": _num(declared.get("peak")),
        "vram_resident_gib": _num(vram.get("residentGiB")),
        "vram_ratio": round(facts.vram_ratio, 2) if facts.vram_ratio is not None else None,
        "p50_seconds": facts.p50,
        "p90_seconds": facts.p90,
        "p99_seconds": facts.p99,
        "tail_ratio": round(facts.tail_ratio, 2) if facts.tail_ratio is not None else None,
        "pool_serves_class": (w.cls in (pool.spec.get("serves") or [])) if pool else None,
        "pool_tail_protected": _tail_protected(pool) if pool else None,
        "pool_gpu_memory_gib": _num((pool.spec.get("gpu") or {}).get("memoryGiB")) if pool else None,
    }
    trace = ("spec", "concurrency", "trace")
    paths: dict[str, DocPath] = {
        "name": ("metadata", "name"),
        "workload_class": ("spec", "class"),
        "pool": ("spec", "pool"),
        "concurrency_measured": ("spec", "concurrency") if "concurrency" in spec else ("spec",),
        "concurrency_declared": ("spec", "concurrency", "declared"),
        "window_days": (*trace, "path"),
        "measurement_age_days": (*trace, "path"),
        "per_gpu": ("spec", "perGpuConcurrency", "value"),
        "per_gpu_measured_in": ("spec", "perGpuConcurrency", "measuredIn"),
        "cold_start_seconds": ("spec", "coldStartSeconds"),
        "tolerance_seconds": ("spec", "tolerance"),
        "tolerance_evidence": ("spec", "tolerance"),
        "max_wait_seconds": ("spec", "tolerance"),
        "daily_max_wait_seconds": ("spec", "tolerance"),
        "declared_baseline": ("spec", "bands", "baseline"),
        "declared_daily": ("spec", "bands", "daily"),
        "declared_peak": ("spec", "bands", "peak"),
        "vram_ratio": ("spec", "vram"),
        "vram_resident_gib": ("spec", "vram", "residentGiB"),
        "tail_ratio": ("spec", "durations"),
        "pool_serves_class": ("spec", "pool"),
    }
    return View("workload", f"workload {w.name}", w.doc, ("metadata", "name"), v, paths)


def _tail_protected(pool: Pool) -> bool:
    sched = pool.spec.get("scheduling") or {}
    return bool(sched.get("preemption")) or bool(pool.spec.get("bufferGpus"))


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
    reserved = int(spec.get("reservedGpus", 0))
    elastic_gpus = int(elastic.get("maxGpus", 0))
    tolerances = [f["tolerance_seconds"] for f in wv if f["tolerance_seconds"] is not None]
    spread = None
    if len(tolerances) >= 2:
        lo, hi = min(tolerances), max(tolerances)
        spread = math.inf if lo <= 0 else round(hi / lo, 1)
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
    # Multi-model serving: any GPU of the pool may be asked to hold every model.
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
        "capacity_gpus": reserved + elastic_gpus,
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
        "resident_gib_total": None if (not resident or None in resident) else round(sum(r for r in resident if r), 1),
        "memory_gib_total": round(reserved * memory, 1) if memory is not None else None,
        "resident_gib_per_gpu": round(sum(per_gpu_resident), 1) if per_gpu_resident else None,
    }
    sums = {
        "baseline": _sum([f["baseline_gpus"] for f in wv]),
        "daily": _sum([f["daily_gpus"] for f in wv]),
        "peak": _sum([f["peak_gpus"] for f in wv]),
        "sustained_max": _sum([_gpus(f["sustained_max"], f["per_gpu"], f["gpus_per_replica"]) for f in wv]),
    }
    from policylint.pooled_facts import pooled_pool_facts

    v.update(pooled_pool_facts(pooled, sums))
    from policylint.schedulers import POOL_FACTS, pool_facts

    v.update({name: None for name in POOL_FACTS})
    v.update(pool_facts(pool))
    base = pool.doc_path
    paths = {
        "name": (*base, "name"),
        "reserved_gpus": (*base, "reservedGpus"),
        "committed_gpus": (*base, "reservedGpus"),
        "elastic_gpus": (*base, "elastic", "maxGpus"),
        "capacity_gpus": (*base, "elastic") if "elastic" in spec else (*base, "reservedGpus"),
        "sustained_max_gpus": (*base, "elastic") if "elastic" in spec else (*base, "reservedGpus"),
        "measured_workload_count": (*base, "elastic") if "elastic" in spec and not spec.get("reservedGpus")
        else (*base, "reservedGpus"),
        "pooled_window_days": (*base, "name"),
        "overflow": (*base, "overflow"),
        "queue_max_depth": (*base, "queue"),
        "queue_max_wait_seconds": (*base, "queue"),
        "gang": (*base, "scheduling"),
        "preemption": (*base, "scheduling"),
        "serves": (*base, "serves"),
        "classes": (*base, "serves"),
        "tolerance_spread": (*base, "name"),
        "resident_gib_total": (*base, "gpu"),
        "memory_gib_total": (*base, "gpu"),
        "resident_gib_per_gpu": (*base, "gpu"),
    }
    paths.update(pool.paths)  # scheduler pools: facts live on the manifest's own lines
    for fact, source in (("measured_workload_count", "reserved_gpus"), ("pooled_window_days", "name")):
        if source in pool.paths and fact not in pool.paths:
            paths[fact] = pool.paths[source]
    return View("pool", f"pool {pool.qualified}", pool.doc, pool.paths.get("name", (*base, "name")), v, paths)


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
) -> list[View]:
    """Views for every subject of the model, in a deterministic order.

    ``pools`` is the pooled demand from :func:`policylint.measure.measure_pools`;
    computed here when the caller did not.
    """
    from policylint.pooled_facts import POOLED_WORKLOAD_FACTS, pool_workload_facts

    if pools is None:
        from policylint.measure import measure_pools

        pools = measure_pools(model, facts)
    wviews = {n: workload_view(w, facts[n], now) for n, w in sorted(model.workloads.items())}
    for w in wviews.values():
        for name in POOLED_WORKLOAD_FACTS:
            w.facts.setdefault(name, None)
    proposed: dict[str, int] = {}
    for p in model.proposals.values():
        if p.cluster is None:
            continue
        for req in p.spec.get("requests", []):
            if req["pool"] in p.cluster.pools:
                key = f"{p.cluster.name}/{req['pool']}"
                proposed[key] = proposed.get(key, 0) + int(req["gpus"])
    pviews = {
        pool.qualified: pool_view(pool, wviews, proposed.get(pool.qualified, 0), pools.get(pool.qualified))
        for pool in model.pools
    }
    for pool in model.pools:
        pool_workload_facts(pool, pviews[pool.qualified], wviews)
        pviews[pool.qualified].facts.update(_history_facts(pool, history))
        pviews[pool.qualified].paths.setdefault("reserved_gpus_before", (*pool.doc_path, "reservedGpus"))
    views: list[View] = list(wviews.values())
    views += [pviews[k] for k in sorted(pviews)]
    for name in sorted(model.clusters):
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
                },
            )
        )
    for name in sorted(model.proposals):
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
