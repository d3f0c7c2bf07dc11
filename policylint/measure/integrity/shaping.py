"""Shaping: evidence with the inconvenient parts removed by declared exclusions.

How much of the window the exclusions take, how many of them recur at one time of
day, and whether they fall where demand is highest.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from policylint.calc.positions import kths
from policylint.measure.integrity.values import Fact

if TYPE_CHECKING:
    import numpy as np

#: Exclusions shorter than this are looked at for a daily pattern; whole days (holidays) are not.
SUB_DAY_SECONDS = 86_400.0
#: Bin, in seconds of the day, in which exclusion starts count as one recurring time.
RECUR_BIN_SECONDS = 900.0
#: Share of the highest samples looked at for "exclusions fall where demand is high".
TOP_SHARE = 0.05


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
        cut = np.partition(ranked, kths([n_valid - top_n], n_valid))[n_valid - top_n]  # only compared: a zero's sign is moot
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
