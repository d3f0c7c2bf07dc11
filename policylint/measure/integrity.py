"""Integrity: is a measurement the evidence it claims to be?

The measuring step reads a trace and computes its bands; this stage sits between
the two and asks how the evidence could have been faked, as an auditor would.
The checks are grouped by the trick they expose:

* **identity** - the same evidence counted twice: a fingerprint of the series as
  read (grid times and values), so a byte-identical copy under another name, or
  the same samples re-encoded in another format, is recognised as the same demand.
* **time** - evidence not from the period it claims: the first and last sample,
  so a view can tell samples that lie after ``now``.
* **resolution** - evidence coarser or smoother than it looks: the real step of a
  series whose values only change every k samples (a coarse series forward-filled
  onto a fine grid), and how rough the series is (a fabricated or smoothed curve
  has almost no sample-to-sample noise).
* **shaping** - evidence with the inconvenient parts removed: how much of the
  window the declared exclusions take, how many of them recur at one time of day,
  and whether they fall where demand is highest.
* **plausibility** - values a counting trace cannot hold (negative, fractional).

Every function here is pure: arrays and plain metadata in, a dict of plain
facts (int, float, str, bool, None) out, computed with numpy over whole arrays.
The dict is stored with the workload's facts (and cached with them), and the
engine puts it into each workload's fact sheet (the facts are declared in
:mod:`policylint.measure.integrity_facts`).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from policylint.measure.integrity_facts import IntegrityPoolFacts, IntegrityWorkloadFacts
from policylint.measure.sources.provenance import record_time

if TYPE_CHECKING:
    import numpy as np

Fact = float | int | str | bool | list[int] | list[str] | None

#: Largest hidden block (in samples) looked for: a 1-minute grid holding hourly data is 60.
MAX_BLOCK = 64
#: Fewest value changes a series needs before its block structure is judged.
MIN_CHANGES = 20
#: Share of the value changes that must fall on one phase of a block for the block to count.
BLOCK_PHASE_SHARE = 0.99
#: Share of the block boundaries at which the value must change for the block to count. Hourly
#: data of a GPU training cluster (Helios) repeated on its 1-minute grid changes at 25% of the
#: hours; a step function that moves twice a day (on the hour) changes at 8% and says too little
#: about its resolution to be judged.
BLOCK_CHANGE_SHARE = 0.15
#: Fewest value changes per day (on average over the valid samples) before the block structure
#: is judged. A shift pattern that changes twice a day on the hour (08:00 and 20:00) lines up with
#: a 12-hour block by construction; real demand put on a coarse grid changes at most boundaries
#: (hourly Helios data: 6 changes a day).
MIN_CHANGES_PER_DAY = 4.0
#: Exclusions shorter than this are looked at for a daily pattern; whole days (holidays) are not.
SUB_DAY_SECONDS = 86_400.0
#: Bin, in seconds of the day, in which exclusion starts count as one recurring time.
RECUR_BIN_SECONDS = 900.0
#: Share of the highest samples looked at for "exclusions fall where demand is high".
TOP_SHARE = 0.05

def fingerprint(times: np.ndarray, values: np.ndarray, valid: np.ndarray, step_seconds: float) -> str:
    """Identity: the SHA-256 of the valid samples (times and values as float64) and the step."""
    import numpy as np

    digest = hashlib.sha256(b"policylint-series/1\0")
    digest.update(np.float64(step_seconds).tobytes())
    digest.update(np.ascontiguousarray(times[valid], dtype="<f8").tobytes())
    digest.update(np.ascontiguousarray(values[valid], dtype="<f8").tobytes())
    return digest.hexdigest()


def values_fingerprint(values: np.ndarray, valid: np.ndarray) -> str:
    """Identity: the SHA-256 of the valid samples' values alone (a copy moved in time keeps it)."""
    import numpy as np

    digest = hashlib.sha256(b"policylint-values/1\0")
    digest.update(np.ascontiguousarray(values[valid], dtype="<f8").tobytes())
    return digest.hexdigest()


def shape_fingerprint(values: np.ndarray, valid: np.ndarray, step_seconds: float) -> str | None:
    """Identity: the SHA-256 of sign(difference) between consecutive valid samples.

    A copy multiplied by a factor of one or more (rounded or not), or shifted by
    a constant, rises and falls at exactly the same samples; two measured series
    with noise never do over thousands of changes. Only series changing at least
    :data:`MIN_DAY_CHANGES` times a day on average get one.
    """
    import numpy as np

    good = values[valid]
    if good.size < 3:
        return None
    signs = np.sign(np.diff(good)).astype(np.int8)
    days = good.size * float(step_seconds) / 86_400.0
    if days <= 0 or np.count_nonzero(signs) / days < MIN_DAY_CHANGES:
        return None
    digest = hashlib.sha256(b"policylint-shape/1\0")
    digest.update(np.ascontiguousarray(signs).tobytes())
    return digest.hexdigest()


#: Fewest value changes a day needs before its repetition is judged: a day of real, noisy demand
#: changes at most of its samples; a synthetic or idle day (a step function) repeats by nature.
MIN_DAY_CHANGES = 24


def _day_rows(
    times: np.ndarray, values: np.ndarray, valid: np.ndarray, step_seconds: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The whole UTC days of a series side by side: (rows, moves, judged), or None when they cannot be.

    ``rows`` is days x samples-per-day, ``moves`` where a day's value changes from
    one sample to the next, ``judged`` the days with every sample valid and at least
    :data:`MIN_DAY_CHANGES` changes. None when the step does not divide a day, the grid
    has no sample at a UTC midnight, or it holds fewer than two whole days.
    """
    import numpy as np

    per_day = 86_400.0 / float(step_seconds) if step_seconds > 0 else 0.0
    if per_day < 2 or abs(per_day - round(per_day)) > 1e-9 or times.size == 0:
        return None
    n = int(round(per_day))
    # the first sample at a UTC midnight: the grid must have one, or days are not comparable
    first_midnight = math.ceil(float(times[0]) / 86_400.0) * 86_400.0
    steps = (first_midnight - float(times[0])) / float(step_seconds)
    if abs(steps - round(steps)) > 1e-6:
        return None
    offset = int(round(steps))
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
    chance; a week pasted again and again to fill the window is. None when the step
    does not divide a day (the days cannot be laid side by side).
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


def change_positions(values: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Indices i (>= 1) where sample i differs from sample i - 1, both valid."""
    import numpy as np

    both = valid[1:] & valid[:-1]
    changed = both & (values[1:] != values[:-1])
    return np.flatnonzero(changed) + 1


def block_length(
    changes: np.ndarray,
    boundaries: int,
    *,
    max_block: int = MAX_BLOCK,
    min_changes: int = MIN_CHANGES,
    phase_share: float = BLOCK_PHASE_SHARE,
    change_share: float = BLOCK_CHANGE_SHARE,
) -> int:
    """Resolution: the longest block k such that the series is k-sample blocks of one value.

    ``changes`` are the change positions (see :func:`change_positions`) and
    ``boundaries`` the number of sample-to-sample pairs. k counts when at least
    ``phase_share`` of the changes fall on one residue modulo k and the value
    changes at ``change_share`` or more of those block boundaries. With 20
    changes, all on one phase of k by chance has odds of k^-19: what remains
    is a series that carries no information finer than k samples.
    The loop runs over block lengths (at most ``max_block``), never over samples.
    """
    import numpy as np

    n = int(changes.size)
    if n < min_changes or boundaries <= 0:
        return 1
    # Screen every k on an evenly spread sample of at most 512 changes (a series with blocks
    # has them everywhere), then count only the survivors over all changes: the screen costs
    # microseconds where counting all changes 63 times cost most of the stage.
    sample = changes[:: max(1, n // 512)]
    best = 1
    # a phase of k holds one phase of each multiple of k: when no phase of k passes the screen,
    # none of a multiple's does, and the multiple is skipped without a count
    screened_out = np.zeros(max_block + 1, dtype=bool)
    for k in range(2, max_block + 1):
        if screened_out[k]:
            continue
        if int(np.bincount(sample % k, minlength=k).max()) < (phase_share - 0.05) * sample.size:
            screened_out[2 * k :: k] = True
            continue
        counts = np.bincount(changes % k, minlength=k)
        on_phase = int(counts.max())
        if on_phase < phase_share * n:
            continue
        if on_phase >= change_share * (boundaries / k):
            best = k
    return best


def roughness(values: np.ndarray, valid: np.ndarray) -> float | None:
    """Resolution: std of the second differences over std of the first, on runs of valid samples.

    White measurement noise gives about 1.7, a random walk about 1.4, a smooth
    curve sampled finely close to 0. None when the series never changes.
    """
    import numpy as np

    d1 = np.diff(values)
    ok1 = valid[1:] & valid[:-1]
    d2 = np.diff(d1)
    ok2 = ok1[1:] & ok1[:-1]
    if np.count_nonzero(ok1) < 3 or np.count_nonzero(ok2) < 2:
        return None
    s1 = float(np.std(d1[ok1]))
    if not s1 > 0 or not math.isfinite(s1):
        return None
    return float(np.std(d2[ok2])) / s1


def exclusion_mask(times: np.ndarray, spans: Sequence[tuple[float, float]]) -> np.ndarray:
    """True at every sample inside a span [start, end) (the same test as the readers' exclusions)."""
    import numpy as np

    if not spans:
        return np.zeros(times.size, dtype=bool)
    starts = np.array([s for s, _ in spans], dtype=np.float64)
    ends = np.array([e for _, e in spans], dtype=np.float64)
    lo = np.searchsorted(times, starts, side="left")
    hi = np.searchsorted(times, ends, side="left")
    delta = np.zeros(times.size + 1, dtype=np.int64)
    np.add.at(delta, lo, 1)
    np.add.at(delta, hi, -1)
    return np.asarray(np.cumsum(delta[:-1]) > 0)


def recurring_exclusions(spans: Sequence[tuple[float, float]]) -> tuple[int, str | None]:
    """Shaping: the most sub-day spans starting in one 15-minute bin of the day, and that time."""
    import numpy as np

    if not spans:
        return 0, None
    starts = np.array([s for s, _ in spans], dtype=np.float64)
    ends = np.array([e for _, e in spans], dtype=np.float64)
    short = (ends - starts) < SUB_DAY_SECONDS
    if not np.any(short):
        return 0, None
    bins = np.floor(np.mod(starts[short], 86_400.0) / RECUR_BIN_SECONDS).astype(np.int64)
    counts = np.bincount(bins)
    top = int(np.argmax(counts))
    minutes = int(top * RECUR_BIN_SECONDS // 60)
    return int(counts[top]), f"{minutes // 60:02d}:{minutes % 60:02d}"


def shaping(
    times: np.ndarray, values: np.ndarray, valid: np.ndarray, spans: Sequence[tuple[float, float]]
) -> dict[str, Fact]:
    """Shaping facts of declared exclusions over a series (before they are applied)."""
    import numpy as np

    mask = exclusion_mask(times, spans)
    kept = valid & ~mask
    gone = valid & mask
    n_valid = int(np.count_nonzero(valid))
    n_gone = int(np.count_nonzero(gone))
    recurring, at = recurring_exclusions(spans)
    out: dict[str, Fact] = {
        "exclusion_count": len(spans),
        "excluded_share": (n_gone / n_valid) if n_valid else None,
        "exclusion_recurring": recurring,
        "exclusion_recurring_at": at,
        "excluded_top_share": None,
        "excluded_demand_ratio": None,
    }
    if n_valid and spans:
        ranked = values[valid]
        top_n = max(1, int(math.ceil(TOP_SHARE * n_valid)))
        # the top_n highest samples, ties at the threshold taken earliest first (as a stable
        # sort would), found in linear time
        cut = np.partition(ranked, n_valid - top_n)[n_valid - top_n]
        gone_valid = mask[valid]
        above = ranked > cut
        ties = np.flatnonzero(ranked == cut)[: top_n - int(np.count_nonzero(above))]
        taken = int(np.count_nonzero(gone_valid & above)) + int(np.count_nonzero(gone_valid[ties]))
        out["excluded_top_share"] = taken / top_n
        if n_gone and np.count_nonzero(kept):
            kept_mean = float(np.mean(values[kept]))
            if kept_mean > 0:
                out["excluded_demand_ratio"] = float(np.mean(values[gone])) / kept_mean
    return out


def trace_facts(
    times: np.ndarray,
    values: np.ndarray,
    valid: np.ndarray,
    step_seconds: float,
    spans: Sequence[tuple[float, float]] = (),
) -> dict[str, Fact]:
    """Every integrity fact of one concurrency series as read, with its declared exclusion spans.

    ``times``/``values``/``valid`` are the reader's grid (before any share or
    exclusion is applied); ``spans`` are the declared exclusions as
    (start, end) unix seconds. Facts that depend on ``now`` are not computed
    here (they are not cached with the series): see :func:`time_facts`.
    """
    import numpy as np

    values = np.asarray(values, dtype=np.float64)
    times = np.asarray(times, dtype=np.float64)
    valid = np.asarray(valid, dtype=bool) & np.isfinite(values)
    # invalid samples (gaps, NaN, infinities) take part in no figure: zero them so no
    # arithmetic on them can warn
    values = np.where(valid, values, 0.0)
    good = values[valid]
    changes = change_positions(values, valid)
    pairs = int(np.count_nonzero(valid[1:] & valid[:-1]))
    days = pairs * float(step_seconds) / 86_400.0
    often = days > 0 and changes.size / days >= MIN_CHANGES_PER_DAY
    block = block_length(changes, pairs) if often else 1
    jump, jump_share = jump_block(values, valid) if often and block == 1 else (1, None)
    block = max(block, jump)
    near, near_judged, repeated = _near_and_exact(times, values, valid, step_seconds)
    judged = near_judged
    out: dict[str, Fact] = {
        "series_fingerprint": fingerprint(times, values, valid, step_seconds),
        "values_fingerprint": values_fingerprint(values, valid),
        "shape_fingerprint": shape_fingerprint(values, valid, step_seconds),
        "repeated_days": repeated,
        "repeated_day_share": (repeated / judged) if repeated is not None and judged else (0.0 if repeated is not None else None),
        "first_time": float(times[valid][0]) if good.size else None,
        "last_time": float(times[valid][-1]) if good.size else None,
        "step_seconds": float(step_seconds),
        "resolution_step_seconds": float(step_seconds) * block,
        "resolution_block_samples": block,
        "resolution_jump_share": jump_share,
        "near_repeated_days": near,
        "near_repeated_day_share": (near / near_judged) if near is not None and near_judged else (0.0 if near is not None else None),
        "edited_repeated_days": (near - repeated) if near is not None and repeated is not None and near > repeated else (0 if near is not None else None),
        "edited_repeated_day_share": (
            ((near - repeated) / near_judged if near > repeated else 0.0) if near is not None and repeated is not None and near_judged else (0.0 if near is not None else None)
        ),
        "run_sketch": run_sketch(values, valid),
        "value_changes": int(changes.size),
        "roughness": roughness(values, valid),
        "negative_samples": int(np.count_nonzero(good < 0)),
        "fractional_share": float(np.count_nonzero(good != np.floor(good))) / good.size if good.size else None,
    }
    out.update(shaping(times, values, valid, spans))
    return out


def pulled_range_outside(stored: dict[str, Any] | None, record: dict[str, Any] | None) -> float | None:
    """Time: how far the trace's first and last samples lie outside the range its pull recorded.

    A trace written by ``policylint pull`` covers [start, end] of its record; samples
    before or after it were added to the file afterwards (a month prepended to reach
    the window, days appended to look fresh).
    """
    if not stored or not record:
        return None
    first, last = stored.get("first_time"), stored.get("last_time")
    if not isinstance(first, (int, float)) or not isinstance(last, (int, float)):
        return None
    bounds = []
    for key in ("start", "end"):
        moment = record_time(record.get(key))
        if moment is None:
            return None
        bounds.append(moment.timestamp())
    lookback = record.get("lookback_seconds")
    if isinstance(lookback, (int, float)) and not isinstance(lookback, bool) and lookback > 0:
        # the pull asked for the lookback before its end: the wider of the two starts is the range
        bounds[0] = min(bounds[0], bounds[1] - float(lookback))
    return max(0.0, bounds[0] - float(first), float(last) - bounds[1])


def job_facts(gpus: np.ndarray, column_declared: bool) -> dict[str, Fact]:
    """Plausibility: GPUs per job as the job list records them.

    A reader gives every job one GPU when the list has no GPU column, so the figures
    are only facts when the column was declared or some job holds more than one.
    """
    import numpy as np

    values = np.asarray(gpus, dtype=np.float64)
    if values.size == 0 or not (column_declared or bool(np.any(values > 1))):
        return {"job_gpus_max": None, "job_gpus_median": None}
    return {"job_gpus_max": int(np.max(values)), "job_gpus_median": float(np.median(values))}


def time_facts(stored: dict[str, Any] | None, now_seconds: float) -> dict[str, Fact]:
    """Time facts against ``now``: how far (and by how many grid samples) the trace runs past it."""
    import datetime as dt

    stored = stored or {}
    first, last, step = stored.get("first_time"), stored.get("last_time"), stored.get("step_seconds")
    out: dict[str, Fact] = {"first_sample": None, "seconds_after_now": None, "samples_after_now": None}
    if isinstance(first, (int, float)):
        out["first_sample"] = dt.datetime.fromtimestamp(float(first), tz=dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(last, (int, float)):
        ahead = float(last) - now_seconds
        out["seconds_after_now"] = max(0.0, ahead)
        if ahead > 0 and isinstance(step, (int, float)) and step > 0:
            out["samples_after_now"] = int(math.floor(ahead / float(step) + 1e-9)) + 1
        else:
            out["samples_after_now"] = 0
    for kind in ("vram", "jobs"):
        when = stored.get(f"{kind}_last_time")
        out[f"{kind}_seconds_after_now"] = max(0.0, float(when) - now_seconds) if isinstance(when, (int, float)) else None
    return out


def workload_facts(stored: dict[str, Any] | None, now_seconds: float, outlier_days: int | None) -> IntegrityWorkloadFacts:
    """The integrity facts of a workload view: the stored trace facts plus the time facts at ``now``."""
    stored = stored or {}
    out: dict[str, Any] = {name: stored.get(name) for name in IntegrityWorkloadFacts.routes()}
    out.update(time_facts(stored, now_seconds) if stored else {})
    out["near_copy_of"] = out["near_copy_similarity"] = out["near_copy_trace"] = out["near_copy_pool"] = None
    out["outlier_days_removed"] = outlier_days
    first, last, step = stored.get("first_time"), stored.get("last_time"), stored.get("step_seconds")
    if outlier_days is not None and isinstance(first, (int, float)) and isinstance(last, (int, float)):
        span = (float(last) - float(first) + float(step or 0.0)) / 86_400.0
        out["outlier_day_share"] = min(1.0, outlier_days / span) if span > 0 else None
    return IntegrityWorkloadFacts(**out)


# --------------------------------------------------------------------------------------------
# Identity: near repeats inside one trace, and near copies between traces
# --------------------------------------------------------------------------------------------

#: Share of a day's value changes that must repeat an earlier day's (same samples, same values)
#: for the day to count as a near repeat. A week pasted again with one sample per day edited
#: keeps about 98% of them; two measured days of noisy demand keep a few percent.
NEAR_MATCH = 0.9
#: Earliest day looked back at for a near repeat (five weeks: a pasted week or fortnight, with
#: every copy edited, is found; an exact repeat at any distance is found by the exact test).
NEAR_MAX_LAG_DAYS = 35


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
    near, judged, _ = _near_and_exact(times, values, valid, step_seconds)
    return near, judged


def _near_and_exact(
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
        both_move = np.bitwise_count(earlier & words64[:, None, :]).sum(axis=2, dtype=np.int64)
        either_move = np.bitwise_count(earlier | words64[:, None, :]).sum(axis=2, dtype=np.int64)
        shared = (either_move > 0) & (both_move >= NEAR_MATCH * np.maximum(either_move, 1))
    wide = np.uint16 if width < 65_535 else np.int64
    candidate = np.zeros((days, lags), dtype=bool)
    for lag in range(1, lags + 1):
        pair = judged[lag:] & judged[:-lag] & shared[lag:, lags - lag]
        if not pair.any():
            continue
        equal = (codes[lag:] == codes[:-lag]).view(np.uint8).sum(axis=1, dtype=wide)
        pair &= equal >= NEAR_MATCH * np.maximum(busy[lag:], busy[:-lag])
        candidate[lag:, lag - 1] = pair
    later, column = np.nonzero(candidate)
    if later.size:
        before = later - (column + 1)
        same = rows[later] == rows[before]
        both = same[:, 1:] & same[:, :-1]
        either = moves[later] | moves[before]
        total = np.count_nonzero(either, axis=1)
        kept = np.count_nonzero(both & either, axis=1)
        hit = (total > 0) & (kept >= NEAR_MATCH * np.maximum(total, 1))
        near[later[hit]] = True
    return int(np.count_nonzero(near & judged)), count, int(np.count_nonzero(exact))


#: Samples in one run of a trace compared between traces (a near copy shares most of its runs).
RUN_SAMPLES = 16
#: Fewest value changes a run needs to take part: flat or nearly flat runs are alike in every trace.
RUN_MIN_CHANGES = 8
#: Runs kept per trace (the smallest hashes: a bottom-k sample, so two traces' samples are comparable).
SKETCH_SIZE = 128
#: Fewest runs a trace needs before its copies are judged.
SKETCH_MIN = 32
_RUN_MULTIPLIERS: np.ndarray | None = None


def run_sketch(values: np.ndarray, valid: np.ndarray) -> list[int] | None:
    """Identity: the smallest hashes of the trace's informative 16-sample runs (a bottom-k sketch).

    A run is :data:`RUN_SAMPLES` consecutive valid samples (values to a thousandth)
    that change value at least :data:`RUN_MIN_CHANGES` times. Two traces that share
    most runs share most of their smallest hashes: a copy with a few samples edited
    loses only the runs around each edit, whatever file it is in and whatever dates it
    carries. Measured series of noisy demand share almost none. None when the trace
    has fewer than :data:`SKETCH_MIN` distinct runs.
    """
    import numpy as np

    if values.size < RUN_SAMPLES:
        return None
    with np.errstate(over="ignore", invalid="ignore"):
        q = np.where(valid, np.round(values * 1000.0), 0.0).astype(np.int64).view(np.uint64)
    runs = values.size - RUN_SAMPLES + 1
    # per run, by running sums: invalid samples in it, and value changes inside it
    valid = np.asarray(valid, dtype=bool)
    if valid.all():
        full = np.ones(runs, dtype=bool)
    else:
        invalid = np.concatenate(([0], np.cumsum(~valid, dtype=np.int64)))
        full = invalid[RUN_SAMPLES:] == invalid[:runs]
    moved = np.concatenate(([0], np.cumsum(q[1:] != q[:-1], dtype=np.int64)))
    changes = moved[RUN_SAMPLES - 1 :] - moved[:runs]
    keep = np.flatnonzero(full & (changes >= RUN_MIN_CHANGES))
    if keep.size < SKETCH_MIN:
        return None
    global _RUN_MULTIPLIERS
    if _RUN_MULTIPLIERS is None:
        rng = np.random.default_rng(20261201)  # fixed: the hashes of every trace must agree
        _RUN_MULTIPLIERS = rng.integers(1, 2**63 - 1, size=RUN_SAMPLES, dtype=np.int64).view(np.uint64) | np.uint64(1)
    mult = _RUN_MULTIPLIERS
    with np.errstate(over="ignore"):
        # sum of sample j of each run times multiplier j, modulo 2**64: one pass per position of a
        # run, over every run (slices) when most runs are kept, else over the kept ones (gathers)
        if keep.size * 3 >= runs:
            h = q[:runs] * mult[0]
            term = np.empty_like(h)
            for j in range(1, RUN_SAMPLES):
                np.multiply(q[j : j + runs], mult[j], out=term)
                h += term
            h = h[keep]
        else:
            h = q[keep] * mult[0]
            for j in range(1, RUN_SAMPLES):
                h += q[keep + j] * mult[j]
        h ^= h >> np.uint64(31)
        h *= np.uint64(0x9E3779B97F4A7C15)
        h ^= h >> np.uint64(29)
    h >>= np.uint64(11)  # 53 bits: exact in JSON and in any reader of it
    # the SKETCH_SIZE smallest distinct hashes: the smallest few hundred, partitioned out, hold
    # them whenever enough distinct ones lie strictly below the pivot; else sort all
    cut = 4 * SKETCH_SIZE
    if h.size > 2 * cut:
        head = np.partition(h, cut)
        pivot = head[cut]
        below = np.unique(head[:cut])
        below = below[below < pivot]
        if below.size >= SKETCH_SIZE:
            return [int(x) for x in below[:SKETCH_SIZE]]
    distinct = np.unique(h)
    if distinct.size < SKETCH_MIN:
        return None
    return [int(x) for x in distinct[:SKETCH_SIZE]]


def sketch_similarity(a: Sequence[int], b: Sequence[int]) -> float:
    """Estimated share of runs two traces have in common (Jaccard), from their bottom-k sketches."""
    sa, sb = set(a), set(b)
    k = min(len(sa), len(sb))
    if k == 0:
        return 0.0
    union = sorted(sa | sb)[:k]
    return sum(1 for x in union if x in sa and x in sb) / k


def near_copies(
    entries: Sequence[tuple[str, str | None, str | None, Sequence[int] | None]],
    skip: set[frozenset[str]] | None = None,
    values_of: dict[str, str | None] | None = None,
) -> dict[str, tuple[str, float]]:
    """Identity: workload -> (workload whose trace it repeats, share of runs in common), across the model.

    ``entries`` are (workload, real path of its trace file, pool, sketch). Pairs citing the
    same file are an open citation (a reviewer sees the path) and are not judged; pairs in
    ``skip`` were already recognised (PL111). Of a pair, the workload later by name carries
    the finding. Only pairs sharing at least one sketched run are compared, so the cost
    follows the copies, not the square of the workloads.
    """
    skip = skip or set()
    by_run: dict[int, list[int]] = {}
    for i, (_, _, _, sketch) in enumerate(entries):
        for x in sketch or ():
            by_run.setdefault(x, []).append(i)
    pairs: set[tuple[int, int]] = set()
    for members in by_run.values():
        if 1 < len(members) <= 64:
            for j, a in enumerate(members):
                for b in members[j + 1 :]:
                    pairs.add((a, b) if a < b else (b, a))
    # a copy too plain for a sketch (fewer than SKETCH_MIN distinct runs) is found by its values
    by_values: dict[str, list[int]] = {}
    for i, entry in enumerate(entries):
        printed = values_of.get(entry[0]) if values_of else None
        if printed:
            by_values.setdefault(printed, []).append(i)
    for members in by_values.values():
        for j, a in enumerate(members):
            for b in members[j + 1 :]:
                pairs.add((a, b) if a < b else (b, a))
    out: dict[str, tuple[str, float]] = {}
    for a, b in sorted(pairs):
        (na, pa, _, sa), (nb, pb, _, sb) = entries[a], entries[b]
        if na == nb or (pa is not None and pa == pb) or frozenset((na, nb)) in skip:
            continue
        same = values_of is not None and values_of.get(na) is not None and values_of.get(na) == values_of.get(nb)
        if same:
            sim = 1.0
        elif sa and sb:
            sim = sketch_similarity(sa, sb)
        else:
            continue
        first, second = sorted((na, nb))
        if second not in out or sim > out[second][1]:
            out[second] = (first, sim)
    return out


# --------------------------------------------------------------------------------------------
# Resolution: blocks hidden under jitter
# --------------------------------------------------------------------------------------------

#: Share of the first-difference energy (sum of squared steps) one phase of k samples must carry
#: for the series to be k-sample blocks with jitter added: by chance a phase carries 1/k of it; an
#: hourly series on a 5-minute grid with +-1 of jitter added carries about 90% on the hour.
JUMP_SHARE = 0.6
#: How many times the typical step inside a block the typical step at a block boundary must be.
JUMP_RATIO = 3.0


def jump_block(values: np.ndarray, valid: np.ndarray, *, max_block: int = MAX_BLOCK) -> tuple[int, float | None]:
    """Resolution: (k, share) - the longest block k whose boundaries carry most of the series' movement.

    A coarse series forward-filled onto a fine grid and then jittered changes at
    every sample, so the exact test (:func:`block_length`) finds nothing; but its real
    moves still happen on one phase of k, and the jitter is small beside them. k counts
    when one residue modulo k (k >= 3) holds at least :data:`JUMP_SHARE` of the sum of
    squared first differences, with a change at :data:`BLOCK_CHANGE_SHARE` of those
    boundaries. (1, None) when no k does.
    """
    import numpy as np

    d = np.diff(values)
    ok = valid[1:] & valid[:-1]
    pos = np.flatnonzero(ok & (d != 0))
    if pos.size < MIN_CHANGES:
        return 1, None
    energy = d[pos] ** 2
    total = float(energy.sum())
    if not total > 0 or not math.isfinite(total):
        return 1, None
    pairs = int(np.count_nonzero(ok))
    best, best_share = 1, None
    # Screen every k on the energy laid out k to a row: its column sums are the energy per phase
    # up to rounding. Only a k whose best phase comes within a hair of JUMP_SHARE there is
    # counted exactly as before (bincount in sample order), so the figures are unchanged.
    # A phase of k holds every sample of one phase of k's multiples, so when no phase of k comes
    # near the share, none of its multiples' does either: they are skipped without a sum.
    spread = np.zeros(d.size, dtype=np.float64)
    spread[pos] = energy
    screen = (JUMP_SHARE - 1e-9) * total
    hopeless = (JUMP_SHARE - 2e-9) * total
    ruled_out = np.zeros(max_block + 1, dtype=bool)

    ones = np.ones(spread.size, dtype=np.float64)

    def phase_energy(k: int) -> float:
        whole = (spread.size // k) * k
        approx = ones[: whole // k] @ spread[:whole].reshape(-1, k)  # column sums, in one product
        rest = spread[whole:]
        approx[: rest.size] += rest
        return float(approx.max())

    if max_block >= 6 and phase_energy(2) < hopeless:
        ruled_out[4::2] = True
    for k in range(3, max_block + 1):
        if ruled_out[k]:
            continue
        most = phase_energy(k)
        if most < hopeless:
            ruled_out[2 * k :: k] = True
        if most < screen:
            continue
        per_phase = np.bincount(pos % k, weights=energy, minlength=k)
        top = int(np.argmax(per_phase))
        share = float(per_phase[top]) / total
        if share < JUMP_SHARE:
            continue
        on = pos % k == top
        moved = int(np.count_nonzero(on))
        if moved < MIN_CHANGES or moved < BLOCK_CHANGE_SHARE * (pairs / k):
            continue
        # the typical boundary step stands out of the typical step inside the blocks: a daily burst
        # whose two edges happen to lie k samples apart concentrates energy too, but leaves most
        # boundaries as ordinary as the rest
        steps = np.abs(d[pos])
        inside = steps[~on]
        if inside.size and float(np.median(steps[on])) >= JUMP_RATIO * float(np.median(inside)):
            best, best_share = k, share
    return best, best_share


def copy_facts(
    workloads: Sequence[Any], stored: dict[str, Any], facts: Mapping[str, Mapping[str, Any]]
) -> dict[str, dict[str, Any]]:
    """The near-copy facts of every workload (:func:`near_copies` over the whole model), by workload.

    ``workloads`` are the model's workloads, ``stored`` their measured facts by name
    (``.integrity`` holds the run sketch), ``facts`` the facts of their views by name.
    A workload judged without a partner gets ``near_copy_similarity`` 0; one with a
    partner all four ``near_copy_*`` facts. Pairs PL111 already reports
    (``double_counted_with``) are left to it.
    """
    import os

    entries: list[tuple[str, str | None, str | None, Sequence[int] | None]] = []
    trace: dict[str, str] = {}
    for w in sorted(workloads, key=lambda w: w.name):
        view, measured = facts.get(w.name), stored.get(w.name)
        if view is None or measured is None:
            continue
        ref = w.measurements.get("concurrency")
        path = os.path.realpath(ref.path) if ref is not None and ref.path is not None else None
        trace[w.name] = ref.display if ref is not None else ""
        sketch = (measured.integrity or {}).get("run_sketch")
        entries.append((w.name, path, view.get("pool"), sketch if isinstance(sketch, list) else None))
    skip = {
        frozenset((name, str(view["double_counted_with"])))
        for name, view in facts.items()
        if view.get("double_counted_with")
    }
    # a workload PL111 reports as a copy has its finding already; it stays a partner for others
    reported = {name for name, view in facts.items() if view.get("double_counted_with")}
    # by values alone only when the series says enough to be recognised (as PL111 does)
    values_of = {
        name: view.get("values_fingerprint") if (view.get("value_changes") or 0) >= 10 else None
        for name, view in facts.items()
    }
    out: dict[str, dict[str, Any]] = {}
    for name, _, _, sketch in entries:
        if (sketch or values_of.get(name)) and name not in reported:
            out[name] = {"near_copy_similarity": 0.0}  # judged: no other trace shares a run
    for name, (other, similarity) in near_copies(entries, skip, values_of).items():
        if name in reported:
            continue
        out[name] = {
            "near_copy_of": other,
            "near_copy_similarity": similarity,
            "near_copy_trace": trace.get(other),
            "near_copy_pool": facts[other].get("pool"),
        }
    return out


# --------------------------------------------------------------------------------------------
# Plausibility of a pool: its GPU model, its scheduler queue, the gangs it must admit
# --------------------------------------------------------------------------------------------

#: Memory of common data-centre GPUs, GiB (the sizes the vendors sell them with; a name that
#: states its size, such as A100-SXM4-40GB, is read by its size). Keys are the tokens of a model
#: name in upper case; a tuple holds every size the model is sold with.
GPU_MEMORY_GIB: dict[str, tuple[float, ...]] = {
    "B200": (180.0, 192.0),
    "GB200": (186.0, 192.0),
    "H200": (141.0,),
    "GH200": (96.0, 144.0),
    "H100 NVL": (94.0,),
    "H100": (80.0,),
    "H800": (80.0,),
    "H20": (96.0,),
    "A100": (40.0, 80.0),
    "A800": (40.0, 80.0),
    "A40": (48.0,),
    "A30": (24.0,),
    "A10G": (24.0,),
    "A10": (24.0,),
    "A16": (16.0,),
    "A2": (16.0,),
    "L40S": (48.0,),
    "L40": (48.0,),
    "L20": (48.0,),
    "L4": (24.0,),
    "T4": (16.0,),
    "V100": (16.0, 32.0),
    "P100": (12.0, 16.0),
    "P4": (8.0,),
    "RTX 6000 ADA": (48.0,),
    "RTX A6000": (48.0,),
    "RTX 4090": (24.0,),
    "RTX 3090": (24.0,),
    "MI325X": (256.0,),
    "MI300X": (192.0,),
    "MI250X": (128.0,),
    "MI250": (128.0,),
    "MI210": (64.0,),
    "GAUDI3": (128.0,),
    "GAUDI2": (96.0,),
}

def _tokens(name: str) -> list[str]:
    import re

    return [t for t in re.split(r"[^A-Z0-9]+", name.upper()) if t]


def model_memory_gib(model: str | None) -> tuple[float, ...] | None:
    """The memory sizes (GiB) a GPU model is sold with: the size in its name, else the table."""
    import re

    if not model:
        return None
    sized = re.search(r"(?<![0-9A-Z])([0-9]{1,3})\s*(?:GB|GIB|G)(?![A-Z0-9])", model.upper())
    if sized:
        return (float(sized.group(1)),)
    tokens = _tokens(model)
    joined = " ".join(tokens)
    for key in sorted(GPU_MEMORY_GIB, key=lambda k: (-len(k.split()), -len(k))):
        parts = key.split()
        if len(parts) > 1 and f" {key} " in f" {joined} ":
            return GPU_MEMORY_GIB[key]
        if len(parts) == 1 and key in tokens:
            return GPU_MEMORY_GIB[key]
    return None


def _quantity(value: Any) -> int | None:
    from policylint.model.schedulers.quantity import gpu_count

    try:
        return gpu_count(value)
    except (ValueError, TypeError):
        return None


def queue_contradictions(pool: Any, volcano_queues: dict[str, Any] | None = None) -> list[str]:
    """Plausibility: what the scheduler queue behind ``pool`` says against itself, as sentences."""
    info = getattr(pool, "scheduler", None) or {}
    out: list[str] = []
    if info.get("scheduler") == "kueue":
        nominal, lending, borrowing = info.get("nominal"), info.get("lending_limit"), info.get("borrowing_limit")
        queue = info.get("queue")
        if isinstance(lending, int) and isinstance(nominal, int) and lending > nominal:
            out.append(
                f"ClusterQueue {queue} may lend {lending} GPUs but holds a nominalQuota of {nominal}"
                " (Kueue refuses a lendingLimit above the quota)"
            )
        elastic = (pool.spec.get("elastic") or {}).get("maxGpus")
        # a limit without a cohort is PL901's; a limit above what the cohort lends today is common
        # (the cohort may grow) and policylint already counts only what can be lent - but a limit
        # with nothing at all to borrow is an elastic part that can never be reached
        if info.get("cohort") and isinstance(borrowing, int) and borrowing > 0 and elastic == 0:
            out.append(
                f"ClusterQueue {queue} may borrow up to {borrowing} GPUs, but nothing else in cohort"
                f" {info.get('cohort')} lends any: its elastic part can never be reached"
            )
    elif info.get("scheduler") == "volcano":
        spec = (pool.doc.data or {}).get("spec") or {}
        from policylint.model.schedulers.quantity import GPU_RESOURCES

        def gpu_of(section: Any) -> int | None:
            if not isinstance(section, dict):
                return None
            key = next((r for r in GPU_RESOURCES if r in section), None)
            return _quantity(section[key]) if key else None

        capability = gpu_of(spec.get("capability"))
        deserved = gpu_of(spec.get("deserved"))
        guarantee = gpu_of((spec.get("guarantee") or {}).get("resource") if isinstance(spec.get("guarantee"), dict) else None)
        queue = info.get("queue")
        if capability is not None and deserved is not None and capability < deserved:
            out.append(f"Queue {queue} deserves {deserved} GPUs but its capability caps it at {capability}")
        if capability is not None and guarantee is not None and capability < guarantee:
            out.append(f"Queue {queue} is guaranteed {guarantee} GPUs but its capability caps it at {capability}")
        if deserved is not None and guarantee is not None and deserved < guarantee:
            out.append(f"Queue {queue} is guaranteed {guarantee} GPUs but deserves only {deserved}")
        parent = spec.get("parent")
        if isinstance(parent, str) and parent != "root":
            queues = volcano_queues or {}
            parent_doc = queues.get(parent)
            if parent_doc is not None:
                parent_cap = gpu_of(((parent_doc.data or {}).get("spec") or {}).get("capability"))
                children = [
                    gpu_of(((d.data or {}).get("spec") or {}).get("guarantee", {}).get("resource"))
                    for d in queues.values()
                    if ((d.data or {}).get("spec") or {}).get("parent") == parent
                    and isinstance(((d.data or {}).get("spec") or {}).get("guarantee"), dict)
                ]
                total = sum(x for x in children if x)
                if parent_cap is not None and total > parent_cap:
                    out.append(
                        f"the queues under {parent} are guaranteed {total} GPUs together, but {parent}'s capability"
                        f" is {parent_cap}"
                    )
    return out


def pool_integrity_facts(
    pool: Any, facts: Mapping[str, Any], volcano_queues: dict[str, Any] | None = None
) -> IntegrityPoolFacts:
    """Plausibility facts of one pool, from the pool's other facts."""
    spec = pool.spec
    model = (spec.get("gpu") or {}).get("model")
    sizes = model_memory_gib(str(model)) if model else None
    declared = facts.get("gpu_memory_gib")
    contradiction = None
    if sizes and isinstance(declared, (int, float)) and declared > 0:
        nearest = min(sizes, key=lambda s: abs(math.log(float(declared) / s)))
        contradiction = float(declared) / nearest
    # measured workloads only: an unmeasured one is PL105's, and a pool planned for unmeasured
    # workloads alone may hold no GPUs yet
    unmeasured = set(facts.get("unmeasured_workloads") or [])
    gangs = [(int(w.spec.get("gpusPerReplica", 1)), w.name) for w in pool.workloads if w.name not in unmeasured]
    top = max(gangs, key=lambda g: (g[0], [-ord(c) for c in g[1]])) if gangs else None
    found = queue_contradictions(pool, volcano_queues)
    capacity, proposed = facts.get("capacity_gpus"), facts.get("proposed_gpus") or 0
    return IntegrityPoolFacts(
        gpu_model=str(model) if model else None,
        gpu_model_memory_gib=(
            (min(sizes, key=lambda s: abs(math.log(float(cast(float, declared)) / s))) if contradiction is not None else sizes[0])
            if sizes
            else None
        ),
        gpu_memory_contradiction=contradiction,
        largest_gang_gpus=top[0] if top else None,
        largest_gang_workload=top[1] if top else None,
        admissible_gpus=(int(capacity) + int(proposed)) if isinstance(capacity, (int, float)) else None,
        queue_contradictions=found,
        queue_contradiction_count=len(found),
        queue_contradiction_summary="; ".join(found),
    )


# --------------------------------------------------------------------------------------------
# Check functions of the integrity rules (registered in policylint.engine.checks.CHECKS)
# --------------------------------------------------------------------------------------------

#: The measurements PL960 dates against now: (fact, what it is, where it is written).
_DATED = (
    ("seconds_after_now", "concurrency trace"),
    ("vram_seconds_after_now", "VRAM trace"),
    ("jobs_seconds_after_now", "job list"),
)


def samples_after_now(facts: Any, params: Any) -> list[dict[str, Any]]:
    """PL960: every measurement (concurrency trace, VRAM trace, job list) dated past now by more than the skew."""
    limit = float(params["max_future_seconds"])
    problems = []
    for fact, what in _DATED:
        ahead = facts.get(fact)
        if not isinstance(ahead, (int, float)) or not ahead > limit:
            continue
        if fact == "seconds_after_now":
            count = facts.get("samples_after_now")
            noun = "sample" if count == 1 else "samples"
            detail = f" ({count} {noun} dated in the future, first sample {facts.get('first_sample')})"
        elif fact == "vram_seconds_after_now":
            detail = " (its last sample is dated in the future)"
        else:
            detail = " (a job ends in the future)"
        problems.append({"measurement": what, "seconds": float(ahead), "detail": detail, "_at": fact, "_figures": (float(ahead), limit)})
    return problems


def cold_start_floor(facts: Any, params: Any) -> list[dict[str, Any]]:
    """PL965: a cold start below the fixed minimum plus the time to load the replica's resident memory.

    Each GPU of a replica loads its part of the model (resident GiB / GPUs per replica)
    at most ``load_gib_per_second``; a node and an image take ``min_seconds`` at the least.
    """
    cold = facts.get("cold_start_window_seconds")
    if not isinstance(cold, (int, float)):
        return []
    floor = float(params["min_seconds"])
    reason = f"the {floor:g} s that a node, an image and a model load take at the least"
    resident = facts.get("vram_resident_gib")
    rate = float(params["load_gib_per_second"])
    if isinstance(resident, (int, float)) and resident > 0 and rate > 0:
        per_gpu = float(resident) / max(1, int(facts.get("gpus_per_replica") or 1))
        load = per_gpu / rate
        floor += load
        reason = (
            f"the {floor:g} s a replica needs at the least: {float(params['min_seconds']):g} s for a node and an image,"
            f" and {load:g} s to load {per_gpu:g} GiB onto each GPU at {rate:g} GiB/s"
        )
    if cold >= floor:
        return []
    return [{"floor_seconds": floor, "floor_reason": reason, "_figures": (float(cold), floor)}]


def gpu_memory_contradicts_model(facts: Any, params: Any) -> list[dict[str, Any]]:
    """PL974: the declared memory of a GPU differs from its model's by more than the tolerance."""
    ratio = facts.get("gpu_memory_contradiction")
    if not isinstance(ratio, (int, float)):
        return []
    tolerance = float(params["tolerance"])
    if abs(float(ratio) - 1.0) <= tolerance + 1e-9:
        return []
    return [{"_figures": (float(facts["gpu_memory_gib"]), float(facts["gpu_model_memory_gib"]))}]


CHECKS: dict[str, Any] = {
    "samples_after_now": samples_after_now,
    "cold_start_floor": cold_start_floor,
    "gpu_memory_contradicts_model": gpu_memory_contradicts_model,
}


def pulled_digest_matches(record: dict[str, Any] | None, path: str | None) -> bool | None:
    """Time: whether a pulled trace is still the file its pull wrote, by the SHA-256 the record holds.

    None when there is no record, the record holds no ``sha256`` (pulls that do not
    write one), or the file cannot be read. The file is hashed in 1 MiB blocks.
    """
    digest = (record or {}).get("sha256")
    if not isinstance(digest, str) or not path:
        return None
    h = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                h.update(block)
    except OSError:
        return None
    return h.hexdigest() == digest.strip().lower()
