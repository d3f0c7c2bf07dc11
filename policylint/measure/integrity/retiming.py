"""A series whose samples were moved in time: the same values under other times.

Under ``--diff``, a trace that changed only by its times - epoch seconds rewritten with a
false UTC offset, say - is no new evidence of demand (red team, 2026-12-06, round 11: a
batch job's night moved onto another's, so pooling saved nothing and the pool grew by 7
GPUs). Numpy over whole arrays: one sliding-window comparison finds where the new series'
samples came from, one comparison confirms it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: samples that must match where a re-timed series starts, to find where it came from
_RETIME_WINDOW = 32


def retimed(then_times: Any, then_values: Any, now_times: Any, now_values: Any, share: float = 0.99) -> bool:
    """True when ``now`` holds the samples of ``then`` moved in time: the same values, in the same order,
    at times all shifted by one nonzero amount, over at least half of its samples, equal for at least
    ``share`` of them (a rotation with the times kept, red team round 12, or a shift with its ends cut).

    A trace refreshed over a rolling window (days dropped at one end, measured at the other) keeps
    each sample at its time, and is not re-timed. NaN (an unusable sample) equals NaN.
    """
    a = np.where(np.isnan(then_values), np.inf, then_values)
    b = np.where(np.isnan(now_values), np.inf, now_values)
    n, m = len(b), len(a)
    if n < _RETIME_WINDOW or m < _RETIME_WINDOW:
        return False
    # samples that kept their times (a refresh, an edit, a sample appended) are not a re-timing, however
    # well a periodic trace also matches itself a day later
    _, at_now, at_then = np.intersect1d(now_times, then_times, assume_unique=True, return_indices=True)
    if np.count_nonzero(b[at_now] == a[at_then]) >= 0.5 * n:
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
