"""The sum screen for series that take turns: one series dealt out among several, sample by sample.

A sum carries each series' last value forward over the grid points where it has no sample
(up to the gap limit), as a pod keeps its demand between scrapes. A trace cut into "pods"
that hold alternate samples - every sample still once in the file - is then counted more
than once: each part at its own times and again, carried, at the others' (red team,
2026-12-07: a Prometheus export dealt 4:1 into two pods doubled a baseline, 11 -> 22 GPUs,
past every gate; dealt 3:1 with each time moved a second or two, or with a few times given
to both, the same).

:func:`refuse_interleaved` looks at each pair of series where their spans overlap, on cells
as wide as the finer of their own steps, centred on the first sample time they share a span
from (jitter of less than half a cell stays in its cell). Series that take turns are rarely in one cell
together (:data:`TOGETHER`), neither is in nearly every cell (:data:`WHOLE`), together they
fill most cells (:data:`FILLED`), and they change turns within the gap limit (runs of cells
held by one alone are short: carried values are summed). Real pods are each scraped at
their own step, so one of them is in nearly every cell, or both are in most cells together;
a pod that replaces another (a rollout, a deploy that changed the scrape interval) shares
no span with it; pods that take turns by the hour leave holes longer than the gap limit,
which the sum reports as unknown rather than carrying.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from policylint.errors import MeasurementError

if TYPE_CHECKING:
    import numpy as np

#: share of the cells held by either series in which both have a sample, below which they take turns
TOGETHER = 0.25
#: share of the overlap's cells a series holds from which it is a whole series of its own (missed scrapes)
WHOLE = 0.97
#: share of the overlap's cells held by either series from which they make one series together
FILLED = 0.5
#: cells the spans of two series must share for their turns to be judged
MIN_CELLS = 20


def refuse_interleaved(parts: list[tuple[str, np.ndarray, np.ndarray]], step: float, max_gap_steps: int,
                       name: str) -> None:
    """Raise :class:`MeasurementError` naming two series of the sum ``parts`` that take turns (see the module)."""
    import numpy as np

    live: list[tuple[str, np.ndarray, float]] = []
    for label, times, values in parts:
        t = np.sort(times[~np.isnan(values)])
        if t.size:
            # samples closer than half a grid step are one scrape: a series written three times a second apart
            # does not have a one-second step of its own (round 9: such a pod's cells were one second wide)
            bucket = np.floor((t - t[0]) / (step / 2))
            t = t[np.concatenate(([True], bucket[1:] != bucket[:-1]))]
        if t.size >= 2:
            gaps = np.diff(t)
            own = float(np.median(gaps[gaps > 0])) if np.any(gaps > 0) else 0.0
            if own > 0:
                live.append((label, t, own))
    for i in range(len(live)):
        for j in range(i + 1, len(live)):
            (a, ta, sa), (b, tb, sb) = live[i], live[j]
            if _take_turns(ta, tb, min(sa, sb), max_gap_steps * max(step, min(sa, sb))):
                raise MeasurementError(
                    f"series {a} and {b} take turns: in the {_span(ta, tb)} they share, one or the other has a sample"
                    " at nearly every step but seldom both, and each waits for the other's samples; summed, each"
                    " one's last value is counted again at the other's samples, so the same demand counts more than"
                    " once. Export the series on one time axis (a range query answers every series at each step),"
                    " or one series for the whole workload",
                    source=name,
                )


def _take_turns(ta: np.ndarray, tb: np.ndarray, width: float, carried: float) -> bool:
    """Whether two sorted sample-time arrays take turns on cells of ``width`` seconds where their spans meet."""
    import numpy as np

    lo, hi = max(ta[0], tb[0]), min(ta[-1], tb[-1])
    if hi - lo < MIN_CELLS * width:
        return False
    n = int(np.floor((hi - lo) / width + 0.5)) + 1

    def cells(t: np.ndarray) -> np.ndarray:
        inside = t[(t >= lo - width / 2) & (t <= hi + width / 2)]
        return np.unique(np.clip(np.floor((inside - lo) / width + 0.5).astype(np.int64), 0, n - 1))

    ca, cb = cells(ta), cells(tb)
    both = np.intersect1d(ca, cb, assume_unique=True).size
    either = ca.size + cb.size - both
    if either < FILLED * n or both >= TOGETHER * either or ca.size >= WHOLE * n or cb.size >= WHOLE * n:
        return False
    # who holds each cell alone, in order: turns within the gap limit are carried, and so summed twice
    held = np.zeros(n, dtype=np.int8)
    held[ca] += 1
    held[cb] += 2
    alone = held[(held == 1) | (held == 2)]
    if alone.size == 0:
        return False
    runs = 1 + int(np.count_nonzero(alone[1:] != alone[:-1]))
    return bool(alone.size / runs * width <= carried)


def _span(ta: np.ndarray, tb: np.ndarray) -> str:
    hours = (min(ta[-1], tb[-1]) - max(ta[0], tb[0])) / 3600
    return f"{hours / 24:.1f} days" if hours >= 48 else f"{hours:.1f} hours"
