"""The facts the measure step gives, as plain data: what a workload and a pool measured to.

These dataclasses are the measure step's output and the measurement cache's
payload (:mod:`policylint.measure.measurement_cache` stores and rebuilds them through
the closed type table of :mod:`policylint.measure.cache_encoding`). They hold numbers,
arrays and the calculator's report types only, and this module imports nothing
of the measuring itself, so the cache can sit below the step that fills them.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from policylint.bands import BandReport
    from policylint.measure.pooled import PooledGrid, PooledReport


@dataclass(frozen=True, eq=False)
class GpuDemand:
    """One workload's GPU demand at each sample of its cleaned series: what its pool sums.

    The facts keep this instead of the cleaned series (time axis, values and validity
    mask, about 450 KB for 92 days of 5-minute samples): a repository of a thousand
    traced workloads would otherwise hold half a gigabyte of series until the pools
    are summed, and a warm run would read all of it back from the cache.

    ``gpus`` holds whole GPU counts, NaN where the sample is not usable, in the
    narrowest float type that gives back every value bit for bit (float16 holds up
    to 2,048 GPUs per sample). ``times`` is None when the time axis is exactly
    ``axis_start + i x axis_step`` (a regular grid, as readers produce); otherwise
    it is the axis itself. :meth:`axis` rebuilds it when a pool needs it.
    """

    gpus: np.ndarray
    step_seconds: float
    axis_start: float
    axis_step: float
    times: np.ndarray | None = None

    def axis(self) -> np.ndarray:
        """The time axis (unix seconds, float64), bit for bit the cleaned series' own."""
        import numpy as np

        if self.times is not None:
            return self.times
        return self.axis_start + np.arange(self.gpus.size, dtype=np.float64) * self.axis_step


@dataclass
class WorkloadFacts:
    """Everything measured about one workload (None where unknown)."""

    report: BandReport | None = None
    #: highest usable sample of the cleaned concurrency (None when none is usable)
    usable_max: float | None = None
    #: GPU demand per cleaned sample, for the pool's sum (None without a trace or a per-GPU figure)
    demand: GpuDemand | None = None
    #: GPUs rounding up to whole replicas adds to the cleaned demand on average (calc.gpus.mean_rounding)
    rounding_gpus_mean: float | None = None
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
    #: what the concurrency trace counts: "concurrency", or "gpus" (GPU-weighted jobs: no GPU conversion)
    trace_unit: str = "concurrency"
    #: VRAM from measurements: seconds the model was resident, and activity-weighted compute seconds
    vram_residency_seconds: float | None = None
    vram_active_seconds: float | None = None
    #: the same per pod (key of a long VRAM table), sorted by pod
    vram_pods: tuple[tuple[str, float, float], ...] = ()
    #: integrity facts of the concurrency trace as read (:func:`policylint.measure.integrity.workload.trace_facts`)
    integrity: dict[str, float | int | str | bool | list[int] | None] | None = None
    errors: list[str] = field(default_factory=list)


@dataclass
class PoolFacts:
    """The pooled demand of one pool (see :mod:`policylint.measure.pooled`).

    ``report`` is None when some workload's GPU demand is unknown (``unknown``
    names them) or the pool has no workloads; ``measured`` names the workloads whose
    GPU demand is known (a readable trace and a per-GPU figure).
    """

    measured: tuple[str, ...] = ()
    unknown: tuple[str, ...] = ()
    cold_start_seconds: float | None = None
    report: PooledReport | None = None
    grid: PooledGrid | None = None
    #: each band summed over the workloads, every one computed alone at the pool's cold
    #: start (baseline, daily, peak, sustained_max): "pooling saves" compares like with like
    member_sums: tuple[float | None, float | None, float | None, float | None] | None = None
