"""Job lists: one row per job with a duration (or start and end) and the GPUs it held.

The GPU column is named or detected (:data:`~policylint.readers.columns.GPU_CANDIDATES`);
without one every job counts as one GPU. Used for duration percentiles (and
the GPUs of the long-tail jobs); a job list read as concurrency goes through
:mod:`~policylint.readers.request_log`.
"""

from __future__ import annotations

import numpy as np

from policylint.errors import MeasurementError
from policylint.readers.columns import GPU_CANDIDATES, column_index, find_column
from policylint.readers.intervals import read_intervals
from policylint.readers.limits import TraceLimits
from policylint.readers.series import Jobs
from policylint.readers.table import Table

__all__ = ["read_job_table"]


def read_job_table(
    table: Table,
    *,
    duration_column: str | None,
    start_column: str | None,
    end_column: str | None,
    gpus_column: str | None,
    limits: TraceLimits,
    timestamp_unit: str | None = None,
    duration_unit: str | None = None,
    origin: float | None = None,
) -> Jobs:
    """Read a job list into :class:`Jobs` (durations in seconds, GPUs per job)."""
    header, name = table.header, table.name
    gpus_name = gpus_column or find_column(header, GPU_CANDIDATES)
    if gpus_column is not None:
        column_index(header, gpus_column, name)
    intervals = read_intervals(
        table,
        start_column=start_column,
        end_column=end_column,
        duration_column=duration_column,
        limits=limits,
        extra_column=gpus_name,
        timestamp_unit=timestamp_unit,
        duration_unit_=duration_unit,
        origin=origin,
        job_ids=True,
    )
    gpus = intervals.extra
    if gpus is None:
        gpus = np.ones(intervals.durations.shape)
    elif np.isnan(gpus).any():
        i = int(np.argmax(np.isnan(gpus)))
        raise MeasurementError(f"column '{gpus_name}' has an empty cell", source=name, row=intervals.rows.row(i))
    timed = intervals.ends[np.isfinite(intervals.ends)] if (intervals.has_start or end_column) else intervals.ends[:0]
    last = float(timed.max()) if timed.size else None
    return Jobs(durations=intervals.durations, gpus=gpus, source=name, last_time=last)
