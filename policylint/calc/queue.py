"""The two queue models: the fluid queue (Lindley recursion) and the bounded queue that rejects.

Backlog and waits at a capacity, the least capacity meeting a wait tolerance,
and what a queue with a wait limit turns away.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from policylint.calc.scratch import Scratch, row_batches, shared_scratch
from policylint.calc.select import wait_percentile_in, wait_percentile_of
from policylint.calc.settings import CEIL_EPS
from policylint.errors import MeasurementError, PolicylintError


def queue_backlog(
    values: np.ndarray,
    capacity: np.ndarray | float,
    step_seconds: float,
    *,
    _scratch: Scratch | None = None,
    _has_nan: bool | None = None,
) -> np.ndarray:
    """Fluid backlog Q(t) at capacity C in closed form (Lindley recursion unrolled).

    x = (c - C) dt, S = cumsum(x), Q = S - min(0, running min of S). NaN
    (excluded) samples add nothing: the backlog is held across them. For 2-D
    input ``capacity`` may be one value per row.
    """
    a = np.asarray(values, dtype=np.float64)
    lead = a.shape[:-1]
    n = a.shape[-1]
    flat = a.reshape(-1, n)
    cap = np.broadcast_to(np.asarray(capacity, dtype=np.float64).reshape(-1), (flat.shape[0],))
    work = _scratch or shared_scratch()
    # With every capacity positive no step adds -0.0 (c - C is -0.0 only for c = -0.0 and
    # C = +0.0; the bounds below also rule out a tiny difference times the step rounding
    # to -0.0), so min(0, running min of S) is the running minimum of S behind a leading
    # 0: the backlog is computed in the columns after a zero column and one scan gives the
    # clamped minimum, saving the clamping pass. Otherwise (zero, negative or NaN
    # capacities) the clamp stays a separate pass, keeping the sign of a zero exactly.
    lead_zero = step_seconds >= 1e-50 and bool(np.all(cap >= 1e-200))
    shape = (flat.shape[0], n + 1)
    full = work.get("backlog", shape) if _scratch is not None else np.empty(shape)
    full[:, 0] = 0.0
    out = full[:, 1:]
    for rows in row_batches(flat.shape[0], n):
        buf = out[rows]  # a view: the batch is computed in place, cache-resident
        np.subtract(flat[rows], cap[rows, None], out=buf)
        # the caller may already know there is no NaN: one pass fewer
        if _has_nan is not False:
            nan = np.isnan(buf, out=work.get("nan", buf.shape, np.bool_))
            if nan.any():
                buf[nan] = 0.0
        buf *= step_seconds
        np.cumsum(buf, axis=1, out=buf)
        if lead_zero:
            low = np.minimum.accumulate(full[rows], axis=1, out=work.get("low", (buf.shape[0], n + 1)))
            buf -= low[:, 1:]
        else:
            low = np.minimum.accumulate(buf, axis=1, out=work.get("low", buf.shape))
            np.minimum(low, 0.0, out=low)
            buf -= low
    return out.reshape(lead + (n,))


@dataclass(frozen=True)
class QueueStats:
    """Waiting-time figures at one capacity (seconds)."""

    capacity: float
    max_wait: float
    p99_wait: float


def _waits(values: np.ndarray, capacity: float, step_seconds: float) -> np.ndarray:
    return _waits_from_backlog(values, queue_backlog(values, capacity, step_seconds), capacity)


def _waits_from_backlog(values: np.ndarray, backlog: np.ndarray, capacity: float) -> np.ndarray:
    if capacity > 0:
        wait = backlog / capacity
    else:
        wait = np.where(backlog > 0, np.inf, 0.0)
    return np.where(np.isnan(values), np.nan, wait)


def queue_stats(
    values: np.ndarray, capacity: float, step_seconds: float, wait_percentile: float = 99.0
) -> QueueStats:
    """Max and p-th percentile (inverted CDF) wait ~ Q / C over valid samples."""
    return stats_from_backlog(values, queue_backlog(values, capacity, step_seconds), capacity, wait_percentile)


def stats_from_backlog(
    values: np.ndarray, backlog: np.ndarray, capacity: float, wait_percentile: float, *, has_nan: bool = True
) -> QueueStats:
    values = np.asarray(values, dtype=np.float64)
    if capacity > 0:
        # every wait divided in a work buffer; an excluded sample's wait becomes NaN, which
        # the percentile and the maximum skip: the figures of the valid waits alone,
        # without compressing them into a new array
        scratch = shared_scratch()
        wait = np.divide(backlog, capacity, out=scratch.get("wait", backlog.shape))
        if has_nan:
            np.copyto(wait, np.nan, where=np.isnan(values, out=scratch.get("valid", values.shape, np.bool_)))
            count = wait.size - int(np.count_nonzero(np.isnan(wait, out=scratch.get("valid", wait.shape, np.bool_))))
            top = np.fmax.reduce(wait) if count else math.nan
        else:
            # no excluded sample: every wait counts (as before, a NaN one too)
            count = wait.size
            top = wait.max() if count else math.nan
        if count == 0:
            return QueueStats(float(capacity), math.nan, math.nan)
        high = wait_percentile_in(wait, count, wait_percentile, has_nan=has_nan)
        return QueueStats(float(capacity), float(top), high)
    wait = _waits_from_backlog(values, backlog, capacity)
    valid = wait[~np.isnan(wait)]
    if valid.size == 0:
        return QueueStats(float(capacity), math.nan, math.nan)
    high = wait_percentile_of(valid, wait_percentile)
    return QueueStats(float(capacity), float(valid.max()), high)


@dataclass(frozen=True)
class BoundedQueue:
    """The fluid queue with a wait limit: what it holds and what it turns away.

    ``rejected`` and ``offered`` are work in concurrency-seconds (request-seconds);
    ``rejected_share`` is their ratio (0 when nothing was offered).
    """

    capacity: float
    limit_seconds: float
    max_wait: float
    rejected: float
    offered: float
    rejected_episodes: int

    @property
    def rejected_share(self) -> float:
        return self.rejected / self.offered if self.offered > 0 else 0.0


def bounded_queue(values: np.ndarray, capacity: float, step_seconds: float, limit_seconds: float) -> BoundedQueue:
    """Fluid queue at capacity C that turns away work once it would wait longer than the limit.

    The backlog is held between 0 and L = limit x C (the work C drains within the
    limit); what would push it above L is rejected. Between two rejections the
    queue is the closed-form Lindley walk started from its current backlog,
    Q(t) = S(t) - min(-Q0, min_{u<=t} S(u)), one vectorised pass over a block of
    samples. The Python loop runs once per block and once per rejection episode
    (a burst that hits the limit; while the queue stays full every sample that
    adds work is rejected whole, in one step), never once per sample. Blocks start
    small after a rejection and double while nothing is rejected, so a long quiet
    stretch costs a few passes. NaN samples add no work and hold the backlog. With
    C = 0 every piece of work is rejected.
    """
    a = np.asarray(values, dtype=np.float64).reshape(-1)
    ok = ~np.isnan(a)
    offered = float(np.sum(a[ok])) * step_seconds
    if capacity <= 0:
        return BoundedQueue(float(capacity), float(limit_seconds), math.inf if offered > 0 else 0.0,
                            offered, offered, int(offered > 0))
    x = np.where(ok, a - capacity, 0.0) * step_seconds
    limit = limit_seconds * capacity
    slack = CEIL_EPS * max(1.0, limit)
    n = x.size
    pos, q, rejected, episodes, top = 0, 0.0, 0.0, 0, 0.0
    block = 256
    while pos < n:
        end = min(n, pos + block)
        s = np.cumsum(x[pos:end])
        path = s - np.minimum(np.minimum.accumulate(s), -q)
        over = np.flatnonzero(path > limit + slack)
        if over.size == 0:
            top = max(top, float(path.max()))
            q = float(path[-1])
            pos = end
            block = min(block * 2, 1 << 16)
            continue
        i = int(over[0])
        if i:
            top = max(top, float(path[:i].max()))
        # Everything above the limit in this sample is turned away; the queue stays full.
        rejected += float(path[i]) - limit
        episodes += 1
        top = max(top, limit)
        q = limit
        pos += i + 1
        # While full, each sample that adds work is rejected whole: skip to the first that drains.
        while pos < n:
            ahead = x[pos : pos + block]
            drains = np.flatnonzero(ahead < 0)
            cut = int(drains[0]) if drains.size else ahead.size
            rejected += float(np.sum(ahead[:cut]))
            pos += cut
            if drains.size:
                break
        block = 256
    return BoundedQueue(float(capacity), float(limit_seconds), top / capacity, rejected, offered, episodes)


def _wait_stat(values: np.ndarray, capacity: int, step_seconds: float, statistic: str, p: float) -> float:
    wait = _waits(values, float(capacity), step_seconds)
    if statistic == "max":
        return float(np.nanmax(wait))
    valid = wait[~np.isnan(wait)]
    return wait_percentile_of(valid, p) if valid.size else math.nan


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
    hi = max(0, math.ceil(float(np.nanmax(a)) - CEIL_EPS))
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
