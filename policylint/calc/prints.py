"""Content prints of a measured series: what identifies its values, wherever they are read.

The one recipe for the values print, used by the integrity stage (a workload's
``values_fingerprint``) and by the readers (each summed column's, so that a column that
is another workload's whole series is found, red team 2026-12-06, round 11).
"""

from __future__ import annotations

import hashlib

import numpy as np


def float64_bytes(a: np.ndarray, valid: np.ndarray, everything: bool) -> memoryview:
    """The valid samples of ``a`` as contiguous little-endian float64, hashed in place (no copy when all are valid)."""
    picked = a if everything and valid.dtype == bool and a.shape == valid.shape else a[valid]
    return np.ascontiguousarray(picked, dtype="<f8").data.cast("B")


def values_fingerprint(values: np.ndarray, valid: np.ndarray) -> str:
    """Identity: the SHA-256 of the valid samples' values alone (a copy moved in time keeps it)."""
    digest = hashlib.sha256(b"policylint-values/1\0")
    digest.update(float64_bytes(values, valid, bool(np.all(valid))))
    return digest.hexdigest()


#: Fewest value changes a day, on average, a series needs before its shape identifies it, and a day
#: before its repetition is judged: a day of real, noisy demand changes at most of its samples; a
#: synthetic or idle day (a step function) repeats by nature.
MIN_DAY_CHANGES = 24


def shape_print(values: np.ndarray, valid: np.ndarray, step_seconds: float) -> str | None:
    """Identity: the SHA-256 of sign(difference) between consecutive valid samples; None for a quiet series.

    Only series changing at least :data:`MIN_DAY_CHANGES` times a day on average get one. The
    recipe of a workload's ``shape_fingerprint`` and of each summed part's (``part_shapes``).
    """
    good = values[valid]
    if good.size < 3:
        return None
    signs = np.sign(np.diff(good)).astype(np.int8)
    days = good.size * float(step_seconds) / 86_400.0
    if days <= 0 or np.count_nonzero(signs) / days < MIN_DAY_CHANGES:
        return None
    digest = hashlib.sha256(b"policylint-shape/1\0")
    digest.update(np.ascontiguousarray(signs).data.cast("B"))
    return digest.hexdigest()


def samples_fingerprint(times: np.ndarray, values: np.ndarray) -> str:
    """Identity before the grid: the SHA-256 of the samples as read (their values and window, NaN left out).

    The prints above are taken from the series on its grid, so one file read at another step
    (``stepSeconds: 290`` on 300 s samples repeats one sample in 29) gave other prints for the
    same samples (red team, 2026-12-07). This one does not depend on the grid, only on what the
    file holds and which rows and columns were read: the values of the valid samples in order,
    with how many there are and the first and last of their times. A copy whose times in between
    were edited still holds the same values over the same window, and hashing every time would
    double the cost of the print (a 92-day trace at 5 minutes is 26,000 samples, hashed in about
    0.1-0.25 ms this way). For a job list or request log the "times" are the rows' starts and the
    "values" their ends.
    """
    valid = ~np.isnan(values)
    everything = bool(np.all(valid))
    kept = times if everything else times[valid]
    digest = hashlib.sha256(b"policylint-samples/2\0")
    digest.update(np.array([kept.size, kept[0] if kept.size else 0.0, kept[-1] if kept.size else 0.0], dtype="<f8").tobytes())
    digest.update(float64_bytes(values, valid, everything))
    return digest.hexdigest()


#: a trace summing up to this many columns has a part for every group of two or more of its columns
#: short of all of them (2**k - k - 2 groups: 3 for three columns, 25 for five)
ALL_GROUPS_UP_TO = 5
#: and up to this many, a part for every pair of its columns (66 pairs for twelve); beyond, its columns alone
PAIRS_UP_TO = 12


def column_groups(count: int) -> list[tuple[int, ...]]:
    """The columns each part of a sum of ``count`` columns adds up, in the order its parts are kept.

    Every column alone first (part ``i`` is column ``i``), then groups of two or more columns
    short of the whole sum, smallest first: another workload's series dealt out between two
    new columns of a sum is no column alone and not the sum, but it is one of these groups
    (red team, 2026-12-06, round 14). Past :data:`ALL_GROUPS_UP_TO` columns only pairs, and past
    :data:`PAIRS_UP_TO` none: the number of groups doubles with every column.
    """
    from itertools import combinations

    singles: list[tuple[int, ...]] = [(i,) for i in range(count)]
    if count < 3:
        return singles
    if count > PAIRS_UP_TO:
        return singles
    sizes = range(2, count) if count <= ALL_GROUPS_UP_TO else range(2, 3)
    return singles + [group for size in sizes for group in combinations(range(count), size)]


def group_label(columns: list[str], index: int) -> str:
    """'column X' or 'columns X and Y' (named as the spec names them) for part ``index`` of a sum of ``columns``."""
    groups = column_groups(len(columns))
    if not columns or index >= len(groups):
        return f"column #{index + 1}"
    names = [columns[i] for i in groups[index]]
    if len(names) == 1:
        return f"column {names[0]}"
    return f"columns {', '.join(names[:-1])} and {names[-1]}"


def part_label(columns: list[str], labels: list[str] | None, index: int) -> str:
    """Part ``index`` of a sum, for messages: 'series L' when the parts are series with labels, else
    :func:`group_label` of the spec's ``columns``."""
    if labels and index < len(labels):
        return f"series {labels[index]}"
    return group_label(columns, index)
