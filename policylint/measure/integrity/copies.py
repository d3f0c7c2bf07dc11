"""Identity between traces: the same evidence counted twice, as a copy or a near copy.

Fingerprints recognise a byte-identical copy under another name, the same samples
re-encoded in another format, a copy moved in time (values alone) and a copy scaled or
shifted (its rises and falls). A run sketch per trace finds a near copy with a few samples
edited; :func:`copy_facts` compares the sketches across the model.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import struct
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Union

from policylint.measure.integrity.days import MIN_DAY_CHANGES

if TYPE_CHECKING:
    import numpy as np


def fingerprint(times: np.ndarray, values: np.ndarray, valid: np.ndarray, step_seconds: float) -> str:
    """Identity: the SHA-256 of the valid samples (times and values as float64) and the step."""
    import numpy as np

    digest = hashlib.sha256(b"policylint-series/1\0")
    digest.update(np.float64(step_seconds).tobytes())
    everything = bool(np.all(valid))
    digest.update(_float64_bytes(times, valid, everything))
    digest.update(_float64_bytes(values, valid, everything))
    return digest.hexdigest()


def _float64_bytes(a: np.ndarray, valid: np.ndarray, everything: bool) -> memoryview:
    """The valid samples of ``a`` as contiguous little-endian float64, hashed in place (no copy when all are valid)."""
    import numpy as np

    picked = a if everything and valid.dtype == bool and a.shape == valid.shape else a[valid]
    return np.ascontiguousarray(picked, dtype="<f8").data.cast("B")


def values_fingerprint(values: np.ndarray, valid: np.ndarray) -> str:
    """Identity: the SHA-256 of the valid samples' values alone (a copy moved in time keeps it)."""
    import numpy as np

    digest = hashlib.sha256(b"policylint-values/1\0")
    digest.update(_float64_bytes(values, valid, bool(np.all(valid))))
    return digest.hexdigest()


def shape_fingerprint(values: np.ndarray, valid: np.ndarray, step_seconds: float) -> str | None:
    """Identity: the SHA-256 of sign(difference) between consecutive valid samples.

    A copy multiplied by a factor of one or more (rounded or not), or shifted by
    a constant, rises and falls at exactly the same samples; two measured series
    with noise never do over thousands of changes. Only series changing at least
    :data:`~policylint.measure.integrity.days.MIN_DAY_CHANGES` times a day on average get one.
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
    digest.update(np.ascontiguousarray(signs).data.cast("B"))
    return digest.hexdigest()


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
        below = _distinct(head[:cut])
        below = below[below < pivot]
        if below.size >= SKETCH_SIZE:
            return [int(x) for x in below[:SKETCH_SIZE]]
    distinct = _distinct(h)
    if distinct.size < SKETCH_MIN:
        return None
    return [int(x) for x in distinct[:SKETCH_SIZE]]


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
#: index, :func:`policylint.engine.index_store.packed_sketch`) their bytes as 8-byte little-endian
#: signed integers, which hold the same numbers in a quarter of the memory.
Sketch = Union[Sequence[int], bytes]


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
    paths = [e[1] for e in entries]
    return _near_copies([e[0] for e in entries], [e[3] for e in entries], paths.__getitem__, skip, values_of)


def _near_copies(
    names: Sequence[str],
    sketches: Sequence[Sketch | None],
    path_of: Callable[[int], str | None],
    skip: set[frozenset[str]] | None,
    values_of: dict[str, str | None] | None,
) -> dict[str, tuple[str, float]]:
    """:func:`near_copies` of entries given column by column; ``path_of(i)`` is asked only for a pair's members."""
    skip = skip or set()
    pairs = shared_run_pairs(sketches)
    # a copy too plain for a sketch (fewer than SKETCH_MIN distinct runs) is found by its values
    by_values: dict[str, list[int]] = {}
    if values_of:
        for i, name in enumerate(names):
            printed = values_of.get(name)
            if printed:
                by_values.setdefault(printed, []).append(i)
    for members in by_values.values():
        for j, a in enumerate(members):
            for b in members[j + 1 :]:
                pairs.add((a, b) if a < b else (b, a))
    out: dict[str, tuple[str, float]] = {}
    sets: dict[int, frozenset[int]] = {}  # each sketch as a set once, not once per pair
    for a, b in sorted(pairs):
        na, nb = names[a], names[b]
        if na == nb:
            continue
        pa = path_of(a)
        if (pa is not None and pa == path_of(b)) or frozenset((na, nb)) in skip:
            continue
        sa, sb = sketches[a], sketches[b]
        same = values_of is not None and values_of.get(na) is not None and values_of.get(na) == values_of.get(nb)
        if same:
            sim = 1.0
        elif sa and sb:
            if a not in sets:
                sets[a] = frozenset(sketch_values(sa))
            if b not in sets:
                sets[b] = frozenset(sketch_values(sb))
            sim = _set_similarity(sets[a], sets[b])
        else:
            continue
        first, second = sorted((na, nb))
        if second not in out or sim > out[second][1]:
            out[second] = (first, sim)
    return out


def copy_facts(
    workloads: Sequence[Any], stored: dict[str, Any], facts: Mapping[str, Mapping[str, Any]]
) -> dict[str, dict[str, Any]]:
    """The near-copy facts of every workload (:func:`near_copies` over the whole model), by workload.

    ``workloads`` are the model's workloads, ``stored`` their measured facts by name
    (``.integrity`` holds the run sketch), ``facts`` the facts of their views by name.
    A workload judged without a partner gets ``near_copy_similarity`` 0; one with a
    partner all four ``near_copy_*`` facts. Pairs PL111 already reports
    (``double_counted_with``) are left to it. A pair citing one file by one path is an
    open citation and is not judged; the same file reached by another path (a symlink,
    a linked folder) is. A trace's path is made absolute only for the members of a pair
    (the only place it is compared).
    """
    names: list[str] = []
    refs: list[Any] = []
    sketches: list[Sketch | None] = []
    for w in sorted(workloads, key=lambda w: w.name):
        view, measured = facts.get(w.name), stored.get(w.name)
        if view is None or measured is None:
            continue
        ref = w.measurements.get("concurrency")
        if ref is not None and ref.path is not None:
            text = os.fspath(ref.path)
            if not isinstance(text, str) or "\0" in text:
                os.path.realpath(ref.path)  # resolved (and raising) up front, as every path once was
        sketch = (measured.integrity or {}).get("run_sketch")
        names.append(w.name)
        refs.append(ref)
        sketches.append(sketch if isinstance(sketch, (list, bytes)) else None)
    resolved: dict[int, str | None] = {}

    def path_of(i: int) -> str | None:
        # The path as the documents write it (made absolute, never resolved): two workloads citing
        # one file by the same path are an open citation a reviewer sees; the same file reached
        # through a link or a linked folder under another name is not, and is judged as a copy.
        if i not in resolved:
            ref = refs[i]
            resolved[i] = os.path.abspath(ref.path) if ref is not None and ref.path is not None else None
        return resolved[i]

    # a workload PL111 reports as a copy has its finding already; it stays a partner for others
    reported: set[str] = set()
    skip: set[frozenset[str]] = set()
    values_of: dict[str, str | None] = {}
    for name, view in facts.items():
        partner = view.get("double_counted_with")
        if partner:
            reported.add(name)
            skip.add(frozenset((name, str(partner))))
        # by values alone only when the series says enough to be recognised (as PL111 does)
        values_of[name] = view.get("values_fingerprint") if (view.get("value_changes") or 0) >= 10 else None
    out: dict[str, dict[str, Any]] = {}
    for name, sketch in zip(names, sketches):
        if (sketch or values_of.get(name)) and name not in reported:
            out[name] = {"near_copy_similarity": 0.0}  # judged: no other trace shares a run
    if not names:
        return out
    trace = {n: ("" if r is None else r.display) for n, r in zip(names, refs)}
    for name, (other, similarity) in _near_copies(names, sketches, path_of, skip, values_of).items():
        if name in reported:
            continue
        out[name] = {
            "near_copy_of": other,
            "near_copy_similarity": similarity,
            "near_copy_trace": trace.get(other),
            "near_copy_pool": facts[other].get("pool"),
        }
    return out
