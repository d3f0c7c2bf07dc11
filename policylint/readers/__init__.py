"""Measurement readers: trace files in, regular numpy series (or job lists) out.

One module per input form, all returning the same :class:`Series` / :class:`Jobs`:

* :mod:`~policylint.readers.timeseries` - time series tables (CSV, Parquet, Arrow IPC),
* :mod:`~policylint.readers.prometheus` - Prometheus ``query_range`` JSON answers,
* :mod:`~policylint.readers.request_log` - request logs, turned into concurrency,
* :mod:`~policylint.readers.jobs` - job lists (durations and GPUs),

on top of shared pieces: :mod:`~policylint.readers.source` (the guarded opening
of a file), :mod:`~policylint.readers.table` (CSV/Parquet/Arrow into columns: CSV text in
:mod:`~policylint.readers.csv_columns`, Parquet and Arrow in :mod:`~policylint.readers.arrow_columns`),
:mod:`~policylint.readers.convert` (conversions and row checks),
:mod:`~policylint.readers.timestamps`, :mod:`~policylint.readers.columns` (the
column names each form recognises), :mod:`~policylint.readers.filters` (row
filters and skipped incomplete rows, counted in the notes of what is returned),
:mod:`~policylint.readers.grid` (one grid, and several series combined on it),
:mod:`~policylint.readers.progress` (progress of long reads, for whoever
listens) and :mod:`~policylint.readers.limits`.

Every problem with a file is a :class:`~policylint.errors.MeasurementError`
naming the file and, where a row is at fault, the row. numpy is imported here;
pyarrow only when a table is read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from policylint.errors import MeasurementError
from policylint.readers.filters import Condition, RowFilter, parse_where, parse_where_text
from policylint.readers.limits import DEFAULT_LIMITS, TraceLimits
from policylint.readers.progress import reading
from policylint.readers.request_log import concurrency
from policylint.readers.series import Exclusion, Gap, Jobs, Series, apply_exclusions
from policylint.readers.source import Source, open_source, sniff_container
from policylint.readers.kept import read_again, read_whole, take
from policylint.readers.csv_columns import CHUNK_ROWS
from policylint.readers.table import FIRST_BYTES, Table, open_table, read_start
from policylint.readers.timestamps import format_time, parse_exclusion, parse_time

__all__ = [
    "CHUNK_ROWS",
    "Condition",
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
    "parse_where_text",
    "read_jobs",
    "read_parts",
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


def reads_value_columns(path: str | Path, fmt: Any) -> bool:
    """Whether a measurement of this file and ``format`` reads the value ``columns`` it names: a table's time
    series does; a Prometheus answer (picked by ``match``), a request log and a job list never read them."""
    kind = _SUFFIXES.get(Path(path).suffix.lower(), "csv") if fmt in (None, "auto") else fmt
    return kind in ("csv", "parquet", "arrow")


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
    where: Mapping[str, Any] | Sequence[Condition] | None = None,
    skip_incomplete: bool = False,
    key_column: str | None = None,
    key_select: str | None = None,
    aggregate: str | None = None,
    gpus_column: str | None = None,
    unit: str | None = None,
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

    Exports as they come: ``where`` keeps only the rows that pass its conditions
    (a declaration's mapping, or :class:`~policylint.readers.filters.Condition`
    values) and ``skip_incomplete`` skips rows with an empty required cell
    instead of refusing the file; both are counted in :attr:`Series.notes`.
    ``key_column`` reads a long table (one row per series and time): one series
    by ``key_select``, or all of them combined by ``aggregate`` (``sum``,
    ``mean``, ``max``; for a Prometheus answer with several series, ``aggregate``
    says how they combine and ``key_select`` picks the series whose
    ``key_column`` label has that value). ``gpus_column`` and ``unit``
    (``concurrency`` or ``gpus``) weigh the jobs of a request log or job list by
    their GPUs: ``unit="gpus"`` finds the GPU column among the usual names, and
    a named ``gpus_column`` implies it.

    Every measured value (a sample, a duration, a job's GPUs) must be a number
    from 0 to 2^53 = 9,007,199,254,740,992
    (:data:`~policylint.readers.convert.MAX_VALUE`): no concurrency, GPU count or
    VRAM byte count comes near it, so a larger one is a wrong column or a corrupt
    file, refused at its row like a negative value. A column is named once (a
    value column listed twice, or one that is also the timestamp, is refused, as
    is a header that repeats a column the read uses), and a CSV row must have as
    many fields as the header.
    Raises :class:`MeasurementError` for every bad-input case.
    """
    limits = limits or DEFAULT_LIMITS
    name = display_name or str(path)
    kind = _kind(Path(path), format, name)
    origin = _origin(time_origin, name)
    row_filter = _row_filter(where, skip_incomplete, name)
    source = open_source(path, name, max_bytes=limits.max_file_bytes, written_as=display_name)
    with reading(name, source.size):
        return _read_series(
            source, kind, origin, row_filter, limits, chunk_rows,
            timestamp_column=timestamp_column, value_columns=value_columns, start_column=start_column,
            end_column=end_column, duration_column=duration_column, match=match, step_seconds=step_seconds,
            max_gap_steps=max_gap_steps, timestamp_unit=timestamp_unit, duration_unit=duration_unit,
            key_column=key_column, key_select=key_select, aggregate=aggregate, gpus_column=gpus_column, unit=unit,
        )


def _read_series(
    source: Source,
    kind: str,
    origin: float | None,
    row_filter: RowFilter,
    limits: TraceLimits,
    chunk_rows: int,
    *,
    timestamp_column: str | None,
    value_columns: Sequence[str] | None,
    start_column: str | None,
    end_column: str | None,
    duration_column: str | None,
    match: Mapping[str, str] | None,
    step_seconds: float | None,
    max_gap_steps: int,
    timestamp_unit: str | None,
    duration_unit: str | None,
    key_column: str | None,
    key_select: str | None,
    aggregate: str | None,
    gpus_column: str | None,
    unit: str | None,
) -> Series:
    name = source.name
    if kind == "prometheus":
        from policylint.readers.prometheus import read_prometheus

        if row_filter.where:
            raise MeasurementError("where filters rows of a table; pick Prometheus series with match", source=name)
        if key_select is not None:
            if key_column is None:
                raise MeasurementError("a selected key needs its key column (the label name)", source=name)
            match = {**(match or {}), key_column: key_select}
        return read_prometheus(source, match, step_seconds, max_gap_steps, limits, aggregate or "sum")
    table = _open(source, kind, limits, chunk_rows)
    table.row_filter = row_filter
    if kind in ("requests", "jobs"):
        from policylint.readers.request_log import read_requests

        if key_column is not None:
            raise MeasurementError("a key column is for time series tables, not request logs or job lists",
                                   source=name)
        series = read_requests(
            table,
            start_column=start_column,
            end_column=end_column,
            duration_column=duration_column,
            step_seconds=step_seconds,
            limits=limits,
            timestamp_unit=timestamp_unit,
            duration_unit=duration_unit,
            origin=origin,
            gpus_column=gpus_column,
            unit=unit,
            detect_gpus=kind == "jobs",
        )
        return replace(series, notes=table.notes)
    from policylint.readers.timeseries import Key, read_table_series

    if gpus_column is not None or unit == "gpus":
        raise MeasurementError("GPU weighting is for request logs and job lists (format requests or jobs)",
                               source=name)
    if (key_select is not None or aggregate is not None) and key_column is None:
        raise MeasurementError("select and aggregate need the key column of a long table", source=name)
    series = read_table_series(
        table,
        timestamp_column=timestamp_column,
        value_columns=value_columns,
        timestamp_unit=timestamp_unit,
        step_seconds=step_seconds,
        max_gap_steps=max_gap_steps,
        limits=limits,
        origin=origin,
        key=Key(key_column, key_select, aggregate) if key_column is not None else None,
    )
    return replace(series, notes=table.notes)


def _row_filter(
    where: Mapping[str, Any] | Sequence[Condition] | None, skip_incomplete: bool, name: str
) -> RowFilter:
    conditions: tuple[Condition, ...]
    try:
        if where is None:
            conditions = ()
        elif isinstance(where, Mapping):
            conditions = parse_where(where)
        else:
            conditions = tuple(where)
    except MeasurementError as exc:
        raise MeasurementError(exc.message, source=name) from None
    return RowFilter(conditions, bool(skip_incomplete))


def _origin(text: str | float | None, name: str) -> float | None:
    from policylint.readers.convert import time_origin

    return time_origin(text, name)


def forget_reads() -> None:
    """Let go what this process kept to read a file once for all its readers (the end of a run's measuring):
    the bytes of files read again (:func:`policylint.readers.kept.read_again`), the last whole file's parsed
    head, and the columns of an export parsed once (:mod:`policylint.readers.csv_memo`)."""
    from policylint.readers import csv_memo
    from policylint.readers.kept import forget_again
    from policylint.readers.table import forget_head

    forget_again()
    forget_head()
    csv_memo.forget()


def _open(source: Source, kind: str, limits: TraceLimits, chunk_rows: int) -> Table:
    data = take(source.path)  # the bytes hashed for the cache key just before, when they were kept
    if data is None:
        # a file read again unchanged (an export every workload reads a column of) is not read once per reader
        data = read_again(source.path)
    if data is None:
        data = read_whole(source.path, lambda: read_start(source))
    head = data if len(data) <= FIRST_BYTES else data[:FIRST_BYTES]
    container = sniff_container(head[:8])
    expected = _CONTAINERS.get(kind)
    if expected is not None and container not in expected:
        what = "a Parquet file" if kind == "parquet" else "an Arrow IPC file"
        raise MeasurementError(f"not {what} (its first bytes are not the {kind} magic number)", source=source.name)
    # A whole CSV file read is parsed from memory: one read of the file, not three.
    whole = data if container == "text" and len(data) == source.size else None
    return open_table(source, limits, chunk_rows=chunk_rows, container=container, head=head, data=whole)


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
    where: Mapping[str, Any] | Sequence[Condition] | None = None,
    skip_incomplete: bool = False,
) -> Jobs:
    """Read a job list (duration or start/end, and GPUs per job) into :class:`Jobs`.

    Without a GPU column every job counts as one GPU. CSV, Parquet and Arrow
    files are accepted (recognised from their first bytes). The unit, limit,
    origin and row filter options are those of :func:`read_series`.
    """
    limits = limits or DEFAULT_LIMITS
    name = display_name or str(path)
    origin = _origin(time_origin, name)
    row_filter = _row_filter(where, skip_incomplete, name)
    source = open_source(path, name, max_bytes=limits.max_file_bytes, written_as=display_name)
    with reading(name, source.size):
        table = _open(source, "jobs", limits, chunk_rows)
        table.row_filter = row_filter
        jobs = _read_job_table(table, duration_column, start_column, end_column, gpus_column, limits,
                               timestamp_unit, duration_unit, origin)
    return replace(jobs, notes=table.notes)


def _read_job_table(
    table: Table,
    duration_column: str | None,
    start_column: str | None,
    end_column: str | None,
    gpus_column: str | None,
    limits: TraceLimits,
    timestamp_unit: str | None,
    duration_unit: str | None,
    origin: float | None,
) -> Jobs:
    from policylint.readers.jobs import read_job_table

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


def read_parts(
    path: str | Path,
    *,
    key_column: str,
    key_select: str | None = None,
    format: str = "auto",  # noqa: A002 - the public option name is "format"
    timestamp_column: str | None = None,
    value_columns: Sequence[str] | None = None,
    match: Mapping[str, str] | None = None,
    step_seconds: float | None = None,
    max_gap_steps: int = 5,
    display_name: str | None = None,
    timestamp_unit: str | None = None,
    limits: TraceLimits | None = None,
    time_origin: str | float | None = None,
    where: Mapping[str, Any] | Sequence[Condition] | None = None,
    skip_incomplete: bool = False,
    duration_unit: str | None = None,
    unusable: dict[str, str] | None = None,
) -> dict[str, Series]:
    """Every series of a long table (or Prometheus answer), by key value, each on its own grid.

    For per-pod measurements (VRAM residency per pod): ``key_column`` is the
    table's key column or the Prometheus label; series of one Prometheus answer
    that share the label value are summed. ``key_select`` keeps one key. The
    series' notes carry what the row filters dropped. With ``unusable`` (a dict to
    fill), a key whose rows do not form a series (no usable value, a single
    sample) is left out and its reason recorded there instead of failing the
    read: an activity series paired with memory by pod must say which pod has
    none, not which row ended its read.
    """
    del duration_unit  # accepted for symmetry with read_series; a time series has no durations
    from policylint.readers.grid import combine, finish

    limits = limits or DEFAULT_LIMITS
    name = display_name or str(path)
    kind = _kind(Path(path), format, name)
    if kind in ("requests", "jobs"):
        raise MeasurementError("series by key are read from time series tables or Prometheus answers", source=name)
    origin = _origin(time_origin, name)
    row_filter = _row_filter(where, skip_incomplete, name)
    source = open_source(path, name, max_bytes=limits.max_file_bytes, written_as=display_name)
    out: dict[str, Series] = {}
    if kind == "prometheus":
        from policylint.readers.prometheus import prometheus_series

        if row_filter.where:
            raise MeasurementError("where filters rows of a table; pick Prometheus series with match", source=name)
        wanted = {**(match or {}), key_column: key_select} if key_select is not None else match
        groups: dict[str, list[tuple[str, Any, Any]]] = {}
        for label, metric, times, values in prometheus_series(source, wanted, limits):
            value = metric.get(key_column)
            if value is None:
                raise MeasurementError(f"series {label} has no label '{key_column}'", source=name)
            groups.setdefault(str(value), []).append((label, times, values))
        for value in sorted(groups):
            try:
                out[value] = combine(groups[value], "sum", name=f"{name} [{key_column}={value}]",
                                     step_seconds=step_seconds, max_gap_steps=max_gap_steps, limits=limits)
            except MeasurementError as exc:
                if unusable is None:
                    raise
                unusable[value] = exc.message
        return out
    from policylint.readers.timeseries import Key, read_keyed_parts

    table = _open(source, kind, limits, CHUNK_ROWS)
    table.row_filter = row_filter
    parts = read_keyed_parts(
        table, Key(key_column, key_select), timestamp_column, value_columns, timestamp_unit, limits, origin
    )
    for value, times, values in parts:
        try:
            series = finish(times, values, name=f"{name} [{key_column}={value}]", step_seconds=step_seconds,
                            max_gap_steps=max_gap_steps, limits=limits)
        except MeasurementError as exc:
            if unusable is None:
                raise
            unusable[value] = exc.message
            continue
        out[value] = replace(series, notes=table.notes)
    return out
