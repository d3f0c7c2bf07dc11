"""Step 4: read every referenced measurement once and compute its facts.

Two passes: :func:`measure` computes each workload's facts, then
:func:`measure_pools` sums the workloads of every pool into its pooled GPU demand
(:mod:`policylint.measure.pooled`).

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
import sys
from dataclasses import dataclass, field, replace
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from policylint.errors import MeasurementError, PolicylintError
from policylint.finding import Finding
from policylint.measure.facts import GpuDemand, PoolFacts, WorkloadFacts

if TYPE_CHECKING:
    from pathlib import Path

    import numpy as np

    from policylint.model import MeasurementRef, Model, Pool, Workload
    from policylint.measure.pooled import GridSpec, PooledGrid, PooledReport, PoolMember
    from policylint.cache.pooled import PoolSum
    from policylint.model.needed import Needed
    from policylint.traces import Series, TraceLimits


def _narrow(gpus: np.ndarray) -> np.ndarray:
    """``gpus`` in float16 or float32 when every value survives the round trip exactly, else as is."""
    import numpy as np

    missing = np.isnan(gpus)
    for dtype in (np.float16, np.float32):
        with np.errstate(over="ignore", invalid="ignore"):
            small = gpus.astype(dtype)
        back = small.astype(np.float64)
        # bit for bit (a -0.0 stays -0.0); NaN only where it was NaN
        if np.array_equal(np.isnan(back), missing) and np.array_equal(
            back[~missing].view(np.int64), gpus[~missing].view(np.int64)
        ):
            return small
    return gpus


def gpu_series(series: Series, per_gpu: float, gpus_per_replica: int) -> GpuDemand:
    """The GPU demand of a cleaned series (:func:`policylint.measure.pooled.gpu_demand`), stored compactly."""
    import numpy as np

    from policylint.measure.pooled import gpu_demand

    gpus = gpu_demand(series.values.reshape(1, -1), np.array([per_gpu]), np.array([gpus_per_replica]))[0]
    times = series.times
    start = float(times[0]) if times.size else 0.0
    step = float(times[1] - times[0]) if times.size > 1 else float(series.step_seconds)
    rebuilt = start + np.arange(times.size, dtype=np.float64) * step
    regular = math.isfinite(start) and math.isfinite(step) and np.array_equal(
        rebuilt.view(np.int64), np.asarray(times, dtype=np.float64).view(np.int64)
    )
    return GpuDemand(
        gpus=_narrow(gpus),
        step_seconds=float(series.step_seconds),
        axis_start=start,
        axis_step=step,
        times=None if regular else times,
    )


#: Cold start of a workload that declares none, in a pool without elastic capacity.
DEFAULT_COLD_START_SECONDS = 300.0


def _seconds(value: Any) -> float | None:
    """A positive number of seconds, else None (absent, zero, a boolean, text)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return float(value)
    return None


def elastic_cold_start(pool: Pool | None) -> float | None:
    """The pool's elastic ``coldStartSeconds``, when the pool has elastic capacity at all."""
    if pool is None:
        return None
    elastic = pool.spec.get("elastic")
    if not isinstance(elastic, dict) or _seconds(elastic.get("maxGpus")) is None:
        return None
    return _seconds(elastic.get("coldStartSeconds"))


def effective_cold_start(workload: Workload) -> float:
    """The workload's effective cold start, the window its bands are computed with.

    New capacity for a workload is ready only when its GPUs are there and its
    replica has started: the longer of its declared ``coldStartSeconds`` and its
    pool's elastic ``coldStartSeconds``; the declared one alone when the pool has no
    elastic capacity; the pool's when the workload declares none; else 300 s.
    The one definition (FRAMEWORK, "effective cold start"): every command uses it.
    """
    declared = _seconds(workload.spec.get("coldStartSeconds"))
    elastic = elastic_cold_start(workload.pool)
    known = [x for x in (declared, elastic) if x is not None]
    return max(known) if known else DEFAULT_COLD_START_SECONDS


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
    share = ((workload.spec.get("concurrency") or {}).get("share") or {}).get("fraction")
    if not isinstance(share, (int, float)) or isinstance(share, bool) or share == 1:
        return series
    from dataclasses import replace

    return replace(series, values=series.values * float(share))


def _reading(spec: dict[str, Any], limits: TraceLimits | None) -> dict[str, Any]:
    """Reader options every measurement block may declare: units, origin, row filters, limits."""
    return {
        "timestamp_unit": spec.get("timestampUnit"),
        "duration_unit": spec.get("durationUnit"),
        "time_origin": spec.get("timeOrigin"),
        "where": spec.get("where"),
        "skip_incomplete": bool(spec.get("skipIncomplete", False)),
        "limits": limits,
    }


def _keyed(spec: dict[str, Any]) -> dict[str, Any]:
    """The long-table options of a block: ``key: {column, select | aggregate}``."""
    key = spec.get("key") or {}
    return {
        "key_column": key.get("column"),
        "key_select": None if key.get("select") is None else str(key["select"]),
        "aggregate": key.get("aggregate"),
    }


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
                # a job list is an interval log: running jobs (or their GPUs) = concurrency
                format=fmt,
                gpus_column=spec.get("gpusColumn"),
                unit=spec.get("unit"),
                **_keyed(spec),
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
            findings.extend(_notes(ref, series.notes))
            read = series  # integrity is judged on the file's own series, before a share scales it
            series = _apply_share(workload, series)
            facts.trace_unit = series.unit
            exclusions, problems = _exclusions(workload, ref)
            findings.extend(problems)
            facts.integrity = _integrity(read, exclusions)
            mads = (workload.spec.get("concurrency") or {}).get("excludeOutlierDays")
            # flat days: the series' own test (bands.flat_day_test), as in every command
            settings = bands.BandSettings(
                cold_start_seconds=effective_cold_start(workload),
                outlier_mad_k=float(mads) if mads is not None else None,
            )
            per_gpu, per_replica = _conversion(workload, facts)
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
                facts.demand = gpu_series(report.cleaned, per_gpu, per_replica)
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
            findings.extend(_notes(durations, jobs.notes))
            stats = bands.duration_stats(jobs.durations)
            facts.p50, facts.p90, facts.p99, facts.tail_ratio = stats.p50, stats.p90, stats.p99, stats.tail_ratio
            # A buffer is only a buffer if one long-tail job fits in it (PL601).
            facts.integrity = {**(facts.integrity or {}), **_job_integrity(jobs, spec)}
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
            measured = _vram_trace(workload, vref, limits, workload.measurements.get("vram_activity"))
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
    return facts, findings


def _integrity(series: Series, exclusions: list[Any]) -> dict[str, Any]:
    """The integrity stage between reading and judging (:mod:`policylint.measure.integrity`)."""
    from policylint.measure.integrity import trace_facts

    spans = [(float(e.start), float(e.end)) for e in exclusions]
    return trace_facts(series.times, series.values, series.valid, float(series.step_seconds), spans)


def _job_integrity(jobs: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """Plausibility facts of a job list: the GPUs its jobs record (:func:`policylint.measure.integrity.job_facts`)."""
    from policylint.measure.integrity import job_facts

    return {**job_facts(jobs.gpus, spec.get("gpusColumn") is not None), "jobs_last_time": jobs.last_time}


def gpu_conversion(workload: Workload, trace_unit: str) -> tuple[float | None, int]:
    """Concurrency per GPU and GPUs per replica that turn a workload's trace into GPUs.

    The one place that reads them: every command converts with these and
    :func:`policylint.bands.gpu_counts`. A GPU-weighted trace (``unit: gpus``) is
    GPU demand already: one unit is one GPU, and gpusPerReplica must not multiply
    it again. The per-GPU figure is None when the workload declares none.
    """
    value = (workload.spec.get("perGpuConcurrency") or {}).get("value")
    per_gpu = None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        per_gpu = float(value)
    return conversion_for(trace_unit, per_gpu, _per_replica(workload))


def conversion_for(trace_unit: str | None, per_gpu: float | None, gpus_per_replica: int) -> tuple[float | None, int]:
    """The conversion of a trace counted in ``trace_unit`` (:func:`gpu_conversion`, from figures already read)."""
    if trace_unit == "gpus":
        return 1.0, 1
    return per_gpu, gpus_per_replica


def _conversion(workload: Workload, facts: WorkloadFacts) -> tuple[float | None, int]:
    return gpu_conversion(workload, facts.trace_unit)


def _per_replica(workload: Workload) -> int:
    value = workload.spec.get("gpusPerReplica", 1)
    return value if isinstance(value, int) and not isinstance(value, bool) else 1


#: GiB per unit of a VRAM trace sample; shares of memory are converted with the pool's GPU size.
_GIB_PER_UNIT = {"GiB": 1.0, "MiB": 1.0 / 1024.0, "bytes": 1.0 / 2**30}


@dataclass(frozen=True)
class VramMeasured:
    """VRAM facts from measurements: totals over the pods and each pod's part."""

    ratio: float | None
    resident_gib: float | None
    residency_seconds: float
    active_seconds: float | None
    #: (pod, residency seconds, active compute seconds or NaN when unknown), sorted by pod
    pods: tuple[tuple[str, float, float], ...]
    notes: tuple[str, ...]
    #: last valid sample of the memory trace, unix seconds (integrity: samples after now)
    last_time: float | None = None


def _vram_series(
    ref: MeasurementRef,
    columns: list[str] | None,
    limits: TraceLimits | None,
    unusable: dict[str, str] | None = None,
) -> dict[str, Series]:
    """The series of a VRAM or activity block: one per pod with a ``key``, else one under ''.

    ``unusable`` (for activity): pods whose rows form no series are left out and
    recorded there with the reason, so that the pairing names the pod.
    """
    from policylint import traces

    spec = ref.spec
    assert ref.path is not None
    common: dict[str, Any] = {
        "format": spec.get("format", "auto"),
        "timestamp_column": spec.get("timestampColumn"),
        "match": spec.get("match"),
        "step_seconds": spec.get("stepSeconds"),
        "display_name": ref.display,
        "value_columns": columns,
        **_reading(spec, limits),
    }
    key = spec.get("key") or {}
    if key.get("column"):
        select = key.get("select")
        return traces.read_parts(
            ref.path, key_column=str(key["column"]), key_select=None if select is None else str(select),
            unusable=unusable, **common,
        )
    return {"": traces.read_series(ref.path, **common)}


def _busy_share(busy: Series, memory: Series, scale: float) -> np.ndarray:
    """The activity (0-1) at each memory grid time: the latest activity sample less than one step old."""
    import numpy as np

    at = np.searchsorted(busy.times, memory.times, side="right") - 1
    known = at >= 0
    at = np.clip(at, 0, busy.times.size - 1)
    # Same file, same timestamps: the grids coincide; two files are aligned by time.
    known &= (memory.times - busy.times[at]) < busy.step_seconds
    known &= busy.valid[at]
    share = np.where(known, busy.values[at] / scale, 0.0)
    return np.asarray(np.clip(share, 0.0, 1.0))


def _vram_trace(
    workload: Workload,
    ref: MeasurementRef,
    limits: TraceLimits | None = None,
    activity: MeasurementRef | None = None,
) -> VramMeasured:
    """Residency and active compute seconds, per pod and summed, from a VRAM trace in its declared unit.

    A zero sample means the model is not resident; only resident samples count,
    both as residency time and as the time in which compute is looked for.
    Active compute comes from the measured activity (``activity`` file or
    ``activeColumn``: busy share summed over resident samples) or, without it,
    from the declared ``activeComputeSeconds`` per day scaled to the days each
    pod's trace covers. With a ``key`` every pod is computed on its own series
    and the seconds are summed; the resident GiB is the largest pod's peak.
    """
    import numpy as np

    spec = ref.spec
    memory = _vram_series(ref, spec.get("columns"), limits)
    busy: dict[str, Series] | None = None
    scale = 100.0
    idle: dict[str, str] = {}  # pods with activity rows that form no series, and why
    if activity is not None and activity.path is not None:
        busy = _vram_series(activity, activity.spec.get("columns"), limits, idle)
        scale = 100.0 if activity.spec.get("unit", "percent") == "percent" else 1.0
    elif spec.get("activeColumn"):
        busy = _vram_series(ref, [spec["activeColumn"]], limits, idle)
        scale = 100.0 if spec.get("activeUnit", "percent") == "percent" else 1.0
    if busy is not None and len(busy) == 1 and len(memory) == 1:
        busy = {next(iter(memory)): next(iter(busy.values()))}  # one series each: they belong together
    declared = (workload.spec.get("vram") or {}).get("activeComputeSeconds")
    pods: list[tuple[str, float, float]] = []
    peak = 0.0
    total_resident = 0.0
    total_active: float | None = 0.0
    for pod in sorted(memory):
        series = memory[pod]
        values = series.values
        if bool(np.any(values[series.valid] < 0)):
            raise MeasurementError("VRAM samples must not be negative", source=series.source)
        resident = series.valid & (values > 0)
        resident_seconds = float(np.count_nonzero(resident)) * series.step_seconds
        if resident.any():
            peak = max(peak, float(values[resident].max()))
        active: float | None = None
        if busy is not None:
            if pod not in busy:
                what = f"pod {pod!r}" if pod else "the memory series"
                why = f"; its activity rows form none: {idle[pod]}" if pod in idle else ""
                raise MeasurementError(
                    f"{what} has no activity series (activity keys: {', '.join(sorted(busy)) or 'none'}){why}",
                    source=ref.display,
                )
            share = _busy_share(busy[pod], series, scale)
            active = float(np.sum(share[resident])) * series.step_seconds
        elif isinstance(declared, (int, float)):
            covered_days = float(np.count_nonzero(series.valid)) * series.step_seconds / 86_400.0
            active = float(declared) * covered_days
        total_resident += resident_seconds
        total_active = None if active is None or total_active is None else total_active + active
        pods.append((pod, resident_seconds, math.nan if active is None else active))
    unit = str(spec.get("unit", "GiB"))
    gib: float | None
    if unit in _GIB_PER_UNIT:
        gib = peak * _GIB_PER_UNIT[unit]
    else:
        gpu_memory = (workload.pool.spec.get("gpu") or {}).get("memoryGiB") if workload.pool else None
        share_of_gpu = peak / 100.0 if unit == "percent" else peak
        gib = share_of_gpu * float(gpu_memory) * _per_replica(workload) if gpu_memory else None
    ratio: float | None
    if total_active is None:
        ratio = None
    elif total_resident == 0:
        ratio = 0.0
    else:
        ratio = total_resident / total_active if total_active > 0 else math.inf
    notes = next(iter(memory.values())).notes if memory else ()
    if busy:
        notes = notes + next(iter(busy.values())).notes
    return VramMeasured(
        ratio=ratio,
        resident_gib=gib,
        residency_seconds=total_resident,
        active_seconds=total_active,
        pods=tuple(pods) if spec.get("key") else (),
        notes=notes,
        last_time=max((float(m.times[m.valid][-1]) for m in memory.values() if m.valid.any()), default=None),
    )


def measure(
    model: Model,
    now: dt.datetime,
    *,
    limits: TraceLimits | None = None,
    cache_dir: Path | None = None,
    jobs: int = 1,
    pooled: dict[str, CachedPool] | None = None,
    only: Needed | None = None,
) -> tuple[dict[str, WorkloadFacts], list[Finding]]:
    """Facts for every workload of the model, computed once per run (traces read within ``limits``).

    ``cache_dir`` (None: no cache) keeps each traced workload's facts between runs
    (:mod:`policylint.cache.measurements`). ``jobs`` above 1 measures the workloads the cache
    does not hold in that many processes; the result is the same as with one.

    With the cache, ``pooled`` (when given) receives every pool's cache key and its
    cached pooled demand, for :func:`measure_pools`; the workloads of a pool whose
    pooled demand is cached come back without their GPU demand series (``demand``
    None), which only that sum would read.

    ``only`` (None: every workload) measures just those workloads and looks up
    just those pools (see :func:`policylint.engine.scope.needed`).
    """
    from policylint.cache import digests
    from policylint.cache import measurements as measure_cache

    names = sorted(model.workloads) if only is None else sorted(n for n in model.workloads if n in only.workloads)
    done: dict[str, tuple[WorkloadFacts, list[Finding]]] = {}
    keys: dict[str, str | None] = {}
    parallel = jobs > 1 and _can_fork()
    unhashed: list[str] = []  # workloads with a trace whose digest is not recorded yet
    for name in names:
        if cache_dir is None:
            keys[name] = None
            continue
        # A parallel run leaves new traces to its workers, which hash them beside the measuring
        # instead of one after another here (a cold run reads every trace twice: hash, then parse).
        key = measure_cache.workload_key(model.workloads[name], limits, cache_dir, hash_files=not parallel)
        if key == measure_cache.UNHASHED:
            unhashed.append(name)
        else:
            keys[name] = key
    if len(unhashed) < PARALLEL_MIN_WORKLOADS:
        for name in unhashed:  # too few to start workers for: hashed here
            keys[name] = measure_cache.workload_key(model.workloads[name], limits, cache_dir)
        unhashed = []
    summed: set[str] = set()  # workloads whose pools all have their pooled demand cached
    if cache_dir is not None and pooled is not None and not unhashed:
        pooled.update(_cached_pools(model, keys, cache_dir, only))
        hits = {q for q, c in pooled.items() if c.facts is not None}
        # a pool's kept sum is updated from the series of the members that join it only
        joining = {q: frozenset(c.joining) for q, c in pooled.items() if c.facts is None and c.base is not None}
        for name in names:
            pool = model.workloads[name].pool
            if pool is not None and (pool.qualified in hits or name not in joining.get(pool.qualified, {name})):
                summed.add(name)
    for name in names:
        key = keys.get(name)
        hit = (
            measure_cache.load(cache_dir, key, demand=name not in summed)
            if cache_dir is not None and key is not None
            else None
        )
        if hit is not None:
            # only finding-free measurements are stored, so a hit has no findings
            done[name] = (hit, [])
    todo = [n for n in names if n not in done]
    traced = [n for n in todo if any(r.path is not None for r in model.workloads[n].measurements.values())]
    if parallel and len(traced) >= PARALLEL_MIN_WORKLOADS:
        # The first one here: it imports the readers and calculator once, before the
        # fork, instead of once in every worker.
        first = traced[0]
        if first in unhashed:
            keys[first] = measure_cache.workload_key(model.workloads[first], limits, cache_dir)
            key = keys[first]
            hit = measure_cache.load(cache_dir, key) if cache_dir is not None and key is not None else None
            if hit is not None:
                done[first] = (hit, [])
        if first not in done:
            done[first] = _measure_one(model.workloads[first], keys[first], now, limits, cache_dir)
        rekey = frozenset(unhashed) - {first}
        for name, key, result in _measure_parallel(model, traced[1:], keys, rekey, now, limits, cache_dir, jobs):
            keys[name] = key
            done[name] = result
    for name in todo:
        if name not in done:
            if name not in keys:  # its worker failed before hashing: hashed here
                keys[name] = measure_cache.workload_key(model.workloads[name], limits, cache_dir)
            done[name] = _measure_one(model.workloads[name], keys[name], now, limits, cache_dir)
    if cache_dir is not None and pooled is not None and unhashed:
        # every key is known now: the pools' entries, for measure_pools to use or store
        pooled.update(_cached_pools(model, keys, cache_dir, only))
    digests.flush_digests(cache_dir)  # the digests recorded or hashed here, one entry per folder
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
    from policylint.cache import measurements as measure_cache

    try:
        facts, problems = measure_workload(workload, now, limits=limits)
    except MeasurementError as exc:  # pragma: no cover - measure_workload catches these
        return WorkloadFacts(errors=[str(exc)]), []
    if cache_dir is not None and key is not None and not problems and not facts.errors:
        measure_cache.store(cache_dir, key, facts)
    return facts, problems


def _can_fork() -> bool:
    """Workers inherit the parsed model by forking; elsewhere the run stays in one process."""
    import multiprocessing
    import sys

    return sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()


#: what forked workers measure from (set just before the pool starts, read in the children)
_WORK: tuple[Model, dict[str, str | None], frozenset[str], dt.datetime, TraceLimits | None, Path | None] | None = None


def _work(name: str) -> tuple[str, str | None, tuple[WorkloadFacts, list[Finding]]]:
    """In a worker: the workload's key (hashing its traces when asked), then its cached or measured facts."""
    from policylint.cache import measurements as measure_cache

    assert _WORK is not None
    model, keys, rekey, now, limits, cache_dir = _WORK
    workload = model.workloads[name]
    if name in rekey:
        key = measure_cache.workload_key(workload, limits, cache_dir)
        hit = measure_cache.load(cache_dir, key) if cache_dir is not None and key is not None else None
        if hit is not None:
            return name, key, (hit, [])
    else:
        key = keys[name]
    return name, key, _measure_one(workload, key, now, limits, cache_dir)


def _measure_parallel(
    model: Model,
    names: list[str],
    keys: dict[str, str | None],
    rekey: frozenset[str],
    now: dt.datetime,
    limits: TraceLimits | None,
    cache_dir: Path | None,
    jobs: int,
) -> list[tuple[str, str | None, tuple[WorkloadFacts, list[Finding]]]]:
    """Measure ``names`` in up to ``jobs`` forked processes, hashing the traces of ``rekey`` there first.

    A broken pool (a worker that died, a fork that failed) is reported on standard
    error and its results are dropped: the caller measures those workloads itself.
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    global _WORK
    _WORK = (model, keys, rekey, now, limits, cache_dir)
    out: list[tuple[str, str | None, tuple[WorkloadFacts, list[Finding]]]] = []
    try:
        workers = min(jobs, len(names))
        if workers:
            with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
                chunk = max(1, len(names) // (workers * 4))
                out.extend(pool.map(_work, names, chunksize=chunk))
    except (BrokenProcessPool, OSError) as exc:
        # The pool itself broke (a worker killed, e.g. by the OOM killer; no fork possible):
        # the caller measures every workload in this process instead, and the run says so.
        # Anything else a worker raises is a bug and ends the run as one.
        from policylint.errors import escape_controls

        out.clear()
        sys.stderr.write(
            escape_controls(f"policylint: measuring in {jobs} processes failed ({type(exc).__name__}: {exc}); measuring in one process instead")
            + "\n"
        )
    finally:
        _WORK = None
    return out


@dataclass(frozen=True)
class CachedPool:
    """A pool's pooled-demand cache key (None: not cacheable) and what the cache held under it.

    When the exact entry misses, ``base`` is the pool's kept sum
    (:mod:`policylint.cache.pooled`) when it can be updated: ``joining`` names the
    members whose series must be added (every other member's series is not read),
    ``keys`` holds every member's measurement key.
    """

    key: str | None
    facts: PoolFacts | None = None
    base: PoolSum | None = None
    leaving: tuple[str, ...] = ()
    joining: tuple[str, ...] = ()
    keys: dict[str, str] = field(default_factory=dict)


def _cached_pools(
    model: Model, keys: dict[str, str | None], cache_dir: Path, only: Needed | None = None
) -> dict[str, CachedPool]:
    """Each pool's cache key and cached pooled demand; a pool with an unkeyed member has no key.

    A pool whose exact entry misses gets its kept sum when few enough members changed.
    """
    from policylint.cache import measurements as measure_cache
    from policylint.cache import pooled as pooled_cache

    out: dict[str, CachedPool] = {}
    for pool in model.pools:
        if only is not None and pool.qualified not in only.pools:
            continue
        members = [(w.name, keys.get(w.name)) for w in pool.workloads]
        if not members or any(k is None for _, k in members):
            out[pool.qualified] = CachedPool(None)
            continue
        key = measure_cache.pool_key(pool, [(n, str(k)) for n, k in members])
        found = measure_cache.load_pool(cache_dir, key)
        if found is not None:
            out[pool.qualified] = CachedPool(key, found)
            continue
        named = {n: str(k) for n, k in members}
        base = pooled_cache.load(cache_dir, pooled_cache.locator(model.root, pool.qualified))
        changes = base.changes(named) if base is not None else None
        if base is None or changes is None:
            out[pool.qualified] = CachedPool(key, keys=named)
        else:
            out[pool.qualified] = CachedPool(key, None, base, tuple(changes[0]), tuple(changes[1]), named)
    return out


def pool_cold_start(pool: Pool) -> float:
    """The pool's cold start: the longest effective cold start of its workloads.

    A pool holding one workload therefore has exactly that workload's window (and
    bands). A pool without workloads takes its elastic cold start, else 300 s.
    """
    members = [effective_cold_start(w) for w in pool.workloads]
    if members:
        return max(members)
    elastic = elastic_cold_start(pool)
    return elastic if elastic is not None else DEFAULT_COLD_START_SECONDS


def pool_cold_start_source(pool: Pool) -> str:
    """Which declaration :func:`pool_cold_start` took its figure from, for explanations."""
    chosen = pool_cold_start(pool)
    slowest = [w for w in sorted(pool.workloads, key=lambda w: w.name) if effective_cold_start(w) == chosen]
    elastic = elastic_cold_start(pool)
    if elastic is not None and elastic == chosen:
        return "the pool's elastic coldStartSeconds"
    if slowest and _seconds(slowest[0].spec.get("coldStartSeconds")) == chosen:
        return f"workload {slowest[0].name}'s coldStartSeconds, the slowest of the pool"
    return "the default of 300 s: no workload or elastic capacity declares one"


def _member(workload: Workload, facts: WorkloadFacts) -> PoolMember | None:
    from policylint.measure.pooled import GpuMember

    per_gpu, per_replica = _conversion(workload, facts)
    demand = facts.demand
    if facts.report is None or demand is None or not isinstance(per_gpu, (int, float)) or per_gpu <= 0:
        return None
    return GpuMember(
        name=workload.name,
        # None for a regular axis: (axis_start, axis_step) stand for it until the pool needs it
        times=demand.times,  # type: ignore[arg-type]
        values=demand.gpus,  # not read: the GPU demand was computed when the workload was measured
        step_seconds=demand.step_seconds,
        per_gpu=float(per_gpu),
        gpus_per_replica=per_replica,
        gpus=demand.gpus,
        axis_start=demand.axis_start,
        axis_step=demand.axis_step,
    )


def measure_pool(
    pool: Pool, facts: dict[str, WorkloadFacts], keys: dict[str, str] | None = None, root: Path | None = None
) -> PoolFacts:
    """Pooled demand of one pool from its workloads' measured series.

    With every member's measurement key (``keys``) and the repository ``root``,
    the sum is also made ready for the pooled-sum cache: :func:`take_sum` then
    gives it (see :mod:`policylint.cache.pooled`).
    """
    return _measure_pool(pool, facts, keys, root)[0]


def _measure_pool(
    pool: Pool, facts: dict[str, WorkloadFacts], keys: dict[str, str] | None, root: Path | None
) -> tuple[PoolFacts, PoolSum | None]:
    from policylint.cache import pooled as pooled_cache
    from policylint.measure.pooled import extents, grid_spec, pool_series

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
        return out, None
    out.cold_start_seconds = pool_cold_start(pool)
    known = extents(members) if keys is not None and root is not None else None
    parts = pooled_cache.Accumulator(_grid_size(grid_spec(known))) if known is not None else None
    try:
        out.grid, out.report = _pool_series(pool, members, out.cold_start_seconds, parts)
        figures = [_alone(m, out.cold_start_seconds) for m in members]
        out.member_sums = _sum_alone(figures)
    except PolicylintError:  # pragma: no cover - members are validated above
        return out, None
    if known is None or parts is None or not parts.exact or keys is None or root is None:
        return out, None
    assert out.grid is not None
    kept = {
        e[0]: pooled_cache.SumMember(keys[e[0]], e[1], e[2], e[3], alone)
        for e, alone in zip(known, figures, strict=True)
        if e[0] in keys
    }
    if len(kept) != len(members):
        return out, None
    loc = pooled_cache.locator(root, pool.qualified)
    return out, pooled_cache.build(loc, grid_spec(known), out.cold_start_seconds, kept, parts.total, parts.missing)


def _grid_size(spec: GridSpec) -> int:
    return max(0, spec.k1 - spec.k0)


def _pool_series(
    pool: Pool, members: list[PoolMember], cold_start: float, parts: Any = None
) -> tuple[PooledGrid, PooledReport]:
    """The pool's grid and report at its capacity and queue limit (``parts`` sees each member's row)."""
    from policylint.measure.pooled import align, analyse_pool

    capacity = float(pool.capacity_gpus)
    limit = (pool.spec.get("queue") or {}).get("maxWaitSeconds")
    limit_seconds = float(limit) if isinstance(limit, (int, float)) and not isinstance(limit, bool) else None
    grid = align(members, parts)
    return grid, analyse_pool(grid, cold_start, capacity=capacity, limit_seconds=limit_seconds)


def _alone(member: PoolMember, cold_start_seconds: float) -> tuple[float | None, float | None, float | None, float | None]:
    """One workload's GPU bands alone at the pool's cold start: a pool of its own."""
    from policylint.measure.pooled import pool_series

    _, alone = pool_series([member], cold_start_seconds)
    return (alone.baseline, alone.daily, alone.peak, alone.sustained_max)


def _sum_alone(
    figures: list[tuple[float | None, float | None, float | None, float | None]],
) -> tuple[float | None, float | None, float | None, float | None]:
    """Each workload's GPU bands alone, at the pool's cold start, summed (None when any is unknown).

    Each member is analysed as a pool of its own by the pooled calculator, so the
    sum differs from the pooled figure only by what pooling changes: a pool of
    one gives the same figures as its pooled series. Summed in member (name) order,
    whether the figures were computed now or kept by the pooled-sum cache.
    """
    totals: list[float | None] = [0.0, 0.0, 0.0, 0.0]
    for alone in figures:
        for i, value in enumerate(alone):
            current = totals[i]
            totals[i] = None if current is None or value is None else current + value
    return (totals[0], totals[1], totals[2], totals[3])


def _member_sums(
    members: list[PoolMember], cold_start_seconds: float
) -> tuple[float | None, float | None, float | None, float | None]:
    """:func:`_sum_alone` of every member's bands alone, computed now."""
    return _sum_alone([_alone(m, cold_start_seconds) for m in members])


def _update_pool(
    pool: Pool, facts: dict[str, WorkloadFacts], entry: CachedPool, cache_dir: Path
) -> tuple[PoolFacts, PoolSum] | None:
    """The pool's demand from its kept sum, updated with the members that left and joined; None when it cannot be.

    Only the joining members' new series (in ``facts``) and the leaving members' old
    series (their series entries, by their old keys) are read; every other
    member's figures come from the kept sum. Anything that would make the result
    differ from summing afresh (see :mod:`policylint.cache.pooled`) gives None.
    """
    from policylint.cache import measurements as measure_cache
    from policylint.cache import pooled as pooled_cache
    from policylint.measure.pooled import GpuMember, PooledGrid, analyse_pool, grid_spec

    base = entry.base
    if base is None:
        return None
    names = sorted(w.name for w in pool.workloads)
    if set(names) != set(entry.keys):
        return None
    cold = pool_cold_start(pool)
    if cold != base.cold_start:
        return None
    joining: list[tuple[PoolMember, pooled_cache.SumMember]] = []
    extent: dict[str, tuple[str, float, float, float]] = {}
    for w in sorted(pool.workloads, key=lambda w: w.name):
        if w.name in entry.joining:
            f = facts.get(w.name)
            m = _member(w, f) if f is not None else None
            ends = m.extent() if m is not None else None
            if m is None or ends is None:
                return None
            alone = _alone(m, cold)
            joining.append((m, pooled_cache.SumMember(entry.keys[w.name], float(m.step_seconds), ends[0], ends[1], alone)))
            extent[w.name] = (w.name, float(m.step_seconds), ends[0], ends[1])
        else:
            kept = base.members.get(w.name)
            f = facts.get(w.name)
            if kept is None or kept.key != entry.keys[w.name] or f is None or f.report is None:
                return None
            extent[w.name] = (w.name, kept.step, kept.first, kept.last)
    leaving: list[PoolMember] = []
    for name in entry.leaving:
        old = base.members[name]
        demand = measure_cache.load_demand(cache_dir, old.key)
        if demand is None:
            return None
        leaving.append(
            GpuMember(
                name, demand.times, demand.gpus, demand.step_seconds, 1.0, 1,
                gpus=demand.gpus, axis_start=demand.axis_start, axis_step=demand.axis_step,
            )
        )
        ends = leaving[-1].extent()
        if ends is None or (float(demand.step_seconds), ends[0], ends[1]) != (old.step, old.first, old.last):
            return None  # not the series the sum holds
    spec = grid_spec([extent[n] for n in names])
    updated = pooled_cache.update(base, spec, leaving, joining)
    if updated is None or sorted(updated.members) != names:
        return None
    out = PoolFacts(measured=tuple(names), unknown=(), cold_start_seconds=cold)
    capacity = float(pool.capacity_gpus)
    limit = (pool.spec.get("queue") or {}).get("maxWaitSeconds")
    limit_seconds = float(limit) if isinstance(limit, (int, float)) and not isinstance(limit, bool) else None
    out.grid = PooledGrid(times=spec.times(), step_seconds=spec.step, names=tuple(names), pooled=updated.pooled())
    out.report = analyse_pool(out.grid, cold, capacity=capacity, limit_seconds=limit_seconds)
    out.member_sums = _sum_alone([updated.members[n].alone for n in names])
    return out, updated


def _fill_demand(
    pool: Pool,
    facts: dict[str, WorkloadFacts],
    entry: CachedPool | None,
    cache_dir: Path | None,
    remeasure: Callable[[Workload, str], WorkloadFacts] | None,
) -> None:
    """Read back the series of the members that came without one (left out for a kept sum that could not be used)."""
    from policylint.cache import measurements as measure_cache

    if entry is None or cache_dir is None:
        return
    for w in pool.workloads:
        f = facts.get(w.name)
        key = entry.keys.get(w.name)
        if f is None or f.demand is not None or f.report is None or key is None:
            continue
        hit = measure_cache.load(cache_dir, key)
        if hit is not None:
            f.demand = hit.demand
        elif remeasure is not None:
            facts[w.name] = remeasure(w, key)


def measure_pools(
    model: Model,
    facts: dict[str, WorkloadFacts],
    *,
    cache_dir: Path | None = None,
    cached: dict[str, CachedPool] | None = None,
    only: Needed | None = None,
    remeasure: Callable[[Workload, str], WorkloadFacts] | None = None,
) -> dict[str, PoolFacts]:
    """Pooled demand of every pool of the model (by ``cluster/pool``), computed once per run.

    ``cached`` is what :func:`measure` found in the cache folder ``cache_dir``: a pool
    found there is taken as stored; a pool whose kept sum can be updated is updated
    (:mod:`policylint.cache.pooled`); another with a key is computed and stored, its
    sum kept. ``only`` (None: every pool) computes just those pools. ``remeasure``
    measures a workload again whose series cannot be read back when a kept sum
    turns out unusable (its facts then came without the series).
    """
    from policylint.cache import measurements as measure_cache
    from policylint.cache import pooled as pooled_cache

    out: dict[str, PoolFacts] = {}
    for pool in model.pools:
        if only is not None and pool.qualified not in only.pools:
            continue
        entry = (cached or {}).get(pool.qualified)
        if entry is not None and entry.facts is not None:
            out[pool.qualified] = entry.facts
            continue
        kept: PoolSum | None = None
        updated = _update_pool(pool, facts, entry, cache_dir) if entry is not None and cache_dir is not None else None
        if updated is not None:
            out[pool.qualified], kept = updated
        else:
            _fill_demand(pool, facts, entry, cache_dir, remeasure)
            keys = entry.keys if entry is not None and entry.key is not None and entry.keys else None
            out[pool.qualified], kept = _measure_pool(pool, facts, keys, model.root if keys else None)
        if cache_dir is not None and entry is not None and entry.key is not None:
            measure_cache.store_pool(cache_dir, entry.key, out[pool.qualified])
            if kept is not None:
                pooled_cache.store(cache_dir, kept)
    return out
