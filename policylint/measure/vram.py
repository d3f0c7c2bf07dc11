"""VRAM from measurements: how long a model is resident and how much of that time it computes.

A VRAM block (``vram.trace``, with an optional ``vram.activity`` or ``activeColumn``)
gives the memory held per sample, one series or one per pod; the activity gives the
busy share. :func:`vram_trace` turns them into residency seconds, active compute
seconds, their ratio and the resident GiB the VRAM rules read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from policylint import traces
from policylint.errors import MeasurementError
from policylint.measure.conversion import gpus_per_replica
from policylint.measure.reading import reader_arguments

if TYPE_CHECKING:
    import numpy as np

    from policylint.model import MeasurementRef, Workload
    from policylint.model.specs import NoBlock, TraceKeySpec
    from policylint.traces import Series, TraceLimits


#: GiB per unit of a VRAM trace sample; shares of memory are converted with the pool's GPU size.
GIB_PER_UNIT = {"GiB": 1.0, "MiB": 1.0 / 1024.0, "bytes": 1.0 / 2**30}


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


def vram_series(
    ref: MeasurementRef,
    columns: list[str] | None,
    limits: TraceLimits | None,
    unusable: dict[str, str] | None = None,
) -> dict[str, Series]:
    """The series of a VRAM or activity block: one per pod with a ``key``, else one under ''.

    ``unusable`` (for activity): pods whose rows form no series are left out and
    recorded there with the reason, so that the pairing names the pod.
    """
    assert ref.path is not None
    key: TraceKeySpec | NoBlock = ref.spec.get("key") or {}
    if key.get("column"):
        return traces.read_parts(ref.path, unusable=unusable, **reader_arguments(ref, limits, "parts", columns=columns))
    return {"": traces.read_series(ref.path, **reader_arguments(ref, limits, "series", columns=columns))}


def busy_share(busy: Series, memory: Series, scale: float) -> np.ndarray:
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


def vram_trace(
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
    memory = vram_series(ref, spec.get("columns"), limits)
    busy: dict[str, Series] | None = None
    scale = 100.0
    idle: dict[str, str] = {}  # pods with activity rows that form no series, and why
    if activity is not None and activity.path is not None:
        busy = vram_series(activity, activity.spec.get("columns"), limits, idle)
        scale = 100.0 if activity.spec.get("unit", "percent") == "percent" else 1.0
    elif spec.get("activeColumn"):
        busy = vram_series(ref, [spec["activeColumn"]], limits, idle)
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
            share = busy_share(busy[pod], series, scale)
            active = float(np.sum(share[resident])) * series.step_seconds
        elif isinstance(declared, (int, float)):
            covered_days = float(np.count_nonzero(series.valid)) * series.step_seconds / 86_400.0
            active = float(declared) * covered_days
        total_resident += resident_seconds
        total_active = None if active is None or total_active is None else total_active + active
        pods.append((pod, resident_seconds, math.nan if active is None else active))
    unit = str(spec.get("unit", "GiB"))
    gib: float | None
    if unit in GIB_PER_UNIT:
        gib = peak * GIB_PER_UNIT[unit]
    else:
        gpu_memory = (workload.pool.spec.get("gpu") or {}).get("memoryGiB") if workload.pool else None
        share_of_gpu = peak / 100.0 if unit == "percent" else peak
        gib = share_of_gpu * float(gpu_memory) * gpus_per_replica(workload) if gpu_memory else None
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
