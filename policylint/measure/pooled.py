"""Pooled demand: the GPU-demand series of a whole pool, and its bands.

Workloads placed in one pool share its GPUs, so the pool is sized from the sum of
their GPU demand at each instant, not from the sum of each workload's bands: a
day-time service and a night-time batch need fewer GPUs together than apart.

The steps, in order (all numpy over whole arrays; the only Python loops run over
workloads, never over samples):

1. **Common grid** (:func:`align`). The grid step is the *finest* step among the
   workloads, and the grid is laid on the samples of the workload that has it. Every
   other series is read on that grid by holding each sample for its own step (the
   value at grid time t is the last sample at or before t, as long as t lies within
   that sample's step) - the same carry-forward rule the trace readers use to put
   irregular samples on a grid. Nothing is averaged away: a one-minute spike of a
   fine series stays a one-minute spike, and a coarse series keeps its
   distribution (each of its values is simply repeated). When the coarse steps are
   multiples of the finest one and the samples are aligned (exporters usually are),
   this is exact; otherwise a coarse value is shifted by less than one fine step.
2. **Ranges, gaps and exclusions.** The grid covers only the time every workload
   measured (the latest first sample to the earliest end of a last sample's step).
   An instant counts only when *every* workload has a usable sample there: a gap,
   a declared exclusion or an outlier day of any one workload removes that instant
   from the pool's series. A sum with a missing term would understate the pool,
   and filling the term with zero or a guess would invent a measurement.
   Non-overlapping traces therefore leave no pooled window at all.
3. **GPUs per workload, per sample** (:func:`gpu_demand`):
   ``ceil(c / per-GPU concurrency) x GPUs per replica`` - replicas belong to one
   workload, so the rounding happens before the sum.
4. **Pooled series** ``g(t)`` = the column sums of that 2-D array.
5. **Bands, spikes and queue** of ``g`` with the pool's cold start (the longest
   effective cold start of its workloads, :func:`policylint.measure.cold_start.pool_cold_start`),
   by the same functions the single-workload calculator uses (:mod:`policylint.bands`).

For a workload alone in its pool the pooled GPU bands equal its own GPU bands: the
GPU conversion is monotone, so it commutes with the rolling minimum and with
percentiles. With several workloads the pooled peak never exceeds the summed peaks,
but percentiles are not additive: a pooled baseline can, rarely, exceed the sum of
the baselines (two workloads that each sit at zero 96% of the time but are busy at
different times). Both figures are reported.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from policylint.bands import (
    BandSettings,
    QueueStats,
    bounded_queue,
    find_spikes,
    gpu_counts,
    percentile,
    queue_stats,
    rolling_min,
    window_days,
    window_samples,
)
from policylint.errors import PolicylintError

__all__ = [
    "GpuMember",
    "GridSpec",
    "PoolMember",
    "PooledGrid",
    "PooledReport",
    "align",
    "analyse_pool",
    "gpu_demand",
    "grid_spec",
    "on_grid",
    "pool_bands",
    "pool_series",
]

# Float noise guard for ceilings, as in the band calculator.
_CEIL_EPS = 1e-9


@dataclass(frozen=True, eq=False)
class PoolMember:
    """One workload's contribution: its cleaned concurrency and how it turns into GPUs.

    ``times`` are the grid times of the workload's own series (unix seconds, regular
    at ``step_seconds``); ``values`` its concurrency with NaN where not usable.
    """

    name: str
    times: np.ndarray
    values: np.ndarray
    step_seconds: float
    per_gpu: float
    gpus_per_replica: int = 1

    def demand(self) -> np.ndarray:
        """GPUs per sample of the member's own series (NaN kept), see :func:`gpu_demand`."""
        row: np.ndarray = gpu_demand(
            self.values.reshape(1, -1), np.array([self.per_gpu]), np.array([self.gpus_per_replica])
        )[0]
        return row


    def axis(self) -> np.ndarray:
        """The member's own time axis (unix seconds)."""
        return self.times

    def extent(self) -> tuple[float, float, int] | None:
        """(first time, last time, samples) of the member's own axis; None when it has no sample."""
        if not self.times.size:
            return None
        return float(self.times[0]), float(self.times[-1]), int(self.times.size)

    def regular(self) -> tuple[float, float] | None:
        """(start, step) when the axis is exactly ``start + i x step`` and known to be so, else None."""
        return None


@dataclass(frozen=True, eq=False)
class GpuMember(PoolMember):
    """A member whose GPU demand per sample was computed when it was measured.

    ``gpus`` is that demand (whole GPU counts, NaN = not usable), possibly in a
    narrower float type that holds every value exactly; ``values`` is unused.

    A regular time axis is kept as ``axis_start`` and ``axis_step`` (``times`` then
    None): the axis ``axis_start + i x axis_step`` is built only when the member does
    not lie on the pool's grid, so a pool of a thousand members does not hold a
    thousand arrays of times to find out that they coincide.
    """

    gpus: np.ndarray | None = None
    axis_start: float = 0.0
    axis_step: float = 0.0

    def demand(self) -> np.ndarray:
        assert self.gpus is not None
        return np.asarray(self.gpus, dtype=np.float64)

    def axis(self) -> np.ndarray:
        if self.times is not None:
            return self.times
        assert self.gpus is not None
        return self.axis_start + np.arange(self.gpus.size, dtype=np.float64) * self.axis_step

    def extent(self) -> tuple[float, float, int] | None:
        if self.times is not None:
            return super().extent()
        assert self.gpus is not None
        n = int(self.gpus.size)
        if not n:
            return None
        # the last element of axis(), by the same two operations
        last = float(np.float64(self.axis_start) + np.float64(n - 1) * np.float64(self.axis_step))
        return float(self.axis_start), last, n

    def regular(self) -> tuple[float, float] | None:
        return (float(self.axis_start), float(self.axis_step)) if self.times is None else None


@dataclass(frozen=True, eq=False)
class PooledGrid:
    """The pool's common grid and ``pooled``, g(t): the members' summed GPU demand.

    ``pooled`` is NaN where any member (``names``) has no usable sample. Only the sum
    is kept, not each member's row: a pool of a hundred 92-day members would otherwise
    hold tens of megabytes for as long as the run lasts.
    """

    times: np.ndarray
    step_seconds: float
    names: tuple[str, ...]
    pooled: np.ndarray


def gpu_demand(values: np.ndarray, per_gpu: np.ndarray, gpus_per_replica: np.ndarray) -> np.ndarray:
    """GPUs per row and sample: ceil(c / per_gpu) x GPUs per replica, NaN kept.

    ``values`` is 2-D ``(members, samples)``; ``per_gpu`` and ``gpus_per_replica`` hold
    one entry per row. The conversion is the calculator's one definition,
    :func:`policylint.bands.gpu_counts`.
    """
    return gpu_counts(np.atleast_2d(np.asarray(values, dtype=np.float64)), per_gpu, gpus_per_replica)


@dataclass(frozen=True)
class GridSpec:
    """Where a pool's common grid lies: ``origin + k x step`` for ``k0 <= k < k1``.

    Computed from each member's step and the extent of its axis only
    (:func:`grid_spec`), so a cached pool can tell whether a changed member moves
    the grid without reading the others' series.
    """

    origin: float
    step: float
    k0: int
    k1: int

    def times(self) -> np.ndarray:
        return self.origin + self.step * np.arange(self.k0, max(self.k0, self.k1), dtype=np.float64)


#: what :func:`grid_spec` needs of one member: (name, step seconds, first time, last time)
Extent = tuple[str, float, float, float]


def grid_spec(extents: Sequence[Extent]) -> GridSpec:
    """The common grid of members with these extents (see the module docs, step 1 and 2)."""
    if not extents:
        raise PolicylintError("a pool without measured workloads has no pooled demand")
    ref = min(extents, key=lambda e: (e[1], e[0]))
    step = float(ref[1])
    start = max(float(e[2]) for e in extents)
    end = min(float(e[3]) + float(e[1]) for e in extents)
    origin = float(ref[2])
    # Grid points origin + k * step with start <= t < end.
    k0 = math.ceil((start - origin) / step - _CEIL_EPS)
    k1 = math.ceil((end - origin) / step - _CEIL_EPS)
    return GridSpec(origin, step, k0, k1)


def extents(members: Sequence[PoolMember]) -> list[Extent] | None:
    """Each member's :data:`Extent`; None when a member has no sample (no cached grid then)."""
    out: list[Extent] = []
    for m in members:
        found = m.extent()
        if found is None:
            return None
        out.append((m.name, float(m.step_seconds), found[0], found[1]))
    return out


def on_grid(m: PoolMember, times: np.ndarray, spec: GridSpec | None = None) -> np.ndarray:
    """The member's GPU demand read on the grid ``times`` (NaN where it has no usable sample).

    ``spec``, when given, describes ``times``: a member with a regular axis that
    starts at the grid's origin with the grid's step lies on it sample for sample,
    and is sliced without building its axis.
    """
    # The GPU conversion works sample by sample, so converting the member's own
    # series and then reading it on the grid gives the same numbers as the reverse.
    gpus = m.demand()
    regular = m.regular()
    if spec is not None and regular is not None and times.size and m.step_seconds > _CEIL_EPS:
        start, step = regular
        # The member's times start + i * step and the grid's origin + step * k are the same
        # floats index for index: the exact-run test below would take this very slice.
        # (The axis must be strictly increasing for that test to pick index k0: a step of a
        # few units in the last place of the times could repeat a time.)
        ends = max(abs(start), abs(start + (gpus.size - 1) * step))
        if (
            start == spec.origin
            and step == spec.step
            and step > 4 * float(np.spacing(ends))
            and 0 <= spec.k0
            and spec.k0 + times.size <= gpus.size
        ):
            return gpus[spec.k0 : spec.k0 + times.size]
    axis = m.axis()
    if times.size and axis.size >= times.size:
        # Most members were sampled on this very grid: when the grid is an exact run of
        # the member's own times, the lookup below would pick exactly that run.
        first = int(np.searchsorted(axis, times[0]))
        run = axis[first : first + times.size]
        if run.size == times.size and m.step_seconds > _CEIL_EPS and np.array_equal(run, times):
            return gpus[first : first + times.size]
    idx = np.searchsorted(axis, times + _CEIL_EPS, side="right") - 1
    inside = (idx >= 0) & (times - axis[np.clip(idx, 0, None)] < m.step_seconds - _CEIL_EPS)
    taken = np.clip(idx, 0, gpus.size - 1)
    out: np.ndarray = np.where(inside, gpus[taken], np.nan)
    return out


def align(members: Sequence[PoolMember], parts: Callable[[PoolMember, np.ndarray], None] | None = None) -> PooledGrid:
    """Put every member on the common grid (see the module docs) and convert to GPUs.

    ``parts``, when given, also receives each member's demand on the grid (for a
    cache that keeps the sum and updates it member by member).
    """
    if not members:
        raise PolicylintError("a pool without measured workloads has no pooled demand")
    known = extents(members)
    if known is not None:
        spec: GridSpec | None = grid_spec(known)
        assert spec is not None
        times = spec.times()
    else:  # a member without samples: the grid as it always was, from the members' axes
        spec = None
        order = sorted(range(len(members)), key=lambda i: (members[i].step_seconds, members[i].name))
        ref = members[order[0]]
        step = float(ref.step_seconds)
        axes = [m.axis() for m in members]
        start = max(float(a[0]) for a in axes if a.size)
        end = min(float(a[-1]) + float(m.step_seconds) for m, a in zip(members, axes) if a.size)
        origin = float(ref.axis()[0])
        k0 = math.ceil((start - origin) / step - _CEIL_EPS)
        k1 = math.ceil((end - origin) / step - _CEIL_EPS)
        times = origin + step * np.arange(k0, max(k0, k1), dtype=np.float64)
    step = float(min(members, key=lambda m: (m.step_seconds, m.name)).step_seconds)
    # g(t) is summed one member at a time, in member order: the same additions, in the
    # same order, as summing a (members x samples) array over its first axis, without
    # ever holding that array. A plain sum propagates NaN: an instant with a missing
    # member is not measured.
    total = np.zeros(times.size)
    for m in members:  # one vectorised lookup per member
        row = on_grid(m, times, spec)
        total += row
        if parts is not None:
            parts(m, row)
    return PooledGrid(times=times, step_seconds=step, names=tuple(m.name for m in members), pooled=total)


@dataclass(frozen=True)
class PooledReport:
    """The pool's bands (GPUs) and what surrounds them.

    Bands are None when the pooled series has no stretch of usable samples as long
    as the cold-start window (no overlap, or gaps everywhere); ``window_days`` says
    how much pooled time there is.
    """

    members: tuple[str, ...]
    step_seconds: float
    cold_start_seconds: float
    window_samples: int
    samples: int
    valid_samples: int
    window_days: float
    first: float | None
    last: float | None
    baseline: float | None
    daily: float | None
    peak: float | None
    sustained_max: float | None
    noise_spike_count: int = 0
    real_spike_count: int = 0
    highest_spike: float = 0.0
    widest_noise_seconds: float = 0.0
    capacity: float | None = None
    queue: QueueStats | None = None  # all demand at ``capacity``
    daily_queue: QueueStats | None = None  # demand up to the daily band at ``capacity``
    # share of daily-band work (GPU-seconds) a queue honouring ``limit_seconds`` turns away
    limit_seconds: float | None = None
    daily_rejected_share: float | None = None

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict (infinite waits become null)."""

        def num(x: float | None) -> float | None:
            return None if x is None or not math.isfinite(x) else float(x)

        def whole(x: float | None) -> int | None:
            # GPU bands are order statistics of whole GPU counts.
            return None if x is None else int(x)

        def q(stats: QueueStats | None) -> dict[str, object] | None:
            if stats is None:
                return None
            return {
                "capacity": stats.capacity,
                "max_wait_seconds": num(stats.max_wait),
                "p99_wait_seconds": num(stats.p99_wait),
            }

        return {
            "members": list(self.members),
            "bands_gpus": None
            if self.baseline is None
            else {"baseline": whole(self.baseline), "daily": whole(self.daily), "peak": whole(self.peak)},
            "sustained_max_gpus": whole(self.sustained_max),
            "step_seconds": self.step_seconds,
            "cold_start_seconds": self.cold_start_seconds,
            "window_samples": self.window_samples,
            "samples": self.samples,
            "valid_samples": self.valid_samples,
            "window_days": self.window_days,
            "spike_counts": {"noise": self.noise_spike_count, "real": self.real_spike_count},
            "highest_spike_gpus": whole(self.highest_spike),
            "widest_noise_width_seconds": self.widest_noise_seconds,
            "queue": q(self.queue),
            "daily_queue": q(self.daily_queue),
            "queue_wait_limit_seconds": self.limit_seconds,
            "daily_rejected_share": self.daily_rejected_share,
        }


def analyse_pool(
    grid: PooledGrid,
    cold_start_seconds: float,
    settings: BandSettings | None = None,
    *,
    capacity: float | None = None,
    limit_seconds: float | None = None,
) -> PooledReport:
    """Bands, spikes and queue of the pooled series ``grid.pooled``.

    Baseline = p95 and daily = p99 of the sustained series (trailing minimum over
    the cold-start window), peak = max - the calculator's definitions, applied to GPUs.
    ``capacity`` (GPUs) asks for queue waits; the daily queue cuts demand at the daily
    band first, because demand above it is the overflow policy's business.
    """
    settings = settings or BandSettings(cold_start_seconds=cold_start_seconds)
    g = grid.pooled
    step = grid.step_seconds
    valid = ~np.isnan(g)
    valid_count = int(np.count_nonzero(valid))
    w = window_samples(cold_start_seconds, step)
    times = grid.times
    first = float(times[valid][0]) if valid_count else None
    last = float(times[valid][-1]) if valid_count else None
    unknown = PooledReport(
        members=grid.names,
        step_seconds=step,
        cold_start_seconds=cold_start_seconds,
        window_samples=w,
        samples=int(g.size),
        valid_samples=valid_count,
        window_days=window_days(valid_count, step),
        first=first,
        last=last,
        baseline=None,
        daily=None,
        peak=None,
        sustained_max=None,
    )
    bands = _bands(g, w, settings)
    if bands is None:
        return unknown
    baseline, daily, peak, sustained_max = bands
    found = find_spikes(g, baseline, step, cold_start_seconds)
    noise = int(np.count_nonzero(found.noise))
    queue = daily_queue = None
    rejected: float | None = None
    if capacity is not None:
        within = np.minimum(g, daily)
        queue = queue_stats(g, capacity, step, settings.queue_percentile)
        daily_queue = queue_stats(within, capacity, step, settings.queue_percentile)
        if limit_seconds is not None:
            rejected = bounded_queue(within, capacity, step, limit_seconds).rejected_share
    return replace(
        unknown,
        baseline=baseline,
        daily=daily,
        peak=peak,
        sustained_max=sustained_max,
        noise_spike_count=noise,
        real_spike_count=int(found.length.size) - noise,
        highest_spike=float(found.height.max()) if found.height.size else 0.0,
        widest_noise_seconds=float(found.length[found.noise].max() * step) if noise else 0.0,
        capacity=capacity,
        queue=queue,
        daily_queue=daily_queue,
        limit_seconds=limit_seconds if capacity is not None else None,
        daily_rejected_share=rejected,
    )


def _bands(g: np.ndarray, w: int, settings: BandSettings) -> tuple[float, float, float, float] | None:
    """(baseline, daily, peak, sustained max) of the pooled series ``g`` with a ``w``-sample window; None without a sustained sample.

    The one computation of :func:`analyse_pool`'s bands, which :func:`pool_bands` shares.
    """
    s = rolling_min(g, w) if g.size >= w else np.empty(0)
    s_valid = s[~np.isnan(s)]
    if s_valid.size == 0:
        return None
    b_raw, d_raw = percentile(s_valid, [settings.baseline_percentile, settings.daily_percentile])
    peak = float(np.nanmax(g))
    daily = min(float(d_raw), peak)
    baseline = min(float(b_raw), daily)
    return baseline, daily, peak, float(s_valid.max())


def pool_bands(
    members: Sequence[PoolMember], cold_start_seconds: float
) -> tuple[float | None, float | None, float | None, float | None]:
    """(baseline, daily, peak, sustained max) of :func:`pool_series` at the default settings, without its spikes:
    each member alone, aligned and banded as :func:`analyse_pool` does (the same numbers; no caller reads spikes)."""
    grid = align(members)
    bands = _bands(grid.pooled, window_samples(cold_start_seconds, grid.step_seconds),
                   BandSettings(cold_start_seconds=cold_start_seconds))
    return bands if bands is not None else (None, None, None, None)


def pool_series(
    members: Sequence[PoolMember],
    cold_start_seconds: float,
    settings: BandSettings | None = None,
    *,
    capacity: float | None = None,
    limit_seconds: float | None = None,
) -> tuple[PooledGrid, PooledReport]:
    """:func:`align` then :func:`analyse_pool`: the pooled grid and its report."""
    grid = align(members)
    return grid, analyse_pool(grid, cold_start_seconds, settings, capacity=capacity, limit_seconds=limit_seconds)
