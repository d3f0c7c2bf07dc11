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

from policylint.calc.prints import float64_bytes
from policylint.calc.prints import values_fingerprint as values_fingerprint  # its home before calc.prints
from policylint.calc.runs import (
    Sketch,
    _sorted_similarity,
    shared_run_pairs,
    sketch_values,
)
from policylint.calc.prints import shape_print

if TYPE_CHECKING:
    from pathlib import Path

    import numpy as np


#: counters for tests: runs whose near-copy facts came from the cache entry, and runs that computed them
STATS: dict[str, int] = {"kept": 0, "computed": 0}


def fingerprint(times: np.ndarray, values: np.ndarray, valid: np.ndarray, step_seconds: float) -> str:
    """Identity: the SHA-256 of the valid samples (times and values as float64) and the step."""
    import numpy as np

    digest = hashlib.sha256(b"policylint-series/1\0")
    digest.update(np.float64(step_seconds).tobytes())
    everything = bool(np.all(valid))
    digest.update(float64_bytes(times, valid, everything))
    digest.update(float64_bytes(values, valid, everything))
    return digest.hexdigest()


def shape_fingerprint(values: np.ndarray, valid: np.ndarray, step_seconds: float) -> str | None:
    """Identity: the SHA-256 of sign(difference) between consecutive valid samples (:func:`policylint.calc.prints.shape_print`).

    A copy multiplied by a factor of one or more (rounded or not), or shifted by
    a constant, rises and falls at exactly the same samples; two measured series
    with noise never do over thousands of changes.
    """
    return shape_print(values, valid, step_seconds)


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
    # each sketch as a set and as its sorted values once, not once per pair
    sets: dict[int, tuple[frozenset[int], list[int]]] = {}
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
            for i, sketch in ((a, sa), (b, sb)):
                if i not in sets:
                    as_set = frozenset(sketch_values(sketch))
                    sets[i] = (as_set, sorted(as_set))
            (set_a, sorted_a), (set_b, sorted_b) = sets[a], sets[b]
            sim = _sorted_similarity(set_a, set_b, sorted_a, sorted_b)
        else:
            continue
        first, second = sorted((na, nb))
        if second not in out or sim > out[second][1]:
            out[second] = (first, sim)
    return out


def copy_facts(
    workloads: Sequence[Any],
    stored: dict[str, Any],
    facts: Mapping[str, Mapping[str, Any]],
    kept: tuple[Path, Path] | None = None,
) -> dict[str, dict[str, Any]]:
    """The near-copy facts of every workload (:func:`near_copies` over the whole model), by workload.

    ``workloads`` are the model's workloads, ``stored`` their measured facts by name
    (``.integrity`` holds the run sketch), ``facts`` the facts of their views by name.
    A workload judged without a partner gets ``near_copy_similarity`` 0; one with a
    partner all four ``near_copy_*`` facts. Pairs PL111 already reports
    (``double_counted_with``) are left to it. A pair citing one file by one path is an
    open citation and is not judged when either declares a share; without one it is judged
    like any pair, in one pool or two: two reads of one file that PL111 leaves alone (rows or
    columns apart, :func:`policylint.measure.reading.reads_may_overlap`) may still hold a near
    copy (rows of one workload pasted under another's key, a few samples edited; red team,
    2026-12-07). The same file reached by another path (a symlink, a linked folder) is judged too. A trace's path is made absolute only for the members of a pair
    (the only place it is compared).

    With ``kept`` (the cache folder and the repository root) the answer is kept in one sealed
    entry per repository under a digest of everything it is made from (:func:`_inputs_digest`),
    and taken from there while that digest holds: a pool of thousands of quiet traces pairs
    tens of thousands of workloads by chance runs, and a pre-commit run that changed no trace
    would compare them all again.
    """
    names: list[str] = []
    refs: list[Any] = []
    sketches: list[Sketch | None] = []
    columns: dict[str, list[str]] = {}  # the columns a trace sums, by workload, as its spec names them
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
        if view.get("part_sketches"):
            columns[w.name] = summed_columns(w.spec)
    entry = _KeptCopies(kept[0], kept[1]) if kept is not None else None
    digest = _inputs_digest(names, refs, sketches, facts, columns) if entry is not None else None
    if entry is not None and digest is not None:
        found = entry.read(digest)
        if found is not None:
            STATS["kept"] += 1
            return found
    STATS["computed"] += 1
    out = _copy_facts(names, refs, sketches, facts, columns)
    if entry is not None and digest is not None:
        entry.write(digest, out)
    return out


def summed_columns(spec: Any) -> list[str]:
    """The value columns a workload's concurrency trace sums, as its spec names them (empty when it names none)."""
    trace: Any = ((spec.get("concurrency") or {}).get("trace") or {}) if isinstance(spec, dict) else {}
    found = trace.get("columns") if isinstance(trace, dict) else None
    return [str(c) for c in found] if isinstance(found, list) else []


def _copy_facts(
    names: list[str],
    refs: list[Any],
    sketches: list[Sketch | None],
    facts: Mapping[str, Mapping[str, Any]],
    columns: Mapping[str, list[str]] | None = None,
) -> dict[str, dict[str, Any]]:
    """:func:`copy_facts` of the workloads it judges, given column by column (names in order)."""
    from policylint.calc.prints import part_label

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
        return fa.get("measurement_share") is not None or fb.get("measurement_share") is not None

    for name, (other, similarity) in _near_copies(names, sketches, path_of, skip, values_of, open_citation).items():
        if name in reported:
            continue
        out[name] = {
            "near_copy_of": other,
            "near_copy_similarity": similarity,
            "near_copy_trace": trace.get(other),
            "near_copy_pool": facts[other].get("pool"),
        }
    for name, (other, similarity, column) in _column_copies(names, sketches, facts, path_of, skip, reported).items():
        if similarity > out.get(name, {}).get("near_copy_similarity", 0.0):
            held = (columns or {}).get(name, [])
            out[name] = {
                "near_copy_of": other,
                "near_copy_similarity": similarity,
                "near_copy_trace": trace.get(other),
                "near_copy_pool": facts[other].get("pool"),
                "near_copy_part": f"{_part_named(part_label(held, facts[name].get('part_labels'), column))} of its"
                                  " concurrency trace",
            }
    return out


def _column_copies(
    names: list[str],
    sketches: list[Sketch | None],
    facts: Mapping[str, Mapping[str, Any]],
    path_of: Callable[[int], str | None],
    skip: set[frozenset[str]],
    reported: set[str],
) -> dict[str, tuple[str, float, int]]:
    """Workload -> (workload whose whole trace one column of its trace repeats, similarity, that column's index).

    A trace that sums several columns is a sum: its own sketch shares few runs with any one
    trace, so another workload's series pasted in as an extra column with a sample edited
    passed every near-copy test (red team, 2026-12-06, round 12: +23 GPUs; an exact column is
    PL111's). Each summed column's sketch (``part_sketches``) is compared with every other
    workload's whole sketch, pairs sharing a run only, as :func:`near_copies` compares whole
    traces; the workload whose column it is carries the finding. A column of the same file
    another workload cites is an open citation (PL111 judges it exactly), and pairs PL111
    reports are left to it.
    """
    n = len(names)
    owners: list[tuple[int, int]] = []  # (workload index, column index) per part sketch
    parts: list[Sketch] = []
    for i, name in enumerate(names):
        view = facts.get(name)
        got = view.get("part_sketches") if view is not None and name not in reported else None
        if not isinstance(got, list):
            continue
        for c, sketch in enumerate(got):
            if isinstance(sketch, list) and sketch:
                owners.append((i, c))
                parts.append(sketch)
    if not parts:
        return {}
    out: dict[str, tuple[str, float, int]] = {}
    every: list[Sketch | None] = [*sketches, *parts]
    for a, b in sorted(shared_run_pairs(every)):
        if (a < n) == (b < n):
            continue  # whole with whole (near_copies), or part with part
        whole, part = (a, b - n) if a < n else (b, a - n)
        owner, column = owners[part]
        mine, theirs = names[owner], names[whole]
        if mine == theirs or frozenset((mine, theirs)) in skip:
            continue
        if path_of(owner) is not None and path_of(owner) == path_of(whole):
            continue
        other = sketches[whole]
        if not other:
            continue
        sa, sb = frozenset(sketch_values(parts[part])), frozenset(sketch_values(other))
        similarity = _sorted_similarity(sa, sb, sorted(sa), sorted(sb))
        if similarity > out.get(mine, ("", 0.0, 0))[1]:
            out[mine] = (theirs, similarity, column)
    return out


def _part_named(label: str) -> str:
    """A part of a sum as the subject of PL972's message: 'column X', or 'sum of columns X and Y'."""
    return f"sum of {label}" if label.startswith("columns ") else label


#: the facts of a workload's view that :func:`_copy_facts` reads
_VIEW_READS = ("double_counted_with", "values_fingerprint", "value_changes", "pool", "measurement_share", "part_sketches",
               "part_labels")


def _inputs_digest(
    names: list[str],
    refs: list[Any],
    sketches: list[Sketch | None],
    facts: Mapping[str, Mapping[str, Any]],
    columns: Mapping[str, list[str]] | None = None,
) -> str | None:
    """SHA-256 of everything :func:`_copy_facts` reads, exactly; None when a value has no exact form (:func:`quick_bytes`).

    Per judged workload, in name order: its name, its trace's path as written and as shown,
    and its run sketch (its numbers, or the packed bytes the repository index keeps, told
    apart). Per view, in name order: the facts it reads (:data:`_VIEW_READS`). The columns each
    summing trace names (a near copy's part is told by its column). And the working folder,
    from which a relative path is made absolute.
    """
    from policylint.cache.exact import quick_bytes

    digest = hashlib.sha256(b"policylint-near-copies/2\0")

    def part(tag: bytes, value: Any) -> bool:
        """Digest ``value``'s exact bytes after ``tag`` and their length; False when it has none."""
        held = quick_bytes(value)
        if held is None:
            return False
        digest.update(b"\0%s%d:" % (tag, len(held)))
        digest.update(held)
        return True

    if not part(b"h", [os.getcwd(), len(names)]):
        return None
    for name, ref, sketch in zip(names, refs, sketches):
        path = None if ref is None or ref.path is None else os.fspath(ref.path)
        if not part(b"w", [name, path, None if ref is None else ref.display]):
            return None
        packed = _packed(sketch)
        if packed is not None:
            digest.update(b"\0b%d:" % len(packed))
            digest.update(packed)
        elif not part(b"l", sketch):  # None, or numbers that do not pack (told apart by their types)
            return None
    if not part(b"c", sorted((columns or {}).items())):
        return None
    for name in sorted(facts):
        view = facts[name]
        if not part(b"v", [name, *(view.get(key) for key in _VIEW_READS)]):
            return None
    return digest.hexdigest()


def _packed(sketch: Sketch | None) -> bytes | None:
    """A sketch's numbers as the repository index packs them (8-byte little-endian signed), whichever form it has.

    A workload measured in this run hands its sketch over as numbers, one taken from the index as
    their packed bytes: the same sketch, one digest. None for numbers that are not all ``int`` in range.
    """
    import struct

    if isinstance(sketch, bytes):
        return sketch if len(sketch) % 8 == 0 else None
    if not isinstance(sketch, list) or set(map(type, sketch)) - {int}:
        return None
    try:
        return struct.pack(f"<{len(sketch)}q", *sketch)
    except struct.error:
        return None


class _KeptCopies:
    """Sealed cache entries (kind ``nearcopies``) holding a repository's last near-copy facts, one per digest.

    A whole run and the narrowed runs after it judge different parts of the model (a
    narrowed run views the changed pools' workloads only), so each has its own digest and
    its own entry, named by the repository and the digest: a run reads at most one file.
    The :data:`KEEP` most recently written entries of a repository are kept; writing one
    removes the older ones.
    """

    KIND = "nearcopies"
    FORMAT = 1
    MAX_BYTES = 64 << 20
    #: entries kept per repository (a whole run's, and those of the narrowed runs after it)
    KEEP = 4

    def __init__(self, folder: Path, root: Path) -> None:
        import json

        from policylint.cache.store import FORMAT_VERSION, code_fingerprint

        self.folder = folder
        self.header = {"format": self.FORMAT, "cache": FORMAT_VERSION, "code": code_fingerprint(),
                       "root": os.path.realpath(root)}
        self.locator = hashlib.sha256(json.dumps(self.header, sort_keys=True).encode("utf-8", "surrogateescape")).hexdigest()
        self.place = folder / f"nearcopies-v{FORMAT_VERSION}" / self.locator[:2]

    def path(self, digest: str) -> Path:
        return self.place / f"{self.locator}-{digest[:32]}.json"

    def read(self, digest: str) -> dict[str, dict[str, Any]] | None:
        """The kept facts when an entry holds them for ``digest``; None otherwise (missing, damaged, foreign)."""
        from policylint.cache.decoded import read_sealed_json

        try:
            stored = read_sealed_json(self.path(digest), self.folder, self.KIND, self.MAX_BYTES)
        except (OSError, ValueError):
            return None
        if not (isinstance(stored, dict) and stored.get("header") == self.header and stored.get("inputs") == digest):
            return None
        out = stored.get("out")
        if not isinstance(out, dict) or not all(isinstance(v, dict) for v in out.values()):
            return None
        return out

    def write(self, digest: str, out: dict[str, dict[str, Any]]) -> None:
        import json

        from policylint.cache.store import write_sealed

        try:
            body = json.dumps({"header": self.header, "inputs": digest, "out": out}, separators=(",", ":"),
                              allow_nan=False).encode("utf-8", "surrogateescape")
        except (TypeError, ValueError):
            return  # a value JSON cannot hold exactly: nothing is kept, the next run computes again
        try:
            if not write_sealed(self.path(digest), self.folder, self.KIND, body, self.MAX_BYTES):
                return
            mine = sorted(self.place.glob(f"{self.locator}-*.json"), key=lambda p: p.stat().st_mtime_ns, reverse=True)
            for old in mine[self.KEEP:]:
                old.unlink(missing_ok=True)
        except OSError:
            return  # a cache that cannot be written makes the next run no faster, never different
