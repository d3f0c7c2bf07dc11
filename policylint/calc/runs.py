"""Runs of steps: a bottom-k sketch of a series' 16-step runs, and the pairs of sketches that meet.

A near copy of a series - a few samples changed, a constant added, the same samples at
other times - keeps most of its runs of consecutive steps; two measured series of noisy
demand share almost none. The integrity stage compares workloads' traces with these
sketches (PL972, :mod:`policylint.measure.integrity.copies`), and the readers the series
of one sum (:func:`policylint.readers.grid.refuse_repeated`). Pure arrays: no I/O.
"""

from __future__ import annotations

import bisect
import itertools
import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from policylint.calc.positions import kths

if TYPE_CHECKING:
    import numpy as np


#: Steps (between consecutive samples) in one run of a trace compared between traces (a near copy shares most of its runs).
RUN_SAMPLES = 16
#: Fewest steps that change the value a run needs to take part: flat or nearly flat runs are alike in every trace.
RUN_MIN_CHANGES = 8
#: Runs kept per trace (the smallest hashes: a bottom-k sample, so two traces' samples are comparable).
SKETCH_SIZE = 128
#: Fewest runs held once a trace needs before its copies are judged.
SKETCH_MIN = 32
#: Runs sampled by hash (the runs below the hash at which this many are expected) for the share that repeats.
RUN_SAMPLE = 1024
#: Fewest distinct nonzero steps a run needs before its repetition is judged (a varied run).
REPEAT_MIN_DISTINCT = 5
_RUN_MULTIPLIERS: np.ndarray | None = None


def judged_samples(values: np.ndarray, valid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(values, valid) as every integrity figure reads a series: non-finite samples invalid, invalid ones zeroed.

    Zeroed so that no arithmetic on them can warn; they take part in no figure.
    """
    import numpy as np

    values = np.asarray(values, dtype=np.float64)
    valid = np.asarray(valid, dtype=bool) & np.isfinite(values)
    return np.where(valid, values, 0.0), valid


class Runs(NamedTuple):
    """A trace's informative 16-step runs (:func:`informative_runs`): what its run figures are read from."""

    #: the steps between consecutive samples, values to a thousandth, modulo 2**64 (a fall is its two's complement)
    steps: np.ndarray
    #: where each informative run starts (its first step), ascending
    starts: np.ndarray
    #: the 53-bit hash of each, in the order of ``starts``
    hashes: np.ndarray


def informative_runs(values: np.ndarray, valid: np.ndarray) -> Runs | None:
    """The trace's informative 16-step runs and their hashes: one definition for :func:`run_sketch` and :func:`repeated_runs`.

    A run is :data:`RUN_SAMPLES` consecutive steps between valid samples (the rises and
    falls between 17 of them, values to a thousandth), at least :data:`RUN_MIN_CHANGES` of
    which change the value. Runs of steps rather than of values: the hashes are blind to a
    constant added to the whole trace. None when the trace holds fewer than
    :data:`SKETCH_MIN` such runs.
    """
    import numpy as np

    if values.size <= RUN_SAMPLES:
        return None
    valid = np.asarray(valid, dtype=bool)
    every = bool(valid.all())
    with np.errstate(over="ignore", invalid="ignore"):
        scaled = values * 1000.0  # a new array, rounded in place
        np.round(scaled, out=scaled)
        q = (scaled if every else np.where(valid, scaled, 0.0)).astype(np.int64).view(np.uint64)
        steps = q[1:] - q[:-1]  # modulo 2**64: a fall is hashed as its two's complement
    runs = steps.size - RUN_SAMPLES + 1
    # per run, by running sums: steps touching an invalid sample in it, and steps that move
    if every:
        full = np.ones(runs, dtype=bool)
    else:
        broken = np.concatenate(([0], np.cumsum(~(valid[1:] & valid[:-1]), dtype=np.int64)))
        full = broken[RUN_SAMPLES:] == broken[:runs]
    moved = np.concatenate(([0], np.cumsum(steps != 0, dtype=np.int64)))
    changes = moved[RUN_SAMPLES:] - moved[:runs]
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
            h = steps[:runs] * mult[0]
            term = np.empty_like(h)
            for j in range(1, RUN_SAMPLES):
                np.multiply(steps[j : j + runs], mult[j], out=term)
                h += term
            h = h[keep]
        else:
            h = steps[keep] * mult[0]
            for j in range(1, RUN_SAMPLES):
                h += steps[keep + j] * mult[j]
        h ^= h >> np.uint64(31)
        h *= np.uint64(0x9E3779B97F4A7C15)
        h ^= h >> np.uint64(29)
    h >>= np.uint64(11)  # 53 bits: exact in JSON and in any reader of it
    return Runs(steps, keep, h)


def run_sketch(values: np.ndarray, valid: np.ndarray) -> list[int] | None:
    """Identity: the smallest hashes of the trace's informative 16-step runs (a bottom-k sketch).

    The runs are :func:`informative_runs`'. Two traces that share most runs share most of
    their smallest hashes: a copy with a few samples edited loses only the runs around
    each edit, whatever file it is in, whatever dates it carries and whatever offset it
    was given. Measured series of noisy demand share almost none.

    Only runs the trace holds once are sketched. A run a trace repeats is a pattern of its
    own (a poller toggling 0, 1, 0, 1 at nearly every sample, a cron job), and two such
    traces measured apart share those patterns by nature, not by copying: the second red
    team found two independent 98%-toggling pollers sharing 73% of their sketched runs.
    None when the trace holds fewer than :data:`SKETCH_MIN` runs once.
    """
    return run_figures(values, valid)[0]


def run_figures(values: np.ndarray, valid: np.ndarray) -> tuple[list[int] | None, float | None, int | None]:
    """(:func:`run_sketch`, :func:`repeated_runs`'s share and runs judged) of one trace, its runs hashed once."""
    runs = informative_runs(values, valid)
    if runs is None:
        return None, None, None
    sample, order = _sample(runs.hashes)
    share, judged = repeated_runs(runs, sample, order)
    return _bottom_singles(runs.hashes, sample, order), share, judged


def _sample(h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The runs whose hashes fall below the bound at which :data:`RUN_SAMPLE` are expected: (their positions in ``h``, ascending by hash).

    Every run of a trace, whole, when it holds no more than twice that many. A run and
    every repeat of it have one hash, so they are in the sample or out of it together:
    the share of the sample's runs that repeat estimates the trace's (consistent
    sampling), and its smallest hashes are the trace's.
    """
    import numpy as np

    if h.size <= 2 * RUN_SAMPLE:
        at = np.arange(h.size)
    else:
        at = np.flatnonzero(h < np.uint64(int(2**53 * RUN_SAMPLE / h.size)))
    return at, at[np.argsort(h[at], kind="stable")]


def repeated_runs(runs: Runs, sample: np.ndarray, order: np.ndarray) -> tuple[float | None, int]:
    """Identity: (share of the varied sampled runs whose hash occurs twice or more in the trace, runs judged).

    A run is varied when its steps take at least :data:`REPEAT_MIN_DISTINCT` distinct
    nonzero values: a poller toggling 0/1, a count moving in one step size, a counter
    quantised to 0/1/2 repeat their few patterns by nature and are not judged. A measured
    noisy series almost never repeats a varied run; a block pasted over the window repeats
    every run inside it, at whatever lag. ``sample`` and ``order`` are :func:`_sample`'s.
    Share None when no run is judged.
    """
    import numpy as np

    if order.size == 0:
        return None, 0
    # the steps of each sampled run, in hash order, sorted along the run: its distinct nonzero values
    rows = runs.steps[runs.starts[order][:, None] + np.arange(RUN_SAMPLES)]
    rows.sort(axis=1)  # unsigned: a run's zero steps come first
    new = np.empty(rows.shape, dtype=bool)  # a value other than the one before (the first: other than zero)
    np.not_equal(rows[:, 0], 0, out=new[:, 0])
    np.not_equal(rows[:, 1:], rows[:, :-1], out=new[:, 1:])
    varied = np.count_nonzero(new, axis=1) >= REPEAT_MIN_DISTINCT
    judged = int(np.count_nonzero(varied))
    if judged == 0:
        return None, 0
    ordered = runs.hashes[order]
    again = np.zeros(ordered.size, dtype=bool)  # equal to the one before or the one after
    np.equal(ordered[1:], ordered[:-1], out=again[1:])
    again[:-1] |= again[1:].copy()
    return int(np.count_nonzero(again & varied)) / judged, judged


def _bottom_singles(h: np.ndarray, sample: np.ndarray, order: np.ndarray) -> list[int] | None:
    """The :data:`SKETCH_SIZE` smallest hashes of runs the trace holds once (None when fewer than :data:`SKETCH_MIN`).

    The smallest few hundred hold every occurrence of each value below the next one, so
    they tell which of those occur once whenever enough do; else all are sorted.
    """
    cut = 4 * SKETCH_SIZE
    if h.size > 2 * cut:
        head = h[order] if order.size > cut else _smallest(h, cut)
        pivot = head[cut]
        below = _singles(head[:cut])
        below = below[below < pivot]
        if below.size >= SKETCH_SIZE:
            return [int(x) for x in below[:SKETCH_SIZE]]
    once = _singles(h)
    if once.size < SKETCH_MIN:
        return None
    return [int(x) for x in once[:SKETCH_SIZE]]


def _smallest(h: np.ndarray, cut: int) -> np.ndarray:
    """``h`` (53-bit hashes, more than ``cut`` of them) with its ``cut`` + 1 smallest first: ``np.partition(h, cut)`` where it matters.

    Element ``cut`` is the (``cut`` + 1)-th smallest and the elements before it are the
    ``cut`` smallest, in some order. The hashes are spread evenly over 53 bits, so those
    under a bound at which about ``2 * cut`` are expected are almost always more than
    ``cut``: then they are the smallest of ``h``, and sorting them alone gives the same
    elements (a comparison over ``h`` and a sort of a thousand, against a partition of all).
    Otherwise ``h`` is partitioned.
    """
    import numpy as np

    bound = np.uint64(int(2**53 * min(1.0, 2 * cut / h.size)))
    head = h[h < bound]
    if head.size > cut:
        head.sort()
        return head
    return np.partition(h, kths([cut], h.size))


def _singles(h: np.ndarray) -> np.ndarray:
    """The values that occur exactly once in ``h``, ascending (by one sort)."""
    import numpy as np

    ordered = np.sort(h)
    if ordered.size < 2:
        return ordered
    differs = ordered[1:] != ordered[:-1]
    alone = np.ones(ordered.size, dtype=bool)
    alone[1:] &= differs  # not equal to the one before
    alone[:-1] &= differs  # nor to the one after
    return ordered[alone]


def _distinct(h: np.ndarray) -> np.ndarray:
    """The distinct values of ``h``, ascending: ``np.unique``'s answer, by one sort (its hashing is ten times slower on 26,000 integers)."""
    import numpy as np

    ordered = np.sort(h)
    first = np.ones(ordered.size, dtype=bool)
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    return ordered[first]


def _distinct_rows(rows: np.ndarray) -> np.ndarray:
    """The distinct rows of a 2-D integer array, in lexicographic order: ``np.unique(rows, axis=0)``.

    By one sort, like :func:`_distinct`: ``np.unique`` imports ``numpy.ma`` (10 ms of a hook run)
    to ask whether its argument is masked.
    """
    import numpy as np

    if rows.shape[0] < 2:
        return rows
    ordered = rows[np.lexsort(rows.T[::-1])]
    first = np.ones(ordered.shape[0], dtype=bool)
    np.any(ordered[1:] != ordered[:-1], axis=1, out=first[1:])
    return ordered[first]


#: A run sketch as the steps hand it over: its numbers, or (a neighbour taken from the repository
#: index, :func:`policylint.engine.index_store.packed_run_sketch`) their bytes as 8-byte little-endian
#: signed integers, which hold the same numbers in a quarter of the memory.
Sketch = Sequence[int] | bytes


def sketch_values(sketch: Sketch) -> Sequence[int]:
    """The numbers of ``sketch``, in order, whichever form it has."""
    if isinstance(sketch, bytes):
        return struct.unpack(f"<{len(sketch) // 8}q", sketch)
    return sketch


def _count(sketch: Sketch | None) -> int:
    if not sketch:
        return 0
    return len(sketch) // 8 if isinstance(sketch, bytes) else len(sketch)


def sketch_similarity(a: Sequence[int], b: Sequence[int]) -> float:
    """Estimated share of runs two traces have in common (Jaccard), from their bottom-k sketches."""
    return _set_similarity(frozenset(a), frozenset(b))


def _set_similarity(sa: frozenset[int], sb: frozenset[int]) -> float:
    """:func:`sketch_similarity` of two sketches as sets."""
    k = min(len(sa), len(sb))
    if k == 0:
        return 0.0
    both = sa & sb
    if not both:
        return 0.0  # no run in common: none among the k smallest either
    # the k smallest runs of the union are distinct: how many of them both name, counted in C
    return len(both.intersection(sorted(sa | sb)[:k])) / k


def _sorted_similarity(sa: frozenset[int], sb: frozenset[int], la: Sequence[int], lb: Sequence[int]) -> float:
    """:func:`_set_similarity` of two sketches given also as their sorted distinct values (``la = sorted(sa)``).

    The same number, without building and sorting the union per pair: a run both name is
    among the k smallest of the union when fewer than k + 1 values of the union are at most
    it, and that count is the values of each at most it (two bisections) less the shared
    ones at most it, counted once. The count grows with the run, so the first shared run past
    k ends the count. A pool of thousands of workloads whose quiet traces share a few runs by
    chance compares tens of thousands of pairs; this is what each costs.
    """
    k = min(len(sa), len(sb))
    if k == 0:
        return 0.0
    both = sa & sb
    if not both:
        return 0.0
    kept = 0
    for shared, run in enumerate(sorted(both), 1):
        if bisect.bisect_right(la, run) + bisect.bisect_right(lb, run) - shared > k:
            break
        kept += 1
    return kept / k


#: A run named by more members than this says nothing about copies (a plain pattern many traces share)
RUN_GROUP_MAX = 64


def shared_run_pairs(sketches: Sequence[Sketch | None]) -> set[tuple[int, int]]:
    """The pairs (i, j), i <= j, of sketches sharing a run that at most :data:`RUN_GROUP_MAX` members name.

    A member naming a run twice counts twice (and pairs with itself), as an index of
    runs to members would count it. Whole arrays: the runs of every sketch in one
    array, sorted once, each group of equal runs paired by its size. Sketches of
    anything but plain ``int`` (or past 64 bits) take :func:`_shared_run_pairs_plain`.
    """
    import numpy as np

    lengths = [_count(s) for s in sketches]
    total = sum(lengths)
    if total == 0:
        return set()
    present = [s for s in sketches if s]
    lists = [s for s in present if not isinstance(s, bytes)]
    if not set(map(type, itertools.chain.from_iterable(lists))) <= {int}:
        return _shared_run_pairs_plain(sketches)
    try:
        if len(lists) == len(present):
            runs = np.fromiter(itertools.chain.from_iterable(present), dtype=np.int64, count=total)
        else:  # packed sketches read as they are; the runs in the same order as above
            runs = np.concatenate([
                np.frombuffer(s, dtype="<i8").astype(np.int64) if isinstance(s, bytes)
                else np.fromiter(s, dtype=np.int64, count=len(s))
                for s in present
            ])
    except (OverflowError, ValueError):
        return _shared_run_pairs_plain(sketches)
    n = len(sketches)
    order = np.argsort(runs)
    runs.sort()  # in place: the same sorted values as runs[order], without a third array of them
    # positions equal to the next one; a group of equal runs is a stretch of them plus its last position
    same = np.concatenate(([False], runs[1:] == runs[:-1], [False]))
    del runs
    edges = np.flatnonzero(same[1:] != same[:-1])
    del same
    starts, sizes = edges[0::2], edges[1::2] - edges[0::2] + 1
    first_run = np.cumsum([0, *lengths[:-1]], dtype=np.int64)  # where each sketch's runs begin
    codes: list[np.ndarray] = []
    for size in _distinct(sizes[sizes <= RUN_GROUP_MAX]).tolist():
        at = starts[sizes == size]
        # the members naming each run: the sketch each sorted position came from
        owners = np.searchsorted(first_run, order[at[:, None] + np.arange(size)], side="right") - 1
        groups = np.sort(owners, axis=1)
        if size > 2:
            groups = _distinct_rows(groups)  # the copies of one trace share most runs: each group once
        first, second = np.triu_indices(size, 1)
        codes.append((groups[:, first] * n + groups[:, second]).ravel())
    if not codes:
        return set()
    found = _distinct(np.concatenate(codes))
    return set(zip((found // n).tolist(), (found % n).tolist()))


def _shared_run_pairs_plain(sketches: Sequence[Sketch | None]) -> set[tuple[int, int]]:
    """:func:`shared_run_pairs` by an index of runs to members: any hashable runs."""
    by_run: dict[Any, list[int]] = {}
    for i, sketch in enumerate(sketches):
        for x in sketch_values(sketch) if sketch else ():
            by_run.setdefault(x, []).append(i)
    pairs: set[tuple[int, int]] = set()
    groups = {tuple(members) for members in by_run.values() if 1 < len(members) <= RUN_GROUP_MAX}
    for group in groups:
        for j, a in enumerate(group):
            for b in group[j + 1 :]:
                pairs.add((a, b) if a < b else (b, a))
    return pairs


