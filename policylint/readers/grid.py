"""Irregular samples onto a regular grid: last observation carried forward, gaps kept.

Every time series reader ends here. The grid's length is computed from the span
and the step and checked against the limit before anything is allocated.
"""

from __future__ import annotations

import math

import numpy as np

from policylint.errors import MeasurementError
from policylint.readers.limits import DEFAULT_LIMITS, TraceLimits, check_grid
from policylint.readers.series import Gap, Series
from policylint.readers.sum_screens import MAX_TOTAL_SERIES, REPEAT_MIN_CHANGES, TOTAL_SHARE

__all__ = ["AGGREGATES", "MAX_TOTAL_SERIES", "REPEAT_MIN_CHANGES", "TOTAL_SHARE", "combine", "event_log_hint", "finish", "median_step", "regular_grid", "to_grid"]


def regular_grid(start: float, step: float, n: int) -> np.ndarray:
    """``start + step * k`` for k < n, built in place (one array, no temporaries)."""
    grid = np.arange(n, dtype=np.float64)
    grid *= step
    grid += start
    return grid


def median_step(times: np.ndarray) -> float:
    """The median spacing of sorted sample times: the default grid step."""
    steps = np.diff(times)
    low = steps.min()
    if low == steps.max():
        return float(low)  # evenly spaced (the usual export): no partition needed
    return float(np.median(steps))


def to_grid(
    times: np.ndarray,
    values: np.ndarray,
    step: float,
    max_gap_steps: int,
    start: float,
    stop: float,
    *,
    limits: TraceLimits = DEFAULT_LIMITS,
    name: str = "",
    missing: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[Gap]]:
    """Put irregular samples on the grid ``start + k*step`` (carry last value forward).

    NaN samples are missing samples. Holes longer than ``max_gap_steps`` steps are
    excluded (NaN) and returned as gaps rather than bridged. Grid points before
    the first or after the last sample are reported as outside (``inside`` False).
    """
    if missing is None:
        missing = np.isnan(values)
    complete = not missing.any()
    t = times if complete else times[~missing]
    v = values if complete else values[~missing]
    n = check_grid(start, stop, step, limits, name)
    grid = regular_grid(start, step, n)
    if complete and n == t.size and max_gap_steps >= 1 and np.array_equal(t, grid):
        # Already regular and complete (the usual export): every grid point is its
        # own sample, inside the span, with no hole - what the general path below
        # computes, without its searches and temporaries.
        return grid, values.copy(), np.ones(n, dtype=bool), []
    out = np.full(n, np.nan)
    inside = (grid >= times[0] - 1e-9) & (grid <= times[-1] + 1e-9)
    gaps: list[Gap] = []
    if t.size == 0:
        return grid, out, inside, gaps
    idx = np.searchsorted(t, grid + 1e-9, side="right") - 1
    has = idx >= 0
    out[has] = v[idx[has]]
    # Missing before the first real sample (e.g. leading NaNs) is a hole too.
    limit = max_gap_steps * step
    bounds = np.concatenate(([times[0]], t, [times[-1]]))
    holes = np.diff(bounds)
    big = np.flatnonzero(holes > limit + 1e-9)
    if big.size:
        hole_start = bounds[big]
        hole_end = bounds[big + 1]
        # Grid points strictly inside a big hole are unmeasured; a point within one
        # step after the last sample is still covered by that sample.
        lo = np.searchsorted(grid, hole_start + step - 1e-9, side="left")
        hi = np.searchsorted(grid, hole_end - 1e-9, side="left")
        # Leading hole: nothing was measured before it, so start at its first point.
        lo = np.where(big == 0, np.searchsorted(grid, hole_start - 1e-9, side="left"), lo)
        delta = np.zeros(n + 1, dtype=np.int64)
        np.add.at(delta, lo, 1)
        np.add.at(delta, hi, -1)
        out[np.cumsum(delta[:-1]) > 0] = np.nan
        gaps = [Gap(float(a), float(b)) for a, b in zip(hole_start, hole_end, strict=True)]
    out[~inside] = np.nan
    return grid, out, inside, gaps


def finish(
    times: np.ndarray,
    values: np.ndarray,
    *,
    name: str,
    step_seconds: float | None,
    max_gap_steps: int,
    limits: TraceLimits = DEFAULT_LIMITS,
    uniform_step: float | None = None,
) -> Series:
    """Validate raw samples and grid them into a :class:`Series`.

    ``uniform_step`` is the spacing of the samples when the caller knows it never changes.
    """
    if times.size == 0:
        raise MeasurementError("no samples", source=name, row=2)
    if times.size < 2:
        raise MeasurementError("only one sample: a series needs at least two", source=name, row=2)
    missing = np.isnan(values)
    if missing.all():
        raise MeasurementError("every sample is missing (NaN)", source=name, row=2)
    step = float(step_seconds) if step_seconds else (uniform_step or median_step(times))
    if not (step > 0 and math.isfinite(step)):
        raise MeasurementError(f"step must be positive, got {step:g} seconds", source=name)
    if max_gap_steps < 1:
        raise MeasurementError("max_gap_steps must be at least 1", source=name)
    hint = None if step_seconds or uniform_step else event_log_hint(times)
    try:
        grid, out, inside, gaps = to_grid(
            times, values, step, max_gap_steps, times[0], times[-1], limits=limits, name=name, missing=missing
        )
    except MeasurementError as exc:
        if hint is None:
            raise
        raise MeasurementError(f"{exc.message}; {hint}", source=exc.source, row=exc.row) from None
    complete = not missing.any()
    regridded = not (complete and not gaps and inside.all() and out.size == values.size)
    if not regridded:
        valid = inside  # a complete regular series: every grid point is a sample, none is NaN
    else:
        valid = ~np.isnan(out)
    if not valid.any():
        raise MeasurementError("no usable sample after gridding" + (f"; {hint}" if hint else ""), source=name)
    if not complete:
        first = int(np.argmax(~missing))
        last = times.size - 1 - int(np.argmax(~missing[::-1]))
    else:
        first, last = 0, times.size - 1
    return Series(
        times=grid,
        values=out,
        valid=valid,
        step_seconds=step,
        source=name,
        gaps=tuple(gaps),
        first=float(times[first]),
        last=float(times[last]),
        hint=hint,
        samples_print=_samples_print(times, values),
        samples_sketch=_samples_sketch(values, missing) if regridded else None,
        regridded=regridded,
    )


def _samples_sketch(values: np.ndarray, missing: np.ndarray) -> list[int] | None:
    """The run sketch of the samples as read, missing ones invalid (see :attr:`Series.samples_sketch`)."""
    from policylint.calc.runs import judged_samples, run_sketch

    return run_sketch(*judged_samples(values, ~missing))


def _samples_print(times: np.ndarray, values: np.ndarray) -> str:
    from policylint.calc.prints import samples_fingerprint

    return samples_fingerprint(times, values)


#: Rows closer than this (median, seconds) and this irregular (p90 / p10 of the spacing)
#: are events (one row per request), not samples of a level: an exporter samples on a
#: clock, arrivals come as they come (exponential spacing has p90 / p10 near 22).
EVENT_LOG_MEDIAN_SECONDS = 1.0
EVENT_LOG_SPREAD = 4.0


def event_log_hint(times: np.ndarray) -> str | None:
    """What to say when sorted ``times`` look like an event log read as a series, else None.

    A request log read as a time series (one row per request, many a second,
    irregularly spaced) is gridded at its median spacing, a fraction of a second,
    so its every pause becomes a gap and no cold-start window of consecutive
    samples is left: the reader notes it so that the error can name the way out.
    """
    if times.size < 10:
        return None
    steps = np.diff(times)
    low, middle, high = (float(x) for x in np.percentile(steps, [10, 50, 90]))
    if not (0 < middle < EVENT_LOG_MEDIAN_SECONDS) or high <= EVENT_LOG_SPREAD * max(low, 1e-12):
        return None
    span = float(times[-1] - times[0])
    rate = (times.size - 1) / span if span > 0 else float("inf")
    return (
        f"the rows look like an event log, not samples of a level ({rate:.3g} rows a second, spaced"
        f" irregularly, median {middle:.3g} s apart): read it as a request log (--input-format requests,"
        " format: requests, with an end or duration column), or grid it coarser with --step SECONDS"
        " (stepSeconds)"
    )


AGGREGATES = ("sum", "mean", "max")
"""How several series (keys of a long table, Prometheus series) become one."""




def refuse_repeated(parts: list[tuple[str, np.ndarray, np.ndarray]], name: str) -> None:
    """Refuse a sum holding one series twice: the same samples under two labels, exactly or nearly.

    A Prometheus answer with the same series from two scrapers (an HA pair's ``replica``
    label), or a table with a column copied under another name, would count the same
    demand twice; so would a copy edited to look like another series. Series that change
    value fewer than :data:`REPEAT_MIN_CHANGES` times are left alone: idle replicas agree
    by chance. Three tests, each by hashing each series once (never a loop over pairs of
    series unless their hashes meet):

    - the same times and values (compared exactly once the hashes agree);
    - for a series with at least :data:`REPEAT_MIN_CHANGES` distinct values, the same order
      of its samples (a stable sort), and then every sample of one equal to ``k`` times the
      other's plus ``c`` (``k > 0``, to nine digits): a copy scaled, offset or moved in time;
    - more than :data:`NEAR_REPEAT_SHARE` of its 16-step runs in common (PL972's run
      sketch): a copy with a few samples changed, offset or moved in time.

    Measured replicas of one service pass all three: their noise is their own. Equal rises
    and falls (PL111's shape fingerprint), or an equal order alone, are no test here: the
    pods of a service behind a round-robin balancer each take half of every minute's
    requests, and over an hour of real arrivals (the Azure LLM trace) their per-minute
    counts rise and fall together at every sample - but one holds the odd request the
    other does not, so neither is a scaled copy of the other.
    """
    import hashlib

    from policylint.calc.runs import run_sketch, shared_run_pairs, sketch_similarity

    seen: dict[bytes, tuple[str, np.ndarray, np.ndarray]] = {}
    ordered: dict[bytes, tuple[str, np.ndarray]] = {}
    labels: list[str] = []
    sketches: list[list[int] | None] = []
    for label, times, values in parts:
        valid = ~np.isnan(values)
        measured = values[valid]  # a gap is no change: a mostly missing idle series stays idle
        if measured.size < 2 or int(np.count_nonzero(measured[1:] != measured[:-1])) < REPEAT_MIN_CHANGES:
            continue
        t = np.ascontiguousarray(times, dtype=np.float64)
        v = np.ascontiguousarray(values, dtype=np.float64)
        key = hashlib.sha256(t.tobytes() + b"|" + v.tobytes()).digest()
        first = seen.get(key)
        if first is None:
            seen[key] = (label, t, v)
        elif np.array_equal(first[1], t) and np.array_equal(first[2], v, equal_nan=True):
            raise MeasurementError(
                f"series {first[0]} and {label} hold the same {v.size:,} samples: summed, the same demand "
                "would count twice (a series scraped twice, or a column copied under another name); "
                "pick one (match, columns) or export it once",
                source=name,
            )
        order = np.argsort(measured, kind="stable")
        ranked = measured[order]
        if int(np.count_nonzero(ranked[1:] != ranked[:-1])) + 1 >= REPEAT_MIN_CHANGES:
            same_order = ordered.setdefault(hashlib.sha256(order.astype("<i8").tobytes()).digest(), (label, measured))
            factor = _affine_factor(same_order[1], measured) if same_order[0] != label else None
            if factor is not None:
                raise MeasurementError(
                    f"series {label} is series {same_order[0]} scaled, offset or moved in time: each of its "
                    f"{measured.size:,} measured samples is {factor:.10g} times the other's plus one constant, and "
                    "summed, the same demand would count twice; pick one (match, columns) or export it once",
                    source=name,
                )
        labels.append(label)
        sketches.append(run_sketch(v, valid))
    for a, b in sorted(shared_run_pairs(sketches)):
        sa, sb = sketches[a], sketches[b]
        if a == b or sa is None or sb is None:
            continue
        share = sketch_similarity(sa, sb)
        if share > NEAR_REPEAT_SHARE:
            raise MeasurementError(
                f"series {labels[a]} and {labels[b]} share {share:.0%} of their 16-step runs (more than "
                f"{NEAR_REPEAT_SHARE:.0%}): one is the other with a few samples changed, offset or moved in time, "
                "and summed, the same demand would count twice; pick one (match, columns) or export it once",
                source=name,
            )
    _refuse_total(parts, name)


#: the samples a fit of one series on the others uses (evenly spaced among those where every series is measured)
_FIT_ROWS = 4096


def _refuse_total(parts: list[tuple[str, np.ndarray, np.ndarray]], name: str) -> None:
    """Refuse a sum holding an aggregate of some of its other series beside them (a federated total, a subtotal).

    A Prometheus answer may hold each pod's series and, under the same metric name, their
    total (a federation job, a recording rule) or a subtotal (per zone, per node): summed,
    those requests count twice, and no series is a copy of another (red team, 2026-12-06,
    rounds 8 and 9: the total, the total with one sample nudged, a zone's subtotal). Each
    busy series (at least :data:`REPEAT_MIN_CHANGES` changes) is fitted, by least squares
    over the samples where every series is measured, as a combination of the others; when
    the weights are 0 or 1 (two or more of them 1) and the series equals the sum of the
    series weighted 1, to nine digits, at :data:`TOTAL_SHARE` or more of the samples they
    share, it is refused. Up to :data:`MAX_TOTAL_SERIES` series; the loops run over series.
    """
    if not 3 <= len(parts) <= MAX_TOTAL_SERIES:
        return  # with two series, an aggregate of the other is a copy, which the other tests refuse
    aligned = all(t.size == 0 for _, t, _ in parts)
    if aligned:
        size = parts[0][2].size
        if any(v.size != size for _, _, v in parts):
            return
        axis = None
    else:
        axis = np.unique(np.concatenate([np.asarray(t, dtype=np.float64) for _, t, _ in parts]))
        size = int(axis.size)
    seen = np.zeros(size, dtype=np.int64)
    placed: list[tuple[str, np.ndarray, np.ndarray, bool]] = []
    for label, times, values in parts:
        at = np.arange(size) if axis is None else np.searchsorted(axis, np.asarray(times, dtype=np.float64))
        valid = ~np.isnan(values)
        at, measured = at[valid], values[valid]
        seen[at] += 1  # one sample per time and series (the readers refuse a repeated time)
        busy = measured.size >= 2 and int(np.count_nonzero(measured[1:] != measured[:-1])) >= REPEAT_MIN_CHANGES
        placed.append((label, at, measured, busy))
    common = np.flatnonzero(seen == len(parts))
    if common.size < max(REPEAT_MIN_CHANGES, 2 * len(parts)):
        return
    rows = common[np.linspace(0, common.size - 1, min(common.size, _FIT_ROWS)).astype(np.int64)]
    fit = np.empty((rows.size, len(parts)))
    for j, (_, at, measured, _) in enumerate(placed):
        fit[:, j] = measured[np.searchsorted(at, rows)]

    def dense(j: int) -> np.ndarray:
        out = np.full(size, np.nan)
        out[placed[j][1]] = placed[j][2]
        return out

    for i, (label, _, _, busy) in enumerate(placed):
        if not busy:
            continue
        others = [j for j in range(len(parts)) if j != i]
        weights = np.linalg.lstsq(fit[:, others], fit[:, i], rcond=None)[0]
        whole = np.rint(weights)
        if not (np.all(np.abs(weights - whole) < 0.05) and np.all((whole == 0) | (whole == 1)) and whole.sum() >= 2):
            continue
        summed = [others[k] for k in np.flatnonzero(whole == 1)]
        mine = dense(i)
        total = np.zeros(size)
        for j in summed:
            total += dense(j)  # NaN where any of them has no sample
        shared = ~np.isnan(mine) & ~np.isnan(total)
        count = int(np.count_nonzero(shared))
        if count < REPEAT_MIN_CHANGES:
            continue
        scale = float(np.max(np.abs(mine[shared])))
        equal = int(np.count_nonzero(np.abs(total[shared] - mine[shared]) <= 1e-9 * scale)) if scale > 0 else 0
        if equal >= TOTAL_SHARE * count:
            which = "other" if len(summed) == len(others) else "of the other"
            named = ", ".join(placed[j][0] for j in summed)
            raise MeasurementError(
                f"series {label} is the total of {len(summed)} {which} series ({named}) at {equal:,} of the "
                f"{count:,} samples they share: an aggregate exported beside its parts (a federation job, a "
                "recording rule or a subtotal under the same name), and summed, those requests would count twice; "
                "pick the parts or the total (match, columns), not both",
                source=name,
            )


def _affine_factor(a: np.ndarray, b: np.ndarray) -> float | None:
    """``k`` when every sample of ``b`` is ``k * a + c`` (``k > 0``) to nine digits, else None; equal lengths only."""
    if a.size != b.size or a.size < 2:
        return None
    lo, hi = int(np.argmin(a)), int(np.argmax(a))
    span = float(a[hi] - a[lo])
    if not span > 0:
        return None
    k = float(b[hi] - b[lo]) / span
    if not (k > 0 and math.isfinite(k)):
        return None
    c = float(b[lo]) - k * float(a[lo])
    scale = float(np.max(np.abs(b)))  # relative to the series' own size: a utilisation below 1 too
    return k if scale > 0 and bool(np.all(np.abs(b - (k * a + c)) <= 1e-9 * scale)) else None


#: the largest estimated share of 16-step runs two series of one sum may have in common (PL972's
#: default for two workloads' traces): measured replicas of a service share almost none
NEAR_REPEAT_SHARE = 0.5


def combine(
    parts: list[tuple[str, np.ndarray, np.ndarray]],
    how: str,
    *,
    name: str,
    step_seconds: float | None,
    max_gap_steps: int,
    limits: TraceLimits = DEFAULT_LIMITS,
) -> Series:
    """Several series ``(label, times, values)`` on one grid, combined per grid time.

    ``sum`` (concurrency, memory): a series counts 0 outside its own span (that
    replica or pod did not exist yet, or no longer), but a hole inside its span
    makes the total unknown at those times. ``mean`` (utilisation) and ``max``:
    over the series measured at each time. Each series is put on the common grid
    on its own, so series sampled at different times or steps combine correctly.
    The loop runs over series, never over samples.
    """
    if how not in AGGREGATES:
        raise MeasurementError(f"unknown aggregate {how!r} (expected {', '.join(AGGREGATES)})", source=name)
    if how == "sum" and len(parts) > 1:
        refuse_repeated(parts, name)
    if len(parts) == 1:
        _label, times, values = parts[0]
        return finish(times, values, name=name, step_seconds=step_seconds, max_gap_steps=max_gap_steps, limits=limits)
    for label, times, _values in parts:
        if times.size < 2 and step_seconds is None:
            raise MeasurementError(f"series {label} has one sample; give the step", source=name, row=1)
    step = float(step_seconds) if step_seconds else float(np.median(np.concatenate([np.diff(t) for _, t, _ in parts])))
    if not (step > 0 and math.isfinite(step)):
        raise MeasurementError(f"step must be positive, got {step:g} seconds", source=name)
    if how == "sum":
        from policylint.readers.interleaved import refuse_interleaved
        from policylint.readers.sum_screens import refuse_offset_total

        refuse_interleaved(parts, step, max_gap_steps, name)
        refuse_offset_total(parts, step, name)  # a total stamped off its parts' times (red team, round 21)
    start = min(float(t[0]) for _, t, _ in parts)
    stop = max(float(t[-1]) for _, t, _ in parts)
    n = check_grid(start, stop, step, limits, name)
    total = np.zeros(n)
    count = np.zeros(n)
    unknown = np.zeros(n, dtype=bool)
    gaps: list[Gap] = []
    grid = regular_grid(start, step, n)
    for _label, times, values in parts:
        grid, out, inside, series_gaps = to_grid(
            times, values, step, max_gap_steps, start, stop, limits=limits, name=name
        )
        measured = ~np.isnan(out)
        unknown |= inside & ~measured
        if how == "max":
            np.fmax(total, np.where(measured, out, 0.0), out=total)
        else:
            total += np.where(measured, out, 0.0)
        count += measured
        gaps.extend(series_gaps)
    if how == "sum":
        from policylint.readers.sum_screens import flat_parts

        values_out = np.where(unknown, np.nan, total)
    else:
        with np.errstate(invalid="ignore", divide="ignore"):
            values_out = np.where(count > 0, total / count if how == "mean" else total, np.nan)
    valid = ~np.isnan(values_out)
    if not valid.any():
        raise MeasurementError("every sample is missing (NaN)", source=name)
    measured_times = [t[~np.isnan(v)] for _, t, v in parts]
    firsts = [m[0] for m in measured_times if m.size]
    lasts = [m[-1] for m in measured_times if m.size]
    gaps.sort(key=lambda g: (g.start, g.end))
    combined = Series(
        times=grid,
        values=values_out,
        valid=valid,
        step_seconds=step,
        source=name,
        gaps=tuple(gaps),
        first=float(min(firsts)),
        last=float(max(lasts)),
        flat_parts=flat_parts(parts) if how == "sum" else (),
    )
    if how == "sum" and len(parts) >= 2:
        from policylint.readers.part_prints import with_part_prints

        return with_part_prints(combined, parts, lambda times, values: finish(
            times, values, name=name, step_seconds=step, max_gap_steps=max_gap_steps, limits=limits))
    return combined
