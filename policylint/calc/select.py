"""Inverted-CDF percentiles by selection, and the percentiles of queue waits.

``np.partition`` (linear time) instead of a sort; on long rows only the values
above a threshold sampled a little below the lowest rank asked for are selected
among, which gives the very same value. Waits, mostly zero, are selected among
their positive values only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from policylint.calc.positions import kths
from policylint.calc.scratch import shared_scratch
from policylint.calc.settings import CEIL_EPS


def _rank1(p: float, n: int) -> int:
    """:func:`_rank` for one count: the same float arithmetic in Python, without numpy's per-call cost."""
    return min(max(math.ceil(n * p / 100.0 - CEIL_EPS) - 1, 0), max(n - 1, 0))


def _rank(p: float, n: np.ndarray | int) -> np.ndarray:
    """0-based index of the inverted-CDF p-th percentile among n sorted values.

    Smallest k with (k + 1) / n >= p / 100. Done in integers where possible so
    that 95% of 100 is exactly rank 95, not 96 from float noise.
    """
    n_arr = np.asarray(n, dtype=np.int64)
    # n * p is exact for whole-number percents, so the division rounds correctly.
    k = np.ceil(n_arr * p / 100.0 - CEIL_EPS).astype(np.int64) - 1
    ranks: np.ndarray = np.clip(k, 0, np.maximum(n_arr - 1, 0))
    return ranks


def select_at(a: np.ndarray, rank: int) -> np.ndarray:
    """``np.partition(a, rank)`` for reading position ``rank`` alone, of values with no zero (see :func:`kths`): a partitioned copy."""
    return np.partition(a, kths([rank], a.size))


# Rows at least this long take the sampled-threshold selection of ``_select_rows``.
_SELECT_MIN = 8192
# The threshold sits this far (as a share of the valid samples) below the lowest
# rank asked for: some 6 standard errors of a 4,096-value sample's quantile.
_SELECT_MARGIN = 0.02


def _select_rows(
    flat: np.ndarray, ps: Sequence[float], out: np.ndarray, counts: np.ndarray | None, has_nan: bool | None
) -> bool:
    """Inverted-CDF percentiles of each long row by selecting above a sampled threshold.

    A full selection (``np.partition``) over a whole row costs as much as a
    dozen passes over it. The percentiles asked for are mostly high ones (p95,
    p99), so a threshold a little below the lowest rank is estimated from an evenly spaced
    sample of about 4,096 values; one comparison then keeps the values at or
    above it (a few percent of the row), and the ranks are selected among those.
    Every valid value below the threshold sorts before every kept one, so rank
    ``r`` of the row is rank ``r - below`` of the kept values: the very same
    value, not an estimate. The threshold is positive, so no zero of either
    sign is ever among the kept values and the bits of the answer are those of
    the full selection. Returns False (and the caller selects the usual way)
    when the threshold turns out too high or is not positive.
    """
    rows, n = flat.shape
    for row in range(rows):
        x = flat[row]
        count = int(counts[row]) if counts is not None else (n if has_nan is False else
                                                             n - int(np.count_nonzero(np.isnan(x))))
        if not count:
            continue
        ranks = [_rank1(p, count) for p in ps]
        got = _select_high(x, count, ranks, has_nan)
        if got is None:
            return False
        out[:, row] = got
    return True


def _select_high(
    x: np.ndarray, count: int, ranks: list[int], has_nan: bool | None, *, positives: int | None = None
) -> np.ndarray | None:
    """The values at 0-based ``ranks`` among the ``count`` valid values of the 1-D ``x``.

    See ``_select_rows``: exact, or None when the sampled threshold is too high
    or not positive. With ``positives`` (how many values are > 0) the threshold
    is sampled among the positive values only: waits are mostly zero, and a
    selection among many equal values is slow.
    """
    stride = max(1, x.size // 4096)
    sample = x[::stride]
    if positives is not None:
        sample = sample[sample > 0]
        share = (min(ranks) - (count - positives)) / positives
    elif has_nan is not False:
        sample = sample[~np.isnan(sample)]
        share = min(ranks) / count
    else:
        sample = sample.copy()  # partitioned in place below; x itself stays untouched
        share = min(ranks) / count
    if sample.size < 64:
        return None
    k = min(sample.size - 1, max(0, int((share - _SELECT_MARGIN) * sample.size)))
    sample.partition(kths([k], sample.size))
    threshold = float(sample[k])
    if not threshold > 0:
        return None
    keep = np.greater_equal(x, threshold, out=shared_scratch().get("select", x.shape, np.bool_))
    below = count - int(np.count_nonzero(keep))  # NaN is never kept, nor counted in ``count``
    if below > min(ranks):
        return None
    kept = x[keep]
    at = [r - below for r in ranks]
    kept.partition(kths(at, kept.size))
    picked: np.ndarray = kept[at]
    return picked


def percentile(
    values: np.ndarray,
    ps: Sequence[float],
    *,
    overwrite_input: bool = False,
    _has_nan: bool | None = None,
    _counts: np.ndarray | None = None,
) -> np.ndarray:
    """Inverted-CDF percentiles along the last axis, ignoring NaN.

    Returns shape ``(len(ps),) + values.shape[:-1]``; rows with no valid value
    give NaN. Uses ``np.partition`` (linear time) rather than a full sort, on
    long rows only over the values above a sampled threshold (see
    ``_select_rows``); with ``overwrite_input`` a full selection partitions
    ``values`` in place instead of a copy.
    """
    a = np.asarray(values, dtype=np.float64)
    lead = a.shape[:-1]
    flat = a.reshape(-1, a.shape[-1]) if a.ndim > 1 else a.reshape(1, -1)
    out = np.full((len(ps), flat.shape[0]), np.nan)
    if flat.shape[1] == 0:
        return out.reshape((len(ps),) + lead)
    if flat.shape[1] >= _SELECT_MIN and _select_rows(flat, ps, out, _counts, _has_nan):
        return out.reshape((len(ps),) + lead)
    if _has_nan is False:
        # the caller knows there is no NaN: skip the mask and the count (two passes)
        nan = np.zeros((1, 1), dtype=np.bool_)
        counts = np.full(flat.shape[0], flat.shape[1], dtype=np.int64)
    else:
        nan = np.isnan(flat)
        counts = flat.shape[1] - nan.sum(axis=1)
    if (counts == counts[0]).all():
        # Same number of valid samples in every row: one partition for all rows.
        n = int(counts[0])
        if n:
            ranks = [_rank1(p, n) for p in ps]
            if nan.any():
                part = np.partition(np.where(nan, np.inf, flat), sorted(set(ranks)), axis=1)
            elif overwrite_input and flat.flags.writeable:
                flat.partition(sorted(set(ranks)), axis=1)
                part = flat
            else:
                part = np.partition(flat, sorted(set(ranks)), axis=1)
            for i, r in enumerate(ranks):
                out[i] = part[:, r]
    else:
        # Rows differ in valid count: per-row partition (a loop over series, not samples).
        for row in range(flat.shape[0]):
            n = int(counts[row])
            if not n:
                continue
            valid = flat[row][~nan[row]]
            ranks = [_rank1(p, n) for p in ps]
            part = np.partition(valid, sorted(set(ranks)))
            out[:, row] = part[ranks]
    return out.reshape((len(ps),) + lead)


def wait_percentile_of(valid: np.ndarray, p: float) -> float:
    """Inverted-CDF p-th percentile of non-negative waits (no NaN), exactly as :func:`percentile`.

    Waits are mostly zero (the queue is empty most of the time), and selecting on
    an array of many equal values is slow; the zeros come first in sorted order,
    so only the positive waits are selected from.
    """
    return wait_percentile_in(valid, valid.size, p, has_nan=False)


def wait_percentile_in(wait: np.ndarray, count: int, p: float, *, has_nan: bool) -> float:
    """:func:`wait_percentile_of` over the ``count`` non-NaN waits of ``wait`` (NaN: excluded samples)."""
    r = _rank1(p, count)
    positive = np.greater(wait, 0, out=shared_scratch().get("positive", wait.shape, np.bool_))  # NaN: no
    npos = int(np.count_nonzero(positive))
    zeros = count - npos
    if r < zeros:
        return 0.0
    if npos >= _SELECT_MIN:
        # the same value, selected above a threshold sampled among the positive waits
        got = _select_high(wait, count, [r], has_nan, positives=npos)
        if got is not None:
            return float(got[0])
    return float(select_at(wait[positive], r - zeros)[r - zeros])
