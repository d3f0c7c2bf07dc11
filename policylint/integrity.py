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
views turn it into the ``integrity_*`` facts rules read (:data:`WORKLOAD_FACTS`).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

Fact = float | int | str | bool | None

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

#: Workload facts of this stage: name -> description (merged into the view's fact catalogue).
WORKLOAD_FACTS: dict[str, str] = {
    "series_fingerprint": (
        "identity: SHA-256 of the concurrency series as read (grid times and values of its valid samples):"
        " equal for a byte-identical copy under another name or the same samples in another format"
    ),
    "values_fingerprint": (
        "identity: SHA-256 of the values of the valid samples alone, without their times: equal for a copy"
        " moved to other dates"
    ),
    "shape_fingerprint": (
        "identity: SHA-256 of the sequence of rises, falls and holds between valid samples (the same for a copy"
        " scaled by a factor >= 1 or shifted by a constant); None for series that change fewer than 24 times a"
        " day (too little noise to tell two series apart)"
    ),
    "repeated_days": (
        "identity: UTC days whose every sample repeats an earlier day of the same trace exactly (judged on"
        " days that change value at least 24 times); None when the step does not divide a day"
    ),
    "repeated_day_share": "identity: repeated_days / the days judged, unrounded",
    "first_sample": "time: timestamp of the first valid sample (ISO 8601, UTC)",
    "seconds_after_now": "time: seconds by which the last sample lies after now (0 when none does), unrounded",
    "samples_after_now": "time: number of grid samples dated after now",
    "resolution_step_seconds": (
        "resolution: the step the values really change at - the declared or inferred step times the length"
        " of the blocks of repeated values the series is made of (equal to step_seconds when there are none)"
    ),
    "resolution_block_samples": "resolution: samples per block of repeated values (1 when the series is not blocky)",
    "value_changes": "resolution: number of sample-to-sample value changes between valid samples",
    "roughness": (
        "resolution: std of second differences / std of first differences of the series (about 1.4 to 1.7 for"
        " measured noise, near 0 for a smooth curve); None when the series never changes"
    ),
    "exclusion_count": "shaping: number of declared exclusion ranges",
    "excluded_share": "shaping: share of the valid samples the declared exclusions remove, unrounded",
    "exclusion_recurring": (
        "shaping: the most sub-day exclusion ranges that start at one time of day (15-minute bins)"
    ),
    "exclusion_recurring_at": "shaping: that time of day, HH:MM UTC (None without sub-day ranges)",
    "excluded_top_share": (
        "shaping: share of the highest 5% of samples (before exclusions) that the exclusions remove"
    ),
    "excluded_demand_ratio": (
        "shaping: mean demand of the excluded samples / mean demand of the kept ones (None when either is empty)"
    ),
    "outlier_days_removed": "shaping: days removed automatically as outliers (excludeOutlierDays)",
    "outlier_day_share": "shaping: outlier_days_removed / the days the trace spans, unrounded",
    "pulled_range_outside_seconds": (
        "time: seconds by which the trace's samples reach beyond the start or end its pull recorded"
        " (policylint pull's provenance record); 0 inside it, None without a record"
    ),
    "negative_samples": "plausibility: valid samples below zero (a count cannot be negative)",
    "job_gpus_max": (
        "plausibility: most GPUs any job of the measured job list (durations) held; None when the list"
        " records no GPU column (every job then counts as one GPU)"
    ),
    "job_gpus_median": "plausibility: median GPUs per job of the measured job list (None as for job_gpus_max)",
    "fractional_share": "plausibility: share of valid samples that are not whole numbers, unrounded",
}


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

    per_day = 86_400.0 / float(step_seconds) if step_seconds > 0 else 0.0
    if per_day < 2 or abs(per_day - round(per_day)) > 1e-9 or times.size == 0:
        return None, 0
    n = int(round(per_day))
    # the first sample at a UTC midnight: the grid must have one, or days are not comparable
    first_midnight = math.ceil(float(times[0]) / 86_400.0) * 86_400.0
    steps = (first_midnight - float(times[0])) / float(step_seconds)
    if abs(steps - round(steps)) > 1e-6:
        return None, 0
    offset = int(round(steps))
    days = (times.size - offset) // n
    if days < 2:
        return None, 0
    rows = values[offset : offset + days * n].reshape(days, n)
    ok = valid[offset : offset + days * n].reshape(days, n).all(axis=1)
    changes = np.count_nonzero(np.diff(rows, axis=1) != 0, axis=1)
    judged = rows[ok & (changes >= MIN_DAY_CHANGES)]
    if judged.shape[0] < 2:
        return 0, int(judged.shape[0])
    unique = np.unique(judged, axis=0).shape[0]
    return int(judged.shape[0] - unique), int(judged.shape[0])


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
    for k in range(2, max_block + 1):
        if int(np.bincount(sample % k, minlength=k).max()) < (phase_share - 0.05) * sample.size:
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
    repeated, judged = repeated_days(times, values, valid, step_seconds)
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
    import datetime as dt

    if not stored or not record:
        return None
    first, last = stored.get("first_time"), stored.get("last_time")
    if not isinstance(first, (int, float)) or not isinstance(last, (int, float)):
        return None
    bounds = []
    for key in ("start", "end"):
        text = record.get(key)
        if not isinstance(text, str):
            return None
        try:
            moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            return None
        bounds.append((moment if moment.tzinfo else moment.replace(tzinfo=dt.timezone.utc)).timestamp())
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
    return out


def workload_facts(stored: dict[str, Any] | None, now_seconds: float, outlier_days: int | None) -> dict[str, Fact]:
    """The integrity facts of a workload view: the stored trace facts plus the time facts at ``now``."""
    stored = stored or {}
    out: dict[str, Fact] = {name: None for name in WORKLOAD_FACTS}
    for name in WORKLOAD_FACTS:
        if name in stored:
            out[name] = stored[name]
    out.update(time_facts(stored, now_seconds) if stored else {})
    out["outlier_days_removed"] = outlier_days
    first, last, step = stored.get("first_time"), stored.get("last_time"), stored.get("step_seconds")
    if outlier_days is not None and isinstance(first, (int, float)) and isinstance(last, (int, float)):
        span = (float(last) - float(first) + float(step or 0.0)) / 86_400.0
        out["outlier_day_share"] = min(1.0, outlier_days / span) if span > 0 else None
    return out
