"""Which column holds what: the names each input form recognises, and their units.

Names are compared without regard to case, and the first candidate present in
the file wins, so the more specific names come first. A column named on the
command line or in a declaration always wins over detection. docs/measurements.md
lists these tuples; a test keeps the two in step.
"""

from __future__ import annotations

from collections.abc import Sequence

from policylint.errors import MeasurementError

__all__ = [
    "DURATION_CANDIDATES",
    "END_CANDIDATES",
    "GPU_CANDIDATES",
    "KEY_CANDIDATES",
    "START_CANDIDATES",
    "TIMESTAMP_CANDIDATES",
    "column_index",
    "duration_unit",
    "find_column",
]

TIMESTAMP_CANDIDATES = ("timestamp", "time", "ts", "datetime", "date", "_time", "@timestamp")
"""Time series: the timestamp column (otherwise the first column)."""

START_CANDIDATES = (
    "start",
    "start_time",
    "started_at",
    "begin",
    "begin_time",
    "start_timestamp",
    "scheduled_time",
    "submit_time",
    "arrival_time",
    "request_time",
    "gmt_create",
    "creation_time",
    "created_at",
    "timestamp",
)
"""Request logs and job lists: when the work started (or arrived)."""

END_CANDIDATES = (
    "end",
    "end_time",
    "ended_at",
    "end_timestamp",
    "finish",
    "finish_time",
    "finished_at",
    "completion_time",
    "completed_at",
    "stop_time",
    "deletion_time",
)
"""Request logs and job lists: when the work ended."""

DURATION_CANDIDATES = (
    "duration",
    "duration_seconds",
    "duration_s",
    "duration_sec",
    "runtime",
    "run_time",
    "runtime_seconds",
    "elapsed",
    "elapsed_seconds",
    "duration_ms",
    "latency_ms",
    "elapsed_ms",
    "response_time_ms",
    "duration_us",
    "duration_ns",
)
"""Request logs and job lists: how long the work ran (unit from the name's suffix)."""

GPU_CANDIDATES = (
    "gpus",
    "gpu",
    "gpu_num",
    "num_gpu",
    "num_gpus",
    "ngpus",
    "gpu_count",
    "gpus_per_job",
    "gpu_request",
)
"""Job lists: GPUs a job held (otherwise one per job)."""

KEY_CANDIDATES = (
    "pod",
    "pod_name",
    "container_ip",
    "container",
    "instance",
    "node",
    "hostname",
    "host",
    "gpu",
    "uuid",
    "model_name",
)
"""Long tables: columns that name a series. Never used silently: only to suggest
declaring the key when a table's times repeat."""

_DURATION_SUFFIXES = (("_ms", "ms"), ("_us", "us"), ("_ns", "ns"))


def duration_unit(column: str) -> str:
    """Unit of a duration column from its name: ``_ms``, ``_us``, ``_ns`` suffixes, else seconds."""
    lowered = column.lower()
    for suffix, unit in _DURATION_SUFFIXES:
        if lowered.endswith(suffix):
            return unit
    return "s"


def find_column(header: Sequence[str], candidates: Sequence[str]) -> str | None:
    """The first candidate present in ``header`` (any case), as the header spells it."""
    lowered: dict[str, str] = {}
    for h in header:
        lowered.setdefault(h.lower(), h)
    for candidate in candidates:
        if candidate in lowered:
            return lowered[candidate]
    return None


def column_index(header: Sequence[str], column: str, name: str) -> int:
    """Position of ``column`` in ``header``; an error listing the columns when absent."""
    try:
        return list(header).index(column)
    except ValueError:
        raise MeasurementError(
            f"missing column '{column}' (columns: {', '.join(header)})", source=name, row=1
        ) from None
