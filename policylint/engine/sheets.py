"""The fact sheets: every fact of a workload, pool, cluster and proposal, declared once with its type.

Rules judge these sheets and nothing else. A sheet is a dataclass
(:class:`policylint.facts.Facts`): each field is a fact with its unit and
description, and the facts other stages compute are parts declared where those
stages live - the pooled demand (:mod:`policylint.engine.pooled_facts`), the
integrity of the evidence (:mod:`policylint.measure.integrity_facts`) and the
scheduler queue behind a pool (:class:`policylint.model.schedulers.SchedulerPoolFacts`).
:data:`SHEETS` maps each subject kind to its sheet; :data:`FACTS`, the catalogue
rule files are checked against when they load, is generated from them.

Facts marked ``default=None`` are filled in after the sheet is built, when the
subject's neighbours are known (capacity shares, the ``--diff`` history, the
run's configuration); every other fact is given by the builder in
:mod:`policylint.engine.views`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict

from policylint.engine.pooled_facts import PooledPoolFacts, PooledWorkloadFacts
from policylint.facts import Facts, catalogue, fact, part
from policylint.measure.integrity_facts import IntegrityPoolFacts, IntegrityWorkloadFacts
from policylint.model.schedulers import SchedulerPoolFacts


class WorkloadTolerance(TypedDict):
    """One workload's declared tolerance, in a pool's ``workload_tolerances``."""

    name: str
    tolerance_seconds: float


class QueueNeed(TypedDict):
    """What one workload asks of its pool's queue, in the pool's ``queue_needs``."""

    name: str
    queue_depth_needed: int | None
    tolerance_seconds: float | None
    daily_rejected_share: float | None


class ProposalAsk(TypedDict):
    """One proposal asking for a pool, its GPUs summed over its requests, in ``pool_proposals``."""

    name: str
    gpus: int


class PoolMerge(TypedDict):
    """Two pools of one plan group and what they need apart and pooled, in a cluster's ``pool_merges``."""

    pools: list[str]
    apart_gpus: int
    pooled_gpus: int
    saving_gpus: int
    apart_reserved_gpus: int
    pooled_reserved_gpus: int
    cold_start_seconds: float
    window_days: float


class ProposalRequest(TypedDict):
    """One request of a proposal beside the pool it is for (None where the pool is unknown)."""

    index: int
    pool: str
    gpus: int
    reserved: int | None
    #: the GPUs the pool owns (:attr:`policylint.model.Pool.owned_gpus`), with its parent queues' guarantee that no
    #: other queue may use (:attr:`policylint.model.Pool.parent_only_gpus`): what a purchase adds to (PL801)
    owned: int | None
    #: text for messages: ``owned`` and what it is made of (:func:`policylint.engine.shortfall.owned_text`)
    owned_text: str | None
    #: the parts alone (:func:`policylint.engine.shortfall.owned_parts`), for the review page
    owned_parts: str | None
    baseline_gpus: int | None
    baseline_gpus_sum: int | None
    baseline_pooling: str | None
    measured_workloads: int | None
    pool_workloads: int | None
    pool_proposed_gpus: int | None
    pool_proposals: list[ProposalAsk]
    gpu_model: str | None
    pool_gpu_model: str | None
    #: with --diff, the pool's gpu.model at the base when this change changes it: what its figures were measured on
    measured_gpu_model: str | None


@dataclass(kw_only=True, eq=False)
class WorkloadFactSheet(Facts):
    """One workload: its declarations, its measured bands and spikes, its pool's limits as it sees them."""

    name: str = fact("metadata.name")
    team: str | None = fact("metadata.team")
    workload_class: str = fact("training, inference or batch")
    pool: str | None = fact("cluster/pool the workload runs in")
    gpus_per_replica: int = fact("GPUs one replica or job occupies", "GPUs")
    trace_unit: str | None = fact(
        "what the concurrency trace counts: concurrency, or gpus (GPU-weighted jobs, not converted "
        "again)",
    )
    trace_counts_jobs: bool = fact(
        "true when the concurrency trace counts the running rows of a job list or request log (format jobs or "
        "requests, not weighed by GPUs): each counts as gpusPerReplica GPUs",
        default=False,
    )
    concurrency_measured: bool = fact("true when a readable concurrency trace backs the workload")
    concurrency_declared: float | None = fact("a bare declared concurrency number (no measurement)", "concurrency")
    concurrency_trace_declared: bool = fact("true when the workload references a concurrency trace (readable or not)")
    baseline: float | None = fact("baseline band top, concurrency (p95 of the sustained series)", "concurrency")
    daily: float | None = fact("daily band top, concurrency (p99 of the sustained series)", "concurrency")
    peak: float | None = fact("peak band top, concurrency (max of the series)", "concurrency")
    sustained_max: float | None = fact("highest level held for a whole cold-start window", "concurrency")
    baseline_gpus: int | None = fact("GPUs the baseline band needs", "GPUs")
    daily_gpus: int | None = fact("GPUs the daily band needs", "GPUs")
    peak_gpus: int | None = fact("GPUs the peak band needs", "GPUs")
    rounding_gpus_mean: float | None = fact(
        "GPUs rounding up to whole replicas adds to the workload's cleaned GPU demand, on average over its "
        "usable samples, unrounded",
        "GPUs",
    )
    window_days: float | None = fact(
        "days of valid samples after cleaning (exclusions, flat days, outlier days), unrounded",
        "days",
    )
    flat_days: int | None = fact(
        "number of UTC days on which the trace holds one constant value (left out of the window)",
    )
    flat_day_list: str | None = fact("the first flat days, as dates")
    step_seconds: float | None = fact("sampling step of the concurrency trace, seconds", "s")
    cold_start_window_seconds: float | None = fact(
        "effective cold start the bands were computed with: the longer of the declared and the "
        "pool's elastic coldStartSeconds (either alone when the other is missing), else 300 s",
        "s",
    )
    measurement_age_days: float | None = fact("days between the last sample and now, unrounded", "days")
    last_sample: str | None = fact("timestamp of the last sample")
    noise_spikes: int | None = fact("spikes narrower than the cold-start window")
    real_spikes: int | None = fact("spikes at least as wide as the cold-start window")
    per_gpu: float | None = fact("declared concurrency one GPU sustains", "concurrency")
    per_gpu_measured_in: str | None = fact("where the per-GPU figure was measured")
    per_gpu_source: str | None = fact("source of the per-GPU figure")
    cold_start_seconds: float | None = fact("declared cold-start window, seconds", "s")
    tolerance_seconds: float | None = fact("declared maximum tolerable queue seconds", "s")
    tolerance_evidence: str | None = fact("evidence for the tolerance, as one readable text")
    tolerance_evidence_form: str | None = fact(
        "structured (objective and service time), document, url, text (free text), or unknown",
    )
    tolerance_evidence_texts: list[list[str]] = fact(
        "every text of the evidence as [field, text] pairs (free text, note, document, url)",
    )
    tolerance_evidence_document_words: int | None = fact(
        "words of text (runs of two or more letters) in the tolerance's evidence document, read up to 256 KiB "
        "(None without a readable document)",
        default=None,
    )
    tolerance_evidence_document_data: bool | None = fact(
        "true when the evidence document holds more digits than letters (a measurement or an export, not a text), "
        "or is one of the workload's own measurement files (None without a readable document)",
        default=None,
    )
    evidence_objective_seconds: float | None = fact("latency objective the tolerance was derived from, seconds", "s")
    evidence_service_seconds: float | None = fact("service time the tolerance was derived from, seconds", "s")
    evidence_queue_budget_seconds: float | None = fact("objective - service time: the most the work may wait, seconds", "s")
    tolerance_label: str | None = fact("free-form priority label")
    capacity_share: float | None = fact(
        "the part of the pool's GPUs, in concurrency, the workload's baseline takes (for queue "
        "depth)",
        "concurrency",
        default=None,
    )
    queue_depth_needed: int | None = fact(
        "most requests or jobs above capacity_share at one time: the queue depth its spikes need "
        "(demand up to the daily band when the pool rejects overflow, all demand when it queues)",
        default=None,
    )
    declared_baseline: float | None = fact("declared baseline band top", "concurrency")
    declared_daily: float | None = fact("declared daily band top", "concurrency")
    declared_peak: float | None = fact("declared peak band top", "concurrency")
    vram_resident_gib: float | None = fact(
        "GiB the model keeps resident per replica (declared residentGiB, else the peak of its VRAM "
        "trace)",
        "GiB",
    )
    vram_ratio: float | None = fact(
        "VRAM residency seconds / active compute seconds (resident samples only), unrounded",
    )
    vram_residency_seconds: float | None = fact(
        "seconds the model was resident (declared per day, or measured: summed over pods)",
        "s",
    )
    vram_active_seconds: float | None = fact(
        "active compute seconds (declared per day, or measured activity over resident samples, "
        "summed over pods)",
        "s",
    )
    vram_measured: bool = fact("true when both the residency ratio and the resident GiB are known")
    vram_missing: str | None = fact("what VRAM residency data the workload lacks")
    durations_measured: bool = fact("true when the job duration distribution (p50 and p99) is known")
    p50_seconds: float | None = fact("median job duration", "s")
    p90_seconds: float | None = fact("p90 job duration", "s")
    p99_seconds: float | None = fact("p99 job duration", "s")
    tail_ratio: float | None = fact("p99 / p50 job duration, unrounded")
    tail_job_gpus: int = fact(
        "GPUs one long-tail job holds (most GPUs among jobs at or above p99 duration, at least "
        "gpusPerReplica)",
        "GPUs",
    )
    multi_gpu_job: bool = fact("true for a training or batch workload whose jobs hold more than one GPU")
    pool_serves_class: bool | None = fact("true when the pool lists this workload's class in serves")
    pool_buffer_gpus: int = fact("GPUs the pool keeps free for long-tail jobs", "GPUs")
    pool_preemption: bool | None = fact("true when the pool can preempt")
    pool_tail_protected: bool | None = fact(
        "true when the pool has preemption, or buffer GPUs that hold at least one long-tail job",
    )
    pool_overflow: str | None = fact("the pool's overflow policy (queue or reject)")
    pool_queue_max_depth: int | None = fact("the pool's queue depth limit")
    pool_queue_max_wait_seconds: float | None = fact("the pool's queue wait limit, seconds", "s")
    pool_gpu_memory_gib: float | None = fact("memory of one GPU in the pool", "GiB")
    replica_memory_gpus: int | None = fact(
        "GPUs of the pool one replica's resident memory fills: ceil(resident GiB / GPU memory), at least 1 "
        "(None without both figures)",
        "GPUs",
        default=None,
    )
    pulls: list[dict[str, Any]] = fact(
        "per measurement with a Prometheus source: declared and pulled query and step, days since "
        "the pull",
    )
    vram_exceeds_gpu_memory: bool | None = fact(
        "plausibility: true when the resident GiB of one replica exceed the memory of the GPUs it "
        "occupies (pool gpu.memoryGiB x gpusPerReplica)",
    )
    vram_declared_gib: float | None = fact("plausibility: the declared vram.residentGiB (None when not declared)", "GiB")
    vram_trace_gib: float | None = fact(
        "plausibility: the most GiB the VRAM trace shows resident (None without a VRAM trace)",
        "GiB",
    )
    pooled: PooledWorkloadFacts = part(PooledWorkloadFacts)
    integrity: IntegrityWorkloadFacts = part()


@dataclass(kw_only=True, eq=False)
class PoolFactSheet(Facts):
    """One pool: its declared capacity and limits, its workloads, their pooled demand."""

    name: str = fact("pool name")
    cluster: str = fact("cluster name")
    qualified: str = fact("cluster/pool")
    reserved_gpus: int = fact("dedicated GPUs", "GPUs")
    elastic_gpus: int = fact("most GPUs added on demand", "GPUs")
    capacity_gpus: int = fact("reserved + elastic GPUs", "GPUs")
    proposed_gpus: int = fact("GPUs requested for this pool by proposals", "GPUs")
    held_gpus: int = fact(
        "GPUs that carry the baseline band: reserved_gpus, plus the quota a Kueue flavor lends when its ClusterQueue "
        "takes lent quota back by preemption (reclaimWithinCohort Any or LowerPriority)",
        "GPUs",
    )
    committed_gpus: int = fact("held + proposed GPUs (held_gpus: reserved, plus lent quota taken back by preemption)", "GPUs")
    committed_parts: str = fact(
        "text for messages: the parts of committed_gpus, 'reserved R + proposed P' (with the lent quota a Kueue "
        "flavor takes back by preemption when it has some)"
    )
    floor_advice: str = fact(
        "text for hints: how to hold the baseline band - reserve or propose the missing GPUs, or, for a Kueue flavor "
        "that lends quota it cannot take back and owns enough, lend less or reclaim by preemption"
    )
    committed_capacity_gpus: int = fact("reserved + proposed + elastic GPUs: the capacity once the proposals are bought", "GPUs")
    gpu_memory_gib: float | None = fact("memory of one GPU", "GiB")
    serves: list[str] = fact("classes the pool is meant for")
    classes: list[str] = fact("classes of the workloads placed in the pool")
    workload_names: list[str] = fact("names of the workloads placed in the pool")
    workload_count: int = fact("number of workloads placed in the pool")
    unmeasured_workloads: list[str] = fact("workloads whose demand facts are unknown")
    unmeasured_count: int = fact("number of unmeasured_workloads", default=0)
    unjudged_gpus: int = fact(
        "committed_capacity_gpus (reserved + proposed + elastic) when a workload of the pool is unmeasured "
        "and another is measured - GPUs no capacity or proposal rule can judge - else 0",
        "GPUs",
        default=0,
    )
    unmeasured_verb: str = fact("'has' for one unmeasured workload, 'have' for several", default="have")
    unread_documents: list[str] | None = fact(
        "documents that may hold workloads of this pool but are not in the model (a file that does not "
        "parse, a workload that fails its schema or names a pool that does not exist), as 'file (code)'; "
        "while there is one, the pool's pooled demand is unknown (None: there is none)",
        default=None,
    )
    unread_summary: str | None = fact("unread_documents as one text, separated by commas", default=None)
    unread_count: int = fact("number of unread_documents", default=0)
    overflow: str | None = fact("declared peak-band behaviour (queue or reject)")
    queue_max_depth: int | None = fact("declared queue depth limit")
    queue_max_wait_seconds: float | None = fact("declared queue wait limit", "s")
    gang: bool | None = fact("gang scheduling enabled")
    preemption: bool | None = fact("preemption enabled")
    buffer_gpus: int | None = fact("GPUs kept free for long-tail jobs", "GPUs")
    buffer_needed_gpus: int = fact(
        "GPUs of the largest long-tail job a buffer must hold: the largest tail_job_gpus among the pool's "
        "training and batch workloads with job durations (0: none has any)",
        "GPUs",
        default=0,
    )
    buffer_excess_gpus: int = fact("buffer_gpus above buffer_needed_gpus (0 when the buffer is no larger)", "GPUs",
                                   default=0)
    buffer_need: str = fact(
        "what buffer_needed_gpus comes from, in words: the workload whose long-tail job it is, or that none "
        "gives job durations",
        default="",
    )
    multi_gpu_training: bool = fact("true when a training workload needs more than one GPU per job")
    multi_gpu_jobs: list[str] = fact("training or batch workloads whose jobs hold more than one GPU")
    sharing: str = fact(
        "exclusive (a GPU holds one model's replica, the default) or shared (models share GPUs)",
    )
    workload_tolerances: list[WorkloadTolerance] = fact("per workload: name and tolerance_seconds (list of objects)")
    queue_needs: list[QueueNeed] = fact(
        "per workload: name, queue_depth_needed, tolerance_seconds, daily_rejected_share (list of "
        "objects)",
    )
    tolerance_min_seconds: float | None = fact("tightest tolerance of the pool's workloads", "s")
    tolerance_max_seconds: float | None = fact("loosest tolerance of the pool's workloads", "s")
    tolerance_spread: float | None = fact("loosest / tightest tolerance")
    resident_gib_total: float | None = fact("VRAM the inference models keep resident across their baseline replicas", "GiB")
    memory_gib_total: float | None = fact("GPU memory of the reserved GPUs", "GiB")
    reserved_gpus_before: int | None = fact(
        "reserved GPUs at the --diff base revision (unknown without --diff)", "GPUs", default=None
    )
    evidence_changed: bool | None = fact(
        "true when a measurement of the pool's workloads changed since the --diff base", default=None
    )
    owned_gpus: int | None = fact(
        "GPUs the pool holds as its own: reservedGpus; for a Kueue flavor its whole nominalQuota, the lendable "
        "part included; for the pool that answers for a pool split in the change, what the pieces own together "
        "(set with --diff)",
        "GPUs",
        default=None,
    )
    owned_gpus_before: int | None = fact("owned_gpus at the --diff base revision", "GPUs", default=None)
    baseline_gpus_before: int | None = fact(
        "pooled baseline GPUs at the --diff base revision, measured from the base's own files (known only for a "
        "pool that owns more than then and whose measurements changed)",
        "GPUs",
        default=None,
    )
    owned_and_proposed_gpus: int | None = fact(
        "owned_gpus and the pool's bufferGpus plus the GPUs the proposals ask for the pool (for the pool that "
        "answers for a split, the pieces' too): what it will own once they are delivered (set with --diff)",
        "GPUs",
        default=None,
    )
    owned_and_proposed_gpus_before: int | None = fact(
        "owned_and_proposed_gpus at the --diff base revision: owned_gpus_before and the base's bufferGpus plus "
        "what the base's proposals asked for the pool",
        "GPUs",
        default=None,
    )
    owned_gpus_allowed: int | None = fact(
        "the most the pool may own once its proposals are delivered, by its evidence: "
        "owned_and_proposed_gpus_before (plus the baselines of the workloads it took in) when no measurement "
        "changed; when some did, that grown as the pooled baseline grew since the base, or today's pooled "
        "baseline if higher (unknown when the base's baseline is)",
        "GPUs",
        default=None,
    )
    backing_note: str | None = fact("text for messages: what the evidence since the base backs", default=None)
    allowed_phrase: str | None = fact("text for messages: 'owned_gpus_allowed in all', or that the base could not be read", default=None)
    owned_phrase: str | None = fact(
        "text for messages: 'reserves N GPUs', or for a Kueue flavor that lends, its nominal quota and lendable "
        "part; then what a split's pieces own with it and what its proposals ask",
        default=None,
    )
    owned_before_phrase: str | None = fact(
        "text for messages: owned_and_proposed_gpus_before at the base revision, and its owned and proposed parts",
        default=None,
    )
    capacity_gpus_before: int | None = fact(
        "reserved + elastic GPUs at the --diff base revision: the capacity its measurements were taken on "
        "(unknown without --diff, or for a pool the base does not declare)",
        "GPUs",
        default=None,
    )
    newcomer_baseline_gpus: int | None = fact(
        "sum of the baseline GPUs of the workloads the --diff base did not place in this pool (moved in, or "
        "new): demand the pool did not carry when it was measured; one moved in from another pool brings its "
        "baseline as the base declared it, one new (or not measured whole there) its baseline today",
        "GPUs",
        default=None,
    )
    newcomer_count: int | None = fact("workloads the --diff base did not place in this pool", default=None)
    newcomer_note: str | None = fact(
        "text for messages: empty without newcomers, else their baselines and names", default=None
    )
    measured_allowance_gpus: int | None = fact(
        "capacity_gpus_before + newcomer_baseline_gpus: what carried the pooled demand the pool's traces "
        "record",
        "GPUs",
        default=None,
    )
    gpu_model_before: str | None = fact("gpu.model at the --diff base revision, as written there", default=None)
    gpu_model_changed: bool | None = fact(
        "true when gpu.model differs (ignoring case) from the --diff base revision's, where both are declared",
        default=None,
    )
    resident_gib_per_gpu: float | None = fact(
        "GiB one GPU must hold: with sharing shared, every inference model of the pool at once (sum"
        " of residentGiB / gpusPerReplica); with exclusive GPUs, the largest one alone (unknown "
        "when no inference workload has resident GiB)",
        "GiB",
    )
    scheduler_queue_facts: SchedulerPoolFacts = part()
    pooled: PooledPoolFacts = part()
    integrity: IntegrityPoolFacts = part(IntegrityPoolFacts)


@dataclass(kw_only=True, eq=False)
class ClusterFactSheet(Facts):
    """One cluster: the tolerances of its workloads, and how the run's configuration loosens the gate."""

    name: str = fact("cluster name")
    workload_count: int = fact("workloads placed in the cluster's pools")
    tolerance_declared_count: int = fact("workloads with a declared tolerance")
    tolerances: list[float] = fact("declared tolerances of the cluster's workloads, seconds", "s")
    loosened_options: list[str] | None = fact(
        "integrity of the gate: every rule option set looser than its documented default, every "
        "rule whose severity was lowered and every rule the repository's configuration ignores, as "
        "sentences (None when the run's configuration is unknown)",
        default=None,
    )
    loosened_count: int | None = fact("integrity of the gate: number of loosened_options", default=None)
    loosened_summary: str | None = fact("integrity of the gate: loosened_options as one text, separated by semicolons", default=None)
    rounding_gpus: float | None = fact(
        "GPUs rounding up to whole replicas adds to the demand of the cluster's pools on average: the sum, "
        "in pool order, of each pool's rounding_gpus (pools with a known pooled baseline), unrounded "
        "(None when no pool has both)",
        "GPUs",
        default=None,
    )
    rounding_baseline_gpus: int | None = fact(
        "sum of the pooled baseline GPUs of the pools rounding_gpus counts", "GPUs", default=None
    )
    rounding_share: float | None = fact(
        "rounding_gpus over rounding_baseline_gpus, unrounded (None when that sum is unknown or zero)",
        "share",
        default=None,
    )
    rounding_pools: int | None = fact("pools rounding_gpus counts whose rounding adds more than 0 GPUs", default=None)
    pool_merges: list[PoolMerge] = fact(
        "pairs of the cluster's pools that plan would pool (one class, GPU model and memory and "
        "tolerance tier, gang jobs or not; no repeated or near-copied measurement between them; a pooled window of at least "
        "PL112's days) and that need fewer GPUs pooled than apart: per pair, pools (cluster/pool), apart_gpus "
        "(the two pools' own daily bands summed, reserved + elastic), pooled_gpus (the pair's pooled daily "
        "band), saving_gpus, apart_reserved_gpus and pooled_reserved_gpus (baseline bands), cold_start_seconds "
        "(the longer of the two pools', both sides taken at it), window_days (of the pooled series); largest "
        "saving first (list of objects; empty with fewer than two pools)",
        "GPUs",
    )
    gpu_spellings: list[str] | None = fact(
        "one GPU written several ways among the cluster's pools: per GPU type (a family of the model table with "
        "memory within 8 GiB of one size) whose pools write different models or memories, its spellings and the "
        "pools using each (None with fewer than two pools)",
        default=None,
    )
    gpu_spelling_count: int = fact("GPU types of the cluster written more than one way (gpu_spellings)", default=0)
    gpu_spelling_summary: str | None = fact("gpu_spellings as one text, separated by ' | '", default=None)


@dataclass(kw_only=True, eq=False)
class ProposalFactSheet(Facts):
    """One proposal: the GPUs it asks for, per pool, and the measurements it cites."""

    name: str = fact("proposal name")
    cluster: str | None = fact("cluster the GPUs are for")
    requested_gpus: int = fact("GPUs requested in total", "GPUs")
    cited_workloads: int = fact("number of workloads cited")
    cited_measured: int = fact("number of cited workloads backed by a readable measurement")
    requests: list[ProposalRequest] = fact(
        "per request: pool, gpus, reserved, baseline_gpus (pooled), baseline_gpus_sum, "
        "baseline_pooling, measured_workloads, pool_workloads, pool_proposed_gpus (GPUs every "
        "proposal of the repository asks for that pool, this one included), pool_proposals (those "
        "proposals as name and gpus), gpu_model (the request's gpuModel), measured_gpu_model (with --diff, the pool's "
        "gpu.model at the base when the change changes it), pool_gpu_model (the pool's "
        "gpu.model) (list of objects)",
    )
    cluster_measured: int | None = fact("workloads of the proposal's cluster whose GPU demand is measured")
    justification: str | None = fact("justification text")


#: The sheet of each subject kind.
SHEETS: dict[str, type[Facts]] = {
    "workload": WorkloadFactSheet,
    "pool": PoolFactSheet,
    "cluster": ClusterFactSheet,
    "proposal": ProposalFactSheet,
}

#: Every fact per subject kind, name -> description: what rule files are checked against when they load.
FACTS: dict[str, dict[str, str]] = {subject: catalogue(sheet) for subject, sheet in SHEETS.items()}
