"""CSV text read into Arrow columns, with the line of every row at hand for errors.

CSV goes through ``pyarrow.csv`` (typed columns, native timestamp parsing,
several threads). What Arrow refuses - rows with more or fewer fields than the
header, blank lines made of spaces, quoted line breaks, bad UTF-8 - is read
again with the standard library's ``csv`` module, which accepts what policylint
always accepted and reports a malformed row with its line (a row whose number
of fields is not the header's is one). Errors about a value
name the row as the line number of the file (the header is line 1).

:class:`policylint.readers.table.Table` calls :func:`read_csv` for a CSV file and
:func:`parse_head` when it opens one. pyarrow is imported only inside the
functions that read.
"""

from __future__ import annotations

import codecs
import csv
import io
import os
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np

from policylint.errors import MeasurementError
from policylint.readers import csv_memo
from policylint.readers.columns import FLOAT, TEXT
from policylint.readers.limits import TraceLimits, check_rows
from policylint.readers.progress import advance
from policylint.readers.rows import Rows
from policylint.readers.source import Source, read_head

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["CHUNK_ROWS", "HEAD_BYTES", "STREAM_ABOVE", "CsvFile", "parse_head", "read_csv"]

CHUNK_ROWS = 65_536
"""Rows tokenised at a time by the tolerant (standard library) CSV path."""

HEAD_BYTES = 1024 * 1024
"""The header must end within this many bytes; also the sample used to pick column types."""

STREAM_ABOVE = 32 * 1024 * 1024
"""CSV files larger than this are read batch by batch so the row limit stops them early."""

_SAMPLE_ROWS = 64


class CsvFile(Protocol):
    """What reading a CSV file's columns needs of the opened table (:class:`policylint.readers.table.Table`)."""

    source: Source
    header: list[str]
    limits: TraceLimits
    chunk_rows: int
    #: the first data rows, split into cells (to pick the type of a time column)
    sample: list[list[str]]
    #: average bytes of a line in the first block (progress estimates from rows read)
    bytes_per_row: float
    #: the whole file, when it was read into memory at opening
    data: bytes | None


class _KnownLines(Rows):
    """Line numbers of a CSV read by the csv module, kept as the rows were read."""

    def __init__(self, lines: np.ndarray) -> None:
        self.lines = lines

    def row(self, index: int) -> int:
        return int(self.lines[index])


class _ScannedLines(Rows):
    """Line numbers of a CSV read by Arrow, found only when an error needs one.

    Arrow skips empty lines, so data row *i* is the *i*-th non-blank record after
    the header; the standard ``csv`` module counts lines the way the tolerant
    path does, so both paths report the same line.
    """

    def __init__(self, source: Source) -> None:
        self.source = source

    def row(self, index: int) -> int:
        with self.source.path.open(newline="", encoding="utf-8-sig", errors="replace") as handle:
            reader = csv.reader(handle)
            try:
                next(reader, None)
                seen = -1
                for record in reader:
                    if _blank(record):
                        continue
                    seen += 1
                    if seen == index:
                        return reader.line_num
            except csv.Error:
                pass  # a cell the csv module refuses (over its field size limit): count lines instead
        return self._by_lines(index)

    def _by_lines(self, index: int) -> int:
        """The line of data row ``index`` counted on physical lines (Arrow reads no newline inside a value)."""
        with self.source.path.open(encoding="utf-8-sig", errors="replace") as handle:
            next(handle, None)
            seen = -1
            for number, line in enumerate(handle, start=2):
                if not line.strip() or line.strip() == '""':
                    continue
                seen += 1
                if seen == index:
                    return number
        return index + 2  # pragma: no cover - the index always comes from this file


def _blank(record: list[str]) -> bool:
    return not record or (len(record) == 1 and not record[0].strip())


def read_csv(csv_file: CsvFile, indexes: Sequence[int], kinds: Sequence[str]) -> tuple[list[pa.ChunkedArray], Rows]:
    """The columns at ``indexes`` of a CSV file and how their rows map to lines.

    See :meth:`policylint.readers.table.Table.read` for ``kinds``.
    """
    import pyarrow as pa

    if len(csv_file.header) > 1:
        # Typed first (fast), then as text (conversion errors are located
        # later with their row); Arrow only refuses the file's structure.
        for typed in (True, False):
            try:
                columns = _arrow_csv(csv_file, indexes, kinds, typed=typed)
            except pa.ArrowException:
                continue
            return columns, _ScannedLines(csv_file.source)
    return _python_csv(csv_file, indexes)


def _arrow_types(csv_file: CsvFile, indexes: Sequence[int], kinds: Sequence[str], typed: bool) -> dict[str, pa.DataType]:
    import pyarrow as pa

    types: dict[str, pa.DataType] = {}
    for index, kind in zip(indexes, kinds, strict=True):
        key = f"c{index}"
        if not typed or kind == TEXT:
            types[key] = pa.string()
        elif kind == FLOAT:
            types[key] = pa.float64()
        else:
            types[key] = _sniff_time_type([r[index] for r in csv_file.sample if len(r) > index])
    return types


def _arrow_csv(csv_file: CsvFile, indexes: Sequence[int], kinds: Sequence[str], *, typed: bool) -> list[pa.ChunkedArray]:
    import pyarrow as pa
    import pyarrow.csv as pcsv

    names = [f"c{i}" for i in range(len(csv_file.header))]
    types = _arrow_types(csv_file, indexes, kinds, typed)
    parse = pcsv.ParseOptions(newlines_in_values=False)

    def convert(chosen: dict[str, pa.DataType]) -> pcsv.ConvertOptions:
        return pcsv.ConvertOptions(
            column_types=chosen,
            include_columns=list(chosen),
            null_values=[""],
            true_values=[],
            false_values=[],
            strings_can_be_null=True,
            quoted_strings_can_be_null=True,
        )

    if csv_file.source.size <= STREAM_ABOVE:
        read = pcsv.ReadOptions(column_names=names, skip_rows=1, use_threads=not _in_worker())
        data = csv_file.data
        if typed and data is not None:
            # one export read by many workloads, a column each: parsed once (policylint.readers.csv_memo)
            by_index = {int(k[1:]): t for k, t in types.items()}
            path = os.fspath(csv_file.source.path)
            hit = csv_memo.take(path, data, indexes, by_index)
            if hit is not None:
                check_rows(hit[1], csv_file.limits, csv_file.source.name)
                return hit[0]
            wide = csv_memo.wide_columns(path, data, csv_file.header, csv_file.sample, by_index, csv_file.bytes_per_row)
            if wide is not None:
                try:
                    table = pcsv.read_csv(pa.BufferReader(data), read_options=read, parse_options=parse,
                                          convert_options=convert({f"c{i}": t for i, t in sorted(wide.items())}))
                except pa.ArrowException:
                    csv_memo.refuse(path, data)  # another column is no number: read as asked, from now on too
                else:
                    check_rows(table.num_rows, csv_file.limits, csv_file.source.name)
                    csv_memo.keep(path, data, table, wide)
                    return [table.column(f"c{i}") for i in indexes]
        where = pa.BufferReader(data) if data is not None else str(csv_file.source.path)
        table = pcsv.read_csv(where, read_options=read, parse_options=parse, convert_options=convert(types))
        check_rows(table.num_rows, csv_file.limits, csv_file.source.name)
    else:
        # Batch by batch: the row limit stops a huge file before it is held.
        # One-megabyte blocks, one thread: Arrow's read-ahead then holds a few
        # blocks, not hundreds of megabytes, beyond the converted columns.
        read = pcsv.ReadOptions(column_names=names, skip_rows=1, use_threads=False, block_size=1 << 20)
        batches = []
        count = 0
        with csv_file.source.path.open("rb") as handle, pcsv.open_csv(
            handle, read_options=read, parse_options=parse, convert_options=convert(types)
        ) as reader:
            for batch in reader:
                count += batch.num_rows
                check_rows(count, csv_file.limits, csv_file.source.name)
                batches.append(batch)
                # Arrow reads ahead of what it has parsed: rows parsed x the average
                # line length says how far the work is, the file position caps it.
                advance(int(min(handle.tell(), count * csv_file.bytes_per_row)) if csv_file.bytes_per_row else handle.tell())
        table = pa.Table.from_batches(batches, schema=reader.schema)
    return [table.column(f"c{i}") for i in indexes]


def _python_csv(csv_file: CsvFile, indexes: Sequence[int]) -> tuple[list[pa.ChunkedArray], Rows]:
    import pyarrow as pa

    parts: list[list[pa.Array]] = [[] for _ in indexes]
    lines: list[np.ndarray] = []
    count = 0
    for cells, numbers in _iter_chunks(csv_file.source, indexes, csv_file.chunk_rows, len(csv_file.header)):
        count += len(numbers)
        check_rows(count, csv_file.limits, csv_file.source.name)
        for part, column in zip(parts, cells, strict=True):
            part.append(pa.array(column, type=pa.string()))
        lines.append(numbers)
    columns = [pa.chunked_array(part, type=pa.string()) for part in parts]
    return columns, _KnownLines(np.concatenate(lines) if lines else np.zeros(0, dtype=np.int64))


def _in_worker() -> bool:
    """Whether this process is a worker of a parallel run (``--jobs``), started by multiprocessing.

    A worker parses with one thread: its siblings hold the other cores, and
    Arrow's thread pool on top of them only adds switching (measured with two
    processes on two cores: about a third slower with Arrow's threads).
    """
    import sys

    mp = sys.modules.get("multiprocessing")  # a worker inherited it from the parent that started it
    return mp is not None and mp.parent_process() is not None


def _sniff_time_type(cells: list[str]) -> pa.DataType:
    """The Arrow type to parse a timestamp column as, from its first cells."""
    import pyarrow as pa

    texts = [c.strip() for c in cells if c.strip()]
    if not texts:
        return pa.string()
    try:
        for text in texts:
            float(text)
    except ValueError:
        pass
    else:
        return pa.float64()
    zoned = [t.endswith("Z") or (len(t) > 10 and t[-6] in "+-" and t[-3] == ":") for t in texts]
    if all(zoned):
        return pa.timestamp("ns", tz="UTC")
    if not any(zoned):
        return pa.timestamp("ns")
    return pa.string()


def _iter_chunks(
    source: Source, columns: Sequence[int], chunk_rows: int, width: int | None = None
) -> Iterator[tuple[list[list[str]], np.ndarray]]:
    """Yield ``(cells per column, line numbers)`` for ``chunk_rows`` rows at a time.

    The tolerant path: the csv module tokenises rows (blank lines skipped). A row
    too short for a wanted column is an error at its line, and so is any row whose
    number of fields is not the header's ``width``: a field too many (a stray comma,
    a thousands separator) shifts what the row means, and is never dropped silently.
    """
    if chunk_rows < 1:
        raise ValueError("chunk_rows must be positive")
    name = source.name
    need = max(columns) + 1
    try:
        with source.path.open(newline="", encoding="utf-8-sig") as handle:
            reader = csv.reader(handle)
            next(reader, None)  # header, already read
            while True:
                cells: list[list[str]] = [[] for _ in columns]
                lines: list[int] = []
                for record in reader:
                    if _blank(record):
                        continue
                    if len(record) < need:
                        raise MeasurementError(
                            f"row has {len(record)} fields, expected at least {need}",
                            source=name,
                            row=reader.line_num,
                        )
                    if width is not None and len(record) != width:
                        raise MeasurementError(
                            f"row has {len(record)} fields, the header has {width}",
                            source=name,
                            row=reader.line_num,
                        )
                    for out, j in zip(cells, columns, strict=True):
                        out.append(record[j])
                    lines.append(reader.line_num)
                    if len(lines) >= chunk_rows:
                        break
                if not lines:
                    return
                yield cells, np.array(lines, dtype=np.int64)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise MeasurementError(f"cannot read: {exc}", source=name) from None


def parse_head(source: Source, first: bytes) -> tuple[list[str], list[list[str]]]:
    """Header and the first data rows, from at most :data:`HEAD_BYTES` of the file."""
    name = source.name
    raw = first
    if len(raw) < source.size and b"\n" not in raw and b"\r" not in raw:
        raw = read_head(source, HEAD_BYTES)  # a long header: look further, up to the limit
    if b"\x00" in raw:
        line = raw.count(b"\n", 0, raw.index(b"\x00")) + 1
        raise MeasurementError("binary data (a NUL byte): not a CSV text file", source=name, row=line)
    decoder = codecs.getincrementaldecoder("utf-8-sig")()
    try:
        text = decoder.decode(raw, final=len(raw) == source.size)
    except UnicodeDecodeError as exc:
        raise MeasurementError(f"cannot read: {exc}", source=name, row=1) from None
    complete = len(raw) == source.size
    if not complete:
        # Keep whole lines only; a header that does not end within the sample is refused.
        cut = max(text.rfind("\n"), text.rfind("\r"))
        if cut < 0:
            raise MeasurementError(
                f"the first line is longer than {HEAD_BYTES:,} bytes: not a CSV header", source=name, row=1
            )
        text = text[: cut + 1]
    header: list[str] | None = None
    sample: list[list[str]] = []
    try:
        reader = csv.reader(io.StringIO(text, newline=""))
        header = next(reader, None)
        for record in reader:
            if not _blank(record):
                sample.append(record)
            if len(sample) >= _SAMPLE_ROWS:
                break
    except csv.Error as exc:
        if complete or header is None:
            raise MeasurementError(f"cannot read: {exc}", source=name, row=1) from None
        sample = []  # a quoted field running past the sample; Arrow or the csv module will tell
    if not header or not any(cell.strip() for cell in header):
        raise MeasurementError("empty file: no header row", source=name, row=1)
    return [cell.strip() for cell in header], sample
