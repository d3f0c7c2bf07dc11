"""Identity between traces: the same evidence counted twice, as a copy or a near copy.

Fingerprints recognise a byte-identical copy under another name, the same samples
re-encoded in another format, a copy moved in time (values alone) and a copy scaled or
shifted (its rises and falls). A sketch of each trace's runs of steps finds a near copy with
a few samples edited, offset or not; :func:`copy_facts` compares the sketches across the model.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from policylint.calc.runs import (
    Sketch,
    _set_similarity,
    shared_run_pairs,
    sketch_values,
)
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
    open_citation: Callable[[int, int], bool] | None = None,
) -> dict[str, tuple[str, float]]:
    """:func:`near_copies` of entries given column by column; ``path_of(i)`` is asked only for a pair's members.

    A pair citing one file by one path is left alone when ``open_citation(a, b)`` says it is an open
    one (None: always).
    """
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
        if (pa is not None and pa == path_of(b) and (open_citation is None or open_citation(a, b))) or frozenset((na, nb)) in skip:
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
    open citation and is not judged when both workloads are in one pool (PL111 judges
    those) or either declares a share; from two pools without a share it is judged: each
    pool buys that demand. The same file reached by another path (a symlink, a linked
    folder) is judged too. A trace's path is made absolute only for the members of a pair
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
    def open_citation(a: int, b: int) -> bool:
        fa, fb = facts[names[a]], facts[names[b]]
        return fa.get("pool") == fb.get("pool") or fa.get("measurement_share") is not None or fb.get("measurement_share") is not None

    for name, (other, similarity) in _near_copies(names, sketches, path_of, skip, values_of, open_citation).items():
        if name in reported:
            continue
        out[name] = {
            "near_copy_of": other,
            "near_copy_similarity": similarity,
            "near_copy_trace": trace.get(other),
            "near_copy_pool": facts[other].get("pool"),
        }
    return out
