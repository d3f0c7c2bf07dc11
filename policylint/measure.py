"""Step 4: read every referenced measurement once and compute its facts.

Two passes: :func:`measure` computes each workload's facts, then
:func:`measure_pools` sums the workloads of every pool into its pooled GPU demand
(:mod:`policylint.pooled`).

For each workload this reads the concurrency trace (bands, spikes, sustained
level, window, freshness), the job list (duration percentiles) and the VRAM
trace (residency ratio). Results are cached on the run, never recomputed per
rule. A measurement that cannot be read becomes one finding at the line that
references it; the rules that need it then see the facts as unknown.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from policylint.errors import MeasurementError, PolicylintError
from policylint.finding import Finding

if TYPE_CHECKING:
    import numpy as np

    from policylint.bands import BandReport
    from policylint.model import MeasurementRef, Model, Pool, Workload
    from policylint.pooled import PooledGrid, PooledReport, PoolMember
    from policylint.traces import Series


@dataclass
class WorkloadFacts:
    """Everything measured about one workload (None where unknown)."""

    report: BandReport | None = None
    values: np.ndarray | None = None  # cleaned concurrency on the grid (NaN = excluded)
    step_seconds: float | None = None
    sustained_max: float | None = None
    last_sample: dt.datetime | None = None
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    tail_ratio: float | None = None
    vram_ratio: float | None = None
    errors: list[str] = field(default_factory=list)


def default_cold_start(workload: Workload) -> float:
    """Cold-start window used for the bands: declared, else the pool's elastic one, else 300 s."""
    declared = workload.spec.get("coldStartSeconds")
    if isinstance(declared, (int, float)):
        return float(declared)
    if workload.pool is not None:
        elastic = workload.pool.spec.get("elastic") or {}
        if isinstance(elastic.get("coldStartSeconds"), (int, float)):
            return float(elastic["coldStartSeconds"])
    return 300.0


def _exclusions(workload: Workload, ref: MeasurementRef) -> tuple[list[Any], list[Finding]]:
    from policylint.traces import parse_exclusion

    out = []
    problems = []
    for i, item in enumerate((workload.spec.get("concurrency") or {}).get("exclude", [])):
        try:
            ex = parse_exclusion(f"{item['start']}/{item['end']}")
        except ValueError as exc:
            problems.append(
                workload.doc.finding(
                    "PL024",
                    "unreadable-measurement",
                    f"exclusion range: {exc}",
                    ("spec", "concurrency", "exclude", i),
                )
            )
            continue
        out.append(type(ex)(ex.start, ex.end, str(item.get("reason", ""))))
    return out, problems


def _problem(ref: MeasurementRef, exc: PolicylintError) -> Finding:
    return ref.doc.finding(
        "PL024",
        "unreadable-measurement",
        f"cannot use measurement: {exc}",
        (*ref.doc_path, "path"),
        hint="fix the file or its column/format settings in this block",
    )


def _apply_share(workload: Workload, series: Series) -> Series:
    """A declared share (``concurrency.share.fraction``) scales the traced concurrency."""
    share = ((workload.spec.get("concurrency") or {}).get("share") or {}).get("fraction")
    if not isinstance(share, (int, float)) or isinstance(share, bool) or share == 1:
        return series
    from dataclasses import replace

    return replace(series, values=series.values * float(share))


def measure_workload(workload: Workload, now: dt.datetime) -> tuple[WorkloadFacts, list[Finding]]:
    """Read and analyse the measurements of one workload."""
    import numpy as np

    from policylint import bands, traces

    facts = WorkloadFacts()
    findings: list[Finding] = []
    ref = workload.measurements.get("concurrency")
    if ref is not None and ref.path is not None:
        spec = ref.spec
        try:
            fmt = spec.get("format", "auto")
            series = traces.read_series(
                ref.path,
                # a job list is an interval log: running jobs = concurrency
                format="requests" if fmt == "jobs" else fmt,
                timestamp_column=spec.get("timestampColumn"),
                value_columns=spec.get("columns"),
                start_column=spec.get("startColumn"),
                end_column=spec.get("endColumn"),
                duration_column=spec.get("durationColumn"),
                match=spec.get("match"),
                step_seconds=spec.get("stepSeconds"),
                display_name=ref.display,
            )
            series = _apply_share(workload, series)
            exclusions, problems = _exclusions(workload, ref)
            findings.extend(problems)
            mads = (workload.spec.get("concurrency") or {}).get("excludeOutlierDays")
            settings = bands.BandSettings(
                cold_start_seconds=default_cold_start(workload),
                outlier_mad_k=float(mads) if mads is not None else None,
            )
            per_gpu = (workload.spec.get("perGpuConcurrency") or {}).get("value")
            report = bands.analyse(
                series,
                settings,
                exclusions=exclusions,
                per_gpu=float(per_gpu) if per_gpu else None,
                gpus_per_replica=int(workload.spec.get("gpusPerReplica", 1)),
            )
            # The report carries the cleaned series (declared exclusions and outlier
            # days removed), so the queue simulation uses exactly what the bands used.
            cleaned = report.cleaned if report.cleaned is not None else series
            facts.report = report
            facts.values = cleaned.values
            facts.step_seconds = cleaned.step_seconds
            facts.sustained_max = report.sustained_max
            facts.last_sample = dt.datetime.fromtimestamp(report.last, tz=dt.timezone.utc)
        except PolicylintError as exc:
            findings.append(_problem(ref, exc))
    durations = workload.measurements.get("durations")
    declared = workload.spec.get("durations") or {}
    if durations is not None and durations.path is not None:
        spec = durations.spec
        try:
            jobs = traces.read_jobs(
                durations.path,
                duration_column=spec.get("durationColumn"),
                start_column=spec.get("startColumn"),
                end_column=spec.get("endColumn"),
                gpus_column=spec.get("gpusColumn"),
                display_name=durations.display,
            )
            stats = bands.duration_stats(jobs.durations)
            facts.p50, facts.p90, facts.p99, facts.tail_ratio = stats.p50, stats.p90, stats.p99, stats.tail_ratio
        except PolicylintError as exc:
            findings.append(_problem(durations, exc))
    elif "p50Seconds" in declared and "p99Seconds" in declared:
        facts.p50 = float(declared["p50Seconds"])
        facts.p90 = float(declared["p90Seconds"]) if "p90Seconds" in declared else None
        facts.p99 = float(declared["p99Seconds"])
        facts.tail_ratio = facts.p99 / facts.p50
    vram = workload.spec.get("vram") or {}
    vref = workload.measurements.get("vram")
    if vref is not None and vref.path is not None:
        try:
            series = traces.read_series(
                vref.path,
                format=vref.spec.get("format", "auto"),
                timestamp_column=vref.spec.get("timestampColumn"),
                value_columns=vref.spec.get("columns"),
                match=vref.spec.get("match"),
                step_seconds=vref.spec.get("stepSeconds"),
                display_name=vref.display,
            )
            util = series.values[series.valid]
            resident = util.size * series.step_seconds
            active = float(np.sum(np.clip(util, 0, 100)) / 100.0 * series.step_seconds)
            facts.vram_ratio = resident / active if active > 0 else math.inf
        except PolicylintError as exc:
            findings.append(_problem(vref, exc))
    elif vram.get("residencySeconds") is not None and vram.get("activeComputeSeconds") is not None:
        active = float(vram["activeComputeSeconds"])
        facts.vram_ratio = float(vram["residencySeconds"]) / active if active > 0 else math.inf
    return facts, findings


def measure(model: Model, now: dt.datetime) -> tuple[dict[str, WorkloadFacts], list[Finding]]:
    """Facts for every workload of the model, computed once per run."""
    out: dict[str, WorkloadFacts] = {}
    findings: list[Finding] = []
    for name in sorted(model.workloads):
        try:
            facts, problems = measure_workload(model.workloads[name], now)
        except MeasurementError as exc:  # pragma: no cover - measure_workload catches these
            facts, problems = WorkloadFacts(errors=[str(exc)]), []
        out[name] = facts
        findings.extend(problems)
    return out, findings


@dataclass
class PoolFacts:
    """The pooled demand of one pool (see :mod:`policylint.pooled`).

    ``report`` is None when some workload's GPU demand is unknown (``unknown``
    names them) or the pool has no workloads; ``measured`` names the workloads whose
    GPU demand is known (a readable trace and a per-GPU figure).
    """

    measured: tuple[str, ...] = ()
    unknown: tuple[str, ...] = ()
    cold_start_seconds: float | None = None
    report: PooledReport | None = None
    grid: PooledGrid | None = None


def pool_cold_start(pool: Pool) -> float:
    """The pool's cold start: its elastic ``coldStartSeconds``, else the slowest workload's."""
    elastic = pool.spec.get("elastic") or {}
    declared = elastic.get("coldStartSeconds")
    if isinstance(declared, (int, float)) and not isinstance(declared, bool) and declared > 0:
        return float(declared)
    return max((default_cold_start(w) for w in pool.workloads), default=300.0)


def _member(workload: Workload, facts: WorkloadFacts) -> PoolMember | None:
    from policylint.pooled import PoolMember

    per_gpu = (workload.spec.get("perGpuConcurrency") or {}).get("value")
    report = facts.report
    if report is None or report.cleaned is None or not isinstance(per_gpu, (int, float)) or per_gpu <= 0:
        return None
    return PoolMember(
        name=workload.name,
        times=report.cleaned.times,
        values=report.cleaned.values,
        step_seconds=report.cleaned.step_seconds,
        per_gpu=float(per_gpu),
        gpus_per_replica=int(workload.spec.get("gpusPerReplica", 1)),
    )


def measure_pool(pool: Pool, facts: dict[str, WorkloadFacts]) -> PoolFacts:
    """Pooled demand of one pool from its workloads' measured series."""
    from policylint.pooled import pool_series

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
        return out
    out.cold_start_seconds = pool_cold_start(pool)
    capacity = float(int(pool.spec.get("reservedGpus", 0)) + int((pool.spec.get("elastic") or {}).get("maxGpus", 0)))
    try:
        out.grid, out.report = pool_series(members, out.cold_start_seconds, capacity=capacity)
    except PolicylintError:  # pragma: no cover - members are validated above
        return out
    return out


def measure_pools(model: Model, facts: dict[str, WorkloadFacts]) -> dict[str, PoolFacts]:
    """Pooled demand of every pool of the model (by ``cluster/pool``), computed once per run."""
    return {pool.qualified: measure_pool(pool, facts) for pool in model.pools}
