"""Measurement readers: trace files in, regular numpy series (or job lists) out.

One module per input form, all returning the same :class:`Series` / :class:`Jobs`:

* :mod:`~policylint.readers.timeseries` - time series tables (CSV, Parquet, Arrow IPC),
* :mod:`~policylint.readers.prometheus` - Prometheus ``query_range`` JSON answers,
* :mod:`~policylint.readers.request_log` - request logs, turned into concurrency,
* :mod:`~policylint.readers.jobs` - job lists (durations and GPUs),

on top of shared pieces: :mod:`~policylint.readers.source` (the guarded opening
of a file), :mod:`~policylint.readers.table` (CSV/Parquet/Arrow into columns),
:mod:`~policylint.readers.convert` (conversions and row checks),
:mod:`~policylint.readers.timestamps`, :mod:`~policylint.readers.columns` (the
column names each form recognises), :mod:`~policylint.readers.grid` and
:mod:`~policylint.readers.limits`.

Every problem with a file is a :class:`~policylint.errors.MeasurementError`
naming the file and, where a row is at fault, the row. numpy is imported here;
pyarrow only when a table is read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from policylint.errors import MeasurementError
from policylint.readers.limits import DEFAULT_LIMITS, TraceLimits
from policylint.readers.request_log import concurrency
from policylint.readers.series import Exclusion, Gap, Jobs, Series, apply_exclusions
from policylint.readers.source import Source, open_source, read_head, sniff_container
from policylint.readers.table import CHUNK_ROWS, Table, open_table
from policylint.readers.timestamps import format_time, parse_exclusion, parse_time

__all__ = [
    "CHUNK_ROWS",
    "DEFAULT_LIMITS",
    "FORMATS",
    "Exclusion",
    "Gap",
    "Jobs",
    "Series",
    "TraceLimits",
    "apply_exclusions",
    "concurrency",
    "format_time",
    "parse_exclusion",
    "parse_time",
    "read_jobs",
    "read_series",
]

FORMATS = ("auto", "csv", "parquet", "arrow", "prometheus", "requests", "jobs")
"""Values of ``format``: how to read a measurement."""

_SUFFIXES = {
    ".json": "prometheus",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".arrow": "arrow",
    ".feather": "arrow",
    ".ipc": "arrow",
    ".arrows": "arrow",
}

_CONTAINERS = {"parquet": ("parquet",), "arrow": ("arrow", "arrow-stream")}


def _kind(path: Path, fmt: str, name: str) -> str:
    if fmt not in FORMATS:
        raise MeasurementError(
            f"unknown measurement format {fmt!r} (expected {', '.join(FORMATS[:-1])} or {FORMATS[-1]})",
            source=name,
        )
    if fmt == "auto":
        return _SUFFIXES.get(path.suffix.lower(), "csv")
    return fmt


def read_series(
    path: str | Path,
    *,
    format: str = "auto",  # noqa: A002 - the public option name is "format"
    timestamp_column: str | None = None,
    value_columns: Sequence[str] | None = None,
    start_column: str | None = None,
    end_column: str | None = None,
    duration_column: str | None = None,
    match: Mapping[str, str] | None = None,
    step_seconds: float | None = None,
    max_gap_steps: int = 5,
    display_name: str | None = None,
    chunk_rows: int = CHUNK_ROWS,
    timestamp_unit: str | None = None,
    duration_unit: str | None = None,
    limits: TraceLimits | None = None,
    time_origin: str | float | None = None,
) -> Series:
    """Read a measurement into a regular :class:`Series`.

    ``format`` is ``auto`` (by suffix: ``.json`` Prometheus, ``.parquet``/``.pq``
    Parquet, ``.arrow``/``.feather``/``.ipc`` Arrow IPC, anything else CSV),
    ``csv``, ``parquet``, ``arrow`` (time series tables; the container is
    recognised from the file's first bytes), ``prometheus``, ``requests`` or
    ``jobs`` (a request log or job list: concurrency of running intervals).
    ``display_name`` is how messages name the file (defaults to the path as
    given). ``timestamp_unit`` (``s``, ``ms``, ``us``, ``ns``) declares the unit of
    epoch-number timestamps instead of detecting it; ``duration_unit`` that of a
    duration column instead of reading it from the column name.
    ``time_origin`` (ISO-8601 or unix seconds) makes epoch-number timestamps
    times relative to it (in seconds unless ``timestamp_unit`` says otherwise).
    ``limits`` bounds what the file may make the reader hold (:class:`TraceLimits`).
    Raises :class:`MeasurementError` for every bad-input case.
    """
    limits = limits or DEFAULT_LIMITS
    name = display_name or str(path)
    kind = _kind(Path(path), format, name)
    origin = _origin(time_origin, name)
    source = open_source(path, name, max_bytes=limits.max_file_bytes, written_as=display_name)
    if kind == "prometheus":
        from policylint.readers.prometheus import read_prometheus

        return read_prometheus(source, match, step_seconds, max_gap_steps, limits)
    table = _open(source, kind, limits, chunk_rows)
    if kind in ("requests", "jobs"):
        from policylint.readers.request_log import read_requests

        return read_requests(
            table,
            start_column=start_column,
            end_column=end_column,
            duration_column=duration_column,
            step_seconds=step_seconds,
            limits=limits,
            timestamp_unit=timestamp_unit,
            duration_unit=duration_unit,
            origin=origin,
        )
    from policylint.readers.timeseries import read_table_series

    return read_table_series(
        table,
        timestamp_column=timestamp_column,
        value_columns=value_columns,
        timestamp_unit=timestamp_unit,
        step_seconds=step_seconds,
        max_gap_steps=max_gap_steps,
        limits=limits,
        origin=origin,
    )


def _origin(text: str | float | None, name: str) -> float | None:
    from policylint.readers.convert import time_origin

    return time_origin(text, name)


def _open(source: Source, kind: str, limits: TraceLimits, chunk_rows: int) -> Table:
    magic = read_head(source, 8)
    container = sniff_container(magic)
    # Only CSV needs more of the file up front (its header and a sample of rows).
    head = read_head(source, 64 * 1024) if container == "text" and source.size > len(magic) else magic
    expected = _CONTAINERS.get(kind)
    if expected is not None and container not in expected:
        what = "a Parquet file" if kind == "parquet" else "an Arrow IPC file"
        raise MeasurementError(f"not {what} (its first bytes are not the {kind} magic number)", source=source.name)
    return open_table(source, limits, chunk_rows=chunk_rows, container=container, head=head)


def read_jobs(
    path: str | Path,
    *,
    duration_column: str | None = None,
    start_column: str | None = None,
    end_column: str | None = None,
    gpus_column: str | None = None,
    display_name: str | None = None,
    chunk_rows: int = CHUNK_ROWS,
    timestamp_unit: str | None = None,
    duration_unit: str | None = None,
    limits: TraceLimits | None = None,
    time_origin: str | float | None = None,
) -> Jobs:
    """Read a job list (duration or start/end, and GPUs per job) into :class:`Jobs`.

    Without a GPU column every job counts as one GPU. CSV, Parquet and Arrow
    files are accepted (recognised from their first bytes). The unit, limit and
    origin options are those of :func:`read_series`.
    """
    from policylint.readers.jobs import read_job_table

    limits = limits or DEFAULT_LIMITS
    name = display_name or str(path)
    origin = _origin(time_origin, name)
    source = open_source(path, name, max_bytes=limits.max_file_bytes, written_as=display_name)
    table = _open(source, "jobs", limits, chunk_rows)
    return read_job_table(
        table,
        duration_column=duration_column,
        start_column=start_column,
        end_column=end_column,
        gpus_column=gpus_column,
        limits=limits,
        timestamp_unit=timestamp_unit,
        duration_unit=duration_unit,
        origin=origin,
    )
