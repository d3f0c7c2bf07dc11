"""The page headers of a Parquet file, read before pyarrow decodes a page.

The footer says how large a column chunk is, but each page inside it carries its
own header, and the decoder trusts that header: a page declaring an uncompressed
size of 2 GB makes pyarrow allocate 2 GB to decompress it, although the footer
(checked in :mod:`policylint.readers.binary`) says the chunk holds a few kilobytes.
So before decoding, every page header of the column chunks to be read is walked
straight from the file's bytes and each page is held to what the footer allows.

A page header is a Thrift struct in the compact protocol (``PageHeader`` of the
Parquet format's ``parquet.thrift``)::

    1: type (i32)   2: uncompressed_page_size (i32)   3: compressed_page_size (i32)
    4: crc (i32)    5, 6, 7, 8: the data, index, dictionary and data-v2 page headers

Only fields 1-3 and the first field (``num_values``) of the nested page header
are needed; everything else is skipped. The reader here is deliberately small and
bounded: an explicit stack instead of recursion (nesting at most
:data:`MAX_DEPTH`), every length checked against the bytes left, a header at most
:data:`MAX_HEADER_BYTES` long, and at most :data:`MAX_PAGES` pages and
:data:`MAX_VALUES` values in their headers read per file.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "MAX_DEPTH",
    "MAX_HEADER_BYTES",
    "MAX_PAGES",
    "Chunk",
    "Malformed",
    "Page",
    "PageRefused",
    "TooManyPages",
    "check_chunks",
    "read_page_header",
]

MAX_DEPTH = 32
"""Most values pending while one field is skipped (about two per level of nested
structs, lists and maps). A page header nests three levels (header, page header,
statistics); more is a file built to hurt."""

MAX_HEADER_BYTES = 16 * 1024 * 1024
"""Longest page header read. Headers are tens of bytes; statistics holding long
text values make them longer, but never megabytes."""

MAX_PAGES = 100_000
"""Most pages walked in one file. A trace of ten million rows in pages of
20,000 rows (pyarrow's default) has 500 per column; a hundred thousand is a
file of pages of a hundred values or fewer, built to make the walk slow."""

MAX_VALUES = 40 * MAX_PAGES
"""Most Thrift values read or skipped in all the page headers of one file
together. A header holds 10 to 40 (its sizes, its encodings, the statistics);
a header holding a list of a million numbers is a file built to make the
walk slow, and this bounds the time any file can take."""

# Thrift compact protocol type codes
_STOP, _TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET, _MAP, _STRUCT, _UUID = range(14)
_FIXED = {_TRUE: 0, _FALSE: 0, _BYTE: 1, _DOUBLE: 8, _UUID: 16}
_VARINT = {_I16, _I32, _I64}
_NESTED_HEADERS = {5, 7, 8}  # data, dictionary, data v2: their field 1 is num_values
_DICTIONARY_PAGE = 2


class Malformed(Exception):
    """The bytes are not a page header (or not a complete one)."""


class TooManyPages(Exception):
    """More than :data:`MAX_PAGES` pages, or :data:`MAX_VALUES` values in their headers, in the chunks walked."""


class PageRefused(Exception):
    """A page declares more than its chunk (or the decoded-size limit) allows; the message says what."""


@dataclass(frozen=True)
class Page:
    """The fields of one page header that bound what decoding it costs."""

    type: int
    uncompressed: int
    compressed: int
    num_values: int | None
    header_length: int


@dataclass(frozen=True)
class Chunk:
    """A column chunk as the footer describes it."""

    column: str
    row_group: int
    start: int
    total_compressed: int
    total_uncompressed: int
    num_values: int


class _Reader:
    """The compact protocol over ``buf[pos:end]``; every read checks the bytes left."""

    def __init__(self, buf: memoryview | bytes, pos: int, end: int, budget: list[int]) -> None:
        self.buf = buf
        self.pos = pos
        self.end = end
        self.budget = budget  # values left to read in the whole walk (shared by the headers)

    def charge(self, n: int) -> None:
        self.budget[0] -= n
        if self.budget[0] < 0:
            raise TooManyPages

    def byte(self) -> int:
        if self.pos >= self.end:
            raise Malformed("ends inside a page header")
        b = self.buf[self.pos]
        self.pos += 1
        return int(b)

    def varint(self) -> int:
        result = shift = 0
        for _ in range(10):
            b = self.byte()
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7
        raise Malformed("a variable-length integer longer than 10 bytes")

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def skip_bytes(self, n: int) -> None:
        if n < 0 or n > self.end - self.pos:
            raise Malformed("a length beyond the page header's bytes")
        self.pos += n

    def field(self, last: int) -> tuple[int, int]:
        """(type, field id) of the next field of a struct; type ``_STOP`` ends it."""
        head = self.byte()
        kind = head & 0x0F
        if kind == _STOP:
            return _STOP, 0
        delta = head >> 4
        ident = last + delta if delta else self.zigzag()
        if kind > _UUID:
            raise Malformed(f"unknown Thrift type {kind}")
        return kind, ident

    def skip(self, kind: int) -> None:
        """Skip one value of ``kind``, nested structs and containers included, without recursion."""
        # Each entry: a value of this kind still to skip, or ('struct', last id) being walked,
        # or ('items', element kinds, count left) of a list, set or map.
        stack: list[tuple[str, int, int, int]] = [("value", kind, 0, 0)]
        while stack:
            if len(stack) > MAX_DEPTH:
                raise Malformed("nested deeper than a page header is")
            what, a, b, c = stack.pop()
            if what == "value":
                self._one(a, stack)
            elif what == "struct":
                kind, ident = self.field(a)
                if kind != _STOP:
                    stack.append(("struct", ident, 0, 0))
                    stack.append(("value", kind, 0, 0))
            else:  # "items": kinds a (and b for a map's values), c left
                if c > 0:
                    stack.append(("items", a, b, c - 1))
                    if b >= 0:
                        stack.append(("value", b, 0, 0))
                    stack.append(("value", a, 0, 0))

    def _one(self, kind: int, stack: list[tuple[str, int, int, int]]) -> None:
        self.charge(1)
        if kind in _FIXED:
            self.skip_bytes(_FIXED[kind])
        elif kind in _VARINT:
            self.varint()
        elif kind == _BINARY:
            self.skip_bytes(self.varint())
        elif kind == _STRUCT:
            stack.append(("struct", 0, 0, 0))
        elif kind in (_LIST, _SET):
            head = self.byte()
            count = head >> 4
            if count == 15:
                count = self.varint()
            element = head & 0x0F
            if element == _STOP or element > _UUID:
                raise Malformed(f"a list of unknown Thrift type {element}")
            if count > self.end - self.pos:  # every element takes at least a byte
                raise Malformed("a list longer than the page header's bytes")
            self.charge(count)
            if element in (_TRUE, _FALSE):
                self.skip_bytes(count)  # booleans in a list take a byte each
            else:
                stack.append(("items", element, -1, count))
        elif kind == _MAP:
            count = self.varint()
            if count:
                kinds = self.byte()
                key, value = kinds >> 4, kinds & 0x0F
                if not (_STOP < key <= _UUID and _STOP < value <= _UUID):
                    raise Malformed("a map of unknown Thrift types")
                if count > self.end - self.pos:
                    raise Malformed("a map longer than the page header's bytes")
                self.charge(2 * count)
                stack.append(("items", key, value, count))
        else:
            raise Malformed(f"unexpected Thrift type {kind}")


def _i32(reader: _Reader, kind: int, what: str) -> int:
    if kind != _I32:
        raise Malformed(f"{what} is not an i32")
    value = reader.zigzag()
    if not -(2**31) <= value < 2**31:
        raise Malformed(f"{what} does not fit in an i32")
    return value


def read_page_header(buf: memoryview | bytes, pos: int, end: int, budget: list[int] | None = None) -> Page:
    """The page header starting at ``buf[pos]``, which must end before ``end``.

    ``budget[0]`` is the number of Thrift values still allowed to be read (the
    walk's :data:`MAX_VALUES` shared by its headers; :class:`TooManyPages` when
    it runs out); without it, one header may read :data:`MAX_VALUES`.
    """
    reader = _Reader(buf, pos, min(end, pos + MAX_HEADER_BYTES), [MAX_VALUES] if budget is None else budget)
    fields: dict[int, int] = {}
    num_values: int | None = None
    last = 0
    while True:
        kind, ident = reader.field(last)
        if kind == _STOP:
            break
        reader.charge(1)
        last = ident
        if ident in (1, 2, 3):
            fields[ident] = _i32(reader, kind, ("the page type", "the uncompressed page size", "the compressed page size")[ident - 1])
        elif ident in _NESTED_HEADERS and kind == _STRUCT:
            inner_kind, inner_id = reader.field(0)
            if inner_kind == _STOP:
                continue
            if inner_id == 1:
                num_values = _i32(reader, inner_kind, "the page's number of values")
            else:
                reader.skip(inner_kind)
            _skip_struct_rest(reader, inner_id)  # the rest of the nested header
        else:
            reader.skip(kind)
    for ident, what in ((1, "type"), (2, "uncompressed_page_size"), (3, "compressed_page_size")):
        if ident not in fields:
            raise Malformed(f"a page header without its {what}")
    if fields[2] < 0 or fields[3] < 0:
        raise Malformed("a negative page size")
    if num_values is not None and num_values < 0:
        raise Malformed("a negative number of values")
    return Page(fields[1], fields[2], fields[3], num_values, reader.pos - pos)


def _skip_struct_rest(reader: _Reader, last: int) -> None:
    """Skip the remaining fields of a struct whose field ``last`` was just read."""
    while True:
        kind, ident = reader.field(last)
        if kind == _STOP:
            return
        last = ident
        reader.skip(kind)


def _size(n: int) -> str:
    return f"{n / (1024 * 1024):,.0f} MiB" if n >= 1024 * 1024 else f"{n:,} bytes"


def walk_chunk(
    buf: memoryview | bytes, chunk: Chunk, decoded_limit: int, budget: list[int], values: list[int] | None = None
) -> int:
    """Walk the pages of ``chunk``; the sum of their uncompressed sizes.

    Raises :class:`PageRefused` for a page that declares more than the chunk or
    ``decoded_limit`` allows, :class:`Malformed` for bytes that are no page
    header, :class:`TooManyPages` when ``budget[0]`` (pages left) or ``values[0]``
    (Thrift values left to read, :data:`MAX_VALUES` when not given) runs out.
    """
    values = [MAX_VALUES] if values is None else values
    where = f"column '{chunk.column}' (row group {chunk.row_group + 1})"
    end = chunk.start + chunk.total_compressed
    if chunk.start < 4 or chunk.total_compressed < 0 or end > len(buf):
        raise Malformed(f"{where} lies outside the file")
    pos = chunk.start
    total = 0
    while pos < end:
        budget[0] -= 1
        if budget[0] < 0:
            raise TooManyPages
        page = read_page_header(buf, pos, end, values)
        if page.uncompressed > decoded_limit:
            raise PageRefused(
                f"a page of {where} declares {_size(page.uncompressed)} once uncompressed, more than the "
                f"{_size(decoded_limit)} a trace may take once decoded"
            )
        if page.uncompressed > chunk.total_uncompressed:
            raise PageRefused(
                f"a page of {where} declares {_size(page.uncompressed)} once uncompressed, more than the "
                f"{_size(chunk.total_uncompressed)} the footer gives the whole column chunk"
            )
        if page.num_values is not None and page.num_values > chunk.num_values:
            raise PageRefused(
                f"a page of {where} declares {page.num_values:,} values, more than the "
                f"{chunk.num_values:,} the footer gives the whole column chunk"
            )
        total += page.uncompressed
        if total > chunk.total_uncompressed:
            raise PageRefused(
                f"the pages of {where} declare more than the {_size(chunk.total_uncompressed)} "
                "the footer gives the whole column chunk once uncompressed"
            )
        pos += page.header_length + page.compressed
    if pos != end:
        raise Malformed(f"the last page of {where} runs past the end of its column chunk")
    return total


def check_chunks(path: str | os.PathLike[str], chunks: Iterable[Chunk], decoded_limit: int) -> None:
    """Walk the page headers of ``chunks`` in the file at ``path`` (memory-mapped, nothing decoded).

    Raises :class:`PageRefused`, :class:`Malformed` or :class:`TooManyPages`
    (``OSError`` when the file cannot be read); all pages read together must
    also stay within ``decoded_limit`` once uncompressed.
    """
    wanted = list(chunks)
    if not wanted:
        return
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size == 0:
            raise Malformed("the file is empty")
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            buf = memoryview(mapped)
            try:
                budget, values = [MAX_PAGES], [MAX_VALUES]
                total = 0
                for chunk in wanted:
                    total += walk_chunk(buf, chunk, decoded_limit, budget, values)
                    if total > decoded_limit:
                        raise PageRefused(
                            f"the pages of the columns read declare more than the {_size(decoded_limit)} "
                            "a trace may take once decoded"
                        )
            finally:
                buf.release()
