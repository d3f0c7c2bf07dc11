"""The band calculator: concurrency bands, spikes, fluid queue and friends.

Everything here is numpy over whole arrays. Functions that pay off on many
workloads at once (rolling minimum, percentiles, spikes, queue) accept 2-D input
shaped ``(series, samples)``; none loops over samples in Python. Results are plain
frozen dataclasses; this module knows nothing about rules, files or terminals.
The definitions are written out in ``docs/bands.md``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from policylint.errors import MeasurementError, PolicylintError
from policylint.traces import Exclusion, Gap, Series, apply_exclusions, format_time

__all__ = [
    "BandReport",
    "BandSettings",
    "DurationStats",
    "ErlangResult",
    "QueueStats",
    "Spike",
    "Spikes",
    "analyse",
    "capacity_for_tolerance",
    "duration_stats",
    "erlang_b",
    "erlang_c",
    "erlang_c_wait",
    "find_spikes",
    "gpus_for",
    "outlier_days",
    "percentile",
    "queue_backlog",
    "queue_stats",
    "residency_ratio",
    "rolling_min",
    "sustained",
    "window_samples",
]

# Float noise guard for ceilings: 3.0000000000000004 GPUs is 3 GPUs.
_CEIL_EPS = 1e-9


@dataclass(frozen=True)
class BandSettings:
    """Every number the calculator uses, with the framework's defaults."""

    cold_start_seconds: float = 300.0
    min_window_days: float = 90.0
    baseline_percentile: float = 95.0
    daily_percentile: float = 99.0
    max_gap_steps: int = 5
    queue_statistic: str = "max"  # "max" or "percentile"
    queue_percentile: float = 99.0
    outlier_mad_k: float | None = None  # flag and drop outlier days when set

    def __post_init__(self) -> None:
        if not (self.cold_start_seconds > 0 and math.isfinite(self.cold_start_seconds)):
            raise PolicylintError(f"cold start must be positive seconds, got {self.cold_start_seconds}")
        if self.min_window_days < 0:
            raise PolicylintError(f"minimum window must be >= 0 days, got {self.min_window_days}")
        for label, p in (
            ("baseline percentile", self.baseline_percentile),
            ("daily percentile", self.daily_percentile),
            ("queue percentile", self.queue_percentile),
        ):
            if not 0 < p <= 100:
                raise PolicylintError(f"{label} must be in (0, 100], got {p}")
        if self.baseline_percentile > self.daily_percentile:
            raise PolicylintError("baseline percentile must not exceed the daily percentile")
        if self.max_gap_steps < 1:
            raise PolicylintError(f"gap limit must be at least 1 step, got {self.max_gap_steps}")
        if self.queue_statistic not in ("max", "percentile"):
            raise PolicylintError(
                f"queue statistic must be 'max' or 'percentile', got {self.queue_statistic!r}"
            )
        if self.outlier_mad_k is not None and self.outlier_mad_k <= 0:
            raise PolicylintError(f"outlier MAD factor must be positive, got {self.outlier_mad_k}")


# --------------------------------------------------------------------------- rolling minimum


def window_samples(cold_start_seconds: float, step_seconds: float) -> int:
    """W = ceil(cold start / step), at least one sample."""
    return max(1, math.ceil(cold_start_seconds / step_seconds - _CEIL_EPS))


def rolling_min(values: np.ndarray, width: int) -> np.ndarray:
    """Trailing minimum over ``width`` samples along the last axis.

    Output element ``i`` is ``min(values[..., i : i + width])``, so the first
    ``width - 1`` samples have no full window and are dropped. NaN anywhere in a
    window makes that window NaN (a window touching an excluded sample is not a
    valid sample).

    Uses the van Herk / Gil-Werman block scheme: split into blocks of ``width``,
    take running minima forward and backward inside each block; any window is
    the minimum of one backward and one forward value. Cost is three passes no
    matter how wide the window is.
    """
    a = np.asarray(values, dtype=np.float64)
    if width < 1:
        raise ValueError("width must be at least 1")
    n = a.shape[-1]
    if width > n:
        return np.empty(a.shape[:-1] + (0,), dtype=np.float64)
    if width == 1:
        return a.copy()
    blocks = -(-n // width)
    padded = np.full(a.shape[:-1] + (blocks * width,), np.inf)
    padded[..., :n] = a
    shaped = padded.reshape(a.shape[:-1] + (blocks, width))
    forward = np.minimum.accumulate(shaped, axis=-1).reshape(padded.shape)
    backward = np.minimum.accumulate(shaped[..., ::-1], axis=-1)[..., ::-1].reshape(padded.shape)
    out = n - width + 1
    return np.minimum(backward[..., :out], forward[..., width - 1 : width - 1 + out])


def sustained(values: np.ndarray, cold_start_seconds: float, step_seconds: float) -> np.ndarray:
    """The sustained series s: trailing minimum over the cold-start window."""
    return rolling_min(values, window_samples(cold_start_seconds, step_seconds))


# --------------------------------------------------------------------------- percentiles


def _rank(p: float, n: np.ndarray | int) -> np.ndarray:
    """0-based index of the inverted-CDF p-th percentile among n sorted values.

    Smallest k with (k + 1) / n >= p / 100. Done in integers where possible so
    that 95% of 100 is exactly rank 95, not 96 from float noise.
    """
    n_arr = np.asarray(n, dtype=np.int64)
    # n * p is exact for whole-number percents, so the division rounds correctly.
    k = np.ceil(n_arr * p / 100.0 - _CEIL_EPS).astype(np.int64) - 1
    ranks: np.ndarray = np.clip(k, 0, np.maximum(n_arr - 1, 0))
    return ranks


def percentile(values: np.ndarray, ps: Sequence[float]) -> np.ndarray:
    """Inverted-CDF percentiles along the last axis, ignoring NaN.

    Returns shape ``(len(ps),) + values.shape[:-1]``; rows with no valid value
    give NaN. Uses ``np.partition`` (linear time) rather than a full sort.
    """
    a = np.asarray(values, dtype=np.float64)
    lead = a.shape[:-1]
    flat = a.reshape(-1, a.shape[-1]) if a.ndim > 1 else a.reshape(1, -1)
    nan = np.isnan(flat)
    counts = flat.shape[1] - nan.sum(axis=1)
    out = np.full((len(ps), flat.shape[0]), np.nan)
    if flat.shape[1] == 0:
        return out.reshape((len(ps),) + lead)
    if (counts == counts[0]).all():
        # Same number of valid samples in every row: one partition for all rows.
        n = int(counts[0])
        if n:
            work = np.where(nan, np.inf, flat) if nan.any() else flat
            ranks = [int(_rank(p, n)) for p in ps]
            part = np.partition(work, sorted(set(ranks)), axis=1)
            for i, r in enumerate(ranks):
                out[i] = part[:, r]
    else:
        # Rows differ in valid count: per-row partition (a loop over series, not samples).
        for row in range(flat.shape[0]):
            n = int(counts[row])
            if not n:
                continue
            valid = flat[row][~nan[row]]
            ranks = [int(_rank(p, n)) for p in ps]
            part = np.partition(valid, sorted(set(ranks)))
            out[:, row] = part[ranks]
    return out.reshape((len(ps),) + lead)


# --------------------------------------------------------------------------- spikes


@dataclass(frozen=True)
class Spike:
    """One maximal run above the baseline band.

    ``start`` is unix seconds; ``height`` is max(c) - B; ``volume`` the excess
    work sum(c - B) x dt; ``noise`` means narrower than the cold-start window.
    """

    start: float
    width_seconds: float
    height: float
    volume: float
    noise: bool


@dataclass(frozen=True, eq=False)
class Spikes:
    """Spikes of one or many series as parallel arrays (row = series index)."""

    row: np.ndarray
    start_index: np.ndarray
    length: np.ndarray
    height: np.ndarray
    volume: np.ndarray
    noise: np.ndarray


def find_spikes(
    values: np.ndarray, threshold: np.ndarray | float, step_seconds: float, cold_start_seconds: float
) -> Spikes:
    """Maximal runs where value > threshold, for 1-D or 2-D ``values``.

    ``threshold`` is a scalar or one per row. NaN samples are never above it, so
    an exclusion splits a run. Runs come from ``np.diff`` of the padded mask; each
    row is padded with a False column so runs cannot cross rows when flattened.
    """
    a = np.atleast_2d(np.asarray(values, dtype=np.float64))
    rows, n = a.shape
    th = np.broadcast_to(np.asarray(threshold, dtype=np.float64).reshape(-1, 1), (rows, 1))
    above = a > th  # NaN compares False
    mask = np.zeros((rows, n + 1), dtype=np.int8)
    mask[:, :n] = above
    flat = mask.ravel()
    edges = np.diff(flat, prepend=np.int8(0))
    starts = np.flatnonzero(edges == 1)
    ends = np.flatnonzero(edges == -1)  # the padding column guarantees every run ends
    excess = np.zeros((rows, n + 1))
    excess[:, :n] = np.where(above, a - th, 0.0)
    excess_flat = excess.ravel()
    if starts.size:
        # Samples between runs are 0 excess (never above), so reduceat over
        # [start_i, start_{i+1}) sums/maxes exactly run i.
        high = np.where(flat.astype(bool), excess_flat, -np.inf)
        height = np.maximum.reduceat(high, starts)
        volume = np.add.reduceat(excess_flat, starts) * step_seconds
    else:
        height = np.empty(0)
        volume = np.empty(0)
    length = ends - starts
    return Spikes(
        row=starts // (n + 1),
        start_index=starts % (n + 1),
        length=length,
        height=height,
        volume=volume,
        noise=length * step_seconds < cold_start_seconds - _CEIL_EPS,
    )


# --------------------------------------------------------------------------- queue


def queue_backlog(values: np.ndarray, capacity: np.ndarray | float, step_seconds: float) -> np.ndarray:
    """Fluid backlog Q(t) at capacity C in closed form (Lindley recursion unrolled).

    x = (c - C) dt, S = cumsum(x), Q = S - min(0, running min of S). NaN
    (excluded) samples add nothing: the backlog is held across them.
    """
    a = np.asarray(values, dtype=np.float64)
    cap = np.asarray(capacity, dtype=np.float64)
    if cap.ndim == 1 and a.ndim == 2:
        cap = cap.reshape(-1, 1)  # one capacity per series (row)
    x = np.where(np.isnan(a), 0.0, (a - cap) * step_seconds)
    s = np.cumsum(x, axis=-1)
    low = np.minimum.accumulate(s, axis=-1)
    return s - np.minimum(low, 0.0)


@dataclass(frozen=True)
class QueueStats:
    """Waiting-time figures at one capacity (seconds)."""

    capacity: float
    max_wait: float
    p99_wait: float


def _waits(values: np.ndarray, capacity: float, step_seconds: float) -> np.ndarray:
    backlog = queue_backlog(values, capacity, step_seconds)
    if capacity > 0:
        wait = backlog / capacity
    else:
        wait = np.where(backlog > 0, np.inf, 0.0)
    return np.where(np.isnan(values), np.nan, wait)


def queue_stats(
    values: np.ndarray, capacity: float, step_seconds: float, wait_percentile: float = 99.0
) -> QueueStats:
    """Max and p-th percentile (inverted CDF) wait ~ Q / C over valid samples."""
    wait = _waits(values, capacity, step_seconds)
    valid = wait[~np.isnan(wait)]
    if valid.size == 0:
        return QueueStats(float(capacity), math.nan, math.nan)
    high = float(percentile(valid, [wait_percentile])[0])
    return QueueStats(float(capacity), float(valid.max()), high)


def _wait_stat(values: np.ndarray, capacity: int, step_seconds: float, statistic: str, p: float) -> float:
    wait = _waits(values, float(capacity), step_seconds)
    if statistic == "max":
        return float(np.nanmax(wait))
    return float(percentile(wait, [p])[0])


def capacity_for_tolerance(
    values: np.ndarray,
    tolerance_seconds: float,
    step_seconds: float,
    *,
    statistic: str = "max",
    wait_percentile: float = 99.0,
) -> int:
    """Least integer capacity whose max (or p-th percentile) wait <= tolerance.

    Wait only shrinks as capacity grows, so bisection over integers is exact; at
    ceil(peak) nothing ever queues, which bounds the search. Each probe is one
    vectorised pass.
    """
    a = np.asarray(values, dtype=np.float64)
    if tolerance_seconds < 0:
        raise PolicylintError(f"tolerance must be >= 0 seconds, got {tolerance_seconds}")
    if np.isnan(a).all():
        raise MeasurementError("no valid sample to size a queue from")
    hi = max(0, math.ceil(float(np.nanmax(a)) - _CEIL_EPS))
    lo = 0
    if _wait_stat(a, lo, step_seconds, statistic, wait_percentile) <= tolerance_seconds:
        return 0
    # Invariant: lo misses the tolerance, hi meets it.
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _wait_stat(a, mid, step_seconds, statistic, wait_percentile) <= tolerance_seconds:
            hi = mid
        else:
            lo = mid
    return hi


# --------------------------------------------------------------------------- GPUs, jobs, residency


def gpus_for(concurrency: np.ndarray | float, per_gpu: float, gpus_per_replica: int = 1) -> np.ndarray:
    """GPUs = ceil(concurrency / concurrency per GPU) x GPUs per replica."""
    if not per_gpu > 0:
        raise PolicylintError(f"concurrency per GPU must be positive, got {per_gpu}")
    if gpus_per_replica < 1:
        raise PolicylintError(f"GPUs per replica must be at least 1, got {gpus_per_replica}")
    units = np.ceil(np.asarray(concurrency, dtype=np.float64) / per_gpu - _CEIL_EPS)
    return (np.maximum(units, 0) * gpus_per_replica).astype(np.int64)


@dataclass(frozen=True)
class DurationStats:
    """Job duration percentiles (seconds) and the p99/p50 tail ratio."""

    count: int
    p50: float
    p90: float
    p99: float
    tail_ratio: float


def duration_stats(durations: np.ndarray) -> DurationStats:
    """p50/p90/p99 (inverted CDF) of job durations and tail ratio p99 / p50."""
    d = np.asarray(durations, dtype=np.float64)
    d = d[~np.isnan(d)]
    if d.size == 0:
        raise MeasurementError("no job durations")
    p50, p90, p99 = (float(x) for x in percentile(d, [50, 90, 99]))
    ratio = p99 / p50 if p50 > 0 else math.inf
    return DurationStats(int(d.size), p50, p90, p99, ratio)


def residency_ratio(residency_seconds: np.ndarray | float, active_seconds: np.ndarray | float) -> np.ndarray:
    """VRAM residency ratio = resident seconds / active compute seconds."""
    active = np.asarray(active_seconds, dtype=np.float64)
    resident = np.asarray(residency_seconds, dtype=np.float64)
    if (active <= 0).any() or np.isnan(active).any():
        raise PolicylintError("active compute seconds must be positive to form a residency ratio")
    if (resident < 0).any():
        raise PolicylintError("residency seconds must not be negative")
    return resident / active


# --------------------------------------------------------------------------- Erlang


def erlang_b(servers: int, load: np.ndarray | float) -> np.ndarray:
    """Erlang B blocking probability by the stable recursion (vectorised over load).

    B(0) = 1, B(k) = a B(k-1) / (k + a B(k-1)). The loop runs over servers.
    """
    if servers < 0:
        raise PolicylintError("servers must be >= 0")
    a = np.asarray(load, dtype=np.float64)
    b = np.ones_like(a)
    for k in range(1, servers + 1):
        b = a * b / (k + a * b)
    return b


def erlang_c(servers: int, load: np.ndarray | float) -> np.ndarray:
    """Probability an arrival waits in an M/M/c queue (1 when load >= servers)."""
    if servers < 1:
        raise PolicylintError("servers must be >= 1")
    a = np.asarray(load, dtype=np.float64)
    b = erlang_b(servers, a)
    with np.errstate(divide="ignore", invalid="ignore"):
        c = servers * b / (servers - a * (1.0 - b))
    return np.where(a >= servers, 1.0, c)


@dataclass(frozen=True)
class ErlangResult:
    """Erlang C answer: probability of waiting and mean wait (seconds)."""

    servers: int
    load: float
    probability_wait: float
    mean_wait: float


def erlang_c_wait(servers: int, arrival_rate: float, service_time: float) -> ErlangResult:
    """Erlang C for arrivals per second and mean service seconds.

    a = lambda x service time; W = C / (c mu - lambda). An unstable system
    (a >= c) waits with probability 1 and forever.
    """
    if arrival_rate < 0 or service_time <= 0:
        raise PolicylintError("arrival rate must be >= 0 and service time > 0")
    load = arrival_rate * service_time
    if load >= servers:
        return ErlangResult(servers, load, 1.0, math.inf)
    prob = float(erlang_c(servers, load))
    mu = 1.0 / service_time
    return ErlangResult(servers, load, prob, prob / (servers * mu - arrival_rate))


# --------------------------------------------------------------------------- cleaning


def outlier_days(times: np.ndarray, values: np.ndarray, k: float) -> np.ndarray:
    """UTC day starts (unix seconds) whose daily mean is more than k MADs from the median day."""
    ok = ~np.isnan(values)
    if not ok.any():
        return np.empty(0)
    day = np.floor(times[ok] / 86_400.0).astype(np.int64)
    first = int(day.min())
    idx = day - first
    sums = np.bincount(idx, weights=values[ok])
    counts = np.bincount(idx)
    has = counts > 0
    means = sums[has] / counts[has]
    centre = float(np.median(means))
    mad = float(np.median(np.abs(means - centre)))
    if mad == 0:
        return np.empty(0)
    days = (np.flatnonzero(has) + first).astype(np.float64) * 86_400.0
    return days[np.abs(means - centre) > k * mad]


# --------------------------------------------------------------------------- report


def _iso(t: float | None) -> str | None:
    return None if t is None else format_time(t)


def _num(x: float | None) -> float | None:
    """JSON has no infinity: infinite waits become null (documented)."""
    if x is None or not math.isfinite(x):
        return None
    return float(x)


@dataclass(frozen=True)
class BandReport:
    """Everything ``analyse`` found for one series."""

    source: str
    baseline: float
    daily: float
    peak: float
    window_days: float
    min_window_days: float
    meets_window: bool
    step_seconds: float
    cold_start_seconds: float
    window_samples: int
    samples: int
    valid_samples: int
    excluded_samples: int
    gap_samples: int
    gaps: tuple[Gap, ...]
    exclusions: tuple[Exclusion, ...]
    outlier_days: tuple[float, ...]
    first: float
    last: float
    spikes: tuple[Spike, ...]
    noise_spike_count: int
    real_spike_count: int
    widest_noise_width: float
    baseline_queue: QueueStats | None
    tolerance_seconds: float | None = None
    queue_statistic: str = "max"
    capacity_for_tolerance: int | None = None
    queue: QueueStats | None = None
    per_gpu: float | None = None
    gpus_per_replica: int = 1
    baseline_percentile: float = 95.0
    daily_percentile: float = 99.0
    bands_gpus: dict[str, int] | None = field(default=None, hash=False)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict; keys are stable (see docs/bands.md)."""
        out: dict[str, Any] = {
            "source": self.source,
            "bands": {"baseline": self.baseline, "daily": self.daily, "peak": self.peak},
            "percentiles": {"baseline": self.baseline_percentile, "daily": self.daily_percentile},
            "window_days": self.window_days,
            "min_window_days": self.min_window_days,
            "meets_window": self.meets_window,
            "step_seconds": self.step_seconds,
            "cold_start_seconds": self.cold_start_seconds,
            "window_samples": self.window_samples,
            "samples": self.samples,
            "valid_samples": self.valid_samples,
            "excluded_samples": self.excluded_samples,
            "gap_samples": self.gap_samples,
            "first": _iso(self.first),
            "last": _iso(self.last),
            "gaps": [
                {"start": _iso(g.start), "end": _iso(g.end), "seconds": g.seconds} for g in self.gaps
            ],
            "exclusions": [
                {"start": _iso(e.start), "end": _iso(e.end), "label": e.label} for e in self.exclusions
            ],
            "outlier_days": [_iso(d) for d in self.outlier_days],
            "spikes": [
                {
                    "start": _iso(s.start),
                    "width_seconds": s.width_seconds,
                    "height": s.height,
                    "volume": s.volume,
                    "noise": s.noise,
                }
                for s in self.spikes
            ],
            "spike_counts": {"noise": self.noise_spike_count, "real": self.real_spike_count},
            "widest_noise_width_seconds": self.widest_noise_width,
            "baseline_queue": None
            if self.baseline_queue is None
            else {
                "capacity": self.baseline_queue.capacity,
                "max_wait_seconds": _num(self.baseline_queue.max_wait),
                "p99_wait_seconds": _num(self.baseline_queue.p99_wait),
            },
        }
        if self.tolerance_seconds is not None:
            out["tolerance_seconds"] = self.tolerance_seconds
            out["queue_statistic"] = self.queue_statistic
            out["capacity_for_tolerance"] = self.capacity_for_tolerance
        if self.queue is not None:
            out["queue"] = {
                "capacity": self.queue.capacity,
                "max_wait_seconds": _num(self.queue.max_wait),
                "p99_wait_seconds": _num(self.queue.p99_wait),
            }
        if self.bands_gpus is not None:
            out["bands_gpus"] = dict(self.bands_gpus)
            out["per_gpu"] = self.per_gpu
            out["gpus_per_replica"] = self.gpus_per_replica
        return out


def analyse(
    series: Series,
    settings: BandSettings | None = None,
    *,
    exclusions: Sequence[Exclusion] = (),
    tolerance_seconds: float | None = None,
    capacity: float | None = None,
    per_gpu: float | None = None,
    gpus_per_replica: int = 1,
) -> BandReport:
    """Compute the three bands and everything around them for one series.

    Declared ``exclusions`` are masked first (and, when ``outlier_mad_k`` is set,
    outlier days). ``tolerance_seconds`` asks for the least capacity meeting it;
    ``capacity`` asks for waits at that capacity; ``per_gpu`` converts the bands
    to GPUs. Raises :class:`MeasurementError` when nothing usable remains.
    """
    settings = settings or BandSettings()
    cleaned = apply_exclusions(series, exclusions)
    flagged: tuple[float, ...] = ()
    if settings.outlier_mad_k is not None:
        days = outlier_days(cleaned.times, cleaned.values, settings.outlier_mad_k)
        if days.size:
            flagged = tuple(float(d) for d in days)
            cleaned = apply_exclusions(
                cleaned, [Exclusion(d, d + 86_400.0, "outlier day") for d in flagged]
            )
    c = cleaned.values
    step = cleaned.step_seconds
    valid_count = int(np.count_nonzero(cleaned.valid))
    if valid_count == 0:
        raise MeasurementError("no valid sample left after exclusions", source=series.source)
    w = window_samples(settings.cold_start_seconds, step)
    s = rolling_min(c, w)
    s_valid = s[~np.isnan(s)]
    if s_valid.size == 0:
        raise MeasurementError(
            f"no stretch of {w} consecutive valid samples (cold start {settings.cold_start_seconds:g} s"
            f" at {step:g} s steps): cannot form a sustained series",
            source=series.source,
        )
    b_raw, d_raw = percentile(s_valid, [settings.baseline_percentile, settings.daily_percentile])
    peak = float(np.nanmax(c))
    # Order statistics of s already give B <= D and s <= c gives D <= P; the clamps
    # only make the guarantee survive any future change of method.
    daily = min(float(d_raw), peak)
    baseline = min(float(b_raw), daily)

    found = find_spikes(c, baseline, step, settings.cold_start_seconds)
    start_times = cleaned.times[found.start_index]
    spikes = tuple(
        Spike(float(t), float(n * step), float(h), float(v), bool(z))
        for t, n, h, v, z in zip(
            start_times, found.length, found.height, found.volume, found.noise, strict=True
        )
    )
    noise_count = int(np.count_nonzero(found.noise))
    widest_noise = float(found.length[found.noise].max() * step) if noise_count else 0.0

    window_days = valid_count * step / 86_400.0
    base_cap = math.ceil(baseline - _CEIL_EPS)
    baseline_queue = queue_stats(c, base_cap, step, settings.queue_percentile) if base_cap > 0 else None

    cap_needed = None
    if tolerance_seconds is not None:
        cap_needed = capacity_for_tolerance(
            c,
            tolerance_seconds,
            step,
            statistic=settings.queue_statistic,
            wait_percentile=settings.queue_percentile,
        )
    queue = None
    if capacity is not None:
        if capacity < 0:
            raise PolicylintError(f"capacity must be >= 0, got {capacity}")
        queue = queue_stats(c, capacity, step, settings.queue_percentile)
    bands_gpus = None
    if per_gpu is not None:
        g = gpus_for(np.array([baseline, daily, peak]), per_gpu, gpus_per_replica)
        bands_gpus = {"baseline": int(g[0]), "daily": int(g[1]), "peak": int(g[2])}

    return BandReport(
        source=series.source,
        baseline=baseline,
        daily=daily,
        peak=peak,
        window_days=window_days,
        min_window_days=settings.min_window_days,
        meets_window=window_days >= settings.min_window_days,
        step_seconds=step,
        cold_start_seconds=settings.cold_start_seconds,
        window_samples=w,
        samples=cleaned.samples,
        valid_samples=valid_count,
        excluded_samples=cleaned.excluded,
        gap_samples=cleaned.gap_samples,
        gaps=cleaned.gaps,
        exclusions=cleaned.exclusions,
        outlier_days=flagged,
        first=series.first,
        last=series.last,
        spikes=spikes,
        noise_spike_count=noise_count,
        real_spike_count=len(spikes) - noise_count,
        widest_noise_width=widest_noise,
        baseline_queue=baseline_queue,
        tolerance_seconds=tolerance_seconds,
        queue_statistic=settings.queue_statistic,
        capacity_for_tolerance=cap_needed,
        queue=queue,
        per_gpu=per_gpu,
        gpus_per_replica=gpus_per_replica,
        baseline_percentile=settings.baseline_percentile,
        daily_percentile=settings.daily_percentile,
        bands_gpus=bands_gpus,
    )
