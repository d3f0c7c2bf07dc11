"""A series whose samples were moved in time: the same values under other times.

Under ``--diff``, a trace that changed only by its times - epoch seconds rewritten with a
false UTC offset, say - is no new evidence of demand (red team, 2026-12-06, round 11: a
batch job's night moved onto another's, so pooling saved nothing and the pool grew by 7
GPUs). Numpy over whole arrays: one sliding-window comparison finds where the new series'
samples came from, one comparison confirms it.

A trace may also keep its times and reorder its values within each day (red team, 2026-12-07,
round 8: a batch job's samples between 21:00 and 05:00 rotated by three hours each night, so
its busy block landed on another job's and the pool grew from 20 + 6 to 27 + 7 GPUs):
:func:`reordered` finds the base's samples again, each moved within a stretch of changes shorter
than two days. Not all of them (red team, 2026-12-08, round 12: the same game with one swap of two
samples 90 days apart, one sample edited, the oldest day dropped, or 32-hour windows): 85% of the
changed samples is enough, where honest changes measured reach 62%. Noise added on top of a minority of
samples (red team item 7: the rotation, then +-1 on 15% of the samples) breaks that multiset match, so
:func:`realigned_share` leaves out the changes no larger than the noise and asks whether the others hold
the base's values exactly at a shift of time kept throughout their stretch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: samples that must match where a re-timed series starts, to find where it came from
_RETIME_WINDOW = 32

#: a reordering is found in stretches of changed samples shorter than this (seconds): the nights of the
#: red team's games (8 h, and 32 h windows in round 12) and any window of up to two days fit in one
_REORDER_SPAN = 2 * 86_400.0
#: ... and shorter than this share of the times both series hold: a stretch as long as that is a part of the
#: trace measured again, not moved (one hour of Azure LLM arrivals as 1 s concurrency, re-measured with its
#: arrivals jittered by 0.5 s: 86% matched in one stretch of the whole hour, 0% at an eighth of it)
_REORDER_SPAN_SHARE = 1 / 8
#: ... cut where the values changed are, as a multiset, the base's again (exactly: each night rotated within
#: itself) or where no sample changed for this long (seconds). Each gap is tried and the best kept: a night
#: with a quiet hour inside is one stretch at 2 h, nights 16 h apart are one each at 8 h
_REORDER_GAPS = (3_600.0, 7_200.0, 14_400.0, 28_800.0, 57_600.0)
#: ... in runs of at least this many changed samples (no gap between them): fewer, in a trace of few values,
#: are a 1 -> 2 next to a 2 -> 1 by chance as often as by design (balanced random edits on 20% of a 0/1/2
#: trace: 78% of the changes matched without this floor, 55% with it), and reordering fewer than 16
#: samples between untouched hours moves no busy block by hours
_REORDER_MIN_STRETCH = 16
#: ... where this share of the changed samples find their value again (matched as multisets within their
#: stretch). Not all: an edit, a far swap or a day trimmed off leaves a few unmatched (red team round 12:
#: one swap 90 days apart, one sample edited, the oldest day dropped), and the honest changes measured
#: reach 62% at most (nights measured again with fresh noise), the games 87% at least (3-day windows)
_REORDER_SHARE = 0.85
#: ... and at least this many samples both series hold changed, and this share of them: fewer is a
#: correction (two samples swapped), and on examples/good rotating five nights (1.8% of the samples)
#: leaves the batch pool's pooled baseline where it was, so new evidence that small backs no raise anyway
_REORDER_MIN_SAMPLES = 32
_REORDER_MIN_SHARE = 0.01
#: changes this small (in the trace's own unit) are what a measurement taken again makes, and what the red
#: team's noise made (+-1 or +-2 on a quarter of the samples, red team item 7): :func:`realigned_share` counts
#: only the samples that changed by more, so noise at a sample's own time counts neither way
_NOISE = 2.0
#: ... and reads a re-timing where this share of those samples holds, exactly, the base's value at a shift
#: of whole samples, one of two shifts chosen per stretch. Measured: honest changes reach 0.30 at most
#: (the nights, or the whole trace, of examples/good measured again as Poisson counts), the games 0.81 at
#: least (the nights rotated by 1 or 3 hours, +-1 or +-2 on 15% or 25% of the samples). Matching within the
#: noise instead of exactly lifted the games to 1.0 but the honest changes to 0.67: a narrower margin
_REALIGNED_SHARE = 0.5
#: ... the shift chosen on at most this many of those samples, evenly spread (a month of minute samples
#: changed in its nights, 43 200 samples: 1.2 s at worst on all of them, 0.9 s so; longer traces gain more)
_SHIFT_SAMPLES = 4096


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
    """True when ``now`` holds, at the times both series hold, mostly the base's values reordered within
    stretches shorter than ``_REORDER_SPAN`` (red team, 2026-12-07, round 8: nights rotated by three hours
    inside 21:00-05:00; round 12: the same with a far swap, an edit, 32-hour windows or a day trimmed).

    On the shared times (at least half of ``now``'s samples), the samples that changed must be at least
    ``_REORDER_MIN_SAMPLES`` and ``_REORDER_MIN_SHARE`` of them: an edit that swaps two samples is a
    correction, too small to move a band. The changed samples are cut into stretches: after each sample
    where the values changed so far are the base's as a multiset (NaN equals NaN), and wherever no sample
    changed for a gap of ``_REORDER_GAPS``. In each stretch shorter than ``_REORDER_SPAN`` (and than
    ``_REORDER_SPAN_SHARE`` of the shared times), inside a run of at least ``_REORDER_MIN_STRETCH`` changed
    samples cut by the gap alone, a changed sample is matched when its value is one the base held at
    another changed sample of the stretch (one to one). ``now`` is reordered when, at the best
    gap, ``_REORDER_SHARE`` of the changed samples are matched.

    A rolling refresh keeps each shared sample's value and changes none; a re-measurement changes the
    values (and over weeks of changes the multiset is the base's again only by chance); and balanced
    noise in a trace of few distinct values (a 3 -> 4 here and a 4 -> 3 there) balances within a short
    stretch only where two edits happen to meet.

    ``now`` is also reordered when :func:`realigned_share` reaches ``_REALIGNED_SHARE``: the same game with
    small noise added after the move (red team item 7).
    """
    share = reordered_share(then_times, then_values, now_times, now_values)
    if share is not None and share >= _REORDER_SHARE:
        return True
    share = realigned_share(then_times, then_values, now_times, now_values)
    return share is not None and share >= _REALIGNED_SHARE


def reordered_share(then_times: Any, then_values: Any, now_times: Any, now_values: Any) -> float | None:
    """The share of the changed samples :func:`reordered` finds matched (None: too few changed to tell)."""
    a, b = _comparable(then_values), _comparable(now_values)
    times, a, b = _kept_times(np.asarray(then_times, dtype=np.float64), a,
                              np.asarray(now_times, dtype=np.float64), b)
    changed = np.flatnonzero(a != b)
    n, count = len(times), len(changed)
    if 2 * n < len(now_values) or count < max(_REORDER_MIN_SAMPLES, _REORDER_MIN_SHARE * n):
        return None
    at, was, now = times[changed], a[changed], b[changed]
    distinct, codes = np.unique(np.concatenate([was, now]), return_inverse=True)
    kinds = len(distinct)
    was_code, now_code = codes[:count], codes[count:]
    # the multiset of values changed so far equals the base's where a hash of it (a random 64-bit weight
    # per value, summed with wrap-around) is back to zero: exact but for a 2**-64 chance
    weight = np.random.default_rng(0x5EED).integers(1, 2**63, kinds, dtype=np.uint64)
    balanced = np.cumsum(weight[now_code] - weight[was_code]) == 0
    span = min(_REORDER_SPAN, _REORDER_SPAN_SHARE * (times[-1] - times[0]))
    best = 0
    for gap in _REORDER_GAPS:
        apart = np.diff(at) >= gap
        cut = balanced[:-1] | apart  # a stretch ends after sample j
        stretch = np.concatenate([[0], np.cumsum(cut)])
        run = np.concatenate([[0], np.cumsum(apart)])  # the changes not that far apart, cut by gaps alone
        first = np.flatnonzero(np.concatenate([[True], cut]))
        last = np.flatnonzero(np.concatenate([cut, [True]]))
        # per stretch and value, the changed samples that now hold it and that held it at the base
        keys, which = np.unique(np.concatenate([stretch * kinds + now_code, stretch * kinds + was_code]),
                                return_inverse=True)
        pairs = np.minimum(np.bincount(which[:count], minlength=len(keys)),
                           np.bincount(which[count:], minlength=len(keys)))
        matched = np.bincount(keys // kinds, weights=pairs, minlength=len(first))
        local = (at[last] - at[first] < span) & (np.bincount(run)[run[first]] >= _REORDER_MIN_STRETCH)
        best = max(best, int(matched[local].sum()))
    return best / count


def realigned_share(then_times: Any, then_values: Any, now_times: Any, now_values: Any) -> float | None:
    """Of the samples that changed by more than ``_NOISE`` at the times both series hold, the share that hold the
    base's value exactly at a shift of whole samples (None: too few such samples to tell).

    Noise added after a reordering (red team item 7) leaves :func:`reordered_share` too few values to match as
    a multiset, and a tolerance there would match a measurement taken again, whose values are all near the
    base's. Here the small changes are left out and the shift must hold for a stretch: the large changes are
    cut into stretches by ``_REORDER_GAPS`` (each tried, the best kept), as :func:`reordered_share` cuts
    changes, and in each stretch shorter than its span and holding at least ``_REORDER_MIN_STRETCH`` of them,
    the shift (nonzero, no longer than the stretch) under which most of them hold the base's value exactly is
    chosen, then a second one for the samples the first missed: a window rotated within itself moves its
    samples by two shifts, one each side of the wrap. A sample the noise changed after the move is simply
    not matched, so the share falls only by the share of samples noised.

    A measurement taken again holds values near the base's at their own times; its large changes find the
    base's value at some shift now and then, but no one shift holds for most of them. Growth changes every
    sample, in one stretch longer than two days.
    """
    a, b = _comparable(then_values), _comparable(now_values)
    times, a, b = _kept_times(np.asarray(then_times, dtype=np.float64), a,
                              np.asarray(now_times, dtype=np.float64), b)
    n = len(times)
    with np.errstate(invalid="ignore"):  # NaN against NaN (+inf both) is no change; against a number, a large one
        large = np.flatnonzero((a != b) & ~(np.abs(b - a) <= _NOISE))
    count = len(large)
    if 2 * n < len(now_values) or count < max(_REORDER_MIN_SAMPLES, _REORDER_MIN_SHARE * n):
        return None
    at = times[large]
    span = min(_REORDER_SPAN, _REORDER_SPAN_SHARE * (times[-1] - times[0]))
    best = 0
    for gap in _REORDER_GAPS:
        apart = np.diff(at) >= gap
        stretch = np.concatenate([[0], np.cumsum(apart)])
        first = np.flatnonzero(np.concatenate([[True], apart]))
        last = np.flatnonzero(np.concatenate([apart, [True]]))
        local = (at[last] - at[first] < span) & (last - first + 1 >= _REORDER_MIN_STRETCH)
        if not local.any():
            continue
        kept = local[stretch]
        rows, which = large[kept], np.unique(stretch[kept], return_inverse=True)[1]
        reach = (large[last] - large[first])[local]  # the longest shift in each stretch, in samples
        found = np.zeros(len(rows), dtype=bool)
        for _ in range(2):  # a window rotated within itself: one shift each side of the wrap
            lag = _best_shift(a, b, rows, which, reach, found)
            found |= _equal_at(a, b, rows, lag[which], reach[which])
        best = max(best, int(np.count_nonzero(found)))
    return best / count


def _equal_at(a: np.ndarray, b: np.ndarray, rows: np.ndarray, lag: np.ndarray, reach: np.ndarray) -> np.ndarray:
    """Whether ``b`` at each of ``rows`` equals ``a`` ``lag`` samples away (a nonzero lag within ``reach``)."""
    source = rows + lag
    inside = (lag != 0) & (np.abs(lag) <= reach) & (source >= 0) & (source < len(a))
    equal: np.ndarray = inside & (b[rows] == a[np.clip(source, 0, len(a) - 1)])
    return equal


def _best_shift(a: np.ndarray, b: np.ndarray, rows: np.ndarray, which: np.ndarray, reach: np.ndarray,
                found: np.ndarray) -> np.ndarray:
    """Per stretch, the lag (in samples) under which most of its ``rows`` not yet ``found`` equal the base's value."""
    # at most _SHIFT_SAMPLES of them, evenly spread, choose the shift (a shift that holds for most of a stretch
    # holds for most of every k-th sample of it); the samples of the longest stretches first, as a lag of k
    # samples looks only at stretches that long
    every = max(1, len(rows) // _SHIFT_SAMPLES)
    rows, which, found = rows[::every], which[::every], found[::every]
    order = np.argsort(-reach[which], kind="stable")
    rows, which, found = rows[order], which[order], found[order]
    longer = -reach[which]  # ascending
    most = np.zeros(len(reach))
    best = np.zeros(len(reach), dtype=np.int64)
    for lag in range(-int(reach.max()), int(reach.max()) + 1):  # a loop over shifts, each over all its samples
        if lag == 0:
            continue
        k = int(np.searchsorted(longer, -abs(lag), side="right"))  # the samples of stretches at least |lag| long
        hit = _equal_at(a, b, rows[:k], np.full(k, lag), reach[which[:k]]) & ~found[:k]
        hits = np.bincount(which[:k], weights=hit, minlength=len(reach))
        better = hits > most
        most[better], best[better] = hits[better], lag
    return best
