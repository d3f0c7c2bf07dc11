"""What a Parquet file would take once decoded, read from its metadata; the column types a trace may hold.

A few megabytes of Parquet or Arrow can stand for gigabytes of values: a column
of one long string repeated ten million times compresses (or dictionary-encodes)
to almost nothing. The byte limit on the file and the row limit do not bound
that, so before any column is decoded the readers check, from the file's own
metadata:

* Parquet (here) - the footer's length (read from the file's last bytes, before the
  footer is parsed), the number of columns, the number of rows, and for the
  columns to be read their decoded size: rows x width for fixed-width types,
  the uncompressed size of the column chunks for text (which bounds plain and
  compressed text; dictionary-encoded text is read as a dictionary and sized
  exactly before it is expanded, see :func:`decode_dictionaries`); then, given
  the file's path, every page header of those column chunks, walked from the
  file's bytes (:mod:`policylint.readers.parquet_pages`): the decoder trusts a
  page's own uncompressed size, so a page claiming 2 GB in a chunk the footer
  calls small is refused before pyarrow allocates for it;
* Arrow IPC (file and stream) - :mod:`policylint.readers.arrow_ipc`, from the
  batches' metadata, with the column and type checks of this module.

Columns of nested types (lists, structs, maps, unions, run-end encoded) cannot
be a trace column and are refused by name before anything is read
(:func:`refuse_nested`). Once decoded, Arrow columns are validated and sized
with their dictionaries expanded (:func:`check_decoded`), whatever file they
came from.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from policylint.errors import MeasurementError
from policylint.readers.limits import TraceLimits, check_rows

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "MAX_PARQUET_FOOTER_BYTES",
    "check_columns",
    "check_decoded",
    "check_parquet",
    "check_parquet_footer",
    "check_parquet_pages",
    "decode_dictionaries",
    "refuse_nested",
    "too_big",
    "variable_width",
]

MAX_PARQUET_FOOTER_BYTES = 64 * 1024 * 1024
"""Largest Parquet footer parsed: it lists every column of every row group, so a
wide file of many row groups has a large one, but no trace has one this size."""


def _mib(n: int) -> str:
    return f"{n / (1024 * 1024):,.0f} MiB" if n >= 1024 * 1024 else f"{n:,} bytes"


def too_big(decoded: int, limits: TraceLimits, name: str, what: str) -> MeasurementError:
    """The error for ``what`` (columns, batches) that would decode to more than the limit allows."""
    return MeasurementError(
        f"{what} decode to {_mib(decoded)}, more than the {_mib(limits.decoded_bytes)} a trace may take "
        "once decoded (a highly compressed or dictionary-encoded file); refused before decoding",
        source=name,
    )


def check_columns(count: int, limits: TraceLimits, name: str) -> None:
    """Refuse a file with more columns than ``limits.max_columns``."""
    if count > limits.max_columns:
        raise MeasurementError(
            f"{count:,} columns, more than the {limits.max_columns:,} a trace file may have", source=name
        )


# -- types ---------------------------------------------------------------------------------------------


def _kind(t: pa.DataType) -> str:
    """``fixed``, ``variable`` (text or bytes), or ``nested`` (refused)."""
    import pyarrow as pa

    types = pa.types
    if types.is_dictionary(t):
        return "variable" if _kind(t.value_type) == "variable" else _kind(t.value_type)
    if (
        types.is_integer(t)
        or types.is_floating(t)
        or types.is_boolean(t)
        or types.is_null(t)
        or types.is_decimal(t)
        or types.is_temporal(t)
        or types.is_fixed_size_binary(t)
    ):
        return "fixed"
    if types.is_string(t) or types.is_large_string(t) or types.is_binary(t) or types.is_large_binary(t):
        return "variable"
    if getattr(types, "is_string_view", None) and (types.is_string_view(t) or types.is_binary_view(t)):
        return "variable"
    return "nested"


def _width(t: pa.DataType) -> int:
    """Bytes one value of a fixed-width type takes decoded (a bit rounds up to a byte)."""
    import pyarrow as pa

    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_null(t):
        return 0
    try:
        return max(1, int(t.bit_width) // 8)
    except ValueError:  # a type without a bit width: count it as a pointer
        return 8


def refuse_nested(schema: pa.Schema, names: Sequence[str], name: str) -> None:
    """Refuse a column of ``names`` whose type is nested (a list, struct, map ...): no trace column is."""
    for column in names:
        index = schema.get_field_index(column)
        if index < 0:
            continue  # missing or repeated: the read reports it by name
        t = schema.field(index).type
        if _kind(t) == "nested":
            raise MeasurementError(
                f"column '{column}' holds {t}: a trace column holds numbers, text or times", source=name, row=1
            )


def variable_width(schema: pa.Schema, names: Sequence[str]) -> list[str]:
    """The columns of ``names`` holding text or bytes (read as dictionaries, sized before expanding)."""
    found = []
    for column in names:
        index = schema.get_field_index(column)
        if index >= 0 and _kind(schema.field(index).type) == "variable":
            found.append(column)
    return found


# -- Parquet -------------------------------------------------------------------------------------------


def check_parquet_footer(tail: bytes, size: int, name: str) -> None:
    """Refuse a Parquet file whose footer (length in its last 8 bytes) is implausible, before parsing it."""
    if len(tail) < 8 or tail[-4:] != b"PAR1":
        raise MeasurementError("cannot read: not a complete Parquet file (no footer)", source=name)
    (length,) = struct.unpack("<I", tail[-8:-4])
    if length > size - 12:
        raise MeasurementError(
            f"cannot read: the Parquet footer claims {length:,} bytes in a {size:,}-byte file", source=name
        )
    if length > MAX_PARQUET_FOOTER_BYTES:
        raise MeasurementError(
            f"the Parquet footer is {_mib(length)}, more than the {_mib(MAX_PARQUET_FOOTER_BYTES)} "
            "read for a trace; refused",
            source=name,
        )


def check_parquet(
    meta: Any,
    schema: pa.Schema,
    names: Sequence[str],
    limits: TraceLimits,
    name: str,
    path: str | os.PathLike[str] | None = None,
) -> None:
    """Rows, columns and the decoded size of ``names`` from a Parquet footer (``pyarrow.parquet.FileMetaData``).

    With the file's ``path``, the page headers of the column chunks of ``names`` are
    checked as well (:func:`check_parquet_pages`).
    """
    check_columns(meta.num_columns, limits, name)
    groups = [meta.row_group(i) for i in range(meta.num_row_groups)]
    rows = max(int(meta.num_rows), sum(int(g.num_rows) for g in groups))
    check_rows(rows, limits, name)
    refuse_nested(schema, names, name)
    leaves: dict[str, list[int]] = {}
    for j in range(meta.num_columns):
        leaves.setdefault(meta.schema.column(j).path, []).append(j)
    decoded = 0
    for column in dict.fromkeys(names):
        index = schema.get_field_index(column)
        if index < 0:
            continue
        t = schema.field(index).type
        variable = _kind(t) == "variable"
        for g in groups:
            n = max(0, int(g.num_rows))
            if variable:
                # values and their offsets; a dictionary page counts once per row group
                decoded += 8 * n + sum(max(0, int(g.column(j).total_uncompressed_size)) for j in leaves.get(column, []))
            else:
                decoded += n * _width(t) + (n + 7) // 8  # values and their validity bits
    if decoded > limits.decoded_bytes:
        raise too_big(decoded, limits, name, f"the columns read ({', '.join(names)})")
    if path is not None:
        check_parquet_pages(path, meta, [column for column in dict.fromkeys(names) if column in leaves], limits, name)


def _chunks(meta: Any, names: Sequence[str], name: str) -> list[Any]:
    """The footer's column chunks of the (top-level, not nested) columns ``names``, row group by row group."""
    from policylint.readers.parquet_pages import Chunk

    index = {meta.schema.column(j).path: j for j in range(meta.num_columns)}
    found = []
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        for column in names:
            j = index.get(column)
            if j is None:
                continue
            c = group.column(j)
            if c.file_path:
                raise MeasurementError(
                    f"column '{column}' is stored in another file ({c.file_path!r}); a trace is one file", source=name
                )
            start = int(c.data_page_offset)
            dictionary = c.dictionary_page_offset if c.has_dictionary_page else None
            if dictionary is not None and 0 < int(dictionary) < start:
                start = int(dictionary)
            found.append(
                Chunk(column, g, start, int(c.total_compressed_size), int(c.total_uncompressed_size), int(c.num_values))
            )
    return found


def check_parquet_pages(path: str | os.PathLike[str], meta: Any, names: Sequence[str], limits: TraceLimits, name: str) -> None:
    """Refuse a Parquet file one of whose pages (of the columns ``names``) would decode to more than its footer allows.

    Each page header is read from the file's bytes: a page may not declare more
    uncompressed bytes than its whole column chunk, nor more than the decoded-size
    limit, nor more values than its chunk; the pages of all the columns read may
    not add up to more than the limit; a header that cannot be read is refused.
    """
    from policylint.readers import parquet_pages as pages

    try:
        pages.check_chunks(path, _chunks(meta, names, name), limits.decoded_bytes)
    except pages.PageRefused as exc:
        raise MeasurementError(f"{exc}; refused before decoding", source=name) from None
    except pages.TooManyPages:
        raise MeasurementError(
            f"more than {pages.MAX_PAGES:,} pages (or page headers larger than Parquet writes) in the columns read, "
            "more than a trace file holds; refused",
            source=name,
        ) from None
    except pages.Malformed as exc:
        raise MeasurementError(f"cannot read: malformed Parquet page header ({exc})", source=name) from None
    except (OSError, ValueError) as exc:
        raise MeasurementError(f"cannot read: {getattr(exc, 'strerror', None) or exc}", source=name) from None


# -- decoded Arrow columns -------------------------------------------------------------------------------


def _dictionary_bytes(chunk: pa.DictionaryArray) -> int:
    """Bytes ``chunk`` takes once expanded to its value type, computed from the indices and the dictionary."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(chunk)
    value_type = chunk.type.value_type
    if _kind(value_type) != "variable":
        return n * _width(value_type)
    if n == 0 or len(chunk.dictionary) == 0:
        return 8 * n
    lengths = pc.fill_null(pc.binary_length(chunk.dictionary), 0).cast(pa.int64())
    total = pc.sum(pc.take(lengths, pc.fill_null(chunk.indices, 0))).as_py() or 0
    return int(total) + 8 * n


def column_bytes(column: pa.ChunkedArray) -> int:
    """Bytes ``column`` takes with every dictionary expanded (its own size otherwise)."""
    import pyarrow as pa

    if not pa.types.is_dictionary(column.type):
        return int(column.nbytes)
    return sum(_dictionary_bytes(chunk) for chunk in column.chunks)


def check_decoded(columns: Sequence[pa.ChunkedArray], labels: Sequence[str], limits: TraceLimits, name: str) -> None:
    """Refuse columns that are not well-formed Arrow data, or whose expanded size (dictionaries
    included) is over ``limits.decoded_bytes``.

    An IPC file's batch may declare more values than its buffers hold (pyarrow reads
    it as it is), or dictionary indices beyond the dictionary: Arrow's own validation
    finds both before a value is converted or looked up.
    """
    import pyarrow as pa

    for column, label in zip(columns, labels, strict=False):
        for chunk in column.chunks:
            try:
                chunk.validate(full=True)
            except pa.ArrowException as exc:
                raise MeasurementError(f"cannot read column '{label}': malformed Arrow data ({exc})", source=name) from None
    decoded = sum(column_bytes(c) for c in columns)
    if decoded > limits.decoded_bytes:
        raise too_big(decoded, limits, name, f"the columns read ({', '.join(labels)})")


def decode_dictionaries(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """``column`` with dictionary encoding expanded (after :func:`check_decoded` allowed it)."""
    import pyarrow as pa

    if not pa.types.is_dictionary(column.type):
        return column
    return column.cast(column.type.value_type)
