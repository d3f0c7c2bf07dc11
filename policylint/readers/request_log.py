"""Request logs: one row per request (start and end, or start and duration) -> concurrency.

Concurrency at grid time *t* is the number of requests with start <= *t* < end,
counted with two sorted searches; job lists read this way may instead count
the GPUs of the running jobs (``unit: gpus``). A request log has no holes (no request means
nothing in flight); the default step is one second.
"""

from __future__ import annotations

import math

import numpy as np

from policylint.errors import MeasurementError
from policylint.calc.prints import samples_fingerprint
from policylint.readers.columns import GPU_CANDIDATES, column_index, find_column
from policylint.readers.grid import regular_grid
from policylint.readers.intervals import read_intervals
from policylint.readers.limits import TraceLimits, check_grid
from policylint.readers.series import Series
from policylint.readers.table import Table

__all__ = ["UNITS", "concurrency", "read_requests"]


def concurrency(
    starts: np.ndarray, ends: np.ndarray, grid: np.ndarray, weights: np.ndarray | None = None
) -> np.ndarray:
    """c(t) = #{start <= t < end} at each grid time, by two sorted searches.

    Every request with ``end <= t`` also has ``start <= t``, so the difference of
    the two counts is exactly the number in flight. With ``weights`` (GPUs per
    job) each interval counts its weight: the running sums of the weights in
    start and in end order replace the counts.
    """
    if weights is not None:
        by_start = np.argsort(starts, kind="stable")
        by_end = np.argsort(ends, kind="stable")
        started = np.concatenate(([0.0], np.cumsum(weights[by_start])))
        ended = np.concatenate(([0.0], np.cumsum(weights[by_end])))
        return started[np.searchsorted(starts[by_start], grid, side="right")] - ended[
            np.searchsorted(ends[by_end], grid, side="right")
        ]
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
    gpus_column: str | None = None,
    unit: str | None = None,
    detect_gpus: bool = False,
) -> Series:
    """Read a request log (or job list) into the concurrency series on a regular grid.

    GPU weighting: ``unit`` ``gpus`` (or a named ``gpus_column``) weights every
    interval by its GPU column (named, or detected); otherwise intervals are
    counted. The switch is explicit because it changes what every band means,
    and a GPU series must not be multiplied by gpusPerReplica again. A job list
    (``detect_gpus``) counted without its detected GPU column names it in
    :attr:`Series.unused_gpu_column`.
    The returned series says which it is in :attr:`Series.unit`.
    """
    name = table.name
    weight_name = _weight_column(table.header, name, gpus_column, unit)
    unused = None
    if weight_name is None and detect_gpus and unit is None:
        unused = find_column(table.header, GPU_CANDIDATES)
    intervals = read_intervals(
        table,
        start_column=start_column,
        end_column=end_column,
        duration_column=duration_column,
        limits=limits,
        need_start=True,
        extra_column=weight_name,
        timestamp_unit=timestamp_unit,
        duration_unit_=duration_unit,
        origin=origin,
        job_ids=detect_gpus,  # a job list (format jobs), not a request log
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
    values = concurrency(starts, ends, grid, intervals.extra)
    return Series(
        times=grid,
        values=values,
        valid=np.ones(n, dtype=bool),
        step_seconds=step,
        source=name,
        gaps=(),
        first=first,
        last=last,
        unit="gpus" if weight_name is not None else "concurrency",
        unused_gpu_column=unused,
        from_intervals=True,
        interval_rows=_rows(intervals.durations, intervals.running),
        job_weight_p90=_p90(intervals.extra) if weight_name is not None else None,
        # the rows as read, whatever the grid: counted or weighed, at any step, they are one evidence
        samples_print=samples_fingerprint(starts, ends),
    )


def _p90(weights: np.ndarray | None) -> float | None:
    """What nine jobs in ten were weighed at: the p90 of the weights as every band takes one (inverted CDF)."""
    if weights is None or not weights.size:
        return None
    from policylint.calc.select import percentile

    return float(percentile(weights, [90])[0])


def _rows(durations: np.ndarray, running: np.ndarray | None) -> tuple[int, int, float | None, float | None]:
    """Rows with no end and rows with an end: how many of each, and the longest of each (seconds)."""
    if running is None:
        running = np.zeros(durations.shape, dtype=bool)
    opened, closed = durations[running], durations[~running]
    return (
        int(opened.size),
        int(closed.size),
        float(opened.max()) if opened.size else None,
        float(closed.max()) if closed.size else None,
    )


UNITS = ("concurrency", "gpus")
"""What a request log or job list counts: intervals in flight, or the GPUs they hold."""


def _weight_column(header: list[str], name: str, gpus_column: str | None, unit: str | None) -> str | None:
    """The GPU column that weighs each interval, or None to count intervals."""
    if unit is not None and unit not in UNITS:
        raise MeasurementError(f"unknown unit {unit!r} (expected concurrency or gpus)", source=name)
    if gpus_column is not None:
        column_index(header, gpus_column, name)
        if unit == "concurrency":
            raise MeasurementError(
                f"a GPU column ({gpus_column}) weighs jobs by GPUs, but the unit is concurrency; drop one",
                source=name,
            )
        return gpus_column
    if unit == "concurrency":
        return None
    if unit is None:
        return None
    found = find_column(header, GPU_CANDIDATES)
    if found is None:
        raise MeasurementError(
            f"unit gpus needs a GPU column (none of {', '.join(GPU_CANDIDATES[:5])}, ... among "
            f"{', '.join(header)}; name it with gpusColumn / --gpus-column)",
            source=name,
            row=1,
        )
    return found
