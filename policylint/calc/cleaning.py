"""Which days to leave out: outlier days (k MADs from the median day) and flat days (no change all day)."""

from __future__ import annotations

import numpy as np

from policylint.calc.scratch import shared_scratch
from policylint.calc.settings import CEIL_EPS


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


def flat_days(times: np.ndarray, values: np.ndarray, *, zero_only: bool = False) -> np.ndarray:
    """UTC day starts (unix seconds) of the days on which the trace never changes.

    The flatness test: a whole UTC calendar day inside the trace (the partial
    first and last day are not judged) is *flat* when it holds at least two
    valid samples and every one of them has exactly the same value - zero all day
    (padding, a filled gap) or any constant (an exporter that repeats its last
    reading). Real demand moves within a day, even a quiet one. The test is one
    comparison of each valid sample with the previous one and a count per day.
    """
    t = np.asarray(times, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64)
    if t.size == 0:
        return np.empty(0)
    scratch = shared_scratch()
    if t.size > 1:
        step = float(np.subtract(t[1:], t[:-1], out=scratch.get("tdiff", (t.size - 1,))).min())
    else:
        step = 86_400.0
    first = int(np.floor(t[0] / 86_400.0))
    rows = int(np.floor(t[-1] / 86_400.0)) - first + 1
    bounds = _day_bounds(t, first, rows)
    # Times are sorted, so each day's valid samples are one contiguous stretch of the
    # valid samples: a day is constant exactly when no valid sample differs from the
    # one before it inside the same day (max == min without a days x slots grid).
    nan = np.isnan(v, out=scratch.get("flat_nan", v.shape, np.bool_))
    if nan.any():
        ok = np.logical_not(nan, out=nan)
        x = np.compress(ok, v, out=scratch.get("flat_x", (int(np.count_nonzero(ok)),)))
        # valid samples before each day boundary: the boundaries among the valid samples
        per_day = np.zeros(rows, dtype=np.int64)
        some = bounds[1:] > bounds[:-1]
        per_day[some] = np.add.reduceat(ok, bounds[:-1][some], dtype=np.int64)
        vb = np.concatenate(([0], np.cumsum(per_day)))
    else:
        x = v
        vb = bounds
    count = np.diff(vb)
    changed = np.zeros(rows, dtype=np.bool_)
    judged = np.flatnonzero(count >= 2)
    if judged.size:
        # differs[i]: valid sample i + 1 differs from valid sample i; each judged day's
        # pairs are differs[first valid : last valid], taken by one reduceat whose even
        # slots are exactly those stretches (the odd slots span the pairs across days)
        differs = np.not_equal(x[1:], x[:-1], out=scratch.get("flat_ne", (x.size - 1,), np.bool_))
        idx = np.empty(2 * judged.size, dtype=np.int64)
        idx[0::2] = vb[judged]
        idx[1::2] = vb[judged + 1] - 1
        if idx[-1] >= differs.size:
            idx = idx[:-1]
        changed[judged] = np.logical_or.reduceat(differs, idx)[0::2]
    flat = (count >= 2) & ~changed
    # Only whole days are judged: the partial first and last day of a trace hold a few
    # samples that may well be equal without anything being wrong.
    flat[0] &= bool(t[0] - first * 86_400.0 < step)
    flat[-1] &= bool((first + rows) * 86_400.0 - t[-1] <= step * (1 + CEIL_EPS))
    if zero_only:
        # a flat day's value is its first valid sample
        days = np.flatnonzero(flat)
        flat[days] = x[vb[days]] == 0
    return (np.flatnonzero(flat) + first).astype(np.float64) * 86_400.0


def _day_bounds(t: np.ndarray, first: int, rows: int) -> np.ndarray:
    """Index of the first sample of each UTC day ``first .. first + rows - 1``, then ``t.size``.

    Sample i belongs to day floor(t[i] / 86,400); that day number never decreases
    along sorted times, so each day is one stretch of samples, found by a binary
    search per day instead of a day number per sample. A time just short of
    midnight can divide to the next whole day; the search starts from the exact
    midnight and steps back over such samples, so the stretches are exactly the
    samples with that day number.
    """
    days = np.arange(first + 1, first + rows, dtype=np.int64)
    b = np.searchsorted(t, days * 86_400.0, side="left")
    while b.size:
        back = (b > 0) & (np.floor(t[np.maximum(b - 1, 0)] / 86_400.0) >= days)
        if not back.any():
            break
        b = b - back
    return np.concatenate(([0], b, [t.size])).astype(np.int64)
