"""Measuring one workload: its traces read, cleaned and turned into facts.

For each workload this reads the concurrency trace (bands, spikes, sustained
level, window after flat days, freshness, the integrity facts of the trace as
read), the job list (duration percentiles and the GPUs of the long-tail jobs) and
the VRAM trace (:mod:`policylint.measure.vram`). A measurement that cannot be read
becomes one finding at the line that references it; the rules that need it then
see the facts as unknown.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from policylint import bands, traces
from policylint.errors import PolicylintError
from policylint.finding import Finding, Subject
from policylint.calc.gpus import mean_rounding
from policylint.measure.facts import GpuDemand, WorkloadFacts
from policylint.measure.cold_start import effective_cold_start
from policylint.measure.conversion import gpu_conversion, gpus_per_replica
from policylint.measure.integrity.plausibility import job_facts
from policylint.measure.integrity.workload import series_facts
from policylint.measure.kept_reads import read_trace
from policylint.measure.pooled import gpu_demand
from policylint.measure.reading import reader_arguments
from policylint.measure.vram import vram_trace

if TYPE_CHECKING:
    from pathlib import Path

    import numpy as np

    from policylint.model import MeasurementRef, Workload
    from policylint.model.specs import NoBlock, ReferenceSpec, ShareSpec
    from policylint.traces import Series, TraceLimits


def _narrow(gpus: np.ndarray) -> np.ndarray:
    """``gpus`` in float16 or float32 when every value survives the round trip exactly, else as is."""
    import numpy as np

    missing: np.ndarray | None = None
    for dtype in (np.float16, np.float32):
        with np.errstate(over="ignore", invalid="ignore"):
            small = gpus.astype(dtype)
        back = small.astype(np.float64)
        # bit for bit (a -0.0 stays -0.0); NaN only where it was NaN. Every bit equal passes at once
        # (a NaN's payload may change on the way, so unequal bits are judged sample by sample)
        if np.array_equal(back.view(np.int64), gpus.view(np.int64)):
            return small
        if missing is None:
            missing = np.isnan(gpus)
        if np.array_equal(np.isnan(back), missing) and np.array_equal(
            back[~missing].view(np.int64), gpus[~missing].view(np.int64)
        ):
            return small
    return gpus


def gpu_series(series: Series, per_gpu: float, gpus_per_replica: int) -> tuple[GpuDemand, float | None]:
    """The GPU demand of a cleaned series (:func:`policylint.measure.pooled.gpu_demand`), stored compactly,
    and what rounding adds to it on average (:func:`policylint.calc.gpus.mean_rounding`, from the same counts)."""
    import numpy as np

    gpus = gpu_demand(series.values.reshape(1, -1), np.array([per_gpu]), np.array([gpus_per_replica]))[0]
    rounding = mean_rounding(series.values, per_gpu, gpus_per_replica, counts=gpus)
    times = series.times
    start = float(times[0]) if times.size else 0.0
    step = float(times[1] - times[0]) if times.size > 1 else float(series.step_seconds)
    rebuilt = start + np.arange(times.size, dtype=np.float64) * step
    regular = math.isfinite(start) and math.isfinite(step) and np.array_equal(
        rebuilt.view(np.int64), np.asarray(times, dtype=np.float64).view(np.int64)
    )
    demand = GpuDemand(
        gpus=_narrow(gpus),
        step_seconds=float(series.step_seconds),
        axis_start=start,
        axis_step=step,
        times=None if regular else times,
    )
    return demand, rounding


def declared_exclusions(workload: Workload, ref: MeasurementRef) -> tuple[list[Any], list[Finding]]:
    """The ranges a workload's concurrency block declares left out (``exclude``), and a finding per unreadable one."""
    out = []
    problems = []
    for i, item in enumerate((workload.spec.get("concurrency") or {}).get("exclude", [])):
        try:
            ex = traces.parse_exclusion(f"{item['start']}/{item['end']}")
        except ValueError as exc:
            problems.append(
                workload.doc.finding(
                    "PL024",
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
        f"cannot use measurement: {exc}",
        (*ref.doc_path, "path"),
        hint="fix the file or its column/format settings in this block",
    )


def _apply_share(workload: Workload, series: Series) -> Series:
    """A declared share (``concurrency.share.fraction``) scales the traced concurrency."""
    declared: ShareSpec | NoBlock = (workload.spec.get("concurrency") or {}).get("share") or {}
    share = declared.get("fraction")
    if not isinstance(share, (int, float)) or isinstance(share, bool) or share == 1:
        return series
    return replace(series, values=series.values * float(share))


def _notes(ref: MeasurementRef, notes: tuple[str, ...]) -> list[Finding]:
    """What a reader dropped on purpose, as one info finding (nothing disappears silently).

    One finding per measurement: findings at one place with one code are one finding.
    """
    if not notes:
        return []
    return [
        ref.doc.finding(
            "PL025",
            f"{ref.display}: {'; '.join(notes)}",
            (*ref.doc_path, "path"),
        )
    ]


def measure_workload(
    workload: Workload, now: dt.datetime, *, limits: TraceLimits | None = None, reads: Path | None = None
) -> tuple[WorkloadFacts, list[Finding]]:
    """Read and analyse the measurements of one workload.

    ``limits`` bounds what each trace may make the readers hold (the
    ``limits.max-trace-*`` configuration keys); None keeps the readers' defaults.
    ``reads`` (None: none) is the cache folder where the concurrency trace's read may be
    kept (:mod:`policylint.measure.kept_reads`).
    """
    import numpy as np

    facts = WorkloadFacts()
    findings: list[Finding] = []
    ref = workload.measurements.get("concurrency")
    if ref is not None and ref.path is not None:
        try:
            series = read_trace(ref, limits, reads)
            if workload.spec.get("class") not in ("training", "batch"):
                from policylint.readers.sum_screens import refuse_flat_parts

                refuse_flat_parts(series)  # requests in flight move: a part flat for days is no replica's demand
            findings.extend(_notes(ref, series.notes))
            read = series  # integrity is judged on the file's own series, before a share scales it
            series = _apply_share(workload, series)
            facts.trace_unit = series.unit
            exclusions, problems = declared_exclusions(workload, ref)
            findings.extend(problems)
            facts.integrity = _integrity(read, exclusions)
            mads = (workload.spec.get("concurrency") or {}).get("excludeOutlierDays")
            # flat days: the series' own test (bands.flat_day_test), as in every command
            settings = bands.BandSettings(
                cold_start_seconds=effective_cold_start(workload),
                outlier_mad_k=float(mads) if mads is not None else None,
            )
            per_gpu, per_replica = gpu_conversion(workload, facts.trace_unit)
            report = bands.analyse(
                series,
                settings,
                exclusions=exclusions,
                per_gpu=per_gpu,
                gpus_per_replica=per_replica,
            )
            # The report carries the cleaned series (declared exclusions and outlier
            # days removed), so the queue simulation uses exactly what the bands used.
            cleaned = report.cleaned if report.cleaned is not None else series
            # The facts keep what later steps read from the cleaned series - its highest
            # usable sample and its GPU demand - but not the series itself (see GpuDemand).
            facts.report = replace(report, cleaned=None)
            usable = cleaned.values[~np.isnan(cleaned.values)]
            facts.usable_max = float(np.max(usable)) if usable.size else None
            if report.cleaned is not None and per_gpu is not None and per_gpu > 0 and per_replica >= 1:
                facts.demand, facts.rounding_gpus_mean = gpu_series(report.cleaned, per_gpu, per_replica)
            facts.step_seconds = cleaned.step_seconds
            facts.sustained_max = report.sustained_max
            facts.cold_start_seconds = settings.cold_start_seconds
            facts.flat_days = report.flat_days
            facts.last_sample = dt.datetime.fromtimestamp(report.last, tz=dt.timezone.utc)
        except PolicylintError as exc:
            findings.append(_problem(ref, exc))
    durations = workload.measurements.get("durations")
    declared = workload.spec.get("durations") or {}
    if durations is not None and durations.path is not None:
        try:
            jobs = traces.read_jobs(durations.path, **reader_arguments(durations, limits, "jobs"))
            findings.extend(_notes(durations, jobs.notes))
            stats = bands.duration_stats(jobs.durations)
            facts.p50, facts.p90, facts.p99, facts.tail_ratio = stats.p50, stats.p90, stats.p99, stats.tail_ratio
            # A buffer is only a buffer if one long-tail job fits in it (PL601).
            facts.integrity = {**(facts.integrity or {}), **_job_integrity(jobs, durations.spec)}
            tail = jobs.gpus[jobs.durations >= stats.p99]
            facts.tail_job_gpus = max(gpus_per_replica(workload), int(np.max(tail)) if tail.size else 0)
        except PolicylintError as exc:
            findings.append(_problem(durations, exc))
    elif "p50Seconds" in declared and "p99Seconds" in declared:
        facts.p50 = float(declared["p50Seconds"])
        facts.p90 = float(declared["p90Seconds"]) if "p90Seconds" in declared else None
        facts.p99 = float(declared["p99Seconds"])
        facts.tail_ratio = facts.p99 / facts.p50
        facts.tail_job_gpus = gpus_per_replica(workload)
    vram = workload.spec.get("vram") or {}
    vref = workload.measurements.get("vram")
    if vref is not None and vref.path is not None:
        try:
            measured = vram_trace(workload, vref, limits, workload.measurements.get("vram_activity"))
            facts.vram_ratio, facts.vram_resident_gib = measured.ratio, measured.resident_gib
            facts.vram_residency_seconds = measured.residency_seconds
            facts.vram_active_seconds = measured.active_seconds
            facts.vram_pods = measured.pods
            facts.integrity = {**(facts.integrity or {}), "vram_last_time": measured.last_time}
            findings.extend(_notes(vref, measured.notes))
        except PolicylintError as exc:
            findings.append(_problem(vref, exc))
    elif vram.get("residencySeconds") is not None and vram.get("activeComputeSeconds") is not None:
        active = float(vram["activeComputeSeconds"])
        facts.vram_residency_seconds = float(vram["residencySeconds"])
        facts.vram_active_seconds = active
        facts.vram_ratio = float(vram["residencySeconds"]) / active if active > 0 else math.inf
    # A measurement's problems are the workload's: a run narrowed to a changed trace reports
    # them (their file is the workload's, which did not change; their subject did).
    target = Subject("workload", workload.name)
    return facts, [f if f.target else replace(f, subject=str(target), target=target) for f in findings]


def _integrity(series: Series, exclusions: list[Any]) -> dict[str, Any]:
    """The integrity stage between reading and judging (:mod:`policylint.measure.integrity`)."""
    spans = [(float(e.start), float(e.end)) for e in exclusions]
    return series_facts(series, spans)


def _job_integrity(jobs: Any, spec: ReferenceSpec) -> dict[str, Any]:
    """Plausibility facts of a job list: the GPUs its jobs record (:func:`policylint.measure.integrity.plausibility.job_facts`)."""
    return {**job_facts(jobs.gpus, spec.get("gpusColumn") is not None), "jobs_last_time": jobs.last_time,
            "jobs_fingerprint": jobs_fingerprint(jobs.durations, jobs.gpus)}


#: fewest jobs, and fewest distinct durations among them, for a job list to be recognised by its jobs: a
#: handful of equal round durations is what two unrelated lists can share by chance
JOBS_FINGERPRINT_MIN = (10, 3)


def jobs_fingerprint(durations: Any, gpus: Any) -> str | None:
    """SHA-256 of a job list's jobs as read (duration and GPUs of every job, in sorted order), or None when too few.

    Equal for the same job list cited twice, for a copy under another name or in another row
    order, and for another file holding the same jobs after its filters: what two workloads
    share when one borrows the other's job durations (PL984).
    """
    import hashlib

    import numpy as np

    d = np.asarray(durations, dtype=np.float64)
    g = np.asarray(gpus, dtype=np.float64)
    if d.size < JOBS_FINGERPRINT_MIN[0] or np.unique(d).size < JOBS_FINGERPRINT_MIN[1]:
        return None
    order = np.lexsort((g, d))
    return hashlib.sha256(d[order].tobytes() + b"|" + g[order].tobytes()).hexdigest()
