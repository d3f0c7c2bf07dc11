"""A series whose samples were moved in time: the same values under other times.

Under ``--diff``, a trace that changed only by its times - epoch seconds rewritten with a
false UTC offset, say - is no new evidence of demand (red team, 2026-12-06, round 11: a
batch job's night moved onto another's, so pooling saved nothing and the pool grew by 7
GPUs). Numpy over whole arrays: one sliding-window comparison finds where the new series'
samples came from, one comparison confirms it.

A trace may also keep its times and reorder its values within each day (red team, 2026-12-07,
round 8: a batch job's samples between 21:00 and 05:00 rotated by three hours each night, so
its busy block landed on another job's and the pool grew from 20 + 6 to 27 + 7 GPUs):
:func:`reordered` finds the base's samples again, each moved by less than a day.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: samples that must match where a re-timed series starts, to find where it came from
_RETIME_WINDOW = 32

#: a reordering moves each sample by less than this (seconds): the base's values per day, reordered
_REORDER_SPAN = 86_400.0
#: ... and changes at least this many of the samples both series hold, and this share of them: fewer is a
#: correction (two samples swapped), and on examples/good rotating five nights (1.8% of the samples)
#: leaves the batch pool's pooled baseline where it was, so new evidence that small backs no raise anyway
_REORDER_MIN_SAMPLES = 32
_REORDER_MIN_SHARE = 0.01


def _comparable(values: Any) -> np.ndarray:
    """``values`` with NaN (an unusable sample) as +inf, so that NaN equals NaN and sorts last."""
    values = np.asarray(values, dtype=np.float64)
    return np.where(np.isnan(values), np.inf, values)


def _kept_times(then_times: Any, then_values: np.ndarray, now_times: Any,
                now_values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The times both series hold (ascending), with each series' values at them."""
    common, at_then, at_now = np.intersect1d(then_times, now_times, assume_unique=True, return_indices=True)
    return common, then_values[at_then], now_values[at_now]


def retimed(then_times: Any, then_values: Any, now_times: Any, now_values: Any, share: float = 0.99) -> bool:
    """True when ``now`` holds the samples of ``then`` moved in time: the same values, in the same order,
    at times all shifted by one nonzero amount, over at least half of its samples, equal for at least
    ``share`` of them (a rotation with the times kept, red team round 12, or a shift with its ends cut).

    A trace refreshed over a rolling window (days dropped at one end, measured at the other) keeps
    each sample at its time, and is not re-timed. NaN (an unusable sample) equals NaN.
    """
    a, b = _comparable(then_values), _comparable(now_values)
    n, m = len(b), len(a)
    if n < _RETIME_WINDOW or m < _RETIME_WINDOW:
        return False
    # samples that kept their times (a refresh, an edit, a sample appended) are not a re-timing, however
    # well a periodic trace also matches itself a day later
    _, kept_then, kept_now = _kept_times(then_times, a, now_times, b)
    if np.count_nonzero(kept_now == kept_then) >= 0.5 * n:
        return False
    windows = np.lib.stride_tricks.sliding_window_view(a, _RETIME_WINDOW)
    for i in sorted({0, (n - _RETIME_WINDOW) // 2, n - _RETIME_WINDOW}):  # where now's start, middle, end came from
        for k in np.flatnonzero((windows == b[i : i + _RETIME_WINDOW]).all(axis=1))[:8]:
            lag = int(k) - i  # now[j] is then[j + lag]
            lo, hi = max(0, -lag), min(n, m - lag)
            if hi - lo < 0.5 * n:
                continue
            shift = now_times[lo:hi] - then_times[lo + lag : hi + lag]
            if shift[0] != 0 and np.all(shift == shift[0]) and (a[lo + lag : hi + lag] == b[lo:hi]).mean() >= share:
                return True
    return False


def reordered(then_times: Any, then_values: Any, now_times: Any, now_values: Any) -> bool:
    """True when ``now`` holds, at the times both series hold, the base's values reordered, each moved by
    less than a day (red team, 2026-12-07, round 8: nights rotated by three hours inside 21:00-05:00).

    On the shared times (at least half of ``now``'s samples), the samples that changed must be at least
    ``_REORDER_MIN_SAMPLES`` and ``_REORDER_MIN_SHARE`` of them: an edit that swaps two samples is a
    correction, too small to move a band. Then the shared values must be the base's exactly, as a
    multiset (NaN equals NaN), and must split into stretches shorter than ``_REORDER_SPAN`` each
    holding the base's values. The split used is the finest there is: each value's k-th occurrence
    in ``now`` is paired with its k-th in the base (the pairing that moves no sample further than any
    other pairing does), and two neighbouring samples are in one stretch when some pair spans the
    step between them. Stretches rather than UTC days, because a night that crosses midnight is
    reordered within itself, not within either day. A rolling refresh keeps each shared sample's
    value and changes none; a re-measurement, however alike, changes the multiset; and balanced
    noise in a trace of few distinct values (a 3 -> 4 here and a 4 -> 3 there) pairs changes over
    stretches as long as its running imbalance lasts, which over weeks of changes is longer than a
    day somewhere.
    """
    a, b = _comparable(then_values), _comparable(now_values)
    times, a, b = _kept_times(np.asarray(then_times, dtype=np.float64), a,
                              np.asarray(now_times, dtype=np.float64), b)
    n = len(times)
    changed = np.count_nonzero(a != b)
    if 2 * n < len(now_values) or changed < max(_REORDER_MIN_SAMPLES, _REORDER_MIN_SHARE * n):
        return False
    from_then, from_now = np.argsort(a, kind="stable"), np.argsort(b, kind="stable")
    if not np.array_equal(a[from_then], b[from_now]):
        return False  # other values than the base's
    # steps between samples j and j + 1 that some pair spans: +1 where a pair starts, -1 where it ends
    spans = np.zeros(n, dtype=np.int64)
    np.add.at(spans, np.minimum(from_then, from_now), 1)
    np.add.at(spans, np.maximum(from_then, from_now), -1)
    spanned = np.cumsum(spans[:-1]) > 0
    edges = np.diff(np.concatenate([[False], spanned, [False]]).astype(np.int8))
    first, last = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)  # stretch = samples first .. last
    return bool(np.all(times[last] - times[first] < _REORDER_SPAN))
