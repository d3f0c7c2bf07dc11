"""Parquet and Arrow IPC files read into Arrow columns, within the limits their metadata is checked against.

Before a value is decoded, the footer (Parquet) or the batches' metadata (Arrow
IPC) say how many rows and columns the file holds and how large the columns read
would be once decoded (:mod:`policylint.readers.binary`,
:mod:`policylint.readers.arrow_ipc`); text columns are read as dictionaries and
expanded only once their full size is known. Errors about a value name the row
as the record number, counting from 1.

pyarrow is imported only inside the functions that read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from policylint.errors import MeasurementError
from policylint.readers.arrow_ipc import check_ipc
from policylint.readers.binary import (
    check_columns,
    check_decoded,
    check_parquet,
    check_parquet_footer,
    decode_dictionaries,
    variable_width,
)
from policylint.readers.limits import TraceLimits, check_rows
from policylint.readers.rows import Rows
from policylint.readers.source import Source

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["open_binary", "read_binary"]


class _Ordinal(Rows):
    """Parquet, Arrow, Prometheus: record numbers counting from 1."""


def read_binary(
    source: Source, container: str, header: list[str], parquet: Any, limits: TraceLimits, indexes: Sequence[int]
) -> tuple[list[pa.ChunkedArray], Rows]:
    """The columns at ``indexes`` of a Parquet or Arrow IPC file, refused before decoding when they would
    take more than ``limits`` allow (``parquet``: the file's footer when it was parsed at opening)."""
    import pyarrow as pa

    unique = list(dict.fromkeys(indexes))
    labels = [header[i] for i in unique]
    try:
        if container == "parquet":
            import pyarrow.parquet as pq

            handle = parquet or pq.ParquetFile(str(source.path), memory_map=True)
            schema = handle.schema_arrow
            # rows, columns and decoded size from the footer, before a value is decoded
            check_parquet(handle.metadata, schema, labels, limits, source.name, path=source.path)
            text = variable_width(schema, labels)
            if text:
                # Text is read as a dictionary (indices and distinct values) and
                # expanded only once its full size is known to be within the limit.
                handle = pq.ParquetFile(str(source.path), memory_map=True, read_dictionary=text)
            table = handle.read(columns=labels)
            read = {i: table.column(header[i]) for i in unique}
        else:
            table = _read_ipc(source, container, limits)
            read = {i: table.column(i) for i in unique}
        check_decoded(list(read.values()), labels, limits, source.name)
        expanded = {i: decode_dictionaries(column) for i, column in read.items()}
        columns = [expanded[i] for i in indexes]
    except KeyError:
        # Arrow refuses to pick a column by a name the file holds twice.
        dup = sorted({h for h in header if header.count(h) > 1})
        raise MeasurementError(
            f"column names appear more than once ({', '.join(dup)}); rename them", source=source.name, row=1
        ) from None
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise MeasurementError(f"cannot read: {_arrow_message(exc)}", source=source.name) from None
    return columns, _Ordinal()


def open_binary(source: Source, kind: str, limits: TraceLimits) -> tuple[list[str], Any]:
    """The column names of a Parquet or Arrow IPC file and, for Parquet, the file with its footer parsed.

    The footer's length, the number of rows and of columns are checked before anything else is read.
    """
    import pyarrow as pa

    parquet = None
    try:
        if kind == "parquet":
            import pyarrow.parquet as pq

            check_parquet_footer(_read_tail(source, 8), source.size, source.name)
            parquet = pq.ParquetFile(str(source.path), memory_map=True)
            schema = parquet.schema_arrow
            check_rows(parquet.metadata.num_rows, limits, source.name)
        else:
            with pa.memory_map(str(source.path)) as mapped:
                schema = (pa.ipc.open_file(mapped) if kind == "arrow" else pa.ipc.open_stream(mapped)).schema
        check_columns(len(schema), limits, source.name)
        names = [str(n).strip() for n in schema.names]  # Arrow decodes each name as UTF-8 here
    except UnicodeDecodeError:
        # found by the arrow fuzz target: a schema whose field name is not UTF-8 raised from Arrow's decoding
        raise MeasurementError("cannot read: a column name is not valid UTF-8", source=source.name) from None
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise MeasurementError(f"cannot read: {_arrow_message(exc)}", source=source.name) from None
    return names, parquet


def _arrow_message(exc: BaseException) -> str:
    """The first line of an Arrow error, as a message shows it."""
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


def _read_ipc(source: Source, container: str, limits: TraceLimits) -> pa.Table:
    """An Arrow IPC file or stream, its batches' sizes checked from their metadata before any is decoded."""
    import pyarrow as pa

    # Memory-mapped: the batches' metadata says how many rows they hold and how
    # large their buffers are once decompressed, checked before any is decoded.
    with pa.memory_map(str(source.path)) as mapped:
        data = memoryview(mapped.read_buffer())
        mapped.seek(0)
        if container == "arrow":
            reader = pa.ipc.open_file(mapped)
            check_ipc(data, container, reader.schema, limits, source.name)
            return reader.read_all()
        stream = pa.ipc.open_stream(mapped)
        check_ipc(data, container, stream.schema, limits, source.name)
        batches = []
        count = 0
        for batch in stream:
            count += batch.num_rows
            check_rows(count, limits, source.name)
            batches.append(batch)
        return pa.Table.from_batches(batches, schema=stream.schema)


def _read_tail(source: Source, size: int) -> bytes:
    """The last ``size`` bytes of the file (all of it when it is shorter)."""
    try:
        with source.path.open("rb") as handle:
            handle.seek(max(0, source.size - size))
            return handle.read(size)
    except OSError as exc:
        raise MeasurementError(f"cannot read: {exc.strerror or exc}", source=source.name) from None
