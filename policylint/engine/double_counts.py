"""Which workloads of a pool repeat another's concurrency measurement (PL111), and how that was recognised.

Identity is content-based (:func:`repeats`): the fingerprints of the series as read, its shape,
its samples before the grid, and - for one file cited twice by one path - whether the two reads
can take the same data (:func:`policylint.measure.reading.reads_may_overlap`). Split from
:mod:`policylint.engine.pooled_facts`, which hands the verdicts to every member of the pool; the
planner's guard (:func:`double_counted`) asks the same function.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from policylint.model import Pool, Workload

def _measurement_key(w: Workload) -> tuple[str, str, str] | None:
    """What makes two concurrency measurements the same: file, columns and series selector."""
    ref = w.measurements.get("concurrency")
    if ref is None or ref.path is None:
        return None
    columns = ref.spec.get("columns")
    return (
        os.path.realpath(ref.path),
        json.dumps(sorted(columns) if isinstance(columns, list) else columns),
        json.dumps(ref.spec.get("match"), sort_keys=True),
    )


def double_counted(pool: Pool, fingerprints: dict[str, str | None] | None = None) -> dict[str, str]:
    """Workloads of ``pool`` that repeat another's measurement without a declared share.

    Maps each offending workload to the one it repeats. In a group citing one
    measurement, the first workload (by name) without a share keeps it; every
    other one without a share counts the same demand again. See :func:`repeats`.
    """
    return {name: kept for name, (kept, _) in repeats(pool, fingerprints).items()}


def repeats(
    pool: Pool,
    fingerprints: dict[str, str | None] | None = None,
    series: dict[str, str | None] | None = None,
    shapes: dict[str, str | None] | None = None,
    samples: dict[str, str | None] | None = None,
) -> dict[str, tuple[str, str]]:
    """Workload -> (workload it repeats, how that was recognised), for one pool.

    Identity is content-based: two workloads whose concurrency series, as read,
    hold the same values (:func:`policylint.calc.prints.values_fingerprint`, in
    ``fingerprints`` by workload) cite the same demand, whatever the files are
    called and whatever dates they carry - a byte-identical copy under another
    name, or the same samples moved to other dates, is the same evidence. A
    workload whose series is unknown (unreadable) is grouped by its file,
    columns and selector instead. ``series`` (the fingerprints with times, by
    workload) tells a copy moved to other dates from a plain copy in messages.
    ``shapes`` (:func:`policylint.measure.integrity.copies.shape_fingerprint`) then finds a
    copy scaled up or shifted: it rises and falls at exactly the same samples. ``samples``
    (:func:`policylint.calc.prints.samples_fingerprint`, taken before the grid) finds one file's
    samples, or a byte copy's, read at another step.
    """
    groups: dict[tuple[str, ...], list[Workload]] = {}
    by_name = sorted(pool.workloads, key=lambda w: w.name)
    for w in by_name:
        printed = (fingerprints or {}).get(w.name)
        key: tuple[str, ...] | None = ("series", printed) if printed else _measurement_key(w)
        if key is not None:
            groups.setdefault(key, []).append(w)
    out: dict[str, tuple[str, str]] = {}
    for members in groups.values():
        unshared = [w for w in members if not (w.spec.get("concurrency") or {}).get("share")]
        for w in unshared[1:]:
            first = unshared[0]
            moved = series is not None and series.get(first.name) != series.get(w.name)
            out[w.name] = (first.name, _basis(first, w, moved))
    _group(by_name, shapes, out, _scaled_basis)
    _group(by_name, samples, out, _copy_read_basis)
    _read_again(by_name, out)
    return out


def _group(
    by_name: Sequence[Workload], prints: dict[str, str | None] | None, out: dict[str, tuple[str, str]],
    basis: Callable[[Workload, Workload], str],
) -> None:
    """Add to ``out`` the unshared workloads not in it yet whose print an earlier one's equals."""
    groups: dict[str, list[Workload]] = {}
    for w in by_name:
        printed = (prints or {}).get(w.name)
        if printed and w.name not in out and not (w.spec.get("concurrency") or {}).get("share"):
            groups.setdefault(printed, []).append(w)
    for members in groups.values():
        for w in members[1:]:
            out[w.name] = (members[0].name, basis(members[0], w))


def _copy_read_basis(kept: Workload, repeat: Workload) -> str:
    """Message text for the same samples read at another step (red team, 2026-12-07: a byte copy at 290 s)."""
    a, b = kept.measurements.get("concurrency"), repeat.measurements.get("concurrency")
    names = (b.display if b else repeat.name, a.display if a else kept.name)
    if names[0] == names[1]:
        return f"the same file {names[0]}, read again with other options"
    return f"a copy read another way: {names[0]} holds the samples {names[1]} holds"


def _read_again(by_name: Sequence[Workload], out: dict[str, tuple[str, str]]) -> None:
    """Add to ``out`` the workloads that read a file another one reads, with other options, and no share.

    Another step, origin or unit, or a filter dropping a row or two, gives another series and so
    another fingerprint, and PL972 left one file cited by one path to PL111 (red team, 2026-12-07:
    a second workload read fine-tuning's job list without its first job, +72 GPUs). Reads of one
    file whose columns or row selections cannot meet are one file holding several workloads'
    series (:func:`~policylint.measure.reading.reads_may_overlap`). Files are known by what they
    are - the device and inode the run's one stat of the path saw - so a symbolic or hard link to
    another workload's file, read without one of its jobs, is the same file (red team, 2026-12-07).
    """
    from policylint.measure.reading import reads_may_overlap
    from policylint.safeio import stat_once

    files: dict[object, list[Workload]] = {}
    for w in by_name:
        ref = w.measurements.get("concurrency")
        if ref is not None and ref.path is not None and not (w.spec.get("concurrency") or {}).get("share"):
            text = os.fspath(ref.path)
            try:
                st = stat_once(text)  # the index and the reference check asked already: no system call
            except (OSError, ValueError):
                ident: object = os.path.normpath(text)
            else:
                ident = (st.st_dev, st.st_ino)
            files.setdefault(ident, []).append(w)
    for members in files.values():
        specs = [m.measurements["concurrency"].spec for m in members]
        # Two reads that both name their value columns (and read them) with none in common never
        # overlap, so a read naming its columns asks only the earlier reads naming one of them and
        # those naming none: a fleet's export of one column per workload is not N^2/2 questions
        # (2,000 workloads citing one file: 2.0 million, 8 s of a pre-commit run). Same answers, in
        # the same order, as asking every earlier read.
        named = [_named_columns(spec) for spec in specs]
        by_column: dict[str, list[int]] = {}
        unnamed: list[int] = []
        for j, w in enumerate(members):
            if j and w.name not in out:
                columns = named[j]
                asked = range(j) if columns is None else sorted(set(unnamed).union(*(by_column.get(c, ()) for c in columns)))
                at = next((i for i in asked if reads_may_overlap(specs[i], specs[j])), None)
                if at is not None:
                    first = members[at]
                    shown, kept = w.measurements["concurrency"].display, first.measurements["concurrency"].display
                    again = shown if shown == kept else f"{shown}, which is {kept}"
                    out[w.name] = (first.name, f"the same file {again}, read again with other options")
            columns = named[j]
            if columns is None:
                unnamed.append(j)
            else:
                for c in columns:
                    by_column.setdefault(c, []).append(j)


def _named_columns(spec: Mapping[str, Any]) -> frozenset[str] | None:
    """The value columns a read names, when its reader reads them (else None): what
    :func:`~policylint.measure.reading.reads_may_overlap` tells two reads apart by before their rows."""
    from policylint.readers import reads_value_columns

    columns = spec.get("columns")
    if isinstance(columns, list) and reads_value_columns(str(spec.get("path", "")), spec.get("format")):
        return frozenset(str(c) for c in columns)
    return None


def _scaled_basis(kept: Workload, repeat: Workload) -> str:
    """Message text for a copy that was scaled or shifted."""
    a, b = kept.measurements.get("concurrency"), repeat.measurements.get("concurrency")
    names = (b.display if b else repeat.name, a.display if a else kept.name)
    return f"a scaled copy: {names[0]} rises and falls at exactly the samples {names[1]} does"


def _basis(kept: Workload, repeat: Workload, moved: bool = False) -> str:
    """'the same file' or 'a copy: X and Y hold the same series', for messages."""
    a, b = kept.measurements.get("concurrency"), repeat.measurements.get("concurrency")
    if a is None or b is None or a.path is None or b.path is None:
        return "the same file"
    if os.path.realpath(a.path) == os.path.realpath(b.path):
        return f"the same file {b.display}"
    if moved:
        return f"a copy moved in time: {b.display} holds the values of {a.display} on other dates"
    return f"a copy: {b.display} holds the same series as {a.display}"


def column_basis(
    pool: Pool, name: str, index: int, other: str, *, scaled: bool = False, labels: list[str] | None = None
) -> str:
    """'a column: X sums column C, which holds the series Y cites' (or columns C and D, together; or a series of a
    long table or an answer, by its ``labels``; or scaled), for messages."""
    from policylint.calc.prints import part_label

    w = next(w for w in pool.workloads if w.name == name)
    ref = w.measurements.get("concurrency")
    trace: Any = ((w.spec.get("concurrency") or {}).get("trace") or {}) if isinstance(w.spec, dict) else {}
    columns = trace.get("columns") if isinstance(trace, dict) else None
    part = part_label([str(c) for c in columns] if isinstance(columns, list) else [], labels, index)
    shown = ref.display if ref is not None else "its trace"
    how = ", scaled or shifted" if scaled else ""
    if part.startswith("columns "):
        return f"columns: {shown} sums {part}, which together hold the series {other} cites{how}"
    if part.startswith("series "):
        return f"a series: {shown} sums {part}, which holds the series {other} cites{how}"
    return f"a column: {shown} sums {part}, which holds the series {other} cites{how}"


def identity_fingerprint(facts: Mapping[str, Any] | None) -> str | None:
    """The fingerprint two workloads must share to cite the same demand (PL111; the planner's guard).

    By values alone when the series says enough to be recognised (ten changes or
    more), so a copy moved to other dates is the same evidence; otherwise by the
    series with its times: two constant traces of one length are not copies.
    ``facts``: a workload's integrity facts (None: nothing was read).
    """
    if not facts:
        return None
    key = "values_fingerprint" if (facts.get("value_changes") or 0) >= 10 else "series_fingerprint"
    value = facts.get(key)
    return str(value) if value else None
