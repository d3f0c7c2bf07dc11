"""Identity inside one trace: whole UTC days that repeat an earlier day, exactly or nearly.

A week pasted again and again to fill the window repeats sample for sample; the same
paste with a sample of each copy edited still repeats at almost every value change.
Both tests lay the days side by side once (:func:`near_and_exact_repeats`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

# fewest value changes a day needs before its repetition is judged: one number with the shape print's
from policylint.calc.prints import MIN_DAY_CHANGES

if TYPE_CHECKING:
    import numpy as np


def _day_rows(
    times: np.ndarray, values: np.ndarray, valid: np.ndarray, step_seconds: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The whole UTC days of a series side by side: (rows, moves, judged), or None when they cannot be.

    ``rows`` is days x samples-per-day, ``moves`` where a day's value changes from
    one sample to the next, ``judged`` the days with every sample valid and at least
    :data:`MIN_DAY_CHANGES` changes. A day starts at the first sample at or after a UTC
    midnight, whatever the grid's phase: samples taken a minute past each five (a scrape
    offset, or every time moved by a minute) are days all the same (red team, 2026-12-07,
    round 20: a pasted week 60 s off the midnight grid was judged by neither PL966 nor PL971).
    A grid whose step does not divide a day (301 s, seven minutes) is read, the last sample
    carried forward, at the times of the finest step no coarser than its own that does, from
    the first UTC midnight: such a step laid no day out, and `stepSeconds: 301` on a pasted
    trace switched both rules off (round 20). None when the grid holds fewer than two whole days.
    """
    import numpy as np

    per_day = 86_400.0 / float(step_seconds) if step_seconds > 0 else 0.0
    if per_day < 2 or times.size == 0:
        return None
    first_midnight = math.ceil(float(times[0]) / 86_400.0) * 86_400.0
    if abs(per_day - round(per_day)) > 1e-9:
        n = math.ceil(per_day)
        days = int((float(times[-1]) - first_midnight) // 86_400.0)
        if days < 2:
            return None
        at = first_midnight + np.arange(days * n, dtype=np.float64) * (86_400.0 / n)
        index = np.searchsorted(times, at + 1e-9, side="right") - 1  # every one at or after times[0]
        rows = values[index].reshape(days, n)
        ok = valid[index].reshape(days, n).all(axis=1)
    else:
        n = int(round(per_day))
        # the first sample at or after a UTC midnight (the grid's own phase kept: every day starts at it)
        offset = math.ceil((first_midnight - float(times[0])) / float(step_seconds) - 1e-6)
        days = (times.size - offset) // n
        if days < 2:
            return None
        rows = values[offset : offset + days * n].reshape(days, n)
        ok = valid[offset : offset + days * n].reshape(days, n).all(axis=1)
    moves = np.diff(rows, axis=1) != 0
    judged = ok & (np.count_nonzero(moves, axis=1) >= MIN_DAY_CHANGES)
    return rows, moves, judged


_ROW_WEIGHTS: dict[int, np.ndarray] = {}


def _row_weights(width: int) -> np.ndarray:
    """Fixed odd 64-bit weights, one per sample of a day (drawn once per day length)."""
    import numpy as np

    if width not in _ROW_WEIGHTS:
        drawn = np.random.default_rng(20261203).integers(1, 2**62, size=width, dtype=np.int64)
        _ROW_WEIGHTS[width] = drawn.view(np.uint64) | np.uint64(1)
    return _ROW_WEIGHTS[width]


def _exact_repeats(rows: np.ndarray, judged: np.ndarray) -> np.ndarray:
    """The judged days equal, sample for sample (``==`` on every value), to an earlier judged day.

    Days are compared by their bytes with negative zeros made positive (so -0.0 equals
    0.0, as ``==`` says); a day holding a NaN equals no other day. The loop runs over
    days, never over samples.
    """
    import numpy as np

    out = np.zeros(rows.shape[0], dtype=bool)
    index = np.flatnonzero(judged)
    if index.size < 2:
        return out
    chosen = rows[index] + 0.0  # -0.0 + 0.0 is +0.0: equal values, equal bytes
    # equal days have equal sums of their bits times fixed odd weights (modulo 2**64): when no two
    # days share one, no day repeats another and the bytes need no comparing
    weights = _row_weights(chosen.shape[1])
    with np.errstate(over="ignore"):
        keys = (chosen.view(np.uint64) * weights).sum(axis=1, dtype=np.uint64)
    keys.sort()
    if bool(np.all(keys[1:] != keys[:-1])):
        return out
    plain = np.asarray(~np.isnan(chosen).any(axis=1), dtype=bool)
    seen: set[bytes] = set()
    for day, row, comparable in zip(index.tolist(), chosen, plain):
        if not comparable:
            continue
        key = row.tobytes()
        if key in seen:
            out[day] = True
        else:
            seen.add(key)
    return out


def repeated_days(
    times: np.ndarray, values: np.ndarray, valid: np.ndarray, step_seconds: float
) -> tuple[int | None, int]:
    """Identity: (days that repeat an earlier day sample for sample, days judged).

    Only whole UTC days with every sample valid and at least :data:`MIN_DAY_CHANGES`
    value changes are judged. Two such days of measured demand are never equal by
    chance; a week pasted again and again to fill the window is. None when the grid holds
    fewer than two whole days (see :func:`_day_rows`).
    """
    import numpy as np

    laid = _day_rows(times, values, valid, step_seconds)
    if laid is None:
        return None, 0
    rows, _, judged = laid
    count = int(np.count_nonzero(judged))
    if count < 2:
        return 0, count
    return int(np.count_nonzero(_exact_repeats(rows, judged))), count


#: Share of a day's value changes that must repeat an earlier day's (same samples, same values)
#: for the day to count as a near repeat. A week pasted again with one sample per day edited
#: keeps about 98% of them; two measured days of noisy demand keep a few percent.
NEAR_MATCH = 0.9
#: Earliest day looked back at for a near repeat: more than a year, so that whatever block of
#: days is pasted to fill the window, with every copy edited, is found. It was five weeks, and
#: 36 measured days pasted over 92 with one sample of each copy raised by one passed PL971 (red
#: team, 2026-12-07, round 20); an exact repeat at any distance is found by the exact test.
NEAR_MAX_LAG_DAYS = 400


def near_repeated_days(
    times: np.ndarray, values: np.ndarray, valid: np.ndarray, step_seconds: float
) -> tuple[int | None, int]:
    """Identity: (days that nearly repeat an earlier day, days judged).

    Days are laid out as in :func:`repeated_days` and judged under the same
    conditions (every sample valid, at least :data:`MIN_DAY_CHANGES` changes). Two
    days are compared at their value changes: of the steps where either day changes
    value, the share where both hold the same values on both sides of the step. A
    day counts when that share reaches :data:`NEAR_MATCH` against some day at most
    :data:`NEAR_MAX_LAG_DAYS` before it, or when it equals an earlier day exactly.
    Editing one sample of a copied day changes two of its ~100 steps; it stays a copy.
    """
    near, judged, _ = near_and_exact_repeats(times, values, valid, step_seconds)
    return near, judged


#: Most bytes of comparisons :func:`_equal_codes` holds at once (days are compared in chunks below it).
_EQUAL_CHUNK_BYTES = 1 << 22


def _equal_codes(codes: np.ndarray, lags: int) -> np.ndarray:
    """[day, lags - lag]: how many samples of a day have the same code as the day ``lag`` days before.

    A count whose earlier day would come before day 0 means nothing (no such pair is judged).

    Every pair of days at most ``lags`` apart at once, as the lags are laid out in
    :func:`near_and_exact_repeats`: the same counts as comparing each pair's codes and
    summing, without gathering the days of each pair. The comparisons are counted eight
    to a word: each byte of a word sums the flags of one byte lane (exact while a lane
    holds at most 255 flags; else by bit count), the lanes are added in pairs and then by
    one multiply.
    """
    import numpy as np
    from numpy.lib.stride_tricks import sliding_window_view

    days, width = codes.shape
    words = -(-width // 8)
    padded = np.zeros((lags + days, words * 8), dtype=np.uint8)  # rows before day 0, and zeros after each day's codes
    padded[lags:, :width] = codes
    earlier = sliding_window_view(padded, (lags, words * 8))[:days, 0]  # [day, slot, sample]: lags - slot days before
    out = np.empty((days, lags), dtype=np.int64)
    chunk = max(1, _EQUAL_CHUNK_BYTES // (lags * words * 8))
    for first in range(0, days, chunk):
        last = min(days, first + chunk)
        same = (earlier[first:last] == padded[lags + first : lags + last, None, :]).view(np.uint64)
        if words <= 255:
            lanes = np.einsum("ijk->ij", same)  # each byte lane holds at most `words` flags (einsum: the fastest sum here)
            halves = (lanes & np.uint64(0x00FF00FF00FF00FF)) + ((lanes >> np.uint64(8)) & np.uint64(0x00FF00FF00FF00FF))
            with np.errstate(over="ignore"):  # four 16-bit lanes of at most 510, added in the top one
                out[first:last] = (halves * np.uint64(0x0001000100010001)) >> np.uint64(48)
        else:
            out[first:last] = np.bitwise_count(same).sum(axis=2, dtype=np.int64)
    out -= words * 8 - width  # the padding bytes, zero in both days, always agree
    return out


def near_and_exact_repeats(
    times: np.ndarray, values: np.ndarray, valid: np.ndarray, step_seconds: float
) -> tuple[int | None, int, int | None]:
    """(near repeated days, days judged, exact repeated days): both day tests on one layout of the days.

    Every pair of judged days at most :data:`NEAR_MAX_LAG_DAYS` apart is first screened
    on two conditions a near repeat must meet, computed over all days at once on change
    flags packed 64 to a word and on one byte per sample; only the pairs left
    are compared step by step, exactly as the test states:

    1. the samples whose bytes agree (equal values always do) are at least
       :data:`NEAR_MATCH` of the busier day's changes;
    2. the steps where both days change are at least :data:`NEAR_MATCH` of the steps
       where either does (a step kept has equal values on both sides, so both days
       change there or neither).
    """
    import numpy as np
    from numpy.lib.stride_tricks import sliding_window_view

    laid = _day_rows(times, values, valid, step_seconds)
    if laid is None:
        return None, 0, None
    rows, moves, judged = laid
    count = int(np.count_nonzero(judged))
    if count < 2:
        return 0, count, 0
    exact = _exact_repeats(rows, judged)
    near = exact.copy()
    days, width = rows.shape
    lags = min(NEAR_MAX_LAG_DAYS, days - 1)
    busy = np.count_nonzero(moves, axis=1)
    # one byte per sample standing for its value: equal values, equal bytes (-0.0 made 0.0)
    with np.errstate(over="ignore"):
        codes = (((rows + 0.0).view(np.uint64) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(56)).astype(np.uint8)
    # Days that change at most steps share most change steps whatever they hold: the flags then
    # screen out nothing and are not counted.
    shared = np.ones((days, lags), dtype=bool)
    if int(busy.sum()) * 2 < days * (width - 1):
        # the change flags packed 64 to a word, every lag at once: [day, lags - lag] steps where both
        # days change and where either does
        packed = np.packbits(moves, axis=1)
        words = np.zeros((days, -(-packed.shape[1] // 8) * 8), dtype=np.uint8)
        words[:, : packed.shape[1]] = packed
        words64 = words.view(np.uint64)
        earlier = sliding_window_view(
            np.concatenate((np.zeros((lags, words64.shape[1]), dtype=np.uint64), words64)), lags + 1, axis=0
        )[:, :, :lags].transpose(0, 2, 1)  # [day, lags - lag, word]: lag days before (zeros before day 0)
        # in chunks of days, as _equal_codes counts: the pairs of a long trace at every lag at once would not fit
        chunk = max(1, _EQUAL_CHUNK_BYTES // (lags * words64.shape[1] * 8))
        for first in range(0, days, chunk):
            last = min(days, first + chunk)
            here, day = earlier[first:last], words64[first:last, None, :]
            both_move = np.bitwise_count(here & day).sum(axis=2, dtype=np.int64)
            either_move = np.bitwise_count(here | day).sum(axis=2, dtype=np.int64)
            shared[first:last] = (either_move > 0) & (both_move >= NEAR_MATCH * np.maximum(either_move, 1))
    wide = np.uint16 if width < 65_535 else np.int64
    # every pair at once, [day, lags - lag] as the flags above: judged both, the flags' screen passed
    seen = np.concatenate((np.zeros(lags, dtype=bool), judged))
    pair = sliding_window_view(seen, lags)[:days] & judged[:, None] & shared
    later, slot = np.nonzero(pair)
    if later.size:
        before = later - (lags - slot)
        # of those, the pairs whose samples agree in byte at NEAR_MATCH of the busier day's changes
        busier = NEAR_MATCH * np.maximum(busy[later], busy[before])
        if later.size * 4 >= pair.size:
            # most pairs are left: count the equal bytes of every pair at once, without gathering days
            equal = _equal_codes(codes, lags)[later, slot]
        else:
            equal = (codes[later] == codes[before]).view(np.uint8).sum(axis=1, dtype=wide)
        agree = equal >= busier
        later, before = later[agree], before[agree]
    if later.size:
        same = rows[later] == rows[before]
        both = same[:, 1:] & same[:, :-1]
        either = moves[later] | moves[before]
        total = np.count_nonzero(either, axis=1)
        kept = np.count_nonzero(both & either, axis=1)
        hit = (total > 0) & (kept >= NEAR_MATCH * np.maximum(total, 1))
        near[later[hit]] = True
    return int(np.count_nonzero(near & judged)), count, int(np.count_nonzero(exact))
