"""Two sum screens that look at what the grid sums rather than at equal sample times.

A sum of series (the series of a Prometheus answer, the pods of a long table) is put on one
grid, each series carrying its last value forward (:func:`policylint.readers.grid.combine`).
Two games passed the screens of :func:`policylint.readers.grid.refuse_repeated` (red team,
2026-12-07, round 21):

- **a total stamped off its parts**: three "pods" (a random split of every sample) and their
  total stamped one second earlier. The total test there fits the times where every series has
  a sample: there were none. On the grid the total is carried onto its parts' sample, and every
  request counts twice. :func:`refuse_offset_total` pairs each series' samples with the other
  series' samples nearest them in time (each read at its own phase, within half a step, and
  at the neighbouring sample either side) and refuses a series that is the sum of some others
  there, with the strictness of the aligned test (nine digits at 99% of the samples).
- **a flat part**: one more series holding 520 at every sample, summed in. The sum still moves
  (PL120 judges it), and the sum screens leave alone a series that changes fewer than ten times
  (idle replicas agree by chance). :func:`flat_parts` names each part that mostly holds one
  non-zero value for a day or more at a time; an inference workload's concurrency trace with one is
  refused when measured (:func:`refuse_flat_parts`). Idle replicas at 0 are exempt; a VRAM trace and
  a training or batch job's GPUs are not judged (flat by design).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from policylint.errors import MeasurementError

if TYPE_CHECKING:
    from policylint.readers.series import Series

__all__ = ["FLAT_PART_SECONDS", "FLAT_PART_SHARE", "flat_parts", "refuse_flat_parts", "refuse_offset_total"]

#: a series that changes value fewer times than this may equal another by chance (idle replicas
#: at zero, a constant gauge); one that changes more is the same measurement when it repeats
REPEAT_MIN_CHANGES = 10
#: the most series of one sum screened for an aggregate of some of the others (a least-squares fit per series)
MAX_TOTAL_SERIES = 32
#: the share of their common samples at which a series equals the sum of some of the others, from which it
#: is taken for their aggregate: a total with a few samples nudged is still the total (red team, 2026-12-06)
TOTAL_SHARE = 0.99
#: a part of a sum holding one non-zero value this long (seconds, one day, as PL120's flat days) is no measurement
FLAT_PART_SECONDS = 86_400.0
#: the share of a part's span held in such runs from which the part is flat (not a measurement of requests)
FLAT_PART_SHARE = 0.5
#: the samples of the candidate total a fit uses (evenly spaced among its own)
_FIT_ROWS = 1024
#: the neighbouring samples each other series is also read at (a total stamped up to a step and a half off)
_LAGS = (-1, 0, 1)


def _nearest(t: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The index of the sample of sorted ``t`` nearest each time of ``at``."""
    right = np.minimum(np.searchsorted(t, at), t.size - 1)
    left = np.maximum(right - 1, 0)
    return np.where(np.abs(t[left] - at) <= np.abs(t[right] - at), left, right)


def _read_at(t: np.ndarray, v: np.ndarray, at: np.ndarray, phase: float, lags: tuple[int, ...],
             step: float) -> list[np.ndarray]:
    """``v`` at the sample nearest each ``at + phase`` (within half a step), moved on by each of ``lags`` samples;
    NaN where there is none (or the neighbour lies across a hole)."""
    idx = _nearest(t, at + phase)
    near = np.abs(t[idx] - (at + phase)) <= step / 2
    out = []
    for lag in lags:
        moved = np.clip(idx + lag, 0, t.size - 1)
        held = near & (idx + lag >= 0) & (idx + lag < t.size) & (np.abs(t[moved] - t[idx]) <= 1.5 * step * abs(lag) + 1e-9)
        out.append(np.where(held, v[moved], np.nan))
    return out


def refuse_offset_total(parts: list[tuple[str, np.ndarray, np.ndarray]], step: float, name: str) -> None:
    """Raise :class:`MeasurementError` when one series of the sum ``parts`` is the total of some of the others,
    its samples paired with theirs by nearest time rather than equal time (see the module).

    Each busy series (at least :data:`REPEAT_MIN_CHANGES` changes) is fitted, by
    least squares over up to :data:`_FIT_ROWS` of its samples, on every other series read at its own phase
    (the median offset of its nearest samples) and at the samples either side; weights of 0 or 1 (two or more
    series at 1, each at one lag) are then tested on all its samples: equal to nine digits at
    :data:`TOTAL_SHARE` of those they share, and of those where it is not zero.
    Up to :data:`MAX_TOTAL_SERIES` series; the loops run over series and lags.
    """
    if not 3 <= len(parts) <= MAX_TOTAL_SERIES or not step > 0:
        return
    live: list[tuple[str, np.ndarray, np.ndarray, bool]] = []
    for label, times, values in parts:
        keep = ~np.isnan(values)
        t, v = np.asarray(times, dtype=np.float64)[keep], np.asarray(values, dtype=np.float64)[keep]
        if t.size >= 2:
            live.append((label, t, v, int(np.count_nonzero(v[1:] != v[:-1])) >= REPEAT_MIN_CHANGES))
    if len(live) < 3:
        return
    for i, (label, ti, vi, busy) in enumerate(live):
        if not busy:
            continue
        rows = ti[np.linspace(0, ti.size - 1, min(ti.size, _FIT_ROWS)).astype(np.int64)]
        others = [j for j in range(len(live)) if j != i]
        phases = {j: float(np.median(live[j][1][_nearest(live[j][1], rows)] - rows)) for j in others}
        columns = [(j, lag) for j in others for lag in _LAGS]
        fit = np.column_stack([c for j in others for c in _read_at(live[j][1], live[j][2], rows, phases[j], _LAGS, step)])
        usable = ~np.isnan(fit).any(axis=1)
        if np.count_nonzero(usable) < max(REPEAT_MIN_CHANGES, 2 * len(columns)):
            continue
        y = vi[np.searchsorted(ti, rows)][usable]
        fit = fit[usable]
        # a sum of two or more series that never go below 0 is at least the two smallest of them: a pod of
        # a fleet of like pods is none, and needs no fit (the loop stays cheap on a fleet of 32)
        smallest = np.sort(fit.mean(axis=0).reshape(len(others), len(_LAGS)).min(axis=1))
        if fit.min() >= 0 and float(y.mean()) < 0.95 * float(smallest[:2].sum()):
            continue
        weights = np.linalg.lstsq(fit, y, rcond=None)[0]
        whole = np.rint(weights)
        if not (np.all(np.abs(weights - whole) < 0.05) and np.all((whole == 0) | (whole == 1)) and whole.sum() >= 2):
            continue
        chosen = [columns[k] for k in np.flatnonzero(whole == 1)]
        if len({j for j, _ in chosen}) < len(chosen):
            continue  # one series counted at two of its samples: no aggregate of separate series
        total = np.zeros(ti.size)
        for j, lag in chosen:
            total += _read_at(live[j][1], live[j][2], ti, phases[j], (lag,), step)[0]  # NaN where one has none
        shared = ~np.isnan(total)
        count = int(np.count_nonzero(shared))
        busy_shared = shared & (vi != 0)
        scale = float(np.max(np.abs(vi[shared]))) if count else 0.0
        if count < REPEAT_MIN_CHANGES or np.count_nonzero(busy_shared) < REPEAT_MIN_CHANGES or not scale > 0:
            continue
        same = np.abs(total - vi) <= 1e-9 * scale  # False where NaN
        equal = int(np.count_nonzero(same & shared))
        if equal < TOTAL_SHARE * count or np.count_nonzero(same & busy_shared) < TOTAL_SHARE * np.count_nonzero(busy_shared):
            continue
        named = ", ".join(live[j][0] for j, _ in chosen)
        which = "other" if len(chosen) == len(live) - 1 else "of the other"
        raise MeasurementError(
            f"series {label} is the total of {len(chosen)} {which} series ({named}) at {equal:,} of the {count:,}"
            " samples they share, each read at its sample nearest in time (its times are not theirs, but on the"
            " grid each carries its last value onto the others'): an aggregate exported beside its parts (a"
            " federation job, a recording rule or a subtotal under the same name), and summed, those requests"
            " would count twice; pick the parts or the total (match, columns), not both",
            source=name,
        )


def flat_parts(parts: list[tuple[str, np.ndarray, np.ndarray]]) -> tuple[str, ...]:
    """What is flat about each part of a sum that mostly holds one non-zero value for a day or more at a time.

    A part is flat when its runs of one non-zero value that last :data:`FLAT_PART_SECONDS` or longer
    cover :data:`FLAT_PART_SHARE` or more of its span (first to last measured sample). A run is timed
    from its first sample to the first sample of the next value (or its own last sample); missing
    samples (NaN) neither end a run nor start one. Real series with long plateaus stay below the share
    (the Helios cluster's busiest column holds its values a day or more for 27% of May 2020), so do
    idle replicas at 0 and pods that lived less than a day. One line per flat part, naming it, its
    longest run and the share; empty when none is flat. The loop runs over parts.
    """
    from policylint.readers.timestamps import format_time

    found: list[str] = []
    for label, times, values in parts:
        keep = ~np.isnan(values)
        t, v = np.asarray(times, dtype=np.float64)[keep], np.asarray(values, dtype=np.float64)[keep]
        if t.size < 2 or t[-1] - t[0] < FLAT_PART_SECONDS:
            continue
        cut = np.flatnonzero(v[1:] != v[:-1]) + 1
        starts = np.concatenate(([0], cut))
        ends = np.concatenate((cut, [t.size - 1]))
        spans = np.where(v[starts] != 0, t[ends] - t[starts], 0.0)
        share = float(spans[spans >= FLAT_PART_SECONDS].sum()) / float(t[-1] - t[0])
        if share >= FLAT_PART_SHARE:
            k = int(np.argmax(spans))
            found.append(
                f"series {label} holds {v[starts[k]]:g} from {format_time(t[starts[k]])} to"
                f" {format_time(t[ends[k]])} ({spans[k] / 86_400:.1f} days) without a change, and one value"
                f" a day or more at a time for {share:.0%} of its {(t[-1] - t[0]) / 86_400:.1f} days"
                f" ({starts.size - 1:,} changes in all)"
            )
    return tuple(found)


def refuse_flat_parts(series: Series) -> None:
    """Raise :class:`MeasurementError` when a trace of requests in flight sums a flat part (:func:`flat_parts`).

    The reader notes such parts (:attr:`Series.flat_parts`) on every sum; only an inference
    workload's concurrency trace refuses them: memory a replica reserves is flat by design, and
    so are the GPUs a training or batch job holds for days.
    """
    if series.flat_parts:
        raise MeasurementError(
            f"{'; '.join(series.flat_parts)}: requests in flight move, and a part of a sum that mostly holds one"
            " value for a day or more at a time is not measuring them; summed, it adds that value to the other"
            " parts' samples. Leave it out of the sum (match, key select, columns) or export it measured;"
            " an idle replica at 0 is fine",
            source=series.source,
        )
