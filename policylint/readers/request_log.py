"""Request logs: one row per request (start and end, or start and duration) -> concurrency.

Concurrency at grid time *t* is the number of requests with start <= *t* < end,
counted with two sorted searches. A request log has no holes (no request means
nothing in flight); the default step is one second.
"""

from __future__ import annotations

import math

import numpy as np

from policylint.errors import MeasurementError
from policylint.readers.grid import regular_grid
from policylint.readers.intervals import read_intervals
from policylint.readers.limits import TraceLimits, check_grid
from policylint.readers.series import Series
from policylint.readers.table import Table

__all__ = ["concurrency", "read_requests"]


def concurrency(starts: np.ndarray, ends: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """c(t) = #{start <= t < end} at each grid time, by two sorted searches.

    Every request with ``end <= t`` also has ``start <= t``, so the difference of
    the two counts is exactly the number in flight.
    """
    s = np.sort(starts)
    e = np.sort(ends)
    return (np.searchsorted(s, grid, side="right") - np.searchsorted(e, grid, side="right")).astype(
        np.float64
    )


def read_requests(
    table: Table,
    *,
    start_column: str | None,
    end_column: str | None,
    duration_column: str | None,
    step_seconds: float | None,
    limits: TraceLimits,
    timestamp_unit: str | None = None,
    duration_unit: str | None = None,
    origin: float | None = None,
) -> Series:
    """Read a request log into the concurrency series on a regular grid."""
    name = table.name
    intervals = read_intervals(
        table,
        start_column=start_column,
        end_column=end_column,
        duration_column=duration_column,
        limits=limits,
        need_start=True,
        timestamp_unit=timestamp_unit,
        duration_unit_=duration_unit,
        origin=origin,
    )
    starts, ends = intervals.starts, intervals.ends
    step = float(step_seconds) if step_seconds else 1.0
    if not (step > 0 and math.isfinite(step)):
        raise MeasurementError("step must be positive", source=name)
    first = float(np.min(starts))
    last = float(np.max(ends))
    check_grid(first, last, step, limits, name)
    n = int(math.floor((last - first) / step)) + 1
    if n < 2:
        raise MeasurementError("the requests span less than two steps", source=name, row=2)
    grid = regular_grid(first, step, n)
    values = concurrency(starts, ends, grid)
    return Series(
        times=grid,
        values=values,
        valid=np.ones(n, dtype=bool),
        step_seconds=step,
        source=name,
        gaps=(),
        first=first,
        last=last,
    )
