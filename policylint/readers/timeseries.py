"""Time series tables (CSV, Parquet, Arrow IPC): a timestamp column and value columns.

The timestamp column is named, or the first of
:data:`~policylint.readers.columns.TIMESTAMP_CANDIDATES` present, or the first
column. Value columns are named (several are summed, e.g. running + pending), or
the only other column. Rows must be in strictly increasing time order; values
must be numbers, not negative, not infinite (an empty cell or ``NaN`` is a
missing sample).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from policylint.errors import MeasurementError
from policylint.readers.columns import TIMESTAMP_CANDIDATES, column_index, find_column
from policylint.readers.convert import check_order, check_range, check_values, epoch_seconds, numbers, times
from policylint.readers.grid import finish
from policylint.readers.limits import TraceLimits
from policylint.readers.series import Series
from policylint.readers.table import FLOAT, TIME, Table, release_arrow_memory

__all__ = ["read_table_series", "read_table_samples"]


def read_table_samples(
    table: Table,
    timestamp_column: str | None,
    value_columns: Sequence[str] | None,
    timestamp_unit: str | None,
    limits: TraceLimits,
    origin: float | None = None,
) -> tuple[np.ndarray, np.ndarray, float | None]:
    """The raw samples of a table, validated: times in unix seconds, summed values,
    and the step between times when it never changes."""
    header, name = table.header, table.name
    ts_name = timestamp_column or find_column(header, TIMESTAMP_CANDIDATES) or header[0]
    ts_index = column_index(header, ts_name, name)
    if value_columns:
        names = list(value_columns)
        indexes = [column_index(header, c, name) for c in names]
    else:
        others = [i for i, h in enumerate(header) if i != ts_index and h]
        if len(others) != 1:
            raise MeasurementError(
                f"cannot tell which column holds the values ({len(others)} candidates: "
                f"{', '.join(header[i] for i in others) or 'none'}); name it with --column",
                source=name,
                row=1,
            )
        indexes = others
        names = [header[others[0]]]

    columns, rows = table.read([ts_index, *indexes], [TIME] + [FLOAT] * len(indexes))
    if len(columns[0]) == 0:
        raise MeasurementError("empty file: no data rows", source=name, row=2)
    stamp = times(columns[0], ts_name, rows, name)
    unit = epoch_seconds([stamp], timestamp_unit, name, origin)
    check_range(stamp, unit, limits, name)
    uniform = check_order(stamp.values, rows, name)
    total: np.ndarray | None = None
    for column, label in zip(columns[1:], names, strict=True):
        values = numbers(column, label, rows, name)
        check_values(values, rows, f"value in column '{label}'", name)
        if total is None:
            total = values + 0.0  # a private copy, and -0.0 made 0.0 as a sum would
        else:
            total += values  # NaN in any column makes the sum missing, as it should
    assert total is not None
    return stamp.values, total, uniform


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
) -> Series:
    """Read a time series table and put it on its regular grid."""
    stamps, values, uniform = read_table_samples(table, timestamp_column, value_columns, timestamp_unit, limits, origin)
    release_arrow_memory(table.source.size)
    return finish(
        stamps,
        values,
        name=table.name,
        step_seconds=step_seconds,
        max_gap_steps=max_gap_steps,
        limits=limits,
        uniform_step=uniform,
    )
