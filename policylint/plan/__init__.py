"""The capacity plan: pools derived from the demand model and sized from their pooled series.

``policylint plan`` answers "how many GPUs, in which pools, with which queues?" from the
measurements alone, by the framework's rules (FRAMEWORK.md). The steps, one module each:

1. **Grouping** (:mod:`~policylint.plan.grouping`). Training, batch and inference never
   share a pool. Inside one cluster, workloads are grouped by class, GPU model and
   memory (taken from the pool they run in today) and tolerance tier (real-time,
   interactive, queue-tolerant, with no tier wider than the tolerance spread the rules
   accept). Gang jobs (training or batch jobs holding more than one GPU, by
   ``gpusPerReplica`` or by what the workload's measured job lists record) pool with the
   rest of their group, as ``check`` pools a pool's workloads; their pool declares gang
   scheduling, decided by the function PL403 uses
   (:func:`policylint.measure.pool_groups.is_gang`).
2. **Pooling search** (:mod:`~policylint.plan.search`). Within a group, workloads are
   pooled pairwise, best saving first, while pooling saves GPUs: a merge is kept only
   when the pooled pool needs fewer GPUs than the two apart, only when their traces
   overlap for the measurement window (otherwise the pooled bands would describe too
   short a stretch), and never when two of them cite one measurement (its demand would
   count twice). Candidates are judged from running pooled sums, a round at a time.
3. **Sizing** (:mod:`~policylint.plan.sizing`), from the pool's pooled series
   (:func:`policylint.measure.pools.measure_pool` at :func:`policylint.measure.cold_start.pool_cold_start`):
   reserved = pooled baseline band; elastic = pooled daily band minus the baseline,
   the framework's definition. For a pool that queues its overflow, the least capacity
   at which the daily-band demand waits no longer than the pool's tightest tolerance
   (:func:`policylint.bands.capacity_for_tolerance`) is reported as what queueing would
   save, and applied only with ``--size-queues-by-tolerance``. Elastic GPUs must come up
   within the pool's cold-start window, or bursts the daily band counts would be over
   before they arrive. Overflow is rejected for real-time pools and queued otherwise;
   the queue waits as long as the most patient workload tolerates; gang scheduling
   where jobs hold several GPUs; preemption where a job-duration tail is long.
4. **Derivations** (:mod:`~policylint.plan.explain`): every number with the measurement,
   band and rule it comes from. Queue depth comes last, from the views of the planned
   repository (:func:`apply_depths`): it is the depth ``check`` itself derives from the
   spike heights, so the plan and the check cannot disagree.
5. **Outputs** (:mod:`~policylint.plan.outputs`, :mod:`~policylint.plan.repository`):
   Cluster YAML, JSON, today beside the plan, and the planned repository.

Nothing here re-computes a band, a cold start or a GPU conversion by its own
definition: every figure comes from the functions ``check`` uses. The package is pure
(no files, no printing) apart from :func:`write_repository`. The plain types live in
:mod:`~policylint.plan.models`.
"""

from __future__ import annotations

from policylint.plan.build import build_plan
from policylint.plan.explain import apply_depths
from policylint.plan.grouping import dns, tolerance_of
from policylint.plan.models import PLANNED_CLUSTERS_FILE, SIZING_RULES, Plan, PlannedPool, Thresholds, Unplaced, WhatIf
from policylint.plan.outputs import cluster_documents, cluster_yaml, compare, to_dict
from policylint.plan.repository import replaced_document, write_repository

__all__ = [
    "PLANNED_CLUSTERS_FILE",
    "SIZING_RULES",
    "Plan",
    "PlannedPool",
    "Thresholds",
    "Unplaced",
    "WhatIf",
    "apply_depths",
    "build_plan",
    "cluster_documents",
    "cluster_yaml",
    "compare",
    "dns",
    "replaced_document",
    "to_dict",
    "tolerance_of",
    "write_repository",
]
