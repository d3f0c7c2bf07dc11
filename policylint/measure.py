"""Step 4: read every referenced measurement once and compute its facts.

Two passes: :func:`measure` computes each workload's facts, then
:func:`measure_pools` sums the workloads of every pool into its pooled GPU demand
(:mod:`policylint.pooled`).

For each workload this reads the concurrency trace (bands, spikes, sustained
level, window after flat days, freshness), the job list (duration percentiles
and the GPUs of the long-tail jobs) and the VRAM trace (resident time and memory
in its declared unit, residency ratio over resident time only). Results are cached on the run, never recomputed per
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
    from pathlib import Path

    import numpy as np

    from policylint.bands import BandReport
    from policylint.model import MeasurementRef, Model, Pool, Workload
    from policylint.pooled import PooledGrid, PooledReport, PoolMember
    from policylint.traces import Series, TraceLimits


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
    #: GPUs one long-tail job holds: the most GPUs among jobs at or above p99 duration
    tail_job_gpus: int | None = None
    vram_ratio: float | None = None
    #: most GiB the model held while resident, from a VRAM trace (None without one)
    vram_resident_gib: float | None = None
    #: cold-start window the bands were computed with, seconds
    cold_start_seconds: float | None = None
    #: UTC day starts on which the concurrency trace was constant (left out of the window)
    flat_days: tuple[float, ...] = ()
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


def _reading(spec: dict[str, Any], limits: TraceLimits | None) -> dict[str, Any]:
    """Reader options every measurement block may declare: units, origin, limits."""
    return {
        "timestamp_unit": spec.get("timestampUnit"),
        "duration_unit": spec.get("durationUnit"),
        "time_origin": spec.get("timeOrigin"),
        "limits": limits,
    }


def measure_workload(
    workload: Workload, now: dt.datetime, *, limits: TraceLimits | None = None
) -> tuple[WorkloadFacts, list[Finding]]:
    """Read and analyse the measurements of one workload.

    ``limits`` bounds what each trace may make the readers hold (the
    ``limits.max-trace-*`` configuration keys); None keeps the readers' defaults.
    """
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
                **_reading(spec, limits),
            )
            series = _apply_share(workload, series)
            exclusions, problems = _exclusions(workload, ref)
            findings.extend(problems)
            mads = (workload.spec.get("concurrency") or {}).get("excludeOutlierDays")
            settings = bands.BandSettings(
                cold_start_seconds=default_cold_start(workload),
                outlier_mad_k=float(mads) if mads is not None else None,
                # Rebuilt from intervals, a constant non-zero day is long jobs running;
                # only a day with nothing at all in the log is not a measurement.
                flat_days="empty" if fmt in ("requests", "jobs") else "constant",
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
            facts.cold_start_seconds = settings.cold_start_seconds
            facts.flat_days = report.flat_days
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
                **_reading(spec, limits),
            )
            stats = bands.duration_stats(jobs.durations)
            facts.p50, facts.p90, facts.p99, facts.tail_ratio = stats.p50, stats.p90, stats.p99, stats.tail_ratio
            # A buffer is only a buffer if one long-tail job fits in it (PL601).
            tail = jobs.gpus[jobs.durations >= stats.p99]
            facts.tail_job_gpus = max(_per_replica(workload), int(np.max(tail)) if tail.size else 0)
        except PolicylintError as exc:
            findings.append(_problem(durations, exc))
    elif "p50Seconds" in declared and "p99Seconds" in declared:
        facts.p50 = float(declared["p50Seconds"])
        facts.p90 = float(declared["p90Seconds"]) if "p90Seconds" in declared else None
        facts.p99 = float(declared["p99Seconds"])
        facts.tail_ratio = facts.p99 / facts.p50
        facts.tail_job_gpus = _per_replica(workload)
    vram = workload.spec.get("vram") or {}
    vref = workload.measurements.get("vram")
    if vref is not None and vref.path is not None:
        try:
            facts.vram_ratio, facts.vram_resident_gib = _vram_trace(workload, vref, limits)
        except PolicylintError as exc:
            findings.append(_problem(vref, exc))
    elif vram.get("residencySeconds") is not None and vram.get("activeComputeSeconds") is not None:
        active = float(vram["activeComputeSeconds"])
        facts.vram_ratio = float(vram["residencySeconds"]) / active if active > 0 else math.inf
    return facts, findings


def _per_replica(workload: Workload) -> int:
    value = workload.spec.get("gpusPerReplica", 1)
    return value if isinstance(value, int) and not isinstance(value, bool) else 1


#: GiB per unit of a VRAM trace sample; shares of memory are converted with the pool's GPU size.
_GIB_PER_UNIT = {"GiB": 1.0, "MiB": 1.0 / 1024.0, "bytes": 1.0 / 2**30}


def _vram_trace(
    workload: Workload, ref: MeasurementRef, limits: TraceLimits | None = None
) -> tuple[float | None, float | None]:
    """Residency ratio and peak resident GiB from a VRAM trace in its declared unit.

    A zero sample means the model is not resident; only resident samples count,
    both as residency time and as the time in which compute is looked for. Active
    compute comes from ``activeColumn`` (busy share, summed over resident samples)
    or, without it, from the declared ``activeComputeSeconds`` per day scaled to
    the days the trace covers.
    """
    import numpy as np

    from policylint import traces

    spec = ref.spec
    assert ref.path is not None
    common = {
        "format": spec.get("format", "auto"),
        "timestamp_column": spec.get("timestampColumn"),
        "match": spec.get("match"),
        "step_seconds": spec.get("stepSeconds"),
        "display_name": ref.display,
        **_reading(spec, limits),
    }
    memory = traces.read_series(ref.path, value_columns=spec.get("columns"), **common)
    step = memory.step_seconds
    values = memory.values
    if bool(np.any(values[memory.valid] < 0)):
        raise MeasurementError("VRAM samples must not be negative", source=ref.display)
    resident = memory.valid & (values > 0)
    resident_seconds = float(np.count_nonzero(resident)) * step
    covered_days = float(np.count_nonzero(memory.valid)) * step / 86_400.0
    unit = str(spec.get("unit", "GiB"))
    peak = float(values[resident].max()) if resident.any() else 0.0
    gib: float | None
    if unit in _GIB_PER_UNIT:
        gib = peak * _GIB_PER_UNIT[unit]
    else:
        gpu_memory = (workload.pool.spec.get("gpu") or {}).get("memoryGiB") if workload.pool else None
        share = peak / 100.0 if unit == "percent" else peak
        gib = share * float(gpu_memory) * _per_replica(workload) if gpu_memory else None
    active: float | None = None
    if spec.get("activeColumn"):
        busy = traces.read_series(ref.path, value_columns=[spec["activeColumn"]], **common)
        # Same file, same timestamps: the grids coincide; align by time all the same.
        at = np.searchsorted(busy.times, memory.times)
        at = np.clip(at, 0, busy.times.size - 1)
        same = busy.times[at] == memory.times
        scale = 100.0 if spec.get("activeUnit", "percent") == "percent" else 1.0
        share_busy = np.where(same & busy.valid[at], busy.values[at] / scale, 0.0)
        active = float(np.sum(np.clip(share_busy, 0.0, 1.0)[resident])) * step
    else:
        declared = (workload.spec.get("vram") or {}).get("activeComputeSeconds")
        if isinstance(declared, (int, float)):
            active = float(declared) * covered_days
    if active is None:
        return None, gib
    if resident_seconds == 0:
        return 0.0, gib
    return (resident_seconds / active if active > 0 else math.inf), gib


def measure(
    model: Model,
    now: dt.datetime,
    *,
    limits: TraceLimits | None = None,
    cache_dir: Path | None = None,
    jobs: int = 1,
) -> tuple[dict[str, WorkloadFacts], list[Finding]]:
    """Facts for every workload of the model, computed once per run (traces read within ``limits``).

    ``cache_dir`` (None: no cache) keeps each traced workload's facts between runs
    (:mod:`policylint.cache`). ``jobs`` above 1 measures the workloads the cache
    does not hold in that many processes; the result is the same as with one.
    """
    from policylint import cache

    names = sorted(model.workloads)
    done: dict[str, tuple[WorkloadFacts, list[Finding]]] = {}
    keys: dict[str, str | None] = {}
    for name in names:
        key = cache.workload_key(model.workloads[name], limits, cache_dir) if cache_dir is not None else None
        keys[name] = key
        hit = cache.load(cache_dir, key) if cache_dir is not None and key is not None else None
        if hit is not None:
            # only finding-free measurements are stored, so a hit has no findings
            done[name] = (hit, [])
    todo = [n for n in names if n not in done]
    traced = [n for n in todo if any(r.path is not None for r in model.workloads[n].measurements.values())]
    if jobs > 1 and len(traced) >= PARALLEL_MIN_WORKLOADS and _can_fork():
        # The first one here: it imports the readers and calculator once, before the
        # fork, instead of once in every worker.
        first = traced[0]
        done[first] = _measure_one(model.workloads[first], keys[first], now, limits, cache_dir)
        done.update(_measure_parallel(model, traced[1:], keys, now, limits, cache_dir, jobs))
    for name in todo:
        if name not in done:
            done[name] = _measure_one(model.workloads[name], keys[name], now, limits, cache_dir)
    out: dict[str, WorkloadFacts] = {}
    findings: list[Finding] = []
    for name in names:  # the order of the sequential run, whoever measured what
        out[name] = done[name][0]
        findings.extend(done[name][1])
    return out, findings


#: fewer traced workloads than this are measured in-process: a 92-day trace measures in
#: about 15 ms, while starting the workers and sending the arrays back costs about 0.1 s
PARALLEL_MIN_WORKLOADS = 32


def _measure_one(
    workload: Workload, key: str | None, now: dt.datetime, limits: TraceLimits | None, cache_dir: Path | None
) -> tuple[WorkloadFacts, list[Finding]]:
    """Measure one workload and store a clean result in the cache."""
    from policylint import cache

    try:
        facts, problems = measure_workload(workload, now, limits=limits)
    except MeasurementError as exc:  # pragma: no cover - measure_workload catches these
        return WorkloadFacts(errors=[str(exc)]), []
    if cache_dir is not None and key is not None and not problems and not facts.errors:
        cache.store(cache_dir, key, facts)
    return facts, problems


def _can_fork() -> bool:
    """Workers inherit the parsed model by forking; elsewhere the run stays in one process."""
    import multiprocessing
    import sys

    return sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()


#: what forked workers measure from (set just before the pool starts, read in the children)
_WORK: tuple[Model, dict[str, str | None], dt.datetime, TraceLimits | None, Path | None] | None = None


def _work(name: str) -> tuple[str, tuple[WorkloadFacts, list[Finding]]]:
    assert _WORK is not None
    model, keys, now, limits, cache_dir = _WORK
    return name, _measure_one(model.workloads[name], keys[name], now, limits, cache_dir)


def _measure_parallel(
    model: Model,
    names: list[str],
    keys: dict[str, str | None],
    now: dt.datetime,
    limits: TraceLimits | None,
    cache_dir: Path | None,
    jobs: int,
) -> dict[str, tuple[WorkloadFacts, list[Finding]]]:
    """Measure ``names`` in up to ``jobs`` forked processes; what fails there is left to the caller."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    global _WORK
    _WORK = (model, keys, now, limits, cache_dir)
    out: dict[str, tuple[WorkloadFacts, list[Finding]]] = {}
    try:
        workers = min(jobs, len(names))
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            chunk = max(1, len(names) // (workers * 4))
            for name, result in pool.map(_work, names, chunksize=chunk):
                out[name] = result
    except Exception:  # noqa: BLE001 - a broken worker pool: the rest is measured in-process
        pass
    finally:
        _WORK = None
    return out


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
        limit = (pool.spec.get("queue") or {}).get("maxWaitSeconds")
        limit_seconds = float(limit) if isinstance(limit, (int, float)) and not isinstance(limit, bool) else None
        out.grid, out.report = pool_series(
            members, out.cold_start_seconds, capacity=capacity, limit_seconds=limit_seconds
        )
    except PolicylintError:  # pragma: no cover - members are validated above
        return out
    return out


def measure_pools(model: Model, facts: dict[str, WorkloadFacts]) -> dict[str, PoolFacts]:
    """Pooled demand of every pool of the model (by ``cluster/pool``), computed once per run."""
    return {pool.qualified: measure_pool(pool, facts) for pool in model.pools}
