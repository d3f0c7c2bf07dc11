"""Time series tables (CSV, Parquet, Arrow IPC): a timestamp column and value columns.

The timestamp column is named, or detected
(:func:`~policylint.readers.columns.timestamp_column`: a candidate name, else a
column named like a timestamp, else the first column). Value columns are named (several are summed, e.g. running + pending), or
the only other column, each named once. Rows must be in strictly increasing time
order; values must be numbers, not negative, not infinite and at most 2^53
(:data:`~policylint.readers.convert.MAX_VALUE`; an empty cell or ``NaN`` is a
missing sample).

A long table (one row per series and time, with a key column such as ``pod``,
``container_ip`` or ``instance``, as Grafana and Prometheus CSV exports come)
is read with a :class:`Key`: one series is selected by its key value, or every
key is put on the common grid on its own and the keys are combined per grid
time (:func:`~policylint.readers.grid.combine`: ``sum``, ``mean`` or ``max``).
Rows may then come in any order; within one key, times must not repeat.
"""

from __future__ import annotations

import dataclasses

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from policylint.errors import MeasurementError
from policylint.readers.arrays import to_numpy
from policylint.readers.columns import (
    FLOAT,
    KEY_CANDIDATES,
    TEXT,
    TIME,
    column_index,
    distinct_columns,
    find_column,
    timestamp_column,
)
from policylint.readers.convert import (
    check_order,
    check_range,
    check_values,
    epoch_seconds,
    numbers,
    order_steps,
    times,
)
from policylint.readers.grid import combine, finish, refuse_repeated
from policylint.readers.limits import TraceLimits
from policylint.readers.series import Series
from policylint.readers.rows import Rows
from policylint.readers.table import Table, release_arrow_memory
from policylint.readers.timestamps import format_time

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["Key", "read_keyed_parts", "read_table_series", "read_table_samples"]


@dataclass(frozen=True)
class Key:
    """The key column of a long table and what to do with its series.

    ``select`` picks the series whose key cell equals it; otherwise ``aggregate``
    (``sum``, ``mean``, ``max``) combines all of them.
    """

    column: str
    select: str | None = None
    aggregate: str | None = None


def detected_timestamp(header: list[str]) -> str:
    """The timestamp column when none is named (:func:`~policylint.readers.columns.timestamp_column`)."""
    found = timestamp_column(header)
    return found if found is not None else ""


def _distinct(ts_name: str, value_columns: Sequence[str] | None, name: str, key_column: str | None = None) -> None:
    """Each column once: no value column listed twice, none that is also the timestamp or the key."""
    distinct_columns(
        [("timestamp column", ts_name), ("key column", key_column), *(("value column", c) for c in value_columns or ())],
        name,
    )


def _value_indexes(
    header: list[str], value_columns: Sequence[str] | None, skip: Sequence[int], name: str
) -> tuple[list[int], list[str]]:
    if value_columns:
        names = list(value_columns)
        return [column_index(header, c, name) for c in names], names
    others = [i for i, h in enumerate(header) if i not in skip and h]
    if len(others) > 1:
        # A column that names a series (container_ip, pod) holds no values: a long
        # table read without its key then says so at its repeated times.
        keys = {k.lower() for k in KEY_CANDIDATES}
        values = [i for i in others if header[i].lower() not in keys]
        others = values if len(values) == 1 else others
    if len(others) != 1:
        raise MeasurementError(
            f"cannot tell which column holds the values ({len(others)} candidates: "
            f"{', '.join(header[i] for i in others) or 'none'}); name it with --column",
            source=name,
            row=1,
        )
    return others, [header[others[0]]]


def _unshaped(table: Table, names: Sequence[str]) -> None:
    """Refuse a ``where`` condition on a value column of a time series: it keeps samples by the demand they record.

    A sample of a time series is the demand at its time; a filter on that value (``in_flight >
    150``) drops the quiet samples (or the busy ones) and moves every band, while its count of
    dropped rows is only an info note (red team, 2026-12-06: 67% of a trace's samples dropped
    so, against the 10% PL961 allows for declared exclusions). Which rows belong to a series
    is said by its other columns (a model, a status), and time ranges left out by ``exclude``,
    which PL961 judges.
    """
    flt = table.row_filter
    if flt is None or not flt.where:
        return
    hit = sorted({c.column for c in flt.where} & set(names))
    if hit:
        shown = ", ".join(f"'{c}'" for c in hit)
        raise MeasurementError(
            f"where filters the samples by the value column{'s' if len(hit) > 1 else ''} {shown} the series is read from:"
            " the rows it keeps are chosen by the demand they record, which shapes the series; filter on a column"
            " that says whose rows they are, and leave time ranges out with exclude",
            source=table.name,
        )


def _times_kept(table: Table, ts_index: int, kept: object) -> None:
    """Refuse a ``where`` filter that leaves out times of a time series: it chooses samples, not whose rows they are.

    A time series holds one sample per time (per key in a long table). A filter that keeps
    every time (one region's rows of an export holding two) says whose rows count; one that
    drops times chooses samples, however its column is made - the value itself, a copy of it,
    or the change since the previous sample (red team, 2026-12-06, round 9: ``change >= 0``
    dropped every falling sample, 49% of a trace, with an info note). Times are compared as
    the file writes them, the empty cells ``skipIncomplete`` drops left out on both sides.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    from policylint.readers.filters import empty_cells

    flt = table.row_filter
    if flt is None or not flt.where:
        return
    raw = table.read_unfiltered([ts_index], [TIME])[0][0]
    present = raw.filter(pa.array(~empty_cells(raw)))
    before = int(pc.count_distinct(present, mode="only_valid").as_py())
    after = int(pc.count_distinct(kept, mode="only_valid").as_py())
    if after < before:
        raise MeasurementError(
            f"where leaves out {before - after:,} of the {before:,} times of this time series: a filter on a series"
            " with a sample per time chooses samples, which shapes it, whatever column it tests; filter on a"
            " column that says whose rows they are (a model, a region) and leave time ranges out with exclude",
            source=table.name,
        )


def read_keyed_parts(
    table: Table,
    key: Key,
    timestamp_column: str | None,
    value_columns: Sequence[str] | None,
    timestamp_unit: str | None,
    limits: TraceLimits,
    origin: float | None = None,
) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """The series of a long table, one ``(key, times, values)`` per key value (sorted by key).

    With ``key.select`` only that key's series is returned. Rows may come in any
    order; a time repeated within one key is an error at its row.
    """
    header, name = table.header, table.name
    ts_name = timestamp_column or detected_timestamp(header)
    _distinct(ts_name, value_columns, name, key.column)
    ts_index = column_index(header, ts_name, name)
    key_index = column_index(header, key.column, name)
    indexes, names = _value_indexes(header, value_columns, (ts_index, key_index), name)
    _unshaped(table, names)
    columns, rows = table.read(
        [ts_index, key_index, *indexes], [TIME, TEXT] + [FLOAT] * len(indexes), required=(0, 1)
    )
    _times_kept(table, ts_index, columns[0])
    if len(columns[0]) == 0:
        raise MeasurementError("empty file: no data rows", source=name, row=2)
    import pyarrow as pa
    import pyarrow.compute as pc

    from policylint.readers.filters import empty_cells

    keys_text = pc.utf8_trim_whitespace(pc.cast(columns[1], pa.string()))
    empty = empty_cells(keys_text)
    if empty.any():
        i = int(np.argmax(empty))
        raise MeasurementError(
            f"column '{key.column}' (the key) is empty in this row (declare skipIncomplete: true to skip such rows)",
            source=name,
            row=rows.row(i),
        )
    encoded = keys_text.combine_chunks().dictionary_encode()
    labels = [str(v) for v in encoded.dictionary.to_pylist()]
    codes = np.asarray(to_numpy(encoded.indices), dtype=np.int64)
    stamp = times(columns[0], ts_name, rows, name)
    unit = epoch_seconds([stamp], timestamp_unit, name, origin)
    check_range(stamp, unit, limits, name)
    total = _sum_values(columns[2:], names, rows, name)[0]
    if key.select is not None:
        if key.select not in labels:
            shown = ", ".join(sorted(labels)[:10]) + (" ..." if len(labels) > 10 else "")
            raise MeasurementError(
                f"no rows with {key.column} = {key.select!r} ({len(labels)} keys: {shown})", source=name
            )
        wanted = [labels.index(key.select)]
    else:
        wanted = sorted(range(len(labels)), key=lambda k: labels[k])
    # One stable sort by (key, time) groups every series with its times in order.
    order = np.lexsort((stamp.values, codes))
    t_sorted = stamp.values[order]
    c_sorted = codes[order]
    same = (np.diff(c_sorted) == 0) & (np.diff(t_sorted) <= 0)
    if same.any():
        i = int(np.argmax(same)) + 1
        raise MeasurementError(
            f"duplicate timestamp for {key.column} = {labels[c_sorted[i]]!r}: {format_time(t_sorted[i])}"
            " appears twice",
            source=name,
            row=rows.row(int(max(order[i], order[i - 1]))),
        )
    bounds = np.searchsorted(c_sorted, np.arange(len(labels) + 1))
    v_sorted = total[order]
    return [(labels[k], t_sorted[bounds[k] : bounds[k + 1]], v_sorted[bounds[k] : bounds[k + 1]]) for k in wanted]


def _sum_values(
    columns: Sequence[pa.ChunkedArray], names: Sequence[str], rows: Rows, name: str
) -> tuple[np.ndarray, list[np.ndarray]]:
    """The sum of the value columns, and each column's values when there are several (else an empty list)."""
    total: np.ndarray | None = None
    read: list[tuple[str, np.ndarray, np.ndarray]] = []
    for column, label in zip(columns, names, strict=True):
        values = numbers(column, label, rows, name)
        check_values(values, rows, f"value in column '{label}'", name)
        if len(columns) > 1:
            read.append((label, _NO_TIMES, values))  # the columns share one time axis
        if total is None:
            total = values + 0.0  # a private copy, and -0.0 made 0.0 as a sum would
        else:
            total += values  # NaN in any column makes the sum missing, as it should
    if read:
        refuse_repeated(read, name)  # a column copied under another name would count twice
    assert total is not None
    return total, [values for _, _, values in read]


_NO_TIMES = np.empty(0)


def read_table_samples(
    table: Table,
    timestamp_column: str | None,
    value_columns: Sequence[str] | None,
    timestamp_unit: str | None,
    limits: TraceLimits,
    origin: float | None = None,
) -> tuple[np.ndarray, np.ndarray, float | None, list[np.ndarray]]:
    """The raw samples of a table, validated: times in unix seconds, summed values, the step
    between times when it never changes, and each value column's values when several are summed."""
    header, name = table.header, table.name
    ts_name = timestamp_column or detected_timestamp(header)
    _distinct(ts_name, value_columns, name)
    ts_index = column_index(header, ts_name, name)
    indexes, names = _value_indexes(header, value_columns, (ts_index,), name)
    _unshaped(table, names)
    columns, rows = table.read([ts_index, *indexes], [TIME] + [FLOAT] * len(indexes), required=(0,))
    _times_kept(table, ts_index, columns[0])
    if len(columns[0]) == 0:
        raise MeasurementError("empty file: no data rows", source=name, row=2)
    stamp = times(columns[0], ts_name, rows, name)
    unit = epoch_seconds([stamp], timestamp_unit, name, origin)
    t = stamp.values
    # Every time is finite here (times() refuses the others; the units only divide). Times
    # that strictly increase are bounded by the first and the last, so the usual file needs no
    # range pass of its own; any other file gets the full range check first, as always (an
    # out-of-range time is reported before an order error, whose message shows the times).
    increasing, uniform = order_steps(t)
    if not (increasing and (t.size == 0 or (t[0] >= limits.min_time and t[-1] < limits.max_time))):
        check_range(stamp, unit, limits, name)
        try:
            uniform = check_order(t, rows, name, finite=True)
        except MeasurementError as exc:
            key = find_column(header, KEY_CANDIDATES)
            if key is None:
                raise
            raise MeasurementError(
                f"{exc.message}; column '{key}' looks like a series key: declare key: {{column: {key}, "
                "select: VALUE} or {aggregate: sum} (--key-column with --select or --aggregate)",
                source=name,
                row=exc.row,
            ) from None
    total, parts = _sum_values(columns[1:], names, rows, name)
    return stamp.values, total, uniform, parts


def read_table_series(
    table: Table,
    *,
    timestamp_column: str | None,
    value_columns: Sequence[str] | None,
    timestamp_unit: str | None,
    step_seconds: float | None,
    max_gap_steps: int,
    limits: TraceLimits,
    origin: float | None = None,
    key: Key | None = None,
) -> Series:
    """Read a time series table and put it on its regular grid (a long table by its ``key``)."""
    if key is not None:
        parts = read_keyed_parts(table, key, timestamp_column, value_columns, timestamp_unit, limits, origin)
        release_arrow_memory(table.source.size)
        how = "sum" if key.select is not None else key.aggregate
        if how is None:
            raise MeasurementError(
                f"a key column ({key.column}) needs select (one series) or aggregate (sum, mean or max)",
                source=table.name,
            )
        return combine(parts, how, name=table.name, step_seconds=step_seconds, max_gap_steps=max_gap_steps,
                       limits=limits)
    stamps, values, uniform, summed = read_table_samples(
        table, timestamp_column, value_columns, timestamp_unit, limits, origin
    )
    release_arrow_memory(table.source.size)
    series = finish(
        stamps,
        values,
        name=table.name,
        step_seconds=step_seconds,
        max_gap_steps=max_gap_steps,
        limits=limits,
        uniform_step=uniform,
    )
    if summed:
        from policylint.readers.sum_screens import flat_parts

        labels = [f"column {c}" for c in value_columns] if value_columns and len(value_columns) == len(summed) else [
            f"value column {k + 1}" for k in range(len(summed))]
        series = dataclasses.replace(series, flat_parts=flat_parts(list(zip(labels, [stamps] * len(summed), summed))))
    if summed and series.values.size == stamps.size and bool(series.valid.all()):
        # complete on its grid, so each column is a series of its own as it would be read alone: its
        # print is what another workload citing those values alone would have (PL111)
        # (each column alone, then groups of them: another series dealt out between two columns)
        from policylint.calc.prints import column_groups, shape_print, values_fingerprint
        from policylint.calc.runs import judged_samples, run_sketch

        pieces = [summed[g[0]] if len(g) == 1 else np.add.reduce([summed[i] for i in g])
                  for g in column_groups(len(summed))]
        prints = tuple(values_fingerprint(piece + 0.0, series.valid) for piece in pieces)
        judged = [judged_samples(piece, series.valid) for piece in pieces]
        # and its run sketch, as that column alone read would have it: its near copies (PL972)
        sketches = tuple(run_sketch(*pair) for pair in judged)
        # and its shape: another member's series scaled or shifted into a column (PL111)
        shapes = tuple(shape_print(*pair, float(series.step_seconds)) for pair in judged)
        series = dataclasses.replace(series, part_prints=prints, part_sketches=sketches, part_shapes=shapes)
    return series

