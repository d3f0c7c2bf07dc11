"""What an Arrow IPC file or stream would take once decoded, read from its messages' metadata.

For every record batch and dictionary batch: its row count and the decoded
size of its buffers (for compressed buffers, the uncompressed length each
buffer starts with), so that a file of a few megabytes that stands for
gigabytes is refused before anything is decompressed. The number of columns
and nested types are refused from the schema first, as for Parquet
(:mod:`policylint.readers.binary`).

The metadata of an IPC message is a flatbuffer (format/Message.fbs,
format/File.fbs of the Arrow project). pyarrow decodes a batch to read its
length, which for a compressed file means decompressing it, so the few fields
needed are read here directly.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

from policylint.errors import MeasurementError
from policylint.readers.binary import check_columns, refuse_nested, too_big
from policylint.readers.limits import TraceLimits, check_rows

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["MAX_IPC_MESSAGES", "check_ipc"]

_RECORD_BATCH = 3
_DICTIONARY_BATCH = 2
_CONTINUATION = 0xFFFFFFFF

MAX_IPC_MESSAGES = 100_000
"""Most record and dictionary batches read from one Arrow file: each is parsed on
its own, and a trace of ten million rows written in batches of a hundred needs
this many; more is a file built to make the reader loop."""


class _Malformed(Exception):
    pass


class _TooMany(Exception):
    pass


class _Table:
    """One flatbuffer table: its position in ``buf`` and its vtable."""

    def __init__(self, buf: memoryview, pos: int) -> None:
        self.buf = buf
        self.pos = pos
        vtable = pos - _i32(buf, pos)
        self.vsize = _u16(buf, vtable)
        self.vtable = vtable

    def _field(self, slot: int) -> int:
        at = 4 + 2 * slot
        if at + 2 > self.vsize:
            return 0
        return _u16(self.buf, self.vtable + at)

    def scalar(self, slot: int, fmt: str, default: int = 0) -> int:
        off = self._field(slot)
        if not off:
            return default
        return int(_unpack(fmt, self.buf, self.pos + off))

    def table(self, slot: int) -> _Table | None:
        off = self._field(slot)
        if not off:
            return None
        at = self.pos + off
        return _Table(self.buf, at + _u32(self.buf, at))

    def structs(self, slot: int, size: int) -> list[tuple[int, ...]]:
        """A vector of structs of two int64 (``size`` 16) or of a Block (``size`` 24)."""
        off = self._field(slot)
        if not off:
            return []
        at = self.pos + off
        start = at + _u32(self.buf, at)
        count = _u32(self.buf, start)
        if count * size > len(self.buf):
            raise _Malformed
        if count > MAX_IPC_MESSAGES:
            raise _TooMany  # before a tuple is made for each
        fmt = "<qq" if size == 16 else "<qi4xq"
        return [struct.unpack_from(fmt, self.buf, start + 4 + k * size) for k in range(count)]


def _unpack(fmt: str, buf: memoryview, at: int) -> Any:
    if at < 0:
        raise _Malformed
    try:
        return struct.unpack_from(fmt, buf, at)[0]
    except struct.error:
        raise _Malformed from None


def _u16(buf: memoryview, at: int) -> int:
    return int(_unpack("<H", buf, at))


def _u32(buf: memoryview, at: int) -> int:
    return int(_unpack("<I", buf, at))


def _i32(buf: memoryview, at: int) -> int:
    return int(_unpack("<i", buf, at))


def _root(buf: memoryview) -> _Table:
    return _Table(buf, _u32(buf, 0))


def _batch_size(batch: _Table, body: memoryview) -> tuple[int, int]:
    """(rows, decoded bytes) of a RecordBatch table whose body is ``body``."""
    rows = batch.scalar(0, "<q")
    buffers = batch.structs(2, 16)
    compressed = batch.table(3) is not None
    decoded = 0
    for offset, length in buffers:
        if offset < 0 or length < 0 or offset + length > len(body):
            raise _Malformed
        if compressed and length >= 8:
            (raw,) = struct.unpack_from("<q", body, offset)
            decoded += length - 8 if raw == -1 else raw
        else:
            decoded += length
    if rows < 0 or decoded < 0:
        raise _Malformed
    return rows, decoded


def _message(metadata: memoryview, body: memoryview) -> tuple[int, int, int]:
    """(kind, rows, decoded bytes) of one message; rows only count for record batches."""
    message = _root(metadata)
    kind = message.scalar(1, "<B")
    header = message.table(2)
    if header is None or kind not in (_RECORD_BATCH, _DICTIONARY_BATCH):
        return kind, 0, 0
    if kind == _DICTIONARY_BATCH:
        data = header.table(1)
        if data is None:
            return kind, 0, 0
        return kind, 0, _batch_size(data, body)[1]
    rows, decoded = _batch_size(header, body)
    return kind, rows, decoded


def _framed(data: memoryview, at: int) -> tuple[memoryview, int]:
    """The flatbuffer of the message framed at ``at`` and where its body starts."""
    length = _u32(data, at)
    at += 4
    if length == _CONTINUATION:
        length = _u32(data, at)
        at += 4
    if length == 0 or at + length > len(data):
        raise _Malformed
    return data[at : at + length], at + length


def _ipc_file_messages(data: memoryview) -> list[tuple[memoryview, memoryview]]:
    """(metadata, body) of every dictionary and record batch the file's footer lists."""
    if len(data) < 18:
        raise _Malformed
    footer_length = _i32(data, len(data) - 10)
    start = len(data) - 10 - footer_length
    if footer_length <= 0 or start < 8:
        raise _Malformed
    footer = _root(data[start : len(data) - 10])
    found = []
    blocks = [*footer.structs(2, 24), *footer.structs(3, 24)]  # dictionaries, then record batches
    if len(blocks) > MAX_IPC_MESSAGES:
        raise _TooMany
    for offset, meta_length, body_length in blocks:
        if offset < 8 or meta_length <= 0 or body_length < 0 or offset + meta_length + body_length > start:
            raise _Malformed
        metadata, _ = _framed(data, offset)
        body_start = offset + meta_length
        found.append((metadata, data[body_start : body_start + body_length]))
    return found


def _ipc_stream_messages(data: memoryview) -> list[tuple[memoryview, memoryview]]:
    """(metadata, body) of every message of a stream, in order, up to its end marker."""
    found = []
    at = 0
    while at + 4 <= len(data):
        length = _u32(data, at)
        if length == _CONTINUATION:
            if at + 8 > len(data):
                break
            length = _u32(data, at + 4)
            at += 8
        else:
            at += 4
        if length == 0:
            break  # end of stream
        if at + length > len(data):
            raise _Malformed
        metadata = data[at : at + length]
        at += length
        body_length = _root(metadata).scalar(3, "<q")
        if body_length < 0 or at + body_length > len(data):
            raise _Malformed
        found.append((metadata, data[at : at + body_length]))
        if len(found) > MAX_IPC_MESSAGES:
            raise _TooMany
        at += body_length
    return found


def check_ipc(data: memoryview, container: str, schema: pa.Schema, limits: TraceLimits, name: str) -> None:
    """Columns, rows and decoded bytes of an Arrow IPC file or stream, from its messages' metadata.

    ``data`` is the whole file (memory-mapped); nothing in it is decompressed.
    """
    check_columns(len(schema), limits, name)
    refuse_nested(schema, schema.names, name)
    try:
        messages = _ipc_file_messages(data) if container == "arrow" else _ipc_stream_messages(data)
        rows = decoded = 0
        for metadata, body in messages:
            _, n, size = _message(metadata, body)
            rows += n
            decoded += size
            check_rows(rows, limits, name)
            if decoded > limits.decoded_bytes:
                raise too_big(decoded, limits, name, "its record batches")
    except _TooMany:
        raise MeasurementError(
            f"more than {MAX_IPC_MESSAGES:,} record batches (or buffers in one), more than a trace file holds; refused",
            source=name,
        ) from None
    except (_Malformed, struct.error, IndexError, ValueError):
        raise MeasurementError("cannot read: malformed Arrow IPC metadata", source=name) from None
