"""Interval tables shared by request logs and job lists: start, end or duration, per row.

The columns are named, or detected from
:mod:`policylint.readers.columns` (start, end, duration with its unit, GPUs).
Start and end share one clock, so an epoch unit is detected once for both. A
row with a start but an empty end (or duration) was still running when the file
was exported: it runs until the end of the trace (the latest time the file
records), and the notes count such rows. A row that ends before it starts, an
empty start, a non-finite time or duration, and a computed end outside the
accepted years are errors at their row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from policylint.errors import MeasurementError
from policylint.readers.columns import (
    DURATION_CANDIDATES,
    END_CANDIDATES,
    FLOAT,
    JOB_ID_CANDIDATES,
    START_CANDIDATES,
    TEXT,
    TIME,
    column_index,
    distinct_columns,
    duration_unit,
    find_column,
)
from policylint.readers.convert import check_range, check_times_range, check_values, epoch_seconds, numbers, times
from policylint.readers.limits import TraceLimits
from policylint.readers.rows import Rows
from policylint.readers.table import Table
from policylint.readers.timestamps import EPOCH_UNITS

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["Intervals", "read_intervals"]


@dataclass(frozen=True)
class Intervals:
    """Per row: start and end (unix seconds; start 0 when there is no start column),
    duration in seconds, and the extra column (GPUs) when asked for."""

    starts: np.ndarray
    ends: np.ndarray
    durations: np.ndarray
    extra: np.ndarray | None
    rows: Rows
    has_start: bool
    #: rows with a start and no end (still running at the export; their ends are the trace's end), or None
    running: np.ndarray | None = None


def _refuse_empty(columns: list[pa.ChunkedArray], labels: list[str], rows: Rows, name: str) -> None:
    """An empty cell in an interval row is an error at its row, with the way to skip such rows."""
    from policylint.readers.filters import empty_cells

    for column, label in zip(columns, labels, strict=True):
        empty = empty_cells(column)
        if empty.any():
            i = int(np.argmax(empty))
            raise MeasurementError(
                f"column '{label}' is empty in this row (declare skipIncomplete: true, or --skip-incomplete, "
                "to skip and count such rows)",
                source=name,
                row=rows.row(i),
            )


def read_intervals(
    table: Table,
    *,
    start_column: str | None,
    end_column: str | None,
    duration_column: str | None,
    limits: TraceLimits,
    extra_column: str | None = None,
    need_start: bool = False,
    timestamp_unit: str | None = None,
    duration_unit_: str | None = None,
    origin: float | None = None,
    job_ids: bool = False,
) -> Intervals:
    """Read the intervals of ``table``; ``need_start`` refuses a table without a start column.

    With ``job_ids`` (a job list) and a job identifier column (:data:`JOB_ID_CANDIDATES`), a row
    with the identifier, start and end of an earlier row is the same job listed twice: an error
    at its row (a job requeued under its identifier has other times, and counts again).
    """
    header, name = table.header, table.name
    start_name = start_column or find_column(header, START_CANDIDATES)
    end_name = end_column or (None if duration_column else find_column(header, END_CANDIDATES))
    dur_name = duration_column or (None if end_name else find_column(header, DURATION_CANDIDATES))
    if end_name is None and dur_name is None:
        raise MeasurementError(
            "needs an end column or a duration column (name them with the end/duration options; "
            f"columns: {', '.join(header)})",
            source=name,
            row=1,
        )
    if end_name is not None and start_name is None:
        raise MeasurementError(
            f"an end column needs a start column too (columns: {', '.join(header)})", source=name, row=1
        )
    if need_start and start_name is None:
        # Without a start every request would begin at 0, in 1970: refuse instead.
        raise MeasurementError(
            f"no start column among {', '.join(header)} (name it with the start option)",
            source=name,
            row=1,
        )
    distinct_columns(
        [("start column", start_name), ("end column", end_name), ("duration column", dur_name),
         ("GPU column", extra_column)],
        name,
    )
    wanted = [c for c in (start_name, end_name, dur_name, extra_column) if c is not None]
    id_name = find_column(header, JOB_ID_CANDIDATES) if job_ids else None
    if id_name in wanted:
        id_name = None  # named as another column: not read twice
    indexes = [column_index(header, c, name) for c in wanted]
    kinds = [TIME if c in (start_name, end_name) else FLOAT for c in wanted]
    if id_name is not None:
        indexes.append(column_index(header, id_name, name))
        kinds.append(TEXT)
    # The end (or duration) of a row may be empty: the work was still running at the
    # export. Every other cell is needed: with skipIncomplete an empty one skips the row.
    closing = end_name if end_name is not None else dur_name
    assert closing is not None
    needed = [i for i, c in enumerate(wanted) if not (c == closing and start_name is not None)]
    columns, rows = table.read(indexes, kinds, required=needed)
    ids = columns.pop() if id_name is not None else None
    slot = {c: columns[i] for i, c in enumerate(wanted)}
    if len(columns[0]) == 0:
        raise MeasurementError("empty file: no data rows", source=name, row=2)
    if table.row_filter is None or not table.row_filter.skip_incomplete:
        _refuse_empty([columns[i] for i in needed], [wanted[i] for i in needed], rows, name)
    running = _running(slot[closing], start_name is not None)
    closed_rows: Rows = rows
    if running is not None:
        from policylint.readers.filters import Subset

        import pyarrow as pa

        closed_rows = Subset(rows, np.flatnonzero(~running))
        slot[closing] = slot[closing].filter(pa.array(~running))

    stamps = []
    if start_name is not None:
        stamps.append(times(slot[start_name], start_name, rows, name))
    if end_name is not None:
        stamps.append(times(slot[end_name], end_name, closed_rows, name))
    unit = epoch_seconds(stamps, timestamp_unit, name, origin)
    for stamp in stamps:
        check_range(stamp, unit, limits, name)
    begin = stamps[0].values if start_name is not None else np.zeros(len(columns[0]))
    if end_name is not None:
        finish = stamps[-1].values
        durations = None
    else:
        assert dur_name is not None
        durations = numbers(slot[dur_name], dur_name, closed_rows, name)
        if np.isnan(durations).any():
            i = int(np.argmax(np.isnan(durations)))
            raise MeasurementError(f"column '{dur_name}' is empty", source=name, row=closed_rows.row(i))
        check_values(durations, closed_rows, f"duration in column '{dur_name}'", name)
        named = duration_unit(dur_name)
        if duration_unit_ and named != "s" and duration_unit_ != named:
            # the column's name says its unit: a declared unit that contradicts it scales every job by
            # 1000 or more (red team, 2026-12-07, round 17: `durationUnit: s` on `latency_ms`)
            raise MeasurementError(f"column '{dur_name}' holds {named} by its name, but durationUnit says "
                                   f"{duration_unit_!r}: rename the column or declare its unit as {named!r}",
                                   source=name)
        scale = EPOCH_UNITS.get(duration_unit_ or named)
        if scale is None:
            raise MeasurementError(f"unknown duration unit {duration_unit_!r}", source=name)
        if scale != 1.0:
            durations = durations / scale
        finish = (begin if running is None else begin[~running]) + durations
        if start_name is not None:
            check_times_range(finish, "start + duration", closed_rows, limits, name)
    if running is not None:
        finish = _run_to_the_end(begin, finish, running, table)
    if durations is None:
        durations = finish - begin
    elif running is not None:
        # the closed rows keep their durations as written, bit for bit
        full = finish - begin
        full[~running] = durations
        durations = full
    backwards = finish < begin
    if backwards.any():
        i = int(np.argmax(backwards))
        raise MeasurementError("ends before it starts", source=name, row=rows.row(i))
    if ids is not None and id_name is not None:
        _refuse_repeated_jobs(ids, begin, finish, rows, id_name, name, timed=start_name is not None)
    extra = None
    if extra_column is not None:
        extra = numbers(slot[extra_column], extra_column, rows, name)
        check_values(extra, rows, f"value in column '{extra_column}'", name)
    return Intervals(begin, finish, durations, extra, rows, start_name is not None, running)


def _refuse_repeated_jobs(
    ids: pa.ChunkedArray, begin: np.ndarray, finish: np.ndarray, rows: Rows, label: str, name: str,
    *, timed: bool = True,
) -> None:
    """A row that lists an earlier row's job again is an error at its row.

    Listing a job twice doubles its GPUs in every band and in the job durations. Again means
    the identifier, start and end of an earlier row, or - when the rows have start times
    (``timed``) - the identifier of a row whose run the row's start falls inside: a job runs
    once at a time, and a job requeued under its identifier starts after its last attempt ended
    (red team, 2026-12-07: every job listed a second time, one second later, doubled the pooled
    baseline as the exact repeat did). Rows without an identifier (an empty cell) are not
    compared. Whole arrays: the identifiers are dictionary encoded, and the rows sorted by
    (identifier, start, end) are compared with their neighbours - a row overlapping any earlier
    row of its job overlaps the one just before it in that order.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    from policylint.readers.arrays import to_numpy
    from policylint.readers.filters import empty_cells

    if len(ids) < 2:
        return
    whole = ids.combine_chunks() if isinstance(ids, pa.ChunkedArray) else ids
    text = whole if pa.types.is_string(whole.type) else whole.cast(pa.string())
    encoded = pc.dictionary_encode(text)
    if len(encoded.dictionary) == len(text) - text.null_count:
        return  # every identifier once (a real job list): no row can repeat another
    key = to_numpy(encoded.indices).astype(np.float64)  # a null identifier: NaN
    key[empty_cells(ids)] = np.nan  # an empty identifier is no identifier either: NaN equals nothing
    order = np.lexsort((finish, begin, key))  # stable: equal rows stay in file order
    k, s, f = key[order], begin[order], finish[order]
    job = k[1:] == k[:-1]
    same = job & (s[1:] == s[:-1]) & (f[1:] == f[:-1])
    inside = job & (s[1:] < f[:-1]) & ~same if timed else np.zeros(len(same), dtype=bool)
    if not (same.any() or inside.any()):
        return
    again_rows, first_rows = order[1:], order[:-1]
    flagged = same | inside
    at = int(np.argmin(np.where(flagged, again_rows, len(order))))  # the first repeat in the file
    again, first = int(again_rows[at]), int(first_rows[at])
    job_name = str(text[again].as_py())
    if same[at]:
        message = (f"job {job_name!r} (column {label!r}) is listed again with the same start and end as"
                   f" at row {rows.row(first)}: a job counts once - remove the repeated row")
    else:
        message = (f"job {job_name!r} (column {label!r}) starts again while its run at row {rows.row(first)}"
                   " has not ended: a job runs once at a time (a requeued job starts after its last attempt"
                   " ended) - remove the repeated row, or give each pod or task of a job its own identifier")
    raise MeasurementError(message, source=name, row=rows.row(again))


def _running(column: pa.ChunkedArray, has_start: bool) -> np.ndarray | None:
    """Rows whose end (or duration) is empty: still running at the export. None when there are none."""
    if not has_start:
        return None
    from policylint.readers.filters import empty_cells

    empty = empty_cells(column)
    return empty if empty.any() else None


def _run_to_the_end(begin: np.ndarray, closed: np.ndarray, running: np.ndarray, table: Table) -> np.ndarray:
    """Ends of every row: the closed rows' own, and the end of the trace for the running ones.

    A job without an end was still running when the list was exported; skipping it
    would drop exactly the longest jobs. It runs until the latest time the file
    records (a start or an end), and the notes say how many rows that was.
    """
    from policylint.readers.timestamps import format_time

    last = float(begin.max())
    if closed.size:
        last = max(last, float(closed.max()))
    finish = np.empty(begin.shape, dtype=np.float64)
    finish[~running] = closed
    finish[running] = last
    count = int(np.count_nonzero(running))
    what = "1 job still running at the end of the export was" if count == 1 else (
        f"{count:,} jobs still running at the end of the export were"
    )
    table.notes = (*table.notes, f"{what} counted until {format_time(last)} (the end of the trace)")
    return finish
